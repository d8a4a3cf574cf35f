/* src/estimate/step.c — the analytical step from the priced workload: the overlap rules.
 *
 *   step = M * t_mb + bubble + exposed DP/ZeRO communication + optimizer step
 * where M is the number of micro-batches per DP rank, t_mb the forward + backward (+ recompute)
 * of one micro-batch on the slowest pipeline stage including its TP/CP/EP/PP communication, and
 * the bubble follows the schedule (Narayanan et al. 2021, Sec. 2.2: (p-1)/v * t_mb for
 * 1F1B/interleaved; Qi et al. 2023 for ZB-H1). docs/model.md derives every term. */
#include <math.h>

#include "estimate_internal.h"
#include "memory_states.h"

/* The slowest stage's micro-batch, and what the ZeRO-3 layer exposure adds to it. */
typedef struct {
    mp_wl_stage_time t;  /* of the slowest stage (first strict maximum of total_s), the stack's
                            TP overlap applied (tp_s less the hidden part, compute_s plus the
                            slowdown the hidden part costs) */
    double tp_hidden_s, slow_s; /* of that stage's micro-batch */
    int stage;
    double z3_s;         /* max over stages of total_s + the stage's exposed ZeRO-3 layer comm */
    double z3_dense, z3_moe; /* layers of the stage that sets z3_s */
    double zd, zm;       /* exposed ZeRO-3 comm of one dense / MoE layer with neighbours */
} slowest;

/* ZeRO-3 / FSDP per layer: every micro-batch gathers each layer's parameters in forward and
 * again in backward and reduce-scatters its gradients (Zhao et al. 2023, PyTorch FSDP Sec. 3);
 * each gather is prefetched behind the previous layer's compute (its copy-out included), so a
 * layer exposes what its neighbour's compute cannot hide. Expert weights of an MoE layer are
 * gathered over the expert-DP group. */
/* Gathers of one layer in its backward: the backward's own, and with full recompute on a stack
 * that releases the parameters after every sub-module's forward (DeepSpeed) one more for the
 * checkpointed forward run again (Rajbhandari et al. 2021, ZeRO-Infinity Sec. 4.1: with
 * activation checkpointing the parameters are loaded three times per iteration, forward,
 * recomputation and backward; FSDP's backward unshard serves its recompute, Zhao et al. 2023). */
static double z3_bwd_gathers(const mp_plan *p, const mp_stack_profile *sk)
{
    return p->recompute == MP_RC_FULL && sk->zero3_recompute_gathers ? 2.0 : 1.0;
}

static void z3_layer_exposure(const mp_workload *w, const mp_estimate_opts *o, double bg, double *dense_x,
                              double *moe_x)
{
    const mp_wl_coll *x = w->coll;
    const mp_wl_layer *d = &w->layer[MP_LK_DENSE], *mo = &w->layer[MP_LK_MOE];
    const double ag = x[MP_WC_Z3_AG].time_s, rs = x[MP_WC_Z3_RS].time_s;
    double mag = ag, mrs = rs;
    if (w->moe) {
        mag = x[MP_WC_Z3_MOE_AG].time_s + x[MP_WC_Z3_EXPERT_AG].time_s;
        mrs = x[MP_WC_Z3_MOE_RS].time_s + x[MP_WC_Z3_EXPERT_RS].time_s;
    }
    const double f = o->zero3_overlap_frac;
    double lfw = f * (d->fwd_s + d->copy_out_s + d->tp_fwd_s);
    double lbw = f * (d->bwd_s + d->copy_out_s + d->recompute_s + d->tp_fwd_s + d->tp_recompute_s);
    double mfw = f * (mo->fwd_s + mo->copy_out_s + mo->tp_fwd_s + mo->ep_fwd_s);
    double mbw = f * (mo->bwd_s + mo->copy_out_s + mo->recompute_s + mo->tp_fwd_s + mo->ep_bwd_s);
    *dense_x = fmax(0.0, ag - lfw) + fmax(0.0, bg * ag + rs - lbw);
    *moe_x = fmax(0.0, mag - mfw) + fmax(0.0, bg * mag + mrs - mbw);
}

/* The exposure lengthens every micro-batch of the stage it runs on, so it is added per stage
 * before the slowest stage is taken — not on top of another stage's critical path (with more
 * bandwidth that made a plan slower: tests/test_invariants.c). */
/* Resource-aware overlap: while a collective runs beside compute its kernels hold SMs (NCCL:
 * one per channel; TE userbuffers: its num_sm), so compute runs on the rest and slows by the
 * share they hold, for as long as the hidden collective runs (the stack's overlap_comm_sms over
 * the GPU's SMs; data/stacks.json), plus the caller's comm_compute_slowdown_frac. */
static double slow_frac(const mp_workload *w, const mp_estimate_opts *o, const mp_stack_profile *sk)
{
    return o->comm_compute_slowdown_frac + (w->rates.sms > 0 ? sk->overlap_comm_sms / w->rates.sms : 0.0);
}

/* TP collective time of one layer's micro-batch that the stack hides behind GEMMs: forward
 * behind the forward GEMMs, backward behind the dgrad + wgrad GEMMs (twice the forward's), the
 * full-recompute forward's again behind its GEMMs; never more than the GEMM time beside it. */
static double tp_hidden_layer(const mp_wl_layer *l, const mp_plan *p, const mp_stack_profile *sk)
{
    const double hf = sk->tp_overlap_fwd_frac;
    const double hb = p->sp ? sk->tp_overlap_bwd_sp_frac : sk->tp_overlap_bwd_frac;
    return hf * fmin(l->tp_fwd_s, l->gemm_s) + hb * fmin(l->tp_fwd_s, 2.0 * l->gemm_s) +
           hf * fmin(l->tp_recompute_s, l->gemm_s);
}

static void find_slowest(const mp_workload *w, const mp_model *m, const mp_plan *p,
                         const mp_estimate_opts *o, const mp_stack_profile *sk, slowest *out)
{
    double zd = 0.0, zm = 0.0;
    if (p->zero == 3)
        z3_layer_exposure(w, o, z3_bwd_gathers(p, sk), &zd, &zm);
    *out = (slowest){.zd = zd, .zm = zm};
    const int nr = mp_workload_runs(w);
    const double hd = tp_hidden_layer(&w->layer[MP_LK_DENSE], p, sk);
    const double hm = w->moe ? tp_hidden_layer(&w->layer[MP_LK_MOE], p, sk) : 0.0;
    const double sf = slow_frac(w, o, sk);
    for (int r = 0; r < nr; r++) {
        /* a run's stages take the same time: its first is the only candidate */
        mp_wl_stage s;
        mp_wl_stage_time t;
        int i, count;
        mp_workload_run(w, m, r, &s, &i, &count);
        mp_workload_stage_time(w, &s, i + count == w->pp, &t);
        const double hid = s.n[MP_LK_DENSE] * hd + s.n[MP_LK_MOE] * hm, slow = sf * hid;
        t.tp_s -= hid;
        t.compute_s += slow;
        t.total_s += slow - hid;
        double z3 = s.n[MP_LK_DENSE] * zd + s.n[MP_LK_MOE] * zm;
        if (t.total_s + z3 > out->z3_s) {
            out->z3_s = t.total_s + z3;
            out->z3_dense = s.n[MP_LK_DENSE];
            out->z3_moe = s.n[MP_LK_MOE];
        }
        if (t.total_s > out->t.total_s) {
            out->t = t;
            out->stage = i;
            out->tp_hidden_s = hid;
            out->slow_s = slow;
        }
    }
}

/* Bubble: (p-1)/v micro-batch times (Narayanan et al. 2021 Sec. 2.2.2); GPipe (p-1); ZB-H1
 * (p-1)(T_F + T_B - T_W) with B the input-gradient pass and W the weight-gradient pass (Qi et
 * al. 2023, "Zero Bubble Pipeline Parallelism", Sec. 2.1; one third of 1F1B's only when T_F =
 * T_B = T_W): t_mb_all - 2 T_W, since t_mb_all = T_F + T_B + T_W. The timeline simulator
 * reproduces it (tests/test_sim.c); "/3" over-predicted ZB-H1 by ~2.5% of the step on Llama 3
 * 70B, where TP and attention make W much shorter than F and B. */
static double bubble_s(const mp_plan *p, int pp, int v, double t_mb_all, double t_w)
{
    if (pp <= 1)
        return 0.0;
    double k = (double)(pp - 1) * t_mb_all;
    switch (p->schedule) {
    case MP_SCHED_INTERLEAVED: return k / v;
    /* GPipe over v chunks per rank runs breadth-first (all micro-batches through chunk 0, then
     * chunk 1, ...): the fill and drain shrink by v as well (Lamy-Poirier 2023, "Breadth-First
     * Pipeline Parallelism"; the timeline simulator reproduces it). */
    case MP_SCHED_GPIPE: return k / v;
    case MP_SCHED_ZB: return (double)(pp - 1) * fmax(t_mb_all - 2.0 * t_w, 0.0);
    default: return k;
    }
}

/* ZeRO-3: per micro-batch, every layer's two gathers and one reduce-scatter, and the root
 * module's (embedding, LM head) once, on the stage whose micro-batch ZeRO-3 lengthens most.
 * Exposed: what the per-layer prefetch leaves (sl->z3_s - t_mb: each layer's stall where its
 * neighbour's compute cannot hide the next gather and its reduce-scatter), with one layer — the
 * first in forward, last in backward — charged as it runs with no neighbour: its forward gather
 * g whole, its backward gather behind the neighbouring backward, max(0, g - bw), and its
 * reduce-scatter r whole. That layer's neighbour term is replaced, not added to: adding the
 * first gather and last reduce-scatter on top of a stall that already held every layer's
 * collectives counted them twice, so the exposed part exceeded the total (issue 15, defect 1;
 * tests/test_invariants.c). Then the root module's collectives beyond the head's compute. */
static void zero3_dp(const mp_workload *w, const mp_estimate_opts *o, double bg, const slowest *sl,
                     mp_estimate *e, double *total, double *exposed)
{
    const mp_wl_coll *x = w->coll;
    const mp_wl_layer *d = &w->layer[MP_LK_DENSE], *mo = &w->layer[MP_LK_MOE];
    const double nd = sl->z3_dense, nm = sl->z3_moe;
    const double ag = x[MP_WC_Z3_AG].time_s, rs = x[MP_WC_Z3_RS].time_s;
    const double mag = w->moe ? x[MP_WC_Z3_MOE_AG].time_s + x[MP_WC_Z3_EXPERT_AG].time_s : ag;
    const double mrs = w->moe ? x[MP_WC_Z3_MOE_RS].time_s + x[MP_WC_Z3_EXPERT_RS].time_s : rs;
    e->parts.zero3_layer_gather_s = ag;
    e->parts.zero3_layer_reduce_s = rs;
    double per_mb_total = nd * ((1.0 + bg) * ag + rs) + nm * ((1.0 + bg) * mag + mrs);
    double stall = sl->z3_s - sl->t.total_s;
    /* the end layer: an MoE layer when the stage has one (as its gathers are the larger) */
    const int end_moe = nm > 0;
    const mp_wl_layer *k = end_moe ? mo : d;
    const double g = end_moe ? mag : ag, r = end_moe ? mrs : rs;
    const double bw = o->zero3_overlap_frac * (k->bwd_s + k->copy_out_s + k->recompute_s + k->tp_fwd_s +
                                               (end_moe ? k->ep_bwd_s : k->tp_recompute_s));
    double end_s = g + fmax(0.0, bg * g - bw) + r;
    double with_neighbours = end_moe ? sl->zm : sl->zd;
    double per_mb_exposed = nd + nm > 0 ? stall - with_neighbours + end_s : 0.0;
    double eag = x[MP_WC_Z3_ROOT_AG].time_s, ers = x[MP_WC_Z3_ROOT_RS].time_s;
    per_mb_total += 2.0 * eag + ers;
    e->parts.zero3_extra_s = 2.0 * eag + ers;
    const mp_wl_layer *hd = &w->layer[MP_LK_HEAD];
    per_mb_exposed += fmax(0.0, 2.0 * eag + ers - (hd->fwd_s + hd->bwd_s));
    *total = w->microbatches * per_mb_total;
    *exposed = w->microbatches * per_mb_exposed;
}

/* DP/ZeRO communication of the step, all of it and the exposed part. Windows: the backward of
 * the last micro-batch for gradient reduction (Li et al. 2020, PyTorch DDP bucketing; Megatron
 * overlap-grad-reduce), the forward of the first for parameter gathers. */
static void dp_comm(const mp_workload *w, const mp_plan *p, const mp_estimate_opts *o,
                    const mp_stack_profile *sk, const slowest *sl, mp_estimate *e, double *total,
                    double *exposed)
{
    const mp_wl_coll *x = w->coll;
    const double M = w->microbatches;
    const double replicate_s = x[MP_WC_HSDP_AR].time_s;
    e->parts.hsdp_replicate_s = replicate_s;
    const double bwd_window = o->grad_reduce_overlap_frac * (sl->t.total_s - sl->t.fwd_s);
    const double fwd_window = o->grad_reduce_overlap_frac * sl->t.fwd_s;
    if (p->zero == 0) {
        e->parts.grad_reduce_s = x[MP_WC_DP_AR].time_s;
        e->parts.expert_grad_reduce_s = x[MP_WC_EDP_AR].time_s;
        *total = x[MP_WC_DP_AR].time_s + x[MP_WC_EDP_AR].time_s;
        *exposed = fmax(0.0, *total - bwd_window);
    } else if (p->zero <= 2) {
        /* Reduce-scatter the gradients, all-gather the updated parameters (Megatron distributed
         * optimizer; ZeRO-1/2). ZeRO-2 reduces every micro-batch (DeepSpeed). */
        double rs = x[MP_WC_DP_RS].time_s + x[MP_WC_EDP_RS].time_s;
        double ag = x[MP_WC_DP_AG].time_s + x[MP_WC_EDP_AG].time_s;
        e->parts.grad_reduce_s = x[MP_WC_DP_RS].time_s;
        e->parts.param_gather_s = x[MP_WC_DP_AG].time_s;
        e->parts.expert_grad_reduce_s = rs - e->parts.grad_reduce_s;
        e->parts.expert_param_gather_s = ag - e->parts.param_gather_s;
        double nrs = p->zero == 1 ? 1.0 : M;
        *total = nrs * rs + ag;
        *exposed = nrs * fmax(0.0, rs - bwd_window) + fmax(0.0, ag - fwd_window);
    } else {
        zero3_dp(w, o, z3_bwd_gathers(p, sk), sl, e, total, exposed);
    }
    *total += replicate_s;
    *exposed += replicate_s;
}

/* The tiers that bound each kind's main collective (the last DP/ZeRO collective run over the
 * shard group, in the order the step issues them). */
static void tiers(const mp_workload *w, mp_estimate *e)
{
    static const mp_wl_coll_id dp_order[] = {MP_WC_Z3_AG, MP_WC_Z3_RS, MP_WC_Z3_MOE_AG,
                                             MP_WC_Z3_MOE_RS, MP_WC_DP_AR, MP_WC_DP_RS,
                                             MP_WC_DP_AG, MP_WC_Z3_ROOT_AG, MP_WC_Z3_ROOT_RS};
    e->tp_tier = w->coll[MP_WC_TP_A].tier;
    e->cp_tier = w->coll[MP_WC_CP_FWD].tier;
    e->pp_tier = w->coll[MP_WC_PP_SEND].tier;
    e->dp_tier = -1;
    for (size_t k = 0; k < sizeof dp_order / sizeof dp_order[0]; k++)
        if (w->coll[dp_order[k]].tier >= 0)
            e->dp_tier = w->coll[dp_order[k]].tier;
}

/* The building blocks, for the simulator and the explanations (mp_step_parts). */
static void fill_parts(const mp_workload *w, const slowest *sl, double p2p_s, mp_step_parts *pt)
{
    const mp_wl_layer *d = &w->layer[MP_LK_DENSE], *mo = &w->layer[MP_LK_MOE];
    const mp_wl_layer *hd = &w->layer[MP_LK_HEAD], *mt = &w->layer[MP_LK_MTP];
    pt->layer_fwd_s = d->fwd_s;
    pt->layer_bwd_s = d->bwd_s;
    pt->layer_bwd_weight_s = d->bwd_weight_s;
    pt->layer_recompute_s = d->recompute_s;
    pt->layer_tp_fwd_s = d->tp_fwd_s;
    pt->layer_tp_recompute_s = d->tp_recompute_s;
    pt->layer_cp_s = d->cp_fwd_s;
    pt->head_fwd_s = hd->fwd_s;
    pt->head_bwd_s = hd->bwd_s;
    pt->head_bwd_weight_s = hd->bwd_weight_s;
    pt->p2p_s = p2p_s;
    pt->moe_layer_fwd_s = mo->fwd_s;
    pt->moe_layer_bwd_s = mo->bwd_s;
    pt->moe_layer_recompute_s = mo->recompute_s;
    pt->moe_layer_tp_fwd_s = mo->tp_fwd_s;
    pt->moe_layer_ep_fwd_s = mo->ep_fwd_s;
    pt->moe_layer_ep_bwd_s = mo->ep_bwd_s;
    pt->layer_cp_bytes = d->cp_bytes;
    pt->moe_layer_ep_bytes = mo->ep_bytes;
    pt->mtp_fwd_s = w->mtp_modules * mt->fwd_s;
    pt->mtp_bwd_s = w->mtp_modules * mt->bwd_s;
    pt->fsdp_copy_s_per_param = w->fsdp_copy_s_per_param;
    pt->fsdp_copy_out_s = sl->t.copy_out_s;
}

/* Tokens, FLOPs, MFU and HFU of the step. MFU and HFU against the dense peak of the plan's GEMM
 * precision (PaLM, Chowdhery et al. 2022 App. B; MosaicML and torchtitan report their fp8 runs
 * against the fp8 peak, as the fp8 rows of validation/runs.csv show: 460 TFLOP/s = 0.2328 of
 * 1979). */
static void throughput(const mp_workload *w, const mp_cluster *c, const mp_plan *p, mp_estimate *e)
{
    const mp_flops fl = w->flops;
    const double n = (double)c->num_gpus;
    e->tokens_per_step = (double)p->gb * (double)p->seq;
    e->tokens_per_s = e->tokens_per_step / e->step_s;
    e->tokens_per_s_per_gpu = e->tokens_per_s / n;
    /* A frozen base (LoRA, QLoRA) runs no weight-gradient GEMMs: its model FLOPs are the
     * forward and the input gradients, 2 x forward for the linear layers and the head (the
     * adapters' FLOPs, r/h of those, are left out). */
    const double model_per_token = w->frozen ? fl.model_per_token - fl.fwd_matmul_per_token - fl.fwd_lm_head_per_token
                                             : fl.model_per_token;
    e->model_flops_per_step = e->tokens_per_step * model_per_token;
    double rc_per_token = p->recompute == MP_RC_FULL ? fl.recompute_full_per_token
                        : p->recompute == MP_RC_SELECTIVE ? fl.recompute_selective_per_token
                        : p->recompute == MP_RC_OP ? fl.recompute_op_per_token
                        : p->recompute == MP_RC_MLP ? fl.recompute_mlp_per_token : 0.0;
    if (p->recompute_every > 1)
        rc_per_token /= (double)p->recompute_every; /* one layer in n (plan recompute_every) */
    e->hardware_flops_per_step = e->tokens_per_step * (model_per_token + rc_per_token);
    e->model_tflops_per_gpu = e->model_flops_per_step / e->step_s / n / 1e12;
    e->hardware_tflops_per_gpu = e->hardware_flops_per_step / e->step_s / n / 1e12;
    double causal_total = fl.fwd_matmul_per_token + fl.fwd_attn_causal_per_token + fl.fwd_lm_head_per_token;
    e->attention_flops_frac = causal_total > 0 ? fl.fwd_attn_causal_per_token / causal_total : 0.0;
    const mp_gpu *g = &c->gpu;
    mp_dtype pk = p->precision;
    if (g->peak_flops_per_s[pk] <= 0)
        pk = g->peak_flops_per_s[MP_DT_BF16] > 0 ? MP_DT_BF16 : MP_DT_FP16;
    e->peak_flops_per_s = g->peak_flops_per_s[pk];
    e->mfu = e->model_tflops_per_gpu * 1e12 / e->peak_flops_per_s;
    e->hfu = e->hardware_tflops_per_gpu * 1e12 / e->peak_flops_per_s;
}

void mp_est_step(const mp_workload *w, const mp_model *m, const mp_cluster *c, const mp_plan *p,
                 const mp_estimate_opts *o_in, const mp_stack_profile *sk, mp_estimate *e)
{
    const double M = w->microbatches;
    /* The stack's DP and ZeRO-3 overlap scale the caller's windows (data/stacks.json). */
    mp_estimate_opts ob = *o_in;
    ob.grad_reduce_overlap_frac *= sk->dp_overlap_frac;
    ob.zero3_overlap_frac *= sk->zero3_prefetch_frac;
    const mp_estimate_opts *o = &ob;
    slowest sl;
    find_slowest(w, m, p, o, sk, &sl);
    e->slowest_stage = sl.stage;
    /* Pipeline p2p on the critical path: a forward send/recv and a backward one per micro-batch
     * per model chunk (Megatron's blocking batched isend/irecv in steady 1F1B). */
    const double p2p_s = w->coll[MP_WC_PP_SEND].time_s;
    const double t_mb_pp = w->pp > 1 ? 2.0 * w->vpp * p2p_s : 0.0;
    const double t_mb_all = sl.t.total_s + t_mb_pp;
    const double bubble = bubble_s(p, w->pp, w->vpp, t_mb_all, sl.t.weight_s);
    double dp_total = 0.0, dp_exposed = 0.0;
    dp_comm(w, p, o, sk, &sl, e, &dp_total, &dp_exposed);
    /* Optimizer: the update over the local shard, memory-bound (AdamW: read fp32 master, m, v,
     * grad and write master, m, v and the 16-bit weight: 30 bytes per parameter), per optimizer,
     * with Muon's Newton-Schulz and the offloaded step's exposed part (memory_states.c). */
    const double elem_Bps = w->rates.elem_Bps;
    const double t_opt = mp_est_optimizer_step(w, m, c, p, sl.t.total_s, sl.t.total_s - sl.t.fwd_s, e);
    /* fp8: the weights' fp8 copies are re-quantised once per step, in the first micro-batch
     * (TE caches them across micro-batches): read 2, write rowwise and columnwise 1 + 1. Only
     * the linear layers' weights (not embedding, head, router or norms). */
    const double max_lin = w->stage_linear_params_max;
    const double cast_w = w->fp8 ? 4.0 * (p->zero == 3 ? max_lin / w->shard : max_lin) / elem_Bps : 0.0;
    fill_parts(w, &sl, p2p_s, &e->parts);
    e->parts.tp_hidden_s = sl.tp_hidden_s;
    e->parts.overlap_slowdown_s = sl.slow_s;
    e->parts.optimizer_s = t_opt;
    e->parts.fp8_weight_cast_s = cast_w;
    tiers(w, e);
    mp_time *t = &e->time;
    t->compute = M * sl.t.compute_s + cast_w;
    t->recompute = M * sl.t.recompute_s;
    t->tp_comm = M * sl.t.tp_s;
    t->cp_comm = M * sl.t.cp_s;
    t->ep_comm = M * sl.t.ep_s;
    t->pp_comm = M * t_mb_pp;
    t->pp_bubble = bubble;
    t->dp_comm_exposed = dp_exposed;
    t->dp_comm_total = dp_total;
    t->optimizer = t_opt;
    double overlap_slow = slow_frac(w, o, sk) * fmin(dp_total - dp_exposed, t->compute);
    e->step_s = M * t_mb_all + bubble + dp_exposed + t_opt + cast_w + overlap_slow;
    t->compute += overlap_slow;
    e->attention_frac = sl.t.compute_s > 0 ? sl.t.attn_s / sl.t.compute_s : 0.0;
    throughput(w, c, p, e);
}
