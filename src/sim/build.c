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

const char *sim_kind_name(sim_kind k)
{
    static const char *const names[SK_COUNT] = {
        "forward", "backward", "backward (input grad)", "weight grad", "recompute", "optimizer",
        "TP", "TP (recompute)", "CP exchange", "send activations", "send gradients",
        "DP grad reduce", "DP param gather", "ZeRO-3 gather", "ZeRO-3 reduce-scatter",
        "HSDP all-reduce"};
    return (unsigned)k < SK_COUNT ? names[k] : "?";
}

const char *sim_stream_name(int s)
{
    static const char *const names[SS_COUNT] = {"compute", "TP", "CP", "PP send", "DP/ZeRO",
                                                "optimizer"};
    return s >= 0 && s < SS_COUNT ? names[s] : "?";
}

/* ---- units ------------------------------------------------------------------------------ */

typedef struct {
    int kind;                 /* SU_* */
    int layer;                /* global layer index; -2 LM head; -3 embedding */
    int64_t fwd, bwd, bwd_w, rc, tp, tp_rc, cp; /* ns */
    double params;            /* per GPU */
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
    coll_desc tp_d, cp_d, p2p_d;
    double ns_overflow;
    const double *stage_params; /* per GPU, per stage */
    double stage_params_max;
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
    if (b->o->analytical_rules && (k == SK_DP_GRAD || k == SK_DP_PARAM) && b->stage_params &&
        b->stage_params[rank] > 0) {
        /* The estimator's collective is over the most loaded stage's parameters (P_local); the
         * stage's buckets add up to it. */
        double per_param = k == SK_DP_GRAD ? 4.0 : 2.0;
        whole = per_param * b->stage_params_max;
        share = bytes / (per_param * b->stage_params[rank]);
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

/* One layer's work in a forward or (input-)backward pass: the TP collective issued beside the
 * compute when TP overlaps, the compute of dur ns (after `wait`), the CP exchange, then the TP
 * collective on the chain when it does not overlap. */
static void layer_work(build *b, int s, const unit *u, int64_t j, int c, int32_t wait, sim_kind k,
                       int64_t dur)
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
            if (u->params <= 0)
                continue;
            int32_t r = dp_task(b, s, SK_DP_GRAD, b->zero == 0 ? MP_COLL_ALL_REDUCE : MP_COLL_REDUCE_SCATTER,
                                4.0 * u->params, b->dp_group);
            proxy_deps(b, s, r);
            label(b, r, j, c, u->layer);
        }
    }
    int32_t gather[2] = {-1, -1}; /* ZeRO-3: this unit's and the prefetched next unit's */
    for (int k = 0; k < V->n; k++) {
        const int idx = fwd ? k : V->n - 1 - k;
        const unit *u = &V->u[idx];
        const unit *nx = k + 1 < V->n ? &V->u[fwd ? idx + 1 : idx - 1] : NULL;
        if (z3) {
            /* FSDP: gather the first unit at the pass start, then prefetch the next unit's
             * parameters when this unit's compute starts (depth 1). */
            if (k == 0 && u->params > 0) {
                gather[0] = dp_task(b, s, SK_Z3_GATHER, MP_COLL_ALL_GATHER, 2.0 * u->params, b->dp_group);
                proxy_deps(b, s, gather[0]);
                label(b, gather[0], j, c, u->layer);
            }
            gather[1] = -1;
            if (nx && nx->params > 0) {
                gather[1] = dp_task(b, s, SK_Z3_GATHER, MP_COLL_ALL_GATHER, 2.0 * nx->params, b->dp_group);
                proxy_deps(b, s, gather[1]);
                label(b, gather[1], j, c, nx->layer);
            }
        }
        int32_t wait = z3 ? gather[0] : -1;
        if (fwd && first_f_of_chunk && b->unit_ag[vsi])
            wait = b->unit_ag[vsi][idx];
        if (fwd) {
            layer_work(b, s, u, j, c, wait, SK_FWD, u->fwd);
        } else if (op->type == OP_B) {
            int32_t rc = chain(b, s, SS_COMPUTE, SK_RECOMPUTE, slow(b, s, SS_COMPUTE, u->rc), wait);
            label(b, rc, j, c, u->layer);
            if (rc >= 0)
                wait = -1;
            int32_t trc = chain(b, s, SS_TP, SK_TP_RECOMPUTE, slow(b, s, SS_TP, u->tp_rc), -1);
            if (trc >= 0)
                set_coll(&b->g->t[trc], &b->tp_d);
            label(b, trc, j, c, u->layer);
            layer_work(b, s, u, j, c, wait, b->zb ? SK_BWD_INPUT : SK_BWD, b->zb ? u->bwd - u->bwd_w : u->bwd);
        } else {
            label(b, chain(b, s, SS_COMPUTE, SK_BWD_WEIGHT, slow(b, s, SS_COMPUTE, u->bwd_w), -1), j, c,
                  u->layer);
        }
        /* The unit's gradient is complete after its backward (W with ZB-H1): reduce it. */
        int done_here = (op->type == OP_B && !b->zb) || wpass;
        if (b->dp_on && done_here && u->params > 0 && !early_dp) {
            int32_t r = -1;
            if (b->zero == 3)
                r = dp_task(b, s, SK_Z3_REDUCE, MP_COLL_REDUCE_SCATTER, 4.0 * u->params, b->dp_group);
            else if (grads_final || b->zero == 2)
                r = dp_task(b, s, SK_DP_GRAD, b->zero == 0 ? MP_COLL_ALL_REDUCE : MP_COLL_REDUCE_SCATTER,
                            4.0 * u->params, b->dp_group);
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

enum { C_COMPUTE, C_RECOMPUTE, C_TP, C_CP, C_PP, C_BUBBLE, C_DP, C_OPT, C_COUNT };

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
    case C_CP: return 4;
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
}

mp_status mp_sim_run(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                     const mp_estimate *e, const mp_sim_opts *opts, mp_sim **out,
                     mp_sim_result *res, mp_diag *d)
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
    if (st != MP_OK)
        return st;
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

    mp_sim *sim = calloc(1, sizeof *sim);
    build bb;
    memset(&bb, 0, sizeof bb);
    build *b = &bb;
    sim_op *ops = NULL;
    if (!sim)
        return MP_ERR_NOMEM;
    const mp_step_parts *pt = &e->parts;
    const int P = (int)p->pp, Vv = (int)p->vpp, tp = (int)p->tp;
    const int64_t M = e->microbatches;
    sim_graph *g = &sim->g;
    g->nranks = P;
    g->contention = opts->contention_frac;
    g->max_events = opts->max_events;
    g->max_tasks = opts->max_events;
    b->g = g;
    b->o = opts;
    b->c = c;
    b->p = P;
    b->v = Vv;
    b->nvs = P * Vv;
    b->M = M;
    b->zero = p->zero < 0 ? 0 : p->zero;
    b->zb = p->schedule == MP_SCHED_ZB;
    const int64_t dpg = p->dp * p->cp;
    const int64_t shard = p->hsdp ? p->hsdp : dpg;
    b->dp_on = dpg > 1;
    b->hsdp_on = p->hsdp && dpg / shard > 1;
    b->dp_group = (mp_group){shard, p->tp};
    b->straggler_stage = opts->straggler_rank >= 0 ? (int)(opts->straggler_rank / (p->tp * p->cp * p->dp)) : -1;
    for (int s = 0; s < SS_COUNT; s++)
        b->link_factor[s] = 1.0;
    if (opts->straggler_link_factor > 1.0) {
        /* A slow NIC slows what leaves the node (Megatron rank order: tp, cp, dp, pp). */
        if (crosses_nodes(c, (mp_group){p->tp, 1}))
            b->link_factor[SS_TP] = opts->straggler_link_factor;
        if (crosses_nodes(c, (mp_group){p->cp, p->tp}))
            b->link_factor[SS_CP] = opts->straggler_link_factor;
        if (crosses_nodes(c, b->dp_group))
            b->link_factor[SS_DP] = opts->straggler_link_factor;
        b->send_slow = crosses_nodes(c, (mp_group){2, p->tp * p->cp * p->dp});
    }

    /* Collective descriptions (the estimator's message sizes, src/estimate/estimate.c). */
    const double T = (double)p->mb * (double)p->seq / (double)p->cp; /* tokens per micro-batch per GPU */
    const double h = (double)m->hidden;
    {
        mp_coll_cost cc = {0};
        double S = T * h * 2.0;
        mp_coll_op top = p->sp ? MP_COLL_ALL_GATHER : MP_COLL_ALL_REDUCE;
        if (tp > 1)
            mp_coll_time(c, top, S, (mp_group){tp, 1}, MP_ALGO_AUTO, &cc);
        b->tp_d = (coll_desc){S, top, cc.algo, p->sp ? 4 : 2, tp, 0};
        double kvb = T * 2.0 * (double)(m->kv_heads * m->head_dim) / tp * 2.0;
        cc = (mp_coll_cost){0};
        if (p->cp > 1)
            mp_coll_time(c, MP_COLL_SEND_RECV, kvb, (mp_group){2, tp}, MP_ALGO_AUTO, &cc);
        b->cp_d = (coll_desc){kvb, MP_COLL_SEND_RECV, cc.algo, (int)(p->cp - 1), p->cp, 0};
        double pb = T * h * 2.0 / (tp > 1 ? tp : 1);
        b->p2p_d = (coll_desc){pb, MP_COLL_SEND_RECV, MP_ALGO_P2P, 1, 2, 0};
    }
    b->p2p_ns = P > 1 ? to_ns(b, pt->p2p_s) : 0;

    /* Units per virtual stage. */
    mp_param_count pc;
    mp_model_params(m, tp, &pc);
    const double V = (double)mp_model_padded_vocab(m, tp);
    const int64_t L = m->layers, lmin = L / P, lextra = L % P;
    double head_params = ((double)pc.final_norm +
                          (double)(pc.lm_head ? pc.lm_head : (P > 1 ? (int64_t)(V * h) : 0))) / tp;
    double emb_params = (double)pc.embedding / tp;
    double layer_params = (double)pc.per_layer / tp;
    /* The slowest stage, as the estimator picks it (first strict maximum). */
    int slowest = 0;
    {
        double best = -1.0;
        double per_layer = pt->layer_fwd_s + pt->layer_bwd_s + pt->layer_recompute_s +
                           2.0 * pt->layer_tp_fwd_s + pt->layer_tp_recompute_s + 2.0 * pt->layer_cp_s;
        for (int i = 0; i < P; i++) {
            double nl = (double)(lmin + (i < lextra ? 1 : 0));
            double tot = nl * per_layer + (i == P - 1 ? pt->head_fwd_s + pt->head_bwd_s : 0.0);
            if (tot > best) {
                best = tot;
                slowest = i;
            }
        }
    }
    b->vs = calloc((size_t)b->nvs, sizeof *b->vs);
    if (!b->vs)
        goto nomem;
    double stage_params_max = 0.0;
    double *stage_params = calloc((size_t)P, sizeof *stage_params);
    if (!stage_params)
        goto nomem;
    for (int s = 0; s < P; s++) {
        int64_t nl_real = lmin + (s < lextra ? 1 : 0);
        stage_params[s] = (double)nl_real * layer_params + (s == 0 ? emb_params : 0.0) +
                          (s == P - 1 ? head_params : 0.0);
        if (stage_params[s] > stage_params_max)
            stage_params_max = stage_params[s];
    }
    b->stage_params_max = stage_params_max;
    b->stage_params = stage_params;
    {
        int64_t first_layer_of_vs = 0;
        /* Megatron numbers layers by virtual stage: vs 0 (stage 0 chunk 0), vs 1, ... */
        int64_t *nl_vs = calloc((size_t)b->nvs, sizeof *nl_vs);
        if (!nl_vs) {
            free(stage_params);
            goto nomem;
        }
        for (int s = 0; s < P; s++) {
            int64_t nl = opts->analytical_rules ? lmin + (slowest < lextra ? 1 : 0) : lmin + (s < lextra ? 1 : 0);
            for (int ch = 0; ch < Vv; ch++)
                nl_vs[ch * P + s] = nl / Vv + (ch < nl % Vv ? 1 : 0);
        }
        for (int vsi = 0; vsi < b->nvs && !b->fail; vsi++) {
            int64_t nl = nl_vs[vsi];
            int first = vsi == 0, lastv = vsi == b->nvs - 1;
            vstage *Vs = &b->vs[vsi];
            Vs->u = calloc((size_t)nl + 2, sizeof *Vs->u);
            if (!Vs->u) {
                free(nl_vs);
                free(stage_params);
                goto nomem;
            }
            if (first && emb_params > 0)
                Vs->u[Vs->n++] = (unit){SU_EMBED, -3, 0, 0, 0, 0, 0, 0, 0, emb_params};
            /* Per-layer times; with uniform stages the slowest stage's per-micro-batch times,
             * LM head folded in, spread over its layers. */
            double lf = pt->layer_fwd_s, lb = pt->layer_bwd_s, lw = pt->layer_bwd_weight_s;
            if (opts->analytical_rules && slowest == P - 1) {
                double nk = (double)(lmin + (slowest < lextra ? 1 : 0));
                lf += pt->head_fwd_s / nk;
                lb += pt->head_bwd_s / nk;
                lw += pt->head_bwd_weight_s / nk;
            }
            for (int64_t k = 0; k < nl; k++) {
                unit u = {SU_LAYER, (int)(first_layer_of_vs + k), to_ns(b, lf), to_ns(b, lb), to_ns(b, lw),
                          to_ns(b, pt->layer_recompute_s), to_ns(b, pt->layer_tp_fwd_s),
                          to_ns(b, pt->layer_tp_recompute_s), to_ns(b, pt->layer_cp_s), layer_params};
                if (u.bwd_w > u.bwd)
                    u.bwd_w = u.bwd;
                Vs->u[Vs->n++] = u;
            }
            first_layer_of_vs += nl;
            if (lastv) {
                unit u = {SU_HEAD, -2, 0, 0, 0, 0, 0, 0, 0, head_params};
                if (!opts->analytical_rules) {
                    u.fwd = to_ns(b, pt->head_fwd_s);
                    u.bwd = to_ns(b, pt->head_bwd_s);
                    u.bwd_w = to_ns(b, pt->head_bwd_weight_s);
                    if (u.bwd_w > u.bwd)
                        u.bwd_w = u.bwd;
                }
                if (u.fwd > 0 || u.bwd > 0 || u.params > 0)
                    Vs->u[Vs->n++] = u;
            }
            /* FSDP2: each gather's copy-out runs on the compute stream before a layer's forward
             * and before its backward (recompute included); the root module's embedding and
             * LM head stay gathered from forward to backward: once. As the estimator counts it;
             * nothing is gathered over a shard group of one. */
            if (pt->fsdp_copy_s_per_param > 0 && b->zero == 3 && b->dp_group.size > 1)
                for (int k = 0; k < Vs->n; k++) {
                    int64_t co = to_ns(b, Vs->u[k].params * pt->fsdp_copy_s_per_param);
                    Vs->u[k].fwd += co;
                    if (Vs->u[k].kind == SU_LAYER)
                        Vs->u[k].bwd += co;
                }
        }
        free(nl_vs);
    }
    if (b->ns_overflow > 0) {
        free(stage_params);
        mp_diag_add(d, "simulation: a task of %g s is out of range", b->ns_overflow);
        st = MP_ERR_RANGE;
        goto fail;
    }

    /* Per-rank state and the pass-release table. */
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
    ops = malloc((size_t)(3 * M * Vv + 1) * sizeof *ops);
    if (!b->out_f || !b->out_b || !b->prev || !b->pend || !b->npend || !b->in_dir || !b->in_vs ||
        !b->in_mb || !b->last_dp || !b->unit_ag || !ops) {
        free(stage_params);
        goto nomem;
    }
    for (int64_t i = 0; i < (int64_t)b->nvs * M; i++)
        b->out_f[i] = b->out_b[i] = -1;
    for (int s = 0; s < P; s++) {
        b->prev[s] = -1;
        b->in_dir[s] = -1;
        b->last_dp[s] = -1;
    }

    for (int s = 0; s < P && !b->fail; s++) {
        /* ZeRO-1/2: the updated parameters are gathered bucket by bucket at the step start
         * (Megatron overlap-param-gather: in the next step's forward). */
        if (b->dp_on && (b->zero == 1 || b->zero == 2)) {
            for (int ch = 0; ch < Vv; ch++) {
                int vsi = ch * P + s;
                b->unit_ag[vsi] = malloc((size_t)(b->vs[vsi].n + 1) * sizeof(int32_t));
                if (!b->unit_ag[vsi]) {
                    free(stage_params);
                    goto nomem;
                }
                for (int k = 0; k < b->vs[vsi].n; k++) {
                    const unit *u = &b->vs[vsi].u[k];
                    int32_t ag = u->params > 0 ? dp_task(b, s, SK_DP_PARAM, MP_COLL_ALL_GATHER,
                                                         2.0 * u->params, b->dp_group) : -1;
                    label(b, ag, -1, ch, u->layer);
                    b->unit_ag[vsi][k] = ag;
                }
            }
        }
        int64_t nops = sim_schedule(p->schedule, P, Vv, M, s, ops);
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
            double gbytes = 4.0 * stage_params[s] / (double)shard;
            int32_t hr = dp_task(b, s, SK_HSDP, MP_COLL_ALL_REDUCE, gbytes,
                                 (mp_group){dpg / shard, p->tp * shard});
            dep(b, b->prev[s], hr);
        }
        double opt_s = pt->optimizer_s * (opts->analytical_rules || stage_params_max <= 0
                                              ? 1.0 : stage_params[s] / stage_params_max);
        chain(b, s, SS_OPT, SK_OPTIMIZER, slow(b, s, SS_OPT, to_ns(b, opt_s)), b->last_dp[s]);
    }
    free(stage_params);
    b->stage_params = NULL;
    if (b->fail) {
        if (g->n >= g->max_tasks) {
            mp_diag_add(d, "simulation: the step needs more than %lld tasks (max_events); use fewer "
                           "micro-batches or raise the cap", (long long)g->max_tasks);
            st = MP_ERR_RANGE;
            goto fail;
        }
        goto nomem;
    }
    /* Cross-stage dependencies: each pass waits for what the neighbouring virtual stage sent. */
    for (int64_t i = 0; i < b->nneeds; i++) {
        const struct need *n = &b->needs[i];
        int32_t from = (n->dir ? b->out_b : b->out_f)[(int64_t)n->vs * M + n->mb];
        if (from < 0) {
            mp_diag_add(d, "simulation: internal error: pass input (dir %d, virtual stage %d, "
                           "micro-batch %lld) was never produced", n->dir, n->vs, (long long)n->mb);
            st = MP_ERR_INTERNAL;
            goto fail;
        }
        dep(b, from, n->task);
    }
    if (b->fail)
        goto nomem;

    st = sim_graph_run(g, d);
    if (st != MP_OK)
        goto fail;

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
    res->nstages = P;
    res->straggler_stage = b->straggler_stage;
    sim->pp = P;
    sim->vpp = Vv;
    sim->ranks_per_stage = p->tp * p->cp * p->dp;
    sim->straggler_rank = opts->straggler_rank;
    sim->straggler_stage = b->straggler_stage;
    sim->microbatches = M;
    sim->step_s = res->step_s;
    sim->schedule = p->schedule;
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

void mp_sim_destroy(mp_sim *s)
{
    if (!s)
        return;
    sim_graph_free(&s->g);
    free(s);
}
