/* tests/test_probe.c — the pure half of `meshplan probe` (meshplan/probe.h): the alpha-beta fit
 * against hand-derived values, its refusals, the switch inference on synthetic latency matrices
 * either side of its threshold, and the cluster description read back by mp_cluster_from_json,
 * whose collective cost on it follows the written figures. The MPI measurements are exercised
 * by tests/probe_e2e.sh. */
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

/* Exact data t = 5 us + S / 10 GB/s: the fit returns the two figures and no error. */
static void test_fit_exact(void **state)
{
    (void)state;
    mp_probe_point p[8];
    for (int i = 0; i < 8; i++) {
        double s = pow(16.0, i);
        p[i] = (mp_probe_point){s, 5e-6 + s / 10e9};
    }
    mp_probe_ab_fit f;
    assert_int_equal(mp_probe_fit_alpha_beta(p, 8, &f, NULL), MP_OK);
    assert_true(fabs(f.alpha_s - 5e-6) < 1e-12);
    assert_true(fabs(f.beta_Bps / 10e9 - 1) < 1e-9);
    assert_true(f.median_err_pct < 1e-6 && f.max_err_pct < 1e-6);
    assert_int_equal(f.npoints, 8);
}

/* Two points determine the line: (0 B, 2 us) and (1 MB, 102 us) -> alpha 2 us, beta 1e10 B/s.
 * With +-10% noise alternating, the relative least squares keeps the figures within 10% and
 * the median error at the noise level. */
static void test_fit_two_points_and_noise(void **state)
{
    (void)state;
    mp_probe_point p2[2] = {{0, 2e-6}, {1e6, 102e-6}};
    mp_probe_ab_fit f;
    assert_int_equal(mp_probe_fit_alpha_beta(p2, 2, &f, NULL), MP_OK);
    assert_true(fabs(f.alpha_s - 2e-6) < 1e-12 && fabs(f.beta_Bps / 1e10 - 1) < 1e-9);
    mp_probe_point p[12];
    for (int i = 0; i < 12; i++) {
        double s = pow(4.0, i), t = 2e-6 + s / 1e10;
        p[i] = (mp_probe_point){s, t * (i % 2 ? 1.1 : 0.9)};
    }
    assert_int_equal(mp_probe_fit_alpha_beta(p, 12, &f, NULL), MP_OK);
    assert_true(fabs(f.alpha_s / 2e-6 - 1) < 0.1);
    assert_true(fabs(f.beta_Bps / 1e10 - 1) < 0.1);
    assert_true(f.median_err_pct > 5 && f.median_err_pct < 15);
}

/* A pure bandwidth line through the origin gives alpha 0 (a negative intercept is clamped). */
static void test_fit_clamps_alpha(void **state)
{
    (void)state;
    mp_probe_point p[3] = {{1e3, 0.5e-7}, {1e4, 1e-6}, {1e5, 1e-5}};
    mp_probe_ab_fit f;
    assert_int_equal(mp_probe_fit_alpha_beta(p, 3, &f, NULL), MP_OK);
    assert_true(f.alpha_s == 0 && f.beta_Bps > 0);
}

static void test_fit_refuses(void **state)
{
    (void)state;
    mp_probe_ab_fit f;
    mp_diag d = {0};
    mp_probe_point one[1] = {{8, 1e-6}};
    assert_int_equal(mp_probe_fit_alpha_beta(one, 1, &f, &d), MP_ERR_INPUT);
    mp_probe_point same[2] = {{8, 1e-6}, {8, 2e-6}};
    assert_int_equal(mp_probe_fit_alpha_beta(same, 2, &f, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "two sizes"));
    mp_probe_point neg[2] = {{8, 1e-6}, {16, -1}};
    assert_int_equal(mp_probe_fit_alpha_beta(neg, 2, &f, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "point 1"));
    mp_probe_point falling[3] = {{1, 1e-3}, {1e6, 1e-6}, {2e6, 0.5e-6}};
    assert_int_equal(mp_probe_fit_alpha_beta(falling, 3, &f, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "does not grow"));
}

/* n nodes in switches of g: latency `in` inside a switch, `out` between. */
static void fill(double *lat, int n, int g, double in, double out)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            lat[i * n + j] = i == j ? 0 : i / g == j / g ? in : out;
}

static void test_switch_groups(void **state)
{
    (void)state;
    double lat[64];
    int gr[8], ng, reg;
    double near, far;
    /* 8 nodes, 2 switches of 4, 2 us vs 4 us (ratio 2 >= 1.5): two regular switches. */
    fill(lat, 8, 4, 2e-6, 4e-6);
    assert_int_equal(mp_probe_switch_groups(lat, 8, 1.5, gr, &ng, &reg, &near, &far, NULL), MP_OK);
    assert_int_equal(ng, 2);
    assert_true(reg);
    assert_int_equal(gr[3], 0);
    assert_int_equal(gr[4], 1);
    assert_true(near == 2e-6 && far == 4e-6);
    /* Just below the threshold (ratio 1.4 < 1.5): one switch. */
    fill(lat, 8, 4, 2e-6, 2.8e-6);
    assert_int_equal(mp_probe_switch_groups(lat, 8, 1.5, gr, &ng, &reg, &near, &far, NULL), MP_OK);
    assert_int_equal(ng, 1);
    assert_true(far == 0);
    /* Interleaved switches (node i on switch i % 2) are found but are not blocks. */
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++)
            lat[i * 8 + j] = i == j ? 0 : i % 2 == j % 2 ? 1e-6 : 3e-6;
    assert_int_equal(mp_probe_switch_groups(lat, 8, 1.5, gr, &ng, &reg, &near, &far, NULL), MP_OK);
    assert_int_equal(ng, 2);
    assert_false(reg);
    /* Refusals: too few nodes, a zero latency off the diagonal. */
    mp_diag d = {0};
    assert_int_equal(mp_probe_switch_groups(lat, 2, 1.5, gr, &ng, &reg, &near, &far, &d),
                     MP_ERR_INPUT);
    lat[1] = 0;
    assert_int_equal(mp_probe_switch_groups(lat, 8, 1.5, gr, &ng, &reg, &near, &far, &d),
                     MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "latency[0][1]"));
}

static mp_probe_cluster two_nodes(void)
{
    mp_probe_cluster pc;
    memset(&pc, 0, sizeof pc);
    snprintf(pc.gpu, sizeof pc.gpu, "h100-sxm5-80gb");
    pc.num_gpus = 4;
    pc.ntiers = 2;
    pc.tier[0] = (mp_probe_tier){"probe-intra", MP_LINK_SCALEUP, 2, 5e9, 10e-6, ""};
    pc.tier[1] = (mp_probe_tier){"probe-inter", MP_LINK_SCALEOUT, 4, 2e9, 20e-6, "measured"};
    return pc;
}

/* The description reads back as written, and the collective model on it follows the figures:
 * an all-reduce over the two nodes costs more than one inside a node, and doubling the
 * inter-node bandwidth makes the large one cheaper. */
static void test_cluster_json_round_trip(void **state)
{
    (void)state;
    mp_catalog *cat = NULL;
    mp_diag cd = {0};
    assert_int_equal(mp_catalog_create(&cat, &cd), MP_OK);
    mp_probe_cluster pc = two_nodes();
    char *text = NULL;
    assert_int_equal(mp_probe_cluster_json(&pc, &text, NULL), MP_OK);
    mp_cluster c;
    mp_diag d = {0};
    assert_int_equal(mp_cluster_from_json(cat, text, strlen(text), "probe", 0, &c, &d), MP_OK);
    free(text);
    assert_int_equal(c.ntiers, 2);
    assert_int_equal(c.num_gpus, 4);
    assert_int_equal(c.gpus_per_node, 2);
    assert_string_equal(c.tier[0].link, "probe-intra");
    assert_string_equal(c.tier[1].link, "probe-inter");
    assert_true(fabs(c.tier[0].bw_Bps - 5e9) < 1 && fabs(c.tier[1].bw_Bps - 2e9) < 1);
    assert_true(c.tier[1].latency_s == 20e-6 && c.tier[1].efficiency_frac == 1.0);
    assert_string_equal(c.gpu.key, "h100-sxm5-80gb");
    mp_coll_cost in, across, faster;
    assert_int_equal(mp_coll_time(&c, MP_COLL_ALL_REDUCE, 64e6, (mp_group){2, 1}, MP_ALGO_AUTO, &in), MP_OK);
    assert_int_equal(mp_coll_time(&c, MP_COLL_ALL_REDUCE, 64e6, (mp_group){4, 1}, MP_ALGO_AUTO, &across), MP_OK);
    assert_true(across.total_s > in.total_s);
    pc.tier[1].bw_Bps = 4e9;
    assert_int_equal(mp_probe_cluster_json(&pc, &text, NULL), MP_OK);
    assert_int_equal(mp_cluster_from_json(cat, text, strlen(text), "probe", 0, &c, &d), MP_OK);
    free(text);
    assert_int_equal(mp_coll_time(&c, MP_COLL_ALL_REDUCE, 64e6, (mp_group){4, 1}, MP_ALGO_AUTO, &faster), MP_OK);
    assert_true(faster.total_s < across.total_s);
    mp_catalog_destroy(cat);
}

static void test_cluster_json_refuses(void **state)
{
    (void)state;
    char *text = NULL;
    mp_diag d = {0};
    mp_probe_cluster pc = two_nodes();
    pc.tier[0].domain_gpus = 3; /* does not divide 4 */
    assert_int_equal(mp_probe_cluster_json(&pc, &text, &d), MP_ERR_INPUT);
    assert_null(text);
    assert_non_null(strstr(d.text, "tier 0 (probe-intra)"));
    pc = two_nodes();
    pc.tier[1].bw_Bps = 0;
    assert_int_equal(mp_probe_cluster_json(&pc, &text, &d), MP_ERR_INPUT);
    pc = two_nodes();
    pc.tier[1].kind = MP_LINK_SCALEUP;
    assert_int_equal(mp_probe_cluster_json(&pc, &text, &d), MP_ERR_INPUT);
    pc = two_nodes();
    pc.ntiers = 0;
    assert_int_equal(mp_probe_cluster_json(&pc, &text, &d), MP_ERR_INPUT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_exact),          cmocka_unit_test(test_fit_two_points_and_noise),
        cmocka_unit_test(test_fit_clamps_alpha),   cmocka_unit_test(test_fit_refuses),
        cmocka_unit_test(test_switch_groups),      cmocka_unit_test(test_cluster_json_round_trip),
        cmocka_unit_test(test_cluster_json_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
