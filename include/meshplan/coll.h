/* meshplan/coll.h — the time of a collective on a group placed on the cluster's tiers.
 *
 * Alpha-beta cost model (Hockney 1994; Thakur, Rabenseifner & Gropp 2005, "Optimization of
 * Collective Communication Operations in MPICH", IJHPCA 19(1)): a step costs alpha (latency) plus
 * bytes / bandwidth. Message sizes follow nccl-tests: for all-reduce the buffer size; for
 * all-gather and reduce-scatter the full (gathered) buffer of size*per-rank bytes; for all-to-all
 * the bytes each rank sends in total; for broadcast the buffer; for send/recv the message.
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

#define MP_COLL_ALGO_LIST(X)              \
    X(MP_ALGO_AUTO, "auto")               \
    X(MP_ALGO_RING, "ring")               \
    X(MP_ALGO_TREE, "tree")               \
    X(MP_ALGO_HIERARCHICAL, "hierarchical") \
    X(MP_ALGO_IN_NETWORK, "in_network")   \
    X(MP_ALGO_DIRECT, "direct")           \
    X(MP_ALGO_PAIRWISE, "pairwise")       \
    X(MP_ALGO_P2P, "p2p")

typedef enum {
#define MP_X(n, s) n,
    MP_COLL_ALGO_LIST(MP_X)
#undef MP_X
    MP_ALGO_COUNT
} mp_coll_algo;

const char *mp_coll_op_name(mp_coll_op op);
const char *mp_coll_algo_name(mp_coll_algo a);
/** Parse a name; returns MP_ERR_INPUT for an unknown one. */
mp_status mp_coll_op_parse(const char *s, mp_coll_op *out);
mp_status mp_coll_algo_parse(const char *s, mp_coll_algo *out);

/** A collective's cost, broken down. */
typedef struct {
    double latency_s;    /* alpha terms */
    double bandwidth_s;  /* beta terms */
    double total_s;      /* latency_s + bandwidth_s */
    mp_coll_algo algo;   /* the algorithm costed (chosen when AUTO was asked) */
    int bottleneck_tier; /* tier whose bandwidth bounds the bandwidth term, -1 if none */
} mp_coll_cost;

/** Cost of one collective of `bytes` (nccl-tests convention above) over group g on cluster c.
 *  algo MP_ALGO_AUTO picks the cheapest algorithm valid for the op and topology (as NCCL's tuner
 *  does); forcing an algorithm that does not apply (e.g. in_network without NVLS/SHARP) returns
 *  MP_ERR_INPUT. bytes >= 0, finite. g.size == 1 or bytes == 0 costs nothing. */
mp_status mp_coll_time(const mp_cluster *c, mp_coll_op op, double bytes, mp_group g,
                       mp_coll_algo algo, mp_coll_cost *out);

/** Bus-bandwidth factor of an op for n ranks (nccl-tests): 2(n-1)/n, (n-1)/n or 1. */
double mp_coll_busbw_factor(mp_coll_op op, int64_t n);

#endif
