/* src/plan/plan.c — parse a plan string, fill its defaults, and check it can be formed. The keys
 * are the table in plan_keys.h; this file holds the hooks of the few keys the table's types cannot
 * say alone (schedule, order, etp, capacity_factor, fsdp). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "meshplan/plan.h"
#include "meshplan/stack.h"
#include "plan/plan_key.h"
#include "plan/plan_keys.h"

static const char *const sched_names[MP_SCHED_COUNT] = {"1f1b", "interleaved", "gpipe", "zb"};
static const char *const rc_names[MP_RC_COUNT] = {"none", "selective", "full", "op", "mlp"};
static const char *const cp_algo_names[MP_CP_ALGO_COUNT] = {"ring", "allgather"};
static const char *const attn_kernel_names[MP_ATTN_KERNEL_COUNT] = {"fa2", "fa3", "flex"};
/* The GEMM precisions a plan may name, in mp_dtype order (MP_DT_BF16 = 0, FP16, FP8). */
static const char *const opt_dtype_names[] = {"fp32", "bf16"};
static const char *const master_names[] = {"1", "0"};
/* tf32 and fp32 train in fp32 (weights, gradients, activations); tf32 runs the GEMMs on the
 * tensor cores (torch.backends.cuda.matmul.allow_tf32 = True), fp32 does not (PyTorch's default
 * since 1.12: "TF32 on Ampere" note). */
static const char *const precision_names[] = {"bf16", "fp16", "fp8", "tf32", "fp32"};
_Static_assert(MP_DT_BF16 == 0 && MP_DT_FP16 == 1 && MP_DT_FP8 == 2 && MP_DT_TF32 == 3 &&
               MP_DT_FP32 == 4, "precision_names follows mp_dtype");
static const char *const optimizer_names[MP_OPT_COUNT] = {"adamw", "adam8bit", "adafactor", "sgd", "muon"};
static const char *const finetune_names[MP_FT_COUNT] = {"full", "lora", "qlora"};
static const char *const offload_names[MP_OFF_COUNT] = {"none", "optimizer", "params", "all"};
static const char *const offload_device_names[] = {"cpu", "nvme"};
/* lora_targets: the matrices by PEFT's names without "_proj", in MP_LORA_* bit order. */
static const char *const lora_target_names[] = {"q", "k", "v", "o", "gate", "up", "down"};
static const char *const dim_names[MP_DIM_COUNT] = {"tp", "cp", "ep", "dp", "pp"};
static const char *const stack_names[MP_STACK_COUNT] = {
#define MP_STACK_X(e, n) n,
    MP_STACKS(MP_STACK_X)
#undef MP_STACK_X
};

const char *mp_cp_algo_name(mp_cp_algo a) { return ((int)a >= 0 && a < MP_CP_ALGO_COUNT) ? cp_algo_names[a] : "?"; }
const char *mp_attn_kernel_name(mp_attn_kernel k) { return ((int)k >= 0 && k < MP_ATTN_KERNEL_COUNT) ? attn_kernel_names[k] : "?"; }
const char *mp_dim_name(mp_dim d) { return ((int)d >= 0 && d < MP_DIM_COUNT) ? dim_names[d] : "?"; }
const char *mp_schedule_name(mp_schedule s) { return ((int)s >= 0 && s < MP_SCHED_COUNT) ? sched_names[s] : "?"; }
const char *mp_recompute_name(mp_recompute r) { return ((int)r >= 0 && r < MP_RC_COUNT) ? rc_names[r] : "?"; }
const char *mp_optimizer_name(mp_optimizer o) { return ((int)o >= 0 && o < MP_OPT_COUNT) ? optimizer_names[o] : "?"; }
const char *mp_finetune_name(mp_finetune f) { return ((int)f >= 0 && f < MP_FT_COUNT) ? finetune_names[f] : "?"; }
const char *mp_offload_name(mp_offload o) { return ((int)o >= 0 && o < MP_OFF_COUNT) ? offload_names[o] : "?"; }

void mp_plan_init_default(mp_plan *p)
{
    memset(p, 0, sizeof *p);
    p->sp = -1;
    p->zero = -1;
    p->recompute = MP_RC_NONE;
    p->precision = MP_DT_BF16;
    p->flash = 1;
    p->schedule = MP_SCHED_1F1B;
    p->stack = MP_STACK_DEFAULT;
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

/* ---- the hooks of the keys the table's types cannot say alone --------------------------- */

/* order=tp-cp-ep-dp-pp: distinct dimension names joined by '-', innermost first; the ones not
 * named follow in the default order. */
static int parse_order(const mp_plan_key_def *k, const char *val, void *obj, mp_diag *diag)
{
    (void)k;
    mp_plan *p = obj;
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

#define APPEND(...)                                                                             \
    do {                                                                                        \
        int w_ = snprintf(*len < cap ? buf + *len : NULL, *len < cap ? cap - *len : 0,          \
                          __VA_ARGS__);                                                         \
        if (w_ > 0)                                                                             \
            *len += (size_t)w_;                                                                 \
    } while (0)

/* Written only when given, so default plans format as before; all five dimensions. */
static void format_order(const mp_plan_key_def *k, const void *obj, char *buf, size_t cap, size_t *len)
{
    (void)k;
    const mp_plan *p = obj;
    if (p->order_listed)
        APPEND(",order=%s-%s-%s-%s-%s", mp_dim_name(p->order[0]), mp_dim_name(p->order[1]),
               mp_dim_name(p->order[2]), mp_dim_name(p->order[3]), mp_dim_name(p->order[4]));
}

/* etp: written when it differs from its default (tp), and etp=1 when that default would differ. */
static void format_etp(const mp_plan_key_def *k, const void *obj, char *buf, size_t cap, size_t *len)
{
    (void)k;
    const mp_plan *p = obj;
    if (p->etp > 1 && p->etp != p->tp)
        APPEND(",etp=%lld", (long long)p->etp);
    else if (p->etp == 1 && p->tp > 1 && p->ep > 1)
        APPEND(",etp=1");
}

/* fsdp=1 is the default (flat parameters) and is not written. */
static void format_fsdp(const mp_plan_key_def *k, const void *obj, char *buf, size_t cap, size_t *len)
{
    (void)k;
    if (((const mp_plan *)obj)->fsdp == 2)
        APPEND(",fsdp=2");
}
/* stack is written when the plan named it (generic, the default, included). */
static void format_stack(const mp_plan_key_def *k, const void *obj, char *buf, size_t cap, size_t *len)
{
    (void)k;
    const mp_plan *p = obj;
    if (p->stack_given || p->stack != MP_STACK_DEFAULT)
        APPEND(",stack=%s", mp_stack_name((mp_stack_id)p->stack));
}


/* lora_targets=attn|mlp|all, or matrix names joined by '+' (q+k+v+o+gate+up+down). */
static int parse_lora_targets(const mp_plan_key_def *k, const char *val, void *obj, mp_diag *diag)
{
    (void)k;
    mp_plan *p = obj;
    unsigned bits = 0;
    if (!strcmp(val, "attn")) bits = MP_LORA_ATTN;
    else if (!strcmp(val, "mlp")) bits = MP_LORA_MLP;
    else if (!strcmp(val, "all")) bits = MP_LORA_ALL;
    const int word = bits != 0;
    for (const char *s = val; !word && *s;) {
        const char *e = strchr(s, '+');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        unsigned b = 0;
        for (int i = 0; i < 7; i++)
            if (strlen(lora_target_names[i]) == len && !strncmp(s, lora_target_names[i], len))
                b = 1u << i;
        if (!b || (e && !e[1])) {
            mp_diag_add(diag, "plan.lora_targets = \"%s\": expected attn, mlp, all or names from "
                        "q, k, v, o, gate, up, down joined by '+' (e.g. q+v)", val);
            return 0;
        }
        bits |= b;
        s = e ? e + 1 : s + len;
    }
    if (!bits) {
        mp_diag_add(diag, "plan.lora_targets = \"\": expected e.g. q+v or all");
        return 0;
    }
    p->lora_targets = bits;
    return 1;
}

/* Written only when given: all, attn, mlp, or the names joined by '+'. */
static void format_lora_targets(const mp_plan_key_def *k, const void *obj, char *buf, size_t cap,
                                size_t *len)
{
    (void)k;
    const unsigned t = ((const mp_plan *)obj)->lora_targets;
    if (!t)
        return;
    if (t == MP_LORA_ALL || t == MP_LORA_ATTN || t == MP_LORA_MLP) {
        APPEND(",lora_targets=%s", t == MP_LORA_ALL ? "all" : t == MP_LORA_ATTN ? "attn" : "mlp");
        return;
    }
    APPEND(",lora_targets=");
    for (int i = 0, n = 0; i < 7; i++)
        if (t & (1u << i))
            APPEND("%s%s", n++ ? "+" : "", lora_target_names[i]);
}
#undef APPEND

static int parse_schedule(const mp_plan_key_def *k, const char *val, void *obj, mp_diag *diag)
{
    if (!mp_plan_key_parse_generic(k, val, obj, diag))
        return 0;
    ((mp_plan *)obj)->schedule_given = 1;
    return 1;
}

/* Capacity factors in use run 1.0-2.0 (Fedus et al. 2021 Table 1; Lepikhin et al. 2020 use 2);
 * below 1 drops tokens even when balanced, which we still allow down to 0.1. */
static int parse_capacity(const mp_plan_key_def *k, const char *val, void *obj, mp_diag *diag)
{
    mp_plan *p = obj;
    double keep = p->moe_capacity_factor;
    if (!mp_plan_key_parse_generic(k, val, obj, diag))
        return 0;
    double cf = p->moe_capacity_factor;
    if (cf > 0 && cf < 0.1) {
        mp_diag_add(diag, "plan.capacity_factor = %g: expected 0 (dropless) or a number in [0.1, 64]", cf);
        p->moe_capacity_factor = keep;
        return 0;
    }
    return 1;
}

/* flash and attn_kernel: remember that the plan said it (else the stack's default stands). */
static int parse_given(const mp_plan_key_def *k, const char *val, void *obj, mp_diag *diag)
{
    if (!mp_plan_key_parse_generic(k, val, obj, diag))
        return 0;
    if (!strcmp(k->pub.name, "flash"))
        ((mp_plan *)obj)->flash_given = 1;
    else
        ((mp_plan *)obj)->attn_kernel_given = 1;
    return 1;
}

static int parse_stack(const mp_plan_key_def *k, const char *val, void *obj, mp_diag *diag)
{
    if (!mp_plan_key_parse_generic(k, val, obj, diag))
        return 0;
    ((mp_plan *)obj)->stack_given = 1;
    return 1;
}

static const mp_plan_key_ops given_ops = {parse_given, NULL};
static const mp_plan_key_ops stack_ops = {parse_stack, format_stack};
static const mp_plan_key_ops schedule_ops = {parse_schedule, NULL};
static const mp_plan_key_ops order_ops = {parse_order, format_order};
static const mp_plan_key_ops etp_ops = {NULL, format_etp};
static const mp_plan_key_ops capacity_ops = {parse_capacity, NULL};
static const mp_plan_key_ops fsdp_ops = {NULL, format_fsdp};
static const mp_plan_key_ops lora_targets_ops = {parse_lora_targets, format_lora_targets};

/* ---- the table ------------------------------------------------------------------------- */

#define PLAN_ROW(...) MP_PLAN_KEY_ROW(mp_plan, __VA_ARGS__)
static const mp_plan_key_def plan_keys[] = {MP_PLAN_KEYS(PLAN_ROW)};
#undef PLAN_ROW
enum { N_PLAN_KEYS = (int)(sizeof plan_keys / sizeof plan_keys[0]) };
_Static_assert(N_PLAN_KEYS <= 64, "the duplicate check keeps one bit per key");

const mp_plan_key *mp_plan_key_at(int i)
{
    return i >= 0 && i < N_PLAN_KEYS ? &plan_keys[i].pub : NULL;
}

const mp_plan_key_def *mp_plan_key_defs(int *n)
{
    *n = N_PLAN_KEYS;
    return plan_keys;
}

int mp_plan_keys_help(char *buf, size_t cap)
{
    return mp_plan_key_help(plan_keys, N_PLAN_KEYS, buf, cap);
}

/* ---- parse and format ------------------------------------------------------------------- */

typedef struct {
    mp_plan *p;
    mp_diag *diag;
    uint64_t seen; /* bit i: plan_keys[i] already given */
    int errors, parse_errors;
} parse_state;

static void parse_token(char *key, char *val, void *ctx)
{
    parse_state *s = ctx;
    if (!val) {
        mp_diag_add(s->diag, "plan: \"%s\": expected key=value", key);
        s->parse_errors++;
        return;
    }
    int k = mp_plan_key_find(plan_keys, N_PLAN_KEYS, key);
    if (k < 0) {
        const mp_plan_key_def *tabs[1] = {plan_keys};
        const int ns[1] = {N_PLAN_KEYS};
        mp_plan_key_unknown(key, val, tabs, ns, 1, s->diag);
        s->errors++;
        return;
    }
    /* A key given twice is a mistake, not an override. */
    if (s->seen & ((uint64_t)1 << k)) {
        mp_diag_add(s->diag, "plan: key \"%s\" given twice (second value \"%s\")", key, val);
        s->errors++;
        return;
    }
    s->seen |= (uint64_t)1 << k;
    if (!mp_plan_key_parse(&plan_keys[k], val, s->p, s->diag))
        s->errors++;
}

mp_status mp_plan_parse(const char *text, mp_plan *p, mp_diag *diag)
{
    if (mp_plan_check_init(p, diag) != MP_OK)
        return MP_ERR_INPUT;
    if (!text)
        return MP_OK;
    size_t n = strlen(text);
    if (n > MP_PLAN_TEXT_MAX) {
        mp_diag_add(diag, "plan: %zu characters: expected at most %d", n, MP_PLAN_TEXT_MAX);
        return MP_ERR_INPUT;
    }
    parse_state s = {p, diag, 0, 0, 0};
    mp_plan_key_tokens(text, parse_token, &s);
    if (s.parse_errors && !s.errors)
        return MP_ERR_PARSE;
    return (s.errors || s.parse_errors) ? MP_ERR_INPUT : MP_OK;
}

/* The stack's era and defaults (data/stacks.json, docs/stacks.md): a feature the stack predates
 * is bad input when the plan asks for it, and off when the plan does not say; the stack's
 * attention kernel and SP default fill what the plan left unset (p->tp already resolved).
 * Returns the number of faults added to diag, or -1 when the stack has no profile. */
static int stack_era(mp_plan *p, mp_diag *diag)
{
    int bad = 0;
#define FAIL(...) do { mp_diag_add(diag, __VA_ARGS__); bad++; } while (0)
    const mp_stack_profile *sk = mp_stack_profile_of((mp_stack_id)p->stack);
    if (!sk) {
        mp_diag_add(diag, "plan.stack = %d: no profile (data/stacks.json unreadable or stack out of range)", p->stack);
        return -1;
    }
    if (p->flash_given && p->flash && !sk->flash_available)
        FAIL("plan.flash = 1: stack %s predates fused attention (FlashAttention, Dao et al. 2022); "
             "expected flash=0 or another stack", sk->key);
    if (!p->flash_given && !sk->flash_available)
        p->flash = 0;
    if (!p->attn_kernel_given && sk->attention == MP_STACK_ATTN_FA3)
        p->attn_kernel = MP_ATTN_FA3;
    else if (!p->attn_kernel_given && sk->attention == MP_STACK_ATTN_FLEX)
        p->attn_kernel = MP_ATTN_FLEX;
    if (p->sp == 1 && p->tp > 1 && !sk->sp_available)
        FAIL("plan.sp = 1: stack %s has no Megatron sequence parallelism; expected sp=0 or another stack",
             sk->key);
    if (p->sp < 0) p->sp = p->tp > 1 && sk->sp_default;
#undef FAIL
    return bad;
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
    /* A learned position table has context_len rows and nothing past them: seq over it cannot be
     * formed (Megatron-LM validate_args asserts max_position_embeddings >= seq_length). RoPE and
     * ALiBi models train past their config's context (long-context extension raises it with RoPE
     * scaling), so for them the CLI only warns (mp_plan_context_note). */
    if (m->position == MP_POS_LEARNED && m->context_len > 0 && p->seq > m->context_len)
        FAIL("plan.seq = %lld: expected at most %s's %lld learned positions (its context_len; a learned "
             "position table has no rows past it)", (long long)p->seq, m->key, (long long)m->context_len);
    if (!p->mb) p->mb = 1;
    int stack_bad = stack_era(p, diag);
    if (stack_bad < 0)
        return MP_ERR_INPUT;
    bad += stack_bad;
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
    /* The embedding and the output layer may each take a model chunk of their own (Llama 3,
     * Dubey et al. 2024 Sec. 3.3.2: the first chunk of the first stage holds only the embedding,
     * the last of the last stage only the output projection and loss): at most layers + 2. */
    if (p->pp * p->vpp > m->layers + 2)
        FAIL("plan: pp*vpp = %lld: more model chunks than layers (%lld) + 2 (the embedding's and "
             "the output layer's own chunks)",
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
    /* The model's states (memory_states.c): what each combination needs. */
    if (p->finetune == MP_FT_FULL && (p->lora_rank || p->lora_targets))
        FAIL("plan.%s: LoRA settings need finetune = lora or qlora (got full)",
             p->lora_rank ? "lora_rank" : "lora_targets");
    if (p->finetune == MP_FT_QLORA && p->precision != MP_DT_BF16 && p->precision != MP_DT_FP16)
        FAIL("plan.finetune = qlora: the 4-bit base is dequantised to a 16-bit compute dtype; "
             "expected precision bf16 or fp16 (got %s)", mp_dtype_name(p->precision));
    if ((p->offload == MP_OFF_OPTIMIZER || p->offload == MP_OFF_ALL) && p->zero < 1)
        FAIL("plan.offload = %s: ZeRO-Offload offloads the ZeRO-partitioned optimizer; expected "
             "zero >= 1 (got %d)", mp_offload_name(p->offload), p->zero);
    if ((p->offload == MP_OFF_PARAMS || p->offload == MP_OFF_ALL) && p->zero != 3)
        FAIL("plan.offload = %s: parameter offload needs zero = 3 (got %d)",
             mp_offload_name(p->offload), p->zero);
    if (p->offload_device && p->offload == MP_OFF_NONE)
        FAIL("plan.offload_device = nvme: needs offload = optimizer, params or all");
#undef FAIL
    return bad ? MP_ERR_INPUT : MP_OK;
}

int mp_plan_format(const mp_plan *p, char *buf, size_t cap)
{
    size_t len = 0;
    if (cap)
        buf[0] = '\0';
    for (int i = 0; i < N_PLAN_KEYS; i++) /* each key writes ",key=value" */
        mp_plan_key_format(&plan_keys[i], p, buf, cap, &len);
    if (len > 0) { /* the first key without its comma */
        if (cap > 0 && buf[0] == ',')
            memmove(buf, buf + 1, strlen(buf));
        len--;
    }
    return (int)len;
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

int mp_plan_context_note(const mp_plan *p, const mp_model *m, char *buf, size_t cap)
{
    if (cap)
        buf[0] = '\0';
    if (m->position == MP_POS_LEARNED || m->context_len <= 0 || p->seq <= m->context_len)
        return 0;
    snprintf(buf, cap, "plan.seq = %lld is over %s's context of %lld tokens (its config's max_position_embeddings): "
             "predicted as asked; training past it assumes the context is extended (RoPE scaling)",
             (long long)p->seq, m->key, (long long)m->context_len);
    return 1;
}
