/* meshplan/web.h — the local web app's requests and answers, without sockets: `meshplan web`
 * (src/cli/cmd_web.c, libmicrohttpd) passes each request here and sends back what comes out, so
 * the API is tested by calling mp_web_handle directly (tests/test_web.c).
 *
 *   GET  /                      the page (src/web/page/index.html), its app.js and style.css
 *   GET  /vendor/chart.umd.min.js  Chart.js 4.6.1 (vendor/chart.js-4.6.1, MIT)
 *   GET  /api/catalog           {"models": [...], "gpus": [...], "nodes": [...], "clusters": [...]}
 *   POST /api/predict           {"model", "gpu", "gpus", "plan"[, "cluster", "gpus_per_node",
 *                                "scale_out"]} -> the JSON of `predict --json`
 *                                (mp_report_estimate_json)
 *   POST /api/trace             the body of /api/predict -> the JSON of `trace --json` for the
 *                                job (mp_report_trace_json; default simulator options, no trace
 *                                file, at most MP_WEB_MAX_SIM_EVENTS events)
 *   POST /api/search            {"model", "gpu", "gpus", "gb"[, "seq", "precision", "fix",
 *                                "objective", "tokens", "price_gpu_hour", "top",
 *                                "gpus_per_node", "scale_out"]} -> the JSON of `search --json`
 *                                (mp_search_report_json)
 *   POST /api/infer             {"model", "gpu", "plan"[, "gpus", "cluster", "gpus_per_node",
 *                                "scale_out", "catalog"]} (api.h "infer"; plan: an inference
 *                                plan, `infer --plan`) -> the JSON of `infer --json`
 *                                (mp_report_infer_json)
 * Everything served is embedded in the binary (cmake/embed_files.cmake); no file is opened, so
 * no path can reach outside it. Models, GPUs, links and clusters are keys of the server's catalog
 * or shipped presets, or inline objects ("model": a model object, "cluster": a cluster
 * description), never file names. The requests are read by the request layer's reader
 * (src/api/api_request.c, as api.h's calls are) against the catalog passed here; a request
 * brings no catalog of its own ("catalog" is an unknown field except in /api/infer), and
 * /api/search takes no "threads", "no_prune" or "orders" (the server's to choose).
 *
 * Errors answer a JSON object {"error": "message", "field": "name"} ("field" when one field is
 * at fault; the message names the field, the value and what was expected):
 *   400 malformed JSON ("malformed JSON at line L, column C: ..."), not an object, an unknown
 *       field, a wrong type, a value out of range, an unknown model / GPU / link / cluster, a
 *       plan that cannot be formed (field: the plan key at fault, e.g. "plan.tp"), a search
 *       space over MP_WEB_MAX_SEARCH_PLANS plans; /api/infer answers an unknown catalog key 404;
 *   404 an unknown path; 405 a method the path does not take; 413 a body over
 *   MP_WEB_MAX_BODY_BYTES; 500 out of memory or an internal error.
 * A plan that forms but does not fit is an answer (200, "feasible": false), as in the CLI. */
#ifndef MESHPLAN_WEB_H
#define MESHPLAN_WEB_H

#include <stddef.h>
#include <stdint.h>

#include "meshplan/catalog.h"
#include "meshplan/status.h"

/** Largest request body taken, bytes; larger bodies get 413. */
#define MP_WEB_MAX_BODY_BYTES 65536
/** Most events /api/trace simulates (a step past it gets 400: use `meshplan trace`); about a
 *  second of simulation (bench/bench_sim.c rates). */
#define MP_WEB_MAX_SIM_EVENTS 2000000
/** Largest search space /api/search evaluates (plans over every GPU count); larger gets 400
 *  asking to pin keys with "fix". About 3 s on two cores (bench/bench_search.c rates). */
#define MP_WEB_MAX_SEARCH_PLANS 2000000ULL

/** One answer. body is malloc'd (free with mp_web_response_free); content_type is static. */
typedef struct {
    int status;               /* HTTP status code */
    const char *content_type; /* "application/json", "text/html; charset=utf-8", ... */
    char *body;
    size_t len;               /* bytes in body */
} mp_web_response;

/** Answer one request. method: "GET", "POST", ...; path: the request target (a query string
 *  after '?' is ignored); body, len: the request body (may be NULL when len is 0; the server
 *  passes at most MP_WEB_MAX_BODY_BYTES, and a longer len is answered 413 here too). cat: the
 *  catalog to use (not modified; mp_web_handle may run on several threads at once with one
 *  catalog). Always fills *out (status 500 with an empty body only when out of memory) and
 *  returns MP_OK, or MP_ERR_NOMEM when even the error answer could not be allocated. */
mp_status mp_web_handle(const mp_catalog *cat, const char *method, const char *path,
                        const char *body, size_t len, mp_web_response *out);

/** Free the body; r may be NULL. */
void mp_web_response_free(mp_web_response *r);

#endif
