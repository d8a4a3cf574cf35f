/* src/import/finetune.c — an axolotl or LLaMA-Factory fine-tuning YAML into meshplan's model id,
 * plan and cluster.
 *
 * Defaults: LLaMA-Factory v0.9.3 (src/llamafactory/hparams: finetuning_type "lora", lora_rank
 * 8, cutoff_len 2048, gradient checkpointing on unless disable_gradient_checkpointing) and
 * axolotl v0.8 (adapter absent = full fine-tune, gradient_checkpointing false, sequence_len
 * 2048); both pass the rest to the Hugging Face Trainer (transformers v4.46 TrainingArguments:
 * per_device_train_batch_size 8, gradient_accumulation_steps 1, fp32 unless bf16/fp16).
 * A `deepspeed:` JSON named by the YAML is read (relative to the YAML's directory, then to the
 * current directory) for the ZeRO stage and offload. meshplan has no fine-tuning key yet: the
 * method (finetune=lora|qlora|full|freeze), lora_rank, lora_target and quantization are listed
 * as unsupported settings and the step is predicted as full training of the model.
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
    const char *why = "meshplan has no fine-tuning key yet: predicted as full training";
    if (m) {
        const char *v = !strcmp(m, "lora") && q4 ? "qlora" : m; /* QLoRA: a 4-bit base */
        imp_set(c, MP_FIELD_UNSUPPORTED, "finetune", v, e, MP_FROM_FILE, why);
    } else if (imp_find(c, "model_name_or_path")) {
        imp_set(c, MP_FIELD_UNSUPPORTED, "finetune", q4 ? "qlora" : "lora", NULL, MP_FROM_DEFAULT,
                "LLaMA-Factory v0.9.3 default finetuning_type lora; meshplan has no fine-tuning "
                "key yet: predicted as full training");
    } else {
        imp_set(c, MP_FIELD_UNSUPPORTED, "finetune", "full", NULL, MP_FROM_DEFAULT,
                "axolotl: no adapter, a full fine-tune");
    }
    if (q4 || q8)
        imp_set(c, MP_FIELD_UNSUPPORTED, "quantization", q4 ? "4bit" : "8bit", qe, MP_FROM_FILE, why);
    static const char *const rk[] = {"lora_rank", "lora_r", NULL};
    const char *r = first_str(c, rk, &e);
    const mp_import_field *ft = mp_import_get(c->out, "finetune");
    int lora = ft && strstr(ft->value, "lora");
    if (r)
        imp_set(c, MP_FIELD_UNSUPPORTED, "lora_rank", r, e, MP_FROM_FILE, why);
    else if (lora && imp_find(c, "model_name_or_path"))
        imp_set(c, MP_FIELD_UNSUPPORTED, "lora_rank", "8", NULL, MP_FROM_DEFAULT,
                "LLaMA-Factory v0.9.3 default lora_rank 8; not modelled");
    static const char *const tk[] = {"lora_target", "lora_target_modules", "lora_target_linear", NULL};
    const char *t = first_str(c, tk, &e);
    if (t && lora)
        imp_set(c, MP_FIELD_UNSUPPORTED, "lora_target",
                !strcmp(e->key, "lora_target_linear") && !strcmp(t, "true") ? "all-linear" : t, e,
                MP_FROM_FILE, why);
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
        else
            imp_set(c, MP_FIELD_PLAN, "precision", "bf16", NULL, MP_FROM_DEFAULT,
                    HFT ": fp32, which meshplan does not model; bf16 assumed");
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
            imp_set(c, MP_FIELD_UNSUPPORTED, "offload_param", "cpu", oe, MP_FROM_FILE,
                    "meshplan has no offload key: predicted as if on the GPU");
    }
    for (int i = 0; i < c->kv->n; i++)
        for (const char *const *p = understood; *p; p++)
            if (!strncmp(c->kv->v[i].key, *p, strlen(*p)))
                c->kv->v[i].used = 1;
    return st != MP_OK ? st : c->errors ? MP_ERR_INPUT : MP_OK;
}
