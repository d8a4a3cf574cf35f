/* bench/fit_calibration.c — fit the estimator's fitted constants on a runs.csv-style file and
 * report how well they generalise.
 *
 * The constants: the three sustained-efficiency fractions (GEMM, attention, memory-bound) and
 * the MoE dispatcher's per-copy overhead (mp_estimate_opts.moe_copy_overhead_s), which only
 * moves MoE rows.
 *
 * Usage: fit_calibration [runs.csv [slowdown]]   (default ../shared/validation/runs.csv, 0)
 * slowdown: comm_compute_slowdown_frac held fixed during the fit (a measured figure, not fitted).
 * Objective: the mean over source groups of each group's median |error| (every source counts
 * the same, so the 113 MosaicML rows do not outvote the rest).
 * Prints: the grid minimum of that objective, then for each source group the median |error|
 * on that group when the constants are fitted on all other groups (leave-one-source-out
 * cross-validation) — the figure that says how the model does on data it has not seen — and,
 * because all MoE rows come from one source, leave-one-row-out for the MoE overhead: refit it
 * on the other MoE rows (fractions held at the fit) and predict the held-out row. The defaults
 * in mp_estimate_opts_init come from this program's output.
 *
 * Memory: one validation is run per grid point and reduced at once to per-group medians and
 * the MoE rows' errors (7 x 8^3 points, ~1 ms each).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshplan/meshplan.h"

#define NG 8
#define NA 8
#define NM 8
#define NC 7
#define MAXG 64
#define MAXMOE 32
static const double gs[NG] = {0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0};
static const double as[NA] = {0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0};
static const double ms[NM] = {0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0};
static const double cs[NC] = {0, 50e-9, 100e-9, 150e-9, 200e-9, 250e-9, 300e-9};

typedef struct {
    double group_median[MAXG];
    double all_median;
    double moe_err[MAXMOE]; /* signed error_pct of the MoE rows, in file order */
} point;

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double med(double *e, size_t n)
{
    if (!n)
        return NAN;
    qsort(e, n, sizeof *e, cmp);
    return n % 2 ? e[n / 2] : 0.5 * (e[n / 2 - 1] + e[n / 2]);
}

/* Median |error| over throughput rows of one group (NULL: all). */
static double median(const mp_validation *v, const char *group)
{
    double *e = malloc((v->nrows + 1) * sizeof *e);
    size_t n = 0;
    for (size_t i = 0; i < v->nrows; i++) {
        if (!strcmp(v->rows[i].metric, "mem_gib"))
            continue;
        if (group && strcmp(v->rows[i].source_group, group))
            continue;
        e[n++] = fabs(v->rows[i].error_pct);
    }
    double m = med(e, n);
    free(e);
    return m;
}

static const char *groups[MAXG];
static char group_buf[MAXG][64];
static int ng;
static char moe_ids[MAXMOE][64];
static int nmoe;

/* Mean over groups (except `skip`, -1 for none) of each group's median |error|. */
static double objective(const point *p, int skip)
{
    double sum = 0;
    int n = 0;
    for (int q = 0; q < ng; q++) {
        if (q == skip)
            continue;
        sum += p->group_median[q];
        n++;
    }
    return n ? sum / n : NAN;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "../shared/validation/runs.csv";
    const double slowdown = argc > 2 ? atof(argv[2]) : 0.0;
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
    /* MoE rows: those whose file row names experts — found once from the catalog-free CSV
     * header via a validation at the defaults (their ids carry an "arch details" or MoE note). */
    static point pts[NG][NA][NM][NC];
    for (int i = 0; i < NG; i++)
        for (int j = 0; j < NA; j++)
            for (int k = 0; k < NM; k++)
                for (int c = 0; c < NC; c++) {
                    mp_estimate_opts o;
                    mp_estimate_opts_init(&o);
                    o.gemm_sustained_frac = gs[i];
                    o.attention_sustained_frac = as[j];
                    o.memory_bound_sustained_frac = ms[k];
                    o.moe_copy_overhead_s = cs[c];
                    o.comm_compute_slowdown_frac = slowdown;
                    mp_validation v;
                    if (mp_validate_csv(cat, buf, len, path, &o, &v, &d) != MP_OK) {
                        fprintf(stderr, "%s\n", d.text);
                        return 2;
                    }
                    if (!ng) { /* groups and MoE rows, from the first point */
                        for (size_t r = 0; r < v.nrows && ng < MAXG; r++) {
                            int seen = 0;
                            for (int q = 0; q < ng; q++)
                                seen |= !strcmp(groups[q], v.rows[r].source_group);
                            if (!seen) {
                                snprintf(group_buf[ng], sizeof group_buf[ng], "%s", v.rows[r].source_group);
                                groups[ng] = group_buf[ng];
                                ng++;
                            }
                            if (strstr(v.rows[r].assumed, "arch details") || strstr(v.rows[r].assumed, "MoE"))
                                if (nmoe < MAXMOE)
                                    snprintf(moe_ids[nmoe++], sizeof moe_ids[0], "%s", v.rows[r].id);
                        }
                    }
                    point *p = &pts[i][j][k][c];
                    for (int q = 0; q < ng; q++)
                        p->group_median[q] = median(&v, groups[q]);
                    p->all_median = median(&v, NULL);
                    for (int e = 0; e < nmoe; e++)
                        for (size_t r = 0; r < v.nrows; r++)
                            if (!strcmp(v.rows[r].id, moe_ids[e]) && strcmp(v.rows[r].metric, "mem_gib"))
                                p->moe_err[e] = v.rows[r].error_pct;
                    mp_validation_free(&v);
                }
    double best = 1e300;
    int bi = 0, bj = 0, bk = 0, bc = 0;
    for (int i = 0; i < NG; i++)
        for (int j = 0; j < NA; j++)
            for (int k = 0; k < NM; k++)
                for (int c = 0; c < NC; c++) {
                    double m = objective(&pts[i][j][k][c], -1);
                    if (m < best) {
                        best = m;
                        bi = i, bj = j, bk = k, bc = c;
                    }
                }
    const point *B = &pts[bi][bj][bk][bc];
    printf("comm_compute_slowdown_frac held at %.3f\n", slowdown);
    printf("fit on all rows: gemm_sustained_frac %.2f, attention_sustained_frac %.2f, "
           "memory_bound_sustained_frac %.2f, moe_copy_overhead_s %.0f ns -> mean of group medians "
           "%.1f%%, median over all rows %.1f%%\n", gs[bi], as[bj], ms[bk], cs[bc] * 1e9, best,
           B->all_median);
    printf("\nleave-one-source-out: fit on the other groups, median |error| on the held-out one\n");
    printf("%-26s %5s %5s %5s %6s %10s %10s\n", "held out", "gemm", "attn", "mem", "moe ns",
           "held-out%", "in-fit%");
    for (int q = 0; q < ng; q++) {
        double b = 1e300;
        int xi = 0, xj = 0, xk = 0, xc = 0;
        for (int i = 0; i < NG; i++)
            for (int j = 0; j < NA; j++)
                for (int k = 0; k < NM; k++)
                    for (int c = 0; c < NC; c++) {
                        double m = objective(&pts[i][j][k][c], q);
                        if (m < b) {
                            b = m;
                            xi = i, xj = j, xk = k, xc = c;
                        }
                    }
        printf("%-26s %5.2f %5.2f %5.2f %6.0f %10.1f %10.1f\n", groups[q], gs[xi], as[xj], ms[xk],
               cs[xc] * 1e9, pts[xi][xj][xk][xc].group_median[q], B->group_median[q]);
    }
    /* MoE rows: the overhead fitted on the other MoE rows (median |error|), fractions fixed. */
    if (nmoe > 1) {
        printf("\nMoE rows, leave-one-row-out for moe_copy_overhead_s (fractions at the fit):\n");
        printf("%-18s %8s %10s %10s\n", "held out", "moe ns", "held-out%", "in-fit%");
        double lo[MAXMOE];
        for (int h = 0; h < nmoe; h++) {
            double b = 1e300;
            int xc = 0;
            for (int c = 0; c < NC; c++) {
                double e[MAXMOE];
                int n = 0;
                for (int r = 0; r < nmoe; r++)
                    if (r != h)
                        e[n++] = fabs(pts[bi][bj][bk][c].moe_err[r]);
                double m = med(e, (size_t)n);
                if (m < b) {
                    b = m;
                    xc = c;
                }
            }
            lo[h] = fabs(pts[bi][bj][bk][xc].moe_err[h]);
            printf("%-18s %8.0f %+10.1f %+10.1f\n", moe_ids[h], cs[xc] * 1e9, pts[bi][bj][bk][xc].moe_err[h],
                   B->moe_err[h]);
        }
        double in[MAXMOE];
        for (int h = 0; h < nmoe; h++)
            in[h] = fabs(B->moe_err[h]);
        printf("median |error| of the MoE rows: %.1f%% fitted, %.1f%% held out\n", med(in, (size_t)nmoe),
               med(lo, (size_t)nmoe));
    }
    mp_catalog_destroy(cat);
    return 0;
}
