/* src/cli/cli_serve.c — what `meshplan serve` and `meshplan serve-search` share: the job (model
 * and cluster), and the serving options (--plan, --rate, --arrivals, --lengths, --requests,
 * --seed, --warmup, --slo, --price-gpu-hour) into mp_serve_opts, with the lengths or trace file
 * read into buffers the caller frees (cli_serve_job_free); and the plan keys their help lists. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The keys of serve's --plan (mp_serve_plan_parse, serve.h): infer's table, then the scheduler's
 * own six, with the ranges and defaults src/serve/parse.c and mp_serve_opts give them. */
void cli_print_serve_keys(FILE *f)
{
    cli_print_infer_keys(f);
    fputs("not in serve's --plan: batch, in, out, longest (the requests give them: --lengths, and\n"
          "max_seqs caps the batches the scheduler forms)\n", f);
    fputs("scheduler keys, also in --plan (docs/serve.md):\n"
          "  max_seqs         1..2^24: sequences in a step per replica (vLLM max_num_seqs); default\n"
          "                   the engine's max_batch\n"
          "  chunk            1..2^24: token budget of a step (max_num_batched_tokens; here the\n"
          "                   scheduler's, in place of infer's chunk above); default the engine's\n"
          "  preempt          recompute|swap: what a preempted request does with its KV blocks;\n"
          "                   default recompute\n"
          "  attn_dp          0|1: attention data-parallel over the replica's ep GPUs (MoE); default 0\n"
          "  imbalance        1..64: busiest GPU's routed tokens / mean (MoE); default the\n"
          "                   workload's\n"
          "  prefill_first    0|1: vLLM V0's default scheduler (whole prompts in prefill-only\n"
          "                   steps first, decode when none waits); default 0 (V1's mixed steps)\n", f);
}

void cli_serve_job_free(cli_serve_job *j)
{
    free(j->in);
    free(j->out);
    free(j->arrival);
    free(j->trace);
    memset(j, 0, sizeof *j);
}

/* --lengths FILE.csv, or --arrivals trace:FILE.csv (trace 1); a refusal names the option. */
static int load_csv(const char *path, cli_serve_job *j, int trace)
{
    mp_diag d = {0};
    char *buf = NULL;
    size_t len = 0;
    mp_status st = cli_read_file(path, &buf, &len, &d);
    if (st == MP_OK)
        st = mp_serve_csv_parse(buf, len, path, &j->in, &j->out, trace ? &j->arrival : NULL, &j->n, &d);
    free(buf);
    if (st != MP_OK) {
        fprintf(stderr, "meshplan: %s = \"%s%s\": expected a readable CSV file of %s:\n",
                trace ? "arrivals" : "lengths", trace ? "trace:" : "", path,
                trace ? "input_len, output_len, arrival_s" : "input_len, output_len");
        cli_print_diag(&d);
        return cli_exit_for(st);
    }
    if (trace) {
        j->trace = malloc(j->n * sizeof *j->trace);
        if (!j->trace)
            return EXIT_INTERNAL;
        for (size_t i = 0; i < j->n; i++)
            j->trace[i] = (mp_serve_request){j->arrival[i], j->in[i], j->out[i]};
        j->o.arrivals = MP_ARRIVE_TRACE;
        j->o.trace = j->trace;
        j->o.ntrace = j->n;
    } else {
        j->o.lengths = MP_LEN_TABLE;
        j->o.table_in = j->in;
        j->o.table_out = j->out;
        j->o.ntable = j->n;
    }
    return 0;
}

/* --lengths sharegpt | fixed:IN:OUT | FILE.csv */
static int lengths(const char *s, cli_serve_job *j)
{
    long long a, b;
    char extra;
    if (!strcmp(s, "sharegpt")) {
        j->o.lengths = MP_LEN_SHAREGPT;
        return 0;
    }
    if (!strncmp(s, "fixed:", 6)) {
        if (sscanf(s + 6, "%lld:%lld%c", &a, &b, &extra) != 2 || a < 1 || b < 1 || a > (1 << 24) || b > (1 << 24))
            return cli_fail("lengths = \"%s\": expected fixed:IN:OUT with token counts in [1, 2^24]", s);
        j->o.lengths = MP_LEN_FIXED;
        j->o.in = a;
        j->o.out = b;
        return 0;
    }
    return load_csv(s, j, 0);
}

/* --arrivals poisson | gamma:CV | batch | trace:FILE */
static int arrivals(const char *s, cli_serve_job *j)
{
    if (!strcmp(s, "poisson"))
        j->o.arrivals = MP_ARRIVE_POISSON;
    else if (!strcmp(s, "batch"))
        j->o.arrivals = MP_ARRIVE_BATCH;
    else if (!strncmp(s, "gamma:", 6)) {
        j->o.arrivals = MP_ARRIVE_GAMMA;
        return cli_parse_real("arrivals gamma CV", s + 6, 1e-3, 100, &j->o.burst_cv);
    } else if (!strncmp(s, "trace:", 6))
        return load_csv(s + 6, j, 1);
    else
        return cli_fail("arrivals = \"%s\": expected poisson, gamma:CV, batch or trace:FILE.csv", s);
    return 0;
}

int cli_serve_job_load(const cli_args *a, cli_serve_job *j)
{
    memset(j, 0, sizeof *j);
    mp_serve_opts_init(&j->o);
    mp_diag d = {0};
    int rc;
    if (mp_serve_plan_parse(cli_opt(a, "--plan"), &j->o, &d) != MP_OK) {
        fprintf(stderr, "meshplan: bad --plan:\n");
        cli_print_diag(&d);
        return EXIT_INPUT;
    }
    const char *v;
    if ((v = cli_opt(a, "--rate")) && mp_serve_rate_parse(v, &j->o.rate_per_s, &d) != MP_OK)
        return cli_print_diag(&d), EXIT_INPUT;
    if ((v = cli_opt(a, "--slo")) && mp_serve_slo_parse(v, &j->o, &d) != MP_OK)
        return cli_print_diag(&d), EXIT_INPUT;
    if ((v = cli_opt(a, "--lengths")) && (rc = lengths(v, j)))
        return rc;
    if ((v = cli_opt(a, "--arrivals")) && (rc = arrivals(v, j)))
        return rc;
    long long x;
    if ((v = cli_opt(a, "--requests"))) {
        if ((rc = cli_parse_count("requests", v, 1, 10000000, &x)))
            return rc;
        j->o.requests = x;
    }
    if ((v = cli_opt(a, "--seed"))) {
        if ((rc = cli_parse_count("seed", v, 0, 1LL << 62, &x)))
            return rc;
        j->o.seed = (uint64_t)x;
    }
    if ((rc = cli_opt_real(a, "--warmup", 0, 0.9, &j->o.warmup_frac)) ||
        (rc = cli_opt_real(a, "--price-gpu-hour", 0, 1e4, &j->o.price_gpu_hour_usd)))
        return rc;
    if (!cli_opt(a, "--rate") && (j->o.arrivals == MP_ARRIVE_POISSON || j->o.arrivals == MP_ARRIVE_GAMMA))
        return cli_fail("serve: --rate is required with %s arrivals (or --arrivals batch or trace:FILE)",
                        j->o.arrivals == MP_ARRIVE_POISSON ? "Poisson" : "gamma");
    /* the job */
    long long ngpus = 0, gpn = 0;
    if ((v = cli_opt(a, "--gpus")) && (rc = cli_parse_count("gpus", v, 1, 1LL << 24, &ngpus)))
        return rc;
    if ((v = cli_opt(a, "--gpus-per-node")) && (rc = cli_parse_count("gpus-per-node", v, 1, 1 << 20, &gpn)))
        return rc;
    const char *cluster = cli_opt(a, "--cluster"), *gpu = cli_opt(a, "--gpu");
    if (!cluster && !gpu)
        return cli_fail("serve: --cluster NODE|FILE or --gpu G is required%s", "");
    if (!cluster && !ngpus)
        ngpus = (long long)j->o.plan.tp * j->o.plan.pp * (j->o.plan.dp > 0 ? j->o.plan.dp : 1);
    mp_catalog *cat = NULL;
    if ((rc = cli_load_catalog(a, &cat)))
        return rc;
    rc = cli_load_model(cat, cli_opt(a, "--model"), &j->model);
    if (!rc && cluster)
        rc = cli_load_cluster(cat, cluster, ngpus, gpu, &j->cluster);
    else if (!rc) {
        mp_status st = mp_cluster_from_catalog(cat, gpu, ngpus, (int)gpn, cli_opt(a, "--scale-out"), &j->cluster, &d);
        if (st != MP_OK) {
            cli_print_diag(&d);
            rc = cli_exit_for(st);
        }
    }
    mp_catalog_destroy(cat);
    return rc;
}
