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
    fz_check_parsed_model(&m, st, &d, 0);
    return 0;
}
