/* src/report/report_infer.c — infer --json: the object of one mp_infer_result (or, for a batch
 * sweep, {"sweep": [...]}), written once here for the CLI (cmd_infer.c), the request -> JSON
 * layer (src/api/api_infer.c) and the web server's /api/infer. */
#include <jansson.h>

#include "meshplan/infer.h"

static json_t *phase_json(const mp_infer_phase *ph)
{
    return json_pack("{s:f,s:f,s:f,s:f,s:f,s:s,s:f,s:f,s:f,s:f,s:f}", "compute_s", ph->compute_s,
                     "memory_s", ph->memory_s, "communication_s", ph->comm_s, "overhead_s",
                     ph->overhead_s, "total_s", ph->total_s, "bound", ph->bound, "flop", ph->flop,
                     "bytes", ph->bytes, "mfu", ph->mfu, "mbu", ph->mbu, "power_w", ph->power_w);
}

static json_t *result_json(const mp_infer_result *r)
{
    char plan[512];
    mp_infer_plan_format(&r->plan, plan, sizeof plan);
    json_t *mem = json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "weights", r->weights_bytes, "kv",
                            r->kv_bytes, "activations", r->activations_bytes, "runtime",
                            r->runtime_bytes, "total", r->total_bytes, "capacity", r->capacity_bytes,
                            "kv_pool", r->kv_pool_bytes);
    json_t *assumed = json_array();
    for (int i = 0; assumed && i < r->nassumed; i++)
        json_array_append_new(assumed, json_string(r->assumed[i]));
    json_t *o = json_pack("{s:s,s:s,s:b,s:s,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "plan", plan, "engine_version",
                          r->engine.version, "feasible", r->feasible, "reason", r->reason, "ttft_s",
                          r->ttft_s, "tpot_s", r->tpot_s, "e2e_s", r->e2e_s, "output_tokens_per_s",
                          r->output_tokens_per_s, "output_tokens_per_s_per_gpu",
                          r->output_tokens_per_s_per_gpu, "output_tokens_per_s_per_replica",
                          r->output_tokens_per_s_per_replica, "requests_per_s", r->requests_per_s);
    if (!o || !mem || !assumed) {
        json_decref(o);
        json_decref(mem);
        json_decref(assumed);
        return NULL;
    }
    json_object_set_new(o, "memory_bytes", mem);
    json_object_set_new(o, "kv_bytes_per_token", json_real(r->kv_bytes_per_token));
    json_object_set_new(o, "kv_bytes_per_token_per_gpu", json_real(r->kv_bytes_per_token_gpu));
    json_object_set_new(o, "max_concurrency", json_integer(r->max_concurrency));
    json_object_set_new(o, "power_w", json_real(r->power_w));
    json_object_set_new(o, "energy_j_per_output_token", json_real(r->energy_j_per_output_token));
    json_object_set_new(o, "mfu_prefill", json_real(r->prefill.mfu));
    json_object_set_new(o, "mbu_decode", json_real(r->decode.mbu));
    json_object_set_new(o, "prefill", phase_json(&r->prefill));
    json_object_set_new(o, "decode", phase_json(&r->decode));
    json_object_set_new(o, "assumed", assumed);
    return o;
}

char *mp_report_infer_json(const mp_infer_result *rows, size_t nrows, int sweep)
{
    json_t *out = NULL;
    if (!sweep) {
        out = nrows == 1 ? result_json(&rows[0]) : NULL;
    } else {
        json_t *arr = json_array();
        for (size_t i = 0; arr && i < nrows; i++)
            if (json_array_append_new(arr, result_json(&rows[i]))) {
                json_decref(arr);
                arr = NULL;
            }
        out = arr ? json_pack("{s:o}", "sweep", arr) : NULL;
    }
    char *s = out ? json_dumps(out, JSON_INDENT(2)) : NULL;
    json_decref(out);
    return s;
}
