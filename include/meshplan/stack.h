/* meshplan/stack.h — software-stack profiles: how Megatron-Core, Megatron-LM 2021, torchtitan,
 * DeepSpeed, NeMo, llm-foundry and eager PyTorch run the same training step.
 *
 * A profile is data (data/stacks.json, embedded at build time; every value names its source
 * there): which kernels the stack fuses (the element-wise HBM traffic it still moves), its
 * default attention kernel, which communication it overlaps with compute and what the overlap
 * costs (SMs the communication kernels hold while compute runs: resource-aware overlap), its
 * era's features (FlashAttention, sequence parallelism), the interleaving depth it defaults to,
 * its fp8 scaling traffic, and the three sustained fractions fitted on that stack's published
 * runs (bench/fit_calibration, docs/stacks.md). The plan key `stack` selects one; a plan that
 * names none runs on MP_STACK_DEFAULT. The estimator reads profiles through
 * mp_stack_profile_of; this header is the documentation of every field.
 */
#ifndef MESHPLAN_STACK_H
#define MESHPLAN_STACK_H

#include <stdint.h>

#include "meshplan/status.h"

/** The stacks. X-macro: (enum suffix, key). Append-only. */
#define MP_STACKS(X)                                                                           \
    X(MEGATRON_CORE, "megatron-core") /* Megatron-Core with Transformer Engine (2023-) */     \
    X(MEGATRON_2021, "megatron-2021") /* Megatron-LM of Narayanan 2021 / Korthikanti 2022 */  \
    X(TORCHTITAN, "torchtitan")       /* torchtitan: FSDP2, torch.compile, async TP */        \
    X(DEEPSPEED, "deepspeed")         /* DeepSpeed ZeRO / Megatron-DeepSpeed */                \
    X(NEMO, "nemo")                   /* NeMo (Megatron-Core underneath, its recipes) */       \
    X(LLM_FOUNDRY, "llm-foundry")     /* MosaicML llm-foundry / Composer, FSDP1 */             \
    X(EAGER, "eager")                 /* plain eager PyTorch, no fusions */                    \
    X(GENERIC, "generic")             /* no stack named: the stack-neutral model and the one   \
                                         calibration all stacks shared before the profiles */
typedef enum {
#define MP_STACK_X(e, n) MP_STACK_##e,
    MP_STACKS(MP_STACK_X)
#undef MP_STACK_X
    MP_STACK_COUNT
} mp_stack_id;

/** The stack a plan runs on when it names none (docs/stacks.md "Default"): `generic`, whose
 *  profile is meshplan's model before the stack profiles (FlashAttention-2 class attention, no
 *  TP overlap, kernels.c's element-wise count) with the fractions fitted over all sources. */
#define MP_STACK_DEFAULT MP_STACK_GENERIC

/** The key of stack s ("megatron-core", ...), "?" when out of range. */
const char *mp_stack_name(mp_stack_id s);

/** Default attention kernel of a stack: Megatron's fused scaled-masked softmax (the s x s
 *  scores through HBM), or a fused kernel of FlashAttention-2, -3/cuDNN or FlexAttention
 *  class (the plan's attn_kernel names which). */
typedef enum { MP_STACK_ATTN_FUSED_SOFTMAX, MP_STACK_ATTN_FA2, MP_STACK_ATTN_FA3, MP_STACK_ATTN_FLEX } mp_stack_attn;

/** One profile (data/stacks.json). Fractions in [0, 1] unless said. */
typedef struct {
    char key[24];
    char version[160];
    char source[1024];
    mp_stack_attn attention;          /* default attention kernel */
    int flash_available;              /* 0: the stack predates fused attention (a plan with
                                         flash=1 on it is bad input) */
    int sp_available;                 /* 0: no sequence parallelism (sp=1 is bad input) */
    int sp_default;                   /* sp when the plan does not say and tp > 1 */
    double elementwise_bytes_frac;    /* element-wise HBM traffic moved, relative to
                                         kernels.c's count (fused norm, fused bias+activation,
                                         separate residual/rotary/dropout kernels); > 1 for
                                         eager PyTorch, < 1 where more is fused; (0, 4] */
    double tp_overlap_fwd_frac;       /* TP collective time hidden behind forward GEMMs */
    double tp_overlap_bwd_frac;       /* ... behind backward GEMMs (dgrad/wgrad split), SP off */
    double tp_overlap_bwd_sp_frac;    /* the same with sequence parallelism on */
    double ep_overlap_frac;           /* MoE all-to-all hidden behind other compute */
    double dp_overlap_frac;           /* share of the reduction window the DP buckets use */
    double zero3_prefetch_frac;       /* share of a neighbour's compute a ZeRO-3 gather hides behind */
    int zero3_gather_per_tensor;      /* 1: ZeRO-3 issues one all-gather per parameter tensor of a
                                         layer, and one reduce-scatter per tensor of its
                                         gradients, each paying the collective's latency
                                         (DeepSpeed 2021); 0: one flat gather and one
                                         reduce-scatter per layer (FSDP units) */
    int zero3_recompute_gathers;      /* 1: with full recompute the checkpointed forward fetches
                                         each layer's parameters again in backward (three gathers
                                         per layer per micro-batch: DeepSpeed releases after every
                                         sub-module's forward); 0: the backward gather serves it */
    double overlap_comm_sms;          /* SMs the communication kernels hold while overlapped:
                                         compute slows by overlap_comm_sms / the GPU's SMs
                                         for as long as hidden communication runs; >= 0 */
    double fp8_scale_bytes_per_elem;  /* fp8: extra HBM bytes per cast element for the scaling
                                         (an amax pass: 2 for dynamic tensor-wise scaling, 0
                                         where the amax is fused into the cast); [0, 8] */
    int64_t interleave_depth;         /* when a run with pp > 1 does not state its interleaving
                                         depth: the largest v <= this that divides the layers
                                         per stage (v >= 2, else 1F1B); 0 = 1F1B */
    double gemm_sustained_frac;       /* fitted: of the measured best GEMM rate */
    double attention_sustained_frac;  /* fitted: of the catalogued fused-attention rate */
    double memory_bound_sustained_frac; /* fitted: of measured HBM bandwidth */
    double zero3_gather_host_s;       /* with zero3_gather_per_tensor: host time each parameter
                                         tensor's gather adds on the critical path (DeepSpeed
                                         of 2021 synchronizes the device before each launch),
                                         whatever the group size; [0, 1] s; optional in a
                                         profile, 0 when not given */
    double zero3_gather_host_rank_s;  /* ... and per rank of the shard group (the per-rank views
                                         the gather builds on the host); [0, 1e-3] s; optional */
    double zero3_reduce_bytes;        /* bytes per gradient element of the ZeRO-3 reduce-scatter
                                         (2: the stack reduces 16-bit gradients as they are);
                                         0 = meshplan's default, fp32 (4); optional, 0 when not
                                         given; [0, 8] */
} mp_stack_profile;

/** The built-in profile of stack s, parsed once from the embedded data/stacks.json (thread
 *  safe). NULL when s is out of range or the embedded file is broken (tests/test_stacks.c
 *  checks that it is not). */
const mp_stack_profile *mp_stack_profile_of(mp_stack_id s);

/** As mp_stack_profile_of, with the reason in diag when it fails: MP_OK, MP_ERR_INPUT for an
 *  unknown s, MP_ERR_PARSE for a broken file (naming the field and value). */
mp_status mp_stack_profile_get(mp_stack_id s, mp_stack_profile *out, mp_diag *diag);

#endif
