/* meshplan/energy.h — power and energy of a training step (per GPU by phase, per node, per
 * facility) and the cost of a run.
 *
 * A step is cut into the phases a GPU goes through (from mp_estimate's time parts):
 *   tensor  — GEMM and attention work at the sustained tensor rate,
 *   memory  — element-wise and other memory-bound kernels, the optimizer,
 *   comm    — exposed TP/CP/PP/DP communication (NCCL kernels moving data),
 *   wait    — the pipeline bubble: the GPU holds its context, clocks up, nothing to do.
 * Each phase's power lies between the GPU's active-idle power and its power limit (TDP or a
 * user cap); a cap slows the phases it clips. A node adds its host (CPUs, memory, NICs,
 * NVSwitches, fans, PSU losses) at its training load; the scale-out switches add their ports;
 * the facility multiplies by the PUE. docs/energy.md derives each term and gives every source;
 * GPUs without a power measurement in src/energy/ are derived from their TDP ("unseen GPU").
 */
#ifndef MESHPLAN_ENERGY_H
#define MESHPLAN_ENERGY_H

#include "meshplan/estimate.h"
#include "meshplan/plan.h"
#include "meshplan/status.h"
#include "meshplan/topo.h"

#define MP_PHASE_LIST(X)          \
    X(MP_PHASE_TENSOR, "tensor")  \
    X(MP_PHASE_MEMORY, "memory")  \
    X(MP_PHASE_COMM, "comm")      \
    X(MP_PHASE_WAIT, "wait")

typedef enum {
#define MP_X(n, s) n,
    MP_PHASE_LIST(MP_X)
#undef MP_X
    MP_PHASE_COUNT
} mp_phase;

const char *mp_phase_name(mp_phase p);

/** Assumptions of the power model; mp_energy_opts_init sets the defaults (docs/energy.md). */
typedef struct {
    double power_cap_W;          /* per-GPU power limit, W; 0 = the GPU's TDP. Must exceed the
                                    GPU's active-idle power and not exceed its TDP */
    double pue;                  /* facility power / IT power, [1, 5]; default 1.2 */
    double host_idle_frac;       /* host (non-GPU) power at idle as a share of its maximum,
                                    [0, 1]; default 0.5 (Barroso & Hoelzle 2007) */
    double host_util_frac;       /* host activity during GPU training, [0, 1]; default 0.2 */
    double switch_port_W;        /* scale-out switch power per port incl. optics, W, >= 0 */
    int switch_radix;            /* ports per scale-out switch, >= 4; default 64 */
    double scaleout_ports_per_node; /* NIC ports per node on the scale-out fabric; 0 = one per GPU */
    double mem_pJ_per_bit;       /* energy per bit moved HBM <-> SMs, pJ, > 0 */
    double node_overhead_W;      /* node power beyond its GPUs at full load, W; 0 = the
                                    cluster's (catalog nodes.json power_overhead_W) */
} mp_energy_opts;

void mp_energy_opts_init(mp_energy_opts *o);

/** Power and energy of one step of the whole job. Powers are per GPU / per node / whole job. */
typedef struct {
    double phase_s[MP_PHASE_COUNT];   /* time per phase in one step (after the cap), s */
    double phase_W[MP_PHASE_COUNT];   /* one GPU's power in each phase (after the cap), W */
    double step_s;                    /* the step after the power cap (>= mp_estimate.step_s) */
    double step_uncapped_s;           /* mp_estimate.step_s */
    double tdp_W, cap_W;              /* the GPU's TDP and the limit applied */
    double gpu_idle_W;                /* no job on the GPU */
    double gpu_wait_W;                /* in a job, clocks up, no work (bubble, waits) */
    double gpu_avg_W, gpu_peak_W;     /* over the step; peak: GEMMs at the best measured rate */
    double node_overhead_max_W;       /* host at full load (rating - GPUs) */
    double node_overhead_W;           /* host at training load */
    double node_avg_W, node_peak_W, node_idle_W; /* one node */
    double switch_ports_per_gpu;      /* scale-out switch ports per GPU (fat tree) */
    double switch_W;                  /* all scale-out switches of the job */
    double it_avg_W;                  /* nodes + switches */
    double facility_avg_W, facility_peak_W; /* x PUE */
    double energy_J_per_step_gpu, energy_J_per_step_node, energy_J_per_step_facility;
    double energy_J_per_mtoken_gpu, energy_J_per_mtoken_node, energy_J_per_mtoken_facility;
    double nodes;                     /* nodes of the job */
    double gpu_per_node;              /* GPUs per node */
    int unseen_gpu;                   /* 1: no power measurement, derived from the TDP */
    char gpu_power_source[256];
} mp_power;

/** Power and energy of one step of plan p (resolved) on cluster c, from its estimate e (made with
 *  estimate options eo, or NULL for the defaults: the sustained GEMM and memory fractions set the
 *  phase activity). o may be NULL (defaults). Errors: MP_ERR_INPUT when the GPU's TDP is unknown
 *  (catalog tdp_W null) or an option is out of range (named in diag); MP_ERR_RANGE when a result
 *  is not finite. */
mp_status mp_energy_step(const mp_cluster *c, const mp_plan *p, const mp_estimate *e,
                         const mp_estimate_opts *eo, const mp_energy_opts *o, mp_power *out,
                         mp_diag *diag);

/** Facility energy of one step, J (energy_J_per_step_facility of mp_energy_step with its
 *  defaults: eo and o NULL) into *joules_per_step, in the form of search.h's mp_energy_fn: the
 *  hook by which `meshplan search`, api.h's search and the sweep rank plans by energy
 *  (objective energy). ctx and m are not read. Pure, so safe from several threads. Errors: those
 *  of mp_energy_step (no diagnostics: the search counts the plan as failed). */
mp_status mp_energy_step_facility_J(void *ctx, const mp_model *m, const mp_cluster *c,
                                    const mp_plan *p, const mp_estimate *e,
                                    double *joules_per_step);

/** Energy of a whole run at the facility meter, J. running_s: time the job computes (useful and
 *  redone work), at the step's average power; stalled_s: checkpoint stalls, restarts and waits
 *  for spares, with every GPU at active idle and hosts at their training load; wall_s with
 *  spare_nodes idle nodes held beside the job. pue as in mp_energy_opts. All inputs >= 0. */
typedef struct {
    double running_J, stalled_J, spares_J;
    double total_J;
    double MWh;
} mp_run_energy;

void mp_energy_run(const mp_power *pw, double pue, double running_s, double stalled_s,
                   double wall_s, double spare_nodes, mp_run_energy *out);

/* ---- cost ------------------------------------------------------------------------------------ */

/** How a run is paid for: rented GPU-hours, or capital (amortized over its life) plus energy. */
typedef struct {
    double price_gpu_hour_usd;   /* rental price per GPU-hour, >= 0; used when capex is 0 */
    double capex_per_gpu_usd;    /* > 0 selects capital + energy: purchase price per GPU with its
                                    share of server and network */
    double amortization_years;   /* > 0; default 4 */
    double price_kwh_usd;        /* facility electricity price per kWh, >= 0 */
} mp_cost_opts;

void mp_cost_opts_init(mp_cost_opts *o);

typedef struct {
    int capex_mode;          /* 1: capital + energy; 0: rental */
    double gpu_hours;        /* GPUs billed (job + spares) x wall-clock hours */
    double rental_usd, capital_usd, energy_usd;
    double usd;              /* total */
    double usd_per_mtoken;
} mp_cost;

/** Cost of gpus_billed GPUs held for wall_s seconds, using energy_J at the facility meter, for
 *  tokens tokens (> 0). Errors: MP_ERR_INPUT naming a negative or non-finite input. */
mp_status mp_cost_compute(const mp_cost_opts *o, double gpus_billed, double wall_s,
                          double energy_J, double tokens, mp_cost *out, mp_diag *diag);

/** A GPU's power points, W: idle (no job) and active idle (a process at P0 clocks, no kernels):
 *  the measured figures where the power table has the GPU, else the shares of its TDP measured
 *  on H100 and V100 (the same values mp_energy_step uses; docs/energy.md). Returns 1 when they
 *  were measured for this GPU, 0 when derived (0 W each when the TDP is unknown too). */
int mp_energy_gpu_points(const mp_gpu *g, double *idle_W, double *wait_W);

#endif
