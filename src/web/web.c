/* src/web/web.c — the router of the local web app (meshplan/web.h): the embedded page and
 * script by exact path, the API by path and method, JSON errors for everything else. No file
 * is opened here: the page lives in the binary (cmake/embed_files.cmake, mp_embedded_web). */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshplan/api.h"
#include "web_internal.h"

struct mp_embedded_file { const char *name; const char *data; size_t len; };
extern const struct mp_embedded_file mp_embedded_web[]; /* generated: embedded_web.c */

/* URL path -> embedded file name and content type. */
static const struct { const char *path, *file, *type; } pages[] = {
    {"/", "index.html", "text/html; charset=utf-8"},
    {"/index.html", "index.html", "text/html; charset=utf-8"},
    {"/app.js", "app.js", "text/javascript; charset=utf-8"},
    {"/style.css", "style.css", "text/css; charset=utf-8"},
    {"/vendor/chart.umd.min.js", "chart.umd.min.js", "text/javascript; charset=utf-8"},
};

void mp_web_response_free(mp_web_response *r)
{
    if (r) {
        free(r->body);
        r->body = NULL;
        r->len = 0;
    }
}

static void set_body(mp_web_response *out, int status, const char *type, char *s, size_t len)
{
    out->status = s ? status : 500;
    out->content_type = s ? type : "application/json";
    out->body = s;
    out->len = s ? len : 0;
}

void web_json(mp_web_response *out, char *s)
{
    set_body(out, 200, "application/json", s, s ? strlen(s) : 0);
}

/* Make s valid UTF-8 in place (JSON strings must be; a request path may hold any bytes): every
 * byte that does not start or continue a well-formed sequence (RFC 3629 Sec. 4, overlongs and
 * surrogates included) becomes '?', and control characters become spaces. */
static void utf8_clean(char *s)
{
    unsigned char *p = (unsigned char *)s;
    while (*p) {
        unsigned c = *p;
        int n = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : -1;
        int ok = n >= 0;
        unsigned cp = n == 0 ? c : n == 1 ? c & 0x1F : n == 2 ? c & 0x0F : c & 0x07;
        for (int i = 1; ok && i <= n; i++) {
            ok = (p[i] & 0xC0) == 0x80;
            cp = (cp << 6) | (p[i] & 0x3F);
        }
        static const unsigned min_cp[4] = {0, 0x80, 0x800, 0x10000};
        if (ok && n > 0 && (cp < min_cp[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)))
            ok = 0;
        if (!ok) {
            *p++ = '?';
            continue;
        }
        if (c < 0x20)
            *p = ' ';
        p += n + 1;
    }
}

void web_error(mp_web_response *out, int status, const char *field, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* one line: the diagnostics' newlines become "; " */
    for (char *p = msg; *p; p++)
        if (*p == '\n')
            *p = p[1] ? ';' : '\0';
    utf8_clean(msg);
    json_t *o = json_pack("{s:s}", "error", msg);
    if (o && field)
        json_object_set_new(o, "field", json_string(field));
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    set_body(out, status, "application/json", s, s ? strlen(s) : 0);
}

void web_refusal(mp_web_response *out, const char *command, mp_status st, const mp_diag *d,
                 int not_found_status)
{
    const char *text = d && d->len ? d->text : mp_status_str(st);
    if (st == MP_ERR_PARSE) {
        /* the request reader's "COMMAND: line L, column C: ..." (json_reader.h mp_json_load) */
        size_t n = strlen(command);
        if (!strncmp(text, command, n) && !strncmp(text + n, ": ", 2))
            text += n + 2;
        web_error(out, 400, NULL, "malformed JSON at %s", text);
        return;
    }
    /* the field, as the layer's error object names it from the first line (api.h) */
    char *e = mp_api_error_json(st, d);
    json_t *eo = e ? json_loads(e, 0, NULL) : NULL;
    mp_api_free(e);
    const json_t *fj = json_object_get(eo, "field");
    int code = st == MP_ERR_NOT_FOUND ? not_found_status
               : st == MP_ERR_NOMEM || st == MP_ERR_INTERNAL || st == MP_ERR_IO ? 500 : 400;
    web_error(out, code, json_is_string(fj) ? json_string_value(fj) : NULL, "%s", text);
    json_decref(eo);
}

static int serve_page(const char *path, mp_web_response *out)
{
    for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++) {
        if (strcmp(path, pages[i].path))
            continue;
        for (const struct mp_embedded_file *f = mp_embedded_web; f->name; f++)
            if (!strcmp(f->name, pages[i].file)) {
                char *b = malloc(f->len + 1);
                if (b)
                    memcpy(b, f->data, f->len + 1);
                set_body(out, 200, pages[i].type, b, f->len);
                return 1;
            }
    }
    return 0;
}

mp_status mp_web_handle(const mp_catalog *cat, const char *method, const char *target,
                        const char *body, size_t len, mp_web_response *out)
{
    memset(out, 0, sizeof *out);
    char path[512];
    size_t n = strcspn(target ? target : "", "?#");
    if (n >= sizeof path) {
        web_error(out, 404, NULL, "path of %zu bytes: not found", n);
        return out->body ? MP_OK : MP_ERR_NOMEM;
    }
    memcpy(path, target ? target : "", n);
    path[n] = '\0';
    int get = method && (!strcmp(method, "GET") || !strcmp(method, "HEAD"));
    int post = method && !strcmp(method, "POST");
    static const char *const api[] = {"/api/catalog", "/api/predict", "/api/search", "/api/trace",
                                      "/api/infer"};
    int which = -1;
    for (int i = 0; i < (int)(sizeof api / sizeof api[0]); i++)
        if (!strcmp(path, api[i]))
            which = i;
    if (which < 0) {
        if (get && serve_page(path, out))
            return out->body ? MP_OK : MP_ERR_NOMEM;
        int known = 0;
        for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++)
            known |= !strcmp(path, pages[i].path);
        if (known)
            web_error(out, 405, NULL, "%s %s: this path takes GET", method ? method : "", path);
        else
            web_error(out, 404, NULL, "%s: not found (the page is /, the API /api/predict, "
                      "/api/trace, /api/search, /api/infer and /api/catalog)", path);
    } else if (which == 0 ? !get : !post) {
        web_error(out, 405, NULL, "%s %s: this path takes %s", method ? method : "", path,
                  which == 0 ? "GET" : "POST with a JSON body");
    } else if (len > MP_WEB_MAX_BODY_BYTES) {
        web_error(out, 413, NULL, "request body of %zu bytes: expected at most %d", len,
                  MP_WEB_MAX_BODY_BYTES);
    } else if (which == 0) {
        web_api_catalog(cat, out);
    } else if (which == 1) {
        web_api_predict(cat, body, len, out);
    } else if (which == 2) {
        web_api_search(cat, body, len, out);
    } else if (which == 3) {
        web_api_trace(cat, body, len, out);
    } else {
        web_api_infer(body, len, out);
    }
    return out->body ? MP_OK : MP_ERR_NOMEM;
}
