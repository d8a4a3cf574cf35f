/* src/cli/cmd_run.c — `meshplan run`: a whole training run — energy, power, cost, failures,
 * checkpoints and goodput — for one plan on one cluster and a token budget.
 *
 * The model is the library's (mp_run_plan, include/meshplan/run.h); this file reads the options
 * into mp_run_opts and prints the result as text or JSON. Expected values (energy, cost,
 * GPU-hours, goodput_expected) come from the analytical expectation; the spread of wall-clock and
 * goodput from the Monte Carlo (--trials, --seed). */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* What the printers need besides the result. */
typedef struct {
    const mp_model *m;
    const mp_cluster *cl;
    const mp_plan *p;
    const mp_estimate *e;
    const mp_run_opts *o;
    const mp_run_result *r;
    double checkpoint_GBps; /* as given, for the text */
} run_view;

/* The number of NIC ports per node on the scale-out fabric: the catalog node of this GPU with the
 * same node size, else one per GPU. */
static double nics_per_node(const mp_catalog *cat, const mp_cluster *cl)
{
    for (size_t i = 0; i < mp_catalog_node_count(cat); i++) {
        const mp_node *n = mp_catalog_node_at(cat, i);
        if (!strcmp(n->gpu, cl->gpu.key) && n->gpus_per_node == cl->gpus_per_node && n->nics_per_node > 0)
            return (double)n->nics_per_node;
    }
    return (double)cl->gpus_per_node;
}

static void fmt_duration(char *buf, size_t cap, double s)
{
    if (s < 120)
        snprintf(buf, cap, "%.1f s", s);
    else if (s < 7200)
        snprintf(buf, cap, "%.1f min", s / 60);
    else if (s < 3 * 86400)
        snprintf(buf, cap, "%.2f h", s / 3600);
    else
        snprintf(buf, cap, "%.2f d", s / 86400);
}

static void fmt_W(char *buf, size_t cap, double w)
{
    if (w >= 1e6)
        snprintf(buf, cap, "%.3g MW", w / 1e6);
    else if (w >= 1e4)
        snprintf(buf, cap, "%.3g kW", w / 1e3);
    else
        snprintf(buf, cap, "%.0f W", w);
}

static void fmt_J(char *buf, size_t cap, double j)
{
    if (j >= 1e9)
        snprintf(buf, cap, "%.3g GJ", j / 1e9);
    else if (j >= 1e6)
        snprintf(buf, cap, "%.3g MJ", j / 1e6);
    else if (j >= 1e3)
        snprintf(buf, cap, "%.3g kJ", j / 1e3);
    else
        snprintf(buf, cap, "%.3g J", j);
}

/* ---- options ----------------------------------------------------------------------------------- */

/* --seed: an unsigned 64-bit integer. */
static int parse_seed(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long seed = strtoull(s, &end, 10);
    if (!s[0] || *end || errno || s[0] == '-')
        return cli_fail("seed = \"%s\": expected an integer in [0, 2^64)", s);
    *out = (uint64_t)seed;
    return 0;
}

/* Every numeric option into o (mp_run_opts_init's defaults stay where one is absent); *gbps gets
 * --checkpoint-GBps as given. 0 or EXIT_INPUT after printing the problem. */
static int run_read_opts(const cli_args *a, mp_run_opts *o, double *gbps)
{
    int rc;
    long long trials = o->trials, spares = -1;
    *gbps = o->checkpoint_Bps / 1e9;
    const char *v;
    if ((v = cli_opt(a, "--trials")) && (rc = cli_parse_count("trials", v, 1, 10000000, &trials)))
        return rc;
    o->trials = trials;
    if ((v = cli_opt(a, "--seed")) && (rc = parse_seed(v, &o->seed)))
        return rc;
    if ((rc = cli_parse_real("tokens", cli_opt(a, "--tokens"), 1, 1e18, &o->tokens)) ||
        (rc = cli_opt_real(a, "--price-gpu-hour", 0, 1e4, &o->cost.price_gpu_hour_usd)) ||
        (rc = cli_opt_real(a, "--capex-per-gpu", 0, 1e8, &o->cost.capex_per_gpu_usd)) ||
        (rc = cli_opt_real(a, "--amortization-years", 0.1, 100, &o->cost.amortization_years)) ||
        (rc = cli_opt_real(a, "--price-kwh", 0, 100, &o->cost.price_kwh_usd)) ||
        (rc = cli_opt_real(a, "--pue", 1, 5, &o->energy.pue)) ||
        (rc = cli_opt_real(a, "--grid-gco2-per-kwh", 0, 5000, &o->grid_gco2_per_kwh)) ||
        (rc = cli_opt_real(a, "--power-cap-W", 1, 1e5, &o->energy.power_cap_W)) ||
        (rc = cli_opt_real(a, "--host-util", 0, 1, &o->energy.host_util_frac)) ||
        (rc = cli_opt_real(a, "--checkpoint-GBps", 1e-3, 1e9, gbps)) ||
        (rc = cli_opt_real(a, "--checkpoint-interval-s", 1e-3, 1e12, &o->checkpoint_interval_s)) ||
        (rc = cli_opt_real(a, "--restart-s", 0, 1e9, &o->restart_s)) ||
        (rc = cli_opt_real(a, "--repair-h", 0, 1e6, &o->repair_h)) ||
        (rc = cli_opt_real(a, "--failure-scale", 0, 1e6, &o->failure_scale)))
        return rc;
    /* capital per GPU replaces the rental price (mp_cost_opts): both is a conflict, not a choice
     * to make silently */
    if (cli_opt(a, "--price-gpu-hour") && o->cost.capex_per_gpu_usd > 0)
        return cli_fail("run: --price-gpu-hour %s (rental) and --capex-per-gpu (capital + energy) are "
                        "two ways to pay: expected one of them", cli_opt(a, "--price-gpu-hour"));
    o->checkpoint_Bps = *gbps * 1e9;
    o->async_checkpoint = cli_flag(a, "--async-checkpoint");
    if ((v = cli_opt(a, "--spare-nodes")) && strcmp(v, "auto") &&
        (rc = cli_parse_count("spare-nodes", v, 0, 1000000, &spares)))
        return rc;
    o->spare_nodes = (int)spares;
    return 0;
}

/* --failures default|FILE into fm; *buf holds the file (the caller frees it). */
static int run_load_faults(const char *spec, mp_fault_model *fm, char **buf, mp_diag *d)
{
    if (!spec || !strcmp(spec, "default")) {
        mp_fault_model_default(fm);
        return 0;
    }
    size_t len;
    mp_status st = cli_read_file(spec, buf, &len, d);
    if (st != MP_OK) /* the reason (d) follows, printed by the caller */
        fprintf(stderr, "meshplan: failures = \"%s\": expected default or a readable failure-causes "
                        "JSON file (docs/faults.md):\n", spec);
    else
        st = mp_fault_model_from_json(*buf, len, spec, fm, d);
    return cli_exit_for(st);
}

/* ---- text -------------------------------------------------------------------------------------- */

/* The job and its step. */
static void text_job(const run_view *v)
{
    const mp_run_result *r = v->r;
    const mp_power *pw = &r->power;
    char pbuf[512];
    mp_plan_format(v->p, pbuf, sizeof pbuf);
    printf("model    %s, %.4gB parameters\n", v->m->key, (double)r->params_count / 1e9);
    printf("cluster  %lld x %s, %d per node (%.0f nodes)\n", (long long)v->cl->num_gpus,
           v->cl->gpu.key, v->cl->gpus_per_node, pw->nodes);
    printf("plan     %s\n", pbuf);
    if (!v->e->feasible)
        for (int i = 0; i < v->e->nreasons; i++)
            printf("INFEASIBLE: %s (the run below assumes it fits)\n", v->e->reasons[i]);
    printf("\nstep          %.4g s%s, %.4g tokens; %.0f steps for %.4g tokens\n", pw->step_s,
           pw->step_s > pw->step_uncapped_s * (1 + 1e-12) ? " (slowed by the power cap)" : "",
           v->e->tokens_per_step, r->steps, r->tokens);
}

/* One GPU, one node, the facility; energy per step and per million tokens. */
static void text_power(const run_view *v)
{
    const mp_power *pw = &v->r->power;
    char a[64], b[64], c2[64], d2[64];
    printf("\npower, one GPU (TDP %.0f W, limit %.0f W)%s\n", pw->tdp_W, pw->cap_W,
           pw->unseen_gpu ? " -- unseen GPU: derived from its TDP" : "");
    double total_s = 0;
    for (int i = 0; i < MP_PHASE_COUNT; i++)
        total_s += fabs(pw->phase_s[i]);
    for (int i = 0; i < MP_PHASE_COUNT; i++) {
        /* a phase that is the step minus the others keeps the subtraction's rounding (2.2e-16
         * s): below 1e-9 of the step it is shown as 0 (--json keeps the exact value) */
        double s = fabs(pw->phase_s[i]) < 1e-9 * total_s ? 0.0 : pw->phase_s[i];
        printf("  %-7s %9.4g s of the step at %4.0f W\n", mp_phase_name((mp_phase)i), s,
               pw->phase_W[i]);
    }
    printf("  average %.0f W, peak %.0f W; idle %.0f W, active idle %.0f W\n", pw->gpu_avg_W,
           pw->gpu_peak_W, pw->gpu_idle_W, pw->gpu_wait_W);
    printf("  source: %s\n", pw->gpu_power_source);
    fmt_W(a, sizeof a, pw->node_avg_W);
    fmt_W(b, sizeof b, pw->node_peak_W);
    fmt_W(c2, sizeof c2, pw->node_overhead_W);
    fmt_W(d2, sizeof d2, pw->node_overhead_max_W);
    printf("power, one node: average %s, peak %s (host %s of %s at full load)", a, b, c2, d2);
    fmt_W(a, sizeof a, pw->node_idle_W);
    printf(", idle %s\n", a);
    fmt_W(a, sizeof a, pw->facility_avg_W);
    fmt_W(b, sizeof b, pw->facility_peak_W);
    fmt_W(c2, sizeof c2, pw->switch_W);
    printf("power, facility: average %s, peak %s (PUE %.2f; scale-out switches %s, %.2g ports per "
           "GPU)\n", a, b, v->o->energy.pue, c2, pw->switch_ports_per_gpu);
    fmt_J(a, sizeof a, pw->energy_J_per_step_facility);
    fmt_J(b, sizeof b, pw->energy_J_per_step_gpu);
    fmt_J(c2, sizeof c2, pw->energy_J_per_step_node);
    printf("energy per step: %s at the facility (GPUs %s, nodes %s)\n", a, b, c2);
    fmt_J(a, sizeof a, pw->energy_J_per_mtoken_facility);
    fmt_J(b, sizeof b, pw->energy_J_per_mtoken_gpu);
    fmt_J(c2, sizeof c2, pw->energy_J_per_mtoken_node);
    printf("energy per million tokens: %s (GPUs %s, nodes %s)\n", a, b, c2);
}

/* Failures, spares, the checkpoint and its interval, the restart. */
static void text_failures(const run_view *v)
{
    const mp_run_result *r = v->r;
    const mp_checkpoint *ck = &r->checkpoint;
    const double per_day = 86400.0;
    char a[64], b[64], c2[64];
    printf("\nfailures: %.3g unexpected interruptions per day", r->rates.total_per_s * per_day);
    if (isfinite(r->mtbf_s)) {
        fmt_duration(a, sizeof a, r->mtbf_s);
        printf(" (one every %s)", a);
    }
    printf("%s\n  by component:", v->o->failure_scale != 1.0 ? " (rates scaled by --failure-scale)" : "");
    for (int i = 0; i < MP_FC_COUNT; i++)
        printf(" %s %.3g", mp_fault_component_name((mp_fault_component)i),
               r->rates.by_component_per_s[i] * per_day);
    printf(" per day\n  %.3g per day take a node out; spare nodes %d%s, repair %.3g h\n",
           r->rates.spare_per_s * per_day, r->spare_nodes,
           r->spare_auto ? " (auto: <1% chance none is left)" : "", v->o->repair_h);
    printf("  source: %s\n", r->faults.source);
    fmt_duration(a, sizeof a, ck->save_s);
    fmt_duration(b, sizeof b, ck->block_s);
    printf("checkpoint %.4g TB (%.4g GB per GPU), %s checkpoint: save %s at %.4g GB/s, stall %s\n",
           ck->bytes / 1e12, ck->bytes_per_gpu / 1e9,
           v->o->async_checkpoint ? "asynchronous" : "synchronous", a, v->checkpoint_GBps, b);
    fmt_duration(a, sizeof a, r->interval_s);
    fmt_duration(b, sizeof b, r->interval_daly_s);
    fmt_duration(c2, sizeof c2, r->interval_young_s);
    printf("  interval %s%s; optimal %s (Daly 2006; Young 1974: %s)\n", a,
           r->interval_given ? " (given)"
           : r->interval_s < r->interval_daly_s ? " (the whole run: shorter than the optimal one)"
                                                 : " (the optimal one)",
           b, c2);
    fmt_duration(a, sizeof a, r->process.down_s);
    printf("restart %s per interruption (restart %.0f s + load %.3g s%s)\n", a, v->o->restart_s,
           ck->load_s, v->o->async_checkpoint ? " + async lag" : "");
}

/* Wall-clock, goodput, where the time went, totals and cost. */
static void text_outcome(const run_view *v)
{
    const mp_run_result *r = v->r;
    const mp_run_expect *ex = &r->expect;
    const mp_run_mc *mc = &r->mc;
    const mp_cost_opts *co = &v->o->cost;
    char a[64], b[64], c2[64];
    fmt_duration(a, sizeof a, r->work_s);
    fmt_duration(b, sizeof b, ex->wall_s);
    printf("\nrun: %s of work; expected wall-clock %s, goodput %.2f%%, %.4g interruptions\n", a, b,
           100 * ex->goodput, ex->failures);
    fmt_duration(a, sizeof a, mc->wall_mean_s);
    fmt_duration(b, sizeof b, mc->wall_p10_s);
    fmt_duration(c2, sizeof c2, mc->wall_p90_s);
    printf("  Monte Carlo, %lld trials (seed %llu): wall-clock mean %s, p10 %s, p90 %s; goodput "
           "mean %.2f%% (p10 %.2f%%, p90 %.2f%%)\n", (long long)r->trials,
           (unsigned long long)v->o->seed, a, b, c2, 100 * mc->goodput_mean,
           100 * mc->goodput_p10, 100 * mc->goodput_p90);
    printf("  lost time: checkpoints %.2f%%, redone work %.2f%%, restarts %.2f%%, waiting for "
           "spares %.2f%%\n", 100 * ex->ckpt_s / ex->wall_s, 100 * ex->lost_s / ex->wall_s,
           100 * ex->down_s / ex->wall_s, 100 * ex->wait_s / ex->wall_s);
    /* readable numbers (meshplan/format.h): "5.773 GWh", "14.47 M$"; --json keeps them exact */
    char wh[32], gh[32], bh[32], usd[32], cap[32], en[32];
    mp_format_si(r->energy.MWh * 1e6, "Wh", 4, wh, sizeof wh);
    mp_format_si(r->gpu_hours, "GPU-hours", 4, gh, sizeof gh);
    mp_format_si(r->cost.gpu_hours, "", 4, bh, sizeof bh); /* "5.788 M" */
    mp_format_si(r->cost.usd, "$", 4, usd, sizeof usd);
    mp_format_si(r->cost.capital_usd, "$", 4, cap, sizeof cap);
    mp_format_si(r->cost.energy_usd, "$", 4, en, sizeof en);
    printf("\ntotals: %s, %.4g tCO2e (%.0f g/kWh), %s (%s billed with spares)\n", wh, r->co2e_t,
           v->o->grid_gco2_per_kwh, gh, bh);
    if (r->cost.capex_mode)
        printf("cost: %s (capital %s over %.3g years + energy %s at $%.3g/kWh), $%.4g per "
               "million tokens\n", usd, cap, co->amortization_years, en, co->price_kwh_usd,
               r->cost.usd_per_mtoken);
    else
        printf("cost: %s at $%.3g per GPU-hour, $%.4g per million tokens\n", usd,
               co->price_gpu_hour_usd, r->cost.usd_per_mtoken);
}

/* ---- the command ------------------------------------------------------------------------------- */

/* The defaults named here are mp_run_opts_init's, mp_energy_opts_init's and mp_cost_opts_init's
 * (include/meshplan/run.h, energy.h give their sources). */
static const cli_option run_opts[] = {
    CLI_REQ("--model", "M", "the model: " CLI_MODEL_HELP),
    CLI_REQ("--gpu", "G", "the GPU, a catalog key (meshplan catalog gpus)"),
    CLI_REQ("--gpus", "N", "GPUs in the job"),
    CLI_REQ("--plan", "PLAN", "the parallel plan, \"tp=8,pp=4,...\" (plan keys below)"),
    CLI_REQ("--tokens", "T", "training tokens, e.g. 15.6e12"),
    CLI_OPT_GPUS_PER_NODE,
    CLI_OPT_SCALE_OUT,
    CLI_OPT("--config", "FILE",
            "a launch config (Megatron-LM script, DeepSpeed JSON, torchtitan TOML, NeMo or "
            "fine-tuning YAML, config.json): the options not given come from it (docs/import.md)"),
    CLI_OPT_CATALOG,
    CLI_OPT_CALIBRATION,
    CLI_OPT("--price-gpu-hour", "USD", "rental price per GPU-hour (default 2.5)"),
    CLI_OPT("--capex-per-gpu", "USD", "capital per GPU instead of rental: capital + energy"),
    CLI_OPT("--amortization-years", "Y", "with --capex-per-gpu: years the capital is spread over "
            "(default 4)"),
    CLI_OPT("--price-kwh", "USD", "with --capex-per-gpu: electricity per kWh (default 0.08)"),
    CLI_OPT("--pue", "F", "facility power / IT power, [1, 5] (default 1.2)"),
    CLI_OPT("--grid-gco2-per-kwh", "G", "grid carbon intensity, gCO2e/kWh (default 400)"),
    CLI_OPT("--power-cap-W", "W", "per-GPU power limit (default: the GPU's TDP)"),
    CLI_OPT("--host-util", "F", "host activity during training, [0, 1] (default 0.2)"),
    CLI_OPT("--checkpoint-GBps", "R", "aggregate storage bandwidth, GB/s (default 500)"),
    CLI_FLAG("--async-checkpoint", "snapshot to host memory and write in the background"),
    CLI_OPT("--checkpoint-interval-s", "S", "seconds between checkpoints (default: the optimum, "
            "Daly 2006)"),
    CLI_OPT("--restart-s", "S", "restart after an interruption, s, before the load (default 600)"),
    CLI_OPT("--repair-h", "H", "hours until a failed node is back (default 24)"),
    CLI_OPT("--spare-nodes", "auto|N", "spare nodes held (default auto: <1% chance none is left)"),
    CLI_OPT("--failures", "default|FILE", "failure causes and rates (default: Llama 3's, "
            "docs/faults.md)"),
    CLI_OPT("--failure-scale", "X", "every failure rate times X (default 1)"),
    CLI_OPT("--trials", "N", "Monte Carlo runs, [1, 1e7] (default 1000)"),
    CLI_OPT("--seed", "S", "the Monte Carlo's seed (default 1)"),
    CLI_OPT_JSON,
    CLI_FLAG("--csv", "print the --json object as key,value rows"),
    CLI_END,
};

const cli_command cli_cmd_run = {
    "run", "a whole training run: energy, power, cost, failures, checkpoints, goodput, "
    "time-to-train",
    NULL, 0, run_opts, NULL, cmd_run,
};

int cmd_run(int argc, char **argv)
{
    cli_args args;
    int rc = cli_config_argv(&argc, &argv, CLI_CONFIG_PLAN);
    if (rc)
        return rc;
    rc = cli_parse_cmd(&cli_cmd_run, argc, argv, &args);
    if (rc)
        return rc;
    if (cli_flag(&args, "--json") && cli_flag(&args, "--csv"))
        return cli_fail("run: --json and --csv exclude each other%s", "");

    long long ngpus = 0, gpn = 0;
    mp_run_opts o;
    mp_run_opts_init(&o);
    double gbps;
    const char *gpn_s = cli_opt(&args, "--gpus-per-node");
    if ((rc = cli_parse_count("gpus", cli_opt(&args, "--gpus"), 1, 1LL << 24, &ngpus)) ||
        (gpn_s && (rc = cli_parse_count("gpus-per-node", gpn_s, 1, 1 << 20, &gpn))) ||
        (rc = run_read_opts(&args, &o, &gbps)))
        return rc;

    mp_catalog *cat = NULL;
    if ((rc = cli_load_catalog(&args, &cat)))
        return rc;
    mp_model m;
    mp_cluster cl;
    mp_plan p;
    mp_estimate *e = NULL;
    mp_diag d = {0};
    mp_fault_model fm;
    char *fbuf = NULL;
    mp_run_result *r = malloc(sizeof *r);
    if (!r) {
        rc = EXIT_INTERNAL;
        goto done;
    }
    if ((rc = cli_job_estimate(cat, cli_opt(&args, "--model"), cli_opt(&args, "--gpu"), ngpus, gpn,
                               cli_opt(&args, "--scale-out"), cli_opt(&args, "--plan"), &m, &cl,
                               &p, &e, &d)) ||
        (rc = run_load_faults(cli_opt(&args, "--failures"), &fm, &fbuf, &d)))
        goto done;
    o.faults = &fm;
    o.energy.scaleout_ports_per_node = nics_per_node(cat, &cl);
    if ((rc = cli_exit_for(mp_run_plan(&m, &cl, &p, e, &o, r, &d))))
        goto done;
    if (r->trials < o.trials)
        fprintf(stderr, "meshplan: note: %lld trials of %.3g interruptions each would take too "
                        "long; simulating %lld trials\n", (long long)o.trials, r->expect.failures,
                (long long)r->trials);
    const run_view v = {&m, &cl, &p, e, &o, r, gbps};
    if (cli_flag(&args, "--json") || cli_flag(&args, "--csv")) {
        char *js = mp_report_run_json(&m, &cl, &p, e, &o, r);
        if (js && cli_flag(&args, "--csv"))
            rc = cli_print_csv_flat(json_loads(js, 0, NULL)); /* key,value rows of the same object */
        else if (js)
            printf("%s\n", js);
        else
            fprintf(stderr, "meshplan: out of memory writing JSON\n");
        if (!cli_flag(&args, "--csv"))
            rc = js ? 0 : EXIT_INTERNAL;
        free(js);
    } else {
        text_job(&v);
        text_power(&v);
        text_failures(&v);
        text_outcome(&v);
    }
done:
    cli_print_diag(&d);
    free(r);
    free(fbuf);
    free(e);
    mp_catalog_destroy(cat);
    return rc;
}
