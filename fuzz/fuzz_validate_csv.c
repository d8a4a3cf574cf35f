/* fuzz/fuzz_validate_csv.c — libFuzzer harness for validation CSV files (mp_validate_csv, used by
 * `meshplan validate FILE.csv`). Every predicted row must carry finite figures, every string
 * must be terminated, and the JSON report must parse with one entry per row and per skip.
 *
 * Input: the CSV text. Seeds: the tests/data CSV files and ../shared/validation/runs.csv (fuzz/run.sh).
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_MAX_INPUT)
        return 0;
    const mp_catalog *cat = fz_catalog();
    mp_validation v;
    mp_diag d = {0};
    mp_status st = mp_validate_csv(cat, (const char *)data, size, "fuzz.csv", NULL, &v, &d);
    fz_check_outcome(st, &d, FZ_ST(MP_ERR_INPUT) | FZ_ST(MP_ERR_PARSE) | FZ_ST(MP_ERR_RANGE));
    if (st != MP_OK) {
        FZ_CHECK(v.rows == NULL && v.skips == NULL && v.nrows == 0, "output left on error");
        return 0;
    }
    FZ_CHECK(v.nskips <= v.ninput && v.nrows <= 2 * v.ninput, "rows %zu skips %zu input %zu",
             v.nrows, v.nskips, v.ninput);
    for (size_t i = 0; i < v.nrows; i++) {
        const mp_val_row *r = &v.rows[i];
        FZ_CHECK(memchr(r->id, 0, sizeof r->id) && memchr(r->source_group, 0, sizeof r->source_group) &&
                     memchr(r->metric, 0, sizeof r->metric) && memchr(r->assumed, 0, sizeof r->assumed),
                 "row %zu: unterminated string", i);
        FZ_CHECK(isfinite(r->measured) && r->measured > 0 && isfinite(r->predicted) &&
                     r->predicted >= 0 && isfinite(r->error_pct),
                 "row %zu: measured %g predicted %g error %g", i, r->measured, r->predicted,
                 r->error_pct);
    }
    for (size_t i = 0; i < v.nskips; i++)
        FZ_CHECK(memchr(v.skips[i].id, 0, sizeof v.skips[i].id) &&
                     memchr(v.skips[i].reason, 0, sizeof v.skips[i].reason) && v.skips[i].reason[0],
                 "skip %zu: unterminated or empty", i);
    mp_val_stats s;
    for (int f = MP_VAL_ALL; f <= MP_VAL_MEMORY; f++) {
        mp_validation_stats(&v, (mp_val_filter)f, NULL, &s);
        FZ_CHECK(isfinite(s.mean_abs_error_pct) && isfinite(s.median_abs_error_pct) &&
                     isfinite(s.max_abs_error_pct) && s.median_abs_error_pct <= s.max_abs_error_pct,
                 "stats");
    }
    char *js = mp_report_validation_json(&v);
    FZ_CHECK(js != NULL, "mp_report_validation_json returned NULL");
    json_error_t err;
    json_t *root = json_loads(js, 0, &err);
    FZ_CHECK(root != NULL, "report JSON does not parse: %s", err.text);
    FZ_CHECK(json_array_size(json_object_get(root, "rows")) == v.nrows,
             "report JSON has %zu rows, expected %zu", json_array_size(json_object_get(root, "rows")),
             v.nrows);
    FZ_CHECK(json_array_size(json_object_get(root, "skipped")) == v.nskips,
             "report JSON has %zu skips, expected %zu",
             json_array_size(json_object_get(root, "skipped")), v.nskips);
    const json_t *sum = json_object_get(root, "summary");
    FZ_CHECK(json_is_object(json_object_get(sum, "by_source_group")) &&
                 json_is_object(json_object_get(sum, "memory")),
             "summary incomplete");
    json_decref(root);
    free(js);
    FILE *devnull = fopen("/dev/null", "w");
    if (devnull) {
        mp_report_validation_text(devnull, &v);
        fclose(devnull);
    }
    mp_validation_free(&v);
    return 0;
}
