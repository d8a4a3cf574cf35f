/* tests/test_moe.c — mixture-of-experts, multi-head latent attention, long context and FP8:
 * hand-derived golden values (the derivation beside each), published parameter counts and
 * properties of the estimator.
 *  - all-to-all bytes per token for a given top-k, hidden size and precision;
 *  - the all-to-all and CP bytes one GPU sends per layer in a whole plan;
 *  - activated / total parameters of DeepSeek-V3 (DeepSeek-AI 2024: 37B of 671B) and Mixtral
 *    8x7B (Jiang et al. 2024: 12.9B of 46.7B), and DeepSeek-V3's FLOPs per token against the
 *    figure Megatron-Bridge 25.11 published (557 TFLOP/s at 2139 tokens/s per GPU);
 *  - properties: at fixed GPUs, more experts with the same top-k never lower memory per GPU
 *    and never change FLOPs per token; the EP all-to-all costs more across the fabric than in
 *    NVLink; load (capacity factor, imbalance) only adds time; attention's share grows with
 *    the sequence; ring CP hides what all-gather CP exposes.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"

#include "meshplan/meshplan.h"

static const mp_model *cat_model(const char *key)
{
    const mp_model *m = mp_catalog_model(g_cat, key);
    if (!m)
        fail_msg("catalog model %s missing", key);
    return m;
}

/* Resolve plan text for model m on n GPUs of gpu and estimate; fails the test on any error. */
static void predict(const mp_model *m, const char *gpu, int64_t n, const char *plan, mp_plan *p,
                    mp_estimate *e)
{
    mp_diag d = {0};
    mp_cluster c;
    if (mp_cluster_from_catalog(g_cat, gpu, n, 0, NULL, &c, &d) != MP_OK)
        fail_msg("cluster: %s", d.text);
    mp_plan_init_default(p);
    if (mp_plan_parse(plan, p, &d) != MP_OK || mp_plan_resolve(p, m, n, &d) != MP_OK)
        fail_msg("plan %s: %s", plan, d.text);
    if (mp_estimate_plan(m, &c, p, NULL, e, &d) != MP_OK)
        fail_msg("estimate: %s", d.text);
}

/* ---- all-to-all bytes ---------------------------------------------------------------------- */

static void test_dispatch_bytes_per_token(void **state)
{
    (void)state;
    /* Mixtral 8x7B: top-2, h 4096: 2 copies x 4096 values x 2 bytes (bf16) = 16,384 bytes;
     * fp8 dispatch 1 byte each: 8,192. */
    const mp_model *mx = cat_model("mixtral-8x7b");
    assert_true(mp_moe_dispatch_bytes_per_token(mx, 2.0) == 16384.0);
    assert_true(mp_moe_dispatch_bytes_per_token(mx, 1.0) == 8192.0);
    /* DeepSeek-V3: top-8, h 7168, fp8: 8 x 7168 x 1 = 57,344 bytes. */
    assert_true(mp_moe_dispatch_bytes_per_token(cat_model("deepseek-v3"), 1.0) == 57344.0);
    /* A dense model sends nothing. */
    assert_true(mp_moe_dispatch_bytes_per_token(cat_model("llama3-8b"), 2.0) == 0.0);
}

/* What one GPU sends per MoE layer (forward + backward) in a whole plan. Mixtral 8x7B on 8
 * H100, ep 8, etp 1, tp 1, one 4096-token sequence per micro-batch: T = 4096 tokens leave the
 * router of each GPU, 7/8 of their copies go to other GPUs. Forward dispatch + combine and
 * backward combine-grad + dispatch-grad, four messages of T x 16,384 bytes in bf16:
 *   4096 x 7/8 x 4 x 16,384 = 234,881,024 bytes.
 * With fp8_comm the forward dispatch is 8,192 bytes per token, the other three stay bf16:
 *   4096 x 7/8 x (8,192 + 3 x 16,384) = 205,520,896 bytes. */
static void test_a2a_bytes_per_layer(void **state)
{
    (void)state;
    const mp_model *mx = cat_model("mixtral-8x7b");
    mp_plan p;
    mp_estimate *e = malloc(sizeof *e);
    predict(mx, "h100-sxm5-80gb", 8, "ep=8,etp=1,mb=1,gb=8,seq=4096", &p, e);
    assert_true(e->parts.moe_layer_ep_bytes == 234881024.0);
    assert_true(e->parts.moe_layer_ep_fwd_s > 0 && e->time.ep_comm > 0);
    predict(mx, "h100-sxm5-80gb", 8, "ep=8,etp=1,mb=1,gb=8,seq=4096,precision=fp8,fp8_comm=1", &p, e);
    assert_true(e->parts.moe_layer_ep_bytes == 205520896.0);
    /* ep = 1: no all-to-all. */
    predict(mx, "h100-sxm5-80gb", 8, "mb=1,gb=8,seq=4096", &p, e);
    assert_true(e->parts.moe_layer_ep_bytes == 0.0 && e->time.ep_comm == 0.0);
    free(e);
}

/* CP: each GPU holds T = b s / cp tokens' K and V: Llama 3 8B, GQA 8 x 128 = 1024 columns each,
 * tp 1, cp 4, seq 32768, mb 1: T = 8192, chunk = 8192 x 2048 x 2 bytes = 33,554,432.
 * Ring: forward passes the chunk cp-1 = 3 times, backward K/V and dK/dV (2 chunks) 3 times:
 *   9 x 33,554,432 = 301,989,888 bytes per layer.
 * All-gather: the gather sends its chunk to 3 ranks, the reduce-scatter of dK/dV 3 chunks:
 *   6 x 33,554,432 = 201,326,592. tp 2 halves the chunk (K/V heads split). */
static void test_cp_bytes_per_layer(void **state)
{
    (void)state;
    const mp_model *m = cat_model("llama3-8b");
    mp_plan p;
    mp_estimate *e = malloc(sizeof *e);
    predict(m, "h100-sxm5-80gb", 8, "cp=4,mb=1,gb=2,seq=32768", &p, e);
    assert_true(e->parts.layer_cp_bytes == 301989888.0);
    predict(m, "h100-sxm5-80gb", 8, "cp=4,mb=1,gb=2,seq=32768,cp_algo=allgather", &p, e);
    assert_true(e->parts.layer_cp_bytes == 201326592.0);
    predict(m, "h100-sxm5-80gb", 8, "tp=2,cp=4,mb=1,gb=1,seq=32768", &p, e);
    assert_true(e->parts.layer_cp_bytes == 301989888.0 / 2);
    free(e);
}

/* Ring CP hides the K/V exchange behind attention at long sequences; all-gather does not. */
static void test_cp_ring_hides_allgather_exposes(void **state)
{
    (void)state;
    const mp_model *m = cat_model("llama3-8b");
    mp_plan p;
    mp_estimate *ring = malloc(sizeof *ring), *ag = malloc(sizeof *ag);
    predict(m, "h100-sxm5-80gb", 16, "tp=2,cp=8,mb=1,gb=1,seq=131072", &p, ring);
    predict(m, "h100-sxm5-80gb", 16, "tp=2,cp=8,mb=1,gb=1,seq=131072,cp_algo=allgather", &p, ag);
    assert_true(ring->time.cp_comm == 0.0); /* step comm < step attention at 16K tokens/rank */
    assert_true(ag->time.cp_comm > 0.0);
    assert_true(ag->step_s > ring->step_s);
    free(ring);
    free(ag);
}

/* ---- parameters ---------------------------------------------------------------------------- */

/* DeepSeek-V3 (deepseek-ai config.json; DeepSeek-AI 2024 Sec. 2.1, 4.2), by hand:
 *  MLA attention per layer: W_DQ 7168 x 1536 = 11,010,048; W_UQ 1536 x 128 x (128+64) =
 *   37,748,736; W_DKV 7168 x (512+64) = 4,128,768; W_UKV 512 x 128 x (128+128) = 16,777,216;
 *   W_O 128 x 128 x 7168 = 117,440,512; matmuls 187,105,280 + latent norms 1536 + 512
 *   = 187,107,328. Two RMSNorms 14,336.
 *  Dense layer (3): + FFN 3 x 7168 x 18432 = 396,361,728 -> 583,483,392.
 *  Expert 3 x 7168 x 2048 = 44,040,192; router 7168 x 256 = 1,835,008.
 *  MoE layer (58): 187,107,328 + 14,336 + 1,835,008 + (256 + 1 shared) x 44,040,192
 *   = 11,507,286,016.
 *  Embedding = head = 129280 x 7168 = 926,679,040; final norm 7168.
 *  Total without MTP: 3 x 583,483,392 + 58 x 11,507,286,016 + 2 x 926,679,040 + 7168
 *   = 671,026,404,352 (published: 671B).
 *  Activated: MoE layer 187,107,328 + 14,336 + 1,835,008 + 9 x 44,040,192 = 585,318,400;
 *   58 x that + 3 x 583,483,392 + 1,853,358,080 + 7168 = 37,552,282,624 (published: 37B;
 *   the 0.55B over it is within the rounding of "37B" to 1.5%).
 *  MTP module: 2 norms 14,336 + projection 2 x 7168^2 = 102,760,448 + one MoE layer
 *   = 11,610,060,800. */
static void test_params_deepseek_v3(void **state)
{
    (void)state;
    const mp_model *m = cat_model("deepseek-v3");
    mp_param_count pc;
    mp_model_params(m, 1, &pc);
    assert_int_equal(pc.attention_per_layer, 187107328);
    assert_int_equal(pc.per_layer, 583483392);
    assert_int_equal(pc.expert, 44040192);
    assert_int_equal(pc.router_per_layer, 1835008);
    assert_int_equal(pc.moe_per_layer, 11507286016LL);
    assert_int_equal(pc.dense_layers, 3);
    assert_int_equal(pc.moe_layers, 58);
    assert_int_equal(pc.mtp, 11610060800LL);
    assert_int_equal(pc.total - pc.mtp, 671026404352LL);
    assert_int_equal(pc.activated, 37552282624LL);
    assert_int_equal(pc.routed_total, 58LL * 256 * 44040192);
    assert_close((double)(pc.total - pc.mtp), 671e9, 0.005);
    assert_close((double)pc.activated, 37e9, 0.02);
}

/* Mixtral 8x7B (Jiang et al. 2024, Table 1): attention 2 x 4096^2 + 2 x 4096 x 1024 =
 * 41,943,040; expert 3 x 4096 x 14336 = 176,160,768; router 4096 x 8 = 32,768; norms 8,192.
 * Layer: 41,943,040 + 8,192 + 32,768 + 8 x 176,160,768 = 1,451,270,144; x 32 =
 * 46,440,644,608 + embedding and head 2 x 32000 x 4096 = 262,144,000 + 4,096
 * = 46,702,792,704 (published 46.7B). Activated: 41,943,040 + 8,192 + 32,768 + 2 x 176,160,768
 * = 394,305,536; x 32 = 12,617,777,152 + 262,148,096 = 12,879,925,248 (published 12.9B). */
static void test_params_mixtral(void **state)
{
    (void)state;
    mp_param_count pc;
    mp_model_params(cat_model("mixtral-8x7b"), 1, &pc);
    assert_int_equal(pc.total, 46702792704LL);
    assert_int_equal(pc.activated, 12879925248LL);
    assert_close((double)pc.total, 46.7e9, 0.002);
    assert_close((double)pc.activated, 12.9e9, 0.002);
}

/* MLA geometry of DeepSeek-V3: per head query/key 128 + 64 = 192, value 128; K and V are
 * materialised for all 128 heads; the down-projections W_DQ and W_DKV (11,010,048 + 4,128,768
 * = 15,138,816) stay whole on every TP rank. */
static void test_mla_dims(void **state)
{
    (void)state;
    mp_attn_dims ad;
    mp_model_attn_dims(cat_model("deepseek-v3"), &ad);
    assert_int_equal(ad.mla, 1);
    assert_true(ad.qk_head == 192 && ad.v_head == 128);
    assert_true(ad.q_width == 128 * 192 && ad.k_width == 128 * 192);
    assert_true(ad.v_width == 128 * 128 && ad.o_width == 128 * 128);
    assert_true(ad.matmul_params == 187105280.0);
    assert_true(ad.tp_replicated_params == 15138816.0);
    /* GQA: Llama 3 8B, 32 x 128 queries, 8 x 128 keys and values. */
    mp_model_attn_dims(cat_model("llama3-8b"), &ad);
    assert_int_equal(ad.mla, 0);
    assert_true(ad.q_width == 4096 && ad.k_width == 1024 && ad.v_width == 1024);
}

/* FLOPs per token of DeepSeek-V3 at 4096 tokens.
 *  Activated matmuls per layer (router excluded): MoE 187,105,280 + 9 x 44,040,192 =
 *  583,467,008 — the dense layer's 187,105,280 + 396,361,728 is the same number. 61 layers +
 *  the MTP layer and its 2 x 7168^2 projection: 62 x 583,467,008 + 102,760,448 =
 *  36,277,714,944; x 2 = 72,555,429,888 forward.
 *  Attention (non-causal convention): 2 s (q width + o width) = 2 x 4096 x (24576 + 16384) =
 *  335,544,320 per layer, x 62 = 20,803,747,840; causal: s/2 keys on average ((s+1)/2
 *  exactly): 20,803,747,840 x 4097/8192 = 10,404,413,440.
 *  LM head: 2 x 7168 x 129280 = 1,853,358,080, twice (MTP) = 3,706,716,160.
 *  Causal forward + backward: 3 x (72,555,429,888 + 10,404,413,440 + 3,706,716,160) =
 *  259,999,678,464 — Megatron-Bridge 25.11 published 557 TFLOP/s at 2139 tokens/s per GPU
 *  (its causal, MTP-counting convention): 260.40e9 per token, 0.15% away. */
static void test_flops_deepseek_v3(void **state)
{
    (void)state;
    mp_flops fl;
    mp_model_flops(cat_model("deepseek-v3"), 4096, &fl);
    assert_true(fl.fwd_matmul_per_token == 72555429888.0);
    assert_true(fl.fwd_attn_per_token == 20803747840.0);
    assert_close(fl.fwd_attn_causal_per_token, 10404413440.0, 1e-12);
    assert_true(fl.fwd_lm_head_per_token == 3706716160.0);
    double causal = 3.0 * (fl.fwd_matmul_per_token + fl.fwd_attn_causal_per_token + fl.fwd_lm_head_per_token);
    assert_close(causal, 259999678464.0, 1e-12);
    assert_close(causal, 557e12 / 2139.0, 0.005);
}

/* Layout of MoE layers: DeepSeek's leading dense layers and a GShard-style every-other rule. */
static void test_moe_layout(void **state)
{
    (void)state;
    const mp_model *ds = cat_model("deepseek-v3");
    assert_int_equal(mp_model_moe_layers_in(ds, 0, 3), 0);
    assert_int_equal(mp_model_moe_layers_in(ds, 0, 4), 1);
    assert_int_equal(mp_model_moe_layers_in(ds, 0, 61), 58);
    assert_int_equal(mp_model_moe_layers_in(ds, 57, 10), 4); /* clipped at 61 */
    mp_model m = *cat_model("mixtral-8x7b");
    m.moe_layer_freq = 2;
    m.moe_dense_layers = 16; /* layers 1, 3, 5, ... 31 are MoE */
    assert_int_equal(mp_model_moe_layers_in(&m, 0, 32), 16);
    assert_int_equal(mp_model_moe_layers_in(&m, 0, 1), 0);
    assert_int_equal(mp_model_moe_layers_in(&m, 0, 2), 1);
    assert_int_equal(mp_model_moe_layers_in(&m, 10, 5), 2); /* 11, 13 */
    assert_int_equal(mp_model_moe_layers_in(cat_model("llama3-8b"), 0, 32), 0);
    mp_param_count pc;
    mp_model_params(&m, 1, &pc);
    assert_int_equal(pc.moe_layers, 16);
    assert_int_equal(pc.dense_layers, 16);
}

/* ---- properties ---------------------------------------------------------------------------- */

/* At fixed GPUs and plan, more experts with the same top-k: memory per GPU never drops (more
 * expert weights, gradients and optimizer states per GPU, a wider router) and FLOPs per token
 * never change (only the top-k experts run). 8 -> 512 experts, ep 8 on 8 H100s, and the same
 * with ZeRO-1 (expert optimizer states sharded over the expert-DP group) on 64 GPUs. */
static void test_more_experts_property(void **state)
{
    (void)state;
    const char *plans[] = {"ep=8,etp=1,mb=1,gb=8,seq=4096", "pp=2,ep=8,etp=1,zero=1,mb=1,gb=64,seq=4096"};
    const int64_t gpus[] = {8, 64};
    mp_estimate *e = malloc(sizeof *e);
    for (int k = 0; k < 2; k++) {
        double prev_mem = 0, flops = 0;
        for (int64_t E = 8; E <= 512; E *= 2) {
            mp_model m = *cat_model("mixtral-8x7b");
            m.moe_experts = E;
            m.moe_ffn_hidden = 1408;
            mp_plan p;
            predict(&m, "h100-sxm5-80gb", gpus[k], plans[k], &p, e);
            if (E > 8) {
                if (!(e->memory.total >= prev_mem))
                    fail_msg("%s: %lld experts: memory %.6g < %.6g", plans[k], (long long)E,
                             e->memory.total, prev_mem);
                for (int s = 0; s < e->nstages; s++)
                    assert_true(e->per_stage[s].total > 0);
                assert_true(e->model_flops_per_step / e->tokens_per_step == flops);
            }
            prev_mem = e->memory.total;
            flops = e->model_flops_per_step / e->tokens_per_step;
        }
    }
    free(e);
}

/* The EP all-to-all placed on the topology: ep 8 in one NVLink node vs ep 16 across two
 * (50 GB/s per GPU of NIC against 450 GB/s of NVLink): the cross-node group costs more per
 * MoE layer although each GPU sends about the same bytes. */
static void test_ep_placement(void **state)
{
    (void)state;
    const mp_model *m = cat_model("qwen3-30b-a3b");
    mp_plan p;
    mp_estimate *in = malloc(sizeof *in), *across = malloc(sizeof *across);
    predict(m, "h100-sxm5-80gb", 16, "ep=8,etp=1,mb=1,gb=16,seq=4096", &p, in);
    predict(m, "h100-sxm5-80gb", 16, "ep=16,etp=1,mb=1,gb=16,seq=4096", &p, across);
    assert_true(across->parts.moe_layer_ep_fwd_s > 3.0 * in->parts.moe_layer_ep_fwd_s);
    /* ep 16 spans two nodes: the bottleneck names the fabric when EP dominates. */
    assert_true(across->step_s > in->step_s);
    free(in);
    free(across);
}

/* Load: a capacity factor pads every expert to cf x its share; imbalance loads the busiest
 * GPU; both only add time and activation memory, and neither changes model FLOPs. */
static void test_load_factor(void **state)
{
    (void)state;
    const mp_model *m = cat_model("mixtral-8x7b");
    mp_plan p;
    mp_estimate *a = malloc(sizeof *a), *b = malloc(sizeof *b), *c = malloc(sizeof *c);
    predict(m, "h100-sxm5-80gb", 8, "ep=8,etp=1,mb=1,gb=8,seq=4096", &p, a);
    predict(m, "h100-sxm5-80gb", 8, "ep=8,etp=1,mb=1,gb=8,seq=4096,capacity_factor=1.25", &p, b);
    predict(m, "h100-sxm5-80gb", 8, "ep=8,etp=1,mb=1,gb=8,seq=4096,imbalance=1.5", &p, c);
    assert_true(a->moe_load == 1.0 && b->moe_load == 1.25 && c->moe_load == 1.5);
    assert_true(b->step_s > a->step_s && c->step_s > b->step_s);
    assert_true(b->memory.activations > a->memory.activations);
    assert_true(a->model_flops_per_step == c->model_flops_per_step);
    free(a);
    free(b);
    free(c);
}

/* Expert memory under expert-data-parallel sharding. Mixtral on 64 H100s, pp 2, ep 8,
 * etp 1, ZeRO-1: each GPU of a stage holds 8/8 = 1 expert of each of its 16 MoE layers:
 * 16 x 176,160,768 = 2,818,572,288 expert parameters (stage 0 and 1 alike). The expert-DP
 * group is 32 / 8 = 4 GPUs, so their Adam states take 12 / 4 = 3 bytes each, next to 2 bytes
 * of weights and 4 of fp32 gradients. */
static void test_expert_sharding(void **state)
{
    (void)state;
    const mp_model *m = cat_model("mixtral-8x7b");
    mp_plan p;
    mp_estimate *e = malloc(sizeof *e), *z0 = malloc(sizeof *z0);
    predict(m, "h100-sxm5-80gb", 64, "pp=2,ep=8,etp=1,zero=1,mb=1,gb=64,seq=4096", &p, e);
    assert_true(e->expert_params_per_gpu == 2818572288.0);
    predict(m, "h100-sxm5-80gb", 64, "pp=2,ep=8,etp=1,zero=0,mb=1,gb=64,seq=4096", &p, z0);
    /* ZeRO-1 saves 12 - 3 = 9 bytes on every expert parameter (and more on the rest). */
    assert_true(z0->memory.optimizer - e->memory.optimizer >= 9.0 * 2818572288.0);
    free(e);
    free(z0);
}

/* ---- long context -------------------------------------------------------------------------- */

/* Llama 3 8B: causal attention's FLOPs equal the layers' matmul FLOPs at
 * s* = 2 x matmul weights per layer / (q width + o width) = 2 x 218,103,808 / 8192 = 53,248
 * tokens. Attention's share of compute time rises with the sequence and passes one half
 * before s* on an H100 (attention runs slower than the GEMMs). */
static void test_attention_crossover(void **state)
{
    (void)state;
    const mp_model *m = cat_model("llama3-8b");
    mp_flops fl;
    mp_model_flops(m, 8192, &fl);
    assert_true(fl.attn_equal_seq == 53248.0);
    mp_plan p;
    mp_estimate *e = malloc(sizeof *e);
    double prev = 0;
    const int64_t seqs[] = {8192, 32768, 131072, 1048576};
    for (int i = 0; i < 4; i++) {
        char plan[128];
        snprintf(plan, sizeof plan, "tp=8,cp=16,mb=1,gb=1,seq=%lld,recompute=full", (long long)seqs[i]);
        predict(m, "h100-sxm5-80gb", 128, plan, &p, e);
        assert_true(e->attention_frac > prev);
        prev = e->attention_frac;
        if (seqs[i] == 8192)
            assert_true(e->attention_frac < 0.5);
        if (seqs[i] >= 131072)
            assert_true(e->attention_frac > 0.5);
    }
    /* At s = 1,048,576: causal attention 32 x 16,384 x (s+1)/2 = 2.748e11 FLOPs per token
     * forward, matmuls 1.396e10, head 1.05e9: attention is 94.8% of the FLOPs. */
    assert_close(e->attention_flops_frac, 2.748e11 / (2.748e11 + 1.396e10 + 1.05e9), 0.002);
    free(e);
}

/* Activation memory with flash attention is linear in the sequence: doubling seq at fixed
 * cp doubles the stored activations of a layer (no s^2 term), and cp divides them. */
static void test_long_context_memory(void **state)
{
    (void)state;
    const mp_model *m = cat_model("llama3-70b");
    mp_layer_act a, b, c;
    mp_layer_activation(m, 262144, 1, 8, 1, 8, 1, MP_RC_NONE, &a);
    mp_layer_activation(m, 524288, 1, 8, 1, 8, 1, MP_RC_NONE, &b);
    mp_layer_activation(m, 524288, 1, 8, 1, 16, 1, MP_RC_NONE, &c);
    assert_close(b.stored_bytes, 2.0 * a.stored_bytes, 1e-12);
    assert_close(c.stored_bytes, a.stored_bytes, 1e-12);
    assert_true(a.attention_s2_bytes == 0.0);
}

/* ---- FP8 ----------------------------------------------------------------------------------- */

/* fp8: the linear layers' GEMMs speed up, the LM head stays 16-bit (same time), the weights
 * grow by the fp8 copies (rowwise + columnwise + MXFP8 scales = 2 + 1/16 bytes per linear
 * weight), and fp8 MFU is against the fp8 peak. */
static void test_fp8(void **state)
{
    (void)state;
    const mp_model *m = cat_model("llama3-8b");
    mp_plan p;
    mp_estimate *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    predict(m, "h100-sxm5-80gb", 8, "mb=1,gb=8,seq=8192", &p, a);
    predict(m, "h100-sxm5-80gb", 8, "mb=1,gb=8,seq=8192,precision=fp8", &p, b);
    assert_true(b->parts.head_fwd_s == a->parts.head_fwd_s);
    assert_true(b->step_s < a->step_s);
    /* Weights other than the embedding and LM head: 32 layers x 218,112,000 + the final norm
     * 4096 = 6,979,588,096 (the norms, 0.004%, are counted with the linear weights); their
     * fp8 copies: x 2.0625 bytes = 14,395,400,448. */
    double extra = b->memory.weights - a->memory.weights;
    assert_close(extra, 14395400448.0, 1e-12);
    assert_true(b->peak_flops_per_s == 1.979e15);
    free(a);
    free(b);
}

/* ---- plan keys ------------------------------------------------------------------------------ */

static mp_status resolve(const mp_model *m, const char *text, int64_t gpus, mp_plan *p, mp_diag *d)
{
    mp_plan_init_default(p);
    mp_diag_clear(d);
    mp_status st = mp_plan_parse(text, p, d);
    if (st != MP_OK)
        return st;
    return mp_plan_resolve(p, m, gpus, d);
}

static void test_plan_keys(void **state)
{
    (void)state;
    const mp_model *mx = cat_model("mixtral-8x7b"), *ll = cat_model("llama3-8b");
    mp_plan p, q;
    mp_diag d = {0};
    assert_int_equal(resolve(mx, "tp=2,ep=4,etp=1,cp=2,cp_algo=allgather,capacity_factor=1.25,"
                                 "imbalance=1.1,precision=fp8,fp8_comm=1,attn_kernel=fa3,gb=8", 16, &p, &d), MP_OK);
    assert_int_equal(p.etp, 1);
    assert_int_equal(p.cp_algo, MP_CP_ALLGATHER);
    assert_true(p.moe_capacity_factor == 1.25 && p.moe_imbalance == 1.1);
    assert_int_equal(p.fp8_comm, 1);
    assert_int_equal(p.attn_kernel, MP_ATTN_FA3);
    /* The canonical string carries them and parses back to the same plan. */
    char buf[512];
    mp_plan_format(&p, buf, sizeof buf);
    assert_non_null(strstr(buf, "etp=1"));
    assert_non_null(strstr(buf, "cp_algo=allgather"));
    assert_int_equal(resolve(mx, buf, 16, &q, &d), MP_OK);
    assert_int_equal(q.etp, p.etp);
    assert_int_equal(q.cp_algo, p.cp_algo);
    assert_true(q.moe_capacity_factor == p.moe_capacity_factor && q.moe_imbalance == p.moe_imbalance);
    assert_int_equal(q.fp8_comm, 1);
    assert_int_equal(q.attn_kernel, MP_ATTN_FA3);
    /* etp defaults to tp for an MoE model (Megatron-Core); dense plans print as before. */
    assert_int_equal(resolve(mx, "tp=2,ep=4,gb=8", 8, &p, &d), MP_OK);
    assert_int_equal(p.etp, 2);
    assert_int_equal(resolve(ll, "tp=2,gb=8", 8, &p, &d), MP_OK);
    mp_plan_format(&p, buf, sizeof buf);
    assert_null(strstr(buf, "etp"));
    assert_null(strstr(buf, "cp_algo"));
    /* Bad ones, each named. */
    assert_int_equal(resolve(mx, "tp=2,ep=8,etp=2,gb=8", 8, &p, &d), MP_ERR_INPUT); /* 16 > 8 */
    assert_non_null(strstr(d.text, "etp*ep"));
    assert_int_equal(resolve(mx, "etp=3,gb=8", 6, &p, &d), MP_ERR_INPUT); /* 14336 % 3 */
    assert_non_null(strstr(d.text, "moe_ffn_hidden"));
    assert_int_equal(resolve(ll, "etp=2,gb=8", 8, &p, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "no experts"));
    assert_int_equal(resolve(mx, "fp8_comm=1,gb=8", 8, &p, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "fp8_comm"));
    assert_int_equal(resolve(mx, "cp_algo=tree", 8, &p, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "ring|allgather"));
    assert_int_equal(resolve(mx, "capacity_factor=0.05", 8, &p, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "capacity_factor"));
    assert_int_equal(resolve(mx, "imbalance=0.5", 8, &p, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "imbalance"));
    assert_int_equal(resolve(mx, "imbalance=x", 8, &p, &d), MP_ERR_INPUT);
    assert_int_equal(resolve(mx, "attn_kernel=fa4", 8, &p, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "fa2|fa3"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dispatch_bytes_per_token),
        cmocka_unit_test(test_a2a_bytes_per_layer),
        cmocka_unit_test(test_cp_bytes_per_layer),
        cmocka_unit_test(test_cp_ring_hides_allgather_exposes),
        cmocka_unit_test(test_params_deepseek_v3),
        cmocka_unit_test(test_params_mixtral),
        cmocka_unit_test(test_mla_dims),
        cmocka_unit_test(test_flops_deepseek_v3),
        cmocka_unit_test(test_moe_layout),
        cmocka_unit_test(test_more_experts_property),
        cmocka_unit_test(test_ep_placement),
        cmocka_unit_test(test_load_factor),
        cmocka_unit_test(test_expert_sharding),
        cmocka_unit_test(test_attention_crossover),
        cmocka_unit_test(test_long_context_memory),
        cmocka_unit_test(test_fp8),
        cmocka_unit_test(test_plan_keys),
    };
    return cmocka_run_group_tests(tests, catalog_setup, catalog_teardown);
}
