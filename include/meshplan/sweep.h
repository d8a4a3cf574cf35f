/* meshplan/sweep.h — design sweeps: many candidate systems x models x workloads, the best plan of
 * each, and the Pareto set over throughput, cost and energy (docs/sweep.md).
 *
 * A sweep is data (a JSON design space): models x GPUs x node designs (HBM capacity, scale-up
 * domain size, NICs per GPU, fabric link, oversubscription) x cluster sizes x workloads. Its
 * systems are expanded in one fixed order (models outermost, then gpus, hbm_GiB, scaleup_gpus,
 * nics_per_gpu, fabric_links, oversubscription, cluster_gpus, then workloads innermost), so
 * task i means the same (system, workload) on every process. Each task runs the existing search
 * (mp_search, its default space) and keeps its best plan; the row it yields depends only on i,
 * never on the process or thread count that evaluated it (the search is thread-independent), so a
 * sweep split across MPI ranks (src/cli/cli_sweep_mpi.c) writes the same CSV as one process.
 *
 * Sizes: up to MP_SWEEP_MAX_AXIS values per axis and MP_SWEEP_MAX_TASKS tasks; a task is one
 * search (milliseconds for an 8B model on 64 GPUs, seconds for a 405B model on 16K GPUs).
 */
#ifndef MESHPLAN_SWEEP_H
#define MESHPLAN_SWEEP_H

#include <stdint.h>
#include <stdio.h>

#include "meshplan/catalog.h"
#include "meshplan/search.h"
#include "meshplan/status.h"

#define MP_SWEEP_MAX_AXIS 1024
#define MP_SWEEP_MAX_WORKLOADS 64
#define MP_SWEEP_MAX_TASKS 10000000LL
/** Bytes of one CSV row (without its newline); longer rows are cut at a field boundary. */
#define MP_SWEEP_ROW_CAP 1024

/** One workload of the sweep: a training job and what "best" means for it. */
typedef struct {
    char name[64];
    int64_t gb;             /* global batch, sequences, > 0 */
    int64_t seq;            /* tokens per sequence; 0 = the model's */
    double tokens;          /* token budget (time-to-train); 0 = none */
    mp_objective objective; /* throughput (default), cost or energy */
} mp_sweep_workload;

/** The parsed design space (opaque). */
typedef struct mp_sweep mp_sweep;

/** Parse a sweep description (JSON; schema in docs/sweep.md) against catalog cat (which must
 *  outlive the sweep). Every key is checked: unknown keys, wrong types, out-of-range values and
 *  unknown catalog keys are MP_ERR_INPUT with the field named ("gpus[1] = \"h1000\": not a GPU
 *  in the catalog"); malformed JSON is MP_ERR_PARSE. origin names the text in messages. */
mp_status mp_sweep_parse(const mp_catalog *cat, const char *json_text, size_t len,
                         const char *origin, mp_sweep **out, mp_diag *diag);
void mp_sweep_destroy(mp_sweep *s);

/** Systems (every combination of the axes) and tasks (systems x workloads). */
int64_t mp_sweep_systems(const mp_sweep *s);
int64_t mp_sweep_tasks(const mp_sweep *s);

/** The result of one task, as the CSV row and the figures the Pareto set is computed from (which
 *  are read back from the row's text, so that a row loaded from a checkpoint and a row just
 *  computed compare identically). */
typedef struct {
    int64_t task;            /* index in [0, mp_sweep_tasks) */
    int64_t model;           /* index into the models (Pareto sets are per model and workload) */
    int64_t workload;        /* index into the workloads */
    int ok;                  /* a plan fits: the figures below are set */
    double tokens_per_s;
    double usd_per_Mtoken;   /* at the sweep's price_gpu_hour_usd */
    double J_per_token;      /* facility energy (mp_energy_step), 0 when the GPU's power is unknown */
    uint64_t evaluated;      /* plans evaluated by the search */
    double wall_s;           /* seconds the task took (measures the run; may differ between runs) */
    char row[MP_SWEEP_ROW_CAP]; /* the CSV fields before `pareto` and `wall_s`, no newline */
} mp_sweep_result;

/** Run task i: build the system's cluster, search (threads: 0 = OpenMP's default, 1 = serial),
 *  evaluate the best plan's cost and energy. A system that cannot be built (e.g. a cluster size
 *  that is not a multiple of the scale-up domain) or has no plan is an answer (status column
 *  "invalid_system", "unformable" or "no_fit"), not an error. Errors: MP_ERR_INPUT for i out of
 *  range; MP_ERR_NOMEM; an internal search error. Reentrant for different outputs. */
mp_status mp_sweep_run_task(const mp_sweep *s, int64_t i, int threads, mp_sweep_result *out,
                            mp_diag *diag);

/** The CSV header line (no newline), columns of row then "pareto,wall_s". */
const char *mp_sweep_csv_header(void);

/** Mark the Pareto set: pareto[k] = 1 when results[k] is ok and no other ok result of the same
 *  model and workload has tokens/s >=, $/Mtoken <= and J/token <= with one strictly better.
 *  O(n^2) within each group. results must be sorted by task. */
void mp_sweep_pareto(const mp_sweep_result *results, int64_t n, unsigned char *pareto);

/** Write the CSV: the header, then one line per result (sorted by task), each row followed by its
 *  pareto flag and wall_s. Returns MP_ERR_IO on a write error. */
mp_status mp_sweep_write_csv(FILE *f, const mp_sweep_result *results, int64_t n);

/** The checkpoint: one line per finished task, "task,evaluated,wall_s,row". Append r (flushed). */
mp_status mp_sweep_checkpoint_append(FILE *f, const mp_sweep_result *r);
/** Read a checkpoint: for each valid line whose task is in range and not yet seen, fill
 *  results[task] (an array of mp_sweep_tasks(s) entries) and set done[task] = 1; a torn last
 *  line (a killed job) is ignored. *ndone: tasks loaded. Errors: MP_ERR_INPUT when a line names
 *  a task whose row differs in its system columns from this sweep's (a different sweep file). */
mp_status mp_sweep_checkpoint_load(const mp_sweep *s, FILE *f, mp_sweep_result *results,
                                   unsigned char *done, int64_t *ndone, mp_diag *diag);

#endif
