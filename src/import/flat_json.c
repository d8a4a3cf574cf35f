/* src/import/flat_json.c — a JSON document as (path, value, line) entries: jansson checks the
 * syntax (and names the line and column of an error), then a small walk over the checked text
 * records each leaf's dotted path ("zero_optimization.stage", "optimizer.params.betas.0") and
 * the line its value starts on, which jansson does not keep. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "import/import_internal.h"
#include "internal.h"

typedef struct {
    const char *t;
    size_t n, i;
    int line;
    imp_ctx *c;
    mp_status st;
    int depth;
} jw;

static void ws(jw *w)
{
    while (w->i < w->n && strchr(" \t\r\n", w->t[w->i])) {
        if (w->t[w->i] == '\n')
            w->line++;
        w->i++;
    }
}

/* A string at w->i (the text is valid JSON): its contents, escapes kept as written except \" */
static void jstring(jw *w, char *out, size_t cap)
{
    size_t k = 0;
    w->i++; /* opening quote */
    while (w->i < w->n && w->t[w->i] != '"') {
        char ch = w->t[w->i];
        if (ch == '\\' && w->i + 1 < w->n) {
            w->i++;
            ch = w->t[w->i];
        }
        if (k + 1 < cap)
            out[k++] = ch;
        w->i++;
    }
    w->i++;
    out[k] = '\0';
}

static void jvalue(jw *w, const char *path);

static void jchild(jw *w, const char *path, const char *key)
{
    char p[IMP_KEY_CAP];
    imp_fmt(p, sizeof p, "%s%s%s", path, path[0] ? "." : "", key);
    jvalue(w, p);
}

static void jvalue(jw *w, const char *path)
{
    ws(w);
    if (w->i >= w->n || w->st != MP_OK || ++w->depth > 64)
        return;
    char ch = w->t[w->i];
    if (ch == '{' || ch == '[') {
        int obj = ch == '{', idx = 0;
        w->i++;
        for (;;) {
            ws(w);
            if (w->i >= w->n || w->t[w->i] == (obj ? '}' : ']')) {
                w->i++;
                break;
            }
            if (w->t[w->i] == ',') {
                w->i++;
                continue;
            }
            char key[IMP_KEY_CAP];
            if (obj) {
                jstring(w, key, sizeof key);
                ws(w);
                w->i++; /* ':' */
            } else {
                imp_fmt(key, sizeof key, "%d", idx++);
            }
            jchild(w, path, key);
        }
    } else {
        char val[IMP_VAL_CAP];
        int line = w->line, str = ch == '"';
        if (str) {
            jstring(w, val, sizeof val);
        } else {
            size_t s = w->i;
            while (w->i < w->n && !strchr(",}] \t\r\n", w->t[w->i]))
                w->i++;
            size_t len = w->i - s < sizeof val ? w->i - s : sizeof val - 1;
            memcpy(val, w->t + s, len);
            val[len] = '\0';
        }
        w->st = imp_kvs_add(w->c->kv, path, val, line, str);
    }
    w->depth--;
}

mp_status imp_json_flatten(imp_ctx *c, const char *text, size_t len)
{
    json_error_t err;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
    if (!root) {
        char at[80];
        mp_text_line(text, len, err.line, err.column, at, sizeof at);
        mp_diag_add(c->diag, "%s:%d:%d: %s%s%s%s", c->name, err.line, err.column, err.text,
                    at[0] ? " (the line reads: " : "", at, at[0] ? ")" : "");
        return MP_ERR_PARSE;
    }
    int obj = json_is_object(root);
    json_decref(root);
    if (!obj) {
        mp_diag_add(c->diag, "%s:1: the top level is not an object: expected a JSON object", c->name);
        return MP_ERR_INPUT;
    }
    jw w = {text, len, 0, 1, c, MP_OK, 0};
    jvalue(&w, "");
    return w.st;
}
