/* src/cli/cmd_run.c — `meshplan run`: a whole training run — energy, power, cost, failures,
 * checkpoints and goodput — for one plan on one cluster and a token budget.
 *
 * Expected values (energy, cost, GPU-hours, goodput_expected) come from the analytical
 * expectation; the spread of wall-clock and goodput from the Monte Carlo (--trials, --seed). */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Device-to-host copy rate of an asynchronous checkpoint's snapshot, per GPU. ASSUMED: pinned
 * copies reach about 25 GB/s, under half of a PCIe 5.0 x16 link (64 GB/s per direction). */
#define D2H_BPS 25e9
/* Target chance that a hardware failure finds no healthy spare (--spare-nodes auto). */
#define SPARE_TARGET 0.01
/* Most failures simulated in one command (all trials together). */
#define SIM_MAX_FAILURES 2e8


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

/* JSON numbers: non-finite values (never expected) become null so the output always parses. */
static json_t *num(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

int cmd_run(int argc, char **argv)
{
    static const char *const opts[] = {
        "--model", "--config", "--gpu", "--gpus", "--gpus-per-node", "--scale-out", "--plan", "--catalog",
        "--tokens", "--price-gpu-hour", "--capex-per-gpu", "--amortization-years", "--price-kwh",
        "--pue", "--grid-gco2-per-kwh", "--power-cap-W", "--host-util", "--checkpoint-GBps",
        "--checkpoint-interval-s", "--restart-s", "--repair-h", "--spare-nodes", "--failures",
        "--failure-scale", "--trials", "--seed", NULL};
    static const char *const flags[] = {"--json", "--async-checkpoint", NULL};
    cli_args args;
    int rc = cli_parse(argc, argv, opts, flags, &args);
    if (rc)
        return rc;
    if (args.npositional)
        return cli_fail("run: unexpected argument \"%s\"", args.positional[0]);
    const char *model = cli_opt(&args, "--model"), *gpu = cli_opt(&args, "--gpu");
    const char *gpus = cli_opt(&args, "--gpus"), *plan = cli_opt(&args, "--plan");
    if ((rc = cli_config_apply(&args, &model, &gpu, &gpus, &plan)))
        return rc;
    const char *tokens_s = cli_opt(&args, "--tokens");
    const int json = cli_flag(&args, "--json"), async = cli_flag(&args, "--async-checkpoint");
    if (!model) return cli_fail("run: --model is required%s", "");
    if (!gpu) return cli_fail("run: --gpu is required%s", "");
    if (!gpus) return cli_fail("run: --gpus is required%s", "");
    if (!plan) return cli_fail("run: --plan is required%s", "");
    if (!tokens_s) return cli_fail("run: --tokens is required (training tokens, e.g. 15.6e12)%s", "");

    /* --- options ---------------------------------------------------------------------------- */
    long long ngpus = 0, gpn = 0, trials = 1000;
    double tokens = 0, gco2 = 400.0, gbps = 500.0, interval = 0.0, restart_s = 600.0;
    double repair_h = 24.0, fscale = 1.0;
    /* Grid intensity 400 gCO2e/kWh: between the US average (~370 g, EIA 2023) and the world
     * average (~460 g, IEA 2023). Restart 600 s (detect, reschedule, initialise; ASSUMED: with
     * Llama 3's interruption rate it gives the >90% effective training time the paper reports).
     * Repair 24 h: a failed node is back (fixed or replaced) a day later (ASSUMED). */
    mp_energy_opts eo;
    mp_energy_opts_init(&eo);
    mp_cost_opts co;
    mp_cost_opts_init(&co);
    if ((rc = cli_parse_count("gpus", gpus, 1, 1LL << 24, &ngpus)))
        return rc;
    const char *gpn_s = cli_opt(&args, "--gpus-per-node");
    if (gpn_s && (rc = cli_parse_count("gpus-per-node", gpn_s, 1, 1 << 20, &gpn)))
        return rc;
    const char *trials_s = cli_opt(&args, "--trials");
    if (trials_s && (rc = cli_parse_count("trials", trials_s, 1, 10000000, &trials)))
        return rc;
    unsigned long long seed = 1;
    const char *seed_s = cli_opt(&args, "--seed");
    if (seed_s) {
        char *end;
        errno = 0;
        seed = strtoull(seed_s, &end, 10);
        if (!seed_s[0] || *end || errno || seed_s[0] == '-')
            return cli_fail("seed = \"%s\": expected an integer in [0, 2^64)", seed_s);
    }
    if ((rc = cli_parse_real("tokens", tokens_s, 1, 1e18, &tokens)) ||
        (rc = cli_opt_real(&args, "--price-gpu-hour", 0, 1e4, &co.price_gpu_hour_usd)) ||
        (rc = cli_opt_real(&args, "--capex-per-gpu", 0, 1e8, &co.capex_per_gpu_usd)) ||
        (rc = cli_opt_real(&args, "--amortization-years", 0.1, 100, &co.amortization_years)) ||
        (rc = cli_opt_real(&args, "--price-kwh", 0, 100, &co.price_kwh_usd)) ||
        (rc = cli_opt_real(&args, "--pue", 1, 5, &eo.pue)) ||
        (rc = cli_opt_real(&args, "--grid-gco2-per-kwh", 0, 5000, &gco2)) ||
        (rc = cli_opt_real(&args, "--power-cap-W", 1, 1e5, &eo.power_cap_W)) ||
        (rc = cli_opt_real(&args, "--host-util", 0, 1, &eo.host_util_frac)) ||
        (rc = cli_opt_real(&args, "--checkpoint-GBps", 1e-3, 1e9, &gbps)) ||
        (rc = cli_opt_real(&args, "--checkpoint-interval-s", 1e-3, 1e12, &interval)) ||
        (rc = cli_opt_real(&args, "--restart-s", 0, 1e9, &restart_s)) ||
        (rc = cli_opt_real(&args, "--repair-h", 0, 1e6, &repair_h)) ||
        (rc = cli_opt_real(&args, "--failure-scale", 0, 1e6, &fscale)))
        return rc;
    long long spares_opt = -1; /* auto */
    const char *spares_s = cli_opt(&args, "--spare-nodes");
    if (spares_s && strcmp(spares_s, "auto") &&
        (rc = cli_parse_count("spare-nodes", spares_s, 0, 1000000, &spares_opt)))
        return rc;

    /* --- the job ---------------------------------------------------------------------------- */
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
    json_t *root = NULL;
    if ((rc = cli_job_estimate(cat, model, gpu, ngpus, gpn, cli_opt(&args, "--scale-out"), plan, &m, &cl, &p,
                               &e, &d)))
        goto done;
    mp_status st;
    const double nics = nics_per_node(cat, &cl);
    eo.scaleout_ports_per_node = nics;
    mp_power pw;
    if ((st = mp_energy_step(&cl, &p, e, NULL, &eo, &pw, &d)) != MP_OK) {
        rc = cli_exit_for(st);
        goto done;
    }

    /* --- failures ------------------------------------------------------------------------------ */
    const char *ff = cli_opt(&args, "--failures");
    if (!ff || !strcmp(ff, "default")) {
        mp_fault_model_default(&fm);
    } else {
        size_t flen;
        st = cli_read_file(ff, &fbuf, &flen, &d);
        if (st == MP_OK)
            st = mp_fault_model_from_json(fbuf, flen, ff, &fm, &d);
        if (st != MP_OK) {
            rc = cli_exit_for(st);
            goto done;
        }
    }
    const mp_fault_fleet fleet = {(double)ngpus, pw.nodes, pw.nodes * nics};
    mp_fault_rates fr;
    mp_fault_rates_for(&fm, &fleet, fscale, &fr);

    /* --- checkpoint and the run ---------------------------------------------------------------- */
    mp_param_count pc;
    mp_model_params(&m, (int)p.tp, &pc);
    mp_checkpoint ck;
    /* 14 bytes per parameter: 16-bit weights + fp32 master weights + Adam m and v. */
    if ((st = mp_checkpoint_plan((double)pc.total, 14.0, (double)ngpus, 0.0, gbps * 1e9, D2H_BPS,
                                 async, &ck, &d)) != MP_OK) {
        rc = cli_exit_for(st);
        goto done;
    }
    const double steps = ceil(tokens / e->tokens_per_step);
    const double work_s = steps * pw.step_s;
    const double mtbf_s = fr.total_per_s > 0 ? 1.0 / fr.total_per_s : INFINITY;
    const double young = isfinite(mtbf_s) && ck.block_s > 0 ? mp_ckpt_interval_young(ck.block_s, mtbf_s) : work_s;
    const double daly = isfinite(mtbf_s) && ck.block_s > 0 ? mp_ckpt_interval_daly(ck.block_s, mtbf_s) : work_s;
    const double exact = isfinite(mtbf_s) && ck.block_s > 0 ? mp_ckpt_interval_exact(ck.block_s, mtbf_s) : work_s;
    const int interval_given = interval > 0;
    double tau = interval_given ? interval : fmin(daly, work_s);
    /* Asynchronous: the next snapshot cannot start before the previous write ended. */
    if (async && tau + ck.block_s < ck.save_s)
        tau = ck.save_s - ck.block_s;
    const int spare_auto = spares_opt < 0;
    const int spares = spare_auto ? mp_spares_for(fr.spare_per_s, repair_h * 3600.0, SPARE_TARGET)
                                  : (int)spares_opt;
    mp_run_params rp = {
        .work_s = work_s,
        .interval_s = tau,
        .ckpt_s = ck.block_s,
        .down_s = restart_s + ck.load_s + ck.lag_s,
        .fail_per_s = fr.total_per_s,
        .spare_frac = fr.total_per_s > 0 ? fr.spare_per_s / fr.total_per_s : 0.0,
        .repair_s = repair_h * 3600.0,
        .spare_nodes = spares,
    };
    mp_run_expect ex;
    mp_run_mc mc;
    if ((st = mp_run_expected(&rp, &ex, &d)) != MP_OK) {
        rc = cli_exit_for(st);
        goto done;
    }
    /* The simulation costs ~1e-7 s per failure: keep it under ~20 s. */
    if (ex.failures > SIM_MAX_FAILURES) {
        fprintf(stderr, "meshplan: the run would see %.3g interruptions (checkpoint interval %g s, "
                        "one failure every %g s): too many to simulate; give a shorter "
                        "--checkpoint-interval-s or fewer --tokens\n", ex.failures, tau, mtbf_s);
        rc = EXIT_INPUT;
        goto done;
    }
    if (ex.failures * (double)trials > SIM_MAX_FAILURES) {
        long long t2 = (long long)(SIM_MAX_FAILURES / fmax(ex.failures, 1.0));
        fprintf(stderr, "meshplan: note: %lld trials of %.3g interruptions each would take too "
                        "long; simulating %lld trials\n", trials, ex.failures, t2 > 0 ? t2 : 1);
        trials = t2 > 0 ? t2 : 1;
    }
    if ((st = mp_run_simulate(&rp, (int)trials, (uint64_t)seed, &mc, &d)) != MP_OK) {
        rc = cli_exit_for(st);
        goto done;
    }
    mp_run_energy re;
    mp_energy_run(&pw, eo.pue, work_s + ex.lost_s, ex.ckpt_s + ex.down_s + ex.wait_s, ex.wall_s,
                  spares, &re);
    const double gpus_billed = (double)ngpus + spares * (double)cl.gpus_per_node;
    mp_cost cost;
    if ((st = mp_cost_compute(&co, gpus_billed, ex.wall_s, re.total_J, steps * e->tokens_per_step,
                              &cost, &d)) != MP_OK) {
        rc = cli_exit_for(st);
        goto done;
    }
    const double co2e_t = re.MWh * gco2 / 1000.0; /* MWh x 1000 kWh x g/kWh / 1e6 g/t */
    const double gpu_hours = (double)ngpus * ex.wall_s / 3600.0;
    const double per_day = 86400.0;

    /* --- output -------------------------------------------------------------------------------- */
    if (json) {
        root = json_object();
        char pbuf[512];
        mp_plan_format(&p, pbuf, sizeof pbuf);
        json_object_set_new(root, "model", json_string(m.key));
        json_object_set_new(root, "gpu", json_string(cl.gpu.key));
        json_object_set_new(root, "num_gpus", json_integer(ngpus));
        json_object_set_new(root, "plan", json_string(pbuf));
        json_object_set_new(root, "feasible", json_boolean(e->feasible));
        json_t *reasons = json_array();
        for (int i = 0; i < e->nreasons; i++)
            json_array_append_new(reasons, json_string(e->reasons[i]));
        json_object_set_new(root, "reasons", reasons);
        json_object_set_new(root, "tokens", num(steps * e->tokens_per_step));
        json_object_set_new(root, "steps", num(steps));
        json_object_set_new(root, "step_s", num(pw.step_s));
        json_object_set_new(root, "step_uncapped_s", num(pw.step_uncapped_s));
        json_t *ph = json_object(), *phw = json_object();
        for (int i = 0; i < MP_PHASE_COUNT; i++) {
            json_object_set_new(ph, mp_phase_name((mp_phase)i), num(pw.phase_s[i]));
            json_object_set_new(phw, mp_phase_name((mp_phase)i), num(pw.phase_W[i]));
        }
        json_object_set_new(root, "phase_s", ph);
        json_object_set_new(root, "phase_power_W", phw);
        json_object_set_new(root, "energy_J_per_step", num(pw.energy_J_per_step_facility));
        json_object_set_new(root, "energy_J_per_mtoken", num(pw.energy_J_per_mtoken_facility));
        json_object_set_new(root, "energy_J_per_step_by_level",
                            json_pack("{s:o,s:o,s:o}", "gpu", num(pw.energy_J_per_step_gpu), "node",
                                      num(pw.energy_J_per_step_node), "facility",
                                      num(pw.energy_J_per_step_facility)));
        json_object_set_new(root, "energy_J_per_mtoken_by_level",
                            json_pack("{s:o,s:o,s:o}", "gpu", num(pw.energy_J_per_mtoken_gpu), "node",
                                      num(pw.energy_J_per_mtoken_node), "facility",
                                      num(pw.energy_J_per_mtoken_facility)));
        json_t *pj = json_object();
        json_object_set_new(pj, "gpu_avg", num(pw.gpu_avg_W));
        json_object_set_new(pj, "gpu_peak", num(pw.gpu_peak_W));
        json_object_set_new(pj, "gpu_idle", num(pw.gpu_idle_W));
        json_object_set_new(pj, "gpu_active_idle", num(pw.gpu_wait_W));
        json_object_set_new(pj, "gpu_tdp", num(pw.tdp_W));
        json_object_set_new(pj, "gpu_cap", num(pw.cap_W));
        json_object_set_new(pj, "node_avg", num(pw.node_avg_W));
        json_object_set_new(pj, "node_peak", num(pw.node_peak_W));
        json_object_set_new(pj, "node_idle", num(pw.node_idle_W));
        json_object_set_new(pj, "node_host", num(pw.node_overhead_W));
        json_object_set_new(pj, "node_host_max", num(pw.node_overhead_max_W));
        json_object_set_new(pj, "switches", num(pw.switch_W));
        json_object_set_new(pj, "facility_avg", num(pw.facility_avg_W));
        json_object_set_new(pj, "facility_peak", num(pw.facility_peak_W));
        json_object_set_new(root, "power_W", pj);
        json_object_set_new(root, "power_model", json_pack("{s:b,s:s,s:f}", "unseen_gpu",
                                                            pw.unseen_gpu, "gpu_source",
                                                            pw.gpu_power_source, "pue", eo.pue));
        json_object_set_new(root, "energy_MWh", num(re.MWh));
        json_object_set_new(root, "co2e_t", num(co2e_t));
        json_object_set_new(root, "grid_gco2_per_kwh", num(gco2));
        json_object_set_new(root, "gpu_hours", num(gpu_hours));
        json_object_set_new(root, "gpu_hours_billed", num(cost.gpu_hours));
        json_object_set_new(root, "cost_usd", num(cost.usd));
        json_object_set_new(root, "cost_usd_per_mtoken", num(cost.usd_per_mtoken));
        json_object_set_new(root, "cost", json_pack("{s:s,s:o,s:o,s:o}", "mode",
                                                    cost.capex_mode ? "capital+energy" : "rental",
                                                    "rental_usd", num(cost.rental_usd),
                                                    "capital_usd", num(cost.capital_usd),
                                                    "energy_usd", num(cost.energy_usd)));
        json_t *fj = json_object(), *bc = json_object(), *bcomp = json_object();
        for (int i = 0; i < fm.ncauses; i++)
            json_object_set_new(bc, fm.cause[i].name, num(fr.by_cause_per_s[i] * per_day));
        for (int i = 0; i < MP_FC_COUNT; i++)
            json_object_set_new(bcomp, mp_fault_component_name((mp_fault_component)i),
                                num(fr.by_component_per_s[i] * per_day));
        json_object_set_new(fj, "interruptions_per_day", num(fr.total_per_s * per_day));
        json_object_set_new(fj, "mtbf_h", isfinite(mtbf_s) ? num(mtbf_s / 3600.0) : json_null());
        json_object_set_new(fj, "by_cause", bc);
        json_object_set_new(fj, "by_component", bcomp);
        json_object_set_new(fj, "needing_spare_per_day", num(fr.spare_per_s * per_day));
        json_object_set_new(fj, "expected_interruptions", num(ex.failures));
        json_object_set_new(fj, "spare_nodes", json_integer(spares));
        json_object_set_new(fj, "spare_nodes_auto", json_boolean(spare_auto));
        json_object_set_new(fj, "repair_h", num(repair_h));
        json_object_set_new(fj, "scale", num(fscale));
        json_object_set_new(fj, "source", json_string(fm.source));
        json_object_set_new(root, "failures", fj);
        json_t *cj = json_object();
        json_object_set_new(cj, "bytes", num(ck.bytes));
        json_object_set_new(cj, "bytes_per_gpu", num(ck.bytes_per_gpu));
        json_object_set_new(cj, "async", json_boolean(ck.async));
        json_object_set_new(cj, "save_s", num(ck.save_s));
        json_object_set_new(cj, "block_s", num(ck.block_s));
        json_object_set_new(cj, "load_s", num(ck.load_s));
        json_object_set_new(cj, "interval_s", num(tau));
        json_object_set_new(cj, "interval_given", json_boolean(interval_given));
        json_object_set_new(cj, "optimal_interval_s", num(daly));
        json_object_set_new(cj, "young_interval_s", num(young));
        json_object_set_new(cj, "exact_interval_s", num(exact));
        json_object_set_new(cj, "count", num(ex.checkpoints));
        json_object_set_new(root, "checkpoint", cj);
        json_object_set_new(root, "restart_s", num(rp.down_s));
        json_object_set_new(root, "goodput", num(mc.goodput_mean));
        json_object_set_new(root, "goodput_expected", num(ex.goodput));
        json_object_set_new(root, "goodput_mc", json_pack("{s:o,s:o,s:o}", "mean", num(mc.goodput_mean),
                                                          "p10", num(mc.goodput_p10), "p90",
                                                          num(mc.goodput_p90)));
        json_t *wj = json_object();
        json_object_set_new(wj, "mean", num(mc.wall_mean_s));
        json_object_set_new(wj, "p10", num(mc.wall_p10_s));
        json_object_set_new(wj, "p90", num(mc.wall_p90_s));
        json_object_set_new(wj, "expected", num(ex.wall_s));
        json_object_set_new(wj, "no_failures", num(work_s + ex.ckpt_s));
        json_object_set_new(wj, "work", num(work_s));
        json_object_set_new(root, "wall_clock_s", wj);
        json_object_set_new(root, "time_s", json_pack("{s:o,s:o,s:o,s:o,s:o}", "checkpoints",
                                                      num(ex.ckpt_s), "lost", num(ex.lost_s),
                                                      "restarts", num(ex.down_s), "spare_wait",
                                                      num(ex.wait_s), "work", num(work_s)));
        json_object_set_new(root, "trials", json_integer(trials));
        json_object_set_new(root, "seed", json_integer((json_int_t)seed));
        rc = cli_print_json(root, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        root = NULL; /* released by cli_print_json */
        if (rc)
            goto done;
    } else {
        char a[64], b[64], c2[64], d2[64];
        char pbuf[512];
        mp_plan_format(&p, pbuf, sizeof pbuf);
        printf("model    %s, %.4gB parameters\n", m.key, (double)pc.total / 1e9);
        printf("cluster  %lld x %s, %d per node (%.0f nodes)\n", ngpus, cl.gpu.key, cl.gpus_per_node, pw.nodes);
        printf("plan     %s\n", pbuf);
        if (!e->feasible)
            for (int i = 0; i < e->nreasons; i++)
                printf("INFEASIBLE: %s (the run below assumes it fits)\n", e->reasons[i]);
        printf("\nstep          %.4g s%s, %.4g tokens; %.0f steps for %.4g tokens\n", pw.step_s,
               pw.step_s > pw.step_uncapped_s * (1 + 1e-12) ? " (slowed by the power cap)" : "",
               e->tokens_per_step, steps, steps * e->tokens_per_step);
        printf("\npower, one GPU (TDP %.0f W, limit %.0f W)%s\n", pw.tdp_W, pw.cap_W,
               pw.unseen_gpu ? " -- unseen GPU: derived from its TDP" : "");
        for (int i = 0; i < MP_PHASE_COUNT; i++)
            printf("  %-7s %9.4g s of the step at %4.0f W\n", mp_phase_name((mp_phase)i), pw.phase_s[i], pw.phase_W[i]);
        printf("  average %.0f W, peak %.0f W; idle %.0f W, active idle %.0f W\n", pw.gpu_avg_W,
               pw.gpu_peak_W, pw.gpu_idle_W, pw.gpu_wait_W);
        printf("  source: %s\n", pw.gpu_power_source);
        fmt_W(a, sizeof a, pw.node_avg_W);
        fmt_W(b, sizeof b, pw.node_peak_W);
        fmt_W(c2, sizeof c2, pw.node_overhead_W);
        fmt_W(d2, sizeof d2, pw.node_overhead_max_W);
        printf("power, one node: average %s, peak %s (host %s of %s at full load)", a, b, c2, d2);
        fmt_W(a, sizeof a, pw.node_idle_W);
        printf(", idle %s\n", a);
        fmt_W(a, sizeof a, pw.facility_avg_W);
        fmt_W(b, sizeof b, pw.facility_peak_W);
        fmt_W(c2, sizeof c2, pw.switch_W);
        printf("power, facility: average %s, peak %s (PUE %.2f; scale-out switches %s, %.2g ports per GPU)\n",
               a, b, eo.pue, c2, pw.switch_ports_per_gpu);
        fmt_J(a, sizeof a, pw.energy_J_per_step_facility);
        fmt_J(b, sizeof b, pw.energy_J_per_step_gpu);
        fmt_J(c2, sizeof c2, pw.energy_J_per_step_node);
        printf("energy per step: %s at the facility (GPUs %s, nodes %s)\n", a, b, c2);
        fmt_J(a, sizeof a, pw.energy_J_per_mtoken_facility);
        fmt_J(b, sizeof b, pw.energy_J_per_mtoken_gpu);
        fmt_J(c2, sizeof c2, pw.energy_J_per_mtoken_node);
        printf("energy per million tokens: %s (GPUs %s, nodes %s)\n", a, b, c2);

        printf("\nfailures: %.3g unexpected interruptions per day", fr.total_per_s * per_day);
        if (isfinite(mtbf_s)) {
            fmt_duration(a, sizeof a, mtbf_s);
            printf(" (one every %s)", a);
        }
        printf("%s\n  by component:", fscale != 1.0 ? " (rates scaled by --failure-scale)" : "");
        for (int i = 0; i < MP_FC_COUNT; i++)
            printf(" %s %.3g", mp_fault_component_name((mp_fault_component)i), fr.by_component_per_s[i] * per_day);
        printf(" per day\n  %.3g per day take a node out; spare nodes %d%s, repair %.3g h\n",
               fr.spare_per_s * per_day, spares, spare_auto ? " (auto: <1% chance none is left)" : "", repair_h);
        printf("  source: %s\n", fm.source);
        fmt_duration(a, sizeof a, ck.save_s);
        fmt_duration(b, sizeof b, ck.block_s);
        printf("checkpoint %.4g TB (%.4g GB per GPU), %s checkpoint: save %s at %.4g GB/s, stall %s\n",
               ck.bytes / 1e12, ck.bytes_per_gpu / 1e9, async ? "asynchronous" : "synchronous", a, gbps, b);
        fmt_duration(a, sizeof a, tau);
        fmt_duration(b, sizeof b, daly);
        fmt_duration(c2, sizeof c2, young);
        printf("  interval %s%s; optimal %s (Daly 2006; Young 1974: %s)\n", a,
               interval_given ? " (given)" : " (the optimal one)", b, c2);
        fmt_duration(a, sizeof a, rp.down_s);
        printf("restart %s per interruption (restart %.0f s + load %.3g s%s)\n", a, restart_s,
               ck.load_s, async ? " + async lag" : "");

        fmt_duration(a, sizeof a, work_s);
        fmt_duration(b, sizeof b, ex.wall_s);
        printf("\nrun: %s of work; expected wall-clock %s, goodput %.2f%%, %.4g interruptions\n", a, b,
               100 * ex.goodput, ex.failures);
        fmt_duration(a, sizeof a, mc.wall_mean_s);
        fmt_duration(b, sizeof b, mc.wall_p10_s);
        fmt_duration(c2, sizeof c2, mc.wall_p90_s);
        printf("  Monte Carlo, %lld trials (seed %llu): wall-clock mean %s, p10 %s, p90 %s; goodput "
               "mean %.2f%% (p10 %.2f%%, p90 %.2f%%)\n", trials, seed, a, b, c2,
               100 * mc.goodput_mean, 100 * mc.goodput_p10, 100 * mc.goodput_p90);
        printf("  lost time: checkpoints %.2f%%, redone work %.2f%%, restarts %.2f%%, waiting for spares %.2f%%\n",
               100 * ex.ckpt_s / ex.wall_s, 100 * ex.lost_s / ex.wall_s, 100 * ex.down_s / ex.wall_s,
               100 * ex.wait_s / ex.wall_s);
        printf("\ntotals: %.4g MWh, %.4g tCO2e (%.0f g/kWh), %.4g GPU-hours (%.4g billed with spares)\n",
               re.MWh, co2e_t, gco2, gpu_hours, cost.gpu_hours);
        if (cost.capex_mode)
            printf("cost: $%.4g (capital $%.4g over %.3g years + energy $%.4g at $%.3g/kWh), $%.4g per million tokens\n",
                   cost.usd, cost.capital_usd, co.amortization_years, cost.energy_usd, co.price_kwh_usd,
                   cost.usd_per_mtoken);
        else
            printf("cost: $%.4g at $%.3g per GPU-hour, $%.4g per million tokens\n", cost.usd,
                   co.price_gpu_hour_usd, cost.usd_per_mtoken);
    }
    rc = 0;
done:
    cli_print_diag(&d);
    json_decref(root);
    free(fbuf);
    free(e);
    mp_catalog_destroy(cat);
    return rc;
}
