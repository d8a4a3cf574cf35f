/* bench/layer_parts.c — one dense layer's priced parts for one plan, per micro-batch: the
 * forward GEMMs, attention core and element-wise kernels, their backward, the recompute and the
 * TP collectives of a forward pass, as the workload holds them (mp_workload_build, the plan's
 * stack profile's fitted fractions and fusions; the same pricing as predict). The per-component
 * table of docs/stacks.md ("Why the rows above 22B are predicted slow") is its output.
 *
 * Usage: layer_parts MODEL GPUS PLAN [GPU]
 *   MODEL: a catalog model key; GPUS: the job's GPU count (1..2^24); PLAN: plan keys as predict
 *   takes them; GPU: a catalog GPU key (default a100-sxm4-80gb), on its usual node.
 * Prints milliseconds. Exit 2 on bad input (the message names it). */
#include <stdio.h>
#include <stdlib.h>

#include "meshplan/meshplan.h"
#include "meshplan/stack.h"
#include "meshplan/workload.h"

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: layer_parts MODEL GPUS PLAN [GPU]\n");
        return 2;
    }
    const int gpus = atoi(argv[2]);
    const char *gpu = argc > 4 ? argv[4] : "a100-sxm4-80gb";
    if (gpus < 1) {
        fprintf(stderr, "GPUS: '%s' is not a GPU count >= 1\n", argv[2]);
        return 2;
    }
    mp_catalog *cat;
    mp_diag d = {0};
    if (mp_catalog_create(&cat, &d) != MP_OK)
        return 1;
    int rc = 2;
    const mp_model *m = mp_catalog_model(cat, argv[1]);
    mp_cluster c;
    mp_plan p;
    mp_plan_init_default(&p);
    static mp_workload w;
    if (!m)
        fprintf(stderr, "MODEL: '%s' is not a catalog model (meshplan catalog models)\n", argv[1]);
    else if (mp_cluster_from_catalog(cat, gpu, gpus, 0, NULL, &c, &d) != MP_OK ||
             mp_plan_parse(argv[3], &p, &d) != MP_OK || mp_plan_resolve(&p, m, gpus, &d) != MP_OK)
        fprintf(stderr, "%s\n", d.text);
    else {
        /* The fractions and fusions the estimator gives the plan's stack (estimate.c
         * workload_opts, with the caller's fractions at their defaults). */
        const mp_stack_profile *sk = mp_stack_profile_of((mp_stack_id)p.stack);
        mp_workload_opts wo;
        mp_workload_opts_init(&wo);
        wo.gemm_sustained_frac = sk->gemm_sustained_frac;
        wo.attention_sustained_frac = sk->attention_sustained_frac;
        wo.memory_bound_sustained_frac = sk->memory_bound_sustained_frac;
        wo.elementwise_bytes_frac = sk->elementwise_bytes_frac;
        wo.fp8_scale_bytes_per_elem = sk->fp8_scale_bytes_per_elem;
        wo.zero3_gather_per_tensor = sk->zero3_gather_per_tensor;
        if (mp_workload_build(m, &c, &p, MP_WL_TRAIN_STEP, &wo, &w, &d) != MP_OK)
            fprintf(stderr, "%s\n", d.text);
        else {
            const mp_wl_layer *l = &w.layer[MP_LK_DENSE];
            printf("stack %s, one dense layer, one micro-batch (ms)\n", mp_stack_name((mp_stack_id)p.stack));
            printf("forward:   gemm %.3f  attention core %.3f  element-wise %.3f  = %.3f\n", 1e3 * l->gemm_s,
                   1e3 * l->attn_s, 1e3 * l->elem_s, 1e3 * l->fwd_s);
            printf("backward:  %.3f (element-wise %.3f)\n", 1e3 * l->bwd_s, 1e3 * l->elem_bwd_s);
            printf("recompute: %.3f\n", 1e3 * l->recompute_s);
            printf("TP:        forward %.3f  recompute %.3f\n", 1e3 * l->tp_fwd_s, 1e3 * l->tp_recompute_s);
            rc = 0;
        }
    }
    mp_catalog_destroy(cat);
    return rc;
}
