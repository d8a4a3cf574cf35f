/* src/estimate/estimate.c — the analytical estimator (memory, step time, throughput).
 *
 * One plan is evaluated with no allocation in O(pp) time (O(pp * vpp) for an interleaved MoE
 * model, whose dense and MoE layers are counted chunk by chunk). The step is built from the time
 * of one micro-batch on the slowest pipeline stage:
 *   step = M * t_mb + bubble + exposed DP/ZeRO communication + optimizer step
 * where M is the number of micro-batches per DP rank, t_mb the forward + backward (+ recompute)
 * of one micro-batch on a stage including its TP/CP/EP/PP communication, and the bubble follows
 * the schedule (Narayanan et al. 2021, Sec. 2.2: (p-1)/v * t_mb for 1F1B/interleaved; Qi et al.
 * 2023 for ZB-H1). docs/model.md derives every term.
 *
 * Two kinds of layer: dense (attention + dense FFN) and MoE (attention + router + routed and
 * shared experts, Megatron-Core's MoE layer). Rank order (Megatron-Core
 * parallel_state.initialize_model_parallel, order "tp-cp-ep-dp-pp"): TP stride 1, CP stride tp,
 * DP stride tp*cp, PP stride tp*cp*dp; for the experts the tp*cp*dp ranks of a stage are
 * re-partitioned as expert-TP (stride 1) x EP (stride etp) x expert-DP (stride etp*ep). With
 * etp == tp that makes the EP group etp-strided CP/DP ranks: inside a node when etp*ep <= its
 * GPUs, across the fabric beyond.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "meshplan/coll.h"
#include "meshplan/estimate.h"

void mp_estimate_opts_init(mp_estimate_opts *o)
{
    /* Defaults and their sources: docs/model.md "Assumptions". */
    o->grad_reduce_overlap_frac = 1.0;   /* bucketed DP reduction hides behind backward (Li et al. 2020, PyTorch DDP) */
    o->zero3_overlap_frac = 1.0;         /* FSDP prefetch hides gathers behind the previous layer (Zhao et al. 2023) */
    o->comm_compute_slowdown_frac = 0.0; /* set by calibration; 0 = no interference */
    o->allocator_margin_frac = 0.05;     /* PyTorch caching allocator: reserved vs allocated */
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
}

/* ---- compute-time helpers -------------------------------------------------------------- */

typedef struct {
    double matmul_flops_per_s; /* achievable large-GEMM rate at the plan's precision */
    double bf16_matmul_flops_per_s;
    double attn_flops_per_s;   /* fused attention fwd+bwd rate (bf16) */
    double mem_Bps;            /* achievable HBM bandwidth */
    int sms;
} rates;

/* Fraction of the dense peak a large GEMM reaches when no measurement is catalogued: the mean of
 * the measured A100 (271.2/312 = 0.87) and H100 (794.5/989 = 0.80) bf16 rows of
 * validation/gpus.csv. */
#define MP_DEFAULT_MATMUL_FRAC 0.835
/* Fused attention fwd+bwd as a fraction of the bf16 peak when none is catalogued: the H100 FA2
 * figure (FlashAttention-3 paper, Shah et al. 2024, Fig. 5), the lower of the two we have. */
#define MP_DEFAULT_ATTN_FRAC 0.35
/* HBM: measured when catalogued, else this share of the peak (mean measured/peak of A100 80GB
 * 1680/2039 = 0.82 and H100 3040/3350 = 0.91 in validation/gpus.csv). */
#define MP_DEFAULT_HBM_FRAC 0.865

static double matmul_rate(const mp_gpu *g, mp_dtype d)
{
    if (g->measured_matmul_flops_per_s[d] > 0)
        return g->measured_matmul_flops_per_s[d];
    return g->peak_flops_per_s[d] * MP_DEFAULT_MATMUL_FRAC;
}

static void gpu_rates(const mp_gpu *g, mp_dtype prec, mp_attn_kernel kern, rates *r)
{
    mp_dtype half = g->peak_flops_per_s[MP_DT_BF16] > 0 ? MP_DT_BF16 : MP_DT_FP16;
    r->bf16_matmul_flops_per_s = matmul_rate(g, half);
    r->matmul_flops_per_s = g->peak_flops_per_s[prec] > 0 ? matmul_rate(g, prec) : r->bf16_matmul_flops_per_s;
    double af = g->attention_flops_frac > 0 ? g->attention_flops_frac : MP_DEFAULT_ATTN_FRAC;
    /* FA3 / cuDNN-class kernels where the GPU has them catalogued (Hopper, Blackwell); on older
     * GPUs FA3 does not run and the FA2-class rate stands. */
    if (kern == MP_ATTN_FA3 && g->attention_fa3_flops_frac > af)
        af = g->attention_fa3_flops_frac;
    /* FlexAttention (torch 2.5): 90% of FA2 forward, 85% backward (PyTorch blog, 2024-08-07),
     * weighted 1 : 2.5 as the fwd+bwd rate is used (plan.h). */
    if (kern == MP_ATTN_FLEX)
        af *= 3.5 / (1.0 / 0.90 + 2.5 / 0.85);
    r->attn_flops_per_s = af * g->peak_flops_per_s[half];
    r->mem_Bps = g->measured_mem_bw_Bps > 0 ? g->measured_mem_bw_Bps : g->mem_bw_Bps * MP_DEFAULT_HBM_FRAC;
    r->sms = g->sm_count > 0 ? g->sm_count : 108;
}

/* Time of one GEMM C[M,N] = A[M,K] B[K,N] with element size e bytes: roofline of the achievable
 * rate, derated by wave quantisation over the SMs with 128x128 output tiles (the cuBLAS/CUTLASS
 * default tile for large bf16 GEMMs on Ampere/Hopper; NVIDIA "Matrix Multiplication Background
 * User's Guide", wave quantization), against the HBM traffic of reading A, B and writing C. */
static double gemm_s(const rates *r, double rate, double M, double N, double K, double e)
{
    if (M <= 0 || N <= 0 || K <= 0)
        return 0.0;
    double tiles = ceil(M / 128.0) * ceil(N / 128.0);
    double waves = ceil(tiles / r->sms);
    /* Every wave takes one whole tile's time, a partial edge tile too: waves x 2*128*128*K per
     * SM (= 2MNK / (rate x tiles / (waves x SMs)) when M and N are multiples of 128). */
    double flop_s = waves * r->sms * 2.0 * 128.0 * 128.0 * K / rate;
    double mem_s = e * (M * K + K * N + M * N) / r->mem_Bps;
    return flop_s > mem_s ? flop_s : mem_s;
}

/* A grouped GEMM: G independent GEMMs [M,K] x [K,N] (one per local expert) in one kernel, as
 * Megatron-Core's grouped GEMM runs the experts (Gale et al. 2022, MegaBlocks; CUTLASS grouped
 * GEMM). The same roofline, with the tiles of all groups sharing the waves, each group's rows
 * padded up to whole 128-row tiles (a small expert wastes most of its tile), and the weights of
 * every group read from HBM. */
static double grouped_gemm_s(const rates *r, double rate, double G, double M, double N, double K,
                             double e)
{
    if (G <= 0 || M <= 0 || N <= 0 || K <= 0)
        return 0.0;
    double tiles = G * ceil(M / 128.0) * ceil(N / 128.0);
    double useful = G * (M / 128.0) * ceil(N / 128.0);
    double waves = ceil(tiles / r->sms);
    double eff = useful / (waves * r->sms);
    double flop_s = 2.0 * G * M * N * K / (rate * eff);
    double mem_s = e * G * (M * K + K * N) / r->mem_Bps + 2.0 * G * M * N / r->mem_Bps;
    return flop_s > mem_s ? flop_s : mem_s;
}

double mp_fsdp_copy_out_s(double params, double bytes_per_param, double mem_Bps)
{
    if (!(params > 0) || !(bytes_per_param > 0) || !(mem_Bps > 0) || !isfinite(params) ||
        !isfinite(bytes_per_param) || !isfinite(mem_Bps))
        return 0.0;
    return 2.0 * params * bytes_per_param / mem_Bps;
}

/* Per-layer forward pieces for one micro-batch on one GPU. */
typedef struct {
    double gemm_s;      /* linear layers (QKV/MLA projections, O, FFN or experts, router) */
    double attn_s;      /* attention core */
    double elem_s;      /* memory-bound element-wise ops (norms, activations, permutes, casts) */
    double tp_s;        /* TP/SP (and expert-TP) collectives of one forward pass */
    double cp_fwd_s;    /* CP K/V exchange of the forward, exposed part */
    double cp_bwd_s;    /* CP exchange of the backward, exposed part */
    double ep_fwd_s;    /* MoE dispatch + combine of the forward */
    double ep_bwd_s;    /* ... of the backward */
    double bwd_extra_s; /* backward-only element-wise work (fp8 casts of output gradients) */
} layer_fwd;

/* Element-wise HBM traffic of one layer's forward per token, in bytes: two norms (read h, write
 * h each), two residual adds (read 2h, write h each), the activation function (GELU: read f,
 * write f; SwiGLU: read 2f, write f), rotary embedding on Q and K (read and write), and dropout
 * (read h, write h, 1-byte mask) twice when on. Counted from the kernels Megatron-LM and PyTorch
 * run (fused norm, fused bias-activation); backward moves about twice as much (gradients in and
 * out plus saved inputs). f_act is the width whose activation runs here per token (0 for an MoE
 * layer, whose expert activations are counted with the routed tokens). */
static double elem_fwd_bytes_per_token(const mp_model *m, const mp_attn_dims *ad, double f_act,
                                       int tp, int sp)
{
    double h = (double)m->hidden, f = f_act / tp;
    double qd = ad->q_width / tp, kd = ad->k_width / tp;
    double hs = sp ? h / tp : h; /* norms/residuals run on the sequence shard with SP */
    double elems = 2.0 * 2.0 * hs + 2.0 * 3.0 * hs + (m->glu ? 3.0 : 2.0) * f;
    if (m->position == MP_POS_ROPE)
        elems += ad->mla ? 2.0 * (double)m->qk_rope_head_dim * ((double)m->heads / tp + 1.0)
                         : 2.0 * (qd + kd);
    if (ad->mla) /* the two latent RMSNorms: read and write each latent */
        elems += 2.0 * ((double)m->q_lora_rank + (double)m->kv_lora_rank);
    double bytes = 2.0 * elems;
    if (m->dropout)
        bytes += 2.0 * (2.0 * 2.0 * hs + hs);
    return bytes;
}

/* ---- memory ------------------------------------------------------------------------------ */

/* Bytes per parameter by ZeRO stage (before dividing the sharded parts by the shard group):
 * stage 0/1 — Megatron-LM mixed precision: 16-bit weights, fp32 main gradients, fp32 master
 * weights and Adam moments (12 bytes), docs "Distributed Optimizer": 18 bytes, or 6 + 12/d;
 * stage 2/3 — ZeRO (Rajbhandari et al. 2020, Sec. 3 / Fig. 1): 2 + 2 + 12 = 16 bytes, with
 * gradients (stage 2) and also weights (stage 3) partitioned. */
typedef struct {
    double weights, grads, optim;
} bytes_per_param;

static void param_bytes(int zero, double shard, bytes_per_param *b)
{
    switch (zero) {
    case 0: b->weights = 2; b->grads = 4; b->optim = 12; break;
    case 1: b->weights = 2; b->grads = 4; b->optim = 12 / shard; break;
    case 2: b->weights = 2; b->grads = 2 / shard; b->optim = 12 / shard; break;
    default: b->weights = 2 / shard; b->grads = 2 / shard; b->optim = 12 / shard; break;
    }
}

/* ---- pipeline stages --------------------------------------------------------------------- */

/* Layers of stage i (of p, v model chunks each): chunk j of the C = p*v chunks holds
 * L/C layers, the first L%C chunks one more, and stage i holds chunks i, i+p, ... — with v = 1
 * the contiguous split of Megatron-LM. *nmoe counts the MoE layers among them. */
static void stage_layers(const mp_model *m, int p, int v, int i, int moe, double *nl, double *nmoe)
{
    const int64_t L = m->layers, C = (int64_t)p * v, q = L / C, r = L % C;
    if (!moe) {
        int64_t lmin = L / p, lextra = L % p;
        *nl = (double)(lmin + (i < lextra ? 1 : 0));
        *nmoe = 0.0;
        return;
    }
    int64_t n = 0, nm = 0;
    for (int64_t j = i; j < C; j += p) {
        int64_t first = j * q + (j < r ? j : r), cnt = q + (j < r ? 1 : 0);
        n += cnt;
        nm += mp_model_moe_layers_in(m, first, cnt);
    }
    *nl = (double)n;
    *nmoe = (double)nm;
}

/* Parameters held by stage i before the TP split: non-expert (dense_p: its layers, the embedding
 * on the first stage, the final norm, the LM head and the MTP modules' non-expert part on the
 * last), routed experts per GPU (exp_p) and the non-linear ones among dense_p (nonlin: embedding,
 * head), as the parameter and memory loops of mp_estimate_plan both need them. */
typedef struct {
    int pp, v, moe, mtp_moe;
    double moe_nonexpert, expert_per_layer_gpu, D_mtp, V, h;
} stage_param_ctx;

static void stage_params(const mp_model *m, const mp_param_count *pc, const stage_param_ctx *x, int i,
                         double *nl, double *nm, double *dense_p, double *exp_p, double *nonlin)
{
    stage_layers(m, x->pp, x->v, i, x->moe, nl, nm);
    *dense_p = (*nl - *nm) * (double)pc->per_layer + *nm * x->moe_nonexpert;
    *exp_p = *nm * x->expert_per_layer_gpu;
    *nonlin = 0.0;
    if (i == 0) {
        *dense_p += (double)pc->embedding;
        *nonlin += (double)pc->embedding;
    }
    if (i == x->pp - 1) {
        double head = (double)(pc->lm_head ? pc->lm_head : (x->pp > 1 ? (int64_t)(x->V * x->h) : 0));
        *dense_p += (double)pc->final_norm + head;
        *nonlin += head;
        if (m->mtp_layers > 0) {
            *dense_p += (double)pc->mtp - (x->mtp_moe ? x->D_mtp * (double)(m->moe_experts * pc->expert) : 0.0);
            *exp_p += x->mtp_moe ? x->D_mtp * x->expert_per_layer_gpu : 0.0;
        }
    }
}

/* ---- the estimator ------------------------------------------------------------------------ */

static void add_reason(mp_estimate *e, const char *fmt, double a, double b)
{
    if (e->nreasons >= 4)
        return;
    snprintf(e->reasons[e->nreasons++], sizeof e->reasons[0], fmt, a, b);
}

static double coll(const mp_cluster *c, mp_coll_op op, double bytes, mp_group g)
{
    mp_coll_cost cc;
    if (g.size <= 1 || bytes <= 0 || mp_coll_time(c, op, bytes, g, MP_ALGO_AUTO, &cc) != MP_OK)
        return 0.0;
    return cc.total_s;
}

/* The same, also recording the tier whose bandwidth bounds it (when tier is not NULL). */
static double coll_t(const mp_cluster *c, mp_coll_op op, double bytes, mp_group g, int *tier)
{
    mp_coll_cost cc;
    if (g.size <= 1 || bytes <= 0 || mp_coll_time(c, op, bytes, g, MP_ALGO_AUTO, &cc) != MP_OK)
        return 0.0;
    if (tier)
        *tier = cc.bottleneck_tier;
    return cc.total_s;
}

/* A collective over a group made of two runs of the rank order (inner, outer; topo.h). */
static double coll_2d(const mp_cluster *c, mp_coll_op op, double bytes, mp_group in, mp_group out,
                      int *tier)
{
    mp_coll_cost cc;
    if (in.size * out.size <= 1 || bytes <= 0 ||
        mp_coll_time_2d(c, op, bytes, in, out, MP_ALGO_MASK_ALL, &cc) != MP_OK)
        return 0.0;
    if (tier)
        *tier = cc.bottleneck_tier;
    return cc.total_s;
}

/* The DP x CP group split into the shard group (hsdp ranks, or all) and the replica group, each
 * as inner and outer runs of the rank order (plan.h mp_plan_group): the shard group is the inner
 * `shard` ranks of the data group, the replicas the rest. */
static void data_groups(const mp_plan *p, int64_t shard, mp_group *sh_in, mp_group *sh_out,
                        mp_group *rp_in, mp_group *rp_out)
{
    mp_group in, out;
    mp_plan_group(p, MP_DIM_BIT(MP_DIM_CP) | MP_DIM_BIT(MP_DIM_EP) | MP_DIM_BIT(MP_DIM_DP), &in,
                  &out);
    const mp_group one = {1, 1};
    if (shard >= in.size * out.size) {
        *sh_in = in, *sh_out = out, *rp_in = one, *rp_out = one;
    } else if (shard <= in.size) {
        *sh_in = (mp_group){shard, in.stride};
        *sh_out = one;
        if (in.size / shard > 1) {
            *rp_in = (mp_group){in.size / shard, in.stride * shard};
            *rp_out = out;
        } else {
            *rp_in = out;
            *rp_out = one;
        }
    } else {
        int64_t k = shard / in.size;
        *sh_in = in;
        *sh_out = (mp_group){k, out.stride};
        *rp_in = (mp_group){out.size / k, out.stride * k};
        *rp_out = one;
    }
}

mp_status mp_estimate_plan(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                           const mp_estimate_opts *opts, mp_estimate *e, mp_diag *diag)
{
    mp_estimate_opts defaults;
    if (!opts) {
        mp_estimate_opts_init(&defaults);
        opts = &defaults;
    }
    memset(e, 0, offsetof(mp_estimate, per_stage));
    if (mp_plan_check_init(p, diag) != MP_OK)
        return MP_ERR_INPUT;
    e->tp_tier = e->cp_tier = e->pp_tier = e->dp_tier = -1;
    const int moe = mp_model_is_moe(m);
    const int64_t etp_i = p->etp > 0 ? p->etp : (moe ? p->tp : 1);
    if (p->tp < 1 || p->pp < 1 || p->dp < 1 || p->cp < 1 || p->vpp < 1 || p->mb < 1 || p->gb < 1 ||
        p->seq < 1 || p->ep < 1 || p->tp * p->pp * p->cp * p->dp != c->num_gpus ||
        (moe && (m->moe_experts % p->ep || (p->tp * p->cp * p->dp) % (etp_i * p->ep)))) {
        mp_diag_add(diag, "plan is not resolved for %lld GPUs (call mp_plan_resolve)",
                    (long long)c->num_gpus);
        return MP_ERR_INPUT;
    }
    const mp_gpu *g = &c->gpu;
    if (g->peak_flops_per_s[p->precision] <= 0) {
        mp_diag_add(diag, "plan.precision = %s: %s has no %s tensor cores", mp_dtype_name(p->precision),
                    g->key, mp_dtype_name(p->precision));
        return MP_ERR_INPUT;
    }

    const int tp = (int)p->tp, pp = (int)p->pp, cp = (int)p->cp, v = (int)p->vpp;
    const int ep = (int)p->ep, etp = (int)etp_i;
    const double b = (double)p->mb, s = (double)p->seq;
    const double M = (double)(p->gb / (p->mb * p->dp)); /* micro-batches per DP rank */
    const double T = b * s / cp;                          /* tokens per micro-batch per GPU */
    const double h = (double)m->hidden;
    const double f = (double)m->ffn_hidden;
    const double V = (double)mp_model_padded_vocab(m, tp);
    const double act_e = 2.0; /* stored activations and TP traffic are 16-bit (also under fp8) */
    const int fp8 = p->precision == MP_DT_FP8;
    /* GEMM operand bytes: the linear layers of the transformer run at the plan's precision; the
     * attention core, the LM head and the router stay 16-bit (Transformer Engine's fp8 autocast
     * covers its Linear/LayerNormLinear/GroupedLinear modules only; Megatron-Core's output layer
     * and router are not TE fp8 modules; DeepSeek-AI 2024 Sec. 3.3 keeps embedding, output head,
     * gating and attention in bf16 too). */
    const double we = mp_dtype_bytes(p->precision);
    mp_attn_dims ad;
    mp_model_attn_dims(m, &ad);
    e->microbatches = (int)M;

    rates r;
    gpu_rates(g, p->precision, p->attn_kernel, &r);
    /* Sustained end-to-end fractions (calibrated on validation/runs.csv; docs/model.md). */
    r.matmul_flops_per_s *= opts->gemm_sustained_frac;
    r.bf16_matmul_flops_per_s *= opts->gemm_sustained_frac;
    r.attn_flops_per_s *= opts->attention_sustained_frac;
    const double elem_Bps = r.mem_Bps * opts->memory_bound_sustained_frac;
    const double R = r.matmul_flops_per_s, R16 = r.bf16_matmul_flops_per_s;

    /* MoE load factor of the busiest GPU: with a capacity factor every expert's buffer is
     * padded to capacity (GShard, Lepikhin et al. 2020 Sec. 2.2; Switch, Fedus et al. 2021
     * Sec. 2.2), so the work scales with it; dropless it is the routing imbalance. */
    const double imbalance = p->moe_imbalance >= 1.0 ? p->moe_imbalance
                           : (opts->moe_imbalance >= 1.0 ? opts->moe_imbalance : 1.0);
    const double load = p->moe_capacity_factor > 0 ? p->moe_capacity_factor : imbalance;
    e->moe_load = moe ? load : 0.0;

    /* --- attention part of a layer (both kinds), one micro-batch, forward -------------- */
    /* Groups placed by the plan's rank order (TP stride 1, CP stride tp with the default). */
    const mp_group gtp = {tp, mp_plan_stride(p, MP_DIM_TP)}, gcp = {cp, mp_plan_stride(p, MP_DIM_CP)};
    double attn_gemm = 0.0, attn_core = 0.0, attn_cast_elems = 0.0, attn_out_elems = 0.0;
    {
        const double ql = (double)m->q_lora_rank, kvl = (double)m->kv_lora_rank;
        const double rope = (double)m->qk_rope_head_dim;
        if (ad.mla) {
            /* MLA (DeepSeek-AI 2024 Sec. 2.1.1): down-projections whole on every TP rank,
             * up-projections and output split by TP. */
            double kvup = (double)m->heads * (ad.qk_head - rope + ad.v_head) / tp;
            attn_gemm = (ql > 0 ? gemm_s(&r, R, T, ql, h, we) + gemm_s(&r, R, T, ad.q_width / tp, ql, we)
                                : gemm_s(&r, R, T, ad.q_width / tp, h, we))
                      + gemm_s(&r, R, T, kvl + rope, h, we) + gemm_s(&r, R, T, kvup, kvl, we)
                      + gemm_s(&r, R, T, h, ad.o_width / tp, we);
            attn_out_elems = T * ((ql > 0 ? ql + ad.q_width / tp : ad.q_width / tp) + kvl + rope + kvup + h);
        } else {
            attn_gemm = gemm_s(&r, R, T, (ad.q_width + ad.k_width + ad.v_width) / tp, h, we) /* QKV */
                      + gemm_s(&r, R, T, h, ad.o_width / tp, we);                            /* O */
            attn_out_elems = T * ((ad.q_width + ad.k_width + ad.v_width) / tp + h);
        }
        /* fp8 inputs needing their own cast (the QKV/latent inputs come out of a fused
         * LayerNorm+cast): the output projection's. */
        attn_cast_elems = T * ad.o_width / tp;
        /* Attention core, forward: causal, 2*ctx*(q width + o width) FLOPs per token (ctx =
         * s/2 keys on average; with CP's load-balanced chunks too; min-window average for
         * windowed layers, the same average as mp_model_flops). */
        const double Lw = m->attn_window > 0 ? (double)(m->attn_window_layers ? m->attn_window_layers : m->layers) : 0.0;
        const double w = (double)m->attn_window;
        double ctx_w = (w > 0 && w < s) ? w - w * (w - 1.0) / (2.0 * s) : s / 2.0;
        double full_k = s / 2.0, win_k = ctx_w;
        if (p->doc_len > 0 && p->flash) {
            /* Packed documents under a document mask: a fused kernel skips the tiles no query of
             * the document sees (FlexAttention's block mask, FlashAttention varlen), so the work
             * follows the keys each query sees (mp_attn_keys_per_query), plus half a tile per
             * query where a document starts inside a tile that is computed whole (128x128 tiles:
             * FlexAttention's default block size, Dong et al. 2024, arXiv 2412.05496). Without
             * a fused kernel the s^2 scores are computed and then masked: no saving. */
            const double mu = (double)p->doc_len, tile_half = 64.0;
            full_k = fmin(mp_attn_keys_per_query(s, 0.0, mu) + tile_half, full_k);
            win_k = fmin(mp_attn_keys_per_query(s, w, mu) + tile_half, win_k);
        }
        double ctx = ((double)m->layers - Lw) / (double)m->layers * full_k + Lw / (double)m->layers * win_k;
        double attn_fwd_flops = 2.0 * T * ctx * (ad.q_width + ad.o_width) / tp;
        if (p->flash) {
            /* FlashAttention benchmark convention: fwd+bwd = 3.5 x forward FLOPs (Dao 2023,
             * benchmarks); the catalogued rate is for fwd+bwd, so the forward share is 1/3.5. */
            attn_core = attn_fwd_flops / r.attn_flops_per_s;
        } else {
            /* Two batched GEMMs at the GEMM rate, plus the s^2 scores through HBM: write scores,
             * softmax read+write, (dropout read+write+mask), read for x V: ~10 bytes per score
             * forward (Korthikanti et al. 2022 Sec. 4.1 tensor list). */
            double scores = (double)m->heads / tp * b * (s / cp) * s;
            attn_core = attn_fwd_flops * 2.0 / R16 + (m->dropout ? 10.0 : 6.0) * scores / elem_Bps;
        }
    }
    /* TP of the attention block: Megatron's all-reduce (f/g operators, Shoeybi et al. 2019
     * Fig. 3), or with SP an all-gather + reduce-scatter pair (Korthikanti et al. 2022 Sec.
     * 4.2.2), of T*h 16-bit elements; not overlapped with compute. */
    double tp_pair = 0.0;
    if (tp > 1) {
        double S = T * h * act_e;
        tp_pair = p->sp ? coll_t(c, MP_COLL_ALL_GATHER, S, gtp, &e->tp_tier) + coll(c, MP_COLL_REDUCE_SCATTER, S, gtp)
                        : coll_t(c, MP_COLL_ALL_REDUCE, S, gtp, &e->tp_tier);
    }
    /* CP: each rank holds a K and V chunk of T tokens (T*(k+v width)/tp 16-bit values).
     * Ring (Liu et al. 2023; Megatron-Core p2p): cp-1 steps, each passing the chunk to the next
     * rank while attending to the one in hand; backward passes K/V and dK/dV (twice the bytes)
     * against the backward attention (2.5x forward). Only the excess over the step's attention
     * is exposed. All-gather (Llama 3, Dubey et al. 2024 Sec. 3.3.2): gather K/V before
     * attention, reduce-scatter dK/dV after: same bytes, not overlapped. */
    double cp_fwd = 0.0, cp_bwd = 0.0, cp_bytes = 0.0;
    if (cp > 1) {
        double chunk = T * (ad.k_width + ad.v_width) / tp * act_e;
        if (p->cp_algo == MP_CP_ALLGATHER) {
            cp_fwd = coll_t(c, MP_COLL_ALL_GATHER, chunk * cp, gcp, &e->cp_tier);
            cp_bwd = coll(c, MP_COLL_REDUCE_SCATTER, chunk * cp, gcp);
            cp_bytes = 2.0 * (cp - 1) * chunk;
        } else {
            double step_comm = coll_t(c, MP_COLL_SEND_RECV, chunk, (mp_group){2, gcp.stride}, &e->cp_tier);
            double step_comm_bwd = coll(c, MP_COLL_SEND_RECV, 2.0 * chunk, (mp_group){2, gcp.stride});
            double step_attn = attn_core / cp;
            cp_fwd = (cp - 1) * fmax(0.0, step_comm - step_attn);
            cp_bwd = (cp - 1) * fmax(0.0, step_comm_bwd - 2.5 * step_attn);
            cp_bytes = 3.0 * (cp - 1) * chunk;
        }
    }

    /* --- dense layer ---------------------------------------------------------------------- */
    layer_fwd ld = {0};
    {
        ld.gemm_s = attn_gemm + gemm_s(&r, R, T, (m->glu ? 2 : 1) * f / tp, h, we) /* FC1 (+ gate) */
                  + gemm_s(&r, R, T, h, f / tp, we);                              /* FC2 */
        ld.attn_s = attn_core;
        ld.elem_s = T * elem_fwd_bytes_per_token(m, &ad, f, tp, p->sp) / elem_Bps;
        if (fp8) {
            /* Transformer Engine casts every fp8 GEMM input it cannot fuse into a preceding
             * LayerNorm (output projection, FC2): read 2 bytes, write the rowwise and the
             * transposed columnwise fp8 copies (1 + 1), and in backward every output
             * gradient the same way (TE Linear, Float8Quantizer with both usages). */
            double fwd_cast = attn_cast_elems + T * f / tp;
            double bwd_cast = attn_out_elems + T * ((m->glu ? 2 : 1) * f / tp + h);
            ld.elem_s += 4.0 * fwd_cast / elem_Bps;
            ld.bwd_extra_s = 4.0 * bwd_cast / elem_Bps;
        }
        ld.tp_s = 2.0 * tp_pair;
        ld.cp_fwd_s = cp_fwd;
        ld.cp_bwd_s = cp_bwd;
    }

    /* --- MoE layer ------------------------------------------------------------------------ */
    layer_fwd lm = {0};
    double a2a_bytes = 0.0;
    if (moe) {
        const double E = (double)m->moe_experts, k = (double)m->moe_topk;
        const double fe = (double)m->moe_ffn_hidden, S = (double)m->moe_shared_experts;
        const double El = E / ep;                     /* local experts */
        const double Tr = T / tp;                     /* tokens routed from this GPU (SP shard) */
        const double Rt = Tr * k * etp * load;        /* routed copies this GPU's experts run */
        const double Me = Rt / El;                    /* tokens per local expert */
        const double fl = fe / etp;                   /* expert width on this GPU */
        lm.gemm_s = attn_gemm
                  + gemm_s(&r, R16, Tr, E, h, 2.0)                               /* router */
                  + grouped_gemm_s(&r, R, El, Me, (m->glu ? 2 : 1) * fl, h, we)  /* expert FC1 */
                  + grouped_gemm_s(&r, R, El, Me, h, fl, we);                    /* expert FC2 */
        if (S > 0)
            lm.gemm_s += gemm_s(&r, R, T, (m->glu ? 2 : 1) * S * fe / tp, h, we) + gemm_s(&r, R, T, h, S * fe / tp, we);
        lm.attn_s = attn_core;
        /* Element-wise: the dense-layer kernels with the shared experts' activation, plus per
         * routed copy (Megatron-Core MoE with fused permute): permute (read h, write h), on
         * EP > 1 the sort of received chunks by expert and its inverse (2 x read h, write h),
         * the expert activation (GLU: read 2 fl, write fl), the probability-weighted unpermute
         * (read h, write h/k); plus the router's fp32 logits, softmax/top-k and probabilities
         * (~4 passes over E floats per token). */
        double per_copy = 2.0 * (2.0 * h + (ep > 1 ? 4.0 * h : 0.0) + (m->glu ? 3.0 : 2.0) * fl + h + h / k);
        lm.elem_s = T * elem_fwd_bytes_per_token(m, &ad, S * fe, tp, p->sp) / elem_Bps
                  + (Rt * per_copy + 16.0 * Tr * E) / elem_Bps;
        /* The dispatcher's per-copy bookkeeping (routing-map to index conversion, sorts and
         * scatters with indirection, the host sync for all-to-all split sizes), fitted: one
         * third in forward, like the other per-layer work (backward = 2x forward). */
        lm.elem_s += Rt * fmax(0.0, opts->moe_copy_overhead_s) / 3.0;
        if (fp8) {
            /* As for the dense layer: the output projection, the expert FC1 input (no norm in
             * front after the dispatch), expert FC2 and shared FC2 inputs; backward casts every
             * output gradient. */
            double fwd_cast = attn_cast_elems + Rt * (h + fl) + T * S * fe / tp;
            double bwd_cast = attn_out_elems + Rt * ((m->glu ? 2 : 1) * fl + h) +
                              T * ((m->glu ? 2 : 1) * S * fe / tp + (S > 0 ? h : 0.0));
            lm.elem_s += 4.0 * fwd_cast / elem_Bps;
            lm.bwd_extra_s = 4.0 * bwd_cast / elem_Bps;
        }
        /* TP: the attention pair, the shared experts' pair (a dense MLP on the TP group), and
         * with expert-TP the routed tokens gathered over and reduce-scattered back to the etp
         * ranks that hold slices of the same experts (Megatron-Core alltoall dispatcher). */
        lm.tp_s = tp_pair + (S > 0 ? tp_pair : 0.0);
        if (etp > 1) {
            double B = Tr * k * load * h * act_e * etp; /* gathered size */
            lm.tp_s += coll(c, MP_COLL_ALL_GATHER, B, (mp_group){etp, 1}) +
                       coll(c, MP_COLL_REDUCE_SCATTER, B, (mp_group){etp, 1});
        }
        /* EP: dispatch and combine all-to-all over the EP group (stride etp), Tr*k copies of h
         * values each way (mp_moe_dispatch_bytes_per_token), the busiest GPU receiving load x
         * its share; dispatch in fp8 with fp8_comm (DeepSeek-AI 2024 Sec. 3.3.2; combine stays
         * bf16). Not overlapped with compute (Megatron-Core's default; moe_a2a_overlap off in
         * the benchmarks validated). Backward sends the gradients the other way, in bf16. */
        if (ep > 1) {
            mp_group gep = {ep, etp};
            double disp_e = p->fp8_comm ? 1.0 : 2.0;
            double d = coll(c, MP_COLL_ALL_TO_ALL, Tr * mp_moe_dispatch_bytes_per_token(m, disp_e) * load, gep);
            double cbn = coll(c, MP_COLL_ALL_TO_ALL, Tr * mp_moe_dispatch_bytes_per_token(m, 2.0) * load, gep);
            lm.ep_fwd_s = d + cbn;
            lm.ep_bwd_s = 2.0 * cbn;
            a2a_bytes = Tr * ((double)(ep - 1) / ep) *
                        (mp_moe_dispatch_bytes_per_token(m, disp_e) + 3.0 * mp_moe_dispatch_bytes_per_token(m, 2.0));
        }
        lm.cp_fwd_s = cp_fwd;
        lm.cp_bwd_s = cp_bwd;
    }

    /* Forward/backward/recompute per layer per micro-batch. Backward = 2x forward for the
     * GEMMs (dgrad + wgrad, Narayanan et al. 2021) and element-wise traffic; attention backward
     * is 2.5x its forward (the 3.5x convention above). */
    const double dense_f = ld.gemm_s + ld.attn_s + ld.elem_s;
    const double dense_b = 2.0 * ld.gemm_s + 2.5 * ld.attn_s + 2.0 * ld.elem_s + ld.bwd_extra_s;
    const double moe_f = lm.gemm_s + lm.attn_s + lm.elem_s;
    const double moe_b = 2.0 * lm.gemm_s + 2.5 * lm.attn_s + 2.0 * lm.elem_s + lm.bwd_extra_s;
    double dense_rc = 0.0, dense_rc_comm = 0.0, moe_rc = 0.0;
    if (p->recompute == MP_RC_FULL) {
        dense_rc = dense_f;
        dense_rc_comm = ld.tp_s;
        moe_rc = moe_f; /* its forward communication is added below: it dispatches again */
    } else if (p->recompute == MP_RC_SELECTIVE) {
        dense_rc = ld.attn_s; /* recompute the attention core only */
        moe_rc = lm.attn_s;
    }
    /* Communication on the critical path per layer (forward + backward + recompute). */
    const double moe_comm_tp = 2.0 * lm.tp_s + (p->recompute == MP_RC_FULL ? lm.tp_s : 0.0);
    const double moe_comm_ep = lm.ep_fwd_s + lm.ep_bwd_s + (p->recompute == MP_RC_FULL ? lm.ep_fwd_s : 0.0);

    /* LM head (last stage) and loss: a T x V/tp GEMM forward in 16-bit, two backward, plus the
     * cross-entropy traffic on fp32 logits: ~24 bytes per logit (read bf16 2, write fp32 4,
     * read 4 for the loss; backward read 4, write 4, convert 4 -> 2; case C4). MTP modules run
     * it again each. */
    const double head_f = gemm_s(&r, R16, T, V / tp, h, 2.0);
    const double ce_s = 24.0 * T * V / tp / elem_Bps;
    const double head_fb = 3.0 * head_f + ce_s;
    const int mtp_moe = m->mtp_layers > 0 && mp_model_moe_layers_in(m, m->layers - 1, 1) > 0;
    const double D_mtp = (double)m->mtp_layers;
    double mtp_f = 0.0, mtp_b = 0.0;
    if (m->mtp_layers > 0) {
        /* DeepSeek-AI 2024 Sec. 2.2: norms, the 2h -> h projection, one layer (of the kind the
         * stack ends with), the head. */
        double proj = gemm_s(&r, R, T, h, 2.0 * h, we);
        mtp_f = D_mtp * (proj + (mtp_moe ? moe_f : dense_f) + head_f);
        mtp_b = D_mtp * (2.0 * proj + (mtp_moe ? moe_b : dense_b) + 2.0 * head_f + ce_s);
    }

    /* --- the stages ----------------------------------------------------------------------- */
    mp_param_count pc;
    mp_model_params(m, tp, &pc);
    const int64_t L = m->layers;
    const int64_t lmin = L / pp, lextra = L % pp; /* the first lextra stages get one more layer */
    e->layers_per_stage_min = (int)lmin;
    e->layers_per_stage_max = (int)(lmin + (lextra ? 1 : 0));
    e->nstages = pp;

    /* Pipeline p2p: activations of one micro-batch, T*h 16-bit values (/tp with Megatron's
     * scatter-gather optimisation when SP or TP > 1, Narayanan et al. 2021 Sec. 4.1). */
    double p2p_s = 0.0;
    if (pp > 1)
        p2p_s = coll_t(c, MP_COLL_SEND_RECV, T * h * act_e / (tp > 1 ? tp : 1),
                       (mp_group){2, mp_plan_stride(p, MP_DIM_PP)}, &e->pp_tier);

    /* DP/ZeRO groups. Non-expert parameters: split by TP (norms replicated but small),
     * replicated over the DP x CP group. Routed experts: E/ep experts per GPU, each split by etp,
     * replicated over the expert-DP group of tp*cp*dp/(etp*ep) ranks. */
    const int64_t dpg = p->dp * p->cp;
    const int64_t shard = p->hsdp ? p->hsdp : dpg;
    const double edp = moe ? (double)(p->tp * p->cp * p->dp) / (double)(etp * ep) : 1.0;
    const double eshard = moe ? (p->hsdp && p->hsdp < edp ? (double)p->hsdp : edp) : 1.0;
    const double expert_per_layer_gpu = moe ? (double)m->moe_experts / ep * (double)pc.expert / etp : 0.0;
    const double moe_nonexpert = moe ? (double)(pc.moe_per_layer - m->moe_experts * pc.expert) : 0.0;
    /* The shard group (all dp*cp ranks, or hsdp of them) and the replicas, placed by the plan's
     * rank order (stride tp with the default order). */
    mp_group sh_in, sh_out, rp_in, rp_out;
    data_groups(p, shard, &sh_in, &sh_out, &rp_in, &rp_out);
    const mp_group gsh = {sh_in.size * sh_out.size, sh_in.stride}; /* for the bottleneck text */
    const mp_group gedp = {(int64_t)(eshard > 0 ? eshard : 1), (int64_t)etp * ep};
    const double pe = p->fp8_comm ? 1.0 : 2.0;

    /* FSDP2 (fsdp = 2): every gather is followed by a copy-out on the compute stream
     * (mp_fsdp_copy_out_s): each layer's (and MTP module's) in the forward and again in the
     * backward (full recompute reuses that gather); the root module's parameters (embedding on
     * the first stage, final norm and LM head on the last) once per micro-batch, FSDP2 keeping
     * the root gathered from its forward to its backward. Only what is sharded is gathered:
     * non-expert parameters when the shard group has more than one rank, experts when their
     * expert-DP group has. The reduce-scatter's copy-in runs on FSDP2's reduce-scatter stream,
     * beside compute, and is not counted. */
    double co_layer = 0.0, co_moe = 0.0, co_first = 0.0, co_last = 0.0, co_per_param = 0.0;
    if (p->zero == 3 && p->fsdp == 2) {
        const double dsh = shard > 1 ? 1.0 : 0.0, esh = eshard > 1 ? 1.0 : 0.0;
        co_per_param = mp_fsdp_copy_out_s(1.0, pe, r.mem_Bps);
        co_layer = dsh * co_per_param * (double)pc.per_layer / tp;
        co_moe = co_per_param * (dsh * moe_nonexpert / tp + esh * expert_per_layer_gpu);
        co_first = dsh * co_per_param * (double)pc.embedding / tp;
        const double head = (double)(pc.lm_head ? pc.lm_head : (pp > 1 ? (int64_t)(V * h) : 0));
        co_last = dsh * co_per_param * ((double)pc.final_norm + head) / tp;
        if (m->mtp_layers > 0) { /* two gathers per micro-batch, as a layer */
            double mtp_experts = mtp_moe ? D_mtp * (double)(m->moe_experts * pc.expert) : 0.0;
            co_last += 2.0 * co_per_param * (dsh * ((double)pc.mtp - mtp_experts) / tp +
                                             esh * (mtp_moe ? D_mtp * expert_per_layer_gpu : 0.0));
        }
    }

    /* ZeRO-3 / FSDP per layer: every micro-batch gathers each layer's parameters in forward and
     * again in backward and reduce-scatters its gradients (Zhao et al. 2023, PyTorch FSDP
     * Sec. 3); each gather is prefetched behind the previous layer's compute, so a layer exposes
     * what its neighbour's compute cannot hide (z3_dense_x, z3_moe_x per layer). Expert weights
     * of an MoE layer are gathered over the expert-DP group. The exposure lengthens every
     * micro-batch of the stage it runs on, so it is added per stage below before the slowest
     * stage is taken — not on top of another stage's critical path (with more bandwidth that made
     * a plan slower: tests/test_invariants.c). */
    double z3_ag = 0.0, z3_rs = 0.0, z3_mag = 0.0, z3_mrs = 0.0, z3_dense_x = 0.0, z3_moe_x = 0.0;
    if (p->zero == 3) {
        double layer_p = (double)pc.per_layer / tp;
        z3_ag = coll_2d(c, MP_COLL_ALL_GATHER, pe * layer_p, sh_in, sh_out, &e->dp_tier);
        z3_rs = coll_2d(c, MP_COLL_REDUCE_SCATTER, 4.0 * layer_p, sh_in, sh_out, &e->dp_tier);
        z3_mag = z3_ag;
        z3_mrs = z3_rs;
        if (moe) {
            double mp_ne = moe_nonexpert / tp;
            z3_mag = coll_2d(c, MP_COLL_ALL_GATHER, pe * mp_ne, sh_in, sh_out, &e->dp_tier) + coll(c, MP_COLL_ALL_GATHER, pe * expert_per_layer_gpu, gedp);
            z3_mrs = coll_2d(c, MP_COLL_REDUCE_SCATTER, 4.0 * mp_ne, sh_in, sh_out, &e->dp_tier) + coll(c, MP_COLL_REDUCE_SCATTER, 4.0 * expert_per_layer_gpu, gedp);
        }
        /* The next layer's gather hides behind this layer's compute, its copy-out included. */
        double lfw = opts->zero3_overlap_frac * (dense_f + co_layer + ld.tp_s);
        double lbw = opts->zero3_overlap_frac * (dense_b + co_layer + dense_rc + ld.tp_s + dense_rc_comm);
        double mfw = opts->zero3_overlap_frac * (moe_f + co_moe + lm.tp_s + lm.ep_fwd_s);
        double mbw = opts->zero3_overlap_frac * (moe_b + co_moe + moe_rc + lm.tp_s + lm.ep_bwd_s);
        z3_dense_x = fmax(0.0, z3_ag - lfw) + fmax(0.0, z3_ag + z3_rs - lbw);
        z3_moe_x = fmax(0.0, z3_mag - mfw) + fmax(0.0, z3_mag + z3_mrs - mbw);
    }

    /* Slowest stage per micro-batch (t_mb), and the slowest with its exposed ZeRO-3 layer
     * communication (t_mb_z3 >= t_mb). */
    double t_mb = 0.0, t_mb_compute = 0.0, t_mb_rc = 0.0, t_mb_tp = 0.0, t_mb_cp = 0.0, t_mb_ep = 0.0;
    double t_mb_bwd_stage = 0.0, t_mb_fwd_stage = 0.0, t_mb_attn = 0.0, t_mb_w_stage = 0.0;
    double t_mb_z3 = 0.0;
    for (int i = 0; i < pp; i++) {
        double nl, nm;
        stage_layers(m, pp, v, i, moe, &nl, &nm);
        double nd = nl - nm;
        int last = i == pp - 1;
        double copy_out = 2.0 * (nd * co_layer + nm * co_moe) + (i == 0 ? co_first : 0.0) + (last ? co_last : 0.0);
        double comp = nd * (dense_f + dense_b) + nm * (moe_f + moe_b) +
                      (last ? head_fb + mtp_f + mtp_b : 0.0) + copy_out;
        double rc = nd * dense_rc + nm * moe_rc;
        /* the MTP layer (last stage) communicates as a layer of its kind */
        double xd = last && !mtp_moe ? D_mtp : 0.0, xm = last && mtp_moe ? D_mtp : 0.0;
        double tpc = (nd + xd) * (2.0 * ld.tp_s + dense_rc_comm) + (nm + xm) * moe_comm_tp;
        double cpc = (nl + xd + xm) * (ld.cp_fwd_s + ld.cp_bwd_s);
        double epc = (nm + xm) * moe_comm_ep;
        double tot = comp + rc + tpc + cpc + epc;
        double z3 = nd * z3_dense_x + nm * z3_moe_x;
        if (tot + z3 > t_mb_z3)
            t_mb_z3 = tot + z3;
        if (tot > t_mb) {
            t_mb = tot;
            t_mb_compute = comp;
            e->parts.fsdp_copy_out_s = copy_out;
            t_mb_rc = rc;
            t_mb_tp = tpc;
            t_mb_cp = cpc;
            t_mb_ep = epc;
            t_mb_attn = (nl + (last ? D_mtp : 0.0)) * 3.5 * attn_core;
            t_mb_fwd_stage = nd * (dense_f + ld.tp_s + ld.cp_fwd_s) + nm * (moe_f + lm.tp_s + lm.ep_fwd_s + lm.cp_fwd_s) +
                             (last ? head_f + mtp_f : 0.0);
            t_mb_bwd_stage = tot - t_mb_fwd_stage;
            /* weight-gradient GEMMs: the forward GEMMs' FLOPs (Qi et al. 2023 Sec. 2) */
            t_mb_w_stage = nd * ld.gemm_s + nm * lm.gemm_s + (last ? head_f : 0.0);
        }
    }
    /* Pipeline p2p on the critical path: a forward send/recv and a backward one per micro-batch
     * per model chunk (Megatron's blocking batched isend/irecv in steady 1F1B). */
    const double t_mb_pp = pp > 1 ? 2.0 * v * p2p_s : 0.0;
    const double t_mb_all = t_mb + t_mb_pp;

    /* Bubble: (p-1)/v micro-batch times (Narayanan et al. 2021 Sec. 2.2.2); GPipe (p-1);
     * ZB-H1 (p-1)(T_F + T_B - T_W) with B the input-gradient pass and W the weight-gradient pass
     * (Qi et al. 2023, "Zero Bubble Pipeline Parallelism", Sec. 2.1; one third of 1F1B's only when
     * T_F = T_B = T_W): t_mb_all - 2 T_W, since t_mb_all = T_F + T_B + T_W. The timeline simulator
     * reproduces it (tests/test_sim.c); "/3" over-predicted ZB-H1 by ~2.5% of the step on Llama 3
     * 70B, where TP and attention make W much shorter than F and B. */
    double bubble = 0.0;
    if (pp > 1) {
        double k = (double)(pp - 1) * t_mb_all;
        switch (p->schedule) {
        case MP_SCHED_INTERLEAVED: bubble = k / v; break;
        /* GPipe over v chunks per rank runs breadth-first (all micro-batches through chunk 0,
         * then chunk 1, ...): the fill and drain shrink by v as well (Lamy-Poirier 2023,
         * "Breadth-First Pipeline Parallelism"; the timeline simulator reproduces it). */
        case MP_SCHED_GPIPE: bubble = k / v; break;
        case MP_SCHED_ZB: bubble = (double)(pp - 1) * fmax(t_mb_all - 2.0 * t_mb_w_stage, 0.0); break;
        default: bubble = k; break;
        }
    }

    /* --- parameters per GPU, per stage -------------------------------------------------- */
    /* Non-expert parameters: split by TP (norms replicated but small), replicated over the
     * DP x CP group. Routed experts: E/ep experts per GPU, each split by etp, replicated over
     * the expert-DP group of tp*cp*dp/(etp*ep) ranks. MTP sits on the last stage. */
    const stage_param_ctx spx = {pp, v, moe, mtp_moe, moe_nonexpert, expert_per_layer_gpu, D_mtp, V, h};
    double max_dense = 0.0, max_exp = 0.0, max_total = -1.0, max_lin = 0.0;
    for (int i = 0; i < pp; i++) {
        double nl, nm, dense_p, exp_p, nonlin;
        stage_params(m, &pc, &spx, i, &nl, &nm, &dense_p, &exp_p, &nonlin);
        dense_p /= tp;
        if (exp_p > e->expert_params_per_gpu)
            e->expert_params_per_gpu = exp_p;
        if (dense_p + exp_p > max_total) {
            max_total = dense_p + exp_p;
            max_dense = dense_p;
            max_exp = exp_p;
            max_lin = fmax(0.0, dense_p - nonlin / tp) + exp_p;
        }
    }

    /* --- DP / ZeRO communication ---------------------------------------------------------- */
    /* Gradients are reduced over DP x CP ranks (stride tp); HSDP shards over hsdp ranks and
     * replicates across dp*cp/hsdp. Expert gradients over the expert-DP group (stride etp*ep).
     * Gradient reduction in fp32 (4 bytes: Megatron-LM main grads, torchtitan's default
     * reduce_dtype), parameter gathers in 16-bit (fp8 with fp8_comm: Megatron-Core
     * --fp8-param-gather). */
    const double P_local = max_dense, X_local = max_exp;
    double dp_total = 0.0, dp_exposed = 0.0;
    {
        double replicate_s = 0.0;
        if (p->hsdp && dpg / shard > 1) {
            replicate_s = coll_2d(c, MP_COLL_ALL_REDUCE, 4.0 * P_local / shard, rp_in, rp_out, NULL);
            e->parts.hsdp_replicate_s = replicate_s;
        }
        /* Window: backward of the last micro-batch (Li et al. 2020, PyTorch DDP bucketing;
         * Megatron overlap-grad-reduce), forward of the first for parameter gathers. */
        const double bwd_window = opts->grad_reduce_overlap_frac * t_mb_bwd_stage;
        const double fwd_window = opts->grad_reduce_overlap_frac * t_mb_fwd_stage;
        if (p->zero == 0) {
            double ar = coll_2d(c, MP_COLL_ALL_REDUCE, 4.0 * P_local, sh_in, sh_out, &e->dp_tier);
            double xar = coll(c, MP_COLL_ALL_REDUCE, 4.0 * X_local, gedp);
            e->parts.grad_reduce_s = ar;
            e->parts.expert_grad_reduce_s = xar;
            dp_total = ar + xar;
            dp_exposed = fmax(0.0, dp_total - bwd_window);
        } else if (p->zero <= 2) {
            /* Reduce-scatter the gradients, all-gather the updated parameters (Megatron
             * distributed optimizer; ZeRO-1/2). ZeRO-2 reduces every micro-batch (DeepSpeed). */
            double rs = coll_2d(c, MP_COLL_REDUCE_SCATTER, 4.0 * P_local, sh_in, sh_out, &e->dp_tier) +
                        coll(c, MP_COLL_REDUCE_SCATTER, 4.0 * X_local, gedp);
            double ag = coll_2d(c, MP_COLL_ALL_GATHER, pe * P_local, sh_in, sh_out, &e->dp_tier) +
                        coll(c, MP_COLL_ALL_GATHER, pe * X_local, gedp);
            e->parts.grad_reduce_s = coll_2d(c, MP_COLL_REDUCE_SCATTER, 4.0 * P_local, sh_in, sh_out, &e->dp_tier);
            e->parts.param_gather_s = coll_2d(c, MP_COLL_ALL_GATHER, pe * P_local, sh_in, sh_out, &e->dp_tier);
            e->parts.expert_grad_reduce_s = rs - e->parts.grad_reduce_s;
            e->parts.expert_param_gather_s = ag - e->parts.param_gather_s;
            if (p->zero == 1) {
                dp_total = rs + ag;
                dp_exposed = fmax(0.0, rs - bwd_window) + fmax(0.0, ag - fwd_window);
            } else {
                dp_total = M * rs + ag;
                dp_exposed = M * fmax(0.0, rs - bwd_window) + fmax(0.0, ag - fwd_window);
            }
        } else {
            /* ZeRO-3 / FSDP (per-layer terms above, exposure added per stage): the first
             * gather and the last reduce-scatter of a micro-batch have no neighbour to hide
             * behind. */
            double nl = (double)e->layers_per_stage_max;
            double nm = moe ? fmin(nl, (double)pc.moe_layers) : 0.0;
            double layer_p = (double)pc.per_layer / tp;
            double ag = z3_ag, rs = z3_rs, mag = z3_mag, mrs = z3_mrs;
            e->parts.zero3_layer_gather_s = ag;
            e->parts.zero3_layer_reduce_s = rs;
            double nd = nl - nm;
            double per_mb_total = nd * (2.0 * ag + rs) + nm * (2.0 * mag + mrs);
            double per_mb_exposed = (t_mb_z3 - t_mb) + (nm > 0 ? mag + mrs : ag + rs);
            /* Embedding and LM head: gathered and reduced once per micro-batch, not hidden. */
            double extra_p = fmax(0.0, P_local - nd * layer_p - nm * moe_nonexpert / tp);
            double eag = coll_2d(c, MP_COLL_ALL_GATHER, pe * extra_p, sh_in, sh_out, &e->dp_tier);
            double ers = coll_2d(c, MP_COLL_REDUCE_SCATTER, 4.0 * extra_p, sh_in, sh_out, &e->dp_tier);
            per_mb_total += 2.0 * eag + ers;
            e->parts.zero3_extra_s = 2.0 * eag + ers;
            per_mb_exposed += fmax(0.0, 2.0 * eag + ers - head_fb);
            dp_total = M * per_mb_total;
            dp_exposed = M * per_mb_exposed;
        }
        dp_total += replicate_s;
        dp_exposed += replicate_s;
    }

    /* --- optimizer: Adam over the local shard, memory-bound: read fp32 master, m, v, grad and
     * write master, m, v and the 16-bit weight: 30 bytes per parameter. */
    const double opt_shard = p->zero >= 1 ? (double)shard : 1.0;
    const double opt_eshard = p->zero >= 1 ? eshard : 1.0;
    const double t_opt = 30.0 * (P_local / opt_shard + X_local / opt_eshard) / elem_Bps;
    /* fp8: the weights' fp8 copies are re-quantised once per step, in the first micro-batch
     * (TE caches them across micro-batches): read 2, write rowwise and columnwise 1 + 1. Only
     * the linear layers' weights (not embedding, head, router or norms). */
    double cast_w = 0.0;
    if (fp8)
        cast_w = 4.0 * (p->zero == 3 ? max_lin / shard : max_lin) / elem_Bps;

    /* --- the step ------------------------------------------------------------------------ */
    mp_step_parts *pt = &e->parts;
    pt->layer_fwd_s = dense_f;
    pt->layer_bwd_s = dense_b;
    pt->layer_bwd_weight_s = ld.gemm_s; /* wgrad GEMMs: the forward GEMMs' FLOPs (Qi et al. 2023 Sec. 2) */
    pt->layer_recompute_s = dense_rc;
    pt->layer_tp_fwd_s = ld.tp_s;
    pt->layer_tp_recompute_s = dense_rc_comm;
    pt->layer_cp_s = ld.cp_fwd_s;
    pt->head_fwd_s = head_f;
    pt->head_bwd_s = 2.0 * head_f + ce_s;
    pt->head_bwd_weight_s = head_f;
    pt->p2p_s = p2p_s;
    pt->optimizer_s = t_opt;
    pt->moe_layer_fwd_s = moe ? moe_f : 0.0;
    pt->moe_layer_bwd_s = moe ? moe_b : 0.0;
    pt->moe_layer_recompute_s = moe ? moe_rc : 0.0;
    pt->moe_layer_tp_fwd_s = lm.tp_s;
    pt->moe_layer_ep_fwd_s = lm.ep_fwd_s;
    pt->moe_layer_ep_bwd_s = lm.ep_bwd_s;
    pt->layer_cp_bytes = cp_bytes;
    pt->moe_layer_ep_bytes = a2a_bytes;
    pt->fp8_weight_cast_s = cast_w;
    pt->mtp_fwd_s = mtp_f;
    pt->mtp_bwd_s = mtp_b;
    pt->fsdp_copy_s_per_param = co_per_param;
    e->time.compute = M * t_mb_compute + cast_w;
    e->time.recompute = M * t_mb_rc;
    e->time.tp_comm = M * t_mb_tp;
    e->time.cp_comm = M * t_mb_cp;
    e->time.ep_comm = M * t_mb_ep;
    e->time.pp_comm = M * t_mb_pp;
    e->time.pp_bubble = bubble;
    e->time.dp_comm_exposed = dp_exposed;
    e->time.dp_comm_total = dp_total;
    e->time.optimizer = t_opt;
    double overlap_slow = opts->comm_compute_slowdown_frac * fmin(dp_total - dp_exposed, e->time.compute);
    e->step_s = M * t_mb_all + bubble + dp_exposed + t_opt + cast_w + overlap_slow;
    e->time.compute += overlap_slow;
    e->attention_frac = t_mb_compute > 0 ? t_mb_attn / t_mb_compute : 0.0;

    /* --- throughput ------------------------------------------------------------------------ */
    mp_flops fl;
    mp_model_flops(m, p->seq, &fl);
    const double n = (double)c->num_gpus;
    e->tokens_per_step = (double)p->gb * s;
    e->tokens_per_s = e->tokens_per_step / e->step_s;
    e->tokens_per_s_per_gpu = e->tokens_per_s / n;
    e->model_flops_per_step = e->tokens_per_step * fl.model_per_token;
    double rc_per_token = p->recompute == MP_RC_FULL ? fl.recompute_full_per_token
                        : p->recompute == MP_RC_SELECTIVE ? fl.recompute_selective_per_token : 0.0;
    e->hardware_flops_per_step = e->tokens_per_step * (fl.model_per_token + rc_per_token);
    e->model_tflops_per_gpu = e->model_flops_per_step / e->step_s / n / 1e12;
    e->hardware_tflops_per_gpu = e->hardware_flops_per_step / e->step_s / n / 1e12;
    {
        double causal_total = fl.fwd_matmul_per_token + fl.fwd_attn_causal_per_token + fl.fwd_lm_head_per_token;
        e->attention_flops_frac = causal_total > 0 ? fl.fwd_attn_causal_per_token / causal_total : 0.0;
    }
    /* MFU and HFU against the dense peak of the plan's GEMM precision (PaLM, Chowdhery et al.
     * 2022 App. B; MosaicML and torchtitan report their fp8 runs against the fp8 peak, as the
     * fp8 rows of validation/runs.csv show: 460 TFLOP/s = 0.2328 of 1979). */
    mp_dtype pk = p->precision;
    if (g->peak_flops_per_s[pk] <= 0)
        pk = g->peak_flops_per_s[MP_DT_BF16] > 0 ? MP_DT_BF16 : MP_DT_FP16;
    e->peak_flops_per_s = g->peak_flops_per_s[pk];
    e->mfu = e->model_tflops_per_gpu * 1e12 / e->peak_flops_per_s;
    e->hfu = e->hardware_tflops_per_gpu * 1e12 / e->peak_flops_per_s;

    /* --- memory per stage ------------------------------------------------------------------- */
    bytes_per_param bpp, bpx;
    param_bytes(p->zero, (double)shard, &bpp);
    param_bytes(p->zero, eshard, &bpx);
    mp_layer_act la, lam;
    mp_layer_activation(m, p->seq, p->mb, tp, p->sp, cp, p->flash, p->recompute, &la);
    mp_moe_layer_activation(m, p->seq, p->mb, tp, p->sp || tp > 1, cp, etp, p->flash, p->recompute, load, &lam);
    /* fp8 weight copies of the linear layers (Transformer Engine keeps a rowwise and a
     * transposed columnwise fp8 copy beside the 16-bit weight, 1 + 1 bytes; block-scaled MXFP8
     * adds one 1-byte scale per 32 values for each, OCP MX spec v1.0); scaling factors of
     * per-tensor recipes (amax history of 1024 floats per tensor) are negligible. */
    const double fp8_copy = fp8 ? 2.0 + 2.0 / 32.0 : 0.0;
    double worst = -1.0;
    int nrep = pp < MP_MAX_STAGES ? pp : MP_MAX_STAGES;
    for (int i = 0; i < pp; i++) {
        mp_memory mm = {0};
        double nl, nm, dense_p, exp_p, nonlin;
        stage_params(m, &pc, &spx, i, &nl, &nm, &dense_p, &exp_p, &nonlin);
        double nd = nl - nm;
        int last = i == pp - 1;
        dense_p /= tp;
        nonlin /= tp;
        mm.weights = bpp.weights * dense_p + bpx.weights * exp_p;
        if (fp8) {
            double lin = fmax(0.0, dense_p - nonlin);
            mm.weights += fp8_copy * (p->zero == 3 ? lin / shard + exp_p / eshard : lin + exp_p);
        }
        mm.gradients = bpp.grads * dense_p + bpx.grads * exp_p;
        mm.optimizer = bpp.optim * dense_p + bpx.optim * exp_p;
        /* In-flight micro-batches on stage i: 1F1B min(M, pp - i); interleaved adds
         * (pp - 1 - i)/v... (Korthikanti et al. 2022 Sec. 4.2.3: first stage L/p * p *
         * (1 + (p-1)/(p v)) layers' worth); GPipe all M. */
        double inflight;
        if (p->schedule == MP_SCHED_GPIPE) {
            inflight = M;
        } else if (v > 1) {
            double chunks = 2.0 * (pp - i - 1) + (double)(v - 1) * pp + 1.0; /* Megatron warm-up + 1 */
            if (chunks > M * v)
                chunks = M * v;
            inflight = chunks / v;
        } else {
            inflight = fmin(M, (double)(pp - i));
        }
        double mtp_l = last ? D_mtp : 0.0;
        double per_mb = nd * la.stored_bytes + nm * lam.stored_bytes +
                        mtp_l * (mtp_moe ? lam.stored_bytes : la.stored_bytes);
        mm.activations = inflight * per_mb;
        if (p->recompute == MP_RC_FULL)
            mm.activations += nm > 0 ? fmax(la.working_bytes, lam.working_bytes) : la.working_bytes;
        if (last) {
            /* LM-head output (16-bit), its fp32 upcast and the fp32 gradient/softmax buffer:
             * 2 + 4 + 4 bytes per logit (case C1: the failing 786 MiB request is b*s*V*4);
             * each MTP module keeps its own logits live too. */
            mm.logits = T * V / tp * 10.0 * (1.0 + (double)m->mtp_layers);
        }
        /* ZeRO-2/3 buffers hold only what is sharded: with one rank per shard group nothing is
         * gathered or reduce-scattered (PyTorch FSDP switches to NO_SHARD at world size 1). The
         * largest layer of the stage, counting its non-expert part when shard > 1 and its
         * experts when eshard > 1: */
        double dense_l = shard > 1 ? (double)pc.per_layer / tp : 0.0;
        double moe_l = (shard > 1 ? moe_nonexpert / tp : 0.0) + (eshard > 1 ? expert_per_layer_gpu : 0.0);
        double biggest = nm > 0 ? (nd > 0 ? fmax(dense_l, moe_l) : moe_l) : dense_l;
        if (p->zero == 3) {
            /* Gathered 16-bit parameters of the current and the prefetched layer — the two
             * largest layers the stage holds, not two of its largest kind (a DeepSeek-V3 first
             * stage has one MoE layer and three dense ones) — and the unsharded 16-bit gradient
             * of one layer before its reduce-scatter (FSDP, Zhao et al. 2023 Sec. 3.2). */
            double big2 = nm >= 2.0 ? 2.0 * moe_l
                        : nm >= 1.0 ? moe_l + (nd >= 1.0 ? dense_l : 0.0)
                                    : fmin(nd, 2.0) * dense_l;
            mm.buffers += 2.0 * (big2 + biggest);
        } else if (p->zero == 2) {
            /* ZeRO-2 produces each layer's gradient unsharded too before reduce-scattering it,
             * as ZeRO-3 does (one layer of 16-bit gradients). */
            mm.buffers += 2.0 * biggest;
        }
        if (dpg > 1 || edp > 1) {
            /* Communication buckets: Megatron/DDP reduce in place on the grad buffer; NCCL
             * keeps channel buffers (~ 2 x 4 MiB per peer group), at every ZeRO stage. */
            mm.buffers += 2.0 * 4.0 * 1048576.0;
        }
        mm.total = mm.weights + mm.gradients + mm.optimizer + mm.activations + mm.logits + mm.buffers;
        mm.capacity = g->memory_bytes;
        mm.allocator_margin = opts->allocator_margin_frac * mm.total;
        if (i < nrep)
            e->per_stage[i] = mm;
        if (mm.total > worst) {
            worst = mm.total;
            e->memory = mm;
        }
    }
    e->feasible = e->memory.total <= e->memory.capacity;
    if (!e->feasible && !opts->skip_text) {
        add_reason(e, "memory: %.1f GiB needed on the most loaded GPU, capacity %.1f GiB",
                   e->memory.total / 1073741824.0, e->memory.capacity / 1073741824.0);
    }

    /* --- bottleneck ------------------------------------------------------------------------ */
    enum { B_COMPUTE, B_RC, B_TP, B_CP, B_EP, B_PP, B_BUBBLE, B_DP, B_OPT, B_N };
    struct { const char *what; double t; } parts[B_N] = {
        {"compute", e->time.compute},
        {"recompute", e->time.recompute},
        {"TP communication", e->time.tp_comm},
        {"CP communication", e->time.cp_comm},
        {"EP all-to-all", e->time.ep_comm},
        {"pipeline send/recv", e->time.pp_comm},
        {"pipeline bubble", e->time.pp_bubble},
        {"exposed DP/ZeRO communication", e->time.dp_comm_exposed},
        {"optimizer step", e->time.optimizer},
    };
    size_t bi = 0;
    double comm_sum = e->time.tp_comm + e->time.cp_comm + e->time.ep_comm + e->time.pp_comm +
                      e->time.dp_comm_exposed;
    for (size_t i = 1; i < B_N; i++)
        if (parts[i].t > parts[bi].t)
            bi = i;
    if (opts->skip_text) {
        /* texts left empty on request (mp_estimate_opts.skip_text) */
    } else if (!e->feasible) {
        snprintf(e->bottleneck, sizeof e->bottleneck, "memory (%.1f of %.1f GiB)",
                 e->memory.total / 1073741824.0, e->memory.capacity / 1073741824.0);
    } else if (bi == B_COMPUTE && comm_sum < 0.25 * e->step_s) {
        if (e->attention_frac > 0.5)
            snprintf(e->bottleneck, sizeof e->bottleneck,
                     "compute (%.0f%% of the step), dominated by attention (%.0f%% of compute at seq %lld)",
                     100.0 * e->time.compute / e->step_s, 100.0 * e->attention_frac, (long long)p->seq);
        else
            snprintf(e->bottleneck, sizeof e->bottleneck,
                     "compute (%.0f%% of the step; GEMMs at %.0f TFLOP/s achievable)",
                     100.0 * e->time.compute / e->step_s, r.matmul_flops_per_s / 1e12);
    } else {
        /* The link: the outermost tier the group crosses. */
        const char *link = c->tier[0].link;
        mp_placement pl;
        mp_group grp = {1, 1};
        if (bi == B_TP) grp = gtp;
        else if (bi == B_CP) grp = gcp;
        else if (bi == B_EP) grp = (mp_group){ep, etp};
        else if (bi == B_PP) grp = (mp_group){2, mp_plan_stride(p, MP_DIM_PP)};
        else if (bi == B_DP) grp = X_local > P_local ? gedp : gsh;
        int known = bi == B_TP ? e->tp_tier : bi == B_CP ? e->cp_tier : bi == B_PP ? e->pp_tier
                  : (bi == B_DP && grp.size == gsh.size && grp.stride == gsh.stride) ? e->dp_tier : -1;
        if (known >= 0 && known < c->ntiers) {
            link = c->tier[known].link;
        } else if (grp.size > 1) {
            mp_group_place(c, grp, &pl);
            if (bi == B_PP) {
                int t = 0;
                while (t < c->ntiers - 1 && grp.stride >= c->tier[t].domain_gpus)
                    t++;
                link = c->tier[t].link;
            } else if (pl.outer_tier >= 0) {
                link = c->tier[pl.outer_tier].link;
            }
        }
        int comm = bi == B_TP || bi == B_CP || bi == B_EP || bi == B_PP || bi == B_DP;
        snprintf(e->bottleneck, sizeof e->bottleneck, "%s (%.0f%% of the step)%s%s",
                 parts[bi].what, 100.0 * parts[bi].t / e->step_s, comm ? " over " : "",
                 comm ? link : "");
    }

    if (!isfinite(e->step_s) || !isfinite(e->memory.total) || e->step_s <= 0) {
        mp_diag_add(diag, "estimate is not finite (step %g s, memory %g B): inputs out of range",
                    e->step_s, e->memory.total);
        return MP_ERR_RANGE;
    }
    return MP_OK;
}
