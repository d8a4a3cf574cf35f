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

#endif
