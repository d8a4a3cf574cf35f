/* tests/test_web.c — the web app's API called directly (mp_web_handle, no sockets): a good
 * request answers exactly what predict --json writes for the same job, and every bad one is
 * refused with the right status and a JSON message naming the field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "meshplan/meshplan.h"
#include "test_util.h"

static mp_web_response call(const char *method, const char *path, const char *body)
{
    mp_web_response r;
    assert_int_equal(mp_web_handle(g_cat, method, path, body, body ? strlen(body) : 0, &r), MP_OK);
    assert_non_null(r.body);
    return r;
}

/* status, and for JSON errors the field (NULL: none) and a piece of the message. */
static void expect_error(const char *method, const char *path, const char *body, int status,
                         const char *field, const char *msg)
{
    mp_web_response r = call(method, path, body);
    if (r.status != status)
        fail_msg("%s %s %s: status %d, expected %d: %.*s", method, path, body ? body : "", r.status,
                 status, (int)r.len, r.body);
    assert_string_equal(r.content_type, "application/json");
    json_error_t err;
    json_t *o = json_loadb(r.body, r.len, 0, &err);
    assert_non_null(o);
    const char *e = json_string_value(json_object_get(o, "error"));
    assert_non_null(e);
    if (!strstr(e, msg))
        fail_msg("error \"%s\" does not contain \"%s\"", e, msg);
    const char *f = json_string_value(json_object_get(o, "field"));
    if (field)
        assert_string_equal(f ? f : "(none)", field);
    else
        assert_null(f);
    json_decref(o);
    mp_web_response_free(&r);
}

#define GOOD "{\"model\":\"llama3-8b\",\"gpu\":\"h100-sxm5-80gb\",\"gpus\":8,\"plan\":\"tp=2,zero=1,gb=64,recompute=full\"}"

/* The same job through the library, written by the same writer predict --json uses. */
static char *predict_json(void)
{
    mp_model m = *mp_catalog_model(g_cat, "llama3-8b");
    mp_cluster cl;
    mp_plan p;
    mp_diag d = {0};
    assert_int_equal(mp_cluster_from_catalog(g_cat, "h100-sxm5-80gb", 8, 0, NULL, &cl, &d), MP_OK);
    mp_plan_init_default(&p);
    assert_int_equal(mp_plan_parse("tp=2,zero=1,gb=64,recompute=full", &p, &d), MP_OK);
    assert_int_equal(mp_plan_resolve(&p, &m, 8, &d), MP_OK);
    mp_estimate *e = malloc(sizeof *e);
    assert_int_equal(mp_estimate_plan(&m, &cl, &p, NULL, e, &d), MP_OK);
    char *s = mp_report_estimate_json(&m, &cl, &p, e);
    free(e);
    return s;
}

static void test_predict_good(void **state)
{
    (void)state;
    mp_web_response r = call("POST", "/api/predict", GOOD);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.content_type, "application/json");
    char *want = predict_json();
    assert_string_equal(r.body, want); /* byte for byte */
    free(want);
    json_t *o = json_loadb(r.body, r.len, 0, NULL);
    assert_true(json_is_true(json_object_get(o, "feasible")));
    assert_true(json_number_value(json_object_get(o, "mfu")) > 0.2);
    json_decref(o);
    mp_web_response_free(&r);
    /* a query string is ignored */
    r = call("POST", "/api/predict?x=1", GOOD);
    assert_int_equal(r.status, 200);
    mp_web_response_free(&r);
}

static void test_predict_infeasible_is_an_answer(void **state)
{
    (void)state;
    /* the example: zero=1, gb=64 on 8 H100 does not fit (an answer, as in the CLI) */
    mp_web_response r = call("POST", "/api/predict",
                             "{\"model\":\"llama3-8b\",\"gpu\":\"h100-sxm5-80gb\",\"gpus\":8,\"plan\":\"zero=1,gb=64\"}");
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"feasible\": false"));
    mp_web_response_free(&r);
}

static void test_predict_cluster_preset(void **state)
{
    (void)state;
    mp_web_response r = call("POST", "/api/predict",
                             "{\"model\":\"llama3-8b\",\"cluster\":\"dgx-h100\",\"gpus\":16,\"plan\":\"tp=8,gb=64\"}");
    assert_int_equal(r.status, 200);
    mp_web_response_free(&r);
}

static void test_bad_requests(void **state)
{
    (void)state;
    char *big = malloc(MP_WEB_MAX_BODY_BYTES + 2);
    memset(big, ' ', MP_WEB_MAX_BODY_BYTES + 1);
    big[MP_WEB_MAX_BODY_BYTES + 1] = '\0';
    expect_error("POST", "/api/predict", big, 413, NULL, "expected at most 65536");
    free(big);
    expect_error("POST", "/api/predict", "{\"model\":", 400, NULL, "malformed JSON at line 1");
    expect_error("POST", "/api/predict", "", 400, NULL, "malformed JSON");
    expect_error("POST", "/api/predict", "[1,2]", 400, NULL, "expected a JSON object");
    expect_error("POST", "/api/predict",
                 "{\"model\":\"llama3-8b\",\"model\":\"x\",\"gpu\":\"h100-sxm5-80gb\",\"gpus\":8,\"plan\":\"gb=8\"}",
                 400, NULL, "duplicate");
    expect_error("POST", "/api/predict",
                 "{\"model\":\"gpt-17\",\"gpu\":\"h100-sxm5-80gb\",\"gpus\":8,\"plan\":\"gb=64\"}", 400,
                 "model", "request.model = \"gpt-17\": expected a catalog model key");
    expect_error("POST", "/api/predict",
                 "{\"model\":\"/etc/passwd\",\"gpu\":\"h100-sxm5-80gb\",\"gpus\":8,\"plan\":\"gb=64\"}", 400,
                 "model", "expected a catalog model key"); /* never read as a file */
    expect_error("POST", "/api/predict",
                 "{\"model\":\"llama3-8b\",\"gpu\":\"h900\",\"gpus\":8,\"plan\":\"gb=64\"}", 400, "gpu",
                 "gpu = \"h900\"");
    expect_error("POST", "/api/predict",
                 "{\"model\":\"llama3-8b\",\"gpu\":\"h100-sxm5-80gb\",\"gpus\":\"8\",\"plan\":\"gb=64\"}", 400,
                 "gpus", "gpus = \"8\": expected an integer");
    expect_error("POST", "/api/predict",
                 "{\"model\":\"llama3-8b\",\"gpu\":\"h100-sxm5-80gb\",\"gpus\":0,\"plan\":\"gb=64\"}", 400,
                 "gpus", "gpus = 0: expected an integer in [1, 16777216]");
    expect_error("POST", "/api/predict", "{\"model\":\"llama3-8b\",\"gpu\":\"h100-sxm5-80gb\",\"gpus\":8}",
                 400, "plan", "plan = (missing): expected a plan");
    expect_error("POST", "/api/predict",
                 "{\"model\":\"llama3-8b\",\"gpu\":\"h100-sxm5-80gb\",\"gpus\":8,\"plan\":\"tp=3,gb=64\"}", 400,
                 "plan.tp", "plan.tp = 3: must divide heads (32)");
    expect_error("POST", "/api/predict",
                 "{\"model\":\"llama3-8b\",\"gpu\":\"h100-sxm5-80gb\",\"gpus\":8,\"plan\":\"gb=64\",\"colour\":1}",
                 400, "colour", "unknown field \"colour\"");
    expect_error("POST", "/api/predict",
                 "{\"model\":\"llama3-8b\",\"cluster\":\"../../etc/passwd\",\"gpus\":8,\"plan\":\"gb=64\"}", 400,
                 "cluster", "cluster = \"../../etc/passwd\": expected a catalog node key, a shipped cluster");
    expect_error("GET", "/api/predict", NULL, 405, NULL, "takes POST");
    expect_error("POST", "/", "{}", 405, NULL, "takes GET");
    expect_error("GET", "/../../etc/passwd", NULL, 404, NULL, "not found");
    expect_error("GET", "/data/gpus.json", NULL, 404, NULL, "not found");
    /* a path that is not UTF-8 still gets a JSON answer (found by fuzz/fuzz_web.c) */
    expect_error("GET", "/a\xf2i/c\xc0\xafg", NULL, 404, NULL, "/a?i/c??g: not found");
}

static void test_trace(void **state)
{
    (void)state;
    mp_web_response r = call("POST", "/api/trace", GOOD);
    assert_int_equal(r.status, 200);
    json_t *o = json_loadb(r.body, r.len, 0, NULL);
    assert_non_null(o);
    json_t *sim = json_object_get(o, "simulated"), *ana = json_object_get(o, "analytical");
    assert_true(json_number_value(json_object_get(sim, "step_s")) > 0);
    assert_true(json_is_null(json_object_get(o, "trace"))); /* no file written */
    /* the analytical step is predict's */
    mp_web_response pr = call("POST", "/api/predict", GOOD);
    json_t *po = json_loadb(pr.body, pr.len, 0, NULL);
    assert_close(json_number_value(json_object_get(ana, "step_s")), json_number_value(json_object_get(po, "step_s")),
                 1e-7);
    json_decref(po);
    mp_web_response_free(&pr);
    json_decref(o);
    mp_web_response_free(&r);
    expect_error("POST", "/api/trace", "{\"model\":\"llama3-8b\",\"gpu\":\"h100-sxm5-80gb\",\"gpus\":8,\"plan\":\"tp=3\"}",
                 400, "plan.tp", "plan.tp = 3: must divide heads (32)");
    expect_error("GET", "/api/trace", NULL, 405, NULL, "takes POST");
}

static void test_search(void **state)
{
    (void)state;
    mp_web_response r = call("POST", "/api/search",
                             "{\"model\":\"llama3-8b\",\"gpu\":\"h100-sxm5-80gb\",\"gpus\":8,\"gb\":64,\"top\":3}");
    assert_int_equal(r.status, 200);
    json_t *o = json_loadb(r.body, r.len, 0, NULL);
    assert_non_null(o);
    assert_int_equal(json_array_size(json_object_get(o, "top")), 3);
    assert_true(json_integer_value(json_object_get(json_object_get(o, "counts"), "feasible")) > 0);
    json_decref(o);
    mp_web_response_free(&r);
    expect_error("POST", "/api/search", "{\"model\":\"llama3-8b\",\"gpu\":\"h100-sxm5-80gb\",\"gpus\":8}", 400,
                 "gb", "gb = (missing): expected the global batch");
    expect_error("POST", "/api/search",
                 "{\"model\":\"llama3-8b\",\"gpu\":\"h100-sxm5-80gb\",\"gpus\":8,\"gb\":64,\"precision\":\"fp4\"}", 400,
                 "precision", "expected bf16, fp16 or fp8");
    expect_error("POST", "/api/search",
                 "{\"model\":\"llama3-8b\",\"gpu\":\"h100-sxm5-80gb\",\"gpus\":8,\"gb\":64,\"top\":1000}", 400,
                 "top", "top = 1000");
    /* bounded work: Llama 3 405B on 16,384 GPUs is millions of plans */
    expect_error("POST", "/api/search",
                 "{\"model\":\"llama3-405b\",\"gpu\":\"h100-sxm5-80gb\",\"gpus\":16384,\"gb\":2048}", 400, "fix",
                 "more than 2000000 plans");
}

static void test_pages(void **state)
{
    (void)state;
    mp_web_response r = call("GET", "/", NULL);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.content_type, "text/html; charset=utf-8");
    assert_non_null(strstr(r.body, "/vendor/chart.umd.min.js"));
    mp_web_response_free(&r);
    r = call("GET", "/vendor/chart.umd.min.js", NULL);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "Chart.js v4.6.1"));
    mp_web_response_free(&r);
    r = call("GET", "/api/catalog", NULL);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"llama3-70b\""));
    assert_non_null(strstr(r.body, "\"h100-sxm5-80gb\""));
    mp_web_response_free(&r);
}

/* POST /api/infer: the JSON of `infer --json` (the writer cmd_infer.c prints, mp_report_infer_json)
 * for the same job, byte for byte; a bad inference plan key is 400 naming it. */
static void test_infer(void **state)
{
    (void)state;
    mp_web_response r = call("POST", "/api/infer",
                             "{\"model\":\"llama3-8b\",\"gpu\":\"h100-sxm5-80gb\",\"plan\":\"tp=2,batch=8\"}");
    assert_int_equal(r.status, 200);
    mp_model m = *mp_catalog_model(g_cat, "llama3-8b");
    mp_cluster cl;
    mp_infer_plan p;
    mp_diag d = {0};
    mp_infer_plan_init(&p);
    assert_int_equal(mp_infer_plan_parse("tp=2,batch=8", &p, &d), MP_OK);
    assert_int_equal(mp_cluster_from_catalog(g_cat, "h100-sxm5-80gb", 2, 0, NULL, &cl, &d), MP_OK);
    mp_infer_result *res = malloc(sizeof *res);
    assert_non_null(res);
    assert_int_equal(mp_infer_estimate(&m, &cl, &p, res, &d), MP_OK);
    char *want = mp_report_infer_json(res, 1, 0);
    free(res);
    assert_non_null(want);
    assert_int_equal(r.len, strlen(want));
    assert_memory_equal(r.body, want, r.len);
    assert_non_null(strstr(want, "\"ttft_s\""));
    free(want);
    mp_web_response_free(&r);
    expect_error("POST", "/api/infer",
                 "{\"model\":\"llama3-8b\",\"gpu\":\"h100-sxm5-80gb\",\"plan\":\"tp=0,batch=8\"}", 400,
                 "plan.tp", "tp");
    expect_error("GET", "/api/infer", NULL, 405, NULL, "POST");
}

/* One request reader (src/api/api_request.c): /api/predict answers byte for byte what the
 * request layer's "predict" answers for the same body, on the server's catalog (a model that
 * only `meshplan web --catalog FILE` adds is found), and the request layer's refusals reach
 * the web with their field. */
static void test_one_reader(void **state)
{
    (void)state;
    char *want = NULL;
    mp_diag d = {0};
    assert_int_equal(mp_api_call_json("predict", GOOD, strlen(GOOD), &want, &d), MP_OK);
    mp_web_response r = call("POST", "/api/predict", GOOD);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, want);
    mp_api_free(want);
    mp_web_response_free(&r);

    static const char mine[] =
        "{\"models\": [{\"key\": \"my-8b\", \"name\": \"mine\", \"layers_count\": 32, \"hidden_count\": 4096,"
        " \"heads_count\": 32, \"kv_heads_count\": 8, \"ffn_hidden_count\": 14336, \"glu\": true,"
        " \"vocab_count\": 128256, \"position\": \"rope\", \"seq_len_count\": 8192, \"norm\": \"rmsnorm\","
        " \"source\": \"test: llama3-8b's dimensions\"}]}";
    mp_catalog *cat = NULL;
    assert_int_equal(mp_catalog_create(&cat, &d), MP_OK);
    assert_int_equal(mp_catalog_merge_json(cat, mine, strlen(mine), "test", &d), MP_OK);
    static const char body[] = "{\"model\":\"my-8b\",\"gpu\":\"h100-sxm5-80gb\",\"gpus\":8,\"plan\":\"tp=2,gb=64\"}";
    assert_int_equal(mp_web_handle(cat, "POST", "/api/predict", body, strlen(body), &r), MP_OK);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"key\": \"my-8b\""));
    mp_web_response_free(&r);
    assert_int_equal(mp_web_handle(cat, "POST", "/api/trace", body, strlen(body), &r), MP_OK);
    assert_int_equal(r.status, 200);
    mp_web_response_free(&r);
    mp_catalog_destroy(cat);
    expect_error("POST", "/api/predict", body, 400, "model", "request.model = \"my-8b\"");
    /* the server's catalog only: a request cannot bring its own */
    expect_error("POST", "/api/predict",
                 "{\"model\":\"llama3-8b\",\"gpu\":\"h100-sxm5-80gb\",\"gpus\":8,\"plan\":\"gb=64\",\"catalog\":{}}",
                 400, "catalog", "unknown field \"catalog\"");
    expect_error("POST", "/api/search",
                 "{\"model\":\"llama3-8b\",\"gpu\":\"h100-sxm5-80gb\",\"gpus\":8,\"gb\":64,\"threads\":4096}",
                 400, "threads", "unknown field \"threads\"");
    expect_error("POST", "/api/infer", "{\"model\":", 400, NULL, "malformed JSON at line 1, column");
    expect_error("POST", "/api/search", "{\"model\": 1,", 400, NULL, "malformed JSON at line 1, column");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_predict_good),        cmocka_unit_test(test_predict_infeasible_is_an_answer),
        cmocka_unit_test(test_predict_cluster_preset), cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_search),              cmocka_unit_test(test_pages),
        cmocka_unit_test(test_trace),               cmocka_unit_test(test_infer),
        cmocka_unit_test(test_one_reader),
    };
    return cmocka_run_group_tests(tests, catalog_setup, catalog_teardown);
}
