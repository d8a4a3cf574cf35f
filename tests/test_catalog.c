/* tests/test_catalog.c — the built-in catalog (the data/ JSON files, embedded at build time): it loads, it
 * holds every key DESIGN.md promises, every entry names its source and keys are unique; user
 * files override and add entries; broken files are rejected with the field (or line) named and
 * leave the catalog unchanged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "meshplan/catalog.h"

static mp_catalog *g_cat;

static int setup_cat(void **state)
{
    (void)state;
    mp_diag d = {0};
    return mp_catalog_create(&g_cat, &d) == MP_OK ? 0 : -1;
}

static int teardown_cat(void **state)
{
    (void)state;
    mp_catalog_destroy(g_cat);
    g_cat = NULL;
    return 0;
}

static void assert_diag_has(const mp_diag *d, const char *word)
{
    if (!strstr(d->text, word))
        fail_msg("diag does not mention \"%s\":\n%s", word, d->text);
}

static void test_loads(void **state)
{
    (void)state;
    mp_catalog *c = NULL;
    mp_diag d = {0};
    assert_int_equal(mp_catalog_create(&c, &d), MP_OK);
    assert_non_null(c);
    assert_int_equal(d.count, 0);
    assert_true(mp_catalog_gpu_count(c) > 0);
    assert_true(mp_catalog_link_count(c) > 0);
    assert_true(mp_catalog_node_count(c) > 0);
    assert_true(mp_catalog_model_count(c) > 0);
    mp_catalog_destroy(c);
    mp_catalog_destroy(NULL); /* accepted */
}

/* DESIGN.md "Catalog keys" (stable; others rely on them). */
static void test_design_keys(void **state)
{
    (void)state;
    static const char *const gpus[] = {
        "a100-sxm4-40gb", "a100-sxm4-80gb", "a100-pcie-80gb", "h100-sxm5-80gb", "h100-pcie-80gb",
        "h100-sxm-96gb-500w", "h800-sxm5-80gb", "h200-sxm-141gb", "gh200", "b200", "b300",
        "gb200", "gb300", "mi300x", "mi325x", "l40s", "rtx4090", "v100-sxm2-32gb"};
    static const char *const links[] = {
        "nvlink2", "nvlink3", "nvlink4", "nvlink5", "pcie4", "pcie5", "xgmi", "ib-hdr-200",
        "ib-ndr-400", "ib-xdr-800", "roce-100", "roce-200", "roce-400", "eth-25", "eth-100",
        "eth-400", "efa-v2", "efa-v3", "wan-10", "wan-100"};
    static const char *const nodes[] = {"dgx-a100", "dgx-h100", "hgx-h200", "dgx-b200",
                                        "gb200-nvl72", "mi300x-8", "l40s-pcie-8", "rtx4090-pcie-8"};
    static const char *const models[] = {
        "gpt-1.7b", "gpt-3.6b", "gpt-7.5b", "gpt-18.4b", "gpt-39.1b", "gpt-76.1b", "gpt-145.6b",
        "gpt-310.1b", "gpt-529.6b", "gpt-1t", "gpt3-175b", "llama2-7b", "llama2-13b",
        "llama2-70b", "llama3-8b", "llama3-70b", "llama3-405b", "mpt-7b", "mpt-30b", "mpt-70b",
        "mixtral-8x7b", "deepseek-v3"};
    for (size_t i = 0; i < sizeof gpus / sizeof gpus[0]; i++)
        if (!mp_catalog_gpu(g_cat, gpus[i]))
            fail_msg("gpu %s missing", gpus[i]);
    for (size_t i = 0; i < sizeof links / sizeof links[0]; i++)
        if (!mp_catalog_link(g_cat, links[i]))
            fail_msg("link %s missing", links[i]);
    for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++) {
        const mp_node *n = mp_catalog_node(g_cat, nodes[i]);
        if (!n)
            fail_msg("node %s missing", nodes[i]);
        /* A node's GPU and links resolve. */
        if (!mp_catalog_gpu(g_cat, n->gpu) || !mp_catalog_link(g_cat, n->scaleup_link) ||
            !mp_catalog_link(g_cat, n->scaleout_link))
            fail_msg("node %s names a gpu or link not in the catalog", nodes[i]);
    }
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++)
        if (!mp_catalog_model(g_cat, models[i]))
            fail_msg("model %s missing", models[i]);
    /* Lookups are exact. */
    assert_null(mp_catalog_gpu(g_cat, "H100-SXM5-80GB"));
    assert_null(mp_catalog_model(g_cat, "nonexistent"));
    /* The usual node of an H100 SXM is a DGX H100-like 8-GPU node. */
    const mp_node *n = mp_catalog_node_for_gpu(g_cat, "h100-sxm5-80gb");
    assert_non_null(n);
    assert_int_equal(n->gpus_per_node, 8);
}

/* Every entry has a source; keys are unique within each kind; numbers are sane. */
static void test_entries_sourced_unique(void **state)
{
    (void)state;
    size_t n = mp_catalog_gpu_count(g_cat);
    for (size_t i = 0; i < n; i++) {
        const mp_gpu *g = mp_catalog_gpu_at(g_cat, i);
        if (!g->source[0])
            fail_msg("gpu %s has no source", g->key);
        assert_true(g->memory_bytes > 0 && g->mem_bw_Bps > 0);
        assert_true(g->peak_flops_per_s[MP_DT_BF16] > 0 || g->peak_flops_per_s[MP_DT_FP16] > 0);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(mp_catalog_gpu_at(g_cat, j)->key, g->key))
                fail_msg("gpu key %s twice", g->key);
    }
    n = mp_catalog_link_count(g_cat);
    for (size_t i = 0; i < n; i++) {
        const mp_link *l = mp_catalog_link_at(g_cat, i);
        if (!l->source[0])
            fail_msg("link %s has no source", l->key);
        assert_true(l->bw_Bps > 0);
        assert_true(l->efficiency_frac > 0 && l->efficiency_frac <= 1);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(mp_catalog_link_at(g_cat, j)->key, l->key))
                fail_msg("link key %s twice", l->key);
    }
    n = mp_catalog_node_count(g_cat);
    for (size_t i = 0; i < n; i++) {
        const mp_node *x = mp_catalog_node_at(g_cat, i);
        if (!x->source[0])
            fail_msg("node %s has no source", x->key);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(mp_catalog_node_at(g_cat, j)->key, x->key))
                fail_msg("node key %s twice", x->key);
    }
    n = mp_catalog_model_count(g_cat);
    for (size_t i = 0; i < n; i++) {
        const mp_model *m = mp_catalog_model_at(g_cat, i);
        if (!m->source[0])
            fail_msg("model %s has no source", m->key);
        mp_diag d = {0};
        if (mp_model_check(m, &d) != MP_OK)
            fail_msg("model %s: %s", m->key, d.text);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(mp_catalog_model_at(g_cat, j)->key, m->key))
                fail_msg("model key %s twice", m->key);
    }
    assert_null(mp_catalog_gpu_at(g_cat, mp_catalog_gpu_count(g_cat)));
}

/* Units converted once at load: the H100 SXM has 80 GiB = 85,899,345,920 bytes and NVLink 4 is
 * 450 GB/s per direction per GPU = 4.5e11 B/s (18 links x 25 GB/s). */
static void test_units(void **state)
{
    (void)state;
    const mp_gpu *g = mp_catalog_gpu(g_cat, "h100-sxm5-80gb");
    assert_non_null(g);
    assert_true(g->memory_bytes == 85899345920.0);
    assert_true(g->peak_flops_per_s[MP_DT_BF16] == 989e12);
    const mp_link *l = mp_catalog_link(g_cat, "nvlink4");
    assert_non_null(l);
    assert_true(l->bw_Bps == 450e9);
    /* ib-ndr-400: 400 Gb/s = 400 * 1.25e8 = 5e10 B/s */
    assert_true(mp_catalog_link(g_cat, "ib-ndr-400")->bw_Bps == 5e10);
}

static const char user_json[] =
    "{\n"
    "  \"gpus\": [\n"
    "    {\"key\": \"h100-sxm5-80gb\", \"name\": \"H100 (test override)\",\n"
    "     \"memory_bytes\": 1e11, \"mem_bw_Bps\": 3.35e12,\n"
    "     \"peak_flops_per_s\": {\"bf16\": 1e15}, \"source\": \"test\"},\n"
    "    {\"key\": \"test-gpu\", \"memory_bytes\": 2e10, \"mem_bw_Bps\": 1e12,\n"
    "     \"peak_flops_per_s\": {\"bf16\": 1e14, \"fp8\": 2e14}, \"source\": \"test\"}\n"
    "  ],\n"
    "  \"models\": [\n"
    "    {\"key\": \"tiny\", \"layers_count\": 2, \"hidden_count\": 64, \"heads_count\": 4,\n"
    "     \"ffn_hidden_count\": 256, \"vocab_count\": 1000, \"source\": \"test\"}\n"
    "  ]\n"
    "}\n";

static void test_merge_override_and_add(void **state)
{
    (void)state;
    mp_catalog *c = NULL;
    mp_diag d = {0};
    assert_int_equal(mp_catalog_create(&c, &d), MP_OK);
    size_t ngpus = mp_catalog_gpu_count(c), nmodels = mp_catalog_model_count(c);
    assert_int_equal(mp_catalog_merge_json(c, user_json, strlen(user_json), "user.json", &d), MP_OK);
    assert_int_equal(d.count, 0);
    /* one replaced, one added */
    assert_int_equal(mp_catalog_gpu_count(c), ngpus + 1);
    assert_int_equal(mp_catalog_model_count(c), nmodels + 1);
    const mp_gpu *g = mp_catalog_gpu(c, "h100-sxm5-80gb");
    assert_non_null(g);
    assert_true(g->memory_bytes == 1e11);
    assert_string_equal(g->name, "H100 (test override)");
    const mp_gpu *t = mp_catalog_gpu(c, "test-gpu");
    assert_non_null(t);
    assert_true(t->peak_flops_per_s[MP_DT_FP8] == 2e14);
    const mp_model *m = mp_catalog_model(c, "tiny");
    assert_non_null(m);
    /* defaults of absent fields: kv_heads = heads, head_dim = hidden/heads = 16 */
    assert_int_equal(m->kv_heads, 4);
    assert_int_equal(m->head_dim, 16);
    /* Other entries untouched. */
    assert_non_null(mp_catalog_gpu(c, "a100-sxm4-80gb"));
    mp_catalog_destroy(c);
}

/* A failing merge returns `want`, names `word` (and, when `origin`, the file) in the diag, and
 * leaves the catalog as it was. */
static void expect_rejected_(const char *json, mp_status want, const char *word, int origin)
{
    mp_catalog *c = NULL;
    mp_diag d = {0};
    assert_int_equal(mp_catalog_create(&c, &d), MP_OK);
    size_t ngpus = mp_catalog_gpu_count(c), nlinks = mp_catalog_link_count(c);
    size_t nmodels = mp_catalog_model_count(c);
    double mem = mp_catalog_gpu(c, "h100-sxm5-80gb")->memory_bytes;
    mp_status st = mp_catalog_merge_json(c, json, strlen(json), "user.json", &d);
    int unchanged = mp_catalog_gpu_count(c) == ngpus && mp_catalog_link_count(c) == nlinks &&
                    mp_catalog_model_count(c) == nmodels &&
                    mp_catalog_gpu(c, "h100-sxm5-80gb")->memory_bytes == mem &&
                    !mp_catalog_gpu(c, "test-gpu");
    mp_catalog_destroy(c);
    if (st != want)
        fail_msg("status %d (%s), expected %d; diag: %s", (int)st, mp_status_str(st), (int)want,
                 d.text);
    assert_true(d.count >= 1);
    if (word)
        assert_diag_has(&d, word);
    if (origin)
        assert_diag_has(&d, "user.json");
    assert_true(unchanged);
}
#define expect_rejected(json, want, word) expect_rejected_((json), (want), (word), 1)

static void test_malformed_json(void **state)
{
    (void)state;
    /* missing comma on line 3 */
    expect_rejected("{\"gpus\": [\n"
                    "  {\"key\": \"test-gpu\", \"memory_bytes\": 2e10\n"
                    "   \"mem_bw_Bps\": 1e12}\n"
                    "]}\n",
                    MP_ERR_PARSE, "line 3");
}

static void test_wrong_type(void **state)
{
    (void)state;
    expect_rejected("{\"gpus\": [{\"key\": \"test-gpu\", \"memory_bytes\": \"80GB\","
                    " \"mem_bw_Bps\": 1e12, \"peak_flops_per_s\": {\"bf16\": 1e14},"
                    " \"source\": \"test\"}]}",
                    MP_ERR_INPUT, "memory_bytes");
    /* The offending entry is named too. */
    expect_rejected("{\"gpus\": [{\"key\": \"test-gpu\", \"memory_bytes\": \"80GB\","
                    " \"mem_bw_Bps\": 1e12, \"peak_flops_per_s\": {\"bf16\": 1e14},"
                    " \"source\": \"test\"}]}",
                    MP_ERR_INPUT, "test-gpu");
    /* Missing source. */
    expect_rejected("{\"gpus\": [{\"key\": \"test-gpu\", \"memory_bytes\": 2e10,"
                    " \"mem_bw_Bps\": 1e12, \"peak_flops_per_s\": {\"bf16\": 1e14}}]}",
                    MP_ERR_INPUT, "source");
    /* A negative number. */
    expect_rejected("{\"links\": [{\"key\": \"x\", \"kind\": \"scaleout\", \"bw_Bps\": -1,"
                    " \"latency_s\": 1e-6, \"efficiency_frac\": 0.9, \"source\": \"t\"}]}",
                    MP_ERR_INPUT, "bw_Bps");
    /* A model whose kv_heads does not divide heads (mp_model_check's message names the entry,
     * not the file). */
    expect_rejected_("{\"models\": [{\"key\": \"m\", \"layers_count\": 2, \"hidden_count\": 64,"
                     " \"heads_count\": 4, \"kv_heads_count\": 3, \"ffn_hidden_count\": 256,"
                     " \"vocab_count\": 1000, \"source\": \"t\"}]}",
                     MP_ERR_INPUT, "kv_heads", 0);
}

static void test_unknown_top_level(void **state)
{
    (void)state;
    expect_rejected("{\"gpus\": [], \"clusters\": []}", MP_ERR_INPUT, "clusters");
    /* Not an object at all. */
    expect_rejected("[1, 2]", MP_ERR_INPUT, NULL);
}

static void test_duplicate_keys(void **state)
{
    (void)state;
    /* The same member twice in one object (jansson JSON_REJECT_DUPLICATES). */
    expect_rejected("{\"gpus\": [{\"key\": \"test-gpu\", \"memory_bytes\": 2e10,"
                    " \"memory_bytes\": 3e10, \"mem_bw_Bps\": 1e12,"
                    " \"peak_flops_per_s\": {\"bf16\": 1e14}, \"source\": \"t\"}]}",
                    MP_ERR_PARSE, "duplicate");
}

/* --model FILE in the catalog schema. */
/* Issue 15 defect 4: a rate, size or time outside its physical range (src/catalog/bounds.h) is
 * refused when the file is read, naming the field, the value and the range — not accepted and
 * failing later in a message that names no field. Each bound's edges are accepted. */
static void test_physical_bounds(void **state)
{
    (void)state;
    static const struct { const char *json, *word; } bad[] = {
        {"{\"links\": [{\"key\": \"test-nic\", \"kind\": \"scaleout\", \"bw_Bps\": 1e-300, "
         "\"latency_s\": 5e-6, \"efficiency_frac\": 0.9, \"source\": \"t\"}]}", "bw_Bps = 1e-300"},
        {"{\"links\": [{\"key\": \"test-nic\", \"kind\": \"scaleout\", \"bw_Bps\": 5e10, "
         "\"latency_s\": 2, \"efficiency_frac\": 0.9, \"source\": \"t\"}]}", "seconds in [0, 1]"},
        {"{\"gpus\": [{\"key\": \"test-gpu\", \"memory_bytes\": 80e9, \"mem_bw_Bps\": 3.35e12, "
         "\"peak_flops_per_s\": {\"bf16\": 1e-300}, \"source\": \"t\"}]}", "peak_flops_per_s.bf16 = 1e-300"},
        {"{\"gpus\": [{\"key\": \"test-gpu\", \"memory_bytes\": 80e9, \"mem_bw_Bps\": 3.35e12, "
         "\"peak_flops_per_s\": {\"bf16\": 2e18}, \"source\": \"t\"}]}", "FLOP/s in [1e9, 1e18]"},
        {"{\"gpus\": [{\"key\": \"test-gpu\", \"memory_bytes\": 5e7, \"mem_bw_Bps\": 3.35e12, "
         "\"peak_flops_per_s\": {\"bf16\": 989e12}, \"source\": \"t\"}]}", "bytes in [1e8, 1e13]"},
        {"{\"gpus\": [{\"key\": \"test-gpu\", \"memory_bytes\": 80e9, \"mem_bw_Bps\": 1e16, "
         "\"peak_flops_per_s\": {\"bf16\": 989e12}, \"source\": \"t\"}]}", "mem_bw_Bps = 10000000000000000.0"},
        /* a measured eager-decode power above the board's TDP */
        {"{\"gpus\": [{\"key\": \"test-gpu\", \"memory_bytes\": 80e9, \"mem_bw_Bps\": 3.35e12, "
         "\"peak_flops_per_s\": {\"bf16\": 989e12}, \"tdp_W\": 400, \"eager_decode_W\": 450, \"source\": \"t\"}]}",
         "at most the GPU's tdp_W"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_rejected(bad[i].json, MP_ERR_INPUT, bad[i].word);
    /* The edges of each range are physical and accepted. */
    mp_catalog *c = NULL;
    mp_diag d = {0};
    assert_int_equal(mp_catalog_create(&c, &d), MP_OK);
    const char *edges = "{\"gpus\": [{\"key\": \"test-gpu\", \"memory_bytes\": 1e8, \"mem_bw_Bps\": 1e15, "
                        "\"peak_flops_per_s\": {\"bf16\": 1e9, \"fp8\": 1e18}, \"source\": \"t\"}], "
                        "\"links\": [{\"key\": \"test-nic\", \"kind\": \"wan\", \"bw_Bps\": 1e6, "
                        "\"latency_s\": 1, \"efficiency_frac\": 1, \"source\": \"t\"}]}";
    if (mp_catalog_merge_json(c, edges, strlen(edges), "edges.json", &d) != MP_OK)
        fail_msg("edges refused: %s", d.text);
    mp_catalog_destroy(c);
}

static void test_model_from_catalog_json(void **state)
{
    (void)state;
    const char *j = "{\"key\": \"tiny\", \"layers_count\": 2, \"hidden_count\": 64,"
                    " \"heads_count\": 4, \"kv_heads_count\": 2, \"ffn_hidden_count\": 256,"
                    " \"glu\": true, \"vocab_count\": 1000, \"norm\": \"rmsnorm\", \"source\": \"t\"}";
    mp_model m;
    mp_diag d = {0};
    assert_int_equal(mp_model_from_catalog_json(j, strlen(j), &m, &d), MP_OK);
    assert_string_equal(m.key, "tiny");
    assert_int_equal(m.kv_heads, 2);
    assert_int_equal(m.glu, 1);
    assert_int_equal(m.rmsnorm, 1);
    const char *bad = "{\"key\": \"tiny\", \"layers_count\": \"two\"}";
    mp_diag_clear(&d);
    assert_int_equal(mp_model_from_catalog_json(bad, strlen(bad), &m, &d), MP_ERR_INPUT);
    assert_diag_has(&d, "layers_count");
    const char *broken = "{\"key\": ";
    mp_diag_clear(&d);
    assert_int_equal(mp_model_from_catalog_json(broken, strlen(broken), &m, &d), MP_ERR_PARSE);
    assert_diag_has(&d, "line");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loads),
        cmocka_unit_test(test_design_keys),
        cmocka_unit_test(test_entries_sourced_unique),
        cmocka_unit_test(test_units),
        cmocka_unit_test(test_merge_override_and_add),
        cmocka_unit_test(test_malformed_json),
        cmocka_unit_test(test_wrong_type),
        cmocka_unit_test(test_unknown_top_level),
        cmocka_unit_test(test_duplicate_keys),
        cmocka_unit_test(test_model_from_catalog_json),
        cmocka_unit_test(test_physical_bounds),
    };
    return cmocka_run_group_tests(tests, setup_cat, teardown_cat);
}
