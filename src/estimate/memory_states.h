/* src/estimate/memory_states.h — what the model's states weigh and what they cost in time
 * (internal to the estimator; memory_states.c): weights, gradients and optimizer states per
 * GPU of a stage for every optimizer, dtype, fine-tuning mode and offload, the buffers' bytes
 * per gathered parameter, the optimizer step's time on the GPU or the host, and offload's
 * transfers. memory.c and step.c each call it in one place. */
#ifndef MESHPLAN_MEMORY_STATES_H
#define MESHPLAN_MEMORY_STATES_H

#include "meshplan/estimate.h"
#include "meshplan/workload.h"

/** The states of one stage on one GPU. */
typedef struct {
    double weights, gradients, optimizer; /* on the GPU, bytes (fp8 copies not included) */
    double host_bytes, nvme_bytes;        /* offloaded, bytes */
    double gpu_bytes_saved;               /* what the offload took off the GPU */
    double trainable_params, frozen_params;
    double state_bytes_per_param, master_bytes_per_param; /* per trained parameter */
    double gather_bytes_per_param;  /* one gathered parameter in a ZeRO-2/3 buffer */
    double grad_buffer_bytes_per_param; /* one parameter's unsharded gradient before its reduce */
    double step_transient_bytes;    /* live only in the optimizer step (Muon's Newton-Schulz) */
} mp_stage_states;

/** The states of stage st (a stage of w, the last one when last) into *out. */
void mp_est_stage_states(const mp_workload *w, const mp_model *m, const mp_plan *p,
                         const mp_wl_stage *st, int last, mp_stage_states *out);

/** The optimizer step's time on the most loaded stage and, with offload, the transfers and the
 *  host's step: fills e->states' time fields and returns what the step adds (GPU optimizer +
 *  exposed offload), s. t_mb_s and bwd_mb_s: one micro-batch's time and its backward on the
 *  slowest stage (the windows offload's transfers hide in). */
double mp_est_optimizer_step(const mp_workload *w, const mp_model *m, const mp_cluster *c,
                             const mp_plan *p, double t_mb_s, double bwd_mb_s, mp_estimate *e);

#endif
