/* fuzz/fuzz_plan.c — libFuzzer harness for plan strings: mp_plan_parse, then mp_plan_resolve
 * and mp_estimate_plan on a few catalog models and GPU counts (and on the GPU count the plan's
 * own degrees give), with the checks of fuzz_common.h. A plan that parses must also survive the
 * round trip mp_plan_format -> mp_plan_parse -> mp_plan_resolve unchanged. The same text parsed
 * as an islands plan (mp_islands_plan_parse) must give its keys across islands back unchanged.
 *
 * Input: the plan string itself ("tp=8,pp=4,mb=1,..."). Seeds: fuzz/seeds/plan/.
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_round_trip(const mp_plan *p, const mp_model *m, int64_t gpus)
{
    char buf[1024];
    int n = mp_plan_format(p, buf, sizeof buf);
    FZ_CHECK(n > 0 && (size_t)n < sizeof buf, "format returned %d", n);
    mp_plan q;
    mp_plan_init_default(&q);
    mp_diag d = {0};
    mp_status st = mp_plan_parse(buf, &q, &d);
    FZ_CHECK(st == MP_OK, "formatted plan \"%s\" does not parse: %s", buf, d.text);
    st = mp_plan_resolve(&q, m, gpus, &d);
    FZ_CHECK(st == MP_OK, "formatted plan \"%s\" does not resolve: %s", buf, d.text);
    FZ_CHECK(q.tp == p->tp && q.pp == p->pp && q.vpp == p->vpp && q.dp == p->dp && q.cp == p->cp &&
                 q.ep == p->ep && q.sp == p->sp && q.mb == p->mb && q.gb == p->gb &&
                 q.seq == p->seq && q.zero == p->zero && q.hsdp == p->hsdp &&
                 q.recompute == p->recompute && q.precision == p->precision &&
                 q.flash == p->flash && q.schedule == p->schedule && q.optimizer == p->optimizer &&
                 q.finetune == p->finetune && q.lora_rank == p->lora_rank &&
                 q.lora_targets == p->lora_targets && q.offload == p->offload &&
                 q.offload_device == p->offload_device && q.opt_dtype == p->opt_dtype &&
                 q.no_master == p->no_master,
             "round trip changed the plan: \"%s\"", buf);
}

/* The same text as an islands plan (xsync.h): the outcome checks, and when it parses, its
 * canonical string parses back to the same keys across islands and the same plan string. */
static void check_islands_plan(const char *text)
{
    mp_islands_plan ip, iq;
    mp_islands_plan_init_default(&ip);
    mp_diag d = {0};
    mp_status st = mp_islands_plan_parse(text, &ip, &d);
    fz_check_outcome(st, &d, FZ_ST(MP_ERR_INPUT) | FZ_ST(MP_ERR_PARSE));
    if (st != MP_OK || ip.xsync.sync == MP_SYNC_NONE)
        return;
    char a[2048], b[2048];
    char xa[1024] = "", xb[1024] = "";
    size_t na = 0, nb = 0;
    mp_xsync_format(&ip.xsync, xa, sizeof xa, &na);
    mp_islands_plan_format(&ip, a, sizeof a);
    /* Only the keys across islands: the plan's unset fields ("not given") do not parse. */
    mp_islands_plan_init_default(&iq);
    mp_diag dq = {0};
    st = mp_islands_plan_parse(xa + 1, &iq, &dq);
    FZ_CHECK(st == MP_OK, "islands keys \"%s\" do not parse back: %s", xa + 1, dq.text);
    mp_xsync_format(&iq.xsync, xb, sizeof xb, &nb);
    FZ_CHECK(!strcmp(xa, xb), "islands keys \"%s\" format back as \"%s\"", xa, xb);
    iq.plan = ip.plan;
    mp_islands_plan_format(&iq, b, sizeof b);
    FZ_CHECK(!strcmp(a, b), "islands plan \"%s\" formats back as \"%s\"", a, b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 8192)
        return 0;
    const mp_catalog *cat = fz_catalog();
    char *text = fz_cstr(data, size);
    mp_plan p;
    mp_plan_init_default(&p);
    mp_diag d = {0};
    mp_status st = mp_plan_parse(text, &p, &d);
    fz_check_outcome(st, &d, FZ_ST(MP_ERR_INPUT) | FZ_ST(MP_ERR_PARSE));
    check_islands_plan(text);
    free(text);
    if (st != MP_OK)
        return 0;

    static const struct { const char *model, *gpu; int64_t gpus; } jobs[] = {
        {"llama3-70b", "h100-sxm5-80gb", 64},   {"gpt3-175b", "a100-sxm4-80gb", 1024},
        {"mixtral-8x7b", "h100-sxm5-80gb", 64}, {"llama2-7b", "a100-sxm4-80gb", 8},
        {"mpt-125m", "h100-sxm5-80gb", 16},
    };
    for (size_t i = 0; i < sizeof jobs / sizeof jobs[0]; i++) {
        const mp_model *m = mp_catalog_model(cat, jobs[i].model);
        FZ_CHECK(m != NULL, "catalog model %s", jobs[i].model);
        mp_plan r = p;
        if (mp_plan_resolve(&r, m, jobs[i].gpus, NULL) == MP_OK)
            check_round_trip(&r, m, jobs[i].gpus);
        fz_predict(m, jobs[i].gpu, jobs[i].gpus, &p);
    }
    /* The GPU count the plan's own degrees give, when they are all stated and it is a size
     * a cluster can have. */
    if (p.tp && p.pp && p.dp) {
        int64_t cp = p.cp ? p.cp : 1;
        double n = (double)p.tp * (double)p.pp * (double)p.dp * (double)cp;
        if (n <= (double)(1 << 24)) {
            const mp_model *m = mp_catalog_model(cat, "llama3-405b");
            fz_predict(m, "h100-sxm5-80gb", (int64_t)n, &p);
            fz_predict(m, "b200", (int64_t)n, &p);
        }
    }
    return 0;
}
