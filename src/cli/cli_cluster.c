/* src/cli/cli_cluster.c — resolve a --cluster value: a catalog node key (nodes.json), a shipped
 * preset (examples/clusters/NAME.json, embedded), or a cluster description file
 * (docs/cluster.md), in that order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

static void list_choices(const mp_catalog *cat)
{
    fprintf(stderr, "meshplan: expected a catalog node (");
    for (size_t i = 0; i < mp_catalog_node_count(cat); i++)
        fprintf(stderr, "%s%s", i ? ", " : "", mp_catalog_node_at(cat, i)->key);
    fprintf(stderr, "),\nmeshplan: a shipped cluster (");
    for (size_t i = 0; i < mp_cluster_preset_count(); i++)
        fprintf(stderr, "%s%s", i ? ", " : "", mp_cluster_preset_name(i));
    fprintf(stderr, ")\nmeshplan: or a cluster description file (docs/cluster.md)\n");
}

int cli_load_cluster(const mp_catalog *cat, const char *spec, long long ngpus,
                     const char *gpu_override, mp_cluster *out)
{
    mp_diag d = {0};
    mp_status st;
    if (mp_catalog_node(cat, spec)) {
        if (ngpus <= 0) {
            fprintf(stderr, "meshplan: cluster = \"%s\" is a node type: --gpus is required\n", spec);
            return EXIT_INPUT;
        }
        st = mp_cluster_from_node(cat, spec, ngpus, out, &d);
    } else {
        size_t len = 0;
        const char *text = mp_cluster_preset_json(spec, &len);
        char *buf = NULL;
        if (!text) {
            struct stat sb;
            if (stat(spec, &sb) != 0) {
                fprintf(stderr, "meshplan: cluster = \"%s\": not a catalog node, a shipped cluster "
                                "or a readable file\n", spec);
                list_choices(cat);
                return EXIT_INPUT;
            }
            st = cli_read_file(spec, &buf, &len, &d);
            if (st != MP_OK) {
                cli_print_diag(&d);
                return cli_exit_for(st);
            }
            text = buf;
        }
        st = mp_cluster_from_json(cat, text, len, spec, ngpus > 0 ? ngpus : 0, out, &d);
        free(buf);
    }
    if (st == MP_OK && gpu_override) {
        const mp_gpu *g = mp_catalog_gpu(cat, gpu_override);
        if (!g) {
            /* the nearest catalog keys, as --gpu alone suggests them */
            const char *names[512], *near[3];
            int n = 0;
            for (size_t i = 0; i < mp_catalog_gpu_count(cat) && n < 512; i++)
                names[n++] = mp_catalog_gpu_at(cat, i)->key;
            int k = cli_nearest(gpu_override, names, n, near, 3);
            char hint[256] = "";
            size_t used = 0;
            for (int i = 0; i < k && used < sizeof hint; i++)
                used += (size_t)snprintf(hint + used, sizeof hint - used, "%s%s%s",
                                         i ? (i + 1 < k ? ", " : " or ") : "; did you mean ", near[i],
                                         i + 1 == k ? "?" : "");
            mp_diag_add(&d, "gpu = \"%s\": not in the catalog (see `meshplan catalog gpus`)%s",
                        gpu_override, hint);
            st = MP_ERR_NOT_FOUND;
        } else {
            out->gpu = *g;
        }
    }
    if (st != MP_OK) {
        fprintf(stderr, "meshplan: cluster = \"%s\": not a valid cluster:\n", spec);
        cli_print_diag(&d);
        return cli_exit_for(st);
    }
    cli_cal_cluster(out);
    return 0;
}

int cli_one_cluster(const cli_args *a, const mp_catalog *cat, const char *cmd, long long ngpus,
                    mp_cluster *out)
{
    const char *spec = cli_opt(a, "--cluster"), *gpu = cli_opt(a, "--gpu");
    const char *gpn_s = cli_opt(a, "--gpus-per-node"), *so = cli_opt(a, "--scale-out");
    int rc;
    if (spec) {
        if (gpn_s || so) {
            fprintf(stderr, "meshplan: %s: --gpus-per-node and --scale-out describe the cluster: give "
                            "them in the --cluster file instead\n", cmd);
            return EXIT_INPUT;
        }
        if (cli_cluster_is_islands(spec)) {
            fprintf(stderr, "meshplan: %s: cluster = \"%s\" is an islands description: %s covers one "
                            "cluster (predict and islands-scale take islands; docs/islands.md)\n",
                    cmd, spec, cmd);
            return EXIT_INPUT;
        }
        return cli_load_cluster(cat, spec, ngpus, gpu, out);
    }
    if (!gpu) {
        fprintf(stderr, "meshplan: %s: --gpu (or --cluster) is required (meshplan %s --help)\n", cmd, cmd);
        return EXIT_INPUT;
    }
    long long gpn = 0;
    if (gpn_s && (rc = cli_parse_count("gpus-per-node", gpn_s, 1, 1 << 20, &gpn)))
        return rc;
    mp_diag d = {0};
    mp_status st = mp_cluster_from_catalog(cat, gpu, ngpus, (int)gpn, so, out, &d);
    if (st != MP_OK) {
        cli_print_diag(&d);
        return cli_exit_for(st);
    }
    cli_cal_cluster(out);
    return 0;
}

int cli_parse_bytes(const char *name, const char *s, double *out)
{
    char *end;
    double x = strtod(s, &end);
    double mult = 1.0;
    if (*end == 'K' || *end == 'k')
        mult = 1024.0, end++;
    else if (*end == 'M' || *end == 'm')
        mult = 1048576.0, end++;
    else if (*end == 'G' || *end == 'g')
        mult = 1073741824.0, end++;
    else if (*end == 'T' || *end == 't')
        mult = 1099511627776.0, end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (end == s || *end || !(x >= 0) || x * mult > 1e15) {
        fprintf(stderr, "meshplan: %s = \"%s\": expected a byte count such as 8, 64K, 256M or 8G "
                        "(K, M, G = powers of 1024), at most 1e15\n", name, s);
        return EXIT_INPUT;
    }
    *out = x * mult;
    return 0;
}
