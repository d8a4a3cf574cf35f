/* src/cli/cmd_import.c — `meshplan import FILE`: the model, cluster and plan a launch config
 * describes (every field with where it came from, or the default it assumed and why), then the
 * prediction. torchtitan overrides ("--parallelism.tensor_parallel_degree 8") follow the file. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define IMPORT_OVERRIDES_MAX 32

static const char *origin_name(mp_import_origin o)
{
    return o == MP_FROM_FILE ? "file" : o == MP_FROM_OPTION ? "option"
         : o == MP_FROM_DEFAULT ? "default" : "derived";
}

/* A JSON number for an integer-looking value, else a string. */
static json_t *value_json(const char *v)
{
    char *end = NULL;
    long long x = strtoll(v, &end, 10);
    if (v[0] && !*end)
        return json_integer(x);
    return json_string(v);
}

static json_t *model_json(const cli_config *c)
{
    if (!c->have_model)
        return json_null();
    const mp_model *m = &c->model;
    mp_param_count pc;
    mp_model_params(m, (int)c->plan.tp, &pc);
    json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                          "key", m->key, "name", m->name, "source", c->model_where,
                          "layers", (json_int_t)m->layers, "hidden", (json_int_t)m->hidden,
                          "heads", (json_int_t)m->heads, "kv_heads", (json_int_t)m->kv_heads,
                          "head_dim", (json_int_t)m->head_dim, "ffn_hidden", (json_int_t)m->ffn_hidden,
                          "vocab", (json_int_t)m->vocab, "experts", (json_int_t)m->moe_experts,
                          "topk", (json_int_t)m->moe_topk, "params", (json_int_t)pc.total,
                          "params_activated", (json_int_t)pc.activated);
    json_t *from = json_object();
    for (int i = 0; i < c->imp->nfields; i++)
        if (c->imp->field[i].kind == MP_FIELD_MODEL)
            json_object_set_new(from, c->imp->field[i].key + 6, json_string(c->imp->field[i].from));
    json_object_set_new(o, "from", from);
    return o;
}

static json_t *import_json(const cli_config *c, const mp_cluster *cl, const mp_estimate *e)
{
    const mp_import *imp = c->imp;
    json_t *plan = json_object(), *sources = json_object(), *assumed = json_array();
    json_t *unsupported = json_array(), *unknown = json_array(), *cluster = json_object();
    json_t *job = json_object();
    for (int i = 0; i < imp->nfields; i++) {
        const mp_import_field *f = &imp->field[i];
        if (f->kind == MP_FIELD_PLAN) {
            json_object_set_new(plan, f->key, value_json(f->value));
            json_object_set_new(sources, f->key, json_string(f->from));
        } else if (f->kind == MP_FIELD_CLUSTER) {
            json_object_set_new(cluster, f->key, value_json(f->value));
        } else if (f->kind == MP_FIELD_JOB) {
            json_object_set_new(job, f->key, value_json(f->value));
        } else if (f->kind == MP_FIELD_UNSUPPORTED) {
            json_array_append_new(unsupported, json_pack("{s:s, s:s, s:s}", "key", f->key,
                                                         "value", f->value, "from", f->from));
        }
        if (f->origin == MP_FROM_DEFAULT && f->kind != MP_FIELD_UNSUPPORTED)
            json_array_append_new(assumed, json_pack("{s:s, s:s, s:s}", "key", f->key,
                                                     "value", f->value, "why", f->from));
        if (f->kind == MP_FIELD_UNSUPPORTED && f->origin != MP_FROM_FILE)
            json_array_append_new(assumed, json_pack("{s:s, s:s, s:s}", "key", f->key,
                                                     "value", f->value, "why", f->from));
    }
    if (!c->have_model)
        json_array_append_new(assumed, json_pack("{s:s, s:s, s:s}", "key", "model", "value",
                                                 imp->model_id, "why", c->model_where));
    if (c->gpu_assumed)
        json_array_append_new(assumed, json_pack("{s:s, s:s, s:s}", "key", "gpu", "value", c->gpu,
                                                 "why", "GPU type stated nowhere: meshplan's "
                                                 "default training GPU (H100 SXM 80 GB; give --gpu)"));
    for (int i = 0; i < imp->nunknown; i++)
        json_array_append_new(unknown, json_string(imp->unknown[i]));
    json_object_set_new(cluster, "gpu", json_string(c->gpu));
    json_object_set_new(cluster, "gpus", json_integer(c->gpus));
    json_object_set_new(cluster, "gpus_per_node", json_integer(cl ? cl->gpus_per_node : c->gpus_per_node));
    json_t *o = json_pack("{s:s, s:s, s:o, s:o, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:i}",
                          "file", imp->file, "format", mp_import_format_name(imp->format),
                          "model", model_json(c), "plan", plan, "plan_string", c->plan_string,
                          "sources", sources, "job", job, "cluster", cluster, "assumed", assumed,
                          "unsupported", unsupported, "unknown_keys", unknown,
                          "unknown_keys_dropped", imp->unknown_dropped);
    if (e && cl) {
        char *s = mp_report_estimate_json(&c->model, cl, &c->plan, e);
        json_t *pred = s ? json_loads(s, 0, NULL) : NULL;
        free(s);
        if (pred)
            json_object_set_new(o, "prediction", pred);
    }
    return o;
}

static void print_fields(const mp_import *imp, mp_field_kind kind, const char *title)
{
    int any = 0;
    for (int i = 0; i < imp->nfields; i++) {
        const mp_import_field *f = &imp->field[i];
        if (f->kind != kind)
            continue;
        if (!any++)
            printf("%s\n", title);
        printf("  %-28s %-18s %-8s %s\n", f->key, f->value, origin_name(f->origin), f->from);
    }
}

static void import_text(const cli_config *c)
{
    const mp_import *imp = c->imp;
    printf("import %s (%s)\n", imp->file, mp_import_format_name(imp->format));
    if (c->have_model) {
        mp_param_count pc;
        mp_model_params(&c->model, (int)c->plan.tp, &pc);
        printf("model: %s, %.3f B parameters (%s)\n", c->model.name, (double)pc.total / 1e9,
               c->model_where);
    } else {
        printf("model: none (%s)\n", c->model_where);
    }
    print_fields(imp, MP_FIELD_MODEL, "model fields:");
    printf("cluster: %lld x %s%s\n", (long long)c->gpus, c->gpu,
           c->gpu_assumed ? " (GPU type stated nowhere: meshplan's default, give --gpu)" : "");
    print_fields(imp, MP_FIELD_CLUSTER, "cluster fields:");
    print_fields(imp, MP_FIELD_PLAN, "plan (key, value, origin, where from):");
    print_fields(imp, MP_FIELD_JOB, "implied by the plan:");
    printf("plan string: %s\n", c->plan_string);
    print_fields(imp, MP_FIELD_UNSUPPORTED, "settings meshplan has no key for (not used):");
    if (imp->nunknown) {
        printf("keys not understood (%d%s):", imp->nunknown + imp->unknown_dropped,
               imp->unknown_dropped ? ", first listed" : "");
        for (int i = 0; i < imp->nunknown; i++)
            printf("%s %s", i ? "," : "", imp->unknown[i]);
        printf("\n");
    }
}

/* Split argv into the command's own options and torchtitan-style dotted overrides. */
/* Split argv into the command's own options and the ones for the file's framework: torchtitan's
 * "--section.key value" and the Hugging Face Trainer's "--per_device_train_batch_size 4" (an
 * underscore in the name; meshplan's own options have dashes), which fill a DeepSpeed JSON's
 * "auto". A Trainer flag given alone ("--bf16") is true. */
static int split_overrides(int argc, char **argv, char **own, int *nown, const char **ov, int *nov)
{
    *nown = 0;
    *nov = 0;
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i];
        const char *eq = strchr(s, '=');
        size_t namelen = eq ? (size_t)(eq - s) : strlen(s);
        const char *dot = memchr(s, '.', namelen), *us = memchr(s, '_', namelen);
        int trainer_flag = (namelen == 6 && (!strncmp(s, "--bf16", 6) || !strncmp(s, "--fp16", 6)));
        if (strncmp(s, "--", 2) != 0 || !(dot || us || trainer_flag) || s[2] == '.' || s[2] == '_') {
            own[(*nown)++] = argv[i];
            continue;
        }
        if (*nov >= IMPORT_OVERRIDES_MAX)
            return cli_fail("import: more than 32 overrides%s", "");
        static char keys[IMPORT_OVERRIDES_MAX][128];
        snprintf(keys[*nov], sizeof keys[0], "%.*s", (int)namelen, s);
        ov[2 * *nov] = keys[*nov];
        if (eq)
            ov[2 * *nov + 1] = eq + 1;
        else if (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0)
            ov[2 * *nov + 1] = argv[++i];
        else if (dot)
            return cli_fail("import: override %s has no value", s);
        else
            ov[2 * *nov + 1] = "true";
        (*nov)++;
    }
    return 0;
}

static const cli_option import_opts[] = {
    CLI_OPT("--model", "M", "the model, instead of the file's: " CLI_MODEL_HELP
            ", a checkpoint directory or a Hugging Face id in the local cache"),
    CLI_OPT("--gpu", "G", "the GPU, a catalog key (default: the file's, else h100-sxm5-80gb, "
            "listed under assumed)"),
    CLI_OPT("--gpus", "N", "GPUs in the job, instead of the file's count"),
    CLI_OPT("--format", "F", "megatron, deepspeed, torchtitan, nemo, finetune or hf (default: "
            "detected from the name and the text)"),
    CLI_OPT_CATALOG,
    CLI_FLAG("--no-predict", "the model, cluster and plan only, no prediction"),
    CLI_OPT_JSON,
    CLI_END,
};

const cli_command cli_cmd_import = {
    "import", "read a launch config (Megatron-LM script, DeepSpeed JSON, torchtitan TOML, NeMo "
    "or axolotl/LLaMA-Factory YAML, config.json): model, cluster and plan with where each came "
    "from, then the prediction",
    "FILE", 1, import_opts,
    "Options \"--section.key value\" after FILE are torchtitan overrides, applied as torchtitan\n"
    "applies them; Hugging Face Trainer arguments (--per_device_train_batch_size 4,\n"
    "--gradient_accumulation_steps 8, --bf16, --gradient_checkpointing) fill a DeepSpeed JSON's\n"
    "\"auto\". predict, run, trace and search take --config FILE for the same job;\n"
    "search --emit FORMAT writes the best plan back in a launch format. docs/import.md.\n",
    cmd_import,
};

int cmd_import(int argc, char **argv)
{
    char **own = calloc((size_t)argc + 1, sizeof *own);
    const char *ov[2 * IMPORT_OVERRIDES_MAX];
    int nown = 0, nov = 0;
    if (!own)
        return EXIT_INTERNAL;
    int rc = split_overrides(argc, argv, own, &nown, ov, &nov);
    cli_args a;
    if (!rc)
        rc = cli_parse_cmd(&cli_cmd_import, nown, own, &a);
    if (rc) {
        free(own);
        return rc;
    }
    if (a.npositional != 1) {
        free(own);
        return cli_fail("import: expected one FILE (a launch script, a DeepSpeed JSON, a "
                        "torchtitan TOML, a NeMo or fine-tuning YAML, a config.json or a "
                        "checkpoint directory)%s", "");
    }
    mp_import_opts o = {0};
    o.model = cli_opt(&a, "--model");
    o.gpu = cli_opt(&a, "--gpu");
    o.overrides = ov;
    o.noverrides = nov;
    long long n = 0;
    mp_diag d = {0};
    if (cli_opt(&a, "--gpus") && (rc = cli_parse_count("gpus", cli_opt(&a, "--gpus"), 1, 1LL << 24, &n)))
        goto out;
    o.gpus = n;
    if (cli_opt(&a, "--format") && mp_import_format_parse(cli_opt(&a, "--format"), &o.format, &d)) {
        cli_print_diag(&d);
        rc = EXIT_INPUT;
        goto out;
    }
    mp_catalog *cat = NULL;
    if ((rc = cli_load_catalog(&a, &cat)))
        goto out;
    cli_config c;
    rc = cli_config_load(cat, a.positional[0], &o, &c);
    mp_cluster cl;
    mp_estimate *e = NULL;
    int have_cl = 0;
    if (!rc && c.have_model && !cli_flag(&a, "--no-predict")) {
        mp_status st = mp_cluster_from_catalog(cat, c.gpu, c.gpus, (int)c.gpus_per_node, NULL, &cl, &d);
        if (st != MP_OK) {
            cli_print_diag(&d);
            rc = cli_exit_for(st);
        } else {
            have_cl = 1;
            e = malloc(sizeof *e);
            st = e ? mp_estimate_plan(&c.model, &cl, &c.plan, NULL, e, &d) : MP_ERR_NOMEM;
            if (st != MP_OK) {
                cli_print_diag(&d);
                rc = cli_exit_for(st);
            }
        }
    }
    if (!rc) {
        if (cli_flag(&a, "--json")) {
            rc = cli_print_json(import_json(&c, have_cl ? &cl : NULL, e), JSON_INDENT(2));
        } else {
            import_text(&c);
            if (e) {
                printf("\nprediction:\n");
                mp_report_estimate_text(stdout, &c.model, &cl, &c.plan, e);
            }
        }
    }
    free(e);
    cli_config_free(&c);
    mp_catalog_destroy(cat);
out:
    free(own);
    return rc;
}
