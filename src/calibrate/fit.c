/* src/calibrate/fit.c — fit the constants a log determines, through the cost models that use them.
 *
 * Link: the Hockney alpha-beta model as coll implements it (coll.h: per-hop latency_s and the
 * tier's efficiency_frac of its line rate; LL vs Simple protocol; ring, tree, NVLS chosen as
 * NCCL's tuner would). The fit is least squares on log time (relative errors weigh an 8 B and an
 * 8 GB point alike; Hockney 1994 fits the same two parameters on time), done by a log grid over
 * (latency_s, efficiency_frac) refined twice around the best point, evaluating mp_coll_time at
 * each: the model is piecewise (protocol and algorithm switch with size), so a closed-form linear
 * fit of t = a + b*bytes would fit a different model than the one coll runs. Least trimmed
 * squares (objective() below) keeps warm-up artefacts out of the fit.
 * GEMM: the estimator's throughput rises monotonically with gemm_sustained_frac, so the value that
 * reproduces a measured tokens/s is found by bisection.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "meshplan/calibrate.h"

static double row_time(const mp_nccl_row *r)
{
    return r->time_s[0] > 0 ? r->time_s[0] : r->time_s[1];
}

static int row_used(size_t i, int mod, int rem)
{
    return mod <= 1 || (int)(i % (size_t)mod) == rem;
}

static void sort_d(double *v, size_t n)
{
    for (size_t i = 1; i < n; i++) /* insertion sort: a sweep has at most a few dozen sizes */
        for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double x = v[j];
            v[j] = v[j - 1];
            v[j - 1] = x;
        }
}

/* Least trimmed squares on log time (Rousseeuw 1984): the sum of the smallest TRIM_KEEP share of
 * the squared log errors, so a few warm-up artefacts (a 32 KiB all-reduce slower than 128 KiB,
 * docs/cluster.md section 5) do not pull the fit. The median |error| % goes into *med. */
#define TRIM_KEEP 0.8
static double objective(const mp_cluster *c, const mp_nccl_table *t, int mod, int rem, double *med)
{
    double sq[MP_CAL_MAX_ROWS], errs[MP_CAL_MAX_ROWS];
    size_t n = 0;
    mp_group g = {t->nranks, 1};
    for (size_t i = 0; i < t->nrows && n < MP_CAL_MAX_ROWS; i++) {
        if (!row_used(i, mod, rem))
            continue;
        mp_coll_cost cost;
        double meas = row_time(&t->rows[i]);
        if (mp_coll_time_among(c, t->op, t->rows[i].bytes, g, MP_ALGO_MASK_NCCL, &cost) != MP_OK ||
            !(cost.total_s > 0) || !(meas > 0))
            return INFINITY;
        double e = log(cost.total_s / meas);
        sq[n] = e * e;
        errs[n++] = fabs(cost.total_s / meas - 1.0) * 100.0;
    }
    sort_d(sq, n);
    size_t keep = (size_t)ceil(TRIM_KEEP * (double)n);
    double sse = 0;
    for (size_t i = 0; i < keep && i < n; i++)
        sse += sq[i];
    if (med) {
        sort_d(errs, n);
        *med = n == 0 ? 0 : n % 2 ? errs[n / 2] : 0.5 * (errs[n / 2 - 1] + errs[n / 2]);
    }
    return sse;
}

double mp_cal_link_error_pct(const mp_cluster *c, const mp_nccl_table *t, int mod, int rem)
{
    double med = 0;
    return isfinite(objective(c, t, mod, rem, &med)) ? med : INFINITY;
}

static mp_status check_sweep(const mp_cluster *c, const mp_nccl_table *t, int mod, int rem,
                             int *outer, mp_diag *diag)
{
    size_t used = 0;
    for (size_t i = 0; i < t->nrows; i++) {
        used += (size_t)row_used(i, mod, rem);
        if (!(t->rows[i].bytes > 0) || !(row_time(&t->rows[i]) > 0)) {
            mp_diag_add(diag, "line %d: size %.0f B, time %g s: expected both > 0 to fit",
                        t->rows[i].line, t->rows[i].bytes, row_time(&t->rows[i]));
            return MP_ERR_INPUT;
        }
    }
    if (used < 2 || t->nranks < 2 || t->nranks > c->num_gpus) {
        mp_diag_add(diag, "sweep at lines %d-%d: %zu sizes on %lld ranks (cluster of %lld GPUs): "
                    "expected at least 2 sizes on 2 to %lld ranks", t->first_line, t->last_line,
                    used, (long long)t->nranks, (long long)c->num_gpus, (long long)c->num_gpus);
        return MP_ERR_INPUT;
    }
    mp_placement pl;
    mp_group_place(c, (mp_group){t->nranks, 1}, &pl);
    *outer = pl.outer_tier;
    return MP_OK;
}

/* The (latency, efficiency) of tier `tier` of w minimising the objective: a 41 x 41 log grid over
 * latency 1e-8..1e-2 s and efficiency 0.01..1, refined twice to two grid steps either side of the
 * best point. Leaves w at the best point; returns the objective there. */
static double grid_fit(mp_cluster *w, int tier, const mp_nccl_table *t, int mod, int rem)
{
    double llo = log(1e-8), lhi = log(1e-2), elo = log(0.01), ehi = 0.0;
    double best = INFINITY, bl = w->tier[tier].latency_s, be = w->tier[tier].efficiency_frac;
    enum { NL = 41, NE = 41 };
    for (int pass = 0; pass < 3; pass++) {
        for (int i = 0; i < NL; i++)
            for (int j = 0; j < NE; j++) {
                w->tier[tier].latency_s = exp(llo + (lhi - llo) * i / (NL - 1));
                w->tier[tier].efficiency_frac = fmin(1.0, exp(elo + (ehi - elo) * j / (NE - 1)));
                double f = objective(w, t, mod, rem, NULL);
                if (f < best) {
                    best = f;
                    bl = w->tier[tier].latency_s;
                    be = w->tier[tier].efficiency_frac;
                }
            }
        double dl = 2 * (lhi - llo) / (NL - 1), de = 2 * (ehi - elo) / (NE - 1);
        llo = log(bl) - dl, lhi = log(bl) + dl;
        elo = log(be) - de, ehi = fmin(0.0, log(be) + de);
    }
    w->tier[tier].latency_s = bl;
    w->tier[tier].efficiency_frac = be;
    return best;
}

/* 1 when coll serves the sweep's largest size with in-network reduction (NVLS), whose bandwidth
 * is tier 0's in_network_algbw_frac of line rate rather than efficiency_frac (coll.h). */
static int nvls_serves_largest(const mp_cluster *w, const mp_nccl_table *t)
{
    mp_coll_cost k;
    return t->nrows && mp_coll_time_among(w, t->op, t->rows[t->nrows - 1].bytes,
                                          (mp_group){t->nranks, 1}, MP_ALGO_MASK_NCCL, &k) == MP_OK &&
           k.algo == MP_ALGO_IN_NETWORK;
}

/* The NVLS fraction in [0.2, 1] minimising the objective, by a 81-point grid refined twice. */
static double nvls_fit(mp_cluster *w, const mp_nccl_table *t, int mod, int rem)
{
    double lo = 0.2, hi = 1.0, best = INFINITY, bf = w->tier[0].in_network_algbw_frac;
    for (int pass = 0; pass < 3; pass++) {
        for (int i = 0; i <= 80; i++) {
            w->tier[0].in_network_algbw_frac = lo + (hi - lo) * i / 80.0;
            double f = objective(w, t, mod, rem, NULL);
            if (f < best)
                best = f, bf = w->tier[0].in_network_algbw_frac;
        }
        double d = 2 * (hi - lo) / 80.0;
        lo = fmax(0.2, bf - d), hi = fmin(1.0, bf + d);
    }
    w->tier[0].in_network_algbw_frac = bf;
    return best;
}

mp_status mp_cal_fit_link(const mp_cluster *c, const mp_nccl_table *t, int step_mod, int step_rem,
                          mp_cal_link_fit *out, mp_diag *diag)
{
    int tier;
    memset(out, 0, sizeof *out);
    mp_status st = check_sweep(c, t, step_mod, step_rem, &tier, diag);
    if (st)
        return st;
    mp_cluster *w = malloc(sizeof *w);
    if (!w)
        return MP_ERR_NOMEM;
    *w = *c;
    out->tier = tier;
    out->before_latency_s = c->tier[tier].latency_s;
    out->before_efficiency_frac = c->tier[tier].efficiency_frac;
    out->before_in_network_algbw_frac = c->tier[0].in_network_algbw_frac > 0
                                            ? c->tier[0].in_network_algbw_frac
                                            : MP_COLL_NVLS_DEFAULT_FRAC;
    out->before_err_pct = mp_cal_link_error_pct(c, t, step_mod, step_rem);
    double best = grid_fit(w, tier, t, step_mod, step_rem);
    /* Coordinate descent (twice) when NVLS carries the large sizes of a sweep inside one node:
     * efficiency_frac then bounds only the sizes below the switch, and the NVLS fraction the ones
     * above. A multi-node sweep leaves tier 0 alone (its NVLS phase and the network's are not
     * separable from one curve). */
    if (tier == 0 && c->tier[0].in_network_reduction && nvls_serves_largest(w, t)) {
        w->tier[0].in_network_algbw_frac = out->before_in_network_algbw_frac;
        for (int k = 0; k < 2; k++) {
            nvls_fit(w, t, step_mod, step_rem);
            best = grid_fit(w, tier, t, step_mod, step_rem);
        }
        out->nvls_fitted = 1;
        out->in_network_algbw_frac = w->tier[0].in_network_algbw_frac;
    }
    out->latency_s = w->tier[tier].latency_s;
    out->efficiency_frac = w->tier[tier].efficiency_frac;
    out->after_err_pct = mp_cal_link_error_pct(w, t, step_mod, step_rem);
    for (size_t i = 0; i < t->nrows; i++)
        out->npoints += row_used(i, step_mod, step_rem);
    free(w);
    if (!isfinite(best)) {
        mp_diag_add(diag, "sweep at lines %d-%d: the cost model gives no finite time for it on "
                    "this cluster", t->first_line, t->last_line);
        return MP_ERR_RANGE;
    }
    return MP_OK;
}

/* Set a fit's constants on w. */
static void apply_fit(mp_cluster *w, const mp_cal_link_fit *f)
{
    w->tier[f->tier].latency_s = f->latency_s;
    w->tier[f->tier].efficiency_frac = f->efficiency_frac;
    if (f->nvls_fitted)
        w->tier[0].in_network_algbw_frac = f->in_network_algbw_frac;
}

mp_status mp_cal_holdout(const mp_cluster *c, const mp_nccl_table *t, double *before_pct,
                         double *held_out_pct, mp_diag *diag)
{
    mp_cal_link_fit f;
    mp_status st = mp_cal_fit_link(c, t, 2, 0, &f, diag);
    if (st)
        return st;
    mp_cluster *w = malloc(sizeof *w);
    if (!w)
        return MP_ERR_NOMEM;
    *w = *c;
    apply_fit(w, &f);
    *before_pct = mp_cal_link_error_pct(c, t, 2, 1);
    *held_out_pct = mp_cal_link_error_pct(w, t, 2, 1);
    free(w);
    return MP_OK;
}

static double predict_tps(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                          mp_estimate_opts *o, mp_estimate *e, mp_diag *diag, mp_status *st)
{
    *st = mp_estimate_plan(m, c, p, o, e, diag);
    return *st == MP_OK ? e->tokens_per_s_per_gpu : 0;
}

mp_status mp_cal_fit_gemm(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                          const mp_estimate_opts *base, double measured_tps_per_gpu, double *fitted,
                          double *before_err_pct, double *after_err_pct, mp_diag *diag)
{
    if (!(measured_tps_per_gpu > 0)) {
        mp_diag_add(diag, "measured tokens/s per GPU = %g: expected > 0", measured_tps_per_gpu);
        return MP_ERR_INPUT;
    }
    mp_estimate *e = malloc(sizeof *e);
    if (!e)
        return MP_ERR_NOMEM;
    mp_estimate_opts o;
    if (base)
        o = *base;
    else
        mp_estimate_opts_init(&o);
    o.skip_text = 1;
    mp_status st;
    double t0 = predict_tps(m, c, p, &o, e, diag, &st);
    *before_err_pct = 100.0 * (t0 - measured_tps_per_gpu) / measured_tps_per_gpu;
    double lo = 0.05, hi = 1.5;
    o.gemm_sustained_frac = hi;
    double thi = st ? 0 : predict_tps(m, c, p, &o, e, diag, &st);
    o.gemm_sustained_frac = lo;
    double tlo = st ? 0 : predict_tps(m, c, p, &o, e, diag, &st);
    if (st == MP_OK && (thi < measured_tps_per_gpu || tlo > measured_tps_per_gpu)) {
        mp_diag_add(diag, "measured %.4g tokens/s per GPU is outside what gemm_sustained_frac in "
                    "[%.2f, %.2f] gives (%.4g to %.4g): the gap is not GEMM efficiency; not fitted",
                    measured_tps_per_gpu, lo, hi, tlo, thi);
        st = MP_ERR_INPUT;
    }
    for (int i = 0; st == MP_OK && i < 60 && hi - lo > 1e-6; i++) {
        o.gemm_sustained_frac = 0.5 * (lo + hi);
        double tm = predict_tps(m, c, p, &o, e, diag, &st);
        if (tm < measured_tps_per_gpu)
            lo = o.gemm_sustained_frac;
        else
            hi = o.gemm_sustained_frac;
    }
    if (st == MP_OK) {
        *fitted = 0.5 * (lo + hi);
        o.gemm_sustained_frac = *fitted;
        double t1 = predict_tps(m, c, p, &o, e, diag, &st);
        *after_err_pct = 100.0 * (t1 - measured_tps_per_gpu) / measured_tps_per_gpu;
    }
    free(e);
    return st;
}

/* Sum over the points of log(predicted / measured tokens/s)^2 at gemm_sustained_frac x. */
static double gemm_objective(const mp_cal_train_point *pts, int n, mp_estimate_opts *o,
                             mp_estimate *e, double x, mp_diag *diag, mp_status *st)
{
    double sse = 0;
    o->gemm_sustained_frac = x;
    for (int i = 0; i < n && *st == MP_OK; i++) {
        double t = predict_tps(pts[i].m, pts[i].c, pts[i].p, o, e, diag, st);
        double r = *st == MP_OK && t > 0 ? log(t / pts[i].measured_tps_per_gpu) : 0;
        sse += r * r;
    }
    return sse;
}

mp_status mp_cal_fit_gemm_joint(const mp_cal_train_point *pts, int n, const mp_estimate_opts *base,
                                double *fitted, double *after_med_pct, mp_diag *diag)
{
    if (n < 1 || n > MP_CAL_MAX_TRAIN) {
        mp_diag_add(diag, "training logs = %d: expected 1 to %d", n, MP_CAL_MAX_TRAIN);
        return MP_ERR_INPUT;
    }
    for (int i = 0; i < n; i++)
        if (!(pts[i].measured_tps_per_gpu > 0)) {
            mp_diag_add(diag, "point %d: measured tokens/s per GPU = %g: expected > 0", i,
                        pts[i].measured_tps_per_gpu);
            return MP_ERR_INPUT;
        }
    mp_estimate *e = malloc(sizeof *e);
    if (!e)
        return MP_ERR_NOMEM;
    mp_estimate_opts o;
    if (base)
        o = *base;
    else
        mp_estimate_opts_init(&o);
    o.skip_text = 1;
    mp_status st = MP_OK;
    /* Golden-section search (Kiefer 1953) on [0.05, 1.5]: each term falls then rises in x (the
     * prediction rises monotonically with it), so the sum has one minimum in practice. */
    const double g = 0.5 * (sqrt(5.0) - 1.0);
    double a = 0.05, b = 1.5, x1 = b - g * (b - a), x2 = a + g * (b - a);
    double f1 = gemm_objective(pts, n, &o, e, x1, diag, &st);
    double f2 = gemm_objective(pts, n, &o, e, x2, diag, &st);
    for (int it = 0; it < 60 && st == MP_OK && b - a > 1e-6; it++) {
        if (f1 <= f2) {
            b = x2, x2 = x1, f2 = f1, x1 = b - g * (b - a);
            f1 = gemm_objective(pts, n, &o, e, x1, diag, &st);
        } else {
            a = x1, x1 = x2, f1 = f2, x2 = a + g * (b - a);
            f2 = gemm_objective(pts, n, &o, e, x2, diag, &st);
        }
    }
    double errs[MP_CAL_MAX_TRAIN];
    if (st == MP_OK) {
        *fitted = 0.5 * (a + b);
        o.gemm_sustained_frac = *fitted;
        for (int i = 0; i < n && st == MP_OK; i++)
            errs[i] = fabs(predict_tps(pts[i].m, pts[i].c, pts[i].p, &o, e, diag, &st) /
                           pts[i].measured_tps_per_gpu - 1.0) * 100.0;
        sort_d(errs, (size_t)n);
        *after_med_pct = n % 2 ? errs[n / 2] : 0.5 * (errs[n / 2 - 1] + errs[n / 2]);
    }
    free(e);
    return st;
}
