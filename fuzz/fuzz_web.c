/* fuzz/fuzz_web.c — libFuzzer harness for the web app's requests (meshplan/web.h): the input
 * is a request body sent to POST /api/predict, or, when it starts with "GET ", a request target
 * (the rest of its first line) for GET. Every answer must be one of the statuses web.h lists,
 * with a body; an API answer (and every error) must be a JSON object, an error one with an
 * "error" string; a 200 prediction must carry step_s and mfu. /api/search is left out: a valid
 * search may take seconds (it is bounded at MP_WEB_MAX_SEARCH_PLANS), beyond a fuzzer's pace.
 *
 * Seeds: fuzz/seeds/web/ (good and bad bodies, paths). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MP_WEB_MAX_BODY_BYTES + 16)
        return 0;
    const mp_catalog *cat = fz_catalog();
    char *text = fz_cstr(data, size);
    int get = size >= 4 && !memcmp(text, "GET ", 4);
    char *path = NULL;
    if (get) {
        path = text + 4;
        path[strcspn(path, "\r\n")] = '\0';
    }
    mp_web_response r;
    mp_status st = get ? mp_web_handle(cat, "GET", path, NULL, 0, &r)
                       : mp_web_handle(cat, "POST", "/api/predict", text, size, &r);
    FZ_CHECK(st == MP_OK, "mp_web_handle returned %d", (int)st);
    FZ_CHECK(r.body != NULL, "no body (status %d)", r.status);
    int s = r.status;
    FZ_CHECK(s == 200 || s == 400 || s == 404 || s == 405 || s == 413, "status %d", s);
    int is_json = r.content_type && !strcmp(r.content_type, "application/json");
    FZ_CHECK(s == 200 || is_json, "error %d is not JSON (%s)", s, r.content_type ? r.content_type : "");
    if (is_json) {
        json_error_t err;
        json_t *o = json_loadb(r.body, r.len, 0, &err);
        FZ_CHECK(json_is_object(o), "answer %d is not a JSON object: %s\n%.300s", s, err.text, r.body);
        if (s != 200)
            FZ_CHECK(json_is_string(json_object_get(o, "error")), "error %d without a message", s);
        else if (!get)
            FZ_CHECK(json_is_number(json_object_get(o, "step_s")) && json_is_number(json_object_get(o, "mfu")),
                     "prediction without step_s or mfu");
        json_decref(o);
    }
    mp_web_response_free(&r);
    free(text);
    return 0;
}
