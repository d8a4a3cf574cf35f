/* src/sweep/sweep_parse.c — the design space of a sweep from its JSON (docs/sweep.md), every field
 * checked and named on bad input, and the fixed expansion order of its systems. Running a task
 * is sweep_run.c's job. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sweep_internal.h"

/* The top-level keys, in the order the systems are expanded (outermost first). */
static const char *const known_keys[] = {
    "models", "gpus", "hbm_GiB", "scaleup_gpus", "nics_per_gpu", "fabric_links",
    "oversubscription", "cluster_gpus", "workloads", "price_gpu_hour_usd", "description", NULL,
};

static int known(const char *k)
{
    for (int i = 0; known_keys[i]; i++)
        if (!strcmp(k, known_keys[i]))
            return 1;
    return 0;
}

/* A list of catalog keys (or "" for the default where allow_default). */
static mp_status parse_keys(const mp_catalog *cat, json_t *v, const char *field, int kind,
                            int required, sweep_axis *ax, mp_diag *d)
{
    ax->n = 0;
    if (!v) {
        if (required) {
            mp_diag_add(d, "%s: missing (a list of catalog keys)", field);
            return MP_ERR_INPUT;
        }
        ax->n = 1; /* one default value: "" */
        ax->key[0][0] = '\0';
        return MP_OK;
    }
    if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > MP_SWEEP_MAX_AXIS) {
        mp_diag_add(d, "%s: expected a list of 1 to %d catalog keys", field, MP_SWEEP_MAX_AXIS);
        return MP_ERR_INPUT;
    }
    for (size_t i = 0; i < json_array_size(v); i++) {
        const char *s = json_string_value(json_array_get(v, i));
        if (!s || strlen(s) >= MP_KEY_CAP) {
            mp_diag_add(d, "%s[%zu]: expected a catalog key (a string under %d characters)", field,
                        i, MP_KEY_CAP);
            return MP_ERR_INPUT;
        }
        int found = kind == 0 ? mp_catalog_model(cat, s) != NULL
                  : kind == 1 ? mp_catalog_gpu(cat, s) != NULL
                              : mp_catalog_link(cat, s) != NULL;
        if (!found) {
            mp_diag_add(d, "%s[%zu] = \"%s\": not a %s in the catalog (meshplan catalog %s)", field,
                        i, s, kind == 0 ? "model" : kind == 1 ? "GPU" : "link",
                        kind == 0 ? "models" : kind == 1 ? "gpus" : "links");
            return MP_ERR_INPUT;
        }
        snprintf(ax->key[ax->n++], MP_KEY_CAP, "%s", s);
    }
    return MP_OK;
}

/* A list of numbers, or a range {"from": a, "to": b, "step": s} or {"from", "to", "mul": m}. */
static mp_status parse_nums(json_t *v, const char *field, double lo, double hi, int integer,
                            double dflt, sweep_axis *ax, mp_diag *d)
{
    ax->n = 0;
    if (!v) {
        ax->n = 1;
        ax->num[0] = dflt;
        return MP_OK;
    }
    if (json_is_object(v)) {
        json_t *f = json_object_get(v, "from"), *t = json_object_get(v, "to");
        json_t *st = json_object_get(v, "step"), *mu = json_object_get(v, "mul");
        if (!json_is_number(f) || !json_is_number(t) || (!st == !mu) ||
            (st && !json_is_number(st)) || (mu && !json_is_number(mu)) ||
            json_object_size(v) != 3) {
            mp_diag_add(d, "%s: expected a list of numbers or a range {\"from\", \"to\", and "
                           "\"step\" or \"mul\"}", field);
            return MP_ERR_INPUT;
        }
        double a = json_number_value(f), b = json_number_value(t);
        double s = st ? json_number_value(st) : json_number_value(mu);
        if (!(a <= b) || (st ? !(s > 0) : !(s > 1))) {
            mp_diag_add(d, "%s: range from %g to %g by %s %g: expected from <= to and %s", field,
                        a, b, st ? "step" : "mul", s, st ? "step > 0" : "mul > 1");
            return MP_ERR_INPUT;
        }
        for (double x = a; x <= b * (1 + 1e-12); x = st ? x + s : x * s) {
            if (ax->n >= MP_SWEEP_MAX_AXIS) {
                mp_diag_add(d, "%s: more than %d values", field, MP_SWEEP_MAX_AXIS);
                return MP_ERR_INPUT;
            }
            ax->num[ax->n++] = x;
        }
    } else if (json_is_array(v) && json_array_size(v) > 0 &&
               json_array_size(v) <= MP_SWEEP_MAX_AXIS) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            json_t *e = json_array_get(v, i);
            if (!json_is_number(e)) {
                mp_diag_add(d, "%s[%zu]: expected a number", field, i);
                return MP_ERR_INPUT;
            }
            ax->num[ax->n++] = json_number_value(e);
        }
    } else {
        mp_diag_add(d, "%s: expected a list of 1 to %d numbers or a range object", field,
                    MP_SWEEP_MAX_AXIS);
        return MP_ERR_INPUT;
    }
    for (int i = 0; i < ax->n; i++) {
        double x = ax->num[i];
        if (!(x >= lo && x <= hi) || (integer && x != floor(x))) {
            mp_diag_add(d, "%s[%d] = %g: expected %s in [%g, %g]", field, i, x,
                        integer ? "an integer" : "a number", lo, hi);
            return MP_ERR_INPUT;
        }
    }
    return MP_OK;
}

static mp_status parse_workload(json_t *w, size_t i, mp_sweep_workload *out, double price,
                                mp_diag *d)
{
    static const char *const keys[] = {"name", "gb", "seq", "tokens", "objective", NULL};
    memset(out, 0, sizeof *out);
    if (!json_is_object(w)) {
        mp_diag_add(d, "workloads[%zu]: expected an object {\"gb\", \"seq\", \"objective\", ...}", i);
        return MP_ERR_INPUT;
    }
    const char *k;
    json_t *v;
    json_object_foreach(w, k, v) {
        int ok = 0;
        for (int j = 0; keys[j]; j++)
            ok |= !strcmp(k, keys[j]);
        if (!ok) {
            mp_diag_add(d, "workloads[%zu].%s: unknown key (expected name, gb, seq, tokens, "
                           "objective)", i, k);
            return MP_ERR_INPUT;
        }
    }
    const char *name = json_string_value(json_object_get(w, "name"));
    snprintf(out->name, sizeof out->name, "%s", name ? name : "");
    if (!name)
        snprintf(out->name, sizeof out->name, "w%zu", i);
    json_t *gb = json_object_get(w, "gb"), *seq = json_object_get(w, "seq");
    json_t *tok = json_object_get(w, "tokens"), *obj = json_object_get(w, "objective");
    if (!json_is_integer(gb) || json_integer_value(gb) < 1 || json_integer_value(gb) > (1 << 30)) {
        mp_diag_add(d, "workloads[%zu].gb: expected the global batch, an integer in [1, 2^30]", i);
        return MP_ERR_INPUT;
    }
    out->gb = json_integer_value(gb);
    if (seq && (!json_is_integer(seq) || json_integer_value(seq) < 1 ||
                json_integer_value(seq) > (1 << 26))) {
        mp_diag_add(d, "workloads[%zu].seq: expected tokens per sequence, an integer in [1, 2^26]", i);
        return MP_ERR_INPUT;
    }
    out->seq = seq ? json_integer_value(seq) : 0;
    if (tok && (!json_is_number(tok) || !(json_number_value(tok) > 0 && json_number_value(tok) <= 1e18))) {
        mp_diag_add(d, "workloads[%zu].tokens: expected a token budget in (0, 1e18]", i);
        return MP_ERR_INPUT;
    }
    out->tokens = tok ? json_number_value(tok) : 0;
    out->objective = MP_OBJ_THROUGHPUT;
    if (obj && (!json_is_string(obj) ||
                mp_objective_parse(json_string_value(obj), &out->objective) != MP_OK)) {
        mp_diag_add(d, "workloads[%zu].objective: expected throughput, time-to-train, cost or "
                       "energy", i);
        return MP_ERR_INPUT;
    }
    if (out->objective == MP_OBJ_TIME_TO_TRAIN && !(out->tokens > 0)) {
        mp_diag_add(d, "workloads[%zu].objective time-to-train needs tokens (the budget)", i);
        return MP_ERR_INPUT;
    }
    if (out->objective == MP_OBJ_COST && !(price > 0)) {
        mp_diag_add(d, "workloads[%zu].objective cost needs price_gpu_hour_usd", i);
        return MP_ERR_INPUT;
    }
    return MP_OK;
}

static mp_status parse_root(const mp_catalog *cat, json_t *root, mp_sweep *s, mp_diag *d)
{
    const char *k;
    json_t *v;
    mp_status st;
    if (!json_is_object(root)) {
        mp_diag_add(d, "sweep: expected a JSON object");
        return MP_ERR_INPUT;
    }
    json_object_foreach(root, k, v) {
        if (!known(k)) {
            mp_diag_add(d, "%s: unknown key (docs/sweep.md lists them)", k);
            return MP_ERR_INPUT;
        }
    }
    json_t *price = json_object_get(root, "price_gpu_hour_usd");
    if (price && (!json_is_number(price) || !(json_number_value(price) > 0) ||
                  json_number_value(price) > 1e6)) {
        mp_diag_add(d, "price_gpu_hour_usd: expected USD per GPU-hour in (0, 1e6]");
        return MP_ERR_INPUT;
    }
    s->price_gpu_hour_usd = price ? json_number_value(price) : 0;
    if ((st = parse_keys(cat, json_object_get(root, "models"), "models", 0, 1, &s->ax[SW_MODEL], d)) ||
        (st = parse_keys(cat, json_object_get(root, "gpus"), "gpus", 1, 1, &s->ax[SW_GPU], d)) ||
        (st = parse_nums(json_object_get(root, "hbm_GiB"), "hbm_GiB", 0, 1e5, 0, 0,
                         &s->ax[SW_HBM], d)) ||
        (st = parse_nums(json_object_get(root, "scaleup_gpus"), "scaleup_gpus", 0, 1 << 20, 1, 0,
                         &s->ax[SW_SCALEUP], d)) ||
        (st = parse_nums(json_object_get(root, "nics_per_gpu"), "nics_per_gpu", 0, 64, 0, 0,
                         &s->ax[SW_NICS], d)) ||
        (st = parse_keys(cat, json_object_get(root, "fabric_links"), "fabric_links", 2, 0,
                         &s->ax[SW_LINK], d)) ||
        (st = parse_nums(json_object_get(root, "oversubscription"), "oversubscription", 1, 1e3, 0,
                         1, &s->ax[SW_OVERSUB], d)))
        return st;
    json_t *cg = json_object_get(root, "cluster_gpus");
    if (!cg) {
        mp_diag_add(d, "cluster_gpus: missing (a list or range of GPU counts)");
        return MP_ERR_INPUT;
    }
    if ((st = parse_nums(cg, "cluster_gpus", 1, 1 << 24, 1, 0, &s->ax[SW_GPUS], d)))
        return st;
    json_t *w = json_object_get(root, "workloads");
    if (!json_is_array(w) || json_array_size(w) == 0 || json_array_size(w) > MP_SWEEP_MAX_WORKLOADS) {
        mp_diag_add(d, "workloads: expected a list of 1 to %d training jobs", MP_SWEEP_MAX_WORKLOADS);
        return MP_ERR_INPUT;
    }
    s->nworkloads = (int)json_array_size(w);
    for (int i = 0; i < s->nworkloads; i++)
        if ((st = parse_workload(json_array_get(w, (size_t)i), (size_t)i, &s->workloads[i],
                                 s->price_gpu_hour_usd, d)))
            return st;
    s->systems = 1;
    for (int a = 0; a < SW_NAXES; a++) {
        s->systems *= s->ax[a].n;
        if (s->systems * s->nworkloads > MP_SWEEP_MAX_TASKS) {
            mp_diag_add(d, "sweep: more than %lld tasks (systems x workloads); narrow an axis",
                        (long long)MP_SWEEP_MAX_TASKS);
            return MP_ERR_INPUT;
        }
    }
    return MP_OK;
}

mp_status mp_sweep_parse(const mp_catalog *cat, const char *json_text, size_t len,
                         const char *origin, mp_sweep **out, mp_diag *diag)
{
    *out = NULL;
    json_error_t err;
    json_t *root = json_loadb(json_text, len, JSON_REJECT_DUPLICATES, &err);
    if (!root) {
        mp_diag_add(diag, "%s:%d:%d: %s", origin ? origin : "sweep", err.line, err.column, err.text);
        return MP_ERR_PARSE;
    }
    mp_sweep *s = calloc(1, sizeof *s);
    if (!s) {
        json_decref(root);
        return MP_ERR_NOMEM;
    }
    s->cat = cat;
    mp_status st = parse_root(cat, root, s, diag);
    json_decref(root);
    if (st != MP_OK) {
        free(s);
        return st;
    }
    *out = s;
    return MP_OK;
}

void mp_sweep_destroy(mp_sweep *s) { free(s); }

int64_t mp_sweep_systems(const mp_sweep *s) { return s->systems; }
int64_t mp_sweep_tasks(const mp_sweep *s) { return s->systems * s->nworkloads; }

void sweep_decode(const mp_sweep *s, int64_t task, sweep_point *p)
{
    p->workload = (int)(task % s->nworkloads);
    int64_t sys = task / s->nworkloads;
    p->system = sys;
    /* Innermost axis last: mixed-radix digits of the system index. */
    for (int a = SW_NAXES - 1; a >= 0; a--) {
        p->idx[a] = (int)(sys % s->ax[a].n);
        sys /= s->ax[a].n;
    }
}
