/* src/cli/cli_search.c — what `search` and `scale` share: the job options, GPU-count ranges,
 * the clusters, and the progress bar. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

int cli_parse_gpu_range(const char *s, long long *counts, int cap, int *n)
{
    long long lo = 0, hi = 0;
    const char *colon = strchr(s, ':');
    int rc;
    *n = 0;
    if (!colon) {
        if ((rc = cli_parse_count("gpus", s, 1, 1LL << 24, &lo)))
            return rc;
        counts[(*n)++] = lo;
        return 0;
    }
    char a[64], b[64];
    size_t la = (size_t)(colon - s);
    if (la >= sizeof a || strlen(colon + 1) >= sizeof b) {
        fprintf(stderr, "meshplan: gpus = \"%s\": expected N or A:B (a doubling range)\n", s);
        return EXIT_INPUT;
    }
    memcpy(a, s, la);
    a[la] = '\0';
    snprintf(b, sizeof b, "%s", colon + 1);
    if ((rc = cli_parse_count("gpus (range start)", a, 1, 1LL << 24, &lo)) ||
        (rc = cli_parse_count("gpus (range end)", b, 1, 1LL << 24, &hi)))
        return rc;
    if (hi < lo) {
        fprintf(stderr, "meshplan: gpus = \"%s\": expected A:B with A <= B\n", s);
        return EXIT_INPUT;
    }
    for (long long g = lo; g <= hi; g *= 2) {
        if (*n >= cap) {
            fprintf(stderr, "meshplan: gpus = \"%s\": more than %d doublings\n", s, cap);
            return EXIT_INPUT;
        }
        counts[(*n)++] = g;
    }
    return 0;
}

int cli_search_clusters(const cli_args *a, const mp_catalog *cat, const long long *counts, int n,
                        mp_cluster *clusters, const char *cmd)
{
    for (int i = 0; i < n; i++) {
        int rc = cli_one_cluster(a, cat, cmd, counts[i], &clusters[i]);
        if (rc)
            return rc;
    }
    return 0;
}

int cli_search_opts(const cli_args *a, const mp_model *m, mp_search_opts *o)
{
    int rc;
    mp_search_opts_init(o);
    static mp_estimate_opts cal_opts; /* outlives o: the search reads it while it runs */
    const char *gpu = cli_opt(a, "--gpu");
    o->estimate = cli_cal_opts(gpu ? gpu : "", &cal_opts);
    const char *fix = cli_opt(a, "--fix");
    if (fix) {
        mp_diag d = {0};
        mp_status st = mp_islands_plan_parse_single(fix, &o->pin, &d); /* island keys: bad input */
        if (st != MP_OK) {
            fprintf(stderr, "meshplan: --fix \"%s\":\n", fix);
            cli_print_diag(&d);
            return EXIT_INPUT;
        }
    }
    const char *emit = cli_opt(a, "--emit");
    if (emit && !strcmp(emit, "torchtitan") && !o->pin.fsdp && (o->pin.zero < 0 || o->pin.zero == 3))
        o->pin.fsdp = 2; /* torchtitan shards with FSDP2: search the plans it runs */
    long long x = 0;
    const char *s;
    if ((s = cli_opt(a, "--gb"))) {
        if ((rc = cli_parse_count("gb", s, 1, 1LL << 30, &x)))
            return rc;
        o->pin.gb = x;
    }
    if (!o->pin.gb)
        return cli_fail("--gb is required (the global batch in sequences)%s", "");
    if ((s = cli_opt(a, "--seq"))) {
        if ((rc = cli_parse_count("seq", s, 1, 1LL << 26, &x)))
            return rc;
        o->pin.seq = x;
    }
    if (!o->pin.seq)
        o->pin.seq = m->seq_len;
    if ((s = cli_opt(a, "--precision"))) {
        if (!strcmp(s, "bf16")) o->pin.precision = MP_DT_BF16;
        else if (!strcmp(s, "fp16")) o->pin.precision = MP_DT_FP16;
        else if (!strcmp(s, "fp8")) o->pin.precision = MP_DT_FP8;
        else return cli_fail("precision = \"%s\": expected bf16, fp16 or fp8", s);
    }
    if ((s = cli_opt(a, "--objective")) && mp_objective_parse(s, &o->objective) != MP_OK)
        return cli_fail("objective = \"%s\": expected throughput, time-to-train, cost or energy", s);
    if ((s = cli_opt(a, "--tokens"))) {
        char *end;
        o->tokens = strtod(s, &end);
        if (!s[0] || *end || !(o->tokens > 0 && o->tokens <= 1e18))
            return cli_fail("tokens = \"%s\": expected a token budget in (0, 1e18], e.g. 15e12", s);
    }
    if ((s = cli_opt(a, "--price-gpu-hour"))) {
        char *end;
        o->price_per_gpu_hour = strtod(s, &end);
        if (!s[0] || *end || !(o->price_per_gpu_hour > 0 && o->price_per_gpu_hour <= 1e6))
            return cli_fail("price-gpu-hour = \"%s\": expected USD per GPU-hour in (0, 1e6]", s);
    }
    if (o->objective == MP_OBJ_TIME_TO_TRAIN && !(o->tokens > 0))
        return cli_fail("objective time-to-train needs --tokens (the token budget)%s", "");
    if (o->objective == MP_OBJ_COST && !(o->price_per_gpu_hour > 0))
        return cli_fail("objective cost needs --price-gpu-hour (USD per GPU-hour)%s", "");
    if (o->objective == MP_OBJ_ENERGY) {
        o->energy = mp_energy_step_facility_J; /* facility energy per step (docs/energy.md) */
        o->energy_ctx = NULL;
    }
    if ((s = cli_opt(a, "--top"))) {
        if ((rc = cli_parse_count("top", s, 1, MP_SEARCH_MAX_TOP, &x)))
            return rc;
        o->top_n = (int)x;
    } else if (cli_opt(a, "--emit")) {
        /* --emit writes the best plan its format can hold: keep enough ranked plans to find it */
        o->top_n = MP_SEARCH_MAX_TOP;
    }
    if ((s = cli_opt(a, "--threads"))) {
        if ((rc = cli_parse_count("threads", s, 1, 4096, &x)))
            return rc;
        o->threads = (int)x;
    }
    if (cli_flag(a, "--no-prune"))
        o->prune = 0;
    if ((s = cli_opt(a, "--orders"))) {
        if (!strcmp(s, "all"))
            o->all_orders = 1;
        else if (strcmp(s, "default"))
            return cli_fail("orders = \"%s\": expected default (Megatron-Core's rank order) or all", s);
    }
    return 0;
}

/* The progress bar: drawn on stderr when it is a terminal, once the search has run a second. */
static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void cli_progress_init(cli_progress *p, const char *label)
{
    memset(p, 0, sizeof *p);
    p->enabled = isatty(STDERR_FILENO);
    p->t0 = mono_s();
    p->label = label;
}

void cli_progress_cb(void *ctx, double frac, uint64_t done)
{
    cli_progress *p = ctx;
    if (!p->enabled)
        return;
    double t = mono_s();
    if (t - p->t0 < 1.0 || t - p->last < 0.1)
        return;
    p->last = t;
    p->drawn = 1;
    int w = 30, fill = (int)(frac * w + 0.5);
    if (fill > w)
        fill = w;
    char bar[32];
    for (int i = 0; i < w; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[w] = '\0';
    fprintf(stderr, "\r%s [%s] %3.0f%%  %llu plans  %.1f s", p->label ? p->label : "searching", bar,
            100.0 * frac, (unsigned long long)done, t - p->t0);
    fflush(stderr);
}

void cli_progress_done(cli_progress *p)
{
    if (p->drawn)
        fprintf(stderr, "\r%*s\r", 79, "");
    p->drawn = 0;
}
