/* src/islands/xsync.c — the plan keys of synchronization across islands (xsync.h): parsing one
 * key=value, writing them back, and the bytes each compression puts on the wire. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "meshplan/xsync.h"

static const char *const sync_names[MP_SYNC_COUNT] = {"none", "hsdp", "diloco", "pp", "fl"};
static const char *const compress_names[MP_COMPRESS_COUNT] = {"none", "bf16", "fp8", "int8", "topk"};
static const char *const exchange_names[MP_EXCH_COUNT] = {"default", "ring", "rotate", "star"};
static const char *const transport_names[MP_TRANSPORT_COUNT] = {"stream", "rendezvous"};
static const char *const ring_names[MP_RING_COUNT] = {"bottleneck", "bottleneck", "tsp", "listed"};

const char *mp_sync_name(mp_sync s) { return ((int)s >= 0 && s < MP_SYNC_COUNT) ? sync_names[s] : "?"; }
const char *mp_compress_name(mp_compress c) { return ((int)c >= 0 && c < MP_COMPRESS_COUNT) ? compress_names[c] : "?"; }
const char *mp_exchange_name(mp_exchange e) { return ((int)e >= 0 && e < MP_EXCH_COUNT) ? exchange_names[e] : "?"; }
const char *mp_transport_name(mp_transport t) { return ((int)t >= 0 && t < MP_TRANSPORT_COUNT) ? transport_names[t] : "?"; }
const char *mp_ring_name(mp_ring r) { return ((int)r >= 0 && r < MP_RING_COUNT) ? ring_names[r] : "?"; }

/* Dense formats: the element size (fp32 is what DDP/FSDP reduce gradients in by default and
 * what DiLoCo's pseudo-gradients are kept in; bf16/fp8/int8 quantise them for the wire with a
 * per-chunk scale or codebook whose size is negligible: PRIME's int8 all-reduce sends a 256-entry
 * fp32 lookup table per ring chunk of millions of values). Top-k: a 4-byte value and a 4-byte
 * index per kept entry (Lin et al. 2018, Deep Gradient Compression; Shi et al. 2019, gTop-k). */
double mp_compress_bytes_per_value(mp_compress c)
{
    switch (c) {
    case MP_COMPRESS_BF16: return 2.0;
    case MP_COMPRESS_FP8:
    case MP_COMPRESS_INT8: return 1.0;
    case MP_COMPRESS_TOPK: return 8.0;
    default: return 4.0;
    }
}

enum { K_SYNC, K_INNER, K_COMPRESS, K_FRAGMENTS, K_OVERLAP, K_EXCHANGE, K_SPLIT, K_BUCKETS,
       K_TRANSPORT, K_RING, K_COUNT };
static const char *const keys[K_COUNT] = {"sync", "inner_steps", "compress", "fragments",
                                          "overlap", "exchange", "split", "buckets", "transport", "ring"};

static int count(const char *key, const char *val, long long lo, long long hi, int64_t *out,
                 mp_diag *diag)
{
    char *end = NULL;
    errno = 0;
    long long x = strtoll(val, &end, 10);
    if (!val[0] || *end || errno == ERANGE || x < lo || x > hi) {
        mp_diag_add(diag, "plan.%s = \"%s\": expected an integer in [%lld, %lld]", key, val, lo, hi);
        return 0;
    }
    *out = x;
    return 1;
}

int mp_xsync_parse_key(const char *key, const char *val, mp_xsync *x, int *ok, mp_diag *diag)
{
    int k = -1;
    for (int i = 0; i < K_COUNT; i++)
        if (!strcmp(key, keys[i]))
            k = i;
    if (k < 0)
        return 0;
    *ok = 0;
    if (x->given & (1u << k)) {
        mp_diag_add(diag, "plan: key \"%s\" given twice (second value \"%s\")", key, val);
        return 1;
    }
    x->given |= 1u << k;
    int e = 0;
    switch (k) {
    case K_SYNC:
        /* "none" is accepted: a one-cluster plan, stated explicitly. */
        if ((*ok = mp_plan_parse_enum(key, val, sync_names, MP_SYNC_COUNT, &e, diag)))
            x->sync = (mp_sync)e;
        break;
    case K_INNER: *ok = count(key, val, 1, 1000000, &x->inner_steps, diag); break;
    case K_FRAGMENTS: *ok = count(key, val, 1, 4096, &x->fragments, diag); break;
    case K_OVERLAP: *ok = count(key, val, 0, 1000000, &x->overlap_steps, diag); break;
    case K_BUCKETS: *ok = count(key, val, 1, 1000000, &x->buckets, diag); break;
    case K_TRANSPORT:
        if ((*ok = mp_plan_parse_enum(key, val, transport_names, MP_TRANSPORT_COUNT, &e, diag)))
            x->transport = (mp_transport)e;
        break;
    case K_RING:
        if ((*ok = mp_plan_parse_enum(key, val, ring_names + 1, MP_RING_COUNT - 1, &e, diag)))
            x->ring = (mp_ring)(e + 1);
        break;
    case K_EXCHANGE: {
        static const char *const ex[] = {"ring", "rotate", "star"};
        if ((*ok = mp_plan_parse_enum(key, val, ex, 3, &e, diag)))
            x->exchange = (mp_exchange)(e + 1);
        break;
    }
    case K_COMPRESS:
        if (!strncmp(val, "topk:", 5)) {
            char *end = NULL;
            errno = 0;
            double f = strtod(val + 5, &end);
            if (!val[5] || *end || errno == ERANGE || !(f > 0.0 && f <= 0.5)) {
                mp_diag_add(diag, "plan.compress = \"%s\": expected topk:F with F the kept fraction "
                            "in (0, 0.5], e.g. topk:0.01", val);
            } else {
                x->compress = MP_COMPRESS_TOPK;
                x->topk_frac = f;
                *ok = 1;
            }
        } else if (!strcmp(val, "topk")) {
            mp_diag_add(diag, "plan.compress = \"topk\": give the kept fraction, e.g. topk:0.01");
        } else if ((*ok = mp_plan_parse_enum(key, val, compress_names, MP_COMPRESS_TOPK, &e, diag))) {
            x->compress = (mp_compress)e;
        }
        break;
    case K_SPLIT:
        if (!strcmp(val, "speed")) {
            x->split = MP_SPLIT_SPEED;
            *ok = 1;
        } else if (!strcmp(val, "gpus")) {
            x->split = MP_SPLIT_GPUS;
            *ok = 1;
        } else {
            /* W1:W2:...: positive weights in island order. */
            int n = 0, bad = 0;
            const char *s = val;
            while (*s && !bad) {
                char *end = NULL;
                errno = 0;
                double w = strtod(s, &end);
                if (end == s || errno == ERANGE || !(w > 0.0 && w <= 1e9) || (*end && *end != ':') ||
                    n >= MP_XSYNC_MAX_WEIGHTS)
                    bad = 1;
                else
                    x->weights[n++] = w;
                s = *end == ':' ? end + 1 : end;
                if (*end == ':' && !*s)
                    bad = 1;
            }
            if (bad || n == 0) {
                mp_diag_add(diag, "plan.split = \"%s\": expected speed, gpus, or up to %d positive "
                            "weights joined by ':' in island order (e.g. 2:1:1)", val,
                            MP_XSYNC_MAX_WEIGHTS);
            } else {
                x->split = MP_SPLIT_WEIGHTS;
                x->nweights = n;
                *ok = 1;
            }
        }
        break;
    default: break;
    }
    return 1;
}

int mp_xsync_check_single(const mp_xsync *x, mp_diag *diag)
{
    if (x->sync != MP_SYNC_NONE)
        return 0;
    int n = 0;
    for (int k = 0; k < K_COUNT; k++)
        if (k != K_SYNC && (x->given & (1u << k))) {
            mp_diag_add(diag, "plan.%s: a key across islands (docs/islands.md); it needs sync=hsdp|diloco|pp|fl "
                        "and an islands description (--cluster ISLANDS)", keys[k]);
            n++;
        }
    return n;
}

void mp_xsync_format(const mp_xsync *x, char *buf, size_t cap, size_t *len)
{
#define APPEND(...) do { if (*len < cap) *len += (size_t)snprintf(buf + *len, cap - *len, __VA_ARGS__); } while (0)
    if (x->sync == MP_SYNC_NONE)
        return;
    APPEND(",sync=%s", mp_sync_name(x->sync));
    if (x->inner_steps)
        APPEND(",inner_steps=%lld", (long long)x->inner_steps);
    if (x->compress == MP_COMPRESS_TOPK)
        APPEND(",compress=topk:%g", x->topk_frac);
    else if (x->compress != MP_COMPRESS_NONE)
        APPEND(",compress=%s", mp_compress_name(x->compress));
    if (x->fragments > 1)
        APPEND(",fragments=%lld", (long long)x->fragments);
    if (x->overlap_steps)
        APPEND(",overlap=%lld", (long long)x->overlap_steps);
    if (x->exchange != MP_EXCH_DEFAULT)
        APPEND(",exchange=%s", mp_exchange_name(x->exchange));
    if (x->buckets > 1)
        APPEND(",buckets=%lld", (long long)x->buckets);
    if (x->transport != MP_TRANSPORT_STREAM)
        APPEND(",transport=%s", mp_transport_name(x->transport));
    if (x->ring != MP_RING_DEFAULT)
        APPEND(",ring=%s", mp_ring_name(x->ring));
    if (x->split == MP_SPLIT_GPUS) {
        APPEND(",split=gpus");
    } else if (x->split == MP_SPLIT_WEIGHTS) {
        APPEND(",split=");
        for (int i = 0; i < x->nweights; i++)
            APPEND("%s%g", i ? ":" : "", x->weights[i]);
    }
#undef APPEND
}
