/* src/import/finetune.c — an axolotl or LLaMA-Factory fine-tuning YAML into meshplan's model id,
 * plan and cluster.
 *
 * Defaults: LLaMA-Factory v0.9.3 (src/llamafactory/hparams: finetuning_type "lora", lora_rank
 * 8, cutoff_len 2048, gradient checkpointing on unless disable_gradient_checkpointing) and
 * axolotl v0.8 (adapter absent = full fine-tune, gradient_checkpointing false, sequence_len
 * 2048); both pass the rest to the Hugging Face Trainer (transformers v4.46 TrainingArguments:
 * per_device_train_batch_size 8, gradient_accumulation_steps 1, fp32 unless bf16/fp16).
 * A `deepspeed:` JSON named by the YAML is read (relative to the YAML's directory, then to the
 * current directory) for the ZeRO stage and offload. The method maps to the plan keys
 * finetune (lora, qlora = lora with a 4-bit base, full), lora_rank and lora_targets (PEFT's
 * q_proj ... down_proj names, LLaMA-Factory's "all", axolotl's lora_target_linear), the
 * optimizer to optimizer (adamw*, *adamw_8bit / adamw_bnb_8bit, adafactor, sgd), FSDP's
 * offload_params to offload=all; a method or optimizer meshplan does not model (freeze, an 8-bit
 * base, ...) stays under unsupported with the reason.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/import_internal.h"
#include "internal.h"

#define HFT "Hugging Face TrainingArguments default (transformers v4.46)"

static const char *first_str(imp_ctx *c, const char *const *keys, imp_kv **at)
{
    for (; *keys; keys++) {
        imp_kv *e = imp_find(c, *keys);
        if (e && !imp_is_null(e)) {
            *at = e;
            return e->val;
        }
    }
    *at = NULL;
    return NULL;
}

static mp_status read_deepspeed(imp_ctx *c, const char *dir, imp_kv *ref)
{
    char path[4096];
    FILE *fp = NULL;
    if (dir) {
        imp_fmt(path, sizeof path, "%s/%s", dir, ref->val);
        fp = fopen(path, "rb");
        if (!fp) { /* LLaMA-Factory names it from its repository root: try the file name */
            const char *base = strrchr(ref->val, '/');
            imp_fmt(path, sizeof path, "%s/%s", dir, base ? base + 1 : ref->val);
            fp = fopen(path, "rb");
        }
    }
    if (!fp) {
        mp_strlcpy(path, ref->val, sizeof path);
        fp = fopen(path, "rb");
    }
    if (!fp) {
        imp_set(c, MP_FIELD_UNSUPPORTED, "deepspeed", ref->val, ref, MP_FROM_FILE,
                "the DeepSpeed JSON was not found: ZeRO stage 0 assumed");
        return MP_OK;
    }
    char *buf = malloc(1 << 20);
    size_t n = buf ? fread(buf, 1, (1 << 20) - 1, fp) : 0;
    fclose(fp);
    if (!buf)
        return MP_ERR_NOMEM;
    imp_kvs kv = {0};
    imp_ctx d = {c->out, &kv, path, c->diag, 0, c->opts};
    mp_status st = imp_json_flatten(&d, buf, n);
    free(buf);
    if (st == MP_OK)
        imp_deepspeed_fields(&d);
    imp_kvs_free(&kv);
    c->errors += d.errors;
    return st;
}

/* lora_target(s) as meshplan's lora_targets: "all"/"all-linear" or PEFT module names joined
 * by '+' (q_proj -> q ... down_proj -> down); NULL when a name is not one of them. */
static const char *targets_of(const char *t, char *buf, size_t cap)
{
    static const char *const peft[][2] = {{"q_proj", "q"}, {"k_proj", "k"}, {"v_proj", "v"},
                                          {"o_proj", "o"}, {"gate_proj", "gate"}, {"up_proj", "up"},
                                          {"down_proj", "down"}};
    if (!strcmp(t, "all") || !strcmp(t, "all-linear") || !strcmp(t, "true"))
        return "all";
    size_t n = 0;
    buf[0] = '\0';
    for (const char *s = t; *s;) {
        while (*s == ',' || *s == ' ' || *s == '[' || *s == ']' || *s == '\'' || *s == '"')
            s++;
        size_t len = strcspn(s, ", []'\"");
        if (!len)
            break;
        const char *name = NULL;
        for (size_t i = 0; i < sizeof peft / sizeof peft[0]; i++)
            if (strlen(peft[i][0]) == len && !strncmp(s, peft[i][0], len))
                name = peft[i][1];
        if (!name || n + strlen(name) + 2 >= cap)
            return NULL;
        n += (size_t)imp_fmt(buf + n, cap - n, "%s%s", n ? "+" : "", name);
        s += len;
    }
    return n ? buf : NULL;
}

/* The trainer's optimizer name (axolotl optimizer, HF TrainingArguments optim) as meshplan's. */
static const char *optimizer_of(const char *o)
{
    if (strstr(o, "8bit"))
        return "adam8bit";
    if (!strncmp(o, "adamw", 5) || !strncmp(o, "adam", 4) || strstr(o, "paged_adamw"))
        return "adamw";
    if (!strcmp(o, "adafactor"))
        return "adafactor";
    if (!strcmp(o, "sgd"))
        return "sgd";
    if (!strcmp(o, "muon"))
        return "muon";
    return NULL;
}

static void method(imp_ctx *c)
{
    imp_kv *e = NULL;
    static const char *const mk[] = {"finetuning_type", "adapter", NULL};
    const char *m = first_str(c, mk, &e);
    int q4 = 0, q8 = 0;
    int64_t qbit = 0;
    imp_kv *qe = NULL;
    imp_bool(c, "load_in_4bit", &q4, &qe);
    if (!q4) imp_bool(c, "load_in_8bit", &q8, &qe);
    if (imp_int(c, "quantization_bit", 1, 64, &qbit, &qe) == 1 && qbit > 0) q4 = qbit <= 4, q8 = qbit == 8;
    if (m && (!strcmp(m, "lora") || !strcmp(m, "qlora") || !strcmp(m, "full"))) {
        const char *v = !strcmp(m, "full") ? "full" : q4 || !strcmp(m, "qlora") ? "qlora" : "lora";
        imp_set(c, MP_FIELD_PLAN, "finetune", v, e, MP_FROM_FILE,
                !strcmp(v, "qlora") && strcmp(m, "qlora") ? "LoRA on a 4-bit base: QLoRA" : NULL);
    } else if (m) {
        imp_set(c, MP_FIELD_UNSUPPORTED, "finetune", m, e, MP_FROM_FILE,
                "not modelled (full, lora and qlora are): predicted as full training");
    } else if (imp_find(c, "model_name_or_path")) {
        imp_set(c, MP_FIELD_PLAN, "finetune", q4 ? "qlora" : "lora", NULL, MP_FROM_DEFAULT,
                "LLaMA-Factory v0.9.3 default finetuning_type lora");
    } else {
        imp_set(c, MP_FIELD_PLAN, "finetune", "full", NULL, MP_FROM_DEFAULT,
                "axolotl: no adapter, a full fine-tune");
    }
    const mp_import_field *ft = mp_import_get(c->out, "finetune");
    const int lora = ft && ft->kind == MP_FIELD_PLAN && strstr(ft->value, "lora");
    if (q8)
        imp_set(c, MP_FIELD_UNSUPPORTED, "quantization", "8bit", qe, MP_FROM_FILE,
                "an 8-bit (LLM.int8) base is not modelled: a 16-bit base assumed");
    else if (q4)
        imp_set(c, MP_FIELD_JOB, "quantization", "4bit", qe, MP_FROM_FILE,
                lora ? "the 4-bit NF4 base of finetune=qlora" : "a 4-bit base without LoRA");
    static const char *const rk[] = {"lora_rank", "lora_r", NULL};
    const char *r = first_str(c, rk, &e);
    if (r && lora)
        imp_set(c, MP_FIELD_PLAN, "lora_rank", r, e, MP_FROM_FILE, NULL);
    else if (lora && imp_find(c, "model_name_or_path"))
        imp_set(c, MP_FIELD_PLAN, "lora_rank", "8", NULL, MP_FROM_DEFAULT,
                "LLaMA-Factory v0.9.3 default lora_rank 8");
    static const char *const tk[] = {"lora_target", "lora_target_modules", "lora_target_linear", NULL};
    const char *t = first_str(c, tk, &e);
    char tb[64];
    if (t && lora && !(!strcmp(e->key, "lora_target_linear") && strcmp(t, "true"))) {
        const char *v = targets_of(t, tb, sizeof tb);
        if (v)
            imp_set(c, MP_FIELD_PLAN, "lora_targets", v, e, MP_FROM_FILE, NULL);
        else
            imp_set(c, MP_FIELD_UNSUPPORTED, "lora_target", t, e, MP_FROM_FILE,
                    "modules other than q/k/v/o/gate/up/down_proj: the default q+v assumed");
    } else if (lora && imp_find(c, "model_name_or_path")) {
        imp_set(c, MP_FIELD_PLAN, "lora_targets", "all", NULL, MP_FROM_DEFAULT,
                "LLaMA-Factory v0.9.3 default lora_target all");
    }
    static const char *const ok[] = {"optimizer", "optim", NULL};
    const char *o = first_str(c, ok, &e);
    if (o) {
        const char *v = optimizer_of(o);
        if (v)
            imp_set(c, MP_FIELD_PLAN, "optimizer", v, e, MP_FROM_FILE, NULL);
        else
            imp_set(c, MP_FIELD_UNSUPPORTED, "optimizer", o, e, MP_FROM_FILE,
                    "not modelled: AdamW assumed");
    }
}

static void batch_and_precision(imp_ctx *c)
{
    imp_kv *e = NULL;
    int64_t mb = 8, ga = 1, seq = 2048;
    int r = imp_int(c, "per_device_train_batch_size", 1, 1 << 20, &mb, &e);
    if (r != 1) r = imp_int(c, "micro_batch_size", 1, 1 << 20, &mb, &e);
    if (r == 1) imp_set_int(c, MP_FIELD_PLAN, "mb", mb, e, MP_FROM_FILE, NULL);
    else imp_set(c, MP_FIELD_PLAN, "mb", "8", NULL, MP_FROM_DEFAULT, HFT ": per_device_train_batch_size 8");
    if (imp_int(c, "gradient_accumulation_steps", 1, 1 << 20, &ga, &e) == 1)
        imp_set_int(c, MP_FIELD_JOB, "gradient_accumulation_steps", ga, e, MP_FROM_FILE, NULL);
    else
        imp_set(c, MP_FIELD_JOB, "gradient_accumulation_steps", "1", NULL, MP_FROM_DEFAULT, HFT);
    int64_t gpus = c->opts && c->opts->gpus > 0 ? c->opts->gpus : 1;
    if (!(c->opts && c->opts->gpus > 0))
        imp_set(c, MP_FIELD_CLUSTER, "gpus", "1", NULL, MP_FROM_DEFAULT,
                "a fine-tuning YAML names no GPU count: 1 GPU assumed (give --gpus)");
    c->out->gpus = gpus;
    char why[128];
    imp_fmt(why, sizeof why, "micro-batch x gradient_accumulation_steps x GPUs = %lld x %lld x %lld",
             (long long)mb, (long long)ga, (long long)gpus);
    imp_set_int(c, MP_FIELD_PLAN, "gb", mb * ga * gpus, NULL, MP_FROM_DERIVED, why);
    r = imp_int(c, "cutoff_len", 1, 1 << 26, &seq, &e);
    if (r != 1) r = imp_int(c, "sequence_len", 1, 1 << 26, &seq, &e);
    if (r == 1) imp_set_int(c, MP_FIELD_PLAN, "seq", seq, e, MP_FROM_FILE, NULL);
    else imp_set(c, MP_FIELD_PLAN, "seq", "2048", NULL, MP_FROM_DEFAULT,
                 "LLaMA-Factory cutoff_len / axolotl sequence_len default 2048");
    int on = 0;
    if (!mp_import_get(c->out, "precision") ||
        mp_import_get(c->out, "precision")->origin == MP_FROM_DEFAULT) {
        imp_kv *bf = imp_find(c, "bf16");
        if (bf && !strcmp(bf->val, "auto"))
            imp_set(c, MP_FIELD_PLAN, "precision", "bf16", bf, MP_FROM_FILE,
                    "axolotl bf16: auto, bf16 on GPUs that have it");
        else if (imp_bool(c, "bf16", &on, &e) == 1 && on)
            imp_set(c, MP_FIELD_PLAN, "precision", "bf16", e, MP_FROM_FILE, NULL);
        else if (imp_bool(c, "fp16", &on, &e) == 1 && on)
            imp_set(c, MP_FIELD_PLAN, "precision", "fp16", e, MP_FROM_FILE, NULL);
        else if (imp_bool(c, "tf32", &on, &e) == 1 && on)
            imp_set(c, MP_FIELD_PLAN, "precision", "tf32", e, MP_FROM_FILE,
                    "neither bf16 nor fp16: fp32 training with TF32 matmuls");
        else
            imp_set(c, MP_FIELD_PLAN, "precision", "fp32", NULL, MP_FROM_DEFAULT,
                    HFT ": neither bf16 nor fp16, fp32 training (docs/finetune.md)");
    }
    int gc = 0;
    if (imp_bool(c, "gradient_checkpointing", &gc, &e) == 1)
        imp_set(c, MP_FIELD_PLAN, "recompute", gc ? "full" : "none", e, MP_FROM_FILE,
                gc ? "HF gradient checkpointing: every layer recomputed" : NULL);
    else if (imp_bool(c, "disable_gradient_checkpointing", &gc, &e) == 1 && gc)
        imp_set(c, MP_FIELD_PLAN, "recompute", "none", e, MP_FROM_FILE, NULL);
    else if (imp_find(c, "model_name_or_path"))
        imp_set(c, MP_FIELD_PLAN, "recompute", "full", NULL, MP_FROM_DEFAULT,
                "LLaMA-Factory v0.9.3 enables gradient checkpointing unless "
                "disable_gradient_checkpointing");
    else
        imp_set(c, MP_FIELD_PLAN, "recompute", "none", NULL, MP_FROM_DEFAULT,
                "axolotl gradient_checkpointing default false");
}

/* Keys of the recipe that do not change a step's time or memory. */
static const char *const understood[] = {
    "trust_remote_code", "stage", "do_train", "dataset", "template", "max_samples",
    "preprocessing_num_workers", "dataloader_num_workers", "output_dir", "logging_steps",
    "save_steps", "plot_loss", "overwrite_output_dir", "save_only_model", "report_to",
    "learning_rate", "num_train_epochs", "lr_scheduler_type", "warmup_ratio", "ddp_timeout",
    "resume_from_checkpoint", "lora_alpha", "lora_dropout", "val_set_size", "datasets",
    "dataset_prepared_path", "wandb_", "eval_", "saves_per_epoch", "evals_per_epoch",
    "optimizer", "weight_decay", "warmup_steps", "logging_", "special_tokens", "tokenizer_type",
    "model_type", "strict", "sample_packing", "pad_to_sequence_len", "train_on_inputs",
    "group_by_length", "tf32", "early_stopping_patience", "local_rank", "xformers_attention",
    "flash_attention", "num_epochs", "lr_scheduler", "gradient_checkpointing_kwargs",
    "load_in_", "adapter", "lora_model_dir", "lora_fan_in_fan_out", "hub_model_id",
    "eval_sample_packing", "max_grad_norm", "fsdp", "debug", "base_model_config",
    "per_device_eval_batch_size", "val_size", "eval_strategy", "image_max_pixels",
    "video_max_pixels", "flash_attn", "enable_liger_kernel", "use_unsloth", "lora_", "fp16",
    "overwrite_cache", "eval_table_size", NULL};

mp_status imp_finetune(imp_ctx *c, const char *dir)
{
    imp_kv *e = NULL;
    static const char *const mk[] = {"model_name_or_path", "base_model", NULL};
    const char *model = first_str(c, mk, &e);
    if (!model) {
        mp_diag_add(c->diag, "%s:1: no model_name_or_path (LLaMA-Factory) or base_model "
                    "(axolotl): expected the model to fine-tune", c->name);
        return MP_ERR_INPUT;
    }
    mp_strlcpy(c->out->model_id, model, sizeof c->out->model_id);
    imp_where(c, e, c->out->model_id_from, sizeof c->out->model_id_from);
    imp_set(c, MP_FIELD_PLAN, "tp", "1", NULL, MP_FROM_DEFAULT,
            "the Hugging Face Trainer runs data parallelism (no tensor parallelism)");
    imp_set(c, MP_FIELD_PLAN, "pp", "1", NULL, MP_FROM_DEFAULT, "no pipeline parallelism");
    imp_kv *ds = imp_find(c, "deepspeed");
    mp_status st = MP_OK;
    batch_and_precision(c); /* first: the DeepSpeed JSON's "auto" batch takes these */
    if (ds && !imp_is_null(ds)) {
        st = read_deepspeed(c, dir, ds);
    } else {
        imp_set(c, MP_FIELD_PLAN, "zero", "0", NULL, MP_FROM_DEFAULT,
                "no deepspeed config: DDP (torchrun), no sharding");
    }
    method(c);
    int fsdp = 0;
    imp_kv *fe = NULL;
    if (imp_find(c, "fsdp") && !imp_is_null(imp_find(c, "fsdp"))) {
        fe = imp_find(c, "fsdp");
        fsdp = strstr(fe->val, "full_shard") != NULL;
        if (fsdp)
            imp_set(c, MP_FIELD_PLAN, "zero", "3", fe, MP_FROM_FILE, "FSDP full_shard");
        int off = 0;
        imp_kv *oe = NULL;
        if (imp_bool(c, "fsdp_config.fsdp_offload_params", &off, &oe) == 1 && off)
            imp_set(c, MP_FIELD_PLAN, "offload", "all", oe, MP_FROM_FILE,
                    "FSDP CPUOffload: parameters and gradients on the host, the optimizer step "
                    "there too");
    }
    for (int i = 0; i < c->kv->n; i++)
        for (const char *const *p = understood; *p; p++)
            if (!strncmp(c->kv->v[i].key, *p, strlen(*p)))
                c->kv->v[i].used = 1;
    return st != MP_OK ? st : c->errors ? MP_ERR_INPUT : MP_OK;
}
