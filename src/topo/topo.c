/* src/topo/topo.c — build a cluster's tiers from the catalog and place parallel groups on them.
 *
 * Tier 0 is the scale-up domain; tier 1 the scale-out fabric. The per-GPU scale-out bandwidth is
 * the node's NIC bandwidth shared evenly by its GPUs (rail-optimised fabrics give each GPU its
 * own NIC; DGX H100: 8 x 400 Gb/s for 8 GPUs = 50 GB/s per GPU per direction).
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "meshplan/topo.h"

static void tier_from_link(mp_tier *t, const mp_link *l, int64_t domain_gpus, double bw_per_gpu)
{
    memset(t, 0, sizeof *t);
    mp_strlcpy(t->link, l->key, sizeof t->link);
    t->kind = l->kind;
    t->domain_gpus = domain_gpus;
    t->bw_Bps = bw_per_gpu;
    t->latency_s = l->latency_s;
    t->efficiency_frac = l->efficiency_frac;
    t->oversubscription = 1.0;
    t->background_load_frac = 0.0;
    t->in_network_reduction = l->in_network_reduction;
}

mp_status mp_cluster_from_catalog(const mp_catalog *cat, const char *gpu_key, int64_t num_gpus,
                                  int gpus_per_node, const char *scaleout_link, mp_cluster *out,
                                  mp_diag *diag)
{
    memset(out, 0, sizeof *out);
    const mp_gpu *g = mp_catalog_gpu(cat, gpu_key);
    if (!g) {
        mp_diag_add(diag, "gpu = \"%s\": not in the catalog (see `meshplan catalog gpus`)", gpu_key);
        return MP_ERR_NOT_FOUND;
    }
    if (num_gpus < 1 || num_gpus > ((int64_t)1 << 24)) {
        mp_diag_add(diag, "gpus = %lld: expected an integer in [1, 2^24]", (long long)num_gpus);
        return MP_ERR_INPUT;
    }
    const mp_node *node = mp_catalog_node_for_gpu(cat, gpu_key);
    int gpn = gpus_per_node > 0 ? gpus_per_node : (node ? node->gpus_per_node : 8);
    if (gpn > num_gpus)
        gpn = (int)num_gpus;
    if (num_gpus % gpn != 0) {
        mp_diag_add(diag, "gpus = %lld: expected a multiple of gpus-per-node (%d)",
                    (long long)num_gpus, gpn);
        return MP_ERR_INPUT;
    }
    const char *su_key = node ? node->scaleup_link : g->scaleup_link;
    const mp_link *su = mp_catalog_link(cat, su_key);
    if (!su) {
        mp_diag_add(diag, "gpu \"%s\": scale-up link \"%s\" not in the catalog", gpu_key, su_key);
        return MP_ERR_NOT_FOUND;
    }
    const char *so_key = (scaleout_link && scaleout_link[0]) ? scaleout_link
                         : node ? node->scaleout_link : "ib-ndr-400";
    const mp_link *so = mp_catalog_link(cat, so_key);
    if (!so) {
        mp_diag_add(diag, "scale-out = \"%s\": not in the catalog (see `meshplan catalog links`)",
                    so_key);
        return MP_ERR_NOT_FOUND;
    }
    if (so->kind == MP_LINK_SCALEUP) {
        mp_diag_add(diag, "scale-out = \"%s\": a scale-up link; expected a NIC or WAN link", so_key);
        return MP_ERR_INPUT;
    }
    /* Without a node entry: one NIC per GPU (rail-optimised default). */
    int nics = node ? node->nics_per_node : gpn;
    if (node && gpus_per_node > 0 && gpus_per_node != node->gpus_per_node)
        nics = (int)((int64_t)node->nics_per_node * gpn / node->gpus_per_node) > 0
                   ? (int)((int64_t)node->nics_per_node * gpn / node->gpus_per_node) : 1;

    out->gpu = *g;
    out->num_gpus = num_gpus;
    out->gpus_per_node = gpn;
    out->node_power_overhead_W = node ? node->power_overhead_W : 0;
    snprintf(out->name, sizeof out->name, "%lld x %s (%s, %d/node, %s)", (long long)num_gpus,
             g->key, su->key, gpn, so->key);
    tier_from_link(&out->tier[0], su, gpn, su->bw_Bps);
    out->tier[0].topology = node ? node->scaleup_topology : MP_SU_SWITCH;
    tier_from_link(&out->tier[1], so, num_gpus, so->bw_Bps * nics / gpn);
    out->ntiers = 2;
    return MP_OK;
}

void mp_group_place(const mp_cluster *c, mp_group g, mp_placement *out)
{
    memset(out, 0, sizeof *out);
    out->outer_tier = -1;
    for (int t = 0; t < c->ntiers; t++) {
        int64_t d = c->tier[t].domain_gpus;
        int64_t r = g.stride >= d ? 1 : d / g.stride;
        out->ranks_in_domain[t] = r < g.size ? r : g.size;
        if (r < 1)
            out->ranks_in_domain[t] = 1;
    }
    if (g.size <= 1)
        return;
    out->outer_tier = c->ntiers - 1;
    for (int t = 0; t < c->ntiers; t++)
        if (out->ranks_in_domain[t] >= g.size) {
            out->outer_tier = t;
            break;
        }
}
