/* src/sim/build.c — build the task graph of one training step from the analytical estimate's
 * building blocks, run it, and cut the critical stage's timeline into the step's parts.
 *
 * Layout. Stage i holds the layers the estimator gives it (L/p, the first L mod p stages one
 * more); with v chunks its layers are split as evenly as possible, virtual stage c*p + i holding
 * chunk c of stage i (Megatron-LM's order). Each virtual stage is a list of units: the layers, the
 * token embedding on the first (parameters only: its compute is negligible and not modelled by
 * the estimator either) and the LM head on the last. A unit carries its forward, backward,
 * weight-gradient and recompute times, the TP and CP communication of one pass and its
 * parameters per GPU (for the DP buckets and the ZeRO-3 gathers).
 *
 * A pass (F, B or W of one micro-batch on one virtual stage) expands into a chain of tasks per
 * unit — F: compute, CP, TP; B: recompute, recompute TP, backward, CP, TP; W: weight gradient —
 * then a send to the next virtual stage. The receiving pass's first task waits for the send.
 * Overlap rules: include/meshplan/sim.h and docs/sim.md.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "meshplan/stack.h"
#include "sim_internal.h"

void mp_sim_opts_init(mp_sim_opts *o)
{
    o->contention_frac = MP_SIM_DEFAULT_CONTENTION_FRAC;
    o->analytical_rules = 0;
    o->tp_overlap = 0;
    o->p2p_overlap = 0;
    o->straggler_rank = -1;
    o->straggler_compute_factor = 1.0;
    o->straggler_link_factor = 1.0;
    o->max_events = MP_SIM_DEFAULT_MAX_EVENTS;
}

/* ---- units ------------------------------------------------------------------------------ */

typedef struct {
    int kind;                 /* SU_* */
    int layer;                /* global layer index; -2 LM head; -3 embedding */
    int64_t fwd, bwd, bwd_w, rc, tp, tp_rc, cp; /* ns */
    int64_t ep_f, ep_b, ep_rc; /* MoE all-to-all of a forward, backward, recompute forward, ns */
    double params;            /* non-expert, per GPU */
    double xparams;           /* routed experts, per GPU (over the expert-DP group) */
} unit;

typedef struct {
    unit *u;
    int n;
} vstage;

/* A collective's description for the trace, and its time. */
typedef struct {
    double bytes;
    int op, algo, count;
    int64_t group;
    int64_t ns;
} coll_desc;

/* Build state. */
typedef struct {
    sim_graph *g;
    const mp_sim_opts *o;
    const mp_cluster *c;
    int p, v, nvs, zero, zb, dp_on, hsdp_on;
    int64_t M;
    vstage *vs;               /* [nvs] */
    int32_t *out_f, *out_b;   /* [nvs*M]: what releases the next virtual stage's pass */
    struct need { int32_t task; int32_t dir, vs; int64_t mb; } *needs;
    int64_t nneeds, needcap;
    /* per rank chain state */
    int32_t *prev;            /* last task of the rank's critical chain */
    int32_t (*pend)[4];       /* extra dependencies of the next chain task */
    int *npend;
    int32_t *in_dir, *in_vs;  /* the pass input the next chain task waits for (dir -1 none) */
    int64_t *in_mb;
    int32_t *last_dp;         /* last DP/ZeRO task of the rank */
    int32_t **unit_ag;        /* [vs][unit]: ZeRO-1/2 parameter gather bucket */
    int straggler_stage;
    double link_factor[SS_COUNT]; /* on the straggler's stage, per stream (1 if not crossing) */
    int send_slow;            /* PP sends cross nodes */
    mp_group dp_group;
    int64_t p2p_ns;
    coll_desc tp_d, cp_d, p2p_d, ep_d;
    mp_group edp_group;       /* experts' data-parallel group */
    double gather_e;          /* bytes per gathered parameter (2; 1 with fp8_comm) */
    double ns_overflow;
    double *stage_params;     /* non-expert parameters per GPU, per stage */
    double *stage_xparams;    /* expert parameters per GPU, per stage (same allocation) */
    double stage_params_max, stage_xparams_max;
    /* ZeRO-3 as the plan's stack issues it (z3_rules): */
    int z3_prefetch;          /* 1: the next unit's gather is issued when this unit's compute
                                 starts (FSDP); 0: when it ends (the stack prefetches nothing) */
    int z3_rc_gathers;        /* 1: a recomputed layer is gathered again before its backward */
    int64_t z3_dense_ag_ns;   /* > 0: a dense layer's gather as the workload priced it (one
                                 all-gather per parameter tensor), instead of one collective */
    int64_t z3_dense_rs_ns;   /* > 0: its reduce-scatter likewise (one per tensor) */
    double z3_rs_e;           /* bytes per gradient element of the ZeRO-3 reduce-scatter */
    int fail;                 /* -1 nomem/cap */
} build;

static int64_t to_ns(build *b, double s)
{
    if (!(s >= 0.0))
        return 0;
    if (s > 4.0e9) { /* > 126 years: an input out of range */
        b->ns_overflow = s;
        return 0;
    }
    return (int64_t)llround(s * 1e9);
}

static int need(build *b, int32_t task, int dir, int vs, int64_t mb)
{
    if (b->nneeds == b->needcap) {
        int64_t nc = b->needcap ? 2 * b->needcap : 1024;
        struct need *n = realloc(b->needs, (size_t)nc * sizeof *n);
        if (!n)
            return -1;
        b->needs = n;
        b->needcap = nc;
    }
    b->needs[b->nneeds++] = (struct need){task, dir, vs, mb};
    return 0;
}

static int32_t add(build *b, int rank, int stream, sim_kind k, int64_t dur)
{
    int32_t id = sim_task_add(b->g, rank, stream, k, dur);
    if (id < 0)
        b->fail = -1;
    return id;
}

static void dep(build *b, int32_t from, int32_t to)
{
    if (to >= 0 && sim_dep(b->g, from, to))
        b->fail = -1;
}

/* Give task id the dependencies the rank's next chain task has, without consuming them (used
 * for what is issued when that task starts: prefetched gathers, overlapped TP). */
static void proxy_deps(build *b, int rank, int32_t id)
{
    if (id < 0)
        return;
    dep(b, b->prev[rank], id);
    for (int k = 0; k < b->npend[rank]; k++)
        dep(b, b->pend[rank][k], id);
    if (b->in_dir[rank] >= 0 && need(b, id, b->in_dir[rank], b->in_vs[rank], b->in_mb[rank]))
        b->fail = -1;
}

/* Append a task to the rank's critical chain. extra: one more dependency (or -1). */
static int32_t chain(build *b, int rank, int stream, sim_kind k, int64_t dur, int32_t extra)
{
    if (dur <= 0)
        return -1;
    int32_t id = add(b, rank, stream, k, dur);
    if (id < 0)
        return -1;
    proxy_deps(b, rank, id);
    dep(b, extra, id);
    b->npend[rank] = 0;
    b->in_dir[rank] = -1;
    b->prev[rank] = id;
    return id;
}

static void pend(build *b, int rank, int32_t id)
{
    if (id >= 0 && b->npend[rank] < 4)
        b->pend[rank][b->npend[rank]++] = id;
}

static void set_coll(sim_task *x, const coll_desc *d)
{
    x->bytes = d->bytes;
    x->op = (uint8_t)d->op;
    x->algo = (uint8_t)d->algo;
    x->count = (uint8_t)d->count;
    x->group = (int32_t)d->group;
}

static void label(build *b, int32_t id, int64_t mb, int chunk, int layer)
{
    if (id < 0)
        return;
    sim_task *x = &b->g->t[id];
    x->mb = (int32_t)mb;
    x->chunk = chunk;
    x->layer = layer;
}

static int64_t slow(build *b, int rank, int stream, int64_t ns)
{
    if (rank != b->straggler_stage)
        return ns;
    double f = stream == SS_COMPUTE || stream == SS_OPT ? b->o->straggler_compute_factor
                                                        : b->link_factor[stream];
    return (int64_t)llround((double)ns * f);
}

/* A DP/ZeRO collective of `bytes` for a unit, on the rank's DP stream. Each bucket is its own
 * collective (it pays the latency terms); under the analytical rules a ZeRO-0/1/2 bucket costs
 * its share of one collective over the whole stage, as the estimator costs it. */
static int32_t dp_task(build *b, int rank, sim_kind k, mp_coll_op op, double bytes, mp_group grp)
{
    mp_coll_cost cc;
    double share = 1.0, whole = bytes;
    const int experts = grp.size == b->edp_group.size && grp.stride == b->edp_group.stride &&
                        !(grp.size == b->dp_group.size && grp.stride == b->dp_group.stride);
    const double held = b->stage_params ? (experts ? b->stage_xparams : b->stage_params)[rank] : 0.0;
    if (b->o->analytical_rules && (k == SK_DP_GRAD || k == SK_DP_PARAM) && held > 0) {
        /* The estimator's collective is over the most loaded stage's parameters (P_local, and
         * its experts X_local over expert-DP); the stage's buckets add up to it. */
        double per_param = k == SK_DP_GRAD ? 4.0 : b->gather_e;
        whole = per_param * (experts ? b->stage_xparams_max : b->stage_params_max);
        share = bytes / (per_param * held);
    }
    if (mp_coll_time(b->c, op, whole, grp, MP_ALGO_AUTO, &cc) != MP_OK)
        cc = (mp_coll_cost){0};
    int64_t ns = slow(b, rank, SS_DP, to_ns(b, cc.total_s * share));
    if (ns <= 0)
        return -1;
    int32_t id = add(b, rank, SS_DP, k, ns);
    if (id < 0)
        return -1;
    coll_desc d = {bytes, op, cc.algo, 1, grp.size, ns};
    set_coll(&b->g->t[id], &d);
    b->last_dp[rank] = id;
    return id;
}

/* A unit's DP/ZeRO collective: its non-expert parameters over the shard group, then its experts
 * over the expert-DP group (one after the other on the DP stream). per_param: bytes per
 * parameter. Returns the last task, or -1. */
static int32_t unit_dp(build *b, int rank, sim_kind k, mp_coll_op op, double per_param, const unit *u)
{
    int32_t a = u->params > 0 ? dp_task(b, rank, k, op, per_param * u->params, b->dp_group) : -1;
    int32_t x = u->xparams > 0 ? dp_task(b, rank, k, op, per_param * u->xparams, b->edp_group) : -1;
    return x >= 0 ? x : a;
}

/* A unit's ZeRO-3 gather (k = SK_Z3_GATHER) or gradient reduce-scatter (SK_Z3_REDUCE): with the
 * stack's per-tensor collectives a dense layer takes the time the workload priced for them
 * (src/workload/comm.c z3_per_tensor, the estimator's figure), on the DP stream like any other
 * DP collective; the gradients in the stack's reduce precision. Returns the task, or -1. */
static int32_t z3_coll(build *b, int rank, const unit *u, sim_kind k)
{
    const int gather = k == SK_Z3_GATHER;
    const int64_t priced = gather ? b->z3_dense_ag_ns : b->z3_dense_rs_ns;
    const double e = gather ? b->gather_e : b->z3_rs_e;
    const mp_coll_op op = gather ? MP_COLL_ALL_GATHER : MP_COLL_REDUCE_SCATTER;
    if (priced > 0 && u->kind == SU_LAYER && u->xparams <= 0 && u->params > 0) {
        int32_t id = add(b, rank, SS_DP, k, slow(b, rank, SS_DP, priced));
        if (id >= 0) {
            coll_desc d = {e * u->params, op, MP_ALGO_AUTO, 1, b->dp_group.size, priced};
            set_coll(&b->g->t[id], &d);
            b->last_dp[rank] = id;
        }
        return id;
    }
    return u->params > 0 || u->xparams > 0 ? unit_dp(b, rank, k, op, e, u) : -1;
}

/* A unit's ZeRO-3 gather, issued now (after what the rank's next chain task waits for). */
static int32_t z3_gather(build *b, int rank, const unit *u, int64_t mb, int chunk)
{
    int32_t id = z3_coll(b, rank, u, SK_Z3_GATHER);
    proxy_deps(b, rank, id);
    label(b, id, mb, chunk, u->layer);
    return id;
}

/* An MoE layer's dispatch + combine all-to-all of one pass, on the chain (not overlapped, as the
 * estimator has it: Megatron-Core's default). */
static void ep_work(build *b, int s, const unit *u, int64_t j, int c, int64_t ns)
{
    int32_t ep = chain(b, s, SS_EP, SK_EP, slow(b, s, SS_EP, ns), -1);
    if (ep >= 0)
        set_coll(&b->g->t[ep], &b->ep_d);
    label(b, ep, j, c, u->layer);
}

/* One layer's work in a forward or (input-)backward pass: the TP collective issued beside the
 * compute when TP overlaps, the compute of dur ns (after `wait`), the CP exchange, then the TP
 * collective on the chain when it does not overlap. */
static void layer_work(build *b, int s, const unit *u, int64_t j, int c, int32_t wait, sim_kind k,
                       int64_t dur, int64_t ep)
{
    int32_t tpo = -1;
    if (b->o->tp_overlap && u->tp > 0) {
        tpo = add(b, s, SS_TP, SK_TP, slow(b, s, SS_TP, u->tp));
        proxy_deps(b, s, tpo);
        dep(b, wait, tpo);
        if (tpo >= 0)
            set_coll(&b->g->t[tpo], &b->tp_d);
        label(b, tpo, j, c, u->layer);
    }
    label(b, chain(b, s, SS_COMPUTE, k, slow(b, s, SS_COMPUTE, dur), wait), j, c, u->layer);
    if (dur <= 0 && wait >= 0)
        pend(b, s, wait);
    int32_t cp = chain(b, s, SS_CP, SK_CP, slow(b, s, SS_CP, u->cp), -1);
    if (cp >= 0)
        set_coll(&b->g->t[cp], &b->cp_d);
    label(b, cp, j, c, u->layer);
    ep_work(b, s, u, j, c, ep);
    if (tpo >= 0) {
        pend(b, s, tpo);
    } else {
        int32_t tp = chain(b, s, SS_TP, SK_TP, slow(b, s, SS_TP, u->tp), -1);
        if (tp >= 0)
            set_coll(&b->g->t[tp], &b->tp_d);
        label(b, tp, j, c, u->layer);
    }
}

/* One pass of one micro-batch on one virtual stage. */
static void emit_pass(build *b, int s, const sim_op *op, int first_f_of_chunk, int grads_final,
                      int last_b)
{
    const int c = op->chunk, vsi = c * b->p + s;
    const int64_t j = op->mb;
    const vstage *V = &b->vs[vsi];
    const int fwd = op->type == OP_F, wpass = op->type == OP_W;
    const int z3 = b->zero == 3 && b->dp_on && !wpass;
    /* The pass input: activations from the previous virtual stage, gradients from the next. */
    if (fwd && vsi > 0) {
        b->in_dir[s] = 0;
        b->in_vs[s] = vsi - 1;
        b->in_mb[s] = j;
    } else if (op->type == OP_B && vsi < b->nvs - 1) {
        b->in_dir[s] = 1;
        b->in_vs[s] = vsi + 1;
        b->in_mb[s] = j;
    }
    /* Analytical rules: the chunk's buckets may start with the backward pass that completes
     * them (the estimator's window: the whole pass). */
    const int early_dp = b->o->analytical_rules && b->dp_on && b->zero < 3;
    if (early_dp && op->type == OP_B && (last_b || b->zero == 2)) {
        for (int k = V->n - 1; k >= 0; k--) {
            const unit *u = &V->u[k];
            if (u->params <= 0 && u->xparams <= 0)
                continue;
            int32_t r = unit_dp(b, s, SK_DP_GRAD, b->zero == 0 ? MP_COLL_ALL_REDUCE : MP_COLL_REDUCE_SCATTER,
                                4.0, u);
            proxy_deps(b, s, r);
            label(b, r, j, c, u->layer);
        }
    }
    int32_t gather[2] = {-1, -1}; /* ZeRO-3: this unit's and the prefetched next unit's */
    for (int k = 0; k < V->n; k++) {
        const int idx = fwd ? k : V->n - 1 - k;
        const unit *u = &V->u[idx];
        const unit *nx = k + 1 < V->n ? &V->u[fwd ? idx + 1 : idx - 1] : NULL;
        /* ZeRO-3, recomputed layer on a stack that gathers it again for its backward: */
        const int regather = z3 && op->type == OP_B && b->z3_rc_gathers && u->rc > 0;
        int32_t g_bwd = -1;
        if (z3) {
            /* FSDP: gather the first unit at the pass start, then prefetch the next unit's
             * parameters when this unit's compute starts (depth 1). A stack that prefetches
             * nothing (DeepSpeed of 2021: the 5e7-parameter prefetch bucket is under a tensor)
             * gathers each unit when the chain reaches it. */
            if (k == 0 || !b->z3_prefetch)
                gather[0] = z3_gather(b, s, u, j, c);
            if (regather && b->z3_prefetch)
                g_bwd = z3_gather(b, s, u, j, c); /* behind the recompute, before the prefetch */
            gather[1] = -1;
            if (nx && b->z3_prefetch)
                gather[1] = z3_gather(b, s, nx, j, c);
        }
        int32_t wait = z3 ? gather[0] : -1;
        if (fwd && first_f_of_chunk && b->unit_ag[vsi])
            wait = b->unit_ag[vsi][idx];
        if (fwd) {
            layer_work(b, s, u, j, c, wait, SK_FWD, u->fwd, u->ep_f);
        } else if (op->type == OP_B) {
            int32_t rc = chain(b, s, SS_COMPUTE, SK_RECOMPUTE, slow(b, s, SS_COMPUTE, u->rc), wait);
            label(b, rc, j, c, u->layer);
            if (rc >= 0)
                wait = -1;
            int32_t trc = chain(b, s, SS_TP, SK_TP_RECOMPUTE, slow(b, s, SS_TP, u->tp_rc), -1);
            if (trc >= 0)
                set_coll(&b->g->t[trc], &b->tp_d);
            label(b, trc, j, c, u->layer);
            ep_work(b, s, u, j, c, u->ep_rc);
            /* The recomputed forward released the parameters (ZeRO-Infinity Sec. 4.1: loaded
             * for forward, recomputation and backward): gather again before the backward. */
            if (regather && !b->z3_prefetch)
                g_bwd = z3_gather(b, s, u, j, c);
            if (regather)
                wait = g_bwd;
            layer_work(b, s, u, j, c, wait, b->zb ? SK_BWD_INPUT : SK_BWD, b->zb ? u->bwd - u->bwd_w : u->bwd,
                       u->ep_b);
        } else {
            label(b, chain(b, s, SS_COMPUTE, SK_BWD_WEIGHT, slow(b, s, SS_COMPUTE, u->bwd_w), -1), j, c,
                  u->layer);
        }
        /* The unit's gradient is complete after its backward (W with ZB-H1): reduce it. */
        int done_here = (op->type == OP_B && !b->zb) || wpass;
        if (b->dp_on && done_here && (u->params > 0 || u->xparams > 0) && !early_dp) {
            int32_t r = -1;
            if (b->zero == 3)
                r = z3_coll(b, s, u, SK_Z3_REDUCE);
            else if (grads_final || b->zero == 2)
                r = unit_dp(b, s, SK_DP_GRAD, b->zero == 0 ? MP_COLL_ALL_REDUCE : MP_COLL_REDUCE_SCATTER,
                            4.0, u);
            dep(b, b->prev[s], r);
            for (int q = 0; q < b->npend[s]; q++)
                dep(b, b->pend[s][q], r);
            label(b, r, j, c, u->layer);
        }
        gather[0] = gather[1];
    }
    /* Release the next virtual stage. */
    int out_dir = fwd ? 0 : 1;
    int has_next = fwd ? vsi < b->nvs - 1 : (op->type == OP_B && vsi > 0);
    if (!has_next)
        return;
    int32_t rel = b->prev[s];
    if (b->p2p_ns > 0) {
        int peer = fwd ? (s + 1) % b->p : (s - 1 + b->p) % b->p;
        int64_t ns = b->p2p_ns;
        if (b->send_slow && (s == b->straggler_stage || peer == b->straggler_stage))
            ns = (int64_t)llround((double)ns * b->o->straggler_link_factor);
        int32_t snd = add(b, s, SS_PP, fwd ? SK_SEND_FWD : SK_SEND_BWD, ns);
        if (snd >= 0) {
            dep(b, b->prev[s], snd);
            for (int q = 0; q < b->npend[s]; q++)
                dep(b, b->pend[s][q], snd);
            set_coll(&b->g->t[snd], &b->p2p_d);
            b->g->t[snd].peer = peer;
            label(b, snd, j, c, -1);
            rel = snd;
            if (!b->o->p2p_overlap)
                pend(b, s, snd);
        }
    }
    (out_dir ? b->out_b : b->out_f)[(int64_t)vsi * b->M + j] = rel;
}

/* ---- the step's parts from the critical stage's timeline --------------------------------- */

enum { C_COMPUTE, C_RECOMPUTE, C_TP, C_CP, C_EP, C_PP, C_BUBBLE, C_DP, C_OPT, C_COUNT };

static int32_t stream_prev(const sim_graph *g, int32_t id)
{
    const sim_task *x = &g->t[id];
    int64_t k = (int64_t)x->rank * SS_COUNT + x->stream;
    int64_t lo = g->q_off[k], hi = g->q_off[k + 1] - 1;
    while (lo <= hi) {
        int64_t mid = (lo + hi) / 2;
        if (g->q[mid] == id)
            return mid > g->q_off[k] ? g->q[mid - 1] : -1;
        if (g->q[mid] < id)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* The dependency (or stream predecessor) that ended last before id started. */
static int32_t blocker(const sim_graph *g, int32_t id)
{
    int32_t best = stream_prev(g, id);
    int64_t bend = best >= 0 ? g->t[best].end_ns : -1;
    for (int32_t k = g->pred_off[id]; k < g->pred_off[id + 1]; k++) {
        int32_t pidx = g->pred_of[k];
        if (g->t[pidx].end_ns > bend) {
            bend = g->t[pidx].end_ns;
            best = pidx;
        }
    }
    return best;
}

static int category(const sim_task *x)
{
    switch ((sim_kind)x->kind) {
    case SK_TP: case SK_TP_RECOMPUTE: return C_TP;
    case SK_CP: return C_CP;
    case SK_EP: return C_EP;
    case SK_SEND_FWD: case SK_SEND_BWD: return C_PP;
    case SK_DP_GRAD: case SK_DP_PARAM: case SK_Z3_GATHER: case SK_Z3_REDUCE: case SK_HSDP: return C_DP;
    default: return C_BUBBLE; /* another stage's compute */
    }
}

/* A wait is cut into segments, each charged to a category. */
typedef struct {
    int64_t lo, hi;
    int cat;
} seg;
#define MAX_SEGS 256

/* Segments of [a, b) explained by task id (which ended at b) and, before it started, by what it
 * waited for in turn. Returns the new count. */
static int chain_segments(const sim_graph *g, int rank, int64_t a, int64_t b, int32_t id, seg *out,
                          int n)
{
    while (b > a && id >= 0 && n < MAX_SEGS) {
        const sim_task *x = &g->t[id];
        int is_send = x->kind == SK_SEND_FWD || x->kind == SK_SEND_BWD;
        if (SK_IS_COMPUTE(x->kind) || (x->rank != rank && !is_send)) {
            /* Another stage's work (this stage's own compute ended before a): the pipeline. */
            out[n++] = (seg){a, b, C_BUBBLE};
            return n;
        }
        int64_t lo = x->start_ns > a ? x->start_ns : a;
        if (b > lo)
            out[n++] = (seg){lo, b, category(x)};
        b = lo;
        if (b <= a)
            return n;
        id = blocker(g, id);
    }
    if (b > a && n < MAX_SEGS)
        out[n++] = (seg){a, b, C_BUBBLE};
    return n;
}

static int prio(int cat)
{
    switch (cat) {
    case C_TP: return 5;
    case C_CP: case C_EP: return 4;
    case C_PP: return 3;
    case C_BUBBLE: return 2;
    default: return 1; /* DP/ZeRO: exposed only when nothing else explains the wait */
    }
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* Charge the wait [a, b) before task id started: every instant goes to the highest-priority
 * category among the dependencies still running then (followed back along what each waited
 * for): TP, CP, a pipeline transfer, the pipeline (another stage's compute), then DP/ZeRO. */
static void charge_wait(const sim_graph *g, int rank, int64_t a, int64_t b, int32_t id, double *cat)
{
    seg sg[MAX_SEGS];
    int n = 0;
    int32_t sp = stream_prev(g, id);
    if (sp >= 0 && g->t[sp].end_ns > a)
        n = chain_segments(g, rank, a, g->t[sp].end_ns, sp, sg, n);
    for (int32_t k = g->pred_off[id]; k < g->pred_off[id + 1]; k++) {
        int32_t pidx = g->pred_of[k];
        if (g->t[pidx].end_ns > a)
            n = chain_segments(g, rank, a, g->t[pidx].end_ns < b ? g->t[pidx].end_ns : b, pidx, sg, n);
    }
    int64_t pts[2 * MAX_SEGS + 2];
    int np = 0;
    pts[np++] = a;
    pts[np++] = b;
    for (int i = 0; i < n; i++) {
        pts[np++] = sg[i].lo;
        pts[np++] = sg[i].hi;
    }
    qsort(pts, (size_t)np, sizeof pts[0], cmp_i64);
    for (int i = 0; i + 1 < np; i++) {
        int64_t lo = pts[i], hi = pts[i + 1];
        if (lo >= hi || lo < a || hi > b)
            continue;
        int best = C_BUBBLE, bp = 0;
        for (int k = 0; k < n; k++)
            if (sg[k].lo <= lo && sg[k].hi >= hi && prio(sg[k].cat) > bp) {
                bp = prio(sg[k].cat);
                best = sg[k].cat;
            }
        cat[best] += (double)(hi - lo);
    }
}

static void breakdown(const sim_graph *g, int rank, int64_t step_ns, mp_time *t)
{
    double cat[C_COUNT] = {0};
    int64_t cursor = 0;
    int32_t last = -1;
    static const int streams[] = {SS_COMPUTE, SS_OPT};
    for (size_t si = 0; si < 2; si++) {
        int64_t k = (int64_t)rank * SS_COUNT + streams[si];
        for (int64_t q = g->q_off[k]; q < g->q_off[k + 1]; q++) {
            int32_t id = g->q[q];
            const sim_task *x = &g->t[id];
            if (x->start_ns > cursor)
                charge_wait(g, rank, cursor, x->start_ns, id, cat);
            int c = x->kind == SK_RECOMPUTE ? C_RECOMPUTE : x->kind == SK_OPTIMIZER ? C_OPT : C_COMPUTE;
            cat[c] += (double)(x->end_ns - x->start_ns);
            if (x->end_ns > cursor)
                cursor = x->end_ns;
            last = id;
        }
    }
    if (cursor < step_ns) {
        /* The stage ends on communication (no optimizer task): charge the tail. */
        int32_t tail = last;
        for (int64_t i = 0; i < g->n; i++)
            if (g->t[i].rank == rank && g->t[i].end_ns == step_ns)
                tail = (int32_t)i;
        seg sg[MAX_SEGS];
        int n = chain_segments(g, rank, cursor, step_ns, tail, sg, 0);
        for (int i = 0; i < n; i++)
            cat[sg[i].cat] += (double)(sg[i].hi - sg[i].lo);
    }
    double dp_total = 0.0;
    int64_t k = (int64_t)rank * SS_COUNT + SS_DP;
    for (int64_t q = g->q_off[k]; q < g->q_off[k + 1]; q++)
        dp_total += (double)(g->t[g->q[q]].end_ns - g->t[g->q[q]].start_ns);
    memset(t, 0, sizeof *t);
    t->compute = cat[C_COMPUTE] * 1e-9;
    t->recompute = cat[C_RECOMPUTE] * 1e-9;
    t->tp_comm = cat[C_TP] * 1e-9;
    t->cp_comm = cat[C_CP] * 1e-9;
    t->ep_comm = cat[C_EP] * 1e-9;
    t->pp_comm = cat[C_PP] * 1e-9;
    t->pp_bubble = cat[C_BUBBLE] * 1e-9;
    t->dp_comm_exposed = cat[C_DP] * 1e-9;
    t->optimizer = cat[C_OPT] * 1e-9;
    t->dp_comm_total = dp_total * 1e-9;
}

/* ---- mp_sim_run ---------------------------------------------------------------------------- */

static mp_status check_opts(const mp_sim_opts *o, const mp_cluster *c, mp_diag *d)
{
    mp_status st = MP_OK;
    if (!(o->contention_frac >= 0.0 && o->contention_frac <= 10.0)) {
        mp_diag_add(d, "sim.contention_frac = %g: expected a number in [0, 10]", o->contention_frac);
        st = MP_ERR_INPUT;
    }
    if (!(o->straggler_compute_factor >= 1.0 && o->straggler_compute_factor <= 1000.0)) {
        mp_diag_add(d, "sim.straggler_compute_factor = %g: expected a number in [1, 1000]",
                    o->straggler_compute_factor);
        st = MP_ERR_INPUT;
    }
    if (!(o->straggler_link_factor >= 1.0 && o->straggler_link_factor <= 1000.0)) {
        mp_diag_add(d, "sim.straggler_link_factor = %g: expected a number in [1, 1000]",
                    o->straggler_link_factor);
        st = MP_ERR_INPUT;
    }
    if (o->straggler_rank < -1 || o->straggler_rank >= c->num_gpus) {
        mp_diag_add(d, "sim.straggler_rank = %lld: expected -1 (none) or a rank in 0..%lld",
                    (long long)o->straggler_rank, (long long)c->num_gpus - 1);
        st = MP_ERR_INPUT;
    }
    if (o->max_events < 1) {
        mp_diag_add(d, "sim.max_events = %lld: expected >= 1", (long long)o->max_events);
        st = MP_ERR_INPUT;
    }
    return st;
}

static int crosses_nodes(const mp_cluster *c, mp_group g)
{
    if (g.size <= 1)
        return 0;
    mp_placement pl;
    mp_group_place(c, g, &pl);
    return pl.outer_tier >= 1;
}

static void free_build(build *b)
{
    if (b->vs)
        for (int i = 0; i < b->nvs; i++) {
            free(b->vs[i].u);
            if (b->unit_ag)
                free(b->unit_ag[i]);
        }
    free(b->vs);
    free(b->unit_ag);
    free(b->out_f);
    free(b->out_b);
    free(b->needs);
    free(b->prev);
    free(b->pend);
    free(b->npend);
    free(b->in_dir);
    free(b->in_vs);
    free(b->in_mb);
    free(b->last_dp);
    free(b->stage_params);
}

/* Check the plan against the estimate and the schedule's limits. */
static mp_status check_plan(const mp_cluster *c, const mp_plan *p, const mp_estimate *e, mp_diag *d)
{
    if (p->tp < 1 || p->pp < 1 || p->cp < 1 || p->dp < 1 || p->vpp < 1 || p->mb < 1 ||
        p->tp * p->pp * p->cp * p->dp != c->num_gpus || e->nstages != p->pp ||
        e->microbatches != p->gb / (p->mb * p->dp) || e->microbatches < 1) {
        mp_diag_add(d, "simulation: the plan is not resolved for %lld GPUs or does not match the "
                       "estimate (call mp_plan_resolve, then mp_estimate_plan with the same plan)",
                    (long long)c->num_gpus);
        return MP_ERR_INPUT;
    }
    if (p->schedule == MP_SCHED_1F1B && p->vpp > 1) {
        mp_diag_add(d, "plan.schedule = 1f1b with vpp = %lld: a 1F1B order over model chunks is the "
                       "interleaved schedule (schedule=interleaved) or breadth-first GPipe "
                       "(schedule=gpipe)", (long long)p->vpp);
        return MP_ERR_INPUT;
    }
    if (p->schedule == MP_SCHED_ZB && p->vpp > 1) {
        mp_diag_add(d, "plan.schedule = zb with vpp = %lld: ZB-H1 is a schedule for one chunk per "
                       "stage (vpp = 1)", (long long)p->vpp);
        return MP_ERR_INPUT;
    }
    if (p->pp > INT32_MAX / 8 || p->vpp > 4096 || e->microbatches > INT32_MAX / 4) {
        mp_diag_add(d, "simulation: pp = %lld, vpp = %lld or %d micro-batches is out of range",
                    (long long)p->pp, (long long)p->vpp, e->microbatches);
        return MP_ERR_RANGE;
    }
    return MP_OK;
}

/* The build's settings, groups, straggler links and collective descriptions — message sizes and
 * algorithms from the workload's collectives table (src/workload/comm.c). */
static void setup(build *b, const mp_cluster *c, const mp_plan *p, const mp_workload *w,
                  const mp_sim_opts *opts)
{
    const mp_wl_coll *x = w->coll;
    b->p = w->pp;
    b->v = w->vpp;
    b->nvs = w->pp * w->vpp;
    b->M = (int64_t)w->microbatches;
    b->zero = p->zero < 0 ? 0 : p->zero;
    b->zb = p->schedule == MP_SCHED_ZB;
    b->dp_on = w->dp_ranks > 1;
    b->hsdp_on = x[MP_WC_HSDP_AR].in.size * x[MP_WC_HSDP_AR].out.size > 1;
    b->dp_group = (mp_group){(int64_t)w->shard, w->g_shard_in.stride};
    b->edp_group = w->g_edp;
    b->gather_e = w->gather_bytes_per_param;
    b->straggler_stage = opts->straggler_rank >= 0 ? (int)(opts->straggler_rank / (p->tp * p->cp * p->dp)) : -1;
    for (int s = 0; s < SS_COUNT; s++)
        b->link_factor[s] = 1.0;
    if (opts->straggler_link_factor > 1.0) {
        /* A slow NIC slows what leaves the node (Megatron rank order: tp, cp, dp, pp). */
        if (crosses_nodes(c, w->g_tp))
            b->link_factor[SS_TP] = opts->straggler_link_factor;
        if (crosses_nodes(c, w->g_cp))
            b->link_factor[SS_CP] = opts->straggler_link_factor;
        if (crosses_nodes(c, w->g_ep))
            b->link_factor[SS_EP] = opts->straggler_link_factor;
        if (crosses_nodes(c, b->dp_group))
            b->link_factor[SS_DP] = opts->straggler_link_factor;
        b->send_slow = crosses_nodes(c, w->g_pp);
    }
    const mp_wl_coll *tp = &x[MP_WC_TP_A], *cp = &x[MP_WC_CP_FWD], *ep = &x[MP_WC_EP_DISPATCH];
    b->tp_d = (coll_desc){tp->bytes, tp->op, tp->algo, p->sp ? 4 : 2, w->tp, 0};
    /* CP: one ring step's K/V chunk (k width + v width, right for MLA), cp - 1 steps. */
    b->cp_d = (coll_desc){cp->bytes, cp->op, cp->algo, cp->op == MP_COLL_SEND_RECV ? w->cp - 1 : 1, w->cp, 0};
    b->ep_d = (coll_desc){ep->bytes, MP_COLL_ALL_TO_ALL, ep->algo, 2, w->ep, 0};
    b->p2p_d = (coll_desc){x[MP_WC_PP_SEND].bytes, MP_COLL_SEND_RECV, MP_ALGO_P2P, 1, 2, 0};
    b->p2p_ns = w->pp > 1 ? to_ns(b, x[MP_WC_PP_SEND].time_s) : 0;
}

/* ZeRO-3 as the plan's stack runs it (data/stacks.json, as src/estimate/step.c reads it):
 * prefetch depth 1 where the stack hides gathers behind the neighbouring unit
 * (zero3_prefetch_frac > 0; the estimator scales that window, the timeline issues the gather
 * early or not), a second backward gather of a recomputed layer (zero3_recompute_gathers with
 * full recompute), the dense layer's per-tensor gather and reduce-scatter times the workload
 * priced, and the stack's gradient reduce precision. */
static void z3_rules(build *b, const mp_plan *p, const mp_workload *w, const mp_estimate *e)
{
    const mp_stack_profile *sk = mp_stack_profile_of((mp_stack_id)p->stack);
    b->z3_prefetch = !sk || sk->zero3_prefetch_frac > 0.0;
    b->z3_rc_gathers = sk && sk->zero3_recompute_gathers && p->recompute == MP_RC_FULL;
    b->z3_dense_ag_ns = b->z3_dense_rs_ns = 0;
    if (b->zero == 3 && e->workload_opts.zero3_gather_per_tensor) {
        b->z3_dense_ag_ns = to_ns(b, w->coll[MP_WC_Z3_AG].time_s);
        b->z3_dense_rs_ns = to_ns(b, w->coll[MP_WC_Z3_RS].time_s);
    }
    /* fp32 unless the stack reduces in its own precision, as the workload prices it */
    b->z3_rs_e = mp_workload_zero3_reduce_bytes(&e->workload_opts);
}

/* A unit of kind k from the workload's priced layer kinds. */
static unit make_unit(build *b, const mp_workload *w, mp_layer_kind k, int su, int layer)
{
    const mp_wl_layer *l = &w->layer[k];
    unit u = {su, layer, to_ns(b, l->fwd_s), to_ns(b, l->bwd_s), to_ns(b, l->bwd_weight_s),
              to_ns(b, l->recompute_s), to_ns(b, l->tp_fwd_s), to_ns(b, l->tp_recompute_s),
              to_ns(b, l->cp_fwd_s), to_ns(b, l->ep_fwd_s), to_ns(b, l->ep_bwd_s),
              to_ns(b, l->ep_recompute_s), l->params, w->expert_shard > 1 ? l->expert_params : 0.0};
    if (k == MP_LK_HEAD || k == MP_LK_EMBED) /* no CP exchange, no all-to-all */
        u.cp = 0;
    if (u.bwd_w > u.bwd)
        u.bwd_w = u.bwd;
    /* FSDP2: each gather's copy-out runs on the compute stream before a unit's forward and
     * before a layer's backward (recompute included); the root module's embedding and LM head
     * stay gathered from forward to backward: once. As the estimator counts it. */
    if (b->zero == 3 && b->dp_group.size > 1 && l->copy_out_s > 0) {
        int64_t co = to_ns(b, l->copy_out_s);
        u.fwd += co;
        if (su == SU_LAYER || su == SU_MTP)
            u.bwd += co;
    }
    return u;
}

/* The stage whose micro-batch the estimator's step is built from: the first strict maximum of
 * the workload's stage times (mp_workload_stage_time, as src/estimate/step.c picks it). */
static int slowest_stage(const mp_workload *w, const mp_model *m)
{
    int best = 0;
    double bt = -1.0;
    for (int i = 0; i < w->pp; i++) {
        mp_wl_stage s;
        mp_wl_stage_time t;
        mp_workload_stage(w, m, i, &s);
        mp_workload_stage_time(w, &s, i == w->pp - 1, &t);
        if (t.total_s > bt) {
            bt = t.total_s;
            best = i;
        }
    }
    return best;
}

/* Units of virtual stage vsi = chunk * p + stage (Megatron's layout: chunk j of the p*v chunks
 * holds L/(p v) layers, the first L mod (p v) one more; workload.h stages): the embedding first
 * on the first, its layers (dense or MoE, as the model lays them out), and on the last the MTP
 * modules and the LM head. Returns 0 or -1 (out of memory). */
static int fill_vstage(build *b, const mp_workload *w, const mp_model *m, int vsi, int src)
{
    const int64_t L = m->layers, C = b->nvs, q = L / C, r = L % C;
    const int64_t first = src * q + (src < r ? src : r), nl = q + (src < r ? 1 : 0);
    const int has_embed = src == 0, has_last = src == C - 1;
    const int64_t nmtp = has_last ? (int64_t)w->mtp_modules : 0;
    vstage *V = &b->vs[vsi];
    V->u = calloc((size_t)(nl + nmtp + 2), sizeof *V->u);
    if (!V->u)
        return -1;
    if (has_embed && w->layer[MP_LK_EMBED].params > 0)
        V->u[V->n++] = make_unit(b, w, MP_LK_EMBED, SU_EMBED, -3);
    for (int64_t k = 0; k < nl; k++) {
        int moe = w->moe && mp_model_moe_layers_in(m, first + k, 1) > 0;
        V->u[V->n++] = make_unit(b, w, moe ? MP_LK_MOE : MP_LK_DENSE, SU_LAYER, (int)(first + k));
    }
    for (int64_t k = 0; k < nmtp; k++)
        V->u[V->n++] = make_unit(b, w, MP_LK_MTP, SU_MTP, (int)(L + k));
    if (has_last)
        V->u[V->n++] = make_unit(b, w, MP_LK_HEAD, SU_HEAD, -2);
    return 0;
}

/* Under the analytical rules a stage's LM head and MTP modules are spread over its layers (the
 * estimator's stages are uniform: its bubble is (p-1)/v of one micro-batch's whole time, as if
 * every chunk took the same), keeping their parameters on the units. */
static void fold_last(build *b, int s)
{
    int64_t f[10] = {0}, nl = 0;
    for (int ch = 0; ch < b->v; ch++) {
        vstage *V = &b->vs[ch * b->p + s];
        for (int k = 0; k < V->n; k++) {
            unit *u = &V->u[k];
            int64_t *t[10] = {&u->fwd, &u->bwd, &u->bwd_w, &u->rc, &u->tp, &u->tp_rc, &u->cp,
                              &u->ep_f, &u->ep_b, &u->ep_rc};
            if (u->kind == SU_LAYER)
                nl++;
            if (u->kind != SU_HEAD && u->kind != SU_MTP)
                continue;
            for (int q = 0; q < 10; q++) {
                f[q] += *t[q];
                *t[q] = 0;
            }
        }
    }
    for (int ch = 0; ch < b->v && nl > 0; ch++) {
        vstage *V = &b->vs[ch * b->p + s];
        for (int k = 0; k < V->n; k++) {
            unit *u = &V->u[k];
            int64_t *t[10] = {&u->fwd, &u->bwd, &u->bwd_w, &u->rc, &u->tp, &u->tp_rc, &u->cp,
                              &u->ep_f, &u->ep_b, &u->ep_rc};
            if (u->kind == SU_LAYER)
                for (int q = 0; q < 10; q++)
                    *t[q] += (int64_t)llround((double)f[q] / (double)nl);
        }
    }
}

/* All virtual stages' units and each stage's parameters per GPU. Under the analytical rules
 * every stage holds the units of the slowest one (the estimator's uniform stages). */
static int make_units(build *b, const mp_workload *w, const mp_model *m, const mp_sim_opts *o)
{
    b->vs = calloc((size_t)b->nvs, sizeof *b->vs);
    b->stage_params = calloc((size_t)(2 * b->p), sizeof *b->stage_params);
    if (!b->vs || !b->stage_params)
        return -1;
    b->stage_xparams = b->stage_params + b->p;
    const int slowest = slowest_stage(w, m);
    for (int vsi = 0; vsi < b->nvs; vsi++) {
        int s = vsi % b->p, src = o->analytical_rules ? vsi - s + slowest : vsi;
        if (fill_vstage(b, w, m, vsi, src))
            return -1;
        for (int k = 0; k < b->vs[vsi].n; k++) {
            b->stage_params[s] += b->vs[vsi].u[k].params;
            b->stage_xparams[s] += b->vs[vsi].u[k].xparams;
        }
    }
    for (int s = 0; s < b->p; s++) {
        if (o->analytical_rules)
            fold_last(b, s);
        if (b->stage_params[s] > b->stage_params_max)
            b->stage_params_max = b->stage_params[s];
        if (b->stage_xparams[s] > b->stage_xparams_max)
            b->stage_xparams_max = b->stage_xparams[s];
    }
    return 0;
}

/* Per-rank chain state and the pass-release table. */
static int alloc_state(build *b, sim_op **ops)
{
    const int P = b->p;
    const int64_t M = b->M;
    b->out_f = malloc((size_t)b->nvs * (size_t)M * sizeof *b->out_f);
    b->out_b = malloc((size_t)b->nvs * (size_t)M * sizeof *b->out_b);
    b->prev = malloc((size_t)P * sizeof *b->prev);
    b->pend = calloc((size_t)P, sizeof *b->pend);
    b->npend = calloc((size_t)P, sizeof *b->npend);
    b->in_dir = malloc((size_t)P * sizeof *b->in_dir);
    b->in_vs = calloc((size_t)P, sizeof *b->in_vs);
    b->in_mb = calloc((size_t)P, sizeof *b->in_mb);
    b->last_dp = malloc((size_t)P * sizeof *b->last_dp);
    b->unit_ag = calloc((size_t)b->nvs, sizeof *b->unit_ag);
    *ops = malloc((size_t)(3 * M * b->v + 1) * sizeof **ops);
    if (!b->out_f || !b->out_b || !b->prev || !b->pend || !b->npend || !b->in_dir || !b->in_vs ||
        !b->in_mb || !b->last_dp || !b->unit_ag || !*ops)
        return -1;
    for (int64_t i = 0; i < (int64_t)b->nvs * M; i++)
        b->out_f[i] = b->out_b[i] = -1;
    for (int s = 0; s < P; s++) {
        b->prev[s] = -1;
        b->in_dir[s] = -1;
        b->last_dp[s] = -1;
    }
    return 0;
}

/* One stage's step: ZeRO-1/2 parameter gathers, its passes in schedule order, HSDP, optimizer. */
static int emit_stage(build *b, const mp_plan *p, const mp_workload *w, double optimizer_s, int s,
                      sim_op *ops)
{
    const int P = b->p, Vv = b->v;
    /* ZeRO-1/2: the updated parameters are gathered bucket by bucket at the step start
     * (Megatron overlap-param-gather: in the next step's forward). */
    if (b->dp_on && (b->zero == 1 || b->zero == 2)) {
        for (int ch = 0; ch < Vv; ch++) {
            int vsi = ch * P + s;
            b->unit_ag[vsi] = malloc((size_t)(b->vs[vsi].n + 1) * sizeof(int32_t));
            if (!b->unit_ag[vsi])
                return -1;
            for (int k = 0; k < b->vs[vsi].n; k++) {
                const unit *u = &b->vs[vsi].u[k];
                int32_t ag = unit_dp(b, s, SK_DP_PARAM, MP_COLL_ALL_GATHER, b->gather_e, u);
                label(b, ag, -1, ch, u->layer);
                b->unit_ag[vsi][k] = ag;
            }
        }
    }
    int64_t nops = sim_schedule(p->schedule, P, Vv, b->M, s, ops);
    /* Where each chunk's gradients become final: its last B (last W with ZB-H1). */
    int64_t last_grad[4096], last_b[4096];
    int seen_f[4096];
    for (int ch = 0; ch < Vv; ch++) {
        last_grad[ch] = last_b[ch] = -1;
        seen_f[ch] = 0;
    }
    for (int64_t k = 0; k < nops; k++) {
        if (ops[k].type == (b->zb ? OP_W : OP_B))
            last_grad[ops[k].chunk] = k;
        if (ops[k].type == OP_B)
            last_b[ops[k].chunk] = k;
    }
    for (int64_t k = 0; k < nops && !b->fail; k++) {
        int firstf = 0;
        if (ops[k].type == OP_F && !seen_f[ops[k].chunk]) {
            firstf = 1;
            seen_f[ops[k].chunk] = 1;
        }
        emit_pass(b, s, &ops[k], firstf, last_grad[ops[k].chunk] == k, last_b[ops[k].chunk] == k);
    }
    /* HSDP: all-reduce the reduced shard across replicas, then the optimizer. */
    if (b->hsdp_on) {
        const mp_wl_coll *h = &w->coll[MP_WC_HSDP_AR];
        double gbytes = 4.0 * b->stage_params[s] / w->shard;
        int32_t hr = dp_task(b, s, SK_HSDP, MP_COLL_ALL_REDUCE, gbytes,
                             (mp_group){h->in.size * h->out.size, h->in.stride});
        dep(b, b->prev[s], hr);
    }
    double opt_s = optimizer_s * (b->o->analytical_rules || b->stage_params_max <= 0
                                      ? 1.0 : b->stage_params[s] / b->stage_params_max);
    chain(b, s, SS_OPT, SK_OPTIMIZER, slow(b, s, SS_OPT, to_ns(b, opt_s)), b->last_dp[s]);
    return 0;
}

/* Cross-stage dependencies: each pass waits for what the neighbouring virtual stage sent. */
static mp_status link_passes(build *b, mp_diag *d)
{
    for (int64_t i = 0; i < b->nneeds; i++) {
        const struct need *n = &b->needs[i];
        int32_t from = (n->dir ? b->out_b : b->out_f)[(int64_t)n->vs * b->M + n->mb];
        if (from < 0) {
            mp_diag_add(d, "simulation: internal error: pass input (dir %d, virtual stage %d, "
                           "micro-batch %lld) was never produced", n->dir, n->vs, (long long)n->mb);
            return MP_ERR_INTERNAL;
        }
        dep(b, from, n->task);
    }
    return b->fail ? MP_ERR_NOMEM : MP_OK;
}

/* The summary of a finished run. */
static void summarise(const sim_graph *g, const build *b, const mp_plan *p, const mp_sim_opts *o,
                      mp_sim *sim, mp_sim_result *res)
{
    /* The step ends with the last task; the critical stage is the one that ends it. */
    int64_t step_ns = 0;
    int crit = 0;
    for (int64_t i = 0; i < g->n; i++)
        if (g->t[i].end_ns > step_ns || (g->t[i].end_ns == step_ns && g->t[i].rank < crit)) {
            step_ns = g->t[i].end_ns;
            crit = g->t[i].rank;
        }
    res->step_s = (double)step_ns * 1e-9;
    res->critical_stage = crit;
    breakdown(g, crit, step_ns, &res->time);
    res->bubble_frac = res->step_s > 0 ? res->time.pp_bubble / res->step_s : 0.0;
    res->tasks = g->n;
    res->events = g->events;
    res->nstages = b->p;
    res->straggler_stage = b->straggler_stage;
    sim->pp = b->p;
    sim->vpp = b->v;
    sim->ranks_per_stage = p->tp * p->cp * p->dp;
    sim->straggler_rank = o->straggler_rank;
    sim->straggler_stage = b->straggler_stage;
    sim->microbatches = b->M;
    sim->step_s = res->step_s;
    sim->schedule = p->schedule;
}

mp_status mp_sim_run_workload(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                              const mp_workload *w, const mp_estimate *e, const mp_sim_opts *opts,
                              mp_sim **out, mp_sim_result *res, mp_diag *d)
{
    mp_sim_opts defaults;
    if (!opts) {
        mp_sim_opts_init(&defaults);
        opts = &defaults;
    }
    if (out)
        *out = NULL;
    memset(res, 0, sizeof *res);
    mp_status st = check_opts(opts, c, d);
    if (st == MP_OK) /* refuse a step over the caps before anything is allocated (src/sim/size.c) */
        st = sim_size_check(m, p, e, opts, d);
    if (st == MP_OK)
        st = check_plan(c, p, e, d);
    if (st != MP_OK)
        return st;
    mp_sim *sim = calloc(1, sizeof *sim);
    if (!sim)
        return MP_ERR_NOMEM;
    build bb;
    memset(&bb, 0, sizeof bb);
    build *b = &bb;
    sim_op *ops = NULL;
    sim_graph *g = &sim->g;
    g->nranks = (int)p->pp;
    g->contention = opts->contention_frac;
    g->max_events = opts->max_events;
    g->max_tasks = opts->max_events;
    b->g = g;
    b->o = opts;
    b->c = c;
    setup(b, c, p, w, opts);
    z3_rules(b, p, w, e);
    if (make_units(b, w, m, opts))
        goto nomem;
    if (b->ns_overflow > 0) {
        mp_diag_add(d, "simulation: a task of %g s is out of range", b->ns_overflow);
        st = MP_ERR_RANGE;
        goto fail;
    }
    if (alloc_state(b, &ops))
        goto nomem;
    for (int s = 0; s < b->p && !b->fail; s++)
        if (emit_stage(b, p, w, e->parts.optimizer_s, s, ops))
            goto nomem;
    if (b->fail) {
        if (g->n >= g->max_tasks) {
            mp_diag_add(d, "simulation: the step needs more than %lld tasks (max_events); use fewer "
                           "micro-batches or raise the cap", (long long)g->max_tasks);
            st = MP_ERR_RANGE;
            goto fail;
        }
        goto nomem;
    }
    st = link_passes(b, d);
    if (st == MP_ERR_NOMEM)
        goto nomem;
    if (st == MP_OK)
        st = sim_graph_run(g, d);
    if (st != MP_OK)
        goto fail;
    summarise(g, b, p, opts, sim, res);
    free(ops);
    free_build(b);
    if (out)
        *out = sim;
    else
        mp_sim_destroy(sim);
    return MP_OK;

nomem:
    mp_diag_add(d, "simulation: out of memory");
    st = MP_ERR_NOMEM;
fail:
    free(ops);
    free_build(b);
    mp_sim_destroy(sim);
    return st;
}

mp_status mp_sim_run(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                     const mp_estimate *e, const mp_sim_opts *opts, mp_sim **out,
                     mp_sim_result *res, mp_diag *d)
{
    /* The workload the estimate was priced from (same options), so both see the same layers,
     * message sizes and stages. */
    mp_workload w;
    memset(res, 0, sizeof *res);
    if (out)
        *out = NULL;
    mp_status st = mp_workload_build(m, c, p, MP_WL_TRAIN_STEP, &e->workload_opts, &w, d);
    if (st != MP_OK)
        return st;
    return mp_sim_run_workload(m, c, p, &w, e, opts, out, res, d);
}

void mp_sim_destroy(mp_sim *s)
{
    if (!s)
        return;
    sim_graph_free(&s->g);
    free(s);
}
