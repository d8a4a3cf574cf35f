/* meshplan/model.h — the transformer being trained: dimensions, parameter counts, FLOPs per
 * token and activation memory per layer.
 *
 * Sources (each function names its own):
 *  - Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using
 *    Megatron-LM" (arXiv 2104.04473), Sec. 5.1 / Appendix: FLOPs per iteration.
 *  - Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models"
 *    (arXiv 2205.05198), Sec. 4 and Table 2: activation bytes per layer.
 *  - Dao 2022/2023 (FlashAttention, arXiv 2205.14135 / 2307.08691): fused attention stores
 *    Q, K, V, O and the per-row softmax statistics instead of the s x s score matrices.
 */
#ifndef MESHPLAN_MODEL_H
#define MESHPLAN_MODEL_H

#include <stdint.h>
#include "meshplan/hw.h"
#include "meshplan/status.h"

typedef enum { MP_POS_LEARNED, MP_POS_ROPE, MP_POS_ALIBI, MP_POS_COUNT } mp_position;

/** A decoder-only transformer (dense or MoE). All counts are element counts. */
typedef struct {
    char key[MP_KEY_CAP];
    char name[MP_NAME_CAP];
    int64_t layers;        /* L, 1..2^24 */
    int64_t hidden;        /* h, >= 1 */
    int64_t heads;         /* a, >= 1 */
    int64_t kv_heads;      /* 1..heads, divides heads */
    int64_t head_dim;      /* per-head width; hidden/heads when the catalog says null */
    int64_t ffn_hidden;    /* dense FFN inner width */
    int glu;               /* 1: gated FFN, three matrices */
    int64_t vocab;         /* V before padding */
    int64_t vocab_pad_multiple; /* pad V up to a multiple of this (x tp when Megatron pads per rank) */
    int tied_embeddings;   /* LM head shares the input embedding */
    mp_position position;
    int64_t seq_len;       /* default training sequence length */
    int rmsnorm;           /* 1: RMSNorm (no bias), 0: LayerNorm */
    int bias;              /* linears carry biases */
    int dropout;           /* dropout on (stores masks) */
    /* MoE; experts == 0 means dense. */
    int64_t moe_experts, moe_topk, moe_ffn_hidden, moe_shared_experts, moe_dense_layers;
    char source[MP_SOURCE_CAP];
} mp_model;

/** Check a model's dimensions. Returns MP_OK or MP_ERR_INPUT with one diag line per bad field
 *  ("model.kv_heads = 5: must divide heads (32)"). Every dimension is in [1, 2^40], layers at
 *  most 2^24, and the parameter count at most 1e18. */
mp_status mp_model_check(const mp_model *m, mp_diag *diag);

/** Vocabulary size after padding to a multiple of (vocab_pad_multiple * tp). tp >= 1. */
int64_t mp_model_padded_vocab(const mp_model *m, int tp);

/** Parameter counts (elements, not bytes). Exact sums of the weight shapes:
 *  attention: h*(a*d) [Q] + 2*h*(kv*d) [K,V] + (a*d)*h [O] (+ biases);
 *  FFN: (2 or 3)*h*f (+ biases); norms: 2h per layer (+2h LayerNorm biases) and h final;
 *  embedding V_pad*h; LM head V_pad*h unless tied; learned positions seq*h. */
typedef struct {
    int64_t per_layer;        /* one dense transformer layer */
    int64_t attention_per_layer;
    int64_t ffn_per_layer;
    int64_t norm_per_layer;
    int64_t embedding;        /* token embedding (+ learned positions) */
    int64_t lm_head;          /* 0 when tied */
    int64_t final_norm;
    int64_t total;            /* everything, counted once */
    int64_t matmul_per_layer; /* weights that take part in matmuls (no norms, no biases) */
} mp_param_count;

/** Fill out with the model's parameter counts for a given tp (which only affects padding). */
void mp_model_params(const mp_model *m, int tp, mp_param_count *out);

/** FLOPs of one token at sequence length seq (multiply-add = 2 FLOPs).
 *  model_per_token: 6*N_matmul + 6*h*V + 12*L*(a*d)*s — forward + backward, attention counted
 *  non-causally, as Narayanan et al. 2021 (Sec. 5.1) and MosaicML/torchtitan MFU do.
 *  fwd_per_token: one forward pass with the same conventions (= model_per_token / 3).
 *  recompute_full_per_token: extra FLOPs of full recompute (one more forward of every layer,
 *  not the LM head): Narayanan et al. 2021, the 4x factor of eq. (3).
 *  recompute_selective_per_token: extra FLOPs of recomputing only the attention core
 *  (Korthikanti et al. 2022 Sec. 5: QK^T and attention over V, 4*a*d*s per token per layer). */
typedef struct {
    double fwd_matmul_per_token;    /* 2 * matmul params of the layers */
    double fwd_attn_per_token;      /* 4 * L * a*d * s (non-causal) */
    double fwd_lm_head_per_token;   /* 2 * h * V */
    double fwd_per_token;
    double model_per_token;         /* 3 * fwd */
    double recompute_full_per_token;
    double recompute_selective_per_token;
} mp_flops;

void mp_model_flops(const mp_model *m, int64_t seq, mp_flops *out);

typedef enum { MP_RC_NONE, MP_RC_SELECTIVE, MP_RC_FULL, MP_RC_COUNT } mp_recompute;

/** What is stored for backward in one transformer layer, in bytes, for one micro-batch of b
 *  sequences of s tokens on one GPU of a TP group of t ranks.
 *  Base: Korthikanti et al. 2022 Sec. 4.1-4.2 (34*s*b*h + 5*a*s^2*b bytes at 16-bit with
 *  dropout, MHA, 4h FFN), generalised tensor by tensor:
 *    attention: LN input 2sbh, QKV input 2sbh, Q 2sbh, K and V 2*s*b*kv*d each, output-projection
 *    input 2sbh, dropout mask sbh; without flash attention also softmax output 2*a*s^2*b and, with
 *    dropout, mask a*s^2*b + dropout output 2*a*s^2*b; with flash attention the row statistics
 *    (4*a*s*b, fp32) instead.
 *    FFN: LN input 2sbh, FC1 input 2sbh, activation input 2sbf (x2 with GLU), FC2 input 2sbf,
 *    dropout mask sbh.
 *  Without SP the LN inputs, QKV/FC1 inputs and dropout masks are replicated on every TP rank
 *  (the 10*s*b*h term of Table 2); with SP everything is divided by t.
 *  Selective recompute drops the s^2 terms; full recompute keeps only the layer input (2sbh, /t
 *  with SP). act_bytes is the element size of stored activations (2 for bf16/fp16 and for fp8
 *  training, whose saved activations stay 16-bit in Transformer Engine). */
typedef struct {
    double stored_bytes;       /* kept from forward to backward per layer */
    double attention_s2_bytes; /* part of stored_bytes that scales with s^2 */
    double working_bytes;      /* one layer's full activations (live while it is recomputed) */
} mp_layer_act;

void mp_layer_activation(const mp_model *m, int64_t seq, int64_t micro_batch, int tp, int sp,
                         int cp, int flash, mp_recompute rc, mp_layer_act *out);

/** Parse a Hugging Face config.json (Llama, Mistral, Mixtral, Qwen2/3, Qwen-MoE, GPT-2, GPT-NeoX,
 *  MPT, DeepSeek-V3 field names) from text. On error returns MP_ERR_PARSE or MP_ERR_INPUT with the
 *  field named in diag. key/name are set from the file's "model_type" unless already set. */
mp_status mp_model_from_hf_json(const char *json_text, size_t len, mp_model *out, mp_diag *diag);

#endif
