/* src/cli/cmd_probe.c — `mpirun -n N meshplan probe --gpu G -o my-cluster.json`: measure the
 * links between the ranks it runs on (src/mpi/probe_mpi.c), fit the alpha-beta figures of each
 * tier (mp_probe_fit_alpha_beta), write them as a cluster description that `--cluster` reads
 * (mp_probe_cluster_json), and fit the tiers' latency and efficiency through the collective model
 * itself on the measured all-reduce curves (mp_cal_fit_link, as `meshplan calibrate` does),
 * written as a calibration file that `--calibration` reads. docs/probe.md.
 *
 * Built without MPI the command exits 2 saying so. Only rank 0 fits, writes and prints. */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_probe.h"
#include "meshplan/probe.h"

static const cli_option probe_opts[] = {
    CLI_REQ("--gpu", "G", "catalog GPU key the nodes hold (the cluster file's gpu)"),
    CLI_REQ("-o", "FILE", "the cluster description to write (docs/cluster.md)"),
    CLI_OPT("--calibration-out", "FILE",
            "the calibration to write (default: the -o path with .calibration.json)"),
    CLI_OPT("--max-bytes", "SIZE", "largest message, e.g. 1M, 64M (default 16M)"),
    CLI_OPT("--iters", "N", "timed repetitions per size (default 20)"),
    CLI_OPT("--warmup", "N", "untimed repetitions per size before them (default 5)"),
    CLI_OPT_CATALOG,
    CLI_FLAG("--json", "print everything measured and fitted as one JSON object"),
    CLI_END,
};

const cli_command cli_cmd_probe = {
    "probe", "measure the cluster it runs on (mpirun): point-to-point and collective curves, "
    "the tiers, written as a cluster file and a calibration",
    "", 0, probe_opts,
    "Run under mpirun/srun with at least 2 ranks, the same number on every node. docs/probe.md. "
    "Test only: MESHPLAN_PROBE_RANKS_PER_NODE=K treats blocks of K consecutive ranks as nodes.",
    cmd_probe,
};

#ifdef MESHPLAN_HAVE_MPI

static int fit_curve(const cli_probe_curve *c, mp_probe_ab_fit *f, const char *what)
{
    mp_probe_point p[CLI_PROBE_MAX_SIZES];
    for (int i = 0; i < c->nsizes; i++)
        p[i] = (mp_probe_point){c->bytes[i], c->time_s[i]};
    mp_diag dg = {0};
    if (mp_probe_fit_alpha_beta(p, c->nsizes, f, &dg) != MP_OK) {
        fprintf(stderr, "meshplan: probe: %s:\n", what);
        cli_print_diag(&dg);
        return EXIT_INPUT;
    }
    return 0;
}

/* Tier 0: measured inside node 0, or (one rank per node) the catalog's scale-up link. */
static int tier0(cli_probe_job *j)
{
    mp_probe_tier *t = &j->pc.tier[0];
    snprintf(t->name, sizeof t->name, "probe-intra");
    t->kind = MP_LINK_SCALEUP;
    t->domain_gpus = j->d->ranks_per_node;
    if (j->d->pp_intra.nsizes) {
        int rc = fit_curve(&j->d->pp_intra, &j->ab[0], "ping-pong inside a node");
        if (rc)
            return rc;
        j->ab_ok[0] = 1;
        t->bw_Bps = j->ab[0].beta_Bps;
        t->latency_s = j->ab[0].alpha_s;
        snprintf(t->notes, sizeof t->notes, "measured: MPI ping-pong between ranks 0 and 1 of "
                 "node %s, %d sizes; alpha-beta fit %.3g s + S / %.4g B/s, median |error| %.1f%%, "
                 "max %.1f%%", j->d->hosts[0], j->ab[0].npoints, t->latency_s, t->bw_Bps,
                 j->ab[0].median_err_pct, j->ab[0].max_err_pct);
        return 0;
    }
    const mp_node *node = mp_catalog_node_for_gpu(j->cat, j->gpu);
    const mp_link *l = node ? mp_catalog_link(j->cat, node->scaleup_link) : NULL;
    if (!l) {
        fprintf(stderr, "meshplan: probe: one rank per node and GPU \"%s\" has no usual node with "
                        "a scale-up link: run 2 ranks or more per node\n", j->gpu);
        return EXIT_INPUT;
    }
    t->bw_Bps = l->bw_Bps * l->efficiency_frac;
    t->latency_s = l->latency_s;
    snprintf(t->notes, sizeof t->notes, "NOT measured (one rank per node): the catalog's %s "
             "(line rate x efficiency); run K ranks per node to measure it", l->key);
    return 0;
}

/* Tier 1 (and a spine when the node-pair latencies show switches). */
static int tiers_between(cli_probe_job *j)
{
    cli_probe_data *d = j->d;
    int rc = fit_curve(&d->pp_inter_all, &j->ab[1], "ping-pong between nodes");
    if (!rc)
        rc = fit_curve(&d->pp_inter, &j->ab_pair, "ping-pong between nodes, one pair");
    if (rc)
        return rc;
    j->ab_ok[1] = 1;
    mp_probe_tier *t = &j->pc.tier[1];
    snprintf(t->name, sizeof t->name, "probe-inter");
    t->kind = MP_LINK_SCALEOUT;
    t->domain_gpus = d->nranks;
    t->bw_Bps = j->ab[1].beta_Bps;
    t->latency_s = j->ab[1].alpha_s;
    snprintf(t->notes, sizeof t->notes, "measured: MPI ping-pong between nodes %s and %s, %d pairs "
             "at once (the slowest): %.3g s + S / %.4g B/s per rank, median |error| %.1f%%; one pair "
             "alone: %.3g s + S / %.4g B/s", d->hosts[0], d->hosts[1], d->pp_inter_all.pairs,
             t->latency_s, t->bw_Bps, j->ab[1].median_err_pct, j->ab_pair.alpha_s,
             j->ab_pair.beta_Bps);
    j->pc.ntiers = 2;
    j->ngroups = 1;
    if (!d->node_latency_s)
        return 0;
    mp_diag dg = {0};
    if (mp_probe_switch_groups(d->node_latency_s, d->nnodes, 1.5, j->groups, &j->ngroups,
                               &j->regular, &j->near_s, &j->far_s, &dg) != MP_OK)
        return 0; /* not inferable: reported as one switch */
    if (j->ngroups > 1 && j->regular) {
        t->domain_gpus = (int64_t)(d->nnodes / j->ngroups) * d->ranks_per_node;
        snprintf(t->name, sizeof t->name, "probe-leaf");
        mp_probe_tier *s = &j->pc.tier[2];
        snprintf(s->name, sizeof s->name, "probe-spine");
        s->kind = MP_LINK_SCALEOUT;
        s->domain_gpus = d->nranks;
        s->bw_Bps = t->bw_Bps;
        s->latency_s = t->latency_s + (j->far_s - j->near_s > 0 ? j->far_s - j->near_s : 0);
        snprintf(s->notes, sizeof s->notes, "inferred: %d switches of %d nodes (node-pair latency "
                 "%.3g s inside, %.3g s between); bandwidth across switches NOT measured: the "
                 "leaf's", j->ngroups, d->nnodes / j->ngroups, j->near_s, j->far_s);
        j->pc.ntiers = 3;
    }
    return 0;
}

/* The measured curve as a parsed nccl-tests table, for the calibration fit. */
static void as_table(const cli_probe_curve *c, mp_coll_op op, int64_t nnodes, mp_nccl_row *rows,
                     mp_nccl_table *t)
{
    memset(t, 0, sizeof *t);
    t->op = op;
    t->nranks = c->nranks;
    t->nnodes = nnodes;
    snprintf(t->label, sizeof t->label, "probe %s", mp_coll_op_name(op));
    for (int i = 0; i < c->nsizes; i++) {
        mp_nccl_row *r = &rows[i];
        memset(r, 0, sizeof *r);
        r->line = i + 1;
        r->bytes = c->bytes[i];
        r->count = (int64_t)(c->bytes[i] / 4);
        snprintf(r->type, sizeof r->type, "float");
        snprintf(r->redop, sizeof r->redop, "sum");
        r->time_s[0] = c->time_s[i];
        r->algbw_Bps[0] = c->bytes[i] / c->time_s[i];
        r->busbw_Bps[0] = r->algbw_Bps[0] * mp_coll_busbw_factor(op, c->nranks);
    }
    t->rows = rows;
    t->nrows = (size_t)c->nsizes;
    t->first_line = 1;
    t->last_line = c->nsizes;
}

static void add_fit(cli_probe_job *j, const mp_cal_link_fit *f, const char *src)
{
    mp_cal_constant k = {0};
    snprintf(k.gpu, sizeof k.gpu, "%s", j->gpu);
    snprintf(k.key, sizeof k.key, "%s", j->raw.tier[f->tier].link);
    k.tier = f->tier;
    snprintf(k.sources, sizeof k.sources, "%s", src);
    k.fit_error_pct = f->after_err_pct;
    k.npoints = f->npoints;
    k.kind = MP_CAL_TIER_LATENCY;
    k.value = f->latency_s;
    snprintf(k.unit, sizeof k.unit, "s");
    mp_cal_add(&j->calib, &k);
    k.kind = MP_CAL_TIER_EFFICIENCY;
    k.value = f->efficiency_frac;
    snprintf(k.unit, sizeof k.unit, "fraction");
    mp_cal_add(&j->calib, &k);
    j->cal.tier[f->tier].latency_s = f->latency_s;
    j->cal.tier[f->tier].efficiency_frac = f->efficiency_frac;
    j->fit[j->nfit++] = *f;
}

/* Median |time error| (%) of cluster c's prediction of a measured curve (NCCL's algorithms). */
static double curve_error_pct(const mp_cluster *c, const cli_probe_curve *cv, mp_coll_op op)
{
    mp_nccl_row rows[CLI_PROBE_MAX_SIZES];
    mp_nccl_table t;
    as_table(cv, op, 0, rows, &t);
    return cv->nsizes ? mp_cal_link_error_pct(c, &t, 1, 0) : 0;
}

static void apply_link_fit(mp_cluster *c, const mp_cal_link_fit *f)
{
    c->tier[f->tier].latency_s = f->latency_s;
    c->tier[f->tier].efficiency_frac = f->efficiency_frac;
}

/* Candidate calibrations, judged on the world all-reduce: A = tier 0 fitted on the all-reduce
 * inside the nodes, then the outermost tier on the world's with tier 0 so calibrated; B = the
 * outermost tier alone on the world's (tier 0 as the ping-pong measured it). The fits minimise
 * trimmed squares of log time, not the median error, and A's tier-0 fit on a noisy node curve
 * can bound the world's model from below where the outer tier cannot compensate; so the
 * candidate with the lower median |time error| on the world curve is kept, and when neither
 * beats the ping-pong figures themselves those are written (the calibration then changes
 * nothing). j->choice says which. */
static int choose_calibration(cli_probe_job *j, const mp_nccl_table *world,
                              const mp_nccl_table *node, mp_diag *dg)
{
    mp_cluster ca = j->raw, cb = j->raw;
    mp_cal_link_fit fa0, fa, fb;
    int have_node = node != NULL;
    if (have_node) {
        if (mp_cal_fit_link(&ca, node, 1, 0, &fa0, dg) != MP_OK)
            return EXIT_INTERNAL;
        apply_link_fit(&ca, &fa0);
    }
    if (mp_cal_fit_link(&ca, world, 1, 0, &fa, dg) != MP_OK ||
        (have_node && mp_cal_fit_link(&cb, world, 1, 0, &fb, dg) != MP_OK))
        return EXIT_INTERNAL;
    apply_link_fit(&ca, &fa);
    if (have_node)
        apply_link_fit(&cb, &fb);
    double e0 = mp_cal_link_error_pct(&j->raw, world, 1, 0);
    double ea = mp_cal_link_error_pct(&ca, world, 1, 0);
    double eb = have_node ? mp_cal_link_error_pct(&cb, world, 1, 0) : INFINITY;
    if (ea <= eb && ea <= e0) {
        if (have_node)
            add_fit(j, &fa0, "meshplan probe: all-reduce inside every node");
        add_fit(j, &fa, "meshplan probe: all-reduce over every rank");
        j->choice = have_node ? "tier 0 from the nodes' all-reduce, the outermost from the world's"
                              : "fitted on the all-reduce over every rank";
    } else if (eb <= e0) {
        add_fit(j, &fb, "meshplan probe: all-reduce over every rank (tier 0 as measured)");
        j->choice = "the outermost tier from the world's all-reduce, tier 0 as the ping-pong "
                    "measured it (the nodes' fit predicted the world's curve worse)";
    } else {
        mp_cal_link_fit keep = fa;
        keep.latency_s = j->raw.tier[fa.tier].latency_s > 1e-9 ? j->raw.tier[fa.tier].latency_s : 1e-9;
        keep.efficiency_frac = j->raw.tier[fa.tier].efficiency_frac;
        keep.after_err_pct = e0;
        add_fit(j, &keep, "meshplan probe: the ping-pong figures (no fit predicted the "
                "all-reduce better)");
        j->choice = "the ping-pong figures kept: no fit predicted the world's all-reduce better";
    }
    return 0;
}

/* The calibration (choose_calibration), its half/half check, and the other curves' errors. */
static int fit_collectives(cli_probe_job *j)
{
    cli_probe_data *d = j->d;
    mp_nccl_row rows[CLI_PROBE_MAX_SIZES], nrows[CLI_PROBE_MAX_SIZES];
    mp_nccl_table t, tn;
    mp_diag dg = {0};
    j->cal = j->raw;
    int have_node = d->ar_node.nsizes >= 4;
    if (have_node)
        as_table(&d->ar_node, MP_COLL_ALL_REDUCE, 1, nrows, &tn);
    as_table(&d->ar_world, MP_COLL_ALL_REDUCE, d->nnodes, rows, &t);
    j->ar_before_pct = mp_cal_link_error_pct(&j->raw, &t, 1, 0);
    if (choose_calibration(j, &t, have_node ? &tn : NULL, &dg))
        goto bad;
    j->ar_after_pct = mp_cal_link_error_pct(&j->cal, &t, 1, 0);
    /* Half/half: fit the outermost tier on the even sizes, predict the odd ones (calibrate's
     * check), the other tiers as calibrated. */
    int outer = j->fit[j->nfit - 1].tier;
    mp_cluster hh = j->cal;
    hh.tier[outer] = j->raw.tier[outer];
    if (mp_cal_holdout(&hh, &t, &j->hh_before_pct, &j->hh_after_pct, &dg) != MP_OK)
        goto bad;
    mp_probe_point pts[CLI_PROBE_MAX_SIZES];
    for (int i = 0; i < d->ar_world.nsizes; i++)
        pts[i] = (mp_probe_point){d->ar_world.bytes[i], d->ar_world.time_s[i]};
    j->ar_line_ok = mp_probe_fit_alpha_beta(pts, d->ar_world.nsizes, &j->ar_line, NULL) == MP_OK;
    j->ag_after_pct = curve_error_pct(&j->cal, &d->ag_world, MP_COLL_ALL_GATHER);
    j->a2a_after_pct = curve_error_pct(&j->cal, &d->a2a_world, MP_COLL_ALL_TO_ALL);
    return 0;
bad:
    fprintf(stderr, "meshplan: probe: fitting the collective curves:\n");
    cli_print_diag(&dg);
    return EXIT_INTERNAL;
}

/* The curve (median times, or with use_min the fastest iteration's) as points. */
static int as_points(const cli_probe_curve *c, int use_min, mp_probe_point *p)
{
    for (int i = 0; i < c->nsizes; i++)
        p[i] = (mp_probe_point){c->bytes[i], use_min ? c->min_s[i] : c->time_s[i]};
    return c->nsizes;
}

/* The MPI model from the exchange and local probes alone (median or fastest times). The
 * chained exchange's start-up cost enters only when the ranks time-slice (more on a host than
 * it has cores): there it is a scheduling cost of 10-47 us that the all-reduce's back-to-back
 * steps do not pay again; with a core per rank it measured 0.0-1.5 us, and subtracting it per
 * step gained nothing over TCP and made every shared-memory run worse (docs/probe.md,
 * "Oversubscribed"). */
static int build_mpi_model(const cli_probe_data *d, int use_min, mp_probe_mpi_model *m,
                           mp_diag *dg)
{
    int sliced = d->ranks_per_host_max > d->cores_min;
    mp_probe_point xi[CLI_PROBE_MAX_SIZES], xo[CLI_PROBE_MAX_SIZES], rd[CLI_PROBE_MAX_SIZES],
        cp[CLI_PROBE_MAX_SIZES], ch[CLI_PROBE_MAX_SIZES];
    mp_probe_mpi_inputs in = {mp_probe_mpi_rules_for(d->mpi_library), d->nranks,
                              d->ranks_per_node, xi, as_points(&d->xchg_intra, use_min, xi), xo,
                              as_points(&d->xchg_inter, use_min, xo), rd,
                              as_points(&d->reduce_local, use_min, rd), cp,
                              as_points(&d->copy_local, use_min, cp), ch,
                              sliced ? as_points(&d->xchg_chain, use_min, ch) : 0};
    return mp_probe_mpi_model_fit(&in, m, dg) == MP_OK ? 0 : -1;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof v[0], cmp_dbl);
    return n < 1 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* MPI's own all-reduce over every rank predicted by the MPI model (mp_probe_mpi_allreduce_s)
 * built from the exchange and local probes: a held-out prediction, no all-reduce time enters
 * it. The error is reported for the median curves and for the fastest-iteration curves; the
 * spread is the median over sizes of the all-reduce's interquartile range / median. */
static void fit_mpi_model(cli_probe_job *j)
{
    const cli_probe_data *d = j->d;
    const cli_probe_curve *ar = &d->ar_world;
    mp_diag dg = {0};
    if (!d->reduce_local.nsizes || !d->copy_local.nsizes || ar->nsizes < 2) {
        snprintf(j->mm_why, sizeof j->mm_why, "not measured: %s", d->gpu_buffers ?
                 "GPU buffers (the local reduction runs in a kernel)" : "no curves");
        return;
    }
    if (build_mpi_model(d, 0, &j->mm, &dg) || build_mpi_model(d, 1, &j->mm_min, &dg)) {
        snprintf(j->mm_why, sizeof j->mm_why, "not fitted: %.140s", dg.text);
        return;
    }
    mp_probe_point pm[CLI_PROBE_MAX_SIZES], pn[CLI_PROBE_MAX_SIZES];
    double sp[CLI_PROBE_MAX_SIZES], unused;
    int n = as_points(ar, 0, pm);
    as_points(ar, 1, pn);
    if (mp_probe_mpi_allreduce_error(&j->mm, pm, n, j->mm_pred_s, j->mm_algo, &j->mm_err_pct,
                                     &j->mm_max_err_pct, &dg) != MP_OK ||
        mp_probe_mpi_allreduce_error(&j->mm_min, pn, n, j->mm_pred_min_s, NULL,
                                     &j->mm_min_err_pct, &unused, &dg) != MP_OK) {
        snprintf(j->mm_why, sizeof j->mm_why, "not evaluated: %.140s", dg.text);
        return;
    }
    for (int i = 0; i < n; i++)
        sp[i] = 100.0 * (ar->q3_s[i] - ar->q1_s[i]) / ar->time_s[i];
    j->mm_spread_pct = median_of(sp, n);
    j->mm_ok = 1;
}

static int build_cluster(cli_probe_job *j, char **text)
{
    cli_probe_data *d = j->d;
    snprintf(j->pc.name, sizeof j->pc.name, "probed: %d ranks on %d node(s) (%s ...)", d->nranks,
             d->nnodes, d->hosts[0]);
    snprintf(j->pc.gpu, sizeof j->pc.gpu, "%s", j->gpu);
    j->pc.num_gpus = d->nranks;
    j->pc.ntiers = 1;
    snprintf(j->pc.source, sizeof j->pc.source, "meshplan probe: MPI ping-pong and collectives, "
             "%d timed iterations per size after %d untimed (median of the slowest rank), up to "
             "%.0f bytes, buffers in %s; %.200s", j->cfg.iters, j->cfg.warmup, j->cfg.max_bytes,
             d->buffers, d->mpi_library);
    int len = 0;
    for (int n = 0; n < d->nnodes && n < 8; n++)
        len += snprintf(j->pc.notes + len, sizeof j->pc.notes - (size_t)len, "%snode %d (%s): %s",
                        n ? "; " : "", n, d->hosts[n], d->topo[n]);
    if (d->nnodes > 8 && len < (int)sizeof j->pc.notes)
        snprintf(j->pc.notes + len, sizeof j->pc.notes - (size_t)len, "; ... %d nodes", d->nnodes);
    int rc = tier0(j);
    if (!rc && d->nnodes >= 2)
        rc = tiers_between(j);
    if (rc)
        return rc;
    if (j->pc.ntiers == 1)
        j->pc.tier[0].domain_gpus = d->nranks;
    mp_diag dg = {0};
    mp_status st = mp_probe_cluster_json(&j->pc, text, &dg);
    if (st == MP_OK)
        st = mp_cluster_from_json(j->cat, *text, strlen(*text), cli_opt(j->a, "-o"), 0, &j->raw, &dg);
    if (st != MP_OK) {
        fprintf(stderr, "meshplan: probe: the measured cluster is not valid:\n");
        cli_print_diag(&dg);
        return cli_exit_for(st);
    }
    return 0;
}

/* Rank 0, after the measurements: fit, write, print. */
static int finish(cli_probe_job *j)
{
    char *text = NULL;
    int rc = build_cluster(j, &text);
    if (!rc)
        rc = fit_collectives(j);
    if (!rc)
        fit_mpi_model(j);
    if (!rc)
        rc = cli_probe_write_files(j, text);
    if (!rc)
        rc = cli_probe_print(j);
    free(text);
    return rc;
}

static int probe_main(const cli_args *a, int rank)
{
    long long iters = 20, warmup = 5;
    double max_bytes = 16.0 * 1048576;
    int rc = 0;
    const char *s;
    if ((s = cli_opt(a, "--iters")) && (rc = cli_parse_count("iters", s, 1, 10000, &iters)))
        return rc;
    if ((s = cli_opt(a, "--warmup")) && (rc = cli_parse_count("warmup", s, 0, 10000, &warmup)))
        return rc;
    if ((s = cli_opt(a, "--max-bytes")) && (rc = cli_parse_bytes("max-bytes", s, &max_bytes)))
        return rc;
    if (max_bytes < 4096 || max_bytes > 1073741824.0)
        return cli_fail("probe: --max-bytes = %s: expected 4K to 1G", cli_opt(a, "--max-bytes"));
    mp_catalog *cat = NULL;
    if ((rc = cli_load_catalog(a, &cat)))
        return rc;
    const char *gpu = cli_opt(a, "--gpu");
    if (!mp_catalog_gpu(cat, gpu)) {
        fprintf(stderr, "meshplan: probe: --gpu = \"%s\": not in the catalog (see `meshplan "
                        "catalog gpus`)\n", gpu);
        mp_catalog_destroy(cat);
        return EXIT_INPUT;
    }
    const char *fake = getenv("MESHPLAN_PROBE_RANKS_PER_NODE");
    cli_probe_cfg cfg = {max_bytes, (int)iters, (int)warmup, fake ? atoi(fake) : 0};
    cli_probe_data *d = calloc(1, sizeof *d);
    cli_probe_job *j = calloc(1, sizeof *j);
    rc = d && j ? cli_probe_mpi_run(&cfg, d) : EXIT_INTERNAL;
    if (!rc && rank == 0) {
        j->a = a, j->cat = cat, j->d = d, j->gpu = gpu, j->cfg = cfg;
        rc = finish(j);
    }
    if (d)
        free(d->node_latency_s);
    free(d);
    free(j);
    mp_catalog_destroy(cat);
    return rc;
}
#endif

int cmd_probe(int argc, char **argv)
{
#ifndef MESHPLAN_HAVE_MPI
    cli_args a0;
    int rc0 = cli_parse_cmd(&cli_cmd_probe, argc, argv, &a0);
    if (rc0)
        return rc0;
    fprintf(stderr, "meshplan: probe: this build has no MPI: the probe measures the links between "
                    "MPI ranks (install Open MPI, e.g. scripts/setup.sh, and configure with "
                    "MESHPLAN_MPI=ON; then run it under mpirun)\n");
    return EXIT_INPUT;
#else
    if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK") && !getenv("PMI_RANK")) {
        cli_args a0;
        int rc0 = cli_parse_cmd(&cli_cmd_probe, argc, argv, &a0);
        if (rc0)
            return rc0;
        fprintf(stderr, "meshplan: probe: not started by an MPI launcher: run it under mpirun or "
                        "srun with at least 2 ranks (mpirun -n 2 meshplan probe --gpu G -o F)\n");
        return EXIT_INPUT;
    }
    int rank = 0, size = 1, rc;
    if ((rc = cli_probe_mpi_init(&rank, &size)))
        return rc;
    if (rank != 0) /* only rank 0 prints; the others parse the same arguments quietly */
        (void)!freopen("/dev/null", "w", stderr);
    cli_args a;
    rc = cli_parse_cmd(&cli_cmd_probe, argc, argv, &a);
    if (!rc && a.npositional)
        rc = cli_fail("probe: unexpected argument \"%s\"", a.positional[0]);
    if (!rc)
        rc = probe_main(&a, rank);
    /* Every rank leaves with rank 0's verdict (its fits and files decide). */
    cli_probe_mpi_end_rc(&rc);
    cli_probe_mpi_end();
    return rc;
#endif
}
