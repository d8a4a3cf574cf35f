/* src/cli/cmd_sweep.c — `meshplan sweep SWEEP.json -o RESULTS.csv`: the best plan of every system
 * of a design space (docs/sweep.md), on one process or, built with MPI, over every rank of
 * `mpirun -n N` (src/mpi/sweep_mpi.c). Rank 0 loads the checkpoint, records each finished task in it
 * as it arrives, and writes the CSV sorted by task at the end; only rank 0 prints. */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_sweep.h"

static const cli_option sweep_opts[] = {
    CLI_REQ("-o", "FILE", "the results CSV (one row per system and workload, sorted by task)"),
    CLI_OPT("--checkpoint", "FILE", "finished tasks, kept for a resume (default: the output + .ckpt)"),
    CLI_FLAG("--fresh", "ignore (and overwrite) the checkpoint: evaluate every task again"),
    CLI_OPT("--threads", "T", "threads per process evaluating plans (default: every core)"),
    CLI_OPT_CATALOG,
    CLI_FLAG("--json", "print the run's summary as one JSON object"),
    CLI_END,
};

const cli_command cli_cmd_sweep = {
    "sweep", "the best plan of every system of a design space (models x GPUs x node designs x "
    "cluster sizes x workloads), the Pareto set; over MPI ranks with mpirun",
    "SWEEP.json", 1, sweep_opts,
    "The design space's schema, the determinism and the resume: docs/sweep.md. Test only: "
    "MESHPLAN_SWEEP_STOP_AFTER=K stops the job after K tasks (a killed job).",
    cmd_sweep,
};

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Rank 0's state while tasks finish. */
typedef struct {
    mp_sweep_result *results;  /* one per task */
    unsigned char *done;
    FILE *ckpt;
    int64_t ntasks, finished, stop_after, recorded;
    uint64_t *evaluated_per_rank;
    int64_t *tasks_per_rank;
    int progress;
    double t0;
} sweep_sink;

static int record(void *ctx, const mp_sweep_result *r, int rank)
{
    sweep_sink *k = ctx;
    if (r->task < 0 || r->task >= k->ntasks || k->done[r->task])
        return 0;
    k->results[r->task] = *r;
    k->done[r->task] = 1;
    k->finished++;
    k->recorded++;
    k->evaluated_per_rank[rank] += r->evaluated;
    k->tasks_per_rank[rank]++;
    if (mp_sweep_checkpoint_append(k->ckpt, r) != MP_OK) {
        fprintf(stderr, "meshplan: sweep: cannot write the checkpoint\n");
        return EXIT_INTERNAL;
    }
    if (k->progress)
        fprintf(stderr, "\rsweep: %lld/%lld tasks  %.1f s", (long long)k->finished,
                (long long)k->ntasks, mono_s() - k->t0);
    if (k->stop_after > 0 && k->recorded >= k->stop_after) {
        fprintf(stderr, "meshplan: sweep: stopped after %lld tasks (MESHPLAN_SWEEP_STOP_AFTER)\n",
                (long long)k->recorded);
        return 3;
    }
    return 0;
}

/* The serial driver: every pending task in order on this process. */
static int run_serial(const cli_sweep_job *j)
{
    for (int64_t q = 0; q < j->npending; q++) {
        mp_sweep_result r;
        mp_diag d = {0};
        mp_status st = mp_sweep_run_task(j->s, j->pending[q], j->threads, &r, &d);
        if (st != MP_OK) {
            cli_print_diag(&d);
            return cli_exit_for(st);
        }
        int rc = j->record(j->ctx, &r, 0);
        if (rc)
            return rc;
    }
    return 0;
}

static int load_sweep(const cli_args *a, mp_catalog **cat, mp_sweep **s, int quiet)
{
    int rc;
    if ((rc = cli_load_catalog(a, cat)))
        return rc;
    char *buf = NULL;
    size_t len = 0;
    mp_diag d = {0};
    mp_status st = cli_read_file(a->positional[0], &buf, &len, &d);
    if (st == MP_OK)
        st = mp_sweep_parse(*cat, buf, len, a->positional[0], s, &d);
    free(buf);
    if (st != MP_OK) {
        if (!quiet) {
            fprintf(stderr, "meshplan: sweep %s:\n", a->positional[0]);
            cli_print_diag(&d);
        }
        return cli_exit_for(st);
    }
    return 0;
}

/* Rank 0: open the checkpoint (loading what it holds unless --fresh), list the pending tasks. */
static int open_checkpoint(const cli_args *a, const mp_sweep *s, sweep_sink *k, int64_t **pending,
                           int64_t *npending, int64_t *resumed)
{
    char path[4096];
    const char *ck = cli_opt(a, "--checkpoint");
    snprintf(path, sizeof path, "%s", ck ? ck : "");
    if (!ck)
        snprintf(path, sizeof path, "%s.ckpt", cli_opt(a, "-o"));
    *resumed = 0;
    if (!cli_flag(a, "--fresh")) {
        FILE *f = fopen(path, "r");
        if (f) {
            mp_diag d = {0};
            mp_status st = mp_sweep_checkpoint_load(s, f, k->results, k->done, resumed, &d);
            fclose(f);
            if (st != MP_OK) {
                fprintf(stderr, "meshplan: sweep: %s:\n", path);
                cli_print_diag(&d);
                return cli_exit_for(st);
            }
        }
    }
    k->ckpt = fopen(path, cli_flag(a, "--fresh") ? "w" : "a");
    if (!k->ckpt) {
        fprintf(stderr, "meshplan: sweep: cannot open the checkpoint \"%s\" for writing\n", path);
        return EXIT_INPUT;
    }
    k->finished = *resumed;
    *pending = malloc(sizeof **pending * (size_t)(k->ntasks > 0 ? k->ntasks : 1));
    if (!*pending)
        return EXIT_INTERNAL;
    *npending = 0;
    for (int64_t t = 0; t < k->ntasks; t++)
        if (!k->done[t])
            (*pending)[(*npending)++] = t;
    return 0;
}

static int write_output(const char *path, const sweep_sink *k)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "meshplan: sweep: cannot write \"%s\"\n", tmp);
        return EXIT_INPUT;
    }
    mp_status st = mp_sweep_write_csv(f, k->results, k->ntasks);
    if (fclose(f) || st != MP_OK || rename(tmp, path)) {
        fprintf(stderr, "meshplan: sweep: cannot write \"%s\"\n", path);
        return EXIT_INTERNAL;
    }
    return 0;
}

static int print_summary(const cli_args *a, const mp_sweep *s, const sweep_sink *k, int size,
                         int threads, int64_t resumed, double wall_s, const double *cpu_s)
{
    uint64_t total = 0;
    for (int r = 0; r < size; r++)
        total += k->evaluated_per_rank[r];
    if (!cli_flag(a, "--json")) {
        printf("sweep: %lld systems, %lld tasks (%lld resumed from the checkpoint), %llu plans "
               "evaluated on %d rank%s in %.2f s -> %s\n", (long long)mp_sweep_systems(s),
               (long long)k->ntasks, (long long)resumed, (unsigned long long)total, size,
               size == 1 ? "" : "s", wall_s, cli_opt(a, "-o"));
        return 0;
    }
    json_t *o = json_object(), *per = json_array(), *tper = json_array(), *cper = json_array();
    for (int r = 0; r < size; r++) {
        json_array_append_new(per, json_integer((json_int_t)k->evaluated_per_rank[r]));
        json_array_append_new(tper, json_integer((json_int_t)k->tasks_per_rank[r]));
        json_array_append_new(cper, json_real(cpu_s ? cpu_s[r] : 0));
    }
    json_object_set_new(o, "ranks", json_integer(size));
    json_object_set_new(o, "threads", json_integer(threads));
    json_object_set_new(o, "systems", json_integer((json_int_t)mp_sweep_systems(s)));
    json_object_set_new(o, "tasks", json_integer((json_int_t)k->ntasks));
    json_object_set_new(o, "resumed", json_integer((json_int_t)resumed));
    json_object_set_new(o, "evaluated", json_integer((json_int_t)total));
    json_object_set_new(o, "evaluated_per_rank", per);
    json_object_set_new(o, "tasks_per_rank", tper);
    json_object_set_new(o, "wall_s", json_real(wall_s));
    /* Each rank's process CPU time (every thread; start-up and parsing included): on a shared
     * machine the figure to compare, where wall_s is not. */
    json_object_set_new(o, "cpu_s_per_rank", cper);
    json_object_set_new(o, "output", json_string(cli_opt(a, "-o")));
    return cli_print_json(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
}

/* Everything after MPI start-up (rank, size known). */
static int sweep_main(const cli_args *a, int rank, int size)
{
    int rc;
    long long threads = 0;
    const char *ts = cli_opt(a, "--threads");
    if (ts && (rc = cli_parse_count("threads", ts, 1, 4096, &threads)))
        return rc;
    mp_catalog *cat = NULL;
    mp_sweep *s = NULL;
    if ((rc = load_sweep(a, &cat, &s, rank != 0))) {
        mp_catalog_destroy(cat);
        return rc;
    }
    double t0 = mono_s();
    sweep_sink k;
    memset(&k, 0, sizeof k);
    k.ntasks = mp_sweep_tasks(s);
    k.t0 = t0;
    int64_t *pending = NULL, npending = 0, resumed = 0;
    double *cpu = calloc((size_t)size, sizeof *cpu);
    cli_sweep_job job = {s, NULL, 0, (int)threads, record, &k, cpu};
    if (rank == 0) {
        k.results = calloc((size_t)k.ntasks, sizeof *k.results);
        k.done = calloc((size_t)k.ntasks, 1);
        k.evaluated_per_rank = calloc((size_t)size, sizeof *k.evaluated_per_rank);
        k.tasks_per_rank = calloc((size_t)size, sizeof *k.tasks_per_rank);
        if (!k.results || !k.done || !k.evaluated_per_rank || !k.tasks_per_rank)
            rc = EXIT_INTERNAL;
        if (!rc)
            rc = cli_check_output("sweep", "-o", cli_opt(a, "-o")); /* before any task runs */
        if (!rc)
            rc = open_checkpoint(a, s, &k, &pending, &npending, &resumed);
        const char *sa = getenv("MESHPLAN_SWEEP_STOP_AFTER");
        k.stop_after = sa ? atoll(sa) : 0;
        k.progress = isatty(STDERR_FILENO);
        job.pending = pending;
        job.npending = npending;
    }
#ifdef MESHPLAN_HAVE_MPI
    if (size > 1) {
        /* Every rank must take part even when rank 0 failed to open its files: the job then
         * hands out nothing (npending 0) and rank 0 returns its own error. */
        if (rc)
            job.npending = 0;
        int mrc = cli_sweep_mpi_run(&job, rank, size);
        if (!rc)
            rc = mrc;
        if (rc == 3 && rank == 0) /* a requested stop: end every rank now, like a kill */
            cli_sweep_mpi_abort(rc);
    } else
#endif
    if (!rc) {
        rc = run_serial(&job);
        struct timespec cts;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cts);
        if (cpu)
            cpu[0] = (double)cts.tv_sec + 1e-9 * (double)cts.tv_nsec;
    }
    if (k.progress && k.finished)
        fprintf(stderr, "\n");
    if (rank == 0 && !rc)
        rc = write_output(cli_opt(a, "-o"), &k);
    if (rank == 0 && !rc)
        rc = print_summary(a, s, &k, size, (int)threads, resumed, mono_s() - t0, cpu);
    if (k.ckpt)
        fclose(k.ckpt);
    free(pending);
    free(cpu);
    free(k.results);
    free(k.done);
    free(k.evaluated_per_rank);
    free(k.tasks_per_rank);
    mp_sweep_destroy(s);
    mp_catalog_destroy(cat);
    return rc;
}

int cmd_sweep(int argc, char **argv)
{
    cli_args a;
    int rank = 0, size = 1, rc;
#ifdef MESHPLAN_HAVE_MPI
    /* MPI only when a launcher started us (Open MPI's mpirun, or a PMIx/PMI one such as srun):
     * a plain run stays single-process and never loads the MPI runtime. */
    if ((getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK")) &&
        (rc = cli_sweep_mpi_init(&rank, &size)))
        return rc;
#else
    const char *ws = getenv("OMPI_COMM_WORLD_SIZE");
    if (ws && atoi(ws) > 1) {
        fprintf(stderr, "meshplan: sweep: started by mpirun with %s ranks, but this build has no "
                        "MPI (configure with Open MPI installed, MESHPLAN_MPI=ON)\n", ws);
        return EXIT_INPUT;
    }
#endif
    /* Only rank 0 prints: the others parse quietly (they see the same arguments). */
    FILE *saved = NULL;
    if (rank != 0)
        saved = freopen("/dev/null", "w", stderr);
    (void)saved;
    rc = cli_parse_cmd(&cli_cmd_sweep, argc, argv, &a);
    if (!rc && a.npositional != 1)
        rc = cli_fail("sweep: expected the design space file, SWEEP.json%s", "");
    if (!rc)
        rc = sweep_main(&a, rank, size);
#ifdef MESHPLAN_HAVE_MPI
    cli_sweep_mpi_end();
#endif
    return rc;
}
