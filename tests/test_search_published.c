/* tests/test_search_published.c — every published run in ../shared/validation/runs.csv that
 * states a full plan (non-MoE, with model dims; tp, pp, micro_batch, global_batch, num_gpus
 * given) is a plan of the search space for its job: the enumeration visits it (and so the search
 * evaluates it). The ranks of a few of them are in README.md (bench/rank_published.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"
#include "runs_csv.h"

#ifndef MESHPLAN_VALIDATION_DIR
#define MESHPLAN_VALIDATION_DIR "../shared/validation"
#endif

typedef struct {
    const mp_plan *want;
    int found;
} find_ctx;

static int same_plan(const mp_plan *p, const mp_plan *q)
{
    return p->tp == q->tp && p->pp == q->pp && p->vpp == q->vpp && p->dp == q->dp &&
           p->cp == q->cp && p->ep == q->ep && p->sp == q->sp && p->mb == q->mb &&
           p->gb == q->gb && p->seq == q->seq && p->zero == q->zero && p->hsdp == q->hsdp &&
           p->recompute == q->recompute && p->precision == q->precision &&
           p->flash == q->flash && p->schedule == q->schedule;
}

static int find(void *ctx, const mp_plan *p)
{
    find_ctx *f = ctx;
    if (same_plan(p, f->want)) {
        f->found = 1;
        return 1; /* stop */
    }
    return 0;
}

static void test_every_published_plan_is_in_the_space(void **state)
{
    (void)state;
    size_t len = 0;
    char *text = slurp(MESHPLAN_VALIDATION_DIR "/runs.csv", &len);
    if (!text) {
        printf("# %s/runs.csv absent: skipped\n", MESHPLAN_VALIDATION_DIR);
        skip();
    }
    rc_row *rows;
    int n = rc_read(g_cat, text, len, &rows);
    assert_true(n >= 180);
    int full = 0, found = 0;
    for (int i = 0; i < n; i++) {
        rc_row *r = &rows[i];
        if (!r->full || r->moe || !r->dims)
            continue;
        full++;
        if (!r->ok)
            fail_msg("%s: the published plan cannot be formed: %s", r->id, r->why);
        mp_search_opts o;
        mp_search_opts_init(&o);
        o.pin.gb = r->p.gb;
        o.pin.seq = r->p.seq;
        o.pin.precision = r->p.precision;
        o.pin.flash = r->p.flash;
        find_ctx fc = {&r->p, 0};
        mp_diag d = {0};
        assert_int_equal(mp_search_enumerate(&r->m, r->gpus, &o, find, &fc, NULL, &d), MP_OK);
        if (!fc.found) {
            char s[512];
            mp_plan_format(&r->p, s, sizeof s);
            fail_msg("%s: published plan %s on %lld GPUs is not in the search space", r->id, s,
                     (long long)r->gpus);
        }
        found++;
    }
    printf("# %d published runs state a full plan; all %d are in the search space\n", full, found);
    /* 188 rows: 6 MoE, 2 without dims, 13 without a micro-batch (Megatron 2021 Table 1, Llama 3). */
    assert_int_equal(full, 167);
    free(rows);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_published_plan_is_in_the_space),
    };
    return cmocka_run_group_tests(tests, catalog_setup, catalog_teardown);
}
