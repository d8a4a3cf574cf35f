/* src/plan/plan.c — parse a plan string, fill its defaults, and check it can be formed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "meshplan/plan.h"

static const char *const sched_names[MP_SCHED_COUNT] = {"1f1b", "interleaved", "gpipe", "zb"};
static const char *const rc_names[MP_RC_COUNT] = {"none", "selective", "full"};
static const char *const cp_algo_names[MP_CP_ALGO_COUNT] = {"ring", "allgather"};

const char *mp_cp_algo_name(mp_cp_algo a) { return ((int)a >= 0 && a < MP_CP_ALGO_COUNT) ? cp_algo_names[a] : "?"; }
static const char *const attn_kernel_names[MP_ATTN_KERNEL_COUNT] = {"fa2", "fa3", "flex"};
const char *mp_attn_kernel_name(mp_attn_kernel k) { return ((int)k >= 0 && k < MP_ATTN_KERNEL_COUNT) ? attn_kernel_names[k] : "?"; }

static const char *const dim_names[MP_DIM_COUNT] = {"tp", "cp", "ep", "dp", "pp"};

const char *mp_dim_name(mp_dim d) { return ((int)d >= 0 && d < MP_DIM_COUNT) ? dim_names[d] : "?"; }

const char *mp_schedule_name(mp_schedule s) { return ((int)s >= 0 && s < MP_SCHED_COUNT) ? sched_names[s] : "?"; }
const char *mp_recompute_name(mp_recompute r) { return ((int)r >= 0 && r < MP_RC_COUNT) ? rc_names[r] : "?"; }

void mp_plan_init_default(mp_plan *p)
{
    memset(p, 0, sizeof *p);
    p->sp = -1;
    p->zero = -1;
    p->recompute = MP_RC_NONE;
    p->precision = MP_DT_BF16;
    p->flash = 1;
    p->schedule = MP_SCHED_1F1B;
    for (int i = 0; i < MP_DIM_COUNT; i++)
        p->order[i] = (mp_dim)i;
    p->order_listed = 0;
    p->init_magic = MP_PLAN_INIT_MAGIC;
}

mp_status mp_plan_check_init(const mp_plan *p, mp_diag *diag)
{
    if (p && p->init_magic == MP_PLAN_INIT_MAGIC)
        return MP_OK;
    if (!p)
        mp_diag_add(diag, "plan = NULL: expected a plan set up by mp_plan_init_default");
    else
        mp_diag_add(diag, "plan.init_magic = 0x%08x: expected 0x%08x: call mp_plan_init_default(&plan) "
                    "before setting fields or parsing (a plan filled by hand lacks the defaults "
                    "flash = 1, sp = -1 and the rank order)", (unsigned)p->init_magic,
                    (unsigned)MP_PLAN_INIT_MAGIC);
    return MP_ERR_INPUT;
}

/* order=tp-cp-ep-dp-pp: distinct dimension names joined by '-', innermost first; the ones not
 * named follow in the default order. */
static int parse_order(const char *val, mp_plan *p, mp_diag *diag)
{
    mp_dim ord[MP_DIM_COUNT];
    unsigned seen = 0;
    int n = 0;
    const char *s = val;
    while (*s) {
        const char *e = strchr(s, '-');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        int d = -1;
        for (int i = 0; i < MP_DIM_COUNT; i++)
            if (strlen(dim_names[i]) == len && !strncmp(s, dim_names[i], len))
                d = i;
        if (d < 0 || (seen & MP_DIM_BIT(d))) {
            mp_diag_add(diag, "plan.order = \"%s\": expected distinct names from tp, cp, ep, dp, pp "
                        "joined by '-', innermost first (e.g. tp-cp-ep-dp-pp)", val);
            return 0;
        }
        seen |= MP_DIM_BIT(d);
        ord[n++] = (mp_dim)d;
        s = e ? e + 1 : s + len;
        if (e && !*s) {
            mp_diag_add(diag, "plan.order = \"%s\": ends with '-'", val);
            return 0;
        }
    }
    if (n == 0) {
        mp_diag_add(diag, "plan.order = \"\": expected e.g. tp-cp-ep-dp-pp");
        return 0;
    }
    for (int i = 0; i < MP_DIM_COUNT; i++)
        if (!(seen & MP_DIM_BIT(i)))
            ord[n++] = (mp_dim)i;
    memcpy(p->order, ord, sizeof ord);
    p->order_listed = seen;
    return 1;
}

/* Largest accepted degree or batch: far beyond any cluster, small enough that products of a
 * few stay inside int64. */
#define MP_PLAN_MAX ((int64_t)1 << 24)

/* Largest global batch (the gb key's range; a derived gb = dp*mb must stay inside it too, so the
 * canonical plan string of a resolved plan always parses back). */
#define MP_PLAN_GB_MAX ((int64_t)1 << 30)

/* a*b for a, b >= 1, saturating at INT64_MAX (degrees up to 2^24 each: three of them overflow). */
static int64_t mul_sat(int64_t a, int64_t b)
{
    return a > INT64_MAX / b ? INT64_MAX : a * b;
}

static int parse_int(const char *key, const char *val, int64_t min, int64_t max, int64_t *out,
                     mp_diag *diag)
{
    char *end = NULL;
    errno = 0;
    long long x = strtoll(val, &end, 10);
    if (!val[0] || *end) {
        mp_diag_add(diag, "plan.%s = \"%s\": expected an integer", key, val);
        return 0;
    }
    if (errno == ERANGE) {
        mp_diag_add(diag, "plan.%s = %s: expected an integer in [%lld, %lld]", key, val,
                    (long long)min, (long long)max);
        return 0;
    }
    if (x < min || x > max) {
        mp_diag_add(diag, "plan.%s = %lld: expected an integer in [%lld, %lld]", key, x,
                    (long long)min, (long long)max);
        return 0;
    }
    *out = x;
    return 1;
}

/* A real number in [min, max]. */
static int parse_real(const char *key, const char *val, double min, double max, double *out,
                      mp_diag *diag)
{
    char *end = NULL;
    errno = 0;
    double x = strtod(val, &end);
    if (!val[0] || *end || errno == ERANGE || x != x) {
        mp_diag_add(diag, "plan.%s = \"%s\": expected a number", key, val);
        return 0;
    }
    if (x < min || x > max) {
        mp_diag_add(diag, "plan.%s = %g: expected a number in [%g, %g]", key, x, min, max);
        return 0;
    }
    *out = x;
    return 1;
}

int mp_plan_parse_enum(const char *key, const char *val, const char *const *names, int n, int *out,
                       mp_diag *diag)
{
    for (int i = 0; i < n; i++)
        if (strcmp(val, names[i]) == 0) {
            *out = i;
            return 1;
        }
    char list[128] = "";
    for (int i = 0; i < n; i++) {
        strncat(list, names[i], sizeof list - strlen(list) - 1);
        if (i + 1 < n)
            strncat(list, "|", sizeof list - strlen(list) - 1);
    }
    mp_diag_add(diag, "plan.%s = \"%s\": expected one of %s", key, val, list);
    return 0;
}

mp_status mp_plan_parse(const char *text, mp_plan *p, mp_diag *diag)
{
    if (mp_plan_check_init(p, diag) != MP_OK)
        return MP_ERR_INPUT;
    if (!text)
        return MP_OK;
    size_t n = strlen(text);
    if (n > 4096) {
        mp_diag_add(diag, "plan: %zu characters: expected at most 4096", n);
        return MP_ERR_INPUT;
    }
    char buf[4097];
    memcpy(buf, text, n + 1);
    int errors = 0, parse_errors = 0;
    unsigned seen = 0; /* bit i: known key i already given */
    for (char *tok = buf, *next; tok; tok = next) {
        next = strchr(tok, ',');
        if (next)
            *next++ = '\0';
        while (*tok == ' ')
            tok++;
        if (!*tok)
            continue;
        char *eq = strchr(tok, '=');
        if (!eq) {
            mp_diag_add(diag, "plan: \"%s\": expected key=value", tok);
            parse_errors++;
            continue;
        }
        *eq = '\0';
        char *key = tok, *val = eq + 1;
        for (char *e = key + strlen(key); e > key && e[-1] == ' '; e--)
            e[-1] = '\0';
        while (*val == ' ')
            val++;
        for (char *e = val + strlen(val); e > val && e[-1] == ' '; e--)
            e[-1] = '\0';
        int64_t x = 0;
        int ok = 1, e = 0;
        /* A key given twice is a mistake, not an override. */
        {
            static const char *const known[] = {"tp", "pp", "vpp", "dp", "cp", "ep", "mb", "gb", "seq",
                                                "hsdp", "sp", "flash", "zero", "recompute",
                                                "schedule", "precision", "etp", "cp_algo",
                                                "capacity_factor", "imbalance", "fp8_comm",
                                                "attn_kernel", "order", "doc_len", "fsdp"};
            int dup = 0;
            for (unsigned i = 0; i < sizeof known / sizeof known[0]; i++)
                if (!strcmp(key, known[i])) {
                    dup = (seen >> i) & 1u;
                    seen |= 1u << i;
                }
            if (dup) {
                mp_diag_add(diag, "plan: key \"%s\" given twice (second value \"%s\")", key, val);
                errors++;
                continue;
            }
        }
        if (!strcmp(key, "tp")) ok = parse_int(key, val, 1, MP_PLAN_MAX, &p->tp, diag);
        else if (!strcmp(key, "pp")) ok = parse_int(key, val, 1, MP_PLAN_MAX, &p->pp, diag);
        else if (!strcmp(key, "vpp")) ok = parse_int(key, val, 1, 4096, &p->vpp, diag);
        else if (!strcmp(key, "dp")) ok = parse_int(key, val, 1, MP_PLAN_MAX, &p->dp, diag);
        else if (!strcmp(key, "cp")) ok = parse_int(key, val, 1, MP_PLAN_MAX, &p->cp, diag);
        else if (!strcmp(key, "ep")) ok = parse_int(key, val, 1, MP_PLAN_MAX, &p->ep, diag);
        else if (!strcmp(key, "mb")) ok = parse_int(key, val, 1, MP_PLAN_MAX, &p->mb, diag);
        else if (!strcmp(key, "gb")) ok = parse_int(key, val, 1, MP_PLAN_GB_MAX, &p->gb, diag);
        else if (!strcmp(key, "seq")) ok = parse_int(key, val, 1, (int64_t)1 << 26, &p->seq, diag);
        else if (!strcmp(key, "hsdp")) ok = parse_int(key, val, 1, MP_PLAN_MAX, &p->hsdp, diag);
        else if (!strcmp(key, "sp")) { ok = parse_int(key, val, 0, 1, &x, diag); if (ok) p->sp = (int)x; }
        else if (!strcmp(key, "flash")) { ok = parse_int(key, val, 0, 1, &x, diag); if (ok) p->flash = (int)x; }
        else if (!strcmp(key, "zero")) { ok = parse_int(key, val, 0, 3, &x, diag); if (ok) p->zero = (int)x; }
        else if (!strcmp(key, "recompute")) { ok = mp_plan_parse_enum(key, val, rc_names, MP_RC_COUNT, &e, diag); if (ok) p->recompute = (mp_recompute)e; }
        else if (!strcmp(key, "schedule")) { ok = mp_plan_parse_enum(key, val, sched_names, MP_SCHED_COUNT, &e, diag); if (ok) { p->schedule = (mp_schedule)e; p->schedule_given = 1; } }
        else if (!strcmp(key, "precision")) {
            static const char *const pn[] = {"bf16", "fp16", "fp8"};
            ok = mp_plan_parse_enum(key, val, pn, 3, &e, diag);
            if (ok) p->precision = e == 0 ? MP_DT_BF16 : e == 1 ? MP_DT_FP16 : MP_DT_FP8;
        } else if (!strcmp(key, "etp")) ok = parse_int(key, val, 1, MP_PLAN_MAX, &p->etp, diag);
        else if (!strcmp(key, "cp_algo")) { ok = mp_plan_parse_enum(key, val, cp_algo_names, MP_CP_ALGO_COUNT, &e, diag); if (ok) p->cp_algo = (mp_cp_algo)e; }
        /* Capacity factors in use run 1.0-2.0 (Fedus et al. 2021 Table 1; Lepikhin et al. 2020
         * use 2); below 1 drops tokens even when balanced, which we still allow down to 0.1. */
        else if (!strcmp(key, "capacity_factor")) {
            double cf = 0;
            ok = parse_real(key, val, 0.0, 64.0, &cf, diag);
            if (ok && cf > 0 && cf < 0.1) {
                mp_diag_add(diag, "plan.capacity_factor = %g: expected 0 (dropless) or a number in [0.1, 64]", cf);
                ok = 0;
            }
            if (ok) p->moe_capacity_factor = cf;
        }
        else if (!strcmp(key, "imbalance")) ok = parse_real(key, val, 1.0, 64.0, &p->moe_imbalance, diag);
        else if (!strcmp(key, "fp8_comm")) { ok = parse_int(key, val, 0, 1, &x, diag); if (ok) p->fp8_comm = (int)x; }
        else if (!strcmp(key, "attn_kernel")) { ok = mp_plan_parse_enum(key, val, attn_kernel_names, MP_ATTN_KERNEL_COUNT, &e, diag); if (ok) p->attn_kernel = (mp_attn_kernel)e; }
        else if (!strcmp(key, "order")) ok = parse_order(val, p, diag);
        else if (!strcmp(key, "doc_len")) ok = parse_int(key, val, 1, (int64_t)1 << 40, &p->doc_len, diag);
        else if (!strcmp(key, "fsdp")) { ok = parse_int(key, val, 1, 2, &x, diag); if (ok) p->fsdp = (int)x; }
        else if (mp_xsync_parse_key(key, val, &p->xsync, &ok, diag)) { /* islands: xsync.h */ }
        else {
            mp_diag_add(diag, "plan: unknown key \"%s\" (value \"%s\"): expected one of tp, pp, vpp, "
                        "dp, cp, ep, etp, sp, mb, gb, seq, zero, hsdp, recompute, precision, flash, schedule, "
                        "cp_algo, capacity_factor, imbalance, fp8_comm, attn_kernel, order, doc_len, fsdp, sync, inner_steps, "
                        "compress, fragments, overlap, exchange, split, buckets, transport, ring",
                        key, val);
            ok = 0;
        }
        if (!ok)
            errors++;
    }
    if (parse_errors && !errors)
        return MP_ERR_PARSE;
    return (errors || parse_errors) ? MP_ERR_INPUT : MP_OK;
}

mp_status mp_plan_resolve(mp_plan *p, const mp_model *m, int64_t num_gpus, mp_diag *diag)
{
    int bad = 0;
#define FAIL(...) do { mp_diag_add(diag, __VA_ARGS__); bad++; } while (0)
    if (mp_plan_check_init(p, diag) != MP_OK)
        return MP_ERR_INPUT;
    if (num_gpus < 1 || num_gpus > MP_PLAN_MAX) {
        FAIL("gpus = %lld: expected an integer in [1, 2^24]", (long long)num_gpus);
        return MP_ERR_INPUT;
    }
    if (!p->tp) p->tp = 1;
    if (!p->pp) p->pp = 1;
    if (!p->cp) p->cp = 1;
    if (!p->ep) p->ep = 1;
    if (!p->vpp) p->vpp = 1;
    if (!p->seq) p->seq = m->seq_len;
    if (!p->mb) p->mb = 1;
    if (p->sp < 0) p->sp = p->tp > 1;
    if (p->zero < 0) p->zero = p->hsdp ? 3 : 0;
    if (!p->schedule_given)
        p->schedule = p->vpp > 1 ? MP_SCHED_INTERLEAVED : MP_SCHED_1F1B;
    /* Degrees: tp*cp*pp*dp == gpus (EP reuses DP*CP ranks, as in Megatron-Core). */
    int64_t model_par = mul_sat(mul_sat(p->tp, p->pp), p->cp);
    if (!p->dp) {
        if (num_gpus % model_par != 0) {
            FAIL("plan: tp*pp*cp = %lld*%lld*%lld = %lld does not divide gpus = %lld",
                 (long long)p->tp, (long long)p->pp, (long long)p->cp, (long long)model_par,
                 (long long)num_gpus);
        } else {
            p->dp = num_gpus / model_par;
        }
    } else if (mul_sat(model_par, p->dp) != num_gpus) {
        FAIL("plan: tp*pp*cp*dp = %lld*%lld*%lld*%lld = %.4g: expected the GPU count %lld",
             (long long)p->tp, (long long)p->pp, (long long)p->cp, (long long)p->dp,
             (double)p->tp * (double)p->pp * (double)p->cp * (double)p->dp, (long long)num_gpus);
    }
    if (!p->gb && p->dp) {
        if (p->dp * p->mb > MP_PLAN_GB_MAX)
            FAIL("plan.gb = dp*mb = %lld*%lld = %lld (derived): expected at most 2^30; give gb",
                 (long long)p->dp, (long long)p->mb, (long long)(p->dp * p->mb));
        else
            p->gb = p->dp * p->mb;
    }
    if (m->heads % p->tp)
        FAIL("plan.tp = %lld: must divide heads (%lld)", (long long)p->tp, (long long)m->heads);
    if (m->kv_heads % p->tp && p->tp % m->kv_heads)
        FAIL("plan.tp = %lld: must divide kv_heads (%lld) or be a multiple of it",
             (long long)p->tp, (long long)m->kv_heads);
    if (m->ffn_hidden % p->tp)
        FAIL("plan.tp = %lld: must divide ffn_hidden (%lld)", (long long)p->tp, (long long)m->ffn_hidden);
    if (p->pp > m->layers)
        FAIL("plan.pp = %lld: more pipeline stages than layers (%lld)", (long long)p->pp,
             (long long)m->layers);
    if (p->vpp > 1 && p->pp == 1)
        FAIL("plan.vpp = %lld: virtual stages need pp > 1", (long long)p->vpp);
    if (p->pp * p->vpp > m->layers)
        FAIL("plan: pp*vpp = %lld: more model chunks than layers (%lld)",
             (long long)(p->pp * p->vpp), (long long)m->layers);
    if (p->schedule == MP_SCHED_INTERLEAVED && p->vpp < 2)
        FAIL("plan.schedule = interleaved: needs vpp >= 2");
    if (p->cp > 1 && p->seq % (2 * p->cp))
        FAIL("plan.seq = %lld: must be divisible by 2*cp = %lld (causal load balancing)",
             (long long)p->seq, (long long)(2 * p->cp));
    if (p->seq > 0 && p->cp > p->seq)
        FAIL("plan.cp = %lld: larger than seq (%lld)", (long long)p->cp, (long long)p->seq);
    if (p->dp && p->gb % (p->mb * p->dp))
        FAIL("plan.gb = %lld: must be divisible by mb*dp = %lld*%lld = %lld", (long long)p->gb,
             (long long)p->mb, (long long)p->dp, (long long)(p->mb * p->dp));
    if (!p->etp) p->etp = m->moe_experts > 0 ? p->tp : 1;
    if (p->ep > 1) {
        if (m->moe_experts == 0)
            FAIL("plan.ep = %lld: the model has no experts", (long long)p->ep);
        else if (m->moe_experts % p->ep)
            FAIL("plan.ep = %lld: must divide the experts (%lld)", (long long)p->ep,
                 (long long)m->moe_experts);
    }
    if (p->etp > 1 && m->moe_experts == 0)
        FAIL("plan.etp = %lld: the model has no experts", (long long)p->etp);
    else if (m->moe_experts > 0 && m->moe_ffn_hidden > 0 && m->moe_ffn_hidden % p->etp)
        FAIL("plan.etp = %lld: must divide moe_ffn_hidden (%lld)", (long long)p->etp,
             (long long)m->moe_ffn_hidden);
    /* Megatron-Core's expert grid re-partitions the tp*cp*dp ranks of a stage as
     * etp x ep x expert-dp (parallel_state.initialize_model_parallel). */
    if (p->dp && (p->ep > 1 || p->etp > 1) && (p->tp * p->cp * p->dp) % (p->etp * p->ep))
        FAIL("plan: etp*ep = %lld*%lld = %lld must divide tp*cp*dp = %lld", (long long)p->etp,
             (long long)p->ep, (long long)(p->etp * p->ep), (long long)(p->tp * p->cp * p->dp));
    if (p->fp8_comm && p->precision != MP_DT_FP8)
        FAIL("plan.fp8_comm = 1: needs precision = fp8 (got %s)", mp_dtype_name(p->precision));
    if (p->fsdp == 2 && p->zero != 3)
        FAIL("plan.fsdp = 2: per-parameter sharding shards the parameters (zero = 3), got zero = %d",
             p->zero);
    if (p->hsdp) {
        if (p->dp && p->dp % p->hsdp)
            FAIL("plan.hsdp = %lld: must divide dp (%lld)", (long long)p->hsdp, (long long)p->dp);
        if (p->zero != 3)
            FAIL("plan.hsdp = %lld: HSDP shards parameters (zero = 3), got zero = %d",
                 (long long)p->hsdp, p->zero);
    }
    if (p->order_listed) {
        const int64_t deg[MP_DIM_COUNT] = {p->tp, p->cp, p->ep, p->dp, p->pp};
        for (int i = 0; i < MP_DIM_COUNT; i++)
            if (deg[i] > 1 && !(p->order_listed & MP_DIM_BIT(i)))
                FAIL("plan.order: %s = %lld is not placed: name every dimension of degree > 1",
                     dim_names[i], (long long)deg[i]);
    }
    if (p->sp > 0 && p->tp == 1)
        FAIL("plan.sp = 1: sequence parallelism needs tp > 1 (tp = 1)");
#undef FAIL
    return bad ? MP_ERR_INPUT : MP_OK;
}

int mp_plan_format(const mp_plan *p, char *buf, size_t cap)
{
    char hsdp[48] = "", extra[200] = "", order[48] = "";
    if (p->hsdp)
        snprintf(hsdp, sizeof hsdp, "hsdp=%lld,", (long long)p->hsdp);
    /* The later keys only when they differ from their defaults, so dense plans print as
     * before. */
    size_t n = 0;
    if (p->etp > 1 && p->etp != p->tp)
        n += (size_t)snprintf(extra + n, sizeof extra - n, ",etp=%lld", (long long)p->etp);
    else if (p->etp == 1 && p->tp > 1 && p->ep > 1)
        n += (size_t)snprintf(extra + n, sizeof extra - n, ",etp=1");
    if (p->cp_algo != MP_CP_RING && n < sizeof extra)
        n += (size_t)snprintf(extra + n, sizeof extra - n, ",cp_algo=%s", mp_cp_algo_name(p->cp_algo));
    if (p->moe_capacity_factor > 0 && n < sizeof extra)
        n += (size_t)snprintf(extra + n, sizeof extra - n, ",capacity_factor=%g", p->moe_capacity_factor);
    if (p->moe_imbalance > 0 && n < sizeof extra)
        n += (size_t)snprintf(extra + n, sizeof extra - n, ",imbalance=%g", p->moe_imbalance);
    if (p->fp8_comm && n < sizeof extra)
        n += (size_t)snprintf(extra + n, sizeof extra - n, ",fp8_comm=1");
    if (p->attn_kernel != MP_ATTN_FA2 && n < sizeof extra)
        n += (size_t)snprintf(extra + n, sizeof extra - n, ",attn_kernel=%s", mp_attn_kernel_name(p->attn_kernel));
    if (p->doc_len > 0 && n < sizeof extra)
        n += (size_t)snprintf(extra + n, sizeof extra - n, ",doc_len=%lld", (long long)p->doc_len);
    if (p->fsdp == 2 && n < sizeof extra)
        snprintf(extra + n, sizeof extra - n, ",fsdp=2");
    if (p->order_listed) /* written only when given, so default plans format as before */
        snprintf(order, sizeof order, ",order=%s-%s-%s-%s-%s", mp_dim_name(p->order[0]),
                 mp_dim_name(p->order[1]), mp_dim_name(p->order[2]), mp_dim_name(p->order[3]),
                 mp_dim_name(p->order[4]));
    char xs[256] = "";
    size_t xn = 0;
    mp_xsync_format(&p->xsync, xs, sizeof xs, &xn); /* empty for a one-cluster plan */
    return snprintf(buf, cap,
                    "tp=%lld,pp=%lld,vpp=%lld,dp=%lld,cp=%lld,ep=%lld,sp=%d,mb=%lld,gb=%lld,seq=%lld,"
                    "zero=%d,%srecompute=%s,precision=%s,flash=%d,schedule=%s%s%s%s",
                    (long long)p->tp, (long long)p->pp, (long long)p->vpp, (long long)p->dp,
                    (long long)p->cp, (long long)p->ep, p->sp, (long long)p->mb, (long long)p->gb,
                    (long long)p->seq, p->zero, hsdp, mp_recompute_name(p->recompute),
                    mp_dtype_name(p->precision), p->flash, mp_schedule_name(p->schedule), order, extra, xs);
}

const char *mp_plan_order_text(const mp_plan *p, char *buf, size_t cap)
{
    if (!p->order_listed)
        return "default";
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < MP_DIM_COUNT && n + 4 < cap; i++)
        if (p->order_listed & MP_DIM_BIT(p->order[i]))
            n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? "-" : "", mp_dim_name(p->order[i]));
    return buf;
}

/* ---- rank order: strides and groups ----------------------------------------------------- */

/* The order to use (the default when p->order is not a permutation, e.g. a zeroed plan) and the
 * size of each dimension in the rank layout. */
static void layout(const mp_plan *p, mp_dim ord[MP_DIM_COUNT], int64_t size[MP_DIM_COUNT])
{
    unsigned seen = 0;
    for (int i = 0; i < MP_DIM_COUNT; i++)
        if ((int)p->order[i] >= 0 && p->order[i] < MP_DIM_COUNT)
            seen |= MP_DIM_BIT(p->order[i]);
    for (int i = 0; i < MP_DIM_COUNT; i++)
        ord[i] = seen == (1u << MP_DIM_COUNT) - 1 ? p->order[i] : (mp_dim)i;
    int64_t ep = p->ep > 1 ? p->ep : 1, dp = p->dp > 1 ? p->dp : 1;
    size[MP_DIM_TP] = p->tp > 1 ? p->tp : 1;
    size[MP_DIM_CP] = p->cp > 1 ? p->cp : 1;
    size[MP_DIM_PP] = p->pp > 1 ? p->pp : 1;
    /* EP is carved out of DP (Megatron-Core expert layout); when it does not divide dp it is
     * folded (size 1) and mp_plan_group places EP groups inside the data group. */
    size[MP_DIM_EP] = dp % ep == 0 ? ep : 1;
    size[MP_DIM_DP] = dp / size[MP_DIM_EP];
}

int64_t mp_plan_stride(const mp_plan *p, mp_dim d)
{
    mp_dim ord[MP_DIM_COUNT];
    int64_t size[MP_DIM_COUNT];
    layout(p, ord, size);
    int64_t s = 1;
    for (int i = 0; i < MP_DIM_COUNT && ord[i] != d; i++)
        s *= size[ord[i]];
    return s;
}

void mp_plan_group(const mp_plan *p, unsigned dims, mp_group *inner, mp_group *outer)
{
    mp_dim ord[MP_DIM_COUNT];
    int64_t size[MP_DIM_COUNT];
    layout(p, ord, size);
    /* A folded EP group: the first ep ranks of the data group (CP and DP). */
    int64_t ep_folded = (dims == MP_DIM_BIT(MP_DIM_EP) && size[MP_DIM_EP] == 1 && p->ep > 1)
                            ? p->ep : 0;
    if (ep_folded)
        dims = MP_DIM_BIT(MP_DIM_CP) | MP_DIM_BIT(MP_DIM_DP);
    /* Runs of consecutive member dimensions (degree-1 dimensions do not break a run). */
    mp_group run[MP_DIM_COUNT];
    int nrun = 0, open = 0;
    int64_t stride = 1;
    for (int i = 0; i < MP_DIM_COUNT; i++) {
        mp_dim d = ord[i];
        if (size[d] > 1) {
            if (dims & MP_DIM_BIT(d)) {
                if (open) {
                    run[nrun - 1].size *= size[d];
                } else {
                    run[nrun++] = (mp_group){size[d], stride};
                    open = 1;
                }
            } else {
                open = 0;
            }
        }
        stride *= size[d];
    }
    *inner = (mp_group){1, 1};
    *outer = (mp_group){1, 1};
    if (nrun >= 1)
        *inner = run[0];
    if (nrun >= 2) {
        *outer = run[1];
        for (int k = 2; k < nrun; k++) /* fold further runs into the outer one (approximate) */
            outer->size *= run[k].size;
    }
    if (ep_folded) { /* keep the first ep ranks of the data group */
        int64_t n = inner->size * outer->size;
        if (p->ep < inner->size || outer->size == 1) {
            *inner = (mp_group){p->ep < n ? p->ep : n, inner->stride};
            *outer = (mp_group){1, 1};
        } else {
            outer->size = p->ep / inner->size;
        }
    }
}
