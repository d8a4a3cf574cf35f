/* tests/test_infer_search.c — the serving planner (include/meshplan/infer_search.h):
 *   - 4 GPU types for Llama 3 70B on 8 GPUs in under 1 s of CPU time (clock(), not wall time:
 *     the test machines are shared), each with a pick and its explanation;
 *   - decisions at thresholds: a TPOT p99 SLO just above the unconstrained pick's keeps it, one
 *     just below it moves the pick to a plan within the new SLO; a TTFT p99 SLO the same;
 *   - the closed-form percentiles: ttft_p99 = ceil(0.99 B)/B x TTFT, tpot_p99 >= TPOT;
 *   - objectives: the throughput pick serves at least as many tokens/s as the cost pick, the
 *     energy pick spends no more J per token than the cost pick;
 *   - bad options are refused with the field named; a GPU without a price too.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "test_util.h"

#include "meshplan/meshplan.h"

static void cluster(const char *gpu, int n, mp_cluster *c)
{
    mp_diag d = {0};
    if (mp_cluster_from_catalog(g_cat, gpu, n, 0, NULL, c, &d) != MP_OK)
        fail_msg("cluster %s x %d: %s", gpu, n, d.text);
}

static void run(const mp_model *m, const mp_cluster *c, const mp_infer_search_opts *o, mp_infer_search_result *r)
{
    mp_diag d = {0};
    if (mp_infer_search(m, c, o, r, &d) != MP_OK)
        fail_msg("search on %s: %s", c->gpu.key, d.text);
}

static void test_four_gpu_types_under_a_second(void **state)
{
    (void)state;
    static const char *const gpus[] = {"h100-sxm5-80gb", "h200-sxm-141gb", "b200", "mi300x"};
    const mp_model *m = mp_catalog_model(g_cat, "llama3-70b");
    assert_non_null(m);
    mp_infer_search_opts o;
    mp_infer_search_opts_init(&o);
    o.in = 1024, o.out = 512, o.ttft_p99_s = 2.0, o.tpot_p99_s = 0.050;
    mp_infer_search_result *r = calloc(4, sizeof *r);
    assert_non_null(r);
    clock_t t0 = clock();
    for (int i = 0; i < 4; i++) {
        mp_cluster c;
        cluster(gpus[i], 8, &c);
        run(m, &c, &o, &r[i]);
    }
    double cpu_s = (double)(clock() - t0) / CLOCKS_PER_SEC;
    printf("infer-search, Llama 3 70B, 4 GPU types x 8: %.3f s CPU\n", cpu_s);
    assert_true(cpu_s < 1.0);
    for (int i = 0; i < 4; i++) {
        assert_true(r[i].found);
        const mp_infer_candidate *b = &r[i].best;
        assert_true(b->ttft_p99_s <= o.ttft_p99_s && b->tpot_p99_s <= o.tpot_p99_s);
        assert_true(b->r.feasible);
        assert_int_equal((int64_t)b->r.plan.tp * b->r.plan.pp * b->r.plan.dp, 8);
        assert_true(b->usd_per_mtoken > 0 && isfinite(b->usd_per_mtoken) && b->j_per_mtoken > 0);
        /* $ per million tokens = GPUs x price / 3600 / tokens/s x 1e6 */
        assert_close(b->usd_per_mtoken, 8 * r[i].price_gpu_hour_usd / 3600.0 / b->r.output_tokens_per_s * 1e6, 1e-12);
        const double B = (double)b->r.plan.batch;
        assert_close(b->ttft_p99_s, ceil(0.99 * B) / B * b->r.ttft_s, 1e-12);
        assert_true(b->tpot_p99_s >= b->r.tpot_s);
        assert_non_null(strstr(r[i].why, "best cost"));
        assert_non_null(strstr(r[i].why, "batch"));
        assert_true(r[i].feasible <= r[i].evaluated && r[i].feasible > 0);
    }
    free(r);
}

/* The pick flips exactly at its own percentile: an SLO at 1.001 x keeps it, at 0.999 x moves it. */
static void test_slo_threshold_flips_the_pick(void **state)
{
    (void)state;
    const mp_model *m = mp_catalog_model(g_cat, "llama3-70b");
    mp_cluster c;
    cluster("h100-sxm5-80gb", 8, &c);
    mp_infer_search_opts o;
    mp_infer_search_opts_init(&o);
    o.objective = MP_ISO_THROUGHPUT;
    mp_infer_search_result *r = calloc(3, sizeof *r);
    assert_non_null(r);
    run(m, &c, &o, &r[0]);
    assert_true(r[0].found);
    for (int which = 0; which < 2; which++) {
        double v = which ? r[0].best.ttft_p99_s : r[0].best.tpot_p99_s;
        mp_infer_search_opts above = o, below = o;
        if (which)
            above.ttft_p99_s = 1.001 * v, below.ttft_p99_s = 0.999 * v;
        else
            above.tpot_p99_s = 1.001 * v, below.tpot_p99_s = 0.999 * v;
        run(m, &c, &above, &r[1]);
        run(m, &c, &below, &r[2]);
        assert_true(r[1].found);
        assert_string_equal(mp_infer_objective_name(MP_ISO_THROUGHPUT), "throughput");
        assert_int_equal(r[1].best.r.plan.batch, r[0].best.r.plan.batch);
        assert_int_equal(r[1].best.r.plan.tp, r[0].best.r.plan.tp);
        assert_close(r[1].best.r.output_tokens_per_s, r[0].best.r.output_tokens_per_s, 1e-12);
        assert_true(r[2].found); /* a smaller batch or another split meets the tighter SLO */
        {
            double got = which ? r[2].best.ttft_p99_s : r[2].best.tpot_p99_s;
            assert_true(got <= 0.999 * v);
            assert_true(r[2].best.r.output_tokens_per_s <= r[0].best.r.output_tokens_per_s);
        }
    }
    free(r);
}

static void test_objectives_agree_with_their_measure(void **state)
{
    (void)state;
    const mp_model *m = mp_catalog_model(g_cat, "mixtral-8x7b");
    mp_cluster c;
    cluster("h100-sxm5-80gb", 8, &c);
    mp_infer_search_opts o;
    mp_infer_search_opts_init(&o);
    o.tpot_p99_s = 0.1;
    mp_infer_search_result *r = calloc(3, sizeof *r);
    assert_non_null(r);
    for (int k = 0; k < 3; k++) {
        o.objective = k;
        run(m, &c, &o, &r[k]);
        assert_true(r[k].found);
    }
    assert_true(r[MP_ISO_THROUGHPUT].best.r.output_tokens_per_s >= r[MP_ISO_COST].best.r.output_tokens_per_s * (1 - 1e-12));
    assert_true(r[MP_ISO_ENERGY].best.j_per_mtoken <= r[MP_ISO_COST].best.j_per_mtoken * (1 + 1e-12));
    assert_true(r[MP_ISO_COST].best.usd_per_mtoken <= r[MP_ISO_THROUGHPUT].best.usd_per_mtoken * (1 + 1e-12));
    /* MoE: expert parallelism is among the candidates */
    free(r);
}

static void test_bad_options_refused(void **state)
{
    (void)state;
    const mp_model *m = mp_catalog_model(g_cat, "llama3-8b");
    mp_cluster c;
    cluster("h100-sxm5-80gb", 1, &c);
    mp_infer_search_opts o;
    mp_infer_search_result *r = malloc(sizeof *r);
    assert_non_null(r);
    mp_diag d = {0};
    mp_infer_search_opts_init(&o);
    o.in = 0;
    o.tpot_p99_s = -1;
    assert_int_equal(mp_infer_search(m, &c, &o, r, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "in = 0"));
    assert_non_null(strstr(d.text, "tpot_p99"));
    /* an SLO no plan meets is an answer: found 0 with the reason */
    mp_infer_search_opts_init(&o);
    o.tpot_p99_s = 1e-6;
    memset(&d, 0, sizeof d);
    assert_int_equal(mp_infer_search(m, &c, &o, r, &d), MP_OK);
    assert_false(r->found);
    assert_non_null(strstr(r->why, "no plan"));
    /* a GPU the price table does not list needs a price */
    mp_cluster u = c;
    snprintf(u.gpu.key, sizeof u.gpu.key, "%s", "unpriced-gpu");
    mp_infer_search_opts_init(&o);
    memset(&d, 0, sizeof d);
    assert_int_equal(mp_infer_search(m, &u, &o, r, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "price"));
    o.price_gpu_hour_usd = 1.0;
    assert_int_equal(mp_infer_search(m, &u, &o, r, &d), MP_OK);
    assert_true(r->found);
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_four_gpu_types_under_a_second),
        cmocka_unit_test(test_slo_threshold_flips_the_pick),
        cmocka_unit_test(test_objectives_agree_with_their_measure),
        cmocka_unit_test(test_bad_options_refused),
    };
    return cmocka_run_group_tests(tests, catalog_setup, catalog_teardown);
}
