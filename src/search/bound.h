/* src/search/bound.h — a lower bound on the step time of a group of plans that share their outer
 * keys (degree shape, sharding, expert layout, vpp, schedule), valid for every sp, recompute
 * mode, micro-batch, CP algorithm and rank order below them. Internal to src/search/. */
#ifndef MESHPLAN_SEARCH_BOUND_H
#define MESHPLAN_SEARCH_BOUND_H

#include <stdint.h>

#include "meshplan/estimate.h"
#include "meshplan/workload.h"

/* Slots of the search's memo of sb_line_parts (per thread). */
#define SB_COMM_MEMO 256

typedef struct {
    int ok;             /* 0: no bound (the workload could not be shaped): prove nothing */
    double seq_s;       /* GEMM time of one sequence's share on the slowest stage, s (c below) */
    double full_rc_frac; /* r: what full recompute adds to seq_s, 1 / (g * recompute_every) */
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

/* The communication of one micro-batch of plan p (its mb) on the mean pipeline stage that no
 * overlap rule of the estimator hides (bound.c "Communication"): the EP dispatch/combine of
 * its MoE layers forward and backward, the TP collectives beyond the largest share the stack's
 * TP overlap can hide, and the pipeline send/recv of each model chunk, s. The same for every
 * CP algorithm of p; not for other rank orders (its groups are p's). Priced through the
 * thread's cache; 0 (no bound) when the workload cannot be shaped. */
double sb_comm_mb_s(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                    const mp_workload_opts *wo, mp_wl_cache *cache);

/* sb_comm_mb_s in two parts: *layers_s, the mean stage's EP and TP part (the same for every
 * vpp: the stages partition the layers), and *p2p_s, one pipeline send/recv (0 when pp = 1).
 * Returns 1, or 0 with both 0 when the workload cannot be shaped. */
int sb_comm_parts(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                  const mp_workload_opts *wo, mp_wl_cache *cache, double *layers_s, double *p2p_s);

/* What sb_line_parts finds of a plan's micro-batch on the mean pipeline stage, s. */
typedef struct {
    double comm_layers_s;     /* sb_comm_parts' layers_s */
    double p2p_s;             /* sb_comm_parts' p2p_s */
    double compute_s;         /* compute beyond the GEMMs (bound.c): attention core and
                                 element-wise kernels of every layer, forward and backward */
    double full_extra_s;      /* what full recompute adds to it */
    double selective_extra_s; /* what selective recompute adds to it (also: the whole
                                 selective recompute, the attention core again) */
    /* For one micro-batch alone (sb_plan_lb_s): the layers' whole compute, forward and
     * backward, and what full recompute adds (their forward again, over recompute_every). */
    double layers_compute_s, layers_full_s;
} sb_parts;

/* sb_comm_parts and the compute beyond the GEMMs from one shaped and priced workload, with the
 * estimator's workload options (mp_estimate.workload_opts: the compute term is only a bound
 * when the kernels are priced as the estimator prices them). Every part is non-decreasing in
 * mb with part / mb non-increasing, the same for every vpp, CP algorithm and rank order (the
 * communication parts: not for other rank orders). Returns 1, or 0 with every part 0 when the
 * workload cannot be shaped. */
int sb_line_parts(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                  const mp_workload_opts *wo, mp_wl_cache *cache, sb_parts *out);

/* The compute part of x for recompute mode rc: compute_s plus the mode's extra. */
double sb_compute_of(const sb_parts *x, mp_recompute rc);

/* sb_comm_mb_s from its parts, at p's pp and vpp: layers_s + 2 * vpp * p2p_s when pp > 1. */
double sb_comm_of(const mp_plan *p, double layers_s, double p2p_s);

/* The lower bound on step_s of every plan of the group with micro-batch mb in [mb_lo, mb_hi]
 * and recompute mode rc (any sp-fixed line: sp, CP algorithm, the head's rank order), adding
 * to sb_step_lb_s(b, mb_lo, rc) the communication term: G * comm_hi_s / mb_hi for the M
 * micro-batches and bubble * comm_lo_s for the pipeline bubble, with comm_lo_s = sb_comm_mb_s
 * at mb_lo and comm_hi_s at mb_hi (bound.c says why that holds for every mb between). */
double sb_line_lb_s(const sb_bound *b, int64_t mb_lo, int64_t mb_hi, mp_recompute rc,
                    double comm_lo_s, double comm_hi_s);

/* The lower bound on step_s of the plans of the group with micro-batch mb and recompute mode
 * rc alone (any CP algorithm; the rank order x and comm_s were priced for): (M + bubble) mean
 * stage micro-batches, M = G / mb, each at least the layers' compute x->layers_compute_s (+ the
 * recompute) and comm_s, the communication term (sb_comm_of, or 0). Not monotone in mb (GEMM
 * tiles and waves): for the one micro-batch x was priced at. 0 when !b->ok. */
double sb_plan_lb_s(const sb_bound *b, int64_t mb, mp_recompute rc, const sb_parts *x,
                    double comm_s);

/* The estimator's workload options from its estimate options (what estimate.c prices with). */
void sb_workload_opts(const mp_estimate_opts *eo, mp_workload_opts *wo);

#endif
