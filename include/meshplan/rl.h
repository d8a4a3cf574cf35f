/* meshplan/rl.h — RL post-training (PPO, GRPO, DAPO, ...): one step of rollout, the forward-only
 * passes, the policy update and the weight sync, on one GPU pool (colocated, time-sliced) or two
 * (disaggregated, one-step-off asynchronous, fully asynchronous with a staleness bound), with the
 * long-tail wait of the response-length distribution and the idle time of each pool.
 *
 * A composer (DESIGN.md): rollout is priced by the inference estimator (infer.h: one decode step
 * of a batch at a context, one prefill), run over the response lengths by a small event loop of
 * continuous batching (src/rl/rollout.c); the passes and the update by the training estimator
 * (estimate.h) on the training pool; the weight sync by the collective model (coll.h) over the
 * links between the pools. It never calls back into them with anything but their public inputs.
 * Equations and sources: docs/rl.md. Cost: one step is ~50 inference estimates, 1 training
 * estimate and an O(n log n) event loop over the responses of one engine (~1 ms).
 */
#ifndef MESHPLAN_RL_H
#define MESHPLAN_RL_H

#include <stdint.h>

#include "meshplan/infer.h"
#include "meshplan/model.h"
#include "meshplan/plan.h"
#include "meshplan/status.h"
#include "meshplan/topo.h"

/** Algorithms: names "ppo", "grpo", "dapo", "rloo", "reinforce++" (mp_rl_algorithm_name). They
 *  differ in the passes a step runs: PPO a critic (forward for values, its own update) and a
 *  reference model (KL); GRPO a reference model (KL loss, Shao et al. 2024, arXiv 2402.03300);
 *  DAPO none (no KL, Yu et al. 2025, arXiv 2503.14476 Sec. 2.3); RLOO and REINFORCE++ a
 *  reference model. Every algorithm computes old-policy log-probs (the importance ratio). */
typedef enum { MP_RL_PPO, MP_RL_GRPO, MP_RL_DAPO, MP_RL_RLOO, MP_RL_REINFORCEPP, MP_RL_ALGO_COUNT } mp_rl_algorithm;
/** Placements, the names of the RL validation schema: "colocated", "disaggregated",
 *  "async_one_step", "fully_async". */
typedef enum {
    MP_RL_COLOCATED, MP_RL_DISAGGREGATED, MP_RL_ASYNC_ONE_STEP, MP_RL_FULLY_ASYNC, MP_RL_PLACEMENT_COUNT
} mp_rl_placement;
/** Response-length distributions: "fixed" (every response mean tokens), "lognormal" (mean, shape
 *  sigma, cut at max), "uniform" (on [1, 2 mean - 1], cut at max). */
typedef enum { MP_RL_LEN_FIXED, MP_RL_LEN_LOGNORMAL, MP_RL_LEN_UNIFORM, MP_RL_LEN_COUNT } mp_rl_len_dist;
/** Weight sync: "bucketed" (NCCL broadcast per bucket of bucket_bytes; verl's checkpoint-engine,
 *  OpenRLHF), "per_tensor" (one collective per tensor), "cpu" (staged through host memory). */
typedef enum { MP_RL_SYNC_BUCKETED, MP_RL_SYNC_PER_TENSOR, MP_RL_SYNC_CPU, MP_RL_SYNC_COUNT } mp_rl_sync;

const char *mp_rl_algorithm_name(mp_rl_algorithm a);
const char *mp_rl_placement_name(mp_rl_placement p);
const char *mp_rl_len_dist_name(mp_rl_len_dist d);
const char *mp_rl_sync_name(mp_rl_sync s);
/** Parse a name into *out; MP_ERR_INPUT (diag names the value and the choices) when unknown. */
mp_status mp_rl_algorithm_parse(const char *s, int *out, mp_diag *diag);
mp_status mp_rl_sync_parse(const char *s, int *out, mp_diag *diag);

/** A response-length distribution, tokens. */
typedef struct {
    int dist;          /* mp_rl_len_dist */
    double mean_tokens; /* mean before the cut, >= 1 */
    double max_tokens;  /* the generation limit (max_response_length), >= mean; responses that
                           reach it are cut there (truncated) */
    double sigma;       /* lognormal shape (std of log length), (0, 4]; default 1.0 */
} mp_rl_lengths;

/** Parse "mean=2000,max=8192,dist=lognormal[,sigma=1]" over *l (keys not given keep their
 *  value). MP_ERR_INPUT naming the key, the value and the range. */
mp_status mp_rl_lengths_parse(const char *text, mp_rl_lengths *l, mp_diag *diag);

/** Parse a placement: "colocated", "disaggregated:rollout=48,train=16", "async_one_step[:...]",
 *  "fully_async[:rollout=..,train=..,staleness=0.5,trigger=4]" into c's placement,
 *  rollout_gpus, train_gpus, staleness and sync_chunks (trigger). MP_ERR_INPUT naming what is
 *  wrong. */
struct mp_rl_config;
mp_status mp_rl_placement_parse(const char *text, struct mp_rl_config *c, mp_diag *diag);

#define MP_RL_PLAN_TEXT 256

/** One RL step's job. Set it with mp_rl_config_init, then change what you know. */
typedef struct mp_rl_config {
    int algorithm;             /* mp_rl_algorithm */
    int64_t prompts;           /* prompts per step, >= 1 */
    int64_t responses;         /* responses per prompt (group size), >= 1 */
    double prompt_tokens;      /* mean prompt length, >= 1 */
    mp_rl_lengths response;    /* response lengths */
    int placement;             /* mp_rl_placement */
    int64_t rollout_gpus, train_gpus; /* pools; 0: colocated -> all GPUs for both; split
                                  placements -> half each (rounded to whole nodes) */
    double staleness;          /* fully_async: share of a step's samples that may come from the
                                  previous policy, [0, 1] (verl staleness_threshold) */
    int64_t sync_chunks;       /* fully_async: trainer updates between two parameter syncs
                                  (verl async_training.trigger_parameter_sync_step), each on a
                                  chunk of prompts / sync_chunks prompts (require_batches x
                                  ppo_mini_batch_size); 0 (default): one chunk per mini-batch;
                                  [0, 2^20] */
    int partial_rollout;       /* 1: unfinished responses are paused at the sync and resumed
                                  after it (verl partial_rollout, Kimi k1.5 Sec. 2.6.2); -1: on
                                  for fully_async, off otherwise */
    double overprovision_frac; /* generate (1 + x) x the responses and keep the first to finish,
                                  [0, 4]; 0: off */
    int64_t mini_batches;      /* optimizer steps per RL step (PPO mini-batches), >= 1; 0: the
                                  train plan's gb decides (gb = sequences per optimizer step) */
    int ppo_epochs;            /* passes over the batch in the update, >= 1 */
    int64_t train_tokens_per_gpu; /* dynamic batching (verl use_dynamic_bsz,
                                  ppo_max_token_len_per_gpu): a micro-batch packs as many
                                  sequences as fit this many tokens per GPU (x cp: the sequence
                                  ranks share them), at most a rank's share of a mini-batch;
                                  0 (default): the train plan's mb (1 when unset); [0, 2^30] */
    mp_infer_plan rollout;     /* the rollout engine's plan: tp, pp, engine, weights, kv_frac...
                                  (batch, in, out and dp are set by the composer) */
    int64_t max_num_seqs;      /* sequences in flight per engine; 0: the engine's default cap
                                  and its KV pool */
    char train_plan[MP_RL_PLAN_TEXT]; /* training plan keys ("zero=3,mb=2"); gb and seq are set
                                  by the composer unless given */
    int sync;                  /* mp_rl_sync */
    double bucket_bytes;       /* bucketed sync: bytes per bucket, > 0 */
    double per_tensor_host_s;  /* host time per tensor of the sync (name mapping, dtype cast,
                                  the engine's load_weights call), s, >= 0 */
    double host_Bps;           /* device<->host copy rate (colocated offload, cpu sync), > 0 */
    int offload;               /* colocated: 1 the trainer's weights, gradients and optimizer
                                  state leave the GPU during rollout and the engine's weights
                                  and KV cache leave it during training (verl sleep mode +
                                  FSDP offload); 0 both stay resident (must fit); -1 auto (1) */
    double reward_s_per_response; /* rule-based reward on the CPU, s per response, >= 0 */
    double price_gpu_hour_usd; /* rental price, USD per GPU-hour, >= 0 */
} mp_rl_config;

/** Defaults, each with its source (docs/rl.md): GRPO; 512 prompts x 8 responses; prompt 1024;
 *  responses lognormal mean 2000, max 8192, sigma 1.0 (the long right tail reported for RL
 *  rollouts by StreamRL, Zhong et al. 2025, arXiv 2504.15930 Fig. 3, and RLHFuse, Zhong et al.
 *  2024, arXiv 2409.13221 Fig. 4; ASSUMED shape); colocated; staleness 0; partial rollout -1;
 *  no over-provisioning; 1 mini-batch, 1 epoch; rollout tp 1 on vLLM; max_num_seqs 0 (engine
 *  default); train plan "" (zero=3, recompute=full: verl's FSDP defaults with gradient
 *  checkpointing, set by the composer); bucketed sync with 4 GiB buckets (verl checkpoint-engine
 *  device_buffer_size_M 4096); per_tensor_host_s 3e-4 (ASSUMED: a Python-level call per tensor);
 *  host_Bps 25e9 (ASSUMED as run.h's d2h_Bps); offload -1; reward 1 ms per response (ASSUMED
 *  rule-based math verifier); price 2.0 USD per GPU-hour (ASSUMED). */
void mp_rl_config_init(mp_rl_config *c);

/** The rollout of one step on one engine (the straggler: it holds the longest response). */
typedef struct {
    int64_t engines;           /* rollout replicas: rollout_gpus / (tp x pp) */
    int64_t seqs_per_engine;   /* responses each generates (over-provisioned ones included) */
    int64_t max_in_flight;     /* concurrency cap: max_num_seqs and the KV pool */
    double kv_pool_tokens;     /* tokens the engine's KV pool holds */
    double prefill_s;          /* prompts of the engine */
    double decode_s;           /* every decode step of the straggler engine */
    double total_s;            /* prefill + decode (the rollout phase) */
    double tail_wait_s;        /* time the straggler runs below half its peak batch (the long
                                  tail; what partial rollouts remove) */
    double mean_engine_s;      /* an engine with the distribution's quantiles but not the longest
                                  response: total_s - mean_engine_s is the straggler wait */
    double tokens;             /* response tokens generated per step, all engines */
    double peak_batch;         /* largest batch in flight */
    double busy_frac;          /* engine-time spent generating / (engines x total_s) */
    double mean_response_tokens; /* after the cut at max (and over-provisioning) */
    double longest_tokens;     /* the longest response */
    double truncated_frac;     /* share of responses cut at max */
} mp_rl_rollout;

/** The weight sync trainer -> rollout engines. */
typedef struct {
    double bytes;              /* weights in the rollout's format, the whole model */
    double bytes_per_rollout_gpu;
    int64_t tensors;           /* parameter tensors of the model */
    int64_t buckets;           /* collectives issued (tensors when per_tensor) */
    double gather_s;           /* training layout -> full tensors (all-gather over the shards) */
    double transfer_s;         /* over the link to the rollout GPUs (or the load in place) */
    double host_s;             /* per-tensor host work */
    double total_s;
    char link[64];             /* the link the transfer crosses ("nvlink4", "roce-400", "pcie") */
    int bucketed;
} mp_rl_sync_result;

#define MP_RL_MAX_ASSUMED 16
/** One predicted RL step. Seconds unless named otherwise. */
typedef struct {
    mp_rl_config config;       /* resolved (pools, partial rollout, offload) */
    int feasible;              /* the training plan fits its pool (and, colocated without
                                  offload, beside the engine) */
    char reason[256];
    double step_s;
    /* time_s: the phases on the critical path of one step (colocated and disaggregated sync:
     * their sum is step_s; asynchronous placements overlap rollout with the rest). */
    double rollout_s, rollout_tail_wait_s, ref_s, logprob_s, reward_s, critic_s, train_s,
           weight_sync_s, switch_s;
    double rollout_pool_idle_s, train_pool_idle_s; /* per step */
    double rollout_pool_idle_frac, train_pool_idle_frac; /* of pool-time (tail under-use
                                  included for the rollout pool) */
    double tokens_per_step;    /* prompt + response tokens trained on */
    double tokens_per_s, tokens_per_s_per_gpu;
    double gpu_util_rollout_frac, gpu_util_train_frac; /* busy share of each pool */
    double usd_per_step, j_per_step;
    double train_mfu;          /* of the update (balanced ranks) */
    double train_dp_imbalance; /* >= 1: the update's wait for the rank holding the longest share
                                  of each mini-batch (src/rl/balance.c); train_s includes it */
    double train_state_bytes;  /* weights + gradients + optimizer per train GPU (what a GPU
                                  moving into the train pool must load) */
    mp_rl_rollout rollout;
    mp_rl_sync_result sync;
    char bottleneck[128];      /* in words */
    int nassumed;
    char assumed[MP_RL_MAX_ASSUMED][200];
} mp_rl_result;

/** Predict one RL step of model m on cluster c (all GPUs of the job) for config cfg.
 *  MP_OK (a training plan over memory is an answer: feasible 0 with the reason); MP_ERR_INPUT
 *  naming the field when the config is out of range, the pools do not add up to the cluster's
 *  GPUs (split placements) or are not whole multiples of the rollout's tp x pp, or a plan cannot
 *  be formed (the estimators' reasons in diag). */
mp_status mp_rl_estimate(const mp_model *m, const mp_cluster *c, const mp_rl_config *cfg,
                         mp_rl_result *out, mp_diag *diag);

/** The rollout phase alone on a pool of `gpus` GPUs of c (the event loop; exposed for tests and
 *  the search). MP_ERR_INPUT as mp_rl_estimate. */
mp_status mp_rl_rollout_estimate(const mp_model *m, const mp_cluster *c, int64_t gpus,
                                 const mp_rl_config *cfg, mp_rl_rollout *out, mp_diag *diag);

/** The i-th of n equal-probability quantiles ((i + 0.5) / n) of distribution l, cut at max,
 *  tokens; i in [0, n). Deterministic: the rollout uses these instead of random draws. */
double mp_rl_length_quantile(const mp_rl_lengths *l, int64_t i, int64_t n);

/** rl-search: every placement and split of the cluster's GPUs (whole nodes, or halves of one
 *  node), each rollout tp in {1, 2, 4, 8} dividing the pool, best first by step time. */
#define MP_RL_SEARCH_MAX 512
typedef struct {
    int placement;
    int64_t rollout_gpus, train_gpus;
    int rollout_tp;
    double step_s, rollout_s, train_side_s; /* train_side: passes + update + sync */
    double rollout_pool_idle_frac, train_pool_idle_frac;
    int feasible;
} mp_rl_candidate;

typedef struct {
    mp_rl_candidate cand[MP_RL_SEARCH_MAX];
    int ncand;
    int best;                  /* index of the fastest feasible candidate, -1 if none */
    int best_static;           /* the fastest fixed split (disaggregated or async_one_step) */
    /* Dynamic reallocation (DynaResize-style): during the step, rollout GPUs whose engines have
     * drained in the long tail move to the trainer, and back for the next rollout. */
    double dynamic_step_s;     /* the best static split's step with reallocation */
    double dynamic_gain_frac;  /* 1 - dynamic / best static */
    double realloc_cost_s;     /* reshard + weight load for the GPUs that move */
    double movable_gpu_s;      /* rollout GPU-seconds idle in the tail that could move */
    char why[400];             /* in words */
    int evaluated;
} mp_rl_search_result;

/** Search placements and splits for cfg (its placement and pools are ignored) on c. MP_OK, or
 *  what mp_rl_estimate refuses for every candidate (diag). */
mp_status mp_rl_search(const mp_model *m, const mp_cluster *c, const mp_rl_config *cfg,
                       mp_rl_search_result *out, mp_diag *diag);

#endif
