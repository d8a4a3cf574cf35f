/* src/workload/workload.c — build the workload description: the shape of one phase (groups as
 * the plan's rank order places them, tokens, micro-batches, shard groups), then its pricing by
 * the files beside this one (stages.c, comm.c, layers.c). One direction: model, cluster, plan
 * -> workload -> estimators and the simulator.
 *
 * Rank order (Megatron-Core parallel_state.initialize_model_parallel, order "tp-cp-ep-dp-pp"):
 * TP stride 1, CP stride tp, DP stride tp*cp, PP stride tp*cp*dp; for the experts the tp*cp*dp
 * ranks of a stage are re-partitioned as expert-TP (stride 1) x EP (stride etp) x expert-DP
 * (stride etp*ep). */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "kernels.h"
#include "workload_internal.h"

const char *mp_layer_kind_name(mp_layer_kind k)
{
    static const char *const names[MP_LK_COUNT] = {
#define MP_WL_X(e, n) n,
        MP_LAYER_KINDS(MP_WL_X)
#undef MP_WL_X
    };
    return (unsigned)k < MP_LK_COUNT ? names[k] : "?";
}

const char *mp_wl_coll_name(mp_wl_coll_id id)
{
    static const char *const names[MP_WC_COUNT] = {
#define MP_WL_X(e, what, freq) what,
        MP_WL_COLLS(MP_WL_X)
#undef MP_WL_X
    };
    return (unsigned)id < MP_WC_COUNT ? names[id] : "?";
}

void mp_workload_opts_init(mp_workload_opts *o)
{
    /* The estimator's calibrated defaults (mp_estimate_opts_init, docs/model.md). */
    o->gemm_sustained_frac = 0.85;
    o->attention_sustained_frac = 0.5;
    o->memory_bound_sustained_frac = 0.6;
    o->moe_imbalance = 1.0;
    o->moe_copy_overhead_s = 150e-9;
    o->elementwise_bytes_frac = 1.0;
    o->fp8_scale_bytes_per_elem = 0.0;
    o->zero3_gather_per_tensor = 0;
    o->zero3_gather_host_s = 0.0;
    o->zero3_gather_host_rank_s = 0.0;
    o->zero3_reduce_bytes = 0.0;
}

/* The DP x CP group split into the shard group (hsdp ranks, or all) and the replica group, each
 * as inner and outer runs of the rank order (plan.h mp_plan_group): the shard group is the inner
 * `shard` ranks of the data group, the replicas the rest. */
static void data_groups(const mp_plan *p, int64_t shard, mp_group *sh_in, mp_group *sh_out,
                        mp_group *rp_in, mp_group *rp_out)
{
    mp_group in, out;
    mp_plan_group(p, MP_DIM_BIT(MP_DIM_CP) | MP_DIM_BIT(MP_DIM_EP) | MP_DIM_BIT(MP_DIM_DP), &in,
                  &out);
    const mp_group one = {1, 1};
    if (shard >= in.size * out.size) {
        *sh_in = in, *sh_out = out, *rp_in = one, *rp_out = one;
    } else if (shard <= in.size) {
        *sh_in = (mp_group){shard, in.stride};
        *sh_out = one;
        if (in.size / shard > 1) {
            *rp_in = (mp_group){in.size / shard, in.stride * shard};
            *rp_out = out;
        } else {
            *rp_in = out;
            *rp_out = one;
        }
    } else {
        int64_t k = shard / in.size;
        *sh_in = in;
        *sh_out = (mp_group){k, out.stride};
        *rp_in = (mp_group){out.size / k, out.stride * k};
        *rp_out = one;
    }
}

/* The groups the plan's rank order places: TP, CP, PP strides and the shard and replica groups
 * (from the cache when the degrees, the order and the shard group are the same). */
static void plan_groups(mp_workload *w, const mp_plan *p, int64_t shard, mp_wl_cache *cache)
{
    int64_t key[12] = {p->tp, p->cp, p->ep, p->dp, p->pp, shard, 0, 0, 0, 0, 0, 0};
    for (int i = 0; i < MP_DIM_COUNT && i < 6; i++)
        key[6 + i] = (int64_t)p->order[i];
    mp_group *g[9] = {&w->g_tp, &w->g_cp, &w->g_pp, &w->g_shard_in, &w->g_shard_out, &w->g_rep_in,
                      &w->g_rep_out};
    if (cache && cache->groups_set && mp_wl_bytes_eq(cache->groups_key, key, sizeof key)) {
        for (int i = 0; i < 7; i++)
            *g[i] = cache->groups[i];
        return;
    }
    w->g_tp = (mp_group){w->tp, mp_plan_stride(p, MP_DIM_TP)};
    w->g_cp = (mp_group){w->cp, mp_plan_stride(p, MP_DIM_CP)};
    w->g_pp = (mp_group){2, mp_plan_stride(p, MP_DIM_PP)};
    data_groups(p, shard, &w->g_shard_in, &w->g_shard_out, &w->g_rep_in, &w->g_rep_out);
    if (cache) {
        memcpy(cache->groups_key, key, sizeof key);
        for (int i = 0; i < 7; i++)
            cache->groups[i] = *g[i];
        cache->groups_set = 1;
    }
}

static int resolved(const mp_model *m, const mp_cluster *c, const mp_plan *p, int moe, int64_t etp)
{
    return !(p->tp < 1 || p->pp < 1 || p->dp < 1 || p->cp < 1 || p->vpp < 1 || p->mb < 1 ||
             p->gb < 1 || p->seq < 1 || p->ep < 1 || p->tp * p->pp * p->cp * p->dp != c->num_gpus ||
             (moe && (m->moe_experts % p->ep || (p->tp * p->cp * p->dp) % (etp * p->ep))));
}

/* The shape's values that a plan's micro-batch size or rank order change: the micro-batches
 * and tokens, the activations per layer (mb) and the groups (the order). The rest
 * (shape_base) depends on neither, nor on the CP algorithm (priced in comm.c only). */
static void shape_line(mp_workload *w, const mp_model *m, const mp_plan *p, mp_wl_cache *cache)
{
    w->microbatches = (double)(p->gb / (p->mb * p->dp));
    w->tokens_mb = (double)p->mb * (double)p->seq / w->cp;
    mp_wl_model_act(w, m, p, cache);
    plan_groups(w, p, p->hsdp ? p->hsdp : p->dp * p->cp, cache);
}

static void shape_base(mp_workload *w, const mp_model *m, const mp_cluster *c, const mp_plan *p,
                       mp_wl_phase phase,
                       const mp_workload_opts *opts, mp_wl_cache *cache, int moe, int64_t etp)
{
    memset(w, 0, offsetof(mp_workload, run));
    w->phase = phase;
    w->tp = (int)p->tp, w->pp = (int)p->pp, w->cp = (int)p->cp, w->vpp = (int)p->vpp;
    w->ep = (int)p->ep, w->etp = (int)etp, w->moe = moe, w->fp8 = p->precision == MP_DT_FP8;
    w->vocab_padded = (double)mp_model_padded_vocab(m, w->tp);
    /* MoE load factor of the busiest GPU: with a capacity factor every expert's buffer is
     * padded to capacity (GShard, Lepikhin et al. 2020 Sec. 2.2; Switch, Fedus et al. 2021
     * Sec. 2.2), so the work scales with it; dropless it is the routing imbalance. */
    const double imbalance = p->moe_imbalance >= 1.0 ? p->moe_imbalance
                           : (opts->moe_imbalance >= 1.0 ? opts->moe_imbalance : 1.0);
    const double load = p->moe_capacity_factor > 0 ? p->moe_capacity_factor : imbalance;
    w->moe_load = moe ? load : 1.0;
    mp_wl_model_values(w, m, p, cache);
    /* DP/ZeRO groups. Non-expert parameters: split by TP (norms replicated but small),
     * replicated over the DP x CP group. Routed experts: E/ep experts per GPU, each split by etp,
     * replicated over the expert-DP group of tp*cp*dp/(etp*ep) ranks. */
    const int64_t dpg = p->dp * p->cp;
    const int64_t shard = p->hsdp ? p->hsdp : dpg;
    w->dp_ranks = (double)dpg;
    w->shard = (double)shard;
    w->expert_dp = moe ? (double)(p->tp * p->cp * p->dp) / (double)(etp * p->ep) : 1.0;
    w->expert_shard = moe ? (p->hsdp && p->hsdp < w->expert_dp ? (double)p->hsdp : w->expert_dp) : 1.0;
    w->moe_nonexpert_per_layer = moe ? (double)(w->params.moe_per_layer - m->moe_experts * w->params.expert) : 0.0;
    w->gather_bytes_per_param = p->fp8_comm ? 1.0 : 2.0;
    w->mtp_modules = (double)m->mtp_layers;
    w->mtp_moe = m->mtp_layers > 0 && mp_model_moe_layers_in(m, m->layers - 1, 1) > 0;
    /* Expert groups (the TP, CP, PP and shard groups the rank order places: shape_line). */
    w->g_ep = (mp_group){w->ep, etp};
    w->g_edp = (mp_group){(int64_t)(w->expert_shard > 0 ? w->expert_shard : 1), etp * w->ep};
    mp_kernel_rates_of(&c->gpu, p->precision, p->attn_kernel, opts, &w->rates);
    mp_wl_kind_params(w, m);
    mp_wl_stages(w, m, cache);
    mp_wl_finetune_shape(w, m, p);
}

/* The plan as the shape memo keys it: mb, sp, recompute, the CP algorithm and the rank order
 * cleared. shape_base reads none of them (sp and the recompute mode change only the activations
 * and the pricing, shape_line and mp_workload_price, redone for every plan; nor does the
 * estimator's memo of a shape, memory.c stage_fixed and mp_est_runtime_memory), so the lines of
 * one sharding and expert layout (sp x recompute x mb below it, space.c) share one shape. */
static void line_key(const mp_plan *p, mp_plan *k)
{
    memcpy(k, p, sizeof *k);
    k->mb = 0;
    k->sp = 0;
    k->recompute = (mp_recompute)0;
    k->cp_algo = (mp_cp_algo)0;
    memset(k->order, 0, sizeof k->order);
    k->order_listed = 0;
}

/* The checks every shape passes (a resolved plan, tensor cores of its precision): MP_OK, or
 * MP_ERR_INPUT with diag naming which. */
static mp_status shape_checks(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                              mp_wl_phase phase, int moe, int64_t etp, mp_diag *diag)
{
    if (phase != MP_WL_TRAIN_STEP) { /* prefill and decode are shaped by mp_workload_infer */
        mp_diag_add(diag, "workload phase %d: expected 0 (train step; prefill and decode: "
                          "mp_workload_infer)", (int)phase);
        return MP_ERR_INPUT;
    }
    if (!resolved(m, c, p, moe, etp)) {
        mp_diag_add(diag, "plan is not resolved for %lld GPUs (call mp_plan_resolve)",
                    (long long)c->num_gpus);
        return MP_ERR_INPUT;
    }
    const mp_gpu *g = &c->gpu;
    if (g->peak_flops_per_s[p->precision] <= 0) {
        mp_diag_add(diag, "plan.precision = %s: %s has no %s tensor cores", mp_dtype_name(p->precision),
                    g->key, mp_dtype_name(p->precision));
        return MP_ERR_INPUT;
    }
    return MP_OK;
}

/* Whether p's line key (line_key) is k, byte for byte, without building it: the bytes of p
 * outside the fields line_key clears (sp, mb, recompute, cp_algo, order, order_listed) against
 * k's (a key line_key built: those fields of k are zero, as p's would be). The same verdict as
 * line_key then memcmp, without the 272-byte copy per evaluation. */
static int same_line(const mp_plan *p, const mp_plan *k)
{
    const char *a = (const char *)p, *b = (const char *)k;
    const size_t sp = offsetof(mp_plan, sp), sp_end = sp + sizeof p->sp;
    const size_t mb = offsetof(mp_plan, mb), mb_end = mb + sizeof p->mb;
    const size_t rc = offsetof(mp_plan, recompute), rc_end = rc + sizeof p->recompute;
    const size_t ca = offsetof(mp_plan, cp_algo), ca_end = ca + sizeof p->cp_algo;
    const size_t od = offsetof(mp_plan, order), od_end = offsetof(mp_plan, order_listed) + sizeof p->order_listed;
    _Static_assert(offsetof(mp_plan, sp) < offsetof(mp_plan, mb) &&
                       offsetof(mp_plan, mb) < offsetof(mp_plan, recompute) &&
                       offsetof(mp_plan, recompute) < offsetof(mp_plan, cp_algo) &&
                       offsetof(mp_plan, cp_algo) < offsetof(mp_plan, order) &&
                       offsetof(mp_plan, order) + sizeof ((mp_plan *)0)->order == offsetof(mp_plan, order_listed),
                   "mp_plan's line-key fields in this order, order_listed right after order");
    return mp_wl_bytes_eq(a, b, sp) && mp_wl_bytes_eq(a + sp_end, b + sp_end, mb - sp_end) &&
           mp_wl_bytes_eq(a + mb_end, b + mb_end, rc - mb_end) &&
           mp_wl_bytes_eq(a + rc_end, b + rc_end, ca - rc_end) &&
           mp_wl_bytes_eq(a + ca_end, b + ca_end, od - ca_end) &&
           mp_wl_bytes_eq(a + od_end, b + od_end, sizeof *p - od_end);
}

/* The cache's shape for p's line (built into it when its memo holds another line), its line
 * values not yet filled. */
static void cached_shape(const mp_model *m, const mp_cluster *c, const mp_plan *p, mp_wl_phase phase,
                         const mp_workload_opts *opts, mp_wl_cache *cache, int moe, int64_t etp)
{
    mp_wl_cache_validate(cache, m, c);
    if (cache->shape_set && same_line(p, &cache->shape_key) &&
        mp_wl_bytes_eq(opts, &cache->shape_opts, sizeof *opts))
        return;
    mp_plan k;
    line_key(p, &k);
    shape_base(&cache->shape, m, c, p, phase, opts, cache, moe, etp);
    cache->dp_in_shape = -1; /* shape_base cleared its collectives */
    memcpy(&cache->shape_key, &k, sizeof k); /* padding too: the look-up compares bytes */
    memcpy(&cache->shape_opts, opts, sizeof *opts);
    cache->shape_set = 1;
    cache->shape_gen = mp_wl_shape_gen_next();
}

/* What both shape entry points do first: the MoE flag, the expert TP degree (etp, defaulting to
 * tp for MoE models) and the plan's checks against the model and cluster. */
static mp_status shape_prelude(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                               mp_wl_phase phase, mp_diag *diag, int *moe, int64_t *etp)
{
    *moe = mp_model_is_moe(m);
    *etp = p->etp > 0 ? p->etp : (*moe ? p->tp : 1);
    return shape_checks(m, c, p, phase, *moe, *etp, diag);
}

mp_status mp_workload_shape(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                            mp_wl_phase phase, const mp_workload_opts *opts, mp_wl_cache *cache,
                            mp_workload *w, mp_diag *diag)
{
    mp_workload_opts defaults;
    if (!opts) {
        mp_workload_opts_init(&defaults);
        opts = &defaults;
    }
    int moe;
    int64_t etp;
    mp_status st = shape_prelude(m, c, p, phase, diag, &moe, &etp);
    if (st != MP_OK) {
        memset(w, 0, offsetof(mp_workload, run));
        return st;
    }
    if (!cache) {
        shape_base(w, m, c, p, phase, opts, NULL, moe, etp);
    } else {
        cached_shape(m, c, p, phase, opts, cache, moe, etp);
        const int n = cache->shape.nruns;
        memcpy(w, &cache->shape, offsetof(mp_workload, run) + (size_t)n * sizeof w->run[0]);
    }
    shape_line(w, m, p, cache);
    return MP_OK;
}

mp_status mp_workload_shape_in(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                               mp_wl_phase phase, const mp_workload_opts *opts, mp_wl_cache *cache,
                               mp_workload **out, mp_diag *diag)
{
    mp_workload_opts defaults;
    if (!opts) {
        mp_workload_opts_init(&defaults);
        opts = &defaults;
    }
    int moe;
    int64_t etp;
    *out = &cache->shape;
    mp_status st = shape_prelude(m, c, p, phase, diag, &moe, &etp);
    if (st != MP_OK) {
        memset(&cache->shape, 0, offsetof(mp_workload, run));
        cache->shape_set = 0;
        cache->shape_gen = 0;
        cache->dp_in_shape = -1;
        return st;
    }
    cached_shape(m, c, p, phase, opts, cache, moe, etp);
    shape_line(&cache->shape, m, p, cache);
    return MP_OK;
}

void mp_workload_price(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                       const mp_workload_opts *opts, mp_wl_cache *cache, mp_workload *w)
{
    mp_workload_opts defaults;
    if (!opts) {
        mp_workload_opts_init(&defaults);
        opts = &defaults;
    }
    mp_wl_price_colls(w, m, c, p, opts, cache);
    mp_wl_price_layers(w, m, p, opts, cache);
}

mp_status mp_workload_build(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                            mp_wl_phase phase, const mp_workload_opts *opts, mp_workload *w,
                            mp_diag *diag)
{
    mp_status st = mp_workload_shape(m, c, p, phase, opts, NULL, w, diag);
    if (st == MP_OK)
        mp_workload_price(m, c, p, opts, NULL, w);
    return st;
}
