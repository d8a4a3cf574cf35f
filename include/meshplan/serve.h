/* meshplan/serve.h — serving at load: a request-level discrete-event simulation of one or more
 * model replicas (or separate prefill and decode pools) under a stream of requests.
 *
 * Requests arrive (Poisson, gamma-bursty, or a trace of timestamps and lengths) with prompt and
 * output lengths (fixed, sampled from a CSV, or the built-in ShareGPT-like profile); a router
 * sends each to the replica with the fewest outstanding requests; each replica runs a scheduler
 * like vLLM's (continuous batching, chunked prefill under a token budget, paged KV blocks with
 * preemption by recompute or by swap to host memory), and every engine step is priced by the
 * inference model's per-step costs (workload.h mp_workload_infer: the same kernels and
 * collectives as `meshplan infer`) for the step's mix of prefill chunks and decode tokens.
 * Disaggregation runs prefill and decode on separate pools with a KV transfer per request over
 * the link between them; expert-parallel MoE serving runs attention data-parallel with the routed
 * experts spread over the replica's GPUs and an all-to-all per MoE layer.
 *
 * Deterministic: the same options and seed give the same events, byte for byte (time in
 * integer nanoseconds, events ordered by time then insertion, as src/sim does). Equations,
 * sources and defaults: docs/serve.md. The library never prints; the CLI is `meshplan serve`,
 * `meshplan serve-search`.
 */
#ifndef MESHPLAN_SERVE_H
#define MESHPLAN_SERVE_H

#include <stddef.h>
#include <stdint.h>

#include "meshplan/infer.h"
#include "meshplan/model.h"
#include "meshplan/status.h"
#include "meshplan/topo.h"

/** Arrival processes. */
typedef enum {
    MP_ARRIVE_POISSON, /* exponential gaps of mean 1/rate */
    MP_ARRIVE_GAMMA,   /* gamma gaps of mean 1/rate and coefficient of variation burst_cv */
    MP_ARRIVE_TRACE,   /* the timestamps of opts.trace */
    MP_ARRIVE_BATCH,   /* every request at t = 0 (offline: the closed-batch limit) */
    MP_ARRIVE_COUNT
} mp_serve_arrivals;

/** Length profiles (when the arrivals are not a trace, which carries its own lengths). */
typedef enum {
    MP_LEN_FIXED,    /* every request in, out */
    MP_LEN_TABLE,    /* uniform draws from the pairs in table_in / table_out (a CSV) */
    MP_LEN_SHAREGPT, /* the built-in ShareGPT-like profile (docs/serve.md, its source) */
    MP_LEN_COUNT
} mp_serve_lengths;

/** Preemption when the KV blocks run out (vLLM's two modes). */
typedef enum { MP_PREEMPT_RECOMPUTE, MP_PREEMPT_SWAP, MP_PREEMPT_COUNT } mp_serve_preempt;

/** One request of a trace: arrival time (s, >= 0, non-decreasing), prompt and output tokens. */
typedef struct {
    double arrival_s;
    int64_t in, out;
} mp_serve_request;

/** A per-step extension point (issue 22, multi-LoRA): called once per engine step with the
 *  requests of the step (their indices into the simulated request list, and the tokens each
 *  runs); returns extra seconds the step takes (>= 0). ctx is opts.hook_ctx. NULL: none. */
typedef double (*mp_serve_step_hook)(void *ctx, const int64_t *reqs, const int64_t *tokens,
                                     size_t n);
/** The same with the replica the step runs on (0 .. replicas - 1; a disaggregated run's decode
 *  pool follows the prefill pool), for per-replica state such as an adapter cache (lora.h). */
typedef double (*mp_serve_replica_hook)(void *ctx, int replica, const int64_t *reqs,
                                        const int64_t *tokens, size_t n);

/** Every option. mp_serve_opts_init sets the default given beside each. */
typedef struct {
    /* the replica: tp, pp, ep, dp (replicas; 0 = gpus / (tp pp)), weights, kv, engine, kv_frac,
     * cuda_graphs as `meshplan infer` (plan.batch, in, out are not used: see max_seqs, lengths) */
    mp_infer_plan plan;
    int64_t max_seqs;           /* sequences in a step per replica (vLLM max_num_seqs); 0 = the
                                   engine's max_batch */
    int64_t chunk_tokens;       /* token budget of a step (max_num_batched_tokens); 0 = the
                                   engine's; >= 1 */
    int preempt;                /* mp_serve_preempt; default recompute (vLLM's default) */
    int prefill_first;          /* 1 = vLLM V0's default scheduler (vllm/core/scheduler.py
                                   _schedule_default): whole waiting prompts first, in a
                                   prefill-only step, decoding only when no prompt was
                                   scheduled; 0 (default) = V1's mixed chunked steps */
    double swap_Bps;            /* host link per GPU for swap, bytes/s; 0 = PCIe x16 of the GPU's
                                   generation (docs/serve.md) */
    /* arrivals and lengths */
    int arrivals;               /* mp_serve_arrivals; default Poisson */
    double rate_per_s;          /* mean request rate, > 0 (not used by trace and batch) */
    double burst_cv;            /* gamma: coefficient of variation of the gaps, > 0; default 1 */
    const mp_serve_request *trace; /* MP_ARRIVE_TRACE: ntrace requests (caller owns) */
    size_t ntrace;
    int lengths;                /* mp_serve_lengths; default fixed */
    int64_t in, out;            /* MP_LEN_FIXED: tokens, >= 1; default 1024, 256 */
    const int64_t *table_in, *table_out; /* MP_LEN_TABLE: ntable pairs (caller owns) */
    size_t ntable;
    int64_t requests;           /* requests simulated (trace: its count); default 2000 */
    double warmup_frac;         /* of the requests, the first (by arrival) left out of every
                                   figure, [0, 0.9]; default 0.1 */
    uint64_t seed;              /* default 1 */
    /* the SLO of goodput (a request is good when its TTFT and TPOT are within); 0 = no bound */
    double slo_ttft_s, slo_tpot_s;
    /* disaggregation: 1 = prefill and decode pools (prefill_tp x prefill_dp replicas, decode_tp
     * x decode_dp; pp 1); GPUs 0 .. of the cluster go to prefill, the next to decode */
    int disaggregate;
    int prefill_tp, prefill_dp, decode_tp, decode_dp;
    /* expert-parallel serving: 1 = attention data-parallel over the replica's ep GPUs (tp 1),
     * routed experts spread over them, one all-to-all dispatch and combine per MoE layer */
    int attn_dp;
    double moe_imbalance;       /* busiest GPU's routed tokens / mean, >= 1; 0 = the workload
                                   default (mp_workload_opts.moe_imbalance) */
    /* cost */
    double price_gpu_hour_usd;  /* >= 0; default 0 = the cost module's default (energy.h) */
    /* the request timeline for --trace (kept per request; off by default) */
    int keep_timeline;
    mp_serve_step_hook hook;
    void *hook_ctx;
    mp_serve_replica_hook replica_hook; /* also called per step when set, with hook_ctx */
} mp_serve_opts;

void mp_serve_opts_init(mp_serve_opts *o);

/** Mean and percentiles of one figure over the measured requests (linear interpolation between
 *  order statistics, as numpy.percentile's default). */
typedef struct {
    double mean, p50, p90, p99, max;
} mp_serve_dist;

/** One replica's (or pool's) figures. */
typedef struct {
    int pool;                   /* 0 colocated, 1 prefill, 2 decode */
    int64_t requests;           /* measured requests it served (decode pool: decoded) */
    double busy_frac;           /* share of the measured span it was stepping */
    double kv_use_mean, kv_use_max; /* of its KV blocks in use, time-weighted */
    int64_t preemptions;
    int64_t steps;
    double ttft_p99_s;
} mp_serve_replica;

#define MP_SERVE_MAX_REPLICAS 4096
#define MP_SERVE_MAX_ASSUMED 16

/** One request's timeline (keep_timeline). */
typedef struct {
    double arrival_s, start_s, first_token_s, done_s; /* start: first scheduled */
    double transfer_start_s, transfer_end_s;          /* disaggregation: KV transfer (else 0) */
    int64_t in, out;
    int replica, decode_replica;
    int preempted;
} mp_serve_timeline;

/** A replica's state at the start of a step (keep_timeline; the trace's counters over time). */
typedef struct {
    double t_s;
    int replica;
    double kv_use;              /* share of its KV blocks in use */
    int64_t running, waiting;   /* sequences in the step's running set; queued requests */
} mp_serve_sample;

#define MP_SERVE_MAX_SAMPLES 200000 /* steps sampled per run (the first ones; enough for a trace) */

/** What a simulation gives. */
typedef struct {
    mp_serve_opts opts;         /* as run (defaults resolved; trace and table pointers cleared) */
    mp_engine_profile engine;
    int feasible;               /* 0: the weights leave no KV pool, or a request's prompt +
                                   output can never fit it (reason) */
    char reason[256];
    int64_t requests, measured; /* simulated, and after the warm-up */
    double span_s;              /* measured window: first measured arrival to last completion */
    double arrivals_span_s;     /* first measured arrival to the last arrival */
    mp_serve_dist ttft_s, tpot_s, e2e_s, queue_s, itl_max_s; /* queue: arrival to first scheduled */
    double output_tokens_per_s, input_tokens_per_s, requests_per_s;
    double goodput_requests_per_s; /* measured requests within the SLO / span */
    double slo_attained_frac;
    double kv_use_mean, kv_use_max; /* mean over replicas of the time-weighted use; max of all */
    int64_t preemptions, swaps;
    int64_t gpus;               /* GPUs of every replica */
    double power_w;             /* mean per GPU over the span */
    double energy_j_per_mtoken; /* output tokens; GPUs only */
    double usd_per_mtoken;      /* rented GPU-hours + energy (mp_cost_compute) per output Mtoken */
    /* closed-form references of `infer` at the run's mean lengths, batch 1: for the limits */
    double infer_ttft_s, infer_tpot_s;
    int64_t kv_blocks;          /* per replica (colocated / decode pool) */
    int64_t max_concurrency;    /* sequences of the mean length the pool holds */
    /* disaggregation */
    struct {
        double bytes_per_request;  /* mean KV bytes moved per request */
        char link[48];             /* link key of the tier the transfer crosses */
        char tier[48];
        double s_per_request;      /* mean transfer time (alone on the link) */
        double wait_s_mean;        /* mean incast queueing at the decode side */
        double exposed_s_mean;     /* mean of what adds to TTFT after layer-wise overlap */
        int hidden;                /* exposed <= 10% of the transfer on average */
        double fabric_load_frac;   /* mean ingress use of the decode pool's links */
        double colocated_goodput;  /* the same GPUs colocated (tp = decode_tp): goodput */
        double colocated_ttft_p99_s, colocated_tpot_p99_s; /* its latencies (the interference) */
        int pays;                  /* goodput more than 1% above colocated, or within 1% with both
                                      p99 TTFT and p99 TPOT lower */
        char verdict[96];          /* "pays", "does not pay", or the trade (lower TPOT, higher TTFT) */
    } kv_transfer;
    /* expert parallel */
    double a2a_s_per_step;      /* attn_dp: dispatch + combine of one decode step (at batch) */
    int nreplicas;
    mp_serve_replica replica[MP_SERVE_MAX_REPLICAS];
    int nassumed;
    char assumed[MP_SERVE_MAX_ASSUMED][160];
    mp_serve_timeline *timeline; /* keep_timeline: requests entries, malloc'd (mp_serve_result_free) */
    mp_serve_sample *samples;   /* keep_timeline: one per step, at most MP_SERVE_MAX_SAMPLES */
    size_t nsamples;
} mp_serve_result;

/** Simulate model m on cluster c under o. out is large (~1 MiB: heap-allocate it). MP_OK (a
 *  plan whose KV pool holds nothing is an answer: feasible 0); MP_ERR_INPUT for a plan that cannot
 *  be formed or an option out of range (every reason in diag, naming the field); MP_ERR_NOMEM;
 *  MP_ERR_RANGE when the simulation exceeds its event cap (100 million steps). */
mp_status mp_serve_run(const mp_model *m, const mp_cluster *c, const mp_serve_opts *o,
                       mp_serve_result *out, mp_diag *diag);

/** Frees out->timeline (out itself is the caller's). NULL accepted. */
void mp_serve_result_free(mp_serve_result *out);

/** Parse the serve plan: infer's plan keys (meshplan infer) plus max_seqs, chunk, preempt
 *  (recompute|swap), attn_dp (0/1), imbalance and prefill_first (0/1), into o (initialised
 *  by the caller). One diag line per bad key. MP_OK or MP_ERR_INPUT. */
mp_status mp_serve_plan_parse(const char *text, mp_serve_opts *o, mp_diag *diag);

/** The serve plan as "tp=..,pp=..,ep=..,dp=..,weights=..,kv=..,engine=..,max_seqs=..,chunk=..,
 *  preempt=..[,attn_dp=1][,prefill_first=1][,imbalance=..]" (the keys mp_serve_plan_parse
 *  reads; infer's batch, in and out do not apply). Returns the length needed, as snprintf. */
int mp_serve_plan_format(const mp_serve_opts *o, char *buf, size_t cap);

/** Parse a pool spec "prefill=tp4x2,decode=tp8x1" (tp degree x replicas) into o and set
 *  o->disaggregate. MP_OK or MP_ERR_INPUT naming the part. */
mp_status mp_serve_disagg_parse(const char *text, mp_serve_opts *o, mp_diag *diag);

/** Parse a request rate "12/s", "12", "720/min". MP_OK or MP_ERR_INPUT. */
mp_status mp_serve_rate_parse(const char *text, double *rate_per_s, mp_diag *diag);

/** Parse an SLO "ttft_p99=1s,tpot_p99=40ms" (also ttft=, tpot=; s or ms) into o. */
mp_status mp_serve_slo_parse(const char *text, mp_serve_opts *o, mp_diag *diag);

/** Parse a lengths CSV (header with input_len and output_len; a trace also has arrival_s) into
 *  malloc'd arrays (*in, *out, and *arrival_s when arrival_s is not NULL: a trace). MP_OK,
 *  MP_ERR_PARSE (diag names the line and column), MP_ERR_NOMEM. The caller frees the arrays. */
mp_status mp_serve_csv_parse(const char *text, size_t len, const char *origin, int64_t **in,
                             int64_t **out, double **arrival_s, size_t *n, mp_diag *diag);

/** serve --json: the object described in docs/serve.md (ttft_s {mean,p50,p90,p99,max}, tpot_s,
 *  e2e_s, queue_s, output_tokens_per_s, requests_per_s, goodput_requests_per_s, kv_use {mean,
 *  max}, preemptions, replicas[], kv_transfer{} when disaggregated, assumed[]). Malloc'd,
 *  indented by 2, no trailing newline; NULL when out of memory. */
char *mp_report_serve_json(const mp_serve_result *r);

/** The request timeline as a Chrome/Perfetto trace (JSON object format): one track per replica,
 *  a slice per request phase (queued, prefill, transfer, decode). Needs keep_timeline. Malloc'd;
 *  NULL when out of memory or no timeline. */
char *mp_report_serve_trace(const mp_serve_result *r);

/** The highest request rate whose p99 TTFT and p99 TPOT meet o's SLO (MLPerf's Server scenario):
 *  from start_rate (> 0; 0 = 1/s) doubled until it fails (or divided by 4 until one meets),
 *  then 12 bisection steps; *rate and the run at it in *r (free with mp_serve_result_free).
 *  Arrivals Poisson (or o's gamma). MP_OK; MP_ERR_INPUT without an SLO or for o's errors;
 *  MP_ERR_RANGE when no rate meets it. */
mp_status mp_serve_max_rate(const mp_model *m, const mp_cluster *c, const mp_serve_opts *o,
                            double start_rate, double *rate, mp_serve_result *r, mp_diag *diag);

/** One point of the SLO-throughput frontier. rate_per_s 0: no rate meets that SLO. */
typedef struct {
    double slo_scale, slo_ttft_s, slo_tpot_s;
    double rate_per_s, output_tokens_per_s, ttft_p99_s, tpot_p99_s, usd_per_mtoken;
} mp_serve_frontier_point;

/** The frontier: mp_serve_max_rate at o's SLO scaled by 0.25, 0.5, 1, 2 and 4 (npts <= 5 points
 *  into pts). MP_OK, or the first error other than a point no rate meets. */
mp_status mp_serve_frontier(const mp_model *m, const mp_cluster *c, const mp_serve_opts *o,
                            mp_serve_frontier_point *pts, int npts, mp_diag *diag);

/* ---- serve-search ----------------------------------------------------------------------------- */

/** One candidate of serve-search and its outcome. */
typedef struct {
    int disaggregate, tp, dp, prefill_tp, prefill_dp, decode_tp, decode_dp;
    int64_t max_seqs, chunk_tokens;
    int feasible, meets_slo;
    double goodput_requests_per_s, ttft_p99_s, tpot_p99_s, output_tokens_per_s, usd_per_mtoken;
} mp_serve_candidate;

#define MP_SERVE_SEARCH_MAX 512

/** Candidates in the order tried and the index of the best (meets the SLO at the highest
 *  goodput; within 1% a tie, then fewer $ per Mtoken; -1 when none meets it). */
typedef struct {
    int n, best;
    mp_serve_candidate c[MP_SERVE_SEARCH_MAX];
} mp_serve_search_result;

/** Try colocated plans (every tp dividing the GPUs and heads, replicas = GPUs / tp), batch caps
 *  and chunk sizes, and disaggregated splits of the GPUs into prefill and decode pools, each
 *  simulated under base (its rate, lengths, SLO, seed; its plan's weights, kv, engine). MP_OK,
 *  MP_ERR_INPUT as mp_serve_run for the base options, MP_ERR_NOMEM. */
mp_status mp_serve_search(const mp_model *m, const mp_cluster *c, const mp_serve_opts *base,
                          mp_serve_search_result *out, mp_diag *diag);

#endif
