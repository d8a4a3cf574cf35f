/* src/api/api_predict.c — predict as a request -> JSON call: the job of `meshplan predict
 * --json` on one cluster (islands joined by WAN links, and their plan keys, are the CLI's:
 * mp_plan_parse refuses those keys here). mp_api_predict_job is also the web's /api/predict
 * and /api/trace (src/web/api.c). */
#include <stdlib.h>

#include "api_internal.h"
#include "meshplan/api.h"

mp_status mp_api_predict_job(mp_api_req *q, mp_model *m, mp_cluster *cl, mp_plan *p,
                             mp_estimate **e)
{
    mp_diag *diag = q->r.diag;
    mp_status st;
    *e = NULL;
    const char *plan = mp_api_str(q, "plan");
    if ((st = mp_api_req_status(q)) != MP_OK || (st = mp_api_model(q, m)) != MP_OK ||
        (st = mp_api_cluster(q, cl)) != MP_OK)
        return st;
    mp_plan_init_default(p);
    /* A key across islands is bad input here (mp_islands_plan_parse_single names it): the
     * islands of a WAN-joined cluster are predicted by `meshplan predict` only. */
    if ((st = mp_islands_plan_parse_single(plan, p, diag)) != MP_OK ||
        (st = mp_plan_resolve(p, m, cl->num_gpus, diag)) != MP_OK)
        return st;
    if (!(*e = malloc(sizeof **e)))
        return MP_ERR_NOMEM;
    if ((st = mp_estimate_plan(m, cl, p, NULL, *e, diag)) != MP_OK) {
        free(*e);
        *e = NULL;
    }
    return st;
}

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
    if ((st = mp_api_predict_job(&q, &m, &cl, &p, &e)) == MP_OK &&
        !(*out = mp_report_estimate_json(&m, &cl, &p, e))) {
        mp_diag_add(diag, "out of memory writing the JSON answer");
        st = MP_ERR_NOMEM;
    }
    free(e);
    mp_api_req_close(&q);
    return st;
}
