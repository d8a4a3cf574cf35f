/* src/validate/validate_infer.c — validate the inference schema
 * (../shared/validation/inference/README.md: id, source_group, model, gpu, num_gpus, tp, pp, ep,
 * framework, weight_dtype, kv_dtype, input_len, output_len, length_dist, scenario, batch, metric,
 * value, notes, ...), detected from the header by mp_validate_csv. Each offline and fixed-batch
 * row the estimator can state is predicted with mp_infer_estimate; server and interactive rows go
 * to the one serving dispatch point (validate_serving.c). What a row does not state comes from the
 * defaults table below, each value used written into the row's `assumed`; the rest are skipped
 * with the reason.
 *
 * Defaults (docs/infer.md, "Validation"):
 *   - a length missing from a row whose length_dist names a dataset of DATASETS: that dataset's
 *     published mean (the source beside it); otherwise GENERIC_IN / GENERIC_OUT (a generic chat
 *     request, not fitted to any row);
 *   - tp missing: the smallest power of two whose weights take at most WEIGHT_SHARE of a GPU
 *     (leaving the rest for the KV cache), dividing the GPUs and the heads; dp = gpus / (tp pp);
 *   - batch missing (offline, infinite request rate): what the engine's KV pool holds at these
 *     lengths, capped by the engine's default batch limit (max_batch in data/engines.json); a
 *     row whose notes name trtllm-bench (which tunes its own settings when a run states none)
 *     takes that harness's max batch size and max num tokens instead (src/infer/bench_tuning.c);
 *   - KV format missing: fp8 with fp8/fp4 weights under TensorRT-LLM (ModelOpt checkpoints quantize
 *     the KV cache with the weights), else 16-bit;
 *   - engine: trtllm and mlperf-nvidia -> trtllm, vllm and mlperf-amd -> vllm, sglang; other (HF
 *     transformers, as the README says of the ML.ENERGY v1 rows) -> hf, eager;
 *   - engine settings a row's notes state as key=value (max_model_len, gpu_memory_utilization)
 *     are used: vLLM's profile run covers max(max_model_len, its chunk) tokens (chunked prefill
 *     off: SchedulerConfig sets max_num_batched_tokens to at least max_model_len). */
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

/* Published mean lengths of the datasets rows name in length_dist ("dataset:NAME"), in tokens;
 * 0 = not published (the generic length is used and said). */
static const struct {
    const char *name;
    double in, out;
    const char *source;
    /* a static-batch benchmark on this dataset (0 = none): its generation limit, tokens, and the
     * lognormal shape of its response lengths (src/infer/lengths.c) */
    double static_cap, out_sigma;
} DATASETS[] = {
    /* Kwon et al. 2023, "Efficient Memory Management for LLM Serving with PagedAttention"
     * (SOSP), Sec. 6.1 and Fig. 11: ShareGPT mean input 161.31, output 337.99 tokens; Alpaca
     * 19.31 and 58.45 */
    {"sharegpt", 161.31, 337.99, "Kwon et al. 2023 (vLLM, SOSP) Fig. 11", 0, 0},
    {"alpaca", 19.31, 58.45, "Kwon et al. 2023 (vLLM, SOSP) Fig. 11", 0, 0},
    /* ML.ENERGY leaderboard v1 (Chung et al. 2023, ml.energy): the chat task's prompts are
     * ShareGPT conversations, so ShareGPT's mean prompt; the rows state their output means */
    /* Its benchmark (ml-energy/leaderboard scripts/benchmark.py, 2023) runs HF generate on a
     * fixed batch until every response stops or reaches max_new_tokens = 512. The response
     * lengths' shape, 0.865, is the median over the 14 chat models of its A100 chat table that are
     * not validation rows (data/A100_chat_benchmark.csv; docs/infer.md "Static batches"): each
     * model's batch-1 mean and its batch-2 mean, lower by the cut share p as p (1 - p) x 513
     * (the recording rule below), give its p, and p with the mean give its shape */
    {"mlenergy_v1_chat_prompts", 161.31, 337.99, "ShareGPT means (Kwon et al. 2023 Fig. 11): ML.ENERGY v1 chat prompts are ShareGPT's",
     512, 0.865},
    /* MLPerf Inference Llama 2 70B (v4.0 on): 24,576 OpenOrca GPT-4 samples, inputs and outputs
     * at most 1,024 tokens (mlcommons/inference language/llama2-70b/README.md, processorca.py
     * --seqlen_limit=1024); its accuracy target quotes the FP16 reference run's "Tokens per
     * sample: 294.45" (output). The input mean is the mean of the per-sample lengths' sample in
     * mlperf_lengths.c (in = 0 here: taken from there) */
    {"mlperf_openorca", 0, 294.45, "mlcommons/inference language/llama2-70b README (tokens per sample 294.45)", 0, 0},
    /* MLPerf Inference Mixtral 8x7B (v4.1 on): 15,000 samples, 5k each of OpenOrca, GSM8K and
     * MBXP (mlcommons/inference language/mixtral-8x7b/README.md); its accuracy target's "tokens_per_sample:
     * 144.84" (output); the input mean from the sample in mlperf_lengths.c */
    {"mlperf_mixtral_openorca_gsm8k_mbxp", 0, 144.84, "mlcommons/inference language/mixtral-8x7b README (tokens_per_sample 144.84)", 0, 0},
};

int mp_val_header_is_infer(char (*fields)[MP_VAL_FIELD], int n)
{
    int have = 0;
    for (int i = 0; i < n; i++)
        have |= (!strcmp(fields[i], "scenario")) << 0 | (!strcmp(fields[i], "metric")) << 1 |
                (!strcmp(fields[i], "value")) << 2;
    return have == 7;
}

static const char *const icol[MP_VIC_COUNT] = {
#define X(e, n) n,
    MP_VAL_INFER_COLS(X)
#undef X
};

typedef mp_val_infer_row irow;

void mp_val_infer_note(mp_val_infer_row *r, const char *text)
{
    size_t l = strlen(r->assumed);
    if (l + 3 >= sizeof r->assumed)
        return;
    snprintf(r->assumed + l, sizeof r->assumed - l, "%s%s", l ? "; " : "", text);
}

static void note(irow *r, const char *fmt, const char *a, double x)
{
    char buf[200];
    snprintf(buf, sizeof buf, fmt, a, x);
    mp_val_infer_note(r, buf);
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
    if (!strcmp(fw, "other")) { /* the README: ML.ENERGY v1 = HF transformers with FastChat */
        *cuda_graphs = 0;
        return MP_ENGINE_HF;
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

/* The number after "key=" in a row's notes (README: extra configuration as `key=value;`), or 0. */
static double notes_value(const irow *r, const char *key)
{
    const char *n = r->cell[MP_VIC_NOTES];
    size_t kl = strlen(key);
    for (const char *q = strstr(n, key); q; q = strstr(q + 1, key))
        if ((q == n || q[-1] == ' ' || q[-1] == ';') && q[kl] == '=') {
            char *e;
            double x = strtod(q + kl + 1, &e);
            return e != q + kl + 1 && isfinite(x) && x > 0 ? x : 0.0;
        }
    return 0.0;
}

/* Input and output lengths: stated, the named dataset's published mean, or generic. */
static void lengths(irow *r, mp_infer_plan *p)
{
    double x;
    const char *dist = r->cell[MP_VIC_DIST], *ds = !strncmp(dist, "dataset:", 8) ? dist + 8 : NULL;
    double mean_in = 0, mean_out = 0;
    for (size_t i = 0; ds && i < sizeof DATASETS / sizeof DATASETS[0]; i++)
        if (!strcmp(ds, DATASETS[i].name)) {
            mean_in = DATASETS[i].in;
            mean_out = DATASETS[i].out;
        }
    /* a dataset with a per-sample length sample (mlperf_lengths.c) and no published mean input:
     * the sample's mean */
    static _Thread_local mp_val_lengths tab;
    int from_sample = 0;
    if (ds && !(mean_in > 0) && mp_val_dataset_lengths(ds, &tab)) {
        mean_in = tab.in_mean;
        from_sample = 1;
    }
    char buf[160];
    for (int k = 0; k < 2; k++) {
        int64_t *v = k ? &p->out : &p->in;
        double mean = k ? mean_out : mean_in;
        *v = num(r->cell[k ? MP_VIC_OUT : MP_VIC_IN], &x) ? (int64_t)llround(x) : 0;
        if (*v >= 1)
            continue;
        if (mean > 0) {
            *v = (int64_t)llround(mean);
            snprintf(buf, sizeof buf, "%s=%lld (mean of dataset %.40s%s)", k ? "out" : "in", (long long)*v, ds,
                     !k && from_sample ? "'s length sample" : "");
        } else {
            *v = k ? GENERIC_OUT : GENERIC_IN;
            snprintf(buf, sizeof buf, "%s=%lld (generic%s%.60s)", k ? "out" : "in", (long long)*v,
                     ds ? ": no published mean for " : "", ds ? ds : "");
        }
        mp_val_infer_note(r, buf);
    }
}

/* Engine settings a row's notes state: gpu_memory_utilization (the KV share), max_model_len
 * (vLLM's profile run covers at least it: SchedulerConfig max_num_batched_tokens). */
static void engine_notes(irow *r, mp_infer_plan *p)
{
    double util = notes_value(r, "gpu_memory_utilization"), len = notes_value(r, "max_model_len");
    if (util > 0 && util <= 1)
        p->kv_frac = util;
    if (len >= 1 && len <= (1 << 24) && p->engine == MP_ENGINE_VLLM) {
        mp_engine_profile e;
        mp_diag d = {0};
        if (mp_engine_profile_get(MP_ENGINE_VLLM, &e, &d) == MP_OK && len > e.max_batched_tokens) {
            p->chunk = (int64_t)len;
            note(r, "profile run of max_model_len = %s%.0f tokens", "", len);
        }
    }
}

int mp_val_infer_setup(const mp_catalog *cat, mp_val_infer_row *r, const mp_model **m,
                       mp_cluster *cl, mp_infer_plan *p)
{
    double x;
    *m = mp_catalog_model(cat, r->cell[MP_VIC_MODEL]);
    if (!*m)
        return snprintf(r->why, sizeof r->why, "model \"%.40s\" is not in the catalog", r->cell[MP_VIC_MODEL]), 1;
    double ngpus = num(r->cell[MP_VIC_NGPUS], &x) ? x : 0;
    if (!(ngpus >= 1) || ngpus > 1 << 20)
        return snprintf(r->why, sizeof r->why, "num_gpus \"%.20s\": expected a GPU count", r->cell[MP_VIC_NGPUS]), 1;
    mp_diag d = {0};
    if (mp_cluster_from_catalog(cat, r->cell[MP_VIC_GPU], (int64_t)ngpus, 0, NULL, cl, &d) != MP_OK)
        return snprintf(r->why, sizeof r->why, "gpu \"%.40s\": %.180s", r->cell[MP_VIC_GPU], d.text), 1;
    mp_infer_plan_init(p);
    int graphs, e = engine_of(r->cell[MP_VIC_FRAMEWORK], &graphs);
    if (e < 0)
        return snprintf(r->why, sizeof r->why, "framework \"%.40s\" has no engine profile", r->cell[MP_VIC_FRAMEWORK]), 1;
    p->engine = e;
    p->cuda_graphs = graphs;
    if (!graphs)
        note(r, "%s", "framework other: HF transformers eager (engine hf)", 0);
    int w = weights_of(r->cell[MP_VIC_WDT][0] ? r->cell[MP_VIC_WDT] : "bf16");
    if (w < 0)
        return snprintf(r->why, sizeof r->why, "weight_dtype \"%.20s\" unknown", r->cell[MP_VIC_WDT]), 1;
    p->weights = w;
    if (!strcmp(r->cell[MP_VIC_KVDT], "fp8"))
        p->kv = MP_KVQ_FP8;
    else if (!r->cell[MP_VIC_KVDT][0] && e == MP_ENGINE_TRTLLM && (w == MP_WQ_FP8 || w == MP_WQ_FP4)) {
        p->kv = MP_KVQ_FP8;
        note(r, "%s", "kv=fp8 (ModelOpt checkpoint)", 0);
    }
    lengths(r, p);
    engine_notes(r, p);
    p->pp = num(r->cell[MP_VIC_PP], &x) && x <= 1024 ? (int)x : 1;
    p->tp = num(r->cell[MP_VIC_TP], &x) && x <= 1024 ? (int)x : 0;
    p->ep = num(r->cell[MP_VIC_EP], &x) && x <= 1024 ? (int)x : 1;
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

/* The mean response ML.ENERGY v1 records from lengths of median M: benchmark.py counts a
 * response that reached max_new_tokens as -1 (its result's initial value) unless no response of
 * the batch stopped, so the per-response mean is the cut mean less (cap + 1) p (1 - p^(B-1)). */
static double recorded_mean(double median, double sigma, double cap, int64_t b)
{
    double p = mp_infer_cut_share(median, sigma, cap);
    return mp_infer_expected_longest(median, sigma, cap, 1) - (cap + 1.0) * p * (1.0 - pow(p, (double)(b - 1)));
}

/* A fixed batch of a static-batch benchmark's dataset steps until its longest response: the
 * lengths' median that gives the row's recorded mean (bisection: the recorded mean rises with
 * the median), then the expected longest of the batch (plan key longest). */
static void static_batch(irow *r, mp_infer_plan *p)
{
    const char *dist = r->cell[MP_VIC_DIST];
    if (p->batch < 2 || strcmp(r->cell[MP_VIC_SCENARIO], "fixed_batch") || strncmp(dist, "dataset:", 8))
        return;
    for (size_t i = 0; i < sizeof DATASETS / sizeof DATASETS[0]; i++) {
        const double cap = DATASETS[i].static_cap, s = DATASETS[i].out_sigma;
        if (strcmp(dist + 8, DATASETS[i].name) || !(cap > 0) || (double)p->out >= cap)
            continue;
        double lo = log(1e-3 * cap), hi = log(1e3 * cap);
        for (int it = 0; it < 60; it++) {
            double mid = 0.5 * (lo + hi);
            if (recorded_mean(exp(mid), s, cap, p->batch) < (double)p->out)
                lo = mid;
            else
                hi = mid;
        }
        double med = exp(0.5 * (lo + hi));
        p->longest = (int64_t)llround(mp_infer_expected_longest(med, s, cap, p->batch));
        if (p->longest < p->out)
            p->longest = p->out;
        char buf[220];
        snprintf(buf, sizeof buf, "longest=%lld (static batch: the expected longest of %lld responses, lognormal "
                 "shape %.3g cut at %.0f, mean %.0f before the benchmark's count)", (long long)p->longest,
                 (long long)p->batch, s, cap, mp_infer_expected_longest(med, s, cap, 1));
        mp_val_infer_note(r, buf);
    }
}

/* Predict the row's batch: stated, or what the engine's KV pool holds (offline). */
static int row_predict(const mp_model *m, const mp_cluster *cl, irow *r, mp_infer_plan *p,
                       mp_infer_result *res)
{
    double x;
    mp_diag d = {0};
    int stated = num(r->cell[MP_VIC_BATCH], &x);
    if (stated && x > (1 << 20))
        return snprintf(r->why, sizeof r->why, "batch %.0f: expected at most 2^20", x), 1;
    p->batch = stated ? (int64_t)x : 1;
    if (stated)
        static_batch(r, p);
    if (mp_infer_estimate(m, cl, p, res, &d) != MP_OK)
        return snprintf(r->why, sizeof r->why, "plan cannot be formed: %.200s", d.text), 1;
    if (!stated) {
        int64_t cap = (int64_t)res->engine.max_batch;
        if (p->engine == MP_ENGINE_TRTLLM && strstr(r->cell[MP_VIC_NOTES], "trtllm-bench") && p->chunk <= 0) {
            /* trtllm-bench picks its own max batch size and max num tokens from the requests its KV
             * cache holds (src/infer/bench_tuning.c): they replace the engine's defaults */
            int64_t bs = 0, tok = 0;
            mp_infer_trtllm_bench_settings((double)res->max_concurrency, (double)p->in, (double)p->out,
                                           p->pp, &bs, &tok);
            cap = bs * p->pp;
            p->chunk = tok;
            char buf[120];
            snprintf(buf, sizeof buf, "trtllm-bench settings: max_batch_size=%lld, max_num_tokens=%lld",
                     (long long)bs, (long long)tok);
            mp_val_infer_note(r, buf);
            memset(&d, 0, sizeof d);
            if (mp_infer_estimate(m, cl, p, res, &d) != MP_OK) /* the KV pool at that token budget */
                return snprintf(r->why, sizeof r->why, "plan cannot be formed: %.200s", d.text), 1;
        }
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

/* KV tokens the engine's pool holds on one GPU: whole blocks (vLLM's "# GPU blocks" x block
 * size; the README's kv_cache_tokens). */
static double kv_tokens(const mp_infer_result *res)
{
    const double blk = res->engine.block_tokens, per = res->kv_bytes_per_token_gpu * blk;
    return per > 0 ? floor(res->kv_pool_bytes / per) * blk : 0.0;
}

static int metric_value(const irow *r, const char *metric, const mp_infer_result *res, double *out)
{
    const double out_tok = (double)res->plan.out;
    if (!strcmp(metric, "kv_cache_tokens")) {
        *out = kv_tokens(res);
        return 1;
    }
    if (!strcmp(metric, "max_concurrency")) { /* vLLM: KV tokens / max_model_len */
        double len = notes_value(r, "max_model_len");
        *out = len >= 1 ? kv_tokens(res) / len : 0.0;
        return len >= 1;
    }
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
    if (r->cell[MP_VIC_ID][0])
        mp_strlcpy(id, r->cell[MP_VIC_ID], sizeof id);
    else
        snprintf(id, sizeof id, "row%zu", rec + 2);
    const char *group = r->cell[MP_VIC_GROUP][0] ? r->cell[MP_VIC_GROUP] : "(none)";
    const char *sc = r->cell[MP_VIC_SCENARIO], *metric = r->cell[MP_VIC_METRIC];
    double measured;
    char *e;
    measured = r->cell[MP_VIC_VALUE][0] ? strtod(r->cell[MP_VIC_VALUE], &e) : 0.0;
    if (!r->cell[MP_VIC_VALUE][0] || *e || !isfinite(measured) || !(measured > 0) || measured > 1e18) {
        snprintf(r->why, sizeof r->why, "value \"%.40s\": expected a positive number", r->cell[MP_VIC_VALUE]);
    } else if (!strcmp(sc, "server") || !strcmp(sc, "interactive")) {
        double pred;
        if (mp_val_infer_serving_row(cat, r, &pred))
            mp_val_push_row(out, id, group, metric, measured, pred, r->assumed, "");
    } else {
        const mp_model *m;
        mp_cluster cl;
        mp_infer_plan p;
        double pred;
        if (!mp_val_infer_setup(cat, r, &m, &cl, &p) && !row_predict(m, &cl, r, &p, res)) {
            if (!metric_value(r, metric, res, &pred))
                snprintf(r->why, sizeof r->why, "metric %.40s is not predicted by a fixed-batch estimate%s",
                         metric, !strcmp(metric, "max_concurrency") ? " without the row's max_model_len"
                                 : strstr(metric, "_p99") || strstr(metric, "_p50") ? " (percentiles need arrivals: issue 21)" : "");
            else
                mp_val_push_row(out, id, group, metric, measured, pred, r->assumed, "");
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
    int overflow = 0, idx[MP_VIC_COUNT];
    int nh = mp_val_csv_next(&p, end, fields, &overflow);
    for (int c = 0; c < MP_VIC_COUNT; c++) {
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
        for (int c = 0; c < MP_VIC_COUNT; c++)
            r.cell[c] = idx[c] >= 0 && idx[c] < n ? fields[idx[c]] : "";
        one_row(cat, &r, rec, res, out);
    }
    free(fields);
    free(res);
    return MP_OK;
}
