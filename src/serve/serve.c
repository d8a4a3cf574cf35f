/* src/serve/serve.c — `meshplan serve`'s library side: the options, each pool's replica (its KV
 * blocks as the engine sizes them, through mp_infer_estimate; its step costs, step.c), the
 * simulation (sched.c), and the figures over the measured requests: latency percentiles,
 * throughput, goodput under the SLO, KV use, preemptions, energy and cost per million output
 * tokens, and for disaggregation the KV transfer and whether it pays against the same GPUs
 * colocated. Sources and definitions: docs/serve.md. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "meshplan/energy.h"
#include "meshplan/workload.h"
#include "serve/serve_internal.h"

void mp_serve_opts_init(mp_serve_opts *o)
{
    memset(o, 0, sizeof *o);
    mp_infer_plan_init(&o->plan);
    o->preempt = MP_PREEMPT_RECOMPUTE;
    o->arrivals = MP_ARRIVE_POISSON;
    o->rate_per_s = 1.0;
    o->burst_cv = 1.0;
    o->lengths = MP_LEN_FIXED;
    o->in = 1024;
    o->out = 256;
    o->requests = 2000;
    o->warmup_frac = 0.1;
    o->seed = 1;
}

void mp_serve_result_free(mp_serve_result *r)
{
    if (!r)
        return;
    free(r->timeline);
    r->timeline = NULL;
    free(r->samples);
    r->samples = NULL;
    r->nsamples = 0;
}

static void assume(mp_serve_result *r, const char *fmt, ...)
{
    if (r->nassumed >= MP_SERVE_MAX_ASSUMED)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->assumed[r->nassumed++], sizeof r->assumed[0], fmt, ap);
    va_end(ap);
}

static int check(const mp_model *m, const mp_cluster *c, const mp_serve_opts *o, mp_diag *d)
{
    int bad = 0;
    if ((unsigned)o->arrivals >= MP_ARRIVE_COUNT || (unsigned)o->lengths >= MP_LEN_COUNT ||
        (unsigned)o->preempt >= MP_PREEMPT_COUNT) { mp_diag_add(d, "serve: arrivals %d, lengths %d, preempt %d: expected a listed kind", o->arrivals, o->lengths, o->preempt); bad++; }
    if ((o->arrivals == MP_ARRIVE_POISSON || o->arrivals == MP_ARRIVE_GAMMA) && !(o->rate_per_s > 0 && o->rate_per_s <= 1e7)) { mp_diag_add(d, "rate = %g: expected requests per second in (0, 1e7]", o->rate_per_s); bad++; }
    if (o->arrivals == MP_ARRIVE_GAMMA && !(o->burst_cv > 0 && o->burst_cv <= 100)) { mp_diag_add(d, "burst = %g: expected a coefficient of variation in (0, 100]", o->burst_cv); bad++; }
    if (o->arrivals == MP_ARRIVE_TRACE && (!o->trace || o->ntrace < 1 || o->ntrace > 10000000)) { mp_diag_add(d, "trace: %zu requests: expected 1 .. 10^7", o->ntrace); bad++; }
    for (size_t i = 0; o->arrivals == MP_ARRIVE_TRACE && o->trace && i < o->ntrace && i < 10000000; i++)
        if (o->trace[i].in < 1 || o->trace[i].out < 1 || !(o->trace[i].arrival_s >= (i ? o->trace[i - 1].arrival_s : 0.0))) { mp_diag_add(d, "trace request %zu: expected in, out >= 1 and arrival_s >= the previous one's", i + 1); bad++; break; }
    if (o->arrivals != MP_ARRIVE_TRACE && (o->requests < 1 || o->requests > 10000000)) { mp_diag_add(d, "requests = %lld: expected 1 .. 10^7", (long long)o->requests); bad++; }
    if (o->lengths == MP_LEN_FIXED && (o->in < 1 || o->out < 1 || o->in > (1 << 24) || o->out > (1 << 24))) { mp_diag_add(d, "lengths: in %lld, out %lld: expected 1 .. 2^24", (long long)o->in, (long long)o->out); bad++; }
    if (o->lengths == MP_LEN_TABLE && (!o->table_in || !o->table_out || o->ntable < 1)) { mp_diag_add(d, "lengths: an empty table%s", ""); bad++; }
    if (!(o->warmup_frac >= 0 && o->warmup_frac <= 0.9)) { mp_diag_add(d, "warmup = %g: expected a fraction in [0, 0.9]", o->warmup_frac); bad++; }
    if (!(o->slo_ttft_s >= 0) || !(o->slo_tpot_s >= 0)) { mp_diag_add(d, "slo: expected times >= 0%s", ""); bad++; }
    if (!(o->swap_Bps >= 0) || !(o->price_gpu_hour_usd >= 0)) { mp_diag_add(d, "swap_Bps, price: expected >= 0%s", ""); bad++; }
    if (o->max_seqs < 0 || o->chunk_tokens < 0) { mp_diag_add(d, "max_seqs, chunk: expected >= 1%s", ""); bad++; }
    if (o->prefill_first != 0 && o->prefill_first != 1) { mp_diag_add(d, "prefill_first = %d: expected 0 or 1", o->prefill_first); bad++; }
    if (o->attn_dp) {
        int ep = o->plan.ep;
        if (!mp_model_is_moe(m) || o->plan.tp != 1 || o->plan.pp != 1 || ep < 2 || m->moe_experts % ep ||
            m->moe_experts / ep < m->moe_topk) {
            mp_diag_add(d, "plan: attn_dp = 1 with tp = %d, pp = %d, ep = %d: expected an MoE model, tp = pp = 1 and "
                        "ep >= 2 dividing its %lld experts with at least topk = %lld experts per GPU",
                        o->plan.tp, o->plan.pp, ep, (long long)m->moe_experts, (long long)m->moe_topk);
            bad++;
        }
        if (o->disaggregate) { mp_diag_add(d, "plan: attn_dp with --disaggregate: expected one of the two%s", ""); bad++; }
    }
    if (o->disaggregate) {
        int64_t g = (int64_t)o->prefill_tp * o->prefill_dp + (int64_t)o->decode_tp * o->decode_dp;
        if (g > c->num_gpus) { mp_diag_add(d, "disaggregate: %lld GPUs (prefill %d x %d + decode %d x %d): expected at most the cluster's %lld", (long long)g, o->prefill_tp, o->prefill_dp, o->decode_tp, o->decode_dp, (long long)c->num_gpus); bad++; }
        if (o->plan.pp != 1) { mp_diag_add(d, "plan.pp = %d with --disaggregate: expected 1", o->plan.pp); bad++; }
    }
    return bad;
}

/* Means of the run's lengths (for the pools' reference figures). */
static void means(const mp_serve_request *q, int64_t n, double *in, double *out, int64_t *longest, int64_t *longest_in)
{
    double a = 0, b = 0;
    *longest = *longest_in = 0;
    for (int64_t i = 0; i < n; i++) {
        a += (double)q[i].in;
        b += (double)q[i].out;
        if (q[i].in + q[i].out > *longest)
            *longest = q[i].in + q[i].out;
        if (q[i].in > *longest_in)
            *longest_in = q[i].in;
    }
    *in = a / n;
    *out = b / n;
}

/* One pool: tp x dp replicas from first_gpu; its KV blocks and step model; the closed-form
 * figures of `infer` at batch 1 and the mean lengths into *ir. */
static int pool_make(const mp_model *m, const mp_cluster *c, const mp_serve_opts *o, int kind, int tp,
                     int dp, int first_gpu, double mean_in, double mean_out, sv_pool *p,
                     mp_infer_result *ir, mp_diag *d)
{
    memset(p, 0, sizeof *p);
    mp_infer_plan plan = o->plan;
    const int ranks = o->attn_dp ? o->plan.ep : 1;
    mp_model mm = *m;
    plan.tp = o->attn_dp ? 1 : tp;
    plan.batch = 1;
    plan.in = (int64_t)fmax(1.0, llround(mean_in));
    plan.out = (int64_t)fmax(1.0, llround(mean_out));
    if (o->attn_dp) { /* one GPU of the replica: the attention whole, experts / ep */
        mm.moe_experts = m->moe_experts / ranks;
        plan.ep = 1;
    }
    mp_cluster cc = *c; /* the pool's own GPUs (the estimate checks tp x pp x dp against them) */
    cc.num_gpus = (int64_t)plan.tp * plan.pp * (o->attn_dp ? (int64_t)dp * ranks : dp);
    plan.dp = (int)(cc.num_gpus / ((int64_t)plan.tp * plan.pp));
    if (mp_infer_estimate(&mm, &cc, &plan, ir, d) != MP_OK)
        return 1;
    const mp_engine_profile *e = &ir->engine;
    p->kind = kind;
    p->replicas = dp;
    p->tp = o->attn_dp ? ranks : tp;
    p->gpus_per_replica = o->attn_dp ? ranks : tp * plan.pp;
    p->first_gpu = first_gpu;
    p->block_tokens = e->block_tokens > 0 ? e->block_tokens : 16;
    p->block_bytes_gpu = p->block_tokens * ir->kv_bytes_per_token_gpu;
    p->blocks = p->block_bytes_gpu > 0 ? (int64_t)floor(ir->kv_pool_bytes / p->block_bytes_gpu) * ranks : 0;
    p->max_seqs = (o->max_seqs > 0 ? o->max_seqs : (int64_t)e->max_batch) * ranks;
    p->chunk = (o->chunk_tokens > 0 ? o->chunk_tokens : (int64_t)e->max_batched_tokens) * ranks;
    /* host link for swap: PCIe x16 per GPU, 5.0 (32 GT/s) on GPUs with fp8 tensor cores (Hopper and
     * later), else 4.0 (16 GT/s); 128b/130b coding (PCI-SIG base specifications 4.0 and 5.0) */
    double lane_GTs = c->gpu.peak_flops_per_s[MP_DT_FP8] > 0 ? 32.0 : 16.0;
    p->swap_Bps = o->swap_Bps > 0 ? o->swap_Bps : lane_GTs * 1e9 * 16.0 * 128.0 / 130.0 / 8.0;
    mp_workload_opts wo;
    mp_workload_opts_init(&wo);
    double load = o->moe_imbalance >= 1 ? o->moe_imbalance : wo.moe_imbalance;
    mp_infer_plan sp = o->plan;
    sp.tp = o->attn_dp ? 1 : tp;
    sp.kv_frac = plan.kv_frac;
    sp.cuda_graphs = plan.cuda_graphs;
    if (sv_step_model_build(m, c, &sp, e, o->attn_dp, load, (double)p->chunk, (double)p->max_seqs, &p->sm, d))
        return 1;
    return 0;
}

/* Percentiles by linear interpolation between order statistics (numpy.percentile's default). */
static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static double pct(const double *v, int64_t n, double p)
{
    if (n <= 0)
        return 0.0;
    double h = (n - 1) * p / 100.0;
    int64_t lo = (int64_t)floor(h);
    int64_t hi = lo + 1 < n ? lo + 1 : lo;
    return v[lo] + (h - lo) * (v[hi] - v[lo]);
}
static void dist(double *v, int64_t n, mp_serve_dist *out)
{
    memset(out, 0, sizeof *out);
    if (n <= 0)
        return;
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += v[i];
    out->mean = s / n;
    out->p50 = pct(v, n, 50);
    out->p90 = pct(v, n, 90);
    out->p99 = pct(v, n, 99);
    out->max = v[n - 1];
}

/* Latency figures over the measured requests first .. n-1. */
static int latency(const sv_sim *s, int64_t first, const mp_serve_opts *o, mp_serve_result *r)
{
    int64_t n = s->n - first;
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (!v)
        return 1;
    const sv_req *q = s->req + first;
    int64_t k = 0, good = 0;
    double t0 = n > 0 ? q[0].arrival_s : 0, t1 = t0, out_tok = 0, in_tok = 0;
    for (int64_t i = 0; i < n; i++) {
        double tpot = q[i].out > 1 ? (q[i].done_s - q[i].first_s) / (double)(q[i].out - 1) : 0.0;
        double ttft = q[i].first_s - q[i].arrival_s;
        good += (!(o->slo_ttft_s > 0) || ttft <= o->slo_ttft_s) && (!(o->slo_tpot_s > 0) || tpot <= o->slo_tpot_s);
        t1 = fmax(t1, q[i].done_s);
        out_tok += (double)q[i].out;
        in_tok += (double)q[i].in;
    }
    /* Throughput in steady state: the output tokens the system emitted (every request's: the run's
     * counter) between the first completion of a measured request — by then the flow has ramped
     * up, a request's whole life after the warm-up — and the last arrival, after which the run
     * drains (a long benchmark run makes both ends negligible; a short simulation does not).
     * Where that window is short against the run (a closed batch: every request at t = 0), the
     * window [first measured arrival, last measured completion] instead. */
    int64_t em = 0, cm = 0, fc = 0; /* the counters at the last measured completion; the first one */
    for (int64_t i = 0; i < n; i++) {
        em = q[i].emitted_at_done > em ? q[i].emitted_at_done : em;
        cm = q[i].completed_at_done > cm ? q[i].completed_at_done : cm;
        fc = q[i].done_s < q[fc].done_s ? i : fc;
    }
    r->span_s = t1 - t0;
    r->arrivals_span_s = n > 0 ? q[n - 1].arrival_s - t0 : 0.0;
    double arr_span = n > 0 ? q[n - 1].arrival_s - q[fc].done_s : 0.0;
    double span = r->span_s > 0 ? r->span_s : 1e-9, toks, reqs;
    int steady = arr_span > 0.25 * span;
    if (steady) {
        span = arr_span;
        toks = (double)(q[n - 1].emitted_at_arrival - q[fc].emitted_at_done);
        reqs = 0;
    } else {
        toks = n > 0 ? (double)(em - q[0].emitted_at_arrival) : 0.0;
        reqs = n > 0 ? (double)(cm - q[0].completed_at_arrival) : 0.0;
    }
    r->output_tokens_per_s = toks / span;
    /* requests: completions in a window shorter than a request's life undercount; in steady
     * state the request rate is the token rate over the mean output length */
    r->requests_per_s = steady && out_tok > 0 ? r->output_tokens_per_s / (out_tok / n) : reqs / span;
    r->input_tokens_per_s = n > 0 ? r->requests_per_s * in_tok / n : 0.0;
    r->slo_attained_frac = n > 0 ? (double)good / n : 0.0;
    r->goodput_requests_per_s = r->requests_per_s * r->slo_attained_frac;
    for (int f = 0; f < 5; f++) {
        k = 0;
        for (int64_t i = 0; i < n; i++) {
            if (f == 1 && q[i].out < 2)
                continue;
            v[k++] = f == 0 ? q[i].first_s - q[i].arrival_s
                   : f == 1 ? (q[i].done_s - q[i].first_s) / (double)(q[i].out - 1)
                   : f == 2 ? q[i].done_s - q[i].arrival_s
                   /* the event clock is whole ns (sched.c), the arrival is not: a request
                    * admitted at its own arrival read -0.5 ns of queueing, and a mean of
                    * them printed "queue mean -0.00 ms" */
                   : f == 3 ? fmax(0.0, q[i].start_s - q[i].arrival_s) : q[i].itl_max_s;
        }
        dist(v, k, f == 0 ? &r->ttft_s : f == 1 ? &r->tpot_s : f == 2 ? &r->e2e_s : f == 3 ? &r->queue_s : &r->itl_max_s);
    }
    free(v);
    return 0;
}

/* Per-replica figures, energy and cost. TTFT p99 per replica from the measured requests grouped
 * by replica (a counting sort: O(n + replicas)). */
static int replicas(const sv_sim *s, int64_t first, const mp_serve_opts *o, mp_serve_result *r, mp_diag *d)
{
    int nrep = s->pool[0].replicas + (s->npools > 1 ? s->pool[1].replicas : 0);
    r->nreplicas = nrep;
    double E = 0, end = s->end_s > 0 ? s->end_s : 1e-9, tokens = 0;
    int64_t *off = calloc((size_t)nrep + 2, sizeof *off);
    double *v = malloc((size_t)(s->n - first + 1) * sizeof *v);
    if (!off || !v) {
        free(off);
        free(v);
        return 1;
    }
    for (int64_t i = 0; i < s->n; i++)
        tokens += (double)s->req[i].out;
    for (int64_t j = first; j < s->n; j++) {
        off[s->req[j].replica + 2]++;
        if (s->req[j].decode_replica >= 0 && s->req[j].decode_replica != s->req[j].replica)
            r->replica[s->req[j].decode_replica].requests++;
    }
    for (int i = 0; i < nrep; i++)
        off[i + 2] += off[i + 1];
    for (int64_t j = first; j < s->n; j++)
        v[off[s->req[j].replica + 1]++] = s->req[j].first_s - s->req[j].arrival_s;
    for (int i = 0; i < nrep; i++) {
        const sv_rep_stats *st = &s->rep[i];
        const sv_pool *p = &s->pool[i < s->pool[0].replicas ? 0 : 1];
        mp_serve_replica *x = &r->replica[i];
        int64_t k = off[i + 1] - off[i];
        x->pool = p->kind;
        x->requests += k;
        x->busy_frac = st->busy_s / end;
        x->kv_use_mean = st->kv_area / end;
        x->kv_use_max = st->kv_max;
        x->preemptions = st->preemptions;
        x->steps = st->steps;
        if (k > 0) {
            qsort(v + off[i], (size_t)k, sizeof *v, cmp_d);
            x->ttft_p99_s = pct(v + off[i], k, 99);
        }
        r->kv_use_mean += x->kv_use_mean / nrep;
        r->kv_use_max = fmax(r->kv_use_max, st->kv_max);
        r->preemptions += st->preemptions;
        r->swaps += st->swaps;
        /* steps at their power, the rest of the run at active idle (docs/energy.md) */
        E += st->energy_J + p->sm.gpus * p->sm.wait_W * fmax(0.0, end - st->busy_s);
    }
    free(off);
    free(v);
    r->power_w = E / (end * (double)r->gpus);
    r->energy_j_per_mtoken = E / tokens * 1e6;
    mp_cost_opts co;
    mp_cost_opts_init(&co);
    if (o->price_gpu_hour_usd > 0)
        co.price_gpu_hour_usd = o->price_gpu_hour_usd;
    mp_cost cost;
    if (mp_cost_compute(&co, (double)r->gpus, end, E, tokens, &cost, d) == MP_OK)
        r->usd_per_mtoken = cost.usd_per_mtoken;
    return 0;
}

static void transfer_figures(const sv_sim *s, int64_t first, mp_serve_result *r)
{
    int64_t n = 0;
    double b = 0, t = 0, w = 0, x = 0, busy = 0;
    for (int64_t i = first; i < s->n; i++) {
        const sv_req *q = &s->req[i];
        if (q->decode_replica < 0 || q->out < 2)
            continue;
        n++;
        b += q->tx_bytes;
        t += q->tx_alone_s;
        w += q->tx_wait_s;
        x += q->tx_exposed_s;
    }
    for (int i = s->pool[0].replicas; i < s->pool[0].replicas + s->pool[1].replicas; i++)
        busy += s->rep[i].ingress_busy_s;
    if (n > 0) {
        r->kv_transfer.bytes_per_request = b / n;
        r->kv_transfer.s_per_request = t / n;
        r->kv_transfer.wait_s_mean = w / n;
        r->kv_transfer.exposed_s_mean = x / n;
    }
    r->kv_transfer.hidden = r->kv_transfer.exposed_s_mean <= 0.1 * r->kv_transfer.s_per_request + 1e-12;
    r->kv_transfer.fabric_load_frac = s->end_s > 0 ? busy / (s->end_s * s->pool[1].replicas) : 0.0;
    snprintf(r->kv_transfer.link, sizeof r->kv_transfer.link, "%s", s->link);
    snprintf(r->kv_transfer.tier, sizeof r->kv_transfer.tier, "%s", s->tier);
}

static void timeline(const sv_sim *s, mp_serve_result *r)
{
    r->timeline = malloc((size_t)s->n * sizeof *r->timeline);
    for (int64_t i = 0; r->timeline && i < s->n; i++) {
        const sv_req *q = &s->req[i];
        r->timeline[i] = (mp_serve_timeline){q->arrival_s, q->start_s, q->first_s, q->done_s,
                                             q->tx_start_s, q->tx_end_s, q->in, q->out, q->replica,
                                             q->decode_replica, q->preempted};
    }
}

/* The link a transfer from prefill replica 0 to decode replica 0 crosses. */
static void transfer_link(const mp_cluster *c, sv_sim *s)
{
    mp_placement pl;
    int64_t stride = s->pool[1].first_gpu - s->pool[0].first_gpu;
    mp_group_place(c, (mp_group){2, stride > 0 ? stride : 1}, &pl);
    int t = pl.outer_tier >= 0 && pl.outer_tier < c->ntiers ? pl.outer_tier : 0;
    snprintf(s->link, sizeof s->link, "%s", c->tier[t].link);
    snprintf(s->tier, sizeof s->tier, "%s", c->tier[t].name);
}

static void assumptions(const mp_serve_opts *o, const mp_serve_result *r0, mp_serve_result *r)
{
    (void)r0;
    assume(r, "engine %s %s profile (data/engines.json); scheduler vLLM %s: chunk %lld tokens, "
              "max %lld sequences per replica", r->engine.key, r->engine.version,
           o->prefill_first ? "V0 default (prefill-only steps first)" : "V1-like",
           (long long)r->opts.chunk_tokens, (long long)r->opts.max_seqs);
    assume(r, "router: fewest outstanding requests; warm-up: the first %.0f%% of requests left out",
           o->warmup_frac * 100);
    if (o->lengths == MP_LEN_SHAREGPT && o->arrivals != MP_ARRIVE_TRACE)
        assume(r, "lengths: ShareGPT-like log-normal, means 161 in / 338 out (Kwon et al. 2023, Sec. 6.1)");
    if (o->preempt == MP_PREEMPT_SWAP)
        assume(r, "swap over PCIe x16 of the GPU's generation unless given");
    if (o->moe_imbalance >= 1)
        assume(r, "MoE busiest expert load x %.2f of the mean", o->moe_imbalance);
    if (o->attn_dp)
        assume(r, "attention DP: sequences spread evenly over the %d ranks of a replica; router GEMM over "
                  "the local experts", o->plan.ep);
    if (o->disaggregate)
        assume(r, "disaggregation: KV sent layer by layer during the prefill; ingress queues FIFO per "
                  "decode replica; first token emitted by the prefill replica");
    assume(r, "power: GPUs only; cost: rented GPU-hours + energy (energy.h defaults unless given)");
    if (o->arrivals != MP_ARRIVE_BATCH && r->arrivals_span_s < 5.0 * r->e2e_s.mean)
        assume(r, "SHORT RUN: arrivals span %.1f mean E2E (< 5): a rate above capacity may not show in "
                  "the percentiles yet; give more --requests", r->arrivals_span_s / r->e2e_s.mean);
}

static mp_status simulate(const mp_model *m, const mp_cluster *c, const mp_serve_opts *o,
                          mp_serve_request *rq, int64_t n, mp_serve_result *r, mp_diag *d)
{
    double mi, mo;
    int64_t longest, longest_in;
    means(rq, n, &mi, &mo, &longest, &longest_in);
    sv_sim *s = calloc(1, sizeof *s);
    if (!s)
        return MP_ERR_NOMEM;
    mp_infer_result *ir = malloc(sizeof *ir);
    mp_status st = ir ? MP_OK : MP_ERR_NOMEM;
    int bad = 0;
    if (st == MP_OK && o->disaggregate) {
        s->npools = 2;
        bad = pool_make(m, c, o, 1, o->prefill_tp, o->prefill_dp, 0, mi, mo, &s->pool[0], ir, d);
        r->infer_ttft_s = ir->ttft_s;
        bad = bad || pool_make(m, c, o, 2, o->decode_tp, o->decode_dp, o->prefill_tp * o->prefill_dp, mi, mo,
                               &s->pool[1], ir, d);
        r->infer_tpot_s = ir->tpot_s;
    } else if (st == MP_OK) {
        s->npools = 1;
        int ranks = o->attn_dp ? o->plan.ep : 1;
        int per = o->attn_dp ? ranks : o->plan.tp * o->plan.pp;
        int dp = o->plan.dp > 0 ? o->plan.dp : (int)(c->num_gpus / per);
        if (o->plan.dp <= 0 && c->num_gpus % per) {
            /* dp derived as GPUs / replica size: the spare GPUs would idle, which the plan
             * contract refuses (the same rule and message as infer, src/infer/infer.c) */
            char near[96];
            mp_nearest_multiples(c->num_gpus, per, near, sizeof near);
            mp_diag_add(d, "plan: %s = %d GPUs per replica does not divide the cluster's %lld GPUs: expected "
                        "--gpus a multiple of %d (e.g. %s), or a replica size dividing %lld (dp = GPUs / replica "
                        "size; spare GPUs are not left idle)", o->attn_dp ? "ep (attention DP)" : "tp x pp", per,
                        (long long)c->num_gpus, per, near, (long long)c->num_gpus);
            bad = 1;
        } else if (dp < 1 || (int64_t)dp * per != c->num_gpus) {
            mp_diag_add(d, "plan: %d replicas of %d GPUs: expected the cluster's %lld GPUs", dp, per, (long long)c->num_gpus);
            bad = 1;
        } else if (dp > MP_SERVE_MAX_REPLICAS) {
            mp_diag_add(d, "plan.dp = %d: expected at most %d replicas", dp, MP_SERVE_MAX_REPLICAS);
            bad = 1;
        } else {
            bad = pool_make(m, c, o, 0, o->plan.tp, dp, 0, mi, mo, &s->pool[0], ir, d);
            r->infer_ttft_s = ir->ttft_s;
            r->infer_tpot_s = ir->tpot_s;
            if (!bad && o->attn_dp)
                r->a2a_s_per_step = sv_a2a_s(m, c, ranks, (double)s->pool[0].max_seqs / ranks);
        }
    }
    if (st == MP_OK && bad)
        st = MP_ERR_INPUT;
    if (st == MP_OK) {
        const sv_pool *kvp = &s->pool[s->npools - 1];
        r->engine = ir->engine;
        int ranks = o->attn_dp ? o->plan.ep : 1;
        r->opts.max_seqs = s->pool[0].max_seqs / ranks; /* per attention rank, as given */
        r->opts.chunk_tokens = s->pool[0].chunk / ranks;
        r->opts.plan.dp = s->npools > 1 ? 0 : s->pool[0].replicas;
        r->opts.plan.kv_frac = ir->plan.kv_frac;
        r->opts.plan.cuda_graphs = ir->plan.cuda_graphs;
        r->kv_blocks = kvp->blocks;
        r->max_concurrency = ir->max_concurrency * (o->attn_dp ? o->plan.ep : 1);
        for (int i = 0; i < s->npools; i++)
            r->gpus += (int64_t)s->pool[i].replicas * s->pool[i].gpus_per_replica;
        int64_t cap = kvp->blocks * kvp->block_tokens, cap0 = s->pool[0].blocks * s->pool[0].block_tokens;
        if (longest > cap || longest_in > cap0) {
            snprintf(r->reason, sizeof r->reason, "a request of %lld tokens does not fit the KV pool of %lld tokens "
                     "per replica (weights %.1f GiB per GPU)", (long long)longest, (long long)(cap < cap0 ? cap : cap0),
                     ir->weights_bytes / 1073741824.0);
        } else {
            r->feasible = 1;
        }
    }
    free(ir);
    if (st == MP_OK && r->feasible) {
        int nrep = s->pool[0].replicas + (s->npools > 1 ? s->pool[1].replicas : 0);
        s->c = c;
        s->kv_bytes_per_token = mp_wl_kv_bytes_per_token(m, o->plan.kv == MP_KVQ_FP8 ? 1.0 : 2.0);
        s->layers = (double)m->layers;
        s->preempt = o->preempt;
        s->prefill_first = o->prefill_first;
        s->hook = o->hook;
        s->hook_ctx = o->hook_ctx;
        s->replica_hook = o->replica_hook;
        s->n = n;
        s->req = calloc((size_t)n, sizeof *s->req);
        s->rep = calloc((size_t)nrep, sizeof *s->rep);
        if (!s->req || !s->rep || nrep > MP_SERVE_MAX_REPLICAS)
            st = s->req && s->rep ? MP_ERR_INPUT : MP_ERR_NOMEM;
        for (int64_t i = 0; st == MP_OK && i < n; i++) {
            s->req[i].arrival_s = rq[i].arrival_s;
            s->req[i].in = rq[i].in;
            s->req[i].out = rq[i].out;
        }
        if (s->npools > 1)
            transfer_link(c, s);
        if (o->keep_timeline && !(s->samples = malloc(MP_SERVE_MAX_SAMPLES * sizeof *s->samples)))
            st = MP_ERR_NOMEM;
        if (st == MP_OK)
            st = sv_simulate(s, d);
        int64_t first = (int64_t)floor(o->warmup_frac * (double)n);
        first = first < n ? first : n - 1;
        r->requests = n;
        r->measured = n - first;
        if (st == MP_OK && (latency(s, first, o, r) || replicas(s, first, o, r, d)))
            st = MP_ERR_NOMEM;
        if (st == MP_OK && s->npools > 1)
            transfer_figures(s, first, r);
        if (st == MP_OK && o->keep_timeline) {
            timeline(s, r);
            r->samples = s->samples;
            r->nsamples = s->nsamples;
            s->samples = NULL;
        }
    }
    free(s->samples);
    free(s->req);
    free(s->rep);
    free(s);
    return st;
}

/* The same GPUs colocated (tp = the decode pool's, else the prefill pool's): does splitting pay? */
static void colocated_check(const mp_model *m, const mp_cluster *c, const mp_serve_opts *o, mp_serve_result *r)
{
    mp_serve_result *alt = malloc(sizeof *alt);
    if (!alt)
        return;
    mp_serve_opts a = *o;
    a.disaggregate = 0;
    a.keep_timeline = 0;
    a.plan.pp = 1;
    mp_cluster cc = *c;
    cc.num_gpus = r->gpus;
    int tps[2] = {o->decode_tp, o->prefill_tp};
    for (int i = 0; i < 2; i++) {
        mp_diag d = {0};
        a.plan.tp = tps[i];
        a.plan.dp = (int)(r->gpus / tps[i]);
        if (r->gpus % tps[i] || mp_serve_run(m, &cc, &a, alt, &d) != MP_OK || !alt->feasible)
            continue;
        r->kv_transfer.colocated_goodput = alt->goodput_requests_per_s;
        r->kv_transfer.colocated_ttft_p99_s = alt->ttft_s.p99;
        r->kv_transfer.colocated_tpot_p99_s = alt->tpot_s.p99;
        /* goodput within 1% is the simulation's spread (serve-search's tie rule): then the tails */
        double g = r->goodput_requests_per_s, ga = alt->goodput_requests_per_s;
        int lt = r->ttft_s.p99 < alt->ttft_s.p99, lp = r->tpot_s.p99 < alt->tpot_s.p99;
        r->kv_transfer.pays = g > 1.01 * ga || (g >= 0.99 * ga && lt && lp);
        snprintf(r->kv_transfer.verdict, sizeof r->kv_transfer.verdict, "%s",
                 r->kv_transfer.pays ? "pays"
                 : g < 0.99 * ga || (!lt && !lp) ? "does not pay"
                 : lp ? "same goodput: lower p99 TPOT, higher p99 TTFT"
                      : "same goodput: lower p99 TTFT, higher p99 TPOT");
        break;
    }
    free(alt);
}

/* Requests over the model's context (mp_model.context_len, its config's max_position_embeddings;
 * 0 = unknown, not checked): a sequence holds its prompt and every token it generates, and vLLM's
 * OpenAI server refuses prompt + max_tokens over max_model_len (vllm/entrypoints/openai/
 * serving_engine.py _validate_input). The run is refused, not those requests dropped, so that no
 * figure silently leaves part of the load out. Returns the number of requests over. */
static int64_t context_check(const mp_model *m, const mp_serve_opts *o, const mp_serve_request *q, int64_t n,
                             mp_diag *d)
{
    if (m->context_len <= 0)
        return 0;
    int64_t over = 0, first = -1;
    for (int64_t i = 0; i < n; i++)
        if (q[i].in + q[i].out > m->context_len && over++ == 0)
            first = i;
    if (over) {
        static const char *const what[MP_LEN_COUNT] = {"fixed", "table", "sharegpt"};
        const char *kind = o->arrivals == MP_ARRIVE_TRACE ? "the trace"
                           : (unsigned)o->lengths < MP_LEN_COUNT && what[o->lengths] ? what[o->lengths]
                                                                                   : "?";
        mp_diag_add(d, "lengths (%s): %lld of %lld requests over the context: request %lld has in + out = %lld + %lld "
                    "= %lld tokens: expected at most %s's context of %lld tokens (its config's "
                    "max_position_embeddings)", kind, (long long)over, (long long)n, (long long)first + 1,
                    (long long)q[first].in, (long long)q[first].out, (long long)(q[first].in + q[first].out),
                    m->key, (long long)m->context_len);
    }
    return over;
}

mp_status mp_serve_run(const mp_model *m, const mp_cluster *c, const mp_serve_opts *o,
                       mp_serve_result *r, mp_diag *d)
{
    memset(r, 0, sizeof *r);
    r->opts = *o;
    r->opts.trace = NULL;
    r->opts.table_in = r->opts.table_out = NULL;
    r->opts.hook = NULL;
    r->opts.hook_ctx = NULL;
    r->opts.replica_hook = NULL;
    if (check(m, c, o, d))
        return MP_ERR_INPUT;
    mp_serve_request *rq;
    int64_t n;
    mp_status st = sv_requests_make(o, &rq, &n, d);
    if (st != MP_OK)
        return st;
    if (context_check(m, o, rq, n, d)) {
        free(rq);
        return MP_ERR_INPUT;
    }
    st = simulate(m, c, o, rq, n, r, d);
    free(rq);
    if (st == MP_OK && r->feasible)
        assumptions(o, r, r);
    if (st == MP_OK && r->feasible && o->disaggregate)
        colocated_check(m, c, o, r);
    if (st != MP_OK)
        mp_serve_result_free(r);
    return st;
}
