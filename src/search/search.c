/* src/search/search.c — evaluate the space in parallel and keep what the user asked for.
 *
 * Work is split by degree shape (src/search/space.c), largest first, over OpenMP threads with
 * dynamic scheduling. Each thread keeps its own top list (a bounded max-heap), its own Pareto
 * frontiers and counters; they are merged after the parallel region under the total order of
 * mp_search_entry_cmp, so the result does not depend on the thread count or on which thread
 * evaluated what:
 *   - top-K: every member of the global top K is in the top K of the thread that saw it;
 *   - frontiers: dominance (below) is a strict partial order, so the maximal set is unique and a
 *     point maximal overall is maximal within its thread;
 *   - counts are integer sums.
 * A thread's frontier is a staircase sorted by throughput (descending) with the second objective
 * ascending; a new point is checked with one binary search, O(log F).
 *
 * Sizes: one mp_estimate (~37 KB) and top_n entries per thread; frontiers grow to
 * MP_SEARCH_MAX_FRONTIER points at most.
 */
#define _POSIX_C_SOURCE 199309L
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "bound.h"
#include "meshplan/parts.h"
#include "search_internal.h"

static const char *const obj_names[] = {
#define MP_X(n, s) s,
    MP_OBJECTIVE_LIST(MP_X)
#undef MP_X
};
_Static_assert(sizeof obj_names / sizeof obj_names[0] == MP_OBJ_COUNT, "objective names");
static const char *const rule_keys[] = {
#define MP_X(n, k, s) k,
    MP_SEARCH_RULE_LIST(MP_X)
#undef MP_X
};
static const char *const rule_texts[] = {
#define MP_X(n, k, s) s,
    MP_SEARCH_RULE_LIST(MP_X)
#undef MP_X
};
_Static_assert(sizeof rule_keys / sizeof rule_keys[0] == MP_RULE_COUNT, "rule names");

const char *mp_objective_name(mp_objective o) { return ((int)o >= 0 && o < MP_OBJ_COUNT) ? obj_names[o] : "?"; }
const char *mp_search_rule_key(mp_search_rule r) { return ((int)r >= 0 && r < MP_RULE_COUNT) ? rule_keys[r] : "?"; }
const char *mp_search_rule_text(mp_search_rule r) { return ((int)r >= 0 && r < MP_RULE_COUNT) ? rule_texts[r] : "?"; }

mp_status mp_objective_parse(const char *s, mp_objective *out)
{
    for (int i = 0; i < MP_OBJ_COUNT; i++)
        if (s && !strcmp(s, obj_names[i])) {
            *out = (mp_objective)i;
            return MP_OK;
        }
    return MP_ERR_INPUT;
}

void mp_search_opts_init(mp_search_opts *o)
{
    memset(o, 0, sizeof *o);
    mp_plan_init_default(&o->pin);
    o->pin.recompute = MP_RC_COUNT; /* free */
    o->pin.cp_algo = MP_CP_ALGO_COUNT; /* free */
    o->objective = MP_OBJ_THROUGHPUT;
    o->top_n = 10;
    o->prune = 1;
}

/* ---- entries and their order ----------------------------------------------------------- */

static int cmp_i64(int64_t a, int64_t b) { return (a > b) - (a < b); }
static int cmp_dbl(double a, double b) { return (a > b) - (a < b); }

/* The rank order as a number: 0 for the default (no order key), else 1 + the permutation in
 * base 5. */
static int64_t order_key(const mp_plan *p)
{
    if (!p->order_listed)
        return 0;
    int64_t k = 0;
    for (int i = MP_DIM_COUNT - 1; i >= 0; i--)
        k = 5 * k + (int64_t)p->order[i];
    return 1 + k;
}

int mp_search_entry_cmp(const mp_search_entry *a, const mp_search_entry *b)
{
    int c;
    if ((c = cmp_dbl(a->score, b->score)))
        return c;
    if ((c = cmp_dbl(b->headroom_bytes, a->headroom_bytes)))
        return c;
    if ((c = cmp_i64(a->gpus, b->gpus)))
        return c;
    const mp_plan *p = &a->plan, *q = &b->plan;
    if ((c = cmp_i64(p->tp, q->tp)) || (c = cmp_i64(p->cp, q->cp)) || (c = cmp_i64(p->pp, q->pp)) ||
        (c = cmp_i64(p->vpp, q->vpp)) || (c = cmp_i64(p->dp, q->dp)) || (c = cmp_i64(p->ep, q->ep)) ||
        (c = cmp_i64(p->etp, q->etp)) || (c = cmp_i64(p->cp_algo, q->cp_algo)) ||
        (c = cmp_i64(p->mb, q->mb)) || (c = cmp_i64(p->sp, q->sp)) || (c = cmp_i64(p->zero, q->zero)) ||
        (c = cmp_i64(p->hsdp, q->hsdp)) || (c = cmp_i64(p->recompute, q->recompute)) ||
        (c = cmp_i64(p->schedule, q->schedule)) || (c = cmp_i64(order_key(p), order_key(q))))
        return c;
    /* Same keys: plans of one search differ in nothing else; keep the order total anyway. */
    if ((c = cmp_i64(p->gb, q->gb)) || (c = cmp_i64(p->seq, q->seq)) ||
        (c = cmp_i64(p->precision, q->precision)) || (c = cmp_i64(p->flash, q->flash)))
        return c;
    return cmp_i64(a->cluster, b->cluster);
}

static int entry_qsort_cmp(const void *a, const void *b)
{
    return mp_search_entry_cmp((const mp_search_entry *)a, (const mp_search_entry *)b);
}

/* Fill everything but the bottleneck text from an estimate. */
static mp_status fill_entry(const mp_model *m, const mp_cluster *c, int ci, const mp_search_opts *o,
                            const mp_plan *p, const mp_estimate *e, mp_search_entry *en)
{
    en->plan = *p;
    en->cluster = ci;
    en->gpus = c->num_gpus;
    en->feasible = e->feasible;
    en->verdict = e->verdict;
    en->step_s = e->step_s;
    en->tokens_per_s = e->tokens_per_s;
    en->mfu = e->mfu;
    en->memory_bytes = e->memory.total;
    en->capacity_bytes = e->memory.capacity;
    en->headroom_bytes = e->memory.capacity - e->memory.total;
    en->bottleneck[0] = '\0';
    const double tps = e->tokens_per_step, n = (double)c->num_gpus;
    const double steps = o->tokens > 0 ? ceil(o->tokens / tps) : 0.0;
    en->time_to_train_s = steps * e->step_s;
    /* GPU-hours x price: for the budget, else per million tokens. */
    en->cost_usd = o->price_per_gpu_hour > 0
                       ? (o->tokens > 0 ? o->price_per_gpu_hour * n * en->time_to_train_s / 3600.0
                                        : o->price_per_gpu_hour * n * e->step_s / 3600.0 / tps * 1e6)
                       : 0.0;
    en->energy_J_per_token = 0.0;
    if (o->energy) {
        double j = 0;
        mp_status st = o->energy(o->energy_ctx, m, c, p, e, &j);
        if (st != MP_OK || !isfinite(j) || j < 0)
            return st != MP_OK ? st : MP_ERR_RANGE;
        en->energy_J_per_token = j / tps;
    }
    switch (o->objective) {
    case MP_OBJ_TIME_TO_TRAIN: en->score = en->time_to_train_s; break;
    case MP_OBJ_COST: en->score = o->price_per_gpu_hour * n * e->step_s / 3600.0 / tps; break;
    case MP_OBJ_ENERGY: en->score = en->energy_J_per_token; break;
    default: en->score = e->step_s / tps; break;
    }
    return MP_OK;
}

/* ---- Pareto frontiers ------------------------------------------------------------------- */

/* Both coordinates are maximised: x = tokens/s; y = memory headroom, or minus the cost. */
enum { FR_MEMORY, FR_COST };

typedef struct {
    int kind;
    mp_search_entry *a; /* x strictly descending, y strictly ascending */
    int n, cap;
    int truncated, nomem;
} frontier;

static double fr_y(int kind, const mp_search_entry *e)
{
    return kind == FR_MEMORY ? e->headroom_bytes : -e->cost_usd;
}

/* q dominates p: at least as good in both, better in one, or equal in both and first in the
 * total order. A strict partial order (transitive: equal points are ordered by the total order). */
static int dominates(int kind, const mp_search_entry *q, const mp_search_entry *p)
{
    double xq = q->tokens_per_s, xp = p->tokens_per_s, yq = fr_y(kind, q), yp = fr_y(kind, p);
    if (xq < xp || yq < yp)
        return 0;
    if (xq > xp || yq > yp)
        return 1;
    return mp_search_entry_cmp(q, p) < 0;
}

static void fr_insert(frontier *f, const mp_search_entry *p)
{
    const double xp = p->tokens_per_s;
    /* j = how many points are strictly faster. */
    int lo = 0, hi = f->n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (f->a[mid].tokens_per_s > xp)
            lo = mid + 1;
        else
            hi = mid;
    }
    int j = lo;
    int jp = (j < f->n && f->a[j].tokens_per_s == xp) ? j + 1 : j; /* points at least as fast */
    if (jp > 0 && dominates(f->kind, &f->a[jp - 1], p))
        return; /* the one with the most y among them is enough to check */
    int k = j;
    while (k < f->n && dominates(f->kind, p, &f->a[k]))
        k++;
    int removed = k - j;
    if (!removed && f->n == f->cap) {
        if (f->cap >= MP_SEARCH_MAX_FRONTIER) {
            f->truncated = 1;
            return;
        }
        int nc = f->cap ? 2 * f->cap : 64;
        if (nc > MP_SEARCH_MAX_FRONTIER)
            nc = MP_SEARCH_MAX_FRONTIER;
        mp_search_entry *g = realloc(f->a, (size_t)nc * sizeof *g);
        if (!g) {
            f->nomem = 1;
            return;
        }
        f->a = g;
        f->cap = nc;
    }
    if (removed != 1)
        memmove(&f->a[j + 1], &f->a[k], (size_t)(f->n - k) * sizeof *f->a);
    f->a[j] = *p;
    f->n += 1 - removed;
}

/* ---- per-thread state ------------------------------------------------------------------- */

typedef struct {
    const mp_model *m;
    const mp_cluster *clusters;
    const mp_search_opts *o;
    const mp_estimate_opts *eo;  /* hot loop: the caller's assumptions, texts skipped */
    int k;                       /* top list size */
    const mp_search_entry *rank_ref; /* evaluated rank plan, or NULL */
    int one_order;               /* every line has one rank order (no --orders all, or pinned) */
} search_ctx;

/* One slot of the memo of the bound's communication term (tstate.comm). */
typedef struct {
    int64_t key[9];              /* tp, cp, pp, dp, ep, etp, sp, mb, cluster; mb 0: empty */
    sb_parts x;                  /* sb_line_parts */
} comm_memo;

typedef struct {
    sp_walker w;                 /* first: the walk calls back through it */
    const search_ctx *sc;
    const mp_cluster *c;
    int ci;
    mp_estimate *e;
    mp_search_entry *heap;       /* max-heap under mp_search_entry_cmp: the worst kept on top */
    int nheap;
    frontier fm, fc;
    mp_search_counts counts;
    uint64_t rank_better;
    /* The best plan (A), how many share its score, and the best plan scoring worse than A (B):
     * merged, they give the first plan that scores differently from #1, however many tie. */
    int have_a, have_b;
    mp_search_entry a, b;
    uint64_t a_ties;
    /* The last plan visited (the default rank order of its line): what its order variants share. */
    int last_fit;                /* 1 fits, 0 over memory, -1 failed */
    double last_headroom, last_lb_step, last_tokens_per_step;
    uint64_t order_skipped;
    int have_least;
    mp_search_entry least;
    int nomem;
    /* The thread's estimate options: the hot loop's, with its own collective cache (a plan's
     * collectives recur across the plans of one cluster; workload.h mp_wl_cache). */
    mp_estimate_opts eo;
    mp_wl_cache *cache;
    mp_est_memo *memo;           /* the estimator's memo beside the cache (estimate.h) */
    /* eo with memory_kept, for a communication variant when e_line: e holds the estimate of
     * its line's head or of one of its variants (memory computed). */
    mp_estimate_opts eo_var;
    int e_line;
    /* The per-subtree bound (bound.c): the model states and capacity the last line head
     * reported (the same for its whole subtree), the memory-only options, and the bound of the
     * group of the plan key bkey (computed once per group). */
    int have_states;
    double sub_states, sub_capacity;
    mp_estimate_opts eo_mem;
    /* The workload options the estimator priced the thread's first plan with
     * (mp_estimate.workload_opts: the job's stack and fractions, the same for every plan of a
     * search), for the bounds: their rates and kernel times are the estimator's. */
    int have_wo_est;
    mp_workload_opts wo_est;
    int have_bound;
    mp_plan bkey;
    int bkey_ci;
    sb_bound bound;
    /* The bound's per-micro-batch parts (bound.c sb_line_parts: the communication no overlap
     * hides and the compute beyond the GEMMs), memoised by what they depend on of the walked
     * keys (the degrees, expert layout, sp, mb and the cluster; the ZeRO stage, HSDP, schedule
     * and CP algorithm change none of their collectives or kernels, the recompute modes' shares
     * are kept apart, vpp changes only the count of sends), so the shardings of a shape, walked
     * as separate work items, share them. */
    comm_memo comm[SB_COMM_MEMO];
} tstate;

static void swap_entries(mp_search_entry *a, mp_search_entry *b)
{
    mp_search_entry t = *a;
    *a = *b;
    *b = t;
}

static void heap_push(tstate *t, const mp_search_entry *en)
{
    mp_search_entry *h = t->heap;
    int i;
    if (t->nheap < t->sc->k) {
        i = t->nheap++;
        h[i] = *en;
        while (i > 0 && mp_search_entry_cmp(&h[(i - 1) / 2], &h[i]) < 0) {
            swap_entries(&h[(i - 1) / 2], &h[i]);
            i = (i - 1) / 2;
        }
        return;
    }
    if (mp_search_entry_cmp(en, &h[0]) >= 0)
        return;
    h[0] = *en;
    i = 0;
    for (;;) {
        int l = 2 * i + 1, r = l + 1, big = i;
        if (l < t->nheap && mp_search_entry_cmp(&h[l], &h[big]) > 0)
            big = l;
        if (r < t->nheap && mp_search_entry_cmp(&h[r], &h[big]) > 0)
            big = r;
        if (big == i)
            break;
        swap_entries(&h[i], &h[big]);
        i = big;
    }
}

/* Evaluate plan p with options eo (the thread's, or eo_var for a communication variant whose
 * line's memory t->e holds) and keep what the search reports. */
static int visit_with(tstate *t, const mp_plan *p, double *states, double *capacity,
                      const mp_estimate_opts *eo)
{
    const search_ctx *sc = t->sc;
    mp_estimate *e = t->e;
    t->last_fit = -1;
    if (states)
        t->have_states = 0;
    if (mp_estimate_plan(sc->m, t->c, p, eo, e, NULL) != MP_OK) {
        t->e_line = 0;
        t->counts.evaluated++;
        t->counts.failed++;
        return -1;
    }
    if (states)
        t->e_line = 1; /* a line's head: e holds the memory its variants share */
    if (!t->have_wo_est) {
        t->wo_est = e->workload_opts;
        t->have_wo_est = 1;
    }
    /* evaluated counts the plans fully timed; one found over memory before its timing
     * (feasibility_only) is counted apart, in memory_checked. */
    const int untimed = !e->feasible && t->eo.feasibility_only;
    if (untimed)
        t->counts.memory_checked++;
    else
        t->counts.evaluated++;
    if (states) {
        *states = e->memory.weights + e->memory.gradients + e->memory.optimizer + e->memory.buffers;
        *capacity = e->memory.capacity;
        t->sub_states = *states;
        t->sub_capacity = *capacity;
        t->have_states = 1;
    }
    mp_search_entry en;
    if (untimed) {
        /* Not timed: the entry holds what the search keeps of a plan over memory (its memory,
         * for the plan needing the least); the energy hook is not asked about it. */
        memset(&en, 0, sizeof en);
        en.plan = *p;
        en.cluster = t->ci;
        en.gpus = t->c->num_gpus;
        en.memory_bytes = e->memory.total;
        en.capacity_bytes = e->memory.capacity;
        en.headroom_bytes = e->memory.capacity - e->memory.total;
    } else if (fill_entry(sc->m, t->c, t->ci, sc->o, p, e, &en) != MP_OK) {
        t->counts.failed++;
        return -1;
    }
    /* For the communication variants of this plan (CP algorithm, rank order): the step-time terms
     * they do not change (compute, recompute, optimizer; docs/search.md) bound their step from
     * below. */
    t->last_fit = e->feasible;
    t->last_headroom = en.headroom_bytes;
    t->last_lb_step = e->time.compute + e->time.recompute + e->time.optimizer;
    t->last_tokens_per_step = e->tokens_per_step;
    if (!e->feasible) {
        t->counts.over_memory++;
        if (!t->have_least || en.memory_bytes < t->least.memory_bytes ||
            (en.memory_bytes == t->least.memory_bytes && mp_search_entry_cmp(&en, &t->least) < 0)) {
            t->least = en;
            t->have_least = 1;
        }
        return 0;
    }
    t->counts.feasible++;
    if (!t->have_a || en.score < t->a.score) {
        if (t->have_a && (!t->have_b || mp_search_entry_cmp(&t->a, &t->b) < 0)) {
            t->b = t->a; /* the old best now scores worse than the new one */
            t->have_b = 1;
        }
        t->a = en;
        t->have_a = 1;
        t->a_ties = 1;
    } else if (en.score == t->a.score) {
        t->a_ties++;
        if (mp_search_entry_cmp(&en, &t->a) < 0)
            t->a = en;
    } else if (!t->have_b || mp_search_entry_cmp(&en, &t->b) < 0) {
        t->b = en;
        t->have_b = 1;
    }
    heap_push(t, &en);
    fr_insert(&t->fm, &en);
    if (sc->o->price_per_gpu_hour > 0)
        fr_insert(&t->fc, &en);
    if (sc->rank_ref && mp_search_entry_cmp(&en, sc->rank_ref) < 0)
        t->rank_better++;
    return 1;
}

static int ts_visit(sp_walker *w, const mp_plan *p, double *states, double *capacity)
{
    tstate *t = (tstate *)w;
    return visit_with(t, p, states, capacity, &t->eo);
}

/* A communication variant of the line whose head (or an earlier variant) t->e holds, evaluated
 * with that memory kept (mp_estimate_opts.memory_kept: the CP algorithm and the rank order
 * change no memory). */
static int visit_variant(tstate *t, const mp_plan *p)
{
    return visit_with(t, p, NULL, NULL, t->e_line ? &t->eo_var : &t->eo);
}

/* A frontier point dominates every plan with throughput at most x and second coordinate at most
 * y, one of them strictly less (the staircase: among points at least as fast as x, the last
 * has the largest y). */
static int fr_dominates_box(const frontier *f, double x, double y)
{
    int lo = 0, hi = f->n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (f->a[mid].tokens_per_s >= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return 0;
    const mp_search_entry *q = &f->a[lo - 1];
    double yq = fr_y(f->kind, q);
    return (q->tokens_per_s > x && yq >= y) || yq > y;
}

/* 1 if the plans with step at least lb, tokens_per_step tokens per step and memory headroom at
 * most headroom_ub on the thread's cluster score worse than its top list, than the best plan
 * scoring worse than its best and than the plan being ranked, and are dominated on every
 * frontier it keeps: none of them can change what the search reports (the threads' results
 * merge as the head comment says). Needs a full top list; never for the energy objective (the
 * hook's figure has no bound). */
static int cannot_matter(const tstate *t, double lb, double tps, double headroom_ub)
{
    const search_ctx *sc = t->sc;
    const mp_search_opts *o = sc->o;
    if (!(lb > 0) || t->nheap < sc->k || !t->have_b || o->objective == MP_OBJ_ENERGY)
        return 0;
    const double n = (double)t->c->num_gpus;
    double lb_score;
    switch (o->objective) {
    case MP_OBJ_TIME_TO_TRAIN: lb_score = ceil(o->tokens / tps) * lb; break;
    case MP_OBJ_COST: lb_score = o->price_per_gpu_hour * n * lb / 3600.0 / tps; break;
    default: lb_score = lb / tps; break;
    }
    if (!(lb_score > t->heap[0].score && lb_score > t->b.score &&
          (!sc->rank_ref || lb_score > sc->rank_ref->score)))
        return 0;
    const double ub_tokens_per_s = tps / lb;
    double lb_cost = 0;
    if (o->price_per_gpu_hour > 0)
        lb_cost = o->tokens > 0 ? o->price_per_gpu_hour * n * ceil(o->tokens / tps) * lb / 3600.0
                                : o->price_per_gpu_hour * n * lb / 3600.0 / tps * 1e6;
    return fr_dominates_box(&t->fm, ub_tokens_per_s, headroom_ub) &&
           (o->price_per_gpu_hour <= 0 || fr_dominates_box(&t->fc, ub_tokens_per_s, -lb_cost));
}

static void group_bound(tstate *t, const mp_plan *p);
static double plan_lb(tstate *t, const mp_plan *p);

/* A communication variant (CP algorithm, rank order) of the plan last visited. It has the same
 * memory, so the same verdict;
 * when it fits it is skipped only if no order could make it matter: its best possible step (the
 * order-independent terms) is worse than the thread's top-K, than the best plan scoring worse
 * than the thread's best, and than the plan being ranked, and it is dominated on every frontier
 * at that best. Counted as feasible either way. */
static int ts_variant(sp_walker *w, const mp_plan *p)
{
    tstate *t = (tstate *)w;
    const search_ctx *sc = t->sc;
    const mp_search_opts *o = sc->o;
    if (!w->prune || t->last_fit < 0)
        return visit_variant(t, p);
    if (t->last_fit == 0) {
        t->counts.over_memory++;
        t->counts.over_memory_proven++;
        return 0;
    }
    if (o->objective == MP_OBJ_ENERGY || sc->eo->comm_compute_slowdown_frac != 0.0 ||
        t->nheap < sc->k || !t->have_b)
        return visit_variant(t, p);
    int skip = cannot_matter(t, t->last_lb_step, t->last_tokens_per_step, t->last_headroom);
    if (!skip && t->have_wo_est) {
        /* The plan bound at this micro-batch (the layers' compute and, with one rank order,
         * the communication no overlap hides: the same for every CP algorithm) bounds the
         * variant's step too. */
        group_bound(t, p);
        skip = cannot_matter(t, plan_lb(t, p), t->last_tokens_per_step, t->last_headroom);
    }
    if (skip) {
        t->counts.feasible++;
        t->order_skipped++;
        return 1;
    }
    int keep_fit = t->last_fit;
    double keep[3] = {t->last_headroom, t->last_lb_step, t->last_tokens_per_step};
    int r = visit_variant(t, p);
    /* The next variant still refers to the default-order plan of the line. */
    t->last_fit = keep_fit;
    t->last_headroom = keep[0];
    t->last_lb_step = keep[1];
    t->last_tokens_per_step = keep[2];
    return r;
}

/* The group key of the bound (bound.h): degrees, sharding, expert layout, vpp, schedule. */
static int same_group(const mp_plan *a, const mp_plan *b)
{
    return a->tp == b->tp && a->cp == b->cp && a->pp == b->pp && a->dp == b->dp &&
           a->zero == b->zero && a->hsdp == b->hsdp && a->ep == b->ep && a->etp == b->etp &&
           a->vpp == b->vpp && a->schedule == b->schedule;
}

/* sb_line_parts of plan p at micro-batch mb on the thread's cluster, through the memo. */
static const sb_parts *parts_at(tstate *t, const mp_plan *p, int64_t mb)
{
    const int64_t key[9] = {p->tp, p->cp, p->pp, p->dp, p->ep, p->etp, p->sp, mb, t->ci};
    uint64_t h = 0;
    for (int i = 0; i < 9; i++)
        h = (h ^ (uint64_t)key[i]) * 0x9e3779b97f4a7c15ULL; /* multiplicative hashing */
    _Static_assert(SB_COMM_MEMO == 256, "the hash's top 8 bits index the memo");
    comm_memo *e = &t->comm[h >> 56];
    if (memcmp(e->key, key, sizeof key) != 0) {
        mp_plan q = *p;
        q.mb = mb;
        memcpy(e->key, key, sizeof key);
        sb_line_parts(t->sc->m, t->c, &q, &t->wo_est, t->cache, &e->x);
    }
    return &e->x;
}

/* The compute parts hold only when the estimator runs p with the attention kernel p names
 * (estimate.c effective_plan: not on a GPU without bf16 tensor cores and no flash key). */
static int same_kernel(const tstate *t, const mp_plan *p)
{
    return p->flash_given || t->c->gpu.peak_flops_per_s[MP_DT_BF16] > 0;
}

/* The communication term of x for plan p when every line has one rank order (with --orders all
 * the groups move between the plans of a line), else 0. */
static double comm_of(const tstate *t, const mp_plan *p, const sb_parts *x)
{
    return t->sc->one_order ? sb_comm_of(p, x->comm_layers_s, x->p2p_s) : 0.0;
}

/* The per-micro-batch term of the line bound (bound.h sb_line_lb_s) of plan p at micro-batch mb:
 * the compute beyond the GEMMs for p's recompute mode (0 unless same_kernel) plus comm_of. */
static double term_of(const tstate *t, const mp_plan *p, const sb_parts *x)
{
    return (same_kernel(t, p) ? sb_compute_of(x, p->recompute) : 0.0) + comm_of(t, p, x);
}

static double term_at(tstate *t, const mp_plan *p, int64_t mb)
{
    return term_of(t, p, parts_at(t, p, mb));
}

/* The bound of plan p (its micro-batch) alone (bound.h sb_plan_lb_s), at least its line bound
 * at [mb, mb]; t->bound holds p's group. */
static double plan_lb(tstate *t, const mp_plan *p)
{
    const sb_parts *x = parts_at(t, p, p->mb);
    const double term = term_of(t, p, x);
    double lb = sb_line_lb_s(&t->bound, p->mb, p->mb, p->recompute, term, term);
    if (same_kernel(t, p))
        lb = fmax(lb, sb_plan_lb_s(&t->bound, p->mb, p->recompute, x, comm_of(t, p, x)));
    return lb;
}

/* t->bound for the group of plan p (bound.h), computed once per group. */
static void group_bound(tstate *t, const mp_plan *p)
{
    if (!t->have_bound || t->bkey_ci != t->ci) {
        /* the estimator's own workload options: R is then the rate its kernels use */
        sb_bound_init(t->sc->m, t->c, p, &t->wo_est, t->cache, &t->bound);
        t->bkey = *p;
        t->bkey_ci = t->ci;
        t->have_bound = 1;
    } else if (!same_group(&t->bkey, p)) {
        sb_bound_regroup(&t->bound, p); /* the same job on the same cluster: F, R, load kept */
        t->bkey = *p;
    }
}

/* Memory alone of plan p (memory_only): 1 fits, 0 over memory, -1 failed; *headroom. */
static int memory_fit(tstate *t, const mp_plan *p, double *headroom)
{
    t->e_line = 0; /* e now holds another plan */
    if (mp_estimate_plan(t->sc->m, t->c, p, &t->eo_mem, t->e, NULL) != MP_OK ||
        !isfinite(t->e->memory.total))
        return -1;
    *headroom = t->e->memory.capacity - t->e->memory.total;
    return t->e->feasible ? 1 : 0;
}

/* The feasible micro-batches of a line are a prefix of mbs[0..nmb) (memory is non-decreasing in
 * mb: space.c); those below *lo are known to fit (head_headroom: mbs[0]'s headroom when *lo is 1,
 * else NaN). Finds the prefix's end into *lo with memory_fit (the reference estimator: every
 * verdict counted is its own), counting the plans found over memory in *checked_over. Returns 0,
 * or -1 if an estimate failed.
 *
 * The probes are placed by interpolation instead of bisection: between the breakpoints of the
 * in-flight count the memory is affine in mb (every activation and logit term is linear in the
 * micro-batch's tokens, the model states do not depend on it; space.c), so the secant through
 * the two latest (mb, headroom) points, starting from (0, capacity - model states) — the
 * headroom no micro-batch can exceed — predicts the first mb over memory, and the probe lands
 * on the predicted boundary (usually one probe on each side of it, against ceil(log2(n + 1))
 * bisecting). The prediction only chooses which micro-batch to ask about, so the count is the
 * bisection's whatever it predicts; after three probes the rest bisects (a bounded worst case). */
static int fit_prefix(tstate *t, const mp_plan *p, const int64_t *mbs, int nmb, int *lo_io,
                      double head_headroom, uint64_t *checked_over)
{
    int lo = *lo_io, hi = nmb; /* from hi on, known not to fit */
    /* The two latest points (x0, y0), (x1, y1): mb and headroom. */
    double x0 = 0.0, y0 = t->sub_capacity - t->sub_states, x1 = NAN, y1 = NAN;
    if (lo == 1 && isfinite(head_headroom))
        x1 = (double)mbs[0], y1 = head_headroom;
    mp_plan q = *p;
    for (int probes = 0; lo < hi; probes++) {
        int mid = lo + (hi - lo) / 2;
        if (probes < 3 && isfinite(x1) && isfinite(y0) && (y1 - y0) * (x1 - x0) < 0) {
            /* The secant's root: the mb where the headroom reaches 0. */
            const double root = x1 - y1 * (x1 - x0) / (y1 - y0);
            int b = lo; /* predicted first index over memory */
            while (b < hi && (double)mbs[b] <= root)
                b++;
            /* Ask about the side of the boundary not yet known: the predicted first mb over
             * memory, or the last one predicted to fit when that is the end of the line. */
            mid = b < hi ? b : hi - 1;
        }
        double headroom;
        q.mb = mbs[mid];
        int fit = memory_fit(t, &q, &headroom);
        if (fit < 0)
            return -1;
        if (fit) {
            lo = mid + 1;
        } else {
            hi = mid;
            (*checked_over)++;
        }
        if (isfinite(headroom))
            x0 = x1, y0 = y1, x1 = (double)mbs[mid], y1 = headroom;
        if (!isfinite(x0))
            x0 = 0.0, y0 = t->sub_capacity - t->sub_states;
    }
    *lo_io = lo;
    return 0;
}

/* A tail whose head is over memory: the head's memory was computed (memory_checked), the rest
 * of its nmb micro-batches x nvar variants are proven over memory with it (memory grows with
 * mb: space.c). Returns 1, the walker's "tail done". */
static int tail_over_memory(tstate *t, int nmb, uint64_t nvar)
{
    const uint64_t n = (uint64_t)nmb * nvar;
    t->counts.memory_checked++;
    t->counts.over_memory += n;
    t->counts.over_memory_proven += n - 1;
    return 1;
}

/* The head p of a tail whose line bound proved nothing, alone (sp_walker.tail returning 2): it
 * and its nvar - 1 communication variants cannot matter when plan_lb (its own micro-batch's
 * layers priced: GEMM tiles and waves included) scores worse than everything kept and is
 * dominated on the frontiers at its headroom (headroom: known, or NaN to compute its memory).
 * Counted in feasible and bound_skipped; over memory, the whole tail (nmb micro-batches) is
 * counted over memory (memory grows with mb) and 1 returned; 0 when nothing is proven. */
static int tail_head(tstate *t, const mp_plan *p, int nmb, uint64_t nvar, double headroom)
{
    const double tps = (double)p->gb * (double)p->seq;
    if (!t->have_wo_est || !same_kernel(t, p) || t->nheap < t->sc->k || !t->have_b)
        return 0;
    const double lb = plan_lb(t, p);
    if (!cannot_matter(t, lb, tps, -INFINITY))
        return 0;
    if (isnan(headroom)) {
        const int fit = memory_fit(t, p, &headroom);
        if (fit < 0)
            return 0;
        if (fit == 0)
            return tail_over_memory(t, nmb, nvar);
    }
    if (!cannot_matter(t, lb, tps, headroom))
        return 0;
    t->counts.feasible += nvar;
    t->counts.bound_skipped += nvar;
    return 2;
}

/* The tail of a line (sp_walker.tail): micro-batches mbs[0..nmb) of the line headed by p, nvar
 * plans each. Proven unable to matter when the bound at mbs[0] (the least: it grows with mb)
 * scores worse than everything kept and is dominated on the frontiers at the largest headroom
 * the subtree's model states leave, or failing that at mbs[0]'s own (memory grows with mb:
 * space.c). Then only memory is computed, to count the feasible plans: they are a prefix of
 * the micro-batches (the same monotonicity), found by fit_prefix. Plans the bound skips are
 * counted in feasible and bound_skipped, those over memory in over_memory (memory_checked for
 * the heads whose memory was computed, over_memory_proven for the rest). When the line bound
 * proves nothing, the head alone may be (tail_head). */
static int ts_tail(sp_walker *w, const mp_plan *p, const int64_t *mbs, int nmb, uint64_t nvar)
{
    tstate *t = (tstate *)w;
    if (!t->have_states || t->sc->eo->comm_compute_slowdown_frac < 0)
        return 0;
    group_bound(t, p);
    double lb = sb_step_lb_s(&t->bound, mbs[0], p->recompute);
    const double tps = (double)p->gb * (double)p->seq;
    if (t->have_wo_est && !cannot_matter(t, lb, tps, -INFINITY) && t->nheap >= t->sc->k &&
        t->have_b) {
        /* The GEMMs alone prove nothing: add the other compute and the communication no
         * overlap hides (bound.c). */
        const double lo_s = term_at(t, p, mbs[0]), hi_s = term_at(t, p, mbs[nmb - 1]);
        lb = fmax(lb, sb_line_lb_s(&t->bound, mbs[0], mbs[nmb - 1], p->recompute, lo_s, hi_s));
    }
    int lo = 0; /* micro-batches below lo are known to fit */
    int have_head = 0;
    double head_headroom = 0;
    if (!cannot_matter(t, lb, tps, t->sub_capacity - t->sub_states)) {
        double headroom = 0;
        if (!cannot_matter(t, lb, tps, -INFINITY))
            return tail_head(t, p, nmb, nvar, NAN); /* the memory would not help the line */
        int fit = memory_fit(t, p, &headroom);
        if (fit < 0)
            return 0;
        if (fit == 0) /* over memory, as every larger micro-batch */
            return tail_over_memory(t, nmb, nvar);
        if (!cannot_matter(t, lb, tps, headroom))
            return tail_head(t, p, nmb, nvar, headroom);
        lo = 1;
        have_head = 1;
        head_headroom = headroom;
    }
    uint64_t checked_over = 0;
    if (fit_prefix(t, p, mbs, nmb, &lo, have_head ? head_headroom : NAN, &checked_over) != 0)
        return 0; /* nothing counted yet: the walk evaluates them and reports the failure */
    const uint64_t feas = (uint64_t)lo * nvar, over = (uint64_t)(nmb - lo) * nvar;
    t->counts.feasible += feas;
    t->counts.bound_skipped += feas;
    t->counts.over_memory += over;
    t->counts.memory_checked += checked_over;
    t->counts.over_memory_proven += over - checked_over;
    return 1;
}

static void ts_skip(sp_walker *w, uint64_t n)
{
    tstate *t = (tstate *)w;
    t->counts.over_memory += n;
    t->counts.over_memory_proven += n;
}

/* ---- the search ------------------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Work items: one sharding (ZeRO/HSDP value) of one shape, so that a large shape is shared by
 * the threads and dynamic scheduling ends with small pieces (a whole shape of DeepSeek-V3 on
 * 16,384 GPUs is up to 3% of the space; one of its shardings a few hundredths of that). Sorted
 * by the shape's size, largest first, then shape, then sharding: the shardings of a shape are
 * consecutive, so a thread's consecutive items mostly share a shape and its axes (computed once
 * per run of them), and one thread walks the plans in the order of a whole-shape walk (the
 * order the top list fills in, on which the variants' pruning depends). */
typedef struct {
    uint64_t size;  /* plans of the shape (the sort key) */
    uint64_t plans; /* plans of this item */
    size_t idx;     /* shape */
    int shard;      /* index into the shape's sharding values */
} order_item;

static int order_cmp(const void *a, const void *b)
{
    const order_item *x = a, *y = b;
    if (x->size != y->size)
        return x->size < y->size ? 1 : -1;
    if (x->idx != y->idx)
        return (x->idx > y->idx) - (x->idx < y->idx);
    return (x->shard > y->shard) - (x->shard < y->shard);
}

/* Below opts.parallel_min_plans (MP_SEARCH_PARALLEL_MIN_PLANS) the search runs on one thread:
 * a few tens of milliseconds of work, where starting and joining a team (and, on a loaded
 * machine, a woken thread waiting for a core while the other spins at the barrier) cost more
 * than the second thread gains; measured with bench/search_speed.sh (two threads 2-3x slower
 * than one on the 20,268 plans of Llama 2 7B on 8 H100). Results do not depend on it. */

/* The work items of the shapes, sorted (order_cmp); *order malloc'd. */
static mp_status work_items(const sp_space *space, const sp_shape *shapes, size_t nshapes,
                            order_item **order, size_t *n)
{
    *order = NULL;
    *n = 0;
    sp_axes *ax = malloc(sizeof *ax);
    size_t cap = nshapes + 1;
    order_item *o = malloc(cap * sizeof *o);
    if (!ax || !o) {
        free(ax);
        free(o);
        return MP_ERR_NOMEM;
    }
    for (size_t i = 0; i < nshapes; i++) {
        sp_shape_axes(space, &shapes[i], ax);
        const int ns = ax->nshard > 0 ? ax->nshard : 1;
        if (*n + (size_t)ns > cap) {
            size_t nc = 2 * cap + (size_t)ns;
            order_item *g = realloc(o, nc * sizeof *g);
            if (!g) {
                free(ax);
                free(o);
                return MP_ERR_NOMEM;
            }
            o = g;
            cap = nc;
        }
        /* Every sharding has the same number of plans below it (the other axes do not depend
         * on it); the first takes the remainder of a saturated count. */
        const uint64_t each = shapes[i].size / (uint64_t)ns;
        for (int k = 0; k < ns; k++)
            o[(*n)++] = (order_item){shapes[i].size,
                                     k ? each : shapes[i].size - each * (uint64_t)(ns - 1), i, k};
    }
    free(ax);
    qsort(o, *n, sizeof *o, order_cmp);
    *order = o;
    return MP_OK;
}

static mp_status evaluate_full(const mp_model *m, const mp_cluster *c, int ci,
                               const mp_search_opts *o, const mp_plan *p, mp_estimate *e,
                               mp_search_entry *out, mp_diag *diag)
{
    mp_status st = mp_estimate_plan(m, c, p, o->estimate, e, diag);
    if (st != MP_OK)
        return st;
    st = fill_entry(m, c, ci, o, p, e, out);
    if (st != MP_OK) {
        mp_diag_add(diag, "search: the energy model failed for this plan (%s)", mp_status_str(st));
        return st;
    }
    memcpy(out->bottleneck, e->bottleneck, sizeof out->bottleneck);
    return MP_OK;
}

mp_status mp_search_evaluate(const mp_model *m, const mp_cluster *c, int cluster_index,
                             const mp_search_opts *opts, const mp_plan *p, mp_search_entry *out,
                             mp_diag *diag)
{
    memset(out, 0, sizeof *out);
    mp_estimate *e = malloc(sizeof *e);
    if (!e)
        return MP_ERR_NOMEM;
    mp_status st = evaluate_full(m, c, cluster_index, opts, p, e, out, diag);
    free(e);
    return st;
}

static void tstate_free(tstate *t)
{
    free(t->e);
    free(t->cache);
    mp_est_memo_destroy(t->memo);
    free(t->heap);
    free(t->fm.a);
    free(t->fc.a);
}

/* Fill the bottleneck texts of a list by re-evaluating its plans. */
static void fill_bottlenecks(const search_ctx *sc, mp_search_entry *a, int n, mp_estimate *e)
{
    for (int i = 0; i < n; i++)
        if (mp_estimate_plan(sc->m, &sc->clusters[a[i].cluster], &a[i].plan, sc->o->estimate, e,
                             NULL) == MP_OK)
            memcpy(a[i].bottleneck, e->bottleneck, sizeof a[i].bottleneck);
}

/* Merge the threads' frontiers of one kind: every point, in the total order, into a fresh one. */
static mp_status merge_frontier(tstate *ts, int nt, int kind, mp_search_entry **out, int *nout,
                                int *truncated)
{
    size_t total = 0;
    for (int i = 0; i < nt; i++) {
        frontier *f = kind == FR_MEMORY ? &ts[i].fm : &ts[i].fc;
        total += (size_t)f->n;
        *truncated |= f->truncated;
    }
    mp_search_entry *all = malloc((total + 1) * sizeof *all);
    if (!all)
        return MP_ERR_NOMEM;
    size_t k = 0;
    for (int i = 0; i < nt; i++) {
        frontier *f = kind == FR_MEMORY ? &ts[i].fm : &ts[i].fc;
        if (f->n)
            memcpy(all + k, f->a, (size_t)f->n * sizeof *all);
        k += (size_t)f->n;
    }
    qsort(all, total, sizeof *all, entry_qsort_cmp);
    frontier g = {kind, NULL, 0, 0, 0, 0};
    for (size_t i = 0; i < total && !g.nomem; i++)
        fr_insert(&g, &all[i]);
    free(all);
    if (g.nomem) {
        free(g.a);
        return MP_ERR_NOMEM;
    }
    *truncated |= g.truncated;
    *out = g.a;
    *nout = g.n;
    return MP_OK;
}

/* The job must be one the estimator takes (precision on this GPU, ...): ask it once per
 * cluster with the first plan of its first shape, so the error names the problem. */
static mp_status check_job(const sp_space *space, const mp_cluster *clusters, const sp_shape *shapes,
                           size_t nshapes, mp_estimate *scratch, mp_diag *diag)
{
    const mp_search_opts *o = space->o;
    sp_axes *ax = malloc(sizeof *ax);
    if (!ax)
        return MP_ERR_NOMEM;
    mp_status st = MP_OK;
    int checked[MP_SEARCH_MAX_CLUSTERS] = {0};
    for (size_t i = 0; i < nshapes && st == MP_OK; i++) {
        const sp_shape *sh = &shapes[i];
        if (checked[sh->cluster])
            continue;
        checked[sh->cluster] = 1;
        sp_shape_axes(space, sh, ax);
        mp_plan p = space->base;
        p.tp = sh->tp; p.cp = sh->cp; p.pp = sh->pp; p.dp = sh->dp;
        p.zero = ax->shard_zero[0]; p.hsdp = ax->shard_hsdp[0];
        p.fsdp = p.zero == 3 ? space->base.fsdp : 0;
        p.ep = ax->ep[0]; p.etp = ax->etp[0]; p.cp_algo = ax->cpa[0];
        p.vpp = ax->vpp_lo; p.sp = ax->sp[0]; p.recompute = ax->rc[0]; p.mb = ax->mb[0];
        p.schedule = o->pin.schedule_given ? o->pin.schedule
                     : p.vpp > 1 ? MP_SCHED_INTERLEAVED : MP_SCHED_1F1B;
        mp_diag pd = {0};
        if (mp_estimate_plan(space->m, &clusters[sh->cluster], &p, o->estimate, scratch, &pd) ==
            MP_ERR_INPUT) {
            mp_diag_add(diag, "search: %s", pd.text);
            st = MP_ERR_INPUT;
        }
    }
    free(ax);
    return st;
}

/* Threads for a space of `plans` plans in norder work items (parallel_min_plans). */
static int thread_count(const mp_search_opts *o, uint64_t plans, size_t norder)
{
#ifdef _OPENMP
    int nt = o->threads > 0 ? o->threads : omp_get_max_threads();
#else
    int nt = 1; /* built without OpenMP: serial, same results */
#endif
    if (nt <= 0)
        nt = 1;
    const int64_t min_plans = o->parallel_min_plans > 0 ? o->parallel_min_plans
                                                        : MP_SEARCH_PARALLEL_MIN_PLANS;
    if (plans < (uint64_t)min_plans)
        nt = 1;
    if ((size_t)nt > norder)
        nt = norder > 0 ? (int)norder : 1;
    return nt;
}

/* Walk the work items on nt threads (ts: their states), largest first, reporting progress. */
static void run_items(const sp_space *space, const mp_cluster *clusters, const sp_shape *shapes,
                      const order_item *order, size_t norder, tstate *ts, int nt, uint64_t plans)
{
    const mp_search_opts *o = space->o;
    uint64_t done_plans = 0;
    const double progress_total = (double)(plans ? plans : 1);
#ifdef _OPENMP
#pragma omp parallel num_threads(nt)
#endif
    {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        tstate *t = &ts[tid];
        sp_axes *ax = malloc(sizeof *ax);
        if (!ax)
            t->nomem = 1;
        size_t ax_shape = (size_t)-1; /* the shape ax holds */
        long n = (long)norder;
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
        for (long i = 0; i < n; i++) {
            if (t->nomem)
                continue;
            const sp_shape *sh = &shapes[order[i].idx];
            t->c = &clusters[sh->cluster];
            t->ci = sh->cluster;
            if (ax_shape != order[i].idx) {
                sp_shape_axes(space, sh, ax);
                ax_shape = order[i].idx;
            }
            sp_walk(space, sh, ax, order[i].shard, order[i].shard + 1, &t->w);
            if (t->fm.nomem || t->fc.nomem)
                t->nomem = 1;
            uint64_t d;
#ifdef _OPENMP
#pragma omp atomic capture
#endif
            d = done_plans += order[i].plans;
            if (o->progress && tid == 0)
                o->progress(o->progress_ctx, (double)d / progress_total, d);
        }
        free(ax);
    }
    if (o->progress)
        o->progress(o->progress_ctx, 1.0, done_plans);
}

/* Merge the threads' counts, top lists, frontiers and ties into out (see tstate). Returns
 * non-zero when out of memory; *have_distinct: out->next_distinct was found. */
static int merge_threads(tstate *ts, int nt, const mp_search_opts *o, mp_search_result *out,
                         int *have_distinct_out)
{
    int nomem = 0;

    size_t nall = 0;
    for (int i = 0; i < nt; i++) {
        nomem |= ts[i].nomem;
        nall += (size_t)ts[i].nheap;
        mp_search_counts *c = &ts[i].counts;
        out->counts.evaluated += c->evaluated;
        out->counts.memory_checked += c->memory_checked;
        out->counts.bound_skipped += c->bound_skipped;
        out->counts.feasible += c->feasible;
        out->counts.over_memory += c->over_memory;
        out->counts.over_memory_proven += c->over_memory_proven;
        out->counts.failed += c->failed;
        out->counts.order_skipped += ts[i].order_skipped;
        out->rank += ts[i].rank_better;
        if (ts[i].have_least &&
            (!out->have_least_memory || ts[i].least.memory_bytes < out->least_memory.memory_bytes ||
             (ts[i].least.memory_bytes == out->least_memory.memory_bytes &&
              mp_search_entry_cmp(&ts[i].least, &out->least_memory) < 0))) {
            out->least_memory = ts[i].least;
            out->have_least_memory = 1;
        }
    }
    if (!nomem) {
        out->top = malloc((nall + 1) * sizeof *out->top);
        if (!out->top)
            nomem = 1;
    }
    if (!nomem) {
        size_t k = 0;
        for (int i = 0; i < nt; i++) {
            if (ts[i].nheap)
                memcpy(out->top + k, ts[i].heap, (size_t)ts[i].nheap * sizeof *out->top);
            k += (size_t)ts[i].nheap;
        }
        qsort(out->top, nall, sizeof *out->top, entry_qsort_cmp);
        out->ntop = (int)(nall < (size_t)o->top_n ? nall : (size_t)o->top_n);
        if (merge_frontier(ts, nt, FR_MEMORY, &out->pareto_memory, &out->npareto_memory,
                           &out->truncated) != MP_OK ||
            (o->price_per_gpu_hour > 0 &&
             merge_frontier(ts, nt, FR_COST, &out->pareto_cost, &out->npareto_cost,
                            &out->truncated) != MP_OK))
            nomem = 1;
    }
    /* #1's score s*, the plans sharing it, and the best plan scoring worse (see tstate). */
    int have_distinct = 0;
    {
        int have_best = 0;
        double best = 0;
        for (int i = 0; i < nt; i++)
            if (ts[i].have_a && (!have_best || ts[i].a.score < best)) {
                best = ts[i].a.score;
                have_best = 1;
            }
        for (int i = 0; i < nt && have_best; i++) {
            if (!ts[i].have_a)
                continue;
            if (ts[i].a.score == best)
                out->winner_ties += ts[i].a_ties;
            const mp_search_entry *cand[2] = {&ts[i].a, ts[i].have_b ? &ts[i].b : NULL};
            for (int k = 0; k < 2; k++)
                if (cand[k] && cand[k]->score > best &&
                    (!have_distinct || mp_search_entry_cmp(cand[k], &out->next_distinct) < 0)) {
                    out->next_distinct = *cand[k];
                    have_distinct = 1;
                }
        }
    }
    *have_distinct_out = have_distinct;
    return nomem;
}

/* The states of nt threads: walker callbacks, frontiers, an estimate, a top heap and a
 * collective cache each; the hot loop's options with memory before time (with pruning a plan
 * over memory is never timed: the search needs only its memory; the plan needing the least is
 * evaluated in full for the report; the exhaustive search, prune 0, times every plan). NULL
 * when out of memory for the array; a thread short of its buffers is marked nomem. */
static tstate *tstates_create(const search_ctx *sc, const mp_estimate_opts *hot, int nt)
{
    const mp_search_opts *o = sc->o;
    tstate *ts = calloc((size_t)nt, sizeof *ts);
    if (!ts)
        return NULL;
    for (int i = 0; i < nt; i++) {
        ts[i].w.visit = ts_visit;
        ts[i].w.skip = ts_skip;
        ts[i].w.variant = ts_variant;
        ts[i].w.tail = ts_tail;
        ts[i].w.prune = o->prune;
        ts[i].sc = sc;
        ts[i].fm.kind = FR_MEMORY;
        ts[i].fc.kind = FR_COST;
        ts[i].e = malloc(sizeof *ts[i].e);
        ts[i].heap = malloc((size_t)sc->k * sizeof *ts[i].heap);
        ts[i].cache = malloc(sizeof *ts[i].cache);
        ts[i].eo = *hot;
        ts[i].eo.cache = ts[i].cache;
        ts[i].memo = mp_est_memo_create();
        ts[i].eo.memo = ts[i].memo;
        ts[i].eo.feasibility_only = o->prune ? 1 : 0;
        ts[i].eo_mem = ts[i].eo;
        ts[i].eo_mem.memory_only = 1;
        ts[i].eo_var = ts[i].eo;
        ts[i].eo_var.memory_kept = 1;
        if (ts[i].cache) {
            mp_wl_cache_init(ts[i].cache);
            ts[i].cache->trust_addresses = 1; /* the model and clusters are const during the search */
        }
        if (!ts[i].e || !ts[i].heap || !ts[i].cache || !ts[i].memo)
            ts[i].nomem = 1;
    }
    return ts;
}

/* After the merge: the bottleneck texts of the lists, the least-memory plan in full, and the
 * explanations of #1 against #2 and against the first plan scoring differently. */
static void finish_result(const search_ctx *sc, const mp_cluster *clusters, int nclusters,
                          int have_distinct, mp_estimate *scratch, mp_search_result *out)
{
    const mp_model *m = sc->m;
    const mp_search_opts *o = sc->o;
    if (out->ntop)
        out->have_least_memory = 0; /* only reported when nothing fits */
    out->rank = out->rank_feasible ? out->rank + 1 : 0;
    fill_bottlenecks(sc, out->top, out->ntop, scratch);
    fill_bottlenecks(sc, out->pareto_memory, out->npareto_memory, scratch);
    fill_bottlenecks(sc, out->pareto_cost, out->npareto_cost, scratch);
    if (out->have_least_memory) {
        /* Found from its memory alone (feasibility_only): evaluated in full for the report. */
        mp_search_entry lm;
        const int ci = out->least_memory.cluster;
        if (evaluate_full(m, &clusters[ci], ci, o, &out->least_memory.plan, scratch, &lm, NULL) == MP_OK)
            out->least_memory = lm;
    }
    if (out->ntop >= 2 &&
        mp_search_explain(m, clusters, nclusters, o, &out->top[0], 1, &out->top[1], 2,
                          &out->explanation, NULL) == MP_OK)
        out->have_explanation = 1;
    if (out->have_explanation && out->explanation.tied && have_distinct) {
        out->next_distinct_rank = out->winner_ties + 1;
        fill_bottlenecks(sc, &out->next_distinct, 1, scratch);
        if (mp_search_explain(m, clusters, nclusters, o, &out->top[0], 1, &out->next_distinct,
                              out->next_distinct_rank > INT_MAX ? INT_MAX : (int)out->next_distinct_rank,
                              &out->explanation_next, NULL) != MP_OK)
            out->next_distinct_rank = 0;
    }
}

mp_status mp_search(const mp_model *m, const mp_cluster *clusters, int nclusters,
                    const mp_search_opts *o, mp_search_result *out, mp_diag *diag)
{
    memset(out, 0, sizeof *out);
    const double t0 = now_s();
    if (nclusters < 1 || nclusters > MP_SEARCH_MAX_CLUSTERS) {
        mp_diag_add(diag, "search: %d GPU counts: expected 1..%d", nclusters, MP_SEARCH_MAX_CLUSTERS);
        return MP_ERR_INPUT;
    }
    mp_status st = mp_model_check(m, diag);
    if (st != MP_OK)
        return st;
    sp_space space;
    if ((st = sp_space_init(&space, m, o, diag)) != MP_OK)
        return st;
    if (o->rank_plan && (o->rank_cluster < 0 || o->rank_cluster >= nclusters)) {
        mp_diag_add(diag, "search: rank_cluster = %d: expected 0..%d", o->rank_cluster, nclusters - 1);
        return MP_ERR_INPUT;
    }

    /* The shapes of every cluster. */
    sp_shape *shapes = NULL;
    size_t nshapes = 0, cap = 0;
    for (int ci = 0; ci < nclusters && st == MP_OK; ci++)
        st = sp_shapes(&space, ci, clusters[ci].num_gpus, &shapes, &nshapes, &cap, &out->counts);
    if (st == MP_OK && out->counts.plans > MP_SEARCH_MAX_PLANS) {
        mp_diag_add(diag, "search: the space has %llu plans, more than %llu: pin some keys (--fix)",
                    (unsigned long long)out->counts.plans, (unsigned long long)MP_SEARCH_MAX_PLANS);
        st = MP_ERR_RANGE;
    }
    if (st == MP_OK && out->counts.plans == 0) {
        /* Nothing can be formed: say why and what can, evaluate nothing. */
        int64_t gpus[MP_SEARCH_MAX_CLUSTERS];
        for (int ci = 0; ci < nclusters; ci++)
            gpus[ci] = clusters[ci].num_gpus;
        sp_explain_unformable(&space, gpus, nclusters, clusters[0].gpus_per_node, &out->counts,
                              out->unformable, sizeof out->unformable);
        free(shapes);
        out->threads = 1;
        out->wall_s = now_s() - t0;
        return MP_OK;
    }
    mp_estimate *scratch = malloc(sizeof *scratch);
    order_item *order = NULL;
    size_t norder = 0;
    if (st == MP_OK && !scratch)
        st = MP_ERR_NOMEM;
    if (st == MP_OK)
        st = work_items(&space, shapes, nshapes, &order, &norder);
    if (st != MP_OK)
        goto fail;

    /* The job must be one the estimator takes (precision on this GPU, ...). */
    if ((st = check_job(&space, clusters, shapes, nshapes, scratch, diag)) != MP_OK)
        goto fail;

    /* The hot loop computes every number but formats no text (over half of an evaluation); the
     * plans reported are re-evaluated with the caller's options. */
    mp_estimate_opts hot;
    if (o->estimate)
        hot = *o->estimate;
    else
        mp_estimate_opts_init(&hot);
    hot.skip_text = 1;
    hot.skip_per_stage = 1; /* the hot loop reads the most loaded stage only */
    search_ctx sc = {m, clusters, o, &hot, o->top_n, NULL, !o->all_orders || o->pin.order_listed};
    if (o->rank_plan) {
        mp_diag rd = {0};
        if (evaluate_full(m, &clusters[o->rank_cluster], o->rank_cluster, o, o->rank_plan, scratch,
                          &out->rank_entry, &rd) != MP_OK) {
            mp_diag_add(diag, "search: the plan to rank cannot be evaluated: %s", rd.text);
            st = MP_ERR_INPUT;
            goto fail;
        }
        out->rank_feasible = out->rank_entry.feasible;
        out->rank_in_space = sp_contains(&space, clusters[o->rank_cluster].num_gpus, o->rank_plan);
        sc.rank_ref = &out->rank_entry;
    }

    const int nt = thread_count(o, out->counts.plans, norder);
    out->threads = nt;
    tstate *ts = tstates_create(&sc, &hot, nt);
    if (!ts) {
        st = MP_ERR_NOMEM;
        goto fail;
    }

    run_items(&space, clusters, shapes, order, norder, ts, nt, out->counts.plans);

    /* Merge. */
    int have_distinct = 0;
    int nomem = merge_threads(ts, nt, o, out, &have_distinct);
    for (int i = 0; i < nt; i++)
        tstate_free(&ts[i]);
    free(ts);
    if (nomem) {
        st = MP_ERR_NOMEM;
        goto fail;
    }
    finish_result(&sc, clusters, nclusters, have_distinct, scratch, out);
    free(scratch);
    free(order);
    free(shapes);
    out->wall_s = now_s() - t0;
    return MP_OK;

fail:
    free(scratch);
    free(order);
    free(shapes);
    mp_search_result_free(out);
    return st;
}

void mp_search_result_free(mp_search_result *r)
{
    if (!r)
        return;
    free(r->top);
    free(r->pareto_memory);
    free(r->pareto_cost);
    memset(r, 0, sizeof *r);
}

/* ---- explanation ------------------------------------------------------------------------ */

static void appendf(char *buf, size_t cap, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The step-time part in the step (include/meshplan/parts.h), other than `except` (-1: none), in
 * which a and b differ most; the first of equal differences. */
static int widest_time_part(const mp_time *a, const mp_time *b, int except)
{
    int best = 0;
    double bd = -1.0;
    for (int k = 0; k < MP_TIME_PART_COUNT; k++) {
        double d = fabs(mp_time_part_s(b, (mp_time_part)k) - mp_time_part_s(a, (mp_time_part)k));
        if (mp_time_parts[k].kind != MP_TIME_KIND_BESIDE && k != except && d > bd) {
            best = k;
            bd = d;
        }
    }
    return best;
}

/* The part of the memory total in which a and b differ most; the first of equal differences. */
static int widest_memory_part(const mp_memory *a, const mp_memory *b)
{
    int best = 0;
    double bd = -1.0;
    for (int k = 0; k < MP_MEMORY_PART_COUNT; k++) {
        double d = fabs(mp_memory_part_bytes(b, (mp_memory_part)k) - mp_memory_part_bytes(a, (mp_memory_part)k));
        if (mp_memory_parts[k].kind == MP_MEM_KIND_PART && d > bd) {
            best = k;
            bd = d;
        }
    }
    return best;
}

static void appendf(char *buf, size_t cap, const char *fmt, ...)
{
    size_t n = strlen(buf);
    if (n + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, cap - n, fmt, ap);
    va_end(ap);
}

#define GiB 1073741824.0

mp_status mp_search_explain(const mp_model *m, const mp_cluster *clusters, int nclusters,
                            const mp_search_opts *o, const mp_search_entry *a, int ra,
                            const mp_search_entry *b, int rb, mp_search_explanation *x, mp_diag *diag)
{
    memset(x, 0, sizeof *x);
    if (a->cluster < 0 || a->cluster >= nclusters || b->cluster < 0 || b->cluster >= nclusters ||
        ra < 1 || rb < 1) {
        mp_diag_add(diag, "search: explain: cluster index out of range");
        return MP_ERR_INPUT;
    }
    mp_estimate *ea = malloc(sizeof *ea), *eb = malloc(sizeof *eb);
    mp_status st = (ea && eb) ? MP_OK : MP_ERR_NOMEM;
    if (st == MP_OK)
        st = mp_estimate_plan(m, &clusters[a->cluster], &a->plan, o->estimate, ea, diag);
    if (st == MP_OK)
        st = mp_estimate_plan(m, &clusters[b->cluster], &b->plan, o->estimate, eb, diag);
    if (st != MP_OK) {
        free(ea);
        free(eb);
        return st;
    }
    /* Plan keys that differ. */
    const mp_plan *p = &a->plan, *q = &b->plan;
    char oa[48], ob[48];
    struct { const char *k; long long u, v; } keys[] = {
        {"gpus", (long long)a->gpus, (long long)b->gpus}, {"tp", (long long)p->tp, (long long)q->tp},
        {"cp", (long long)p->cp, (long long)q->cp}, {"pp", (long long)p->pp, (long long)q->pp},
        {"vpp", (long long)p->vpp, (long long)q->vpp}, {"dp", (long long)p->dp, (long long)q->dp},
        {"ep", (long long)p->ep, (long long)q->ep}, {"etp", (long long)p->etp, (long long)q->etp},
        {"mb", (long long)p->mb, (long long)q->mb},
        {"sp", p->sp, q->sp}, {"zero", p->zero, q->zero}, {"hsdp", (long long)p->hsdp, (long long)q->hsdp}};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (keys[i].u != keys[i].v)
            appendf(x->differs, sizeof x->differs, "%s%s %lld vs %lld", x->differs[0] ? ", " : "",
                    keys[i].k, keys[i].u, keys[i].v);
    if (p->recompute != q->recompute)
        appendf(x->differs, sizeof x->differs, "%srecompute %s vs %s", x->differs[0] ? ", " : "",
                mp_recompute_name(p->recompute), mp_recompute_name(q->recompute));
    if (p->cp_algo != q->cp_algo)
        appendf(x->differs, sizeof x->differs, "%scp_algo %s vs %s", x->differs[0] ? ", " : "",
                mp_cp_algo_name(p->cp_algo), mp_cp_algo_name(q->cp_algo));
    if (p->order_listed != q->order_listed ||
        (p->order_listed && memcmp(p->order, q->order, sizeof p->order)))
        appendf(x->differs, sizeof x->differs, "%srank order %s vs %s", x->differs[0] ? ", " : "",
                mp_plan_order_text(p, oa, sizeof oa), mp_plan_order_text(q, ob, sizeof ob));
    if (p->schedule != q->schedule)
        appendf(x->differs, sizeof x->differs, "%sschedule %s vs %s", x->differs[0] ? ", " : "",
                mp_schedule_name(p->schedule), mp_schedule_name(q->schedule));

    /* The step-time term and the memory component that differ most. */
    const int bt = widest_time_part(&ea->time, &eb->time, -1);
    snprintf(x->term, sizeof x->term, "%s", mp_time_parts[bt].label);
    x->term_winner_s = mp_time_part_s(&ea->time, (mp_time_part)bt);
    x->term_runner_up_s = mp_time_part_s(&eb->time, (mp_time_part)bt);
    const int bm = widest_memory_part(&ea->memory, &eb->memory);
    snprintf(x->memory_term, sizeof x->memory_term, "%s", mp_memory_parts[bm].key);
    x->memory_winner_bytes = mp_memory_part_bytes(&ea->memory, (mp_memory_part)bm);
    x->memory_runner_up_bytes = mp_memory_part_bytes(&eb->memory, (mp_memory_part)bm);
    x->step_winner_s = ea->step_s;
    x->step_runner_up_s = eb->step_s;
    x->tied = a->score == b->score;

    /* The sentences. */
    char *t = x->text;
    const size_t cap = sizeof x->text;
    const char *differs = x->differs[0] ? x->differs : "no plan key";
    if (x->tied) {
        appendf(t, cap, "#%d and #%d (%s) tie on %s", ra, rb, differs, mp_objective_name(o->objective));
        if (a->headroom_bytes != b->headroom_bytes)
            appendf(t, cap, "; #%d comes first because it leaves more memory headroom (%.1f vs %.1f GiB).",
                    ra, a->headroom_bytes / GiB, b->headroom_bytes / GiB);
        else
            appendf(t, cap, " and headroom; #%d comes first in the tie-break order of plan keys.", ra);
        appendf(t, cap, " Step %.4g s vs %.4g s.", ea->step_s, eb->step_s);
    } else {
        appendf(t, cap, "#%d beats #%d (%s) on %s: ", ra, rb, differs, mp_objective_name(o->objective));
        switch (o->objective) {
        case MP_OBJ_TIME_TO_TRAIN:
            appendf(t, cap, "%.3g vs %.3g days to train %.3g tokens. ", a->time_to_train_s / 86400,
                    b->time_to_train_s / 86400, o->tokens);
            break;
        case MP_OBJ_COST:
            appendf(t, cap, "$%.4g vs $%.4g%s. ", a->cost_usd, b->cost_usd,
                    o->tokens > 0 ? "" : " per million tokens");
            break;
        case MP_OBJ_ENERGY:
            appendf(t, cap, "%.4g vs %.4g J per token. ", a->energy_J_per_token, b->energy_J_per_token);
            break;
        default:
            appendf(t, cap, "%.6g vs %.6g tokens/s (%.3g%% more). ", a->tokens_per_s, b->tokens_per_s,
                    100.0 * (a->tokens_per_s / b->tokens_per_s - 1.0));
            break;
        }
        appendf(t, cap, "Step %.6g s vs %.6g s; the term that differs most is %s: %.4g s vs %.4g s",
                ea->step_s, eb->step_s, x->term, x->term_winner_s, x->term_runner_up_s);
        /* The second largest time difference, when it is a sizeable offset. */
        const int b2 = widest_time_part(&ea->time, &eb->time, bt);
        const double u2 = mp_time_part_s(&ea->time, (mp_time_part)b2), v2 = mp_time_part_s(&eb->time, (mp_time_part)b2);
        double d2 = v2 - u2;
        if (fabs(d2) > 0.1 * fabs(x->term_runner_up_s - x->term_winner_s) && fabs(d2) > 0)
            appendf(t, cap, ", then %s: %.4g s vs %.4g s", mp_time_parts[b2].label, u2, v2);
        appendf(t, cap, ".");
    }
    appendf(t, cap, " Memory %.1f vs %.1f GiB of %.1f",
            ea->memory.total / GiB, eb->memory.total / GiB, ea->memory.capacity / GiB);
    if (x->memory_winner_bytes != x->memory_runner_up_bytes)
        appendf(t, cap, " (%s differ%s most: %.1f vs %.1f GiB)", x->memory_term,
                strcmp(x->memory_term, "optimizer") && strcmp(x->memory_term, "logits") ? "" : "s",
                x->memory_winner_bytes / GiB, x->memory_runner_up_bytes / GiB);
    appendf(t, cap, ".");
    free(ea);
    free(eb);
    return MP_OK;
}
