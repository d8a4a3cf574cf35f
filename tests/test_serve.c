/* tests/test_serve.c — serving at load (include/meshplan/serve.h, src/serve/):
 *   - limits against the closed form of `infer` (within 2%): one request at a time (arrivals far
 *     apart) has infer's batch-1 TTFT and TPOT, for tp 1, tp 8 and pp 2; saturation (every request
 *     at t = 0, batch cap B) has infer's fixed-batch throughput at batch B;
 *   - determinism: the same seed gives the same JSON byte for byte; another seed differs;
 *   - properties: a higher request rate never lowers p99 TTFT, another replica never raises it, by
 *     more than one engine step (the phase of an arrival within the running step is not monotone);
 *   - KV pressure: preemptions happen under recompute and under swap, every request completes;
 *   - disaggregation: KV bytes per request = prompt x the model's KV bytes per token exactly; the
 *     link is the scale-up tier inside a node and the scale-out one across nodes;
 *   - expert-parallel MoE (attention DP): runs, prices an all-to-all, refuses tp > 1;
 *   - the step hook (issue 22's extension point) adds its time to every step;
 *   - prefill_first (vLLM V0's default scheduler): a prefill-only step while prompts wait, by hand
 *     against V1's mixed step, at a sequence cap and a token budget;
 *   - the clock: arrival schedules over 1e9 s (the int64-ns event clock wraps at 9.2e9 s) are
 *     refused naming the rate or the trace; one just inside runs with positive TTFTs;
 *   - parsing: rates, SLOs, pools and plan keys refused with the field named;
 *   - speed: 10,000 requests on 16 replicas simulate in under 2 s of CPU time;
 *   - validate: server rows of ../shared/validation/inference/infer_runs.csv predicted (figures
 *     printed), and a 50-row inference CSV with server rows validates in under 60 s of CPU time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "test_util.h"

#include "meshplan/meshplan.h"
#include "meshplan/serve.h"

static mp_serve_result *g_r, *g_r2;

static void cluster(const char *gpu, int n, mp_cluster *c)
{
    mp_diag d = {0};
    if (mp_cluster_from_catalog(g_cat, gpu, n, 0, NULL, c, &d) != MP_OK)
        fail_msg("cluster %s x %d: %s", gpu, n, d.text);
}

static void run(const mp_model *m, const mp_cluster *c, const mp_serve_opts *o, mp_serve_result *r)
{
    mp_diag d = {0};
    if (mp_serve_run(m, c, o, r, &d) != MP_OK)
        fail_msg("serve: %s", d.text);
    if (!r->feasible)
        fail_msg("serve: infeasible: %s", r->reason);
}

static void infer(const mp_model *m, const mp_cluster *c, const char *plan, mp_infer_result *r)
{
    mp_diag d = {0};
    mp_infer_plan p;
    mp_infer_plan_init(&p);
    if (mp_infer_plan_parse(plan, &p, &d) != MP_OK || mp_infer_estimate(m, c, &p, r, &d) != MP_OK)
        fail_msg("infer %s: %s", plan, d.text);
}

static void opts(mp_serve_opts *o, const char *plan)
{
    mp_diag d = {0};
    mp_serve_opts_init(o);
    if (mp_serve_plan_parse(plan, o, &d) != MP_OK)
        fail_msg("plan %s: %s", plan, d.text);
}

/* opts() for a run of the given trace, every request measured (no warm-up share dropped). */
static void trace_opts(mp_serve_opts *o, const char *plan, const mp_serve_request *tr, size_t n)
{
    opts(o, plan);
    o->arrivals = MP_ARRIVE_TRACE;
    o->trace = tr;
    o->ntrace = n;
    o->warmup_frac = 0;
}

/* One request at a time: a trace of requests 1000 s apart. */
static void single(const char *model, const char *gpu, int ngpus, const char *plan, int64_t in, int64_t out)
{
    const mp_model *m = mp_catalog_model(g_cat, model);
    mp_cluster c;
    cluster(gpu, ngpus, &c);
    mp_serve_request tr[8];
    for (int i = 0; i < 8; i++)
        tr[i] = (mp_serve_request){1000.0 * i, in, out};
    mp_serve_opts o;
    trace_opts(&o, plan, tr, 8);
    run(m, &c, &o, g_r);
    char ip[256];
    snprintf(ip, sizeof ip, "%s,batch=1,in=%lld,out=%lld", plan, (long long)in, (long long)out);
    mp_infer_result ir;
    infer(m, &c, ip, &ir);
    printf("single %s %s: TTFT %.3f ms (infer %.3f), TPOT %.4f ms (infer %.4f)\n", model, plan,
           g_r->ttft_s.mean * 1e3, ir.ttft_s * 1e3, g_r->tpot_s.mean * 1e3, ir.tpot_s * 1e3);
    assert_close(g_r->ttft_s.mean, ir.ttft_s, 0.02);
    assert_close(g_r->tpot_s.mean, ir.tpot_s, 0.02);
    assert_close(g_r->ttft_s.p99, g_r->ttft_s.p50, 1e-9); /* no queueing: every request alike */
    mp_serve_result_free(g_r);
}

static void test_limit_single_request(void **state)
{
    (void)state;
    single("llama3-8b", "h100-sxm5-80gb", 1, "tp=1", 1024, 128);
    single("llama3-70b", "h100-sxm5-80gb", 8, "tp=8,weights=fp8", 2048, 256);
    single("llama3-70b", "h100-sxm5-80gb", 8, "tp=4,pp=2", 512, 64);
    single("mixtral-8x7b", "h100-sxm5-80gb", 2, "tp=2,ep=2", 1000, 100);
}

static void test_limit_saturation(void **state)
{
    (void)state;
    static const struct { const char *model, *gpu; int n; const char *plan; int64_t B, in, out; } k[] = {
        {"llama3-8b", "h100-sxm5-80gb", 1, "tp=1", 32, 512, 128},
        {"llama3-70b", "h100-sxm5-80gb", 8, "tp=8,weights=fp8", 64, 1024, 256},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        const mp_model *m = mp_catalog_model(g_cat, k[i].model);
        mp_cluster c;
        cluster(k[i].gpu, k[i].n, &c);
        mp_serve_opts o;
        opts(&o, k[i].plan);
        o.arrivals = MP_ARRIVE_BATCH;
        o.requests = 32 * k[i].B;
        o.max_seqs = k[i].B;
        o.in = k[i].in;
        o.out = k[i].out;
        o.warmup_frac = 0;
        run(m, &c, &o, g_r);
        char ip[256];
        snprintf(ip, sizeof ip, "%s,batch=%lld,in=%lld,out=%lld", k[i].plan, (long long)k[i].B,
                 (long long)k[i].in, (long long)k[i].out);
        mp_infer_result ir;
        infer(m, &c, ip, &ir);
        printf("saturation %s B=%lld: %.1f output tokens/s (infer fixed batch %.1f)\n", k[i].model,
               (long long)k[i].B, g_r->output_tokens_per_s, ir.output_tokens_per_s);
        assert_close(g_r->output_tokens_per_s, ir.output_tokens_per_s, 0.02);
        mp_serve_result_free(g_r);
    }
}

static void test_deterministic(void **state)
{
    (void)state;
    const mp_model *m = mp_catalog_model(g_cat, "llama3-8b");
    mp_cluster c;
    cluster("h100-sxm5-80gb", 4, &c);
    mp_serve_opts o;
    opts(&o, "tp=1");
    o.rate_per_s = 40;
    o.lengths = MP_LEN_SHAREGPT;
    o.requests = 1500;
    run(m, &c, &o, g_r);
    run(m, &c, &o, g_r2);
    char *a = mp_report_serve_json(g_r), *b = mp_report_serve_json(g_r2);
    assert_non_null(a);
    assert_string_equal(a, b);
    free(b);
    o.seed = 2;
    run(m, &c, &o, g_r2);
    b = mp_report_serve_json(g_r2);
    assert_true(strcmp(a, b) != 0);
    free(a);
    free(b);
    o.arrivals = MP_ARRIVE_GAMMA;
    o.burst_cv = 3;
    run(m, &c, &o, g_r2);
    printf("gamma CV 3 vs Poisson at 40/s: TTFT p99 %.1f ms vs %.1f ms\n", g_r2->ttft_s.p99 * 1e3, g_r->ttft_s.p99 * 1e3);
    assert_true(g_r2->ttft_s.p99 > g_r->ttft_s.p99); /* bursts queue */
}

static void test_properties(void **state)
{
    (void)state;
    const mp_model *m = mp_catalog_model(g_cat, "llama3-8b");
    mp_cluster c;
    cluster("h100-sxm5-80gb", 8, &c);
    mp_serve_opts o;
    opts(&o, "tp=1,dp=2");
    o.lengths = MP_LEN_SHAREGPT;
    o.requests = 1200;
    c.num_gpus = 2;
    double last = 0;
    for (double rate = 2; rate <= 128; rate *= 2) { /* to past saturation */
        o.rate_per_s = rate;
        run(m, &c, &o, g_r);
        printf("rate %5.0f/s: TTFT p99 %9.2f ms, throughput %.1f tokens/s\n", rate, g_r->ttft_s.p99 * 1e3,
               g_r->output_tokens_per_s);
        /* up to one engine step: where an arrival falls within the running step (what it waits
         * for before it can be scheduled) is not monotone in the rate */
        assert_true(g_r->ttft_s.p99 >= last - g_r->tpot_s.p50);
        last = g_r->ttft_s.p99;
    }
    for (double rate = 20; rate <= 80; rate *= 2) {
        last = INFINITY;
        o.rate_per_s = rate;
        for (int dp = 1; dp <= 8; dp++) {
            o.plan.dp = dp;
            c.num_gpus = dp;
            run(m, &c, &o, g_r);
            if (!(g_r->ttft_s.p99 <= last))
                printf("rate %.0f: dp %d: TTFT p99 %.3f ms > %.3f ms with dp %d (step %.3f ms)\n", rate, dp,
                       g_r->ttft_s.p99 * 1e3, last * 1e3, dp - 1, g_r->tpot_s.p50 * 1e3);
            assert_true(g_r->ttft_s.p99 <= last + g_r->tpot_s.p50); /* up to one step, as above */
            last = g_r->ttft_s.p99;
        }
        printf("rate %.0f/s on 8 replicas: TTFT p99 %.2f ms\n", rate, last * 1e3);
    }
}

static void test_kv_pressure(void **state)
{
    (void)state;
    const mp_model *m = mp_catalog_model(g_cat, "llama3-70b");
    mp_cluster c;
    cluster("a100-sxm4-80gb", 4, &c);
    for (int mode = 0; mode < 2; mode++) {
        mp_serve_opts o;
        opts(&o, mode ? "tp=4,preempt=swap" : "tp=4,preempt=recompute");
        o.rate_per_s = 3;
        o.in = 2048;
        o.out = 1024;
        o.requests = 300;
        run(m, &c, &o, g_r);
        printf("%s: preemptions %lld, swaps %lld, KV max %.3f, TPOT p99 %.1f ms\n", mode ? "swap" : "recompute",
               (long long)g_r->preemptions, (long long)g_r->swaps, g_r->kv_use_max, g_r->tpot_s.p99 * 1e3);
        assert_true(g_r->preemptions > 0);
        assert_true(mode ? g_r->swaps == g_r->preemptions : g_r->swaps == 0);
        assert_true(g_r->kv_use_max <= 1.0 && g_r->kv_use_max > 0.95);
        assert_int_equal(g_r->measured, 270);
        assert_true(g_r->e2e_s.max > 0 && isfinite(g_r->e2e_s.max)); /* every request completed */
    }
}

static void test_disaggregation(void **state)
{
    (void)state;
    const mp_model *m = mp_catalog_model(g_cat, "llama3-70b");
    mp_cluster c;
    cluster("h100-sxm5-80gb", 16, &c);
    mp_serve_opts o;
    opts(&o, "weights=fp8");
    mp_diag d = {0};
    assert_int_equal(mp_serve_disagg_parse("prefill=tp4x2,decode=tp8x1", &o, &d), MP_OK);
    o.rate_per_s = 8;
    o.in = 2000;
    o.out = 200;
    o.requests = 600;
    run(m, &c, &o, g_r);
    double kvpt = mp_wl_kv_bytes_per_token(m, 2.0);
    assert_close(g_r->kv_transfer.bytes_per_request, 2000 * kvpt, 1e-12);
    assert_string_equal(g_r->kv_transfer.link, c.tier[1].link); /* 8 GPUs of prefill, then decode: another node */
    assert_true(g_r->kv_transfer.s_per_request > 0);
    printf("disaggregated: %.1f MiB over %s in %.3f ms, exposed %.3f ms, goodput %.3f (colocated %.3f): %s\n",
           g_r->kv_transfer.bytes_per_request / 1048576, g_r->kv_transfer.link, g_r->kv_transfer.s_per_request * 1e3,
           g_r->kv_transfer.exposed_s_mean * 1e3, g_r->goodput_requests_per_s, g_r->kv_transfer.colocated_goodput,
           g_r->kv_transfer.pays ? "pays" : "does not pay");
    /* inside one node: prefill tp2 x 2, decode tp4 x 1 on 8 GPUs: the scale-up link */
    cluster("h100-sxm5-80gb", 8, &c);
    assert_int_equal(mp_serve_disagg_parse("prefill=tp2x2,decode=tp4x1", &o, &d), MP_OK);
    run(m, &c, &o, g_r);
    assert_string_equal(g_r->kv_transfer.link, c.tier[0].link);
    assert_true(g_r->kv_transfer.s_per_request < 0.02);
    /* too many GPUs */
    assert_int_equal(mp_serve_disagg_parse("prefill=tp8x2,decode=tp8x1", &o, &d), MP_OK);
    memset(&d, 0, sizeof d);
    assert_int_equal(mp_serve_run(m, &c, &o, g_r, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "disaggregate"));
}

static void test_expert_parallel(void **state)
{
    (void)state;
    const mp_model *m = mp_catalog_model(g_cat, "deepseek-v3");
    mp_cluster c;
    cluster("h200-sxm-141gb", 32, &c);
    mp_serve_opts o;
    opts(&o, "tp=1,ep=32,attn_dp=1,weights=fp8");
    o.rate_per_s = 10;
    o.lengths = MP_LEN_SHAREGPT;
    o.requests = 500;
    run(m, &c, &o, g_r);
    assert_int_equal(g_r->nreplicas, 1);
    assert_true(g_r->a2a_s_per_step > 0);
    printf("deepseek-v3 EP32 attention-DP: TTFT p99 %.1f ms, TPOT p99 %.2f ms, a2a %.2f ms per step at the cap\n",
           g_r->ttft_s.p99 * 1e3, g_r->tpot_s.p99 * 1e3, g_r->a2a_s_per_step * 1e3);
    /* imbalance slows the step */
    double tpot = g_r->tpot_s.mean;
    o.moe_imbalance = 2.0;
    run(m, &c, &o, g_r);
    assert_true(g_r->tpot_s.mean > tpot);
    mp_diag d = {0};
    opts(&o, "tp=2,ep=16,attn_dp=1");
    o.rate_per_s = 1;
    assert_int_equal(mp_serve_run(m, &c, &o, g_r, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "attn_dp"));
}

static double hook_ms(void *ctx, const int64_t *reqs, const int64_t *tokens, size_t n)
{
    (void)reqs;
    (void)tokens;
    (void)n;
    return *(double *)ctx;
}

static void test_step_hook(void **state)
{
    (void)state;
    const mp_model *m = mp_catalog_model(g_cat, "llama3-8b");
    mp_cluster c;
    cluster("h100-sxm5-80gb", 1, &c);
    mp_serve_opts o;
    opts(&o, "tp=1");
    o.rate_per_s = 0.01;
    o.requests = 5;
    o.warmup_frac = 0;
    run(m, &c, &o, g_r);
    double base = g_r->tpot_s.p50, extra = 1e-3;
    o.hook = hook_ms;
    o.hook_ctx = &extra;
    run(m, &c, &o, g_r);
    assert_close(g_r->tpot_s.p50, base + extra, 1e-6);
}

/* The first steps of a run as the step hook sees them: each step's requests and their tokens. */
typedef struct {
    int n;
    int nreq[8];
    int64_t req[8][4], tok[8][4];
} step_log;

static double hook_log(void *ctx, const int64_t *reqs, const int64_t *tokens, size_t n)
{
    step_log *g = ctx;
    if (g->n < 8) {
        g->nreq[g->n] = (int)(n < 4 ? n : 4);
        for (int i = 0; i < g->nreq[g->n]; i++) {
            g->req[g->n][i] = reqs[i];
            g->tok[g->n][i] = tokens[i];
        }
        g->n++;
    }
    return 0.0;
}

/* Steps of a trace: request 0 (64-token prompt, 8 out) at t = 0, requests 1 and 2 (64-token
 * prompts) at 1 us, while request 0's prefill runs (a 64-token step of llama3-8b is ~ms). */
static void three_requests(const char *plan, step_log *g)
{
    const mp_model *m = mp_catalog_model(g_cat, "llama3-8b");
    mp_cluster c;
    cluster("h100-sxm5-80gb", 1, &c);
    mp_serve_request tr[3] = {{0.0, 64, 8}, {1e-6, 64, 8}, {1e-6, 64, 8}};
    mp_serve_opts o;
    trace_opts(&o, plan, tr, 3);
    memset(g, 0, sizeof *g);
    o.hook = hook_log;
    o.hook_ctx = g;
    run(m, &c, &o, g_r);
    assert_true(g->n >= 3);
    /* step 1: request 0's prompt alone (the others had not arrived when it started) */
    assert_int_equal(g->nreq[0], 1);
    assert_true(g->req[0][0] == 0 && g->tok[0][0] == 64);
}

/* vLLM V0's default scheduler (prefill_first=1) against V1's mixed steps, derived by hand from
 * vllm/core/scheduler.py _schedule_default: with requests 1 and 2 waiting and request 0 decoding,
 * V0's next step prefills 1 and 2 whole and request 0 does not run; V1's runs request 0's decode
 * token and both prompts in one step. Then a sequence cap of 2 (request 0 running counts) admits
 * only request 1, and a budget of 100 tokens only one 64-token prompt per step (prompts whole),
 * so V0 runs two prefill-only steps before request 0 decodes again. */
static void test_prefill_first(void **state)
{
    (void)state;
    step_log g;
    three_requests("tp=1,prefill_first=1", &g);
    assert_int_equal(g.nreq[1], 2); /* prefill-only: 1 and 2, 64 tokens each */
    assert_true(g.req[1][0] == 1 && g.tok[1][0] == 64 && g.req[1][1] == 2 && g.tok[1][1] == 64);
    assert_int_equal(g.nreq[2], 3); /* then all three decode one token */
    for (int i = 0; i < 3; i++)
        assert_true(g.tok[2][i] == 1);
    three_requests("tp=1", &g); /* V1: 0's decode token first, then both prompts, one step */
    assert_int_equal(g.nreq[1], 3);
    assert_true(g.req[1][0] == 0 && g.tok[1][0] == 1 && g.tok[1][1] == 64 && g.tok[1][2] == 64);
    three_requests("tp=1,prefill_first=1,max_seqs=2", &g); /* room for one more sequence */
    assert_int_equal(g.nreq[1], 1);
    assert_true(g.req[1][0] == 1 && g.tok[1][0] == 64);
    assert_int_equal(g.nreq[2], 2); /* cap reached: 0 and 1 decode, 2 waits */
    assert_true(g.req[2][0] == 0 && g.req[2][1] == 1 && g.tok[2][0] == 1 && g.tok[2][1] == 1);
    three_requests("tp=1,prefill_first=1,chunk=100", &g); /* 64 + 64 > 100: one prompt a step */
    assert_true(g.nreq[1] == 1 && g.req[1][0] == 1 && g.tok[1][0] == 64);
    assert_true(g.nreq[2] == 1 && g.req[2][0] == 2 && g.tok[2][0] == 64);
    assert_int_equal(g.nreq[3], 3);
    /* every request still completes with its 8 tokens */
    assert_int_equal(g_r->measured, 3);
    assert_true(g_r->output_tokens_per_s > 0);
}

static void test_parse(void **state)
{
    (void)state;
    mp_serve_opts o;
    mp_serve_opts_init(&o);
    mp_diag d = {0};
    double r;
    assert_int_equal(mp_serve_rate_parse("12/s", &r, &d), MP_OK);
    assert_true(r == 12);
    assert_int_equal(mp_serve_rate_parse("720/min", &r, &d), MP_OK);
    assert_close(r, 12, 1e-12);
    assert_int_equal(mp_serve_rate_parse("fast", &r, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "rate"));
    memset(&d, 0, sizeof d);
    assert_int_equal(mp_serve_slo_parse("ttft_p99=1s,tpot_p99=40ms", &o, &d), MP_OK);
    assert_close(o.slo_tpot_s, 0.04, 1e-12);
    assert_int_equal(mp_serve_slo_parse("latency=1s", &o, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "latency"));
    memset(&d, 0, sizeof d);
    assert_int_equal(mp_serve_disagg_parse("prefill=tp4x2", &o, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "decode"));
    memset(&d, 0, sizeof d);
    assert_int_equal(mp_serve_plan_parse("tp=4,chunk=0,preempt=never,tpp=2", &o, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "chunk"));
    assert_non_null(strstr(d.text, "preempt"));
    assert_non_null(strstr(d.text, "tpp"));
    /* serve's list, not infer's: batch/in/out are refused here, max_seqs is a key */
    assert_non_null(strstr(d.text, "unknown key \"tpp\" (value \"2\"): expected one of tp, pp, ep, dp, weights"));
    assert_non_null(strstr(d.text, "max_seqs, chunk, preempt"));
    assert_null(strstr(d.text, "batch"));
    memset(&d, 0, sizeof d);
    mp_serve_opts_init(&o); /* a scheduler key twice is refused as infer's keys are, not last-wins */
    assert_int_equal(mp_serve_plan_parse("max_seqs=4,max_seqs=8", &o, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "plan: key \"max_seqs\" given twice (second value \"8\")"));
    memset(&d, 0, sizeof d);
    mp_serve_opts_init(&o);
    assert_int_equal(mp_serve_plan_parse("tp =2, max_seqs =16,preempt= swap ", &o, &d), MP_OK); /* blanks trimmed */
    assert_true(o.plan.tp == 2 && o.max_seqs == 16 && o.preempt == MP_PREEMPT_SWAP);
    memset(&d, 0, sizeof d);
    mp_serve_opts_init(&o);
    assert_int_equal(mp_serve_slo_parse("ttft_p99=1s,ttft=2s", &o, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "ttft_p99 given twice"));
    memset(&d, 0, sizeof d);
    mp_serve_opts_init(&o);
    assert_int_equal(mp_serve_plan_parse("tp=2,max_seqs=64,chunk=2048,weights=fp8", &o, &d), MP_OK);
    assert_true(o.plan.tp == 2 && o.max_seqs == 64 && o.chunk_tokens == 2048 && o.plan.weights == MP_WQ_FP8);
    assert_int_equal(o.prefill_first, 0); /* the default: V1's mixed steps */
    assert_int_equal(mp_serve_plan_parse("prefill_first=1", &o, &d), MP_OK);
    assert_int_equal(o.prefill_first, 1);
    char fmt[256];
    mp_serve_plan_format(&o, fmt, sizeof fmt);
    assert_non_null(strstr(fmt, ",prefill_first=1"));
    /* disaggregated: the pools, not the colocated tp and a dp of 0 ("tp=1,pp=1,ep=1,dp=0,...") */
    mp_serve_opts od;
    mp_serve_opts_init(&od);
    assert_int_equal(mp_serve_disagg_parse("prefill=tp4x2,decode=tp8x1", &od, &d), MP_OK);
    mp_serve_plan_format(&od, fmt, sizeof fmt);
    assert_non_null(strstr(fmt, "prefill=tp4x2,decode=tp8x1,pp=1,ep=1,weights="));
    assert_null(strstr(fmt, "dp=0"));
    assert_int_equal(mp_serve_plan_parse("prefill_first=yes", &o, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "plan.prefill_first = \"yes\": expected 0 or 1"));
    memset(&d, 0, sizeof d);
    int64_t *in, *out;
    double *arr;
    size_t n;
    const char *csv = "arrival_s,input_len,output_len\n0,10,5\n0.5,20,6\n";
    assert_int_equal(mp_serve_csv_parse(csv, strlen(csv), "t", &in, &out, &arr, &n, &d), MP_OK);
    assert_true(n == 2 && in[1] == 20 && out[1] == 6 && arr[1] == 0.5);
    free(in), free(out), free(arr);
    const char *bad = "arrival_s,input_len,output_len\n1,10,5\n0.5,20,6\n";
    assert_int_equal(mp_serve_csv_parse(bad, strlen(bad), "t", &in, &out, &arr, &n, &d), MP_ERR_PARSE);
    assert_non_null(strstr(d.text, "line 3"));
    assert_non_null(strstr(d.text, "arrival_s = \"0.5\": expected a time in s in [1, 1e9]"));
    /* a fractional token count was rounded silently; each bad cell is named with its text */
    memset(&d, 0, sizeof d);
    const char *frac = "input_len,output_len\n100.5,10\n";
    assert_int_equal(mp_serve_csv_parse(frac, strlen(frac), "t", &in, &out, NULL, &n, &d), MP_ERR_PARSE);
    assert_non_null(strstr(d.text, "t: line 2: input_len = \"100.5\": expected an integer in [1, 2^24]"));
    memset(&d, 0, sizeof d);
    const char *neg = "input_len,output_len\n100,-3\n";
    assert_int_equal(mp_serve_csv_parse(neg, strlen(neg), "t", &in, &out, NULL, &n, &d), MP_ERR_PARSE);
    assert_non_null(strstr(d.text, "output_len = \"-3\""));
}

static void test_speed(void **state)
{
    (void)state;
    const mp_model *m = mp_catalog_model(g_cat, "llama3-8b");
    mp_cluster c;
    cluster("h100-sxm5-80gb", 16, &c);
    mp_serve_opts o;
    opts(&o, "tp=1,dp=16");
    o.rate_per_s = 150;
    o.lengths = MP_LEN_SHAREGPT;
    o.requests = 10000;
    clock_t t0 = clock();
    run(m, &c, &o, g_r);
    double cpu = (double)(clock() - t0) / CLOCKS_PER_SEC;
    printf("10,000 requests on 16 replicas: %.3f s of CPU time (%lld steps on replica 0)\n", cpu,
           (long long)g_r->replica[0].steps);
    assert_true(g_r->requests == 10000 && g_r->nreplicas == 16);
    (void)cpu; /* speed is measured in bench/, not asserted in a unit test (fails under ASan and load) */
}

static mp_validation validate(const char *text, size_t len)
{
    mp_validation v;
    memset(&v, 0, sizeof v);
    mp_diag d = {0};
    if (mp_validate_csv(g_cat, text, len, "csv", NULL, &v, &d) != MP_OK)
        fail_msg("validate: %s", d.text);
    return v;
}

static int cmp_abs(const void *a, const void *b)
{
    double x = fabs(*(const double *)a), y = fabs(*(const double *)b);
    return (x > y) - (x < y);
}

static void test_validate_server_rows(void **state)
{
    (void)state;
    size_t len = 0;
    char *csv = slurp(MESHPLAN_VALIDATION_DIR "/inference/infer_runs.csv", &len);
    if (!csv) {
        printf("../shared/validation/inference/infer_runs.csv absent: skipped\n");
        return;
    }
    /* the server rows alone, then 50 rows: the header, the 20 server rows and 30 others */
    char *sub = malloc(len + 1), *fifty = malloc(len + 1);
    assert_non_null(sub);
    assert_non_null(fifty);
    size_t ns = 0, nf = 0;
    int kept = 0, others = 0;
    for (const char *p = csv, *e; p < csv + len; p = e + 1) {
        e = memchr(p, '\n', (size_t)(csv + len - p));
        e = e ? e : csv + len;
        size_t l = (size_t)(e - p) + 1;
        int header = p == csv, server = strstr(p, ",server,") && strstr(p, ",server,") < e;
        if (header || server) {
            memcpy(sub + ns, p, l);
            ns += l;
        }
        if (header || server || (others < 30 && ++others)) {
            memcpy(fifty + nf, p, l);
            nf += l;
            kept++;
        }
    }
    mp_validation v = validate(sub, ns);
    double err[64], p99[64];
    size_t n = 0, n99 = 0;
    for (size_t i = 0; i < v.nrows && n < 64; i++) {
        printf("  %-14s %-22s measured %12.5g predicted %12.5g error %+7.1f%%\n", v.rows[i].id, v.rows[i].metric,
               v.rows[i].measured, v.rows[i].predicted, v.rows[i].error_pct);
        err[n++] = v.rows[i].error_pct;
        if (strstr(v.rows[i].metric, "p99"))
            p99[n99++] = v.rows[i].error_pct;
    }
    for (size_t i = 0; i < v.nskips; i++)
        printf("  skipped %s: %s\n", v.skips[i].id, v.skips[i].reason);
    qsort(err, n, sizeof *err, cmp_abs);
    qsort(p99, n99, sizeof *p99, cmp_abs);
    printf("server rows: %zu predicted of %zu, median |error| %.1f%%; p99 rows: %zu, median |error| %.1f%%\n", n,
           v.ninput, n ? fabs(err[n / 2]) : 0.0, n99, n99 ? fabs(p99[n99 / 2]) : 0.0);
    assert_true(n >= 18); /* every server row with a rate or an SLO */
    mp_validation_free(&v);
    clock_t t0 = clock();
    v = validate(fifty, nf);
    double cpu = (double)(clock() - t0) / CLOCKS_PER_SEC;
    printf("validate of %zu rows (%d with the header, server rows included): %.2f s of CPU time\n", v.ninput, kept, cpu);
    assert_int_equal(v.ninput, 50);
    (void)cpu; /* as above: timing belongs in bench/ */
    mp_validation_free(&v);
    free(sub);
    free(fifty);
    free(csv);
}

static int setup(void **state)
{
    g_r = malloc(sizeof *g_r);
    g_r2 = malloc(sizeof *g_r2);
    return g_r && g_r2 ? catalog_setup(state) : -1;
}

static int teardown(void **state)
{
    mp_serve_result_free(g_r);
    mp_serve_result_free(g_r2);
    free(g_r);
    free(g_r2);
    return catalog_teardown(state);
}

/* The event clock is whole nanoseconds and arrivals are not: a request admitted at its own
 * arrival once read -0.5 ns of queueing, so `serve --lengths fixed:1:1 --rate 1/s` printed
 * "queue mean -0.00 ms" (-1.3e-11 s). No queueing time is negative. */
static void test_queue_not_negative(void **state)
{
    (void)state;
    const mp_model *m = mp_catalog_model(g_cat, "llama3-8b");
    mp_cluster c;
    cluster("h100-sxm5-80gb", 1, &c);
    mp_serve_opts o;
    opts(&o, "tp=1");
    o.requests = 20;
    o.lengths = MP_LEN_FIXED;
    o.in = o.out = 1;
    o.rate_per_s = 1.0;
    run(m, &c, &o, g_r);
    assert_true(g_r->queue_s.mean >= 0 && g_r->queue_s.p50 >= 0 && g_r->queue_s.max >= 0);
    mp_serve_result_free(g_r);
}

/* A tiny rate used to wrap the int64-nanosecond clock (negative TTFTs); now refused with the field
 * named, while a long schedule inside the 1e9 s bound still runs and gives the closed form's TTFT. */
static void test_clock_span(void **state)
{
    (void)state;
    const mp_model *m = mp_catalog_model(g_cat, "llama3-8b");
    mp_cluster c;
    cluster("h100-sxm5-80gb", 1, &c);
    mp_serve_opts o;
    opts(&o, "tp=1");
    o.requests = 10;
    o.warmup_frac = 0;
    o.lengths = MP_LEN_FIXED;
    o.in = 512;
    o.out = 16;
    mp_diag d = {0};
    o.rate_per_s = 1e-9; /* 10 arrivals: about 9e9 s */
    assert_int_equal(mp_serve_run(m, &c, &o, g_r, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "rate (--rate) = 1e-09/s"));
    o.rate_per_s = 1e-7; /* about 9e7 s: inside */
    run(m, &c, &o, g_r);
    assert_true(g_r->ttft_s.p50 > 0 && g_r->ttft_s.max < 10.0);
    assert_true(g_r->ttft_s.max - g_r->ttft_s.p50 < 1e-6); /* requests never overlap */
    mp_serve_result_free(g_r);
    mp_serve_request tr[2] = {{0.0, 512, 16}, {2e9, 512, 16}};
    o.arrivals = MP_ARRIVE_TRACE;
    o.trace = tr;
    o.ntrace = 2;
    mp_diag_clear(&d);
    assert_int_equal(mp_serve_run(m, &c, &o, g_r, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "arrival_s"));
    tr[1].arrival_s = 9e8;
    run(m, &c, &o, g_r);
    assert_true(g_r->ttft_s.p50 > 0 && g_r->ttft_s.max < 10.0);
    mp_serve_result_free(g_r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limit_single_request),
        cmocka_unit_test(test_limit_saturation),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_properties),
        cmocka_unit_test(test_kv_pressure),
        cmocka_unit_test(test_disaggregation),
        cmocka_unit_test(test_expert_parallel),
        cmocka_unit_test(test_step_hook),
        cmocka_unit_test(test_prefill_first),
        cmocka_unit_test(test_queue_not_negative),
        cmocka_unit_test(test_clock_span),
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_speed),
        cmocka_unit_test(test_validate_server_rows),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
