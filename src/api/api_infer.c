/* src/api/api_infer.c — infer as a request -> JSON call: the object `meshplan infer --json`
 * prints for one inference plan (one batch; the CLI's --batch sweep is not taken here) on one
 * cluster. The estimate is the library's (infer.h mp_infer_estimate) and the answer its writer
 * (mp_report_infer_json), as in src/cli/cmd_infer.c; this file reads the request. */
#include <stdlib.h>

#include "api_internal.h"
#include "meshplan/api.h"

/* Fill the request's "gpus" from the plan (tp x pp x dp) when neither gpus nor cluster is
 * given, as `meshplan infer` defaults --gpus. */
static mp_status default_gpus(mp_api_req *q, const mp_infer_plan *p)
{
    if (json_object_get(q->root, "gpus") || json_object_get(q->root, "cluster"))
        return MP_OK;
    long long n = (long long)p->tp * p->pp * (p->dp > 0 ? p->dp : 1);
    return json_object_set_new(q->root, "gpus", json_integer(n)) ? MP_ERR_NOMEM : MP_OK;
}

mp_status mp_api_infer_json(const char *request, size_t len, char **out, mp_diag *diag)
{
    static const char *const known[] = {"model", "gpu", "gpus", "gpus_per_node", "scale_out",
                                        "cluster", "catalog", "plan", NULL};
    *out = NULL;
    mp_api_req q;
    mp_status st = mp_api_req_open(&q, "infer", request, len, known, diag);
    if (st != MP_OK)
        return st;
    mp_model m;
    mp_cluster cl;
    mp_infer_plan p;
    mp_infer_result *r = NULL;
    mp_infer_plan_init(&p);
    const char *plan = mp_api_str(&q, "plan");
    if ((st = mp_api_req_status(&q)) != MP_OK || (st = mp_infer_plan_parse(plan, &p, diag)) != MP_OK ||
        (st = default_gpus(&q, &p)) != MP_OK || (st = mp_api_model(&q, &m)) != MP_OK ||
        (st = mp_api_cluster(&q, &cl)) != MP_OK)
        goto done;
    if (!(r = malloc(sizeof *r))) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    if ((st = mp_infer_estimate(&m, &cl, &p, r, diag)) != MP_OK)
        goto done;
    if (!(*out = mp_report_infer_json(r, 1, 0))) {
        mp_diag_add(diag, "out of memory writing the JSON answer");
        st = MP_ERR_NOMEM;
    }
done:
    free(r);
    mp_api_req_close(&q);
    return st;
}
