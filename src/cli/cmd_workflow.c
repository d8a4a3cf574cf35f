/* src/cli/cmd_workflow.c — `meshplan workflow FILE.json`: GPUs, TP and replicas per LLM of a
 * multi-LLM workflow (fractions of GPUs for small models), their placement on nodes, the
 * workflow's requests/s and end-to-end latency, against one replica per LLM and an equal split.
 * The model: src/workflow/, docs/workflow.md. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "meshplan/workflow.h"

static const cli_option workflow_opts[] = {
    CLI_REQ("--cluster", "C", "a catalog node (dgx-h100), a shipped cluster or a cluster file"),
    CLI_REQ("--gpus", "N", "GPUs available"),
    CLI_OPT("--rate", "R/s", "workflow requests per second: plan the fewest GPUs for it (default: the most requests/s on --gpus)"),
    CLI_OPT("--slo", "e2e_p99=Ts", "the end-to-end p99 bound, seconds (default: none)"),
    CLI_OPT_CATALOG,
    CLI_OPT_JSON,
    CLI_END,
};

static int workflow_run(int argc, char **argv);

const cli_command cli_cmd_workflow = {
    "workflow", "multi-LLM workflow: GPUs, TP and replicas per LLM, placement, requests/s and "
    "end-to-end latency vs one replica per LLM and an equal split",
    "FILE.json", 1, workflow_opts,
    "FILE.json lists the LLMs and the calls of one request (docs/workflow.md; examples/workflows/).\n",
    workflow_run,
};

/* "5/s", "5" or "5/min" into requests/s. */
static int parse_rate(const char *s, double *out)
{
    char num[48];
    const char *slash = strchr(s, '/');
    size_t n = slash ? (size_t)(slash - s) : strlen(s);
    double k = 1;
    if (n == 0 || n >= sizeof num)
        return cli_fail("rate = \"%s\": expected requests per second, e.g. 5/s", s);
    if (slash && strcmp(slash, "/s") != 0 && strcmp(slash, "/min") != 0)
        return cli_fail("rate = \"%s\": expected a unit of /s or /min", s);
    if (slash && strcmp(slash, "/min") == 0)
        k = 1.0 / 60.0;
    memcpy(num, s, n);
    num[n] = '\0';
    int rc = cli_parse_real("rate", num, 1e-9, 1e9, out);
    *out *= k;
    return rc;
}

/* "e2e_p99=20s" (or 20000ms, or 20) into seconds. */
static int parse_slo(const char *s, double *out)
{
    if (strncmp(s, "e2e_p99=", 8) != 0)
        return cli_fail("slo = \"%s\": expected e2e_p99=SECONDS, e.g. e2e_p99=20s", s);
    char num[48];
    const char *v = s + 8;
    size_t n = strlen(v);
    double k = 1;
    if (n > 2 && strcmp(v + n - 2, "ms") == 0)
        n -= 2, k = 1e-3;
    else if (n > 1 && v[n - 1] == 's')
        n -= 1;
    if (n == 0 || n >= sizeof num)
        return cli_fail("slo = \"%s\": expected e2e_p99=SECONDS, e.g. e2e_p99=20s", s);
    memcpy(num, v, n);
    num[n] = '\0';
    int rc = cli_parse_real("slo e2e_p99", num, 1e-6, 1e7, out);
    *out *= k;
    return rc;
}

#include <math.h>

/* A figure, or null when it is not finite (an unstable queue's wait). */
static json_t *num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *alloc_json(const mp_workflow *w, const mp_wf_alloc *a)
{
    json_t *o = json_object(), *llms = json_object(), *crit = json_array();
    json_object_set_new(o, "feasible", json_boolean(a->feasible));
    json_object_set_new(o, "reason", json_string(a->reason));
    json_object_set_new(o, "requests_per_s", json_real(a->requests_per_s));
    json_object_set_new(o, "rate_per_s", json_real(a->rate_per_s));
    json_object_set_new(o, "e2e_s", json_pack("{s:o,s:o}", "mean", num(a->e2e_mean_s), "p99", num(a->e2e_p99_s)));
    json_object_set_new(o, "gpus_used", json_real(a->gpus_used));
    json_object_set_new(o, "bottleneck", json_string(a->requests_per_s > 0 ? w->llm[a->bottleneck].name : ""));
    for (int i = 0; i < a->ncritical; i++)
        json_array_append_new(crit, json_string(w->call[a->critical[i]].id));
    json_object_set_new(o, "critical_path", crit);
    json_object_set_new(o, "split_groups", json_integer(a->split_groups));
    json_object_set_new(o, "split_cost_s", json_real(a->split_cost_s));
    json_object_set_new(o, "fragmentation_frac", json_real(a->fragmentation_frac));
    for (int l = 0; l < w->nllms && a->requests_per_s > 0; l++) {
        const mp_wf_alloc_llm *r = &a->llm[l];
        json_object_set_new(llms, w->llm[l].name,
                            json_pack("{s:s,s:f,s:i,s:i,s:f,s:I,s:f,s:f,s:o,s:f,s:s}", "model",
                                      w->llm[l].model.key, "gpus", r->gpus, "tp", r->tp, "dp", r->dp,
                                      "gpu_frac", r->gpu_frac, "batch", (json_int_t)r->batch,
                                      "capacity_per_s", r->capacity_per_s, "util_frac", r->util_frac,
                                      "wait_mean_s", num(r->wait_mean_s), "mem_per_gpu_bytes",
                                      r->mem_per_gpu_bytes, "placement", r->placement));
    }
    json_object_set_new(o, "allocation", llms);
    return o;
}

static void alloc_text(const char *title, const mp_workflow *w, const mp_wf_alloc *a)
{
    printf("%s:\n", title);
    if (!a->feasible && a->requests_per_s <= 0) {
        printf("  not feasible: %s\n", a->reason);
        return;
    }
    if (!a->feasible)
        printf("  not feasible: %s\n", a->reason);
    printf("  %.3f requests/s; at %.3f/s e2e mean %.2f s, p99 %.2f s; %.2f GPUs; bottleneck %s\n",
           a->requests_per_s, a->rate_per_s, a->e2e_mean_s, a->e2e_p99_s, a->gpus_used,
           w->llm[a->bottleneck].name);
    for (int l = 0; l < w->nllms; l++) {
        const mp_wf_alloc_llm *r = &a->llm[l];
        printf("  %-10s %-12s gpus %5.2f  tp %d x dp %-3d share %.2f  batch %-4lld  util %5.1f%%  wait %.3f s  %s\n",
               w->llm[l].name, w->llm[l].model.key, r->gpus, r->tp, r->dp, r->gpu_frac, (long long)r->batch,
               r->util_frac * 100, r->wait_mean_s, r->placement);
    }
}

static int workflow_run(int argc, char **argv)
{
    cli_args a;
    int rc = cli_parse_cmd(&cli_cmd_workflow, argc, argv, &a);
    if (rc)
        return rc;
    if (a.npositional != 1)
        return cli_fail("workflow: expected one FILE.json%s", "");
    mp_wf_opts op;
    mp_wf_opts_init(&op);
    long long gpus = 0;
    if ((rc = cli_parse_count("gpus", cli_opt(&a, "--gpus"), 1, 65536, &gpus)))
        return rc;
    op.gpus = gpus;
    if (cli_opt(&a, "--rate") && (rc = parse_rate(cli_opt(&a, "--rate"), &op.rate_per_s)))
        return rc;
    if (cli_opt(&a, "--slo") && (rc = parse_slo(cli_opt(&a, "--slo"), &op.slo_e2e_p99_s)))
        return rc;
    mp_catalog *cat = NULL;
    if ((rc = cli_load_catalog(&a, &cat)))
        return rc;
    mp_cluster cl;
    if ((rc = cli_load_cluster(cat, cli_opt(&a, "--cluster"), gpus, NULL, &cl))) {
        mp_catalog_destroy(cat);
        return rc;
    }
    char *text = NULL;
    size_t len = 0;
    mp_diag d = {0};
    static mp_workflow w;
    static mp_wf_result res;
    mp_status st = cli_read_file(a.positional[0], &text, &len, &d);
    if (st != MP_OK) /* the reason (d) follows */
        fprintf(stderr, "meshplan: workflow FILE.json = \"%s\": expected a readable workflow file "
                        "(docs/workflow.md):\n", a.positional[0]);
    else
        st = mp_workflow_parse(cat, text, len, a.positional[0], &w, &d);
    free(text);
    mp_catalog_destroy(cat);
    if (st == MP_OK)
        st = mp_workflow_plan(&w, &cl, &op, &res, &d);
    if (st != MP_OK) {
        cli_print_diag(&d);
        return cli_exit_for(st);
    }
    if (cli_flag(&a, "--json")) {
        json_t *o = alloc_json(&w, &res.best);
        json_object_set_new(o, "workflow", json_string(w.name));
        json_object_set_new(o, "gpus", json_integer(gpus));
        json_object_set_new(o, "baselines", json_pack("{s:o,s:o}", "one_replica", alloc_json(&w, &res.one_replica),
                                                      "equal_split", alloc_json(&w, &res.equal_split)));
        json_object_set_new(o, "evaluations", json_integer(res.evaluations));
        return cli_print_json(o, JSON_INDENT(2) | JSON_REAL_PRECISION(9));
    }
    printf("%s on %lld x %s (%d per node)%s\n", w.name, gpus, cl.gpu.key, cl.gpus_per_node,
           op.slo_e2e_p99_s > 0 ? "" : "; no SLO: latency at 80% of the throughput");
    alloc_text("best", &w, &res.best);
    if (res.best.ncritical) {
        printf("  critical path:");
        for (int i = 0; i < res.best.ncritical; i++)
            printf(" %s", w.call[res.best.critical[i]].id);
        printf("\n  placement: %d TP groups across nodes (+%.3f ms per decode step); fragmentation %.0f%%\n",
               res.best.split_groups, res.best.split_cost_s * 1e3, res.best.fragmentation_frac * 100);
    }
    alloc_text("one replica per LLM", &w, &res.one_replica);
    alloc_text("equal split", &w, &res.equal_split);
    if (res.best.requests_per_s > 0 && res.equal_split.requests_per_s > 0)
        printf("best / equal split: %.2fx requests/s\n", res.best.requests_per_s / res.equal_split.requests_per_s);
    return 0;
}
