/* src/coll/coll.c — alpha-beta cost of collectives on a tiered cluster.
 *
 * Per algorithm (n ranks, S bytes in the nccl-tests convention, alpha the latency of the outermost
 * tier crossed, B the bandwidth that bounds the algorithm):
 *   ring all-reduce       2(n-1) alpha + 2(n-1)/n S / B      (Patarasuk & Yuan 2009; Thakur et al. 2005)
 *   ring RS / AG          (n-1) alpha + (n-1)/n S / B
 *   tree all-reduce       2 (log2(nodes) alpha_out + r alpha_in) + 2 S / B  (NCCL double binary
 *                         tree: a chain inside the node, a tree across nodes; each link carries S
 *                         up and S down; Sanders, Speck & Traeff 2009)
 *   hierarchical AR       RS inside the node, ring AR of S/r across nodes, AG inside the node
 *   in-network AR         2 alpha + S / (B * nvls_frac): each GPU sends S to the switch and
 *                         receives the reduced S (NVLink SHARP / InfiniBand SHARP)
 *   all-to-all (direct)   alpha + max over tiers of the bytes leaving the domain / B_tier
 *   broadcast (ring)      (n-1) alpha + S / B (pipelined)
 *   send/recv             alpha + S / B of the tier joining the two ranks
 * B for a ring over a group placed on the tiers: min(tier-0 per-GPU bandwidth, for each outer tier
 * t the group's ranks inside one domain of tier t-1 times the per-GPU bandwidth of tier t) — NCCL
 * runs one ring channel per NIC, so the crossing edges of a node use all of its group's NICs.
 * Every bandwidth is scaled by the link's measured efficiency, divided by the tier's
 * oversubscription and reduced by its background load.
 */
#include <math.h>
#include <string.h>

#include "meshplan/coll.h"

static const char *const op_names[] = {
#define MP_X(n, s) s,
    MP_COLL_OP_LIST(MP_X)
#undef MP_X
};
static const char *const algo_names[] = {
#define MP_X(n, s) s,
    MP_COLL_ALGO_LIST(MP_X)
#undef MP_X
};
_Static_assert(sizeof op_names / sizeof op_names[0] == MP_COLL_OP_COUNT, "op names");
_Static_assert(sizeof algo_names / sizeof algo_names[0] == MP_ALGO_COUNT, "algo names");

const char *mp_coll_op_name(mp_coll_op op) { return ((int)op >= 0 && op < MP_COLL_OP_COUNT) ? op_names[op] : "?"; }
const char *mp_coll_algo_name(mp_coll_algo a) { return ((int)a >= 0 && a < MP_ALGO_COUNT) ? algo_names[a] : "?"; }

mp_status mp_coll_op_parse(const char *s, mp_coll_op *out)
{
    for (int i = 0; i < MP_COLL_OP_COUNT; i++)
        if (strcmp(s, op_names[i]) == 0) {
            *out = (mp_coll_op)i;
            return MP_OK;
        }
    return MP_ERR_INPUT;
}

mp_status mp_coll_algo_parse(const char *s, mp_coll_algo *out)
{
    for (int i = 0; i < MP_ALGO_COUNT; i++)
        if (strcmp(s, algo_names[i]) == 0) {
            *out = (mp_coll_algo)i;
            return MP_OK;
        }
    return MP_ERR_INPUT;
}

double mp_coll_busbw_factor(mp_coll_op op, int64_t n)
{
    if (n <= 1)
        return 0.0;
    double f = (double)(n - 1) / (double)n;
    switch (op) {
    case MP_COLL_ALL_REDUCE: return 2.0 * f;
    case MP_COLL_REDUCE_SCATTER:
    case MP_COLL_ALL_GATHER:
    case MP_COLL_ALL_TO_ALL: return f;
    default: return 1.0;
    }
}

/* NVLS / SHARP all-reduce reaches this fraction of the per-GPU line rate as algorithm bandwidth:
 * measured 480 GB/s busbw on 8 x H100 (collectives.csv row stas_h100_nvls_4gib):
 * 480 / 1.75 / 450 = 0.61. */
#define MP_IN_NETWORK_ALGBW_FRAC 0.61

/* Achievable bandwidth of tier t for one GPU: line rate x efficiency / oversubscription, less the
 * background load. */
static double tier_bw(const mp_tier *t)
{
    double bw = t->bw_Bps * t->efficiency_frac * (1.0 - t->background_load_frac);
    if (t->oversubscription > 1.0)
        bw /= t->oversubscription;
    return bw;
}

/* Bandwidth bounding a ring over the placed group, and which tier it is. */
static double ring_bw(const mp_cluster *c, const mp_placement *pl, int *tier)
{
    double best = tier_bw(&c->tier[0]);
    *tier = 0;
    for (int t = 1; t <= pl->outer_tier; t++) {
        double bw = (double)pl->ranks_in_domain[t - 1] * tier_bw(&c->tier[t]);
        if (bw < best) {
            best = bw;
            *tier = t;
        }
    }
    return best;
}

static void set(mp_coll_cost *o, double lat, double bw_s, mp_coll_algo a, int tier)
{
    o->latency_s = lat;
    o->bandwidth_s = bw_s;
    o->total_s = lat + bw_s;
    o->algo = a;
    o->bottleneck_tier = tier;
}

mp_status mp_coll_time(const mp_cluster *c, mp_coll_op op, double bytes, mp_group g,
                       mp_coll_algo algo, mp_coll_cost *out)
{
    memset(out, 0, sizeof *out);
    out->bottleneck_tier = -1;
    out->algo = algo;
    if (!(bytes >= 0) || !isfinite(bytes) || g.size < 1 || g.stride < 1 || (int)op < 0 ||
        op >= MP_COLL_OP_COUNT || (int)algo < 0 || algo >= MP_ALGO_COUNT)
        return MP_ERR_INPUT;
    if (g.size == 1 || bytes == 0)
        return MP_OK;
    mp_placement pl;
    mp_group_place(c, g, &pl);
    const int outer = pl.outer_tier;
    const double n = (double)g.size;
    const double alpha = c->tier[outer].latency_s;
    int tier = 0;
    const double B = ring_bw(c, &pl, &tier);
    const double f = (n - 1.0) / n;

    switch (op) {
    case MP_COLL_ALL_REDUCE: {
        mp_coll_cost best = {0}, cand;
        int have = 0;
        /* ring */
        set(&cand, 2.0 * (n - 1.0) * alpha, 2.0 * f * bytes / B, MP_ALGO_RING, tier);
        if (algo == MP_ALGO_AUTO || algo == MP_ALGO_RING) { best = cand; have = 1; }
        /* tree: chain inside domains, binary tree across them */
        {
            double r = (double)(outer > 0 ? pl.ranks_in_domain[outer - 1] : g.size);
            double domains = n / r;
            double lat = 2.0 * (log2(domains > 1 ? domains : 1) * alpha +
                                r * c->tier[0].latency_s);
            set(&cand, lat, 2.0 * bytes / B, MP_ALGO_TREE, tier);
            if ((algo == MP_ALGO_AUTO && cand.total_s < best.total_s) || algo == MP_ALGO_TREE) {
                best = cand;
                have = 1;
            }
        }
        /* hierarchical: only when the group spans more than one domain of tier 0 */
        if (outer >= 1) {
            double r = (double)pl.ranks_in_domain[0];
            double m = n / r;
            double b0 = tier_bw(&c->tier[0]);
            double intra = r > 1 ? 2.0 * ((r - 1.0) / r) * bytes / b0 : 0.0;
            double inter_bw = 1e300;
            int it = 1;
            for (int t = 1; t <= outer; t++) {
                double bw = (t == 1 ? 1.0 : (double)pl.ranks_in_domain[t - 1] / r) * tier_bw(&c->tier[t]);
                if (bw < inter_bw) { inter_bw = bw; it = t; }
            }
            double inter = 2.0 * ((m - 1.0) / m) * (bytes / r) / inter_bw;
            double lat = 2.0 * (r - 1.0) * c->tier[0].latency_s + 2.0 * (m - 1.0) * alpha;
            set(&cand, lat, intra + inter, MP_ALGO_HIERARCHICAL, inter > intra ? it : 0);
            if ((algo == MP_ALGO_AUTO && cand.total_s < best.total_s) || algo == MP_ALGO_HIERARCHICAL) {
                best = cand;
                have = 1;
            }
        } else if (algo == MP_ALGO_HIERARCHICAL) {
            return MP_ERR_INPUT;
        }
        /* in-network reduction when every tier crossed has it */
        {
            int ok = 1;
            for (int t = 0; t <= outer; t++)
                ok = ok && c->tier[t].in_network_reduction;
            if (ok) {
                double bw = tier_bw(&c->tier[0]) / c->tier[0].efficiency_frac * MP_IN_NETWORK_ALGBW_FRAC;
                int bt = 0;
                for (int t = 1; t <= outer; t++) {
                    double b = (double)pl.ranks_in_domain[t - 1] * tier_bw(&c->tier[t]);
                    if (b < bw) { bw = b; bt = t; }
                }
                set(&cand, 2.0 * alpha, bytes / bw, MP_ALGO_IN_NETWORK, bt);
                if ((algo == MP_ALGO_AUTO && cand.total_s < best.total_s) || algo == MP_ALGO_IN_NETWORK) {
                    best = cand;
                    have = 1;
                }
            } else if (algo == MP_ALGO_IN_NETWORK) {
                return MP_ERR_INPUT;
            }
        }
        if (!have)
            return MP_ERR_INPUT;
        *out = best;
        return MP_OK;
    }
    case MP_COLL_REDUCE_SCATTER:
    case MP_COLL_ALL_GATHER:
        if (algo != MP_ALGO_AUTO && algo != MP_ALGO_RING)
            return MP_ERR_INPUT;
        set(out, (n - 1.0) * alpha, f * bytes / B, MP_ALGO_RING, tier);
        return MP_OK;
    case MP_COLL_BROADCAST:
        if (algo != MP_ALGO_AUTO && algo != MP_ALGO_RING)
            return MP_ERR_INPUT;
        set(out, (n - 1.0) * alpha, bytes / B, MP_ALGO_RING, tier);
        return MP_OK;
    case MP_COLL_ALL_TO_ALL: {
        if (algo != MP_ALGO_AUTO && algo != MP_ALGO_DIRECT && algo != MP_ALGO_PAIRWISE)
            return MP_ERR_INPUT;
        /* Each rank sends bytes*(n-1)/n to others; the share going outside a tier-(t-1) domain is
         * (n - r_{t-1})/n and leaves over the GPU's own tier-t bandwidth. */
        double worst = f * bytes / tier_bw(&c->tier[0]);
        int wt = 0;
        for (int t = 1; t <= outer; t++) {
            double out_frac = (n - (double)pl.ranks_in_domain[t - 1]) / n;
            double tt = out_frac * bytes / tier_bw(&c->tier[t]);
            if (tt > worst) { worst = tt; wt = t; }
        }
        mp_coll_algo a = algo == MP_ALGO_PAIRWISE ? MP_ALGO_PAIRWISE : MP_ALGO_DIRECT;
        set(out, a == MP_ALGO_PAIRWISE ? (n - 1.0) * alpha : alpha, worst, a, wt);
        return MP_OK;
    }
    case MP_COLL_SEND_RECV: {
        if (algo != MP_ALGO_AUTO && algo != MP_ALGO_P2P)
            return MP_ERR_INPUT;
        /* The two ranks g.stride apart: the tier that joins them. */
        int t = 0;
        while (t < c->ntiers - 1 && g.stride >= c->tier[t].domain_gpus)
            t++;
        set(out, c->tier[t].latency_s, bytes / tier_bw(&c->tier[t]), MP_ALGO_P2P, t);
        return MP_OK;
    }
    default:
        return MP_ERR_INPUT;
    }
}
