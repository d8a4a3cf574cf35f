#define _POSIX_C_SOURCE 199309L
/* bench/bench_predict.c — analytical plan evaluations per second on one core.
 * Prints figures; asserts nothing (speed is measured here, not in unit tests).
 *
 * Two columns per case: with the default options (texts formatted, as predict runs it) and with
 * the search's (mp_estimate_opts.skip_text = 1). Times are the thread's CPU time, so a machine
 * shared with other work inflates them less than wall time would. `bench_predict N` runs exactly
 * N evaluations per case (for instruction counts under valgrind --tool=callgrind), and
 * `bench_predict N K` case K alone, `bench_predict N K search` (or `predict`) only with the
 * search's (or the default) options; without them each case runs for about a second. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "meshplan/meshplan.h"

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ns per evaluation of plan p (mb alternating 1, 2) with options o; n fixed when > 0. */
static double ns_per_eval(const mp_model *m, const mp_cluster *c, mp_plan p, const mp_estimate_opts *o,
                          long fixed, double *sink)
{
    static mp_estimate e;
    long n = 0;
    double t0 = cpu_s(), t1;
    do {
        for (int i = 0; i < 1000 && (fixed <= 0 || n < fixed); i++, n++) {
            p.mb = 1 + (i & 1);
            mp_estimate_plan(m, c, &p, o, &e, NULL);
            *sink += e.step_s;
        }
        t1 = cpu_s();
    } while (fixed > 0 ? n < fixed : t1 - t0 < 1.0);
    return 1e9 * (t1 - t0) / (double)n;
}

int main(int argc, char **argv)
{
    long fixed = argc > 1 ? atol(argv[1]) : 0;
    long only = argc > 2 ? atol(argv[2]) : -1;
    int search_only = argc > 3 && strcmp(argv[3], "search") == 0;
    int predict_only = argc > 3 && strcmp(argv[3], "predict") == 0;
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
    printf("%-16s %-16s %7s %14s %12s %16s\n", "model", "gpu", "gpus", "evals/s", "ns/eval",
           "ns/eval (search)");
    /* The search's options: no texts, a collective cache per thread (workload.h mp_wl_cache). */
    static mp_wl_cache cache;
    mp_estimate_opts quiet;
    mp_estimate_opts_init(&quiet);
    quiet.skip_text = 1;
    quiet.cache = &cache;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        if (only >= 0 && (long)k != only)
            continue;
        const mp_model *m = mp_catalog_model(cat, cases[k].model);
        mp_cluster c;
        mp_plan p;
        mp_plan_init_default(&p);
        if (!m || mp_cluster_from_catalog(cat, cases[k].gpu, cases[k].gpus, 0, NULL, &c, &d) ||
            mp_plan_parse(cases[k].plan, &p, &d) || mp_plan_resolve(&p, m, cases[k].gpus, &d)) {
            fprintf(stderr, "setup failed: %s\n", d.text);
            return 1;
        }
        double sink = 0;
        double ns = search_only ? 0.0 : ns_per_eval(m, &c, p, NULL, fixed, &sink);
        double ns_q = predict_only ? 0.0 : ns_per_eval(m, &c, p, &quiet, fixed, &sink);
        printf("%-16s %-16s %7lld %14.0f %12.1f %16.1f   (checksum %.3g)\n", cases[k].model,
               cases[k].gpu, cases[k].gpus, 1e9 / ns, ns, ns_q, sink);
    }
    mp_catalog_destroy(cat);
    return 0;
}
