/* src/probe/probe_mpi_model.c — MPI's own all-reduce predicted from point-to-point and local
 * probes (meshplan/probe.h, docs/probe.md section "The MPI model").
 *
 * The probe measures an MPI_Allreduce curve; to predict it honestly the model follows what the
 * library runs: the algorithm its decision rules pick for the rank count and size (Open MPI's
 * coll/tuned fixed rules switch between recursive doubling, ring and Rabenseifner several times
 * between 1 KiB and 1 MiB), each step of that algorithm priced at its own message size by a
 * point-to-point curve fitted in protocol regimes (the BTL's eager/rendezvous switches), plus
 * the local reduction and copy. None of its figures comes from an all-reduce: the curve stays a
 * held-out prediction. Leaves out: overlap of a step's reduction with the next receive (ring),
 * non-commutative operations, datatypes other than 4-byte elements for the ring's count < ranks
 * fallback, user-set dynamic rules (coll_tuned_use_dynamic_rules) and other coll components
 * (han, adapt: priority 0 in Open MPI 4.1's defaults). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "meshplan/probe.h"

/* ---- the regime fit ------------------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_inplace(double *v, int n)
{
    if (n < 1)
        return 0;
    qsort(v, (size_t)n, sizeof v[0], cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Least squares on the relative error over p[0..m) (Hockney's alpha-beta line, as
 * mp_probe_fit_alpha_beta) with alpha >= 0 and x = 1/beta >= 0: rows (1/t, S/t).(alpha, x) = 1.
 * Returns the summed squared relative residual; f gets the line and its errors. */
static double seg_fit(const mp_probe_point *p, int m, mp_probe_ab_fit *f)
{
    double a = 0, b = 0, c = 0, d = 0, e = 0;
    for (int i = 0; i < m; i++) {
        double u = 1.0 / p[i].time_s, v = p[i].bytes / p[i].time_s;
        a += u * u, b += u * v, c += v * v, d += u, e += v;
    }
    double det = a * c - b * b;
    double alpha = det > 0 ? (d * c - b * e) / det : -1, x = det > 0 ? (a * e - b * d) / det : -1;
    if (!(alpha >= 0) || !(x >= 0)) {
        /* On the boundary: the better of the line through the origin and the flat one. */
        double xo = c > 0 ? e / c : 0, af = a > 0 ? d / a : 0, so = 0, sf = 0;
        for (int i = 0; i < m; i++) {
            double ro = (p[i].bytes * xo - p[i].time_s) / p[i].time_s;
            double rf = (af - p[i].time_s) / p[i].time_s;
            so += ro * ro, sf += rf * rf;
        }
        if (c > 0 && so <= sf)
            alpha = 0, x = xo;
        else
            alpha = af, x = 0;
    }
    /* A slope lost in rounding (under 1e-12 of the latency at the largest size) is none. */
    if (x > 0 && alpha > 0 && x * p[m - 1].bytes < 1e-12 * alpha)
        x = 0, alpha = a > 0 ? d / a : alpha;
    double ssr = 0, err[256];
    f->alpha_s = alpha;
    f->beta_Bps = x > 0 ? 1.0 / x : INFINITY;
    f->npoints = m;
    f->max_err_pct = 0;
    for (int i = 0; i < m; i++) {
        double r = (alpha + p[i].bytes * x - p[i].time_s) / p[i].time_s;
        ssr += r * r;
        err[i] = 100.0 * fabs(r);
        f->max_err_pct = err[i] > f->max_err_pct ? err[i] : f->max_err_pct;
    }
    f->median_err_pct = median_inplace(err, m);
    return ssr;
}

static mp_status check_points(const mp_probe_point *p, int n, int max_regimes, mp_diag *diag)
{
    if (!p || n < 2 || n > 256 || max_regimes < 1 || max_regimes > MP_PROBE_MAX_REGIMES) {
        mp_diag_add(diag, "regime fit: %d points, up to %d regimes: expected 2 to 256 points and "
                    "1 to %d regimes", n, max_regimes, MP_PROBE_MAX_REGIMES);
        return MP_ERR_INPUT;
    }
    for (int i = 0; i < n; i++) {
        if (!(p[i].bytes >= 0) || !isfinite(p[i].bytes) || !(p[i].time_s > 0) ||
            !isfinite(p[i].time_s) || (i > 0 && !(p[i].bytes > p[i - 1].bytes))) {
            mp_diag_add(diag, "regime fit: point %d (bytes %g, time_s %g): expected bytes >= 0 "
                        "growing from point to point and a finite time > 0", i, p[i].bytes,
                        p[i].time_s);
            return MP_ERR_INPUT;
        }
    }
    return MP_OK;
}

/* The best split of p into k = 1..3 regimes of >= 3 points (k = 1: any n): its summed squared
 * relative residual, the first index of each regime after the first in cut[]. */
static double best_split(const mp_probe_point *p, int n, int k, int cut[2])
{
    mp_probe_ab_fit f;
    double best = INFINITY;
    if (k == 1)
        return seg_fit(p, n, &f);
    for (int i = 3; i + 3 * (k - 1) <= n; i++) {
        double s0 = seg_fit(p, i, &f);
        if (k == 2) {
            double s = s0 + seg_fit(p + i, n - i, &f);
            if (s < best)
                best = s, cut[0] = i;
            continue;
        }
        for (int j = i + 3; j + 3 <= n; j++) {
            double s = s0 + seg_fit(p + i, j - i, &f) + seg_fit(p + j, n - j, &f);
            if (s < best)
                best = s, cut[0] = i, cut[1] = j;
        }
    }
    return best;
}

mp_status mp_probe_fit_regimes(const mp_probe_point *p, int n, int max_regimes,
                               mp_probe_regimes *out, mp_diag *diag)
{
    memset(out, 0, sizeof *out);
    mp_status st = check_points(p, n, max_regimes, diag);
    if (st != MP_OK)
        return st;
    /* Model selection by the Bayesian information criterion (Schwarz 1978, "Estimating the
     * dimension of a model", Ann. Statist. 6(2), with Gaussian residuals): n ln(SSR / n) +
     * q ln n, q = 3 k - 1 parameters for k regimes (alpha, beta each, k - 1 breakpoints). A
     * regime more must cut the SSR by the factor n^(3/n) (1.72 for 15 points). An exact fit
     * (SSR below 1e-20 per point: relative errors of 1e-10) is never split further. */
    int chosen = 1, cuts[MP_PROBE_MAX_REGIMES][2] = {{0}};
    double ssr = best_split(p, n, 1, cuts[0]);
    double floor_ssr = 1e-20 * n, bic = n * log(fmax(ssr, floor_ssr) / n) + 2 * log((double)n);
    for (int k = 2; k <= max_regimes && n >= 3 * k && ssr > floor_ssr; k++) {
        double s = best_split(p, n, k, cuts[k - 1]);
        double b = n * log(fmax(s, floor_ssr) / n) + (3 * k - 1) * log((double)n);
        if (b < bic)
            chosen = k, ssr = s, bic = b;
    }
    int start[MP_PROBE_MAX_REGIMES + 1] = {0, n, n, n};
    for (int k = 1; k < chosen; k++)
        start[k] = cuts[chosen - 1][k - 1];
    start[chosen] = n;
    double err[256];
    out->nregimes = chosen;
    out->npoints = n;
    for (int k = 0; k < chosen; k++) {
        seg_fit(p + start[k], start[k + 1] - start[k], &out->regime[k]);
        out->upto_bytes[k] = p[start[k + 1] - 1].bytes;
    }
    out->max_err_pct = 0;
    for (int i = 0; i < n; i++) {
        err[i] = 100.0 * fabs(mp_probe_regimes_time_s(out, p[i].bytes) - p[i].time_s) / p[i].time_s;
        out->max_err_pct = err[i] > out->max_err_pct ? err[i] : out->max_err_pct;
    }
    out->median_err_pct = median_inplace(err, n);
    return MP_OK;
}

double mp_probe_regimes_time_s(const mp_probe_regimes *r, double bytes)
{
    int k = 0;
    while (k < r->nregimes - 1 && bytes > r->upto_bytes[k])
        k++;
    const mp_probe_ab_fit *f = &r->regime[k];
    return f->alpha_s + bytes / f->beta_Bps; /* beta INFINITY: latency only */
}

/* ---- the decision rules -------------------------------------------------------------------- */

const char *mp_mpi_allreduce_algo_name(mp_mpi_allreduce_algo a)
{
    static const char *names[MP_MPI_AR_COUNT] = {"recursive_doubling", "ring", "segmented_ring",
                                                 "rabenseifner", "reduce_bcast"};
    return a >= 0 && a < MP_MPI_AR_COUNT ? names[a] : "?";
}

const char *mp_mpi_rules_name(mp_mpi_rules r)
{
    return r == MP_MPI_RULES_MPICH ? "MPICH (Thakur, Rabenseifner & Gropp 2005)"
         : r == MP_MPI_RULES_OPENMPI_TUNED ? "Open MPI coll/tuned fixed rules (v4.1 onward)"
         : "?";
}

mp_mpi_rules mp_probe_mpi_rules_for(const char *lib)
{
    if (lib && (strstr(lib, "MPICH") || strstr(lib, "MVAPICH") || strstr(lib, "Intel(R) MPI")))
        return MP_MPI_RULES_MPICH;
    return MP_MPI_RULES_OPENMPI_TUNED;
}

/* Open MPI's commutative all-reduce decision, as data: communicators of fewer than `below`
 * ranks take algorithm alg[i] for sizes under upto[i] bytes (the last alg for every larger
 * size). Source: ompi_coll_tuned_allreduce_intra_dec_fixed, commutative branch, in
 * open-mpi/ompi ompi/mca/coll/tuned/coll_tuned_decision_fixed.c (rules generated with the
 * ompi-collectives-tuning package, shipped from v4.1.0). Numbers: 2 nonoverlapping, 3 recursive
 * doubling, 4 ring, 5 segmented ring, 6 rabenseifner. */
typedef struct {
    int64_t below;
    int n;
    double upto[7];
    int alg[8];
} ompi_band;

static const ompi_band OMPI_AR[] = {
    {4, 6, {8, 4096, 8192, 16384, 65536, 262144}, {4, 3, 4, 3, 4, 5, 6}},
    {8, 2, {16, 8192}, {4, 3, 6}},
    {16, 1, {8192}, {3, 6}},
    {32, 2, {64, 4096}, {5, 3, 6}},
    {64, 1, {128}, {5, 6}},
    {128, 1, {262144}, {3, 6}},
    {256, 2, {131072, 262144}, {2, 3, 6}},
    {512, 1, {4096}, {2, 6}},
    {2048, 2, {2048, 16384}, {2, 3, 6}},
    {4096, 3, {2048, 4096, 16384}, {2, 5, 3, 6}},
    {INT64_MAX, 3, {2048, 16384, 32768}, {2, 5, 3, 6}},
};

mp_mpi_allreduce_algo mp_probe_mpi_allreduce_algo(mp_mpi_rules rules, int64_t ranks, double bytes)
{
    if (rules == MP_MPI_RULES_MPICH) /* MPICH's MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE = 2048 */
        return bytes <= 2048 ? MP_MPI_AR_RECURSIVE_DOUBLING : MP_MPI_AR_RABENSEIFNER;
    const ompi_band *b = OMPI_AR;
    while (ranks >= b->below)
        b++;
    int i = 0;
    while (i < b->n && !(bytes < b->upto[i]))
        i++;
    switch (b->alg[i]) {
    case 2: return MP_MPI_AR_REDUCE_BCAST;
    case 3: return MP_MPI_AR_RECURSIVE_DOUBLING;
    case 4: return MP_MPI_AR_RING;
    case 5: return MP_MPI_AR_SEGMENTED_RING;
    default: return MP_MPI_AR_RABENSEIFNER;
    }
}

/* ---- the costs ----------------------------------------------------------------------------- */

static double ab_time(const mp_probe_ab_fit *f, double bytes)
{
    return f->alpha_s + bytes / f->beta_Bps;
}

/* One exchange (MPI_Sendrecv, every pair at once) of `bytes` between ranks `mask` apart: it
 * stays inside the nodes when the aligned blocks of 2 x mask ranks lie inside a node (nodes are
 * blocks of ranks_per_node consecutive ranks), else the slowest pair crosses. */
static double xchg(const mp_probe_mpi_model *m, double bytes, int64_t mask)
{
    int one_node = m->ranks_per_node >= m->ranks;
    int inside = one_node || m->ranks_per_node % (2 * mask) == 0;
    return mp_probe_regimes_time_s(inside ? &m->intra : &m->inter, bytes);
}

/* One step of an algorithm, run back to back after the previous one: the exchange less the
 * start-up cost that its separately timed probe paid and a chained step does not
 * (mp_probe_mpi_set_entry; the operation pays it once, in mp_probe_mpi_allreduce_s). */
static double step(const mp_probe_mpi_model *m, double bytes, int64_t mask)
{
    return fmax(0.0, xchg(m, bytes, mask) - mp_probe_mpi_entry_at_s(m, bytes));
}

void mp_probe_mpi_set_entry(mp_probe_mpi_model *m, const mp_probe_point *c, int n)
{
    double d[MP_PROBE_MAX_CHAIN];
    int64_t p2 = 1;
    while (p2 * 2 <= m->ranks)
        p2 *= 2;
    m->entry_s = 0;
    m->chain_points = 0;
    if (!c || n < 1 || p2 < 2)
        return;
    n = n > MP_PROBE_MAX_CHAIN ? MP_PROBE_MAX_CHAIN : n;
    for (int i = 0; i < n; i++) {
        /* The chain's steps: masks 1 .. p2/2 and back, each at the chain's size. */
        double sum = 0;
        int k = 0;
        for (int64_t mask = 1; mask < p2; mask <<= 1, k += 2)
            sum += 2 * xchg(m, c[i].bytes, mask);
        m->chain_bytes[i] = c[i].bytes;
        m->entry_at_s[i] = d[i] = (sum - c[i].time_s) / (k - 1);
    }
    m->entry_s = median_inplace(d, n);
    m->chain_points = n;
}

double mp_probe_mpi_entry_at_s(const mp_probe_mpi_model *m, double bytes)
{
    int n = m->chain_points;
    if (n < 1)
        return m->entry_s;
    if (n == 1 || !(bytes > m->chain_bytes[0]))
        return m->entry_at_s[0];
    if (!(bytes < m->chain_bytes[n - 1]))
        return m->entry_at_s[n - 1];
    int i = 1;
    while (bytes > m->chain_bytes[i])
        i++;
    /* Linear in log(bytes) between the measured sizes i - 1 and i (bytes > 0 here). */
    double lo = m->chain_bytes[i - 1] > 0 ? log(m->chain_bytes[i - 1]) : log(bytes);
    double w = (log(bytes) - lo) / (log(m->chain_bytes[i]) - lo);
    return m->entry_at_s[i - 1] + w * (m->entry_at_s[i] - m->entry_at_s[i - 1]);
}

/* Recursive doubling (Thakur et al. 2005 section 4.4: lg p (alpha + n beta + n gamma)), as
 * ompi_coll_base_allreduce_intra_recursivedoubling runs it: copy, a fold step for the ranks
 * beyond the largest power of two (exchange + reduce), lg p2 exchange + reduce steps of the
 * whole buffer, the result sent back to the folded ranks. */
static double t_recursive_doubling(const mp_probe_mpi_model *m, double n, int64_t p2, int64_t rem)
{
    double t = ab_time(&m->copy, n);
    if (rem)
        t += step(m, n, 1) + ab_time(&m->reduce, n);
    for (int64_t mask = 1; mask < p2; mask <<= 1)
        t += step(m, n, mask) + ab_time(&m->reduce, n);
    if (rem)
        t += step(m, n, 1);
    return t;
}

/* Rabenseifner (Thakur et al. 2005 section 4.4: 2 lg p alpha + 2 (p-1)/p n beta + (p-1)/p n
 * gamma), as ompi_coll_base_allreduce_intra_redscat_allgather runs it: copy, the fold step,
 * reduce-scatter by recursive halving (the step with partner mask apart exchanges and reduces
 * n / 2mask bytes), allgather by recursive doubling (the same sizes and partners back). */
static double t_rabenseifner(const mp_probe_mpi_model *m, double n, int64_t p2, int64_t rem)
{
    double t = ab_time(&m->copy, n);
    if (rem)
        t += step(m, n, 1) + ab_time(&m->reduce, n);
    for (int64_t mask = 1; mask < p2; mask <<= 1) {
        double s = n / (2.0 * (double)mask);
        t += 2 * step(m, s, mask) + ab_time(&m->reduce, s);
    }
    if (rem)
        t += step(m, n, 1);
    return t;
}

/* Ring (Patarasuk & Yuan 2009, JPDC 69(2): 2(p-1) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma),
 * as ompi_coll_base_allreduce_intra_ring runs it: copy, p-1 reduce-scatter steps (exchange and
 * reduce one block of n/p), p-1 allgather steps (exchange one block). Every step waits on the
 * ring's slowest link: the one between nodes when there are several. */
static double t_ring(const mp_probe_mpi_model *m, double n)
{
    double p = (double)m->ranks, s = n / p;
    double x = step(m, s, m->ranks); /* mask = ranks: crosses iff there is more than one node */
    return ab_time(&m->copy, n) + (p - 1) * (2 * x + ab_time(&m->reduce, s));
}

/* Reduce then broadcast (Open MPI's "nonoverlapping", chosen only from 128 ranks on for small
 * sizes): costed as binomial trees, ceil(lg p) steps of the whole buffer each way (Thakur et
 * al. 2005 section 4: lg p (alpha + n beta) per tree, plus n gamma per reduce step), one way
 * priced as an exchange (an upper bound). */
static double t_reduce_bcast(const mp_probe_mpi_model *m, double n)
{
    double t = ab_time(&m->copy, n);
    for (int64_t mask = 1; mask < m->ranks; mask <<= 1)
        t += 2 * step(m, n, mask) + ab_time(&m->reduce, n);
    return t;
}

mp_status mp_probe_mpi_allreduce_s(const mp_probe_mpi_model *m, double bytes, double *time_s,
                                   mp_mpi_allreduce_algo *algo, mp_diag *diag)
{
    *time_s = 0;
    int64_t p = m->ranks, ppn = m->ranks_per_node;
    if (p < 2 || ppn < 1 || p % ppn || !(bytes > 0) || !isfinite(bytes)) {
        mp_diag_add(diag, "MPI all-reduce model: %lld ranks, %lld per node, %g bytes: expected "
                    ">= 2 ranks in nodes of a size dividing them and bytes > 0", (long long)p,
                    (long long)ppn, bytes);
        return MP_ERR_INPUT;
    }
    if ((ppn >= 2 && m->intra.nregimes < 1) || (ppn < p && m->inter.nregimes < 1)) {
        mp_diag_add(diag, "MPI all-reduce model: no exchange regimes %s (intra %d, inter %d): "
                    "expected the exchange curves of every tier the ranks span",
                    ppn >= 2 && m->intra.nregimes < 1 ? "inside a node" : "between nodes",
                    m->intra.nregimes, m->inter.nregimes);
        return MP_ERR_INPUT;
    }
    int64_t p2 = 1;
    while (p2 * 2 <= p)
        p2 *= 2;
    mp_mpi_allreduce_algo a = mp_probe_mpi_allreduce_algo(m->rules, p, bytes);
    switch (a) {
    case MP_MPI_AR_RECURSIVE_DOUBLING: *time_s = t_recursive_doubling(m, bytes, p2, p - p2); break;
    case MP_MPI_AR_RABENSEIFNER: *time_s = t_rabenseifner(m, bytes, p2, p - p2); break;
    case MP_MPI_AR_REDUCE_BCAST: *time_s = t_reduce_bcast(m, bytes); break;
    default: *time_s = t_ring(m, bytes); break; /* segmented ring with segment 0 = ring */
    }
    /* The start-up cost once per operation, at its first step's size: the fold step's and
     * recursive doubling's whole buffer, Rabenseifner's half, the ring's block. */
    double first = a == MP_MPI_AR_RABENSEIFNER && p == p2 ? bytes / 2
                 : a == MP_MPI_AR_RING || a == MP_MPI_AR_SEGMENTED_RING ? bytes / (double)p
                 : bytes;
    *time_s += mp_probe_mpi_entry_at_s(m, first);
    if (algo)
        *algo = a;
    return MP_OK;
}

/* ---- fitting from the probes and scoring a curve ------------------------------------------- */

static mp_status fit_one(const mp_probe_point *p, int n, int regimes, const char *what,
                         mp_probe_regimes *r, mp_diag *diag)
{
    mp_status st = mp_probe_fit_regimes(p, n, regimes, r, diag);
    if (st != MP_OK)
        mp_diag_add(diag, "MPI model: the %s curve (%d points) does not fit", what, n);
    return st;
}

mp_status mp_probe_mpi_model_fit(const mp_probe_mpi_inputs *in, mp_probe_mpi_model *out,
                                 mp_diag *diag)
{
    memset(out, 0, sizeof *out);
    out->rules = in->rules;
    out->ranks = in->ranks;
    out->ranks_per_node = in->ranks_per_node;
    mp_probe_regimes one;
    mp_status st = MP_OK;
    if (in->nintra)
        st = fit_one(in->intra, in->nintra, MP_PROBE_MAX_REGIMES, "exchange inside a node",
                     &out->intra, diag);
    if (st == MP_OK && in->ninter)
        st = fit_one(in->inter, in->ninter, MP_PROBE_MAX_REGIMES, "exchange between nodes",
                     &out->inter, diag);
    if (st == MP_OK && (st = fit_one(in->reduce, in->nreduce, 1, "local reduction", &one,
                                     diag)) == MP_OK)
        out->reduce = one.regime[0];
    if (st == MP_OK && (st = fit_one(in->copy, in->ncopy, 1, "copy", &one, diag)) == MP_OK)
        out->copy = one.regime[0];
    if (st == MP_OK && ((in->ranks_per_node >= 2 && !in->nintra) ||
                        (in->ranks_per_node < in->ranks && !in->ninter))) {
        mp_diag_add(diag, "MPI model: %lld ranks, %lld per node: the exchange curve %s is missing",
                    (long long)in->ranks, (long long)in->ranks_per_node,
                    !in->nintra ? "inside a node" : "between nodes");
        st = MP_ERR_INPUT;
    }
    if (st == MP_OK && in->nchain) {
        if (in->nchain > MP_PROBE_MAX_CHAIN ||
            (st = check_points(in->chain, in->nchain, 1, diag)) != MP_OK) {
            mp_diag_add(diag, "MPI model: the chained exchange curve (%d points) is not usable: "
                        "expected 2 to %d points", in->nchain, MP_PROBE_MAX_CHAIN);
            st = MP_ERR_INPUT;
        } else {
            mp_probe_mpi_set_entry(out, in->chain, in->nchain);
        }
    }
    return st;
}

mp_status mp_probe_mpi_allreduce_error(const mp_probe_mpi_model *m, const mp_probe_point *ar,
                                       int n, double *pred_s, mp_mpi_allreduce_algo *algo,
                                       double *median_err_pct, double *max_err_pct,
                                       mp_diag *diag)
{
    double e[256];
    *median_err_pct = *max_err_pct = 0;
    if (!ar || n < 1 || n > 256) {
        mp_diag_add(diag, "MPI model: an all-reduce curve of %d points: expected 1 to 256", n);
        return MP_ERR_INPUT;
    }
    for (int i = 0; i < n; i++) {
        double t;
        mp_mpi_allreduce_algo a;
        mp_status st = mp_probe_mpi_allreduce_s(m, ar[i].bytes, &t, &a, diag);
        if (st != MP_OK)
            return st;
        if (!(ar[i].time_s > 0)) {
            mp_diag_add(diag, "MPI model: all-reduce point %d: time %g s: expected > 0", i,
                        ar[i].time_s);
            return MP_ERR_INPUT;
        }
        if (pred_s)
            pred_s[i] = t;
        if (algo)
            algo[i] = a;
        e[i] = 100.0 * fabs(t - ar[i].time_s) / ar[i].time_s;
        *max_err_pct = e[i] > *max_err_pct ? e[i] : *max_err_pct;
    }
    *median_err_pct = median_inplace(e, n);
    return MP_OK;
}
