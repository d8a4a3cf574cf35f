/* tests/test_estimate_fast.c — the search's fast evaluation paths against the reference
 * estimator (STYLE.md: a reference-vs-optimized differential test, as ggml's test-backend-ops).
 *
 * The search evaluates plans in enumeration order through a per-thread cache (mp_wl_cache:
 * priced collectives, model values, and the shape memoised across a line's micro-batches and
 * communication variants), keeps a line's memory for its communication variants
 * (mp_estimate_opts.memory_kept) and asks memory alone of the plans its bound skips
 * (memory_only). Here every plan of several spaces (dense, GQA with fp8, ZeRO-3 and HSDP,
 * long-context CP with both CP algorithms, every rank order, Mixtral, a small DeepSeek-V3 with
 * MLA, MoE and MTP) goes through those paths in the search's order, and each estimate must be
 * byte for byte the one a fresh, cache-less call gives (the numbers before the per-stage
 * table, which the hot loop skips; with the default options on a sample of plans, the texts
 * and the per-stage table too). The fast output struct starts filled with garbage, so a field
 * the fast path forgot to write cannot match by chance.
 */
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

typedef struct {
    const char *model; /* NULL: the small DeepSeek-V3 below */
    const char *gpu;
    int64_t gpus, gb, seq;
    const char *fix;   /* pinned plan keys */
    int all_orders;
} job;

static const job jobs[] = {
    {"llama2-7b", "h100-sxm5-80gb", 8, 16, 4096, "", 0},                      /* dense */
    {"llama3-8b", "h100-sxm5-80gb", 16, 32, 8192, "precision=fp8", 0},        /* GQA, fp8 */
    {"llama3-70b", "h100-sxm5-80gb", 64, 64, 4096, "zero=3", 0},              /* ZeRO-3, HSDP */
    {"llama3-8b", "h100-sxm5-80gb", 32, 8, 65536, "recompute=full", 0},       /* CP, both algorithms */
    {"llama3-8b", "h100-sxm5-80gb", 16, 32, 16384, "zero=1,recompute=full", 1}, /* every rank order */
    {"mixtral-8x7b", "h100-sxm5-80gb", 16, 32, 4096, "zero=1", 0},            /* MoE */
    {NULL, "h100-sxm5-80gb", 16, 32, 4096, "", 0},                             /* MLA, MoE, MTP */
};

static mp_model g_ds;

static const mp_model *job_model(const job *j)
{
    if (j->model) {
        const mp_model *m = mp_catalog_model(g_cat, j->model);
        assert_non_null(m);
        return m;
    }
    /* A 6-layer DeepSeek-V3 (MLA, 64 experts, a shared expert, one dense layer, MTP), as
     * tests/test_search.c uses: small enough to enumerate. */
    g_ds = *mp_catalog_model(g_cat, "deepseek-v3");
    g_ds.layers = 6;
    g_ds.moe_dense_layers = 1;
    g_ds.moe_experts = 64;
    return &g_ds;
}

typedef struct {
    const mp_model *m;
    const mp_cluster *c;
    mp_wl_cache *cache;
    mp_estimate *fast, *ref;
    mp_estimate_opts hot, hot_kept, hot_mem, ref_hot, ref_mem, full, ref_full;
    mp_plan prev;
    int have_prev;    /* fast holds prev's estimate (memory computed) */
    uint64_t plans, kept, full_checked;
} fast_ctx;

/* p and q differ at most in their CP algorithm and rank order. */
static int same_line_variant(const mp_plan *p, const mp_plan *q)
{
    mp_plan a = *p, b = *q;
    a.cp_algo = b.cp_algo = (mp_cp_algo)0;
    memset(a.order, 0, sizeof a.order);
    memset(b.order, 0, sizeof b.order);
    a.order_listed = b.order_listed = 0;
    return a.tp == b.tp && a.cp == b.cp && a.pp == b.pp && a.dp == b.dp && a.vpp == b.vpp &&
           a.ep == b.ep && a.etp == b.etp && a.mb == b.mb && a.sp == b.sp && a.zero == b.zero &&
           a.hsdp == b.hsdp && a.recompute == b.recompute && a.schedule == b.schedule &&
           a.fsdp == b.fsdp;
}

static void fail_differs(const char *what, const mp_plan *p, const mp_estimate *f, const mp_estimate *r)
{
    char s[512];
    mp_plan_format(p, s, sizeof s);
    fail_msg("%s differs from the reference for %s: step %.17g vs %.17g s, memory %.17g vs %.17g B, "
             "feasible %d vs %d",
             what, s, f->step_s, r->step_s, f->memory.total, r->memory.total, f->feasible, r->feasible);
}

/* A text's bytes after its end cleared (skip_text leaves them as they were: a C string is
 * what it holds up to its NUL). */
static void clear_after_nul(char *s, size_t cap)
{
    const char *z = memchr(s, 0, cap);
    const size_t n = z ? (size_t)(z - s) : cap;
    memset(s + n, 0, cap - n);
}

/* The two estimates agree byte for byte on everything before the per-stage table (texts up to
 * their NUL). */
static void check_same(const char *what, const mp_plan *p, const mp_estimate *f, const mp_estimate *r)
{
    static mp_estimate a, b; /* the prefix only is used */
    memcpy(&a, f, offsetof(mp_estimate, per_stage));
    memcpy(&b, r, offsetof(mp_estimate, per_stage));
    mp_estimate *x[2] = {&a, &b};
    for (int i = 0; i < 2; i++) {
        clear_after_nul(x[i]->peak_moment, sizeof x[i]->peak_moment);
        clear_after_nul(x[i]->bottleneck, sizeof x[i]->bottleneck);
        for (int k = 0; k < 4; k++)
            clear_after_nul(x[i]->reasons[k], sizeof x[i]->reasons[k]);
    }
    if (memcmp(&a, &b, offsetof(mp_estimate, per_stage)) != 0)
        fail_differs(what, p, f, r);
}

static int check_plan(void *ctx, const mp_plan *p)
{
    fast_ctx *x = ctx;
    x->plans++;
    /* The search's hot loop: the line's memory kept for a communication variant. */
    const int kept = x->have_prev && same_line_variant(p, &x->prev);
    mp_status sf = mp_estimate_plan(x->m, x->c, p, kept ? &x->hot_kept : &x->hot, x->fast, NULL);
    mp_status sr = mp_estimate_plan(x->m, x->c, p, &x->ref_hot, x->ref, NULL);
    assert_int_equal(sf, sr);
    x->kept += (uint64_t)kept;
    if (sf == MP_OK)
        check_same(kept ? "hot loop (memory kept)" : "hot loop", p, x->fast, x->ref);
    if (!kept) {
        x->prev = *p;
        x->have_prev = sf == MP_OK;
    }
    /* Memory alone (the bound's skipped tails), through the same cache, then on. */
    if (x->plans % 3 == 0) {
        mp_estimate *m = malloc(sizeof *m);
        assert_non_null(m);
        memset(m, 0x5A, offsetof(mp_estimate, per_stage));
        sf = mp_estimate_plan(x->m, x->c, p, &x->hot_mem, m, NULL);
        sr = mp_estimate_plan(x->m, x->c, p, &x->ref_mem, x->ref, NULL);
        assert_int_equal(sf, sr);
        if (sf == MP_OK)
            check_same("memory only", p, m, x->ref);
        free(m);
        x->have_prev = 0; /* the search's memory checks overwrite its estimate too */
        memset(x->fast, 0x3C, offsetof(mp_estimate, per_stage));
    }
    /* The default options (texts, per-stage table) through the cache, on a sample. */
    if (x->plans % 17 == 0) {
        mp_estimate *a = malloc(sizeof *a);
        assert_non_null(a);
        memset(a, 0x77, sizeof *a);
        sf = mp_estimate_plan(x->m, x->c, p, &x->full, a, NULL);
        sr = mp_estimate_plan(x->m, x->c, p, &x->ref_full, x->ref, NULL);
        assert_int_equal(sf, sr);
        if (sf == MP_OK) {
            check_same("default options", p, a, x->ref);
            const int n = a->nstages < MP_MAX_STAGES ? a->nstages : MP_MAX_STAGES;
            if (memcmp(a->per_stage, x->ref->per_stage, (size_t)n * sizeof a->per_stage[0]) != 0)
                fail_differs("per-stage memory", p, a, x->ref);
            x->full_checked++;
        }
        free(a);
    }
    return 0;
}

static void test_fast_paths_are_the_reference(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof jobs / sizeof jobs[0]; k++) {
        const job *j = &jobs[k];
        const mp_model *m = job_model(j);
        mp_cluster c;
        mp_diag d = {0};
        if (mp_cluster_from_catalog(g_cat, j->gpu, j->gpus, 0, NULL, &c, &d) != MP_OK)
            fail_msg("cluster %s x %lld: %s", j->gpu, (long long)j->gpus, d.text);
        mp_search_opts o;
        mp_search_opts_init(&o);
        o.pin.gb = j->gb;
        o.pin.seq = j->seq;
        o.all_orders = j->all_orders;
        if (j->fix[0])
            assert_int_equal(mp_plan_parse(j->fix, &o.pin, NULL), MP_OK);

        fast_ctx x;
        memset(&x, 0, sizeof x);
        x.m = m;
        x.c = &c;
        x.cache = malloc(sizeof *x.cache);
        x.fast = malloc(sizeof *x.fast);
        x.ref = malloc(sizeof *x.ref);
        assert_non_null(x.cache);
        assert_non_null(x.fast);
        assert_non_null(x.ref);
        mp_wl_cache_init(x.cache);
        x.cache->trust_addresses = 1; /* as the search: m and c stay put */
        memset(x.fast, 0xC3, sizeof *x.fast);
        /* The search's options (search.c tstates_create) and the reference's: the same
         * assumptions without the cache and without keeping memory. */
        mp_estimate_opts_init(&x.full);
        x.ref_full = x.full;
        x.full.cache = x.cache;
        x.full.memo = mp_est_memo_create();
        assert_non_null(x.full.memo);
        x.hot = x.full;
        x.hot.skip_text = 1;
        x.hot.skip_per_stage = 1;
        x.hot.feasibility_only = 1;
        x.hot_kept = x.hot;
        x.hot_kept.memory_kept = 1;
        x.hot_mem = x.hot;
        x.hot_mem.memory_only = 1;
        x.ref_hot = x.hot;
        x.ref_hot.cache = NULL;
        x.ref_mem = x.hot_mem;
        x.ref_mem.cache = NULL;
        mp_search_counts counts;
        assert_int_equal(mp_search_enumerate(m, j->gpus, &o, check_plan, &x, &counts, &d), MP_OK);
        assert_int_equal(x.plans, counts.plans);
        assert_true(x.plans > 100);
        assert_true(x.full_checked > 0);
        /* Every space with CP or several orders has variants that kept their line's memory. */
        if (j->all_orders || j->seq >= 65536)
            assert_true(x.kept > 0);
        print_message("  %s on %lld %s: %llu plans, %llu with memory kept, %llu with texts\n",
                      j->model ? j->model : "deepseek-v3 (6 layers)", (long long)j->gpus, j->gpu,
                      (unsigned long long)x.plans, (unsigned long long)x.kept,
                      (unsigned long long)x.full_checked);
        mp_est_memo_destroy(x.full.memo);
        free(x.cache);
        free(x.fast);
        free(x.ref);
    }
}

/* One cache and one memo (mp_est_memo) for plans alternating between two clusters of the same
 * GPU count and fabric whose GPUs differ (H100 80 GB and H200 141 GB: the same NVLink 4 and
 * scale-out tiers, other memory, HBM bandwidth and runtime rows), with the cache checking its
 * cluster on every call (trust_addresses 0), and two caches sharing the memo: every estimate is
 * the reference's, byte for byte. The memo's entries name a shape generation, unique across
 * caches, and the GPU they read. */
static void test_memo_across_clusters_and_caches(void **state)
{
    (void)state;
    const mp_model *m = mp_catalog_model(g_cat, "llama3-70b");
    assert_non_null(m);
    static const char *const gpus[2] = {"h100-sxm5-80gb", "h200-sxm-141gb"};
    mp_cluster c[2];
    for (int i = 0; i < 2; i++) {
        mp_diag d = {0};
        if (mp_cluster_from_catalog(g_cat, gpus[i], 64, 0, NULL, &c[i], &d) != MP_OK)
            fail_msg("cluster %s x 64: %s", gpus[i], d.text);
    }
    static const char *const plans[] = {
        "tp=8,pp=4,mb=1,gb=64,seq=4096,zero=1",          "tp=8,pp=4,mb=2,gb=64,seq=4096,zero=1",
        "tp=4,pp=4,mb=1,gb=64,seq=4096,zero=3,hsdp=2",   "tp=8,pp=2,vpp=4,mb=1,gb=64,seq=4096",
        "tp=8,pp=8,mb=1,gb=64,seq=4096,recompute=full",
    };
    mp_wl_cache *cache[2] = {malloc(sizeof *cache[0]), malloc(sizeof *cache[1])};
    mp_estimate *f = malloc(sizeof *f), *r = malloc(sizeof *r);
    mp_est_memo *memo = mp_est_memo_create();
    assert_non_null(cache[0]);
    assert_non_null(cache[1]);
    assert_non_null(f);
    assert_non_null(r);
    assert_non_null(memo);
    mp_wl_cache_init(cache[0]);
    mp_wl_cache_init(cache[1]);
    mp_estimate_opts hot, ref;
    mp_estimate_opts_init(&hot);
    hot.skip_text = 1;
    hot.skip_per_stage = 1;
    hot.memo = memo;
    ref = hot;
    int n = 0;
    for (int round = 0; round < 4; round++) {
        for (size_t k = 0; k < sizeof plans / sizeof plans[0]; k++) {
            for (int g = 0; g < 2; g++) {
                mp_plan p;
                mp_plan_init_default(&p);
                assert_int_equal(mp_plan_parse(plans[k], &p, NULL), MP_OK);
                assert_int_equal(mp_plan_resolve(&p, m, 64, NULL), MP_OK);
                hot.cache = cache[(round >> 1) & 1]; /* rounds 2, 3: the other cache */
                ref.cache = NULL;
                memset(f, 0x5A, offsetof(mp_estimate, per_stage));
                assert_int_equal(mp_estimate_plan(m, &c[g], &p, &hot, f, NULL), MP_OK);
                assert_int_equal(mp_estimate_plan(m, &c[g], &p, &ref, r, NULL), MP_OK);
                check_same(gpus[g], &p, f, r);
                n++;
            }
        }
    }
    assert_true(n == 40);
    mp_est_memo_destroy(memo);
    mp_est_memo_destroy(NULL);
    free(cache[0]);
    free(cache[1]);
    free(f);
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fast_paths_are_the_reference),
        cmocka_unit_test(test_memo_across_clusters_and_caches),
    };
    return cmocka_run_group_tests(tests, catalog_setup, catalog_teardown);
}
