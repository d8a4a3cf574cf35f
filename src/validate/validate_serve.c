/* src/validate/validate_serve.c — the predictor of the inference schema's `server` and
 * `interactive` rows (../shared/validation/inference/README.md), hooked from validate_infer.c:
 * the row's plan and cluster as validate_infer.c forms them (its documented defaults), simulated
 * with the serving simulator (mp_serve_run) at the row's request rate; where a row states only
 * its latency SLO, at the highest rate whose p99 TTFT and p99 TPOT meet it (MLPerf Inference's
 * Server scenario: the submitter reports the highest target QPS that passes its latency
 * constraints; mp_serve_max_rate). What the simulator assumes:
 *   - lengths fixed at the row's input and output lengths (the schema gives their means), except
 *     for a dataset with a per-sample length sample (mlperf_lengths.c: MLPerf's OpenOrca and
 *     Mixtral sets), whose pairs are drawn (MP_LEN_TABLE): prompts as sampled when the row does
 *     not state its input mean (else scaled to it), outputs scaled to the row's output mean (the
 *     sample's outputs are reference answers' lengths, not the served model's; the scaling keeps
 *     their spread);
 *   - as many requests as MLPerf's own Server run issues at the rate: rate x min_duration (600 s;
 *     at least SERVE_REQUESTS_MIN, at most SERVE_REQUESTS_MAX), Poisson arrivals, seed 1, the
 *     first 10% (60 s) left out. A run must be long against a request's life for the decode
 *     batch to reach its fixed point (concurrency = token rate x TPOT, Little's law): at 90-97%
 *     of capacity a request lives 30-40 s (291 tokens at 0.1-0.15 s), so the 3000 requests
 *     simulated before (30 s of arrivals at 101/s) ended while the batch was still ramping up
 *     and gave TPOT and TTFT a third to a half of the steady figures;
 *   - the engine's own batch cap and chunk (data/engines.json) unless the row states a batch
 *     (then the cap).
 *   - throughput as MLPerf's loadgen reports it for a VALID Server run: completed samples over the
 *     run from the first issue to the last completion, with at least min_duration = 600 s of
 *     issues (mlcommons/inference mlperf.conf: *.Server.min_duration = 600000; ttft_latency 2000,
 *     tpot_latency 200 for llama2-70b, at the 99th percentile). A run is VALID only when the
 *     system keeps up with the scheduled rate within its latency bounds, so when the simulated p99
 *     TTFT and TPOT meet the row's SLO the predicted rate is the scheduled one over 600 s plus the
 *     simulated drain (last arrival to last completion; SERVE_REQUESTS requests span far less
 *     than 600 s, so their own completions-over-span would weigh the drain 10-20x too much);
 *     otherwise the simulated completions over its span (saturated).
 * Rows of one configuration share one simulation (a per-thread cache of the last one). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshplan/serve.h"
#include "validate/validate_internal.h"

#define SERVE_REQUESTS_MIN 3000
#define SERVE_REQUESTS_MAX 250000
#define MLPERF_SERVER_MIN_S 600.0 /* mlperf.conf *.Server.min_duration = 600000 ms */

/* What one MLPerf Inference v4.1 Server submission ran, where the row's cells do not say it:
 * matched on the row's model and a part of its `source` (the submission's results folder). Each
 * field 0 = not found in the published files: the default above (and the engine's) stays.
 *   min_duration_s: the run's min_duration (its mlperf_log_summary.txt, "Test Parameters Used");
 *     it weighs the drain in loadgen's completed rate (loadgen_scale). The simulated run stays
 *     rate x 600 s: the decode batch is at its fixed point long before (see the header;
 *     measured: simulating rate x 2400 s moves the H200 and Mixtral latency rows by < 1 point,
 *     at 2.4x the CPU time of the whole validate);
 *   rate_per_s: loadgen's "Scheduled samples per second" (the Poisson schedule it issued) where
 *     the row's rate is another figure (target_qps, or the completed samples per second);
 *   max_seqs, chunk_tokens: the engine's sequence cap and token budget per step (the chunk is
 *     also its profile run's, as infer's plan key chunk);
 *   kv_frac: the memory share the engine takes (vLLM gpu_memory_utilization);
 *   kv_fp8, prefill_first: the KV cache's format and vLLM V0's scheduler (serve.h). */
static const struct {
    const char *model, *source;
    double min_duration_s, rate_per_s;
    int64_t max_seqs, chunk_tokens;
    double kv_frac;
    int kv_fp8, prefill_first;
} SUBMISSIONS[] = {
    /* AMD 8x MI300X (vLLM, mlcommons/inference_results_v4.1 closed/AMD): min_duration 600000 ms
     * and "Scheduled samples per second : 73.66" (results/8xMI300X_2xEPYC-9374F/llama2-70b-99/
     * Server/performance/run_1/mlperf_log_summary.txt; target_qps 73.5, the row's 71.74 is the
     * completed rate); "--kv-cache-dtype fp8 -tp 1 -dp 8 --quantization fp8" (code/llama2-70b-99.9/
     * test_VllmFp8/test_VllmFp8_SyncServer_*.sh, which pass no engine flags beyond these); the
     * engine is vLLM's V0 LLMEngine (2024, before V1), whose default scheduler runs prefill-only
     * steps (prefill_first). The engine settings are the defaults of the harness those scripts
     * call, mainVllmFp8_SyncServer.py get_args(): --max-num-seqs 1024, --max-num-batched-tokens
     * 49152, --gpu-memory-utilization 0.97 (read through the code index, which does not name its
     * repository: [verify] against closed/AMD/code/llama2-70b-99.9/VllmFp8/ of the v4.1 tree).
     * Left out: its harness-side batcher (--enable-batcher: queries held up to
     * --batcher-threshold 0.3 s or --gpu-batch-size 96 before they reach vLLM), a part of the
     * TTFT the simulator does not see */
    {"llama2-70b", "closed/AMD/results/8xMI300X_2xEPYC-9374F/llama2-70b-99/Server", 600.0, 73.66, 1024, 49152, 0.97, 1, 1},
    /* NVIDIA 8x H200 (TensorRT-LLM, closed/NVIDIA): min_duration 2400000 ms and "Scheduled
     * samples per second : 101.25" (results/H200-SXM-141GBx8_TRT/llama2-70b-99/Server/performance/
     * run_1/mlperf_log_summary.txt; target_qps 101); gpu_batch_size 896, tensor_parallelism 1
     * (configs/llama2-70b/Server/__init__.py: H200_SXM_141GBx1, inherited by H200_SXM_141GBx8);
     * its max_num_tokens is in configs/llama2-70b/__init__.py, not among the files we could read:
     * the engine's 8192 stays */
    {"llama2-70b", "closed/NVIDIA/results/H200-SXM-141GBx8_TRT/", 2400.0, 101.25, 896, 0, 0, 0, 0},
    /* NVIDIA DGX-H100 (the summary row, no rate: found from the SLO): min_duration = 2400000
     * (ServerGPUBaseConfig), gpu_batch_size 1024 at tensor_parallelism 2 (H100_SXM_80GB_TP2x1,
     * inherited by H100_SXM_80GB_TP2x4), configs/llama2-70b/Server/__init__.py */
    {"llama2-70b", "closed/NVIDIA/results/DGX-H100_H100-SXM-80GBx8_TRT/", 2400.0, 0, 1024, 0, 0, 0, 0},
    /* NVIDIA DGX-H100 Mixtral: min_duration 2400000 ms and "Scheduled samples per second :
     * 348.37" (results/DGX-H100_H100-SXM-80GBx8_TRT/mixtral-8x7b/Server/performance/run_1/
     * mlperf_log_summary.txt; target_qps 348); max_num_tokens = 16384 (configs/mixtral-8x7b/
     * __init__.py GPUBaseConfig); gpu_batch_size 896 at tensor_parallelism 1 (a configs/
     * mixtral-8x7b/Server/__init__.py whose H100_SXM_80GBx8 has server_target_qps = 43.5 x 8 =
     * 348, this run's target: read through the code index, which does not name its repository,
     * [verify] against the v4.1 tree); tp 1 is also the smallest fitting */
    {"mixtral-8x7b", "closed/NVIDIA/results/DGX-H100_H100-SXM-80GBx8_TRT/mixtral-8x7b/Server", 2400.0, 348.37, 896, 16384, 0, 0, 0},
};

/* The row's submission in SUBMISSIONS, or -1. */
static int submission_of(const mp_val_infer_row *row)
{
    for (size_t i = 0; i < sizeof SUBMISSIONS / sizeof SUBMISSIONS[0]; i++)
        if (!strcmp(row->cell[MP_VIC_MODEL], SUBMISSIONS[i].model) && strstr(row->cell[MP_VIC_SOURCE], SUBMISSIONS[i].source))
            return (int)i;
    return -1;
}

/* "TTFT p99 2 s, TPOT p99 200 ms" (also "ttft_p99=2s,tpot_p99=200ms"): the two bounds, s. */
static int slo_of(const char *s, double *ttft, double *tpot)
{
    *ttft = *tpot = 0;
    for (const char *p = s; *p; p++) {
        int t = !strncmp(p, "TTFT", 4) || !strncmp(p, "ttft", 4);
        int o = !strncmp(p, "TPOT", 4) || !strncmp(p, "tpot", 4);
        if (!t && !o)
            continue;
        const char *q = p + 4;
        while (*q && (*q == ' ' || *q == '_' || *q == '=' || *q == 'p' || *q == '9'))
            q++;
        char *e;
        double v = strtod(q, &e);
        if (e == q || !(v > 0))
            continue;
        while (*e == ' ')
            e++;
        double k = !strncmp(e, "ms", 2) ? 1e-3 : !strncmp(e, "us", 2) ? 1e-6 : 1.0;
        *(t ? ttft : tpot) = v * k;
        p = e;
        if (!*p)
            break;
    }
    return *ttft > 0 || *tpot > 0;
}

typedef struct {
    int set;
    char key[512];
    double rate;
    mp_serve_dist ttft, tpot, e2e;
    double out_tps, rps, in_tps;
    int table;
    int64_t requests;
} serve_memo;
static _Thread_local serve_memo memo;

/* The row's dataset's length sample as the simulator's table (MP_LEN_TABLE), scaled to the row's
 * means: outputs always (to p->out), prompts when the row states its input mean; 1 when used. */
static _Thread_local mp_val_lengths lt;
static _Thread_local int64_t lt_in[MP_VAL_MAX_LENGTHS], lt_out[MP_VAL_MAX_LENGTHS];

static int length_table(const mp_val_infer_row *row, const mp_infer_plan *p, mp_serve_opts *o)
{
    const char *dist = row->cell[MP_VIC_DIST];
    if (strncmp(dist, "dataset:", 8) || !mp_val_dataset_lengths(dist + 8, &lt) || lt.n == 0)
        return 0;
    int in_stated = row->cell[MP_VIC_IN][0] != '\0';
    double ki = in_stated ? (double)p->in / lt.in_mean : 1.0, ko = (double)p->out / lt.out_mean;
    for (size_t i = 0; i < lt.n; i++) {
        lt_in[i] = (int64_t)fmax(1.0, llround(ki * (double)lt.in[i]));
        lt_out[i] = (int64_t)fmax(1.0, llround(ko * (double)lt.out[i]));
    }
    o->lengths = MP_LEN_TABLE;
    o->table_in = lt_in;
    o->table_out = lt_out;
    o->ntable = lt.n;
    return 1;
}

/* Loadgen's Server throughput over a min_s run against the simulated one (see the header):
 * the factor to apply to the simulated rates; 1 when the run would not be VALID. */
static double loadgen_scale(const mp_serve_result *r, double ttft, double tpot, const char *slo_cell, double min_s)
{
    if (!(ttft > 0 || tpot > 0) && !(slo_cell && slo_of(slo_cell, &ttft, &tpot)))
        return 1.0;
    if ((ttft > 0 && r->ttft_s.p99 > ttft) || (tpot > 0 && r->tpot_s.p99 > tpot))
        return 1.0;
    if (!(r->arrivals_span_s > 0) || !(r->requests_per_s > 0))
        return 1.0;
    double drain = fmax(0.0, r->span_s - r->arrivals_span_s);
    double scheduled = (double)r->measured / r->arrivals_span_s;
    return scheduled * min_s / (min_s + drain) / r->requests_per_s;
}

/* The requests of a simulated Server run at rate (see the header). */
static int64_t run_requests(double rate)
{
    double n = ceil(rate * MLPERF_SERVER_MIN_S);
    return n < SERVE_REQUESTS_MIN ? SERVE_REQUESTS_MIN : n > SERVE_REQUESTS_MAX ? SERVE_REQUESTS_MAX : (int64_t)n;
}

/* Simulate at rate; 0, or 1 with why. */
static int sim(const mp_model *m, const mp_cluster *c, mp_serve_opts *o, double rate, mp_serve_result *r,
               char *why, size_t nwhy)
{
    mp_diag d = {0};
    o->rate_per_s = rate;
    if (mp_serve_run(m, c, o, r, &d) != MP_OK)
        return snprintf(why, nwhy, "serve: %.200s", d.text), 1;
    if (!r->feasible)
        return snprintf(why, nwhy, "serve: %.200s", r->reason), 1;
    return 0;
}

int mp_val_serve_predict(const mp_catalog *cat, mp_val_infer_row *row, double *pred)
{
    const mp_model *m;
    mp_cluster cl;
    mp_infer_plan pl;
    *pred = 0;
    if (mp_val_infer_setup(cat, row, &m, &cl, &pl))
        return 0;
    const mp_cluster *c = &cl;
    const mp_infer_plan *p = &pl;
    const char *rate_cell = row->cell[MP_VIC_RATE], *slo_cell = row->cell[MP_VIC_SLO];
    const char *metric = row->cell[MP_VIC_METRIC];
    char *why = row->why;
    size_t nwhy = sizeof row->why;
    char *e;
    double bx = row->cell[MP_VIC_BATCH][0] ? strtod(row->cell[MP_VIC_BATCH], &e) : 0;
    int batch_stated = row->cell[MP_VIC_BATCH][0] && !*e && bx >= 1 && bx <= (1 << 20);
    pl.batch = batch_stated ? (int64_t)bx : 1;
    double rate = 0, ttft = 0, tpot = 0;
    if (rate_cell && *rate_cell) {
        rate = strtod(rate_cell, &e);
        if (*e || !(rate > 0) || rate > 1e7)
            return snprintf(why, nwhy, "request_rate_per_s \"%.20s\": expected a positive rate", rate_cell), 0;
    }
    if (!(rate > 0) && !(slo_cell && slo_of(slo_cell, &ttft, &tpot)))
        return snprintf(why, nwhy, "server row with neither request_rate_per_s nor a latency_slo to find it from"), 0;
    int sub = submission_of(row);
    double min_s = sub >= 0 && SUBMISSIONS[sub].min_duration_s > 0 ? SUBMISSIONS[sub].min_duration_s : MLPERF_SERVER_MIN_S;
    if (sub >= 0 && rate > 0 && SUBMISSIONS[sub].rate_per_s > 0)
        rate = SUBMISSIONS[sub].rate_per_s;
    if (sub >= 0 && SUBMISSIONS[sub].kv_fp8 && !row->cell[MP_VIC_KVDT][0])
        pl.kv = MP_KVQ_FP8;
    if (sub >= 0 && SUBMISSIONS[sub].kv_frac > 0)
        pl.kv_frac = SUBMISSIONS[sub].kv_frac;
    if (sub >= 0 && SUBMISSIONS[sub].chunk_tokens > 0)
        pl.chunk = SUBMISSIONS[sub].chunk_tokens;
    char key[512];
    char plan[256];
    mp_infer_plan_format(p, plan, sizeof plan);
    snprintf(key, sizeof key, "%.60s|%.48s|%lld|%.250s|%g|%.100s|%d|%d", m->key, c->gpu.key, (long long)c->num_gpus, plan, rate,
             slo_cell ? slo_cell : "", batch_stated, sub);
    if (!memo.set || strcmp(memo.key, key)) {
        mp_serve_opts o;
        mp_serve_opts_init(&o);
        o.plan = *p;
        o.in = p->in;
        o.out = p->out;
        o.requests = run_requests(rate);
        int table = length_table(row, p, &o);
        if (sub >= 0) {
            o.max_seqs = SUBMISSIONS[sub].max_seqs;
            o.chunk_tokens = SUBMISSIONS[sub].chunk_tokens;
            o.prefill_first = SUBMISSIONS[sub].prefill_first;
        }
        if (batch_stated)
            o.max_seqs = p->batch;
        mp_serve_result *r = malloc(sizeof *r);
        if (!r)
            return snprintf(why, nwhy, "out of memory"), 0;
        int bad;
        if (rate > 0) {
            bad = sim(m, c, &o, rate, r, why, nwhy);
        } else {
            /* the bracket's start: a tenth of what the engine's batch would sustain offline */
            mp_infer_result ir;
            mp_diag d = {0};
            mp_infer_plan q = *p;
            q.batch = 64;
            double start = mp_infer_estimate(m, c, &q, &ir, &d) == MP_OK && ir.requests_per_s > 0 ? 0.1 * ir.requests_per_s : 1.0;
            o.requests = run_requests(10.0 * start); /* about the rate the search ends near */
            mp_diag d2 = {0};
            o.slo_ttft_s = ttft;
            o.slo_tpot_s = tpot;
            bad = mp_serve_max_rate(m, c, &o, start, &rate, r, &d2) != MP_OK;
            if (bad)
                snprintf(why, nwhy, "serve: %.200s", d2.text);
        }
        if (bad) {
            mp_serve_result_free(r);
            free(r);
            memo.set = 0;
            return 0;
        }
        memo.set = 1;
        snprintf(memo.key, sizeof memo.key, "%s", key);
        memo.rate = rate;
        memo.table = table;
        memo.requests = o.requests;
        memo.ttft = r->ttft_s;
        memo.tpot = r->tpot_s;
        memo.e2e = r->e2e_s;
        double k = loadgen_scale(r, ttft > 0 || tpot > 0 ? ttft : 0, tpot, slo_cell, min_s);
        memo.out_tps = k * r->output_tokens_per_s;
        memo.rps = k * r->requests_per_s;
        memo.in_tps = k * r->input_tokens_per_s;
        mp_serve_result_free(r);
        free(r);
    }
    struct { const char *name; double v; } map[] = {
        {"output_tokens_per_s", memo.out_tps},
        {"output_tokens_per_s_per_gpu", memo.out_tps / (double)c->num_gpus},
        {"total_tokens_per_s", memo.out_tps + memo.in_tps},
        {"requests_per_s", memo.rps},
        {"ttft_mean_s", memo.ttft.mean}, {"ttft_p50_s", memo.ttft.p50}, {"ttft_p90_s", memo.ttft.p90},
        {"ttft_p99_s", memo.ttft.p99},
        {"tpot_mean_s", memo.tpot.mean}, {"tpot_p50_s", memo.tpot.p50}, {"tpot_p90_s", memo.tpot.p90},
        {"tpot_p99_s", memo.tpot.p99}, {"itl_mean_s", memo.tpot.mean},
        {"e2e_latency_mean_s", memo.e2e.mean}, {"e2e_latency_p99_s", memo.e2e.p99},
    };
    size_t i;
    for (i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(metric, map[i].name))
            break;
    if (i == sizeof map / sizeof map[0])
        return snprintf(why, nwhy, "metric %.40s is not predicted for server rows", metric), 0;
    *pred = map[i].v;
    char note[160];
    snprintf(note, sizeof note, "serve: Poisson, %lld requests, lengths %s, rate %.4g/s%s", (long long)memo.requests,
             memo.table ? "from the dataset's sample, out scaled" : "fixed at in/out",
             memo.rate, rate_cell && *rate_cell ? "" : " (highest meeting the SLO)");
    mp_val_infer_note(row, note);
    if (sub >= 0) { /* what the submission table set (its sources beside it) */
        int l = snprintf(note, sizeof note, "submission: %.0f s run", min_s);
        if (SUBMISSIONS[sub].max_seqs)
            l += snprintf(note + l, sizeof note - (size_t)l, ", max_seqs %lld", (long long)SUBMISSIONS[sub].max_seqs);
        if (SUBMISSIONS[sub].chunk_tokens)
            l += snprintf(note + l, sizeof note - (size_t)l, ", chunk %lld", (long long)SUBMISSIONS[sub].chunk_tokens);
        snprintf(note + l, sizeof note - (size_t)l, "%s%s", SUBMISSIONS[sub].kv_fp8 ? ", kv fp8" : "",
                 SUBMISSIONS[sub].prefill_first ? ", prefill_first" : "");
        mp_val_infer_note(row, note);
    }
    return 1;
}
