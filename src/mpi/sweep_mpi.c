/* src/mpi/sweep_mpi.c — the sweep over MPI ranks (built only with MESHPLAN_MPI; the library
 * and the rest of the CLI never see mpi.h).
 *
 * Dynamic load balance by a work queue on rank 0 (a task costs from milliseconds to minutes:
 * MoE systems 20-45x dense ones, so a static partition would leave ranks idle). Rank 0 holds the
 * pending task indices in ascending order and hands the next one to whichever rank asks; it
 * evaluates tasks itself and answers requests between its own tasks (so an answer may wait up to
 * one of rank 0's tasks; every worker keeps PREFETCH requests outstanding to hide that: it holds
 * the task it runs and PREFETCH - 1 answers on their way. With 2 (one task ahead) the 1,440-system
 * sweep of docs/sweep.md left the worker waiting, spinning in MPI_Recv, for half its CPU time:
 * answers and tasks take about as long, so the one answer ahead was late half the time). Results travel back as mp_sweep_result bytes with the
 * request for the next task. Which rank runs a task changes nothing in its row (mp_sweep_run_task
 * depends only on the task index), and rank 0 writes the rows sorted by task, so the CSV is the
 * same for any number of ranks.
 *
 * Messages: worker -> 0, TAG_RESULT: an mp_sweep_result (task -1: "ready, no result"); 0 ->
 * worker, TAG_TASK: an int64 task index, -1 = no more work.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/cli_sweep.h"

enum { TAG_RESULT = 1, TAG_TASK = 2 };
enum { PREFETCH = 4 }; /* requests each worker keeps outstanding (see above) */

int cli_sweep_mpi_init(int *rank, int *size)
{
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited && MPI_Init(NULL, NULL) != MPI_SUCCESS) {
        fprintf(stderr, "meshplan: sweep: MPI_Init failed\n");
        return EXIT_INTERNAL;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    return 0;
}

void cli_sweep_mpi_end(void)
{
    int inited = 0, fin = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&fin);
    if (inited && !fin)
        MPI_Finalize();
}

void cli_sweep_mpi_abort(int rc) { MPI_Abort(MPI_COMM_WORLD, rc); }

/* Rank 0's queue. */
typedef struct {
    const cli_sweep_job *job;
    int64_t next;     /* index into job->pending */
    int active;       /* workers not yet told to stop */
    int rc;           /* first non-zero record() */
} queue;

static int64_t take(queue *q)
{
    if (q->rc || q->next >= q->job->npending)
        return -1;
    return q->job->pending[q->next++];
}

/* A message from a worker: record its result (if any) and hand it its next task. */
static void serve(queue *q, const mp_sweep_result *r, int src)
{
    if (r->task >= 0 && !q->rc)
        q->rc = q->job->record(q->job->ctx, r, src);
    int64_t t = take(q);
    MPI_Send(&t, 1, MPI_INT64_T, src, TAG_TASK, MPI_COMM_WORLD);
    if (t < 0)
        q->active--;
}

static void serve_pending(queue *q, mp_sweep_result *buf)
{
    int flag = 1;
    while (flag && q->active > 0) {
        MPI_Status stt;
        MPI_Iprobe(MPI_ANY_SOURCE, TAG_RESULT, MPI_COMM_WORLD, &flag, &stt);
        if (flag) {
            MPI_Recv(buf, (int)sizeof *buf, MPI_BYTE, stt.MPI_SOURCE, TAG_RESULT, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            serve(q, buf, stt.MPI_SOURCE);
        }
    }
}

static int run_rank0(const cli_sweep_job *job, int size)
{
    /* Each worker has PREFETCH requests outstanding when the work runs out: each is answered with
     * "stop". */
    queue q = {job, 0, PREFETCH * (size - 1), 0};
    mp_sweep_result buf, mine;
    for (;;) {
        serve_pending(&q, &buf);
        int64_t t = take(&q);
        if (t < 0)
            break;
        mp_diag d = {0};
        mp_status st = mp_sweep_run_task(job->s, t, job->threads, &mine, &d);
        if (st != MP_OK) {
            cli_print_diag(&d);
            MPI_Abort(MPI_COMM_WORLD, cli_exit_for(st));
        }
        if (!q.rc)
            q.rc = job->record(job->ctx, &mine, 0);
    }
    while (q.active > 0) { /* no work left: answer the rest with "stop" */
        MPI_Status stt;
        MPI_Recv(&buf, (int)sizeof buf, MPI_BYTE, MPI_ANY_SOURCE, TAG_RESULT, MPI_COMM_WORLD, &stt);
        serve(&q, &buf, stt.MPI_SOURCE);
    }
    return q.rc;
}

static int run_worker(const cli_sweep_job *job)
{
    mp_sweep_result r;
    memset(&r, 0, sizeof r);
    r.task = -1;
    /* PREFETCH requests up front; then each result sent is the next request, so PREFETCH stay
     * outstanding before every receive. Answers from rank 0 arrive in order (MPI's ordering
     * between one pair of ranks on one tag). */
    for (int i = 0; i < PREFETCH; i++)
        MPI_Send(&r, (int)sizeof r, MPI_BYTE, 0, TAG_RESULT, MPI_COMM_WORLD);
    int outstanding = PREFETCH;
    for (;;) {
        int64_t cur;
        MPI_Recv(&cur, 1, MPI_INT64_T, 0, TAG_TASK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        outstanding--;
        if (cur < 0)
            break;
        mp_diag d = {0};
        mp_status st = mp_sweep_run_task(job->s, cur, job->threads, &r, &d);
        if (st != MP_OK)
            MPI_Abort(MPI_COMM_WORLD, cli_exit_for(st));
        MPI_Send(&r, (int)sizeof r, MPI_BYTE, 0, TAG_RESULT, MPI_COMM_WORLD);
        outstanding++;
    }
    /* The first "stop": the queue is empty, every request still outstanding gets "stop" too. */
    while (outstanding-- > 0) {
        int64_t last;
        MPI_Recv(&last, 1, MPI_INT64_T, 0, TAG_TASK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    return 0;
}

int cli_sweep_mpi_run(const cli_sweep_job *job, int rank, int size)
{
    int rc = rank == 0 ? run_rank0(job, size) : run_worker(job);
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    double cpu_s = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    MPI_Gather(&cpu_s, 1, MPI_DOUBLE, rank == 0 ? job->cpu_s_per_rank : NULL, 1, MPI_DOUBLE, 0,
               MPI_COMM_WORLD);
    /* Every rank returns rank 0's verdict. */
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return rc;
}
