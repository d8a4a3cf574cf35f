/* src/cli/cmd_rl.c — `meshplan rl`: one RL post-training step (PPO, GRPO, DAPO, ...) on a job's
 * GPUs: rollout with its long-tail wait, the forward-only passes, the policy update, the weight
 * sync, the colocated switch, the idle time of each pool, tokens/s, $ and J per step. The model:
 * src/rl/, include/meshplan/rl.h, docs/rl.md. cli_rl_job reads the job for rl-search too. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "infer/infer_keys.h"
#include "cli_rl_opts.h"

static const cli_option rl_opts[] = {
    CLI_OPTS_RL_JOB
    CLI_OPT_JSON,
    CLI_END,
};

static int rl_run(int argc, char **argv);

void cli_print_rl_keys(FILE *f)
{
    fprintf(f, "--rollout-plan: ");
    cli_print_infer_keys(f);
    fprintf(f, "\n--train-plan: ");
    cli_print_plan_keys(f);
}

const cli_command cli_cmd_rl = {
    "rl", "RL post-training step: rollout (long tail), ref/log-prob passes, update, weight sync, "
    "idle per pool, $ and J per step",
    NULL, 0, rl_opts,
    "Placements: colocated (time-sliced), disaggregated (two pools, synchronous), async_one_step\n"
    "(rollout of step k+1 during update k), fully_async (streaming, partial rollouts, staleness=S,\n"
    "trigger=N: trainer updates per parameter sync).\n"
    "Equations and sources: docs/rl.md.\n",
    rl_run,
};

static int int_opt(const cli_args *a, const char *opt, long long lo, long long hi, int64_t *out)
{
    const char *v = cli_opt(a, opt);
    long long x;
    if (!v)
        return 0;
    int rc = cli_parse_count(opt + 2, v, lo, hi, &x);
    if (!rc)
        *out = x;
    return rc;
}

static int config_opts(const cli_args *a, mp_rl_config *k)
{
    mp_diag d = {0};
    const char *v;
    int64_t x;
    int rc = 0;
    if ((v = cli_opt(a, "--algorithm")) && mp_rl_algorithm_parse(v, &k->algorithm, &d) != MP_OK)
        rc = EXIT_INPUT;
    if (!rc)
        rc = int_opt(a, "--prompts", 1, 1 << 24, &k->prompts);
    if (!rc)
        rc = int_opt(a, "--responses", 1, 4096, &k->responses);
    if (!rc)
        rc = cli_opt_real(a, "--prompt-len", 1, 1e7, &k->prompt_tokens);
    if (!rc && (v = cli_opt(a, "--response-len")) && mp_rl_lengths_parse(v, &k->response, &d) != MP_OK)
        rc = EXIT_INPUT;
    if (!rc && (v = cli_opt(a, "--placement")) && mp_rl_placement_parse(v, k, &d) != MP_OK)
        rc = EXIT_INPUT;
    if (!rc && (v = cli_opt(a, "--rollout-plan")) && mp_infer_plan_parse(v, &k->rollout, &d) != MP_OK)
        rc = EXIT_INPUT;
    if (!rc && v) { /* the rollout sets these from the prompts and lengths: they were dropped silently */
#define KEY_NAME(name, ...) #name,
        static const char *const names[] = {MP_INFER_KEYS(KEY_NAME)};
#undef KEY_NAME
        static const char *const theirs[] = {"dp", "batch", "in", "out", "longest"};
        for (size_t i = 0; !rc && i < sizeof names / sizeof names[0]; i++)
            for (size_t j = 0; !rc && j < sizeof theirs / sizeof theirs[0]; j++)
                if (!strcmp(names[i], theirs[j]) && ((k->rollout.given >> i) & 1u)) {
                    fprintf(stderr, "meshplan: rollout-plan.%s: not a rollout key: expected it left out (the rollout "
                                    "pool's replicas, batches and lengths come from --placement, --prompts, "
                                    "--responses, --prompt-len and --response-len)\n", theirs[j]);
                    rc = EXIT_INPUT;
                }
    }
    if (!rc && (v = cli_opt(a, "--train-plan"))) {
        if (strlen(v) >= sizeof k->train_plan)
            return cli_fail("train-plan = \"%s\": longer than 255 characters", v);
        strcpy(k->train_plan, v);
    }
    if (!rc)
        rc = int_opt(a, "--mini-batches", 1, 1 << 20, &k->mini_batches);
    if (!rc)
        rc = int_opt(a, "--train-tokens-per-gpu", 0, 1 << 30, &k->train_tokens_per_gpu);
    x = k->ppo_epochs;
    if (!rc && !(rc = int_opt(a, "--epochs", 1, 100, &x)))
        k->ppo_epochs = (int)x;
    x = k->partial_rollout;
    if (!rc && !(rc = int_opt(a, "--partial-rollout", 0, 1, &x)))
        k->partial_rollout = (int)x;
    x = k->offload;
    if (!rc && !(rc = int_opt(a, "--offload", 0, 1, &x)))
        k->offload = (int)x;
    if (!rc)
        rc = cli_opt_real(a, "--overprovision", 0, 4, &k->overprovision_frac);
    if (!rc)
        rc = int_opt(a, "--max-num-seqs", 1, 1 << 20, &k->max_num_seqs);
    if (!rc && (v = cli_opt(a, "--sync")) && mp_rl_sync_parse(v, &k->sync, &d) != MP_OK)
        rc = EXIT_INPUT;
    if (!rc)
        rc = cli_opt_real(a, "--price-gpu-hour", 0, 1e4, &k->price_gpu_hour_usd);
    if (d.count)
        cli_print_diag(&d);
    return rc;
}

int cli_rl_job(const cli_args *a, mp_model *m, mp_cluster *cl, mp_rl_config *k)
{
    mp_rl_config_init(k);
    int rc = config_opts(a, k);
    if (rc)
        return rc;
    long long ngpus = 0, gpn = 0;
    if ((rc = cli_parse_count("gpus", cli_opt(a, "--gpus"), 1, 1LL << 24, &ngpus)))
        return rc;
    if (cli_opt(a, "--gpus-per-node") &&
        (rc = cli_parse_count("gpus-per-node", cli_opt(a, "--gpus-per-node"), 1, 1 << 20, &gpn)))
        return rc;
    const char *cluster = cli_opt(a, "--cluster"), *gpu = cli_opt(a, "--gpu");
    if (!cluster == !gpu)
        return cli_fail("rl: give exactly one of --cluster C and --gpu G%s", "");
    mp_catalog *cat = NULL;
    if ((rc = cli_load_catalog(a, &cat)))
        return rc;
    if (!(rc = cli_load_model(cat, cli_opt(a, "--model"), m))) {
        if (cluster)
            rc = cli_load_cluster(cat, cluster, ngpus, NULL, cl);
        else {
            mp_diag d = {0};
            mp_status st = mp_cluster_from_catalog(cat, gpu, ngpus, (int)gpn, cli_opt(a, "--scale-out"), cl, &d);
            if (st != MP_OK) {
                cli_print_diag(&d);
                rc = cli_exit_for(st);
            }
        }
    }
    mp_catalog_destroy(cat);
    return rc;
}

static json_t *result_json(const mp_rl_result *r)
{
    json_t *o = json_object(), *t = json_object(), *idle = json_object(), *ws = json_object(),
           *as = json_array(), *ro = json_object(), *util = json_object();
    const mp_rl_config *k = &r->config;
    json_object_set_new(o, "algorithm", json_string(mp_rl_algorithm_name((mp_rl_algorithm)k->algorithm)));
    json_object_set_new(o, "placement", json_string(mp_rl_placement_name((mp_rl_placement)k->placement)));
    json_object_set_new(o, "rollout_gpus", json_integer(k->rollout_gpus));
    json_object_set_new(o, "train_gpus", json_integer(k->train_gpus));
    json_object_set_new(o, "feasible", json_boolean(r->feasible));
    json_object_set_new(o, "reason", json_string(r->reason));
    json_object_set_new(o, "step_s", json_real(r->step_s));
    const struct { const char *k; double v; } parts[] = {
        {"rollout", r->rollout_s}, {"rollout_tail_wait", r->rollout_tail_wait_s}, {"ref", r->ref_s},
        {"logprob", r->logprob_s}, {"reward", r->reward_s}, {"critic", r->critic_s}, {"train", r->train_s},
        {"weight_sync", r->weight_sync_s}, {"switch", r->switch_s}};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        json_object_set_new(t, parts[i].k, json_real(parts[i].v));
    json_object_set_new(o, "time_s", t);
    json_object_set_new(idle, "rollout_pool", json_real(r->rollout_pool_idle_s));
    json_object_set_new(idle, "train_pool", json_real(r->train_pool_idle_s));
    json_object_set_new(o, "idle_s", idle);
    json_t *idlef = json_object();
    json_object_set_new(idlef, "rollout_pool", json_real(r->rollout_pool_idle_frac));
    json_object_set_new(idlef, "train_pool", json_real(r->train_pool_idle_frac));
    json_object_set_new(o, "idle_frac", idlef);
    json_object_set_new(util, "rollout_pool", json_real(r->gpu_util_rollout_frac));
    json_object_set_new(util, "train_pool", json_real(r->gpu_util_train_frac));
    json_object_set_new(o, "gpu_util_frac", util);
    json_object_set_new(o, "tokens_per_step", json_real(r->tokens_per_step));
    json_object_set_new(o, "tokens_per_s", json_real(r->tokens_per_s));
    json_object_set_new(o, "tokens_per_s_per_gpu", json_real(r->tokens_per_s_per_gpu));
    json_object_set_new(ws, "bytes", json_real(r->sync.bytes));
    json_object_set_new(ws, "bytes_per_rollout_gpu", json_real(r->sync.bytes_per_rollout_gpu));
    json_object_set_new(ws, "link", json_string(r->sync.link));
    json_object_set_new(ws, "bucketed", json_boolean(r->sync.bucketed));
    json_object_set_new(ws, "buckets", json_integer(r->sync.buckets));
    json_object_set_new(ws, "tensors", json_integer(r->sync.tensors));
    json_object_set_new(ws, "gather_s", json_real(r->sync.gather_s));
    json_object_set_new(ws, "transfer_s", json_real(r->sync.transfer_s));
    json_object_set_new(ws, "host_s", json_real(r->sync.host_s));
    json_object_set_new(ws, "s", json_real(r->sync.total_s));
    json_object_set_new(o, "weight_sync", ws);
    json_object_set_new(ro, "engines", json_integer(r->rollout.engines));
    json_object_set_new(ro, "seqs_per_engine", json_integer(r->rollout.seqs_per_engine));
    json_object_set_new(ro, "max_in_flight", json_integer(r->rollout.max_in_flight));
    json_object_set_new(ro, "mean_response_tokens", json_real(r->rollout.mean_response_tokens));
    json_object_set_new(ro, "longest_tokens", json_real(r->rollout.longest_tokens));
    json_object_set_new(ro, "truncated_frac", json_real(r->rollout.truncated_frac));
    json_object_set_new(ro, "mean_engine_s", json_real(r->rollout.mean_engine_s));
    json_object_set_new(ro, "busy_frac", json_real(r->rollout.busy_frac));
    json_object_set_new(o, "rollout", ro);
    json_object_set_new(o, "train_mfu", json_real(r->train_mfu));
    json_object_set_new(o, "train_dp_imbalance", json_real(r->train_dp_imbalance));
    json_object_set_new(o, "usd_per_step", json_real(r->usd_per_step));
    json_object_set_new(o, "j_per_step", json_real(r->j_per_step));
    json_object_set_new(o, "bottleneck", json_string(r->bottleneck));
    for (int i = 0; i < r->nassumed; i++)
        json_array_append_new(as, json_string(r->assumed[i]));
    json_object_set_new(o, "assumed", as);
    return o;
}

static void result_text(const mp_model *m, const mp_cluster *c, const mp_rl_result *r)
{
    const mp_rl_config *k = &r->config;
    printf("%s %s on %lld x %s, %s: rollout %lld GPUs, train %lld GPUs\n",
           mp_rl_algorithm_name((mp_rl_algorithm)k->algorithm), m->key, (long long)c->num_gpus, c->gpu.key,
           mp_rl_placement_name((mp_rl_placement)k->placement), (long long)k->rollout_gpus, (long long)k->train_gpus);
    if (!r->feasible)
        printf("feasible: no: %s\n", r->reason);
    printf("step %.2f s   bottleneck: %s\n", r->step_s, r->bottleneck);
    printf("  rollout      %9.2f s  (long-tail wait %.2f s; %lld engines x %lld responses, %lld in flight,"
           " longest %.0f tokens)\n", r->rollout_s, r->rollout_tail_wait_s, (long long)r->rollout.engines,
           (long long)r->rollout.seqs_per_engine, (long long)r->rollout.max_in_flight, r->rollout.longest_tokens);
    printf("  ref          %9.2f s\n  logprob      %9.2f s\n  reward       %9.2f s\n", r->ref_s, r->logprob_s, r->reward_s);
    if (r->critic_s > 0)
        printf("  critic       %9.2f s\n", r->critic_s);
    printf("  train        %9.2f s  (MFU %.1f%%, x %.2f for the rank with the longest share)\n", r->train_s,
           100 * r->train_mfu, r->train_dp_imbalance);
    printf("  weight sync  %9.3f s  (%.2f GB, %s, %s, %lld collectives)\n", r->weight_sync_s, r->sync.bytes / 1e9,
           r->sync.link, r->sync.bucketed ? "bucketed" : "unbucketed", (long long)r->sync.buckets);
    printf("  switch       %9.2f s\n", r->switch_s);
    printf("idle per step: rollout pool %.2f s, train pool %.2f s   GPU busy: rollout %.0f%%, train %.0f%%\n",
           r->rollout_pool_idle_s, r->train_pool_idle_s, 100 * r->gpu_util_rollout_frac, 100 * r->gpu_util_train_frac);
    printf("tokens/s %.0f (per GPU %.1f)   $ %.3f per step   %.3g J per step\n", r->tokens_per_s,
           r->tokens_per_s_per_gpu, r->usd_per_step, r->j_per_step);
    printf("assumed:\n");
    for (int i = 0; i < r->nassumed; i++)
        printf("  - %s\n", r->assumed[i]);
}

static int rl_run(int argc, char **argv)
{
    cli_args a;
    int rc = cli_parse_cmd(&cli_cmd_rl, argc, argv, &a);
    if (rc)
        return rc;
    mp_model m;
    mp_cluster cl;
    mp_rl_config k;
    if ((rc = cli_rl_job(&a, &m, &cl, &k)))
        return rc;
    mp_rl_result *r = malloc(sizeof *r);
    if (!r)
        return EXIT_INTERNAL;
    mp_diag d = {0};
    mp_status st = mp_rl_estimate(&m, &cl, &k, r, &d);
    if (st != MP_OK) {
        fprintf(stderr, "meshplan: rl: the step cannot be formed:\n");
        cli_print_diag(&d);
        free(r);
        return cli_exit_for(st);
    }
    if (cli_flag(&a, "--json"))
        rc = cli_print_json(result_json(r), JSON_INDENT(2) | JSON_REAL_PRECISION(9));
    else
        result_text(&m, &cl, r);
    free(r);
    return rc;
}
