/* src/import/resolve.c — an import's plan keys as a plan string, their consistency with the
 * file's lines named, and the resolved plan with every key's value and where it came from. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/import_internal.h"
#include "internal.h"

/* The plan keys an import lists, in this order (plan.h names them). */
#define IMP_PLAN_KEYS(X)                                                                       \
    X(tp) X(pp) X(vpp) X(dp) X(cp) X(ep) X(etp) X(sp) X(mb) X(gb) X(seq) X(zero) X(hsdp)       \
    X(fsdp) X(recompute) X(recompute_every) X(precision) X(flash) X(attn_kernel) X(schedule) X(cp_algo) X(fp8_comm)

/* The plan keys of the model's states: listed only where the file states them (so imports of
 * plain training configs list what they did before). */
#define IMP_STATE_KEYS(X) X(optimizer) X(finetune) X(lora_rank) X(lora_targets) X(offload) X(offload_device) \
    X(compile) /* torch.compile: listed only where the file turns it on, like the state keys */

static const char *const plan_keys[] = {
#define IMP_X_NAME(k) #k,
    IMP_PLAN_KEYS(IMP_X_NAME) IMP_STATE_KEYS(IMP_X_NAME)
#undef IMP_X_NAME
};
static const char *const state_keys[] = {
#define IMP_X_NAME(k) #k,
    IMP_STATE_KEYS(IMP_X_NAME)
#undef IMP_X_NAME
};
#define N_STATE_KEYS ((int)(sizeof state_keys / sizeof state_keys[0]))
#define N_PLAN_KEYS ((int)(sizeof plan_keys / sizeof plan_keys[0]))

int mp_import_plan_string(const mp_import *imp, char *buf, size_t cap)
{
    size_t n = 0;
    if (cap)
        buf[0] = '\0';
    for (int k = 0; k < N_PLAN_KEYS; k++) {
        const mp_import_field *f = mp_import_get(imp, plan_keys[k]);
        if (!f || f->kind != MP_FIELD_PLAN || f->resolved)
            continue;
        int w = imp_fmt(buf + (n < cap ? n : cap), n < cap ? cap - n : 0, "%s%s=%s",
                         n ? "," : "", f->key, f->value);
        if (w > 0)
            n += (size_t)w;
    }
    return (int)n;
}

/* The value of plan key k of a resolved plan, as the plan string writes it. */
static void plan_value(const mp_plan *p, const char *k, char *v, size_t cap)
{
    long long x = 0;
    const char *s = NULL;
    if (!strcmp(k, "tp")) x = p->tp;
    else if (!strcmp(k, "pp")) x = p->pp;
    else if (!strcmp(k, "vpp")) x = p->vpp;
    else if (!strcmp(k, "dp")) x = p->dp;
    else if (!strcmp(k, "cp")) x = p->cp;
    else if (!strcmp(k, "ep")) x = p->ep;
    else if (!strcmp(k, "etp")) x = p->etp ? p->etp : p->tp;
    else if (!strcmp(k, "sp")) x = p->sp;
    else if (!strcmp(k, "mb")) x = p->mb;
    else if (!strcmp(k, "gb")) x = p->gb;
    else if (!strcmp(k, "seq")) x = p->seq;
    else if (!strcmp(k, "zero")) x = p->zero;
    else if (!strcmp(k, "hsdp")) x = p->hsdp;
    else if (!strcmp(k, "fsdp")) x = p->fsdp ? p->fsdp : 1;
    else if (!strcmp(k, "recompute")) s = mp_recompute_name(p->recompute);
    else if (!strcmp(k, "recompute_every")) x = p->recompute_every > 1 ? p->recompute_every : 1;
    else if (!strcmp(k, "precision")) s = mp_dtype_name(p->precision);
    else if (!strcmp(k, "flash")) x = p->flash;
    else if (!strcmp(k, "attn_kernel")) s = mp_attn_kernel_name(p->attn_kernel);
    else if (!strcmp(k, "schedule")) s = mp_schedule_name(p->schedule);
    else if (!strcmp(k, "cp_algo")) s = mp_cp_algo_name(p->cp_algo);
    else if (!strcmp(k, "fp8_comm")) x = p->fp8_comm;
    else if (!strcmp(k, "compile")) x = p->compile;
    else if (!strcmp(k, "optimizer")) s = mp_optimizer_name((mp_optimizer)p->optimizer);
    else if (!strcmp(k, "finetune")) s = mp_finetune_name((mp_finetune)p->finetune);
    else if (!strcmp(k, "lora_rank")) x = p->lora_rank > 0 ? p->lora_rank : 8;
    else if (!strcmp(k, "offload")) s = mp_offload_name((mp_offload)p->offload);
    else if (!strcmp(k, "offload_device")) s = p->offload_device == 1 ? "nvme" : "cpu";
    else if (!strcmp(k, "lora_targets")) {
        /* the plan's own spelling: the lora_targets key of its canonical string */
        char all[1024];
        mp_plan_format(p, all, sizeof all);
        const char *t = strstr(all, "lora_targets=");
        s = "q+v";
        if (t) {
            t += strlen("lora_targets=");
            imp_fmt(v, cap, "%.*s", (int)strcspn(t, ","), t);
            return;
        }
    }
    if (s)
        imp_fmt(v, cap, "%s", s);
    else
        imp_fmt(v, cap, "%lld", x);
}

/* "FILE:LINE:KEY" of a field read from the file, or its reason. */
static const char *from_of(const mp_import *imp, const char *key)
{
    const mp_import_field *f = mp_import_get(imp, key);
    return f ? f->from : "not stated";
}

static int64_t field_int(const mp_import *imp, const char *key, int64_t def)
{
    const mp_import_field *f = mp_import_get(imp, key);
    return f ? strtoll(f->value, NULL, 10) : def;
}

/* The file's degrees and batch against the GPU count, naming where each came from. */
static int check_consistent(const mp_import *imp, int64_t ngpus, mp_diag *diag)
{
    int64_t tp = field_int(imp, "tp", 1), pp = field_int(imp, "pp", 1), cp = field_int(imp, "cp", 1);
    int64_t mb = field_int(imp, "mb", 1), gb = field_int(imp, "gb", 0), dp = field_int(imp, "dp", 0);
    int bad = 0;
    if (ngpus > 0 && tp > 0 && pp > 0 && cp > 0 && ngpus % (tp * pp * cp) != 0) {
        mp_diag_add(diag, "%s: tp x pp x cp = %lld x %lld x %lld = %lld does not divide the %lld "
                    "GPUs (gpus: %s; tp: %s; pp: %s): expected a GPU count that is a multiple "
                    "of %lld (give --gpus)",
                    imp->file, (long long)tp, (long long)pp, (long long)cp,
                    (long long)(tp * pp * cp), (long long)ngpus, from_of(imp, "gpus"),
                    from_of(imp, "tp"), from_of(imp, "pp"), (long long)(tp * pp * cp));
        return 1;
    }
    if (dp <= 0 && ngpus > 0 && tp * pp * cp > 0)
        dp = ngpus / (tp * pp * cp);
    int64_t ep = field_int(imp, "ep", 1), etp = field_int(imp, "etp", tp);
    if (ep > 1 && dp > 0 && (tp * cp * dp) % (ep * etp) != 0) {
        mp_diag_add(diag, "%s = %lld: expert parallelism needs ep x etp = %lld to divide tp x cp "
                    "x dp = %lld on %lld GPUs (gpus: %s): expected more GPUs (give --gpus)",
                    from_of(imp, "ep"), (long long)ep, (long long)(ep * etp),
                    (long long)(tp * cp * dp), (long long)ngpus, from_of(imp, "gpus"));
        return 1;
    }
    if (gb > 0 && dp > 0 && mb > 0 && gb % (mb * dp) != 0) {
        mp_diag_add(diag, "%s = %lld: the global batch does not divide by micro-batch x DP = "
                    "%lld x %lld (mb: %s; dp = %lld GPUs / (tp x pp x cp)): expected a multiple "
                    "of %lld",
                    from_of(imp, "gb"), (long long)gb, (long long)mb, (long long)dp,
                    from_of(imp, "mb"), (long long)ngpus, (long long)(mb * dp));
        bad = 1;
    }
    return bad;
}

/* Defaults that need no model (mp_plan_resolve's, where they do not depend on it). */
static void resolve_without_model(mp_plan *p, int64_t ngpus)
{
    if (!p->tp) p->tp = 1;
    if (!p->pp) p->pp = 1;
    if (!p->cp) p->cp = 1;
    if (!p->ep) p->ep = 1;
    if (!p->vpp) p->vpp = 1;
    if (!p->mb) p->mb = 1;
    if (!p->dp && ngpus > 0) p->dp = ngpus / (p->tp * p->pp * p->cp);
    if (!p->dp) p->dp = 1;
    if (!p->gb) p->gb = p->mb * p->dp;
    if (p->sp < 0) p->sp = p->tp > 1;
    if (p->zero < 0) p->zero = p->hsdp ? 3 : 0;
    if (!p->schedule_given) p->schedule = p->vpp > 1 ? MP_SCHED_INTERLEAVED : MP_SCHED_1F1B;
}

mp_status mp_import_resolve(mp_import *imp, const mp_model *model, int64_t ngpus, mp_plan *p,
                            mp_diag *diag)
{
    char text[1024];
    mp_import_plan_string(imp, text, sizeof text);
    mp_plan_init_default(p);
    mp_status st = text[0] ? mp_plan_parse(text, p, diag) : MP_OK;
    if (st != MP_OK) {
        mp_diag_add(diag, "%s: the plan read (%s) does not parse", imp->file, text);
        return st;
    }
    if (check_consistent(imp, ngpus, diag))
        return MP_ERR_INPUT;
    if (model) {
        if (ngpus <= 0) {
            mp_diag_add(diag, "%s: the GPU count is stated nowhere: expected --gpus", imp->file);
            return MP_ERR_INPUT;
        }
        st = mp_plan_resolve(p, model, ngpus, diag);
        if (st != MP_OK)
            return st;
    } else {
        resolve_without_model(p, ngpus);
    }
    imp_kvs none = {0};
    imp_ctx c = {imp, &none, imp->file, diag, 0, NULL};
    for (int k = 0; k < N_PLAN_KEYS; k++) {
        char v[64];
        plan_value(p, plan_keys[k], v, sizeof v);
        const mp_import_field *f = mp_import_get(imp, plan_keys[k]);
        if (f) {
            if (f->kind == MP_FIELD_PLAN)
                mp_strlcpy(((mp_import_field *)f)->value, v, sizeof f->value);
            continue;
        }
        int state = 0;
        for (int i = 0; i < N_STATE_KEYS; i++)
            state |= !strcmp(plan_keys[k], state_keys[i]);
        if (state) /* not stated: not listed */
            continue;
        const char *why = "meshplan default (stated nowhere)";
        mp_import_origin o = MP_FROM_DEFAULT;
        if (!strcmp(plan_keys[k], "dp")) { why = "gpus / (tp x pp x cp)"; o = MP_FROM_DERIVED; }
        else if (!strcmp(plan_keys[k], "gb")) { why = "mb x dp (one micro-batch per step)"; o = MP_FROM_DERIVED; }
        else if (!strcmp(plan_keys[k], "etp")) { why = "= tp (Megatron-Core's default)"; o = MP_FROM_DERIVED; }
        else if (!strcmp(plan_keys[k], "seq") && model) why = "the model's default sequence length";
        else if (!strcmp(plan_keys[k], "sp")) why = "meshplan default: on when tp > 1";
        else if (!strcmp(plan_keys[k], "schedule")) why = "1f1b, interleaved when vpp > 1";
        imp_set(&c, MP_FIELD_PLAN, plan_keys[k], v, NULL, o, why);
        mp_import_field *nf = (mp_import_field *)mp_import_get(imp, plan_keys[k]);
        if (nf)
            nf->resolved = 1;
    }
    return MP_OK;
}
