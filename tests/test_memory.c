/* tests/test_memory.c — the memory a run holds (issue 16): the runtime parts, the verdict and
 * its margin, the optimizer keys, and the published memory measurements by basis
 * (docs/memory.md). */
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

#define GIB 1073741824.0

static void predict_o(const char *model, const char *gpu, int64_t gpus, const char *plan,
                      const mp_estimate_opts *o, mp_estimate *e)
{
    const mp_model *m = mp_catalog_model(g_cat, model);
    if (!m)
        fail_msg("catalog model %s missing", model);
    mp_cluster c;
    mp_diag d = {0};
    if (mp_cluster_from_catalog(g_cat, gpu, gpus, 0, NULL, &c, &d) != MP_OK)
        fail_msg("cluster: %s", d.text);
    mp_plan p;
    mp_plan_init_default(&p);
    if (mp_plan_parse(plan, &p, &d) != MP_OK || mp_plan_resolve(&p, m, gpus, &d) != MP_OK)
        fail_msg("plan \"%s\": %s", plan, d.text);
    if (mp_estimate_plan(m, &c, &p, o, e, &d) != MP_OK)
        fail_msg("estimate \"%s\": %s", plan, d.text);
}

static mp_estimate g_e, g_f; /* large: static */

/* Llama 3 8B, full ZeRO-3 (FSDP1/DeepSpeed) on 8 x A100 40 GB at seq 4096: 38.1 GiB of tensors
 * on a 40 GiB GPU, called a safe fit before the runtime parts. Not a safe fit. */
static void test_llama3_8b_zero3_not_safe(void **state)
{
    (void)state;
    predict_o("llama3-8b", "a100-sxm4-40gb", 8, "zero=3,mb=1,gb=8,seq=4096", NULL, &g_e);
    const mp_memory *m = &g_e.memory;
    print_message("llama3-8b zero3 8xA100-40: allocated %.2f GiB, runtime %.2f, nccl %.2f, reserve "
                  "%.2f, total %.2f of %.2f GiB: verdict %s (%s)\n",
                  m->allocated / GIB, m->runtime / GIB, m->nccl / GIB, m->allocator_reserve / GIB,
                  m->total / GIB, m->capacity / GIB, mp_verdict_name(g_e.verdict), g_e.peak_moment);
    assert_true(g_e.verdict != MP_VERDICT_FITS);
    assert_true(m->allocated > 37.0 * GIB && m->allocated < 39.0 * GIB); /* tensors unchanged */
    assert_true(m->runtime > 0 && m->nccl > 0 && m->allocator_reserve > 0);
}

/* meta-llama/llama-cookbook issue 120: Llama 2 70B, FSDP full shard, activation checkpointing,
 * pure bf16 AdamW, 16 x A100 80 GB: 42 GiB allocated, 63 GiB reserved. Within 15% of both. */
static void test_llama2_70b_fsdp_pure_bf16(void **state)
{
    (void)state;
    predict_o("llama2-70b", "a100-sxm4-80gb", 16,
              "zero=3,mb=1,gb=16,seq=4096,recompute=full,opt_dtype=bf16,master_weights=0", NULL, &g_e);
    const mp_memory *m = &g_e.memory;
    double ea = 100.0 * (m->allocated / GIB - 42.0) / 42.0, et = 100.0 * (m->total / GIB - 63.0) / 63.0;
    print_message("llama2-70b FSDP pure bf16 16xA100-80: allocated %.2f GiB (%+.1f%% vs 42), "
                  "total %.2f GiB (%+.1f%% vs 63 reserved), verdict %s\n",
                  m->allocated / GIB, ea, m->total / GIB, et, mp_verdict_name(g_e.verdict));
    assert_true(fabs(ea) <= 15.0);
    assert_true(fabs(et) <= 15.0);
    assert_int_equal(g_e.verdict, MP_VERDICT_FITS); /* the run completed */
}

/* opt_dtype and master_weights: AdamW moments 8 -> 4 bytes per parameter, master weights 4 -> 0;
 * the defaults keep today's estimate exactly. */
static void test_optimizer_keys(void **state)
{
    (void)state;
    static mp_estimate base, expl, bf, nm, both;
    const char *plan = "zero=3,mb=1,gb=8,seq=2048";
    predict_o("llama3-8b", "h100-sxm5-80gb", 8, plan, NULL, &base);
    predict_o("llama3-8b", "h100-sxm5-80gb", 8, "zero=3,mb=1,gb=8,seq=2048,opt_dtype=fp32,master_weights=1",
              NULL, &expl);
    assert_true(expl.memory.total == base.memory.total && expl.step_s == base.step_s);
    predict_o("llama3-8b", "h100-sxm5-80gb", 8, "zero=3,mb=1,gb=8,seq=2048,opt_dtype=bf16", NULL, &bf);
    predict_o("llama3-8b", "h100-sxm5-80gb", 8, "zero=3,mb=1,gb=8,seq=2048,master_weights=0", NULL, &nm);
    predict_o("llama3-8b", "h100-sxm5-80gb", 8, "zero=3,mb=1,gb=8,seq=2048,opt_dtype=bf16,master_weights=0",
              NULL, &both);
    const double o = base.memory.optimizer;
    assert_true(fabs(bf.memory.optimizer - o * 8.0 / 12.0) < 1e-9 * o);
    assert_true(fabs(nm.memory.optimizer - o * 8.0 / 12.0) < 1e-9 * o);
    assert_true(fabs(both.memory.optimizer - o * 4.0 / 12.0) < 1e-9 * o);
    assert_true(both.memory.total < bf.memory.total && bf.memory.total < base.memory.total);
}

/* The verdict's margin: a plan is oom exactly when its total exceeds the capacity, whatever the
 * margin; a wider margin only moves fits to tight. So a tighter margin never turns an OOM into
 * a fit. Checked over a grid of plans that spans all three verdicts. */
static void test_margin_property(void **state)
{
    (void)state;
    const char *plans[] = {"zero=3,mb=1,gb=8,seq=4096", "zero=3,mb=2,gb=16,seq=4096",
                           "zero=1,mb=1,gb=8,seq=2048", "zero=3,mb=1,gb=8,seq=2048,recompute=full",
                           "zero=3,fsdp=2,mb=1,gb=8,seq=4096", "zero=2,mb=4,gb=32,seq=2048",
                           "tp=2,zero=1,mb=1,gb=4,seq=8192", "zero=3,mb=8,gb=64,seq=1024"};
    const char *gpus[] = {"a100-sxm4-40gb", "a100-sxm4-80gb", "h100-sxm5-80gb"};
    const double margins[] = {0.0, 0.02, 0.08, 0.15, 0.3};
    int seen[3] = {0};
    for (size_t g = 0; g < sizeof gpus / sizeof gpus[0]; g++)
        for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++) {
            int prev = -1, oom = -1;
            for (size_t k = 0; k < sizeof margins / sizeof margins[0]; k++) {
                mp_estimate_opts o;
                mp_estimate_opts_init(&o);
                o.allocator_margin_frac = margins[k];
                predict_o("llama3-8b", gpus[g], 8, plans[i], &o, &g_f);
                int v = g_f.verdict;
                seen[v]++;
                assert_int_equal(g_f.feasible, v != MP_VERDICT_OOM);
                if (oom < 0)
                    oom = v == MP_VERDICT_OOM;
                assert_int_equal(oom, v == MP_VERDICT_OOM); /* margin-independent */
                assert_true(v >= prev);                     /* wider margin: never safer */
                prev = v;
            }
        }
    print_message("margin grid: %d fits, %d tight, %d oom verdicts\n", seen[0], seen[1], seen[2]);
    assert_true(seen[0] > 0 && seen[1] > 0 && seen[2] > 0);
}

/* Published memory measurements by basis: allocated compares with memory_bytes.allocated,
 * reserved / peak (torchtitan's logged peak is the reserved memory) with the total. Every row is
 * a run that completed: it must be called fits or tight. Reports the median |error| by basis
 * and the calls. */
typedef struct {
    double err[256];
    int n;
} errs;

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(errs *e)
{
    if (!e->n)
        return 0.0;
    qsort(e->err, (size_t)e->n, sizeof e->err[0], cmp_d);
    return e->n % 2 ? e->err[e->n / 2] : 0.5 * (e->err[e->n / 2 - 1] + e->err[e->n / 2]);
}

static void test_memory_runs(void **state)
{
    (void)state;
    const char *files[] = {"memory_runs.csv", "c2_memory.csv", "torchtitan_h100_2412.csv"};
    errs alloc = {{0}, 0}, resv = {{0}, 0};
    int calls[3] = {0}, oom_ids = 0, mem_rows = 0, own_bad = 0;
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        char path[512];
        snprintf(path, sizeof path, "%s/tests/data/%s", MESHPLAN_SOURCE_DIR, files[f]);
        size_t len = 0;
        char *csv = slurp(path, &len);
        assert_non_null(csv);
        mp_validation v;
        mp_diag d = {0};
        if (mp_validate_csv(g_cat, csv, len, files[f], NULL, &v, &d) != MP_OK)
            fail_msg("validate %s: %s", files[f], d.text);
        for (size_t i = 0; i < v.nrows; i++) {
            const mp_val_row *r = &v.rows[i];
            if (strcmp(r->metric, "mem_gib"))
                continue;
            mem_rows++;
            errs *e = !strcmp(r->mem_basis, "allocated") ? &alloc : &resv;
            if (e->n < 256)
                e->err[e->n++] = fabs(r->error_pct);
            calls[r->verdict]++;
            if (r->verdict == MP_VERDICT_OOM)
                oom_ids++;
            print_message("  %-36s %-9s measured %6.1f predicted %6.1f GiB %+6.1f%%  %s\n", r->id,
                          r->mem_basis, r->measured, r->predicted, r->error_pct,
                          mp_verdict_name(r->verdict));
            /* this task's own rows: within 15% and not called oom */
            if (f == 0 && (fabs(r->error_pct) > 15.0 || r->verdict == MP_VERDICT_OOM))
                own_bad++;
        }
        mp_validation_free(&v);
        free(csv);
    }
    print_message("memory rows %d: median |error| allocated %.1f%% (n=%d), reserved/peak %.1f%% (n=%d); "
                  "calls on observed fits: %d fits, %d tight, %d oom\n",
                  mem_rows, median(&alloc), alloc.n, median(&resv), resv.n, calls[0], calls[1], calls[2]);
    assert_int_equal(own_bad, 0);
    assert_true(alloc.n >= 5 && resv.n >= 2);
    /* tight on at most a quarter of the calls */
    assert_true(4 * calls[1] <= mem_rows);
    /* The torchtitan Llama 3.1 8B rows at seq 8192 with torchtitan's per-op selective AC are
     * over-predicted by 34-55% (activations, not runtime memory: docs/memory.md "Left"); they
     * are the rows called oom. A guard that the count does not grow. */
    assert_true(oom_ids <= 6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama3_8b_zero3_not_safe),
        cmocka_unit_test(test_llama2_70b_fsdp_pure_bf16),
        cmocka_unit_test(test_optimizer_keys),
        cmocka_unit_test(test_margin_property),
        cmocka_unit_test(test_memory_runs),
    };
    return cmocka_run_group_tests(tests, catalog_setup, catalog_teardown);
}
