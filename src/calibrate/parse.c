/* src/calibrate/parse.c — read the logs users already have, as they are printed.
 *
 * One pass over the lines; the kind is detected from the first line that only that kind prints:
 * a "<op>_perf" sweep header (nccl-tests), "elapsed time per iteration" (Megatron-LM,
 * megatron/training/training.py training_log), "step:" with "tps:" (torchtitan,
 * torchtitan/components/metrics.py), or a CSV header (collectives.csv, measure_gpu.py gemm.csv).
 * Whatever precedes the record on a line (timestamps, "[rank3]:", "<stdout>:", logger names) is
 * skipped by looking for the record's own markers, so the line numbers stay those of the file.
 * Left out: nccl-tests' -G (CUDA graph) and multi-GPU-per-thread columns (the same table layout,
 * read the same), and Megatron's per-rank timers (not needed by any fit).
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshplan/calibrate.h"
#include "../internal.h"

#define LINE_CAP 4096
#define MAX_TOK 40

const char *mp_log_kind_name(mp_log_kind k)
{
    static const char *n[] = {"nccl-tests", "collectives.csv", "megatron", "torchtitan", "gemm.csv"};
    return (unsigned)k < MP_LOG_KIND_COUNT ? n[k] : "?";
}

/* ---- small helpers ---- */

static int grow(void **arr, size_t *n, size_t size, size_t *cap)
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
static int plain_number(const char *s, int commas, double *out)
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

static int is_int_token(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return 0;
    return 1;
}

static int tokenize(char *line, char **tok, int cap)
{
    int n = 0;
    for (char *p = strtok(line, " \t\r"); p && n < cap; p = strtok(NULL, " \t\r"))
        tok[n++] = p;
    return n;
}

/* ---- nccl-tests ---- */

static const char *const NCCL_TYPES[] = {"float", "half", "bfloat16", "double", "int8", "uint8",
                                         "int32", "uint32", "int64", "uint64", "fp8_e4m3",
                                         "fp8_e5m2", "int", NULL};

static int is_nccl_type(const char *s)
{
    for (int i = 0; NCCL_TYPES[i]; i++)
        if (!strcmp(s, NCCL_TYPES[i]))
            return 1;
    return 0;
}

typedef struct {
    mp_log *l;
    const char *origin;
    mp_diag *diag;
    size_t tcap, rcap;
    mp_nccl_table *cur;   /* the table being read, NULL outside one */
    int has_redop, has_root; /* header has the redop / root columns (nccl-tests >= 2.x print both) */
    double time_scale;    /* header's time unit in seconds */
    int units_line;       /* line of the units row, 0 if none */
    mp_coll_op op;
    int have_op;
    int64_t ranks;        /* "# Rank N" lines seen */
    char hosts[64][64];
    int nhosts;
    char gpu_name[96];
} nccl_state;

static mp_status nccl_fail(nccl_state *s, int line, const char *what)
{
    mp_diag_add(s->diag, "%s:%d: %s", s->origin, line, what);
    return MP_ERR_INPUT;
}

/* "# Rank 3 Group 0 Pid 6902 on HOST device 3 [0000:0c:00] NVIDIA H100 80GB HBM3" */
static void nccl_rank_line(nccl_state *s, const char *line)
{
    const char *on = strstr(line, " on ");
    s->ranks++;
    if (!on)
        return;
    char host[64] = {0};
    if (sscanf(on + 4, "%63s", host) == 1) {
        int known = 0;
        for (int i = 0; i < s->nhosts; i++)
            known |= !strcmp(s->hosts[i], host);
        if (!known && s->nhosts < 64)
            mp_strlcpy(s->hosts[s->nhosts++], host, sizeof s->hosts[0]);
    }
    const char *br = strchr(on, ']');
    if (br && !s->gpu_name[0]) {
        while (*++br == ' ')
            ;
        mp_strlcpy(s->gpu_name, br, sizeof s->gpu_name);
        size_t n = strlen(s->gpu_name);
        while (n && isspace((unsigned char)s->gpu_name[n - 1]))
            s->gpu_name[--n] = 0;
    }
}

static mp_status nccl_open_table(nccl_state *s, int line, const char *hdr)
{
    if (!s->have_op)
        return nccl_fail(s, line, "expected the test's name (all_reduce_perf, all_gather_perf, "
                                  "reduce_scatter_perf, alltoall_perf or sendrecv_perf) before its table");
    if (s->ranks < 1)
        return nccl_fail(s, line, "expected the \"#  Rank N ... on HOST device ...\" lines before "
                                  "the table (they give the ranks and nodes)");
    int g = grow((void **)&s->l->tables, &s->l->ntables, sizeof *s->l->tables, &s->tcap);
    if (g)
        return g == -1 ? MP_ERR_RANGE : MP_ERR_NOMEM;
    s->cur = &s->l->tables[s->l->ntables++];
    memset(s->cur, 0, sizeof *s->cur);
    s->rcap = 0;
    s->cur->op = s->op;
    s->cur->nranks = s->ranks;
    s->cur->nnodes = s->nhosts > 0 ? s->nhosts : 1;
    mp_strlcpy(s->cur->gpu_name, s->gpu_name, sizeof s->cur->gpu_name);
    s->cur->first_line = line;
    s->has_redop = strstr(hdr, "redop") != NULL;
    s->has_root = strstr(hdr, " root") != NULL;
    s->time_scale = 1e-6;
    return MP_OK;
}

/* The units row "(B) (elements) (us) (GB/s) (GB/s)": time in us (or ms), bandwidth GB/s. */
static mp_status nccl_units(nccl_state *s, int line, const char *u)
{
    s->units_line = line;
    if (strstr(u, "(ms)"))
        s->time_scale = 1e-3;
    else if (!strstr(u, "(us)"))
        return nccl_fail(s, line, "mixed units: expected the time column in (us) or (ms)");
    if (!strstr(u, "(B)") || strstr(u, "(MB/s)") || strstr(u, "(KB)") || strstr(u, "(MB)"))
        return nccl_fail(s, line, "mixed units: expected size in (B) and bandwidth in (GB/s)");
    return MP_OK;
}

static mp_status nccl_row(nccl_state *s, int line, char **tok, int ntok, int at)
{
    const int fixed = 3 + s->has_redop + s->has_root, want = fixed + 8;
    if (ntok - at < want) {
        char m[200];
        snprintf(m, sizeof m, "truncated table: expected %d columns (size count type%s%s time algbw "
                 "busbw #wrong, out-of-place then in-place), got %d", want,
                 s->has_redop ? " redop" : "", s->has_root ? " root" : "", ntok - at);
        return nccl_fail(s, line, m);
    }
    mp_nccl_table *t = s->cur;
    int g = grow((void **)&t->rows, &t->nrows, sizeof *t->rows, &s->rcap);
    if (g)
        return g == -1 ? MP_ERR_RANGE : MP_ERR_NOMEM;
    mp_nccl_row *r = &t->rows[t->nrows];
    memset(r, 0, sizeof *r);
    r->line = line;
    double v[8];
    r->bytes = strtod(tok[at], NULL);
    r->count = strtoll(tok[at + 1], NULL, 10);
    mp_strlcpy(r->type, tok[at + 2], sizeof r->type);
    if (s->has_redop)
        mp_strlcpy(r->redop, tok[at + 3], sizeof r->redop);
    if (s->has_root)
        r->root = atoi(tok[at + 3 + s->has_redop]);
    for (int i = 0; i < 8; i++) {
        const char *x = tok[at + fixed + i];
        if ((i == 3 || i == 7) && (!strcmp(x, "N/A") || is_int_token(x) || plain_number(x, 0, &v[i]))) {
            /* #wrong (a count; older nccl-tests print an "error" as 0e+00) */
            v[i] = 0;
            continue;
        }
        if (!plain_number(x, 0, &v[i])) {
            char m[200];
            snprintf(m, sizeof m, "mixed units: column %d = \"%s\": expected a plain number in the "
                     "header's units (time %s, bandwidth GB/s)", fixed + i + 1, x,
                     s->time_scale == 1e-3 ? "ms" : "us");
            return nccl_fail(s, line, m);
        }
    }
    for (int k = 0; k < 2; k++) {
        r->time_s[k] = v[4 * k] * s->time_scale;
        r->algbw_Bps[k] = v[4 * k + 1] * 1e9;
        r->busbw_Bps[k] = v[4 * k + 2] * 1e9;
    }
    if (!(r->time_s[0] > 0 || r->time_s[1] > 0))
        return nccl_fail(s, line, "expected a time > 0 in the out-of-place or in-place column");
    t->nrows++;
    t->last_line = line;
    return MP_OK;
}

static mp_status nccl_close(nccl_state *s, int line)
{
    if (s->cur && s->cur->nrows == 0)
        return nccl_fail(s, line, "truncated table: expected rows (size count type ...) after the "
                                  "table header");
    s->cur = NULL;
    return MP_OK;
}

static void nccl_find_op(nccl_state *s, const char *line)
{
    static const struct { const char *name; mp_coll_op op; } ops[] = {
        {"all_reduce_perf", MP_COLL_ALL_REDUCE}, {"all_gather_perf", MP_COLL_ALL_GATHER},
        {"reduce_scatter_perf", MP_COLL_REDUCE_SCATTER}, {"alltoall_perf", MP_COLL_ALL_TO_ALL},
        {"sendrecv_perf", MP_COLL_SEND_RECV}, {"broadcast_perf", MP_COLL_BROADCAST}};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strstr(line, ops[i].name)) {
            s->op = ops[i].op;
            s->have_op = 1;
            s->ranks = 0; /* a new test: its rank lines follow */
            s->nhosts = 0;
            s->gpu_name[0] = 0;
        }
}

static mp_status nccl_line(nccl_state *s, int ln, char *line)
{
    if (strstr(line, "_perf"))
        nccl_find_op(s, line);
    const char *hash = strchr(line, '#');
    if (hash) {
        if (strstr(hash, "Rank ") && strstr(hash, " device "))
            nccl_rank_line(s, hash);
        else if (strstr(hash, "size") && strstr(hash, "count") && strstr(hash, "time")) {
            mp_status st = nccl_close(s, ln);
            return st ? st : nccl_open_table(s, ln, hash);
        } else if (s->cur && strstr(hash, "(B)"))
            return nccl_units(s, ln, hash);
        else if (s->cur && s->cur->nrows)
            return nccl_close(s, ln);
        return MP_OK;
    }
    if (!s->cur)
        return MP_OK;
    char *tok[MAX_TOK];
    int n = tokenize(line, tok, MAX_TOK);
    for (int i = 0; i + 2 < n; i++)
        if (is_int_token(tok[i]) && is_int_token(tok[i + 1]) && is_nccl_type(tok[i + 2]))
            return nccl_row(s, ln, tok, n, i);
    if (n > 0 && is_int_token(tok[0]))
        return nccl_fail(s, ln, "truncated table: expected size, count and type at the start of a row");
    return s->cur->nrows ? nccl_close(s, ln) : MP_OK;
}

/* ---- Megatron-LM ---- */

/* The number after "key" on the line (commas allowed), or -1 when absent. */
static double after(const char *line, const char *key)
{
    const char *p = strstr(line, key);
    if (!p)
        return -1;
    p += strlen(key);
    while (*p == ' ' || *p == ':')
        p++;
    char buf[64];
    size_t j = 0;
    while (*p && (isdigit((unsigned char)*p) || strchr(".,eE+-", *p)) && j + 1 < sizeof buf)
        buf[j++] = *p++;
    buf[j] = 0;
    double v;
    return plain_number(buf, 1, &v) ? v : -1;
}

static void megatron_arg(mp_megatron_args *a, int ln, const char *name, const char *val)
{
    static const struct { const char *k; size_t off; } ints[] = {
#define A(k, f) {k, offsetof(mp_megatron_args, f)}
        A("tensor_model_parallel_size", tp), A("pipeline_model_parallel_size", pp),
        A("virtual_pipeline_model_parallel_size", vpp), A("context_parallel_size", cp),
        A("expert_model_parallel_size", ep), A("micro_batch_size", mb), A("global_batch_size", gb),
        A("seq_length", seq), A("world_size", world_size), A("num_layers", layers),
        A("hidden_size", hidden), A("num_attention_heads", heads), A("num_query_groups", kv_groups),
        A("ffn_hidden_size", ffn_hidden), A("padded_vocab_size", vocab),
#undef A
    };
    if (!a->found)
        a->first_line = ln;
    a->found = 1;
    a->last_line = ln;
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (!strcmp(name, ints[i].k)) {
            if (is_int_token(val))
                *(int64_t *)((char *)a + ints[i].off) = strtoll(val, NULL, 10);
            return;
        }
    int t = !strcmp(val, "True");
    if (!strcmp(name, "sequence_parallel")) a->sp = t;
    else if (!strcmp(name, "use_distributed_optimizer")) a->dist_opt = t;
    else if (!strcmp(name, "bf16")) a->bf16 = t;
    else if (!strcmp(name, "fp16")) a->fp16 = t;
    else if (!strcmp(name, "fp8")) a->fp8 = strcmp(val, "None") != 0;
    else if (!strcmp(name, "recompute_granularity"))
        mp_strlcpy(a->recompute, !strcmp(val, "None") ? "none" : val, sizeof a->recompute);
}

/* "  name ........ value" of the printed arguments block (megatron/training/arguments.py). */
static int megatron_args_line(mp_megatron_args *a, int ln, const char *line)
{
    const char *dots = strstr(line, " ...");
    if (!dots)
        return 0;
    char name[96], val[96];
    const char *p = line;
    while (*p == ' ')
        p++;
    size_t n = (size_t)(dots - p);
    if (!n || n >= sizeof name)
        return 0;
    memcpy(name, p, n);
    name[n] = 0;
    for (size_t i = 0; i < n; i++)
        if (!(isalnum((unsigned char)name[i]) || name[i] == '_'))
            return 0;
    const char *v = dots;
    while (*v == '.' || *v == ' ')
        v++;
    if (sscanf(v, "%95s", val) != 1)
        return 0;
    megatron_arg(a, ln, name, val);
    return 1;
}

typedef struct {
    char unit[16]; /* the first step line's unit, "" before */
    size_t scap;
} step_state;

static mp_status unit_check(step_state *ss, const char *unit, const char *origin, int ln,
                            const char *what, mp_diag *d)
{
    if (!ss->unit[0]) {
        mp_strlcpy(ss->unit, unit, sizeof ss->unit);
        return MP_OK;
    }
    if (!strcmp(ss->unit, unit))
        return MP_OK;
    mp_diag_add(d, "%s:%d: mixed units: %s in %s, expected %s as on the earlier lines", origin, ln,
                what, unit, ss->unit);
    return MP_ERR_INPUT;
}

static mp_status megatron_line(mp_log *l, step_state *ss, int ln, const char *line, mp_diag *d)
{
    const char *e = strstr(line, "elapsed time per iteration (");
    if (!e)
        return megatron_args_line(&l->args, ln, line), MP_OK;
    char unit[16] = {0};
    sscanf(e + strlen("elapsed time per iteration ("), "%15[^)]", unit);
    if (strcmp(unit, "ms") && strcmp(unit, "s")) {
        mp_diag_add(d, "%s:%d: elapsed time per iteration (%s): expected (ms)", l->file, ln, unit);
        return MP_ERR_INPUT;
    }
    mp_status st = unit_check(ss, unit, l->file, ln, "elapsed time per iteration", d);
    if (st)
        return st;
    int g = grow((void **)&l->steps, &l->nsteps, sizeof *l->steps, &ss->scap);
    if (g)
        return g == -1 ? MP_ERR_RANGE : MP_ERR_NOMEM;
    mp_train_step *s = &l->steps[l->nsteps];
    memset(s, 0, sizeof *s);
    s->line = ln;
    double it = after(line, "iteration"), t = after(e, ")");
    if (!(t > 0)) {
        mp_diag_add(d, "%s:%d: elapsed time per iteration: expected a number > 0", l->file, ln);
        return MP_ERR_INPUT;
    }
    s->step = it > 0 ? (int64_t)it : (int64_t)l->nsteps + 1;
    s->step_s = t * (!strcmp(unit, "ms") ? 1e-3 : 1.0);
    double tf = after(line, "(TFLOP/s/GPU)");
    s->tflops_per_gpu = tf > 0 ? tf : 0;
    double gb = after(line, "global batch size");
    s->global_batch = gb > 0 ? (int64_t)gb : 0;
    double loss = after(line, "lm loss");
    s->loss = loss > 0 ? loss : 0;
    l->nsteps++;
    return MP_OK;
}

/* ---- torchtitan ---- */

static mp_status titan_line(mp_log *l, step_state *ss, int ln, const char *line, mp_diag *d)
{
    const char *p = strstr(line, "step:");
    if (!p || !(strstr(p, "tps:") || strstr(p, "loss:")))
        return MP_OK;
    int g = grow((void **)&l->steps, &l->nsteps, sizeof *l->steps, &ss->scap);
    if (g)
        return g == -1 ? MP_ERR_RANGE : MP_ERR_NOMEM;
    mp_train_step *s = &l->steps[l->nsteps];
    memset(s, 0, sizeof *s);
    s->line = ln;
    double v = after(p, "step:");
    if (!(v >= 0)) {
        mp_diag_add(d, "%s:%d: step: expected the step number", l->file, ln);
        return MP_ERR_INPUT;
    }
    s->step = (int64_t)v;
    if ((v = after(p, "loss:")) >= 0) s->loss = v;
    if ((v = after(p, "tps:")) >= 0) s->tokens_per_s_per_gpu = v;
    if ((v = after(p, "tflops:")) >= 0) s->tflops_per_gpu = v;
    if ((v = after(p, "mfu:")) >= 0) s->mfu_frac = v / 100.0;
    const char *m = strstr(p, "memory:");
    if (m) {
        double gib = 0, pct = 0;
        char unit[8] = {0};
        if (sscanf(m + 7, " %lf%7[A-Za-z](%lf%%)", &gib, unit, &pct) < 2) {
            mp_diag_add(d, "%s:%d: memory: expected \"memory: 44.84GiB(47.19%%)\"", l->file, ln);
            return MP_ERR_INPUT;
        }
        mp_status st = unit_check(ss, unit, l->file, ln, "memory", d);
        if (st)
            return st;
        double scale = !strcmp(unit, "GiB") ? 1.0 : !strcmp(unit, "MiB") ? 1.0 / 1024 : 0;
        if (!scale) {
            mp_diag_add(d, "%s:%d: memory in %s: expected GiB or MiB", l->file, ln, unit);
            return MP_ERR_INPUT;
        }
        s->mem_gib = gib * scale;
        s->mem_frac = pct / 100.0;
    }
    l->nsteps++;
    return MP_OK;
}

/* ---- CSVs ---- */

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

typedef struct {
    char hdr_buf[LINE_CAP];
    char *hdr[MAX_TOK];
    int nhdr;
    size_t cap, rcap[256];
} csv_state;

static mp_status csv_num(const char *origin, int ln, const char *name, const char *s, double *v,
                         mp_diag *d)
{
    if (plain_number(s, 0, v))
        return MP_OK;
    mp_diag_add(d, "%s:%d: %s = \"%s\": expected a number >= 0", origin, ln, name, s);
    return MP_ERR_INPUT;
}

static mp_status gemm_row(mp_log *l, csv_state *cs, int ln, char **f, int n, mp_diag *d)
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
    if (!plain_number(f[is], 0, &s)) /* a failed measurement ("oom", "n/a") is a row too: skip */
        return MP_OK;
    mp_status st = csv_num(l->file, ln, "m", f[im], &m, d);
    if (!st) st = csv_num(l->file, ln, "n", f[in], &nn, d);
    if (!st) st = csv_num(l->file, ln, "k", f[ik], &k, d);
    if (st)
        return st;
    mp_dtype dt = !strcmp(f[idt], "bf16") ? MP_DT_BF16 : !strcmp(f[idt], "fp8") ? MP_DT_FP8
                : !strcmp(f[idt], "fp16") ? MP_DT_FP16 : MP_DT_COUNT;
    if (dt == MP_DT_COUNT || !(s > 0))
        return MP_OK;
    int g = grow((void **)&l->gemms, &l->ngemms, sizeof *l->gemms, &cs->cap);
    if (g)
        return g == -1 ? MP_ERR_RANGE : MP_ERR_NOMEM;
    mp_gemm_row *r = &l->gemms[l->ngemms++];
    *r = (mp_gemm_row){ln, (int64_t)m, (int64_t)nn, (int64_t)k, dt, s, 2.0 * m * nn * k / s};
    return MP_OK;
}

/* collectives.csv: rows grouped into one sweep per (source_group, collective, total_gpus). */
static mp_status coll_row(mp_log *l, csv_state *cs, int ln, char **f, int n, mp_diag *d)
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
    mp_status st = csv_num(l->file, ln, "num_nodes", f[c[3]], &nodes, d);
    if (!st) st = csv_num(l->file, ln, "total_gpus", f[c[4]], &gpus, d);
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
        int g = grow((void **)&l->tables, &l->ntables, sizeof *l->tables, &cs->cap);
        if (g)
            return g == -1 ? MP_ERR_RANGE : MP_ERR_NOMEM;
        tb = &l->tables[l->ntables++];
        memset(tb, 0, sizeof *tb);
        mp_strlcpy(tb->label, label, sizeof tb->label);
        mp_strlcpy(tb->gpu_name, f[c[2]], sizeof tb->gpu_name);
        tb->op = op;
        tb->nranks = (int64_t)gpus;
        tb->nnodes = (int64_t)nodes;
        tb->first_line = ln;
        cs->rcap[ti] = 0;
        int ig = col(cs->hdr, cs->nhdr, "gpus_per_node"), il = col(cs->hdr, cs->nhdr, "inter_link");
        tb->gpus_per_node = ig >= 0 ? strtoll(f[ig], NULL, 10) : 0;
        if (il >= 0 && strcmp(f[il], "none") && strcmp(f[il], "infiniband"))
            mp_strlcpy(tb->scaleout, f[il], sizeof tb->scaleout);
    }
    int g = grow((void **)&tb->rows, &tb->nrows, sizeof *tb->rows, &cs->rcap[ti]);
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

static mp_status csv_line(mp_log *l, csv_state *cs, int ln, char *line, mp_diag *d)
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

static mp_status parse_lines(const char *text, size_t len, mp_log *l, mp_diag *d)
{
    nccl_state ns = {.l = l, .origin = l->file, .diag = d};
    step_state ss = {{0}, 0};
    csv_state *cs = calloc(1, sizeof *cs);
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
        case MP_LOG_NCCL_TESTS: st = nccl_line(&ns, ln, line); break;
        case MP_LOG_MEGATRON: st = megatron_line(l, &ss, ln, line, d); break;
        case MP_LOG_TORCHTITAN: st = titan_line(l, &ss, ln, line, d); break;
        default: st = csv_line(l, cs, ln, line, d); break;
        }
    }
    if (st == MP_OK && l->kind == MP_LOG_NCCL_TESTS)
        st = nccl_close(&ns, ln);
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

mp_status mp_cal_parse_megatron_args(const char *text, size_t len, const char *origin,
                                     mp_megatron_args *out, mp_diag *diag)
{
    memset(out, 0, sizeof *out);
    char line[LINE_CAP];
    int ln = 0;
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && text[j] != '\n')
            j++;
        size_t n = j - i < LINE_CAP - 1 ? j - i : LINE_CAP - 1;
        memcpy(line, text + i, n);
        line[n] = 0;
        ln++;
        i = j + 1;
        megatron_args_line(out, ln, line);
    }
    if (!out->found) {
        mp_diag_add(diag, "%s:1: expected a printed Megatron-LM arguments block (lines \"  name "
                    "........ value\"); found none", origin ? origin : "(config)");
        return MP_ERR_INPUT;
    }
    return MP_OK;
}

static void key_add(char *buf, size_t cap, int *n, const char *key, long long v, const char *sv)
{
    size_t used = strlen(buf);
    if (used + 1 >= cap)
        return;
    if (sv)
        snprintf(buf + used, cap - used, "%s%s=%s", *n ? "," : "", key, sv);
    else
        snprintf(buf + used, cap - used, "%s%s=%lld", *n ? "," : "", key, v);
    (*n)++;
}

int mp_megatron_args_plan(const mp_megatron_args *a, char *buf, size_t cap)
{
    int n = 0;
    if (!cap)
        return 0;
    buf[0] = 0;
    const struct { const char *k; int64_t v; } ints[] = {
        {"tp", a->tp}, {"pp", a->pp}, {"vpp", a->vpp}, {"cp", a->cp}, {"ep", a->ep},
        {"mb", a->mb}, {"gb", a->gb}, {"seq", a->seq}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (ints[i].v > 0)
            key_add(buf, cap, &n, ints[i].k, (long long)ints[i].v, NULL);
    if (a->found && a->dist_opt) key_add(buf, cap, &n, "zero", 1, NULL);
    if (a->found && a->sp) key_add(buf, cap, &n, "sp", 1, NULL);
    if (a->recompute[0]) key_add(buf, cap, &n, "recompute", 0, a->recompute);
    if (a->fp8) key_add(buf, cap, &n, "precision", 0, "fp8");
    else if (a->fp16) key_add(buf, cap, &n, "precision", 0, "fp16");
    return n;
}
