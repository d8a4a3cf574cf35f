/* src/cli/cmd_islands_scale.c — `meshplan islands-scale`: grow the islands (all of them, or one)
 * from A to B GPUs, doubling, with the same plan and scheme, and show where adding GPUs to an
 * island stops paying: throughput, per-GPU throughput, the gain of each doubling, the marginal
 * efficiency of the added GPUs, the share of wall-clock in training steps and on the WAN.
 *
 * It is a separate command so as not to clash with `meshplan scale` (the plan search's scaling
 * study); it can be folded into `scale --island-gpus` later. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MAX_ROWS 24
/* Marginal efficiency below which a doubling "stops paying": the added GPUs give less than half
 * of what the first row's GPUs give each (docs/islands.md "Scaling"). */
#define DIMINISHING_FRAC 0.5

typedef struct {
    long long island_gpus, total_gpus, gb;
    int ok, feasible, comm_bound;
    double tokens_per_s, per_gpu, step_s, period_s, util, mfu, wan_frac, speedup, marginal;
    char bound[256];
    char error[256];
} row;

static const cli_option islands_scale_opts[] = {
    CLI_REQ("--model", "M", "the model: " CLI_MODEL_HELP),
    CLI_REQ("--cluster", "ISLANDS", "an islands description: a shipped one (e.g. three-continents) "
            "or a file (docs/cluster.md \"Islands\")"),
    CLI_REQ("--plan", "PLAN", "the plan, with gb and sync=... (plan keys below)"),
    CLI_REQ("--island-gpus", "A:B", "GPUs per island, doubling from A to B"),
    CLI_OPT("--island", "NAME", "grow only this island (default: all of them)"),
    CLI_FLAG("--weak", "grow the global batch with the GPUs (default: the batch stays)"),
    CLI_OPT("--quality-factor", "F", "tokens-to-quality factor of the sync scheme, [0.01, 100]"),
    CLI_OPT_CATALOG,
    CLI_OPT_JSON,
    CLI_FLAG("--csv", "print the --json object as key,value rows"),
    CLI_END,
};

const cli_command cli_cmd_islands_scale = {
    "islands-scale", "grow the islands (doubling) and show where bigger islands stop paying "
    "(docs/islands.md); also reached as `scale ... --island-gpus A:B`",
    NULL, 0, islands_scale_opts, NULL, cmd_islands_scale,
};

/* --island-gpus A:B, --cluster (an islands description) and --quality-factor; 0 or EXIT_INPUT. */
static int islands_scale_numbers(const cli_args *args, long long *lo, long long *hi, double *quality)
{
    const char *range = cli_opt(args, "--island-gpus"), *cluster = cli_opt(args, "--cluster");
    {
        char *end = NULL;
        *lo = strtoll(range, &end, 10);
        if (*end == ':')
            *hi = strtoll(end + 1, &end, 10);
        if (*end || *lo < 1 || *hi < *lo || *hi > (1LL << 24))
            return cli_fail("islands-scale: island-gpus = \"%s\": expected A:B with 1 <= A <= B <= 16777216 "
                            "(GPUs per island, doubling from A)", range);
    }
    if (!cli_cluster_is_islands(cluster))
        return cli_fail("islands-scale: cluster = \"%s\": expected an islands description "
                        "(docs/cluster.md \"Islands\"; e.g. three-continents)", cluster);
    const char *qf = cli_opt(args, "--quality-factor");
    if (qf) {
        char *end = NULL;
        *quality = strtod(qf, &end);
        if (!*qf || *end || !(*quality >= 0.01 && *quality <= 100.0))
            return cli_fail("islands-scale: quality-factor = \"%s\": expected a number in [0.01, 100]", qf);
    }
    return 0;
}

/* One row: the islands at g GPUs per island, the plan (its gb grown with the GPUs when weak),
 * predicted; an error is kept in the row. 0 or an exit code (the islands cannot be loaded). */
static int predict_row(const mp_catalog *cat, const mp_model *m, const char *cluster, const char *only,
                       long long g, const mp_islands_plan *p0, int weak, long long *first_total,
                       double quality, mp_islands_estimate *e, row *r)
{
    int rc;
    r->island_gpus = g;
    mp_islands *isl = NULL;
    if ((rc = cli_load_islands(cat, cluster, g, only, &isl)))
        return rc;
    for (int i = 0; i < isl->n; i++)
        r->total_gpus += isl->island[i].cluster.num_gpus;
    if (*first_total == 0)
        *first_total = r->total_gpus;
    mp_islands_plan p = *p0;
    if (weak && *first_total > 0)
        p.plan.gb = (int64_t)llround((double)p0->plan.gb * (double)r->total_gpus / (double)*first_total);
    r->gb = p.plan.gb;
    mp_islands_opts o;
    mp_islands_opts_init(&o);
    o.quality_factor = quality;
    mp_diag rd = {0};
    mp_status st = mp_islands_predict(m, isl, &p, &o, e, &rd);
    mp_islands_destroy(isl);
    if (st != MP_OK) {
        snprintf(r->error, sizeof r->error, "%.250s", rd.text);
        for (char *c = r->error; *c; c++)
            if (*c == '\n')
                *c = ' ';
    } else {
        r->ok = 1;
        r->feasible = e->feasible;
        r->tokens_per_s = e->tokens_per_s;
        r->per_gpu = e->tokens_per_s_per_gpu;
        r->step_s = e->step_s;
        r->period_s = e->period_s;
        r->util = e->compute_util;
        r->mfu = e->mfu;
        r->wan_frac = e->sync_exposed_s / e->period_s;
        r->comm_bound = e->comm_bound;
        snprintf(r->bound, sizeof r->bound, "%.250s", e->bottleneck);
    }
    return 0;
}

/* Gains: each doubling's speedup and the marginal efficiency of the GPUs it adds, relative to
 * the first row's tokens/s per GPU; returns the first row below DIMINISHING_FRAC, or -1. */
static int gains(row *rows, int n)
{
    int first_ok = -1, dim = -1;
    for (int i = 0; i < n; i++) {
        if (!rows[i].ok)
            continue;
        if (first_ok < 0) {
            first_ok = i;
            continue;
        }
        int prev = -1;
        for (int j = i - 1; j >= 0; j--)
            if (rows[j].ok) {
                prev = j;
                break;
            }
        rows[i].speedup = rows[i].tokens_per_s / rows[prev].tokens_per_s;
        double added = (double)(rows[i].total_gpus - rows[prev].total_gpus);
        rows[i].marginal = added > 0 ? (rows[i].tokens_per_s - rows[prev].tokens_per_s) / added /
                                           rows[first_ok].per_gpu : 0.0;
        if (dim < 0 && rows[i].marginal < DIMINISHING_FRAC)
            dim = i;
    }
    return dim;
}

/* The rows as JSON (or, csv, flattened to CSV). */
static int print_json(const char *model, const char *cluster, const char *only, int weak, int csv,
                      const row *rows, int n, int dim)
{
    int rc;
    json_t *o = json_object();
    json_object_set_new(o, "model", json_string(model));
    json_object_set_new(o, "cluster", json_string(cluster));
    json_object_set_new(o, "island", only ? json_string(only) : json_string("all"));
    json_object_set_new(o, "weak_scaling", json_boolean(weak));
    json_t *a = json_array();
    for (int i = 0; i < n; i++) {
        const row *r = &rows[i];
        json_t *x = json_object();
        json_object_set_new(x, "island_gpus", json_integer(r->island_gpus));
        json_object_set_new(x, "total_gpus", json_integer(r->total_gpus));
        json_object_set_new(x, "gb", json_integer(r->gb));
        json_object_set_new(x, "ok", json_boolean(r->ok));
        if (r->ok) {
            json_object_set_new(x, "feasible", json_boolean(r->feasible));
            json_object_set_new(x, "tokens_per_s", json_real(r->tokens_per_s));
            json_object_set_new(x, "tokens_per_s_per_gpu", json_real(r->per_gpu));
            json_object_set_new(x, "step_s", json_real(r->step_s));
            json_object_set_new(x, "period_s", json_real(r->period_s));
            json_object_set_new(x, "compute_util", json_real(r->util));
            json_object_set_new(x, "mfu", json_real(r->mfu));
            json_object_set_new(x, "wan_exposed_frac", json_real(r->wan_frac));
            json_object_set_new(x, "bound", json_string(r->comm_bound ? "communication" : "compute"));
            json_object_set_new(x, "speedup", json_real(r->speedup));
            json_object_set_new(x, "marginal_efficiency", json_real(r->marginal));
        } else {
            json_object_set_new(x, "error", json_string(r->error));
        }
        json_array_append_new(a, x);
    }
    json_object_set_new(o, "rows", a);
    json_object_set_new(o, "diminishing_from_island_gpus",
                        dim >= 0 ? json_integer(rows[dim].island_gpus) : json_null());
    json_object_set_new(o, "threshold_marginal_efficiency", json_real(DIMINISHING_FRAC));
    if ((rc = csv ? cli_print_csv_flat(o) : cli_print_json(o, JSON_INDENT(2) | JSON_REAL_PRECISION(10))))
        return rc;
    return 0;
}

/* The rows as a table, and where returns diminish. */
static void print_text(const char *model, const char *cluster, const char *only, const char *plan,
                       int weak, const row *rows, int n, int dim)
{
    printf("islands-scale  %s on %s, %s%s, plan %s%s\n", model, cluster, only ? "island " : "every island",
           only ? only : "", plan, weak ? " (global batch grown with the GPUs)" : " (global batch fixed)");
    printf("GPUs/island  total    gb   step s   tokens/s   per GPU   x prev  marginal  compute-util   MFU  WAN exposed  bound\n");
    for (int i = 0; i < n; i++) {
        const row *r = &rows[i];
        if (!r->ok) {
            printf("%11lld %6lld %5lld   -- %s\n", r->island_gpus, r->total_gpus, r->gb, r->error);
            continue;
        }
        char sp[16] = "     -", mg[16] = "       -";
        if (r->speedup > 0) {
            snprintf(sp, sizeof sp, "%6.2f", r->speedup);
            snprintf(mg, sizeof mg, "%7.0f%%", 100.0 * r->marginal);
        }
        printf("%11lld %6lld %5lld %8.3f %10.4g %9.4g %s  %s %12.1f%% %5.1f%% %10.1f%%  %s%s\n",
               r->island_gpus, r->total_gpus, r->gb, r->step_s, r->tokens_per_s, r->per_gpu, sp, mg,
               100.0 * r->util, 100.0 * r->mfu, 100.0 * r->wan_frac,
               r->comm_bound ? "communication" : "compute", r->feasible ? "" : " (does not fit)");
    }
    printf("(marginal: tokens/s the added GPUs bring each, relative to the first row's per-GPU rate)\n"
           "(%s)\n", MP_MFU_CONVENTION);
    if (dim >= 0)
        printf("diminishing returns: going from %lld to %lld GPUs per island adds %.0f%% throughput; the "
               "added GPUs give %.0f%% of the first row's per-GPU rate (below %.0f%%): bigger islands "
               "stop paying here. %s\n",
               rows[dim - 1 >= 0 ? dim - 1 : 0].island_gpus, rows[dim].island_gpus,
               100.0 * (rows[dim].speedup - 1.0), 100.0 * rows[dim].marginal, 100.0 * DIMINISHING_FRAC,
               rows[dim].bound);
    else
        printf("no diminishing returns in this range: every doubling's added GPUs give at least %.0f%% of "
               "the first row's per-GPU rate\n", 100.0 * DIMINISHING_FRAC);
}

int cmd_islands_scale(int argc, char **argv)
{
    cli_args args;
    int rc = cli_parse_cmd(&cli_cmd_islands_scale, argc, argv, &args);
    if (rc)
        return rc;
    const char *model = cli_opt(&args, "--model"), *cluster = cli_opt(&args, "--cluster");
    const char *plan = cli_opt(&args, "--plan");
    const char *only = cli_opt(&args, "--island");
    const int csv = cli_flag(&args, "--csv");
    const int json = cli_flag(&args, "--json") || csv, weak = cli_flag(&args, "--weak");
    if (csv && cli_flag(&args, "--json"))
        return cli_fail("islands-scale: --json and --csv exclude each other%s", "");
    long long lo = 0, hi = 0;
    double quality = 0.0;
    if ((rc = islands_scale_numbers(&args, &lo, &hi, &quality)))
        return rc;

    mp_catalog *cat = NULL;
    if ((rc = cli_load_catalog(&args, &cat)))
        return rc;
    mp_model m;
    mp_islands_plan p0;
    mp_diag d = {0};
    row *rows = calloc(MAX_ROWS, sizeof *rows);
    mp_islands_estimate *e = malloc(sizeof *e);
    int n = 0;
    if (!rows || !e) {
        rc = EXIT_INTERNAL;
        goto done;
    }
    if ((rc = cli_load_model(cat, model, &m)))
        goto done;
    mp_islands_plan_init_default(&p0);
    if (mp_islands_plan_parse(plan, &p0, &d) != MP_OK) {
        fprintf(stderr, "meshplan: the plan cannot be formed:\n");
        rc = EXIT_INPUT;
        goto done;
    }
    long long first_total = 0;
    for (long long g = lo; g <= hi && n < MAX_ROWS; g *= 2) {
        if ((rc = predict_row(cat, &m, cluster, only, g, &p0, weak, &first_total, quality, e, &rows[n])))
            goto done;
        n++;
    }
    /* A plan rejected at every size is bad input, not a scaling result. */
    {
        int any = 0;
        for (int i = 0; i < n; i++)
            any |= rows[i].ok;
        if (n > 0 && !any) {
            fprintf(stderr, "meshplan: the plan cannot be formed at any island size:\n  %s\n", rows[0].error);
            rc = EXIT_INPUT;
            goto done;
        }
    }
    const int dim = gains(rows, n);
    if (json) {
        if ((rc = print_json(model, cluster, only, weak, csv, rows, n, dim)))
            goto done;
    } else {
        print_text(model, cluster, only, plan, weak, rows, n, dim);
    }
    rc = 0;
done:
    cli_print_diag(&d);
    free(rows);
    free(e);
    mp_catalog_destroy(cat);
    return rc;
}
