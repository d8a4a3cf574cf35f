/* src/estimate/memory.c — memory per GPU on every pipeline stage: weights, gradients and
 * optimizer state by ZeRO stage, stored activations of the micro-batches in flight, logits on
 * the last stage, buffers (ZeRO gathers), the runtime parts (runtime.c) and the verdict. Needs only
 * the workload's shape, so a plan over memory is known before it is timed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimate_internal.h"
#include "memory_states.h"

/* What every stage's memory shares: bytes per parameter, activations of one layer. */
typedef struct {
    mp_layer_act la, lam;
} mem_ctx;

/* What a stage's memory is made of apart from its in-flight micro-batches, the same for every
 * stage of one class (the same counts of each layer kind: most stages of a pipeline share one).
 * Its part that no micro-batch size changes (stage_fixed: the model states, buffers and the
 * optimizer step's transient, what the plans of one line share: mp_est_memo) and the rest
 * (stage_mb: the logits, one micro-batch's stored activations, the recompute working set). */
typedef struct {
    int first, count, last;  /* the run of stages (mp_workload_run) */
    double nd, nm, mtp_l;    /* its dense and MoE layers, MTP modules */
    mp_memory fixed;         /* weights, gradients, optimizer, buffers; the rest 0 */
    double step_temp;        /* the optimizer step's transient */
    mp_stage_states ss;
} mem_class;

struct mp_est_memo {
    uint64_t gen;                /* mp_wl_cache.shape_gen these are for; 0: none */
    int64_t gpus_per_node;       /* the cluster's values they read (runtime.c, states_of_stage) */
    char gpu_key[MP_KEY_CAP];
    mp_runtime_mem rt;
    int nruns;
    mem_class run[MP_WL_MAX_RUNS];
};

mp_est_memo *mp_est_memo_create(void)
{
    mp_est_memo *memo = malloc(sizeof *memo);
    if (memo)
        memo->gen = 0;
    return memo;
}

void mp_est_memo_destroy(mp_est_memo *memo) { free(memo); }

static void stage_fixed(const mp_workload *w, const mp_model *m, const mp_plan *p,
                        const mp_wl_stage *st, int last, mem_class *out)
{
    const int tp = w->tp, fp8 = w->fp8;
    const double shard = w->shard, eshard = w->expert_shard;
    const double moe_nonexpert = w->moe_nonexpert_per_layer, D_mtp = w->mtp_modules;
    const double expert_per_layer_gpu = w->layer[MP_LK_MOE].expert_params;
    /* fp8 weight copies of the linear layers (Transformer Engine keeps a rowwise and a
     * transposed columnwise fp8 copy beside the 16-bit weight, 1 + 1 bytes; block-scaled MXFP8
     * adds one 1-byte scale per 32 values for each, OCP MX spec v1.0); scaling factors of
     * per-tensor recipes (amax history of 1024 floats per tensor) are negligible. */
    const double fp8_copy = fp8 ? 2.0 + 2.0 / 32.0 : 0.0;
    mp_memory mm = {0};
    const double nd = st->n[MP_LK_DENSE], nm = st->n[MP_LK_MOE];
    const double dense_p = st->params, exp_p = st->expert_params, nonlin = st->nonlinear_params;
    /* weights, gradients and optimizer states by optimizer, dtype, fine-tuning and offload
     * (memory_states.c) */
    mp_stage_states ss;
    mp_est_stage_states(w, m, p, st, last, &ss);
    mm.weights = ss.weights;
    if (fp8) {
        double lin = fmax(0.0, dense_p - nonlin);
        mm.weights += fp8_copy * (p->zero == 3 ? lin / shard + exp_p / eshard : lin + exp_p);
    }
    mm.gradients = ss.gradients;
    mm.optimizer = ss.optimizer;
    out->ss = ss;
    out->last = last;
    out->nd = nd, out->nm = nm;
    out->mtp_l = last ? D_mtp : 0.0;
    /* ZeRO-2/3 buffers hold only what is sharded: with one rank per shard group nothing is
     * gathered or reduce-scattered (PyTorch FSDP switches to NO_SHARD at world size 1). The
     * largest layer of the stage, counting its non-expert part when shard > 1 and its
     * experts when eshard > 1: */
    double dense_l = shard > 1 ? (double)w->params.per_layer / tp : 0.0;
    double moe_l = (shard > 1 ? moe_nonexpert / tp : 0.0) + (eshard > 1 ? expert_per_layer_gpu : 0.0);
    double biggest = nm > 0 ? (nd > 0 ? fmax(dense_l, moe_l) : moe_l) : dense_l;
    /* The optimizer step's transient (docs/memory.md "The peak"): ZeRO-2/3 — DeepSpeed copies
     * each rank's 16-bit gradient partition to fp32 for the step (deepspeed/runtime/zero/
     * stage_1_and_2.py and stage3.py, the fp32 partition's .grad), and torch's foreach AdamW
     * (FSDP1/FSDP2, torchtitan's default) allocates sqrt(v) for the whole parameter group
     * before dividing (torch/optim/adamw.py, _multi_tensor_adamw): one state-dtype copy of the
     * rank's shard, 4 bytes (2 with opt_dtype=bf16) per sharded parameter. ZeRO 0/1 (Megatron's
     * distributed optimizer): Apex/TE FusedAdam updates in place, and the fp32 main gradients
     * are already the gradients part: nothing. */
    const double moment_b = p->opt_dtype == 1 ? 2.0 : 4.0;
    /* Only the trained parameters are stepped (LoRA/QLoRA: the adapters), only on the GPU (an
     * offloaded optimizer steps on the host), and only AdamW's foreach path allocates the
     * sqrt(v) copy; the other optimizers' own step buffers (Muon's Newton-Schulz) come from
     * memory_states.c. */
    const double trained = ss.trainable_params + ss.frozen_params > 0
                         ? ss.trainable_params / (ss.trainable_params + ss.frozen_params) : 1.0;
    const int gpu_step = p->offload != MP_OFF_OPTIMIZER && p->offload != MP_OFF_ALL;
    double step_temp = p->zero >= 2 && gpu_step && p->optimizer == MP_OPT_ADAMW
                     ? moment_b * trained * (dense_p / shard + exp_p / eshard) : 0.0;
    step_temp += ss.step_transient_bytes;
    out->step_temp = step_temp;
    const int pp_unsharded = p->zero == 3 && w->pp > 1 && shard > 1;
    if (pp_unsharded) {
        /* FSDP under pipeline parallelism (torchtitan): parameters stay unsharded between the
         * micro-batches (reshard_after_forward = False when PP is on, torchtitan's default
         * policy) and gradients are not reduce-scattered until the last micro-batch's backward
         * (torch.distributed.pipelining runs the others with requires_gradient_sync False); the
         * unsharded gradients accumulate in the fp32 reduce dtype (FSDP2's
         * unsharded_accumulated_grad; torchtitan mixed_precision_reduce = float32). So the stage
         * holds its 16-bit parameters in full beside their shard, and 4 bytes per parameter of
         * gradients: the whole stage's gathered buffers. */
        const double exp_sh = eshard > 1 ? exp_p : 0.0; /* experts FSDP-sharded too */
        mm.buffers += 2.0 * (dense_p * (1.0 - 1.0 / shard) + exp_sh * (1.0 - 1.0 / eshard)) +
                      4.0 * (dense_p + exp_sh);
    } else if (p->zero == 3) {
        /* Gathered 16-bit parameters of the current and the prefetched layer — the two
         * largest layers the stage holds, not two of its largest kind (a DeepSeek-V3 first
         * stage has one MoE layer and three dense ones) — and the unsharded 16-bit gradient
         * of one layer before its reduce-scatter (FSDP, Zhao et al. 2023 Sec. 3.2). */
        double big2 = nm >= 2.0 ? 2.0 * moe_l
                    : nm >= 1.0 ? moe_l + (nd >= 1.0 ? dense_l : 0.0)
                                : fmin(nd, 2.0) * dense_l;
        const double gb = ss.gather_bytes_per_param, rb = ss.grad_buffer_bytes_per_param;
        mm.buffers += gb == rb ? gb * (big2 + biggest) : gb * big2 + rb * biggest;
        /* FSDP2's transient gather buffer: it all-gathers into one flat buffer per layer and
         * copies it out into the per-parameter tensors (torch/distributed/fsdp/_fully_shard/
         * _fsdp_collectives.py, foreach_all_gather_copy_out), then frees it on the compute
         * stream, without record_stream (pytorch/pytorch issue 114299): the flat buffer is the
         * prefetched layer's slot above until its copy-out, not a third layer. */
    } else if (p->zero == 2) {
        /* ZeRO-2 produces each layer's gradient unsharded too before reduce-scattering it,
         * as ZeRO-3 does (one layer of 16-bit gradients); DeepSpeed (the ZeRO-2 meshplan
         * emits) reduces through its bucket, reduce_bucket_size 5e8 elements by default, 16-bit
         * (DeepSpeed config docs, "ZeRO optimizations": reduce_bucket_size), when any DP group
         * reduces. */
        mm.buffers += ss.grad_buffer_bytes_per_param * biggest + (shard > 1 ? 2.0 * 5e8 : 0.0);
    }
    /* Communication buckets: Megatron/DDP reduce in place on the grad buffer; the NCCL
     * channel buffers are outside the allocator (runtime.c, part nccl). */
    out->fixed = mm;
}

/* The class k's memory with its logits into *out, one micro-batch's stored activations into
 * *per_mb and the recompute working set into *rc_extra. */
static void stage_mb(const mp_workload *w, const mp_model *m, const mp_plan *p, const mem_ctx *x,
                     const mem_class *k, mp_memory *out, double *per_mb, double *rc_extra)
{
    const int tp = w->tp;
    const double T = w->tokens_mb, V = w->vocab_padded;
    const mp_layer_act *la = &x->la, *lam = &x->lam;
    const double nd = k->nd, nm = k->nm, mtp_l = k->mtp_l;
    mp_memory mm = k->fixed;
    *per_mb = nd * la->stored_bytes + nm * lam->stored_bytes +
              mtp_l * (w->mtp_moe ? lam->stored_bytes : la->stored_bytes);
    /* The recompute working set: while one checkpointed layer is recomputed in backward its
     * dropped activations are live again (full: all of them; per-op and MLP-only: what they
     * dropped). */
    if (p->recompute == MP_RC_FULL)
        *rc_extra = nm > 0 ? fmax(la->working_bytes, lam->working_bytes) : la->working_bytes;
    else if (p->recompute == MP_RC_OP || p->recompute == MP_RC_MLP)
        *rc_extra = fmax(la->working_bytes - la->stored_bytes, nm > 0 ? lam->working_bytes - lam->stored_bytes : 0.0);
    else
        *rc_extra = 0.0;
    if (k->last) {
        /* LM-head output (16-bit), its fp32 upcast and the fp32 gradient/softmax buffer:
         * 2 + 4 + 4 bytes per logit (case C1: the failing 786 MiB request is b*s*V*4);
         * each MTP module keeps its own logits live too. */
        /* compile bit 2, the loss compiled: Inductor fuses the fp32 upcast, log-softmax and
         * its backward into one kernel each way, so only the 16-bit logits and their 16-bit
         * gradient (autograd gives a gradient the logits' dtype) are live, 2 + 2 bytes per
         * logit, plus one fp32 log-sum-exp per token (torch._inductor's fused cross-entropy;
         * torchtitan components/loss.py torch.compile(loss_fn)). */
        /* logits_fp32: the model itself upcasts (torchtune/modules/transformer.py,
         * TransformerDecoder: output = self.output(h).float(); transformers' LlamaForCausalLM
         * before 4.45: logits = logits.float()) and the training step keeps that fp32 tensor
         * referenced until the backward is done (the recipe's `logits` variable), so beside
         * what the loss holds, 4 more bytes a logit stay live at the loss's peak. */
        /* torchtitan under TP computes the loss with loss_parallel (its default,
         * parallelism.disable_loss_parallel = false) on the vocabulary-sharded logits:
         * torch/distributed/tensor/parallel/loss.py _log_softmax keeps the fp32 input x, then
         * shifted = x - max and exp(shifted) before the all-reduced sum, then the result
         * shifted - log(sum) beside shifted: 2 (16-bit logits) + 4 (x) + 4 (shifted) + 4
         * (exp(shifted), then the result) = 14 bytes a logit of the shard, not 2 + 4 + 4. */
        const int loss_parallel = !(p->compile & 2) && tp > 1 && p->stack == MP_STACK_TORCHTITAN;
        const double per_logit_bytes = ((p->compile & 2) ? 4.0 : loss_parallel ? 14.0 : 10.0) +
                                       (p->logits_fp32 ? 4.0 : 0.0);
        mm.logits = T * V / tp * per_logit_bytes * (1.0 + (double)m->mtp_layers) +
                    ((p->compile & 2) ? T * 4.0 * (1.0 + (double)m->mtp_layers) : 0.0);
    }
    *out = mm;
}

/* The most loaded stage's states into e->states (the time fields are step.c's). A field added
 * here goes into mp_est_memory_restore's MEMORY_OWNED_STATES too (test_estimate_fast checks). */
static void states_of_stage(const mp_stage_states *ss, const mp_cluster *c, mp_estimate *e)
{
    mp_states *s = &e->states;
    s->trainable_params = ss->trainable_params;
    s->frozen_params = ss->frozen_params;
    s->step_transient_bytes = ss->step_transient_bytes;
    s->state_bytes_per_param = ss->state_bytes_per_param;
    s->master_bytes_per_param = ss->master_bytes_per_param;
    s->host_bytes_per_gpu = ss->host_bytes;
    s->host_bytes_per_node = ss->host_bytes * (c->gpus_per_node > 0 ? c->gpus_per_node : 1);
    s->nvme_bytes_per_gpu = ss->nvme_bytes;
    s->gpu_bytes_saved = ss->gpu_bytes_saved;
}

void mp_est_memory_save(const mp_estimate *e, mp_est_memory_part *out)
{
    out->memory = e->memory;
    out->states = e->states;
    out->verdict = e->verdict;
    out->feasible = e->feasible;
    memcpy(out->peak_moment, e->peak_moment, sizeof out->peak_moment);
}

void mp_est_memory_restore(const mp_est_memory_part *in, mp_estimate *e)
{
    e->memory = in->memory;
    e->verdict = in->verdict;
    e->feasible = in->feasible;
    memcpy(e->peak_moment, in->peak_moment, sizeof e->peak_moment);
    /* the fields states_of_stage writes (the time fields are step.c's) */
#define MEMORY_OWNED_STATES(X)                                                              \
    X(trainable_params) X(frozen_params) X(step_transient_bytes) X(state_bytes_per_param)   \
    X(master_bytes_per_param) X(host_bytes_per_gpu) X(host_bytes_per_node)                  \
    X(nvme_bytes_per_gpu) X(gpu_bytes_saved)
#define COPY_FIELD(f) e->states.f = in->states.f;
    MEMORY_OWNED_STATES(COPY_FIELD)
#undef COPY_FIELD
#undef MEMORY_OWNED_STATES
}

/* In-flight micro-batches on stage i: 1F1B min(M, pp - i); interleaved adds (pp - 1 - i)/v...
 * (Korthikanti et al. 2022 Sec. 4.2.3: first stage L/p * p * (1 + (p-1)/(p v)) layers' worth);
 * GPipe all M. */
static double inflight(const mp_workload *w, const mp_plan *p, int i)
{
    const double M = w->microbatches;
    const int pp = w->pp, v = w->vpp;
    if (p->schedule == MP_SCHED_GPIPE)
        return M;
    if (v > 1) {
        double chunks = 2.0 * (pp - i - 1) + (double)(v - 1) * pp + 1.0; /* Megatron warm-up + 1 */
        if (chunks > M * v)
            chunks = M * v;
        return chunks / v;
    }
    return fmin(M, (double)(pp - i));
}

/* The memo's classes for w's shape, filled now when it holds another shape: NULL when there is
 * no memo to use (no memo or cache, a workload not the cache's own, more runs than it keeps). */
static const mp_est_memo *line_memo(const mp_workload *w, const mp_model *m, const mp_cluster *c,
                                    const mp_plan *p, const mp_estimate_opts *o)
{
    mp_est_memo *memo = o->memo;
    const mp_wl_cache *cache = o->cache;
    if (!memo || !cache || w != &cache->shape || cache->shape_gen == 0)
        return NULL;
    if (memo->gen == cache->shape_gen && memo->gpus_per_node == c->gpus_per_node &&
        strcmp(memo->gpu_key, c->gpu.key) == 0)
        return memo;
    const int nr = mp_workload_runs(w);
    if (nr > MP_WL_MAX_RUNS || strlen(c->gpu.key) >= sizeof memo->gpu_key)
        return NULL;
    memo->gen = 0; /* invalid until filled */
    mp_est_runtime_memory(w, c, p, &memo->rt);
    for (int r = 0; r < nr; r++) {
        mp_wl_stage st;
        mem_class *k = &memo->run[r];
        mp_workload_run(w, m, r, &st, &k->first, &k->count);
        stage_fixed(w, m, p, &st, k->first + k->count == w->pp, k);
    }
    memo->nruns = nr;
    memo->gpus_per_node = c->gpus_per_node;
    strcpy(memo->gpu_key, c->gpu.key);
    memo->gen = cache->shape_gen;
    return memo;
}

void mp_est_memory(const mp_workload *w, const mp_model *m, const mp_cluster *c, const mp_plan *p,
                   const mp_estimate_opts *o, mp_estimate *e)
{
    mem_ctx x;
    mp_runtime_mem rt_own;
    const mp_est_memo *memo = line_memo(w, m, c, p, o);
    const mp_runtime_mem *rt = &rt_own;
    if (memo)
        rt = &memo->rt;
    else
        mp_est_runtime_memory(w, c, p, &rt_own);
    x.la = w->act;
    x.lam = w->act_moe;
    if (w->act_elem_bytes > 2.0) { /* fp32/tf32 training: 4-byte activations (finetune.c) */
        const double k = w->act_elem_bytes / 2.0;
        x.la.stored_bytes *= k, x.la.working_bytes *= k;
        x.lam.stored_bytes *= k, x.lam.working_bytes *= k;
    }
    double worst = -1.0;
    int worst_i = 0, worst_rc = 0;
    const int nrep = w->pp < MP_MAX_STAGES ? w->pp : MP_MAX_STAGES;
    const int nr = memo ? memo->nruns : mp_workload_runs(w);
    for (int r = 0; r < nr; r++) {
        /* one class of like stages; each stage differs only in its micro-batches in flight */
        mem_class own;
        const mem_class *k = memo ? &memo->run[r] : &own;
        if (!memo) {
            mp_wl_stage st;
            mp_workload_run(w, m, r, &st, &own.first, &own.count);
            stage_fixed(w, m, p, &st, own.first + own.count == w->pp, &own);
        }
        mp_memory cls;
        double per_mb, rc_extra;
        const double step_temp = k->step_temp;
        const int first = k->first, count = k->count;
        stage_mb(w, m, p, &x, k, &cls, &per_mb, &rc_extra);
        /* in flight is non-increasing in the stage index (every schedule): a run's first stage
         * holds the most, so without per_stage it alone can be the most loaded */
        const int last_i = o->skip_per_stage ? first + 1 : first + count;
        for (int i = first; i < last_i; i++) {
            mp_memory mm = cls;
            mm.activations = inflight(w, p, i) * per_mb;
            /* The recompute working set and the loss's logits are never live together: autograd
             * runs the loss's backward first (the loss is the graph's root) and frees its
             * buffers (the log-softmax output it saved, the logits' gradient once the LM head's
             * backward has used it; torchtitan's train step deletes the logits before
             * backward, train.py "need to free to before bwd to avoid peaking memory") before
             * the first checkpointed layer is recomputed. On the last stage the peak is the
             * larger of the two moments; on the others there are no logits. */
            int recompute_peak = 0;
            if (rc_extra > mm.logits) {
                recompute_peak = mm.logits > 0.0;
                mm.activations += rc_extra;
                mm.logits = 0.0;
            }
            mm.allocated = mm.weights + mm.gradients + mm.optimizer + mm.activations + mm.logits +
                           mm.buffers;
            /* The other moment: the optimizer step, activations and logits freed, the step's
             * transient live; the stage's peak is the larger (docs/memory.md). The buffers are
             * counted at both moments (an upper bound at the step; so the model states plus
             * buffers the search's pruning bounds by do not depend on the moment or on mb). */
            if (step_temp > mm.activations + mm.logits) {
                mm.allocated += step_temp - mm.activations - mm.logits;
                mm.activations = mm.logits = 0.0;
                mm.step_temp = step_temp;
            }
            mm.capacity = c->gpu.memory_bytes;
            mp_est_runtime_apply(rt, &mm);
            mm.allocator_margin = o->allocator_margin_frac * mm.total;
            if (i < nrep && !o->skip_per_stage)
                e->per_stage[i] = mm;
            if (mm.total > worst) {
                worst = mm.total;
                e->memory = mm;
                worst_i = i;
                worst_rc = recompute_peak && mm.step_temp == 0.0;
                states_of_stage(&k->ss, c, e);
            }
        }
    }
    e->verdict = mp_est_verdict(&e->memory, o->allocator_margin_frac);
    /* The peak: the stored activations are largest when the last micro-batch in flight has
     * run its forward (1F1B: the warm-up's end; the first stage holds the most); on the last
     * stage the logits and the loss's fp32 buffers peak with them, before the backward frees
     * them; the optimizer step is the peak where its transient outweighs the activations
     * (small micro-batches under ZeRO-2/3; docs/memory.md "The peak"). */
    if (!o->skip_text)
        snprintf(e->peak_moment, sizeof e->peak_moment, "%s on stage %d of %d",
                 e->memory.step_temp > 0 ? "optimizer step"
                 : e->memory.logits > 0  ? "end of forward, logits + loss"
                 : worst_rc              ? "backward, layer recomputed"
                                         : "end of forward",
                 worst_i + 1, w->pp);
    e->feasible = e->verdict != MP_VERDICT_OOM;
}
