/* src/import/torchtitan.c — a torchtitan job TOML (torchtitan/models/MODEL/train_configs/NAME.toml,
 * with command-line overrides "--section.key value" applied on top, as torchtitan's
 * ConfigManager takes them) into meshplan's model id, plan and cluster.
 *
 * Defaults are torchtitan v0.2.0's JobConfig (torchtitan/config/job_config.py):
 * data_parallel_replicate_degree 1, data_parallel_shard_degree -1 (every GPU left), tensor,
 * pipeline, context and expert parallel degrees 1, expert_tensor_parallel_degree 1,
 * pipeline_parallel_schedule "1F1B" (multi-stage schedules hold 2 stages per rank),
 * pipeline_parallel_microbatch_size 1, training.local_batch_size 8, global_batch_size -1
 * (local x DP), seq_len 2048, mixed_precision_param bfloat16, activation_checkpoint.mode
 * "selective"; model.converters ["float8"] trains the linears in FP8, and
 * quantize.linear.float8.enable_fsdp_float8_all_gather gathers them in FP8. FSDP is PyTorch's
 * FSDP2 (fully_shard): zero=3, fsdp=2 in meshplan's keys; HSDP when both DP degrees exceed 1.
 * The GPU count: a "preset for N <GPU> GPUs" comment, else run_train.sh's NGPU default 8.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/import_internal.h"
#include "import/toml_wrap.h"
#include "internal.h"

#define TT "torchtitan v0.2.0 default"

static int add_leaf(void *ctx, const char *key, const char *val, int line, int is_string)
{
    imp_ctx *c = ctx;
    mp_status st = imp_kvs_add(c->kv, key, val, line, is_string);
    return st == MP_OK ? 0 : (int)st + 100;
}

mp_status imp_toml_flatten(imp_ctx *c, const char *text, size_t len)
{
    /* TOML is UTF-8 text (TOML v1.0.0, "Spec"): anything else is refused here, before toml++
     * (whose v3.3 unicode tables reach an unreachable branch on some invalid bytes). */
    size_t bad = mp_utf8_invalid_at(text, len);
    if (bad < len) {
        int line = 1;
        for (size_t i = 0; i < bad; i++)
            line += text[i] == '\n';
        mp_diag_add(c->diag, "%s:%d: not valid TOML: byte %zu is not UTF-8 text (or is NUL)",
                    c->name, line, bad + 1);
        return MP_ERR_PARSE;
    }
    /* toml++ v3.3 reads Unicode bare keys (an unreleased TOML feature) through tables that
     * reach an unreachable branch on some letters, even in text that is not valid TOML (found by
     * fuzz_import). TOML 1.0 allows non-ASCII only in strings and comments, whose contents no
     * reader here uses, so toml++ is handed a copy with every non-ASCII byte as '?' (the same
     * length: lines and columns unchanged). */
    char *ascii = malloc(len ? len : 1);
    if (!ascii)
        return MP_ERR_NOMEM;
    for (size_t i = 0; i < len; i++)
        ascii[i] = (unsigned char)text[i] >= 0x80 ? '?' : text[i];
    char err[400] = "";
    int line = 0;
    int r = mp_toml_walk(ascii, len, add_leaf, c, err, sizeof err, &line);
    free(ascii);
    if (r == -1) {
        mp_diag_add(c->diag, "%s:%d: not valid TOML: %s", c->name, line, err);
        return MP_ERR_PARSE;
    }
    if (r == -2)
        return MP_ERR_NOMEM;
    if (r > 0)
        return (mp_status)(r - 100);
    /* torchtitan's command-line overrides: "--section.key value" */
    const mp_import_opts *o = c->opts;
    for (int i = 0; o && i < o->noverrides; i++) {
        const char *k = o->overrides[2 * i], *v = o->overrides[2 * i + 1];
        while (*k == '-')
            k++;
        mp_status st = imp_kvs_add(c->kv, k, v, 0, 0);
        if (st != MP_OK)
            return st;
    }
    if (c->kv->n == 0) {
        mp_diag_add(c->diag, "%s:1: no tables: expected a torchtitan job config ([model], "
                    "[training], [parallelism])", c->name);
        return MP_ERR_INPUT;
    }
    return MP_OK;
}

/* "# NOTE: this toml config is a preset for 64 A100 GPUs." */
static void preset_comment(imp_ctx *c, const char *text, size_t len)
{
    static const char *const gpus[][2] = {{"A100", "a100-sxm4-80gb"}, {"H100", "h100-sxm5-80gb"},
                                          {"H200", "h200-sxm-141gb"}, {"B200", "b200"},
                                          {"MI300X", "mi300x"}};
    const char *p = text, *end = text + len;
    int line = 1;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        char l[256];
        imp_fmt(l, sizeof l, "%.*s", (int)(n < 255 ? n : 255), p);
        const char *f = l[0] == '#' ? strstr(l, " for ") : NULL;
        if (f) {
            char *e;
            long g = strtol(f + 5, &e, 10);
            if (g > 0 && e != f + 5 && *e == ' ')
                for (size_t i = 0; i < sizeof gpus / sizeof gpus[0]; i++)
                    if (!strncmp(e + 1, gpus[i][0], strlen(gpus[i][0])) && strstr(e, "GPU")) {
                        char at[300];
                        imp_fmt(at, sizeof at, "%s:%d: comment \"%.80s\"", c->name, line, l);
                        c->out->gpus = g;
                        imp_set_int(c, MP_FIELD_CLUSTER, "gpus", g, NULL, MP_FROM_FILE, at);
                        mp_strlcpy(c->out->gpu, gpus[i][1], sizeof c->out->gpu);
                        char why[400];
                        imp_fmt(why, sizeof why, "%s (%s: the 80 GB SXM part assumed)", at, gpus[i][0]);
                        imp_set(c, MP_FIELD_CLUSTER, "gpu", gpus[i][1], NULL, MP_FROM_FILE,
                                strcmp(gpus[i][0], "A100") ? at : why);
                        return;
                    }
        }
        line++;
        p = nl ? nl + 1 : end;
    }
}

static int64_t tint(imp_ctx *c, const char *key, int64_t min, int64_t def, imp_kv **at)
{
    int64_t v = def;
    return imp_int(c, key, min, (int64_t)1 << 26, &v, at) == 1 ? v : def;
}

static void degrees(imp_ctx *c)
{
    static const char *const map[][2] = {
        {"parallelism.tensor_parallel_degree", "tp"}, {"parallelism.pipeline_parallel_degree", "pp"},
        {"parallelism.context_parallel_degree", "cp"}, {"parallelism.expert_parallel_degree", "ep"},
        {"parallelism.expert_tensor_parallel_degree", "etp"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        imp_kv *e = NULL;
        int64_t v = tint(c, map[i][0], 1, 1, &e);
        if (e)
            imp_set_int(c, MP_FIELD_PLAN, map[i][1], v, e, MP_FROM_FILE, NULL);
        else
            imp_set(c, MP_FIELD_PLAN, map[i][1], "1", NULL, MP_FROM_DEFAULT, TT ": 1");
    }
    /* etp only matters with experts; torchtitan's default 1 differs from meshplan's (= tp) */
    imp_kv *er = NULL, *es = NULL;
    int64_t rep = tint(c, "parallelism.data_parallel_replicate_degree", 1, 1, &er);
    int64_t shard = 0;
    int rs = imp_int(c, "parallelism.data_parallel_shard_degree", -1, 1 << 24, &shard, &es);
    if (rs != 1)
        shard = -1;
    if (shard == 0) {
        imp_bad(c, es, "-1 (every GPU left) or a degree >= 1");
        return;
    }
    if (shard == 1) {
        imp_set(c, MP_FIELD_PLAN, "zero", "0", es, MP_FROM_FILE, "shard degree 1: DDP");
    } else {
        imp_set(c, MP_FIELD_PLAN, "zero", "3", es, es ? MP_FROM_FILE : MP_FROM_DEFAULT,
                es ? "FSDP2 fully_shard (shard degree -1: every GPU left)" : TT ": shard -1, FSDP2");
        imp_set(c, MP_FIELD_PLAN, "fsdp", "2", NULL, MP_FROM_DEFAULT,
                "torchtitan shards with PyTorch FSDP2 (per-parameter)");
        if (rep > 1 && shard > 1)
            imp_set_int(c, MP_FIELD_PLAN, "hsdp", shard, es, MP_FROM_FILE,
                        "HSDP: shard inside groups of this size, replicate across");
    }
    if (rep > 1 && shard > 1) {
        int64_t prod = rep * shard * tint(c, "parallelism.tensor_parallel_degree", 1, 1, NULL) *
                       tint(c, "parallelism.pipeline_parallel_degree", 1, 1, NULL) *
                       tint(c, "parallelism.context_parallel_degree", 1, 1, NULL);
        if (!c->out->gpus && !(c->opts && c->opts->gpus)) {
            c->out->gpus = prod;
            imp_set_int(c, MP_FIELD_CLUSTER, "gpus", prod, NULL, MP_FROM_DERIVED,
                        "replicate x shard x tp x pp x cp");
        }
    }
}

static void schedule_and_batch(imp_ctx *c)
{
    imp_kv *e = NULL;
    int64_t pp = tint(c, "parallelism.pipeline_parallel_degree", 1, 1, NULL);
    imp_kv *se = imp_find(c, "parallelism.pipeline_parallel_schedule");
    if (pp > 1) {
        const char *s = se ? se->val : "1F1B";
        const char *v = !strcmp(s, "GPipe") ? "gpipe" : strstr(s, "ZeroBubble") || strstr(s, "ZBV") ? "zb"
                        : strstr(s, "Interleaved") || strstr(s, "Looped") ? "interleaved" : "1f1b";
        imp_set(c, MP_FIELD_PLAN, "schedule", v, se, se ? MP_FROM_FILE : MP_FROM_DEFAULT,
                se ? NULL : TT ": 1F1B");
        if (!strcmp(v, "interleaved"))
            imp_set(c, MP_FIELD_PLAN, "vpp", "2", NULL, MP_FROM_DEFAULT,
                    "torchtitan's multi-stage schedules hold 2 stages per rank by default");
        int64_t mbs = tint(c, "parallelism.pipeline_parallel_microbatch_size", 1, 1, &e);
        imp_set_int(c, MP_FIELD_PLAN, "mb", mbs, e, e ? MP_FROM_FILE : MP_FROM_DEFAULT, e ? NULL : TT ": 1");
    }
    int64_t local = tint(c, "training.local_batch_size", 1, 8, &e);
    if (!e) /* older presets: training.batch_size */
        local = tint(c, "training.batch_size", 1, 8, &e);
    if (pp <= 1)
        imp_set_int(c, MP_FIELD_PLAN, "mb", local, e, e ? MP_FROM_FILE : MP_FROM_DEFAULT,
                    e ? "local_batch_size: one micro-batch per DP rank" : TT ": local_batch_size 8");
    else
        imp_set_int(c, MP_FIELD_JOB, "local_batch_size", local, e,
                    e ? MP_FROM_FILE : MP_FROM_DEFAULT, e ? NULL : TT ": 8");
    int64_t gb = 0;
    imp_kv *ge = NULL;
    if (imp_int(c, "training.global_batch_size", -1, 1 << 30, &gb, &ge) == 1 && gb > 0)
        imp_set_int(c, MP_FIELD_PLAN, "gb", gb, ge, MP_FROM_FILE, NULL);
    else if (c->out->gpus > 0) {
        const mp_import_field *f;
        int64_t d = c->out->gpus;
        static const char *const k[] = {"tp", "pp", "cp"};
        for (int i = 0; i < 3; i++)
            if ((f = mp_import_get(c->out, k[i])) && atoll(f->value) > 0)
                d /= atoll(f->value);
        /* a GPU count past 2^24 is refused when the plan is resolved ("gpus = N: expected an
         * integer in [1, 2^24]"); local x DP from it would overflow int64 (local <= 2^26) */
        if (d > 0 && d <= (int64_t)1 << 24)
            imp_set_int(c, MP_FIELD_PLAN, "gb", local * d, NULL, MP_FROM_DERIVED,
                        "global_batch_size -1: local_batch_size x DP");
    }
    int64_t seq = tint(c, "training.seq_len", 1, 2048, &e);
    imp_set_int(c, MP_FIELD_PLAN, "seq", seq, e, e ? MP_FROM_FILE : MP_FROM_DEFAULT, e ? NULL : TT ": 2048");
}

static void precision_and_ac(imp_ctx *c)
{
    imp_kv *conv = imp_find(c, "model.converters");
    if (conv && strstr(conv->val, "float8")) {
        imp_set(c, MP_FIELD_PLAN, "precision", "fp8", conv, MP_FROM_FILE, "Float8 linears");
        int ag = 0;
        imp_kv *e = NULL;
        if (imp_bool(c, "quantize.linear.float8.enable_fsdp_float8_all_gather", &ag, &e) == 1 && ag)
            imp_set(c, MP_FIELD_PLAN, "fp8_comm", "1", e, MP_FROM_FILE, "FSDP gathers in FP8");
        else if (imp_bool(c, "float8.enable_fsdp_float8_all_gather", &ag, &e) == 1 && ag)
            imp_set(c, MP_FIELD_PLAN, "fp8_comm", "1", e, MP_FROM_FILE, "FSDP gathers in FP8");
    } else {
        imp_kv *mp = imp_find(c, "training.mixed_precision_param");
        const char *v = mp ? mp->val : "bfloat16";
        imp_set(c, MP_FIELD_PLAN, "precision", !strcmp(v, "float32") ? "bf16" : !strcmp(v, "float16") ? "fp16" : "bf16",
                mp, mp ? MP_FROM_FILE : MP_FROM_DEFAULT,
                mp ? NULL : TT ": mixed_precision_param bfloat16");
    }
    imp_kv *ac = imp_find(c, "activation_checkpoint.mode");
    const char *m = ac ? ac->val : "selective";
    if (strcmp(m, "none") && strcmp(m, "selective") && strcmp(m, "full")) {
        imp_bad(c, ac, "none, selective or full");
        return;
    }
    /* mode = "selective" is torchtitan's per-op policy with selective_ac_option = "op" and
     * full AC on one layer in n with an integer n (torchtitan/distributed/activation_checkpoint.py;
     * the option's default, "2", in torchtitan/config/job_config.py). */
    imp_kv *opt = imp_find(c, "activation_checkpoint.selective_ac_option");
    if (!strcmp(m, "selective")) {
        const char *o = opt ? opt->val : "2";
        char *end = NULL;
        long n = strtol(o, &end, 10);
        if (!strcmp(o, "op")) {
            imp_set(c, MP_FIELD_PLAN, "recompute", "op", opt ? opt : ac, ac ? MP_FROM_FILE : MP_FROM_DEFAULT,
                    ac ? NULL : TT ": selective");
        } else if (end && end != o && !*end && n >= 1 && n <= 4096) {
            char nb[16];
            snprintf(nb, sizeof nb, "%ld", n);
            imp_set(c, MP_FIELD_PLAN, "recompute", "full", ac, ac ? MP_FROM_FILE : MP_FROM_DEFAULT,
                    ac ? NULL : TT ": selective");
            if (n > 1)
                imp_set(c, MP_FIELD_PLAN, "recompute_every", nb, opt, opt ? MP_FROM_FILE : MP_FROM_DEFAULT,
                        opt ? NULL : TT ": selective_ac_option 2");
        } else {
            imp_bad(c, opt, "op or a layer count 1-4096");
            return;
        }
    } else {
        imp_set(c, MP_FIELD_PLAN, "recompute", m, ac, ac ? MP_FROM_FILE : MP_FROM_DEFAULT, NULL);
    }
    imp_kv *fl = imp_find(c, "model.flavor");
    int flex = fl && strstr(fl->val, "flex");
    imp_set(c, MP_FIELD_PLAN, "attn_kernel", flex ? "flex" : "fa2", fl, flex ? MP_FROM_FILE : MP_FROM_DEFAULT,
            flex ? "a FlexAttention flavour" : "PyTorch SDPA's FlashAttention-2 backend");
    /* torch.compile: [compile] enable compiles each TransformerBlock and the loss as far as
     * components (default ["model", "loss"]) names them (components/loss.py); the older
     * [training] compile = true is taken as the blocks alone (compile = 1), as 2024 torchtitan
     * did. */
    int on = 0;
    imp_kv *ck = NULL;
    if (imp_bool(c, "compile.enable", &on, &ck) == 1 && on) {
        imp_kv *comp = imp_find(c, "compile.components");
        const int bits = !comp ? 3 : (strstr(comp->val, "model") ? 1 : 0) + (strstr(comp->val, "loss") ? 2 : 0);
        static const char *const what[4] = {"compile.components: neither blocks nor loss",
                                            "compile.components: the blocks", "compile.components: the loss",
                                            "compile.enable: the blocks and the loss"};
        char v[2] = {(char)('0' + bits), 0};
        imp_set(c, MP_FIELD_PLAN, "compile", v, comp ? comp : ck, MP_FROM_FILE, what[bits]);
    } else if (imp_bool(c, "training.compile", &on, &ck) == 1 && on) {
        imp_set(c, MP_FIELD_PLAN, "compile", "1", ck, MP_FROM_FILE, "training.compile: each block compiled");
    }
}

static const char *const understood_prefix[] = {
    "job.", "profiling.", "metrics.", "optimizer.", "lr_scheduler.", "checkpoint.", "compile.",
    "validation.", "comm.", "memory_estimation.", "fault_tolerance.", "experimental.",
    "training.max_norm", "training.steps", "training.dataset", "training.warmup_steps",
    "training.seed", "training.deterministic", "training.compile", "training.gc_freq", "training.enable_cpu_offload",
    "training.mixed_precision_reduce", "training.dataset_path", "model.name", "model.flavor",
    "model.hf_assets_path", "model.tokenizer_path", "model.print_after_conversion",
    "activation_checkpoint.selective_ac_option", "quantize.", "float8.",
    "parallelism.fsdp_reshard_after_forward", "parallelism.enable_async_tensor_parallel",
    "parallelism.disable_loss_parallel", "parallelism.context_parallel_rotate_method",
    "parallelism.pipeline_parallel_split_points", "parallelism.enable_compiled_autograd",
    "parallelism.pipeline_parallel_layers_per_stage", "parallelism.pipeline_parallel_schedule_csv",
    "parallelism.module_fqns_per_model_part", "parallelism.pipeline_parallel_first_stage_less_layers",
    "parallelism.pipeline_parallel_last_stage_less_layers", NULL};
/* ("parallelism." as a whole is not understood: a mistyped degree, --parallelism.tensor_paralel_degree
 * 8, must be listed as unknown, not priced silently as tp=1; the keys above are torchtitan's
 * Parallelism fields that change no step's time or memory here, the degrees are read.) */

mp_status imp_torchtitan(imp_ctx *c)
{
    imp_kv *name = imp_find(c, "model.name"), *flavor = imp_find(c, "model.flavor");
    if (!name || !flavor) {
        mp_diag_add(c->diag, "%s:%d: no [model] name and flavor: expected a torchtitan job "
                    "config naming its model (name = \"llama3\", flavor = \"8B\")", c->name,
                    name ? name->line : flavor ? flavor->line : 1);
        return MP_ERR_INPUT;
    }
    /* "llama3" + "8B_flex_attn" -> "llama3-8b" (the catalog's key for torchtitan's flavour) */
    char id[MP_NAME_CAP];
    size_t fl = strcspn(flavor->val, "_");
    imp_fmt(id, sizeof id, "%s-%.*s", name->val, (int)fl, flavor->val);
    for (char *p = id; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    mp_strlcpy(c->out->model_id, id, sizeof c->out->model_id);
    imp_fmt(c->out->model_id_from, sizeof c->out->model_id_from, "%s:%d:model.name + %s:%d:model.flavor",
             c->name, name->line, c->name, flavor->line);
    if (c->opts && c->opts->gpus > 0)
        c->out->gpus = c->opts->gpus;
    degrees(c);
    if (!c->out->gpus) {
        c->out->gpus = 8;
        imp_set(c, MP_FIELD_CLUSTER, "gpus", "8", NULL, MP_FROM_DEFAULT,
                "run_train.sh NGPU default 8 (one node)");
    }
    schedule_and_batch(c);
    precision_and_ac(c);
    imp_set(c, MP_FIELD_PLAN, "sp", mp_import_get(c->out, "tp") && atoll(mp_import_get(c->out, "tp")->value) > 1 ? "1" : "0",
            NULL, MP_FROM_DEFAULT, "torchtitan's tensor parallelism shards the norms' sequence (sequence parallel)");
    for (int i = 0; i < c->kv->n; i++)
        for (const char *const *p = understood_prefix; *p; p++)
            if (!strncmp(c->kv->v[i].key, *p, strlen(*p)))
                c->kv->v[i].used = 1;
    return c->errors ? MP_ERR_INPUT : MP_OK;
}

void imp_torchtitan_comments(imp_ctx *c, const char *text, size_t len)
{
    preset_comment(c, text, len);
}
