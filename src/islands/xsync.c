/* src/islands/xsync.c — the plan keys of synchronization across islands (xsync.h; the table is
 * xsync_keys.h): the islands plan that holds a plan and these settings, its parsing (island keys
 * here, the rest through mp_plan_parse), writing them back, and the bytes each compression puts
 * on the wire. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "islands/xsync_keys.h"
#include "meshplan/xsync.h"
#include "plan/plan_key.h"

static const char *const sync_names[MP_SYNC_COUNT] = {"none", "hsdp", "diloco", "pp", "fl"};
static const char *const compress_names[MP_COMPRESS_COUNT] = {"none", "bf16", "fp8", "int8", "topk"};
static const char *const exchange_names[MP_EXCH_COUNT] = {"default", "ring", "rotate", "star"};
static const char *const transport_names[MP_TRANSPORT_COUNT] = {"stream", "rendezvous"};
static const char *const ring_names[MP_RING_COUNT] = {"bottleneck", "bottleneck", "tsp", "listed"};
/* The names the exchange and ring keys take (their "default" value is not one of them). */
static const char *const exchange_key_names[] = {"ring", "rotate", "star"};
static const char *const ring_key_names[] = {"bottleneck", "tsp", "listed"};
_Static_assert(MP_EXCH_RING == 1 && MP_EXCH_STAR == 3 && MP_RING_BOTTLENECK == 1 && MP_RING_LISTED == 3,
               "exchange_key_names and ring_key_names follow mp_exchange and mp_ring");

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

/* ---- the hooks of compress and split, the two keys with their own syntax ----------------- */

static int parse_compress(const mp_plan_key_def *k, const char *val, void *obj, mp_diag *diag)
{
    (void)k;
    mp_xsync *x = obj;
    int e = 0;
    if (!strncmp(val, "topk:", 5)) {
        char *end = NULL;
        errno = 0;
        double f = strtod(val + 5, &end);
        if (!val[5] || *end || errno == ERANGE || !(f > 0.0 && f <= 0.5)) {
            mp_diag_add(diag, "plan.compress = \"%s\": expected topk:F with F the kept fraction "
                        "in (0, 0.5], e.g. topk:0.01", val);
            return 0;
        }
        x->compress = MP_COMPRESS_TOPK;
        x->topk_frac = f;
        return 1;
    }
    if (!strcmp(val, "topk")) {
        mp_diag_add(diag, "plan.compress = \"topk\": give the kept fraction, e.g. topk:0.01");
        return 0;
    }
    if (!mp_plan_parse_enum("compress", val, compress_names, MP_COMPRESS_TOPK, &e, diag))
        return 0;
    x->compress = (mp_compress)e;
    return 1;
}

/* split=speed|gpus|W1:W2:...: positive weights in island order. */
static int parse_split(const mp_plan_key_def *k, const char *val, void *obj, mp_diag *diag)
{
    (void)k;
    mp_xsync *x = obj;
    if (!strcmp(val, "speed") || !strcmp(val, "gpus")) {
        x->split = val[0] == 's' ? MP_SPLIT_SPEED : MP_SPLIT_GPUS;
        return 1;
    }
    int n = 0, bad = 0;
    double w[MP_XSYNC_MAX_WEIGHTS];
    const char *s = val;
    while (*s && !bad) {
        char *end = NULL;
        errno = 0;
        double v = strtod(s, &end);
        if (end == s || errno == ERANGE || !(v > 0.0 && v <= 1e9) || (*end && *end != ':') ||
            n >= MP_XSYNC_MAX_WEIGHTS)
            bad = 1;
        else
            w[n++] = v;
        s = *end == ':' ? end + 1 : end;
        if (*end == ':' && !*s)
            bad = 1;
    }
    if (bad || n == 0) {
        mp_diag_add(diag, "plan.split = \"%s\": expected speed, gpus, or up to %d positive "
                    "weights joined by ':' in island order (e.g. 2:1:1)", val, MP_XSYNC_MAX_WEIGHTS);
        return 0;
    }
    x->split = MP_SPLIT_WEIGHTS;
    x->nweights = n;
    memcpy(x->weights, w, (size_t)n * sizeof w[0]);
    return 1;
}

#define APPEND(...)                                                                             \
    do {                                                                                        \
        int w_ = snprintf(*len < cap ? buf + *len : NULL, *len < cap ? cap - *len : 0,          \
                          __VA_ARGS__);                                                         \
        if (w_ > 0)                                                                             \
            *len += (size_t)w_;                                                                 \
    } while (0)

static void format_compress(const mp_plan_key_def *k, const void *obj, char *buf, size_t cap, size_t *len)
{
    (void)k;
    const mp_xsync *x = obj;
    if (x->compress == MP_COMPRESS_TOPK)
        APPEND(",compress=topk:%g", x->topk_frac);
    else if (x->compress != MP_COMPRESS_NONE)
        APPEND(",compress=%s", mp_compress_name(x->compress));
}

static void format_split(const mp_plan_key_def *k, const void *obj, char *buf, size_t cap, size_t *len)
{
    (void)k;
    const mp_xsync *x = obj;
    if (x->split == MP_SPLIT_GPUS) {
        APPEND(",split=gpus");
    } else if (x->split == MP_SPLIT_WEIGHTS) {
        APPEND(",split=");
        for (int i = 0; i < x->nweights; i++)
            APPEND("%s%g", i ? ":" : "", x->weights[i]);
    }
}
#undef APPEND

static const mp_plan_key_ops compress_ops = {parse_compress, format_compress};
static const mp_plan_key_ops split_ops = {parse_split, format_split};

/* ---- the table --------------------------------------------------------------------------- */

#define XSYNC_ROW(...) MP_PLAN_KEY_ROW(mp_xsync, __VA_ARGS__)
static const mp_plan_key_def xsync_keys[] = {MP_XSYNC_KEYS(XSYNC_ROW)};
#undef XSYNC_ROW
enum { N_XSYNC_KEYS = (int)(sizeof xsync_keys / sizeof xsync_keys[0]) };
_Static_assert(N_XSYNC_KEYS <= 32, "mp_xsync.given keeps one bit per key");

const mp_plan_key *mp_islands_plan_key_at(int i)
{
    return i >= 0 && i < N_XSYNC_KEYS ? &xsync_keys[i].pub : NULL;
}

int mp_islands_plan_keys_help(char *buf, size_t cap)
{
    return mp_plan_key_help(xsync_keys, N_XSYNC_KEYS, buf, cap);
}

int mp_xsync_parse_key(const char *key, const char *val, mp_xsync *x, int *ok, mp_diag *diag)
{
    int k = mp_plan_key_find(xsync_keys, N_XSYNC_KEYS, key);
    if (k < 0)
        return 0;
    *ok = 0;
    if (x->given & (1u << k)) {
        mp_diag_add(diag, "plan: key \"%s\" given twice (second value \"%s\")", key, val);
        return 1;
    }
    x->given |= 1u << k;
    *ok = mp_plan_key_parse(&xsync_keys[k], val, x, diag);
    return 1;
}

int mp_xsync_check_single(const mp_xsync *x, mp_diag *diag)
{
    if (x->sync != MP_SYNC_NONE)
        return 0;
    int n = 0;
    for (int k = 1; k < N_XSYNC_KEYS; k++) /* all but sync (none is a one-cluster plan) */
        if (x->given & (1u << k)) {
            mp_diag_add(diag, "plan.%s: a key across islands (docs/islands.md); it needs sync=hsdp|diloco|pp|fl "
                        "and an islands description (--cluster ISLANDS)", xsync_keys[k].pub.name);
            n++;
        }
    return n;
}

void mp_xsync_format(const mp_xsync *x, char *buf, size_t cap, size_t *len)
{
    if (x->sync == MP_SYNC_NONE)
        return;
    for (int k = 0; k < N_XSYNC_KEYS; k++)
        mp_plan_key_format(&xsync_keys[k], x, buf, cap, len);
}

/* ---- the islands plan: island keys here, the rest through mp_plan_parse ------------------- */

void mp_islands_plan_init_default(mp_islands_plan *ip)
{
    mp_plan_init_default(&ip->plan);
    memset(&ip->xsync, 0, sizeof ip->xsync);
}

typedef struct {
    mp_xsync *x;
    mp_diag *diag;
    char rest[MP_PLAN_TEXT_MAX + 1]; /* the tokens for mp_plan_parse */
    size_t rest_len;
    int errors;
} split_state;

static void rest_add(split_state *s, const char *key, const char *val)
{
    int w = snprintf(s->rest + s->rest_len, sizeof s->rest - s->rest_len, "%s%s%s%s",
                     s->rest_len ? "," : "", key, val ? "=" : "", val ? val : "");
    if (w > 0)
        s->rest_len += (size_t)w;
    if (s->rest_len >= sizeof s->rest) /* cannot happen: the rest is shorter than the text */
        s->rest_len = sizeof s->rest - 1;
}

static void split_token(char *key, char *val, void *ctx)
{
    split_state *s = ctx;
    int ok = 1, n_plan = 0;
    const mp_plan_key_def *plan_keys = mp_plan_key_defs(&n_plan);
    if (!val || mp_plan_key_find(plan_keys, n_plan, key) >= 0) {
        rest_add(s, key, val); /* mp_plan_parse names a token that is not key=value */
    } else if (mp_xsync_parse_key(key, val, s->x, &ok, s->diag)) {
        s->errors += !ok;
    } else {
        const mp_plan_key_def *tabs[2] = {plan_keys, xsync_keys};
        const int ns[2] = {n_plan, N_XSYNC_KEYS};
        mp_plan_key_unknown(key, val, tabs, ns, 2, s->diag);
        s->errors++;
    }
}

mp_status mp_islands_plan_parse(const char *text, mp_islands_plan *ip, mp_diag *diag)
{
    if (!text)
        return MP_OK;
    size_t n = strlen(text);
    if (n > MP_PLAN_TEXT_MAX) {
        mp_diag_add(diag, "plan: %zu characters: expected at most %d", n, MP_PLAN_TEXT_MAX);
        return MP_ERR_INPUT;
    }
    split_state *s = calloc(1, sizeof *s);
    if (!s)
        return MP_ERR_NOMEM;
    s->x = &ip->xsync;
    s->diag = diag;
    mp_plan_key_tokens(text, split_token, s);
    mp_status st = mp_plan_parse(s->rest, &ip->plan, diag);
    if (s->errors && (st == MP_OK || st == MP_ERR_PARSE))
        st = MP_ERR_INPUT;
    free(s);
    return st;
}

mp_status mp_islands_plan_parse_single(const char *text, mp_plan *p, mp_diag *diag)
{
    mp_islands_plan ip;
    ip.plan = *p;
    memset(&ip.xsync, 0, sizeof ip.xsync);
    mp_status st = mp_islands_plan_parse(text, &ip, diag);
    *p = ip.plan;
    if (st != MP_OK)
        return st;
    if (ip.xsync.sync != MP_SYNC_NONE) {
        mp_diag_add(diag, "plan.sync = %s: a key across islands (docs/islands.md); this command "
                    "predicts one cluster: use predict --cluster ISLANDS", mp_sync_name(ip.xsync.sync));
        return MP_ERR_INPUT;
    }
    return mp_xsync_check_single(&ip.xsync, diag) ? MP_ERR_INPUT : MP_OK;
}

int mp_islands_plan_format(const mp_islands_plan *ip, char *buf, size_t cap)
{
    int n = mp_plan_format(&ip->plan, buf, cap);
    size_t len = n > 0 ? (size_t)n : 0;
    mp_xsync_format(&ip->xsync, buf, cap, &len);
    return (int)len;
}
