/* tests/test_plan_init.c — a plan used without mp_plan_init_default is caught (plan.h
 * init_magic): mp_plan_parse, mp_plan_resolve and mp_estimate_plan refuse it with MP_ERR_INPUT
 * and a message naming the field, instead of pricing it silently with flash = 0, sp = 0 and a
 * zeroed rank order. An initialised plan, and a copy of one, still work. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"

#include "meshplan/meshplan.h"

/* The default job of `meshplan predict`, hand-filled the way a caller who skipped
 * mp_plan_init_default would write it. */
static void fill_by_hand(mp_plan *p)
{
    memset(p, 0, sizeof *p);
    p->tp = 8;
    p->pp = 2;
    p->mb = 1;
    p->gb = 128;
    p->seq = 8192;
    p->zero = 1;
    p->recompute = MP_RC_SELECTIVE;
}

static void job(mp_model *m, mp_cluster *c)
{
    mp_diag d = {0};
    const mp_model *cm = mp_catalog_model(g_cat, "llama3-70b");
    assert_non_null(cm);
    *m = *cm;
    assert_int_equal(mp_cluster_from_catalog(g_cat, "h100-sxm5-80gb", 64, 0, NULL, c, &d), MP_OK);
}

static void test_uninitialised_refused(void **state)
{
    (void)state;
    mp_model m;
    mp_cluster c;
    job(&m, &c);
    mp_plan p;
    fill_by_hand(&p);
    mp_diag d = {0};
    assert_int_equal(mp_plan_check_init(&p, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "plan.init_magic = 0x00000000"));
    assert_non_null(strstr(d.text, "mp_plan_init_default"));
    mp_diag_clear(&d);
    assert_int_equal(mp_plan_parse("tp=8", &p, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "init_magic"));
    mp_diag_clear(&d);
    assert_int_equal(mp_plan_resolve(&p, &m, 64, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "init_magic"));
    assert_int_equal(p.dp, 0); /* nothing filled in */
    /* A plan that looks resolved (every degree set) but was never initialised. */
    p.dp = 4;
    p.cp = p.ep = p.vpp = 1;
    mp_estimate *e = malloc(sizeof *e);
    assert_non_null(e);
    mp_diag_clear(&d);
    assert_int_equal(mp_estimate_plan(&m, &c, &p, NULL, e, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "init_magic"));
    assert_int_equal(mp_plan_check_init(NULL, NULL), MP_ERR_INPUT);
    free(e);
}

static void test_initialised_and_copies_work(void **state)
{
    (void)state;
    mp_model m;
    mp_cluster c;
    job(&m, &c);
    mp_plan p, copy;
    mp_plan_init_default(&p);
    assert_int_equal(p.init_magic, MP_PLAN_INIT_MAGIC);
    mp_diag d = {0};
    assert_int_equal(mp_plan_parse("tp=8,pp=2,mb=1,gb=128,seq=8192,zero=1,recompute=selective", &p, &d),
                     MP_OK);
    copy = p; /* a copy of an initialised plan keeps the mark */
    assert_int_equal(mp_plan_resolve(&copy, &m, 64, &d), MP_OK);
    mp_estimate *e = malloc(sizeof *e);
    assert_non_null(e);
    assert_int_equal(mp_estimate_plan(&m, &c, &copy, NULL, e, &d), MP_OK);
    /* The same plan filled by hand with the defaults mp_plan_init_default writes is accepted and
     * priced identically once marked: the mark changes nothing else. */
    mp_plan hand;
    fill_by_hand(&hand);
    hand.sp = -1;
    hand.flash = 1;
    hand.stack = MP_STACK_DEFAULT; /* added with the stack profiles (meshplan/stack.h) */
    for (int i = 0; i < MP_DIM_COUNT; i++)
        hand.order[i] = (mp_dim)i;
    hand.init_magic = MP_PLAN_INIT_MAGIC;
    assert_int_equal(mp_plan_resolve(&hand, &m, 64, &d), MP_OK);
    mp_estimate *e2 = malloc(sizeof *e2);
    assert_non_null(e2);
    assert_int_equal(mp_estimate_plan(&m, &c, &hand, NULL, e2, &d), MP_OK);
    assert_true(e->mfu > 0.2 && e->mfu < 0.8);
    assert_close(e2->mfu, e->mfu, 1e-12);
    free(e);
    free(e2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uninitialised_refused),
        cmocka_unit_test(test_initialised_and_copies_work),
    };
    return cmocka_run_group_tests(tests, catalog_setup, catalog_teardown);
}
