/* src/cli/cli_config.c — what `meshplan import` and `--config FILE` share: read a launch config
 * (meshplan/import.h), resolve its model (the file's own dimensions, the catalog, the local
 * Hugging Face cache or a checkpoint directory), its GPU type and count, and its plan. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "meshplan/import.h"

/* The default GPU when a file states none: the GPU of the default predict job (main.c's help,
 * DESIGN.md), Hopper H100 SXM 80 GB. */
#define CLI_DEFAULT_GPU "h100-sxm5-80gb"

/* The model imported last by cli_config_load, for cli_load_model(spec == the config's path). */
static struct {
    char path[4096];
    mp_model model;
    int set;
} last;

const mp_model *cli_config_model(const char *spec)
{
    return last.set && spec && !strcmp(spec, last.path) ? &last.model : NULL;
}

static void hub_dir(char *out, size_t cap)
{
    const char *hf = getenv("HF_HOME"), *home = getenv("HOME");
    if (hf && hf[0])
        snprintf(out, cap, "%s/hub", hf);
    else if (home && home[0])
        snprintf(out, cap, "%s/.cache/huggingface/hub", home);
    else
        out[0] = '\0';
}

int cli_config_load(const mp_catalog *cat, const char *path, const mp_import_opts *opts,
                    cli_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->imp = calloc(1, sizeof *cfg->imp);
    if (!cfg->imp)
        return EXIT_INTERNAL;
    mp_diag d = {0};
    mp_status st = mp_import_file(path, opts, cfg->imp, &d);
    if (st != MP_OK) {
        fprintf(stderr, "meshplan: import %s: cannot read it:\n", path);
        cli_print_diag(&d);
        return cli_exit_for(st);
    }
    mp_import *imp = cfg->imp;
    /* the model */
    if (imp->have_model && !(opts && opts->model)) {
        cfg->model = imp->model;
        cfg->have_model = 1;
        snprintf(cfg->model_where, sizeof cfg->model_where, "dimensions read from %s", path);
    } else if (imp->model_id[0]) {
        char hub[4096];
        hub_dir(hub, sizeof hub);
        st = mp_import_find_model(cat, imp->model_id, hub[0] ? hub : NULL, &cfg->model,
                                  cfg->model_where, sizeof cfg->model_where, &d);
        if (st == MP_OK) {
            cfg->have_model = 1;
        } else if (st == MP_ERR_NOT_FOUND && !(opts && opts->model)) {
            snprintf(cfg->model_where, sizeof cfg->model_where,
                     "%.200s (%.300s): not in the catalog nor the local Hugging Face cache "
                     "(%.300s): no prediction (give --model)", imp->model_id, imp->model_id_from,
                     hub[0] ? hub : "no HOME or HF_HOME");
        } else {
            fprintf(stderr, "meshplan: model = \"%s\": %s\n", imp->model_id,
                    st == MP_ERR_NOT_FOUND ? "not a catalog key, a model file, a checkpoint "
                                             "directory or a cached Hugging Face id" : "not a model meshplan reads:");
            cli_print_diag(&d);
            return st == MP_ERR_NOT_FOUND ? EXIT_INPUT : cli_exit_for(st);
        }
    } else {
        snprintf(cfg->model_where, sizeof cfg->model_where, "%s",
                 imp->model_id_from[0] ? imp->model_id_from : "the file names no model: give --model");
    }
    /* the cluster */
    cfg->gpus = imp->gpus;
    cfg->gpus_per_node = imp->gpus_per_node;
    if (opts && opts->gpu)
        snprintf(cfg->gpu, sizeof cfg->gpu, "%s", opts->gpu);
    else if (imp->gpu[0])
        snprintf(cfg->gpu, sizeof cfg->gpu, "%s", imp->gpu);
    else {
        snprintf(cfg->gpu, sizeof cfg->gpu, "%s", CLI_DEFAULT_GPU);
        cfg->gpu_assumed = 1;
    }
    if (cfg->gpus <= 0) {
        const mp_import_field *note = mp_import_get(imp, "gpus_note");
        fprintf(stderr, "meshplan: import %s: the GPU count is %s: expected --gpus N\n", path,
                note ? "computed by the script when it runs" : "stated nowhere in the file");
        if (note)
            fprintf(stderr, "meshplan: %s = %s\n", note->from, note->value);
        return EXIT_INPUT;
    }
    if (cfg->gpus_per_node > cfg->gpus)
        cfg->gpus_per_node = cfg->gpus;
    st = mp_import_resolve(imp, cfg->have_model ? &cfg->model : NULL, cfg->gpus, &cfg->plan, &d);
    if (st != MP_OK) {
        fprintf(stderr, "meshplan: import %s: the plan it describes cannot be formed:\n", path);
        cli_print_diag(&d);
        return cli_exit_for(st);
    }
    mp_plan_format(&cfg->plan, cfg->plan_string, sizeof cfg->plan_string);
    if (cfg->have_model) {
        snprintf(last.path, sizeof last.path, "%s", path);
        last.model = cfg->model;
        last.set = 1;
    }
    return 0;
}

void cli_config_free(cli_config *cfg)
{
    free(cfg->imp);
    cfg->imp = NULL;
}

/* The value of "--name V" or "--name=V" in argv, or NULL. */
static const char *argv_opt(int argc, char **argv, const char *name)
{
    size_t n = strlen(name);
    const char *v = NULL;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], name) && i + 1 < argc)
            v = argv[++i];
        else if (!strncmp(argv[i], name, n) && argv[i][n] == '=')
            v = argv[i] + n + 1;
    }
    return v;
}

int cli_config_argv(int *argc, char ***argv, int what)
{
    const char *file = argv_opt(*argc, *argv, "--config");
    if (!file)
        return 0;
    const char *model = argv_opt(*argc, *argv, "--model"), *gpu = argv_opt(*argc, *argv, "--gpu");
    const char *gpus = argv_opt(*argc, *argv, "--gpus");
    cli_args ca;
    memset(&ca, 0, sizeof ca);
    const char *catfile = argv_opt(*argc, *argv, "--catalog");
    if (catfile) {
        ca.name[0] = "--catalog";
        ca.value[0] = catfile;
        ca.nopts = 1;
    }
    mp_catalog *cat = NULL;
    int rc0 = cli_load_catalog(&ca, &cat);
    if (rc0)
        return rc0;
    mp_import_opts o = {0};
    long long n = 0;
    int rc = 0;
    if (gpus && !strchr(gpus, ':') && (rc = cli_parse_count("gpus", gpus, 1, 1LL << 24, &n)))
        goto done;
    o.gpus = n;
    o.model = model;
    o.gpu = gpu;
    static cli_config cfg;
    if ((rc = cli_config_load(cat, file, &o, &cfg)))
        goto done;
    if (!model && !cfg.have_model) {
        fprintf(stderr, "meshplan: --config %s: %s\n", file, cfg.model_where);
        rc = EXIT_INPUT;
        goto done;
    }
    if (!gpu && cfg.gpu_assumed)
        fprintf(stderr, "meshplan: --config %s states no GPU type: %s assumed\n", file, cfg.gpu);
    /* argv plus the options the command line left out, from the file */
    static char s_model[4096], s_gpus[32], s_plan[1024], s_gb[32], s_seq[32], s_gpu[MP_KEY_CAP];
    static char *nargv[CLI_MAX_OPTS * 2 + CLI_MAX_POSITIONAL + 16];
    int k = 0;
    for (int i = 0; i < *argc && k < (int)(sizeof nargv / sizeof nargv[0]) - 12; i++)
        nargv[k++] = (*argv)[i];
    snprintf(s_model, sizeof s_model, "%s", file); /* cli_load_model finds the imported model */
    snprintf(s_gpu, sizeof s_gpu, "%s", cfg.gpu);
    snprintf(s_gpus, sizeof s_gpus, "%lld", (long long)cfg.gpus);
    snprintf(s_plan, sizeof s_plan, "%s", cfg.plan_string);
    snprintf(s_gb, sizeof s_gb, "%lld", (long long)cfg.plan.gb);
    snprintf(s_seq, sizeof s_seq, "%lld", (long long)cfg.plan.seq);
    struct { const char *name; char *value; int when; } add[] = {
        {"--model", s_model, 1}, {"--gpu", s_gpu, 1}, {"--gpus", s_gpus, 1},
        {"--plan", s_plan, what == CLI_CONFIG_PLAN}, {"--gb", s_gb, what == CLI_CONFIG_JOB},
        {"--seq", s_seq, what == CLI_CONFIG_JOB},
        {"--precision", (char *)mp_dtype_name(cfg.plan.precision), what == CLI_CONFIG_JOB},
    };
    for (size_t i = 0; i < sizeof add / sizeof add[0]; i++) {
        if (!add[i].when || argv_opt(*argc, *argv, add[i].name))
            continue;
        if (!strcmp(add[i].name, "--model") && model)
            continue;
        nargv[k++] = (char *)add[i].name;
        nargv[k++] = add[i].value;
    }
    nargv[k] = NULL;
    *argc = k;
    *argv = nargv;
done:
    cli_config_free(&cfg);
    mp_catalog_destroy(cat);
    return rc;
}

int cli_search_emit(const cli_args *a, const mp_model *m, const mp_cluster *clusters,
                    const mp_search_result *r)
{
    const char *fmt = cli_opt(a, "--emit");
    mp_import_format f;
    mp_diag d = {0};
    if (mp_import_format_parse(fmt, &f, &d) != MP_OK || f == MP_IMPORT_AUTO || f == MP_IMPORT_HF ||
        f == MP_IMPORT_FINETUNE) {
        fprintf(stderr, "meshplan: --emit %s: expected megatron, torchtitan, deepspeed or nemo\n", fmt);
        return EXIT_INPUT;
    }
    if (r->ntop < 1 || !r->top[0].feasible) {
        fprintf(stderr, "meshplan: --emit %s: no plan fits in memory: nothing to write\n", fmt);
        return EXIT_INPUT;
    }
    /* The best plan the format can hold: #1, else the first of the top list it can (a format
     * without ZeRO-2, say), with a note on stderr naming what #1 needed. */
    static char buf[32768];
    mp_diag first = {0};
    for (int i = 0; i < r->ntop; i++) {
        const mp_search_entry *e = &r->top[i];
        const mp_cluster *cl = &clusters[e->cluster];
        mp_diag di = {0};
        if (!e->feasible)
            continue;
        if (mp_import_emit_gpu(f, m, &e->plan, cl->num_gpus, cl->gpus_per_node, cl->gpu.key, buf,
                               sizeof buf, &di) == MP_OK) {
            if (i > 0) {
                char plan[1024];
                mp_plan_format(&e->plan, plan, sizeof plan);
                fprintf(stderr, "meshplan: --emit %s: the best plan cannot be written in this "
                                "format (%s); writing #%d, %s\n", fmt, first.text, i + 1, plan);
            }
            fputs(buf, stdout);
            return 0;
        }
        if (i == 0)
            first = di;
    }
    fprintf(stderr, "meshplan: --emit %s: none of the %d best plans can be written in this format:\n",
            fmt, r->ntop);
    cli_print_diag(&first);
    return EXIT_INPUT;
}

