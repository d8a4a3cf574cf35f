/* tests/runs_csv.h — read ../shared/validation/runs.csv rows into a model, a GPU count and a
 * plan, for the search tests and bench/rank_published.c. Header-only (static functions).
 *
 * The mapping is validate's (src/validate/validate.c): model dims from the row, the flags a row
 * cannot state (bias, dropout, tied embeddings, positions, norm) from the catalog model with the
 * same dims, else from the family (GLU rows Llama-style, others GPT-style); Megatron-LM 2021 and
 * Korthikanti 2022 ran without fused attention. Empty plan cells take validate's stated
 * assumptions: cp 1, vpp 1, sp on with tp > 1, zero 0, recompute none, bf16, micro-batch 1. A row
 * "states a full plan" when tp, pp, micro_batch, global_batch and num_gpus are all given. */
#ifndef MESHPLAN_TESTS_RUNS_CSV_H
#define MESHPLAN_TESTS_RUNS_CSV_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshplan/meshplan.h"

#define RC_MAX_COLS 64
#define RC_MAX_FIELD 1024

typedef struct {
    char id[64], group[64], gpu[64];
    int64_t gpus, gpn;
    mp_model m;
    mp_plan p;            /* resolved when ok */
    int full;             /* tp, pp, micro_batch, global_batch, num_gpus stated */
    int moe, dims;        /* an MoE model; model dims stated */
    int ok;               /* model and plan formed */
    char why[256];        /* when not ok */
} rc_row;

/* One RFC 4180 record into fields; returns the field count, 0 at the end, -1 on a bad quote. */
static int rc_record(const char **pp, const char *end, char (*f)[RC_MAX_FIELD])
{
    const char *p = *pp;
    if (p >= end)
        return 0;
    int n = 0;
    for (;;) {
        char *dst = n < RC_MAX_COLS ? f[n] : NULL;
        size_t len = 0;
        if (p < end && *p == '"') {
            p++;
            for (;;) {
                if (p >= end)
                    return -1;
                if (*p == '"' && p + 1 < end && p[1] == '"') {
                    if (dst && len < RC_MAX_FIELD - 1) dst[len++] = '"';
                    p += 2;
                } else if (*p == '"') {
                    p++;
                    break;
                } else {
                    if (dst && len < RC_MAX_FIELD - 1) dst[len++] = *p;
                    p++;
                }
            }
        }
        while (p < end && *p != ',' && *p != '\n' && *p != '\r') {
            if (dst && len < RC_MAX_FIELD - 1) dst[len++] = *p;
            p++;
        }
        if (dst)
            dst[len] = '\0';
        if (n < RC_MAX_COLS)
            n++;
        if (p < end && *p == ',') {
            p++;
            continue;
        }
        if (p < end && *p == '\r')
            p++;
        if (p < end && *p == '\n')
            p++;
        *pp = p;
        return n;
    }
}

static int rc_col(char (*hdr)[RC_MAX_FIELD], int nh, const char *name)
{
    for (int i = 0; i < nh; i++)
        if (!strcmp(hdr[i], name))
            return i;
    return -1;
}

/* Text cell, "" when the column is absent. */
static const char *rc_str(char (*f)[RC_MAX_FIELD], int nf, int col)
{
    return (col < 0 || col >= nf) ? "" : f[col];
}

/* Integer cell: 1 and *out when given, 0 when empty. */
static int rc_int(char (*f)[RC_MAX_FIELD], int nf, int col, int64_t *out)
{
    if (col < 0 || col >= nf || !f[col][0])
        return 0;
    *out = (int64_t)strtod(f[col], NULL);
    return 1;
}

static void rc_infer_flags(const mp_catalog *cat, mp_model *m)
{
    for (size_t i = 0; i < mp_catalog_model_count(cat); i++) {
        const mp_model *c = mp_catalog_model_at(cat, i);
        if (c->layers == m->layers && c->hidden == m->hidden && c->heads == m->heads &&
            c->ffn_hidden == m->ffn_hidden && c->glu == m->glu) {
            m->tied_embeddings = c->tied_embeddings;
            m->position = c->position;
            m->rmsnorm = c->rmsnorm;
            m->bias = c->bias;
            m->dropout = c->dropout;
            return;
        }
    }
    m->position = m->glu ? MP_POS_ROPE : MP_POS_LEARNED;
    m->rmsnorm = m->glu;
    m->bias = !m->glu;
    m->dropout = !m->glu;
    m->tied_embeddings = !m->glu;
}

/* Parse every row of text into a malloc'd array (*rows, count returned; -1 on a CSV error). */
static int rc_read(const mp_catalog *cat, const char *text, size_t len, rc_row **rows)
{
    char(*f)[RC_MAX_FIELD] = malloc(RC_MAX_COLS * sizeof *f);
    char(*hdr)[RC_MAX_FIELD] = malloc(RC_MAX_COLS * sizeof *hdr);
    const char *p = text, *end = text + len;
    if (len >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3))
        p += 3;
    int nh = rc_record(&p, end, hdr);
    int n = 0, cap = 0;
    *rows = NULL;
    if (nh <= 0) {
        free(f);
        free(hdr);
        return -1;
    }
#define C(name) rc_col(hdr, nh, name)
    for (;;) {
        int nf = rc_record(&p, end, f);
        if (nf <= 0)
            break;
        if (nf == 1 && !f[0][0])
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 256;
            *rows = realloc(*rows, (size_t)cap * sizeof **rows);
        }
        rc_row *r = &(*rows)[n++];
        memset(r, 0, sizeof *r);
        snprintf(r->id, sizeof r->id, "%s", rc_str(f, nf, C("id")));
        snprintf(r->group, sizeof r->group, "%s", rc_str(f, nf, C("source_group")));
        snprintf(r->gpu, sizeof r->gpu, "%s", rc_str(f, nf, C("gpu")));
        mp_model *m = &r->m;
        snprintf(m->key, sizeof m->key, "%.47s", r->id);
        snprintf(m->name, sizeof m->name, "%s", rc_str(f, nf, C("model_name")));
        r->dims = rc_int(f, nf, C("layers"), &m->layers) & rc_int(f, nf, C("hidden"), &m->hidden) &
                  rc_int(f, nf, C("heads"), &m->heads) & rc_int(f, nf, C("ffn_hidden"), &m->ffn_hidden) &
                  rc_int(f, nf, C("vocab"), &m->vocab) & rc_int(f, nf, C("seq_len"), &m->seq_len);
        int64_t x = 0;
        r->moe = rc_int(f, nf, C("moe_experts"), &x) && x > 0;
        if (!rc_int(f, nf, C("kv_heads"), &m->kv_heads))
            m->kv_heads = m->heads;
        m->glu = rc_int(f, nf, C("glu"), &x) && x == 1;
        rc_int(f, nf, C("num_gpus"), &r->gpus);
        rc_int(f, nf, C("gpus_per_node"), &r->gpn);
        mp_plan *pl = &r->p;
        mp_plan_init_default(pl);
        int given = rc_int(f, nf, C("tp"), &pl->tp) & rc_int(f, nf, C("pp"), &pl->pp) &
                    rc_int(f, nf, C("micro_batch"), &pl->mb) & rc_int(f, nf, C("global_batch"), &pl->gb);
        r->full = given && r->gpus > 0;
        rc_int(f, nf, C("dp"), &pl->dp);
        rc_int(f, nf, C("cp"), &pl->cp);
        rc_int(f, nf, C("vpp"), &pl->vpp);
        if (rc_int(f, nf, C("sp"), &x))
            pl->sp = x != 0;
        if (rc_int(f, nf, C("zero_stage"), &x))
            pl->zero = (int)x;
        const char *rcs = rc_str(f, nf, C("recompute"));
        pl->recompute = !strcmp(rcs, "full") ? MP_RC_FULL : !strcmp(rcs, "selective") ? MP_RC_SELECTIVE : MP_RC_NONE;
        const char *pr = rc_str(f, nf, C("precision"));
        pl->precision = !strcmp(pr, "fp8") ? MP_DT_FP8 : !strcmp(pr, "fp16") ? MP_DT_FP16 : MP_DT_BF16;
        if (!strncmp(r->group, "megatron2021", 12) || !strncmp(r->group, "korthikanti2022", 15))
            pl->flash = 0;
        if (!r->dims) {
            snprintf(r->why, sizeof r->why, "model dims not stated");
            continue;
        }
        if (r->moe) {
            snprintf(r->why, sizeof r->why, "MoE model");
            continue;
        }
        m->head_dim = m->hidden / m->heads;
        m->vocab_pad_multiple = 1;
        rc_infer_flags(cat, m);
        pl->seq = m->seq_len;
        mp_diag d = {0};
        if (mp_model_check(m, &d) != MP_OK || mp_plan_resolve(pl, m, r->gpus, &d) != MP_OK) {
            snprintf(r->why, sizeof r->why, "%.250s", d.text);
            continue;
        }
        r->ok = 1;
    }
#undef C
    free(f);
    free(hdr);
    return n;
}

#endif
