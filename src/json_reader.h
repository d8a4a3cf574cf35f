/* src/json_reader.h — shared field readers for the JSON descriptions (cluster_json.c,
 * islands_json.c). Internal, not part of the public API. */
#ifndef MESHPLAN_JSON_READER_H
#define MESHPLAN_JSON_READER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "meshplan/status.h"

/** Where a reader is: the file, the entry ("tiers[1] (leaf)"), the diagnostics, the error count
 *  and, for readers that look up catalog keys, MP_ERR_NOT_FOUND once a key was unknown. */
typedef struct {
    const char *origin;
    char where[96];
    mp_diag *diag;
    int errors;
    mp_status nf;
} mp_jreader;

/** Parse text[0..len) as JSON, rejecting duplicate keys. On a syntax error returns NULL after
 *  adding "origin: line L, column C: <jansson's message> (the line reads: ...)" to diag; the
 *  caller returns MP_ERR_PARSE. The root is the caller's to json_decref. */
json_t *mp_json_load(const char *text, size_t len, const char *origin, mp_diag *diag);
/** Report "origin: where.field = <value>: expected <expected>" and count the error. */
void mp_jr_bad(mp_jreader *r, const char *field, const json_t *v, const char *expected);
/** A number in [lo, hi] (lo_open: strictly above lo); *out unchanged when absent or null.
 *  Returns 1 if present and valid. */
int mp_jr_num(mp_jreader *r, const json_t *o, const char *field, double lo, int lo_open, double hi,
              double *out, const char *expected);
/** An integer in [lo, hi]; same conventions. */
int mp_jr_int(mp_jreader *r, const json_t *o, const char *field, int64_t lo, int64_t hi,
              int64_t *out);
/** true or false; same conventions. */
int mp_jr_bool(mp_jreader *r, const json_t *o, const char *field, int *out);
/** A non-empty string shorter than cap; same conventions. */
int mp_jr_str(mp_jreader *r, const json_t *o, const char *field, char *out, size_t cap);
/** Report every key of o not in the NULL-terminated list known (keys starting with '_' are
 *  comments). */
void mp_jr_check_keys(mp_jreader *r, const json_t *o, const char *const *known);

#endif
