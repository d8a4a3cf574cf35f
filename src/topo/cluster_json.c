/* src/topo/cluster_json.c — read a cluster description (docs/cluster.md) into mp_cluster tiers.
 *
 * A description names a GPU and a list of tiers, innermost first: the scale-up domain, then the
 * scale-out tiers (NICs and leaf switches, spines, ...) and WAN links between islands. Each tier
 * either names a catalog link (links.json) and overrides some of its numbers, or gives them all.
 * The per-GPU bandwidth of each tier is derived here:
 *   scale-up:            the link's per-GPU bandwidth;
 *   scale-out with link: NIC ports per GPU x port bandwidth (8 x 400G for 8 GPUs: 50 GB/s);
 *   scale-out without:   the tier below's per-GPU bandwidth (a non-blocking switch layer), to be
 *                        divided by this tier's oversubscription when costed;
 *   wan:                 links per island x link bandwidth / GPUs of one island.
 * Every problem is reported with the tier, the field, the value and what was expected; nothing is
 * half-built on error. Sizes: at most MP_MAX_TIERS tiers, a description of a few KiB.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "meshplan/topo.h"

#include "catalog/bounds.h"
#include "json_reader.h"

typedef mp_jreader jreader; /* where: "tiers[1] (leaf)" or "cluster" */
#define jbad mp_jr_bad
#define jnum mp_jr_num
#define jint mp_jr_int
#define jbool mp_jr_bool
#define jstr mp_jr_str
#define check_keys mp_jr_check_keys

static const char *const tier_keys[] = {
    "name", "kind", "link", "domain_gpus_count", "link_bw_Bps", "latency_s", "efficiency_frac",
    "in_network_reduction", "in_network_algbw_frac", "topology", "pcie_p2p",
    "nics_per_gpu_count", "nics_per_node_count", "rail_optimized", "planes_count",
    "oversubscription", "background_load_frac", "links_count", "source", "notes", NULL};

/* What a tier asked for that can only be resolved once the domains are known. */
typedef struct {
    int64_t domain_req; /* 0 = whole cluster */
    int64_t links;      /* wan: links per island */
    double nics_per_gpu; /* 0 = not given */
    int64_t nics_per_node; /* 0 = not given */
    int inherit;        /* switch layer: per-GPU bandwidth of the tier below */
} tier_spec;

static const char *const top_keys[] = {"key", "name", "gpu", "num_gpus_count", "power_overhead_W",
                                       "tiers", "source", "notes", NULL};

/* One tier; `below` is the tier under it (NULL for tier 0). domain_req: the domain size asked
 * for (0 = whole cluster). Returns the number of problems. */

static int parse_tier(jreader *r, const mp_catalog *cat, const json_t *o, int t,
                      const mp_tier *below, mp_tier *x, tier_spec *sp, mp_status *nf)
{
    int e0 = r->errors;
    memset(x, 0, sizeof *x);
    x->oversubscription = 1.0;
    x->planes = 1;
    check_keys(r, o, tier_keys);
    char kind[16] = "";
    if (!jstr(r, o, "kind", kind, sizeof kind))
        if (!json_object_get(o, "kind"))
            jbad(r, "kind", NULL, "scaleup, scaleout or wan");
    if (!strcmp(kind, "scaleup"))
        x->kind = MP_LINK_SCALEUP;
    else if (!strcmp(kind, "scaleout"))
        x->kind = MP_LINK_SCALEOUT;
    else if (!strcmp(kind, "wan"))
        x->kind = MP_LINK_WAN;
    else if (kind[0])
        jbad(r, "kind", json_object_get(o, "kind"), "scaleup, scaleout or wan");
    if (t == 0 && kind[0] && x->kind != MP_LINK_SCALEUP)
        jbad(r, "kind", json_object_get(o, "kind"), "scaleup for tier 0 (the scale-up domain)");
    if (t > 0 && x->kind == MP_LINK_SCALEUP)
        jbad(r, "kind", json_object_get(o, "kind"),
             "scaleout or wan above tier 0 (one scale-up domain per cluster)");
    if (!jstr(r, o, "name", x->name, sizeof x->name))
        snprintf(x->name, sizeof x->name, "%s", t == 0 ? "scale-up" : kind[0] ? kind : "tier");

    /* The link and its numbers. */
    char link[MP_KEY_CAP] = "";
    const mp_link *l = NULL;
    if (jstr(r, o, "link", link, sizeof link)) {
        l = mp_catalog_link(cat, link);
        if (!l) {
            mp_diag_add(r->diag, "%s: %s.link = \"%s\": not in the catalog (see `meshplan catalog "
                        "links`)", r->origin, r->where, link);
            r->errors++;
            *nf = MP_ERR_NOT_FOUND;
        } else if (kind[0] && (l->kind == MP_LINK_SCALEUP) != (x->kind == MP_LINK_SCALEUP)) {
            jbad(r, "link", json_object_get(o, "link"),
                 x->kind == MP_LINK_SCALEUP ? "a scale-up link for a scaleup tier"
                                            : "a NIC or WAN link for a scaleout or wan tier");
        }
    }
    double port_bw = 0, lat = -1, eff = 0, inr_frac = 0;
    int inr = 0;
    if (l) {
        mp_strlcpy(x->link, l->key, sizeof x->link);
        port_bw = l->bw_Bps;
        lat = l->latency_s;
        eff = l->efficiency_frac;
        inr = l->in_network_reduction;
        inr_frac = l->in_network_algbw_frac;
    }
    int inherit = !l && !json_object_get(o, "link_bw_Bps") && t > 0 && below &&
                  x->kind == MP_LINK_SCALEOUT && below->kind == MP_LINK_SCALEOUT;
    if (inherit) {
        /* A switch layer above a scale-out tier: same per-GPU line rate, same ports. */
        mp_strlcpy(x->link, below->link, sizeof x->link);
        port_bw = below->port_bw_Bps;
        lat = below->latency_s;
        eff = below->efficiency_frac;
        inr = below->in_network_reduction;
    }
    jnum(r, o, "link_bw_Bps", MP_BOUND_BW_MIN_BPS, 0, MP_BOUND_BW_MAX_BPS, &port_bw,
         "a positive number of " MP_BOUND_BW_TEXT);
    jnum(r, o, "latency_s", 0, 0, MP_BOUND_LATENCY_MAX_S, &lat, "a number of " MP_BOUND_LATENCY_TEXT);
    jnum(r, o, "efficiency_frac", 0, 1, 1, &eff, "a fraction in (0, 1]");
    jbool(r, o, "in_network_reduction", &inr);
    jnum(r, o, "in_network_algbw_frac", 0, 1, 1, &inr_frac, "a fraction in (0, 1]");
    if (!l && !inherit) {
        if (!(port_bw > 0) && !json_object_get(o, "link_bw_Bps"))
            jbad(r, "link", NULL, "a catalog link key, or link_bw_Bps, latency_s and efficiency_frac");
        if (lat < 0 && !json_object_get(o, "latency_s"))
            jbad(r, "latency_s", NULL, "a number of seconds (no link to take it from)");
        if (!(eff > 0) && !json_object_get(o, "efficiency_frac"))
            jbad(r, "efficiency_frac", NULL, "a fraction in (0, 1] (no link to take it from)");
    }
    if (!x->link[0])
        snprintf(x->link, sizeof x->link, "%s", x->name);
    x->port_bw_Bps = port_bw;
    x->latency_s = lat < 0 ? 0 : lat;
    x->efficiency_frac = eff;
    x->in_network_reduction = inr;
    x->in_network_algbw_frac = inr_frac;

    /* Domain. */
    memset(sp, 0, sizeof *sp);
    sp->inherit = inherit;
    if (!jint(r, o, "domain_gpus_count", 1, (int64_t)1 << 24, &sp->domain_req) && t == 0 &&
        !json_object_get(o, "domain_gpus_count"))
        jbad(r, "domain_gpus_count", NULL, "the GPUs of one scale-up domain (e.g. 8, 72)");

    /* Kind-specific fields. */
    char topo[16] = "";
    if (jstr(r, o, "topology", topo, sizeof topo)) {
        if (t != 0)
            jbad(r, "topology", json_object_get(o, "topology"), "no topology above tier 0");
        else if (!strcmp(topo, "switch"))
            x->topology = MP_SU_SWITCH;
        else if (!strcmp(topo, "mesh"))
            x->topology = MP_SU_MESH;
        else if (!strcmp(topo, "pcie"))
            x->topology = MP_SU_PCIE;
        else
            jbad(r, "topology", json_object_get(o, "topology"), "switch, mesh or pcie");
    }
    int p2p = 1;
    if (jbool(r, o, "pcie_p2p", &p2p) && !(t == 0 && x->topology == MP_SU_PCIE))
        jbad(r, "pcie_p2p", json_object_get(o, "pcie_p2p"), "pcie_p2p only with topology pcie");
    x->pcie_no_p2p = !p2p;

    int has_ng = jnum(r, o, "nics_per_gpu_count", 0, 1, 64, &sp->nics_per_gpu,
                      "a number in (0, 64]");
    int has_nn = jint(r, o, "nics_per_node_count", 1, 1 << 20, &sp->nics_per_node);
    if ((has_ng || has_nn || json_object_get(o, "nics_per_gpu_count") ||
         json_object_get(o, "nics_per_node_count")) && (x->kind != MP_LINK_SCALEOUT || inherit))
        jbad(r, has_ng ? "nics_per_gpu_count" : "nics_per_node_count", NULL,
             "NIC counts only on the scale-out tier that names its NIC link");
    if (has_ng && has_nn)
        jbad(r, "nics_per_node_count", json_object_get(o, "nics_per_node_count"),
             "either nics_per_gpu_count or nics_per_node_count, not both");
    jbool(r, o, "rail_optimized", &x->rail_optimized);
    if (inherit && below)
        x->rail_optimized = 0;
    int64_t planes = 1;
    jint(r, o, "planes_count", 1, 64, &planes);
    x->planes = (int)planes;
    jnum(r, o, "oversubscription", 1, 0, 1e6, &x->oversubscription, "a number >= 1 (2 for 2:1)");
    jnum(r, o, "background_load_frac", 0, 0, 0.99, &x->background_load_frac,
         "a fraction in [0, 0.99]");
    sp->links = 1;
    if (jint(r, o, "links_count", 1, 1 << 20, &sp->links) && x->kind != MP_LINK_WAN)
        jbad(r, "links_count", json_object_get(o, "links_count"), "links_count only on wan tiers");
    return r->errors - e0;
}

mp_status mp_cluster_from_json(const mp_catalog *cat, const char *json_text, size_t len,
                               const char *origin, int64_t num_gpus, mp_cluster *out,
                               mp_diag *diag)
{
    memset(out, 0, sizeof *out);
    if (!origin)
        origin = "cluster";
    json_t *root = mp_json_load(json_text, len, origin, diag);
    if (!root)
        return MP_ERR_PARSE;
    jreader r = {origin, "cluster", diag, 0, MP_OK};
    mp_status nf = MP_OK;
    mp_cluster c;
    memset(&c, 0, sizeof c);
    tier_spec spec[MP_MAX_TIERS];
    memset(spec, 0, sizeof spec);
    if (!json_is_object(root)) {
        mp_diag_add(diag, "%s: expected a JSON object with gpu and tiers (docs/cluster.md)", origin);
        json_decref(root);
        return MP_ERR_INPUT;
    }
    check_keys(&r, root, top_keys);
    char gpu[MP_KEY_CAP] = "";
    const mp_gpu *g = NULL;
    if (jstr(&r, root, "gpu", gpu, sizeof gpu)) {
        g = mp_catalog_gpu(cat, gpu);
        if (!g) {
            mp_diag_add(diag, "%s: cluster.gpu = \"%s\": not in the catalog (see `meshplan catalog "
                        "gpus`)", origin, gpu);
            r.errors++;
            nf = MP_ERR_NOT_FOUND;
        }
    } else if (!json_object_get(root, "gpu")) {
        jbad(&r, "gpu", NULL, "a catalog GPU key");
    }
    if (!jstr(&r, root, "name", c.name, sizeof c.name))
        mp_strlcpy(c.name, origin, sizeof c.name);
    int64_t file_gpus = 0;
    jint(&r, root, "num_gpus_count", 1, (int64_t)1 << 24, &file_gpus);
    double power = -1;
    jnum(&r, root, "power_overhead_W", 0, 0, MP_BOUND_OVERHEAD_POWER_MAX_W, &power,
         "a number of " MP_BOUND_OVERHEAD_POWER_TEXT);
    c.num_gpus = num_gpus > 0 ? num_gpus : file_gpus;
    if (c.num_gpus < 1 || c.num_gpus > ((int64_t)1 << 24)) {
        mp_diag_add(diag, "%s: the GPU count is missing: give --gpus or num_gpus_count", origin);
        r.errors++;
    }
    const json_t *tiers = json_object_get(root, "tiers");
    size_t nt = json_is_array(tiers) ? json_array_size(tiers) : 0;
    if (!json_is_array(tiers) || nt < 1 || nt > MP_MAX_TIERS) {
        char what[80];
        snprintf(what, sizeof what, "an array of 1 to %d tiers, innermost first", MP_MAX_TIERS);
        jbad(&r, "tiers", tiers, what);
        nt = 0;
    }
    for (size_t t = 0; t < nt; t++) {
        const json_t *o = json_array_get(tiers, t);
        snprintf(r.where, sizeof r.where, "tiers[%zu]", t);
        if (!json_is_object(o)) {
            jbad(&r, "(tier)", o, "an object");
            continue;
        }
        const json_t *nm = json_object_get(o, "name");
        if (json_is_string(nm))
            snprintf(r.where, sizeof r.where, "tiers[%zu] (%.40s)", t, json_string_value(nm));
        parse_tier(&r, cat, o, (int)t, t ? &c.tier[t - 1] : NULL, &c.tier[t], &spec[t], &nf);
    }
    c.ntiers = (int)nt;
    snprintf(r.where, sizeof r.where, "cluster");

    /* Domains: clip to the cluster, the outermost holds it all. */
    if (r.errors == 0 && nt > 0) {
        for (size_t t = 0; t < nt; t++) {
            int64_t q = spec[t].domain_req, d = q > 0 ? q : c.num_gpus;
            if (t + 1 == nt && q > 0 && q < c.num_gpus) {
                mp_diag_add(diag, "%s: tiers[%zu] (%s).domain_gpus_count = %lld: the outermost tier "
                            "must hold the whole cluster (%lld GPUs); omit it or add a tier above",
                            origin, t, c.tier[t].name, (long long)q, (long long)c.num_gpus);
                r.errors++;
            }
            c.tier[t].domain_gpus = d < c.num_gpus ? d : c.num_gpus;
        }
        c.gpus_per_node = (int)c.tier[0].domain_gpus;
        /* Per-GPU bandwidth at line rate, innermost first (a switch layer copies the tier below;
         * oversubscription is applied when costed). */
        for (size_t t = 0; t < nt; t++) {
            mp_tier *x = &c.tier[t];
            const tier_spec *q = &spec[t];
            if (x->kind == MP_LINK_SCALEUP) {
                x->bw_Bps = x->port_bw_Bps;
            } else if (x->kind == MP_LINK_SCALEOUT && q->inherit) {
                x->bw_Bps = c.tier[t - 1].bw_Bps;
                x->nics_per_gpu = c.tier[t - 1].nics_per_gpu;
                if (c.tier[t - 1].planes > x->planes)
                    x->planes = c.tier[t - 1].planes;
            } else if (x->kind == MP_LINK_SCALEOUT) {
                x->nics_per_gpu = q->nics_per_gpu > 0 ? q->nics_per_gpu
                                  : q->nics_per_node > 0 ? (double)q->nics_per_node / c.gpus_per_node
                                  : 1.0;
                x->bw_Bps = x->port_bw_Bps * x->nics_per_gpu;
            } else { /* wan: the island's links shared by its GPUs */
                x->bw_Bps = (double)q->links * x->port_bw_Bps / (double)c.tier[t - 1].domain_gpus;
            }
        }
        if (!g)
            r.errors++;
        else
            c.gpu = *g;
        if (r.errors == 0) {
            const mp_node *node = mp_catalog_node_for_gpu(cat, gpu);
            c.node_power_overhead_W = power >= 0 ? power
                                      : (node && node->gpus_per_node == c.gpus_per_node)
                                          ? node->power_overhead_W : 0.0;
            mp_diag cd = {0};
            if (mp_cluster_check(&c, &cd) != MP_OK) {
                mp_diag_add(diag, "%s: %s", origin, cd.text);
                r.errors++;
            }
        }
    }
    json_decref(root);
    if (r.errors)
        return nf != MP_OK ? nf : MP_ERR_INPUT;
    *out = c;
    return MP_OK;
}
