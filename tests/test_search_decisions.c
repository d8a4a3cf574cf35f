/* tests/test_search_decisions.c — the search's choice flips exactly where it should, in the
 * style of SQLite's query-planner cost tests (test/cost.test): move one input across the
 * threshold where the chosen plan changes, find the threshold by bisection, check it against
 * where it must be, and check both sides.
 *   - GPU memory capacity: the fastest plan W is chosen exactly when capacity >= W's memory need,
 *     to the byte; one representable value below, the search takes the best plan needing less.
 *   - Scale-out link bandwidth: the choice flips exactly where the predicted scores of the two
 *     plans it flips between cross (found independently, from those two plans alone). */
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

static int same_plan(const mp_plan *p, const mp_plan *q)
{
    return p->tp == q->tp && p->pp == q->pp && p->vpp == q->vpp && p->dp == q->dp &&
           p->cp == q->cp && p->ep == q->ep && p->sp == q->sp && p->mb == q->mb &&
           p->zero == q->zero && p->hsdp == q->hsdp && p->recompute == q->recompute &&
           p->schedule == q->schedule;
}

/* The winner of the search on c (fails the test when nothing fits). */
static mp_search_entry winner(const mp_model *m, const mp_cluster *c, const mp_search_opts *o)
{
    mp_search_result r;
    mp_diag d = {0};
    if (mp_search(m, c, 1, o, &r, &d) != MP_OK)
        fail_msg("search failed: %s", d.text);
    if (!r.ntop)
        fail_msg("no plan fits");
    mp_search_entry w = r.top[0];
    mp_search_result_free(&r);
    return w;
}

static void test_memory_capacity_threshold(void **state)
{
    (void)state;
    const mp_model *m = mp_catalog_model(g_cat, "llama2-7b");
    mp_cluster c;
    assert_int_equal(mp_cluster_from_catalog(g_cat, "h100-sxm5-80gb", 8, 0, NULL, &c, NULL), MP_OK);
    mp_search_opts o;
    mp_search_opts_init(&o);
    o.pin.gb = 16;
    o.pin.seq = 4096;
    /* Recompute pinned to none (the winner's) only to keep ~40 searches fast under sanitizers. */
    o.pin.recompute = MP_RC_NONE;

    /* Unlimited memory: the fastest plan W and the ranking behind it. Capacity changes which
     * plans fit, not their step times, and headroom (capacity - need) orders plans the same at
     * any capacity, so at any capacity the winner is the first plan of this ranking that fits. */
    c.gpu.memory_bytes = 1e13;
    o.top_n = 1000;
    mp_search_result all;
    assert_int_equal(mp_search(m, &c, 1, &o, &all, NULL), MP_OK);
    o.top_n = 1;
    const mp_search_entry W = all.top[0];
    const double need = W.memory_bytes;
    /* The plan expected just below: the first of the ranking that needs less than W. */
    const mp_search_entry *next = NULL;
    for (int i = 1; i < all.ntop && !next; i++)
        if (all.top[i].memory_bytes < need)
            next = &all.top[i];
    assert_non_null(next);

    /* Bisection on the capacity: lo = half the need (W cannot fit), hi = twice (it does). */
    double lo = need / 2, hi = need * 2;
    c.gpu.memory_bytes = lo;
    mp_search_entry w = winner(m, &c, &o);
    assert_false(same_plan(&w.plan, &W.plan));
    c.gpu.memory_bytes = hi;
    w = winner(m, &c, &o);
    assert_true(same_plan(&w.plan, &W.plan));
    int iters = 0;
    while (hi - lo > 1.0) {
        double mid = 0.5 * (lo + hi);
        c.gpu.memory_bytes = mid;
        w = winner(m, &c, &o);
        if (same_plan(&w.plan, &W.plan))
            hi = mid;
        else
            lo = mid;
        iters++;
    }
    printf("# capacity threshold %.0f B found in %d searches; W needs %.3f B\n", hi, iters, need);
    /* The flip is at W's memory need, to the byte. */
    assert_true(lo < need && need <= hi);
    /* Both sides, exactly: at the need W is chosen; one representable value below, the next
     * plan of the ranking that needs less. */
    c.gpu.memory_bytes = need;
    w = winner(m, &c, &o);
    assert_true(same_plan(&w.plan, &W.plan));
    c.gpu.memory_bytes = nextafter(need, 0.0);
    w = winner(m, &c, &o);
    assert_false(same_plan(&w.plan, &W.plan));
    assert_true(same_plan(&w.plan, &next->plan));
    assert_true(w.memory_bytes < need);
    mp_search_result_free(&all);
}

/* Score of a plan at a scale-out bandwidth (both plans are on the same cluster shape). */
static double score_at(const mp_model *m, mp_cluster c, double bw, const mp_search_opts *o,
                       const mp_plan *p)
{
    c.tier[1].bw_Bps = bw;
    mp_search_entry e;
    mp_diag d = {0};
    if (mp_search_evaluate(m, &c, 0, o, p, &e, &d) != MP_OK)
        fail_msg("evaluate: %s", d.text);
    return e.score;
}

static void test_link_bandwidth_threshold(void **state)
{
    (void)state;
    /* Llama 2 7B on two DGX H100 nodes, gb 32: on the 400 Gb/s fabric the search spreads data
     * parallelism across the nodes; on a slow one it keeps DP traffic inside a node. */
    const mp_model *m = mp_catalog_model(g_cat, "llama2-7b");
    mp_cluster c;
    assert_int_equal(mp_cluster_from_catalog(g_cat, "h100-sxm5-80gb", 16, 0, NULL, &c, NULL), MP_OK);
    mp_search_opts o;
    mp_search_opts_init(&o);
    o.pin.gb = 32;
    o.pin.seq = 4096;
    o.pin.recompute = MP_RC_NONE; /* both winners' (as above: speed) */
    /* cp 1: with cp 2 and all-gather attention the estimator gives exactly the step time of
     * dp 16 over a band of bandwidths (a tie, decided by headroom), which would make the flip
     * one between three plans. */
    o.pin.cp = 1;
    o.top_n = 1;
    const double bw0 = c.tier[1].bw_Bps; /* 50 GB/s per GPU (8 x 400 Gb/s for 8 GPUs) */
    double hi = bw0, lo = bw0 / 1000;
    c.tier[1].bw_Bps = hi;
    const mp_search_entry Whi = winner(m, &c, &o);
    c.tier[1].bw_Bps = lo;
    mp_search_entry w = winner(m, &c, &o);
    assert_false(same_plan(&w.plan, &Whi.plan));
    /* Bisection (geometric) on "the winner is still Whi", to a relative 1e-7. */
    int iters = 0;
    while (hi / lo - 1.0 > 1e-7) {
        double mid = sqrt(lo * hi);
        c.tier[1].bw_Bps = mid;
        w = winner(m, &c, &o);
        if (same_plan(&w.plan, &Whi.plan))
            hi = mid;
        else
            lo = mid;
        iters++;
    }
    c.tier[1].bw_Bps = lo;
    const mp_search_entry Wlo = winner(m, &c, &o);
    const double flip = sqrt(lo * hi);
    char a[512], b[512];
    mp_plan_format(&Whi.plan, a, sizeof a);
    mp_plan_format(&Wlo.plan, b, sizeof b);
    printf("# flip at %.6g B/s per GPU (%d searches): above %s, below %s\n", flip, iters, a, b);

    /* Where it must be: the crossing of the two plans' scores, from those two plans alone,
     * bisected over the whole bracket [bw0/1000, bw0]. */
    double plo = bw0 / 1000, phi = bw0;
    assert_true(score_at(m, c, phi, &o, &Whi.plan) < score_at(m, c, phi, &o, &Wlo.plan));
    assert_true(score_at(m, c, plo, &o, &Wlo.plan) < score_at(m, c, plo, &o, &Whi.plan));
    while (phi / plo - 1.0 > 1e-9) {
        double mid = sqrt(plo * phi);
        if (score_at(m, c, mid, &o, &Whi.plan) < score_at(m, c, mid, &o, &Wlo.plan))
            phi = mid;
        else
            plo = mid;
    }
    const double cross = sqrt(plo * phi);
    printf("# the two plans' scores cross at %.9g B/s\n", cross);
    assert_close(flip, cross, 2e-7);
    /* Both sides of the crossing, a hair away. */
    c.tier[1].bw_Bps = cross * (1 + 1e-6);
    w = winner(m, &c, &o);
    assert_true(same_plan(&w.plan, &Whi.plan));
    c.tier[1].bw_Bps = cross * (1 - 1e-6);
    w = winner(m, &c, &o);
    assert_true(same_plan(&w.plan, &Wlo.plan));
    /* And the reason is the link: the plan chosen above sends more over the scale-out tier
     * (its exposed DP/ZeRO or pipeline time grows faster as the bandwidth drops). */
    double dhi = score_at(m, c, cross / 2, &o, &Whi.plan) - score_at(m, c, cross, &o, &Whi.plan);
    double dlo = score_at(m, c, cross / 2, &o, &Wlo.plan) - score_at(m, c, cross, &o, &Wlo.plan);
    assert_true(dhi > dlo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory_capacity_threshold),
        cmocka_unit_test(test_link_bandwidth_threshold),
    };
    return cmocka_run_group_tests(tests, catalog_setup, catalog_teardown);
}
