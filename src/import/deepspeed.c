/* src/import/deepspeed.c — a DeepSpeed config JSON into meshplan's plan.
 *
 * Defaults are DeepSpeed v0.16's (docs/config-json, deepspeed/runtime/config.py):
 * zero_optimization.stage 0, gradient_accumulation_steps 1, train_micro_batch_size_per_gpu =
 * train_batch_size / (GA x world) when not given, train_batch_size = micro x GA x world; fp32
 * unless bf16.enabled or fp16.enabled. "auto" is filled by the Hugging Face Trainer integration
 * (transformers v4.46 integrations/deepspeed.py) from TrainingArguments, whose defaults apply
 * when the command line does not say: per_device_train_batch_size 8, gradient_accumulation_steps
 * 1, neither --bf16 nor --fp16 (fp32). The JSON holds no model and no tensor or pipeline degree
 * (tp = pp = 1: DeepSpeed's data parallelism with ZeRO); the model comes from --model and the
 * GPU count from --gpus (else one 8-GPU node is assumed). Offload (offload_optimizer,
 * offload_param) is listed as a setting meshplan does not model.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/import_internal.h"
#include "internal.h"

#define DS "DeepSpeed v0.16 default"
#define HFT "\"auto\": the Hugging Face Trainer fills it; TrainingArguments default (transformers v4.46)"

static const char *const understood_prefix[] = {
    "optimizer.", "scheduler.", "steps_per_print", "gradient_clipping",
    "zero_allow_untested_optimizer", "wall_clock_breakdown", "zero_optimization.", "fp16.",
    "bf16.", "torch_autocast.", "prescale_gradients", "communication_data_type",
    "gradient_predivide_factor", "flops_profiler.", "tensorboard.", "wandb.", "amp.",
    "activation_checkpointing.", NULL};

/* "auto" in a JSON string. */
static int is_auto(const imp_kv *e)
{
    return e && e->is_string && !strcmp(e->val, "auto");
}

/* A batch field: its value, "auto" (the Trainer's argument trainer_arg from the command line,
 * else its default auto_def; *autov 1 for the default, 2 for the command line's, *at then the
 * command line's entry) or absent (0). */
static int64_t batch_field(imp_ctx *c, const char *key, const char *trainer_arg, int64_t auto_def,
                           imp_kv **at, int *autov)
{
    imp_kv *e = imp_find(c, key);
    *at = e;
    *autov = is_auto(e);
    if (*autov) {
        char k[IMP_KEY_CAP];
        imp_fmt(k, sizeof k, "trainer:%s", trainer_arg);
        int64_t v = 0;
        imp_kv *o = NULL;
        if (imp_int(c, k, 1, (int64_t)1 << 30, &v, &o) == 1) {
            *at = o;
            *autov = 2;
            return v;
        }
        return auto_def;
    }
    int64_t v = 0;
    return imp_int(c, key, 1, (int64_t)1 << 30, &v, NULL) == 1 ? v : 0;
}

static void precision(imp_ctx *c)
{
    const mp_import_field *have = mp_import_get(c->out, "precision");
    if (have && have->origin == MP_FROM_FILE)
        return; /* a fine-tuning YAML's bf16: true, which "auto" defers to */
    imp_kv *bf = imp_find(c, "bf16.enabled"), *fp = imp_find(c, "fp16.enabled");
    int on = 0;
    if (bf && !is_auto(bf) && imp_bool(c, "bf16.enabled", &on, NULL) == 1 && on) {
        imp_set(c, MP_FIELD_PLAN, "precision", "bf16", bf, MP_FROM_FILE, NULL);
        return;
    }
    if (fp && !is_auto(fp) && imp_bool(c, "fp16.enabled", &on, NULL) == 1 && on) {
        imp_set(c, MP_FIELD_PLAN, "precision", "fp16", fp, MP_FROM_FILE, NULL);
        return;
    }
    int tb = 0;
    imp_kv *tbe = NULL;
    if ((is_auto(bf) || is_auto(fp)) && imp_bool(c, "trainer:bf16", &tb, &tbe) == 1 && tb) {
        imp_set(c, MP_FIELD_PLAN, "precision", "bf16", tbe, MP_FROM_OPTION, NULL);
        return;
    }
    if ((is_auto(bf) || is_auto(fp)) && imp_bool(c, "trainer:fp16", &tb, &tbe) == 1 && tb) {
        imp_set(c, MP_FIELD_PLAN, "precision", "fp16", tbe, MP_FROM_OPTION, NULL);
        return;
    }
    if (is_auto(bf) || is_auto(fp))
        imp_set(c, MP_FIELD_PLAN, "precision", "bf16", NULL, MP_FROM_DEFAULT,
                "bf16/fp16 \"auto\": the Trainer's --bf16/--fp16 decide (default neither: fp32; "
                "give the flag); bf16 assumed, as fine-tuning runs pass it");
    else
        imp_set(c, MP_FIELD_PLAN, "precision", "fp32", NULL, MP_FROM_DEFAULT,
                "neither bf16 nor fp16 enabled: DeepSpeed trains in fp32 (docs/finetune.md)");
}

/* ZeRO-Offload / ZeRO-Infinity: offload_optimizer and offload_param (device cpu or nvme; the
 * older cpu_offload: true) as the plan keys offload and offload_device. */
static void offload(imp_ctx *c)
{
    static const char *const keys[] = {"zero_optimization.offload_optimizer.device",
                                       "zero_optimization.offload_param.device",
                                       "zero_optimization.cpu_offload"};
    imp_kv *at[3] = {NULL, NULL, NULL};
    int nvme = 0, cpu = 0;
    for (int i = 0; i < 3; i++) {
        imp_kv *e = imp_find(c, keys[i]);
        if (!e || !strcmp(e->val, "none") || !strcmp(e->val, "false"))
            continue;
        if (!strcmp(e->val, "nvme")) nvme = 1;
        else if (!strcmp(e->val, "cpu") || !strcmp(e->val, "true")) cpu = 1;
        else {
            imp_set(c, MP_FIELD_UNSUPPORTED, i == 1 ? "offload_param" : "offload_optimizer", e->val,
                    e, MP_FROM_FILE, "expected device cpu or nvme: not offloaded");
            continue;
        }
        at[i] = e;
    }
    const int opt = at[0] || at[2], par = at[1] != NULL;
    if (!opt && !par)
        return;
    imp_kv *e = at[0] ? at[0] : at[2] ? at[2] : at[1];
    imp_set(c, MP_FIELD_PLAN, "offload", opt && par ? "all" : opt ? "optimizer" : "params", e,
            MP_FROM_FILE, NULL);
    if (nvme)
        imp_set(c, MP_FIELD_PLAN, "offload_device", "nvme", e, MP_FROM_FILE,
                cpu ? "one part to nvme, the other to cpu: both taken as nvme" : NULL);
}

void imp_deepspeed_fields(imp_ctx *c)
{
    imp_kv *e = NULL;
    int64_t stage = 0;
    int r = imp_int(c, "zero_optimization.stage", 0, 3, &stage, &e);
    if (r == 1)
        imp_set_int(c, MP_FIELD_PLAN, "zero", stage, e, MP_FROM_FILE, NULL);
    else if (r == 0)
        imp_set(c, MP_FIELD_PLAN, "zero", "0", NULL, MP_FROM_DEFAULT, DS ": stage 0");
    int64_t world = c->out->gpus > 0 ? c->out->gpus : (c->opts ? c->opts->gpus : 0);
    imp_kv *emb, *ega, *egb;
    int amb, aga, agb;
    int64_t mb = batch_field(c, "train_micro_batch_size_per_gpu", "per_device_train_batch_size", 8,
                             &emb, &amb);
    int64_t ga = batch_field(c, "gradient_accumulation_steps", "gradient_accumulation_steps", 1,
                             &ega, &aga);
    int64_t gb = batch_field(c, "train_batch_size", "train_batch_size", 0, &egb, &agb);
    if (amb == 2) amb = 0; /* from the command line: an entry to name, not a default */
    if (aga == 2) aga = 0;
    if (agb == 2) agb = 0;
    if (amb && mp_import_get(c->out, "mb")) {
        /* "auto" with the batch already read (a fine-tuning YAML naming this JSON): keep it */
        precision(c);
        offload(c);
        goto understood;
    }
    if (!ga) {
        ga = 1;
        imp_set(c, MP_FIELD_JOB, "gradient_accumulation_steps", "1", NULL, MP_FROM_DEFAULT, DS);
    } else {
        imp_set_int(c, MP_FIELD_JOB, "gradient_accumulation_steps", ga, aga ? NULL : ega,
                    MP_FROM_DEFAULT, aga ? HFT ": 1" : "meshplan: gb = mb x GA x dp");
    }
    int derived = 0;
    if (!mb && gb && world > 0 && gb % (ga * world) == 0) {
        mb = gb / (ga * world);
        derived = 1;
    }
    if (mb && derived)
        imp_set_int(c, MP_FIELD_PLAN, "mb", mb, NULL, MP_FROM_DERIVED,
                    "train_batch_size / (gradient_accumulation_steps x GPUs)");
    else if (mb && amb)
        imp_set_int(c, MP_FIELD_PLAN, "mb", mb, NULL, MP_FROM_DEFAULT,
                    HFT ": per_device_train_batch_size 8");
    else if (mb)
        imp_set_int(c, MP_FIELD_PLAN, "mb", mb, emb, MP_FROM_FILE, NULL);
    if (gb && !agb) {
        imp_set_int(c, MP_FIELD_PLAN, "gb", gb, egb, MP_FROM_FILE, NULL);
        if (mb && world > 0 && gb != mb * ga * world) {
            char at[300];
            imp_where(c, egb, at, sizeof at);
            mp_diag_add(c->diag, "%s = %lld: DeepSpeed requires train_batch_size = "
                        "train_micro_batch_size_per_gpu x gradient_accumulation_steps x GPUs = "
                        "%lld x %lld x %lld = %lld", at, (long long)gb, (long long)mb,
                        (long long)ga, (long long)world, (long long)(mb * ga * world));
            c->errors++;
        }
    } else if (mb && world > 0) {
        char why[160];
        imp_fmt(why, sizeof why, "micro-batch x gradient_accumulation_steps x GPUs = %lld x %lld x %lld",
                 (long long)mb, (long long)ga, (long long)world);
        imp_set_int(c, MP_FIELD_PLAN, "gb", mb * ga * world, NULL, MP_FROM_DERIVED, why);
    }
    precision(c);
    offload(c);
understood:
    for (int i = 0; i < c->kv->n; i++)
        for (const char *const *p = understood_prefix; *p; p++)
            if (!strncmp(c->kv->v[i].key, *p, strlen(*p)))
                c->kv->v[i].used = 1;
}

mp_status imp_deepspeed(imp_ctx *c)
{
    if (!(c->opts && c->opts->gpus > 0)) {
        c->out->gpus = 8;
        imp_set(c, MP_FIELD_CLUSTER, "gpus", "8", NULL, MP_FROM_DEFAULT,
                "a DeepSpeed config names no GPU count: one 8-GPU node assumed (give --gpus)");
    } else {
        c->out->gpus = c->opts->gpus;
    }
    imp_set(c, MP_FIELD_PLAN, "tp", "1", NULL, MP_FROM_DEFAULT,
            "DeepSpeed's JSON has no tensor parallelism (ZeRO data parallelism)");
    imp_set(c, MP_FIELD_PLAN, "pp", "1", NULL, MP_FROM_DEFAULT,
            "DeepSpeed's JSON has no pipeline degree (PipelineModule is set in code)");
    imp_kv *ac = imp_find(c, "activation_checkpointing.partition_activations");
    if (!ac)
        ac = imp_find(c, "activation_checkpointing.contiguous_memory_optimization");
    int gcp = 0;
    imp_kv *gce = NULL;
    if (ac)
        imp_set(c, MP_FIELD_PLAN, "recompute", "full", ac, MP_FROM_FILE,
                "activation_checkpointing: deepspeed.checkpointing recomputes whole layers");
    else if (imp_bool(c, "trainer:gradient_checkpointing", &gcp, &gce) == 1)
        imp_set(c, MP_FIELD_PLAN, "recompute", gcp ? "full" : "none", gce, MP_FROM_OPTION,
                gcp ? "HF gradient checkpointing: every layer recomputed" : NULL);
    else
        imp_set(c, MP_FIELD_PLAN, "recompute", "none", NULL, MP_FROM_DEFAULT,
                "the JSON does not say (HF Trainer gradient_checkpointing default False)");
    imp_deepspeed_fields(c);
    if (!c->opts || !c->opts->model)
        mp_strlcpy(c->out->model_id_from, "a DeepSpeed config names no model: give --model",
                   sizeof c->out->model_id_from);
    return c->errors ? MP_ERR_INPUT : MP_OK;
}
