/* src/api/api_run.c — run as a request -> JSON call: the object `meshplan run --json` prints
 * for a whole training run of one plan on one cluster and a token budget — energy and power
 * (energy.h), cost, failures and checkpoints (faults.h), the expected run and its Monte Carlo
 * spread. The same composition of library calls as src/cli/cmd_run.c, with the same defaults
 * and constants (each sourced there and here); python/tests/test_api.py checks the two agree. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "meshplan/api.h"

/* Device-to-host copy rate of an asynchronous checkpoint's snapshot, per GPU. ASSUMED: pinned
 * copies reach about 25 GB/s, under half of a PCIe 5.0 x16 link (64 GB/s per direction). */
#define D2H_BPS 25e9
/* Target chance that a hardware failure finds no healthy spare (spare_nodes auto). */
#define SPARE_TARGET 0.01
/* Most failures simulated in one call (all trials together): ~1e-7 s each, ~20 s. */
#define SIM_MAX_FAILURES 2e8

typedef struct {
    double tokens, gco2, gbps, interval, restart_s, repair_h, fscale;
    int64_t trials, spares; /* spares -1: auto */
    uint64_t seed;
    int async;
    mp_energy_opts eo;
    mp_cost_opts co;
} run_opts;

/* What the run computes, for the JSON writer. */
typedef struct {
    mp_model m;
    mp_cluster cl;
    mp_plan p;
    mp_estimate *e;
    mp_power pw;
    mp_fault_model fm;
    mp_fault_rates fr;
    mp_checkpoint ck;
    mp_run_params rp;
    mp_run_expect ex;
    mp_run_mc mc;
    mp_run_energy re;
    mp_cost cost;
    double steps, work_s, mtbf_s, young, daly, exact, tau;
    int spares;
} run_result;

static void read_opts(mp_api_req *q, run_opts *o)
{
    /* Grid intensity 400 gCO2e/kWh: between the US average (~370 g, EIA 2023) and the world
     * average (~460 g, IEA 2023). Restart 600 s (detect, reschedule, initialise; ASSUMED, as in
     * cmd_run.c). Repair 24 h (ASSUMED). Checkpoint storage 500 GB/s (cmd_run.c). */
    *o = (run_opts){.gco2 = 400.0, .gbps = 500.0, .restart_s = 600.0, .repair_h = 24.0,
                    .fscale = 1.0, .trials = 1000, .spares = -1, .seed = 1};
    mp_energy_opts_init(&o->eo);
    mp_cost_opts_init(&o->co);
    if (!mp_api_num(q, "tokens", 1, 1e18, &o->tokens))
        mp_api_missing(q, "tokens", "training tokens in [1, 1e18], e.g. 15.6e12");
    mp_api_num(q, "price_gpu_hour", 0, 1e4, &o->co.price_gpu_hour_usd);
    mp_api_num(q, "capex_per_gpu", 0, 1e8, &o->co.capex_per_gpu_usd);
    mp_api_num(q, "amortization_years", 0.1, 100, &o->co.amortization_years);
    mp_api_num(q, "price_kwh", 0, 100, &o->co.price_kwh_usd);
    mp_api_num(q, "pue", 1, 5, &o->eo.pue);
    mp_api_num(q, "grid_gco2_per_kwh", 0, 5000, &o->gco2);
    mp_api_num(q, "power_cap_W", 1, 1e5, &o->eo.power_cap_W);
    mp_api_num(q, "host_util", 0, 1, &o->eo.host_util_frac);
    mp_api_num(q, "checkpoint_GBps", 1e-3, 1e9, &o->gbps);
    mp_api_num(q, "checkpoint_interval_s", 1e-3, 1e12, &o->interval);
    mp_api_num(q, "restart_s", 0, 1e9, &o->restart_s);
    mp_api_num(q, "repair_h", 0, 1e6, &o->repair_h);
    mp_api_num(q, "failure_scale", 0, 1e6, &o->fscale);
    mp_api_int(q, "trials", 1, 10000000, &o->trials);
    int64_t seed = 1;
    if (mp_api_int(q, "seed", 0, INT64_MAX, &seed))
        o->seed = (uint64_t)seed;
    mp_api_bool(q, "async_checkpoint", &o->async);
    const json_t *sp = json_object_get(q->root, "spare_nodes");
    if (sp && !(json_is_string(sp) && !strcmp(json_string_value(sp), "auto")))
        mp_api_int(q, "spare_nodes", 0, 1000000, &o->spares);
}

/* The number of NIC ports per node on the scale-out fabric: the catalog node of this GPU with
 * the same node size, else one per GPU (as cmd_run.c). */
static double nics_per_node(const mp_catalog *cat, const mp_cluster *cl)
{
    for (size_t i = 0; i < mp_catalog_node_count(cat); i++) {
        const mp_node *n = mp_catalog_node_at(cat, i);
        if (!strcmp(n->gpu, cl->gpu.key) && n->gpus_per_node == cl->gpus_per_node && n->nics_per_node > 0)
            return (double)n->nics_per_node;
    }
    return (double)cl->gpus_per_node;
}

/* Failures, checkpoint, the expected run and its Monte Carlo, energy and cost. */
static mp_status compute(mp_api_req *q, run_opts *o, run_result *x, mp_diag *d)
{
    mp_status st;
    const double nics = nics_per_node(q->cat, &x->cl);
    o->eo.scaleout_ports_per_node = nics;
    if ((st = mp_energy_step(&x->cl, &x->p, x->e, NULL, &o->eo, &x->pw, d)) != MP_OK)
        return st;
    const json_t *fj = json_object_get(q->root, "failures");
    if (!fj || json_is_null(fj) || (json_is_string(fj) && !strcmp(json_string_value(fj), "default"))) {
        mp_fault_model_default(&x->fm);
    } else if (!json_is_object(fj)) {
        mp_jr_bad(&q->r, "failures", fj, "\"default\" or a failure-model object (faults.h)");
        return MP_ERR_INPUT;
    } else {
        char *txt = json_dumps(fj, JSON_COMPACT | JSON_REAL_PRECISION(17));
        if (!txt)
            return MP_ERR_NOMEM;
        st = mp_fault_model_from_json(txt, strlen(txt), "request.failures", &x->fm, d);
        free(txt);
        if (st != MP_OK)
            return st;
    }
    const int64_t ngpus = x->cl.num_gpus;
    const mp_fault_fleet fleet = {(double)ngpus, x->pw.nodes, x->pw.nodes * nics};
    mp_fault_rates_for(&x->fm, &fleet, o->fscale, &x->fr);
    mp_param_count pc;
    mp_model_params(&x->m, (int)x->p.tp, &pc);
    /* 14 bytes per parameter: 16-bit weights + fp32 master weights + Adam m and v. */
    if ((st = mp_checkpoint_plan((double)pc.total, 14.0, (double)ngpus, 0.0, o->gbps * 1e9, D2H_BPS,
                                 o->async, &x->ck, d)) != MP_OK)
        return st;
    x->steps = ceil(o->tokens / x->e->tokens_per_step);
    x->work_s = x->steps * x->pw.step_s;
    x->mtbf_s = x->fr.total_per_s > 0 ? 1.0 / x->fr.total_per_s : INFINITY;
    const int known = isfinite(x->mtbf_s) && x->ck.block_s > 0;
    x->young = known ? mp_ckpt_interval_young(x->ck.block_s, x->mtbf_s) : x->work_s;
    x->daly = known ? mp_ckpt_interval_daly(x->ck.block_s, x->mtbf_s) : x->work_s;
    x->exact = known ? mp_ckpt_interval_exact(x->ck.block_s, x->mtbf_s) : x->work_s;
    x->tau = o->interval > 0 ? o->interval : fmin(x->daly, x->work_s);
    /* Asynchronous: the next snapshot cannot start before the previous write ended. */
    if (o->async && x->tau + x->ck.block_s < x->ck.save_s)
        x->tau = x->ck.save_s - x->ck.block_s;
    x->spares = o->spares < 0 ? mp_spares_for(x->fr.spare_per_s, o->repair_h * 3600.0, SPARE_TARGET)
                              : (int)o->spares;
    x->rp = (mp_run_params){
        .work_s = x->work_s,
        .interval_s = x->tau,
        .ckpt_s = x->ck.block_s,
        .down_s = o->restart_s + x->ck.load_s + x->ck.lag_s,
        .fail_per_s = x->fr.total_per_s,
        .spare_frac = x->fr.total_per_s > 0 ? x->fr.spare_per_s / x->fr.total_per_s : 0.0,
        .repair_s = o->repair_h * 3600.0,
        .spare_nodes = x->spares,
    };
    if ((st = mp_run_expected(&x->rp, &x->ex, d)) != MP_OK)
        return st;
    if (x->ex.failures > SIM_MAX_FAILURES) {
        mp_diag_add(d, "run: request.checkpoint_interval_s = %g: expected fewer interruptions than "
                    "%.3g to simulate (one failure every %g s): give a shorter interval or fewer "
                    "tokens", x->tau, x->ex.failures, x->mtbf_s);
        return MP_ERR_INPUT;
    }
    if (x->ex.failures * (double)o->trials > SIM_MAX_FAILURES) {
        long long t2 = (long long)(SIM_MAX_FAILURES / fmax(x->ex.failures, 1.0));
        o->trials = t2 > 0 ? t2 : 1; /* the CLI says so on stderr; "trials" in the answer shows it */
    }
    if ((st = mp_run_simulate(&x->rp, (int)o->trials, o->seed, &x->mc, d)) != MP_OK)
        return st;
    mp_energy_run(&x->pw, o->eo.pue, x->work_s + x->ex.lost_s,
                  x->ex.ckpt_s + x->ex.down_s + x->ex.wait_s, x->ex.wall_s, x->spares, &x->re);
    const double gpus_billed = (double)ngpus + x->spares * (double)x->cl.gpus_per_node;
    return mp_cost_compute(&o->co, gpus_billed, x->ex.wall_s, x->re.total_J,
                           x->steps * x->e->tokens_per_step, &x->cost, d);
}

#define R mp_api_real

/* The power and energy part of the answer. */
static void power_json(json_t *root, const run_opts *o, const run_result *x)
{
    const mp_power *pw = &x->pw;
    json_t *ph = json_object(), *phw = json_object();
    for (int i = 0; i < MP_PHASE_COUNT; i++) {
        json_object_set_new(ph, mp_phase_name((mp_phase)i), R(pw->phase_s[i]));
        json_object_set_new(phw, mp_phase_name((mp_phase)i), R(pw->phase_W[i]));
    }
    json_object_set_new(root, "phase_s", ph);
    json_object_set_new(root, "phase_power_W", phw);
    json_object_set_new(root, "energy_J_per_step", R(pw->energy_J_per_step_facility));
    json_object_set_new(root, "energy_J_per_mtoken", R(pw->energy_J_per_mtoken_facility));
    json_object_set_new(root, "energy_J_per_step_by_level",
                        json_pack("{s:o,s:o,s:o}", "gpu", R(pw->energy_J_per_step_gpu), "node",
                                  R(pw->energy_J_per_step_node), "facility",
                                  R(pw->energy_J_per_step_facility)));
    json_object_set_new(root, "energy_J_per_mtoken_by_level",
                        json_pack("{s:o,s:o,s:o}", "gpu", R(pw->energy_J_per_mtoken_gpu), "node",
                                  R(pw->energy_J_per_mtoken_node), "facility",
                                  R(pw->energy_J_per_mtoken_facility)));
    json_t *pj = json_object();
    json_object_set_new(pj, "gpu_avg", R(pw->gpu_avg_W));
    json_object_set_new(pj, "gpu_peak", R(pw->gpu_peak_W));
    json_object_set_new(pj, "gpu_idle", R(pw->gpu_idle_W));
    json_object_set_new(pj, "gpu_active_idle", R(pw->gpu_wait_W));
    json_object_set_new(pj, "gpu_tdp", R(pw->tdp_W));
    json_object_set_new(pj, "gpu_cap", R(pw->cap_W));
    json_object_set_new(pj, "node_avg", R(pw->node_avg_W));
    json_object_set_new(pj, "node_peak", R(pw->node_peak_W));
    json_object_set_new(pj, "node_idle", R(pw->node_idle_W));
    json_object_set_new(pj, "node_host", R(pw->node_overhead_W));
    json_object_set_new(pj, "node_host_max", R(pw->node_overhead_max_W));
    json_object_set_new(pj, "switches", R(pw->switch_W));
    json_object_set_new(pj, "facility_avg", R(pw->facility_avg_W));
    json_object_set_new(pj, "facility_peak", R(pw->facility_peak_W));
    json_object_set_new(root, "power_W", pj);
    json_object_set_new(root, "power_model", json_pack("{s:b,s:s,s:f}", "unseen_gpu", pw->unseen_gpu,
                                                        "gpu_source", pw->gpu_power_source, "pue",
                                                        o->eo.pue));
    const double co2e_t = x->re.MWh * o->gco2 / 1000.0; /* MWh x 1000 kWh x g/kWh / 1e6 g/t */
    json_object_set_new(root, "energy_MWh", R(x->re.MWh));
    json_object_set_new(root, "co2e_t", R(co2e_t));
    json_object_set_new(root, "grid_gco2_per_kwh", R(o->gco2));
    json_object_set_new(root, "gpu_hours", R((double)x->cl.num_gpus * x->ex.wall_s / 3600.0));
    json_object_set_new(root, "gpu_hours_billed", R(x->cost.gpu_hours));
    json_object_set_new(root, "cost_usd", R(x->cost.usd));
    json_object_set_new(root, "cost_usd_per_mtoken", R(x->cost.usd_per_mtoken));
    json_object_set_new(root, "cost", json_pack("{s:s,s:o,s:o,s:o}", "mode",
                                                x->cost.capex_mode ? "capital+energy" : "rental",
                                                "rental_usd", R(x->cost.rental_usd), "capital_usd",
                                                R(x->cost.capital_usd), "energy_usd",
                                                R(x->cost.energy_usd)));
}

/* The failures, checkpoint, goodput and wall-clock part of the answer. */
static void run_part_json(json_t *root, const run_opts *o, const run_result *x)
{
    const double per_day = 86400.0;
    json_t *fj = json_object(), *bc = json_object(), *bcomp = json_object();
    for (int i = 0; i < x->fm.ncauses; i++)
        json_object_set_new(bc, x->fm.cause[i].name, R(x->fr.by_cause_per_s[i] * per_day));
    for (int i = 0; i < MP_FC_COUNT; i++)
        json_object_set_new(bcomp, mp_fault_component_name((mp_fault_component)i),
                            R(x->fr.by_component_per_s[i] * per_day));
    json_object_set_new(fj, "interruptions_per_day", R(x->fr.total_per_s * per_day));
    json_object_set_new(fj, "mtbf_h", R(x->mtbf_s / 3600.0));
    json_object_set_new(fj, "by_cause", bc);
    json_object_set_new(fj, "by_component", bcomp);
    json_object_set_new(fj, "needing_spare_per_day", R(x->fr.spare_per_s * per_day));
    json_object_set_new(fj, "expected_interruptions", R(x->ex.failures));
    json_object_set_new(fj, "spare_nodes", json_integer(x->spares));
    json_object_set_new(fj, "spare_nodes_auto", json_boolean(o->spares < 0));
    json_object_set_new(fj, "repair_h", R(o->repair_h));
    json_object_set_new(fj, "scale", R(o->fscale));
    json_object_set_new(fj, "source", json_string(x->fm.source));
    json_object_set_new(root, "failures", fj);
    json_t *cj = json_object();
    json_object_set_new(cj, "bytes", R(x->ck.bytes));
    json_object_set_new(cj, "bytes_per_gpu", R(x->ck.bytes_per_gpu));
    json_object_set_new(cj, "async", json_boolean(x->ck.async));
    json_object_set_new(cj, "save_s", R(x->ck.save_s));
    json_object_set_new(cj, "block_s", R(x->ck.block_s));
    json_object_set_new(cj, "load_s", R(x->ck.load_s));
    json_object_set_new(cj, "interval_s", R(x->tau));
    json_object_set_new(cj, "interval_given", json_boolean(o->interval > 0));
    json_object_set_new(cj, "optimal_interval_s", R(x->daly));
    json_object_set_new(cj, "young_interval_s", R(x->young));
    json_object_set_new(cj, "exact_interval_s", R(x->exact));
    json_object_set_new(cj, "count", R(x->ex.checkpoints));
    json_object_set_new(root, "checkpoint", cj);
    json_object_set_new(root, "restart_s", R(x->rp.down_s));
    json_object_set_new(root, "goodput", R(x->mc.goodput_mean));
    json_object_set_new(root, "goodput_expected", R(x->ex.goodput));
    json_object_set_new(root, "goodput_mc", json_pack("{s:o,s:o,s:o}", "mean", R(x->mc.goodput_mean),
                                                      "p10", R(x->mc.goodput_p10), "p90",
                                                      R(x->mc.goodput_p90)));
    json_object_set_new(root, "wall_clock_s",
                        json_pack("{s:o,s:o,s:o,s:o,s:o,s:o}", "mean", R(x->mc.wall_mean_s), "p10",
                                  R(x->mc.wall_p10_s), "p90", R(x->mc.wall_p90_s), "expected",
                                  R(x->ex.wall_s), "no_failures", R(x->work_s + x->ex.ckpt_s),
                                  "work", R(x->work_s)));
    json_object_set_new(root, "time_s", json_pack("{s:o,s:o,s:o,s:o,s:o}", "checkpoints",
                                                  R(x->ex.ckpt_s), "lost", R(x->ex.lost_s),
                                                  "restarts", R(x->ex.down_s), "spare_wait",
                                                  R(x->ex.wait_s), "work", R(x->work_s)));
    json_object_set_new(root, "trials", json_integer((json_int_t)o->trials));
    json_object_set_new(root, "seed", json_integer((json_int_t)o->seed));
}

static json_t *answer(const run_opts *o, const run_result *x)
{
    json_t *root = json_object();
    char pbuf[512];
    mp_plan_format(&x->p, pbuf, sizeof pbuf);
    json_object_set_new(root, "model", json_string(x->m.key));
    json_object_set_new(root, "gpu", json_string(x->cl.gpu.key));
    json_object_set_new(root, "num_gpus", json_integer((json_int_t)x->cl.num_gpus));
    json_object_set_new(root, "plan", json_string(pbuf));
    json_object_set_new(root, "feasible", json_boolean(x->e->feasible));
    json_t *reasons = json_array();
    for (int i = 0; i < x->e->nreasons; i++)
        json_array_append_new(reasons, json_string(x->e->reasons[i]));
    json_object_set_new(root, "reasons", reasons);
    json_object_set_new(root, "tokens", R(x->steps * x->e->tokens_per_step));
    json_object_set_new(root, "steps", R(x->steps));
    json_object_set_new(root, "step_s", R(x->pw.step_s));
    json_object_set_new(root, "step_uncapped_s", R(x->pw.step_uncapped_s));
    power_json(root, o, x);
    run_part_json(root, o, x);
    return root;
}

mp_status mp_api_run_json(const char *request, size_t len, char **out, mp_diag *diag)
{
    static const char *const known[] = {
        "model", "gpu", "gpus", "gpus_per_node", "scale_out", "catalog", "plan", "tokens",
        "price_gpu_hour", "capex_per_gpu", "amortization_years", "price_kwh", "pue",
        "grid_gco2_per_kwh", "power_cap_W", "host_util", "checkpoint_GBps", "checkpoint_interval_s",
        "restart_s", "repair_h", "spare_nodes", "failures", "failure_scale", "trials", "seed",
        "async_checkpoint", NULL};
    *out = NULL;
    mp_api_req q;
    mp_status st = mp_api_req_open(&q, "run", request, len, known, diag);
    if (st != MP_OK)
        return st;
    run_opts o;
    run_result *x = calloc(1, sizeof *x);
    const char *plan = mp_api_str(&q, "plan");
    if (!plan)
        mp_api_missing(&q, "plan", "a plan string, e.g. \"tp=8,pp=2,gb=128\"");
    read_opts(&q, &o);
    if (!x) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    if ((st = mp_api_req_status(&q)) != MP_OK || (st = mp_api_model(&q, &x->m)) != MP_OK ||
        (st = mp_api_cluster(&q, &x->cl)) != MP_OK)
        goto done;
    mp_plan_init_default(&x->p);
    if ((st = mp_plan_parse(plan, &x->p, diag)) != MP_OK)
        goto done;
    if (mp_xsync_check_single(&x->p.xsync, diag)) {
        st = MP_ERR_INPUT;
        goto done;
    }
    if ((st = mp_plan_resolve(&x->p, &x->m, x->cl.num_gpus, diag)) != MP_OK)
        goto done;
    if (!(x->e = malloc(sizeof *x->e))) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    if ((st = mp_estimate_plan(&x->m, &x->cl, &x->p, NULL, x->e, diag)) != MP_OK ||
        (st = compute(&q, &o, x, diag)) != MP_OK)
        goto done;
    st = mp_api_dump(answer(&o, x), JSON_INDENT(2) | JSON_REAL_PRECISION(10), out, diag);
done:
    if (x)
        free(x->e);
    free(x);
    mp_api_req_close(&q);
    return st;
}
