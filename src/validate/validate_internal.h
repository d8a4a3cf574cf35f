/* src/validate/validate_internal.h — what the training-runs reader (validate.c) and the
 * inference-runs reader (validate_infer.c) share: the CSV record reader and the schema test. */
#ifndef MESHPLAN_VALIDATE_INTERNAL_H
#define MESHPLAN_VALIDATE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "meshplan/catalog.h"
#include "meshplan/infer.h"
#include "meshplan/topo.h"
#include "meshplan/validate.h"

#define MP_VAL_FIELD 1024 /* bytes per field kept (longer ones truncated) */
#define MP_VAL_MAX_COLS 64

/** One RFC 4180 record from *p (advanced) before end into fields: the field count, 0 at the end,
 *  -1 on an unterminated quote. */
int mp_val_csv_next(const char **p, const char *end, char (*fields)[MP_VAL_FIELD], int *overflow);

/** Append one compared row to v (its rows array sized by the caller) with the relative error
 *  100 (predicted - measured) / measured; id, group and assumed are scrubbed to valid UTF-8,
 *  stack ("" when none) names the training stack. Returns 0 and adds nothing when the error is
 *  not finite. (validate.c) */
int mp_val_push_row(mp_validation *v, const char *id, const char *group, const char *metric,
                    double measured, double predicted, const char *assumed, const char *stack);

/** 1 when a header of n fields is the inference schema (has scenario, metric and value). */
int mp_val_header_is_infer(char (*fields)[MP_VAL_FIELD], int n);

/* ---- the inference schema (validate_infer.c) ------------------------------------------------ */

/** Columns of ../shared/validation/inference/README.md that the inference reader uses. */
#define MP_VAL_INFER_COLS(X) X(ID, "id") X(GROUP, "source_group") X(MODEL, "model") X(GPU, "gpu") \
    X(NGPUS, "num_gpus") X(TP, "tp") X(PP, "pp") X(EP, "ep") X(FRAMEWORK, "framework")             \
    X(WDT, "weight_dtype") X(KVDT, "kv_dtype") X(IN, "input_len") X(OUT, "output_len")            \
    X(DIST, "length_dist") X(SCENARIO, "scenario") X(BATCH, "batch") X(RATE, "request_rate_per_s") \
    X(SLO, "latency_slo") X(METRIC, "metric") X(VALUE, "value") X(NOTES, "notes") X(SOURCE, "source")
enum {
#define X(e, n) MP_VIC_##e,
    MP_VAL_INFER_COLS(X)
#undef X
    MP_VIC_COUNT
};

/** One row of an inference CSV: its cells ("" when absent), what was assumed for it (written to
 *  the row's output) and why it is skipped (empty while it is not). */
typedef struct {
    const char *cell[MP_VIC_COUNT];
    char assumed[256];
    char why[256];
} mp_val_infer_row;

/** A dataset's per-request lengths (mlperf_lengths.c): a sample of its published per-sample
 *  token counts, prompt and reference output, with their means. */
#define MP_VAL_MAX_LENGTHS 1024
typedef struct {
    size_t n;                               /* pairs, <= MP_VAL_MAX_LENGTHS */
    int64_t in[MP_VAL_MAX_LENGTHS], out[MP_VAL_MAX_LENGTHS]; /* tokens, >= 1 */
    double in_mean, out_mean;               /* tokens */
    const char *source;                     /* what the sample is, and of what */
} mp_val_lengths;

/** 1 and *out filled when the dataset name (length_dist "dataset:NAME" without the prefix) has a
 *  length sample; else 0. */
int mp_val_dataset_lengths(const char *dataset, mp_val_lengths *out);

/** Append one assumption ("tp=4 (smallest fitting)") to row->assumed, "; "-separated. */
void mp_val_infer_note(mp_val_infer_row *row, const char *text);

/** The row's model, cluster and inference plan with the defaults table of validate_infer.c
 *  applied (lengths, tp, KV format, engine, the engine settings in notes; each default noted in
 *  row->assumed). The batch is left at 1: a fixed-batch row states it, an offline row takes what
 *  the engine's KV pool holds, a serving row what its arrivals keep in flight. 0 on success, 1
 *  with row->why when the row cannot be stated. */
int mp_val_infer_setup(const mp_catalog *cat, mp_val_infer_row *row, const mp_model **m,
                       mp_cluster *cl, mp_infer_plan *plan);

/** THE dispatch point for `server` and `interactive` rows (Poisson arrivals under an SLO), in
 *  validate_serving.c: 1 with *predicted (the row's metric, SI) or 0 with row->why. Issue 21's
 *  serving simulator predicts them here; until it does every such row is skipped with the reason
 *  "needs the serving simulator (issue 21)". */
int mp_val_infer_serving_row(const mp_catalog *cat, mp_val_infer_row *row, double *predicted);

/** The serving simulator's prediction of a server / interactive row (validate_serve.c), called
 *  from the dispatch point: as mp_val_infer_serving_row. */
int mp_val_serve_predict(const mp_catalog *cat, mp_val_infer_row *row, double *predicted);

/** Validate a file in the inference schema (validate_infer.c). */
mp_status mp_validate_infer_csv(const mp_catalog *cat, const char *text, size_t len,
                                const char *origin, mp_validation *out, mp_diag *diag);

/** 1 when a header of n fields is the RL schema (has placement, metric and value). */
int mp_val_header_is_rl(char (*fields)[MP_VAL_FIELD], int n);

/** Validate a file in the RL schema (validate_rl.c). */
mp_status mp_validate_rl_csv(const mp_catalog *cat, const char *text, size_t len,
                             const char *origin, mp_validation *out, mp_diag *diag);

#endif
