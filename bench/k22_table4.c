/* bench/k22_table4.c — Korthikanti et al. 2022 (arXiv 2205.05198) Table 4: one transformer layer
 * of GPT-22B (48 layers, h 6144, 64 heads of 96, TP 8, micro-batch 4 of 2048 tokens, A100 80GB,
 * fp16, stack megatron-2021), forward + backward, in five modes. The layer's priced time is the
 * step's growth per layer (48 layers against 24), the optimizer's share removed: the measurement
 * of tests/test_stacks.c test_korthikanti_table4_per_layer. */
#include <stdio.h>
#include <stdlib.h>

#include "k22_table4.h"

const struct k22_t4_mode k22_t4[K22_T4_MODES] = {
    {"sp=0,recompute=none", 19.6}, {"sp=1,recompute=none", 19.0}, {"sp=0,recompute=full", 27.2},
    {"sp=0,recompute=selective", 20.9}, {"sp=1,recompute=selective", 20.3}};

int k22_table4_layers(const mp_catalog *cat, const mp_estimate_opts *opts, double ms[K22_T4_MODES],
                      double err_pct[K22_T4_MODES], mp_diag *d)
{
    const mp_model *base = mp_catalog_model(cat, "gpt-18.4b"); /* h 6144, f 24576, GPT-2 layers */
    if (!base)
        return 1;
    mp_model m[2] = {*base, *base};
    for (int i = 0; i < 2; i++)
        m[i].heads = m[i].kv_heads = 64, m[i].head_dim = 96, m[i].layers = i ? 24 : 48;
    mp_cluster c;
    if (mp_cluster_from_catalog(cat, "a100-sxm4-80gb", 8, 0, NULL, &c, d) != MP_OK)
        return 1;
    mp_estimate *e = malloc(sizeof *e);
    if (!e)
        return 1;
    for (int k = 0; k < K22_T4_MODES; k++) {
        double st[2], opt[2];
        for (int i = 0; i < 2; i++) {
            char txt[160];
            snprintf(txt, sizeof txt, "tp=8,mb=4,gb=4,seq=2048,precision=fp16,stack=megatron-2021,%s", k22_t4[k].keys);
            mp_plan p;
            mp_plan_init_default(&p);
            if (mp_plan_parse(txt, &p, d) != MP_OK || mp_plan_resolve(&p, &m[i], 8, d) != MP_OK ||
                mp_estimate_plan(&m[i], &c, &p, opts, e, d) != MP_OK) {
                free(e);
                return 1;
            }
            st[i] = e->step_s, opt[i] = e->time.optimizer;
        }
        ms[k] = 1e3 * ((st[0] - opt[0]) - (st[1] - opt[1])) / 24.0;
        err_pct[k] = 100.0 * (ms[k] / k22_t4[k].ms - 1.0);
    }
    free(e);
    return 0;
}
