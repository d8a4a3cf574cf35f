#define _POSIX_C_SOURCE 200809L /* strtok_r (clang, for the fuzz build, declares it only then) */
/* src/api/api_collective.c — collective as a request -> JSON call: the object `meshplan
 * collective --json` prints, one row per message size (nccl-tests columns: bytes, count, type,
 * time_us, algbw_GBps, busbw_GBps = algbw x mp_coll_busbw_factor, the algorithm, protocol and
 * bounding tier; on congested clusters the congestion and what an unaware choice would cost). */
#define _POSIX_C_SOURCE 200809L /* strtok_r (clang's C11 headers hide it otherwise: the fuzz build) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "meshplan/api.h"

#define MAX_SIZES 64

static const struct { const char *name; double bytes; } types[] = {
    {"float", 4}, {"half", 2}, {"bfloat16", 2}, {"double", 8}, {"int8", 1}, {"uint8", 1},
    {"int32", 4}, {"int64", 8},
};

/* "algo": auto, nccl, or a comma list of algorithm names. */
static int algo_mask(mp_api_req *q, unsigned *mask)
{
    const char *s = mp_api_str(q, "algo");
    *mask = !s || !strcmp(s, "auto") ? MP_ALGO_MASK_ALL : !strcmp(s, "nccl") ? MP_ALGO_MASK_NCCL : 0;
    if (*mask)
        return 1;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        mp_coll_algo a;
        if (mp_coll_algo_parse(tok, &a) != MP_OK || a == MP_ALGO_AUTO) {
            mp_jr_bad(&q->r, "algo", json_object_get(q->root, "algo"),
                      "auto, nccl, or a comma list of algorithm names (meshplan collective --help)");
            return 0;
        }
        *mask |= MP_ALGO_BIT(a);
    }
    return 1;
}

/* A byte count with an optional K, M, G, T suffix (powers of 1024) and an optional B. */
static int parse_bytes(const char *s, double *out)
{
    char *end;
    double x = strtod(s, &end), mult = 1.0;
    const char *suffix = "KMGT";
    const char *at = *end ? strchr(suffix, (char)(*end & ~0x20)) : NULL;
    if (at && *end)
        mult = pow(1024.0, (double)(at - suffix + 1)), end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (end == s || *end || !(x >= 0) || x * mult > 1e15)
        return 0;
    *out = x * mult;
    return 1;
}

/* "sizes": "A[:B[:F]]" from A doubling (or times F) up to B, or one byte count as a number. */
static int message_sizes(mp_api_req *q, double *sizes)
{
    const json_t *v = json_object_get(q->root, "sizes");
    const char *expected = "\"A[:B[:F]]\" byte counts (8, 64K, 256M, 8G; powers of 1024) with "
                           "A <= B <= 1e15, factor F > 1, at most 64 sizes, or one byte count";
    double a = 8, b = 8.0 * 1073741824.0, f = 2.0;
    if (v && json_is_number(v)) {
        a = b = json_number_value(v);
        if (!(a >= 0 && a <= 1e15)) {
            mp_jr_bad(&q->r, "sizes", v, expected);
            return 0;
        }
    } else if (v && !json_is_null(v)) {
        char buf[128], *p2 = NULL, *p3 = NULL, *end = NULL;
        int ok = json_is_string(v) && json_string_length(v) < sizeof buf;
        if (ok) {
            snprintf(buf, sizeof buf, "%s", json_string_value(v));
            if ((p2 = strchr(buf, ':')) != NULL && (*p2++ = '\0', (p3 = strchr(p2, ':')) != NULL))
                *p3++ = '\0';
            ok = parse_bytes(buf, &a);
            b = a;
            if (ok && p2)
                ok = parse_bytes(p2, &b);
            if (ok && p3)
                f = strtod(p3, &end), ok = end != p3 && !*end && f > 1.0 && f <= 1e6;
            ok = ok && b >= a;
        }
        if (!ok) {
            mp_jr_bad(&q->r, "sizes", v, expected);
            return 0;
        }
    }
    int n = 0;
    for (double x = a; x <= b * (1.0 + 1e-12); x = x > 0 ? x * f : 1.0) {
        if (n >= MAX_SIZES) {
            mp_jr_bad(&q->r, "sizes", v, expected);
            return 0;
        }
        sizes[n++] = floor(x + 0.5);
    }
    return n;
}

/* One row of the table: the collective's cost at one message size. */
static json_t *row(const mp_cluster *c, mp_coll_op op, const mp_coll_cost *cc, double bytes,
                   const char *type, double tsize, int64_t ranks, int congested)
{
    double per_rank = (op == MP_COLL_ALL_GATHER || op == MP_COLL_REDUCE_SCATTER ||
                       op == MP_COLL_ALL_TO_ALL) ? (double)ranks : 1.0;
    double count = floor(bytes / tsize / per_rank);
    double t = cc->total_s;
    double algbw = t > 0 ? bytes / t / 1e9 : 0.0;
    double busbw = algbw * mp_coll_busbw_factor(op, ranks);
    int bt = cc->bottleneck_tier;
    const char *blink = bt >= 0 && bt < c->ntiers ? c->tier[bt].link : "-";
    json_t *r = json_pack("{s:f,s:f,s:s,s:f,s:f,s:f,s:s,s:s,s:f,s:f,s:i,s:s}", "bytes", bytes,
                          "count", count, "type", type, "time_us", t * 1e6, "algbw_GBps", algbw,
                          "busbw_GBps", busbw, "algorithm", mp_coll_algo_name(cc->algo),
                          "protocol", mp_coll_proto_name(cc->proto), "latency_us",
                          cc->latency_s * 1e6, "bandwidth_us", cc->bandwidth_s * 1e6,
                          "bound_tier", bt, "bound_link", blink);
    if (!r)
        return NULL;
    if (cc->split_tier > 0)
        json_object_set_new(r, "split_tier", json_integer(cc->split_tier));
    if (congested) {
        json_object_set_new(r, "congested_tier", json_integer(cc->congested_tier));
        json_object_set_new(r, "congestion_us", json_real(cc->congestion_s * 1e6));
        json_object_set_new(r, "blind_algorithm", json_string(mp_coll_algo_name(cc->blind_algo)));
        json_object_set_new(r, "saved_us", json_real(cc->saved_s * 1e6));
    }
    return r;
}

mp_status mp_api_collective_json(const char *request, size_t len, char **out, mp_diag *diag)
{
    static const char *const known[] = {"op", "gpu", "gpus", "gpus_per_node", "scale_out", "cluster",
                                        "catalog", "sizes", "algo", "type", "ranks", "stride", NULL};
    *out = NULL;
    mp_api_req q;
    mp_status st = mp_api_req_open(&q, "collective", request, len, known, diag);
    if (st != MP_OK)
        return st;
    const char *ops = mp_api_str(&q, "op"), *type = mp_api_str(&q, "type");
    if (!ops) ops = "all_reduce";
    if (!type) type = "float";
    mp_coll_op op = MP_COLL_ALL_REDUCE;
    if (mp_coll_op_parse(ops, &op) != MP_OK) {
        char list[256] = "one of ";
        for (int i = 0; i < MP_COLL_OP_COUNT; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                     mp_coll_op_name((mp_coll_op)i), i + 1 < MP_COLL_OP_COUNT ? ", " : "");
        mp_jr_bad(&q.r, "op", json_object_get(q.root, "op"), list);
    }
    unsigned mask = 0;
    algo_mask(&q, &mask);
    double tsize = 0, sizes[MAX_SIZES];
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(type, types[i].name))
            tsize = types[i].bytes;
    if (!tsize)
        mp_jr_bad(&q.r, "type", json_object_get(q.root, "type"),
                  "float, half, bfloat16, double, int8, uint8, int32 or int64");
    int nsizes = message_sizes(&q, sizes);
    int64_t ranks = 0, stride = 1;
    mp_api_int(&q, "ranks", 1, 1LL << 24, &ranks);
    mp_api_int(&q, "stride", 1, 1LL << 24, &stride);
    mp_cluster c;
    json_t *rows = NULL;
    if ((st = mp_api_req_status(&q)) != MP_OK || (st = mp_api_cluster(&q, &c)) != MP_OK)
        goto done;
    if (!ranks)
        ranks = c.num_gpus / stride;
    if (ranks < 1 || (ranks - 1) * stride >= c.num_gpus) {
        mp_diag_add(diag, "collective: request.ranks = %lld: expected a group that fits in %lld "
                    "GPUs at stride %lld", (long long)ranks, (long long)c.num_gpus, (long long)stride);
        st = MP_ERR_INPUT;
        goto done;
    }
    int congested = 0;
    for (int t = 0; t < c.ntiers; t++)
        congested |= c.tier[t].oversubscription > 1.0 || c.tier[t].background_load_frac > 0.0;
    rows = json_array();
    for (int i = 0; i < nsizes && st == MP_OK; i++) {
        mp_coll_cost cc;
        if (mp_coll_time_among(&c, op, sizes[i], (mp_group){ranks, stride}, mask, &cc) != MP_OK) {
            mp_diag_add(diag, "collective: request.algo = \"%s\": expected an algorithm that applies "
                        "to %s over %lld ranks on this cluster",
                        mp_api_str(&q, "algo") ? mp_api_str(&q, "algo") : "auto",
                        mp_coll_op_name(op), (long long)ranks);
            st = MP_ERR_INPUT;
        } else if (json_array_append_new(rows, row(&c, op, &cc, sizes[i], type, tsize, ranks,
                                                   congested))) {
            st = MP_ERR_NOMEM;
        }
    }
    if (st == MP_OK) {
        json_t *o = json_pack("{s:s,s:I,s:I,s:s,s:O}", "op", mp_coll_op_name(op), "ranks",
                              (json_int_t)ranks, "stride", (json_int_t)stride, "cluster", c.name,
                              "rows", rows);
        st = mp_api_dump(o, JSON_INDENT(1) | JSON_REAL_PRECISION(10), out, diag);
    }
done:
    json_decref(rows);
    mp_api_req_close(&q);
    return st;
}
