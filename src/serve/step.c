/* src/serve/step.c — the cost of one engine step with a mix of prefill chunks and decode tokens
 * (continuous batching), from the workload's priced inference steps (mp_workload_infer, the
 * same kernels, collectives and engine fractions as `meshplan infer`).
 *
 * A step of T tokens costs what its parts cost (serve_internal.h): the linear layers, element-
 * wise kernels and TP/EP collectives depend only on T (one GEMM over every token of the step, as
 * vLLM flattens the batch), priced by mp_workload_infer at T prompt tokens with no context and
 * tabulated on a grid of T (linear interpolation between points; exact on them); the LM head on
 * the sequences that emit a token; attention separately, since it depends on each sequence's
 * context: decode reads every cached token (linear in their sum), prefill is a roofline of the
 * (query, key) pairs' FLOPs and the new K/V writes. The coefficients are read off
 * mp_workload_infer's attention part at a known context, so they are the same kernels.
 *
 * Left out: CUDA-graph padding of the decode batch to captured sizes, and the attention kernel's
 * efficiency difference between a mixed (varlen) batch and a pure one. */
#include <math.h>
#include <string.h>

#include "meshplan/coll.h"
#include "meshplan/energy.h"
#include "meshplan/infer.h"
#include "meshplan/workload.h"
#include "serve/serve_internal.h"

#define ACT_BYTES 2.0 /* activations in 16 bits (as src/workload/infer_phase.c) */

static int grid(double max_tokens, double *T)
{
    int n = 0;
    for (double t = 1; t <= 128 && n < SV_GRID_MAX; t += 1)
        T[n++] = t;
    for (double t = 144; t <= 2048 && t - 16 < max_tokens && n < SV_GRID_MAX; t += 16)
        T[n++] = t;
    for (double t = 2304; t <= 32768 && t - 256 < max_tokens && n < SV_GRID_MAX; t += 256)
        T[n++] = t;
    return n;
}

/* Value at x of the table (xs ascending, n >= 1): linear between points, a line beyond. */
static double interp(const double *xs, const double *ys, int n, double x)
{
    if (n == 1 || x <= xs[0])
        return n == 1 ? ys[0] * x / xs[0] : ys[0] * x / xs[0];
    int lo = 0, hi = n - 1;
    if (x >= xs[hi]) {
        lo = n - 2;
    } else {
        while (hi - lo > 1) {
            int mid = (lo + hi) / 2;
            if (xs[mid] <= x)
                lo = mid;
            else
                hi = mid;
        }
    }
    double f = (x - xs[lo]) / (xs[lo + 1] - xs[lo]);
    return ys[lo] + f * (ys[lo + 1] - ys[lo]);
}

double sv_window_ctx(const sv_step_model *sm, double ctx)
{
    /* sliding-window layers attend to at most the window (Mistral 7B, Jiang et al. 2023); the
     * same average over layers as src/workload/infer_phase.c */
    if (!(sm->window > 0))
        return ctx;
    return sm->window_frac * fmin(ctx, sm->window) + (1.0 - sm->window_frac) * ctx;
}

double sv_a2a_s(const mp_model *m, const mp_cluster *c, int ep, double tokens_local)
{
    /* DeepSeek-V3 (arXiv 2412.19437) Sec. 3.4: dispatch + combine per MoE layer, each rank
     * sending its tokens' routed copies (mp_moe_dispatch_bytes_per_token) to the expert ranks */
    mp_coll_cost cc;
    double bytes = mp_moe_dispatch_bytes_per_token(m, ACT_BYTES) * tokens_local;
    if (ep < 2 || !(bytes > 0) ||
        mp_coll_time(c, MP_COLL_ALL_TO_ALL, bytes, (mp_group){ep, 1}, MP_ALGO_AUTO, &cc) != MP_OK)
        return 0.0;
    return 2.0 * (double)mp_model_moe_layers_in(m, 0, m->layers) * cc.total_s;
}

/* The linear part and the LM head on the grid. */
static int tabulate(const mp_model *mm, const mp_model *m, const mp_cluster *c, mp_wl_infer_shape s,
                    int attn_dp, int ep, double max_seqs, sv_step_model *sm, mp_diag *d)
{
    mp_wl_infer w, h;
    for (int i = 0; i < sm->n; i++) {
        s.phase = MP_WL_PREFILL;
        s.seqs = 1;
        s.new_tokens = sm->T[i];
        s.context = 0;
        if (mp_workload_infer(mm, c, &s, &w, d) != MP_OK)
            return 1;
        sm->lin_s[i] = w.total_s - w.attn_s + (attn_dp ? sv_a2a_s(m, c, ep, sm->T[i]) : 0.0);
        sm->lin_flop[i] = w.flop;
        sm->lin_bytes[i] = w.weight_bytes_read;
        sm->pp_s[i] = w.pp_s;
        if (sm->T[i] <= fmax(2.0, max_seqs) || i < 2) {
            s.phase = MP_WL_DECODE;
            s.seqs = sm->T[i];
            s.new_tokens = 1;
            if (mp_workload_infer(mm, c, &s, &h, d) != MP_OK)
                return 1;
            /* the same T tokens as S sequences: only the LM head's rows differ */
            sm->head_s[i] = fmax(0.0, (h.total_s - h.attn_s) - (w.total_s - w.attn_s));
            sm->head_flop[i] = fmax(0.0, h.flop - w.flop);
            sm->nh = i + 1;
        }
    }
    return 0;
}

/* Attention coefficients from the workload's attention part at a known context. */
static int attention_coefs(const mp_model *mm, const mp_cluster *c, mp_wl_infer_shape s,
                           sv_step_model *sm, mp_diag *d)
{
    const double C0 = sm->window > 0 ? fmin(2048.0, sm->window) : 2048.0, N0 = 512.0;
    mp_wl_infer a, b;
    s.phase = MP_WL_DECODE;
    s.seqs = 1;
    s.new_tokens = 1;
    s.context = C0;
    if (mp_workload_infer(mm, c, &s, &a, d) != MP_OK)
        return 1;
    s.context = 0;
    if (mp_workload_infer(mm, c, &s, &b, d) != MP_OK)
        return 1;
    sm->a_dec_s = a.attn_s / C0;
    sm->a_dec_flop = (a.flop - b.flop) / C0;
    sm->a_dec_bytes = a.kv_bytes_read / C0;
    s.phase = MP_WL_PREFILL;
    s.new_tokens = N0;
    if (mp_workload_infer(mm, c, &s, &b, d) != MP_OK) /* context 0: the writes alone */
        return 1;
    sm->w_pre_s = b.attn_s / N0;
    sm->w_pre_bytes = b.kv_bytes_read / N0;
    s.context = C0;
    if (mp_workload_infer(mm, c, &s, &a, d) != MP_OK)
        return 1;
    /* compute-bound at N0 x C0 pairs (the roofline's FLOP side); 0 when the writes bound it */
    sm->a_pre_s = a.attn_s > b.attn_s * (1.0 + 1e-9) ? a.attn_s / (N0 * C0) : 0.0;
    sm->a_pre_flop = (a.flop - b.flop) / (N0 * C0);
    return 0;
}

int sv_step_model_build(const mp_model *m, const mp_cluster *c, const mp_infer_plan *p,
                        const mp_engine_profile *e, int attn_dp, double moe_load,
                        double max_tokens, double max_seqs, sv_step_model *sm, mp_diag *d)
{
    memset(sm, 0, sizeof *sm);
    const mp_gpu *g = &c->gpu;
    const double wb = mp_infer_weights_bytes((mp_infer_weights)p->weights);
    const double kvb = p->kv == MP_KVQ_FP8 ? 1.0 : 2.0;
    /* the GEMM dtype as src/infer/infer.c chooses it */
    int fp8_w = p->weights == MP_WQ_FP8 || p->weights == MP_WQ_FP4;
    mp_dtype dt = fp8_w && g->peak_flops_per_s[MP_DT_FP8] > 0 ? MP_DT_FP8
                  : g->peak_flops_per_s[MP_DT_BF16] > 0       ? MP_DT_BF16 : MP_DT_FP16;
    /* attention DP: each GPU holds the attention and the shared parts whole (tp 1) and experts /
     * ep of the routed experts: priced as a model of E / ep experts on one GPU, the tokens routed
     * to it those of its own batch (each of T x topk copies lands on one of the ep GPUs) */
    mp_model mm = *m;
    int tp = p->tp, ep = p->ep;
    if (attn_dp) {
        mm.moe_experts = m->moe_experts / p->ep;
        tp = 1;
    }
    mp_wl_infer_shape s = {MP_WL_PREFILL, tp, p->pp, attn_dp ? 1 : ep, 1, 1, 0, wb, kvb, dt,
                           e->gemm_frac, e->attn_frac, e->mem_frac, mp_model_is_moe(m) ? moe_load : 1.0};
    if (m->attn_window > 0) {
        sm->window = (double)m->attn_window;
        sm->window_frac = (double)(m->attn_window_layers ? m->attn_window_layers : m->layers) / m->layers;
    }
    sm->n = grid(fmax(1.0, max_tokens), sm->T);
    sm->pp = p->pp;
    sm->ranks = attn_dp ? p->ep : 1;
    sm->gpus = attn_dp ? p->ep : (double)p->tp * p->pp;
    if (tabulate(&mm, m, c, s, attn_dp, ep, max_seqs, sm, d) || attention_coefs(&mm, c, s, sm, d))
        return 1;
    sm->overhead_graphs_s = e->step_overhead_graphs_s;
    sm->overhead_step_s = p->cuda_graphs ? e->step_overhead_graphs_s : e->step_overhead_eager_s;
    double idle_W;
    mp_energy_gpu_points(g, &idle_W, &sm->wait_W);
    sm->tdp_W = g->tdp_W;
    sm->best_flops = mp_infer_best_gemm_flops(g, dt);
    mp_energy_opts eo;
    mp_energy_opts_init(&eo);
    sm->pj_per_bit = eo.mem_pJ_per_bit;
    return 0;
}

/* One stage-time of a micro-batch holding x scaled by f (1 / micro-batches, 1 / DP ranks). */
static double stage_s(const sv_step_model *sm, const sv_step_mix *x, double f, double *flop, double *bytes)
{
    double T = x->tokens * f, S = x->emit * f;
    double t = interp(sm->T, sm->lin_s, sm->n, T) + (S > 1 ? interp(sm->T, sm->head_s, sm->nh, S) : 0.0);
    double pre = fmax(sm->a_pre_s * x->pre_pairs * f, sm->w_pre_s * x->pre_writes * f);
    t += sm->a_dec_s * x->dec_ctx * f + pre;
    if (flop)
        *flop = interp(sm->T, sm->lin_flop, sm->n, T) + (S > 1 ? interp(sm->T, sm->head_flop, sm->nh, S) : 0.0) +
                (sm->a_dec_flop * x->dec_ctx + sm->a_pre_flop * x->pre_pairs) * f;
    if (bytes)
        *bytes = interp(sm->T, sm->lin_bytes, sm->n, T) +
                 (sm->a_dec_bytes * x->dec_ctx + sm->w_pre_bytes * x->pre_writes) * f;
    return t;
}

double sv_step_time_s(const sv_step_model *sm, const sv_step_mix *x, double *flop, double *bytes)
{
    if (!(x->tokens > 0)) {
        if (flop)
            *flop = 0;
        if (bytes)
            *bytes = 0;
        return 0.0;
    }
    /* attention DP: the step's sequences spread evenly over the ranks, which step together (the
     * MoE all-to-all synchronises them) */
    double f = 1.0 / sm->ranks;
    /* pipeline: min(pp, seqs) micro-batches in flight (vLLM's virtual engines); a decode step is
     * pp stage-times, a step with prefill fills and drains the pipeline, pp + mb - 1 (GPipe,
     * Huang et al. 2019) — the rules of src/infer/infer.c */
    double mb = fmin((double)sm->pp, fmax(1.0, (double)x->seqs * f));
    double k = x->has_prefill ? sm->pp + mb - 1.0 : (double)sm->pp;
    double fl, by;
    double st = stage_s(sm, x, f / mb, &fl, &by);
    double pps = sm->pp > 1 ? interp(sm->T, sm->pp_s, sm->n, x->tokens * f / mb) : 0.0;
    double over = x->has_decode ? sm->overhead_step_s : sm->overhead_graphs_s;
    if (flop)
        *flop = fl * mb;
    if (bytes)
        *bytes = by * mb;
    return k * (st + pps) + over;
}

double sv_step_power_w(const sv_step_model *sm, double t, double flop, double bytes)
{
    /* the inference model's kernel power (src/infer/power.c): a step's kernels back to back */
    return mp_infer_kernel_power_w(sm->tdp_W, sm->wait_W, sm->best_flops, sm->pj_per_bit, flop, bytes, t);
}
