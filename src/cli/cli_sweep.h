/* src/cli/cli_sweep.h — what cmd_sweep.c (the command, single-process) and src/mpi/sweep_mpi.c (the
 * MPI distribution, built only with MESHPLAN_MPI) share. Internal to the CLI. */
#ifndef MESHPLAN_CLI_SWEEP_H
#define MESHPLAN_CLI_SWEEP_H

#include <stdint.h>

#include "meshplan/sweep.h"

/** A sweep to run: the tasks still to do (rank 0's list; other ranks receive theirs from it),
 *  each rank's threads, and rank 0's sink for finished tasks. */
typedef struct {
    const mp_sweep *s;
    const int64_t *pending;    /* rank 0: task indices to run, ascending */
    int64_t npending;
    int threads;               /* per rank: 0 = OpenMP's default, else that many */
    /* Rank 0 only: a finished task r, evaluated by rank `rank`; returns 0 to go on, non-zero to
     * stop the whole job at once (the test-only MESHPLAN_SWEEP_STOP_AFTER, a write error). */
    int (*record)(void *ctx, const mp_sweep_result *r, int rank);
    void *ctx;
    /* Rank 0 only: one entry per rank, filled at the end with that rank's process CPU time
     * (CLOCK_PROCESS_CPUTIME_ID, every thread), for the summary's cpu_s_per_rank. */
    double *cpu_s_per_rank;
} cli_sweep_job;

#ifdef MESHPLAN_HAVE_MPI
/** MPI_Init; *rank and *size of MPI_COMM_WORLD. 0, or EXIT_INTERNAL after printing. */
int cli_sweep_mpi_init(int *rank, int *size);
/** Run job over every rank: rank 0 hands out task indices one at a time (to whichever rank asks
 *  first) and evaluates tasks itself between requests; results go to rank 0's record. Returns 0,
 *  or an exit code (every rank returns the same). */
int cli_sweep_mpi_run(const cli_sweep_job *job, int rank, int size);
/** MPI_Finalize (after everything else). */
void cli_sweep_mpi_end(void);
/** MPI_Abort of the whole job with code rc (a stop requested by record). */
void cli_sweep_mpi_abort(int rc);
#endif

#endif
