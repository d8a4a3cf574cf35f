/* tests/test_coll.c — properties and golden values of mp_coll_time (src/coll/coll.c) on clusters
 * built from the catalog:
 *  - limits: one rank or zero bytes cost nothing; n = 2 ring all-reduce = 2 alpha + S/B;
 *  - monotone: never faster with more bytes (1 B .. 8 GiB, every op), never faster over a slower
 *    scale-out link (ib-ndr-400 < roce-100 < eth-25) for groups spanning nodes;
 *  - bounded: bus bandwidth never exceeds what the bottleneck tier offers;
 *  - golden: a hand-derived alpha-beta ring all-reduce, and nccl-tests measurements on 8 x H200
 *    (validation/collectives.csv rows stas_sharp_h200_8g_nvlsoff and _8g_default). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"

#include "meshplan/catalog.h"
#include "meshplan/coll.h"
#include "meshplan/topo.h"



static mp_cluster cluster(const char *gpu, int64_t n, const char *scaleout)
{
    mp_cluster c;
    mp_diag d = {0};
    mp_status st = mp_cluster_from_catalog(g_cat, gpu, n, 0, scaleout, &c, &d);
    if (st != MP_OK)
        fail_msg("cluster %s x%lld: %s", gpu, (long long)n, d.text);
    return c;
}

static double coll_s(const mp_cluster *c, mp_coll_op op, double bytes, mp_group g,
                     mp_coll_algo algo, mp_coll_cost *out)
{
    mp_coll_cost tmp;
    if (!out)
        out = &tmp;
    mp_status st = mp_coll_time(c, op, bytes, g, algo, out);
    if (st != MP_OK)
        fail_msg("%s/%s of %.0f B over %lld ranks stride %lld: status %d", mp_coll_op_name(op),
                 mp_coll_algo_name(algo), bytes, (long long)g.size, (long long)g.stride, (int)st);
    assert_true(isfinite(out->total_s) && out->total_s >= 0);
    assert_close(out->total_s, out->latency_s + out->bandwidth_s, 1e-12);
    return out->total_s;
}

/* The groups the properties are checked on, on 128 H100s (16 nodes of 8). */
static const mp_group groups[] = {
    {2, 1}, {8, 1},      /* inside one node */
    {16, 1}, {128, 1},   /* spanning nodes, 8 per node */
    {16, 8}, {4, 32},    /* spanning nodes, one per node (DP/PP-like strides) */
};

static void test_trivial(void **state)
{
    (void)state;
    mp_cluster c = cluster("h100-sxm5-80gb", 64, NULL);
    for (int op = 0; op < MP_COLL_OP_COUNT; op++) {
        mp_coll_cost cc;
        /* one rank */
        assert_int_equal(mp_coll_time(&c, (mp_coll_op)op, 1e9, (mp_group){1, 1}, MP_ALGO_AUTO, &cc), MP_OK);
        assert_true(cc.total_s == 0.0 && cc.latency_s == 0.0 && cc.bandwidth_s == 0.0);
        /* zero bytes */
        assert_int_equal(mp_coll_time(&c, (mp_coll_op)op, 0.0, (mp_group){8, 1}, MP_ALGO_AUTO, &cc), MP_OK);
        assert_true(cc.total_s == 0.0);
        /* bad input */
        assert_int_equal(mp_coll_time(&c, (mp_coll_op)op, -1.0, (mp_group){8, 1}, MP_ALGO_AUTO, &cc), MP_ERR_INPUT);
        assert_int_equal(mp_coll_time(&c, (mp_coll_op)op, NAN, (mp_group){8, 1}, MP_ALGO_AUTO, &cc), MP_ERR_INPUT);
        assert_int_equal(mp_coll_time(&c, (mp_coll_op)op, 1e6, (mp_group){0, 1}, MP_ALGO_AUTO, &cc), MP_ERR_INPUT);
    }
    /* Forcing an algorithm that does not apply is bad input. */
    mp_coll_cost cc;
    assert_int_equal(mp_coll_time(&c, MP_COLL_ALL_GATHER, 1e6, (mp_group){8, 1}, MP_ALGO_TREE, &cc), MP_ERR_INPUT);
    assert_int_equal(mp_coll_time(&c, MP_COLL_ALL_REDUCE, 1e6, (mp_group){8, 1}, MP_ALGO_HIERARCHICAL, &cc), MP_ERR_INPUT);
    mp_cluster a = cluster("a100-sxm4-80gb", 8, NULL); /* NVLink 3: no NVLS */
    assert_int_equal(mp_coll_time(&a, MP_COLL_ALL_REDUCE, 1e6, (mp_group){8, 1}, MP_ALGO_IN_NETWORK, &cc), MP_ERR_INPUT);
}

/* Names round-trip. */
static void test_names(void **state)
{
    (void)state;
    for (int op = 0; op < MP_COLL_OP_COUNT; op++) {
        mp_coll_op x;
        assert_int_equal(mp_coll_op_parse(mp_coll_op_name((mp_coll_op)op), &x), MP_OK);
        assert_int_equal(x, op);
    }
    for (int a = 0; a < MP_ALGO_COUNT; a++) {
        mp_coll_algo x;
        assert_int_equal(mp_coll_algo_parse(mp_coll_algo_name((mp_coll_algo)a), &x), MP_OK);
        assert_int_equal(x, a);
    }
    mp_coll_op x;
    assert_int_equal(mp_coll_op_parse("allreduce", &x), MP_ERR_INPUT);
    /* nccl-tests bus factors: 2(n-1)/n = 1.75 and (n-1)/n = 0.875 at n = 8 */
    assert_close(mp_coll_busbw_factor(MP_COLL_ALL_REDUCE, 8), 1.75, 1e-15);
    assert_close(mp_coll_busbw_factor(MP_COLL_ALL_GATHER, 8), 0.875, 1e-15);
    assert_close(mp_coll_busbw_factor(MP_COLL_REDUCE_SCATTER, 8), 0.875, 1e-15);
    assert_close(mp_coll_busbw_factor(MP_COLL_ALL_TO_ALL, 8), 0.875, 1e-15);
    assert_close(mp_coll_busbw_factor(MP_COLL_BROADCAST, 8), 1.0, 1e-15);
}

/* Time never decreases with the message size: 1 B to 8 GiB in steps of sqrt(2). */
static void test_monotone_in_bytes(void **state)
{
    (void)state;
    mp_cluster c = cluster("h100-sxm5-80gb", 128, NULL);
    for (size_t gi = 0; gi < sizeof groups / sizeof groups[0]; gi++)
        for (int op = 0; op < MP_COLL_OP_COUNT; op++) {
            double prev = 0.0;
            for (double b = 1.0; b <= 8.0 * 1073741824.0 * 1.0001; b *= sqrt(2.0)) {
                double t = coll_s(&c, (mp_coll_op)op, b, groups[gi], MP_ALGO_AUTO, NULL);
                if (t < prev)
                    fail_msg("%s over %lld ranks stride %lld: %.0f B takes %.9g s < %.9g s for "
                             "fewer bytes", mp_coll_op_name((mp_coll_op)op),
                             (long long)groups[gi].size, (long long)groups[gi].stride, b, t, prev);
                prev = t;
            }
        }
}

/* A slower scale-out link is never faster for a group that crosses nodes. Catalog line rates
 * per port: ib-ndr-400 50 GB/s, roce-100 12.5 GB/s, eth-25 3.125 GB/s; latencies 5, 6, 20 us. */
static void test_monotone_in_link(void **state)
{
    (void)state;
    static const char *const links[] = {"ib-ndr-400", "roce-100", "eth-25"};
    mp_cluster cl[3];
    for (int i = 0; i < 3; i++)
        cl[i] = cluster("h100-sxm5-80gb", 128, links[i]);
    static const mp_group spanning[] = {{16, 8}, {4, 32}, {16, 1}, {128, 1}};
    static const double sizes[] = {1.0, 4096.0, 1048576.0, 67108864.0, 1073741824.0};
    for (size_t gi = 0; gi < sizeof spanning / sizeof spanning[0]; gi++)
        for (int op = 0; op < MP_COLL_OP_COUNT; op++)
            for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
                double t[3];
                for (int i = 0; i < 3; i++)
                    t[i] = coll_s(&cl[i], (mp_coll_op)op, sizes[si], spanning[gi], MP_ALGO_AUTO, NULL);
                for (int i = 1; i < 3; i++)
                    if (t[i] < t[i - 1])
                        fail_msg("%s of %.0f B over %lld ranks stride %lld: %s (%.9g s) faster "
                                 "than %s (%.9g s)", mp_coll_op_name((mp_coll_op)op), sizes[si],
                                 (long long)spanning[gi].size, (long long)spanning[gi].stride,
                                 links[i], t[i], links[i - 1], t[i - 1]);
            }
}

/* busbw = bytes * factor / time never exceeds what the bottleneck tier offers the group: for
 * tier 0 its per-GPU bw_Bps; for an outer tier t, its per-GPU bw_Bps times the group's ranks in
 * one domain of tier t-1 (NCCL drives one ring per NIC, so 8 ranks of a node cross it over 8
 * NICs: measured 380 GB/s busbw over 4 nodes of 8 B200 with 50 GB/s EFA per GPU,
 * collectives.csv stas_p6b200_4n_16GiB). With one rank per node (stride >= 8) that is the
 * per-GPU bw_Bps itself. This holds for ring, tree, reduce-scatter, all-gather and all-to-all.
 * It does not for algorithms that move less than the ring's 2(n-1)/n S per GPU, because busbw
 * is normalised to the ring:
 *  - in-network reduction: each GPU sends S once and receives S, so algbw = S / time <= bw_Bps
 *    (NVLS busbw exceeds the line rate: 480 GB/s over 450 GB/s NVLink 4 in collectives.csv);
 *  - hierarchical: each GPU moves 2(r-1)/r S inside its node and 2(m-1)/m S/r over its NIC
 *    (r ranks per node, m nodes), so bandwidth_s >= each of those over its tier's line rate. */
static void check_busbw(const mp_cluster *c, const char *link, mp_coll_op op, mp_coll_algo algo,
                        mp_group g, double b)
{
    mp_coll_cost cc;
    mp_status st = mp_coll_time(c, op, b, g, algo, &cc);
    if (st == MP_ERR_INPUT && algo != MP_ALGO_AUTO)
        return; /* algorithm not available here */
    assert_int_equal(st, MP_OK);
    double t = cc.total_s;
    mp_placement pl;
    mp_group_place(c, g, &pl);
    if (cc.algo == MP_ALGO_HIERARCHICAL) {
        double r = (double)pl.ranks_in_domain[0], m = (double)g.size / r;
        assert_true(cc.bandwidth_s * (1.0 + 1e-12) >= 2.0 * (r - 1.0) / r * b / c->tier[0].bw_Bps);
        assert_true(cc.bandwidth_s * (1.0 + 1e-12) >= 2.0 * (m - 1.0) / m * (b / r) / c->tier[1].bw_Bps);
        return;
    }
    int bt = cc.bottleneck_tier;
    assert_true(bt >= 0 && bt <= pl.outer_tier);
    const int lower = bt > 0 ? bt - 1 : 0;
    double limit = c->tier[bt].bw_Bps * (bt > 0 ? (double)pl.ranks_in_domain[lower] : 1.0);
    if (g.stride >= c->gpus_per_node && bt > 0)
        assert_true(pl.ranks_in_domain[lower] == 1); /* the literal per-GPU bound */
    double busbw = b * mp_coll_busbw_factor(op, g.size) / t;
    double algbw = b / t;
    double measured = cc.algo == MP_ALGO_IN_NETWORK ? algbw : busbw;
    if (measured > limit * (1.0 + 1e-12))
        fail_msg("%s (%s) of %.0f B over %lld ranks stride %lld on %s: %s %.4g GB/s > tier %d "
                 "limit %.4g GB/s", mp_coll_op_name(op), mp_coll_algo_name(cc.algo), b,
                 (long long)g.size, (long long)g.stride, link,
                 cc.algo == MP_ALGO_IN_NETWORK ? "algbw" : "busbw", measured / 1e9, bt,
                 limit / 1e9);
}

static void test_busbw_bounded(void **state)
{
    (void)state;
    static const char *const links[] = {"ib-ndr-400", "roce-100", "eth-25"};
    static const mp_coll_op ops[] = {MP_COLL_ALL_REDUCE, MP_COLL_REDUCE_SCATTER,
                                     MP_COLL_ALL_GATHER, MP_COLL_ALL_TO_ALL};
    static const mp_coll_algo ar_algos[] = {MP_ALGO_AUTO, MP_ALGO_RING, MP_ALGO_TREE,
                                            MP_ALGO_HIERARCHICAL, MP_ALGO_IN_NETWORK};
    for (int li = 0; li < 3; li++) {
        mp_cluster c = cluster("h100-sxm5-80gb", 128, links[li]);
        for (size_t gi = 0; gi < sizeof groups / sizeof groups[0]; gi++)
            for (double b = 1024.0; b <= 8.0 * 1073741824.0; b *= 8.0) {
                for (size_t oi = 1; oi < sizeof ops / sizeof ops[0]; oi++)
                    check_busbw(&c, links[li], ops[oi], MP_ALGO_AUTO, groups[gi], b);
                for (size_t ai = 0; ai < sizeof ar_algos / sizeof ar_algos[0]; ai++)
                    check_busbw(&c, links[li], MP_COLL_ALL_REDUCE, ar_algos[ai], groups[gi], b);
            }
    }
}

/* Ring all-reduce of S = 1 GiB over 8 GPUs of one node on NVLink 4 (catalog: 450 GB/s per GPU
 * per direction, efficiency 0.81, alpha 3 us): 2(n-1) alpha + 2(n-1)/n S / (bw eff)
 * = 14 * 3e-6 + 1.75 * 1,073,741,824 / (450e9 * 0.81)
 * = 4.2e-5 + 1,879,048,192 / 3.645e11 = 4.2e-5 + 5.15514e-3 = 5.19714e-3 s. */
static void test_ring_golden(void **state)
{
    (void)state;
    const mp_link *nv = mp_catalog_link(g_cat, "nvlink4");
    assert_non_null(nv);
    /* The constants the derivation used; if the catalog changes, redo it. */
    assert_true(nv->bw_Bps == 450e9 && nv->efficiency_frac == 0.81 && nv->latency_s == 3e-6);
    mp_cluster c = cluster("h100-sxm5-80gb", 8, NULL);
    mp_coll_cost cc;
    const double S = 1073741824.0;
    coll_s(&c, MP_COLL_ALL_REDUCE, S, (mp_group){8, 1}, MP_ALGO_RING, &cc);
    assert_int_equal(cc.algo, MP_ALGO_RING);
    assert_int_equal(cc.bottleneck_tier, 0);
    assert_close(cc.latency_s, 14.0 * 3e-6, 1e-12);
    assert_close(cc.bandwidth_s, 1.75 * S / (450e9 * 0.81), 1e-12);
    assert_close(cc.total_s, 5.19714e-3, 1e-5);
    /* n = 2: 2 alpha + S / B = 6e-6 + 1,073,741,824 / 3.645e11 = 2.951e-3 s */
    coll_s(&c, MP_COLL_ALL_REDUCE, S, (mp_group){2, 1}, MP_ALGO_RING, &cc);
    assert_close(cc.total_s, 2.0 * 3e-6 + S / (450e9 * 0.81), 1e-12);
    /* Ring all-gather / reduce-scatter: half the all-reduce's terms: 7 alpha + 7/8 S / B. */
    coll_s(&c, MP_COLL_ALL_GATHER, S, (mp_group){8, 1}, MP_ALGO_AUTO, &cc);
    assert_close(cc.total_s, 7.0 * 3e-6 + 0.875 * S / (450e9 * 0.81), 1e-12);
    coll_s(&c, MP_COLL_REDUCE_SCATTER, S, (mp_group){8, 1}, MP_ALGO_AUTO, &cc);
    assert_close(cc.total_s, 7.0 * 3e-6 + 0.875 * S / (450e9 * 0.81), 1e-12);
}

/* nccl-tests all_reduce_perf, 8 GiB, 8 x H200 in one HGX node (collectives.csv):
 * NCCL_NVLS_ENABLE=0 (ring): busbw 365.6 GB/s; default (NVLS): 473.1 GB/s. Within 15%. */
static void test_h200_measured(void **state)
{
    (void)state;
    mp_cluster c = cluster("h200-sxm-141gb", 8, NULL);
    const double S = 8589934592.0;
    mp_coll_cost cc;
    double t = coll_s(&c, MP_COLL_ALL_REDUCE, S, (mp_group){8, 1}, MP_ALGO_RING, &cc);
    double busbw = S * 1.75 / t;
    print_message("8 x H200 ring all-reduce 8 GiB: busbw %.1f GB/s (measured 365.6)\n", busbw / 1e9);
    assert_close(busbw, 365.6e9, 0.15);
    t = coll_s(&c, MP_COLL_ALL_REDUCE, S, (mp_group){8, 1}, MP_ALGO_IN_NETWORK, &cc);
    busbw = S * 1.75 / t;
    print_message("8 x H200 NVLS all-reduce 8 GiB: busbw %.1f GB/s (measured 473.1)\n", busbw / 1e9);
    assert_close(busbw, 473.1e9, 0.15);
    /* With both available NCCL picks NVLS at this size (the "default" row): so should AUTO. */
    coll_s(&c, MP_COLL_ALL_REDUCE, S, (mp_group){8, 1}, MP_ALGO_AUTO, &cc);
    assert_int_equal(cc.algo, MP_ALGO_IN_NETWORK);
}

/* Placement: TP (stride 1) of 8 stays in a node; DP of 16 at stride 8 spans 16 nodes. */
static void test_placement(void **state)
{
    (void)state;
    mp_cluster c = cluster("h100-sxm5-80gb", 128, NULL);
    mp_placement pl;
    mp_group_place(&c, (mp_group){8, 1}, &pl);
    assert_int_equal(pl.outer_tier, 0);
    assert_int_equal(pl.ranks_in_domain[0], 8);
    mp_group_place(&c, (mp_group){16, 8}, &pl);
    assert_int_equal(pl.outer_tier, 1);
    assert_int_equal(pl.ranks_in_domain[0], 1);
    mp_group_place(&c, (mp_group){32, 1}, &pl);
    assert_int_equal(pl.outer_tier, 1);
    assert_int_equal(pl.ranks_in_domain[0], 8);
    mp_group_place(&c, (mp_group){1, 1}, &pl);
    assert_int_equal(pl.outer_tier, -1);
    /* Per-GPU scale-out: DGX H100 8 NICs x 50 GB/s / 8 GPUs = 50 GB/s. */
    assert_true(c.tier[1].bw_Bps == 50e9);
    assert_int_equal(c.tier[0].domain_gpus, 8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trivial),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_monotone_in_bytes),
        cmocka_unit_test(test_monotone_in_link),
        cmocka_unit_test(test_busbw_bounded),
        cmocka_unit_test(test_ring_golden),
        cmocka_unit_test(test_h200_measured),
        cmocka_unit_test(test_placement),
    };
    return cmocka_run_group_tests(tests, catalog_setup, catalog_teardown);
}
