/* src/search/bound.h — a lower bound on the step time of a group of plans that share their outer
 * keys (degree shape, sharding, expert layout, vpp, schedule), valid for every sp, recompute
 * mode, micro-batch, CP algorithm and rank order below them. Internal to src/search/. */
#ifndef MESHPLAN_SEARCH_BOUND_H
#define MESHPLAN_SEARCH_BOUND_H

#include <stdint.h>

#include "meshplan/estimate.h"
#include "meshplan/workload.h"

typedef struct {
    int ok;             /* 0: no bound (the workload could not be shaped): prove nothing */
    double seq_s;       /* GEMM time of one sequence's share on the slowest stage, s (c below) */
    double local_seqs;  /* sequences per DP rank per step, G = gb / dp */
    double bubble;      /* (pp - 1) / vpp for 1F1B, interleaved and GPipe; 0 for ZB-H1 or pp 1 */
    /* What the group does not change (the job's on one cluster): */
    double flop_per_token; /* F: GEMM FLOPs a token passes in the layers, forward */
    double rate;        /* R: the fastest GEMM rate of the workload's roofline, FLOP/s */
    double load;        /* min(1, the MoE load factor); 1 for dense models */
} sb_bound;

/* The bound of the plans sharing p's degrees, sharding, expert layout, vpp and schedule, from
 * the workload's shape (mp_workload_shape: FLOPs per token, kernel rates, MoE load), priced with
 * wo and the thread's cache. Never fails: on an error out->ok = 0. */
void sb_bound_init(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                   const mp_workload_opts *wo, mp_wl_cache *cache, sb_bound *out);

/* The bound of another group of the same job on the same cluster (p's degrees, vpp and
 * schedule; the job's gb and seq), from b's F, R and load without shaping a workload: they
 * depend only on the model, the GPU, the sequence, the precision and the MoE load keys. */
void sb_bound_regroup(sb_bound *b, const mp_plan *p);

/* The lower bound on step_s of every plan of the group with micro-batch mb and recompute mode
 * rc (any sp, CP algorithm, rank order): non-decreasing in mb. 0 when !b->ok. */
double sb_step_lb_s(const sb_bound *b, int64_t mb, mp_recompute rc);

/* The estimator's workload options from its estimate options (what estimate.c prices with). */
void sb_workload_opts(const mp_estimate_opts *eo, mp_workload_opts *wo);

#endif
