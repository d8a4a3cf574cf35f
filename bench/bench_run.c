/* bench/bench_run.c — speed of the run model: the Monte Carlo (failures simulated per second) and
 * the analytical expectation, on the Llama 3 405B setup (16,384 H100, ~7.8 interruptions a day,
 * 89 days of work). Prints figures; not a test. */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#include <stdio.h>

#include "bench_util.h"
#include "meshplan/faults.h"

int main(void)
{
    mp_fault_model fm;
    mp_fault_model_default(&fm);
    mp_fault_fleet fleet = {16384, 2048, 16384};
    mp_fault_rates fr;
    mp_fault_rates_for(&fm, &fleet, 1.0, &fr);
    mp_run_params p = {
        .work_s = 89.0 * 86400.0,
        .interval_s = 0,
        .ckpt_s = 11.4,
        .down_s = 611.4,
        .fail_per_s = fr.total_per_s,
        .spare_frac = fr.spare_per_s / fr.total_per_s,
        .repair_s = 86400.0,
        .spare_nodes = 13,
    };
    p.interval_s = mp_ckpt_interval_daly(p.ckpt_s, 1.0 / p.fail_per_s);
    mp_diag d = {0};
    for (int trials = 1000; trials <= 100000; trials *= 10) {
        mp_run_mc mc;
        double t0 = now_s();
        if (mp_run_simulate(&p, trials, 1, &mc, &d) != MP_OK) {
            fprintf(stderr, "%s\n", d.text);
            return 1;
        }
        double dt = now_s() - t0;
        printf("Monte Carlo %6d trials: %.3f s, %.3g failures simulated per second "
               "(%.0f failures per run; goodput %.4f, wall p10/mean/p90 %.2f/%.2f/%.2f d)\n",
               trials, dt, mc.failures_mean * trials / dt, mc.failures_mean, mc.goodput_mean,
               mc.wall_p10_s / 86400, mc.wall_mean_s / 86400, mc.wall_p90_s / 86400);
    }
    mp_run_expect x;
    const int n = 100000;
    double t0 = now_s();
    for (int i = 0; i < n; i++)
        mp_run_expected(&p, &x, &d);
    double dt = now_s() - t0;
    printf("expectation: %.2f us per evaluation (goodput %.4f, wall %.2f d)\n", 1e6 * dt / n,
           x.goodput, x.wall_s / 86400);
    return 0;
}
