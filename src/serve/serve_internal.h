/* src/serve/serve_internal.h — library-internal pieces of the serving simulator (src/serve/):
 * the per-step cost model (step.c), request generation (requests.c) and the scheduler and event
 * loop (sched.c). */
#ifndef MESHPLAN_SERVE_INTERNAL_H
#define MESHPLAN_SERVE_INTERNAL_H

#include <stdint.h>

#include "meshplan/serve.h"

/* Grid of token counts at which the linear part of a step is priced (step.c): every count to
 * 128, then every 16 to 2048, every 256 to 32768; linear interpolation between, a straight line
 * beyond. */
#define SV_GRID_MAX 400

/* The cost of one engine step of one replica, from the workload's priced inference steps. A
 * step runs T tokens (decode tokens + prefill-chunk tokens), of which S sequences emit a token
 * (the LM head), decode attention over D cached tokens in all, and prefill attention over Q
 * (query, key) pairs writing W new K/V entries. Per pipeline stage:
 *   stage(T, S, D, Q, W) = lin(T) + head(S) + a_dec D + max(a_pre Q, w_pre W)
 * (lin: GEMMs, element-wise kernels, TP all-reduces, EP all-to-alls, the LM head on one row;
 * head: the LM head's further rows); a step is k stage-times of its micro-batches plus the
 * engine's overhead (step_time_s). */
typedef struct {
    int n;
    double T[SV_GRID_MAX], lin_s[SV_GRID_MAX], lin_flop[SV_GRID_MAX], lin_bytes[SV_GRID_MAX];
    double pp_s[SV_GRID_MAX];       /* one pipeline send of T tokens' activations (pp > 1) */
    int nh;
    double head_s[SV_GRID_MAX], head_flop[SV_GRID_MAX]; /* extra rows of the LM head, at S = T[i] */
    double a_dec_s, a_dec_flop, a_dec_bytes; /* per cached token read in decode */
    double a_pre_s, a_pre_flop;     /* per (query, key) pair of a prefill chunk */
    double w_pre_s, w_pre_bytes;    /* per K/V entry written by prefill */
    double window, window_frac;     /* sliding window (tokens) and the share of layers it covers */
    int pp;
    int ranks;                      /* attention-DP ranks sharing one step (1 otherwise) */
    double a2a_per_token_s;         /* attn_dp: dispatch + combine per local token (all MoE layers) */
    double a2a_fixed_s;             /* attn_dp: its latency part per step */
    double overhead_graphs_s, overhead_step_s;
    /* power (Hong & Kim 2010 linear activity model, as src/infer/infer.c) */
    double tdp_W, wait_W, best_flops, pj_per_bit;
    double gpus;                    /* GPUs of the replica */
} sv_step_model;

/* A step's composition, summed over its sequences. */
typedef struct {
    double tokens, emit, dec_ctx, pre_pairs, pre_writes;
    int64_t seqs;
    int has_prefill, has_decode;
} sv_step_mix;

/* Price the step model of a replica of plan p (tp, pp, ep, weights, kv, engine resolved) for model
 * m on cluster c, up to max_tokens tokens per step. attn_dp: ranks = p->ep GPUs, tp 1 attention,
 * experts / ep per GPU, all-to-all over the ep GPUs. 0, or the count of reasons added to d. */
int sv_step_model_build(const mp_model *m, const mp_cluster *c, const mp_infer_plan *p,
                        const mp_engine_profile *e, int attn_dp, double moe_load,
                        double max_tokens, double max_seqs, sv_step_model *sm, mp_diag *d);

/* Seconds of one step of mix x; its FLOPs and HBM bytes per GPU through *flop, *bytes (may be
 * NULL). Pure. */
double sv_step_time_s(const sv_step_model *sm, const sv_step_mix *x, double *flop, double *bytes);

/* One GPU's power during a step of t seconds doing flop FLOPs and bytes HBM bytes, W. */
double sv_step_power_w(const sv_step_model *sm, double t, double flop, double bytes);

/* Effective keys of a query at context ctx under the model's sliding window (the workload's rule,
 * src/workload/infer_phase.c). */
double sv_window_ctx(const sv_step_model *sm, double ctx);

/* attn_dp: the MoE dispatch + combine of one step over all MoE layers, tokens_local per GPU over
 * ep GPUs (DeepSeek-V3 Sec. 3.4), s. */
double sv_a2a_s(const mp_model *m, const mp_cluster *c, int ep, double tokens_local);

/* The longest arrival schedule the simulator accepts, s. Its event clock is int64 nanoseconds
 * (sched.c: llround(t * 1e9)), which wraps past INT64_MAX ns = 9.22e9 s; 1e9 s (31.7 years)
 * leaves 8.2e9 s of clock for the work still queued after the last arrival. The same bound the
 * trace reader in requests.c puts on arrival_s. A tiny --rate (1e-9/s x 2000 requests = 2e12 s) used to
 * wrap the clock and print negative TTFTs. */
#define SV_MAX_SPAN_S 1e9

/* The requests of a run: arrivals and lengths (requests.c); refuses a schedule over SV_MAX_SPAN_S. out: n entries, malloc'd. */
mp_status sv_requests_make(const mp_serve_opts *o, mp_serve_request **out, int64_t *n, mp_diag *d);

/* The built-in ShareGPT-like profile's means (tokens), for reports and the closed-form figures. */
void sv_sharegpt_means(double *in, double *out);

/* ---- the event loop (sched.c) ---------------------------------------------------------- */

enum { SV_WAIT, SV_PREFILL, SV_DECODE, SV_SWAPPED, SV_TRANSFER, SV_DONE };

/* One request's state. Extensible (issue 22 adds an adapter per request): the scheduler reads
 * only the fields below it names; adapter is carried to the step hook's callers untouched. */
typedef struct {
    double arrival_s;
    int64_t in, out;
    int state;
    int replica, decode_replica;   /* colocated / prefill replica; decode replica */
    int64_t kv_tokens;             /* tokens whose K/V the replica holds */
    int64_t target;                /* tokens to prefill before the next token (in; + output after
                                      a recompute) */
    int64_t generated;             /* output tokens emitted */
    int64_t blocks;                /* KV blocks held */
    int scheduled;                 /* in the step being run */
    int preempted;
    int32_t adapter;               /* -1: none (issue 22) */
    double start_s, prefill_start_s, first_s, done_s, last_tok_s, itl_max_s;
    double tx_start_s, tx_end_s, tx_wait_s, tx_alone_s, tx_exposed_s, tx_bytes;
    int64_t emitted_at_arrival, emitted_at_done;     /* the run's output-token counter then */
    int64_t completed_at_arrival, completed_at_done; /* the run's completed-request counter */
} sv_req;

/* A pool of like replicas. */
typedef struct {
    int kind;                      /* 0 colocated, 1 prefill, 2 decode */
    sv_step_model sm;
    int replicas, gpus_per_replica, first_gpu, tp;
    int64_t blocks, max_seqs, chunk;
    int block_tokens;
    double block_bytes_gpu;        /* one KV block on one GPU (swap) */
    double swap_Bps;
} sv_pool;

typedef struct {
    int pool;
    double busy_s, kv_area, kv_max, energy_J;
    int64_t preemptions, swaps, steps, served;
    double ingress_busy_s;         /* decode pool: KV transfers received, s of link time */
} sv_rep_stats;

typedef struct {
    sv_pool pool[2];
    int npools;                    /* 1 colocated; 2 = prefill (0) and decode (1) */
    const mp_cluster *c;
    double kv_bytes_per_token;     /* whole model (what a transfer moves per token) */
    double layers;                 /* layer-wise transfer granularity */
    int preempt;
    int prefill_first;             /* vLLM V0 default scheduling (mp_serve_opts.prefill_first) */
    mp_serve_step_hook hook;
    void *hook_ctx;
    mp_serve_replica_hook replica_hook;
    sv_req *req;
    int64_t n;
    sv_rep_stats *rep;             /* pool 0's replicas, then pool 1's */
    double end_s;                  /* last event */
    int64_t emitted, completed;    /* output tokens and requests so far */
    mp_serve_sample *samples;      /* when not NULL: one per step up to MP_SERVE_MAX_SAMPLES */
    size_t nsamples;
    char link[48], tier[48];
} sv_sim;

/* Run the simulation over s->req (filled with arrivals and lengths, sorted by arrival). MP_OK,
 * MP_ERR_NOMEM, MP_ERR_RANGE (event cap). */
mp_status sv_simulate(sv_sim *s, mp_diag *d);

#endif
