/* meshplan/parts.h — the step-time parts and the memory parts, each listed once.
 *
 * Every writer (predict's text and JSON, trace, compare, the search's explanation, the energy
 * phases) walks these tables instead of naming the parts by hand, so a part added here appears
 * everywhere, and a part a writer forgets cannot exist. The tables index the result structs of
 * estimate.h (mp_time, mp_memory) through offsetof; src/estimate/parts.c ties them to the structs
 * with static assertions: a field of mp_time or mp_memory missing from its table, listed twice or
 * out of order does not compile. Adding a field (say mp_memory.runtime) is then one line here.
 *
 * Each X-macro row:
 *   MP_TIME_PARTS:   X(key, label, kind, group, tier, description)
 *   MP_MEMORY_PARTS: X(key, label, kind, description)
 *   MP_TIME_DETAILS: X(key, label, field, description)
 * key: the struct field and the JSON key (DESIGN.md "predict --json": time_s, memory_bytes);
 * label: the words a table prints; kind: what the part is (below); group: for communication, the
 * parallel dimension whose collectives it is ("tp", "cp", "ep", "pp", "dp"; compare's JSON keys),
 * else ""; tier: MP_TIER(f) names the mp_estimate field holding the topology tier that bounds
 * that communication, MP_NO_TIER where none is recorded.
 */
#ifndef MESHPLAN_PARTS_H
#define MESHPLAN_PARTS_H

#include <stddef.h>

#include "meshplan/estimate.h"

/** What a step-time part is. The parts of every kind but MP_TIME_KIND_BESIDE add up to step_s. */
typedef enum {
    MP_TIME_KIND_COMPUTE, /* the GPU computes the model (energy: tensor/memory phases) */
    MP_TIME_KIND_COMM,    /* exposed communication of one parallel dimension */
    MP_TIME_KIND_WAIT,    /* idle, waiting for another pipeline stage */
    MP_TIME_KIND_UPDATE,  /* the optimizer step (memory-bound) */
    MP_TIME_KIND_BESIDE   /* a figure beside the step, overlapping the parts above: not added */
} mp_time_kind;

/** What a memory part is. The MP_MEM_KIND_PART rows add up to the MP_MEM_KIND_TOTAL row. */
typedef enum {
    MP_MEM_KIND_PART,     /* a component of the total */
    MP_MEM_KIND_TOTAL,    /* the total itself */
    MP_MEM_KIND_CAPACITY, /* the GPU's capacity, for comparison */
    MP_MEM_KIND_BESIDE    /* reported apart, not in the total */
} mp_mem_kind;

/* The tier field's offset; the array size fails to compile unless the field is an int. */
#define MP_TIER(field)                                                                           \
    ((long)offsetof(mp_estimate, field) +                                                        \
     0L * (long)sizeof(char[sizeof(((mp_estimate *)0)->field) == sizeof(int) ? 1 : -1]))
#define MP_NO_TIER (-1L)

/* Step time, seconds (mp_time; DESIGN.md time_s), in mp_time's field order. */
#define MP_TIME_PARTS(X)                                                                                   \
    X(compute, "compute", MP_TIME_KIND_COMPUTE, "", MP_NO_TIER,                                            \
      "forward and backward GEMMs, attention and element-wise kernels (fp8 weight casts, FSDP2 "           \
      "copy-outs and the slowdown from overlapped collectives included)")                                  \
    X(recompute, "recompute", MP_TIME_KIND_COMPUTE, "", MP_NO_TIER,                                        \
      "activation recomputation in backward")                                                              \
    X(tp_comm, "TP communication", MP_TIME_KIND_COMM, "tp", MP_TIER(tp_tier),                              \
      "tensor/sequence-parallel collectives on the critical path")                                         \
    X(cp_comm, "CP communication", MP_TIME_KIND_COMM, "cp", MP_TIER(cp_tier),                              \
      "context-parallel K/V exchange not hidden behind attention")                                         \
    X(ep_comm, "EP communication", MP_TIME_KIND_COMM, "ep", MP_NO_TIER,                                    \
      "MoE token dispatch and combine all-to-all")                                                         \
    X(pp_comm, "pipeline send/recv", MP_TIME_KIND_COMM, "pp", MP_TIER(pp_tier),                            \
      "pipeline activation and gradient transfers on the critical path")                                   \
    X(pp_bubble, "pipeline bubble", MP_TIME_KIND_WAIT, "", MP_NO_TIER,                                     \
      "pipeline fill and drain")                                                                           \
    X(dp_comm_exposed, "exposed DP/ZeRO communication", MP_TIME_KIND_COMM, "dp", MP_TIER(dp_tier),         \
      "data-parallel gradient reduction and ZeRO parameter gathers not hidden behind compute")             \
    X(optimizer, "optimizer step", MP_TIME_KIND_UPDATE, "", MP_NO_TIER,                                    \
      "the optimizer's update of the local shard")                                                         \
    X(dp_comm_total, "DP/ZeRO communication, all", MP_TIME_KIND_BESIDE, "dp", MP_TIER(dp_tier),            \
      "all data-parallel and ZeRO communication, hidden or not")

/* Memory of the most loaded GPU, bytes (mp_memory; DESIGN.md memory_bytes), in field order. */
#define MP_MEMORY_PARTS(X)                                                                                 \
    X(weights, "weights", MP_MEM_KIND_PART, "model weights in the compute dtype (and fp8 copies)")         \
    X(gradients, "grads", MP_MEM_KIND_PART, "gradient buffers")                                            \
    X(optimizer, "optim", MP_MEM_KIND_PART, "fp32 master weights and Adam moments")                        \
    X(activations, "activ", MP_MEM_KIND_PART, "activations stored for backward, all micro-batches in "     \
      "flight")                                                                                            \
    X(logits, "logits", MP_MEM_KIND_PART, "LM-head output and its fp32 upcast (last stage)")               \
    X(buffers, "buffers", MP_MEM_KIND_PART, "gathered ZeRO-3 layers and unsharded gradients")              \
    X(step_temp, "step", MP_MEM_KIND_PART, "optimizer-step transient (fp32 gradient copy, foreach "       \
      "temporaries), when the step is the peak")                                                          \
    X(runtime, "runtime", MP_MEM_KIND_PART, "CUDA context and cuBLAS/cuDNN workspaces (outside the "      \
      "allocator)")                                                                                        \
    X(nccl, "nccl", MP_MEM_KIND_PART, "NCCL channel buffers of the rank's communicators")                  \
    X(allocator_reserve, "reserve", MP_MEM_KIND_PART, "the caching allocator's reserved-but-unallocated " \
      "bytes (fragmentation)")                                                                             \
    X(total, "total", MP_MEM_KIND_TOTAL, "the sum of the parts: what nvidia-smi shows at the peak")        \
    X(capacity, "capacity", MP_MEM_KIND_CAPACITY, "the GPU's memory capacity")                             \
    X(allocator_margin, "verdict margin", MP_MEM_KIND_BESIDE,                                              \
      "the verdict's uncertainty band (margin x total): tight when capacity is within it")               \
    X(allocated, "allocated tensors", MP_MEM_KIND_BESIDE,                                                  \
      "peak of allocated tensors, weights to buffers (torch.cuda.max_memory_allocated)")          \
    X(reserved, "allocator reserved", MP_MEM_KIND_BESIDE,                                                 \
      "allocated + reserve: what the caching allocator holds (torch.cuda.max_memory_reserved)")

/* Shares of time_s.compute the writers also print: per-micro-batch fields of mp_step_parts
 * (estimate.h), times the micro-batches per step. JSON: top-level keys beside time_s. */
#define MP_TIME_DETAILS(X)                                                                                 \
    X(fsdp_copy_out_s, "FSDP2 copy-out", fsdp_copy_out_s,                                                  \
      "copies the gathered parameters out of FSDP2's all-gather buffers")

#define MP_PARTS_X_ENUM_T(key, label, kind, group, tier, desc) MP_TIME_##key,
#define MP_PARTS_X_ENUM_M(key, label, kind, desc) MP_MEM_##key,
#define MP_PARTS_X_ENUM_D(key, label, field, desc) MP_DETAIL_##key,
/** Step-time parts: MP_TIME_compute ... in table order. */
typedef enum { MP_TIME_PARTS(MP_PARTS_X_ENUM_T) MP_TIME_PART_COUNT } mp_time_part;
/** Memory parts: MP_MEM_weights ... in table order. */
typedef enum { MP_MEMORY_PARTS(MP_PARTS_X_ENUM_M) MP_MEMORY_PART_COUNT } mp_memory_part;
/** Details of compute: MP_DETAIL_fsdp_copy_out_s ... */
typedef enum { MP_TIME_DETAILS(MP_PARTS_X_ENUM_D) MP_TIME_DETAIL_COUNT } mp_time_detail;
#undef MP_PARTS_X_ENUM_T
#undef MP_PARTS_X_ENUM_M
#undef MP_PARTS_X_ENUM_D

/** One row of MP_TIME_PARTS. */
typedef struct {
    const char *key, *label, *group, *desc;
    mp_time_kind kind;
    size_t offset;  /* offsetof(mp_time, key) */
    long tier;      /* offsetof(mp_estimate, <int tier field>), or MP_NO_TIER */
} mp_time_part_info;

/** One row of MP_MEMORY_PARTS. */
typedef struct {
    const char *key, *label, *desc;
    mp_mem_kind kind;
    size_t offset;  /* offsetof(mp_memory, key) */
} mp_memory_part_info;

/** One row of MP_TIME_DETAILS. */
typedef struct {
    const char *key, *label, *desc;
    size_t offset;  /* offsetof(mp_step_parts, field): seconds per micro-batch */
} mp_time_detail_info;

/** The tables, indexed by mp_time_part / mp_memory_part / mp_time_detail. */
extern const mp_time_part_info mp_time_parts[MP_TIME_PART_COUNT];
extern const mp_memory_part_info mp_memory_parts[MP_MEMORY_PART_COUNT];
extern const mp_time_detail_info mp_time_details[MP_TIME_DETAIL_COUNT];

/** Part k of t, seconds. k in [0, MP_TIME_PART_COUNT); 0 for anything else. */
double mp_time_part_s(const mp_time *t, mp_time_part k);

/** Sum of t's parts of kind `kind`, seconds, added in table order. */
double mp_time_kind_s(const mp_time *t, mp_time_kind kind);

/** Sum of every part of t that is in the step (every kind but MP_TIME_KIND_BESIDE), in table order:
 *  the step time the parts account for (mp_estimate.step_s for an estimate's time). */
double mp_time_step_sum_s(const mp_time *t);

/** The tier index (topo.h) recorded in e for part k's communication, or -1 when the part is not
 *  communication or no tier is recorded for it. */
int mp_time_part_tier(const mp_estimate *e, mp_time_part k);

/** Part k of m, bytes. k in [0, MP_MEMORY_PART_COUNT); 0 for anything else. */
double mp_memory_part_bytes(const mp_memory *m, mp_memory_part k);

/** Detail k of estimate e for the whole step, seconds: the per-micro-batch field times
 *  e->microbatches. k in [0, MP_TIME_DETAIL_COUNT); 0 for anything else. */
double mp_time_detail_s(const mp_estimate *e, mp_time_detail k);

#endif
