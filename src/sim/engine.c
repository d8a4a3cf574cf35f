/* src/sim/engine.c — the discrete-event engine: tasks on per-rank streams with dependencies.
 *
 * A stream runs its tasks one at a time in issue order (a CUDA stream); a task starts when it is
 * at the head of its stream, the stream is free and all its dependencies have ended. The only
 * events are task ends, kept in a binary heap ordered by (time, insertion sequence) — the
 * ordering libuv's timers use — so equal times resolve the same way every run. Time is integer
 * nanoseconds.
 *
 * Contention: a compute task runs 1 + contention times slower while any communication task runs
 * on its rank. Its remaining nominal work is kept; when the rank's communication starts or stops,
 * the work done so far is subtracted and a new end event is pushed (the old one is recognised as
 * stale by a version number), so a rate change costs one event.
 *
 * Cost: O((tasks + edges) log tasks) time, O(tasks + edges) memory; the number of processed
 * events is capped by max_events.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

int32_t sim_task_add(sim_graph *g, int rank, int stream, sim_kind kind, int64_t dur_ns)
{
    if (g->n >= g->max_tasks || g->n >= INT32_MAX - 1)
        return -1;
    if (g->n == g->cap) {
        int64_t nc = g->cap ? 2 * g->cap : 1024;
        if (nc > g->max_tasks)
            nc = g->max_tasks;
        sim_task *t = realloc(g->t, (size_t)nc * sizeof *t);
        if (!t)
            return -1;
        g->t = t;
        g->cap = nc;
    }
    sim_task *x = &g->t[g->n];
    memset(x, 0, sizeof *x);
    x->dur_ns = dur_ns < 0 ? 0 : dur_ns;
    x->rank = rank;
    x->stream = (uint8_t)stream;
    x->kind = (uint8_t)kind;
    x->mb = x->chunk = x->layer = -1;
    x->peer = -1;
    x->start_ns = x->end_ns = -1;
    return (int32_t)g->n++;
}

int sim_dep(sim_graph *g, int32_t from, int32_t to)
{
    if (from < 0 || to < 0 || from == to)
        return 0;
    if (g->ne == g->ecap) {
        int64_t nc = g->ecap ? 2 * g->ecap : 4096;
        int32_t *a = realloc(g->efrom, (size_t)nc * sizeof *a);
        if (!a)
            return -1;
        g->efrom = a;
        int32_t *b = realloc(g->eto, (size_t)nc * sizeof *b);
        if (!b)
            return -1;
        g->eto = b;
        g->ecap = nc;
    }
    g->efrom[g->ne] = from;
    g->eto[g->ne] = to;
    g->ne++;
    return 0;
}

void sim_graph_free(sim_graph *g)
{
    free(g->t);
    free(g->efrom);
    free(g->eto);
    free(g->succ);
    free(g->pred_of);
    free(g->pred_off);
    free(g->q);
    free(g->q_off);
    free(g->q_head);
    free(g->busy);
    free(g->active_comm);
    free(g->heap);
    memset(g, 0, sizeof *g);
}

/* ---- the event heap -------------------------------------------------------------------- */

static int ev_less(const sim_event *a, const sim_event *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static int heap_push(sim_graph *g, int32_t task, int64_t t)
{
    if (g->nheap == g->heapcap) {
        int64_t nc = g->heapcap ? 2 * g->heapcap : 1024;
        sim_event *h = realloc(g->heap, (size_t)nc * sizeof *h);
        if (!h)
            return -1;
        g->heap = h;
        g->heapcap = nc;
    }
    sim_event e = {t, g->seq++, task, g->t[task].version};
    int64_t i = g->nheap++;
    while (i > 0) {
        int64_t parent = (i - 1) / 2;
        if (!ev_less(&e, &g->heap[parent]))
            break;
        g->heap[i] = g->heap[parent];
        i = parent;
    }
    g->heap[i] = e;
    return 0;
}

static sim_event heap_pop(sim_graph *g)
{
    sim_event top = g->heap[0];
    sim_event last = g->heap[--g->nheap];
    int64_t i = 0, n = g->nheap;
    for (;;) {
        int64_t l = 2 * i + 1, r = l + 1, m = i;
        const sim_event *best = &last;
        if (l < n && ev_less(&g->heap[l], best)) {
            m = l;
            best = &g->heap[l];
        }
        if (r < n && ev_less(&g->heap[r], best))
            m = r;
        if (m == i)
            break;
        g->heap[i] = g->heap[m];
        i = m;
    }
    if (n > 0)
        g->heap[i] = last;
    return top;
}

/* ---- running -------------------------------------------------------------------------------- */

static int64_t stretch(const sim_graph *g, int64_t work_ns, int slowed)
{
    return slowed ? (int64_t)llround((double)work_ns * (1.0 + g->contention)) : work_ns;
}

/* The rank's communication count changed: re-time its running compute tasks. */
static int retime_rank(sim_graph *g, int rank)
{
    if (g->contention <= 0.0)
        return 0;
    int slowed_now = g->active_comm[rank] > 0;
    static const int compute_streams[] = {SS_COMPUTE, SS_OPT};
    for (size_t k = 0; k < sizeof compute_streams / sizeof compute_streams[0]; k++) {
        int32_t id = g->busy[(int64_t)rank * SS_COUNT + compute_streams[k]];
        if (id < 0)
            continue;
        sim_task *x = &g->t[id];
        if (x->slowed == slowed_now)
            continue;
        int64_t elapsed = g->now - x->resume_ns;
        int64_t done = x->slowed ? (int64_t)llround((double)elapsed / (1.0 + g->contention)) : elapsed;
        x->left_ns -= done;
        if (x->left_ns < 0)
            x->left_ns = 0;
        x->resume_ns = g->now;
        x->slowed = (uint8_t)slowed_now;
        x->version++;
        if (heap_push(g, id, g->now + stretch(g, x->left_ns, slowed_now)))
            return -1;
    }
    return 0;
}

/* Start the head of queue qi if it can start now. */
static int try_start(sim_graph *g, int64_t qi)
{
    if (g->busy[qi] >= 0 || g->q_head[qi] >= g->q_off[qi + 1])
        return 0;
    int32_t id = g->q[g->q_head[qi]];
    sim_task *x = &g->t[id];
    if (x->npred > 0)
        return 0;
    g->busy[qi] = id;
    x->started = 1;
    x->start_ns = g->now;
    x->resume_ns = g->now;
    x->left_ns = x->dur_ns;
    if (SK_IS_COMPUTE(x->kind)) {
        x->slowed = (uint8_t)(g->contention > 0.0 && g->active_comm[x->rank] > 0);
        return heap_push(g, id, g->now + stretch(g, x->dur_ns, x->slowed));
    }
    if (heap_push(g, id, g->now + x->dur_ns))
        return -1;
    if (x->dur_ns > 0 && g->active_comm[x->rank]++ == 0)
        return retime_rank(g, x->rank);
    return 0;
}

/* Build the CSR successor and predecessor lists and the stream queues. */
static int finish_graph(sim_graph *g)
{
    int64_t n = g->n, nq = (int64_t)g->nranks * SS_COUNT;
    int64_t *soff = calloc((size_t)n + 1, sizeof *soff);
    g->pred_off = calloc((size_t)n + 1, sizeof *g->pred_off);
    g->succ = malloc(((size_t)g->ne + 1) * sizeof *g->succ);
    g->pred_of = malloc(((size_t)g->ne + 1) * sizeof *g->pred_of);
    g->q = malloc(((size_t)n + 1) * sizeof *g->q);
    g->q_off = calloc((size_t)nq + 1, sizeof *g->q_off);
    g->q_head = calloc((size_t)nq + 1, sizeof *g->q_head);
    g->busy = malloc(((size_t)nq + 1) * sizeof *g->busy);
    g->active_comm = calloc((size_t)g->nranks + 1, sizeof *g->active_comm);
    if (!soff || !g->pred_off || !g->succ || !g->pred_of || !g->q || !g->q_off || !g->q_head ||
        !g->busy || !g->active_comm) {
        free(soff);
        return -1;
    }
    for (int64_t e = 0; e < g->ne; e++) {
        soff[g->efrom[e] + 1]++;
        g->pred_off[g->eto[e] + 1]++;
    }
    for (int64_t i = 0; i < n; i++) {
        soff[i + 1] += soff[i];
        g->pred_off[i + 1] += g->pred_off[i];
    }
    int32_t *pfill = malloc(((size_t)n + 1) * sizeof *pfill);
    if (!pfill) {
        free(soff);
        return -1;
    }
    for (int64_t i = 0; i < n; i++) {
        g->t[i].succ_off = (int32_t)soff[i];
        g->t[i].succ_n = 0;
        g->t[i].npred = (int32_t)(g->pred_off[i + 1] - g->pred_off[i]);
        pfill[i] = 0;
    }
    for (int64_t e = 0; e < g->ne; e++) {
        sim_task *f = &g->t[g->efrom[e]];
        g->succ[f->succ_off + f->succ_n++] = g->eto[e];
        int32_t to = g->eto[e];
        g->pred_of[g->pred_off[to] + pfill[to]++] = g->efrom[e];
    }
    free(pfill);
    free(soff);
    for (int64_t i = 0; i < n; i++)
        g->q_off[(int64_t)g->t[i].rank * SS_COUNT + g->t[i].stream + 1]++;
    for (int64_t k = 0; k < nq; k++)
        g->q_off[k + 1] += g->q_off[k];
    for (int64_t k = 0; k < nq; k++) {
        g->q_head[k] = g->q_off[k];
        g->busy[k] = -1;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t k = (int64_t)g->t[i].rank * SS_COUNT + g->t[i].stream;
        g->q[g->q_head[k]++] = (int32_t)i;
    }
    for (int64_t k = 0; k < nq; k++)
        g->q_head[k] = g->q_off[k];
    return 0;
}

mp_status sim_graph_run(sim_graph *g, mp_diag *d)
{
    if (finish_graph(g)) {
        mp_diag_add(d, "simulation: out of memory for %lld tasks", (long long)g->n);
        return MP_ERR_NOMEM;
    }
    int64_t nq = (int64_t)g->nranks * SS_COUNT;
    g->now = 0;
    for (int64_t k = 0; k < nq; k++)
        if (try_start(g, k))
            goto nomem;
    while (g->nheap > 0) {
        sim_event ev = heap_pop(g);
        if (++g->events > g->max_events) {
            mp_diag_add(d, "simulation: more than %lld events (max_events); use fewer micro-batches "
                           "or raise the cap", (long long)g->max_events);
            return MP_ERR_RANGE;
        }
        sim_task *x = &g->t[ev.task];
        if (ev.version != x->version)
            continue; /* re-timed since */
        g->now = ev.t;
        x->end_ns = ev.t;
        x->done = 1;
        int64_t qi = (int64_t)x->rank * SS_COUNT + x->stream;
        g->busy[qi] = -1;
        g->q_head[qi]++;
        if (!SK_IS_COMPUTE(x->kind) && x->dur_ns > 0 && --g->active_comm[x->rank] == 0)
            if (retime_rank(g, x->rank))
                goto nomem;
        for (int32_t k = 0; k < x->succ_n; k++) {
            sim_task *s = &g->t[g->succ[x->succ_off + k]];
            if (--s->npred == 0 && try_start(g, (int64_t)s->rank * SS_COUNT + s->stream))
                goto nomem;
        }
        if (try_start(g, qi))
            goto nomem;
    }
    for (int64_t k = 0; k < nq; k++) {
        if (g->q_head[k] < g->q_off[k + 1]) {
            const sim_task *x = &g->t[g->q[g->q_head[k]]];
            mp_diag_add(d, "simulation deadlocked: rank %d stream %s waits at %s (micro-batch %d, "
                           "chunk %d) with %d dependencies unmet",
                        x->rank, sim_stream_name(x->stream), sim_kind_name((sim_kind)x->kind), x->mb,
                        x->chunk, x->npred);
            return MP_ERR_INTERNAL;
        }
    }
    return MP_OK;
nomem:
    mp_diag_add(d, "simulation: out of memory for the event queue");
    return MP_ERR_NOMEM;
}
