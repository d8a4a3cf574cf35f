/* src/core/status.c — status names and the diagnostics buffer (see meshplan/status.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "meshplan/status.h"

static const char *const status_names[] = {
#define MP_X_NAME(name, text) text,
    MP_STATUS_LIST(MP_X_NAME)
#undef MP_X_NAME
};
_Static_assert(sizeof status_names / sizeof status_names[0] == MP_STATUS_COUNT,
               "status_names must match MP_STATUS_LIST");

const char *mp_status_str(mp_status s)
{
    if ((int)s < 0 || s >= MP_STATUS_COUNT)
        return "unknown";
    return status_names[s];
}

void mp_diag_clear(mp_diag *d)
{
    if (!d)
        return;
    d->text[0] = '\0';
    d->len = 0;
    d->count = 0;
}

void mp_diag_add(mp_diag *d, const char *fmt, ...)
{
    if (!d)
        return;
    d->count++;
    if (d->len >= MP_DIAG_CAP - 1)
        return;
    size_t room = MP_DIAG_CAP - d->len;
    if (d->len > 0) {
        d->text[d->len++] = '\n';
        d->text[d->len] = '\0';
        room--;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(d->text + d->len, room, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= room) {
        d->len = MP_DIAG_CAP - 1;
        memcpy(d->text + MP_DIAG_CAP - 4, "...", 4);
    } else {
        d->len += (size_t)n;
    }
}

void mp_nearest_multiples(int64_t n, int64_t per, char *buf, size_t cap)
{
    int64_t lo = n / per * per, hi = lo + per;
    if (lo >= per)
        snprintf(buf, cap, "%lld or %lld", (long long)lo, (long long)hi);
    else
        snprintf(buf, cap, "%lld", (long long)hi);
}

void mp_strlcpy(char *dst, const char *src, size_t cap)
{
    if (cap == 0)
        return;
    size_t n = src ? strlen(src) : 0;
    if (n >= cap)
        n = cap - 1;
    if (n)
        memcpy(dst, src, n);
    dst[n] = '\0';
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), or 0 when it is not one (RFC 3629:
 * no overlong forms, no surrogates, nothing above U+10FFFF). */
static size_t utf8_seq_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) { len = 2; min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { len = 3; min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { len = 4; min = 0x10000; }
    else return 0;
    if (len > n)
        return 0;
    unsigned cp = c & (0x7F >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

size_t mp_utf8_invalid_at(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = u[i] ? utf8_seq_len(u + i, n - i) : 0;
        if (!k)
            return i;
        i += k;
    }
    return n;
}

void mp_utf8_scrub(char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq_len((const unsigned char *)s + i, n - i);
        if (!k) {
            s[i++] = '?';
            continue;
        }
        i += k;
    }
}

int mp_utf8_check_text(const char *text, size_t len, const char *origin, mp_diag *diag)
{
    size_t badat = mp_utf8_invalid_at(text, len);
    if (badat >= len)
        return 0;
    size_t line = 1, col = 1;
    for (size_t i = 0; i < badat; i++, col++)
        if (text[i] == '\n') {
            line++;
            col = 0;
        }
    mp_diag_add(diag, "%s: line %zu, byte %zu: 0x%02X: expected UTF-8 text", origin, line, col,
                (unsigned)(unsigned char)text[badat]);
    return 1;
}

void mp_text_line(const char *text, size_t len, int line, int column, char *out, size_t cap)
{
    if (cap == 0)
        return;
    out[0] = '\0';
    if (!text || line < 1 || cap < 8)
        return;
    size_t i = 0;
    for (int l = 1; l < line && i < len; i++)
        if (text[i] == '\n')
            l++;
    size_t start = i, end = i;
    while (end < len && text[end] != '\n' && text[end] != '\r')
        end++;
    while (start < end && (text[start] == ' ' || text[start] == '\t'))
        start++;
    /* Keep the error's column in view: start up to cap - 24 bytes before it. */
    size_t col = column > 0 ? i + (size_t)column : start;
    size_t n = 0;
    if (col > start + (cap - 24)) {
        start = col - (cap - 24);
        memcpy(out, "...", 3);
        n = 3;
    }
    for (i = start; i < end && n + 1 < cap; i++) {
        unsigned char c = (unsigned char)text[i];
        out[n++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    out[n] = '\0';
    if (i < end)
        memcpy(out + n - 3, "...", 4);
    mp_utf8_scrub(out);
}

int mp_is_blank(const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (text[i] != ' ' && text[i] != '\t' && text[i] != '\n' && text[i] != '\r')
            return 0;
    return 1;
}
