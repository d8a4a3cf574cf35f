/* src/workload/finetune.c — what fine-tuning and the training dtype change in the workload: the
 * weight matrices of a layer (for LoRA's adapters, Adafactor's factored states and Muon's
 * Newton-Schulz), the adapters' parameters and GEMMs, QLoRA's dequantisation, the frozen base's
 * missing weight gradients and the bytes of an activation element. A full-training plan in a
 * 16-bit dtype leaves every field at its neutral value (frozen 0, grad_frac 1, element bytes 2),
 * so its figures are the ones before this file existed.
 *
 * LoRA (Hu et al. 2021, Sec. 4.1): a frozen W0 (d_in x d_out) plus B A with A: d_in x r and
 * B: r x d_out, i.e. r (d_in + d_out) trained parameters per adapted matrix, h = x W0 + (x A) B.
 * Backward through a frozen layer computes the input gradient dx = dy W0^T only; the weight
 * gradient GEMM (x^T dy) is not run for W0 (PyTorch autograd skips it when requires_grad is
 * False), so a frozen linear layer's backward is one GEMM instead of two.
 * QLoRA (Dettmers et al. 2023, Sec. 3): W0 in NF4 with double quantisation
 * (MP_NF4_BYTES_PER_PARAM), dequantised to the 16-bit compute dtype before each use: in forward,
 * in backward (for dx) and in a recompute forward — a memory-bound pass reading 0.516 and
 * writing 2 bytes per parameter (bitsandbytes' dequantize kernel, then the 16-bit GEMM). */
#include <math.h>

#include "kernels.h"
#include "workload_internal.h"

static int add(mp_wl_matrix *out, int n, double din, double dout, double count, double rows,
               unsigned bit)
{
    if (din > 0 && dout > 0 && count > 0)
        out[n++] = (mp_wl_matrix){din, dout, count, rows, bit};
    return n;
}

int mp_wl_layer_matrices(const mp_workload *w, const mp_model *m, int moe, mp_wl_matrix *out)
{
    const mp_attn_dims *ad = &w->attn;
    const double tp = (double)w->tp, h = (double)m->hidden, T = w->tokens_mb;
    int n = 0;
    /* Column-parallel projections split their output over TP, row-parallel ones their input
     * (Shoeybi et al. 2019, Sec. 3). */
    n = add(out, n, h, ad->q_width / tp, 1, T, MP_LORA_Q);
    n = add(out, n, h, ad->k_width / tp, 1, T, MP_LORA_K);
    n = add(out, n, h, ad->v_width / tp, 1, T, MP_LORA_V);
    n = add(out, n, ad->o_width / tp, h, 1, T, MP_LORA_O);
    if (!moe) {
        const double f = (double)m->ffn_hidden / tp;
        if (m->glu)
            n = add(out, n, h, f, 1, T, MP_LORA_GATE);
        n = add(out, n, h, f, 1, T, MP_LORA_UP);
        n = add(out, n, f, h, 1, T, MP_LORA_DOWN);
        return n;
    }
    const double fe = (double)m->moe_ffn_hidden, S = (double)m->moe_shared_experts;
    if (S > 0) {
        if (m->glu)
            n = add(out, n, h, S * fe / tp, 1, T, MP_LORA_GATE);
        n = add(out, n, h, S * fe / tp, 1, T, MP_LORA_UP);
        n = add(out, n, S * fe / tp, h, 1, T, MP_LORA_DOWN);
    }
    /* Routed experts: E/ep per GPU, each split by etp; tokens per local expert as layers.c
     * routes them (T/tp routed from this GPU, k copies, etp x load). */
    const double El = (double)m->moe_experts / w->ep, fl = fe / w->etp;
    const double Me = El > 0 ? T / tp * (double)m->moe_topk * w->etp * w->moe_load / El : 0.0;
    if (m->glu)
        n = add(out, n, h, fl, El, Me, MP_LORA_GATE);
    n = add(out, n, h, fl, El, Me, MP_LORA_UP);
    n = add(out, n, fl, h, El, Me, MP_LORA_DOWN);
    return n;
}

/* The plan's rank and targets with PEFT's defaults (LoraConfig: r = 8; target_modules for
 * Llama-family models q_proj and v_proj). */
static double lora_rank(const mp_plan *p) { return p->lora_rank > 0 ? (double)p->lora_rank : 8.0; }
static unsigned lora_targets(const mp_plan *p) { return p->lora_targets ? p->lora_targets : MP_LORA_Q | MP_LORA_V; }

static double adapter_params(const mp_workload *w, const mp_model *m, const mp_plan *p, int moe)
{
    mp_wl_matrix mx[12];
    const int n = mp_wl_layer_matrices(w, m, moe, mx);
    const double r = lora_rank(p);
    const unsigned t = lora_targets(p);
    double a = 0.0;
    for (int i = 0; i < n; i++)
        if (mx[i].lora_bit & t)
            a += mx[i].count * r * (mx[i].d_in + mx[i].d_out);
    return a;
}

void mp_wl_finetune_shape(mp_workload *w, const mp_model *m, const mp_plan *p)
{
    const int fp32 = p->precision == MP_DT_FP32 || p->precision == MP_DT_TF32;
    w->act_elem_bytes = fp32 ? 4.0 : 2.0;
    w->grad_frac = 1.0;
    w->frozen = p->finetune == MP_FT_LORA || p->finetune == MP_FT_QLORA;
    w->qlora = p->finetune == MP_FT_QLORA;
    if (fp32) /* fp32 training gathers fp32 parameters (ZeRO-3 / FSDP without mixed precision) */
        w->gather_bytes_per_param = 4.0;
    if (!w->frozen)
        return;
    mp_wl_layer *d = &w->layer[MP_LK_DENSE], *mo = &w->layer[MP_LK_MOE];
    d->adapter_params = adapter_params(w, m, p, 0);
    if (w->moe)
        mo->adapter_params = adapter_params(w, m, p, 1);
    /* FSDP-QLoRA gathers the quantised storage (Answer.AI/bitsandbytes, 2024: the 4-bit weights
     * are stored in a 16-bit-typed flat parameter so FSDP can shard and gather them). */
    if (w->qlora)
        w->gather_bytes_per_param = MP_NF4_BYTES_PER_PARAM;
    /* Only the adapters' gradients are reduced: their share of a layer's parameters (a dense
     * layer's where the model has one, else an MoE layer's). */
    double lp = d->params, la = d->adapter_params;
    if (w->moe && !(m->layers > (int64_t)w->params.moe_layers)) {
        lp = mo->params + mo->expert_params;
        la = mo->adapter_params;
    }
    w->grad_frac = lp > 0 ? la / lp : 0.0;
}

/* A tall-skinny GEMM (one side r <= a few hundred): the roofline of its FLOPs and its HBM
 * traffic, without the 128 x 128-tile wave quantisation of mp_kernel_gemm_s — cuBLAS runs such
 * shapes with narrow tiles or split-K, so a few output tiles do not hold a whole wave. */
static double skinny_gemm_s(const mp_kernel_rates *r, double rate, double M, double N, double K)
{
    const double flop_s = 2.0 * M * N * K / rate;
    const double mem_s = 2.0 * (M * K + K * N + M * N) / r->mem_Bps;
    return flop_s > mem_s ? flop_s : mem_s;
}

/* Adapter GEMMs of one forward pass of a layer: x A then (x A) B for every adapted matrix, in
 * the 16-bit compute dtype (PEFT runs the adapters under the base layer's autocast). */
static double adapter_fwd_s(const mp_workload *w, const mp_model *m, const mp_plan *p, int moe)
{
    mp_wl_matrix mx[12];
    const int n = mp_wl_layer_matrices(w, m, moe, mx);
    const double r = lora_rank(p), R = w->rates.bf16_matmul_flops_per_s;
    const unsigned t = lora_targets(p);
    double s = 0.0;
    for (int i = 0; i < n; i++)
        if (mx[i].lora_bit & t)
            s += mx[i].count * (skinny_gemm_s(&w->rates, R, mx[i].rows, r, mx[i].d_in) +
                                skinny_gemm_s(&w->rates, R, mx[i].rows, mx[i].d_out, r));
    return s;
}

void mp_wl_finetune_price(mp_workload *w, const mp_model *m, const mp_plan *p)
{
    if (!w->frozen)
        return;
    mp_wl_layer *d = &w->layer[MP_LK_DENSE], *mo = &w->layer[MP_LK_MOE];
    d->adapter_s = adapter_fwd_s(w, m, p, 0);
    if (w->moe)
        mo->adapter_s = adapter_fwd_s(w, m, p, 1);
    if (w->qlora) {
        /* read the NF4 code and constants, write the 16-bit weight (memory-bound) */
        const double per_param_s = (MP_NF4_BYTES_PER_PARAM + 2.0) / w->rates.elem_Bps;
        d->dequant_s = per_param_s * d->params;
        if (w->moe)
            mo->dequant_s = per_param_s * (mo->params + mo->expert_params);
    }
}
