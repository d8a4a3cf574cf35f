/* tests/test_workload.c — the workload description (include/meshplan/workload.h):
 *   - the runs of like stages agree with the stage-by-stage reference (mp_workload_stage) on
 *     every catalog model, for many pp and vpp (a fast path against a trivially correct one);
 *   - every collective is priced through coll: its time is what mp_coll_time(_2d) gives for its
 *     op, bytes and group, and its bytes are the hand-derived sizes;
 *   - the collective cache changes nothing: estimates with and without it are identical, also
 *     after a tier of the cluster is changed in place;
 *   - names and phases: the tables cover their enums; an unknown phase is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"

#include "meshplan/meshplan.h"

static mp_workload g_w;
static mp_estimate g_a, g_b;

static int plan_for(const mp_model *m, int64_t gpus, const char *text, mp_plan *p)
{
    mp_diag d = {0};
    mp_plan_init_default(p);
    return mp_plan_parse(text, p, &d) == MP_OK && mp_plan_resolve(p, m, gpus, &d) == MP_OK;
}

static void test_runs_match_stages(void **state)
{
    (void)state;
    static const int pps[] = {1, 2, 3, 4, 5, 7, 8, 16};
    long checked = 0;
    for (size_t k = 0; k < mp_catalog_model_count(g_cat); k++) {
        const mp_model *m = mp_catalog_model_at(g_cat, k);
        for (size_t a = 0; a < sizeof pps / sizeof pps[0]; a++) {
            for (int v = 1; v <= 3; v++) {
                int pp = pps[a];
                if (pp > m->layers || (v > 1 && pp == 1))
                    continue;
                mp_cluster c;
                mp_plan p;
                char text[128];
                snprintf(text, sizeof text, "tp=1,pp=%d,vpp=%d,ep=1,mb=1,gb=%d,seq=1024%s", pp, v, pp,
                         v > 1 ? ",schedule=interleaved" : "");
                if (mp_cluster_from_catalog(g_cat, "h100-sxm5-80gb", pp, 0, NULL, &c, NULL) != MP_OK ||
                    !plan_for(m, pp, text, &p))
                    continue;
                if (mp_workload_shape(m, &c, &p, MP_WL_TRAIN_STEP, NULL, NULL, &g_w, NULL) != MP_OK)
                    fail_msg("%s %s: not shaped", m->key, text);
                int next = 0;
                double max_total = -1.0, max_p = 0.0, max_x = 0.0;
                for (int r = 0; r < mp_workload_runs(&g_w); r++) {
                    mp_wl_stage s, ref;
                    int first, count;
                    mp_workload_run(&g_w, m, r, &s, &first, &count);
                    if (first != next || count < 1)
                        fail_msg("%s %s: run %d starts at %d (expected %d), %d stages", m->key, text, r,
                                 first, next, count);
                    for (int i = first; i < first + count; i++) {
                        mp_workload_stage(&g_w, m, i, &ref);
                        if (memcmp(&ref, &s, sizeof s) != 0)
                            fail_msg("%s %s: stage %d differs from its run %d", m->key, text, i, r);
                        if (ref.params + ref.expert_params > max_total) {
                            max_total = ref.params + ref.expert_params;
                            max_p = ref.params;
                            max_x = ref.expert_params;
                        }
                    }
                    next = first + count;
                }
                assert_int_equal(next, pp);
                assert_true(g_w.stage_params_max == max_p && g_w.stage_expert_params_max == max_x);
                checked++;
            }
        }
    }
    print_message("runs: %ld model x pp x vpp shapes checked against every stage\n", checked);
    assert_true(checked > 100);
    /* More runs than the workload keeps (MP_WL_MAX_RUNS): every other layer MoE over 64 stages
     * of one layer each. mp_workload_run then gives one stage per run. */
    mp_model alt = *mp_catalog_model(g_cat, "mixtral-8x7b");
    alt.layers = 64;
    alt.moe_layer_freq = 2;
    mp_cluster c;
    mp_plan p;
    assert_int_equal(mp_cluster_from_catalog(g_cat, "h100-sxm5-80gb", 64, 0, NULL, &c, NULL), MP_OK);
    assert_true(plan_for(&alt, 64, "tp=1,pp=64,ep=1,mb=1,gb=64,seq=1024", &p));
    assert_int_equal(mp_workload_shape(&alt, &c, &p, MP_WL_TRAIN_STEP, NULL, NULL, &g_w, NULL), MP_OK);
    assert_int_equal(g_w.nruns, 0);
    assert_int_equal(mp_workload_runs(&g_w), 64);
    for (int r = 0; r < 64; r++) {
        mp_wl_stage s, ref;
        int first, count;
        mp_workload_run(&g_w, &alt, r, &s, &first, &count);
        mp_workload_stage(&g_w, &alt, r, &ref);
        assert_true(first == r && count == 1 && memcmp(&s, &ref, sizeof s) == 0);
        assert_true(s.n[MP_LK_MOE] == (double)(r % 2)); /* layer i is MoE iff (i + 1) % 2 == 0 */
    }
}

static void test_collectives_priced_through_coll(void **state)
{
    (void)state;
    const mp_model *m = mp_catalog_model(g_cat, "llama3-70b");
    mp_cluster c;
    mp_plan p;
    assert_int_equal(mp_cluster_from_catalog(g_cat, "h100-sxm5-80gb", 1024, 0, NULL, &c, NULL), MP_OK);
    assert_true(plan_for(m, 1024, "tp=8,pp=4,cp=2,mb=1,gb=512,seq=8192,zero=1,sp=1", &p));
    assert_int_equal(mp_workload_build(m, &c, &p, MP_WL_TRAIN_STEP, NULL, &g_w, NULL), MP_OK);
    /* TP: T*h 16-bit values, T = mb*seq/cp = 4096 tokens, h = 8192: 64 MiB; with SP an
     * all-gather and a reduce-scatter (Korthikanti et al. 2022). */
    const mp_wl_coll *tp = &g_w.coll[MP_WC_TP_A];
    assert_close(tp->bytes, 4096.0 * 8192.0 * 2.0, 1e-15);
    assert_int_equal(tp->op, MP_COLL_ALL_GATHER);
    assert_int_equal(g_w.coll[MP_WC_TP_B].op, MP_COLL_REDUCE_SCATTER);
    /* CP ring step: T x (k width + v width) / tp x 2 bytes; Llama 3 70B has 8 KV heads of 128:
     * 4096 x 2048 / 8 x 2 = 2 MiB. */
    assert_close(g_w.coll[MP_WC_CP_FWD].bytes, 4096.0 * 2048.0 / 8.0 * 2.0, 1e-15);
    assert_close(g_w.coll[MP_WC_CP_BWD].bytes, 2.0 * g_w.coll[MP_WC_CP_FWD].bytes, 1e-15);
    for (int k = 0; k < MP_WC_COUNT; k++) {
        const mp_wl_coll *x = &g_w.coll[k];
        mp_coll_cost cc;
        if (x->bytes <= 0 || x->in.size * x->out.size <= 1) {
            assert_true(x->time_s == 0.0);
            continue;
        }
        mp_status st = x->two_d ? mp_coll_time_2d(&c, x->op, x->bytes, x->in, x->out, MP_ALGO_MASK_ALL, &cc)
                                : mp_coll_time(&c, x->op, x->bytes, x->in, MP_ALGO_AUTO, &cc);
        assert_int_equal(st, MP_OK);
        if (x->time_s != cc.total_s)
            fail_msg("%s: %.17g s in the workload, %.17g s from coll", mp_wl_coll_name((mp_wl_coll_id)k),
                     x->time_s, cc.total_s);
        assert_int_equal(x->tier, cc.bottleneck_tier);
    }
    /* ZeRO-1 runs the reduce-scatter and the gather, not ZeRO-0's all-reduce or ZeRO-3's. */
    assert_true(g_w.coll[MP_WC_DP_RS].time_s > 0 && g_w.coll[MP_WC_DP_AG].time_s > 0);
    assert_true(g_w.coll[MP_WC_DP_AR].time_s == 0 && g_w.coll[MP_WC_Z3_AG].time_s == 0);
}

static int same_estimate(const mp_estimate *a, const mp_estimate *b)
{
    return a->step_s == b->step_s && memcmp(&a->time, &b->time, sizeof a->time) == 0 &&
           memcmp(&a->parts, &b->parts, sizeof a->parts) == 0 && a->dp_tier == b->dp_tier &&
           a->tp_tier == b->tp_tier && a->memory.total == b->memory.total;
}

static void test_cache_changes_nothing(void **state)
{
    (void)state;
    static const struct { const char *model; int64_t gpus; const char *plan; } cases[] = {
        {"llama3-405b", 16384, "tp=8,pp=16,mb=1,gb=2048,seq=8192,zero=1"},
        {"llama3-405b", 16384, "tp=8,pp=16,mb=2,gb=2048,seq=8192,zero=1,recompute=full"},
        {"llama3-405b", 16384, "tp=8,pp=8,cp=2,mb=1,gb=2048,seq=8192,zero=3"},
        {"deepseek-v3", 2048, "pp=16,ep=64,etp=1,mb=1,gb=15360,seq=4096,precision=fp8,zero=1"},
        {"mixtral-8x7b", 16384, "tp=2,pp=4,ep=8,mb=1,gb=2048,seq=4096,zero=3,hsdp=64"},
    };
    static mp_wl_cache cache;
    mp_wl_cache_init(&cache);
    mp_estimate_opts with, without;
    mp_estimate_opts_init(&with);
    mp_estimate_opts_init(&without);
    with.cache = &cache;
    mp_cluster c;
    for (int round = 0; round < 3; round++) {
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            const mp_model *m = mp_catalog_model(g_cat, cases[k].model);
            mp_plan p;
            assert_int_equal(mp_cluster_from_catalog(g_cat, "h100-sxm5-80gb", cases[k].gpus, 0, NULL, &c, NULL),
                             MP_OK);
            if (round == 2)
                c.tier[c.ntiers - 1].bw_Bps *= 0.25; /* the same address, another fabric */
            assert_true(plan_for(m, cases[k].gpus, cases[k].plan, &p));
            assert_int_equal(mp_estimate_plan(m, &c, &p, &with, &g_a, NULL), MP_OK);
            assert_int_equal(mp_estimate_plan(m, &c, &p, &without, &g_b, NULL), MP_OK);
            if (!same_estimate(&g_a, &g_b))
                fail_msg("%s %s (round %d): %.17g s with the cache, %.17g s without", cases[k].model,
                         cases[k].plan, round, g_a.step_s, g_b.step_s);
            int64_t hits = cache.hits;
            assert_int_equal(mp_estimate_plan(m, &c, &p, &with, &g_a, NULL), MP_OK); /* from the cache */
            assert_true(cache.hits > hits);
            if (!same_estimate(&g_a, &g_b))
                fail_msg("%s %s (round %d): %.17g s with the cache, %.17g s without", cases[k].model,
                         cases[k].plan, round, g_a.step_s, g_b.step_s);
        }
    }
    print_message("cache: %lld hits, %lld misses\n", (long long)cache.hits, (long long)cache.misses);
    assert_true(cache.hits > 0 && cache.misses > 0);
}

static void test_names_and_phases(void **state)
{
    (void)state;
    assert_string_equal(mp_layer_kind_name(MP_LK_DENSE), "dense");
    assert_string_equal(mp_layer_kind_name(MP_LK_MOE), "moe");
    assert_string_equal(mp_layer_kind_name(MP_LK_COUNT), "?");
    for (int k = 0; k < MP_WC_COUNT; k++)
        assert_string_not_equal(mp_wl_coll_name((mp_wl_coll_id)k), "?");
    assert_string_equal(mp_wl_coll_name(MP_WC_COUNT), "?");
    const mp_model *m = mp_catalog_model(g_cat, "llama3-8b");
    mp_cluster c;
    mp_plan p;
    mp_diag d = {0};
    assert_int_equal(mp_cluster_from_catalog(g_cat, "h100-sxm5-80gb", 8, 0, NULL, &c, NULL), MP_OK);
    assert_true(plan_for(m, 8, "tp=8,mb=1,gb=8,seq=4096", &p));
    assert_int_equal(mp_workload_build(m, &c, &p, MP_WL_PHASE_COUNT, NULL, &g_w, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "phase"));
    /* A plan for other GPUs is refused with the count named. */
    mp_diag d2 = {0};
    assert_true(plan_for(m, 16, "tp=8,mb=1,gb=16,seq=4096", &p));
    assert_int_equal(mp_workload_build(m, &c, &p, MP_WL_TRAIN_STEP, NULL, &g_w, &d2), MP_ERR_INPUT);
    assert_non_null(strstr(d2.text, "8 GPUs"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs_match_stages),
        cmocka_unit_test(test_collectives_priced_through_coll),
        cmocka_unit_test(test_cache_changes_nothing),
        cmocka_unit_test(test_names_and_phases),
    };
    return cmocka_run_group_tests(tests, catalog_setup, catalog_teardown);
}
