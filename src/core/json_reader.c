/* src/core/json_reader.c — field readers for the JSON descriptions (cluster, islands): each
 * reports "origin: where.field = value: expected ..." into the reader's diagnostics. Internal. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "json_reader.h"

json_t *mp_json_load(const char *text, size_t len, const char *origin, mp_diag *diag)
{
    json_error_t err;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
    if (!root) {
        char at[80];
        mp_text_line(text, len, err.line, err.column, at, sizeof at);
        mp_diag_add(diag, "%s: line %d, column %d: %s%s%s%s", origin, err.line, err.column, err.text,
                    at[0] ? " (the line reads: " : "", at, at[0] ? ")" : "");
    }
    return root;
}

void mp_jr_bad(mp_jreader *r, const char *field, const json_t *v, const char *expected)
{
    char *txt = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(12)) : NULL;
    mp_diag_add(r->diag, "%s: %s.%s = %.60s: expected %s", r->origin, r->where, field,
                txt ? txt : "(missing)", expected);
    free(txt);
    r->errors++;
}

/* A number in [lo, hi] (lo_open: strictly above lo); *out unchanged when absent. Returns 1 if
 * present and valid. */
int mp_jr_num(mp_jreader *r, const json_t *o, const char *field, double lo, int lo_open, double hi,
                double *out, const char *expected)
{
    const json_t *v = json_object_get(o, field);
    if (!v || json_is_null(v))
        return 0;
    double x = json_is_number(v) ? json_number_value(v) : NAN;
    if (!isfinite(x) || x < lo || (lo_open && x <= lo) || x > hi) {
        mp_jr_bad(r, field, v, expected);
        return 0;
    }
    *out = x;
    return 1;
}

int mp_jr_int(mp_jreader *r, const json_t *o, const char *field, int64_t lo, int64_t hi,
                int64_t *out)
{
    const json_t *v = json_object_get(o, field);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        char what[64];
        snprintf(what, sizeof what, "an integer in [%lld, %lld]", (long long)lo, (long long)hi);
        mp_jr_bad(r, field, v, what);
        return 0;
    }
    *out = (int64_t)json_integer_value(v);
    return 1;
}

int mp_jr_bool(mp_jreader *r, const json_t *o, const char *field, int *out)
{
    const json_t *v = json_object_get(o, field);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_boolean(v)) {
        mp_jr_bad(r, field, v, "true or false");
        return 0;
    }
    *out = json_is_true(v);
    return 1;
}

int mp_jr_str(mp_jreader *r, const json_t *o, const char *field, char *out, size_t cap)
{
    const json_t *v = json_object_get(o, field);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) >= cap) {
        char what[64];
        snprintf(what, sizeof what, "a non-empty string of at most %zu characters", cap - 1);
        mp_jr_bad(r, field, v, what);
        return 0;
    }
    mp_strlcpy(out, json_string_value(v), cap);
    return 1;
}

void mp_jr_check_keys(mp_jreader *r, const json_t *o, const char *const *known)
{
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)o, k, v) {
        if (k[0] == '_')
            continue;
        int ok = 0;
        for (const char *const *p = known; *p; p++)
            if (!strcmp(k, *p))
                ok = 1;
        if (!ok) {
            char list[600] = "";
            for (const char *const *p = known; *p; p++) {
                strncat(list, *p, sizeof list - strlen(list) - 1);
                if (p[1])
                    strncat(list, ", ", sizeof list - strlen(list) - 1);
            }
            mp_diag_add(r->diag, "%s: %s: unknown field \"%s\": expected one of %s", r->origin,
                        r->where, k, list);
            r->errors++;
        }
    }
}
