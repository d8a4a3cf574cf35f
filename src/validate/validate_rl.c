/* src/validate/validate_rl.c — validate the RL post-training schema
 * (../shared/validation/inference/README.md "rl_runs.csv columns": id, source_group, model,
 * algorithm, gpu, num_gpus, placement, rollout_gpus, train_gpus, rollout_engine, train_backend,
 * rollout_tp, train_tp, train_pp, prompts_per_step, responses_per_prompt, max_prompt_len,
 * max_response_len, mean_response_len, metric, value, baseline, notes), detected from the header
 * by mp_validate_csv. Each row that states model, GPU count and placement is predicted with
 * mp_rl_estimate; what it does not state comes from the defaults below, listed in the row's
 * `assumed` (docs/rl.md "Validation"). Nothing here is fitted to a row.
 *
 * Defaults:
 *   - response lengths: lognormal of shape sigma 1.0 (the long right tail of RL rollouts,
 *     StreamRL arXiv 2504.15930 Fig. 3; RLHFuse arXiv 2409.13221 Fig. 4) with mean max / 8: at
 *     sigma 1 the share cut at the max is then 0.5% (truncation kept rare, as DAPO's overlong
 *     filtering and soft punishment presume, Yu et al. 2025 Sec. 3.4);
 *   - max response length missing: 16384 tokens; prompt length: 256 tokens (short math problems
 *     with a template, as DAPO-Math-17k);
 *   - prompts missing: 512; responses per prompt missing: 16 (verl's DAPO recipes);
 *   - mini-batches: prompts / ppo_mini_batch from the notes, else 1;
 *   - train plan, rollout tp, CUDA graphs, the engine's memory share and the dynamic-batching
 *     token budget from verl's recipe scripts for the backend (row_config cites them); a rollout tp raised to the smallest power
 *     of two whose weights take at most 0.6 of a GPU; engine vLLM;
 *   - fully_async: staleness and partial rollout from the notes (verl's fields), else 0.5 and on;
 *     a "stream off-policy ... staleness 0" row has both off;
 *   - weight-sync rows: "checkpoint-engine on" is the bucketed sync, "off" per tensor.
 * speedup_vs_baseline rows are predicted as the ratio of the two configurations they name; this
 * file also checks each measured colocated-vs-split pair (two exact step_s rows of one source with
 * the same model, GPU count and batch, one colocated) as a derived `speedup_vs_baseline` row. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "meshplan/rl.h"
#include "meshplan/validate.h"
#include "validate/validate_internal.h"

#define MEAN_OF_MAX 8.0
#define DEFAULT_MAX_RESPONSE 16384
#define DEFAULT_PROMPT 256
#define WEIGHT_SHARE 0.6

#define RL_COLS(X) X(ID, "id") X(GROUP, "source_group") X(MODEL, "model") X(ALGO, "algorithm")      \
    X(GPU, "gpu") X(NGPUS, "num_gpus") X(PLACEMENT, "placement") X(RGPUS, "rollout_gpus")          \
    X(TGPUS, "train_gpus") X(ENGINE, "rollout_engine") X(BACKEND, "train_backend")                 \
    X(RTP, "rollout_tp") X(TTP, "train_tp") X(TPP, "train_pp") X(PROMPTS, "prompts_per_step")     \
    X(RESP, "responses_per_prompt") X(MAXP, "max_prompt_len") X(MAXR, "max_response_len")         \
    X(MEANR, "mean_response_len") X(METRIC, "metric") X(VALUE, "value") X(BASELINE, "baseline")   \
    X(QUALITY, "quality") X(NOTES, "notes")
enum {
#define X(e, n) RC_##e,
    RL_COLS(X)
#undef X
    RC_COUNT
};
static const char *const rcol[RC_COUNT] = {
#define X(e, n) n,
    RL_COLS(X)
#undef X
};

int mp_val_header_is_rl(char (*fields)[MP_VAL_FIELD], int n)
{
    int have = 0;
    for (int i = 0; i < n; i++)
        have |= (!strcmp(fields[i], "placement")) << 0 | (!strcmp(fields[i], "metric")) << 1 |
                (!strcmp(fields[i], "value")) << 2;
    return have == 7;
}

typedef struct {
    char cell[RC_COUNT][MP_VAL_FIELD];
    char assumed[256];
    char why[256];
    double predicted[5]; /* step, rollout, logprob, ref, train (for pairs) */
    int ok;
} rrow;

static void note(rrow *r, const char *text)
{
    size_t l = strlen(r->assumed);
    snprintf(r->assumed + l, sizeof r->assumed - l, "%s%s", l ? "; " : "", text);
}

static int num(const char *s, double *out)
{
    char *e;
    if (!s || !*s)
        return 0;
    double x = strtod(s, &e);
    if (*e || !isfinite(x) || x <= 0 || x > 1073741824.0)
        return 0;
    *out = x;
    return 1;
}

/* "key N" or "key=N" in the notes: the number after it, or 0. */
static double note_num(const char *notes, const char *key)
{
    const char *p = strstr(notes, key);
    if (!p)
        return 0;
    p += strlen(key);
    while (*p == ' ' || *p == '=' || *p == ':')
        p++;
    char *e;
    double x = strtod(p, &e);
    return e > p && isfinite(x) ? x : 0;
}

/* The row's config; 0, or 1 with r->why. */
static int row_config(const mp_catalog *cat, rrow *r, const mp_model **m, mp_cluster *cl, mp_rl_config *k)
{
    double x;
    *m = mp_catalog_model(cat, r->cell[RC_MODEL]);
    if (!*m)
        return snprintf(r->why, sizeof r->why, "model \"%.40s\" is not in the catalog", r->cell[RC_MODEL]), 1;
    if (!num(r->cell[RC_NGPUS], &x))
        return snprintf(r->why, sizeof r->why, "num_gpus \"%.20s\": expected a GPU count", r->cell[RC_NGPUS]), 1;
    mp_diag d = {0};
    if (mp_cluster_from_catalog(cat, r->cell[RC_GPU], (int64_t)x, 0, NULL, cl, &d) != MP_OK)
        return snprintf(r->why, sizeof r->why, "gpu \"%.40s\": %.180s", r->cell[RC_GPU], d.text), 1;
    mp_rl_config_init(k);
    if (!r->cell[RC_PLACEMENT][0] || mp_rl_placement_parse(r->cell[RC_PLACEMENT], k, &d) != MP_OK)
        return snprintf(r->why, sizeof r->why, "placement \"%.40s\": expected a schema placement", r->cell[RC_PLACEMENT]), 1;
    if (k->placement != MP_RL_COLOCATED) {
        k->rollout_gpus = num(r->cell[RC_RGPUS], &x) ? (int64_t)x : 0;
        k->train_gpus = num(r->cell[RC_TGPUS], &x) ? (int64_t)x : 0;
        if (!k->rollout_gpus && !k->train_gpus)
            note(r, "split half and half");
    }
    if (r->cell[RC_ALGO][0] && mp_rl_algorithm_parse(r->cell[RC_ALGO], &k->algorithm, &d) != MP_OK)
        return snprintf(r->why, sizeof r->why, "algorithm \"%.40s\" unknown", r->cell[RC_ALGO]), 1;
    k->prompts = num(r->cell[RC_PROMPTS], &x) ? (int64_t)x : (note(r, "512 prompts"), 512);
    k->responses = num(r->cell[RC_RESP], &x) ? (int64_t)x : (note(r, "16 responses per prompt"), 16);
    k->prompt_tokens = num(r->cell[RC_MAXP], &x) ? 0.5 * x : (note(r, "prompts of 256 tokens"), DEFAULT_PROMPT);
    double maxr = num(r->cell[RC_MAXR], &x) ? x : (note(r, "max response 16384"), DEFAULT_MAX_RESPONSE);
    double meanr = num(r->cell[RC_MEANR], &x) ? x : maxr / MEAN_OF_MAX;
    if (!r->cell[RC_MEANR][0])
        note(r, "responses lognormal sigma 1, mean = max/8");
    k->response = (mp_rl_lengths){MP_RL_LEN_LOGNORMAL, meanr, maxr, 1.0};
    double mini = note_num(r->cell[RC_NOTES], "ppo_mini_batch");
    k->mini_batches = mini > 0 && mini <= (double)k->prompts ? (int64_t)ceil((double)k->prompts / mini) : 1;
    /* the train plan, the rollout tp, CUDA graphs and memory share of the verl recipe scripts of
     * the backend (recipe/fully_async_policy/ at commit 19997f9e's era):
     *   fsdp (dense, dapo_7b_math_fsdp2_colocate.sh): FSDP2, gradient checkpointing, gen_tp 1,
     *     gpu_memory_utilization 0.80; fully_async (dapo_7b_math_fsdp2_16_16.sh): gen_tp 4;
     *   megatron dense (dapo_7b_math_megatron_colocate.sh): tp 2, pp 2, gen_tp 2, 0.80;
     *   megatron MoE (grpo_30b_a3b_base_math_megatron_96_32.sh): tp 2, cp 2, ep 8, etp 1,
     *     INFER_TP 4, enforce_eager, 0.7. */
    const char *be = r->cell[RC_BACKEND];
    int moe = mp_model_is_moe(*m), megatron = !strcmp(be, "megatron");
    int tp = 1;
    k->rollout.kv_frac = 0.8;
    if (megatron && moe) {
        snprintf(k->train_plan, sizeof k->train_plan, "tp=2,cp=2,ep=8,etp=1,zero=1,recompute=full");
        /* use_dynamic_bsz, ppo_max_token_len_per_gpu = max_prompt_length (2048) + max response */
        k->train_tokens_per_gpu = (int64_t)(2048 + maxr);
        tp = 4;
        k->rollout.kv_frac = 0.7;
        k->rollout.cuda_graphs = 0;
        note(r, "Megatron MoE recipe: tp 2, cp 2, ep 8, rollout tp 4 eager, micro-batches packed to 2048 + max tokens");
    } else if (megatron) {
        snprintf(k->train_plan, sizeof k->train_plan, "tp=2,pp=2,zero=1");
        tp = 2;
        note(r, "Megatron recipe: tp 2, pp 2, rollout tp 2");
    } else if (maxr >= 28672) {
        /* the 28K-response experiments the README's tables come from, colocated and split alike
         * (recipe/fully_async_policy/exp/qwen2-7B-math_{32,64,128}/fsdp2_*: gen_tp 4, Ulysses
         * sp_size 4, fsdp_size 2, gradient checkpointing): Ulysses splits each sequence over 4
         * GPUs as context parallelism does, priced as cp 4 (the estimator's ring exchange for
         * Ulysses' all-to-alls); fsdp_size 2 is verl's HSDP (verl/utils/device_mesh: a (ddp,
         * fsdp) mesh, parameters sharded over 2 GPUs and replicated across the pairs): hsdp=2 */
        snprintf(k->train_plan, sizeof k->train_plan, "zero=3,fsdp=2,hsdp=2,cp=4,recompute=full");
        /* use_dynamic_bsz, actor_ppo_max_token_len = 2 x (max_prompt_length 2048 + max response) */
        k->train_tokens_per_gpu = (int64_t)(2.0 * (2048 + maxr));
        tp = 4;
        note(r, "FSDP2 28K recipe: rollout tp 4, Ulysses sp 4 as cp 4, HSDP shard group 2, micro-batches packed to 2 x (2048 + max) tokens");
    } else if (k->placement == MP_RL_FULLY_ASYNC) {
        /* dapo_7b_math_fsdp2_16_16.sh: gen_tp 4, actor not offloaded (Ulysses sp 4 not modelled) */
        snprintf(k->train_plan, sizeof k->train_plan, "zero=3,fsdp=2,recompute=full");
        tp = 4;
        note(r, be[0] ? "FSDP2 fully-async recipe: rollout tp 4" : "train backend not stated: FSDP2 fully-async recipe, rollout tp 4");
    } else {
        snprintf(k->train_plan, sizeof k->train_plan, "zero=3,fsdp=2,recompute=full");
        note(r, be[0] ? "FSDP2 recipe: rollout tp 1" : "train backend not stated: FSDP2 recipe, rollout tp 1");
    }
    /* a model whose bf16 weights take more than WEIGHT_SHARE of a GPU: the smallest power of two
     * that brings them under it */
    mp_param_count pc;
    mp_model_params(*m, 1, &pc);
    while (tp < 8 && (double)pc.total * 2.0 / tp > WEIGHT_SHARE * cl->gpu.memory_bytes)
        tp *= 2;
    k->rollout.tp = num(r->cell[RC_RTP], &x) ? (int)x : tp;
    const char *n = r->cell[RC_NOTES];
    if (k->placement == MP_RL_FULLY_ASYNC) {
        double s = note_num(n, "staleness");
        k->staleness = strstr(n, "staleness") ? fmin(1.0, s) : 0.5;
        k->partial_rollout = strstr(n, "partial") && k->staleness > 0 ? 1 : 0;
        /* the trainer's chunks per sync: trigger_parameter_sync_step from the notes, else the
         * README's rule for comparing with colocated runs, prompts / (require_batches x
         * ppo_mini_batch_size); neither stated: one chunk per mini-batch */
        double trig = note_num(n, "trigger_sync"), rb = note_num(n, "require_batches");
        if (trig >= 1 && (trig > 1048576 || trig != floor(trig)))
            /* checked before the conversion: 1e30 converted to int64_t is undefined (C11 6.3.1.4) */
            return snprintf(r->why, sizeof r->why, "notes trigger_sync = %g: expected a whole number of "
                            "updates per sync in [1, 1048576]", trig), 1;
        if (trig >= 1)
            k->sync_chunks = (int64_t)trig;
        else if (rb >= 1 && mini > 0) {
            char t[96];
            k->sync_chunks = (int64_t)fmax(1.0, floor((double)k->prompts / (rb * mini)));
            snprintf(t, sizeof t, "trigger = prompts / (require_batches x ppo_mini_batch) = %lld",
                     (long long)k->sync_chunks);
            note(r, t);
        }
    }
    if (!strcmp(r->cell[RC_METRIC], "weight_sync_s"))
        k->sync = strstr(n, "checkpoint-engine on") ? MP_RL_SYNC_BUCKETED : MP_RL_SYNC_PER_TENSOR;
    return 0;
}

static int metric_value(const char *metric, const mp_rl_result *res, double *out)
{
    const struct { const char *name; double v; } map[] = {
        {"step_s", res->step_s}, {"rollout_s", res->rollout_s}, {"logprob_s", res->logprob_s},
        {"ref_s", res->ref_s}, {"train_s", res->train_s}, {"weight_sync_s", res->weight_sync_s},
        {"tokens_per_s", res->tokens_per_s}, {"tokens_per_s_per_gpu", res->tokens_per_s_per_gpu}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(metric, map[i].name)) {
            *out = map[i].v;
            return *out > 0;
        }
    return 0;
}

static void add_skip(mp_validation *v, const char *id, const char *why)
{
    mp_val_skip *s = &v->skips[v->nskips++];
    mp_strlcpy(s->id, id, sizeof s->id);
    mp_strlcpy(s->reason, why, sizeof s->reason);
    mp_utf8_scrub(s->reason);
}

static void one_row(const mp_catalog *cat, rrow *r, mp_rl_result *res, mp_validation *out)
{
    const char *metric = r->cell[RC_METRIC];
    double measured;
    if (!num(r->cell[RC_VALUE], &measured)) {
        add_skip(out, r->cell[RC_ID], "value: expected a positive number");
        return;
    }
    if (!strcmp(metric, "speedup_vs_baseline")) {
        add_skip(out, r->cell[RC_ID], "speedup_vs_baseline: predicted from its pair (see the derived rows)");
        return;
    }
    const mp_model *m;
    mp_cluster cl;
    mp_rl_config k;
    if (row_config(cat, r, &m, &cl, &k)) {
        add_skip(out, r->cell[RC_ID], r->why);
        return;
    }
    mp_diag d = {0};
    if (mp_rl_estimate(m, &cl, &k, res, &d) != MP_OK) {
        snprintf(r->why, sizeof r->why, "the step cannot be formed: %.200s", d.text);
        add_skip(out, r->cell[RC_ID], r->why);
        return;
    }
    double pred;
    if (!metric_value(metric, res, &pred)) {
        snprintf(r->why, sizeof r->why, "metric %.40s: not predicted for this placement (0 s)", metric);
        add_skip(out, r->cell[RC_ID], r->why);
        return;
    }
    r->predicted[0] = res->step_s;
    r->ok = 1;
    mp_val_push_row(out, r->cell[RC_ID], r->cell[RC_GROUP], metric, measured, pred, r->assumed, "");
}

/* Each exact colocated step_s row against each exact split step_s row of the same source, model,
 * GPU count, batch and response limit: measured ratio vs predicted ratio. */
static void pairs(rrow *rows, size_t n, mp_validation *out)
{
    const size_t cap = out->nrows + n; /* rows holds 2 n + 1 */
    for (size_t i = 0; i < n && out->nrows < cap; i++) {
        rrow *a = &rows[i];
        if (!a->ok || strcmp(a->cell[RC_METRIC], "step_s") || strcmp(a->cell[RC_QUALITY], "exact") ||
            strcmp(a->cell[RC_PLACEMENT], "colocated"))
            continue;
        for (size_t j = 0; j < n && out->nrows < cap; j++) {
            rrow *b = &rows[j];
            if (!b->ok || strcmp(b->cell[RC_METRIC], "step_s") || strcmp(b->cell[RC_QUALITY], "exact") ||
                !strcmp(b->cell[RC_PLACEMENT], "colocated"))
                continue;
            const int same[] = {RC_GROUP, RC_MODEL, RC_GPU, RC_NGPUS, RC_PROMPTS, RC_RESP, RC_MAXR};
            int ok = 1;
            for (size_t s = 0; s < sizeof same / sizeof same[0]; s++)
                ok &= !strcmp(a->cell[same[s]], b->cell[same[s]]);
            double va, vb;
            if (!ok || !num(a->cell[RC_VALUE], &va) || !num(b->cell[RC_VALUE], &vb))
                continue;
            char id[64];
            snprintf(id, sizeof id, "%.30s/%.30s", a->cell[RC_ID], b->cell[RC_ID]);
            mp_val_push_row(out, id, a->cell[RC_GROUP], "speedup_vs_baseline", va / vb,
                            a->predicted[0] / b->predicted[0],
                            "derived: colocated step / split step of the two rows", "");
        }
    }
}

mp_status mp_validate_rl_csv(const mp_catalog *cat, const char *text, size_t len, const char *origin,
                             mp_validation *out, mp_diag *diag)
{
    memset(out, 0, sizeof *out);
    char(*fields)[MP_VAL_FIELD] = malloc(MP_VAL_MAX_COLS * sizeof *fields);
    mp_rl_result *res = malloc(sizeof *res);
    const char *p = text, *end = text + len;
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3))
        p += 3;
    int overflow = 0, idx[RC_COUNT], nh = fields ? mp_val_csv_next(&p, end, fields, &overflow) : 0;
    for (int c = 0; c < RC_COUNT; c++) {
        idx[c] = -1;
        for (int i = 0; i < nh; i++)
            if (!strcmp(fields[i], rcol[c]))
                idx[c] = i;
    }
    size_t nrec = 0;
    for (const char *q = p; fields;) {
        int n = mp_val_csv_next(&q, end, fields, &overflow);
        if (n == 0)
            break;
        if (n < 0 || ++nrec > 4096) {
            mp_diag_add(diag, "%s: record %zu: %s", origin, nrec + 1, n < 0 ? "unterminated quoted field" : "more than 4096 rows");
            free(fields);
            free(res);
            return n < 0 ? MP_ERR_PARSE : MP_ERR_RANGE;
        }
    }
    rrow *rows = calloc(nrec + 1, sizeof *rows);
    out->rows = calloc(2 * nrec + 1, sizeof *out->rows); /* the rows, then at most nrec pairs */
    out->skips = calloc(nrec + 1, sizeof *out->skips);
    if (!fields || !res || !rows || !out->rows || !out->skips) {
        mp_validation_free(out);
        free(fields);
        free(res);
        free(rows);
        return MP_ERR_NOMEM;
    }
    size_t nr = 0;
    for (size_t rec = 0; rec < nrec; rec++) {
        int n = mp_val_csv_next(&p, end, fields, &overflow);
        if (n <= 0)
            break;
        if (n == 1 && fields[0][0] == '\0')
            continue;
        out->ninput++;
        rrow *r = &rows[nr++];
        for (int c = 0; c < RC_COUNT; c++)
            mp_strlcpy(r->cell[c], idx[c] >= 0 && idx[c] < n ? fields[idx[c]] : "", MP_VAL_FIELD);
        if (!r->cell[RC_ID][0])
            snprintf(r->cell[RC_ID], MP_VAL_FIELD, "row%zu", rec + 2);
        one_row(cat, r, res, out);
    }
    pairs(rows, nr, out);
    free(rows);
    free(fields);
    free(res);
    return MP_OK;
}
