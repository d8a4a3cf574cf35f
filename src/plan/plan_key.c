/* src/plan/plan_key.c — what a table of plan keys gives (plan_key.h): find, parse, format,
 * unknown-key suggestions and help, the same for every table (plan keys, island keys). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "plan/plan_key.h"

int mp_plan_key_find(const mp_plan_key_def *tab, int n, const char *key)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(tab[i].pub.name, key))
            return i;
    return -1;
}

static void store_int(const mp_plan_key_def *k, void *obj, int64_t x)
{
    char *f = (char *)obj + k->offset;
    if (k->size == sizeof(int64_t)) {
        memcpy(f, &x, sizeof x);
    } else {
        int v = (int)x;
        memcpy(f, &v, sizeof v);
    }
}

double mp_plan_key_get(const mp_plan_key_def *k, const void *obj)
{
    const char *f = (const char *)obj + k->offset;
    if (k->pub.type == MP_PLAN_KEY_REAL) {
        double x;
        memcpy(&x, f, sizeof x);
        return x;
    }
    if (k->size == sizeof(int64_t)) {
        int64_t x;
        memcpy(&x, f, sizeof x);
        return (double)x;
    }
    int v;
    memcpy(&v, f, sizeof v);
    return v;
}

static int parse_int(const char *key, const char *val, int64_t min, int64_t max, int64_t *out,
                     mp_diag *diag)
{
    char *end = NULL;
    errno = 0;
    long long x = strtoll(val, &end, 10);
    if (!val[0] || *end) {
        mp_diag_add(diag, "plan.%s = \"%s\": expected an integer in [%lld, %lld], in digits", key, val,
                    (long long)min, (long long)max);
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
    char list[160] = "";
    for (int i = 0; i < n; i++) {
        strncat(list, names[i], sizeof list - strlen(list) - 1);
        if (i + 1 < n)
            strncat(list, "|", sizeof list - strlen(list) - 1);
    }
    mp_diag_add(diag, "plan.%s = \"%s\": expected one of %s", key, val, list);
    return 0;
}

int mp_plan_key_parse_generic(const mp_plan_key_def *k, const char *val, void *obj, mp_diag *diag)
{
    const mp_plan_key *p = &k->pub;
    int64_t x = 0;
    int e = 0;
    switch (p->type) {
    case MP_PLAN_KEY_INT:
    case MP_PLAN_KEY_BOOL:
        if (!parse_int(p->name, val, (int64_t)p->min, (int64_t)p->max, &x, diag))
            return 0;
        store_int(k, obj, x);
        return 1;
    case MP_PLAN_KEY_REAL: {
        double r = 0;
        if (!parse_real(p->name, val, p->min, p->max, &r, diag))
            return 0;
        memcpy((char *)obj + k->offset, &r, sizeof r);
        return 1;
    }
    case MP_PLAN_KEY_ENUM:
        if (!mp_plan_parse_enum(p->name, val, p->names, p->nnames, &e, diag))
            return 0;
        store_int(k, obj, k->first + e);
        return 1;
    default:
        mp_diag_add(diag, "plan.%s = \"%s\": the key has no parser", p->name, val);
        return 0;
    }
}

int mp_plan_key_parse(const mp_plan_key_def *k, const char *val, void *obj, mp_diag *diag)
{
    if (k->ops && k->ops->parse)
        return k->ops->parse(k, val, obj, diag);
    return mp_plan_key_parse_generic(k, val, obj, diag);
}

void mp_plan_key_format(const mp_plan_key_def *k, const void *obj, char *buf, size_t cap,
                        size_t *len)
{
    if (k->ops && k->ops->format) {
        k->ops->format(k, obj, buf, cap, len);
        return;
    }
    double x = mp_plan_key_get(k, obj);
    if (k->fmt == MP_PF_IFSET && x == 0)
        return;
    const char *sep = ",";
    char *at = *len < cap ? buf + *len : NULL;
    size_t room = *len < cap ? cap - *len : 0;
    int n = 0;
    const mp_plan_key *p = &k->pub;
    if (p->type == MP_PLAN_KEY_REAL) {
        n = snprintf(at, room, "%s%s=%g", sep, p->name, x);
    } else if (p->type == MP_PLAN_KEY_ENUM) {
        int i = (int)x - k->first;
        n = snprintf(at, room, "%s%s=%s", sep, p->name, i >= 0 && i < p->nnames ? p->names[i] : "?");
    } else {
        n = snprintf(at, room, "%s%s=%lld", sep, p->name, (long long)x);
    }
    if (n > 0)
        *len += (size_t)n;
}

/* Levenshtein distance of a and b (two rows; keys are short, longer ones count as far). */
static int edit_distance(const char *a, const char *b)
{
    enum { MAXLEN = 40 };
    size_t la = strlen(a), lb = strlen(b);
    if (la >= MAXLEN || lb >= MAXLEN)
        return MAXLEN;
    int prev[MAXLEN + 1], cur[MAXLEN + 1];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            int del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, sizeof cur);
    }
    return prev[lb];
}

void mp_plan_key_unknown(const char *key, const char *val, const mp_plan_key_def *const *tabs,
                         const int *ns, int ntab, mp_diag *diag)
{
    const char *best = NULL;
    int best_d = 3; /* suggest only within 2 edits */
    char list[1024] = "";
    size_t n = 0;
    for (int t = 0; t < ntab; t++)
        for (int i = 0; i < ns[t]; i++) {
            const char *name = tabs[t][i].pub.name;
            int d = edit_distance(key, name);
            if (d < best_d && (size_t)d < strlen(key)) {
                best_d = d;
                best = name;
            }
            if (n < sizeof list)
                n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "", name);
        }
    char hint[96] = "";
    if (best)
        snprintf(hint, sizeof hint, "did you mean \"%s\"? ", best);
    mp_diag_add(diag, "plan: unknown key \"%s\" (value \"%s\"): %sexpected one of %s", key, val,
                hint, list);
}

/* "2^k" for a power of two from 2^10 up, else the integer. */
static void int_text(double x, char *buf, size_t cap)
{
    int64_t v = (int64_t)x;
    if (v >= 1024 && (v & (v - 1)) == 0) {
        int k = 0;
        while (((int64_t)1 << k) < v)
            k++;
        snprintf(buf, cap, "2^%d", k);
    } else {
        snprintf(buf, cap, "%lld", (long long)v);
    }
}

/* The values a key takes, in words: "1..2^24", "0|1", "[1, 64]", "none|selective|full". */
static void values_text(const mp_plan_key *p, char *buf, size_t cap)
{
    char lo[24], hi[24];
    size_t n = 0;
    buf[0] = '\0';
    switch (p->type) {
    case MP_PLAN_KEY_INT:
        int_text(p->min, lo, sizeof lo);
        int_text(p->max, hi, sizeof hi);
        snprintf(buf, cap, "%s..%s", lo, hi);
        break;
    case MP_PLAN_KEY_BOOL: snprintf(buf, cap, "0|1"); break;
    case MP_PLAN_KEY_REAL: snprintf(buf, cap, "[%g, %g]", p->min, p->max); break;
    case MP_PLAN_KEY_ENUM:
        for (int i = 0; i < p->nnames && n < cap; i++)
            n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? "|" : "", p->names[i]);
        break;
    default: snprintf(buf, cap, "%s", p->syntax ? p->syntax : "text"); break;
    }
}

/* Append text to buf at *len, as snprintf would (counting what does not fit). */
static void put(char *buf, size_t cap, size_t *len, const char *text, size_t n)
{
    if (*len < cap) {
        size_t room = cap - *len - 1, k = n < room ? n : room;
        memcpy(buf + *len, text, k);
        buf[*len + k] = '\0';
    }
    *len += n;
}

int mp_plan_key_help(const mp_plan_key_def *tab, int n, char *buf, size_t cap)
{
    enum { WIDTH = 96, INDENT = 19 }; /* lines wrap at blanks to fit WIDTH columns */
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        const mp_plan_key *p = &tab[i].pub;
        char values[160], line[512];
        values_text(p, values, sizeof values);
        snprintf(line, sizeof line, "  %-16s %s: %s; default %s", p->name, values, p->help,
                 p->default_text);
        const char *s = line;
        size_t col0 = 0; /* columns taken by the indent of a continuation line */
        while (strlen(s) + col0 > WIDTH) {
            const char *cut = s + (WIDTH - col0);
            while (cut > s && *cut != ' ')
                cut--;
            if (cut == s)
                break;
            put(buf, cap, &len, s, (size_t)(cut - s));
            put(buf, cap, &len, "\n                   ", 1 + INDENT);
            s = cut + 1;
            col0 = INDENT;
        }
        put(buf, cap, &len, s, strlen(s));
        put(buf, cap, &len, "\n", 1);
    }
    return (int)len;
}

void mp_plan_key_tokens(const char *text, void (*fn)(char *key, char *val, void *ctx), void *ctx)
{
    char buf[MP_PLAN_TEXT_MAX + 1];
    mp_strlcpy(buf, text, sizeof buf);
    for (char *tok = buf, *next; tok; tok = next) {
        next = strchr(tok, ',');
        if (next)
            *next++ = '\0';
        while (*tok == ' ')
            tok++;
        for (char *e = tok + strlen(tok); e > tok && e[-1] == ' '; e--)
            e[-1] = '\0';
        if (!*tok)
            continue;
        char *eq = strchr(tok, '=');
        if (!eq) {
            fn(tok, NULL, ctx);
            continue;
        }
        *eq = '\0';
        char *key = tok, *val = eq + 1;
        for (char *e = key + strlen(key); e > key && e[-1] == ' '; e--)
            e[-1] = '\0';
        while (*val == ' ')
            val++;
        fn(key, val, ctx);
    }
}
