/* src/api/api_search.c — search as a request -> JSON call: the job of `meshplan search --json`
 * (every valid plan for a job on one GPU count or a doubling range, the best ones and why). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "meshplan/api.h"

/* "gpus": an integer, or "A:B" (A, 2A, 4A, ... <= B) as `search --gpus A:B`. */
static int gpu_counts(mp_api_req *q, int64_t *counts, int cap)
{
    const json_t *v = json_object_get(q->root, "gpus");
    int64_t x = 0;
    if (!v || json_is_integer(v)) {
        if (!mp_api_int(q, "gpus", 1, 1LL << 24, &x))
            mp_api_missing(q, "gpus", "a GPU count, or \"A:B\" for A, 2A, 4A, ... B");
        counts[0] = x;
        return 1;
    }
    long long lo = 0, hi = 0;
    char tail;
    if (!json_is_string(v) || sscanf(json_string_value(v), "%lld:%lld%c", &lo, &hi, &tail) != 2 ||
        lo < 1 || hi < lo || hi > (1LL << 24)) {
        mp_jr_bad(&q->r, "gpus", v, "a GPU count, or \"A:B\" with 1 <= A <= B <= 2^24");
        return 0;
    }
    int n = 0;
    for (long long g = lo; g <= hi && n < cap; g *= 2)
        counts[n++] = g;
    return n;
}

/* The search options of cli_search_opts, from the request (api_internal.h). */
void mp_api_search_opts(mp_api_req *q, const mp_model *m, int top_max, mp_search_opts *o)
{
    mp_search_opts_init(o);
    const char *s = mp_api_str(q, "fix");
    if (s && mp_islands_plan_parse_single(s, &o->pin, q->r.diag) != MP_OK) /* island keys: named */
        q->r.errors++;
    int64_t x = 0;
    if (mp_api_int(q, "gb", 1, 1LL << 30, &x))
        o->pin.gb = x;
    if (!o->pin.gb)
        mp_api_missing(q, "gb", "the global batch in sequences, an integer >= 1");
    if (mp_api_int(q, "seq", 1, 1LL << 26, &x))
        o->pin.seq = x;
    if (!o->pin.seq)
        o->pin.seq = m->seq_len;
    if ((s = mp_api_str(q, "precision"))) {
        if (!strcmp(s, "bf16")) o->pin.precision = MP_DT_BF16;
        else if (!strcmp(s, "fp16")) o->pin.precision = MP_DT_FP16;
        else if (!strcmp(s, "fp8")) o->pin.precision = MP_DT_FP8;
        else mp_jr_bad(&q->r, "precision", json_object_get(q->root, "precision"), "bf16, fp16 or fp8");
    }
    if ((s = mp_api_str(q, "objective")) && mp_objective_parse(s, &o->objective) != MP_OK)
        mp_jr_bad(&q->r, "objective", json_object_get(q->root, "objective"),
                  "throughput, time-to-train, cost or energy");
    mp_api_num(q, "tokens", 1, 1e18, &o->tokens);
    mp_api_num(q, "price_gpu_hour", 1e-9, 1e6, &o->price_per_gpu_hour);
    if (o->objective == MP_OBJ_TIME_TO_TRAIN && !(o->tokens > 0))
        mp_api_missing(q, "tokens", "the token budget, for objective time-to-train");
    if (o->objective == MP_OBJ_COST && !(o->price_per_gpu_hour > 0))
        mp_api_missing(q, "price_gpu_hour", "USD per GPU-hour, for objective cost");
    if (o->objective == MP_OBJ_ENERGY)
        o->energy = mp_energy_step_facility_J; /* facility energy per step (docs/energy.md) */
    if (mp_api_int(q, "top", 1, top_max, &x))
        o->top_n = (int)x;
    if (mp_api_int(q, "threads", 1, 4096, &x))
        o->threads = (int)x;
    int no_prune = 0;
    if (mp_api_bool(q, "no_prune", &no_prune) && no_prune)
        o->prune = 0;
    if ((s = mp_api_str(q, "orders"))) {
        if (!strcmp(s, "all"))
            o->all_orders = 1;
        else if (strcmp(s, "default"))
            mp_jr_bad(&q->r, "orders", json_object_get(q->root, "orders"),
                      "default (Megatron-Core's rank order) or all");
    }
}

mp_status mp_api_search_json(const char *request, size_t len, char **out, mp_diag *diag)
{
    static const char *const known[] = {"model", "gpu", "gpus", "gpus_per_node", "scale_out",
                                        "catalog", "gb", "seq", "precision", "fix", "objective",
                                        "tokens", "price_gpu_hour", "top", "threads", "no_prune",
                                        "orders", NULL};
    *out = NULL;
    mp_api_req q;
    mp_status st = mp_api_req_open(&q, "search", request, len, known, diag);
    if (st != MP_OK)
        return st;
    int64_t counts[MP_SEARCH_MAX_CLUSTERS];
    mp_cluster *clusters = NULL;
    mp_search_result r;
    memset(&r, 0, sizeof r);
    mp_search_opts o;
    mp_model m;
    int64_t gpn = 0;
    int n = gpu_counts(&q, counts, MP_SEARCH_MAX_CLUSTERS);
    const char *gpu = mp_api_str(&q, "gpu"), *scale_out = mp_api_str(&q, "scale_out");
    mp_api_int(&q, "gpus_per_node", 1, 1 << 20, &gpn);
    if (!gpu)
        mp_api_missing(&q, "gpu", "a catalog GPU key");
    if ((st = mp_api_req_status(&q)) != MP_OK || (st = mp_api_model(&q, &m)) != MP_OK)
        goto done;
    mp_api_search_opts(&q, &m, MP_SEARCH_MAX_TOP, &o);
    if ((st = mp_api_req_status(&q)) != MP_OK)
        goto done;
    if (!(clusters = calloc((size_t)n, sizeof *clusters))) {
        st = MP_ERR_NOMEM;
        goto done;
    }
    for (int i = 0; i < n && st == MP_OK; i++)
        st = mp_cluster_from_catalog(q.cat, gpu, counts[i], (int)gpn, scale_out, &clusters[i], diag);
    if (st == MP_OK)
        st = mp_search(&m, clusters, n, &o, &r, diag);
    if (st == MP_OK && !(*out = mp_search_report_json(&m, clusters, n, &o, &r))) {
        mp_diag_add(diag, "out of memory writing the JSON answer");
        st = MP_ERR_NOMEM;
    }
done:
    mp_search_result_free(&r);
    free(clusters);
    mp_api_req_close(&q);
    return st;
}
