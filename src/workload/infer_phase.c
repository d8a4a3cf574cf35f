/* src/workload/infer_phase.c — the inference phases of the workload: one prefill or decode step of
 * one pipeline stage on one GPU, as GEMMs at the step's token count, attention against the KV
 * cache, element-wise kernels and the TP / EP / PP collectives, each priced by the kernel roofline
 * (kernels.c) and coll. Forward only; no gradients, no optimizer. What a step means for a
 * request (TTFT, TPOT, throughput, memory, concurrency) is the consumer's: src/infer/.
 *
 * Left out: speculative decoding, MTP modules (not loaded without it), prefix caching, sparse
 * attention kernels beyond a sliding window, and the dequantization cost of weight-only int8/int4
 * GEMMs (fused into the GEMM's main loop by Marlin-class kernels: only their bytes are counted).
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "kernels.h"
#include "meshplan/workload.h"

/* Activations travel in 16 bits between kernels and over TP/EP/PP links (vLLM, SGLang and
 * TensorRT-LLM keep bf16/fp16 activations with fp8 weights unless fp8 communication is asked). */
#define ACT_BYTES 2.0

double mp_wl_kv_bytes_per_token(const mp_model *m, double kv_bytes)
{
    if (!(kv_bytes > 0))
        return 0.0;
    if (m->kv_lora_rank > 0) /* MLA: c_kv and k_rope per token per layer (DeepSeek-V2 Sec. 2.1.3) */
        return (double)(m->kv_lora_rank + m->qk_rope_head_dim) * (double)m->layers * kv_bytes;
    mp_attn_dims ad;
    mp_model_attn_dims(m, &ad);
    /* K and V of every KV head (Vaswani 2017; GQA, Ainslie et al. 2023; MQA, Shazeer 2019: one head) */
    return (ad.k_width + ad.v_width) * (double)m->layers * kv_bytes;
}

double mp_wl_kv_bytes_per_token_gpu(const mp_model *m, double kv_bytes, int tp, int pp)
{
    if (!(kv_bytes > 0) || tp < 1 || pp < 1)
        return 0.0;
    double layers = ceil((double)m->layers / pp);
    if (m->kv_lora_rank > 0)
        return (double)(m->kv_lora_rank + m->qk_rope_head_dim) * layers * kv_bytes;
    mp_attn_dims ad;
    mp_model_attn_dims(m, &ad);
    double kvh = (double)m->kv_heads;
    double local = kvh >= tp ? kvh / tp : 1.0; /* replicated when tp > kv_heads */
    return (ad.k_width + ad.v_width) / kvh * local * layers * kv_bytes;
}

/* One GEMM [M,K]x[K,N]: its time, and whether FLOPs (not HBM) bound it, added to out. */
static double gemm(mp_wl_infer *o, double rate, double M, double N, double K, double e)
{
    double mem_s = e * (M * K + K * N + M * N) / o->rates.mem_Bps;
    double flop_s;
    if (M < 128) {
        /* A skinny GEMM (decode: M = sequences) is split along K over every SM (stream-K, Osama
         * et al. 2023, PPoPP), so no wave quantisation. Its rows are padded to the M of the
         * tensor-core instruction small-batch kernels issue: mma.sync m16n8k16 (PTX ISA, "Matrix
         * shape" of mma; the tile of Marlin, Frantar et al. 2024, and of FlashInfer's and
         * TensorRT-LLM's small-batch GEMM/GEMV paths), not Hopper wgmma's M of 64, which the
         * large-M kernels use: a warp-group tile of 64 rows would waste 63/64 of the tensor-core
         * work at batch 1 and make one-sequence decode compute-bound on a GPU of low dense peak
         * (H20), where measured single-stream decode runs at weight-streaming speed. */
        flop_s = M > 0 && N > 0 && K > 0 ? 2.0 * 16.0 * ceil(M / 16.0) * N * K / rate : 0.0;
    } else {
        /* kernels.c's wave-quantised FLOP time (its HBM term left out: infinite bandwidth) */
        mp_kernel_rates fr = o->rates;
        fr.mem_Bps = INFINITY;
        flop_s = mp_kernel_gemm_s(&fr, rate, M, N, K, e);
    }
    double t = mp_kernel_overlap_s(M, mem_s, flop_s);
    if (flop_s > mem_s)
        o->compute_bound_s += t;
    else
        o->memory_bound_s += t;
    o->flop += 2.0 * M * N * K;
    o->weight_bytes_read += e * K * N;
    return t;
}

/* A roofline kernel of flop FLOPs and bytes HBM bytes: max of the two, booked to its bound. */
static double roof(mp_wl_infer *o, double flop, double rate, double bytes, double bw)
{
    double fs = rate > 0 ? flop / rate : 0.0, ms = bw > 0 ? bytes / bw : 0.0;
    if (fs > ms)
        o->compute_bound_s += fs;
    else
        o->memory_bound_s += ms;
    o->flop += flop;
    return fs > ms ? fs : ms;
}

static double coll(const mp_cluster *c, mp_coll_op op, double bytes, mp_group g)
{
    mp_coll_cost cc;
    if (g.size < 2 || !(bytes > 0) || mp_coll_time(c, op, bytes, g, MP_ALGO_AUTO, &cc) != MP_OK)
        return 0.0;
    return cc.total_s;
}

/* Attention core of one layer for T = seqs x new_tokens queries over ctx keys each. Non-MLA: QK^T
 * and PV, 2 x (qk + v) FLOPs per query, key and local head (FlashAttention, Dao et al. 2022); the
 * cache read once per step per sequence (paged attention, Kwon et al. 2023: decode is a stream
 * of the KV blocks). MLA decode runs absorbed (DeepSeek-V2 Sec. 2.1.2): per head the query meets
 * the latent (kv_lora + rope) and the output is kv_lora wide; prefill runs the expanded heads. */
static double attention(mp_wl_infer *o, const mp_model *m, const mp_attn_dims *ad,
                        const mp_wl_infer_shape *s, double ctx)
{
    const double T = s->seqs * s->new_tokens, heads = (double)m->heads / s->tp;
    double flop_per_key, kv_elems;
    if (ad->mla) {
        kv_elems = (double)(m->kv_lora_rank + m->qk_rope_head_dim);
        flop_per_key = s->phase == MP_WL_DECODE
                           ? 2.0 * heads * (kv_elems + (double)m->kv_lora_rank)
                           : 2.0 * heads * (ad->qk_head + ad->v_head);
    } else {
        double kvh = (double)m->kv_heads, local = kvh >= s->tp ? kvh / s->tp : 1.0;
        kv_elems = (ad->k_width + ad->v_width) / kvh * local;
        flop_per_key = 2.0 * heads * (ad->qk_head + ad->v_head);
    }
    double flop = T * ctx * flop_per_key;
    /* decode reads every cached token of every sequence; prefill writes its new tokens' K/V */
    double kv = (s->phase == MP_WL_DECODE ? s->seqs * ctx : T) * kv_elems * s->kv_bytes;
    o->kv_bytes_read += kv;
    return roof(o, flop, o->rates.attn_flops_per_s, kv, o->rates.mem_Bps);
}

/* Routed experts of one MoE layer on one GPU: with ep > 1 each GPU holds experts/ep whole experts
 * and receives T x topk / ep routed copies x the load factor; with ep = 1 every expert is split
 * over TP. The weights read are those of the experts at least one token picks: under uniform
 * routing an expert is missed by all T tokens with probability (1 - topk/E)^T. */
static double experts(mp_wl_infer *o, const mp_model *m, const mp_wl_infer_shape *s, double T)
{
    const double E = (double)m->moe_experts, k = (double)m->moe_topk, h = (double)m->hidden;
    const double f = (double)m->moe_ffn_hidden / (s->ep > 1 ? 1.0 : s->tp);
    const double local = s->ep > 1 ? E / s->ep : E;
    const double copies = T * k / (s->ep > 1 ? s->ep : 1.0) * s->moe_load;
    const double mats = m->glu ? 3.0 : 2.0;
    double touched = local * (1.0 - pow(1.0 - k / E, T));
    double wbytes = touched * mats * h * f * s->weight_bytes;
    o->weight_bytes_read += wbytes;
    double bytes = wbytes + 2.0 * ACT_BYTES * copies * (h + f);
    /* FLOP time of the grouped GEMMs (kernels.c: each expert's rows padded to whole 128-row tiles,
     * the tiles of all experts sharing the waves), its HBM term replaced by the touched experts'
     * bytes above (an infinite bandwidth leaves kernels.c's term at 0) */
    mp_kernel_rates fr = o->rates;
    fr.mem_Bps = INFINITY;
    const double rate = o->rates.matmul_flops_per_s, M = copies / local;
    double flop_s = mp_kernel_grouped_gemm_s(&fr, rate, local, M, (mats - 1.0) * f, h, s->weight_bytes) +
                    mp_kernel_grouped_gemm_s(&fr, rate, local, M, h, f, s->weight_bytes);
    double mem_s = bytes / o->rates.mem_Bps, t = mp_kernel_overlap_s(M, mem_s, flop_s); /* the rule of gemm(), M per expert */
    o->flop += 2.0 * copies * mats * h * f;
    if (flop_s > mem_s)
        o->compute_bound_s += t;
    else
        o->memory_bound_s += t;
    return t;
}

/* One transformer layer (dense or MoE) of T tokens; adds its parts to o. */
static void layer(mp_wl_infer *o, const mp_model *m, const mp_cluster *c, const mp_attn_dims *ad,
                  const mp_wl_infer_shape *s, int moe, double ctx, double n)
{
    const double T = s->seqs * s->new_tokens, h = (double)m->hidden, e = s->weight_bytes;
    const double rate = o->rates.matmul_flops_per_s;
    double t = 0.0;
    /* attention projections: Q, K, V (or MLA's down/up projections) and O as one [T,h] GEMM of
     * their weights' width on this GPU (TP splits all but MLA's down-projections) */
    double w_attn = (ad->matmul_params - ad->tp_replicated_params) / s->tp + ad->tp_replicated_params;
    t += gemm(o, rate, T, w_attn / h, h, e);
    double attn = attention(o, m, ad, s, ctx);
    double f_dense = moe ? (double)(m->moe_shared_experts * m->moe_ffn_hidden) : (double)m->ffn_hidden;
    if (f_dense > 0) { /* dense FFN or the shared experts: up (and gate), then down (Megatron TP) */
        t += gemm(o, rate, T, (m->glu ? 2.0 : 1.0) * f_dense / s->tp, h, e);
        t += gemm(o, rate, T, h, f_dense / s->tp, e);
    }
    if (moe) {
        t += gemm(o, o->rates.bf16_matmul_flops_per_s, T, (double)m->moe_experts, h, ACT_BYTES); /* router */
        t += experts(o, m, s, T);
        /* dispatch + combine: each rank sends its T/ep tokens' topk copies (DeepSeek-V3 Sec. 3.3.2) */
        double a2a = mp_moe_dispatch_bytes_per_token(m, ACT_BYTES) * T / s->ep;
        o->ep_s += n * 2.0 * coll(c, MP_COLL_ALL_TO_ALL, a2a, (mp_group){s->ep, 1});
    }
    double elem_bytes = mp_kernel_elem_fwd_bytes_per_token(m, ad, moe ? 0.0 : f_dense, s->tp, 0) * T;
    double elem = roof(o, 0.0, 0.0, elem_bytes, o->rates.elem_Bps);
    /* Megatron TP: one all-reduce after attention, one after the FFN (Shoeybi et al. 2019 Sec. 3) */
    o->tp_s += n * 2.0 * coll(c, MP_COLL_ALL_REDUCE, T * h * ACT_BYTES, (mp_group){s->tp, 1});
    o->gemm_s += n * t;
    o->attn_s += n * attn;
    o->elem_s += n * elem;
    /* the per-kernel books above are for one layer: scale them to n */
    o->layers += n;
}

static int check(const mp_model *m, const mp_wl_infer_shape *s, mp_diag *d)
{
    int bad = 0;
    if (s->phase != MP_WL_PREFILL && s->phase != MP_WL_DECODE) { mp_diag_add(d, "infer phase %d: expected prefill or decode", (int)s->phase); bad++; }
    if (s->tp < 1 || m->heads % s->tp) { mp_diag_add(d, "plan.tp = %d: expected a divisor of the model's %lld heads", s->tp, (long long)m->heads); bad++; }
    if (s->pp < 1 || s->pp > m->layers) { mp_diag_add(d, "plan.pp = %d: expected 1 .. the model's %lld layers", s->pp, (long long)m->layers); bad++; }
    if (s->ep < 1 || (s->ep > 1 && (!mp_model_is_moe(m) || m->moe_experts % s->ep || s->ep > s->tp))) {
        mp_diag_add(d, "plan.ep = %d: expected 1, or for an MoE model a divisor of its experts "
                       "that is at most tp (experts spread over the replica's TP ranks)", s->ep);
        bad++;
    }
    if (!(s->seqs > 0) || !(s->new_tokens >= 1) || !(s->context >= 0)) { mp_diag_add(d, "infer shape: seqs %g, new_tokens %g, context %g: expected > 0, >= 1, >= 0", s->seqs, s->new_tokens, s->context); bad++; }
    if (!(s->weight_bytes > 0 && s->weight_bytes <= 4) || !(s->kv_bytes > 0 && s->kv_bytes <= 4)) { mp_diag_add(d, "infer shape: weight_bytes %g, kv_bytes %g: expected (0, 4]", s->weight_bytes, s->kv_bytes); bad++; }
    if (!(s->gemm_frac > 0 && s->gemm_frac <= 1) || !(s->attn_frac > 0 && s->attn_frac <= 1) || !(s->mem_frac > 0 && s->mem_frac <= 1)) { mp_diag_add(d, "infer shape: gemm_frac %g, attn_frac %g, mem_frac %g: expected (0, 1]", s->gemm_frac, s->attn_frac, s->mem_frac); bad++; }
    if (!(s->moe_load >= 1)) { mp_diag_add(d, "infer shape: moe_load %g: expected >= 1", s->moe_load); bad++; }
    return bad;
}

mp_status mp_workload_infer(const mp_model *m, const mp_cluster *c, const mp_wl_infer_shape *s,
                            mp_wl_infer *o, mp_diag *d)
{
    memset(o, 0, sizeof *o);
    if (check(m, s, d))
        return MP_ERR_INPUT;
    if ((int64_t)s->tp * s->pp > c->num_gpus) {
        mp_diag_add(d, "plan: tp x pp = %d GPUs: expected at most the cluster's %lld", s->tp * s->pp, (long long)c->num_gpus);
        return MP_ERR_INPUT;
    }
    mp_workload_opts wo;
    mp_workload_opts_init(&wo);
    wo.gemm_sustained_frac = s->gemm_frac;
    wo.attention_sustained_frac = s->attn_frac;
    wo.memory_bound_sustained_frac = s->mem_frac;
    mp_kernel_rates_of(&c->gpu, s->compute_dtype, MP_ATTN_FA3, &wo, &o->rates);
    o->rates.mem_Bps *= s->mem_frac; /* weight and KV streams reach this share of STREAM's copy */
    mp_attn_dims ad;
    mp_model_attn_dims(m, &ad);
    /* the stage holding most layers, and of them most MoE layers (DeepSeek's dense layers first) */
    const int64_t per = (m->layers + s->pp - 1) / s->pp;
    int64_t moe_layers = 0;
    for (int i = 0; i < s->pp; i++) {
        int64_t n = mp_model_moe_layers_in(m, i * per, per);
        moe_layers = n > moe_layers ? n : moe_layers;
    }
    int64_t layers = per < m->layers ? per : m->layers;
    /* sliding-window layers attend to at most the window (Mistral 7B, Jiang et al. 2023) */
    double ctx = s->context;
    if (m->attn_window > 0) {
        double lw = (double)(m->attn_window_layers ? m->attn_window_layers : m->layers) / m->layers;
        ctx = lw * fmin(ctx, (double)m->attn_window) + (1.0 - lw) * ctx;
    }
    mp_wl_infer one;
    for (int moe = 0; moe < 2; moe++) {
        double n = moe ? (double)moe_layers : (double)(layers - moe_layers);
        if (!(n > 0))
            continue;
        one = *o;
        memset(&one.gemm_s, 0, offsetof(mp_wl_infer, rates) - offsetof(mp_wl_infer, gemm_s));
        layer(&one, m, c, &ad, s, moe, ctx, n);
        /* one layer's kernel books x n layers (layer() scaled its times itself) */
        o->gemm_s += one.gemm_s; o->attn_s += one.attn_s; o->elem_s += one.elem_s;
        o->tp_s += one.tp_s; o->ep_s += one.ep_s; o->layers += one.layers;
        o->compute_bound_s += n * one.compute_bound_s; o->memory_bound_s += n * one.memory_bound_s;
        o->flop += n * one.flop; o->weight_bytes_read += n * one.weight_bytes_read;
        o->kv_bytes_read += n * one.kv_bytes_read;
    }
    /* LM head on the last stage's sequences (only each sequence's last token makes logits), kept
     * in 16 bits as the engines load it; counted in the heaviest stage (exact for pp = 1) */
    double vpad = (double)mp_model_padded_vocab(m, s->tp) / s->tp;
    o->gemm_s += gemm(o, o->rates.bf16_matmul_flops_per_s, s->seqs, vpad, (double)m->hidden, ACT_BYTES);
    if (s->pp > 1) /* the activations to the next stage (send/recv between stage neighbours) */
        o->pp_s = coll(c, MP_COLL_SEND_RECV, s->seqs * s->new_tokens * m->hidden * ACT_BYTES,
                       (mp_group){2, s->tp});
    o->total_s = o->gemm_s + o->attn_s + o->elem_s + o->tp_s + o->ep_s;
    return MP_OK;
}
