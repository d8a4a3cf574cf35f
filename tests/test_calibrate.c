/* tests/test_calibrate.c — the log parsers on the shipped logs, the link fit on synthetic data
 * with a known latency and efficiency, the half/half check on published sweeps, the GEMM fit,
 * the calibration file and the doctor's ranking. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "meshplan/meshplan.h"

#define LOGS MESHPLAN_SOURCE_DIR "/../shared/configs/logs/"
#define A3MEGA LOGS "nccl_all_reduce_perf_2x8_H100-80GB_gcp-a3mega.txt"
#define TITAN LOGS "torchtitan_pr1884_llama3_8b_flex_4gpu_cp2_fullac.txt"
#define MEGA0 LOGS "megatron_issue756_mixtral8x7b_16xH100_iterations_turn0.txt"
#define COLLS MESHPLAN_VALIDATION_DIR "/collectives.csv"
#define RUNS MESHPLAN_VALIDATION_DIR "/runs.csv"

/* A clone without ../shared beside it has none of the published logs: the tests that read them
 * say so and skip (the rest, on tests/data and hand-made inputs, still run). */
static int shared_absent(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f) {
        fclose(f);
        return 0;
    }
    print_message("# %s absent (the published data of ../shared): skipped\n", path);
    return 1;
}
#define NEED_SHARED(path) do { if (shared_absent(path)) { skip(); return; } } while (0)

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = 0;
    fclose(f);
    *len = (size_t)n;
    return b;
}

static mp_status parse_file(const char *path, mp_log *l, mp_diag *d)
{
    size_t len;
    char *b = slurp(path, &len);
    mp_status st = mp_cal_parse(b, len, path, l, d);
    free(b);
    return st;
}

static mp_status parse_text(const char *text, mp_log *l, mp_diag *d)
{
    return mp_cal_parse(text, strlen(text), "t.log", l, d);
}

static mp_catalog *cat;

static int setup(void **s)
{
    (void)s;
    mp_diag d = {0};
    return mp_catalog_create(&cat, &d) == MP_OK ? 0 : -1;
}

static int teardown(void **s)
{
    (void)s;
    mp_catalog_destroy(cat);
    return 0;
}

/* The GCP A3 Mega sweep as printed: 31 sizes 8 B .. 8 GiB, 16 ranks on 2 hosts, lines 32-62. */
static void test_parse_nccl_log(void **s)
{
    NEED_SHARED(A3MEGA);
    (void)s;
    mp_log l;
    mp_diag d = {0};
    assert_int_equal(parse_file(A3MEGA, &l, &d), MP_OK);
    assert_int_equal(l.kind, MP_LOG_NCCL_TESTS);
    assert_int_equal(l.ntables, 1);
    const mp_nccl_table *t = &l.tables[0];
    assert_int_equal(t->op, MP_COLL_ALL_REDUCE);
    assert_int_equal(t->nranks, 16);
    assert_int_equal(t->nnodes, 2);
    assert_non_null(strstr(t->gpu_name, "H100 80GB HBM3"));
    assert_int_equal(t->nrows, 31);
    assert_int_equal(t->rows[0].line, 32);
    assert_true(t->rows[0].bytes == 8);
    assert_true(fabs(t->rows[0].time_s[0] - 135.8e-6) < 1e-12);
    assert_true(fabs(t->rows[0].time_s[1] - 123.5e-6) < 1e-12);
    const mp_nccl_row *last = &t->rows[30];
    assert_true(last->bytes == 8589934592.0);
    assert_int_equal(last->count, 2147483648LL);
    assert_string_equal(last->type, "float");
    assert_string_equal(last->redop, "sum");
    assert_int_equal(last->root, -1);
    assert_true(fabs(last->busbw_Bps[0] - 338.82e9) < 1e3);
    assert_true(fabs(last->time_s[0] - 47535e-6) < 1e-9);
    mp_log_free(&l);
}

/* Prefixes (mpirun's "[1,0]<stdout>:" tag and a timestamp) are skipped, line numbers kept. */
static void test_parse_nccl_prefixed(void **s)
{
    (void)s;
    const char *txt =
        "[1,0]<stdout>:# Collective test starting: all_gather_perf\n"
        "[1,0]<stdout>:#  Rank  0 Group  0 Pid 1 on node-a device  0 [0x1b] NVIDIA A100-SXM4-80GB\n"
        "[1,0]<stdout>:#  Rank  1 Group  0 Pid 2 on node-b device  0 [0x1b] NVIDIA A100-SXM4-80GB\n"
        "[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
        "[1,0]<stdout>:#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
        "2024-01-01T00:00:00 [1,0]<stdout>:     1048576        131072     float    none      -1    40.0   26.21   13.11      0    39.0   26.89   13.44      0\n"
        "2024-01-01T00:00:01 [1,0]<stdout>:     2097152        262144     float    none      -1    70.0   29.96   14.98      0    69.0   30.39   15.20      0\n";
    mp_log l;
    mp_diag d = {0};
    assert_int_equal(parse_text(txt, &l, &d), MP_OK);
    assert_int_equal(l.tables[0].op, MP_COLL_ALL_GATHER);
    assert_int_equal(l.tables[0].nranks, 2);
    assert_int_equal(l.tables[0].nnodes, 2);
    assert_int_equal(l.tables[0].nrows, 2);
    assert_int_equal(l.tables[0].rows[1].line, 7);
    assert_true(fabs(l.tables[0].rows[1].time_s[0] - 70e-6) < 1e-12);
    mp_log_free(&l);
}

/* An older table layout: redop but no root column, an "error" column printed as a real. */
static void test_parse_nccl_old_layout(void **s)
{
    (void)s;
    const char *txt =
        "$ ./build/all_reduce_perf -b 8 -e 16\n"
        "# nThread 1 nGpus 8 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n"
        "# Using devices\n"
        "#   Rank  0 Pid  1 on host device  0 [0x07] Tesla V100-SXM2-32GB\n"
        "#   Rank  1 Pid  1 on host device  1 [0x0a] Tesla V100-SXM2-32GB\n"
        "#                                                     out-of-place                       in-place\n"
        "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
        "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
        "           8             2   float     sum    11.50    0.00    0.00  0e+00    11.30    0.00    0.00  0e+00\n"
        "          16             4   float     sum    11.60    0.00    0.00  0e+00    11.40    0.00    0.00  0e+00\n";
    mp_log l;
    mp_diag d = {0};
    mp_status st = parse_text(txt, &l, &d);
    if (st != MP_OK)
        fail_msg("%s", d.text);
    assert_int_equal(l.tables[0].nrows, 2);
    assert_string_equal(l.tables[0].rows[1].redop, "sum");
    assert_true(fabs(l.tables[0].rows[1].time_s[1] - 11.4e-6) < 1e-12);
    mp_log_free(&l);
}

static void test_parse_training_logs(void **s)
{
    NEED_SHARED(TITAN);
    (void)s;
    mp_log l;
    mp_diag d = {0};
    assert_int_equal(parse_file(TITAN, &l, &d), MP_OK);
    assert_int_equal(l.kind, MP_LOG_TORCHTITAN);
    assert_int_equal(l.nsteps, 5);
    assert_int_equal(l.steps[4].line, 5);
    assert_int_equal(l.steps[4].step, 10);
    assert_true(l.steps[4].tokens_per_s_per_gpu == 5615); /* "5,615" */
    assert_true(fabs(l.steps[4].mem_gib - 44.84) < 1e-9);
    assert_true(fabs(l.steps[4].mem_frac - 0.4719) < 1e-9);
    assert_true(fabs(l.steps[4].mfu_frac - 0.3288) < 1e-9);
    int f0, f1;
    /* the four step-1 records (one per rank) are warm-up: the steady value is step 10's */
    assert_true(mp_cal_steady(&l, MP_STEP_TOKENS_PER_S, &f0, &f1) == 5615);
    assert_int_equal(f0, 5);
    mp_log_free(&l);

    assert_int_equal(parse_file(MEGA0, &l, &d), MP_OK);
    assert_int_equal(l.kind, MP_LOG_MEGATRON);
    assert_int_equal(l.nsteps, 3);
    assert_true(fabs(l.steps[0].step_s - 9.4964) < 1e-9);
    assert_true(fabs(l.steps[0].tflops_per_gpu - 137.5) < 1e-9);
    assert_int_equal(l.steps[0].global_batch, 128);
    assert_int_equal(l.steps[0].step, 10);
    /* median of 9496.4, 10036.9, 10198.4 ms (the log starts at iteration 10: nothing skipped) */
    assert_true(fabs(mp_cal_steady(&l, MP_STEP_TIME_S, NULL, NULL) - 10.0369) < 1e-9);
    mp_log_free(&l);
}

static void test_parse_megatron_args(void **s)
{
    (void)s;
    const char *txt =
        "  expert_model_parallel_size ...................... 8\n"
        "  global_batch_size ............................... 128\n"
        "  tensor_model_parallel_size ...................... 2\n"
        "  use_distributed_optimizer ....................... True\n"
        "  recompute_granularity ........................... None\n"
        " [2024-03-30 20:02:40] iteration       10/  500000 | elapsed time per iteration (ms): 9496.4 | throughput per GPU (TFLOP/s/GPU): 137.5 |\n";
    mp_log l;
    mp_diag d = {0};
    assert_int_equal(parse_text(txt, &l, &d), MP_OK);
    assert_int_equal(l.args.found, 1);
    assert_int_equal(l.args.first_line, 1);
    assert_int_equal(l.args.ep, 8);
    assert_int_equal(l.args.tp, 2);
    char plan[256];
    assert_int_equal(mp_megatron_args_plan(&l.args, plan, sizeof plan), 5);
    assert_string_equal(plan, "tp=2,ep=8,gb=128,zero=1,recompute=none");
    mp_log_free(&l);
}

/* The published Mixtral arguments excerpt read on its own (doctor/calibrate --config). */
static void test_parse_megatron_args_file(void **s)
{
    NEED_SHARED(MEGA0);
    (void)s;
    size_t len;
    char *b = slurp(LOGS "megatron_issue756_mixtral8x7b_16xH100_args_excerpt.txt", &len);
    mp_megatron_args a;
    mp_diag d = {0};
    assert_int_equal(mp_cal_parse_megatron_args(b, len, "args", &a, &d), MP_OK);
    free(b);
    assert_int_equal(a.ep, 8);
    assert_int_equal(a.gb, 128);
    assert_int_equal(a.hidden, 4096);
    assert_int_equal(a.ffn_hidden, 14336);
    assert_int_equal(a.fp16, 0);
    assert_int_equal(a.fp8, 0);
    assert_string_equal(a.recompute, "none");
    assert_int_equal(mp_cal_parse_megatron_args("no args here\n", 13, "x", &a, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "x:1: expected a printed Megatron-LM arguments block"));
}

/* measure_gpu.py gemm.csv (its DictWriter columns m,n,k,op,dtype,seconds,tflops); a failed
 * measurement ("oom" in seconds) is a row and is skipped. */
static void test_parse_gemm_csv(void **s)
{
    (void)s;
    const char *txt = "m,n,k,op,dtype,seconds,tflops\n"
                      "8192,12288,4096,qkv,bf16,0.001,824.6\n"
                      "8192,4096,4096,proj,bf16,0.0005,549.7\n"
                      "8192,4096,4096,proj,fp8,oom,\n";
    mp_log l;
    mp_diag d = {0};
    assert_int_equal(parse_text(txt, &l, &d), MP_OK);
    assert_int_equal(l.kind, MP_LOG_GEMM_CSV);
    assert_int_equal(l.ngemms, 2);
    assert_int_equal(l.gemms[0].line, 2);
    assert_true(fabs(l.gemms[0].flops_per_s - 2.0 * 8192 * 12288 * 4096 / 0.001) < 1);
    mp_log_free(&l);
    const char *trunc = "m,n,k,op,dtype,seconds,tflops\n8192,4096\n";
    assert_int_equal(parse_text(trunc, &l, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "t.log:2: truncated row"));
    mp_log_free(&l);
}

/* Each failure names the file, the line and what was expected. */
static void expect_bad(const char *txt, const char *needle)
{
    mp_log l;
    mp_diag d = {0};
    assert_int_equal(parse_text(txt, &l, &d), MP_ERR_INPUT);
    if (!strstr(d.text, needle))
        fail_msg("expected \"%s\" in: %s", needle, d.text);
    mp_log_free(&l);
}

static void test_bad_inputs(void **s)
{
    (void)s;
    expect_bad("hello\nworld\n", "t.log:1: expected a log with");
    expect_bad("  global_batch_size ..... 128\n", "t.log:1: expected a log with");
    const char *hdr = "# all_reduce_perf\n#  Rank  0 Group 0 Pid 1 on h device 0 [0] GPU\n"
                      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";
    char b[1024];
    snprintf(b, sizeof b, "%s        1024           256     float     sum      -1    12.0    0.09\n", hdr);
    expect_bad(b, "t.log:4: truncated table: expected 13 columns");
    snprintf(b, sizeof b, "%s# Out of bounds values : 0 OK\n", hdr);
    expect_bad(b, "t.log:4: truncated table: expected rows");
    snprintf(b, sizeof b, "%s        1024           256     float     sum      -1    12ms    0.09   0.1  0  12.0  0.09  0.1  0\n", hdr);
    expect_bad(b, "t.log:4: mixed units");
    expect_bad("step: 2 loss: 1 memory: 3.0GiB(3%) tps: 10\nstep: 3 loss: 1 memory: 3000MiB(3%) tps: 10\n",
               "t.log:2: mixed units: memory in MiB, expected GiB");
    expect_bad("iteration 1/ 10 | elapsed time per iteration (ms): 10.0 |\n"
               "iteration 2/ 10 | elapsed time per iteration (s): 0.01 |\n", "t.log:2: mixed units");
    /* Counts past 2^53 (or not whole) cannot be converted to int64_t safely (C11 6.3.1.4): the
     * value 2^53 + 2 is the first whole double above the threshold. */
    expect_bad("step: 1e30 loss: 1 tps: 10\n", "t.log:1: step: 1e+30: expected a whole step number");
    expect_bad("step: 9007199254740994 loss: 1 tps: 10\n", "t.log:1: step: 9.0072e+15: expected");
    mp_log l;
    mp_diag d = {0};
    assert_int_equal(parse_text("step: 9007199254740992 loss: 1 tps: 10\n", &l, &d), MP_OK);
    assert_true(l.nsteps == 1 && l.steps[0].step == INT64_C(9007199254740992)); /* 2^53 itself */
    mp_log_free(&l);
    expect_bad("step: 2.5 loss: 1 tps: 10\n", "t.log:1: step: 2.5: expected a whole step number");
    expect_bad("iteration 1e300/ 10 | elapsed time per iteration (ms): 10.0 |\n",
               "t.log:1: iteration 1e+300: expected a whole step number");
}

/* Synthetic sweep from coll itself with a known latency and efficiency on the network tier: the
 * fit must recover both (the grid's final step is below 1%). */
static void test_fit_recovers_known(void **s)
{
    (void)s;
    mp_cluster c;
    mp_diag d = {0};
    assert_int_equal(mp_cluster_from_catalog(cat, "h100-sxm5-80gb", 16, 8, NULL, &c, &d), MP_OK);
    mp_cluster truth = c;
    truth.tier[1].latency_s = 37e-6;
    truth.tier[1].efficiency_frac = 0.55;
    mp_nccl_table t = {0};
    mp_nccl_row rows[28];
    t.op = MP_COLL_ALL_REDUCE;
    t.nranks = 16;
    t.nnodes = 2;
    t.rows = rows;
    t.nrows = 28;
    for (int i = 0; i < 28; i++) {
        mp_coll_cost k;
        memset(&rows[i], 0, sizeof rows[i]);
        rows[i].bytes = 64.0 * pow(2, i);
        assert_int_equal(mp_coll_time_among(&truth, MP_COLL_ALL_REDUCE, rows[i].bytes,
                                            (mp_group){16, 1}, MP_ALGO_MASK_NCCL, &k), MP_OK);
        rows[i].time_s[0] = k.total_s;
    }
    mp_cal_link_fit f;
    assert_int_equal(mp_cal_fit_link(&c, &t, 1, 0, &f, &d), MP_OK);
    assert_int_equal(f.tier, 1);
    assert_true(fabs(f.latency_s / 37e-6 - 1) < 0.02);
    assert_true(fabs(f.efficiency_frac / 0.55 - 1) < 0.02);
    assert_true(f.after_err_pct < 0.5);
    assert_true(f.before_err_pct > 10);
}

/* One node of H100 with NVLS: latency, efficiency and the NVLS fraction are all recovered. */
static void test_fit_recovers_nvls(void **s)
{
    (void)s;
    mp_cluster c;
    mp_diag d = {0};
    assert_int_equal(mp_cluster_from_catalog(cat, "h100-sxm5-80gb", 8, 8, NULL, &c, &d), MP_OK);
    assert_true(c.tier[0].in_network_reduction);
    mp_cluster truth = c;
    truth.tier[0].latency_s = 4e-6;
    truth.tier[0].efficiency_frac = 0.7;
    truth.tier[0].in_network_algbw_frac = 0.5;
    mp_nccl_table t = {0};
    mp_nccl_row rows[30];
    t.op = MP_COLL_ALL_REDUCE;
    t.nranks = 8;
    t.nnodes = 1;
    t.rows = rows;
    t.nrows = 30;
    for (int i = 0; i < 30; i++) {
        mp_coll_cost k;
        memset(&rows[i], 0, sizeof rows[i]);
        rows[i].bytes = 64.0 * pow(2, i);
        assert_int_equal(mp_coll_time_among(&truth, MP_COLL_ALL_REDUCE, rows[i].bytes,
                                            (mp_group){8, 1}, MP_ALGO_MASK_NCCL, &k), MP_OK);
        rows[i].time_s[0] = k.total_s;
    }
    mp_cal_link_fit f;
    assert_int_equal(mp_cal_fit_link(&c, &t, 1, 0, &f, &d), MP_OK);
    assert_int_equal(f.tier, 0);
    assert_true(f.nvls_fitted);
    assert_true(fabs(f.in_network_algbw_frac / 0.5 - 1) < 0.02);
    assert_true(fabs(f.latency_s / 4e-6 - 1) < 0.05);
    assert_true(f.after_err_pct < 1.0);
}

/* Half/half on published sweeps: fit on even sizes, predict the odd ones. Measured (docs/
 * calibrate.md): A100 NVLink 3.9%, H100 NVLink 3.9%, 4 x 8 B200 over EFA 2.6%; asserted within the
 * issue's 5% (H100 3.3%). The GCP A3 Mega and 1-node B200 curves are not fitted that well (14.6%,
 * 7.1%); they are asserted to improve on the catalog (A3 Mega) and within 8% (B200), so a
 * regression shows. */
static void test_half_half_published(void **s)
{
    NEED_SHARED(COLLS);
    (void)s;
    mp_log l;
    mp_diag d = {0};
    assert_int_equal(parse_file(COLLS, &l, &d), MP_OK);
    static const struct { const char *label, *gpu, *so; int gpn; double bound; } sys[] = {
        {"azure_nd_a100_v4/all_reduce/8gpus", "a100-sxm4-80gb", NULL, 8, 5.0},
        {"azure_nd_h100_v5/all_reduce/8gpus", "h100-sxm5-80gb", NULL, 8, 5.0},
        {"stas_p6b200_multinode/all_reduce/32gpus", "b200", "efa-v4", 8, 5.0},
        {"stas_p6b200_multinode/all_reduce/8gpus", "b200", NULL, 8, 8.0},
    };
    for (size_t k = 0; k < sizeof sys / sizeof sys[0]; k++) {
        const mp_nccl_table *t = NULL;
        for (size_t i = 0; i < l.ntables; i++)
            if (!strcmp(l.tables[i].label, sys[k].label))
                t = &l.tables[i];
        assert_non_null(t);
        mp_cluster c;
        assert_int_equal(mp_cluster_from_catalog(cat, sys[k].gpu, t->nranks, sys[k].gpn, sys[k].so,
                                                 &c, &d), MP_OK);
        double before, after;
        assert_int_equal(mp_cal_holdout(&c, t, &before, &after, &d), MP_OK);
        printf("half/half %s: %.1f%% -> %.1f%%\n", sys[k].label, before, after);
        assert_true(after <= sys[k].bound);
    }
    mp_log_free(&l);
    assert_int_equal(parse_file(A3MEGA, &l, &d), MP_OK);
    mp_cluster c;
    assert_int_equal(mp_cluster_from_catalog(cat, "h100-sxm5-80gb", 16, 8, NULL, &c, &d), MP_OK);
    double before, after;
    assert_int_equal(mp_cal_holdout(&c, &l.tables[0], &before, &after, &d), MP_OK);
    printf("half/half a3mega: %.1f%% -> %.1f%%\n", before, after);
    assert_true(after < 0.5 * before);
    assert_true(after < 16.0);
    mp_log_free(&l);
}

/* GEMM fit: the fitted fraction reproduces the measured throughput; a measurement no fraction in
 * range can reach is refused. */
static void test_fit_gemm(void **s)
{
    (void)s;
    const mp_model *m = mp_catalog_model(cat, "llama3-8b");
    assert_non_null(m);
    mp_cluster c;
    mp_diag d = {0};
    assert_int_equal(mp_cluster_from_catalog(cat, "h100-sxm-96gb-500w", 4, 0, NULL, &c, &d), MP_OK);
    mp_plan p;
    mp_plan_init_default(&p);
    assert_int_equal(mp_plan_parse("cp=2,zero=3,fsdp=2,mb=1,gb=2,seq=8192,recompute=full", &p, &d), MP_OK);
    assert_int_equal(mp_plan_resolve(&p, m, 4, &d), MP_OK);
    double fitted, before, after;
    assert_int_equal(mp_cal_fit_gemm(m, &c, &p, NULL, 5615, &fitted, &before, &after, &d), MP_OK);
    assert_true(fitted > 0.5 && fitted < 1.2);
    assert_true(fabs(after) < 0.01);
    assert_int_equal(mp_cal_fit_gemm(m, &c, &p, NULL, 1e7, &fitted, &before, &after, &d), MP_ERR_INPUT);

    /* joint fit: one point gives the same value; a second job measured at what fraction 0.6
     * predicts, with the first at what 0.6 predicts too, gives 0.6 */
    mp_cal_train_point pt[2] = {{m, &c, &p, 5615}};
    double joint, med;
    assert_int_equal(mp_cal_fit_gemm_joint(pt, 1, NULL, &joint, &med, &d), MP_OK);
    assert_true(fabs(joint - fitted) < 1e-4);
    assert_true(med < 0.01);
    mp_cluster c8;
    assert_int_equal(mp_cluster_from_catalog(cat, "h100-sxm-96gb-500w", 8, 0, NULL, &c8, &d), MP_OK);
    mp_plan p8;
    mp_plan_init_default(&p8);
    assert_int_equal(mp_plan_parse("zero=3,mb=2,gb=16,seq=8192,recompute=selective", &p8, &d), MP_OK);
    assert_int_equal(mp_plan_resolve(&p8, m, 8, &d), MP_OK);
    mp_estimate_opts o;
    mp_estimate_opts_init(&o);
    o.gemm_sustained_frac = 0.6;
    mp_estimate *e = malloc(sizeof *e);
    assert_int_equal(mp_estimate_plan(m, &c, &p, &o, e, &d), MP_OK);
    pt[0].measured_tps_per_gpu = e->tokens_per_s_per_gpu;
    assert_int_equal(mp_estimate_plan(m, &c8, &p8, &o, e, &d), MP_OK);
    pt[1] = (mp_cal_train_point){m, &c8, &p8, e->tokens_per_s_per_gpu};
    free(e);
    assert_int_equal(mp_cal_fit_gemm_joint(pt, 2, NULL, &joint, &med, &d), MP_OK);
    assert_true(fabs(joint - 0.6) < 1e-3);
    assert_true(med < 0.1);
    assert_int_equal(mp_cal_fit_gemm_joint(pt, 0, NULL, &joint, &med, &d), MP_ERR_INPUT);
}

/* Median |throughput error| of the rows of runs.csv in the given source groups, with opts. */
static double groups_median(const char *const *groups, int ng, const mp_estimate_opts *o)
{
    size_t len;
    char *all = slurp(MESHPLAN_VALIDATION_DIR "/runs.csv", &len);
    char *sel = malloc(len + 1);
    assert_non_null(sel);
    size_t n = 0;
    int first = 1;
    for (char *line = strtok(all, "\n"); line; line = strtok(NULL, "\n"), first = 0) {
        int keep = first;
        for (int g = 0; g < ng && !keep; g++) {
            const char *c = strchr(line, ',');
            keep = c && !strncmp(c + 1, groups[g], strlen(groups[g])) && c[1 + strlen(groups[g])] == ',';
        }
        if (keep) {
            size_t l = strlen(line);
            memcpy(sel + n, line, l);
            sel[n + l] = '\n';
            n += l + 1;
        }
    }
    mp_validation v;
    mp_diag d = {0};
    assert_int_equal(mp_validate_csv(cat, sel, n, "runs.csv", o, &v, &d), MP_OK);
    mp_val_stats st;
    mp_validation_stats(&v, MP_VAL_THROUGHPUT, NULL, &st);
    assert_int_equal(st.n, 15);
    mp_validation_free(&v);
    free(sel);
    free(all);
    return st.median_abs_error_pct;
}

/* GEMM efficiency fitted on Megatron issue 756 turn 1 (Mixtral on 16 H100, Megatron-Core; the
 * plan keys the published arguments omit as in docs/calibrate.md), evaluated on the other
 * Megatron-Core H100 runs of runs.csv (nemo2407_h100, mbridge2511_h100; none is the fitted log).
 * The log's plan names its stack (stack=megatron-core), so the fit is relative to that stack's
 * profile. Measured 12.2% -> 6.8% median before the stack profiles (issue 17); with them the
 * runs started at 5.6% (their profiles' overlaps and fitted fractions do much of what the log's
 * fit did) and the fit brought them to 3.1%; since the element-wise backward is counted kernel by
 * kernel and megatron-core refitted (docs/stacks.md) they start at 4.1% and the fit brings them
 * to 3.3%; asserted: better by at least half a point and under 3.5%. */
static void test_stack_fit_improves_other_runs(void **s)
{
    NEED_SHARED(RUNS);
    (void)s;
    mp_log l;
    mp_diag d = {0};
    assert_int_equal(parse_file(LOGS "megatron_issue756_mixtral8x7b_16xH100_iterations_turn1.txt",
                                &l, &d), MP_OK);
    double step = mp_cal_steady(&l, MP_STEP_TIME_S, NULL, NULL);
    mp_log_free(&l);
    const mp_model *m = mp_catalog_model(cat, "mixtral-8x7b");
    assert_non_null(m);
    mp_cluster c;
    assert_int_equal(mp_cluster_from_catalog(cat, "h100-sxm5-80gb", 16, 0, NULL, &c, &d), MP_OK);
    mp_plan p;
    mp_plan_init_default(&p);
    assert_int_equal(mp_plan_parse("tp=1,pp=2,ep=8,mb=1,gb=128,seq=4096,zero=1,recompute=none,stack=megatron-core",
                                   &p, &d), MP_OK);
    assert_int_equal(mp_plan_resolve(&p, m, 16, &d), MP_OK);
    double fitted, before, after;
    assert_int_equal(mp_cal_fit_gemm(m, &c, &p, NULL, 128.0 * 4096 / step / 16, &fitted, &before,
                                     &after, &d), MP_OK);
    mp_estimate_opts o0, o1;
    mp_estimate_opts_init(&o0);
    o1 = o0;
    o1.gemm_sustained_frac = fitted;
    static const char *const groups[] = {"nemo2407_h100", "mbridge2511_h100"};
    double b = groups_median(groups, 2, &o0), a = groups_median(groups, 2, &o1);
    printf("stack fit %.3f: Megatron-Core H100 runs %.1f%% -> %.1f%%\n", fitted, b, a);
    assert_true(a < b - 0.5 && a < 3.5);
}

static void test_calibration_file(void **s)
{
    (void)s;
    const char *js = "{\"constants\": [{\"name\": \"tier_efficiency_frac\", \"link\": \"ib-ndr-400\", "
                     "\"tier\": 1, \"gpu\": \"h100-sxm5-80gb\", \"value\": 0.4},"
                     "{\"name\": \"gemm_sustained_frac\", \"gpu\": \"h100-sxm5-80gb\", \"value\": 0.7}]}";
    mp_calibration cal;
    mp_diag d = {0};
    assert_int_equal(mp_cal_read_json(js, strlen(js), "c.json", &cal, &d), MP_OK);
    assert_int_equal(cal.n, 2);
    mp_cluster c;
    assert_int_equal(mp_cluster_from_catalog(cat, "h100-sxm5-80gb", 16, 8, NULL, &c, &d), MP_OK);
    assert_int_equal(mp_cal_apply_cluster(&cal, &c), 1);
    assert_true(c.tier[1].efficiency_frac == 0.4);
    mp_estimate_opts o;
    mp_estimate_opts_init(&o);
    assert_int_equal(mp_cal_apply_opts(&cal, "h100-sxm5-80gb", &o), 1);
    assert_true(o.gemm_sustained_frac == 0.7);
    /* another GPU: nothing applies */
    mp_estimate_opts_init(&o);
    assert_int_equal(mp_cal_apply_opts(&cal, "b200", &o), 0);
    assert_true(o.gemm_sustained_frac == 0.85);
    const char *bad = "{\"constants\": [{\"name\": \"tier_efficiency_frac\", \"link\": \"x\", \"tier\": 1, \"value\": 3}]}";
    mp_diag_clear(&d);
    assert_int_equal(mp_cal_read_json(bad, strlen(bad), "c.json", &cal, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "constants[0].value = 3"));
}

/* Doctor: a slow DP reduction on the network is ranked first in a communication-heavy step; a step within 10% is "as predicted". */
static void test_doctor_ranks(void **s)
{
    (void)s;
    mp_estimate *e = calloc(1, sizeof *e);
    assert_non_null(e);
    mp_cluster c;
    mp_diag d = {0};
    assert_int_equal(mp_cluster_from_catalog(cat, "h100-sxm5-80gb", 16, 8, NULL, &c, &d), MP_OK);
    mp_plan p;
    mp_plan_init_default(&p);
    const mp_model *m = mp_catalog_model(cat, "llama3-8b");
    assert_int_equal(mp_plan_parse("mb=1,gb=16,seq=4096", &p, &d), MP_OK);
    assert_int_equal(mp_plan_resolve(&p, m, 16, &d), MP_OK);
    e->step_s = 1.0;
    e->time.compute = 0.3; /* a communication-heavy step: DP k = 1.4/0.9, score 3.2; compute
                            * k = 0.8/0.3, score 6.6 */
    e->time.dp_comm_exposed = 0.7;
    e->time.dp_comm_total = 0.9;
    e->dp_tier = 1;
    mp_doctor_report r;
    assert_int_equal(mp_doctor(&c, &p, e, 1.5, 0, &r, &d), MP_OK);
    assert_string_equal(r.item[0].part, "dp_comm");
    assert_non_null(strstr(r.item[0].check, "NCCL_IB_HCA"));
    /* logged memory at 97% of capacity: 3% headroom scores 0.6, below DP's 3.2 */
    assert_int_equal(mp_doctor(&c, &p, e, 1.5, 0.97, &r, &d), MP_OK);
    assert_string_equal(r.item[0].part, "memory");
    assert_true(fabs(r.item[0].score - 0.6) < 1e-9);
    assert_string_equal(r.item[1].part, "dp_comm");
    assert_int_equal(mp_doctor(&c, &p, e, 1.05, 0, &r, &d), MP_OK);
    assert_non_null(strstr(r.verdict, "as predicted"));
    assert_int_equal(mp_doctor(&c, &p, e, 0, 0, &r, &d), MP_ERR_INPUT);
    free(e);
}

/* Property: any mutation of a shipped log (bytes replaced, inserted, deleted; the text cut) parses
 * or fails with MP_ERR_INPUT / MP_ERR_RANGE and a message, never otherwise (under ASan in CI:
 * never out of bounds). A fixed-seed xorshift keeps it reproducible; 1500 mutants per log. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void test_mutated_logs(void **s)
{
    NEED_SHARED(A3MEGA);
    (void)s;
    static const char *files[] = {A3MEGA, TITAN, MEGA0,
                                  LOGS "megatron_issue756_mixtral8x7b_16xH100_args_excerpt.txt"};
    static const char alpha[] = "0123456789 .,#:()%GMiBsu\n-_|[]abcdefghijklmnopqrstuvwxyz/";
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        size_t n;
        char *src = slurp(files[f], &n);
        char *b = malloc(n + 64);
        assert_non_null(b);
        for (int it = 0; it < 1500; it++) {
            memcpy(b, src, n);
            size_t len = n;
            for (int k = 1 + (int)(rnd() % 6); k > 0; k--) {
                size_t pos = len ? rnd() % len : 0;
                char ch = alpha[rnd() % (sizeof alpha - 1)];
                switch (rnd() % 4) {
                case 0: if (len) b[pos] = ch; break;
                case 1: len = pos; break;
                case 2: if (len + 1 < n + 64) { memmove(b + pos + 1, b + pos, len - pos); b[pos] = ch; len++; } break;
                default: if (len) { memmove(b + pos, b + pos + 1, len - pos - 1); len--; } break;
                }
            }
            mp_log l;
            mp_diag d = {0};
            mp_status st = mp_cal_parse(b, len, "m.log", &l, &d);
            assert_true(st == MP_OK || st == MP_ERR_INPUT || st == MP_ERR_RANGE);
            assert_true((st == MP_OK) == (d.count == 0));
            if (st == MP_OK)
                assert_true(l.ntables + l.nsteps + l.ngemms > 0);
            mp_log_free(&l);
        }
        free(b);
        free(src);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_nccl_log),       cmocka_unit_test(test_parse_nccl_prefixed),
        cmocka_unit_test(test_parse_nccl_old_layout),
        cmocka_unit_test(test_parse_training_logs),  cmocka_unit_test(test_parse_megatron_args),
        cmocka_unit_test(test_parse_gemm_csv),
        cmocka_unit_test(test_parse_megatron_args_file),
        cmocka_unit_test(test_bad_inputs),           cmocka_unit_test(test_fit_recovers_known),
        cmocka_unit_test(test_fit_recovers_nvls),
        cmocka_unit_test(test_half_half_published),  cmocka_unit_test(test_fit_gemm),
        cmocka_unit_test(test_stack_fit_improves_other_runs),
        cmocka_unit_test(test_calibration_file),     cmocka_unit_test(test_doctor_ranks),
        cmocka_unit_test(test_mutated_logs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
