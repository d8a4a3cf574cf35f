/* src/infer/engine.c — engine profiles as data: data/engines.json (embedded at build time, as the
 * catalog's files are) read into mp_engine_profile. The values and their sources live in the
 * JSON; this file only reads and checks them. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "json_reader.h"
#include "meshplan/infer.h"

static const char *find_file(size_t *len)
{
    for (const struct mp_embedded_file *f = mp_embedded_files; f->name; f++)
        if (!strcmp(f->name, "engines.json")) {
            *len = f->len;
            return f->data;
        }
    return NULL;
}

static void read_profile(mp_jreader *r, const json_t *o, mp_engine_profile *p)
{
    int64_t block = 0;
    char budget[16] = "";
    json_t *so = json_object_get(o, "source");
    mp_jr_str(r, o, "version", p->version, sizeof p->version);
    if (json_is_string(so))
        snprintf(p->source, sizeof p->source, "%s", json_string_value(so));
    mp_jr_num(r, o, "step_overhead_graphs_s", 0, 0, 1, &p->step_overhead_graphs_s, "seconds in [0, 1]");
    mp_jr_num(r, o, "step_overhead_eager_s", 0, 0, 1, &p->step_overhead_eager_s, "seconds in [0, 1]");
    mp_jr_num(r, o, "gemm_frac", 0, 1, 1, &p->gemm_frac, "a fraction in (0, 1]");
    mp_jr_num(r, o, "attn_frac", 0, 1, 1, &p->attn_frac, "a fraction in (0, 1]");
    mp_jr_num(r, o, "mem_frac", 0, 1, 1, &p->mem_frac, "a fraction in (0, 1]");
    mp_jr_num(r, o, "kv_frac", 0, 1, 1, &p->kv_frac, "a fraction in (0, 1]");
    mp_jr_int(r, o, "block_tokens", 1, 4096, &block);
    p->block_tokens = (int)block;
    mp_jr_num(r, o, "max_batched_tokens", 1, 0, 1e7, &p->max_batched_tokens, "tokens in [1, 1e7]");
    mp_jr_num(r, o, "runtime_bytes", 0, 0, 1e12, &p->runtime_bytes, "bytes in [0, 1e12]");
    mp_jr_num(r, o, "max_batch", 1, 0, 1e6, &p->max_batch, "sequences in [1, 1e6]");
    json_t *pl = json_object_get(o, "step_overhead_eager_per_layer_s");
    if (pl)
        mp_jr_num(r, o, "step_overhead_eager_per_layer_s", 0, 0, 0.1, &p->step_overhead_eager_per_layer_s, "seconds in [0, 0.1]");
    mp_jr_num(r, o, "runtime_multi_gpu_bytes", 0, 0, 1e12, &p->runtime_multi_gpu_bytes, "bytes in [0, 1e12]");
    mp_jr_str(r, o, "kv_budget", budget, sizeof budget);
    if (!strcmp(budget, "free"))
        p->kv_budget_of_free = 1;
    else if (strcmp(budget, "total"))
        mp_jr_bad(r, "kv_budget", json_object_get(o, "kv_budget"), "\"total\" or \"free\"");
    if (!(p->gemm_frac > 0 && p->attn_frac > 0 && p->mem_frac > 0 && p->kv_frac > 0 && block > 0 && p->max_batch >= 1)) {
        mp_diag_add(r->diag, "%s: %s: gemm_frac, attn_frac, mem_frac, kv_frac, block_tokens and max_batch are required",
                    r->origin, r->where);
        r->errors++;
    }
}

mp_status mp_engine_profile_get(mp_engine_id e, mp_engine_profile *out, mp_diag *diag)
{
    memset(out, 0, sizeof *out);
    if ((unsigned)e >= MP_ENGINE_COUNT) {
        mp_diag_add(diag, "engine %d: expected vllm, sglang, trtllm or hf", (int)e);
        return MP_ERR_INPUT;
    }
    size_t len = 0;
    const char *text = find_file(&len);
    json_t *root = text ? mp_json_load(text, len, "engines.json", diag) : NULL;
    json_t *arr = root ? json_object_get(root, "engines") : NULL;
    if (!json_is_array(arr)) {
        if (root || !text)
            mp_diag_add(diag, "engines.json: expected an object with an engines array");
        json_decref(root);
        return MP_ERR_PARSE;
    }
    mp_jreader r = {"engines.json", "", diag, 0, MP_OK};
    size_t i;
    json_t *o;
    int found = 0;
    json_array_foreach(arr, i, o) {
        json_t *k = json_object_get(o, "key");
        if (!json_is_string(k) || strcmp(json_string_value(k), mp_engine_name(e)))
            continue;
        snprintf(r.where, sizeof r.where, "engines[%zu] (%s)", i, mp_engine_name(e));
        snprintf(out->key, sizeof out->key, "%s", mp_engine_name(e));
        read_profile(&r, o, out);
        found = 1;
    }
    json_decref(root);
    if (!found) {
        mp_diag_add(diag, "engines.json: no profile for engine \"%s\"", mp_engine_name(e));
        return MP_ERR_PARSE;
    }
    return r.errors ? MP_ERR_PARSE : MP_OK;
}
