/* meshplan/status.h — status codes and diagnostics shared by every module.
 *
 * Every library function that can fail returns an mp_status (MP_OK == 0) and writes its results
 * through out-pointers. When a caller passes an mp_diag, a failing function appends one line per
 * problem to it, naming the field, the value and what was expected. The library never prints and
 * never exits; only the CLI does.
 *
 * Status codes are append-only: never renumber (other tools read them through the CLI's exit
 * codes and JSON).
 */
#ifndef MESHPLAN_STATUS_H
#define MESHPLAN_STATUS_H

#include <stddef.h>

#define MP_STATUS_LIST(X)                                                              \
    X(MP_OK, "ok")                                                                     \
    X(MP_ERR_INPUT, "bad input")           /* a value out of range or inconsistent */  \
    X(MP_ERR_NOT_FOUND, "not found")       /* unknown catalog key, missing file */     \
    X(MP_ERR_PARSE, "parse error")         /* malformed JSON, CSV or plan string */    \
    X(MP_ERR_RANGE, "out of range")        /* a result would overflow or be non-finite */ \
    X(MP_ERR_NOMEM, "out of memory")                                                   \
    X(MP_ERR_IO, "i/o error")                                                          \
    X(MP_ERR_INTERNAL, "internal error")

typedef enum {
#define MP_X_ENUM(name, text) name,
    MP_STATUS_LIST(MP_X_ENUM)
#undef MP_X_ENUM
    MP_STATUS_COUNT
} mp_status;

/** Short English name of a status ("bad input"). Never NULL; unknown codes give "unknown". */
const char *mp_status_str(mp_status s);

/** Capacity of a diagnostics buffer in bytes; longer text is truncated with "...". */
#define MP_DIAG_CAP 4096

/** Accumulated error messages, one per line. Zero-initialise (or mp_diag_clear) before use. */
typedef struct {
    char text[MP_DIAG_CAP];
    size_t len;   /* bytes used in text, excluding the terminating NUL */
    int count;    /* number of messages added */
} mp_diag;

/** Empty the buffer. d may be NULL (no-op). */
void mp_diag_clear(mp_diag *d);

/** Append one printf-style message as a new line. d may be NULL (no-op). */
void mp_diag_add(mp_diag *d, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/** Text checks for what goes into JSON (RFC 8259 section 8.1: strings are UTF-8; jansson refuses
 *  others) — in the public API because the command line checks its arguments with them.
 *  mp_utf8_invalid_at: offset of the first byte of s[0..n) that is not part of valid UTF-8 text
 *  (a NUL byte, an overlong form or a surrogate counts as invalid), or n when all of it is valid.
 *  s must hold n readable bytes. */
size_t mp_utf8_invalid_at(const char *s, size_t n);

/** Replace, in place, every byte of the NUL-terminated s that is not part of a complete valid
 *  UTF-8 sequence by '?' — e.g. the tail of a sequence cut by truncation — so the string can go
 *  into JSON. s must not be NULL. */
void mp_utf8_scrub(char *s);

#endif
