/* meshplan/islands.h — decentralized and heterogeneous training: islands of GPUs joined by slow
 * (WAN) links.
 *
 * An island is a cluster of its own (its GPU type and count and its internal fabric: topo.h
 * tiers); islands may differ in GPU type and size. WAN links join pairs of islands (or regions of
 * islands), each with a bandwidth, a one-way latency, an achievable fraction, background load, a
 * TCP window (a flow cannot carry more than window / round trip) and a price per GB sent. The
 * description is JSON (docs/cluster.md "Islands"); a cluster whose outermost tier is `wan` is
 * also read as identical islands joined by that tier.
 *
 * mp_islands_predict runs the plan inside every island with the estimator (estimate.h) and adds
 * what crosses the WAN for the scheme the islands plan's keys name (xsync.h): synchronous data
 * parallelism over the WAN (HSDP), pipeline stages in different islands, DiLoCo (blocking or
 * streaming in fragments), federated groups through an aggregator, and ring / rotating / star
 * exchanges; with fp32, bf16, fp8, int8 or top-k on the wire. It reports per island and in total
 * tokens/s, the share of wall-clock spent in training steps, MFU, the bytes crossing every WAN
 * link per synchronization and per hour, egress cost, the time of each synchronization and how
 * much of it hides behind compute, and whether the run is compute- or communication-bound.
 * Throughput is measured tokens; the tokens-to-quality factor of a scheme (published default or
 * the user's) is reported apart and never folded into it. Equations and sources: docs/islands.md.
 *
 * Sizes: up to MP_MAX_ISLANDS islands (a description of a few KiB); one prediction costs one
 * estimator call per island (two with split=speed) plus O(k^2) for the exchange — well under a
 * millisecond for 32 islands, except the exact best ring (k <= 9: (k-1)! orders; a local search
 * beyond).
 */
#ifndef MESHPLAN_ISLANDS_H
#define MESHPLAN_ISLANDS_H

#include <stddef.h>
#include <stdint.h>

#include "meshplan/catalog.h"
#include "meshplan/estimate.h"
#include "meshplan/model.h"
#include "meshplan/plan.h"
#include "meshplan/status.h"
#include "meshplan/topo.h"
#include "meshplan/xsync.h"

#define MP_MAX_ISLANDS 32
#define MP_MAX_WAN_FLOWS (MP_MAX_ISLANDS * (MP_MAX_ISLANDS - 1) / 2)

/** A WAN link between two islands (symmetric; all bandwidths per direction). */
typedef struct {
    int present;               /* 0: the two islands cannot talk directly */
    char link[MP_KEY_CAP];     /* catalog link key, or "custom" */
    double bw_Bps;             /* line rate of all the pair's links together, per direction */
    double latency_s;          /* one-way; the round trip is twice this */
    double efficiency_frac;    /* achievable fraction of bw_Bps, (0, 1] */
    double background_load_frac; /* share used by other traffic, [0, 0.99] */
    double tcp_window_bytes;   /* per flow: a flow carries at most window / round trip; 0 = no limit */
    double loss_frac;          /* packet loss probability on the path, [0, 0.1]; 0 = none (W3) */
    double flows_per_gpu;      /* concurrent flows each GPU of the smaller island opens (default 1) */
    double usd_per_GB;         /* price of each GB (1e9 B) sent across, each direction billed */
} mp_wan_link;

/** One island. */
typedef struct {
    char name[MP_KEY_CAP];
    char region[MP_KEY_CAP];   /* links are looked up by island name, then by region */
    mp_cluster cluster;        /* its GPUs and internal tiers */
    double straggler_factor;   /* >= 1: its steps take this much longer than predicted (a
                                  throttled or shared island); 1 = as predicted */
    double uplink_Bps;         /* its total WAN capacity per direction (line rate); 0 = only the
                                  links limit */
    int aggregator;            /* the server of exchange=star (the first island when none is) */
} mp_island;

/** Islands and the WAN between them. Allocated by mp_islands_from_json/_from_cluster. */
typedef struct {
    char name[MP_NAME_CAP];
    int n;
    mp_island island[MP_MAX_ISLANDS];
    mp_wan_link link[MP_MAX_ISLANDS][MP_MAX_ISLANDS]; /* link[a][b] == link[b][a]; [a][a] unused */
} mp_islands;

/** 1 if text is a JSON object with an "islands" array (an islands description), else 0. */
int mp_islands_json_is_islands(const char *text, size_t len);

/** Read an islands description (docs/cluster.md "Islands"). island_gpus > 0 sets the GPU count of
 *  every island (only_island non-NULL: of that island only; the others keep theirs) — what
 *  `meshplan islands-scale` sweeps. origin names the text in messages. Each island is a cluster
 *  description (topo.h mp_cluster_from_json) or a catalog node key ("node") with a GPU count;
 *  "count": N expands an island into N identical islands NAME-1..NAME-N. Links name two islands or
 *  regions ("between"), a catalog WAN link and/or their numbers; "wan_default" covers pairs not
 *  listed. Errors: MP_ERR_PARSE (malformed JSON), MP_ERR_INPUT (a field missing, mistyped, out of
 *  range, unknown, an island named twice, more than MP_MAX_ISLANDS islands, a pair with no link
 *  and no default, only_island not an island name) and MP_ERR_NOT_FOUND (an unknown GPU, node or
 *  link key) — every problem named with the island or link and the field. *out is allocated on
 *  success only; free it with mp_islands_destroy. */
mp_status mp_islands_from_json(const mp_catalog *cat, const char *text, size_t len,
                               const char *origin, int64_t island_gpus, const char *only_island,
                               mp_islands **out, mp_diag *diag);

/** A cluster as islands: when its outermost tier is `wan`, one island per domain of the tier
 *  below (each a copy of the cluster's inner tiers, identical), every pair joined by the wan
 *  tier's link (links_count links per island, as the tier says: uplink = the island's share);
 *  otherwise one island, the whole cluster. Errors: MP_ERR_INPUT (more than MP_MAX_ISLANDS
 *  islands), MP_ERR_NOMEM. */
mp_status mp_islands_from_cluster(const mp_cluster *c, mp_islands **out, mp_diag *diag);

/** Free islands (NULL is fine). */
void mp_islands_destroy(mp_islands *isl);

/** The achievable rate between islands a and b, bytes/s per direction, when `flows` concurrent
 *  TCP flows share the pair (docs/islands.md eq. W1): min(bw, uplinks) x efficiency x (1 - load),
 *  and at most flows x tcp_window / (2 latency) when a window is set. 0 when not linked. */
double mp_wan_rate_Bps(const mp_islands *isl, int a, int b, double flows);

/** The bytes one TCP flow keeps in flight on the link between islands a and b: the smaller of its
 *  window (tcp_window_bytes) and, with loss_frac p > 0, the average congestion window of CUBIC
 *  under random loss, max(1.054 RTT^0.75 / p^0.75, 1.2 / p^0.5) segments of 1448 bytes (RFC 8312
 *  Sec. 5.1: CUBIC's average window with C = 0.4, beta = 0.7, and the Reno-friendly bound it never
 *  falls below; RTT in seconds). 0 when neither bounds it, or no link joins a and b. */
double mp_wan_flow_window_bytes(const mp_islands *isl, int a, int b);

/** Options of a prediction. mp_islands_opts_init: defaults. */
typedef struct {
    double quality_factor;     /* tokens to reach a quality / tokens synchronous DP needs;
                                  0 = the scheme's published default (docs/islands.md) */
    const mp_estimate_opts *estimate_opts; /* NULL = the estimator's defaults */
} mp_islands_opts;

void mp_islands_opts_init(mp_islands_opts *o);

/** One island's share of the run. Times are per period (one step for hsdp and pp; inner_steps
 *  steps and one synchronization for diloco and fl). */
typedef struct {
    char name[MP_KEY_CAP];
    char gpu[MP_KEY_CAP];
    int64_t gpus;
    int64_t batch_seqs;        /* sequences per (inner) step */
    int64_t layers;            /* layers it holds (all but with sync=pp) */
    int feasible;              /* its plan fits in memory */
    char reason[256];          /* why not, or "" */
    double memory_bytes, memory_capacity_bytes; /* most loaded GPU */
    double step_s;             /* one (inner) step on its own, straggler factor included */
    double train_s;            /* per period: time in training steps */
    double compute_s;          /* per period: GPU compute + recompute (part of train_s) */
    double wait_s;             /* per period: idle, waiting for slower islands */
    double sync_exposed_s;     /* per period: waiting on the WAN synchronization */
    double tokens_per_s;       /* tokens it processes per second of wall-clock */
    double compute_util;       /* train_s / period: share of wall-clock in training steps */
    double mfu;                /* model FLOPs it does / (wall-clock x its peak) */
    double wan_out_bytes;      /* per period: bytes it sends over the WAN */
    double egress_usd;         /* per period: what those bytes cost */
} mp_island_result;

/** One WAN link in use. */
typedef struct {
    int a, b;                  /* island indices */
    double bytes;              /* per period, both directions together */
    double rate_Bps;           /* achievable rate used (per direction) */
    double busy_s;             /* per period: time it carries traffic */
    double usd;                /* per period */
    const char *limit;         /* what caps rate_Bps: "line" (capacity x efficiency x what other
                                  traffic leaves), "tcp-window", or "loss" (TCP under packet loss) */
} mp_wan_flow;

/** Everything predicted for a plan across islands. */
typedef struct {
    int feasible;              /* every island's plan fits in memory */
    int nreasons;
    char reasons[4][256];
    mp_sync sync;
    mp_exchange exchange;      /* the exchange used (default resolved) */
    mp_compress compress;
    int64_t inner_steps, fragments, overlap_steps;
    int64_t buckets;           /* sequential collectives per exchange (plan key buckets) */
    mp_transport transport;    /* stream or rendezvous (plan key transport) */
    mp_ring ring;              /* how the ring's order was chosen (plan key ring) */
    int nislands;
    mp_island_result island[MP_MAX_ISLANDS];
    int nflows;
    mp_wan_flow flow[MP_MAX_WAN_FLOWS];
    int64_t global_batch_seqs; /* sequences per (inner) step, all islands (<= plan gb) */
    int64_t steps_per_period;  /* 1, or inner_steps */
    double period_s;           /* wall-clock of one period */
    double step_s;             /* period_s / steps_per_period */
    double tokens_per_period, tokens_per_s, tokens_per_s_per_gpu;
    double mfu;                /* all model FLOPs / (wall-clock x sum of the islands' peaks) */
    double mfu_in_steps;       /* the same over the time in training steps only (what a training
                                  loop's own MFU counter shows; INTELLECT-1 reports this) */
    double hfu;                /* hardware FLOPs (recomputation counted) / (wall-clock x peaks) */
    double model_tflops_per_gpu, hardware_tflops_per_gpu; /* over wall-clock, all GPUs */
    double compute_util;       /* GPU-weighted mean of the islands' compute_util */
    double sync_s;             /* one synchronization (all fragments, compression included) */
    double sync_compress_s;    /* its compression / decompression compute */
    double sync_hidden_s;      /* per period: synchronization behind compute */
    double sync_exposed_s;     /* per period: synchronization on the critical path */
    double rotate_min_s, rotate_max_s; /* exchange=rotate: fastest and slowest round */
    double wan_bytes;          /* per period, all links, both directions */
    double wan_bytes_per_token, wan_bytes_per_hour;
    double dp_bytes_per_token; /* what fp32 synchronous DP (ring over the same islands) would
                                  move per token: the reduction factor's reference */
    double egress_usd, egress_usd_per_hour, egress_usd_per_mtoken;
    int bottleneck_flow;       /* index in flow[] of the slowest link of the synchronization */
    int comm_bound;            /* 1: exposed WAN time >= time in training steps */
    char bottleneck[256];      /* in words */
    double quality_factor;     /* tokens-to-quality factor used (>= 0.01) */
    int quality_published;     /* 1: a published default; 0: the user's or no published figure */
    char quality_source[384];
    double tokens_per_s_at_quality; /* tokens_per_s / quality_factor: NOT measured throughput */
} mp_islands_estimate;

/** Predict the islands plan ip of model m on the islands. ip->plan is the plan string's plan
 *  (mp_islands_plan_parse, xsync.h), not resolved: each island resolves its own copy for its GPU
 *  count and batch share (dp derived per island; tp, pp, cp, zero, hsdp, mb, seq, recompute... as
 *  given). gb is the global batch per (inner) step, split across islands by ip->xsync.split. sync none is taken as hsdp on several
 *  islands and as the plain estimate on one. opts may be NULL.
 *  With one island every scheme is the plain single-cluster prediction (no WAN, no
 *  synchronization). Every WAN message costs (1 + h) one-way latencies plus its transfer, at the
 *  line rate within the flows' windows and at the window-limited rate beyond, never faster on
 *  average than the window-limited rate (docs/islands.md eq. W2; h = 1 with
 *  transport=rendezvous); buckets=B runs B exchanges of S/B in a row. Returns MP_OK (check out->feasible), MP_ERR_INPUT when the plan cannot be
 *  formed on an island (the island and the reason named), the keys contradict the scheme
 *  (inner_steps with hsdp, rotate with hsdp, overlap * fragments > inner_steps, split weights
 *  count, buckets with pp, a ring order without a ring exchange...), the batch cannot be split (each island needs at least mb x its dp sequences), or
 *  the exchange needs a link that does not exist; MP_ERR_RANGE if a result is not finite. */
mp_status mp_islands_predict(const mp_model *m, const mp_islands *isl, const mp_islands_plan *ip,
                             const mp_islands_opts *opts, mp_islands_estimate *out, mp_diag *diag);

#endif
