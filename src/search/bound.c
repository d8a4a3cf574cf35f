/* src/search/bound.c — a cheap lower bound on the step time of a group of plans, so the search can
 * skip, without timing them, the plans that cannot enter its top list, a Pareto frontier or the
 * rank (src/search/search.c decides; docs/search.md "Bounds").
 *
 * The group: the plans below one (degree shape, sharding, expert layout, vpp, schedule) of the
 * walk (src/search/space.c); the bound holds for each of their sp, recompute, mb, CP-algorithm
 * and rank-order values. It counts GEMM FLOPs only, which the plan keys below the group do not
 * change, at the fastest rate the kernel roofline prices any GEMM at:
 *
 *   step_s >= (1 + r) * c * (G + b * mb)
 *
 *   c  = (seq / cp) * 3 * F * min(1, load) / (tp * pp * R)   one sequence's GEMM time on the
 *        average stage, forward + backward (backward GEMMs = 2x forward: input and weight
 *        gradients, Narayanan et al. 2021 Sec. 5.1; layers.c charges 2 x gemm_s in bwd_s);
 *        F = mp_flops.fwd_matmul_per_token (2 x the matmul weights a token passes in the layers:
 *        attention projections, dense FFNs, top-k + shared experts, MTP modules; model.c), the
 *        LM head, router, attention core and element-wise kernels left out (>= 0);
 *        R = the largest of the workload's GEMM rates (mp_kernel_rates: matmul_flops_per_s and
 *        bf16_matmul_flops_per_s, after the sustained fractions).
 *   G  = gb / dp sequences per DP rank: M micro-batches of mb, M * T = G * seq / cp.
 *   b  = (pp - 1) / vpp for 1F1B, interleaved and GPipe (Narayanan et al. 2021 Sec. 2.2; the
 *        breadth-first GPipe of step.c), 0 for ZB-H1 and pp = 1.
 *   r  = 1/3 with full recompute (one more forward of every layer, >= its GEMMs), else 0.
 *
 * Why it is below the estimator's step (src/estimate/step.c): step = M * t_mb_all + bubble + the
 * exposed DP/ZeRO communication + optimizer + fp8 casts (+ the calibrated slowdown, >= 0 when
 * its fraction is), every term >= 0; t_mb_all >= the slowest stage's compute + recompute, which
 * is >= the mean over stages; summed over the stages, one micro-batch's GEMMs on a GPU are
 * 2 * T * F / tp FLOPs forward (TP splits every counted GEMM or replicates it, as MLA's
 * down-projections, which only adds; the routed experts of an MoE layer run T/tp * k * etp *
 * load copies of width moe_ffn/etp: T * k * load * ffn FLOPs / tp whatever etp), and every
 * GEMM kernel (mp_kernel_gemm_s, mp_kernel_grouped_gemm_s) takes at least FLOPs / R: whole
 * 128x128 tiles in whole waves (>= M*N) at `rate` <= R, or its HBM time if longer. The bubble
 * is b micro-batch times of the slowest stage, >= b * (1 + r) * c * mb.
 *
 * How it stays a bound when the kernels change (issue 17 reworks kernels.c and step.c): R is
 * read from the workload's rates, so efficiencies changed through mp_kernel_rates_of (sustained
 * fractions, measured rates, calibration) move the bound with them; it needs only that no GEMM
 * is priced faster than R, that backward GEMMs cost twice the forward, that recompute re-runs
 * the forward, and that the step holds M micro-batches of the slowest stage plus a 1F1B-style
 * bubble. tests/test_search.c checks the bound against the estimator on every plan of several
 * spaces (dense, MoE, MLA, CP, fp8, ZeRO-3) and checks searches with and without pruning give
 * the same lists, frontiers and counts: a change that breaks one of these premises fails there.
 *
 * Cost: one mp_workload_shape per cluster (no collective priced; F, R and the load do not change
 * within a job), then O(1) per group and per line.
 */
#include <math.h>
#include <string.h>

#include "bound.h"

void sb_workload_opts(const mp_estimate_opts *eo, mp_workload_opts *wo)
{
    mp_workload_opts_init(wo);
    if (!eo)
        return;
    wo->gemm_sustained_frac = eo->gemm_sustained_frac;
    wo->attention_sustained_frac = eo->attention_sustained_frac;
    wo->memory_bound_sustained_frac = eo->memory_bound_sustained_frac;
    wo->moe_imbalance = eo->moe_imbalance;
    wo->moe_copy_overhead_s = eo->moe_copy_overhead_s;
}

void sb_bound_init(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                   const mp_workload_opts *wo, mp_wl_cache *cache, sb_bound *out)
{
    memset(out, 0, sizeof *out);
    mp_workload w;
    if (mp_workload_shape(m, c, p, MP_WL_TRAIN_STEP, wo, cache, &w, NULL) != MP_OK)
        return;
    out->rate = fmax(w.rates.matmul_flops_per_s, w.rates.bf16_matmul_flops_per_s);
    out->flop_per_token = w.flops.fwd_matmul_per_token;
    out->load = w.moe ? fmin(1.0, w.moe_load) : 1.0;
    sb_bound_regroup(out, p);
}

void sb_bound_regroup(sb_bound *b, const mp_plan *p)
{
    const double R = b->rate, F = b->flop_per_token, load = b->load;
    b->ok = 0;
    if (!(R > 0) || !isfinite(R) || !(F >= 0) || !isfinite(F) || !(load > 0) || p->dp < 1 ||
        p->cp < 1 || p->tp < 1 || p->pp < 1 || p->vpp < 1)
        return;
    b->seq_s = (double)p->seq / (double)p->cp * 3.0 * F * load / ((double)p->tp * (double)p->pp * R);
    b->local_seqs = (double)p->gb / (double)p->dp;
    b->bubble = p->pp > 1 && p->schedule != MP_SCHED_ZB ? (double)(p->pp - 1) / (double)p->vpp : 0.0;
    b->ok = isfinite(b->seq_s) && b->seq_s >= 0;
}

double sb_step_lb_s(const sb_bound *b, int64_t mb, mp_recompute rc)
{
    if (!b->ok)
        return 0.0;
    const double r = rc == MP_RC_FULL ? 1.0 / 3.0 : 0.0;
    /* less one part in 1e9: sums taken in another order than the estimator's never decide */
    return (1.0 - 1e-9) * (1.0 + r) * b->seq_s * (b->local_seqs + b->bubble * (double)mb);
}
