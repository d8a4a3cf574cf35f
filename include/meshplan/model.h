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
    /* MoE; experts == 0 means dense. moe_ffn_hidden is one routed expert's inner width;
     * moe_shared_experts counts always-on experts in units of that width; moe_dense_layers is
     * how many layers keep a dense FFN of width ffn_hidden (see moe_layer_freq for where). */
    int64_t moe_experts, moe_topk, moe_ffn_hidden, moe_shared_experts, moe_dense_layers;
    char source[MP_SOURCE_CAP];
    /* ---- Fields below were added after the first release; 0 means "absent" throughout, so
     * a model zeroed with memset and filled as before keeps its meaning. ---- */
    /* Multi-head latent attention (DeepSeek-V2/V3; DeepSeek-AI 2024, arXiv 2412.19437 Sec.
     * 2.1.1). kv_lora_rank > 0 turns it on: Q = W_uq norm(W_dq x) (q_lora_rank; 0 = one full
     * projection h -> heads*(nope+rope)), [c_kv, k_rope] = W_dkv x (kv_lora_rank + rope),
     * K_nope, V = W_ukv norm(c_kv); per head the query/key width is nope + rope and the value
     * width v. K and V are materialised per head for training (heads x width), so kv_heads is
     * ignored when MLA is on. */
    int64_t q_lora_rank;
    int64_t kv_lora_rank;
    int64_t qk_rope_head_dim;
    int64_t qk_nope_head_dim;  /* 0: head_dim */
    int64_t v_head_dim;        /* 0: head_dim */
    /* Sliding-window attention (Mistral 7B; gpt-oss alternates 128-token windows with full
     * layers): attn_window tokens of context in attn_window_layers layers (0 with a window:
     * all layers). */
    int64_t attn_window;
    int64_t attn_window_layers;
    /* Where the dense layers are: moe_layer_freq <= 1 -> the first moe_dense_layers layers
     * (DeepSeek first_k_dense_replace); k > 1 -> layer i (0-based) is MoE iff (i + 1) % k == 0,
     * up to layers - moe_dense_layers MoE layers (GShard/Switch every other layer, Qwen-MoE
     * decoder_sparse_step). */
    int64_t moe_layer_freq;
    /* Multi-token prediction modules (DeepSeek-V3 Sec. 2.2: 1): each is a projection 2h x h,
     * two norms and one more transformer layer on the last stage, sharing the embedding and the
     * LM head, whose forward it runs again. */
    int64_t mtp_layers;
    /* Context length: the most tokens (prompt + output) one sequence may hold, the Hugging Face
     * config's max_position_embeddings (n_positions for GPT-2, max_seq_len for MPT). 0 = unknown:
     * nothing is checked. infer and serve refuse in + out over it; training only warns (long-
     * context training raises it with RoPE scaling), except with learned positions, whose table
     * has no rows past it (mp_plan_resolve refuses seq over it, as Megatron-LM's validate_args
     * asserts max_position_embeddings >= seq_length). */
    int64_t context_len;
} mp_model;

/** 1 if the model has routed experts. */
int mp_model_is_moe(const mp_model *m);

/** Number of MoE layers among layers [first, first + count) (0-based), by the layout rule of
 *  moe_layer_freq above. O(1). count <= 0 gives 0. */
int64_t mp_model_moe_layers_in(const mp_model *m, int64_t first, int64_t count);

/** Attention geometry shared by the parameter, FLOP, activation and time models.
 *  MHA/GQA: qk_head = v_head = head_dim, K and V have kv_heads heads.
 *  MLA: qk_head = nope + rope, v_head = v_head_dim, K and V are materialised for all heads. */
typedef struct {
    double qk_head, v_head;   /* per-head query/key and value widths */
    double q_width;           /* heads * qk_head: columns of Q */
    double k_width;           /* columns of K (kv_heads * qk_head; MLA heads * qk_head) */
    double v_width;           /* columns of V (kv_heads * v_head; MLA heads * v_head) */
    double o_width;           /* heads * v_head: input of the output projection */
    double matmul_params;     /* weights of the attention matmuls */
    double tp_replicated_params; /* of which not split by TP (MLA down-projections) */
    double latent_width;      /* MLA: q_lora + kv_lora + rope extra activations per token */
    int mla;                  /* 1 for multi-head latent attention */
} mp_attn_dims;

void mp_model_attn_dims(const mp_model *m, mp_attn_dims *out);

/** Bytes one token puts on the wire in one MoE dispatch (or combine) all-to-all before the
 *  (ep-1)/ep share that leaves the GPU: topk copies of the h-wide hidden state at elem_bytes
 *  each (2 for bf16, 1 for fp8 dispatch; DeepSeek-AI 2024 Sec. 3.3.2). 0 for a dense model. */
double mp_moe_dispatch_bytes_per_token(const mp_model *m, double elem_bytes);

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
    int64_t total;            /* everything, counted once (all experts, MTP modules) */
    int64_t matmul_per_layer; /* weights that take part in matmuls (no norms, no biases) */
    /* MoE and the newer fields (0 for a dense model unless said otherwise). */
    int64_t dense_layers;     /* layers with a dense FFN (= layers for a dense model) */
    int64_t moe_layers;       /* layers with routed experts */
    int64_t expert;           /* one routed expert: (3 with GLU, else 2) * h * moe_ffn_hidden */
    int64_t router_per_layer; /* the gate h x experts */
    int64_t shared_per_layer; /* shared experts of one MoE layer */
    int64_t moe_per_layer;    /* one MoE layer: attention + router + all routed and shared
                                 experts + norms */
    int64_t routed_total;     /* all routed experts of all MoE layers (what EP shards) */
    int64_t mtp;              /* multi-token-prediction modules (projection, norms, layer) */
    int64_t activated;        /* used by one token: embedding, layers with top-k + shared
                                 experts and router, final norm, LM head; not MTP
                                 (DeepSeek-V3's "37B activated" convention) */
    int64_t activated_matmul_layers; /* matmul weights one token passes in the layers (the
                                        FLOP basis: attention, dense FFNs, top-k + shared
                                        experts; not the router) */
} mp_param_count;

/** Fill out with the model's parameter counts for a given tp (which only affects padding). */
void mp_model_params(const mp_model *m, int tp, mp_param_count *out);

/** FLOPs of one token at sequence length seq (multiply-add = 2 FLOPs).
 *  model_per_token: 6*N_matmul + 6*h*V + 12*L*(a*d)*s — forward + backward, attention counted
 *  non-causally, as Narayanan et al. 2021 (Sec. 5.1) and MosaicML/torchtitan MFU do.
 *  N_matmul counts only activated weights: for MoE layers the top-k routed and the shared
 *  experts (Fedus et al. 2021; DeepSeek-AI 2024), so MFU is against activated FLOPs; the router
 *  is left out as Megatron-LM does (2*h*E per token, < 0.5%), so a token's FLOPs do not depend
 *  on the number of experts.
 *  MLA uses its own widths: 2*s*(heads*(nope+rope)) for QK^T and 2*s*heads*v for the values;
 *  windowed layers count min(window, s) keys; MTP modules add their layer, projection and one
 *  more LM-head pass.
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
    /* Added later: */
    double fwd_attn_causal_per_token; /* the attention core's real work: causal (each query
                                         sees (s+1)/2 keys on average; a window w sees
                                         w - w(w-1)/(2s)), as FlashAttention computes it */
    double attn_equal_seq;            /* sequence length at which the causal attention core
                                         equals the layers' matmul FLOPs (forward); 0 if never */
    double recompute_op_per_token;    /* torchtitan per-op SAC: the matmuls it recomputes (the
                                         2nd, 4th, ... of each layer: K, output projection, and
                                         one of three GLU FFN matmuls or one of two plain ones) */
    double recompute_mlp_per_token;   /* MLP-only checkpointing: the FFN matmuls once more */
} mp_flops;

void mp_model_flops(const mp_model *m, int64_t seq, mp_flops *out);

/** Keys one query attends to on average in a causal layer: the attention core's work per token
 *  is proportional to it.
 *  seq_tokens: tokens per sequence, > 0. window_tokens: sliding window (0 or >= seq_tokens: none).
 *  doc_tokens: mean document length when sequences pack several documents and attention is
 *  masked to each one (FlexAttention's document mask, FlashAttention's varlen kernels, Llama 3's
 *  "mask between documents" (Dubey et al. 2024 Sec. 3.2)); 0: one causal sequence.
 *  Formula (exact under its assumption): document boundaries fall as a Poisson process of mean
 *  spacing mu = doc_tokens (exponential lengths), so a query at position i sees
 *  E[min(X, i, w)] keys with X ~ Exp(mu): mu(1 - e^(-min(i,w)/mu)). Averaged over i uniform in
 *  [0, s]:  (mu/s) * [ w - mu(1 - e^(-w/mu)) + (s - w)(1 - e^(-w/mu)) ]  with w = min(window, s).
 *  Limits: mu -> infinity gives the plain causal average s/2 (and w - w^2/(2s) with a window);
 *  mu << s gives mu. Without documents the discrete averages (s+1)/2 and w - w(w-1)/(2s)
 *  (Megatron-Bridge flop_utils) are returned, so plans without documents are unchanged.
 *  Returns keys per query (> 0), or 0 for seq_tokens <= 0. */
double mp_attn_keys_per_query(double seq_tokens, double window_tokens, double doc_tokens);

/** mp_attn_keys_per_query averaged over a model's layers: its windowed layers (attn_window,
 *  attn_window_layers) with their window, the others without. seq > 0; doc_len >= 0 (0: no
 *  documents). Returns keys per query, 0 for seq <= 0. */
double mp_model_keys_per_query(const mp_model *m, int64_t seq, int64_t doc_len);

/** Activation recomputation (plan key recompute):
 *  none;
 *  selective: Megatron's, the attention core (Korthikanti et al. 2022 Sec. 5);
 *  full: every layer, storing only its input (Chen et al. 2016; Megatron --recompute-granularity
 *    full; torchtitan mode = "full"; DeepSpeed activation_checkpointing);
 *  op: torchtitan's per-op selective AC (activation_checkpoint.mode = "selective",
 *    selective_ac_option = "op"): saves the outputs of every other matmul, of SDPA and of TP
 *    reduce-scatters, recomputes the rest (torchtitan/distributed/activation_checkpoint.py,
 *    _save_list and its policy);
 *  mlp: only the MLP block is checkpointed (Megatron-Core --recompute-modules mlp).
 *  With plan key recompute_every = n > 1 the mode applies to one layer in n (torchtitan's
 *  selective_ac_option = "n"); the other layers store everything.
 *  The search tries the first MP_RC_SEARCHED modes unless the user pins one. */
typedef enum { MP_RC_NONE, MP_RC_SELECTIVE, MP_RC_FULL, MP_RC_OP, MP_RC_MLP, MP_RC_COUNT } mp_recompute;
#define MP_RC_SEARCHED 3

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

/** The same for one MoE layer: the attention part as mp_layer_activation, and in place of the
 *  dense FFN what Megatron-Core's MoE layer keeps for backward (MoE layer in
 *  megatron/core/transformer/moe): the router's fp32 probabilities (4*E bytes per token), the
 *  permuted expert inputs (2h per routed copy), the FC1 output (2*(2 with GLU, else 1)*f/etp),
 *  the FC2 input (2f/etp) and the expert outputs kept for the probability-weighted combine
 *  (2h), over R = b*s/cp * topk * etp / tp * load routed copies per GPU (load: the load factor
 *  of the busiest GPU, the capacity factor when tokens are padded to capacity, >= 1); shared
 *  experts as a dense FFN of width shared * moe_ffn_hidden split by tp. For a dense model this
 *  equals mp_layer_activation. */
void mp_moe_layer_activation(const mp_model *m, int64_t seq, int64_t micro_batch, int tp, int sp,
                             int cp, int etp, int flash, mp_recompute rc, double load,
                             mp_layer_act *out);

/** mp_layer_activation (moe = 0) or mp_moe_layer_activation (moe = 1) under torch.compile:
 *  compiled bit 1 (plan.compile & 1) is the block compiled (0: eager, the same figures), whose min-cut partitioner
 *  (torch._functorch.partitioners.min_cut_rematerialization_partition) recomputes the saved
 *  outputs of fusible pointwise ops: the norm outputs (4sbh), the dropout masks, the FC2 input
 *  (2sbf; routed experts 2 fe/etp per copy) and without fused attention the attention dropout
 *  mask and output (3as^2b) are not stored (docs/memory.md). Other arguments as there. */
void mp_layer_activation_compiled(const mp_model *m, int64_t seq, int64_t micro_batch, int tp, int sp,
                                  int cp, int etp, int flash, mp_recompute rc, int moe, double load,
                                  int compiled, mp_layer_act *out);

/** Parse a Hugging Face config.json (Llama, Mistral, Mixtral, Qwen2/3, Qwen-MoE, Phi-3, Gemma and
 *  Gemma 2, Falcon, GPT-2, GPT-NeoX, MPT, DeepSeek-V2/V3 field names) from text. On error returns
 *  MP_ERR_PARSE or MP_ERR_INPUT with the field named in diag (an encoder-decoder such as T5 is
 *  MP_ERR_INPUT). key/name are set from the file's "model_type" unless already set. */
mp_status mp_model_from_hf_json(const char *json_text, size_t len, mp_model *out, mp_diag *diag);

/** The warnings of a config.json that mp_model_from_hf_json reads: a model_type outside the
 *  families it knows (read by the common field names), and fields it reads as something simpler
 *  (Falcon's parallel_attn, Gemma 2's logit soft-capping). One line per warning is added to
 *  warnings ("config.json: warning: FIELD: what"); returns their number (0 for text that is not
 *  a JSON object). */
int mp_model_hf_warnings(const char *json_text, size_t len, mp_diag *warnings);

#endif
