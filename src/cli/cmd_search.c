/* src/cli/cmd_search.c — `meshplan search`: every valid plan for a job, the best ones and why. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The plan to rank (--rank): the job's gb, seq, precision and flash unless the string says
 * otherwise, resolved on the first GPU count where its degrees fit. */
static int rank_plan(const char *text, const mp_model *m, const mp_search_opts *o,
                     const mp_cluster *clusters, int n, mp_plan *p, int *cluster)
{
    mp_diag d = {0};
    int first_bad = -1;
    for (int i = 0; i < n; i++) {
        mp_plan_init_default(p);
        p->gb = o->pin.gb;
        p->seq = o->pin.seq;
        p->precision = o->pin.precision;
        p->flash = o->pin.flash;
        p->doc_len = o->pin.doc_len;
        mp_diag di = {0};
        mp_status st = mp_islands_plan_parse_single(text, p, &di); /* island keys: bad input */
        if (st == MP_OK)
            st = mp_plan_resolve(p, m, clusters[i].num_gpus, &di);
        if (st == MP_OK) {
            if (!p->fsdp && p->zero == 3) /* the framework pinned for the search */
                p->fsdp = o->pin.fsdp;
            *cluster = i;
            return 0;
        }
        if (first_bad < 0) {
            first_bad = i;
            d = di;
        }
    }
    fprintf(stderr, "meshplan: --rank \"%s\": the plan cannot be formed:\n", text);
    cli_print_diag(&d);
    return EXIT_INPUT;
}

static const cli_option search_opts[] = {
    CLI_REQ("--model", "M", "the model: " CLI_MODEL_HELP),
    CLI_OPT("--gpu", "G", "required unless --cluster gives it: the GPU, a catalog key (meshplan "
            "catalog gpus)"),
    CLI_OPT("--gpus", "N|A:B", "required unless --cluster gives it: GPUs in the job, or A:B to "
            "search the GPU counts A, 2A, ... B"),
    CLI_OPT_GPUS_PER_NODE,
    CLI_OPT_SCALE_OUT,
    CLI_OPT_CLUSTER_ONE,
    CLI_OPT("--config", "FILE",
            "a launch config: its model, GPUs, batch, sequence and precision where not given; "
            "the plan is searched (docs/import.md)"),
    CLI_OPT_CATALOG,
    CLI_OPT_CALIBRATION,
    CLI_OPTS_SEARCH_JOB,
    CLI_OPT("--top", "K", "plans listed, best first"),
    CLI_OPT("--rank", "PLAN", "also say where this plan ranks among all, and why"),
    CLI_OPT("--emit", "FORMAT",
            "write the best plan the format holds as megatron (pretrain_gpt.py flags), torchtitan "
            "(TOML), deepspeed (JSON) or nemo (YAML) instead of the report"),
    CLI_FLAG("--no-prune", "time every plan (no lower-bound pruning; the same answer, slower)"),
    CLI_OPT_JSON,
    CLI_OPT_CSV,
    CLI_END,
};

const cli_command cli_cmd_search = {
    "search", "evaluate every valid plan for a job: the best ones, the Pareto frontiers, the "
    "rejections and why",
    NULL, 0, search_opts, NULL, cmd_search,
};

int cmd_search(int argc, char **argv)
{
    cli_args a;
    int rc = cli_config_argv(&argc, &argv, CLI_CONFIG_JOB);
    if (rc)
        return rc;
    rc = cli_parse_cmd(&cli_cmd_search, argc, argv, &a);
    if (rc)
        return rc;
    if (cli_flag(&a, "--json") && cli_flag(&a, "--csv"))
        return cli_fail("search: --json and --csv exclude each other%s", "");
    if (cli_opt(&a, "--emit") && (cli_flag(&a, "--json") || cli_flag(&a, "--csv")))
        return cli_fail("search: --emit %s writes the best plan's launch config instead of the report: "
                        "expected --emit, or --json / --csv, not both", cli_opt(&a, "--emit"));
    long long counts[MP_SEARCH_MAX_CLUSTERS];
    int n = 0;
    if (!cli_opt(&a, "--gpus") && cli_opt(&a, "--cluster")) {
        counts[0] = 0; /* the cluster's own count */
        n = 1;
    } else if (!cli_opt(&a, "--gpus")) {
        return cli_fail("search: --gpus (or --cluster with a GPU count) is required (meshplan "
                        "search --help)%s", "");
    } else if ((rc = cli_parse_gpu_range(cli_opt(&a, "--gpus"), counts, MP_SEARCH_MAX_CLUSTERS, &n))) {
        return rc;
    }

    mp_catalog *cat = NULL;
    if ((rc = cli_load_catalog(&a, &cat)))
        return rc;
    mp_model m;
    mp_cluster *clusters = calloc((size_t)n, sizeof *clusters);
    mp_search_opts o;
    mp_search_result r;
    memset(&r, 0, sizeof r);
    mp_plan rp;
    mp_diag d = {0};
    if (!clusters) {
        rc = EXIT_INTERNAL;
        goto done;
    }
    if ((rc = cli_load_model(cat, cli_opt(&a, "--model"), &m)) ||
        (rc = cli_search_clusters(&a, cat, counts, n, clusters, "search")) ||
        (rc = cli_search_opts(&a, &m, &o)))
        goto done;
    if (cli_opt(&a, "--rank")) {
        if ((rc = rank_plan(cli_opt(&a, "--rank"), &m, &o, clusters, n, &rp, &o.rank_cluster)))
            goto done;
        o.rank_plan = &rp;
    }
    cli_progress prog;
    cli_progress_init(&prog, "searching");
    o.progress = cli_progress_cb;
    o.progress_ctx = &prog;
    mp_status st = mp_search(&m, clusters, n, &o, &r, &d);
    cli_progress_done(&prog);
    if (st != MP_OK) {
        rc = cli_exit_for(st);
        goto done;
    }
    if (r.unformable[0]) {
        /* No plan can be formed: bad input (DESIGN.md), unlike a space where none fits. */
        fprintf(stderr, "meshplan: search: %s\n", r.unformable);
        rc = EXIT_INPUT;
        goto done;
    }
    if (cli_opt(&a, "--emit")) {
        rc = cli_search_emit(&a, &m, clusters, &r);
        goto done;
    }
    if (cli_flag(&a, "--json")) {
        char *s = mp_search_report_json(&m, clusters, n, &o, &r);
        if (!s) {
            fprintf(stderr, "meshplan: out of memory writing JSON\n");
            rc = EXIT_INTERNAL;
            goto done;
        }
        printf("%s\n", s);
        free(s);
    } else if (cli_flag(&a, "--csv")) {
        mp_search_report_csv(stdout, &o, &r);
    } else {
        mp_search_report_text(stdout, &m, clusters, n, &o, &r);
    }
    rc = 0;
done:
    cli_print_diag(&d);
    mp_search_result_free(&r);
    free(clusters);
    mp_catalog_destroy(cat);
    return rc;
}
