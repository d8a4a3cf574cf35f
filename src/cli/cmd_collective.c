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

/* --sizes A[:B[:F]]: from A doubling (or times F) up to B; A at least one element of tsize
 * bytes (a smaller message holds no element: nccl-tests starts at one too). */
static int parse_sizes(const char *s, double tsize, const char *type, double *sizes, int *n)
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
    if (a < tsize) {
        fprintf(stderr, "meshplan: sizes = \"%s\": the first size, %.0f B, holds no %s element (%.0f B): "
                        "expected sizes of at least %.0f B (--sizes %.0f%s%s)\n", s, a, type, tsize, tsize,
                tsize, p2 && tsize <= b ? ":" : "", p2 && tsize <= b ? p2 : "");
        return EXIT_INPUT;
    }
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
    CLI_OPT_CALIBRATION,
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

/* What the options ask for. */
typedef struct {
    mp_coll_op op;
    unsigned mask;            /* algorithms allowed */
    const char *algo;         /* --algo as given, for messages */
    const char *type;         /* element type name */
    double tsize;             /* its bytes */
    double sizes[MAX_SIZES];  /* message sizes, bytes */
    int nsizes;
    long long ngpus, gpn, ranks, stride;
    int json, csv;
} coll_job;

/* --op, --algo, --type, --sizes and the counts into j; 0 or EXIT_INPUT after printing. */
static int coll_read_opts(const cli_args *a, coll_job *j)
{
    int rc;
    const char *ops = cli_opt(a, "--op") ? cli_opt(a, "--op") : "all_reduce";
    j->type = cli_opt(a, "--type") ? cli_opt(a, "--type") : "float";
    j->algo = cli_opt(a, "--algo") ? cli_opt(a, "--algo") : "auto";
    j->json = cli_flag(a, "--json");
    j->csv = cli_flag(a, "--csv");
    if (j->json && j->csv)
        return cli_fail("collective: --csv and --json exclude each other%s", "");
    if (mp_coll_op_parse(ops, &j->op) != MP_OK) {
        fprintf(stderr, "meshplan: op = \"%s\": expected one of ", ops);
        const char *names[MP_COLL_OP_COUNT], *near[1];
        for (int i = 0; i < MP_COLL_OP_COUNT; i++) {
            names[i] = mp_coll_op_name((mp_coll_op)i);
            fprintf(stderr, "%s%s", names[i], i + 1 < MP_COLL_OP_COUNT ? ", " : "");
        }
        /* allreduce, all-reduce, AllReduce: NCCL's and nccl-tests' spellings of the same op */
        if (cli_nearest(ops, names, MP_COLL_OP_COUNT, near, 1))
            fprintf(stderr, "; did you mean %s?", near[0]);
        fputc('\n', stderr);
        return EXIT_INPUT;
    }
    if ((rc = parse_algos(cli_opt(a, "--algo"), &j->mask)))
        return rc;
    j->tsize = 0;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(j->type, types[i].name))
            j->tsize = types[i].bytes;
    if (!j->tsize)
        return cli_fail("type = \"%s\": expected float, half, bfloat16, double, int8, uint8, int32 "
                        "or int64", j->type);
    if ((rc = parse_sizes(cli_opt(a, "--sizes") ? cli_opt(a, "--sizes") : "8:8G", j->tsize, j->type,
                          j->sizes, &j->nsizes)))
        return rc;
    j->ngpus = 0, j->gpn = 0, j->ranks = 0, j->stride = 1;
    const char *v;
    if (((v = cli_opt(a, "--gpus")) && (rc = cli_parse_count("gpus", v, 1, 1LL << 24, &j->ngpus))) ||
        ((v = cli_opt(a, "--gpus-per-node")) &&
         (rc = cli_parse_count("gpus-per-node", v, 1, 1 << 20, &j->gpn))) ||
        ((v = cli_opt(a, "--ranks")) && (rc = cli_parse_count("ranks", v, 1, 1LL << 24, &j->ranks))) ||
        ((v = cli_opt(a, "--stride")) && (rc = cli_parse_count("stride", v, 1, 1LL << 24, &j->stride))))
        return rc;
    return 0;
}

/* The cluster from --cluster, or from --gpu and --gpus, and the group of --ranks and --stride
 * (all of it by default); 0 or an exit code after printing. */
static int coll_cluster(const cli_args *a, coll_job *j, mp_cluster *c)
{
    const char *gpu = cli_opt(a, "--gpu"), *cluster = cli_opt(a, "--cluster");
    if (cluster && (j->gpn || cli_opt(a, "--scale-out")))
        return cli_fail("collective: --gpus-per-node and --scale-out describe the cluster: give "
                        "them in the --cluster file instead%s", "");
    if (!cluster && !gpu)
        return cli_fail("collective: --gpu (with --gpus) or --cluster is required%s", "");
    if (!cluster && !j->ngpus)
        return cli_fail("collective: --gpus is required%s", "");
    mp_catalog *cat = NULL;
    int rc = cli_load_catalog(a, &cat);
    if (rc)
        return rc;
    if (cluster) {
        rc = cli_load_cluster(cat, cluster, j->ngpus, gpu, c);
    } else {
        mp_diag d = {0};
        mp_status st = mp_cluster_from_catalog(cat, gpu, j->ngpus, (int)j->gpn,
                                               cli_opt(a, "--scale-out"), c, &d);
        cli_print_diag(&d);
        rc = cli_exit_for(st);
    }
    mp_catalog_destroy(cat);
    if (rc)
        return rc;
    if (!cluster)
        cli_cal_cluster(c);
    if (!j->ranks)
        j->ranks = c->num_gpus / j->stride;
    if (j->ranks < 1 || (j->ranks - 1) * j->stride >= c->num_gpus) {
        fprintf(stderr, "meshplan: ranks = %lld, stride = %lld: the group does not fit in %lld "
                        "GPUs\n", j->ranks, j->stride, (long long)c->num_gpus);
        return EXIT_INPUT;
    }
    return 0;
}

/* The CSV header, or the text's: the cluster's tiers and the column names. */
static void coll_header(const coll_job *j, const mp_cluster *c, int congested)
{
    if (j->csv) {
        printf("bytes,count,type,time_us,algbw_GBps,busbw_GBps,algorithm,protocol,bound_tier,"
               "bound_link%s\n", congested ? ",congested_tier,congestion_us,blind_algorithm,saved_us" : "");
        return;
    }
    printf("# meshplan collective: %s over %lld ranks (stride %lld) of %s\n", mp_coll_op_name(j->op),
           j->ranks, j->stride, c->name);
    for (int t = 0; t < c->ntiers; t++) {
        const mp_tier *x = &c->tier[t];
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

/* One message size's figures, as every format prints them. */
typedef struct {
    double bytes, count, t, algbw, busbw;
    int bt;                   /* the bounding tier, -1 if none */
    const char *bound, *blink;
    char algo[48];            /* "ring/simple", "hierarchical/ll128@1" */
} coll_row;

static void coll_row_fill(const coll_job *j, const mp_cluster *c, double bytes,
                          const mp_coll_cost *cc, coll_row *r)
{
    const double per_rank = (j->op == MP_COLL_ALL_GATHER || j->op == MP_COLL_REDUCE_SCATTER ||
                             j->op == MP_COLL_ALL_TO_ALL) ? (double)j->ranks : 1.0;
    r->bytes = bytes;
    r->count = floor(bytes / j->tsize / per_rank);
    r->t = cc->total_s;
    r->algbw = r->t > 0 ? bytes / r->t / 1e9 : 0.0;
    r->busbw = r->algbw * mp_coll_busbw_factor(j->op, j->ranks);
    r->bt = cc->bottleneck_tier;
    r->bound = r->bt >= 0 && r->bt < c->ntiers ? c->tier[r->bt].name : "-";
    r->blink = r->bt >= 0 && r->bt < c->ntiers ? c->tier[r->bt].link : "-";
    snprintf(r->algo, sizeof r->algo, "%s/%s", mp_coll_algo_name(cc->algo), mp_coll_proto_name(cc->proto));
    if (cc->algo == MP_ALGO_HIERARCHICAL && cc->split_tier > 0)
        snprintf(r->algo + strlen(r->algo), sizeof r->algo - strlen(r->algo), "@%d", cc->split_tier);
}

static json_t *coll_row_json(const coll_job *j, const coll_row *r, const mp_coll_cost *cc,
                             int congested)
{
    json_t *o = json_pack("{s:f,s:f,s:s,s:f,s:f,s:f,s:s,s:s,s:f,s:f,s:i,s:s}", "bytes",
                          r->bytes, "count", r->count, "type", j->type, "time_us", r->t * 1e6,
                          "algbw_GBps", r->algbw, "busbw_GBps", r->busbw, "algorithm",
                          mp_coll_algo_name(cc->algo), "protocol", mp_coll_proto_name(cc->proto),
                          "latency_us", cc->latency_s * 1e6, "bandwidth_us",
                          cc->bandwidth_s * 1e6, "bound_tier", r->bt, "bound_link", r->blink);
    if (cc->split_tier > 0)
        json_object_set_new(o, "split_tier", json_integer(cc->split_tier));
    if (congested) {
        json_object_set_new(o, "congested_tier", json_integer(cc->congested_tier));
        json_object_set_new(o, "congestion_us", json_real(cc->congestion_s * 1e6));
        json_object_set_new(o, "blind_algorithm", json_string(mp_coll_algo_name(cc->blind_algo)));
        json_object_set_new(o, "saved_us", json_real(cc->saved_s * 1e6));
    }
    return o;
}

/* One row of the CSV or of the text table. */
static void coll_row_print(const coll_job *j, const mp_cluster *c, const coll_row *r,
                           const mp_coll_cost *cc, int congested)
{
    if (j->csv) {
        printf("%.0f,%.0f,%s,%.3f,%.4f,%.4f,%s,%s,%d,%s", r->bytes, r->count, j->type, r->t * 1e6,
               r->algbw, r->busbw, mp_coll_algo_name(cc->algo), mp_coll_proto_name(cc->proto),
               r->bt, r->blink);
        if (congested)
            printf(",%d,%.3f,%s,%.3f", cc->congested_tier, cc->congestion_s * 1e6,
                   mp_coll_algo_name(cc->blind_algo), cc->saved_s * 1e6);
        printf("\n");
        return;
    }
    printf(" %13.0f %12.0f %8s %11.2f %12.2f %12.2f  %-22s %s (%s)", r->bytes, r->count, j->type,
           r->t * 1e6, r->algbw, r->busbw, r->algo, r->bound, r->blink);
    if (cc->congested_tier >= 0)
        printf("; congested %s +%.1f us", c->tier[cc->congested_tier].name, cc->congestion_s * 1e6);
    if (cc->saved_s > 0)
        printf("; saved %.1f us vs %s", cc->saved_s * 1e6, mp_coll_algo_name(cc->blind_algo));
    printf("\n");
}

int cmd_collective(int argc, char **argv)
{
    cli_args args;
    coll_job j;
    mp_cluster c;
    int rc;
    if ((rc = cli_parse_cmd(&cli_cmd_collective, argc, argv, &args)) ||
        (rc = coll_read_opts(&args, &j)) || (rc = coll_cluster(&args, &j, &c)))
        return rc;
    const mp_group g = {j.ranks, j.stride};
    int congested = 0;
    for (int t = 0; t < c.ntiers; t++)
        congested |= c.tier[t].oversubscription > 1.0 || c.tier[t].background_load_frac > 0.0;
    if (!j.json)
        coll_header(&j, &c, congested);
    json_t *jrows = json_array();
    for (int i = 0; i < j.nsizes; i++) {
        mp_coll_cost cc;
        if (mp_coll_time_among(&c, j.op, j.sizes[i], g, j.mask, &cc) != MP_OK) {
            fprintf(stderr, "meshplan: algo = \"%s\": does not apply to %s over %lld ranks on this "
                            "cluster\n", j.algo, mp_coll_op_name(j.op), j.ranks);
            json_decref(jrows);
            return EXIT_INPUT;
        }
        coll_row r;
        coll_row_fill(&j, &c, j.sizes[i], &cc, &r);
        if (j.json)
            json_array_append_new(jrows, coll_row_json(&j, &r, &cc, congested));
        else
            coll_row_print(&j, &c, &r, &cc, congested);
    }
    if (!j.json) {
        json_decref(jrows);
        return 0;
    }
    json_t *o = json_pack("{s:s,s:I,s:I,s:s,s:o}", "op", mp_coll_op_name(j.op), "ranks",
                          (json_int_t)j.ranks, "stride", (json_int_t)j.stride, "cluster", c.name,
                          "rows", jrows);
    return cli_print_json(o, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
}

/* The job of `plot collective` (cmd_plot.c): the same reading of collective's options. */
int cli_collective_job(const cli_args *args, cli_coll_job *job)
{
    _Static_assert(CLI_COLL_MAX_SIZES == MAX_SIZES, "cli_coll_job holds collective's sizes");
    coll_job j;
    int rc;
    if ((rc = coll_read_opts(args, &j)) || (rc = coll_cluster(args, &j, &job->cluster)))
        return rc;
    job->op = j.op;
    job->mask = j.mask;
    job->type = j.type;
    job->tsize = j.tsize;
    memcpy(job->sizes, j.sizes, sizeof job->sizes);
    job->nsizes = j.nsizes;
    job->g = (mp_group){j.ranks, j.stride};
    return 0;
}
