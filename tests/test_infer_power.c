/* tests/test_infer_power.c — power and energy of inference (src/infer/power.c, docs/infer.md
 * "Power") and the engine-measured device memory (src/infer/device_mem.c):
 *   - mp_infer_phase_power_w by hand: the kernel power of the activity model over the kernel time
 *     and the eager dispatch window, active idle over the host time, the TDP clip;
 *   - the estimator's decode phase uses it with the dispatch window = what CUDA graphs remove;
 *   - properties: energy per output token never rises with the batch when throughput rises at
 *     least as fast as power (and falls through the memory-bound range); an eager step draws
 *     between active idle and its kernel power;
 *   - validation thresholds that fail on regression: the ML.ENERGY v1 A100 rows
 *     (tests/data/mlenergy_v1_a100.csv) and the vLLM KV-capacity logs
 *     (tests/data/vllm_kv_capacity.csv): SOURCES.md.
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

static void estimate(const char *model, const char *gpu, const char *plan, mp_infer_result *r)
{
    mp_diag d = {0};
    mp_cluster c;
    const mp_model *m = mp_catalog_model(g_cat, model);
    assert_non_null(m);
    if (mp_cluster_from_catalog(g_cat, gpu, 1, 0, NULL, &c, &d) != MP_OK)
        fail_msg("cluster %s: %s", gpu, d.text);
    mp_infer_plan p;
    mp_infer_plan_init(&p);
    if (mp_infer_plan_parse(plan, &p, &d) != MP_OK || mp_infer_estimate(m, &c, &p, r, &d) != MP_OK)
        fail_msg("%s: %s", plan, d.text);
}

/* A 400 W GPU with a 312 TFLOP/s bf16 peak and no measured GEMM: the best rate is 0.835 x peak
 * = 260.52 TFLOP/s. Active idle 76 W, 8 pJ/bit. */
static void test_phase_power_by_hand(void **state)
{
    (void)state;
    mp_gpu g;
    memset(&g, 0, sizeof g);
    g.tdp_W = 400.0;
    g.peak_flops_per_s[MP_DT_BF16] = 312e12;
    const double best = 0.835 * 312e12;
    /* 12 GB in 10 ms of kernels: 1.2 TB/s x 64 pJ/B = 76.8 W over active idle: P_k = 152.8 W;
     * 10 ms of dispatch at P_k and 5 ms of host work at 76 W:
     * (152.8 x 0.020 + 76 x 0.005) / 0.025 = 137.44 W */
    assert_close(mp_infer_phase_power_w(&g, 76.0, 8.0, 0.0, 12e9, 0.010, 0.010, 0.005, MP_DT_BF16), 137.44, 1e-12);
    /* no dispatch window (CUDA graphs): (152.8 x 0.010 + 76 x 0.005) / 0.015 = 127.2 W */
    assert_close(mp_infer_phase_power_w(&g, 76.0, 8.0, 0.0, 12e9, 0.010, 0.0, 0.005, MP_DT_BF16), 127.2, 1e-12);
    /* half the best GEMM rate: 76 + 324 x 0.5 + 76.8 = 314.8 W through kernels and dispatch */
    assert_close(mp_infer_phase_power_w(&g, 76.0, 8.0, 0.5 * best * 0.010, 12e9, 0.010, 0.010, 0.0, MP_DT_BF16),
                 314.8, 1e-12);
    /* the best rate and the bytes: clipped at the TDP */
    assert_close(mp_infer_phase_power_w(&g, 76.0, 8.0, best * 0.010, 12e9, 0.010, 0.0, 0.0, MP_DT_BF16), 400.0, 1e-12);
    /* host work only: active idle; nothing: 0 */
    assert_close(mp_infer_phase_power_w(&g, 76.0, 8.0, 0.0, 0.0, 0.0, 0.0, 0.004, MP_DT_BF16), 76.0, 1e-12);
    assert_true(mp_infer_phase_power_w(&g, 76.0, 8.0, 0.0, 0.0, 0.0, 0.0, 0.0, MP_DT_BF16) == 0.0);
}

/* The decode phase of an eager (hf) step: kernels and the dispatch window (eager overhead minus
 * the graphs overhead) at the kernel power, the rest at active idle. */
static void test_decode_power_wiring(void **state)
{
    (void)state;
    mp_infer_result r;
    estimate("llama2-7b", "a100-sxm4-40gb", "engine=hf,cuda_graphs=0,weights=fp16,kv=bf16,batch=1,in=161,out=420", &r);
    const mp_gpu *g = mp_catalog_gpu(g_cat, "a100-sxm4-40gb");
    double idle, wait;
    mp_energy_gpu_points(g, &idle, &wait);
    mp_energy_opts eo;
    mp_energy_opts_init(&eo);
    const mp_infer_phase *d = &r.decode;
    double host = r.engine.step_overhead_graphs_s, dispatch = d->overhead_s - host;
    assert_close(dispatch, r.engine.step_overhead_eager_per_layer_s * 32 + r.engine.step_overhead_eager_s - host, 1e-12);
    double want = mp_infer_phase_power_w(g, wait, eo.mem_pJ_per_bit, d->flop, d->bytes,
                                         d->compute_s + d->memory_s + d->comm_s, dispatch, host, MP_DT_FP16);
    assert_close(d->power_w, want, 1e-12);
    /* the activity model's kernel power is below the A100's measured eager-decode power, which
     * the eager step draws instead */
    double p_k = mp_infer_phase_power_w(g, wait, eo.mem_pJ_per_bit, d->flop, d->bytes,
                                        d->compute_s + d->memory_s + d->comm_s, 0.0, 0.0, MP_DT_FP16);
    const double eager = mp_infer_eager_power_w(g, NULL);
    assert_true(eager > p_k);
    assert_close(d->power_w, eager, 1e-12);
    /* the same step with the dispatch window idle would draw less: the window is not idle */
    double idle_window = mp_infer_phase_power_w(g, wait, eo.mem_pJ_per_bit, d->flop, d->bytes,
                                                d->compute_s + d->memory_s + d->comm_s, 0.0, d->overhead_s, MP_DT_FP16);
    assert_true(d->power_w > idle_window);
    printf("  llama2-7b hf eager on A100 40GB: decode %.1f W (kernels %.1f W, idle-window model %.1f W, P_wait %.1f W)\n",
           d->power_w, p_k, idle_window, wait);
}

/* Energy per output token = GPUs x power / output tokens/s: it never rises with the batch when
 * throughput rises at least as fast as power, and through the memory-bound range (the weights
 * read once per step for the whole batch) it falls. */
static void test_energy_per_token_falls_with_batch(void **state)
{
    (void)state;
    static const char *const gpus[] = {"h100-sxm5-80gb", "a100-sxm4-80gb"};
    for (size_t gi = 0; gi < 2; gi++) {
        mp_infer_result prev, cur;
        char plan[128];
        for (int b = 1; b <= 256; b *= 2) {
            snprintf(plan, sizeof plan, "batch=%d,in=512,out=256", b);
            estimate("llama3-8b", gpus[gi], plan, &cur);
            if (b > 1) {
                double tput = cur.output_tokens_per_s / prev.output_tokens_per_s, pw = cur.power_w / prev.power_w;
                if (tput >= pw)
                    assert_true(cur.energy_j_per_output_token <= prev.energy_j_per_output_token * (1 + 1e-12));
                if (b <= 32) /* memory-bound decode */
                    assert_true(cur.energy_j_per_output_token < prev.energy_j_per_output_token);
            }
            prev = cur;
        }
    }
}

static mp_validation validate_file(const char *path)
{
    size_t len = 0;
    char *csv = slurp(path, &len);
    mp_validation v;
    memset(&v, 0, sizeof v);
    if (!csv)
        fail_msg("%s: cannot read", path);
    mp_diag d = {0};
    if (mp_validate_csv(g_cat, csv, len, path, NULL, &v, &d) != MP_OK)
        fail_msg("%s: %s", path, d.text);
    free(csv);
    return v;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* median |error| of the rows whose metric starts with prefix, leaving out the ids in skip_ids
 * (NULL: none) */
static double median_of(const mp_validation *v, const char *prefix, const char *skip_ids)
{
    double e[64];
    size_t n = 0;
    for (size_t i = 0; i < v->nrows && n < 64; i++) {
        if (strncmp(v->rows[i].metric, prefix, strlen(prefix)))
            continue;
        if (skip_ids && strstr(skip_ids, v->rows[i].id))
            continue;
        e[n++] = fabs(v->rows[i].error_pct);
    }
    assert_true(n > 0);
    qsort(e, n, sizeof e[0], cmp_double);
    return n % 2 ? e[n / 2] : 0.5 * (e[n / 2 - 1] + e[n / 2]);
}

/* Regression thresholds on ML.ENERGY v1 (A100 40GB, HF transformers eager): the figures of this
 * model (docs/infer.md "Validation") with a margin of about two points; none of its constants was
 * fitted to these rows. The batch-2 rows (013-015, 020-022) run each batch until its longest
 * response (ML.ENERGY v1 benchmark.py), which the fixed-batch estimator does not model: they are
 * in the group median, not in the batch-1 one. */
static void test_mlenergy_thresholds(void **state)
{
    (void)state;
    mp_validation v = validate_file(MESHPLAN_SOURCE_DIR "/tests/data/mlenergy_v1_a100.csv");
    assert_int_equal(v.ninput, 22);
    assert_int_equal(v.nrows, 22);
    static const char b2[] = "mlenv1_013 mlenv1_014 mlenv1_015 mlenv1_020 mlenv1_021 mlenv1_022";
    double e_all = median_of(&v, "energy", NULL), e_b1 = median_of(&v, "energy", b2);
    double lat = median_of(&v, "e2e_latency", NULL), tput = median_of(&v, "output_tokens", NULL);
    printf("  ML.ENERGY v1: energy median |error| %.1f%% (batch 1: %.1f%%), latency %.1f%%, throughput %.1f%%\n",
           e_all, e_b1, lat, tput);
    for (size_t i = 0; i < v.nrows; i++)
        printf("    %s %-26s measured %9.3f predicted %9.3f (%+.1f%%)\n", v.rows[i].id, v.rows[i].metric,
               v.rows[i].measured, v.rows[i].predicted, v.rows[i].error_pct);
    assert_true(e_all <= 15.0);  /* 12.8 here; 28.8 before the A100's measured eager-decode power,
                                    38.7 before the static batch ran to its longest response, 53.8
                                    before the dispatch window drew power */
    assert_true(e_b1 <= 14.0);   /* 11.2; 27.9 before the measured eager-decode power */
    assert_true(lat <= 21.0);    /* 19.0; 26.9 before the static batch */
    /* the batch-2 rows (-63 to -65% when every response had the mean length, -29 to -33% with
     * the activity model's power; -13.5 to -18.5% now) within 25%, their latency (-31%, -8.5%)
     * within 35% */
    for (size_t i = 0; i < v.nrows; i++)
        if (strstr(b2, v.rows[i].id))
            assert_true(fabs(v.rows[i].error_pct) <= (strncmp(v.rows[i].metric, "energy", 6) ? 35.0 : 25.0));
    assert_true(tput <= 25.0);   /* 22.3 */
    /* the Llama 2 chat rows (the model's own weights, not a fine-tune's) within 30% (+6.0 and
     * -10.5% now) */
    static const char *const llama2[] = {"mlenv1_001", "mlenv1_003", "mlenv1_005", "mlenv1_007"};
    for (size_t k = 0; k < 4; k++)
        for (size_t i = 0; i < v.nrows; i++)
            if (!strcmp(v.rows[i].id, llama2[k]))
                assert_true(fabs(v.rows[i].error_pct) <= 30.0);
    mp_validation_free(&v);
}

/* The A100's measured eager-decode power (src/infer/power.c) is the median of energy x batch /
 * latency over tests/data/mlenergy_v1_a100_other_models.csv: 29 rows of 14 chat models of the
 * ML.ENERGY v1 A100 table, none of them a validation row. An eager phase draws at least it (at
 * most the TDP); a CUDA-graph phase and a GPU without the measurement keep the activity model. */
static void test_eager_power_point(void **state)
{
    (void)state;
    size_t len = 0;
    char *csv = slurp(MESHPLAN_SOURCE_DIR "/tests/data/mlenergy_v1_a100_other_models.csv", &len);
    assert_non_null(csv);
    double w[64];
    size_t n = 0;
    char *save = NULL;
    for (char *line = strtok_r(csv, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (!strncmp(line, "model,", 6))
            continue;
        /* none of the four validated models (nor their base LLaMA, nor the encoder-decoder T5) */
        assert_null(strstr(line, "vicuna"));
        assert_null(strstr(line, "Llama-2"));
        assert_null(strstr(line, "metaai/llama"));
        assert_null(strstr(line, "t5"));
        char *c1 = strchr(line, ',');
        assert_non_null(c1);
        int batch = 0;
        double resp = 0, lat = 0, energy = 0;
        assert_int_equal(sscanf(c1 + 1, "%d,%lf,%lf,%lf", &batch, &resp, &lat, &energy), 4);
        assert_true(n < 64 && lat > 0 && batch >= 1);
        w[n++] = energy * batch / lat; /* energy is per response: the batch's energy / batch */
    }
    free(csv);
    assert_int_equal(n, 29);
    qsort(w, n, sizeof w[0], cmp_double);
    const mp_gpu *a100 = mp_catalog_gpu(g_cat, "a100-sxm4-40gb");
    const char *src = NULL;
    const double eager = mp_infer_eager_power_w(a100, &src);
    assert_non_null(src);
    assert_true(fabs(eager - w[n / 2]) < 0.005); /* 189.11 W */
    printf("  A100 eager decode: median %.2f W of %zu rows (quartiles %.1f, %.1f W; range %.1f-%.1f W)\n", w[n / 2], n,
           w[(n - 1) / 4], w[3 * (n - 1) / 4], w[0], w[n - 1]);
    /* by hand: 1 GB in 5 ms of kernels (200 GB/s x 64 pJ/B = 12.8 W over active idle 76 W: P_k
     * 88.8 W), 10 ms of dispatch, 5 ms of host work: the activity model gives
     * (88.8 x 0.015 + 76 x 0.005) / 0.020 = 85.6 W, below the measured 189.11 W */
    mp_gpu g = *a100;
    assert_close(mp_infer_phase_power_w(&g, 76.0, 8.0, 0.0, 1e9, 0.005, 0.010, 0.005, MP_DT_FP16), 189.11, 1e-12);
    /* no dispatch window (CUDA graphs): the activity model, (88.8 x 0.005 + 76 x 0.005) / 0.010 */
    assert_close(mp_infer_phase_power_w(&g, 76.0, 8.0, 0.0, 1e9, 0.005, 0.0, 0.005, MP_DT_FP16), 82.4, 1e-12);
    /* above the measurement the activity model stands: 40 GB in 5 ms = 8 TB/s x 64 pJ/B = 512 W,
     * clipped at the 400 W TDP */
    assert_close(mp_infer_phase_power_w(&g, 76.0, 8.0, 0.0, 40e9, 0.005, 0.010, 0.0, MP_DT_FP16), 400.0, 1e-12);
    /* the measurement never lifts a phase above the TDP */
    g.tdp_W = 150.0;
    assert_close(mp_infer_phase_power_w(&g, 76.0, 8.0, 0.0, 1e9, 0.005, 0.010, 0.005, MP_DT_FP16), 150.0, 1e-12);
    /* no measurement: the 80 GB A100 and the H100 keep the activity model */
    assert_true(mp_infer_eager_power_w(mp_catalog_gpu(g_cat, "a100-sxm4-80gb"), NULL) == 0.0);
    assert_true(mp_infer_eager_power_w(mp_catalog_gpu(g_cat, "h100-sxm5-80gb"), NULL) == 0.0);
    assert_true(mp_infer_eager_power_w(NULL, NULL) == 0.0);
    /* the estimator says so in its assumptions */
    mp_infer_result r;
    estimate("llama2-7b", "a100-sxm4-40gb", "engine=hf,cuda_graphs=0,weights=fp16,kv=bf16,batch=1,in=161,out=420", &r);
    int said = 0;
    for (int i = 0; i < r.nassumed; i++)
        said |= strstr(r.assumed[i], "measured 189.1 W") != NULL;
    assert_true(said);
}

/* vLLM's KV pool against its logs: the device memory CUDA reports and the engine's measured
 * non-torch memory (src/infer/device_mem.c), the activation live set of the profile run. */
static void test_vllm_capacity_thresholds(void **state)
{
    (void)state;
    double total = 0, nt = 0;
    const char *src = NULL;
    assert_int_equal(mp_infer_device_memory("vllm", "h100-sxm5-80gb", 0, &total, &nt, &src), 1);
    assert_close(total, 79.22 * 1073741824.0, 1e-12);
    assert_close(nt, 1.79 * 1073741824.0, 1e-12);
    assert_non_null(strstr(src, "10511"));
    assert_int_equal(mp_infer_device_memory("vllm", "h100-sxm5-80gb", 1, &total, &nt, NULL), 1);
    assert_close(nt, 3.58 * 1073741824.0, 1e-12);
    assert_int_equal(mp_infer_device_memory("trtllm", "h100-sxm5-80gb", 0, &total, &nt, NULL), 0);
    assert_int_equal(mp_infer_device_memory("vllm", "b200", 0, &total, &nt, NULL), 0);

    mp_validation v = validate_file(MESHPLAN_SOURCE_DIR "/tests/data/vllm_kv_capacity.csv");
    assert_int_equal(v.nrows, 4);
    for (size_t i = 0; i < v.nrows; i++) {
        printf("    %s %-16s measured %9.2f predicted %9.2f (%+.1f%%)\n", v.rows[i].id, v.rows[i].metric,
               v.rows[i].measured, v.rows[i].predicted, v.rows[i].error_pct);
        /* RTX 3090 rows -2.2, -2.1, -2.8%; the W8A8 Llama 3.1 70B H100 row -5.6% (+22.6% before) */
        assert_true(fabs(v.rows[i].error_pct) <= (strcmp(v.rows[i].id, "vllmlog_005") ? 4.0 : 6.5));
    }
    mp_validation_free(&v);
}

/* The one best-GEMM-rate rule (src/catalog/gemm_rate.c), step by step on a made-up GPU: measured
 * wins; fp8 measured only at bf16 takes bf16's measured share at the fp8 peak; nothing measured
 * gives 0.835 x peak; a dtype without a peak runs at the 16-bit rate. The catalog's MI300X: fp8 at
 * 668.4 / 1307.4 of 2614.9 TFLOP/s = 1336.8 (the roofline, the training energy and the inference
 * power all price it so). */
static void test_best_gemm_rule(void **state)
{
    (void)state;
    mp_gpu g;
    memset(&g, 0, sizeof g);
    g.peak_flops_per_s[MP_DT_BF16] = 1000e12;
    g.peak_flops_per_s[MP_DT_FP8] = 2000e12;
    assert_close(mp_gpu_best_gemm_flops(&g, MP_DT_BF16), 835e12, 1e-12);
    assert_close(mp_gpu_best_gemm_flops(&g, MP_DT_FP8), 1670e12, 1e-12);
    assert_close(mp_gpu_best_gemm_flops(&g, MP_DT_FP32), 835e12, 1e-12); /* no fp32 peak: bf16's rate */
    g.measured_matmul_flops_per_s[MP_DT_BF16] = 600e12;
    assert_close(mp_gpu_best_gemm_flops(&g, MP_DT_BF16), 600e12, 1e-12);
    assert_close(mp_gpu_best_gemm_flops(&g, MP_DT_FP8), 1200e12, 1e-12);
    g.measured_matmul_flops_per_s[MP_DT_FP8] = 1400e12;
    assert_close(mp_gpu_best_gemm_flops(&g, MP_DT_FP8), 1400e12, 1e-12);
    assert_true(mp_gpu_best_gemm_flops(&g, MP_DT_COUNT) == 0.0);
    const mp_gpu *mi = mp_catalog_gpu(g_cat, "mi300x");
    assert_non_null(mi);
    assert_close(mp_gpu_best_gemm_flops(mi, MP_DT_FP8), 2614.9e12 * 668.4 / 1307.4, 1e-9);
    assert_true(mp_infer_best_gemm_flops(mi, MP_DT_FP8) == mp_gpu_best_gemm_flops(mi, MP_DT_FP8));
}

/* The expected longest of n lognormal lengths (src/infer/lengths.c) against closed forms: with no
 * cut, n = 1 is the mean M e^(s^2/2) and n = 2 is 2 M e^(s^2/2) Phi(s / sqrt 2) (the largest of
 * two i.i.d. lognormals); n = 1 with a cut C is M e^(s^2/2) Phi(z - s) + C (1 - Phi(z)),
 * z = ln(C / M) / s (the mean of min(L, C)). */
static double phi(double z) { return 0.5 * erfc(-z / sqrt(2.0)); }

static void test_expected_longest_by_hand(void **state)
{
    (void)state;
    const double m = 250.0, s = 0.865, mean = m * exp(0.5 * s * s);
    assert_close(mp_infer_expected_longest(m, s, 1e9, 1), mean, 1e-9);
    assert_close(mp_infer_expected_longest(m, s, 1e9, 2), 2.0 * mean * phi(s / sqrt(2.0)), 1e-9);
    const double c = 512.0, z = log(c / m) / s;
    assert_close(mp_infer_expected_longest(m, s, c, 1), mean * phi(z - s) + c * (1.0 - phi(z)), 1e-9);
    assert_close(mp_infer_cut_share(m, s, c), 1.0 - phi(z), 1e-12);
    /* more draws never shorten the longest, and it never passes the cut */
    double prev = 0.0;
    for (int64_t n = 1; n <= 64; n *= 2) {
        double x = mp_infer_expected_longest(m, s, c, n);
        assert_true(x > prev && x <= c);
        prev = x;
    }
    assert_true(mp_infer_expected_longest(m, s, c, 1 << 20) > 0.999 * c);
    assert_true(mp_infer_expected_longest(0.0, s, c, 2) == 0.0 && mp_infer_expected_longest(m, s, c, 0) == 0.0);
}

/* Plan key longest: a static batch of 2 decoding 400 steps for responses of mean 210 tokens. The
 * step times and powers are the same as without it (the context moves to in + longest/2); e2e
 * spans longest - 1 decode steps; energy per token divides by the batch's 2 x 210 tokens. */
static void test_static_batch_plan(void **state)
{
    (void)state;
    static const char base[] = "engine=hf,cuda_graphs=0,weights=fp16,kv=bf16,batch=2,in=161,out=210";
    char plan[160];
    mp_infer_result a, b, same;
    estimate("llama2-7b", "a100-sxm4-40gb", base, &a);
    snprintf(plan, sizeof plan, "%s,longest=210", base);
    estimate("llama2-7b", "a100-sxm4-40gb", plan, &same);
    assert_true(same.e2e_s == a.e2e_s && same.energy_j_per_output_token == a.energy_j_per_output_token);
    snprintf(plan, sizeof plan, "%s,longest=400", base);
    estimate("llama2-7b", "a100-sxm4-40gb", plan, &b);
    assert_close(b.e2e_s, b.ttft_s + 399.0 * b.tpot_s, 1e-12);
    assert_close(b.energy_j_per_output_token, b.power_w * b.e2e_s / (2.0 * 210.0), 1e-12);
    assert_close(b.output_tokens_per_s, 2.0 * 210.0 / b.e2e_s, 1e-12);
    assert_true(b.tpot_s >= a.tpot_s && b.e2e_s > 1.8 * a.e2e_s);
    /* longest below out cannot be formed */
    mp_diag d = {0};
    mp_cluster c;
    mp_infer_plan p;
    mp_infer_result r;
    assert_int_equal(mp_cluster_from_catalog(g_cat, "a100-sxm4-40gb", 1, 0, NULL, &c, &d), MP_OK);
    mp_infer_plan_init(&p);
    assert_int_equal(mp_infer_plan_parse("out=210,longest=100", &p, &d), MP_OK);
    assert_int_equal(mp_infer_estimate(mp_catalog_model(g_cat, "llama2-7b"), &c, &p, &r, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "longest=100"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_phase_power_by_hand),
        cmocka_unit_test(test_decode_power_wiring),
        cmocka_unit_test(test_energy_per_token_falls_with_batch),
        cmocka_unit_test(test_mlenergy_thresholds),
        cmocka_unit_test(test_eager_power_point),
        cmocka_unit_test(test_vllm_capacity_thresholds),
        cmocka_unit_test(test_best_gemm_rule),
        cmocka_unit_test(test_expected_longest_by_hand),
        cmocka_unit_test(test_static_batch_plan),
    };
    return cmocka_run_group_tests(tests, catalog_setup, catalog_teardown);
}
