/* src/calibrate/parse_nccl.c — nccl-tests tables: the test name, the rank lines (ranks, hosts,
 * device), the header and units rows, and every size's out-of-place and in-place columns. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cal_internal.h"
#include "../internal.h"

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


static mp_status nccl_fail(cal_nccl_state *s, int line, const char *what)
{
    mp_diag_add(s->diag, "%s:%d: %s", s->origin, line, what);
    return MP_ERR_INPUT;
}

/* "# Rank 3 Group 0 Pid 6902 on HOST device 3 [0000:0c:00] NVIDIA H100 80GB HBM3" */
static void nccl_rank_line(cal_nccl_state *s, const char *line)
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

static mp_status nccl_open_table(cal_nccl_state *s, int line, const char *hdr)
{
    if (!s->have_op)
        return nccl_fail(s, line, "expected the test's name (all_reduce_perf, all_gather_perf, "
                                  "reduce_scatter_perf, alltoall_perf or sendrecv_perf) before its table");
    if (s->ranks < 1)
        return nccl_fail(s, line, "expected the \"#  Rank N ... on HOST device ...\" lines before "
                                  "the table (they give the ranks and nodes)");
    int g = cal_grow((void **)&s->l->tables, &s->l->ntables, sizeof *s->l->tables, &s->tcap);
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
static mp_status nccl_units(cal_nccl_state *s, int line, const char *u)
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

static mp_status nccl_row(cal_nccl_state *s, int line, char **tok, int ntok, int at)
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
    int g = cal_grow((void **)&t->rows, &t->nrows, sizeof *t->rows, &s->rcap);
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
        if ((i == 3 || i == 7) && (!strcmp(x, "N/A") || cal_is_int_token(x) || cal_plain_number(x, 0, &v[i]))) {
            /* #wrong (a count; older nccl-tests print an "error" as 0e+00) */
            v[i] = 0;
            continue;
        }
        if (!cal_plain_number(x, 0, &v[i])) {
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

mp_status cal_nccl_close(cal_nccl_state *s, int line)
{
    if (s->cur && s->cur->nrows == 0)
        return nccl_fail(s, line, "truncated table: expected rows (size count type ...) after the "
                                  "table header");
    s->cur = NULL;
    return MP_OK;
}

static void nccl_find_op(cal_nccl_state *s, const char *line)
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

mp_status cal_nccl_line(cal_nccl_state *s, int ln, char *line)
{
    if (strstr(line, "_perf"))
        nccl_find_op(s, line);
    const char *hash = strchr(line, '#');
    if (hash) {
        if (strstr(hash, "Rank ") && strstr(hash, " device "))
            nccl_rank_line(s, hash);
        else if (strstr(hash, "size") && strstr(hash, "count") && strstr(hash, "time")) {
            mp_status st = cal_nccl_close(s, ln);
            return st ? st : nccl_open_table(s, ln, hash);
        } else if (s->cur && strstr(hash, "(B)"))
            return nccl_units(s, ln, hash);
        else if (s->cur && s->cur->nrows)
            return cal_nccl_close(s, ln);
        return MP_OK;
    }
    if (!s->cur)
        return MP_OK;
    char *tok[MAX_TOK];
    int n = cal_tokenize(line, tok, MAX_TOK);
    for (int i = 0; i + 2 < n; i++)
        if (cal_is_int_token(tok[i]) && cal_is_int_token(tok[i + 1]) && is_nccl_type(tok[i + 2]))
            return nccl_row(s, ln, tok, n, i);
    if (n > 0 && cal_is_int_token(tok[0]))
        return nccl_fail(s, ln, "truncated table: expected size, count and type at the start of a row");
    return s->cur->nrows ? cal_nccl_close(s, ln) : MP_OK;
}
