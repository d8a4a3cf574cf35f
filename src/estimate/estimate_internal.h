/* src/estimate/estimate_internal.h — what the estimator's files share (internal). Each takes
 * the priced workload (include/meshplan/workload.h) and fills its part of the estimate:
 *   memory.c  memory per GPU and per pipeline stage, feasibility;
 *   step.c    the overlap and step rules: slowest stage, bubble, DP/ZeRO exposure, optimizer,
 *             the step's parts, throughput and MFU;
 *   explain.c the bottleneck and the reasons, in words. */
#ifndef MESHPLAN_ESTIMATE_INTERNAL_H
#define MESHPLAN_ESTIMATE_INTERNAL_H

#include "meshplan/estimate.h"
#include "meshplan/stack.h"
#include "meshplan/workload.h"

/* Memory of every stage into e->per_stage, the most loaded into e->memory, e->feasible. Needs
 * only the workload's shape (mp_workload_shape). */
void mp_est_memory(const mp_workload *w, const mp_model *m, const mp_cluster *c, const mp_plan *p,
                   const mp_estimate_opts *o, mp_estimate *e);

/* What mp_est_memory writes into an estimate (the states' memory fields among e->states),
 * saved and put back for mp_estimate_opts.memory_kept. */
typedef struct {
    mp_memory memory;
    mp_states states;
    int verdict, feasible;
    char peak_moment[64];
} mp_est_memory_part;
void mp_est_memory_save(const mp_estimate *e, mp_est_memory_part *out);
void mp_est_memory_restore(const mp_est_memory_part *in, mp_estimate *e);

/* The runtime memory of one rank (runtime.c): CUDA context and workspaces, NCCL buffers, and
 * the caching allocator's reserve: reserve_frac x allocated + reserve_per_buffer x buffers. */
typedef struct {
    double runtime_bytes, nccl_bytes, reserve_frac, reserve_per_buffer;
} mp_runtime_mem;

void mp_est_runtime_memory(const mp_workload *w, const mp_cluster *c, const mp_plan *p,
                           mp_runtime_mem *rt);

/* Fill mm's runtime, nccl and allocator_reserve from rt and mm->allocated, and mm->total. */
void mp_est_runtime_apply(const mp_runtime_mem *rt, mp_memory *mm);

/* The verdict (mp_verdict) of memory m with the margin margin_frac >= 0. */
int mp_est_verdict(const mp_memory *m, double margin_frac);

/* Step time, its parts (e->time, e->parts), throughput, MFU/HFU and the tiers. Needs the priced
 * workload. */
void mp_est_step(const mp_workload *w, const mp_model *m, const mp_cluster *c, const mp_plan *p,
                 const mp_estimate_opts *o, const mp_stack_profile *sk, mp_estimate *e);

/* e->bottleneck and e->reasons (left empty with o->skip_text). */
void mp_est_explain(const mp_workload *w, const mp_cluster *c, const mp_plan *p,
                    const mp_estimate_opts *o, mp_estimate *e);

#endif
