/* src/web/api.c — the JSON API of the local web app (meshplan/web.h). Requests are read by the
 * request layer's one reader (src/api/api_request.c, mp_api_req_open_on: on the server's
 * catalog, which `meshplan web --catalog` may extend) and priced by its jobs (mp_api_predict_job,
 * mp_api_search_opts), then written by the CLI's writers, so /api/predict, /api/trace and
 * /api/search answer what predict --json, trace --json and search --json print for the same
 * job. The web's own rules: a plan is required, and the work of a request is bounded
 * (MP_WEB_MAX_SIM_EVENTS, MP_WEB_MAX_SEARCH_PLANS). */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api_internal.h"
#include "meshplan/report.h"
#include "meshplan/search.h"
#include "meshplan/sim.h"
#include "meshplan/topo.h"
#include "web_internal.h"

void web_api_catalog(const mp_catalog *cat, mp_web_response *out)
{
    json_t *o = json_object(), *models = json_array(), *gpus = json_array(), *nodes = json_array(),
           *clusters = json_array();
    const mp_model *m;
    const mp_gpu *g;
    const mp_node *nd;
    for (size_t i = 0; (m = mp_catalog_model_at(cat, i)); i++)
        json_array_append_new(models, json_string(m->key));
    for (size_t i = 0; (g = mp_catalog_gpu_at(cat, i)); i++) {
        const mp_node *usual = mp_catalog_node_for_gpu(cat, g->key);
        json_array_append_new(gpus, json_pack("{s:s,s:s,s:f,s:i}", "key", g->key, "name", g->name,
                                              "memory_bytes", g->memory_bytes, "gpus_per_node",
                                              usual ? usual->gpus_per_node : 1));
    }
    for (size_t i = 0; (nd = mp_catalog_node_at(cat, i)); i++)
        json_array_append_new(nodes, json_string(nd->key));
    for (size_t i = 0; i < mp_cluster_preset_count(); i++)
        json_array_append_new(clusters, json_string(mp_cluster_preset_name(i)));
    json_object_set_new(o, "models", models);
    json_object_set_new(o, "gpus", gpus);
    json_object_set_new(o, "nodes", nodes);
    json_object_set_new(o, "clusters", clusters);
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    web_json(out, s);
}

/* The fields of /api/predict and /api/trace (no "catalog": the server's is used). */
static const char *const predict_fields[] = {"model", "gpu", "gpus", "plan", "cluster",
                                             "gpus_per_node", "scale_out", NULL};

/* The job of /api/predict and /api/trace (command names the diagnostics): *e malloc'd. 0, or
 * -1 after answering; q is closed either way. */
static int predict_job(const mp_catalog *cat, const char *command, const char *body, size_t len,
                       mp_model *m, mp_cluster *cl, mp_plan *p, mp_estimate **e,
                       mp_web_response *out)
{
    mp_diag d = {0};
    mp_api_req q;
    *e = NULL;
    mp_status st = mp_api_req_open_on(&q, cat, command, body ? body : "", body ? len : 0,
                                      predict_fields, &d);
    if (st == MP_OK) {
        if (!json_object_get(q.root, "plan"))
            mp_api_missing(&q, "plan", "a plan, \"key=value,...\" (docs/plan.md)");
        st = mp_api_req_status(&q);
    }
    if (st == MP_OK)
        st = mp_api_predict_job(&q, m, cl, p, e);
    mp_api_req_close(&q);
    if (st != MP_OK) {
        web_refusal(out, command, st, &d, 400);
        return -1;
    }
    return 0;
}

void web_api_predict(const mp_catalog *cat, const char *body, size_t len, mp_web_response *out)
{
    mp_model m;
    mp_cluster cl;
    mp_plan p;
    mp_estimate *e = NULL;
    if (!predict_job(cat, "predict", body, len, &m, &cl, &p, &e, out))
        web_json(out, mp_report_estimate_json(&m, &cl, &p, e));
    free(e);
}

static double now_s(void)
{
    struct timespec ts;
    return timespec_get(&ts, TIME_UTC) ? (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec : 0.0;
}

void web_api_trace(const mp_catalog *cat, const char *body, size_t len, mp_web_response *out)
{
    mp_model m;
    mp_cluster cl;
    mp_plan p;
    mp_estimate *e = NULL;
    if (!predict_job(cat, "trace", body, len, &m, &cl, &p, &e, out)) {
        mp_sim_opts so;
        mp_sim_opts_init(&so);
        so.max_events = MP_WEB_MAX_SIM_EVENTS; /* bounded work per request */
        mp_sim_result r;
        mp_diag d = {0};
        double t0 = now_s();
        mp_status st = mp_sim_run(&m, &cl, &p, e, &so, NULL, &r, &d);
        if (st == MP_ERR_RANGE)
            web_error(out, 400, "plan", "the step needs more than %d events to simulate here: %s (use "
                      "meshplan trace)", MP_WEB_MAX_SIM_EVENTS, d.text);
        else if (st != MP_OK)
            web_error(out, st == MP_ERR_INPUT ? 400 : 500, NULL, "%s", d.text);
        else
            web_json(out, mp_report_trace_json(&p, e, &so, &r, now_s() - t0, NULL));
    }
    free(e);
}

/* The fields of /api/search: the CLI's search options but threads, pruning and rank orders
 * (the server's to choose), on one cluster. */
static const char *const search_fields[] = {"model", "gpu", "gpus", "gb", "seq", "precision",
                                            "fix", "objective", "tokens", "price_gpu_hour",
                                            "top", "cluster", "gpus_per_node", "scale_out", NULL};
#define WEB_MAX_TOP 100 /* plans answered at most (web.h) */

static int count_visit(void *ctx, const mp_plan *p)
{
    (void)p;
    return ++*(uint64_t *)ctx > MP_WEB_MAX_SEARCH_PLANS;
}

void web_api_search(const mp_catalog *cat, const char *body, size_t len, mp_web_response *out)
{
    mp_model m;
    mp_cluster cl;
    mp_search_opts o;
    mp_search_result r;
    memset(&r, 0, sizeof r);
    mp_diag d = {0};
    mp_api_req q;
    mp_status st = mp_api_req_open_on(&q, cat, "search", body ? body : "", body ? len : 0,
                                      search_fields, &d);
    if (st == MP_OK && (st = mp_api_model(&q, &m)) == MP_OK && (st = mp_api_cluster(&q, &cl)) == MP_OK) {
        mp_api_search_opts(&q, &m, WEB_MAX_TOP, &o);
        st = mp_api_req_status(&q);
    }
    mp_api_req_close(&q);
    if (st != MP_OK) {
        web_refusal(out, "search", st, &d, 400);
        return;
    }
    /* Bounded work per request: count the space first (enumeration without evaluation). */
    uint64_t nplans = 0;
    st = mp_search_enumerate(&m, cl.num_gpus, &o, count_visit, &nplans, NULL, &d);
    if (st != MP_OK) {
        web_error(out, st == MP_ERR_NOMEM ? 500 : 400, NULL, "%s", d.text);
        return;
    }
    if (nplans > MP_WEB_MAX_SEARCH_PLANS) {
        web_error(out, 400, "fix", "the search space has more than %llu plans: pin some keys with fix "
                  "(e.g. \"tp=8\") or use `meshplan search`", (unsigned long long)MP_WEB_MAX_SEARCH_PLANS);
        return;
    }
    st = mp_search(&m, &cl, 1, &o, &r, &d);
    if (st != MP_OK)
        web_error(out, st == MP_ERR_NOMEM || st == MP_ERR_INTERNAL ? 500 : 400, NULL, "%s", d.text);
    else
        web_json(out, mp_search_report_json(&m, &cl, 1, &o, &r));
    mp_search_result_free(&r);
}
