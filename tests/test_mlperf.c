/* tests/test_mlperf.c — the MLPerf Inference v4.1 rows of validate (issues 20 and 21):
 *   - the built-in length samples of the OpenOrca and Mixtral-mix datasets (src/validate/
 *     mlperf_lengths.c, embedded from data/lengths/NAME.csv) parse to the files' pairs, their means
 *     the ones the defaults table states, and the Mixtral sample's reference outputs within 5% of
 *     the 144.84 tokens per sample of its MLPerf accuracy target (a check of the sample);
 *   - a row naming the dataset without an input length gets the sample's mean, said in
 *     `assumed`, and a server row draws its lengths from the sample (said too);
 *   - the mlperf_v4.1 group of ../shared/validation/inference/infer_runs.csv: medians per kind
 *     (throughput, latency means, latency p99) printed and held at the figures measured when
 *     this was written (docs/infer.md "MLPerf"), so that a regression fails. */
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
#include "meshplan/serve.h"
#include "validate/validate_internal.h"

static void check_sample(const char *dataset, const char *csv_path, double in_mean)
{
    mp_val_lengths t;
    assert_int_equal(mp_val_dataset_lengths(dataset, &t), 1);
    size_t len = 0;
    char *text = slurp(csv_path, &len);
    assert_non_null(text);
    int64_t *in = NULL, *out = NULL;
    size_t n = 0;
    mp_diag d = {0};
    assert_int_equal(mp_serve_csv_parse(text, len, csv_path, &in, &out, NULL, &n, &d), MP_OK);
    assert_int_equal(n, t.n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(in[i], t.in[i]);
        assert_int_equal(out[i], t.out[i]);
    }
    printf("%s: %zu pairs, mean input %.1f, mean reference output %.1f tokens\n", dataset, t.n, t.in_mean, t.out_mean);
    assert_true(fabs(t.in_mean - in_mean) < 0.05);
    free(in);
    free(out);
    free(text);
}

static void test_length_samples(void **state)
{
    (void)state;
    check_sample("mlperf_openorca", MESHPLAN_SOURCE_DIR "/data/lengths/mlperf_openorca.csv", 223.9);
    check_sample("mlperf_mixtral_openorca_gsm8k_mbxp", MESHPLAN_SOURCE_DIR "/data/lengths/mlperf_mixtral_openorca_gsm8k_mbxp.csv", 403.2);
    mp_val_lengths t;
    assert_int_equal(mp_val_dataset_lengths("mlperf_mixtral_openorca_gsm8k_mbxp", &t), 1);
    /* mlcommons/inference language/mixtral-8x7b/README.md: tokens_per_sample 144.84 */
    assert_true(fabs(t.out_mean / 144.84 - 1.0) < 0.05);
    assert_int_equal(mp_val_dataset_lengths("sharegpt", &t), 0);
    assert_int_equal(mp_val_dataset_lengths(NULL, &t), 0);
}

static mp_validation validate_string(const char *csv)
{
    mp_validation v;
    memset(&v, 0, sizeof v);
    mp_diag d = {0};
    if (mp_validate_csv(g_cat, csv, strlen(csv), "inline", NULL, &v, &d) != MP_OK)
        fail_msg("inline: %s", d.text);
    return v;
}

static const mp_val_row *row_of(const mp_validation *v, const char *id)
{
    for (size_t i = 0; i < v->nrows; i++)
        if (!strcmp(v->rows[i].id, id))
            return &v->rows[i];
    return NULL;
}

static void test_defaults_stated(void **state)
{
    (void)state;
    static const char csv[] =
        "id,source_group,model,hf_repo,gpu,num_gpus,tp,pp,ep,dp,framework,framework_version,weight_dtype,kv_dtype,"
        "input_len,output_len,length_dist,scenario,batch,request_rate_per_s,latency_slo,metric,value,quality,notes,source\n"
        "off,g,llama2-70b,,h200-sxm-141gb,8,,,,,mlperf-nvidia,,fp8,,,291,dataset:mlperf_openorca,offline,,,,"
        "output_tokens_per_s,31302.7,verify,,x\n"
        "srv,g,mixtral-8x7b,,h100-sxm5-80gb,8,,,,,mlperf-nvidia,,fp8,,,146,dataset:mlperf_mixtral_openorca_gsm8k_mbxp,"
        "server,,348.06,\"TTFT p99 2 s, TPOT p99 200 ms\",requests_per_s,348.06,verify,,x\n"
        "gen,g,llama2-70b,,h200-sxm-141gb,8,,,,,mlperf-nvidia,,fp8,,,291,dataset:nosuch,offline,,,,"
        "output_tokens_per_s,31302.7,verify,,x\n"
        "amd,g,llama2-70b,,mi300x,8,,,,,mlperf-amd,,fp8,,,293,dataset:mlperf_openorca,server,,71.74,"
        "\"TTFT p99 2 s, TPOT p99 200 ms\",tpot_mean_s,0.1431,verify,,"
        "https://github.com/mlcommons/inference_results_v4.1/tree/x/closed/AMD/results/8xMI300X_2xEPYC-9374F/"
        "llama2-70b-99/Server/performance/run_1/mlperf_log_summary.txt\n";
    mp_validation v = validate_string(csv);
    const mp_val_row *off = row_of(&v, "off"), *srv = row_of(&v, "srv"), *gen = row_of(&v, "gen");
    const mp_val_row *amd = row_of(&v, "amd");
    if (!off || !srv || !gen || !amd)
        fail_msg("inline rows not all predicted");
    printf("amd: %s\n", amd->assumed);
    /* the submission table of validate_serve.c by the row's source: AMD's scheduled 73.66/s (not
     * the row's completed 71.74), its 600 s run, harness caps, fp8 KV and V0 scheduling; a row
     * with another source ("x") keeps the defaults */
    assert_non_null(strstr(amd->assumed, "rate 73.66/s"));
    assert_non_null(strstr(amd->assumed, "submission: 600 s run, max_seqs 1024, chunk 49152, kv fp8, prefill_first"));
    assert_null(strstr(srv->assumed, "submission:"));
    printf("off: %s\nsrv: %s\n", off->assumed, srv->assumed);
    assert_non_null(strstr(off->assumed, "in=224 (mean of dataset mlperf_openorca's length sample)"));
    assert_non_null(strstr(srv->assumed, "in=403 (mean of dataset mlperf_mixtral_openorca_gsm8k_mbxp's length sample)"));
    assert_non_null(strstr(srv->assumed, "lengths from the dataset's sample, out scaled"));
    assert_non_null(strstr(gen->assumed, "in=1024 (generic: no published mean for nosuch)"));
    /* the server row at a rate the simulated system meets: loadgen's rate over 600 s, within the
     * drain of the scheduled 348.06/s */
    assert_true(srv->predicted > 0.97 * 348.06 && srv->predicted <= 348.06 * 1.02);
    mp_validation_free(&v);
}

static double median(double *x, size_t n)
{
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && x[j - 1] > x[j]; j--) {
            double t = x[j];
            x[j] = x[j - 1];
            x[j - 1] = t;
        }
    return n == 0 ? 0.0 : n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

static void test_mlperf_figures(void **state)
{
    (void)state;
    size_t len = 0;
    char *csv = slurp(MESHPLAN_VALIDATION_DIR "/inference/infer_runs.csv", &len);
    if (!csv) {
        printf("../shared/validation/inference/infer_runs.csv absent: skipped\n");
        return;
    }
    mp_validation v;
    memset(&v, 0, sizeof v);
    mp_diag d = {0};
    assert_int_equal(mp_validate_csv(g_cat, csv, len, "infer_runs.csv", NULL, &v, &d), MP_OK);
    free(csv);
    double e[3][64], all[64], mx = 0;
    size_t n[3] = {0, 0, 0}, na = 0;
    static const char *const kind[3] = {"throughput", "latency mean", "latency p99"};
    for (size_t i = 0; i < v.nrows; i++) {
        const mp_val_row *r = &v.rows[i];
        if (strcmp(r->source_group, "mlperf_v4.1") || na >= 64)
            continue;
        int k = strstr(r->metric, "p99") ? 2 : (strstr(r->metric, "ttft") || strstr(r->metric, "tpot")) ? 1 : 0;
        double a = fabs(r->error_pct);
        e[k][n[k]++] = a;
        all[na++] = a;
        mx = fmax(mx, a);
    }
    assert_int_equal(na, 30); /* every mlperf_v4.1 row is stated */
    double med[3];
    for (int k = 0; k < 3; k++) {
        med[k] = median(e[k], n[k]);
        printf("mlperf_v4.1 %-13s n %2zu  median |error| %5.1f%%\n", kind[k], n[k], med[k]);
    }
    double ma = median(all, na);
    printf("mlperf_v4.1 all           n %2zu  median |error| %5.1f%%  max %5.1f%%\n", na, ma, mx);
    /* as measured at this commit (docs/infer.md "MLPerf v4.1"): throughput 5.2, latency mean
     * 32.0, p99 36.9, all 12.4, max 86.3 (MI300X TTFT mean) with the per-submission settings of
     * validate_serve.c (before them: 5.2, 43.6, 52.4, 15.1, 81.9; before the GEMM overlap rule and
     * the 600 s Server runs: 15.9, 77.8, 80.1, 61.4, 91.4; with the generic 1024-token input: 39.5
     * median, 8460 max). The latency bounds were 48 and 57, the overall median's 17 */
    assert_true(med[0] <= 7.0);
    assert_true(med[1] <= 34.0 && med[2] <= 39.0);
    assert_true(ma <= 14.0 && mx <= 90.0);
    mp_validation_free(&v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_length_samples),
        cmocka_unit_test(test_defaults_stated),
        cmocka_unit_test(test_mlperf_figures),
    };
    return cmocka_run_group_tests(tests, catalog_setup, catalog_teardown);
}
