/* meshplan/calibrate.h — learn a cluster's constants from the logs its users already have, apply
 * them, and say why a measured run differs from the prediction.
 *
 * Three steps, one direction (docs/calibrate.md):
 *  1. parse logs as they are printed: nccl-tests tables (all_reduce_perf, all_gather_perf,
 *     reduce_scatter_perf, alltoall_perf, sendrecv_perf), rows of validation/collectives.csv,
 *     Megatron-LM iteration lines with the printed arguments block, torchtitan step lines and the
 *     GEMM CSV of shared/device/measure_gpu.py. Timestamps and rank tags in front of a line
 *     ("[rank3]:[titan] 2025-10-15 ... - INFO - ", " [2024-03-30 20:02:40] ") are skipped; every
 *     record keeps its file line.
 *  2. fit only what the logs determine: a tier's latency_s and efficiency_frac (topo.h mp_tier),
 *     and tier 0's NVLS in_network_algbw_frac when NVLS carries the large sizes, from a sweep, by least squares on log time through mp_coll_time itself, so the
 *     fitted number is the one coll uses; the estimator's gemm_sustained_frac and
 *     allocator_margin_frac (estimate.h) from a training log of a known configuration; the GPU's
 *     best measured GEMM rate from a GEMM CSV. What the data cannot pin down is reported, not
 *     fitted.
 *  3. apply a calibration to a cluster and estimator options (mp_cal_apply_*), and explain a
 *     measured step against the predicted split (mp_doctor).
 *
 * The library never prints; a calibration file is JSON written and read by the functions below.
 */
#ifndef MESHPLAN_CALIBRATE_H
#define MESHPLAN_CALIBRATE_H

#include <stddef.h>
#include <stdint.h>
#include "meshplan/coll.h"
#include "meshplan/estimate.h"
#include "meshplan/status.h"
#include "meshplan/topo.h"

#define MP_CAL_PATH_CAP 256
#define MP_CAL_MAX_ROWS 4096      /* rows of one nccl-tests table or training log (a cap) */
#define MP_CAL_MAX_CONSTANTS 32   /* constants in one calibration */

/* ---- parsed logs --------------------------------------------------------------------------- */

/** What kind of log a text is (detected from its content, mp_cal_parse). */
typedef enum {
    MP_LOG_NCCL_TESTS,   /* nccl-tests *_perf output */
    MP_LOG_COLLECTIVES_CSV, /* rows in the schema of validation/collectives.csv */
    MP_LOG_MEGATRON,     /* Megatron-LM training log */
    MP_LOG_TORCHTITAN,   /* torchtitan training log */
    MP_LOG_GEMM_CSV,     /* measure_gpu.py gemm.csv */
    MP_LOG_KIND_COUNT
} mp_log_kind;

const char *mp_log_kind_name(mp_log_kind k);

/** One size of a collective sweep. index 0 = out-of-place, 1 = in-place (nccl-tests order);
 *  a value not printed is 0. */
typedef struct {
    int line;                /* 1-based line in the file */
    double bytes;            /* nccl-tests "size" column (coll.h convention) */
    int64_t count;           /* elements */
    char type[16], redop[16];
    int root;
    double time_s[2];
    double algbw_Bps[2], busbw_Bps[2];
} mp_nccl_row;

/** One collective sweep on one set of ranks. */
typedef struct {
    mp_coll_op op;
    int64_t nranks, nnodes;  /* from the "# Rank N ... on HOST" lines (or the CSV columns) */
    char gpu_name[96];       /* device name printed by nccl-tests, or the CSV's catalog key */
    char label[96];          /* CSV: source_group and node count; "" for a log */
    int64_t gpus_per_node;   /* CSV: gpus_per_node; 0 for a log (nranks / nnodes) */
    char scaleout[MP_KEY_CAP]; /* CSV: inter_link when it is a catalog key; "" otherwise */
    int first_line, last_line;
    mp_nccl_row *rows;
    size_t nrows;
} mp_nccl_table;

/** One logged training step. A field the log does not print is 0. */
typedef struct {
    int line;
    int64_t step;            /* iteration / step number */
    double step_s;           /* Megatron: elapsed time per iteration */
    double tflops_per_gpu;   /* Megatron TFLOP/s/GPU, torchtitan tflops */
    double tokens_per_s_per_gpu; /* torchtitan tps (per GPU) */
    double loss;
    double mem_gib, mem_frac;    /* torchtitan memory: GiB and % of capacity (as a fraction) */
    double mfu_frac;
    int64_t global_batch;    /* Megatron "global batch size" */
} mp_train_step;

/** The configuration a Megatron arguments block states (0 / "" = not printed). */
typedef struct {
    int found, first_line, last_line;
    int64_t tp, pp, vpp, cp, ep, mb, gb, seq, world_size;
    int64_t layers, hidden, heads, kv_groups, ffn_hidden, vocab;
    int sp, dist_opt, bf16, fp16, fp8;
    char recompute[16];      /* "none", "selective", "full" */
} mp_megatron_args;

/** One GEMM measurement (measure_gpu.py gemm.csv). */
typedef struct {
    int line;
    int64_t m, n, k;
    mp_dtype dtype;
    double seconds, flops_per_s;
} mp_gemm_row;

/** A parsed log: exactly one of the arrays is filled, as kind says. */
typedef struct {
    mp_log_kind kind;
    char file[MP_CAL_PATH_CAP];
    mp_nccl_table *tables;   size_t ntables;
    mp_train_step *steps;    size_t nsteps;
    mp_megatron_args args;
    mp_gemm_row *gemms;      size_t ngemms;
} mp_log;

/** Parse one log. origin names the file in messages and records. The kind is detected from the
 *  content; a text with no table, iteration, step or CSV rows is MP_ERR_INPUT ("file:line:
 *  expected ..."), as are a truncated table (a row with fewer columns than the header, or a
 *  header with no rows after it), mixed units (a unit column whose unit changes inside a table or
 *  log, e.g. GiB then MiB, or a value with a unit suffix the header does not use), and a value
 *  that is not a finite number >= 0. MP_ERR_RANGE past MP_CAL_MAX_ROWS records; MP_ERR_NOMEM.
 *  Free with mp_log_free (also after an error). */
mp_status mp_cal_parse(const char *text, size_t len, const char *origin, mp_log *out, mp_diag *diag);
void mp_log_free(mp_log *l);

/** A field of mp_train_step, for mp_cal_steady. */
typedef enum {
    MP_STEP_TIME_S, MP_STEP_TFLOPS, MP_STEP_TOKENS_PER_S, MP_STEP_MEM_GIB, MP_STEP_MEM_FRAC
} mp_step_field;

/** Median of field `which` over the steady-state steps: every record of step 1 is left out when
 *  later steps exist (warm-up: compilation, allocator growth; torchtitan logs one record per
 *  rank). 0 when no step prints it. *first, *last get the lines used (may be NULL). */
double mp_cal_steady(const mp_log *l, mp_step_field which, int *first, int *last);

/** Read a printed Megatron-LM arguments block on its own (a file holding the "  name .... value"
 *  lines, as megatron/training/arguments.py prints them). MP_ERR_INPUT ("origin:1: expected a
 *  printed Megatron-LM arguments block") when it has none. */
mp_status mp_cal_parse_megatron_args(const char *text, size_t len, const char *origin,
                                     mp_megatron_args *out, mp_diag *diag);

/** The Megatron arguments as plan keys ("tp=2,pp=4,ep=8,mb=1,gb=128,seq=4096,zero=1,...",
 *  only what the block states) into buf (cap bytes). Returns the number of keys written. */
int mp_megatron_args_plan(const mp_megatron_args *a, char *buf, size_t cap);

/* ---- the calibration ----------------------------------------------------------------------- */

/** What a fitted constant overrides, and its name in the calibration file (append only):
 *  tier_latency_s        mp_tier.latency_s of tier `tier` whose link is `key` (s)
 *  tier_efficiency_frac  mp_tier.efficiency_frac of that tier (fraction)
 *  gemm_sustained_frac   mp_estimate_opts.gemm_sustained_frac for GPU `gpu` (fraction)
 *  allocator_margin_frac mp_estimate_opts.allocator_margin_frac for GPU `gpu` (fraction)
 *  measured_matmul_flops_per_s  mp_gpu.measured_matmul_flops_per_s[dtype] of `gpu` (FLOP/s)
 *  tier_in_network_algbw_frac   mp_tier.in_network_algbw_frac of tier 0 with link `key` (fraction) */
#define MP_CAL_KIND_LIST(X)                                      \
    X(MP_CAL_TIER_LATENCY, "tier_latency_s")                     \
    X(MP_CAL_TIER_EFFICIENCY, "tier_efficiency_frac")            \
    X(MP_CAL_GEMM_SUSTAINED, "gemm_sustained_frac")              \
    X(MP_CAL_ALLOCATOR_MARGIN, "allocator_margin_frac")          \
    X(MP_CAL_GPU_MATMUL, "measured_matmul_flops_per_s")          \
    X(MP_CAL_TIER_NVLS, "tier_in_network_algbw_frac")

typedef enum {
#define MP_X(n, s) n,
    MP_CAL_KIND_LIST(MP_X)
#undef MP_X
    MP_CAL_KIND_COUNT
} mp_cal_kind;

/** The kind's name in the calibration file (list above); "?" for an invalid value. */
const char *mp_cal_kind_name(mp_cal_kind k);

typedef struct {
    mp_cal_kind kind;
    char gpu[MP_KEY_CAP];    /* catalog GPU key it holds for ("" = any) */
    char key[MP_KEY_CAP];    /* link key (tier constants) */
    int tier;                /* tier index (tier constants), else -1 */
    mp_dtype dtype;          /* MP_CAL_GPU_MATMUL */
    double value;
    char unit[16];
    char sources[256];       /* "file:first-last; ..." */
    double fit_error_pct;    /* median |error| of the fitted points after the fit */
    int npoints;
} mp_cal_constant;

typedef struct {
    int n;
    mp_cal_constant c[MP_CAL_MAX_CONSTANTS];
} mp_calibration;

/** Result of fitting one tier on one sweep. */
typedef struct {
    int tier;                /* the sweep's outermost tier */
    double latency_s, efficiency_frac;      /* fitted */
    double before_latency_s, before_efficiency_frac; /* the cluster's */
    double before_err_pct, after_err_pct;   /* median |time error| over the points used */
    int npoints;
    /* NVLS: fitted too when coll serves the largest size with in-network reduction. */
    int nvls_fitted;
    double in_network_algbw_frac, before_in_network_algbw_frac; /* tier 0's */
} mp_cal_link_fit;

/** Fit the latency_s and efficiency_frac of the outermost tier a sweep of t->nranks ranks
 *  (stride 1) crosses on cluster c, minimising the sum of squared log(predicted/measured time)
 *  over the rows r with (r % step_mod == step_rem) (all rows: 1, 0), predicted by mp_coll_time
 *  with the NCCL algorithm set. The out-of-place time is used (in-place when only that is
 *  printed). latency over [1e-8, 1e-2] s and efficiency over (0, 1] are searched on a log grid,
 *  refined twice; when a sweep inside one node has its largest size served by NVLS, tier 0's
 *  in_network_algbw_frac over [0.2, 1] is fitted with them by coordinate descent. Other tiers stay
 *  as c has them. Errors: MP_ERR_INPUT (fewer than 2 rows, a
 *  sweep of one rank, more ranks than c has GPUs). */
mp_status mp_cal_fit_link(const mp_cluster *c, const mp_nccl_table *t, int step_mod, int step_rem,
                          mp_cal_link_fit *out, mp_diag *diag);

/** Median |time error| (%) of cluster c's prediction for the rows (r % mod == rem). */
double mp_cal_link_error_pct(const mp_cluster *c, const mp_nccl_table *t, int mod, int rem);

/** The half/half check: fit on even rows, predict odd ones; *held_out_pct the median |error| of
 *  the odd rows after, *before_pct before (catalog). */
mp_status mp_cal_holdout(const mp_cluster *c, const mp_nccl_table *t, double *before_pct,
                         double *held_out_pct, mp_diag *diag);

/** Fit opts->gemm_sustained_frac so that the estimate of plan p for model m on c gives the
 *  measured tokens/s per GPU (bisection over [0.05, 1.5] of the measured best GEMM rate; the
 *  predicted throughput rises with it). *fitted gets the value, *before_err_pct and *after_err_pct the
 *  throughput error before and after. MP_ERR_INPUT when measured_tps_per_gpu <= 0 or when even
 *  1.5 does not reach it (the gap is not compute; reported, not fitted). */
mp_status mp_cal_fit_gemm(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                          const mp_estimate_opts *base, double measured_tps_per_gpu, double *fitted,
                          double *before_err_pct, double *after_err_pct, mp_diag *diag);

/** One training log of a known configuration, for the joint GEMM fit. */
typedef struct {
    const mp_model *m;
    const mp_cluster *c;
    const mp_plan *p;            /* resolved for m on c */
    double measured_tps_per_gpu; /* steady tokens/s per GPU, > 0 */
} mp_cal_train_point;

#define MP_CAL_MAX_TRAIN 16      /* training logs in one joint fit */

/** The gemm_sustained_frac that minimises the sum over the n points (1..MP_CAL_MAX_TRAIN) of
 *  log(predicted / measured tokens/s per GPU)^2, by golden-section search over [0.05, 1.5]; with
 *  one point, the value that reproduces it (as mp_cal_fit_gemm). *after_med_pct: the median
 *  |throughput error| of the points at the fitted value. MP_ERR_INPUT for n out of range or a
 *  measurement not > 0; the estimator's errors otherwise. */
mp_status mp_cal_fit_gemm_joint(const mp_cal_train_point *pts, int n, const mp_estimate_opts *base,
                                double *fitted, double *after_med_pct, mp_diag *diag);

/** Add (or replace: same kind, gpu, key, tier, dtype) a constant. MP_ERR_RANGE when full. */
mp_status mp_cal_add(mp_calibration *cal, const mp_cal_constant *k);

/** Apply: every tier constant whose key equals the tier's link, whose tier index equals the
 *  tier's and whose gpu is c->gpu.key (or ""), and every GPU matmul constant whose gpu equals
 *  c->gpu.key, overrides c. Returns how many
 *  applied. */
int mp_cal_apply_cluster(const mp_calibration *cal, mp_cluster *c);
/** Every estimator constant whose gpu is gpu_key (or "") sets its opts field; returns how many. */
int mp_cal_apply_opts(const mp_calibration *cal, const char *gpu_key, mp_estimate_opts *o);

/** Read a calibration file (JSON written by the CLI's calibrate: {"constants": [ {name, gpu,
 *  link, tier, dtype, value, unit, ...} ]}). Errors: MP_ERR_PARSE (not JSON), MP_ERR_INPUT (a
 *  constant missing name or value, an unknown name, a value outside its range: fractions in
 *  (0, 1.5], latency in (0, 1] s, FLOP/s > 0) naming the constant and the field. */
mp_status mp_cal_read_json(const char *text, size_t len, const char *origin, mp_calibration *out,
                           mp_diag *diag);

/* ---- doctor -------------------------------------------------------------------------------- */

/** One candidate explanation of the gap between measured and predicted step. */
typedef struct {
    char part[32];           /* "compute", "dp_comm", "tp_comm", "pp_bubble", "memory", ... */
    char what[160];          /* in words, with the tier or kernel */
    double predicted_s;      /* the part's predicted time in the step */
    double factor_needed;    /* how many times slower it must be to explain the whole gap */
    double plausible_factor; /* the part's model uncertainty, as a factor (docs/calibrate.md) */
    double score;            /* log(factor_needed) / log(plausible_factor): lower = likelier */
    char check[200];         /* what to check */
} mp_doctor_item;

#define MP_DOCTOR_MAX_ITEMS 12

typedef struct {
    double measured_step_s, predicted_step_s, gap_s, gap_pct;
    int n;                   /* items, ranked (most plausible first) */
    mp_doctor_item item[MP_DOCTOR_MAX_ITEMS];
    double measured_mem_frac; /* of capacity, 0 = not logged */
    char verdict[320];
} mp_doctor_report;

/** Rank the explanations of measured_step_s against estimate e (cluster c, plan p). Each part
 *  with predicted time t is scored by the factor k = (t + gap) / t it would need alone, against
 *  the part's plausible factor; memory pressure is added when measured_mem_frac > 0.9. A
 *  measured step within 10 % of the prediction is "as predicted". MP_ERR_INPUT when
 *  measured_step_s is not > 0. */
mp_status mp_doctor(const mp_cluster *c, const mp_plan *p, const mp_estimate *e,
                    double measured_step_s, double measured_mem_frac, mp_doctor_report *out,
                    mp_diag *diag);

#endif
