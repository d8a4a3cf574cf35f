/* meshplan/topo.h — the cluster as tiers of links, and where each parallel group lands on them.
 *
 * A cluster is a stack of tiers, innermost first: tier 0 is the scale-up domain (NVLink/NVSwitch,
 * XGMI, PCIe) of gpus_per_node GPUs; tier 1 the scale-out fabric (NICs, leaf/spine) joining
 * nodes; optional outer tiers join islands (e.g. WAN links). Each tier says how many GPUs one of
 * its domains holds and the bandwidth one GPU gets when its traffic leaves the domain below.
 *
 * Ranks are numbered so that consecutive ranks are consecutive GPUs (GPU g is in node
 * g / gpus_per_node). A parallel group is the set {r0 + k*stride : k < size}: with the default
 * order tp, cp, ep, dp, pp (innermost first), TP has stride 1, CP stride tp, DP stride tp*cp, and
 * PP stride tp*cp*dp (Megatron-LM's rank order).
 */
#ifndef MESHPLAN_TOPO_H
#define MESHPLAN_TOPO_H

#include <stdint.h>
#include "meshplan/catalog.h"
#include "meshplan/hw.h"
#include "meshplan/status.h"

#define MP_MAX_TIERS 4

/** One tier of the cluster. */
typedef struct {
    char link[MP_KEY_CAP];     /* link key, e.g. "nvlink4", "ib-ndr-400" */
    mp_link_kind kind;
    int64_t domain_gpus;       /* GPUs in one domain of this tier (tier 0: gpus_per_node) */
    double bw_Bps;             /* per GPU, per direction, at line rate */
    double latency_s;          /* alpha per hop */
    double efficiency_frac;    /* achievable fraction of bw_Bps, (0, 1] */
    double oversubscription;   /* >= 1: bandwidth divided by this when crossing the tier */
    double background_load_frac; /* [0, 1): share of the tier used by other jobs */
    int in_network_reduction;  /* NVLS / SHARP */
    mp_scaleup_topology topology; /* tier 0 only */
} mp_tier;

/** A cluster: one GPU type, its node size, and the tiers. */
typedef struct {
    char name[MP_NAME_CAP];
    mp_gpu gpu;
    int64_t num_gpus;
    int gpus_per_node;
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

/** A parallel group: size ranks spaced stride apart in rank order. */
typedef struct {
    int64_t size;   /* >= 1 */
    int64_t stride; /* >= 1 */
} mp_group;

/** Where a group lands: ranks_in_domain[t] = how many of its ranks share one domain of tier t
 *  (tier 0: one node), and the outermost tier it crosses (-1 if size == 1, 0 if it stays inside
 *  one node, 1 if it spans nodes, ...). */
typedef struct {
    int64_t ranks_in_domain[MP_MAX_TIERS];
    int outer_tier;
} mp_placement;

void mp_group_place(const mp_cluster *c, mp_group g, mp_placement *out);

#endif
