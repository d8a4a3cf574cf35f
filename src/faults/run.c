/* src/faults/run.c — a training run with failures: its expected wall-clock (analytical) and its
 * distribution (Monte Carlo), the optimal checkpoint interval, and the spare pool.
 *
 * The process (include/meshplan/faults.h, docs/faults.md): work W is cut into n = ceil(W / tau)
 * segments; the first n - 1 are followed by a checkpoint stall d, so they need x = tau + d seconds
 * of uninterrupted running and the last needs x_n = W - (n - 1) tau. Failures are a Poisson
 * process of rate lambda over running time; a failure loses the segment in progress and costs a
 * downtime D (spare wait, restart, checkpoint load, async lag) during which nothing fails.
 *
 * Expectation of one segment (Daly 2006's exponential model with failure-free restarts): the
 * attempts form a geometric sequence with success probability e^{-lambda x}, so the expected
 * number of failures is e^{lambda x} - 1; a failed attempt runs E[T | T < x] = 1/lambda -
 * x e^{-lambda x} / (1 - e^{-lambda x}) before failing. Summing,
 *     E[segment] = x + (e^{lambda x} - 1)(E[T | T < x] + E[D]) = (e^{lambda x} - 1)(1/lambda + E[D]).
 *
 * The Monte Carlo draws that same process cheaply: because failures are memoryless, after each
 * (re)start it draws the running time to the next failure once, then completes every segment that
 * fits in it at once — O(failures) work per trial, not O(segments).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "meshplan/faults.h"

#define MC_MAX_TRIALS 10000000
#define MC_MAX_FAILURES 1000000000.0

static mp_status check_params(const mp_run_params *p, mp_diag *d)
{
    int bad = 0;
#define REQ(cond, fmt, v) do { if (!(cond)) { mp_diag_add(d, fmt, v); bad++; } } while (0)
    REQ(p->work_s > 0 && isfinite(p->work_s), "run.work_s = %g: expected a positive finite number", p->work_s);
    REQ(p->interval_s > 0 && isfinite(p->interval_s), "run.interval_s = %g: expected a positive finite number", p->interval_s);
    REQ(p->ckpt_s >= 0 && isfinite(p->ckpt_s), "run.ckpt_s = %g: expected a finite number >= 0", p->ckpt_s);
    REQ(p->down_s >= 0 && isfinite(p->down_s), "run.down_s = %g: expected a finite number >= 0", p->down_s);
    REQ(p->fail_per_s >= 0 && isfinite(p->fail_per_s), "run.fail_per_s = %g: expected a finite number >= 0", p->fail_per_s);
    REQ(p->spare_frac >= 0 && p->spare_frac <= 1, "run.spare_frac = %g: expected a number in [0, 1]", p->spare_frac);
    REQ(p->repair_s >= 0 && isfinite(p->repair_s), "run.repair_s = %g: expected a finite number >= 0", p->repair_s);
    REQ(p->spare_nodes >= 0 && p->spare_nodes <= 1000000, "run.spare_nodes = %d: expected 0 .. 1000000", p->spare_nodes);
#undef REQ
    return bad ? MP_ERR_INPUT : MP_OK;
}

double mp_erlang_b(int servers, double load)
{
    /* Recurrence B(0) = 1, B(k) = a B(k-1) / (k + a B(k-1)) (numerically stable form of
     * Erlang's 1917 loss formula). */
    if (load <= 0)
        return servers > 0 ? 0.0 : 1.0;
    double b = 1.0;
    for (int k = 1; k <= servers; k++)
        b = load * b / (k + load * b);
    return b;
}

int mp_spares_for(double spare_per_s, double repair_s, double target)
{
    double a = spare_per_s * repair_s; /* nodes in repair on average (Little's law) */
    if (!(a > 0) || !(target > 0) || target >= 1)
        return 0;
    for (int s = 0; s < 1000000; s++)
        if (mp_erlang_b(s, a) <= target)
            return s;
    return 1000000;
}

/* Expected wait for a spare per hardware failure: the job finds all S spares in repair with the
 * Erlang B probability, and then waits for the first of S + 1 repairs to finish: the S in progress
 * have residual times uniform on [0, repair] in a stationary M/D/S/S pool (the new one needs the
 * whole repair), so the first ends after repair / (S + 1) on average. Exact for S = 0. */
static double expected_wait(int spares, double spare_rate_per_s, double repair_s)
{
    if (repair_s <= 0 || spare_rate_per_s <= 0)
        return 0.0;
    return mp_erlang_b(spares, spare_rate_per_s * repair_s) * repair_s / (spares + 1.0);
}

/* Expected wall-clock of a segment needing x seconds of running, with mean downtime Dm. */
static double seg_expect(double lambda, double x, double Dm, double *failures, double *up)
{
    if (lambda <= 0) {
        *failures = 0.0;
        *up = x;
        return x;
    }
    double f = expm1(lambda * x); /* expected failures */
    *failures = f;
    *up = f / lambda;            /* running time, successful attempt included */
    return f * (1.0 / lambda + Dm);
}

mp_status mp_run_expected(const mp_run_params *p, mp_run_expect *out, mp_diag *d)
{
    memset(out, 0, sizeof *out);
    mp_status st = check_params(p, d);
    if (st != MP_OK)
        return st;
    const double lam = p->fail_per_s, tau = p->interval_s, W = p->work_s;
    const double n = ceil(W / tau - 1e-12);
    const double x = tau + p->ckpt_s, xl = W - (n - 1.0) * tau;
    /* The spare pool sees hardware failures only while the job runs: its offered load uses the
     * rate over wall-clock, lambda_spare x (running share); two fixed-point passes suffice since
     * the wait is a small correction. */
    double run_share = 1.0, wait = 0.0;
    for (int it = 0; it < 3; it++) {
        wait = expected_wait(p->spare_nodes, lam * p->spare_frac * run_share, p->repair_s);
        double Dm = p->down_s + p->spare_frac * wait;
        double f1, u1, fl, ul;
        double e1 = seg_expect(lam, x, Dm, &f1, &u1);
        double el = seg_expect(lam, xl, Dm, &fl, &ul);
        out->wall_s = (n - 1.0) * e1 + el;
        out->failures = (n - 1.0) * f1 + fl;
        out->up_s = (n - 1.0) * u1 + ul;
        run_share = out->wall_s > 0 ? out->up_s / out->wall_s : 1.0;
    }
    out->checkpoints = n - 1.0;
    out->ckpt_s = (n - 1.0) * p->ckpt_s;
    out->lost_s = fmax(0.0, out->up_s - W - out->ckpt_s);
    out->wait_s = out->failures * p->spare_frac * wait;
    out->down_s = out->failures * p->down_s;
    if (!isfinite(out->wall_s) || out->wall_s > 1e300) {
        mp_diag_add(d, "run: expected wall-clock overflows: failures (every %.3g s) are far more "
                       "frequent than one checkpoint interval plus its checkpoint (%.3g s)",
                    1.0 / lam, x);
        return MP_ERR_RANGE;
    }
    out->goodput = W / out->wall_s;
    return MP_OK;
}

/* ---- Monte Carlo ----------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Linear interpolation between order statistics (the "type 7" quantile of R and NumPy). */
static double quantile_sorted(const double *v, int n, double q)
{
    double h = (n - 1) * q;
    int lo = (int)floor(h);
    int hi = lo + 1 < n ? lo + 1 : lo;
    return v[lo] + (h - lo) * (v[hi] - v[lo]);
}

/* Repairs in progress: completion times, at most spares + 1 of them. */
typedef struct {
    double *t;
    int n, cap;
} repairs;

/* A hardware failure at wall time now: the failed node goes to repair; returns the wait for a
 * spare (0 when one is healthy). */
static double take_spare(repairs *r, double now, double repair_s)
{
    int k = 0;
    for (int i = 0; i < r->n; i++) /* drop repairs finished by now */
        if (r->t[i] > now)
            r->t[k++] = r->t[i];
    r->n = k;
    r->t[r->n++] = now + repair_s;
    if (r->n <= r->cap - 1) /* cap - 1 = spares: a healthy spare is left */
        return 0.0;
    int mi = 0; /* all spares in repair: wait for the first repair to finish, use that node */
    for (int i = 1; i < r->n; i++)
        if (r->t[i] < r->t[mi])
            mi = i;
    double wait = r->t[mi] - now;
    r->t[mi] = r->t[--r->n];
    return wait;
}

mp_status mp_run_simulate(const mp_run_params *p, int trials, uint64_t seed, mp_run_mc *out,
                          mp_diag *d)
{
    memset(out, 0, sizeof *out);
    mp_status st = check_params(p, d);
    if (st != MP_OK)
        return st;
    if (trials < 1 || trials > MC_MAX_TRIALS) {
        mp_diag_add(d, "run: trials = %d: expected 1 .. %d", trials, MC_MAX_TRIALS);
        return MP_ERR_INPUT;
    }
    double *wall = malloc(sizeof *wall * (size_t)trials);
    double *good = malloc(sizeof *good * (size_t)trials);
    repairs rp = {malloc(sizeof(double) * ((size_t)p->spare_nodes + 1)), 0, p->spare_nodes + 1};
    if (!wall || !good || !rp.t) {
        free(wall);
        free(good);
        free(rp.t);
        return MP_ERR_NOMEM;
    }
    const double lam = p->fail_per_s, tau = p->interval_s, W = p->work_s;
    const double n = ceil(W / tau - 1e-12);
    const double x = tau + p->ckpt_s, xl = W - (n - 1.0) * tau;
    mp_rng rng;
    mp_rng_seed(&rng, seed);
    double sum_wall = 0, sum_good = 0, sum_fail = 0, sum_wait = 0;
    for (int k = 0; k < trials; k++) {
        double t = 0.0, seg = 0.0, fails = 0.0, waited = 0.0; /* seg: segments completed */
        rp.n = 0;
        for (;;) {
            double left = n - 1.0 - seg; /* full segments before the last */
            double T = lam > 0 ? mp_rng_exp1(&rng) / lam : INFINITY; /* running time to failure */
            double m = isfinite(T) ? floor(T / x) : left;
            if (m >= left && T - left * x >= xl) { /* everything left fits before the failure */
                t += left * x + xl;
                break;
            }
            /* the failure strikes: segments completed before it are kept */
            seg += fmin(m, left);
            t += T;
            fails += 1.0;
            if (fails > MC_MAX_FAILURES) {
                free(wall);
                free(good);
                free(rp.t);
                mp_diag_add(d, "run: more than %.0f failures in one simulated run: it would "
                               "never finish", MC_MAX_FAILURES);
                return MP_ERR_RANGE;
            }
            if (p->spare_frac > 0 && mp_rng_uniform(&rng) < p->spare_frac) {
                double w = take_spare(&rp, t, p->repair_s);
                t += w;
                waited += w;
            }
            t += p->down_s;
        }
        wall[k] = t;
        good[k] = W / t;
        sum_wall += t;
        sum_good += good[k];
        sum_fail += fails;
        sum_wait += waited;
    }
    out->trials = trials;
    out->wall_mean_s = sum_wall / trials;
    out->goodput_mean = sum_good / trials;
    out->failures_mean = sum_fail / trials;
    out->wait_mean_s = sum_wait / trials;
    qsort(wall, (size_t)trials, sizeof *wall, cmp_double);
    qsort(good, (size_t)trials, sizeof *good, cmp_double);
    out->wall_p10_s = quantile_sorted(wall, trials, 0.10);
    out->wall_p90_s = quantile_sorted(wall, trials, 0.90);
    out->goodput_p10 = quantile_sorted(good, trials, 0.10);
    out->goodput_p90 = quantile_sorted(good, trials, 0.90);
    free(wall);
    free(good);
    free(rp.t);
    return MP_OK;
}

/* ---- the checkpoint interval ------------------------------------------------------------------ */

double mp_ckpt_interval_young(double ckpt_s, double mtbf_s)
{
    /* Young 1974, eq. for the first-order optimum: T_opt = sqrt(2 C M). */
    return sqrt(2.0 * ckpt_s * mtbf_s);
}

double mp_ckpt_interval_daly(double ckpt_s, double mtbf_s)
{
    /* Daly 2006, higher-order estimate:
     *   tau = sqrt(2 d M) [1 + (1/3) sqrt(d / 2M) + (1/9) (d / 2M)] - d   for d < 2M,
     *   tau = M                                                          otherwise. */
    if (ckpt_s >= 2.0 * mtbf_s)
        return mtbf_s;
    double r = ckpt_s / (2.0 * mtbf_s);
    return sqrt(2.0 * ckpt_s * mtbf_s) * (1.0 + sqrt(r) / 3.0 + r / 9.0) - ckpt_s;
}

double mp_ckpt_interval_exact(double ckpt_s, double mtbf_s)
{
    /* Minimise g(t) = (e^{(t + d)/M} - 1) / t, the expected wall-clock per unit of work of the
     * model above (the downtime factor 1/lambda + E[D] does not move the minimum). g'(t) = 0 gives
     * h(t) = (1 - t/M) e^{(t + d)/M} - 1 = 0, with h(0) = e^{d/M} - 1 >= 0 and h(M) = -1 < 0, h
     * decreasing on (0, M): bisection. */
    if (!(ckpt_s > 0) || !(mtbf_s > 0))
        return 0.0;
    double lo = 0.0, hi = mtbf_s;
    for (int i = 0; i < 200; i++) {
        double mid = 0.5 * (lo + hi);
        double h = (1.0 - mid / mtbf_s) * exp((mid + ckpt_s) / mtbf_s) - 1.0;
        if (h > 0)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}
