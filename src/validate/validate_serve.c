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

/* Loadgen's Server throughput over a 600 s run against the simulated one (see the header):
 * the factor to apply to the simulated rates; 1 when the run would not be VALID. */
static double loadgen_scale(const mp_serve_result *r, double ttft, double tpot, const char *slo_cell)
{
    if (!(ttft > 0 || tpot > 0) && !(slo_cell && slo_of(slo_cell, &ttft, &tpot)))
        return 1.0;
    if ((ttft > 0 && r->ttft_s.p99 > ttft) || (tpot > 0 && r->tpot_s.p99 > tpot))
        return 1.0;
    if (!(r->arrivals_span_s > 0) || !(r->requests_per_s > 0))
        return 1.0;
    double drain = fmax(0.0, r->span_s - r->arrivals_span_s);
    double scheduled = (double)r->measured / r->arrivals_span_s;
    return scheduled * MLPERF_SERVER_MIN_S / (MLPERF_SERVER_MIN_S + drain) / r->requests_per_s;
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
    char key[512];
    char plan[256];
    mp_infer_plan_format(p, plan, sizeof plan);
    snprintf(key, sizeof key, "%.60s|%.48s|%lld|%.250s|%g|%.100s|%d", m->key, c->gpu.key, (long long)c->num_gpus, plan, rate,
             slo_cell ? slo_cell : "", batch_stated);
    if (!memo.set || strcmp(memo.key, key)) {
        mp_serve_opts o;
        mp_serve_opts_init(&o);
        o.plan = *p;
        o.in = p->in;
        o.out = p->out;
        o.requests = run_requests(rate);
        int table = length_table(row, p, &o);
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
        double k = loadgen_scale(r, ttft > 0 || tpot > 0 ? ttft : 0, tpot, slo_cell);
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
    return 1;
}
