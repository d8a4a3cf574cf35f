/* meshplan/api.h — the request -> JSON layer: one call per CLI command, taking a JSON request
 * and giving back the JSON text that `meshplan COMMAND --json` prints for the same job.
 *
 * For bindings (python/, over libmeshplan.so) and servers (`meshplan web`): they need neither
 * the structs of the other headers nor jansson, only text in and text out.
 *
 *   char *out = NULL;
 *   mp_diag d = {0};
 *   mp_status st = mp_api_call_json("predict",
 *       "{\"model\":\"llama3-8b\",\"gpu\":\"h100-sxm5-80gb\",\"gpus\":8,\"plan\":\"zero=1,gb=64\"}",
 *       (size_t)-1, &out, &d);
 *   if (st == MP_OK) puts(out); else { char *e = mp_api_error_json(st, &d); puts(e); mp_api_free(e); }
 *   mp_api_free(out);
 *
 * The request is one JSON object. Unknown keys, wrong types and values out of range are
 * MP_ERR_INPUT with one diag line each, naming the key ("request.gpus = -1: expected ...").
 * The layer reads no files: models, clusters, catalogs and failure models come inline as JSON
 * objects, or by name (catalog keys, shipped cluster presets).
 *
 * Keys every request may give (where the command uses them):
 *   model          catalog key ("llama3-70b"), or an object: a model in the catalog schema
 *                  (data/models.json, has "layers_count") or a Hugging Face config.json
 *   gpu            catalog GPU key; with gpus, the GPU's usual node and its scale-out fabric
 *   gpus           GPU count, integer in [1, 2^24]
 *   gpus_per_node  integer, overrides the node size (not with cluster)
 *   scale_out      catalog link key, overrides the NICs (not with cluster)
 *   cluster        a catalog node key, a shipped preset name (examples/clusters/NAME) or a cluster
 *                  description object (docs/cluster.md); gpus (optional) sets its size and gpu
 *                  (optional) replaces its GPU. Islands descriptions are not taken here.
 *   catalog        an object in the data/ schema merged over the built-in catalog (--catalog)
 *   plan           a plan string ("tp=8,pp=2,gb=128", plan.h)
 * Per command (the CLI option of the same name with '-' as '_'):
 *   predict     model, gpu, gpus, gpus_per_node, scale_out, cluster, catalog, plan
 *   search      model, gpu, gpus (integer, or "A:B" for A, 2A, ... B), gpus_per_node, scale_out,
 *               catalog, gb (required), seq, precision, fix (a plan string), objective, tokens,
 *               price_gpu_hour, top, threads, no_prune (bool), orders ("default" | "all")
 *   collective  op, gpu, gpus, gpus_per_node, scale_out, cluster, catalog, sizes ("8:8G[:F]" or
 *               one byte count as a number), algo, type, ranks, stride
 *   run         model, gpu, gpus, gpus_per_node, scale_out, catalog, plan, tokens (required),
 *               price_gpu_hour, capex_per_gpu, amortization_years, price_kwh, pue,
 *               grid_gco2_per_kwh, power_cap_W, host_util, checkpoint_GBps,
 *               checkpoint_interval_s, restart_s, repair_h, spare_nodes (integer or "auto"),
 *               failures (a failure-model object, faults.h), failure_scale, trials, seed,
 *               async_checkpoint (bool)
 *   infer       model, gpu, gpus (default tp x pp x dp of the plan), gpus_per_node, scale_out,
 *               cluster, catalog, plan (an inference plan string as `meshplan infer --plan`
 *               takes it: "tp=4,weights=fp8,kv=fp8,batch=64,in=2048,out=256", infer.h); one
 *               batch (the CLI's --batch sweep is not taken)
 * The output of each is the CLI's --json object for that command: predict (report.h
 * mp_report_estimate_json), search (search.h mp_search_report_json), collective
 * ({op, ranks, stride, cluster, rows[...]}), run (the `run --json` keys) and infer (infer.h
 * mp_report_infer_json). Numbers are exact
 * (JSON reals with 10 significant digits or more).
 */
#ifndef MESHPLAN_API_H
#define MESHPLAN_API_H

#include <stddef.h>

#include "meshplan/status.h"

/** Most bytes a request may hold (a cluster or model object inline included). */
#define MP_API_MAX_REQUEST_BYTES (1u << 20)

/** The commands of the layer, in one list: X(name, function). */
#define MP_API_LIST(X)                      \
    X(predict, mp_api_predict_json)         \
    X(search, mp_api_search_json)           \
    X(collective, mp_api_collective_json)   \
    X(run, mp_api_run_json)                 \
    X(infer, mp_api_infer_json)

/** Each command: request[0..len) (len (size_t)-1: NUL-terminated) -> *out, a malloc'd
 *  NUL-terminated JSON object (free with mp_api_free). On failure *out is NULL and the status
 *  says why: MP_ERR_PARSE (the request is not JSON, or a plan string not key=value),
 *  MP_ERR_INPUT (a bad value; a plan that cannot be formed), MP_ERR_NOT_FOUND (an unknown catalog
 *  key), MP_ERR_NOMEM, MP_ERR_INTERNAL; diag (may be NULL) holds one line per problem. An
 *  infeasible plan (memory over capacity) is an answer: MP_OK with "feasible": false. Thread-safe:
 *  each call builds its own catalog. */
mp_status mp_api_predict_json(const char *request, size_t len, char **out, mp_diag *diag);
mp_status mp_api_search_json(const char *request, size_t len, char **out, mp_diag *diag);
mp_status mp_api_collective_json(const char *request, size_t len, char **out, mp_diag *diag);
mp_status mp_api_run_json(const char *request, size_t len, char **out, mp_diag *diag);
mp_status mp_api_infer_json(const char *request, size_t len, char **out, mp_diag *diag);

/** The same, by command name ("predict", "search", "collective", "run",
 *  "infer"): MP_ERR_NOT_FOUND with
 *  a diag line listing the names when there is no such command. */
mp_status mp_api_call_json(const char *command, const char *request, size_t len, char **out,
                           mp_diag *diag);

/** Number of commands, and the name of command i (NULL out of range). */
size_t mp_api_command_count(void);
const char *mp_api_command_name(size_t i);

/** The error object of a failed call, malloc'd (free with mp_api_free; NULL when out of memory):
 *  {"status": "bad input", "code": 1, "message": "<diag text>", "messages": [lines...],
 *   "field": "gpus", "value": "-1"} — field and value from the first diag line that follows the
 *  library's convention "[origin: ][where.]FIELD = VALUE: ..." (FIELD an identifier with '.'
 *  and '[]', VALUE a quoted string or one word; a "request." prefix dropped: "gpus",
 *  "plan.tp") or names an 'unknown field "FIELD"' or 'unknown key "FIELD"' (value ""); both null when no line does. */
char *mp_api_error_json(mp_status st, const mp_diag *diag);

/** Release a string returned by this layer (free(); exported so that bindings free with the
 *  library's allocator). NULL is a no-op. */
void mp_api_free(void *p);

#endif
