/* src/mpi/probe_mpi.c — the measurements of `meshplan probe` over the ranks of mpirun (built only
 * with MESHPLAN_MPI; the library never sees mpi.h). docs/probe.md.
 *
 * 1. Nodes: MPI_Comm_split_type(SHARED) groups the ranks of one host; the node index is the rank
 *    of each node's first rank among the first ranks. Ranks are renumbered node by node
 *    (MPI_Comm_split with key node x ranks + local rank) so that a node is a block of consecutive
 *    ranks, as the cluster model places them (docs/cluster.md section 1), whatever --map-by did.
 * 2. Ping-pong (Hockney's method): rank A sends S bytes, B sends them back; one way = half the
 *    round trip. Inside node 0 (its first two ranks), between node 0 and node 1 (one pair), and
 *    every rank of node 0 with its peer on node 1 at once (the per-rank share of the node's NICs).
 * 3. Collectives over all ranks in nccl-tests' size convention (NVIDIA/nccl-tests
 *    doc/PERFORMANCE.md: all-reduce S = the buffer; all-gather S = the gathered buffer; all-to-all
 *    S = what each rank sends), and an all-reduce inside every node at once.
 * 4. Node-pair latencies for the switch inference (3 to CLI_PROBE_SWITCH_MAX_NODES nodes).
 * Every size: `warmup` untimed runs, then `iters` timed ones, each after a barrier; a run's time
 * is the slowest rank's (MPI_MAX over ranks, per iteration) and the size's time is the median
 * over the iterations: robust to a rank descheduled on a shared host, where nccl-tests' mean
 * is not. Buffers: GPU memory when a CUDA-aware MPI and a GPU are both present (compiled only
 * with MESHPLAN_HAVE_CUDA, never exercised on the machines this was written on), else host.
 */
#define _POSIX_C_SOURCE 200809L /* sysconf */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cli_probe.h"

#ifdef MESHPLAN_HAVE_CUDA
#include <cuda_runtime.h>
#include <mpi-ext.h> /* Open MPI: MPIX_CUDA_AWARE_SUPPORT, MPIX_Query_cuda_support */
#endif

enum { TAG_PP = 11, TAG_LAT = 12, TAG_X = 13 };

int cli_probe_mpi_init(int *rank, int *size)
{
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited && MPI_Init(NULL, NULL) != MPI_SUCCESS) {
        fprintf(stderr, "meshplan: probe: MPI_Init failed\n");
        return EXIT_INTERNAL;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    return 0;
}

void cli_probe_mpi_end(void)
{
    int inited = 0, fin = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&fin);
    if (inited && !fin)
        MPI_Finalize();
}

/* ---- buffers ------------------------------------------------------------------------------ */

typedef struct {
    char *send, *recv;
    size_t bytes;
    int gpu;
} bufs;

static int bufs_alloc(bufs *b, size_t bytes, int local_rank, char *what, size_t cap)
{
    memset(b, 0, sizeof *b);
    b->bytes = bytes;
#if defined(MESHPLAN_HAVE_CUDA) && defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    int ndev = 0;
    if (MPIX_Query_cuda_support() == 1 && cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0 &&
        cudaSetDevice(local_rank % ndev) == cudaSuccess &&
        cudaMalloc((void **)&b->send, bytes) == cudaSuccess) {
        if (cudaMalloc((void **)&b->recv, bytes) == cudaSuccess) {
            cudaMemset(b->send, 1, bytes);
            cudaMemset(b->recv, 0, bytes);
            b->gpu = 1;
            snprintf(what, cap, "GPU memory (CUDA-aware MPI, device %d of %d on each node)",
                     local_rank % ndev, ndev);
            return 0;
        }
        cudaFree(b->send);
        b->send = NULL;
    }
    snprintf(what, cap, "host memory (built with CUDA; no CUDA-aware MPI or no GPU at run time)");
#else
    (void)local_rank;
    snprintf(what, cap, "host memory (built without CUDA-aware MPI)");
#endif
    b->send = malloc(bytes);
    b->recv = malloc(bytes);
    if (!b->send || !b->recv)
        return EXIT_INTERNAL;
    memset(b->send, 1, bytes);
    memset(b->recv, 0, bytes);
    return 0;
}

static void bufs_free(bufs *b)
{
#ifdef MESHPLAN_HAVE_CUDA
    if (b->gpu) {
        cudaFree(b->send);
        cudaFree(b->recv);
        return;
    }
#endif
    free(b->send);
    free(b->recv);
}

/* ---- timing -------------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof v[0], cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Sizes first, first x mul, ... up to max: ping-pong 1, 4, 16, ... B; collectives 1 KiB, 2 KiB,
 * ... rounded down to a multiple of `unit` (4-byte floats split evenly over the ranks). */
static int make_sizes(double first, double max, double mul, double unit, double *out)
{
    int n = 0;
    for (double s = first; s <= max && n < CLI_PROBE_MAX_SIZES; s *= mul) {
        double b = unit > 1 ? unit * (double)(long long)(s / unit) : s;
        if (b >= (unit > 1 ? unit : 1) && (n == 0 || b > out[n - 1]))
            out[n++] = b;
    }
    return n;
}

/* One ping-pong sweep on comm: rank `me` pairs with partner (-1: idle), initiating when
 * initiator. Every rank of comm calls it. The sizes are interleaved (iteration outer, size
 * inner) so that a burst of load from other processes spreads over every size instead of
 * spoiling one. Rank 0 of comm gets, per size, the slowest pair's median one-way time. */
static void pingpong(MPI_Comm comm, const cli_probe_cfg *cfg, bufs *b, int partner, int initiator,
                     cli_probe_curve *out)
{
    int me;
    MPI_Comm_rank(comm, &me);
    double t[CLI_PROBE_MAX_SIZES] = {0}, tmax[CLI_PROBE_MAX_SIZES] = {0};
    int n = make_sizes(1, cfg->max_bytes, 4, 1, out->bytes);
    double *it = calloc((size_t)cfg->iters * CLI_PROBE_MAX_SIZES, sizeof *it);
    for (int i = -cfg->warmup; i < cfg->iters && it; i++)
        for (int k = 0; k < n; k++) {
            int cnt = (int)out->bytes[k];
            MPI_Barrier(comm);
            if (partner < 0)
                continue;
            double t0 = MPI_Wtime();
            if (initiator) {
                MPI_Send(b->send, cnt, MPI_BYTE, partner, TAG_PP, comm);
                MPI_Recv(b->recv, cnt, MPI_BYTE, partner, TAG_PP, comm, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(b->recv, cnt, MPI_BYTE, partner, TAG_PP, comm, MPI_STATUS_IGNORE);
                MPI_Send(b->send, cnt, MPI_BYTE, partner, TAG_PP, comm);
            }
            if (i >= 0)
                it[(size_t)k * cfg->iters + i] = 0.5 * (MPI_Wtime() - t0);
        }
    for (int k = 0; k < n && it; k++)
        t[k] = partner >= 0 && initiator ? median(it + (size_t)k * cfg->iters, cfg->iters) : 0;
    free(it);
    MPI_Reduce(t, tmax, n, MPI_DOUBLE, MPI_MAX, 0, comm);
    if (me == 0) {
        out->nsizes = n;
        memcpy(out->time_s, tmax, sizeof tmax);
    }
}

/* One collective of S bytes (nccl-tests' convention) on comm. */
static void run_coll(int op, MPI_Comm comm, int n, bufs *b, double S)
{
    int per = (int)(S / 4 / n); /* floats per rank's share */
    if (op == 0)
        MPI_Allreduce(b->send, b->recv, (int)(S / 4), MPI_FLOAT, MPI_SUM, comm);
    else if (op == 1)
        MPI_Allgather(b->send, per, MPI_FLOAT, b->recv, per, MPI_FLOAT, comm);
    else
        MPI_Alltoall(b->send, per, MPI_FLOAT, b->recv, per, MPI_FLOAT, comm);
}

/* A collective sweep (op 0 all-reduce, 1 all-gather, 2 all-to-all) on comm, sizes interleaved
 * as in pingpong; every rank of world calls it (comm may be a node's). Rank 0 of world gets the
 * slowest communicator's times. */
static void coll_sweep(int op, MPI_Comm comm, const cli_probe_cfg *cfg, bufs *b,
                       cli_probe_curve *out)
{
    int n, wr;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &wr);
    double t[CLI_PROBE_MAX_SIZES] = {0}, tmax[CLI_PROBE_MAX_SIZES] = {0};
    double sizes[CLI_PROBE_MAX_SIZES];
    int ns = make_sizes(1024, cfg->max_bytes, 2, 4.0 * n, sizes);
    size_t cells = (size_t)cfg->iters * CLI_PROBE_MAX_SIZES;
    double *it = calloc(cells, sizeof *it), *itmax = calloc(cells, sizeof *itmax);
    for (int i = -cfg->warmup; i < cfg->iters && it && itmax; i++)
        for (int k = 0; k < ns; k++) {
            MPI_Barrier(comm);
            double t0 = MPI_Wtime();
            run_coll(op, comm, n, b, sizes[k]);
            if (i >= 0)
                it[(size_t)k * cfg->iters + i] = MPI_Wtime() - t0;
        }
    if (it && itmax) {
        MPI_Allreduce(it, itmax, (int)cells, MPI_DOUBLE, MPI_MAX, comm);
        for (int k = 0; k < ns; k++)
            t[k] = median(itmax + (size_t)k * cfg->iters, cfg->iters);
    }
    free(it);
    free(itmax);
    MPI_Reduce(t, tmax, ns, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (wr == 0) {
        out->nsizes = ns;
        out->nranks = n;
        memcpy(out->bytes, sizes, sizeof sizes);
        memcpy(out->time_s, tmax, sizeof tmax);
    }
}

/* ---- nodes and switches -------------------------------------------------------------------- */

typedef struct {
    MPI_Comm node, leaders, ordered; /* leaders: MPI_COMM_NULL on non-first ranks */
    int node_index, local_rank, local_size;
} layout;

static void find_nodes(const cli_probe_cfg *cfg, layout *L, cli_probe_data *out)
{
    int wr, ws;
    MPI_Comm_rank(MPI_COMM_WORLD, &wr);
    MPI_Comm_size(MPI_COMM_WORLD, &ws);
    if (cfg->fake_ranks_per_node > 0)
        MPI_Comm_split(MPI_COMM_WORLD, wr / cfg->fake_ranks_per_node, wr, &L->node);
    else
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, wr, MPI_INFO_NULL, &L->node);
    MPI_Comm_rank(L->node, &L->local_rank);
    MPI_Comm_size(L->node, &L->local_size);
    MPI_Comm_split(MPI_COMM_WORLD, L->local_rank == 0 ? 0 : MPI_UNDEFINED, wr, &L->leaders);
    if (L->leaders != MPI_COMM_NULL)
        MPI_Comm_rank(L->leaders, &L->node_index);
    MPI_Bcast(&L->node_index, 1, MPI_INT, 0, L->node);
    int nn = 0, mn = 0, mx = 0;
    if (L->leaders != MPI_COMM_NULL)
        MPI_Comm_size(L->leaders, &nn);
    MPI_Bcast(&nn, 1, MPI_INT, 0, MPI_COMM_WORLD); /* world rank 0 is a leader */
    MPI_Allreduce(&L->local_size, &mn, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&L->local_size, &mx, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Comm_split(MPI_COMM_WORLD, 0, L->node_index * ws + L->local_rank, &L->ordered);
    /* Hostnames and hwloc summaries of the nodes, gathered from their first ranks. */
    char host[CLI_PROBE_HOST_CAP] = {0}, topo[CLI_PROBE_TOPO_CAP] = {0};
    int hl = 0;
    MPI_Get_processor_name(host, &hl);
    host[CLI_PROBE_HOST_CAP - 1] = 0;
    if (L->leaders != MPI_COMM_NULL) {
        cli_hwloc_summary(topo, CLI_PROBE_TOPO_CAP);
        if (nn <= CLI_PROBE_MAX_NODES) {
            MPI_Gather(host, CLI_PROBE_HOST_CAP, MPI_CHAR, wr == 0 ? out->hosts : NULL,
                       CLI_PROBE_HOST_CAP, MPI_CHAR, 0, L->leaders);
            MPI_Gather(topo, CLI_PROBE_TOPO_CAP, MPI_CHAR, wr == 0 ? out->topo : NULL,
                       CLI_PROBE_TOPO_CAP, MPI_CHAR, 0, L->leaders);
        }
    }
    /* The physical host, whatever the test-only split: ranks per host and its cores. */
    MPI_Comm host_comm;
    int hsize = 1, cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, wr, MPI_INFO_NULL, &host_comm);
    MPI_Comm_size(host_comm, &hsize);
    MPI_Comm_free(&host_comm);
    MPI_Allreduce(&hsize, &out->ranks_per_host_max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&cores, &out->cores_min, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    out->nranks = ws;
    out->nnodes = nn;
    out->ranks_per_node_min = mn;
    out->ranks_per_node_max = mx;
    out->ranks_per_node = mn == mx ? mn : 0;
}

/* Small-message latency between every pair of nodes' first ranks, one pair at a time. */
static void node_latencies(const cli_probe_cfg *cfg, layout *L, bufs *b, cli_probe_data *out)
{
    int nn = out->nnodes, wr;
    MPI_Comm_rank(MPI_COMM_WORLD, &wr);
    if (nn < 3 || nn > CLI_PROBE_SWITCH_MAX_NODES || L->leaders == MPI_COMM_NULL)
        return;
    double *row = calloc((size_t)nn * nn, sizeof *row), *all = NULL;
    double it[16];
    int me = L->node_index, reps = 16;
    for (int i = 0; i < nn && row; i++)
        for (int j = i + 1; j < nn; j++) {
            if (me == i || me == j) {
                int peer = me == i ? j : i;
                for (int r = -2; r < reps; r++) {
                    double t0 = MPI_Wtime();
                    if (me == i) {
                        MPI_Send(b->send, 8, MPI_BYTE, peer, TAG_LAT, L->leaders);
                        MPI_Recv(b->recv, 8, MPI_BYTE, peer, TAG_LAT, L->leaders, MPI_STATUS_IGNORE);
                    } else {
                        MPI_Recv(b->recv, 8, MPI_BYTE, peer, TAG_LAT, L->leaders, MPI_STATUS_IGNORE);
                        MPI_Send(b->send, 8, MPI_BYTE, peer, TAG_LAT, L->leaders);
                    }
                    if (r >= 0)
                        it[r] = 0.5 * (MPI_Wtime() - t0);
                }
                if (me == i)
                    row[(size_t)i * nn + j] = row[(size_t)j * nn + i] = median(it, reps);
            }
            MPI_Barrier(L->leaders);
        }
    (void)cfg;
    if (wr == 0)
        all = calloc((size_t)nn * nn, sizeof *all);
    MPI_Reduce(row, all, nn * nn, MPI_DOUBLE, MPI_MAX, 0, L->leaders);
    free(row);
    if (wr == 0)
        out->node_latency_s = all;
}

/* ---- the MPI model's sweep ------------------------------------------------------------------ */

/* The world all-reduce and the probes its MPI model is built from (cmd_probe.c fit_mpi_model),
 * interleaved in one loop: per iteration, every all-reduce size, then every size of the
 * exchange inside a node (each rank with its neighbour local rank ^ 1, every pair at once), the
 * exchange between nodes (each rank with the same local rank on node ^ 1), MPI_Reduce_local
 * (float sum) and memcpy, every rank at once after a barrier. Interleaving makes the held-out
 * curve and its inputs share the same load from other processes. Exchange and local sizes:
 * 64 B to --max-bytes by factors of 2 (the algorithms' steps move S, S/2, ..., S/p). A time
 * per iteration is the slowest rank's; rank 0 gets per size the median, the fastest and the
 * quartiles over the iterations. On GPU buffers the local probes are left out (the reduction
 * runs in a kernel, not measured here). */
enum { MS_AR, MS_XI, MS_XO, MS_CHN, MS_RED, MS_CPY, MS_N };

/* The chained exchange (MS_CHN): the partner sequence of recursive halving then doubling
 * (Rabenseifner; recursive doubling runs its first half), every step S bytes, back to back:
 * rank r < p2 (the largest power of two <= ranks) exchanges with r ^ mask for mask = 1, 2, ...,
 * p2/2, then p2/2, ..., 1; ranks beyond p2 take no part. */
static void chain_op(MPI_Comm comm, int r, int p2, bufs *b, int cnt)
{
    if (r >= p2)
        return;
    for (int up = 1; up >= 0; up--)
        for (int k = 0, mask = up ? 1 : p2 / 2; k < 30 && mask >= 1 && mask < p2;
             k++, mask = up ? mask * 2 : mask / 2)
            MPI_Sendrecv(b->send, cnt, MPI_BYTE, r ^ mask, TAG_X, b->recv, cnt, MPI_BYTE,
                         r ^ mask, TAG_X, comm, MPI_STATUS_IGNORE);
}

static void model_op(int c, MPI_Comm comm, int n, bufs *b, double S, int pi, int po)
{
    int cnt = (int)S, partner = c == MS_XI ? pi : po;
    if (c == MS_AR)
        run_coll(0, comm, n, b, S);
    else if (c == MS_CHN) {
        int r, p2 = 1;
        MPI_Comm_rank(comm, &r);
        while (p2 * 2 <= n)
            p2 *= 2;
        chain_op(comm, r, p2, b, cnt);
    } else if (c == MS_XI || c == MS_XO) {
        if (partner >= 0)
            MPI_Sendrecv(b->send, cnt, MPI_BYTE, partner, TAG_X, b->recv, cnt, MPI_BYTE, partner,
                         TAG_X, comm, MPI_STATUS_IGNORE);
    } else if (c == MS_RED)
        MPI_Reduce_local(b->send, b->recv, cnt / 4, MPI_FLOAT, MPI_SUM);
    else
        memcpy(b->recv, b->send, (size_t)cnt);
}

static void spread(double *v, int m, cli_probe_curve *cv, int k)
{
    cv->time_s[k] = median(v, m); /* sorts v: the fastest and the quartiles read from it */
    cv->min_s[k] = v[0];
    cv->q1_s[k] = v[(m - 1) / 4];
    cv->q3_s[k] = v[(3 * (m - 1)) / 4];
}

static void model_sweep(const cli_probe_cfg *cfg, layout *L, bufs *b, cli_probe_data *out)
{
    MPI_Comm comm = L->ordered;
    int n, r, ppn = out->ranks_per_node, nn = out->nnodes;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &r);
    cli_probe_curve *cv[MS_N] = {&out->ar_world, &out->xchg_intra, &out->xchg_inter,
                                 &out->xchg_chain, &out->reduce_local, &out->copy_local};
    double sizes[MS_N][CLI_PROBE_MAX_SIZES];
    int ns[MS_N];
    ns[MS_AR] = make_sizes(1024, cfg->max_bytes, 2, 4.0 * n, sizes[MS_AR]);
    for (int c = 1; c < MS_N; c++)
        ns[c] = make_sizes(64, cfg->max_bytes, 2, 4, sizes[c]);
    if (ppn < 2)
        ns[MS_XI] = 0;
    if (nn < 2)
        ns[MS_XO] = 0;
    if (b->gpu)
        ns[MS_RED] = ns[MS_CPY] = 0;
    /* The chained exchange only where the model uses it: ranks time-sliced (more on a host
     * than it has cores; every rank has both figures from find_nodes' all-reduces). Elsewhere
     * the sweep stays as it was, so its -n 2 figures are the ones recorded before it. */
    if (out->ranks_per_host_max <= out->cores_min)
        ns[MS_CHN] = 0;
    int local = r % ppn, node = r / ppn;
    int pi = (local ^ 1) < ppn ? node * ppn + (local ^ 1) : -1;
    int po = (node ^ 1) < nn ? (node ^ 1) * ppn + local : -1;
    size_t cells = (size_t)cfg->iters * CLI_PROBE_MAX_SIZES;
    double *it = calloc(MS_N * cells, sizeof *it), *mx = calloc(MS_N * cells, sizeof *mx);
    for (int i = -cfg->warmup; i < cfg->iters && it && mx; i++)
        for (int c = 0; c < MS_N; c++) {
            /* One untimed run of the curve's first size: the first operation after switching
             * kind ran 20-60 % slow in every curve here (code and buffers cold). */
            MPI_Barrier(comm);
            if (ns[c])
                model_op(c, comm, n, b, sizes[c][0], pi, po);
            for (int k = 0; k < ns[c]; k++) {
                MPI_Barrier(comm);
                double t0 = MPI_Wtime();
                model_op(c, comm, n, b, sizes[c][k], pi, po);
                if (i >= 0)
                    it[c * cells + (size_t)k * cfg->iters + i] = MPI_Wtime() - t0;
            }
        }
    if (it && mx)
        MPI_Reduce(it, mx, (int)(MS_N * cells), MPI_DOUBLE, MPI_MAX, 0, comm);
    for (int c = 0; r == 0 && it && mx && c < MS_N; c++) {
        cv[c]->nsizes = ns[c];
        int exchange = c == MS_XI || c == MS_XO; /* pairs of ranks; the others: every rank */
        cv[c]->nranks = exchange ? 2 : n;
        cv[c]->pairs = exchange ? n / 2 : 0;
        if (c == MS_CHN) /* the chain's steps: 2 lg p2 */
            for (int p2 = 1; p2 * 2 <= n; p2 *= 2)
                cv[c]->pairs += 2;
        memcpy(cv[c]->bytes, sizes[c], sizeof sizes[c]);
        for (int k = 0; k < ns[c]; k++)
            spread(mx + c * cells + (size_t)k * cfg->iters, cfg->iters, cv[c], k);
    }
    free(it);
    free(mx);
}

/* ---- the whole probe ----------------------------------------------------------------------- */

/* The ping-pong partners on the ordered communicator (nodes are blocks of ppn ranks). */
static void pingpongs(const cli_probe_cfg *cfg, layout *L, bufs *b, cli_probe_data *out)
{
    int r, ppn = out->ranks_per_node;
    MPI_Comm_rank(L->ordered, &r);
    if (ppn >= 2) {
        pingpong(L->ordered, cfg, b, r == 0 ? 1 : r == 1 ? 0 : -1, r == 0, &out->pp_intra);
        out->pp_intra.nranks = 2, out->pp_intra.pairs = 1;
    } else {
        snprintf(out->pp_intra.why, sizeof out->pp_intra.why, "one rank per node: nothing to "
                 "measure inside a node");
    }
    if (out->nnodes >= 2 && ppn >= 1) {
        pingpong(L->ordered, cfg, b, r == 0 ? ppn : r == ppn ? 0 : -1, r == 0, &out->pp_inter);
        out->pp_inter.nranks = 2, out->pp_inter.pairs = 1;
        int partner = r < ppn ? r + ppn : r < 2 * ppn ? r - ppn : -1;
        pingpong(L->ordered, cfg, b, partner, r < ppn, &out->pp_inter_all);
        out->pp_inter_all.nranks = 2 * ppn, out->pp_inter_all.pairs = ppn;
    } else {
        snprintf(out->pp_inter.why, sizeof out->pp_inter.why, "one node: nothing to measure "
                 "between nodes");
        snprintf(out->pp_inter_all.why, sizeof out->pp_inter_all.why, "%s", out->pp_inter.why);
    }
}

int cli_probe_mpi_run(const cli_probe_cfg *cfg, cli_probe_data *out)
{
    int wr;
    MPI_Comm_rank(MPI_COMM_WORLD, &wr);
    layout L;
    memset(&L, 0, sizeof L);
    find_nodes(cfg, &L, out);
    int rc = 0;
    if (out->nranks < 2)
        rc = EXIT_INPUT;
    else if (!out->ranks_per_node || out->nnodes > CLI_PROBE_MAX_NODES)
        rc = EXIT_INPUT;
    if (rc && wr == 0) {
        if (out->nranks < 2)
            fprintf(stderr, "meshplan: probe: 1 rank: expected at least 2 (mpirun -n 2 ... probe)\n");
        else
            fprintf(stderr, "meshplan: probe: the %d nodes hold %d to %d ranks each: expected the "
                    "same number on every node (mpirun --map-by ppr:K:node), at most %d nodes\n",
                    out->nnodes, out->ranks_per_node_min, out->ranks_per_node_max,
                    CLI_PROBE_MAX_NODES);
    }
    bufs b;
    memset(&b, 0, sizeof b);
    int brc = rc ? 0 : bufs_alloc(&b, (size_t)cfg->max_bytes, L.local_rank, out->buffers,
                                  sizeof out->buffers);
    MPI_Allreduce(MPI_IN_PLACE, &brc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!rc && brc) {
        if (wr == 0)
            fprintf(stderr, "meshplan: probe: cannot allocate two buffers of %.0f bytes\n",
                    cfg->max_bytes);
        rc = EXIT_INTERNAL;
    }
    if (!rc) {
        int len = 0;
        MPI_Get_library_version(out->mpi_library, &len);
        out->mpi_library[strcspn(out->mpi_library, "\n")] = 0;
        MPI_Allreduce(&b.gpu, &out->gpu_buffers, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        pingpongs(cfg, &L, &b, out);
        model_sweep(cfg, &L, &b, out);
        coll_sweep(1, L.ordered, cfg, &b, &out->ag_world);
        coll_sweep(2, L.ordered, cfg, &b, &out->a2a_world);
        if (out->ranks_per_node >= 2 && out->nnodes >= 2)
            coll_sweep(0, L.node, cfg, &b, &out->ar_node);
        node_latencies(cfg, &L, &b, out);
    }
    bufs_free(&b);
    if (L.leaders != MPI_COMM_NULL)
        MPI_Comm_free(&L.leaders);
    MPI_Comm_free(&L.node);
    MPI_Comm_free(&L.ordered);
    return rc;
}

void cli_probe_mpi_end_rc(int *rc)
{
    MPI_Bcast(rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
}
