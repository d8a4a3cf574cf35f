/* src/calibrate/parse_csv.c — rows of validation/collectives.csv (one sweep per source group,
 * collective and GPU count) and of measure_gpu.py's gemm.csv. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cal_internal.h"
#include "../internal.h"

static int split_csv(char *line, char **f, int cap)
{
    int n = 0;
    char *p = line;
    while (n < cap) {
        f[n++] = p;
        char *c = strchr(p, ',');
        if (!c)
            break;
        *c = 0;
        p = c + 1;
    }
    return n;
}

static int col(char **hdr, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(hdr[i], name))
            return i;
    return -1;
}


static mp_status csv_num(const char *origin, int ln, const char *name, const char *s, double *v,
                         mp_diag *d)
{
    if (cal_plain_number(s, 0, v))
        return MP_OK;
    mp_diag_add(d, "%s:%d: %s = \"%s\": expected a number >= 0", origin, ln, name, s);
    return MP_ERR_INPUT;
}

/* A count column (a GEMM dimension, a node or GPU count): csv_num's, and whole and <= 2^53. */
static mp_status csv_count(const char *origin, int ln, const char *name, const char *s,
                           double *v, int64_t *n, mp_diag *d)
{
    mp_status st = csv_num(origin, ln, name, s, v, d);
    if (st || cal_count(*v, n))
        return st;
    mp_diag_add(d, "%s:%d: %s = \"%s\": expected a whole count up to 2^53", origin, ln, name, s);
    return MP_ERR_INPUT;
}

static mp_status gemm_row(mp_log *l, cal_csv_state *cs, int ln, char **f, int n, mp_diag *d)
{
    int im = col(cs->hdr, cs->nhdr, "m"), in = col(cs->hdr, cs->nhdr, "n"),
        ik = col(cs->hdr, cs->nhdr, "k"), idt = col(cs->hdr, cs->nhdr, "dtype"),
        is = col(cs->hdr, cs->nhdr, "seconds");
    if (im < 0 || in < 0 || ik < 0 || idt < 0 || is < 0) {
        mp_diag_add(d, "%s:1: expected the columns m, n, k, dtype and seconds (measure_gpu.py "
                    "gemm.csv)", l->file);
        return MP_ERR_INPUT;
    }
    if (n < cs->nhdr) {
        mp_diag_add(d, "%s:%d: truncated row: expected %d columns as the header, got %d", l->file,
                    ln, cs->nhdr, n);
        return MP_ERR_INPUT;
    }
    double m, nn, k, s;
    if (!cal_plain_number(f[is], 0, &s)) /* a failed measurement ("oom", "n/a") is a row too: skip */
        return MP_OK;
    int64_t mi, ni, ki;
    mp_status st = csv_count(l->file, ln, "m", f[im], &m, &mi, d);
    if (!st) st = csv_count(l->file, ln, "n", f[in], &nn, &ni, d);
    if (!st) st = csv_count(l->file, ln, "k", f[ik], &k, &ki, d);
    if (st)
        return st;
    mp_dtype dt = !strcmp(f[idt], "bf16") ? MP_DT_BF16 : !strcmp(f[idt], "fp8") ? MP_DT_FP8
                : !strcmp(f[idt], "fp16") ? MP_DT_FP16 : MP_DT_COUNT;
    if (dt == MP_DT_COUNT || !(s > 0))
        return MP_OK;
    int g = cal_grow((void **)&l->gemms, &l->ngemms, sizeof *l->gemms, &cs->cap);
    if (g)
        return g == -1 ? MP_ERR_RANGE : MP_ERR_NOMEM;
    mp_gemm_row *r = &l->gemms[l->ngemms++];
    *r = (mp_gemm_row){ln, mi, ni, ki, dt, s, 2.0 * m * nn * k / s};
    return MP_OK;
}

/* collectives.csv: rows grouped into one sweep per (source_group, collective, total_gpus). */
static mp_status coll_row(mp_log *l, cal_csv_state *cs, int ln, char **f, int n, mp_diag *d)
{
    static const char *need[] = {"source_group", "collective", "gpu", "num_nodes", "total_gpus",
                                 "message_bytes", "algbw_GBps", "time_us"};
    int c[8];
    for (int i = 0; i < 8; i++)
        if ((c[i] = col(cs->hdr, cs->nhdr, need[i])) < 0) {
            mp_diag_add(d, "%s:1: expected a column %s (validation/README.md)", l->file, need[i]);
            return MP_ERR_INPUT;
        }
    if (n < cs->nhdr) {
        mp_diag_add(d, "%s:%d: truncated row: expected %d columns, got %d", l->file, ln, cs->nhdr, n);
        return MP_ERR_INPUT;
    }
    mp_coll_op op;
    double nodes, gpus, bytes, algbw = 0, tus = 0;
    if (mp_coll_op_parse(f[c[1]], &op) != MP_OK) {
        mp_diag_add(d, "%s:%d: collective = \"%s\": expected all_reduce, all_gather, ...", l->file,
                    ln, f[c[1]]);
        return MP_ERR_INPUT;
    }
    int64_t nodes_n, gpus_n;
    mp_status st = csv_count(l->file, ln, "num_nodes", f[c[3]], &nodes, &nodes_n, d);
    if (!st) st = csv_count(l->file, ln, "total_gpus", f[c[4]], &gpus, &gpus_n, d);
    if (!st) st = csv_num(l->file, ln, "message_bytes", f[c[5]], &bytes, d);
    if (!st && *f[c[6]]) st = csv_num(l->file, ln, "algbw_GBps", f[c[6]], &algbw, d);
    if (!st && *f[c[7]]) st = csv_num(l->file, ln, "time_us", f[c[7]], &tus, d);
    if (st)
        return st;
    double t = tus > 0 ? tus * 1e-6 : algbw > 0 ? bytes / (algbw * 1e9) : 0;
    if (!(t > 0))
        return MP_OK; /* nothing measured in time */
    char label[96];
    snprintf(label, sizeof label, "%s/%s/%.0fgpus", f[c[0]], f[c[1]], gpus);
    mp_nccl_table *tb = NULL;
    size_t ti = 0;
    for (; ti < l->ntables; ti++)
        if (!strcmp(l->tables[ti].label, label)) {
            tb = &l->tables[ti];
            break;
        }
    if (!tb) {
        if (l->ntables >= 256)
            return MP_ERR_RANGE;
        int g = cal_grow((void **)&l->tables, &l->ntables, sizeof *l->tables, &cs->cap);
        if (g)
            return g == -1 ? MP_ERR_RANGE : MP_ERR_NOMEM;
        tb = &l->tables[l->ntables++];
        memset(tb, 0, sizeof *tb);
        mp_strlcpy(tb->label, label, sizeof tb->label);
        mp_strlcpy(tb->gpu_name, f[c[2]], sizeof tb->gpu_name);
        tb->op = op;
        tb->nranks = gpus_n;
        tb->nnodes = nodes_n;
        tb->first_line = ln;
        cs->rcap[ti] = 0;
        int ig = col(cs->hdr, cs->nhdr, "gpus_per_node"), il = col(cs->hdr, cs->nhdr, "inter_link");
        tb->gpus_per_node = ig >= 0 ? strtoll(f[ig], NULL, 10) : 0;
        if (il >= 0 && strcmp(f[il], "none") && strcmp(f[il], "infiniband"))
            mp_strlcpy(tb->scaleout, f[il], sizeof tb->scaleout);
    }
    int g = cal_grow((void **)&tb->rows, &tb->nrows, sizeof *tb->rows, &cs->rcap[ti]);
    if (g)
        return g == -1 ? MP_ERR_RANGE : MP_ERR_NOMEM;
    mp_nccl_row *r = &tb->rows[tb->nrows++];
    memset(r, 0, sizeof *r);
    r->line = ln;
    r->bytes = bytes;
    r->time_s[0] = t;
    r->algbw_Bps[0] = bytes / t;
    r->busbw_Bps[0] = r->algbw_Bps[0] * mp_coll_busbw_factor(op, tb->nranks);
    tb->last_line = ln;
    return MP_OK;
}

mp_status cal_csv_line(mp_log *l, cal_csv_state *cs, int ln, char *line, mp_diag *d)
{
    if (ln == 1) {
        mp_strlcpy(cs->hdr_buf, line, sizeof cs->hdr_buf);
        cs->nhdr = split_csv(cs->hdr_buf, cs->hdr, MAX_TOK);
        return MP_OK;
    }
    if (!*line)
        return MP_OK;
    char *f[MAX_TOK];
    int n = split_csv(line, f, MAX_TOK);
    return l->kind == MP_LOG_GEMM_CSV ? gemm_row(l, cs, ln, f, n, d) : coll_row(l, cs, ln, f, n, d);
}
