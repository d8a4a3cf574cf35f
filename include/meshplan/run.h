/* meshplan/run.h — time-to-train: a whole training run of one plan on one cluster.
 *
 * A composer (DESIGN.md): from a training step already estimated (mp_estimate_plan) it prices a
 * run of a token budget — the step's power and energy (energy.h), the job's failure rates, its
 * checkpoint and the checkpoint interval, spare nodes, restarts (faults.h), then the expected
 * wall-clock and a seeded Monte Carlo of it, the run's energy, CO2e and cost. It never calls back
 * into the estimator. `meshplan run` is this call plus option parsing and printing.
 *
 * Every default below is set by mp_run_opts_init and carries its source beside it; docs/faults.md
 * and docs/energy.md derive the formulas. Cost: dominated by the Monte Carlo, about 1e-7 s per
 * simulated failure (bench/bench_run.c); the simulation is capped at max_sim_failures in all.
 */
#ifndef MESHPLAN_RUN_H
#define MESHPLAN_RUN_H

#include <stdint.h>

#include "meshplan/energy.h"
#include "meshplan/estimate.h"
#include "meshplan/faults.h"
#include "meshplan/model.h"
#include "meshplan/plan.h"
#include "meshplan/status.h"
#include "meshplan/topo.h"

/** What the run is and the assumptions it is priced with. Set every field through
 *  mp_run_opts_init, then change what you know; `tokens` has no default and must be set. */
typedef struct {
    double tokens;                   /* training tokens to run, [1, 1e18]; rounded up to whole
                                        steps. No default (0 is refused) */
    mp_energy_opts energy;           /* the power model (mp_energy_opts_init). Its
                                        scaleout_ports_per_node also counts the NIC ports that can
                                        fail (0 = one per GPU) */
    mp_cost_opts cost;               /* rental or capital + energy (mp_cost_opts_init) */
    double grid_gco2_per_kwh;        /* grid carbon intensity, gCO2e/kWh, [0, 5000] */
    double checkpoint_Bps;           /* aggregate storage write and read bandwidth, bytes/s, > 0 */
    double checkpoint_bytes_per_param; /* state saved per parameter, bytes, > 0 */
    double d2h_Bps;                  /* per-GPU device-to-host copy rate of an asynchronous
                                        checkpoint's snapshot, bytes/s, > 0 */
    int async_checkpoint;            /* 1: snapshot to host memory, write in the background */
    double checkpoint_interval_s;    /* 0: the optimal interval (Daly 2006); else > 0 */
    double restart_s;                /* detect, reschedule and initialise after an interruption,
                                        s, >= 0 (the checkpoint load is added) */
    double repair_h;                 /* a failed node is back this long after, hours, >= 0 */
    int spare_nodes;                 /* healthy spare nodes held beside the job, >= 0; -1: the
                                        fewest that keep the chance of finding none at or below
                                        spare_target_frac */
    double spare_target_frac;        /* (0, 1) */
    const mp_fault_model *faults;    /* failure causes; NULL: mp_fault_model_default (Llama 3) */
    double failure_scale;            /* every failure rate times this, >= 0 (1 = as given) */
    int64_t trials;                  /* Monte Carlo runs, [1, 1e7] */
    uint64_t seed;                   /* the Monte Carlo's seed (same seed, same answer) */
    double max_sim_failures;         /* most failures simulated, all trials together, > 0: more
                                        trials than fit are cut (mp_run_result.trials says how
                                        many ran); one run over it is refused */
} mp_run_opts;

/** The defaults, each with its source:
 *    grid_gco2_per_kwh 400: between the US average (~370 g, EIA 2023) and the world average
 *      (~460 g, IEA 2023);
 *    checkpoint_Bps 500e9: ASSUMED, a parallel file system of a large training cluster;
 *    checkpoint_bytes_per_param 14: 2-byte weights + fp32 master weights + Adam m and v
 *      (Rajbhandari et al. 2020, Sec. 3, without the gradients);
 *    d2h_Bps 25e9: ASSUMED, pinned copies reach about 25 GB/s, under half of a PCIe 5.0 x16
 *      link (64 GB/s per direction);
 *    checkpoint_interval_s 0 (optimal), async_checkpoint 0;
 *    restart_s 600: ASSUMED (detect, reschedule, initialise); with Llama 3's interruption rate
 *      it gives the >90% effective training time Dubey et al. 2024 report;
 *    repair_h 24: ASSUMED, a failed node is fixed or replaced a day later;
 *    spare_nodes -1 (auto) with spare_target_frac 0.01;
 *    faults NULL (Llama 3 Table 5), failure_scale 1;
 *    trials 1000, seed 1;
 *    max_sim_failures 2e8: at ~1e-7 s per simulated failure, about 20 s;
 *    energy and cost: mp_energy_opts_init, mp_cost_opts_init. tokens 0 (must be set). */
void mp_run_opts_init(mp_run_opts *o);

/** A priced run. Times in seconds, energy in J unless named otherwise. */
typedef struct {
    int64_t params_count;            /* model parameters, all counted once (mp_param_count.total) */
    double steps;                    /* ceil(tokens / tokens_per_step) */
    double tokens;                   /* tokens actually run: steps x tokens_per_step */
    double work_s;                   /* steps x the step (after the power cap) */
    mp_power power;                  /* one step's power and energy */
    double nics_per_node;            /* scale-out NIC ports per node counted for failures */
    mp_fault_model faults;           /* the fault model used (a copy: cause names and source) */
    mp_fault_rates rates;            /* the job's failure rates, after failure_scale */
    double mtbf_s;                   /* 1 / rates.total_per_s; INFINITY with no failures */
    mp_checkpoint checkpoint;        /* size and timing */
    double interval_s;               /* the checkpoint interval used */
    int interval_given;              /* 1: opts.checkpoint_interval_s; 0: min(Daly, work_s) */
    double interval_young_s;         /* Young 1974 (work_s when there is no failure or stall) */
    double interval_daly_s;          /* Daly 2006, the optimum used by default (idem) */
    double interval_exact_s;         /* the exact minimiser of the expectation (idem) */
    int spare_nodes;                 /* spares held */
    int spare_auto;                  /* 1: chosen for opts.spare_target_frac */
    mp_run_params process;           /* the failure process simulated and expected */
    mp_run_expect expect;            /* analytical expectation */
    int64_t trials;                  /* Monte Carlo runs made (<= opts.trials, see
                                        max_sim_failures) */
    mp_run_mc mc;                    /* the Monte Carlo */
    mp_run_energy energy;            /* the whole run at the facility meter */
    double gpus_billed;              /* the job's GPUs + the spares' */
    mp_cost cost;
    double co2e_t;                   /* energy.MWh x grid intensity, tonnes CO2e */
    double gpu_hours;                /* the job's GPUs x expected wall-clock, hours */
} mp_run_result;

/** Price a whole run of plan p (resolved, mp_plan_resolve) of model m on cluster c, whose step
 *  e was estimated by mp_estimate_plan with the default estimate options. o: the run and its
 *  assumptions (mp_run_opts_init, then set o->tokens). out receives every figure above; it is
 *  large (the fault model is copied): keep it off small stacks.
 *  The run: steps = ceil(tokens / tokens_per_step) steps of the power-capped step; failures from
 *  the fault model scaled to this job's GPUs, nodes and NIC ports (faults.h); a checkpoint of
 *  params x bytes_per_param at checkpoint_Bps; interval as given or the Daly optimum (an
 *  asynchronous snapshot cannot start before the previous write ended); spares, restarts and
 *  repairs as mp_run_params describes; energy (mp_energy_run), cost (mp_cost_compute) and
 *  CO2e = MWh x 1000 kWh x g/kWh / 1e6 g/t.
 *  Errors: MP_ERR_INPUT naming an option out of range (its mp_run_opts field), or what
 *  mp_energy_step, mp_checkpoint_plan, mp_run_expected or mp_cost_compute refuse; MP_ERR_RANGE
 *  when the expectation overflows or one run would see more than max_sim_failures
 *  interruptions (too many to simulate); MP_ERR_NOMEM. diag names the field and the value. */
mp_status mp_run_plan(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                      const mp_estimate *e, const mp_run_opts *o, mp_run_result *out,
                      mp_diag *diag);

#endif
