/* src/validate/validate_internal.h — what the training-runs reader (validate.c) and the
 * inference-runs reader (validate_infer.c) share: the CSV record reader and the schema test. */
#ifndef MESHPLAN_VALIDATE_INTERNAL_H
#define MESHPLAN_VALIDATE_INTERNAL_H

#include <stddef.h>

#include "meshplan/catalog.h"
#include "meshplan/infer.h"
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

/* Server / interactive rows of the inference schema (validate_serve.c): predict metric for the
 * row's plan p on cluster c at the row's rate (rate_cell, "" when not stated: the highest rate
 * that meets slo_cell). 0 with *pred and notes appended to assumed, or 1 with why. */
int mp_val_serve_row(const mp_model *m, const mp_cluster *c, const mp_infer_plan *p, int batch_stated,
                     const char *rate_cell, const char *slo_cell, const char *metric, double *pred, char *why,
                     size_t nwhy, char *assumed, size_t nassumed);

#endif
