/* src/islands/xsync_keys.h — the plan keys across islands joined by WAN links, written once
 * (library-internal). The same columns and machinery as the plan keys of one cluster
 * (src/plan/plan_keys.h, src/plan/plan_key.h), for the fields of mp_xsync:
 *   X(name, TYPE, field, min, max, VALUES, ops, FMT, default, help)
 * The order is the order of the `given` bits, of the canonical string (mp_islands_plan_format),
 * of `meshplan help` and of the README's list. What each scheme means: xsync.h, docs/islands.md.
 * The names arrays and ops are defined in xsync.c.
 */
#ifndef MESHPLAN_XSYNC_KEYS_H
#define MESHPLAN_XSYNC_KEYS_H

#define MP_XSYNC_KEYS(X)                                                                           \
    X(sync, ENUM, sync, 0, 0, MP_ENUM(sync_names, 0), NULL, ALWAYS, "none, one cluster",          \
      "the scheme across islands: synchronous DP, DiLoCo, pipeline stages, federated")             \
    X(inner_steps, INT, inner_steps, 1, 1000000, MP_NOENUM, NULL, IFSET, "100 with diloco and fl",       \
      "local steps between synchronizations (diloco, fl)")                                         \
    X(compress, TEXT, compress, 0, 0, MP_SYNTAX("none|bf16|fp8|int8|topk:F", "topk:0.01"),         \
      &compress_ops, IFSET, "none, fp32",                                                          \
      "what crosses the WAN; topk:F keeps the largest fraction F, 0 < F <= 0.5")                   \
    X(fragments, INT, fragments, 1, 4096, MP_NOENUM, NULL, IFSET, "1",                              \
      "diloco: the model synchronized in N staggered fragments (streaming DiLoCo)")                \
    X(overlap, INT, overlap_steps, 0, 1000000, MP_NOENUM, NULL, IFSET, "0, blocking",              \
      "diloco, fl: inner steps a synchronization may run behind")                                  \
    X(exchange, ENUM, exchange, 0, 0, MP_ENUM(exchange_key_names, MP_EXCH_RING), NULL, IFSET,       \
      "ring, star with fl", "who talks to whom: ring all-reduce, rotating pairs, or an aggregator")    \
    X(buckets, INT, buckets, 1, 1000000, MP_NOENUM, NULL, IFSET, "1",                               \
      "the exchange as N collectives one after the other (hsdp, diloco, fl)")                      \
    X(transport, ENUM, transport, 0, 0, MP_ENUM(transport_names, 0), NULL, IFSET, "stream",         \
      "stream (NCCL) or rendezvous (a receiver-ready notice per message, Gloo TCP)")               \
    X(ring, ENUM, ring, 0, 0, MP_ENUM(ring_key_names, MP_RING_BOTTLENECK), NULL, IFSET,             \
      "bottleneck", "exchange=ring: the islands' order on the ring")                              \
    X(split, TEXT, split, 0, 0, MP_SYNTAX("speed|gpus|W1:W2:...", "2:1:1"), &split_ops, IFSET,      \
      "speed", "the global batch across islands: by speed, by GPU count, or by weights")

#endif
