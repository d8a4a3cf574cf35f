/* src/serve/parse.c — the texts of `meshplan serve`: its plan (infer's keys plus the scheduler's),
 * the disaggregated pools, a request rate and an SLO. Every bad part adds one diag line naming
 * it, its value and what was expected. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infer/infer_keys.h"
#include "meshplan/serve.h"
#include "plan/plan_key.h"

/* A number with an optional unit suffix scaled by the table; 0 when bad. */
static int number(const char *s, double *x, const char *const *units, const double *scale, int nunits)
{
    char *e;
    double v = strtod(s, &e);
    if (e == s || !isfinite(v))
        return 0;
    while (*e == ' ')
        e++;
    if (!*e) {
        *x = v;
        return 1;
    }
    for (int i = 0; i < nunits; i++)
        if (!strcmp(e, units[i])) {
            *x = v * scale[i];
            return 1;
        }
    return 0;
}

static int serve_key(const char *k, const char *v, mp_serve_opts *o, mp_diag *d)
{
    double x;
    if (!strcmp(k, "max_seqs") || !strcmp(k, "chunk")) {
        if (!number(v, &x, NULL, NULL, 0) || x < 1 || x > (1 << 24) || x != floor(x)) {
            mp_diag_add(d, "plan.%s = \"%s\": expected an integer in [1, 16777216]", k, v);
            return 1;
        }
        if (k[0] == 'm')
            o->max_seqs = (int64_t)x;
        else
            o->chunk_tokens = (int64_t)x;
    } else if (!strcmp(k, "preempt")) {
        if (!strcmp(v, "recompute"))
            o->preempt = MP_PREEMPT_RECOMPUTE;
        else if (!strcmp(v, "swap"))
            o->preempt = MP_PREEMPT_SWAP;
        else {
            mp_diag_add(d, "plan.preempt = \"%s\": expected recompute or swap", v);
            return 1;
        }
    } else if (!strcmp(k, "attn_dp") || !strcmp(k, "prefill_first")) {
        if (strcmp(v, "0") && strcmp(v, "1")) {
            mp_diag_add(d, "plan.%s = \"%s\": expected 0 or 1", k, v);
            return 1;
        }
        *(k[0] == 'a' ? &o->attn_dp : &o->prefill_first) = v[0] == '1';
    } else { /* imbalance */
        if (!number(v, &x, NULL, NULL, 0) || x < 1 || x > 64) {
            mp_diag_add(d, "plan.imbalance = \"%s\": expected a load factor in [1, 64]", v);
            return 1;
        }
        o->moe_imbalance = x;
    }
    return 0;
}

mp_status mp_serve_plan_parse(const char *text, mp_serve_opts *o, mp_diag *d)
{
    static const char *const own[] = {"max_seqs", "chunk", "preempt", "attn_dp", "imbalance", "prefill_first"};
    const int nown = (int)(sizeof own / sizeof own[0]);
    if (!text)
        return MP_OK;
    size_t n = strlen(text);
    if (n > MP_PLAN_TEXT_MAX) { /* infer's cap, checked before a 100 KB key is named back */
        mp_diag_add(d, "plan: %zu characters: expected at most %d", n, MP_PLAN_TEXT_MAX);
        return MP_ERR_INPUT;
    }
    char *buf = malloc(n + 1), *rest = malloc(n + 1);
    if (!buf || !rest) {
        free(buf);
        free(rest);
        return MP_ERR_NOMEM;
    }
    memcpy(buf, text, n + 1);
    rest[0] = '\0';
    int bad = 0;
    unsigned own_given = 0; /* one bit per own[] key: a second value is refused as infer's keys are */
#define INFER_NAME(name, ...) #name,
    static const char *const infer_names[] = {MP_INFER_KEYS(INFER_NAME)};
#undef INFER_NAME
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        while (*tok == ' ')
            tok++;
        char *eq = strchr(tok, '=');
        if (eq) { /* "tp =2" is tp, as infer's parser trims it */
            char *ke = eq;
            while (ke > tok && ke[-1] == ' ')
                ke--;
            memmove(ke, eq, strlen(eq) + 1);
            eq = ke;
        }
        int mine = -1;
        for (int i = 0; eq && i < nown; i++)
            if ((size_t)(eq - tok) == strlen(own[i]) && !strncmp(tok, own[i], (size_t)(eq - tok)))
                mine = i;
        /* infer's per-run shape keys mean nothing to a simulation that forms its own batches
         * from the requests: refused, not silently dropped (`--plan in=100000` used to run the
         * default 1024-token prompts) */
        static const char *const not_here[][2] = {
            {"batch", "max_seqs=N (the scheduler forms the batches; max_seqs caps them)"},
            {"in", "--lengths fixed:IN:OUT (or a lengths table)"},
            {"out", "--lengths fixed:IN:OUT (or a lengths table)"},
            {"longest", "--lengths (each request stops at its own output length)"}};
        int refused = 0;
        for (size_t i = 0; eq && i < sizeof not_here / sizeof not_here[0]; i++)
            if ((size_t)(eq - tok) == strlen(not_here[i][0]) && !strncmp(tok, not_here[i][0], (size_t)(eq - tok))) {
                mp_diag_add(d, "plan.%s = \"%s\": not a serve key: expected %s", not_here[i][0], eq + 1,
                            not_here[i][1]);
                refused = 1;
            }
        int known = mine >= 0 || refused || !eq;
        for (size_t i = 0; !known && i < sizeof infer_names / sizeof infer_names[0]; i++)
            known = (size_t)(eq - tok) == strlen(infer_names[i]) && !strncmp(tok, infer_names[i], (size_t)(eq - tok));
        if (refused) {
            bad++;
        } else if (!known) {
            /* named here, not by infer's parser, whose list has batch, in and out but none of ours */
            *eq = '\0';
            char list[512] = "";
            size_t len = 0;
            for (size_t i = 0; i < sizeof infer_names / sizeof infer_names[0]; i++) {
                int skip = !strcmp(infer_names[i], "chunk"); /* listed with ours */
                for (size_t j = 0; j < sizeof not_here / sizeof not_here[0]; j++)
                    skip |= !strcmp(infer_names[i], not_here[j][0]);
                if (!skip && len < sizeof list)
                    len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", len ? ", " : "", infer_names[i]);
            }
            for (int i = 0; i < nown && len < sizeof list; i++)
                len += (size_t)snprintf(list + len, sizeof list - len, ", %s", own[i]);
            mp_diag_add(d, "plan: unknown key \"%s\" (value \"%s\"): expected one of %s", tok, eq + 1, list);
            bad++;
        } else if (mine >= 0 && (own_given & (1u << mine))) {
            *eq = '\0';
            mp_diag_add(d, "plan: key \"%s\" given twice (second value \"%s\")", tok, eq + 1);
            bad++;
        } else if (mine >= 0) {
            own_given |= 1u << mine;
            *eq = '\0';
            char *val = eq + 1, *ve = val + strlen(val); /* blanks trimmed, as infer's parser trims */
            while (*val == ' ')
                val++;
            while (ve > val && ve[-1] == ' ')
                *--ve = '\0';
            bad += serve_key(tok, val, o, d);
        } else {
            if (rest[0])
                strcat(rest, ",");
            strcat(rest, tok);
        }
    }
    mp_status st = rest[0] ? mp_infer_plan_parse(rest, &o->plan, d) : MP_OK;
    free(buf);
    free(rest);
    if (st == MP_ERR_NOMEM)
        return st;
    return bad || st != MP_OK ? MP_ERR_INPUT : MP_OK;
}

/* "tp4x2" -> 4, 2 (also "tp4" = one replica). */
static int pool_spec(const char *s, int *tp, int *dp)
{
    int a = 0, b = 1, k = 0;
    if (sscanf(s, "tp%dx%d%n", &a, &b, &k) == 2 && s[k] == '\0') {
    } else if (sscanf(s, "tp%d%n", &a, &k) == 1 && s[k] == '\0') {
        b = 1;
    } else
        return 0;
    if (a < 1 || a > 1024 || b < 1 || b > 4096)
        return 0;
    *tp = a;
    *dp = b;
    return 1;
}

mp_status mp_serve_disagg_parse(const char *text, mp_serve_opts *o, mp_diag *d)
{
    char buf[128];
    if (!text || strlen(text) >= sizeof buf) {
        mp_diag_add(d, "disaggregate = \"%.60s\": expected \"prefill=tpAxN,decode=tpBxM\"", text ? text : "");
        return MP_ERR_INPUT;
    }
    strcpy(buf, text);
    int have = 0, bad = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        char *eq = strchr(tok, '=');
        int is_p = eq && !strncmp(tok, "prefill", (size_t)(eq - tok)) && eq - tok == 7;
        int is_d = eq && !strncmp(tok, "decode", (size_t)(eq - tok)) && eq - tok == 6;
        if (!(is_p || is_d) || !pool_spec(eq + 1, is_p ? &o->prefill_tp : &o->decode_tp,
                                          is_p ? &o->prefill_dp : &o->decode_dp)) {
            mp_diag_add(d, "disaggregate: \"%s\": expected prefill=tpAxN or decode=tpBxM (tp degree x "
                           "replicas, e.g. prefill=tp4x2)", tok);
            bad++;
            continue;
        }
        if (have & (is_p ? 1 : 2)) { /* a second pool of a kind was last-wins */
            mp_diag_add(d, "disaggregate: \"%s\": the %s pool given twice: expected one prefill= and one decode=",
                        tok, is_p ? "prefill" : "decode");
            bad++;
        }
        have |= is_p ? 1 : 2;
    }
    if (!bad && have != 3) {
        mp_diag_add(d, "disaggregate = \"%s\": expected both a prefill= and a decode= pool", text);
        bad++;
    }
    o->disaggregate = !bad;
    return bad ? MP_ERR_INPUT : MP_OK;
}

mp_status mp_serve_rate_parse(const char *text, double *rate, mp_diag *d)
{
    static const char *const u[] = {"/s", "/min", "/h", "qps"};
    static const double k[] = {1.0, 1.0 / 60.0, 1.0 / 3600.0, 1.0};
    double x;
    if (!text || !number(text, &x, u, k, 4) || !(x > 0) || x > 1e7) {
        mp_diag_add(d, "rate = \"%s\": expected requests per second in (0, 1e7], e.g. 12/s or 720/min",
                    text ? text : "");
        return MP_ERR_INPUT;
    }
    *rate = x;
    return MP_OK;
}

mp_status mp_serve_slo_parse(const char *text, mp_serve_opts *o, mp_diag *d)
{
    static const char *const u[] = {"s", "ms", "us"};
    static const double k[] = {1.0, 1e-3, 1e-6};
    char buf[128];
    if (!text || strlen(text) >= sizeof buf) {
        mp_diag_add(d, "slo: %zu characters: expected at most %zu, such as \"ttft_p99=1s,tpot_p99=40ms\"",
                    text ? strlen(text) : (size_t)0, sizeof buf - 1);
        return MP_ERR_INPUT;
    }
    strcpy(buf, text);
    int bad = 0, seen_t = 0, seen_p = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        char *eq = strchr(tok, '=');
        double x;
        if (eq)
            *eq = '\0';
        int t = eq && (!strcmp(tok, "ttft_p99") || !strcmp(tok, "ttft"));
        int p = eq && (!strcmp(tok, "tpot_p99") || !strcmp(tok, "tpot"));
        if (!(t || p) || !number(eq + 1, &x, u, k, 3) || !(x > 0) || x > 1e5) {
            mp_diag_add(d, "slo: \"%s%s%s\": expected ttft_p99=TIME or tpot_p99=TIME with TIME > 0 in s, ms or us",
                        tok, eq ? "=" : "", eq ? eq + 1 : "");
            bad++;
            continue;
        }
        if ((t && seen_t++) || (p && seen_p++)) {
            mp_diag_add(d, "slo: \"%s=%s\": %s given twice: expected each of ttft_p99 and tpot_p99 at most once",
                        tok, eq + 1, t ? "ttft_p99" : "tpot_p99");
            bad++;
            continue;
        }
        if (t)
            o->slo_ttft_s = x;
        else
            o->slo_tpot_s = x;
    }
    return bad ? MP_ERR_INPUT : MP_OK;
}

int mp_serve_plan_format(const mp_serve_opts *o, char *buf, size_t cap)
{
    const mp_infer_plan *p = &o->plan;
    char extra[64] = "";
    if (o->attn_dp)
        snprintf(extra, sizeof extra, ",attn_dp=1");
    if (o->prefill_first)
        snprintf(extra + strlen(extra), sizeof extra - strlen(extra), ",prefill_first=1");
    if (o->moe_imbalance >= 1)
        snprintf(extra + strlen(extra), sizeof extra - strlen(extra), ",imbalance=%g", o->moe_imbalance);
    /* disaggregated: the pools give tp and the replicas (the plan's read "tp=1,...,dp=0", a plan
     * that cannot be given back); they lead the string in --disaggregate's own form */
    char shape[96];
    if (o->disaggregate)
        snprintf(shape, sizeof shape, "prefill=tp%dx%d,decode=tp%dx%d,pp=%d,ep=%d", o->prefill_tp, o->prefill_dp,
                 o->decode_tp, o->decode_dp, p->pp, p->ep);
    else
        snprintf(shape, sizeof shape, "tp=%d,pp=%d,ep=%d,dp=%d", p->tp, p->pp, p->ep, p->dp);
    return snprintf(buf, cap, "%s,weights=%s,kv=%s,engine=%s,max_seqs=%lld,chunk=%lld,preempt=%s%s",
                    shape, mp_infer_weights_name((mp_infer_weights)p->weights),
                    mp_infer_kv_name((mp_infer_kv)p->kv), mp_engine_name((mp_engine_id)p->engine),
                    (long long)o->max_seqs, (long long)o->chunk_tokens,
                    o->preempt == MP_PREEMPT_SWAP ? "swap" : "recompute", extra);
}
