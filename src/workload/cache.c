/* src/workload/cache.c — the evaluation cache (workload.h mp_wl_cache): validity against the
 * model and cluster it was filled for, and the model's values that depend on a few plan keys.
 * The collectives' slots are looked up in comm.c. */
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "workload_internal.h"

void mp_wl_cache_init(mp_wl_cache *cache)
{
    cache->have = 0;
    cache->trust_addresses = 0;
    cache->model_at = NULL;
    cache->cluster_at = NULL;
    cache->hits = cache->misses = 0;
    cache->params_tp = 0;
    cache->flops_seq = 0;
    for (int i = 0; i < MP_WL_MEMO; i++)
        cache->act[i].set = cache->kern[i].set = 0;
    cache->groups_set = 0;
    cache->shape_set = 0;
    cache->shape_gen = 0; /* no shape (mp_wl_shape_gen_next's are never 0) */
    cache->dp_in_shape = -1;
    for (int i = 0; i < 4; i++)
        cache->stages[i].set = cache->dp[i].set = 0;
    for (int i = 0; i < MP_WL_CACHE_SLOTS; i++)
        cache->slot[i].used = 0;
}

/* The model's numbers (not its key, name or source), byte for byte. */
static int same_model(const mp_model *a, const mp_model *b)
{
    const size_t n0 = offsetof(mp_model, layers), n1 = offsetof(mp_model, source);
    const size_t n2 = offsetof(mp_model, q_lora_rank);
    return memcmp((const char *)a + n0, (const char *)b + n0, n1 - n0) == 0 &&
           memcmp((const char *)a + n2, (const char *)b + n2, sizeof *a - n2) == 0;
}

/* What the entries are computed from: the GPU count and the tiers (collectives, coll.c) and
 * the GPU (the shape's kernel rates, kernels.c; the estimator's memo reads its key), byte for
 * byte. Two clusters of one fabric whose GPUs differ (H100 and H200 on NVLink 4 and the same
 * scale-out) were once served each other's shapes (tests/test_estimate_fast.c). */
static int same_cluster(const mp_cluster *a, const mp_cluster *b)
{
    return a->num_gpus == b->num_gpus && memcmp(&a->gpu, &b->gpu, sizeof a->gpu) == 0 &&
           a->ntiers == b->ntiers && a->ntiers >= 0 &&
           a->ntiers <= MP_MAX_TIERS && memcmp(a->tier, b->tier, (size_t)a->ntiers * sizeof a->tier[0]) == 0;
}

uint64_t mp_wl_shape_gen_next(void)
{
    /* One counter for every cache of the process, so a generation names one shape even across
     * caches (a cache freed and another allocated at its address). */
    static _Atomic uint64_t next = 0;
    return atomic_fetch_add_explicit(&next, 1, memory_order_relaxed) + 1;
}

int mp_wl_memo_slot(int64_t a, int64_t b, int64_t c, int64_t d)
{
    /* multiplicative hashing (odd constants: splitmix64's), the top bits */
    uint64_t h = (uint64_t)a * 0x9e3779b97f4a7c15ULL ^ (uint64_t)b * 0xbf58476d1ce4e5b9ULL ^
                 (uint64_t)c * 0x94d049bb133111ebULL ^ (uint64_t)d * 0xd6e8feb86659fd93ULL;
    return (int)((h ^ (h >> 29)) * 0x9e3779b97f4a7c15ULL >> (64 - 8));
}

void mp_wl_cache_validate(mp_wl_cache *cache, const mp_model *m, const mp_cluster *c)
{
    /* The caller vouches for the bytes at the addresses it checked last (trust_addresses). */
    if (cache->have && cache->trust_addresses && m == cache->model_at && c == cache->cluster_at)
        return;
    const int trust = cache->trust_addresses;
    if (!(cache->have && same_model(&cache->model, m) && same_cluster(&cache->cluster, c))) {
        mp_wl_cache_init(cache);
        cache->trust_addresses = trust;
        cache->model = *m;
        cache->cluster = *c;
        mp_model_attn_dims(m, &cache->attn);
        cache->have = 1;
    }
    cache->model_at = m;
    cache->cluster_at = c;
}

/* The model's values for this plan: parameter counts (tp), attention geometry and FLOPs per
 * token (seq); mp_wl_model_act: the activation bytes of one dense and one MoE layer (seq, mb,
 * tp, sp, cp, flash, recompute, etp, load). From the cache when its keys match. */
void mp_wl_model_values(mp_workload *w, const mp_model *m, const mp_plan *p, mp_wl_cache *cache)
{
    if (cache && cache->params_tp == w->tp) {
        w->params = cache->params;
    } else {
        mp_model_params(m, w->tp, &w->params);
        if (cache) {
            cache->params = w->params;
            cache->params_tp = w->tp;
        }
    }
    if (cache)
        w->attn = cache->attn;
    else
        mp_model_attn_dims(m, &w->attn);
    if (cache && cache->flops_seq == p->seq) {
        w->flops = cache->flops;
    } else {
        mp_model_flops(m, p->seq, &w->flops);
        if (cache) {
            cache->flops = w->flops;
            cache->flops_seq = p->seq;
        }
    }
}

void mp_wl_model_act(mp_workload *w, const mp_model *m, const mp_plan *p, mp_wl_cache *cache)
{
    const int sp_moe = p->sp || w->tp > 1;
    const double every = p->recompute_every > 1 && p->recompute != MP_RC_NONE ? (double)p->recompute_every : 1.0;
    const double key[11] = {(double)p->seq, (double)p->mb, w->tp, p->sp, w->cp, p->flash,
                            (double)p->recompute, w->etp, w->moe_load, every, (double)p->compile};
    const int slot = mp_wl_memo_slot(p->mb, p->recompute * 2 + p->sp, w->tp * 4096 + w->etp, w->cp);
    if (cache && cache->act[slot].set && mp_wl_bytes_eq(cache->act[slot].key, key, sizeof key)) {
        w->act = cache->act[slot].act;
        w->act_moe = cache->act[slot].act_moe;
        return;
    }
    mp_layer_activation_compiled(m, p->seq, p->mb, w->tp, p->sp, w->cp, 1, p->flash, p->recompute, 0,
                                 1.0, p->compile, &w->act);
    mp_layer_activation_compiled(m, p->seq, p->mb, w->tp, sp_moe, w->cp, w->etp, p->flash, p->recompute,
                                 1, w->moe_load, p->compile, &w->act_moe);
    if (every > 1.0) {
        /* recompute_every = n: one layer in n checkpointed, the others store everything; a
         * stage's stored bytes are n_layers x the mean of the two (the remainder of a stage's
         * layer count by n is below one layer's difference and not counted apart). */
        mp_layer_act none, none_moe;
        mp_layer_activation_compiled(m, p->seq, p->mb, w->tp, p->sp, w->cp, 1, p->flash, MP_RC_NONE, 0,
                                     1.0, p->compile, &none);
        mp_layer_activation_compiled(m, p->seq, p->mb, w->tp, sp_moe, w->cp, w->etp, p->flash,
                                     MP_RC_NONE, 1, w->moe_load, p->compile, &none_moe);
        w->act.stored_bytes = (w->act.stored_bytes + (every - 1.0) * none.stored_bytes) / every;
        w->act_moe.stored_bytes = (w->act_moe.stored_bytes + (every - 1.0) * none_moe.stored_bytes) / every;
        w->act.attention_s2_bytes = (w->act.attention_s2_bytes + (every - 1.0) * none.attention_s2_bytes) / every;
        w->act_moe.attention_s2_bytes =
            (w->act_moe.attention_s2_bytes + (every - 1.0) * none_moe.attention_s2_bytes) / every;
    }
    if (cache) {
        memcpy(cache->act[slot].key, key, sizeof key);
        cache->act[slot].act = w->act;
        cache->act[slot].act_moe = w->act_moe;
        cache->act[slot].set = 1;
    }
}
