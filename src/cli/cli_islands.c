/* src/cli/cli_islands.c — `meshplan predict` across islands joined by WAN links: loading an
 * islands description (or a cluster whose outer tier is wan), running mp_islands_predict and
 * writing the per-island and total figures as text or JSON (shared with islands-scale). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

/* The JSON text of a --cluster value that is a shipped preset or a file (NULL otherwise);
 * *owned is the buffer to free. */
static const char *cluster_text(const char *spec, size_t *len, char **owned)
{
    *owned = NULL;
    const char *t = mp_cluster_preset_json(spec, len);
    if (t)
        return t;
    struct stat sb;
    if (stat(spec, &sb) != 0 || !S_ISREG(sb.st_mode))
        return NULL;
    mp_diag d = {0};
    if (cli_read_file(spec, owned, len, &d) != MP_OK)
        return NULL;
    return *owned;
}

int cli_cluster_is_islands(const char *spec)
{
    size_t len = 0;
    char *own = NULL;
    const char *t = cluster_text(spec, &len, &own);
    int yes = t && mp_islands_json_is_islands(t, len);
    free(own);
    return yes;
}

int cli_load_islands(const mp_catalog *cat, const char *spec, long long island_gpus,
                     const char *only, mp_islands **out)
{
    size_t len = 0;
    char *own = NULL;
    const char *t = cluster_text(spec, &len, &own);
    if (!t) {
        fprintf(stderr, "meshplan: cluster = \"%s\": not a shipped cluster or a readable file\n", spec);
        return EXIT_INPUT;
    }
    mp_diag d = {0};
    mp_status st = mp_islands_from_json(cat, t, len, spec, island_gpus, only, out, &d);
    free(own);
    if (st != MP_OK) {
        fprintf(stderr, "meshplan: cluster = \"%s\": not a valid islands description:\n", spec);
        cli_print_diag(&d);
        return cli_exit_for(st);
    }
    return 0;
}

static const char *human_bytes(double b, char *buf, size_t cap)
{
    const char *u[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
    int i = 0;
    while (fabs(b) >= 1000.0 && i < 6) {
        b /= 1000.0;
        i++;
    }
    snprintf(buf, cap, "%.3g %s", b, u[i]);
    return buf;
}

static const char *split_name(const mp_xsync *x)
{
    return x->split == MP_SPLIT_GPUS ? "in proportion to GPUs"
         : x->split == MP_SPLIT_WEIGHTS ? "by the given weights"
         : "in proportion to speed";
}

void cli_islands_text(FILE *f, const mp_model *m, const mp_islands *isl, const mp_islands_plan *ip,
                      const mp_islands_estimate *e)
{
    const mp_plan *p = &ip->plan;
    char b1[32], b2[32], b3[32];
    int64_t ngpus = 0;
    for (int i = 0; i < isl->n; i++)
        ngpus += isl->island[i].cluster.num_gpus;
    mp_param_count pc;
    mp_model_params(m, 1, &pc);
    fprintf(f, "model    %s: %.2fB parameters, %lld layers, hidden %lld\n", m->key[0] ? m->key : m->name,
            (double)pc.total / 1e9, (long long)m->layers, (long long)m->hidden);
    fprintf(f, "islands  %s: %d island%s, %lld GPUs\n", isl->name, isl->n, isl->n == 1 ? "" : "s",
            (long long)ngpus);
    fprintf(f, "scheme   sync=%s", mp_sync_name(e->sync));
    if (e->sync == MP_SYNC_DILOCO || e->sync == MP_SYNC_FL)
        fprintf(f, ", every %lld inner steps", (long long)e->inner_steps);
    if (e->sync != MP_SYNC_PP)
        fprintf(f, ", exchange %s, %s on the wire", e->nislands > 1 ? mp_exchange_name(e->exchange) : "none",
                e->compress == MP_COMPRESS_NONE ? "fp32" : mp_compress_name(e->compress));
    if (e->fragments > 1)
        fprintf(f, ", %lld fragments", (long long)e->fragments);
    if (e->nislands > 1 && e->buckets > 1)
        fprintf(f, ", %lld buckets one after the other", (long long)e->buckets);
    if (e->nislands > 1 && e->transport != MP_TRANSPORT_STREAM)
        fprintf(f, ", %s transport", mp_transport_name(e->transport));
    if (e->nislands > 1 && e->ring != MP_RING_DEFAULT)
        fprintf(f, ", ring order %s", mp_ring_name(e->ring));
    if (e->sync == MP_SYNC_DILOCO || e->sync == MP_SYNC_FL)
        fprintf(f, e->overlap_steps ? ", overlapped with %lld inner steps" : ", blocking",
                (long long)e->overlap_steps);
    fprintf(f, "\n");
    if (p->doc_len > 0)
        fprintf(f, "         sequences pack documents of %lld tokens under a document mask "
                   "(%.0f keys per query)\n", (long long)p->doc_len, mp_model_keys_per_query(m, p->seq, p->doc_len));
    if (e->sync == MP_SYNC_PP)
        fprintf(f, "         every island runs the whole batch (%lld sequences) through its layers\n",
                (long long)e->global_batch_seqs);
    else
        fprintf(f, "         global batch %lld sequences per %sstep (plan gb %lld), split %s\n",
                (long long)e->global_batch_seqs, e->steps_per_period > 1 ? "inner " : "",
                (long long)p->gb, split_name(&ip->xsync));
    fprintf(f, "\n%s\n\n", e->feasible ? "FEASIBLE: every island's plan fits in memory"
                                       : "NOT FEASIBLE:");
    for (int i = 0; i < e->nreasons; i++)
        fprintf(f, "  %s\n", e->reasons[i]);
    if (!e->feasible)
        fprintf(f, "\n");

    fprintf(f, "per island          GPUs  gpu              %s  step s   tokens/s  compute-util   MFU   wait  WAN out/%s   egress $/h  mem GiB\n",
            e->sync == MP_SYNC_PP ? "layers" : " batch", e->steps_per_period > 1 ? "sync" : "step");
    for (int i = 0; i < e->nislands; i++) {
        const mp_island_result *r = &e->island[i];
        fprintf(f, "  %-16.16s %6lld  %-15.15s %6lld %7.3f %10.4g %12.1f%% %5.1f%% %5.1f%% %11s %12.4g %8.1f%s\n",
                r->name, (long long)r->gpus, r->gpu, (long long)(e->sync == MP_SYNC_PP ? r->layers : r->batch_seqs),
                r->step_s, r->tokens_per_s, 100.0 * r->compute_util, 100.0 * r->mfu,
                100.0 * r->wait_s / e->period_s, human_bytes(r->wan_out_bytes, b1, sizeof b1),
                r->egress_usd / e->period_s * 3600.0, r->memory_bytes / 1073741824.0,
                r->feasible ? "" : "  (does not fit)");
    }
    fprintf(f, "  %-16s %6lld  %-15s %6lld %7.3f %10.4g %12.1f%% %5.1f%%        %11s %12.4g\n", "total",
            (long long)ngpus, "", (long long)(e->sync == MP_SYNC_PP ? m->layers : e->global_batch_seqs),
            e->step_s, e->tokens_per_s, 100.0 * e->compute_util, 100.0 * e->mfu,
            human_bytes(e->wan_bytes, b1, sizeof b1), e->egress_usd_per_hour);
    fprintf(f, "  (step s: one %sstep of the island alone; compute-util: share of wall-clock in training "
               "steps; wait: idle for slower islands)\n", e->steps_per_period > 1 ? "inner " : "");

    if (e->nflows) {
        fprintf(f, "\nWAN links in use          rate MB/s  limit      bytes/%s   bytes/step   bytes/hour   busy s/%s   $/%s   $/hour\n",
                e->steps_per_period > 1 ? "sync" : "step", e->steps_per_period > 1 ? "sync" : "step",
                e->steps_per_period > 1 ? "sync" : "step");
        for (int j = 0; j < e->nflows; j++) {
            const mp_wan_flow *w = &e->flow[j];
            char pair[100];
            snprintf(pair, sizeof pair, "%s<->%s", isl->island[w->a].name, isl->island[w->b].name);
            fprintf(f, "  %-22.22s %11.4g  %-10s %12s %12s %12s %11.3f %7.3g %8.4g%s\n", pair, w->rate_Bps / 1e6,
                    w->limit ? w->limit : "line",
                    human_bytes(w->bytes, b1, sizeof b1),
                    human_bytes(w->bytes / (double)e->steps_per_period, b2, sizeof b2),
                    human_bytes(w->bytes / e->period_s * 3600.0, b3, sizeof b3), w->busy_s, w->usd,
                    w->usd / e->period_s * 3600.0, j == e->bottleneck_flow ? "  <- slowest" : "");
        }
    }
    fprintf(f, "\nsynchronization  ");
    if (e->nislands == 1)
        fprintf(f, "none (one island)\n");
    else if (e->sync == MP_SYNC_PP)
        fprintf(f, "activations of one step over the slowest boundary: %.3f s; %.3f s hidden behind "
                   "compute, %.3f s exposed (with the pipeline fill over the WAN)\n",
                e->sync_s, e->sync_hidden_s, e->sync_exposed_s);
    else {
        fprintf(f, "%.3f s each (compression %.3f s), %s; %.3f s hidden behind compute, %.3f s exposed "
                   "per %s\n", e->sync_s, e->sync_compress_s,
                e->steps_per_period > 1 ? "once per period" : "every step",
                e->sync_hidden_s, e->sync_exposed_s, e->steps_per_period > 1 ? "period" : "step");
        if (e->exchange == MP_EXCH_ROTATE)
            fprintf(f, "                 rotating partners: rounds take %.3f to %.3f s\n",
                    e->rotate_min_s, e->rotate_max_s);
    }
    fprintf(f, "period           %.2f s = %lld %sstep%s + exposed WAN (%.4g s per step)\n", e->period_s,
            (long long)e->steps_per_period, e->steps_per_period > 1 ? "inner " : "",
            e->steps_per_period > 1 ? "s" : "", e->step_s);
    fprintf(f, "\nthroughput (measured tokens)\n");
    fprintf(f, "  tokens/s          %.4g  (%.4g per GPU)\n", e->tokens_per_s, e->tokens_per_s_per_gpu);
    fprintf(f, "  compute utilization %.1f%% of wall-clock in training steps\n", 100.0 * e->compute_util);
    fprintf(f, "  MFU               %.1f%% over wall-clock, %.1f%% in training steps\n", 100.0 * e->mfu,
            100.0 * e->mfu_in_steps);
    fprintf(f, "                    (%s)\n", MP_MFU_CONVENTION);
    fprintf(f, "  WAN               %s per step, %s per hour, %.4g bytes per token",
            human_bytes(e->wan_bytes / (double)e->steps_per_period, b1, sizeof b1),
            human_bytes(e->wan_bytes_per_hour, b2, sizeof b2), e->wan_bytes_per_token);
    if (e->dp_bytes_per_token > 0 && e->wan_bytes_per_token > 0 &&
        e->dp_bytes_per_token > 1.01 * e->wan_bytes_per_token)
        fprintf(f, " (%.0fx less than fp32 synchronous DP)", e->dp_bytes_per_token / e->wan_bytes_per_token);
    fprintf(f, "\n  egress            $%.4g per hour, $%.4g per million tokens\n", e->egress_usd_per_hour,
            e->egress_usd_per_mtoken);
    fprintf(f, "\nbound: %s\n", e->bottleneck);
    fprintf(f, "\nconvergence (separate from the measured throughput above)\n");
    fprintf(f, "  tokens-to-quality factor %.3g (%s)\n", e->quality_factor, e->quality_source);
    fprintf(f, "  tokens/s at the quality of synchronous DP: %.4g = measured / factor%s\n",
            e->tokens_per_s_at_quality, e->quality_published ? "" : "  [not a published figure]");
}

/* The in-island prediction of island i (its plan with its batch, or with sync=pp its block of
 * layers), as `predict --json` writes it for one cluster; NULL if it cannot be redone. */
static json_t *island_estimate_json(const mp_model *m, const mp_island *x, const mp_islands_plan *ip,
                                    const mp_island_result *r, int pp)
{
    mp_model sub = *m;
    if (pp)
        sub.layers = r->layers;
    mp_islands_plan iq = *ip;
    mp_plan q = ip->plan;
    q.gb = r->batch_seqs;
    mp_diag d = {0};
    mp_estimate *est = malloc(sizeof *est);
    json_t *j = NULL;
    if (est && mp_plan_resolve(&q, &sub, x->cluster.num_gpus, &d) == MP_OK &&
        mp_estimate_plan(&sub, &x->cluster, &q, NULL, est, &d) == MP_OK) {
        char *txt = mp_report_estimate_json(&sub, &x->cluster, &q, est);
        if (txt) {
            json_error_t err;
            j = json_loads(txt, 0, &err);
            free(txt);
        }
        /* The island's plan string with the keys across islands, as the islands plan says it. */
        char ps[1024];
        iq.plan = q;
        mp_islands_plan_format(&iq, ps, sizeof ps);
        if (j)
            json_object_set_new(j, "plan", json_string(ps));
    }
    free(est);
    return j;
}

json_t *cli_islands_json(const mp_model *m, const mp_islands *isl, const mp_islands_plan *ip,
                         const mp_islands_estimate *e)
{
    json_t *o = json_object();
    json_object_set_new(o, "model", json_string(m->key[0] ? m->key : m->name));
    json_object_set_new(o, "cluster", json_string(isl->name));
    json_object_set_new(o, "feasible", json_boolean(e->feasible));
    json_t *rs = json_array();
    for (int i = 0; i < e->nreasons; i++)
        json_array_append_new(rs, json_string(e->reasons[i]));
    json_object_set_new(o, "reasons", rs);
    json_t *sy = json_object();
    json_object_set_new(sy, "scheme", json_string(mp_sync_name(e->sync)));
    json_object_set_new(sy, "exchange", json_string(e->nislands > 1 && e->sync != MP_SYNC_PP
                                                        ? mp_exchange_name(e->exchange) : "none"));
    json_object_set_new(sy, "compress", json_string(mp_compress_name(e->compress)));
    json_object_set_new(sy, "inner_steps", json_integer(e->inner_steps));
    json_object_set_new(sy, "fragments", json_integer(e->fragments));
    json_object_set_new(sy, "overlap_steps", json_integer(e->overlap_steps));
    json_object_set_new(sy, "buckets", json_integer(e->buckets));
    json_object_set_new(sy, "transport", json_string(mp_transport_name(e->transport)));
    json_object_set_new(sy, "ring", json_string(mp_ring_name(e->ring)));
    json_object_set_new(sy, "time_s", json_real(e->sync_s));
    json_object_set_new(sy, "compress_s", json_real(e->sync_compress_s));
    json_object_set_new(sy, "hidden_s_per_period", json_real(e->sync_hidden_s));
    json_object_set_new(sy, "exposed_s_per_period", json_real(e->sync_exposed_s));
    if (e->exchange == MP_EXCH_ROTATE) {
        json_object_set_new(sy, "rotate_min_s", json_real(e->rotate_min_s));
        json_object_set_new(sy, "rotate_max_s", json_real(e->rotate_max_s));
    }
    json_object_set_new(o, "sync", sy);
    json_object_set_new(o, "global_batch_seqs", json_integer(e->global_batch_seqs));
    json_object_set_new(o, "steps_per_period", json_integer(e->steps_per_period));
    json_object_set_new(o, "period_s", json_real(e->period_s));
    json_object_set_new(o, "step_s", json_real(e->step_s));
    json_object_set_new(o, "tokens_per_s", json_real(e->tokens_per_s));
    json_object_set_new(o, "tokens_per_s_per_gpu", json_real(e->tokens_per_s_per_gpu));
    json_object_set_new(o, "mfu", json_real(e->mfu));
    json_object_set_new(o, "mfu_in_steps", json_real(e->mfu_in_steps));
    json_object_set_new(o, "hfu", json_real(e->hfu));
    json_object_set_new(o, "model_tflops_per_gpu", json_real(e->model_tflops_per_gpu));
    json_object_set_new(o, "hardware_tflops_per_gpu", json_real(e->hardware_tflops_per_gpu));
    json_object_set_new(o, "compute_util", json_real(e->compute_util));
    json_object_set_new(o, "wan_bytes_per_period", json_real(e->wan_bytes));
    json_object_set_new(o, "wan_bytes_per_step", json_real(e->wan_bytes / (double)e->steps_per_period));
    json_object_set_new(o, "wan_bytes_per_hour", json_real(e->wan_bytes_per_hour));
    json_object_set_new(o, "wan_bytes_per_token", json_real(e->wan_bytes_per_token));
    json_object_set_new(o, "dp_fp32_bytes_per_token", json_real(e->dp_bytes_per_token));
    json_object_set_new(o, "egress_usd_per_period", json_real(e->egress_usd));
    json_object_set_new(o, "egress_usd_per_hour", json_real(e->egress_usd_per_hour));
    json_object_set_new(o, "egress_usd_per_mtoken", json_real(e->egress_usd_per_mtoken));
    json_object_set_new(o, "bound", json_string(e->nislands == 1 ? "compute" : e->comm_bound ? "communication" : "compute"));
    json_object_set_new(o, "bottleneck", json_string(e->bottleneck));
    json_t *q = json_object();
    json_object_set_new(q, "tokens_to_quality_factor", json_real(e->quality_factor));
    json_object_set_new(q, "published", json_boolean(e->quality_published));
    json_object_set_new(q, "source", json_string(e->quality_source));
    json_object_set_new(q, "tokens_per_s_at_quality", json_real(e->tokens_per_s_at_quality));
    json_object_set_new(o, "quality", q);
    json_t *ia = json_array();
    double worst_mem = -1.0, slowest = -1.0;
    for (int i = 0; i < e->nislands; i++) {
        const mp_island_result *r = &e->island[i];
        json_t *x = json_object();
        /* The island's own prediction (no WAN); the DESIGN.md keys memory_bytes and time_s at the
         * top are the most loaded island's and the slowest island's, time_s with the exposed WAN
         * time per step added as wan_exposed. */
        json_t *est = island_estimate_json(m, &isl->island[i], ip, r, e->sync == MP_SYNC_PP);
        if (est) {
            if (r->memory_bytes > worst_mem && json_object_get(est, "memory_bytes")) {
                worst_mem = r->memory_bytes;
                json_object_set(o, "memory_bytes", json_object_get(est, "memory_bytes"));
            }
            if (r->step_s > slowest && json_object_get(est, "time_s")) {
                slowest = r->step_s;
                json_t *t = json_deep_copy(json_object_get(est, "time_s"));
                json_object_set_new(t, "wan_exposed", json_real(e->sync_exposed_s / (double)e->steps_per_period));
                json_object_set_new(o, "time_s", t);
            }
            json_object_set_new(x, "estimate", est);
        }
        json_object_set_new(x, "name", json_string(r->name));
        json_object_set_new(x, "gpu", json_string(r->gpu));
        json_object_set_new(x, "gpus", json_integer(r->gpus));
        json_object_set_new(x, "batch_seqs", json_integer(r->batch_seqs));
        json_object_set_new(x, "layers", json_integer(r->layers));
        json_object_set_new(x, "feasible", json_boolean(r->feasible));
        json_object_set_new(x, "reason", json_string(r->reason));
        json_object_set_new(x, "memory_bytes", json_real(r->memory_bytes));
        json_object_set_new(x, "memory_capacity_bytes", json_real(r->memory_capacity_bytes));
        json_object_set_new(x, "step_s", json_real(r->step_s));
        json_object_set_new(x, "train_s_per_period", json_real(r->train_s));
        json_object_set_new(x, "compute_s_per_period", json_real(r->compute_s));
        json_object_set_new(x, "wait_s_per_period", json_real(r->wait_s));
        json_object_set_new(x, "sync_exposed_s_per_period", json_real(r->sync_exposed_s));
        json_object_set_new(x, "tokens_per_s", json_real(r->tokens_per_s));
        json_object_set_new(x, "compute_util", json_real(r->compute_util));
        json_object_set_new(x, "mfu", json_real(r->mfu));
        json_object_set_new(x, "wan_out_bytes_per_period", json_real(r->wan_out_bytes));
        json_object_set_new(x, "egress_usd_per_period", json_real(r->egress_usd));
        json_object_set_new(x, "egress_usd_per_hour", json_real(r->egress_usd / e->period_s * 3600.0));
        json_array_append_new(ia, x);
    }
    json_object_set_new(o, "islands", ia);
    json_t *la = json_array();
    for (int j = 0; j < e->nflows; j++) {
        const mp_wan_flow *w = &e->flow[j];
        json_t *x = json_object();
        json_object_set_new(x, "a", json_string(isl->island[w->a].name));
        json_object_set_new(x, "b", json_string(isl->island[w->b].name));
        json_object_set_new(x, "rate_Bps", json_real(w->rate_Bps));
        json_object_set_new(x, "limit", json_string(w->limit ? w->limit : "line"));
        json_object_set_new(x, "latency_s", json_real(isl->link[w->a][w->b].latency_s));
        json_object_set_new(x, "loss_frac", json_real(isl->link[w->a][w->b].loss_frac));
        json_object_set_new(x, "bytes_per_period", json_real(w->bytes));
        json_object_set_new(x, "bytes_per_step", json_real(w->bytes / (double)e->steps_per_period));
        json_object_set_new(x, "bytes_per_hour", json_real(w->bytes / e->period_s * 3600.0));
        json_object_set_new(x, "busy_s_per_period", json_real(w->busy_s));
        json_object_set_new(x, "usd_per_period", json_real(w->usd));
        json_object_set_new(x, "usd_per_hour", json_real(w->usd / e->period_s * 3600.0));
        json_object_set_new(x, "slowest", json_boolean(j == e->bottleneck_flow));
        json_array_append_new(la, x);
    }
    json_object_set_new(o, "links", la);
    return o;
}

int cli_predict_islands(const mp_catalog *cat, const mp_model *m, const char *spec,
                        const mp_cluster *cl, const char *plan_text, int json, double quality)
{
    mp_islands *isl = NULL;
    int rc = 0;
    mp_diag d = {0};
    mp_islands_estimate *e = NULL;
    if (spec) {
        if ((rc = cli_load_islands(cat, spec, 0, NULL, &isl)))
            return rc;
    } else {
        mp_status st = mp_islands_from_cluster(cl, &isl, &d);
        if (st != MP_OK) {
            cli_print_diag(&d);
            return cli_exit_for(st);
        }
    }
    mp_islands_plan p;
    mp_islands_plan_init_default(&p);
    mp_status st = mp_islands_plan_parse(plan_text, &p, &d);
    if (st != MP_OK) {
        fprintf(stderr, "meshplan: the plan cannot be formed:\n");
        rc = cli_exit_for(st);
        goto done;
    }
    e = malloc(sizeof *e);
    if (!e) {
        rc = EXIT_INTERNAL;
        goto done;
    }
    mp_islands_opts o;
    mp_islands_opts_init(&o);
    o.quality_factor = quality;
    st = mp_islands_predict(m, isl, &p, &o, e, &d);
    if (st != MP_OK) {
        fprintf(stderr, "meshplan: the plan cannot be run on these islands:\n");
        rc = cli_exit_for(st);
        goto done;
    }
    if (json) {
        if ((rc = cli_print_json(cli_islands_json(m, isl, &p, e), JSON_INDENT(2) | JSON_REAL_PRECISION(10))))
            goto done;
    } else {
        cli_islands_text(stdout, m, isl, &p, e);
    }
done:
    cli_print_diag(&d);
    free(e);
    mp_islands_destroy(isl);
    return rc;
}
