/* src/import/yaml.c — a YAML document (libfyaml's event parser) as (path, value, line)
 * entries: mapping keys joined by '.', sequence items by their index ("model.optim.betas.0");
 * a sequence of scalars is also kept whole, comma-joined, under its own path. A syntax error
 * (a truncated file, a bad indent) is MP_ERR_PARSE naming the file, line, column and libfyaml's
 * message. Aliases are kept as "*name" (the configs read here do not use them). */
#include <libfyaml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/import_internal.h"
#include "internal.h"

#define Y_DEPTH 64

typedef struct {
    char path[Y_DEPTH][IMP_KEY_CAP];
    int is_seq[Y_DEPTH];
    int index[Y_DEPTH];
    int want_key[Y_DEPTH];
    char joined[Y_DEPTH][IMP_VAL_CAP]; /* a sequence's scalars, comma-joined */
    int joined_line[Y_DEPTH];
    int depth;
} ystack;

typedef struct {
    char msg[400];
    int have;
} ycapture;

static void capture(struct fy_diag *d, void *user, const char *buf, size_t len)
{
    (void)d;
    ycapture *c = user;
    if (c->have)
        return;
    /* libfyaml names a string input "<memory-@0xADDR-0xADDR>": keep only ":line:col: ..." */
    if (len > 8 && !memcmp(buf, "<memory-", 8)) {
        const char *gt = memchr(buf, '>', len);
        if (gt) {
            len -= (size_t)(gt + 1 - buf);
            buf = gt + 1;
        }
    }
    size_t n = len < sizeof c->msg - 1 ? len : sizeof c->msg - 1;
    memcpy(c->msg, buf, n);
    while (n > 0 && (c->msg[n - 1] == '\n' || c->msg[n - 1] == ' '))
        n--;
    c->msg[n] = '\0';
    c->have = 1;
}

/* The path of the value now expected at the top of the stack. */
static void child_path(const ystack *s, const char *key, char *out, size_t cap)
{
    const char *parent = s->depth > 0 ? s->path[s->depth - 1] : "";
    imp_fmt(out, cap, "%s%s%s", parent, parent[0] ? "." : "", key);
}

static mp_status on_value(imp_ctx *c, ystack *s, char *pending, const char *val, int line,
                          int is_string, int container)
{
    char key[IMP_KEY_CAP];
    if (s->depth == 0) {
        key[0] = '\0';
    } else if (s->is_seq[s->depth - 1]) {
        char idx[16];
        imp_fmt(idx, sizeof idx, "%d", s->index[s->depth - 1]++);
        child_path(s, idx, key, sizeof key);
        if (!container) {
            char *j = s->joined[s->depth - 1];
            size_t n = strlen(j);
            imp_fmt(j + n, IMP_VAL_CAP - n, "%s%s", n ? "," : "", val);
            if (!s->joined_line[s->depth - 1])
                s->joined_line[s->depth - 1] = line;
        }
    } else {
        child_path(s, pending, key, sizeof key);
        s->want_key[s->depth - 1] = 1;
    }
    if (container) {
        if (s->depth >= Y_DEPTH)
            return MP_ERR_RANGE;
        mp_strlcpy(s->path[s->depth], key, IMP_KEY_CAP);
        s->index[s->depth] = 0;
        s->joined[s->depth][0] = '\0';
        s->joined_line[s->depth] = 0;
        s->depth++;
        return MP_OK;
    }
    return key[0] ? imp_kvs_add(c->kv, key, val, line, is_string) : MP_OK;
}

/* A scalar's text, decoded from its place in the source (the event's marks): plain scalars as
 * written, single-quoted ones with '' as ', double-quoted ones with the common escapes; block
 * scalars (| and >) as written. fy_token_get_text is not used: libfyaml 0.7.12 leaks the buffer
 * it formats a scalar of many escape chunks into (found by fuzz_import). */
static void scalar_text(const char *text, size_t len, struct fy_event *ev, struct fy_token *t,
                        char *out, size_t cap)
{
    const struct fy_mark *a = fy_event_start_mark(ev), *b = fy_event_end_mark(ev);
    size_t k = 0;
    out[0] = '\0';
    if (ev->type == FYET_ALIAS)
        out[k++] = '*';
    if (!a || !b || a->input_pos > b->input_pos || b->input_pos > len) {
        out[k] = '\0';
        return;
    }
    const char *p = text + a->input_pos, *e = text + b->input_pos;
    enum fy_scalar_style st = ev->type == FYET_SCALAR && t ? fy_token_scalar_style(t) : FYSS_PLAIN;
    char q = st == FYSS_SINGLE_QUOTED ? '\'' : st == FYSS_DOUBLE_QUOTED ? '"' : 0;
    if (q && p < e && *p == q)
        p++;
    if (q && e > p && e[-1] == q)
        e--;
    for (; p < e && k + 1 < cap; p++) {
        char ch = *p;
        if (q == '\'' && ch == '\'' && p + 1 < e && p[1] == '\'')
            p++;
        else if (q == '"' && ch == '\\' && p + 1 < e) {
            p++;
            ch = *p == 'n' ? '\n' : *p == 't' ? '\t' : *p;
        }
        out[k++] = ch;
    }
    while (!q && k > 0 && (out[k - 1] == ' ' || out[k - 1] == '\t' || out[k - 1] == '\r'))
        k--;
    out[k] = '\0';
}

mp_status imp_yaml_flatten(imp_ctx *c, const char *text, size_t len)
{
    /* YAML is Unicode text (YAML 1.2.2 section 5.1), and Debian 12's libfyaml 0.8 loops for ever
     * on a directive line ("% t\xd1") holding bytes that are not UTF-8 (found by fuzz_import) */
    if (mp_utf8_check_text(text, len, c->name, c->diag))
        return MP_ERR_PARSE;
    ycapture cap = {{0}, 0};
    struct fy_diag_cfg dc;
    fy_diag_cfg_default(&dc);
    dc.fp = NULL;
    dc.output_fn = capture;
    dc.user = &cap;
    dc.colorize = false;
    dc.show_source = false;
    dc.show_type = false;
    dc.show_module = false;
    struct fy_diag *diag = fy_diag_create(&dc);
    struct fy_parse_cfg pc = {0};
    pc.flags = FYPCF_QUIET;
    pc.diag = diag;
    struct fy_parser *fyp = diag ? fy_parser_create(&pc) : NULL;
    if (!fyp || fy_parser_set_string(fyp, text, len) != 0) {
        fy_parser_destroy(fyp);
        fy_diag_destroy(diag);
        return MP_ERR_NOMEM;
    }
    ystack *s = calloc(1, sizeof *s);
    mp_status st = s ? MP_OK : MP_ERR_NOMEM;
    char pending[IMP_KEY_CAP] = "";
    int docs = 0, last_line = 1;
    struct fy_event *ev;
    while (st == MP_OK && (ev = fy_parser_parse(fyp)) != NULL) {
        const struct fy_mark *mk = fy_event_start_mark(ev);
        int line = mk ? mk->line + 1 : last_line;
        last_line = line;
        switch (ev->type) {
        case FYET_DOCUMENT_START:
            if (docs++ > 0) {
                mp_diag_add(c->diag, "%s:%d: a second YAML document: expected one", c->name, line);
                st = MP_ERR_INPUT;
            }
            break;
        case FYET_MAPPING_START:
        case FYET_SEQUENCE_START:
            if (s->depth > 0 && !s->is_seq[s->depth - 1] && s->want_key[s->depth - 1]) {
                mp_diag_add(c->diag, "%s:%d: a mapping key that is a collection: expected a "
                            "scalar key", c->name, line);
                st = MP_ERR_INPUT;
                break;
            }
            st = on_value(c, s, pending, "", line, 0, 1);
            if (st == MP_OK) {
                s->is_seq[s->depth - 1] = ev->type == FYET_SEQUENCE_START;
                s->want_key[s->depth - 1] = 1;
            }
            break;
        case FYET_MAPPING_END:
        case FYET_SEQUENCE_END:
            if (s->depth > 0) {
                s->depth--;
                if (s->is_seq[s->depth] && s->joined[s->depth][0] && s->path[s->depth][0])
                    st = imp_kvs_add(c->kv, s->path[s->depth], s->joined[s->depth],
                                     s->joined_line[s->depth], 0);
            }
            break;
        case FYET_SCALAR:
        case FYET_ALIAS: {
            struct fy_token *t = ev->type == FYET_SCALAR ? ev->scalar.value : ev->alias.anchor;
            char val[IMP_VAL_CAP];
            scalar_text(text, len, ev, t, val, sizeof val);
            int quoted = ev->type == FYET_SCALAR && t && fy_token_scalar_style(t) != FYSS_PLAIN;
            if (s->depth > 0 && !s->is_seq[s->depth - 1] && s->want_key[s->depth - 1]) {
                mp_strlcpy(pending, val, sizeof pending);
                s->want_key[s->depth - 1] = 0;
            } else {
                st = on_value(c, s, pending, val, line, quoted, 0);
            }
            break;
        }
        default:
            break;
        }
        fy_parser_event_free(fyp, ev);
    }
    if (st == MP_OK && fy_parser_get_stream_error(fyp)) {
        if (cap.have && cap.msg[0] == ':') /* ":line:col: error: ..." */
            mp_diag_add(c->diag, "%s%s (not valid YAML)", c->name, cap.msg);
        else
            mp_diag_add(c->diag, "%s: not valid YAML: %s", c->name,
                        cap.have ? cap.msg : "syntax error");
        st = MP_ERR_PARSE;
    } else if (st == MP_ERR_RANGE) {
        mp_diag_add(c->diag, "%s:%d: nested deeper than %d levels", c->name, last_line, Y_DEPTH);
        st = MP_ERR_INPUT;
    }
    if (st == MP_OK && c->kv->n == 0) {
        mp_diag_add(c->diag, "%s:1: no mapping: expected a YAML config of key: value pairs", c->name);
        st = MP_ERR_INPUT;
    }
    free(s);
    fy_parser_destroy(fyp);
    fy_diag_destroy(diag);
    return st;
}
