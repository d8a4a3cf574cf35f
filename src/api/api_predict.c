/* src/api/api_predict.c — predict as a request -> JSON call: the job of `meshplan predict
 * --json` on one cluster (islands joined by WAN links, and their plan keys, are the CLI's:
 * mp_plan_parse refuses those keys here). */
#include <stdlib.h>

#include "api_internal.h"
#include "meshplan/api.h"

mp_status mp_api_predict_json(const char *request, size_t len, char **out, mp_diag *diag)
{
    static const char *const known[] = {"model", "gpu", "gpus", "gpus_per_node", "scale_out",
                                        "cluster", "catalog", "plan", NULL};
    *out = NULL;
    mp_api_req q;
    mp_status st = mp_api_req_open(&q, "predict", request, len, known, diag);
    if (st != MP_OK)
        return st;
    mp_model m;
    mp_cluster cl;
    mp_plan p;
    mp_estimate *e = NULL;
    const char *plan = mp_api_str(&q, "plan");
    if ((st = mp_api_req_status(&q)) != MP_OK || (st = mp_api_model(&q, &m)) != MP_OK ||
        (st = mp_api_cluster(&q, &cl)) != MP_OK)
        goto done;
    mp_plan_init_default(&p);
    /* A key across islands is bad input here (mp_islands_plan_parse_single names it): the
     * islands of a WAN-joined cluster are predicted by `meshplan predict` only. */
    if ((st = mp_islands_plan_parse_single(plan, &p, diag)) != MP_OK)
        goto done;
    if ((st = mp_plan_resolve(&p, &m, cl.num_gpus, diag)) != MP_OK)
        goto done;
    if (!(e = malloc(sizeof *e))) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    if ((st = mp_estimate_plan(&m, &cl, &p, NULL, e, diag)) != MP_OK)
        goto done;
    *out = mp_report_estimate_json(&m, &cl, &p, e);
    if (!*out) {
        mp_diag_add(diag, "out of memory writing the JSON answer");
        st = MP_ERR_NOMEM;
    }
done:
    free(e);
    mp_api_req_close(&q);
    return st;
}
