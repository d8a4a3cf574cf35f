/* tests/test_topo.c — cluster descriptions (src/topo/cluster_json.c, docs/cluster.md), the shipped
 * presets (examples/clusters/), catalog node clusters, and the estimator placing groups by the
 * plan's rank order on them:
 *  - every preset loads and its derived per-GPU bandwidths are the hand-computed ones;
 *  - every kind of mistake in a description is bad input naming the tier and the field;
 *  - --gpus clips the tiers; a node key gives the same cluster as --gpu;
 *  - a TP group that leaves the NVLink domain (order=dp-tp-...) is costed on the fabric, and the
 *    congested spine shows in the DP time. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"

#include "meshplan/meshplan.h"

static mp_status load(const char *json, int64_t n, mp_cluster *c, mp_diag *d)
{
    mp_diag_clear(d);
    return mp_cluster_from_json(g_cat, json, strlen(json), "t.json", n, c, d);
}

static mp_cluster preset(const char *name, int64_t n)
{
    size_t len = 0;
    const char *j = mp_cluster_preset_json(name, &len);
    if (!j)
        fail_msg("no preset %s", name);
    mp_cluster c;
    mp_diag d = {0};
    if (mp_cluster_from_json(g_cat, j, len, name, n, &c, &d) != MP_OK)
        fail_msg("preset %s: %s", name, d.text);
    return c;
}

static void test_presets(void **state)
{
    (void)state;
    size_t n = mp_cluster_preset_count();
    assert_true(n >= 8);
    for (size_t i = 0; i < n; i++) {
        const char *name = mp_cluster_preset_name(i);
        assert_non_null(name);
        size_t jl = 0;
        const char *jt = mp_cluster_preset_json(name, &jl);
        if (mp_islands_json_is_islands(jt, jl))
            continue; /* islands descriptions: tests/test_islands.c */
        mp_cluster c = preset(name, 0);
        mp_diag d = {0};
        assert_int_equal(mp_cluster_check(&c, &d), MP_OK);
        print_message("%-28s %5lld GPUs, %d tiers: %s\n", name, (long long)c.num_gpus, c.ntiers, c.name);
    }
    assert_null(mp_cluster_preset_name(n));
    assert_null(mp_cluster_preset_json("no-such-cluster", NULL));

    /* The 2:1 fat tree: 8 NVLink, 256-GPU leaves of 1 NDR port per GPU (50 GB/s), spine at the
     * same line rate with oversubscription 2. */
    mp_cluster f = preset("dgx-h100-ndr-fat-tree-2to1", 0);
    assert_int_equal(f.num_gpus, 1024);
    assert_int_equal(f.ntiers, 3);
    assert_int_equal(f.gpus_per_node, 8);
    assert_int_equal(f.tier[1].domain_gpus, 256);
    assert_int_equal(f.tier[2].domain_gpus, 1024);
    assert_true(f.tier[1].bw_Bps == 50e9 && f.tier[2].bw_Bps == 50e9);
    assert_true(f.tier[2].oversubscription == 2.0);
    assert_true(f.tier[1].rail_optimized && !f.tier[2].rail_optimized);
    assert_string_equal(f.tier[2].link, "ib-ndr-400");
    assert_true(f.node_power_overhead_W == 4600);
    /* Two islands: WAN share 4 links x 12.5 GB/s / 512 GPUs. */
    mp_cluster w = preset("two-islands-wan100", 0);
    assert_true(w.tier[2].kind == MP_LINK_WAN);
    assert_close(w.tier[2].bw_Bps, 4.0 * 12.5e9 / 512.0, 1e-12);
    assert_true(w.tier[2].latency_s == 0.03);
    /* RTX 4090: one 25G port per 8-GPU server: 3.125e9 / 8 per GPU; no P2P. */
    mp_cluster r = preset("rtx4090-pcie-nop2p-eth25", 0);
    assert_close(r.tier[1].bw_Bps, 3.125e9 / 8.0, 1e-12);
    assert_true(r.tier[0].pcie_no_p2p && r.tier[0].topology == MP_SU_PCIE);
    /* NVL72: a 72-GPU scale-up domain. */
    mp_cluster g = preset("gb200-nvl72-ndr", 0);
    assert_int_equal(g.gpus_per_node, 72);
    /* --gpus clips: 64 GPUs of the fat tree: every tier's domain <= 64. */
    mp_cluster s = preset("dgx-h100-ndr-fat-tree-2to1", 64);
    assert_int_equal(s.num_gpus, 64);
    assert_int_equal(s.tier[1].domain_gpus, 64);
    assert_int_equal(s.tier[2].domain_gpus, 64);
}

static void test_node_cluster(void **state)
{
    (void)state;
    mp_cluster a, b;
    mp_diag d = {0};
    assert_int_equal(mp_cluster_from_node(g_cat, "dgx-h100", 64, &a, &d), MP_OK);
    assert_int_equal(mp_cluster_from_catalog(g_cat, "h100-sxm5-80gb", 64, 0, NULL, &b, &d), MP_OK);
    assert_int_equal(a.ntiers, b.ntiers);
    for (int t = 0; t < a.ntiers; t++) {
        assert_true(a.tier[t].bw_Bps == b.tier[t].bw_Bps);
        assert_int_equal(a.tier[t].domain_gpus, b.tier[t].domain_gpus);
        assert_string_equal(a.tier[t].link, b.tier[t].link);
    }
    assert_int_equal(mp_cluster_from_node(g_cat, "no-such-node", 64, &a, &d), MP_ERR_NOT_FOUND);
    assert_int_equal(mp_cluster_from_node(g_cat, "dgx-h100", 12, &a, &d), MP_ERR_INPUT);
    /* 2 NICs for 8 GPUs (h100-pcie-8): a quarter port per GPU. */
    assert_int_equal(mp_cluster_from_node(g_cat, "h100-pcie-8", 16, &a, &d), MP_OK);
    assert_close(a.tier[1].bw_Bps, 2.0 * 12.5e9 / 8.0, 1e-12);
    assert_close(a.tier[1].nics_per_gpu, 0.25, 1e-12);
}

/* Every mistake names the tier and field. */
static void test_bad_descriptions(void **state)
{
    (void)state;
    static const struct { const char *json; mp_status st; const char *words[3]; } bad[] = {
        {"{\"gpu\": \"h100-sxm5-80gb\", \"tiers\": [", MP_ERR_PARSE, {"line", NULL}},
        {"[1]", MP_ERR_INPUT, {"object", NULL}},
        {"{\"gpu\": \"h100-sxm5-80gb\"}", MP_ERR_INPUT, {"tiers", NULL}},
        {"{\"gpu\": \"h100-sxm5-80gb\", \"tiers\": []}", MP_ERR_INPUT, {"tiers", NULL}},
        {"{\"gpu\": \"nope\", \"tiers\": [{\"kind\": \"scaleup\", \"link\": \"nvlink4\", \"domain_gpus_count\": 8}]}",
         MP_ERR_NOT_FOUND, {"cluster.gpu", "nope", NULL}},
        {"{\"gpu\": \"h100-sxm5-80gb\", \"tiers\": [{\"kind\": \"scaleup\", \"link\": \"nvlink9\", \"domain_gpus_count\": 8}]}",
         MP_ERR_NOT_FOUND, {"tiers[0]", "nvlink9", NULL}},
        {"{\"gpu\": \"h100-sxm5-80gb\", \"tiers\": [{\"kind\": \"scaleout\", \"link\": \"ib-ndr-400\", \"domain_gpus_count\": 8}]}",
         MP_ERR_INPUT, {"tiers[0]", "kind", NULL}},
        {"{\"gpu\": \"h100-sxm5-80gb\", \"tiers\": [{\"kind\": \"scaleup\", \"link\": \"nvlink4\"}]}",
         MP_ERR_INPUT, {"domain_gpus_count", NULL}},
        {"{\"gpu\": \"h100-sxm5-80gb\", \"tiers\": [{\"kind\": \"scaleup\", \"link\": \"ib-ndr-400\", \"domain_gpus_count\": 8}]}",
         MP_ERR_INPUT, {"tiers[0]", "link", NULL}},
        {"{\"gpu\": \"h100-sxm5-80gb\", \"colour\": 1, \"tiers\": [{\"kind\": \"scaleup\", \"link\": \"nvlink4\", \"domain_gpus_count\": 8}]}",
         MP_ERR_INPUT, {"colour", NULL}},
        {"{\"gpu\": \"h100-sxm5-80gb\", \"tiers\": [{\"kind\": \"scaleup\", \"link\": \"nvlink4\", \"domain_gpus_count\": 8, \"speed\": 3}]}",
         MP_ERR_INPUT, {"tiers[0]", "speed", NULL}},
        {"{\"gpu\": \"h100-sxm5-80gb\", \"tiers\": [{\"kind\": \"scaleup\", \"link\": \"nvlink4\", \"domain_gpus_count\": 8},"
         "{\"name\": \"leaf\", \"kind\": \"scaleout\", \"link\": \"ib-ndr-400\", \"oversubscription\": 0.5}]}",
         MP_ERR_INPUT, {"tiers[1] (leaf)", "oversubscription", NULL}},
        {"{\"gpu\": \"h100-sxm5-80gb\", \"tiers\": [{\"kind\": \"scaleup\", \"link\": \"nvlink4\", \"domain_gpus_count\": 8},"
         "{\"kind\": \"scaleout\", \"link\": \"ib-ndr-400\", \"background_load_frac\": 1.0}]}",
         MP_ERR_INPUT, {"background_load_frac", NULL}},
        {"{\"gpu\": \"h100-sxm5-80gb\", \"tiers\": [{\"kind\": \"scaleup\", \"link\": \"nvlink4\", \"domain_gpus_count\": 8},"
         "{\"kind\": \"scaleout\", \"link\": \"ib-ndr-400\", \"domain_gpus_count\": 32}]}",
         MP_ERR_INPUT, {"outermost", NULL}},
        {"{\"gpu\": \"h100-sxm5-80gb\", \"tiers\": [{\"kind\": \"scaleup\", \"link\": \"nvlink4\", \"domain_gpus_count\": 8},"
         "{\"kind\": \"scaleout\", \"link\": \"ib-ndr-400\", \"domain_gpus_count\": 12}, {\"kind\": \"scaleout\"}]}",
         MP_ERR_INPUT, {"multiple", NULL}},
        {"{\"gpu\": \"h100-sxm5-80gb\", \"tiers\": [{\"kind\": \"scaleup\", \"link\": \"nvlink4\", \"domain_gpus_count\": 8},"
         "{\"kind\": \"scaleout\", \"link\": \"ib-ndr-400\", \"nics_per_gpu_count\": 1, \"nics_per_node_count\": 8}]}",
         MP_ERR_INPUT, {"nics_per_node_count", NULL}},
        {"{\"gpu\": \"h100-sxm5-80gb\", \"tiers\": [{\"kind\": \"scaleup\", \"link\": \"nvlink4\", \"pcie_p2p\": false, \"domain_gpus_count\": 8}]}",
         MP_ERR_INPUT, {"pcie_p2p", NULL}},
        {"{\"gpu\": \"h100-sxm5-80gb\", \"tiers\": [{\"kind\": \"scaleup\", \"topology\": \"ring\", \"link\": \"nvlink4\", \"domain_gpus_count\": 8}]}",
         MP_ERR_INPUT, {"topology", NULL}},
        {"{\"gpu\": \"h100-sxm5-80gb\", \"tiers\": [{\"kind\": \"scaleup\", \"domain_gpus_count\": 8}]}",
         MP_ERR_INPUT, {"link", "latency_s", NULL}},
        {"{\"gpu\": \"h100-sxm5-80gb\", \"tiers\": [{\"kind\": \"scaleup\", \"link\": \"nvlink4\", \"domain_gpus_count\": 8},"
         "{\"kind\": \"wan\", \"link_bw_Bps\": -1, \"latency_s\": 0.01, \"efficiency_frac\": 1}]}",
         MP_ERR_INPUT, {"link_bw_Bps", NULL}},
        {"{\"gpu\": \"h100-sxm5-80gb\", \"tiers\": [{\"kind\": \"scaleup\", \"link\": \"nvlink4\", \"domain_gpus_count\": 8},"
         "{\"kind\": \"scaleout\", \"link\": \"ib-ndr-400\", \"links_count\": 2}]}",
         MP_ERR_INPUT, {"links_count", NULL}},
        {"{\"gpu\": \"h100-sxm5-80gb\", \"tiers\": [{\"kind\": \"scaleup\", \"link\": \"nvlink4\", \"domain_gpus_count\": 8},"
         "{\"kind\": \"scaleup\", \"link\": \"nvlink4\"}]}",
         MP_ERR_INPUT, {"tiers[1]", "kind", NULL}},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mp_cluster c;
        mp_diag d = {0};
        mp_status st = load(bad[i].json, 64, &c, &d);
        if (st != bad[i].st)
            fail_msg("case %zu: status %d, expected %d: %s\n%s", i, (int)st, (int)bad[i].st, d.text,
                     bad[i].json);
        for (int k = 0; k < 3 && bad[i].words[k]; k++)
            if (!strstr(d.text, bad[i].words[k]))
                fail_msg("case %zu: message does not name \"%s\":\n%s", i, bad[i].words[k], d.text);
    }
    /* No GPU count anywhere. */
    mp_cluster c;
    mp_diag d = {0};
    const char *nocount = "{\"gpu\": \"h100-sxm5-80gb\", \"tiers\": [{\"kind\": \"scaleup\", \"link\": "
                          "\"nvlink4\", \"domain_gpus_count\": 8}]}";
    assert_int_equal(load(nocount, 0, &c, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "--gpus"));
    /* Not a multiple of the node; more GPUs than the one scale-up domain holds. */
    assert_int_equal(load(nocount, 12, &c, &d), MP_ERR_INPUT);
    assert_int_equal(load(nocount, 16, &c, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "outermost"));
    assert_int_equal(load(nocount, 8, &c, &d), MP_OK);
}

static mp_estimate *predict(const mp_cluster *c, const char *plan)
{
    static mp_estimate e;
    const mp_model *m = mp_catalog_model(g_cat, "llama3-70b");
    assert_non_null(m);
    mp_plan p;
    mp_plan_init_default(&p);
    mp_diag d = {0};
    if (mp_plan_parse(plan, &p, &d) != MP_OK || mp_plan_resolve(&p, m, c->num_gpus, &d) != MP_OK)
        fail_msg("plan %s: %s", plan, d.text);
    if (mp_estimate_plan(m, c, &p, NULL, &e, &d) != MP_OK)
        fail_msg("estimate %s: %s", plan, d.text);
    return &e;
}

/* The rank order places the groups: llama3-70b on 64 H100 with tp=8, pp=2, dp=4. Default order:
 * TP inside the node (tier 0). order=dp-tp-pp: DP stride 1 (inside the node), TP stride 4, two
 * nodes: TP collectives cross the NICs and cost more. */
static void test_order_in_estimate(void **state)
{
    (void)state;
    mp_cluster c;
    mp_diag d = {0};
    assert_int_equal(mp_cluster_from_node(g_cat, "dgx-h100", 64, &c, &d), MP_OK);
    const char *base = "tp=8,pp=2,mb=1,gb=64,seq=4096,zero=1,recompute=selective";
    char alt[256];
    snprintf(alt, sizeof alt, "%s,order=dp-tp-pp", base);
    mp_estimate a = *predict(&c, base), b = *predict(&c, alt);
    print_message("tp_comm: default order %.3f s (tier %d), order=dp-tp-pp %.3f s (tier %d); "
                  "dp exposed %.3f s (tier %d) vs %.3f s (tier %d)\n", a.time.tp_comm, a.tp_tier,
                  b.time.tp_comm, b.tp_tier, a.time.dp_comm_exposed, a.dp_tier,
                  b.time.dp_comm_exposed, b.dp_tier);
    assert_int_equal(a.tp_tier, 0);
    assert_int_equal(b.tp_tier, 1);
    assert_true(b.time.tp_comm > 2.0 * a.time.tp_comm);
    assert_int_equal(a.dp_tier, 1);
    assert_int_equal(b.dp_tier, 0);
    assert_true(b.step_s > a.step_s);
    /* On the 2:1 fat tree (512 GPUs: two 256-GPU leaves), pp = 2 puts the two stages in
     * different leaves (PP stride tp*cp*dp = 256): each send/recv crosses the spine, one GPU's
     * share of it is 50 GB/s / 2, and the pipeline traffic takes longer than on the same nodes
     * with a non-blocking spine. DP groups (32 ranks, 32 per leaf) do not notice the spine. */
    mp_cluster f;
    {
        size_t len;
        const char *j = mp_cluster_preset_json("dgx-h100-ndr-fat-tree-2to1", &len);
        assert_int_equal(mp_cluster_from_json(g_cat, j, len, "fat", 512, &f, &d), MP_OK);
    }
    mp_cluster flat = f;
    flat.tier[2].oversubscription = 1.0;
    const char *ppplan = "tp=8,pp=2,mb=1,gb=256,seq=4096,zero=1,recompute=selective";
    mp_estimate e1 = *predict(&f, ppplan), e2 = *predict(&flat, ppplan);
    print_message("PP across a 2:1 spine: pp_comm %.4f s (tier %d) vs %.4f s non-blocking; DP "
                  "total %.3f vs %.3f s\n", e1.time.pp_comm, e1.pp_tier, e2.time.pp_comm,
                  e1.time.dp_comm_total, e2.time.dp_comm_total);
    assert_int_equal(e1.pp_tier, 2);
    assert_true(e1.time.pp_comm > 1.2 * e2.time.pp_comm);
    assert_close(e1.time.dp_comm_total, e2.time.dp_comm_total, 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_presets),
        cmocka_unit_test(test_node_cluster),
        cmocka_unit_test(test_bad_descriptions),
        cmocka_unit_test(test_order_in_estimate),
    };
    return cmocka_run_group_tests(tests, catalog_setup, catalog_teardown);
}
