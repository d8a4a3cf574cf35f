/* src/rl/rl_search.c — rl-search: every placement and split of the job's GPUs, best first, and
 * what dynamic reallocation of GPUs between the pools during a step would gain over the best
 * static split (DynaResize-style: GPUs whose work in one pool is done move to the other and come
 * back for the next step).
 *
 * Splits: whole nodes (or every GPU when the job is one node); rollout tp in {1, 2, 4, 8} within
 * a node and dividing the pool. 64 GPUs of 8-GPU nodes: 1 colocated + 7 splits x 3 placements,
 * x 4 tps = 88 estimates (~1 ms each).
 *
 * Dynamic reallocation (docs/rl.md "Reallocation"): with the pool-time of a step fixed by the
 * work, the best any reallocation can do is spread the busy GPU-seconds of both pools over all
 * GPUs; each moved GPU pays a round trip of its state (the engine's weights out, the trainer's
 * shard in, and back) at host_Bps; and no reallocation shortens the straggler's own sequence,
 * whose decode runs on one engine whatever the pool size:
 *   step_dyn = max(rollout_all, (g_R R busy + g_T T) / G + realloc) + sync
 * with rollout_all the rollout on every GPU of the job (the fastest any reallocation can make it)
 * taken only when below the static step. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshplan/rl.h"
#include "rl/rl_internal.h"

static int add(const mp_model *m, const mp_cluster *c, const mp_rl_config *base, int placement,
               int64_t rg, int tp, mp_rl_search_result *o, mp_rl_result *r)
{
    if (o->ncand >= MP_RL_SEARCH_MAX)
        return 0;
    mp_rl_config k = *base;
    k.placement = placement;
    k.rollout_gpus = placement == MP_RL_COLOCATED ? 0 : rg;
    k.train_gpus = placement == MP_RL_COLOCATED ? 0 : c->num_gpus - rg;
    k.rollout.tp = tp;
    k.partial_rollout = base->partial_rollout;
    mp_diag d = {0};
    o->evaluated++;
    if (mp_rl_estimate(m, c, &k, r, &d) != MP_OK)
        return 0;
    mp_rl_candidate *x = &o->cand[o->ncand++];
    x->placement = placement;
    x->rollout_gpus = r->config.rollout_gpus;
    x->train_gpus = r->config.train_gpus;
    x->rollout_tp = tp;
    x->step_s = r->step_s;
    x->rollout_s = r->rollout_s;
    x->train_side_s = r->logprob_s + r->ref_s + r->reward_s + r->critic_s + r->train_s + r->weight_sync_s;
    x->rollout_pool_idle_frac = r->rollout_pool_idle_frac;
    x->train_pool_idle_frac = r->train_pool_idle_frac;
    x->feasible = r->feasible;
    return 1;
}

static int cmp_cand(const void *a, const void *b)
{
    const mp_rl_candidate *x = a, *y = b;
    if (x->feasible != y->feasible)
        return y->feasible - x->feasible;
    return (x->step_s > y->step_s) - (x->step_s < y->step_s);
}

/* The reallocation bound for the best static split (file comment). */
static void dynamic(const mp_model *m, const mp_cluster *c, const mp_rl_config *base,
                    mp_rl_search_result *o, mp_rl_result *r)
{
    const mp_rl_candidate *s = &o->cand[o->best_static];
    mp_rl_config k = *base;
    k.placement = s->placement;
    k.rollout_gpus = s->rollout_gpus;
    k.train_gpus = s->train_gpus;
    k.rollout.tp = s->rollout_tp;
    mp_diag d = {0};
    if (mp_rl_estimate(m, c, &k, r, &d) != MP_OK)
        return;
    const double G = (double)c->num_gpus, gR = (double)k.rollout_gpus, gT = (double)k.train_gpus;
    const double R = r->rollout_s, T = s->train_side_s - r->weight_sync_s;
    const double busy = gR * R * r->rollout.busy_frac + gT * T;
    o->realloc_cost_s = 2.0 * (r->sync.bytes_per_rollout_gpu + r->train_state_bytes) / k.host_Bps;
    o->movable_gpu_s = r->rollout_pool_idle_s * gR + r->train_pool_idle_s * gT;
    /* no reallocation makes the rollout faster than every GPU of the job generating: the same
     * responses over G / tp engines (the straggler then holds fewer sequences beside the longest) */
    double straggler = R;
    mp_rl_rollout all;
    if (mp_rl_rollout_estimate(m, c, c->num_gpus, &k, &all, &d) == MP_OK && all.total_s < straggler)
        straggler = all.total_s;
    double dyn = fmax(straggler, busy / G + o->realloc_cost_s) + r->weight_sync_s;
    if (dyn > s->step_s)
        dyn = s->step_s;
    o->dynamic_step_s = dyn;
    o->dynamic_gain_frac = s->step_s > 0 ? 1.0 - dyn / s->step_s : 0.0;
    if (o->dynamic_gain_frac <= 1e-3)
        snprintf(o->why, sizeof o->why, "no gain: the rollout's straggler (%.1f s even with all %d GPUs generating; "
                 "the longest response is %.0f tokens) bounds the step and extra GPUs cannot shorten one "
                 "sequence; the idle %.0f GPU-s are tail or wait time that no move can fill",
                 straggler, (int)G, r->rollout.longest_tokens, o->movable_gpu_s);
    else
        snprintf(o->why, sizeof o->why, "the static split leaves %.0f GPU-s per step waiting (mostly the %s "
                 "pool) and %.0f GPU-s of the rollout pool unused in the long tail; moving GPUs when their "
                 "pool drains spreads the busy %.0f GPU-s over all %d GPUs, at %.1f s per move (weights "
                 "out, trainer shard in, and back)", o->movable_gpu_s,
                 r->rollout_pool_idle_s * gR > r->train_pool_idle_s * gT ? "rollout" : "train",
                 gR * R * (1.0 - r->rollout.busy_frac), busy, (int)G, o->realloc_cost_s);
}

mp_status mp_rl_search(const mp_model *m, const mp_cluster *c, const mp_rl_config *cfg,
                       mp_rl_search_result *o, mp_diag *diag)
{
    memset(o, 0, sizeof *o);
    o->best = o->best_static = -1;
    mp_rl_result *r = malloc(sizeof *r);
    if (!r)
        return MP_ERR_NOMEM;
    const int64_t n = c->num_gpus;
    const int64_t unit = n > c->gpus_per_node ? c->gpus_per_node : 1;
    static const int tps[4] = {1, 2, 4, 8};
    for (int ti = 0; ti < 4; ti++) {
        int tp = tps[ti];
        if (tp > c->gpus_per_node)
            continue;
        if (n % tp == 0)
            add(m, c, cfg, MP_RL_COLOCATED, n, tp, o, r);
        for (int64_t rg = unit; rg < n; rg += unit) {
            if (rg % tp)
                continue;
            for (int pl = MP_RL_DISAGGREGATED; pl <= MP_RL_FULLY_ASYNC; pl++)
                add(m, c, cfg, pl, rg, tp, o, r);
        }
    }
    if (o->ncand == 0) {
        /* say why with the configuration as given */
        mp_rl_estimate(m, c, cfg, r, diag);
        free(r);
        return MP_ERR_INPUT;
    }
    qsort(o->cand, (size_t)o->ncand, sizeof o->cand[0], cmp_cand);
    for (int i = 0; i < o->ncand; i++) {
        if (!o->cand[i].feasible)
            continue;
        if (o->best < 0)
            o->best = i;
        if (o->best_static < 0 && o->cand[i].placement != MP_RL_COLOCATED)
            o->best_static = i;
    }
    if (o->best_static >= 0)
        dynamic(m, c, cfg, o, r);
    free(r);
    return MP_OK;
}
