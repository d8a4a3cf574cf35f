/* src/cli/cli_probe.h — what cmd_probe.c (the command: options, fits, files) and
 * src/mpi/probe_mpi.c (the measurements over MPI ranks, built only with MESHPLAN_MPI) share.
 * Internal to the CLI. */
#ifndef MESHPLAN_CLI_PROBE_H
#define MESHPLAN_CLI_PROBE_H

#include <stdint.h>

#include "cli.h"
#include "meshplan/probe.h"

#define CLI_PROBE_MAX_SIZES 40
#define CLI_PROBE_MAX_NODES 4096
#define CLI_PROBE_SWITCH_MAX_NODES 64 /* node pairs timed for the switch inference: n^2/2 */
#define CLI_PROBE_HOST_CAP 64
#define CLI_PROBE_TOPO_CAP 320

/** One measured sweep: time_s[i] = the median over the timed iterations of the slowest rank's
 *  time for a message of bytes[i] (ping-pong: half the round trip). nranks: ranks taking part
 *  (one pair = 2; a collective: its communicator). nsizes 0 = not measured (why says why). */
typedef struct {
    int nsizes;
    double bytes[CLI_PROBE_MAX_SIZES];
    double time_s[CLI_PROBE_MAX_SIZES];
    int64_t nranks;
    int pairs;               /* ping-pong: pairs timed at once */
    char why[160];
    /* The spread over the timed iterations (the model sweep's curves only; 0 elsewhere): the
     * fastest, first and third quartile of the per-iteration slowest-rank times. */
    double min_s[CLI_PROBE_MAX_SIZES], q1_s[CLI_PROBE_MAX_SIZES], q3_s[CLI_PROBE_MAX_SIZES];
} cli_probe_curve;

/** What to measure. */
typedef struct {
    double max_bytes;        /* largest message (>= 1 KiB) */
    int iters, warmup;       /* timed and untimed repetitions per size */
    int fake_ranks_per_node; /* test only (MESHPLAN_PROBE_RANKS_PER_NODE): nodes of this many
                                consecutive ranks instead of MPI_Comm_split_type SHARED */
} cli_probe_cfg;

/** What was measured (filled on rank 0; other ranks only take part). Ranks are renumbered node
 *  by node (node index, then local rank) so that a node is a block of consecutive ranks, as the
 *  cluster model places them. */
typedef struct {
    int nranks, nnodes, ranks_per_node;  /* ranks_per_node: 0 when the nodes differ */
    int ranks_per_node_min, ranks_per_node_max;
    char hosts[CLI_PROBE_MAX_NODES][CLI_PROBE_HOST_CAP]; /* hostname of each node's first rank */
    char topo[CLI_PROBE_MAX_NODES][CLI_PROBE_TOPO_CAP];  /* hwloc summary of each node */
    int gpu_buffers;                     /* 1: GPU memory through CUDA-aware MPI */
    /* Ranks on the busiest host (MPI_Comm_split_type SHARED, whatever the test-only split) and
     * the fewest online cores of a host (sysconf): more ranks than cores time-slice. */
    int ranks_per_host_max, cores_min;
    char buffers[160];                   /* "host memory (...)" or "GPU memory (...)" */
    char mpi_library[256];
    cli_probe_curve pp_intra;            /* ping-pong inside node 0: ranks 0 and 1 */
    cli_probe_curve pp_inter;            /* ping-pong node 0 - node 1, one pair */
    cli_probe_curve pp_inter_all;        /* every rank of node 0 with its peer on node 1 at once */
    cli_probe_curve ar_world, ag_world, a2a_world; /* all-reduce, all-gather, all-to-all */
    cli_probe_curve ar_node;             /* all-reduce inside every node at once (slowest) */
    /* The MPI model's inputs, measured in one interleaved loop with ar_world (probe_mpi.c
     * model_sweep): MPI_Sendrecv exchanges with every pair at once inside a node and between
     * nodes, MPI_Reduce_local (float sum) and memcpy of S bytes on every rank at once. */
    cli_probe_curve xchg_intra, xchg_inter, reduce_local, copy_local;
    /* The chained exchange (probe_mpi.c chain_op): the all-reduce algorithms' partner sequence,
     * one exchange of S bytes per step, back to back after one barrier; pairs = its steps. */
    cli_probe_curve xchg_chain;
    /* Node-pair small-message latency (8 B, one way), nnodes x nnodes, 0 on the diagonal; NULL
     * when not measured (fewer than 3 nodes, more than CLI_PROBE_SWITCH_MAX_NODES). */
    double *node_latency_s;
} cli_probe_data;

#ifdef MESHPLAN_HAVE_MPI
/** MPI_Init (or reuse); *rank, *size of MPI_COMM_WORLD. 0 or EXIT_INTERNAL after printing. */
int cli_probe_mpi_init(int *rank, int *size);
/** Run every measurement on every rank (collective: all ranks call it). Rank 0's *out is filled;
 *  returns 0 on every rank, or an exit code (the same on every rank) after rank 0 printed why. */
int cli_probe_mpi_run(const cli_probe_cfg *cfg, cli_probe_data *out);
/** Every rank takes rank 0's *rc (its fits and files decide the exit code). */
void cli_probe_mpi_end_rc(int *rc);
void cli_probe_mpi_end(void);
#endif

/** Rank 0's state while it fits and writes (cmd_probe.c fits, cli_probe_out.c writes). */
typedef struct {
    const cli_args *a;
    const mp_catalog *cat;
    cli_probe_data *d;
    cli_probe_cfg cfg;
    const char *gpu;
    mp_probe_cluster pc;
    mp_probe_ab_fit ab[MP_MAX_TIERS], ab_pair; /* per tier; tier 1's single pair alone */
    int ab_ok[MP_MAX_TIERS];
    int groups[CLI_PROBE_SWITCH_MAX_NODES], ngroups, regular; /* switches (node-pair latency) */
    double near_s, far_s;
    mp_cluster raw, cal;       /* the cluster file as read back; with the calibration applied */
    mp_calibration calib;
    mp_cal_link_fit fit[2];    /* tier 0 from the nodes' all-reduce, the outermost from the world's */
    int nfit;
    const char *choice;        /* which calibration was kept (cmd_probe.c choose_calibration) */
    double ar_before_pct, ar_after_pct, hh_before_pct, hh_after_pct; /* world all-reduce */
    double ag_after_pct, a2a_after_pct;
    /* A free alpha-beta line through the world all-reduce curve itself: how far a smooth
     * two-parameter model can follow the measured curve at all (the noise and shape floor). */
    mp_probe_ab_fit ar_line;
    int ar_line_ok;
    /* MPI's own all-reduce predicted from the exchange and local probes (cmd_probe.c
     * fit_mpi_model): held out, no all-reduce figure enters it. From the median curves, and
     * (_min) from the fastest iteration of every size. */
    mp_probe_mpi_model mm, mm_min;
    int mm_ok;
    char mm_why[160];
    double mm_pred_s[CLI_PROBE_MAX_SIZES], mm_pred_min_s[CLI_PROBE_MAX_SIZES];
    mp_mpi_allreduce_algo mm_algo[CLI_PROBE_MAX_SIZES];
    double mm_err_pct, mm_max_err_pct, mm_min_err_pct, mm_spread_pct;
} cli_probe_job;

/** Write the cluster description (text) to -o and the calibration to --calibration-out. */
int cli_probe_write_files(cli_probe_job *j, const char *text);
/** Print the summary (text) or, with --json, everything as one object. */
int cli_probe_print(cli_probe_job *j);

/** hwloc summary of this host into buf ("2 packages, 2 NUMA nodes, 64 cores, 128 PUs; GPUs: ...;
 *  NICs: ..."); "hwloc not built in" without it (src/cli/cli_hwloc.c). */
void cli_hwloc_summary(char *buf, int cap);

#endif
