/* meshplan/estimate.h — the analytical estimator: memory per GPU and per pipeline stage, step
 * time with its parts, throughput, MFU/HFU and the bottleneck.
 *
 * Evaluating a plan is allocation-free and takes about a microsecond (bench/), so the search
 * can call it millions of times. It builds the plan's workload (meshplan/workload.h) and applies
 * the overlap and step rules to it. The equations and their sources are in docs/model.md and
 * next to each formula in src/workload/ and src/estimate/.
 */
#ifndef MESHPLAN_ESTIMATE_H
#define MESHPLAN_ESTIMATE_H

#include "meshplan/model.h"
#include "meshplan/plan.h"
#include "meshplan/status.h"
#include "meshplan/topo.h"
#include "meshplan/workload.h"

/** Most pipeline stages reported individually (a cap; stages beyond are summarised by the max). */
#define MP_MAX_STAGES 512

/** The estimator's memo for a caller evaluating many plans through one mp_wl_cache (the
 *  search, one per thread): what a plan's memory holds apart from its micro-batch size — every
 *  stage class's weights, gradients, optimizer states, buffers and optimizer-step transient,
 *  and the runtime memory — kept for the cache's shape (mp_wl_cache.shape_gen), so that the
 *  plans of one line (its micro-batch sizes, its communication variants, the memory checks of
 *  a skipped tail) compute only the activations and logits. The estimate is byte for byte the
 *  one without it (tests/test_estimate_fast.c). Opaque (about 20 KiB); create, pass through
 *  mp_estimate_opts.memo beside its cache, destroy. */
typedef struct mp_est_memo mp_est_memo;

/** A new, empty memo; NULL when out of memory. */
mp_est_memo *mp_est_memo_create(void);

/** Free a memo (NULL: nothing). */
void mp_est_memo_destroy(mp_est_memo *memo);

/** Memory of one GPU, bytes, by component. */
typedef struct {
    double weights;      /* model weights in the compute dtype (+ fp8 copies) */
    double gradients;    /* gradient buffers */
    double optimizer;    /* fp32 master weights + Adam moments */
    double activations;  /* stored for backward, all in-flight micro-batches */
    double logits;       /* LM-head output and its fp32 upcast (last stage only) */
    double buffers;      /* ZeRO gathered layers and unsharded gradients (PyTorch tensors) */
    double step_temp;    /* transient of the optimizer step (fp32 gradient copy of DeepSpeed,
                            torch AdamW's foreach temporaries); non-zero only when the step is
                            the peak moment (docs/memory.md "The peak") */
    double runtime;      /* CUDA context, cuBLAS/cuDNN workspaces: outside the allocator */
    double nccl;         /* NCCL channel buffers of every communicator the rank belongs to */
    double allocator_reserve; /* caching allocator: reserved minus allocated (fragmentation) */
    double total;        /* sum of the above: what nvidia-smi shows at the peak */
    double capacity;     /* GPU memory capacity */
    double allocator_margin; /* the verdict's uncertainty band, bytes (margin_frac x total) */
    double allocated;    /* peak of allocated tensors (torch.cuda.max_memory_allocated):
                            weights .. buffers, step_temp */
    double reserved;     /* what the caching allocator holds at the peak
                            (torch.cuda.max_memory_reserved; torchtitan's logged peak):
                            allocated + allocator_reserve, without the CUDA context, the library
                            workspaces and NCCL's buffers, which are not the allocator's */
} mp_memory;

/** Whether a plan's peak memory fits its GPU, with the stated margin (mp_estimate.verdict). */
typedef enum {
    MP_VERDICT_FITS,  /* total <= capacity / (1 + margin): fits with the margin to spare */
    MP_VERDICT_TIGHT, /* capacity / (1 + margin) < total <= capacity: within the uncertainty */
    MP_VERDICT_OOM    /* total > capacity: out of memory */
} mp_verdict;

/** "fits", "tight" or "oom" (JSON verdict); "?" for anything else. */
const char *mp_verdict_name(int v);

/** Step time, seconds, by component (DESIGN.md time_s). Exposed parts only: what overlaps with
 *  compute is not counted here but in the *_total fields. */
typedef struct {
    double compute;          /* forward + backward GEMMs, attention, element-wise ops */
    double recompute;        /* recomputation in backward */
    double tp_comm;          /* TP/SP collectives on the critical path */
    double cp_comm;          /* CP K/V exchange not hidden behind attention */
    double ep_comm;          /* MoE dispatch/combine all-to-all */
    double pp_comm;          /* pipeline send/recv on the critical path */
    double pp_bubble;        /* pipeline fill and drain */
    double dp_comm_exposed;  /* DP/ZeRO gradient reduction and parameter gathers not hidden */
    double optimizer;        /* optimizer step */
    double dp_comm_total;    /* all DP/ZeRO communication, hidden or not */
} mp_time;

/** Tunable assumptions of the estimator, each documented with its source in docs/model.md.
 *  mp_estimate_opts_init sets the defaults. */
typedef struct {
    double grad_reduce_overlap_frac; /* share of backward that DP gradient reduction can hide behind */
    double zero3_overlap_frac;       /* share of compute that ZeRO-3 gathers can hide behind */
    double comm_compute_slowdown_frac; /* compute slowdown while a collective runs beside it */
    double allocator_margin_frac;    /* the verdict's margin: a plan whose total is within this
                                        share of the capacity is "tight" (docs/memory.md) */
    /* End-to-end sustained fractions, (0, 1]: what real training reaches of the catalogued
     * microbenchmarks. Fitted on validation/runs.csv (docs/model.md "Calibration"). */
    double gemm_sustained_frac;      /* of the measured best GEMM rate (clocks under load, shapes) */
    double attention_sustained_frac; /* of the catalogued fused-attention rate */
    double memory_bound_sustained_frac; /* of measured HBM bandwidth, for element-wise kernels */
    /* Added later. */
    double moe_imbalance;            /* routed tokens of the busiest GPU / mean when the plan
                                        does not say (plan key imbalance), >= 1 */
    double moe_copy_overhead_s;      /* time per routed (token, expert) copy per MoE layer,
                                        forward + backward, beyond the bytes and FLOPs counted:
                                        the token dispatcher's bookkeeping (fitted, see
                                        docs/model.md "Calibration"), >= 0 */
    /* 1: leave the bottleneck, reasons and peak_moment texts empty (every number is still
     * computed; each text's first byte is 0, the bytes after it are not cleared). For
     * callers that evaluate millions of plans and re-evaluate the few they report (the search);
     * formatting them is over half of an evaluation. Default 0. */
    int skip_text;
    /* 1: the caller needs only whether the plan fits. Memory is computed before time; a plan
     * over memory is then returned with its memory, feasible = 0 and its reasons, and its time
     * fields, step_s and throughput left 0 (never timed). A plan that fits is timed as usual.
     * Default 0: every plan is timed, infeasible ones too (the search reports them). */
    int feasibility_only;
    /* Optional cache of priced collectives (workload.h mp_wl_cache) for a caller evaluating
     * many plans on one cluster, one per thread; NULL (default): none. The estimate is the
     * same with and without it. */
    mp_wl_cache *cache;
    /* 1: leave per_stage unwritten (memory is still the most loaded stage's, found from one
     * stage per run of like stages: within a run the first holds the most micro-batches in
     * flight). For callers that never read per_stage (the search's hot loop). Default 0. */
    int skip_per_stage;
    /* 1: stop after memory whatever the verdict: memory, feasible and its reasons are set, the
     * time fields, step_s and throughput left 0 (never timed), as feasibility_only leaves a plan
     * over memory. For callers that need only the memory of plans they have proven cannot
     * matter otherwise (the search's per-subtree bound, src/search/bound.c). Default 0. */
    int memory_only;
    /* 1 (default): each of the three sustained fractions above is scaled by the plan's stack's
     * fitted fraction over the default stack's (meshplan/stack.h, data/stacks.json): with the
     * fields at their defaults a stack's plan runs at that stack's fitted fractions, a plan that
     * names no stack at the fields' values exactly, and a caller's change of a field (a
     * --calibration file) moves every stack by the same factor. 0: the three fields are used as
     * given for every stack (bench/fit_calibration's grid). The profile's kernels and overlaps
     * apply either way. */
    int stack_fractions;
    /* 1: e already holds this call's memory: it was last filled (with these options) for a plan
     * that differs from p only in its CP algorithm and rank order, which change no memory (they
     * are read only where the collectives are placed and priced: the workload's groups and
     * src/workload/comm.c). The memory, the states' memory fields, verdict, feasible and
     * peak_moment are kept, not recomputed; everything else is computed as usual, so the
     * estimate is the one a call with 0 gives (tests/test_estimate_fast.c). For the search's
     * communication variants of a line. Default 0. */
    int memory_kept;
    /* Optional memo of a line's memory apart from its micro-batch (mp_est_memo above), used
     * only together with cache (one of each per thread); NULL (default): none. The estimate is
     * the same with and without it. */
    mp_est_memo *memo;
} mp_estimate_opts;

void mp_estimate_opts_init(mp_estimate_opts *o);

/** The pieces the step is built from, for the timeline simulator and for explanations: times of
 *  one micro-batch on one GPU, seconds. Communication times are whole collectives (alpha-beta on
 *  the tier the group spans), before any overlap. */
typedef struct {
    double layer_fwd_s;        /* one layer's forward compute (GEMMs, attention, element-wise) */
    double layer_bwd_s;        /* its backward compute */
    double layer_bwd_weight_s; /* weight-gradient share of layer_bwd_s (the wgrad GEMMs; ZB-H1's W) */
    double layer_recompute_s;  /* recomputation in backward (0, attention core, or a forward) */
    double layer_tp_fwd_s;     /* TP/SP collectives of one forward pass of one layer */
    double layer_tp_recompute_s; /* TP collectives of the recompute forward (full recompute) */
    double layer_cp_s;         /* exposed CP exchange of one forward pass of one layer */
    double head_fwd_s;         /* LM head GEMM forward (last stage) */
    double head_bwd_s;         /* LM head backward and cross-entropy (last stage) */
    double head_bwd_weight_s;  /* weight-gradient share of head_bwd_s (its wgrad GEMM) */
    double p2p_s;              /* one pipeline send/recv of one micro-batch's activations */
    double grad_reduce_s;      /* ZeRO-0 all-reduce or ZeRO-1/2 reduce-scatter of a stage's gradients */
    double param_gather_s;     /* ZeRO-1/2 all-gather of a stage's updated parameters */
    double zero3_layer_gather_s;  /* ZeRO-3 all-gather of one layer's parameters */
    double zero3_layer_reduce_s;  /* ZeRO-3 reduce-scatter of one layer's gradients */
    double zero3_extra_s;      /* ZeRO-3 gathers and reduction of embedding/LM head per micro-batch */
    double hsdp_replicate_s;   /* HSDP all-reduce across replicas per step */
    double optimizer_s;        /* Adam step */
    /* Added later: MoE layers, long context, FP8. layer_* above describe a dense layer; for a
     * dense model the moe_* fields are 0. */
    double moe_layer_fwd_s;    /* one MoE layer's forward compute */
    double moe_layer_bwd_s;    /* its backward compute */
    double moe_layer_recompute_s;
    double moe_layer_tp_fwd_s; /* TP (attention, shared experts) and expert-TP collectives */
    double moe_layer_ep_fwd_s; /* dispatch + combine all-to-all of one MoE layer's forward */
    double moe_layer_ep_bwd_s; /* the same in backward */
    double expert_grad_reduce_s; /* expert gradients over the expert-DP group per step */
    double expert_param_gather_s;
    double layer_cp_bytes;     /* K/V bytes one GPU sends per layer, forward + backward */
    double moe_layer_ep_bytes; /* all-to-all bytes one GPU sends per MoE layer, fwd + bwd */
    double fp8_weight_cast_s;  /* per-step quantisation of the fp8 weight copies */
    double mtp_fwd_s, mtp_bwd_s; /* multi-token-prediction modules (last stage) */
    /* FSDP2 (plan fsdp = 2): the copy-outs after every parameter gather, which run on the
     * compute stream (mp_fsdp_copy_out_s); in compute. 0 otherwise. */
    double fsdp_copy_out_s;       /* per micro-batch on the slowest stage, forward + backward */
    double fsdp_copy_s_per_param; /* seconds per parameter and gather (charged for what a shard
                                     group of more than one rank gathers) */
    /* The stack's TP overlap (data/stacks.json), per micro-batch on the slowest stage: TP
     * collective time hidden behind GEMMs (already out of the TP part), and what the hidden
     * communication costs compute (its kernels holding SMs: in compute). */
    double tp_hidden_s;
    double overlap_slowdown_s;
} mp_step_parts;

/** The model's states and what offload moves, for the most loaded GPU (plan keys optimizer,
 *  opt_dtype, master_weights, finetune, lora_rank, lora_targets, offload, offload_device;
 *  src/estimate/memory_states.c gives every byte count and rate with its source;
 *  docs/finetune.md). All zero where they do not apply. */
typedef struct {
    double trainable_params;      /* trained parameters on the GPU (the adapters with LoRA) */
    double frozen_params;         /* frozen base parameters on the GPU (LoRA, QLoRA) */
    double state_bytes_per_param; /* optimizer-state bytes per trained parameter, no master */
    double master_bytes_per_param;/* fp32 master weights per trained parameter (0 or 4) */
    double step_transient_bytes;  /* working buffers of the optimizer step (Muon) */
    double host_bytes_per_gpu;    /* offloaded to host RAM (offload_device cpu; nvme: buffers) */
    double host_bytes_per_node;   /* x GPUs per node: the host RAM a node needs for it */
    double nvme_bytes_per_gpu;    /* offloaded to NVMe (offload_device nvme) */
    double gpu_bytes_saved;       /* GPU memory the offload frees */
    double pcie_bytes_per_step;   /* GPU <-> host, per GPU per step, both directions */
    double nvme_bytes_per_step;   /* host <-> NVMe, per GPU per step, both directions */
    double pcie_Bps, nvme_Bps, host_mem_Bps; /* the per-GPU bandwidths used */
    double pcie_s, nvme_s;        /* the transfers' times per step */
    double cpu_optimizer_s;       /* the optimizer step on the host (CPU Adam) */
    double gpu_optimizer_s;       /* the optimizer step on the GPU (0 when offloaded) */
    double muon_s;                /* of gpu_optimizer_s: Newton-Schulz and its all-gather */
    double offload_exposed_s;     /* what offload adds to the step */
} mp_states;

/** Everything predicted for one plan. */
typedef struct {
    int feasible;                 /* verdict != MP_VERDICT_OOM */
    int verdict;                  /* mp_verdict of the most loaded GPU */
    char peak_moment[64];         /* when memory peaks, in words (docs/memory.md) */
    int nreasons;
    char reasons[4][256];         /* why infeasible */
    mp_memory memory;             /* the most loaded GPU */
    int nstages;                  /* pp */
    int layers_per_stage_min, layers_per_stage_max;
    double step_s;
    mp_time time;
    double tokens_per_step;
    double tokens_per_s, tokens_per_s_per_gpu;
    double model_flops_per_step, hardware_flops_per_step;
    double model_tflops_per_gpu, hardware_tflops_per_gpu;
    double mfu, hfu;              /* vs the dense peak of the plan's precision */
    double peak_flops_per_s;      /* the peak used for MFU */
    char bottleneck[160];         /* in words */
    int microbatches;             /* per DP rank per step */
    mp_step_parts parts;          /* what step_s is built from */
    /* Added later. */
    double attention_frac;        /* attention core's share of compute time (forward+backward) */
    double attention_flops_frac;  /* its share of the model FLOPs (causal work) */
    double expert_params_per_gpu; /* routed-expert parameters on one GPU of the stage with most */
    double moe_load;              /* load factor used for the busiest GPU (1 = balanced) */
    /* Tier whose bandwidth bounds each kind's main collective (topo.h tier index; -1 when the
     * kind has no communication): TP all-gather/all-reduce, CP exchange, PP send/recv, DP/ZeRO
     * gradient reduction. */
    int tp_tier, cp_tier, pp_tier, dp_tier;
    int slowest_stage;            /* the stage whose micro-batch sets t_mb (first maximum) */
    mp_workload_opts workload_opts; /* what the workload was priced with (the simulator rebuilds
                                       the same workload from it) */
    mp_states states;             /* the model's states and offload (above) */
    /* Stage 0 .. min(pp, MP_MAX_STAGES)-1; entries past that are not written. Kept last so an
     * evaluation clears only the fields above (the search calls this millions of times). */
    mp_memory per_stage[MP_MAX_STAGES];
} mp_estimate;

/* mp_fsdp_copy_out_s (FSDP2's copy-out after a gather) is declared in meshplan/workload.h. */

/** Predict. The plan must have been resolved (mp_plan_resolve) for this model and the cluster's
 *  GPU count. opts may be NULL (defaults). Returns MP_OK (check out->feasible), MP_ERR_INPUT if
 *  the plan is not resolved or the precision is unsupported by the GPU (named in diag), or
 *  MP_ERR_RANGE if a result is not finite. */
mp_status mp_estimate_plan(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                           const mp_estimate_opts *opts, mp_estimate *out, mp_diag *diag);

#endif
