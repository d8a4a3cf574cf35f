/* meshplan/plan.h — a parallel training plan, its parsing and its validity.
 *
 * Plan string: comma-separated key=value pairs with the field's standard names. One table
 * (src/plan/plan_keys.h) lists every key with its type, range, default and meaning; parsing,
 * the messages, mp_plan_format, `meshplan help` (mp_plan_keys_help) and the README's list all come
 * from it or are tested against it (docs/plan.md: adding a key is one line of that table):
 *   tp, pp, vpp, dp, cp, ep, sp (0/1), mb, gb, seq, zero (0-3), hsdp (shard group size),
 *   recompute (none|selective|full|op|mlp), precision (bf16|fp16|fp8|tf32|fp32), flash (0/1),
 *   schedule (1f1b|interleaved|gpipe|zb), order (rank order, innermost first, e.g.
 *   tp-cp-ep-dp-pp — the default, Megatron-LM's; dimensions not listed follow, outermost, in the
 *   default order, and must have degree 1),
 *   and for MoE / long context / FP8: etp (expert tensor parallelism, default tp),
 *   cp_algo (ring|allgather), capacity_factor (0 = dropless; else each expert's buffer holds
 *   capacity_factor x its balanced share), imbalance (busiest GPU's routed tokens / mean, >= 1),
 *   fp8_comm (0/1: MoE dispatch and ZeRO parameter all-gathers travel in fp8),
 *   attn_kernel (fa2|fa3|flex: fused-attention kernel generation), doc_len (mean document length
 *   of packed documents), fsdp (1|2: how ZeRO-3 holds the parameters, flat buffers or
 *   per-parameter sharding), and for the model's states: opt_dtype, master_weights, optimizer
 *   (adamw|adam8bit|adafactor|sgd|muon), finetune (full|lora|qlora), lora_rank, lora_targets
 *   (attn|mlp|all or matrices joined by '+', e.g. q+k+v+o), offload (none|optimizer|params|all)
 *   and offload_device (cpu|nvme).
 * Across islands joined by WAN links the plan string also takes sync, inner_steps, compress,
 * fragments, overlap, exchange, split, buckets, transport and ring: they belong to an islands
 * plan, which holds a plan (mp_islands_plan, xsync.h; predicted by mp_islands_predict, islands.h),
 * and are not keys of mp_plan_parse.
 * A plan that cannot be formed (a degree that does not divide heads, KV heads or layers; degrees
 * whose product is not the GPU count; a batch not divisible by mb*dp) is bad input: every reason
 * is listed. Memory fit is not checked here — that is an answer of the estimator.
 */
#ifndef MESHPLAN_PLAN_H
#define MESHPLAN_PLAN_H

#include <stdint.h>
#include "meshplan/hw.h"
#include "meshplan/model.h"
#include "meshplan/status.h"
#include "meshplan/topo.h"

/** The parallel dimensions, as named in the rank order. */
typedef enum { MP_DIM_TP, MP_DIM_CP, MP_DIM_EP, MP_DIM_DP, MP_DIM_PP, MP_DIM_COUNT } mp_dim;
#define MP_DIM_BIT(d) (1u << (unsigned)(d))

/** "tp", "cp", "ep", "dp", "pp"; "?" for an invalid value. */
const char *mp_dim_name(mp_dim d);

typedef enum { MP_SCHED_1F1B, MP_SCHED_INTERLEAVED, MP_SCHED_GPIPE, MP_SCHED_ZB, MP_SCHED_COUNT } mp_schedule;

/** Context-parallel attention: ring (K/V passed to the next rank cp-1 times, overlapped with
 *  the attention of the chunk in hand; Liu et al. 2023, Megatron-Core "p2p") or all-gather
 *  (K/V gathered before attention and dK/dV reduce-scattered after, not overlapped; Llama 3,
 *  Dubey et al. 2024 Sec. 3.3.2, Megatron-Core "all_gather"). */
typedef enum { MP_CP_RING, MP_CP_ALLGATHER, MP_CP_ALGO_COUNT } mp_cp_algo;

const char *mp_cp_algo_name(mp_cp_algo a);

/** Fused-attention kernel generation (with flash = 1): FlashAttention-2 class (the GPU's
 *  attention_flops_frac; Dao 2023), FlashAttention-3 / cuDNN 9 class on Hopper and later
 *  (attention_fa3_flops_frac; Shah et al. 2024), which Transformer Engine uses by default, or
 *  PyTorch's FlexAttention (torch 2.5, Triton): 90% of FlashAttention-2 forward and 85% backward
 *  (PyTorch blog "FlexAttention", 2024-08-07, A100), i.e. 3.5 / (1/0.90 + 2.5/0.85) = 0.864 of the
 *  FA2-class fwd+bwd rate with the 1 : 2.5 split the estimator uses. */
typedef enum { MP_ATTN_FA2, MP_ATTN_FA3, MP_ATTN_FLEX, MP_ATTN_KERNEL_COUNT } mp_attn_kernel;

const char *mp_attn_kernel_name(mp_attn_kernel k);

/** Optimizers (plan key optimizer). Bytes of state per trained parameter, besides the fp32
 *  master weights (src/estimate/memory_states.c gives each with its source): AdamW two moments
 *  (8 in fp32, 4 in bf16); 8-bit Adam two block-wise quantised moments, 2 + 8/2048 (Dettmers et
 *  al. 2021, block size 2048 with one fp32 absmax per block); Adafactor the factored second
 *  moment, 4 (rows + columns) per matrix and no first moment (Shazeer & Stern 2018, beta1 = 0);
 *  SGD one momentum buffer (4); Muon one momentum buffer on the hidden matrices and AdamW on the
 *  embedding, head and norms (Jordan et al. 2024; Liu et al. 2025 "Muon is Scalable"). */
typedef enum { MP_OPT_ADAMW, MP_OPT_ADAM8BIT, MP_OPT_ADAFACTOR, MP_OPT_SGD, MP_OPT_MUON, MP_OPT_COUNT } mp_optimizer;

/** Fine-tuning (plan key finetune): every parameter trained, LoRA (frozen 16-bit base and rank-r
 *  adapters, Hu et al. 2021) or QLoRA (frozen 4-bit NF4 base with double quantisation and
 *  16-bit compute, Dettmers et al. 2023). */
typedef enum { MP_FT_FULL, MP_FT_LORA, MP_FT_QLORA, MP_FT_COUNT } mp_finetune;

/** Offload (plan key offload): ZeRO-Offload of the optimizer states and fp32 gradients (Ren et
 *  al. 2021), of the parameters (ZeRO-Infinity, Rajbhandari et al. 2021; needs zero = 3), or
 *  both; to host RAM or NVMe (plan key offload_device). */
typedef enum { MP_OFF_NONE, MP_OFF_OPTIMIZER, MP_OFF_PARAMS, MP_OFF_ALL, MP_OFF_COUNT } mp_offload;

/** The matrices LoRA adapts (plan key lora_targets), one bit each: the attention projections
 *  q, k, v, o and the MLP's gate, up and down (Hugging Face PEFT's target_modules names
 *  q_proj ... down_proj; for a model without a gate, up is FC1 and down FC2). */
enum {
    MP_LORA_Q = 1u << 0, MP_LORA_K = 1u << 1, MP_LORA_V = 1u << 2, MP_LORA_O = 1u << 3,
    MP_LORA_GATE = 1u << 4, MP_LORA_UP = 1u << 5, MP_LORA_DOWN = 1u << 6,
    MP_LORA_ATTN = 0x0f, MP_LORA_MLP = 0x70, MP_LORA_ALL = 0x7f
};

/** "adamw", "adam8bit", ...; "?" for an invalid value. */
const char *mp_optimizer_name(mp_optimizer o);
/** "full", "lora", "qlora"; "?" for an invalid value. */
const char *mp_finetune_name(mp_finetune f);
/** "none", "optimizer", "params", "all"; "?" for an invalid value. */
const char *mp_offload_name(mp_offload o);

const char *mp_schedule_name(mp_schedule s);
const char *mp_recompute_name(mp_recompute r);

/** The plan. 0 in tp/pp/dp/cp/ep/vpp/mb/gb/seq means "not given" until mp_plan_resolve. */
typedef struct {
    int64_t tp, pp, vpp, dp, cp, ep;
    int sp;             /* Megatron sequence parallelism: 1 on, 0 off, -1 not given (on if tp>1) */
    int64_t mb;         /* micro-batch, sequences */
    int64_t gb;         /* global batch, sequences */
    int64_t seq;        /* tokens per sequence */
    int zero;           /* 0..3; -1 not given (0) */
    int64_t hsdp;       /* HSDP shard group size (ZeRO-3 inside, replicate across); 0 = off */
    mp_recompute recompute;
    mp_dtype precision; /* GEMM precision: bf16, fp16 or fp8 */
    int flash;          /* fused attention: 1 on (default), 0 off */
    int compile;        /* torch.compile bits: 1 the transformer blocks, 2 the loss; 0 eager (default) */
    mp_schedule schedule;
    int schedule_given; /* schedule key was present */
    /* Added later; 0 = not given. */
    int64_t etp;        /* expert tensor parallelism: each expert split over etp GPUs (tp when
                           not given, Megatron-Core's default); etp*ep divides tp*cp*dp */
    mp_cp_algo cp_algo; /* ring (default) or allgather */
    double moe_capacity_factor; /* 0: dropless (Megatron-Core's default); > 0: token-dropping
                                   with buffers padded to cf x the balanced share */
    double moe_imbalance;       /* routed tokens of the busiest GPU / mean, >= 1; 0: the
                                   estimator's default (mp_estimate_opts.moe_imbalance) */
    int fp8_comm;               /* 1: fp8 MoE dispatch and fp8 parameter all-gathers */
    mp_attn_kernel attn_kernel; /* fa2 (default), fa3 or flex */
    int64_t doc_len;            /* plan key doc_len: mean document length, tokens, when each
                                   sequence packs several documents and attention is masked to
                                   each (mp_attn_keys_per_query); 0 = one causal sequence. A
                                   workload input, not a choice: it changes the fused attention
                                   kernel's time, not the model FLOPs MFU counts */
    int fsdp;                   /* plan key fsdp, with zero = 3: 1 (or 0, not given) flat
                                   parameters, which the gather fills in place (PyTorch FSDP1's
                                   FlatParameter, DeepSpeed ZeRO-3, Megatron-Core's FSDP buffers);
                                   2 per-parameter sharding (PyTorch FSDP2 fully_shard, torchtitan),
                                   whose gathered buffer is copied out into each parameter on the
                                   compute stream at every gather (mp_fsdp_copy_out_s) */
    int opt_dtype;              /* plan key opt_dtype: optimizer-state dtype, 0 fp32 (default),
                                   1 bf16 (AdamW moments in bf16: 2 + 2 bytes per parameter) */
    int no_master;              /* plan key master_weights: 0 keeps fp32 master weights
                                   (default, master_weights=1), 1 drops them (master_weights=0:
                                   "pure bf16", the optimizer updates the 16-bit weights) */
    int64_t recompute_every;    /* plan key recompute_every: the recompute mode applies to one
                                   layer in every n (torchtitan selective_ac_option = "n"), the
                                   others store all their activations; 0 or 1: every layer */
    int stack;                  /* plan key stack: an mp_stack_id (meshplan/stack.h); the
                                   profile's kernels, overlaps, era features and fitted
                                   fractions price the step. MP_STACK_DEFAULT when not given */
    int stack_given;            /* the stack key was present */
    int flash_given;            /* the flash key was present (else the stack's and the GPU's
                                   default: no fused attention on megatron-2021 or pre-Ampere) */
    int attn_kernel_given;      /* the attn_kernel key was present (else the stack's default) */
    /* What the model's states weigh (docs/finetune.md;
     * src/estimate/memory_states.c). 0 = the default in each. */
    int optimizer;              /* plan key optimizer: mp_optimizer (adamw default) */
    int finetune;               /* plan key finetune: mp_finetune (full default) */
    int64_t lora_rank;          /* plan key lora_rank: LoRA rank r; 0 = not given (8) */
    unsigned lora_targets;      /* plan key lora_targets: MP_LORA_* bits; 0 = not given (q+v) */
    int offload;                /* plan key offload: mp_offload (none default) */
    int offload_device;         /* plan key offload_device: 0 cpu (default), 1 nvme */
    mp_dim order[MP_DIM_COUNT]; /* rank order, innermost first (default tp, cp, ep, dp, pp) */
    unsigned order_listed;      /* MP_DIM_BIT of the dimensions the order key named; 0 = default */
    int logits_fp32;            /* plan key logits_fp32: 1 the model returns fp32 logits that the
                                   training step holds through the backward (torchtune's
                                   TransformerDecoder, Hugging Face transformers before 4.45);
                                   0 16-bit logits freed before the backward (default) */
    /* Set to MP_PLAN_INIT_MAGIC by mp_plan_init_default and checked by mp_plan_parse,
     * mp_plan_resolve and mp_estimate_plan (mp_plan_check_init): a plan declared and filled by
     * hand, or zeroed, lacks defaults that are not zero (flash = 1, sp = -1, the rank order) and
     * would be priced silently wrong (0.371 MFU instead of 0.507 for the default job). Copies of
     * an initialised plan keep it. Not a plan key; never set it yourself. */
    uint32_t init_magic;
} mp_plan;

/** The value mp_plan_init_default writes into mp_plan.init_magic ("mppl"). */
#define MP_PLAN_INIT_MAGIC 0x6d70706cu

/** Defaults: everything "not given", recompute none, bf16, flash on, 1F1B; sets init_magic. */
void mp_plan_init_default(mp_plan *p);

/** MP_OK when p was set up by mp_plan_init_default (p->init_magic == MP_PLAN_INIT_MAGIC), else
 *  MP_ERR_INPUT after adding "plan.init_magic = 0x...: expected 0x6d70706c: call
 *  mp_plan_init_default(&plan) before setting fields or parsing" to diag (may be NULL). p NULL is
 *  MP_ERR_INPUT too. */
mp_status mp_plan_check_init(const mp_plan *p, mp_diag *diag);

/** Parse a plan string into p (fields not mentioned keep their value). Errors: MP_ERR_PARSE
 *  (not key=value), MP_ERR_INPUT (unknown key — the nearest known key is suggested —, a key given
 *  twice, non-numeric, zero or negative value, value out of range) — one diag line per problem,
 *  naming the key and the value. The keys across islands are not keys here
 *  (mp_islands_plan_parse, xsync.h). */
mp_status mp_plan_parse(const char *text, mp_plan *p, mp_diag *diag);

/** Fill the unset fields from the model and GPU count, then check that the plan can be formed:
 *  dp = gpus / (tp*pp*cp) when not given; mb = 1, gb = dp*mb, seq = model default, vpp = 1,
 *  sp = (tp > 1), zero = 0 (3 with hsdp), schedule interleaved when vpp > 1 else 1F1B. Checks: product tp*pp*cp*dp == gpus; heads % tp,
 *  kv_heads % tp (or tp % kv_heads for replicated KV), ffn_hidden % tp, pp*vpp <= layers
 *  (uneven splits are allowed and reported by the estimator), gb % (mb*dp),
 *  seq % (2*cp) for causal load balancing, ep divides experts, etp (default tp) divides
 *  moe_ffn_hidden and etp*ep divides tp*cp*dp (the expert grid of Megatron-Core: within a
 *  pipeline stage's tp*cp*dp ranks, expert-TP innermost, then EP, then expert-DP), hsdp
 *  divides dp, vpp > 1 only with pp > 1, fp8_comm only with precision fp8, fsdp = 2 only with
 *  zero = 3. Returns
 *  MP_ERR_INPUT listing every reason. */
mp_status mp_plan_resolve(mp_plan *p, const mp_model *m, int64_t num_gpus, mp_diag *diag);

/** A warning, not an error: a resolved plan's seq over the model's context_len (its config's
 *  max_position_embeddings) for a RoPE or ALiBi model, which long-context training does on
 *  purpose (the context is raised with RoPE scaling, e.g. Llama 3's 8K -> 128K stage). Writes
 *  one line to buf and returns 1; 0 (buf empty) when seq fits, the context is unknown (0) or
 *  the positions are learned (refused by mp_plan_resolve instead). */
int mp_plan_context_note(const mp_plan *p, const mp_model *m, char *buf, size_t cap);

/** Write the plan back as a canonical plan string: the keys in table order, the later ones
 *  (hsdp, order, etp ... fsdp) only where they differ from their defaults. Returns chars written
 *  as snprintf does. */
int mp_plan_format(const mp_plan *p, char *buf, size_t cap);

/** What a plan key takes. BOOL is 0/1; TEXT has its own syntax (order). */
typedef enum {
    MP_PLAN_KEY_INT, MP_PLAN_KEY_BOOL, MP_PLAN_KEY_REAL, MP_PLAN_KEY_ENUM, MP_PLAN_KEY_TEXT,
    MP_PLAN_KEY_TYPE_COUNT
} mp_plan_key_type;

/** One key of a plan table, as parsing checks it and help shows it. */
typedef struct {
    const char *name;
    mp_plan_key_type type;
    double min, max;          /* INT, BOOL, REAL: the accepted range, both ends included */
    const char *const *names; /* ENUM: the accepted names (nnames of them) */
    int nnames;
    const char *syntax;       /* TEXT: the value's syntax in words, e.g. "tp-cp-ep-dp-pp" */
    const char *sample;       /* TEXT: a value that parses */
    const char *default_text; /* the default in words ("1", "gpus/(tp*pp*cp)") */
    const char *help;         /* one line: what the key means, with its unit */
} mp_plan_key;

/** The i-th key of the plan table (0-based, in the order mp_plan_format writes them); NULL when
 *  i is out of range. The keys across islands: mp_islands_plan_key_at (xsync.h). */
const mp_plan_key *mp_plan_key_at(int i);

/** The plan keys' help, one line per key ("  tp  1..16777216: tensor-parallel degree (default
 *  1)"), written into buf of capacity cap as snprintf does (returns the length the whole text
 *  needs; buf may be NULL with cap 0 to ask for it). */
int mp_plan_keys_help(char *buf, size_t cap);

/** The plan's rank order as text: "default" when the order key was not given, else the listed
 *  dimensions innermost first joined by '-' ("tp-dp-cp-pp"), written into buf (cap bytes; 32
 *  is enough). Returns the text. */
const char *mp_plan_order_text(const mp_plan *p, char *buf, size_t cap);

/** Stride in rank order between neighbours of dimension d: the product of the sizes of the
 *  dimensions inner to d in p->order (sizes tp, cp, ep, dp/ep, pp: EP is carved out of DP, as in
 *  Megatron-Core; when ep does not divide dp it is folded into the data dimensions). A resolved
 *  plan is expected; an order that is not a permutation counts as the default. */
int64_t mp_plan_stride(const mp_plan *p, mp_dim d);

/** The group of ranks that differ only in the dimensions of `dims` (MP_DIM_BIT bits; e.g. TP, or
 *  CP|EP|DP for the gradient reduction, EP|DP for dense data parallelism). When those dimensions
 *  are adjacent in the order (skipping degree-1 ones) the group is *inner and *outer = {1, 1};
 *  otherwise *inner is the innermost run and *outer the rest (topo.h mp_group_place_2d; a third
 *  run is folded into the outer one). */
void mp_plan_group(const mp_plan *p, unsigned dims, mp_group *inner, mp_group *outer);

#endif
