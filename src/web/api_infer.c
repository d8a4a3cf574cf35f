/* src/web/api_infer.c — POST /api/infer: the body is the request of the request -> JSON layer's
 * "infer" (api.h: model, gpu, gpus, gpus_per_node, scale_out, cluster, catalog, plan), the answer
 * the JSON of `meshplan infer --json` (one writer, infer.h mp_report_infer_json). The layer
 * builds its own catalog (built-in plus the request's "catalog"). Errors: 400 (bad input, with
 * the field the first diag line names), 404 (an unknown catalog key), 500 otherwise. */
#include <jansson.h>
#include <stdlib.h>

#include "meshplan/api.h"
#include "web_internal.h"

void web_api_infer(const char *body, size_t len, mp_web_response *out)
{
    char *s = NULL;
    mp_diag d = {0};
    mp_status st = mp_api_infer_json(body ? body : "", body ? len : 0, &s, &d);
    if (st == MP_OK) {
        web_json(out, s);
        return;
    }
    /* the field, as the layer's error object names it (api.h mp_api_error_json) */
    char *e = mp_api_error_json(st, &d);
    json_t *eo = e ? json_loads(e, 0, NULL) : NULL;
    mp_api_free(e);
    const json_t *fj = json_object_get(eo, "field");
    int code = st == MP_ERR_INPUT || st == MP_ERR_PARSE ? 400 : st == MP_ERR_NOT_FOUND ? 404 : 500;
    web_error(out, code, json_is_string(fj) ? json_string_value(fj) : NULL, "%s",
              d.len ? d.text : mp_status_str(st));
    json_decref(eo);
}
