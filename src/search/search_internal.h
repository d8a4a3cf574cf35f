/* src/search/search_internal.h — the search space as the search and the enumerator share it.
 * Internal to src/search/. */
#ifndef MESHPLAN_SEARCH_INTERNAL_H
#define MESHPLAN_SEARCH_INTERNAL_H

#include <stdint.h>

#include "meshplan/search.h"

/* Divisors of any n <= 2^31 number at most 1600 (highly composite numbers), so these lists
 * cannot overflow for a GPU count <= 2^24 or a batch <= 2^30. */
#define SP_MAX_DIVISORS 2048
/* (ep, etp) pairs: divisors of the experts times divisors of moe_ffn_hidden, capped. */
#define SP_MAX_EXPERT 4096
/* Rank orders of one layout: permutations of at most 5 dimensions. */
#define SP_MAX_ORDERS 120

/* The distinct rank orders of a plan's degrees (tp, cp, pp, dp set; ep, etp of the layout). */
typedef struct {
    int n;
    mp_dim order[SP_MAX_ORDERS][MP_DIM_COUNT];
    unsigned listed[SP_MAX_ORDERS];   /* 0 for the default order (written as no order key) */
} sp_orders;

/* A degree shape on one cluster. */
typedef struct {
    int cluster;
    int64_t tp, cp, pp, dp;
    uint64_t size;       /* plans below it */
} sp_shape;

/* The values of the axes below a shape, in loop order (outermost first). */
typedef struct {
    int nshard;
    int shard_zero[SP_MAX_DIVISORS + 4];
    int64_t shard_hsdp[SP_MAX_DIVISORS + 4];
    int nexp;                 /* expert layouts (ep, etp); dense models: (1, 1) */
    int64_t ep[SP_MAX_EXPERT], etp[SP_MAX_EXPERT];
    int64_t vpp_lo, vpp_hi;   /* a contiguous range; empty when lo > hi */
    int nsp;
    int sp[2];
    int nrc;
    mp_recompute rc[MP_RC_COUNT];
    int ncpa;                 /* CP attention: ring and all-gather when cp > 1 */
    mp_cp_algo cpa[MP_CP_ALGO_COUNT];
    int nmb;
    int64_t mb[SP_MAX_DIVISORS];
} sp_axes;

/* The job: the model, the sequence length and batch, the pins. */
typedef struct {
    const mp_model *m;
    const mp_search_opts *o;
    int64_t seq, gb;
    mp_plan base;        /* job fields set, degrees to be filled */
} sp_space;

/* What the walk calls for each plan. */
typedef struct sp_walker sp_walker;
struct sp_walker {
    /* Visit plan p. Return 1 if it fits in memory, 0 if it is over memory, -1 if it was not
     * evaluated or failed (no pruning decision), -2 to stop the walk. With pruning, *states_bytes
     * receives the model-state bytes (weights + gradients + optimizer + buffers) of the most
     * loaded GPU and *capacity_bytes its memory. */
    int (*visit)(sp_walker *w, const mp_plan *p, double *states_bytes, double *capacity_bytes);
    /* n plans proven over memory without evaluation. */
    void (*skip)(sp_walker *w, uint64_t n);
    /* Plan p differs from the plan last visited only in its CP algorithm or rank order, which
     * change no memory and no compute: return as visit does; the walker may decide from the last
     * visit without evaluating. */
    int (*variant)(sp_walker *w, const mp_plan *p);
    int prune;
    /* Optional (NULL: never). p is the head of a line (its first CP algorithm and rank order)
     * at the micro-batch mbs[0] of the line's remaining micro-batches mbs[0..nmb), ascending,
     * each with nvar plans (the head and its communication variants), not the first line of
     * its (sharding, expert layout, vpp) subtree. Return 1 if the walker proved that none of
     * those nmb * nvar plans can enter what the search reports and accounted for all of them
     * (the walk then skips them), 2 if it proved that of the nvar plans at mbs[0] and accounted
     * for them (the walk goes on with the next micro-batch), 0 to have them walked. */
    int (*tail)(sp_walker *w, const mp_plan *p, const int64_t *mbs, int nmb, uint64_t nvar);
};

/* The rank orders the space has for plan p's degrees: the default (Megatron-Core's tp-cp-ep-dp-pp)
 * first, then, with opts.all_orders, every other permutation of the dimensions whose layout size is > 1 (orders that only
 * move size-1 dimensions give the same layout and are not repeated), each listing every dimension
 * of degree > 1 as mp_plan_resolve asks. A pinned order (pin.order_listed) is the only one. */
void sp_rank_orders(const sp_space *s, const mp_plan *p, sp_orders *out);

/* Check the options and fill the space. MP_ERR_INPUT with the reason in diag. */
mp_status sp_space_init(sp_space *s, const mp_model *m, const mp_search_opts *o, mp_diag *diag);

/* Append the shapes of cluster `cluster` with gpus GPUs to *shapes (growing it; *n, *cap), and
 * add the shape and rule counts to counts. MP_ERR_NOMEM on allocation failure. */
mp_status sp_shapes(const sp_space *s, int cluster, int64_t gpus, sp_shape **shapes, size_t *n,
                    size_t *cap, mp_search_counts *counts);

/* The axis values below a shape (returns the number of plans). */
uint64_t sp_shape_axes(const sp_space *s, const sp_shape *sh, sp_axes *ax);

/* 1 if the resolved plan p is one of the space's plans on gpus GPUs (decided from the rules and
 * axis values, not by visiting: a plan in a pruned subtree is still in the space). */
int sp_contains(const sp_space *s, int64_t gpus, const mp_plan *p);

/* Walk every plan below the shape whose sharding (ZeRO/HSDP value) index is in [shard_lo,
 * shard_hi) of ax (0 and ax->nshard: all), pruning when w->prune. Returns 0, or -2 if visit
 * stopped. */
int sp_walk(const sp_space *s, const sp_shape *sh, const sp_axes *ax, int shard_lo, int shard_hi,
            sp_walker *w);

/* Why the job has no plan on the GPU counts gpus[0..ngpus) (counts: the shape and rule counts of
 * the search), with the nearest GPU counts (in steps of gpus_step, the node size) and global
 * batches near gpus[0] that have one, as one paragraph into buf. */
void sp_explain_unformable(const sp_space *s, const int64_t *gpus, int ngpus, int64_t gpus_step,
                           const mp_search_counts *counts, char *buf, size_t cap);

#endif
