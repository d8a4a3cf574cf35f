/* src/api/api_request.c — read a request object and load what it names: the catalog (built-in
 * plus an inline "catalog" object), the model (a key or an inline object) and the cluster (a
 * node key, a shipped preset, an inline description, or gpu + gpus). Reads no files: a server
 * passing requests through must not open paths a client names. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "internal.h"
#include "meshplan/api.h"

/* The request's text as one JSON object whose keys are all in known: 0, or the status after
 * releasing q. */
static mp_status read_object(mp_api_req *q, const char *command, const char *request, size_t len,
                             const char *const *known, mp_diag *diag)
{
    q->r.origin = command;
    q->r.diag = diag;
    q->r.nf = MP_OK;
    mp_strlcpy(q->r.where, "request", sizeof q->r.where);
    if (!request) {
        mp_diag_add(diag, "%s: request = NULL: expected a JSON object", command);
        return MP_ERR_INPUT;
    }
    if (len == (size_t)-1)
        len = strlen(request);
    if (len > MP_API_MAX_REQUEST_BYTES) {
        mp_diag_add(diag, "%s: request of %zu bytes: expected at most %u", command, len,
                    MP_API_MAX_REQUEST_BYTES);
        return MP_ERR_INPUT;
    }
    q->root = mp_json_load(request, len, command, diag);
    if (!q->root)
        return MP_ERR_PARSE;
    if (!json_is_object(q->root)) {
        mp_diag_add(diag, "%s: request: expected a JSON object {\"key\": value, ...}", command);
        mp_api_req_close(q);
        return MP_ERR_INPUT;
    }
    mp_jr_check_keys(&q->r, q->root, known);
    if (q->r.errors) {
        mp_api_req_close(q);
        return MP_ERR_INPUT;
    }
    return MP_OK;
}

mp_status mp_api_req_open(mp_api_req *q, const char *command, const char *request, size_t len,
                          const char *const *known, mp_diag *diag)
{
    memset(q, 0, sizeof *q);
    mp_status st = read_object(q, command, request, len, known, diag);
    if (st != MP_OK)
        return st;
    st = mp_catalog_create(&q->own, diag);
    if (st != MP_OK) {
        mp_api_req_close(q);
        return st == MP_ERR_NOMEM ? st : MP_ERR_INTERNAL;
    }
    q->cat = q->own;
    const json_t *c = json_object_get(q->root, "catalog");
    if (c && !json_is_null(c)) {
        char *txt = json_is_object(c) ? json_dumps(c, JSON_COMPACT) : NULL;
        if (!json_is_object(c))
            mp_jr_bad(&q->r, "catalog", c, "an object in the data/ schema (gpus, links, nodes, models)");
        else if (!txt)
            st = MP_ERR_NOMEM;
        else
            st = mp_catalog_merge_json(q->own, txt, strlen(txt), "request.catalog", diag);
        free(txt);
        if (st == MP_OK && q->r.errors)
            st = MP_ERR_INPUT;
        if (st != MP_OK) {
            mp_api_req_close(q);
            return st;
        }
    }
    return MP_OK;
}

mp_status mp_api_req_open_on(mp_api_req *q, const mp_catalog *cat, const char *command,
                             const char *request, size_t len, const char *const *known,
                             mp_diag *diag)
{
    memset(q, 0, sizeof *q);
    mp_status st = read_object(q, command, request, len, known, diag);
    if (st == MP_OK)
        q->cat = cat;
    return st;
}

void mp_api_req_close(mp_api_req *q)
{
    json_decref(q->root);
    mp_catalog_destroy(q->own);
    q->root = NULL;
    q->cat = NULL;
    q->own = NULL;
}

mp_status mp_api_req_status(const mp_api_req *q)
{
    if (!q->r.errors)
        return MP_OK;
    return q->r.nf != MP_OK ? q->r.nf : MP_ERR_INPUT;
}

const char *mp_api_str(mp_api_req *q, const char *field)
{
    const json_t *v = json_object_get(q->root, field);
    if (!v || json_is_null(v))
        return NULL;
    if (!json_is_string(v) || !json_string_length(v)) {
        mp_jr_bad(&q->r, field, v, "a non-empty string");
        return NULL;
    }
    return json_string_value(v);
}

int mp_api_int(mp_api_req *q, const char *field, int64_t lo, int64_t hi, int64_t *out)
{
    return mp_jr_int(&q->r, q->root, field, lo, hi, out);
}

int mp_api_num(mp_api_req *q, const char *field, double lo, double hi, double *out)
{
    char what[96];
    snprintf(what, sizeof what, "a number in [%g, %g]", lo, hi);
    return mp_jr_num(&q->r, q->root, field, lo, 0, hi, out, what);
}

int mp_api_bool(mp_api_req *q, const char *field, int *out)
{
    return mp_jr_bool(&q->r, q->root, field, out);
}

void mp_api_missing(mp_api_req *q, const char *field, const char *expected)
{
    /* A field that is there but was refused has been reported already, with its value: a second
     * line calling it missing would be wrong ("gb = 0: expected ..." then "gb = (missing)"). */
    const json_t *v = json_object_get(q->root, field);
    if (v && !json_is_null(v) && q->r.errors > 0)
        return;
    mp_jr_bad(&q->r, field, NULL, expected);
}

/* An inline object as text for the library's own JSON readers. */
static char *object_text(mp_api_req *q, const json_t *v, const char *field, const char *expected)
{
    if (!json_is_object(v)) {
        mp_jr_bad(&q->r, field, v, expected);
        return NULL;
    }
    return json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(17));
}

mp_status mp_api_model(mp_api_req *q, mp_model *m)
{
    const json_t *v = json_object_get(q->root, "model");
    if (!v || json_is_null(v)) {
        mp_api_missing(q, "model", "a catalog model key (meshplan catalog models) or a model object");
        return MP_ERR_INPUT;
    }
    if (json_is_string(v)) {
        const mp_model *cm = mp_catalog_model(q->cat, json_string_value(v));
        if (!cm) {
            mp_jr_bad(&q->r, "model", v, "a catalog model key (meshplan catalog models) or a model object");
            return MP_ERR_NOT_FOUND;
        }
        *m = *cm;
        return MP_OK;
    }
    char *txt = object_text(q, v, "model", "a catalog model key or a model object (catalog schema "
                                           "or a Hugging Face config.json)");
    if (!txt)
        return q->r.errors ? MP_ERR_INPUT : MP_ERR_NOMEM;
    memset(m, 0, sizeof *m);
    /* Our own schema says "layers_count"; anything else is read as a Hugging Face config (as the
     * CLI's --model FILE does). */
    mp_status st = json_object_get(v, "layers_count")
                       ? mp_model_from_catalog_json(txt, strlen(txt), m, q->r.diag)
                       : mp_model_from_hf_json(txt, strlen(txt), m, q->r.diag);
    free(txt);
    return st;
}

/* "cluster": a catalog node key, a shipped preset, or an inline description. */
static mp_status named_cluster(mp_api_req *q, const json_t *v, int64_t ngpus, mp_cluster *c)
{
    char *own = NULL;
    const char *text;
    size_t len = 0;
    const char *origin = "request.cluster";
    if (json_is_string(v)) {
        const char *name = json_string_value(v);
        if (mp_catalog_node(q->cat, name)) {
            if (ngpus <= 0) {
                mp_api_missing(q, "gpus", "a GPU count with a node-type cluster");
                return MP_ERR_INPUT;
            }
            return mp_cluster_from_node(q->cat, name, ngpus, c, q->r.diag);
        }
        text = mp_cluster_preset_json(name, &len);
        if (!text) {
            mp_jr_bad(&q->r, "cluster", v, "a catalog node key, a shipped cluster name "
                                           "(examples/clusters) or a cluster description object");
            return MP_ERR_NOT_FOUND;
        }
        origin = name;
    } else {
        own = object_text(q, v, "cluster", "a catalog node key, a shipped cluster name or a "
                                            "cluster description object (docs/cluster.md)");
        if (!own)
            return q->r.errors ? MP_ERR_INPUT : MP_ERR_NOMEM;
        text = own;
        len = strlen(own);
    }
    mp_status st;
    if (mp_islands_json_is_islands(text, len)) {
        mp_jr_bad(&q->r, "cluster", v, "one cluster: islands joined by WAN links are predicted by "
                                       "`meshplan predict --cluster` only");
        st = MP_ERR_INPUT;
    } else {
        st = mp_cluster_from_json(q->cat, text, len, origin, ngpus > 0 ? ngpus : 0, c, q->r.diag);
    }
    free(own);
    return st;
}

mp_status mp_api_cluster(mp_api_req *q, mp_cluster *c)
{
    int64_t ngpus = 0, gpn = 0;
    mp_api_int(q, "gpus", 1, 1LL << 24, &ngpus);
    mp_api_int(q, "gpus_per_node", 1, 1 << 20, &gpn);
    const char *gpu = mp_api_str(q, "gpu"), *scale_out = mp_api_str(q, "scale_out");
    const json_t *cv = json_object_get(q->root, "cluster");
    if (cv && json_is_null(cv))
        cv = NULL;
    if (cv && (gpn || scale_out)) {
        mp_diag_add(q->r.diag, "%s: request.gpus_per_node and request.scale_out describe the cluster: "
                    "give them in the cluster description instead", q->r.origin);
        q->r.errors++;
    }
    if (!cv && !gpu)
        mp_api_missing(q, "gpu", "a catalog GPU key (or a cluster)");
    if (!cv && !ngpus && !json_object_get(q->root, "gpus"))
        mp_api_missing(q, "gpus", "a GPU count (or a cluster)");
    if (gpn > ngpus && ngpus > 0) {
        mp_diag_add(q->r.diag, "%s: request.gpus_per_node = %lld: expected at most gpus (%lld)",
                    q->r.origin, (long long)gpn, (long long)ngpus);
        q->r.errors++;
    }
    if (q->r.errors)
        return mp_api_req_status(q);
    if (!cv)
        return mp_cluster_from_catalog(q->cat, gpu, ngpus, (int)gpn, scale_out, c, q->r.diag);
    mp_status st = named_cluster(q, cv, ngpus, c);
    if (st == MP_OK && gpu) {
        const mp_gpu *g = mp_catalog_gpu(q->cat, gpu);
        if (!g) {
            mp_diag_add(q->r.diag, "%s: request.gpu = \"%s\": expected a catalog GPU key (meshplan "
                        "catalog gpus)", q->r.origin, gpu);
            return MP_ERR_NOT_FOUND;
        }
        c->gpu = *g;
    }
    return st;
}

mp_status mp_api_dump(json_t *o, size_t flags, char **out, mp_diag *diag)
{
    *out = o ? json_dumps(o, flags) : NULL;
    json_decref(o);
    if (!*out) {
        mp_diag_add(diag, "out of memory writing the JSON answer");
        return MP_ERR_NOMEM;
    }
    return MP_OK;
}

json_t *mp_api_real(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}
