/* src/serve/report_serve.c — serve --json (one object, keys in docs/serve.md) and the request
 * timeline as a Chrome / Perfetto trace (JSON object format, "traceEvents": complete events,
 * ph "X", times in microseconds; one process per replica, one thread per request slot; and counters,
 * ph "C", of each replica's KV use and running / waiting sequences at every step). */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshplan/serve.h"

static json_t *dist_json(const mp_serve_dist *d)
{
    return json_pack("{s:f,s:f,s:f,s:f,s:f}", "mean", d->mean, "p50", d->p50, "p90", d->p90, "p99",
                     d->p99, "max", d->max);
}

static const char *pool_name(int p)
{
    return p == 1 ? "prefill" : p == 2 ? "decode" : "colocated";
}

static json_t *replicas_json(const mp_serve_result *r)
{
    json_t *a = json_array();
    for (int i = 0; a && i < r->nreplicas; i++) {
        const mp_serve_replica *x = &r->replica[i];
        json_array_append_new(a, json_pack("{s:i,s:s,s:I,s:f,s:{s:f,s:f},s:I,s:I,s:f}", "replica", i,
                                           "pool", pool_name(x->pool), "requests", (json_int_t)x->requests,
                                           "busy_frac", x->busy_frac, "kv_use", "mean", x->kv_use_mean, "max",
                                           x->kv_use_max, "preemptions", (json_int_t)x->preemptions, "steps",
                                           (json_int_t)x->steps, "ttft_p99_s", x->ttft_p99_s));
    }
    return a;
}

char *mp_report_serve_json(const mp_serve_result *r)
{
    char plan[512];
    mp_serve_plan_format(&r->opts, plan, sizeof plan);
    json_t *o = json_pack("{s:s,s:s,s:b,s:s,s:I,s:I,s:I,s:f}", "plan", plan, "engine_version",
                          r->engine.version, "feasible", r->feasible, "reason", r->reason, "requests",
                          (json_int_t)r->requests, "measured", (json_int_t)r->measured, "gpus",
                          (json_int_t)r->gpus, "span_s", r->span_s);
    if (!o)
        return NULL;
    json_object_set_new(o, "ttft_s", dist_json(&r->ttft_s));
    json_object_set_new(o, "tpot_s", dist_json(&r->tpot_s));
    json_object_set_new(o, "e2e_s", dist_json(&r->e2e_s));
    json_object_set_new(o, "queue_s", dist_json(&r->queue_s));
    json_object_set_new(o, "itl_max_s", dist_json(&r->itl_max_s));
    json_object_set_new(o, "output_tokens_per_s", json_real(r->output_tokens_per_s));
    json_object_set_new(o, "input_tokens_per_s", json_real(r->input_tokens_per_s));
    json_object_set_new(o, "requests_per_s", json_real(r->requests_per_s));
    json_object_set_new(o, "goodput_requests_per_s", json_real(r->goodput_requests_per_s));
    json_object_set_new(o, "slo", json_pack("{s:f,s:f,s:f}", "ttft_s", r->opts.slo_ttft_s, "tpot_s",
                                            r->opts.slo_tpot_s, "attained_frac", r->slo_attained_frac));
    json_object_set_new(o, "kv_use", json_pack("{s:f,s:f}", "mean", r->kv_use_mean, "max", r->kv_use_max));
    json_object_set_new(o, "kv_blocks_per_replica", json_integer(r->kv_blocks));
    json_object_set_new(o, "max_concurrency", json_integer(r->max_concurrency));
    json_object_set_new(o, "preemptions", json_integer(r->preemptions));
    json_object_set_new(o, "swaps", json_integer(r->swaps));
    json_object_set_new(o, "scheduler", json_pack("{s:I,s:I,s:s,s:b}", "max_seqs", (json_int_t)r->opts.max_seqs,
                                                  "chunk_tokens", (json_int_t)r->opts.chunk_tokens, "preempt",
                                                  r->opts.preempt == MP_PREEMPT_SWAP ? "swap" : "recompute",
                                                  "prefill_first", r->opts.prefill_first));
    json_object_set_new(o, "power_w", json_real(r->power_w));
    json_object_set_new(o, "energy_j_per_mtoken", json_real(r->energy_j_per_mtoken));
    json_object_set_new(o, "usd_per_mtoken", json_real(r->usd_per_mtoken));
    json_object_set_new(o, "infer_batch1", json_pack("{s:f,s:f}", "ttft_s", r->infer_ttft_s, "tpot_s", r->infer_tpot_s));
    if (r->opts.attn_dp)
        json_object_set_new(o, "expert_parallel", json_pack("{s:i,s:f}", "ep", r->opts.plan.ep,
                                                            "a2a_s_per_step", r->a2a_s_per_step));
    if (r->opts.disaggregate)
        json_object_set_new(
            o, "kv_transfer",
            json_pack("{s:f,s:s,s:s,s:f,s:f,s:f,s:b,s:f,s:f,s:b}", "bytes_per_request",
                      r->kv_transfer.bytes_per_request, "link", r->kv_transfer.link, "tier", r->kv_transfer.tier,
                      "s_per_request", r->kv_transfer.s_per_request, "wait_s_mean", r->kv_transfer.wait_s_mean,
                      "exposed_s_mean", r->kv_transfer.exposed_s_mean, "hidden", r->kv_transfer.hidden,
                      "fabric_load_frac", r->kv_transfer.fabric_load_frac, "colocated_goodput_requests_per_s",
                      r->kv_transfer.colocated_goodput, "pays", r->kv_transfer.pays));
    if (r->opts.disaggregate) {
        char p[32], dd[32];
        snprintf(p, sizeof p, "tp%dx%d", r->opts.prefill_tp, r->opts.prefill_dp);
        snprintf(dd, sizeof dd, "tp%dx%d", r->opts.decode_tp, r->opts.decode_dp);
        json_t *kt = json_object_get(o, "kv_transfer");
        json_object_set_new(kt, "prefill", json_string(p));
        json_object_set_new(kt, "decode", json_string(dd));
        json_object_set_new(kt, "verdict", json_string(r->kv_transfer.verdict));
        json_object_set_new(kt, "colocated_ttft_p99_s", json_real(r->kv_transfer.colocated_ttft_p99_s));
        json_object_set_new(kt, "colocated_tpot_p99_s", json_real(r->kv_transfer.colocated_tpot_p99_s));
    }
    json_object_set_new(o, "replicas", replicas_json(r));
    json_t *as = json_array();
    for (int i = 0; as && i < r->nassumed; i++)
        json_array_append_new(as, json_string(r->assumed[i]));
    json_object_set_new(o, "assumed", as);
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    json_decref(o);
    return s;
}

/* ---- Chrome trace ---------------------------------------------------------------------------- */

typedef struct {
    char *buf;
    size_t n, cap;
    int fail;
} sbuf;

static void put(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sbuf *b, const char *fmt, ...)
{
    if (b->fail)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->buf + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->fail = 1;
            return;
        }
        if ((size_t)k < b->cap - b->n) {
            b->n += (size_t)k;
            return;
        }
        size_t cap = b->cap * 2 + (size_t)k + 1;
        char *nb = realloc(b->buf, cap);
        if (!nb) {
            b->fail = 1;
            return;
        }
        b->buf = nb;
        b->cap = cap;
    }
}

static void slice(sbuf *b, int *first, const char *name, int pid, int64_t tid, double t0, double t1, int64_t req)
{
    if (!(t1 > t0))
        return;
    put(b, "%s{\"name\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%lld,\"ts\":%.3f,\"dur\":%.3f,"
           "\"args\":{\"request\":%lld}}", *first ? "" : ",\n", name, pid, (long long)tid, t0 * 1e6,
        (t1 - t0) * 1e6, (long long)req);
    *first = 0;
}

char *mp_report_serve_trace(const mp_serve_result *r)
{
    if (!r->timeline)
        return NULL;
    sbuf b = {malloc(1 << 16), 0, 1 << 16, 0};
    if (!b.buf)
        return NULL;
    b.buf[0] = '\0';
    int first = 1;
    put(&b, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
    for (int i = 0; i < r->nreplicas; i++) {
        put(&b, "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"replica %d (%s)\"}}",
            first ? "" : ",\n", i, i, pool_name(r->replica[i].pool));
        first = 0;
    }
    /* request lanes: each request on thread (its index mod 64) of its replica's track: slices of one
     * lane may overlap when more than 64 requests are in flight, which the viewers stack */
    for (int64_t i = 0; i < r->requests; i++) {
        const mp_serve_timeline *t = &r->timeline[i];
        int64_t lane = i % 64;
        slice(&b, &first, "queued", t->replica, lane, t->arrival_s, t->start_s, i);
        slice(&b, &first, "prefill", t->replica, lane, t->start_s, t->first_token_s, i);
        if (t->decode_replica >= 0 && t->decode_replica != t->replica) {
            slice(&b, &first, "kv transfer", t->decode_replica, lane, t->transfer_start_s, t->transfer_end_s, i);
            slice(&b, &first, "decode", t->decode_replica, lane, fmax(t->first_token_s, t->transfer_end_s), t->done_s, i);
        } else {
            slice(&b, &first, "decode", t->replica, lane, t->first_token_s, t->done_s, i);
        }
    }
    /* the replicas' KV use and queues over time, as counters (one sample per step) */
    for (size_t i = 0; i < r->nsamples; i++) {
        const mp_serve_sample *x = &r->samples[i];
        put(&b, "%s{\"name\":\"kv_use_pct\",\"ph\":\"C\",\"pid\":%d,\"ts\":%.3f,\"args\":{\"kv\":%.2f}},\n"
                "{\"name\":\"sequences\",\"ph\":\"C\",\"pid\":%d,\"ts\":%.3f,\"args\":{\"running\":%lld,\"waiting\":%lld}}",
            first ? "" : ",\n", x->replica, x->t_s * 1e6, x->kv_use * 100, x->replica, x->t_s * 1e6,
            (long long)x->running, (long long)x->waiting);
        first = 0;
    }
    put(&b, "\n]}\n");
    if (b.fail) {
        free(b.buf);
        return NULL;
    }
    return b.buf;
}
