/* src/rl/sync.c — weight sync from the trainer to the rollout engines after an update, and the
 * pools cut from the job's cluster.
 *
 * The sync has three parts (docs/rl.md "Weight sync"):
 *   gather:   the training layout (ZeRO-3/FSDP shards, TP/PP/EP slices) -> full tensors on the
 *             senders, tensor by tensor: one all-gather per tensor over the trainer's shard
 *             group (the collective model, coll.h, latency included), skipped when the training
 *             layout is already the rollout's (no sharding beyond a TP equal to the rollout's);
 *   transfer: colocated, a copy into the engine's buffers in place (HBM read + write); split
 *             pools, an NCCL broadcast per bucket (or per tensor) from the trainer to every
 *             rollout replica, each rollout GPU receiving its TP shard, over the tiers the job
 *             spans; cpu, a device -> host copy then host -> device (host_Bps each way);
 *   host:     one Python-level call per collective (and the engine's load_weights per call):
 *             per_tensor_host_s each — per tensor when not bucketed, per bucket when bucketed —
 *             and, when the layouts differ, per_tensor_host_s per gathered tensor (each is
 *             renamed and cast to the engine's layout in Python: the "parameter generation")
 *             (verl checkpoint-engine; the README of verl recipe/fully_async_policy reports
 *             >60% less sync time with it).
 * Tensors per layer: q, k, v, o, two norms and the FFN's 3 (GLU) or 2 matrices; an MoE layer
 * has each expert's matrices, a router and the shared experts' (HF checkpoints store experts
 * one tensor each, as vLLM's load_weights receives them). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "meshplan/coll.h"
#include "meshplan/rl.h"
#include "rl/rl_internal.h"

void mp_rl_pool(const mp_cluster *c, int64_t gpus, mp_cluster *out)
{
    *out = *c;
    out->num_gpus = gpus;
    if (gpus < c->gpus_per_node) {
        out->gpus_per_node = (int)gpus;
        out->tier[0].domain_gpus = gpus;
    }
    for (int t = 1; t < out->ntiers; t++)
        if (out->tier[t].domain_gpus < out->tier[t - 1].domain_gpus)
            out->tier[t].domain_gpus = out->tier[t - 1].domain_gpus;
}

static int64_t tensor_count(const mp_model *m)
{
    const int64_t ffn_dense = m->glu ? 3 : 2;
    int64_t moe_layers = 0;
    if (m->moe_experts > 0) {
        mp_param_count pc;
        mp_model_params(m, 1, &pc);
        moe_layers = pc.moe_layers;
    }
    const int64_t per_attn = 4 + 2; /* q, k, v, o + input and post-attention norms */
    const int64_t per_moe = m->moe_experts * ffn_dense + 1 + (m->moe_shared_experts > 0 ? ffn_dense : 0);
    int64_t n = m->layers * per_attn + (m->layers - moe_layers) * ffn_dense + moe_layers * per_moe;
    return n + 2 + (m->tied_embeddings ? 0 : 1); /* embedding, final norm, LM head */
}

mp_status mp_rl_sync_estimate(const mp_model *m, const mp_cluster *c, const mp_rl_config *cfg,
                              const mp_plan *train, mp_rl_sync_result *o, mp_diag *d)
{
    memset(o, 0, sizeof *o);
    mp_param_count pc;
    mp_model_params(m, 1, &pc);
    const double wb = mp_infer_weights_bytes((mp_infer_weights)cfg->rollout.weights);
    const int64_t rtp = (int64_t)cfg->rollout.tp * cfg->rollout.pp;
    o->bytes = (double)(pc.total - pc.mtp) * wb;
    o->bytes_per_rollout_gpu = o->bytes / (double)rtp;
    o->tensors = tensor_count(m);
    o->bucketed = cfg->sync == MP_RL_SYNC_BUCKETED;
    o->buckets = o->bucketed ? (int64_t)ceil(o->bytes / cfg->bucket_bytes) : o->tensors;
    if (o->buckets < 1)
        o->buckets = 1;
    const int colocated = cfg->placement == MP_RL_COLOCATED;
    mp_cluster tpool;
    mp_rl_pool(c, cfg->train_gpus, &tpool);
    mp_coll_cost cc;

    /* gather: the group a tensor is spread over in the training layout: the ZeRO-3/HSDP shards
     * over dp, the TP slices when the rollout's TP differs, the experts over EP (vLLM shards
     * experts over its TP). Pipeline stages hold different layers and send them in parallel;
     * CP ranks hold copies: neither gathers. */
    int64_t shard = (train->zero == 3 ? (train->hsdp > 0 ? train->hsdp : train->dp) : 1) *
                    (train->tp != rtp ? train->tp : 1) * (train->ep > 1 ? train->ep : 1);
    if (shard > cfg->train_gpus)
        shard = cfg->train_gpus;
    int same_layout = shard == 1;
    if (!same_layout) {
        /* tensor by tensor: FSDP2's full_tensor() per parameter, Megatron's export per weight
         * (verl's sync loops over the state dict), so each tensor is its own all-gather over the
         * shard group, latency included (the "parameter generation" verl's README names as the
         * sync's dominant cost) */
        double per = o->bytes / (double)o->tensors;
        if (mp_coll_time(&tpool, MP_COLL_ALL_GATHER, per, (mp_group){shard, 1}, MP_ALGO_AUTO, &cc) != MP_OK) {
            mp_diag_add(d, "rl: weight sync: the trainer's all-gather over %lld GPUs cannot be priced",
                        (long long)shard);
            return MP_ERR_INPUT;
        }
        o->gather_s = (double)o->tensors * cc.total_s;
        /* and each gathered tensor is renamed and cast to the engine's layout in Python before
         * it is sent (Megatron's export, FSDP2's state-dict loop): host work per tensor */
        o->host_s += (double)o->tensors * cfg->per_tensor_host_s;
    }

    if (cfg->sync == MP_RL_SYNC_CPU) {
        /* staged through host memory: D2H on the trainer, H2D on every rollout GPU (in parallel) */
        o->transfer_s = (o->bytes / (double)(shard > 0 ? shard : 1) + o->bytes_per_rollout_gpu) / cfg->host_Bps;
        snprintf(o->link, sizeof o->link, "host memory (%.0f GB/s)", cfg->host_Bps / 1e9);
    } else if (colocated) {
        /* in place: the engine reads the gathered tensors and writes its own copy (2 x bytes of
         * HBM traffic per GPU) */
        double bw = c->gpu.measured_mem_bw_Bps > 0 ? c->gpu.measured_mem_bw_Bps : c->gpu.mem_bw_Bps;
        o->transfer_s = 2.0 * o->bytes_per_rollout_gpu / bw;
        snprintf(o->link, sizeof o->link, "HBM (in place)");
    } else {
        /* broadcast from one trainer rank per TP shard to every rollout replica: a group of
         * replicas + 1 ranks, rtp apart (the TP shards go in parallel on different GPUs) */
        int64_t replicas = cfg->rollout_gpus / rtp;
        mp_group g = {replicas + 1, rtp};
        if (g.size * g.stride > c->num_gpus)
            g.stride = 1;
        double per_call = o->bytes_per_rollout_gpu / (double)o->buckets;
        if (mp_coll_time(c, MP_COLL_BROADCAST, per_call, g, MP_ALGO_AUTO, &cc) != MP_OK) {
            mp_diag_add(d, "rl: weight sync: the broadcast to %lld rollout replicas cannot be priced",
                        (long long)replicas);
            return MP_ERR_INPUT;
        }
        o->transfer_s = (double)o->buckets * cc.total_s;
        int tier = cc.bottleneck_tier >= 0 ? cc.bottleneck_tier : 0;
        snprintf(o->link, sizeof o->link, "%s", c->tier[tier].link);
    }
    o->host_s += (double)o->buckets * cfg->per_tensor_host_s;
    o->total_s = o->gather_s + o->transfer_s + o->host_s;
    return MP_OK;
}
