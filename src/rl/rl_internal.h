/* src/rl/rl_internal.h — what the RL module's files share (internal): the decode-step table of a
 * rollout engine, the one-engine event loop, the weight sync and the pool clusters. */
#ifndef MESHPLAN_RL_INTERNAL_H
#define MESHPLAN_RL_INTERNAL_H

#include "meshplan/rl.h"

#define MP_RL_GRID_B 16 /* batch sizes 1, 2, 4, ... up to the cap (2^15 at most) */
#define MP_RL_GRID_C 4  /* contexts from the prompt to prompt + the longest response */

/** Decode-step seconds s[i * nc + j] at batch b[i] and mean context ctx[j] of one engine, from
 *  mp_infer_estimate; the prefill of one prompt; the engine's KV pool and batch cap. */
typedef struct {
    double b[MP_RL_GRID_B], ctx[MP_RL_GRID_C], s[MP_RL_GRID_B * MP_RL_GRID_C];
    int nb, nc;
    double prefill_per_prompt_s;
    double kv_pool_tokens;
    double engine_max_batch;
} mp_rl_step_table;

mp_status mp_rl_step_table_build(const mp_model *m, const mp_cluster *pool, const mp_infer_plan *base,
                                 double prompt, double max_ctx, int64_t cap, mp_rl_step_table *t,
                                 mp_infer_result *scratch, mp_diag *d);
double mp_rl_step_time(const mp_rl_step_table *t, double b, double ctx);

typedef struct {
    double decode_s;   /* prefill of its prompts + every decode step */
    double tail_wait_s;
    double peak_batch;
    double busy_seq_s; /* integral of the batch over time (sequence-seconds) */
    double tokens;
    double tail_tokens; /* generated after the batch fell below half its peak */
    double steps;
} mp_rl_engine_out;

mp_status mp_rl_engine_run(const mp_rl_step_table *t, const double *lens, int64_t n, int64_t keep,
                           int64_t cap, double prompt, double prefill_per_seq_s, mp_rl_engine_out *o);

/** A pool of `gpus` GPUs cut from c (whole nodes; a pool under one node keeps its NVLink). */
void mp_rl_pool(const mp_cluster *c, int64_t gpus, mp_cluster *out);

/** The weight sync for the resolved config (src/rl/sync.c). train: the training plan resolved on
 *  the train pool. */
mp_status mp_rl_sync_estimate(const mp_model *m, const mp_cluster *c, const mp_rl_config *cfg,
                              const mp_plan *train, mp_rl_sync_result *out, mp_diag *d);

/** The update's data-parallel imbalance (src/rl/balance.c, eqs. 1-2): the expected largest of
 *  `ranks` sums of the work of `seqs_per_rank` sequences of prompt + l tokens, l from l's
 *  distribution, over their mean; attn_frac in [0, 1] is attention's share of the pass's compute
 *  time (its work quadratic in a sequence's tokens, the rest linear; 0: work linear in tokens).
 *  1 for one rank, fixed lengths or fewer than one sequence per rank. */
double mp_rl_dp_imbalance(const mp_rl_lengths *l, double prompt, double seqs_per_rank, int64_t ranks,
                          double attn_frac);
/** The moments m[k] = E[s^k], k = 0..4, of a sequence's tokens s = prompt + a response of l's
 *  distribution (256 quantiles, src/rl/balance.c), in tokens^k. l NULL: the prompt alone. */
void mp_rl_seq_moments(const mp_rl_lengths *l, double prompt, double m[5]);
/** The standard normal quantile Phi^-1(p) (src/rl/rollout.c: Newton on C99 erfc, to 1e-12); p is
 *  clamped to [1e-12, 1 - 1e-12], so the result is finite. */
double mp_rl_norm_quantile(double p);
/** Blom's (1958) expected largest of g standard normals, Phi^-1((g - 0.375)/(g + 0.25)); 0 for g <= 1. */
double mp_rl_expected_max_z(int64_t g);

#endif
