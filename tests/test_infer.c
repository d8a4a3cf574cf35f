/* tests/test_infer.c — inference (include/meshplan/infer.h, workload.h's prefill and decode):
 *   - KV bytes per token by hand for GQA (Llama 3 8B), MQA (the same with one KV head) and MLA
 *     (DeepSeek-V3), whole model and per GPU under TP;
 *   - the decode step of Llama 3 8B bf16 on one H100 at batch 1 is the weights streamed at HBM
 *     bandwidth: its memory-bound part within 5% of (weights + KV) / the bandwidth the engine
 *     reaches, and within [1, 1.3] of weights / the measured STREAM bandwidth;
 *   - properties: a longer prompt never lowers TTFT; more batch never lowers throughput while the
 *     batch fits, and never lowers TPOT; a GPU with more HBM bandwidth never decodes slower;
 *   - the plan keys: bad values and unknown keys are refused with the key named; engine profiles
 *     load from the embedded data/engines.json;
 *   - the model's context (context_len): in + out at the limit runs, one token over is refused
 *     naming the limit, an unknown context (0) is not checked; every built-in model with a known
 *     context holds its own default training length; a GPU count tp x pp does not divide is
 *     refused with the counts that would work;
 *   - validate detects the inference schema from the header: KV bytes per token exact, server rows
 *     and unknown models skipped with the reason, missing cells listed as assumed; on
 *     ../shared/validation/inference/infer_runs.csv (when present) the figures are printed;
 *   - trtllm-bench's own max batch size and max num tokens by hand from its tuning.py, and used
 *     only for rows whose notes name that harness;
 *   - the prefill pipeline's bubble: pp - 1 engine steps, by hand, and in the estimate the chunk
 *     moving only the bubble ((2 + 1/32) / 3 of the stage-times at 2 stages).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"

#include "meshplan/meshplan.h"

static mp_infer_result g_r;

static void cluster(const char *gpu, int n, mp_cluster *c)
{
    mp_diag d = {0};
    if (mp_cluster_from_catalog(g_cat, gpu, n, 0, NULL, c, &d) != MP_OK)
        fail_msg("cluster %s x %d: %s", gpu, n, d.text);
}

static void estimate(const mp_model *m, const mp_cluster *c, const char *plan, mp_infer_result *r)
{
    mp_diag d = {0};
    mp_infer_plan p;
    mp_infer_plan_init(&p);
    if (mp_infer_plan_parse(plan, &p, &d) != MP_OK || mp_infer_estimate(m, c, &p, r, &d) != MP_OK)
        fail_msg("%s: %s", plan, d.text);
}

static void test_kv_bytes_per_token(void **state)
{
    (void)state;
    const mp_model *l8 = mp_catalog_model(g_cat, "llama3-8b");
    const mp_model *ds = mp_catalog_model(g_cat, "deepseek-v3");
    assert_non_null(l8);
    assert_non_null(ds);
    /* GQA: 2 (K and V) x 32 layers x 8 KV heads x 128 head dim x 2 bytes */
    assert_close(mp_wl_kv_bytes_per_token(l8, 2.0), 2.0 * 32 * 8 * 128 * 2, 1e-15);
    assert_close(mp_wl_kv_bytes_per_token(l8, 1.0), 2.0 * 32 * 8 * 128 * 1, 1e-15);
    /* per GPU: tp 4 holds 2 KV heads; tp 16 > 8 KV heads: one head each (replicated) */
    assert_close(mp_wl_kv_bytes_per_token_gpu(l8, 2.0, 4, 1), 2.0 * 32 * 2 * 128 * 2, 1e-15);
    assert_close(mp_wl_kv_bytes_per_token_gpu(l8, 2.0, 16, 1), 2.0 * 32 * 1 * 128 * 2, 1e-15);
    assert_close(mp_wl_kv_bytes_per_token_gpu(l8, 2.0, 1, 2), 2.0 * 16 * 8 * 128 * 2, 1e-15);
    /* MQA: one KV head */
    mp_model mqa = *l8;
    mqa.kv_heads = 1;
    assert_close(mp_wl_kv_bytes_per_token(&mqa, 2.0), 2.0 * 32 * 1 * 128 * 2, 1e-15);
    assert_close(mp_wl_kv_bytes_per_token_gpu(&mqa, 2.0, 8, 1), 2.0 * 32 * 1 * 128 * 2, 1e-15);
    /* MLA: (kv_lora_rank 512 + rope 64) x 61 layers x 2 bytes = 70272, replicated over TP */
    assert_int_equal(ds->kv_lora_rank, 512);
    assert_int_equal(ds->qk_rope_head_dim, 64);
    assert_close(mp_wl_kv_bytes_per_token(ds, 2.0), (512.0 + 64.0) * 61 * 2, 1e-15);
    assert_close(mp_wl_kv_bytes_per_token_gpu(ds, 2.0, 8, 1), (512.0 + 64.0) * 61 * 2, 1e-15);
    /* the estimate reports the same */
    mp_cluster c;
    cluster("h100-sxm5-80gb", 1, &c);
    estimate(l8, &c, "batch=1,in=1024,out=128", &g_r);
    assert_close(g_r.kv_bytes_per_token, 131072.0, 1e-15);
}

static void test_decode_batch1_is_weights_over_bandwidth(void **state)
{
    (void)state;
    const mp_model *m = mp_catalog_model(g_cat, "llama3-8b");
    mp_cluster c;
    cluster("h100-sxm5-80gb", 1, &c);
    estimate(m, &c, "batch=1,in=1024,out=128,weights=bf16,kv=bf16", &g_r);
    const double bw = c.gpu.measured_mem_bw_Bps;
    assert_true(bw > 0);
    /* weights: 8.03e9 parameters x 2 bytes on one GPU */
    assert_close(g_r.weights_bytes, 2.0 * 8.03e9, 0.01);
    /* batch 1 decode is memory-bound: no kernel FLOP-bound, no communication */
    assert_true(g_r.decode.compute_s == 0.0);
    assert_true(g_r.decode.comm_s == 0.0);
    assert_string_equal(g_r.decode.bound, "memory");
    /* the step streams every linear weight (the LM head too, not the embedding) and the KV cache
     * at the engine's share of the measured bandwidth; norms and residuals add < 1% */
    double bytes = g_r.decode.bytes;
    assert_close(g_r.decode.memory_s, bytes / (bw * g_r.engine.mem_frac), 0.05);
    double ratio = g_r.decode.memory_s / (g_r.weights_bytes / bw);
    printf("decode batch 1: memory part %.3f ms = %.3f x weights / measured HBM (%.3f ms), "
           "%.3f x weights / peak; TPOT %.3f ms (+ %.3f ms engine overhead)\n",
           g_r.decode.memory_s * 1e3, ratio, g_r.weights_bytes / bw * 1e3,
           g_r.decode.memory_s / (g_r.weights_bytes / c.gpu.mem_bw_Bps), g_r.tpot_s * 1e3,
           g_r.decode.overhead_s * 1e3);
    assert_true(ratio >= 1.0 && ratio <= 1.3);
    assert_true(g_r.tpot_s >= g_r.weights_bytes / c.gpu.mem_bw_Bps);
}

/* Small-batch decode GEMMs pad their rows to mma.sync's M of 16 (src/workload/infer_phase.c), so
 * on the H20 (dense bf16 148 TFLOPS against 4.0 TB/s: a ridge of ~37 FLOP/byte) a decode step of
 * 1 or 16 sequences stays memory-bound, as weight streaming bounds measured single-stream decode;
 * padding to wgmma's 64 rows (the old rule) priced batch 1 at 64 rows and made it compute-bound. */
static void test_small_batch_decode_memory_bound_on_h20(void **state)
{
    (void)state;
    const mp_model *m = mp_catalog_model(g_cat, "llama3-8b");
    mp_cluster c;
    cluster("h20-sxm-96gb", 1, &c);
    static const char *const plans[] = {"batch=1,in=1024,out=128", "batch=16,in=1024,out=128"};
    for (size_t k = 0; k < sizeof plans / sizeof plans[0]; k++) {
        estimate(m, &c, plans[k], &g_r);
        assert_true(g_r.decode.compute_s == 0.0);
        assert_string_equal(g_r.decode.bound, "memory");
        /* weights (and the KV cache of 16 x 1088 tokens, 2.3 GB at batch 16) over the peak HBM
         * bandwidth (no STREAM figure is catalogued for the H20) at the engine's mem_frac */
        double ratio = g_r.decode.memory_s / (g_r.weights_bytes / c.gpu.mem_bw_Bps);
        printf("h20 %s: decode memory part %.3f ms = %.3f x weights / peak HBM\n", plans[k],
               g_r.decode.memory_s * 1e3, ratio);
        assert_true(ratio >= 1.0 && ratio <= 1.5);
    }
}

static void test_longer_prompt_never_lowers_ttft(void **state)
{
    (void)state;
    static const char *const models[] = {"llama3-8b", "llama3-70b", "mixtral-8x7b", "deepseek-v3",
                                         "llama4-scout-17b-16e", "llama4-maverick-17b-128e"};
    static const char *const plans[] = {"tp=1", "tp=8", "tp=8", "tp=8,ep=8,weights=fp8",
                                        "tp=8,ep=8,weights=fp8", "tp=8,ep=8,weights=fp8"};
    for (size_t k = 0; k < 6; k++) {
        const mp_model *mc = mp_catalog_model(g_cat, models[k]);
        assert_non_null(mc);
        /* a property of the cost model up to 32K-token prompts: priced with the context unknown
         * (0), since llama3-8b/70b's 8192 would refuse the longer prompts (that refusal is
         * test_context_and_gpus's) */
        mp_model mm = *mc;
        mm.context_len = 0;
        const mp_model *m = &mm;
        mp_cluster c;
        int n = strcmp(plans[k], "tp=1") ? 8 : 1;
        cluster(strcmp(models[k], "deepseek-v3") ? "h100-sxm5-80gb" : "h200-sxm-141gb", n, &c);
        double prev = 0.0;
        for (int in = 1; in <= 32768; in = in * 3 / 2 + 1) {
            char plan[128];
            snprintf(plan, sizeof plan, "%s,batch=4,in=%d,out=16", plans[k], in);
            estimate(m, &c, plan, &g_r);
            if (g_r.ttft_s < prev)
                fail_msg("%s %s: TTFT %.9g < %.9g at the shorter prompt", models[k], plan, g_r.ttft_s, prev);
            prev = g_r.ttft_s;
        }
    }
}

static void test_batch_raises_throughput_and_tpot(void **state)
{
    (void)state;
    static const char *const models[] = {"llama3-8b", "llama3-70b", "mixtral-8x7b", "llama4-scout-17b-16e", "llama3-70b"};
    static const char *const plans[] = {"tp=1", "tp=4,weights=fp8,kv=fp8", "tp=2", "tp=4,ep=4,weights=fp8,kv=fp8",
                                        "tp=2,weights=fp8,kv=fp8"};
    static const char *const gpu[] = {"h100-sxm5-80gb", "h100-sxm5-80gb", "h100-sxm5-80gb", "b200", "rtx-pro-6000-se"};
    static const int gpus[] = {1, 4, 2, 4, 2};
    for (size_t k = 0; k < 5; k++) {
        const mp_model *m = mp_catalog_model(g_cat, models[k]);
        mp_cluster c;
        cluster(gpu[k], gpus[k], &c);
        double prev_tps = 0.0, prev_tpot = 0.0;
        for (int b = 1; b <= 1024; b *= 2) {
            char plan[128];
            snprintf(plan, sizeof plan, "%s,batch=%d,in=1024,out=256", plans[k], b);
            estimate(m, &c, plan, &g_r);
            if (g_r.tpot_s < prev_tpot)
                fail_msg("%s %s: TPOT %.9g < %.9g at the smaller batch", models[k], plan, g_r.tpot_s, prev_tpot);
            prev_tpot = g_r.tpot_s;
            if (!g_r.feasible) /* memory saturates: the throughput claim stops here */
                break;
            if (g_r.output_tokens_per_s < prev_tps * (1.0 - 1e-12))
                fail_msg("%s %s: tokens/s %.9g < %.9g at the smaller batch", models[k], plan,
                         g_r.output_tokens_per_s, prev_tps);
            prev_tps = g_r.output_tokens_per_s;
        }
    }
}

static void test_more_bandwidth_never_decodes_slower(void **state)
{
    (void)state;
    const mp_model *m = mp_catalog_model(g_cat, "llama3-70b");
    mp_cluster c;
    cluster("h100-sxm5-80gb", 4, &c);
    for (int b = 1; b <= 256; b *= 4) {
        char plan[128];
        snprintf(plan, sizeof plan, "tp=4,batch=%d,in=2048,out=128", b);
        double prev = 1e30;
        mp_cluster cc = c;
        for (double f = 1.0; f <= 3.0; f += 0.25) {
            cc.gpu.mem_bw_Bps = c.gpu.mem_bw_Bps * f;
            cc.gpu.measured_mem_bw_Bps = c.gpu.measured_mem_bw_Bps * f;
            estimate(m, &cc, plan, &g_r);
            if (g_r.tpot_s > prev)
                fail_msg("%s x%.2f bandwidth: TPOT %.9g > %.9g", plan, f, g_r.tpot_s, prev);
            prev = g_r.tpot_s;
        }
    }
    /* and across catalogued GPUs: H200 (4.8 TB/s) decodes 8B no slower than H100 (3.35 TB/s) */
    const mp_model *m8 = mp_catalog_model(g_cat, "llama3-8b");
    mp_cluster h100, h200;
    cluster("h100-sxm5-80gb", 1, &h100);
    cluster("h200-sxm-141gb", 1, &h200);
    mp_infer_result *r2 = malloc(sizeof *r2);
    assert_non_null(r2);
    estimate(m8, &h100, "batch=8,in=1024,out=128", &g_r);
    estimate(m8, &h200, "batch=8,in=1024,out=128", r2);
    assert_true(r2->tpot_s <= g_r.tpot_s);
    /* every catalogued pair where one GPU has at least the other's HBM bandwidth (peak and
     * measured), bf16 peak and memory: it decodes Llama 3 8B no slower */
    int pairs = 0;
    const size_t n = mp_catalog_gpu_count(g_cat);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            const mp_gpu *a = mp_catalog_gpu_at(g_cat, i), *b = mp_catalog_gpu_at(g_cat, j);
            double ma = a->measured_mem_bw_Bps > 0 ? a->measured_mem_bw_Bps : 0.865 * a->mem_bw_Bps;
            double mb = b->measured_mem_bw_Bps > 0 ? b->measured_mem_bw_Bps : 0.865 * b->mem_bw_Bps;
            if (i == j || !(a->mem_bw_Bps > b->mem_bw_Bps) || ma < mb || a->memory_bytes < 20e9 || b->memory_bytes < 20e9 ||
                a->peak_flops_per_s[MP_DT_BF16] < b->peak_flops_per_s[MP_DT_BF16] || !(b->peak_flops_per_s[MP_DT_BF16] > 0))
                continue;
            mp_cluster ca, cb;
            cluster(a->key, 1, &ca);
            cluster(b->key, 1, &cb);
            estimate(m8, &ca, "batch=8,in=1024,out=128", &g_r);
            estimate(m8, &cb, "batch=8,in=1024,out=128", r2);
            if (g_r.tpot_s > r2->tpot_s * (1 + 1e-12))
                fail_msg("%s (more bandwidth) decodes slower than %s: %.6g > %.6g s", a->key, b->key, g_r.tpot_s, r2->tpot_s);
            pairs++;
        }
    printf("bandwidth property: %d GPU pairs checked\n", pairs);
    assert_true(pairs >= 20);
    free(r2);
}

static void test_plan_keys_and_engines(void **state)
{
    (void)state;
    mp_infer_plan p;
    mp_diag d = {0};
    mp_infer_plan_init(&p);
    assert_int_equal(mp_infer_plan_parse("tp=4,weights=fp8,kv=fp8,batch=64,in=2048,out=256,"
                                         "engine=trtllm,kv_frac=0.85,cuda_graphs=0", &p, &d), MP_OK);
    assert_int_equal(p.tp, 4);
    assert_int_equal(p.weights, MP_WQ_FP8);
    assert_int_equal(p.kv, MP_KVQ_FP8);
    assert_int_equal(p.engine, MP_ENGINE_TRTLLM);
    assert_int_equal(p.cuda_graphs, 0);
    assert_close(p.kv_frac, 0.85, 1e-15);
    char buf[512];
    mp_infer_plan_format(&p, buf, sizeof buf);
    assert_non_null(strstr(buf, "weights=fp8"));
    assert_true(buf[0] == 't');
    mp_infer_plan_init(&p);
    memset(&d, 0, sizeof d);
    assert_int_equal(mp_infer_plan_parse("tpp=4", &p, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "tpp"));
    memset(&d, 0, sizeof d);
    mp_infer_plan_init(&p);
    assert_int_equal(mp_infer_plan_parse("weights=fp3", &p, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "weights"));
    memset(&d, 0, sizeof d);
    mp_infer_plan_init(&p);
    assert_int_equal(mp_infer_plan_parse("batch=0", &p, &d), MP_ERR_INPUT);
    /* a plan that cannot be formed: tp does not divide the heads; tp x pp != GPUs */
    const mp_model *m = mp_catalog_model(g_cat, "llama3-8b");
    mp_cluster c;
    cluster("h100-sxm5-80gb", 8, &c);
    mp_infer_plan_init(&p);
    p.tp = 3;
    p.dp = 1;
    memset(&d, 0, sizeof d);
    assert_int_equal(mp_infer_estimate(m, &c, &p, &g_r, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "tp"));
    mp_infer_plan_init(&p);
    p.ep = 2; /* a dense model */
    memset(&d, 0, sizeof d);
    assert_int_equal(mp_infer_estimate(m, &c, &p, &g_r, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "ep"));
    for (int e = 0; e < MP_ENGINE_COUNT; e++) {
        mp_engine_profile ep;
        memset(&d, 0, sizeof d);
        assert_int_equal(mp_engine_profile_get((mp_engine_id)e, &ep, &d), MP_OK);
        assert_string_equal(ep.key, mp_engine_name((mp_engine_id)e));
        assert_true(ep.version[0] && ep.source[0] && ep.block_tokens >= 1);
        assert_true(ep.step_overhead_eager_s + 32 * ep.step_overhead_eager_per_layer_s > ep.step_overhead_graphs_s);
    }
    /* vLLM's pool: 0.9 x capacity - weights - activations - runtime, in 16-token blocks */
    cluster("h100-sxm5-80gb", 1, &c);
    estimate(m, &c, "batch=1,in=1000,out=24", &g_r);
    double pool = 0.9 * g_r.capacity_bytes - g_r.weights_bytes - g_r.activations_bytes - g_r.runtime_bytes;
    assert_close(g_r.kv_pool_bytes, pool, 1e-12);
    assert_int_equal(g_r.max_concurrency, (int64_t)(pool / (64.0 * 16 * 131072.0)));
}

static mp_validation validate_text(const char *path, size_t *nskips_out)
{
    size_t len = 0;
    char *csv = slurp(path, &len);
    mp_validation v;
    memset(&v, 0, sizeof v);
    if (!csv)
        return v;
    mp_diag d = {0};
    if (mp_validate_csv(g_cat, csv, len, path, NULL, &v, &d) != MP_OK)
        fail_msg("%s: %s", path, d.text);
    free(csv);
    *nskips_out = v.nskips;
    return v;
}

static const mp_val_row *row_of(const mp_validation *v, const char *id)
{
    for (size_t i = 0; i < v->nrows; i++)
        if (!strcmp(v->rows[i].id, id))
            return &v->rows[i];
    return NULL;
}

static const char *skip_of(const mp_validation *v, const char *id)
{
    for (size_t i = 0; i < v->nskips; i++)
        if (!strcmp(v->skips[i].id, id))
            return v->skips[i].reason;
    return NULL;
}

static void test_validate_inference_schema(void **state)
{
    (void)state;
    size_t ns = 0;
    mp_validation v = validate_text(MESHPLAN_SOURCE_DIR "/tests/data/infer_runs_small.csv", &ns);
    assert_int_equal(v.ninput, 5);
    const mp_val_row *k1 = row_of(&v, "k1"), *k2 = row_of(&v, "k2"), *o1 = row_of(&v, "o1");
    assert_non_null(k1);
    assert_non_null(k2);
    assert_non_null(o1);
    assert_true(k1->error_pct == 0.0 && k2->error_pct == 0.0);
    assert_non_null(strstr(o1->assumed, "tp="));
    assert_non_null(strstr(o1->assumed, "in=1024"));
    assert_non_null(strstr(o1->assumed, "batch="));
    assert_non_null(strstr(o1->assumed, "kv=fp8"));
    assert_non_null(skip_of(&v, "s1"));
    assert_non_null(strstr(skip_of(&v, "s1"), "server"));
    assert_non_null(strstr(skip_of(&v, "s1"), "neither request_rate_per_s nor a latency_slo")); /* the serving simulator (issue 21) needs one */
    assert_non_null(skip_of(&v, "m1"));
    assert_non_null(strstr(skip_of(&v, "m1"), "nosuch-model"));
    mp_validation_free(&v);

    v = validate_text(MESHPLAN_VALIDATION_DIR "/inference/infer_runs.csv", &ns);
    if (!v.ninput) {
        printf("../shared/validation/inference/infer_runs.csv absent: skipped\n");
        return;
    }
    static const char *const groups[] = {"trtllm_perf_overview_v1.0", "mlperf_v4.1", "mlenergy_leaderboard_v1"};
    printf("infer_runs.csv: %zu of %zu rows predicted\n", v.nrows, v.ninput);
    for (size_t g = 0; g < 3; g++) {
        mp_val_stats st;
        mp_validation_stats(&v, MP_VAL_ALL, groups[g], &st);
        printf("  %-28s n %3zu  median |error| %5.1f%%\n", groups[g], st.n, st.median_abs_error_pct);
    }
    /* every row is predicted or skipped with a reason */
    assert_int_equal(v.nrows + v.nskips, v.ninput);
    for (size_t i = 0; i < v.nskips; i++)
        assert_true(v.skips[i].reason[0] != '\0');
    mp_validation_free(&v);
}

/* Published vLLM KV capacities (tests/data/vllm_kv_capacity.csv, SOURCES.md): the V0 logs of an
 * RTX 3090 within 5% (the 29000-token run within 7%); the V1 W8A8 H100 log within 6.5% (its
 * January-2025 profile of 2048 tokens is not the 0.8 profile's: docs/infer.md). */
static void test_vllm_kv_capacity(void **state)
{
    (void)state;
    size_t ns = 0;
    mp_validation v = validate_text(MESHPLAN_SOURCE_DIR "/tests/data/vllm_kv_capacity.csv", &ns);
    assert_int_equal(v.ninput, 4);
    assert_int_equal(v.nrows, 4);
    for (size_t i = 0; i < v.nrows; i++)
        printf("  %s %-16s measured %10.2f predicted %10.2f (%+.1f%%)\n", v.rows[i].id, v.rows[i].metric,
               v.rows[i].measured, v.rows[i].predicted, v.rows[i].error_pct);
    assert_true(fabs(row_of(&v, "vllmlog_001")->error_pct) <= 5.0);
    assert_true(fabs(row_of(&v, "vllmlog_002")->error_pct) <= 5.0);
    assert_true(fabs(row_of(&v, "vllmlog_004")->error_pct) <= 7.0);
    assert_true(fabs(row_of(&v, "vllmlog_005")->error_pct) <= 6.5);
    mp_validation_free(&v);
}

static int refused(const mp_model *m, const mp_cluster *c, const char *plan, const char *why)
{
    mp_diag d = {0};
    mp_infer_plan p;
    mp_infer_plan_init(&p);
    if (mp_infer_plan_parse(plan, &p, &d) != MP_OK)
        fail_msg("%s: %s", plan, d.text);
    mp_status st = mp_infer_estimate(m, c, &p, &g_r, &d);
    if (st == MP_OK)
        return 0;
    if (!strstr(d.text, why))
        fail_msg("%s: refused, but not for \"%s\": %s", plan, why, d.text);
    return 1;
}

/* Decisions at the threshold (the SQLite cost.test idea): the limit itself runs, one over does not. */
static void test_context_and_gpus(void **state)
{
    (void)state;
    const mp_model *l3 = mp_catalog_model(g_cat, "llama3-8b");
    assert_non_null(l3);
    assert_int_equal(l3->context_len, 8192); /* meta-llama/Meta-Llama-3-8B config.json */
    mp_cluster c;
    cluster("h100-sxm5-80gb", 1, &c);
    assert_false(refused(l3, &c, "in=8000,out=192", "context"));
    assert_true(refused(l3, &c, "in=8000,out=193", "in + out = 8000 + 193 = 8193 tokens: expected at most llama3-8b's context of 8192"));
    assert_true(refused(l3, &c, "in=8000,out=100,longest=193,batch=2", "in + longest = 8000 + 193"));
    mp_model unk = *l3;
    unk.context_len = 0; /* unknown: not checked */
    assert_false(refused(&unk, &c, "in=200000,out=10", "context"));
    /* every built-in model whose context is known holds its default training sequence */
    for (size_t i = 0; i < mp_catalog_model_count(g_cat); i++) {
        const mp_model *m = mp_catalog_model_at(g_cat, i);
        if (m->context_len > 0 && m->context_len < m->seq_len)
            fail_msg("%s: context_len %lld < seq_len %lld", m->key, (long long)m->context_len, (long long)m->seq_len);
    }
    cluster("h100-sxm5-80gb", 7, &c);
    assert_true(refused(l3, &c, "tp=2", "tp x pp = 2 x 1 = 2 GPUs per replica does not divide the cluster's 7 GPUs: "
                                        "expected --gpus a multiple of 2 (e.g. 6 or 8)"));
    assert_false(refused(l3, &c, "tp=1", "GPUs"));
}

/* A replica whose weights leave no KV pool names the weights, not the KV: DeepSeek-V3 in bf16 on
 * one H100 (1250 GiB of weights) once read "batch 1 needs 0.08 GiB of KV per GPU; the engine's
 * pool holds 0.00 GiB". A pool too small for the batch still names the KV. */
static void test_no_pool_reason(void **state)
{
    (void)state;
    mp_cluster c;
    cluster("h100-sxm5-80gb", 1, &c);
    estimate(mp_catalog_model(g_cat, "deepseek-v3"), &c, "tp=1", &g_r);
    assert_false(g_r.feasible);
    assert_non_null(strstr(g_r.reason, "leave no KV pool"));
    assert_non_null(strstr(g_r.reason, "weights 1249.88"));
    estimate(mp_catalog_model(g_cat, "llama3-8b"), &c, "batch=512", &g_r);
    assert_false(g_r.feasible);
    assert_non_null(strstr(g_r.reason, "batch 512 needs 72.00 GiB of KV per GPU"));
}

/* trtllm-bench's own settings (src/infer/bench_tuning.c), by hand from finetune_setting in
 * tensorrt_llm/bench/build/tuning.py: raw_bs = min(kv_requests, 4096) / pp, raw_tok =
 * min(raw_bs x (1 + in / out), 32768), each rounded up by its band. */
static void test_trtllm_bench_settings(void **state)
{
    (void)state;
    int64_t bs = 0, tok = 0;
    /* 348 requests, 2048/128: bs 128 x ceil(348/128) = 384; tokens 348 x 17 = 5916 -> 512 x 12 = 6144 */
    mp_infer_trtllm_bench_settings(348, 2048, 128, 1, &bs, &tok);
    assert_int_equal(bs, 384);
    assert_int_equal(tok, 6144);
    /* 10000 requests, 128/128: capped at 4096 (256 x 16); tokens 4096 x 2 = 8192 -> 1024 x 8 */
    mp_infer_trtllm_bench_settings(10000, 128, 128, 1, &bs, &tok);
    assert_int_equal(bs, 4096);
    assert_int_equal(tok, 8192);
    /* 100 requests, 128/2048: bs max(64, 32 x 4) = 128; tokens 106.25 -> the floor of 2048 */
    mp_infer_trtllm_bench_settings(100, 128, 2048, 1, &bs, &tok);
    assert_int_equal(bs, 128);
    assert_int_equal(tok, 2048);
    /* pp 8, 1894 requests, 2048/128: 236.75 per stage -> 32 x 8 = 256; tokens 4024.75 -> 256 x 16 */
    mp_infer_trtllm_bench_settings(1894, 2048, 128, 8, &bs, &tok);
    assert_int_equal(bs, 256);
    assert_int_equal(tok, 4096);
    /* 20 requests: the floor of 64; 4096 requests at 2048/128: tokens capped at 32768 */
    mp_infer_trtllm_bench_settings(20, 128, 128, 1, &bs, NULL);
    assert_int_equal(bs, 64);
    mp_infer_trtllm_bench_settings(4096, 2048, 128, 1, NULL, &tok);
    assert_int_equal(tok, 32768);

    /* validate: a row whose notes name trtllm-bench uses them (and says so); the same row from
     * another harness keeps the engine's defaults */
    size_t ns = 0;
    mp_validation v = validate_text(MESHPLAN_SOURCE_DIR "/tests/data/infer_runs_trtllm_bench.csv", &ns);
    const mp_val_row *b1 = row_of(&v, "b1"), *b2 = row_of(&v, "b2");
    assert_non_null(b1);
    assert_non_null(b2);
    assert_non_null(strstr(b1->assumed, "trtllm-bench settings: max_batch_size="));
    assert_null(strstr(b2->assumed, "trtllm-bench"));
    mp_validation_free(&v);
}

/* The prefill pipeline's fill and drain (mp_infer_prefill_bubble_stage_times): pp - 1 engine
 * steps, each its share of the micro-batch's stage-time (GPipe, Huang et al. 2019). */
static void test_prefill_bubble(void **state)
{
    (void)state;
    assert_true(mp_infer_prefill_bubble_stage_times(1, 1e6, 8192) == 0.0); /* no pipeline */
    /* 8 stages, micro-batches of 237 x 2048 tokens, steps of 8192: 7 x 8192 / 485376 */
    assert_close(mp_infer_prefill_bubble_stage_times(8, 237.0 * 2048, 8192), 7.0 * 8192 / 485376.0, 1e-12);
    /* a step as large as the micro-batch: pp - 1 whole stage-times (the GPipe bound) */
    assert_close(mp_infer_prefill_bubble_stage_times(4, 1000, 8192), 3.0, 1e-12);
    assert_close(mp_infer_prefill_bubble_stage_times(4, 1000, 0), 3.0, 1e-12);

    /* in the estimate: 2 stages, the batch in 2 micro-batches; the chunk sets the bubble only */
    const mp_model *m = mp_catalog_model(g_cat, "llama3-70b");
    assert_non_null(m);
    mp_cluster c;
    cluster("rtx-pro-6000-se", 2, &c);
    estimate(m, &c, "tp=1,pp=2,weights=fp8,kv=fp8,batch=64,in=2048,out=16,chunk=131072", &g_r);
    /* micro-batches of 32 x 2048 = 65536 tokens: one step each, 2 + 1 stage-times */
    const double whole = g_r.prefill.total_s - g_r.prefill.overhead_s;
    estimate(m, &c, "tp=1,pp=2,weights=fp8,kv=fp8,batch=64,in=2048,out=16,chunk=2048", &g_r);
    /* steps of 2048 tokens: 2 + 1/32 stage-times (the stage-time itself does not change) */
    const double chunked = g_r.prefill.total_s - g_r.prefill.overhead_s;
    assert_close(chunked / whole, (2.0 + 1.0 / 32.0) / 3.0, 1e-9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kv_bytes_per_token),
        cmocka_unit_test(test_decode_batch1_is_weights_over_bandwidth),
        cmocka_unit_test(test_small_batch_decode_memory_bound_on_h20),
        cmocka_unit_test(test_longer_prompt_never_lowers_ttft),
        cmocka_unit_test(test_batch_raises_throughput_and_tpot),
        cmocka_unit_test(test_more_bandwidth_never_decodes_slower),
        cmocka_unit_test(test_plan_keys_and_engines),
        cmocka_unit_test(test_validate_inference_schema),
        cmocka_unit_test(test_vllm_kv_capacity),
        cmocka_unit_test(test_context_and_gpus),
        cmocka_unit_test(test_trtllm_bench_settings),
        cmocka_unit_test(test_prefill_bubble),
        cmocka_unit_test(test_no_pool_reason),
    };
    return cmocka_run_group_tests(tests, catalog_setup, catalog_teardown);
}
