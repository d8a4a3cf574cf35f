/* src/workflow/wf_plan.c — the workflow planner: the ways to run each LLM (TP degree or a share
 * of one GPU, batch cap) priced by the inference model; the queueing and critical-path model of
 * one allocation at a rate; the search (fewest GPUs for a rate, bisection on the rate for the most
 * requests/s on a budget) and the two baselines. Equations and sources: docs/workflow.md.
 * Sizes: <= 16 LLMs, <= 64 calls, <= 96 options per LLM; the search is O(iterations x options x
 * LLMs) queue evaluations of O(sqrt(load)) each, no inference call inside the loop. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workflow/wf_internal.h"

void mp_wf_opts_init(mp_wf_opts *o)
{
    memset(o, 0, sizeof *o);
    o->gpus = 8;
    o->load_frac = 0.8;
}

/* Erlang B by its recursion B(k) = a B(k-1) / (k + a B(k-1)) (Kleinrock vol. 1 eq. 3.42), started
 * below the load where B(k) ~ 1 - k/a (the fluid limit, error O(1/sqrt(a)) at 6 sqrt(a) below a;
 * Jagerman 1974) and stopped once B underflows; then C = c B / (c - a (1 - B)) (eq. 3.40-3.41). */
double mp_wf_erlang_c(int64_t c, double a)
{
    if (!(a > 0))
        return 0.0;
    if (a >= (double)c)
        return 1.0;
    double k0 = floor(a - 6.0 * sqrt(a));
    int64_t k = k0 > 0 ? (int64_t)k0 : 0;
    double B = k > 0 ? 1.0 - (double)k / a : 1.0;
    for (int64_t j = k + 1; j <= c; j++) {
        B = a * B / ((double)j + a * B);
        if (B < 1e-300)
            return 0.0;
    }
    return (double)c * B / ((double)c - a * (1.0 - B));
}

/* The cluster of one replica's GPUs: as src/rl/sync.c mp_rl_pool, with the scale-up domain cut to
 * `piece` GPUs (piece < gpus: a TP group spread over nodes). */
static void pool_of(const mp_cluster *c, int64_t gpus, int piece, mp_cluster *out)
{
    *out = *c;
    out->num_gpus = gpus;
    if (piece < out->gpus_per_node) {
        out->gpus_per_node = piece;
        out->tier[0].domain_gpus = piece;
    }
    for (int t = 1; t < out->ntiers; t++)
        if (out->tier[t].domain_gpus < out->tier[t - 1].domain_gpus)
            out->tier[t].domain_gpus = out->tier[t - 1].domain_gpus;
}

static mp_status estimate(const mp_workflow *w, const mp_cluster *c, int l, const mp_wf_call *call,
                          int tp, int piece, int64_t batch, mp_infer_result *r)
{
    mp_cluster pc;
    mp_infer_plan p;
    mp_diag d = {0};
    pool_of(c, tp, piece, &pc);
    mp_infer_plan_init(&p);
    p.tp = tp;
    p.dp = 1;
    p.batch = batch;
    p.in = call->in;
    p.out = call->out;
    p.weights = w->llm[l].weights;
    p.engine = w->llm[l].engine;
    return mp_infer_estimate(&w->llm[l].model, &pc, &p, r, &d);
}

double wf_split_cost_s(const mp_workflow *w, const mp_cluster *c, int l, int tp, int piece, int64_t batch)
{
    for (int i = 0; i < w->ncalls; i++)
        if (w->call[i].llm == l) {
            mp_infer_result in, out;
            if (estimate(w, c, l, &w->call[i], tp, tp, batch, &in) != MP_OK ||
                estimate(w, c, l, &w->call[i], tp, piece, batch, &out) != MP_OK)
                return 0.0;
            return out.decode.total_s - in.decode.total_s;
        }
    return 0.0;
}

/* Every (tp or share, batch) that fits, for LLM l. A replica on a share f of a GPU (co-located
 * through MPS-style partitioning) runs at f of the GPU's rates and holds f of its engine memory
 * share: its service times are 1/f of the whole GPU's (an assumption: docs/workflow.md). */
static void build_options(const mp_workflow *w, const mp_cluster *c, int l, wf_llm_opts *lo,
                          int64_t *evals)
{
    static const double fracs[] = {0.25, 0.5, 1.0};
    lo->nopts = 0;
    for (int tp = 1; tp <= c->gpus_per_node && tp <= 8; tp *= 2)
        for (int64_t b = 1; b <= 256; b *= 2) {
            wf_option base = {0};
            int ok = 1;
            double cap = 0, kvf = 0;
            for (int i = 0; i < w->ncalls && ok; i++) {
                const mp_wf_call *k = &w->call[i];
                mp_infer_result r;
                if (k->llm != l)
                    continue;
                (*evals)++;
                if (estimate(w, c, l, k, tp, tp, b, &r) != MP_OK || !r.feasible || !(r.e2e_s > 0)) {
                    ok = 0;
                    break;
                }
                base.L_s[i] = r.e2e_s;
                double n = (double)k->fanout * k->repeat;
                base.calls += n;
                base.work_s += n * r.e2e_s / (double)b;
                base.tau_s += n * r.e2e_s;
                if (r.total_bytes > base.mem_bytes)
                    base.mem_bytes = r.total_bytes;
                cap = r.capacity_bytes;
                kvf = r.engine.kv_frac;
            }
            if (!ok || base.calls <= 0)
                break; /* a larger batch needs more KV; a TP that cannot be formed stays so */
            base.tau_s /= base.calls;
            for (int f = tp == 1 ? 0 : 2; f < 3 && lo->nopts < WF_MAX_OPTS; f++) {
                wf_option o = base;
                o.tp = tp;
                o.frac = fracs[f];
                o.batch = b;
                o.gpus = tp * fracs[f];
                if (fracs[f] < 1.0) {
                    if (o.mem_bytes > fracs[f] * cap * kvf)
                        continue;
                    for (int i = 0; i < w->ncalls; i++)
                        o.L_s[i] /= fracs[f];
                    o.work_s /= fracs[f];
                    o.tau_s /= fracs[f];
                }
                lo->opt[lo->nopts++] = o;
            }
        }
}

/* One LLM's queue at rate lam: M/M/c with c = dp x batch slots, the calls' mean service tau
 * (Erlang C; P(W > t) = C exp(-(c/tau - lambda) t), Kleinrock vol. 1 eq. 3.43). Per call: mean
 * and p99 time (repeat x (wait + service); fan-out copies: the wait's 0.99^(1/k) quantile, the
 * slowest of k independent waits). */
typedef struct {
    int stable;
    double util, wait_mean_s;
    double mean_s[MP_WF_MAX_CALLS], p99_s[MP_WF_MAX_CALLS];
} wf_llm_stat;

static void llm_stat(const mp_workflow *w, int l, const wf_option *o, int dp, double lam, wf_llm_stat *s)
{
    const int64_t slots = (int64_t)dp * o->batch;
    const double lam_l = lam * o->calls, a = lam_l * o->tau_s;
    s->util = a / (double)slots;
    s->stable = dp >= 1 && s->util < 1.0;
    double C = s->stable ? mp_wf_erlang_c(slots, a) : 1.0;
    double theta = (double)slots / o->tau_s - lam_l;
    s->wait_mean_s = s->stable && theta > 0 ? C / theta : INFINITY;
    for (int i = 0; i < w->ncalls; i++) {
        const mp_wf_call *k = &w->call[i];
        if (k->llm != l)
            continue;
        double q = pow(0.99, 1.0 / k->fanout), wq = 0;
        if (!s->stable)
            wq = INFINITY;
        else if (C > 1.0 - q)
            wq = log(C / (1.0 - q)) / theta;
        s->mean_s[i] = k->repeat * (s->wait_mean_s + o->L_s[i]);
        s->p99_s[i] = k->repeat * (wq + o->L_s[i]);
        if (s->p99_s[i] < s->mean_s[i]) /* the wait's mean can exceed its (zero) 99th percentile */
            s->p99_s[i] = s->mean_s[i];
    }
}

/* The longest path through the calls (each after its deps; they come earlier in the list). The
 * p99 along it is the sum of the calls' p99s: an upper bound (percentiles do not add). */
static void longest_path(const mp_workflow *w, const wf_llm_stat *st, double *mean_s, double *p99_s,
                         int *crit, int *ncrit)
{
    double fm[MP_WF_MAX_CALLS], fp[MP_WF_MAX_CALLS];
    int prev[MP_WF_MAX_CALLS];
    int last = 0;
    *mean_s = *p99_s = 0;
    for (int i = 0; i < w->ncalls; i++) {
        const mp_wf_call *k = &w->call[i];
        double bm = 0, bp = 0;
        prev[i] = -1;
        for (int d = 0; d < k->ndeps; d++) {
            if (fm[k->deps[d]] > bm)
                bm = fm[k->deps[d]];
            if (fp[k->deps[d]] > bp || prev[i] < 0) {
                bp = fp[k->deps[d]] > bp ? fp[k->deps[d]] : bp;
                prev[i] = k->deps[d];
            }
        }
        fm[i] = bm + st[k->llm].mean_s[i];
        fp[i] = bp + st[k->llm].p99_s[i];
        if (fm[i] > *mean_s)
            *mean_s = fm[i];
        if (fp[i] >= *p99_s) {
            *p99_s = fp[i];
            last = i;
        }
    }
    if (crit) {
        int tmp[MP_WF_MAX_CALLS], n = 0;
        for (int i = last; i >= 0 && n < MP_WF_MAX_CALLS; i = prev[i])
            tmp[n++] = i;
        for (int i = 0; i < n; i++)
            crit[i] = tmp[n - 1 - i];
        *ncrit = n;
    }
}

typedef struct {
    const mp_workflow *w;
    const wf_llm_opts *lo;
    double slo_s;
} wf_ctx;

static double choice_gpus(const wf_ctx *x, const wf_choice *ch)
{
    double whole = 0, shared = 0;
    for (int l = 0; l < x->w->nllms; l++) {
        const wf_option *o = &x->lo[l].opt[ch->o[l]];
        if (o->frac < 1.0)
            shared += o->frac * ch->dp[l];
        else
            whole += o->gpus * ch->dp[l];
    }
    /* shares of 1/4 and 1/2 pack into whole GPUs without waste (first-fit decreasing of
     * power-of-two sizes is optimal), so the shared GPUs are the sum rounded up */
    return whole + ceil(shared - 1e-9);
}

static void eval_all(const wf_ctx *x, const wf_choice *ch, double lam, wf_llm_stat *st, double *mean_s,
                     double *p99_s)
{
    for (int l = 0; l < x->w->nllms; l++)
        llm_stat(x->w, l, &x->lo[l].opt[ch->o[l]], ch->dp[l], lam, &st[l]);
    longest_path(x->w, st, mean_s, p99_s, NULL, NULL);
}

static int dp_min(const wf_option *o, double lam)
{
    double d = floor(lam * o->work_s) + 1.0;
    return d > 65536 ? 65536 : (int)d;
}

static double sum_L(const mp_workflow *w, const wf_option *o)
{
    double s = 0;
    for (int i = 0; i < w->ncalls; i++)
        s += o->L_s[i] * w->call[i].fanout * w->call[i].repeat;
    return s;
}

/* The fewest GPUs for rate lam: per LLM the option with the fewest GPUs at its smallest stable dp
 * (ties: the shortest calls), then, while the p99 is over the SLO, the move (one more replica, or
 * another option at its smallest stable dp) with the most p99 saved per GPU added (marginal
 * analysis, a greedy). Returns the GPUs, or -1 when the SLO is not met within cap GPUs. The moves
 * are chosen without looking at cap (it only stops the walk), so the path does not depend on it
 * and a larger cap never turns a met rate into an unmet one (the property test_workflow checks). */
static double needed(const wf_ctx *x, double lam, double cap, wf_choice *ch)
{
    const mp_workflow *w = x->w;
    wf_llm_stat st[MP_WF_MAX_LLMS] = {0};
    for (int l = 0; l < w->nllms; l++) {
        double best = INFINITY, bl = INFINITY;
        for (int i = 0; i < x->lo[l].nopts; i++) {
            const wf_option *o = &x->lo[l].opt[i];
            double g = o->gpus * dp_min(o, lam), L = sum_L(w, o);
            if (g < best - 1e-12 || (g < best + 1e-12 && L < bl)) {
                best = g, bl = L;
                ch->o[l] = i;
                ch->dp[l] = dp_min(o, lam);
            }
        }
    }
    double g = choice_gpus(x, ch), mean, p99;
    for (int it = 0; it < 400 && g <= cap + 1e-9; it++) {
        eval_all(x, ch, lam, st, &mean, &p99);
        if (x->slo_s <= 0 || p99 <= x->slo_s)
            return g;
        double best_score = 0, best_g = 0;
        int bl = -1, bo = 0, bdp = 0;
        for (int l = 0; l < w->nllms; l++)
            for (int i = 0; i < x->lo[l].nopts; i++) {
                wf_choice t = *ch;
                t.o[l] = i;
                t.dp[l] = i == ch->o[l] ? ch->dp[l] + 1 : dp_min(&x->lo[l].opt[i], lam);
                double tg = choice_gpus(x, &t), tm, tp99;
                wf_llm_stat s2[MP_WF_MAX_LLMS];
                memcpy(s2, st, sizeof(wf_llm_stat) * (size_t)w->nllms);
                llm_stat(w, l, &x->lo[l].opt[i], t.dp[l], lam, &s2[l]);
                longest_path(w, s2, &tm, &tp99, NULL, NULL);
                double saved = (isfinite(p99) ? p99 : 1e30) - tp99;
                double score = saved / (tg - g > 0.05 ? tg - g : 0.05);
                if (saved > 1e-12 && score > best_score) {
                    best_score = score, best_g = tg;
                    bl = l, bo = i, bdp = t.dp[l];
                }
            }
        if (bl < 0)
            return -1;
        ch->o[bl] = bo;
        ch->dp[bl] = bdp;
        g = best_g;
    }
    return -1;
}

/* Fixed GPUs per LLM (the baselines): at rate lam each LLM takes, of its whole-GPU options, the
 * one whose slowest call (wait + service) is shortest with floor(gpus / tp) replicas. 1 when the
 * result is stable and within the SLO. */
static int fixed_choice(const wf_ctx *x, const double *g_l, double lam, wf_choice *ch)
{
    const mp_workflow *w = x->w;
    wf_llm_stat st[MP_WF_MAX_LLMS] = {0};
    for (int l = 0; l < w->nllms; l++) {
        double best = INFINITY;
        ch->o[l] = -1;
        for (int i = 0; i < x->lo[l].nopts; i++) {
            const wf_option *o = &x->lo[l].opt[i];
            int dp = (int)floor(g_l[l] / o->gpus + 1e-9);
            if (o->frac < 1.0 || dp < 1)
                continue;
            wf_llm_stat s;
            llm_stat(w, l, o, dp, lam, &s);
            double worst = 0;
            for (int k = 0; k < w->ncalls; k++)
                if (w->call[k].llm == l && s.p99_s[k] > worst)
                    worst = s.p99_s[k];
            if (ch->o[l] < 0 || worst < best) {
                best = worst;
                ch->o[l] = i;
                ch->dp[l] = dp;
            }
        }
        if (ch->o[l] < 0)
            return 0;
    }
    double mean, p99;
    eval_all(x, ch, lam, st, &mean, &p99);
    for (int l = 0; l < w->nllms; l++)
        if (!st[l].stable)
            return 0;
    return x->slo_s <= 0 || p99 <= x->slo_s;
}

/* The most requests/s: bisection on the rate over (0, hi] for a predicate; lo stays feasible. */
typedef int (*wf_pred)(const wf_ctx *x, const void *arg, double lam, wf_choice *ch);

static double max_rate(const wf_ctx *x, const void *arg, wf_pred pred, double hi, wf_choice *ch)
{
    double lo = 0;
    wf_choice t;
    if (pred(x, arg, hi, &t))
        lo = hi;
    /* a fixed count of halvings from a bracket that does not depend on the budget: two budgets
     * then see the same midpoints until they part, and the larger one parts upwards */
    for (int it = 0; it < 64 && lo < hi; it++) {
        double mid = 0.5 * (lo + hi);
        if (pred(x, arg, mid, &t))
            lo = mid;
        else
            hi = mid;
    }
    if (lo > 0)
        pred(x, arg, lo, ch);
    return lo;
}

static int pred_budget(const wf_ctx *x, const void *arg, double lam, wf_choice *ch)
{
    return needed(x, lam, *(const double *)arg, ch) >= 0;
}

static int pred_fixed(const wf_ctx *x, const void *arg, double lam, wf_choice *ch)
{
    return fixed_choice(x, (const double *)arg, lam, ch);
}

/* A choice held fixed: stable and within the SLO at lam. */
static int pred_held(const wf_ctx *x, const void *arg, double lam, wf_choice *ch)
{
    wf_llm_stat st[MP_WF_MAX_LLMS] = {0};
    double mean, p99;
    *ch = *(const wf_choice *)arg;
    eval_all(x, ch, lam, st, &mean, &p99);
    for (int l = 0; l < x->w->nllms; l++)
        if (!st[l].stable)
            return 0;
    return x->slo_s <= 0 || p99 <= x->slo_s;
}

/* The figures of choice ch at rate lam into a. */
static void fill(const wf_ctx *x, const mp_cluster *c, int64_t gpus, const wf_choice *ch, double rps,
                 double lam, mp_wf_alloc *a)
{
    const mp_workflow *w = x->w;
    wf_llm_stat st[MP_WF_MAX_LLMS] = {0};
    memset(a, 0, sizeof *a);
    a->feasible = 1;
    a->requests_per_s = rps;
    a->rate_per_s = lam;
    for (int l = 0; l < w->nllms; l++)
        llm_stat(w, l, &x->lo[l].opt[ch->o[l]], ch->dp[l], lam, &st[l]);
    longest_path(w, st, &a->e2e_mean_s, &a->e2e_p99_s, a->critical, &a->ncritical);
    a->gpus_used = choice_gpus(x, ch);
    for (int l = 0; l < w->nllms; l++) {
        const wf_option *o = &x->lo[l].opt[ch->o[l]];
        mp_wf_alloc_llm *r = &a->llm[l];
        r->tp = o->tp;
        r->dp = ch->dp[l];
        r->gpu_frac = o->frac;
        r->gpus = o->gpus * ch->dp[l];
        r->batch = o->batch;
        r->capacity_per_s = ch->dp[l] / o->work_s;
        r->util_frac = st[l].util;
        r->wait_mean_s = st[l].wait_mean_s;
        r->mem_per_gpu_bytes = o->mem_bytes;
        if (st[l].util > a->llm[a->bottleneck].util_frac)
            a->bottleneck = l;
    }
    wf_place(w, c, gpus, x->lo, ch, a);
}

static void baseline(const wf_ctx *x, const mp_cluster *c, const mp_wf_opts *op, const double *g_l,
                     double hi, mp_wf_alloc *a)
{
    wf_choice ch;
    double rps = max_rate(x, g_l, pred_fixed, hi, &ch);
    if (rps <= 0) {
        memset(a, 0, sizeof *a);
        snprintf(a->reason, sizeof a->reason, "no rate is served%s with these GPUs per LLM",
                 x->slo_s > 0 ? " within the SLO" : "");
        return;
    }
    double lam = op->rate_per_s > 0 ? op->rate_per_s : x->slo_s > 0 ? rps : rps * op->load_frac;
    if (!fixed_choice(x, g_l, lam, &ch) && op->rate_per_s > 0) {
        fixed_choice(x, g_l, x->slo_s > 0 ? rps : rps * op->load_frac, &ch);
        fill(x, c, op->gpus, &ch, rps, x->slo_s > 0 ? rps : rps * op->load_frac, a);
        a->feasible = 0;
        snprintf(a->reason, sizeof a->reason, "serves at most %.3g requests/s, under the rate", rps);
        return;
    }
    fill(x, c, op->gpus, &ch, rps, lam, a);
}

static void baselines(const wf_ctx *x, const mp_cluster *c, const mp_wf_opts *op, double hi, mp_wf_result *out)
{
    const mp_workflow *w = x->w;
    double one[MP_WF_MAX_LLMS], eq[MP_WF_MAX_LLMS], sum = 0;
    for (int l = 0; l < w->nllms; l++) {
        one[l] = 0;
        for (int i = 0; i < x->lo[l].nopts; i++)
            if (x->lo[l].opt[i].frac >= 1.0 && (one[l] == 0 || x->lo[l].opt[i].gpus < one[l]))
                one[l] = x->lo[l].opt[i].gpus;
        sum += one[l];
        eq[l] = floor((double)op->gpus / w->nllms);
    }
    if (sum > (double)op->gpus)
        snprintf(out->one_replica.reason, sizeof out->one_replica.reason,
                 "one replica of each LLM needs %.0f GPUs, over the %lld given", sum, (long long)op->gpus);
    else
        baseline(x, c, op, one, hi, &out->one_replica);
    baseline(x, c, op, eq, hi, &out->equal_split);
}

mp_status mp_workflow_plan(const mp_workflow *w, const mp_cluster *c, const mp_wf_opts *op,
                           mp_wf_result *out, mp_diag *diag)
{
    memset(out, 0, sizeof *out);
    if (op->gpus < 1 || op->gpus > 65536 || !(op->rate_per_s >= 0) || !(op->slo_e2e_p99_s >= 0) ||
        !(op->load_frac > 0 && op->load_frac < 1) || w->nllms < 1 || w->ncalls < 1) {
        mp_diag_add(diag, "workflow options: gpus = %lld (expected 1 to 65536), rate = %g (>= 0), "
                    "slo e2e_p99 = %g s (>= 0), load_frac = %g ((0, 1)), %d LLMs and %d calls (>= 1)",
                    (long long)op->gpus, op->rate_per_s, op->slo_e2e_p99_s, op->load_frac, w->nllms, w->ncalls);
        return MP_ERR_INPUT;
    }
    wf_llm_opts *lo = calloc(MP_WF_MAX_LLMS, sizeof *lo); /* ~60 KiB each: off the stack */
    if (!lo)
        return MP_ERR_NOMEM;
    wf_ctx x = {w, lo, op->slo_e2e_p99_s};
    double hi = INFINITY;
    for (int l = 0; l < w->nllms; l++) {
        build_options(w, c, l, &lo[l], &out->evaluations);
        double best = 0;
        for (int i = 0; i < lo[l].nopts; i++) {
            double r = 65536.0 / (lo[l].opt[i].gpus * lo[l].opt[i].work_s); /* the most GPUs */
            best = r > best ? r : best;
        }
        if (lo[l].nopts == 0 || best <= 0) {
            snprintf(out->best.reason, sizeof out->best.reason,
                     "LLM %s (%s) fits no GPU share or TP degree up to %d on %s at batch 1",
                     w->llm[l].name, w->llm[l].model.key, c->gpus_per_node < 8 ? c->gpus_per_node : 8, c->gpu.key);
            out->one_replica = out->equal_split = out->best;
            free(lo);
            return MP_OK;
        }
        hi = best < hi ? best : hi;
    }
    wf_choice ch;
    double cap = (double)op->gpus;
    if (op->rate_per_s > 0) {
        double g = needed(&x, op->rate_per_s, cap, &ch);
        if (g < 0) {
            double rps = max_rate(&x, &cap, pred_budget, hi, &ch);
            if (rps > 0)
                fill(&x, c, op->gpus, &ch, rps, x.slo_s > 0 ? rps : rps * op->load_frac, &out->best);
            out->best.feasible = 0;
            snprintf(out->best.reason, sizeof out->best.reason,
                     "%.3g requests/s needs more than %lld GPUs%s; they serve at most %.3g", op->rate_per_s,
                     (long long)op->gpus, x.slo_s > 0 ? " within the SLO" : "", rps);
        } else {
            wf_choice held = ch;
            double rps = max_rate(&x, &held, pred_held, hi, &ch);
            fill(&x, c, op->gpus, &held, rps, op->rate_per_s, &out->best);
        }
    } else {
        double rps = max_rate(&x, &cap, pred_budget, hi, &ch);
        if (rps <= 0)
            snprintf(out->best.reason, sizeof out->best.reason, "no rate is served%s on %lld GPUs",
                     x.slo_s > 0 ? " within the SLO" : "", (long long)op->gpus);
        else
            fill(&x, c, op->gpus, &ch, rps, x.slo_s > 0 ? rps : rps * op->load_frac, &out->best);
    }
    baselines(&x, c, op, hi, out);
    free(lo);
    return MP_OK;
}
