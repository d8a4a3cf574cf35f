/* tests/test_hf_config.c — mp_model_from_hf_json() on sample Hugging Face config.json files
 * (tests/data/hf/, written from the public configs' field names and dimensions) and on broken
 * ones: every field of the parsed model, the status and the diag text of each error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "meshplan/model.h"

#define HF_DIR MESHPLAN_SOURCE_DIR "/tests/data/hf/"
#define MAX_FILE (1 << 20)

/* Reads tests/data/hf/<name> into a malloc'd buffer (no NUL terminator is relied upon). */
static char *slurp(const char *name, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s%s", HF_DIR, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    char *buf = malloc(MAX_FILE);
    assert_non_null(buf);
    *len = fread(buf, 1, MAX_FILE, f);
    fclose(f);
    assert_true(*len > 0 && *len < MAX_FILE);
    return buf;
}

static mp_status parse_file(const char *name, mp_model *m, mp_diag *d)
{
    size_t len = 0;
    char *buf = slurp(name, &len);
    memset(m, 0, sizeof *m);
    mp_diag_clear(d);
    mp_status st = mp_model_from_hf_json(buf, len, m, d);
    free(buf);
    return st;
}

static mp_status parse_text(const char *text, mp_model *m, mp_diag *d)
{
    memset(m, 0, sizeof *m);
    mp_diag_clear(d);
    return mp_model_from_hf_json(text, strlen(text), m, d);
}

static void load_ok(const char *name, mp_model *m)
{
    mp_diag d;
    mp_status st = parse_file(name, m, &d);
    if (st != MP_OK)
        fail_msg("%s: status %d: %s", name, (int)st, d.text);
    assert_int_equal(d.count, 0);
}

static void assert_dense(const mp_model *m)
{
    assert_int_equal(m->moe_experts, 0);
    assert_int_equal(m->moe_topk, 0);
    assert_int_equal(m->moe_ffn_hidden, 0);
    assert_int_equal(m->moe_shared_experts, 0);
    assert_int_equal(m->moe_dense_layers, 0);
}

/* Checks the common Llama-family flags: SwiGLU, RMSNorm, RoPE, no bias/dropout, untied. */
static void assert_llama_flags(const mp_model *m)
{
    assert_int_equal(m->glu, 1);
    assert_int_equal(m->rmsnorm, 1);
    assert_int_equal(m->position, MP_POS_ROPE);
    assert_int_equal(m->bias, 0);
    assert_int_equal(m->dropout, 0);
    assert_int_equal(m->tied_embeddings, 0);
    assert_int_equal(m->vocab_pad_multiple, 1);
}

/* ---- samples ---- */

static void test_llama3_8b(void **state)
{
    (void)state;
    mp_model m;
    load_ok("llama3-8b.json", &m);
    assert_string_equal(m.key, "llama");
    assert_string_equal(m.name, "llama"); /* no _name_or_path */
    assert_string_equal(m.source, "Hugging Face config.json (model_type llama)");
    assert_int_equal(m.layers, 32);
    assert_int_equal(m.hidden, 4096);
    assert_int_equal(m.heads, 32);
    assert_int_equal(m.kv_heads, 8);
    assert_int_equal(m.head_dim, 128);
    assert_int_equal(m.ffn_hidden, 14336);
    assert_int_equal(m.vocab, 128256);
    assert_int_equal(m.seq_len, 8192);
    assert_int_equal(m.context_len, 8192); /* max_position_embeddings */
    assert_llama_flags(&m);
    assert_dense(&m);
}

static void test_mistral_7b(void **state)
{
    (void)state;
    mp_model m;
    load_ok("mistral-7b.json", &m);
    assert_string_equal(m.key, "mistral");
    assert_string_equal(m.name, "mistralai/Mistral-7B-v0.1");
    assert_int_equal(m.layers, 32);
    assert_int_equal(m.hidden, 4096);
    assert_int_equal(m.heads, 32);
    assert_int_equal(m.kv_heads, 8);
    assert_int_equal(m.head_dim, 128);
    assert_int_equal(m.ffn_hidden, 14336);
    assert_int_equal(m.vocab, 32000);
    assert_int_equal(m.seq_len, 32768);
    assert_llama_flags(&m);
    assert_dense(&m);
}

static void test_mixtral_8x7b(void **state)
{
    (void)state;
    mp_model m;
    load_ok("mixtral-8x7b.json", &m);
    assert_string_equal(m.key, "mixtral");
    assert_int_equal(m.layers, 32);
    assert_int_equal(m.hidden, 4096);
    assert_int_equal(m.heads, 32);
    assert_int_equal(m.kv_heads, 8);
    assert_int_equal(m.head_dim, 128);
    assert_int_equal(m.ffn_hidden, 14336);
    assert_int_equal(m.vocab, 32000);
    assert_int_equal(m.seq_len, 32768);
    assert_llama_flags(&m);
    assert_int_equal(m.moe_experts, 8);
    assert_int_equal(m.moe_topk, 2);
    assert_int_equal(m.moe_ffn_hidden, 14336); /* full-width experts */
    assert_int_equal(m.moe_shared_experts, 0);
    assert_int_equal(m.moe_dense_layers, 0);
}

static void test_qwen2_7b(void **state)
{
    (void)state;
    mp_model m;
    load_ok("qwen2-7b.json", &m);
    assert_string_equal(m.key, "qwen2");
    assert_int_equal(m.layers, 28);
    assert_int_equal(m.hidden, 3584);
    assert_int_equal(m.heads, 28);
    assert_int_equal(m.kv_heads, 4);
    assert_int_equal(m.head_dim, 128);
    assert_int_equal(m.ffn_hidden, 18944);
    assert_int_equal(m.vocab, 152064);
    assert_int_equal(m.seq_len, 131072);
    assert_llama_flags(&m); /* QKV bias ignored: bias = 0 */
    assert_dense(&m);
}

static void test_qwen2_moe(void **state)
{
    (void)state;
    mp_model m;
    load_ok("qwen2-moe.json", &m);
    assert_string_equal(m.key, "qwen2_moe");
    assert_int_equal(m.layers, 24);
    assert_int_equal(m.hidden, 2048);
    assert_int_equal(m.heads, 16);
    assert_int_equal(m.kv_heads, 16);
    assert_int_equal(m.head_dim, 128);
    assert_int_equal(m.ffn_hidden, 5632);
    assert_int_equal(m.vocab, 151936);
    assert_int_equal(m.seq_len, 8192);
    assert_llama_flags(&m);
    assert_int_equal(m.moe_experts, 60);
    assert_int_equal(m.moe_topk, 4);
    assert_int_equal(m.moe_ffn_hidden, 1408);
    assert_int_equal(m.moe_shared_experts, 4); /* 5632 / 1408 */
    assert_int_equal(m.moe_dense_layers, 0);
}

static void test_qwen3_moe(void **state)
{
    (void)state;
    mp_model m;
    load_ok("qwen3-moe.json", &m);
    assert_string_equal(m.key, "qwen3_moe");
    assert_int_equal(m.layers, 48);
    assert_int_equal(m.hidden, 2048);
    assert_int_equal(m.heads, 32);
    assert_int_equal(m.kv_heads, 4);
    assert_int_equal(m.head_dim, 128); /* explicit: heads * head_dim = 4096 != hidden */
    assert_int_equal(m.ffn_hidden, 6144);
    assert_int_equal(m.vocab, 151936);
    assert_int_equal(m.seq_len, 40960);
    assert_llama_flags(&m);
    assert_int_equal(m.moe_experts, 128);
    assert_int_equal(m.moe_topk, 8);
    assert_int_equal(m.moe_ffn_hidden, 768);
    assert_int_equal(m.moe_shared_experts, 0);
    assert_int_equal(m.moe_dense_layers, 0);
}

static void test_gpt2(void **state)
{
    (void)state;
    mp_model m;
    load_ok("gpt2.json", &m);
    assert_string_equal(m.key, "gpt2");
    assert_string_equal(m.source, "Hugging Face config.json (model_type gpt2)");
    assert_int_equal(m.layers, 12);
    assert_int_equal(m.hidden, 768);
    assert_int_equal(m.heads, 12);
    assert_int_equal(m.kv_heads, 12);
    assert_int_equal(m.head_dim, 64);
    assert_int_equal(m.ffn_hidden, 3072); /* n_inner null -> 4 * n_embd */
    assert_int_equal(m.glu, 0);
    assert_int_equal(m.vocab, 50257);
    assert_int_equal(m.vocab_pad_multiple, 1);
    assert_int_equal(m.tied_embeddings, 1); /* absent -> HF default true */
    assert_int_equal(m.position, MP_POS_LEARNED);
    assert_int_equal(m.seq_len, 1024);
    assert_int_equal(m.context_len, 1024); /* n_positions */
    assert_int_equal(m.rmsnorm, 0);
    assert_int_equal(m.bias, 1);
    assert_int_equal(m.dropout, 1); /* pdrop 0.1 */
    assert_dense(&m);
}

static void test_gpt_neox_20b(void **state)
{
    (void)state;
    mp_model m;
    load_ok("gpt-neox-20b.json", &m);
    assert_string_equal(m.key, "gpt_neox");
    assert_int_equal(m.layers, 44);
    assert_int_equal(m.hidden, 6144);
    assert_int_equal(m.heads, 64);
    assert_int_equal(m.kv_heads, 64);
    assert_int_equal(m.head_dim, 96);
    assert_int_equal(m.ffn_hidden, 24576);
    assert_int_equal(m.glu, 0);
    assert_int_equal(m.vocab, 50432);
    assert_int_equal(m.tied_embeddings, 0);
    assert_int_equal(m.position, MP_POS_ROPE);
    assert_int_equal(m.seq_len, 2048);
    assert_int_equal(m.rmsnorm, 0);
    assert_int_equal(m.bias, 1);
    assert_int_equal(m.dropout, 0);
    assert_dense(&m);
}

static void test_mpt_7b(void **state)
{
    (void)state;
    mp_model m;
    load_ok("mpt-7b.json", &m);
    assert_string_equal(m.key, "mpt");
    assert_int_equal(m.layers, 32);
    assert_int_equal(m.hidden, 4096);
    assert_int_equal(m.heads, 32);
    assert_int_equal(m.kv_heads, 32);
    assert_int_equal(m.head_dim, 128);
    assert_int_equal(m.ffn_hidden, 16384); /* expansion_ratio 4 * d_model */
    assert_int_equal(m.glu, 0);
    assert_int_equal(m.vocab, 50432);
    assert_int_equal(m.tied_embeddings, 1);
    assert_int_equal(m.position, MP_POS_ALIBI);
    assert_int_equal(m.seq_len, 2048);
    assert_int_equal(m.rmsnorm, 0);
    assert_int_equal(m.bias, 0); /* no_bias true */
    assert_int_equal(m.dropout, 0);
    assert_dense(&m);
}

static void test_deepseek_v3(void **state)
{
    (void)state;
    mp_model m;
    load_ok("deepseek-v3.json", &m);
    assert_string_equal(m.key, "deepseek_v3");
    assert_int_equal(m.layers, 61);
    assert_int_equal(m.hidden, 7168);
    assert_int_equal(m.heads, 128);
    assert_int_equal(m.kv_heads, 128);
    assert_int_equal(m.head_dim, 128); /* MLA: v_head_dim, not hidden / heads (56) */
    assert_int_equal(m.ffn_hidden, 18432);
    assert_int_equal(m.vocab, 129280);
    assert_int_equal(m.seq_len, 163840);
    assert_llama_flags(&m);
    assert_int_equal(m.moe_experts, 256);
    assert_int_equal(m.moe_topk, 8);
    assert_int_equal(m.moe_ffn_hidden, 2048);
    assert_int_equal(m.moe_shared_experts, 1);
    assert_int_equal(m.moe_dense_layers, 3);
    assert_int_equal(m.moe_layer_freq, 0); /* moe_layer_freq 1: the dense layers lead */
    /* Multi-head latent attention and the MTP module, as the file states them. */
    assert_int_equal(m.q_lora_rank, 1536);
    assert_int_equal(m.kv_lora_rank, 512);
    assert_int_equal(m.qk_rope_head_dim, 64);
    assert_int_equal(m.qk_nope_head_dim, 128);
    assert_int_equal(m.v_head_dim, 128);
    assert_int_equal(m.mtp_layers, 1);
    assert_int_equal(m.attn_window, 0);
}

/* openai/gpt-oss-120b config.json (abbreviated to the fields read; values as published):
 * experts_per_token, sliding_window 128 on the 18 even layers of layer_types, head_dim 64,
 * attention_bias true. */
static void test_gpt_oss_120b(void **state)
{
    (void)state;
    mp_model m;
    load_ok("gpt-oss-120b.json", &m);
    assert_string_equal(m.key, "gpt_oss");
    assert_int_equal(m.layers, 36);
    assert_int_equal(m.hidden, 2880);
    assert_int_equal(m.heads, 64);
    assert_int_equal(m.kv_heads, 8);
    assert_int_equal(m.head_dim, 64);
    assert_int_equal(m.glu, 1);
    assert_int_equal(m.rmsnorm, 1);
    assert_int_equal(m.bias, 1);
    assert_int_equal(m.tied_embeddings, 0);
    assert_int_equal(m.moe_experts, 128);
    assert_int_equal(m.moe_topk, 4);
    assert_int_equal(m.moe_ffn_hidden, 2880);
    assert_int_equal(m.moe_dense_layers, 0);
    assert_int_equal(m.attn_window, 128);
    assert_int_equal(m.attn_window_layers, 18);
    assert_int_equal(m.kv_lora_rank, 0);
    /* Qwen3-MoE carries "sliding_window": null and use_sliding_window false: no window. */
    load_ok("qwen3-moe.json", &m);
    assert_int_equal(m.attn_window, 0);
}

/* ---- broken files ---- */

static void expect_error(const char *name, mp_status want, const char *const *needles)
{
    mp_model m;
    mp_diag d;
    mp_status st = parse_file(name, &m, &d);
    if (st != want)
        fail_msg("%s: status %d, want %d: %s", name, (int)st, (int)want, d.text);
    assert_true(d.count >= 1);
    for (; *needles; needles++)
        if (!strstr(d.text, *needles))
            fail_msg("%s: diag lacks \"%s\": %s", name, *needles, d.text);
}

static void test_broken_truncated(void **state)
{
    (void)state;
    static const char *const n[] = {"config.json: line ", "column", NULL};
    expect_error("broken-truncated.json", MP_ERR_PARSE, n);
}

static void test_broken_top_level_array(void **state)
{
    (void)state;
    static const char *const n[] = {"array", "expected a JSON object", NULL};
    expect_error("broken-top-level-array.json", MP_ERR_INPUT, n);
}

static void test_broken_hidden_string(void **state)
{
    (void)state;
    static const char *const n[] = {
        "config.json: hidden_size = \"4096\": expected a positive integer", NULL};
    expect_error("broken-hidden-string.json", MP_ERR_INPUT, n);
}

static void test_broken_negative_layers(void **state)
{
    (void)state;
    static const char *const n[] = {"num_hidden_layers = -4: expected a positive integer", NULL};
    expect_error("broken-negative-layers.json", MP_ERR_INPUT, n);
}

static void test_broken_heads_not_dividing(void **state)
{
    (void)state;
    static const char *const n[] = {"hidden_size = 4000", "num_attention_heads (48)", NULL};
    expect_error("broken-heads-not-dividing.json", MP_ERR_INPUT, n);
}

static void test_broken_kv_not_dividing(void **state)
{
    (void)state;
    static const char *const n[] = {"num_key_value_heads = 5", "num_attention_heads (32)", NULL};
    expect_error("broken-kv-not-dividing.json", MP_ERR_INPUT, n);
}

static void test_broken_missing_hidden(void **state)
{
    (void)state;
    static const char *const n[] = {"hidden_size: missing", NULL};
    expect_error("broken-missing-hidden.json", MP_ERR_INPUT, n);
}

/* ---- in-memory cases ---- */

#define BASE "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"vocab_size\": 100, " \
             "\"intermediate_size\": 64, \"model_type\": \"llama\""

static void test_defaults_and_nulls(void **state)
{
    (void)state;
    mp_model m;
    mp_diag d;
    /* head_dim, num_key_value_heads, max_position_embeddings null -> absent; seq 2048. */
    assert_int_equal(parse_text("{" BASE ", \"hidden_size\": 32, \"head_dim\": null, "
                                "\"num_key_value_heads\": null, "
                                "\"max_position_embeddings\": null}",
                                &m, &d),
                     MP_OK);
    assert_int_equal(m.kv_heads, 4);
    assert_int_equal(m.head_dim, 8);
    assert_int_equal(m.seq_len, 2048);
    assert_int_equal(m.context_len, 0); /* absent: unknown, nothing checked */
    assert_int_equal(m.tied_embeddings, 0); /* llama family, field absent */
    /* Integral reals are integers; seq_len is capped at 2^24. */
    assert_int_equal(parse_text("{" BASE ", \"hidden_size\": 32.0, "
                                "\"max_position_embeddings\": 1000000000}",
                                &m, &d),
                     MP_OK);
    assert_int_equal(m.hidden, 32);
    assert_int_equal(m.seq_len, (int64_t)1 << 24);
    assert_int_equal(m.context_len, 1000000000); /* not capped at seq_len's 2^24 */
    assert_int_equal(parse_text("{" BASE ", \"hidden_size\": 32, \"max_position_embeddings\": 4294967296}", &m, &d),
                     MP_OK);
    assert_int_equal(m.context_len, (int64_t)1 << 30); /* mp_model_check's bound */
}

static void test_key_name_kept(void **state)
{
    (void)state;
    mp_model m;
    mp_diag d;
    memset(&m, 0, sizeof m);
    mp_diag_clear(&d);
    strcpy(m.key, "mine");
    strcpy(m.name, "My model");
    const char *t = "{" BASE ", \"hidden_size\": 32, \"_name_or_path\": \"x/y\"}";
    assert_int_equal(mp_model_from_hf_json(t, strlen(t), &m, &d), MP_OK);
    assert_string_equal(m.key, "mine");
    assert_string_equal(m.name, "My model");
    assert_int_equal(m.hidden, 32);
    /* Neither model_type nor a name: "hf-model". */
    assert_int_equal(parse_text("{\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                                "\"vocab_size\": 100, \"hidden_size\": 32}",
                                &m, &d),
                     MP_OK);
    assert_string_equal(m.key, "hf-model");
    assert_string_equal(m.name, "hf-model");
    assert_int_equal(m.ffn_hidden, 128); /* unknown non-GLU family: 4 * hidden */
    assert_int_equal(m.tied_embeddings, 1);
}

static void test_bad_integers(void **state)
{
    (void)state;
    mp_model m;
    mp_diag d;
    assert_int_equal(parse_text("{" BASE ", \"hidden_size\": 32.5}", &m, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "hidden_size = 32.5: expected a positive integer"));
    assert_int_equal(parse_text("{" BASE ", \"hidden_size\": 1099511627777}", &m, &d),
                     MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "hidden_size = 1099511627777: expected an integer no larger"));
    assert_int_equal(parse_text("{" BASE ", \"hidden_size\": true}", &m, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "hidden_size = true"));
    assert_int_equal(parse_text("{" BASE ", \"hidden_size\": 0}", &m, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "hidden_size = 0"));
    assert_int_equal(parse_text("{" BASE ", \"hidden_size\": 32, \"tie_word_embeddings\": \"no\"}",
                                &m, &d),
                     MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "tie_word_embeddings = \"no\": expected true or false"));
    assert_int_equal(parse_text("{" BASE ", \"hidden_size\": 32, \"num_local_experts\": 4, "
                                "\"num_experts_per_tok\": 5}",
                                &m, &d),
                     MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "num_experts_per_tok = 5"));
    assert_int_equal(parse_text("{" BASE ", \"hidden_size\": 32, \"num_local_experts\": 4}", &m,
                                &d),
                     MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "num_experts_per_tok: missing"));
    /* A failed parse leaves *out as it was. */
    memset(&m, 0, sizeof m);
    m.hidden = 77;
    mp_diag_clear(&d);
    const char *t = "{" BASE ", \"hidden_size\": -1}";
    assert_int_equal(mp_model_from_hf_json(t, strlen(t), &m, &d), MP_ERR_INPUT);
    assert_int_equal(m.hidden, 77);
}

static void test_parse_errors(void **state)
{
    (void)state;
    mp_model m;
    mp_diag d;
    memset(&m, 0, sizeof m);
    mp_diag_clear(&d);
    assert_int_equal(mp_model_from_hf_json("", 0, &m, &d), MP_ERR_PARSE);
    mp_diag_clear(&d);
    assert_int_equal(mp_model_from_hf_json(NULL, 0, &m, &d), MP_ERR_PARSE);
    mp_diag_clear(&d);
    assert_int_equal(mp_model_from_hf_json(NULL, 5, &m, &d), MP_ERR_INPUT);
    assert_int_equal(parse_text("{\"a\": 1, \"a\": 2}", &m, &d), MP_ERR_PARSE);
    assert_int_equal(parse_text("\"just a string\"", &m, &d), MP_ERR_PARSE);
    /* The text need not be NUL-terminated: only len bytes are read. */
    char buf[64];
    memset(buf, 'x', sizeof buf);
    memcpy(buf, "{}", 2);
    mp_diag_clear(&d);
    assert_int_equal(mp_model_from_hf_json(buf, 2, &m, &d), MP_ERR_INPUT); /* empty object */
    assert_non_null(strstr(d.text, "hidden_size: missing"));
}

static void test_moe_layouts(void **state)
{
    (void)state;
    mp_model m;
    mp_diag d;
    /* DeepSeek: layers 0..1 dense, then every 2nd layer sparse: 8 layers -> sparse 2,4,6. */
    assert_int_equal(parse_text("{\"num_hidden_layers\": 8, \"num_attention_heads\": 4, "
                                "\"hidden_size\": 32, \"vocab_size\": 100, "
                                "\"intermediate_size\": 64, \"n_routed_experts\": 4, "
                                "\"num_experts_per_tok\": 2, \"moe_intermediate_size\": 16, "
                                "\"first_k_dense_replace\": 2, \"moe_layer_freq\": 2}",
                                &m, &d),
                     MP_OK);
    assert_int_equal(m.moe_dense_layers, 5);
    /* Qwen: step 2 -> layers 1,3,5,7 sparse; mlp_only_layers [3, 3, 4, 99] removes layer 3. */
    assert_int_equal(parse_text("{\"num_hidden_layers\": 8, \"num_attention_heads\": 4, "
                                "\"hidden_size\": 32, \"vocab_size\": 100, "
                                "\"intermediate_size\": 64, \"num_experts\": 4, "
                                "\"num_experts_per_tok\": 2, \"moe_intermediate_size\": 16, "
                                "\"shared_expert_intermediate_size\": 40, "
                                "\"decoder_sparse_step\": 2, \"mlp_only_layers\": [3, 3, 4, 99]}",
                                &m, &d),
                     MP_OK);
    assert_int_equal(m.moe_dense_layers, 5);
    assert_int_equal(m.moe_shared_experts, 3); /* round(40 / 16) */
    /* Experts 0 means dense: other MoE fields are ignored. */
    assert_int_equal(parse_text("{" BASE ", \"hidden_size\": 32, \"num_experts\": 0, "
                                "\"moe_intermediate_size\": 16}",
                                &m, &d),
                     MP_OK);
    assert_dense(&m);
}

static void test_text_config_and_mpt_gqa(void **state)
{
    (void)state;
    mp_model m;
    mp_diag d;
    assert_int_equal(parse_text("{\"model_type\": \"wrapper\", \"text_config\": {" BASE
                                ", \"hidden_size\": 32, \"num_key_value_heads\": 3}}",
                                &m, &d),
                     MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "text_config.num_key_value_heads = 3"));
    assert_int_equal(parse_text("{\"model_type\": \"mpt\", \"d_model\": 64, \"n_heads\": 8, "
                                "\"n_layers\": 2, \"vocab_size\": 10, \"expansion_ratio\": 2.5, "
                                "\"attn_config\": {\"attn_type\": \"grouped_query_attention\", "
                                "\"kv_n_heads\": 2, \"alibi\": false, \"rope\": true}}",
                                &m, &d),
                     MP_OK);
    assert_int_equal(m.kv_heads, 2);
    assert_int_equal(m.ffn_hidden, 160);
    assert_int_equal(m.position, MP_POS_ROPE);
    assert_int_equal(m.bias, 1); /* no_bias absent */
}

/* Every prefix of a good file and every single-byte corruption returns a status, no crash
 * (run under ASan/UBSan with -DMESHPLAN_SANITIZE=ON). */
static void test_no_crash(void **state)
{
    (void)state;
    size_t len = 0;
    char *buf = slurp("mpt-7b.json", &len);
    mp_model m;
    mp_diag d;
    size_t last = len;
    while (last > 0 && buf[last - 1] != '}')
        last--;
    for (size_t n = 0; n < len; n++) {
        memset(&m, 0, sizeof m);
        mp_diag_clear(&d);
        mp_status st = mp_model_from_hf_json(buf, n, &m, &d);
        if (n < last)
            assert_int_equal(st, MP_ERR_PARSE);
        else
            assert_int_equal(st, MP_OK);
    }
    static const char subst[] = {'"', '{', '[', '-', '0', 'e', '\0', '\\', (char)0xff};
    for (size_t i = 0; i < len; i++) {
        char saved = buf[i];
        for (size_t k = 0; k < sizeof subst; k++) {
            buf[i] = subst[k];
            memset(&m, 0, sizeof m);
            mp_diag_clear(&d);
            mp_status st = mp_model_from_hf_json(buf, len, &m, &d);
            assert_true(st >= MP_OK && st < MP_STATUS_COUNT);
            assert_true(st == MP_OK || d.count >= 1);
        }
        buf[i] = saved;
    }
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama3_8b),
        cmocka_unit_test(test_mistral_7b),
        cmocka_unit_test(test_mixtral_8x7b),
        cmocka_unit_test(test_qwen2_7b),
        cmocka_unit_test(test_qwen2_moe),
        cmocka_unit_test(test_qwen3_moe),
        cmocka_unit_test(test_gpt2),
        cmocka_unit_test(test_gpt_neox_20b),
        cmocka_unit_test(test_mpt_7b),
        cmocka_unit_test(test_deepseek_v3),
        cmocka_unit_test(test_gpt_oss_120b),
        cmocka_unit_test(test_broken_truncated),
        cmocka_unit_test(test_broken_top_level_array),
        cmocka_unit_test(test_broken_hidden_string),
        cmocka_unit_test(test_broken_negative_layers),
        cmocka_unit_test(test_broken_heads_not_dividing),
        cmocka_unit_test(test_broken_kv_not_dividing),
        cmocka_unit_test(test_broken_missing_hidden),
        cmocka_unit_test(test_defaults_and_nulls),
        cmocka_unit_test(test_key_name_kept),
        cmocka_unit_test(test_bad_integers),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_moe_layouts),
        cmocka_unit_test(test_text_config_and_mpt_gqa),
        cmocka_unit_test(test_no_crash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
