/* meshplan/sim.h — the timeline: a discrete-event simulation of one training step, and its
 * Chrome trace (Perfetto, chrome://tracing).
 *
 * The analytical estimator (estimate.h) must assume how work overlaps; the simulator plays the
 * step out task by task and shows it: which stream waits for which, where the pipeline bubble is,
 * what communication hides behind compute and what does not.
 *
 * What is simulated. One representative rank per pipeline stage (scale by symmetry: every rank of
 * a TP, CP or DP group does the same work at the same time, so 16,384 GPUs cost no more than pp
 * ranks). Each rank has streams — compute, TP, CP, PP send, DP/ZeRO and optimizer — that run
 * their tasks in issue order (a CUDA stream), each task starting when its stream is free and its
 * dependencies are done. The durations are the building blocks of the analytical model
 * (mp_estimate.parts): per-layer forward / backward / recompute / weight-gradient compute, the TP
 * and CP communication of one layer pass, the LM head, one pipeline send, and the DP/ZeRO
 * collectives costed per bucket (one layer) with mp_coll_time, as the estimator does for a stage.
 *
 * Schedules (plan.schedule): GPipe (all forwards, then all backwards), 1F1B (PipeDream-Flush,
 * Narayanan et al. 2021 Sec. 2.2.1), interleaved 1F1B with vpp model chunks per rank (Megatron-LM,
 * Narayanan et al. 2021 Sec. 2.2.2) and ZB-H1 (Qi et al. 2023, "Zero Bubble Pipeline
 * Parallelism", Sec. 2.1: the backward split into an input-gradient pass B and a weight-gradient
 * pass W, W delayed so that every stage holds as many micro-batches in flight as 1F1B's first).
 *
 * Overlap rules (docs/sim.md): TP and CP exchanges on the critical path unless tp_overlap; pipeline
 * sends block the sender's compute (Megatron's batched isend/irecv + wait) unless p2p_overlap; DP
 * gradient reduction per layer bucket as soon as the layer's gradient is final (after the last
 * micro-batch's backward; every micro-batch with ZeRO-2), overlapped with the rest of the backward
 * (PyTorch DDP, Li et al. 2020; Megatron overlap-grad-reduce); ZeRO-1/2 parameter all-gathers per
 * bucket at the step start, each layer's first forward waiting for its bucket; ZeRO-3/FSDP gathers
 * each layer before its forward and before its backward with a prefetch depth of one layer and
 * reduce-scatters its gradient after each backward (Zhao et al. 2023, PyTorch FSDP Sec. 3);
 * HSDP's replica all-reduce before the optimizer; the optimizer after the stage's last reduction.
 * The step ends when the last stage's optimizer does.
 *
 * Time is integer nanoseconds. Events are ordered by time, then by insertion sequence, so a run is
 * deterministic. The number of events is capped (mp_sim_opts.max_events).
 */
#ifndef MESHPLAN_SIM_H
#define MESHPLAN_SIM_H

#include <stdint.h>
#include <stdio.h>

#include "meshplan/estimate.h"
#include "meshplan/model.h"
#include "meshplan/plan.h"
#include "meshplan/status.h"
#include "meshplan/topo.h"

/** Default compute slowdown while a communication kernel runs on the same GPU: +18.9%, the mean
 *  measured slowdown of compute overlapped with collectives on A100, H100, MI250 and MI210 across
 *  GPT and Llama layers ("Characterizing Compute-Communication Overlap in GPU-Accelerated
 *  Distributed Deep Learning: Performance and Power Implications", arXiv:2507.03114, 2025,
 *  abstract: mean 18.9%, max 40.0%). Causes: the NCCL kernels occupy SMs (a GEMM that filled one
 *  wave spills into a second) and share HBM bandwidth. */
#define MP_SIM_DEFAULT_CONTENTION_FRAC 0.189

/** Default cap on processed events, and on tasks (about 100 bytes each): a step of Llama 3 405B
 *  on 16,384 GPUs, pp 16, 128 micro-batches takes ~70 thousand (ZeRO-3: ~150 thousand). */
#define MP_SIM_DEFAULT_MAX_EVENTS 10000000

/** Default cap on a Chrome trace file, bytes: 256 MiB (meshplan trace --max-trace-bytes). chrome://tracing
 *  reads the whole file into one JavaScript string, and V8 caps a string at 2^29 - 24 characters
 *  on 64-bit hosts (String::kMaxLength, v8/include/v8-primitive.h), about 512 MiB: half of that
 *  opens there and in Perfetto's UI with room to spare; about 1.5 million slices. */
#define MP_SIM_DEFAULT_MAX_TRACE_BYTES (256LL << 20)

/** Options. mp_sim_opts_init sets the defaults given beside each field. */
typedef struct {
    /* Compute runs (1 + f) times slower while any communication task (TP, CP, PP, DP/ZeRO) runs
     * on the same GPU; [0, 10]. Default MP_SIM_DEFAULT_CONTENTION_FRAC; 0 = no interference. */
    double contention_frac;
    /* 1: the analytical model's rules (docs/sim.md): every stage runs as the slowest stage does
     * (its per-micro-batch times, LM head included, spread evenly over its layers), and a DP
     * gradient reduction (ZeRO-0/1/2) may start as soon as the backward pass that completes the
     * gradients starts — all buckets of the chunk issued at that pass's start, so the reduction
     * can hide behind the whole pass, as the estimator assumes. 0 (default): each stage's own
     * layers, the LM head on the last; each layer's bucket issued when its gradient is complete
     * (so the last bucket of a step is never hidden). */
    int analytical_rules;
    /* 1: a layer's TP collectives run beside the same layer's compute (Transformer Engine
     * userbuffers, async TP); 0 (default): after it, on the critical path (Megatron default). */
    int tp_overlap;
    /* 1: pipeline sends do not hold the sender's compute; 0 (default): they do. */
    int p2p_overlap;
    /* Straggler: the global rank (0 .. gpus-1) that is slower, -1 (default) none. Its stage's
     * representative is that rank; its TP group waits for it, and the DP collectives of every
     * replica wait for its replica, so the step is its replica's step. */
    int64_t straggler_rank;
    double straggler_compute_factor; /* >= 1, default 1: its compute takes this many times longer */
    double straggler_link_factor;    /* >= 1, default 1: its collectives and sends that leave the
                                      * node take this many times longer (a slow NIC or link) */
    int64_t max_events;              /* >= 1, default MP_SIM_DEFAULT_MAX_EVENTS */
} mp_sim_opts;

void mp_sim_opts_init(mp_sim_opts *o);

/** What a simulated step comes to. The breakdown is that of the critical stage (the one whose
 *  optimizer ends last): its timeline from 0 to step_s is cut into compute and recompute (busy,
 *  contention included), the optimizer, and waits, each wait charged to what the stage waited for
 *  — TP, CP, a pipeline transfer (pp_comm while the transfer runs, pp_bubble while the upstream
 *  stage had not sent yet), or a DP/ZeRO collective (dp_comm_exposed). The parts add up to step_s.
 *  dp_comm_total is the sum of the critical stage's DP/ZeRO collective times, hidden or not. */
typedef struct {
    double step_s;
    mp_time time;           /* same fields as the analytical breakdown */
    int critical_stage;     /* 0 .. pp-1 */
    double bubble_frac;     /* time.pp_bubble / step_s */
    int64_t tasks;          /* tasks in the graph */
    int64_t events;         /* events processed */
    int nstages;            /* simulated ranks (= pp) */
    int straggler_stage;    /* the straggler's stage, -1 none */
} mp_sim_result;

/** How large the simulation of a plan is at least, worked out before it is built
 *  (mp_sim_size_bound). Lower bounds: the tasks every pass certainly has (src/sim/size.c). */
typedef struct {
    int64_t tasks_min;            /* tasks, and events (each task ends in one); mp_sim_run refuses
                                     a step with more than opts.max_events */
    int64_t tasks_per_microbatch; /* of which each micro-batch's, all stages together */
    int64_t microbatches;         /* per DP rank per step */
    int64_t memory_bytes_min;     /* memory the tasks take (edges and queues come on top) */
    int64_t trace_bytes_min;      /* bytes of its Chrome trace (every task is a slice) */
    int64_t trace_bytes_per_microbatch; /* of which each micro-batch's */
    int64_t max_gb;               /* the largest global batch, sequences, whose bound stays within
                                     opts.max_events (0 when none does or nothing is counted) */
} mp_sim_size;

/** Bound the size of simulating plan p from its estimate e (as mp_sim_run takes them; opts may be
 *  NULL). Allocates nothing and takes microseconds: call it before mp_sim_run and before writing
 *  a trace to refuse a step that would not fit. Writes zeros when p or e is not resolved. */
void mp_sim_size_bound(const mp_model *m, const mp_plan *p, const mp_estimate *e, const mp_sim_opts *opts,
                       mp_sim_size *out);

/** A simulated step, kept for writing its trace. */
typedef struct mp_sim mp_sim;

/** Simulate one step of plan p (resolved for m and c) from its analytical estimate e, which must
 *  come from mp_estimate_plan(m, c, p, ...). opts may be NULL (defaults). On success *out (if
 *  out is not NULL) holds the timeline for mp_sim_write_trace and must be freed with
 *  mp_sim_destroy; res receives the summary. Errors: MP_ERR_INPUT (an option out of range, a
 *  plan that does not match the estimate, a straggler rank outside the cluster; named in diag),
 *  MP_ERR_RANGE (the step needs more than max_events tasks or events, or a time overflows),
 *  MP_ERR_NOMEM, MP_ERR_INTERNAL (the schedule deadlocked: a bug, described in diag). */
mp_status mp_sim_run(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                     const mp_estimate *e, const mp_sim_opts *opts, mp_sim **out,
                     mp_sim_result *res, mp_diag *diag);

/** As mp_sim_run, from a workload the caller built (mp_workload_build with e->workload_opts for
 *  the same m, c, p) — or changed: the simulator takes every unit's times, message sizes, layer
 *  kinds (dense, MoE with its all-to-all, MTP, head) and the slowest stage from w, and from e
 *  only the optimizer step and the plan's shape checks. Same errors as mp_sim_run. */
mp_status mp_sim_run_workload(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                              const mp_workload *w, const mp_estimate *e, const mp_sim_opts *opts,
                              mp_sim **out, mp_sim_result *res, mp_diag *diag);

/** Write the timeline as Chrome trace JSON (the Trace Event Format's "X" complete events, times
 *  in microseconds): one process per pipeline stage, one thread per stream (compute, TP, CP,
 *  EP, PP send, DP/ZeRO, optimizer), every micro-batch's forward, backward, recompute and weight
 *  gradient of every layer as slices with args micro_batch, chunk and layer, collectives as
 *  slices with args bytes, algorithm and group size. Slices of one thread never overlap.
 *  title names the job in the metadata (may be NULL). Returns MP_OK or MP_ERR_IO. */
mp_status mp_sim_write_trace(const mp_sim *s, FILE *f, const char *title, mp_diag *diag);

/** mp_sim_write_trace, writing at most max_bytes (>= 1; MP_SIM_DEFAULT_MAX_TRACE_BYTES is the
 *  CLI's default). Checked before every event is written: when the next one would pass the cap
 *  it stops and returns MP_ERR_RANGE, the diag naming the cap, the slices written and the size the
 *  whole trace would have (extrapolated); f then holds an incomplete trace the caller should
 *  remove. *bytes (may be NULL) receives the bytes written. MP_ERR_IO on a write error. */
mp_status mp_sim_write_trace_max(const mp_sim *s, FILE *f, const char *title, int64_t max_bytes,
                                 int64_t *bytes, mp_diag *diag);

/** Free a simulated step; s may be NULL. */
void mp_sim_destroy(mp_sim *s);

#endif
