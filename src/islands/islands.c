/* src/islands/islands.c — predict training across islands joined by WAN links (islands.h).
 *
 * Every island runs the plan on its own GPUs: the estimator (estimate.c) gives its step for its
 * share of the batch. What crosses the WAN depends on the scheme (plan key sync):
 *   hsdp    every step: the gradients all-reduced across islands (HSDP's replicate group),
 *           hiding behind the last micro-batch's backward as bucketed DDP does;
 *   diloco  every H inner steps: the pseudo-gradients (Douillard et al. 2023), blocking or, in
 *           N fragments overlapped with the next T inner steps, streaming (Douillard et al. 2025);
 *   fl      the same cadence through an aggregator island (Photon, Sani et al. 2024);
 *   pp      every step: activations forward and their gradients backward between consecutive
 *           islands, each holding a block of layers.
 * Exchanges: ring all-reduce over the best ring of islands, rotating pairwise averaging
 * (gossip over a round-robin of perfect matchings), or a star through the aggregator. Each WAN
 * link carries at most min(capacity, uplinks) x efficiency x (1 - load), and, with a TCP window,
 * flows x window / round trip (the bandwidth-delay product; RFC 7323 Sec. 1, Mathis et al. 1997).
 * docs/islands.md derives every term. One prediction: one estimator call per island (two with
 * split=speed), O(k^2) for the exchange, the exact best ring for k <= 9 ((k-1)! orders), a
 * 2-opt local search beyond. No allocation but one mp_estimate.
 */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "meshplan/islands.h"

void mp_islands_opts_init(mp_islands_opts *o)
{
    o->quality_factor = 0.0;
    o->estimate_opts = NULL;
}

/* W1 without the window: capacity (the pair's links, capped by each island's uplink) x
 * achievable fraction x what other traffic leaves. 0 when no link joins a and b. */
static double wan_line_Bps(const mp_islands *isl, int a, int b)
{
    const mp_wan_link *l = &isl->link[a][b];
    if (!l->present || !(l->bw_Bps > 0))
        return 0.0;
    double cap = l->bw_Bps;
    if (isl->island[a].uplink_Bps > 0 && isl->island[a].uplink_Bps < cap)
        cap = isl->island[a].uplink_Bps;
    if (isl->island[b].uplink_Bps > 0 && isl->island[b].uplink_Bps < cap)
        cap = isl->island[b].uplink_Bps;
    return cap * l->efficiency_frac * (1.0 - l->background_load_frac);
}

/* Segment size of a TCP flow: a 1500-byte Ethernet MTU less 20 bytes of IP, 20 of TCP and 12 of
 * the timestamp option (RFC 7323) that Linux sends by default. */
#define MP_WAN_MSS_BYTES 1448.0

double mp_wan_flow_window_bytes(const mp_islands *isl, int a, int b)
{
    if (!isl || a == b || a < 0 || b < 0 || a >= isl->n || b >= isl->n)
        return 0.0;
    const mp_wan_link *l = &isl->link[a][b];
    if (!l->present || !(l->bw_Bps > 0))
        return 0.0;
    double w = l->tcp_window_bytes > 0 ? l->tcp_window_bytes : 0.0;
    if (l->loss_frac > 0 && l->latency_s > 0) {
        /* W3 (RFC 8312 Sec. 5.1): CUBIC's average window under random loss p, in segments,
         * (C (3 + beta) / (4 (1 - beta)))^(1/4) RTT^(3/4) / p^(3/4) with C = 0.4, beta = 0.7,
         * and never below the Reno-friendly 1.2 / sqrt(p) (Mathis et al. 1997). */
        const double C = 0.4, beta = 0.7, rtt = 2.0 * l->latency_s, p = l->loss_frac;
        double cubic = pow(C * (3.0 + beta) / (4.0 * (1.0 - beta)), 0.25) * pow(rtt, 0.75) / pow(p, 0.75);
        double wl = fmax(cubic, 1.2 / sqrt(p)) * MP_WAN_MSS_BYTES;
        w = w > 0 ? fmin(w, wl) : wl;
    }
    return w;
}

double mp_wan_rate_Bps(const mp_islands *isl, int a, int b, double flows)
{
    if (!isl || a == b || a < 0 || b < 0 || a >= isl->n || b >= isl->n)
        return 0.0;
    const mp_wan_link *l = &isl->link[a][b];
    double r = wan_line_Bps(isl, a, b);
    if (!(r > 0))
        return 0.0;
    /* W1: a flow keeps at most its window in flight per round trip (RFC 7323 Sec. 1: "the
     * bandwidth-delay product"; with loss, its average congestion window, W3), so F parallel
     * flows carry F x window / RTT. */
    double wf = mp_wan_flow_window_bytes(isl, a, b);
    if (wf > 0 && l->latency_s > 0) {
        double f = flows > 1 ? flows : 1.0;
        double wr = f * wf / (2.0 * l->latency_s);
        if (wr < r)
            r = wr;
    }
    return r;
}

/* ---- small helpers ------------------------------------------------------------------------ */

static void add_reason(mp_islands_estimate *e, const char *fmt, ...)
{
    if (e->nreasons >= 4)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->reasons[e->nreasons++], sizeof e->reasons[0], fmt, ap);
    va_end(ap);
}

/* Achievable element-wise HBM rate of a GPU, as the estimator's memory-bound kernels use it
 * (estimate.c gpu_rates: measured, else 0.865 of the peak; times the sustained fraction). */
static double elem_rate_Bps(const mp_gpu *g, const mp_estimate_opts *o)
{
    double bw = g->measured_mem_bw_Bps > 0 ? g->measured_mem_bw_Bps : g->mem_bw_Bps * 0.865;
    return bw * (o ? o->memory_bound_sustained_frac : 0.6);
}

/* One island's plan: the base plan with its batch, resolved for its GPU count. */
static mp_status island_plan(const mp_plan *base, const mp_model *m, const mp_island *x, int64_t gb,
                             mp_plan *out, mp_diag *diag)
{
    *out = *base;
    out->gb = gb;
    mp_diag d = {0};
    mp_status st = mp_plan_resolve(out, m, x->cluster.num_gpus, &d);
    if (st != MP_OK)
        mp_diag_add(diag, "island %s (%lld x %s): the plan cannot be formed: %s", x->name,
                    (long long)x->cluster.num_gpus, x->cluster.gpu.key, d.text);
    return st;
}

/* What one island's estimate contributes. */
typedef struct {
    double step_s, compute_s, bwd_window_s, mem, cap, model_flops, hw_flops, peak_flops;
    double head_s;   /* LM head fwd+bwd of all its micro-batches (pp: taken off non-last islands) */
    double layer_s;  /* pp: one layer's share of the step, for the layer split */
    int64_t gran;    /* mb x dp: its batch must be a multiple */
    int feasible;
    char reason[256];
} island_run;

static mp_status run_island(const mp_model *m, const mp_island *x, const mp_plan *base, int64_t gb,
                            const mp_estimate_opts *eo, mp_estimate *e, island_run *r, mp_diag *diag)
{
    mp_plan p;
    mp_status st = island_plan(base, m, x, gb, &p, diag);
    if (st != MP_OK)
        return st;
    mp_diag d = {0};
    st = mp_estimate_plan(m, &x->cluster, &p, eo, e, &d);
    if (st != MP_OK) {
        mp_diag_add(diag, "island %s: %s", x->name, d.text);
        return st;
    }
    const double sf = x->straggler_factor >= 1.0 ? x->straggler_factor : 1.0;
    const double M = (double)e->microbatches;
    memset(r, 0, sizeof *r);
    r->step_s = e->step_s * sf;
    r->compute_s = (e->time.compute + e->time.recompute) * sf;
    /* Backward of the last micro-batch: backward is 2/3 of the forward+backward FLOPs
     * (Narayanan et al. 2021 Sec. 5.1) plus the recomputation, which runs in backward. */
    r->bwd_window_s = M > 0 ? (2.0 / 3.0 * e->time.compute + e->time.recompute) / M * sf : 0.0;
    r->mem = e->memory.total;
    r->cap = e->memory.capacity;
    r->model_flops = e->model_flops_per_step;
    r->hw_flops = e->hardware_flops_per_step;
    r->peak_flops = e->peak_flops_per_s * (double)x->cluster.num_gpus;
    r->head_s = M * (e->parts.head_fwd_s + e->parts.head_bwd_s) * sf;
    r->layer_s = m->layers > 0 ? fmax(0.0, r->step_s - r->head_s - e->time.optimizer * sf) / (double)m->layers : 0.0;
    r->gran = p.mb * p.dp;
    r->feasible = e->feasible;
    if (!e->feasible)
        snprintf(r->reason, sizeof r->reason, "%s", e->nreasons ? e->reasons[0] : "does not fit");
    return MP_OK;
}

/* ---- exchanges ---------------------------------------------------------------------------- */

typedef struct {
    int k;
    double rate[MP_MAX_ISLANDS][MP_MAX_ISLANDS]; /* achievable B/s per direction, 0 = none (W1) */
    double line[MP_MAX_ISLANDS][MP_MAX_ISLANDS]; /* the same without the window bound */
    double inflight[MP_MAX_ISLANDS][MP_MAX_ISLANDS]; /* bytes the flows' windows allow in flight; 0 = no bound */
    double lat[MP_MAX_ISLANDS][MP_MAX_ISLANDS];  /* one-way latency */
    double loss[MP_MAX_ISLANDS][MP_MAX_ISLANDS]; /* packet loss probability */
    double handshakes; /* one-way latencies paid before a message's data leaves: 0 stream, 1 rendezvous */
    mp_ring ring;      /* how the ring's order is chosen */
} wan;

/* Time for one message of m bytes from island a to b (docs/islands.md eq. W2). The data leaves
 * after `handshakes` one-way latencies (a rendezvous transport waits for the receiver's ready
 * notice: Gloo tcp/pair.cc) and arrives one latency later. What fits in the flows' windows goes
 * in one flight at the line rate; the rest at the window-limited rate, a window per round trip
 * (RFC 7323 Sec. 1). Messages in a row (ring steps, buckets) cannot average more than the
 * window-limited rate either, hence the second bound. Continuous and increasing in m; for m much
 * larger than the window it is m / rate, the long-run rate of W1. Without loss congestion
 * windows are taken as open (a ring's flows idle less than a retransmission timeout between
 * steps; the slow-start restart after the idle between synchronizations is not modelled); with
 * loss the window is W3's and the delays are loss_delay's. */
static double xfer_s(const wan *w, int a, int b, double m)
{
    if (!(w->rate[a][b] > 0))
        return INFINITY;
    double t = (1.0 + w->handshakes) * w->lat[a][b];
    double W = w->inflight[a][b];
    if (W > 0 && m > W)
        t += W / w->line[a][b] + (m - W) / w->rate[a][b];
    else
        t += m / w->line[a][b];
    return fmax(t, m / w->rate[a][b]);
}

/* A message of m bytes from a to b under loss (W3): with probability q at least one of its
 * m / MSS segments is lost, and it completes one round trip later, when the retransmission
 * arrives (fast retransmit on duplicate acknowledgements or RACK, RFC 5681 Sec. 3.2, RFC 8985).
 * Sets *q and returns that delay (0 without loss). */
static double loss_delay(const wan *w, int a, int b, double m, double *q)
{
    *q = 0.0;
    if (!(w->loss[a][b] > 0) || !(m > 0))
        return 0.0;
    *q = -expm1(ceil(m / MP_WAN_MSS_BYTES) * log1p(-w->loss[a][b]));
    return 2.0 * w->lat[a][b];
}

/* The expected time of a message: xfer_s, plus the loss delay times its probability. */
static double xfer_mean_s(const wan *w, int a, int b, double m)
{
    double q, d = loss_delay(w, a, b, m, &q);
    return xfer_s(w, a, b, m) + q * d;
}

/* Messages sent at once, the slowest gating (a ring step, a round of pairs, the uploads of a
 * star): E[max_i T_i] with T_i = t_i, or t_i + d_i with probability q_i, independently. Exact:
 * P(max <= x) is the product of the P(T_i <= x), a step function whose jumps lie at the 2n
 * values. */
typedef struct {
    int n;
    double t[MP_MAX_ISLANDS], d[MP_MAX_ISLANDS], q[MP_MAX_ISLANDS];
} gate;

/* Add a message of m bytes from a to b; returns its expected time (xfer_mean_s). */
static double gate_add(gate *g, const wan *w, int a, int b, double m)
{
    if (g->n >= MP_MAX_ISLANDS)
        return xfer_mean_s(w, a, b, m);
    int i = g->n++;
    g->t[i] = xfer_s(w, a, b, m);
    g->d[i] = loss_delay(w, a, b, m, &g->q[i]);
    return g->t[i] + g->q[i] * g->d[i];
}

static double gate_mean_s(const gate *g)
{
    double x[2 * MP_MAX_ISLANDS], worst = 0.0;
    int nx = 0, lossy = 0;
    for (int i = 0; i < g->n; i++) {
        worst = fmax(worst, g->t[i]);
        x[nx++] = g->t[i];
        if (g->q[i] > 0 && g->d[i] > 0) {
            x[nx++] = g->t[i] + g->d[i];
            lossy = 1;
        }
    }
    if (!lossy || !isfinite(worst))
        return worst;
    double mean = 0.0, prev = 0.0;
    for (int sorted = 0; sorted < nx; sorted++) { /* selection order: nx <= 128 */
        int lo = sorted;
        for (int j = sorted + 1; j < nx; j++)
            if (x[j] < x[lo])
                lo = j;
        double v = x[lo];
        x[lo] = x[sorted];
        x[sorted] = v;
        double cdf = 1.0;
        for (int i = 0; i < g->n && cdf > 0; i++)
            cdf *= v < g->t[i] ? 0.0 : v < g->t[i] + g->d[i] ? 1.0 - g->q[i] : 1.0;
        mean += v * (cdf - prev);
        prev = cdf;
    }
    return mean;
}

/* One ring step moving c bytes over every edge of the ring at once: the expected slowest. */
static double ring_step(const wan *w, const int *ord, double c)
{
    gate g = {0};
    for (int j = 0; j < w->k; j++)
        gate_add(&g, w, ord[j], ord[(j + 1) % w->k], c);
    return gate_mean_s(&g);
}

/* What a ring order is judged by: a cost per edge, and whether the summed cost (a shortest tour)
 * or the slowest edge (a bottleneck tour) comes first, the other breaking ties. */
typedef struct {
    int k, sum_first;
    double cost[MP_MAX_ISLANDS][MP_MAX_ISLANDS];
    const wan *step_w; /* non-NULL: the slowest step is the ring step's expected time (W3) */
    double step_c;     /* ... for steps of this many bytes */
} ring_obj;

static double ring_cost(const ring_obj *o, const int *ord, double *sum)
{
    double worst = 0.0, s = 0.0;
    for (int j = 0; j < o->k; j++) {
        double t = o->cost[ord[j]][ord[(j + 1) % o->k]];
        s += t;
        if (t > worst)
            worst = t;
    }
    *sum = s;
    return o->step_w ? ring_step(o->step_w, ord, o->step_c) : worst;
}

static int ring_better(const ring_obj *o, double t, double s, double bt, double bs)
{
    if (o->sum_first)
        return s < bs * (1.0 - 1e-12) || (s <= bs * (1.0 + 1e-12) && t < bt * (1.0 - 1e-12));
    return t < bt * (1.0 - 1e-12) || (t <= bt * (1.0 + 1e-12) && s < bs * (1.0 - 1e-12));
}

/* Heap's algorithm over ord[1..k-1] (ord[0] fixed: rotations are the same ring): exact. */
static void ring_exact(const ring_obj *o, int *best)
{
    int a[MP_MAX_ISLANDS], cnt[MP_MAX_ISLANDS] = {0};
    const int k = o->k;
    for (int i = 0; i < k; i++)
        a[i] = i;
    double bs, bt = ring_cost(o, a, &bs);
    memcpy(best, a, sizeof(int) * (size_t)k);
    int i = 1;
    while (i < k - 1) {
        if (cnt[i] < i) {
            int j = (i % 2 == 0) ? 0 : cnt[i];
            int t = a[1 + j];
            a[1 + j] = a[1 + i];
            a[1 + i] = t;
            double s, tt = ring_cost(o, a, &s);
            if (ring_better(o, tt, s, bt, bs)) {
                bt = tt;
                bs = s;
                memcpy(best, a, sizeof(int) * (size_t)k);
            }
            cnt[i]++;
            i = 1;
        } else {
            cnt[i] = 0;
            i++;
        }
    }
}

/* 2-opt on ord under the objective: reverse a segment while that makes the ring better. */
static void ring_2opt(const ring_obj *o, int *ord)
{
    const int k = o->k;
    double s, t = ring_cost(o, ord, &s);
    for (int improved = 1, guard = 0; improved && guard < 64; guard++) {
        improved = 0;
        for (int i = 1; i < k - 1; i++)
            for (int j = i + 1; j < k; j++) {
                int cand[MP_MAX_ISLANDS];
                memcpy(cand, ord, sizeof(int) * (size_t)k);
                for (int lo = i, hi = j; lo < hi; lo++, hi--) {
                    int x = cand[lo];
                    cand[lo] = cand[hi];
                    cand[hi] = x;
                }
                double s2, t2 = ring_cost(o, cand, &s2);
                if (ring_better(o, t2, s2, t, s)) {
                    memcpy(ord, cand, sizeof(int) * (size_t)k);
                    t = t2;
                    s = s2;
                    improved = 1;
                }
            }
    }
}

/* Greedy rings (from every start, the cheapest next edge) improved by 2-opt: a heuristic for
 * k > 9, where the travelling-salesman problems are too large to enumerate. */
static void ring_search(const ring_obj *o, int *best)
{
    const int k = o->k;
    double bt = INFINITY, bs = INFINITY;
    for (int s0 = 0; s0 < k; s0++) {
        int ord[MP_MAX_ISLANDS], used[MP_MAX_ISLANDS] = {0};
        ord[0] = s0;
        used[s0] = 1;
        for (int j = 1; j < k; j++) {
            int prev = ord[j - 1], pick = -1;
            for (int b = 0; b < k; b++)
                if (!used[b] && (pick < 0 || o->cost[prev][b] < o->cost[prev][pick]))
                    pick = b;
            ord[j] = pick;
            used[pick] = 1;
        }
        ring_2opt(o, ord);
        double s, t = ring_cost(o, ord, &s);
        if (ring_better(o, t, s, bt, bs)) {
            bt = t;
            bs = s;
            memcpy(best, ord, sizeof(int) * (size_t)k);
        }
    }
}

/* The ring's order (plan key ring, docs/islands.md Sec. 3) for steps of c bytes; S_edge is what
 * one edge carries in a whole synchronization.
 *  bottleneck: the order whose slowest step (W2 for c bytes) is fastest, then the smallest sum:
 *    exact for k <= 9; beyond, the best of the greedy + 2-opt rings, the tsp ring and the listed
 *    order (so it is never worse than either);
 *  tsp: the shortest tour by each edge's time to carry S_edge at its long-run rate plus its
 *    latency (PRIME ranks edges by measured transfer time, comms.py _optimize_ring_ranks): it
 *    does not depend on the transport, the buckets or the fragments;
 *  listed: the islands' order. Returns MP_ERR_NOMEM if out of memory. */
static mp_status ring_order(const wan *w, double c, double S_edge, int *ord)
{
    const int k = w->k;
    for (int j = 0; j < k; j++)
        ord[j] = j;
    if (w->ring == MP_RING_LISTED)
        return MP_OK;
    ring_obj *ob = malloc(2 * sizeof *ob);
    if (!ob)
        return MP_ERR_NOMEM;
    ring_obj *ot = ob + 1;
    ob->k = ot->k = k;
    ob->sum_first = 0;
    ot->sum_first = 1;
    ot->step_w = NULL;
    ot->step_c = 0.0;
    /* With loss a step's time is the expected maximum over its edges, not the slowest mean: the
     * bottleneck order is judged by that (exact for k <= 9). */
    ob->step_w = NULL;
    ob->step_c = c;
    for (int a = 0; a < k; a++)
        for (int b = 0; b < k; b++)
            if (w->loss[a][b] > 0)
                ob->step_w = w;
    for (int a = 0; a < k; a++)
        for (int b = 0; b < k; b++) {
            ob->cost[a][b] = a == b ? 0.0 : xfer_mean_s(w, a, b, c);
            ot->cost[a][b] = a == b ? 0.0 : w->rate[a][b] > 0 ? S_edge / w->rate[a][b] + w->lat[a][b] : INFINITY;
        }
    if (w->ring == MP_RING_TSP) {
        if (k <= 9)
            ring_exact(ot, ord);
        else
            ring_search(ot, ord);
    } else if (k <= 9) {
        ring_exact(ob, ord);
    } else {
        int cand[3][MP_MAX_ISLANDS];
        ring_search(ob, cand[0]);
        ring_search(ot, cand[1]);
        for (int j = 0; j < k; j++)
            cand[2][j] = j;
        ring_2opt(ob, cand[1]);
        ring_2opt(ob, cand[2]);
        double bs, bt = ring_cost(ob, cand[0], &bs);
        memcpy(ord, cand[0], sizeof(int) * (size_t)k);
        for (int i = 1; i < 3; i++) {
            double s, t = ring_cost(ob, cand[i], &s);
            if (ring_better(ob, t, s, bt, bs)) {
                bt = t;
                bs = s;
                memcpy(ord, cand[i], sizeof(int) * (size_t)k);
            }
        }
    }
    free(ob);
    return MP_OK;
}

/* Round r (0-based) of the round-robin 1-factorisation of k islands (circle method; with k odd
 * a bye): partner[i] = the island i exchanges with, -1 for the bye. Rounds: k-1 (k even), k (odd). */
static void round_robin(int k, int r, int *partner)
{
    int m = k % 2 ? k + 1 : k; /* with a dummy for odd k */
    int pos[MP_MAX_ISLANDS + 1];
    pos[0] = 0;
    for (int i = 1; i < m; i++)
        pos[i] = 1 + (i - 1 + r) % (m - 1);
    for (int i = 0; i < k; i++)
        partner[i] = -1;
    for (int i = 0; i < m / 2; i++) {
        int a = pos[i], b = pos[m - 1 - i];
        if (a < k && b < k) {
            partner[a] = b;
            partner[b] = a;
        }
    }
}

/* What caps a link's rate r (W1, W3): the line, a TCP window, or TCP under packet loss. */
static const char *link_limit(const mp_islands *isl, int a, int b, double r)
{
    const mp_wan_link *l = &isl->link[a][b];
    if (!(r < wan_line_Bps(isl, a, b) * 0.999))
        return "line";
    if (l->loss_frac > 0 && (!(l->tcp_window_bytes > 0) || mp_wan_flow_window_bytes(isl, a, b) < l->tcp_window_bytes))
        return "loss";
    return "tcp-window";
}

/* Add bytes a sends to b and b sends to a, and the busy time, to the pair's flow record; each
 * sender pays its egress. */
static void flow_add(mp_islands_estimate *e, const wan *w, int a, int b, double ab, double ba,
                     double busy_s, const mp_islands *isl)
{
    const double usd = isl->link[a][b].usd_per_GB / 1e9;
    e->island[a].wan_out_bytes += ab;
    e->island[b].wan_out_bytes += ba;
    e->island[a].egress_usd += ab * usd;
    e->island[b].egress_usd += ba * usd;
    const double bytes = ab + ba;
    if (a > b) {
        int t = a;
        a = b;
        b = t;
    }
    int f = -1;
    for (int i = 0; i < e->nflows; i++)
        if (e->flow[i].a == a && e->flow[i].b == b)
            f = i;
    if (f < 0) {
        if (e->nflows >= MP_MAX_WAN_FLOWS)
            return;
        f = e->nflows++;
        memset(&e->flow[f], 0, sizeof e->flow[f]);
        e->flow[f].a = a;
        e->flow[f].b = b;
        e->flow[f].rate_Bps = w->rate[a][b];
        e->flow[f].limit = link_limit(isl, a, b, w->rate[a][b]);
    }
    e->flow[f].bytes += bytes;
    e->flow[f].busy_s += busy_s;
    e->flow[f].usd += bytes * usd;
}

/* ---- quality defaults --------------------------------------------------------------------- */

/* Tokens-to-quality factor defaults: tokens a scheme needs to reach a loss / tokens synchronous
 * data parallelism needs. Only what was published; 1.0 with published = 0 otherwise. */
static void quality_default(mp_sync s, mp_exchange x, mp_compress c, double *f, int *published,
                            char *src, size_t cap)
{
    *f = 1.0;
    *published = 1;
    if (x == MP_EXCH_ROTATE) {
        *published = 0;
        snprintf(src, cap, "no published figure for rotating pairwise averaging at this scale: 1.0 "
                           "assumed, state yours (--quality-factor); gossip averaging is known to need "
                           "more steps (Koloskova et al. 2020)");
        return;
    }
    if (c == MP_COMPRESS_TOPK) {
        *published = 0;
        snprintf(src, cap, "no published figure for top-k pseudo-gradients/gradients at this scale: "
                           "1.0 assumed, state yours (--quality-factor)");
        return;
    }
    switch (s) {
    case MP_SYNC_DILOCO:
        snprintf(src, cap, "1.0: DiLoCo matched fully synchronous training at the same tokens "
                           "(Douillard et al. 2023, arXiv 2311.08105: 8 workers, H = 500); DiLoCo "
                           "scaling laws (Charles et al. 2025, arXiv 2503.09799): the gap shrinks "
                           "with model size; int8 pseudo-gradients without loss (INTELLECT-1, "
                           "arXiv 2412.01152)");
        break;
    case MP_SYNC_FL:
        snprintf(src, cap, "1.0: federated pre-training matched centralised perplexity at the same "
                           "tokens (Photon, Sani et al. 2024, arXiv 2411.02908)");
        break;
    default:
        snprintf(src, cap, "1.0: the same optimization as synchronous data parallelism in one "
                           "cluster (the gradients are summed exactly)");
        break;
    }
}

/* ---- the prediction ----------------------------------------------------------------------- */

/* What the prediction's steps share (mp_islands_predict): the inputs, the scheme as resolved,
 * the model's counts, each island's run and the synchronization's times as they are found. */
typedef struct {
    const mp_model *m;
    const mp_islands *isl;
    const mp_plan *p;
    const mp_xsync *xs;
    const mp_estimate_opts *eo;
    mp_islands_estimate *out;
    mp_diag *diag;
    int k;
    mp_sync sync;
    int local;                    /* diloco or fl: islands take local steps */
    mp_exchange xch;
    int64_t H, N, Bk, tau;        /* inner steps, fragments, buckets, overlap */
    int64_t Ntot, seq;
    double P;                     /* the model's parameters */
    mp_flops fl;
    mp_estimate *est;             /* scratch for the islands' estimates */
    island_run run[MP_MAX_ISLANDS];
    int64_t batch[MP_MAX_ISLANDS], layers[MP_MAX_ISLANDS];
    double slow;                  /* the slowest island's step */
    int slowest;
    double sync_s, sync_exposed, sync_hidden, compress_s, period;
} predict_ctx;

/* Resolve the scheme (sync, exchange, inner steps, ...) and check the keys against it: every
 * key that does not apply is named. */
static mp_status check_scheme(predict_ctx *c)
{
    const mp_xsync *xs = c->xs;
    const mp_plan *p = c->p;
    const int k = c->k;
    mp_diag *diag = c->diag;
    mp_islands_estimate *out = c->out;
    mp_sync sync = xs->sync == MP_SYNC_NONE ? MP_SYNC_HSDP : xs->sync;
    int bad = 0;
#define BAD(...) do { mp_diag_add(diag, __VA_ARGS__); bad++; } while (0)
    const int local = sync == MP_SYNC_DILOCO || sync == MP_SYNC_FL;
    if (xs->inner_steps && !local)
        BAD("plan.inner_steps = %lld: only with sync=diloco or sync=fl (got sync=%s)",
            (long long)xs->inner_steps, mp_sync_name(sync));
    if (xs->fragments > 1 && sync != MP_SYNC_DILOCO)
        BAD("plan.fragments = %lld: only with sync=diloco (streaming DiLoCo)", (long long)xs->fragments);
    if (xs->overlap_steps && !local)
        BAD("plan.overlap = %lld: only with sync=diloco or sync=fl", (long long)xs->overlap_steps);
    if (xs->exchange == MP_EXCH_ROTATE && !local)
        BAD("plan.exchange = rotate: pairwise averaging leaves replicas apart; only with sync=diloco "
            "or sync=fl");
    if (sync == MP_SYNC_PP && xs->exchange != MP_EXCH_DEFAULT)
        BAD("plan.exchange = %s: sync=pp sends activations between consecutive islands; no exchange",
            mp_exchange_name(xs->exchange));
    if (sync == MP_SYNC_PP && xs->compress != MP_COMPRESS_NONE)
        BAD("plan.compress = %s: compression applies to gradients and pseudo-gradients (hsdp, diloco, "
            "fl), not to sync=pp activations", mp_compress_name(xs->compress));
    if (sync == MP_SYNC_PP && xs->split != MP_SPLIT_SPEED)
        BAD("plan.split: sync=pp splits layers, not the batch (every island sees the whole batch)");
    const int64_t H = local ? (xs->inner_steps ? xs->inner_steps : 100) : 1;
    const int64_t N = xs->fragments > 1 ? xs->fragments : 1;
    const int64_t Bk = xs->buckets > 1 ? xs->buckets : 1;
    const int64_t tau = xs->overlap_steps;
    if (xs->ring != MP_RING_DEFAULT && (sync == MP_SYNC_PP || xs->exchange == MP_EXCH_ROTATE ||
                                        xs->exchange == MP_EXCH_STAR ||
                                        (sync == MP_SYNC_FL && xs->exchange == MP_EXCH_DEFAULT)))
        BAD("plan.ring = %s: only with a ring exchange (exchange=ring, the default for sync=hsdp "
            "and diloco)", mp_ring_name(xs->ring));
    if (Bk > 1 && sync == MP_SYNC_PP)
        BAD("plan.buckets = %lld: only with sync=hsdp, diloco or fl (sync=pp sends activations, not "
            "parameter buckets)", (long long)Bk);
    if (local && tau * N > H)
        BAD("plan: overlap * fragments = %lld * %lld = %lld: expected at most inner_steps (%lld)",
            (long long)tau, (long long)N, (long long)(tau * N), (long long)H);
    if (xs->split == MP_SPLIT_WEIGHTS && xs->nweights != k)
        BAD("plan.split: %d weights for %d islands: give one per island, in island order",
            xs->nweights, k);
    if (p->gb <= 0)
        BAD("plan.gb: the global batch (sequences per step, all islands) is required across islands");
    if (bad)
        return MP_ERR_INPUT;
#undef BAD
    mp_exchange xch = xs->exchange != MP_EXCH_DEFAULT ? xs->exchange
                    : sync == MP_SYNC_FL ? MP_EXCH_STAR : MP_EXCH_RING;
    if (k == 1)
        xch = MP_EXCH_DEFAULT;
    out->sync = sync;
    out->exchange = sync == MP_SYNC_PP ? MP_EXCH_DEFAULT : xch;
    out->compress = xs->compress;
    out->inner_steps = H;
    out->fragments = N;
    out->buckets = Bk;
    out->transport = xs->transport;
    out->ring = xs->ring;
    out->overlap_steps = tau;
    out->nislands = k;
    out->steps_per_period = H;
    c->sync = sync;
    c->local = local;
    c->xch = xch;
    c->H = H, c->N = N, c->Bk = Bk, c->tau = tau;
    return MP_OK;
}

/* The batch per island (hsdp, diloco, fl): by speed, GPUs or the given weights, in whole units
 * of mb x its dp; then each island's run at its batch. */
static mp_status split_batch(predict_ctx *c)
{
    const mp_model *m = c->m;
    const mp_islands *isl = c->isl;
    const mp_plan *p = c->p;
    const mp_xsync *xs = c->xs;
    const mp_estimate_opts *eo = c->eo;
    mp_estimate *est = c->est;
    mp_diag *diag = c->diag;
    const int k = c->k;
    const int64_t Ntot = c->Ntot;
    island_run *run = c->run;
    int64_t *batch = c->batch, *layers = c->layers;
    mp_status st = MP_OK;
    int64_t gran[MP_MAX_ISLANDS];
    double w[MP_MAX_ISLANDS];
    for (int i = 0; i < k; i++) {
        mp_plan q;
        if ((st = island_plan(p, m, &isl->island[i], 0, &q, diag)) != MP_OK)
            return st;
        gran[i] = q.mb * q.dp;
    }
    for (int i = 0; i < k; i++) {
        if (xs->split == MP_SPLIT_WEIGHTS) {
            w[i] = xs->weights[i];
        } else if (xs->split == MP_SPLIT_GPUS || k == 1) {
            w[i] = (double)isl->island[i].cluster.num_gpus;
        } else {
            /* speed: sequences per second at a share proportional to its GPUs */
            int64_t ref = (int64_t)llround((double)p->gb * (double)isl->island[i].cluster.num_gpus / (double)Ntot);
            ref = ref / gran[i] * gran[i];
            if (ref < gran[i])
                ref = gran[i];
            if ((st = run_island(m, &isl->island[i], p, ref, eo, est, &run[i], diag)) != MP_OK)
                return st;
            w[i] = (double)ref / run[i].step_s;
        }
    }
    double wsum = 0.0;
    int64_t used = 0;
    for (int i = 0; i < k; i++)
        wsum += w[i];
    for (int i = 0; i < k; i++) {
        double x = (double)p->gb * w[i] / wsum;
        int64_t u = (int64_t)floor(x / (double)gran[i] + 1e-9);
        batch[i] = (u < 1 ? 1 : u) * gran[i];
        used += batch[i];
    }
    if (used > p->gb) {
        mp_diag_add(diag, "plan.gb = %lld: too small to split across %d islands: each needs a "
                    "multiple of mb x its dp sequences (together at least %lld)",
                    (long long)p->gb, k, (long long)used);
        st = MP_ERR_INPUT;
        return st;
    }
    /* Hand out the rest in whole units, each to the island furthest below its share (speed:
     * whose step would stay shortest), while any unit fits; the global batch is then gb or
     * just below it (reported). */
    for (int guard = 0; guard < 1 << 20; guard++) {
        int pick = -1;
        double best = INFINITY;
        for (int i = 0; i < k; i++) {
            if (used + gran[i] > p->gb)
                continue;
            double score = (double)(batch[i] + gran[i]) / w[i]; /* its time (speed) or load */
            if (score < best) {
                best = score;
                pick = i;
            }
        }
        if (pick < 0)
            break;
        batch[pick] += gran[pick];
        used += gran[pick];
    }
    for (int i = 0; i < k; i++) {
        layers[i] = m->layers;
        if ((st = run_island(m, &isl->island[i], p, batch[i], eo, est, &run[i], diag)) != MP_OK)
            return st;
    }
    c->out->global_batch_seqs = used;
    return MP_OK;
}

/* The layers per island (sync=pp), each island then run on its layers with the whole batch. */
static mp_status split_layers(predict_ctx *c)
{
    const mp_model *m = c->m;
    const mp_islands *isl = c->isl;
    const mp_plan *p = c->p;
    const mp_estimate_opts *eo = c->eo;
    mp_estimate *est = c->est;
    mp_diag *diag = c->diag;
    const int k = c->k;
    island_run *run = c->run;
    int64_t *batch = c->batch, *layers = c->layers;
    mp_status st = MP_OK;
    if (k > m->layers) {
        mp_diag_add(diag, "sync=pp: %d islands for %lld layers: expected at most one island per layer",
                    k, (long long)m->layers);
        st = MP_ERR_INPUT;
        return st;
    }
    island_run full[MP_MAX_ISLANDS];
    for (int i = 0; i < k; i++)
        if ((st = run_island(m, &isl->island[i], p, p->gb, eo, est, &full[i], diag)) != MP_OK)
            return st;
    /* Layers: one each, then every further layer to the island whose stage would finish
     * first (list scheduling of identical jobs on machines of different speeds is optimal
     * for the makespan); the last island also runs the LM head. */
    double load[MP_MAX_ISLANDS];
    for (int i = 0; i < k; i++) {
        layers[i] = 1;
        load[i] = full[i].layer_s + (i == k - 1 ? full[i].head_s : 0.0);
    }
    for (int64_t l = k; l < m->layers; l++) {
        int pick = 0;
        for (int i = 1; i < k; i++)
            if (load[i] + full[i].layer_s < load[pick] + full[pick].layer_s)
                pick = i;
        layers[pick]++;
        load[pick] += full[pick].layer_s;
    }
    for (int i = 0; i < k; i++) {
        mp_model sub = *m;
        sub.layers = layers[i];
        if ((st = run_island(&sub, &isl->island[i], p, p->gb, eo, est, &run[i], diag)) != MP_OK)
            return st;
        if (i != k - 1) {
            /* Not the last island: no LM head compute; its logits are not stored. The head's
             * weights stay counted (conservative). */
            run[i].step_s -= run[i].head_s;
            run[i].compute_s -= run[i].head_s;
            run[i].mem -= est->memory.logits;
            run[i].feasible = run[i].mem <= run[i].cap;
            if (run[i].feasible)
                run[i].reason[0] = '\0';
        }
        batch[i] = p->gb;
    }
    c->out->global_batch_seqs = p->gb;
    return MP_OK;
}

/* The WAN's rates, latencies, loss and windows between every pair of islands. */
static void fill_wan(const predict_ctx *c, wan *w)
{
    static const wan zero_wan;
    const mp_islands *isl = c->isl;
    const mp_plan *p = c->p;
    const mp_xsync *xs = c->xs;
    const mp_sync sync = c->sync;
    const int k = c->k;
    *w = zero_wan;
    w->k = k;
    for (int a = 0; a < k; a++)
        for (int b = 0; b < k; b++) {
            if (a == b)
                continue;
            int64_t na = isl->island[a].cluster.num_gpus, nb = isl->island[b].cluster.num_gpus;
            double flows = (double)(na < nb ? na : nb) * isl->link[a][b].flows_per_gpu;
            if (sync == MP_SYNC_PP) { /* the ranks of the boundary stages */
                int64_t pa = p->pp > 0 ? p->pp : 1;
                flows = (double)((na < nb ? na : nb) / pa) * isl->link[a][b].flows_per_gpu;
            }
            w->rate[a][b] = mp_wan_rate_Bps(isl, a, b, flows);
            w->line[a][b] = wan_line_Bps(isl, a, b);
            w->lat[a][b] = isl->link[a][b].latency_s;
            w->loss[a][b] = isl->link[a][b].loss_frac;
            double wf = mp_wan_flow_window_bytes(isl, a, b);
            if (wf > 0 && isl->link[a][b].latency_s > 0)
                w->inflight[a][b] = (flows > 1 ? flows : 1.0) * wf;
        }
    w->handshakes = xs->transport == MP_TRANSPORT_RENDEZVOUS ? 1.0 : 0.0;
    w->ring = xs->ring;
}

/* sync=pp: activations across the boundaries, the steady state and the islands' pipeline fill
 * (docs/islands.md P1, P2). */
static mp_status pp_period(predict_ctx *c, const wan *w)
{
    const mp_model *m = c->m;
    const mp_islands *isl = c->isl;
    const mp_plan *p = c->p;
    mp_islands_estimate *out = c->out;
    mp_diag *diag = c->diag;
    const int k = c->k;
    const island_run *run = c->run;
    const double tok_seq = (double)c->seq, slow = c->slow;
    double sync_s, sync_hidden, sync_exposed, period;
    mp_status st = MP_OK;
    /* Activations of every sequence cross each boundary forward, their gradients backward:
     * s x h 16-bit values per sequence each way (docs/islands.md eq. P1). */
    double per_dir = (double)p->gb * tok_seq * (double)m->hidden * 2.0;
    int64_t Mx = INT64_MAX;
    for (int i = 0; i < k; i++) {
        int64_t Mi = run[i].gran > 0 ? p->gb / run[i].gran : 1; /* micro-batches per DP rank */
        if (Mi < Mx)
            Mx = Mi;
    }
    if (Mx < 1)
        Mx = 1;
    double twan = 0.0, fill = 0.0;
    gate gb = {0};
    for (int i = 0; i + 1 < k; i++) {
        double r = w->rate[i][i + 1];
        if (!(r > 0)) {
            mp_diag_add(diag, "sync=pp: islands %s and %s are consecutive stages but no WAN link joins them",
                        isl->island[i].name, isl->island[i + 1].name);
            st = MP_ERR_INPUT;
            return st;
        }
        double t = gate_add(&gb, w, i, i + 1, per_dir);
        fill += 2.0 * xfer_mean_s(w, i, i + 1, per_dir / (double)Mx);
        flow_add(out, w, i, i + 1, per_dir, per_dir, t, isl);
    }
    twan = gate_mean_s(&gb); /* the boundaries run at once; the slowest paces */
    /* P2: the slowest stage or the slowest boundary paces the steady state; filling and
     * draining the pipeline of islands costs (k-1) micro-batch groups of the slowest stage
     * plus one micro-batch's transfer over every boundary each way. */
    double steady = slow > twan ? slow : twan;
    double bubble = (double)(k - 1) * slow / (double)Mx + fill;
    period = steady + bubble;
    sync_s = twan;
    sync_hidden = fmin(twan, slow);
    sync_exposed = fmax(0.0, twan - slow) + fill;
    for (int i = 0; i < k; i++) {
        out->island[i].train_s = run[i].step_s;
        out->island[i].sync_exposed_s = sync_exposed;
        out->island[i].wait_s = fmax(0.0, period - run[i].step_s - sync_exposed);
    }
    c->sync_s = sync_s;
    c->sync_hidden = sync_hidden;
    c->sync_exposed = sync_exposed;
    c->period = period;
    return MP_OK;
}

/* Ring exchange of one collective (S2): its time into *tx and its flows. */
static mp_status ring_tx(predict_ctx *c, wan *w, double S, double Sf, double NB, double *tx)
{
    const int k = c->k, topk = c->xs->compress == MP_COMPRESS_TOPK;
    mp_islands_estimate *out = c->out;
    const mp_islands *isl = c->isl;
    mp_diag *diag = c->diag;
    mp_status st = MP_OK;
    int ord[MP_MAX_ISLANDS];
    double chunk = topk ? Sf : Sf / (double)k;
    /* What one edge carries per synchronization (below): the tsp order's volume. */
    double S_edge = (topk ? (double)(k - 1) : 2.0 * (double)(k - 1)) * (topk ? S : S / (double)k);
    if ((st = ring_order(w, chunk, S_edge, ord)) != MP_OK) {
        mp_diag_add(diag, "islands: out of memory");
        return st;
    }
    /* Dense: reduce-scatter + all-gather, 2(k-1) steps of S/k (Patarasuk & Yuan 2009);
     * top-k: an all-gather of the sparse sets, k-1 steps of S (they do not sum in
     * place; Shi et al. 2019). Every step is paced by the ring's slowest edge. */
    double steps = topk ? (double)(k - 1) : 2.0 * (double)(k - 1);
    double stept = ring_step(w, ord, chunk);
    if (!isfinite(stept)) {
        mp_diag_add(diag, "exchange=ring: no ring joins all %d islands over existing WAN links", k);
        st = MP_ERR_INPUT;
        return st;
    }
    *tx = steps * stept;
    for (int j = 0; j < k; j++) {
        int a = ord[j], c2 = ord[(j + 1) % k];
        double et = xfer_mean_s(w, a, c2, chunk);
        flow_add(out, w, a, c2, NB * steps * chunk, 0.0, NB * steps * et, isl);
    }
    return MP_OK;
}

/* Pairwise averaging, rotating partners (R1): the mean round into *tx. */
static mp_status rotate_tx(predict_ctx *c, wan *w, double Sf, double NB, double *tx)
{
    const int k = c->k;
    mp_islands_estimate *out = c->out;
    const mp_islands *isl = c->isl;
    mp_diag *diag = c->diag;
    mp_status st = MP_OK;
    /* R1: one round of pairwise averaging per synchronization, the partners rotating
     * over the round-robin; the mean round is the synchronization's time. */
    int rounds = k % 2 ? k : k - 1;
    double sum = 0.0, mn = INFINITY, mx = 0.0;
    for (int r = 0; r < rounds; r++) {
        int partner[MP_MAX_ISLANDS];
        round_robin(k, r, partner);
        gate gr = {0};
        for (int a = 0; a < k; a++) {
            int c2 = partner[a];
            if (c2 <= a)
                continue;
            if (!(w->rate[a][c2] > 0)) {
                mp_diag_add(diag, "exchange=rotate: islands %s and %s are paired but no WAN link joins them",
                            isl->island[a].name, isl->island[c2].name);
                st = MP_ERR_INPUT;
                return st;
            }
            double t = gate_add(&gr, w, a, c2, Sf);
            flow_add(out, w, a, c2, NB * Sf / rounds, NB * Sf / rounds, NB * t / rounds, isl);
        }
        double rt = gate_mean_s(&gr);
        sum += rt;
        if (rt < mn)
            mn = rt;
        if (rt > mx)
            mx = rt;
    }
    *tx = sum / rounds;
    out->rotate_min_s = NB * mn;
    out->rotate_max_s = NB * mx;
    return MP_OK;
}

/* Star through the aggregator (X1): upload and download into *tx. */
static mp_status star_tx(predict_ctx *c, wan *w, double Sf, double NB, double *tx)
{
    const int k = c->k, topk = c->xs->compress == MP_COMPRESS_TOPK;
    const double P = c->P;
    mp_islands_estimate *out = c->out;
    const mp_islands *isl = c->isl;
    mp_diag *diag = c->diag;
    mp_status st = MP_OK;
    /* X1: star through the aggregator: every island uploads S, the aggregator sums and
     * sends the aggregate back; its uplink is shared by all the others. */
    int ag = 0;
    for (int i = 0; i < k; i++)
        if (isl->island[i].aggregator) {
            ag = i;
            break;
        }
    double down = topk ? fmin((double)(k - 1) * Sf, P * 4.0 / NB) : Sf;
    double up_t = 0.0, dn_t = 0.0, agg_cap = isl->island[ag].uplink_Bps;
    gate gu = {0}, gd = {0};
    for (int i = 0; i < k; i++) {
        if (i == ag)
            continue;
        if (!(w->rate[i][ag] > 0)) {
            mp_diag_add(diag, "exchange=star: no WAN link joins island %s to the aggregator %s",
                        isl->island[i].name, isl->island[ag].name);
            st = MP_ERR_INPUT;
            return st;
        }
        double tu = gate_add(&gu, w, i, ag, Sf);
        double td = gate_add(&gd, w, ag, i, down);
        flow_add(out, w, i, ag, NB * Sf, NB * down, NB * (tu + td), isl);
    }
    up_t = gate_mean_s(&gu);
    dn_t = gate_mean_s(&gd);
    if (agg_cap > 0) {
        const mp_wan_link *l0 = &isl->link[ag][ag == 0 ? 1 : 0];
        double capr = agg_cap * l0->efficiency_frac * (1.0 - l0->background_load_frac);
        up_t = fmax(up_t, (double)(k - 1) * Sf / capr);
        dn_t = fmax(dn_t, (double)(k - 1) * down / capr);
    }
    *tx = up_t + dn_t;
    return MP_OK;
}

/* hsdp, diloco, fl: the synchronization's bytes, compression, exchange, and the period with
 * what of the synchronization hides (S1-S4). */
static mp_status sync_period(predict_ctx *c, wan *w)
{
    const mp_islands *isl = c->isl;
    const mp_xsync *xs = c->xs;
    const mp_estimate_opts *eo = c->eo;
    mp_islands_estimate *out = c->out;
    const mp_sync sync = c->sync;
    const mp_exchange xch = c->xch;
    const int k = c->k, slowest = c->slowest;
    const int64_t H = c->H, N = c->N, Bk = c->Bk, tau = c->tau;
    const double P = c->P, slow = c->slow;
    const island_run *run = c->run;
    const double b = mp_compress_bytes_per_value(xs->compress);
    const int topk = xs->compress == MP_COMPRESS_TOPK;
    const double F = topk ? xs->topk_frac : 1.0;
    double sync_s = 0.0, sync_exposed = 0.0, sync_hidden = 0.0, compress_s = 0.0, period = 0.0;
    mp_status st = MP_OK;
    /* Bytes each island contributes to one synchronization: every parameter's gradient
     * (hsdp) or pseudo-gradient (diloco, fl) in the wire format (S1). */
    const double S = P * b * (topk ? F : 1.0);
    if (k > 1) {
        /* Compression compute per GPU (S3), memory-bound on the slowest island's GPUs. */
        double cbytes_elem = 0.0;
        if (topk)
            cbytes_elem = 28.0 + (double)(k - 1) * F * 16.0;
        else if (xs->compress != MP_COMPRESS_NONE)
            cbytes_elem = xch == MP_EXCH_RING ? 2.0 * (double)(k - 1) / (double)k * 2.0 * (4.0 + b)
                                              : 2.0 * (4.0 + b);
        for (int i = 0; i < k; i++) {
            const mp_cluster *cl = &isl->island[i].cluster;
            double t = P / (double)cl->num_gpus * cbytes_elem / elem_rate_Bps(&cl->gpu, eo);
            if (xch == MP_EXCH_STAR && isl->island[i].aggregator && !topk && xs->compress != MP_COMPRESS_NONE)
                t += P / (double)cl->num_gpus * (double)(k - 1) * (b + 4.0) / elem_rate_Bps(&cl->gpu, eo);
            if (t > compress_s)
                compress_s = t;
        }
        /* One collective's exchange (S2): fragments and buckets split the bytes, each pays
         * the latencies; NB collectives per synchronization, one after the other. */
        const double NB = (double)N * (double)Bk;
        const double Sf = S / NB;
        double tx = 0.0;
        if (xch == MP_EXCH_RING)
            st = ring_tx(c, w, S, Sf, NB, &tx);
        else if (xch == MP_EXCH_ROTATE)
            st = rotate_tx(c, w, Sf, NB, &tx);
        else
            st = star_tx(c, w, Sf, NB, &tx);
        if (st != MP_OK)
            return st;
        sync_s = NB * tx + compress_s;
    }
    /* The period and what of the synchronization hides (S4). */
    if (sync == MP_SYNC_HSDP) {
        double window = run[slowest].bwd_window_s * eo->grad_reduce_overlap_frac;
        sync_hidden = fmin(sync_s, window);
        sync_exposed = sync_s - sync_hidden;
        period = slow + sync_exposed;
    } else {
        double window = (double)N * (double)tau * slow;
        sync_hidden = fmin(sync_s, window);
        sync_exposed = sync_s - sync_hidden;
        period = (double)H * slow + sync_exposed;
    }
    for (int i = 0; i < k; i++) {
        out->island[i].train_s = (double)H * run[i].step_s;
        out->island[i].sync_exposed_s = sync_exposed;
        out->island[i].wait_s = (double)H * (slow - run[i].step_s);
    }
    c->sync_s = sync_s;
    c->sync_hidden = sync_hidden;
    c->sync_exposed = sync_exposed;
    c->compress_s = compress_s;
    c->period = period;
    return MP_OK;
}

/* Per island results and the totals: tokens, FLOPs, utilisation, WAN bytes and egress. */
static void fill_totals(predict_ctx *c)
{
    const mp_model *m = c->m;
    const mp_islands *isl = c->isl;
    mp_islands_estimate *out = c->out;
    const mp_flops fl = c->fl;
    const mp_sync sync = c->sync;
    const int k = c->k;
    const int64_t H = c->H, Ntot = c->Ntot, *batch = c->batch, *layers = c->layers;
    const double P = c->P, period = c->period, tok_seq = (double)c->seq;
    const island_run *run = c->run;
    out->period_s = period;
    out->step_s = period / (double)H;
    out->sync_s = c->sync_s;
    out->sync_compress_s = c->compress_s;
    out->sync_hidden_s = c->sync_hidden;
    out->sync_exposed_s = c->sync_exposed;
    out->feasible = 1;
    double flops_total = 0.0, hw_total = 0.0, peak_total = 0.0, util_w = 0.0, tokens = 0.0, busy_peak = 0.0;
    const double per_tok_layers = fl.model_per_token - 3.0 * fl.fwd_lm_head_per_token;
    for (int i = 0; i < k; i++) {
        mp_island_result *r = &out->island[i];
        const mp_island *x = &isl->island[i];
        mp_strlcpy(r->name, x->name, sizeof r->name);
        mp_strlcpy(r->gpu, x->cluster.gpu.key, sizeof r->gpu);
        r->gpus = x->cluster.num_gpus;
        r->batch_seqs = batch[i];
        r->layers = layers[i];
        r->feasible = run[i].feasible;
        mp_strlcpy(r->reason, run[i].reason, sizeof r->reason);
        r->memory_bytes = run[i].mem;
        r->memory_capacity_bytes = run[i].cap;
        r->step_s = run[i].step_s;
        r->compute_s = (double)H * run[i].compute_s;
        double tok_i = (double)H * (double)batch[i] * tok_seq;
        double fl_i;
        if (sync == MP_SYNC_PP) {
            /* its layers' share of every token's FLOPs; the last island also the LM head */
            fl_i = tok_i * (per_tok_layers * (double)layers[i] / (double)m->layers +
                            (i == k - 1 ? 3.0 * fl.fwd_lm_head_per_token : 0.0));
            r->tokens_per_s = tok_i / period;
            if (i == k - 1)
                tokens = tok_i;
        } else {
            fl_i = (double)H * run[i].model_flops;
            r->tokens_per_s = tok_i / period;
            tokens += tok_i;
        }
        /* recomputation's share as the island's own estimate has it */
        hw_total += run[i].model_flops > 0 ? fl_i * run[i].hw_flops / run[i].model_flops : fl_i;
        r->compute_util = r->train_s / period;
        r->mfu = fl_i / (period * run[i].peak_flops);
        flops_total += fl_i;
        peak_total += run[i].peak_flops;
        busy_peak += r->train_s * run[i].peak_flops;
        util_w += r->compute_util * (double)r->gpus;
        if (!r->feasible) {
            out->feasible = 0;
            add_reason(out, "island %s: %s", r->name, r->reason);
        }
    }
    out->tokens_per_period = tokens;
    out->tokens_per_s = tokens / period;
    out->tokens_per_s_per_gpu = out->tokens_per_s / (double)Ntot;
    out->mfu = flops_total / (period * peak_total);
    out->mfu_in_steps = busy_peak > 0 ? flops_total / busy_peak : 0.0;
    out->hfu = hw_total / (period * peak_total);
    out->model_tflops_per_gpu = flops_total / period / (double)Ntot / 1e12;
    out->hardware_tflops_per_gpu = hw_total / period / (double)Ntot / 1e12;
    out->compute_util = util_w / (double)Ntot;
    for (int f = 0; f < out->nflows; f++) {
        mp_wan_flow *fw = &out->flow[f];
        out->wan_bytes += fw->bytes;
        out->egress_usd += fw->usd;
    }
    out->wan_bytes_per_token = tokens > 0 ? out->wan_bytes / tokens : 0.0;
    out->wan_bytes_per_hour = out->wan_bytes / period * 3600.0;
    out->egress_usd_per_hour = out->egress_usd / period * 3600.0;
    out->egress_usd_per_mtoken = tokens > 0 ? out->egress_usd / tokens * 1e6 : 0.0;
    /* Reference: fp32 gradients ring-all-reduced every step over the same islands: each of the
     * k ring edges carries 2(k-1)/k x 4P per step, both directions counted once (S5). */
    if (k > 1 && sync != MP_SYNC_PP && out->global_batch_seqs > 0)
        out->dp_bytes_per_token = 2.0 * (double)(k - 1) * 4.0 * P / ((double)out->global_batch_seqs * tok_seq);
}

/* What bounds the prediction, in words, with the synchronization's slowest link. */
static void bottleneck_text(predict_ctx *c)
{
    const mp_islands *isl = c->isl;
    mp_islands_estimate *out = c->out;
    const mp_sync sync = c->sync;
    const int k = c->k, slowest = c->slowest;
    const int64_t H = c->H;
    const double slow = c->slow, period = c->period, sync_exposed = c->sync_exposed;
    /* The synchronization's slowest link. */
    {
        double worst = -1.0;
        for (int f = 0; f < out->nflows; f++) {
            double t = out->flow[f].busy_s;
            if (t > worst) {
                worst = t;
                out->bottleneck_flow = f;
            }
        }
        if (out->nflows == 0)
            out->bottleneck_flow = -1;
    }
    double train_slow = (double)H * slow;
    out->comm_bound = sync_exposed >= train_slow && k > 1;
    {
        char linktxt[160] = "";
        if (out->bottleneck_flow >= 0) {
            const mp_wan_flow *fw = &out->flow[out->bottleneck_flow];
            const char *lim = fw->limit ? fw->limit : "line";
            snprintf(linktxt, sizeof linktxt, " over %.32s<->%.32s (%.3g MB/s%s)", isl->island[fw->a].name,
                     isl->island[fw->b].name, fw->rate_Bps / 1e6,
                     !strcmp(lim, "loss") ? ", limited by TCP under packet loss"
                     : !strcmp(lim, "tcp-window") ? ", TCP-window-limited" : "");
        }
        double wait_share = k > 1 ? out->island[0].wait_s : 0.0;
        int most_wait = 0;
        for (int i = 0; i < k; i++)
            if (out->island[i].wait_s > out->island[most_wait].wait_s)
                most_wait = i;
        wait_share = out->island[most_wait].wait_s / period;
        if (k == 1)
            snprintf(out->bottleneck, sizeof out->bottleneck, "one island: no WAN traffic");
        else if (out->comm_bound)
            snprintf(out->bottleneck, sizeof out->bottleneck,
                     "communication-bound: the WAN %s is %.0f%% of wall-clock%.100s",
                     sync == MP_SYNC_PP ? "activation traffic" : "synchronization",
                     100.0 * sync_exposed / period, linktxt);
        else if (wait_share > 0.1)
            snprintf(out->bottleneck, sizeof out->bottleneck,
                     "compute-bound, gated by the slowest island %.32s: %.32s waits %.0f%% of "
                     "wall-clock; WAN exposed %.0f%%%.100s", isl->island[slowest].name, isl->island[most_wait].name,
                     100.0 * wait_share, 100.0 * sync_exposed / period, linktxt);
        else
            snprintf(out->bottleneck, sizeof out->bottleneck,
                     "compute-bound: %.0f%% of wall-clock in training steps; WAN exposed %.0f%%%.100s",
                     100.0 * train_slow / period, 100.0 * sync_exposed / period, linktxt);
    }
}

mp_status mp_islands_predict(const mp_model *m, const mp_islands *isl, const mp_islands_plan *ip,
                             const mp_islands_opts *opts, mp_islands_estimate *out, mp_diag *diag)
{
    mp_islands_opts dopt;
    if (!opts) {
        mp_islands_opts_init(&dopt);
        opts = &dopt;
    }
    mp_estimate_opts eod;
    mp_estimate_opts_init(&eod);
    const mp_estimate_opts *eo = opts->estimate_opts ? opts->estimate_opts : &eod;
    /* Clear everything but the flow records (written as they are used). */
    memset(out, 0, offsetof(mp_islands_estimate, flow));
    memset((char *)out + offsetof(mp_islands_estimate, flow) + sizeof out->flow, 0,
           sizeof *out - offsetof(mp_islands_estimate, flow) - sizeof out->flow);
    out->bottleneck_flow = -1;
    if (!isl || isl->n < 1 || isl->n > MP_MAX_ISLANDS) {
        mp_diag_add(diag, "islands: expected 1 to %d islands", MP_MAX_ISLANDS);
        return MP_ERR_INPUT;
    }
    predict_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        mp_diag_add(diag, "islands: out of memory");
        return MP_ERR_NOMEM;
    }
    c->m = m, c->isl = isl, c->p = &ip->plan, c->xs = &ip->xsync, c->eo = eo, c->out = out;
    c->diag = diag;
    c->k = isl->n;
    const mp_plan *p = c->p;
    mp_status st = check_scheme(c);
    if (st != MP_OK) {
        free(c);
        return st;
    }
    c->est = malloc(sizeof *c->est);
    if (!c->est) {
        mp_diag_add(diag, "islands: out of memory");
        free(c);
        return MP_ERR_NOMEM;
    }
    for (int i = 0; i < c->k; i++)
        c->Ntot += isl->island[i].cluster.num_gpus;
    mp_param_count pc;
    mp_model_params(m, p->tp > 0 ? (int)p->tp : 1, &pc);
    c->seq = p->seq > 0 ? p->seq : m->seq_len;
    mp_model_flops(m, c->seq, &c->fl);
    c->P = (double)pc.total;
    wan *w = NULL;
    /* Every collective carries at least one value per island. */
    if (c->sync != MP_SYNC_PP && (double)c->N * (double)c->Bk > c->P) {
        mp_diag_add(diag, "plan: fragments x buckets = %lld x %lld: expected at most the model's %.0f parameters "
                    "(each collective carries at least one value)", (long long)c->N, (long long)c->Bk, c->P);
        st = MP_ERR_INPUT;
        goto done;
    }
    /* The batch (or, with pp, the layers) per island. */
    if ((st = c->sync != MP_SYNC_PP ? split_batch(c) : split_layers(c)) != MP_OK)
        goto done;
    if (!(w = malloc(sizeof *w))) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    fill_wan(c, w);
    /* Per island times and the period. */
    for (int i = 0; i < c->k; i++)
        if (c->run[i].step_s > c->slow) {
            c->slow = c->run[i].step_s;
            c->slowest = i;
        }
    if ((st = c->sync == MP_SYNC_PP ? pp_period(c, w) : sync_period(c, w)) != MP_OK)
        goto done;
    fill_totals(c);
    bottleneck_text(c);
    quality_default(c->sync, c->xch, c->xs->compress, &out->quality_factor, &out->quality_published,
                    out->quality_source, sizeof out->quality_source);
    if (opts->quality_factor > 0) {
        out->quality_factor = opts->quality_factor;
        out->quality_published = 0;
        snprintf(out->quality_source, sizeof out->quality_source, "stated by the user");
    }
    out->tokens_per_s_at_quality = out->tokens_per_s / out->quality_factor;
    if (!isfinite(out->period_s) || !(out->period_s > 0) || !isfinite(out->tokens_per_s) ||
        !isfinite(out->wan_bytes) || !isfinite(out->mfu)) {
        mp_diag_add(diag, "islands: the prediction is not finite (period %g s)", out->period_s);
        st = MP_ERR_RANGE;
    }
done:
    free(w);
    free(c->est);
    free(c);
    return st;
}
