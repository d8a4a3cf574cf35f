/* src/cli/cmd_infer.c — `meshplan infer`: serving a model on GPUs (a fixed batch of sequences):
 * TTFT, TPOT, throughput, memory, KV concurrency, power and energy per token; `--batch A:B`
 * sweeps the batch (the throughput-latency curve). The model: src/infer/, docs/infer.md. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "infer/infer_keys.h"

static const cli_option infer_opts[] = {
    CLI_REQ("--model", "M", "the model: " CLI_MODEL_HELP),
    CLI_REQ("--gpu", "G", "the GPU, a catalog key (meshplan catalog gpus)"),
    CLI_OPT("--gpus", "N", "GPUs in the job (default tp x pp x dp of the plan)"),
    CLI_OPT_GPUS_PER_NODE,
    CLI_OPT_SCALE_OUT,
    CLI_OPT_CATALOG,
    CLI_OPT("--plan", "PLAN", "the inference plan, \"tp=4,weights=fp8,kv=fp8,batch=64,in=2048,out=256\" (keys below)"),
    CLI_OPT("--batch", "A:B", "sweep the batch from A to B (doubling): one row per batch"),
    CLI_OPT_JSON,
    CLI_OPT_CSV,
    CLI_END,
};

static int infer_run(int argc, char **argv);

/* The inference plan keys, from the library's table (src/infer/infer_keys.h). */
void cli_print_infer_keys(FILE *f)
{
    char buf[4096];
    int n = mp_infer_plan_keys_help(buf, sizeof buf);
    fprintf(f, "inference plan keys: --plan \"key=value,...\" (docs/infer.md)\n%s",
            n >= 0 && (size_t)n < sizeof buf ? buf : "");
}

const cli_command cli_cmd_infer = {
    "infer", "serving: TTFT, TPOT, tokens/s, memory, KV concurrency, power and J per token "
    "(--batch A:B sweeps the batch)",
    NULL, 0, infer_opts,
    "A fixed batch of sequences (offline serving); TTFT is the batch's prefill. --gpus more than\n"
    "tp x pp makes dp replicas.\n",
    infer_run,
};

static void phase_text(const char *name, const mp_infer_phase *ph)
{
    printf("  %-8s %9.3f ms  compute %8.3f  memory %8.3f  comm %7.3f  overhead %6.3f ms  bound: %s"
           "  (MFU %.1f%%, MBU %.1f%%, %.0f W)\n", name, ph->total_s * 1e3, ph->compute_s * 1e3,
           ph->memory_s * 1e3, ph->comm_s * 1e3, ph->overhead_s * 1e3, ph->bound, ph->mfu * 100,
           ph->mbu * 100, ph->power_w);
}

static void result_text(const mp_model *m, const mp_cluster *c, const mp_infer_result *r)
{
    char plan[512];
    mp_infer_plan_format(&r->plan, plan, sizeof plan);
    const double G = 1073741824.0;
    printf("%s on %lld x %s, %s %s\n", m->key, (long long)c->num_gpus, c->gpu.key, r->engine.key, r->engine.version);
    printf("plan: %s\n", plan);
    if (!r->feasible)
        printf("feasible: no: %s\n", r->reason);
    printf("TTFT %.3f ms   TPOT (ITL) %.3f ms   end-to-end %.3f s\n", r->ttft_s * 1e3, r->tpot_s * 1e3, r->e2e_s);
    printf("output tokens/s %.1f (per replica %.1f, per GPU %.1f)   requests/s %.3f\n",
           r->output_tokens_per_s, r->output_tokens_per_s_per_replica, r->output_tokens_per_s_per_gpu,
           r->requests_per_s);
    phase_text("prefill", &r->prefill);
    phase_text("decode", &r->decode);
    printf("memory per GPU (GiB): weights %.2f  kv %.2f  activations %.2f  runtime %.2f  total %.2f"
           "  capacity %.2f  (KV pool %.2f)\n", r->weights_bytes / G, r->kv_bytes / G,
           r->activations_bytes / G, r->runtime_bytes / G, r->total_bytes / G, r->capacity_bytes / G,
           r->kv_pool_bytes / G);
    printf("KV bytes per token %.0f (per GPU %.0f)   max concurrency %lld sequences of %lld tokens\n",
           r->kv_bytes_per_token, r->kv_bytes_per_token_gpu, (long long)r->max_concurrency,
           (long long)(r->plan.in + r->plan.out));
    printf("power %.0f W per GPU   energy %.4f J per output token\n", r->power_w, r->energy_j_per_output_token);
    printf("assumed:\n");
    for (int i = 0; i < r->nassumed; i++)
        printf("  - %s\n", r->assumed[i]);
}

#define CSV_HEADER "batch,feasible,ttft_s,tpot_s,e2e_s,output_tokens_per_s,output_tokens_per_s_per_gpu," \
                   "requests_per_s,kv_bytes_per_gpu,max_concurrency,power_w,energy_j_per_output_token," \
                   "prefill_bound,decode_bound\n"

static void result_csv(const mp_infer_result *r)
{
    printf("%lld,%d,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%lld,%.6g,%.9g,%s,%s\n", (long long)r->plan.batch,
           r->feasible, r->ttft_s, r->tpot_s, r->e2e_s, r->output_tokens_per_s,
           r->output_tokens_per_s_per_gpu, r->requests_per_s, r->kv_bytes, (long long)r->max_concurrency,
           r->power_w, r->energy_j_per_output_token, r->prefill.bound, r->decode.bound);
}

/* Whether --plan gave key (mp_infer_plan.given keeps one bit per key, in the table's order). */
static int plan_gave(const mp_infer_plan *p, const char *key)
{
#define KEY_NAME(name, ...) #name,
    static const char *const names[] = {MP_INFER_KEYS(KEY_NAME)};
#undef KEY_NAME
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(names[i], key))
            return (p->given >> i) & 1u;
    return 0;
}

/* --batch A:B (or one number) into lo, hi. */
static int parse_batch_range(const char *s, long long *lo, long long *hi)
{
    char a[32];
    const char *colon = strchr(s, ':');
    if (!colon) {
        int rc = cli_parse_count("batch", s, 1, 1 << 20, lo);
        if (!rc)
            *hi = *lo;
        return rc;
    }
    size_t n = (size_t)(colon - s);
    if (n == 0 || n >= sizeof a || strchr(colon + 1, ':'))
        return cli_fail("batch = \"%s\": expected A:B, 1 <= A <= B <= 1048576", s);
    memcpy(a, s, n);
    a[n] = '\0';
    int rc = cli_parse_count("batch", a, 1, 1 << 20, lo);
    if (!rc)
        rc = cli_parse_count("batch", colon + 1, 1, 1 << 20, hi);
    if (!rc && *hi < *lo)
        rc = cli_fail("batch = \"%s\": expected A:B with A <= B", s);
    return rc;
}

static int infer_run(int argc, char **argv)
{
    cli_args a;
    int rc = cli_parse_cmd(&cli_cmd_infer, argc, argv, &a);
    if (rc)
        return rc;
    const int json = cli_flag(&a, "--json"), csv = cli_flag(&a, "--csv");
    if (json && csv)
        return cli_fail("infer: --json and --csv: expected at most one%s", "");
    mp_diag d = {0};
    mp_infer_plan p;
    mp_infer_plan_init(&p);
    if (mp_infer_plan_parse(cli_opt(&a, "--plan"), &p, &d) != MP_OK) {
        fprintf(stderr, "meshplan: infer: bad --plan:\n");
        cli_print_diag(&d);
        return EXIT_INPUT;
    }
    long long lo = p.batch, hi = p.batch, ngpus = (long long)p.tp * p.pp * (p.dp > 0 ? p.dp : 1), gpn = 0;
    const char *b = cli_opt(&a, "--batch");
    if (b && (rc = parse_batch_range(b, &lo, &hi)))
        return rc;
    if (b && plan_gave(&p, "batch")) { /* the sweep took the place of the plan's batch silently */
        fprintf(stderr, "meshplan: infer: --batch \"%s\" and --plan batch=%lld: expected the batch once (--batch "
                        "sweeps it; leave batch out of --plan)\n", b, (long long)p.batch);
        return EXIT_INPUT;
    }
    if (cli_opt(&a, "--gpus") && (rc = cli_parse_count("gpus", cli_opt(&a, "--gpus"), 1, 1LL << 24, &ngpus)))
        return rc;
    if (cli_opt(&a, "--gpus-per-node") &&
        (rc = cli_parse_count("gpus-per-node", cli_opt(&a, "--gpus-per-node"), 1, 1 << 20, &gpn)))
        return rc;
    mp_catalog *cat = NULL;
    if ((rc = cli_load_catalog(&a, &cat)))
        return rc;
    mp_model m;
    mp_cluster cl;
    if ((rc = cli_load_model(cat, cli_opt(&a, "--model"), &m))) {
        mp_catalog_destroy(cat);
        return rc;
    }
    mp_status st = mp_cluster_from_catalog(cat, cli_opt(&a, "--gpu"), ngpus, (int)gpn,
                                           cli_opt(&a, "--scale-out"), &cl, &d);
    mp_catalog_destroy(cat);
    if (st != MP_OK) {
        cli_print_diag(&d);
        return cli_exit_for(st);
    }
    /* one row per batch of the sweep: lo, 2lo, ... hi, at most 22 (batch <= 2^20) */
    mp_infer_result *rows = calloc(22, sizeof *rows);
    size_t nrows = 0;
    if (!rows)
        return EXIT_INTERNAL;
    if (csv)
        fputs(CSV_HEADER, stdout);
    for (long long batch = lo; batch <= hi && rc == 0; batch = batch < hi && batch * 2 > hi ? hi : batch * 2) {
        p.batch = batch;
        mp_infer_result *r = &rows[nrows];
        st = mp_infer_estimate(&m, &cl, &p, r, &d);
        if (st != MP_OK) {
            fprintf(stderr, "meshplan: infer: the plan cannot be formed:\n");
            cli_print_diag(&d);
            rc = cli_exit_for(st);
            break;
        }
        if (json)
            nrows++;
        else if (csv)
            result_csv(r);
        else {
            if (batch != lo)
                printf("\n");
            result_text(&m, &cl, r);
        }
        if (batch == hi)
            break;
    }
    if (json && rc == 0) {
        char *out = mp_report_infer_json(rows, nrows, b != NULL);
        free(rows);
        if (!out) {
            fprintf(stderr, "meshplan: out of memory writing JSON\n");
            return EXIT_INTERNAL;
        }
        printf("%s\n", out);
        free(out);
        return 0;
    }
    free(rows);
    return rc;
}
