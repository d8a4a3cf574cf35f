/* src/run/run.c — time-to-train (include/meshplan/run.h): one estimated step priced as a whole
 * run. It composes the energy (src/energy), failure, checkpoint and goodput (src/faults) and cost
 * models; it holds no formula of its own beyond the glue written beside each line, and never
 * calls the estimator. */
#include <math.h>
#include <string.h>

#include "meshplan/run.h"

void mp_run_opts_init(mp_run_opts *o)
{
    memset(o, 0, sizeof *o);
    o->tokens = 0.0; /* no default: the caller says how long the run is */
    mp_energy_opts_init(&o->energy);
    mp_cost_opts_init(&o->cost);
    /* Between the US average (~370 gCO2e/kWh, EIA 2023) and the world average (~460 g, IEA 2023). */
    o->grid_gco2_per_kwh = 400.0;
    /* ASSUMED: the aggregate bandwidth of a large cluster's parallel file system. */
    o->checkpoint_Bps = 500e9;
    /* 2-byte weights + fp32 master weights + Adam m and v (Rajbhandari et al. 2020, Sec. 3). */
    o->checkpoint_bytes_per_param = 14.0;
    /* ASSUMED: pinned device-to-host copies reach about 25 GB/s per GPU, under half of a PCIe 5.0
     * x16 link (64 GB/s per direction). */
    o->d2h_Bps = 25e9;
    o->async_checkpoint = 0;
    o->checkpoint_interval_s = 0.0; /* the optimum (Daly 2006) */
    /* ASSUMED: detect, reschedule, initialise; with Llama 3's interruption rate it gives the >90%
     * effective training time Dubey et al. 2024 report. */
    o->restart_s = 600.0;
    o->repair_h = 24.0; /* ASSUMED: a failed node is fixed or replaced a day later */
    o->spare_nodes = -1;
    o->spare_target_frac = 0.01; /* <1% chance a hardware failure finds no healthy spare */
    o->faults = NULL;            /* Llama 3 Table 5 (mp_fault_model_default) */
    o->failure_scale = 1.0;
    o->trials = 1000;
    o->seed = 1;
    /* ~1e-7 s per simulated failure (bench/bench_run.c): keep one command under ~20 s. */
    o->max_sim_failures = 2e8;
}

/* One range check: 1 (and the reason in d) when x is not a finite value in [lo, hi]. */
static int out_of(const char *field, double x, double lo, double hi, mp_diag *d)
{
    if (isfinite(x) && x >= lo && x <= hi)
        return 0;
    mp_diag_add(d, "run.%s = %g: expected a number in [%g, %g]", field, x, lo, hi);
    return 1;
}

static mp_status check_opts(const mp_run_opts *o, mp_diag *d)
{
    int bad = out_of("tokens", o->tokens, 1, 1e18, d);
    bad += out_of("grid_gco2_per_kwh", o->grid_gco2_per_kwh, 0, 5000, d);
    bad += out_of("checkpoint_Bps", o->checkpoint_Bps, 1e-300, INFINITY, d);
    bad += out_of("checkpoint_bytes_per_param", o->checkpoint_bytes_per_param, 1e-300, 1e6, d);
    bad += out_of("d2h_Bps", o->d2h_Bps, 1e-300, INFINITY, d);
    bad += out_of("checkpoint_interval_s", o->checkpoint_interval_s, 0, 1e12, d);
    bad += out_of("restart_s", o->restart_s, 0, 1e9, d);
    bad += out_of("repair_h", o->repair_h, 0, 1e6, d);
    bad += out_of("spare_nodes", o->spare_nodes, -1, 1e6, d);
    bad += out_of("failure_scale", o->failure_scale, 0, 1e6, d);
    bad += out_of("trials", (double)o->trials, 1, 1e7, d);
    bad += out_of("max_sim_failures", o->max_sim_failures, 1, 1e15, d);
    if (!(o->spare_target_frac > 0 && o->spare_target_frac < 1)) {
        mp_diag_add(d, "run.spare_target_frac = %g: expected a number in (0, 1)",
                    o->spare_target_frac);
        bad++;
    }
    return bad ? MP_ERR_INPUT : MP_OK;
}

/* The step's power, and the job's failure rates over its GPUs, nodes and NIC ports. */
static mp_status price_step_and_failures(const mp_cluster *c, const mp_plan *p,
                                         const mp_estimate *e, const mp_run_opts *o,
                                         mp_run_result *r, mp_diag *d)
{
    mp_status st = mp_energy_step(c, p, e, NULL, &o->energy, &r->power, d);
    if (st != MP_OK)
        return st;
    /* NIC ports per node: as the power model counts them, else one per GPU. */
    r->nics_per_node = o->energy.scaleout_ports_per_node > 0 ? o->energy.scaleout_ports_per_node
                                                              : (double)c->gpus_per_node;
    if (o->faults)
        r->faults = *o->faults;
    else
        mp_fault_model_default(&r->faults);
    const mp_fault_fleet fleet = {(double)c->num_gpus, r->power.nodes,
                                  r->power.nodes * r->nics_per_node};
    mp_fault_rates_for(&r->faults, &fleet, o->failure_scale, &r->rates);
    r->mtbf_s = r->rates.total_per_s > 0 ? 1.0 / r->rates.total_per_s : INFINITY;
    return MP_OK;
}

/* The checkpoint, the work, the interval (given or optimal) and the spares: the process that
 * mp_run_expected and mp_run_simulate take. */
static mp_status plan_checkpoints(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                                  const mp_estimate *e, const mp_run_opts *o, mp_run_result *r,
                                  mp_diag *d)
{
    mp_param_count pc;
    mp_model_params(m, (int)p->tp, &pc);
    r->params_count = pc.total;
    mp_status st = mp_checkpoint_plan((double)pc.total, o->checkpoint_bytes_per_param,
                                      (double)c->num_gpus, 0.0, o->checkpoint_Bps, o->d2h_Bps,
                                      o->async_checkpoint, &r->checkpoint, d);
    if (st != MP_OK)
        return st;
    const mp_checkpoint *ck = &r->checkpoint;
    r->steps = ceil(o->tokens / e->tokens_per_step);
    r->tokens = r->steps * e->tokens_per_step;
    r->work_s = r->steps * r->power.step_s;
    /* Intervals: Young 1974, Daly 2006 and the exact optimum (faults.h); with no failure or no
     * stall there is nothing to trade, and one segment of all the work is best. */
    const int trade = isfinite(r->mtbf_s) && ck->block_s > 0;
    r->interval_young_s = trade ? mp_ckpt_interval_young(ck->block_s, r->mtbf_s) : r->work_s;
    r->interval_daly_s = trade ? mp_ckpt_interval_daly(ck->block_s, r->mtbf_s) : r->work_s;
    r->interval_exact_s = trade ? mp_ckpt_interval_exact(ck->block_s, r->mtbf_s) : r->work_s;
    r->interval_given = o->checkpoint_interval_s > 0;
    double tau = r->interval_given ? o->checkpoint_interval_s : fmin(r->interval_daly_s, r->work_s);
    /* Asynchronous: the next snapshot cannot start before the previous write ended. */
    if (o->async_checkpoint && tau + ck->block_s < ck->save_s)
        tau = ck->save_s - ck->block_s;
    r->interval_s = tau;
    const double repair_s = o->repair_h * 3600.0;
    r->spare_auto = o->spare_nodes < 0;
    r->spare_nodes = r->spare_auto
                         ? mp_spares_for(r->rates.spare_per_s, repair_s, o->spare_target_frac)
                         : o->spare_nodes;
    r->process = (mp_run_params){
        .work_s = r->work_s,
        .interval_s = tau,
        .ckpt_s = ck->block_s,
        .down_s = o->restart_s + ck->load_s + ck->lag_s,
        .fail_per_s = r->rates.total_per_s,
        .spare_frac = r->rates.total_per_s > 0 ? r->rates.spare_per_s / r->rates.total_per_s : 0.0,
        .repair_s = repair_s,
        .spare_nodes = r->spare_nodes,
    };
    return MP_OK;
}

/* The expectation, then as many Monte Carlo trials as max_sim_failures allows. */
static mp_status expect_and_simulate(const mp_run_opts *o, mp_run_result *r, mp_diag *d)
{
    mp_status st = mp_run_expected(&r->process, &r->expect, d);
    if (st != MP_OK)
        return st;
    const double fails = r->expect.failures;
    if (fails > o->max_sim_failures) {
        mp_diag_add(d, "the run would see %.3g interruptions (checkpoint interval %g s, one "
                       "failure every %g s): too many to simulate; give a shorter checkpoint "
                       "interval (checkpoint_interval_s, --checkpoint-interval-s) or fewer tokens",
                    fails, r->interval_s, r->mtbf_s);
        return MP_ERR_RANGE;
    }
    r->trials = o->trials;
    if (fails * (double)o->trials > o->max_sim_failures) {
        const int64_t fit = (int64_t)(o->max_sim_failures / fmax(fails, 1.0));
        r->trials = fit > 0 ? fit : 1;
    }
    return mp_run_simulate(&r->process, (int)r->trials, o->seed, &r->mc, d);
}

/* Energy at the meter, cost and carbon of the expected run. */
static mp_status price_run(const mp_cluster *c, const mp_run_opts *o, mp_run_result *r,
                           mp_diag *d)
{
    const mp_run_expect *ex = &r->expect;
    /* Running: the work and the work redone; stalled: checkpoints, restarts, waits for spares. */
    mp_energy_run(&r->power, o->energy.pue, r->work_s + ex->lost_s,
                  ex->ckpt_s + ex->down_s + ex->wait_s, ex->wall_s, r->spare_nodes, &r->energy);
    r->gpus_billed = (double)c->num_gpus + r->spare_nodes * (double)c->gpus_per_node;
    mp_status st = mp_cost_compute(&o->cost, r->gpus_billed, ex->wall_s, r->energy.total_J,
                                   r->tokens, &r->cost, d);
    if (st != MP_OK)
        return st;
    r->co2e_t = r->energy.MWh * o->grid_gco2_per_kwh / 1000.0; /* MWh x 1000 kWh x g/kWh / 1e6 g/t */
    r->gpu_hours = (double)c->num_gpus * ex->wall_s / 3600.0;
    return MP_OK;
}

mp_status mp_run_plan(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                      const mp_estimate *e, const mp_run_opts *o, mp_run_result *out,
                      mp_diag *diag)
{
    memset(out, 0, sizeof *out);
    mp_status st = check_opts(o, diag);
    if (st != MP_OK)
        return st;
    if (!(e->tokens_per_step > 0) || c->num_gpus < 1) {
        mp_diag_add(diag, "run: the estimate has %g tokens per step on %lld GPUs: expected a "
                          "step of the plan on at least one GPU", e->tokens_per_step,
                    (long long)c->num_gpus);
        return MP_ERR_INPUT;
    }
    if ((st = price_step_and_failures(c, p, e, o, out, diag)) != MP_OK ||
        (st = plan_checkpoints(m, c, p, e, o, out, diag)) != MP_OK ||
        (st = expect_and_simulate(o, out, diag)) != MP_OK)
        return st;
    return price_run(c, o, out, diag);
}
