/* src/web/api_infer.c — POST /api/infer: the body is the request of the request -> JSON layer's
 * "infer" (api.h: model, gpu, gpus, gpus_per_node, scale_out, cluster, catalog, plan), the answer
 * the JSON of `meshplan infer --json` (one writer, infer.h mp_report_infer_json). The layer
 * builds its own catalog (built-in plus the request's "catalog"). Errors: 400 (bad input, with
 * the field the first diag line names), 404 (an unknown catalog key), 500 otherwise. */
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
    web_refusal(out, "infer", st, &d, 404);
}
