/* bench/fraction_sweep.c — every source group's error at one point of the three sustained
 * fractions, every stack priced at that point (mp_estimate_opts.stack_fractions = 0, as
 * bench/fit_calibration's grid does): the figures of docs/stacks.md's GEMM-fraction table for the
 * Korthikanti et al. 2022 set. It fits nothing; it prints what one point gives.
 *
 * Usage: fraction_sweep GEMM ATTN MEM [runs.csv] [--rows GROUP]
 *   GEMM, ATTN, MEM: gemm / attention / memory-bound sustained fractions, each in (0, 1.5];
 *   runs.csv: default ../shared/validation/runs.csv (run from the repository root);
 *   --rows GROUP: also print every row of that source group with its signed error.
 * Prints per (source group, stack): rows, median, mean and max |error| in %. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshplan/meshplan.h"

#define MAXG 64
#define MAXR 1024

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: fraction_sweep GEMM ATTN MEM [runs.csv] [--rows GROUP]\n");
        return 2;
    }
    double fr[3];
    for (int i = 0; i < 3; i++) {
        fr[i] = atof(argv[i + 1]);
        if (!(fr[i] > 0 && fr[i] <= 1.5)) {
            fprintf(stderr, "fraction %d: '%s' is not a number in (0, 1.5]\n", i + 1, argv[i + 1]);
            return 2;
        }
    }
    const char *path = "../shared/validation/runs.csv", *rows_of = NULL;
    for (int i = 4; i < argc; i++) {
        if (!strcmp(argv[i], "--rows") && i + 1 < argc)
            rows_of = argv[++i];
        else
            path = argv[i];
    }
    static char buf[1 << 21];
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        perror(path);
        return 2;
    }
    size_t len = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    mp_catalog *cat;
    mp_diag d = {0};
    if (mp_catalog_create(&cat, &d) != MP_OK)
        return 1;
    mp_estimate_opts o;
    mp_estimate_opts_init(&o);
    o.stack_fractions = 0;
    o.gemm_sustained_frac = fr[0], o.attention_sustained_frac = fr[1], o.memory_bound_sustained_frac = fr[2];
    mp_validation v;
    if (mp_validate_csv(cat, buf, len, path, &o, &v, &d) != MP_OK) {
        fprintf(stderr, "%s\n", d.text);
        return 2;
    }
    static char name[MAXG][96];
    static double err[MAXG][MAXR];
    int n[MAXG] = {0}, ng = 0;
    for (size_t r = 0; r < v.nrows; r++) {
        const mp_val_row *row = &v.rows[r];
        if (!strcmp(row->metric, "mem_gib"))
            continue;
        char key[96];
        snprintf(key, sizeof key, "%s (%s)", row->source_group, row->stack);
        int q = 0;
        while (q < ng && strcmp(name[q], key))
            q++;
        if (q == ng && ng < MAXG)
            snprintf(name[ng++], sizeof name[0], "%s", key);
        if (q < ng && n[q] < MAXR)
            err[q][n[q]++] = fabs(row->error_pct);
        if (rows_of && !strcmp(row->source_group, rows_of))
            printf("  %-22s %-22s %+7.2f%%\n", row->id, row->metric, row->error_pct);
    }
    printf("gemm %.4f attn %.2f mem %.2f (every stack)\n", fr[0], fr[1], fr[2]);
    printf("%-44s %5s %8s %8s %8s\n", "group (stack)", "rows", "median%", "mean%", "max%");
    for (int q = 0; q < ng; q++) {
        double sum = 0;
        for (int i = 0; i < n[q]; i++)
            sum += err[q][i];
        qsort(err[q], (size_t)n[q], sizeof err[q][0], cmp);
        int k = n[q];
        double med = k % 2 ? err[q][k / 2] : 0.5 * (err[q][k / 2 - 1] + err[q][k / 2]);
        printf("%-44s %5d %8.2f %8.2f %8.2f\n", name[q], k, med, sum / k, err[q][k - 1]);
    }
    mp_validation_free(&v);
    mp_catalog_destroy(cat);
    return 0;
}
