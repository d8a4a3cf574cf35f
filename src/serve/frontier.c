/* src/serve/frontier.c — the highest request rate that meets an SLO (MLPerf Inference's Server
 * scenario: the submitter reports the highest target QPS whose p99 latencies pass its
 * constraints; mlcommons/inference loadgen), and the SLO-throughput frontier: that rate at SLOs
 * scaled from the given one. Each probe is one full simulation of the same requests (same seed,
 * coupled arrivals: only their times scale with the rate). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshplan/serve.h"
#include "serve/serve_internal.h"

#define RATE_STEPS 12 /* bisection steps: the bracket narrowed to 2^-12 of itself */

static int meets(const mp_serve_result *r, const mp_serve_opts *o)
{
    return r->feasible && (!(o->slo_ttft_s > 0) || r->ttft_s.p99 <= o->slo_ttft_s) &&
           (!(o->slo_tpot_s > 0) || r->tpot_s.p99 <= o->slo_tpot_s);
}

/* One run at rate, long enough that an overload shows: the arrivals span at least LONG_E2E mean
 * end-to-end latencies (else the backlog of a rate above capacity has no time to build and the
 * p99 looks fine), with more requests as needed (at most MAX_PROBE). */
#define LONG_E2E 5.0
#define MAX_PROBE 20000
static mp_status probe(const mp_model *m, const mp_cluster *c, mp_serve_opts *o, double rate,
                       mp_serve_result *r, int *ok, mp_diag *d)
{
    o->rate_per_s = rate;
    mp_status st = MP_OK;
    for (int k = 0; k < 4; k++) {
        mp_serve_result_free(r);
        st = mp_serve_run(m, c, o, r, d);
        double need = LONG_E2E * r->e2e_s.mean * rate / (1.0 - o->warmup_frac);
        if (st != MP_OK || !r->feasible || (double)o->requests >= need || o->requests >= MAX_PROBE)
            break;
        o->requests = (int64_t)fmin((double)MAX_PROBE, ceil(1.2 * need));
    }
    *ok = st == MP_OK && meets(r, o);
    if (st == MP_OK && !r->feasible) {
        mp_diag_add(d, "serve: %s", r->reason);
        return MP_ERR_INPUT;
    }
    return st;
}

mp_status mp_serve_max_rate(const mp_model *m, const mp_cluster *c, const mp_serve_opts *base,
                            double start_rate, double *rate, mp_serve_result *r, mp_diag *d)
{
    mp_serve_opts o = *base;
    o.arrivals = base->arrivals == MP_ARRIVE_GAMMA ? MP_ARRIVE_GAMMA : MP_ARRIVE_POISSON;
    *rate = 0;
    memset(r, 0, sizeof *r);
    if (!(o.slo_ttft_s > 0) && !(o.slo_tpot_s > 0)) {
        mp_diag_add(d, "slo: expected a TTFT or TPOT bound to find the highest rate that meets it%s", "");
        return MP_ERR_INPUT;
    }
    double lo = 0, hi = start_rate > 0 && isfinite(start_rate) ? start_rate : 1.0;
    int ok = 0;
    mp_status st;
    for (int i = 0; i < 30; i++) { /* double until it fails */
        if ((st = probe(m, c, &o, hi, r, &ok, d)) != MP_OK)
            return st;
        if (!ok)
            break;
        lo = hi;
        hi *= 2;
    }
    /* A probe may lengthen the run (probe()); a rate that met the SLO on a shorter run may not on
     * the longer one: then search again below it with the longer run (at most 3 passes). */
    for (int pass = 0; pass < 3; pass++) {
        for (int i = 0; i < 30 && lo == 0; i++) { /* nothing met yet: divide by 4 until one meets */
            /* ... but not below the rate whose arrivals would overrun the clock (SV_MAX_SPAN_S,
             * refused by sv_requests_make): n gaps of mean 1 / r and CV cv (1 for Poisson) span
             * n / r with sd sqrt(n) cv / r; stop where mean + 4 sd passes the bound. Requests that
             * far apart never queue, so a lower rate could not meet an SLO this one missed. */
            double cv = o.arrivals == MP_ARRIVE_GAMMA ? o.burst_cv : 1.0, n = (double)o.requests;
            if (hi / 4 < (n + 4.0 * sqrt(n) * cv) / SV_MAX_SPAN_S)
                break;
            hi /= 4;
            if ((st = probe(m, c, &o, hi, r, &ok, d)) != MP_OK)
                return st;
            if (ok)
                lo = hi, hi *= 4;
        }
        if (lo == 0) {
            mp_diag_add(d, "no request rate above %.3g/s meets the SLO (p99 TTFT %.3g s, TPOT %.3g s)", hi,
                        o.slo_ttft_s, o.slo_tpot_s);
            return MP_ERR_RANGE;
        }
        for (int i = 0; i < RATE_STEPS; i++) {
            double mid = 0.5 * (lo + hi);
            if ((st = probe(m, c, &o, mid, r, &ok, d)) != MP_OK)
                return st;
            if (ok)
                lo = mid;
            else
                hi = mid;
        }
        if ((st = probe(m, c, &o, lo, r, &ok, d)) != MP_OK || ok)
            break;
        hi = lo;
        lo = 0;
    }
    *rate = ok ? lo : 0;
    if (!ok) {
        mp_diag_add(d, "no stable request rate meets the SLO (p99 TTFT %.3g s, TPOT %.3g s)", o.slo_ttft_s, o.slo_tpot_s);
        return MP_ERR_RANGE;
    }
    return st;
}

mp_status mp_serve_frontier(const mp_model *m, const mp_cluster *c, const mp_serve_opts *base,
                            mp_serve_frontier_point *pts, int npts, mp_diag *d)
{
    static const double scale[] = {0.25, 0.5, 1.0, 2.0, 4.0};
    mp_serve_result *r = malloc(sizeof *r);
    if (!r)
        return MP_ERR_NOMEM;
    double start = base->rate_per_s > 0 ? base->rate_per_s : 1.0;
    for (int i = 0; i < npts && i < 5; i++) {
        mp_serve_opts o = *base;
        o.keep_timeline = 0;
        o.slo_ttft_s *= scale[i];
        o.slo_tpot_s *= scale[i];
        mp_serve_frontier_point *p = &pts[i];
        memset(p, 0, sizeof *p);
        p->slo_scale = scale[i];
        p->slo_ttft_s = o.slo_ttft_s;
        p->slo_tpot_s = o.slo_tpot_s;
        mp_diag dd = {0};
        mp_status st = mp_serve_max_rate(m, c, &o, start, &p->rate_per_s, r, &dd);
        if (st == MP_OK) {
            p->output_tokens_per_s = r->output_tokens_per_s;
            p->ttft_p99_s = r->ttft_s.p99;
            p->tpot_p99_s = r->tpot_s.p99;
            p->usd_per_mtoken = r->usd_per_mtoken;
            start = p->rate_per_s;
        } else if (st != MP_ERR_RANGE) {
            mp_diag_add(d, "%s", dd.text);
            mp_serve_result_free(r);
            free(r);
            return st;
        }
        /* a run that met a tighter SLO meets this looser one too: the frontier never falls (a
         * search near capacity, on runs of other lengths, may land a little lower) */
        if (i > 0 && pts[i - 1].rate_per_s > p->rate_per_s) {
            mp_serve_frontier_point keep = *p;
            *p = pts[i - 1];
            p->slo_scale = keep.slo_scale;
            p->slo_ttft_s = keep.slo_ttft_s;
            p->slo_tpot_s = keep.slo_tpot_s;
        }
        mp_serve_result_free(r);
    }
    free(r);
    return MP_OK;
}
