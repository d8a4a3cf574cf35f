/* tests/test_plan.c — mp_plan_parse (every key, every kind of bad value, the diag naming the field
 * and value) and mp_plan_resolve (defaults filled in, every reason a plan cannot be formed listed,
 * DESIGN.md "a plan that cannot be formed is bad input, listing every reason"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"

#include "meshplan/catalog.h"
#include "meshplan/plan.h"
#include "meshplan/xsync.h"


static const mp_model *llama2_7b(void)
{
    const mp_model *m = mp_catalog_model(g_cat, "llama2-7b");
    assert_non_null(m);
    return m;
}

/* diag text must contain every given word. */
static void assert_diag_has(const mp_diag *d, const char *word)
{
    if (!strstr(d->text, word))
        fail_msg("diag does not mention \"%s\":\n%s", word, d->text);
}

/* ---- parse -------------------------------------------------------------------------------- */

static void test_parse_all_keys(void **state)
{
    (void)state;
    mp_plan p;
    mp_plan_init_default(&p);
    mp_diag d = {0};
    const char *s = "tp=8, pp=4,vpp=2,dp=16,cp=2,ep=4,sp=1,mb=2,gb=1024,seq=8192,zero=1,"
                    "hsdp=8,recompute=selective,precision=fp8,flash=0,schedule=interleaved";
    assert_int_equal(mp_plan_parse(s, &p, &d), MP_OK);
    assert_int_equal(d.count, 0);
    assert_int_equal(p.tp, 8);
    assert_int_equal(p.pp, 4);
    assert_int_equal(p.vpp, 2);
    assert_int_equal(p.dp, 16);
    assert_int_equal(p.cp, 2);
    assert_int_equal(p.ep, 4);
    assert_int_equal(p.sp, 1);
    assert_int_equal(p.mb, 2);
    assert_int_equal(p.gb, 1024);
    assert_int_equal(p.seq, 8192);
    assert_int_equal(p.zero, 1);
    assert_int_equal(p.hsdp, 8);
    assert_int_equal(p.recompute, MP_RC_SELECTIVE);
    assert_int_equal(p.precision, MP_DT_FP8);
    assert_int_equal(p.flash, 0);
    assert_int_equal(p.schedule, MP_SCHED_INTERLEAVED);
    assert_int_equal(p.schedule_given, 1);

    /* The other enum values. */
    assert_int_equal(mp_plan_parse("recompute=full,precision=fp16,schedule=zb", &p, &d), MP_OK);
    assert_int_equal(p.recompute, MP_RC_FULL);
    assert_int_equal(p.precision, MP_DT_FP16);
    assert_int_equal(p.schedule, MP_SCHED_ZB);
    assert_int_equal(mp_plan_parse("recompute=none,precision=bf16,schedule=gpipe", &p, &d), MP_OK);
    assert_int_equal(p.recompute, MP_RC_NONE);
    assert_int_equal(p.precision, MP_DT_BF16);
    assert_int_equal(p.schedule, MP_SCHED_GPIPE);
    /* Fields not mentioned keep their value. */
    assert_int_equal(p.tp, 8);
}

static void test_parse_defaults(void **state)
{
    (void)state;
    mp_plan p;
    mp_plan_init_default(&p);
    assert_int_equal(p.tp, 0);
    assert_int_equal(p.sp, -1);
    assert_int_equal(p.zero, -1);
    assert_int_equal(p.recompute, MP_RC_NONE);
    assert_int_equal(p.precision, MP_DT_BF16);
    assert_int_equal(p.flash, 1);
    assert_int_equal(p.schedule, MP_SCHED_1F1B);
    mp_diag d = {0};
    assert_int_equal(mp_plan_parse("", &p, &d), MP_OK);
    assert_int_equal(mp_plan_parse(NULL, &p, &d), MP_OK);
}

static void test_parse_unknown_key(void **state)
{
    (void)state;
    mp_plan p;
    mp_plan_init_default(&p);
    mp_diag d = {0};
    assert_int_equal(mp_plan_parse("tp=2,bogus=17", &p, &d), MP_ERR_INPUT);
    assert_int_equal(d.count, 1);
    assert_diag_has(&d, "bogus");
    assert_diag_has(&d, "17");
}

static void test_parse_bad_values(void **state)
{
    (void)state;
    static const struct { const char *text, *field, *value; } bad[] = {
        {"tp=abc", "tp", "abc"},     /* not a number */
        {"tp=0", "tp", "0"},         /* degrees are >= 1 */
        {"tp=-1", "tp", "-1"},
        {"mb=1.5", "mb", "1.5"},     /* not an integer */
        {"tp=", "tp", "plan.tp"},    /* empty value: the field is named */
        {"sp=2", "sp", "2"},         /* 0/1 only */
        {"zero=4", "zero", "4"},     /* 0..3 */
        {"recompute=some", "recompute", "some"},
        {"precision=fp4", "precision", "fp4"},
        {"schedule=dualpipe", "schedule", "dualpipe"},
        {"tp=99999999999999999999", "tp", "99999999999999999999"}, /* overflows int64 */
        {"doc_len=0", "doc_len", "0"}, /* a mean document length is >= 1 token (leave it out for none) */
        {"doc_len=-5", "doc_len", "-5"},
        {"doc_len=1e3", "doc_len", "1e3"},
        {"fsdp=3", "fsdp", "3"},       /* 1 (flat parameters) or 2 (per-parameter sharding) */
        {"fsdp=0", "fsdp", "0"},
        {"fsdp=two", "fsdp", "two"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mp_plan p;
        mp_plan_init_default(&p);
        mp_diag d = {0};
        mp_status st = mp_plan_parse(bad[i].text, &p, &d);
        if (st != MP_ERR_INPUT)
            fail_msg("\"%s\": status %d, expected MP_ERR_INPUT", bad[i].text, (int)st);
        assert_int_equal(d.count, 1);
        assert_diag_has(&d, bad[i].field);
        assert_diag_has(&d, bad[i].value);
        assert_int_equal(p.tp, 0); /* a rejected value is not stored */
    }
}

static void test_parse_not_key_value(void **state)
{
    (void)state;
    mp_plan p;
    mp_plan_init_default(&p);
    mp_diag d = {0};
    assert_int_equal(mp_plan_parse("garbage", &p, &d), MP_ERR_PARSE);
    assert_diag_has(&d, "garbage");
    /* Several problems at once: one line each. */
    mp_diag_clear(&d);
    assert_int_not_equal(mp_plan_parse("tp=x,garbage,pp=0", &p, &d), MP_OK);
    assert_int_equal(d.count, 3);
}

/* A key given twice is a mistake, not an override — also when the first one follows ", ". */
static void test_parse_duplicate_key(void **state)
{
    (void)state;
    static const char *const texts[] = {"tp=2,tp=4", "tp=2 ,pp=1,tp=4", "pp=1, tp=2, tp=4",
                                        "pp=1,  tp=2,tp=4"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        mp_plan p;
        mp_plan_init_default(&p);
        mp_diag d = {0};
        mp_status st = mp_plan_parse(texts[i], &p, &d);
        if (st != MP_ERR_INPUT)
            fail_msg("\"%s\": status %d, tp = %lld: expected the second tp rejected", texts[i],
                     (int)st, (long long)p.tp);
        assert_diag_has(&d, "tp");
    }
}

/* The canonical string of a resolved plan parses back to the same plan. */
static void test_format_roundtrip(void **state)
{
    (void)state;
    mp_plan p, q;
    mp_plan_init_default(&p);
    mp_diag d = {0};
    assert_int_equal(mp_plan_parse("tp=2,pp=2,mb=2,gb=64,recompute=full,flash=0,doc_len=1032,zero=3,fsdp=2", &p, &d), MP_OK);
    assert_int_equal(mp_plan_resolve(&p, llama2_7b(), 16, &d), MP_OK);
    char buf[512];
    int n = mp_plan_format(&p, buf, sizeof buf);
    assert_true(n > 0 && (size_t)n < sizeof buf);
    mp_plan_init_default(&q);
    assert_int_equal(mp_plan_parse(buf, &q, &d), MP_OK);
    assert_int_equal(mp_plan_resolve(&q, llama2_7b(), 16, &d), MP_OK);
    assert_int_equal(q.tp, p.tp);
    assert_int_equal(q.pp, p.pp);
    assert_int_equal(q.dp, p.dp);
    assert_int_equal(q.mb, p.mb);
    assert_int_equal(q.gb, p.gb);
    assert_int_equal(q.seq, p.seq);
    assert_int_equal(q.sp, p.sp);
    assert_int_equal(q.zero, p.zero);
    assert_int_equal(q.recompute, p.recompute);
    assert_int_equal(q.flash, p.flash);
    assert_int_equal(q.schedule, p.schedule);
    assert_int_equal(q.doc_len, 1032);
    assert_non_null(strstr(buf, ",doc_len=1032"));
    assert_int_equal(q.fsdp, 2);
    assert_non_null(strstr(buf, ",fsdp=2"));
    /* fsdp=1 is the default and is not written. */
    p.fsdp = 1;
    mp_plan_format(&p, buf, sizeof buf);
    assert_null(strstr(buf, "fsdp"));
}

/* ---- the key tables (plan_keys.h, xsync_keys.h) ------------------------------------------- */

/* One of the two tables and how to parse and format a plan string with its keys. The island keys
 * are written only with a scheme, so their strings get "sync=diloco," in front. */
typedef struct {
    const mp_plan_key *(*at)(int);
    int islands;
} key_table;

static const key_table tables[] = {{mp_plan_key_at, 0}, {mp_islands_plan_key_at, 1}};

/* Parse "key=val" (with the islands prefix) into a fresh plan; the canonical string into out. */
static mp_status parse_kv(const key_table *t, const char *key, const char *val, mp_diag *d,
                          char *out, size_t cap)
{
    char text[512];
    snprintf(text, sizeof text, "%s%s=%s", t->islands && strcmp(key, "sync") ? "sync=diloco," : "",
             key, val);
    mp_diag_clear(d);
    mp_status st;
    if (t->islands) {
        mp_islands_plan ip;
        mp_islands_plan_init_default(&ip);
        st = mp_islands_plan_parse(text, &ip, d);
        mp_islands_plan_format(&ip, out, cap);
    } else {
        mp_plan p;
        mp_plan_init_default(&p);
        st = mp_plan_parse(text, &p, d);
        mp_plan_format(&p, out, cap);
    }
    return st;
}

/* The token "key=..." of the canonical string s into tok ("" when the key is not written). */
static void key_token(const char *s, const char *key, char *tok, size_t cap)
{
    size_t n = strlen(key);
    tok[0] = '\0';
    for (const char *at = s; at && *at; at = strchr(at, ',') ? strchr(at, ',') + 1 : NULL)
        if (!strncmp(at, key, n) && at[n] == '=') {
            size_t len = strcspn(at, ",");
            snprintf(tok, cap, "%.*s", (int)len, at);
            return;
        }
}

/* key=val is accepted; the canonical string holds that value whenever it writes the key, and
 * that token parses back and formats to itself (format -> parse round trip, key by key: the
 * other fields of an unresolved plan are "not given" and do not parse). */
static void accept(const key_table *t, const mp_plan_key *k, const char *val)
{
    char out[1024], tok[256], again[1024], tok2[256];
    mp_diag d = {0};
    if (parse_kv(t, k->name, val, &d, out, sizeof out) != MP_OK)
        fail_msg("%s=%s rejected: %s", k->name, val, d.text);
    key_token(out, k->name, tok, sizeof tok);
    if (!tok[0])
        return; /* the value is the default, which is not written */
    size_t n = strlen(k->name) + 1;
    if (strncmp(tok + n, val, strlen(val)))
        fail_msg("%s=%s formats as \"%s\"", k->name, val, tok);
    if (parse_kv(t, k->name, tok + n, &d, again, sizeof again) != MP_OK)
        fail_msg("\"%s\" does not parse back: %s", tok, d.text);
    key_token(again, k->name, tok2, sizeof tok2);
    if (strcmp(tok, tok2))
        fail_msg("\"%s\" formats back as \"%s\"", tok, tok2);
}

/* key=val is rejected with one message naming the key and the value. */
static void reject(const key_table *t, const mp_plan_key *k, const char *val)
{
    char out[1024], field[64];
    mp_diag d = {0};
    mp_status st = parse_kv(t, k->name, val, &d, out, sizeof out);
    snprintf(field, sizeof field, "plan.%s", k->name);
    if (st != MP_ERR_INPUT || d.count != 1 || !strstr(d.text, field) || !strstr(d.text, val))
        fail_msg("%s=%s: status %d, %d lines, expected one naming %s and %s:\n%s", k->name, val,
                 (int)st, d.count, field, val, d.text);
}

/* Every key of both tables: described (help, default; names or syntax), parsed at both ends of
 * its range and rejected just outside, every name accepted and a wrong one rejected, a key given
 * twice refused, and each accepted value round-trips through the canonical string. */
static void test_key_tables(void **state)
{
    (void)state;
    int total = 0;
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++) {
        const key_table *tab = &tables[t];
        int n = 0;
        for (const mp_plan_key *k; (k = tab->at(n)); n++) {
            assert_true(k->name[0] && k->help[0] && k->default_text[0]);
            char a[64], b[64];
            switch (k->type) {
            case MP_PLAN_KEY_INT:
            case MP_PLAN_KEY_BOOL:
                assert_true(k->min <= k->max);
                snprintf(a, sizeof a, "%lld", (long long)k->min);
                snprintf(b, sizeof b, "%lld", (long long)k->max);
                accept(tab, k, a);
                accept(tab, k, b);
                snprintf(a, sizeof a, "%lld", (long long)k->min - 1);
                snprintf(b, sizeof b, "%lld", (long long)k->max + 1);
                reject(tab, k, a);
                reject(tab, k, b);
                reject(tab, k, "x1");
                break;
            case MP_PLAN_KEY_REAL:
                snprintf(a, sizeof a, "%g", k->min);
                snprintf(b, sizeof b, "%g", k->max);
                accept(tab, k, a);
                accept(tab, k, b);
                snprintf(a, sizeof a, "%g", k->min - 1);
                snprintf(b, sizeof b, "%g", 2 * k->max + 1);
                reject(tab, k, a);
                reject(tab, k, b);
                reject(tab, k, "x1");
                break;
            case MP_PLAN_KEY_ENUM:
                assert_true(k->nnames > 0);
                for (int i = 0; i < k->nnames; i++)
                    accept(tab, k, k->names[i]);
                reject(tab, k, "no-such-name");
                break;
            case MP_PLAN_KEY_TEXT:
                assert_non_null(k->syntax);
                assert_non_null(k->sample);
                accept(tab, k, k->sample);
                reject(tab, k, "no-such-value");
                break;
            default:
                fail_msg("key %s: type %d", k->name, (int)k->type);
            }
            /* Given twice: refused, naming the key. */
            char text[256], out[1024], word[80];
            const char *v = k->type == MP_PLAN_KEY_ENUM ? k->names[0] : k->type == MP_PLAN_KEY_TEXT ? k->sample : "1";
            snprintf(text, sizeof text, "%s,%s=%s", v, k->name, v);
            mp_diag d = {0};
            assert_int_equal(parse_kv(tab, k->name, text, &d, out, sizeof out), MP_ERR_INPUT);
            snprintf(word, sizeof word, "key \"%s\" given twice", k->name);
            assert_diag_has(&d, word);
        }
        assert_true(n >= 10);
        assert_null(tab->at(-1));
        total += n;
    }
    /* No name in both tables: a key belongs to the plan or to the islands, never both. */
    for (int i = 0; mp_plan_key_at(i); i++)
        for (int j = 0; mp_islands_plan_key_at(j); j++)
            assert_string_not_equal(mp_plan_key_at(i)->name, mp_islands_plan_key_at(j)->name);
    assert_true(total >= 35);
}

/* An unknown key suggests the nearest known one (within two edits), over both tables when the
 * string may hold island keys; plan parsing knows no island key. */
static void test_unknown_key_suggestion(void **state)
{
    (void)state;
    mp_plan p;
    mp_plan_init_default(&p);
    mp_diag d = {0};
    assert_int_equal(mp_plan_parse("schedul=zb", &p, &d), MP_ERR_INPUT);
    assert_diag_has(&d, "unknown key \"schedul\" (value \"zb\"): did you mean \"schedule\"?");
    mp_diag_clear(&d);
    assert_int_equal(mp_plan_parse("bogus=17", &p, &d), MP_ERR_INPUT);
    assert_null(strstr(d.text, "did you mean"));
    mp_diag_clear(&d);
    assert_int_equal(mp_plan_parse("sync=diloco", &p, &d), MP_ERR_INPUT); /* not a plan key */
    assert_diag_has(&d, "unknown key \"sync\"");
    mp_islands_plan ip;
    mp_islands_plan_init_default(&ip);
    mp_diag_clear(&d);
    assert_int_equal(mp_islands_plan_parse("tp=2,inner_step=5", &ip, &d), MP_ERR_INPUT);
    assert_int_equal(d.count, 1);
    assert_diag_has(&d, "did you mean \"inner_steps\"?");
    assert_diag_has(&d, "expected one of tp, pp,");
    assert_diag_has(&d, ", ring, split");
    /* Problems of both kinds: one line each, the plan part still parsed. */
    mp_islands_plan_init_default(&ip);
    mp_diag_clear(&d);
    assert_int_equal(mp_islands_plan_parse("tp=0,garbage,buckets=0,pp=2", &ip, &d), MP_ERR_INPUT);
    assert_int_equal(d.count, 3);
    assert_int_equal(ip.plan.pp, 2);
    mp_islands_plan_init_default(&ip);
    mp_diag_clear(&d);
    assert_int_equal(mp_islands_plan_parse("garbage", &ip, &d), MP_ERR_PARSE);
}

/* For one cluster, island keys are bad input naming the key, and sync=none is a one-cluster
 * plan stated explicitly. */
static void test_parse_single(void **state)
{
    (void)state;
    mp_plan p;
    mp_diag d = {0};
    mp_plan_init_default(&p);
    assert_int_equal(mp_islands_plan_parse_single("tp=2,sync=diloco", &p, &d), MP_ERR_INPUT);
    assert_diag_has(&d, "plan.sync = diloco");
    mp_diag_clear(&d);
    mp_plan_init_default(&p);
    assert_int_equal(mp_islands_plan_parse_single("tp=2,inner_steps=5,ring=tsp", &p, &d), MP_ERR_INPUT);
    assert_int_equal(d.count, 2);
    assert_diag_has(&d, "plan.inner_steps");
    assert_diag_has(&d, "plan.ring");
    mp_diag_clear(&d);
    mp_plan_init_default(&p);
    assert_int_equal(mp_islands_plan_parse_single("tp=2,sync=none", &p, &d), MP_OK);
    assert_int_equal(p.tp, 2);
}

/* Help: a line per key of each table, and the length asked for first is the length written. */
static void test_keys_help(void **state)
{
    (void)state;
    int (*const help[2])(char *, size_t) = {mp_plan_keys_help, mp_islands_plan_keys_help};
    for (int t = 0; t < 2; t++) {
        int n = help[t](NULL, 0);
        assert_true(n > 0 && n < 16384);
        char buf[16384];
        assert_int_equal(help[t](buf, sizeof buf), n);
        assert_int_equal((int)strlen(buf), n);
        for (int i = 0; tables[t].at(i); i++) {
            char line[64];
            snprintf(line, sizeof line, "\n  %-16s ", tables[t].at(i)->name);
            if (i == 0 ? strncmp(buf, line + 1, strlen(line + 1)) != 0 : !strstr(buf, line))
                fail_msg("help does not list %s:\n%s", tables[t].at(i)->name, buf);
        }
        char small[40]; /* truncated like snprintf, NUL-terminated */
        assert_int_equal(help[t](small, sizeof small), n);
        assert_int_equal((int)strlen(small), (int)sizeof small - 1);
    }
}

/* ---- resolve ------------------------------------------------------------------------------ */

static mp_status resolve(const char *text, int64_t gpus, mp_plan *p, mp_diag *d)
{
    mp_plan_init_default(p);
    mp_diag_clear(d);
    assert_int_equal(mp_plan_parse(text, p, d), MP_OK);
    return mp_plan_resolve(p, llama2_7b(), gpus, d);
}

/* ---- rank order ---------------------------------------------------------------------------- */

/* order=...: the default is tp-cp-ep-dp-pp; strides are products of the inner sizes. Llama-2 7B
 * on 64 GPUs, tp 2, cp 2, pp 2 -> dp 8: default strides tp 1, cp 2, dp 4, pp 32. */
static void test_order_strides(void **state)
{
    (void)state;
    mp_plan p;
    mp_diag d = {0};
    assert_int_equal(resolve("tp=2,cp=2,pp=2,seq=4096", 64, &p, &d), MP_OK);
    assert_int_equal(p.order_listed, 0);
    char ot[32];
    assert_string_equal(mp_plan_order_text(&p, ot, sizeof ot), "default");
    assert_int_equal(mp_plan_stride(&p, MP_DIM_TP), 1);
    assert_int_equal(mp_plan_stride(&p, MP_DIM_CP), 2);
    assert_int_equal(mp_plan_stride(&p, MP_DIM_DP), 4);
    assert_int_equal(mp_plan_stride(&p, MP_DIM_PP), 32);
    mp_group in, out;
    /* The gradient group (CP x DP) is contiguous: 16 ranks at stride 2. */
    mp_plan_group(&p, MP_DIM_BIT(MP_DIM_CP) | MP_DIM_BIT(MP_DIM_EP) | MP_DIM_BIT(MP_DIM_DP), &in, &out);
    assert_int_equal(in.size, 16);
    assert_int_equal(in.stride, 2);
    assert_int_equal(out.size, 1);
    /* order=dp-tp-pp-cp: dp 1, tp 8, pp 16, cp 32; CP x DP is two runs: 8 at 1 and 2 at 32. */
    assert_int_equal(resolve("tp=2,cp=2,pp=2,seq=4096,order=dp-tp-pp-cp", 64, &p, &d), MP_OK);
    assert_string_equal(mp_plan_order_text(&p, ot, sizeof ot), "dp-tp-pp-cp"); /* listed ones only */
    assert_int_equal(mp_plan_stride(&p, MP_DIM_DP), 1);
    assert_int_equal(mp_plan_stride(&p, MP_DIM_TP), 8);
    assert_int_equal(mp_plan_stride(&p, MP_DIM_PP), 16);
    assert_int_equal(mp_plan_stride(&p, MP_DIM_CP), 32);
    mp_plan_group(&p, MP_DIM_BIT(MP_DIM_CP) | MP_DIM_BIT(MP_DIM_DP), &in, &out);
    assert_int_equal(in.size, 8);
    assert_int_equal(in.stride, 1);
    assert_int_equal(out.size, 2);
    assert_int_equal(out.stride, 32);
    /* Formatting keeps a given order; a default plan formats without one. */
    char buf[512];
    mp_plan_format(&p, buf, sizeof buf);
    assert_non_null(strstr(buf, ",order=dp-tp-pp-cp-ep"));
    assert_int_equal(resolve("tp=2", 8, &p, &d), MP_OK);
    mp_plan_format(&p, buf, sizeof buf);
    assert_null(strstr(buf, "order"));
    /* A zeroed plan (not a permutation) counts as the default order. */
    mp_plan z;
    memset(&z, 0, sizeof z);
    z.tp = 4;
    z.dp = 2;
    assert_int_equal(mp_plan_stride(&z, MP_DIM_DP), 4);
}

static void test_order_bad(void **state)
{
    (void)state;
    static const char *const bad[] = {"order=tp-tp-dp", "order=tp-xx", "order=", "order=tp-dp-",
                                      "order=-tp", "order=tp-dp-pp-cp-ep-tp"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mp_plan p;
        mp_plan_init_default(&p);
        mp_diag d = {0};
        if (mp_plan_parse(bad[i], &p, &d) == MP_OK)
            fail_msg("\"%s\" accepted", bad[i]);
        assert_diag_has(&d, "order");
    }
    /* A dimension of degree > 1 missing from the order is bad input at resolve. */
    mp_plan p;
    mp_diag d = {0};
    assert_int_equal(resolve("tp=2,pp=2,order=tp-dp", 16, &p, &d), MP_ERR_INPUT);
    assert_diag_has(&d, "pp = 2");
    assert_int_equal(resolve("tp=2,pp=2,order=tp-pp-dp", 16, &p, &d), MP_OK);
    assert_int_equal(mp_plan_stride(&p, MP_DIM_PP), 2);
    assert_int_equal(mp_plan_stride(&p, MP_DIM_DP), 4);
}

static void test_resolve_defaults(void **state)
{
    (void)state;
    mp_plan p;
    mp_diag d;
    /* llama2-7b on 16 GPUs with tp=2, pp=2: dp = 16 / (2*2*1) = 4; mb 1; gb = dp*mb = 4;
     * seq = the model's 4096; sp on because tp > 1; zero 0; vpp 1 -> 1F1B. */
    assert_int_equal(resolve("tp=2,pp=2", 16, &p, &d), MP_OK);
    assert_int_equal(p.dp, 4);
    assert_int_equal(p.cp, 1);
    assert_int_equal(p.ep, 1);
    assert_int_equal(p.vpp, 1);
    assert_int_equal(p.mb, 1);
    assert_int_equal(p.gb, 4);
    assert_int_equal(p.seq, 4096);
    assert_int_equal(p.sp, 1);
    assert_int_equal(p.zero, 0);
    assert_int_equal(p.schedule, MP_SCHED_1F1B);
    /* tp = 1: sp stays off (it is a no-op without TP). */
    assert_int_equal(resolve("pp=2", 16, &p, &d), MP_OK);
    assert_int_equal(p.tp, 1);
    assert_int_equal(p.dp, 8);
    assert_int_equal(p.sp, 0);
    /* vpp > 1 picks the interleaved schedule when none is given. */
    assert_int_equal(resolve("pp=4,vpp=2", 16, &p, &d), MP_OK);
    assert_int_equal(p.schedule, MP_SCHED_INTERLEAVED);
    /* hsdp implies zero 3. */
    assert_int_equal(resolve("hsdp=4", 16, &p, &d), MP_OK);
    assert_int_equal(p.zero, 3);
}

static void test_resolve_tp_heads(void **state)
{
    (void)state;
    mp_plan p;
    mp_diag d;
    /* 32 heads % 3 != 0 */
    assert_int_equal(resolve("tp=3", 3, &p, &d), MP_ERR_INPUT);
    assert_diag_has(&d, "tp");
    assert_diag_has(&d, "heads");
    assert_diag_has(&d, "3");
}

static void test_resolve_product(void **state)
{
    (void)state;
    mp_plan p;
    mp_diag d;
    /* 2*2*1*3 = 12 != 8 */
    assert_int_equal(resolve("tp=2,pp=2,dp=3", 8, &p, &d), MP_ERR_INPUT);
    assert_diag_has(&d, "12");
    assert_diag_has(&d, "8");
    /* dp derived but tp*pp*cp = 3*... does not divide: tp=4,pp=4 on 8 GPUs -> 16 > 8 */
    assert_int_equal(resolve("tp=4,pp=4", 8, &p, &d), MP_ERR_INPUT);
    assert_diag_has(&d, "16");
    assert_diag_has(&d, "8");
}

static void test_resolve_batch(void **state)
{
    (void)state;
    mp_plan p;
    mp_diag d;
    /* 8 GPUs, tp 1: dp = 8; mb*dp = 2*8 = 16 does not divide gb 12 */
    assert_int_equal(resolve("mb=2,gb=12", 8, &p, &d), MP_ERR_INPUT);
    assert_diag_has(&d, "gb");
    assert_diag_has(&d, "12");
    assert_diag_has(&d, "16");
    /* gb 32 is fine: 2 micro-batches per rank */
    assert_int_equal(resolve("mb=2,gb=32", 8, &p, &d), MP_OK);
}

static void test_resolve_every_reason(void **state)
{
    (void)state;
    mp_plan p;
    mp_diag d;
    /* tp=3 does not divide 32 heads; pp=64 exceeds 32 layers; gb=5 not divisible by mb*dp. */
    assert_int_equal(resolve("tp=3,pp=64,dp=1,gb=5,mb=2", 192, &p, &d), MP_ERR_INPUT);
    assert_true(d.count >= 3);
    assert_diag_has(&d, "tp");
    assert_diag_has(&d, "pp");
    assert_diag_has(&d, "gb");
}

static void test_resolve_vpp_without_pp(void **state)
{
    (void)state;
    mp_plan p;
    mp_diag d;
    assert_int_equal(resolve("vpp=2", 8, &p, &d), MP_ERR_INPUT);
    assert_diag_has(&d, "vpp");
    /* Interleaved asked for without virtual stages. */
    assert_int_equal(resolve("pp=2,schedule=interleaved", 8, &p, &d), MP_ERR_INPUT);
    assert_diag_has(&d, "interleaved");
}

static void test_resolve_other_checks(void **state)
{
    (void)state;
    mp_plan p;
    mp_diag d;
    /* ep on a dense model */
    assert_int_equal(resolve("ep=2", 8, &p, &d), MP_ERR_INPUT);
    assert_diag_has(&d, "ep");
    /* cp must split seq into 2*cp chunks: 4096 % (2*3) = 4 != 0 (6 GPUs: dp = 6/3 = 2) */
    assert_int_equal(resolve("cp=3,seq=4096", 6, &p, &d), MP_ERR_INPUT);
    assert_diag_has(&d, "seq");
    /* hsdp must divide dp (8) */
    assert_int_equal(resolve("hsdp=3", 8, &p, &d), MP_ERR_INPUT);
    assert_diag_has(&d, "hsdp");
    /* FSDP2's per-parameter sharding is a way to run ZeRO-3: not with zero 0..2 */
    assert_int_equal(resolve("zero=1,fsdp=2", 8, &p, &d), MP_ERR_INPUT);
    assert_diag_has(&d, "fsdp = 2");
    assert_diag_has(&d, "zero = 1");
    assert_int_equal(resolve("zero=3,fsdp=2", 8, &p, &d), MP_OK);
    assert_int_equal(resolve("hsdp=4,fsdp=2", 8, &p, &d), MP_OK); /* HSDP implies zero 3 */
    assert_int_equal(resolve("zero=1,fsdp=1", 8, &p, &d), MP_OK);
    /* gpus < 1 */
    assert_int_equal(resolve("tp=1", 0, &p, &d), MP_ERR_INPUT);
    assert_diag_has(&d, "gpus");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_all_keys),
        cmocka_unit_test(test_parse_defaults),
        cmocka_unit_test(test_parse_unknown_key),
        cmocka_unit_test(test_parse_bad_values),
        cmocka_unit_test(test_parse_not_key_value),
        cmocka_unit_test(test_parse_duplicate_key),
        cmocka_unit_test(test_format_roundtrip),
        cmocka_unit_test(test_key_tables),
        cmocka_unit_test(test_unknown_key_suggestion),
        cmocka_unit_test(test_parse_single),
        cmocka_unit_test(test_keys_help),
        cmocka_unit_test(test_resolve_defaults),
        cmocka_unit_test(test_resolve_tp_heads),
        cmocka_unit_test(test_resolve_product),
        cmocka_unit_test(test_resolve_batch),
        cmocka_unit_test(test_resolve_every_reason),
        cmocka_unit_test(test_resolve_vpp_without_pp),
        cmocka_unit_test(test_resolve_other_checks),
        cmocka_unit_test(test_order_strides),
        cmocka_unit_test(test_order_bad),
    };
    return cmocka_run_group_tests(tests, catalog_setup, catalog_teardown);
}
