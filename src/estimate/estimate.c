/* src/estimate/estimate.c — the analytical estimator of a training step: builds the workload
 * (include/meshplan/workload.h: layer kinds, compute per pass, collectives priced once), then
 * memory per stage (memory.c), and unless the caller only needs feasibility of a plan over
 * memory, the step (step.c) and the words (explain.c).
 *
 * One plan is evaluated with no allocation in O(pp) time (O(pp * vpp) for an interleaved MoE
 * model, whose dense and MoE layers are counted chunk by chunk). docs/model.md derives every
 * term; docs/workload.md says where a new phase (prefill, decode) goes.
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "estimate_internal.h"
#include "meshplan/stack.h"

void mp_estimate_opts_init(mp_estimate_opts *o)
{
    /* Defaults and their sources: docs/model.md "Assumptions". */
    o->grad_reduce_overlap_frac = 1.0;   /* bucketed DP reduction hides behind backward (Li et al. 2020, PyTorch DDP) */
    o->zero3_overlap_frac = 1.0;         /* FSDP prefetch hides gathers behind the previous layer (Zhao et al. 2023) */
    o->comm_compute_slowdown_frac = 0.0; /* set by calibration; 0 = no interference */
    /* The verdict margin: the spread of reserved memory for one configuration, 63 vs 58 GiB
     * reserved (42 allocated) for Llama 2 70B FSDP pure bf16 with two AdamW implementations,
     * meta-llama/llama-cookbook issue 120: 8% of the total (docs/memory.md "The verdict"). */
    o->allocator_margin_frac = 0.08;
    /* Calibrated on ../shared/validation/runs.csv (bench/fit_calibration prints the grid and the
     * leave-one-source-out error; docs/model.md "Calibration"). */
    o->gemm_sustained_frac = 0.85;
    o->attention_sustained_frac = 0.5;
    o->memory_bound_sustained_frac = 0.6;
    /* Balanced routing: what published MoE throughputs are measured with (Megatron-Core's
     * --moe-router-force-load-balancing in the Megatron-Bridge benchmarks, all MoE rows of
     * validation/runs.csv) and what auxiliary-loss-free balancing approaches (DeepSeek-AI 2024
     * Sec. 2.1.2). Real routers are less even: raise it with the plan key imbalance. */
    o->moe_imbalance = 1.0;
    /* Fitted on the six MoE rows of validation/runs.csv (bench/fit_calibration; docs/model.md
     * "Calibration"): what Megatron-Core's dropless token dispatcher costs per (token, expert)
     * copy beyond its HBM and NVLink bytes. */
    o->moe_copy_overhead_s = 150e-9;
    o->skip_text = 0;
    o->feasibility_only = 0;
    o->cache = NULL;
    o->skip_per_stage = 0;
    o->memory_only = 0;
    o->stack_fractions = 1;
    o->memory_kept = 0;
    o->memo = NULL;
}

/* What the workload is priced with: the stack's fitted fractions (or the caller's), its
 * element-wise fusions and fp8 scaling (data/stacks.json). */
static void workload_opts(const mp_estimate_opts *o, const mp_stack_profile *sk, mp_workload_opts *wo)
{
    mp_workload_opts_init(wo);
    const mp_stack_profile *g = mp_stack_profile_of(MP_STACK_DEFAULT);
    const int from_stack = o->stack_fractions && sk && g;
    wo->gemm_sustained_frac = o->gemm_sustained_frac * (from_stack ? sk->gemm_sustained_frac / g->gemm_sustained_frac : 1.0);
    wo->attention_sustained_frac = o->attention_sustained_frac *
                                   (from_stack ? sk->attention_sustained_frac / g->attention_sustained_frac : 1.0);
    wo->memory_bound_sustained_frac = o->memory_bound_sustained_frac *
                                      (from_stack ? sk->memory_bound_sustained_frac / g->memory_bound_sustained_frac : 1.0);
    wo->moe_imbalance = o->moe_imbalance;
    wo->moe_copy_overhead_s = o->moe_copy_overhead_s;
    if (sk) {
        wo->elementwise_bytes_frac = sk->elementwise_bytes_frac;
        wo->fp8_scale_bytes_per_elem = sk->fp8_scale_bytes_per_elem;
        wo->zero3_gather_per_tensor = sk->zero3_gather_per_tensor;
        wo->zero3_gather_host_s = sk->zero3_gather_host_s;
        wo->zero3_gather_host_rank_s = sk->zero3_gather_host_rank_s;
        wo->zero3_reduce_bytes = sk->zero3_reduce_bytes;
    }
}

/* The plan as the stack and the GPU run it: pre-Ampere GPUs (no bf16 tensor cores: V100, T4)
 * have no FlashAttention-2 (its README: Ampere or newer), so a plan that does not ask for
 * fused attention runs the unfused core there. */
static void effective_plan(const mp_plan *p, const mp_cluster *c, mp_plan *q)
{
    *q = *p;
    if (!p->flash_given && c->gpu.peak_flops_per_s[MP_DT_BF16] <= 0)
        q->flash = 0;
}

/* Zero the fields before the per-stage table. With skip_text the texts (peak_moment, reasons,
 * bottleneck: 1.2 of the 2.1 KB) are only emptied, their first byte set: the hot loop never
 * writes them, and clearing them was a sixth of a memory-only estimate's instructions. */
static void clear_estimate(mp_estimate *e, int skip_text)
{
    if (!skip_text) {
        memset(e, 0, offsetof(mp_estimate, per_stage));
        return;
    }
    char *b = (char *)e;
    const size_t peak = offsetof(mp_estimate, peak_moment), rs = offsetof(mp_estimate, reasons), rs_end = rs + sizeof e->reasons,
                 bn = offsetof(mp_estimate, bottleneck), bn_end = bn + sizeof e->bottleneck,
                 end = offsetof(mp_estimate, per_stage);
    _Static_assert(offsetof(mp_estimate, peak_moment) + sizeof ((mp_estimate *)0)->peak_moment <=
                       offsetof(mp_estimate, nreasons) &&
                   offsetof(mp_estimate, nreasons) < offsetof(mp_estimate, reasons) &&
                   offsetof(mp_estimate, reasons) < offsetof(mp_estimate, bottleneck),
                   "mp_estimate's texts in this order");
    memset(b, 0, peak);
    memset(b + peak + sizeof e->peak_moment, 0, rs - (peak + sizeof e->peak_moment)); /* nreasons */
    memset(b + rs_end, 0, bn - rs_end);
    memset(b + bn_end, 0, end - bn_end);
    e->peak_moment[0] = '\0';
    for (int k = 0; k < 4; k++)
        e->reasons[k][0] = '\0';
    e->bottleneck[0] = '\0';
}

mp_status mp_estimate_plan(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                           const mp_estimate_opts *opts, mp_estimate *e, mp_diag *diag)
{
    mp_estimate_opts defaults;
    if (!opts) {
        mp_estimate_opts_init(&defaults);
        opts = &defaults;
    }
    mp_est_memory_part kept;
    if (opts->memory_kept)
        mp_est_memory_save(e, &kept);
    clear_estimate(e, opts->skip_text);
    if (opts->memory_kept)
        mp_est_memory_restore(&kept, e);
    if (mp_plan_check_init(p, diag) != MP_OK)
        return MP_ERR_INPUT;
    e->tp_tier = e->cp_tier = e->pp_tier = e->dp_tier = -1;
    mp_workload local, *w = &local; /* with a cache: the cache's own shape (no copy) */
    const mp_stack_profile *sk = mp_stack_profile_of((mp_stack_id)p->stack);
    if (!sk) {
        mp_diag_add(diag, "plan.stack = %d: no stack profile (data/stacks.json)", p->stack);
        return MP_ERR_INPUT;
    }
    mp_plan eff;
    if (!p->flash_given && p->flash && c->gpu.peak_flops_per_s[MP_DT_BF16] <= 0) {
        /* the copy only where it changes a key (272 bytes per evaluation otherwise) */
        effective_plan(p, c, &eff);
        p = &eff;
    }
    workload_opts(opts, sk, &e->workload_opts);
    mp_status st = opts->cache ? mp_workload_shape_in(m, c, p, MP_WL_TRAIN_STEP, &e->workload_opts, opts->cache, &w, diag)
                               : mp_workload_shape(m, c, p, MP_WL_TRAIN_STEP, &e->workload_opts, NULL, w, diag);
    if (st != MP_OK)
        return st;
    e->microbatches = (int)w->microbatches;
    e->moe_load = w->moe ? w->moe_load : 0.0;
    e->nstages = w->pp;
    e->layers_per_stage_min = w->layers_per_stage_min;
    e->layers_per_stage_max = w->layers_per_stage_max;
    e->expert_params_per_gpu = w->expert_params_per_gpu;
    /* Memory first: a plan over memory need not be timed when only feasibility is asked. */
    if (!opts->memory_kept)
        mp_est_memory(w, m, c, p, opts, e);
    if ((!e->feasible && opts->feasibility_only) || opts->memory_only) {
        mp_est_explain(w, c, p, opts, e);
        if (!isfinite(e->memory.total)) {
            mp_diag_add(diag, "estimate is not finite (memory %g B): inputs out of range", e->memory.total);
            return MP_ERR_RANGE;
        }
        return MP_OK;
    }
    mp_workload_price(m, c, p, &e->workload_opts, opts->cache, w);
    mp_est_step(w, m, c, p, opts, sk, e);
    mp_est_explain(w, c, p, opts, e);
    if (!isfinite(e->step_s) || !isfinite(e->memory.total) || e->step_s <= 0) {
        mp_diag_add(diag, "estimate is not finite (step %g s, memory %g B): inputs out of range",
                    e->step_s, e->memory.total);
        return MP_ERR_RANGE;
    }
    return MP_OK;
}

