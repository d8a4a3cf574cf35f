/* tests/test_energy.c — the power and energy model (src/energy/energy.c) and the cost.
 *
 * Validation: case C5 of ../shared/validation/cases.md (Latif et al. 2025, IEEE Access 13:
 * an 8x H100 HGX node training Llama-2-13B peaked at ~8.4 kW against a 10.2 kW rating). The
 * prediction is built from the GPU power model and the host model, neither fitted to 8.4 kW. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "meshplan/meshplan.h"
#include "test_util.h"

/* One job: model key, GPU key, GPU count, plan string -> estimate (feasible asserted). */
typedef struct {
    mp_model m;
    mp_cluster c;
    mp_plan p;
    mp_estimate e;
} job;

static job g_job; /* mp_estimate is large: keep it off the stack */

static job *make_job(const char *model, const char *gpu, int64_t n, const char *plan)
{
    mp_diag d = {0};
    const mp_model *m = mp_catalog_model(g_cat, model);
    assert_non_null(m);
    g_job.m = *m;
    assert_int_equal(mp_cluster_from_catalog(g_cat, gpu, n, 0, NULL, &g_job.c, &d), MP_OK);
    mp_plan_init_default(&g_job.p);
    assert_int_equal(mp_plan_parse(plan, &g_job.p, &d), MP_OK);
    assert_int_equal(mp_plan_resolve(&g_job.p, &g_job.m, n, &d), MP_OK);
    assert_int_equal(mp_estimate_plan(&g_job.m, &g_job.c, &g_job.p, NULL, &g_job.e, &d), MP_OK);
    return &g_job;
}

/* C5: 8x H100 training Llama-2-13B (a dense model; FSDP on one node, as a single-node
 * Llama-2-13B run is usually set up). Predicted node peak = 8 GPUs at their 700 W limit (large
 * GEMMs at the best measured rate run power-limited) + host at training load:
 *   host = 4600 W x (0.5 + 0.5 x 0.2) = 2760 W  (catalog overhead = 10.2 kW rating - 8 x 700 W;
 *   idle half of it, Barroso & Hoelzle 2007; host activity 0.2)
 *   node peak = 5600 + 2760 = 8360 W, measured ~8.4 kW: -0.5%. Tolerance +-10% (issue 6). */
static void test_c5_node_peak(void **state)
{
    (void)state;
    /* mb 1: at mb 2 without recompute the 13B run holds 79 GiB of tensors of 80 (oom with its
     * runtime memory, docs/memory.md) */
    job *j = make_job("llama2-13b", "h100-sxm5-80gb", 8, "zero=3,mb=1,gb=64,seq=4096");
    assert_true(j->e.feasible);
    mp_power pw;
    mp_diag d = {0};
    assert_int_equal(mp_energy_step(&j->c, &j->p, &j->e, NULL, NULL, &pw, &d), MP_OK);
    assert_false(pw.unseen_gpu);
    assert_close(pw.gpu_peak_W, 700.0, 1e-12);
    assert_close(pw.node_overhead_W, 2760.0, 1e-12);
    assert_close(pw.node_peak_W, 8360.0, 1e-12);
    const double measured = 8400.0;
    double err = (pw.node_peak_W - measured) / measured;
    printf("C5: predicted node peak %.0f W vs measured ~%.0f W: %+.1f%% (rating 10200 W: %+.1f%%)\n",
           pw.node_peak_W, measured, 100 * err, 100 * (10200.0 - measured) / measured);
    assert_true(fabs(err) <= 0.10);
    /* The result does not hinge on the one assumed constant: any host activity from 0 (host at
     * idle) to 0.5 keeps the prediction inside the tolerance. */
    mp_energy_opts o;
    for (double u = 0.0; u <= 0.5 + 1e-9; u += 0.25) {
        mp_energy_opts_init(&o);
        o.host_util_frac = u;
        assert_int_equal(mp_energy_step(&j->c, &j->p, &j->e, NULL, &o, &pw, &d), MP_OK);
        printf("C5: host activity %.2f -> node peak %.0f W (%+.1f%%)\n", u, pw.node_peak_W,
               100 * (pw.node_peak_W - measured) / measured);
        assert_true(fabs(pw.node_peak_W - measured) <= 0.10 * measured);
    }
    /* With the host at full activity the model gives back the rating: 8 x 700 + 4600 = 10200. */
    mp_energy_opts_init(&o);
    o.host_util_frac = 1.0;
    assert_int_equal(mp_energy_step(&j->c, &j->p, &j->e, NULL, &o, &pw, &d), MP_OK);
    assert_close(pw.node_peak_W, 10200.0, 1e-12);
}

/* Phase powers of an H100, hand-derived from the model's inputs:
 *   active idle P_w = 142.5 W (measured), TDP 700 W
 *   tensor  = 142.5 + (700 - 142.5) x 0.85                    = 616.375 W
 *   memory  = 142.5 + 3.04e12 B/s x 0.6 x 8 bit x 8e-12 J/bit  = 142.5 + 116.736 = 259.236 W
 *   comm    = 142.5 + 3 x 450e9 x 0.81 B/s x 64e-12 J/B        = 142.5 + 69.984  = 212.484 W
 *   wait    = 142.5 W */
static void test_phase_powers(void **state)
{
    (void)state;
    job *j = make_job("llama3-70b", "h100-sxm5-80gb", 64,
                      "tp=8,pp=2,mb=1,gb=128,seq=8192,zero=1,recompute=selective");
    mp_power pw;
    mp_diag d = {0};
    assert_int_equal(mp_energy_step(&j->c, &j->p, &j->e, NULL, NULL, &pw, &d), MP_OK);
    assert_close(pw.phase_W[MP_PHASE_TENSOR], 616.375, 1e-12);
    assert_close(pw.phase_W[MP_PHASE_MEMORY], 259.236, 1e-12);
    assert_close(pw.phase_W[MP_PHASE_COMM], 212.484, 1e-12);
    assert_close(pw.phase_W[MP_PHASE_WAIT], 142.5, 1e-12);
    /* The phases partition the step, and the energy is their sum. */
    double t = 0, ej = 0;
    for (int i = 0; i < MP_PHASE_COUNT; i++) {
        assert_true(pw.phase_s[i] >= 0);
        t += pw.phase_s[i];
        ej += pw.phase_s[i] * pw.phase_W[i];
    }
    assert_close(t, j->e.step_s, 1e-9);
    assert_close(pw.step_s, j->e.step_s, 1e-12);
    assert_close(pw.energy_J_per_step_gpu, 64.0 * ej, 1e-12);
    assert_true(pw.gpu_avg_W > pw.gpu_wait_W && pw.gpu_avg_W < pw.tdp_W);
    /* Tensor time: hardware FLOPs per GPU / (794.5 TFLOP/s x 0.85). */
    assert_close(pw.phase_s[MP_PHASE_TENSOR],
                 j->e.hardware_flops_per_step / 64.0 / (794.5e12 * 0.85), 1e-12);
    /* 8 nodes of 8 GPUs, one NIC each: 64 endpoints fit one 64-port switch, 1 port each. */
    assert_close(pw.switch_ports_per_gpu, 1.0, 1e-12);
    assert_close(pw.switch_W, 64.0 * 1.0 * 20.0, 1e-12);
    assert_close(pw.facility_avg_W, (8.0 * pw.node_avg_W + pw.switch_W) * 1.2, 1e-12);
    assert_close(pw.energy_J_per_mtoken_facility,
                 pw.energy_J_per_step_facility / (128.0 * 8192.0 / 1e6), 1e-12);
    /* 16 nodes: 128 endpoints > 64 -> two levels (leaf down + leaf up + spine), 3 ports each. */
    job *two = make_job("llama3-70b", "h100-sxm5-80gb", 128,
                        "tp=8,pp=2,mb=1,gb=128,seq=8192,zero=1,recompute=selective");
    assert_int_equal(mp_energy_step(&two->c, &two->p, &two->e, NULL, NULL, &pw, &d), MP_OK);
    assert_close(pw.switch_ports_per_gpu, 3.0, 1e-12);
    /* A single node has no scale-out switches. */
    job *one = make_job("llama3-8b", "h100-sxm5-80gb", 8, "tp=1,mb=1,gb=8,seq=4096,zero=3");
    assert_int_equal(mp_energy_step(&one->c, &one->p, &one->e, NULL, NULL, &pw, &d), MP_OK);
    assert_true(pw.switch_W == 0.0);
}

/* A power cap clips the phases above it and slows them by the cube root of the dynamic-power
 * ratio: tensor at 500 W instead of 616.375 W takes cbrt(473.875 / 357.5) = 1.09836 x longer.
 * Properties: a lower cap never shortens the step nor raises the peak. */
static void test_power_cap(void **state)
{
    (void)state;
    job *j = make_job("llama3-70b", "h100-sxm5-80gb", 64,
                      "tp=8,pp=2,mb=1,gb=128,seq=8192,zero=1,recompute=selective");
    mp_power base, capped;
    mp_energy_opts o;
    mp_diag d = {0};
    assert_int_equal(mp_energy_step(&j->c, &j->p, &j->e, NULL, NULL, &base, &d), MP_OK);
    mp_energy_opts_init(&o);
    o.power_cap_W = 500.0;
    assert_int_equal(mp_energy_step(&j->c, &j->p, &j->e, NULL, &o, &capped, &d), MP_OK);
    assert_close(capped.phase_W[MP_PHASE_TENSOR], 500.0, 1e-12);
    assert_close(capped.phase_s[MP_PHASE_TENSOR] / base.phase_s[MP_PHASE_TENSOR],
                 cbrt(473.875 / 357.5), 1e-12);
    assert_close(capped.phase_s[MP_PHASE_MEMORY], base.phase_s[MP_PHASE_MEMORY], 1e-12);
    assert_close(capped.gpu_peak_W, 500.0, 1e-12);
    double prev_step = 0, prev_peak = 1e9;
    for (double cap = 700; cap >= 200; cap -= 50) {
        o.power_cap_W = cap;
        assert_int_equal(mp_energy_step(&j->c, &j->p, &j->e, NULL, &o, &capped, &d), MP_OK);
        assert_true(capped.step_s >= prev_step);
        assert_true(capped.gpu_peak_W <= prev_peak);
        prev_step = capped.step_s;
        prev_peak = capped.gpu_peak_W;
    }
    /* A cap at or below active idle, or above the TDP, is refused with the value named. */
    o.power_cap_W = 100.0;
    mp_diag_clear(&d);
    assert_int_equal(mp_energy_step(&j->c, &j->p, &j->e, NULL, &o, &capped, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "power-cap-W = 100"));
    o.power_cap_W = 800.0;
    assert_int_equal(mp_energy_step(&j->c, &j->p, &j->e, NULL, &o, &capped, &d), MP_ERR_INPUT);
}

/* A GPU without measurements: idle and active idle from the TDP, said so. B200: 1000 W TDP ->
 * idle 1000 x 78.8/700 = 112.571 W, active idle 1000 x (142.5/700 + 53/300)/2 = 190.119 W. */
static void test_unseen_gpu(void **state)
{
    (void)state;
    job *j = make_job("llama3-8b", "b200", 8, "tp=1,mb=1,gb=8,seq=4096,zero=3");
    mp_power pw;
    mp_diag d = {0};
    assert_int_equal(mp_energy_step(&j->c, &j->p, &j->e, NULL, NULL, &pw, &d), MP_OK);
    assert_true(pw.unseen_gpu);
    assert_non_null(strstr(pw.gpu_power_source, "unseen GPU"));
    assert_close(pw.gpu_idle_W, 1000.0 * 78.8 / 700.0, 1e-12);
    assert_close(pw.gpu_wait_W, 1000.0 * 0.5 * (142.5 / 700.0 + 53.0 / 300.0), 1e-12);
    /* With no TDP at all the power cannot be derived: an input error naming the field. */
    mp_cluster c = j->c;
    c.gpu.tdp_W = 0.0;
    assert_int_equal(mp_energy_step(&c, &j->p, &j->e, NULL, NULL, &pw, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "tdp_W"));
}

/* Run energy and cost, hand-derived from a made-up power record. */
static void test_run_energy_and_cost(void **state)
{
    (void)state;
    mp_power pw;
    memset(&pw, 0, sizeof pw);
    pw.nodes = 2;
    pw.gpu_per_node = 8;
    pw.facility_avg_W = 20000;
    pw.gpu_wait_W = 100;
    pw.node_overhead_W = 1000;
    pw.switch_W = 200;
    pw.node_idle_W = 1500;
    mp_run_energy re;
    mp_energy_run(&pw, 1.5, 3600, 600, 4200, 1, &re);
    /* running 20000 x 3600; stalled (2 x (8 x 100 + 1000) + 200) x 1.5 x 600 = 5700 x 600;
     * spares 1 x 1500 x 1.5 x 4200 */
    assert_close(re.running_J, 72e6, 1e-12);
    assert_close(re.stalled_J, 5700.0 * 600.0, 1e-12);
    assert_close(re.spares_J, 1500.0 * 1.5 * 4200.0, 1e-12);
    assert_close(re.MWh, (72e6 + 3.42e6 + 9.45e6) / 3.6e9, 1e-12);

    mp_cost_opts co;
    mp_cost_opts_init(&co);
    mp_cost cost;
    mp_diag d = {0};
    /* rental: 16 GPUs x 10 h x $2.5 = $400 for 1e9 tokens -> $0.4 per million */
    assert_int_equal(mp_cost_compute(&co, 16, 36000, 3.6e9, 1e9, &cost, &d), MP_OK);
    assert_close(cost.gpu_hours, 160.0, 1e-12);
    assert_close(cost.usd, 400.0, 1e-12);
    assert_close(cost.usd_per_mtoken, 0.4, 1e-12);
    /* capital + energy: $30000 per GPU over 4 y -> 30000 / 35064 $/GPU-h x 160 = $136.893;
     * energy 1000 kWh x $0.08 = $80 */
    co.capex_per_gpu_usd = 30000;
    assert_int_equal(mp_cost_compute(&co, 16, 36000, 3.6e9, 1e9, &cost, &d), MP_OK);
    assert_true(cost.capex_mode);
    assert_close(cost.capital_usd, 30000.0 / (4 * 8766.0) * 160.0, 1e-12);
    assert_close(cost.energy_usd, 80.0, 1e-12);
    assert_close(cost.usd, cost.capital_usd + 80.0, 1e-12);
    co.price_kwh_usd = -1;
    assert_int_equal(mp_cost_compute(&co, 16, 36000, 3.6e9, 1e9, &cost, &d), MP_ERR_INPUT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_c5_node_peak),
        cmocka_unit_test(test_phase_powers),
        cmocka_unit_test(test_power_cap),
        cmocka_unit_test(test_unseen_gpu),
        cmocka_unit_test(test_run_energy_and_cost),
    };
    return cmocka_run_group_tests(tests, catalog_setup, catalog_teardown);
}
