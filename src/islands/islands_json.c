/* src/islands/islands_json.c — read an islands description (docs/cluster.md "Islands") into
 * mp_islands, or split a cluster whose outermost tier is `wan` into identical islands.
 *
 * An island is a cluster description of its own (topo.h mp_cluster_from_json: "gpu", "tiers",
 * ...), a catalog node key ("node") or a shipped cluster ("cluster"), with a GPU count; "count"
 * repeats it. WAN links are listed by the pair of islands or regions they join ("between"); the
 * most specific entry wins (island names over regions), "wan_default" covers the rest. Every
 * problem is reported with the island or link and the field; nothing is half-built on error.
 * Sizes: at most MP_MAX_ISLANDS islands and 256 link entries.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "meshplan/islands.h"

#include "catalog/bounds.h"
#include "json_reader.h"

typedef mp_jreader ireader; /* nf: MP_ERR_NOT_FOUND when a key was unknown */
#define ibad mp_jr_bad
#define inum mp_jr_num
#define iint mp_jr_int
#define istr mp_jr_str
#define icheck_keys mp_jr_check_keys

int mp_islands_json_is_islands(const char *text, size_t len)
{
    json_error_t err;
    json_t *root = json_loadb(text, len, 0, &err);
    int yes = root && json_is_object(root) && json_is_array(json_object_get(root, "islands"));
    json_decref(root);
    return yes;
}

/* ---- WAN links ------------------------------------------------------------------------- */

static const char *const link_keys[] = {"between", "link", "links_count", "link_bw_Bps",
                                        "latency_s", "efficiency_frac", "background_load_frac",
                                        "tcp_window_bytes", "loss_frac", "flows_per_gpu", "usd_per_GB",
                                        "source", "notes", NULL};

/* One link entry (between is read by the caller). */
static void parse_link(ireader *r, const mp_catalog *cat, const json_t *o, mp_wan_link *w)
{
    memset(w, 0, sizeof *w);
    icheck_keys(r, o, link_keys);
    w->present = 1;
    w->flows_per_gpu = 1.0;
    double port = 0, lat = -1, eff = 0;
    char key[MP_KEY_CAP] = "";
    if (istr(r, o, "link", key, sizeof key)) {
        const mp_link *l = mp_catalog_link(cat, key);
        if (!l) {
            mp_diag_add(r->diag, "%s: %s.link = \"%s\": not in the catalog (see `meshplan catalog "
                        "links`)", r->origin, r->where, key);
            r->errors++;
            r->nf = MP_ERR_NOT_FOUND;
        } else if (l->kind == MP_LINK_SCALEUP) {
            ibad(r, "link", json_object_get(o, "link"), "a WAN or NIC link, not a scale-up link");
        } else {
            port = l->bw_Bps;
            lat = l->latency_s;
            eff = l->efficiency_frac;
            mp_strlcpy(w->link, l->key, sizeof w->link);
        }
    }
    int has_bw = inum(r, o, "link_bw_Bps", MP_BOUND_BW_MIN_BPS, 0, MP_BOUND_BW_MAX_BPS, &port,
                      "a positive number per link of " MP_BOUND_BW_TEXT);
    int has_lat = inum(r, o, "latency_s", 0, 0, MP_BOUND_LATENCY_MAX_S, &lat,
                       "a one-way latency in " MP_BOUND_LATENCY_TEXT);
    int has_eff = inum(r, o, "efficiency_frac", 0, 1, 1, &eff, "a fraction in (0, 1]");
    if (!key[0]) {
        mp_strlcpy(w->link, "custom", sizeof w->link);
        if (!has_bw && !json_object_get(o, "link_bw_Bps"))
            ibad(r, "link", NULL, "a catalog link key, or link_bw_Bps, latency_s and efficiency_frac");
        if (!has_lat && !json_object_get(o, "latency_s"))
            ibad(r, "latency_s", NULL, "a one-way latency in seconds (no link to take it from)");
        if (!has_eff && !json_object_get(o, "efficiency_frac"))
            ibad(r, "efficiency_frac", NULL, "a fraction in (0, 1] (no link to take it from)");
    }
    int64_t links = 1;
    iint(r, o, "links_count", 1, 1 << 20, &links);
    w->bw_Bps = port * (double)links;
    w->latency_s = lat < 0 ? 0 : lat;
    w->efficiency_frac = eff;
    inum(r, o, "background_load_frac", 0, 0, 0.99, &w->background_load_frac, "a fraction in [0, 0.99]");
    inum(r, o, "tcp_window_bytes", 0, 0, 1e12, &w->tcp_window_bytes, "bytes >= 0 (0 = no window limit)");
    inum(r, o, "loss_frac", 0, 0, 0.1, &w->loss_frac, "a packet loss probability in [0, 0.1]");
    if (w->loss_frac > 0 && !(w->latency_s > 0))
        ibad(r, "loss_frac", json_object_get(o, "loss_frac"),
             "0 on a link without latency (TCP under loss is paced by the round trip: give latency_s > 0)");
    inum(r, o, "flows_per_gpu", 0, 1, 1024, &w->flows_per_gpu, "a number of flows in (0, 1024]");
    inum(r, o, "usd_per_GB", 0, 0, 1e4, &w->usd_per_GB, "US dollars per GB >= 0");
}

/* ---- islands ----------------------------------------------------------------------------- */

static const char *const island_keys[] = {
    "name", "region", "count", "node", "cluster", "straggler_factor", "uplink_Bps", "aggregator",
    /* a cluster description's own fields (docs/cluster.md) */
    "gpu", "num_gpus_count", "power_overhead_W", "tiers", "source", "notes", NULL};

static const char *const top_keys[] = {"name", "islands", "wan", "wan_default", "source", "notes",
                                       NULL};

/* Island entry o -> the cluster (num_gpus > 0 overrides the entry's count). */
static void island_cluster(ireader *r, const mp_catalog *cat, const json_t *o, int64_t num_gpus,
                           mp_cluster *c)
{
    char node[MP_KEY_CAP] = "", preset[MP_KEY_CAP] = "";
    int has_node = istr(r, o, "node", node, sizeof node);
    int has_preset = istr(r, o, "cluster", preset, sizeof preset);
    int has_tiers = json_object_get(o, "tiers") != NULL;
    if (has_node + has_preset + has_tiers != 1) {
        ibad(r, "node", json_object_get(o, "node"),
             "exactly one of node (a catalog node key), cluster (a shipped cluster) or tiers with gpu "
             "(a cluster description)");
        return;
    }
    int64_t n = num_gpus;
    if (n <= 0)
        iint(r, o, "num_gpus_count", 1, (int64_t)1 << 24, &n);
    mp_diag cd = {0};
    mp_status st;
    if (has_node) {
        if (!mp_catalog_node(cat, node)) {
            mp_diag_add(r->diag, "%s: %s.node = \"%s\": not in the catalog (see `meshplan catalog "
                        "nodes`)", r->origin, r->where, node);
            r->errors++;
            r->nf = MP_ERR_NOT_FOUND;
            return;
        }
        if (n <= 0) {
            ibad(r, "num_gpus_count", NULL, "the island's GPU count");
            return;
        }
        st = mp_cluster_from_node(cat, node, n, c, &cd);
    } else if (has_preset) {
        size_t len = 0;
        const char *text = mp_cluster_preset_json(preset, &len);
        if (!text || mp_islands_json_is_islands(text, len)) {
            ibad(r, "cluster", json_object_get(o, "cluster"), "a shipped cluster (docs/cluster.md 1.2)");
            return;
        }
        st = mp_cluster_from_json(cat, text, len, preset, n > 0 ? n : 0, c, &cd);
    } else {
        /* An inline cluster description: its own fields only. */
        json_t *sub = json_object();
        static const char *const ck[] = {"gpu", "num_gpus_count", "power_overhead_W", "tiers", "source", "notes", NULL};
        for (const char *const *k = ck; *k; k++) {
            json_t *v = json_object_get(o, *k);
            if (v)
                json_object_set(sub, *k, v);
        }
        json_object_set_new(sub, "name", json_string(r->where));
        char *txt = json_dumps(sub, JSON_COMPACT);
        json_decref(sub);
        if (!txt) {
            r->errors++;
            return;
        }
        st = mp_cluster_from_json(cat, txt, strlen(txt), r->where, n > 0 ? n : 0, c, &cd);
        free(txt);
    }
    if (st != MP_OK) {
        mp_diag_add(r->diag, "%s: %s: %s", r->origin, r->where, cd.text);
        r->errors++;
        if (st == MP_ERR_NOT_FOUND)
            r->nf = st;
    }
}

/* Specificity of a link entry's endpoints for islands a, b: 2 per island name matched, 1 per
 * region; -1 when it does not join them. */
static int link_match(const char e[2][MP_KEY_CAP], const mp_island *a, const mp_island *b)
{
    int best = -1;
    for (int flip = 0; flip < 2; flip++) {
        const mp_island *x = flip ? b : a, *y = flip ? a : b;
        int sx = !strcmp(e[0], x->name) ? 2 : !strcmp(e[0], x->region) ? 1 : -1;
        int sy = !strcmp(e[1], y->name) ? 2 : !strcmp(e[1], y->region) ? 1 : -1;
        if (sx > 0 && sy > 0 && sx + sy > best)
            best = sx + sy;
    }
    return best;
}

#define MP_MAX_LINK_ENTRIES 256

/* The "islands" array: each entry's cluster, expanded by its count; r->errors counts what is
 * wrong. Returns 1 when the description cannot be read further (no array, too many islands). */
static int parse_island_list(ireader *rp, const mp_catalog *cat, const json_t *root, mp_islands *isl,
                             int64_t island_gpus, const char *only_island)
{
    const char *origin = rp->origin;
    mp_diag *diag = rp->diag;
    int only_found = 0;
    const json_t *arr = json_object_get(root, "islands");
    if (!json_is_array(arr) || json_array_size(arr) == 0) {
        ibad(rp, "islands", arr, "a non-empty array of islands");
        return 1;
    }
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const json_t *o = json_array_get(arr, i);
        snprintf(rp->where, sizeof rp->where, "islands[%zu]", i);
        if (!json_is_object(o)) {
            ibad(rp, "(island)", o, "an object");
            continue;
        }
        char base[MP_KEY_CAP] = "";
        if (!istr(rp, o, "name", base, sizeof base - 8)) {
            if (!json_object_get(o, "name"))
                ibad(rp, "name", NULL, "the island's name");
            continue;
        }
        snprintf(rp->where, sizeof rp->where, "islands[%zu] (%.40s)", i, base);
        icheck_keys(rp, o, island_keys);
        int64_t count = 1;
        iint(rp, o, "count", 1, MP_MAX_ISLANDS, &count);
        mp_island proto;
        memset(&proto, 0, sizeof proto);
        if (!istr(rp, o, "region", proto.region, sizeof proto.region))
            mp_strlcpy(proto.region, base, sizeof proto.region);
        proto.straggler_factor = 1.0;
        inum(rp, o, "straggler_factor", 1, 0, 100, &proto.straggler_factor,
             "a step-time multiplier in [1, 100] (1 = as predicted)");
        inum(rp, o, "uplink_Bps", MP_BOUND_BW_MIN_BPS, 0, MP_BOUND_BW_MAX_BPS, &proto.uplink_Bps,
             "the island's WAN capacity per direction in " MP_BOUND_BW_TEXT);
        const json_t *ag = json_object_get(o, "aggregator");
        if (ag && !json_is_boolean(ag))
            ibad(rp, "aggregator", ag, "true or false");
        proto.aggregator = json_is_true(ag);
        int scaled = island_gpus > 0 && (!only_island || !strcmp(only_island, base));
        if (only_island && !strcmp(only_island, base))
            only_found = 1;
        int e0 = rp->errors;
        island_cluster(rp, cat, o, scaled ? island_gpus : 0, &proto.cluster);
        if (rp->errors > e0)
            continue;
        for (int64_t k = 0; k < count; k++) {
            if (isl->n >= MP_MAX_ISLANDS) {
                mp_diag_add(diag, "%s: more than %d islands", origin, MP_MAX_ISLANDS);
                rp->errors++;
                return 1;
            }
            mp_island *x = &isl->island[isl->n];
            *x = proto;
            if (count > 1)
                snprintf(x->name, sizeof x->name, "%.36s-%d", base, (int)(k + 1));
            else
                mp_strlcpy(x->name, base, sizeof x->name);
            for (int j = 0; j < isl->n; j++)
                if (!strcmp(isl->island[j].name, x->name)) {
                    mp_diag_add(diag, "%s: %s: island name \"%s\" given twice", origin, rp->where, x->name);
                    rp->errors++;
                }
            isl->n++;
        }
    }
    if (only_island && !only_found) {
        mp_diag_add(diag, "%s: island \"%s\": not an island of this description (the names in "
                    "\"islands\" before expansion by count)", origin, only_island);
        rp->errors++;
    }

    return 0;
}

/* "wan_default" into *def (*has_def) and the "wan" entries (their two ends) into entries, ends
 * and *nent; r->errors counts what is wrong. */
static void parse_wan_list(ireader *rp, const mp_catalog *cat, const json_t *root, const mp_islands *isl,
                           mp_wan_link *entries, char (*ends)[2][MP_KEY_CAP], int *nent,
                           mp_wan_link *def, int *has_def)
{
    const json_t *dflt = json_object_get(root, "wan_default");
    if (dflt) {
        snprintf(rp->where, sizeof rp->where, "wan_default");
        if (!json_is_object(dflt)) {
            ibad(rp, "(link)", dflt, "an object");
        } else {
            if (json_object_get(dflt, "between"))
                ibad(rp, "between", json_object_get(dflt, "between"), "no between in wan_default");
            parse_link(rp, cat, dflt, def);
            *has_def = 1;
        }
    }
    const json_t *wan = json_object_get(root, "wan");
    if (wan && !json_is_array(wan)) {
        snprintf(rp->where, sizeof rp->where, "islands description");
        ibad(rp, "wan", wan, "an array of links");
    } else if (wan) {
        for (size_t i = 0; i < json_array_size(wan); i++) {
            const json_t *o = json_array_get(wan, i);
            snprintf(rp->where, sizeof rp->where, "wan[%zu]", i);
            if (!json_is_object(o)) {
                ibad(rp, "(link)", o, "an object");
                continue;
            }
            if (*nent >= MP_MAX_LINK_ENTRIES) {
                ibad(rp, "(link)", NULL, "at most 256 link entries");
                break;
            }
            const json_t *bt = json_object_get(o, "between");
            if (!json_is_array(bt) || json_array_size(bt) != 2 ||
                !json_is_string(json_array_get(bt, 0)) || !json_is_string(json_array_get(bt, 1))) {
                ibad(rp, "between", bt, "two island or region names, e.g. [\"us\", \"eu\"]");
                continue;
            }
            int known = 1;
            for (int e = 0; e < 2; e++) {
                const char *nm = json_string_value(json_array_get(bt, (size_t)e));
                mp_strlcpy(ends[*nent][e], nm, MP_KEY_CAP);
                int found = 0;
                for (int j = 0; j < isl->n; j++)
                    if (!strcmp(isl->island[j].name, nm) || !strcmp(isl->island[j].region, nm))
                        found = 1;
                if (!found) {
                    char what[96];
                    snprintf(what, sizeof what, "island or region names (\"%.40s\" is neither)", nm);
                    ibad(rp, "between", bt, what);
                    known = 0;
                }
            }
            parse_link(rp, cat, o, &entries[*nent]);
            if (known)
                (*nent)++;
        }
    }
}

/* Each pair of islands' link: the most specific "wan" entry naming both (islands before
 * regions), else wan_default. 0, or 1 with the pair named when none joins them. */
static int assign_links(ireader *rp, mp_islands *isl, const mp_wan_link *entries,
                        char (*ends)[2][MP_KEY_CAP], int nent, const mp_wan_link *def, int has_def)
{
    const char *origin = rp->origin;
    mp_diag *diag = rp->diag;
    for (int a = 0; a < isl->n; a++)
        for (int b = a + 1; b < isl->n; b++) {
            int best = -1, bi = -1;
            for (int e = 0; e < nent; e++) {
                int s = link_match((const char (*)[MP_KEY_CAP])ends[e], &isl->island[a], &isl->island[b]);
                if (s > best) {
                    best = s;
                    bi = e;
                }
            }
            const mp_wan_link *w = bi >= 0 ? &entries[bi] : has_def ? def : NULL;
            if (!w) {
                mp_diag_add(diag, "%s: no WAN link joins islands \"%s\" and \"%s\": add one to \"wan\" "
                            "(\"between\": islands or regions) or give \"wan_default\"", origin,
                            isl->island[a].name, isl->island[b].name);
                rp->errors++;
                return 1;
            }
            isl->link[a][b] = isl->link[b][a] = *w;
        }
    return 0;
}

mp_status mp_islands_from_json(const mp_catalog *cat, const char *text, size_t len,
                               const char *origin, int64_t island_gpus, const char *only_island,
                               mp_islands **out, mp_diag *diag)
{
    *out = NULL;
    if (!origin)
        origin = "islands";
    json_t *root = mp_json_load(text, len, origin, diag);
    if (!root)
        return MP_ERR_PARSE;
    ireader r = {origin, "islands", diag, 0, MP_OK};
    mp_islands *isl = calloc(1, sizeof *isl);
    mp_wan_link *entries = calloc(MP_MAX_LINK_ENTRIES, sizeof *entries);
    char (*ends)[2][MP_KEY_CAP] = calloc(MP_MAX_LINK_ENTRIES, sizeof *ends);
    int nent = 0;
    if (!isl || !entries || !ends) {
        json_decref(root);
        free(isl);
        free(entries);
        free(ends);
        mp_diag_add(diag, "%s: out of memory", origin);
        return MP_ERR_NOMEM;
    }
    if (!json_is_object(root)) {
        mp_diag_add(diag, "%s: expected a JSON object with islands (docs/cluster.md \"Islands\")", origin);
        r.errors++;
        goto done;
    }
    snprintf(r.where, sizeof r.where, "islands description");
    icheck_keys(&r, root, top_keys);
    if (!istr(&r, root, "name", isl->name, sizeof isl->name))
        mp_strlcpy(isl->name, origin, sizeof isl->name);

    if (parse_island_list(&r, cat, root, isl, island_gpus, only_island))
        goto done;
    mp_wan_link def;
    int has_def = 0;
    memset(&def, 0, sizeof def);
    parse_wan_list(&r, cat, root, isl, entries, ends, &nent, &def, &has_def);
    if (r.errors)
        goto done;
    assign_links(&r, isl, entries, ends, nent, &def, has_def);
done:
    json_decref(root);
    free(entries);
    free(ends);
    if (r.errors) {
        free(isl);
        return r.nf != MP_OK ? r.nf : MP_ERR_INPUT;
    }
    *out = isl;
    return MP_OK;
}

mp_status mp_islands_from_cluster(const mp_cluster *c, mp_islands **out, mp_diag *diag)
{
    *out = NULL;
    mp_islands *isl = calloc(1, sizeof *isl);
    if (!isl) {
        mp_diag_add(diag, "islands: out of memory");
        return MP_ERR_NOMEM;
    }
    mp_strlcpy(isl->name, c->name, sizeof isl->name);
    const int T = c->ntiers - 1;
    if (T < 1 || c->tier[T].kind != MP_LINK_WAN) {
        isl->n = 1;
        isl->island[0].cluster = *c;
        mp_strlcpy(isl->island[0].name, "cluster", MP_KEY_CAP);
        mp_strlcpy(isl->island[0].region, "cluster", MP_KEY_CAP);
        isl->island[0].straggler_factor = 1.0;
        *out = isl;
        return MP_OK;
    }
    const mp_tier *w = &c->tier[T];
    const int64_t D = c->tier[T - 1].domain_gpus;
    const int64_t k = D > 0 ? c->num_gpus / D : 0;
    if (k < 1 || k > MP_MAX_ISLANDS || k * D != c->num_gpus) {
        mp_diag_add(diag, "%s: %lld GPUs in islands of %lld: expected 1 to %d whole islands",
                    c->name, (long long)c->num_gpus, (long long)D, MP_MAX_ISLANDS);
        free(isl);
        return MP_ERR_INPUT;
    }
    /* The wan tier's per-GPU bandwidth is its links per island shared by the island's GPUs
     * (cluster_json.c): the island's capacity is bw_Bps x D; it is also each pair's. */
    mp_wan_link l;
    memset(&l, 0, sizeof l);
    l.present = 1;
    mp_strlcpy(l.link, w->link, sizeof l.link);
    l.bw_Bps = w->bw_Bps * (double)D;
    l.latency_s = w->latency_s;
    l.efficiency_frac = w->efficiency_frac;
    l.background_load_frac = w->background_load_frac;
    l.flows_per_gpu = 1.0;
    isl->n = (int)k;
    for (int i = 0; i < isl->n; i++) {
        mp_island *x = &isl->island[i];
        x->cluster = *c;
        x->cluster.ntiers = T;
        x->cluster.num_gpus = D;
        for (int t = 0; t < T; t++)
            if (x->cluster.tier[t].domain_gpus > D)
                x->cluster.tier[t].domain_gpus = D;
        snprintf(x->name, sizeof x->name, "island-%d", i + 1);
        mp_strlcpy(x->region, x->name, sizeof x->region);
        x->straggler_factor = 1.0;
        x->uplink_Bps = l.bw_Bps;
        for (int j = 0; j < isl->n; j++)
            if (j != i)
                isl->link[i][j] = l;
    }
    *out = isl;
    return MP_OK;
}

void mp_islands_destroy(mp_islands *isl) { free(isl); }
