/* src/cli/cmd_serve_search.c — `meshplan serve-search`: colocated replicas of each TP degree,
 * batch caps and chunk sizes, and disaggregated prefill/decode splits, each simulated at the
 * request rate; the best meets the SLO at the most goodput (src/serve/search.c). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

static const cli_option serve_search_opts[] = {
    CLI_OPTS_SERVE_JOB,
    CLI_OPT_JSON,
    CLI_END,
};

static int serve_search_run(int argc, char **argv);

const cli_command cli_cmd_serve_search = {
    "serve-search", "serving plans at a request rate: colocated vs disaggregated, TP, replicas, batch cap, "
    "chunk; the best within the SLO",
    NULL, 0, serve_search_opts,
    "Each candidate is a full `serve` simulation of the same requests (docs/serve.md).\n",
    serve_search_run,
};

static void cand_name(const mp_serve_candidate *x, char *buf, size_t n)
{
    if (x->disaggregate)
        snprintf(buf, n, "prefill=tp%dx%d,decode=tp%dx%d", x->prefill_tp, x->prefill_dp, x->decode_tp, x->decode_dp);
    else
        snprintf(buf, n, "tp=%d,dp=%d,max_seqs=%lld,chunk=%lld", x->tp, x->dp, (long long)x->max_seqs,
                 (long long)x->chunk_tokens);
}

static int json_out(const mp_serve_search_result *s)
{
    json_t *arr = json_array();
    for (int i = 0; arr && i < s->n; i++) {
        const mp_serve_candidate *x = &s->c[i];
        char name[128];
        cand_name(x, name, sizeof name);
        json_array_append_new(arr, json_pack("{s:s,s:s,s:b,s:b,s:f,s:f,s:f,s:f,s:f}", "candidate", name, "mode",
                                             x->disaggregate ? "disaggregated" : "colocated", "feasible", x->feasible,
                                             "meets_slo", x->meets_slo, "goodput_requests_per_s",
                                             x->goodput_requests_per_s, "ttft_p99_s", x->ttft_p99_s, "tpot_p99_s",
                                             x->tpot_p99_s, "output_tokens_per_s", x->output_tokens_per_s,
                                             "usd_per_mtoken", x->usd_per_mtoken));
    }
    json_t *o = json_pack("{s:o,s:i}", "candidates", arr, "best", s->best);
    if (o && s->best >= 0) {
        char name[128];
        cand_name(&s->c[s->best], name, sizeof name);
        json_object_set_new(o, "best_candidate", json_string(name));
    }
    return cli_print_json(o, 0);
}

static int serve_search_run(int argc, char **argv)
{
    cli_args a;
    int rc = cli_parse_cmd(&cli_cmd_serve_search, argc, argv, &a);
    if (rc)
        return rc;
    cli_serve_job j;
    if ((rc = cli_serve_job_load(&a, &j))) {
        cli_serve_job_free(&j);
        return rc;
    }
    /* the search sets tp, the replicas and pp = 1 itself: --plan's were dropped silently (without
     * --gpus, tp x pp x dp still sizes the cluster, as --help says) */
    if (j.o.plan.pp != 1 || (cli_opt(&a, "--gpus") && (j.o.plan.tp != 1 || j.o.plan.dp > 0))) {
        const char *k = j.o.plan.pp != 1 ? "pp" : j.o.plan.tp != 1 ? "tp" : "dp";
        int v = j.o.plan.pp != 1 ? j.o.plan.pp : j.o.plan.tp != 1 ? j.o.plan.tp : j.o.plan.dp;
        fprintf(stderr, "meshplan: serve-search: plan.%s = %d: expected it left out of --plan (the search tries "
                        "every tp and replica count over the GPUs, at pp = 1)\n", k, v);
        cli_serve_job_free(&j);
        return EXIT_INPUT;
    }
    mp_serve_search_result *s = malloc(sizeof *s);
    mp_diag d = {0};
    mp_status st = s ? mp_serve_search(&j.model, &j.cluster, &j.o, s, &d) : MP_ERR_NOMEM;
    if (st != MP_OK) {
        cli_print_diag(&d);
        rc = cli_exit_for(st);
    } else if (cli_flag(&a, "--json")) {
        rc = json_out(s);
    } else {
        printf("%s on %lld x %s at %.3g requests/s; SLO TTFT p99 %.0f ms, TPOT p99 %.1f ms (0 = none)\n",
               j.model.key, (long long)j.cluster.num_gpus, j.cluster.gpu.key, j.o.rate_per_s, j.o.slo_ttft_s * 1e3,
               j.o.slo_tpot_s * 1e3);
        printf("  %-44s %9s %11s %11s %12s %9s\n", "candidate", "meets", "goodput/s", "TTFT p99", "TPOT p99", "$/Mtok");
        for (int i = 0; i < s->n; i++) {
            const mp_serve_candidate *x = &s->c[i];
            char name[128];
            cand_name(x, name, sizeof name);
            if (!x->feasible) {
                printf("%s %-44s %9s\n", i == s->best ? "*" : " ", name, "no fit");
                continue;
            }
            printf("%s %-44s %9s %11.3f %8.1f ms %9.2f ms %9.3f\n", i == s->best ? "*" : " ", name,
                   x->meets_slo ? "yes" : "no", x->goodput_requests_per_s, x->ttft_p99_s * 1e3, x->tpot_p99_s * 1e3,
                   x->usd_per_mtoken);
        }
        if (s->best >= 0) {
            char name[128];
            cand_name(&s->c[s->best], name, sizeof name);
            printf("best: %s (%s)\n", name, s->c[s->best].disaggregate ? "disaggregated" : "colocated");
        } else {
            printf("best: none meets the SLO at this rate\n");
        }
    }
    free(s);
    cli_serve_job_free(&j);
    return rc;
}
