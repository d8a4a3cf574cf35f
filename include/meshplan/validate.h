/* meshplan/validate.h — predict published runs and report the error.
 *
 * Input: CSV text in the schema of ../shared/validation/runs.csv (validation/README.md). Every
 * row with the model dims and a plan is predicted; a row that cannot be (no dims, an MoE model
 * before MoE support, an unknown GPU, a plan that cannot be formed) is skipped with its reason.
 * Missing plan cells are filled with stated assumptions (micro-batch 1, recompute none, sp on
 * with tp > 1, 1F1B when vpp is not stated) and the row carries a note saying so. A row without
 * a global batch is skipped (the step is the global batch; there is nothing to assume).
 * A stated measured cell must be a finite number in the physical range of its quantity on the
 * row's GPU, else the row is skipped naming the column, the value and the range:
 * measured_mfu, measured_hfu in [1e-4, 1]; measured_tflops_per_gpu in [1e-4, 1] x the dense peak
 * at the row's precision; measured_tokens_per_s_per_gpu and measured_step_s at an implied model
 * FLOP/s (meshplan's FLOPs per token) in [1e-4, 1.5] x that peak; measured_mem_gib in
 * [0.1, HBM bytes / 1e9] (src/validate/validate.c gives the reasons for each bound).
 */
#ifndef MESHPLAN_VALIDATE_H
#define MESHPLAN_VALIDATE_H

#include <stddef.h>
#include "meshplan/catalog.h"
#include "meshplan/estimate.h"
#include "meshplan/status.h"

/** At most this many data rows are read from one CSV (a cap on the arrays below). */
#define MP_VALIDATE_MAX_ROWS 100000

typedef struct {
    char id[64];
    char source_group[64];
    char metric[32];        /* model_tflops_per_gpu, hardware_tflops_per_gpu, mfu, hfu,
                               tokens_per_s_per_gpu, step_s or mem_gib */
    double measured, predicted;
    double error_pct;       /* 100 (predicted - measured) / measured */
    char assumed[256];      /* assumptions made for missing cells, "" if none */
    /* Added later. */
    int verdict;            /* the predicted plan's memory verdict (mp_verdict, estimate.h) */
    char mem_basis[16];     /* for mem_gib: the row's mem_basis ("allocated", "reserved",
                               "nvidia-smi", "peak"; "" not stated) */
} mp_val_row;

typedef struct {
    char id[64];
    char reason[256];
} mp_val_skip;

typedef struct {
    mp_val_row *rows;
    size_t nrows;
    mp_val_skip *skips;
    size_t nskips;
    size_t ninput;          /* data rows read */
} mp_validation;

/** Predict every row of csv_text. origin names the file in messages. opts may be NULL.
 *  Errors (the whole file, not a row): MP_ERR_PARSE (not CSV, missing header columns — named),
 *  MP_ERR_RANGE (more than MP_VALIDATE_MAX_ROWS rows), MP_ERR_NOMEM. Free with
 *  mp_validation_free. */
mp_status mp_validate_csv(const mp_catalog *cat, const char *csv_text, size_t len,
                          const char *origin, const mp_estimate_opts *opts, mp_validation *out,
                          mp_diag *diag);

void mp_validation_free(mp_validation *v);

/** Summary statistics of |error_pct| over rows (optionally only those whose metric is or is not
 *  mem_gib, and whose source_group equals group when group != NULL). */
typedef struct {
    size_t n;
    double mean_abs_error_pct, median_abs_error_pct, max_abs_error_pct;
} mp_val_stats;

typedef enum { MP_VAL_ALL, MP_VAL_THROUGHPUT, MP_VAL_MEMORY } mp_val_filter;

void mp_validation_stats(const mp_validation *v, mp_val_filter filter, const char *group,
                         mp_val_stats *out);

#endif
