/* tests/test_run.c — time-to-train as a library call (mp_run_plan, include/meshplan/run.h).
 *
 * Hand-derived figures for Llama-2-7B on 8 H100 (tp=2, gb=64, seq=4096: 262,144 tokens a step)
 * with one failure cause chosen so the job fails once an hour and a storage bandwidth chosen so
 * a checkpoint stalls exactly 10 s; each expected value is worked out beside its assertion. The
 * step itself is the estimator's (tested elsewhere): here only what the run adds to it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "meshplan/meshplan.h"
#include "test_util.h"

typedef struct {
    mp_model m;
    mp_cluster c;
    mp_plan p;
    mp_estimate e;
    mp_run_result r;
    mp_fault_model fm;
} job;

static job g_job; /* the estimate and the result are large: keep them off the stack */

static job *make_job(void)
{
    mp_diag d = {0};
    const mp_model *m = mp_catalog_model(g_cat, "llama2-7b");
    assert_non_null(m);
    g_job.m = *m;
    assert_int_equal(mp_cluster_from_catalog(g_cat, "h100-sxm5-80gb", 8, 0, NULL, &g_job.c, &d), MP_OK);
    mp_plan_init_default(&g_job.p);
    assert_int_equal(mp_plan_parse("tp=2,mb=1,gb=64,seq=4096", &g_job.p, &d), MP_OK);
    assert_int_equal(mp_plan_resolve(&g_job.p, &g_job.m, 8, &d), MP_OK);
    assert_int_equal(mp_estimate_plan(&g_job.m, &g_job.c, &g_job.p, NULL, &g_job.e, &d), MP_OK);
    /* One cause, per GPU, 1 / (8 x 3600 s): eight GPUs fail once an hour together. */
    memset(&g_job.fm, 0, sizeof g_job.fm);
    g_job.fm.ncauses = 1;
    strcpy(g_job.fm.cause[0].name, "hourly");
    g_job.fm.cause[0].component = MP_FC_GPU;
    g_job.fm.cause[0].unit = MP_PER_GPU;
    g_job.fm.cause[0].rate_per_unit_s = 1.0 / (8 * 3600.0);
    g_job.fm.cause[0].needs_spare = 0;
    strcpy(g_job.fm.source, "test: once an hour");
    return &g_job;
}

/* The options of the hand-derived case: 1e9 tokens, the hourly failure, a 10 s checkpoint. */
static void hand_opts(const job *j, mp_run_opts *o)
{
    mp_run_opts_init(o);
    o->tokens = 1e9;
    o->faults = &j->fm;
    mp_param_count pc;
    mp_model_params(&j->m, 2, &pc);
    /* 14 bytes per parameter written at 14 P / 10 bytes/s: a 10 s synchronous checkpoint. */
    o->checkpoint_Bps = 14.0 * (double)pc.total / 10.0;
    o->trials = 200;
    o->seed = 3;
}

static void test_defaults(void **state)
{
    (void)state;
    mp_run_opts o;
    mp_run_opts_init(&o);
    assert_true(o.tokens == 0.0); /* must be set */
    assert_close(o.grid_gco2_per_kwh, 400.0, 0);
    assert_close(o.checkpoint_Bps, 500e9, 0);
    assert_close(o.checkpoint_bytes_per_param, 14.0, 0);
    assert_close(o.restart_s, 600.0, 0);
    assert_close(o.repair_h, 24.0, 0);
    assert_int_equal(o.spare_nodes, -1);
    assert_int_equal(o.trials, 1000);
    assert_null(o.faults);
}

static void test_hand_checked(void **state)
{
    (void)state;
    job *j = make_job();
    mp_run_opts o;
    hand_opts(j, &o);
    mp_diag d = {0};
    mp_run_result *r = &j->r;
    assert_int_equal(mp_run_plan(&j->m, &j->c, &j->p, &j->e, &o, r, &d), MP_OK);
    /* Steps: ceil(1e9 / 262,144) = ceil(3814.70) = 3815; tokens run 3815 x 262,144. */
    assert_close(j->e.tokens_per_step, 262144.0, 0);
    assert_close(r->steps, 3815.0, 0);
    assert_close(r->tokens, 1000079360.0, 0);
    assert_close(r->work_s, 3815.0 * r->power.step_s, 1e-15);
    /* Failures: 8 GPUs x 1 / 28,800 s = 1 / 3600 s; 24 a day; none needs a spare. */
    assert_close(r->rates.total_per_s, 1.0 / 3600.0, 1e-12);
    assert_close(r->mtbf_s, 3600.0, 1e-12);
    assert_close(r->rates.by_component_per_s[MP_FC_GPU], 1.0 / 3600.0, 1e-12);
    assert_true(r->rates.spare_per_s == 0.0);
    assert_int_equal(r->spare_nodes, 0); /* auto: nothing takes a node out */
    /* energy.scaleout_ports_per_node left at 0: one NIC port per GPU, 8 on the node. */
    assert_close(r->nics_per_node, 8.0, 0);
    /* Checkpoint: 14 bytes x P, save = load = 10 s, synchronous: stall 10 s, no lag. */
    assert_close(r->checkpoint.bytes, 14.0 * (double)r->params_count, 1e-12);
    assert_close(r->checkpoint.save_s, 10.0, 1e-12);
    assert_close(r->checkpoint.block_s, 10.0, 1e-12);
    assert_close(r->checkpoint.load_s, 10.0, 1e-12);
    /* Intervals with d = 10 s, M = 3600 s: Young sqrt(2 d M) = sqrt(72,000) = 268.328 s;
     * Daly sqrt(2 d M) [1 + sqrt(d/2M)/3 + (d/2M)/9] - d, d/2M = 1/720:
     * 268.328 x (1 + 0.012423 + 0.000154) - 10 = 261.703 s; the one used (not given). */
    assert_close(r->interval_young_s, 268.32815729997475, 1e-12);
    assert_close(r->interval_daly_s, 261.70289929955806, 1e-12);
    assert_false(r->interval_given);
    assert_close(r->interval_s, 261.70289929955806, 1e-12);
    /* A restart costs restart 600 s + load 10 s = 610 s. */
    assert_close(r->process.down_s, 610.0, 1e-12);
    assert_close(r->process.fail_per_s, 1.0 / 3600.0, 1e-12);
    /* The expectation and the Monte Carlo are the faults module's, of exactly this process. */
    mp_run_expect ex;
    assert_int_equal(mp_run_expected(&r->process, &ex, &d), MP_OK);
    assert_close(r->expect.wall_s, ex.wall_s, 0);
    assert_int_equal(r->trials, 200);
    assert_true(r->mc.wall_p10_s <= r->mc.wall_mean_s && r->mc.wall_mean_s <= r->mc.wall_p90_s);
    /* Totals: CO2e = MWh x 400 g/kWh / 1000; GPU-hours = 8 x wall / 3600; rental at the default
     * price for the 8 GPUs (no spares). */
    assert_close(r->co2e_t, r->energy.MWh * 0.4, 1e-12);
    assert_close(r->gpu_hours, 8.0 * r->expect.wall_s / 3600.0, 1e-12);
    assert_close(r->gpus_billed, 8.0, 0);
    assert_close(r->cost.usd, r->gpu_hours * o.cost.price_gpu_hour_usd, 1e-12);
    /* The run's energy is the step's power over running and stalled time, never less than the
     * work at the step's average facility power. */
    assert_true(r->energy.total_J >= r->work_s * r->power.facility_avg_W * (1 - 1e-12));
    /* The same seed, the same answer. */
    const double mean = r->mc.wall_mean_s;
    assert_int_equal(mp_run_plan(&j->m, &j->c, &j->p, &j->e, &o, r, &d), MP_OK);
    assert_close(r->mc.wall_mean_s, mean, 0);
}

/* No failures: one segment of all the work, no checkpoint, goodput 1. Given spares are billed. */
static void test_no_failures_and_spares(void **state)
{
    (void)state;
    job *j = make_job();
    mp_run_opts o;
    hand_opts(j, &o);
    o.failure_scale = 0.0;
    o.spare_nodes = 2;
    mp_diag d = {0};
    mp_run_result *r = &j->r;
    assert_int_equal(mp_run_plan(&j->m, &j->c, &j->p, &j->e, &o, r, &d), MP_OK);
    assert_true(isinf(r->mtbf_s));
    assert_close(r->interval_s, r->work_s, 0);
    assert_close(r->expect.wall_s, r->work_s, 1e-12);
    assert_close(r->expect.goodput, 1.0, 1e-12);
    assert_close(r->expect.checkpoints, 0.0, 0);
    assert_close(r->mc.goodput_mean, 1.0, 1e-12);
    /* 8 GPUs + 2 spare nodes of 8 = 24 GPUs billed for the wall-clock. */
    assert_int_equal(r->spare_nodes, 2);
    assert_false(r->spare_auto);
    assert_close(r->gpus_billed, 24.0, 0);
    assert_close(r->cost.gpu_hours, 24.0 * r->work_s / 3600.0, 1e-12);
    /* A given interval is kept as given. */
    o.checkpoint_interval_s = 1234.0;
    o.failure_scale = 1.0;
    assert_int_equal(mp_run_plan(&j->m, &j->c, &j->p, &j->e, &o, r, &d), MP_OK);
    assert_true(r->interval_given);
    assert_close(r->interval_s, 1234.0, 0);
}

/* The simulation cap: too many failures per run is refused; too many in all cuts the trials. */
static void test_simulation_cap(void **state)
{
    (void)state;
    job *j = make_job();
    mp_run_opts o;
    hand_opts(j, &o);
    mp_diag d = {0};
    mp_run_result *r = &j->r;
    assert_int_equal(mp_run_plan(&j->m, &j->c, &j->p, &j->e, &o, r, &d), MP_OK);
    const double fails = r->expect.failures;
    assert_true(fails > 1.0);
    /* Room for 50 runs: 50 trials are simulated instead of 200. */
    o.max_sim_failures = 50.5 * fails;
    assert_int_equal(mp_run_plan(&j->m, &j->c, &j->p, &j->e, &o, r, &d), MP_OK);
    assert_int_equal(r->trials, 50);
    /* Room for less than one run. */
    o.max_sim_failures = 0.5 * fails;
    mp_diag d2 = {0};
    assert_int_equal(mp_run_plan(&j->m, &j->c, &j->p, &j->e, &o, r, &d2), MP_ERR_RANGE);
    assert_non_null(strstr(d2.text, "too many to simulate"));
}

static void test_bad_options(void **state)
{
    (void)state;
    job *j = make_job();
    mp_run_opts o;
    mp_run_opts_init(&o); /* tokens left at 0 */
    mp_diag d = {0};
    assert_int_equal(mp_run_plan(&j->m, &j->c, &j->p, &j->e, &o, &j->r, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "run.tokens = 0"));
    o.tokens = 1e9;
    o.spare_target_frac = 1.0;
    o.checkpoint_Bps = -1;
    mp_diag d2 = {0};
    assert_int_equal(mp_run_plan(&j->m, &j->c, &j->p, &j->e, &o, &j->r, &d2), MP_ERR_INPUT);
    assert_non_null(strstr(d2.text, "run.checkpoint_Bps = -1"));
    assert_non_null(strstr(d2.text, "run.spare_target_frac = 1"));
    assert_int_equal(d2.count, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_hand_checked),
        cmocka_unit_test(test_no_failures_and_spares),
        cmocka_unit_test(test_simulation_cap),
        cmocka_unit_test(test_bad_options),
    };
    return cmocka_run_group_tests(tests, catalog_setup, catalog_teardown);
}
