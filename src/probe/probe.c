/* src/probe/probe.c — the pure half of `meshplan probe`: the alpha-beta fit of a measured sweep
 * and the cluster description written from the probed tiers (meshplan/probe.h, docs/probe.md).
 * The measuring (MPI) is the CLI's, src/mpi/probe_mpi.c. Sizes: a sweep of tens of points, a
 * description of a few tiers. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "meshplan/probe.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median and max of |alpha + S/beta - t| / t over the points, in percent. */
static void fit_errors(const mp_probe_point *p, int n, mp_probe_ab_fit *f)
{
    double e[256];
    int m = n < 256 ? n : 256;
    f->max_err_pct = 0;
    for (int i = 0; i < m; i++) {
        double t = f->alpha_s + p[i].bytes / f->beta_Bps;
        e[i] = 100.0 * fabs(t - p[i].time_s) / p[i].time_s;
        if (e[i] > f->max_err_pct)
            f->max_err_pct = e[i];
    }
    qsort(e, (size_t)m, sizeof e[0], cmp_double);
    f->median_err_pct = m % 2 ? e[m / 2] : 0.5 * (e[m / 2 - 1] + e[m / 2]);
}

mp_status mp_probe_fit_alpha_beta(const mp_probe_point *p, int n, mp_probe_ab_fit *out,
                                  mp_diag *diag)
{
    memset(out, 0, sizeof *out);
    if (!p || n < 2 || n > 256) {
        mp_diag_add(diag, "alpha-beta fit: %d points: expected 2 to 256", n);
        return MP_ERR_INPUT;
    }
    int distinct = 0;
    for (int i = 0; i < n; i++) {
        if (!(p[i].bytes >= 0) || !isfinite(p[i].bytes) || !(p[i].time_s > 0) ||
            !isfinite(p[i].time_s)) {
            mp_diag_add(diag, "alpha-beta fit: point %d (bytes %g, time_s %g): expected bytes >= 0 "
                        "and a finite time > 0", i, p[i].bytes, p[i].time_s);
            return MP_ERR_INPUT;
        }
        if (i > 0 && p[i].bytes != p[0].bytes)
            distinct = 1;
    }
    if (!distinct) {
        mp_diag_add(diag, "alpha-beta fit: every point has %g bytes: expected two sizes or more",
                    p[0].bytes);
        return MP_ERR_INPUT;
    }
    /* Weighted least squares: rows (1/t_i, S_i/t_i) . (alpha, x) = 1, x = 1/beta. Normal
     * equations [a b; b c] (alpha, x) = (d, e). */
    double a = 0, b = 0, c = 0, d = 0, e = 0;
    for (int i = 0; i < n; i++) {
        double u = 1.0 / p[i].time_s, v = p[i].bytes / p[i].time_s;
        a += u * u, b += u * v, c += v * v, d += u, e += v;
    }
    double det = a * c - b * b;
    double alpha = det != 0 ? (d * c - b * e) / det : -1;
    double x = det != 0 ? (a * e - b * d) / det : 0;
    if (!(alpha >= 0)) { /* no latency resolvable: the bandwidth term alone (through the origin) */
        alpha = 0;
        x = c > 0 ? e / c : 0;
    }
    if (!(x > 0) || !isfinite(x)) {
        mp_diag_add(diag, "alpha-beta fit: the time does not grow with the message size over "
                    "%d points (%g to %g bytes): no positive bandwidth fits", n, p[0].bytes,
                    p[n - 1].bytes);
        return MP_ERR_INPUT;
    }
    out->alpha_s = alpha;
    out->beta_Bps = 1.0 / x;
    out->npoints = n;
    fit_errors(p, n, out);
    return MP_OK;
}

static mp_status check_cluster(const mp_probe_cluster *pc, mp_diag *diag)
{
    int bad = 0;
    if (pc->ntiers < 1 || pc->ntiers > MP_MAX_TIERS) {
        mp_diag_add(diag, "probe cluster: %d tiers: expected 1 to %d", pc->ntiers, MP_MAX_TIERS);
        return MP_ERR_INPUT;
    }
    if (pc->num_gpus < 1 || !pc->gpu[0]) {
        mp_diag_add(diag, "probe cluster: num_gpus = %lld, gpu = \"%s\": expected >= 1 GPU of a "
                    "catalog type", (long long)pc->num_gpus, pc->gpu);
        return MP_ERR_INPUT;
    }
    for (int t = 0; t < pc->ntiers; t++) {
        const mp_probe_tier *x = &pc->tier[t];
        int64_t below = t ? pc->tier[t - 1].domain_gpus : 1;
        if ((t == 0) != (x->kind == MP_LINK_SCALEUP) || x->kind == MP_LINK_WAN) {
            mp_diag_add(diag, "probe cluster: tier %d (%s): expected %s", t, x->name,
                        t == 0 ? "scale-up for tier 0" : "scale-out above tier 0");
            bad++;
        }
        if (!(x->bw_Bps > 0) || !isfinite(x->bw_Bps) || !(x->latency_s >= 0) ||
            !isfinite(x->latency_s)) {
            mp_diag_add(diag, "probe cluster: tier %d (%s): bandwidth %g B/s, latency %g s: "
                        "expected a bandwidth > 0 and a latency >= 0", t, x->name, x->bw_Bps,
                        x->latency_s);
            bad++;
        }
        if (x->domain_gpus < below || x->domain_gpus % below || x->domain_gpus > pc->num_gpus ||
            pc->num_gpus % x->domain_gpus || (t == pc->ntiers - 1 && x->domain_gpus != pc->num_gpus)) {
            mp_diag_add(diag, "probe cluster: tier %d (%s): domain of %lld ranks: expected a "
                        "multiple of %lld dividing %lld (the outermost: all of them)", t, x->name,
                        (long long)x->domain_gpus, (long long)below, (long long)pc->num_gpus);
            bad++;
        }
    }
    return bad ? MP_ERR_INPUT : MP_OK;
}

mp_status mp_probe_cluster_json(const mp_probe_cluster *pc, char **out, mp_diag *diag)
{
    *out = NULL;
    mp_status st = check_cluster(pc, diag);
    if (st != MP_OK)
        return st;
    json_t *root = json_object(), *tiers = json_array();
    if (!root || !tiers) {
        json_decref(root);
        json_decref(tiers);
        return MP_ERR_NOMEM;
    }
    json_object_set_new(root, "name", json_string(pc->name[0] ? pc->name : "probed cluster"));
    json_object_set_new(root, "gpu", json_string(pc->gpu));
    json_object_set_new(root, "num_gpus_count", json_integer((json_int_t)pc->num_gpus));
    if (pc->source[0])
        json_object_set_new(root, "source", json_string(pc->source));
    if (pc->notes[0])
        json_object_set_new(root, "notes", json_string(pc->notes));
    for (int t = 0; t < pc->ntiers; t++) {
        const mp_probe_tier *x = &pc->tier[t];
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(x->name));
        json_object_set_new(o, "kind", json_string(t == 0 ? "scaleup" : "scaleout"));
        if (t == 0) /* every rank reaches every other at the measured rate: a switch, not a mesh */
            json_object_set_new(o, "topology", json_string("switch"));
        /* The outermost scale-out tier holds the whole cluster: its domain is left out, so
         * `--gpus N` extrapolates to more of the same nodes. */
        if (t == 0 || t < pc->ntiers - 1)
            json_object_set_new(o, "domain_gpus_count", json_integer((json_int_t)x->domain_gpus));
        json_object_set_new(o, "link_bw_Bps", json_real(x->bw_Bps));
        json_object_set_new(o, "latency_s", json_real(x->latency_s));
        /* The measured bandwidth is what was achieved: no further efficiency on top. */
        json_object_set_new(o, "efficiency_frac", json_real(1.0));
        if (t > 0) /* the bandwidth was measured per rank with every rank of a node sending */
            json_object_set_new(o, "nics_per_gpu_count", json_real(1.0));
        if (x->notes[0])
            json_object_set_new(o, "notes", json_string(x->notes));
        json_array_append_new(tiers, o);
    }
    json_object_set_new(root, "tiers", tiers);
    *out = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
    json_decref(root);
    return *out ? MP_OK : MP_ERR_NOMEM;
}

static int find_root(int *par, int i)
{
    while (par[i] != i)
        i = par[i] = par[par[i]];
    return i;
}

/* Median of the off-diagonal latencies with (same group) == inside. */
static double median_between(const double *lat, int n, const int *g, int inside)
{
    double *v = malloc(sizeof *v * (size_t)n * (size_t)n);
    int m = 0;
    for (int i = 0; v && i < n; i++)
        for (int j = i + 1; j < n; j++)
            if ((g[i] == g[j]) == inside)
                v[m++] = lat[(size_t)i * n + j];
    double r = 0;
    if (m) {
        qsort(v, (size_t)m, sizeof v[0], cmp_double);
        r = m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
    }
    free(v);
    return r;
}

mp_status mp_probe_switch_groups(const double *lat_s, int n, double ratio, int *group_of,
                                 int *ngroups, int *regular, double *near_s, double *far_s,
                                 mp_diag *diag)
{
    if (n < 3 || !(ratio > 1)) {
        mp_diag_add(diag, "switch inference: %d nodes, ratio %g: expected at least 3 nodes and a "
                    "ratio > 1", n, ratio);
        return MP_ERR_INPUT;
    }
    double lo = 1e300, hi = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double x = lat_s[(size_t)i * n + j];
            if (i == j)
                continue;
            if (!(x > 0) || x > 1e3) {
                mp_diag_add(diag, "switch inference: latency[%d][%d] = %g s: expected > 0", i, j, x);
                return MP_ERR_INPUT;
            }
            lo = x < lo ? x : lo;
            hi = x > hi ? x : hi;
        }
    int *par = malloc(sizeof *par * (size_t)n);
    if (!par)
        return MP_ERR_NOMEM;
    for (int i = 0; i < n; i++)
        par[i] = i;
    if (hi >= ratio * lo) {
        double cut = sqrt(lo * hi);
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++)
                if (0.5 * (lat_s[(size_t)i * n + j] + lat_s[(size_t)j * n + i]) < cut)
                    par[find_root(par, i)] = find_root(par, j);
    } else { /* no visible levels: one switch */
        for (int i = 1; i < n; i++)
            par[i] = 0;
    }
    /* Number the components by their first node. */
    int ng = 0;
    for (int i = 0; i < n; i++)
        group_of[i] = -1;
    for (int i = 0; i < n; i++) {
        int r = find_root(par, i), k = -1;
        for (int j = 0; j < i && k < 0; j++)
            if (find_root(par, j) == r)
                k = group_of[j];
        group_of[i] = k >= 0 ? k : ng++;
    }
    free(par);
    /* Regular: group g is the block [g*size, (g+1)*size). */
    int size = n / ng, reg = n % ng == 0;
    for (int i = 0; i < n && reg; i++)
        reg = group_of[i] == i / size;
    *ngroups = ng;
    *regular = reg;
    *near_s = median_between(lat_s, n, group_of, 1);
    *far_s = ng > 1 ? median_between(lat_s, n, group_of, 0) : 0;
    if (ng == 1 && *near_s == 0)
        *near_s = lo;
    return MP_OK;
}
