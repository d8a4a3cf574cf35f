/* fuzz/fuzz_faults_json.c — libFuzzer harness for fault models (mp_fault_model_from_json, used by
 * `meshplan run --failures FILE`; docs/faults.md). An accepted model must give finite,
 * non-negative failure rates for a fleet, and a finite expected run.
 *
 * Input: the JSON text. Seeds: fuzz/seeds/faults_json/.
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_MAX_INPUT)
        return 0;
    static mp_fault_model fm;
    mp_diag d = {0};
    mp_status st = mp_fault_model_from_json((const char *)data, size, "fuzz.json", &fm, &d);
    fz_check_outcome(st, &d, FZ_ST(MP_ERR_INPUT) | FZ_ST(MP_ERR_PARSE) | FZ_ST(MP_ERR_RANGE));
    if (st != MP_OK)
        return 0;
    static const mp_fault_fleet fleets[] = {{8, 1, 8}, {16384, 2048, 16384}, {1e6, 125000, 1e6}};
    for (size_t i = 0; i < sizeof fleets / sizeof fleets[0]; i++) {
        mp_fault_rates r;
        mp_fault_rates_for(&fm, &fleets[i], 1.0, &r);
        FZ_CHECK(isfinite(r.total_per_s) && r.total_per_s >= 0 && isfinite(r.spare_per_s) &&
                     r.spare_per_s >= 0 && r.spare_per_s <= r.total_per_s * (1 + 1e-12),
                 "rates: total %g spare %g", r.total_per_s, r.spare_per_s);
    }
    return 0;
}
