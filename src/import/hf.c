/* src/import/hf.c — a model config: a Hugging Face config.json (read by mp_model_from_hf_json,
 * src/model/hf_config.c) or DeepSeek's native inference config (deepseek-ai/DeepSeek-V3
 * inference/configs/config_*.json: the ModelArgs of inference/model.py), whose keys are renamed
 * to the Hugging Face DeepseekV3Config's before reading. The file states no plan and no
 * cluster: those are meshplan's defaults (or --gpus, --gpu). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/import_internal.h"
#include "internal.h"

/* DeepSeek native ModelArgs key -> DeepseekV3Config key (inference/model.py names them). */
static const char *const native_keys[][2] = {
    {"vocab_size", "vocab_size"}, {"dim", "hidden_size"}, {"inter_dim", "intermediate_size"},
    {"moe_inter_dim", "moe_intermediate_size"}, {"n_layers", "num_hidden_layers"},
    {"n_dense_layers", "first_k_dense_replace"}, {"n_heads", "num_attention_heads"},
    {"n_routed_experts", "n_routed_experts"}, {"n_shared_experts", "n_shared_experts"},
    {"n_activated_experts", "num_experts_per_tok"}, {"n_expert_groups", "n_group"},
    {"n_limited_groups", "topk_group"}, {"route_scale", "routed_scaling_factor"},
    {"score_func", "scoring_func"}, {"q_lora_rank", "q_lora_rank"},
    {"kv_lora_rank", "kv_lora_rank"}, {"qk_nope_head_dim", "qk_nope_head_dim"},
    {"qk_rope_head_dim", "qk_rope_head_dim"}, {"v_head_dim", "v_head_dim"},
    {"max_seq_len", "max_position_embeddings"}, {"original_seq_len", "original_max_position_embeddings"},
    {"rope_theta", "rope_theta"}, {"dtype", "torch_dtype"}, {"max_batch_size", "max_batch_size"},
    {"rope_factor", "rope_factor"}, {"beta_fast", "beta_fast"}, {"beta_slow", "beta_slow"},
    {"mscale", "mscale"},
};

/* A native config as a DeepseekV3Config JSON text (malloc'd), or NULL if it is not one. */
static char *native_to_hf(const char *text, size_t len)
{
    json_t *root = json_loadb(text, len, 0, NULL);
    if (!json_is_object(root) || json_object_get(root, "model_type") ||
        !json_object_get(root, "n_layers") || !json_object_get(root, "dim")) {
        json_decref(root);
        return NULL;
    }
    json_t *hf = json_object();
    for (size_t i = 0; i < sizeof native_keys / sizeof native_keys[0]; i++) {
        json_t *v = json_object_get(root, native_keys[i][0]);
        if (v)
            json_object_set(hf, native_keys[i][1], v);
    }
    json_object_set_new(hf, "model_type", json_string("deepseek_v3"));
    /* ModelArgs: one MTP module is in the released weights, not in inference/model.py's
     * args; the native config stores max_seq_len only for inference (default 4096 * 4). */
    if (!json_object_get(hf, "max_position_embeddings"))
        json_object_set_new(hf, "max_position_embeddings", json_integer(4096 * 4));
    json_object_set_new(hf, "tie_word_embeddings", json_false());
    char *s = json_dumps(hf, JSON_COMPACT);
    json_decref(hf);
    json_decref(root);
    return s;
}

static const char *const model_fields[][2] = {
    {"num_hidden_layers", "model.layers"}, {"n_layers", "model.layers"},
    {"hidden_size", "model.hidden"}, {"dim", "model.hidden"},
    {"num_attention_heads", "model.heads"}, {"n_heads", "model.heads"},
    {"num_key_value_heads", "model.kv_heads"}, {"head_dim", "model.head_dim"},
    {"intermediate_size", "model.ffn_hidden"}, {"inter_dim", "model.ffn_hidden"},
    {"vocab_size", "model.vocab"}, {"num_local_experts", "model.experts"},
    {"num_experts", "model.experts"}, {"n_routed_experts", "model.experts"},
    {"num_experts_per_tok", "model.topk"}, {"n_activated_experts", "model.topk"},
    {"moe_intermediate_size", "model.moe_ffn_hidden"}, {"moe_inter_dim", "model.moe_ffn_hidden"},
    {"kv_lora_rank", "model.kv_lora_rank"}, {"q_lora_rank", "model.q_lora_rank"},
    {"max_position_embeddings", "model.max_positions"},
};

mp_status imp_hf(imp_ctx *c, const char *text, size_t len)
{
    mp_status st = imp_json_flatten(c, text, len);
    if (st != MP_OK)
        return st;
    char *native = native_to_hf(text, len);
    mp_import *o = c->out;
    memset(&o->model, 0, sizeof o->model);
    mp_diag d = {0};
    st = native ? mp_model_from_hf_json(native, strlen(native), &o->model, &d)
                : mp_model_from_hf_json(text, len, &o->model, &d);
    int is_native = native != NULL;
    free(native);
    if (st != MP_OK) {
        /* name the file, and the line of the field the message names */
        const char *line = d.text;
        while (line && *line) {
            const char *nl = strchr(line, '\n');
            size_t n = nl ? (size_t)(nl - line) : strlen(line);
            int at = 1;
            for (int i = 0; i < c->kv->n; i++) {
                char pat[IMP_KEY_CAP + 4];
                imp_fmt(pat, sizeof pat, " %s ", c->kv->v[i].key);
                char one[512];
                imp_fmt(one, sizeof one, "%.*s", (int)(n < 500 ? n : 500), line);
                if (strstr(one, pat) || strstr(one, c->kv->v[i].key)) {
                    at = c->kv->v[i].line;
                    break;
                }
            }
            mp_diag_add(c->diag, "%s:%d: %.*s", c->name, at, (int)n, line);
            line = nl ? nl + 1 : NULL;
        }
        return st;
    }
    int nwarn = 0;
    mp_diag_clear(&d);
    if (!is_native && mp_model_hf_warnings(text, len, &d)) /* a model_type not all understood */
        for (const char *line = d.text; line && *line;) {
            const char *nl = strchr(line, '\n');
            char msg[600], key[32];
            imp_fmt(msg, sizeof msg, "%.*s", (int)(nl ? nl - line : (long)strlen(line)), line);
            imp_fmt(key, sizeof key, "model.warning.%d", ++nwarn);
            imp_set(c, MP_FIELD_UNSUPPORTED, key, "not modelled", NULL, MP_FROM_DEFAULT, msg);
            line = nl ? nl + 1 : NULL;
        }
    o->have_model = 1;
    if (!(c->opts && c->opts->gpus > 0)) {
        o->gpus = 8;
        imp_set(c, MP_FIELD_CLUSTER, "gpus", "8", NULL, MP_FROM_DEFAULT,
                "a model config names no GPU count: one 8-GPU node assumed (give --gpus)");
    }
    for (size_t i = 0; i < sizeof model_fields / sizeof model_fields[0]; i++) {
        imp_kv *e = imp_find(c, model_fields[i][0]);
        if (e && !imp_is_null(e))
            imp_set(c, MP_FIELD_MODEL, model_fields[i][1], e->val, e, MP_FROM_FILE, NULL);
    }
    imp_kv *nm = imp_find(c, "_name_or_path");
    if (nm && nm->val[0])
        mp_strlcpy(o->model.name, nm->val, sizeof o->model.name);
    for (int i = 0; i < c->kv->n; i++)
        c->kv->v[i].used = 1; /* the model reader decides what it reads (model_type warnings) */
    return MP_OK;
}
