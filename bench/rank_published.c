/* bench/rank_published.c — where each published plan of runs.csv ranks among the plans meshplan
 * considers for its job, what meshplan would choose instead, and why.
 *
 *   rank_published [runs.csv] [id-prefix]
 *
 * Every row with model dims, no MoE and a plan (empty cells take validate's assumptions, e.g.
 * micro-batch 1 for the Llama 3 rows) is searched on its GPU, GPU count and node size, with its
 * global batch, sequence length, precision and attention kernel; the published plan is ranked
 * under the throughput objective. Prints one block per row and a summary. Asserts nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshplan/meshplan.h"
#include "runs_csv.h"

static void compact(const mp_plan *p, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "tp%lld cp%lld pp%lld vpp%lld dp%lld mb%lld sp%d z%d",
                     (long long)p->tp, (long long)p->cp, (long long)p->pp, (long long)p->vpp,
                     (long long)p->dp, (long long)p->mb, p->sp, p->zero);
    if (n > 0 && (size_t)n < cap && p->hsdp)
        n += snprintf(buf + n, cap - (size_t)n, " hsdp%lld", (long long)p->hsdp);
    if (n > 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, " rc-%s", mp_recompute_name(p->recompute));
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "../shared/validation/runs.csv";
    const char *prefix = argc > 2 ? argv[2] : "";
    mp_catalog *cat;
    mp_diag d = {0};
    if (mp_catalog_create(&cat, &d) != MP_OK) {
        fprintf(stderr, "%s\n", d.text);
        return 1;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot open\n", path);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)len + 1);
    if (!text || fread(text, 1, (size_t)len, f) != (size_t)len) {
        fprintf(stderr, "%s: read error\n", path);
        return 1;
    }
    text[len] = '\0';
    fclose(f);
    rc_row *rows;
    int n = rc_read(cat, text, (size_t)len, &rows);
    double *gain = calloc((size_t)n + 1, sizeof *gain), *pct = calloc((size_t)n + 1, sizeof *pct);
    int ranked = 0, infeasible = 0, first = 0;
    double wall = 0;
    for (int i = 0; i < n; i++) {
        rc_row *r = &rows[i];
        if (!r->ok || strncmp(r->id, prefix, strlen(prefix)))
            continue;
        mp_cluster c;
        if (mp_cluster_from_catalog(cat, r->gpu, r->gpus, (int)r->gpn, NULL, &c, &d) != MP_OK)
            continue;
        mp_search_opts o;
        mp_search_opts_init(&o);
        o.pin.gb = r->p.gb;
        o.pin.seq = r->p.seq;
        o.pin.precision = r->p.precision;
        o.pin.flash = r->p.flash;
        o.top_n = 1;
        o.rank_plan = &r->p;
        mp_search_result res;
        if (mp_search(&r->m, &c, 1, &o, &res, &d) != MP_OK) {
            fprintf(stderr, "%s: %s\n", r->id, d.text);
            mp_diag_clear(&d);
            continue;
        }
        wall += res.wall_s;
        char pub[160], best[160];
        compact(&r->p, pub, sizeof pub);
        printf("%s (%s, %lld x %s, gb %lld x %lld%s)\n", r->id, r->m.name, (long long)r->gpus, r->gpu,
               (long long)r->p.gb, (long long)r->p.seq, r->full ? "" : ", micro-batch assumed 1");
        if (!res.rank_in_space)
            printf("  NOT IN THE SPACE: %s\n", pub);
        if (!res.rank_feasible) {
            printf("  published %-48s does not fit: %.1f of %.1f GiB\n", pub,
                   res.rank_entry.memory_bytes / 1073741824.0, res.rank_entry.capacity_bytes / 1073741824.0);
            infeasible++;
        } else {
            printf("  published %-48s rank %llu of %llu feasible (%llu plans), %.4g tokens/s\n", pub,
                   (unsigned long long)res.rank, (unsigned long long)res.counts.feasible,
                   (unsigned long long)res.counts.plans, res.rank_entry.tokens_per_s);
            pct[ranked] = 100.0 * (double)res.rank / (double)res.counts.feasible;
            gain[ranked++] = res.ntop ? res.top[0].tokens_per_s / res.rank_entry.tokens_per_s : 1.0;
            first += res.rank == 1;
        }
        if (res.ntop) {
            compact(&res.top[0].plan, best, sizeof best);
            printf("  meshplan  %-48s %.4g tokens/s (%+.1f%%), %s\n", best, res.top[0].tokens_per_s,
                   100.0 * (res.top[0].tokens_per_s / res.rank_entry.tokens_per_s - 1.0),
                   res.top[0].bottleneck);
            if (res.rank_feasible && res.rank > 1) {
                mp_search_explanation x;
                mp_search_entry pe = res.rank_entry;
                if (mp_search_explain(&r->m, &c, 1, &o, &res.top[0], 1, &pe, (int)res.rank, &x, NULL) == MP_OK)
                    printf("  why: %s\n", x.text);
            }
        }
        mp_search_result_free(&res);
    }
    qsort(gain, (size_t)ranked, sizeof *gain, cmp_dbl);
    qsort(pct, (size_t)ranked, sizeof *pct, cmp_dbl);
    if (ranked)
        printf("\nsummary: %d published plans searched; %d fit meshplan's memory model and are "
               "ranked, %d do not; %d ranked #1; median rank percentile %.2f%% (rank / feasible "
               "plans); median predicted gain of meshplan's #1 over the published plan %.1f%% "
               "(max %.1f%%); %.1f s of search\n",
               ranked + infeasible, ranked, infeasible, first, pct[ranked / 2],
               100.0 * (gain[ranked / 2] - 1.0), 100.0 * (gain[ranked - 1] - 1.0), wall);
    free(gain);
    free(pct);
    free(rows);
    free(text);
    mp_catalog_destroy(cat);
    return 0;
}
