/* tests/test_api.c — the request -> JSON layer (api.h): each command's answer agrees with the
 * library calls it stands for, inline models and clusters load, presets resolve, and every kind
 * of bad request is refused with the status and a message naming the field and value
 * (mp_api_error_json). The CLI's --json output is compared with the layer's in
 * python/tests/test_api.py (same keys, same numbers). */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"

#include "meshplan/api.h"
#include "meshplan/meshplan.h"

#define JOB "\"model\":\"llama3-70b\",\"gpu\":\"h100-sxm5-80gb\",\"gpus\":64"

/* Call command with request; assert the status; return the parsed answer (MP_OK) or the parsed
 * error object (otherwise). */
static json_t *call(const char *command, const char *request, mp_status want)
{
    char *out = NULL;
    mp_diag d = {0};
    mp_status st = mp_api_call_json(command, request, (size_t)-1, &out, &d);
    if (st != want)
        fail_msg("%s %s: status %d (%s), expected %d\n%s", command, request, st, mp_status_str(st),
                 want, d.text);
    char *text = st == MP_OK ? out : mp_api_error_json(st, &d);
    assert_non_null(text);
    if (st != MP_OK)
        assert_null(out);
    json_error_t err;
    json_t *o = json_loads(text, 0, &err);
    if (!o)
        fail_msg("%s: answer is not JSON: %s", command, err.text);
    mp_api_free(text);
    return o;
}

static double num(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_number(v))
        fail_msg("answer has no number \"%s\"", key);
    return json_number_value(v);
}

static void assert_error(const char *command, const char *request, mp_status want,
                         const char *field, const char *value)
{
    json_t *e = call(command, request, want);
    const char *f = json_string_value(json_object_get(e, "field"));
    const char *v = json_string_value(json_object_get(e, "value"));
    if (field && (!f || strcmp(f, field)))
        fail_msg("%s %s: field %s, expected %s\n%s", command, request, f ? f : "null", field,
                 json_string_value(json_object_get(e, "message")));
    if (value && (!v || strcmp(v, value)))
        fail_msg("%s %s: value %s, expected %s", command, request, v ? v : "null", value);
    assert_int_equal(json_integer_value(json_object_get(e, "code")), want);
    json_decref(e);
}

/* predict through the layer == the library calls of the umbrella header's example. */
static void test_predict_matches_library(void **state)
{
    (void)state;
    json_t *o = call("predict", "{" JOB ",\"plan\":\"tp=8,pp=2,gb=128,zero=1,recompute=selective\"}",
                     MP_OK);
    mp_model m = *mp_catalog_model(g_cat, "llama3-70b");
    mp_cluster c;
    mp_plan p;
    mp_diag d = {0};
    assert_int_equal(mp_cluster_from_catalog(g_cat, "h100-sxm5-80gb", 64, 0, NULL, &c, &d), MP_OK);
    mp_plan_init_default(&p);
    assert_int_equal(mp_plan_parse("tp=8,pp=2,gb=128,zero=1,recompute=selective", &p, &d), MP_OK);
    assert_int_equal(mp_plan_resolve(&p, &m, 64, &d), MP_OK);
    mp_estimate *e = malloc(sizeof *e);
    assert_non_null(e);
    assert_int_equal(mp_estimate_plan(&m, &c, &p, NULL, e, &d), MP_OK);
    assert_close(num(o, "mfu"), e->mfu, 1e-7);
    assert_close(num(o, "step_s"), e->step_s, 1e-7);
    assert_close(num(o, "tokens_per_s"), e->tokens_per_s, 1e-7);
    assert_true(json_is_true(json_object_get(o, "feasible")));
    free(e);
    json_decref(o);
}

/* An inline Hugging Face config, an inline cluster and a shipped preset. */
static void test_inline_model_and_clusters(void **state)
{
    (void)state;
    size_t len = 0;
    char *hf = slurp(MESHPLAN_SOURCE_DIR "/tests/data/hf/gpt-neox-20b.json", &len);
    assert_non_null(hf);
    size_t cap = len + 256;
    char *req = malloc(cap);
    assert_non_null(req);
    snprintf(req, cap, "{\"model\":%s,\"gpu\":\"a100-sxm4-80gb\",\"gpus\":16,\"plan\":\"tp=2,gb=32\"}",
             hf);
    json_t *o = call("predict", req, MP_OK);
    assert_true(num(o, "tokens_per_s") > 0);
    json_decref(o);
    free(req);
    free(hf);
    o = call("predict", "{\"model\":\"llama3-8b\",\"cluster\":\"dgx-h100-roce100\",\"gpus\":16,"
                        "\"plan\":\"tp=8,gb=64\"}", MP_OK);
    assert_true(num(o, "tokens_per_s") > 0);
    json_decref(o);
    o = call("predict", "{\"model\":\"llama3-8b\",\"cluster\":\"dgx-h100\",\"gpus\":16,"
                        "\"plan\":\"tp=8,gb=64\"}", MP_OK);
    json_decref(o);
    /* Islands joined by WAN links are the CLI's. */
    assert_error("predict", "{\"model\":\"llama3-8b\",\"cluster\":\"three-continents\",\"plan\":\"gb=64\"}",
                 MP_ERR_INPUT, "cluster", "three-continents");
}

static void test_search_collective_run(void **state)
{
    (void)state;
    json_t *o = call("search", "{\"model\":\"llama3-8b\",\"gpu\":\"h100-sxm5-80gb\",\"gpus\":\"8:16\","
                               "\"gb\":64,\"top\":3,\"threads\":1}", MP_OK);
    assert_int_equal(json_array_size(json_object_get(o, "gpus")), 2);
    json_decref(o);
    o = call("collective", "{\"op\":\"all_gather\",\"gpu\":\"h100-sxm5-80gb\",\"gpus\":16,"
                           "\"sizes\":\"1M:4M\"}", MP_OK);
    json_t *rows = json_object_get(o, "rows");
    assert_int_equal(json_array_size(rows), 3); /* 1M, 2M, 4M */
    assert_close(num(json_array_get(rows, 2), "bytes"), 4194304.0, 0);
    /* bus bandwidth = algbw (n-1)/n for all-gather (nccl-tests PERFORMANCE.md) */
    assert_close(num(json_array_get(rows, 0), "busbw_GBps"),
                 num(json_array_get(rows, 0), "algbw_GBps") * 15.0 / 16.0, 1e-9);
    json_decref(o);
    o = call("run", "{" JOB ",\"plan\":\"tp=8,pp=2,gb=128\",\"tokens\":1e11,\"trials\":50}", MP_OK);
    double g = num(o, "goodput");
    assert_true(g > 0.5 && g <= 1.0);
    assert_int_equal(json_integer_value(json_object_get(o, "trials")), 50);
    json_decref(o);
}

static void test_bad_requests(void **state)
{
    (void)state;
    assert_error("predict", "{" JOB ",\"plan\":\"tp=3\"}", MP_ERR_INPUT, "plan.tp", "3");
    assert_error("predict", "{\"model\":\"llama3-70b\",\"gpu\":\"h100-sxm5-80gb\",\"gpus\":-1}",
                 MP_ERR_INPUT, "gpus", "-1");
    assert_error("predict", "{" JOB ",\"gpux\":1}", MP_ERR_INPUT, "gpux", "");
    assert_error("predict", "{\"model\":\"no-such-model\",\"gpu\":\"h100-sxm5-80gb\",\"gpus\":8}",
                 MP_ERR_NOT_FOUND, "model", "no-such-model");
    assert_error("predict", "{" JOB ",", MP_ERR_PARSE, NULL, NULL);
    assert_error("predict", "[1, 2]", MP_ERR_INPUT, NULL, NULL);
    /* Keys across islands are not plan keys of one cluster (mp_plan_parse). */
    assert_error("predict", "{" JOB ",\"plan\":\"tp=8,sync=diloco\"}", MP_ERR_INPUT, "plan.sync", "diloco");
    assert_error("search", "{\"model\":\"llama3-8b\",\"gpu\":\"h100-sxm5-80gb\",\"gpus\":8}",
                 MP_ERR_INPUT, "gb", "(missing)");
    assert_error("collective", "{\"gpu\":\"h100-sxm5-80gb\",\"gpus\":8,\"sizes\":\"8:4\"}",
                 MP_ERR_INPUT, "sizes", "8:4");
    assert_error("run", "{" JOB ",\"plan\":\"tp=8\"}", MP_ERR_INPUT, "tokens", "(missing)");
    assert_error("nope", "{}", MP_ERR_NOT_FOUND, "command", "nope");
    /* a rental price beside capital per GPU: one way to pay (was: the price silently ignored) */
    assert_error("run", "{" JOB ",\"plan\":\"tp=8\",\"tokens\":1e12,\"capex_per_gpu\":30000,\"price_gpu_hour\":2}",
                 MP_ERR_INPUT, "price_gpu_hour", "2");
    /* A field given but refused is one message naming its value, not also "(missing)" (found by
     * a new user: search gb=0 answered "gb = 0: expected ..." and "gb = (missing)"). */
    static const struct { const char *cmd, *req, *field, *value; } once[] = {
        {"search", "{\"model\":\"llama3-8b\",\"gpu\":\"h100-sxm5-80gb\",\"gpus\":8,\"gb\":0}", "gb", "0"},
        {"run", "{" JOB ",\"plan\":\"tp=8\",\"tokens\":-5}", "tokens", "-5"},
        {"predict", "{\"model\":\"llama3-8b\",\"gpu\":5,\"gpus\":8}", "gpu", "5"},
        {"run", "{" JOB ",\"plan\":7,\"tokens\":1e12}", "plan", "7"},
    };
    for (size_t i = 0; i < sizeof once / sizeof once[0]; i++) {
        assert_error(once[i].cmd, once[i].req, MP_ERR_INPUT, once[i].field, once[i].value);
        json_t *e = call(once[i].cmd, once[i].req, MP_ERR_INPUT);
        if (json_array_size(json_object_get(e, "messages")) != 1)
            fail_msg("%s %s: %zu messages, expected 1:\n%s", once[i].cmd, once[i].req,
                     json_array_size(json_object_get(e, "messages")),
                     json_string_value(json_object_get(e, "message")));
        json_decref(e);
    }
    /* Oversized: more than MP_API_MAX_REQUEST_BYTES. */
    size_t n = MP_API_MAX_REQUEST_BYTES + 16;
    char *big = malloc(n + 1);
    assert_non_null(big);
    memset(big, ' ', n);
    big[0] = '{';
    big[n - 1] = '}';
    big[n] = '\0';
    char *out = NULL;
    mp_diag d = {0};
    assert_int_equal(mp_api_predict_json(big, n, &out, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "bytes"));
    assert_null(out);
    free(big);
    assert_int_equal(mp_api_predict_json(NULL, 0, &out, NULL), MP_ERR_INPUT);
}

static void test_command_table(void **state)
{
    (void)state;
    assert_int_equal(mp_api_command_count(), 5);
    assert_string_equal(mp_api_command_name(0), "predict");
    assert_string_equal(mp_api_command_name(4), "infer");
    assert_null(mp_api_command_name(5));
    char *e = mp_api_error_json(MP_ERR_INPUT, NULL);
    assert_non_null(strstr(e, "\"bad input\""));
    mp_api_free(e);
}

/* "infer": the text of infer --json (mp_report_infer_json) for the same job; gpus defaults to
 * tp x pp x dp; a bad plan key or an unknown request key is bad input naming it. */
static void test_infer(void **state)
{
    (void)state;
    char *out = NULL;
    mp_diag d = {0};
    assert_int_equal(mp_api_call_json("infer", "{\"model\":\"llama3-8b\",\"gpu\":\"h100-sxm5-80gb\","
                                      "\"plan\":\"tp=2,dp=2,batch=32,weights=fp8\"}", (size_t)-1, &out, &d),
                     MP_OK);
    mp_model m = *mp_catalog_model(g_cat, "llama3-8b");
    mp_cluster cl;
    mp_infer_plan p;
    mp_infer_plan_init(&p);
    assert_int_equal(mp_infer_plan_parse("tp=2,dp=2,batch=32,weights=fp8", &p, &d), MP_OK);
    assert_int_equal(mp_cluster_from_catalog(g_cat, "h100-sxm5-80gb", 4, 0, NULL, &cl, &d), MP_OK);
    mp_infer_result *r = malloc(sizeof *r);
    assert_non_null(r);
    assert_int_equal(mp_infer_estimate(&m, &cl, &p, r, &d), MP_OK);
    char *want = mp_report_infer_json(r, 1, 0);
    free(r);
    assert_string_equal(out, want);
    free(want);
    mp_api_free(out);
    mp_diag_clear(&d);
    assert_int_equal(mp_api_call_json("infer", "{\"model\":\"llama3-8b\",\"gpu\":\"h100-sxm5-80gb\","
                                      "\"plan\":\"tp=2,batch=0\"}", (size_t)-1, &out, &d), MP_ERR_INPUT);
    assert_null(out);
    assert_non_null(strstr(d.text, "batch"));
    mp_diag_clear(&d);
    assert_int_equal(mp_api_call_json("infer", "{\"model\":\"llama3-8b\",\"gpu\":\"h100-sxm5-80gb\","
                                      "\"tokens\":5}", (size_t)-1, &out, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "tokens"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_predict_matches_library),
        cmocka_unit_test(test_inline_model_and_clusters),
        cmocka_unit_test(test_search_collective_run),
        cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_command_table),
        cmocka_unit_test(test_infer),
    };
    return cmocka_run_group_tests(tests, catalog_setup, catalog_teardown);
}
