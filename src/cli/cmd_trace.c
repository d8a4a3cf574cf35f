#define _POSIX_C_SOURCE 199309L
/* src/cli/cmd_trace.c — `meshplan trace`: simulate one training step event by event, write its
 * Chrome trace (-o FILE, for Perfetto or chrome://tracing) and print the simulated step time and
 * its parts next to the analytical prediction. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cli.h"


static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}


static void row(const char *what, double sim, double ana)
{
    printf("  %-30s %12.4f %12.4f\n", what, sim, ana);
}

/* The parts side by side (include/meshplan/parts.h): those in the step, the step, then those
 * beside it. Each column of the first group adds up to its step. */
static void parts_table(const mp_time *s, double sim_step_s, const mp_time *a, double ana_step_s)
{
    printf("\nstep time parts (s)              %12s %12s\n", "simulated", "analytical");
    for (int k = 0; k < MP_TIME_PART_COUNT; k++)
        if (mp_time_parts[k].kind != MP_TIME_KIND_BESIDE)
            row(mp_time_parts[k].label, mp_time_part_s(s, (mp_time_part)k), mp_time_part_s(a, (mp_time_part)k));
    row("step", sim_step_s, ana_step_s);
    for (int k = 0; k < MP_TIME_PART_COUNT; k++)
        if (mp_time_parts[k].kind == MP_TIME_KIND_BESIDE)
            row(mp_time_parts[k].label, mp_time_part_s(s, (mp_time_part)k), mp_time_part_s(a, (mp_time_part)k));
}

/* Refuse, before anything is simulated, a step whose trace certainly passes --max-trace-bytes
 * (mp_sim_size_bound: a lower bound). A step over --max-events is left to mp_sim_run, which
 * refuses it from the same bound before it allocates. 0 or EXIT_INPUT. */
static int check_size(const mp_model *m, const mp_plan *p, const mp_estimate *e, const mp_sim_opts *so,
                      const char *outpath, int64_t max_trace)
{
    mp_sim_size z;
    mp_sim_size_bound(m, p, e, so, &z);
    char fix[240];
    if (z.tasks_min > so->max_events)
        return 0;
    if (outpath && z.trace_bytes_min > max_trace) {
        /* The gb that keeps the trace under the cap: tasks scale with the micro-batches. */
        double g = floor((double)max_trace / (double)z.trace_bytes_per_microbatch);
        if (g >= 1)
            snprintf(fix, sizeof fix, "it needs a global batch of gb=%lld or less (likely less: that is a lower "
                                      "bound), or a larger --max-trace-bytes",
                     (long long)(g * (double)p->mb * (double)p->dp));
        else
            snprintf(fix, sizeof fix, "no global batch fits under it (one micro-batch per DP rank, gb=%lld, "
                                      "takes %lld bytes): raise --max-trace-bytes", (long long)(p->mb * p->dp), (long long)z.trace_bytes_per_microbatch);
        fprintf(stderr, "meshplan: trace: the trace of this step takes at least %lld bytes (%.4g MB, %lld slices), over "
                        "--max-trace-bytes %lld%s: %s; nothing was simulated or written\n",
                (long long)z.trace_bytes_min, (double)z.trace_bytes_min / 1e6, (long long)z.tasks_min,
                (long long)max_trace, max_trace == MP_SIM_DEFAULT_MAX_TRACE_BYTES ? " (the default, 256 MiB)" : "",
                fix);
        return EXIT_INPUT;
    }
    return 0;
}

/* The simulator's options and the trace's size cap from the command line; 0 or EXIT_INPUT. */
static int sim_options(const cli_args *args, long long ngpus, mp_sim_opts *so, double *max_trace)
{
    int rc;
    const char *v;
    mp_sim_opts_init(so);
    so->tp_overlap = cli_flag(args, "--tp-overlap");
    so->p2p_overlap = cli_flag(args, "--p2p-overlap");
    so->analytical_rules = cli_flag(args, "--analytical-rules");
    if (so->analytical_rules)
        so->contention_frac = 0.0; /* the estimator's default interference; --contention overrides */
    if ((v = cli_opt(args, "--contention")) && (rc = cli_parse_real("contention", v, 0.0, 10.0, &so->contention_frac)))
        return rc;
    if ((v = cli_opt(args, "--straggler-compute")) &&
        (rc = cli_parse_real("straggler-compute", v, 1.0, 1000.0, &so->straggler_compute_factor)))
        return rc;
    if ((v = cli_opt(args, "--straggler-link")) &&
        (rc = cli_parse_real("straggler-link", v, 1.0, 1000.0, &so->straggler_link_factor)))
        return rc;
    long long ll;
    if ((v = cli_opt(args, "--straggler-rank"))) {
        if ((rc = cli_parse_count("straggler-rank", v, 0, ngpus - 1, &ll)))
            return rc;
        so->straggler_rank = ll;
    } else if (so->straggler_compute_factor > 1.0 || so->straggler_link_factor > 1.0) {
        so->straggler_rank = 0; /* a factor without a rank: rank 0 */
    }
    if ((v = cli_opt(args, "--max-events"))) {
        if ((rc = cli_parse_count("max-events", v, 1, 1LL << 40, &ll)))
            return rc;
        so->max_events = ll;
    }
    *max_trace = (double)MP_SIM_DEFAULT_MAX_TRACE_BYTES;
    if ((v = cli_opt(args, "--max-trace-bytes"))) {
        if ((rc = cli_parse_bytes("max-trace-bytes", v, max_trace)))
            return rc;
        if (*max_trace < 1)
            return cli_fail("trace: --max-trace-bytes = %s: expected at least 1 byte", v);
    }
    return 0;
}

/* Write the trace to path under the cap, leaving no partial file; 0, EXIT_INPUT (cannot open
 * path, over the cap) or EXIT_INTERNAL. *bytes: the size written. */
static int write_trace(const mp_sim *sim, const char *path, const char *title, double max_trace, long *bytes,
                       mp_diag *d)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "meshplan: -o %s: %s\n", path, strerror(errno));
        return EXIT_INPUT;
    }
    int64_t nbytes = 0;
    mp_status st = mp_sim_write_trace_max(sim, f, title, (int64_t)max_trace, &nbytes, d);
    *bytes = (long)nbytes;
    if (fclose(f) != 0 && st == MP_OK) {
        mp_diag_add(d, "-o %s: %s", path, strerror(errno));
        st = MP_ERR_IO;
    }
    if (st == MP_ERR_RANGE) {
        remove(path);
        mp_diag_add(d, "trace: nothing written to %s; raise --max-trace-bytes (now %.0f bytes) or trace fewer "
                       "micro-batches (a smaller gb)", path, max_trace);
        return EXIT_INPUT;
    }
    return st == MP_OK ? 0 : EXIT_INTERNAL;
}

/* trace --json. */

/* trace's text: the job, the parts side by side, the step and the options in words. */
static void print_text(const mp_model *m, const mp_plan *p, const mp_estimate *e, const mp_sim_result *r,
                       const mp_sim_opts *so, double wall, const char *title, const char *outpath, long trace_bytes)
{
    printf("trace    %s\n", title);
    printf("         %s schedule, %d stages x %lld ranks, %d micro-batches; simulated one rank per "
           "stage:\n         %lld tasks, %lld events in %.3f s\n",
           mp_schedule_name(p->schedule), r->nstages, (long long)(p->tp * p->cp * p->dp), e->microbatches,
           (long long)r->tasks, (long long)r->events, wall);
    if (outpath)
        printf("         wrote %s (%.1f MB): open it in https://ui.perfetto.dev or chrome://tracing\n",
               outpath, trace_bytes / 1e6);
    parts_table(&r->time, r->step_s, &e->time, e->step_s);
    printf("\nsimulated step %.4f s, analytical %.4f s (%+.1f%%); bubble %.1f%% of the step; "
           "critical stage %d\n", r->step_s, e->step_s, 100.0 * (r->step_s - e->step_s) / e->step_s,
           100.0 * r->bubble_frac, r->critical_stage);
    printf("contention: compute x%.3f while communication runs on the GPU%s\n", 1.0 + so->contention_frac,
           so->contention_frac == MP_SIM_DEFAULT_CONTENTION_FRAC
               ? " (default: mean measured slowdown, arXiv:2507.03114)" : "");
    if (r->straggler_stage >= 0)
        printf("straggler: rank %lld (stage %d), compute x%.2f, off-node links x%.2f\n",
               (long long)so->straggler_rank, r->straggler_stage, so->straggler_compute_factor,
               so->straggler_link_factor);
    if (so->analytical_rules)
        printf("analytical rules: every stage runs as the slowest; DP reduction may start with the "
               "backward pass that completes the gradients\n");
    if (mp_model_is_moe(m))
        printf("MoE layers simulated from the workload: grouped expert GEMMs and the EP "
               "dispatch/combine all-to-all on their own stream (EP %.4f s simulated, %.4f s "
               "analytical)\n", r->time.ep_comm, e->time.ep_comm);
}

int cli_trace_sim_opts(const cli_args *args, long long ngpus, mp_sim_opts *so)
{
    double max_trace; /* plot timeline writes no trace file */
    return sim_options(args, ngpus, so, &max_trace);
}

static const cli_option trace_opts[] = {
    CLI_REQ("--model", "M", "the model: " CLI_MODEL_HELP),
    CLI_OPT("--gpu", "G", "required unless --cluster gives it: the GPU, a catalog key (meshplan "
            "catalog gpus)"),
    CLI_OPT("--gpus", "N", "required unless --cluster gives it: GPUs in the job"),
    CLI_REQ("--plan", "PLAN", "the parallel plan, \"tp=8,pp=4,...\" (plan keys below)"),
    CLI_OPT_GPUS_PER_NODE,
    CLI_OPT_SCALE_OUT,
    CLI_OPT_CLUSTER_ONE,
    CLI_OPT("--config", "FILE",
            "a launch config (Megatron-LM script, DeepSpeed JSON, torchtitan TOML, NeMo or "
            "fine-tuning YAML, config.json): the options not given come from it (docs/import.md)"),
    CLI_OPT_CATALOG,
    CLI_OPT_CALIBRATION,
    CLI_OPT("-o", "FILE", "write the step's Chrome trace (Perfetto, chrome://tracing) to FILE"),
    CLI_OPT("--output", "FILE", "the same as -o"),
    CLI_OPT("--contention", "F", "compute slowdown while communicating, [0, 10] (default 0.189)"),
    CLI_FLAG("--tp-overlap", "a layer's TP runs beside its compute (async TP)"),
    CLI_FLAG("--p2p-overlap", "compute goes on while pipeline sends are in flight"),
    CLI_FLAG("--analytical-rules", "the estimator's assumptions, for comparing with it"),
    CLI_OPT("--straggler-rank", "R", "the rank that straggles (default 0 with a factor)"),
    CLI_OPT("--straggler-compute", "X", "its compute takes X times longer, [1, 1000]"),
    CLI_OPT("--straggler-link", "X", "its traffic leaving the node takes X times longer, [1, 1000]"),
    CLI_OPT("--max-events", "N", "most tasks and events simulated (default 1e7); a step certain to need "
            "more is refused before anything is allocated"),
    CLI_OPT("--max-trace-bytes", "B", "largest trace file, bytes with K, M, G (default 256M); a trace "
            "certain to be larger is refused before simulating, and no partial file is left"),
    CLI_OPT_JSON,
    CLI_OPT_CSV,
    CLI_END,
};

const cli_command cli_cmd_trace = {
    "trace", "simulate one step event by event: its Chrome trace and the simulated step next to "
    "the analytical one",
    NULL, 0, trace_opts, NULL, cmd_trace,
};

int cmd_trace(int argc, char **argv)
{
    cli_args args;
    int rc = cli_config_argv(&argc, &argv, CLI_CONFIG_PLAN);
    if (rc)
        return rc;
    rc = cli_parse_cmd(&cli_cmd_trace, argc, argv, &args);
    if (rc)
        return rc;
    if (cli_flag(&args, "--json") && cli_flag(&args, "--csv"))
        return cli_fail("trace: --json and --csv exclude each other%s", "");
    const char *model = cli_opt(&args, "--model"), *gpu = cli_opt(&args, "--gpu");
    const char *gpus = cli_opt(&args, "--gpus"), *plan = cli_opt(&args, "--plan");
    const char *outpath = NULL;
    if ((rc = cli_output_path(&args, "trace", &outpath)))
        return rc;
    long long ngpus = 0;
    (void)gpu;
    if (!gpus && !cli_opt(&args, "--cluster"))
        return cli_fail("trace: --gpus (or --cluster with a GPU count) is required (meshplan trace "
                        "--help)%s", "");
    if (gpus && (rc = cli_parse_count("gpus", gpus, 1, 1LL << 24, &ngpus)))
        return rc;

    mp_catalog *cat = NULL;
    if ((rc = cli_load_catalog(&args, &cat)))
        return rc;
    mp_model m;
    mp_cluster cl;
    mp_plan p;
    mp_estimate *e = NULL;
    mp_sim *sim = NULL;
    mp_diag d = {0};
    mp_sim_opts so;
    double max_trace;
    if ((rc = cli_load_model(cat, model, &m)) || (rc = cli_one_cluster(&args, cat, "trace", ngpus, &cl)))
        goto done;
    ngpus = cl.num_gpus;
    if ((rc = sim_options(&args, ngpus, &so, &max_trace)) ||
        (rc = cli_plan_estimate(&m, &cl, plan, ngpus, &p, &e, &d)))
        goto done;
    if ((rc = check_size(&m, &p, e, &so, outpath, (int64_t)max_trace)))
        goto done;
    mp_sim_result r;
    double t0 = now_s();
    mp_status st = mp_sim_run(&m, &cl, &p, e, &so, &sim, &r, &d);
    double wall = now_s() - t0;
    if (st != MP_OK) {
        if (st == MP_ERR_RANGE)
            mp_diag_add(&d, "trace: --max-events sets max_events (now %lld, default %lld)", (long long)so.max_events,
                        (long long)MP_SIM_DEFAULT_MAX_EVENTS);
        rc = cli_exit_for(st);
        goto done;
    }
    char pstr[512], title[800];
    mp_plan_format(&p, pstr, sizeof pstr);
    snprintf(title, sizeof title, "%s on %lld x %s: %s", m.key, ngpus, cl.gpu.key, pstr);
    long trace_bytes = -1;
    if (outpath && (rc = write_trace(sim, outpath, title, max_trace, &trace_bytes, &d)))
        goto done;
    if (cli_flag(&args, "--json") || cli_flag(&args, "--csv")) {
        /* the library's writer, which meshplan web's /api/trace answers with too */
        char *js = mp_report_trace_json(&p, e, &so, &r, wall, outpath);
        if (!js) {
            fprintf(stderr, "meshplan: out of memory writing JSON\n");
            rc = EXIT_INTERNAL;
            goto done;
        }
        if (cli_flag(&args, "--csv")) {
            rc = cli_print_csv_flat(json_loads(js, 0, NULL));
        } else {
            printf("%s\n", js);
            rc = 0;
        }
        free(js);
        if (rc)
            goto done;
    } else {
        print_text(&m, &p, e, &r, &so, wall, title, outpath, trace_bytes);
    }
    rc = 0;
done:
    cli_print_diag(&d);
    mp_sim_destroy(sim);
    free(e);
    mp_catalog_destroy(cat);
    return rc;
}
