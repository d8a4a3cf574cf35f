/* src/cli/cmd_predict.c — `meshplan predict`: one plan on one cluster. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The options of `meshplan predict` (cli.h "commands as tables": one entry per option). */
static const cli_option predict_opts[] = {
    CLI_OPT("--model", "M", "the model: " CLI_MODEL_HELP),
    CLI_OPT("--gpu", "G", "the GPU, a catalog key (meshplan catalog gpus); or give --cluster"),
    CLI_OPT("--gpus", "N", "GPUs in the job; or the --cluster file's count"),
    CLI_OPT_GPUS_PER_NODE,
    CLI_OPT_SCALE_OUT,
    CLI_OPT("--cluster", "NODE|PRESET|FILE",
            "the wiring: a catalog node, a shipped cluster or a cluster description (docs/cluster.md); "
            "an islands description predicts across islands (docs/islands.md)"),
    CLI_OPT("--config", "FILE",
            "a launch config (Megatron-LM script, DeepSpeed JSON, torchtitan TOML, NeMo or "
            "fine-tuning YAML, config.json): the options not given come from it (docs/import.md)"),
    CLI_OPT_CATALOG,
    CLI_OPT_CALIBRATION,
    CLI_OPT("--plan", "PLAN", "the parallel plan, \"tp=8,pp=4,mb=1,gb=512,seq=4096,...\" (plan keys below)"),
    CLI_OPT("--quality-factor", "F",
            "across islands: tokens-to-quality factor of the sync scheme, [0.01, 100] "
            "(default: the published one)"),
    CLI_OPT_JSON,
    CLI_FLAG("--csv", "print a CSV header and one row of exact values (the plan pastes into --plan)"),
    CLI_OPT("--format", "text|json|markdown|csv", "the output: the text report (default), --json, "
            "Markdown tables to paste, or --csv"),
    CLI_END,
};

const cli_command cli_cmd_predict = {
    "predict", "one plan on one cluster: memory per GPU and stage, step time and its parts, "
    "tokens/s, MFU, the bottleneck",
    NULL, 0, predict_opts,
    "With no options at all: the built-in default job, Llama 3 70B on 64 H100 (8 DGX H100).\n",
    cmd_predict,
};

/* --format text|json|markdown|csv, with --json and --csv its short forms: *format (NULL for
 * text) and *json. 0 or EXIT_INPUT. */
static int output_format(const cli_args *args, int *json, const char **format)
{
    const char *f = cli_opt(args, "--format");
    int csv = cli_flag(args, "--csv");
    if (f && strcmp(f, "text") && strcmp(f, "json") && strcmp(f, "markdown") && strcmp(f, "csv"))
        return cli_fail("predict: format = \"%s\": expected text, json, markdown or csv", f);
    if ((*json || csv) && f)
        return cli_fail("predict: --format and --json/--csv exclude each other%s", "");
    if (*json && csv)
        return cli_fail("predict: --json and --csv exclude each other%s", "");
    if (csv)
        f = "csv";
    if (f && !strcmp(f, "json"))
        *json = 1;
    *format = f && strcmp(f, "text") ? f : NULL;
    return 0;
}

/* The prediction on stdout as JSON, markdown, CSV (with its header) or text (format NULL).
 * Returns 0, or EXIT_INTERNAL when the JSON could not be allocated. */
static int write_estimate(const mp_model *m, const mp_cluster *cl, const mp_plan *p, const mp_estimate *e, int json,
                          const char *format)
{
    if (json) {
        char *s = mp_report_estimate_json(m, cl, p, e);
        if (!s) {
            fprintf(stderr, "meshplan: out of memory writing JSON\n");
            return EXIT_INTERNAL;
        }
        printf("%s\n", s);
        free(s);
    } else if (format && !strcmp(format, "markdown")) {
        mp_report_estimate_markdown(stdout, m, cl, p, e);
    } else if (format && !strcmp(format, "csv")) {
        mp_report_estimate_csv(stdout, m, cl, p, e, 1);
    } else {
        mp_report_estimate_text(stdout, m, cl, p, e);
    }
    return 0;
}

int cmd_predict(int argc, char **argv)
{
    cli_args args;
    int rc = cli_config_argv(&argc, &argv, CLI_CONFIG_PLAN);
    if (rc)
        return rc;
    rc = cli_parse_cmd(&cli_cmd_predict, argc, argv, &args);
    if (rc)
        return rc;
    struct {
        const char *model, *gpu, *gpus, *gpus_per_node, *scale_out, *plan;
        int json;
    } a = {cli_opt(&args, "--model"), cli_opt(&args, "--gpu"), cli_opt(&args, "--gpus"),
           cli_opt(&args, "--gpus-per-node"), cli_opt(&args, "--scale-out"), cli_opt(&args, "--plan"),
           cli_flag(&args, "--json")};
    const char *format = NULL;
    if ((rc = output_format(&args, &a.json, &format)))
        return rc;
    const char *cluster = cli_opt(&args, "--cluster");
    if (!a.model && !a.gpu && !a.gpus && !a.plan && !cluster) {
        /* The built-in default job: Llama 3 70B on 64 H100 (8 DGX H100 nodes). */
        a.model = "llama3-70b";
        a.gpu = "h100-sxm5-80gb";
        a.gpus = "64";
        a.plan = "tp=8,pp=2,mb=1,gb=128,seq=8192,zero=1,recompute=selective";
        fprintf(stderr, "meshplan: no options given: predicting the default job --model %s --gpu %s "
                        "--gpus %s --plan \"%s\"\n", a.model, a.gpu, a.gpus, a.plan);
    }
    if (!a.model) return cli_fail("predict: --model is required%s", "");
    if (cluster && (a.gpus_per_node || a.scale_out))
        return cli_fail("predict: --gpus-per-node and --scale-out describe the cluster: give them "
                        "in the --cluster file instead%s", "");
    if (!a.gpu && !cluster) return cli_fail("predict: --gpu (or --cluster) is required%s", "");
    if (!a.gpus && !cluster) return cli_fail("predict: --gpus is required%s", "");
    long long ngpus = 0, gpn = 0;
    if (a.gpus && (rc = cli_parse_count("gpus", a.gpus, 1, 1LL << 24, &ngpus)))
        return rc;
    if (a.gpus_per_node && (rc = cli_parse_count("gpus-per-node", a.gpus_per_node, 1, 1 << 20, &gpn)))
        return rc;
    if (gpn > ngpus) {
        fprintf(stderr, "meshplan: gpus-per-node = %lld: expected at most gpus (%lld)\n", gpn, ngpus);
        return EXIT_INPUT;
    }

    mp_catalog *cat = NULL;
    if ((rc = cli_load_catalog(&args, &cat)))
        return rc;
    mp_model m;
    mp_cluster cl;
    mp_plan p;
    mp_estimate *e = NULL;
    mp_diag d = {0};
    if ((rc = cli_load_model(cat, a.model, &m)))
        goto done;
    /* Islands joined by WAN links (docs/islands.md): an islands description, or a plan with
     * sync=... on a cluster (split at its wan tier). */
    double quality = 0.0;
    const char *qf = cli_opt(&args, "--quality-factor");
    if (qf) {
        char *end = NULL;
        quality = strtod(qf, &end);
        if (!*qf || *end || !(quality >= 0.01 && quality <= 100.0)) {
            rc = cli_fail("predict: quality-factor = \"%s\": expected a tokens-to-quality factor in "
                          "[0.01, 100] (1 = as many tokens as synchronous data parallelism)", qf);
            goto done;
        }
    }
    if (cluster && cli_cluster_is_islands(cluster)) {
        if (a.gpus || a.gpu) {
            rc = cli_fail("predict: --gpus and --gpu describe one cluster; an islands description "
                          "gives each island's GPU type and count (cluster = \"%s\")", cluster);
            goto done;
        }
        if (format && strcmp(format, "json")) {
            rc = cli_fail("predict: --format %s covers one cluster: a prediction across islands "
                          "prints as text or --json", format);
            goto done;
        }
        rc = cli_predict_islands(cat, &m, cluster, NULL, a.plan, a.json, quality);
        goto done;
    }
    mp_status st = MP_OK;
    if (cluster) { /* a catalog node, a shipped cluster or a description file (docs/cluster.md) */
        if ((rc = cli_load_cluster(cat, cluster, ngpus, a.gpu, &cl)))
            goto done;
        ngpus = cl.num_gpus;
    } else {
        st = mp_cluster_from_catalog(cat, a.gpu, ngpus, (int)gpn, a.scale_out, &cl, &d);
        if (st == MP_OK)
            cli_cal_cluster(&cl);
    }
    if (st != MP_OK) {
        rc = cli_exit_for(st);
        goto done;
    }
    mp_islands_plan ip; /* the plan string may name keys across islands (xsync.h) */
    mp_islands_plan_init_default(&ip);
    st = mp_islands_plan_parse(a.plan, &ip, &d);
    if (st == MP_OK && (ip.xsync.sync != MP_SYNC_NONE || quality > 0)) {
        if (format && strcmp(format, "json")) {
            rc = cli_fail("predict: --format %s covers one cluster: a prediction across islands "
                          "prints as text or --json", format);
            goto done;
        }
        rc = cli_predict_islands(cat, &m, NULL, &cl, a.plan, a.json, quality);
        goto done;
    }
    if (st == MP_OK && mp_xsync_check_single(&ip.xsync, &d))
        st = MP_ERR_INPUT;
    p = ip.plan;
    if (st == MP_OK)
        st = mp_plan_resolve(&p, &m, ngpus, &d);
    if (st != MP_OK) {
        fprintf(stderr, "meshplan: the plan cannot be formed:\n");
        rc = cli_exit_for(st);
        goto done;
    }
    char note[320];
    if (mp_plan_context_note(&p, &m, note, sizeof note))
        fprintf(stderr, "meshplan: warning: %s\n", note);
    e = malloc(sizeof *e);
    if (!e) {
        rc = EXIT_INTERNAL;
        goto done;
    }
    mp_estimate_opts eo;
    st = mp_estimate_plan(&m, &cl, &p, cli_cal_opts(cl.gpu.key, &eo), e, &d);
    if (st != MP_OK) {
        rc = cli_exit_for(st);
        goto done;
    }
    rc = write_estimate(&m, &cl, &p, e, a.json, format);
done:
    cli_print_diag(&d);
    free(e);
    mp_catalog_destroy(cat);
    return rc;
}

