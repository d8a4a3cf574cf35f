/* fuzz/fuzz_common.h — what the libFuzzer harnesses share: the built-in catalog (loaded once),
 * a NUL-terminated copy of the input, and the checks every successful prediction must pass
 * (finite, non-negative, memory parts summing to the total, a JSON report that parses).
 *
 * A failed check calls abort(), which libFuzzer reports as a crash with the input saved. The
 * checks here hold for any input the library accepts; the model-level invariants over valid
 * catalog plans (bandwidth, memory and ZeRO monotonicity, MFU <= 1) are in tests/test_invariants.c.
 */
#ifndef MESHPLAN_FUZZ_COMMON_H
#define MESHPLAN_FUZZ_COMMON_H

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshplan/meshplan.h"

/* Largest input a harness reads (libFuzzer's -max_len is set below this by fuzz/run.sh). */
#define FZ_MAX_INPUT (1u << 20)

#define FZ_CHECK(cond, ...)                                                                   \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "fuzz check failed at %s:%d: %s\n  ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                                     \
            fprintf(stderr, "\n");                                                            \
            abort();                                                                          \
        }                                                                                     \
    } while (0)

static inline const mp_catalog *fz_catalog(void)
{
    static mp_catalog *cat;
    if (!cat) {
        mp_diag d = {0};
        if (mp_catalog_create(&cat, &d) != MP_OK) {
            fprintf(stderr, "fuzz: built-in catalog failed: %s\n", d.text);
            abort();
        }
    }
    return cat;
}

/* malloc'd NUL-terminated copy of the input (caller frees). */
static inline char *fz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    if (size)
        memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* The diag buffer is always NUL-terminated, len matches, and it is never over capacity. */
static inline void fz_check_diag(const mp_diag *d)
{
    FZ_CHECK(d->len < MP_DIAG_CAP && d->text[d->len] == '\0' && strlen(d->text) == d->len,
             "diag len %zu", d->len);
}

/* A bit per status, for the set a call may return. */
#define FZ_ST(s) (1u << (unsigned)(s))

/* What every harness checks of a parsing call's outcome: its diag buffer is well formed, its
 * status is MP_OK or one of `allowed` (FZ_ST bits), and it failed exactly when it said why. */
static inline void fz_check_outcome(mp_status st, const mp_diag *d, unsigned allowed)
{
    fz_check_diag(d);
    FZ_CHECK((int)st >= 0 && (int)st < 32 && ((FZ_ST(MP_OK) | allowed) >> (unsigned)st & 1u),
             "status %d", (int)st);
    FZ_CHECK((st == MP_OK) == (d->count == 0), "status %s with %d messages", mp_status_str(st),
             d->count);
}

static inline void fz_check_memory(const mp_memory *m)
{
    const double parts[] = {m->weights, m->gradients, m->optimizer,         m->activations, m->logits,
                            m->buffers, m->runtime,   m->allocator_reserve, m->nccl,
                            m->step_temp};
    double sum = 0.0;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        FZ_CHECK(isfinite(parts[i]) && parts[i] >= 0.0, "memory part %zu = %g", i, parts[i]);
        sum += parts[i];
    }
    FZ_CHECK(isfinite(m->total) && fabs(sum - m->total) <= 1e-9 * m->total,
             "memory parts sum %.17g, total %.17g", sum, m->total);
    FZ_CHECK(isfinite(m->capacity) && m->capacity > 0 && isfinite(m->allocator_margin) &&
                 m->allocator_margin >= 0,
             "capacity %g margin %g", m->capacity, m->allocator_margin);
}

/* Everything an MP_OK estimate must satisfy, whatever the inputs were; and the JSON report of
 * it must be produced and parse back. */
static inline void fz_check_estimate(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                                     const mp_estimate *e)
{
    fz_check_memory(&e->memory);
    int ns = e->nstages < MP_MAX_STAGES ? e->nstages : MP_MAX_STAGES;
    FZ_CHECK(e->nstages == (int)p->pp, "nstages %d pp %lld", e->nstages, (long long)p->pp);
    for (int i = 0; i < ns; i++) {
        fz_check_memory(&e->per_stage[i]);
        FZ_CHECK(e->per_stage[i].total <= e->memory.total, "stage %d above the max", i);
    }
    const double t[] = {e->time.compute, e->time.recompute, e->time.tp_comm, e->time.cp_comm,
                        e->time.ep_comm, e->time.pp_comm, e->time.pp_bubble,
                        e->time.dp_comm_exposed, e->time.optimizer, e->time.dp_comm_total};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        FZ_CHECK(isfinite(t[i]) && t[i] >= 0.0, "time part %zu = %g", i, t[i]);
    FZ_CHECK(isfinite(e->step_s) && e->step_s > 0, "step_s %g", e->step_s);
    const double f[] = {e->tokens_per_step, e->tokens_per_s, e->tokens_per_s_per_gpu,
                        e->model_flops_per_step, e->hardware_flops_per_step,
                        e->model_tflops_per_gpu, e->hardware_tflops_per_gpu, e->mfu, e->hfu,
                        e->peak_flops_per_s};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        FZ_CHECK(isfinite(f[i]) && f[i] >= 0.0, "throughput figure %zu = %g", i, f[i]);
    FZ_CHECK(e->hfu >= e->mfu, "hfu %g < mfu %g", e->hfu, e->mfu);
    FZ_CHECK(e->layers_per_stage_min >= 1 && e->layers_per_stage_max >= e->layers_per_stage_min,
             "layers per stage %d..%d", e->layers_per_stage_min, e->layers_per_stage_max);
    FZ_CHECK(memchr(e->bottleneck, '\0', sizeof e->bottleneck) && e->bottleneck[0],
             "empty bottleneck");
    FZ_CHECK(e->nreasons >= 0 && e->nreasons <= 4, "nreasons %d", e->nreasons);
    FZ_CHECK(e->feasible == (e->memory.total <= e->memory.capacity), "feasible flag");

    char *js = mp_report_estimate_json(m, c, p, e);
    FZ_CHECK(js != NULL, "mp_report_estimate_json returned NULL");
    json_error_t err;
    json_t *root = json_loads(js, 0, &err);
    FZ_CHECK(root != NULL, "report JSON does not parse: %s\n%.2000s", err.text, js);
    static const char *const keys[] = {"feasible", "memory_bytes", "step_s", "time_s",
                                       "tokens_per_s", "mfu", "hfu", "bottleneck", "model",
                                       "cluster", "plan"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        FZ_CHECK(json_object_get(root, keys[i]) != NULL, "report JSON lacks \"%s\"", keys[i]);
    json_decref(root);
    free(js);

    FILE *devnull = fopen("/dev/null", "w");
    if (devnull) {
        mp_report_estimate_text(devnull, m, c, p, e);
        fclose(devnull);
    }
}

/* Resolve a copy of plan for model m on the first count GPUs of gpu_key and, when it can be
 * formed, predict and check. Returns the estimate status (or -1 when not resolved). */
static inline int fz_predict(const mp_model *m, const char *gpu_key, int64_t gpus,
                             const mp_plan *plan)
{
    static mp_estimate est; /* large: keep it off the stack */
    mp_plan p = *plan;
    mp_diag d = {0};
    mp_status st = mp_plan_resolve(&p, m, gpus, &d);
    fz_check_diag(&d);
    if (st != MP_OK)
        return -1;
    mp_cluster cl;
    mp_diag cd = {0};
    if (mp_cluster_from_catalog(fz_catalog(), gpu_key, gpus, 0, NULL, &cl, &cd) != MP_OK)
        return -1;
    mp_diag ed = {0};
    st = mp_estimate_plan(m, &cl, &p, NULL, &est, &ed);
    fz_check_diag(&ed);
    if (st == MP_OK)
        fz_check_estimate(m, &cl, &p, &est);
    else
        FZ_CHECK(ed.count > 0, "estimate failed (%s) without a message", mp_status_str(st));
    return (int)st;
}

/* A few plans every harness that produces a model tries on it. */
static inline void fz_predict_some(const mp_model *m)
{
    static const char *const plans[] = {
        "", "tp=2,pp=2,mb=1,gb=8,zero=1,recompute=selective",
        "tp=8,zero=3,mb=2,gb=64,recompute=full,flash=0", "pp=4,vpp=2,zero=2,precision=fp8",
        "cp=2,seq=4096,schedule=zb,pp=2,sp=0,tp=2",
    };
    static const int64_t gpus[] = {8, 64};
    for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++) {
        mp_plan p;
        mp_plan_init_default(&p);
        if (mp_plan_parse(plans[i], &p, NULL) != MP_OK)
            abort();
        for (size_t j = 0; j < sizeof gpus / sizeof gpus[0]; j++)
            fz_predict(m, "h100-sxm5-80gb", gpus[j], &p);
    }
}

/* What a model parser's answer must satisfy (model JSON, HF config.json): a status among the
 * documented ones (nomem_ok: MP_ERR_NOMEM too), messages exactly when it fails, and an accepted
 * model that checks, has terminated strings, parameters and finite FLOPs, and predicts. */
static inline void fz_check_parsed_model(const mp_model *m, mp_status st, const mp_diag *d, int nomem_ok)
{
    fz_check_diag(d);
    FZ_CHECK(st == MP_OK || st == MP_ERR_INPUT || st == MP_ERR_PARSE || (nomem_ok && st == MP_ERR_NOMEM),
             "status %d", st);
    FZ_CHECK((st == MP_OK) == (d->count == 0), "status %s with %d messages", mp_status_str(st), d->count);
    if (st != MP_OK)
        return;
    FZ_CHECK(mp_model_check(m, NULL) == MP_OK, "accepted model fails mp_model_check");
    FZ_CHECK(memchr(m->key, '\0', sizeof m->key) && memchr(m->name, '\0', sizeof m->name) &&
                 memchr(m->source, '\0', sizeof m->source),
             "unterminated string");
    mp_param_count pc;
    mp_model_params(m, 1, &pc);
    FZ_CHECK(pc.total > 0 && pc.per_layer > 0, "params %lld", (long long)pc.total);
    mp_flops fl;
    mp_model_flops(m, m->seq_len, &fl);
    FZ_CHECK(isfinite(fl.model_per_token) && fl.model_per_token > 0, "flops %g", fl.model_per_token);
    fz_predict_some(m);
}

#endif
