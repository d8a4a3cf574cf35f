/* src/coll/coll.c — alpha-beta cost of collectives on a tiered cluster.
 *
 * Notation: n ranks; S bytes (nccl-tests convention, coll.h); the group crosses tiers 0..T; r_t its
 * ranks inside one domain of tier t (r_T = n), m_t = n / r_t the domains of tier t it spans
 * (m_{-1} = n, m_T = 1); alpha_t the per-hop latency of tier t; B_0 the achievable scale-up
 * bandwidth of one GPU; b_t (t >= 1) one GPU's achievable share of the links leaving a domain of
 * tier t-1. Every bandwidth is line rate x measured efficiency x (1 - background load) /
 * oversubscription (the share each GPU gets when every GPU runs the same collective at once, as
 * the replicated TP/DP/PP groups of a training step do).
 *
 * Algorithms (all-reduce; RS/AG/broadcast take the ring's half; sources beside each function):
 *   ring       NCCL's ring, one channel per NIC, rail-aligned. Latency sum_t 2(m_{t-1}-m_t)
 *              alpha_t (NCCL tuning.cc: (nsteps - nInterSteps) intraLat + nInterSteps interLat);
 *              bandwidth 2(n-1)/n S / min(B_0, min_t r_{t-1} b_t) (Patarasuk & Yuan 2009: the
 *              ring is bandwidth-optimal; r_{t-1} channels cross each domain boundary).
 *   flat_ring  one ring channel, not rail-aware (Gloo/MPI-style): same latency, bandwidth bounded
 *              by a single GPU's share min(B_0, min_t b_t) at every tier it crosses.
 *   tree       NCCL double binary tree (Sanders, Speck & Traeff 2009): a chain inside the node,
 *              binary trees across domains; latency 2((r_0-1) alpha_0 + sum_t log2(m_{t-1}/m_t)
 *              alpha_t); each domain moves S across its boundary when it has one peer, 2S
 *              otherwise (NCCL: bwInter/2 beyond two nodes); bandwidth x 0.782 (NCCL's 0.92 x
 *              0.85 tree refinements).
 *   hierarchical  reduce-scatter inside each domain of tier k-1, all-reduce of S/r_{k-1} across
 *              the m_{k-1} domains among same-index ranks, all-gather inside (Jia et al. 2018,
 *              "Highly scalable deep learning training system with mixed-precision", Sec. 4.2;
 *              Horovod hierarchical allreduce). Phases add. Across a boundary it moves
 *              2(m-1)/m S per domain against the ring's 2(n-1)/n S — less when m is small (two
 *              nodes, two islands) — and it beats the flat ring exactly when b_k < B_0.
 *   in_network NVLS inside the node (algbw = measured fraction of line rate, fixed latency) and
 *              SHARP across switch tiers (each domain sends S up once); without SHARP the outer
 *              tiers are crossed by trees (NCCL NVLS_TREE). Stages pipeline: max of the parts.
 *   all-to-all direct: each GPU sends S (n - r_{t-1})/n across tier t; on rail-optimised tiers
 *              the share going to other rails also crosses the tier above. hierarchical (NCCL
 *              PXN): relay over NVLink to the GPU on the destination's rail first. pairwise: as
 *              direct with n-1 latency steps.
 *   send/recv  between neighbours of the group (pipeline, CP ring): alpha + S / (narrowest share
 *              on the path of the pair that crosses the outermost tier); a mesh pair gets one link.
 * Protocols: LL (per-hop latency alpha_t, bandwidth x 0.5 — NCCL tuning.cc "busBw * .5" for ring
 * LL) or Simple (per-hop latency alpha_t plus NCCL's tabulated Simple-over-LL difference: 2.8 us
 * on NVLink, 4.7 us on PCIe, 11.3 us on the network — tuning.cc hwLat ring 3.4-0.6, 5.7-1.0,
 * 14.0-2.7 — at full bandwidth); the faster is used. NVLS and SHARP are Simple only. Validation against nccl-tests: tests/test_coll_validation.c, docs/cluster.md.
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
_Static_assert(MP_ALGO_COUNT <= 32, "algorithm masks are 32 bits");

const char *mp_coll_op_name(mp_coll_op op) { return ((int)op >= 0 && op < MP_COLL_OP_COUNT) ? op_names[op] : "?"; }
const char *mp_coll_algo_name(mp_coll_algo a) { return ((int)a >= 0 && a < MP_ALGO_COUNT) ? algo_names[a] : "?"; }
const char *mp_coll_proto_name(mp_coll_proto p) { return p == MP_PROTO_LL ? "LL" : p == MP_PROTO_SIMPLE ? "Simple" : "?"; }

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

/* ---- the group on the tiers ------------------------------------------------------------ */

typedef struct {
    const mp_cluster *c;
    int clean;                 /* cost without oversubscription and background load */
    double n;                  /* ranks */
    int T;                     /* outermost tier crossed */
    double r[MP_MAX_TIERS];    /* ranks in one domain of tier t */
    double b[MP_MAX_TIERS];    /* b[0] = B_0 for this group; b[t] per-GPU share of tier t */
    double alpha[MP_MAX_TIERS];   /* per-hop latency, LL protocol */
    double alpha_s[MP_MAX_TIERS]; /* per-hop latency, Simple protocol */
    double nvls_Bps;           /* tier-0 in-network all-reduce algbw, 0 if none */
    int64_t stride;            /* the group's (first) stride: send/recv partners */
    double m[MP_MAX_TIERS + 1]; /* m[t + 1] = domains of tier t spanned; m[0] = n */
} ctx;

/* Line rate x efficiency x (1 - load) / oversubscription (clean: line rate x efficiency). */
static double achievable(const mp_tier *t, int clean)
{
    double bw = t->bw_Bps * t->efficiency_frac;
    if (clean)
        return bw;
    bw *= 1.0 - t->background_load_frac;
    if (t->oversubscription > 1.0)
        bw /= t->oversubscription;
    return bw;
}

/* Tier-0 bandwidth one GPU of a group with r0 ranks per domain uses. An XGMI-style full mesh
 * gives each GPU one link per peer, so a group of r0 uses r0-1 of its D-1 links (AMD MI300X: 7
 * links x 64 GB/s; stas00/ml-engineering network/README.md). Without PCIe peer-to-peer NCCL's
 * SHM transport copies every byte through host memory twice (device to host, host to device),
 * halving what reaches the peer (ASSUMED from the two copies, no measurement). */
static double scaleup_bw(const mp_tier *t0, double r0, int clean)
{
    double bw = achievable(t0, clean);
    if (t0->topology == MP_SU_MESH && t0->domain_gpus > 1 && r0 >= 2.0)
        bw *= (r0 - 1.0) / (double)(t0->domain_gpus - 1);
    if (t0->topology == MP_SU_PCIE && t0->pcie_no_p2p)
        bw *= 0.5;
    return bw;
}

/* Simple's extra latency per hop over LL, from NCCL's hardware latency table (tuning.cc hwLat,
 * ring: NVLink LL 0.6 / Simple 3.4 us, PCI 1.0 / 5.7 us, network 2.7 / 14.0 us). */
static double simple_extra(const mp_tier *t)
{
    if (t->kind != MP_LINK_SCALEUP)
        return MP_COLL_SIMPLE_EXTRA_NET_S;
    return t->topology == MP_SU_PCIE ? MP_COLL_SIMPLE_EXTRA_PCIE_S : MP_COLL_SIMPLE_EXTRA_NVLINK_S;
}

static void ctx_init(ctx *x, const mp_cluster *c, mp_group g, mp_group h, int clean)
{
    x->c = c;
    x->clean = clean;
    x->stride = g.stride;
    x->nvls_Bps = 0.0;
    mp_placement pl;
    mp_group_place_2d(c, g, h, &pl);
    x->n = (double)g.size * (double)(h.size > 1 ? h.size : 1);
    x->T = pl.outer_tier < 0 ? 0 : pl.outer_tier;
    for (int t = 0; t <= x->T; t++) {
        x->r[t] = (double)pl.ranks_in_domain[t];
        x->alpha[t] = c->tier[t].latency_s;
        x->alpha_s[t] = c->tier[t].latency_s + simple_extra(&c->tier[t]);
        x->b[t] = t == 0 ? scaleup_bw(&c->tier[0], x->r[0], clean) : achievable(&c->tier[t], clean);
    }
    x->m[0] = x->n;
    for (int t = 0; t < MP_MAX_TIERS; t++) {
        double m = t >= x->T ? 1.0 : x->n / x->r[t];
        x->m[t + 1] = m == floor(m) ? m : ceil(m); /* a partly filled domain still counts */
    }
    const mp_tier *t0 = &c->tier[0];
    if (t0->in_network_reduction) {
        double f = t0->in_network_algbw_frac > 0 ? t0->in_network_algbw_frac
                                                 : MP_COLL_NVLS_DEFAULT_FRAC;
        x->nvls_Bps = t0->bw_Bps * f * (clean ? 1.0 : (1.0 - t0->background_load_frac));
    }
}

/* Domains of tier t the group spans: m_{-1} = n, m_T = 1. */
static double span(const ctx *x, int t)
{
    return x->m[t + 1];
}

/* Latency of a phase under each protocol. */
typedef struct {
    double ll, s;
} lat2;

/* Faster protocol for a phase with latencies lat and full-bandwidth time bw_s. */
static void proto(lat2 lat, double bw_s, mp_coll_cost *o)
{
    double t_ll = lat.ll + bw_s / MP_COLL_LL_BW_FRAC;
    double t_s = lat.s + bw_s;
    if (t_ll <= t_s) {
        o->latency_s = lat.ll;
        o->bandwidth_s = bw_s / MP_COLL_LL_BW_FRAC;
        o->proto = MP_PROTO_LL;
    } else {
        o->latency_s = lat.s;
        o->bandwidth_s = bw_s;
        o->proto = MP_PROTO_SIMPLE;
    }
    o->total_s = o->latency_s + o->bandwidth_s;
}

/* k hops of tier t. */
static void hops(lat2 *l, const ctx *x, int t, double k)
{
    l->ll += k * x->alpha[t];
    l->s += k * x->alpha_s[t];
}

/* Ring bandwidth: min(B_0 if two or more ranks share a node, r_{t-1} b_t); flat: r = 1. */
static double ring_bw(const ctx *x, int lo, int hi, double per, int flat, int *tier)
{
    double best = INFINITY;
    *tier = lo;
    if (lo == 0 && (x->r[0] > 1.0 || hi == 0)) {
        best = x->b[0];
        *tier = 0;
    }
    for (int t = lo > 1 ? lo : 1; t <= hi; t++) {
        double bw = (flat ? 1.0 : x->r[t - 1] / per) * x->b[t];
        if (bw < best) {
            best = bw;
            *tier = t;
        }
    }
    return best;
}

/* Latency of a ring over tiers lo..hi: hops per tier x hop latency; steps 2 for all-reduce, 1
 * for RS/AG/broadcast. */
static lat2 ring_lat(const ctx *x, int lo, int hi, double steps)
{
    lat2 l = {0.0, 0.0};
    for (int t = lo; t <= hi; t++)
        hops(&l, x, t, steps * (span(x, t - 1) - span(x, t)));
    return l;
}

/* Cross-domain traffic factor of a tree at tier t: one peer domain: S; more: 2S. */
static double tree_cut(const ctx *x, int t)
{
    return span(x, t - 1) / span(x, t) <= 2.0 + 1e-9 ? 1.0 : 2.0;
}

static double tree_depth(const ctx *x, int t)
{
    double k = span(x, t - 1) / span(x, t);
    return k > 1.0 ? ceil(log2(k) - 1e-9) : 0.0;
}

/* ---- one algorithm ----------------------------------------------------------------------- */

/* Cost of algorithm a for op (split: hierarchical split tier, 0 = best). MP_ERR_INPUT if a does
 * not apply. */
static mp_status cost_one(const ctx *x, mp_coll_op op, double S, mp_coll_algo a, int split,
                          mp_coll_cost *o);

static mp_status ring_cost(const ctx *x, mp_coll_op op, double S, int flat, mp_coll_cost *o)
{
    const double n = x->n;
    double data = op == MP_COLL_ALL_REDUCE ? 2.0 * (n - 1.0) / n * S
                : op == MP_COLL_BROADCAST ? S : (n - 1.0) / n * S;
    double steps = op == MP_COLL_ALL_REDUCE ? 2.0 : 1.0;
    int tier;
    double B = ring_bw(x, 0, x->T, 1.0, flat, &tier);
    proto(ring_lat(x, 0, x->T, steps), data / B, o);
    o->bottleneck_tier = tier;
    o->algo = flat ? MP_ALGO_FLAT_RING : MP_ALGO_RING;
    return MP_OK;
}

static mp_status tree_cost(const ctx *x, double S, mp_coll_cost *o)
{
    const double n = x->n;
    lat2 lat = {0.0, 0.0};
    hops(&lat, x, 0, 2.0 * (x->r[0] - 1.0));
    double worst = 0.0;
    int tier = 0;
    if (x->r[0] > 1.0 || x->T == 0)
        worst = 2.0 * (n - 1.0) / n * S / x->b[0];
    for (int t = 1; t <= x->T; t++) {
        hops(&lat, x, t, 2.0 * tree_depth(x, t));
        double tt = tree_cut(x, t) * S / (x->r[t - 1] * x->b[t]);
        if (tt > worst) {
            worst = tt;
            tier = t;
        }
    }
    proto(lat, worst / MP_COLL_TREE_BW_FRAC, o);
    o->bottleneck_tier = tier;
    o->algo = MP_ALGO_TREE;
    return MP_OK;
}

/* Hierarchical all-reduce split at tier k (1..T): ring RS+AG among the q = r_{k-1} ranks of a
 * tier-(k-1) domain, ring all-reduce of S/q among the m_{k-1} domains. */
static void hier_at(const ctx *x, double S, int k, mp_coll_cost *o)
{
    const double q = x->r[k - 1], m = span(x, k - 1);
    mp_coll_cost in, out;
    memset(&in, 0, sizeof in);
    int ti = 0, to = k;
    if (q > 1.0) {
        double Bi = ring_bw(x, 0, k - 1, 1.0, 0, &ti);
        lat2 lat = {0.0, 0.0};
        for (int t = 0; t < k; t++) /* hops of a ring over q ranks: m_in(t) = q / r_t */
            hops(&lat, x, t, 2.0 * ((t ? q / x->r[t - 1] : q) - q / x->r[t]));
        proto(lat, 2.0 * (q - 1.0) / q * S / Bi, &in);
    }
    double Bo = INFINITY;
    for (int t = k; t <= x->T; t++) {
        double bw = x->r[t - 1] / q * x->b[t];
        if (bw < Bo) {
            Bo = bw;
            to = t;
        }
    }
    proto(ring_lat(x, k, x->T, 2.0), 2.0 * (m - 1.0) / m * (S / q) / Bo, &out);
    o->latency_s = in.latency_s + out.latency_s;
    o->bandwidth_s = in.bandwidth_s + out.bandwidth_s;
    o->total_s = o->latency_s + o->bandwidth_s;
    o->proto = out.proto;
    o->bottleneck_tier = in.bandwidth_s > out.bandwidth_s ? ti : to;
    o->algo = MP_ALGO_HIERARCHICAL;
    o->split_tier = k;
}

static mp_status hier_cost(const ctx *x, double S, int split, mp_coll_cost *o)
{
    if (x->T < 1)
        return MP_ERR_INPUT;
    if (split > 0) {
        if (split > x->T)
            return MP_ERR_INPUT;
        hier_at(x, S, split, o);
        return MP_OK;
    }
    mp_coll_cost c;
    int have = 0;
    for (int k = 1; k <= x->T; k++) {
        if (x->r[k - 1] >= x->n)
            continue;
        hier_at(x, S, k, &c);
        if (!have || c.total_s < o->total_s) {
            *o = c;
            have = 1;
        }
    }
    return have ? MP_OK : MP_ERR_INPUT;
}

static mp_status in_network_cost(const ctx *x, double S, mp_coll_cost *o)
{
    const mp_cluster *c = x->c;
    int nvls = x->nvls_Bps > 0 && x->r[0] > 1.0, sharp = 0;
    for (int t = 1; t <= x->T; t++)
        sharp |= c->tier[t].in_network_reduction;
    if (!nvls && !sharp)
        return MP_ERR_INPUT;
    double lat = 0.0, worst = 0.0;
    int tier = 0;
    if (x->r[0] > 1.0) {
        if (nvls) {
            /* NVLS: each GPU sends its buffer into the switch and gets the sum back; algbw is the
             * measured fraction of line rate (links.json in_network_algbw_frac). Fixed latency
             * MP_COLL_NVLS_LATENCY_S, fitted on collectives.csv (docs/cluster.md). */
            lat += MP_COLL_NVLS_LATENCY_S;
            worst = S / x->nvls_Bps;
        } else {
            /* CollNet without NVLS: ring reduce-scatter and all-gather inside the node. */
            lat += 2.0 * (x->r[0] - 1.0) * x->alpha_s[0];
            worst = 2.0 * (x->r[0] - 1.0) / x->r[0] * S / x->b[0];
        }
    }
    for (int t = 1; t <= x->T; t++) {
        double cut, nhops;
        if (c->tier[t].in_network_reduction) { /* SHARP: up to the switch and back */
            cut = 1.0;
            nhops = 2.0;
        } else { /* NVLS_TREE: a tree across the domains */
            cut = tree_cut(x, t);
            nhops = 2.0 * tree_depth(x, t);
        }
        lat += nhops * x->alpha_s[t];
        double tt = cut * S / (x->r[t - 1] * x->b[t]);
        if (tt > worst) {
            worst = tt;
            tier = t;
        }
    }
    o->latency_s = lat;
    o->bandwidth_s = worst;
    o->total_s = lat + worst;
    o->proto = MP_PROTO_SIMPLE;
    o->bottleneck_tier = tier;
    o->algo = MP_ALGO_IN_NETWORK;
    return MP_OK;
}

/* The rail tier: the first scale-out tier below T+1 that is rail-optimised or multi-plane and
 * has a tier above it to carry cross-rail traffic; -1 if none. */
static int rail_tier(const ctx *x)
{
    const mp_cluster *c = x->c;
    for (int t = 1; t < c->ntiers - 1 && t <= x->T; t++)
        if (c->tier[t].rail_optimized || c->tier[t].planes > 1)
            return t;
    return -1;
}

static mp_status all_to_all_cost(const ctx *x, double S, mp_coll_algo a, mp_coll_cost *o)
{
    const mp_cluster *c = x->c;
    const double n = x->n, r0 = x->r[0];
    if (a == MP_ALGO_HIERARCHICAL && (x->T < 1 || r0 <= 1.0))
        return MP_ERR_INPUT;
    double worst = 0.0;
    int tier = 0;
    /* Tier 0: traffic to node peers (+ with PXN the relay of what leaves the node). */
    double in0 = (r0 - 1.0) / n * S;
    if (a == MP_ALGO_HIERARCHICAL)
        in0 += (n - r0) / n * S * (r0 - 1.0) / r0;
    if (r0 > 1.0)
        worst = in0 / x->b[0];
    int rt = a == MP_ALGO_HIERARCHICAL ? -1 : rail_tier(x);
    for (int t = 1; t <= x->T; t++) {
        double load = (n - x->r[t - 1]) / n * S;
        if (rt >= 1 && t == rt + 1) /* cross-rail share of the traffic inside the rail tier */
            load += (x->r[rt] - r0) / n * S * (r0 - 1.0) / r0;
        double tt = load / x->b[t];
        if (tt > worst) {
            worst = tt;
            tier = t;
        }
    }
    if (rt >= 1 && rt == x->T && rt + 1 < c->ntiers) {
        /* The group stays inside the rail tier's domain, but other rails are joined above it. */
        double load = (x->r[rt] - r0) / n * S * (r0 - 1.0) / r0;
        double tt = load / achievable(&c->tier[rt + 1], x->clean);
        if (tt > worst) {
            worst = tt;
            tier = rt + 1;
        }
    }
    lat2 lat = {0.0, 0.0};
    hops(&lat, x, x->T, a == MP_ALGO_PAIRWISE ? n - 1.0 : 1.0);
    if (a == MP_ALGO_HIERARCHICAL)
        hops(&lat, x, 0, 1.0);
    proto(lat, worst, o);
    o->bottleneck_tier = tier;
    o->algo = a;
    return MP_OK;
}

/* Send/recv between neighbours of the group (a pipeline or a CP ring): the slowest neighbour
 * pair crosses the group's outermost tier T, and every step of the pipeline waits for it. Only
 * the `stride` ranks of one stage cross a boundary at a time, so at tier u each of them gets the
 * domain's cut shared by stride ranks instead of by all D_{u-1}: b_u max(1, D_{u-1} / stride),
 * and never more than its own NIC (b_1). Inside the scale-up domain a mesh pair has one link. */
static mp_status p2p_cost(const ctx *x, double S, mp_coll_cost *o)
{
    const mp_cluster *c = x->c;
    const int t = x->T;
    double B;
    if (t == 0) {
        const mp_tier *t0 = &c->tier[0];
        B = achievable(t0, x->clean);
        if (t0->topology == MP_SU_MESH && t0->domain_gpus > 1)
            B /= (double)(t0->domain_gpus - 1); /* one link of the mesh */
        if (t0->topology == MP_SU_PCIE && t0->pcie_no_p2p)
            B *= 0.5;
    } else {
        B = INFINITY;
        for (int u = 1; u <= t; u++) {
            double users = (double)c->tier[u - 1].domain_gpus / (double)x->stride;
            double bu = x->b[u] * (users > 1.0 ? users : 1.0);
            B = bu < B ? bu : B;
        }
    }
    lat2 lat = {c->tier[t].latency_s, c->tier[t].latency_s + simple_extra(&c->tier[t])};
    proto(lat, S / B, o);
    o->bottleneck_tier = t;
    o->algo = MP_ALGO_P2P;
    return MP_OK;
}

static mp_status cost_one(const ctx *x, mp_coll_op op, double S, mp_coll_algo a, int split,
                          mp_coll_cost *o)
{
    memset(o, 0, sizeof *o);
    o->split_tier = -1;
    o->congested_tier = -1;
    o->bottleneck_tier = -1;
    switch (op) {
    case MP_COLL_ALL_REDUCE:
        switch (a) {
        case MP_ALGO_RING: return ring_cost(x, op, S, 0, o);
        case MP_ALGO_FLAT_RING: return ring_cost(x, op, S, 1, o);
        case MP_ALGO_TREE: return tree_cost(x, S, o);
        case MP_ALGO_HIERARCHICAL: return hier_cost(x, S, split, o);
        case MP_ALGO_IN_NETWORK: return in_network_cost(x, S, o);
        default: return MP_ERR_INPUT;
        }
    case MP_COLL_REDUCE_SCATTER:
    case MP_COLL_ALL_GATHER:
    case MP_COLL_BROADCAST:
        if (a == MP_ALGO_RING || a == MP_ALGO_FLAT_RING)
            return ring_cost(x, op, S, a == MP_ALGO_FLAT_RING, o);
        return MP_ERR_INPUT;
    case MP_COLL_ALL_TO_ALL:
        if (a == MP_ALGO_DIRECT || a == MP_ALGO_PAIRWISE || a == MP_ALGO_HIERARCHICAL)
            return all_to_all_cost(x, S, a, o);
        return MP_ERR_INPUT;
    case MP_COLL_SEND_RECV:
        if (a == MP_ALGO_P2P)
            return p2p_cost(x, S, o);
        return MP_ERR_INPUT;
    default:
        return MP_ERR_INPUT;
    }
}

/* Cheapest algorithm of mask. Algorithms that can never win are skipped unless asked alone:
 * the flat ring is never faster than the ring (same latency, narrower bandwidth). */
static mp_status choose(const ctx *x, mp_coll_op op, double S, unsigned mask, mp_coll_cost *best)
{
    int have = 0;
    unsigned m = mask;
    if ((m & MP_ALGO_BIT(MP_ALGO_RING)) && (m & MP_ALGO_BIT(MP_ALGO_FLAT_RING)))
        m &= ~MP_ALGO_BIT(MP_ALGO_FLAT_RING);
    /* Only the algorithms the op has (cost_one rejects the others). */
    static const unsigned per_op[MP_COLL_OP_COUNT] = {
        [MP_COLL_ALL_REDUCE] = MP_ALGO_BIT(MP_ALGO_RING) | MP_ALGO_BIT(MP_ALGO_FLAT_RING) |
                               MP_ALGO_BIT(MP_ALGO_TREE) | MP_ALGO_BIT(MP_ALGO_HIERARCHICAL) |
                               MP_ALGO_BIT(MP_ALGO_IN_NETWORK),
        [MP_COLL_REDUCE_SCATTER] = MP_ALGO_BIT(MP_ALGO_RING) | MP_ALGO_BIT(MP_ALGO_FLAT_RING),
        [MP_COLL_ALL_GATHER] = MP_ALGO_BIT(MP_ALGO_RING) | MP_ALGO_BIT(MP_ALGO_FLAT_RING),
        [MP_COLL_BROADCAST] = MP_ALGO_BIT(MP_ALGO_RING) | MP_ALGO_BIT(MP_ALGO_FLAT_RING),
        [MP_COLL_ALL_TO_ALL] = MP_ALGO_BIT(MP_ALGO_DIRECT) | MP_ALGO_BIT(MP_ALGO_PAIRWISE) |
                               MP_ALGO_BIT(MP_ALGO_HIERARCHICAL),
        [MP_COLL_SEND_RECV] = MP_ALGO_BIT(MP_ALGO_P2P),
    };
    m &= per_op[op];
    for (int a = 1; a < MP_ALGO_COUNT; a++) {
        if (!(m & MP_ALGO_BIT(a)))
            continue;
        mp_coll_cost c;
        if (cost_one(x, op, S, (mp_coll_algo)a, 0, &c) != MP_OK)
            continue;
        if (!have || c.total_s < best->total_s) {
            *best = c;
            have = 1;
        }
    }
    return have ? MP_OK : MP_ERR_INPUT;
}

static int congested(const ctx *x)
{
    const mp_cluster *c = x->c;
    int hi = x->T + 1 < c->ntiers ? x->T + 1 : x->T; /* a rail tier's cross-rail traffic */
    for (int t = 0; t <= hi; t++)
        if (c->tier[t].oversubscription > 1.0 || c->tier[t].background_load_frac > 0.0)
            return 1;
    return 0;
}

mp_status mp_coll_time_2d(const mp_cluster *c, mp_coll_op op, double bytes, mp_group g,
                          mp_group h, unsigned mask, mp_coll_cost *out)
{
    memset(out, 0, sizeof *out);
    out->bottleneck_tier = -1;
    out->split_tier = -1;
    out->congested_tier = -1;
    out->algo = MP_ALGO_AUTO;
    out->blind_algo = MP_ALGO_AUTO;
    if (!c || c->ntiers < 1 || c->ntiers > MP_MAX_TIERS || !(bytes >= 0) || !isfinite(bytes) ||
        g.size < 1 || g.stride < 1 || h.size < 1 || h.stride < 1 || (int)op < 0 ||
        op >= MP_COLL_OP_COUNT || !(mask & MP_ALGO_MASK_ALL) || g.size > c->num_gpus ||
        h.size > c->num_gpus || g.size * h.size > c->num_gpus)
        return MP_ERR_INPUT;
    mask &= MP_ALGO_MASK_ALL;
    if (g.size * h.size == 1 || bytes == 0) {
        /* Nothing moves; report the algorithm asked for (AUTO when any would do). */
        for (int a = 1; a < MP_ALGO_COUNT && mask != MP_ALGO_MASK_ALL; a++)
            if (mask & MP_ALGO_BIT(a)) {
                out->algo = (mp_coll_algo)a;
                break;
            }
        out->blind_algo = out->algo;
        return MP_OK;
    }
    ctx x;
    ctx_init(&x, c, g, h, 0);
    mp_status st = choose(&x, op, bytes, mask, out);
    if (st != MP_OK)
        return st;
    out->blind_algo = out->algo;
    if (congested(&x)) {
        ctx clean;
        ctx_init(&clean, c, g, h, 1);
        mp_coll_cost own, blind, blind_real;
        if (cost_one(&clean, op, bytes, out->algo, out->split_tier > 0 ? out->split_tier : 0,
                     &own) == MP_OK)
            out->congestion_s = fmax(0.0, out->total_s - own.total_s);
        if (choose(&clean, op, bytes, mask, &blind) == MP_OK) {
            out->blind_algo = blind.algo;
            if (cost_one(&x, op, bytes, blind.algo, blind.split_tier > 0 ? blind.split_tier : 0,
                         &blind_real) == MP_OK)
                out->saved_s = fmax(0.0, blind_real.total_s - out->total_s);
        }
        if (out->congestion_s > 0.0) {
            int bt = out->bottleneck_tier;
            if (bt >= 0 && (c->tier[bt].oversubscription > 1.0 ||
                            c->tier[bt].background_load_frac > 0.0)) {
                out->congested_tier = bt;
            } else {
                for (int t = 0; t < c->ntiers; t++)
                    if (c->tier[t].oversubscription > 1.0 || c->tier[t].background_load_frac > 0.0) {
                        out->congested_tier = t;
                        break;
                    }
            }
        }
    }
    return MP_OK;
}

mp_status mp_coll_time_among(const mp_cluster *c, mp_coll_op op, double bytes, mp_group g,
                             unsigned mask, mp_coll_cost *out)
{
    return mp_coll_time_2d(c, op, bytes, g, (mp_group){1, 1}, mask, out);
}

mp_status mp_coll_time(const mp_cluster *c, mp_coll_op op, double bytes, mp_group g,
                       mp_coll_algo algo, mp_coll_cost *out)
{
    if ((int)algo < 0 || algo >= MP_ALGO_COUNT) {
        memset(out, 0, sizeof *out);
        out->bottleneck_tier = -1;
        return MP_ERR_INPUT;
    }
    unsigned mask = algo == MP_ALGO_AUTO ? MP_ALGO_MASK_ALL : MP_ALGO_BIT(algo);
    return mp_coll_time_among(c, op, bytes, g, mask, out);
}
