/* src/infer/search.c — the serving planner (include/meshplan/infer_search.h): enumerate the
 * (tp, pp, ep, weights, KV, batch) plans of one cluster, price each with mp_infer_estimate, keep
 * those within memory and the SLO, and pick the best by the objective, with why.
 *
 * Percentiles in closed form from the fixed-batch model (docs/infer.md, "infer-search"):
 *   - TTFT p99: a fixed batch's B equal prompts are prefilled in order, chunk after chunk, so
 *     prompt k has its first token after k/B of the batch's prefill; the 99th percentile is
 *     prompt ceil(0.99 B): ttft_p99 = ceil(0.99 B) / B x TTFT (TTFT = the batch's last prompt).
 *   - TPOT p99: every decode step of a fixed batch carries all B sequences and its time grows with
 *     the cached context, from in to in + out; 99% of the output tokens come from steps at
 *     context <= in + 0.99 out, so tpot_p99 = the step at that context (+ the step overhead).
 *   Both hold for the fixed batch, not for Poisson arrivals with continuous batching, where
 *   queueing and prefill chunks mixed into decode steps widen the tails (issue 21's simulator).
 * Cost: about 2-4 estimates per (split, precision, batch); 4 GPU types of Llama 3 70B on 8 GPUs
 * run about 1,500 estimates (docs/infer.md gives the measured CPU time). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshplan/infer_search.h"

static const char *const objective_names[MP_ISO_COUNT] = {"cost", "energy", "throughput"};

const char *mp_infer_objective_name(mp_infer_objective o)
{
    return (unsigned)o < MP_ISO_COUNT ? objective_names[o] : "?";
}

void mp_infer_search_opts_init(mp_infer_search_opts *o)
{
    memset(o, 0, sizeof *o);
    o->in = 1024;
    o->out = 256;
    o->objective = MP_ISO_COST;
    o->engine = MP_ENGINE_VLLM;
}

/* ASSUMED rental prices per GPU-hour, USD: the order of late-2025 on-demand list prices of cloud
 * and neocloud providers (not a quote; H100 SXM at the energy module's default $2.50 of
 * mp_cost_opts_init, the others scaled by their market position). Give your own with --price. */
static const struct {
    const char *key;
    double usd;
} gpu_prices[] = {
    {"a100-sxm4-40gb", 1.30}, {"a100-sxm4-80gb", 1.80}, {"a100-pcie-80gb", 1.60},
    {"h100-sxm5-80gb", 2.50}, {"h100-pcie-80gb", 2.10}, {"h100-sxm-96gb-500w", 2.50},
    {"h800-sxm5-80gb", 2.50}, {"h200-sxm-141gb", 3.50}, {"gh200", 3.20},
    {"b200", 5.00}, {"b300", 6.50}, {"gb200", 6.00}, {"gb300", 7.50},
    {"mi300x", 2.50}, {"mi325x", 3.00}, {"l40s", 1.00}, {"rtx4090", 0.40},
    {"rtx3090", 0.25}, {"rtx-pro-6000-se", 1.50}, {"v100-sxm2-32gb", 0.50},
};

double mp_infer_gpu_price_usd(const char *gpu_key)
{
    for (size_t i = 0; gpu_key && i < sizeof gpu_prices / sizeof gpu_prices[0]; i++)
        if (!strcmp(gpu_key, gpu_prices[i].key))
            return gpu_prices[i].usd;
    return 0.0;
}

/* GPUs with fp4 tensor cores (Blackwell: NVIDIA Blackwell architecture technical brief, 2024;
 * RTX Blackwell whitepaper, 2025); the catalog has no fp4 peak key, so a list. */
int mp_infer_gpu_has_fp4(const mp_gpu *g)
{
    static const char *const bw[] = {"b200", "b300", "gb200", "gb300", "rtx-pro-6000-se"};
    for (size_t i = 0; i < sizeof bw / sizeof bw[0]; i++)
        if (!strcmp(g->key, bw[i]))
            return 1;
    return 0;
}

typedef struct {
    const mp_model *m;
    const mp_cluster *c;
    const mp_infer_search_opts *o;
    double price;
    mp_infer_search_result *out;
} search_ctx;

/* Score plan p: 1 with cand filled when the estimate forms; *fits says memory and SLO hold;
 * why_not (when given) says which failed. */
static int score(search_ctx *s, const mp_infer_plan *p, mp_infer_candidate *cand, int *fits,
                 char *why_not, size_t wcap)
{
    mp_diag d = {0};
    *fits = 0;
    if (mp_infer_estimate(s->m, s->c, p, &cand->r, &d) != MP_OK)
        return 0;
    s->out->evaluated++;
    const mp_infer_result *r = &cand->r;
    const double B = (double)p->batch;
    cand->ttft_p99_s = ceil(0.99 * B) / B * r->ttft_s;
    cand->tpot_p99_s = r->tpot_s;
    if (p->out >= 2) { /* the decode step at context in + 0.99 out: a plan whose mean context is it */
        mp_infer_plan q = *p;
        mp_infer_result tail;
        q.in = p->in + (int64_t)ceil(0.99 * (double)p->out) - 1;
        q.out = 2;
        if (mp_infer_estimate(s->m, s->c, &q, &tail, &d) == MP_OK) {
            s->out->evaluated++;
            cand->tpot_p99_s = fmax(r->tpot_s, tail.tpot_s);
        }
    }
    const double gpus = (double)s->c->num_gpus;
    cand->usd_per_mtoken = r->output_tokens_per_s > 0 ? gpus * s->price / 3600.0 / r->output_tokens_per_s * 1e6 : INFINITY;
    cand->j_per_mtoken = r->energy_j_per_output_token * 1e6;
    cand->objective = s->o->objective == MP_ISO_COST     ? cand->usd_per_mtoken
                      : s->o->objective == MP_ISO_ENERGY ? cand->j_per_mtoken
                                                         : -r->output_tokens_per_s;
    const mp_infer_search_opts *o = s->o;
    if (!r->feasible) {
        if (why_not)
            snprintf(why_not, wcap, "its KV cache does not fit (the pool holds %lld sequences of %lld tokens)",
                     (long long)r->max_concurrency, (long long)(p->in + p->out));
    } else if (o->ttft_p99_s > 0 && cand->ttft_p99_s > o->ttft_p99_s) {
        if (why_not)
            snprintf(why_not, wcap, "ttft_p99 %.3g s > %.3g s", cand->ttft_p99_s, o->ttft_p99_s);
    } else if (o->tpot_p99_s > 0 && cand->tpot_p99_s > o->tpot_p99_s) {
        if (why_not)
            snprintf(why_not, wcap, "tpot_p99 %.3g ms > %.3g ms", cand->tpot_p99_s * 1e3, o->tpot_p99_s * 1e3);
    } else {
        *fits = 1;
    }
    return 1;
}

static int same_split(const mp_infer_plan *a, const mp_infer_plan *b)
{
    return a->tp == b->tp && a->pp == b->pp && a->ep == b->ep && a->weights == b->weights && a->kv == b->kv;
}

/* Offer a fitting candidate to the best / runner-up pair. */
static void offer(mp_infer_search_result *out, const mp_infer_candidate *c)
{
    out->feasible++;
    if (!out->found || c->objective < out->best.objective) {
        if (out->found && !same_split(&out->best.r.plan, &c->r.plan)) {
            out->runner_up = out->best;
            out->found_runner_up = 1;
        }
        out->best = *c;
        out->found = 1;
    } else if (!same_split(&out->best.r.plan, &c->r.plan) &&
               (!out->found_runner_up || c->objective < out->runner_up.objective)) {
        out->runner_up = *c;
        out->found_runner_up = 1;
    }
}

/* Every batch 1, 2, 4, ... of one split and precision, up to the KV pool and the caps. */
static void batches(search_ctx *s, mp_infer_plan p, mp_infer_candidate *scratch)
{
    int fits;
    p.batch = 1;
    if (!score(s, &p, scratch, &fits, NULL, 0))
        return;
    int64_t cap = scratch->r.max_concurrency;
    int64_t lim = s->o->max_batch > 0 ? s->o->max_batch : 4096;
    if ((double)lim > scratch->r.engine.max_batch)
        lim = (int64_t)scratch->r.engine.max_batch;
    cap = cap < lim ? cap : lim;
    /* powers of two, then the largest batch the pool (or the cap) allows */
    for (int64_t b = 1; b <= cap; b = b < cap && b * 2 > cap ? cap : b * 2) {
        p.batch = b;
        if (b > 1 && !score(s, &p, scratch, &fits, NULL, 0))
            return;
        if (!fits)
            break; /* TTFT and TPOT never fall as the batch grows (tests/test_infer.c properties):
                      a larger batch misses the SLO further */
        offer(s->out, scratch);
        if (b == cap)
            break;
    }
}

static void explain(search_ctx *s)
{
    mp_infer_search_result *out = s->out;
    const mp_infer_candidate *b = &out->best;
    const mp_infer_plan *p = &b->r.plan;
    const char *obj = mp_infer_objective_name((mp_infer_objective)s->o->objective);
    char slo[96] = "no SLO";
    if (s->o->ttft_p99_s > 0 || s->o->tpot_p99_s > 0)
        snprintf(slo, sizeof slo, "ttft_p99 <= %.3g s, tpot_p99 <= %.3g ms", s->o->ttft_p99_s > 0 ? s->o->ttft_p99_s : INFINITY,
                 s->o->tpot_p99_s > 0 ? s->o->tpot_p99_s * 1e3 : INFINITY);
    size_t n = (size_t)snprintf(out->why, sizeof out->why,
        "best %s of %lld plans within memory and %s (%lld estimates): tp=%d pp=%d ep=%d x %d replicas, "
        "weights %s, kv %s, batch %lld; decode %s-bound, prefill %s-bound.",
        obj, (long long)out->feasible, slo, (long long)out->evaluated, p->tp, p->pp, p->ep, p->dp,
        mp_infer_weights_name((mp_infer_weights)p->weights), mp_infer_kv_name((mp_infer_kv)p->kv),
        (long long)p->batch, b->r.decode.bound, b->r.prefill.bound);
    if (out->found_runner_up && n < sizeof out->why) {
        const mp_infer_plan *q = &out->runner_up.r.plan;
        n += (size_t)snprintf(out->why + n, sizeof out->why - n,
            " Runner-up tp=%d pp=%d ep=%d weights %s batch %lld: %s %.4g vs %.4g.", q->tp, q->pp, q->ep,
            mp_infer_weights_name((mp_infer_weights)q->weights), (long long)q->batch, obj,
            fabs(out->runner_up.objective), fabs(b->objective));
    }
    if (out->next_batch > 0 && n < sizeof out->why)
        snprintf(out->why + n, sizeof out->why - n, " Batch %lld not taken: %s.",
                 (long long)out->next_batch, out->next_batch_why);
}

static int check_opts(const mp_infer_search_opts *o, mp_diag *d)
{
    int bad = 0;
    if (o->in < 1 || o->in > (1 << 24)) { mp_diag_add(d, "in = %lld: expected 1 .. 2^24 tokens", (long long)o->in); bad++; }
    if (o->out < 1 || o->out > (1 << 24)) { mp_diag_add(d, "out = %lld: expected 1 .. 2^24 tokens", (long long)o->out); bad++; }
    if (!(o->ttft_p99_s >= 0 && isfinite(o->ttft_p99_s))) { mp_diag_add(d, "slo ttft_p99 = %g s: expected a finite time >= 0", o->ttft_p99_s); bad++; }
    if (!(o->tpot_p99_s >= 0 && isfinite(o->tpot_p99_s))) { mp_diag_add(d, "slo tpot_p99 = %g s: expected a finite time >= 0", o->tpot_p99_s); bad++; }
    if ((unsigned)o->objective >= MP_ISO_COUNT) { mp_diag_add(d, "objective %d: expected cost, energy or throughput", o->objective); bad++; }
    if ((unsigned)o->engine >= MP_ENGINE_COUNT) { mp_diag_add(d, "engine %d: expected vllm, sglang, trtllm or hf", o->engine); bad++; }
    if (!(o->price_gpu_hour_usd >= 0 && isfinite(o->price_gpu_hour_usd))) { mp_diag_add(d, "price = %g USD per GPU-hour: expected a finite number >= 0", o->price_gpu_hour_usd); bad++; }
    if (o->max_batch < 0 || o->max_batch > (1 << 20)) { mp_diag_add(d, "max_batch = %lld: expected 0 .. 2^20", (long long)o->max_batch); bad++; }
    return bad;
}

mp_status mp_infer_search(const mp_model *m, const mp_cluster *c, const mp_infer_search_opts *o,
                          mp_infer_search_result *out, mp_diag *diag)
{
    memset(out, 0, sizeof *out);
    if (check_opts(o, diag))
        return MP_ERR_INPUT;
    /* every candidate would be refused for the model's context (infer.c resolve): say so once
     * instead of "no plan fits memory" */
    if (m->context_len > 0 && o->in + o->out > m->context_len) {
        mp_diag_add(diag, "in + out = %lld + %lld = %lld tokens: expected at most %s's context of %lld tokens "
                    "(its config's max_position_embeddings)", (long long)o->in, (long long)o->out,
                    (long long)(o->in + o->out), m->key, (long long)m->context_len);
        return MP_ERR_INPUT;
    }
    search_ctx s = {m, c, o, o->price_gpu_hour_usd > 0 ? o->price_gpu_hour_usd : mp_infer_gpu_price_usd(c->gpu.key), out};
    if (!(s.price > 0)) {
        mp_diag_add(diag, "gpu %s: no built-in price per GPU-hour: expected one given (--price %s=USD)", c->gpu.key, c->gpu.key);
        return MP_ERR_INPUT;
    }
    out->price_gpu_hour_usd = s.price;
    const int moe = mp_model_is_moe(m), fp8 = c->gpu.peak_flops_per_s[MP_DT_FP8] > 0, fp4 = mp_infer_gpu_has_fp4(&c->gpu);
    const int wlist[3] = {MP_WQ_BF16, MP_WQ_FP8, MP_WQ_FP4};
    mp_infer_candidate *sc = malloc(sizeof *sc); /* large (the estimate's assumed lines): one, reused */
    if (!sc)
        return MP_ERR_NOMEM;
    for (int tp = 1; tp <= c->num_gpus && tp <= 64; tp *= 2) {
        if (m->heads % tp)
            continue;
        for (int pp = 1; (int64_t)tp * pp <= c->num_gpus && pp <= 64 && pp <= m->layers; pp *= 2) {
            if (c->num_gpus % ((int64_t)tp * pp))
                continue;
            for (int epi = 0; epi < (moe && tp > 1 ? 2 : 1); epi++) {
                int ep = epi ? tp : 1;
                if (ep > 1 && m->moe_experts % ep)
                    continue;
                for (int wi = 0; wi < 3; wi++) {
                    if ((wlist[wi] == MP_WQ_FP8 && !fp8) || (wlist[wi] == MP_WQ_FP4 && !fp4))
                        continue;
                    mp_infer_plan p;
                    mp_infer_plan_init(&p);
                    p.tp = tp, p.pp = pp, p.ep = ep, p.dp = (int)(c->num_gpus / ((int64_t)tp * pp));
                    p.in = o->in, p.out = o->out, p.engine = o->engine;
                    p.weights = wlist[wi];
                    p.kv = wlist[wi] != MP_WQ_BF16 ? MP_KVQ_FP8 : MP_KVQ_BF16;
                    batches(&s, p, sc);
                }
            }
        }
    }
    if (!out->found) {
        free(sc);
        snprintf(out->why, sizeof out->why, "no plan of %s on %lld x %s fits memory and the SLO "
                 "(%lld estimates)", m->key, (long long)c->num_gpus, c->gpu.key, (long long)out->evaluated);
        return MP_OK;
    }
    /* why the best split stopped at its batch: its next batch, scored */
    mp_infer_plan next = out->best.r.plan;
    next.batch *= 2;
    int fits;
    const int64_t cap = o->max_batch > 0 ? o->max_batch : 4096;
    if (next.batch <= (1 << 20) && score(&s, &next, sc, &fits, out->next_batch_why, sizeof out->next_batch_why)) {
        out->next_batch = next.batch;
        if (fits && ((double)next.batch > sc->r.engine.max_batch || next.batch > cap))
            snprintf(out->next_batch_why, sizeof out->next_batch_why, "above the batch cap (%s max_batch %.0f, search %lld)",
                     sc->r.engine.key, sc->r.engine.max_batch, (long long)cap);
        else if (fits)
            snprintf(out->next_batch_why, sizeof out->next_batch_why, "its %s %.4g is worse",
                     mp_infer_objective_name((mp_infer_objective)o->objective), fabs(sc->objective));
    }
    free(sc);
    explain(&s);
    return MP_OK;
}
