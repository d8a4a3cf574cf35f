/* tests/test_coll.c — properties, golden values and decisions of the collective model
 * (src/coll/coll.c) on clusters built from the catalog and from cluster descriptions:
 *  - limits: one rank or zero bytes cost nothing; bad input is rejected;
 *  - monotone: never faster with more bytes (1 B .. 8 GiB, every op and every algorithm), never
 *    faster over a slower scale-out link (ib-ndr-400 < roce-100 < eth-25), never faster with more
 *    oversubscription or background load;
 *  - bounded: bus bandwidth never exceeds what the bottleneck tier offers at line rate;
 *  - golden: hand-derived ring, tree and NVLS costs; nccl-tests measurements on 8 x H200;
 *  - decisions either side of a crossover: hierarchical beats the ring exactly when the network
 *    is the bottleneck by more than the group size (b_1 < B_0 / n) and loses when it is not;
 *    the flat ring never wins; NVLS vs ring by size; congestion makes the model pick another
 *    algorithm and report what it saved. */
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

static mp_cluster cluster_json(const char *json, int64_t n)
{
    mp_cluster c;
    mp_diag d = {0};
    mp_status st = mp_cluster_from_json(g_cat, json, strlen(json), "test", n, &c, &d);
    if (st != MP_OK)
        fail_msg("cluster: %s\n%s", d.text, json);
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
    {4, 2}, {32, 4},     /* 4 per node (a TP group leaving the node with stride 2 ...) */
};

/* A 2:1 fat tree of 128 H100 (16 DGX nodes, 4 per rail-optimised leaf), 10% background load on
 * the spine: every kind of tier the properties should hold on. */
static const char *fat_tree_json =
    "{\"gpu\": \"h100-sxm5-80gb\", \"tiers\": ["
    "{\"name\": \"nvlink\", \"kind\": \"scaleup\", \"link\": \"nvlink4\", \"domain_gpus_count\": 8},"
    "{\"name\": \"leaf\", \"kind\": \"scaleout\", \"link\": \"ib-ndr-400\", \"nics_per_gpu_count\": 1,"
    " \"rail_optimized\": true, \"domain_gpus_count\": 32},"
    "{\"name\": \"spine\", \"kind\": \"scaleout\", \"oversubscription\": 2, \"background_load_frac\": 0.1}]}";

static void test_trivial(void **state)
{
    (void)state;
    mp_cluster c = cluster("h100-sxm5-80gb", 64, NULL);
    for (int op = 0; op < MP_COLL_OP_COUNT; op++) {
        mp_coll_cost cc;
        /* one rank */
        assert_int_equal(mp_coll_time(&c, (mp_coll_op)op, 1e9, (mp_group){1, 1}, MP_ALGO_AUTO, &cc), MP_OK);
        assert_true(cc.total_s == 0.0 && cc.latency_s == 0.0 && cc.bandwidth_s == 0.0);
        assert_int_equal(mp_coll_time(&c, (mp_coll_op)op, 1e9, (mp_group){1, 8}, MP_ALGO_AUTO, &cc), MP_OK);
        assert_true(cc.total_s == 0.0);
        /* zero bytes */
        assert_int_equal(mp_coll_time(&c, (mp_coll_op)op, 0.0, (mp_group){8, 1}, MP_ALGO_AUTO, &cc), MP_OK);
        assert_true(cc.total_s == 0.0);
        /* bad input */
        assert_int_equal(mp_coll_time(&c, (mp_coll_op)op, -1.0, (mp_group){8, 1}, MP_ALGO_AUTO, &cc), MP_ERR_INPUT);
        assert_int_equal(mp_coll_time(&c, (mp_coll_op)op, NAN, (mp_group){8, 1}, MP_ALGO_AUTO, &cc), MP_ERR_INPUT);
        assert_int_equal(mp_coll_time(&c, (mp_coll_op)op, INFINITY, (mp_group){8, 1}, MP_ALGO_AUTO, &cc), MP_ERR_INPUT);
        assert_int_equal(mp_coll_time(&c, (mp_coll_op)op, 1e6, (mp_group){0, 1}, MP_ALGO_AUTO, &cc), MP_ERR_INPUT);
        assert_int_equal(mp_coll_time(&c, (mp_coll_op)op, 1e6, (mp_group){8, 0}, MP_ALGO_AUTO, &cc), MP_ERR_INPUT);
        assert_int_equal(mp_coll_time(&c, (mp_coll_op)op, 1e6, (mp_group){128, 1}, MP_ALGO_AUTO, &cc), MP_ERR_INPUT);
        assert_int_equal(mp_coll_time(&c, (mp_coll_op)op, 1e6, (mp_group){8, 1}, (mp_coll_algo)99, &cc), MP_ERR_INPUT);
        assert_int_equal(mp_coll_time_among(&c, (mp_coll_op)op, 1e6, (mp_group){8, 1}, 0u, &cc), MP_ERR_INPUT);
    }
    /* Forcing an algorithm that does not apply is bad input. */
    mp_coll_cost cc;
    assert_int_equal(mp_coll_time(&c, MP_COLL_ALL_GATHER, 1e6, (mp_group){8, 1}, MP_ALGO_TREE, &cc), MP_ERR_INPUT);
    assert_int_equal(mp_coll_time(&c, MP_COLL_ALL_REDUCE, 1e6, (mp_group){8, 1}, MP_ALGO_HIERARCHICAL, &cc), MP_ERR_INPUT);
    assert_int_equal(mp_coll_time(&c, MP_COLL_SEND_RECV, 1e6, (mp_group){2, 1}, MP_ALGO_RING, &cc), MP_ERR_INPUT);
    assert_int_equal(mp_coll_time(&c, MP_COLL_ALL_TO_ALL, 1e6, (mp_group){8, 1}, MP_ALGO_HIERARCHICAL, &cc), MP_ERR_INPUT);
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
    assert_string_equal(mp_coll_proto_name(MP_PROTO_LL), "LL");
    assert_string_equal(mp_coll_proto_name(MP_PROTO_SIMPLE), "Simple");
    /* nccl-tests bus factors: 2(n-1)/n = 1.75 and (n-1)/n = 0.875 at n = 8 */
    assert_close(mp_coll_busbw_factor(MP_COLL_ALL_REDUCE, 8), 1.75, 1e-15);
    assert_close(mp_coll_busbw_factor(MP_COLL_ALL_GATHER, 8), 0.875, 1e-15);
    assert_close(mp_coll_busbw_factor(MP_COLL_REDUCE_SCATTER, 8), 0.875, 1e-15);
    assert_close(mp_coll_busbw_factor(MP_COLL_ALL_TO_ALL, 8), 0.875, 1e-15);
    assert_close(mp_coll_busbw_factor(MP_COLL_BROADCAST, 8), 1.0, 1e-15);
}

/* Time never decreases with the message size (1 B to 8 GiB in steps of sqrt(2)), for AUTO and
 * for every algorithm that applies, on a catalog cluster and on the congested fat tree. */
static void test_monotone_in_bytes(void **state)
{
    (void)state;
    mp_cluster cl[2] = {cluster("h100-sxm5-80gb", 128, NULL), cluster_json(fat_tree_json, 128)};
    for (int ci = 0; ci < 2; ci++)
        for (size_t gi = 0; gi < sizeof groups / sizeof groups[0]; gi++)
            for (int op = 0; op < MP_COLL_OP_COUNT; op++)
                for (int a = 0; a < MP_ALGO_COUNT; a++) {
                    mp_coll_cost cc;
                    if (mp_coll_time(&cl[ci], (mp_coll_op)op, 1e6, groups[gi], (mp_coll_algo)a, &cc) != MP_OK)
                        continue; /* does not apply */
                    double prev = 0.0;
                    for (double b = 1.0; b <= 8.0 * 1073741824.0 * 1.0001; b *= sqrt(2.0)) {
                        double t = coll_s(&cl[ci], (mp_coll_op)op, b, groups[gi], (mp_coll_algo)a, NULL);
                        if (t < prev)
                            fail_msg("%s/%s over %lld ranks stride %lld (cluster %d): %.0f B takes "
                                     "%.9g s < %.9g s for fewer bytes", mp_coll_op_name((mp_coll_op)op),
                                     mp_coll_algo_name((mp_coll_algo)a), (long long)groups[gi].size,
                                     (long long)groups[gi].stride, ci, b, t, prev);
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
    static const mp_group spanning[] = {{16, 8}, {4, 32}, {16, 1}, {128, 1}, {32, 4}};
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

/* More oversubscription or background load on any tier never makes anything faster. */
static void test_monotone_in_congestion(void **state)
{
    (void)state;
    mp_cluster base = cluster_json(fat_tree_json, 128);
    static const double sizes[] = {4096.0, 1048576.0, 268435456.0};
    for (int t = 0; t < base.ntiers; t++)
        for (int k = 0; k < 2; k++) {
            mp_cluster worse = base;
            if (k == 0)
                worse.tier[t].oversubscription *= 3.0;
            else
                worse.tier[t].background_load_frac = 0.5 + 0.4 * worse.tier[t].background_load_frac;
            for (size_t gi = 0; gi < sizeof groups / sizeof groups[0]; gi++)
                for (int op = 0; op < MP_COLL_OP_COUNT; op++)
                    for (size_t si = 0; si < 3; si++) {
                        double a = coll_s(&base, (mp_coll_op)op, sizes[si], groups[gi], MP_ALGO_AUTO, NULL);
                        double b = coll_s(&worse, (mp_coll_op)op, sizes[si], groups[gi], MP_ALGO_AUTO, NULL);
                        if (b < a * (1.0 - 1e-12))
                            fail_msg("%s over %lld ranks stride %lld: more congestion on tier %d "
                                     "(%s) is faster: %.9g < %.9g s", mp_coll_op_name((mp_coll_op)op),
                                     (long long)groups[gi].size, (long long)groups[gi].stride, t,
                                     k ? "load" : "oversubscription", b, a);
                    }
        }
}

/* Bus bandwidth never exceeds what the bottleneck offers at line rate. For the ring family
 * (ring, flat ring, RS, AG, broadcast) and all-to-all: busbw <= min over the tiers crossed of
 * tier 0's per-GPU bw_Bps and r_{t-1} x tier t's per-GPU bw_Bps (NCCL drives one ring channel
 * per NIC, so 8 ranks of a node cross it over 8 NICs: measured 380 GB/s busbw over 4 nodes of 8
 * B200 with 50 GB/s EFA per GPU, collectives.csv stas_p6b200_4n_16GiB). Algorithms that move
 * less than the ring's 2(n-1)/n S per GPU are bounded by what they do move:
 *  - in-network: each GPU sends S once: algbw <= tier-0 bw_Bps; each domain sends S across;
 *  - tree and hierarchical: each domain sends at least (m-1)/m S across each boundary (every
 *    other domain needs its contribution), so time >= (m-1)/m S / (r_{t-1} bw_t). */
static void check_busbw(const mp_cluster *c, mp_coll_op op, mp_coll_algo algo, mp_group g,
                        double b)
{
    mp_coll_cost cc;
    mp_status st = mp_coll_time(c, op, b, g, algo, &cc);
    if (st == MP_ERR_INPUT && algo != MP_ALGO_AUTO)
        return; /* algorithm not available here */
    assert_int_equal(st, MP_OK);
    double t = cc.total_s, n = (double)g.size;
    mp_placement pl;
    mp_group_place(c, g, &pl);
    double limit = pl.ranks_in_domain[0] > 1 || pl.outer_tier == 0 ? c->tier[0].bw_Bps : INFINITY;
    for (int u = 1; u <= pl.outer_tier; u++)
        limit = fmin(limit, (double)pl.ranks_in_domain[u - 1] * c->tier[u].bw_Bps);
    double busbw = b * mp_coll_busbw_factor(op, g.size) / t, algbw = b / t;
    const char *what = mp_coll_algo_name(cc.algo);
    if (cc.algo == MP_ALGO_IN_NETWORK) {
        if (algbw > c->tier[0].bw_Bps * (1.0 + 1e-12))
            fail_msg("%s over %lld/%lld: algbw %.4g > NVLink line rate", what, (long long)g.size,
                     (long long)g.stride, algbw / 1e9);
    } else if (cc.algo == MP_ALGO_TREE || cc.algo == MP_ALGO_HIERARCHICAL) {
        for (int u = 1; u <= pl.outer_tier; u++) {
            double r = (double)pl.ranks_in_domain[u - 1], m = n / r;
            double tmin = (m - 1.0) / m * b / (r * c->tier[u].bw_Bps);
            if (t < tmin * (1.0 - 1e-12))
                fail_msg("%s over %lld/%lld of %.0f B: %.4g s < cut bound %.4g s at tier %d", what,
                         (long long)g.size, (long long)g.stride, b, t, tmin, u);
        }
    } else if (busbw > limit * (1.0 + 1e-12)) {
        fail_msg("%s (%s) of %.0f B over %lld ranks stride %lld: busbw %.4g GB/s > line-rate "
                 "limit %.4g GB/s", mp_coll_op_name(op), what, b, (long long)g.size,
                 (long long)g.stride, busbw / 1e9, limit / 1e9);
    }
}

static void test_busbw_bounded(void **state)
{
    (void)state;
    static const char *const links[] = {"ib-ndr-400", "roce-100", "eth-25"};
    mp_cluster cl[4];
    for (int li = 0; li < 3; li++)
        cl[li] = cluster("h100-sxm5-80gb", 128, links[li]);
    cl[3] = cluster_json(fat_tree_json, 128);
    for (int ci = 0; ci < 4; ci++)
        for (size_t gi = 0; gi < sizeof groups / sizeof groups[0]; gi++)
            for (double b = 1024.0; b <= 8.0 * 1073741824.0; b *= 8.0)
                for (int op = 0; op < MP_COLL_OP_COUNT; op++) {
                    if (op == MP_COLL_SEND_RECV)
                        continue;
                    for (int a = 0; a < MP_ALGO_COUNT; a++)
                        check_busbw(&cl[ci], (mp_coll_op)op, (mp_coll_algo)a, groups[gi], b);
                }
}

/* Ring all-reduce of S = 1 GiB over 8 GPUs of one node on NVLink 4 (catalog: 450 GB/s per GPU
 * per direction, efficiency 0.81, alpha 3 us):
 *   LL:     14 x 3 us + 1.75 S / (0.5 x 364.5e9)       = 42 us + 10.310 ms
 *   Simple: 14 x (3 + 2.8) us + 1.75 S / 364.5e9       = 81.2 us + 5.155 ms  <- faster
 * 1.75 x 1,073,741,824 / 3.645e11 = 5.15514e-3 s; total 5.23634e-3 s. */
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
    assert_int_equal(cc.proto, MP_PROTO_SIMPLE);
    assert_int_equal(cc.bottleneck_tier, 0);
    assert_close(cc.latency_s, 14.0 * 5.8e-6, 1e-12);
    assert_close(cc.bandwidth_s, 1.75 * S / (450e9 * 0.81), 1e-12);
    assert_close(cc.total_s, 5.23634e-3, 1e-5);
    /* 8 KiB: LL = 42 us + 1.75 x 8192 / 1.8225e11 = 42.079 us; Simple = 81.239 us. */
    coll_s(&c, MP_COLL_ALL_REDUCE, 8192.0, (mp_group){8, 1}, MP_ALGO_RING, &cc);
    assert_int_equal(cc.proto, MP_PROTO_LL);
    assert_close(cc.total_s, 42e-6 + 1.75 * 8192.0 / (0.5 * 450e9 * 0.81), 1e-12);
    /* n = 2: 2 hops: 2 x 5.8 us + S / B = 11.6e-6 + 1,073,741,824 / 3.645e11 */
    coll_s(&c, MP_COLL_ALL_REDUCE, S, (mp_group){2, 1}, MP_ALGO_RING, &cc);
    assert_close(cc.total_s, 2.0 * 5.8e-6 + S / (450e9 * 0.81), 1e-12);
    /* Ring all-gather / reduce-scatter: half the all-reduce's terms: 7 hops + 7/8 S / B. */
    coll_s(&c, MP_COLL_ALL_GATHER, S, (mp_group){8, 1}, MP_ALGO_AUTO, &cc);
    assert_close(cc.total_s, 7.0 * 5.8e-6 + 0.875 * S / (450e9 * 0.81), 1e-12);
    coll_s(&c, MP_COLL_REDUCE_SCATTER, S, (mp_group){8, 1}, MP_ALGO_AUTO, &cc);
    assert_close(cc.total_s, 7.0 * 5.8e-6 + 0.875 * S / (450e9 * 0.81), 1e-12);
    /* NVLS: 100 us + S / (0.61 x 450e9) = 1e-4 + 3.91163e-3 s. */
    coll_s(&c, MP_COLL_ALL_REDUCE, S, (mp_group){8, 1}, MP_ALGO_IN_NETWORK, &cc);
    assert_close(cc.total_s, 100e-6 + S / (0.61 * 450e9), 1e-12);
}

/* Two DGX H100 nodes (16 ranks), ring across nodes: per-node NIC share 8 x 50 GB/s x 0.92 = 368
 * GB/s > NVLink's 364.5, so NVLink bounds it; hops 2(16-2) = 28 NVLink + 2(2-1) = 2 IB:
 *   Simple latency = 28 x 5.8 us + 2 x (5 + 11.3) us = 162.4 + 32.6 = 195.0 us
 *   bandwidth      = 2 x 15/16 x S / 364.5e9.
 * Tree: chain of 8 inside (2 x 7 NVLink hops), 1 tree level across (2 IB hops); the two nodes
 * exchange S over 8 NICs: max(1.875 S / 364.5e9, S / (8 x 46e9)) / 0.782. */
static void test_two_node_golden(void **state)
{
    (void)state;
    mp_cluster c = cluster("h100-sxm5-80gb", 16, NULL);
    const double S = 1073741824.0;
    mp_coll_cost cc;
    coll_s(&c, MP_COLL_ALL_REDUCE, S, (mp_group){16, 1}, MP_ALGO_RING, &cc);
    assert_int_equal(cc.bottleneck_tier, 0);
    assert_close(cc.latency_s, 28.0 * 5.8e-6 + 2.0 * 16.3e-6, 1e-12);
    assert_close(cc.bandwidth_s, 1.875 * S / 364.5e9, 1e-12);
    coll_s(&c, MP_COLL_ALL_REDUCE, S, (mp_group){16, 1}, MP_ALGO_TREE, &cc);
    assert_close(cc.latency_s, 14.0 * 5.8e-6 + 2.0 * 16.3e-6, 1e-12);
    assert_close(cc.bandwidth_s, fmax(1.875 * S / 364.5e9, S / (8.0 * 46e9)) / 0.782, 1e-12);
    /* DP group with one rank per node (stride 8): the NIC share alone, 46 GB/s. */
    coll_s(&c, MP_COLL_ALL_REDUCE, S, (mp_group){2, 8}, MP_ALGO_RING, &cc);
    assert_int_equal(cc.bottleneck_tier, 1);
    assert_close(cc.bandwidth_s, S / 46e9, 1e-12);
    /* send/recv across nodes: one NIC; inside: NVLink. */
    coll_s(&c, MP_COLL_SEND_RECV, S, (mp_group){2, 8}, MP_ALGO_AUTO, &cc);
    assert_close(cc.total_s, 16.3e-6 + S / 46e9, 1e-12);
    coll_s(&c, MP_COLL_SEND_RECV, S, (mp_group){2, 1}, MP_ALGO_AUTO, &cc);
    assert_close(cc.total_s, 5.8e-6 + S / 364.5e9, 1e-12);
    /* A pipeline of 4 stages of 4 GPUs (stride 4): the pair (0, 4) shares a node, but the
     * boundary between stages 1 and 2 crosses the NICs; its 4 senders share the node's 8 NICs:
     * 2 x 46 GB/s each. */
    coll_s(&c, MP_COLL_SEND_RECV, S, (mp_group){4, 4}, MP_ALGO_AUTO, &cc);
    assert_int_equal(cc.bottleneck_tier, 1);
    assert_close(cc.total_s, 16.3e-6 + S / 92e9, 1e-12);
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

/* NVLS vs ring by size, either side of the crossover on 8 H100. Ring Simple: 14 x 5.8 us +
 * 1.75 S / 364.5e9 = 81.2 us + 4.801e-12 S; NVLS: 100 us + S / 274.5e9 = 100 us + 3.643e-12 S;
 * equal at S = 18.8e-6 / 1.158e-12 = 16.2 MB (ring LL is slower than ring Simple there). */
static void test_nvls_crossover(void **state)
{
    (void)state;
    mp_cluster c = cluster("h100-sxm5-80gb", 8, NULL);
    mp_coll_cost cc;
    coll_s(&c, MP_COLL_ALL_REDUCE, 15.0e6, (mp_group){8, 1}, MP_ALGO_AUTO, &cc);
    assert_int_equal(cc.algo, MP_ALGO_RING);
    coll_s(&c, MP_COLL_ALL_REDUCE, 17.5e6, (mp_group){8, 1}, MP_ALGO_AUTO, &cc);
    assert_int_equal(cc.algo, MP_ALGO_IN_NETWORK);
    /* Small messages: ring with the LL protocol (42 us). */
    coll_s(&c, MP_COLL_ALL_REDUCE, 4096.0, (mp_group){8, 1}, MP_ALGO_AUTO, &cc);
    assert_int_equal(cc.proto, MP_PROTO_LL);
}

/* A PCIe server cluster (8 H100 PCIe per node, 8 nodes) whose scale-out per-GPU share is
 * `share` GB/s achievable. PCIe 5 x16: 63 GB/s x 0.8 = 50.4 GB/s per GPU; NICs: ib-ndr-400 ports
 * (50 GB/s x 0.92 = 46 GB/s achievable) spread as nics_per_gpu = share / 46. */
static mp_cluster pcie_cluster(double share_GBps)
{
    char json[1024];
    snprintf(json, sizeof json,
             "{\"gpu\": \"h100-pcie-80gb\", \"tiers\": ["
             "{\"kind\": \"scaleup\", \"link\": \"pcie5\", \"topology\": \"pcie\", \"domain_gpus_count\": 8},"
             "{\"kind\": \"scaleout\", \"link\": \"ib-ndr-400\", \"nics_per_gpu_count\": %.17g}]}",
             share_GBps / 46.0);
    return cluster_json(json, 64);
}

/* The decision test: hierarchical all-reduce (RS in the node, AR across, AG in the node; phases
 * add) against the ring over all ranks (NCCL's, one channel per NIC). With B_0 the scale-up
 * bandwidth, b_1 the per-GPU NIC share, r ranks per node, m nodes, n = r m, when the network is
 * the ring's bottleneck (r b_1 < B_0) the bandwidth terms are
 *   ring 2(n-1)/n S / (r b_1),   hierarchical 2(r-1)/r S / B_0 + 2(m-1)/m S / (r b_1),
 * whose difference is 2(r-1)/r S (1/B_0 - 1/(n b_1)): hierarchical wins exactly when the network
 * is so much the bottleneck that b_1 < B_0 / n, and loses above (up to b_1 = B_0, beyond which
 * the NICs outrun the scale-up links). On the PCIe cluster: B_0 = 50.4, n = 64, crossover
 * b_1* = 0.7875 GB/s. Checked at 16 GiB (bandwidth-bound: 20% either side is worth > 100 ms
 * against < 2 ms of latency) at 0.8 and 1.25 b_1*, far below (0.1), and where the network is
 * not the bottleneck at all (r b_1 > B_0: b_1 = 20). Then on two DGX H100 nodes (B_0 = 364.5,
 * n = 16, b_1* = 22.8 GB/s): one 100 Gb/s RoCE NIC per GPU (10.6) -> hierarchical; 400 Gb/s
 * InfiniBand (46) -> ring. */
static void test_hierarchical_vs_ring(void **state)
{
    (void)state;
    const unsigned both = MP_ALGO_BIT(MP_ALGO_RING) | MP_ALGO_BIT(MP_ALGO_HIERARCHICAL);
    const double S = 16.0 * 1073741824.0, B0 = 50.4e9, bstar = B0 / 64.0;
    static const struct { double x; mp_coll_algo want; } cases[] = {
        {0.1, MP_ALGO_HIERARCHICAL}, {0.8, MP_ALGO_HIERARCHICAL},
        {1.25, MP_ALGO_RING}, {20e9 / (50.4e9 / 64.0), MP_ALGO_RING},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double b1 = cases[i].x * bstar;
        mp_cluster c = pcie_cluster(b1 / 1e9);
        mp_coll_cost cc, ring, hier;
        assert_int_equal(mp_coll_time_among(&c, MP_COLL_ALL_REDUCE, S, (mp_group){64, 1}, both, &cc), MP_OK);
        coll_s(&c, MP_COLL_ALL_REDUCE, S, (mp_group){64, 1}, MP_ALGO_RING, &ring);
        coll_s(&c, MP_COLL_ALL_REDUCE, S, (mp_group){64, 1}, MP_ALGO_HIERARCHICAL, &hier);
        print_message("NIC share %.3g GB/s (%.2f x crossover): ring %.1f ms, hierarchical %.1f ms "
                      "-> %s\n", b1 / 1e9, cases[i].x, ring.total_s * 1e3, hier.total_s * 1e3,
                      mp_coll_algo_name(cc.algo));
        if (cc.algo != cases[i].want)
            fail_msg("NIC share %.3g GB/s: picked %s, expected %s", b1 / 1e9,
                     mp_coll_algo_name(cc.algo), mp_coll_algo_name(cases[i].want));
        assert_int_equal(hier.split_tier, 1);
        if (8.0 * b1 < B0) /* the difference formula above, exactly */
            assert_close(hier.bandwidth_s - ring.bandwidth_s,
                         2.0 * 7.0 / 8.0 * S * (1.0 / B0 - 1.0 / (64.0 * b1)), 1e-9);
    }
    static const struct { const char *link; mp_coll_algo want; } dgx[] = {
        {"roce-100", MP_ALGO_HIERARCHICAL}, {"ib-ndr-400", MP_ALGO_RING}};
    for (size_t i = 0; i < 2; i++) {
        mp_cluster c = cluster("h100-sxm5-80gb", 16, dgx[i].link);
        mp_coll_cost cc;
        assert_int_equal(mp_coll_time_among(&c, MP_COLL_ALL_REDUCE, S, (mp_group){16, 1}, both, &cc), MP_OK);
        assert_int_equal(cc.algo, dgx[i].want);
    }
}

/* The flat ring (one channel, not rail-aware) against the others: it is never faster than the
 * ring, and never faster than hierarchical (the hierarchy sends the same bytes per GPU, but only
 * (m-1)/(mr) of them over the NIC and the rest over scale-up, while every byte of the flat ring
 * crosses its slowest edge: a/B_0 + b/b_1 <= (a+b)/min(B_0, b_1)). */
static void test_flat_ring(void **state)
{
    (void)state;
    for (double share = 0.5; share < 200.0; share *= 3.0) {
        mp_cluster c = pcie_cluster(share);
        for (double b = 1024.0; b < 2e10; b *= 16.0) {
            double flat = coll_s(&c, MP_COLL_ALL_REDUCE, b, (mp_group){64, 1}, MP_ALGO_FLAT_RING, NULL);
            assert_true(coll_s(&c, MP_COLL_ALL_REDUCE, b, (mp_group){64, 1}, MP_ALGO_RING, NULL) <= flat);
            assert_true(coll_s(&c, MP_COLL_ALL_REDUCE, b, (mp_group){64, 1}, MP_ALGO_HIERARCHICAL, NULL) <= flat);
        }
    }
    /* One rank per node: all three are the same ring over the NICs (bandwidth terms). */
    mp_cluster c = pcie_cluster(10.0);
    mp_coll_cost a, f;
    coll_s(&c, MP_COLL_ALL_REDUCE, 1e9, (mp_group){8, 8}, MP_ALGO_RING, &a);
    coll_s(&c, MP_COLL_ALL_REDUCE, 1e9, (mp_group){8, 8}, MP_ALGO_FLAT_RING, &f);
    assert_true(a.total_s == f.total_s);
}

/* Congestion picks another algorithm and says what it saved. Two islands of 8 DGX H100 joined
 * by 4 x 100 Gb/s WAN links: the ring's 2(n-1)/n S per island crosses the WAN, the hierarchical
 * split at the WAN tier sends 2(m-1)/m S = S: half. With the WAN loaded (background 0.5) the
 * blind choice would still be what it picks unloaded; the model reports the congestion and the
 * tier. And on a rail-optimised 2:1 spine, direct all-to-all is slowed by cross-rail traffic
 * while PXN (hierarchical) keeps it on the rails. */
static void test_congestion_alternative(void **state)
{
    (void)state;
    const char *json =
        "{\"gpu\": \"h100-sxm5-80gb\", \"tiers\": ["
        "{\"name\": \"nvlink\", \"kind\": \"scaleup\", \"link\": \"nvlink4\", \"domain_gpus_count\": 8},"
        "{\"name\": \"ib\", \"kind\": \"scaleout\", \"link\": \"ib-ndr-400\", \"domain_gpus_count\": 64},"
        "{\"name\": \"wan\", \"kind\": \"wan\", \"link\": \"wan-100\", \"links_count\": 4,"
        " \"background_load_frac\": 0.5}]}";
    mp_cluster c = cluster_json(json, 128);
    assert_int_equal(c.ntiers, 3);
    /* WAN share per GPU: 4 x 12.5e9 / 64 = 781.25 MB/s at line rate. */
    assert_close(c.tier[2].bw_Bps, 4.0 * 12.5e9 / 64.0, 1e-12);
    const double S = 1073741824.0;
    mp_coll_cost cc, ring, hier;
    coll_s(&c, MP_COLL_ALL_REDUCE, S, (mp_group){128, 1}, MP_ALGO_AUTO, &cc);
    coll_s(&c, MP_COLL_ALL_REDUCE, S, (mp_group){128, 1}, MP_ALGO_RING, &ring);
    coll_s(&c, MP_COLL_ALL_REDUCE, S, (mp_group){128, 1}, MP_ALGO_HIERARCHICAL, &hier);
    print_message("2 islands over WAN, 1 GiB all-reduce: ring %.3f s, hierarchical %.3f s (split "
                  "at tier %d), picked %s\n", ring.total_s, hier.total_s, hier.split_tier,
                  mp_coll_algo_name(cc.algo));
    /* NVLS inside, SHARP on IB, a tree across the two islands: the in-network pipeline moves S
     * per island over the WAN, as the hierarchical split does; the ring moves 2(n-1)/n S. */
    assert_true(cc.algo == MP_ALGO_HIERARCHICAL || cc.algo == MP_ALGO_IN_NETWORK);
    assert_int_equal(hier.split_tier, 2);
    assert_true(hier.bandwidth_s < 0.6 * ring.bandwidth_s);
    assert_true(cc.total_s < hier.total_s && hier.total_s < ring.total_s);
    assert_int_equal(cc.congested_tier, 2);
    assert_true(cc.congestion_s > 0.0);
    assert_true(cc.saved_s >= 0.0);

    /* Rail-optimised leaves of 4 nodes under a 2:1 spine, 64 GPUs (2 leaves): all-to-all of
     * 256 MiB per rank over all 64. Direct: cross-rail traffic inside the leaf goes up to the
     * spine; PXN relays it over NVLink first. */
    mp_cluster f = cluster_json(fat_tree_json, 64);
    mp_coll_cost a2a, direct, pxn;
    const double A = 268435456.0;
    coll_s(&f, MP_COLL_ALL_TO_ALL, A, (mp_group){64, 1}, MP_ALGO_AUTO, &a2a);
    coll_s(&f, MP_COLL_ALL_TO_ALL, A, (mp_group){64, 1}, MP_ALGO_DIRECT, &direct);
    coll_s(&f, MP_COLL_ALL_TO_ALL, A, (mp_group){64, 1}, MP_ALGO_HIERARCHICAL, &pxn);
    print_message("rail-optimised 2:1 fat tree, all-to-all 256 MiB x 64: direct %.2f ms, PXN %.2f "
                  "ms, picked %s (blind pick %s, saved %.2f ms, congestion %.2f ms on tier %d)\n",
                  direct.total_s * 1e3, pxn.total_s * 1e3, mp_coll_algo_name(a2a.algo),
                  mp_coll_algo_name(a2a.blind_algo), a2a.saved_s * 1e3, a2a.congestion_s * 1e3,
                  a2a.congested_tier);
    assert_int_equal(a2a.algo, MP_ALGO_HIERARCHICAL);
    assert_true(pxn.total_s < direct.total_s);
    assert_int_equal(direct.bottleneck_tier, 2);
    /* Without congestion nothing is reported. */
    mp_cluster clean = f;
    for (int t = 0; t < clean.ntiers; t++) {
        clean.tier[t].oversubscription = 1.0;
        clean.tier[t].background_load_frac = 0.0;
    }
    coll_s(&clean, MP_COLL_ALL_TO_ALL, A, (mp_group){64, 1}, MP_ALGO_AUTO, &a2a);
    assert_int_equal(a2a.congested_tier, -1);
    assert_true(a2a.congestion_s == 0.0 && a2a.saved_s == 0.0);
    assert_int_equal(a2a.blind_algo, a2a.algo);
}

/* A blind tuner that ignores congestion can pick worse: ring vs hierarchical across the two
 * islands when only the WAN is loaded. The saved time is the difference, exactly. */
static void test_congestion_saved(void **state)
{
    (void)state;
    const char *json =
        "{\"gpu\": \"h100-sxm5-80gb\", \"tiers\": ["
        "{\"kind\": \"scaleup\", \"link\": \"nvlink4\", \"domain_gpus_count\": 8},"
        "{\"kind\": \"scaleout\", \"link\": \"ib-ndr-400\", \"domain_gpus_count\": 8},"
        "{\"kind\": \"wan\", \"link_bw_Bps\": 4e11, \"latency_s\": 5e-6, \"efficiency_frac\": 1,"
        " \"links_count\": 1, \"oversubscription\": 8}]}";
    /* Two "islands" of one node; the WAN gives 400 GB/s per island (50 per GPU) at line rate:
     * blind, the ring (bounded by NVLink, 364.5) looks best; with 8:1 oversubscription the WAN
     * share drops to 6.25 GB/s per GPU and the hierarchical split (half the WAN bytes) wins. */
    mp_cluster c = cluster_json(json, 16);
    mp_coll_cost cc, ring;
    const double S = 1073741824.0;
    /* Among ring and hierarchical (NVLS with SHARP would beat both). */
    assert_int_equal(mp_coll_time_among(&c, MP_COLL_ALL_REDUCE, S, (mp_group){16, 1},
                                        MP_ALGO_BIT(MP_ALGO_RING) | MP_ALGO_BIT(MP_ALGO_HIERARCHICAL),
                                        &cc), MP_OK);
    coll_s(&c, MP_COLL_ALL_REDUCE, S, (mp_group){16, 1}, MP_ALGO_RING, &ring);
    print_message("blind pick %s, picked %s (split %d), saved %.3f ms\n",
                  mp_coll_algo_name(cc.blind_algo), mp_coll_algo_name(cc.algo), cc.split_tier,
                  cc.saved_s * 1e3);
    assert_int_equal(cc.blind_algo, MP_ALGO_RING);
    assert_int_equal(cc.algo, MP_ALGO_HIERARCHICAL);
    assert_close(cc.saved_s, ring.total_s - cc.total_s, 1e-12);
    assert_true(cc.saved_s > 0.2 * ring.total_s);
}

/* Placement: TP (stride 1) of 8 stays in a node; DP of 16 at stride 8 spans 16 nodes; a TP group
 * of 8 at stride 2 straddles two nodes and its all-reduce crosses the NICs. */
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
    mp_group_place(&c, (mp_group){8, 2}, &pl);
    assert_int_equal(pl.outer_tier, 1);
    assert_int_equal(pl.ranks_in_domain[0], 4);
    mp_group_place(&c, (mp_group){1, 1}, &pl);
    assert_int_equal(pl.outer_tier, -1);
    /* Two dimensions: 2 ranks at stride 1 x 4 at stride 16: 2 per node, 8 in all. */
    mp_group_place_2d(&c, (mp_group){2, 1}, (mp_group){4, 16}, &pl);
    assert_int_equal(pl.ranks_in_domain[0], 2);
    assert_int_equal(pl.ranks_in_domain[1], 8);
    assert_int_equal(pl.outer_tier, 1);
    /* Per-GPU scale-out: DGX H100 8 NICs x 50 GB/s / 8 GPUs = 50 GB/s. */
    assert_true(c.tier[1].bw_Bps == 50e9);
    assert_int_equal(c.tier[0].domain_gpus, 8);
    /* The TP group that leaves the NVLink domain is costed on the fabric: 1 GiB all-gather. */
    mp_coll_cost in, out;
    coll_s(&c, MP_COLL_ALL_GATHER, 1073741824.0, (mp_group){8, 1}, MP_ALGO_AUTO, &in);
    coll_s(&c, MP_COLL_ALL_GATHER, 1073741824.0, (mp_group){8, 2}, MP_ALGO_AUTO, &out);
    assert_int_equal(in.bottleneck_tier, 0);
    assert_int_equal(out.bottleneck_tier, 1);
    assert_true(out.total_s > 1.5 * in.total_s);
    /* 2-D collective == 1-D when the outer dimension is trivial. */
    mp_coll_cost a, b;
    assert_int_equal(mp_coll_time_2d(&c, MP_COLL_ALL_REDUCE, 1e8, (mp_group){16, 8}, (mp_group){1, 1},
                                     MP_ALGO_MASK_ALL, &a), MP_OK);
    coll_s(&c, MP_COLL_ALL_REDUCE, 1e8, (mp_group){16, 8}, MP_ALGO_AUTO, &b);
    assert_true(a.total_s == b.total_s);
}

/* Scale-up topologies: an XGMI full mesh gives a group of r ranks r-1 of its 7 links (a pair gets
 * 64 GB/s), PCIe without peer-to-peer halves the bandwidth. */
static void test_scaleup_topologies(void **state)
{
    (void)state;
    mp_cluster m = cluster("mi300x", 8, NULL);
    assert_int_equal(m.tier[0].topology, MP_SU_MESH);
    const double S = 1073741824.0;
    mp_coll_cost c8, c2, p;
    coll_s(&m, MP_COLL_ALL_REDUCE, S, (mp_group){8, 1}, MP_ALGO_RING, &c8);
    coll_s(&m, MP_COLL_ALL_REDUCE, S, (mp_group){2, 1}, MP_ALGO_RING, &c2);
    /* 8 ranks: 448e9 x 0.7 = 313.6 GB/s; 2 ranks: one link, 313.6/7 = 44.8 GB/s. */
    assert_close(c8.bandwidth_s, 1.75 * S / 313.6e9, 1e-12);
    assert_close(c2.bandwidth_s, 1.0 * S / 44.8e9, 1e-12);
    coll_s(&m, MP_COLL_SEND_RECV, S, (mp_group){2, 1}, MP_ALGO_AUTO, &p);
    assert_close(p.bandwidth_s, S / 44.8e9, 1e-12);

    const char *pj = "{\"gpu\": \"l40s\", \"tiers\": [{\"kind\": \"scaleup\", \"link\": \"pcie4\","
                     " \"topology\": \"pcie\", \"pcie_p2p\": %s, \"domain_gpus_count\": 8}]}";
    char j1[512], j2[512];
    snprintf(j1, sizeof j1, pj, "true");
    snprintf(j2, sizeof j2, pj, "false");
    mp_cluster a = cluster_json(j1, 8), b = cluster_json(j2, 8);
    mp_coll_cost ca, cb;
    coll_s(&a, MP_COLL_ALL_REDUCE, S, (mp_group){8, 1}, MP_ALGO_RING, &ca);
    coll_s(&b, MP_COLL_ALL_REDUCE, S, (mp_group){8, 1}, MP_ALGO_RING, &cb);
    assert_close(cb.bandwidth_s, 2.0 * ca.bandwidth_s, 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trivial),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_monotone_in_bytes),
        cmocka_unit_test(test_monotone_in_link),
        cmocka_unit_test(test_monotone_in_congestion),
        cmocka_unit_test(test_busbw_bounded),
        cmocka_unit_test(test_ring_golden),
        cmocka_unit_test(test_two_node_golden),
        cmocka_unit_test(test_h200_measured),
        cmocka_unit_test(test_nvls_crossover),
        cmocka_unit_test(test_hierarchical_vs_ring),
        cmocka_unit_test(test_flat_ring),
        cmocka_unit_test(test_congestion_alternative),
        cmocka_unit_test(test_congestion_saved),
        cmocka_unit_test(test_placement),
        cmocka_unit_test(test_scaleup_topologies),
    };
    return cmocka_run_group_tests(tests, catalog_setup, catalog_teardown);
}
