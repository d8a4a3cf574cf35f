/* src/plan/plan_key.h — the machinery behind a table of plan keys (library-internal).
 *
 * A table is an array of mp_plan_key_def, one per key, written once as an X-macro list
 * (src/plan/plan_keys.h for the plan of one cluster, src/islands/xsync_keys.h for the keys across
 * islands). From a table this file gives: finding a key, parsing its value into the struct it
 * belongs to (range checks, one diag line naming the key and the value), the message for an
 * unknown key (the nearest known key by edit distance), writing a value back, and the help lines.
 * A key whose value is not a plain integer, number or name (e.g. order, compress) supplies its own
 * parse/format hooks; the rest needs no code. How to add a key: docs/plan.md.
 */
#ifndef MESHPLAN_PLAN_KEY_H
#define MESHPLAN_PLAN_KEY_H

#include <stddef.h>

#include "meshplan/plan.h"
#include "meshplan/status.h"

/** When a key is written by format: always, or only when its field is not zero. */
typedef enum { MP_PF_ALWAYS, MP_PF_IFSET } mp_plan_fmt;

struct mp_plan_key_def;

/** Hooks of a key with its own syntax (TEXT keys) or an extra rule; either may be NULL. parse:
 *  store val into obj (the struct the table describes) and return 1, or add one diag line naming
 *  the key and the value and return 0. format: append ",key=value" to buf at *len (advanced as
 *  snprintf would), or nothing. */
typedef struct {
    int (*parse)(const struct mp_plan_key_def *k, const char *val, void *obj, mp_diag *diag);
    void (*format)(const struct mp_plan_key_def *k, const void *obj, char *buf, size_t cap,
                   size_t *len);
} mp_plan_key_ops;

/** One key of a table. pub is what plan.h shows (mp_plan_key_at). */
typedef struct mp_plan_key_def {
    mp_plan_key pub;
    size_t offset;              /* of the field in the table's struct */
    size_t size;                /* of that field: int (4) or int64_t (8); double for REAL */
    int first;                  /* ENUM: the stored value of names[0] (then +1 per name) */
    const mp_plan_key_ops *ops; /* NULL: the generic parse and format of the type */
    mp_plan_fmt fmt;
} mp_plan_key_def;

/* The VALUES column of a table entry: no names, the names array `a` whose first name is stored as
 * `first`, or a TEXT key's syntax (as help shows it) and a sample value that parses (tests). */
#define MP_NOENUM NULL, 0, 0, NULL, NULL
#define MP_ENUM(a, first) a, (int)(sizeof(a) / sizeof((a)[0])), first, NULL, NULL
#define MP_SYNTAX(syntax, sample) NULL, 0, 0, syntax, sample

/* A table row of struct S from an X-macro entry
 *   X(name, TYPE, field, min, max, VALUES, ops, FMT, default_text, help)
 * TYPE: INT, BOOL, REAL, ENUM or TEXT; FMT: ALWAYS or IFSET. */
#define MP_PLAN_KEY_ROW(...) MP_PLAN_KEY_ROW_(__VA_ARGS__) /* VALUES expands to five fields */
#define MP_PLAN_KEY_ROW_(S, name, type, field, lo, hi, names, nnames, first, syntax, sample, ops, \
                         fmt, dflt, help)                                                        \
    {{#name, MP_PLAN_KEY_##type, (double)(lo), (double)(hi), names, nnames, syntax, sample, dflt, \
      help},                                                                                     \
     offsetof(S, field), sizeof(((S *)0)->field), first, ops, MP_PF_##fmt},

/** The plan table of one cluster (plan.c): its rows, *n of them. */
const mp_plan_key_def *mp_plan_key_defs(int *n);

/** Index of key in tab[0..n), or -1. */
int mp_plan_key_find(const mp_plan_key_def *tab, int n, const char *key);

/** Parse val for key k into obj (k->ops->parse when given, else the generic parse of its type).
 *  Returns 1, or 0 after one diag line "plan.KEY = VALUE: expected ...". */
int mp_plan_key_parse(const mp_plan_key_def *k, const char *val, void *obj, mp_diag *diag);

/** The generic parse of k's type (INT, BOOL, REAL, ENUM), for hooks that add a rule to it. */
int mp_plan_key_parse_generic(const mp_plan_key_def *k, const char *val, void *obj, mp_diag *diag);

/** Append ",KEY=VALUE" for k by its format rule or hook (nothing when the rule says so). */
void mp_plan_key_format(const mp_plan_key_def *k, const void *obj, char *buf, size_t cap,
                        size_t *len);

/** The field of k in obj as a double (INT, BOOL, ENUM: the stored integer). */
double mp_plan_key_get(const mp_plan_key_def *k, const void *obj);

/** One diag line for an unknown key: 'plan: unknown key "K" (value "V"): did you mean "N"?
 *  expected one of ...', the nearest key over the ntab tables (Levenshtein distance at most 2 and
 *  shorter than the key), every key listed. */
void mp_plan_key_unknown(const char *key, const char *val, const mp_plan_key_def *const *tabs,
                         const int *ns, int ntab, mp_diag *diag);

/** Help lines for tab[0..n): "  NAME  VALUES: HELP (default D)\n" per key, into buf as snprintf
 *  (returns the length the whole text needs; buf may be NULL when cap is 0). */
int mp_plan_key_help(const mp_plan_key_def *tab, int n, char *buf, size_t cap);

/** A plan string's key=value tokens, trimmed of blanks: fn(key, val, ctx) for each (val NULL and
 *  key the whole token when it has no '='). Blank tokens are skipped. text is at most
 *  MP_PLAN_TEXT_MAX characters (checked by the caller). */
#define MP_PLAN_TEXT_MAX 4096
void mp_plan_key_tokens(const char *text, void (*fn)(char *key, char *val, void *ctx), void *ctx);

#endif
