/* src/cli/cmd_compare.c — `meshplan compare`: the same model and plan on several clusters, one
 * row per cluster: step time, tokens/s, MFU, exposed communication by kind, and the tier that
 * bounds the communication that costs most.
 *
 *   meshplan compare --model M --gpus N --plan "..." --cluster C1 --cluster C2 ... [--gpu G]
 *       [--catalog FILE] [--json|--csv]
 *
 * A cluster is a catalog node key, a shipped preset or a description file (docs/cluster.md).
 * --gpu puts the same GPU in every cluster, so that only the wiring differs.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MAX_CLUSTERS 16

typedef struct {
    const char *spec;
    int ok;
    mp_cluster c;
    mp_estimate *e;
    const char *kind; /* communication kind that costs most, NULL if none */
    double kind_s;
    int tier;
} result;

/* The exposed communication that costs most (the communication parts of parts.h), and the
 * tier that bounds it. */
static void bound(result *r)
{
    const mp_estimate *e = r->e;
    r->kind = NULL;
    r->kind_s = 0.0;
    r->tier = -1;
    for (int k = 0; k < MP_TIME_PART_COUNT; k++) {
        double t = mp_time_part_s(&e->time, (mp_time_part)k);
        if (mp_time_parts[k].kind == MP_TIME_KIND_COMM && t > r->kind_s) {
            r->kind = mp_time_parts[k].group;
            r->kind_s = t;
            r->tier = mp_time_part_tier(e, (mp_time_part)k);
        }
    }
}

/* The CSV's part columns: the exposed communication parts, then the waits, each in table order.
 * Returns the count. */
static int csv_parts(int cols[MP_TIME_PART_COUNT])
{
    int n = 0;
    for (int k = 0; k < MP_TIME_PART_COUNT; k++)
        if (mp_time_parts[k].kind == MP_TIME_KIND_COMM)
            cols[n++] = k;
    for (int k = 0; k < MP_TIME_PART_COUNT; k++)
        if (mp_time_parts[k].kind == MP_TIME_KIND_WAIT)
            cols[n++] = k;
    return n;
}

/* A part's CSV column: its key without "_comm", then "_s" (tp_s, dp_exposed_s, pp_bubble_s). */
static void csv_column(int k)
{
    const char *key = mp_time_parts[k].key, *c = strstr(key, "_comm");
    if (c)
        printf(",%.*s%s_s", (int)(c - key), key, c + 5);
    else
        printf(",%s_s", key);
}

static json_t *row_json(const result *r)
{
    const mp_estimate *e = r->e;
    json_t *b = json_pack("{s:s?,s:f,s:i,s:s?,s:s?}", "kind", r->kind, "exposed_s", r->kind_s, "tier",
                          r->tier, "tier_name", r->tier >= 0 ? r->c.tier[r->tier].name : NULL, "link",
                          r->tier >= 0 ? r->c.tier[r->tier].link : NULL);
    json_t *o = json_pack("{s:s,s:s,s:s,s:b,s:f,s:f,s:f,s:f}", "cluster", r->spec, "name", r->c.name, "gpu",
                          r->c.gpu.key, "feasible", e->feasible, "step_s", e->step_s, "tokens_per_s",
                          e->tokens_per_s, "mfu", e->mfu, "memory_gib", e->memory.total / 1073741824.0);
    /* exposed_comm_s by parallel dimension; each wait as KEY_s. */
    json_t *comm = json_object();
    for (int k = 0; k < MP_TIME_PART_COUNT; k++)
        if (mp_time_parts[k].kind == MP_TIME_KIND_COMM)
            json_object_set_new(comm, mp_time_parts[k].group, json_real(mp_time_part_s(&e->time, (mp_time_part)k)));
    json_object_set_new(o, "exposed_comm_s", comm);
    for (int k = 0; k < MP_TIME_PART_COUNT; k++)
        if (mp_time_parts[k].kind == MP_TIME_KIND_WAIT) {
            char key[64];
            snprintf(key, sizeof key, "%s_s", mp_time_parts[k].key);
            json_object_set_new(o, key, json_real(mp_time_part_s(&e->time, (mp_time_part)k)));
        }
    json_object_set_new(o, "bound", b);
    json_object_set_new(o, "bottleneck", json_string(e->bottleneck));
    return o;
}

/* compare --csv: one row per cluster, empty cells for one that cannot be predicted. */
static void print_csv(const result *res, int nres)
{
    int cols[MP_TIME_PART_COUNT], ncols = csv_parts(cols);
    printf("cluster,gpu,feasible,step_s,tokens_per_s,mfu");
    for (int i = 0; i < ncols; i++)
        csv_column(cols[i]);
    printf(",bound_kind,bound_tier,bound_link\n");
    for (int i = 0; i < nres; i++) {
        const result *r = &res[i];
        printf("%s", r->spec);
        if (!r->ok) {
            printf(",,,,,");
            for (int j = 0; j < ncols; j++)
                printf(",");
            printf(",,,\n");
            continue;
        }
        const mp_estimate *e = r->e;
        printf(",%s,%d,%.6g,%.6g,%.4f", r->c.gpu.key, e->feasible, e->step_s, e->tokens_per_s, e->mfu);
        for (int j = 0; j < ncols; j++)
            printf(",%.6g", mp_time_part_s(&e->time, (mp_time_part)cols[j]));
        printf(",%s,%d,%s\n", r->kind ? r->kind : "", r->tier, r->tier >= 0 ? r->c.tier[r->tier].link : "");
    }
}

/* compare's table, then each cluster's bottleneck in words. */
static void print_text(const mp_model *m, long long ngpus, const char *plan, const result *res, int nres)
{
    printf("%s on %lld GPUs, plan \"%s\"\n", m->key, ngpus, plan ? plan : "");
    char head[96] = "exposed comm s:";
    for (int k = 0, n = 0; k < MP_TIME_PART_COUNT; k++)
        if (mp_time_parts[k].kind == MP_TIME_KIND_COMM)
            snprintf(head + strlen(head), sizeof head - strlen(head), "%s%s", n++ ? " / " : " ",
                     mp_time_parts[k].group);
    printf("%-28s %-15s %8s %10s %6s   %-40s", "cluster", "gpu", "step s", "tokens/s", "MFU", head);
    for (int k = 0; k < MP_TIME_PART_COUNT; k++)
        if (mp_time_parts[k].kind == MP_TIME_KIND_WAIT)
            printf(" %9s", mp_time_parts[k].key);
    printf("  %s\n", "comm bound by");
    for (int i = 0; i < nres; i++) {
        const result *r = &res[i];
        if (!r->ok) {
            printf("%-28s (cannot be predicted, see above)\n", r->spec);
            continue;
        }
        const mp_estimate *e = r->e;
        char comm[128] = "", by[160] = "-";
        for (int k = 0, n = 0; k < MP_TIME_PART_COUNT; k++)
            if (mp_time_parts[k].kind == MP_TIME_KIND_COMM)
                snprintf(comm + strlen(comm), sizeof comm - strlen(comm), "%s%.3f", n++ ? " / " : "",
                         mp_time_part_s(&e->time, (mp_time_part)k));
        if (r->kind && r->tier >= 0)
            snprintf(by, sizeof by, "%s: tier %d %s (%s)", r->kind, r->tier,
                     r->c.tier[r->tier].name, r->c.tier[r->tier].link);
        printf("%-28s %-15s %8.3f %10.0f %5.1f%%   %-40s", r->spec, r->c.gpu.key, e->step_s,
               e->tokens_per_s, 100.0 * e->mfu, comm);
        for (int k = 0; k < MP_TIME_PART_COUNT; k++)
            if (mp_time_parts[k].kind == MP_TIME_KIND_WAIT)
                printf(" %9.3f", mp_time_part_s(&e->time, (mp_time_part)k));
        printf("  %s%s\n", by, e->feasible ? "" : "  [does not fit in memory]");
    }
    printf("%s\nbottleneck:\n", MP_MFU_CONVENTION);
    for (int i = 0; i < nres; i++)
        if (res[i].ok)
            printf("  %-26s %s\n", res[i].spec, res[i].e->bottleneck);
}

static const cli_option compare_opts[] = {
    CLI_REQ("--model", "M", "the model: " CLI_MODEL_HELP),
    CLI_REQ("--gpus", "N", "GPUs in the job"),
    CLI_OPT("--plan", "PLAN", "the parallel plan, \"tp=8,pp=4,...\" (plan keys below)"),
    CLI_OPT("--cluster", "C", "a cluster to compare (repeat it, up to 16): a catalog node, a "
            "shipped cluster or a description file"),
    CLI_OPT("--gpu", "G", "the same GPU in every cluster, so that only the wiring differs"),
    CLI_OPT_CATALOG,
    CLI_OPT_CALIBRATION,
    CLI_OPT_JSON,
    CLI_OPT_CSV,
    CLI_END,
};

const cli_command cli_cmd_compare = {
    "compare", "the same plan on other wiring, one row per cluster: step, tokens/s, MFU, exposed "
    "communication, the bounding tier",
    NULL, 0, compare_opts, NULL, cmd_compare,
};

int cmd_compare(int argc, char **argv)
{
    cli_args args;
    int rc = cli_parse_cmd(&cli_cmd_compare, argc, argv, &args);
    if (rc)
        return rc;
    const char *model = cli_opt(&args, "--model"), *plan = cli_opt(&args, "--plan");
    const char *gpu = cli_opt(&args, "--gpu");
    int json = cli_flag(&args, "--json"), csv = cli_flag(&args, "--csv");
    if (json && csv)
        return cli_fail("compare: --csv and --json exclude each other%s", "");
    if (!model)
        return cli_fail("compare: --model is required%s", "");
    if (!cli_opt(&args, "--gpus"))
        return cli_fail("compare: --gpus is required%s", "");
    const char *specs[MAX_CLUSTERS];
    int nc = cli_opt_all(&args, "--cluster", specs, MAX_CLUSTERS);
    if (nc < 1)
        return cli_fail("compare: at least one --cluster is required (a catalog node such as "
                        "dgx-h100, a shipped cluster, or a file)%s", "");
    long long ngpus = 0;
    if ((rc = cli_parse_count("gpus", cli_opt(&args, "--gpus"), 1, 1LL << 24, &ngpus)))
        return rc;

    mp_catalog *cat = NULL;
    if ((rc = cli_load_catalog(&args, &cat)))
        return rc;
    mp_model m;
    result res[MAX_CLUSTERS];
    memset(res, 0, sizeof res);
    int nres = 0, failed = 0;
    if ((rc = cli_load_model(cat, model, &m)))
        goto done;
    for (int i = 0; i < nc; i++) {
        result *r = &res[nres++];
        r->spec = specs[i];
        if ((rc = cli_load_cluster(cat, specs[i], ngpus, gpu, &r->c))) {
            failed = rc;
            continue;
        }
        mp_plan p;
        mp_plan_init_default(&p);
        mp_diag d = {0};
        mp_status st = mp_islands_plan_parse_single(plan, &p, &d); /* island keys: bad input */
        if (st == MP_OK)
            st = mp_plan_resolve(&p, &m, r->c.num_gpus, &d);
        if (st != MP_OK) {
            fprintf(stderr, "meshplan: the plan cannot be formed:\n");
            cli_print_diag(&d);
            rc = cli_exit_for(st);
            goto done;
        }
        r->e = malloc(sizeof *r->e);
        if (!r->e) {
            rc = EXIT_INTERNAL;
            goto done;
        }
        mp_estimate_opts eo;
        st = mp_estimate_plan(&m, &r->c, &p, cli_cal_opts(r->c.gpu.key, &eo), r->e, &d);
        if (st != MP_OK) {
            fprintf(stderr, "meshplan: cluster = \"%s\":\n", specs[i]);
            cli_print_diag(&d);
            failed = cli_exit_for(st);
            continue;
        }
        r->ok = 1;
        bound(r);
    }

    if (json) {
        json_t *rows = json_array();
        for (int i = 0; i < nres; i++) {
            const result *r = &res[i];
            if (!r->ok) {
                json_array_append_new(rows, json_pack("{s:s,s:s}", "cluster", r->spec, "error",
                                                      "cannot be predicted (see stderr)"));
                continue;
            }
            json_array_append_new(rows, row_json(r));
        }
        json_t *o = json_pack("{s:s,s:s,s:I,s:o}", "model", m.key, "plan", plan ? plan : "",
                              "gpus", (json_int_t)ngpus, "rows", rows);
        if ((rc = cli_print_json(o, JSON_INDENT(1) | JSON_REAL_PRECISION(10))))
            goto done;
    } else if (csv) {
        print_csv(res, nres);
    } else {
        print_text(&m, ngpus, plan, res, nres);
    }
    rc = failed;
done:
    for (int i = 0; i < nres; i++)
        free(res[i].e);
    mp_catalog_destroy(cat);
    return rc;
}
