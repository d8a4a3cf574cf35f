/* meshplan/coll.h — the time of a collective on a group placed on the cluster's tiers.
 *
 * Alpha-beta cost model (Hockney 1994; Thakur, Rabenseifner & Gropp 2005, "Optimization of
 * Collective Communication Operations in MPICH", IJHPCA 19(1)) with the structure of NCCL's own
 * tuning model (NVIDIA/nccl src/graph/tuning.cc): each algorithm has a per-step latency term per
 * tier it crosses and a bandwidth term bounded by the slowest tier, and each is run with the
 * low-latency protocol (LL: per-hop latency alpha, half the bandwidth) or the Simple protocol
 * (NCCL's extra Simple latency per hop on top of alpha, full bandwidth), whichever is faster. The equations, their sources and the
 * measured figures are in docs/cluster.md and next to each formula in src/coll/coll.c.
 *
 * Message sizes follow nccl-tests: for all-reduce the buffer size; for all-gather and
 * reduce-scatter the full (gathered) buffer of size*per-rank bytes; for all-to-all the bytes each
 * rank sends in total; for broadcast the buffer; for send/recv the message.
 * algbw = bytes / time; busbw = algbw * (2(n-1)/n for all-reduce, (n-1)/n for all-gather,
 * reduce-scatter and all-to-all, 1 otherwise) — the nccl-tests definitions.
 */
#ifndef MESHPLAN_COLL_H
#define MESHPLAN_COLL_H

#include "meshplan/status.h"
#include "meshplan/topo.h"

#define MP_COLL_OP_LIST(X)                   \
    X(MP_COLL_ALL_REDUCE, "all_reduce")      \
    X(MP_COLL_REDUCE_SCATTER, "reduce_scatter") \
    X(MP_COLL_ALL_GATHER, "all_gather")      \
    X(MP_COLL_ALL_TO_ALL, "all_to_all")      \
    X(MP_COLL_BROADCAST, "broadcast")        \
    X(MP_COLL_SEND_RECV, "send_recv")

typedef enum {
#define MP_X(n, s) n,
    MP_COLL_OP_LIST(MP_X)
#undef MP_X
    MP_COLL_OP_COUNT
} mp_coll_op;

/* Append-only (the numbers are bit positions in algorithm masks). */
#define MP_COLL_ALGO_LIST(X)              \
    X(MP_ALGO_AUTO, "auto")               \
    X(MP_ALGO_RING, "ring")               \
    X(MP_ALGO_TREE, "tree")               \
    X(MP_ALGO_HIERARCHICAL, "hierarchical") \
    X(MP_ALGO_IN_NETWORK, "in_network")   \
    X(MP_ALGO_DIRECT, "direct")           \
    X(MP_ALGO_PAIRWISE, "pairwise")       \
    X(MP_ALGO_P2P, "p2p")                 \
    X(MP_ALGO_FLAT_RING, "flat_ring")

typedef enum {
#define MP_X(n, s) n,
    MP_COLL_ALGO_LIST(MP_X)
#undef MP_X
    MP_ALGO_COUNT
} mp_coll_algo;

/** Algorithm sets for mp_coll_time_among: bit (1u << algo). */
#define MP_ALGO_BIT(a) (1u << (unsigned)(a))
/** Every algorithm (what MP_ALGO_AUTO chooses among). */
#define MP_ALGO_MASK_ALL (((1u << MP_ALGO_COUNT) - 1u) & ~MP_ALGO_BIT(MP_ALGO_AUTO))
/** What NCCL's tuner chooses among (ring, tree, NVLS/CollNet, and its direct all-to-all and
 *  point-to-point): the set nccl-tests measurements are compared with. */
#define MP_ALGO_MASK_NCCL (MP_ALGO_BIT(MP_ALGO_RING) | MP_ALGO_BIT(MP_ALGO_TREE) |       \
                           MP_ALGO_BIT(MP_ALGO_IN_NETWORK) | MP_ALGO_BIT(MP_ALGO_DIRECT) | \
                           MP_ALGO_BIT(MP_ALGO_P2P))

/** Protocols (NCCL's LL/LL128 family and Simple). */
typedef enum { MP_PROTO_LL, MP_PROTO_SIMPLE, MP_PROTO_COUNT } mp_coll_proto;

const char *mp_coll_op_name(mp_coll_op op);
const char *mp_coll_algo_name(mp_coll_algo a);
const char *mp_coll_proto_name(mp_coll_proto p); /* "LL", "Simple" */
/** Parse a name; returns MP_ERR_INPUT for an unknown one. */
mp_status mp_coll_op_parse(const char *s, mp_coll_op *out);
mp_status mp_coll_algo_parse(const char *s, mp_coll_algo *out);

/** A collective's cost, broken down. */
typedef struct {
    double latency_s;    /* alpha terms */
    double bandwidth_s;  /* beta terms (at the chosen protocol's bandwidth) */
    double total_s;      /* latency_s + bandwidth_s */
    mp_coll_algo algo;   /* the algorithm costed (chosen when AUTO was asked) */
    int bottleneck_tier; /* tier whose bandwidth bounds the bandwidth term, -1 if none */
    mp_coll_proto proto; /* protocol of the (last) phase */
    int split_tier;      /* hierarchical: the tier whose domains reduce locally first
                            (1 = inside each node, 2 = inside each leaf, ...); -1 otherwise */
    /* Congestion (oversubscription and background load on the tiers the group crosses). */
    int congested_tier;  /* tier whose congestion costs this algorithm most, -1 if none */
    double congestion_s; /* what congestion adds to this algorithm's time (0 without) */
    mp_coll_algo blind_algo; /* what a congestion-blind tuner picks among the same algorithms
                                (the cheapest with every oversubscription 1 and no load) */
    double saved_s;      /* blind_algo's time under congestion minus this one's, >= 0 */
} mp_coll_cost;

/** Cost of one collective of `bytes` (nccl-tests convention above) over group g on cluster c.
 *  algo MP_ALGO_AUTO picks the cheapest algorithm valid for the op and topology (as NCCL's tuner
 *  does, but aware of congestion); forcing an algorithm that does not apply (e.g. in_network
 *  without NVLS/SHARP, hierarchical inside one node) returns MP_ERR_INPUT. bytes >= 0, finite.
 *  A group with one rank, or zero bytes, costs nothing. */
mp_status mp_coll_time(const mp_cluster *c, mp_coll_op op, double bytes, mp_group g,
                       mp_coll_algo algo, mp_coll_cost *out);

/** As mp_coll_time, choosing the cheapest among the algorithms in mask (MP_ALGO_BIT bits;
 *  MP_ALGO_MASK_NCCL for what NCCL would do). MP_ERR_INPUT when none applies. */
mp_status mp_coll_time_among(const mp_cluster *c, mp_coll_op op, double bytes, mp_group g,
                             unsigned mask, mp_coll_cost *out);

/** As mp_coll_time_among for a group over two non-adjacent rank dimensions (topo.h
 *  mp_group_place_2d): outer.size copies of inner, outer.stride apart. Send/recv partners are
 *  inner.stride apart. */
mp_status mp_coll_time_2d(const mp_cluster *c, mp_coll_op op, double bytes, mp_group inner,
                          mp_group outer, unsigned mask, mp_coll_cost *out);

/** Bus-bandwidth factor of an op for n ranks (nccl-tests): 2(n-1)/n, (n-1)/n or 1. */
double mp_coll_busbw_factor(mp_coll_op op, int64_t n);

/** The model's constants, with their sources (docs/cluster.md). */
#define MP_COLL_LL_BW_FRAC 0.5        /* LL protocol bandwidth / Simple's */
#define MP_COLL_SIMPLE_EXTRA_NVLINK_S 2.8e-6 /* Simple - LL per-hop latency, NVLink/XGMI */
#define MP_COLL_SIMPLE_EXTRA_PCIE_S 4.7e-6   /* ... PCIe */
#define MP_COLL_SIMPLE_EXTRA_NET_S 11.3e-6   /* ... network (NIC and WAN tiers) */
#define MP_COLL_TREE_BW_FRAC 0.782    /* tree bandwidth / ring's (0.92 x 0.85) */
#define MP_COLL_NVLS_LATENCY_S 100e-6 /* NVLS fixed latency */
#define MP_COLL_NVLS_DEFAULT_FRAC 0.61 /* NVLS algbw / line rate when the link does not say */

#endif
