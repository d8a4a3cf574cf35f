/* meshplan/workload.h — the workload description: what one phase of a job runs on each GPU,
 * built once from a model, a cluster and a resolved plan, priced once, and consumed by every
 * estimator and by the simulator.
 *
 * A workload is
 *   - a phase (mp_wl_phase): which pass structure runs — today one training step; inference
 *     phases (prefill, decode with a KV cache) are further phases of the same description;
 *   - the shape: tokens per micro-batch per GPU, micro-batches, the parallel groups as placed by
 *     the plan's rank order;
 *   - layer kinds (mp_layer_kind) with, per kind, the compute of each pass of one micro-batch on
 *     one GPU (forward, input-backward, weight-backward, recompute, FSDP2 copy-out), priced by
 *     the kernel roofline (src/workload/kernels.c), and the parameters the kind holds per GPU;
 *   - per pipeline stage the count of each kind (mp_workload_stage, computed on demand in
 *     O(vpp), so a plan of any pp needs no storage), and the runs of like stages
 *     (mp_workload_run) so that consumers compute each kind of stage once;
 *   - every collective as data (mp_wl_coll: op, bytes, group, the tier that bounds it, the
 *     window it may hide in, which step-time part it charges), each priced once through coll
 *     (src/coll) when the workload is built.
 * Overlap rules (what of a collective its window hides, the pipeline bubble, the DP exposure)
 * belong to the consumers: src/estimate/step.c for the analytical step, src/sim/ for the
 * timeline.
 *
 * Where a new phase goes (docs/workload.md): a value of mp_wl_phase; its shape in
 * mp_workload_shape (tokens per step; for decode one token per sequence and the KV cache as the
 * attention context); which passes its layer kinds run (forward only) in src/workload/layers.c;
 * its collectives in the same table (src/workload/comm.c); and its own rules (time to first
 * token, tokens/s per request) in a consumer such as src/infer/ — not a second estimator.
 *
 * Building one is allocation-free: the search builds one per evaluated plan.
 */
#ifndef MESHPLAN_WORKLOAD_H
#define MESHPLAN_WORKLOAD_H

#include "meshplan/coll.h"
#include "meshplan/model.h"
#include "meshplan/plan.h"
#include "meshplan/status.h"
#include "meshplan/topo.h"

/** What runs. Append-only; a new phase (MP_WL_PREFILL: one forward of the prompt writing the
 *  KV cache; MP_WL_DECODE: one forward per generated token reading it) reuses the layer
 *  kinds, the kernel roofline and the collectives table with its own shape and passes. */
typedef enum {
    MP_WL_TRAIN_STEP, /* forward + backward of gb sequences, gradient reduction, optimizer */
    MP_WL_PREFILL,    /* one forward of every prompt token, writing the KV cache (mp_wl_infer) */
    MP_WL_DECODE,     /* one forward of one new token per sequence, reading the KV cache */
    MP_WL_PHASE_COUNT
} mp_wl_phase;

/** Kinds of unit a pipeline stage holds. X-macro: (enum suffix, name). */
#define MP_LAYER_KINDS(X)                                                                      \
    X(DENSE, "dense")         /* attention + dense FFN */                                     \
    X(MOE, "moe")             /* attention + router + routed and shared experts */            \
    X(MTP, "mtp")             /* one multi-token-prediction module (last stage) */            \
    X(HEAD, "head")           /* final norm, LM head and loss (last stage) */                 \
    X(EMBED, "embedding")     /* token embedding (first stage; parameters only) */
typedef enum {
#define MP_WL_X(e, n) MP_LK_##e,
    MP_LAYER_KINDS(MP_WL_X)
#undef MP_WL_X
    MP_LK_COUNT
} mp_layer_kind;
const char *mp_layer_kind_name(mp_layer_kind k);

/** Achievable kernel rates on the plan's GPU, after the sustained fractions (the roofline). */
typedef struct {
    double matmul_flops_per_s;      /* large GEMM at the plan's precision */
    double bf16_matmul_flops_per_s; /* large GEMM in 16-bit (attention core, LM head, router) */
    double attn_flops_per_s;        /* fused attention, forward + backward rate */
    double mem_Bps;                 /* measured HBM bandwidth (unsustained: STREAM-like copies) */
    double elem_Bps;                /* sustained bandwidth of element-wise kernels */
    int sms;                        /* streaming multiprocessors (wave quantisation) */
} mp_kernel_rates;

/** Compute of one unit of a kind for one micro-batch on one GPU, seconds, and what it holds.
 *  Communication of one pass is listed with it (sums of the collectives table, exposed after
 *  the window each may hide in when that window is inside the unit: CP behind attention). */
typedef struct {
    double gemm_s;       /* forward linear layers */
    double attn_s;       /* forward attention core */
    double elem_s;       /* forward memory-bound element-wise kernels */
    double elem_bwd_s;   /* their backward (norm, residual, activation, rotary, dropout kernels
                            counted one by one; MoE permutation and fp8 casts 2x forward) */
    double bwd_extra_s;  /* backward-only element-wise work (fp8 casts of output gradients) */
    double fwd_s;        /* forward pass */
    double bwd_s;        /* whole backward: input gradient + weight gradient */
    double bwd_weight_s; /* weight-gradient share of bwd_s (ZB-H1's W); input = bwd - weight */
    double recompute_s;  /* recomputation before the backward (recompute mode) */
    double copy_out_s;   /* FSDP2 copy-out after one gather of the unit's parameters (fsdp=2) */
    double tp_fwd_s;     /* TP/SP (and expert-TP) collectives of one forward pass */
    double tp_recompute_s; /* TP collectives of the recompute forward */
    double cp_fwd_s, cp_bwd_s; /* CP K/V exchange of a forward / backward, exposed part */
    double ep_fwd_s, ep_bwd_s; /* MoE dispatch + combine of a forward / backward */
    double ep_recompute_s; /* dispatch + combine again in a full-recompute forward */
    double cp_bytes;     /* K/V bytes one GPU sends per layer, forward + backward */
    double ep_bytes;     /* all-to-all bytes one GPU sends per MoE layer, forward + backward */
    double params;       /* non-expert parameters per GPU (after TP) */
    double expert_params; /* routed-expert parameters per GPU */
    /* Fine-tuning (plan finetune lora|qlora; 0 otherwise; src/workload/finetune.c): */
    double adapter_params; /* LoRA adapter parameters of one unit per GPU */
    double adapter_s;    /* the adapters' forward GEMMs (x A, then (x A) B) of one pass */
    double dequant_s;    /* QLoRA: the 4-bit weights dequantised to 16-bit, one pass */
} mp_wl_layer;

/** QLoRA's stored base weight, bytes per parameter: a 4-bit NF4 code, one 8-bit absmax per block
 *  of 64 and one fp32 second-level constant per 256 blocks (double quantisation): 4 + 8/64 +
 *  32/(64 x 256) = 4.127 bits (Dettmers et al. 2023, "QLoRA", Sec. 3 "Double Quantization"). */
#define MP_NF4_BYTES_PER_PARAM ((4.0 + 8.0 / 64.0 + 32.0 / (64.0 * 256.0)) / 8.0)

/** One weight matrix of a layer as one GPU holds it (after TP / expert-TP): d_in x d_out, count
 *  copies (local experts), rows tokens per micro-batch through it, and its MP_LORA_* bit. */
typedef struct {
    double d_in, d_out, count, rows;
    unsigned lora_bit;
} mp_wl_matrix;


/** The step-time part a collective is charged to when exposed (mp_time's fields). */
typedef enum { MP_WL_PART_TP, MP_WL_PART_CP, MP_WL_PART_EP, MP_WL_PART_PP, MP_WL_PART_DP } mp_wl_part;

/** Where a collective may hide (the consumer's overlap rule decides how much it does). */
typedef enum {
    MP_WIN_NONE,           /* on the critical path (TP, EP all-to-all, the pipeline sends) */
    MP_WIN_ATTENTION,      /* the ring step's attention on the chunk in hand (CP ring) */
    MP_WIN_NEIGHBOUR,      /* the neighbouring layer's compute (ZeRO-3 prefetch) */
    MP_WIN_LAST_BACKWARD,  /* the last micro-batch's backward (gradient buckets) */
    MP_WIN_FIRST_FORWARD,  /* the first micro-batch's forward (updated-parameter gathers) */
    MP_WIN_HEAD            /* the LM head's forward + backward (ZeRO-3 root module) */
} mp_wl_window;

/** Every collective of the training step. X-macro: (enum suffix, what, how often). */
#define MP_WL_COLLS(X)                                                                         \
    X(TP_A, "TP all-reduce (all-gather with SP)", "2 per dense layer per pass")              \
    X(TP_B, "TP reduce-scatter (SP only)", "as TP_A")                                        \
    X(CP_FWD, "CP K/V ring step or all-gather", "cp-1 ring steps per layer forward")         \
    X(CP_BWD, "CP dK/dV ring step or reduce-scatter", "cp-1 ring steps per layer backward")  \
    X(ETP_AG, "expert-TP all-gather of routed tokens", "1 per MoE layer per pass")           \
    X(ETP_RS, "expert-TP reduce-scatter of routed tokens", "1 per MoE layer per pass")       \
    X(EP_DISPATCH, "MoE dispatch all-to-all", "1 per MoE layer forward")                     \
    X(EP_COMBINE, "MoE combine all-to-all", "1 per MoE layer forward, 2 backward")           \
    X(PP_SEND, "pipeline send/recv of activations", "2 per micro-batch per chunk")           \
    X(Z3_AG, "ZeRO-3 all-gather of a dense layer", "2 per layer per micro-batch")            \
    X(Z3_RS, "ZeRO-3 reduce-scatter of a dense layer", "1 per layer per micro-batch")        \
    X(Z3_MOE_AG, "ZeRO-3 all-gather of an MoE layer's non-expert part", "as Z3_AG")          \
    X(Z3_MOE_RS, "ZeRO-3 reduce-scatter of an MoE layer's non-expert part", "as Z3_RS")      \
    X(Z3_EXPERT_AG, "ZeRO-3 all-gather of an MoE layer's experts", "as Z3_AG")               \
    X(Z3_EXPERT_RS, "ZeRO-3 reduce-scatter of an MoE layer's experts", "as Z3_RS")           \
    X(Z3_ROOT_AG, "ZeRO-3 all-gather of embedding/LM head", "2 per micro-batch")             \
    X(Z3_ROOT_RS, "ZeRO-3 reduce-scatter of embedding/LM head", "1 per micro-batch")         \
    X(DP_AR, "ZeRO-0 gradient all-reduce", "1 per step")                                     \
    X(DP_RS, "ZeRO-1/2 gradient reduce-scatter", "1 per step (ZeRO-2: per micro-batch)")     \
    X(DP_AG, "ZeRO-1/2 updated-parameter all-gather", "1 per step")                          \
    X(EDP_AR, "expert gradient all-reduce over expert-DP", "1 per step")                     \
    X(EDP_RS, "expert gradient reduce-scatter over expert-DP", "as DP_RS")                   \
    X(EDP_AG, "expert parameter all-gather over expert-DP", "as DP_AG")                      \
    X(HSDP_AR, "HSDP all-reduce across replicas", "1 per step")
typedef enum {
#define MP_WL_X(e, what, freq) MP_WC_##e,
    MP_WL_COLLS(MP_WL_X)
#undef MP_WL_X
    MP_WC_COUNT
} mp_wl_coll_id;
const char *mp_wl_coll_name(mp_wl_coll_id id);

/** One collective as data, priced once. A collective the plan does not run (a group of one
 *  rank, no bytes, another ZeRO stage) has time_s 0 and group.size 1. */
typedef struct {
    mp_coll_op op;
    double bytes;         /* per collective, nccl-tests convention (per rank for send/recv) */
    mp_group in, out;     /* out.size copies of in, out.stride apart ({1,1}: a plain group) */
    int two_d;            /* priced with mp_coll_time_2d (any of the algorithms) */
    mp_wl_part part;      /* the step-time part it charges when exposed */
    mp_wl_window window;  /* where it may hide */
    double time_s;        /* alpha-beta on the tiers the group spans (coll.h) */
    int tier;             /* tier whose bandwidth bounds it, -1 when not run */
    int algo;             /* mp_coll_algo chosen */
} mp_wl_coll;

/** Assumptions the workload is priced with (the estimator's calibrated values, estimate.h). */
typedef struct {
    double gemm_sustained_frac;          /* (0, 1] of the measured best GEMM rate */
    double attention_sustained_frac;     /* (0, 1] of the catalogued fused-attention rate */
    double memory_bound_sustained_frac;  /* (0, 1] of measured HBM bandwidth */
    double moe_imbalance;                /* default routing load factor, >= 1 */
    double moe_copy_overhead_s;          /* dispatcher time per routed copy, >= 0 */
    /* Added with the stack profiles (meshplan/stack.h); mp_workload_opts_init's values leave
     * the kernels as before (inference keeps them). */
    double elementwise_bytes_frac;       /* (0, 4]: the stack's element-wise traffic / kernels.c's count */
    double fp8_scale_bytes_per_elem;     /* [0, 8]: > 0 = dynamic fp8 scaling (torchao): an amax pass
                                            of this many bytes per cast element, the norm-adjacent
                                            inputs cast apart, weights recast every pass */
    int zero3_gather_per_tensor;         /* 1: a dense layer's ZeRO-3 gather is one all-gather per
                                            parameter tensor (the stack's zero3_gather_per_tensor,
                                            meshplan/stack.h), each with its latency; 0: one */
    double zero3_gather_host_s;          /* [0, 1] s: host time each per-tensor gather adds (the
                                            stack's zero3_gather_host_s); 0 by default */
    double zero3_gather_host_rank_s;     /* [0, 1e-3] s: and per rank of the shard group (the
                                            stack's zero3_gather_host_rank_s); 0 by default */
    double zero3_reduce_bytes;           /* [0, 8]: bytes per gradient element of the ZeRO-3
                                            reduce-scatter (the stack's); 0 = fp32 (4), default */
} mp_workload_opts;

/** Most runs of like stages a workload keeps (mp_workload.run). */
#define MP_WL_MAX_RUNS 32

/** Counts of one pipeline stage. */
typedef struct {
    double n[MP_LK_COUNT]; /* units of each kind (layers; MTP modules; 1 or 0 head, embedding) */
    double params;         /* non-expert parameters per GPU */
    double expert_params;  /* routed-expert parameters per GPU */
    double nonlinear_params; /* of params: embedding and LM head (no fp8 copies) */
} mp_wl_stage;

/** A run of like stages: stages first .. first + count - 1, each holding s. */
typedef struct {
    int first, count;
    mp_wl_stage s;
} mp_wl_run;

/** The description. Plain data; the caller owns it (about 6 KiB, no pointers). */
typedef struct {
    mp_wl_phase phase;
    /* shape */
    int tp, pp, cp, vpp, ep, etp, moe, fp8;
    double microbatches;     /* per DP rank per step, M */
    double tokens_mb;        /* tokens of one micro-batch on one GPU, T = mb * seq / cp */
    double vocab_padded;     /* V after padding for tp */
    double moe_load;         /* routed tokens of the busiest GPU / mean (1 dense) */
    double dp_ranks;         /* dp * cp: ranks a non-expert parameter is replicated over */
    double shard;            /* ZeRO shard group (hsdp, or dp * cp) */
    double expert_dp;        /* ranks an expert is replicated over */
    double expert_shard;     /* expert shard group */
    double gather_bytes_per_param; /* 2, or 1 with fp8_comm */
    double mtp_modules;      /* DeepSeek-V3 MTP depth on the last stage */
    int mtp_moe;             /* the MTP module's layer is an MoE layer */
    mp_group g_tp, g_cp, g_ep, g_edp, g_pp, g_shard_in, g_shard_out, g_rep_in, g_rep_out;
    mp_kernel_rates rates;
    mp_attn_dims attn;
    mp_param_count params;   /* the model's counts for this tp */
    mp_flops flops;          /* the model's FLOPs per token at this seq (mp_model_flops) */
    mp_layer_act act, act_moe; /* activation bytes of one dense / MoE layer, one micro-batch */
    double moe_nonexpert_per_layer; /* non-expert parameters of one MoE layer (before TP) */
    double fsdp_copy_s_per_param;   /* FSDP2 copy-out per parameter and gather, s (0 off) */
    /* The model's states (src/workload/finetune.c). */
    int frozen;              /* finetune lora|qlora: the base is frozen (no weight gradients) */
    int qlora;               /* finetune qlora: the frozen base is stored in 4-bit NF4 */
    double grad_frac;        /* gradient bytes reduced / 4 x parameters: 1 full; adapters only */
    double act_elem_bytes;   /* bytes of an activation element: 2, or 4 for tf32/fp32 training */
    /* per stage, maxima over stages */
    int layers_per_stage_min, layers_per_stage_max;
    double stage_params_max;        /* non-expert params per GPU of the stage holding most */
    double stage_expert_params_max; /* its expert params per GPU */
    double stage_linear_params_max; /* its linear-layer params (fp8 copies) */
    double expert_params_per_gpu;   /* most expert params on one GPU of any stage */
    mp_wl_layer layer[MP_LK_COUNT];
    mp_wl_coll coll[MP_WC_COUNT];
    /* Runs of consecutive stages holding the same counts (most pipelines have at most four:
     * the first, those with one more layer, the rest, the last), so consumers compute each
     * once; 0 when there are more than MP_WL_MAX_RUNS (mp_workload_run then gives one stage per
     * run). Kept last: only the count is cleared. Use mp_workload_runs / mp_workload_run. */
    int nruns;
    mp_wl_run run[MP_WL_MAX_RUNS];
} mp_workload;

void mp_workload_opts_init(mp_workload_opts *o);

/** Bytes per gradient element of the ZeRO-3 reduce-scatter under o: o->zero3_reduce_bytes when
 *  set (> 0: the stack's reduce precision), else 4 (fp32 gradients, comm.c). The one rule the
 *  workload's collectives and the timeline simulator (src/sim/build.c) both read. o not NULL. */
double mp_workload_zero3_reduce_bytes(const mp_workload_opts *o);

/** The weight matrices of one dense (moe = 0) or MoE (moe = 1) layer of w into out (at most 12);
 *  returns how many. The attention projections q, k, v, o (MLA: the same widths from
 *  mp_attn_dims), the MLP's gate (GLU only), up and down; an MoE layer's shared experts and its
 *  E/ep local routed experts (the router is not listed). Needs w's shape. */
int mp_wl_layer_matrices(const mp_workload *w, const mp_model *m, int moe, mp_wl_matrix *out);

/** A cache for evaluating many plans of one model on one cluster (the search): each distinct
 *  collective (op, bytes, group) is priced through coll once, then looked up (direct-mapped,
 *  MP_WL_CACHE_SLOTS entries; a collision re-prices and replaces), and the model's values that
 *  depend only on a few plan keys (parameter counts per tp, attention geometry, FLOPs per seq,
 *  activation bytes per layer shape) are kept for the next plan with the same keys. It holds a
 *  copy of the model and the cluster it was filled for and empties itself when either differs
 *  (the model's numbers and the cluster's GPU count, GPU and tiers, byte for byte), so a cluster
 *  changed in place, or another one at the same address, is never priced from stale entries. Results with and without a cache are identical. The caller owns
 *  it (about 180 KiB) and gives one to each thread; mp_wl_cache_init before first use. */
#define MP_WL_MEMO 256
#define MP_WL_CACHE_SLOTS 512 /* a power of two (comm.c takes the hash's top 9 bits) */
typedef struct {
    int used, op, two_d, tier, algo;
    double bytes, time_s;
    mp_group in, out;
} mp_wl_cache_slot;
typedef struct {
    int set, nruns, lmin, lmax;
    int64_t key[5];
    double params_max, expert_max, linear_max, expert_per_gpu;
    mp_wl_run run[MP_WL_MAX_RUNS];
} mp_wl_stage_memo;
typedef struct {
    int have;                   /* model and cluster below are valid */
    mp_model model;             /* what the entries were computed for */
    mp_cluster cluster;
    /* Set to 1 (after mp_wl_cache_init) by a caller that guarantees the model and cluster it
     * passes do not change at their addresses while it uses the cache (the search, for one
     * mp_search call): the cache is then checked byte for byte against them only when another
     * address is passed. 0 (mp_wl_cache_init's): checked on every use. */
    int trust_addresses;
    const mp_model *model_at;   /* the addresses last checked (trust_addresses) */
    const mp_cluster *cluster_at;
    int64_t hits, misses;       /* collective look-ups since the cache was last emptied */
    int params_tp;              /* params below are for this tp (0: none) */
    mp_param_count params;
    mp_attn_dims attn;
    int64_t flops_seq;          /* flops below are for this seq (0: none) */
    mp_flops flops;
    /* Small direct-mapped memos (MP_WL_MEMO entries, indexed by the micro-batch size and a few
     * keys: the search's innermost loop runs over micro-batch sizes): activation bytes per
     * layer, and the layer kinds' kernel times (layers.c), each valid for its key. */
    struct {
        int set;
        double key[11];
        mp_layer_act act, act_moe;
    } act[MP_WL_MEMO];
    struct {
        int set;
        double key[22], val[18];
    } kern[MP_WL_MEMO];
    /* The stages' runs and maxima per (pp, vpp, tp, ep, etp): an MoE model's stages are
     * walked one by one otherwise. */
    mp_wl_stage_memo stages[4];
    /* The DP/ZeRO collectives (MP_WC_Z3_AG .. MP_WC_HSDP_AR) per their inputs (comm.c): the
     * same for every micro-batch size of a plan. */
    struct {
        int set;
        double key[28];
        mp_wl_coll coll[MP_WC_HSDP_AR - MP_WC_Z3_AG + 1];
    } dp[4];
    /* The dp slot whose collectives `shape` (below) holds in its coll entries, -1 none: set
     * when the shape is priced in place, cleared when the shape is rebuilt or the slot
     * replaced (comm.c data_colls_cached skips the copy then). */
    int dp_in_shape;
    int groups_set;             /* the groups below are for the plan keys groups_key */
    int64_t groups_key[12];
    mp_group groups[9];
    /* The last shape built apart from what a micro-batch size or a rank order changes
     * (workload.c shape_line), for the plan shape_key (its mb, sp, recompute mode, CP
     * algorithm and rank order cleared) and the options shape_opts: the search's consecutive plans differ mostly in
     * those keys (a line's micro-batches, its communication variants). */
    int shape_set;
    /* Names the shape in `shape` (0: none): a new number, unique in the process, each time one
     * is built. A consumer that keeps values derived from the shape alone (the estimator's
     * memory of a line apart from its micro-batch, estimate.h mp_est_memo) keeps them for one
     * generation. */
    uint64_t shape_gen;
    mp_plan shape_key;
    mp_workload_opts shape_opts;
    mp_workload shape;
    mp_wl_cache_slot slot[MP_WL_CACHE_SLOTS];
} mp_wl_cache;
void mp_wl_cache_init(mp_wl_cache *cache);

/** Build and price the workload of `phase` for model m on cluster c under plan p (resolved:
 *  mp_plan_resolve). opts NULL: defaults. Returns MP_OK, or MP_ERR_INPUT when the plan is not
 *  resolved for c's GPU count or the GPU has no tensor cores of the plan's precision (diag
 *  names which). Allocation-free. */
mp_status mp_workload_build(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                            mp_wl_phase phase, const mp_workload_opts *opts, mp_workload *w,
                            mp_diag *diag);

/** The two halves of mp_workload_build, for callers that need the shape first: mp_workload_shape
 *  fills everything but the times (groups, parameters, per-stage maxima; enough for memory), so
 *  a plan over memory need not be priced; mp_workload_price then prices the kernels and the
 *  collectives. Same arguments and errors as mp_workload_build; price needs a shaped w and the
 *  cache given to mp_workload_shape for it (NULL: none; mp_wl_cache). */
mp_status mp_workload_shape(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                            mp_wl_phase phase, const mp_workload_opts *opts, mp_wl_cache *cache,
                            mp_workload *w, mp_diag *diag);
void mp_workload_price(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                       const mp_workload_opts *opts, mp_wl_cache *cache, mp_workload *w);

/** mp_workload_shape into the cache's own description, copying nothing: *out points at the
 *  cache's shape (the line's memo above, its micro-batch and rank-order values filled for p),
 *  valid until the next call with this cache. The caller may price it (mp_workload_price with
 *  the same cache) but must not change its shape. The same workload, byte for byte, as
 *  mp_workload_shape gives (tests/test_estimate_fast.c); cache must not be NULL. On an error
 *  the cache's shape is emptied (*out points at it, all zero). For the estimator's hot path:
 *  a line's shape is about 6 KiB, and copying it was a twelfth of an evaluation. */
mp_status mp_workload_shape_in(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                               mp_wl_phase phase, const mp_workload_opts *opts, mp_wl_cache *cache,
                               mp_workload **out, mp_diag *diag);

/** Stage i (0 .. pp-1) of w: its counts of each kind and parameters. O(vpp) for an MoE model
 *  whose dense and MoE layers interleave, else O(1). i out of range: all zero. */
void mp_workload_stage(const mp_workload *w, const mp_model *m, int i, mp_wl_stage *out);

/** Runs of consecutive like stages: their number (1 .. pp), and run r's stages first ..
 *  first + count - 1 with their counts in *s (mp_workload_stage of each). In stage order. */
int mp_workload_runs(const mp_workload *w);
void mp_workload_run(const mp_workload *w, const mp_model *m, int r, mp_wl_stage *s, int *first,
                     int *count);

/** 1 when stages a and b hold the same count of every kind (then their parameters, memory
 *  apart from in-flight activations, and time are the same: consumers compute them once per
 *  class of stages). */
int mp_workload_stage_same(const mp_wl_stage *a, const mp_wl_stage *b);

/** One micro-batch's compute of stage s on one GPU: forward + backward + FSDP2 copy-outs
 *  (compute_s), recompute (recompute_s), and its TP, CP and EP communication on the critical
 *  path, seconds. The pipeline sends and the DP/ZeRO collectives are not included. */
typedef struct {
    double compute_s, recompute_s, tp_s, cp_s, ep_s, copy_out_s;
    double fwd_s;       /* forward share of the total (compute + its TP/CP/EP) */
    double weight_s;    /* weight-gradient GEMMs (ZB-H1's W) */
    double attn_s;      /* attention core, forward + backward */
    double total_s;     /* compute + recompute + tp + cp + ep */
} mp_wl_stage_time;
void mp_workload_stage_time(const mp_workload *w, const mp_wl_stage *s, int last,
                            mp_wl_stage_time *out);

/** Time of the copy-out that follows one all-gather under PyTorch FSDP2's per-parameter sharding
 *  (plan fsdp = 2): the gather lands rank by rank in one buffer and every parameter is then copied
 *  out of it into its own tensor (foreach_all_gather_copy_out, torch.split_with_sizes_copy on
 *  the current stream: torch/distributed/_composable/fsdp/_fsdp_collectives.py in torch 2.4-2.5,
 *  torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py since), reading and
 *  writing each gathered byte once. A flat-parameter FSDP (FSDP1, DeepSpeed ZeRO-3) gathers into
 *  the parameters' own storage and has no such copy.
 *  params: parameters gathered, count (>= 0); bytes_per_param: bytes each travels in (2 for
 *  bf16/fp16, 1 for fp8, > 0); mem_Bps: the GPU's HBM bandwidth, bytes/s (> 0; the estimator
 *  passes the measured STREAM figure: a large contiguous copy is what STREAM measures).
 *  Returns 2 * params * bytes_per_param / mem_Bps seconds; 0 for a non-positive or non-finite
 *  argument. */
double mp_fsdp_copy_out_s(double params, double bytes_per_param, double mem_Bps);

/* ---- inference phases (src/workload/infer_phase.c) -----------------------------------------
 * Prefill and decode reuse the layer kinds (dense, MoE, head), the kernel roofline
 * (src/workload/kernels.c) and coll; what differs is the shape: tokens per step (the prompt, or
 * one per sequence), the attention context (the KV cache) and forward only. The consumer that
 * turns them into TTFT and TPOT is src/infer/. */

/** The shape of one inference step on one model replica (tp x pp GPUs; ep inside them). */
typedef struct {
    mp_wl_phase phase;        /* MP_WL_PREFILL or MP_WL_DECODE */
    int tp, pp, ep;           /* degrees, >= 1; ep divides tp * pp's GPUs and the experts */
    double seqs;              /* sequences in this step (one pipeline micro-batch), > 0 */
    double new_tokens;        /* tokens each sequence adds this step: the prompt, or 1 */
    double context;           /* KV tokens each new token attends to on average (causal prefill:
                                 (in + 1) / 2; decode: the tokens already cached) */
    double weight_bytes;      /* bytes per linear-layer weight: 2 bf16/fp16, 1 fp8/int8, 0.5 fp4/int4 */
    double kv_bytes;          /* bytes per cached K/V element: 2 bf16, 1 fp8 */
    mp_dtype compute_dtype;   /* GEMM tensor-core rate: MP_DT_FP8 for fp8/fp4 weights on a GPU
                                 with fp8, else 16-bit (weight-only int8/int4 dequantize to it) */
    double gemm_frac;         /* (0, 1] of the measured GEMM rate the engine's kernels reach */
    double attn_frac;         /* (0, 1] of the catalogued fused-attention rate */
    double mem_frac;          /* (0, 1] of the measured HBM bandwidth that weight and KV streams reach */
    double moe_load;          /* routed tokens of the busiest expert / mean, >= 1 */
} mp_wl_infer_shape;

/** One inference step of one pipeline stage's layers (the stage holding most), priced. Times in
 *  seconds on one GPU; flop and bytes are that GPU's. */
typedef struct {
    double gemm_s;            /* linear layers (attention projections, FFN, experts, LM head) */
    double attn_s;            /* attention core against the KV cache */
    double elem_s;            /* norms, residuals, activation, rotary */
    double tp_s;              /* TP all-reduces (2 per layer) on the tiers the TP group spans */
    double ep_s;              /* MoE dispatch + combine all-to-all */
    double pp_s;              /* one send of the activations to the next stage */
    double compute_bound_s;   /* of gemm_s + attn_s: the kernels whose FLOPs bound them */
    double memory_bound_s;    /* of gemm_s + attn_s + elem_s: the kernels HBM bound */
    double total_s;           /* one stage: gemm + attn + elem + tp + ep (pp_s apart) */
    double flop;              /* model FLOPs of the stage (GEMMs + attention) */
    double weight_bytes_read; /* weight bytes streamed from HBM */
    double kv_bytes_read;     /* KV cache bytes read (decode) or written (prefill) */
    double layers;            /* transformer layers of the stage */
    mp_kernel_rates rates;    /* the rates used */
} mp_wl_infer;

/** KV cache bytes per token of the whole model (every layer, every KV head, no TP split):
 *  2 * layers * kv_heads * head_dim * kv_bytes for MHA/GQA/MQA; MLA keeps one latent and the
 *  decoupled rotary key per token, (kv_lora_rank + qk_rope_head_dim) * layers * kv_bytes
 *  (DeepSeek-V2, arXiv 2405.04434, Sec. 2.1.3 and Table 1). kv_bytes > 0. */
double mp_wl_kv_bytes_per_token(const mp_model *m, double kv_bytes);

/** The same, held by one GPU of stage 0 under tp x pp: KV heads split over TP (a GPU holds at
 *  least one head: vLLM replicates KV heads when tp > kv_heads), an MLA latent replicated on
 *  every TP rank (vLLM and SGLang without DP attention), layers split over pp (the stage with
 *  most layers). */
double mp_wl_kv_bytes_per_token_gpu(const mp_model *m, double kv_bytes, int tp, int pp);

/** Price one inference step of shape s for model m on cluster c (the TP group on the innermost
 *  GPUs, pipeline stages next). Returns MP_OK, or MP_ERR_INPUT (diag names the field) when a
 *  degree does not divide heads, layers or experts or a fraction is out of range. */
mp_status mp_workload_infer(const mp_model *m, const mp_cluster *c, const mp_wl_infer_shape *s,
                            mp_wl_infer *out, mp_diag *diag);

#endif
