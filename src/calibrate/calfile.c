/* src/calibrate/calfile.c — a calibration: its constants, reading its JSON file, and applying it
 * to a cluster and to the estimator's options. One loader and one applier for every command. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "meshplan/calibrate.h"
#include "../internal.h"
#include "../json_reader.h"

static const char *const KIND_NAME[] = {
#define MP_X(n, s) s,
    MP_CAL_KIND_LIST(MP_X)
#undef MP_X
};
_Static_assert(sizeof KIND_NAME / sizeof KIND_NAME[0] == MP_CAL_KIND_COUNT, "one name per kind");
/* "one of a|b|c" for messages, from the same list. */
#define MP_X(n, s) "|" s
static const char KIND_BAR_LIST[] = MP_CAL_KIND_LIST(MP_X);
#undef MP_X

static void kind_expected(char *buf, size_t cap)
{
    snprintf(buf, cap, "one of %s", KIND_BAR_LIST + 1);
}

const char *mp_cal_kind_name(mp_cal_kind k)
{
    return (unsigned)k < MP_CAL_KIND_COUNT ? KIND_NAME[k] : "?";
}

static int same_target(const mp_cal_constant *a, const mp_cal_constant *b)
{
    return a->kind == b->kind && !strcmp(a->gpu, b->gpu) && !strcmp(a->key, b->key) &&
           a->tier == b->tier && (a->kind != MP_CAL_GPU_MATMUL || a->dtype == b->dtype);
}

mp_status mp_cal_add(mp_calibration *cal, const mp_cal_constant *k)
{
    for (int i = 0; i < cal->n; i++)
        if (same_target(&cal->c[i], k)) {
            cal->c[i] = *k;
            return MP_OK;
        }
    if (cal->n >= MP_CAL_MAX_CONSTANTS)
        return MP_ERR_RANGE;
    cal->c[cal->n++] = *k;
    return MP_OK;
}

int mp_cal_apply_cluster(const mp_calibration *cal, mp_cluster *c)
{
    int n = 0;
    for (int i = 0; i < cal->n; i++) {
        const mp_cal_constant *k = &cal->c[i];
        if (k->kind == MP_CAL_GPU_MATMUL) {
            if (!strcmp(k->gpu, c->gpu.key) && (unsigned)k->dtype < MP_DT_COUNT) {
                c->gpu.measured_matmul_flops_per_s[k->dtype] = k->value;
                n++;
            }
            continue;
        }
        if (k->kind != MP_CAL_TIER_LATENCY && k->kind != MP_CAL_TIER_EFFICIENCY &&
            k->kind != MP_CAL_TIER_NVLS)
            continue;
        if (k->tier < 0 || k->tier >= c->ntiers || strcmp(c->tier[k->tier].link, k->key) ||
            (k->gpu[0] && strcmp(k->gpu, c->gpu.key)))
            continue; /* a fabric fitted under one GPU type holds for that cluster, not every one */
        if (k->kind == MP_CAL_TIER_LATENCY)
            c->tier[k->tier].latency_s = k->value;
        else if (k->kind == MP_CAL_TIER_EFFICIENCY)
            c->tier[k->tier].efficiency_frac = k->value;
        else
            c->tier[k->tier].in_network_algbw_frac = k->value;
        n++;
    }
    return n;
}

int mp_cal_apply_opts(const mp_calibration *cal, const char *gpu_key, mp_estimate_opts *o)
{
    int n = 0;
    for (int i = 0; i < cal->n; i++) {
        const mp_cal_constant *k = &cal->c[i];
        if (k->gpu[0] && (!gpu_key || strcmp(k->gpu, gpu_key)))
            continue;
        if (k->kind == MP_CAL_GEMM_SUSTAINED)
            o->gemm_sustained_frac = k->value, n++;
        else if (k->kind == MP_CAL_ALLOCATOR_MARGIN)
            o->allocator_margin_frac = k->value, n++;
    }
    return n;
}

/* The range each kind's value must lie in (calibrate.h). */
static int in_range(mp_cal_kind k, double v)
{
    switch (k) {
    case MP_CAL_TIER_LATENCY: return v > 0 && v <= 1.0;
    case MP_CAL_TIER_EFFICIENCY: return v > 0 && v <= 1.0;
    case MP_CAL_TIER_NVLS: return v > 0 && v <= 1.0;
    case MP_CAL_GEMM_SUSTAINED: return v > 0 && v <= 1.5;
    case MP_CAL_ALLOCATOR_MARGIN: return v >= 0 && v <= 1.0;
    case MP_CAL_GPU_MATMUL: return v > 0 && v < 1e18;
    default: return 0;
    }
}

static void read_one(mp_jreader *r, const json_t *o, mp_calibration *out)
{
    mp_cal_constant k;
    memset(&k, 0, sizeof k);
    k.tier = -1;
    char name[64] = {0}, want[256];
    kind_expected(want, sizeof want);
    if (!mp_jr_str(r, o, "name", name, sizeof name)) {
        if (!json_object_get(o, "name"))
            mp_jr_bad(r, "name", NULL, want);
        return;
    }
    k.kind = MP_CAL_KIND_COUNT;
    for (int i = 0; i < MP_CAL_KIND_COUNT; i++)
        if (!strcmp(name, KIND_NAME[i]))
            k.kind = (mp_cal_kind)i;
    if (k.kind == MP_CAL_KIND_COUNT) {
        mp_jr_bad(r, "name", json_object_get(o, "name"), want);
        return;
    }
    mp_jr_str(r, o, "gpu", k.gpu, sizeof k.gpu);
    mp_jr_str(r, o, "link", k.key, sizeof k.key);
    int64_t tier = -1;
    mp_jr_int(r, o, "tier", 0, MP_MAX_TIERS - 1, &tier);
    k.tier = (int)tier;
    char dt[16] = {0};
    if (mp_jr_str(r, o, "dtype", dt, sizeof dt))
        k.dtype = !strcmp(dt, "fp8") ? MP_DT_FP8 : !strcmp(dt, "fp16") ? MP_DT_FP16 : MP_DT_BF16;
    if (!json_is_number(json_object_get(o, "value"))) {
        mp_jr_bad(r, "value", json_object_get(o, "value"), "a number");
        return;
    }
    k.value = json_number_value(json_object_get(o, "value"));
    if (!in_range(k.kind, k.value)) {
        mp_jr_bad(r, "value", json_object_get(o, "value"),
                  k.kind == MP_CAL_TIER_LATENCY ? "a latency in (0, 1] s"
                  : k.kind == MP_CAL_GPU_MATMUL ? "a rate > 0 FLOP/s" : "a fraction in (0, 1.5]");
        return;
    }
    if ((k.kind == MP_CAL_TIER_LATENCY || k.kind == MP_CAL_TIER_EFFICIENCY ||
         k.kind == MP_CAL_TIER_NVLS) && (!k.key[0] || k.tier < 0)) {
        mp_jr_bad(r, k.key[0] ? "tier" : "link", NULL, "the tier index and its link key");
        return;
    }
    if (k.kind == MP_CAL_GPU_MATMUL && !k.gpu[0]) {
        mp_jr_bad(r, "gpu", NULL, "the GPU's catalog key");
        return;
    }
    const char *src = json_string_value(json_object_get(o, "sources"));
    mp_strlcpy(k.sources, src ? src : "", sizeof k.sources);
    if (mp_cal_add(out, &k) != MP_OK)
        mp_jr_bad(r, "constants", NULL, "at most 32 constants");
}

mp_status mp_cal_read_json(const char *text, size_t len, const char *origin, mp_calibration *out,
                           mp_diag *diag)
{
    memset(out, 0, sizeof *out);
    json_t *root = mp_json_load(text, len, origin, diag);
    if (!root)
        return MP_ERR_PARSE;
    mp_jreader r = {origin, "", diag, 0, MP_OK};
    json_t *arr = json_object_get(root, "constants");
    if (!json_is_array(arr)) {
        mp_diag_add(diag, "%s: constants: expected an array of fitted constants (docs/calibrate.md)",
                    origin);
        json_decref(root);
        return MP_ERR_INPUT;
    }
    size_t i;
    json_t *o;
    json_array_foreach(arr, i, o) {
        snprintf(r.where, sizeof r.where, "constants[%zu]", i);
        if (!json_is_object(o)) {
            mp_jr_bad(&r, "", o, "an object");
            continue;
        }
        read_one(&r, o, out);
    }
    json_decref(root);
    return r.errors ? MP_ERR_INPUT : MP_OK;
}
