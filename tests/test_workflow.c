/* tests/test_workflow.c — the multi-LLM workflow planner (include/meshplan/workflow.h,
 * src/workflow/):
 *   - golden: Erlang C by hand (M/M/1: P(wait) = rho; c = 2, a = 1: B = 1/5, C = 1/3);
 *   - parsing: both examples; an unknown LLM, a dependency on a later call, a duplicate id, an
 *     unknown model each refused with the field named;
 *   - differential: one LLM, one call, one GPU, no SLO: the best rate = the best of the inference
 *     model's requests/s over the batches (infer.h, batch / e2e);
 *   - property: more GPUs never lower the best throughput (4..32 GPUs, with and without an SLO);
 *   - the 4-LLM agent on 16 GPUs: under 1 s of CPU time, beats the equal split and one replica
 *     per LLM, every allocation within its budget and SLO; the fewest GPUs for a rate within the
 *     SLO;
 *   - placement: three TP-4 groups on two 6-GPU nodes: one group split, priced > 0. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "test_util.h"

#include "meshplan/meshplan.h"
#include "meshplan/workflow.h"
#include "workflow/wf_internal.h"

static mp_workflow g_w;
static mp_wf_result g_res;

static void load(const char *name, mp_workflow *w)
{
    char path[512];
    size_t len = 0;
    mp_diag d = {0};
    snprintf(path, sizeof path, "%s/examples/workflows/%s", MESHPLAN_SOURCE_DIR, name);
    char *text = slurp(path, &len);
    assert_non_null(text);
    mp_status st = mp_workflow_parse(g_cat, text, len, name, w, &d);
    if (st != MP_OK)
        fail_msg("%s: %s", name, d.text);
    free(text);
}

static void h100(int64_t n, mp_cluster *c)
{
    mp_diag d = {0};
    assert_int_equal(mp_cluster_from_node(g_cat, "dgx-h100", n, c, &d), MP_OK);
}

static void test_erlang_c(void **state)
{
    (void)state;
    assert_close(mp_wf_erlang_c(1, 0.5), 0.5, 1e-12);
    assert_close(mp_wf_erlang_c(2, 1.0), 1.0 / 3.0, 1e-12);
    assert_true(mp_wf_erlang_c(4, 4.0) == 1.0);
    assert_true(mp_wf_erlang_c(4, 0.0) == 0.0);
    /* large c: P(wait) falls with c at a fixed load per server, stays in [0, 1] */
    double prev = 1.0;
    for (int64_t c = 16; c <= 16384; c *= 4) {
        double C = mp_wf_erlang_c(c, 0.9 * (double)c);
        assert_true(C >= 0 && C <= prev);
        prev = C;
    }
}

static void bad(const char *text, const char *needle)
{
    mp_workflow w;
    mp_diag d = {0};
    mp_status st = mp_workflow_parse(g_cat, text, strlen(text), "t.json", &w, &d);
    assert_int_equal(st, MP_ERR_INPUT);
    if (!strstr(d.text, needle))
        fail_msg("expected \"%s\" in: %s", needle, d.text);
}

static void test_parse(void **state)
{
    (void)state;
    load("agent.json", &g_w);
    assert_int_equal(g_w.nllms, 4);
    assert_int_equal(g_w.ncalls, 5);
    assert_int_equal(g_w.call[2].fanout, 3);
    assert_int_equal(g_w.call[3].repeat, 2);
    assert_int_equal(g_w.call[4].deps[0], 3);
    mp_workflow rag;
    load("rag.json", &rag);
    assert_int_equal(rag.nllms, 3);
    const char *head = "{\"llms\": [{\"name\": \"a\", \"model\": \"llama3-8b\"}], \"calls\": [";
    char buf[512];
    snprintf(buf, sizeof buf, "%s{\"id\": \"x\", \"llm\": \"b\", \"in_tokens\": 10, \"out_tokens\": 5}]}", head);
    bad(buf, "llm");
    snprintf(buf, sizeof buf, "%s{\"id\": \"x\", \"llm\": \"a\", \"in_tokens\": 10, \"out_tokens\": 5, "
             "\"after\": [\"y\"]}, {\"id\": \"y\", \"llm\": \"a\", \"in_tokens\": 1, \"out_tokens\": 1}]}", head);
    bad(buf, "after");
    snprintf(buf, sizeof buf, "%s{\"id\": \"x\", \"llm\": \"a\", \"in_tokens\": 10, \"out_tokens\": 5}, "
             "{\"id\": \"x\", \"llm\": \"a\", \"in_tokens\": 1, \"out_tokens\": 1}]}", head);
    bad(buf, "id");
    bad("{\"llms\": [{\"name\": \"a\", \"model\": \"nope-9b\"}], \"calls\": [{\"id\": \"x\", \"llm\": \"a\", "
        "\"in_tokens\": 1, \"out_tokens\": 1}]}", "model");
    bad("{\"llms\": [{\"name\": \"a\", \"model\": \"llama3-8b\"}], \"calls\": [{\"id\": \"x\", \"llm\": \"a\", "
        "\"in_tokens\": 0, \"out_tokens\": 1}]}", "in_tokens");
}

static void test_single_llm_matches_infer(void **state)
{
    (void)state;
    const char *t = "{\"llms\": [{\"name\": \"a\", \"model\": \"llama3-8b\"}], \"calls\": [{\"id\": \"x\", "
                    "\"llm\": \"a\", \"in_tokens\": 1024, \"out_tokens\": 256}]}";
    mp_workflow w;
    mp_diag d = {0};
    assert_int_equal(mp_workflow_parse(g_cat, t, strlen(t), "t", &w, &d), MP_OK);
    mp_cluster c;
    h100(8, &c);
    mp_wf_opts o;
    mp_wf_opts_init(&o);
    o.gpus = 1;
    assert_int_equal(mp_workflow_plan(&w, &c, &o, &g_res, &d), MP_OK);
    /* the inference model on one GPU, the best over the batches the planner tries */
    mp_cluster one = c;
    one.num_gpus = 1;
    one.gpus_per_node = 1;
    one.tier[0].domain_gpus = 1;
    double best = 0;
    for (int64_t b = 1; b <= 256; b *= 2) {
        mp_infer_plan p;
        mp_infer_result r;
        mp_infer_plan_init(&p);
        p.batch = b;
        p.in = 1024;
        p.out = 256;
        if (mp_infer_estimate(&w.llm[0].model, &one, &p, &r, &d) == MP_OK && r.feasible && r.requests_per_s > best)
            best = r.requests_per_s;
    }
    assert_true(g_res.best.feasible);
    assert_close(g_res.best.requests_per_s, best, 1e-4);
    /* one LLM: the equal split is the whole budget too */
    assert_close(g_res.equal_split.requests_per_s, best, 1e-4);
}

static double best_rate(const mp_workflow *w, int64_t gpus, double slo)
{
    mp_cluster c;
    mp_wf_opts o;
    mp_diag d = {0};
    h100(gpus > 8 ? (gpus + 7) / 8 * 8 : 8, &c);
    mp_wf_opts_init(&o);
    o.gpus = gpus;
    o.slo_e2e_p99_s = slo;
    assert_int_equal(mp_workflow_plan(w, &c, &o, &g_res, &d), MP_OK);
    if (g_res.best.feasible) {
        assert_true(g_res.best.gpus_used <= (double)gpus + 1e-9);
        if (slo > 0)
            assert_true(g_res.best.e2e_p99_s <= slo * (1 + 1e-9));
    }
    return g_res.best.feasible ? g_res.best.requests_per_s : 0.0;
}

static void test_more_gpus_never_lower(void **state)
{
    (void)state;
    mp_workflow rag;
    load("rag.json", &rag);
    const mp_workflow *ws[] = {&g_w, &rag};
    const double slos[] = {0, 20.0, 12.0};
    for (int k = 0; k < 2; k++)
        for (int s = 0; s < 3; s++) {
            double prev = 0;
            for (int64_t g = 4; g <= 32; g++) {
                double r = best_rate(ws[k], g, slos[s]);
                if (r < prev * (1 - 1e-6))
                    fail_msg("%s, slo %g: %lld GPUs give %.6g requests/s, %lld gave %.6g", ws[k]->name, slos[s],
                             (long long)g, r, (long long)(g - 1), prev);
                prev = r > prev ? r : prev;
            }
            assert_true(prev > 0);
        }
}

static void test_agent_beats_baselines(void **state)
{
    (void)state;
    const double slos[] = {0, 20.0};
    for (int s = 0; s < 2; s++) {
        clock_t t0 = clock();
        double r = best_rate(&g_w, 16, slos[s]);
        double cpu_s = (double)(clock() - t0) / CLOCKS_PER_SEC;
        print_message("agent, 16 GPUs, slo %g s: %.3f requests/s, equal split %.3f (%.2fx), one replica %.3f; %.3f s CPU, %lld estimates\n",
                      slos[s], r, g_res.equal_split.requests_per_s, r / g_res.equal_split.requests_per_s,
                      g_res.one_replica.requests_per_s, cpu_s, (long long)g_res.evaluations);
        assert_true(cpu_s < 1.0);
        assert_true(r > 1.2 * g_res.equal_split.requests_per_s);
        assert_true(r > g_res.one_replica.requests_per_s);
        assert_int_equal(g_res.best.split_groups, 0);
    }
    /* the fewest GPUs for a rate within the SLO */
    mp_cluster c;
    mp_wf_opts o;
    mp_diag d = {0};
    h100(16, &c);
    mp_wf_opts_init(&o);
    o.gpus = 16;
    o.rate_per_s = 1.0;
    o.slo_e2e_p99_s = 30.0;
    assert_int_equal(mp_workflow_plan(&g_w, &c, &o, &g_res, &d), MP_OK);
    assert_true(g_res.best.feasible);
    assert_true(g_res.best.gpus_used < 16);
    assert_true(g_res.best.e2e_p99_s <= 30.0 * (1 + 1e-9));
    assert_true(g_res.best.requests_per_s >= 1.0);
    /* a rate over what 16 GPUs serve: an answer, not an error */
    o.rate_per_s = 1000.0;
    assert_int_equal(mp_workflow_plan(&g_w, &c, &o, &g_res, &d), MP_OK);
    assert_false(g_res.best.feasible);
    assert_non_null(strstr(g_res.best.reason, "needs more than 16 GPUs"));
}

static void test_split_placement(void **state)
{
    (void)state;
    mp_cluster c;
    h100(16, &c);
    c.gpus_per_node = 6; /* nodes of 6 GPUs */
    c.tier[0].domain_gpus = 6;
    wf_llm_opts *lo = calloc(MP_WF_MAX_LLMS, sizeof *lo);
    assert_non_null(lo);
    for (int l = 0; l < g_w.nllms; l++) {
        lo[l].nopts = 1;
        lo[l].opt[0].tp = 1;
        lo[l].opt[0].frac = 0.25;
        lo[l].opt[0].gpus = 0.25;
    }
    lo[1].opt[0].tp = 4; /* the planner, llama3-70b fp8 */
    lo[1].opt[0].frac = 1.0;
    lo[1].opt[0].gpus = 4;
    lo[1].opt[0].batch = 64; /* all-reduces big enough for the scale-out bandwidth to show */
    wf_choice ch = {{0}, {1, 3, 1, 1}};
    mp_wf_alloc a;
    memset(&a, 0, sizeof a);
    wf_place(&g_w, &c, 14, lo, &ch, &a); /* nodes of 6, 6 and 2 GPUs */
    assert_int_equal(a.split_groups, 1);
    assert_true(a.split_cost_s > 0);
    assert_non_null(strstr(a.llm[1].placement, "n0:g4-5,n1:g4-5"));
    /* three quarter-shares share one GPU */
    assert_non_null(strstr(a.llm[0].placement, "n2:g0(0.25)"));
    assert_non_null(strstr(a.llm[3].placement, "n2:g0(0.25)"));
    assert_close(a.fragmentation_frac, 1.0, 1e-12); /* the one free GPU is in a used node */
    free(lo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_erlang_c),
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_single_llm_matches_infer),
        cmocka_unit_test(test_more_gpus_never_lower),
        cmocka_unit_test(test_agent_beats_baselines),
        cmocka_unit_test(test_split_placement),
    };
    return cmocka_run_group_tests(tests, catalog_setup, catalog_teardown);
}
