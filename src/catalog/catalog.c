/* src/catalog/catalog.c — loads the embedded data/ JSON files catalog and user overrides.
 *
 * Schema: data/SCHEMA.md. Every entry is validated field by field when loaded; a bad entry names
 * its file, its key and the field. Sizes: at most MP_CATALOG_CAP entries of each kind.
 */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/bounds.h"
#include "internal.h"
#include "json_reader.h"
#include "meshplan/catalog.h"

struct mp_catalog {
    mp_gpu gpus[MP_CATALOG_CAP];
    size_t ngpus;
    mp_link links[MP_CATALOG_CAP];
    size_t nlinks;
    mp_node nodes[MP_CATALOG_CAP];
    size_t nnodes;
    mp_model models[MP_CATALOG_CAP];
    size_t nmodels;
};

/* ---- field readers: each reports "origin: kind[key].field = value: expected ..." ---- */

/* Fields one entry's parser read (to refuse the others); more than any kind has. */
#define READER_MAX_FIELDS 64

typedef struct {
    const char *origin;
    const char *kind;
    const char *key;
    mp_diag *diag;
    int errors;
    const char *read[READER_MAX_FIELDS]; /* the fields looked up in the current entry */
    int nread;
} reader;

/* o[field], remembering that the parser knows the field (see check_fields). */
static const json_t *member(reader *r, const json_t *o, const char *field)
{
    if (r->nread < READER_MAX_FIELDS)
        r->read[r->nread++] = field;
    return json_object_get(o, field);
}

static void bad(reader *r, const char *field, const json_t *v, const char *expected)
{
    char *txt = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    mp_diag_add(r->diag, "%s: %s[%s].%s = %.60s: expected %s", r->origin, r->kind,
                r->key ? r->key : "?", field, txt ? txt : "(missing)", expected);
    free(txt);
    r->errors++;
}

/* Number >= 0 (strictly > 0 when positive); absent or null gives def (required fails). */
static double get_num(reader *r, const json_t *o, const char *field, int required, int positive,
                      double def)
{
    const json_t *v = member(r, o, field);
    if (!v || json_is_null(v)) {
        if (required)
            bad(r, field, NULL, positive ? "a positive number" : "a number");
        return def;
    }
    if (!json_is_number(v)) {
        bad(r, field, v, positive ? "a positive number" : "a number");
        return def;
    }
    double x = json_number_value(v);
    if (!isfinite(x) || x < 0 || (positive && x <= 0) || x > 1e30) {
        bad(r, field, v, positive ? "a positive finite number" : "a finite number >= 0");
        return def;
    }
    return x;
}

/* A physical quantity (src/catalog/bounds.h): a number in [lo, hi] (lo > 0: positive), looked up
 * as o[key] and named `field` in the message, which states the range ("expected a positive finite
 * number: bytes/s in [1e6, 1e15] ..."). Absent or null gives def (required fails). */
static double get_phys(reader *r, const json_t *o, const char *key, const char *field, int required,
                       double lo, double hi, const char *range, double def)
{
    char what[160];
    snprintf(what, sizeof what, "%s: %s", lo > 0 ? "a positive finite number" : "a finite number >= 0",
             range);
    const json_t *v = member(r, o, key);
    if (!v || json_is_null(v)) {
        if (required)
            bad(r, field, NULL, what);
        return def;
    }
    double x = json_is_number(v) ? json_number_value(v) : NAN;
    if (!isfinite(x) || x < lo || x > hi) {
        bad(r, field, v, what);
        return def;
    }
    return x;
}

static int64_t get_int(reader *r, const json_t *o, const char *field, int required, int64_t min,
                       int64_t def)
{
    const json_t *v = member(r, o, field);
    if (!v || json_is_null(v)) {
        if (required)
            bad(r, field, NULL, "an integer");
        return def;
    }
    if (!json_is_integer(v)) {
        bad(r, field, v, "an integer");
        return def;
    }
    json_int_t x = json_integer_value(v);
    if (x < min || x > ((json_int_t)1 << 40)) {
        char what[64];
        snprintf(what, sizeof what, "an integer in [%lld, 2^40]", (long long)min);
        bad(r, field, v, what);
        return def;
    }
    return (int64_t)x;
}

/* A count stored as an int (SMs, GPUs and NICs of a node): get_int's, and at most 2^20, checked
 * before the conversion (2^32 converted to int is 0: a node of 0 GPUs divided by zero). */
static int small_int(reader *r, const json_t *o, const char *field, int required, int64_t min,
                     int64_t def)
{
    int64_t x = get_int(r, o, field, required, min, def);
    if (x > 1 << 20) {
        bad(r, field, json_object_get(o, field), "at most 2^20");
        return (int)def;
    }
    return (int)x;
}

static int get_bool(reader *r, const json_t *o, const char *field, int def)
{
    const json_t *v = member(r, o, field);
    if (!v || json_is_null(v))
        return def;
    if (!json_is_boolean(v)) {
        bad(r, field, v, "true or false");
        return def;
    }
    return json_is_true(v);
}

static void get_str(reader *r, const json_t *o, const char *field, int required, char *dst,
                    size_t cap)
{
    const json_t *v = member(r, o, field);
    if (!v || json_is_null(v)) {
        if (required)
            bad(r, field, NULL, "a string");
        return;
    }
    if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) >= cap) {
        char what[64];
        snprintf(what, sizeof what, "a non-empty string shorter than %zu bytes", cap);
        bad(r, field, v, what);
        return;
    }
    mp_strlcpy(dst, json_string_value(v), cap);
}

static void get_source(reader *r, const json_t *o, char *dst, size_t cap)
{
    const json_t *v = member(r, o, "source");
    if (!json_is_string(v) || json_string_length(v) == 0) {
        bad(r, "source", v, "a non-empty string naming where the numbers come from");
        return;
    }
    mp_strlcpy(dst, json_string_value(v), cap); /* long sources are truncated, not an error */
    mp_utf8_scrub(dst);                         /* ... without leaving half a UTF-8 sequence */
}

static const char *const dtype_names[MP_DT_COUNT] = {"bf16", "fp16", "fp8", "tf32", "fp32"};

const char *mp_dtype_name(mp_dtype d)
{
    return ((int)d >= 0 && d < MP_DT_COUNT) ? dtype_names[d] : "?";
}

double mp_dtype_bytes(mp_dtype d)
{
    static const double b[MP_DT_COUNT] = {2, 2, 1, 4, 4};
    return ((int)d >= 0 && d < MP_DT_COUNT) ? b[d] : 0;
}

static void get_dtype_map(reader *r, const json_t *o, const char *field, double out[MP_DT_COUNT])
{
    const json_t *m = member(r, o, field);
    for (int i = 0; i < MP_DT_COUNT; i++)
        out[i] = 0;
    if (!m || json_is_null(m))
        return;
    if (!json_is_object(m)) {
        bad(r, field, m, "an object of dtype: FLOP/s");
        return;
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)m, k, v) {
        int idx = -1;
        for (int i = 0; i < MP_DT_COUNT; i++)
            if (strcmp(k, dtype_names[i]) == 0)
                idx = i;
        char fname[96];
        snprintf(fname, sizeof fname, "%s.%s", field, k);
        if (idx < 0) {
            bad(r, fname, v, "a dtype key bf16, fp16, fp8, tf32 or fp32");
            continue;
        }
        if (json_is_null(v))
            continue;
        out[idx] = get_phys(r, m, k, fname, 0, MP_BOUND_FLOPS_MIN, MP_BOUND_FLOPS_MAX,
                            MP_BOUND_FLOPS_TEXT, 0);
    }
}

/* ---- entry parsers ---- */

static void parse_gpu(reader *r, const json_t *o, mp_gpu *g)
{
    memset(g, 0, sizeof *g);
    get_str(r, o, "name", 0, g->name, sizeof g->name);
    g->memory_bytes = get_phys(r, o, "memory_bytes", "memory_bytes", 1, MP_BOUND_MEM_MIN_B,
                               MP_BOUND_MEM_MAX_B, MP_BOUND_MEM_TEXT, 0);
    g->mem_bw_Bps = get_phys(r, o, "mem_bw_Bps", "mem_bw_Bps", 1, MP_BOUND_BW_MIN_BPS,
                             MP_BOUND_BW_MAX_BPS, MP_BOUND_BW_TEXT, 0);
    g->measured_mem_bw_Bps = get_phys(r, o, "measured_mem_bw_Bps", "measured_mem_bw_Bps", 0,
                                      MP_BOUND_BW_MIN_BPS, MP_BOUND_BW_MAX_BPS, MP_BOUND_BW_TEXT, 0);
    get_dtype_map(r, o, "peak_flops_per_s", g->peak_flops_per_s);
    get_dtype_map(r, o, "measured_matmul_flops_per_s", g->measured_matmul_flops_per_s);
    g->sm_count = small_int(r, o, "sm_count", 0, 1, 0);
    g->tdp_W = get_phys(r, o, "tdp_W", "tdp_W", 0, MP_BOUND_GPU_POWER_MIN_W, MP_BOUND_GPU_POWER_MAX_W,
                        MP_BOUND_GPU_POWER_TEXT, 0);
    g->attention_flops_frac = get_num(r, o, "attention_flops_frac", 0, 1, 0);
    if (g->attention_flops_frac > 1)
        bad(r, "attention_flops_frac", json_object_get(o, "attention_flops_frac"),
            "a fraction in (0, 1]");
    g->attention_fa3_flops_frac = get_num(r, o, "attention_fa3_flops_frac", 0, 1, 0);
    if (g->attention_fa3_flops_frac > 1)
        bad(r, "attention_fa3_flops_frac", json_object_get(o, "attention_fa3_flops_frac"),
            "a fraction in (0, 1]");
    g->eager_decode_W = get_phys(r, o, "eager_decode_W", "eager_decode_W", 0, MP_BOUND_GPU_POWER_MIN_W,
                                 MP_BOUND_GPU_POWER_MAX_W, MP_BOUND_GPU_POWER_TEXT, 0);
    if (g->eager_decode_W > 0 && g->tdp_W > 0 && g->eager_decode_W > g->tdp_W)
        bad(r, "eager_decode_W", json_object_get(o, "eager_decode_W"), "a power at most the GPU's tdp_W");
    get_str(r, o, "scaleup_link", 0, g->scaleup_link, sizeof g->scaleup_link);
    get_source(r, o, g->source, sizeof g->source);
    if (g->peak_flops_per_s[MP_DT_BF16] <= 0 && g->peak_flops_per_s[MP_DT_FP16] <= 0)
        bad(r, "peak_flops_per_s", json_object_get(o, "peak_flops_per_s"),
            "a bf16 or fp16 peak");
}

static void parse_link(reader *r, const json_t *o, mp_link *l)
{
    memset(l, 0, sizeof *l);
    char kind[16] = "";
    get_str(r, o, "kind", 1, kind, sizeof kind);
    if (strcmp(kind, "scaleup") == 0)
        l->kind = MP_LINK_SCALEUP;
    else if (strcmp(kind, "scaleout") == 0)
        l->kind = MP_LINK_SCALEOUT;
    else if (strcmp(kind, "wan") == 0)
        l->kind = MP_LINK_WAN;
    else if (kind[0])
        bad(r, "kind", json_object_get(o, "kind"), "scaleup, scaleout or wan");
    l->bw_Bps = get_phys(r, o, "bw_Bps", "bw_Bps", 1, MP_BOUND_BW_MIN_BPS, MP_BOUND_BW_MAX_BPS,
                         MP_BOUND_BW_TEXT, 0);
    l->latency_s = get_phys(r, o, "latency_s", "latency_s", 1, 0, MP_BOUND_LATENCY_MAX_S,
                            MP_BOUND_LATENCY_TEXT, 0);
    l->efficiency_frac = get_num(r, o, "efficiency_frac", 1, 1, 1);
    if (l->efficiency_frac > 1)
        bad(r, "efficiency_frac", json_object_get(o, "efficiency_frac"), "a fraction in (0, 1]");
    l->in_network_reduction = get_bool(r, o, "in_network_reduction", 0);
    l->in_network_algbw_frac = get_num(r, o, "in_network_algbw_frac", 0, 1, 0);
    if (l->in_network_algbw_frac > 1)
        bad(r, "in_network_algbw_frac", json_object_get(o, "in_network_algbw_frac"),
            "a fraction in (0, 1]");
    get_source(r, o, l->source, sizeof l->source);
}

static void parse_node(reader *r, const json_t *o, mp_node *n)
{
    memset(n, 0, sizeof *n);
    get_str(r, o, "gpu", 1, n->gpu, sizeof n->gpu);
    n->gpus_per_node = small_int(r, o, "gpus_per_node_count", 1, 1, 1);
    get_str(r, o, "scaleup_link", 1, n->scaleup_link, sizeof n->scaleup_link);
    char topo[16] = "";
    get_str(r, o, "scaleup_topology", 1, topo, sizeof topo);
    if (strcmp(topo, "switch") == 0)
        n->scaleup_topology = MP_SU_SWITCH;
    else if (strcmp(topo, "mesh") == 0)
        n->scaleup_topology = MP_SU_MESH;
    else if (strcmp(topo, "pcie") == 0)
        n->scaleup_topology = MP_SU_PCIE;
    else if (topo[0])
        bad(r, "scaleup_topology", json_object_get(o, "scaleup_topology"), "switch, mesh or pcie");
    get_str(r, o, "scaleout_link", 1, n->scaleout_link, sizeof n->scaleout_link);
    n->nics_per_node = small_int(r, o, "nics_per_node_count", 1, 1, 1);
    n->power_overhead_W = get_phys(r, o, "power_overhead_W", "power_overhead_W", 0, 0,
                                   MP_BOUND_OVERHEAD_POWER_MAX_W, MP_BOUND_OVERHEAD_POWER_TEXT, 0);
    get_source(r, o, n->source, sizeof n->source);
}

static void parse_model(reader *r, const json_t *o, mp_model *m)
{
    char saved_key[MP_KEY_CAP];
    mp_strlcpy(saved_key, m->key, sizeof saved_key);
    memset(m, 0, sizeof *m);
    mp_strlcpy(m->key, saved_key, sizeof m->key);
    get_str(r, o, "name", 0, m->name, sizeof m->name);
    m->layers = get_int(r, o, "layers_count", 1, 1, 1);
    m->hidden = get_int(r, o, "hidden_count", 1, 1, 1);
    m->heads = get_int(r, o, "heads_count", 1, 1, 1);
    m->kv_heads = get_int(r, o, "kv_heads_count", 0, 1, m->heads);
    m->head_dim = get_int(r, o, "head_dim_count", 0, 1, 0);
    m->ffn_hidden = get_int(r, o, "ffn_hidden_count", 1, 1, 1);
    m->glu = get_bool(r, o, "glu", 0);
    m->vocab = get_int(r, o, "vocab_count", 1, 1, 1);
    m->vocab_pad_multiple = get_int(r, o, "vocab_pad_multiple_count", 0, 1, 1);
    m->tied_embeddings = get_bool(r, o, "tied_embeddings", 0);
    char pos[16] = "rope";
    get_str(r, o, "position", 0, pos, sizeof pos);
    if (strcmp(pos, "learned") == 0)
        m->position = MP_POS_LEARNED;
    else if (strcmp(pos, "rope") == 0)
        m->position = MP_POS_ROPE;
    else if (strcmp(pos, "alibi") == 0)
        m->position = MP_POS_ALIBI;
    else
        bad(r, "position", json_object_get(o, "position"), "learned, rope or alibi");
    m->seq_len = get_int(r, o, "seq_len_count", 0, 1, 2048);
    char norm[16] = "layernorm";
    get_str(r, o, "norm", 0, norm, sizeof norm);
    if (strcmp(norm, "rmsnorm") == 0)
        m->rmsnorm = 1;
    else if (strcmp(norm, "layernorm") != 0)
        bad(r, "norm", json_object_get(o, "norm"), "layernorm or rmsnorm");
    m->bias = get_bool(r, o, "bias", 0);
    m->dropout = get_bool(r, o, "dropout", 0);
    m->moe_experts = get_int(r, o, "moe_experts_count", 0, 0, 0);
    m->moe_topk = get_int(r, o, "moe_topk_count", 0, 0, 0);
    m->moe_ffn_hidden = get_int(r, o, "moe_ffn_hidden_count", 0, 0, 0);
    m->moe_shared_experts = get_int(r, o, "moe_shared_experts_count", 0, 0, 0);
    m->moe_dense_layers = get_int(r, o, "moe_dense_layers_count", 0, 0, 0);
    m->moe_layer_freq = get_int(r, o, "moe_layer_freq_count", 0, 0, 0);
    m->q_lora_rank = get_int(r, o, "q_lora_rank_count", 0, 0, 0);
    m->kv_lora_rank = get_int(r, o, "kv_lora_rank_count", 0, 0, 0);
    m->qk_rope_head_dim = get_int(r, o, "qk_rope_head_dim_count", 0, 0, 0);
    m->qk_nope_head_dim = get_int(r, o, "qk_nope_head_dim_count", 0, 0, 0);
    m->v_head_dim = get_int(r, o, "v_head_dim_count", 0, 0, 0);
    m->attn_window = get_int(r, o, "attn_window_count", 0, 0, 0);
    m->attn_window_layers = get_int(r, o, "attn_window_layers_count", 0, 0, 0);
    m->mtp_layers = get_int(r, o, "mtp_layers_count", 0, 0, 0);
    m->context_len = get_int(r, o, "context_len_count", 0, 0, 0); /* 0 / null: unknown */
    if (m->head_dim == 0 && m->heads > 0)
        m->head_dim = m->hidden / m->heads;
    get_source(r, o, m->source, sizeof m->source);
}

/* ---- unknown fields: a field the entry's parser never looked up is a typo that would otherwise
 * silently fall back to a default (kv_head_count -> kv_heads = heads) ---- */

/* Report every member of o that the parser did not read ("notes" and names starting with '_'
 * are comments). Call after parsing the entry; resets the list for the next one. */
static void check_fields(reader *r, const json_t *o)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v) {
        int ok = k[0] == '_' || strcmp(k, "notes") == 0 || strcmp(k, "key") == 0;
        for (int i = 0; !ok && i < r->nread; i++)
            ok = strcmp(k, r->read[i]) == 0;
        if (!ok)
            bad(r, k, v, "a field of data/SCHEMA.md (this name is unknown; names starting with _ "
                         "are comments)");
    }
    r->nread = 0;
}

/* ---- merging ---- */

#define FIND(arr, n, k)                                  \
    do {                                                 \
        for (size_t i_ = 0; i_ < (n); i_++)              \
            if (strcmp((arr)[i_].key, (k)) == 0)         \
                return &(arr)[i_];                       \
        return NULL;                                     \
    } while (0)

const mp_gpu *mp_catalog_gpu(const mp_catalog *c, const char *key) { FIND(c->gpus, c->ngpus, key); }
const mp_link *mp_catalog_link(const mp_catalog *c, const char *key) { FIND(c->links, c->nlinks, key); }
const mp_node *mp_catalog_node(const mp_catalog *c, const char *key) { FIND(c->nodes, c->nnodes, key); }
const mp_model *mp_catalog_model(const mp_catalog *c, const char *key) { FIND(c->models, c->nmodels, key); }

const mp_node *mp_catalog_node_for_gpu(const mp_catalog *c, const char *gpu_key)
{
    for (size_t i = 0; i < c->nnodes; i++)
        if (strcmp(c->nodes[i].gpu, gpu_key) == 0)
            return &c->nodes[i];
    return NULL;
}

size_t mp_catalog_gpu_count(const mp_catalog *c) { return c->ngpus; }
const mp_gpu *mp_catalog_gpu_at(const mp_catalog *c, size_t i) { return i < c->ngpus ? &c->gpus[i] : NULL; }
size_t mp_catalog_link_count(const mp_catalog *c) { return c->nlinks; }
const mp_link *mp_catalog_link_at(const mp_catalog *c, size_t i) { return i < c->nlinks ? &c->links[i] : NULL; }
size_t mp_catalog_node_count(const mp_catalog *c) { return c->nnodes; }
const mp_node *mp_catalog_node_at(const mp_catalog *c, size_t i) { return i < c->nnodes ? &c->nodes[i] : NULL; }
size_t mp_catalog_model_count(const mp_catalog *c) { return c->nmodels; }
const mp_model *mp_catalog_model_at(const mp_catalog *c, size_t i) { return i < c->nmodels ? &c->models[i] : NULL; }

/* Index of key in an array of structs whose first member is char key[MP_KEY_CAP]. */
static size_t slot(const void *base, size_t stride, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp((const char *)base + i * stride, key) == 0)
            return i;
    return n;
}

typedef void (*parse_fn)(reader *, const json_t *, void *);

static void parse_gpu_v(reader *r, const json_t *o, void *e) { parse_gpu(r, o, e); }
static void parse_link_v(reader *r, const json_t *o, void *e) { parse_link(r, o, e); }
static void parse_node_v(reader *r, const json_t *o, void *e) { parse_node(r, o, e); }
static void parse_model_v(reader *r, const json_t *o, void *e) { parse_model(r, o, e); }

/* Merge one array (json_array under `field`) into base[0..*n). Works on a copy (tmp) so the
 * catalog is unchanged on error. */
static int merge_array(const json_t *root, const char *field, void *base, size_t stride,
                       size_t *n, parse_fn parse, const char *origin, mp_diag *diag, int *overflow)
{
    const json_t *arr = json_object_get(root, field);
    if (!arr)
        return 0;
    reader r = {.origin = origin, .kind = field, .diag = diag};
    if (!json_is_array(arr)) {
        bad(&r, "(array)", arr, "an array of entries");
        return r.errors;
    }
    size_t i;
    const json_t *o;
    json_array_foreach(arr, i, o) {
        char keybuf[MP_KEY_CAP] = "";
        if (!json_is_object(o)) {
            r.key = "?";
            bad(&r, "(entry)", o, "an object");
            continue;
        }
        r.key = "?";
        get_str(&r, o, "key", 1, keybuf, sizeof keybuf);
        if (!keybuf[0])
            continue;
        for (char *p = keybuf; *p; p++)
            if (*p >= 'A' && *p <= 'Z') {
                r.key = keybuf;
                bad(&r, "key", json_object_get(o, "key"), "a lowercase key");
                break;
            }
        r.key = keybuf;
        size_t at = slot(base, stride, *n, keybuf);
        if (at == *n) {
            if (*n >= MP_CATALOG_CAP) {
                *overflow = 1;
                mp_diag_add(diag, "%s: more than %d %s entries", origin, MP_CATALOG_CAP, field);
                return r.errors + 1;
            }
            (*n)++;
        }
        char *e = (char *)base + at * stride;
        mp_strlcpy(e, keybuf, MP_KEY_CAP);
        r.nread = 0;
        parse(&r, o, e);
        check_fields(&r, o);
        mp_strlcpy(e, keybuf, MP_KEY_CAP);
    }
    return r.errors;
}

mp_status mp_catalog_merge_json(mp_catalog *c, const char *json_text, size_t len,
                                const char *origin, mp_diag *diag)
{
    if (mp_is_blank(json_text, len)) {
        mp_diag_add(diag, "%s: empty: expected a JSON object with gpus, links, nodes or models arrays",
                    origin);
        return MP_ERR_PARSE;
    }
    json_t *root = mp_json_load(json_text, len, origin, diag);
    if (!root)
        return MP_ERR_PARSE;
    if (!json_is_object(root)) {
        mp_diag_add(diag, "%s: expected a JSON object with gpus, links, nodes or models arrays",
                    origin);
        json_decref(root);
        return MP_ERR_INPUT;
    }
    const char *k;
    json_t *v;
    int errors = 0;
    json_object_foreach(root, k, v) {
        if (strcmp(k, "gpus") && strcmp(k, "links") && strcmp(k, "nodes") && strcmp(k, "models") &&
            strcmp(k, "engines") && strcmp(k, "stacks") && k[0] != '_') {
            /* engines: src/infer/engine.c reads them; stacks: src/workload/stack.c */
            mp_diag_add(diag, "%s: unknown top-level key \"%s\": expected gpus, links, nodes or models",
                        origin, k);
            errors++;
        }
    }
    mp_catalog *tmp = malloc(sizeof *tmp);
    if (!tmp) {
        json_decref(root);
        return MP_ERR_NOMEM;
    }
    *tmp = *c;
    int overflow = 0;
    errors += merge_array(root, "gpus", tmp->gpus, sizeof tmp->gpus[0], &tmp->ngpus, parse_gpu_v,
                          origin, diag, &overflow);
    errors += merge_array(root, "links", tmp->links, sizeof tmp->links[0], &tmp->nlinks,
                          parse_link_v, origin, diag, &overflow);
    errors += merge_array(root, "nodes", tmp->nodes, sizeof tmp->nodes[0], &tmp->nnodes,
                          parse_node_v, origin, diag, &overflow);
    errors += merge_array(root, "models", tmp->models, sizeof tmp->models[0], &tmp->nmodels,
                          parse_model_v, origin, diag, &overflow);
    json_decref(root);
    mp_status st = MP_OK;
    if (errors == 0) {
        /* Models must be well-formed transformers. */
        for (size_t i = 0; i < tmp->nmodels; i++) {
            mp_diag md = {0};
            if (mp_model_check(&tmp->models[i], &md) != MP_OK) {
                mp_diag_add(diag, "%s: models[%s]: %s", origin, tmp->models[i].key, md.text);
                errors++;
            }
        }
    }
    if (overflow)
        st = MP_ERR_RANGE;
    else if (errors)
        st = MP_ERR_INPUT;
    else
        *c = *tmp;
    free(tmp);
    return st;
}

mp_status mp_model_from_catalog_json(const char *json_text, size_t len, mp_model *out,
                                     mp_diag *diag)
{
    if (mp_is_blank(json_text, len)) {
        mp_diag_add(diag, "model file: empty: expected a JSON object in the models.json entry schema");
        return MP_ERR_PARSE;
    }
    json_t *o = mp_json_load(json_text, len, "model file", diag);
    if (!o)
        return MP_ERR_PARSE;
    reader r = {.origin = "model file", .kind = "model", .key = "", .diag = diag};
    memset(out, 0, sizeof *out);
    if (!json_is_object(o)) {
        bad(&r, "(entry)", o, "an object");
    } else {
        get_str(&r, o, "key", 0, out->key, sizeof out->key);
        r.key = out->key;
        r.nread = 0;
        parse_model(&r, o, out);
        check_fields(&r, o);
    }
    json_decref(o);
    if (r.errors)
        return MP_ERR_INPUT;
    return mp_model_check(out, diag);
}

mp_status mp_catalog_create(mp_catalog **out, mp_diag *diag)
{
    *out = NULL;
    mp_catalog *c = calloc(1, sizeof *c);
    if (!c)
        return MP_ERR_NOMEM;
    for (const struct mp_embedded_file *f = mp_embedded_files; f->name; f++) {
        mp_status st = mp_catalog_merge_json(c, f->data, f->len, f->name, diag);
        if (st != MP_OK) {
            free(c);
            return st;
        }
    }
    *out = c;
    return MP_OK;
}

void mp_catalog_destroy(mp_catalog *c) { free(c); }
