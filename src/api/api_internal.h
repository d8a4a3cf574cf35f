/* src/api/api_internal.h — what the request -> JSON commands (api_*.c) share: reading the
 * request object, and loading the catalog, model and cluster it names. Internal. */
#ifndef MESHPLAN_API_INTERNAL_H
#define MESHPLAN_API_INTERNAL_H

#include <jansson.h>

#include "json_reader.h"
#include "meshplan/meshplan.h"

/** One request being read: its root object, a field reader whose diagnostics read
 *  "COMMAND: request.FIELD = VALUE: expected ...", and the catalog it is read against: the
 *  request's own (built-in plus "catalog", in own) or the caller's (mp_api_req_open_on). */
typedef struct {
    json_t *root;
    mp_jreader r;
    const mp_catalog *cat;
    mp_catalog *own; /* cat when the request built it; NULL when cat is the caller's */
} mp_api_req;

/** Parse request[0..len) (len (size_t)-1: NUL-terminated; at most MP_API_MAX_REQUEST_BYTES) as
 *  one JSON object whose keys are all in known (NULL-terminated), then build the catalog.
 *  command names the diagnostics. On failure everything is released. */
mp_status mp_api_req_open(mp_api_req *q, const char *command, const char *request, size_t len,
                          const char *const *known, mp_diag *diag);
/** As mp_api_req_open, read against the caller's catalog cat (borrowed: never changed or freed;
 *  it must outlive q) instead of one built for the request: a server that loaded its catalog
 *  once (`meshplan web --catalog`). known must not hold "catalog". */
mp_status mp_api_req_open_on(mp_api_req *q, const mp_catalog *cat, const char *command,
                             const char *request, size_t len, const char *const *known,
                             mp_diag *diag);
void mp_api_req_close(mp_api_req *q);
/** MP_OK, or the status that the errors counted so far call for (MP_ERR_INPUT, or NOT_FOUND). */
mp_status mp_api_req_status(const mp_api_req *q);

/** A string field, or NULL when absent/null (a non-string is counted as an error). */
const char *mp_api_str(mp_api_req *q, const char *field);
/** An integer field in [lo, hi] into *out (unchanged when absent); returns 1 when present. */
int mp_api_int(mp_api_req *q, const char *field, int64_t lo, int64_t hi, int64_t *out);
/** A number field in [lo, hi] into *out (unchanged when absent); returns 1 when present. */
int mp_api_num(mp_api_req *q, const char *field, double lo, double hi, double *out);
/** A boolean field into *out (unchanged when absent). */
int mp_api_bool(mp_api_req *q, const char *field, int *out);
/** Report a missing required field (not when the field is there and an error was already
 *  counted: its refusal names its value). */
void mp_api_missing(mp_api_req *q, const char *field, const char *expected);

/** "model": a catalog key or an inline model object (catalog schema or HF config.json). */
mp_status mp_api_model(mp_api_req *q, mp_model *m);
/** "cluster" (node key, preset name or description object), else "gpu" + "gpus"
 *  (+ "gpus_per_node", "scale_out"). Islands descriptions are refused. */
mp_status mp_api_cluster(mp_api_req *q, mp_cluster *c);

/** The job of predict on a request open in q: "model", the cluster (mp_api_cluster), "plan" (a
 *  training plan on one cluster, mp_islands_plan_parse_single; absent: the defaults) resolved
 *  for the GPU count, and its estimate in *e (malloc'd, the caller's to free; NULL on failure).
 *  The status of the first step that failed, its reasons in the request's diag. */
mp_status mp_api_predict_job(mp_api_req *q, mp_model *m, mp_cluster *cl, mp_plan *p,
                             mp_estimate **e);
/** The search options of a request open in q ("fix", "gb", "seq", "precision", "objective",
 *  "tokens", "price_gpu_hour", "top" in [1, top_max], "threads", "no_prune", "orders"; a key
 *  left out of the request's known list is simply absent), for model m. Errors are counted in
 *  q (mp_api_req_status). */
void mp_api_search_opts(mp_api_req *q, const mp_model *m, int top_max, mp_search_opts *o);

/** Dump o (released; NULL counts as out of memory) into *out with jansson's flags (the CLI's
 *  for the same command); MP_ERR_NOMEM when it cannot. */
mp_status mp_api_dump(json_t *o, size_t flags, char **out, mp_diag *diag);
/** A JSON real, or null when x is not finite (so the output always parses). */
json_t *mp_api_real(double x);

#endif
