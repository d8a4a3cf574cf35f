/* src/topo/topo.c — build a cluster's tiers from the catalog and place parallel groups on them.
 *
 * From the catalog a cluster has two tiers: tier 0 the scale-up domain; tier 1 the scale-out
 * fabric as one non-blocking tier. The per-GPU scale-out bandwidth is the node's NIC bandwidth
 * shared evenly by its GPUs (rail-optimised fabrics give each GPU its own NIC; DGX H100: 8 x
 * 400 Gb/s for 8 GPUs = 50 GB/s per GPU per direction). Richer clusters (leaf/spine,
 * oversubscription, WAN islands) come from JSON: src/topo/cluster_json.c, docs/cluster.md.
 *
 * Placement: domains of tier t are aligned blocks of domain_gpus consecutive ranks, so a group of
 * size n and stride s has min(n, D/s) ranks in a domain of D GPUs (1 when s >= D); a group with
 * two dimensions multiplies the two counts. This is exact when D and the strides are powers of
 * two or divide each other (every layout a training framework produces), and an approximation
 * otherwise.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "meshplan/topo.h"

static void tier_from_link(mp_tier *t, const char *name, const mp_link *l, int64_t domain_gpus,
                           double bw_per_gpu)
{
    memset(t, 0, sizeof *t);
    mp_strlcpy(t->name, name, sizeof t->name);
    mp_strlcpy(t->link, l->key, sizeof t->link);
    t->kind = l->kind;
    t->domain_gpus = domain_gpus;
    t->bw_Bps = bw_per_gpu;
    t->port_bw_Bps = l->bw_Bps;
    t->latency_s = l->latency_s;
    t->efficiency_frac = l->efficiency_frac;
    t->oversubscription = 1.0;
    t->background_load_frac = 0.0;
    t->in_network_reduction = l->in_network_reduction;
    t->in_network_algbw_frac = l->in_network_algbw_frac;
    t->planes = 1;
}

/* Two tiers from a GPU, an optional node type, a node size and a scale-out link. */
static mp_status build_two_tier(const mp_catalog *cat, const mp_gpu *g, const mp_node *node,
                                int64_t num_gpus, int gpus_per_node, const char *scaleout_link,
                                mp_cluster *out, mp_diag *diag)
{
    if (num_gpus < 1 || num_gpus > ((int64_t)1 << 24)) {
        mp_diag_add(diag, "gpus = %lld: expected an integer in [1, 2^24]", (long long)num_gpus);
        return MP_ERR_INPUT;
    }
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
        mp_diag_add(diag, "gpu \"%s\": scale-up link \"%s\" not in the catalog", g->key, su_key);
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

    memset(out, 0, sizeof *out);
    out->gpu = *g;
    out->num_gpus = num_gpus;
    out->gpus_per_node = gpn;
    out->node_power_overhead_W = node ? node->power_overhead_W : 0;
    snprintf(out->name, sizeof out->name, "%lld x %s (%s, %d/node, %s)", (long long)num_gpus,
             g->key, su->key, gpn, so->key);
    tier_from_link(&out->tier[0], "scale-up", su, gpn, su->bw_Bps);
    out->tier[0].topology = node ? node->scaleup_topology : MP_SU_SWITCH;
    tier_from_link(&out->tier[1], "scale-out", so, num_gpus, so->bw_Bps * nics / gpn);
    out->tier[1].nics_per_gpu = (double)nics / gpn;
    out->ntiers = 2;
    return MP_OK;
}

/* Case-insensitive: does key contain s? (GPU keys are long: "h100" for h100-sxm5-80gb.) */
static int key_contains(const char *key, const char *s)
{
    size_t n = strlen(s);
    if (!n)
        return 0;
    for (; *key; key++) {
        size_t i = 0;
        while (i < n && key[i] && (key[i] | 0x20) == (s[i] | 0x20))
            i++;
        if (i == n)
            return 1;
    }
    return 0;
}

/* The catalog GPU keys containing gpu_key, as '; did you mean a, b or c?' (at most 4), or "". */
static void gpu_key_hint(const mp_catalog *cat, const char *gpu_key, char *buf, size_t cap)
{
    const char *near[4];
    int k = 0;
    for (size_t i = 0; i < mp_catalog_gpu_count(cat) && k < 4; i++) {
        const mp_gpu *g = mp_catalog_gpu_at(cat, i);
        if (key_contains(g->key, gpu_key))
            near[k++] = g->key;
    }
    buf[0] = '\0';
    size_t used = 0;
    for (int i = 0; i < k && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s%s", i ? "" : "; did you mean ",
                                 near[i], i + 2 < k ? ", " : i + 1 < k ? " or " : "?");
}

mp_status mp_cluster_from_catalog(const mp_catalog *cat, const char *gpu_key, int64_t num_gpus,
                                  int gpus_per_node, const char *scaleout_link, mp_cluster *out,
                                  mp_diag *diag)
{
    memset(out, 0, sizeof *out);
    const mp_gpu *g = mp_catalog_gpu(cat, gpu_key);
    if (!g) {
        char hint[320];
        gpu_key_hint(cat, gpu_key, hint, sizeof hint);
        mp_diag_add(diag, "gpu = \"%s\": not in the catalog (see `meshplan catalog gpus`)%s",
                    gpu_key, hint);
        return MP_ERR_NOT_FOUND;
    }
    return build_two_tier(cat, g, mp_catalog_node_for_gpu(cat, gpu_key), num_gpus, gpus_per_node,
                          scaleout_link, out, diag);
}

mp_status mp_cluster_from_node(const mp_catalog *cat, const char *node_key, int64_t num_gpus,
                               mp_cluster *out, mp_diag *diag)
{
    memset(out, 0, sizeof *out);
    const mp_node *node = mp_catalog_node(cat, node_key);
    if (!node) {
        mp_diag_add(diag, "cluster = \"%s\": not a catalog node (see `meshplan catalog nodes`)",
                    node_key);
        return MP_ERR_NOT_FOUND;
    }
    const mp_gpu *g = mp_catalog_gpu(cat, node->gpu);
    if (!g) {
        mp_diag_add(diag, "node \"%s\": gpu \"%s\" not in the catalog", node_key, node->gpu);
        return MP_ERR_NOT_FOUND;
    }
    mp_status st = build_two_tier(cat, g, node, num_gpus, 0, NULL, out, diag);
    if (st == MP_OK)
        snprintf(out->name, sizeof out->name, "%s x %lld GPUs", node->key, (long long)num_gpus);
    return st;
}

/* Ranks of a one-dimensional group (n ranks, stride s) inside an aligned block of d ranks. */
static int64_t ranks_in_block(int64_t n, int64_t s, int64_t d)
{
    if (n <= 1 || s >= d)
        return 1;
    int64_t r = d / s;
    return r < n ? r : n;
}

void mp_group_place(const mp_cluster *c, mp_group g, mp_placement *out)
{
    mp_group_place_2d(c, g, (mp_group){1, 1}, out);
}

void mp_group_place_2d(const mp_cluster *c, mp_group g, mp_group h, mp_placement *out)
{
    memset(out, 0, sizeof *out);
    out->outer_tier = -1;
    const int64_t n = g.size * (h.size > 1 ? h.size : 1);
    for (int t = 0; t < c->ntiers; t++) {
        int64_t d = c->tier[t].domain_gpus;
        int64_t r = ranks_in_block(g.size, g.stride, d);
        if (h.size > 1)
            r *= ranks_in_block(h.size, h.stride, d);
        out->ranks_in_domain[t] = r < n ? r : n;
    }
    if (n <= 1)
        return;
    out->outer_tier = c->ntiers - 1;
    for (int t = 0; t < c->ntiers; t++)
        if (out->ranks_in_domain[t] >= n) {
            out->outer_tier = t;
            break;
        }
    /* The outermost tier holds the whole cluster: a group always fits in it. */
    out->ranks_in_domain[out->outer_tier] = n;
}

mp_status mp_cluster_check(const mp_cluster *c, mp_diag *diag)
{
    int bad = 0;
#define BAD(...) do { mp_diag_add(diag, __VA_ARGS__); bad++; } while (0)
    if (c->ntiers < 1 || c->ntiers > MP_MAX_TIERS) {
        BAD("cluster: %d tiers: expected 1 to %d", c->ntiers, MP_MAX_TIERS);
        return MP_ERR_INPUT;
    }
    if (c->num_gpus < 1 || c->num_gpus > ((int64_t)1 << 24))
        BAD("cluster: num_gpus = %lld: expected an integer in [1, 2^24]", (long long)c->num_gpus);
    if (c->gpus_per_node < 1 || c->gpus_per_node != c->tier[0].domain_gpus)
        BAD("cluster: gpus_per_node = %d: expected tier 0's domain_gpus (%lld)",
            c->gpus_per_node, (long long)c->tier[0].domain_gpus);
    else if (c->num_gpus % c->gpus_per_node)
        BAD("cluster: num_gpus = %lld: expected a multiple of the scale-up domain (%d GPUs)",
            (long long)c->num_gpus, c->gpus_per_node);
    for (int t = 0; t < c->ntiers; t++) {
        const mp_tier *x = &c->tier[t];
        const char *nm = x->name[0] ? x->name : "?";
        if (x->domain_gpus < 1 || x->domain_gpus > c->num_gpus)
            BAD("tier %d (%s): domain_gpus = %lld: expected 1 to num_gpus (%lld)", t, nm,
                (long long)x->domain_gpus, (long long)c->num_gpus);
        else if (t > 0 && x->domain_gpus < c->tier[t - 1].domain_gpus)
            BAD("tier %d (%s): domain_gpus = %lld: expected at least tier %d's (%lld)", t, nm,
                (long long)x->domain_gpus, t - 1, (long long)c->tier[t - 1].domain_gpus);
        else if (t > 0 && x->domain_gpus % c->tier[t - 1].domain_gpus &&
                 x->domain_gpus != c->num_gpus)
            BAD("tier %d (%s): domain_gpus = %lld: expected a multiple of tier %d's (%lld)", t, nm,
                (long long)x->domain_gpus, t - 1, (long long)c->tier[t - 1].domain_gpus);
        if (!(x->bw_Bps > 0) || !isfinite(x->bw_Bps))
            BAD("tier %d (%s): bandwidth = %g B/s per GPU: expected a positive number", t, nm,
                x->bw_Bps);
        if (!(x->latency_s >= 0) || !isfinite(x->latency_s) || x->latency_s > 10.0)
            BAD("tier %d (%s): latency_s = %g: expected a number in [0, 10]", t, nm, x->latency_s);
        if (!(x->efficiency_frac > 0 && x->efficiency_frac <= 1))
            BAD("tier %d (%s): efficiency_frac = %g: expected a fraction in (0, 1]", t, nm,
                x->efficiency_frac);
        if (!(x->oversubscription >= 1) || !isfinite(x->oversubscription) ||
            x->oversubscription > 1e6)
            BAD("tier %d (%s): oversubscription = %g: expected a number >= 1", t, nm,
                x->oversubscription);
        if (!(x->background_load_frac >= 0 && x->background_load_frac < 1))
            BAD("tier %d (%s): background_load_frac = %g: expected a fraction in [0, 1)", t, nm,
                x->background_load_frac);
        if (!(x->in_network_algbw_frac >= 0 && x->in_network_algbw_frac <= 1))
            BAD("tier %d (%s): in_network_algbw_frac = %g: expected a fraction in [0, 1]", t, nm,
                x->in_network_algbw_frac);
    }
    if (c->ntiers >= 1 && c->tier[c->ntiers - 1].domain_gpus != c->num_gpus)
        BAD("tier %d (%s): the outermost tier must hold the whole cluster (%lld GPUs), got %lld",
            c->ntiers - 1, c->tier[c->ntiers - 1].name, (long long)c->num_gpus,
            (long long)c->tier[c->ntiers - 1].domain_gpus);
#undef BAD
    return bad ? MP_ERR_INPUT : MP_OK;
}

/* ---- presets: examples/clusters/NAME.json, embedded by cmake/embed.cmake ---- */

static const struct mp_embedded_file *preset_find(const char *name)
{
    for (const struct mp_embedded_file *f = mp_embedded_clusters; f->name; f++)
        if (!strcmp(f->name, name))
            return f;
    return NULL;
}

const char *mp_cluster_preset_json(const char *name, size_t *len)
{
    const struct mp_embedded_file *f = name ? preset_find(name) : NULL;
    if (!f)
        return NULL;
    if (len)
        *len = f->len;
    return f->data;
}

size_t mp_cluster_preset_count(void)
{
    size_t n = 0;
    while (mp_embedded_clusters[n].name)
        n++;
    return n;
}

const char *mp_cluster_preset_name(size_t i)
{
    return i < mp_cluster_preset_count() ? mp_embedded_clusters[i].name : NULL;
}
