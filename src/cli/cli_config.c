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
        fprintf(stderr, "meshplan: import %s: the GPU count is stated nowhere in the file: "
                        "expected --gpus N\n", path);
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

int cli_config_apply(const cli_args *a, const char **model, const char **gpu, const char **gpus,
                     const char **plan)
{
    const char *file = cli_opt(a, "--config");
    if (!file)
        return 0;
    static char gpus_buf[32], gpu_buf[MP_KEY_CAP], plan_buf[1024], model_buf[4096];
    static cli_config cfg;
    mp_catalog *cat = NULL;
    int rc = cli_load_catalog(a, &cat);
    if (rc)
        return rc;
    mp_import_opts o = {0};
    long long n = 0;
    if (*gpus && (rc = cli_parse_count("gpus", *gpus, 1, 1LL << 24, &n)))
        goto done;
    o.gpus = n;
    o.model = *model;
    o.gpu = *gpu;
    if ((rc = cli_config_load(cat, file, &o, &cfg)))
        goto done;
    if (!*model) {
        if (!cfg.have_model) {
            fprintf(stderr, "meshplan: --config %s: %s\n", file, cfg.model_where);
            rc = EXIT_INPUT;
            goto done;
        }
        snprintf(model_buf, sizeof model_buf, "%s", file);
        *model = model_buf; /* cli_load_model finds the imported model under the file's name */
    }
    if (!*gpu) {
        snprintf(gpu_buf, sizeof gpu_buf, "%s", cfg.gpu);
        *gpu = gpu_buf;
        if (cfg.gpu_assumed)
            fprintf(stderr, "meshplan: --config %s states no GPU type: %s assumed\n", file, cfg.gpu);
    }
    if (!*gpus) {
        snprintf(gpus_buf, sizeof gpus_buf, "%lld", (long long)cfg.gpus);
        *gpus = gpus_buf;
    }
    if (!*plan) {
        snprintf(plan_buf, sizeof plan_buf, "%s", cfg.plan_string);
        *plan = plan_buf;
    }
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

/* Append "--name value" to a when it is absent (value copied into a static slot). */
static int add_opt(cli_args *a, const char *name, const char *value, char *slot, size_t cap)
{
    if (cli_opt(a, name))
        return 0;
    if (a->nopts >= CLI_MAX_OPTS)
        return cli_fail("too many options with --config %s", "");
    snprintf(slot, cap, "%s", value);
    a->name[a->nopts] = name;
    a->value[a->nopts++] = slot;
    return 0;
}

int cli_config_search(cli_args *a)
{
    const char *file = cli_opt(a, "--config");
    if (!file)
        return 0;
    const char *model = cli_opt(a, "--model"), *gpu = cli_opt(a, "--gpu");
    const char *gpus = cli_opt(a, "--gpus"), *plan = NULL;
    char range[64] = "";
    if (gpus && strchr(gpus, ':')) { /* a range: the file's plan is resolved on its own count */
        snprintf(range, sizeof range, "%s", gpus);
        gpus = NULL;
    }
    int rc = cli_config_apply(a, &model, &gpu, &gpus, &plan);
    if (rc)
        return rc;
    /* the job the file describes: its batch, sequence and precision; the plan is searched */
    mp_plan p;
    mp_plan_init_default(&p);
    mp_diag d = {0};
    if (mp_plan_parse(plan, &p, &d) != MP_OK) {
        cli_print_diag(&d);
        return EXIT_INPUT;
    }
    static char s_model[4096], s_gpu[MP_KEY_CAP], s_gpus[64], s_gb[32], s_seq[32], s_prec[16];
    char gb[32], seq[32];
    snprintf(gb, sizeof gb, "%lld", (long long)p.gb);
    snprintf(seq, sizeof seq, "%lld", (long long)p.seq);
    if ((rc = add_opt(a, "--model", model, s_model, sizeof s_model)) ||
        (rc = add_opt(a, "--gpu", gpu, s_gpu, sizeof s_gpu)) ||
        (rc = add_opt(a, "--gpus", range[0] ? range : gpus, s_gpus, sizeof s_gpus)) ||
        (rc = add_opt(a, "--gb", gb, s_gb, sizeof s_gb)) ||
        (rc = add_opt(a, "--seq", seq, s_seq, sizeof s_seq)) ||
        (rc = add_opt(a, "--precision", mp_dtype_name(p.precision), s_prec, sizeof s_prec)))
        return rc;
    return 0;
}
