/* bench/table4_layers.c — one transformer layer of Korthikanti et al. 2022's GPT-22B (48 layers,
 * h 6144, 64 heads, TP 8, micro-batch 4 of 2048 tokens, A100 80GB, fp16, stack megatron-2021)
 * against the paper's Table 4 (ms, forward + backward: no recompute 19.6, SP 19.0, full recompute
 * 27.2, selective 20.9, selective + SP 20.3), at one point of the three sustained fractions (every
 * stack priced at it, mp_estimate_opts.stack_fractions = 0, as bench/fit_calibration's grid), or
 * at the stack profile's own fractions when none are given (bench/k22_table4.c prices it, as
 * tests/test_stacks.c test_korthikanti_table4_per_layer does). It fits nothing.
 *
 * Usage: table4_layers [GEMM ATTN MEM]   (each in (0, 1.5])
 * Prints each mode's priced ms and its error, the median and max |error|, and what SP saves
 * (published 0.6 ms). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "k22_table4.h"

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    mp_catalog *cat;
    mp_diag d = {0};
    if (mp_catalog_create(&cat, &d) != MP_OK)
        return 1;
    mp_estimate_opts o;
    mp_estimate_opts_init(&o);
    if (argc == 4) {
        o.stack_fractions = 0;
        o.gemm_sustained_frac = atof(argv[1]), o.attention_sustained_frac = atof(argv[2]);
        o.memory_bound_sustained_frac = atof(argv[3]);
        if (!(o.gemm_sustained_frac > 0 && o.gemm_sustained_frac <= 1.5 && o.attention_sustained_frac > 0 &&
              o.attention_sustained_frac <= 1.5 && o.memory_bound_sustained_frac > 0 &&
              o.memory_bound_sustained_frac <= 1.5)) {
            fprintf(stderr, "fractions: expected three numbers in (0, 1.5]\n");
            return 2;
        }
    } else if (argc != 1) {
        fprintf(stderr, "usage: table4_layers [GEMM ATTN MEM]\n");
        return 2;
    }
    double ms[K22_T4_MODES], err[K22_T4_MODES];
    if (k22_table4_layers(cat, &o, ms, err, &d)) {
        fprintf(stderr, "%s\n", d.text);
        return 1;
    }
    for (int k = 0; k < K22_T4_MODES; k++)
        printf("%-26s %6.2f ms (Table 4: %4.1f, %+5.1f%%)\n", k22_t4[k].keys, ms[k], k22_t4[k].ms, err[k]);
    printf("SP saves %.2f ms (Table 4: 0.6)\n", ms[0] - ms[1]);
    for (int k = 0; k < 5; k++)
        err[k] = fabs(err[k]);
    qsort(err, 5, sizeof err[0], cmp);
    printf("median |error| %.2f%%, max %.2f%%\n", err[2], err[4]);
    mp_catalog_destroy(cat);
    return 0;
}
