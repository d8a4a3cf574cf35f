/* tests/test_model.c — golden values of the model module (src/model/model.c): parameter counts,
 * FLOPs per token and activation bytes per layer, each derived by hand in the comment beside it
 * from the published formula it reproduces:
 *  - parameter counts: Llama 3 8B (8.03 B, Meta model card) and Megatron-LM 2021 Table 1 (GPT
 *    1.7 B ... 1 T, Narayanan et al. 2021, arXiv 2104.04473);
 *  - FLOPs: Narayanan et al. 2021 eq. (3), F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) with full
 *    recompute;
 *  - activations: Korthikanti et al. 2022 (arXiv 2205.05198) Table 2, 16-bit, dropout on, no
 *    fused attention, and its generalisations (GQA, GLU, flash attention) in meshplan/model.h.
 * Also: vocabulary padding, mp_model_check diagnostics and a 10^16-parameter model (no overflow).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"

#include "meshplan/catalog.h"
#include "meshplan/model.h"


/* Activation bytes must match the paper to the byte: all values here are integers far below
 * 2^53, so the formula and the code agree to well under half a byte. */
static void assert_bytes_(double got, double want, const char *what, int line)
{
    if (!(fabs(got - want) < 0.5))
        fail_msg("line %d: %s = %.3f bytes, expected %.3f", line, what, got, want);
}
#define assert_bytes(got, want) assert_bytes_((got), (want), #got, __LINE__)


static const mp_model *cat_model(const char *key)
{
    const mp_model *m = mp_catalog_model(g_cat, key);
    if (!m)
        fail_msg("catalog model %s missing", key);
    return m;
}

/* A Megatron GPT layer as in Korthikanti et al. 2022: MHA, FFN 4h with GELU, LayerNorm, biases,
 * dropout on, learned positions, tied embeddings. */
static mp_model gpt_model(int64_t layers, int64_t h, int64_t a, int64_t V, int64_t s)
{
    mp_model m;
    memset(&m, 0, sizeof m);
    strcpy(m.key, "test-gpt");
    m.layers = layers;
    m.hidden = h;
    m.heads = a;
    m.kv_heads = a;
    m.head_dim = h / a;
    m.ffn_hidden = 4 * h;
    m.glu = 0;
    m.vocab = V;
    m.vocab_pad_multiple = 1;
    m.tied_embeddings = 1;
    m.position = MP_POS_LEARNED;
    m.seq_len = s;
    m.rmsnorm = 0;
    m.bias = 1;
    m.dropout = 1;
    return m;
}

/* ---- parameter counts ---------------------------------------------------------------------- */

static void test_params_llama3_8b(void **state)
{
    (void)state;
    const mp_model *m = cat_model("llama3-8b");
    mp_param_count pc;
    mp_model_params(m, 1, &pc);
    /* h = 4096, a = 32, kv = 8, d = 128 (kv*d = 1024), f = 14336, V = 128256, L = 32, SwiGLU,
     * RMSNorm, no biases, untied embeddings.
     * attention: Q h*h 16,777,216 + K,V 2*4096*1024 8,388,608 + O h*h 16,777,216 = 41,943,040 */
    assert_int_equal(pc.attention_per_layer, 41943040);
    /* FFN: 3 * 4096 * 14336 = 176,160,768 */
    assert_int_equal(pc.ffn_per_layer, 176160768);
    /* norms: 2 RMSNorm weights of h = 8,192 */
    assert_int_equal(pc.norm_per_layer, 8192);
    /* layer: 41,943,040 + 176,160,768 + 8,192 = 218,112,000 */
    assert_int_equal(pc.per_layer, 218112000);
    assert_int_equal(pc.matmul_per_layer, 41943040 + 176160768);
    /* embedding = LM head = 128256 * 4096 = 525,336,576; final norm 4096 */
    assert_int_equal(pc.embedding, 525336576);
    assert_int_equal(pc.lm_head, 525336576);
    assert_int_equal(pc.final_norm, 4096);
    /* total: 32 * 218,112,000 = 6,979,584,000; + 2 * 525,336,576 + 4096 = 8,030,261,248
     * (published: 8.03 B) */
    assert_int_equal(pc.total, 8030261248LL);
}

static void test_params_llama2_7b(void **state)
{
    (void)state;
    mp_param_count pc;
    mp_model_params(cat_model("llama2-7b"), 1, &pc);
    /* h 4096, MHA, f 11008, V 32000, L 32: layer 4*4096^2 67,108,864 + 3*4096*11008 135,266,304
     * + 8,192 = 202,383,360; x32 = 6,476,267,520; + 2*32000*4096 262,144,000 + 4096
     * = 6,738,415,616 (the Hugging Face count of Llama-2-7b). */
    assert_int_equal(pc.total, 6738415616LL);
}

/* Megatron-LM 2021 Table 1. Per layer (LayerNorm, biases, FFN 4h): attention 4h^2 + 4h, FFN
 * 8h^2 + 5h, two LayerNorms 4h: 12h^2 + 13h. Plus embedding (V + s) h (learned positions,
 * tied LM head) and the final LayerNorm 2h. The paper's formula,
 * P = 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h)), is the same sum without the final norm, so
 * ours must equal it + 2h exactly. V = 51200, s = 2048. The names print the count to 2-4
 * significant digits (1.652 B prints as "1.7B"), so the check against the name is: within half
 * a unit of its last printed digit, and within 0.5% where that is tighter than the rounding
 * (from 7.5 B up; for 1.7B/3.6B the rounding alone is 2.9%/1.4%). */
static void test_params_megatron_table1(void **state)
{
    (void)state;
    static const struct {
        const char *key;
        int64_t l, h;
        double published; /* the table's name, parameters */
        double half_unit; /* half of the name's last printed digit */
        int64_t ours;     /* l(12h^2+13h) + (51200+2048)h + 2h, worked out below */
    } rows[] = {
        /* 24*(12*2304^2+13*2304) = 1,529,542,656; + 53248*2304 = 122,683,392; + 4608 */
        {"gpt-1.7b", 24, 2304, 1.7e9, 0.05e9, 1652230656LL},
        /* 30*(12*3072^2+13*3072) = 3,398,584,320; + 163,577,856 + 6144 */
        {"gpt-3.6b", 30, 3072, 3.6e9, 0.05e9, 3562168320LL},
        /* 36*(12*4096^2+13*4096) = 7,249,674,240; + 218,103,808 + 8192 */
        {"gpt-7.5b", 36, 4096, 7.5e9, 0.05e9, 7467786240LL},
        /* 40*(12*6144^2+13*6144) = 18,122,588,160; + 327,155,712 + 12288;
         * the rest the same way (the closed form below re-evaluates each) */
        {"gpt-18.4b", 40, 6144, 18.4e9, 0.05e9, 18449756160LL},
        {"gpt-39.1b", 48, 8192, 39.1e9, 0.05e9, 39096041472LL},
        {"gpt-76.1b", 60, 10240, 76.1e9, 0.05e9, 76050739200LL},
        {"gpt-145.6b", 80, 12288, 145.6e9, 0.05e9, 145622261760LL},
        {"gpt-310.1b", 96, 16384, 310.1e9, 0.05e9, 310130540544LL},
        {"gpt-529.6b", 105, 20480, 529.6e9, 0.05e9, 529600819200LL},
        {"gpt-1t", 128, 25600, 1008e9, 0.5e9, 1008038758400LL},
        /* GPT-3 175B (Brown et al. 2020): 96 layers, h 12288 -> 174,615,846,912 ("175B"). */
        {"gpt3-175b", 96, 12288, 175e9, 0.5e9, 174615846912LL},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const mp_model *m = cat_model(rows[i].key);
        assert_int_equal(m->layers, rows[i].l);
        assert_int_equal(m->hidden, rows[i].h);
        mp_param_count pc;
        mp_model_params(m, 1, &pc);
        /* The closed form, evaluated in integers. */
        const int64_t l = rows[i].l, h = rows[i].h;
        int64_t closed = l * (12 * h * h + 13 * h) + (51200 + 2048) * h + 2 * h;
        assert_int_equal(closed, rows[i].ours);
        if (pc.total != rows[i].ours)
            fail_msg("%s: total %lld, expected %lld", rows[i].key, (long long)pc.total,
                     (long long)rows[i].ours);
        double diff = fabs((double)pc.total - rows[i].published);
        if (diff > rows[i].half_unit)
            fail_msg("%s: %lld parameters does not round to the published %.4g", rows[i].key,
                     (long long)pc.total, rows[i].published);
        if (rows[i].published >= 7e9 && diff > 0.005 * rows[i].published)
            fail_msg("%s: %lld parameters, more than 0.5%% from %.4g", rows[i].key,
                     (long long)pc.total, rows[i].published);
    }
}

/* ---- FLOPs ------------------------------------------------------------------------------- */

/* Narayanan et al. 2021 eq. (3): with full recompute one iteration costs
 * F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)). Derivation in our terms, per token:
 * forward = 24 l h^2 (matmuls: 2 FLOPs x 12h^2 weights) + 4 l s h (QK^T and x V, non-causal)
 * + 2 h V (LM head); model = 3 x forward = 72 l h^2 + 12 l s h + 6 h V; full recompute adds one
 * forward of the layers, 24 l h^2 + 4 l s h; sum = 96 l h^2 + 16 l s h + 6 h V
 * = 96 l h^2 (1 + s/(6h) + V/(16 l h)). Biases and norms are not counted by either side. */
/* Keys per query under causal attention, windows and packed documents (model.h). Hand values:
 *  s = 8192 causal: (s+1)/2 = 4096.5; window 1024: 1024 - 1024*1023/16384 = 960.0625;
 *  documents of mu = 1032: mu - mu^2/s (1 - e^(-s/mu)) = 1032 - 130.0078 * 0.999643 = 902.0386;
 *  window 1024 with mu = 1032: (mu/s)[w - mu(1-e^(-w/mu)) + (s-w)(1-e^(-w/mu))]
 *    with 1 - e^(-0.992248) = 0.629258: 0.125977 * [1024 - 649.394 + 7168 * 0.629258] = 615.411. */
static void test_attn_keys_per_query(void **state)
{
    (void)state;
    assert_close(mp_attn_keys_per_query(8192, 0, 0), 4096.5, 1e-15);
    assert_close(mp_attn_keys_per_query(8192, 1024, 0), 960.0625, 1e-15);
    assert_close(mp_attn_keys_per_query(8192, 8192, 0), 4096.5, 1e-15); /* window >= s: none */
    assert_close(mp_attn_keys_per_query(8192, 0, 1032), 902.0386, 1e-6);
    assert_close(mp_attn_keys_per_query(8192, 1024, 1032), 615.411, 1e-5);
    /* Limits: documents far longer than the sequence are one causal sequence (s/2 in the
     * continuous form), across the switch to the series; one-token documents see one key. */
    assert_close(mp_attn_keys_per_query(8192, 0, 1e18), 4096.0, 1e-9);
    assert_close(mp_attn_keys_per_query(8192, 0, 8192e4 * 0.999), 4096.0, 1e-4);
    assert_close(mp_attn_keys_per_query(8192, 0, 8192e4 * 1.001), 4096.0, 1e-4);
    assert_close(mp_attn_keys_per_query(8192, 1024, 1e18), 1024.0 - 1024.0 * 1024.0 / 16384.0, 1e-9);
    assert_close(mp_attn_keys_per_query(8192, 0, 1), 1.0 - 1.0 / 8192.0, 1e-9);
    assert_true(mp_attn_keys_per_query(0, 0, 1000) == 0.0);
    /* Longer documents never mean fewer keys, and never more than without documents. */
    double prev = 0.0;
    for (double mu = 1.0; mu < 1e9; mu *= 1.7) {
        double k = mp_attn_keys_per_query(8192, 0, mu), kw = mp_attn_keys_per_query(8192, 2048, mu);
        assert_true(k >= prev && k <= 4096.5 && kw <= k && kw <= mp_attn_keys_per_query(8192, 2048, 0));
        prev = k;
    }
}

static void test_flops_narayanan(void **state)
{
    (void)state;
    static const struct { int64_t l, h, a, s, V, B; } cfg[] = {
        {96, 12288, 96, 2048, 51200, 1536},   /* GPT-3 175B dims, Table 1 batch */
        {128, 25600, 160, 2048, 51200, 3072}, /* GPT 1T */
        {24, 2304, 24, 4096, 50304, 512},     /* small, longer sequence */
    };
    for (size_t i = 0; i < sizeof cfg / sizeof cfg[0]; i++) {
        mp_model m = gpt_model(cfg[i].l, cfg[i].h, cfg[i].a, cfg[i].V, cfg[i].s);
        mp_flops fl;
        mp_model_flops(&m, cfg[i].s, &fl);
        const double B = (double)cfg[i].B, s = (double)cfg[i].s, l = (double)cfg[i].l;
        const double h = (double)cfg[i].h, V = (double)cfg[i].V;
        double paper = 96.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * l * h));
        double ours = fl.model_per_token * B * s + fl.recompute_full_per_token * B * s;
        assert_close(ours, paper, 1e-9);
        /* The parts: forward matmuls 24 l h^2, attention 4 l s h, LM head 2 h V per token. */
        assert_close(fl.fwd_matmul_per_token, 24.0 * l * h * h, 1e-15);
        assert_close(fl.fwd_attn_per_token, 4.0 * l * s * h, 1e-15);
        assert_close(fl.fwd_lm_head_per_token, 2.0 * h * V, 1e-15);
        assert_close(fl.model_per_token, 3.0 * fl.fwd_per_token, 1e-15);
        /* Selective recompute re-runs only the attention core: 4 l s h per token. */
        assert_close(fl.recompute_selective_per_token, 4.0 * l * s * h, 1e-15);
    }
}

/* GQA: K and V projections shrink to h x (kv*d): llama3-8b forward matmuls per token
 * = 2 * 32 * (41,943,040 + 176,160,768) = 13,958,643,712. */
static void test_flops_gqa_glu(void **state)
{
    (void)state;
    mp_flops fl;
    mp_model_flops(cat_model("llama3-8b"), 8192, &fl);
    assert_close(fl.fwd_matmul_per_token, 13958643712.0, 1e-15);
    /* attention: 4 * 32 layers * 4096 (a*d) * 8192 = 4,294,967,296 */
    assert_close(fl.fwd_attn_per_token, 4294967296.0, 1e-15);
    /* LM head 2 * 4096 * 128256 = 1,050,673,152 */
    assert_close(fl.fwd_lm_head_per_token, 1050673152.0, 1e-15);
}

/* ---- activation memory (Korthikanti et al. 2022 Table 2) ---------------------------------- */

/* GPT-3 175B layer: h = 12288, a = 96, s = 2048, b = 1. sbh = 25,165,824 and
 * 5 a s^2 b = 5 * 96 * 2048^2 = 2,013,265,920 = sbh * 5as/h (5*96*2048/12288 = 80). */
static void check_table2(int t)
{
    mp_model m = gpt_model(96, 12288, 96, 51200, 2048);
    const double s = 2048, b = 1, h = 12288, a = 96, T = t;
    const double sbh = s * b * h;
    mp_layer_act la;

    /* no parallelism (t = 1) / TP only: s b h (10 + 24/t + 5 a s/(h t)).
     * t=1: 25,165,824 * (34 + 80) = 2,868,903,936; t=8: 25,165,824 * (10 + 3 + 10) = 578,813,952 */
    mp_layer_activation(&m, 2048, 1, t, 0, 1, 0, MP_RC_NONE, &la);
    assert_bytes(la.stored_bytes, sbh * (10.0 + 24.0 / T + 5.0 * a * s / (h * T)));
    assert_bytes(la.stored_bytes, t == 1 ? 2868903936.0 : 578813952.0);
    assert_bytes(la.attention_s2_bytes, 5.0 * a * s * s * b / T);
    if (t == 1)
        assert_bytes(la.stored_bytes, sbh * (34.0 + 5.0 * a * s / h)); /* "no parallelism" row */

    /* TP + SP: s b h / t (34 + 5 a s / h). t=8: 3,145,728 * 114 = 358,612,992 */
    mp_layer_activation(&m, 2048, 1, t, 1, 1, 0, MP_RC_NONE, &la);
    assert_bytes(la.stored_bytes, sbh / T * (34.0 + 5.0 * a * s / h));
    if (t == 8)
        assert_bytes(la.stored_bytes, 358612992.0);

    /* TP + selective recompute: s b h (10 + 24/t). t=8: 25,165,824 * 13 = 327,155,712 */
    mp_layer_activation(&m, 2048, 1, t, 0, 1, 0, MP_RC_SELECTIVE, &la);
    assert_bytes(la.stored_bytes, sbh * (10.0 + 24.0 / T));
    assert_bytes(la.attention_s2_bytes, 0.0);

    /* TP + SP + selective: 34 s b h / t. t=8: 34 * 3,145,728 = 106,954,752 */
    mp_layer_activation(&m, 2048, 1, t, 1, 1, 0, MP_RC_SELECTIVE, &la);
    assert_bytes(la.stored_bytes, 34.0 * sbh / T);
    if (t == 8)
        assert_bytes(la.stored_bytes, 106954752.0);

    /* Full recompute: 2 s b h = 50,331,648 (Table 2, without SP). With SP the stored layer input
     * is the sequence shard, 2 s b h / t (meshplan/model.h). */
    mp_layer_activation(&m, 2048, 1, t, 0, 1, 0, MP_RC_FULL, &la);
    assert_bytes(la.stored_bytes, 2.0 * sbh);
    assert_bytes(la.stored_bytes, 50331648.0);
    mp_layer_activation(&m, 2048, 1, t, 1, 1, 0, MP_RC_FULL, &la);
    assert_bytes(la.stored_bytes, 2.0 * sbh / T);
    /* While a layer is recomputed its full activations are live again: the no-recompute size. */
    mp_layer_act none;
    mp_layer_activation(&m, 2048, 1, t, 1, 1, 0, MP_RC_NONE, &none);
    assert_bytes(la.working_bytes, none.stored_bytes);
}

/* torch.compile of the block (plan compile & 1): the min-cut partitioner recomputes the norm
 * outputs (4sbh), dropout masks (2sbh), the GELU output (2sbf = 8sbh) and the attention dropout
 * mask and output (3as^2b) from what it keeps, so Korthikanti's 34sbh + 5as^2b becomes
 * sbh (4 + 16/t) + 2as^2b/t; per-op SAC and full recompute keep what they kept. */
static void test_act_compiled(void **state)
{
    (void)state;
    mp_model m = gpt_model(96, 12288, 96, 51200, 2048);
    const double s = 2048, b = 1, h = 12288, a = 96, sbh = s * b * h;
    mp_layer_act la, eager;
    for (int t = 1; t <= 8; t *= 8) {
        const double T = t;
        mp_layer_activation_compiled(&m, 2048, 1, t, 0, 1, 1, 0, MP_RC_NONE, 0, 1.0, 1, &la);
        assert_bytes(la.stored_bytes, sbh * (4.0 + 16.0 / T) + 2.0 * a * s * s * b / T);
        assert_bytes(la.attention_s2_bytes, 2.0 * a * s * s * b / T);
        /* compile = 0 is the eager figure, and bit 2 (the loss) does not touch the layer */
        mp_layer_activation_compiled(&m, 2048, 1, t, 0, 1, 1, 0, MP_RC_NONE, 0, 1.0, 2, &eager);
        mp_layer_act ref;
        mp_layer_activation(&m, 2048, 1, t, 0, 1, 0, MP_RC_NONE, &ref);
        assert_bytes(eager.stored_bytes, ref.stored_bytes);
        /* full recompute stores the layer input either way */
        mp_layer_activation_compiled(&m, 2048, 1, t, 1, 1, 1, 0, MP_RC_FULL, 0, 1.0, 1, &la);
        assert_bytes(la.stored_bytes, 2.0 * sbh / T);
        /* while it is recomputed the compiled layer's own saved set is live */
        mp_layer_act none;
        mp_layer_activation_compiled(&m, 2048, 1, t, 1, 1, 1, 0, MP_RC_NONE, 0, 1.0, 1, &none);
        assert_bytes(la.working_bytes, none.stored_bytes);
        assert_true(none.stored_bytes < ref.stored_bytes);
    }
}

static void test_act_table2_t1(void **state) { (void)state; check_table2(1); }
static void test_act_table2_t8(void **state) { (void)state; check_table2(8); }

/* Micro-batch b scales every term linearly: b = 4 is 4x b = 1 (Table 2 is linear in b). */
static void test_act_linear_in_b(void **state)
{
    (void)state;
    mp_model m = gpt_model(96, 12288, 96, 51200, 2048);
    mp_layer_act one, four;
    mp_layer_activation(&m, 2048, 1, 8, 0, 1, 0, MP_RC_NONE, &one);
    mp_layer_activation(&m, 2048, 4, 8, 0, 1, 0, MP_RC_NONE, &four);
    assert_bytes(four.stored_bytes, 4.0 * one.stored_bytes);
}

/* GQA: K and V are 2 s b (kv d) bytes each instead of 2 s b h. With kv = 8 of a = 96 (d = 128)
 * the saving is 2 * 2 * s b (a - kv) d / t = 4 * 2048 * 88 * 128 / 8 = 11,534,336 bytes at t = 8.
 * GLU keeps the gate and up projections both: + 2 s b f / t = 2 * 2048 * 49152 / 8
 * = 25,165,824 bytes. */
static void test_act_gqa_glu(void **state)
{
    (void)state;
    mp_model mha = gpt_model(96, 12288, 96, 51200, 2048);
    mp_model gqa = mha;
    gqa.kv_heads = 8;
    mp_model glu = mha;
    glu.glu = 1;
    mp_layer_act a0, a1, a2;
    mp_layer_activation(&mha, 2048, 1, 8, 0, 1, 0, MP_RC_NONE, &a0);
    mp_layer_activation(&gqa, 2048, 1, 8, 0, 1, 0, MP_RC_NONE, &a1);
    mp_layer_activation(&glu, 2048, 1, 8, 0, 1, 0, MP_RC_NONE, &a2);
    assert_bytes(a0.stored_bytes - a1.stored_bytes, 11534336.0);
    assert_bytes(a2.stored_bytes - a0.stored_bytes, 25165824.0);
    /* Without dropout the two 1-byte masks (s b h each, replicated without SP) and the s^2
     * dropout mask + output (3 a s^2 b) go: 2 * 25,165,824 + 3 * 96 * 2048^2 / 8
     * = 50,331,648 + 150,994,944 = 201,326,592. */
    mp_model nodrop = mha;
    nodrop.dropout = 0;
    mp_layer_act a3;
    mp_layer_activation(&nodrop, 2048, 1, 8, 0, 1, 0, MP_RC_NONE, &a3);
    assert_bytes(a0.stored_bytes - a3.stored_bytes, 201326592.0);
}

/* Flash attention stores no s x s tensors, only fp32 row statistics 4 a s b (Dao 2022).
 * t = 8, no SP: s b h (10 + 24/8) + 4 * 96 * 2048 / 8 = 327,155,712 + 98,304 = 327,254,016. */
static void test_act_flash(void **state)
{
    (void)state;
    mp_model m = gpt_model(96, 12288, 96, 51200, 2048);
    mp_layer_act la, sel, dbl;
    mp_layer_activation(&m, 2048, 1, 8, 0, 1, 1, MP_RC_NONE, &la);
    assert_bytes(la.stored_bytes, 327254016.0);
    assert_bytes(la.attention_s2_bytes, 0.0);
    /* No s^2 term: doubling s exactly doubles the bytes. */
    mp_layer_activation(&m, 4096, 1, 8, 0, 1, 1, MP_RC_NONE, &dbl);
    assert_bytes(dbl.stored_bytes, 2.0 * la.stored_bytes);
    /* Selective recompute has nothing left to drop. */
    mp_layer_activation(&m, 2048, 1, 8, 0, 1, 1, MP_RC_SELECTIVE, &sel);
    assert_bytes(sel.stored_bytes, la.stored_bytes);
}

/* Context parallelism: each CP rank holds s/cp tokens; with flash on everything is linear in
 * the local tokens, so cp = 2 at s = 4096 equals cp = 1 at s = 2048. */
static void test_act_cp(void **state)
{
    (void)state;
    mp_model m = gpt_model(96, 12288, 96, 51200, 2048);
    mp_layer_act a, b;
    mp_layer_activation(&m, 4096, 1, 8, 1, 2, 1, MP_RC_NONE, &a);
    mp_layer_activation(&m, 2048, 1, 8, 1, 1, 1, MP_RC_NONE, &b);
    assert_bytes(a.stored_bytes, b.stored_bytes);
}

/* ---- padding, checks, extremes ----------------------------------------------------------- */

static void test_padded_vocab(void **state)
{
    (void)state;
    mp_model m = gpt_model(24, 1024, 16, 50257, 2048);
    m.vocab_pad_multiple = 128;
    /* multiple 128 * tp 8 = 1024: ceil(50257 / 1024) = 50 -> 51,200 */
    assert_int_equal(mp_model_padded_vocab(&m, 8), 51200);
    /* tp 1: multiple 128: ceil(50257 / 128) = 393 -> 50,304 (GPT-2's padded vocabulary) */
    assert_int_equal(mp_model_padded_vocab(&m, 1), 50304);
    m.vocab_pad_multiple = 1;
    assert_int_equal(mp_model_padded_vocab(&m, 8), 50257);
    /* The padded size is what the embedding counts: 51200 * 1024 + 2048 * 1024 positions. */
    m.vocab_pad_multiple = 128;
    mp_param_count pc;
    mp_model_params(&m, 8, &pc);
    assert_int_equal(pc.embedding, (51200 + 2048) * 1024);
}

static void test_model_check(void **state)
{
    (void)state;
    mp_model m = gpt_model(32, 4096, 32, 32000, 4096);
    mp_diag d = {0};
    assert_int_equal(mp_model_check(&m, &d), MP_OK);
    assert_int_equal(d.count, 0);

    m.kv_heads = 5; /* 32 % 5 != 0 */
    mp_diag_clear(&d);
    assert_int_equal(mp_model_check(&m, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "kv_heads"));
    assert_non_null(strstr(d.text, "5"));

    m.kv_heads = 32;
    m.layers = 0;
    mp_diag_clear(&d);
    assert_int_equal(mp_model_check(&m, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "layers"));
}

/* layers 1000, hidden 10^6, heads 1000 (d = 1000), FFN 4*10^6 (GELU), vocab 10^6, RMSNorm, no
 * biases, untied: layer = 4h^2 4*10^12 + 2hf 8*10^12 + 2h 2*10^6 = 12,000,002,000,000;
 * x1000 = 12,000,002,000,000,000; + 2 V h 2*10^12 + h 10^6 = 12,002,002,001,000,000 (1.2e16:
 * beyond the 10^15 of any plausible model, inside mp_model_check's 1e18 bound and int64's
 * 9.2e18). */
static void test_huge_model(void **state)
{
    (void)state;
    mp_model m;
    memset(&m, 0, sizeof m);
    strcpy(m.key, "huge");
    m.layers = 1000;
    m.hidden = 1000000;
    m.heads = 1000;
    m.kv_heads = 1000;
    m.head_dim = 1000;
    m.ffn_hidden = 4000000;
    m.vocab = 1000000;
    m.vocab_pad_multiple = 1;
    m.position = MP_POS_ROPE;
    m.seq_len = 8192;
    m.rmsnorm = 1;
    mp_diag d = {0};
    assert_int_equal(mp_model_check(&m, &d), MP_OK);
    mp_param_count pc;
    mp_model_params(&m, 8, &pc);
    assert_int_equal(pc.per_layer, 12000002000000LL);
    assert_int_equal(pc.total, 12002002001000000LL);
    mp_flops fl;
    mp_model_flops(&m, 8192, &fl);
    assert_true(isfinite(fl.model_per_token) && fl.model_per_token > 0);
    /* 3 * (2 * 1000 * 1.2e13 + 4 * 1000 * 1e6 * 8192 + 2 * 1e6 * 1e6)
     * = 3 * (2.4e16 + 3.2768e13 + 2e12) = 72,104,304,000,000,000 */
    assert_close(fl.model_per_token, 7.2104304e16, 1e-12);
    mp_layer_act la;
    mp_layer_activation(&m, 8192, 1, 8, 1, 1, 0, MP_RC_NONE, &la);
    assert_true(isfinite(la.stored_bytes) && la.stored_bytes > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_params_llama3_8b),
        cmocka_unit_test(test_params_llama2_7b),
        cmocka_unit_test(test_params_megatron_table1),
        cmocka_unit_test(test_flops_narayanan),
        cmocka_unit_test(test_attn_keys_per_query),
        cmocka_unit_test(test_flops_gqa_glu),
        cmocka_unit_test(test_act_table2_t1),
        cmocka_unit_test(test_act_table2_t8),
        cmocka_unit_test(test_act_linear_in_b),
        cmocka_unit_test(test_act_gqa_glu),
        cmocka_unit_test(test_act_flash),
        cmocka_unit_test(test_act_compiled),
        cmocka_unit_test(test_act_cp),
        cmocka_unit_test(test_padded_vocab),
        cmocka_unit_test(test_model_check),
        cmocka_unit_test(test_huge_model),
    };
    return cmocka_run_group_tests(tests, catalog_setup, catalog_teardown);
}
