/* src/cli/cmd_plot.c — `meshplan plot KIND ... -o FILE.svg|FILE.png`: the figures of
 * meshplan/plot.h. Each kind takes the options of the command whose results it draws and builds
 * its job with that command's code:
 *   scale       scale's options       (cli_scale_compute)       tokens/s and efficiency vs GPUs
 *   pareto      search's options      (cli_search_opts)         throughput vs memory, frontier
 *   memory      predict's options     (cli_job_estimate)        memory stack per stage
 *   parts       predict's options     (+ --simulate and trace's simulator options)
 *   timeline    trace's options       (cli_trace_sim_opts)      the simulated step, Gantt
 *   collective  collective's options  (cli_collective_job)      bus bandwidth vs size
 * plus -o/--output FILE (the format from its extension), --width PX, --height PX, --title TEXT. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The commands whose results the kinds draw (their cmd_*.c define them). */
extern const cli_command cli_cmd_scale, cli_cmd_search, cli_cmd_predict, cli_cmd_trace,
    cli_cmd_collective;

/* plot's own options; each kind adds the table of the command it draws (kind_options below). */
static const cli_option plot_opts[] = {
    CLI_OPT("-o", "FILE.svg|FILE.png", "the figure's file; the format follows the extension"),
    CLI_OPT("--output", "FILE", "the same as -o"),
    CLI_OPT("--width", "PX", "width in pixels, [200, 8000] (default 960)"),
    CLI_OPT("--height", "PX", "height in pixels, [200, 8000] (default 600)"),
    CLI_OPT("--title", "TEXT", "the figure's title (default: its own)"),
    CLI_FLAG("--simulate", "parts: add the simulated step's bar (trace's simulator options apply)"),
    CLI_END,
};

const cli_command cli_cmd_plot = {
    "plot", "draw a figure as SVG or PNG (docs/plot.md): scale, pareto, memory, parts, timeline or "
    "collective, each with the options of the command it draws",
    "KIND", 1, plot_opts,
    "KIND and the options it takes besides these:\n"
    "  scale       scale's (meshplan scale --help): tokens/s and efficiency vs GPUs\n"
    "  pareto      search's: throughput vs memory per GPU, the frontier, the top plans (--top 50)\n"
    "  memory      predict's: the memory stack of each pipeline stage against the capacity\n"
    "  parts       predict's (and with --simulate trace's simulator options): the step's parts\n"
    "  timeline    trace's: the simulated step as a Gantt chart of stages and streams\n"
    "  collective  collective's: bus bandwidth vs message size, one line per algorithm\n"
    "Output options of those commands (--json, --csv, --format) do not apply.\n",
    cmd_plot,
};

/* A kind's options: plot's, then those of the commands it draws, without their output options
 * (and without trace's -o, which plot's -o replaces). Written into out (cap entries, CLI_END
 * last); of the second table only the names in only_second (NULL: all). */
static int kind_options(const char *kind, const cli_option *const *tables, int ntables,
                        const char *const *only_second, cli_option *out, int cap)
{
    static const char *const skip[] = {"--json", "--csv", "--format", "--rank", "--quality-factor",
                                       "--island-gpus", NULL};
    int n = 0;
    for (int t = -1; t < ntables; t++)
        for (const cli_option *o = t < 0 ? plot_opts : tables[t]; o->name; o++) {
            int drop = !strcmp(o->name, "--simulate") && strcmp(kind, "parts");
            if (t == 1 && only_second) { /* of the second table, only these */
                drop = 1;
                for (int k = 0; only_second[k]; k++)
                    drop &= !!strcmp(o->name, only_second[k]);
            }
            for (int k = 0; skip[k] && !drop; k++)
                drop = !strcmp(o->name, skip[k]);
            for (int k = 0; k < n && !drop; k++)
                drop = !strcmp(out[k].name, o->name);
            if (!drop && n + 1 < cap)
                out[n++] = *o;
        }
    out[n] = (cli_option)CLI_END;
    return n;
}

/* -o, --width, --height, --title into po; the output path into *path. 0 or EXIT_INPUT. */
static int plot_options(const cli_args *a, const char *kind, mp_plot_opts *po, const char **path)
{
    mp_plot_opts_init(po);
    if (cli_output_path(a, "plot", path))
        return EXIT_INPUT;
    if (!*path) {
        fprintf(stderr, "meshplan: plot %s: -o FILE.svg or -o FILE.png is required\n", kind);
        return EXIT_INPUT;
    }
    mp_diag d = {0};
    mp_plot_format fmt;
    if (mp_plot_format_from_path(*path, &fmt, &d) != MP_OK) {
        cli_print_diag(&d);
        return EXIT_INPUT;
    }
    long long w = po->width_px, h = po->height_px;
    int rc;
    if (cli_opt(a, "--width") && (rc = cli_parse_count("width", cli_opt(a, "--width"), 200, 8000, &w)))
        return rc;
    if (cli_opt(a, "--height") && (rc = cli_parse_count("height", cli_opt(a, "--height"), 200, 8000, &h)))
        return rc;
    po->width_px = (int)w;
    po->height_px = (int)h;
    po->title = cli_opt(a, "--title");
    return 0;
}

/* The status of a figure call: 0, or its diagnostics and exit code. */
static int figure_done(mp_status st, mp_diag *d, const char *path)
{
    if (st != MP_OK) {
        cli_print_diag(d);
        return cli_exit_for(st);
    }
    fprintf(stderr, "meshplan: wrote %s\n", path);
    return 0;
}

static int plot_scale(const cli_args *a, const mp_plot_opts *po, const char *path)
{
    cli_scale_run run;
    int rc = cli_scale_compute(a, &run);
    mp_plot_scale_point *pts = rc ? NULL : calloc((size_t)run.n, sizeof *pts);
    if (!rc && !pts)
        rc = EXIT_INTERNAL;
    if (!rc) {
        for (int i = 0; i < run.n; i++) {
            pts[i].gpus = run.counts[i];
            pts[i].strong_ok = run.strong[i].ok;
            pts[i].strong_tokens_per_s = run.strong[i].best.tokens_per_s;
            pts[i].strong_efficiency_frac = run.strong[i].eff;
            pts[i].weak_ok = run.weak[i].ok;
            pts[i].weak_tokens_per_s = run.weak[i].best.tokens_per_s;
            pts[i].weak_efficiency_frac = run.weak[i].eff;
        }
        char sub[320];
        snprintf(sub, sizeof sub, "%s on %s, gb %lld, objective %s; efficiency relative to the smallest "
                 "count with a plan that fits", run.m.key, run.clusters[0].gpu.key, run.gb,
                 mp_objective_name(run.o.objective));
        mp_plot_opts o = *po;
        o.subtitle = sub;
        mp_diag d = {0};
        rc = figure_done(mp_plot_scale(pts, run.n, &o, path, &d), &d, path);
    }
    free(pts);
    cli_scale_free(&run);
    return rc;
}

static int plot_pareto(const cli_args *a, const mp_plot_opts *po, const char *path)
{
    long long counts[MP_SEARCH_MAX_CLUSTERS];
    int n = 0, rc;
    if (!cli_opt(a, "--model") || !cli_opt(a, "--gpu") || !cli_opt(a, "--gpus"))
        return cli_fail("plot pareto: --model, --gpu and --gpus are required (search's options)%s", "");
    if ((rc = cli_parse_gpu_range(cli_opt(a, "--gpus"), counts, MP_SEARCH_MAX_CLUSTERS, &n)))
        return rc;
    mp_catalog *cat = NULL;
    if ((rc = cli_load_catalog(a, &cat)))
        return rc;
    mp_model m;
    mp_search_opts o;
    mp_search_result r;
    memset(&r, 0, sizeof r);
    mp_diag d = {0};
    mp_cluster *clusters = calloc((size_t)n, sizeof *clusters);
    if (!clusters)
        rc = EXIT_INTERNAL;
    if (!rc && !(rc = cli_load_model(cat, cli_opt(a, "--model"), &m)) &&
        !(rc = cli_search_clusters(a, cat, counts, n, clusters, "plot")) && !(rc = cli_search_opts(a, &m, &o))) {
        if (!cli_opt(a, "--top"))
            o.top_n = 50; /* a cloud of good plans around the frontier */
        cli_progress prog;
        cli_progress_init(&prog, "searching");
        o.progress = cli_progress_cb;
        o.progress_ctx = &prog;
        mp_status st = mp_search(&m, clusters, n, &o, &r, &d);
        cli_progress_done(&prog);
        if (st != MP_OK) {
            cli_print_diag(&d);
            rc = cli_exit_for(st);
        } else {
            rc = figure_done(mp_plot_pareto(&r, po, path, &d), &d, path);
        }
    }
    mp_search_result_free(&r);
    free(clusters);
    mp_catalog_destroy(cat);
    return rc;
}

/* predict's job: --cluster (a node, preset or file) or --gpu/--gpus; the estimate in *e. */
static int predict_job(const cli_args *a, const mp_catalog *cat, mp_model *m, mp_cluster *cl,
                       mp_plan *p, mp_estimate **e, long long *ngpus)
{
    const char *cluster = cli_opt(a, "--cluster"), *gpus = cli_opt(a, "--gpus");
    long long gpn = 0;
    int rc;
    mp_diag d = {0};
    *ngpus = 0;
    if (!cli_opt(a, "--model") || !cli_opt(a, "--plan") || (!cluster && (!cli_opt(a, "--gpu") || !gpus)))
        return cli_fail("plot: --model, --plan and --gpu with --gpus (or --cluster) are required "
                        "(predict's options)%s", "");
    if (gpus && (rc = cli_parse_count("gpus", gpus, 1, 1LL << 24, ngpus)))
        return rc;
    if (cli_opt(a, "--gpus-per-node") &&
        (rc = cli_parse_count("gpus-per-node", cli_opt(a, "--gpus-per-node"), 1, 1 << 20, &gpn)))
        return rc;
    if (cluster) {
        if (cli_cluster_is_islands(cluster))
            return cli_fail("plot: cluster = \"%s\" is an islands description: plots draw one cluster", cluster);
        if ((rc = cli_load_model(cat, cli_opt(a, "--model"), m)) ||
            (rc = cli_load_cluster(cat, cluster, *ngpus, cli_opt(a, "--gpu"), cl)))
            return rc;
        *ngpus = cl->num_gpus;
        rc = cli_plan_estimate(m, cl, cli_opt(a, "--plan"), *ngpus, p, e, &d);
    } else {
        rc = cli_job_estimate(cat, cli_opt(a, "--model"), cli_opt(a, "--gpu"), *ngpus, gpn,
                              cli_opt(a, "--scale-out"), cli_opt(a, "--plan"), m, cl, p, e, &d);
    }
    cli_print_diag(&d);
    return rc;
}

/* memory, parts and timeline: one plan on one cluster. */
static int plot_job(const char *kind, const cli_args *a, const mp_plot_opts *po, const char *path)
{
    mp_catalog *cat = NULL;
    int rc = cli_load_catalog(a, &cat);
    if (rc)
        return rc;
    mp_model m;
    mp_cluster cl;
    mp_plan p;
    mp_estimate *e = NULL;
    mp_sim *sim = NULL;
    mp_sim_result sr;
    long long ngpus = 0;
    mp_diag d = {0};
    int want_sim = !strcmp(kind, "timeline") || cli_flag(a, "--simulate");
    if ((rc = predict_job(a, cat, &m, &cl, &p, &e, &ngpus)))
        goto done;
    char sub[640];
    snprintf(sub, sizeof sub, "%s on %lld x %s, plan %s (dp=%lld, %d micro-batches)", m.key, ngpus,
             cl.gpu.key, cli_opt(a, "--plan"), (long long)p.dp, e->microbatches);
    mp_plot_opts o = *po;
    if (!o.subtitle && strcmp(kind, "parts"))
        o.subtitle = sub;
    if (want_sim) {
        mp_sim_opts so;
        if ((rc = cli_trace_sim_opts(a, ngpus, &so)))
            goto done;
        mp_status st = mp_sim_run(&m, &cl, &p, e, &so, &sim, &sr, &d);
        if (st != MP_OK) {
            cli_print_diag(&d);
            rc = cli_exit_for(st);
            goto done;
        }
    }
    mp_status st;
    if (!strcmp(kind, "memory"))
        st = mp_plot_memory(e, &o, path, &d);
    else if (!strcmp(kind, "parts"))
        st = mp_plot_parts(e, want_sim ? &sr : NULL, &o, path, &d);
    else
        st = mp_plot_timeline(sim, &sr, &o, path, &d);
    rc = figure_done(st, &d, path);
done:
    mp_sim_destroy(sim);
    free(e);
    mp_catalog_destroy(cat);
    return rc;
}

/* One line for the algorithms chosen (--algo, default auto), then one per algorithm of that set
 * that applies to the op on this cluster. */
static int plot_collective(const cli_args *a, const mp_plot_opts *po, const char *path)
{
    cli_coll_job job;
    int rc = cli_collective_job(a, &job);
    if (rc)
        return rc;
    enum { MAXS = 12 };
    double bw[MAXS][CLI_COLL_MAX_SIZES];
    char names[MAXS][48];
    mp_plot_coll_series s[MAXS];
    int ns = 0;
    /* every algorithm of the set alone, then (alg == MP_ALGO_COUNT) the best of them, drawn last */
    for (int alg = 0; alg <= MP_ALGO_COUNT && ns < MAXS; alg++) {
        unsigned mask = alg == MP_ALGO_COUNT ? job.mask : MP_ALGO_BIT(alg);
        if (alg < MP_ALGO_COUNT && (alg == MP_ALGO_AUTO || !(job.mask & mask)))
            continue;
        int ok = 1;
        for (int i = 0; i < job.nsizes && ok; i++) {
            mp_coll_cost cc;
            ok = mp_coll_time_among(&job.cluster, job.op, job.sizes[i], job.g, mask, &cc) == MP_OK;
            bw[ns][i] = ok && cc.total_s > 0
                            ? job.sizes[i] / cc.total_s * mp_coll_busbw_factor(job.op, job.g.size) : 0.0;
        }
        if (!ok)
            continue; /* the algorithm does not apply here */
        if (alg == MP_ALGO_COUNT)
            snprintf(names[ns], sizeof names[0], "chosen (best of %s)", cli_opt(a, "--algo") ? cli_opt(a, "--algo") : "all");
        else
            snprintf(names[ns], sizeof names[0], "%s", mp_coll_algo_name((mp_coll_algo)alg));
        s[ns] = (mp_plot_coll_series){names[ns], job.nsizes, job.sizes, bw[ns]};
        ns++;
    }
    if (!ns)
        return cli_fail("plot collective: no algorithm of --algo applies to %s here", mp_coll_op_name(job.op));
    char sub[320];
    snprintf(sub, sizeof sub, "%s over %lld ranks (stride %lld) of %s", mp_coll_op_name(job.op),
             (long long)job.g.size, (long long)job.g.stride, job.cluster.name);
    mp_plot_opts o = *po;
    o.subtitle = sub;
    mp_diag d = {0};
    return figure_done(mp_plot_collective(s, ns, &o, path, &d), &d, path);
}

int cmd_plot(int argc, char **argv)
{
    static const char *const kinds[] = {"scale", "pareto", "memory", "parts", "timeline", "collective"};
    const char *kind = argc > 0 ? argv[0] : "";
    int k = 0;
    while (k < 6 && strcmp(kind, kinds[k]))
        k++;
    if (k == 6)
        return cli_fail("plot: kind = \"%s\": expected scale, pareto, memory, parts, timeline or "
                        "collective (then that command's options and -o FILE.svg|FILE.png)", kind);
    /* the tables of the commands each kind draws */
    const cli_option *tables[2] = {NULL, NULL};
    int ntables = 1;
    if (k == 0) tables[0] = cli_cmd_scale.options;
    if (k == 1) tables[0] = cli_cmd_search.options;
    if (k == 2) tables[0] = cli_cmd_predict.options;
    if (k == 3) { tables[0] = cli_cmd_predict.options; tables[1] = cli_cmd_trace.options; ntables = 2; }
    if (k == 4) tables[0] = cli_cmd_trace.options;
    if (k == 5) tables[0] = cli_cmd_collective.options;
    static const char *const sim_names[] = {"--contention", "--tp-overlap", "--p2p-overlap",
                                            "--analytical-rules", "--straggler-rank",
                                            "--straggler-compute", "--straggler-link",
                                            "--max-events", NULL};
    cli_option opts[96];
    kind_options(kind, tables, ntables, sim_names, opts, 96);
    char name[32];
    snprintf(name, sizeof name, "plot %s", kind);
    const cli_command c = {name, cli_cmd_plot.summary, NULL, 0, opts, NULL, cmd_plot};
    cli_args a;
    int rc = cli_parse_cmd(&c, argc - 1, argv + 1, &a);
    if (rc)
        return rc;
    mp_plot_opts po;
    const char *path;
    if ((rc = plot_options(&a, kind, &po, &path)))
        return rc;
    if (k == 0)
        rc = plot_scale(&a, &po, path);
    else if (k == 1)
        rc = plot_pareto(&a, &po, path);
    else if (k == 5)
        rc = plot_collective(&a, &po, path);
    else
        rc = plot_job(kind, &a, &po, path);
    mp_plot_release_caches();
    return rc;
}
