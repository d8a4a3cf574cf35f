/* bench/fit_calibration.c — fit the estimator's three sustained-efficiency fractions on a
 * runs.csv-style file and report how well they generalise.
 *
 * Usage: fit_calibration [runs.csv]   (default ../shared/validation/runs.csv)
 * Objective: the mean over source groups of each group's median |error| (every source counts
 * the same, so the 113 MosaicML rows do not outvote the rest).
 * Prints: the grid minimum of that objective, then for each source
 * group the median |error| on that group when the fractions are fitted on all other groups
 * (leave-one-source-out cross-validation) — the figure that says how the model does on data it
 * has not seen. The defaults in mp_estimate_opts_init come from this program's output.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshplan/meshplan.h"

#define NG 8
#define NA 8
#define NM 8
static const double gs[NG] = {0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0};
static const double as[NA] = {0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0};
static const double ms[NM] = {0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0};

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const mp_validation *v, const char *group, int in);

/* Mean over groups (except `skip`, may be NULL) of each group's median |error|. */
static double objective(const mp_validation *v, const char **groups, int ng, const char *skip)
{
    double sum = 0;
    int n = 0;
    for (int q = 0; q < ng; q++) {
        if (skip && !strcmp(skip, groups[q]))
            continue;
        sum += median(v, groups[q], 1);
        n++;
    }
    return n ? sum / n : NAN;
}

/* Median |error| over throughput rows, including (in = 1) or excluding (in = 0) a group. */
static double median(const mp_validation *v, const char *group, int in)
{
    double *e = malloc((v->nrows + 1) * sizeof *e);
    size_t n = 0;
    for (size_t i = 0; i < v->nrows; i++) {
        if (!strcmp(v->rows[i].metric, "mem_gib"))
            continue;
        if (group && (strcmp(v->rows[i].source_group, group) == 0) != in)
            continue;
        e[n++] = fabs(v->rows[i].error_pct);
    }
    double m = NAN;
    if (n) {
        qsort(e, n, sizeof *e, cmp);
        m = n % 2 ? e[n / 2] : 0.5 * (e[n / 2 - 1] + e[n / 2]);
    }
    free(e);
    return m;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "../shared/validation/runs.csv";
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 2;
    }
    static char buf[1 << 22];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    mp_catalog *cat;
    mp_diag d = {0};
    if (mp_catalog_create(&cat, &d) != MP_OK)
        return 1;
    static mp_validation grid[NG][NA][NM];
    for (int i = 0; i < NG; i++)
        for (int j = 0; j < NA; j++)
            for (int k = 0; k < NM; k++) {
                mp_estimate_opts o;
                mp_estimate_opts_init(&o);
                o.gemm_sustained_frac = gs[i];
                o.attention_sustained_frac = as[j];
                o.memory_bound_sustained_frac = ms[k];
                if (mp_validate_csv(cat, buf, len, path, &o, &grid[i][j][k], &d) != MP_OK) {
                    fprintf(stderr, "%s\n", d.text);
                    return 2;
                }
            }
    /* Groups, from the first grid point. */
    const char *groups[64];
    int ng = 0;
    const mp_validation *v0 = &grid[0][0][0];
    for (size_t r = 0; r < v0->nrows && ng < 64; r++) {
        int seen = 0;
        for (int q = 0; q < ng; q++)
            seen |= !strcmp(groups[q], v0->rows[r].source_group);
        if (!seen)
            groups[ng++] = v0->rows[r].source_group;
    }
    double best = 1e300;
    int bi = 0, bj = 0, bk = 0;
    for (int i = 0; i < NG; i++)
        for (int j = 0; j < NA; j++)
            for (int k = 0; k < NM; k++) {
                double m = objective(&grid[i][j][k], groups, ng, NULL);
                if (m < best) {
                    best = m;
                    bi = i, bj = j, bk = k;
                }
            }
    printf("fit on all rows: gemm_sustained_frac %.2f, attention_sustained_frac %.2f, "
           "memory_bound_sustained_frac %.2f -> mean of group medians %.1f%%, median over all %zu rows "
           "%.1f%%\n", gs[bi], as[bj], ms[bk], best, grid[bi][bj][bk].nrows,
           median(&grid[bi][bj][bk], NULL, 1));
    printf("\nleave-one-source-out: fit on the other groups, median |error| on the held-out one\n");
    printf("%-26s %5s %5s %5s %10s %10s\n", "held out", "gemm", "attn", "mem", "held-out%", "in-fit%");
    for (int q = 0; q < ng; q++) {
        double b = 1e300;
        int xi = 0, xj = 0, xk = 0;
        for (int i = 0; i < NG; i++)
            for (int j = 0; j < NA; j++)
                for (int k = 0; k < NM; k++) {
                    double m = objective(&grid[i][j][k], groups, ng, groups[q]);
                    if (m < b) {
                        b = m;
                        xi = i, xj = j, xk = k;
                    }
                }
        printf("%-26s %5.2f %5.2f %5.2f %10.1f %10.1f\n", groups[q], gs[xi], as[xj], ms[xk],
               median(&grid[xi][xj][xk], groups[q], 1), median(&grid[bi][bj][bk], groups[q], 1));
    }
    for (int i = 0; i < NG; i++)
        for (int j = 0; j < NA; j++)
            for (int k = 0; k < NM; k++)
                mp_validation_free(&grid[i][j][k]);
    mp_catalog_destroy(cat);
    return 0;
}
