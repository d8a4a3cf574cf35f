/* src/api/api_run.c — run as a request -> JSON call: the object `meshplan run --json` prints
 * for a whole training run of one plan on one cluster and a token budget. The run is the
 * library's composer (run.h mp_run_plan, with mp_run_opts_init's defaults) and the answer its
 * writer (report.h mp_report_run_json), as in src/cli/cmd_run.c; this file reads the request. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "meshplan/api.h"

/* The options of `meshplan run`, from the request (names with '_'), over mp_run_opts_init. */
static void read_opts(mp_api_req *q, mp_run_opts *o)
{
    if (!mp_api_num(q, "tokens", 1, 1e18, &o->tokens))
        mp_api_missing(q, "tokens", "training tokens in [1, 1e18], e.g. 15.6e12");
    mp_api_num(q, "price_gpu_hour", 0, 1e4, &o->cost.price_gpu_hour_usd);
    mp_api_num(q, "capex_per_gpu", 0, 1e8, &o->cost.capex_per_gpu_usd);
    if (json_object_get(q->root, "price_gpu_hour") && o->cost.capex_per_gpu_usd > 0)
        mp_jr_bad(&q->r, "price_gpu_hour", json_object_get(q->root, "price_gpu_hour"),
                  "no rental price with capex_per_gpu (capital + energy): one way to pay");
    mp_api_num(q, "amortization_years", 0.1, 100, &o->cost.amortization_years);
    mp_api_num(q, "price_kwh", 0, 100, &o->cost.price_kwh_usd);
    mp_api_num(q, "pue", 1, 5, &o->energy.pue);
    mp_api_num(q, "grid_gco2_per_kwh", 0, 5000, &o->grid_gco2_per_kwh);
    mp_api_num(q, "power_cap_W", 1, 1e5, &o->energy.power_cap_W);
    mp_api_num(q, "host_util", 0, 1, &o->energy.host_util_frac);
    double gbps = o->checkpoint_Bps / 1e9;
    if (mp_api_num(q, "checkpoint_GBps", 1e-3, 1e9, &gbps))
        o->checkpoint_Bps = gbps * 1e9;
    mp_api_num(q, "checkpoint_interval_s", 1e-3, 1e12, &o->checkpoint_interval_s);
    mp_api_num(q, "restart_s", 0, 1e9, &o->restart_s);
    mp_api_num(q, "repair_h", 0, 1e6, &o->repair_h);
    mp_api_num(q, "failure_scale", 0, 1e6, &o->failure_scale);
    mp_api_int(q, "trials", 1, 10000000, &o->trials);
    int64_t seed = 1;
    if (mp_api_int(q, "seed", 0, INT64_MAX, &seed))
        o->seed = (uint64_t)seed;
    mp_api_bool(q, "async_checkpoint", &o->async_checkpoint);
    const json_t *sp = json_object_get(q->root, "spare_nodes");
    int64_t spares = -1;
    if (sp && !(json_is_string(sp) && !strcmp(json_string_value(sp), "auto")) &&
        mp_api_int(q, "spare_nodes", 0, 1000000, &spares))
        o->spare_nodes = (int)spares;
}

/* "failures": absent or "default" (Llama 3's, faults.h) or a failure-model object. */
static mp_status fault_model(mp_api_req *q, mp_fault_model *fm)
{
    const json_t *fj = json_object_get(q->root, "failures");
    if (!fj || json_is_null(fj) || (json_is_string(fj) && !strcmp(json_string_value(fj), "default"))) {
        mp_fault_model_default(fm);
        return MP_OK;
    }
    if (!json_is_object(fj)) {
        mp_jr_bad(&q->r, "failures", fj, "\"default\" or a failure-model object (faults.h)");
        return MP_ERR_INPUT;
    }
    char *txt = json_dumps(fj, JSON_COMPACT | JSON_REAL_PRECISION(17));
    if (!txt)
        return MP_ERR_NOMEM;
    mp_status st = mp_fault_model_from_json(txt, strlen(txt), "request.failures", fm, q->r.diag);
    free(txt);
    return st;
}

/* NIC ports per node on the scale-out fabric, which fail too: the catalog node of this GPU with
 * the same node size, else one per GPU (as `meshplan run` counts them). */
static double nics_per_node(const mp_catalog *cat, const mp_cluster *cl)
{
    for (size_t i = 0; i < mp_catalog_node_count(cat); i++) {
        const mp_node *n = mp_catalog_node_at(cat, i);
        if (!strcmp(n->gpu, cl->gpu.key) && n->gpus_per_node == cl->gpus_per_node && n->nics_per_node > 0)
            return (double)n->nics_per_node;
    }
    return (double)cl->gpus_per_node;
}

/* Everything the call holds, on the heap (the result copies the fault model). */
typedef struct {
    mp_model m;
    mp_cluster cl;
    mp_plan p;
    mp_estimate e;
    mp_fault_model fm;
    mp_run_opts o;
    mp_run_result r;
} run_job;

mp_status mp_api_run_json(const char *request, size_t len, char **out, mp_diag *diag)
{
    static const char *const known[] = {
        "model", "gpu", "gpus", "gpus_per_node", "scale_out", "catalog", "plan", "tokens",
        "price_gpu_hour", "capex_per_gpu", "amortization_years", "price_kwh", "pue",
        "grid_gco2_per_kwh", "power_cap_W", "host_util", "checkpoint_GBps", "checkpoint_interval_s",
        "restart_s", "repair_h", "spare_nodes", "failures", "failure_scale", "trials", "seed",
        "async_checkpoint", NULL};
    *out = NULL;
    mp_api_req q;
    mp_status st = mp_api_req_open(&q, "run", request, len, known, diag);
    if (st != MP_OK)
        return st;
    run_job *x = calloc(1, sizeof *x);
    if (!x) {
        mp_api_req_close(&q);
        return MP_ERR_NOMEM;
    }
    const char *plan = mp_api_str(&q, "plan");
    if (!plan)
        mp_api_missing(&q, "plan", "a plan string, e.g. \"tp=8,pp=2,gb=128\"");
    mp_run_opts_init(&x->o);
    read_opts(&q, &x->o);
    if ((st = mp_api_req_status(&q)) != MP_OK || (st = mp_api_model(&q, &x->m)) != MP_OK ||
        (st = mp_api_cluster(&q, &x->cl)) != MP_OK || (st = fault_model(&q, &x->fm)) != MP_OK)
        goto done;
    mp_plan_init_default(&x->p);
    /* one cluster: a key across islands is bad input (mp_islands_plan_parse_single names it) */
    if ((st = mp_islands_plan_parse_single(plan, &x->p, diag)) != MP_OK)
        goto done;
    if ((st = mp_plan_resolve(&x->p, &x->m, x->cl.num_gpus, diag)) != MP_OK ||
        (st = mp_estimate_plan(&x->m, &x->cl, &x->p, NULL, &x->e, diag)) != MP_OK)
        goto done;
    x->o.faults = &x->fm;
    x->o.energy.scaleout_ports_per_node = nics_per_node(q.cat, &x->cl);
    if ((st = mp_run_plan(&x->m, &x->cl, &x->p, &x->e, &x->o, &x->r, diag)) != MP_OK)
        goto done;
    if (!(*out = mp_report_run_json(&x->m, &x->cl, &x->p, &x->e, &x->o, &x->r))) {
        mp_diag_add(diag, "out of memory writing the JSON answer");
        st = MP_ERR_NOMEM;
    }
done:
    free(x);
    mp_api_req_close(&q);
    return st;
}
