/* src/model/hf_config.c — mp_model_from_hf_json(): read a Hugging Face transformers config.json
 * into an mp_model (meshplan/model.h).
 *
 * Field names read (the first one present and not null wins; JSON null counts as absent):
 *   layers      num_hidden_layers (Llama, Mistral, Mixtral, Qwen2/3, Qwen-MoE, GPT-NeoX,
 *               DeepSeek), n_layer (GPT-2), n_layers (MPT), num_layers
 *   hidden      hidden_size, n_embd (GPT-2), d_model (MPT)
 *   heads       num_attention_heads, n_head (GPT-2), n_heads (MPT)
 *   kv_heads    num_key_value_heads, n_head_kv, num_kv_heads, multi_query (true -> 1),
 *               MPT attn_config.attn_type ("multiquery_attention" -> 1,
 *               "grouped_query_attention" -> attn_config.kv_n_heads); else = heads
 *   head_dim    head_dim (Qwen3, Mistral-Nemo, ...); else hidden / heads, which must divide
 *   ffn_hidden  intermediate_size, n_inner (GPT-2; null -> 4 * n_embd), ffn_hidden_size,
 *               MPT expansion_ratio * d_model; when absent 4 * hidden for a non-gated FFN
 *               outside the Llama family (an error for gated ones)
 *   vocab       vocab_size, n_vocab, padded_vocab_size
 *   seq_len     max_position_embeddings, n_positions (GPT-2), max_seq_len (MPT), seq_length,
 *               n_ctx; capped at 2^24; 2048 when absent
 *   context_len the same field (the most tokens a sequence may hold), capped at 2^30; 0 when absent
 *   tied        tie_word_embeddings; absent -> true for GPT-2, MPT and unknown types (the
 *               transformers PretrainedConfig default), false for the Llama family and NeoX
 *               (their config classes default to False)
 *   dropout     any of attn_pdrop, resid_pdrop, embd_pdrop, emb_pdrop, hidden_dropout,
 *               attention_dropout, hidden_dropout_prob, attention_probs_dropout_prob, dropout,
 *               MPT attn_config.attn_pdrop > 0 -> 1 (GPT-2's 0.1 turns dropout on)
 *   bias        GPT-2, NeoX: 1. Llama family: attention_bias or mlp_bias true -> 1, else 0
 *               (Qwen2 hard-codes a bias on the Q/K/V projections only; that is a few thousand
 *               parameters per layer, so bias = 0 is kept). MPT: !no_bias.
 *   MoE         experts: num_local_experts (Mixtral), num_experts (Qwen-MoE),
 *               n_routed_experts (DeepSeek); top-k: num_experts_per_tok;
 *               expert width: moe_intermediate_size, else intermediate_size (Mixtral's experts
 *               are full-width FFNs);
 *               shared experts: n_shared_experts (DeepSeek), else Qwen's
 *               shared_expert_intermediate_size, stored as
 *               round(shared_expert_intermediate_size / moe_intermediate_size) experts of the
 *               routed width (at least 1): Qwen has one wide shared expert, mp_model counts
 *               shared experts in units of the routed expert width;
 *               dense layers: DeepSeek first_k_dense_replace (+ moe_layer_freq), Qwen
 *               decoder_sparse_step + mlp_only_layers; else 0. moe_dense_layers is the number
 *               of layers with a dense FFN (the leading ones for DeepSeek).
 * Family (from model_type, else architectures[]) decides glu, rmsnorm, position and defaults:
 *   llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, deepseek_v2, deepseek_v3, gpt_oss:
 *     SwiGLU (glu 1), RMSNorm, RoPE.
 *   phi3 is in the Llama family too (fused gate_up SwiGLU, RMSNorm, RoPE, untied).
 *   gemma, gemma2: GeGLU (hidden_activation / hidden_act gelu_pytorch_tanh; three matrices as
 *     SwiGLU), RMSNorm, RoPE, tied by default; head_dim is read (Gemma-2-9B: 256, not
 *     hidden/heads = 224); gemma2 without layer_types alternates sliding-window and global
 *     layers (half the layers windowed).
 *   falcon (and RefinedWeb / RefinedWebModel): GELU MLP of 4h (ffn_hidden_size), LayerNorm,
 *     RoPE (ALiBi with alibi true), bias from "bias" (default false), tied by default; KV heads:
 *     num_kv_heads with new_decoder_architecture, else 1 with multi_query, else heads.
 *     parallel_attn is read as sequential (same parameters and FLOPs) and warned about.
 *   Encoder-decoder and encoder models (is_encoder_decoder true, or model_type t5, mt5, umt5,
 *     longt5, bart, mbart, pegasus, marian, switch_transformers, whisper, bert, roberta) are
 *     refused with MP_ERR_INPUT naming the model_type.
 * Warnings (mp_model_hf_warnings, apart from the parse: an accepted file leaves diag empty): a
 * model_type outside these families (read by the common names), parallel_attn,
 * attn_logit_softcapping, final_logit_softcapping.
 *   gpt2: GELU MLP, LayerNorm, learned positions.   gpt_neox: GELU MLP, LayerNorm, RoPE.
 *   mpt: GELU MLP (ffn_config.ffn_type "mptglu" -> glu), LayerNorm (norm_type *rmsnorm ->
 *     RMSNorm), ALiBi when attn_config.alibi, else RoPE when attn_config.rope, else learned.
 *   Others: rms_norm_eps -> RMSNorm; hidden_act/activation_function silu/swiglu -> glu;
 *     rope_theta/rotary_* -> RoPE, alibi -> ALiBi, else learned.
 *   top-k also: experts_per_token (gpt-oss); MoE layer spacing: moe_layer_freq (DeepSeek's
 *               frequency after the first_k_dense_replace dense layers) / decoder_sparse_step
 *               (Qwen) -> moe_layer_freq when > 1
 *   MLA         kv_lora_rank (> 0 turns multi-head latent attention on), q_lora_rank (null ->
 *               0, a full-rank query), qk_rope_head_dim, qk_nope_head_dim, v_head_dim
 *               (DeepSeek-V2/V3); head_dim = v_head_dim when the file has no head_dim
 *   window      sliding_window (Mistral, gpt-oss) unless use_sliding_window is false (Qwen);
 *               layer_types (gpt-oss, Gemma): the number of "sliding_attention" entries is
 *               attn_window_layers, else all layers
 *   MTP         num_nextn_predict_layers (DeepSeek-V3: 1)
 *   gpt_oss     is in the Llama family (SwiGLU, RMSNorm, RoPE); its attention_bias true sets bias
 * If the file has a "text_config" object (multimodal wrappers) and no layer count at the top,
 * the text_config is read instead.
 *
 * Errors: malformed JSON -> MP_ERR_PARSE with jansson's line, column and message. A wrong type,
 * an integer <= 0 (< 0 where 0 is meaningful), > 2^40 or not integral -> MP_ERR_INPUT with one
 * line per field, e.g. `config.json: hidden_size = "4096": expected a positive integer`.
 * Then mp_model_check(). *out is written only on success. No lengths are unbounded: the text is
 * read with json_loadb (no NUL needed) and every copied string is truncated to its buffer.
 */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "meshplan/model.h"

#define HF_INT_MAX ((int64_t)1 << 40)
#define HF_SEQ_CAP ((int64_t)1 << 24)
#define HF_SEQ_DEFAULT 2048
#define HF_LIST_MAX 65536 /* longest mlp_only_layers list accepted */
#define HF_VALUE_SHOWN 60 /* characters of a bad value quoted in diag */

typedef enum { FAM_OTHER, FAM_LLAMA, FAM_GPT2, FAM_NEOX, FAM_MPT, FAM_GEMMA, FAM_FALCON } hf_family;

typedef struct {
    mp_diag *diag;
    int errors;
    const char *prefix; /* "" or "text_config." */
} hf_ctx;

/* ---- field access ---- */

/* A member of obj, or NULL when obj is not an object, the member is absent or it is null. */
static const json_t *field(const json_t *obj, const char *name)
{
    if (!json_is_object(obj))
        return NULL;
    const json_t *v = json_object_get(obj, name);
    return (v && !json_is_null(v)) ? v : NULL;
}

static void bad(hf_ctx *c, const char *sub, const char *name, const json_t *v,
                const char *expected)
{
    char shown[HF_VALUE_SHOWN + 4];
    char *txt = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(12))
                  : NULL;
    if (txt && strlen(txt) > HF_VALUE_SHOWN) {
        memcpy(shown, txt, HF_VALUE_SHOWN);
        memcpy(shown + HF_VALUE_SHOWN, "...", 4);
    } else {
        mp_strlcpy(shown, txt ? txt : "?", sizeof shown);
    }
    free(txt);
    mp_diag_add(c->diag, "config.json: %s%s%s = %s: expected %s", c->prefix, sub, name, shown,
                expected);
    c->errors++;
}

static void missing(hf_ctx *c, const char *name, const char *also)
{
    mp_diag_add(c->diag, "config.json: %s%s: missing%s%s%s", c->prefix, name,
                also ? " (also looked for " : "", also ? also : "", also ? ")" : "");
    c->errors++;
}

/* Integer in [min, 2^40] (min is 0 or 1); an integral real such as 4096.0 is accepted.
 * Returns 1 and sets *out when valid, 0 when absent, -1 when invalid (reported). */
static int get_int(hf_ctx *c, const json_t *obj, const char *sub, const char *name, int64_t min,
                   int64_t *out)
{
    const json_t *v = field(obj, name);
    if (!v)
        return 0;
    int ok = 0, too_big = 0;
    int64_t x = 0;
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        too_big = i > HF_INT_MAX;
        ok = i >= min && !too_big;
        x = (int64_t)i;
    } else if (json_is_real(v)) {
        double d = json_real_value(v);
        too_big = d > (double)HF_INT_MAX;
        ok = isfinite(d) && d == floor(d) && d >= (double)min && !too_big;
        x = ok ? (int64_t)d : 0;
    }
    if (!ok) {
        bad(c, sub, name, v,
            too_big ? "an integer no larger than 2^40"
                    : (min > 0 ? "a positive integer" : "a non-negative integer"));
        return -1;
    }
    *out = x;
    return 1;
}

/* The first of names that is present decides; *used gets its name. */
static int get_int_alias(hf_ctx *c, const json_t *obj, const char *const *names, int64_t min,
                         int64_t *out, const char **used)
{
    for (; *names; names++) {
        if (field(obj, *names)) {
            if (used)
                *used = *names;
            return get_int(c, obj, "", *names, min, out);
        }
    }
    return 0;
}

/* true/false (0/1 accepted). Returns 1 with *out set, 0 when absent, -1 when invalid. */
static int get_bool(hf_ctx *c, const json_t *obj, const char *sub, const char *name, int *out)
{
    const json_t *v = field(obj, name);
    if (!v)
        return 0;
    if (json_is_boolean(v)) {
        *out = json_is_true(v);
        return 1;
    }
    if (json_is_integer(v) && (json_integer_value(v) == 0 || json_integer_value(v) == 1)) {
        *out = (int)json_integer_value(v);
        return 1;
    }
    bad(c, sub, name, v, "true or false");
    return -1;
}

/* A dropout probability in [0, 1]; 1 when present and > 0. */
static int dropout_on(hf_ctx *c, const json_t *obj, const char *sub, const char *name)
{
    const json_t *v = field(obj, name);
    if (!v)
        return 0;
    double p = json_is_number(v) ? json_number_value(v) : -1.0;
    if (!(p >= 0.0 && p <= 1.0)) {
        bad(c, sub, name, v, "a number between 0 and 1");
        return 0;
    }
    return p > 0.0;
}

/* A string member, or NULL when absent or (reported) not a string. */
static const char *get_str(hf_ctx *c, const json_t *obj, const char *sub, const char *name)
{
    const json_t *v = field(obj, name);
    if (!v)
        return NULL;
    if (!json_is_string(v)) {
        bad(c, sub, name, v, "a string");
        return NULL;
    }
    return json_string_value(v);
}

/* ---- families ---- */

static const struct {
    const char *model_type, *architecture;
    hf_family fam;
} families[] = {
    {"llama", "LlamaForCausalLM", FAM_LLAMA},
    {"mistral", "MistralForCausalLM", FAM_LLAMA},
    {"mixtral", "MixtralForCausalLM", FAM_LLAMA},
    {"qwen2", "Qwen2ForCausalLM", FAM_LLAMA},
    {"qwen2_moe", "Qwen2MoeForCausalLM", FAM_LLAMA},
    {"qwen3", "Qwen3ForCausalLM", FAM_LLAMA},
    {"qwen3_moe", "Qwen3MoeForCausalLM", FAM_LLAMA},
    {"deepseek_v2", "DeepseekV2ForCausalLM", FAM_LLAMA},
    {"deepseek_v3", "DeepseekV3ForCausalLM", FAM_LLAMA},
    {"gpt_oss", "GptOssForCausalLM", FAM_LLAMA},
    {"gpt2", "GPT2LMHeadModel", FAM_GPT2},
    {"gpt_neox", "GPTNeoXForCausalLM", FAM_NEOX},
    {"mpt", "MPTForCausalLM", FAM_MPT},
    {"mpt", "MptForCausalLM", FAM_MPT},
    {"phi3", "Phi3ForCausalLM", FAM_LLAMA},   /* SwiGLU (fused gate_up), RMSNorm, RoPE, untied */
    {"gemma", "GemmaForCausalLM", FAM_GEMMA},
    {"gemma2", "Gemma2ForCausalLM", FAM_GEMMA},
    {"falcon", "FalconForCausalLM", FAM_FALCON},
    {"RefinedWebModel", "RWForCausalLM", FAM_FALCON},
    {"RefinedWeb", "RWForCausalLM", FAM_FALCON},
};

/* Encoder-decoder and encoder-only model types: refused until meshplan models them. */
static const char *const encdec_types[] = {"t5", "mt5", "umt5", "longt5", "bart", "mbart",
                                           "pegasus", "marian", "switch_transformers", "whisper",
                                           "bert", "roberta", NULL};

static hf_family family_of(const char *model_type, const json_t *architectures)
{
    const size_t n = sizeof families / sizeof families[0];
    if (model_type)
        for (size_t i = 0; i < n; i++)
            if (strcmp(model_type, families[i].model_type) == 0)
                return families[i].fam;
    if (json_is_array(architectures)) {
        size_t na = json_array_size(architectures);
        for (size_t j = 0; j < na; j++) {
            const char *a = json_string_value(json_array_get(architectures, j));
            for (size_t i = 0; a && i < n; i++)
                if (strcmp(a, families[i].architecture) == 0)
                    return families[i].fam;
        }
    }
    return FAM_OTHER;
}

/* ---- copies into fixed buffers ---- */

/* Key: model_type with anything outside [A-Za-z0-9._-] replaced by '-'. */
static void copy_key(char *dst, size_t cap, const char *src)
{
    size_t i = 0;
    for (; src[i] && i + 1 < cap; i++) {
        unsigned char ch = (unsigned char)src[i];
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                 (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
        dst[i] = ok ? (char)ch : '-';
    }
    dst[i] = '\0';
}

/* Text: control characters become '?'; truncation does not split a UTF-8 sequence (jansson
 * has already checked that strings are valid UTF-8). */
static void copy_text(char *dst, size_t cap, const char *src)
{
    mp_strlcpy(dst, src, cap);
    size_t n = strlen(dst);
    if (src[n] != '\0' && ((unsigned char)src[n] & 0xC0) == 0x80) { /* cut inside a sequence */
        while (n > 0 && ((unsigned char)dst[n - 1] & 0xC0) == 0x80)
            n--;
        if (n > 0 && (unsigned char)dst[n - 1] >= 0xC0)
            n--;
        dst[n] = '\0';
    }
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)dst[i] < 0x20 || dst[i] == 0x7f)
            dst[i] = '?';
}

/* ---- MoE layer layout ---- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Qwen-MoE: layer i (0-based) is sparse iff i is not in mlp_only_layers and (i + 1) % step == 0.
 * Returns the number of dense layers, or -1 after reporting a bad mlp_only_layers. */
static int64_t qwen_dense_layers(hf_ctx *c, const json_t *cfg, int64_t layers, int64_t step)
{
    int64_t sparse = layers / step;
    const json_t *list = field(cfg, "mlp_only_layers");
    if (!list)
        return layers - sparse;
    if (!json_is_array(list) || json_array_size(list) > HF_LIST_MAX) {
        bad(c, "", "mlp_only_layers", list, "an array of layer indices");
        return -1;
    }
    size_t n = json_array_size(list), k = 0;
    int64_t *idx = n ? malloc(n * sizeof *idx) : NULL;
    if (n && !idx) {
        mp_diag_add(c->diag, "config.json: out of memory reading mlp_only_layers");
        c->errors++;
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(list, i);
        json_int_t x = json_is_integer(e) ? json_integer_value(e) : -1;
        if (x < 0 || x > HF_INT_MAX) {
            bad(c, "", "mlp_only_layers", e, "a non-negative integer layer index");
            free(idx);
            return -1;
        }
        if (x < layers && (x + 1) % step == 0)
            idx[k++] = (int64_t)x; /* a layer that would otherwise be sparse */
    }
    if (k)
        qsort(idx, k, sizeof *idx, cmp_i64);
    for (size_t i = 0; i < k; i++)
        if (i == 0 || idx[i] != idx[i - 1])
            sparse--;
    free(idx);
    return layers - sparse;
}

/* DeepSeek: layer i is sparse iff i >= first_k_dense_replace and i % moe_layer_freq == 0. */
static int64_t deepseek_dense_layers(int64_t layers, int64_t first_k, int64_t freq)
{
    if (first_k >= layers)
        return layers;
    /* multiples of freq in [first_k, layers - 1] */
    int64_t sparse = (layers - 1) / freq - (first_k > 0 ? (first_k - 1) / freq : -1);
    return layers - sparse;
}

/* ---- the config ---- */

static const char *const N_LAYERS[] = {"num_hidden_layers", "n_layer", "n_layers", "num_layers",
                                       NULL};
static const char *const N_HIDDEN[] = {"hidden_size", "n_embd", "d_model", NULL};
static const char *const N_HEADS[] = {"num_attention_heads", "n_head", "n_heads", NULL};
static const char *const N_KV[] = {"num_key_value_heads", "n_head_kv", "num_kv_heads", NULL};
static const char *const N_FFN[] = {"intermediate_size", "n_inner", "ffn_hidden_size", NULL};
static const char *const N_VOCAB[] = {"vocab_size", "n_vocab", "padded_vocab_size", NULL};
static const char *const N_SEQ[] = {"max_position_embeddings", "n_positions", "max_seq_len",
                                    "seq_length", "n_ctx", NULL};
static const char *const N_EXPERTS[] = {"num_local_experts", "num_experts", "n_routed_experts",
                                        NULL};
static const char *const N_DROPOUT[] = {"attn_pdrop", "resid_pdrop", "embd_pdrop", "emb_pdrop",
                                        "hidden_dropout", "attention_dropout",
                                        "hidden_dropout_prob", "attention_probs_dropout_prob",
                                        "dropout", NULL};
static const char *const N_ROPE[] = {"rope_theta", "rotary_dim", "rotary_pct", "rotary_emb_base",
                                     "rope_scaling", NULL};

static void read_kv_heads(hf_ctx *c, const json_t *cfg, const json_t *attn, hf_family fam,
                          mp_model *m, const char **kv_name)
{
    int nd = 0, mq0 = 0;
    if (fam == FAM_FALCON && !(get_bool(c, cfg, "", "new_decoder_architecture", &nd) == 1 && nd)) {
        /* Falcon's first decoder (7B): num_kv_heads is used only by the new decoder
         * architecture (40B, 180B); otherwise multi_query -> one KV head (FalconAttention) */
        m->kv_heads = get_bool(c, cfg, "", "multi_query", &mq0) == 1 && !mq0 ? m->heads : 1;
        *kv_name = "multi_query";
        return;
    }
    int r = get_int_alias(c, cfg, N_KV, 1, &m->kv_heads, kv_name);
    if (r != 0)
        return;
    int mq = 0;
    if (get_bool(c, cfg, "", "multi_query", &mq) == 1 && mq) {
        m->kv_heads = 1;
        *kv_name = "multi_query";
        return;
    }
    const char *attn_type = get_str(c, attn, "attn_config.", "attn_type");
    if (attn_type && strcmp(attn_type, "multiquery_attention") == 0) {
        m->kv_heads = 1;
        *kv_name = "attn_config.attn_type";
    } else if (attn_type && strcmp(attn_type, "grouped_query_attention") == 0 &&
               get_int(c, attn, "attn_config.", "kv_n_heads", 1, &m->kv_heads) == 1) {
        *kv_name = "attn_config.kv_n_heads";
    } else {
        m->kv_heads = m->heads;
    }
}

static void read_moe(hf_ctx *c, const json_t *cfg, mp_model *m)
{
    const char *experts_name = "num_experts";
    int64_t experts = 0;
    if (get_int_alias(c, cfg, N_EXPERTS, 0, &experts, &experts_name) != 1 || experts == 0)
        return; /* dense */
    m->moe_experts = experts;

    int r = get_int(c, cfg, "", "num_experts_per_tok", 1, &m->moe_topk);
    if (r == 0)
        r = get_int(c, cfg, "", "experts_per_token", 1, &m->moe_topk); /* gpt-oss */
    if (r == 0)
        missing(c, "num_experts_per_tok", "experts_per_token");
    else if (r == 1 && m->moe_topk > experts) {
        mp_diag_add(c->diag, "config.json: %snum_experts_per_tok = %lld: must not exceed %s (%lld)",
                    c->prefix, (long long)m->moe_topk, experts_name, (long long)experts);
        c->errors++;
    }

    r = get_int(c, cfg, "", "moe_intermediate_size", 1, &m->moe_ffn_hidden);
    if (r == 0)
        m->moe_ffn_hidden = m->ffn_hidden; /* Mixtral: experts are full-width FFNs */

    int64_t shared = 0;
    r = get_int(c, cfg, "", "n_shared_experts", 0, &shared);
    if (r == 1) {
        m->moe_shared_experts = shared;
    } else if (r == 0 &&
               get_int(c, cfg, "", "shared_expert_intermediate_size", 0, &shared) == 1 &&
               shared > 0 && m->moe_ffn_hidden > 0) {
        /* Qwen-MoE: one shared expert of its own width, counted in routed-expert widths. */
        int64_t n = (shared + m->moe_ffn_hidden / 2) / m->moe_ffn_hidden;
        m->moe_shared_experts = n < 1 ? 1 : n;
    }

    int64_t first_k = 0, freq = 1, step = 1;
    int rk = get_int(c, cfg, "", "first_k_dense_replace", 0, &first_k);
    int rf = get_int(c, cfg, "", "moe_layer_freq", 1, &freq);
    int rs = get_int(c, cfg, "", "decoder_sparse_step", 1, &step);
    if (rk < 0 || rf < 0 || rs < 0 || m->layers < 1)
        return;
    if (rk == 1 || rf == 1) {
        m->moe_dense_layers = deepseek_dense_layers(m->layers, first_k, freq);
        /* first_k leading dense layers, then one MoE layer in every freq: mp_model's layout
         * rule has one or the other; the spacing wins when there is one. */
        if (freq > 1)
            m->moe_layer_freq = freq;
    } else {
        int64_t d = qwen_dense_layers(c, cfg, m->layers, step);
        m->moe_dense_layers = d < 0 ? 0 : d;
        if (step > 1)
            m->moe_layer_freq = step;
    }
}

/* DeepSeek multi-head latent attention, sliding windows and MTP modules. */
static void read_attention_extras(hf_ctx *c, const json_t *cfg, mp_model *m, int head_dim_given,
                                  int alternating_window)
{
    int64_t x = 0;
    if (get_int(c, cfg, "", "kv_lora_rank", 0, &x) == 1 && x > 0) {
        m->kv_lora_rank = x;
        if (get_int(c, cfg, "", "q_lora_rank", 0, &x) == 1)
            m->q_lora_rank = x;
        if (get_int(c, cfg, "", "qk_rope_head_dim", 0, &x) == 1)
            m->qk_rope_head_dim = x;
        if (get_int(c, cfg, "", "qk_nope_head_dim", 0, &x) == 1)
            m->qk_nope_head_dim = x;
        if (get_int(c, cfg, "", "v_head_dim", 1, &x) == 1) {
            m->v_head_dim = x;
            if (!head_dim_given)
                m->head_dim = x; /* MLA: per-head width is the value width, not hidden/heads */
        }
        m->kv_heads = m->heads; /* K and V are materialised per head */
    }
    int use = 1;
    if (get_bool(c, cfg, "", "use_sliding_window", &use) == 1 && !use)
        ; /* Qwen2/3 carry a sliding_window they do not use */
    else if (get_int(c, cfg, "", "sliding_window", 0, &x) == 1 && x > 0) {
        m->attn_window = x;
        const json_t *types = field(cfg, "layer_types");
        if (json_is_array(types)) {
            int64_t n = 0;
            size_t nt = json_array_size(types);
            for (size_t i = 0; i < nt && (int64_t)i < m->layers; i++) {
                const char *t = json_string_value(json_array_get(types, i));
                n += t && strcmp(t, "sliding_attention") == 0;
            }
            m->attn_window_layers = n;
            if (n == 0)
                m->attn_window = 0;
        } else if (alternating_window) {
            /* Gemma 2 interleaves local sliding-window and global attention layers, one each
             * (Gemma Team 2024, arXiv 2408.00118 Sec. 2.2) */
            m->attn_window_layers = m->layers / 2;
        }
    }
    if (get_int(c, cfg, "", "num_nextn_predict_layers", 0, &x) == 1)
        m->mtp_layers = x;
}

static void read_flags(hf_ctx *c, const json_t *cfg, const json_t *attn, hf_family fam,
                       mp_model *m)
{
    /* glu */
    const char *act = get_str(c, cfg, "", "hidden_act");
    if (!act)
        act = get_str(c, cfg, "", "activation_function");
    if (fam == FAM_LLAMA) {
        m->glu = 1;
    } else if (fam == FAM_GEMMA) {
        /* GeGLU: gate_proj, up_proj, down_proj with hidden_activation (Gemma) or hidden_act
         * gelu_pytorch_tanh (Gemma Team 2024, arXiv 2403.08295 Sec. 2): three matrices like
         * SwiGLU, so the same parameter and FLOP count */
        m->glu = 1;
    } else if (fam == FAM_FALCON) {
        m->glu = 0; /* GELU MLP, 4h (Almazrouei et al. 2023, arXiv 2311.16867 Sec. 4) */
    } else if (fam == FAM_MPT) {
        const json_t *ffn_config = field(cfg, "ffn_config");
        const char *t = get_str(c, ffn_config, "ffn_config.", "ffn_type");
        m->glu = t && strcmp(t, "mptglu") == 0;
    } else if (fam == FAM_OTHER) {
        m->glu = act && (strcmp(act, "silu") == 0 || strcmp(act, "swiglu") == 0 ||
                         strcmp(act, "swish") == 0);
    }

    /* norm */
    if (fam == FAM_LLAMA || fam == FAM_GEMMA) {
        m->rmsnorm = 1;
    } else if (fam == FAM_FALCON) {
        m->rmsnorm = 0;
    } else if (fam == FAM_MPT) {
        const char *nt = get_str(c, cfg, "", "norm_type");
        m->rmsnorm = nt && strstr(nt, "rmsnorm") != NULL;
    } else if (fam == FAM_OTHER) {
        m->rmsnorm = field(cfg, "rms_norm_eps") != NULL;
    }

    /* position */
    int on = 0;
    if (fam == FAM_LLAMA || fam == FAM_NEOX || fam == FAM_GEMMA) {
        m->position = MP_POS_ROPE;
    } else if (fam == FAM_FALCON) {
        m->position = get_bool(c, cfg, "", "alibi", &on) == 1 && on ? MP_POS_ALIBI : MP_POS_ROPE;
    } else if (fam == FAM_GPT2) {
        m->position = MP_POS_LEARNED;
    } else if (fam == FAM_MPT) {
        if (get_bool(c, attn, "attn_config.", "alibi", &on) == 1 && on)
            m->position = MP_POS_ALIBI;
        else if (get_bool(c, attn, "attn_config.", "rope", &on) == 1 && on)
            m->position = MP_POS_ROPE;
        else
            m->position = MP_POS_LEARNED;
    } else {
        int rope = 0;
        for (const char *const *n = N_ROPE; *n; n++)
            rope |= field(cfg, *n) != NULL;
        if (rope)
            m->position = MP_POS_ROPE;
        else if (get_bool(c, cfg, "", "alibi", &on) == 1 && on)
            m->position = MP_POS_ALIBI;
        else
            m->position = MP_POS_LEARNED;
    }

    /* bias */
    int ab = 0, mb = 0, nb = 0;
    if (fam == FAM_GPT2 || fam == FAM_NEOX) {
        m->bias = 1;
    } else if (fam == FAM_FALCON) {
        m->bias = get_bool(c, cfg, "", "bias", &nb) == 1 ? nb : 0; /* FalconConfig: False */
    } else if (fam == FAM_MPT) {
        m->bias = get_bool(c, cfg, "", "no_bias", &nb) == 1 ? !nb : 1; /* MPTConfig: False */
    } else {
        int ra = get_bool(c, cfg, "", "attention_bias", &ab);
        int rm = get_bool(c, cfg, "", "mlp_bias", &mb);
        m->bias = (ra == 1 && ab) || (rm == 1 && mb);
    }

    /* tied embeddings (Gemma and Falcon config classes default to True, as PretrainedConfig) */
    int tied = 0;
    if (get_bool(c, cfg, "", "tie_word_embeddings", &tied) == 1)
        m->tied_embeddings = tied;
    else
        m->tied_embeddings = !(fam == FAM_LLAMA || fam == FAM_NEOX);

    /* dropout */
    int drop = 0;
    for (const char *const *n = N_DROPOUT; *n; n++)
        drop |= dropout_on(c, cfg, "", *n);
    drop |= dropout_on(c, attn, "attn_config.", "attn_pdrop");
    m->dropout = drop;
}

static void read_config(hf_ctx *c, const json_t *cfg, hf_family fam, mp_model *m)
{
    const json_t *attn = field(cfg, "attn_config");
    if (attn && !json_is_object(attn)) {
        bad(c, "", "attn_config", attn, "an object");
        attn = NULL;
    }

    const char *n_layers = N_LAYERS[0], *n_hidden = N_HIDDEN[0], *n_heads = N_HEADS[0];
    const char *n_kv = N_KV[0];
    int rl = get_int_alias(c, cfg, N_LAYERS, 1, &m->layers, &n_layers);
    int rh = get_int_alias(c, cfg, N_HIDDEN, 1, &m->hidden, &n_hidden);
    int ra = get_int_alias(c, cfg, N_HEADS, 1, &m->heads, &n_heads);
    if (rl == 0)
        missing(c, "num_hidden_layers", "n_layer, n_layers, num_layers");
    if (rh == 0)
        missing(c, "hidden_size", "n_embd, d_model");
    if (ra == 0)
        missing(c, "num_attention_heads", "n_head, n_heads");

    int rkv = 0;
    if (ra == 1) {
        read_kv_heads(c, cfg, attn, fam, m, &n_kv);
        rkv = m->kv_heads > 0;
        if (rkv && (m->kv_heads > m->heads || m->heads % m->kv_heads != 0)) {
            mp_diag_add(c->diag, "config.json: %s%s = %lld: must divide %s (%lld)", c->prefix,
                        n_kv, (long long)m->kv_heads, n_heads, (long long)m->heads);
            c->errors++;
        }
    }

    int rd = get_int(c, cfg, "", "head_dim", 1, &m->head_dim);
    if (rd == 0 && rh == 1 && ra == 1) {
        if (m->hidden % m->heads != 0) {
            mp_diag_add(c->diag,
                        "config.json: %s%s = %lld: not divisible by %s (%lld) and no head_dim "
                        "given",
                        c->prefix, n_hidden, (long long)m->hidden, n_heads, (long long)m->heads);
            c->errors++;
        } else {
            m->head_dim = m->hidden / m->heads;
        }
    }

    if (get_int_alias(c, cfg, N_VOCAB, 1, &m->vocab, NULL) == 0)
        missing(c, "vocab_size", NULL);
    m->vocab_pad_multiple = 1;

    int64_t seq = 0;
    int rs = get_int_alias(c, cfg, N_SEQ, 1, &seq, NULL);
    m->seq_len = rs == 1 ? (seq > HF_SEQ_CAP ? HF_SEQ_CAP : seq) : HF_SEQ_DEFAULT;
    /* the context length (mp_model.context_len): the same field, capped at 2^30 (mp_model_check's
     * bound; a billion tokens is no limit in practice); absent = 0, unknown */
    m->context_len = rs == 1 ? (seq > ((int64_t)1 << 30) ? ((int64_t)1 << 30) : seq) : 0;

    read_flags(c, cfg, attn, fam, m);

    /* FFN width (after read_flags: the default depends on glu) */
    int rf = get_int_alias(c, cfg, N_FFN, 1, &m->ffn_hidden, NULL);
    if (rf == 0 && rh == 1) {
        const json_t *ratio = field(cfg, "expansion_ratio");
        if (ratio) {
            double r = json_is_number(ratio) ? json_number_value(ratio) : -1.0;
            double f = r * (double)m->hidden;
            if (!(r > 0.0 && f >= 1.0 && f <= (double)HF_INT_MAX))
                bad(c, "", "expansion_ratio", ratio, "a positive number");
            else
                m->ffn_hidden = (int64_t)llround(f);
        } else if (fam != FAM_LLAMA && !m->glu) {
            m->ffn_hidden = 4 * m->hidden; /* GPT-2 n_inner null; MPT expansion_ratio 4 */
        } else {
            missing(c, "intermediate_size", "n_inner, ffn_hidden_size, expansion_ratio");
        }
    }

    read_moe(c, cfg, m);
    const char *mt = json_string_value(field(cfg, "model_type"));
    read_attention_extras(c, cfg, m, rd == 1, fam == FAM_GEMMA && mt && !strcmp(mt, "gemma2"));
}

/* Warnings: a model_type meshplan does not know, and fields of known ones that it reads as
 * something simpler (mp_model_hf_warnings). */
static void warn_fields(mp_diag *diag, const json_t *cfg, const char *model_type, hf_family fam)
{
    if (fam == FAM_OTHER)
        mp_diag_add(diag, "config.json: warning: model_type %s is not a family meshplan knows: "
                    "read by the common field names (check the parameter count)",
                    model_type ? model_type : "(absent)");
    static const char *const notes[][2] = {
        {"parallel_attn", "attention and MLP read in parallel from one norm (Falcon): timed in "
                          "sequence, the same parameters and FLOPs"},
        {"attn_logit_softcapping", "attention logit soft-capping (Gemma 2): elementwise, not "
                                   "timed; FlashAttention-2 kernels without it are assumed"},
        {"final_logit_softcapping", "final logit soft-capping: elementwise, not timed"},
        {"rope_scaling", NULL},
    };
    for (size_t i = 0; i < sizeof notes / sizeof notes[0]; i++) {
        const json_t *v = field(cfg, notes[i][0]);
        if (notes[i][1] && v && !json_is_false(v))
            mp_diag_add(diag, "config.json: warning: %s: %s", notes[i][0], notes[i][1]);
    }
}

/* An encoder-decoder (T5, BART) or encoder-only model: refused with a clear message. */
static int refuse_encoder(mp_diag *diag, const json_t *root, const char *model_type)
{
    int encdec = json_is_true(json_object_get(root, "is_encoder_decoder"));
    for (const char *const *t = encdec_types; !encdec && model_type && *t; t++)
        encdec = !strcmp(model_type, *t);
    if (!encdec)
        return 0;
    mp_diag_add(diag, "config.json: model_type %s is an encoder-decoder or encoder model%s: "
                "meshplan predicts decoder-only transformers (not supported yet)",
                model_type ? model_type : "(absent)",
                json_is_true(json_object_get(root, "is_encoder_decoder")) ? " (is_encoder_decoder)" : "");
    return 1;
}

mp_status mp_model_from_hf_json(const char *json_text, size_t len, mp_model *out, mp_diag *diag)
{
    if (!out || (!json_text && len > 0)) {
        mp_diag_add(diag, "config.json: no text or no output model given");
        return MP_ERR_INPUT;
    }
    if (mp_is_blank(json_text, len)) {
        mp_diag_add(diag, "config.json: empty: expected a JSON object");
        return MP_ERR_PARSE;
    }
    json_error_t err;
    json_t *root = json_loadb(json_text ? json_text : "", len, JSON_REJECT_DUPLICATES, &err);
    if (!root) {
        if (json_error_code(&err) == json_error_out_of_memory) {
            mp_diag_add(diag, "config.json: out of memory");
            return MP_ERR_NOMEM;
        }
        char at[80];
        mp_text_line(json_text, len, err.line, err.column, at, sizeof at);
        mp_diag_add(diag, "config.json: line %d, column %d: %s%s%s%s", err.line, err.column,
                    err.text, at[0] ? " (the line reads: " : "", at, at[0] ? ")" : "");
        return MP_ERR_PARSE;
    }
    if (!json_is_object(root)) {
        mp_diag_add(diag, "config.json: the top level is %s: expected a JSON object",
                    json_is_array(root) ? "an array" : "not an object");
        json_decref(root);
        return MP_ERR_INPUT;
    }

    hf_ctx c = {diag, 0, ""};
    const json_t *cfg = root;
    const json_t *text_config = field(root, "text_config");
    if (json_is_object(text_config) && !field(root, "num_hidden_layers") &&
        !field(root, "n_layer") && !field(root, "n_layers") && !field(root, "num_layers")) {
        cfg = text_config;
        c.prefix = "text_config.";
    }

    const char *model_type = get_str(&c, cfg, "", "model_type");
    if (!model_type && cfg != root)
        model_type = json_string_value(field(root, "model_type"));
    const json_t *archs = field(root, "architectures");
    hf_family fam = family_of(model_type, archs ? archs : field(cfg, "architectures"));

    if (refuse_encoder(diag, root, model_type)) {
        json_decref(root);
        return MP_ERR_INPUT;
    }
    mp_model m;
    memset(&m, 0, sizeof m);
    read_config(&c, cfg, fam, &m);

    /* key, name, source: caller's key/name are kept when set. */
    if (out->key[0]) {
        memcpy(m.key, out->key, sizeof m.key);
        m.key[sizeof m.key - 1] = '\0';
    } else {
        copy_key(m.key, sizeof m.key, model_type && model_type[0] ? model_type : "hf-model");
    }
    if (out->name[0]) {
        memcpy(m.name, out->name, sizeof m.name);
        m.name[sizeof m.name - 1] = '\0';
    } else {
        const char *nm = json_string_value(field(root, "_name_or_path"));
        if (!nm || !nm[0])
            nm = model_type && model_type[0] ? model_type : "hf-model";
        copy_text(m.name, sizeof m.name, nm);
    }
    char mt[64];
    copy_text(mt, sizeof mt, model_type && model_type[0] ? model_type : "absent");
    snprintf(m.source, sizeof m.source, "Hugging Face config.json (model_type %s)", mt);

    json_decref(root);
    if (c.errors)
        return MP_ERR_INPUT;
    mp_status st = mp_model_check(&m, diag);
    if (st != MP_OK)
        return st;
    *out = m;
    return MP_OK;
}

int mp_model_hf_warnings(const char *json_text, size_t len, mp_diag *warnings)
{
    if (!json_text)
        return 0;
    json_t *root = json_loadb(json_text, len, 0, NULL);
    if (!json_is_object(root)) {
        json_decref(root);
        return 0;
    }
    const json_t *cfg = root;
    const json_t *text_config = field(root, "text_config");
    if (json_is_object(text_config) && !field(root, "num_hidden_layers") && !field(root, "n_layer"))
        cfg = text_config;
    const char *model_type = json_string_value(field(cfg, "model_type"));
    if (!model_type)
        model_type = json_string_value(field(root, "model_type"));
    const json_t *archs = field(root, "architectures");
    hf_family fam = family_of(model_type, archs ? archs : field(cfg, "architectures"));
    int before = warnings ? warnings->count : 0;
    mp_diag local = {0};
    warn_fields(warnings ? warnings : &local, cfg, model_type, fam);
    int n = (warnings ? warnings->count : local.count) - before;
    json_decref(root);
    return n;
}
