/* src/infer/infer.c — the inference estimator: a fixed batch of sequences (in prompt, out output
 * tokens) on one model replica of tp x pp GPUs, dp replicas. It shapes the workload's prefill
 * and decode phases (src/workload/infer_phase.c), turns their stage times into TTFT and TPOT with
 * the pipeline's micro-batches and the engine's per-step overhead, sizes memory and the KV pool
 * the way the engine does, and prices power with the energy module's GPU power points.
 * Equations and sources: docs/infer.md. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "meshplan/energy.h"
#include "meshplan/infer.h"
#include "meshplan/workload.h"

static void assume(mp_infer_result *r, const char *fmt, ...)
{
    if (r->nassumed >= MP_INFER_MAX_ASSUMED)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->assumed[r->nassumed++], sizeof r->assumed[0], fmt, ap);
    va_end(ap);
}

/* Resolve dp and the engine's defaults; every reason a plan cannot be formed goes to d. */
static int resolve(const mp_model *m, const mp_cluster *c, mp_infer_plan *p, mp_diag *d)
{
    int bad = 0;
    int64_t per = (int64_t)p->tp * p->pp;
    const int derived = p->dp <= 0;
    if (p->dp <= 0)
        p->dp = per > 0 && c->num_gpus % per == 0 ? (int)(c->num_gpus / per) : 0;
    if (derived && p->dp <= 0 && per > 0) {
        /* dp is derived as GPUs / (tp x pp): a replica size that does not divide the GPUs would
         * leave some idle, which the plan contract refuses (docs/infer.md "GPUs and replicas";
         * DESIGN.md: degrees whose product is not the GPU count cannot be formed) */
        char near[96];
        mp_nearest_multiples(c->num_gpus, per, near, sizeof near);
        mp_diag_add(d, "plan: tp x pp = %d x %d = %lld GPUs per replica does not divide the cluster's %lld GPUs: "
                    "expected --gpus a multiple of %lld (e.g. %s), or tp x pp dividing %lld (dp = GPUs / "
                    "(tp x pp); spare GPUs are not left idle)", p->tp, p->pp, (long long)per,
                    (long long)c->num_gpus, (long long)per, near, (long long)c->num_gpus);
        bad++;
    } else if (p->dp <= 0 || per * p->dp != c->num_gpus) {
        mp_diag_add(d, "plan: tp x pp x dp = %d x %d x %d = %lld: expected the cluster's %lld GPUs",
                    p->tp, p->pp, p->dp, (long long)(per * p->dp), (long long)c->num_gpus);
        bad++;
    }
    if (p->longest && p->longest < p->out) {
        mp_diag_add(d, "plan: longest=%lld: expected at least out=%lld (the batch steps until its longest response)",
                    (long long)p->longest, (long long)p->out);
        bad++;
    }
    /* the model's context (mp_model.context_len, its config's max_position_embeddings; 0 =
     * unknown): a sequence holds its prompt and every token it generates, so in + the decode
     * steps must fit, as vLLM's OpenAI server refuses prompt + max_tokens over max_model_len
     * ("This model's maximum context length is ..."; vllm/entrypoints/openai/serving_engine.py
     * _validate_input) */
    int64_t steps = p->longest > p->out ? p->longest : p->out;
    if (m->context_len > 0 && p->in + steps > m->context_len) {
        mp_diag_add(d, "plan: in + %s = %lld + %lld = %lld tokens: expected at most %s's context of %lld tokens "
                    "(its config's max_position_embeddings)", p->longest > p->out ? "longest" : "out",
                    (long long)p->in, (long long)steps, (long long)(p->in + steps), m->key,
                    (long long)m->context_len);
        bad++;
    }
    return bad;
}

/* Bytes of weights on one GPU of the stage holding most: linear layers at the weights' format
 * split over TP (routed experts over EP when ep > 1), embedding and LM head in 16 bits
 * (vocab-parallel over TP), over pp stages. MTP modules are not loaded (no speculative decode). */
static double weight_bytes_gpu(const mp_model *m, const mp_infer_plan *p, double wb)
{
    mp_param_count pc;
    mp_model_params(m, p->tp, &pc);
    double embed = (double)pc.embedding + (double)pc.lm_head;
    double routed = (double)pc.routed_total;
    double linear = (double)pc.total - (double)pc.mtp - routed - embed;
    double shard = p->ep > 1 ? p->ep : p->tp;
    return ((linear / p->tp + routed / shard) * wb + embed / p->tp * 2.0) / p->pp;
}

/* Peak activation memory of one GPU: one prefill chunk's live tensors of a layer (input,
 * residual, norm output, Q/K/V, the FFN's up/gate and activation) in 16 bits, and fp32 logits of
 * the engine's largest batch: what vLLM's profile run measures with max_num_batched_tokens and
 * max_num_seqs dummy sequences, whatever the batch later served (so the KV pool, and max
 * concurrency, do not depend on the batch). */
static double chunk_tokens(const mp_infer_plan *p, const mp_engine_profile *e)
{
    return p->chunk > 0 ? (double)p->chunk : e->max_batched_tokens;
}

static double activation_bytes_gpu(const mp_model *m, const mp_infer_plan *p, const mp_engine_profile *e)
{
    mp_attn_dims ad;
    mp_model_attn_dims(m, &ad);
    double chunk = chunk_tokens(p, e);
    double f = fmax((double)m->ffn_hidden, (double)(m->moe_topk * m->moe_ffn_hidden));
    /* the attention block's Q/K/V and output are freed before the FFN runs: the live set is the
     * residual stream, its input and norm output (3 x hidden) with the larger of the two blocks'
     * tensors, not their sum. Check (not a fit): vLLM issue 10517's RTX 3090 logs (Llama 3.1 8B,
     * profile runs of 20000 and 29000 tokens) leave 2.07 and 2.99 GiB of activations
     * (0.9 x 23.58 GiB - 14.99 weights - 0.35 non-torch - the KV pool): 109.7 KB per token, where
     * 3h + 3f = 110.6 KB and the sum with Q/K/V 122.9 KB */
    double attn = (ad.q_width + ad.k_width + ad.v_width) / p->tp + m->hidden;
    double per_tok = 3.0 * m->hidden + fmax(attn, (m->glu ? 3.0 : 2.0) * f / p->tp);
    double logits = e->max_batch * (double)mp_model_padded_vocab(m, p->tp) / p->tp * 4.0;
    return chunk * per_tok * 2.0 + logits;
}

/* Decode steps the batch runs: out, or a static batch's longest response (plan key longest). */
static int64_t decode_steps(const mp_infer_plan *p)
{
    return p->longest > p->out ? p->longest : p->out;
}

/* One phase's report from its stage: k stage-times (pipeline fill and micro-batches), m
 * micro-batches of work per GPU, plus the engine's overhead. */
static void phase_of(const mp_wl_infer *w, double k, double mb, double overhead_s, double dispatch_s,
                     const mp_gpu *g, mp_dtype dt, double wait_W, double pj_per_bit, mp_infer_phase *ph)
{
    ph->compute_s = k * w->compute_bound_s;
    ph->memory_s = k * w->memory_bound_s;
    ph->comm_s = k * (w->tp_s + w->ep_s + w->pp_s);
    ph->overhead_s = overhead_s;
    ph->total_s = ph->compute_s + ph->memory_s + ph->comm_s + ph->overhead_s;
    ph->flop = mb * w->flop;
    ph->bytes = mb * (w->weight_bytes_read + w->kv_bytes_read);
    double parts[4] = {ph->compute_s, ph->memory_s, ph->comm_s, ph->overhead_s};
    static const char *const names[4] = {"compute", "memory", "communication", "overhead"};
    int b = 0;
    for (int i = 1; i < 4; i++)
        if (parts[i] > parts[b])
            b = i;
    ph->bound = names[b];
    double peak = g->peak_flops_per_s[dt] > 0 ? g->peak_flops_per_s[dt] : g->peak_flops_per_s[MP_DT_BF16];
    ph->mfu = ph->total_s > 0 && peak > 0 ? ph->flop / (ph->total_s * peak) : 0.0;
    ph->mbu = ph->total_s > 0 && g->mem_bw_Bps > 0 ? ph->bytes / (ph->total_s * g->mem_bw_Bps) : 0.0;
    ph->power_w = mp_infer_phase_power_w(g, wait_W, pj_per_bit, ph->flop, ph->bytes,
                                         ph->compute_s + ph->memory_s + ph->comm_s, dispatch_s,
                                         ph->overhead_s - dispatch_s, dt);
}

/* Stage-times the prefill pipeline's fill and drain add, in units of the stage-time of one
 * micro-batch of mb_tokens: pp - 1 engine steps of at most step_tokens each (a step is the unit
 * the scheduler sends down the pipeline; Huang et al. 2019, GPipe, bubble of pp - 1 micro-batch
 * times), the step's time taken as its share of the micro-batch's (the stage is GEMM-bound in
 * prefill, so linear in tokens). 0 for pp = 1. */
double mp_infer_prefill_bubble_stage_times(int pp, double mb_tokens, double step_tokens)
{
    if (pp <= 1 || !(mb_tokens > 0))
        return 0.0;
    const double share = step_tokens > 0 ? fmin(1.0, step_tokens / mb_tokens) : 1.0;
    return (double)(pp - 1) * share;
}

/* Memory of one GPU and the engine's KV pool; max concurrency as the engine counts it. */
static void memory(const mp_model *m, const mp_cluster *c, const mp_infer_plan *p, double wb,
                   double kvb, mp_infer_result *r, int *measured_mem)
{
    const mp_engine_profile *e = &r->engine;
    r->weights_bytes = weight_bytes_gpu(m, p, wb);
    r->activations_bytes = activation_bytes_gpu(m, p, e);
    /* every GPU holds a CUDA context and cuBLAS workspace; NCCL's buffers only when the replica
     * spans GPUs (vLLM counts both as non-torch memory, gpu_worker.py) */
    const int multi = p->tp * p->pp > 1;
    r->runtime_bytes = e->runtime_bytes + (multi ? e->runtime_multi_gpu_bytes : 0.0);
    r->capacity_bytes = c->gpu.memory_bytes;
    /* where the engine's own log of this GPU was published: the device memory CUDA reports and
     * the engine's measured non-torch memory replace the catalog's capacity and the profile's
     * runtime (src/infer/device_mem.c) */
    double total = 0, non_torch = 0;
    if (mp_infer_device_memory(e->key, c->gpu.key, multi, &total, &non_torch, NULL)) {
        r->capacity_bytes = total;
        if (non_torch > 0)
            r->runtime_bytes = non_torch;
        *measured_mem = 1;
    }
    r->kv_bytes_per_token = mp_wl_kv_bytes_per_token(m, kvb);
    r->kv_bytes_per_token_gpu = mp_wl_kv_bytes_per_token_gpu(m, kvb, p->tp, p->pp);
    double frac = p->kv_frac;
    double rest = r->weights_bytes + r->activations_bytes + r->runtime_bytes;
    /* vLLM: gpu_memory_utilization x capacity - the rest; SGLang: mem_fraction_static x capacity -
     * weights (its rest lives in the other share, counted here too); TRT-LLM: a fraction of what is
     * free after the rest (data/engines.json names each) */
    r->kv_pool_bytes = e->kv_budget_of_free ? frac * (r->capacity_bytes - rest) : frac * r->capacity_bytes - rest;
    if (r->kv_pool_bytes < 0)
        r->kv_pool_bytes = 0;
    /* paged KV: whole blocks of block_tokens per sequence (Kwon et al. 2023, SOSP, Sec. 4.1); a
     * static batch grows every sequence's cache to its longest response */
    double seq_tok = (double)(p->in + decode_steps(p));
    double per_seq = ceil(seq_tok / e->block_tokens) * e->block_tokens * r->kv_bytes_per_token_gpu;
    r->max_concurrency = per_seq > 0 ? (int64_t)floor(r->kv_pool_bytes / per_seq) : 0;
    r->kv_bytes = (double)p->batch * per_seq;
    r->total_bytes = rest + r->kv_bytes;
    r->feasible = (int64_t)p->batch <= r->max_concurrency;
    if (!r->feasible && !(r->kv_pool_bytes > 0))
        /* no pool at all: the weights (or what else the engine holds) are the reason, not the KV
         * (DeepSeek-V3 in bf16 on one H100 once read "batch 1 needs 0.08 GiB of KV per GPU; the
         * engine's pool holds 0.00 GiB") */
        snprintf(r->reason, sizeof r->reason,
                 "weights %.2f + activations %.2f + runtime %.2f = %.2f GiB per GPU leave no KV pool in "
                 "the engine's share (kv_frac %.2f) of the GPU's %.2f GiB: expected a larger tp x pp or "
                 "smaller weights", r->weights_bytes / 1073741824.0,
                 r->activations_bytes / 1073741824.0, r->runtime_bytes / 1073741824.0, rest / 1073741824.0, frac,
                 r->capacity_bytes / 1073741824.0);
    else if (!r->feasible)
        snprintf(r->reason, sizeof r->reason,
                 "batch %lld needs %.2f GiB of KV per GPU; the engine's pool holds %.2f GiB "
                 "(%lld sequences of %lld tokens)", (long long)p->batch, r->kv_bytes / 1073741824.0,
                 r->kv_pool_bytes / 1073741824.0, (long long)r->max_concurrency, (long long)(p->in + p->out));
}

mp_status mp_infer_estimate(const mp_model *m, const mp_cluster *c, const mp_infer_plan *plan,
                            mp_infer_result *r, mp_diag *d)
{
    memset(r, 0, sizeof *r);
    r->plan = *plan;
    mp_infer_plan *p = &r->plan;
    mp_status st = mp_engine_profile_get((mp_engine_id)p->engine, &r->engine, d);
    if (st != MP_OK)
        return st;
    const mp_engine_profile *e = &r->engine;
    if (!(p->kv_frac > 0))
        p->kv_frac = e->kv_frac;
    if (p->cuda_graphs < 0)
        p->cuda_graphs = 1;
    int bad = resolve(m, c, p, d);
    const mp_gpu *g = &c->gpu;
    if (!(g->tdp_W > 0)) {
        mp_diag_add(d, "gpu %s: tdp_W is unknown: power cannot be derived (give tdp_W in a --catalog file)", g->key);
        bad++;
    }
    const double wb = mp_infer_weights_bytes((mp_infer_weights)p->weights);
    const double kvb = p->kv == MP_KVQ_FP8 ? 1.0 : 2.0;
    int fp8_w = p->weights == MP_WQ_FP8 || p->weights == MP_WQ_FP4;
    mp_dtype dt = fp8_w && g->peak_flops_per_s[MP_DT_FP8] > 0 ? MP_DT_FP8
                  : g->peak_flops_per_s[MP_DT_BF16] > 0       ? MP_DT_BF16 : MP_DT_FP16;
    mp_workload_opts wo;
    mp_workload_opts_init(&wo);
    mp_wl_infer_shape s = {MP_WL_PREFILL, p->tp, p->pp, p->ep, 1, (double)p->in, 0.5 * (p->in + 1.0),
                           wb, kvb, dt, e->gemm_frac, e->attn_frac, e->mem_frac,
                           mp_model_is_moe(m) ? wo.moe_imbalance : 1.0};
    /* micro-batches in flight: one per stage (vLLM's virtual engines), fewer when batch < pp */
    const double mbs = fmin((double)p->pp, (double)p->batch);
    s.seqs = ceil((double)p->batch / mbs);
    mp_wl_infer pre, dec;
    if (mp_workload_infer(m, c, &s, &pre, d) != MP_OK)
        bad++;
    s.phase = MP_WL_DECODE;
    s.new_tokens = 1;
    const int64_t steps = decode_steps(p);
    s.context = (double)p->in + 0.5 * (double)steps; /* the mean cached length over the decode */
    if (!bad && mp_workload_infer(m, c, &s, &dec, d) != MP_OK)
        bad++;
    if (bad)
        return MP_ERR_INPUT;

    int measured_mem = 0;
    memory(m, c, p, wb, kvb, r, &measured_mem);
    double idle_W, wait_W;
    int measured = mp_energy_gpu_points(g, &idle_W, &wait_W);
    mp_energy_opts eo;
    mp_energy_opts_init(&eo);
    /* eager: the step's fixed CPU work + the dispatch of every layer's kernels (the stages of a
     * pipeline dispatch theirs in parallel, but each token crosses all of them) */
    const double step_over = p->cuda_graphs ? e->step_overhead_graphs_s
                                            : e->step_overhead_eager_s + e->step_overhead_eager_per_layer_s * (double)m->layers;
    /* Prefill of the whole batch, one engine step per chunk of max_batched_tokens (chunked
     * prefill). The steps are the pipeline's micro-batches: m of them take m + pp - 1 step-times
     * (GPipe, Huang et al. 2019, bubble (pp - 1) / (m + pp - 1)), so the fill and drain cost
     * pp - 1 times one step's share of a stage-time, not pp - 1 whole stage-times of the mbs
     * micro-batches the stage was priced at (docs/infer.md "Pipeline prefill"). */
    double chunks = ceil((double)p->batch * (double)p->in / chunk_tokens(p, e));
    const double bubble = mp_infer_prefill_bubble_stage_times(p->pp, s.seqs * (double)p->in, chunk_tokens(p, e));
    phase_of(&pre, mbs + bubble, mbs, chunks * e->step_overhead_graphs_s, 0.0, g, dt, wait_W,
             eo.mem_pJ_per_bit, &r->prefill);
    /* Decode: every token crosses all pp stages; with pp micro-batches in flight the stages stay
     * busy and the whole batch advances one token per pp stage-times (+ the step's overhead). */
    /* eager: what CUDA graphs remove is the kernel dispatch; through it the GPU runs the stream of
     * kernels (src/infer/power.c), through the rest it waits on the host */
    const double dispatch = p->cuda_graphs ? 0.0 : fmax(0.0, step_over - e->step_overhead_graphs_s);
    phase_of(&dec, (double)p->pp, mbs, step_over, dispatch, g, dt, wait_W, eo.mem_pJ_per_bit, &r->decode);
    r->ttft_s = r->prefill.total_s;
    r->tpot_s = r->decode.total_s;
    /* a static batch computes every sequence until the longest stops (HF generate's loop); the
     * tokens it delivers are the responses' own, batch x out */
    r->e2e_s = r->ttft_s + (double)(steps - 1) * r->tpot_s;
    const double gpus = (double)p->tp * p->pp, toks = (double)p->batch * (double)p->out;
    r->output_tokens_per_s_per_replica = toks / r->e2e_s;
    r->output_tokens_per_s_per_gpu = r->output_tokens_per_s_per_replica / gpus;
    r->output_tokens_per_s = r->output_tokens_per_s_per_replica * p->dp;
    r->requests_per_s = (double)p->batch * p->dp / r->e2e_s;
    r->power_w = (r->prefill.power_w * r->ttft_s + r->decode.power_w * (r->e2e_s - r->ttft_s)) / r->e2e_s;
    r->energy_j_per_output_token = r->power_w * gpus * r->e2e_s / toks;

    assume(r, "engine %s %s profile (data/engines.json): overheads and kernel fractions ASSUMED there",
           e->key, e->version);
    assume(r, "fixed batch: all %lld prompts prefilled before the first decode step (TTFT is the last one's)",
           (long long)p->batch);
    if (steps > p->out)
        assume(r, "static batch: %lld decode steps (its longest response), tokens counted at out = %lld per sequence",
               (long long)steps, (long long)p->out);
    assume(r, "decode priced at the mean context in + %s/2 = %.0f tokens", steps > p->out ? "longest" : "out", s.context);
    if (p->weights >= MP_WQ_INT8 || (fp8_w && dt != MP_DT_FP8))
        assume(r, "weights=%s weight-only: GEMMs at the %s rate, dequantization fused (not priced)",
               mp_infer_weights_name((mp_infer_weights)p->weights), mp_dtype_name(dt));
    if (p->weights == MP_WQ_FP4)
        assume(r, "fp4 GEMMs at the fp8 tensor rate (the catalog has no fp4 peak)");
    /* a GPU with no bf16 tensor rate (V100): priced at fp16, what vLLM's dtype=auto does below
     * compute capability 8.0 (vllm/config.py _get_and_verify_dtype: "Bfloat16 is only supported
     * on GPUs with compute capability of at least 8.0"; it casts to float16). Used to be silent. */
    if (dt == MP_DT_FP16 && p->weights == MP_WQ_BF16)
        assume(r, "weights=bf16 on %s (no bf16 tensor rate): computed in fp16, as vLLM's dtype=auto casts it", g->key);
    if (mp_model_is_moe(m))
        assume(r, "MoE routing uniform, busiest expert x %.2f of the mean", s.moe_load);
    if (!measured)
        assume(r, "GPU power points derived from the %.0f W TDP (no measurement)", g->tdp_W);
    const char *eager_src = NULL;
    const double eager_W = mp_infer_eager_power_w(g, &eager_src);
    if (dispatch > 0 && eager_W > 0 && r->decode.power_w <= fmin(g->tdp_W, eager_W) + 1e-9)
        assume(r, "eager decode at the %s's measured %.1f W (%s)", g->key, eager_W, eager_src);
    assume(r, "power: GPUs only (no host, switches or PUE)");
    if (measured_mem)
        assume(r, "device memory %.2f GiB and runtime %.2f GiB as %s's log of %s reports them", r->capacity_bytes / 1073741824.0,
               r->runtime_bytes / 1073741824.0, e->key, g->key);
    return MP_OK;
}
