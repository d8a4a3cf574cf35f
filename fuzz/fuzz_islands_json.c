/* fuzz/fuzz_islands_json.c — libFuzzer harness for islands descriptions (mp_islands_from_json,
 * used by --cluster FILE when the file has an "islands" array; docs/cluster.md "Islands"). An
 * accepted description must have 1..MP_MAX_ISLANDS islands and give finite predictions for a few
 * cross-island schemes (mp_islands_predict), whose JSON report must parse.
 *
 * Input: the JSON text. Seeds: the islands descriptions in examples/clusters/ (fuzz/run.sh).
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_MAX_INPUT)
        return 0;
    const mp_catalog *cat = fz_catalog();
    mp_islands *isl = NULL;
    mp_diag d = {0};
    mp_status st = mp_islands_from_json(cat, (const char *)data, size, "fuzz.json", 0, NULL, &isl, &d);
    fz_check_outcome(st, &d, FZ_ST(MP_ERR_INPUT) | FZ_ST(MP_ERR_PARSE) | FZ_ST(MP_ERR_NOT_FOUND) |
                                 FZ_ST(MP_ERR_RANGE));
    FZ_CHECK((st == MP_OK) == (isl != NULL), "islands %p with status %s", (void *)isl,
             mp_status_str(st));
    if (st != MP_OK)
        return 0;
    FZ_CHECK(isl->n >= 1 && isl->n <= MP_MAX_ISLANDS, "%d islands", isl->n);
    for (int i = 0; i < isl->n; i++)
        FZ_CHECK(isl->island[i].cluster.num_gpus >= 1, "island %d: %lld GPUs", i,
                 (long long)isl->island[i].cluster.num_gpus);
    const mp_model *m = mp_catalog_model(fz_catalog(), "llama2-7b");
    static const char *const plans[] = {"mb=1,zero=1", "mb=1,gb=4096,zero=1",
                                        "sync=diloco,inner_steps=50,mb=1,gb=4096",
                                        "sync=hsdp,mb=1,gb=4096,zero=3", "sync=pp,pp=2,mb=1,gb=4096"};
    for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++) {
        static mp_islands_estimate e;
        mp_islands_plan p;
        mp_islands_plan_init_default(&p);
        FZ_CHECK(mp_islands_plan_parse(plans[i], &p, NULL) == MP_OK, "plan %s does not parse", plans[i]);
        mp_diag pd = {0};
        st = mp_islands_predict(m, isl, &p, NULL, &e, &pd);
        fz_check_diag(&pd);
        if (st != MP_OK) {
            FZ_CHECK(pd.count > 0, "islands predict failed (%s) without a message", mp_status_str(st));
            continue;
        }
        const double v[] = {e.step_s, e.period_s, e.tokens_per_s, e.tokens_per_s_per_gpu, e.mfu,
                            e.hfu, e.wan_bytes, e.sync_s, e.sync_exposed_s, e.egress_usd};
        for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
            FZ_CHECK(isfinite(v[k]) && v[k] >= 0, "%s: figure %zu = %g", plans[i], k, v[k]);
        FZ_CHECK(e.nislands == isl->n && e.nflows >= 0 && e.nflows <= MP_MAX_WAN_FLOWS,
                 "nislands %d nflows %d", e.nislands, e.nflows);
    }
    mp_islands_destroy(isl);
    return 0;
}
