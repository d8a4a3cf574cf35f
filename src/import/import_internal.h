/* src/import/import_internal.h — what the readers of src/import share: every reader first turns
 * its file into a flat list of (key, value, line) entries (a script's flags, a JSON/TOML/YAML
 * document's leaf paths joined by '.'), then maps the keys it knows onto meshplan's fields with
 * the helpers below, which record where each value came from. Internal to the library. */
#ifndef MESHPLAN_IMPORT_INTERNAL_H
#define MESHPLAN_IMPORT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "meshplan/import.h"

/** snprintf whose truncation is intended (a long key or value is cut, never overflows);
 *  returns what vsnprintf returns. */
int imp_fmt(char *buf, size_t cap, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#define IMP_KEY_CAP 160
#define IMP_VAL_CAP 512
#define IMP_ENTRIES_MAX 4096 /* cap on entries per file */

typedef struct {
    char key[IMP_KEY_CAP];
    char val[IMP_VAL_CAP];
    int line;      /* 1-based line of the value in the file */
    int is_string; /* value was quoted (JSON/TOML/YAML string): "auto" vs auto matter in JSON */
    int used;      /* a reader looked at it (the rest are listed as unknown) */
} imp_kv;

typedef struct {
    imp_kv *v;
    int n, cap;
} imp_kvs;

/** Append (key, val, line); MP_ERR_NOMEM, or MP_ERR_RANGE past IMP_ENTRIES_MAX. A key seen
 *  again replaces the earlier value (as argparse and the config loaders keep the last one). */
mp_status imp_kvs_add(imp_kvs *l, const char *key, const char *val, int line, int is_string);
void imp_kvs_free(imp_kvs *l);

/** The reading context of one file. */
typedef struct {
    mp_import *out;
    imp_kvs *kv;
    const char *name; /* file name used in messages */
    mp_diag *diag;
    int errors;
    const mp_import_opts *opts;
} imp_ctx;

/** The entry with this key (marked used), or NULL. */
imp_kv *imp_find(imp_ctx *c, const char *key);
/** 1 if the entry is absent, or its value is JSON/YAML null / "None" / empty. */
int imp_is_null(const imp_kv *e);
/** Integer value of key in [min, max]: 1 with *out set, 0 absent or null, -1 bad (diag names
 *  FILE:LINE:KEY and what was expected). *at (may be NULL) gets the entry. */
int imp_int(imp_ctx *c, const char *key, int64_t min, int64_t max, int64_t *out, imp_kv **at);
/** Boolean (true/false, True/False, 1/0, yes/no; a Megatron flag with no value is true). */
int imp_bool(imp_ctx *c, const char *key, int *out, imp_kv **at);
/** Real value. */
int imp_real(imp_ctx *c, const char *key, double *out, imp_kv **at);
/** "FILE:LINE:KEY" of an entry. */
void imp_where(const imp_ctx *c, const imp_kv *e, char *buf, size_t cap);

/** Record a field (replacing one of the same key). from_kv: the entry it was read from (origin
 *  FILE), else origin and why say where from. */
void imp_set(imp_ctx *c, mp_field_kind kind, const char *key, const char *value,
             const imp_kv *from_kv, mp_import_origin origin, const char *why);
void imp_set_int(imp_ctx *c, mp_field_kind kind, const char *key, int64_t v,
                 const imp_kv *from_kv, mp_import_origin origin, const char *why);
/** Read integer key into field fkey when present (origin FILE); returns imp_int's result. */
int imp_map_int(imp_ctx *c, const char *key, mp_field_kind kind, const char *fkey, int64_t min,
                int64_t max, int64_t *out);
/** Report bad input at an entry: "FILE:LINE:KEY = VALUE: expected ..." (c->errors++). */
void imp_bad(imp_ctx *c, const imp_kv *e, const char *expected);

/** Readers: fill kv from the text (the *_flatten functions), or read fields (the rest). */
mp_status imp_bash_args(imp_ctx *c, const char *text, size_t len);   /* bash.c */
mp_status imp_megatron(imp_ctx *c);                                  /* megatron.c */
mp_status imp_json_flatten(imp_ctx *c, const char *text, size_t len); /* flat_json.c */
mp_status imp_deepspeed(imp_ctx *c);                                  /* deepspeed.c */
mp_status imp_toml_flatten(imp_ctx *c, const char *text, size_t len); /* torchtitan.c */
mp_status imp_torchtitan(imp_ctx *c);                                 /* torchtitan.c */
/** A "preset for N <GPU> GPUs" comment of a torchtitan TOML: the GPU count and type. */
void imp_torchtitan_comments(imp_ctx *c, const char *text, size_t len); /* torchtitan.c */
mp_status imp_yaml_flatten(imp_ctx *c, const char *text, size_t len); /* yaml.c */
mp_status imp_nemo(imp_ctx *c);                                       /* nemo.c */
mp_status imp_finetune(imp_ctx *c, const char *dir);                  /* finetune.c */
mp_status imp_hf(imp_ctx *c, const char *text, size_t len);           /* hf.c */

/** DeepSpeed JSON fields (zero, mb, gb, precision, offload) from entries under prefix ("" for a
 *  ds_config.json; the finetune reader passes the referenced file's entries). */
void imp_deepspeed_fields(imp_ctx *c);

#endif
