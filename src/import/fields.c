/* src/import/fields.c — the flat (key, value, line) list every reader fills, and the helpers
 * that read typed values from it and record meshplan fields with where they came from. */
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "import/import_internal.h"
#include "internal.h"

mp_status imp_kvs_add(imp_kvs *l, const char *key, const char *val, int line, int is_string)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->v[i].key, key) == 0) {
            mp_strlcpy(l->v[i].val, val, sizeof l->v[i].val);
            l->v[i].line = line;
            l->v[i].is_string = is_string;
            return MP_OK;
        }
    if (l->n >= IMP_ENTRIES_MAX)
        return MP_ERR_RANGE;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        imp_kv *v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v)
            return MP_ERR_NOMEM;
        l->v = v;
        l->cap = cap;
    }
    imp_kv *e = &l->v[l->n++];
    memset(e, 0, sizeof *e);
    mp_strlcpy(e->key, key, sizeof e->key);
    mp_strlcpy(e->val, val, sizeof e->val);
    e->line = line;
    e->is_string = is_string;
    return MP_OK;
}

void imp_kvs_free(imp_kvs *l)
{
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

imp_kv *imp_find(imp_ctx *c, const char *key)
{
    imp_kv *hit = NULL;
    size_t n = strlen(key);
    for (int i = 0; i < c->kv->n; i++) {
        imp_kv *e = &c->kv->v[i];
        if (strcmp(e->key, key) == 0) {
            e->used = 1;
            hit = e;
        } else if (!strncmp(e->key, key, n) && e->key[n] == '.') {
            e->used = 1; /* the items of an array read whole ("model.converters.0") */
        }
    }
    return hit;
}

int imp_is_null(const imp_kv *e)
{
    if (!e)
        return 1;
    if (e->is_string)
        return 0;
    return !e->val[0] || !strcmp(e->val, "null") || !strcmp(e->val, "None") ||
           !strcmp(e->val, "~");
}

void imp_where(const imp_ctx *c, const imp_kv *e, char *buf, size_t cap)
{
    if (e->line <= 0) { /* an override given on the command line */
        const char *k = e->key[0] == '-' ? e->key + 2 : e->key;
        if (!strncmp(k, "trainer:", 8))
            k += 8;
        imp_fmt(buf, cap, "command line: --%s", k);
    }
    else
        imp_fmt(buf, cap, "%s:%d:%s", c->name, e->line, e->key);
}

void imp_bad(imp_ctx *c, const imp_kv *e, const char *expected)
{
    char at[IMP_KEY_CAP + 300];
    imp_where(c, e, at, sizeof at);
    mp_diag_add(c->diag, "%s = \"%.80s\": expected %s", at, e->val, expected);
    c->errors++;
}

int imp_int(imp_ctx *c, const char *key, int64_t min, int64_t max, int64_t *out, imp_kv **at)
{
    imp_kv *e = imp_find(c, key);
    if (at)
        *at = e;
    if (imp_is_null(e))
        return 0;
    char *end = NULL;
    errno = 0;
    double x = strtod(e->val, &end); /* 1e9 and 2048.0 are integers too */
    if (!e->val[0] || *end || errno || !isfinite(x) || x != floor(x) || x < (double)min ||
        x > (double)max) {
        char want[96];
        snprintf(want, sizeof want, "an integer in [%lld, %lld]", (long long)min, (long long)max);
        imp_bad(c, e, want);
        return -1;
    }
    *out = (int64_t)x;
    return 1;
}

int imp_real(imp_ctx *c, const char *key, double *out, imp_kv **at)
{
    imp_kv *e = imp_find(c, key);
    if (at)
        *at = e;
    if (imp_is_null(e))
        return 0;
    char *end = NULL;
    double x = strtod(e->val, &end);
    if (!e->val[0] || *end || !isfinite(x)) {
        imp_bad(c, e, "a number");
        return -1;
    }
    *out = x;
    return 1;
}

int imp_bool(imp_ctx *c, const char *key, int *out, imp_kv **at)
{
    imp_kv *e = imp_find(c, key);
    if (at)
        *at = e;
    if (!e || (imp_is_null(e) && e->val[0]))
        return 0;
    static const char *const yes[] = {"", "true", "True", "1", "yes", "on"};
    static const char *const no[] = {"false", "False", "0", "no", "off"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        if (!strcmp(e->val, yes[i])) {
            *out = 1;
            return 1;
        }
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        if (!strcmp(e->val, no[i])) {
            *out = 0;
            return 1;
        }
    imp_bad(c, e, "true or false");
    return -1;
}

void imp_set(imp_ctx *c, mp_field_kind kind, const char *key, const char *value,
             const imp_kv *from_kv, mp_import_origin origin, const char *why)
{
    mp_import *o = c->out;
    mp_import_field *f = NULL;
    for (int i = 0; i < o->nfields; i++)
        if (strcmp(o->field[i].key, key) == 0)
            f = &o->field[i];
    if (!f) {
        if (o->nfields >= MP_IMPORT_FIELDS_MAX)
            return; /* cap: far above any reader's field count */
        f = &o->field[o->nfields++];
    }
    memset(f, 0, sizeof *f);
    f->kind = kind;
    mp_strlcpy(f->key, key, sizeof f->key);
    mp_strlcpy(f->value, value, sizeof f->value);
    if (from_kv) {
        f->origin = from_kv->line > 0 ? MP_FROM_FILE : MP_FROM_OPTION; /* line 0: an override */
        imp_where(c, from_kv, f->from, sizeof f->from);
        if (why && why[0]) {
            size_t n = strlen(f->from);
            imp_fmt(f->from + n, sizeof f->from - n, " (%s)", why);
        }
    } else {
        f->origin = origin;
        mp_strlcpy(f->from, why ? why : "", sizeof f->from);
    }
}

void imp_set_int(imp_ctx *c, mp_field_kind kind, const char *key, int64_t v,
                 const imp_kv *from_kv, mp_import_origin origin, const char *why)
{
    char buf[32];
    imp_fmt(buf, sizeof buf, "%lld", (long long)v);
    imp_set(c, kind, key, buf, from_kv, origin, why);
}

int imp_map_int(imp_ctx *c, const char *key, mp_field_kind kind, const char *fkey, int64_t min,
                int64_t max, int64_t *out)
{
    imp_kv *e = NULL;
    int64_t v = 0;
    int r = imp_int(c, key, min, max, &v, &e);
    if (r == 1) {
        imp_set_int(c, kind, fkey, v, e, MP_FROM_FILE, NULL);
        if (out)
            *out = v;
    }
    return r;
}

const mp_import_field *mp_import_get(const mp_import *imp, const char *key)
{
    for (int i = 0; i < imp->nfields; i++)
        if (strcmp(imp->field[i].key, key) == 0)
            return &imp->field[i];
    return NULL;
}

int imp_fmt(char *buf, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
    return n;
}
