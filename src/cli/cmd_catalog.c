/* src/cli/cmd_catalog.c — `meshplan catalog`: list GPUs, links, node types and models. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const cli_option catalog_opts[] = {
    CLI_OPT_CATALOG,
    CLI_OPT_JSON,
    CLI_FLAG("--csv", "print one kind (gpus, links, nodes or models) as CSV, one row per entry"),
    CLI_END,
};

const cli_command cli_cmd_catalog = {
    "catalog", "list the built-in GPUs, links, node types and models (with --catalog: and yours)",
    "[gpus|links|nodes|models]", 1, catalog_opts, NULL, cmd_catalog,
};

int cmd_catalog(int argc, char **argv)
{
    cli_args a;
    int rc = cli_parse_cmd(&cli_cmd_catalog, argc, argv, &a);
    if (rc)
        return rc;
    const char *what = a.npositional ? a.positional[0] : "all";
    const int csv = cli_flag(&a, "--csv"), json = cli_flag(&a, "--json") || csv;
    if (csv && cli_flag(&a, "--json"))
        return cli_fail("catalog: --json and --csv exclude each other%s", "");
    if (csv && !strcmp(what, "all"))
        return cli_fail("catalog: --csv writes one table: name it (gpus, links, nodes or models)%s", "");
    int all = !strcmp(what, "all");
    if (!all && strcmp(what, "gpus") && strcmp(what, "links") && strcmp(what, "nodes") &&
        strcmp(what, "models"))
        return cli_fail("catalog: \"%s\": expected gpus, links, nodes or models", what);
    mp_catalog *cat = NULL;
    if ((rc = cli_load_catalog(&a, &cat)))
        return rc;
    json_t *o = json_object();
    if (all || !strcmp(what, "gpus")) {
        json_t *arr = json_array();
        if (!json)
            printf("GPUs\n  %-20s %9s %10s %10s %10s %8s  %s\n", "key", "mem GiB", "HBM TB/s",
                   "bf16 TF/s", "fp8 TF/s", "TDP W", "scale-up");
        for (size_t i = 0; i < mp_catalog_gpu_count(cat); i++) {
            const mp_gpu *g = mp_catalog_gpu_at(cat, i);
            if (json)
                json_array_append_new(arr, json_pack("{s:s,s:s,s:f,s:f,s:f,s:f,s:f,s:s,s:s}", "key", g->key,
                    "name", g->name, "memory_bytes", g->memory_bytes, "mem_bw_Bps", g->mem_bw_Bps,
                    "bf16_flops_per_s", g->peak_flops_per_s[MP_DT_BF16], "fp8_flops_per_s",
                    g->peak_flops_per_s[MP_DT_FP8], "tdp_W", g->tdp_W, "scaleup_link", g->scaleup_link,
                    "source", g->source));
            else
                printf("  %-20s %9.1f %10.2f %10.0f %10.0f %8.0f  %s\n", g->key, g->memory_bytes / 1073741824.0,
                       g->mem_bw_Bps / 1e12, g->peak_flops_per_s[MP_DT_BF16] / 1e12,
                       g->peak_flops_per_s[MP_DT_FP8] / 1e12, g->tdp_W, g->scaleup_link);
        }
        json_object_set_new(o, "gpus", arr);
    }
    if (all || !strcmp(what, "links")) {
        static const char *kinds[] = {"scaleup", "scaleout", "wan"};
        json_t *arr = json_array();
        if (!json)
            printf("links\n  %-16s %-9s %10s %11s %6s %s\n", "key", "kind", "GB/s/dir", "latency us",
                   "eff", "in-network");
        for (size_t i = 0; i < mp_catalog_link_count(cat); i++) {
            const mp_link *l = mp_catalog_link_at(cat, i);
            if (json)
                json_array_append_new(arr, json_pack("{s:s,s:s,s:f,s:f,s:f,s:b,s:s}", "key", l->key,
                    "kind", kinds[l->kind], "bw_Bps", l->bw_Bps, "latency_s", l->latency_s,
                    "efficiency_frac", l->efficiency_frac, "in_network_reduction",
                    l->in_network_reduction, "source", l->source));
            else
                printf("  %-16s %-9s %10.1f %11.1f %6.2f %s\n", l->key, kinds[l->kind], l->bw_Bps / 1e9,
                       l->latency_s * 1e6, l->efficiency_frac, l->in_network_reduction ? "yes" : "no");
        }
        json_object_set_new(o, "links", arr);
    }
    if (all || !strcmp(what, "nodes")) {
        static const char *topos[] = {"switch", "mesh", "pcie"};
        json_t *arr = json_array();
        if (!json)
            printf("nodes\n  %-16s %-20s %5s %-14s %-7s %-12s %5s\n", "key", "gpu", "gpus", "scale-up",
                   "topo", "scale-out", "nics");
        for (size_t i = 0; i < mp_catalog_node_count(cat); i++) {
            const mp_node *nd = mp_catalog_node_at(cat, i);
            if (json)
                json_array_append_new(arr, json_pack("{s:s,s:s,s:i,s:s,s:s,s:s,s:i,s:s}", "key", nd->key,
                    "gpu", nd->gpu, "gpus_per_node", nd->gpus_per_node, "scaleup_link", nd->scaleup_link,
                    "scaleup_topology", topos[nd->scaleup_topology], "scaleout_link", nd->scaleout_link,
                    "nics_per_node", nd->nics_per_node, "source", nd->source));
            else
                printf("  %-16s %-20s %5d %-14s %-7s %-12s %5d\n", nd->key, nd->gpu, nd->gpus_per_node,
                       nd->scaleup_link, topos[nd->scaleup_topology], nd->scaleout_link, nd->nics_per_node);
        }
        json_object_set_new(o, "nodes", arr);
    }
    if (all || !strcmp(what, "models")) {
        json_t *arr = json_array();
        if (!json)
            printf("models\n  %-14s %9s %6s %7s %5s %4s %7s %4s %7s\n", "key", "params B", "layers",
                   "hidden", "heads", "kv", "ffn", "glu", "vocab");
        for (size_t i = 0; i < mp_catalog_model_count(cat); i++) {
            const mp_model *m = mp_catalog_model_at(cat, i);
            mp_param_count pc;
            mp_model_params(m, 1, &pc);
            if (json)
                json_array_append_new(arr, json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:b,s:I,s:s}", "key",
                    m->key, "name", m->name, "params", (json_int_t)pc.total, "layers",
                    (json_int_t)m->layers, "hidden", (json_int_t)m->hidden, "heads", (json_int_t)m->heads,
                    "kv_heads", (json_int_t)m->kv_heads, "ffn_hidden", (json_int_t)m->ffn_hidden, "glu",
                    m->glu, "vocab", (json_int_t)m->vocab, "source", m->source));
            else
                printf("  %-14s %9.2f %6lld %7lld %5lld %4lld %7lld %4s %7lld\n", m->key, pc.total / 1e9,
                       (long long)m->layers, (long long)m->hidden, (long long)m->heads,
                       (long long)m->kv_heads, (long long)m->ffn_hidden, m->glu ? "yes" : "no",
                       (long long)m->vocab);
        }
        json_object_set_new(o, "models", arr);
    }
    if (csv) {
        rc = cli_print_csv_table(json_object_get(o, what));
    } else if (json) {
        char *s = json_dumps(o, JSON_INDENT(2));
        if (s)
            printf("%s\n", s);
        free(s);
    }
    json_decref(o);
    mp_catalog_destroy(cat);
    return rc;
}

