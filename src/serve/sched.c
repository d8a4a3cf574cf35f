/* src/serve/sched.c — the serving event loop and each replica's scheduler.
 *
 * Events: request arrivals (already sorted), the end of a replica's engine step, and the end of
 * a KV transfer (disaggregation), ordered by integer-nanosecond time and then insertion, as
 * src/sim/engine.c orders its tasks (libuv's timers: equal times stay deterministic). At equal
 * times a step end comes before an arrival. src/sim's engine plays a static task graph; a
 * serving step is decided only when the previous one ends, so this loop keeps its own heap.
 *
 * The scheduler (one per replica) is vLLM's (V1 engine, vllm/v1/core/sched/scheduler.py):
 *   1. running requests first, in admission order: a decoding one takes 1 token of the step's
 *      budget, a partly prefilled one its next chunk (at most the budget left: chunked prefill);
 *      when its next KV block cannot be had, the most recently admitted running request is
 *      preempted (recompute: its blocks freed, back to the head of the queue with prompt + output
 *      to prefill again; swap: its blocks copied to host memory at the host link's bandwidth,
 *      resumed before any new request when blocks free up);
 *   2. then waiting requests first come first served while sequences < max_seqs, budget is left
 *      and their chunk's blocks are free (no preemption to admit).
 * With prefill_first, vLLM's V0 default instead (V0 engine, vllm/core/scheduler.py
 * _schedule_default, chunked prefill off): whole waiting prompts first, in a prefill-only step;
 * the running requests decode only in a step where no prompt could be admitted
 * (schedule_prompts).
 * Paged KV: blocks of block_tokens tokens (Kwon et al. 2023, SOSP, Sec. 4). A prefill's last
 * chunk emits the first token; each decode step emits one.
 * Router: a new request goes to the replica of its pool with the fewest outstanding requests
 * (lowest index on ties) — vLLM's and SGLang's data-parallel "least requests" balancing.
 *
 * Disaggregation (Splitwise, Patel et al., ISCA 2024; DistServe, Zhong et al., OSDI 2024): a
 * prefill replica runs prompts only; the first token is emitted there; the KV cache then moves
 * to a decode replica (fewest outstanding) over the tier joining their GPUs, priced by coll as a
 * send/recv of each GPU's share, pairs in parallel; transfers into one decode replica queue on
 * its ingress links (incast) first come first served; sent layer by layer while the prefill
 * runs (Splitwise Sec. IV-C), so only what exceeds the prefill's own time, and at least the last
 * layer's share, is exposed. The prefill replica frees its blocks when the transfer ends. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "meshplan/coll.h"
#include "serve/serve_internal.h"

#define MAX_STEPS 100000000LL

enum { EV_STEP, EV_TX };

typedef struct {
    int64_t t_ns, seq;
    int kind;
    int64_t id;
} ev;

typedef struct {
    ev *h;
    int64_t n, cap, seq;
} heap;

static int ev_less(const ev *a, const ev *b)
{
    return a->t_ns < b->t_ns || (a->t_ns == b->t_ns && a->seq < b->seq);
}

static int push(heap *q, int64_t t_ns, int kind, int64_t id)
{
    if (q->n == q->cap) {
        int64_t cap = q->cap ? 2 * q->cap : 256;
        ev *h = realloc(q->h, (size_t)cap * sizeof *h);
        if (!h)
            return 1;
        q->h = h;
        q->cap = cap;
    }
    int64_t i = q->n++;
    q->h[i] = (ev){t_ns, q->seq++, kind, id};
    while (i > 0 && ev_less(&q->h[i], &q->h[(i - 1) / 2])) {
        ev tmp = q->h[i];
        q->h[i] = q->h[(i - 1) / 2];
        q->h[(i - 1) / 2] = tmp;
        i = (i - 1) / 2;
    }
    return 0;
}

static ev pop(heap *q)
{
    ev top = q->h[0];
    q->h[0] = q->h[--q->n];
    for (int64_t i = 0;;) {
        int64_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < q->n && ev_less(&q->h[l], &q->h[m]))
            m = l;
        if (r < q->n && ev_less(&q->h[r], &q->h[m]))
            m = r;
        if (m == i)
            break;
        ev tmp = q->h[i];
        q->h[i] = q->h[m];
        q->h[m] = tmp;
        i = m;
    }
    return top;
}

/* A deque of request indices (ring buffer). */
typedef struct {
    int64_t *v, head, n, cap;
} deque;

static int dq_grow(deque *q)
{
    int64_t cap = q->cap ? 2 * q->cap : 64;
    int64_t *v = malloc((size_t)cap * sizeof *v);
    if (!v)
        return 1;
    for (int64_t i = 0; i < q->n; i++)
        v[i] = q->v[(q->head + i) % q->cap];
    free(q->v);
    q->v = v;
    q->head = 0;
    q->cap = cap;
    return 0;
}
static int dq_push_back(deque *q, int64_t x)
{
    if (q->n == q->cap && dq_grow(q))
        return 1;
    q->v[(q->head + q->n++) % q->cap] = x;
    return 0;
}
static int dq_push_front(deque *q, int64_t x)
{
    if (q->n == q->cap && dq_grow(q))
        return 1;
    q->head = (q->head + q->cap - 1) % q->cap;
    q->v[q->head] = x;
    q->n++;
    return 0;
}
static int64_t dq_front(const deque *q) { return q->v[q->head]; }
static void dq_pop_front(deque *q)
{
    q->head = (q->head + 1) % q->cap;
    q->n--;
}

typedef struct {
    const sv_pool *pool;
    int64_t free_blocks;
    int64_t *run, nrun;            /* running, admission order (capacity: all requests) */
    deque wait, swapped;
    int64_t *step_req, *step_tok, nstep;
    int busy;
    int64_t outstanding;
    double pending_swap_s;
    double ingress_free_s;         /* decode pool: when its ingress links are next free */
    double step_start_s, step_s, step_used;
} replica;

typedef struct {
    sv_sim *s;
    replica *r;
    int nrep;
    heap q;
    double now;
    int oom;
} loop;

static int64_t blocks_for(const sv_pool *p, int64_t tokens)
{
    return (tokens + p->block_tokens - 1) / p->block_tokens;
}

static int64_t pick(const loop *L, int pool)
{
    int lo = pool == 0 ? 0 : L->s->pool[0].replicas;
    int hi = lo + L->s->pool[pool].replicas;
    int best = lo;
    for (int i = lo + 1; i < hi; i++)
        if (L->r[i].outstanding < L->r[best].outstanding)
            best = i;
    return best;
}

static void run_remove(replica *R, int64_t id)
{
    for (int64_t i = 0; i < R->nrun; i++)
        if (R->run[i] == id) {
            memmove(R->run + i, R->run + i + 1, (size_t)(R->nrun - i - 1) * sizeof *R->run);
            R->nrun--;
            return;
        }
}

/* Preempt request v of replica ri (running, not in this step). */
static void preempt(loop *L, int ri, int64_t v)
{
    replica *R = &L->r[ri];
    sv_req *q = &L->s->req[v];
    run_remove(R, v);
    R->free_blocks += q->blocks;
    q->preempted++;
    L->s->rep[ri].preemptions++;
    if (L->s->preempt == MP_PREEMPT_SWAP && q->state == SV_DECODE) {
        /* swap-out: the blocks to host memory over the host link (vLLM's swap space) */
        R->pending_swap_s += (double)q->blocks * R->pool->block_bytes_gpu / R->pool->swap_Bps;
        L->s->rep[ri].swaps++;
        q->state = SV_SWAPPED;
        L->oom |= dq_push_back(&R->swapped, v);
        return;
    }
    /* recompute: prompt + output so far prefilled again (vLLM RECOMPUTE) */
    q->blocks = 0;
    q->kv_tokens = 0;
    q->target = q->in + q->generated;
    q->state = SV_WAIT;
    L->oom |= dq_push_front(&R->wait, v);
}

static int add(replica *R, int64_t id, int64_t tokens)
{
    R->step_req[R->nstep] = id;
    R->step_tok[R->nstep++] = tokens;
    return 0;
}

/* Step 1: running requests. */
static void schedule_running(loop *L, int ri, int64_t *budget)
{
    replica *R = &L->r[ri];
    const sv_pool *p = R->pool;
    for (int64_t i = 0; i < R->nrun && *budget > 0; i++) {
        int64_t id = R->run[i];
        sv_req *q = &L->s->req[id];
        int64_t need = q->state == SV_DECODE ? 1 : q->target - q->kv_tokens;
        need = need < *budget ? need : *budget;
        if (need <= 0)
            continue;
        int64_t more = blocks_for(p, q->kv_tokens + need) - q->blocks;
        while (more > R->free_blocks) {
            int64_t v = -1; /* the most recently admitted running request not in this step */
            for (int64_t j = R->nrun - 1; j > i; j--)
                if (!L->s->req[R->run[j]].scheduled) {
                    v = R->run[j];
                    break;
                }
            if (v < 0)
                break;
            preempt(L, ri, v);
        }
        if (more > R->free_blocks) { /* nothing else to take from: q itself goes */
            preempt(L, ri, id);
            i--;
            continue;
        }
        R->free_blocks -= more;
        q->blocks += more;
        q->scheduled = 1;
        add(R, id, need);
        *budget -= need;
    }
}

/* Step 2a: swapped-out requests back (before any new one); 1 while some remain swapped out. */
static int schedule_swapped(loop *L, int ri, int64_t *budget)
{
    replica *R = &L->r[ri];
    const sv_pool *p = R->pool;
    while (R->swapped.n > 0 && R->nrun < p->max_seqs && *budget > 0) {
        int64_t id = dq_front(&R->swapped);
        sv_req *q = &L->s->req[id];
        int64_t need = blocks_for(p, q->kv_tokens + 1);
        if (need > R->free_blocks)
            return 1;
        dq_pop_front(&R->swapped);
        R->free_blocks -= need;
        R->pending_swap_s += (double)q->blocks * p->block_bytes_gpu / p->swap_Bps; /* swap-in */
        q->blocks = need;
        q->state = SV_DECODE;
        q->scheduled = 1;
        R->run[R->nrun++] = id;
        add(R, id, 1);
        *budget -= 1;
    }
    return R->swapped.n > 0;
}

/* Request id, at the head of the waiting queue, admitted with need tokens and more blocks. */
static void admit(loop *L, int ri, int64_t id, int64_t need, int64_t more, int64_t *budget)
{
    replica *R = &L->r[ri];
    sv_req *q = &L->s->req[id];
    dq_pop_front(&R->wait);
    R->free_blocks -= more;
    q->blocks += more;
    if (q->state == SV_WAIT)
        q->state = SV_PREFILL;
    if (!(q->start_s >= 0))
        q->start_s = L->now;
    if (q->state == SV_PREFILL && q->kv_tokens == 0)
        q->prefill_start_s = L->now;
    q->scheduled = 1;
    R->run[R->nrun++] = id;
    add(R, id, need);
    *budget -= need;
}

/* Step 2b: the waiting queue, first come first served, in chunks. */
static void schedule_waiting(loop *L, int ri, int64_t *budget)
{
    replica *R = &L->r[ri];
    const sv_pool *p = R->pool;
    if (schedule_swapped(L, ri, budget))
        return;
    while (R->wait.n > 0 && R->nrun < p->max_seqs && *budget > 0) {
        int64_t id = dq_front(&R->wait);
        sv_req *q = &L->s->req[id];
        int64_t need = q->state == SV_DECODE ? 1 : q->target - q->kv_tokens;
        need = need < *budget ? need : *budget;
        int64_t more = blocks_for(p, q->kv_tokens + need) - q->blocks;
        if (more > R->free_blocks)
            return;
        admit(L, ri, id, need, more, budget);
    }
}

/* vLLM V0's default scheduler (vllm/core/scheduler.py _schedule_default, chunked prefill off):
 * when nothing is swapped out, waiting prompts whole, first come first served, while the
 * sequences (running ones included) stay under max_seqs, the prompt fits the budget left and its
 * blocks are free; 1 when one was scheduled (the step is then prefill-only: the running requests
 * wait). A prompt longer than the whole budget runs alone (V0 refuses it at admission: its
 * max_num_batched_tokens is at least max_model_len). Left out: V0's watermark (1% of the blocks
 * kept free at admission). */
static int schedule_prompts(loop *L, int ri, int64_t *budget)
{
    replica *R = &L->r[ri];
    const sv_pool *p = R->pool;
    int64_t n0 = R->nstep;
    while (R->swapped.n == 0 && R->wait.n > 0 && R->nrun < p->max_seqs) {
        int64_t id = dq_front(&R->wait);
        const sv_req *q = &L->s->req[id];
        if (q->state != SV_WAIT)
            break; /* a decode pool's transferred request: not a prompt */
        int64_t need = q->target - q->kv_tokens;
        if (need > *budget && R->nstep > n0)
            break;
        int64_t more = blocks_for(p, q->kv_tokens + need) - q->blocks;
        if (more > R->free_blocks)
            break;
        admit(L, ri, id, need, more, budget);
    }
    if (*budget < 0)
        *budget = 0;
    return R->nstep > n0;
}

static int start_step(loop *L, int ri)
{
    replica *R = &L->r[ri];
    const sv_pool *p = R->pool;
    if (R->busy)
        return 0;
    int64_t budget = p->chunk;
    R->nstep = 0;
    R->pending_swap_s = 0;
    if (L->s->prefill_first && p->kind != 2) {
        /* V0: a prefill-only step while prompts can be admitted, else the running decodes and
         * the swapped-out requests back (no new request joins a decode step) */
        if (!schedule_prompts(L, ri, &budget)) {
            schedule_running(L, ri, &budget);
            schedule_swapped(L, ri, &budget);
        }
    } else {
        schedule_running(L, ri, &budget);
        schedule_waiting(L, ri, &budget);
    }
    if (R->nstep == 0)
        return 0;
    sv_step_mix x = {0};
    x.seqs = R->nstep;
    for (int64_t i = 0; i < R->nstep; i++) {
        const sv_req *q = &L->s->req[R->step_req[i]];
        double n = (double)R->step_tok[i], k0 = (double)q->kv_tokens;
        x.tokens += n;
        if (q->state == SV_DECODE) {
            /* the new token attends to every cached token and itself */
            x.dec_ctx += sv_window_ctx(&p->sm, k0 + 1.0);
            x.emit += 1;
            x.has_decode = 1;
        } else {
            /* chunk tokens k0+1 .. k0+n: token j attends to k0 + j keys (causal) */
            x.pre_pairs += n * sv_window_ctx(&p->sm, k0 + 0.5 * (n + 1.0));
            x.pre_writes += n;
            x.emit += q->kv_tokens + R->step_tok[i] == q->target ? 1 : 0;
            x.has_prefill = 1;
        }
    }
    double flop, bytes;
    double t = sv_step_time_s(&p->sm, &x, &flop, &bytes) + R->pending_swap_s;
    if (L->s->hook)
        t += fmax(0.0, L->s->hook(L->s->hook_ctx, R->step_req, R->step_tok, (size_t)R->nstep));
    if (L->s->replica_hook)
        t += fmax(0.0, L->s->replica_hook(L->s->hook_ctx, ri, R->step_req, R->step_tok, (size_t)R->nstep));
    int64_t t_ns = (int64_t)llround((L->now + t) * 1e9);
    int64_t now_ns = (int64_t)llround(L->now * 1e9);
    if (t_ns <= now_ns)
        t_ns = now_ns + 1;
    sv_rep_stats *st = &L->s->rep[ri];
    double dur = (double)(t_ns - now_ns) * 1e-9;
    st->busy_s += dur;
    st->steps++;
    double used = (double)(p->blocks - R->free_blocks) / (double)p->blocks;
    st->kv_area += used * dur;
    st->kv_max = fmax(st->kv_max, used);
    if (L->s->samples && L->s->nsamples < MP_SERVE_MAX_SAMPLES)
        L->s->samples[L->s->nsamples++] = (mp_serve_sample){L->now, ri, used, R->nrun, R->wait.n + R->swapped.n};
    st->energy_J += p->sm.gpus * sv_step_power_w(&p->sm, dur, flop, bytes) * dur;
    R->busy = 1;
    R->step_start_s = L->now;
    R->step_s = dur;
    return push(&L->q, t_ns, EV_STEP, ri);
}

/* The KV transfer of request id from its prefill replica to a decode replica. */
static int transfer(loop *L, int64_t id)
{
    sv_sim *s = L->s;
    sv_req *q = &s->req[id];
    const sv_pool *pp = &s->pool[0], *dp = &s->pool[1];
    int di = (int)pick(L, 1);
    q->decode_replica = di;
    L->r[di].outstanding++;
    int pairs = pp->tp < dp->tp ? pp->tp : dp->tp;
    int64_t g0 = pp->first_gpu + (int64_t)q->replica * pp->gpus_per_replica;
    int64_t g1 = dp->first_gpu + (int64_t)(di - pp->replicas) * dp->gpus_per_replica;
    q->tx_bytes = (double)q->in * s->kv_bytes_per_token;
    mp_coll_cost cc;
    memset(&cc, 0, sizeof cc);
    if (mp_coll_time(s->c, MP_COLL_SEND_RECV, q->tx_bytes / pairs, (mp_group){2, g1 - g0}, MP_ALGO_AUTO, &cc) != MP_OK)
        cc.total_s = cc.bandwidth_s = 0;
    q->tx_alone_s = cc.total_s;
    /* layer-wise: sent while the prefill ran; at least the last layer's share after it */
    double prefill_s = L->now - q->prefill_start_s;
    double ready = L->now - fmin(prefill_s, cc.total_s * (1.0 - 1.0 / s->layers));
    replica *D = &L->r[di];
    double start = fmax(ready, D->ingress_free_s);
    D->ingress_free_s = start + cc.bandwidth_s;
    s->rep[di].ingress_busy_s += cc.bandwidth_s;
    q->tx_start_s = start;
    q->tx_end_s = fmax(L->now, start + cc.total_s);
    q->tx_wait_s = start - ready;
    q->tx_exposed_s = q->tx_end_s - L->now;
    q->state = SV_TRANSFER;
    return push(&L->q, (int64_t)llround(q->tx_end_s * 1e9), EV_TX, id);
}

static int end_step(loop *L, int ri)
{
    replica *R = &L->r[ri];
    sv_sim *s = L->s;
    R->busy = 0;
    int rc = 0;
    for (int64_t i = 0; i < R->nstep; i++) {
        int64_t id = R->step_req[i];
        sv_req *q = &s->req[id];
        q->scheduled = 0;
        if (q->state != SV_PREFILL && q->state != SV_DECODE)
            continue; /* preempted after being scheduled cannot happen; kept for safety */
        q->kv_tokens += R->step_tok[i];
        int emits = q->state == SV_DECODE || q->kv_tokens == q->target;
        if (!emits)
            continue;
        if (q->generated == 0)
            q->first_s = L->now;
        else
            q->itl_max_s = fmax(q->itl_max_s, L->now - q->last_tok_s);
        q->last_tok_s = L->now;
        q->generated++;
        s->emitted++;
        q->state = SV_DECODE;
        if (q->generated >= q->out) {
            run_remove(R, id);
            R->free_blocks += q->blocks;
            q->blocks = 0;
            q->state = SV_DONE;
            q->done_s = L->now;
            q->emitted_at_done = s->emitted;
            q->completed_at_done = ++s->completed;
            R->outstanding--;
            s->rep[ri].served++;
        } else if (R->pool->kind == 1) { /* prefill pool: hand over */
            run_remove(R, id);
            R->outstanding--;
            s->rep[ri].served++;
            rc |= transfer(L, id);
        }
    }
    return rc || start_step(L, ri);
}

static int end_transfer(loop *L, int64_t id)
{
    sv_req *q = &L->s->req[id];
    replica *P = &L->r[q->replica];
    P->free_blocks += q->blocks; /* the prefill side's copy */
    q->blocks = 0;
    q->state = SV_DECODE;
    replica *D = &L->r[q->decode_replica];
    if (dq_push_back(&D->wait, id))
        return 1;
    int rc = start_step(L, q->replica); /* blocks freed there */
    return rc || start_step(L, q->decode_replica);
}

static int setup(loop *L, sv_sim *s)
{
    memset(L, 0, sizeof *L);
    L->s = s;
    L->nrep = s->pool[0].replicas + (s->npools > 1 ? s->pool[1].replicas : 0);
    L->r = calloc((size_t)L->nrep, sizeof *L->r);
    if (!L->r)
        return 1;
    for (int i = 0; i < L->nrep; i++) {
        replica *R = &L->r[i];
        int pool = i < s->pool[0].replicas ? 0 : 1;
        R->pool = &s->pool[pool];
        R->free_blocks = R->pool->blocks;
        s->rep[i].pool = R->pool->kind;
        int64_t cap = R->pool->max_seqs < s->n ? R->pool->max_seqs : s->n;
        R->run = malloc((size_t)(cap + 1) * sizeof *R->run);
        R->step_req = malloc((size_t)(cap + 1) * sizeof *R->step_req);
        R->step_tok = malloc((size_t)(cap + 1) * sizeof *R->step_tok);
        if (!R->run || !R->step_req || !R->step_tok)
            return 1;
    }
    return 0;
}

static void teardown(loop *L)
{
    for (int i = 0; L->r && i < L->nrep; i++) {
        free(L->r[i].run);
        free(L->r[i].step_req);
        free(L->r[i].step_tok);
        free(L->r[i].wait.v);
        free(L->r[i].swapped.v);
    }
    free(L->r);
    free(L->q.h);
}

mp_status sv_simulate(sv_sim *s, mp_diag *d)
{
    loop L;
    if (setup(&L, s)) {
        teardown(&L);
        return MP_ERR_NOMEM;
    }
    for (int64_t i = 0; i < s->n; i++) {
        sv_req *q = &s->req[i];
        q->state = SV_WAIT;
        q->target = q->in;
        q->start_s = q->prefill_start_s = q->first_s = q->done_s = -1;
        q->adapter = -1;
    }
    int64_t next = 0, events = 0;
    int rc = 0;
    while (!rc && !L.oom && (next < s->n || L.q.n > 0)) {
        int64_t arr_ns = next < s->n ? (int64_t)llround(s->req[next].arrival_s * 1e9) : INT64_MAX;
        if (L.q.n > 0 && L.q.h[0].t_ns <= arr_ns) {
            ev e = pop(&L.q);
            L.now = (double)e.t_ns * 1e-9;
            rc = e.kind == EV_STEP ? end_step(&L, (int)e.id) : end_transfer(&L, e.id);
        } else {
            L.now = (double)arr_ns * 1e-9;
            int ri = (int)pick(&L, 0);
            s->req[next].replica = ri;
            s->req[next].decode_replica = s->npools > 1 ? -1 : ri;
            s->req[next].emitted_at_arrival = s->emitted;
            s->req[next].completed_at_arrival = s->completed;
            L.r[ri].outstanding++;
            rc = dq_push_back(&L.r[ri].wait, next) || start_step(&L, ri);
            next++;
        }
        if (++events > MAX_STEPS) {
            mp_diag_add(d, "serve: more than %lld events: expected a smaller run", (long long)MAX_STEPS);
            teardown(&L);
            return MP_ERR_RANGE;
        }
    }
    s->end_s = L.now;
    int oom = L.oom || rc;
    teardown(&L);
    return oom ? MP_ERR_NOMEM : MP_OK;
}
