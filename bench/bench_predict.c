#define _POSIX_C_SOURCE 199309L
/* bench/bench_predict.c — analytical plan evaluations per second on one core.
 * Prints figures; asserts nothing (speed is measured here, not in unit tests). */
#include <stdio.h>

#include "bench_util.h"
#include "meshplan/meshplan.h"

int main(void)
{
    mp_catalog *cat;
    mp_diag d = {0};
    if (mp_catalog_create(&cat, &d) != MP_OK) {
        fprintf(stderr, "%s\n", d.text);
        return 1;
    }
    struct { const char *model, *gpu; long long gpus; const char *plan; } cases[] = {
        {"llama3-8b", "h100-sxm5-80gb", 8, "tp=1,mb=2,gb=64,seq=8192,zero=3"},
        {"llama3-70b", "h100-sxm5-80gb", 1024, "tp=8,pp=4,vpp=5,mb=1,gb=1024,seq=8192,zero=1,sp=1,recompute=selective"},
        {"llama3-405b", "h100-sxm5-80gb", 16384, "tp=8,pp=16,mb=1,gb=2048,seq=8192,zero=1"},
        {"deepseek-v3", "h100-sxm5-80gb", 2048, "pp=16,ep=64,etp=1,mb=1,gb=15360,seq=4096,precision=fp8,zero=1"},
        {"qwen3-235b-a22b", "b200", 64, "pp=8,vpp=2,ep=8,etp=1,mb=1,gb=1024,seq=4096,precision=fp8,zero=1"},
        {"llama3-70b", "h100-sxm5-80gb", 1024, "tp=8,cp=16,mb=1,gb=8,seq=131072,zero=1,recompute=full"},
    };
    printf("%-16s %-16s %7s %14s %12s\n", "model", "gpu", "gpus", "evals/s", "ns/eval");
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const mp_model *m = mp_catalog_model(cat, cases[k].model);
        mp_cluster c;
        mp_plan p;
        mp_plan_init_default(&p);
        if (!m || mp_cluster_from_catalog(cat, cases[k].gpu, cases[k].gpus, 0, NULL, &c, &d) ||
            mp_plan_parse(cases[k].plan, &p, &d) || mp_plan_resolve(&p, m, cases[k].gpus, &d)) {
            fprintf(stderr, "setup failed: %s\n", d.text);
            return 1;
        }
        static mp_estimate e;
        double sink = 0;
        long n = 0;
        double t0 = now_s(), t1;
        do {
            for (int i = 0; i < 1000; i++) {
                p.mb = 1 + (i & 1);
                mp_estimate_plan(m, &c, &p, NULL, &e, NULL);
                sink += e.step_s;
            }
            n += 1000;
            t1 = now_s();
        } while (t1 - t0 < 1.0);
        printf("%-16s %-16s %7lld %14.0f %12.1f   (checksum %.3g)\n", cases[k].model, cases[k].gpu,
               cases[k].gpus, n / (t1 - t0), 1e9 * (t1 - t0) / n, sink);
    }
    mp_catalog_destroy(cat);
    return 0;
}
