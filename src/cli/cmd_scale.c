/* src/cli/cmd_scale.c — `meshplan scale`: the best plan at each GPU count of a doubling range,
 * with strong- and weak-scaling efficiency (docs/search.md "Scaling"):
 *   strong: the global batch stays --gb; E_strong(N) = (T(N)/N) / (T(N0)/N0), T the best
 *           tokens/s at N and N0 the smallest count with a plan that fits;
 *   weak:   the batch per GPU stays that of the largest count, gb(N) = gb * N / N_max sequences
 *           (counts where that is not a whole number are left out); E_weak(N) is the same ratio
 *           on those runs.
 * With a fixed batch per step, tokens/s per GPU is the classical speedup / N (strong) and
 * t(N0) / t(N) (weak), so both read as parallel efficiency. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef cli_scale_point scale_point;

static void compact_plan(const mp_plan *p, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "tp=%lld,cp=%lld,pp=%lld,vpp=%lld,dp=%lld,mb=%lld,sp=%d,zero=%d",
                     (long long)p->tp, (long long)p->cp, (long long)p->pp, (long long)p->vpp,
                     (long long)p->dp, (long long)p->mb, p->sp, p->zero);
    if (n > 0 && (size_t)n < cap && p->hsdp)
        n += snprintf(buf + n, cap - (size_t)n, ",hsdp=%lld", (long long)p->hsdp);
    if (n > 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, ",recompute=%s", mp_recompute_name(p->recompute));
}

static void efficiencies(scale_point *pt, int n)
{
    int ref = -1;
    for (int i = 0; i < n; i++) {
        pt[i].eff = 0.0;
        if (!pt[i].ok)
            continue;
        if (ref < 0)
            ref = i;
        pt[i].eff = (pt[i].best.tokens_per_s / (double)pt[i].gpus) /
                    (pt[ref].best.tokens_per_s / (double)pt[ref].gpus);
    }
}

static json_t *point_json(const scale_point *p)
{
    if (!p->gb)
        return json_null();
    json_t *o = json_object();
    json_object_set_new(o, "gb", json_integer(p->gb));
    json_object_set_new(o, "feasible", json_boolean(p->ok));
    if (p->ok) {
        char plan[512];
        mp_plan_format(&p->best.plan, plan, sizeof plan);
        json_object_set_new(o, "plan", json_string(plan));
        json_object_set_new(o, "step_s", json_real(p->best.step_s));
        json_object_set_new(o, "tokens_per_s", json_real(p->best.tokens_per_s));
        json_object_set_new(o, "tokens_per_s_per_gpu", json_real(p->best.tokens_per_s / (double)p->gpus));
        json_object_set_new(o, "mfu", json_real(p->best.mfu));
        json_object_set_new(o, "efficiency", json_real(p->eff));
        json_object_set_new(o, "bottleneck", json_string(p->best.bottleneck));
    }
    return o;
}

static const cli_option scale_opts[] = {
    CLI_REQ("--model", "M", "the model: " CLI_MODEL_HELP),
    CLI_OPT("--gpu", "G", "required unless --cluster gives it: the GPU, a catalog key (meshplan "
            "catalog gpus)"),
    CLI_REQ("--gpus", "A:B", "the GPU counts A, 2A, ... B"),
    CLI_OPT_GPUS_PER_NODE,
    CLI_OPT_SCALE_OUT,
    CLI_OPT_CLUSTER_ONE,
    CLI_OPT_CATALOG,
    CLI_OPTS_SEARCH_JOB,
    CLI_OPT("--island-gpus", "A:B", "GPUs per island: the islands' scaling study instead "
            "(meshplan islands-scale --help)"),
    CLI_OPT_JSON,
    CLI_OPT_CSV,
    CLI_END,
};

const cli_command cli_cmd_scale = {
    "scale", "the best plan per GPU count (doubling), with strong- and weak-scaling efficiency",
    NULL, 0, scale_opts, NULL, cmd_scale,
};

int cli_scale_compute(const cli_args *a, cli_scale_run *r)
{
    memset(r, 0, sizeof *r);
    int rc;
    if ((rc = cli_parse_gpu_range(cli_opt(a, "--gpus"), r->counts, MP_SEARCH_MAX_CLUSTERS, &r->n)))
        return rc;
    const long long *counts = r->counts;
    const int n = r->n;
    if ((rc = cli_load_catalog(a, &r->cat)))
        return rc;
    mp_model *mm = &r->m;
    mp_search_opts *oo = &r->o;
    r->clusters = calloc((size_t)n, sizeof *r->clusters);
    r->strong = calloc((size_t)n, sizeof *r->strong);
    r->weak = calloc((size_t)n, sizeof *r->weak);
    mp_cluster *clusters = r->clusters;
    scale_point *strong = r->strong, *weak = r->weak;
    if (!clusters || !strong || !weak)
        return EXIT_INTERNAL;
    if ((rc = cli_load_model(r->cat, cli_opt(a, "--model"), mm)) ||
        (rc = cli_search_clusters(a, r->cat, counts, n, clusters, "scale")) ||
        (rc = cli_search_opts(a, mm, oo)))
        return rc;
    oo->top_n = 1;
    const long long gb = oo->pin.gb, nmax = counts[n - 1];
    r->gb = gb;
    r->nmax = nmax;
    for (int i = 0; i < n && !rc; i++) {
        for (int w = 0; w < 2 && !rc; w++) {
            scale_point *pt = w ? &weak[i] : &strong[i];
            pt->gpus = counts[i];
            long long g = gb;
            if (w) {
                /* gb * N / N_max whole sequences, else this count has no weak point. */
                if ((gb * counts[i]) % nmax)
                    continue;
                g = gb * counts[i] / nmax;
            }
            pt->gb = g;
            mp_search_opts so = *oo;
            so.pin.gb = g;
            char label[64];
            snprintf(label, sizeof label, "%s %lld GPUs", w ? "weak" : "strong", counts[i]);
            cli_progress prog;
            cli_progress_init(&prog, label);
            so.progress = cli_progress_cb;
            so.progress_ctx = &prog;
            mp_search_result sr;
            mp_diag d = {0};
            mp_status st = mp_search(mm, &clusters[i], 1, &so, &sr, &d);
            cli_progress_done(&prog);
            if (st != MP_OK) {
                cli_print_diag(&d);
                rc = cli_exit_for(st);
                break;
            }
            r->wall += sr.wall_s;
            if (sr.ntop) {
                pt->ok = 1;
                pt->best = sr.top[0];
                pt->best.cluster = i;
            }
            mp_search_result_free(&sr);
        }
    }
    if (rc)
        return rc;
    efficiencies(strong, n);
    efficiencies(weak, n);
    return 0;

}

void cli_scale_free(cli_scale_run *r)
{
    free(r->clusters);
    free(r->strong);
    free(r->weak);
    mp_catalog_destroy(r->cat);
    memset(r, 0, sizeof *r);
}

int cmd_scale(int argc, char **argv)
{
    /* `scale --island-gpus A:B` is the islands' scaling study (docs/islands.md Sec. 9). */
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--island-gpus"))
            return cmd_islands_scale(argc, argv);
    cli_args a;
    int rc = cli_parse_cmd(&cli_cmd_scale, argc, argv, &a);
    if (rc)
        return rc;
    if (cli_flag(&a, "--json") && cli_flag(&a, "--csv"))
        return cli_fail("scale: --json and --csv exclude each other%s", "");
    cli_scale_run run;
    if ((rc = cli_scale_compute(&a, &run)))
        goto done;
    const mp_model m = run.m;
    const mp_search_opts o = run.o;
    const mp_cluster *clusters = run.clusters;
    const scale_point *strong = run.strong, *weak = run.weak;
    const long long *counts = run.counts, gb = run.gb, nmax = run.nmax;
    const int n = run.n;
    const double wall = run.wall;
    if (cli_flag(&a, "--json")) {
        json_t *root = json_object();
        json_object_set_new(root, "model", json_string(m.key));
        json_object_set_new(root, "gpu", json_string(clusters[0].gpu.key));
        json_object_set_new(root, "gb", json_integer(gb));
        json_object_set_new(root, "objective", json_string(mp_objective_name(o.objective)));
        json_t *arr = json_array();
        for (int i = 0; i < n; i++) {
            json_t *row = json_object();
            json_object_set_new(row, "gpus", json_integer(counts[i]));
            json_object_set_new(row, "strong", point_json(&strong[i]));
            json_object_set_new(row, "weak", point_json(&weak[i]));
            json_array_append_new(arr, row);
        }
        json_object_set_new(root, "points", arr);
        json_object_set_new(root, "wall_s", json_real(wall));
        if ((rc = cli_print_json(root, JSON_INDENT(2) | JSON_REAL_PRECISION(10))))
            goto done;
    } else if (cli_flag(&a, "--csv")) {
        printf("gpus,strong_gb,strong_plan,strong_tokens_per_s,strong_tokens_per_s_per_gpu,strong_mfu,"
               "strong_efficiency,weak_gb,weak_plan,weak_tokens_per_s,weak_tokens_per_s_per_gpu,"
               "weak_mfu,weak_efficiency\n");
        for (int i = 0; i < n; i++) {
            printf("%lld", counts[i]);
            const scale_point *pts[2] = {&strong[i], &weak[i]};
            for (int w = 0; w < 2; w++) {
                const scale_point *p = pts[w];
                if (!p->gb) {
                    printf(",,,,,,");
                    continue;
                }
                printf(",%lld", p->gb);
                if (!p->ok) {
                    printf(",none fits,,,,");
                    continue;
                }
                char plan[512];
                mp_plan_format(&p->best.plan, plan, sizeof plan);
                printf(",\"%s\",%.10g,%.10g,%.6g,%.6g", plan, p->best.tokens_per_s,
                       p->best.tokens_per_s / (double)p->gpus, p->best.mfu, p->eff);
            }
            printf("\n");
        }
    } else {
        printf("scale: %s on %s, gb %lld (strong scaling: fixed; weak scaling: gb x N / %lld), "
               "objective %s", m.key, clusters[0].gpu.key, gb, nmax, mp_objective_name(o.objective));
        if (o.pin.doc_len > 0)
            printf(", documents of %lld tokens", (long long)o.pin.doc_len);
        if (o.pin.fsdp == 2)
            printf(", ZeRO-3 as FSDP2");
        printf("\n\n");
        printf("%6s | %-72s %11s %9s %6s %6s | %7s %11s %9s %6s\n", "gpus", "strong: best plan",
               "tokens/s", "tok/s/GPU", "MFU", "eff", "weak gb", "tokens/s", "tok/s/GPU", "eff");
        for (int i = 0; i < n; i++) {
            char plan[256] = "none fits in memory";
            const scale_point *s = &strong[i], *w = &weak[i];
            if (s->ok)
                compact_plan(&s->best.plan, plan, sizeof plan);
            printf("%6lld | %-72s", counts[i], plan);
            if (s->ok)
                printf(" %11.4g %9.4g %5.1f%% %5.1f%%", s->best.tokens_per_s,
                       s->best.tokens_per_s / (double)counts[i], 100.0 * s->best.mfu, 100.0 * s->eff);
            else
                printf(" %11s %9s %6s %6s", "-", "-", "-", "-");
            if (!w->gb)
                printf(" | %7s %11s %9s %6s\n", "-", "-", "-", "-");
            else if (!w->ok)
                printf(" | %7lld %11s %9s %6s\n", w->gb, "none fits", "-", "-");
            else
                printf(" | %7lld %11.4g %9.4g %5.1f%%\n", w->gb, w->best.tokens_per_s,
                       w->best.tokens_per_s / (double)counts[i], 100.0 * w->eff);
        }
        printf("\nefficiency = tokens/s per GPU relative to the smallest count with a plan that fits "
               "(docs/search.md); %.2f s of search\n%s\n", wall, MP_MFU_CONVENTION);
    }
done:
    cli_scale_free(&run);
    return rc;
}
