/* fuzz/fuzz_cluster_json.c — libFuzzer harness for cluster descriptions (mp_cluster_from_json,
 * used by --cluster FILE; schema docs/cluster.md). An accepted cluster must have sane tiers and
 * give checked predictions (fuzz_common.h) for a few plans of Llama 2 7B at its own GPU count,
 * and, made into islands (mp_islands_from_cluster), finite island predictions.
 *
 * Input: the JSON text. Seeds: examples/clusters/ (fuzz/run.sh).
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_MAX_INPUT)
        return 0;
    const mp_catalog *cat = fz_catalog();
    mp_cluster c;
    mp_diag d = {0};
    mp_status st = mp_cluster_from_json(cat, (const char *)data, size, "fuzz.json", 0, &c, &d);
    fz_check_outcome(st, &d, FZ_ST(MP_ERR_INPUT) | FZ_ST(MP_ERR_PARSE) | FZ_ST(MP_ERR_NOT_FOUND));
    if (st != MP_OK)
        return 0;
    FZ_CHECK(c.num_gpus >= 1 && c.num_gpus <= ((int64_t)1 << 24) && c.ntiers >= 1 &&
                 c.ntiers <= MP_MAX_TIERS && c.gpus_per_node >= 1,
             "cluster: %lld GPUs, %d tiers, %d per node", (long long)c.num_gpus, c.ntiers,
             c.gpus_per_node);
    for (int t = 0; t < c.ntiers; t++)
        FZ_CHECK(isfinite(c.tier[t].bw_Bps) && c.tier[t].bw_Bps > 0 &&
                     isfinite(c.tier[t].latency_s) && c.tier[t].latency_s >= 0 &&
                     c.tier[t].domain_gpus >= 1 && memchr(c.tier[t].link, 0, sizeof c.tier[t].link),
                 "tier %d: bw %g latency %g domain %lld", t, c.tier[t].bw_Bps, c.tier[t].latency_s,
                 (long long)c.tier[t].domain_gpus);
    FZ_CHECK(memchr(c.name, 0, sizeof c.name) != NULL, "unterminated name");

    const mp_model *m = mp_catalog_model(cat, "llama2-7b");
    static const char *const plans[] = {"", "tp=2,zero=1,mb=1", "pp=2,zero=3,recompute=full",
                                        "tp=8,cp=2,seq=4096,zero=2"};
    for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++) {
        static mp_estimate e;
        mp_plan p;
        mp_plan_init_default(&p);
        if (mp_plan_parse(plans[i], &p, NULL) != MP_OK)
            abort();
        if (mp_plan_resolve(&p, m, c.num_gpus, NULL) != MP_OK)
            continue;
        mp_diag ed = {0};
        st = mp_estimate_plan(m, &c, &p, NULL, &e, &ed);
        fz_check_diag(&ed);
        if (st == MP_OK)
            fz_check_estimate(m, &c, &p, &e);
        else
            FZ_CHECK(ed.count > 0, "estimate failed without a message");
    }

    mp_islands *isl = NULL;
    mp_diag id = {0};
    if (mp_islands_from_cluster(&c, &isl, &id) == MP_OK) {
        static mp_islands_estimate ie;
        mp_islands_plan p;
        mp_islands_plan_init_default(&p);
        if (mp_islands_plan_parse("mb=1,zero=1", &p, NULL) != MP_OK)
            abort();
        mp_diag pd = {0};
        if (mp_islands_predict(m, isl, &p, NULL, &ie, &pd) == MP_OK)
            FZ_CHECK(isfinite(ie.step_s) && ie.step_s > 0 && isfinite(ie.tokens_per_s) &&
                         isfinite(ie.mfu) && ie.mfu >= 0 && isfinite(ie.wan_bytes),
                     "islands estimate: step %g tokens/s %g mfu %g", ie.step_s, ie.tokens_per_s,
                     ie.mfu);
        fz_check_diag(&pd);
        mp_islands_destroy(isl);
    }
    return 0;
}
