/* src/import/import.c — mp_import_file(): read a file, detect its format, run its reader, list
 * what no reader understood, and resolve the plan (meshplan/import.h). */
#define _GNU_SOURCE /* memmem */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "import/import_internal.h"
#include "internal.h"

#define IMP_FILE_MAX (64L * 1024 * 1024)

static const char *const format_names[] = {
#define MP_X_NAME(e, n) n,
    MP_IMPORT_FORMAT_LIST(MP_X_NAME)
#undef MP_X_NAME
};
_Static_assert(sizeof format_names / sizeof format_names[0] == MP_IMPORT_FORMAT_COUNT,
               "format_names must match MP_IMPORT_FORMAT_LIST");

const char *mp_import_format_name(mp_import_format f)
{
    return ((int)f >= 0 && f < MP_IMPORT_FORMAT_COUNT) ? format_names[f] : "?";
}

mp_status mp_import_format_parse(const char *name, mp_import_format *out, mp_diag *diag)
{
    for (int i = 0; i < MP_IMPORT_FORMAT_COUNT; i++)
        if (name && !strcmp(name, format_names[i])) {
            *out = (mp_import_format)i;
            return MP_OK;
        }
    mp_diag_add(diag, "format = \"%s\": expected one of megatron, deepspeed, torchtitan, nemo, "
                "finetune, hf", name ? name : "");
    return MP_ERR_INPUT;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcasecmp(s + n - k, suffix) == 0;
}

/* The format from the name, else from the text. YAML is NeMo or fine-tuning: decided after
 * flattening, from its keys. */
static mp_import_format detect(const char *name, const char *text, size_t len, int *yaml)
{
    *yaml = 0;
    if (ends_with(name, ".toml"))
        return MP_IMPORT_TORCHTITAN;
    if (ends_with(name, ".yaml") || ends_with(name, ".yml")) {
        *yaml = 1;
        return MP_IMPORT_NEMO;
    }
    size_t i = 0;
    while (i < len && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r'))
        i++;
    if (ends_with(name, ".json") || (i < len && text[i] == '{')) {
        /* a model config names its layers; a DeepSpeed config its batch, ZeRO or precision */
        static const char *const model_keys[] = {"\"model_type\"", "\"num_hidden_layers\"",
                                                 "\"n_layers\"", "\"n_layer\"", NULL};
        for (const char *const *k = model_keys; *k; k++)
            if (memmem(text, len, *k, strlen(*k)))
                return MP_IMPORT_HF;
        return MP_IMPORT_DEEPSPEED;
    }
    return MP_IMPORT_MEGATRON;
}

/* YAML: fine-tuning when it names a base model / adapter, else NeMo. */
static mp_import_format yaml_kind(const imp_kvs *kv)
{
    static const char *const ft[] = {"base_model", "model_name_or_path", "finetuning_type",
                                     "adapter", "lora_r", "lora_rank", NULL};
    for (int i = 0; i < kv->n; i++)
        for (const char *const *k = ft; *k; k++)
            if (!strcmp(kv->v[i].key, *k))
                return MP_IMPORT_FINETUNE;
    return MP_IMPORT_NEMO;
}

static void list_unknown(imp_ctx *c)
{
    mp_import *o = c->out;
    for (int i = 0; i < c->kv->n; i++) {
        const imp_kv *e = &c->kv->v[i];
        if (e->used)
            continue;
        if (o->nunknown >= MP_IMPORT_UNKNOWN_MAX) {
            o->unknown_dropped++;
            continue;
        }
        if (e->line <= 0) /* an override given on the command line (fields.c says so too) */
            imp_fmt(o->unknown[o->nunknown++], sizeof o->unknown[0], "%.80s (command line: --%.80s)",
                    e->key, e->key);
        else
            imp_fmt(o->unknown[o->nunknown++], sizeof o->unknown[0], "%.80s (line %d)", e->key,
                    e->line);
    }
}

mp_status mp_import_text(const char *name, const char *text, size_t len, const char *dir,
                         const mp_import_opts *opts, mp_import *out, mp_diag *diag)
{
    static const mp_import_opts none = {0};
    if (!opts)
        opts = &none;
    memset(out, 0, sizeof *out);
    mp_strlcpy(out->file, name, sizeof out->file);
    if (mp_is_blank(text, len)) {
        mp_diag_add(diag, "%s:1: the file is empty: expected a launch script, a config or a "
                    "model config", name);
        return MP_ERR_PARSE;
    }
    imp_kvs kv = {0};
    imp_ctx c = {out, &kv, name, diag, 0, opts};
    int yaml = 0;
    mp_import_format f = opts->format != MP_IMPORT_AUTO ? opts->format : detect(name, text, len, &yaml);
    if (f == MP_IMPORT_FINETUNE)
        yaml = 1;
    mp_status st = MP_OK;
    switch (f) {
    case MP_IMPORT_MEGATRON:
        st = imp_bash_args(&c, text, len);
        for (int i = 0; st == MP_OK && i + 1 < 2 * opts->noverrides; i += 2)
            st = imp_kvs_add(&kv, opts->overrides[i], opts->overrides[i + 1], 0, 0);
        if (st == MP_OK)
            st = imp_megatron(&c);
        break;
    case MP_IMPORT_DEEPSPEED:
        st = imp_json_flatten(&c, text, len);
        /* the Hugging Face Trainer's arguments, which fill "auto" ("trainer:NAME", line 0) */
        for (int i = 0; st == MP_OK && i < opts->noverrides; i++) {
            const char *k = opts->overrides[2 * i];
            while (*k == '-')
                k++;
            char key[IMP_KEY_CAP];
            imp_fmt(key, sizeof key, "trainer:%s", k);
            st = imp_kvs_add(&kv, key, opts->overrides[2 * i + 1], 0, 0);
        }
        if (st == MP_OK)
            st = imp_deepspeed(&c);
        break;
    case MP_IMPORT_TORCHTITAN:
        st = imp_toml_flatten(&c, text, len);
        if (st == MP_OK) {
            imp_torchtitan_comments(&c, text, len);
            st = imp_torchtitan(&c);
        }
        break;
    case MP_IMPORT_NEMO:
    case MP_IMPORT_FINETUNE:
        st = imp_yaml_flatten(&c, text, len);
        if (st == MP_OK && opts->format == MP_IMPORT_AUTO)
            f = yaml_kind(&kv);
        if (st == MP_OK)
            st = f == MP_IMPORT_NEMO ? imp_nemo(&c) : imp_finetune(&c, dir);
        break;
    case MP_IMPORT_HF:
        st = imp_hf(&c, text, len);
        break;
    default:
        mp_diag_add(diag, "%s: no reader for format %d", name, (int)f);
        st = MP_ERR_INPUT;
    }
    out->format = f;
    if (st == MP_OK && c.errors)
        st = MP_ERR_INPUT;
    if (st == MP_OK)
        list_unknown(&c);
    imp_kvs_free(&kv);
    if (st == MP_ERR_NOMEM)
        mp_diag_add(diag, "%s: out of memory", name);
    else if (st == MP_ERR_RANGE)
        mp_diag_add(diag, "%s: more than %d entries: expected a launch config", name, IMP_ENTRIES_MAX);
    if (st != MP_OK)
        return st;
    /* the command line's --model, --gpu and --gpus */
    if (opts->model) {
        mp_strlcpy(out->model_id, opts->model, sizeof out->model_id);
        mp_strlcpy(out->model_id_from, "command line: --model", sizeof out->model_id_from);
        out->have_model = 0;
    }
    if (opts->gpus > 0) {
        out->gpus = opts->gpus;
        imp_set_int(&c, MP_FIELD_CLUSTER, "gpus", opts->gpus, NULL, MP_FROM_OPTION,
                    "command line: --gpus");
    }
    if (opts->gpu) {
        mp_strlcpy(out->gpu, opts->gpu, sizeof out->gpu);
        imp_set(&c, MP_FIELD_CLUSTER, "gpu", opts->gpu, NULL, MP_FROM_OPTION, "command line: --gpu");
    }
    return MP_OK;
}

static mp_status read_whole(const char *path, char **buf, size_t *len, mp_diag *diag)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        mp_diag_add(diag, "%s: cannot open: %s", path, strerror(errno));
        return errno == ENOENT ? MP_ERR_NOT_FOUND : MP_ERR_IO;
    }
    char *b = malloc(IMP_FILE_MAX + 1);
    if (!b) {
        fclose(fp);
        return MP_ERR_NOMEM;
    }
    size_t n = fread(b, 1, IMP_FILE_MAX + 1, fp);
    int err = ferror(fp);
    fclose(fp);
    if (err || n > IMP_FILE_MAX) {
        free(b);
        mp_diag_add(diag, "%s: %s", path, err ? "read error" : "larger than 64 MiB: expected a config");
        return err ? MP_ERR_IO : MP_ERR_INPUT;
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return MP_OK;
}

mp_status mp_import_file(const char *path, const mp_import_opts *opts, mp_import *out,
                         mp_diag *diag)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        mp_diag_add(diag, "%s: no such file or directory: expected a launch script, a config, "
                    "or a checkpoint directory holding config.json", path);
        return MP_ERR_NOT_FOUND;
    }
    char cfg[4096];
    const char *file = path;
    if (S_ISDIR(sb.st_mode)) {
        imp_fmt(cfg, sizeof cfg, "%s/config.json", path);
        if (stat(cfg, &sb) != 0 || !S_ISREG(sb.st_mode)) {
            mp_diag_add(diag, "%s: a directory without config.json: expected a Hugging Face "
                        "checkpoint directory (config.json beside the weights)", path);
            return MP_ERR_NOT_FOUND;
        }
        file = cfg;
    } else if (!S_ISREG(sb.st_mode)) {
        mp_diag_add(diag, "%s: not a regular file", path);
        return MP_ERR_INPUT;
    }
    char *buf = NULL;
    size_t len = 0;
    mp_status st = read_whole(file, &buf, &len, diag);
    if (st != MP_OK)
        return st;
    char dir[4096];
    mp_strlcpy(dir, file, sizeof dir);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        mp_strlcpy(dir, ".", sizeof dir);
    st = mp_import_text(file, buf, len, dir, opts, out, diag);
    free(buf);
    return st;
}

/* ---- models by name ---- */

static mp_status load_hf(const char *path, mp_model *out, mp_diag *diag)
{
    char *buf = NULL;
    size_t len = 0;
    mp_status st = read_whole(path, &buf, &len, diag);
    if (st != MP_OK)
        return st;
    mp_import *tmp = calloc(1, sizeof *tmp);
    if (!tmp) {
        free(buf);
        return MP_ERR_NOMEM;
    }
    mp_import_opts o = {0};
    o.format = MP_IMPORT_HF;
    st = mp_import_text(path, buf, len, NULL, &o, tmp, diag);
    if (st == MP_OK)
        *out = tmp->model;
    free(tmp);
    free(buf);
    return st;
}

/* "Llama3_8B" -> "llama3-8b" */
static void normalize(const char *id, char *out, size_t cap)
{
    size_t i = 0;
    for (; id[i] && i + 1 < cap; i++) {
        char ch = id[i];
        out[i] = ch == '_' ? '-' : (ch >= 'A' && ch <= 'Z') ? (char)(ch - 'A' + 'a') : ch;
    }
    out[i] = '\0';
}

mp_status mp_import_find_model(const mp_catalog *cat, const char *id, const char *hub_dir,
                               mp_model *out, char *where, size_t cap, mp_diag *diag)
{
    if (!id || !id[0])
        return MP_ERR_NOT_FOUND;
    char norm[MP_NAME_CAP];
    normalize(id, norm, sizeof norm);
    const mp_model *cm = cat ? mp_catalog_model(cat, id) : NULL;
    if (!cm && cat)
        cm = mp_catalog_model(cat, norm);
    if (cm) {
        *out = *cm;
        imp_fmt(where, cap, "catalog model %s", cm->key);
        return MP_OK;
    }
    /* A Hugging Face id of a catalog model ("meta-llama/Meta-Llama-3-8B-Instruct",
     * "casperhansen/llama-3-70b-fp16"): the same architecture under the catalog's key. */
    const char *base = strrchr(id, '/');
    if (cat && base && !strstr(id, "..")) {
        char k[MP_NAME_CAP];
        normalize(base + 1, k, sizeof k);
        static const char *const drop[] = {"-instruct", "-chat", "-hf", "-base", "-fp16", "-bf16"};
        for (size_t i = 0; i < sizeof drop / sizeof drop[0]; i++) {
            char *p = strstr(k, drop[i]);
            if (p && (p[strlen(drop[i])] == '\0' || p[strlen(drop[i])] == '-'))
                memmove(p, p + strlen(drop[i]), strlen(p + strlen(drop[i])) + 1);
        }
        char *s = k;
        if (!strncmp(s, "meta-", 5))
            s += 5;
        char *dash = strstr(s, "llama-");
        if (dash && dash[6] >= '1' && dash[6] <= '9') /* llama-3-8b -> llama3-8b */
            memmove(dash + 5, dash + 6, strlen(dash + 6) + 1);
        cm = mp_catalog_model(cat, s);
        if (cm) {
            *out = *cm;
            snprintf(where, cap, "catalog model %s (the Hugging Face id %.200s read as the "
                     "catalog entry of its architecture; no network)", cm->key, id);
            return MP_OK;
        }
    }
    struct stat sb;
    char path[4096];
    if (stat(id, &sb) == 0) {
        if (S_ISDIR(sb.st_mode))
            imp_fmt(path, sizeof path, "%s/config.json", id);
        else
            mp_strlcpy(path, id, sizeof path);
        if (stat(path, &sb) != 0) {
            mp_diag_add(diag, "%s: a directory without config.json: expected a Hugging Face "
                        "checkpoint directory", id);
            return MP_ERR_NOT_FOUND;
        }
        imp_fmt(where, cap, "%s", path);
        return load_hf(path, out, diag);
    }
    const char *slash = strchr(id, '/');
    if (!hub_dir || !slash || strchr(slash + 1, '/') || strstr(id, ".."))
        return MP_ERR_NOT_FOUND;
    char snaps[4096];
    imp_fmt(snaps, sizeof snaps, "%s/models--%.*s--%s/snapshots", hub_dir, (int)(slash - id), id,
             slash + 1);
    DIR *d = opendir(snaps);
    if (!d)
        return MP_ERR_NOT_FOUND;
    struct dirent *de;
    int found = 0;
    while (!found && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        imp_fmt(path, sizeof path, "%s/%s/config.json", snaps, de->d_name);
        found = stat(path, &sb) == 0;
    }
    closedir(d);
    if (!found)
        return MP_ERR_NOT_FOUND;
    imp_fmt(where, cap, "Hugging Face cache %s", path);
    mp_status st = load_hf(path, out, diag);
    if (st == MP_OK) {
        mp_strlcpy(out->name, id, sizeof out->name);
        normalize(slash + 1, out->key, sizeof out->key);
    }
    return st;
}
