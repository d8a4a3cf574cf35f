/* src/serve/search.c — serve-search: which way of serving a request rate on a set of GPUs meets
 * the SLO with the most goodput. Each candidate is one full simulation (mp_serve_run) of the
 * same requests (same seed): colocated replicas of every tensor-parallel degree that divides the
 * GPUs and the heads (at most one node's GPUs, where TP's all-reduces stay on the scale-up link),
 * each at batch caps of 64 and the engine's default and chunks of 2048 and the engine's default;
 * and disaggregated splits (prefill on a quarter, a half or three quarters of the GPUs) for every
 * pair of those degrees. A candidate meets the SLO when its p99 TTFT and p99 TPOT are within it;
 * the best meets it at the highest goodput (within 1%: a tie, then fewer $ per million tokens). Exhaustive over
 * this small space (at most MP_SERVE_SEARCH_MAX candidates), deterministic in its order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "meshplan/serve.h"

static void record(mp_serve_search_result *out, const mp_serve_opts *o, const mp_serve_result *r)
{
    if (out->n >= MP_SERVE_SEARCH_MAX)
        return;
    mp_serve_candidate *x = &out->c[out->n++];
    memset(x, 0, sizeof *x);
    x->disaggregate = o->disaggregate;
    x->tp = o->plan.tp;
    x->dp = o->plan.dp;
    x->prefill_tp = o->prefill_tp;
    x->prefill_dp = o->prefill_dp;
    x->decode_tp = o->decode_tp;
    x->decode_dp = o->decode_dp;
    x->max_seqs = r->opts.max_seqs;
    x->chunk_tokens = r->opts.chunk_tokens;
    x->feasible = r->feasible;
    x->goodput_requests_per_s = r->goodput_requests_per_s;
    x->ttft_p99_s = r->ttft_s.p99;
    x->tpot_p99_s = r->tpot_s.p99;
    x->output_tokens_per_s = r->output_tokens_per_s;
    x->usd_per_mtoken = r->usd_per_mtoken;
    x->meets_slo = r->feasible && (!(o->slo_ttft_s > 0) || r->ttft_s.p99 <= o->slo_ttft_s) &&
                   (!(o->slo_tpot_s > 0) || r->tpot_s.p99 <= o->slo_tpot_s);
    int b = out->best;
    /* goodput within 1% is a tie (the simulation's own run-to-run spread at a rate every such
     * candidate sustains): then the cheaper per token wins */
    if (x->meets_slo && (b < 0 || x->goodput_requests_per_s > out->c[b].goodput_requests_per_s * 1.01 ||
                         (x->goodput_requests_per_s >= out->c[b].goodput_requests_per_s * 0.99 &&
                          x->usd_per_mtoken < out->c[b].usd_per_mtoken)))
        out->best = out->n - 1;
}

/* first: the first failing candidate's reasons, kept so that a search in which no candidate
 * forms says why (a --rate whose arrivals overflow the clock fails every candidate alike). */
static int try_one(const mp_model *m, const mp_cluster *c, const mp_serve_opts *o, mp_serve_result *r,
                   mp_serve_search_result *out, mp_diag *first)
{
    mp_diag d = {0};
    mp_status st = mp_serve_run(m, c, o, r, &d);
    if (st == MP_ERR_NOMEM)
        return 1;
    if (st == MP_OK)
        record(out, o, r);
    else if (first->count == 0)
        *first = d;
    mp_serve_result_free(r);
    return 0;
}

mp_status mp_serve_search(const mp_model *m, const mp_cluster *c, const mp_serve_opts *base,
                          mp_serve_search_result *out, mp_diag *diag)
{
    memset(out, 0, sizeof *out);
    out->best = -1;
    mp_serve_result *r = malloc(sizeof *r);
    if (!r)
        return MP_ERR_NOMEM;
    /* the base options must form a run (checks the rate, lengths and SLO once, with reasons) */
    mp_serve_opts o = *base;
    o.keep_timeline = 0;
    o.disaggregate = 0;
    o.attn_dp = 0;
    int tps[16], ntp = 0;
    int64_t cap_tp = c->gpus_per_node > 0 ? c->gpus_per_node : c->num_gpus;
    for (int tp = 1; tp <= cap_tp && tp <= c->num_gpus && ntp < 16; tp *= 2)
        if (m->heads % tp == 0 && c->num_gpus % tp == 0)
            tps[ntp++] = tp;
    const int64_t caps[2] = {64, 0}, chunks[2] = {2048, 0};
    int rc = 0;
    mp_diag first = {0};
    for (int i = 0; !rc && i < ntp; i++)
        for (int b = 0; !rc && b < 2; b++)
            for (int k = 0; !rc && k < 2; k++) {
                o.plan.tp = tps[i];
                o.plan.pp = 1;
                o.plan.dp = (int)(c->num_gpus / tps[i]);
                o.max_seqs = base->max_seqs > 0 ? base->max_seqs : caps[b];
                o.chunk_tokens = base->chunk_tokens > 0 ? base->chunk_tokens : chunks[k];
                if ((base->max_seqs > 0 && b) || (base->chunk_tokens > 0 && k))
                    continue;
                rc = try_one(m, c, &o, r, out, &first);
            }
    o.max_seqs = base->max_seqs;
    o.chunk_tokens = base->chunk_tokens;
    o.disaggregate = 1;
    o.plan.pp = 1;
    for (int q = 1; !rc && q <= 3; q++) {
        int64_t gp = c->num_gpus * q / 4, gd = c->num_gpus - gp;
        if (gp < 1 || gd < 1 || c->num_gpus * q % 4)
            continue;
        for (int i = 0; !rc && i < ntp; i++)
            for (int j = 0; !rc && j < ntp; j++) {
                if (gp % tps[i] || gd % tps[j])
                    continue;
                o.prefill_tp = tps[i];
                o.prefill_dp = (int)(gp / tps[i]);
                o.decode_tp = tps[j];
                o.decode_dp = (int)(gd / tps[j]);
                rc = try_one(m, c, &o, r, out, &first);
            }
    }
    free(r);
    if (rc)
        return MP_ERR_NOMEM;
    if (out->n == 0) {
        mp_diag_add(diag, "serve-search: no candidate could be formed on %lld GPUs (tp dividing the model's %lld heads "
                          "and the GPUs)%s", (long long)c->num_gpus, (long long)m->heads,
                    first.count ? "; the first candidate's reasons:" : "");
        if (first.count)
            mp_diag_add(diag, "%s", first.text);
        return MP_ERR_INPUT;
    }
    return MP_OK;
}
