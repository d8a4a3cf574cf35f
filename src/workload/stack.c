/* src/workload/stack.c — training-stack profiles as data: data/stacks.json (embedded at build
 * time, as the catalog's files are) read into mp_stack_profile. The values and their sources
 * live in the JSON (docs/stacks.md); this file only reads and checks them.
 *
 * The estimator asks for a profile on every plan (the search prices millions), so the file is
 * parsed once per process into a static table (pthread_once) and handed out read-only. */
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "json_reader.h"
#include "meshplan/stack.h"

const char *mp_stack_name(mp_stack_id s)
{
    static const char *const names[MP_STACK_COUNT] = {
#define MP_STACK_X(e, n) n,
        MP_STACKS(MP_STACK_X)
#undef MP_STACK_X
    };
    return (unsigned)s < MP_STACK_COUNT ? names[s] : "?";
}

static const char *find_file(size_t *len)
{
    for (const struct mp_embedded_file *f = mp_embedded_files; f->name; f++)
        if (!strcmp(f->name, "stacks.json")) {
            *len = f->len;
            return f->data;
        }
    return NULL;
}

static const char *const profile_keys[] = {
    "key", "version", "source", "attention", "flash_available", "sp_available", "sp_default",
    "elementwise_bytes_frac", "tp_overlap_fwd_frac", "tp_overlap_bwd_frac", "tp_overlap_bwd_sp_frac",
    "ep_overlap_frac", "dp_overlap_frac", "zero3_prefetch_frac", "overlap_comm_sms",
    "fp8_scale_bytes_per_elem", "interleave_depth", "zero3_gather_per_tensor", "zero3_recompute_gathers",
    "gemm_sustained_frac", "attention_sustained_frac", "memory_bound_sustained_frac",
    "zero3_gather_host_s", "zero3_gather_host_rank_s", "zero3_reduce_bytes", NULL};

static void read_profile(mp_jreader *r, const json_t *o, mp_stack_profile *p)
{
    static const char *const attn[] = {"fused_softmax", "fa2", "fa3", "flex"};
    char a[24] = "";
    mp_jr_check_keys(r, o, profile_keys);
    mp_jr_str(r, o, "version", p->version, sizeof p->version);
    json_t *so = json_object_get(o, "source");
    if (json_is_string(so))
        snprintf(p->source, sizeof p->source, "%s", json_string_value(so));
    else
        mp_jr_bad(r, "source", so, "a string naming where the values come from");
    mp_jr_str(r, o, "attention", a, sizeof a);
    int found = 0;
    for (int i = 0; i < 4; i++)
        if (!strcmp(a, attn[i]))
            p->attention = (mp_stack_attn)i, found = 1;
    if (!found)
        mp_jr_bad(r, "attention", json_object_get(o, "attention"), "fused_softmax, fa2, fa3 or flex");
    /* Every field is required: -1 / NaN sentinels catch one left out. */
    p->flash_available = p->sp_available = p->sp_default = -1;
    p->zero3_gather_per_tensor = p->zero3_recompute_gathers = -1;
    mp_jr_bool(r, o, "zero3_gather_per_tensor", &p->zero3_gather_per_tensor);
    mp_jr_bool(r, o, "zero3_recompute_gathers", &p->zero3_recompute_gathers);
    mp_jr_bool(r, o, "flash_available", &p->flash_available);
    mp_jr_bool(r, o, "sp_available", &p->sp_available);
    mp_jr_bool(r, o, "sp_default", &p->sp_default);
    struct { const char *f; double lo, hi; double *dst; const char *what; } nums[] = {
        {"elementwise_bytes_frac", 0, 4, &p->elementwise_bytes_frac, "a factor in (0, 4]"},
        {"tp_overlap_fwd_frac", -1, 1, &p->tp_overlap_fwd_frac, "a fraction in [0, 1]"},
        {"tp_overlap_bwd_frac", -1, 1, &p->tp_overlap_bwd_frac, "a fraction in [0, 1]"},
        {"tp_overlap_bwd_sp_frac", -1, 1, &p->tp_overlap_bwd_sp_frac, "a fraction in [0, 1]"},
        {"ep_overlap_frac", -1, 1, &p->ep_overlap_frac, "a fraction in [0, 1]"},
        {"dp_overlap_frac", -1, 1, &p->dp_overlap_frac, "a fraction in [0, 1]"},
        {"zero3_prefetch_frac", -1, 1, &p->zero3_prefetch_frac, "a fraction in [0, 1]"},
        {"overlap_comm_sms", -1, 1024, &p->overlap_comm_sms, "SMs in [0, 1024]"},
        {"fp8_scale_bytes_per_elem", -1, 8, &p->fp8_scale_bytes_per_elem, "bytes in [0, 8]"},
        {"gemm_sustained_frac", 0, 1, &p->gemm_sustained_frac, "a fraction in (0, 1]"},
        {"attention_sustained_frac", 0, 1, &p->attention_sustained_frac, "a fraction in (0, 1]"},
        {"memory_bound_sustained_frac", 0, 1, &p->memory_bound_sustained_frac, "a fraction in (0, 1]"}};
    int missing = 0;
    for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++) {
        /* lo = -1 stands for a closed lower end at 0 */
        int closed = nums[k].lo < 0;
        if (!mp_jr_num(r, o, nums[k].f, closed ? 0.0 : nums[k].lo, !closed, nums[k].hi, nums[k].dst, nums[k].what))
            missing |= json_object_get(o, nums[k].f) == NULL;
    }
    /* The optional fields (added after the profiles; 0 where a profile does not give them). */
    p->zero3_gather_host_s = p->zero3_gather_host_rank_s = p->zero3_reduce_bytes = 0.0;
    if (json_object_get(o, "zero3_gather_host_s"))
        mp_jr_num(r, o, "zero3_gather_host_s", 0.0, 0, 1.0, &p->zero3_gather_host_s, "seconds in [0, 1]");
    if (json_object_get(o, "zero3_gather_host_rank_s"))
        mp_jr_num(r, o, "zero3_gather_host_rank_s", 0.0, 0, 1e-3, &p->zero3_gather_host_rank_s,
                  "seconds in [0, 0.001]");
    if (json_object_get(o, "zero3_reduce_bytes"))
        mp_jr_num(r, o, "zero3_reduce_bytes", 0.0, 0, 8.0, &p->zero3_reduce_bytes, "bytes in [0, 8]");
    int64_t lpc = -1;
    mp_jr_int(r, o, "interleave_depth", 0, 4096, &lpc);
    p->interleave_depth = lpc;
    if (missing || lpc < 0 || p->flash_available < 0 || p->sp_available < 0 || p->sp_default < 0 ||
        p->zero3_gather_per_tensor < 0 || p->zero3_recompute_gathers < 0) {
        mp_diag_add(r->diag, "%s: %s: every field of a profile is required (docs/stacks.md)", r->origin, r->where);
        r->errors++;
    }
}

static mp_stack_profile g_prof[MP_STACK_COUNT];
static mp_status g_status = MP_ERR_PARSE;
static char g_err[4096 + 64];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
/* Set (release) once load_once has run: later calls read it (acquire) and skip pthread_once,
 * whose call was ~2% of an evaluation's instructions in the search (two look-ups per plan;
 * callgrind, docs/search.md "round 6"). */
static atomic_int g_loaded;

static mp_status load_all(mp_diag *diag)
{
    size_t len = 0;
    const char *text = find_file(&len);
    json_t *root = text ? mp_json_load(text, len, "stacks.json", diag) : NULL;
    json_t *arr = root ? json_object_get(root, "stacks") : NULL;
    if (!json_is_array(arr)) {
        mp_diag_add(diag, "stacks.json: expected an object with a stacks array");
        json_decref(root);
        return MP_ERR_PARSE;
    }
    mp_jreader r = {"stacks.json", "", diag, 0, MP_OK};
    int found[MP_STACK_COUNT] = {0};
    size_t i;
    json_t *o;
    json_array_foreach(arr, i, o) {
        json_t *k = json_object_get(o, "key");
        int s = -1;
        for (int q = 0; q < MP_STACK_COUNT && json_is_string(k); q++)
            if (!strcmp(json_string_value(k), mp_stack_name((mp_stack_id)q)))
                s = q;
        snprintf(r.where, sizeof r.where, "stacks[%zu]", i);
        if (s < 0 || found[s]) {
            mp_jr_bad(&r, "key", k, found[s < 0 ? 0 : s] && s >= 0 ? "a key not given twice" : "a stack of meshplan/stack.h");
            continue;
        }
        snprintf(r.where, sizeof r.where, "stacks[%zu] (%s)", i, mp_stack_name((mp_stack_id)s));
        snprintf(g_prof[s].key, sizeof g_prof[s].key, "%s", mp_stack_name((mp_stack_id)s));
        read_profile(&r, o, &g_prof[s]);
        found[s] = 1;
    }
    json_decref(root);
    for (int s = 0; s < MP_STACK_COUNT; s++)
        if (!found[s]) {
            mp_diag_add(diag, "stacks.json: no profile for stack \"%s\"", mp_stack_name((mp_stack_id)s));
            r.errors++;
        }
    return r.errors ? MP_ERR_PARSE : MP_OK;
}

static void load_once(void)
{
    mp_diag d = {0};
    g_status = load_all(&d);
    snprintf(g_err, sizeof g_err, "%s", d.text);
}

const mp_stack_profile *mp_stack_profile_of(mp_stack_id s)
{
    if ((unsigned)s >= MP_STACK_COUNT)
        return NULL;
    if (!atomic_load_explicit(&g_loaded, memory_order_acquire)) {
        pthread_once(&g_once, load_once);
        atomic_store_explicit(&g_loaded, 1, memory_order_release);
    }
    return g_status == MP_OK ? &g_prof[s] : NULL;
}

mp_status mp_stack_profile_get(mp_stack_id s, mp_stack_profile *out, mp_diag *diag)
{
    memset(out, 0, sizeof *out);
    if ((unsigned)s >= MP_STACK_COUNT) {
        mp_diag_add(diag, "stack %d: expected one of megatron-core, megatron-2021, torchtitan, "
                          "deepspeed, nemo, llm-foundry, eager, generic", (int)s);
        return MP_ERR_INPUT;
    }
    const mp_stack_profile *p = mp_stack_profile_of(s);
    if (!p) {
        mp_diag_add(diag, "%s", g_err);
        return g_status;
    }
    *out = *p;
    return MP_OK;
}
