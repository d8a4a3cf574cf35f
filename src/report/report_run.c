/* src/report/report_run.c — the `run --json` object of a priced run (run.h mp_run_plan): the
 * job, the step's power and energy, the run's energy, carbon and cost, failures, the checkpoint,
 * goodput and wall-clock. One writer for `meshplan run --json` and the request layer's "run"
 * (api.h). */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>

#include "meshplan/report.h"
#include "meshplan/run.h"

/* What the writers read. */
typedef struct {
    const mp_model *m;
    const mp_cluster *cl;
    const mp_plan *p;
    const mp_estimate *e;
    const mp_run_opts *o;
    const mp_run_result *r;
} run_view;

/* JSON numbers: non-finite values (never expected) become null so the output always parses. */
static json_t *num(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static json_t *by_level(double gpu, double node, double facility)
{
    return json_pack("{s:o,s:o,s:o}", "gpu", num(gpu), "node", num(node), "facility", num(facility));
}

/* The step and its power: step_s ... power_model. */
static void json_step_power(json_t *root, const run_view *v)
{
    const mp_power *pw = &v->r->power;
    json_object_set_new(root, "step_s", num(pw->step_s));
    json_object_set_new(root, "step_uncapped_s", num(pw->step_uncapped_s));
    json_t *ph = json_object(), *phw = json_object();
    for (int i = 0; i < MP_PHASE_COUNT; i++) {
        json_object_set_new(ph, mp_phase_name((mp_phase)i), num(pw->phase_s[i]));
        json_object_set_new(phw, mp_phase_name((mp_phase)i), num(pw->phase_W[i]));
    }
    json_object_set_new(root, "phase_s", ph);
    json_object_set_new(root, "phase_power_W", phw);
    json_object_set_new(root, "energy_J_per_step", num(pw->energy_J_per_step_facility));
    json_object_set_new(root, "energy_J_per_mtoken", num(pw->energy_J_per_mtoken_facility));
    json_object_set_new(root, "energy_J_per_step_by_level",
                        by_level(pw->energy_J_per_step_gpu, pw->energy_J_per_step_node,
                                 pw->energy_J_per_step_facility));
    json_object_set_new(root, "energy_J_per_mtoken_by_level",
                        by_level(pw->energy_J_per_mtoken_gpu, pw->energy_J_per_mtoken_node,
                                 pw->energy_J_per_mtoken_facility));
    json_t *pj = json_object();
    json_object_set_new(pj, "gpu_avg", num(pw->gpu_avg_W));
    json_object_set_new(pj, "gpu_peak", num(pw->gpu_peak_W));
    json_object_set_new(pj, "gpu_idle", num(pw->gpu_idle_W));
    json_object_set_new(pj, "gpu_active_idle", num(pw->gpu_wait_W));
    json_object_set_new(pj, "gpu_tdp", num(pw->tdp_W));
    json_object_set_new(pj, "gpu_cap", num(pw->cap_W));
    json_object_set_new(pj, "node_avg", num(pw->node_avg_W));
    json_object_set_new(pj, "node_peak", num(pw->node_peak_W));
    json_object_set_new(pj, "node_idle", num(pw->node_idle_W));
    json_object_set_new(pj, "node_host", num(pw->node_overhead_W));
    json_object_set_new(pj, "node_host_max", num(pw->node_overhead_max_W));
    json_object_set_new(pj, "switches", num(pw->switch_W));
    json_object_set_new(pj, "facility_avg", num(pw->facility_avg_W));
    json_object_set_new(pj, "facility_peak", num(pw->facility_peak_W));
    json_object_set_new(root, "power_W", pj);
    json_object_set_new(root, "power_model",
                        json_pack("{s:b,s:s,s:f}", "unseen_gpu", pw->unseen_gpu, "gpu_source",
                                  pw->gpu_power_source, "pue", v->o->energy.pue));
}

/* Energy, carbon and cost of the run: energy_MWh ... cost. */
static void json_totals(json_t *root, const run_view *v)
{
    const mp_run_result *r = v->r;
    json_object_set_new(root, "energy_MWh", num(r->energy.MWh));
    json_object_set_new(root, "co2e_t", num(r->co2e_t));
    json_object_set_new(root, "grid_gco2_per_kwh", num(v->o->grid_gco2_per_kwh));
    json_object_set_new(root, "gpu_hours", num(r->gpu_hours));
    json_object_set_new(root, "gpu_hours_billed", num(r->cost.gpu_hours));
    json_object_set_new(root, "cost_usd", num(r->cost.usd));
    json_object_set_new(root, "cost_usd_per_mtoken", num(r->cost.usd_per_mtoken));
    json_object_set_new(root, "cost",
                        json_pack("{s:s,s:o,s:o,s:o}", "mode",
                                  r->cost.capex_mode ? "capital+energy" : "rental", "rental_usd",
                                  num(r->cost.rental_usd), "capital_usd", num(r->cost.capital_usd),
                                  "energy_usd", num(r->cost.energy_usd)));
}

/* Failure rates by cause and component, spares: the "failures" object. */
static json_t *json_failures(const run_view *v)
{
    const mp_run_result *r = v->r;
    const double per_day = 86400.0;
    json_t *fj = json_object(), *bc = json_object(), *bcomp = json_object();
    for (int i = 0; i < r->faults.ncauses; i++)
        json_object_set_new(bc, r->faults.cause[i].name, num(r->rates.by_cause_per_s[i] * per_day));
    for (int i = 0; i < MP_FC_COUNT; i++)
        json_object_set_new(bcomp, mp_fault_component_name((mp_fault_component)i),
                            num(r->rates.by_component_per_s[i] * per_day));
    json_object_set_new(fj, "interruptions_per_day", num(r->rates.total_per_s * per_day));
    json_object_set_new(fj, "mtbf_h", isfinite(r->mtbf_s) ? num(r->mtbf_s / 3600.0) : json_null());
    json_object_set_new(fj, "by_cause", bc);
    json_object_set_new(fj, "by_component", bcomp);
    json_object_set_new(fj, "needing_spare_per_day", num(r->rates.spare_per_s * per_day));
    json_object_set_new(fj, "expected_interruptions", num(r->expect.failures));
    json_object_set_new(fj, "spare_nodes", json_integer(r->spare_nodes));
    json_object_set_new(fj, "spare_nodes_auto", json_boolean(r->spare_auto));
    json_object_set_new(fj, "repair_h", num(v->o->repair_h));
    json_object_set_new(fj, "scale", num(v->o->failure_scale));
    json_object_set_new(fj, "source", json_string(r->faults.source));
    return fj;
}

static json_t *json_checkpoint(const mp_run_result *r)
{
    const mp_checkpoint *ck = &r->checkpoint;
    json_t *cj = json_object();
    json_object_set_new(cj, "bytes", num(ck->bytes));
    json_object_set_new(cj, "bytes_per_gpu", num(ck->bytes_per_gpu));
    json_object_set_new(cj, "async", json_boolean(ck->async));
    json_object_set_new(cj, "save_s", num(ck->save_s));
    json_object_set_new(cj, "block_s", num(ck->block_s));
    json_object_set_new(cj, "load_s", num(ck->load_s));
    json_object_set_new(cj, "interval_s", num(r->interval_s));
    json_object_set_new(cj, "interval_given", json_boolean(r->interval_given));
    json_object_set_new(cj, "optimal_interval_s", num(r->interval_daly_s));
    json_object_set_new(cj, "young_interval_s", num(r->interval_young_s));
    json_object_set_new(cj, "exact_interval_s", num(r->interval_exact_s));
    json_object_set_new(cj, "count", num(r->expect.checkpoints));
    return cj;
}

/* Goodput, wall-clock and where the time went: restart_s ... seed. */
static void json_outcome(json_t *root, const run_view *v)
{
    const mp_run_result *r = v->r;
    const mp_run_expect *ex = &r->expect;
    const mp_run_mc *mc = &r->mc;
    json_object_set_new(root, "restart_s", num(r->process.down_s));
    json_object_set_new(root, "goodput", num(mc->goodput_mean));
    json_object_set_new(root, "goodput_expected", num(ex->goodput));
    json_object_set_new(root, "goodput_mc",
                        json_pack("{s:o,s:o,s:o}", "mean", num(mc->goodput_mean), "p10",
                                  num(mc->goodput_p10), "p90", num(mc->goodput_p90)));
    json_t *wj = json_object();
    json_object_set_new(wj, "mean", num(mc->wall_mean_s));
    json_object_set_new(wj, "p10", num(mc->wall_p10_s));
    json_object_set_new(wj, "p90", num(mc->wall_p90_s));
    json_object_set_new(wj, "expected", num(ex->wall_s));
    json_object_set_new(wj, "no_failures", num(r->work_s + ex->ckpt_s));
    json_object_set_new(wj, "work", num(r->work_s));
    json_object_set_new(root, "wall_clock_s", wj);
    json_object_set_new(root, "time_s",
                        json_pack("{s:o,s:o,s:o,s:o,s:o}", "checkpoints", num(ex->ckpt_s), "lost",
                                  num(ex->lost_s), "restarts", num(ex->down_s), "spare_wait",
                                  num(ex->wait_s), "work", num(r->work_s)));
    json_object_set_new(root, "trials", json_integer(r->trials));
    json_object_set_new(root, "seed", json_integer((json_int_t)v->o->seed));
}

char *mp_report_run_json(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                         const mp_estimate *e, const mp_run_opts *o, const mp_run_result *r)
{
    const run_view view = {m, c, p, e, o, r}, *v = &view;
    json_t *root = json_object();
    if (!root)
        return NULL;
    char pbuf[512];
    mp_plan_format(v->p, pbuf, sizeof pbuf);
    json_object_set_new(root, "model", json_string(v->m->key));
    json_object_set_new(root, "gpu", json_string(v->cl->gpu.key));
    json_object_set_new(root, "num_gpus", json_integer(v->cl->num_gpus));
    json_object_set_new(root, "plan", json_string(pbuf));
    json_object_set_new(root, "feasible", json_boolean(v->e->feasible));
    json_t *reasons = json_array();
    for (int i = 0; i < v->e->nreasons; i++)
        json_array_append_new(reasons, json_string(v->e->reasons[i]));
    json_object_set_new(root, "reasons", reasons);
    json_object_set_new(root, "tokens", num(v->r->tokens));
    json_object_set_new(root, "steps", num(v->r->steps));
    json_step_power(root, v);
    json_totals(root, v);
    json_object_set_new(root, "failures", json_failures(v));
    json_object_set_new(root, "checkpoint", json_checkpoint(v->r));
    json_outcome(root, v);
    char *s = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    json_decref(root);
    return s;
}
