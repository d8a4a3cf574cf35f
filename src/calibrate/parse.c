/* src/calibrate/parse.c — read the logs users already have, as they are printed.
 *
 * One pass over the lines; the kind is detected from the first line that only that kind prints:
 * a "<op>_perf" sweep header (nccl-tests), "elapsed time per iteration" (Megatron-LM,
 * megatron/training/training.py training_log), "step:" with "tps:" (torchtitan,
 * torchtitan/components/metrics.py), or a CSV header (collectives.csv, measure_gpu.py gemm.csv).
 * Whatever precedes the record on a line (timestamps, "[rank3]:", "<stdout>:", logger names) is
 * skipped by looking for the record's own markers, so the line numbers stay those of the file.
 * This file runs the pass and holds the shared helpers; each kind's lines are read by
 * parse_nccl.c, parse_train.c or parse_csv.c (cal_internal.h).
 * Left out: nccl-tests' -G (CUDA graph) and multi-GPU-per-thread columns (the same table layout,
 * read the same), and Megatron's per-rank timers (not needed by any fit).
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cal_internal.h"
#include "../internal.h"

const char *mp_log_kind_name(mp_log_kind k)
{
    static const char *n[] = {"nccl-tests", "collectives.csv", "megatron", "torchtitan", "gemm.csv"};
    return (unsigned)k < MP_LOG_KIND_COUNT ? n[k] : "?";
}

/* ---- small helpers (cal_internal.h) ---- */

int cal_grow(void **arr, size_t *n, size_t size, size_t *cap)
{
    if (*n >= MP_CAL_MAX_ROWS)
        return -1;
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        void *p = realloc(*arr, nc * size);
        if (!p)
            return -2;
        *arr = p;
        *cap = nc;
    }
    return 0;
}

/* A plain non-negative number (digits, '.', exponent); commas as thousands separators allowed
 * when commas is set. 1 and *out on success; 0 when s carries anything else (a unit suffix). */
int cal_plain_number(const char *s, int commas, double *out)
{
    char buf[64];
    size_t j = 0;
    for (const char *p = s; *p && j + 1 < sizeof buf; p++)
        if (!(commas && *p == ','))
            buf[j++] = *p;
    buf[j] = 0;
    if (!j || !(isdigit((unsigned char)buf[0]) || buf[0] == '.'))
        return 0;
    char *end = NULL;
    double v = strtod(buf, &end);
    if (*end || !isfinite(v) || v < 0)
        return 0;
    *out = v;
    return 1;
}

int cal_count(double v, int64_t *out)
{
    if (!(v >= 0 && v <= 9007199254740992.0) || v != floor(v))
        return 0;
    *out = (int64_t)v;
    return 1;
}

int cal_is_int_token(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return 0;
    return 1;
}

int cal_tokenize(char *line, char **tok, int cap)
{
    int n = 0;
    for (char *p = strtok(line, " \t\r"); p && n < cap; p = strtok(NULL, " \t\r"))
        tok[n++] = p;
    return n;
}


/* ---- the pass ---- */

/* The first line only one kind prints decides (a sweep header's "step: 2(factor)" is not a
 * torchtitan step: that needs "loss:" or "tps:" beside it). */
static mp_log_kind detect_line(const char *line)
{
    if (strstr(line, "elapsed time per iteration"))
        return MP_LOG_MEGATRON;
    const char *st = strstr(line, "step:");
    if (st && (strstr(st, "tps:") || strstr(st, "loss:")))
        return MP_LOG_TORCHTITAN;
    if (strstr(line, "_perf") || (strstr(line, "Rank ") && strstr(line, " device ")))
        return MP_LOG_NCCL_TESTS;
    return MP_LOG_KIND_COUNT;
}

static mp_log_kind detect(const char *text, size_t len)
{
    if (len > 30 && !strncmp(text, "id,source_group,collective", 26))
        return MP_LOG_COLLECTIVES_CSV;
    if (len > 6 && !strncmp(text, "m,n,k,", 6))
        return MP_LOG_GEMM_CSV;
    char line[LINE_CAP];
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && text[j] != '\n')
            j++;
        size_t n = j - i < LINE_CAP - 1 ? j - i : LINE_CAP - 1;
        memcpy(line, text + i, n);
        line[n] = 0;
        mp_log_kind k = detect_line(line);
        if (k != MP_LOG_KIND_COUNT)
            return k;
        i = j + 1;
    }
    return MP_LOG_KIND_COUNT;
}


static mp_status parse_lines(const char *text, size_t len, mp_log *l, mp_diag *d)
{
    cal_nccl_state ns = {.l = l, .origin = l->file, .diag = d};
    cal_step_state ss = {{0}, 0};
    cal_csv_state *cs = calloc(1, sizeof *cs);
    if (!cs)
        return MP_ERR_NOMEM;
    char line[LINE_CAP];
    mp_status st = MP_OK;
    int ln = 0;
    for (size_t i = 0; i < len && st == MP_OK;) {
        size_t j = i;
        while (j < len && text[j] != '\n')
            j++;
        size_t n = j - i < LINE_CAP - 1 ? j - i : LINE_CAP - 1;
        memcpy(line, text + i, n);
        line[n] = 0;
        if (n && line[n - 1] == '\r')
            line[n - 1] = 0;
        ln++;
        i = j + 1;
        switch (l->kind) {
        case MP_LOG_NCCL_TESTS: st = cal_nccl_line(&ns, ln, line); break;
        case MP_LOG_MEGATRON: st = cal_megatron_line(l, &ss, ln, line, d); break;
        case MP_LOG_TORCHTITAN: st = cal_titan_line(l, &ss, ln, line, d); break;
        default: st = cal_csv_line(l, cs, ln, line, d); break;
        }
    }
    if (st == MP_OK && l->kind == MP_LOG_NCCL_TESTS)
        st = cal_nccl_close(&ns, ln);
    free(cs);
    if (st == MP_ERR_RANGE)
        mp_diag_add(d, "%s: more than %d records: expected at most that many", l->file, MP_CAL_MAX_ROWS);
    return st;
}

mp_status mp_cal_parse(const char *text, size_t len, const char *origin, mp_log *out, mp_diag *diag)
{
    memset(out, 0, sizeof *out);
    mp_strlcpy(out->file, origin ? origin : "(log)", sizeof out->file);
    out->kind = detect(text, len);
    if (out->kind == MP_LOG_KIND_COUNT) {
        mp_diag_add(diag, "%s:1: expected a log with nccl-tests table lines (\"#  size count type "
                    "...\" after an *_perf header), Megatron iteration lines (\"elapsed time per "
                    "iteration (ms)\"), torchtitan step lines (\"step: N ... tps: ...\") or a "
                    "collectives.csv / gemm.csv header; found none", out->file);
        return MP_ERR_INPUT;
    }
    mp_status st = parse_lines(text, len, out, diag);
    if (st != MP_OK)
        return st;
    size_t got = out->kind == MP_LOG_MEGATRON || out->kind == MP_LOG_TORCHTITAN ? out->nsteps
               : out->kind == MP_LOG_GEMM_CSV ? out->ngemms : out->ntables;
    if (!got) {
        mp_diag_add(diag, "%s:1: a %s log with no %s: expected at least one", out->file,
                    mp_log_kind_name(out->kind),
                    out->kind == MP_LOG_MEGATRON ? "\"elapsed time per iteration\" line"
                    : out->kind == MP_LOG_TORCHTITAN ? "\"step: N ... tps: ...\" line"
                    : out->kind == MP_LOG_NCCL_TESTS ? "table (a \"#  size count type\" header with rows)"
                    : "data row");
        return MP_ERR_INPUT;
    }
    return MP_OK;
}

void mp_log_free(mp_log *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->ntables; i++)
        free(l->tables[i].rows);
    free(l->tables);
    free(l->steps);
    free(l->gemms);
    memset(l, 0, sizeof *l);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double mp_cal_steady(const mp_log *l, mp_step_field which, int *first, int *last)
{
    if (!l->nsteps)
        return 0;
    double *v = malloc(l->nsteps * sizeof *v);
    if (!v)
        return 0;
    /* warm-up: every record of step 1 (one per rank when several ranks log) when later steps exist */
    size_t n = 0, skip = 0;
    if (l->steps[0].step <= 1)
        while (skip < l->nsteps && l->steps[skip].step <= 1)
            skip++;
    if (skip == l->nsteps)
        skip = 0;
    int f = 0, la = 0;
    for (size_t i = skip; i < l->nsteps; i++) {
        const mp_train_step *s = &l->steps[i];
        double x = which == MP_STEP_TIME_S ? s->step_s : which == MP_STEP_TFLOPS ? s->tflops_per_gpu
                 : which == MP_STEP_TOKENS_PER_S ? s->tokens_per_s_per_gpu
                 : which == MP_STEP_MEM_GIB ? s->mem_gib : s->mem_frac;
        if (x > 0) {
            v[n++] = x;
            if (!f)
                f = s->line;
            la = s->line;
        }
    }
    double med = 0;
    if (n) {
        qsort(v, n, sizeof *v, cmp_d);
        med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    }
    free(v);
    if (first) *first = f;
    if (last) *last = la;
    return med;
}

