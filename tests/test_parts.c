/* tests/test_parts.c — the step-time and memory tables (include/meshplan/parts.h): they index
 * the structs one-to-one, the parts in the step add up to step_s and the memory parts to the
 * total on real plans, and predict's JSON and text writers show every row. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "test_util.h"

#include "meshplan/meshplan.h"

typedef struct {
    mp_model m;
    mp_cluster c;
    mp_plan p;
    mp_estimate e;
} job;

static job *make_job(const char *model, const char *gpu, int64_t gpus, const char *plan)
{
    job *j = calloc(1, sizeof *j);
    assert_non_null(j);
    mp_diag d = {0};
    const mp_model *m = mp_catalog_model(g_cat, model);
    if (!m)
        fail_msg("catalog model %s missing", model);
    j->m = *m;
    if (mp_cluster_from_catalog(g_cat, gpu, gpus, 0, NULL, &j->c, &d) != MP_OK)
        fail_msg("cluster: %s", d.text);
    mp_plan_init_default(&j->p);
    if (mp_plan_parse(plan, &j->p, &d) != MP_OK || mp_plan_resolve(&j->p, &j->m, gpus, &d) != MP_OK)
        fail_msg("plan \"%s\": %s", plan, d.text);
    if (mp_estimate_plan(&j->m, &j->c, &j->p, NULL, &j->e, &d) != MP_OK)
        fail_msg("estimate \"%s\": %s", plan, d.text);
    return j;
}

/* Dense with a pipeline, MoE with EP, ZeRO-3 with pp > 1 (issue 15's defect 1 plan), FSDP2 and
 * CP: every part is nonzero in at least one of them. */
static const struct {
    const char *model, *gpu;
    int64_t gpus;
    const char *plan;
} plans[] = {
    {"llama3-70b", "h100-sxm5-80gb", 1024, "tp=8,pp=4,mb=1,gb=512,seq=8192,recompute=selective"},
    {"mixtral-8x7b", "h100-sxm5-80gb", 64, "tp=2,pp=4,ep=8,gb=64,seq=4096"},
    {"mixtral-8x7b", "h100-pcie-80gb", 256,
     "tp=8,pp=8,cp=2,ep=1,mb=1,gb=32,seq=8192,zero=3,recompute=full,vpp=2,schedule=zb"},
    {"mixtral-8x7b", "h100-sxm5-80gb", 8, "zero=3,ep=8,fsdp=2,gb=64,seq=4096"},
    {"llama3-8b", "h100-sxm5-80gb", 64, "tp=2,cp=4,mb=1,gb=64,seq=32768,zero=2"},
    {"deepseek-v3", "h100-sxm5-80gb", 1024, "tp=1,pp=16,ep=64,mb=1,gb=1024,seq=4096,zero=1"},
};
#define NPLANS (sizeof plans / sizeof plans[0])

static job *plan_job(size_t i)
{
    return make_job(plans[i].model, plans[i].gpu, plans[i].gpus, plans[i].plan);
}

/* Rows and fields are one-to-one (the static assertions in src/estimate/parts.c say so at build
 * time; this reads it back): a distinct value in every field comes back through its row. Keys are
 * unique and every row says what it is. */
static void test_tables_index_the_structs(void **state)
{
    (void)state;
    mp_time t;
    double *tv = (double *)&t;
    for (size_t i = 0; i < sizeof t / sizeof(double); i++)
        tv[i] = 1.0 + (double)i;
    assert_int_equal(sizeof t / sizeof(double), MP_TIME_PART_COUNT);
    for (int k = 0; k < MP_TIME_PART_COUNT; k++) {
        assert_true(mp_time_part_s(&t, (mp_time_part)k) == 1.0 + k);
        assert_true(mp_time_parts[k].key[0] && mp_time_parts[k].label[0] && mp_time_parts[k].desc[0]);
        assert_true((mp_time_parts[k].kind == MP_TIME_KIND_COMM) == (mp_time_parts[k].group[0] != 0) ||
                    mp_time_parts[k].kind == MP_TIME_KIND_BESIDE);
        for (int q = 0; q < k; q++) {
            assert_string_not_equal(mp_time_parts[k].key, mp_time_parts[q].key);
            assert_string_not_equal(mp_time_parts[k].label, mp_time_parts[q].label);
        }
    }
    assert_true(t.ep_comm == mp_time_part_s(&t, MP_TIME_ep_comm));
    assert_true(mp_time_part_s(&t, MP_TIME_PART_COUNT) == 0.0);
    mp_memory m;
    double *mv = (double *)&m;
    for (size_t i = 0; i < sizeof m / sizeof(double); i++)
        mv[i] = 10.0 + (double)i;
    assert_int_equal(sizeof m / sizeof(double), MP_MEMORY_PART_COUNT);
    int totals = 0, caps = 0;
    for (int k = 0; k < MP_MEMORY_PART_COUNT; k++) {
        assert_true(mp_memory_part_bytes(&m, (mp_memory_part)k) == 10.0 + k);
        assert_true(mp_memory_parts[k].key[0] && mp_memory_parts[k].label[0] && mp_memory_parts[k].desc[0]);
        totals += mp_memory_parts[k].kind == MP_MEM_KIND_TOTAL;
        caps += mp_memory_parts[k].kind == MP_MEM_KIND_CAPACITY;
        for (int q = 0; q < k; q++)
            assert_string_not_equal(mp_memory_parts[k].key, mp_memory_parts[q].key);
    }
    assert_int_equal(totals, 1);
    assert_int_equal(caps, 1);
    assert_true(m.allocator_margin == mp_memory_part_bytes(&m, MP_MEM_allocator_margin));
}

/* On real plans the parts in the step add up to step_s (the estimator's step is their sum:
 * src/estimate/), the kinds partition them, and the memory parts add up to the total. */
static void test_parts_add_up(void **state)
{
    (void)state;
    int nonzero[MP_TIME_PART_COUNT] = {0};
    for (size_t i = 0; i < NPLANS; i++) {
        job *j = plan_job(i);
        const mp_estimate *e = &j->e;
        assert_close(mp_time_step_sum_s(&e->time), e->step_s, 1e-12);
        double kinds = mp_time_kind_s(&e->time, MP_TIME_KIND_COMPUTE) + mp_time_kind_s(&e->time, MP_TIME_KIND_COMM) +
                       mp_time_kind_s(&e->time, MP_TIME_KIND_WAIT) + mp_time_kind_s(&e->time, MP_TIME_KIND_UPDATE);
        assert_close(kinds, e->step_s, 1e-12);
        double mem = 0.0;
        for (int k = 0; k < MP_MEMORY_PART_COUNT; k++)
            if (mp_memory_parts[k].kind == MP_MEM_KIND_PART)
                mem += mp_memory_part_bytes(&e->memory, (mp_memory_part)k);
        assert_close(mem, e->memory.total, 1e-12);
        for (int k = 0; k < MP_TIME_PART_COUNT; k++)
            nonzero[k] |= mp_time_part_s(&e->time, (mp_time_part)k) > 0;
        /* The compare writer's tiers: TP's is the estimate's tp_tier, EP records none. */
        assert_int_equal(mp_time_part_tier(e, MP_TIME_tp_comm), e->tp_tier);
        assert_int_equal(mp_time_part_tier(e, MP_TIME_dp_comm_exposed), e->dp_tier);
        assert_int_equal(mp_time_part_tier(e, MP_TIME_ep_comm), -1);
        assert_int_equal(mp_time_part_tier(e, MP_TIME_compute), -1);
        free(j);
    }
    for (int k = 0; k < MP_TIME_PART_COUNT; k++)
        if (!nonzero[k])
            fail_msg("no plan here has a nonzero %s: the sums above do not test it", mp_time_parts[k].key);
}

static int near(double got, double want)
{
    return fabs(got - want) <= 1e-7 * fmax(fabs(want), 1e-300) + 1e-300;
}

static void check_memory_object(json_t *mem, const mp_memory *m)
{
    assert_non_null(mem);
    for (int k = 0; k < MP_MEMORY_PART_COUNT; k++) {
        json_t *v = json_object_get(mem, mp_memory_parts[k].key);
        if (!v)
            fail_msg("memory_bytes has no %s", mp_memory_parts[k].key);
        assert_true(near(json_number_value(v), mp_memory_part_bytes(m, (mp_memory_part)k)));
    }
}

/* predict --json: every row's key, with its value, in time_s / memory_bytes (and each stage). */
static void test_json_writer_has_every_part(void **state)
{
    (void)state;
    for (size_t i = 0; i < NPLANS; i++) {
        job *j = plan_job(i);
        char *txt = mp_report_estimate_json(&j->m, &j->c, &j->p, &j->e);
        assert_non_null(txt);
        json_error_t err;
        json_t *o = json_loads(txt, 0, &err);
        if (!o)
            fail_msg("predict JSON does not parse: %s", err.text);
        json_t *ts = json_object_get(o, "time_s");
        assert_non_null(ts);
        assert_int_equal(json_object_size(ts), MP_TIME_PART_COUNT);
        for (int k = 0; k < MP_TIME_PART_COUNT; k++) {
            json_t *v = json_object_get(ts, mp_time_parts[k].key);
            if (!v)
                fail_msg("time_s has no %s", mp_time_parts[k].key);
            assert_true(near(json_number_value(v), mp_time_part_s(&j->e.time, (mp_time_part)k)));
        }
        for (int k = 0; k < MP_TIME_DETAIL_COUNT; k++) {
            json_t *v = json_object_get(o, mp_time_details[k].key);
            if (!v)
                fail_msg("predict JSON has no %s", mp_time_details[k].key);
            assert_true(near(json_number_value(v), mp_time_detail_s(&j->e, (mp_time_detail)k)));
        }
        json_t *mem = json_object_get(o, "memory_bytes");
        check_memory_object(mem, &j->e.memory);
        json_t *stages = json_object_get(mem, "per_stage");
        assert_int_equal(json_array_size(stages), (size_t)j->e.nstages);
        for (size_t s = 0; s < json_array_size(stages); s++)
            check_memory_object(json_array_get(stages, s), &j->e.per_stage[s]);
        json_decref(o);
        free(txt);
        free(j);
    }
}

static char *text_report(const job *j)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    mp_report_estimate_text(f, &j->m, &j->c, &j->p, &j->e);
    fclose(f);
    return buf;
}

/* predict's text: a row per step part with its key and label, the parts beside the step, every
 * memory column or line, and the compute details that are nonzero. */
static void test_text_writer_has_every_part(void **state)
{
    (void)state;
    int detail_seen[MP_TIME_DETAIL_COUNT] = {0};
    for (size_t i = 0; i < NPLANS; i++) {
        job *j = plan_job(i);
        char *t = text_report(j);
        for (int k = 0; k < MP_TIME_PART_COUNT; k++) {
            char row[96];
            snprintf(row, sizeof row, "  %-16s ", mp_time_parts[k].key);
            if (mp_time_parts[k].kind == MP_TIME_KIND_BESIDE)
                snprintf(row, sizeof row, "(%s ", mp_time_parts[k].key);
            if (!strstr(t, row) || !strstr(t, mp_time_parts[k].label))
                fail_msg("predict text lacks the %s row:\n%s", mp_time_parts[k].key, t);
        }
        for (int k = 0; k < MP_MEMORY_PART_COUNT; k++)
            if (!strstr(t, mp_memory_parts[k].label))
                fail_msg("predict text lacks memory's %s:\n%s", mp_memory_parts[k].label, t);
        for (int k = 0; k < MP_TIME_DETAIL_COUNT; k++)
            if (mp_time_detail_s(&j->e, (mp_time_detail)k) > 0) {
                detail_seen[k] = 1;
                if (!strstr(t, mp_time_details[k].key))
                    fail_msg("predict text lacks %s:\n%s", mp_time_details[k].key, t);
            }
        free(t);
        free(j);
    }
    for (int k = 0; k < MP_TIME_DETAIL_COUNT; k++)
        assert_true(detail_seen[k]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tables_index_the_structs),
        cmocka_unit_test(test_parts_add_up),
        cmocka_unit_test(test_json_writer_has_every_part),
        cmocka_unit_test(test_text_writer_has_every_part),
    };
    return cmocka_run_group_tests(tests, catalog_setup, catalog_teardown);
}
