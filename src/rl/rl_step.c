/* src/rl/rl_step.c — compose one RL step (docs/rl.md "The step"): the pools, the training plan
 * on the train pool (the training estimator: policy update, forward-only passes), the rollout
 * (rl.c), the weight sync (sync.c), the colocated switch, and the placement rule:
 *   colocated       step = rollout + switch + passes + update + sync
 *   disaggregated   step = rollout + passes + update + sync        (each pool idles in the other's)
 *   async_one_step  step = max(rollout, passes + update) + sync    (the rollout of step k+1 runs
 *                   during the update of step k; Noukhovitch et al. 2024, arXiv 2410.18252)
 *   fully_async     step = max(rollout', passes + update) + bubble + sync, rollout' with partial
 *                   rollouts, bubble = max(0, 1/n - staleness) x min(...) over the n chunks the
 *                   trainer streams between two syncs (verl recipe/fully_async_policy README,
 *                   "Supported Modes"; AReaL, Fu et al. 2025, arXiv 2505.24298): see stream_bubble. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshplan/energy.h"
#include "meshplan/estimate.h"
#include "meshplan/rl.h"
#include "rl/rl_internal.h"

static void assume(mp_rl_result *r, const char *fmt, ...)
{
    if (r->nassumed >= MP_RL_MAX_ASSUMED)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->assumed[r->nassumed++], sizeof r->assumed[0], fmt, ap);
    va_end(ap);
}

/* Pools: colocated -> every GPU for both; split -> as given, else half each in whole nodes. */
static int resolve_pools(const mp_cluster *c, mp_rl_config *k, mp_diag *d)
{
    const int64_t n = c->num_gpus;
    if (k->placement == MP_RL_COLOCATED) {
        k->rollout_gpus = k->train_gpus = n;
        return 0;
    }
    if (k->rollout_gpus <= 0 && k->train_gpus <= 0) {
        int64_t unit = n >= 2 * c->gpus_per_node ? c->gpus_per_node : 1;
        k->rollout_gpus = (n / unit + 1) / 2 * unit;
        k->train_gpus = n - k->rollout_gpus;
    } else if (k->rollout_gpus <= 0)
        k->rollout_gpus = n - k->train_gpus;
    else if (k->train_gpus <= 0)
        k->train_gpus = n - k->rollout_gpus;
    if (k->rollout_gpus < 1 || k->train_gpus < 1 || k->rollout_gpus + k->train_gpus != n) {
        mp_diag_add(d, "placement %s: rollout = %lld + train = %lld GPUs: expected two pools of at "
                       "least 1 GPU adding up to the job's %lld", mp_rl_placement_name((mp_rl_placement)k->placement),
                    (long long)k->rollout_gpus, (long long)k->train_gpus, (long long)n);
        return 1;
    }
    return 0;
}

typedef struct {
    double update_s, fwd_pass_s, imbalance, mfu, power_W, mem_total, mem_state, capacity;
    int64_t mini;       /* optimizer steps (mini-batches) per epoch over the batch */
    int feasible;
    char reason[256];
    mp_plan plan;
} train_side;

/* Dynamic batching (verl use_dynamic_bsz; verl/utils/seqlen_balancing.py rearrange_micro_batches
 * packs a rank's sequences into micro-batches of at most ppo_max_token_len_per_gpu x the
 * sequence-parallel size tokens, verl/workers/actor/dp_actor.py): the rank's share of a
 * mini-batch in the fewest micro-batches of at most budget / seq sequences, split evenly (the
 * caller rounds gb up to whole micro-batches and scales the update back to the step's tokens).
 * Fewer, larger micro-batches re-gather ZeRO-3 weights less often. */
static int64_t packed_mb(int64_t budget_tokens, int64_t seq, int64_t per_step, int64_t dp)
{
    int64_t share = dp > 0 ? per_step / dp : per_step;
    int64_t fit = seq > 0 ? budget_tokens / seq : 1;
    if (share < 1)
        share = 1;
    if (fit < 1)
        fit = 1;
    int64_t k = (share + fit - 1) / fit; /* micro-batches: the fewest the budget allows */
    return (share + k - 1) / k;             /* equal ones (the step's gb rounds up to them) */
}

/* The training plan on the train pool: zero=3 and full recompute by default (verl's FSDP with
 * gradient checkpointing), seq = prompt + mean response, gb = the batch over the mini-batches.
 * The update is epochs x mini-batches optimizer steps; a forward-only pass over the batch is the
 * forward share of the step's compute, F / (F + B + R) of (step - optimizer). */
static mp_status train_estimate(const mp_model *m, const mp_cluster *c, const mp_rl_config *k,
                                double mean_resp, train_side *ts, mp_rl_result *r, mp_diag *d)
{
    memset(ts, 0, sizeof *ts);
    mp_cluster pool;
    mp_rl_pool(c, k->train_gpus, &pool);
    mp_plan user;
    mp_plan_init_default(&user);
    if (k->train_plan[0] && mp_plan_parse(k->train_plan, &user, d) != MP_OK)
        return MP_ERR_INPUT;
    mp_plan *p = &ts->plan;
    mp_plan_init_default(p);
    if (mp_plan_parse("zero=3,recompute=full", p, d) != MP_OK)
        return MP_ERR_INTERNAL;
    if (k->train_plan[0] && mp_plan_parse(k->train_plan, p, d) != MP_OK)
        return MP_ERR_INPUT;
    const int64_t N = k->prompts * k->responses;
    /* The attention-equivalent sequence (docs/rl.md "The step"). A step's sequences differ in
     * length and each attends only to itself (verl use_remove_padding: flash_attn_varlen_func
     * over the packed micro-batch's cu_seqlens), so its attention work is N E[s^2] (keys per query
     * (s + 1) / 2, causal) while its GEMMs see N E[s] tokens. One length s_eq = E[s^2] / E[s] run
     * over N_eq = N E[s] / s_eq sequences keeps both: N_eq s_eq = N E[s] tokens and
     * N_eq s_eq^2 = N E[s^2]. Fixed lengths give s_eq = E[s], N_eq = N. Taken when the plan
     * leaves seq, mb and gb to the step (a given mb or gb counts real sequences). */
    const double tok = k->prompt_tokens + mean_resp;
    double eq = 1.0; /* s_eq / E[s] */
    if (!user.seq && !user.mb && !user.gb) {
        double mo[5];
        mp_rl_seq_moments(&k->response, k->prompt_tokens, mo);
        eq = mo[1] > 0.0 && mo[2] > mo[1] * mo[1] ? mo[2] / (mo[1] * mo[1]) : 1.0;
    }
    const int64_t Neq = (int64_t)ceil((double)N / eq);
    if (!user.seq) /* a multiple of 8 (2 cp for load-balanced context parallelism, up to cp 4) */
        p->seq = ((int64_t)ceil(tok * eq) + 7) / 8 * 8;
    int64_t tp = p->tp ? p->tp : 1, pp = p->pp ? p->pp : 1, cp = p->cp ? p->cp : 1;
    int64_t dp = p->dp ? p->dp : k->train_gpus / (tp * pp * cp);
    int64_t steps = k->mini_batches > 0 ? k->mini_batches : 1;
    if (!user.mb && !user.gb && k->train_tokens_per_gpu > 0)
        p->mb = packed_mb(k->train_tokens_per_gpu * cp, p->seq, (Neq + steps - 1) / steps, dp);
    int64_t mb = p->mb ? p->mb : 1, unit = (dp > 0 ? dp : 1) * mb;
    if (user.gb)
        steps = (N + user.gb - 1) / user.gb;
    else
        p->gb = ((Neq + steps - 1) / steps + unit - 1) / unit * unit;
    if (mp_plan_resolve(p, m, k->train_gpus, d) != MP_OK)
        return MP_ERR_INPUT;
    mp_estimate *e = malloc(sizeof *e);
    if (!e)
        return MP_ERR_NOMEM;
    mp_estimate_opts eo;
    mp_estimate_opts_init(&eo);
    eo.skip_per_stage = 1;
    mp_status st = mp_estimate_plan(m, &pool, p, &eo, e, d);
    if (st == MP_OK) {
        const mp_step_parts *q = &e->parts;
        double F = q->layer_fwd_s + q->moe_layer_fwd_s, B = q->layer_bwd_s + q->moe_layer_bwd_s;
        double R = q->layer_recompute_s + q->moe_layer_recompute_s;
        double share = F + B + R > 0 ? F / (F + B + R) : 1.0 / 3.0;
        double per_batch = (double)Neq / (double)p->gb; /* optimizer steps covering the batch */
        ts->mini = (int64_t)ceil(per_batch);
        /* every optimizer step waits for the rank with the longest share of its mini-batch
         * (src/rl/balance.c eq. 1; verl dp_actor update_policy): the compute and its exposed
         * communication scale, the optimizer does not. Ranks: the dp replicas (tp, pp, cp
         * ranks of one replica hold the same sequences). */
        int64_t ranks = p->dp > 0 ? p->dp : dp;
        ts->imbalance = mp_rl_dp_imbalance(&k->response, k->prompt_tokens,
                                           (double)p->gb * eq / (double)(ranks > 0 ? ranks : 1), ranks,
                                           e->attention_frac);
        ts->update_s = (double)k->ppo_epochs * per_batch *
                       (e->time.optimizer + ts->imbalance * (e->step_s - e->time.optimizer));
        ts->fwd_pass_s = per_batch * share * (e->step_s - e->time.optimizer);
        ts->mfu = e->mfu;
        ts->feasible = e->feasible;
        if (!e->feasible)
            snprintf(ts->reason, sizeof ts->reason, "training plan over memory: %.200s", e->nreasons ? e->reasons[0] : "");
        ts->mem_total = e->memory.total;
        ts->mem_state = e->memory.weights + e->memory.gradients + e->memory.optimizer;
        ts->capacity = e->memory.capacity;
        mp_power pw;
        mp_diag dd = {0};
        ts->power_W = mp_energy_step(&pool, p, e, &eo, NULL, &pw, &dd) == MP_OK ? pw.gpu_avg_W : c->gpu.tdp_W;
        char buf[200];
        mp_plan_format(p, buf, sizeof buf);
        assume(r, "training plan %s on %lld GPUs (forward-only passes = %.2f of a step's compute; "
               "update x %.3f for the rank with the longest share)", buf, (long long)k->train_gpus, share,
               ts->imbalance);
        if (eq > 1.0)
            assume(r, "trainer passes at the attention-equivalent length E[s^2]/E[s] = %.0f tokens (%.2f x the "
                   "mean %.0f), %lld sequences of it carrying the step's tokens", tok * eq, eq, tok, (long long)Neq);
    }
    free(e);
    return st;
}

static int has_ref(int a) { return a != MP_RL_DAPO; }

/* The fully_async pipeline's bubble (verl recipe/fully_async_policy README at 19997f9e,
 * "Supported Modes"). The trainer takes the step's samples in n chunks of require_batches x
 * ppo_mini_batch_size prompts (n = trigger_parameter_sync_step) and updates on each as it
 * arrives. With staleness 0 (mode b, "stream off policy pipeline") the README names two idle
 * periods: the trainer waits for the first chunk, the rollouter for the last update; with the
 * chunks finishing at an even rate the step is max(R + T/n, R/n + T) = max(R, T) + min(R, T)/n.
 * With staleness s > 0 (modes c, d) the rollouter may produce up to (1 + s) x the step's samples
 * between two syncs: the s x batch it produced ahead are queued when the next step starts, so the
 * trainer waits only for the part of its first chunk not yet there, (1/n - s)+ of a step's
 * rollout, and the rollouter keeps generating during the last update. s >= 1/n hides both. */
static double stream_bubble(double R, double T, int64_t chunks, double staleness)
{
    double n = (double)(chunks > 0 ? chunks : 1);
    return fmax(0.0, 1.0 / n - fmin(1.0, staleness)) * fmin(R, T);
}

/* The placement rule (file comment) and the idle time of each pool. */
static void compose(const mp_rl_config *k, mp_rl_result *r, int64_t mini)
{
    const double R = r->rollout_s, S = r->weight_sync_s;
    const double T = r->logprob_s + r->ref_s + r->reward_s + r->critic_s + r->train_s;
    switch (k->placement) {
    case MP_RL_COLOCATED:
        r->step_s = R + r->switch_s + T + S;
        r->rollout_pool_idle_s = r->train_pool_idle_s = 0.0;
        break;
    case MP_RL_DISAGGREGATED:
        r->step_s = R + T + S;
        break;
    case MP_RL_ASYNC_ONE_STEP:
        r->step_s = fmax(R, T) + S;
        break;
    default: /* chunks: trigger_parameter_sync_step when given, else one per mini-batch */
        r->step_s = fmax(R, T) + stream_bubble(R, T, k->sync_chunks > 0 ? k->sync_chunks : mini, k->staleness) + S;
        break;
    }
    if (k->placement != MP_RL_COLOCATED) {
        r->rollout_pool_idle_s = r->step_s - R;
        r->train_pool_idle_s = r->step_s - T;
    }
    /* busy shares: the rollout pool generates R x busy_frac of its time (the tail under-uses it) */
    double rbusy = R * r->rollout.busy_frac;
    if (k->placement == MP_RL_COLOCATED) {
        r->gpu_util_rollout_frac = r->gpu_util_train_frac = r->step_s > 0 ? (rbusy + T) / r->step_s : 0;
        r->rollout_pool_idle_frac = r->train_pool_idle_frac = 1.0 - r->gpu_util_rollout_frac;
    } else {
        r->gpu_util_rollout_frac = r->step_s > 0 ? rbusy / r->step_s : 0;
        r->gpu_util_train_frac = r->step_s > 0 ? T / r->step_s : 0;
        r->rollout_pool_idle_frac = 1.0 - r->gpu_util_rollout_frac;
        r->train_pool_idle_frac = 1.0 - r->gpu_util_train_frac;
    }
    const double parts[4] = {R, T, S, r->switch_s};
    static const char *const names[4] = {"rollout", "training passes and update", "weight sync", "colocated switch"};
    int b = 0;
    for (int i = 1; i < 4; i++)
        if (parts[i] > parts[b])
            b = i;
    snprintf(r->bottleneck, sizeof r->bottleneck, "%s (%.0f%% of the step)%s", names[b],
             r->step_s > 0 ? 100.0 * parts[b] / r->step_s : 0.0,
             b == 0 && r->rollout_tail_wait_s > 0.2 * R ? ", long-tail bound" : "");
}

mp_status mp_rl_estimate(const mp_model *m, const mp_cluster *c, const mp_rl_config *cfg,
                         mp_rl_result *r, mp_diag *d)
{
    memset(r, 0, sizeof *r);
    r->config = *cfg;
    mp_rl_config *k = &r->config;
    if (resolve_pools(c, k, d))
        return MP_ERR_INPUT;
    if (k->partial_rollout < 0)
        k->partial_rollout = k->placement == MP_RL_FULLY_ASYNC;
    if (k->offload < 0)
        k->offload = 1;
    mp_status st = mp_rl_rollout_estimate(m, c, k->rollout_gpus, k, &r->rollout, d);
    if (st != MP_OK)
        return st;
    train_side ts;
    if ((st = train_estimate(m, c, k, r->rollout.mean_response_tokens, &ts, r, d)) != MP_OK)
        return st;
    if ((st = mp_rl_sync_estimate(m, c, k, &ts.plan, &r->sync, d)) != MP_OK)
        return st;
    const int64_t N = k->prompts * k->responses;
    r->rollout_s = r->rollout.total_s;
    r->rollout_tail_wait_s = r->rollout.tail_wait_s;
    /* old-policy log-probs: the trainer's forward pass, except fully_async where the rollout
     * engine returns them with the tokens (verl use_rollout_log_probs) */
    r->logprob_s = k->placement == MP_RL_FULLY_ASYNC ? 0.0 : ts.fwd_pass_s;
    r->ref_s = has_ref(k->algorithm) ? ts.fwd_pass_s : 0.0;
    r->critic_s = k->algorithm == MP_RL_PPO ? ts.fwd_pass_s + ts.update_s : 0.0;
    r->reward_s = (double)N * k->reward_s_per_response / (double)k->train_gpus;
    r->train_s = ts.update_s;
    r->weight_sync_s = r->sync.total_s;
    r->train_mfu = ts.mfu;
    r->train_dp_imbalance = ts.imbalance;
    r->train_state_bytes = ts.mem_state;
    r->feasible = ts.feasible;
    snprintf(r->reason, sizeof r->reason, "%s", ts.reason);
    if (k->placement == MP_RL_COLOCATED) {
        if (k->offload) {
            /* sleep/wake each step: the engine's weights out and back, the trainer's state out and
             * back, at host_Bps (verl sleep mode level 1 discards the KV cache) */
            r->switch_s = 2.0 * (r->sync.bytes_per_rollout_gpu + ts.mem_state) / k->host_Bps;
        } else if (ts.mem_total + r->sync.bytes_per_rollout_gpu > ts.capacity) {
            r->feasible = 0;
            snprintf(r->reason, sizeof r->reason, "colocated without offload: the trainer's %.1f GiB and "
                     "the engine's %.1f GiB of weights exceed %.1f GiB", ts.mem_total / 1073741824.0,
                     r->sync.bytes_per_rollout_gpu / 1073741824.0, ts.capacity / 1073741824.0);
        }
    }
    compose(k, r, ts.mini);
    r->tokens_per_step = (double)N * (k->prompt_tokens + r->rollout.mean_response_tokens);
    r->tokens_per_s = r->step_s > 0 ? r->tokens_per_step / r->step_s : 0;
    r->tokens_per_s_per_gpu = r->tokens_per_s / (double)c->num_gpus;
    r->usd_per_step = (double)c->num_gpus * r->step_s / 3600.0 * k->price_gpu_hour_usd;
    double idle_W, wait_W;
    mp_energy_gpu_points(&c->gpu, &idle_W, &wait_W);
    /* energy: each pool's GPUs at their phase's power while busy, at active idle otherwise */
    const double T = r->logprob_s + r->ref_s + r->reward_s + r->critic_s + r->train_s;
    const double rollout_W = c->gpu.tdp_W > 0 ? fmin(c->gpu.tdp_W, 0.5 * (wait_W + c->gpu.tdp_W)) : 0;
    if (k->placement == MP_RL_COLOCATED)
        r->j_per_step = (double)c->num_gpus * (r->rollout_s * rollout_W + T * ts.power_W +
                                               (r->step_s - r->rollout_s - T) * wait_W);
    else
        r->j_per_step = (double)k->rollout_gpus * (r->rollout_s * rollout_W + r->rollout_pool_idle_s * wait_W) +
                        (double)k->train_gpus * (T * ts.power_W + r->train_pool_idle_s * wait_W);
    assume(r, "responses %s mean %.0f, max %.0f%s: %.1f%% cut at max, longest %.0f tokens",
           mp_rl_len_dist_name((mp_rl_len_dist)k->response.dist), k->response.mean_tokens, k->response.max_tokens,
           k->response.dist == MP_RL_LEN_LOGNORMAL ? " (lognormal)" : "", 100 * r->rollout.truncated_frac,
           r->rollout.longest_tokens);
    assume(r, "rollout engine %s tp %d, %lld in flight per engine; prompts prefilled once per group (prefix caching)",
           mp_engine_name((mp_engine_id)k->rollout.engine), k->rollout.tp, (long long)r->rollout.max_in_flight);
    assume(r, "rollout power: midway between active idle and TDP (decode is HBM-bound; ASSUMED)");
    if (k->placement == MP_RL_FULLY_ASYNC) {
        assume(r, "fully_async: old log-probs from the rollout engine (no trainer pass)");
        assume(r, "fully_async: trainer takes %lld chunks per sync%s at staleness %.2f: bubble (1/n - staleness)+ x "
               "min(rollout, train)", (long long)(k->sync_chunks > 0 ? k->sync_chunks : ts.mini),
               k->sync_chunks > 0 ? "" : " (one per mini-batch)", k->staleness);
    }
    if (k->algorithm == MP_RL_PPO)
        assume(r, "PPO critic the size of the actor (its forward and update on the train pool)");
    assume(r, "reward rule-based, %.1f ms of CPU per response, one worker per train GPU", 1e3 * k->reward_s_per_response);
    return MP_OK;
}
