/* meshplan/faults.h — failures, checkpoints and goodput of a whole training run.
 *
 * A synchronous training job stops whenever any of its components fails; it then waits for a
 * spare node when the failure took hardware out, restarts, reloads the last checkpoint and redoes
 * the work done since. This header gives
 *   - the failure rates by cause: per-component rates (per GPU, per node, per scale-out NIC port)
 *     whose defaults come from the 54-day Llama 3 405B pre-training snapshot on 16,384 H100
 *     (Dubey et al. 2024, "The Llama 3 Herd of Models", Table 5: 419 unexpected interruptions by
 *     root cause), so a job's interruption rate grows with its size;
 *   - the checkpoint: bytes from the model state, save time from the storage bandwidth,
 *     synchronous or asynchronous;
 *   - the run: an analytical expectation of its wall-clock (exact for the process simulated) and a
 *     Monte Carlo simulation of the same process with a seeded PRNG (xoshiro256**), giving the
 *     distribution of wall-clock and goodput; the optimal checkpoint interval after Young (1974)
 *     and Daly (2006).
 * docs/faults.md derives every formula. Sizes: up to MP_FAULT_MAX_CAUSES causes; a simulation
 * costs O(failures per run) per trial, about 10^7 failures per second on one core.
 */
#ifndef MESHPLAN_FAULTS_H
#define MESHPLAN_FAULTS_H

#include <stdint.h>
#include "meshplan/hw.h"
#include "meshplan/status.h"

/* ---- pseudo-random numbers -------------------------------------------------------------------- */

/** xoshiro256** 1.0 (Blackman & Vigna 2018, "Scrambled linear pseudorandom number generators",
 *  ACM TOMS 47(4), 2021; reference code at prng.di.unimi.it), seeded through splitmix64 (Steele,
 *  Lea & Flood 2014, "Fast splittable pseudorandom number generators", OOPSLA) as its authors
 *  recommend. The same seed gives the same sequence on every platform. */
typedef struct {
    uint64_t s[4];
} mp_rng;

/** One splitmix64 step: advances *state and returns the next output. */
uint64_t mp_splitmix64(uint64_t *state);
/** Seed the generator: its four words are four splitmix64 outputs from seed (any value). */
void mp_rng_seed(mp_rng *r, uint64_t seed);
/** Next 64 random bits. */
uint64_t mp_rng_next(mp_rng *r);
/** Uniform double in [0, 1) with 53 random bits. */
double mp_rng_uniform(mp_rng *r);
/** Exponential variate with mean 1 (inverse transform: -log(1 - U), U in [0, 1), never infinite). */
double mp_rng_exp1(mp_rng *r);

/* ---- failure causes and rates ----------------------------------------------------------------- */

#define MP_FAULT_MAX_CAUSES 64

/** The component a cause belongs to (the JSON's by_component keys). */
#define MP_FAULT_COMPONENT_LIST(X)           \
    X(MP_FC_GPU, "gpu")                      \
    X(MP_FC_HBM, "hbm")                      \
    X(MP_FC_HOST, "host")                    \
    X(MP_FC_NIC, "nic")                      \
    X(MP_FC_NETWORK, "switch")               \
    X(MP_FC_SOFTWARE, "software")

typedef enum {
#define MP_X(n, s) n,
    MP_FAULT_COMPONENT_LIST(MP_X)
#undef MP_X
    MP_FC_COUNT
} mp_fault_component;

/** What a cause's rate is counted per: a failure rate per GPU, per node (host parts), or per
 *  scale-out NIC port (NICs, and the switch ports and cables behind them: in a Clos network the
 *  switch ports grow in proportion to the endpoints). */
#define MP_FAULT_UNIT_LIST(X)  \
    X(MP_PER_GPU, "gpu")       \
    X(MP_PER_NODE, "node")     \
    X(MP_PER_NIC, "nic")

typedef enum {
#define MP_X(n, s) n,
    MP_FAULT_UNIT_LIST(MP_X)
#undef MP_X
    MP_PER_COUNT
} mp_fault_unit;

const char *mp_fault_component_name(mp_fault_component c);
const char *mp_fault_unit_name(mp_fault_unit u);

/** One root cause of unexpected interruptions. */
typedef struct {
    char name[64];               /* snake_case, e.g. "faulty_gpu" */
    mp_fault_component component;
    mp_fault_unit unit;
    double rate_per_unit_s;      /* interruptions per unit per second, >= 0 */
    int needs_spare;             /* 1: the failed node leaves the job (hardware); 0: restart in place */
    double observed_count;       /* interruptions in the source observation; 0 when given as a rate */
} mp_fault_cause;

/** A set of causes and where they come from. */
typedef struct {
    int ncauses;
    mp_fault_cause cause[MP_FAULT_MAX_CAUSES];
    char source[MP_SOURCE_CAP];
} mp_fault_model;

/** The defaults: the 18 root causes of Llama 3's Table 5 (419 unexpected interruptions in 54 days
 *  on 16,384 H100 in 2,048 8-GPU servers with one 400 Gb/s NIC per GPU), each count divided by the
 *  units of its kind in that fleet and by 54 days. */
void mp_fault_model_default(mp_fault_model *fm);

/** The published observation the defaults are normalised by (units and days). */
typedef struct {
    double gpus, nodes, nics, days;
} mp_fault_observation;
void mp_fault_default_observation(mp_fault_observation *o);

/** Read a fault model from JSON (docs/faults.md "--failures FILE"):
 *    {"source": "...", "observed": {"gpus_count": G, "nodes_count": N, "nics_count": K,
 *     "days": D},
 *     "causes": [{"name": "...", "component": "gpu|hbm|host|nic|switch|software",
 *                 "per": "gpu|node|nic", "count": C | "rate_per_unit_per_day": R,
 *                 "needs_spare": true|false}, ...]}
 *  "observed" is needed when a cause gives a count. Errors: MP_ERR_PARSE (not JSON),
 *  MP_ERR_INPUT (a missing, mistyped or out-of-range field, named in diag with origin),
 *  MP_ERR_RANGE (more than MP_FAULT_MAX_CAUSES causes). */
mp_status mp_fault_model_from_json(const char *text, size_t len, const char *origin,
                                   mp_fault_model *fm, mp_diag *diag);

/** The units of a job: GPUs, nodes and scale-out NIC ports (all >= 0). */
typedef struct {
    double gpus, nodes, nics;
} mp_fault_fleet;

/** A job's failure rates: every cause's rate times its unit count, times scale (>= 0; 1 = as
 *  given; used to ask "what if failures were k times as frequent"). */
typedef struct {
    double total_per_s;                   /* all causes */
    double spare_per_s;                   /* causes that need a spare node */
    double by_cause_per_s[MP_FAULT_MAX_CAUSES];
    double by_component_per_s[MP_FC_COUNT];
} mp_fault_rates;

void mp_fault_rates_for(const mp_fault_model *fm, const mp_fault_fleet *fleet, double scale,
                        mp_fault_rates *out);

/* ---- checkpoints ------------------------------------------------------------------------------ */

/** A checkpoint's size and timing. */
typedef struct {
    double bytes;          /* whole job: 16-bit weights + fp32 master weights + Adam moments */
    double bytes_per_gpu;  /* the largest shard one GPU writes */
    double save_s;         /* writing it to storage at the aggregate bandwidth */
    double block_s;        /* training stalls this long per checkpoint (= save_s when synchronous;
                              the device-to-host copy of the shard when asynchronous) */
    double load_s;         /* reading it back at restart */
    double lag_s;          /* asynchronous: expected extra rollback because the newest checkpoint
                              may still be in flight when a failure strikes (first order: save_s) */
    int async;
} mp_checkpoint;

/** Size and time a checkpoint. params: parameters of the model (> 0); bytes_per_param: state
 *  saved per parameter (14 = 2-byte weights + 4-byte fp32 master + 2 x 4-byte Adam moments,
 *  Rajbhandari et al. 2020 Sec. 3 without the gradients); gpus >= 1; max_shard_bytes: the most
 *  any GPU holds of that state (0: bytes / gpus); storage_Bps > 0 aggregate write and read
 *  bandwidth; d2h_Bps > 0 per-GPU device-to-host copy bandwidth (asynchronous only).
 *  Returns MP_ERR_INPUT naming the bad argument. */
mp_status mp_checkpoint_plan(double params, double bytes_per_param, double gpus,
                             double max_shard_bytes, double storage_Bps, double d2h_Bps, int async,
                             mp_checkpoint *out, mp_diag *diag);

/* ---- the run ---------------------------------------------------------------------------------- */

/** The process simulated and expected (docs/faults.md): work_s of useful compute is split into
 *  segments of interval_s, each followed by a checkpoint that stalls ckpt_s (none after the last).
 *  Failures arrive as a Poisson process of rate fail_per_s while the job runs; a failure loses
 *  the current segment. A share spare_frac of failures takes a node out: the job takes a healthy
 *  spare (spare_nodes of them; a failed node is back after repair_s) or waits for the first
 *  repair. Every failure then costs down_s (restart + checkpoint load + async lag) during which
 *  no failure strikes. */
typedef struct {
    double work_s;        /* > 0 */
    double interval_s;    /* > 0 */
    double ckpt_s;        /* >= 0 */
    double down_s;        /* >= 0 */
    double fail_per_s;    /* >= 0 */
    double spare_frac;    /* [0, 1] */
    double repair_s;      /* >= 0 */
    int spare_nodes;      /* >= 0 */
} mp_run_params;

/** Expected values. */
typedef struct {
    double wall_s;        /* E[wall-clock] */
    double goodput;       /* work_s / wall_s */
    double failures;      /* expected number of failures */
    double checkpoints;   /* checkpoints taken */
    double ckpt_s;        /* time stalled in checkpoints */
    double lost_s;        /* running time whose work was lost */
    double down_s;        /* restarts */
    double wait_s;        /* waiting for a spare node */
    double up_s;          /* time running (work + checkpoints + lost) */
} mp_run_expect;

/** Analytical expectation. Exact for the process above when spare_nodes is 0 (every hardware
 *  failure waits repair_s) or when no failure needs a spare; otherwise the wait uses the Erlang
 *  loss formula for the spare pool (Erlang 1917; the M/G/S/S blocking probability is insensitive
 *  to the repair-time distribution) with the mean residual repair of a full pool, an
 *  approximation. Per segment of x seconds: (e^{lambda x} - 1)(1/lambda + E[D]), the
 *  exponential-failure model of Daly 2006 ("A higher order estimate of the optimum checkpoint
 *  interval for restart dumps", Future Generation Computer Systems 22(3)) with failure-free
 *  restarts (docs/faults.md derives it). Errors: MP_ERR_INPUT naming the bad field; MP_ERR_RANGE
 *  when the expectation overflows (failures far more frequent than a segment). */
mp_status mp_run_expected(const mp_run_params *p, mp_run_expect *out, mp_diag *diag);

/** Monte Carlo over `trials` runs (1 .. 10^7) of the same process, seeded (same seed, same
 *  result). Percentiles are linear interpolations of the sorted samples. Allocates one double
 *  per trial. Errors: MP_ERR_INPUT, MP_ERR_NOMEM, MP_ERR_RANGE (more than 10^9 failures in a
 *  trial: the run would never finish). */
typedef struct {
    int trials;
    double wall_mean_s, wall_p10_s, wall_p90_s;
    double goodput_mean, goodput_p10, goodput_p90;
    double failures_mean;
    double wait_mean_s;       /* waiting for spares */
} mp_run_mc;

mp_status mp_run_simulate(const mp_run_params *p, int trials, uint64_t seed, mp_run_mc *out,
                          mp_diag *diag);

/** Young 1974 ("A first order approximation to the optimum checkpoint interval", CACM 17(9)):
 *  sqrt(2 * ckpt_s * mtbf_s). Inputs > 0. */
double mp_ckpt_interval_young(double ckpt_s, double mtbf_s);
/** Daly 2006, the higher-order estimate: sqrt(2 d M) [1 + sqrt(d / 2M) / 3 + (d / 2M) / 9] - d for d < 2M, else M. */
double mp_ckpt_interval_daly(double ckpt_s, double mtbf_s);
/** The interval that minimises the expectation of mp_run_expected for exponential failures
 *  (root of (1 - lambda t) e^{lambda (t + d)} = 1; independent of the restart cost). */
double mp_ckpt_interval_exact(double ckpt_s, double mtbf_s);

/** Erlang B blocking probability for S servers and offered load a (Erlang 1917). */
double mp_erlang_b(int servers, double load);
/** Fewest spare nodes that keep the chance a hardware failure finds no spare at or below
 *  target (0 < target < 1), for hardware failures at spare_per_s and repairs of repair_s. */
int mp_spares_for(double spare_per_s, double repair_s, double target);

#endif
