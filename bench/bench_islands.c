#define _POSIX_C_SOURCE 199309L
/* bench/bench_islands.c — predictions across islands per second on one core (the shipped
 * islands descriptions), including the best-ring search over 14 islands. Prints figures;
 * asserts nothing. Run from the repository root or pass it as the first argument. */
#include <stdio.h>
#include <stdlib.h>

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
    struct { const char *cluster, *model, *plan; } cases[] = {
        {"three-continents", "llama3-8b", "zero=3,mb=1,gb=1024,seq=8192,sync=diloco,inner_steps=100,compress=int8"},
        {"three-continents", "llama3-8b", "zero=3,mb=1,gb=1024,seq=8192,sync=hsdp"},
        {"three-continents", "llama3-8b", "zero=3,mb=1,gb=1024,seq=8192,sync=pp"},
        {"three-continents", "llama3-8b", "zero=3,mb=1,gb=1024,seq=8192,sync=fl,exchange=rotate"},
        {"intellect1-continents", "intellect-1", "zero=3,mb=1,gb=1792,seq=8192,recompute=full,sync=diloco,inner_steps=100,compress=int8"},
        {"intellect1-continents", "intellect-1", "zero=3,mb=1,gb=1792,seq=8192,recompute=full,sync=diloco,inner_steps=100,compress=int8,buckets=44,transport=rendezvous,ring=tsp"},
    };
    static mp_islands_estimate e;
    printf("%-22s %-12s %-40s %12s %12s\n", "islands", "model", "scheme", "predicts/s", "us/predict");
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        size_t len = 0;
        const char *txt = mp_cluster_preset_json(cases[k].cluster, &len);
        mp_islands *isl = NULL;
        const mp_model *m = mp_catalog_model(cat, cases[k].model);
        mp_islands_plan p;
        mp_islands_plan_init_default(&p);
        if (!txt || !m || mp_islands_from_json(cat, txt, len, cases[k].cluster, 0, NULL, &isl, &d) ||
            mp_islands_plan_parse(cases[k].plan, &p, &d)) {
            fprintf(stderr, "setup failed: %s\n", d.text);
            return 1;
        }
        long n = 0;
        double sink = 0, t0 = now_s(), t1;
        do {
            for (int i = 0; i < 20; i++) {
                mp_islands_predict(m, isl, &p, NULL, &e, NULL);
                sink += e.period_s;
            }
            n += 20;
            t1 = now_s();
        } while (t1 - t0 < 1.0);
        const char *scheme = cases[k].plan;
        for (const char *s = cases[k].plan; *s; s++)
            if (s[0] == 's' && s[1] == 'y' && s[2] == 'n' && s[3] == 'c')
                scheme = s;
        printf("%-22s %-12s %-40.40s %12.0f %12.1f   (checksum %.3g)\n", cases[k].cluster, cases[k].model,
               scheme, n / (t1 - t0), 1e6 * (t1 - t0) / n, sink);
        mp_islands_destroy(isl);
    }
    mp_catalog_destroy(cat);
    return 0;
}
