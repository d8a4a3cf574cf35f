/* meshplan/xsync.h — how islands of GPUs joined by slow (WAN) links synchronize: the plan keys of
 * decentralized and heterogeneous training (islands.h predicts them).
 *
 * Plan keys (added to the plan string, plan.h; an islands plan holds the plan of one cluster and
 * these settings, mp_islands_plan below; the table of these keys is src/islands/xsync_keys.h):
 *   sync=hsdp|diloco|pp|fl   the scheme across islands (none: the plan is for one cluster)
 *       hsdp    synchronous data parallelism over the WAN: the plan inside each island (e.g.
 *               zero=3), the gradients all-reduced across islands every step (HSDP: shard
 *               inside an island, replicate across; Zhao et al. 2023, PyTorch FSDP Sec. 3.3)
 *       diloco  local training: every island takes inner_steps steps on its own, then the
 *               islands all-reduce their pseudo-gradients (the change of the weights) and take
 *               an outer step (Douillard et al. 2023, arXiv 2311.08105); blocking, or
 *               overlapped with the next inner steps in fragments (Streaming DiLoCo, Douillard
 *               et al. 2025, arXiv 2501.18512)
 *       pp      pipeline stages in different islands: each island holds a block of layers and
 *               the activations (forward) and their gradients (backward) cross the WAN
 *       fl      federated groups (FL+FSDP / FL+HSDP: the island's own plan inside): every
 *               inner_steps local steps the islands send their model deltas to an aggregator
 *               island and receive the aggregate back (FedAvg/FedOpt through a server; Photon,
 *               Sani et al. 2024, arXiv 2411.02908), the global batch gb bounding the sum of
 *               the local batches
 *   inner_steps=H            steps between synchronizations (diloco, fl; default 100)
 *   compress=none|bf16|fp8|int8|topk:F   what crosses the WAN: fp32 (none), 16-bit, 8-bit
 *                            floats or integers, or the largest fraction F of the entries with
 *                            their 32-bit indices (0 < F <= 0.5)
 *   fragments=N              diloco: the model synchronized in N fragments on a staggered
 *                            schedule (default 1)
 *   overlap=T                diloco, fl: each synchronization may run behind the next T inner
 *                            steps (0 = blocking, the default; 1 or more = streaming/delayed
 *                            outer update); T * fragments <= inner_steps
 *   exchange=ring|rotate|star  who talks to whom: ring all-reduce over the best ring of islands
 *                            (hsdp, diloco default); rotate: pairwise averaging with a partner that
 *                            changes every synchronization (round-robin over the mesh; diloco,
 *                            fl); star: through the aggregator island (fl default; hsdp, diloco)
 *   split=speed|gpus|W1:W2:...  the global batch across islands: in proportion to each island's
 *                            measured speed (default), to its GPU count (the step then waits for
 *                            the slowest), or by the given weights in island order
 *   buckets=N                hsdp, diloco, fl: the exchange is issued as N collectives one after
 *                            the other (one per parameter bucket: PRIME's INTELLECT-1 loop
 *                            all-reduces one layer at a time), each paying its own latencies
 *                            unless the TCP window already holds the sender back longer
 *                            (default 1: one fused exchange); with fragments, per fragment
 *   transport=stream|rendezvous  how a message crosses the WAN: stream (default) sends at once
 *                            into buffers the receiver posted earlier (NCCL's proxies); rendezvous
 *                            sends only after the receiver's ready notice arrived, one more
 *                            one-way latency per message, unless the window already held the
 *                            sender back as long (Gloo's TCP transport: "sends cannot execute
 *                            until the remote side is ready to receive", tcp/pair.cc)
 *   ring=bottleneck|tsp|listed  exchange=ring: the order of the islands on the ring. bottleneck
 *                            (default): the order whose slowest step is fastest, as every step
 *                            waits for the slowest edge; tsp: the shortest tour by the time each
 *                            edge needs for its share of a synchronization at its long-run rate
 *                            (PRIME's ElasticDeviceMesh solves this travelling-salesman tour over
 *                            measured transfer times, comms.py _optimize_ring_ranks), whatever
 *                            the transport and the buckets;
 *                            listed: the islands' order in the description file (rank order, as
 *                            NCCL and Gloo rings follow the ranks as launched)
 */
#ifndef MESHPLAN_XSYNC_H
#define MESHPLAN_XSYNC_H

#include <stddef.h>
#include <stdint.h>

#include "meshplan/plan.h"
#include "meshplan/status.h"

typedef enum { MP_SYNC_NONE, MP_SYNC_HSDP, MP_SYNC_DILOCO, MP_SYNC_PP, MP_SYNC_FL, MP_SYNC_COUNT } mp_sync;
typedef enum {
    MP_COMPRESS_NONE, MP_COMPRESS_BF16, MP_COMPRESS_FP8, MP_COMPRESS_INT8, MP_COMPRESS_TOPK,
    MP_COMPRESS_COUNT
} mp_compress;
typedef enum { MP_EXCH_DEFAULT, MP_EXCH_RING, MP_EXCH_ROTATE, MP_EXCH_STAR, MP_EXCH_COUNT } mp_exchange;
typedef enum { MP_SPLIT_SPEED, MP_SPLIT_GPUS, MP_SPLIT_WEIGHTS, MP_SPLIT_COUNT } mp_split;
typedef enum { MP_TRANSPORT_STREAM, MP_TRANSPORT_RENDEZVOUS, MP_TRANSPORT_COUNT } mp_transport;
typedef enum { MP_RING_DEFAULT, MP_RING_BOTTLENECK, MP_RING_TSP, MP_RING_LISTED, MP_RING_COUNT } mp_ring;

/** Most weights in split=W1:W2:... (islands beyond take the last weight). */
#define MP_XSYNC_MAX_WEIGHTS 16

/** The cross-island part of a plan. All zero = not given (sync none). */
typedef struct {
    mp_sync sync;
    int64_t inner_steps;   /* 0 = default (100 for diloco and fl, 1 otherwise) */
    mp_compress compress;
    double topk_frac;      /* compress=topk: kept fraction, (0, 0.5] */
    int64_t fragments;     /* 0 = default 1 */
    int64_t overlap_steps; /* inner steps a synchronization may hide behind; 0 = blocking */
    int64_t buckets;       /* sequential collectives per exchange; 0 = default 1 */
    mp_transport transport;
    mp_ring ring;
    mp_exchange exchange;
    mp_split split;
    int nweights;
    double weights[MP_XSYNC_MAX_WEIGHTS];
    unsigned given;        /* bit per key given (duplicates are an error) */
} mp_xsync;

const char *mp_sync_name(mp_sync s);         /* "none", "hsdp", "diloco", "pp", "fl" */
const char *mp_compress_name(mp_compress c); /* "none", "bf16", "fp8", "int8", "topk" */
const char *mp_exchange_name(mp_exchange e); /* "default", "ring", "rotate", "star" */
const char *mp_transport_name(mp_transport t); /* "stream", "rendezvous" */
const char *mp_ring_name(mp_ring r);           /* "bottleneck" (also for the default), "tsp", "listed" */

/** A plan across islands: the plan every island runs (its own copy resolved for its GPU count
 *  and batch share: mp_islands_predict) and how the islands synchronize. */
typedef struct {
    mp_plan plan;
    mp_xsync xsync;
} mp_islands_plan;

/** Defaults: mp_plan_init_default for the plan, sync none and every island key not given. */
void mp_islands_plan_init_default(mp_islands_plan *ip);

/** Parse a plan string with keys of both kinds into ip (fields not mentioned keep their value):
 *  the keys above into ip->xsync, the others through mp_plan_parse into ip->plan. Errors as
 *  mp_plan_parse: MP_ERR_PARSE (a token not key=value), MP_ERR_INPUT (an unknown key, with the
 *  nearest key of either kind suggested; a key given twice; a value out of range), one diag line
 *  per problem naming the key and the value. */
mp_status mp_islands_plan_parse(const char *text, mp_islands_plan *ip, mp_diag *diag);

/** Parse a plan string for one cluster into p (as mp_plan_parse), naming each key across islands
 *  it holds as bad input (MP_ERR_INPUT: "plan.sync = diloco: a key across islands ...");
 *  sync=none is accepted. For commands that predict one cluster, so that a key across islands is
 *  never silently ignored nor reported as unknown. */
mp_status mp_islands_plan_parse_single(const char *text, mp_plan *p, mp_diag *diag);

/** The canonical plan string of ip: mp_plan_format, then the keys above (only with sync not
 *  none; each only when given). Returns chars written as snprintf does. */
int mp_islands_plan_format(const mp_islands_plan *ip, char *buf, size_t cap);

/** The i-th key across islands (0-based, table order); NULL when i is out of range. */
const mp_plan_key *mp_islands_plan_key_at(int i);

/** Help lines of the keys across islands, as mp_plan_keys_help. */
int mp_islands_plan_keys_help(char *buf, size_t cap);

/** Parse one key=value of the plan string when the key is one of the keys above. Returns 1 if
 *  the key is one of them (then *ok is 1, or 0 with a diag line naming the key, the value and
 *  what was expected; a key given twice is an error), 0 if the key is not one of them. Called by
 *  mp_islands_plan_parse. */
int mp_xsync_parse_key(const char *key, const char *val, mp_xsync *x, int *ok, mp_diag *diag);

/** For a plan on one cluster (sync not given or none): one diag line per key of this header
 *  that was given anyway (they apply across islands only: docs/islands.md), naming the key.
 *  Returns the number of such keys; 0 when sync is given or none of them is. */
int mp_xsync_check_single(const mp_xsync *x, mp_diag *diag);

/** Append ",sync=...,inner_steps=..." for a plan with sync != none (nothing otherwise) to buf of
 *  capacity cap at offset *len (*len advanced as snprintf would). */
void mp_xsync_format(const mp_xsync *x, char *buf, size_t cap, size_t *len);

/** Bytes on the wire per value exchanged, for a dense format (none 4, bf16 2, fp8 1, int8 1);
 *  for topk the bytes per kept entry (4-byte value + 4-byte index = 8). */
double mp_compress_bytes_per_value(mp_compress c);

#endif
