/* src/web/api.c — the JSON API of the local web app (meshplan/web.h): request fields checked
 * against a table (name, type, range, required), then the same library calls and writers as the
 * CLI's predict --json and search --json, so both answer the same JSON for the same job. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "meshplan/energy.h"
#include "meshplan/report.h"
#include "meshplan/search.h"
#include "meshplan/sim.h"
#include "meshplan/topo.h"
#include "meshplan/xsync.h"
#include "web_internal.h"

typedef enum { F_STR, F_INT, F_REAL } ftype;
typedef struct {
    const char *name;
    ftype type;
    double min, max;        /* numbers */
} field_spec;

#define MAX_FIELDS 16
typedef struct {
    json_t *root;
    int present[MAX_FIELDS];
    const char *s[MAX_FIELDS];
    long long i[MAX_FIELDS];
    double r[MAX_FIELDS];
} fields;

static const char *type_name(ftype t)
{
    return t == F_STR ? "a string" : t == F_INT ? "an integer" : "a number";
}

/* Parse body as one JSON object whose keys are all in spec; 0, or -1 after answering 400. */
static int parse_fields(const char *body, size_t len, const field_spec *spec, int n, fields *f,
                        mp_web_response *out)
{
    memset(f, 0, sizeof *f);
    json_error_t err;
    f->root = json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES, &err);
    if (!f->root) {
        web_error(out, 400, NULL, "malformed JSON at line %d, column %d: %s", err.line, err.column, err.text);
        return -1;
    }
    if (!json_is_object(f->root)) {
        web_error(out, 400, NULL, "expected a JSON object with the fields %s, ...", spec[0].name);
        return -1;
    }
    const char *key;
    json_t *v;
    json_object_foreach(f->root, key, v) {
        int k = -1;
        for (int j = 0; j < n; j++)
            if (!strcmp(key, spec[j].name))
                k = j;
        if (k < 0) {
            char list[512] = "";
            for (int j = 0; j < n; j++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", j ? ", " : "", spec[j].name);
            web_error(out, 400, key, "unknown field \"%s\": expected %s", key, list);
            return -1;
        }
        const field_spec *s = &spec[k];
        int ok = s->type == F_STR ? json_is_string(v) : s->type == F_INT ? json_is_integer(v) : json_is_number(v);
        if (!ok) {
            web_error(out, 400, key, "%s: expected %s", key, type_name(s->type));
            return -1;
        }
        if (s->type == F_STR) {
            f->s[k] = json_string_value(v);
            if (!f->s[k][0]) {
                web_error(out, 400, key, "%s = \"\": expected a non-empty string", key);
                return -1;
            }
        } else {
            double x = json_number_value(v);
            if (!(x >= s->min && x <= s->max)) {
                web_error(out, 400, key, "%s = %.15g: expected %s in [%.15g, %.15g]", key, x, type_name(s->type),
                          s->min, s->max);
                return -1;
            }
            f->i[k] = s->type == F_INT ? (long long)json_integer_value(v) : 0;
            f->r[k] = x;
        }
        f->present[k] = 1;
    }
    return 0;
}

/* Index of a field by name in spec (the tables below are the only callers). */
static int fx(const field_spec *spec, int n, const char *name)
{
    for (int j = 0; j < n; j++)
        if (!strcmp(spec[j].name, name))
            return j;
    return -1;
}

static int require(const fields *f, const field_spec *spec, int n, const char *name, mp_web_response *out)
{
    if (f->present[fx(spec, n, name)])
        return 0;
    web_error(out, 400, name, "%s is required", name);
    return -1;
}

/* The model: a catalog key only (the web app reads no files). */
static int web_model(const mp_catalog *cat, const char *key, mp_model *m, mp_web_response *out)
{
    const mp_model *cm = mp_catalog_model(cat, key);
    if (!cm) {
        web_error(out, 400, "model", "model = \"%s\": not a catalog model (GET /api/catalog lists them)", key);
        return -1;
    }
    *m = *cm;
    return 0;
}

/* The cluster: "cluster" (a catalog node or a shipped preset) or "gpu" + "gpus" (+ options). */
static int web_cluster(const mp_catalog *cat, const char *cluster, const char *gpu, long long ngpus,
                       long long gpn, const char *scale_out, mp_cluster *cl, mp_web_response *out)
{
    mp_diag d = {0};
    mp_status st;
    const char *field;
    if (cluster) {
        field = "cluster";
        if (gpu || gpn || scale_out) {
            web_error(out, 400, gpu ? "gpu" : gpn ? "gpus_per_node" : "scale_out",
                      "cluster = \"%s\" describes the GPUs and the wiring: leave out gpu, gpus_per_node "
                      "and scale_out", cluster);
            return -1;
        }
        size_t len = 0;
        const char *text = mp_cluster_preset_json(cluster, &len);
        if (mp_catalog_node(cat, cluster)) {
            if (ngpus <= 0) {
                web_error(out, 400, "gpus", "cluster = \"%s\" is a node type: gpus is required", cluster);
                return -1;
            }
            st = mp_cluster_from_node(cat, cluster, ngpus, cl, &d);
        } else if (text) {
            st = mp_cluster_from_json(cat, text, len, cluster, ngpus > 0 ? ngpus : 0, cl, &d);
        } else {
            web_error(out, 400, "cluster", "cluster = \"%s\": not a catalog node or a shipped cluster "
                      "(GET /api/catalog lists them)", cluster);
            return -1;
        }
    } else {
        if (!gpu || ngpus <= 0) {
            web_error(out, 400, gpu ? "gpus" : "gpu", "%s is required (or cluster)", gpu ? "gpus" : "gpu");
            return -1;
        }
        if (!mp_catalog_gpu(cat, gpu)) {
            web_error(out, 400, "gpu", "gpu = \"%s\": not a catalog GPU (GET /api/catalog lists them)", gpu);
            return -1;
        }
        if (scale_out && !mp_catalog_link(cat, scale_out)) {
            web_error(out, 400, "scale_out", "scale_out = \"%s\": not a catalog link", scale_out);
            return -1;
        }
        field = "gpus";
        st = mp_cluster_from_catalog(cat, gpu, ngpus, (int)gpn, scale_out, cl, &d);
    }
    if (st != MP_OK) {
        web_error(out, st == MP_ERR_NOMEM ? 500 : 400, field, "%s", d.text);
        return -1;
    }
    return 0;
}

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

static const field_spec predict_spec[] = {
    {"model", F_STR, 0, 0},        {"gpu", F_STR, 0, 0},
    {"gpus", F_INT, 1, 1 << 24},   {"plan", F_STR, 0, 0},
    {"cluster", F_STR, 0, 0},      {"gpus_per_node", F_INT, 1, 1 << 20},
    {"scale_out", F_STR, 0, 0},
};
#define NPREDICT (int)(sizeof predict_spec / sizeof predict_spec[0])
#define P(name) fx(predict_spec, NPREDICT, name)

/* The job of /api/predict and /api/trace: fields, model, cluster, plan, estimate (*e malloc'd).
 * 0, or -1 after answering. */
static int predict_job(const mp_catalog *cat, const char *body, size_t len, fields *f, mp_model *m,
                       mp_cluster *cl, mp_plan *p, mp_estimate **e, mp_web_response *out)
{
    mp_diag d = {0};
    *e = NULL;
    if (parse_fields(body, len, predict_spec, NPREDICT, f, out) ||
        require(f, predict_spec, NPREDICT, "model", out) || require(f, predict_spec, NPREDICT, "plan", out) ||
        web_model(cat, f->s[P("model")], m, out) ||
        web_cluster(cat, f->s[P("cluster")], f->s[P("gpu")], f->i[P("gpus")], f->i[P("gpus_per_node")],
                    f->s[P("scale_out")], cl, out))
        return -1;
    mp_plan_init_default(p);
    /* one cluster: a key across islands is bad input (mp_islands_plan_parse_single names it) */
    mp_status st = mp_islands_plan_parse_single(f->s[P("plan")], p, &d);
    if (st == MP_OK)
        st = mp_plan_resolve(p, m, cl->num_gpus, &d);
    if (st != MP_OK) {
        web_error(out, 400, "plan", "plan = \"%s\" cannot be formed: %s", f->s[P("plan")], d.text);
        return -1;
    }
    if (!(*e = malloc(sizeof **e))) {
        web_error(out, 500, NULL, "out of memory");
        return -1;
    }
    st = mp_estimate_plan(m, cl, p, NULL, *e, &d);
    if (st != MP_OK) {
        web_error(out, st == MP_ERR_INPUT ? 400 : 500, st == MP_ERR_INPUT ? "plan" : NULL, "%s", d.text);
        return -1;
    }
    return 0;
}

void web_api_predict(const mp_catalog *cat, const char *body, size_t len, mp_web_response *out)
{
    fields f;
    mp_model m;
    mp_cluster cl;
    mp_plan p;
    mp_estimate *e = NULL;
    if (!predict_job(cat, body, len, &f, &m, &cl, &p, &e, out))
        web_json(out, mp_report_estimate_json(&m, &cl, &p, e));
    free(e);
    json_decref(f.root);
}

static double now_s(void)
{
    struct timespec ts;
    return timespec_get(&ts, TIME_UTC) ? (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec : 0.0;
}

void web_api_trace(const mp_catalog *cat, const char *body, size_t len, mp_web_response *out)
{
    fields f;
    mp_model m;
    mp_cluster cl;
    mp_plan p;
    mp_estimate *e = NULL;
    if (!predict_job(cat, body, len, &f, &m, &cl, &p, &e, out)) {
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
    json_decref(f.root);
}

static const field_spec search_spec[] = {
    {"model", F_STR, 0, 0},           {"gpu", F_STR, 0, 0},
    {"gpus", F_INT, 1, 1 << 24},      {"gb", F_INT, 1, 1 << 30},
    {"seq", F_INT, 1, 1 << 26},       {"precision", F_STR, 0, 0},
    {"fix", F_STR, 0, 0},             {"objective", F_STR, 0, 0},
    {"tokens", F_REAL, 1, 1e18},      {"price_gpu_hour", F_REAL, 1e-6, 1e6},
    {"top", F_INT, 1, 100},           {"cluster", F_STR, 0, 0},
    {"gpus_per_node", F_INT, 1, 1 << 20}, {"scale_out", F_STR, 0, 0},
};
#define NSEARCH (int)(sizeof search_spec / sizeof search_spec[0])
#define S(name) fx(search_spec, NSEARCH, name)

/* The energy model as the search's energy hook (as the CLI's search does): facility joules per
 * step (docs/energy.md). */
static mp_status energy_hook(void *ctx, const mp_model *m, const mp_cluster *c, const mp_plan *p,
                             const mp_estimate *e, double *joules_per_step)
{
    (void)ctx;
    (void)m;
    mp_power pw;
    mp_status st = mp_energy_step(c, p, e, NULL, NULL, &pw, NULL);
    if (st == MP_OK)
        *joules_per_step = pw.energy_J_per_step_facility;
    return st;
}

/* The search options from the request; 0 or -1 after answering 400. */
static int search_opts(const fields *f, const mp_model *m, mp_search_opts *o, mp_web_response *out)
{
    mp_diag d = {0};
    mp_search_opts_init(o);
    if (f->s[S("fix")] && mp_islands_plan_parse_single(f->s[S("fix")], &o->pin, &d) != MP_OK) { /* island keys: named */
        web_error(out, 400, "fix", "fix = \"%s\": %s", f->s[S("fix")], d.text);
        return -1;
    }
    if (f->present[S("gb")])
        o->pin.gb = f->i[S("gb")];
    if (!o->pin.gb) {
        web_error(out, 400, "gb", "gb is required (the global batch in sequences)");
        return -1;
    }
    if (f->present[S("seq")])
        o->pin.seq = f->i[S("seq")];
    if (!o->pin.seq)
        o->pin.seq = m->seq_len;
    const char *s = f->s[S("precision")];
    if (s) {
        if (!strcmp(s, "bf16")) o->pin.precision = MP_DT_BF16;
        else if (!strcmp(s, "fp16")) o->pin.precision = MP_DT_FP16;
        else if (!strcmp(s, "fp8")) o->pin.precision = MP_DT_FP8;
        else {
            web_error(out, 400, "precision", "precision = \"%s\": expected bf16, fp16 or fp8", s);
            return -1;
        }
    }
    if ((s = f->s[S("objective")]) && mp_objective_parse(s, &o->objective) != MP_OK) {
        web_error(out, 400, "objective", "objective = \"%s\": expected throughput, time-to-train, cost or energy", s);
        return -1;
    }
    o->tokens = f->r[S("tokens")];
    o->price_per_gpu_hour = f->r[S("price_gpu_hour")];
    if (o->objective == MP_OBJ_TIME_TO_TRAIN && !(o->tokens > 0)) {
        web_error(out, 400, "tokens", "objective time-to-train needs tokens (the token budget)");
        return -1;
    }
    if (o->objective == MP_OBJ_COST && !(o->price_per_gpu_hour > 0)) {
        web_error(out, 400, "price_gpu_hour", "objective cost needs price_gpu_hour (USD per GPU-hour)");
        return -1;
    }
    if (o->objective == MP_OBJ_ENERGY)
        o->energy = energy_hook;
    if (f->present[S("top")])
        o->top_n = (int)f->i[S("top")];
    return 0;
}

static int count_visit(void *ctx, const mp_plan *p)
{
    (void)p;
    return ++*(uint64_t *)ctx > MP_WEB_MAX_SEARCH_PLANS;
}

void web_api_search(const mp_catalog *cat, const char *body, size_t len, mp_web_response *out)
{
    fields f;
    mp_model m;
    mp_cluster cl;
    mp_search_opts o;
    mp_search_result r;
    memset(&r, 0, sizeof r);
    mp_diag d = {0};
    if (parse_fields(body, len, search_spec, NSEARCH, &f, out) ||
        require(&f, search_spec, NSEARCH, "model", out) ||
        web_model(cat, f.s[S("model")], &m, out) ||
        web_cluster(cat, f.s[S("cluster")], f.s[S("gpu")], f.i[S("gpus")], f.i[S("gpus_per_node")],
                    f.s[S("scale_out")], &cl, out) ||
        search_opts(&f, &m, &o, out))
        goto done;
    /* Bounded work per request: count the space first (enumeration without evaluation). */
    uint64_t nplans = 0;
    mp_status st = mp_search_enumerate(&m, cl.num_gpus, &o, count_visit, &nplans, NULL, &d);
    if (st != MP_OK) {
        web_error(out, st == MP_ERR_NOMEM ? 500 : 400, NULL, "%s", d.text);
        goto done;
    }
    if (nplans > MP_WEB_MAX_SEARCH_PLANS) {
        web_error(out, 400, "fix", "the search space has more than %llu plans: pin some keys with fix "
                  "(e.g. \"tp=8\") or use `meshplan search`", (unsigned long long)MP_WEB_MAX_SEARCH_PLANS);
        goto done;
    }
    st = mp_search(&m, &cl, 1, &o, &r, &d);
    if (st != MP_OK) {
        web_error(out, st == MP_ERR_NOMEM || st == MP_ERR_INTERNAL ? 500 : 400, NULL, "%s", d.text);
        goto done;
    }
    web_json(out, mp_search_report_json(&m, &cl, 1, &o, &r));
done:
    mp_search_result_free(&r);
    json_decref(f.root);
}
