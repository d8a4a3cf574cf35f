/* src/workload/kernels.c — the kernel roofline: achievable GEMM, grouped-GEMM, attention and
 * element-wise rates of a GPU at a plan's precision, and the time of one kernel from its shape.
 * What a layer runs (which GEMMs, how many bytes) is in layers.c; this file only prices. */
#include <math.h>

#include "kernels.h"

/* Fused attention fwd+bwd as a fraction of the bf16 peak when none is catalogued: the H100 FA2
 * figure (FlashAttention-3 paper, Shah et al. 2024, Fig. 5), the lower of the two we have. */
#define MP_DEFAULT_ATTN_FRAC 0.35
/* HBM: measured when catalogued, else this share of the peak (mean measured/peak of A100 80GB
 * 1680/2039 = 0.82 and H100 3040/3350 = 0.91 in validation/gpus.csv). */
#define MP_DEFAULT_HBM_FRAC 0.865

void mp_kernel_rates_of(const mp_gpu *g, mp_dtype prec, mp_attn_kernel kern,
                        const mp_workload_opts *opts, mp_kernel_rates *r)
{
    mp_dtype half = g->peak_flops_per_s[MP_DT_BF16] > 0 ? MP_DT_BF16 : MP_DT_FP16;
    /* GEMM rates: the catalog's one rule (mp_gpu_best_gemm_flops, src/catalog/gemm_rate.c) */
    r->bf16_matmul_flops_per_s = mp_gpu_best_gemm_flops(g, half);
    r->matmul_flops_per_s = g->peak_flops_per_s[prec] > 0 ? mp_gpu_best_gemm_flops(g, prec) : r->bf16_matmul_flops_per_s;
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
    if ((prec == MP_DT_FP32 || prec == MP_DT_TF32) && g->peak_flops_per_s[prec] > 0) {
        /* fp32 training: no 16-bit kernel runs. The GEMMs that stay 16-bit in mixed precision
         * (LM head, router, attention's batched GEMMs) run at the training dtype's rate; the
         * fused attention kernels are 16-bit only (FlashAttention), so PyTorch's SDPA falls
         * back to its fp32 memory-efficient kernel, taken at the same share of that dtype's
         * peak as the 16-bit kernel reaches of its own (ASSUMED; no fp32 attention
         * measurement catalogued). fp32 = IEEE fp32 on the CUDA cores, PyTorch's default for
         * matmuls (torch.backends.cuda.matmul.allow_tf32 = False since 1.12); tf32 = the
         * tensor cores' TF32 mode. */
        r->bf16_matmul_flops_per_s = mp_gpu_best_gemm_flops(g, prec);
        r->attn_flops_per_s = af * g->peak_flops_per_s[prec];
    }
    r->mem_Bps = g->measured_mem_bw_Bps > 0 ? g->measured_mem_bw_Bps : g->mem_bw_Bps * MP_DEFAULT_HBM_FRAC;
    r->sms = g->sm_count > 0 ? g->sm_count : 108;
    /* Sustained end-to-end fractions (calibrated on validation/runs.csv; docs/model.md). */
    r->matmul_flops_per_s *= opts->gemm_sustained_frac;
    r->bf16_matmul_flops_per_s *= opts->gemm_sustained_frac;
    r->attn_flops_per_s *= opts->attention_sustained_frac;
    r->elem_Bps = r->mem_Bps * opts->memory_bound_sustained_frac;
}

/* Time of one GEMM C[M,N] = A[M,K] B[K,N] with element size e bytes: roofline of the achievable
 * rate, derated by wave quantisation over the SMs with 128x128 output tiles (the cuBLAS/CUTLASS
 * default tile for large bf16 GEMMs on Ampere/Hopper; NVIDIA "Matrix Multiplication Background
 * User's Guide", wave quantization), against the HBM traffic of reading A, B and writing C. */
double mp_kernel_gemm_s(const mp_kernel_rates *r, double rate, double M, double N, double K, double e)
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
double mp_kernel_grouped_gemm_s(const mp_kernel_rates *r, double rate, double G, double M, double N,
                                double K, double e)
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

/* Imperfect overlap of a GEMM's operand stream with its MMAs (the constants' source: kernels.h). */
double mp_kernel_overlap_s(double M, double mem_s, double flop_s)
{
    double a = MP_KERNEL_GEMM_OVERLAP * fmin(1.0, fmax(0.0, M) / MP_KERNEL_GEMM_OVERLAP_FULL_M);
    return fmax(mem_s, flop_s) + a * fmin(mem_s, flop_s);
}

double mp_fsdp_copy_out_s(double params, double bytes_per_param, double mem_Bps)
{
    if (!(params > 0) || !(bytes_per_param > 0) || !(mem_Bps > 0) || !isfinite(params) ||
        !isfinite(bytes_per_param) || !isfinite(mem_Bps))
        return 0.0;
    return 2.0 * params * bytes_per_param / mem_Bps;
}

/* Element-wise HBM traffic of one layer's forward per token, in bytes: two norms (read h, write
 * h each), two residual adds (read 2h, write h each), the activation function (GELU: read f,
 * write f; SwiGLU: read 2f, write f), rotary embedding on Q and K (read and write), and dropout
 * (read h, write h, 1-byte mask) twice when on. Counted from the kernels Megatron-LM and PyTorch
 * run (fused norm, fused bias-activation); the backward's count is mp_kernel_elem_bwd_bytes_per_token.
 * f_act is the width whose activation runs here per token (0 for an MoE
 * layer, whose expert activations are counted with the routed tokens). */
double mp_kernel_elem_fwd_bytes_per_token(const mp_model *m, const mp_attn_dims *ad, double f_act,
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


/* Element-wise HBM traffic of the same kernels' backward per token, in bytes, kernel by kernel
 * (each reads the output gradient and what its formula needs, writes the input gradient):
 *   norm (apex fused LayerNorm / TE RMSNorm backward): read dy and the saved input, write dx:
 *     3 per element (the weight-gradient partial sums are per column, not per token);
 *   residual: the stream's gradient is the pass-through plus the branch's input gradient, one
 *     add (read 2, write 1) per residual, as in forward;
 *   activation: GELU (Megatron bias_gelu_back) reads dy and the saved input, writes dx: 3f;
 *     SwiGLU (Megatron-Core fused swiglu backward) reads dy and both saved halves, writes both
 *     halves' gradients: 5f;
 *   rotary: the inverse rotation of dq and dk, read and write as in forward;
 *   dropout: read dy and the 1-byte mask, write dx: the forward's bytes.
 * For a GPT layer without SP at f/tp = h/2 that is 37h bytes against the forward's 32h (1.16x);
 * the rule "backward = 2x forward" it replaces charged 64h, and on Korthikanti et al. 2022
 * Table 4 (22B, TP 8, one layer: SP saves 0.5 ms of the 7.7 ms forward and 0.1 ms of the 11.9 ms
 * backward) it made the unsharded norms and dropouts of a run without SP cost ~0.7 ms per layer
 * too much (docs/stacks.md). */
double mp_kernel_elem_bwd_bytes_per_token(const mp_model *m, const mp_attn_dims *ad, double f_act,
                                          int tp, int sp)
{
    double h = (double)m->hidden, f = f_act / tp;
    double qd = ad->q_width / tp, kd = ad->k_width / tp;
    double hs = sp ? h / tp : h;
    double elems = 2.0 * 3.0 * hs + 2.0 * 3.0 * hs + (m->glu ? 5.0 : 3.0) * f;
    if (m->position == MP_POS_ROPE)
        elems += ad->mla ? 2.0 * (double)m->qk_rope_head_dim * ((double)m->heads / tp + 1.0)
                         : 2.0 * (qd + kd);
    if (ad->mla)
        elems += 3.0 * ((double)m->q_lora_rank + (double)m->kv_lora_rank);
    double bytes = 2.0 * elems;
    if (m->dropout)
        bytes += 2.0 * (2.0 * 2.0 * hs + hs);
    return bytes;
}
