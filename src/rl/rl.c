/* src/rl/rl.c — one RL post-training step: the names and parsers of the config, the rollout on
 * its pool (the event loop of rollout.c over the length quantiles), the forward-only passes and
 * the update from the training estimator, the weight sync (sync.c), and the placement that
 * composes them into the step with the idle time of each pool. Equations and sources: docs/rl.md.
 */
#define _POSIX_C_SOURCE 200809L /* strtok_r, clock_gettime: clang hides POSIX under -std=c11 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshplan/energy.h"
#include "meshplan/estimate.h"
#include "meshplan/rl.h"
#include "rl/rl_internal.h"

static const char *const algo_names[MP_RL_ALGO_COUNT] = {"ppo", "grpo", "dapo", "rloo", "reinforce++"};
static const char *const placement_names[MP_RL_PLACEMENT_COUNT] = {"colocated", "disaggregated",
                                                                   "async_one_step", "fully_async"};
static const char *const dist_names[MP_RL_LEN_COUNT] = {"fixed", "lognormal", "uniform"};
static const char *const sync_names[MP_RL_SYNC_COUNT] = {"bucketed", "per_tensor", "cpu"};

const char *mp_rl_algorithm_name(mp_rl_algorithm a) { return a >= 0 && a < MP_RL_ALGO_COUNT ? algo_names[a] : "?"; }
const char *mp_rl_placement_name(mp_rl_placement p) { return p >= 0 && p < MP_RL_PLACEMENT_COUNT ? placement_names[p] : "?"; }
const char *mp_rl_len_dist_name(mp_rl_len_dist d) { return d >= 0 && d < MP_RL_LEN_COUNT ? dist_names[d] : "?"; }
const char *mp_rl_sync_name(mp_rl_sync s) { return s >= 0 && s < MP_RL_SYNC_COUNT ? sync_names[s] : "?"; }

static int name_index(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

mp_status mp_rl_algorithm_parse(const char *s, int *out, mp_diag *d)
{
    int i = name_index(s, algo_names, MP_RL_ALGO_COUNT);
    if (i < 0) {
        mp_diag_add(d, "algorithm = \"%s\": expected ppo, grpo, dapo, rloo or reinforce++", s);
        return MP_ERR_INPUT;
    }
    *out = i;
    return MP_OK;
}

mp_status mp_rl_sync_parse(const char *s, int *out, mp_diag *d)
{
    int i = name_index(s, sync_names, MP_RL_SYNC_COUNT);
    if (i < 0) {
        mp_diag_add(d, "sync = \"%s\": expected bucketed, per_tensor or cpu", s);
        return MP_ERR_INPUT;
    }
    *out = i;
    return MP_OK;
}

/* key=value,... into (key, value) pairs: calls f for each; 1 on a malformed item. */
static int each_pair(const char *text, const char *what, mp_diag *d,
                     int (*f)(const char *k, const char *v, void *ctx, mp_diag *d), void *ctx)
{
    char buf[512];
    if (strlen(text) >= sizeof buf) {
        mp_diag_add(d, "%s: \"%.40s...\": longer than %zu characters", what, text, sizeof buf - 1);
        return 1;
    }
    strcpy(buf, text);
    int bad = 0, nkeys = 0;
    const char *keys[256]; /* the keys so far, in buf: a second value of one was last-wins silently */
    for (char *save = NULL, *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (!eq || eq == item) {
            mp_diag_add(d, "%s: \"%s\": expected key=value", what, item);
            bad = 1;
            continue;
        }
        *eq = '\0';
        int twice = 0;
        for (int i = 0; i < nkeys && !twice; i++)
            twice = !strcmp(keys[i], item);
        if (twice) {
            mp_diag_add(d, "%s: key \"%s\" given twice (second value \"%s\"): expected each key once", what, item,
                        eq + 1);
            bad = 1;
            continue;
        }
        keys[nkeys++] = item;
        bad |= f(item, eq + 1, ctx, d);
    }
    return bad;
}

static int real_of(const char *what, const char *v, double lo, double hi, double *out, mp_diag *d)
{
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !isfinite(x) || x < lo || x > hi) {
        mp_diag_add(d, "%s = \"%s\": expected a number in [%g, %g]", what, v, lo, hi);
        return 1;
    }
    *out = x;
    return 0;
}

static int len_pair(const char *k, const char *v, void *ctx, mp_diag *d)
{
    mp_rl_lengths *l = ctx;
    if (!strcmp(k, "mean"))
        return real_of("response-len mean", v, 1, 1e7, &l->mean_tokens, d);
    if (!strcmp(k, "max"))
        return real_of("response-len max", v, 1, 1e7, &l->max_tokens, d);
    if (!strcmp(k, "sigma"))
        return real_of("response-len sigma", v, 1e-3, 4, &l->sigma, d);
    if (!strcmp(k, "dist")) {
        int i = name_index(v, dist_names, MP_RL_LEN_COUNT);
        if (i < 0) {
            mp_diag_add(d, "response-len dist = \"%s\": expected fixed, lognormal or uniform", v);
            return 1;
        }
        l->dist = i;
        return 0;
    }
    mp_diag_add(d, "response-len: unknown key \"%s\": expected mean, max, dist or sigma", k);
    return 1;
}

mp_status mp_rl_lengths_parse(const char *text, mp_rl_lengths *l, mp_diag *d)
{
    double max0 = l->max_tokens;
    int bad = each_pair(text, "response-len", d, len_pair, l);
    if (!bad && strstr(text, "max=") == NULL && l->max_tokens == max0 && l->max_tokens < l->mean_tokens)
        l->max_tokens = l->mean_tokens; /* a mean above the default max: the max follows it */
    if (!bad && l->max_tokens < l->mean_tokens) {
        mp_diag_add(d, "response-len: max = %g below mean = %g: expected max >= mean", l->max_tokens, l->mean_tokens);
        bad = 1;
    }
    return bad ? MP_ERR_INPUT : MP_OK;
}

static int place_pair(const char *k, const char *v, void *ctx, mp_diag *d)
{
    mp_rl_config *c = ctx;
    double x;
    if (!strcmp(k, "rollout") || !strcmp(k, "train")) {
        if (real_of(k, v, 1, 16777216, &x, d))
            return 1;
        if (x != floor(x)) {
            mp_diag_add(d, "placement %s = \"%s\": expected a whole GPU count", k, v);
            return 1;
        }
        *(k[0] == 'r' ? &c->rollout_gpus : &c->train_gpus) = (int64_t)x;
        return 0;
    }
    if (!strcmp(k, "staleness"))
        return real_of("placement staleness", v, 0, 1, &c->staleness, d);
    if (!strcmp(k, "trigger")) { /* verl async_training.trigger_parameter_sync_step */
        if (real_of("placement trigger", v, 1, 1048576, &x, d))
            return 1;
        if (x != floor(x)) {
            mp_diag_add(d, "placement trigger = \"%s\": expected a whole number of updates per sync", v);
            return 1;
        }
        c->sync_chunks = (int64_t)x;
        return 0;
    }
    mp_diag_add(d, "placement: unknown key \"%s\": expected rollout, train, staleness or trigger", k);
    return 1;
}

mp_status mp_rl_placement_parse(const char *text, mp_rl_config *c, mp_diag *d)
{
    char name[32];
    const char *colon = strchr(text, ':');
    size_t n = colon ? (size_t)(colon - text) : strlen(text);
    int i = -1;
    if (n < sizeof name) {
        memcpy(name, text, n);
        name[n] = '\0';
        i = name_index(name, placement_names, MP_RL_PLACEMENT_COUNT);
    }
    if (i < 0) {
        mp_diag_add(d, "placement = \"%s\": expected colocated, disaggregated:rollout=R,train=T, "
                       "async_one_step[:rollout=R,train=T] or fully_async[:...,staleness=S,trigger=N]", text);
        return MP_ERR_INPUT;
    }
    c->placement = i;
    if (colon && each_pair(colon + 1, "placement", d, place_pair, c))
        return MP_ERR_INPUT;
    if (i == MP_RL_COLOCATED && colon) {
        mp_diag_add(d, "placement = \"%s\": colocated shares every GPU: expected no split", text);
        return MP_ERR_INPUT;
    }
    return MP_OK;
}

void mp_rl_config_init(mp_rl_config *c)
{
    memset(c, 0, sizeof *c);
    c->algorithm = MP_RL_GRPO;
    c->prompts = 512;
    c->responses = 8;
    c->prompt_tokens = 1024;
    c->response = (mp_rl_lengths){MP_RL_LEN_LOGNORMAL, 2000, 8192, 1.0};
    c->placement = MP_RL_COLOCATED;
    c->partial_rollout = -1;
    c->ppo_epochs = 1;
    mp_infer_plan_init(&c->rollout);
    c->sync = MP_RL_SYNC_BUCKETED;
    c->bucket_bytes = 4096.0 * 1048576.0;
    c->per_tensor_host_s = 3e-4;
    c->host_Bps = 25e9;
    c->offload = -1;
    c->reward_s_per_response = 1e-3;
    c->price_gpu_hour_usd = 2.0;
}

/* ---- the rollout on a pool -------------------------------------------------------------------- */

static int check_config(const mp_rl_config *c, mp_diag *d)
{
    int bad = 0;
#define NEED(cond, ...) do { if (!(cond)) { mp_diag_add(d, __VA_ARGS__); bad++; } } while (0)
    NEED(c->prompts >= 1 && c->prompts <= (1 << 24), "prompts = %lld: expected 1 .. 16777216", (long long)c->prompts);
    NEED(c->responses >= 1 && c->responses <= 4096, "responses = %lld: expected 1 .. 4096", (long long)c->responses);
    NEED(c->prompts * c->responses <= (1 << 24), "prompts x responses = %lld: expected at most 16777216",
         (long long)(c->prompts * c->responses));
    NEED(c->prompt_tokens >= 1 && c->prompt_tokens <= 1e7, "prompt-len = %g: expected 1 .. 1e7", c->prompt_tokens);
    NEED(c->response.mean_tokens >= 1 && c->response.max_tokens >= c->response.mean_tokens &&
         c->response.max_tokens <= 1e7, "response-len mean = %g, max = %g: expected 1 <= mean <= max <= 1e7",
         c->response.mean_tokens, c->response.max_tokens);
    NEED(c->response.sigma > 0 && c->response.sigma <= 4, "response-len sigma = %g: expected (0, 4]", c->response.sigma);
    NEED(c->overprovision_frac >= 0 && c->overprovision_frac <= 4, "overprovision = %g: expected [0, 4]", c->overprovision_frac);
    NEED(c->staleness >= 0 && c->staleness <= 1, "staleness = %g: expected [0, 1]", c->staleness);
    NEED(c->sync_chunks >= 0 && c->sync_chunks <= (1 << 20), "sync_chunks (trigger) = %lld: expected 0 .. 1048576",
         (long long)c->sync_chunks);
    NEED(c->ppo_epochs >= 1 && c->ppo_epochs <= 100, "ppo_epochs = %d: expected 1 .. 100", c->ppo_epochs);
    NEED(c->mini_batches >= 0 && c->mini_batches <= (1 << 20), "mini_batches = %lld: expected 0 .. 1048576", (long long)c->mini_batches);
    NEED(c->bucket_bytes > 0 && isfinite(c->bucket_bytes), "bucket_bytes = %g: expected > 0", c->bucket_bytes);
    NEED(c->per_tensor_host_s >= 0 && c->per_tensor_host_s < 1, "per_tensor_host_s = %g: expected [0, 1)", c->per_tensor_host_s);
    NEED(c->host_Bps > 0 && isfinite(c->host_Bps), "host_Bps = %g: expected > 0", c->host_Bps);
    NEED(c->reward_s_per_response >= 0 && c->reward_s_per_response < 1e3, "reward_s_per_response = %g: expected [0, 1000)",
         c->reward_s_per_response);
    NEED(c->price_gpu_hour_usd >= 0 && c->price_gpu_hour_usd < 1e4, "price_gpu_hour_usd = %g: expected [0, 10000)",
         c->price_gpu_hour_usd);
    NEED(c->train_tokens_per_gpu >= 0 && c->train_tokens_per_gpu <= (1 << 30),
         "train_tokens_per_gpu = %lld: expected 0 .. 1073741824", (long long)c->train_tokens_per_gpu);
    NEED(c->max_num_seqs >= 0 && c->max_num_seqs <= (1 << 20), "max_num_seqs = %lld: expected 0 .. 1048576", (long long)c->max_num_seqs);
#undef NEED
    return bad;
}

/* Lengths of one engine's n responses in submission order: the n quantiles interleaved by a
 * stride coprime with n (long and short mixed, as a shuffled batch), the longest of the whole step
 * (quantile 1 - 0.5/N) first when `straggler`. */
static void engine_lengths(const mp_rl_lengths *l, int64_t n, int64_t total, int straggler, double *out)
{
    int64_t stride = (int64_t)(0.6180339887 * (double)n) | 1;
    while (n > 1 && stride > 1) {
        int64_t a = n, b = stride;
        while (b) { int64_t t = a % b; a = b; b = t; }
        if (a == 1)
            break;
        stride += 2;
    }
    for (int64_t j = 0; j < n; j++)
        out[j] = mp_rl_length_quantile(l, (j * stride) % n, n);
    if (straggler) {
        int64_t top = 0;
        for (int64_t j = 1; j < n; j++)
            if (out[j] > out[top])
                top = j;
        out[top] = out[0];
        out[0] = fmax(mp_rl_length_quantile(l, total - 1, total), out[0]);
    }
}

mp_status mp_rl_rollout_estimate(const mp_model *m, const mp_cluster *c, int64_t gpus,
                                 const mp_rl_config *cfg, mp_rl_rollout *o, mp_diag *d)
{
    memset(o, 0, sizeof *o);
    if (check_config(cfg, d))
        return MP_ERR_INPUT;
    const int64_t per = (int64_t)cfg->rollout.tp * cfg->rollout.pp;
    if (per < 1 || gpus < per || gpus % per) {
        mp_diag_add(d, "rollout pool: %lld GPUs: expected a multiple of the rollout's tp x pp = %lld",
                    (long long)gpus, (long long)per);
        return MP_ERR_INPUT;
    }
    mp_cluster pool;
    mp_rl_pool(c, per, &pool); /* one engine */
    const int64_t N = cfg->prompts * cfg->responses;
    const double x = cfg->overprovision_frac;
    const int64_t Nx = (int64_t)ceil((double)N * (1.0 + x));
    o->engines = gpus / per;
    o->seqs_per_engine = (Nx + o->engines - 1) / o->engines;
    if (o->seqs_per_engine > (1 << 20)) {
        mp_diag_add(d, "rollout: %lld responses per engine: expected at most 1048576 (more rollout GPUs)",
                    (long long)o->seqs_per_engine);
        return MP_ERR_INPUT;
    }
    const int64_t keep = (N + o->engines - 1) / o->engines;
    const double P = cfg->prompt_tokens;
    mp_infer_result *scratch = malloc(sizeof *scratch);
    mp_rl_step_table *t = malloc(sizeof *t);
    double *lens = malloc((size_t)o->seqs_per_engine * sizeof *lens);
    mp_status st = scratch && t && lens ? MP_OK : MP_ERR_NOMEM;
    /* concurrency: max_num_seqs (or the engine's default cap) and the KV pool at the mean length
     * (vLLM allocates blocks as sequences grow and preempts when the pool is full) */
    int64_t cap = cfg->max_num_seqs;
    if (st == MP_OK) {
        st = mp_rl_step_table_build(m, &pool, &cfg->rollout, P, P + cfg->response.max_tokens, 1, t, scratch, d);
        if (st == MP_OK) {
            double mean = 0;
            for (int64_t i = 0; i < 64; i++)
                mean += mp_rl_length_quantile(&cfg->response, i, 64) / 64.0;
            o->kv_pool_tokens = t->kv_pool_tokens;
            int64_t kvcap = (int64_t)floor(t->kv_pool_tokens / (P + mean));
            if (cap <= 0)
                cap = (int64_t)t->engine_max_batch;
            if (kvcap < cap)
                cap = kvcap;
            if (cap < 1) {
                mp_diag_add(d, "rollout: the engine's KV pool holds %.0f tokens: not one sequence of "
                               "%.0f tokens fits (more rollout tp, or a shorter response)", t->kv_pool_tokens, P + mean);
                st = MP_ERR_INPUT;
            }
            if (cap > o->seqs_per_engine)
                cap = o->seqs_per_engine;
            o->max_in_flight = cap;
        }
        if (st == MP_OK)
            st = mp_rl_step_table_build(m, &pool, &cfg->rollout, P, P + cfg->response.max_tokens, cap, t, scratch, d);
    }
    /* prefill: one per prompt (the group's responses share it: prefix caching, vLLM V1 default) */
    const double pre_seq = st == MP_OK ? t->prefill_per_prompt_s / (double)cfg->responses : 0.0;
    mp_rl_engine_out straggler = {0}, mean_eng = {0};
    if (st == MP_OK) {
        engine_lengths(&cfg->response, o->seqs_per_engine, Nx, 1, lens);
        o->longest_tokens = lens[0];
        st = mp_rl_engine_run(t, lens, o->seqs_per_engine, keep, cap, P, pre_seq, &straggler);
    }
    if (st == MP_OK) {
        engine_lengths(&cfg->response, o->seqs_per_engine, Nx, 0, lens);
        st = mp_rl_engine_run(t, lens, o->seqs_per_engine, keep, cap, P, pre_seq, &mean_eng);
    }
    if (st == MP_OK) {
        int partial = cfg->partial_rollout < 0 ? cfg->placement == MP_RL_FULLY_ASYNC : cfg->partial_rollout;
        o->prefill_s = pre_seq * (double)o->seqs_per_engine;
        o->decode_s = straggler.decode_s - o->prefill_s;
        o->total_s = straggler.decode_s;
        o->tail_wait_s = straggler.tail_wait_s;
        o->mean_engine_s = mean_eng.decode_s;
        o->peak_batch = straggler.peak_batch;
        if (partial && straggler.tail_wait_s > 0) {
            /* partial rollout: the tail's tokens are carried over and generated at the peak batch's
             * rate inside the next step (Kimi k1.5, arXiv 2501.12599 Sec. 2.6.2; verl
             * partial_rollout): the step pays for them at full occupancy, not in the drain */
            double ctx = P + 0.5 * cfg->response.mean_tokens;
            double full_rate_s = mp_rl_step_time(t, straggler.peak_batch, ctx) / straggler.peak_batch;
            double carried = straggler.tail_tokens * full_rate_s;
            o->total_s = straggler.decode_s - straggler.tail_wait_s + fmin(carried, straggler.tail_wait_s);
            o->tail_wait_s = 0.0;
        }
        double mean = 0, trunc = 0;
        for (int64_t i = 0; i < 1024; i++) {
            double q = mp_rl_length_quantile(&cfg->response, i, 1024);
            mean += q / 1024.0;
            trunc += q >= cfg->response.max_tokens ? 1.0 / 1024.0 : 0.0;
        }
        o->mean_response_tokens = x > 0 ? mean_eng.tokens / (double)keep : mean;
        o->truncated_frac = trunc;
        o->tokens = o->mean_response_tokens * (double)N;
        double busy = straggler.busy_seq_s + (double)(o->engines - 1) * mean_eng.busy_seq_s;
        o->busy_frac = o->total_s > 0 ? fmin(1.0, busy / ((double)o->engines * (double)cap * o->total_s)) : 0.0;
    }
    free(scratch);
    free(t);
    free(lens);
    return st;
}
