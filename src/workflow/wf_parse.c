/* src/workflow/wf_parse.c — the workflow file (docs/workflow.md) into an mp_workflow: LLMs
 * resolved from the catalog, calls with their lengths, fan-out, repeats and dependencies (ids
 * of earlier calls, so the graph is acyclic by construction). Every bad field is one diag line. */
#include <stdio.h>
#include <string.h>

#include "json_reader.h"
#include "meshplan/workflow.h"

static int find_name(const char *names, size_t stride, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names + (size_t)i * stride, s) == 0)
            return i;
    return -1;
}

static void parse_llm(mp_jreader *r, const mp_catalog *cat, const json_t *o, mp_workflow *w)
{
    static const char *const known[] = {"name", "model", "weights", "engine", "role", NULL};
    mp_wf_llm *l = &w->llm[w->nllms];
    char model[64] = "", wq[16] = "bf16", eng[16] = "vllm";
    mp_jr_check_keys(r, o, known);
    if (!mp_jr_str(r, o, "name", l->name, sizeof l->name))
        mp_jr_bad(r, "name", json_object_get(o, "name"), "a name, unique in llms");
    else if (find_name(w->llm[0].name, sizeof w->llm[0], w->nllms, l->name) >= 0)
        mp_jr_bad(r, "name", json_object_get(o, "name"), "a name not used by another LLM");
    if (!mp_jr_str(r, o, "model", model, sizeof model))
        mp_jr_bad(r, "model", json_object_get(o, "model"), "a catalog model key");
    else if (!mp_catalog_model(cat, model))
        mp_jr_bad(r, "model", json_object_get(o, "model"), "a catalog model key (meshplan catalog models)");
    else
        l->model = *mp_catalog_model(cat, model);
    mp_jr_str(r, o, "weights", wq, sizeof wq);
    mp_jr_str(r, o, "engine", eng, sizeof eng);
    l->weights = -1;
    for (int i = 0; i < MP_WQ_COUNT; i++)
        if (strcmp(wq, mp_infer_weights_name((mp_infer_weights)i)) == 0)
            l->weights = i;
    if (l->weights < 0)
        mp_jr_bad(r, "weights", json_object_get(o, "weights"), "bf16, fp16, fp8, fp4, int8 or int4");
    l->engine = -1;
    for (int i = 0; i < MP_ENGINE_COUNT; i++)
        if (strcmp(eng, mp_engine_name((mp_engine_id)i)) == 0)
            l->engine = i;
    if (l->engine < 0)
        mp_jr_bad(r, "engine", json_object_get(o, "engine"), "vllm, sglang or trtllm");
    w->nllms++;
}

static void parse_call(mp_jreader *r, const json_t *o, mp_workflow *w)
{
    static const char *const known[] = {"id", "llm", "in_tokens", "out_tokens", "fanout", "repeat",
                                        "after", NULL};
    mp_wf_call *c = &w->call[w->ncalls];
    char llm[32] = "";
    int64_t v;
    mp_jr_check_keys(r, o, known);
    if (!mp_jr_str(r, o, "id", c->id, sizeof c->id))
        mp_jr_bad(r, "id", json_object_get(o, "id"), "an id, unique in calls");
    else if (find_name(w->call[0].id, sizeof w->call[0], w->ncalls, c->id) >= 0)
        mp_jr_bad(r, "id", json_object_get(o, "id"), "an id not used by another call");
    c->llm = -1;
    if (mp_jr_str(r, o, "llm", llm, sizeof llm))
        c->llm = find_name(w->llm[0].name, sizeof w->llm[0], w->nllms, llm);
    if (c->llm < 0)
        mp_jr_bad(r, "llm", json_object_get(o, "llm"), "the name of one of llms");
    c->in = c->out = 0;
    if (!mp_jr_int(r, o, "in_tokens", 1, 1 << 20, &c->in))
        mp_jr_bad(r, "in_tokens", json_object_get(o, "in_tokens"), "prompt tokens, 1 to 1048576");
    if (!mp_jr_int(r, o, "out_tokens", 1, 1 << 20, &c->out))
        mp_jr_bad(r, "out_tokens", json_object_get(o, "out_tokens"), "output tokens, 1 to 1048576");
    v = 1;
    mp_jr_int(r, o, "fanout", 1, 256, &v);
    c->fanout = (int)v;
    v = 1;
    mp_jr_int(r, o, "repeat", 1, 64, &v);
    c->repeat = (int)v;
    c->ndeps = 0;
    const json_t *after = json_object_get(o, "after");
    if (after && !json_is_array(after))
        mp_jr_bad(r, "after", after, "an array of ids of earlier calls");
    size_t i;
    const json_t *d;
    json_array_foreach(after, i, d) {
        int k = json_is_string(d) ? find_name(w->call[0].id, sizeof w->call[0], w->ncalls, json_string_value(d)) : -1;
        if (k < 0 || c->ndeps >= MP_WF_MAX_DEPS)
            mp_jr_bad(r, "after", d, "the id of an earlier call (at most 8)");
        else
            c->deps[c->ndeps++] = k;
    }
    w->ncalls++;
}

mp_status mp_workflow_parse(const mp_catalog *cat, const char *text, size_t len, const char *source,
                            mp_workflow *out, mp_diag *diag)
{
    static const char *const known[] = {"name", "llms", "calls", "source", NULL};
    memset(out, 0, sizeof *out);
    json_t *root = mp_json_load(text, len, source, diag);
    if (!root)
        return MP_ERR_PARSE;
    mp_jreader r = {source, "", diag, 0, MP_OK};
    if (!json_is_object(root)) {
        mp_jr_bad(&r, "(top level)", root, "an object with llms and calls");
        json_decref(root);
        return MP_ERR_INPUT;
    }
    mp_jr_check_keys(&r, root, known);
    snprintf(out->name, sizeof out->name, "workflow");
    mp_jr_str(&r, root, "name", out->name, sizeof out->name);
    const json_t *llms = json_object_get(root, "llms"), *calls = json_object_get(root, "calls");
    if (!json_is_array(llms) || json_array_size(llms) < 1 || json_array_size(llms) > MP_WF_MAX_LLMS)
        mp_jr_bad(&r, "llms", llms, "an array of 1 to 16 LLMs");
    if (!json_is_array(calls) || json_array_size(calls) < 1 || json_array_size(calls) > MP_WF_MAX_CALLS)
        mp_jr_bad(&r, "calls", calls, "an array of 1 to 64 calls");
    if (r.errors == 0) {
        size_t i;
        const json_t *o;
        json_array_foreach(llms, i, o) {
            snprintf(r.where, sizeof r.where, "llms[%zu]", i);
            if (!json_is_object(o))
                mp_jr_bad(&r, "", o, "an object");
            else
                parse_llm(&r, cat, o, out);
        }
        json_array_foreach(calls, i, o) {
            snprintf(r.where, sizeof r.where, "calls[%zu]", i);
            if (!json_is_object(o))
                mp_jr_bad(&r, "", o, "an object");
            else
                parse_call(&r, o, out);
        }
    }
    json_decref(root);
    return r.errors ? MP_ERR_INPUT : MP_OK;
}
