/* tests/test_search_bound.c — the search's per-subtree step-time bound (src/search/bound.c).
 *
 * Two kinds of test (STYLE.md):
 *   - property: the bound is below the estimator's step on every plan of several spaces (dense,
 *     GQA, MoE with MLA and MTP, long-context CP, fp8, ZeRO-3/HSDP, pinned ZB and GPipe); so is
 *     the line bound with its compute (beyond the GEMMs) and communication terms, for every
 *     micro-batch range a search tail can ask about, and the terms are non-decreasing in mb
 *     with term / mb non-increasing (what the line bound rests on);
 *   - differential: a search with pruning on (the bound skipping plans) and off (every plan
 *     timed) gives the same top list, frontiers, rank, ties, explanation and feasible /
 *     over-memory counts, on spaces where the bound does skip plans, with 1 and 2 threads.
 */
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
#include "search/bound.h"

static const mp_model *model(const char *key)
{
    const mp_model *m = mp_catalog_model(g_cat, key);
    assert_non_null(m);
    return m;
}

static mp_cluster cluster(const char *gpu, int64_t n)
{
    mp_cluster c;
    mp_diag d = {0};
    if (mp_cluster_from_catalog(g_cat, gpu, n, 0, NULL, &c, &d) != MP_OK)
        fail_msg("cluster %s x %lld: %s", gpu, (long long)n, d.text);
    return c;
}

typedef struct {
    const char *model; /* NULL: the small DeepSeek-V3 below */
    const char *gpu;
    int64_t gpus, gb, seq;
    const char *fix;   /* pinned plan keys */
} job;

static const job jobs[] = {
    {"llama2-7b", "h100-sxm5-80gb", 8, 16, 4096, ""},
    {"llama3-8b", "a100-sxm4-80gb", 16, 64, 8192, "precision=bf16"},
    {"llama3-8b", "h100-sxm5-80gb", 16, 32, 8192, "precision=fp8"},
    {"llama3-70b", "h100-sxm5-80gb", 64, 64, 4096, "zero=3"},
    {"llama3-8b", "h100-sxm5-80gb", 32, 8, 65536, "recompute=full"},        /* CP */
    {"llama3-8b", "h100-sxm5-80gb", 16, 64, 4096, "schedule=zb"},
    {"llama3-8b", "h100-sxm5-80gb", 16, 64, 4096, "schedule=gpipe"},
    {"mixtral-8x7b", "h100-sxm5-80gb", 16, 32, 4096, "zero=1"},
    {NULL, "h100-sxm5-80gb", 16, 32, 4096, "cp=1"},                       /* MLA, MoE, MTP */
    {NULL, "h100-sxm5-80gb", 16, 32, 4096, "tp=2,zero=1"},  /* CP variants of MLA + MoE plans */
    {"llama2-7b", "h100-sxm5-80gb", 8, 16, 4096, "stack=megatron-2021"}, /* a stack faster than the default in element-wise kernels: the bound must use its fractions */
};

static mp_model g_ds;

static const mp_model *job_model(const job *j)
{
    if (j->model)
        return model(j->model);
    /* A 6-layer DeepSeek-V3 (MLA, 64 experts, a shared expert, one dense layer, MTP), as
     * tests/test_search.c uses: small enough to enumerate. */
    g_ds = *model("deepseek-v3");
    g_ds.layers = 6;
    g_ds.moe_dense_layers = 1;
    g_ds.moe_experts = 64;
    return &g_ds;
}

static void job_opts(const job *j, mp_search_opts *o)
{
    mp_search_opts_init(o);
    o->pin.gb = j->gb;
    o->pin.seq = j->seq;
    if (j->fix[0])
        assert_int_equal(mp_plan_parse(j->fix, &o->pin, NULL), MP_OK);
}

typedef struct {
    const mp_model *m;
    const mp_cluster *c;
    mp_estimate *e;
    mp_estimate_opts eo;
    mp_workload_opts wo;
    mp_workload_opts wo_est; /* the estimator's (mp_estimate.workload_opts of the plan) */
    uint64_t plans, timed, comm_plans;
    double worst_ratio; /* largest bound / step seen */
    double worst_line_ratio; /* largest line bound (communication included) / step seen */
    double worst_plan_ratio; /* largest plan bound (sb_plan_lb_s) / step seen */
    int stack;               /* the job's stack (pinned or the default): every plan runs on it */
    int64_t gmax;       /* gb / dp of the plan: its largest micro-batch */
} bound_ctx;

/* The line bound of p over micro-batches [lo, hi] (both dividing gb / dp): GEMMs and the
 * communication no overlap hides (bound.c). */
/* The line's per-micro-batch term at p's mb, as the search forms it: the compute beyond the
 * GEMMs for p's recompute mode (priced with the estimator's workload options, wo_est) plus the
 * communication. */
static double line_term(bound_ctx *b, const mp_plan *p)
{
    sb_parts x;
    assert_true(sb_line_parts(b->m, b->c, p, &b->wo_est, NULL, &x));
    const double comm = sb_comm_mb_s(b->m, b->c, p, &b->wo, NULL);
    /* the communication part is the same priced either way (no collective reads a fraction) */
    if (fabs(sb_comm_of(p, x.comm_layers_s, x.p2p_s) - comm) > 1e-12 * comm)
        fail_msg("communication term %.17g s with the estimator's options, %.17g s without",
                 sb_comm_of(p, x.comm_layers_s, x.p2p_s), comm);
    return sb_compute_of(&x, p->recompute) + comm;
}

static double line_lb(bound_ctx *b, const sb_bound *sb, const mp_plan *p, int64_t lo, int64_t hi)
{
    mp_plan q = *p;
    q.mb = lo;
    const double c_lo = line_term(b, &q);
    q.mb = hi;
    const double c_hi = line_term(b, &q);
    return sb_line_lb_s(sb, lo, hi, p->recompute, c_lo, c_hi);
}

/* The line term (compute beyond the GEMMs + communication) of p's line: non-decreasing in mb, term / mb non-increasing, over
 * every divisor of gb / dp (to one part in 1e12: sums in another order). */
static void check_comm_monotone(bound_ctx *b, const mp_plan *p)
{
    const int64_t g = p->gb / p->dp;
    double prev = -1.0;
    int64_t prev_mb = 0;
    mp_plan q = *p;
    for (int64_t mb = 1; mb <= g; mb++) {
        if (g % mb)
            continue;
        q.mb = mb;
        const double c = line_term(b, &q);
        if (prev >= 0) {
            char s[512];
            mp_plan_format(&q, s, sizeof s);
            if (c < prev * (1.0 - 1e-12))
                fail_msg("line term (compute beyond the GEMMs + communication) %.17g s at mb %lld below %.17g s at mb %lld: %s", c,
                         (long long)mb, prev, (long long)prev_mb, s);
            if (c / (double)mb > prev / (double)prev_mb * (1.0 + 1e-12))
                fail_msg("line term per sequence grows from mb %lld to %lld: %s",
                         (long long)prev_mb, (long long)mb, s);
        }
        prev = c;
        prev_mb = mb;
    }
}

static int check_plan(void *ctx, const mp_plan *p)
{
    bound_ctx *b = ctx;
    assert_int_equal(p->stack, b->stack); /* a pinned stack reaches the plans */
    if (mp_estimate_plan(b->m, b->c, p, &b->eo, b->e, NULL) != MP_OK)
        return 0;
    b->wo_est = b->e->workload_opts;
    sb_bound sb;
    sb_bound_init(b->m, b->c, p, &b->wo_est, NULL, &sb); /* as the search: the estimator's options */
    assert_true(sb.ok);
    const double lb = sb_step_lb_s(&sb, p->mb, p->recompute);
    b->plans++;
    if (lb > b->e->step_s) {
        char s[512];
        mp_plan_format(p, s, sizeof s);
        fail_msg("bound %.17g s above the step %.17g s of %s", lb, b->e->step_s, s);
    }
    /* The bound holds for every larger micro-batch too (it grows with mb); and it has bite. */
    if (lb / b->e->step_s > b->worst_ratio)
        b->worst_ratio = lb / b->e->step_s;
    b->timed++;
    /* The line bound (communication included) of every tail holding this plan: the tightest
     * are [mb, gb/dp] (the least micro-batch is this one) and [1, mb] (the largest is). Once per
     * line (the line's first micro-batch, CP algorithm and order), the term's monotonicity. */
    const int64_t g = p->gb / p->dp;
    const double l1 = line_lb(b, &sb, p, p->mb, g), l2 = line_lb(b, &sb, p, 1, p->mb);
    if (l1 > b->e->step_s || l2 > b->e->step_s) {
        char s[512];
        mp_plan_format(p, s, sizeof s);
        fail_msg("line bound %.17g / %.17g s above the step %.17g s of %s", l1, l2, b->e->step_s, s);
    }
    /* The bound of the plan alone (its micro-batch's layers priced, tiles and waves included):
     * below the step, with and without the communication term. */
    {
        sb_parts x;
        assert_true(sb_line_parts(b->m, b->c, p, &b->wo_est, NULL, &x));
        const double comm = sb_comm_of(p, x.comm_layers_s, x.p2p_s);
        const double pl = sb_plan_lb_s(&sb, p->mb, p->recompute, &x, comm);
        if (pl > b->e->step_s || sb_plan_lb_s(&sb, p->mb, p->recompute, &x, 0.0) > pl) {
            char s[512];
            mp_plan_format(p, s, sizeof s);
            fail_msg("plan bound %.17g s above the step %.17g s of %s", pl, b->e->step_s, s);
        }
        if (pl / b->e->step_s > b->worst_plan_ratio)
            b->worst_plan_ratio = pl / b->e->step_s;
    }
    if (l1 / b->e->step_s > b->worst_line_ratio)
        b->worst_line_ratio = l1 / b->e->step_s;
    if (l1 > lb)
        b->comm_plans++;
    if (p->mb == 1 && p->cp_algo == 0 && !p->order_listed)
        check_comm_monotone(b, p);
    if (p->vpp > 1) {
        /* The layer part does not depend on vpp (the search's memo leaves vpp out). */
        mp_plan q = *p;
        q.vpp = 1;
        q.schedule = MP_SCHED_1F1B;
        double lay1, p1, lv, pv;
        assert_true(sb_comm_parts(b->m, b->c, p, &b->wo, NULL, &lv, &pv));
        assert_true(sb_comm_parts(b->m, b->c, &q, &b->wo, NULL, &lay1, &p1));
        sb_parts xv, x1;
        assert_true(sb_line_parts(b->m, b->c, p, &b->wo_est, NULL, &xv));
        assert_true(sb_line_parts(b->m, b->c, &q, &b->wo_est, NULL, &x1));
        if (fabs(xv.compute_s - x1.compute_s) > 1e-12 * fmax(xv.compute_s, x1.compute_s) ||
            fabs(xv.full_extra_s - x1.full_extra_s) > 1e-12 * fmax(xv.full_extra_s, x1.full_extra_s) ||
            fabs(xv.selective_extra_s - x1.selective_extra_s) > 1e-12 * fmax(xv.selective_extra_s, x1.selective_extra_s)) {
            char s[512];
            mp_plan_format(p, s, sizeof s);
            fail_msg("compute parts %.17g at vpp %lld, %.17g at 1: %s", xv.compute_s, (long long)p->vpp,
                     x1.compute_s, s);
        }
        if (fabs(lv - lay1) > 1e-12 * fmax(lv, lay1) || pv != p1) {
            char s[512];
            mp_plan_format(p, s, sizeof s);
            fail_msg("communication parts %.17g + %.17g at vpp %lld, %.17g + %.17g at 1: %s", lv, pv,
                     (long long)p->vpp, lay1, p1, s);
        }
    }
    return 0;
}

/* Property: bound <= step on every plan of every job, the estimator at its defaults. */
static void test_bound_below_every_step(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof jobs / sizeof jobs[0]; k++) {
        const job *j = &jobs[k];
        const mp_model *m = job_model(j);
        mp_cluster c = cluster(j->gpu, j->gpus);
        mp_search_opts o;
        job_opts(j, &o);
        bound_ctx b;
        memset(&b, 0, sizeof b);
        b.m = m;
        b.c = &c;
        b.stack = o.pin.stack;
        b.e = malloc(sizeof(mp_estimate));
        assert_non_null(b.e);
        mp_estimate_opts_init(&b.eo);
        b.eo.skip_text = 1;
        sb_workload_opts(&b.eo, &b.wo);
        mp_search_counts counts;
        mp_diag d = {0};
        if (mp_search_enumerate(m, j->gpus, &o, check_plan, &b, &counts, &d) != MP_OK)
            fail_msg("enumerate %s: %s", m->key, d.text);
        printf("# %s on %lld x %s (%s): %llu plans, bound / step at most %.3f; line bound (compute "
               "and communication) %.3f, larger on %llu plans; plan bound %.3f\n", m->key,
               (long long)j->gpus, j->gpu, j->fix, (unsigned long long)b.plans, b.worst_ratio,
               b.worst_line_ratio, (unsigned long long)b.comm_plans, b.worst_plan_ratio);
        assert_true(b.plans > 100);
        assert_true(b.worst_line_ratio >= b.worst_ratio && b.worst_line_ratio <= 1.0);
        assert_true(b.worst_plan_ratio > 0.5 && b.worst_plan_ratio <= 1.0); /* it has bite */
        if (j->gpus >= 16)
            assert_true(b.comm_plans > 0); /* TP, EP or PP communicates: the term has bite */
        assert_true(b.worst_ratio > 0.1 && b.worst_ratio <= 1.0); /* long-context CP: attention, left out, dominates */
        free(b.e);
    }
}

/* The bound grows with mb and with full recompute, and is 0 without a workload. */
static void test_bound_shape(void **state)
{
    (void)state;
    mp_cluster c = cluster("h100-sxm5-80gb", 64);
    mp_plan p;
    mp_plan_init_default(&p);
    assert_int_equal(mp_plan_parse("tp=8,pp=4,vpp=2,mb=1,gb=64,seq=4096,zero=1", &p, NULL), MP_OK);
    assert_int_equal(mp_plan_resolve(&p, model("llama3-70b"), 64, NULL), MP_OK);
    mp_workload_opts wo;
    mp_workload_opts_init(&wo);
    sb_bound b;
    sb_bound_init(model("llama3-70b"), &c, &p, &wo, NULL, &b);
    assert_true(b.ok);
    assert_true(b.bubble == 1.5); /* (pp - 1) / vpp */
    assert_true(b.local_seqs == 32.0);
    assert_true(sb_step_lb_s(&b, 2, MP_RC_NONE) > sb_step_lb_s(&b, 1, MP_RC_NONE));
    assert_true(sb_step_lb_s(&b, 1, MP_RC_FULL) > sb_step_lb_s(&b, 1, MP_RC_SELECTIVE));
    assert_true(sb_step_lb_s(&b, 1, MP_RC_SELECTIVE) == sb_step_lb_s(&b, 1, MP_RC_NONE));
    b.ok = 0;
    assert_true(sb_step_lb_s(&b, 1, MP_RC_NONE) == 0.0);
}

static void same_entries(const mp_search_entry *a, int na, const mp_search_entry *b, int nb,
                         const char *what)
{
    if (na != nb)
        fail_msg("%s: %d vs %d entries", what, na, nb);
    for (int i = 0; i < na; i++)
        if (mp_search_entry_cmp(&a[i], &b[i]) != 0 || a[i].score != b[i].score ||
            a[i].step_s != b[i].step_s || a[i].memory_bytes != b[i].memory_bytes ||
            strcmp(a[i].bottleneck, b[i].bottleneck))
            fail_msg("%s[%d] differs", what, i);
}

static void same_answer(const mp_search_result *a, const mp_search_result *b)
{
    assert_int_equal(a->counts.plans, b->counts.plans);
    assert_int_equal(a->counts.feasible, b->counts.feasible);
    assert_int_equal(a->counts.over_memory, b->counts.over_memory);
    assert_int_equal(a->counts.failed, b->counts.failed);
    same_entries(a->top, a->ntop, b->top, b->ntop, "top");
    same_entries(a->pareto_memory, a->npareto_memory, b->pareto_memory, b->npareto_memory, "pareto_memory");
    same_entries(a->pareto_cost, a->npareto_cost, b->pareto_cost, b->npareto_cost, "pareto_cost");
    assert_int_equal(a->rank, b->rank);
    assert_int_equal(a->winner_ties, b->winner_ties);
    assert_int_equal(a->next_distinct_rank, b->next_distinct_rank);
    assert_int_equal(a->have_least_memory, b->have_least_memory);
    assert_int_equal(a->have_explanation, b->have_explanation);
    if (a->have_explanation)
        assert_string_equal(a->explanation.text, b->explanation.text);
}

/* Differential: pruning on and off agree, and the bound skipped plans in these spaces. With a
 * price (the cost frontier), a plan to rank, the time-to-train objective and two GPU counts in
 * some of them. */
static void test_pruned_search_is_exhaustive_search(void **state)
{
    (void)state;
    uint64_t skipped_total = 0;
    for (size_t k = 0; k < sizeof jobs / sizeof jobs[0]; k++) {
        const job *j = &jobs[k];
        const mp_model *m = job_model(j);
        mp_cluster c[2] = {cluster(j->gpu, j->gpus), cluster(j->gpu, 2 * j->gpus)};
        const int nc = k % 3 == 1 ? 2 : 1;
        mp_search_opts o;
        job_opts(j, &o);
        o.top_n = k % 2 ? 3 : 10;
        if (k % 3 == 2) {
            o.price_per_gpu_hour = 2.5;
            o.tokens = 1e12;
            o.objective = MP_OBJ_TIME_TO_TRAIN;
        }
        mp_plan rank;
        if (k % 4 == 0) {
            /* rank the space's first plan */
            mp_plan_init_default(&rank);
            rank.gb = j->gb;
            rank.seq = j->seq;
            if (mp_plan_resolve(&rank, m, j->gpus, NULL) == MP_OK) {
                o.rank_plan = &rank;
                o.rank_cluster = 0;
            }
        }
        for (int threads = 1; threads <= 2; threads++) {
            mp_search_result pruned, full;
            mp_diag d = {0};
            o.threads = threads;
            o.parallel_min_plans = 1;
            o.prune = 1;
            if (mp_search(m, c, nc, &o, &pruned, &d) != MP_OK)
                fail_msg("search %s: %s", m->key, d.text);
            o.prune = 0;
            if (mp_search(m, c, nc, &o, &full, &d) != MP_OK)
                fail_msg("search %s: %s", m->key, d.text);
            assert_int_equal(full.counts.bound_skipped, 0);
            assert_int_equal(pruned.counts.evaluated + pruned.counts.memory_checked +
                                 pruned.counts.over_memory_proven + pruned.counts.order_skipped +
                                 pruned.counts.bound_skipped,
                             pruned.counts.plans);
            same_answer(&pruned, &full);
            if (threads == 1)
                printf("# %s on %lld x %s (%s%s): %llu plans, %llu feasible; bound skipped %llu, "
                       "timed %llu of %llu\n", m->key, (long long)j->gpus, j->gpu, j->fix,
                       nc == 2 ? ", two GPU counts" : "", (unsigned long long)full.counts.plans,
                       (unsigned long long)full.counts.feasible,
                       (unsigned long long)pruned.counts.bound_skipped,
                       (unsigned long long)pruned.counts.evaluated,
                       (unsigned long long)full.counts.evaluated);
            skipped_total += pruned.counts.bound_skipped;
            mp_search_result_free(&pruned);
            mp_search_result_free(&full);
        }
    }
    assert_true(skipped_total > 0); /* the bound did skip plans */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bound_shape),
        cmocka_unit_test(test_bound_below_every_step),
        cmocka_unit_test(test_pruned_search_is_exhaustive_search),
    };
    return cmocka_run_group_tests(tests, catalog_setup, catalog_teardown);
}
