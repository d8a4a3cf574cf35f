/* tests/test_limits.c — sizes far past any real job give finite answers or a clear
 * "out of range" error, never garbage (issue 8 "Limits"): a 10^15-parameter model, 10^6 GPUs,
 * the largest plan values the parser takes, and every cap on a growable buffer (plan string,
 * diagnostics, catalog entries, CSV rows, model size).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"

#include "meshplan/meshplan.h"

static mp_estimate g_e; /* large: off the stack */

static void assert_diag_has(const mp_diag *d, const char *word)
{
    if (!strstr(d->text, word))
        fail_msg("diag does not mention \"%s\":\n%s", word, d->text);
}

/* Every figure of an estimate finite and >= 0, and its JSON report parses. */
static void assert_all_finite(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                              const mp_estimate *e)
{
    const double v[] = {e->step_s, e->tokens_per_s, e->tokens_per_s_per_gpu, e->mfu, e->hfu,
                        e->model_tflops_per_gpu, e->hardware_tflops_per_gpu, e->memory.total,
                        e->memory.weights, e->memory.activations, e->time.compute,
                        e->time.pp_bubble, e->time.dp_comm_exposed, e->time.dp_comm_total,
                        e->model_flops_per_step, e->tokens_per_step};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        if (!isfinite(v[i]) || v[i] < 0)
            fail_msg("figure %zu = %g", i, v[i]);
    char *js = mp_report_estimate_json(m, c, p, e);
    assert_non_null(js);
    assert_non_null(strstr(js, "\"step_s\""));
    assert_null(strstr(js, "nan"));
    assert_null(strstr(js, "inf\""));
    free(js);
}

/* A dense model of about 1.0e15 parameters: 1440 layers of hidden 262144 with a 4h FFN and GQA
 * (256 KV heads of 128): per layer 2h^2 (Q, O) + 2*h*(256*128) (K, V) + 2*h*4h (FFN)
 * = 1.374e11 + 1.718e10 + 5.498e11 = 7.044e11 (+ norms), x 1440 = 1.0143e15, + embeddings
 * 2 * 128000 * 262144 = 6.7e10: 1.0144e15. */
static void huge_model(mp_model *m)
{
    memset(m, 0, sizeof *m);
    strcpy(m->key, "huge-1e15");
    m->layers = 1440;
    m->hidden = 262144;
    m->heads = 2048;
    m->kv_heads = 256;
    m->head_dim = 128;
    m->ffn_hidden = 4 * 262144;
    m->vocab = 128000;
    m->vocab_pad_multiple = 1;
    m->seq_len = 8192;
    m->rmsnorm = 1;
    m->position = MP_POS_ROPE;
}

static void test_1e15_params_on_1e6_gpus(void **state)
{
    (void)state;
    mp_model m;
    huge_model(&m);
    mp_diag d = {0};
    assert_int_equal(mp_model_check(&m, &d), MP_OK);
    mp_param_count pc;
    mp_model_params(&m, 8, &pc);
    /* 64-bit counts: exact integers far above 2^32, equal to the double-precision estimate. */
    assert_true(pc.total > ((int64_t)1 << 49));
    assert_close((double)pc.total, 1.0144e15, 1e-3);

    /* 10^6 H100 = 125,000 DGX nodes. The degrees must multiply to 10^6 = 2^6 * 5^6: tp 8,
     * pp 125 (an uneven split: 11 or 12 layers a stage), dp 1000; or pp 25 with cp 5. */
    mp_cluster c;
    assert_int_equal(mp_cluster_from_catalog(g_cat, "h100-sxm5-80gb", 1000000, 0, NULL, &c, &d), MP_OK);
    static const char *const plans[] = {
        "tp=8,pp=125,mb=1,gb=8000,zero=1,recompute=full",
        "tp=8,pp=125,vpp=4,mb=1,gb=8000,zero=3,recompute=selective,precision=fp8",
        "tp=8,pp=25,cp=5,seq=8190,mb=1,gb=8000,zero=2",
    };
    for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++) {
        mp_plan p;
        mp_plan_init_default(&p);
        mp_diag_clear(&d);
        assert_int_equal(mp_plan_parse(plans[i], &p, &d), MP_OK);
        mp_status st = mp_plan_resolve(&p, &m, 1000000, &d);
        if (st != MP_OK)
            fail_msg("%s: %s", plans[i], d.text);
        st = mp_estimate_plan(&m, &c, &p, NULL, &g_e, &d);
        if (st != MP_OK)
            fail_msg("%s: %s", plans[i], d.text);
        assert_all_finite(&m, &c, &p, &g_e);
        /* Model FLOPs per step: about 6 N tokens (Kaplan et al. 2020) plus attention. */
        double tokens = 8000.0 * (double)p.seq;
        assert_true(g_e.model_flops_per_step >= 6.0 * 1.0e15 * tokens);
        assert_true(g_e.model_flops_per_step <= 6.0 * 1.2e15 * tokens);
    }
}

static void test_1e6_gpus_small_model(void **state)
{
    (void)state;
    const mp_model *m = mp_catalog_model(g_cat, "llama3-8b");
    assert_non_null(m);
    mp_cluster c;
    mp_diag d = {0};
    assert_int_equal(mp_cluster_from_catalog(g_cat, "b200", 1000000, 0, NULL, &c, &d), MP_OK);
    mp_plan p;
    mp_plan_init_default(&p);
    assert_int_equal(mp_plan_parse("mb=1,zero=3", &p, &d), MP_OK); /* dp = 10^6, gb = 10^6 */
    assert_int_equal(mp_plan_resolve(&p, m, 1000000, &d), MP_OK);
    assert_int_equal(p.dp, 1000000);
    assert_int_equal(p.gb, 1000000);
    assert_int_equal(mp_estimate_plan(m, &c, &p, NULL, &g_e, &d), MP_OK);
    assert_all_finite(m, &c, &p, &g_e);
}

/* The largest values the parser accepts still give an answer: 2^24 GPUs (tp 8, pp 2, cp 1024,
 * dp 1024), seq 2^26 (65,536 tokens per CP rank), gb 2^30 (2^20 micro-batches per DP rank). */
static void test_parser_maxima(void **state)
{
    (void)state;
    const mp_model *m = mp_catalog_model(g_cat, "llama3-405b");
    assert_non_null(m);
    const int64_t n = (int64_t)1 << 24;
    mp_cluster c;
    mp_diag d = {0};
    assert_int_equal(mp_cluster_from_catalog(g_cat, "h100-sxm5-80gb", n, 0, NULL, &c, &d), MP_OK);
    mp_plan p;
    mp_plan_init_default(&p);
    assert_int_equal(mp_plan_parse("tp=8,pp=2,cp=1024,seq=67108864,gb=1073741824,zero=3", &p, &d),
                     MP_OK);
    if (mp_plan_resolve(&p, m, n, &d) != MP_OK)
        fail_msg("%s", d.text);
    assert_int_equal(p.dp, 1024);
    assert_int_equal(mp_estimate_plan(m, &c, &p, NULL, &g_e, &d), MP_OK);
    assert_int_equal(g_e.microbatches, 1 << 20);
    assert_false(g_e.feasible); /* 2^26-token sequences do not fit, but the answer is finite */
    assert_all_finite(m, &c, &p, &g_e);
}

/* Past the maxima: a clear error naming the value and the range, never a wrapped number. */
static void test_out_of_range_errors(void **state)
{
    (void)state;
    mp_diag d = {0};
    mp_cluster c;
    assert_int_equal(mp_cluster_from_catalog(g_cat, "h100-sxm5-80gb", ((int64_t)1 << 24) + 8, 0,
                                             NULL, &c, &d), MP_ERR_INPUT);
    assert_diag_has(&d, "gpus = 16777224: expected an integer in [1, 2^24]");

    const mp_model *m = mp_catalog_model(g_cat, "llama2-7b");
    mp_plan p;
    mp_plan_init_default(&p);
    mp_diag_clear(&d);
    assert_int_equal(mp_plan_resolve(&p, m, ((int64_t)1 << 24) + 8, &d), MP_ERR_INPUT);
    assert_diag_has(&d, "gpus = 16777224");

    /* Degrees whose product overflows int64 (2^24 each): refused, the product shown. */
    mp_plan_init_default(&p);
    mp_diag_clear(&d);
    assert_int_equal(mp_plan_parse("tp=16777216,pp=16777216,cp=16777216,dp=16777216", &p, &d), MP_OK);
    assert_int_equal(mp_plan_resolve(&p, m, 1024, &d), MP_ERR_INPUT);
    assert_diag_has(&d, "tp*pp*cp*dp = 16777216*16777216*16777216*16777216 = 7.923e+28: expected the "
                        "GPU count 1024");

    /* A derived global batch past 2^30 (dp 2^24 x mb 2^7). */
    mp_plan_init_default(&p);
    mp_diag_clear(&d);
    assert_int_equal(mp_plan_parse("mb=128", &p, &d), MP_OK);
    assert_int_equal(mp_plan_resolve(&p, m, (int64_t)1 << 24, &d), MP_ERR_INPUT);
    assert_diag_has(&d, "plan.gb = dp*mb = 16777216*128 = 2147483648 (derived): expected at most 2^30");

    /* A model past 10^18 parameters (hidden 2^30, 2^10 layers: ~1.3e22). */
    mp_model big;
    memset(&big, 0, sizeof big);
    strcpy(big.key, "too-big");
    big.layers = 1024;
    big.hidden = (int64_t)1 << 30;
    big.heads = 1024;
    big.kv_heads = 1024;
    big.head_dim = (int64_t)1 << 20;
    big.ffn_hidden = (int64_t)1 << 32;
    big.vocab = 32000;
    big.vocab_pad_multiple = 1;
    big.seq_len = 2048;
    mp_diag_clear(&d);
    assert_int_equal(mp_model_check(&big, &d), MP_ERR_INPUT);
    assert_diag_has(&d, "too-big: layers 1024, hidden 1073741824");
    assert_diag_has(&d, "parameters: expected at most 1e18");

    /* More layers than an int holds per stage (fuzz_model_json found 1.8e11 layers of width 24:
     * 1.4e15 parameters, within 1e18, printed as -1305424330 layers per stage). */
    big.layers = ((int64_t)1 << 24) + 1;
    big.hidden = 24;
    big.heads = 8;
    big.kv_heads = 8;
    big.head_dim = 3;
    big.ffn_hidden = 96;
    mp_diag_clear(&d);
    assert_int_equal(mp_model_check(&big, &d), MP_ERR_INPUT);
    assert_diag_has(&d, "too-big.layers = 16777217: expected at most 2^24 (16777216)");
    big.layers = (int64_t)1 << 24;
    mp_diag_clear(&d);
    assert_int_equal(mp_model_check(&big, &d), MP_OK);
}

/* Every growable buffer has a cap, and hitting it is an error, not a truncated answer. */
static void test_buffer_caps(void **state)
{
    (void)state;
    /* Plan string: at most 4096 characters. */
    char *s = malloc(5000);
    assert_non_null(s);
    memset(s, ' ', 4097);
    memcpy(s, "tp=8", 4);
    s[4097] = '\0';
    mp_plan p;
    mp_plan_init_default(&p);
    mp_diag d = {0};
    assert_int_equal(mp_plan_parse(s, &p, &d), MP_ERR_INPUT);
    assert_diag_has(&d, "plan: 4097 characters: expected at most 4096");
    s[4096] = '\0';
    mp_diag_clear(&d);
    assert_int_equal(mp_plan_parse(s, &p, &d), MP_OK);
    free(s);

    /* Diagnostics: capped at MP_DIAG_CAP bytes, marked "...", every message counted. */
    mp_diag_clear(&d);
    for (int i = 0; i < 10000; i++)
        mp_diag_add(&d, "message %d: some text naming a field and a value", i);
    assert_int_equal(d.count, 10000);
    assert_true(d.len == MP_DIAG_CAP - 1);
    assert_int_equal(strlen(d.text), d.len);
    assert_string_equal(d.text + d.len - 3, "...");

    /* Catalog: at most MP_CATALOG_CAP entries of a kind; past it MP_ERR_RANGE, unchanged. */
    size_t have = mp_catalog_gpu_count(g_cat);
    size_t add = MP_CATALOG_CAP - have + 1;
    size_t cap = 64 + add * 160;
    char *js = malloc(cap);
    assert_non_null(js);
    size_t n = (size_t)snprintf(js, cap, "{\"gpus\": [");
    for (size_t i = 0; i < add; i++)
        n += (size_t)snprintf(js + n, cap - n,
                              "%s{\"key\": \"g%zu\", \"memory_bytes\": 8e10, \"mem_bw_Bps\": 3e12, "
                              "\"peak_flops_per_s\": {\"bf16\": 1e15}, \"source\": \"test\"}",
                              i ? "," : "", i);
    n += (size_t)snprintf(js + n, cap - n, "]}");
    assert_true(n < cap);
    mp_catalog *cat = NULL;
    mp_diag_clear(&d);
    assert_int_equal(mp_catalog_create(&cat, &d), MP_OK);
    assert_int_equal(mp_catalog_merge_json(cat, js, n, "many.json", &d), MP_ERR_RANGE);
    assert_diag_has(&d, "many.json: more than 512 gpus entries");
    assert_int_equal(mp_catalog_gpu_count(cat), have);
    mp_catalog_destroy(cat);
    free(js);

    /* Validation CSV: at most MP_VALIDATE_MAX_ROWS data rows; past it MP_ERR_RANGE. */
    const char *hdr = "id,layers,hidden,heads,ffn_hidden,vocab,seq_len,gpu,num_gpus,tp,pp,global_batch\n";
    size_t rows = MP_VALIDATE_MAX_ROWS + 1, clen = strlen(hdr) + 2 * rows;
    char *csv = malloc(clen + 1);
    assert_non_null(csv);
    memcpy(csv, hdr, strlen(hdr));
    for (size_t i = 0; i < rows; i++)
        memcpy(csv + strlen(hdr) + 2 * i, "x\n", 2);
    csv[clen] = '\0';
    mp_validation v;
    mp_diag_clear(&d);
    assert_int_equal(mp_validate_csv(g_cat, csv, clen, "rows.csv", NULL, &v, &d), MP_ERR_RANGE);
    assert_diag_has(&d, "rows.csv: more than 100000 rows");
    assert_null(v.rows);
    free(csv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_1e15_params_on_1e6_gpus),
        cmocka_unit_test(test_1e6_gpus_small_model),
        cmocka_unit_test(test_parser_maxima),
        cmocka_unit_test(test_out_of_range_errors),
        cmocka_unit_test(test_buffer_caps),
    };
    return cmocka_run_group_tests(tests, catalog_setup, catalog_teardown);
}
