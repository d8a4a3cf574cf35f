/* meshplan/probe.h — turn link measurements into the figures meshplan uses: the alpha-beta fit of
 * a message-size sweep and the cluster description a probe
 * writes (docs/probe.md).
 *
 * The measuring itself (MPI ping-pong and collectives over the ranks of `mpirun`) is the CLI's
 * `meshplan probe` (src/mpi/probe_mpi.c, built only with MPI); the library never links MPI. What
 * is here is pure: numbers in, numbers or JSON text out, so it is tested without MPI.
 */
#ifndef MESHPLAN_PROBE_H
#define MESHPLAN_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "meshplan/coll.h"
#include "meshplan/hw.h"
#include "meshplan/status.h"
#include "meshplan/topo.h"

/** One measured point: a message of `bytes` (nccl-tests' size convention for collectives) took
 *  `time_s` (one way for ping-pong: half the round trip). */
typedef struct {
    double bytes;
    double time_s;
} mp_probe_point;

/** The alpha-beta (Hockney) model t(S) = alpha + S / beta fitted to a sweep. */
typedef struct {
    double alpha_s;          /* latency: the time of an empty message */
    double beta_Bps;         /* bandwidth: bytes per second of the size-proportional part */
    double median_err_pct;   /* median over the points of |t_fit - t| / t, percent */
    double max_err_pct;      /* largest of the same */
    int npoints;
} mp_probe_ab_fit;

/** Fit t = alpha + S / beta by least squares on the relative error (minimise
 *  sum_i ((alpha + S_i / beta - t_i) / t_i)^2, linear in alpha and 1/beta: Hockney 1994, "The
 *  communication challenge for MPP", Parallel Computing 20(3), eq. 1), so a 1 B and a 16 MiB
 *  message weigh alike. A fitted alpha below 0 is set to 0 and 1/beta refitted alone. Points:
 *  n >= 2, bytes >= 0, time_s > 0 and finite, at least two distinct sizes. Errors: MP_ERR_INPUT
 *  (too few or invalid points, naming the point; a sweep whose time does not grow with size, so
 *  that no positive bandwidth fits). */
mp_status mp_probe_fit_alpha_beta(const mp_probe_point *p, int n, mp_probe_ab_fit *out,
                                  mp_diag *diag);

/* nccl-tests' bus bandwidth factors: mp_coll_busbw_factor (coll.h). */

/** One tier of a probed cluster. */
typedef struct {
    char name[MP_KEY_CAP];   /* also its link key in a calibration file ("probe-intra", ...) */
    mp_link_kind kind;       /* MP_LINK_SCALEUP for tier 0, MP_LINK_SCALEOUT above */
    int64_t domain_gpus;     /* ranks in one domain of this tier (tier 0: ranks per node) */
    double bw_Bps;           /* measured per-rank bandwidth (alpha-beta beta), per direction */
    double latency_s;        /* measured alpha */
    char notes[512];         /* what was measured, the fit and its error */
} mp_probe_tier;

/** What a probe found, to be written as a cluster description (docs/cluster.md). */
typedef struct {
    char name[MP_NAME_CAP];
    char gpu[MP_KEY_CAP];    /* catalog GPU key (the --gpu given) */
    int64_t num_gpus;        /* ranks probed */
    int ntiers;              /* 1..MP_MAX_TIERS */
    mp_probe_tier tier[MP_MAX_TIERS];
    char source[512];        /* how it was measured (host buffers or GPU buffers, dates, ...) */
    char notes[2048];        /* host topology (hwloc), the nodes and switches inferred */
} mp_probe_cluster;

/** The cluster description of pc as JSON text (malloc'd, NUL-terminated; free with free()):
 *  {name, gpu, num_gpus_count, source, notes, tiers: [{name, kind, domain_gpus_count (left out
 *  on the outermost scale-out tier: the whole cluster, so --gpus may extrapolate), link_bw_Bps, latency_s, efficiency_frac: 1, topology (tier 0: "switch"), nics_per_gpu_count
 *  (scale-out: 1, the bandwidth being per rank), notes}]}. No catalog link is named: the tiers
 *  carry their measured numbers, and mp_cluster_from_json reads the text back as it is (the
 *  tier's link key is then its name). Errors: MP_ERR_INPUT (no tiers, a number not > 0, domains
 *  not growing by whole multiples up to num_gpus, tier 0 not scale-up), MP_ERR_NOMEM. */
mp_status mp_probe_cluster_json(const mp_probe_cluster *pc, char **out, mp_diag *diag);

/** Switches from node-pair latencies: lat_s[i * n + j] the small-message one-way latency between
 *  nodes i and j (n >= 3; the diagonal ignored). When the largest latency is at least
 *  `ratio` (> 1; 1.5 is used by the probe) times the smallest, nodes joined by a latency below
 *  their geometric mean share a switch (connected components, numbered in order of their first
 *  node); group_of[i] gets node i's switch, *ngroups their count, *near_s and *far_s the median
 *  latency inside and between switches. Otherwise (latencies alike: one switch, or a fabric with
 *  no visible levels) every node is in switch 0, *ngroups = 1, *far_s = 0. The grouping is
 *  "regular" (*regular = 1) when the switches are contiguous blocks of nodes of one size, the
 *  only shape the cluster description can express (docs/cluster.md: a domain is an aligned
 *  block). Errors: MP_ERR_INPUT (n < 3, a latency not > 0 off the diagonal, ratio <= 1). */
mp_status mp_probe_switch_groups(const double *lat_s, int n, double ratio, int *group_of,
                                 int *ngroups, int *regular, double *near_s, double *far_s,
                                 mp_diag *diag);

/* ---- MPI's own all-reduce, predicted from point-to-point and local probes (docs/probe.md) ---- */

#define MP_PROBE_MAX_REGIMES 3
#define MP_PROBE_MAX_CHAIN 64 /* sizes of the chained exchange (mp_probe_mpi_model) */

/** A point-to-point curve in protocol regimes (an MPI transport switches protocol with size:
 *  eager, then rendezvous, then single-copy or pipelined fragments): regime k holds the sizes
 *  upto_bytes[k-1] < S <= upto_bytes[k] (upto_bytes[nregimes-1] = the largest size measured;
 *  larger sizes extrapolate the last regime) and costs t(S) = alpha_s + S / beta_Bps of its fit.
 *  A regime whose time does not grow with size has beta_Bps = INFINITY (latency only). */
typedef struct {
    int nregimes;                                   /* 1..MP_PROBE_MAX_REGIMES */
    double upto_bytes[MP_PROBE_MAX_REGIMES];        /* the largest measured size in regime k */
    mp_probe_ab_fit regime[MP_PROBE_MAX_REGIMES];
    double median_err_pct, max_err_pct;             /* over all the points, the regimes' fits */
    int npoints;
} mp_probe_regimes;

/** Fit a sweep (sizes strictly increasing) with 1 to max_regimes (1..MP_PROBE_MAX_REGIMES)
 *  piecewise alpha-beta regimes. Each regime is fitted as mp_probe_fit_alpha_beta does (least
 *  squares on the relative error), with alpha >= 0 and 1/beta >= 0 enforced (a flat regime:
 *  latency only); the breakpoints are the split of the sorted points that minimises the summed
 *  squared relative error, every regime holding at least 3 points. The number of regimes is the
 *  one with the lowest Bayesian information criterion (Schwarz 1978; 3k - 1 parameters for k
 *  regimes), so noise alone rarely splits a curve; an exact curve is never split beyond what it
 *  needs. Errors: MP_ERR_INPUT (fewer
 *  than 2 points or more than 256, a point not bytes >= 0 and finite time > 0, sizes not
 *  increasing, max_regimes out of range), naming the point. */
mp_status mp_probe_fit_regimes(const mp_probe_point *p, int n, int max_regimes,
                               mp_probe_regimes *out, mp_diag *diag);

/** The time of a message of `bytes` (>= 0) under r (see mp_probe_regimes). */
double mp_probe_regimes_time_s(const mp_probe_regimes *r, double bytes);

/** The all-reduce algorithms of MPI libraries (Open MPI coll/tuned numbering in the comment). */
typedef enum {
    MP_MPI_AR_RECURSIVE_DOUBLING, /* tuned 3; MPICH short messages */
    MP_MPI_AR_RING,               /* tuned 4 */
    MP_MPI_AR_SEGMENTED_RING,     /* tuned 5; with the fixed rules' segment size 0 it runs as 4 */
    MP_MPI_AR_RABENSEIFNER,       /* tuned 6 (reduce-scatter halving + allgather doubling) */
    MP_MPI_AR_REDUCE_BCAST,       /* tuned 2 "nonoverlapping": reduce then bcast */
    MP_MPI_AR_COUNT
} mp_mpi_allreduce_algo;

/** Which library's default decision rules pick the algorithm. */
typedef enum {
    MP_MPI_RULES_OPENMPI_TUNED, /* Open MPI >= 4.1 coll/tuned fixed rules (the default module) */
    MP_MPI_RULES_MPICH,         /* MPICH: recursive doubling <= 2 KiB, else Rabenseifner */
    MP_MPI_RULES_COUNT
} mp_mpi_rules;

/** What the model is built from: every figure measured by point-to-point or local probes, none
 *  from an all-reduce. */
typedef struct {
    mp_mpi_rules rules;
    int64_t ranks;            /* the communicator, >= 2 */
    int64_t ranks_per_node;   /* consecutive ranks sharing a node (>= 1; = ranks on one node) */
    mp_probe_regimes intra;   /* MPI_Sendrecv exchange inside a node, every pair at once */
    mp_probe_regimes inter;   /* the same between nodes (nregimes 0 when one node) */
    mp_probe_ab_fit reduce;   /* MPI_Reduce_local of S bytes (float sum): the gamma term */
    mp_probe_ab_fit copy;     /* memcpy of S bytes: the out-of-place copy every algorithm starts with */
    /* The start-up cost every separately timed operation pays once (the barrier's exit skew,
     * the partners' first scheduling; Hoefler, Schneider & Lumsdaine 2010): the exchange
     * curves above each include it, an algorithm's later steps, run back to back, do not.
     * Measured per size from the chained exchange (mp_probe_mpi_entry_at_s): entry_at_s[i] at
     * chain_bytes[i], i < chain_points; entry_s is their median (a summary; the cost used when
     * chain_points is 0, then normally 0). Seconds; negative where chained steps cost more
     * than separate ones (oversubscribed ranks at large sizes: docs/probe.md). */
    double entry_s;
    int chain_points;         /* 0: the chained exchange was not measured or not used */
    double chain_bytes[MP_PROBE_MAX_CHAIN], entry_at_s[MP_PROBE_MAX_CHAIN];
} mp_probe_mpi_model;

/** The decision rules of the library named by MPI_Get_library_version's text: "MPICH" (also
 *  MVAPICH, Intel MPI, which derive from it) -> MP_MPI_RULES_MPICH; anything else (Open MPI) ->
 *  MP_MPI_RULES_OPENMPI_TUNED. */
mp_mpi_rules mp_probe_mpi_rules_for(const char *mpi_library);

/** The algorithm `rules` run for an all-reduce of `bytes` (the buffer, as nccl-tests counts it)
 *  of a commutative operation over `ranks` (>= 2) ranks. Open MPI: the commutative branch of
 *  ompi_coll_tuned_allreduce_intra_dec_fixed (ompi/mca/coll/tuned/coll_tuned_decision_fixed.c,
 *  v4.1 onward). MPICH: Thakur, Rabenseifner & Gropp 2005, section 4.4. */
mp_mpi_allreduce_algo mp_probe_mpi_allreduce_algo(mp_mpi_rules rules, int64_t ranks,
                                                  double bytes);

/** "recursive_doubling", "ring", "segmented_ring", "rabenseifner", "reduce_bcast"; "?" else. */
const char *mp_mpi_allreduce_algo_name(mp_mpi_allreduce_algo a);
const char *mp_mpi_rules_name(mp_mpi_rules r);

/** The time of an all-reduce of `bytes` (> 0) under m: the algorithm of m->rules, costed step
 *  by step (Thakur, Rabenseifner & Gropp 2005, section 4.4; ring: Patarasuk & Yuan 2009) with
 *  each step's exchange priced at its own message size by the regimes of the tier it crosses
 *  less the start-up cost at its size (mp_probe_mpi_entry_at_s; the step floored at 0), each
 *  step's reduction by m->reduce, plus the initial copy and the start-up cost at the first
 *  step's size once. *algo (may be NULL) gets the
 *  algorithm. Errors: MP_ERR_INPUT (ranks < 2, ranks_per_node not dividing ranks, no intra
 *  regimes when a node holds 2 ranks or more, no inter regimes across nodes, bytes not > 0). */
mp_status mp_probe_mpi_allreduce_s(const mp_probe_mpi_model *m, double bytes, double *time_s,
                                   mp_mpi_allreduce_algo *algo, mp_diag *diag);

/** The probes an MPI model is fitted on (sizes increasing in each; see mp_probe_fit_regimes). */
typedef struct {
    mp_mpi_rules rules;
    int64_t ranks, ranks_per_node;
    const mp_probe_point *intra;  /* exchange inside a node; NULL, 0 with one rank per node */
    int nintra;
    const mp_probe_point *inter;  /* exchange between nodes; NULL, 0 on one node */
    int ninter;
    const mp_probe_point *reduce; /* MPI_Reduce_local */
    int nreduce;
    const mp_probe_point *copy;   /* memcpy */
    int ncopy;
    /* The chained exchange (NULL, 0: not measured; entry_s is then 0): per size S, the time of
     * the 2 lg p2 exchanges of S bytes (p2 the largest power of two <= ranks) with partners
     * rank ^ mask, mask = 1, 2, ..., p2/2, then p2/2, ..., 1, back to back after one barrier:
     * the partner sequence of Rabenseifner's algorithm (recursive doubling runs its first
     * half), as probe_mpi.c chain_op measures it. */
    const mp_probe_point *chain;
    int nchain;
} mp_probe_mpi_inputs;

/** The start-up cost of m at each size of the chained exchange c[0..n) (see
 *  mp_probe_mpi_inputs.chain; n <= MP_PROBE_MAX_CHAIN), m's exchange regimes fitted: an
 *  operation of L exchanges back to back costs entry + L steps, a separate exchange entry + 1
 *  step, so at size S entry(S) = (sum over the chain's K steps of m's exchange time at S - the
 *  chain's time at S) / (K - 1). Sets m->chain_points, chain_bytes, entry_at_s and entry_s
 *  (their median); with n < 1 or fewer than 2 ranks, all 0. */
void mp_probe_mpi_set_entry(mp_probe_mpi_model *m, const mp_probe_point *c, int n);

/** m's start-up cost for an operation whose steps are of `bytes`: entry_at_s interpolated
 *  linearly in log(bytes) between the chain's sizes (the nearest end outside them); entry_s
 *  when chain_points is 0. */
double mp_probe_mpi_entry_at_s(const mp_probe_mpi_model *m, double bytes);

/** Fit *out from in: the exchanges in up to MP_PROBE_MAX_REGIMES regimes, the reduction and the
 *  copy as one alpha-beta line each (mp_probe_fit_regimes with 1 regime), the start-up cost
 *  from the chained exchange when given (mp_probe_mpi_set_entry). Errors: MP_ERR_INPUT (a curve
 *  the fit refuses, naming it; a curve missing that the ranks need; a chained-exchange curve
 *  of fewer than 2 or more than MP_PROBE_MAX_CHAIN points, a point with bytes < 0, a time not
 *  > 0, or sizes not growing). */
mp_status mp_probe_mpi_model_fit(const mp_probe_mpi_inputs *in, mp_probe_mpi_model *out,
                                 mp_diag *diag);

/** Predict a measured all-reduce curve ar[0..n) with m: pred_s[i] and algo[i] (either may be
 *  NULL) per point, the median and largest |predicted - measured| / measured in percent.
 *  Errors: those of mp_probe_mpi_allreduce_s; n < 1. */
mp_status mp_probe_mpi_allreduce_error(const mp_probe_mpi_model *m, const mp_probe_point *ar,
                                       int n, double *pred_s, mp_mpi_allreduce_algo *algo,
                                       double *median_err_pct, double *max_err_pct,
                                       mp_diag *diag);

#endif
