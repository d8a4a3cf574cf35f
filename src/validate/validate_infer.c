/* src/validate/validate_infer.c — validate the inference schema
 * (../shared/validation/inference/README.md: id, source_group, model, gpu, num_gpus, tp, pp, ep,
 * framework, weight_dtype, kv_dtype, input_len, output_len, scenario, batch, metric, value, ...),
 * detected from the header by mp_validate_csv. Each row the estimator can state is predicted with
 * mp_infer_estimate; what a row does not state comes from the defaults below, each listed in the
 * row's `assumed`; the rest are skipped with the reason.
 *
 * Defaults (docs/infer.md, "Validation"):
 *   - input length missing: GENERIC_IN tokens (no dataset mean is catalogued; a generic value,
 *     not fitted to any row); output length missing: GENERIC_OUT;
 *   - tp missing: the smallest power of two whose weights take at most WEIGHT_SHARE of a GPU
 *     (leaving the rest for the KV cache), dividing the GPUs and the heads; dp = gpus / (tp pp);
 *   - batch missing (offline, infinite request rate): what the engine's KV pool holds at these
 *     lengths, capped by the engine's default batch limit (max_batch in data/engines.json);
 *   - KV format missing: fp8 with fp8/fp4 weights under TensorRT-LLM (ModelOpt checkpoints quantize
 *     the KV cache with the weights), else 16-bit;
 *   - engine: trtllm and mlperf-nvidia -> trtllm, vllm and mlperf-amd -> vllm, sglang; other (HF
 *     transformers) -> vllm's profile without CUDA graphs (eager).
 * Server and interactive rows (Poisson arrivals under an SLO) are predicted by the serving
 * simulator at the row's rate, or the highest rate meeting its SLO (validate_serve.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "meshplan/infer.h"
#include "meshplan/topo.h"
#include "meshplan/validate.h"
#include "validate/validate_internal.h"

#define GENERIC_IN 1024
#define GENERIC_OUT 256
#define WEIGHT_SHARE 0.6

#define INFER_COLS(X) X(ID, "id") X(GROUP, "source_group") X(MODEL, "model") X(GPU, "gpu") \
    X(NGPUS, "num_gpus") X(TP, "tp") X(PP, "pp") X(EP, "ep") X(FRAMEWORK, "framework")      \
    X(WDT, "weight_dtype") X(KVDT, "kv_dtype") X(IN, "input_len") X(OUT, "output_len")     \
    X(SCENARIO, "scenario") X(BATCH, "batch") X(METRIC, "metric") X(VALUE, "value")       \
    X(RATE, "request_rate_per_s") X(SLO, "latency_slo")
enum {
#define X(e, n) IC_##e,
    INFER_COLS(X)
#undef X
    IC_COUNT
};
static const char *const icol[IC_COUNT] = {
#define X(e, n) n,
    INFER_COLS(X)
#undef X
};

int mp_val_header_is_infer(char (*fields)[MP_VAL_FIELD], int n)
{
    int have = 0;
    for (int i = 0; i < n; i++)
        have |= (!strcmp(fields[i], "scenario")) << 0 | (!strcmp(fields[i], "metric")) << 1 |
                (!strcmp(fields[i], "value")) << 2;
    return have == 7;
}

typedef struct {
    const char *cell[IC_COUNT];
    char assumed[256];
    char why[256];
} irow;

static void note(irow *r, const char *fmt, const char *a, double x)
{
    size_t l = strlen(r->assumed);
    if (l + 2 >= sizeof r->assumed)
        return;
    snprintf(r->assumed + l, sizeof r->assumed - l, "%s", l ? "; " : "");
    l = strlen(r->assumed);
    snprintf(r->assumed + l, sizeof r->assumed - l, fmt, a, x);
}

/* A positive number of at most 2^30 (every count and length here; a value column may be larger,
 * read by value()). */
static int num(const char *s, double *out)
{
    char *e;
    if (!s || !*s)
        return 0;
    double x = strtod(s, &e);
    if (*e || !isfinite(x) || x <= 0 || x > 1073741824.0)
        return 0;
    *out = x;
    return 1;
}

static int engine_of(const char *fw, int *cuda_graphs)
{
    *cuda_graphs = 1;
    if (!strcmp(fw, "trtllm") || !strcmp(fw, "mlperf-nvidia"))
        return MP_ENGINE_TRTLLM;
    if (!strcmp(fw, "sglang"))
        return MP_ENGINE_SGLANG;
    if (!strcmp(fw, "vllm") || !strcmp(fw, "mlperf-amd"))
        return MP_ENGINE_VLLM;
    if (!strcmp(fw, "other")) {
        *cuda_graphs = 0;
        return MP_ENGINE_VLLM;
    }
    return -1;
}

static int weights_of(const char *s)
{
    for (int w = 0; w < MP_WQ_COUNT; w++)
        if (!strcmp(s, mp_infer_weights_name((mp_infer_weights)w)))
            return w;
    return -1;
}

/* The row's plan and cluster; 0, or 1 with r->why. */
static int row_setup(const mp_catalog *cat, irow *r, const mp_model **m, mp_cluster *cl,
                     mp_infer_plan *p)
{
    double x;
    *m = mp_catalog_model(cat, r->cell[IC_MODEL]);
    if (!*m)
        return snprintf(r->why, sizeof r->why, "model \"%.40s\" is not in the catalog", r->cell[IC_MODEL]), 1;
    double ngpus = num(r->cell[IC_NGPUS], &x) ? x : 0;
    if (!(ngpus >= 1) || ngpus > 1 << 20)
        return snprintf(r->why, sizeof r->why, "num_gpus \"%.20s\": expected a GPU count", r->cell[IC_NGPUS]), 1;
    mp_diag d = {0};
    if (mp_cluster_from_catalog(cat, r->cell[IC_GPU], (int64_t)ngpus, 0, NULL, cl, &d) != MP_OK)
        return snprintf(r->why, sizeof r->why, "gpu \"%.40s\": %.180s", r->cell[IC_GPU], d.text), 1;
    mp_infer_plan_init(p);
    int graphs, e = engine_of(r->cell[IC_FRAMEWORK], &graphs);
    if (e < 0)
        return snprintf(r->why, sizeof r->why, "framework \"%.40s\" has no engine profile", r->cell[IC_FRAMEWORK]), 1;
    p->engine = e;
    p->cuda_graphs = graphs;
    if (!graphs)
        note(r, "%s", "HF transformers: vLLM profile without CUDA graphs", 0);
    int w = weights_of(r->cell[IC_WDT][0] ? r->cell[IC_WDT] : "bf16");
    if (w < 0)
        return snprintf(r->why, sizeof r->why, "weight_dtype \"%.20s\" unknown", r->cell[IC_WDT]), 1;
    p->weights = w;
    if (!strcmp(r->cell[IC_KVDT], "fp8"))
        p->kv = MP_KVQ_FP8;
    else if (!r->cell[IC_KVDT][0] && e == MP_ENGINE_TRTLLM && (w == MP_WQ_FP8 || w == MP_WQ_FP4)) {
        p->kv = MP_KVQ_FP8;
        note(r, "%s", "kv=fp8 (ModelOpt checkpoint)", 0);
    }
    p->in = num(r->cell[IC_IN], &x) ? (int64_t)llround(x) : 0;
    if (p->in < 1) {
        p->in = GENERIC_IN;
        note(r, "in=%s%.0f (generic)", "", GENERIC_IN);
    }
    p->out = num(r->cell[IC_OUT], &x) ? (int64_t)llround(x) : 0;
    if (p->out < 1) {
        p->out = GENERIC_OUT;
        note(r, "out=%s%.0f (generic)", "", GENERIC_OUT);
    }
    p->pp = num(r->cell[IC_PP], &x) && x <= 1024 ? (int)x : 1;
    p->tp = num(r->cell[IC_TP], &x) && x <= 1024 ? (int)x : 0;
    p->ep = num(r->cell[IC_EP], &x) && x <= 1024 ? (int)x : 1;
    if (p->in > (1 << 24) || p->out > (1 << 24))
        return snprintf(r->why, sizeof r->why, "input_len or output_len above 2^24 tokens"), 1;
    if (p->tp < 1) { /* the smallest power of two whose weights leave room for the KV cache */
        mp_infer_plan q = *p;
        for (q.tp = 1; q.tp * q.pp <= ngpus; q.tp *= 2) {
            if ((*m)->heads % q.tp || (int64_t)ngpus % (q.tp * q.pp))
                continue;
            mp_param_count pc;
            mp_model_params(*m, q.tp, &pc);
            double wbytes = (double)pc.total * mp_infer_weights_bytes((mp_infer_weights)q.weights) / (q.tp * q.pp);
            if (wbytes <= WEIGHT_SHARE * cl->gpu.memory_bytes)
                break;
        }
        p->tp = q.tp * q.pp <= ngpus ? q.tp : 1;
        note(r, "tp=%s%.0f (smallest fitting)", "", p->tp);
    }
    if (p->ep > p->tp) {
        note(r, "ep=%s%.0f (at most tp)", "", p->tp);
        p->ep = p->tp;
    }
    p->dp = (int)(ngpus / ((double)p->tp * p->pp));
    return 0;
}

/* Predict the row's batch: stated, or what the engine's KV pool holds (offline). */
static int row_predict(const mp_model *m, const mp_cluster *cl, irow *r, mp_infer_plan *p,
                       mp_infer_result *res)
{
    double x;
    mp_diag d = {0};
    int stated = num(r->cell[IC_BATCH], &x);
    if (stated && x > (1 << 20))
        return snprintf(r->why, sizeof r->why, "batch %.0f: expected at most 2^20", x), 1;
    p->batch = stated ? (int64_t)x : 1;
    if (mp_infer_estimate(m, cl, p, res, &d) != MP_OK)
        return snprintf(r->why, sizeof r->why, "plan cannot be formed: %.200s", d.text), 1;
    if (!stated) {
        int64_t cap = (int64_t)res->engine.max_batch;
        p->batch = res->max_concurrency < cap ? res->max_concurrency : cap;
        if (p->batch < 1)
            return snprintf(r->why, sizeof r->why, "the weights leave no KV pool (%.1f GiB of weights per GPU)",
                            res->weights_bytes / 1073741824.0), 1;
        note(r, "batch=%s%.0f (KV pool or engine cap)", "", (double)p->batch);
        memset(&d, 0, sizeof d);
        if (mp_infer_estimate(m, cl, p, res, &d) != MP_OK)
            return snprintf(r->why, sizeof r->why, "plan cannot be formed: %.200s", d.text), 1;
    }
    return 0;
}

static int metric_value(const char *metric, const mp_infer_result *res, double *out)
{
    const double out_tok = (double)res->plan.out;
    struct { const char *name; double v; } map[] = {
        {"output_tokens_per_s", res->output_tokens_per_s},
        {"output_tokens_per_s_per_gpu", res->output_tokens_per_s_per_gpu},
        {"total_tokens_per_s", res->output_tokens_per_s * (res->plan.in + out_tok) / out_tok},
        {"requests_per_s", res->requests_per_s},
        {"ttft_mean_s", res->ttft_s},
        {"tpot_mean_s", res->tpot_s},
        {"itl_mean_s", res->tpot_s},
        {"e2e_latency_mean_s", res->e2e_s},
        {"energy_j_per_output_token", res->energy_j_per_output_token},
        {"energy_j_per_request", res->energy_j_per_output_token * out_tok},
        {"avg_power_w", res->power_w},
        {"kv_bytes_per_token", res->kv_bytes_per_token},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(metric, map[i].name)) {
            *out = map[i].v;
            return 1;
        }
    return 0;
}

static void add_row(mp_validation *v, const char *id, const char *group, const char *metric,
                    double measured, double predicted, const char *assumed)
{
    double err = 100.0 * (predicted - measured) / measured;
    if (!isfinite(err))
        return;
    mp_val_row *o = &v->rows[v->nrows++];
    mp_strlcpy(o->id, id, sizeof o->id);
    mp_strlcpy(o->source_group, group, sizeof o->source_group);
    mp_strlcpy(o->metric, metric, sizeof o->metric);
    mp_strlcpy(o->assumed, assumed, sizeof o->assumed);
    mp_utf8_scrub(o->id);
    mp_utf8_scrub(o->source_group);
    mp_utf8_scrub(o->assumed);
    o->measured = measured;
    o->predicted = predicted;
    o->error_pct = err;
}

static void add_skip(mp_validation *v, const char *id, const char *why)
{
    mp_val_skip *s = &v->skips[v->nskips++];
    mp_strlcpy(s->id, id, sizeof s->id);
    mp_strlcpy(s->reason, why, sizeof s->reason);
    mp_utf8_scrub(s->id);
    mp_utf8_scrub(s->reason);
}

static void one_row(const mp_catalog *cat, irow *r, size_t rec, mp_infer_result *res, mp_validation *out)
{
    char id[64];
    if (r->cell[IC_ID][0])
        mp_strlcpy(id, r->cell[IC_ID], sizeof id);
    else
        snprintf(id, sizeof id, "row%zu", rec + 2);
    const char *group = r->cell[IC_GROUP][0] ? r->cell[IC_GROUP] : "(none)";
    const char *sc = r->cell[IC_SCENARIO], *metric = r->cell[IC_METRIC];
    double measured;
    char *e;
    measured = r->cell[IC_VALUE][0] ? strtod(r->cell[IC_VALUE], &e) : 0.0;
    if (!r->cell[IC_VALUE][0] || *e || !isfinite(measured) || !(measured > 0) || measured > 1e18) {
        snprintf(r->why, sizeof r->why, "value \"%.40s\": expected a positive number", r->cell[IC_VALUE]);
    } else if (!strcmp(sc, "server") || !strcmp(sc, "interactive")) {
        const mp_model *m;
        mp_cluster cl;
        mp_infer_plan p;
        double pred, x;
        int batch = num(r->cell[IC_BATCH], &x) && x <= (1 << 20);
        if (!row_setup(cat, r, &m, &cl, &p)) {
            p.batch = batch ? (int64_t)x : 1;
            if (!mp_val_serve_row(m, &cl, &p, batch, r->cell[IC_RATE], r->cell[IC_SLO], metric, &pred, r->why,
                                  sizeof r->why, r->assumed, sizeof r->assumed))
                add_row(out, id, group, metric, measured, pred, r->assumed);
        }
    } else {
        const mp_model *m;
        mp_cluster cl;
        mp_infer_plan p;
        double pred;
        if (!row_setup(cat, r, &m, &cl, &p) && !row_predict(m, &cl, r, &p, res)) {
            if (!metric_value(metric, res, &pred))
                snprintf(r->why, sizeof r->why, "metric %.40s is not predicted (needs the engine's "
                         "max_model_len or percentiles)", metric);
            else
                add_row(out, id, group, metric, measured, pred, r->assumed);
        }
    }
    if (r->why[0])
        add_skip(out, id, r->why);
}

mp_status mp_validate_infer_csv(const mp_catalog *cat, const char *text, size_t len,
                                const char *origin, mp_validation *out, mp_diag *diag)
{
    memset(out, 0, sizeof *out);
    char(*fields)[MP_VAL_FIELD] = malloc(MP_VAL_MAX_COLS * sizeof *fields);
    mp_infer_result *res = malloc(sizeof *res);
    if (!fields || !res) {
        free(fields);
        free(res);
        return MP_ERR_NOMEM;
    }
    const char *p = text, *end = text + len;
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3))
        p += 3;
    int overflow = 0, idx[IC_COUNT];
    int nh = mp_val_csv_next(&p, end, fields, &overflow);
    for (int c = 0; c < IC_COUNT; c++) {
        idx[c] = -1;
        for (int i = 0; i < nh; i++)
            if (!strcmp(fields[i], icol[c]))
                idx[c] = i;
    }
    size_t nrec = 0;
    for (const char *q = p;;) {
        int n = mp_val_csv_next(&q, end, fields, &overflow);
        if (n == 0)
            break;
        if (n < 0 || ++nrec > MP_VALIDATE_MAX_ROWS) {
            mp_diag_add(diag, "%s: record %zu: %s", origin, nrec + 1,
                        n < 0 ? "unterminated quoted field" : "too many rows");
            free(fields);
            free(res);
            return n < 0 ? MP_ERR_PARSE : MP_ERR_RANGE;
        }
    }
    out->rows = calloc(nrec + 1, sizeof *out->rows);
    out->skips = calloc(nrec + 1, sizeof *out->skips);
    if (!out->rows || !out->skips) {
        mp_validation_free(out);
        free(fields);
        free(res);
        return MP_ERR_NOMEM;
    }
    for (size_t rec = 0; rec < nrec; rec++) {
        int n = mp_val_csv_next(&p, end, fields, &overflow);
        if (n <= 0)
            break;
        if (n == 1 && fields[0][0] == '\0')
            continue;
        out->ninput++;
        irow r;
        memset(&r, 0, sizeof r);
        for (int c = 0; c < IC_COUNT; c++)
            r.cell[c] = idx[c] >= 0 && idx[c] < n ? fields[idx[c]] : "";
        one_row(cat, &r, rec, res, out);
    }
    free(fields);
    free(res);
    return MP_OK;
}
