/* tests/test_lora.c — multi-LoRA serving (include/meshplan/lora.h, src/lora_serve/):
 *   - golden: Llama-3-8B rank 16 on q, k, v, o = 13,631,488 parameters (16 x (8192 + 2 x 5120 +
 *     8192) x 32 layers; PEFT prints the same count), halved per GPU at tp 2; Che's LRU hit ratio
 *     for uniform popularity = k / n exactly;
 *   - limits: every adapter resident: hit 1, no swaps, in the closed form and in the per-step
 *     model; one adapter of rank 0: no cost and the base model's KV pool; the cache comes out of
 *     the KV pool byte for byte;
 *   - the cache sized for the p99: its miss ratio <= 1%, one adapter fewer misses more;
 *   - differential: the per-step model's LRU miss ratio against Che's approximation (Zipf 1.1,
 *     500 adapters, cache 50): within 2 points;
 *   - the adapter draw: deterministic, the most popular adapter's share as Zipf says;
 *   - bad input refused with the field named;
 *   - in the serving simulator (serve.h's replica hook): one adapter of rank 0 gives the base
 *     model's figures exactly; every adapter resident never swaps; one rank-16 adapter costs a
 *     few % of TPOT, never less than the base. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"

#include "meshplan/lora.h"
#include "meshplan/meshplan.h"
#include "meshplan/serve.h"

static void setup_job(mp_cluster *c, mp_infer_plan *p, const mp_model **m)
{
    mp_diag d = {0};
    assert_int_equal(mp_cluster_from_node(g_cat, "dgx-h100", 8, c, &d), MP_OK);
    mp_infer_plan_init(p);
    *m = mp_catalog_model(g_cat, "llama3-8b");
    assert_non_null(*m);
}

static void test_sizes(void **state)
{
    (void)state;
    const mp_model *m = mp_catalog_model(g_cat, "llama3-8b");
    double params, bytes;
    mp_diag d = {0};
    assert_int_equal(mp_lora_adapter_size(m, 16, MP_LORA_ATTN, 1, &params, &bytes, &d), MP_OK);
    assert_true(params == 13631488.0);
    assert_true(bytes == 2.0 * 13631488.0);
    assert_int_equal(mp_lora_adapter_size(m, 16, MP_LORA_ATTN, 2, &params, &bytes, &d), MP_OK);
    assert_true(bytes == 13631488.0);
    /* all linear layers: + 3 x (4096 + 14336) x 16 x 32 more */
    assert_int_equal(mp_lora_adapter_size(m, 16, MP_LORA_ALL, 1, &params, &bytes, &d), MP_OK);
    assert_true(params == 13631488.0 + 3.0 * (4096 + 14336) * 16 * 32);
    assert_int_equal(mp_lora_adapter_size(m, -1, MP_LORA_ATTN, 1, &params, &bytes, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "rank"));
}

static void test_che(void **state)
{
    (void)state;
    double u[100];
    for (int i = 0; i < 100; i++)
        u[i] = 0.01;
    for (int k = 1; k < 100; k += 7)
        assert_close(mp_lora_che_hit(u, 100, k), k / 100.0, 1e-9);
    assert_true(mp_lora_che_hit(u, 100, 100) == 1.0);
    double z[500], s = 0, prev = 0;
    for (int i = 0; i < 500; i++)
        s += (z[i] = pow(i + 1.0, -1.1));
    for (int i = 0; i < 500; i++)
        z[i] /= s;
    for (int k = 1; k <= 500; k += 25) {
        double h = mp_lora_che_hit(z, 500, k);
        assert_true(h >= prev && h <= 1.0);
        prev = h;
    }
}

static void test_limits_closed_form(void **state)
{
    (void)state;
    mp_cluster c;
    mp_infer_plan p;
    const mp_model *m;
    setup_job(&c, &p, &m);
    mp_lora_opts o;
    mp_lora_result r;
    mp_diag d = {0};
    mp_lora_opts_init(&o);
    o.adapters = 500;
    o.cache_adapters = 500;
    o.max_cache_frac = 0.5;
    assert_int_equal(mp_lora_plan(m, &c, &p, &o, 30.0, 8, 64, &r, &d), MP_OK);
    assert_true(r.hit_frac == 1.0);
    assert_true(r.swaps_per_s == 0.0);
    assert_close(r.kv_pool_bytes_base - r.kv_pool_bytes, r.cache_bytes_gpu, 1e-6);
    assert_close(r.cache_bytes_gpu, 500 * 2.0 * 13631488.0, 1e-12);
    /* rank 0, one adapter: nothing to load or compute, the base KV pool */
    o.adapters = 1;
    o.rank = 0;
    o.cache_adapters = 0;
    assert_int_equal(mp_lora_plan(m, &c, &p, &o, 30.0, 8, 64, &r, &d), MP_OK);
    assert_true(r.sgmv_s_per_step == 0.0);
    assert_true(r.kv_pool_bytes == r.kv_pool_bytes_base);
    assert_true(r.swaps_per_s == 0.0);
    /* one adapter of rank 16: resident, a small step cost (< 10% of a decode step of 64) */
    o.rank = 16;
    assert_int_equal(mp_lora_plan(m, &c, &p, &o, 30.0, 8, 64, &r, &d), MP_OK);
    assert_true(r.swaps_per_s == 0.0 && r.cache_adapters == 1);
    assert_true(r.sgmv_s_per_step > 0 && r.sgmv_s_per_step < 1e-3);
    assert_close(r.distinct_per_step, 1.0, 1e-12);
    /* the cache for the p99 */
    o.adapters = 500;
    o.zipf_s = 1.1;
    assert_int_equal(mp_lora_plan(m, &c, &p, &o, 30.0, 8, 64, &r, &d), MP_OK);
    print_message("500 adapters zipf 1.1 rank 16: cache %lld for the p99 (hit %.4f), %.1f MiB each, load %.3f ms, "
                  "%.3f swaps/s per replica, SGMV %.3f ms per step (%.1f distinct of 64), KV pool %.2f -> %.2f GiB\n",
                  (long long)r.cache_for_slo, r.hit_frac, r.adapter_bytes_gpu / 1048576.0, r.load_s * 1e3, r.swaps_per_s,
                  r.sgmv_s_per_step * 1e3, r.distinct_per_step, r.kv_pool_bytes_base / 1073741824.0,
                  r.kv_pool_bytes / 1073741824.0);
    assert_true(r.cache_adapters == r.cache_for_slo);
    assert_true(1.0 - r.hit_frac <= 0.01 + 1e-12);
    double z[500], s = 0;
    for (int i = 0; i < 500; i++)
        s += (z[i] = pow(i + 1.0, -1.1));
    for (int i = 0; i < 500; i++)
        z[i] /= s;
    assert_true(1.0 - mp_lora_che_hit(z, 500, r.cache_for_slo - 1) > 0.01);
    /* bad input */
    o.adapters = 0;
    assert_int_equal(mp_lora_plan(m, &c, &p, &o, 30.0, 8, 64, &r, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "adapters = 0"));
}

static void run_steps(mp_lora_sim *s, int64_t nreq, mp_lora_counters *cnt)
{
    for (int64_t i = 0; i < nreq; i++) {
        int64_t tok = 1;
        mp_lora_sim_step_s(s, (int)(i % 2), &i, &tok, 1);
    }
    mp_lora_sim_counters(s, cnt);
}

static void test_sim(void **state)
{
    (void)state;
    mp_cluster c;
    mp_infer_plan p;
    const mp_model *m;
    setup_job(&c, &p, &m);
    mp_lora_opts o;
    mp_lora_result r;
    mp_lora_sim *s;
    mp_lora_counters cnt;
    mp_diag d = {0};
    mp_lora_opts_init(&o);
    o.adapters = 500;
    /* all resident: no loads ever */
    o.cache_adapters = 500;
    o.max_cache_frac = 0.5;
    assert_int_equal(mp_lora_plan(m, &c, &p, &o, 30.0, 2, 64, &r, &d), MP_OK);
    assert_int_equal(mp_lora_sim_create(m, &c, &p, &o, &r, 2, &s, &d), MP_OK);
    run_steps(s, 20000, &cnt);
    assert_int_equal(cnt.loads, 0);
    assert_true(cnt.load_s == 0.0);
    mp_lora_sim_destroy(s);
    /* LRU of 50 under Zipf 1.1: the measured miss ratio against Che's (independent requests,
     * each replica sees every other one) */
    o.cache_adapters = 50;
    assert_int_equal(mp_lora_plan(m, &c, &p, &o, 30.0, 2, 64, &r, &d), MP_OK);
    assert_int_equal(mp_lora_sim_create(m, &c, &p, &o, &r, 2, &s, &d), MP_OK);
    run_steps(s, 200000, &cnt);
    double miss = (double)cnt.loads / (double)cnt.lookups;
    print_message("LRU 50 of 500, zipf 1.1: simulated miss %.4f, Che %.4f; %lld loads, %.3f s loading\n", miss,
                  1.0 - r.hit_frac, (long long)cnt.loads, cnt.load_s);
    assert_true(fabs(miss - (1.0 - r.hit_frac)) < 0.02);
    assert_close(cnt.load_s, cnt.loads * r.load_s, 1e-9);
    /* the draw: deterministic, the top adapter's share as Zipf's p_1 */
    int64_t top = 0;
    for (int64_t i = 0; i < 100000; i++) {
        assert_true(mp_lora_sim_adapter(s, i) == mp_lora_sim_adapter(s, i));
        top += mp_lora_sim_adapter(s, i) == 0;
    }
    double h = 0;
    for (int i = 0; i < 500; i++)
        h += pow(i + 1.0, -1.1);
    assert_close(top / 100000.0, 1.0 / h, 0.03);
    mp_lora_sim_destroy(s);
    mp_lora_sim_destroy(NULL);
}

static double hook(void *ctx, int replica, const int64_t *reqs, const int64_t *tokens, size_t n)
{
    return mp_lora_sim_step_s(ctx, replica, reqs, tokens, n);
}

/* serve llama3-8b on 2 x H100 (dp 2) at 20/s with adapters o (NULL: none) into r. */
static void serve(const mp_lora_opts *o, mp_serve_result *r, mp_lora_counters *cnt)
{
    mp_cluster c;
    mp_infer_plan p;
    const mp_model *m;
    mp_diag d = {0};
    assert_int_equal(mp_cluster_from_node(g_cat, "dgx-h100", 2, &c, &d), MP_OK);
    mp_infer_plan_init(&p);
    m = mp_catalog_model(g_cat, "llama3-8b");
    mp_serve_opts so;
    mp_serve_opts_init(&so);
    so.plan = p;
    so.plan.dp = 2;
    so.rate_per_s = 20.0;
    so.requests = 400;
    mp_lora_sim *s = NULL;
    if (o) {
        mp_lora_result lr;
        assert_int_equal(mp_lora_plan(m, &c, &so.plan, o, 20.0, 2, 64, &lr, &d), MP_OK);
        assert_int_equal(mp_lora_sim_create(m, &c, &so.plan, o, &lr, 2, &s, &d), MP_OK);
        so.plan.kv_frac = lr.kv_frac;
        so.replica_hook = hook;
        so.hook_ctx = s;
    }
    assert_int_equal(mp_serve_run(m, &c, &so, r, &d), MP_OK);
    assert_true(r->feasible);
    memset(cnt, 0, sizeof *cnt);
    if (s)
        mp_lora_sim_counters(s, cnt);
    mp_lora_sim_destroy(s);
}

static void test_serve_limits(void **state)
{
    (void)state;
    mp_serve_result *base = malloc(sizeof *base), *r = malloc(sizeof *r);
    assert_non_null(base);
    assert_non_null(r);
    mp_lora_counters cnt;
    serve(NULL, base, &cnt);
    mp_lora_opts o;
    mp_lora_opts_init(&o);
    o.adapters = 1;
    o.rank = 0;
    serve(&o, r, &cnt);
    assert_true(r->tpot_s.p99 == base->tpot_s.p99 && r->ttft_s.p99 == base->ttft_s.p99);
    assert_true(r->kv_blocks == base->kv_blocks);
    assert_int_equal(cnt.loads, 0);
    mp_serve_result_free(r);
    o.rank = 16;
    serve(&o, r, &cnt);
    print_message("one rank-16 adapter: TPOT p99 %.3f ms (base %.3f), TTFT p99 %.2f ms (base %.2f)\n", r->tpot_s.p99 * 1e3,
                  base->tpot_s.p99 * 1e3, r->ttft_s.p99 * 1e3, base->ttft_s.p99 * 1e3);
    assert_int_equal(cnt.loads, 0);
    assert_true(r->tpot_s.mean > base->tpot_s.mean && r->tpot_s.mean < 1.15 * base->tpot_s.mean);
    mp_serve_result_free(r);
    o.adapters = 200;
    o.cache_adapters = 200;
    o.max_cache_frac = 0.5;
    serve(&o, r, &cnt);
    assert_int_equal(cnt.loads, 0);
    assert_true(r->kv_blocks < base->kv_blocks);
    mp_serve_result_free(r);
    o.cache_adapters = 20;
    serve(&o, r, &cnt);
    assert_true(cnt.loads > 0 && cnt.load_s > 0);
    print_message("200 adapters, 20 resident: %lld swaps for %lld requests, TTFT p99 %.2f ms\n", (long long)cnt.loads,
                  (long long)r->requests, r->ttft_s.p99 * 1e3);
    mp_serve_result_free(r);
    mp_serve_result_free(base);
    free(r);
    free(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_che),
        cmocka_unit_test(test_limits_closed_form),
        cmocka_unit_test(test_sim),
        cmocka_unit_test(test_serve_limits),
    };
    return cmocka_run_group_tests(tests, catalog_setup, catalog_teardown);
}
