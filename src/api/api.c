/* src/api/api.c — the request -> JSON layer's table of commands, its dispatcher by name, the
 * error object of a failed call and the release function (api.h). */
#include <ctype.h>
#include <stddef.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "meshplan/api.h"

static const struct {
    const char *name;
    mp_status (*fn)(const char *, size_t, char **, mp_diag *);
} commands[] = {
#define MP_X_CMD(name, fn) {#name, fn},
    MP_API_LIST(MP_X_CMD)
#undef MP_X_CMD
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

size_t mp_api_command_count(void) { return NCOMMANDS; }

const char *mp_api_command_name(size_t i) { return i < NCOMMANDS ? commands[i].name : NULL; }

mp_status mp_api_call_json(const char *command, const char *request, size_t len, char **out,
                           mp_diag *diag)
{
    *out = NULL;
    for (size_t i = 0; command && i < NCOMMANDS; i++)
        if (!strcmp(command, commands[i].name))
            return commands[i].fn(request, len, out, diag);
    char list[128] = "";
    for (size_t i = 0; i < NCOMMANDS; i++) {
        strcat(list, commands[i].name);
        if (i + 1 < NCOMMANDS)
            strcat(list, ", ");
    }
    mp_diag_add(diag, "command = \"%.40s\": expected one of %s", command ? command : "(null)", list);
    return MP_ERR_NOT_FOUND;
}

void mp_api_free(void *p) { free(p); }

/* Field and value of a diag line: "[origin: ][where.]FIELD = VALUE: ..." with FIELD made of
 * identifier characters (letters, digits, '_', '.', '[', ']') and VALUE a quoted string or one
 * word (the library's convention; "request." dropped), or 'unknown field|key "FIELD"' (value
 * empty, or V of a following ' (value "V")'). 1 when the line follows one of them. */
static int ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '.' || c == '[' || c == ']';
}

static int field_value(const char *line, size_t n, char *field, size_t fcap, char *value,
                       size_t vcap)
{
    const char *end = line + n, *f = NULL, *fe = NULL, *v = NULL, *ve = NULL;
    for (const char *s = line; s + 3 <= end && !f; s++) {
        size_t k = s + 15 <= end && !memcmp(s, "unknown field \"", 15) ? 15
                   : s + 13 <= end && !memcmp(s, "unknown key \"", 13) ? 13 : 0;
        if (k) {
            const char *q = memchr(s + k, '"', (size_t)(end - s - (ptrdiff_t)k));
            if (q) {
                f = s + k, fe = q, v = ve = q;
                /* the plan's 'unknown key "K" (value "V")' names the value too */
                const char *w = q + 1;
                if (w + 9 <= end && !memcmp(w, " (value \"", 9)) {
                    const char *wq = memchr(w + 9, '"', (size_t)(end - w - 9));
                    if (wq)
                        v = w + 9, ve = wq;
                }
            }
            break;
        }
        if (memcmp(s, " = ", 3))
            continue;
        const char *a = s;
        while (a > line && ident_char(a[-1]))
            a--;
        if (a == s || (a > line && a[-1] != ' '))
            continue;
        const char *b = s + 3;
        if (b < end && *b == '"') {
            const char *q = memchr(b + 1, '"', (size_t)(end - b - 1));
            if (!q || q + 1 >= end || q[1] != ':')
                continue;
            v = b + 1, ve = q;
        } else {
            const char *q = b;
            while (q < end && *q != ':' && *q != ' ')
                q++;
            if (q == b || q >= end || *q != ':')
                continue;
            v = b, ve = q;
        }
        f = a, fe = s;
    }
    if (!f)
        return 0;
    if (fe - f > 8 && !memcmp(f, "request.", 8))
        f += 8;
    size_t fl = (size_t)(fe - f), vl = (size_t)(ve - v);
    if (fl >= fcap) fl = fcap - 1;
    if (vl >= vcap) vl = vcap - 1;
    memcpy(field, f, fl);
    field[fl] = '\0';
    memcpy(value, v, vl);
    value[vl] = '\0';
    return 1;
}

char *mp_api_error_json(mp_status st, const mp_diag *diag)
{
    const char *text = diag && diag->len ? diag->text : mp_status_str(st);
    json_t *o = json_object(), *lines = json_array();
    json_t *field = json_null(), *value = json_null();
    for (const char *s = text; *s;) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);
        if (n) {
            json_array_append_new(lines, json_stringn(s, n));
            char f[96], v[256];
            if (json_is_null(field) && field_value(s, n, f, sizeof f, v, sizeof v)) {
                field = json_string(f);
                value = json_string(v);
            }
        }
        s += n + (nl != NULL);
    }
    json_object_set_new(o, "status", json_string(mp_status_str(st)));
    json_object_set_new(o, "code", json_integer((json_int_t)st));
    json_object_set_new(o, "message", json_string(text));
    json_object_set_new(o, "messages", lines);
    json_object_set_new(o, "field", field);
    json_object_set_new(o, "value", value);
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}
