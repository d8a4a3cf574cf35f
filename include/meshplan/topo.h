/* meshplan/topo.h — the cluster as tiers of links, and where each parallel group lands on them.
 *
 * A cluster is a stack of tiers, innermost first: tier 0 is the scale-up domain (NVLink/NVSwitch
 * of 8 GPUs, a 72-GPU NVL72 rack, an XGMI full mesh, PCIe behind host bridges) of gpus_per_node
 * GPUs; tier 1 the first scale-out tier (the NICs and the leaf switches they plug into); further
 * tiers are spines, further switch layers and WAN links joining islands. Each tier says how many
 * GPUs one of its domains holds and the bandwidth one GPU gets when its traffic leaves the domain
 * of the tier below (its pooled share of the links that leave that domain). The JSON description
 * of a cluster is documented in docs/cluster.md.
 *
 * Ranks are numbered so that consecutive ranks are consecutive GPUs (GPU g is in node
 * g / gpus_per_node, and in domain g / domain_gpus of every tier). A parallel group is the set
 * {r0 + i*stride : i < size} (TP, CP, EP, PP, DP, or DP x CP when adjacent in the rank order), or
 * a product of two such sets when a group spans dimensions that are not adjacent (the DP x CP
 * gradient group when the order puts something between them: mp_group_place_2d, mp_coll_time_2d).
 * mp_plan_group (plan.h) derives
 * groups from the plan's rank order (default tp, cp, ep, dp, pp innermost first: TP stride 1, CP
 * stride tp, DP stride tp*cp, PP stride tp*cp*dp — Megatron-LM's order).
 */
#ifndef MESHPLAN_TOPO_H
#define MESHPLAN_TOPO_H

#include <stddef.h>
#include <stdint.h>
#include "meshplan/catalog.h"
#include "meshplan/hw.h"
#include "meshplan/status.h"

#define MP_MAX_TIERS 6

/** One tier of the cluster. All bandwidths are per GPU, per direction. */
typedef struct {
    char name[MP_KEY_CAP];     /* "nvlink", "leaf", "spine", "wan", ... (for reports) */
    char link[MP_KEY_CAP];     /* link key, e.g. "nvlink4", "ib-ndr-400" */
    mp_link_kind kind;
    int64_t domain_gpus;       /* GPUs in one domain of this tier (tier 0: gpus_per_node) */
    double bw_Bps;             /* per GPU at line rate: tier 0 its scale-up bandwidth; tier t >= 1
                                  its share of the links leaving one domain of tier t-1 */
    double latency_s;          /* alpha per hop (the low-latency protocol's per-step latency) */
    double efficiency_frac;    /* achievable fraction of bw_Bps for large messages, (0, 1] */
    double oversubscription;   /* >= 1: bandwidth divided by this when crossing the tier */
    double background_load_frac; /* [0, 1): share of the tier used by other jobs */
    int in_network_reduction;  /* NVLS (tier 0) / SHARP (switch tiers) */
    double in_network_algbw_frac; /* in-network all-reduce algbw / bw_Bps (tier 0 NVLS); 0 = 0.61 */
    mp_scaleup_topology topology; /* tier 0 only: switch, mesh or pcie */
    int pcie_no_p2p;           /* tier 0 pcie: 1 = no peer-to-peer, traffic staged in host memory */
    int rail_optimized;        /* scale-out: GPU i of every node on rail i; traffic between rails
                                  is carried by the tier above unless relayed over tier 0 (PXN) */
    int planes;                /* independent network planes (1 if unset); see docs/cluster.md */
    double nics_per_gpu;       /* scale-out tier: NIC ports per GPU (0.25 = 2 NICs for 8 GPUs) */
    double port_bw_Bps;        /* one port/link of this tier, per direction (informational) */
} mp_tier;

/** A cluster: one GPU type, its node size, and the tiers. */
typedef struct {
    char name[MP_NAME_CAP];
    mp_gpu gpu;
    int64_t num_gpus;
    int gpus_per_node;         /* = tier[0].domain_gpus */
    int ntiers;
    mp_tier tier[MP_MAX_TIERS];
    double node_power_overhead_W;
} mp_cluster;

/** Build a cluster of num_gpus GPUs of type gpu_key from the catalog.
 *  gpus_per_node <= 0: the GPU's usual node type (mp_catalog_node_for_gpu); scaleout_link NULL or
 *  "": that node's NIC link. Per-GPU scale-out bandwidth = nics_per_node * link bw / gpus_per_node.
 *  Errors: MP_ERR_NOT_FOUND (unknown GPU, node or link key, named in diag), MP_ERR_INPUT
 *  (num_gpus outside [1, 2^24], or not a multiple of gpus_per_node). gpus_per_node larger than
 *  num_gpus is reduced to num_gpus. */
mp_status mp_cluster_from_catalog(const mp_catalog *cat, const char *gpu_key, int64_t num_gpus,
                                  int gpus_per_node, const char *scaleout_link, mp_cluster *out,
                                  mp_diag *diag);

/** Build a cluster of num_gpus GPUs from a catalog node type (nodes.json key, e.g. "dgx-h100"):
 *  its GPU, scale-up link and topology, and its NICs as a single non-blocking scale-out tier.
 *  Errors as mp_cluster_from_catalog; MP_ERR_NOT_FOUND for an unknown node key. */
mp_status mp_cluster_from_node(const mp_catalog *cat, const char *node_key, int64_t num_gpus,
                               mp_cluster *out, mp_diag *diag);

/** Build a cluster from its JSON description (schema: docs/cluster.md; examples in
 *  examples/clusters/). num_gpus > 0 overrides the file's "num_gpus_count"; one of the two is
 *  required. Tier domains larger than the cluster are clipped to it. origin names the text in
 *  messages. Errors: MP_ERR_PARSE (malformed JSON), MP_ERR_INPUT (a field missing, mistyped or
 *  out of range, or tiers inconsistent — every problem named with its tier and field),
 *  MP_ERR_NOT_FOUND (an unknown GPU or link key). */
mp_status mp_cluster_from_json(const mp_catalog *cat, const char *json_text, size_t len,
                               const char *origin, int64_t num_gpus, mp_cluster *out,
                               mp_diag *diag);

/** Cluster descriptions shipped with meshplan (examples/clusters/NAME.json, embedded at build time),
 *  by name (the file name without .json, e.g. "dgx-h100-ndr-fat-tree-2to1"). Returns the JSON
 *  text or NULL if there is no such preset. */
const char *mp_cluster_preset_json(const char *name, size_t *len);
/** Number of shipped presets and the i-th name (NULL when out of range). */
size_t mp_cluster_preset_count(void);
const char *mp_cluster_preset_name(size_t i);

/** A parallel group: size ranks spaced stride apart in rank order. */
typedef struct {
    int64_t size;   /* >= 1 */
    int64_t stride; /* >= 1 */
} mp_group;

/** Where a group lands: ranks_in_domain[t] = how many of its ranks share one domain of tier t
 *  (tier 0: one node), and the outermost tier it crosses (-1 if it has one rank, 0 if it stays
 *  inside one node, 1 if it spans nodes, ...). Domains are aligned blocks of domain_gpus ranks;
 *  a group with stride s has min(size, domain/s) ranks in a domain (1 when s >= domain). */
typedef struct {
    int64_t ranks_in_domain[MP_MAX_TIERS];
    int outer_tier;
} mp_placement;

void mp_group_place(const mp_cluster *c, mp_group g, mp_placement *out);

/** A group over two dimensions that are not adjacent in the rank order: outer.size copies of
 *  inner, outer.stride ranks apart (outer.stride >= inner.size * inner.stride); its ranks in a
 *  domain are the product of the two counts. mp_group_place(c, g) == mp_group_place_2d(c, g,
 *  (mp_group){1, 1}). */
void mp_group_place_2d(const mp_cluster *c, mp_group inner, mp_group outer, mp_placement *out);

/** Check a cluster built by hand: tiers 1..MP_MAX_TIERS, domains non-decreasing with tier 0's a
 *  divisor of num_gpus, bandwidths and latencies positive and finite, fractions in range.
 *  MP_ERR_INPUT names each problem. */
mp_status mp_cluster_check(const mp_cluster *c, mp_diag *diag);

#endif
