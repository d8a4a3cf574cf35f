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
