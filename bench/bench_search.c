#define _POSIX_C_SOURCE 199309L
/* bench/bench_search.c — speed of the plan search. Prints figures; asserts nothing.
 *
 *   bench_search [threads...]      (default: 1 and 2)
 *
 * The job of the issue: Llama 3.1 405B on 16,384 H100 SXM5 80GB, global batch 2048 x 8192
 * tokens. For each thread count: the wall time of the full search (pruned, as `meshplan search`
 * runs it) and of the exhaustive one (every plan evaluated), plans evaluated, evaluations per
 * second per core (evaluated / wall / threads), and the winner so runs can be compared. Each
 * figure is the best of 3 runs (the machine may be shared; the best run is the least disturbed).
 * Last, one pruned run over every rank order (--orders all, ~20x the plans). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "meshplan/meshplan.h"

int main(int argc, char **argv)
{
    mp_catalog *cat;
    mp_diag d = {0};
    if (mp_catalog_create(&cat, &d) != MP_OK) {
        fprintf(stderr, "%s\n", d.text);
        return 1;
    }
    const mp_model *m = mp_catalog_model(cat, "llama3-405b");
    mp_cluster c;
    if (!m || mp_cluster_from_catalog(cat, "h100-sxm5-80gb", 16384, 0, NULL, &c, &d) != MP_OK) {
        fprintf(stderr, "setup failed: %s\n", d.text);
        return 1;
    }
    int threads[16] = {1, 2}, nth = 2;
    if (argc > 1) {
        nth = 0;
        for (int i = 1; i < argc && nth < 16; i++)
            threads[nth++] = atoi(argv[i]);
    }
    printf("llama3-405b on 16384 x h100-sxm5-80gb, gb 2048 x seq 8192\n");
    printf("%-10s %7s %10s %10s %9s %8s %14s  %s\n", "mode", "threads", "plans", "evaluated",
           "feasible", "wall_s", "evals/s/core", "winner");
    /* mode 0: pruned; 1: exhaustive; 2: pruned, every rank order (one run: it is long). */
    for (int mode = 0; mode < 3; mode++) {
        for (int k = 0; k < nth; k++) {
            const int prune = mode != 1;
            if (mode == 2 && k > 0)
                break;
            mp_search_opts o;
            mp_search_opts_init(&o);
            o.pin.gb = 2048;
            o.pin.seq = 8192;
            o.threads = threads[k];
            o.prune = prune;
            o.all_orders = mode == 2;
            mp_search_result r;
            double best = 1e300;
            for (int rep = 0; rep < (mode == 2 ? 1 : 3); rep++) {
                if (mp_search(m, &c, 1, &o, &r, &d) != MP_OK) {
                    fprintf(stderr, "search failed: %s\n", d.text);
                    return 1;
                }
                if (r.wall_s < best)
                    best = r.wall_s;
                if (rep < (mode == 2 ? 0 : 2))
                    mp_search_result_free(&r);
            }
            r.wall_s = best;
            char plan[512] = "none";
            if (r.ntop)
                mp_plan_format(&r.top[0].plan, plan, sizeof plan);
            printf("%-10s %7d %10llu %10llu %9llu %8.3f %14.0f  %s (%.6g tok/s)\n",
                   mode == 2 ? "all-orders" : prune ? "pruned" : "exhaustive", r.threads,
                   (unsigned long long)r.counts.plans,
                   (unsigned long long)r.counts.evaluated, (unsigned long long)r.counts.feasible,
                   r.wall_s, (double)r.counts.evaluated / r.wall_s / r.threads, plan,
                   r.ntop ? r.top[0].tokens_per_s : 0.0);
            mp_search_result_free(&r);
        }
    }
    mp_catalog_destroy(cat);
    return 0;
}
