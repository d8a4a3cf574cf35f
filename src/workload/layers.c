/* src/workload/layers.c — what each layer kind computes, priced by the kernel roofline: the
 * GEMMs, attention core and element-wise kernels of one micro-batch's forward on one GPU, the
 * backward and recompute from them, the FSDP2 copy-outs, and each kind's communication of one
 * pass from the collectives table (comm.c).
 *
 * Backward = 2x forward for the GEMMs (dgrad + wgrad, Narayanan et al. 2021) and the
 * element-wise traffic; attention backward is 2.5x its forward (FlashAttention's fwd+bwd = 3.5x
 * forward convention, Dao 2023). GEMM operand bytes: the linear layers of the transformer run at
 * the plan's precision; the attention core, the LM head and the router stay 16-bit (Transformer
 * Engine's fp8 autocast covers its Linear/LayerNormLinear/GroupedLinear modules only;
 * Megatron-Core's output layer and router are not TE fp8 modules; DeepSeek-AI 2024 Sec. 3.3 keeps
 * embedding, output head, gating and attention in bf16 too). */
#include <math.h>
#include <string.h>

#include "kernels.h"
#include "workload_internal.h"

/* The attention part of a layer (both kinds), one micro-batch, forward. */
typedef struct {
    double gemm_s;     /* QKV (or MLA projections) and output projection */
    double core_s;     /* attention core */
    double cast_elems; /* fp8: GEMM inputs needing their own cast in forward */
    double out_elems;  /* fp8: output gradients cast in backward */
} attn_part;

static void attention(const mp_workload *w, const mp_model *m, const mp_plan *p, attn_part *a)
{
    const mp_kernel_rates *r = &w->rates;
    const mp_attn_dims *ad = &w->attn;
    const double R = r->matmul_flops_per_s, R16 = r->bf16_matmul_flops_per_s, elem_Bps = r->elem_Bps;
    const double T = w->tokens_mb, h = (double)m->hidden, we = mp_dtype_bytes(p->precision);
    const double s = (double)p->seq, b = (double)p->mb;
    const int tp = w->tp, cp = w->cp;
    const double ql = (double)m->q_lora_rank, kvl = (double)m->kv_lora_rank;
    const double rope = (double)m->qk_rope_head_dim;
    if (ad->mla) {
        /* MLA (DeepSeek-AI 2024 Sec. 2.1.1): down-projections whole on every TP rank,
         * up-projections and output split by TP. */
        double kvup = (double)m->heads * (ad->qk_head - rope + ad->v_head) / tp;
        a->gemm_s = (ql > 0 ? mp_kernel_gemm_s(r, R, T, ql, h, we) + mp_kernel_gemm_s(r, R, T, ad->q_width / tp, ql, we)
                            : mp_kernel_gemm_s(r, R, T, ad->q_width / tp, h, we))
                  + mp_kernel_gemm_s(r, R, T, kvl + rope, h, we) + mp_kernel_gemm_s(r, R, T, kvup, kvl, we)
                  + mp_kernel_gemm_s(r, R, T, h, ad->o_width / tp, we);
        a->out_elems = T * ((ql > 0 ? ql + ad->q_width / tp : ad->q_width / tp) + kvl + rope + kvup + h);
    } else {
        a->gemm_s = mp_kernel_gemm_s(r, R, T, (ad->q_width + ad->k_width + ad->v_width) / tp, h, we) /* QKV */
                  + mp_kernel_gemm_s(r, R, T, h, ad->o_width / tp, we);                            /* O */
        a->out_elems = T * ((ad->q_width + ad->k_width + ad->v_width) / tp + h);
    }
    /* fp8 inputs needing their own cast (the QKV/latent inputs come out of a fused
     * LayerNorm+cast): the output projection's. */
    a->cast_elems = T * ad->o_width / tp;
    /* Attention core, forward: causal, 2*ctx*(q width + o width) FLOPs per token (ctx =
     * s/2 keys on average; with CP's load-balanced chunks too; min-window average for
     * windowed layers, the same average as mp_model_flops). */
    const double Lw = m->attn_window > 0 ? (double)(m->attn_window_layers ? m->attn_window_layers : m->layers) : 0.0;
    const double win = (double)m->attn_window;
    double ctx_w = (win > 0 && win < s) ? win - win * (win - 1.0) / (2.0 * s) : s / 2.0;
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
        win_k = fmin(mp_attn_keys_per_query(s, win, mu) + tile_half, win_k);
    }
    double ctx = ((double)m->layers - Lw) / (double)m->layers * full_k + Lw / (double)m->layers * win_k;
    double attn_fwd_flops = 2.0 * T * ctx * (ad->q_width + ad->o_width) / tp;
    if (p->flash) {
        /* FlashAttention benchmark convention: fwd+bwd = 3.5 x forward FLOPs (Dao 2023,
         * benchmarks); the catalogued rate is for fwd+bwd, so the forward share is 1/3.5. */
        a->core_s = attn_fwd_flops / r->attn_flops_per_s;
    } else {
        /* Two batched GEMMs at the GEMM rate, plus the s^2 scores through HBM: write scores,
         * softmax read+write, (dropout read+write+mask), read for x V: ~10 bytes per score
         * forward (Korthikanti et al. 2022 Sec. 4.1 tensor list). */
        double scores = (double)m->heads / tp * b * (s / cp) * s;
        a->core_s = attn_fwd_flops * 2.0 / R16 + (m->dropout ? 10.0 : 6.0) * scores / elem_Bps;
    }
}

/* A dense layer: attention + FFN. */
/* fp8 casts of one layer (Transformer Engine's, or torchao's dynamic scaling): fwd_cast and
 * bwd_cast elements, each read in 16-bit and written as rowwise + columnwise fp8 copies (4
 * bytes); with dynamic scaling (opts->fp8_scale_bytes_per_elem > 0, torchao Float8Linear,
 * torchtitan docs/float8.md) an amax pass first over every cast element, the inputs TE would cast
 * inside its LayerNormLinear (norm_in elements) cast on their own, and the layer's weights
 * (params) recast in every forward and again in backward instead of once per step. */
static void fp8_casts(const mp_workload_opts *opts, double fwd_cast, double bwd_cast, double norm_in,
                      double params, double elem_Bps, mp_wl_layer *l)
{
    const double sb = opts->fp8_scale_bytes_per_elem;
    if (sb > 0) {
        fwd_cast += norm_in + params;
        bwd_cast += params;
    }
    l->elem_s += (4.0 + sb) * fwd_cast / elem_Bps;
    l->bwd_extra_s = (4.0 + sb) * bwd_cast / elem_Bps;
}

static void dense_layer(const mp_workload *w, const mp_model *m, const mp_plan *p,
                        const mp_workload_opts *opts, const attn_part *a, mp_wl_layer *l)
{
    const mp_kernel_rates *r = &w->rates;
    const mp_attn_dims *ad = &w->attn;
    const double R = r->matmul_flops_per_s, elem_Bps = r->elem_Bps;
    const double T = w->tokens_mb, h = (double)m->hidden, f = (double)m->ffn_hidden;
    const double we = mp_dtype_bytes(p->precision);
    const int tp = w->tp, fp8 = w->fp8;
    l->gemm_s = a->gemm_s + mp_kernel_gemm_s(r, R, T, (m->glu ? 2 : 1) * f / tp, h, we) /* FC1 (+ gate) */
              + mp_kernel_gemm_s(r, R, T, h, f / tp, we);                              /* FC2 */
    l->attn_s = a->core_s;
    /* The stack's fusions scale the element-wise traffic (data/stacks.json). */
    const double ef = opts->elementwise_bytes_frac * T / elem_Bps;
    const double chain_fwd = ef * mp_kernel_elem_fwd_bytes_per_token(m, ad, f, tp, p->sp);
    l->elem_s = chain_fwd;
    const double chain_bwd = ef * mp_kernel_elem_bwd_bytes_per_token(m, ad, f, tp, p->sp);
    if (fp8) {
        /* Transformer Engine casts every fp8 GEMM input it cannot fuse into a preceding
         * LayerNorm (output projection, FC2): read 2 bytes, write the rowwise and the
         * transposed columnwise fp8 copies (1 + 1), and in backward every output
         * gradient the same way (TE Linear, Float8Quantizer with both usages). */
        double fwd_cast = a->cast_elems + T * f / tp;
        double bwd_cast = a->out_elems + T * ((m->glu ? 2 : 1) * f / tp + h);
        fp8_casts(opts, fwd_cast, bwd_cast, 2.0 * T * h, w->layer[MP_LK_DENSE].params, elem_Bps, l);
    }
    /* Backward: the chain counted kernel by kernel, the fp8 forward casts twice (as before). */
    l->elem_bwd_s = chain_bwd + 2.0 * (l->elem_s - chain_fwd);
}

/* An MoE layer (Megatron-Core's MoE layer): attention + router + routed experts as grouped GEMMs
 * + shared experts. */
static void moe_layer(const mp_workload *w, const mp_model *m, const mp_plan *p,
                      const mp_workload_opts *opts, const attn_part *a, mp_wl_layer *l)
{
    const mp_kernel_rates *r = &w->rates;
    const mp_attn_dims *ad = &w->attn;
    const double R = r->matmul_flops_per_s, R16 = r->bf16_matmul_flops_per_s, elem_Bps = r->elem_Bps;
    const double T = w->tokens_mb, h = (double)m->hidden, we = mp_dtype_bytes(p->precision);
    const double load = w->moe_load;
    const int tp = w->tp, ep = w->ep, etp = w->etp, fp8 = w->fp8;
    const double E = (double)m->moe_experts, k = (double)m->moe_topk;
    const double fe = (double)m->moe_ffn_hidden, S = (double)m->moe_shared_experts;
    const double El = E / ep;                     /* local experts */
    const double Tr = T / tp;                     /* tokens routed from this GPU (SP shard) */
    const double Rt = Tr * k * etp * load;        /* routed copies this GPU's experts run */
    const double Me = Rt / El;                    /* tokens per local expert */
    const double fl = fe / etp;                   /* expert width on this GPU */
    l->gemm_s = a->gemm_s
              + mp_kernel_gemm_s(r, R16, Tr, E, h, 2.0)                               /* router */
              + mp_kernel_grouped_gemm_s(r, R, El, Me, (m->glu ? 2 : 1) * fl, h, we)  /* expert FC1 */
              + mp_kernel_grouped_gemm_s(r, R, El, Me, h, fl, we);                    /* expert FC2 */
    if (S > 0)
        l->gemm_s += mp_kernel_gemm_s(r, R, T, (m->glu ? 2 : 1) * S * fe / tp, h, we) + mp_kernel_gemm_s(r, R, T, h, S * fe / tp, we);
    l->attn_s = a->core_s;
    /* Element-wise: the dense-layer kernels with the shared experts' activation, plus per
     * routed copy (Megatron-Core MoE with fused permute): permute (read h, write h), on
     * EP > 1 the sort of received chunks by expert and its inverse (2 x read h, write h),
     * the expert activation (GLU: read 2 fl, write fl), the probability-weighted unpermute
     * (read h, write h/k); plus the router's fp32 logits, softmax/top-k and probabilities
     * (~4 passes over E floats per token). */
    double per_copy = 2.0 * (2.0 * h + (ep > 1 ? 4.0 * h : 0.0) + (m->glu ? 3.0 : 2.0) * fl + h + h / k);
    const double ef = opts->elementwise_bytes_frac * T / elem_Bps;
    const double chain_fwd = ef * mp_kernel_elem_fwd_bytes_per_token(m, ad, S * fe, tp, p->sp);
    l->elem_s = chain_fwd + (Rt * per_copy + 16.0 * Tr * E) / elem_Bps;
    /* The dispatcher's per-copy bookkeeping (routing-map to index conversion, sorts and
     * scatters with indirection, the host sync for all-to-all split sizes), fitted: one
     * third in forward, like the other per-layer work (backward = 2x forward). */
    l->elem_s += Rt * fmax(0.0, opts->moe_copy_overhead_s) / 3.0;
    if (fp8) {
        /* As for the dense layer: the output projection, the expert FC1 input (no norm in
         * front after the dispatch), expert FC2 and shared FC2 inputs; backward casts every
         * output gradient. */
        double fwd_cast = a->cast_elems + Rt * (h + fl) + T * S * fe / tp;
        double bwd_cast = a->out_elems + Rt * ((m->glu ? 2 : 1) * fl + h) +
                          T * ((m->glu ? 2 : 1) * S * fe / tp + (S > 0 ? h : 0.0));
        const mp_wl_layer *km = &w->layer[MP_LK_MOE];
        fp8_casts(opts, fwd_cast, bwd_cast, T * h, km->params + km->expert_params, elem_Bps, l);
    }
    /* Backward: the dense chain counted kernel by kernel; the permutation, router, dispatcher
     * and fp8 casts twice their forward (as before). */
    l->elem_bwd_s = ef * mp_kernel_elem_bwd_bytes_per_token(m, ad, S * fe, tp, p->sp) + 2.0 * (l->elem_s - chain_fwd);
}

/* Forward, backward and recompute of a layer from its forward pieces. fl: the model's FLOPs
 * (the per-op and MLP-only modes recompute a share of the layer's GEMMs); every: the mode on one
 * layer in every n (plan recompute_every), so a layer's mean recompute is 1/n of it. Attention
 * backward: 2.5x its forward for a fused kernel (FlashAttention recomputes the scores inside its
 * backward: the fwd+bwd = 3.5x forward convention, Dao 2023); 2x for the unfused core (Megatron's
 * fused softmax), whose backward is four batched GEMMs (dV, dP, dQ, dK: twice the forward's two)
 * and the softmax and dropout backward over the stored scores (about twice the forward's score
 * traffic: read P and dP, write dS; Korthikanti et al. 2022 Sec. 4.1 lists what is stored). A
 * frozen base (LoRA, QLoRA; finetune.c) runs no weight-gradient GEMMs: its backward is the
 * input-gradient GEMMs plus the adapters' (input and weight gradients of A and B: twice their
 * forward) and QLoRA's dequantisation again. */
static void passes(mp_wl_layer *l, mp_recompute rc, const mp_flops *fl, double every, int flash,
                   int frozen)
{
    const double attn_bwd = flash ? 2.5 : 2.0;
    /* set below only by the modes that recompute: cleared first, as the shape (shape_base) left
     * them, since one shape serves the lines of every recompute mode (workload.c line_key) */
    l->recompute_s = l->tp_recompute_s = l->ep_recompute_s = 0.0;
    l->fwd_s = l->gemm_s + l->attn_s + l->elem_s;
    l->bwd_s = 2.0 * l->gemm_s + attn_bwd * l->attn_s + l->elem_bwd_s + l->bwd_extra_s;
    l->bwd_weight_s = l->gemm_s; /* wgrad GEMMs: the forward GEMMs' FLOPs (Qi et al. 2023 Sec. 2) */
    if (frozen) {
        l->fwd_s += l->adapter_s + l->dequant_s;
        l->bwd_s += -l->gemm_s + 2.0 * l->adapter_s + l->dequant_s;
        l->bwd_weight_s = l->adapter_s;
    }
    if (rc == MP_RC_FULL) {
        l->recompute_s = l->fwd_s;
        l->tp_recompute_s = l->tp_fwd_s; /* the recompute forward communicates again */
        l->ep_recompute_s = l->ep_fwd_s; /* ... and dispatches again */
    } else if (rc == MP_RC_SELECTIVE) {
        l->recompute_s = l->attn_s; /* recompute the attention core only */
    } else if (rc == MP_RC_OP || rc == MP_RC_MLP) {
        /* The recomputed matmuls' share of the layer's GEMM time (mp_flops), and the
         * element-wise work in the same share (MLP) or all of it (per-op SAC saves no
         * element-wise output: norms, RoPE and the GLU activation run again). The TP
         * all-gathers in front of the recomputed column-parallel matmuls run again too: half
         * the layer's TP traffic (per-op), the MLP's quarter (MLP). */
        double mm = fl->fwd_matmul_per_token > 0
                    ? (rc == MP_RC_OP ? fl->recompute_op_per_token : fl->recompute_mlp_per_token) /
                          fl->fwd_matmul_per_token
                    : 0.0;
        l->recompute_s = mm * l->gemm_s + (rc == MP_RC_OP ? 1.0 : mm) * l->elem_s;
        l->tp_recompute_s = (rc == MP_RC_OP ? 0.5 : 0.25) * l->tp_fwd_s;
    }
    if (every > 1.0) {
        l->recompute_s /= every;
        l->tp_recompute_s /= every;
        l->ep_recompute_s /= every;
    }
}

/* Communication of one pass of each layer kind, from the collectives table. CP ring: only what
 * a ring step's transfer takes beyond the attention on the chunk in hand is exposed (backward:
 * 2.5x the forward attention); all-gather CP is not overlapped. */
static void layer_comm(mp_workload *w, const mp_model *m, const mp_plan *p, const attn_part *a)
{
    const mp_wl_coll *x = w->coll;
    mp_wl_layer *d = &w->layer[MP_LK_DENSE], *mo = &w->layer[MP_LK_MOE];
    const double tp_pair = x[MP_WC_TP_A].time_s + x[MP_WC_TP_B].time_s;
    const int cp = w->cp;
    double cp_fwd = 0.0, cp_bwd = 0.0, cp_bytes = 0.0;
    if (cp > 1) {
        const double chunk = x[MP_WC_CP_FWD].bytes / (x[MP_WC_CP_FWD].op == MP_COLL_ALL_GATHER ? cp : 1);
        if (x[MP_WC_CP_FWD].window == MP_WIN_ATTENTION) {
            double step_attn = a->core_s / cp;
            cp_fwd = (cp - 1) * fmax(0.0, x[MP_WC_CP_FWD].time_s - step_attn);
            cp_bwd = (cp - 1) * fmax(0.0, x[MP_WC_CP_BWD].time_s - 2.5 * step_attn);
            cp_bytes = 3.0 * (cp - 1) * chunk;
        } else {
            cp_fwd = x[MP_WC_CP_FWD].time_s;
            cp_bwd = x[MP_WC_CP_BWD].time_s;
            cp_bytes = 2.0 * (cp - 1) * chunk;
        }
    }
    d->tp_fwd_s = 2.0 * tp_pair; /* attention block and MLP */
    d->cp_fwd_s = mo->cp_fwd_s = cp_fwd;
    d->cp_bwd_s = mo->cp_bwd_s = cp_bwd;
    d->cp_bytes = mo->cp_bytes = cp_bytes;
    if (!w->moe)
        return;
    /* The attention pair, the shared experts' pair (a dense MLP on the TP group), expert-TP.
     * EP: not overlapped with compute (Megatron-Core's default; moe_a2a_overlap off in the
     * benchmarks validated); backward sends the gradients the other way, in bf16. */
    mo->tp_fwd_s = tp_pair + (m->moe_shared_experts > 0 ? tp_pair : 0.0);
    if (w->etp > 1)
        mo->tp_fwd_s += x[MP_WC_ETP_AG].time_s + x[MP_WC_ETP_RS].time_s;
    if (w->ep > 1) {
        const double disp_e = p->fp8_comm ? 1.0 : 2.0;
        mo->ep_fwd_s = x[MP_WC_EP_DISPATCH].time_s + x[MP_WC_EP_COMBINE].time_s;
        mo->ep_bwd_s = 2.0 * x[MP_WC_EP_COMBINE].time_s;
        mo->ep_bytes = w->tokens_mb / w->tp * ((double)(w->ep - 1) / w->ep) *
                       (mp_moe_dispatch_bytes_per_token(m, disp_e) + 3.0 * mp_moe_dispatch_bytes_per_token(m, 2.0));
    }
}

/* LM head and loss (last stage): a T x V/tp GEMM forward in 16-bit, two backward, plus the
 * cross-entropy traffic on fp32 logits: ~24 bytes per logit (read bf16 2, write fp32 4, read 4
 * for the loss; backward read 4, write 4, convert 4 -> 2; case C4). An MTP module (DeepSeek-AI
 * 2024 Sec. 2.2): norms, the 2h -> h projection, one layer of the kind the stack ends with, the
 * head again. */
static void head_and_mtp(mp_workload *w, const mp_model *m, double head_f, double ce_s, double proj)
{
    mp_wl_layer *hd = &w->layer[MP_LK_HEAD], *mt = &w->layer[MP_LK_MTP];
    hd->gemm_s = head_f;
    hd->elem_s = ce_s;
    hd->fwd_s = head_f;
    hd->bwd_s = 2.0 * head_f + ce_s;
    hd->bwd_weight_s = head_f;
    if (m->mtp_layers <= 0)
        return;
    const mp_wl_layer *x = &w->layer[w->mtp_moe ? MP_LK_MOE : MP_LK_DENSE];
    mt->gemm_s = proj + x->gemm_s + head_f;
    mt->attn_s = x->attn_s;
    mt->fwd_s = proj + x->fwd_s + head_f;
    mt->bwd_s = 2.0 * proj + x->bwd_s + 2.0 * head_f + ce_s;
    /* ZB-H1's W of an MTP module is left in its backward, as the step counts it. */
    mt->bwd_weight_s = 0.0;
    mt->tp_fwd_s = x->tp_fwd_s;
    mt->tp_recompute_s = x->tp_recompute_s;
    mt->cp_fwd_s = x->cp_fwd_s, mt->cp_bwd_s = x->cp_bwd_s;
    mt->ep_fwd_s = x->ep_fwd_s, mt->ep_bwd_s = x->ep_bwd_s, mt->ep_recompute_s = x->ep_recompute_s;
}

/* Parameters per GPU of each kind (part of the shape). */
void mp_wl_kind_params(mp_workload *w, const mp_model *m)
{
    const mp_param_count *pc = &w->params;
    const double tp = (double)w->tp, D = w->mtp_modules;
    const double epl = w->moe ? (double)m->moe_experts / w->ep * (double)pc->expert / w->etp : 0.0;
    const double head = (double)(pc->lm_head ? pc->lm_head
                                             : (w->pp > 1 ? (int64_t)(w->vocab_padded * (double)m->hidden) : 0));
    const double mtp_experts = w->mtp_moe ? D * (double)(m->moe_experts * pc->expert) : 0.0;
    mp_wl_layer *L = w->layer;
    L[MP_LK_DENSE].params = (double)pc->per_layer / tp;
    L[MP_LK_MOE].params = w->moe_nonexpert_per_layer / tp;
    L[MP_LK_MOE].expert_params = epl;
    L[MP_LK_HEAD].params = ((double)pc->final_norm + head) / tp;
    L[MP_LK_EMBED].params = (double)pc->embedding / tp;
    if (D > 0) {
        L[MP_LK_MTP].params = ((double)pc->mtp - mtp_experts) / tp / D;
        L[MP_LK_MTP].expert_params = w->mtp_moe ? epl : 0.0;
    }
}

/* FSDP2's copy-outs (fsdp = 2): every gather is followed by
 * a copy-out on the compute stream (mp_fsdp_copy_out_s). Only what is sharded is gathered:
 * non-expert parameters when the shard group has more than one rank, experts when their
 * expert-DP group has. The reduce-scatter's copy-in runs on FSDP2's reduce-scatter stream,
 * beside compute, and is not counted. */
static void copy_out(mp_workload *w, const mp_model *m, const mp_plan *p)
{
    const mp_param_count *pc = &w->params;
    const double tp = (double)w->tp, D = w->mtp_modules;
    const double epl = w->layer[MP_LK_MOE].expert_params;
    const double head = (double)(pc->lm_head ? pc->lm_head
                                             : (w->pp > 1 ? (int64_t)(w->vocab_padded * (double)m->hidden) : 0));
    mp_wl_layer *L = w->layer;
    if (!(p->zero == 3 && p->fsdp == 2))
        return;
    const double dsh = w->shard > 1 ? 1.0 : 0.0, esh = w->expert_shard > 1 ? 1.0 : 0.0;
    const double cpp = mp_fsdp_copy_out_s(1.0, w->gather_bytes_per_param, w->rates.mem_Bps);
    w->fsdp_copy_s_per_param = cpp;
    L[MP_LK_DENSE].copy_out_s = dsh * cpp * (double)pc->per_layer / tp;
    L[MP_LK_MOE].copy_out_s = cpp * (dsh * w->moe_nonexpert_per_layer / tp + esh * epl);
    L[MP_LK_EMBED].copy_out_s = dsh * cpp * (double)pc->embedding / tp;
    L[MP_LK_HEAD].copy_out_s = dsh * cpp * ((double)pc->final_norm + head) / tp;
    if (D > 0)
        L[MP_LK_MTP].copy_out_s = cpp * (dsh * L[MP_LK_MTP].params + esh * L[MP_LK_MTP].expert_params);
}

/* The kernels of every layer kind: what depends on the shape alone (not on communication or
 * recompute), so the cache keeps it for the next plan of the same shape. */
typedef struct {
    attn_part a;
    double d[5], mo[5];        /* gemm_s, attn_s, elem_s, bwd_extra_s, elem_bwd_s of a dense / MoE layer */
    double head_f, ce_s, proj; /* LM head GEMM, cross-entropy, MTP projection */
} kernels;
_Static_assert(sizeof(kernels) <= sizeof(((mp_wl_cache *)0)->kern[0].val), "kernels fit the cache");

static void price_kernels(mp_workload *w, const mp_model *m, const mp_plan *p,
                          const mp_workload_opts *opts, kernels *k)
{
    const mp_kernel_rates *r = &w->rates;
    const double T = w->tokens_mb, h = (double)m->hidden, V = w->vocab_padded, tp = (double)w->tp;
    mp_wl_layer l = {0};
    attention(w, m, p, &k->a);
    dense_layer(w, m, p, opts, &k->a, &l);
    k->d[0] = l.gemm_s, k->d[1] = l.attn_s, k->d[2] = l.elem_s, k->d[3] = l.bwd_extra_s, k->d[4] = l.elem_bwd_s;
    l = (mp_wl_layer){0};
    if (w->moe)
        moe_layer(w, m, p, opts, &k->a, &l);
    k->mo[0] = l.gemm_s, k->mo[1] = l.attn_s, k->mo[2] = l.elem_s, k->mo[3] = l.bwd_extra_s, k->mo[4] = l.elem_bwd_s;
    k->head_f = mp_kernel_gemm_s(r, r->bf16_matmul_flops_per_s, T, V / tp, h, 2.0);
    k->ce_s = 24.0 * T * V / tp / r->elem_Bps;
    if (w->act_elem_bytes > 2.0) {
        /* fp32/tf32 training: every element-wise kernel moves 4-byte elements (the counts above
         * are for 16-bit ones) and the LM head runs at the training dtype's rate (kernels.c) */
        const double x = w->act_elem_bytes / 2.0;
        k->d[2] *= x, k->mo[2] *= x, k->d[4] *= x, k->mo[4] *= x;
        k->head_f = mp_kernel_gemm_s(r, r->bf16_matmul_flops_per_s, T, V / tp, h, w->act_elem_bytes);
    }
    k->proj = m->mtp_layers > 0 ? mp_kernel_gemm_s(r, r->matmul_flops_per_s, T, h, 2.0 * h,
                                                   mp_dtype_bytes(p->precision)) : 0.0;
}

/* The kernels, from the cache when a plan of the same shape was priced on the same GPU. */
static void kernels_of(mp_workload *w, const mp_model *m, const mp_plan *p,
                       const mp_workload_opts *opts, mp_wl_cache *cache, kernels *k)
{
    const mp_kernel_rates *r = &w->rates;
    const double key[22] = {r->matmul_flops_per_s, r->bf16_matmul_flops_per_s, r->attn_flops_per_s,
                            r->mem_Bps, r->elem_Bps, r->sms, w->tokens_mb, w->tp, w->cp, p->sp,
                            (double)p->seq, (double)p->mb, p->precision, p->flash, (double)p->doc_len,
                            w->etp, w->ep, w->moe_load, opts->moe_copy_overhead_s, w->vocab_padded,
                            opts->elementwise_bytes_frac, opts->fp8_scale_bytes_per_elem};
    const int slot = mp_wl_memo_slot(p->mb, p->sp * 8 + (int)p->precision, w->tp, w->cp);
    if (cache && cache->kern[slot].set && mp_wl_bytes_eq(cache->kern[slot].key, key, sizeof key)) {
        memcpy(k, cache->kern[slot].val, sizeof *k);
        return;
    }
    price_kernels(w, m, p, opts, k);
    if (cache) {
        memcpy(cache->kern[slot].key, key, sizeof key);
        memcpy(cache->kern[slot].val, k, sizeof *k);
        cache->kern[slot].set = 1;
    }
}

void mp_wl_price_layers(mp_workload *w, const mp_model *m, const mp_plan *p,
                        const mp_workload_opts *opts, mp_wl_cache *cache)
{
    kernels k;
    kernels_of(w, m, p, opts, cache, &k);
    layer_comm(w, m, p, &k.a);
    mp_wl_layer *d = &w->layer[MP_LK_DENSE], *mo = &w->layer[MP_LK_MOE];
    d->gemm_s = k.d[0], d->attn_s = k.d[1], d->elem_s = k.d[2], d->bwd_extra_s = k.d[3], d->elem_bwd_s = k.d[4];
    const double every = p->recompute_every > 1 ? (double)p->recompute_every : 1.0;
    if (w->moe)
        mo->gemm_s = k.mo[0], mo->attn_s = k.mo[1], mo->elem_s = k.mo[2], mo->bwd_extra_s = k.mo[3], mo->elem_bwd_s = k.mo[4];
    mp_wl_finetune_price(w, m, p);
    passes(d, p->recompute, &w->flops, every, p->flash, w->frozen);
    if (w->moe)
        passes(mo, p->recompute, &w->flops, every, p->flash, w->frozen);
    head_and_mtp(w, m, k.head_f, k.ce_s, k.proj);
    if (w->frozen) { /* the LM head is frozen too: its input gradient only */
        mp_wl_layer *hd = &w->layer[MP_LK_HEAD];
        hd->bwd_s -= hd->bwd_weight_s;
        hd->bwd_weight_s = 0.0;
    }
    copy_out(w, m, p);
}
