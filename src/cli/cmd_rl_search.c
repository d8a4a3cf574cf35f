/* src/cli/cmd_rl_search.c — `meshplan rl-search`: every placement and split of the job's GPUs for
 * one RL step (the options of `meshplan rl`, placement ignored), best first, and the gain of
 * dynamic reallocation over the best static split with the reason. The model: src/rl/rl_search.c.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cli.h"
#include "cli_rl_opts.h"

static const cli_option rl_search_opts[] = {
    CLI_OPTS_RL_JOB
    CLI_OPT("--top", "K", "candidates printed (default 10)"),
    CLI_OPT_JSON,
    CLI_END,
};

static int rl_search_run(int argc, char **argv);

const cli_command cli_cmd_rl_search = {
    "rl-search", "RL post-training: the best placement and rollout/train split, and the gain of "
    "dynamic reallocation over the best static split",
    NULL, 0, rl_search_opts,
    "Splits in whole nodes (every GPU within one node), rollout tp 1, 2, 4, 8. CPU time is printed\n"
    "on stderr. Model: docs/rl.md \"Search\".\n",
    rl_search_run,
};

static json_t *cand_json(const mp_rl_candidate *x)
{
    json_t *o = json_object();
    json_object_set_new(o, "placement", json_string(mp_rl_placement_name((mp_rl_placement)x->placement)));
    json_object_set_new(o, "rollout_gpus", json_integer(x->rollout_gpus));
    json_object_set_new(o, "train_gpus", json_integer(x->train_gpus));
    json_object_set_new(o, "rollout_tp", json_integer(x->rollout_tp));
    json_object_set_new(o, "step_s", json_real(x->step_s));
    json_object_set_new(o, "rollout_s", json_real(x->rollout_s));
    json_object_set_new(o, "train_side_s", json_real(x->train_side_s));
    json_object_set_new(o, "rollout_pool_idle_frac", json_real(x->rollout_pool_idle_frac));
    json_object_set_new(o, "train_pool_idle_frac", json_real(x->train_pool_idle_frac));
    json_object_set_new(o, "feasible", json_boolean(x->feasible));
    return o;
}

static int rl_search_run(int argc, char **argv)
{
    cli_args a;
    int rc = cli_parse_cmd(&cli_cmd_rl_search, argc, argv, &a);
    if (rc)
        return rc;
    long long top = 10;
    if (cli_opt(&a, "--top") && (rc = cli_parse_count("top", cli_opt(&a, "--top"), 1, MP_RL_SEARCH_MAX, &top)))
        return rc;
    mp_model m;
    mp_cluster cl;
    mp_rl_config k;
    if ((rc = cli_rl_job(&a, &m, &cl, &k)))
        return rc;
    mp_rl_search_result *o = malloc(sizeof *o);
    if (!o)
        return EXIT_INTERNAL;
    mp_diag d = {0};
    clock_t t0 = clock();
    mp_status st = mp_rl_search(&m, &cl, &k, o, &d);
    double cpu_s = (double)(clock() - t0) / CLOCKS_PER_SEC;
    if (st != MP_OK) {
        fprintf(stderr, "meshplan: rl-search: no candidate can be formed:\n");
        cli_print_diag(&d);
        free(o);
        return cli_exit_for(st);
    }
    fprintf(stderr, "meshplan: rl-search: %d candidates in %.3f s of CPU time\n", o->evaluated, cpu_s);
    const mp_rl_candidate *bs = o->best_static >= 0 ? &o->cand[o->best_static] : NULL;
    if (cli_flag(&a, "--json")) {
        json_t *j = json_object(), *arr = json_array(), *dyn = json_object();
        for (int i = 0; i < o->ncand && i < top; i++)
            json_array_append_new(arr, cand_json(&o->cand[i]));
        json_object_set_new(j, "candidates", arr);
        json_object_set_new(j, "evaluated", json_integer(o->evaluated));
        json_object_set_new(j, "best", o->best >= 0 ? cand_json(&o->cand[o->best]) : json_null());
        json_object_set_new(j, "best_static", bs ? cand_json(bs) : json_null());
        json_object_set_new(dyn, "step_s", json_real(o->dynamic_step_s));
        json_object_set_new(dyn, "gain_frac", json_real(o->dynamic_gain_frac));
        json_object_set_new(dyn, "realloc_cost_s", json_real(o->realloc_cost_s));
        json_object_set_new(dyn, "idle_gpu_s", json_real(o->movable_gpu_s));
        json_object_set_new(dyn, "why", json_string(o->why));
        json_object_set_new(j, "dynamic", dyn);
        rc = cli_print_json(j, JSON_INDENT(2) | JSON_REAL_PRECISION(9));
        free(o);
        return rc;
    }
    printf("%s on %lld x %s: %d candidates\n", m.key, (long long)cl.num_gpus, cl.gpu.key, o->evaluated);
    printf("  %-15s %7s %6s %3s %10s %10s %10s %8s %8s\n", "placement", "rollout", "train", "tp", "step_s",
           "rollout_s", "train_s", "idle_r", "idle_t");
    for (int i = 0; i < o->ncand && i < top; i++) {
        const mp_rl_candidate *x = &o->cand[i];
        printf("  %-15s %7lld %6lld %3d %10.2f %10.2f %10.2f %7.0f%% %7.0f%%%s\n",
               mp_rl_placement_name((mp_rl_placement)x->placement), (long long)x->rollout_gpus,
               (long long)x->train_gpus, x->rollout_tp, x->step_s, x->rollout_s, x->train_side_s,
               100 * x->rollout_pool_idle_frac, 100 * x->train_pool_idle_frac, x->feasible ? "" : "  (over memory)");
    }
    if (bs)
        printf("best static split: %s %lld:%lld, step %.2f s; with dynamic reallocation %.2f s (%.1f%% faster)\n"
               "why: %s\n", mp_rl_placement_name((mp_rl_placement)bs->placement), (long long)bs->rollout_gpus,
               (long long)bs->train_gpus, bs->step_s, o->dynamic_step_s, 100 * o->dynamic_gain_frac, o->why);
    free(o);
    return 0;
}
