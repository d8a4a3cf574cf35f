/* src/cli/cmd_serve.c — `meshplan serve`: serving at load, a request-level simulation (arrivals,
 * continuous batching, chunked prefill, paged KV with preemption) on replicas or on separate
 * prefill and decode pools; TTFT / TPOT percentiles, throughput, goodput, KV use, energy and
 * cost; --trace writes the request timeline. The model: src/serve/, docs/serve.md. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const cli_option serve_opts[] = {
    CLI_OPTS_SERVE_JOB,
    CLI_OPT("--disaggregate", "POOLS", "separate pools, \"prefill=tp4x2,decode=tp8x1\" (tp x replicas)"),
    CLI_OPT("--trace", "FILE", "write the request timeline as a Chrome/Perfetto trace JSON"),
    CLI_FLAG("--frontier", "also the SLO-throughput frontier: the highest rate meeting --slo x 0.25 .. 4"),
    CLI_OPTS_LORA,
    CLI_OPT_JSON,
    CLI_END,
};

static int serve_run(int argc, char **argv);

const cli_command cli_cmd_serve = {
    "serve", "serving at load: TTFT/TPOT percentiles, goodput under an SLO, KV use, preemptions, "
    "disaggregated prefill/decode, expert-parallel MoE",
    NULL, 0, serve_opts,
    "Simulates requests arriving at --rate on the plan's dp replicas (or the --disaggregate pools)\n"
    "with a vLLM-like scheduler; every step priced by the inference model (docs/serve.md).\n",
    serve_run,
};

static void dist_line(const char *name, const mp_serve_dist *d, double k, const char *unit)
{
    printf("  %-6s mean %9.2f  p50 %9.2f  p90 %9.2f  p99 %9.2f  max %9.2f %s\n", name, d->mean * k,
           d->p50 * k, d->p90 * k, d->p99 * k, d->max * k, unit);
}

static void text(const cli_serve_job *j, const mp_serve_result *r)
{
    char plan[512];
    mp_serve_plan_format(&r->opts, plan, sizeof plan);
    printf("%s on %lld x %s, %s %s\n", j->model.key, (long long)r->gpus, j->cluster.gpu.key, r->engine.key,
           r->engine.version);
    if (r->opts.disaggregate)
        printf("pools: prefill tp%d x %d, decode tp%d x %d\n", r->opts.prefill_tp, r->opts.prefill_dp,
               r->opts.decode_tp, r->opts.decode_dp);
    else
        printf("plan: %s\n", plan);
    if (!r->feasible) {
        printf("feasible: no: %s\n", r->reason);
        return;
    }
    printf("requests %lld (measured %lld after warm-up) over %.1f s\n", (long long)r->requests,
           (long long)r->measured, r->span_s);
    dist_line("TTFT", &r->ttft_s, 1e3, "ms");
    dist_line("TPOT", &r->tpot_s, 1e3, "ms");
    dist_line("E2E", &r->e2e_s, 1, "s");
    dist_line("queue", &r->queue_s, 1e3, "ms");
    printf("throughput %.1f output tokens/s, %.3f requests/s; goodput %.3f requests/s (%.1f%% within the SLO)\n",
           r->output_tokens_per_s, r->requests_per_s, r->goodput_requests_per_s, r->slo_attained_frac * 100);
    printf("KV use mean %.1f%% max %.1f%% (%lld blocks per replica); preemptions %lld (swaps %lld)\n",
           r->kv_use_mean * 100, r->kv_use_max * 100, (long long)r->kv_blocks, (long long)r->preemptions,
           (long long)r->swaps);
    printf("power %.0f W per GPU; %.0f J and $%.3f per million output tokens\n", r->power_w,
           r->energy_j_per_mtoken, r->usd_per_mtoken);
    printf("closed form (infer, batch 1): TTFT %.2f ms, TPOT %.2f ms\n", r->infer_ttft_s * 1e3, r->infer_tpot_s * 1e3);
    if (r->opts.attn_dp)
        printf("expert parallel: ep %d, attention DP; all-to-all %.3f ms per decode step at the batch cap\n",
               r->opts.plan.ep, r->a2a_s_per_step * 1e3);
    if (r->opts.disaggregate)
        printf("KV transfer: %.1f MiB per request over %s (%s), %.2f ms alone, %.2f ms incast wait, %.2f ms "
               "exposed (%s); decode ingress load %.1f%%\ncolocated on the same GPUs: goodput %.3f requests/s "
               "(TTFT p99 %.1f ms, TPOT p99 %.2f ms); disaggregation: %s\n", r->kv_transfer.bytes_per_request / 1048576.0, r->kv_transfer.tier,
               r->kv_transfer.link, r->kv_transfer.s_per_request * 1e3, r->kv_transfer.wait_s_mean * 1e3,
               r->kv_transfer.exposed_s_mean * 1e3, r->kv_transfer.hidden ? "hidden" : "not hidden",
               r->kv_transfer.fabric_load_frac * 100, r->kv_transfer.colocated_goodput,
               r->kv_transfer.colocated_ttft_p99_s * 1e3, r->kv_transfer.colocated_tpot_p99_s * 1e3, r->kv_transfer.verdict);
    int shown = r->nreplicas < 16 ? r->nreplicas : 16;
    for (int i = 0; i < shown; i++) {
        const mp_serve_replica *x = &r->replica[i];
        printf("  replica %2d %-9s requests %6lld  busy %5.1f%%  KV mean %5.1f%% max %5.1f%%  preempt %lld  TTFT p99 %.1f ms\n",
               i, x->pool == 1 ? "prefill" : x->pool == 2 ? "decode" : "", (long long)x->requests,
               x->busy_frac * 100, x->kv_use_mean * 100, x->kv_use_max * 100, (long long)x->preemptions,
               x->ttft_p99_s * 1e3);
    }
    if (shown < r->nreplicas)
        printf("  ... %d more replicas (--json lists all)\n", r->nreplicas - shown);
    printf("assumed:\n");
    for (int i = 0; i < r->nassumed; i++)
        printf("  - %s\n", r->assumed[i]);
}

/* The request timeline into f, opened on path before the simulation (so a path that cannot be
 * written is refused before anything runs or prints); closes f. */
static int write_trace(FILE *f, const char *path, const mp_serve_result *r)
{
    char *t = mp_report_serve_trace(r);
    int ok = t && fputs(t, f) >= 0;
    if (fclose(f) != 0)
        ok = 0;
    if (!t) {
        remove(path);
        fprintf(stderr, "meshplan: serve: no timeline to write (out of memory)\n");
        return EXIT_INTERNAL;
    }
    free(t);
    if (!ok) {
        fprintf(stderr, "meshplan: serve: cannot write the trace to \"%s\"\n", path);
        return EXIT_INPUT;
    }
    return 0;
}

/* --frontier: the points, as text or added to the JSON object */
static int frontier(const cli_serve_job *j, int json, char **js)
{
    mp_serve_frontier_point pts[5];
    mp_diag d = {0};
    mp_status st = mp_serve_frontier(&j->model, &j->cluster, &j->o, pts, 5, &d);
    if (st != MP_OK) {
        cli_print_diag(&d);
        return cli_exit_for(st);
    }
    if (!json) {
        printf("SLO-throughput frontier (highest rate with p99 TTFT and TPOT within the SLO x scale):\n");
        printf("  %6s %12s %12s %12s %14s %11s %11s %9s\n", "scale", "TTFT SLO", "TPOT SLO", "rate/s",
               "output tok/s", "TTFT p99", "TPOT p99", "$/Mtok");
        for (int i = 0; i < 5; i++)
            printf("  %6.2f %9.1f ms %9.2f ms %12.3f %14.1f %8.1f ms %8.2f ms %9.3f\n", pts[i].slo_scale,
                   pts[i].slo_ttft_s * 1e3, pts[i].slo_tpot_s * 1e3, pts[i].rate_per_s, pts[i].output_tokens_per_s,
                   pts[i].ttft_p99_s * 1e3, pts[i].tpot_p99_s * 1e3, pts[i].usd_per_mtoken);
        return 0;
    }
    json_t *o = json_loads(*js, 0, NULL), *a = json_array();
    for (int i = 0; o && a && i < 5; i++)
        json_array_append_new(a, json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "slo_scale", pts[i].slo_scale,
                                           "slo_ttft_s", pts[i].slo_ttft_s, "slo_tpot_s", pts[i].slo_tpot_s,
                                           "rate_per_s", pts[i].rate_per_s, "output_tokens_per_s",
                                           pts[i].output_tokens_per_s, "ttft_p99_s", pts[i].ttft_p99_s,
                                           "tpot_p99_s", pts[i].tpot_p99_s, "usd_per_mtoken", pts[i].usd_per_mtoken));
    if (!o || !a) {
        json_decref(o);
        json_decref(a);
        return EXIT_INTERNAL;
    }
    json_object_set_new(o, "frontier", a);
    free(*js);
    *js = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    json_decref(o);
    return *js ? 0 : EXIT_INTERNAL;
}

static int serve_run(int argc, char **argv)
{
    cli_args a;
    int rc = cli_parse_cmd(&cli_cmd_serve, argc, argv, &a);
    if (rc)
        return rc;
    cli_serve_job j;
    mp_diag d = {0};
    if ((rc = cli_serve_job_load(&a, &j))) {
        cli_serve_job_free(&j);
        return rc;
    }
    const char *dis = cli_opt(&a, "--disaggregate"), *trace = cli_opt(&a, "--trace");
    if (dis && mp_serve_disagg_parse(dis, &j.o, &d) != MP_OK) {
        cli_print_diag(&d);
        cli_serve_job_free(&j);
        return EXIT_INPUT;
    }
    if (dis && (j.o.plan.tp != 1 || j.o.plan.dp > 0)) { /* the pools give them: --plan's were dropped silently */
        fprintf(stderr, "meshplan: serve: plan.%s = %d with --disaggregate \"%s\": expected the pools' tp and "
                        "replicas from --disaggregate alone (leave tp and dp out of --plan)\n",
                j.o.plan.tp != 1 ? "tp" : "dp", j.o.plan.tp != 1 ? j.o.plan.tp : j.o.plan.dp, dis);
        cli_serve_job_free(&j);
        return EXIT_INPUT;
    }
    if (cli_flag(&a, "--frontier") && !(j.o.slo_ttft_s > 0) && !(j.o.slo_tpot_s > 0)) {
        cli_serve_job_free(&j);
        return cli_fail("serve: --frontier needs --slo (the frontier is the highest rate meeting it)%s", "");
    }
    FILE *tf = trace ? fopen(trace, "w") : NULL;
    if (trace && !tf) {
        fprintf(stderr, "meshplan: serve: trace = \"%s\": %s: expected a file path it can write\n", trace,
                strerror(errno));
        cli_serve_job_free(&j);
        return EXIT_INPUT;
    }
    j.o.keep_timeline = trace != NULL;
    cli_lora_serve *lora = NULL;
    mp_serve_result *r = NULL;
    if ((rc = cli_lora_serve_setup(&a, &j, &lora)) || !(r = malloc(sizeof *r))) {
        if (tf) {
            fclose(tf);
            remove(trace);
        }
        cli_lora_serve_free(lora);
        cli_serve_job_free(&j);
        return rc ? rc : EXIT_INTERNAL;
    }
    mp_status st = mp_serve_run(&j.model, &j.cluster, &j.o, r, &d);
    if (st != MP_OK) {
        fprintf(stderr, "meshplan: serve: %s:\n", st == MP_ERR_INPUT ? "the job cannot be formed" : "failed");
        cli_print_diag(&d);
        rc = cli_exit_for(st);
    } else {
        const int fr = cli_flag(&a, "--frontier") && r->feasible;
        if (cli_flag(&a, "--json")) {
            char *s = mp_report_serve_json(r);
            if (!s)
                rc = EXIT_INTERNAL;
            if (!rc && lora && r->feasible)
                rc = cli_lora_serve_report(lora, r, &s);
            if (!rc && fr)
                rc = frontier(&j, 1, &s);
            if (!rc)
                printf("%s\n", s);
            free(s);
        } else {
            text(&j, r);
            if (lora && r->feasible)
                cli_lora_serve_report(lora, r, NULL);
            if (fr)
                rc = frontier(&j, 0, NULL);
        }
    }
    if (tf && st == MP_OK && !rc && r->feasible) {
        rc = write_trace(tf, trace, r);
    } else if (tf) { /* nothing to write: no empty or partial file is left */
        fclose(tf);
        remove(trace);
    }
    mp_serve_result_free(r);
    free(r);
    cli_lora_serve_free(lora);
    cli_serve_job_free(&j);
    return rc;
}
