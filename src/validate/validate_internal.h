/* src/validate/validate_internal.h — what the training-runs reader (validate.c) and the
 * inference-runs reader (validate_infer.c) share: the CSV record reader and the schema test. */
#ifndef MESHPLAN_VALIDATE_INTERNAL_H
#define MESHPLAN_VALIDATE_INTERNAL_H

#include <stddef.h>

#include "meshplan/catalog.h"
#include "meshplan/validate.h"

#define MP_VAL_FIELD 1024 /* bytes per field kept (longer ones truncated) */
#define MP_VAL_MAX_COLS 64

/** One RFC 4180 record from *p (advanced) before end into fields: the field count, 0 at the end,
 *  -1 on an unterminated quote. */
int mp_val_csv_next(const char **p, const char *end, char (*fields)[MP_VAL_FIELD], int *overflow);

/** 1 when a header of n fields is the inference schema (has scenario, metric and value). */
int mp_val_header_is_infer(char (*fields)[MP_VAL_FIELD], int n);

/** Validate a file in the inference schema (validate_infer.c). */
mp_status mp_validate_infer_csv(const mp_catalog *cat, const char *text, size_t len,
                                const char *origin, mp_validation *out, mp_diag *diag);

/** 1 when a header of n fields is the RL schema (has placement, metric and value). */
int mp_val_header_is_rl(char (*fields)[MP_VAL_FIELD], int n);

/** Validate a file in the RL schema (validate_rl.c). */
mp_status mp_validate_rl_csv(const mp_catalog *cat, const char *text, size_t len,
                             const char *origin, mp_validation *out, mp_diag *diag);

#endif
