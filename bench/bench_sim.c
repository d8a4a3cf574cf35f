#define _POSIX_C_SOURCE 199309L
/* bench/bench_sim.c — wall time to simulate one training step event by event, and to write its
 * Chrome trace. The case: Llama 3.1 405B on 16,384 H100 (tp 8, pp 16, dp 128), 128
 * micro-batches (global batch 16,384 sequences of 8,192 tokens); goal under 0.5 s. Prints figures;
 * asserts nothing (speed is measured here, not in unit tests). */
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"
#include "meshplan/meshplan.h"

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(void)
{
    mp_catalog *cat;
    mp_diag d = {0};
    if (mp_catalog_create(&cat, &d) != MP_OK) {
        fprintf(stderr, "%s\n", d.text);
        return 1;
    }
    static const char *const plans[] = {
        "tp=8,pp=16,mb=1,gb=16384,seq=8192,zero=1,sp=1",
        "tp=8,pp=16,vpp=2,mb=1,gb=16384,seq=8192,zero=1,sp=1",
        "tp=8,pp=16,mb=1,gb=16384,seq=8192,zero=1,sp=1,schedule=zb",
        "tp=8,pp=16,mb=1,gb=16384,seq=8192,zero=3,sp=1",
    };
    const mp_model *m = mp_catalog_model(cat, "llama3-405b");
    mp_cluster c;
    if (!m || mp_cluster_from_catalog(cat, "h100-sxm5-80gb", 16384, 0, NULL, &c, &d) != MP_OK) {
        fprintf(stderr, "setup failed: %s\n", d.text);
        return 1;
    }
    static mp_estimate e;
    printf("llama3-405b on 16384 x h100-sxm5-80gb, 128 micro-batches, default options (contention on)\n");
    printf("%-56s %8s %8s %10s %10s %10s %9s\n", "plan", "tasks", "events", "sim (s)", "+trace (s)",
           "trace MB", "step (s)");
    for (size_t k = 0; k < sizeof plans / sizeof plans[0]; k++) {
        mp_plan p;
        mp_plan_init_default(&p);
        if (mp_plan_parse(plans[k], &p, &d) || mp_plan_resolve(&p, m, 16384, &d) ||
            mp_estimate_plan(m, &c, &p, NULL, &e, &d)) {
            fprintf(stderr, "plan %s: %s\n", plans[k], d.text);
            return 1;
        }
        enum { REPS = 7 };
        double t_sim[REPS], t_all[REPS];
        mp_sim_result r = {0};
        long bytes = 0;
        for (int i = 0; i < REPS; i++) {
            mp_sim *s = NULL;
            double t0 = now_s();
            if (mp_sim_run(m, &c, &p, &e, NULL, &s, &r, &d) != MP_OK) {
                fprintf(stderr, "sim %s: %s\n", plans[k], d.text);
                return 1;
            }
            double t1 = now_s();
            FILE *f = tmpfile();
            if (!f || mp_sim_write_trace(s, f, plans[k], &d) != MP_OK) {
                fprintf(stderr, "trace failed\n");
                return 1;
            }
            fflush(f);
            double t2 = now_s();
            bytes = ftell(f);
            fclose(f);
            mp_sim_destroy(s);
            t_sim[i] = t1 - t0;
            t_all[i] = t2 - t0;
        }
        qsort(t_sim, REPS, sizeof t_sim[0], cmp_d);
        qsort(t_all, REPS, sizeof t_all[0], cmp_d);
        printf("%-56s %8lld %8lld %10.4f %10.4f %10.1f %9.3f\n", plans[k], (long long)r.tasks,
               (long long)r.events, t_sim[REPS / 2], t_all[REPS / 2], bytes / 1e6, r.step_s);
    }
    printf("(median of 7 runs; sim = mp_sim_run, +trace = and writing the Chrome trace to a file)\n");
    mp_catalog_destroy(cat);
    return 0;
}
