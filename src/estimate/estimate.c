/* src/estimate/estimate.c — the analytical estimator (memory, step time, throughput).
 *
 * One plan is evaluated with no allocation in O(pp) time. The step is built from the time of one
 * micro-batch on the slowest pipeline stage:
 *   step = M * t_mb + bubble + exposed DP/ZeRO communication + optimizer step
 * where M is the number of micro-batches per DP rank, t_mb the forward + backward (+ recompute)
 * of one micro-batch on a stage including its TP/CP/PP communication, and the bubble follows the
 * schedule (Narayanan et al. 2021, Sec. 2.2: (p-1)/v * t_mb for 1F1B/interleaved; Qi et al. 2023
 * for ZB-H1). docs/model.md derives every term.
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

static void gpu_rates(const mp_gpu *g, mp_dtype prec, rates *r)
{
    mp_dtype half = g->peak_flops_per_s[MP_DT_BF16] > 0 ? MP_DT_BF16 : MP_DT_FP16;
    r->bf16_matmul_flops_per_s = matmul_rate(g, half);
    r->matmul_flops_per_s = g->peak_flops_per_s[prec] > 0 ? matmul_rate(g, prec) : r->bf16_matmul_flops_per_s;
    double af = g->attention_flops_frac > 0 ? g->attention_flops_frac : MP_DEFAULT_ATTN_FRAC;
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
    double wave_eff = tiles / (waves * r->sms);
    double flop_s = 2.0 * M * N * K / (rate * wave_eff);
    double mem_s = e * (M * K + K * N + M * N) / r->mem_Bps;
    return flop_s > mem_s ? flop_s : mem_s;
}

/* Per-layer forward pieces for one micro-batch on one GPU. */
typedef struct {
    double gemm_s;      /* QKV, O, FC1(+gate), FC2 */
    double attn_s;      /* attention core */
    double elem_s;      /* memory-bound element-wise ops */
    double tp_s;        /* TP/SP collectives of one forward pass of the layer */
    double cp_s;        /* CP K/V exchange of one forward pass, exposed part */
} layer_fwd;

/* Element-wise HBM traffic of one layer's forward per token, in elements (x2 bytes): two norms
 * (read h, write h each), two residual adds (read 2h, write h each), the activation function
 * (GELU: read f, write f; SwiGLU: read 2f, write f), rotary embedding on Q and K (read and write),
 * and dropout (read h, write h, 1-byte mask) twice when on. Counted from the kernels Megatron-LM
 * and PyTorch run (fused norm, fused bias-activation); backward moves about twice as much
 * (gradients in and out plus saved inputs). */
static double elem_fwd_bytes_per_token(const mp_model *m, int tp, int sp)
{
    double h = (double)m->hidden, f = (double)m->ffn_hidden / tp;
    double ad = (double)(m->heads * m->head_dim) / tp, kvd = (double)(m->kv_heads * m->head_dim) / tp;
    double hs = sp ? h / tp : h; /* norms/residuals run on the sequence shard with SP */
    double elems = 2.0 * 2.0 * hs + 2.0 * 3.0 * hs + (m->glu ? 3.0 : 2.0) * f;
    if (m->position == MP_POS_ROPE)
        elems += 2.0 * (ad + kvd);
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

/* ---- the estimator ------------------------------------------------------------------------ */

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

static void add_reason(mp_estimate *e, const char *fmt, double a, double b)
{
    if (e->nreasons >= 4)
        return;
    snprintf(e->reasons[e->nreasons++], sizeof e->reasons[0], fmt, a, b);
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
    e->tp_tier = e->cp_tier = e->pp_tier = e->dp_tier = -1;
    if (p->tp < 1 || p->pp < 1 || p->dp < 1 || p->cp < 1 || p->vpp < 1 || p->mb < 1 || p->gb < 1 ||
        p->seq < 1 || p->tp * p->pp * p->cp * p->dp != c->num_gpus) {
        mp_diag_add(diag, "plan is not resolved for %lld GPUs (call mp_plan_resolve)",
                    (long long)c->num_gpus);
        return MP_ERR_INPUT;
    }
    const mp_gpu *g = &c->gpu;
    if (g->peak_flops_per_s[p->precision] <= 0 &&
        !(p->precision == MP_DT_BF16 && g->peak_flops_per_s[MP_DT_FP16] > 0)) {
        mp_diag_add(diag, "plan.precision = %s: %s has no %s tensor cores", mp_dtype_name(p->precision),
                    g->key, mp_dtype_name(p->precision));
        return MP_ERR_INPUT;
    }

    const int tp = (int)p->tp, pp = (int)p->pp, cp = (int)p->cp, v = (int)p->vpp;
    const double b = (double)p->mb, s = (double)p->seq;
    const double M = (double)(p->gb / (p->mb * p->dp)); /* micro-batches per DP rank */
    const double T = b * s / cp;                          /* tokens per micro-batch per GPU */
    const double h = (double)m->hidden;
    const double ad = (double)(m->heads * m->head_dim), kvd = (double)(m->kv_heads * m->head_dim);
    const double f = (double)m->ffn_hidden;
    const double V = (double)mp_model_padded_vocab(m, tp);
    const double act_e = 2.0; /* stored activations and TP traffic are 16-bit (also under fp8) */
    const double we = mp_dtype_bytes(p->precision); /* GEMM operand bytes */
    e->microbatches = (int)M;

    rates r;
    gpu_rates(g, p->precision, &r);
    /* Sustained end-to-end fractions (calibrated on validation/runs.csv; docs/model.md). */
    r.matmul_flops_per_s *= opts->gemm_sustained_frac;
    r.bf16_matmul_flops_per_s *= opts->gemm_sustained_frac;
    r.attn_flops_per_s *= opts->attention_sustained_frac;
    const double elem_Bps = r.mem_Bps * opts->memory_bound_sustained_frac;

    /* --- one layer, one micro-batch, forward ------------------------------------------- */
    layer_fwd lf = {0};
    {
        double R = r.matmul_flops_per_s;
        lf.gemm_s = gemm_s(&r, R, T, (ad + 2 * kvd) / tp, h, we) /* QKV */
                  + gemm_s(&r, R, T, h, ad / tp, we)             /* output projection */
                  + gemm_s(&r, R, T, (m->glu ? 2 : 1) * f / tp, h, we) /* FC1 (+ gate) */
                  + gemm_s(&r, R, T, h, f / tp, we);             /* FC2 */
        /* Attention core, forward: 4*T*s_kv*ad/tp FLOPs non-causal; causal masking halves the work
         * (every query attends s/2 keys on average; with CP's load-balanced chunks too). */
        double attn_fwd_flops = 4.0 * T * s * ad / tp / 2.0;
        if (p->flash) {
            /* FlashAttention benchmark convention: fwd+bwd = 3.5 x forward FLOPs (Dao 2023,
             * benchmarks); the catalogued rate is for fwd+bwd, so the forward share is 1/3.5. */
            lf.attn_s = attn_fwd_flops / r.attn_flops_per_s;
        } else {
            /* Two batched GEMMs at the GEMM rate, plus the s^2 scores through HBM: write scores,
             * softmax read+write, (dropout read+write+mask), read for x V: ~10 bytes per score
             * forward (Korthikanti et al. 2022 Sec. 4.1 tensor list). */
            double scores = (double)m->heads / tp * b * (s / cp) * s;
            lf.attn_s = attn_fwd_flops * 2.0 / r.bf16_matmul_flops_per_s +
                        (m->dropout ? 10.0 : 6.0) * scores / elem_Bps;
        }
        lf.elem_s = T * elem_fwd_bytes_per_token(m, tp, p->sp) / elem_Bps;
        /* TP: Megatron's two all-reduces per layer forward (f and g operators, Shoeybi et al.
         * 2019 Fig. 3), or with SP an all-gather + reduce-scatter pair each (Korthikanti et al.
         * 2022 Sec. 4.2.2), of T*h 16-bit elements; not overlapped with compute. */
        if (tp > 1) {
            /* Placed by the plan's rank order (stride 1 with the default order). */
            mp_group gtp = {tp, mp_plan_stride(p, MP_DIM_TP)};
            mp_coll_cost cc;
            double S = T * h * act_e;
            if (p->sp) {
                mp_coll_time(c, MP_COLL_ALL_GATHER, S, gtp, MP_ALGO_AUTO, &cc);
                double t_ag = cc.total_s;
                mp_coll_time(c, MP_COLL_REDUCE_SCATTER, S, gtp, MP_ALGO_AUTO, &cc);
                lf.tp_s = 2.0 * (t_ag + cc.total_s);
            } else {
                mp_coll_time(c, MP_COLL_ALL_REDUCE, S, gtp, MP_ALGO_AUTO, &cc);
                lf.tp_s = 2.0 * cc.total_s;
            }
            e->tp_tier = cc.bottleneck_tier;
        }
        /* CP: ring attention passes each rank's K and V chunk (T*2*kvd/tp 16-bit elements) to its
         * neighbour cp-1 times, overlapped with the attention of the previous chunk (Liu et al.
         * 2023, Ring Attention; Megatron-Core context parallelism). */
        if (cp > 1) {
            mp_coll_cost cc;
            mp_coll_time(c, MP_COLL_SEND_RECV, T * 2.0 * kvd / tp * act_e,
                         (mp_group){2, mp_plan_stride(p, MP_DIM_CP)}, MP_ALGO_AUTO, &cc);
            e->cp_tier = cc.bottleneck_tier;
            double step_comm = cc.total_s, step_attn = lf.attn_s / cp;
            lf.cp_s = (cp - 1) * (step_comm > step_attn ? step_comm - step_attn : 0.0);
        }
    }

    /* --- the stages ----------------------------------------------------------------------- */
    mp_param_count pc;
    mp_model_params(m, tp, &pc);
    const int64_t L = m->layers;
    const int64_t lmin = L / pp, lextra = L % pp; /* the first lextra stages get one more layer */
    e->layers_per_stage_min = (int)lmin;
    e->layers_per_stage_max = (int)(lmin + (lextra ? 1 : 0));
    e->nstages = pp;

    /* Forward/backward/recompute time per layer per micro-batch. Backward = 2x forward for the
     * GEMMs (dgrad + wgrad, Narayanan et al. 2021) and element-wise traffic; attention backward
     * is 2.5x its forward (the 3.5x convention above). */
    const double layer_f = lf.gemm_s + lf.attn_s + lf.elem_s;
    const double layer_b = 2.0 * lf.gemm_s + 2.5 * lf.attn_s + 2.0 * lf.elem_s;
    double layer_rc = 0.0, layer_rc_tp = 0.0;
    if (p->recompute == MP_RC_FULL) {
        layer_rc = layer_f;
        layer_rc_tp = lf.tp_s;
    } else if (p->recompute == MP_RC_SELECTIVE) {
        layer_rc = lf.attn_s; /* recompute the attention core only */
    }
    const double layer_tp = 2.0 * lf.tp_s + layer_rc_tp; /* forward + backward (+ recompute) */
    const double layer_cp = 2.0 * lf.cp_s;               /* backward passes dK/dV too */

    /* LM head (last stage) and loss: a T x V/tp GEMM forward, two backward, plus the
     * cross-entropy traffic on fp32 logits: ~24 bytes per logit (read bf16 2, write fp32 4, read
     * 4 for the loss; backward read 4, write 4, convert 4 -> 2; case C4). */
    const double head_f = gemm_s(&r, r.matmul_flops_per_s, T, V / tp, h, we);
    const double ce_s = 24.0 * T * V / tp / elem_Bps;
    const double head_fb = 3.0 * head_f + ce_s;

    /* Pipeline p2p: activations of one micro-batch, T*h 16-bit values (/tp with Megatron's
     * scatter-gather optimisation when SP or TP > 1, Narayanan et al. 2021 Sec. 4.1). */
    double p2p_s = 0.0;
    if (pp > 1) {
        mp_coll_cost cc;
        double bytes = T * h * act_e / (tp > 1 ? tp : 1);
        mp_coll_time(c, MP_COLL_SEND_RECV, bytes, (mp_group){2, mp_plan_stride(p, MP_DIM_PP)},
                     MP_ALGO_AUTO, &cc);
        p2p_s = cc.total_s;
        e->pp_tier = cc.bottleneck_tier;
    }

    /* Slowest stage per micro-batch. */
    double t_mb = 0.0, t_mb_compute = 0.0, t_mb_rc = 0.0, t_mb_tp = 0.0, t_mb_cp = 0.0;
    double t_mb_bwd_stage = 0.0, t_mb_fwd_stage = 0.0;
    for (int i = 0; i < pp; i++) {
        double nl = (double)(lmin + (i < lextra ? 1 : 0));
        double comp = nl * (layer_f + layer_b) + (i == pp - 1 ? head_fb : 0.0);
        double rc = nl * layer_rc;
        double tpc = nl * layer_tp;
        double cpc = nl * layer_cp;
        double tot = comp + rc + tpc + cpc;
        if (tot > t_mb) {
            t_mb = tot;
            t_mb_compute = comp;
            t_mb_rc = rc;
            t_mb_tp = tpc;
            t_mb_cp = cpc;
            t_mb_fwd_stage = nl * (layer_f + lf.tp_s) + (i == pp - 1 ? head_f : 0.0);
            t_mb_bwd_stage = tot - t_mb_fwd_stage;
        }
    }
    /* Pipeline p2p on the critical path: a forward send/recv and a backward one per micro-batch
     * per model chunk (Megatron's blocking batched isend/irecv in steady 1F1B). */
    const double t_mb_pp = pp > 1 ? 2.0 * v * p2p_s : 0.0;
    const double t_mb_all = t_mb + t_mb_pp;

    /* Bubble: (p-1)/v micro-batch times (Narayanan et al. 2021 Sec. 2.2.2); GPipe (p-1);
     * ZB-H1 one third of 1F1B's (Qi et al. 2023, "Zero Bubble Pipeline Parallelism", Sec. 3). */
    double bubble = 0.0;
    if (pp > 1) {
        double k = (double)(pp - 1) * t_mb_all;
        switch (p->schedule) {
        case MP_SCHED_INTERLEAVED: bubble = k / v; break;
        case MP_SCHED_ZB: bubble = k / 3.0; break;
        default: bubble = k; break;
        }
    }

    /* --- DP / ZeRO communication ---------------------------------------------------------- */
    /* Parameters held by one GPU of the most loaded stage (TP shards the matrices and the
     * vocabulary; norms are replicated but small). */
    double max_stage_params = 0.0;
    for (int i = 0; i < pp; i++) {
        double nl = (double)(lmin + (i < lextra ? 1 : 0));
        double prm = nl * (double)pc.per_layer;
        if (i == 0)
            prm += (double)pc.embedding;
        if (i == pp - 1)
            prm += (double)pc.final_norm + (double)(pc.lm_head ? pc.lm_head : (pp > 1 ? (int64_t)(V * h) : 0));
        prm /= tp;
        if (prm > max_stage_params)
            max_stage_params = prm;
    }
    const double P_local = max_stage_params;
    /* Gradients are reduced over DP x CP ranks (stride tp); HSDP shards over hsdp ranks and
     * replicates across dp*cp/hsdp. Gradient reduction in fp32 (4 bytes: Megatron-LM main grads,
     * torchtitan's default reduce_dtype), parameter gathers in 16-bit. */
    const int64_t dpg = p->dp * p->cp;
    const int64_t shard = p->hsdp ? p->hsdp : dpg;
    double dp_total = 0.0, dp_exposed = 0.0;
    if (dpg > 1) {
        mp_coll_cost cc;
        /* The shard group (all dp*cp ranks, or hsdp of them) and the replicas, placed by the
         * plan's rank order (stride tp with the default order). */
        mp_group sh_in, sh_out, rp_in, rp_out;
        data_groups(p, shard, &sh_in, &sh_out, &rp_in, &rp_out);
        const double gbytes = 4.0 * P_local, pbytes = 2.0 * P_local;
        double replicate_s = 0.0;
        if (p->hsdp && dpg / shard > 1) {
            mp_coll_time_2d(c, MP_COLL_ALL_REDUCE, gbytes / shard, rp_in, rp_out, MP_ALGO_MASK_ALL,
                            &cc);
            replicate_s = cc.total_s;
            e->parts.hsdp_replicate_s = replicate_s;
        }
        /* Window: backward of the last micro-batch (Li et al. 2020, PyTorch DDP bucketing;
         * Megatron overlap-grad-reduce), forward of the first for parameter gathers. */
        const double bwd_window = opts->grad_reduce_overlap_frac * t_mb_bwd_stage;
        const double fwd_window = opts->grad_reduce_overlap_frac * t_mb_fwd_stage;
        if (p->zero == 0) {
            mp_coll_time_2d(c, MP_COLL_ALL_REDUCE, gbytes, sh_in, sh_out, MP_ALGO_MASK_ALL, &cc);
            e->dp_tier = cc.bottleneck_tier;
            dp_total = cc.total_s;
            e->parts.grad_reduce_s = dp_total;
            dp_exposed = fmax(0.0, dp_total - bwd_window);
        } else if (p->zero <= 2) {
            /* Reduce-scatter the gradients, all-gather the updated 16-bit parameters (Megatron
             * distributed optimizer; ZeRO-1/2). ZeRO-2 reduces every micro-batch (DeepSpeed). */
            mp_coll_time_2d(c, MP_COLL_REDUCE_SCATTER, gbytes, sh_in, sh_out, MP_ALGO_MASK_ALL, &cc);
            double rs = cc.total_s;
            e->dp_tier = cc.bottleneck_tier;
            mp_coll_time_2d(c, MP_COLL_ALL_GATHER, pbytes, sh_in, sh_out, MP_ALGO_MASK_ALL, &cc);
            double ag = cc.total_s;
            e->parts.grad_reduce_s = rs;
            e->parts.param_gather_s = ag;
            if (p->zero == 1) {
                dp_total = rs + ag;
                dp_exposed = fmax(0.0, rs - bwd_window) + fmax(0.0, ag - fwd_window);
            } else {
                dp_total = M * rs + ag;
                dp_exposed = M * fmax(0.0, rs - bwd_window) + fmax(0.0, ag - fwd_window);
            }
        } else {
            /* ZeRO-3 / FSDP: every micro-batch gathers each layer's parameters in forward and
             * again in backward and reduce-scatters its gradients (Zhao et al. 2023, PyTorch
             * FSDP Sec. 3). Each layer's gather is prefetched behind the previous layer. */
            double nl = (double)e->layers_per_stage_max;
            double layer_p = (double)pc.per_layer / tp;
            mp_coll_time_2d(c, MP_COLL_ALL_GATHER, 2.0 * layer_p, sh_in, sh_out, MP_ALGO_MASK_ALL, &cc);
            double ag = cc.total_s;
            mp_coll_time_2d(c, MP_COLL_REDUCE_SCATTER, 4.0 * layer_p, sh_in, sh_out, MP_ALGO_MASK_ALL,
                            &cc);
            double rs = cc.total_s;
            e->dp_tier = cc.bottleneck_tier;
            e->parts.zero3_layer_gather_s = ag;
            e->parts.zero3_layer_reduce_s = rs;
            double lfw = opts->zero3_overlap_frac * (layer_f + lf.tp_s);
            double lbw = opts->zero3_overlap_frac * (layer_b + layer_rc + lf.tp_s + layer_rc_tp);
            double per_mb_total = nl * (2.0 * ag + rs);
            double per_mb_exposed = nl * (fmax(0.0, ag - lfw) + fmax(0.0, ag + rs - lbw)) + ag + rs;
            /* Embedding and LM head: gathered and reduced once per micro-batch, not hidden. */
            double extra_p = (P_local - nl * layer_p);
            mp_coll_time_2d(c, MP_COLL_ALL_GATHER, 2.0 * extra_p, sh_in, sh_out, MP_ALGO_MASK_ALL, &cc);
            double eag = cc.total_s;
            mp_coll_time_2d(c, MP_COLL_REDUCE_SCATTER, 4.0 * extra_p, sh_in, sh_out, MP_ALGO_MASK_ALL,
                            &cc);
            per_mb_total += 2.0 * eag + cc.total_s;
            e->parts.zero3_extra_s = 2.0 * eag + cc.total_s;
            per_mb_exposed += fmax(0.0, 2.0 * eag + cc.total_s - head_fb);
            dp_total = M * per_mb_total;
            dp_exposed = M * per_mb_exposed;
        }
        dp_total += replicate_s;
        dp_exposed += replicate_s;
    }

    /* --- optimizer: Adam over the local shard, memory-bound: read fp32 master, m, v, grad and
     * write master, m, v and the 16-bit weight: 30 bytes per parameter. */
    const double opt_shard = p->zero >= 1 ? (double)shard : 1.0;
    const double t_opt = 30.0 * P_local / opt_shard / elem_Bps;

    /* --- the step ------------------------------------------------------------------------ */
    mp_step_parts *pt = &e->parts;
    pt->layer_fwd_s = layer_f;
    pt->layer_bwd_s = layer_b;
    pt->layer_recompute_s = layer_rc;
    pt->layer_tp_fwd_s = lf.tp_s;
    pt->layer_tp_recompute_s = layer_rc_tp;
    pt->layer_cp_s = lf.cp_s;
    pt->head_fwd_s = head_f;
    pt->head_bwd_s = 2.0 * head_f + ce_s;
    pt->p2p_s = p2p_s;
    pt->optimizer_s = t_opt;
    e->time.compute = M * t_mb_compute;
    e->time.recompute = M * t_mb_rc;
    e->time.tp_comm = M * t_mb_tp;
    e->time.cp_comm = M * t_mb_cp;
    e->time.ep_comm = 0.0;
    e->time.pp_comm = M * t_mb_pp;
    e->time.pp_bubble = bubble;
    e->time.dp_comm_exposed = dp_exposed;
    e->time.dp_comm_total = dp_total;
    e->time.optimizer = t_opt;
    double overlap_slow = opts->comm_compute_slowdown_frac * fmin(dp_total - dp_exposed, e->time.compute);
    e->step_s = M * t_mb_all + bubble + dp_exposed + t_opt + overlap_slow;
    e->time.compute += overlap_slow;

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
    bytes_per_param bpp;
    param_bytes(p->zero, (double)shard, &bpp);
    mp_layer_act la;
    mp_layer_activation(m, p->seq, p->mb, tp, p->sp, cp, p->flash, p->recompute, &la);
    double worst = -1.0;
    int nrep = pp < MP_MAX_STAGES ? pp : MP_MAX_STAGES;
    for (int i = 0; i < pp; i++) {
        mp_memory mm = {0};
        double nl = (double)(lmin + (i < lextra ? 1 : 0));
        double prm = nl * (double)pc.per_layer;
        if (i == 0)
            prm += (double)pc.embedding;
        if (i == pp - 1)
            prm += (double)pc.final_norm + (double)(pc.lm_head ? pc.lm_head : (pp > 1 ? (int64_t)(V * h) : 0));
        prm /= tp;
        mm.weights = bpp.weights * prm;
        if (p->precision == MP_DT_FP8)
            mm.weights += prm * (p->zero == 3 ? 1.0 / shard : 1.0); /* fp8 weight copy (Transformer Engine) */
        mm.gradients = bpp.grads * prm;
        mm.optimizer = bpp.optim * prm;
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
        mm.activations = nl * inflight * la.stored_bytes;
        if (p->recompute == MP_RC_FULL)
            mm.activations += la.working_bytes; /* one layer re-materialised in backward */
        if (i == pp - 1) {
            /* LM-head output (16-bit), its fp32 upcast and the fp32 gradient/softmax buffer:
             * 2 + 4 + 4 bytes per logit (case C1: the failing 786 MiB request is b*s*V*4). */
            mm.logits = T * V / tp * 10.0;
        }
        if (p->zero == 3) {
            /* Gathered 16-bit parameters of the current and the prefetched layer, and the
             * unsharded 16-bit gradient of one layer before its reduce-scatter (FSDP). */
            mm.buffers += 3.0 * 2.0 * (double)pc.per_layer / tp;
        } else if (dpg > 1) {
            /* Communication buckets: Megatron/DDP reduce in place on the grad buffer; NCCL
             * keeps channel buffers (~ 2 x 4 MiB per peer group). */
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
    if (!e->feasible) {
        add_reason(e, "memory: %.1f GiB needed on the most loaded GPU, capacity %.1f GiB",
                   e->memory.total / 1073741824.0, e->memory.capacity / 1073741824.0);
    }

    /* --- bottleneck ------------------------------------------------------------------------ */
    struct { const char *what; double t; } parts[] = {
        {"compute", e->time.compute},
        {"recompute", e->time.recompute},
        {"TP communication", e->time.tp_comm},
        {"CP communication", e->time.cp_comm},
        {"pipeline send/recv", e->time.pp_comm},
        {"pipeline bubble", e->time.pp_bubble},
        {"exposed DP/ZeRO communication", e->time.dp_comm_exposed},
        {"optimizer step", e->time.optimizer},
    };
    size_t bi = 0;
    double comm_sum = e->time.tp_comm + e->time.cp_comm + e->time.pp_comm + e->time.dp_comm_exposed;
    for (size_t i = 1; i < sizeof parts / sizeof parts[0]; i++)
        if (parts[i].t > parts[bi].t)
            bi = i;
    if (!e->feasible) {
        snprintf(e->bottleneck, sizeof e->bottleneck, "memory (%.1f of %.1f GiB)",
                 e->memory.total / 1073741824.0, e->memory.capacity / 1073741824.0);
    } else if (bi == 0 && comm_sum < 0.25 * e->step_s) {
        snprintf(e->bottleneck, sizeof e->bottleneck,
                 "compute (%.0f%% of the step; GEMMs at %.0f TFLOP/s achievable)",
                 100.0 * e->time.compute / e->step_s, r.matmul_flops_per_s / 1e12);
    } else {
        /* The link of the tier that bounds that kind's collective. */
        int bt = bi == 2 ? e->tp_tier : bi == 3 ? e->cp_tier : bi == 4 ? e->pp_tier
               : bi == 6 ? e->dp_tier : 0;
        const char *link = c->tier[bt >= 0 && bt < c->ntiers ? bt : 0].link;
        snprintf(e->bottleneck, sizeof e->bottleneck, "%s (%.0f%% of the step)%s%s",
                 parts[bi].what, 100.0 * parts[bi].t / e->step_s,
                 (bi >= 2 && bi <= 4) || bi == 6 ? " over " : "",
                 (bi >= 2 && bi <= 4) || bi == 6 ? link : "");
    }

    if (!isfinite(e->step_s) || !isfinite(e->memory.total) || e->step_s <= 0) {
        mp_diag_add(diag, "estimate is not finite (step %g s, memory %g B): inputs out of range",
                    e->step_s, e->memory.total);
        return MP_ERR_RANGE;
    }
    return MP_OK;
}
