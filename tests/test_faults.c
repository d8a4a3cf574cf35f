/* tests/test_faults.c — failures, checkpoints and goodput (src/faults/).
 *
 * Validation: case C6 of ../shared/validation/cases.md (Llama 3 405B, 16,384 H100, 54 days: 419
 * unexpected interruptions, by root cause in the paper's Table 5). The defaults are normalised by
 * that same fleet, so this checks the scaling machinery (units per GPU / node / NIC derived from
 * the catalog's node) rather than an independent prediction; the README says so.
 * Monte Carlo: mean goodput within 1% of the analytical expectation at 10,000 trials; same seed,
 * same numbers; properties (more failures never help, faster checkpoints never hurt, the optimal
 * interval sits at the minimum of the simulated curve). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "meshplan/meshplan.h"
#include "test_util.h"

/* ---- PRNG ------------------------------------------------------------------------------------ */

/* splitmix64 from state 0: the first outputs of the reference implementation (Vigna's
 * splitmix64.c), widely quoted as test vectors. */
static void test_splitmix64_vectors(void **state)
{
    (void)state;
    uint64_t s = 0;
    assert_true(mp_splitmix64(&s) == 0xe220a8397b1dcdafULL);
    assert_true(mp_splitmix64(&s) == 0x6e789e6aa1b965f4ULL);
    assert_true(mp_splitmix64(&s) == 0x06c45d188009454fULL);
}

/* xoshiro256** seeded with 42 through splitmix64: first five outputs computed with an independent
 * Python transcription of the reference code (result = rotl(s1 * 5, 7) * 9; t = s1 << 17; s2 ^= s0;
 * s3 ^= s1; s1 ^= s2; s0 ^= s3; s2 ^= t; s3 = rotl(s3, 45)). */
static void test_xoshiro_vectors(void **state)
{
    (void)state;
    static const uint64_t want[5] = {0x15780b2e0c2ec716ULL, 0x6104d9866d113a7eULL,
                                     0xae17533239e499a1ULL, 0xecb8ad4703b360a1ULL,
                                     0xfde6dc7fe2ec5e64ULL};
    mp_rng r;
    mp_rng_seed(&r, 42);
    for (int i = 0; i < 5; i++)
        assert_true(mp_rng_next(&r) == want[i]);
    /* Uniforms in [0, 1); Exp(1) has mean 1 and variance 1: over 200,000 draws the mean is within
     * 5 standard errors (5 / sqrt(2e5) = 0.0112) of 1. */
    mp_rng_seed(&r, 7);
    double sum = 0;
    const int n = 200000;
    for (int i = 0; i < n; i++) {
        double u = mp_rng_uniform(&r);
        assert_true(u >= 0.0 && u < 1.0);
        sum += mp_rng_exp1(&r);
    }
    assert_true(fabs(sum / n - 1.0) < 5.0 / sqrt((double)n));
}

/* ---- C6: Llama 3 interruptions ---------------------------------------------------------------- */

static const struct {
    const char *name;
    double count;
} table5[] = {
    {"faulty_gpu", 148}, {"gpu_hbm3_memory", 72}, {"software_bug", 54},
    {"network_switch_cable", 35}, {"host_maintenance", 32}, {"gpu_sram_memory", 19},
    {"gpu_system_processor", 17}, {"nic", 7}, {"nccl_watchdog_timeout", 7},
    {"silent_data_corruption", 6}, {"gpu_thermal_interface_sensor", 6}, {"ssd", 3},
    {"power_supply", 3}, {"server_chassis", 2}, {"io_expansion_board", 2}, {"dependency", 2},
    {"cpu", 2}, {"system_memory", 2},
};

/* The fleet of a 16,384-GPU H100 job as the CLI derives it: nodes from the catalog's node size,
 * NIC ports from that node's NIC count. */
static mp_fault_fleet h100_fleet(int64_t gpus)
{
    mp_cluster c;
    mp_diag d = {0};
    assert_int_equal(mp_cluster_from_catalog(g_cat, "h100-sxm5-80gb", gpus, 0, NULL, &c, &d), MP_OK);
    const mp_node *node = mp_catalog_node_for_gpu(g_cat, "h100-sxm5-80gb");
    assert_non_null(node);
    double nodes = (double)gpus / c.gpus_per_node;
    return (mp_fault_fleet){(double)gpus, nodes, nodes * node->nics_per_node};
}

static void test_llama3_interruptions(void **state)
{
    (void)state;
    mp_fault_model fm;
    mp_fault_model_default(&fm);
    mp_fault_rates fr;
    mp_fault_fleet fleet = h100_fleet(16384);
    mp_fault_rates_for(&fm, &fleet, 1.0, &fr);
    const double T = 54.0 * 86400.0;
    double total = fr.total_per_s * T;
    printf("C6: expected unexpected interruptions in 54 days on 16,384 H100: %.1f (published 419, "
           "%+.2f%%)\n", total, 100 * (total - 419) / 419);
    assert_true(fabs(total - 419.0) <= 0.15 * 419.0);
    assert_int_equal(fm.ncauses, (int)(sizeof table5 / sizeof table5[0]));
    for (size_t k = 0; k < sizeof table5 / sizeof table5[0]; k++) {
        int found = 0;
        for (int i = 0; i < fm.ncauses; i++)
            if (!strcmp(fm.cause[i].name, table5[k].name)) {
                double got = fr.by_cause_per_s[i] * T;
                assert_true(fabs(got - table5[k].count) <= 0.15 * table5[k].count);
                found = 1;
            }
        assert_true(found);
    }
    /* Components: gpu 148+19+17+6+6 = 196, hbm 72, host 32+3+3+2+2+2+2 = 46, nic 7,
     * switch 35, software 54+7+2 = 63. */
    static const double comp[MP_FC_COUNT] = {196, 72, 46, 7, 35, 63};
    for (int i = 0; i < MP_FC_COUNT; i++)
        assert_close(fr.by_component_per_s[i] * T, comp[i], 1e-9);
    /* One interruption every 3.09 h (cases.md: "about one every 3.1 hours"). */
    assert_close(1.0 / fr.total_per_s / 3600.0, 54.0 * 24.0 / 419.0, 1e-9);
    /* Needing a spare: all but the software causes: 419 - 63 = 356. */
    assert_close(fr.spare_per_s * T, 356.0, 1e-9);
}

/* The rate scales with the job: half the GPUs, half the interruptions; a node of 4 GPUs with
 * 4 NICs has twice the hosts per GPU, so its host causes double. */
static void test_rate_scaling(void **state)
{
    (void)state;
    mp_fault_model fm;
    mp_fault_model_default(&fm);
    mp_fault_rates full, half, quad;
    mp_fault_fleet f1 = h100_fleet(16384), f2 = h100_fleet(8192);
    mp_fault_rates_for(&fm, &f1, 1.0, &full);
    mp_fault_rates_for(&fm, &f2, 1.0, &half);
    assert_close(half.total_per_s, 0.5 * full.total_per_s, 1e-12);
    mp_fault_fleet f4 = {16384, 4096, 16384};
    mp_fault_rates_for(&fm, &f4, 1.0, &quad);
    assert_close(quad.by_component_per_s[MP_FC_HOST], 2.0 * full.by_component_per_s[MP_FC_HOST], 1e-12);
    assert_close(quad.by_component_per_s[MP_FC_GPU], full.by_component_per_s[MP_FC_GPU], 1e-12);
    mp_fault_rates_for(&fm, &f1, 3.0, &quad);
    assert_close(quad.total_per_s, 3.0 * full.total_per_s, 1e-12);
}

/* --failures FILE: counts over an observed fleet, or rates; errors name the field. */
static void test_fault_json(void **state)
{
    (void)state;
    const char *ok =
        "{\"source\": \"test\", \"observed\": {\"gpus_count\": 1000, \"nodes_count\": 125, \"days\": 10},"
        " \"causes\": [{\"name\": \"gpu\", \"component\": \"gpu\", \"per\": \"gpu\", \"count\": 20, \"needs_spare\": true},"
        "              {\"name\": \"sw\", \"component\": \"software\", \"per\": \"node\", \"rate_per_unit_per_day\": 0.004, \"needs_spare\": false}]}";
    mp_fault_model fm;
    mp_diag d = {0};
    assert_int_equal(mp_fault_model_from_json(ok, strlen(ok), "t.json", &fm, &d), MP_OK);
    assert_int_equal(fm.ncauses, 2);
    /* 20 / (1000 GPUs x 10 days) = 0.002 per GPU-day */
    assert_close(fm.cause[0].rate_per_unit_s * 86400.0, 0.002, 1e-12);
    assert_close(fm.cause[1].rate_per_unit_s * 86400.0, 0.004, 1e-12);
    assert_int_equal(fm.cause[1].unit, MP_PER_NODE);
    assert_false(fm.cause[1].needs_spare);
    assert_string_equal(fm.source, "test");

    const char *bad =
        "{\"causes\": [{\"name\": \"x\", \"component\": \"gpuu\", \"per\": \"rack\", \"count\": 1, \"needs_spare\": 1},"
        "              {\"name\": \"y\", \"component\": \"gpu\", \"per\": \"gpu\", \"count\": 3, \"needs_spare\": true}]}";
    mp_diag_clear(&d);
    assert_int_equal(mp_fault_model_from_json(bad, strlen(bad), "b.json", &fm, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "b.json: causes[0].component = gpuu"));
    assert_non_null(strstr(d.text, "causes[0].per = rack"));
    assert_non_null(strstr(d.text, "causes[0].needs_spare"));
    assert_non_null(strstr(d.text, "causes[1].count needs observed.days"));
    mp_diag_clear(&d);
    assert_int_equal(mp_fault_model_from_json("{", 1, "c.json", &fm, &d), MP_ERR_PARSE);
    const char *neg = "{\"causes\": [{\"name\": \"z\", \"component\": \"nic\", \"per\": \"nic\", \"rate_per_unit_per_day\": -1, \"needs_spare\": true}]}";
    mp_diag_clear(&d);
    assert_int_equal(mp_fault_model_from_json(neg, strlen(neg), "n.json", &fm, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "rate_per_unit_per_day = -1"));
}

/* ---- checkpoints ------------------------------------------------------------------------------ */

/* Llama 3 405B: 405.85e9 parameters x 14 bytes = 5.682 TB; over 16,384 GPUs 346.8 MB each; at
 * 500 GB/s it saves in 11.36 s; asynchronously the stall is 346.8 MB / 25 GB/s = 13.9 ms. */
static void test_checkpoint(void **state)
{
    (void)state;
    mp_checkpoint ck;
    mp_diag d = {0};
    const double P = 405.85e9;
    assert_int_equal(mp_checkpoint_plan(P, 14, 16384, 0, 500e9, 25e9, 0, &ck, &d), MP_OK);
    assert_close(ck.bytes, P * 14, 1e-12);
    assert_close(ck.bytes_per_gpu, P * 14 / 16384, 1e-12);
    assert_close(ck.save_s, P * 14 / 500e9, 1e-12);
    assert_close(ck.block_s, ck.save_s, 1e-12);
    assert_close(ck.load_s, ck.save_s, 1e-12);
    assert_true(ck.lag_s == 0);
    assert_int_equal(mp_checkpoint_plan(P, 14, 16384, 0, 500e9, 25e9, 1, &ck, &d), MP_OK);
    assert_close(ck.block_s, P * 14 / 16384 / 25e9, 1e-12);
    assert_close(ck.lag_s, ck.save_s, 1e-12);
    /* An uneven shard bounds the write: 8 GPUs, one holding 2 GB of 10 GB -> 16 GB-equivalent. */
    assert_int_equal(mp_checkpoint_plan(1e9, 10, 8, 2e9, 1e9, 1e9, 0, &ck, &d), MP_OK);
    assert_close(ck.save_s, 16.0, 1e-12);
    assert_int_equal(mp_checkpoint_plan(1e9, 14, 8, 0, 0, 1e9, 0, &ck, &d), MP_ERR_INPUT);
}

/* ---- the run ---------------------------------------------------------------------------------- */

/* A month of work on a job that fails every 3 h, 60 s checkpoints, 10 min restarts, 85% of
 * failures taking a node out, 24 h repairs. */
static mp_run_params base_run(void)
{
    mp_run_params p = {
        .work_s = 30 * 86400.0,
        .interval_s = 0,
        .ckpt_s = 60.0,
        .down_s = 600.0,
        .fail_per_s = 1.0 / (3 * 3600.0),
        .spare_frac = 0.85,
        .repair_s = 24 * 3600.0,
        .spare_nodes = 12,
    };
    p.interval_s = mp_ckpt_interval_daly(p.ckpt_s, 1.0 / p.fail_per_s);
    return p;
}

/* Hand-derived expectations: without failures, wall = work + (n - 1) checkpoints; one segment:
 * (e^{lambda W} - 1)(1/lambda + D). */
static void test_expected_golden(void **state)
{
    (void)state;
    mp_run_params p = {.work_s = 1000, .interval_s = 300, .ckpt_s = 10, .down_s = 50,
                       .fail_per_s = 0, .spare_frac = 0, .repair_s = 0, .spare_nodes = 0};
    mp_run_expect x;
    mp_diag d = {0};
    assert_int_equal(mp_run_expected(&p, &x, &d), MP_OK);
    /* n = ceil(1000/300) = 4 segments, 3 checkpoints */
    assert_close(x.wall_s, 1030.0, 1e-12);
    assert_close(x.checkpoints, 3.0, 1e-12);
    p.interval_s = 1000;
    p.fail_per_s = 1e-3;
    assert_int_equal(mp_run_expected(&p, &x, &d), MP_OK);
    assert_close(x.wall_s, expm1(1.0) * (1000.0 + 50.0), 1e-12);
    assert_close(x.failures, expm1(1.0), 1e-12);
    /* Every failure needs a spare and there is none: each waits the whole repair. */
    p.spare_frac = 1.0;
    p.repair_s = 300;
    assert_int_equal(mp_run_expected(&p, &x, &d), MP_OK);
    assert_close(x.wall_s, expm1(1.0) * (1000.0 + 50.0 + 300.0), 1e-12);
    /* Bad input is named. */
    p.work_s = -1;
    mp_diag_clear(&d);
    assert_int_equal(mp_run_expected(&p, &x, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "run.work_s = -1"));
}

/* Monte Carlo vs the expectation, 10,000 trials: the mean goodput within 1% (three spare pools:
 * auto-sized, none, and unlimited). */
static void test_mc_matches_expectation(void **state)
{
    (void)state;
    mp_run_params p = base_run();
    mp_diag d = {0};
    const int spares[] = {12, 0, 100000};
    for (size_t i = 0; i < sizeof spares / sizeof spares[0]; i++) {
        p.spare_nodes = spares[i];
        mp_run_expect x;
        mp_run_mc mc;
        assert_int_equal(mp_run_expected(&p, &x, &d), MP_OK);
        assert_int_equal(mp_run_simulate(&p, 10000, 12345, &mc, &d), MP_OK);
        double err = (mc.goodput_mean - x.goodput) / x.goodput;
        printf("MC vs expectation (spares %d): goodput %.5f vs %.5f (%+.3f%%), wall %.4g vs %.4g s, "
               "failures %.2f vs %.2f\n", spares[i], mc.goodput_mean, x.goodput, 100 * err,
               mc.wall_mean_s, x.wall_s, mc.failures_mean, x.failures);
        assert_true(fabs(err) <= 0.01);
        assert_true(mc.wall_p10_s <= mc.wall_mean_s && mc.wall_mean_s <= mc.wall_p90_s);
        assert_true(mc.goodput_p10 <= mc.goodput_mean && mc.goodput_mean <= mc.goodput_p90);
    }
}

/* Same seed, same numbers; another seed, other numbers. */
static void test_mc_reproducible(void **state)
{
    (void)state;
    mp_run_params p = base_run();
    mp_run_mc a, b, c;
    mp_diag d = {0};
    assert_int_equal(mp_run_simulate(&p, 2000, 99, &a, &d), MP_OK);
    assert_int_equal(mp_run_simulate(&p, 2000, 99, &b, &d), MP_OK);
    assert_int_equal(mp_run_simulate(&p, 2000, 100, &c, &d), MP_OK);
    assert_memory_equal(&a, &b, sizeof a);
    assert_true(a.wall_mean_s != c.wall_mean_s);
    assert_int_equal(mp_run_simulate(&p, 0, 1, &a, &d), MP_ERR_INPUT);
}

/* More frequent failures never raise goodput (expectation over a grid of rates, and the
 * simulation at 1x vs 2x with common random numbers); a faster checkpoint never lowers it (with
 * the interval fixed, and re-optimised). */
static void test_properties(void **state)
{
    (void)state;
    mp_diag d = {0};
    mp_run_params p = base_run();
    mp_run_expect x;
    double prev = 2.0;
    for (double k = 0.0; k <= 16.0; k = k < 0.125 ? 0.125 : 2 * k) {
        mp_run_params q = p;
        q.fail_per_s = p.fail_per_s * k;
        assert_int_equal(mp_run_expected(&q, &x, &d), MP_OK);
        assert_true(x.goodput <= prev);
        prev = x.goodput;
    }
    mp_run_mc m1, m2;
    mp_run_params q = p;
    q.fail_per_s *= 2;
    assert_int_equal(mp_run_simulate(&p, 4000, 5, &m1, &d), MP_OK);
    assert_int_equal(mp_run_simulate(&q, 4000, 5, &m2, &d), MP_OK);
    assert_true(m2.goodput_mean < m1.goodput_mean);

    for (int reopt = 0; reopt < 2; reopt++) {
        prev = 0.0;
        for (double ck = 600.0; ck >= 1.0; ck /= 2) {
            mp_run_params r = p;
            r.ckpt_s = ck;
            if (reopt)
                r.interval_s = mp_ckpt_interval_daly(ck, 1.0 / r.fail_per_s);
            assert_int_equal(mp_run_expected(&r, &x, &d), MP_OK);
            assert_true(x.goodput >= prev);
            prev = x.goodput;
        }
    }
    q = p;
    q.ckpt_s = 15.0;
    assert_int_equal(mp_run_simulate(&q, 4000, 5, &m2, &d), MP_OK);
    assert_true(m2.goodput_mean > m1.goodput_mean);
}

/* The optimal interval lies at the minimum of the simulated curve: a job with a costly checkpoint
 * (300 s) failing every hour; simulate intervals 0.25x .. 4x Daly's optimum with the same seed.
 * Also: the exact minimiser of the expectation is a local minimum, and Young/Daly/exact agree
 * to first order. */
static void test_optimal_interval(void **state)
{
    (void)state;
    mp_diag d = {0};
    mp_run_params p = base_run();
    p.ckpt_s = 300.0;
    p.fail_per_s = 1.0 / 3600.0;
    p.spare_frac = 0.0;
    const double M = 3600.0;
    const double daly = mp_ckpt_interval_daly(p.ckpt_s, M);
    const double young = mp_ckpt_interval_young(p.ckpt_s, M);
    const double exact = mp_ckpt_interval_exact(p.ckpt_s, M);
    /* Young: sqrt(2 x 300 x 3600) = 1469.69 s */
    assert_close(young, 1469.6938456699068, 1e-12);
    assert_close(daly, exact, 0.02);
    const double mult[] = {0.25, 0.5, 0.75, 1.0, 1.33, 2.0, 4.0};
    double best = INFINITY, at_opt = 0;
    int best_i = -1;
    for (size_t i = 0; i < sizeof mult / sizeof mult[0]; i++) {
        mp_run_params q = p;
        q.interval_s = mult[i] * daly;
        mp_run_mc mc;
        assert_int_equal(mp_run_simulate(&q, 3000, 2024, &mc, &d), MP_OK);
        printf("interval %.2f x Daly (%.0f s): simulated wall %.6g s\n", mult[i], q.interval_s, mc.wall_mean_s);
        if (mc.wall_mean_s < best) {
            best = mc.wall_mean_s;
            best_i = (int)i;
        }
        if (mult[i] == 1.0)
            at_opt = mc.wall_mean_s;
    }
    assert_true(mult[best_i] == 1.0);
    assert_true(at_opt == best);
    mp_run_expect x0, xm, xp;
    mp_run_params q = p;
    q.interval_s = exact;
    assert_int_equal(mp_run_expected(&q, &x0, &d), MP_OK);
    q.interval_s = exact * 0.98;
    assert_int_equal(mp_run_expected(&q, &xm, &d), MP_OK);
    q.interval_s = exact * 1.02;
    assert_int_equal(mp_run_expected(&q, &xp, &d), MP_OK);
    assert_true(x0.wall_s <= xm.wall_s && x0.wall_s <= xp.wall_s);
    /* Daly's regime switch: a checkpoint longer than 2 M -> the interval is M. */
    assert_close(mp_ckpt_interval_daly(10000, 3600), 3600.0, 1e-12);
}

/* Erlang B: B(1, 1) = 1/2, B(2, 1) = (1/2) / (1 + 1 + 1/2) = 0.2; B(0, a) = 1. Spares for
 * a = 1 at 1%: B(4, 1) = (1/24)/(1 + 1 + 1/2 + 1/6 + 1/24) = 0.01538, B(5, 1) = (1/120)/2.71667 = 0.003067 -> 5. */
static void test_erlang(void **state)
{
    (void)state;
    assert_close(mp_erlang_b(1, 1.0), 0.5, 1e-12);
    assert_close(mp_erlang_b(2, 1.0), 0.2, 1e-12);
    assert_close(mp_erlang_b(0, 3.0), 1.0, 1e-12);
    assert_close(mp_erlang_b(4, 1.0), (1.0 / 24) / (1 + 1 + 0.5 + 1.0 / 6 + 1.0 / 24), 1e-12);
    assert_int_equal(mp_spares_for(1.0 / 3600.0, 3600.0, 0.01), 5);
    assert_int_equal(mp_spares_for(0.0, 3600.0, 0.01), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_splitmix64_vectors),
        cmocka_unit_test(test_xoshiro_vectors),
        cmocka_unit_test(test_llama3_interruptions),
        cmocka_unit_test(test_rate_scaling),
        cmocka_unit_test(test_fault_json),
        cmocka_unit_test(test_checkpoint),
        cmocka_unit_test(test_expected_golden),
        cmocka_unit_test(test_mc_matches_expectation),
        cmocka_unit_test(test_mc_reproducible),
        cmocka_unit_test(test_properties),
        cmocka_unit_test(test_optimal_interval),
        cmocka_unit_test(test_erlang),
    };
    return cmocka_run_group_tests(tests, catalog_setup, catalog_teardown);
}
