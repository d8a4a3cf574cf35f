/* fuzz/fuzz_model_json.c — libFuzzer harness for a model file in the catalog schema
 * (mp_model_from_catalog_json, used by --model FILE). A model it accepts must pass
 * mp_model_check and give checked predictions for a few plans (fuzz_common.h).
 *
 * Input: the JSON text. Seeds: the entries of data/models.json, one per file (fuzz/run.sh).
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_MAX_INPUT)
        return 0;
    (void)fz_catalog();
    mp_model m;
    mp_diag d = {0};
    /* No NUL terminator: the parser must honour len. */
    mp_status st = mp_model_from_catalog_json((const char *)data, size, &m, &d);
    fz_check_diag(&d);
    FZ_CHECK(st == MP_OK || st == MP_ERR_INPUT || st == MP_ERR_PARSE, "status %d", st);
    FZ_CHECK((st == MP_OK) == (d.count == 0), "status %s with %d messages", mp_status_str(st),
             d.count);
    if (st != MP_OK)
        return 0;
    FZ_CHECK(mp_model_check(&m, NULL) == MP_OK, "accepted model fails mp_model_check");
    FZ_CHECK(memchr(m.key, '\0', sizeof m.key) && memchr(m.name, '\0', sizeof m.name) &&
                 memchr(m.source, '\0', sizeof m.source),
             "unterminated string");
    mp_param_count pc;
    mp_model_params(&m, 1, &pc);
    FZ_CHECK(pc.total > 0 && pc.per_layer > 0, "params %lld", (long long)pc.total);
    mp_flops fl;
    mp_model_flops(&m, m.seq_len, &fl);
    FZ_CHECK(isfinite(fl.model_per_token) && fl.model_per_token > 0, "flops %g",
             fl.model_per_token);
    fz_predict_some(&m);
    return 0;
}
