/* tests/test_cases.c — the practitioners' cases of ../shared/validation/cases.md, each a
 * configuration someone ran where an estimator went wrong:
 *  C1 no flash attention + fp32 logits: OOM on a V100 that a flash-assuming tool missed;
 *  C2 Llama-2-7B peak memory on 8 x H800 (Megatron, distributed optimizer): 4 measured rows in
 *     tests/data/c2_memory.csv, per pipeline stage;
 *  C3 selective recompute saves ~nothing with flash attention, a lot without;
 *  C4 the fp32 upcast of logits at vocab 128K is visible in the memory breakdown.
 * Expected numbers are derived by hand beside each assertion. */
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

#define GIB 1073741824.0
#define MIB 1048576.0



static void assert_bytes_(double got, double want, const char *what, int line)
{
    if (!(fabs(got - want) < 0.5))
        fail_msg("line %d: %s = %.3f bytes, expected %.3f", line, what, got, want);
}
#define assert_bytes(got, want) assert_bytes_((got), (want), #got, __LINE__)

/* Parse and resolve a plan string and predict it; fails the test on any error. */
static void predict(const mp_model *m, const char *gpu, int64_t gpus, const char *plan,
                    mp_plan *p, mp_estimate *e)
{
    mp_cluster c;
    mp_diag d = {0};
    if (mp_cluster_from_catalog(g_cat, gpu, gpus, 0, NULL, &c, &d) != MP_OK)
        fail_msg("cluster: %s", d.text);
    mp_plan_init_default(p);
    if (mp_plan_parse(plan, p, &d) != MP_OK || mp_plan_resolve(p, m, gpus, &d) != MP_OK)
        fail_msg("plan \"%s\": %s", plan, d.text);
    if (mp_estimate_plan(m, &c, p, NULL, e, &d) != MP_OK)
        fail_msg("estimate \"%s\": %s", plan, d.text);
    /* The breakdown adds up: the tensors to allocated, they and the runtime parts to total. */
    const mp_memory *mm = &e->memory;
    assert_close(mm->allocated, mm->weights + mm->gradients + mm->optimizer + mm->activations +
                                    mm->logits + mm->buffers, 1e-12);
    assert_close(mm->total, mm->allocated + mm->runtime + mm->nccl + mm->allocator_reserve, 1e-12);
}

static const mp_model *cat_model(const char *key)
{
    const mp_model *m = mp_catalog_model(g_cat, key);
    if (!m)
        fail_msg("catalog model %s missing", key);
    return m;
}

/* ---- C1 --------------------------------------------------------------------------------- */

/* NVIDIA/Megatron-LM issue 525: GPT-2-large-like, 36 layers, h 1280, 20 heads, seq 1024, vocab
 * 50304 (already padded), SwiGLU, Megatron GPT flags (LayerNorm, biases, learned positions,
 * tied embeddings, dropout on). The issue states ~771.1 M parameters but not the FFN width; we
 * take ffn_hidden = 3391, which gives (derivation):
 *   attention 4h^2 + 4h = 6,553,600 + 5,120 = 6,558,720
 *   FFN 3hf + 2f + h = 13,021,440 + 6,782 + 1,280 = 13,029,502
 *   LayerNorms 4h = 5,120;  layer = 19,593,342;  x36 = 705,360,312
 *   embedding (50304 + 1024) h = 65,699,840;  final LayerNorm 2h = 2,560
 *   total 771,062,712 = 771.1 M. (Megatron's SwiGLU default 2/3 * 4h = 3413 would give 774.1 M.) */
static mp_model c1_model(void)
{
    mp_model m;
    memset(&m, 0, sizeof m);
    strcpy(m.key, "c1-gpt2-large-swiglu");
    m.layers = 36;
    m.hidden = 1280;
    m.heads = 20;
    m.kv_heads = 20;
    m.head_dim = 64;
    m.ffn_hidden = 3391;
    m.glu = 1;
    m.vocab = 50304;
    m.vocab_pad_multiple = 1;
    m.tied_embeddings = 1;
    m.position = MP_POS_LEARNED;
    m.seq_len = 1024;
    m.rmsnorm = 0;
    m.bias = 1;
    m.dropout = 1;
    return m;
}

static void test_c1_no_flash_oom(void **state)
{
    (void)state;
    mp_model m = c1_model();
    mp_diag d = {0};
    assert_int_equal(mp_model_check(&m, &d), MP_OK);
    mp_param_count pc;
    mp_model_params(&m, 1, &pc);
    assert_int_equal(pc.total, 771062712LL);

    /* fp16, Adam, mb 4, gb 16, one V100 32 GB, no recompute, no flash attention. */
    mp_plan p;
    mp_estimate e;
    predict(&m, "v100-sxm2-32gb", 1, "mb=4,gb=16,precision=fp16,flash=0,recompute=none", &p, &e);
    print_message("C1: predicted %.2f GiB (weights %.2f grads %.2f optim %.2f activ %.2f logits "
                  "%.2f) of %.2f GiB; measured: OOM at 28.82 GiB + 786 MiB\n",
                  e.memory.total / GIB, e.memory.weights / GIB, e.memory.gradients / GIB,
                  e.memory.optimizer / GIB, e.memory.activations / GIB, e.memory.logits / GIB,
                  e.memory.capacity / GIB);
    assert_false(e.feasible);
    assert_true(e.memory.total > e.memory.capacity);
    assert_true(e.nreasons >= 1);
    assert_non_null(strstr(e.bottleneck, "memory"));
    /* The run had 28.82 GiB allocated and asked for 786 MiB more when it failed: the peak is at
     * least their sum. */
    assert_true(e.memory.total >= 28.82 * GIB + 786.0 * MIB);

    /* The attention scores, softmax and dropout mask: 5 a s^2 b = 5 * 20 * 1024^2 * 4
     * = 419,430,400 bytes (0.42 GB) per layer; x36 = 15,099,494,400 (~15 GB, within 5%). */
    mp_layer_act la;
    mp_layer_activation(&m, 1024, 4, 1, 0, 1, 0, MP_RC_NONE, &la);
    assert_bytes(la.attention_s2_bytes, 419430400.0);
    assert_close(36.0 * la.attention_s2_bytes, 15e9, 0.05);
    /* One micro-batch in flight (pp = 1), no recompute: activations = 36 layers' stored bytes.
     * Per layer: replicated 10 sbh (sbh = 1024*4*1280 = 5,242,880) = 52,428,800; Q, K, V, O
     * input 8 sbh = 41,943,040; SwiGLU 6 s b f = 6 * 4096 * 3391 = 83,337,216; s^2 terms
     * 419,430,400; sum 597,139,456; x36 = 21,497,020,416. */
    assert_bytes(la.stored_bytes, 597139456.0);
    assert_bytes(e.memory.activations, 21497020416.0);
    assert_true(e.memory.activations >= 36.0 * la.attention_s2_bytes);

    /* Logits: at least the fp32 copy b s V 4 = 4 * 1024 * 50304 * 4 = 824,180,736 bytes
     * = 786.0 MiB, the failing request. meshplan counts 2 + 4 + 4 bytes per logit. */
    assert_true(e.memory.logits >= 824180736.0);
    assert_bytes(824180736.0 / MIB, 786.0);
    assert_bytes(e.memory.logits, 10.0 * 4 * 1024 * 50304);

    /* The analysis tool's mistake: with flash attention assumed the s^2 terms vanish (only
     * 4 a s b = 327,680 bytes of row statistics per layer remain), activations drop to
     * 36 * 178,036,736 = 6,409,322,496 bytes (30% of the above) and the plan looks feasible. */
    mp_estimate ef;
    predict(&m, "v100-sxm2-32gb", 1, "mb=4,gb=16,precision=fp16,flash=1,recompute=none", &p, &ef);
    print_message("C1 with flash assumed: %.2f GiB (activations %.2f GiB)\n", ef.memory.total / GIB,
                  ef.memory.activations / GIB);
    assert_bytes(ef.memory.activations, 6409322496.0);
    assert_true(ef.memory.activations < 0.35 * e.memory.activations);
    assert_true(ef.feasible);
}

/* ---- C2 --------------------------------------------------------------------------------- */


/* Replace every occurrence of `from` by `to` (same length) in place. */
static void replace_same_len(char *s, const char *from, const char *to)
{
    size_t n = strlen(from);
    assert_int_equal(n, strlen(to));
    for (char *p = strstr(s, from); p; p = strstr(p + n, from))
        memcpy(p, to, n);
}

static double c2_median(const char *csv, size_t len, const char *label)
{
    mp_validation v;
    mp_diag d = {0};
    mp_status st = mp_validate_csv(g_cat, csv, len, "c2_memory.csv", NULL, &v, &d);
    if (st != MP_OK)
        fail_msg("validate: %s", d.text);
    if (v.nskips)
        fail_msg("%s: row %s skipped: %s", label, v.skips[0].id, v.skips[0].reason);
    assert_int_equal(v.nrows, 4);
    for (size_t i = 0; i < v.nrows; i++) {
        assert_string_equal(v.rows[i].metric, "mem_gib");
        assert_true(isfinite(v.rows[i].predicted));
        print_message("C2 %s %-12s measured %5.1f GiB predicted %6.2f GiB error %+6.1f%%  (%s)\n",
                      label, v.rows[i].id, v.rows[i].measured, v.rows[i].predicted,
                      v.rows[i].error_pct, v.rows[i].assumed);
    }
    mp_val_stats s;
    mp_validation_stats(&v, MP_VAL_MEMORY, "megatron_pr482", &s);
    assert_int_equal(s.n, 4);
    print_message("C2 %s: median |error| %.1f%%, max %.1f%%\n", label, s.median_abs_error_pct,
                  s.max_abs_error_pct);
    mp_validation_free(&v);
    return s.median_abs_error_pct;
}

/* Megatron-LM PR 482's README table (cases.md C2). The table's "GB" is read as GiB (PyTorch's
 * max_memory_allocated, which Megatron divides by powers of 1024); read as 10^9 bytes the rows
 * are 7% lower. Sequence length is not stated: both are run, and 2048 reproduces the table
 * better. At the time of writing (sp and recompute not stated: sp on for tp > 1, none assumed):
 *   seq 2048: -6.8%, -18.2%, -11.0%, -36.0%   median 14.6%   (kept: tests/data/c2_memory.csv)
 *   seq 4096: +18.2%, +12.8%, +21.3%, -20.9%  median 19.6%
 * With sp = 0 on the TP rows seq 2048 gives -6.8, -11.0, -11.0, -11.6 (median 11.0%): the TP=8
 * row fits much better without sequence parallelism, a hint that those runs had it off. */
#define C2_MEDIAN_BOUND_PCT 15.0

static void test_c2_llama2_7b_memory(void **state)
{
    (void)state;
    size_t len = 0;
    char *csv = slurp(MESHPLAN_SOURCE_DIR "/tests/data/c2_memory.csv", &len);
    assert_non_null(csv);
    double med2048 = c2_median(csv, len, "seq 2048");
    replace_same_len(csv, ",32000,2048,", ",32000,4096,");
    double med4096 = c2_median(csv, len, "seq 4096");
    free(csv);
    assert_true(med2048 <= C2_MEDIAN_BOUND_PCT);
    if (!(med2048 < med4096))
        fail_msg("seq 4096 now reproduces C2 better (%.1f%% vs %.1f%%): revisit tests/data/c2_memory.csv",
                 med4096, med2048);

    /* Memory is per stage (the reviewer's 20 GB / 50 GB remark): the PP = 2 row. 1F1B keeps
     * pp - i micro-batches in flight on stage i: stage 0 holds 2 micro-batches of its 16 layers,
     * stage 1 one, so exactly twice the activations; only the last stage holds the logits
     * (T V 10 = 2 * 2048 * 32000 * 10 = 1,310,720,000 bytes). */
    mp_plan p;
    mp_estimate e;
    predict(cat_model("llama2-7b"), "h800-sxm5-80gb", 8, "pp=2,dp=4,mb=2,gb=2048,seq=2048,zero=1",
            &p, &e);
    assert_int_equal(e.nstages, 2);
    assert_close(e.per_stage[0].activations, 2.0 * e.per_stage[1].activations, 1e-12);
    assert_true(e.per_stage[0].logits == 0.0);
    assert_bytes(e.per_stage[1].logits, 1310720000.0);
    assert_true(e.per_stage[0].total != e.per_stage[1].total);
    assert_true(e.memory.total == fmax(e.per_stage[0].total, e.per_stage[1].total));
}

/* ---- C3 --------------------------------------------------------------------------------- */

/* Llama-2-7B (no dropout), tp = 1, s = 4096, b = 1: sbh = 16,777,216.
 * Without flash: replicated 8 sbh 134,217,728 + Q,K,V,O input 8 sbh 134,217,728 + SwiGLU
 * 6 s b f = 6 * 4096 * 11008 = 270,532,608 = 538,968,064, plus softmax output 2 a s^2 b
 * = 2 * 32 * 4096^2 = 1,073,741,824: 1,612,709,888. Selective drops the latter: saves 66.6%.
 * With flash: 538,968,064 + row statistics 4 a s b = 524,288 = 539,492,352, and selective
 * recompute has nothing to drop: saves 0%. (Issue 1225 measured 2.3% of the total.) */
static void test_c3_selective_with_flash(void **state)
{
    (void)state;
    const mp_model *m = cat_model("llama2-7b");
    mp_layer_act none, sel;
    mp_layer_activation(m, 4096, 1, 1, 0, 1, 0, MP_RC_NONE, &none);
    mp_layer_activation(m, 4096, 1, 1, 0, 1, 0, MP_RC_SELECTIVE, &sel);
    assert_bytes(none.stored_bytes, 1612709888.0);
    assert_bytes(sel.stored_bytes, 538968064.0);
    assert_true(1.0 - sel.stored_bytes / none.stored_bytes > 0.30);
    mp_layer_activation(m, 4096, 1, 1, 0, 1, 1, MP_RC_NONE, &none);
    mp_layer_activation(m, 4096, 1, 1, 0, 1, 1, MP_RC_SELECTIVE, &sel);
    assert_bytes(none.stored_bytes, 539492352.0);
    assert_true(1.0 - sel.stored_bytes / none.stored_bytes < 0.03);

    /* Through the estimator, on one H100 (it need not fit; the breakdown is what counts). */
    mp_plan p;
    mp_estimate e0, e1;
    predict(m, "h100-sxm5-80gb", 1, "seq=4096,flash=1,recompute=none", &p, &e0);
    predict(m, "h100-sxm5-80gb", 1, "seq=4096,flash=1,recompute=selective", &p, &e1);
    double save_act = 1.0 - e1.memory.activations / e0.memory.activations;
    double save_tot = 1.0 - e1.memory.total / e0.memory.total;
    print_message("C3 flash on: selective saves %.2f%% of activations, %.2f%% of the total\n",
                  100 * save_act, 100 * save_tot);
    assert_true(save_act < 0.03 && save_tot < 0.03);
    predict(m, "h100-sxm5-80gb", 1, "seq=4096,flash=0,recompute=none", &p, &e0);
    predict(m, "h100-sxm5-80gb", 1, "seq=4096,flash=0,recompute=selective", &p, &e1);
    save_act = 1.0 - e1.memory.activations / e0.memory.activations;
    print_message("C3 flash off: selective saves %.2f%% of activations\n", 100 * save_act);
    assert_true(save_act > 0.30);
    /* 32 layers x 1,073,741,824 bytes of softmax output saved. */
    assert_bytes(e0.memory.activations - e1.memory.activations, 32.0 * 1073741824.0);
}

/* ---- C4 --------------------------------------------------------------------------------- */

/* Llama-3.1-8B (V = 128,256), seq 8192, mb 1, FSDP on 8 H100s. The logits take
 * T V 10 = 8192 * 128256 * 10 = 10,506,731,520 bytes: the bf16 output 2 bytes plus the fp32
 * upcast and its gradient 4 + 4. The fp32 part, 8 T V = 8,405,385,216 bytes = 7.83 GiB, matches
 * transformers PR 33902's 18.5 - 10.6 = 7.9 GiB (with vs without the upcast) within 5%, and
 * exceeds 2 b s V 4. One layer's stored activations (flash, tp 1, no dropout): sbh =
 * 33,554,432; 8 sbh 268,435,456 + Q 2 sbh 67,108,864 + K,V 4 s kvd = 4 * 8192 * 1024
 * 33,554,432 + O input 67,108,864 + SwiGLU 6 s f = 704,643,072 + stats 4 a s = 1,048,576
 * = 1,141,899,264: the logits are 9.2x one layer. */
/* A GEMM wave costs a whole tile even when its edge tile is partial (estimate.c gemm_s): on one
 * GPU (no communication to hide), one more token per sequence never shortens the step, and a
 * sequence that adds a partial 128-row tile costs at least as much as its share of a full one. */
static void test_partial_tiles_cost_whole(void **state)
{
    (void)state;
    const mp_model *m = cat_model("llama3-8b");
    mp_plan p;
    mp_estimate e[3];
    const char *plans[3] = {"mb=1,gb=4,seq=4096", "mb=1,gb=4,seq=4097", "mb=1,gb=4,seq=4224"};
    for (int i = 0; i < 3; i++)
        predict(m, "h100-sxm5-80gb", 1, plans[i], &p, &e[i]);
    assert_true(e[1].step_s >= e[0].step_s);
    assert_true(e[2].step_s >= e[1].step_s);
}

/* attn_kernel=flex: the attention core at 3.5 / (1/0.90 + 2.5/0.85) of the FA2-class rate
 * (plan.h); on one GPU without recompute only the attention core's time changes, by
 * (1/0.8637 - 1) x its FA2 time (= attention_frac x compute). */
static void test_flex_attention_rate(void **state)
{
    (void)state;
    const mp_model *m = cat_model("llama3-8b");
    mp_plan p;
    mp_estimate fa2, flex;
    predict(m, "h100-sxm5-80gb", 1, "mb=1,gb=4,seq=8192", &p, &fa2);
    predict(m, "h100-sxm5-80gb", 1, "mb=1,gb=4,seq=8192,attn_kernel=flex", &p, &flex);
    const double r = 3.5 / (1.0 / 0.90 + 2.5 / 0.85);
    assert_close(r, 0.86371, 1e-4); /* 3.5 / (1.11111 + 2.94118) */
    assert_close(flex.time.compute - fa2.time.compute, fa2.attention_frac * fa2.time.compute * (1.0 / r - 1.0), 1e-9);
    assert_close(flex.model_flops_per_step, fa2.model_flops_per_step, 1e-15);
}

/* fsdp=2 (FSDP2 per-parameter sharding): each gather is copied out of the all-gather buffer,
 * read and written once, on the compute stream. Llama 3 8B on 8 H100 with ZeRO-3, 2
 * micro-batches, no pipeline: each layer is gathered twice per micro-batch (forward, backward),
 * the root module (embedding, final norm, LM head) once, so the step grows by
 * 2 x (2 x 32 x P_layer + P_root) x 2 x 2 B / 3.04e12 B/s (the H100's measured STREAM bandwidth)
 * = 2 x (2 x 6.98e9 + 1.05e9) x 4 / 3.04e12 = 39.5 ms, all of it compute; the gathers stay
 * hidden, so nothing else changes. On one rank per shard group nothing is gathered: no copy. */
static void test_fsdp2_copy_out(void **state)
{
    (void)state;
    assert_close(mp_fsdp_copy_out_s(1e9, 2.0, 2e12), 2e-3, 1e-12);
    assert_true(mp_fsdp_copy_out_s(0.0, 2.0, 2e12) == 0.0);
    assert_true(mp_fsdp_copy_out_s(1e9, 2.0, 0.0) == 0.0);
    assert_true(mp_fsdp_copy_out_s(NAN, 2.0, 2e12) == 0.0);
    const mp_model *m = cat_model("llama3-8b");
    mp_param_count pc;
    mp_model_params(m, 1, &pc);
    assert_close((double)pc.total, 8.03e9, 0.002);
    mp_plan p;
    mp_estimate flat, fsdp2;
    predict(m, "h100-sxm5-80gb", 8, "zero=3,mb=1,gb=16,seq=8192", &p, &flat);
    predict(m, "h100-sxm5-80gb", 8, "zero=3,mb=1,gb=16,seq=8192,fsdp=2", &p, &fsdp2);
    assert_int_equal(fsdp2.microbatches, 2);
    const double root = (double)(pc.embedding + pc.final_norm + pc.lm_head);
    assert_close(root, 2.0 * 128256.0 * 4096.0 + 4096.0, 1e-12);
    const double want = 2.0 * (2.0 * 32.0 * (double)pc.per_layer + root) * 2.0 * 2.0 / 3.04e12;
    assert_close(want, 0.0395, 0.002);
    assert_close(fsdp2.step_s - flat.step_s, want, 1e-9);
    assert_close(fsdp2.time.compute - flat.time.compute, want, 1e-9);
    assert_close(fsdp2.microbatches * fsdp2.parts.fsdp_copy_out_s, want, 1e-9);
    assert_close(fsdp2.time.dp_comm_exposed, flat.time.dp_comm_exposed, 1e-12);
    /* the same tensors; FSDP2's deterministic frees leave less reserve (runtime.c) */
    assert_true(fsdp2.memory.allocated == flat.memory.allocated);
    assert_true(fsdp2.memory.total <= flat.memory.total);
    assert_true(flat.parts.fsdp_copy_out_s == 0.0);
    mp_estimate one;
    predict(m, "h100-sxm5-80gb", 8, "tp=8,zero=3,fsdp=2,mb=1,gb=2,seq=8192", &p, &one);
    assert_true(one.parts.fsdp_copy_out_s == 0.0);
}

static void test_c4_logits_upcast(void **state)
{
    (void)state;
    const mp_model *m = cat_model("llama3.1-8b");
    assert_int_equal(m->vocab, 128256);
    mp_plan p;
    mp_estimate e;
    predict(m, "h100-sxm5-80gb", 8, "seq=8192,mb=1,zero=3", &p, &e);
    const double bsV = 8192.0 * 128256.0;
    assert_bytes(e.memory.logits, 10.0 * bsV);
    assert_bytes(e.memory.logits, 10506731520.0);
    assert_true(e.memory.logits >= 2.0 * bsV * 4.0);
    assert_close(e.memory.logits - 2.0 * bsV, 7.9 * GIB, 0.05);
    mp_layer_act la;
    mp_layer_activation(m, 8192, 1, 1, 0, 1, 1, MP_RC_NONE, &la);
    assert_bytes(la.stored_bytes, 1141899264.0);
    assert_true(e.memory.logits > la.stored_bytes);
    print_message("C4: logits %.2f GiB vs one layer's activations %.2f GiB\n",
                  e.memory.logits / GIB, la.stored_bytes / GIB);

    /* With pipeline stages the logits sit on the last stage only; TP splits the vocabulary. */
    predict(m, "h100-sxm5-80gb", 8, "pp=2,seq=8192,mb=1", &p, &e);
    assert_true(e.per_stage[0].logits == 0.0);
    assert_bytes(e.per_stage[1].logits, 10.0 * bsV);
    predict(m, "h100-sxm5-80gb", 8, "tp=8,seq=8192,mb=1", &p, &e);
    assert_bytes(e.memory.logits, 10.0 * bsV / 8.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_c1_no_flash_oom),
        cmocka_unit_test(test_c2_llama2_7b_memory),
        cmocka_unit_test(test_c3_selective_with_flash),
        cmocka_unit_test(test_c4_logits_upcast),
        cmocka_unit_test(test_partial_tiles_cost_whole),
        cmocka_unit_test(test_flex_attention_rate),
        cmocka_unit_test(test_fsdp2_copy_out),
    };
    return cmocka_run_group_tests(tests, catalog_setup, catalog_teardown);
}
