/* src/cli/cmd_collective.c — `meshplan collective`: an nccl-tests style table of one collective's
 * predicted time, algorithm and bus bandwidth, per message size, on a cluster.
 *
 *   meshplan collective --op all_reduce --gpu h100-sxm5-80gb --gpus 16 [--gpus-per-node 8]
 *       [--scale-out ib-ndr-400 | --cluster NODE|PRESET|FILE] [--sizes 8:8G[:2]]
 *       [--algo auto|nccl|ring,tree,...] [--type float] [--ranks N --stride S] [--csv|--json]
 *
 * Columns follow nccl-tests: size (bytes), count (elements; per rank for all_gather,
 * reduce_scatter and all_to_all), type, time (us), algbw and busbw (GB/s = 1e9 B/s), then the
 * algorithm and protocol chosen and the tier whose bandwidth bounds it.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MAX_SIZES 64

static const struct { const char *name; double bytes; } types[] = {
    {"float", 4}, {"half", 2}, {"bfloat16", 2}, {"double", 8}, {"int8", 1}, {"uint8", 1},
    {"int32", 4}, {"int64", 8},
};

/* --algo: auto, nccl, or a comma list of algorithm names. */
static int parse_algos(const char *s, unsigned *mask)
{
    if (!s || !strcmp(s, "auto")) {
        *mask = MP_ALGO_MASK_ALL;
        return 0;
    }
    if (!strcmp(s, "nccl")) {
        *mask = MP_ALGO_MASK_NCCL;
        return 0;
    }
    *mask = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        mp_coll_algo a;
        if (mp_coll_algo_parse(tok, &a) != MP_OK || a == MP_ALGO_AUTO) {
            fprintf(stderr, "meshplan: algo = \"%s\": expected auto, nccl, or a comma list of ", tok);
            for (int i = 1; i < MP_ALGO_COUNT; i++)
                fprintf(stderr, "%s%s", mp_coll_algo_name((mp_coll_algo)i), i + 1 < MP_ALGO_COUNT ? ", " : "\n");
            return EXIT_INPUT;
        }
        *mask |= MP_ALGO_BIT(a);
    }
    if (!*mask)
        return cli_fail("algo = \"%s\": expected at least one algorithm", s);
    return 0;
}

/* --sizes A[:B[:F]]: from A doubling (or times F) up to B. */
static int parse_sizes(const char *s, double *sizes, int *n)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", s);
    char *p2 = strchr(buf, ':'), *p3 = NULL;
    if (p2) {
        *p2++ = '\0';
        p3 = strchr(p2, ':');
        if (p3)
            *p3++ = '\0';
    }
    double a, b, f = 2.0;
    int rc;
    if ((rc = cli_parse_bytes("sizes (first)", buf, &a)))
        return rc;
    b = a;
    if (p2 && (rc = cli_parse_bytes("sizes (last)", p2, &b)))
        return rc;
    if (p3) {
        char *end;
        f = strtod(p3, &end);
        if (end == p3 || *end || !(f > 1.0) || f > 1e6)
            return cli_fail("sizes: factor \"%s\": expected a number > 1", p3);
    }
    if (b < a)
        return cli_fail("sizes = \"%s\": expected first <= last", s);
    *n = 0;
    for (double x = a; x <= b * (1.0 + 1e-12); x = x > 0 ? x * f : 1.0) {
        if (*n >= MAX_SIZES) {
            fprintf(stderr, "meshplan: sizes = \"%s\": more than %d sizes: expected a shorter range "
                            "or a larger factor\n", s, MAX_SIZES);
            return EXIT_INPUT;
        }
        sizes[(*n)++] = floor(x + 0.5);
    }
    return 0;
}

static const cli_option collective_opts[] = {
    CLI_OPT("--op", "OP", "the collective (default all_reduce): all_reduce, reduce_scatter, "
            "all_gather, all_to_all, broadcast, send_recv"),
    CLI_OPT("--gpu", "G", "the GPU, a catalog key; or give --cluster"),
    CLI_OPT("--gpus", "N", "GPUs of the cluster; or the --cluster file's count"),
    CLI_OPT_GPUS_PER_NODE,
    CLI_OPT_SCALE_OUT,
    CLI_OPT("--cluster", "C", "the wiring: a catalog node, a shipped cluster or a description file"),
    CLI_OPT_CATALOG,
    CLI_OPT("--sizes", "A:B[:F]", "message sizes from A to B bytes, times F each row (default "
            "8:8G:2; K, M, G suffixes)"),
    CLI_OPT("--algo", "ALGOS", "auto (default), nccl (NCCL's algorithms only) or a comma list: "
            "ring, tree, hierarchical, in_network, direct, pairwise, p2p, flat_ring"),
    CLI_OPT("--type", "T", "element type: float (default), half, bfloat16, double, int8, uint8, "
            "int32, int64"),
    CLI_OPT("--ranks", "N", "ranks in the group (default: every GPU / stride)"),
    CLI_OPT("--stride", "S", "rank stride of the group (default 1)"),
    CLI_OPT_CSV,
    CLI_OPT_JSON,
    CLI_END,
};

const cli_command cli_cmd_collective = {
    "collective", "an nccl-tests style table of one collective per message size: time, algbw, "
    "busbw, algorithm, the bounding tier",
    NULL, 0, collective_opts, NULL, cmd_collective,
};

int cmd_collective(int argc, char **argv)
{
    cli_args args;
    int rc = cli_parse_cmd(&cli_cmd_collective, argc, argv, &args);
    if (rc)
        return rc;
    const char *ops = cli_opt(&args, "--op") ? cli_opt(&args, "--op") : "all_reduce";
    const char *gpu = cli_opt(&args, "--gpu"), *cluster = cli_opt(&args, "--cluster");
    const char *type = cli_opt(&args, "--type") ? cli_opt(&args, "--type") : "float";
    int json = cli_flag(&args, "--json"), csv = cli_flag(&args, "--csv");
    if (json && csv)
        return cli_fail("collective: --csv and --json exclude each other%s", "");
    mp_coll_op op;
    if (mp_coll_op_parse(ops, &op) != MP_OK) {
        fprintf(stderr, "meshplan: op = \"%s\": expected one of ", ops);
        for (int i = 0; i < MP_COLL_OP_COUNT; i++)
            fprintf(stderr, "%s%s", mp_coll_op_name((mp_coll_op)i), i + 1 < MP_COLL_OP_COUNT ? ", " : "\n");
        return EXIT_INPUT;
    }
    unsigned mask;
    if ((rc = parse_algos(cli_opt(&args, "--algo"), &mask)))
        return rc;
    double tsize = 0;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(type, types[i].name))
            tsize = types[i].bytes;
    if (!tsize)
        return cli_fail("type = \"%s\": expected float, half, bfloat16, double, int8, uint8, int32 "
                        "or int64", type);
    double sizes[MAX_SIZES];
    int nsizes = 0;
    if ((rc = parse_sizes(cli_opt(&args, "--sizes") ? cli_opt(&args, "--sizes") : "8:8G", sizes,
                          &nsizes)))
        return rc;
    long long ngpus = 0, gpn = 0, ranks = 0, stride = 1;
    if (cli_opt(&args, "--gpus") &&
        (rc = cli_parse_count("gpus", cli_opt(&args, "--gpus"), 1, 1LL << 24, &ngpus)))
        return rc;
    if (cli_opt(&args, "--gpus-per-node") &&
        (rc = cli_parse_count("gpus-per-node", cli_opt(&args, "--gpus-per-node"), 1, 1 << 20, &gpn)))
        return rc;
    if (cli_opt(&args, "--ranks") &&
        (rc = cli_parse_count("ranks", cli_opt(&args, "--ranks"), 1, 1LL << 24, &ranks)))
        return rc;
    if (cli_opt(&args, "--stride") &&
        (rc = cli_parse_count("stride", cli_opt(&args, "--stride"), 1, 1LL << 24, &stride)))
        return rc;
    if (cluster && (gpn || cli_opt(&args, "--scale-out")))
        return cli_fail("collective: --gpus-per-node and --scale-out describe the cluster: give "
                        "them in the --cluster file instead%s", "");
    if (!cluster && !gpu)
        return cli_fail("collective: --gpu (with --gpus) or --cluster is required%s", "");
    if (!cluster && !ngpus)
        return cli_fail("collective: --gpus is required%s", "");

    mp_catalog *cat = NULL;
    if ((rc = cli_load_catalog(&args, &cat)))
        return rc;
    mp_cluster c;
    if (cluster) {
        rc = cli_load_cluster(cat, cluster, ngpus, gpu, &c);
    } else {
        mp_diag d = {0};
        mp_status st = mp_cluster_from_catalog(cat, gpu, ngpus, (int)gpn,
                                               cli_opt(&args, "--scale-out"), &c, &d);
        cli_print_diag(&d);
        rc = cli_exit_for(st);
    }
    mp_catalog_destroy(cat);
    if (rc)
        return rc;
    if (!ranks)
        ranks = c.num_gpus / stride;
    if (ranks < 1 || (ranks - 1) * stride >= c.num_gpus) {
        fprintf(stderr, "meshplan: ranks = %lld, stride = %lld: the group does not fit in %lld "
                        "GPUs\n", ranks, stride, (long long)c.num_gpus);
        return EXIT_INPUT;
    }
    mp_group g = {ranks, stride};

    int congested = 0;
    for (int t = 0; t < c.ntiers; t++)
        congested |= c.tier[t].oversubscription > 1.0 || c.tier[t].background_load_frac > 0.0;
    json_t *jrows = json_array();
    if (csv) {
        printf("bytes,count,type,time_us,algbw_GBps,busbw_GBps,algorithm,protocol,bound_tier,"
               "bound_link%s\n", congested ? ",congested_tier,congestion_us,blind_algorithm,saved_us" : "");
    } else if (!json) {
        printf("# meshplan collective: %s over %lld ranks (stride %lld) of %s\n", mp_coll_op_name(op),
               ranks, stride, c.name);
        for (int t = 0; t < c.ntiers; t++) {
            const mp_tier *x = &c.tier[t];
            printf("#   tier %d %-10s %-12s %6lld GPUs/domain %8.2f GB/s/GPU x %.2f, %5.1f us",
                   t, x->name, x->link, (long long)x->domain_gpus, x->bw_Bps / 1e9,
                   x->efficiency_frac, x->latency_s * 1e6);
            if (x->oversubscription > 1.0)
                printf(", %.3g:1", x->oversubscription);
            if (x->background_load_frac > 0.0)
                printf(", %.0f%% background", 100.0 * x->background_load_frac);
            printf("\n");
        }
        printf("#%13s %12s %8s %11s %12s %12s  %-22s %s\n", "size(B)", "count", "type", "time(us)",
               "algbw(GB/s)", "busbw(GB/s)", "algorithm", "bound by");
    }
    int rcode = 0;
    for (int i = 0; i < nsizes; i++) {
        mp_coll_cost cc;
        mp_status st = mp_coll_time_among(&c, op, sizes[i], g, mask, &cc);
        if (st != MP_OK) {
            fprintf(stderr, "meshplan: algo = \"%s\": does not apply to %s over %lld ranks on this "
                            "cluster\n", cli_opt(&args, "--algo") ? cli_opt(&args, "--algo") : "auto",
                    mp_coll_op_name(op), ranks);
            rcode = EXIT_INPUT;
            break;
        }
        double per_rank = (op == MP_COLL_ALL_GATHER || op == MP_COLL_REDUCE_SCATTER ||
                           op == MP_COLL_ALL_TO_ALL) ? (double)ranks : 1.0;
        double count = floor(sizes[i] / tsize / per_rank);
        double t = cc.total_s;
        double algbw = t > 0 ? sizes[i] / t / 1e9 : 0.0;
        double busbw = algbw * mp_coll_busbw_factor(op, ranks);
        int bt = cc.bottleneck_tier;
        const char *bound = bt >= 0 && bt < c.ntiers ? c.tier[bt].name : "-";
        const char *blink = bt >= 0 && bt < c.ntiers ? c.tier[bt].link : "-";
        char algo[48];
        snprintf(algo, sizeof algo, "%s/%s", mp_coll_algo_name(cc.algo), mp_coll_proto_name(cc.proto));
        if (cc.algo == MP_ALGO_HIERARCHICAL && cc.split_tier > 0)
            snprintf(algo + strlen(algo), sizeof algo - strlen(algo), "@%d", cc.split_tier);
        if (json) {
            json_t *r = json_pack("{s:f,s:f,s:s,s:f,s:f,s:f,s:s,s:s,s:f,s:f,s:i,s:s}", "bytes",
                                  sizes[i], "count", count, "type", type, "time_us", t * 1e6,
                                  "algbw_GBps", algbw, "busbw_GBps", busbw, "algorithm",
                                  mp_coll_algo_name(cc.algo), "protocol", mp_coll_proto_name(cc.proto),
                                  "latency_us", cc.latency_s * 1e6, "bandwidth_us",
                                  cc.bandwidth_s * 1e6, "bound_tier", bt, "bound_link", blink);
            if (cc.split_tier > 0)
                json_object_set_new(r, "split_tier", json_integer(cc.split_tier));
            if (congested) {
                json_object_set_new(r, "congested_tier", json_integer(cc.congested_tier));
                json_object_set_new(r, "congestion_us", json_real(cc.congestion_s * 1e6));
                json_object_set_new(r, "blind_algorithm", json_string(mp_coll_algo_name(cc.blind_algo)));
                json_object_set_new(r, "saved_us", json_real(cc.saved_s * 1e6));
            }
            json_array_append_new(jrows, r);
        } else if (csv) {
            printf("%.0f,%.0f,%s,%.3f,%.4f,%.4f,%s,%s,%d,%s", sizes[i], count, type, t * 1e6, algbw,
                   busbw, mp_coll_algo_name(cc.algo), mp_coll_proto_name(cc.proto), bt, blink);
            if (congested)
                printf(",%d,%.3f,%s,%.3f", cc.congested_tier, cc.congestion_s * 1e6,
                       mp_coll_algo_name(cc.blind_algo), cc.saved_s * 1e6);
            printf("\n");
        } else {
            printf(" %13.0f %12.0f %8s %11.2f %12.2f %12.2f  %-22s %s (%s)", sizes[i], count, type,
                   t * 1e6, algbw, busbw, algo, bound, blink);
            if (cc.congested_tier >= 0)
                printf("; congested %s +%.1f us", c.tier[cc.congested_tier].name, cc.congestion_s * 1e6);
            if (cc.saved_s > 0)
                printf("; saved %.1f us vs %s", cc.saved_s * 1e6, mp_coll_algo_name(cc.blind_algo));
            printf("\n");
        }
    }
    if (json && !rcode) {
        json_t *o = json_pack("{s:s,s:I,s:I,s:s,s:o}", "op", mp_coll_op_name(op), "ranks",
                              (json_int_t)ranks, "stride", (json_int_t)stride, "cluster", c.name,
                              "rows", jrows);
        rcode = cli_print_json(o, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
    } else {
        json_decref(jrows);
    }
    return rcode;
}
