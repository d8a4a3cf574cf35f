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
 * Communication (sb_comm_mb_s, sb_line_lb_s). Every stage's micro-batch time in the estimator
 * (src/workload/stages.c mp_workload_stage_time, src/estimate/step.c find_slowest) also holds,
 * in full, the EP all-to-alls of its MoE layers (ep_fwd_s + ep_bwd_s + ep_recompute_s per layer:
 * Megatron-Core's dispatcher is not overlapped, layers.c), the TP collectives less the part the
 * stack hides, hid <= hf * tp_fwd_s + hb * tp_fwd_s + hf * tp_recompute_s per layer against the
 * 2 * tp_fwd_s + tp_recompute_s it carries (tp_hidden_layer: hf, hb the stack's TP overlap
 * fractions, each in [0, 1]), plus the hidden part's slowdown (>= 0), and every stage adds the
 * pipeline p2p, 2 * vpp sends per micro-batch (pp > 1). Left out (>= 0): the recompute's
 * collectives, CP (its ring exposure is max(0, send - attention), not monotone in mb), MTP's.
 * So with C(mb) = (1/pp) sum over stages of [n_moe * (ep_fwd_s + ep_bwd_s) + n_layers *
 * (2 - hf - hb) * tp_fwd_s of their kind] + 2 * vpp * p2p_s, the mean stage's micro-batch is at
 * least c * mb * (1 + r) + C(mb), and the step at least M * that + b * that (the bubble above).
 * Each of those collectives moves bytes proportional to mb (T = mb * seq / cp tokens;
 * src/workload/comm.c) and coll prices each as sums, minima and maxima of alpha + S / bw terms
 * with alpha, bw >= 0 (src/coll/coll.c: phases add, the fastest algorithm and protocol is
 * taken, pipelined stages take the max), so t(S) is non-decreasing and t(S) / S non-increasing
 * in S. Hence for mb in [mb_lo, mb_hi] of one line: M * C(mb) = G * C(mb) / mb >= G * C(mb_hi) /
 * mb_hi and b * C(mb) >= b * C(mb_lo). Those hold for every CP algorithm (no CP collective is
 * counted) but not across rank orders (the groups move): the search adds the term only when a
 * line has one order. tests/test_search_bound.c checks C's monotonicity and the line bound
 * against the estimator on every plan of its spaces.
 *
 * Compute beyond the GEMMs (sb_line_parts). The same stage micro-batch time holds, in full, each
 * layer's compute_s + recompute_s (mp_workload_stage_time): forward gemm_s + attn_s + elem_s,
 * backward 2 * gemm_s + a * attn_s + elem_bwd_s + bwd_extra_s with a = 2.5 fused, 2 unfused
 * (layers.c passes), recompute fwd_s (full) or attn_s (selective) on one layer in
 * recompute_every. The GEMM term above counts the gemm_s shares at FLOPs / R; the rest,
 * X = 3 * attn_s + elem_s + elem_bwd_s + bwd_extra_s per layer (a >= 2), plus attn_s + elem_s
 * (full) or attn_s (selective) over recompute_every, is priced without tiles or waves: the
 * fused core is FLOPs / rate, the unfused one two GEMMs at FLOPs / rate plus the scores over
 * HBM, the element-wise kernels bytes / bandwidth, the MoE dispatcher's per-copy time a
 * constant per routed copy (layers.c) — each proportional to the micro-batch's tokens, the
 * fp8 dynamic-scaling weight casts a constant per micro-batch. So X(mb) is non-decreasing with
 * X(mb) / mb non-increasing, as C(mb) is, and the line bound adds it to C in both places:
 * M * (C + X)(mb) >= G * (C + X)(mb_hi) / mb_hi, b * (C + X)(mb) >= b * (C + X)(mb_lo). It
 * holds for every CP algorithm and rank order (compute is placed nowhere), and only when the
 * kernels are priced as the estimator prices them: the search passes the estimator's workload
 * options (mp_estimate.workload_opts: the stack's fractions and fusions) and leaves the term out
 * when the estimator would run another attention kernel than the plan names (no bf16 tensor
 * cores and no flash key: estimate.c effective_plan). The LM head, MTP, embedding and FSDP2
 * copy-outs are left out (>= 0). tests/test_search_bound.c checks the line bound with both
 * terms against the estimator on every plan of its spaces (up to 0.98 of the step, against
 * 0.32-0.91 with communication alone) and the monotonicity of C + X over every divisor of G.
 *
 * Cost: one mp_workload_shape per cluster (no collective priced; F, R and the load do not change
 * within a job), then O(1) per group and per line; C(mb) and X(mb) are one shaped and priced workload (the
 * thread's collective cache holds its collectives), which the search memoises per degrees,
 * expert layout, sp and mb — not per vpp: the stages partition the layers, so the mean stage's
 * layer part is the same for every vpp (tests/test_search_bound.c checks it), and the p2p part
 * is 2 * vpp sends of one size — and asks for only when the GEMM term alone proves nothing.
 */
#include <math.h>
#include <string.h>

#include "bound.h"
#include "meshplan/stack.h"

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

int sb_line_parts(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                  const mp_workload_opts *wo, mp_wl_cache *cache, sb_parts *out)
{
    memset(out, 0, sizeof *out);
    const mp_stack_profile *sk = mp_stack_profile_of((mp_stack_id)p->stack);
    mp_workload w;
    if (!sk || mp_workload_shape(m, c, p, MP_WL_TRAIN_STEP, wo, cache, &w, NULL) != MP_OK)
        return 0;
    mp_workload_price(m, c, p, wo, cache, &w);
    const double hf = sk->tp_overlap_fwd_frac;
    const double hb = p->sp ? sk->tp_overlap_bwd_sp_frac : sk->tp_overlap_bwd_frac;
    /* exposed TP share of a layer's 2 * tp_fwd_s (step.c tp_hidden_layer hides at most hf + hb
     * of tp_fwd_s, hf of tp_recompute_s); no TP term when the fractions are out of [0, 1] or
     * the hidden part could speed compute up (overlap_comm_sms < 0) */
    const double tpx = hf >= 0 && hf <= 1 && hb >= 0 && hb <= 1 && sk->overlap_comm_sms >= 0
                           ? 2.0 - hf - hb : 0.0;
    const mp_wl_layer *d = &w.layer[MP_LK_DENSE], *mo = &w.layer[MP_LK_MOE];
    const double per_dense = tpx * d->tp_fwd_s;
    const double per_moe = w.moe ? tpx * mo->tp_fwd_s + mo->ep_fwd_s + mo->ep_bwd_s : 0.0;
    /* Compute beyond the GEMMs (bound.c "Compute beyond the GEMMs"): per layer the attention
     * core forward and at least twice it in backward, the element-wise kernels both ways and
     * the fp8 casts of backward; full recompute adds the forward's attention and element-wise
     * work again, selective the attention core, each on one layer in recompute_every. */
    const mp_wl_layer *kind[2] = {d, w.moe ? mo : NULL};
    /* per layer kind: X, its full and selective extras; the layer's whole compute (forward +
     * backward) and its recompute under full and selective recompute (layers.c passes) */
    double x[2] = {0, 0}, xfull[2] = {0, 0}, xsel[2] = {0, 0}, lc[2] = {0, 0}, lfull[2] = {0, 0};
    for (int k = 0; k < 2; k++)
        if (kind[k]) {
            const mp_wl_layer *l = kind[k];
            x[k] = 3.0 * l->attn_s + l->elem_s + l->elem_bwd_s + l->bwd_extra_s;
            xfull[k] = l->attn_s + l->elem_s;
            xsel[k] = l->attn_s;
            lc[k] = l->fwd_s + l->bwd_s;
            lfull[k] = l->fwd_s;
        }
    double sum = 0.0, cx = 0.0, cfull = 0.0, csel = 0.0, clc = 0.0, clfull = 0.0;
    const int nr = mp_workload_runs(&w);
    for (int r = 0; r < nr; r++) {
        mp_wl_stage st;
        int first, count;
        mp_workload_run(&w, m, r, &st, &first, &count);
        const double nd = (double)count * st.n[MP_LK_DENSE], nm = (double)count * st.n[MP_LK_MOE];
        sum += nd * per_dense + nm * per_moe;
        cx += nd * x[0] + nm * x[1];
        cfull += nd * xfull[0] + nm * xfull[1];
        csel += nd * xsel[0] + nm * xsel[1];
        clc += nd * lc[0] + nm * lc[1];
        clfull += nd * lfull[0] + nm * lfull[1];
    }
    const double pp = (double)w.pp, every = p->recompute_every > 1 ? (double)p->recompute_every : 1.0;
    const double layers = sum / pp, p2p = w.pp > 1 ? w.coll[MP_WC_PP_SEND].time_s : 0.0;
    if (!isfinite(layers) || !isfinite(p2p) || !(layers >= 0) || !(p2p >= 0))
        return 0;
    out->comm_layers_s = layers;
    out->p2p_s = p2p;
    /* The compute parts only when hiding TP communication cannot shorten compute (the stack's
     * overlap_comm_sms >= 0; the search asks only with comm_compute_slowdown_frac >= 0). */
    const double xs[5] = {cx / pp, cfull / pp / every, csel / pp / every, clc / pp, clfull / pp / every};
    int ok = sk->overlap_comm_sms >= 0;
    for (int i = 0; i < 5; i++)
        ok = ok && isfinite(xs[i]) && xs[i] >= 0;
    if (ok) {
        out->compute_s = xs[0];
        out->full_extra_s = xs[1];
        out->selective_extra_s = xs[2];
        out->layers_compute_s = xs[3];
        out->layers_full_s = xs[4];
    }
    return 1;
}

double sb_plan_lb_s(const sb_bound *b, int64_t mb, mp_recompute rc, const sb_parts *x,
                    double comm_s)
{
    if (!b->ok || mb < 1)
        return 0.0;
    const double rec = rc == MP_RC_FULL ? x->layers_full_s : rc == MP_RC_SELECTIVE ? x->selective_extra_s : 0.0;
    const double t = x->layers_compute_s + rec + (isfinite(comm_s) && comm_s > 0 ? comm_s : 0.0);
    const double lb = (1.0 - 1e-9) * (b->local_seqs / (double)mb + b->bubble) * t;
    return isfinite(lb) && lb > 0 ? lb : 0.0;
}

double sb_compute_of(const sb_parts *x, mp_recompute rc)
{
    return x->compute_s + (rc == MP_RC_FULL ? x->full_extra_s : rc == MP_RC_SELECTIVE ? x->selective_extra_s : 0.0);
}

int sb_comm_parts(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                  const mp_workload_opts *wo, mp_wl_cache *cache, double *layers_s, double *p2p_s)
{
    sb_parts x;
    const int ok = sb_line_parts(m, c, p, wo, cache, &x);
    *layers_s = x.comm_layers_s;
    *p2p_s = x.p2p_s;
    return ok;
}

double sb_comm_of(const mp_plan *p, double layers_s, double p2p_s)
{
    const double comm = layers_s + (p->pp > 1 ? 2.0 * (double)p->vpp * p2p_s : 0.0);
    return isfinite(comm) && comm > 0 ? comm : 0.0;
}

double sb_comm_mb_s(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                    const mp_workload_opts *wo, mp_wl_cache *cache)
{
    double layers_s, p2p_s;
    if (!sb_comm_parts(m, c, p, wo, cache, &layers_s, &p2p_s))
        return 0.0;
    return sb_comm_of(p, layers_s, p2p_s);
}

double sb_line_lb_s(const sb_bound *b, int64_t mb_lo, int64_t mb_hi, mp_recompute rc,
                    double comm_lo_s, double comm_hi_s)
{
    if (!b->ok)
        return 0.0;
    const double r = rc == MP_RC_FULL ? 1.0 / 3.0 : 0.0;
    const double comm = b->local_seqs * comm_hi_s / (double)mb_hi + b->bubble * comm_lo_s;
    return (1.0 - 1e-9) * ((1.0 + r) * b->seq_s * (b->local_seqs + b->bubble * (double)mb_lo) +
                           (isfinite(comm) && comm > 0 ? comm : 0.0));
}
