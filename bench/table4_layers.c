/* bench/table4_layers.c — one transformer layer of Korthikanti et al. 2022's GPT-22B (48 layers,
 * h 6144, 64 heads, TP 8, micro-batch 4 of 2048 tokens, A100 80GB, fp16, stack megatron-2021)
 * against the paper's Table 4 (ms, forward + backward: no recompute 19.6, SP 19.0, full recompute
 * 27.2, selective 20.9, selective + SP 20.3), at one point of the three sustained fractions (every
 * stack priced at it, mp_estimate_opts.stack_fractions = 0, as bench/fit_calibration's grid), or
 * at the stack profile's own fractions when none are given. The layer's time is the step's growth
 * per layer (48 layers against 24), the optimizer's share removed: the same measurement as
 * tests/test_stacks.c test_korthikanti_table4_per_layer. It fits nothing.
 *
 * Usage: table4_layers [GEMM ATTN MEM]   (each in (0, 1.5])
 * Prints each mode's priced ms and its error, the median and max |error|, and what SP saves
 * (published 0.6 ms). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "meshplan/meshplan.h"

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
    const mp_model *base = mp_catalog_model(cat, "gpt-18.4b"); /* h 6144, f 24576, GPT-2 layers */
    if (!base)
        return 1;
    mp_model m[2] = {*base, *base};
    for (int i = 0; i < 2; i++)
        m[i].heads = m[i].kv_heads = 64, m[i].head_dim = 96, m[i].layers = i ? 24 : 48;
    mp_cluster c;
    if (mp_cluster_from_catalog(cat, "a100-sxm4-80gb", 8, 0, NULL, &c, &d) != MP_OK)
        return 1;
    static const struct { const char *keys; double ms; } t4[] = {
        {"sp=0,recompute=none", 19.6}, {"sp=1,recompute=none", 19.0}, {"sp=0,recompute=full", 27.2},
        {"sp=0,recompute=selective", 20.9}, {"sp=1,recompute=selective", 20.3}};
    double ms[5], err[5];
    for (int k = 0; k < 5; k++) {
        double st[2], opt[2];
        for (int i = 0; i < 2; i++) {
            char txt[160];
            snprintf(txt, sizeof txt, "tp=8,mb=4,gb=4,seq=2048,precision=fp16,stack=megatron-2021,%s", t4[k].keys);
            mp_plan p;
            mp_plan_init_default(&p);
            mp_estimate *e = malloc(sizeof *e);
            if (!e || mp_plan_parse(txt, &p, &d) != MP_OK || mp_plan_resolve(&p, &m[i], 8, &d) != MP_OK ||
                mp_estimate_plan(&m[i], &c, &p, &o, e, &d) != MP_OK) {
                fprintf(stderr, "%s\n", d.text);
                free(e);
                return 1;
            }
            st[i] = e->step_s, opt[i] = e->time.optimizer;
            free(e);
        }
        ms[k] = 1e3 * ((st[0] - opt[0]) - (st[1] - opt[1])) / 24.0;
        err[k] = 100.0 * (ms[k] / t4[k].ms - 1.0);
        printf("%-26s %6.2f ms (Table 4: %4.1f, %+5.1f%%)\n", t4[k].keys, ms[k], t4[k].ms, err[k]);
    }
    printf("SP saves %.2f ms (Table 4: 0.6)\n", ms[0] - ms[1]);
    for (int k = 0; k < 5; k++)
        err[k] = fabs(err[k]);
    qsort(err, 5, sizeof err[0], cmp);
    printf("median |error| %.2f%%, max %.2f%%\n", err[2], err[4]);
    mp_catalog_destroy(cat);
    return 0;
}
