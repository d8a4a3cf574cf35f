/* src/cli/cli_probe_out.c — what `meshplan probe` writes: the cluster description (-o), the
 * calibration (--calibration-out, the format `meshplan calibrate` writes and `--calibration`
 * reads: docs/calibrate.md), and the report on stdout (a summary, or --json with every curve,
 * fit and prediction). Rank 0 only. docs/probe.md lists the keys. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_probe.h"

static void calibration_path(const cli_probe_job *j, char *buf, size_t cap)
{
    const char *c = cli_opt(j->a, "--calibration-out"), *o = cli_opt(j->a, "-o");
    if (c) {
        snprintf(buf, cap, "%s", c);
        return;
    }
    size_t n = strlen(o);
    if (n > 5 && !strcmp(o + n - 5, ".json"))
        n -= 5;
    snprintf(buf, cap, "%.*s.calibration.json", (int)n, o);
}

static json_t *constant_json(const mp_cal_constant *k)
{
    json_t *o = json_pack("{s:s,s:f,s:s,s:s,s:f,s:i,s:s,s:s,s:i}", "name", mp_cal_kind_name(k->kind),
                          "value", k->value, "unit", k->unit, "sources", k->sources,
                          "fit_error_pct", k->fit_error_pct, "n_points", k->npoints, "gpu", k->gpu,
                          "link", k->key, "tier", k->tier);
    return o;
}

static json_t *fits_json(const cli_probe_job *j)
{
    json_t *arr = json_array();
    for (int i = 0; i < j->nfit; i++) {
        const mp_cal_link_fit *f = &j->fit[i];
        json_array_append_new(arr, json_pack(
            "{s:i,s:s,s:i,s:{s:f,s:f},s:{s:f,s:f},s:f,s:f}", "tier", f->tier, "tier_name",
            j->raw.tier[f->tier].name, "n_points", f->npoints, "before", "latency_s",
            f->before_latency_s, "efficiency_frac", f->before_efficiency_frac, "after", "latency_s",
            f->latency_s, "efficiency_frac", f->efficiency_frac, "median_abs_time_error_pct_before",
            f->before_err_pct, "median_abs_time_error_pct_after", f->after_err_pct));
    }
    return arr;
}

int cli_probe_write_files(cli_probe_job *j, const char *text)
{
    const char *out = cli_opt(j->a, "-o");
    FILE *f = fopen(out, "w");
    if (!f || fputs(text, f) < 0 || fputc('\n', f) < 0 || fclose(f)) {
        fprintf(stderr, "meshplan: probe: -o \"%s\": could not be written\n", out);
        return EXIT_INPUT;
    }
    char cp[4096];
    calibration_path(j, cp, sizeof cp);
    json_t *consts = json_array();
    for (int i = 0; i < j->calib.n; i++)
        json_array_append_new(consts, constant_json(&j->calib.c[i]));
    json_t *root = json_pack("{s:i,s:o,s:o,s:s}", "meshplan_calibration", 1, "constants", consts,
                             "collective_fits", fits_json(j), "cluster", out);
    int rc = json_dump_file(root, cp, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
    json_decref(root);
    if (rc) {
        fprintf(stderr, "meshplan: probe: --calibration-out \"%s\": could not be written\n", cp);
        return EXIT_INPUT;
    }
    return 0;
}

/* One curve: points with nccl-tests' algbw and busbw, the prediction of cluster c when given. */
static json_t *curve_json(const cli_probe_curve *cv, mp_coll_op op, const mp_cluster *c)
{
    if (!cv->nsizes)
        return json_pack("{s:s}", "not_measured", cv->why);
    json_t *pts = json_array();
    double fac = mp_coll_busbw_factor(op, cv->nranks);
    for (int i = 0; i < cv->nsizes; i++) {
        double t = cv->time_s[i], b = cv->bytes[i];
        json_t *p = json_pack("{s:I,s:f,s:f}", "bytes", (json_int_t)b, "time_s", t, "algbw_Bps",
                              b / t);
        if (op != MP_COLL_SEND_RECV)
            json_object_set_new(p, "busbw_Bps", json_real(b / t * fac));
        mp_coll_cost cost;
        if (c && mp_coll_time_among(c, op, b, (mp_group){cv->nranks, 1}, MP_ALGO_MASK_NCCL,
                                    &cost) == MP_OK)
            json_object_set_new(p, "predicted_s", json_real(cost.total_s));
        json_array_append_new(pts, p);
    }
    json_t *o = json_pack("{s:I,s:o}", "ranks", (json_int_t)cv->nranks, "points", pts);
    if (cv->pairs)
        json_object_set_new(o, "pairs_at_once", json_integer(cv->pairs));
    return o;
}

static json_t *ab_json(const mp_probe_ab_fit *f)
{
    return json_pack("{s:f,s:f,s:f,s:f,s:i}", "alpha_s", f->alpha_s, "beta_Bps", f->beta_Bps,
                     "median_abs_error_pct", f->median_err_pct, "max_abs_error_pct",
                     f->max_err_pct, "n_points", f->npoints);
}

/* A beta of INFINITY (a latency-only regime) is written as null. */
static json_t *ab_json_inf(const mp_probe_ab_fit *f)
{
    mp_probe_ab_fit g = *f;
    g.beta_Bps = isfinite(f->beta_Bps) ? f->beta_Bps : 0; /* json_real refuses infinity */
    json_t *o = ab_json(&g);
    if (!isfinite(f->beta_Bps))
        json_object_set_new(o, "beta_Bps", json_null());
    return o;
}

static json_t *regimes_json(const mp_probe_regimes *r)
{
    json_t *arr = json_array();
    for (int k = 0; k < r->nregimes; k++) {
        json_t *o = ab_json_inf(&r->regime[k]);
        json_object_set_new(o, "upto_bytes", json_real(r->upto_bytes[k]));
        json_array_append_new(arr, o);
    }
    return json_pack("{s:o,s:f,s:f,s:i}", "regimes", arr, "median_abs_error_pct",
                     r->median_err_pct, "max_abs_error_pct", r->max_err_pct, "n_points",
                     r->npoints);
}

/* An input curve of the MPI model: median, fastest and quartiles per size. */
static json_t *spread_json(const cli_probe_curve *cv)
{
    json_t *pts = json_array();
    for (int i = 0; i < cv->nsizes; i++)
        json_array_append_new(pts, json_pack("{s:I,s:f,s:f,s:f,s:f}", "bytes",
                                             (json_int_t)cv->bytes[i], "time_s", cv->time_s[i],
                                             "min_s", cv->min_s[i], "q1_s", cv->q1_s[i], "q3_s",
                                             cv->q3_s[i]));
    return pts;
}

/* The MPI model (cmd_probe.c fit_mpi_model): its inputs, fits and the held-out prediction of
 * the all-reduce over every rank. */
static json_t *mpi_model_json(const cli_probe_job *j)
{
    const cli_probe_data *d = j->d;
    if (!j->mm_ok)
        return json_pack("{s:s}", "not_fitted", j->mm_why);
    const cli_probe_curve *ar = &d->ar_world;
    json_t *pts = json_array();
    for (int i = 0; i < ar->nsizes; i++)
        json_array_append_new(pts, json_pack(
            "{s:I,s:s,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "bytes", (json_int_t)ar->bytes[i],
            "algorithm", mp_mpi_allreduce_algo_name(j->mm_algo[i]), "time_s", ar->time_s[i],
            "q1_s", ar->q1_s[i], "q3_s", ar->q3_s[i], "predicted_s", j->mm_pred_s[i],
            "error_pct", 100.0 * (j->mm_pred_s[i] - ar->time_s[i]) / ar->time_s[i], "min_s",
            ar->min_s[i], "predicted_min_s", j->mm_pred_min_s[i]));
    json_t *in = json_object();
    if (d->xchg_intra.nsizes)
        json_object_set_new(in, "exchange_intra_node", spread_json(&d->xchg_intra));
    if (d->xchg_inter.nsizes)
        json_object_set_new(in, "exchange_inter_node", spread_json(&d->xchg_inter));
    if (d->xchg_chain.nsizes) {
        json_object_set_new(in, "exchange_chain", spread_json(&d->xchg_chain));
        json_object_set_new(in, "exchange_chain_steps", json_integer(d->xchg_chain.pairs));
    }
    json_object_set_new(in, "reduce_local", spread_json(&d->reduce_local));
    json_object_set_new(in, "copy", spread_json(&d->copy_local));
    json_t *o = json_pack("{s:s,s:s,s:i,s:i}", "rules", mp_mpi_rules_name(j->mm.rules),
                          "held_out", "the all-reduce curve: no all-reduce time enters the model "
                          "(fitted on the exchange, chained exchange, reduce_local and copy "
                          "probes only)", "ranks", (int)j->mm.ranks, "ranks_per_node",
                          (int)j->mm.ranks_per_node);
    if (j->mm.intra.nregimes)
        json_object_set_new(o, "exchange_intra_node", regimes_json(&j->mm.intra));
    if (j->mm.inter.nregimes)
        json_object_set_new(o, "exchange_inter_node", regimes_json(&j->mm.inter));
    json_object_set_new(o, "reduce_local", ab_json_inf(&j->mm.reduce));
    json_object_set_new(o, "copy", ab_json_inf(&j->mm.copy));
    json_object_set_new(o, "entry_s", json_real(j->mm.entry_s));
    json_object_set_new(o, "entry_s_fastest", json_real(j->mm_min.entry_s));
    json_object_set_new(o, "entry_from_chain_points", json_integer(j->mm.chain_points));
    json_object_set_new(o, "inputs", in);
    json_object_set_new(o, "all_reduce", json_pack(
        "{s:o,s:f,s:f,s:f,s:f}", "points", pts, "median_abs_error_pct", j->mm_err_pct,
        "max_abs_error_pct", j->mm_max_err_pct, "median_abs_error_pct_fastest",
        j->mm_min_err_pct, "median_spread_pct", j->mm_spread_pct));
    return o;
}

static json_t *nodes_json(const cli_probe_job *j)
{
    const cli_probe_data *d = j->d;
    json_t *arr = json_array();
    for (int n = 0; n < d->nnodes && n < CLI_PROBE_MAX_NODES; n++) {
        json_t *o = json_pack("{s:i,s:s,s:s}", "node", n, "host", d->hosts[n], "topology",
                              d->topo[n]);
        if (d->node_latency_s && n < CLI_PROBE_SWITCH_MAX_NODES)
            json_object_set_new(o, "switch", json_integer(j->groups[n]));
        json_array_append_new(arr, o);
    }
    return arr;
}

/* Built with AddressSanitizer (gcc: __SANITIZE_ADDRESS__, clang: __has_feature): its allocator
 * then serves the temporary buffers MPI allocates inside every all-reduce (quarantined, large
 * ones mapped afresh), which the exchange probe's preallocated buffers never pay; measured
 * here: 41-48 % held-out error under ASan against 4-7 % without (docs/probe.md). */
static int cli_probe_asan(void)
{
#if defined(__SANITIZE_ADDRESS__)
    return 1;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return 1;
#else
    return 0;
#endif
#else
    return 0;
#endif
}

static json_t *report_json(const cli_probe_job *j)
{
    const cli_probe_data *d = j->d;
    char cp[4096];
    calibration_path(j, cp, sizeof cp);
    json_t *pp = json_object(), *co = json_object();
    json_object_set_new(pp, "intra_node", curve_json(&d->pp_intra, MP_COLL_SEND_RECV, NULL));
    json_object_set_new(pp, "inter_node", curve_json(&d->pp_inter, MP_COLL_SEND_RECV, NULL));
    json_object_set_new(pp, "inter_node_all_pairs",
                        curve_json(&d->pp_inter_all, MP_COLL_SEND_RECV, NULL));
    json_object_set_new(co, "all_reduce", curve_json(&d->ar_world, MP_COLL_ALL_REDUCE, &j->cal));
    json_object_set_new(co, "all_gather", curve_json(&d->ag_world, MP_COLL_ALL_GATHER, &j->cal));
    json_object_set_new(co, "all_to_all", curve_json(&d->a2a_world, MP_COLL_ALL_TO_ALL, &j->cal));
    if (d->ar_node.nsizes)
        json_object_set_new(co, "all_reduce_inside_nodes",
                            curve_json(&d->ar_node, MP_COLL_ALL_REDUCE, NULL));
    json_t *tiers = json_array();
    for (int t = 0; t < j->pc.ntiers; t++) {
        const mp_probe_tier *x = &j->pc.tier[t];
        json_t *o = json_pack("{s:i,s:s,s:I,s:f,s:f,s:s}", "tier", t, "name", x->name,
                              "domain_ranks", (json_int_t)x->domain_gpus, "bw_Bps", x->bw_Bps,
                              "latency_s", x->latency_s, "notes", x->notes);
        if (t < 2 && j->ab_ok[t])
            json_object_set_new(o, "alpha_beta_fit", ab_json(&j->ab[t]));
        if (t == 1)
            json_object_set_new(o, "alpha_beta_fit_one_pair", ab_json(&j->ab_pair));
        json_array_append_new(tiers, o);
    }
    json_t *o = json_pack("{s:s,s:b,s:s,s:i,s:i,s:i,s:o,s:i}", "buffers", d->buffers,
                          "gpu_buffers", d->gpu_buffers, "mpi_library", d->mpi_library, "ranks",
                          d->nranks, "nodes", d->nnodes, "ranks_per_node", d->ranks_per_node,
                          "node_list", nodes_json(j), "switches", j->ngroups);
    json_object_set_new(o, "cores_per_host", json_integer(d->cores_min));
    json_object_set_new(o, "ranks_per_host", json_integer(d->ranks_per_host_max));
    json_object_set_new(o, "oversubscribed", json_boolean(d->ranks_per_host_max > d->cores_min));
    json_object_set_new(o, "address_sanitizer", json_boolean(cli_probe_asan()));
    json_object_set_new(o, "pingpong", pp);
    json_object_set_new(o, "collectives", co);
    json_object_set_new(o, "tiers", tiers);
    json_object_set_new(o, "collective_fits", fits_json(j));
    json_object_set_new(o, "calibration_choice", json_string(j->choice ? j->choice : ""));
    json_object_set_new(o, "all_reduce_median_abs_error_pct", json_pack(
        "{s:f,s:f,s:f,s:f}", "cluster_file", j->ar_before_pct, "with_calibration", j->ar_after_pct,
        "half_half_before", j->hh_before_pct, "half_half_after", j->hh_after_pct));
    if (j->ar_line_ok)
        json_object_set_new(o, "all_reduce_alpha_beta_line", ab_json(&j->ar_line));
    json_object_set_new(o, "calibrated_median_abs_error_pct", json_pack(
        "{s:f,s:f}", "all_gather", j->ag_after_pct, "all_to_all", j->a2a_after_pct));
    json_object_set_new(o, "mpi_model", mpi_model_json(j));
    json_object_set_new(o, "output", json_string(cli_opt(j->a, "-o")));
    json_object_set_new(o, "calibration", json_string(cp));
    return o;
}

int cli_probe_print(cli_probe_job *j)
{
    if (cli_flag(j->a, "--json"))
        return cli_print_json(report_json(j), JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                              JSON_REAL_PRECISION(6));
    const cli_probe_data *d = j->d;
    char cp[4096];
    calibration_path(j, cp, sizeof cp);
    printf("probe: %d ranks on %d node(s), %d per node; buffers in %s\n", d->nranks, d->nnodes,
           d->ranks_per_node, d->buffers);
    if (d->ranks_per_host_max > d->cores_min)
        printf("  OVERSUBSCRIBED: %d ranks on a host of %d cores time-slice; the times include "
               "it\n", d->ranks_per_host_max, d->cores_min);
    for (int t = 0; t < j->pc.ntiers; t++) {
        const mp_probe_tier *x = &j->pc.tier[t];
        printf("  tier %d %-12s %6lld ranks/domain  latency %9.3g s  bandwidth %9.4g GB/s", t,
               x->name, (long long)x->domain_gpus, x->latency_s, x->bw_Bps / 1e9);
        if (t < 2 && j->ab_ok[t])
            printf("  (alpha-beta fit: median |error| %.1f%%, max %.1f%%)", j->ab[t].median_err_pct,
                   j->ab[t].max_err_pct);
        printf("\n");
    }
    for (int i = 0; i < j->nfit; i++)
        printf("  fitted through the collective model, tier %d: latency %.3g s, efficiency %.3f "
               "(median |time error| %.1f%% -> %.1f%%)\n", j->fit[i].tier, j->fit[i].latency_s,
               j->fit[i].efficiency_frac, j->fit[i].before_err_pct, j->fit[i].after_err_pct);
    printf("  calibration: %s\n", j->choice ? j->choice : "");
    printf("  all-reduce over %d ranks, median |time error|: %.1f%% (cluster file alone), %.1f%% "
           "(with the calibration); half/half %.1f%%; a free alpha-beta line through the curve "
           "itself: %.1f%%\n", d->nranks, j->ar_before_pct, j->ar_after_pct, j->hh_after_pct,
           j->ar_line_ok ? j->ar_line.median_err_pct : 0.0);
    if (j->mm_ok)
        printf("  MPI's all-reduce predicted from the exchange and local probes (held out; %s): "
               "median |time error| %.1f%% (max %.1f%%; fastest iterations %.1f%%), the curve's "
               "own spread (IQR / median) %.1f%%\n", mp_mpi_rules_name(j->mm.rules),
               j->mm_err_pct, j->mm_max_err_pct, j->mm_min_err_pct, j->mm_spread_pct);
    else
        printf("  MPI's all-reduce model: %s\n", j->mm_why);
    printf("wrote %s and %s\n", cli_opt(j->a, "-o"), cp);
    return 0;
}
