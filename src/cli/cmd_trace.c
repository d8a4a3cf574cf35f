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

static json_t *time_json(const mp_time *t)
{
    json_t *o = json_object();
    json_object_set_new(o, "compute", json_real(t->compute));
    json_object_set_new(o, "recompute", json_real(t->recompute));
    json_object_set_new(o, "tp_comm", json_real(t->tp_comm));
    json_object_set_new(o, "cp_comm", json_real(t->cp_comm));
    json_object_set_new(o, "ep_comm", json_real(t->ep_comm));
    json_object_set_new(o, "pp_comm", json_real(t->pp_comm));
    json_object_set_new(o, "pp_bubble", json_real(t->pp_bubble));
    json_object_set_new(o, "dp_comm_exposed", json_real(t->dp_comm_exposed));
    json_object_set_new(o, "optimizer", json_real(t->optimizer));
    json_object_set_new(o, "dp_comm_total", json_real(t->dp_comm_total));
    return o;
}

static void row(const char *what, double sim, double ana)
{
    printf("  %-30s %12.4f %12.4f\n", what, sim, ana);
}

static const cli_option trace_opts[] = {
    CLI_REQ("--model", "M", "the model: " CLI_MODEL_HELP),
    CLI_REQ("--gpu", "G", "the GPU, a catalog key (meshplan catalog gpus)"),
    CLI_REQ("--gpus", "N", "GPUs in the job"),
    CLI_REQ("--plan", "PLAN", "the parallel plan, \"tp=8,pp=4,...\" (plan keys below)"),
    CLI_OPT_GPUS_PER_NODE,
    CLI_OPT_SCALE_OUT,
    CLI_OPT("--config", "FILE",
            "a launch config (Megatron-LM script, DeepSpeed JSON, torchtitan TOML, NeMo or "
            "fine-tuning YAML, config.json): the options not given come from it (docs/import.md)"),
    CLI_OPT_CATALOG,
    CLI_OPT("-o", "FILE", "write the step's Chrome trace (Perfetto, chrome://tracing) to FILE"),
    CLI_OPT("--output", "FILE", "the same as -o"),
    CLI_OPT("--contention", "F", "compute slowdown while communicating, [0, 10] (default 0.189)"),
    CLI_FLAG("--tp-overlap", "a layer's TP runs beside its compute (async TP)"),
    CLI_FLAG("--p2p-overlap", "compute goes on while pipeline sends are in flight"),
    CLI_FLAG("--analytical-rules", "the estimator's assumptions, for comparing with it"),
    CLI_OPT("--straggler-rank", "R", "the rank that straggles (default 0 with a factor)"),
    CLI_OPT("--straggler-compute", "X", "its compute takes X times longer, [1, 1000]"),
    CLI_OPT("--straggler-link", "X", "its traffic leaving the node takes X times longer, [1, 1000]"),
    CLI_OPT("--max-events", "N", "most events simulated (default 1e7)"),
    CLI_OPT_JSON,
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
    const char *model = cli_opt(&args, "--model"), *gpu = cli_opt(&args, "--gpu");
    const char *gpus = cli_opt(&args, "--gpus"), *plan = cli_opt(&args, "--plan");
    const char *outpath = cli_opt(&args, "-o") ? cli_opt(&args, "-o") : cli_opt(&args, "--output");
    long long ngpus = 0, gpn = 0;
    if ((rc = cli_parse_count("gpus", gpus, 1, 1LL << 24, &ngpus)))
        return rc;
    if (cli_opt(&args, "--gpus-per-node") &&
        (rc = cli_parse_count("gpus-per-node", cli_opt(&args, "--gpus-per-node"), 1, 1 << 20, &gpn)))
        return rc;
    mp_sim_opts so;
    mp_sim_opts_init(&so);
    so.tp_overlap = cli_flag(&args, "--tp-overlap");
    so.p2p_overlap = cli_flag(&args, "--p2p-overlap");
    so.analytical_rules = cli_flag(&args, "--analytical-rules");
    if (so.analytical_rules)
        so.contention_frac = 0.0; /* the estimator's default interference; --contention overrides */
    const char *v;
    if ((v = cli_opt(&args, "--contention")) && (rc = cli_parse_real("contention", v, 0.0, 10.0, &so.contention_frac)))
        return rc;
    if ((v = cli_opt(&args, "--straggler-compute")) &&
        (rc = cli_parse_real("straggler-compute", v, 1.0, 1000.0, &so.straggler_compute_factor)))
        return rc;
    if ((v = cli_opt(&args, "--straggler-link")) &&
        (rc = cli_parse_real("straggler-link", v, 1.0, 1000.0, &so.straggler_link_factor)))
        return rc;
    long long ll;
    if ((v = cli_opt(&args, "--straggler-rank"))) {
        if ((rc = cli_parse_count("straggler-rank", v, 0, ngpus - 1, &ll)))
            return rc;
        so.straggler_rank = ll;
    } else if (so.straggler_compute_factor > 1.0 || so.straggler_link_factor > 1.0) {
        so.straggler_rank = 0; /* a factor without a rank: rank 0 */
    }
    if ((v = cli_opt(&args, "--max-events"))) {
        if ((rc = cli_parse_count("max-events", v, 1, 1LL << 40, &ll)))
            return rc;
        so.max_events = ll;
    }

    mp_catalog *cat = NULL;
    if ((rc = cli_load_catalog(&args, &cat)))
        return rc;
    mp_model m;
    mp_cluster cl;
    mp_plan p;
    mp_estimate *e = NULL;
    mp_sim *sim = NULL;
    mp_diag d = {0};
    if ((rc = cli_job_estimate(cat, model, gpu, ngpus, gpn, cli_opt(&args, "--scale-out"), plan, &m, &cl, &p,
                               &e, &d)))
        goto done;
    mp_sim_result r;
    double t0 = now_s();
    mp_status st = mp_sim_run(&m, &cl, &p, e, &so, &sim, &r, &d);
    double wall = now_s() - t0;
    if (st != MP_OK) {
        rc = cli_exit_for(st);
        goto done;
    }
    char pstr[512], title[800];
    mp_plan_format(&p, pstr, sizeof pstr);
    snprintf(title, sizeof title, "%s on %lld x %s: %s", m.key, ngpus, cl.gpu.key, pstr);
    long trace_bytes = -1;
    if (outpath) {
        FILE *f = fopen(outpath, "w");
        if (!f) {
            fprintf(stderr, "meshplan: -o %s: %s\n", outpath, strerror(errno));
            rc = EXIT_INPUT;
            goto done;
        }
        st = mp_sim_write_trace(sim, f, title, &d);
        trace_bytes = ftell(f);
        if (fclose(f) != 0 && st == MP_OK) {
            mp_diag_add(&d, "-o %s: %s", outpath, strerror(errno));
            st = MP_ERR_IO;
        }
        if (st != MP_OK) {
            rc = EXIT_INTERNAL;
            goto done;
        }
    }
    const mp_time *a = &e->time, *s = &r.time;
    double diff_pct = 100.0 * (r.step_s - e->step_s) / e->step_s;
    if (cli_flag(&args, "--json")) {
        json_t *o = json_object();
        json_t *js = json_object();
        json_object_set_new(js, "step_s", json_real(r.step_s));
        json_object_set_new(js, "time_s", time_json(s));
        json_object_set_new(js, "bubble_frac", json_real(r.bubble_frac));
        json_object_set_new(js, "critical_stage", json_integer(r.critical_stage));
        json_object_set_new(js, "tasks", json_integer(r.tasks));
        json_object_set_new(js, "events", json_integer(r.events));
        json_object_set_new(js, "wall_s", json_real(wall));
        json_object_set_new(o, "simulated", js);
        json_t *ja = json_object();
        json_object_set_new(ja, "step_s", json_real(e->step_s));
        json_object_set_new(ja, "time_s", time_json(a));
        json_object_set_new(o, "analytical", ja);
        json_object_set_new(o, "difference_pct", json_real(diff_pct));
        json_t *jo = json_object();
        json_object_set_new(jo, "contention_frac", json_real(so.contention_frac));
        json_object_set_new(jo, "analytical_rules", json_boolean(so.analytical_rules));
        json_object_set_new(jo, "tp_overlap", json_boolean(so.tp_overlap));
        json_object_set_new(jo, "p2p_overlap", json_boolean(so.p2p_overlap));
        json_object_set_new(jo, "straggler_rank", json_integer(so.straggler_rank));
        json_object_set_new(jo, "straggler_stage", json_integer(r.straggler_stage));
        json_object_set_new(jo, "straggler_compute_factor", json_real(so.straggler_compute_factor));
        json_object_set_new(jo, "straggler_link_factor", json_real(so.straggler_link_factor));
        json_object_set_new(o, "options", jo);
        json_object_set_new(o, "plan", json_string(pstr));
        json_object_set_new(o, "trace", outpath ? json_string(outpath) : json_null());
        if ((rc = cli_print_json(o, JSON_INDENT(2) | JSON_REAL_PRECISION(10))))
            goto done;
    } else {
        printf("trace    %s\n", title);
        printf("         %s schedule, %d stages x %lld ranks, %d micro-batches; simulated one rank per "
               "stage:\n         %lld tasks, %lld events in %.3f s\n",
               mp_schedule_name(p.schedule), r.nstages, (long long)(p.tp * p.cp * p.dp), e->microbatches,
               (long long)r.tasks, (long long)r.events, wall);
        if (outpath)
            printf("         wrote %s (%.1f MB): open it in https://ui.perfetto.dev or chrome://tracing\n",
                   outpath, trace_bytes / 1e6);
        printf("\nstep time parts (s)              %12s %12s\n", "simulated", "analytical");
        row("compute", s->compute, a->compute);
        row("recompute", s->recompute, a->recompute);
        row("TP communication", s->tp_comm, a->tp_comm);
        row("CP communication", s->cp_comm, a->cp_comm);
        row("pipeline send/recv", s->pp_comm, a->pp_comm);
        row("pipeline bubble", s->pp_bubble, a->pp_bubble);
        row("exposed DP/ZeRO communication", s->dp_comm_exposed, a->dp_comm_exposed);
        row("optimizer step", s->optimizer, a->optimizer);
        row("step", r.step_s, e->step_s);
        row("DP/ZeRO communication, all", s->dp_comm_total, a->dp_comm_total);
        printf("\nsimulated step %.4f s, analytical %.4f s (%+.1f%%); bubble %.1f%% of the step; "
               "critical stage %d\n",
               r.step_s, e->step_s, diff_pct, 100.0 * r.bubble_frac, r.critical_stage);
        printf("contention: compute x%.3f while communication runs on the GPU%s\n", 1.0 + so.contention_frac,
               so.contention_frac == MP_SIM_DEFAULT_CONTENTION_FRAC
                   ? " (default: mean measured slowdown, arXiv:2507.03114)" : "");
        if (r.straggler_stage >= 0)
            printf("straggler: rank %lld (stage %d), compute x%.2f, off-node links x%.2f\n",
                   (long long)so.straggler_rank, r.straggler_stage, so.straggler_compute_factor,
                   so.straggler_link_factor);
        if (so.analytical_rules)
            printf("analytical rules: every stage runs as the slowest; DP reduction may start with the "
                   "backward pass that completes the gradients\n");
        if (mp_model_is_moe(&m) || m.mtp_layers > 0)
            printf("not simulated (docs/sim.md): %s%s%s; the analytical column has them\n",
                   mp_model_is_moe(&m) ? "MoE layers run as dense layers (no experts, routing or EP all-to-all)" : "",
                   mp_model_is_moe(&m) && m.mtp_layers > 0 ? ", and " : "",
                   m.mtp_layers > 0 ? "the multi-token-prediction modules are left out" : "");
    }
    rc = 0;
done:
    cli_print_diag(&d);
    mp_sim_destroy(sim);
    free(e);
    mp_catalog_destroy(cat);
    return rc;
}
