/* src/import/nemo.c — a NeMo (1.x megatron_gpt_config.yaml), NeMo-Framework-Launcher
 * (launcher_scripts/conf/training/) or Megatron-Bridge YAML into meshplan's model, plan and
 * cluster.
 *
 * OmegaConf interpolations are resolved first: ${a.b} (absolute; a Launcher file's
 * ${training.a.b} refers to itself), ${.b} (a sibling) and the ${multiply:x, y} resolver NeMo
 * registers. Defaults are NeMo r2.0's GPT config (examples/nlp/language_modeling/conf/
 * megatron_gpt_config.yaml and MegatronGPTModel): tp, pp, cp, ep 1, no virtual pipeline,
 * sequence_parallel False, no activation checkpointing, the distributed optimizer (ZeRO-1) only
 * with optim.name distributed_fused_adam or mcore_distributed_optim, FSDP (ZeRO-3) with
 * model.fsdp True; model: activation gelu, layernorm, learned_absolute positions, bias True,
 * shared embeddings True, dropout 0.1, ffn 4h, kv_channels hidden/heads, num_query_groups =
 * heads, vocabulary padded to 128 x tp (GPT-2 BPE 50257 unless the tokenizer says otherwise).
 * GPU count: trainer.num_nodes x trainer.devices (Lightning defaults 1 and 1). Megatron-Bridge
 * (train.micro_batch_size, train.global_batch_size, model.seq_length) keys are read as well.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/import_internal.h"
#include "internal.h"

#define NEMO "NeMo r2.0 default"

static imp_kv *lookup(imp_ctx *c, const char *path)
{
    for (int i = 0; i < c->kv->n; i++)
        if (!strcmp(c->kv->v[i].key, path))
            return &c->kv->v[i];
    return NULL;
}

/* Resolve the interpolations in s (of entry e) into out; 0 if something is unresolved. */
static int interp(imp_ctx *c, const imp_kv *e, const char *s, char *out, size_t cap, int depth)
{
    size_t n = 0;
    out[0] = '\0';
    while (*s && n + 1 < cap) {
        if (s[0] != '$' || s[1] != '{') {
            out[n++] = *s++;
            out[n] = '\0';
            continue;
        }
        /* the matching brace */
        const char *p = s + 2;
        int d = 1;
        while (*p && d) {
            if (*p == '{') d++;
            else if (*p == '}') d--;
            if (d) p++;
        }
        if (!*p || depth > 8)
            return 0;
        char inner[IMP_VAL_CAP];
        imp_fmt(inner, sizeof inner, "%.*s", (int)(p - s - 2), s + 2);
        char val[IMP_VAL_CAP];
        if (!strncmp(inner, "multiply:", 9)) {
            char args[IMP_VAL_CAP];
            if (!interp(c, e, inner + 9, args, sizeof args, depth + 1))
                return 0;
            double prod = 1;
            for (char *tok = strtok(args, ","); tok; tok = strtok(NULL, ","))
                prod *= strtod(tok, NULL);
            imp_fmt(val, sizeof val, "%.17g", prod);
        } else {
            char path[IMP_KEY_CAP];
            if (inner[0] == '.') { /* relative to the entry's parent */
                const char *dot = strrchr(e->key, '.');
                imp_fmt(path, sizeof path, "%.*s%s", dot ? (int)(dot - e->key) : 0, e->key,
                         inner);
            } else {
                mp_strlcpy(path, inner, sizeof path);
            }
            imp_kv *ref = lookup(c, path);
            if (!ref && !strncmp(path, "training.", 9))
                ref = lookup(c, path + 9);
            if (!ref || !interp(c, ref, ref->val, val, sizeof val, depth + 1))
                return 0;
        }
        n += (size_t)imp_fmt(out + n, cap - n, "%s", val);
        if (n >= cap)
            n = cap - 1;
        s = p + 1;
    }
    return 1;
}

static void resolve_all(imp_ctx *c)
{
    for (int i = 0; i < c->kv->n; i++) {
        imp_kv *e = &c->kv->v[i];
        if (!strstr(e->val, "${"))
            continue;
        char out[IMP_VAL_CAP];
        if (interp(c, e, e->val, out, sizeof out, 0))
            mp_strlcpy(e->val, out, sizeof e->val);
    }
}

static int64_t mint(imp_ctx *c, const char *key, const char *field, int64_t def, const char *why)
{
    int64_t v = def;
    imp_kv *e = NULL;
    int r = imp_int(c, key, 1, (int64_t)1 << 40, &v, &e);
    if (r == 1)
        imp_set_int(c, MP_FIELD_MODEL, field, v, e, MP_FROM_FILE, NULL);
    else if (why)
        imp_set_int(c, MP_FIELD_MODEL, field, def, NULL, MP_FROM_DEFAULT, why);
    return r == 1 ? v : def;
}

static const char *sval(imp_ctx *c, const char *key, const char *def)
{
    imp_kv *e = imp_find(c, key);
    return e && !imp_is_null(e) ? e->val : def;
}

static int read_model(imp_ctx *c, mp_model *m)
{
    memset(m, 0, sizeof *m);
    imp_kv *l = imp_find(c, "model.num_layers");
    if (!l || imp_is_null(l))
        return 0;
    m->layers = mint(c, "model.num_layers", "model.layers", 0, NULL);
    m->hidden = mint(c, "model.hidden_size", "model.hidden", 0, NULL);
    m->heads = mint(c, "model.num_attention_heads", "model.heads", 0, NULL);
    if (!m->hidden || !m->heads) {
        mp_diag_add(c->diag, "%s:%d: model.num_layers without model.hidden_size and "
                    "model.num_attention_heads: expected all three", c->name, l->line);
        c->errors++;
        return 0;
    }
    const char *act = sval(c, "model.activation", "gelu");
    m->glu = strstr(act, "glu") != NULL; /* swiglu, geglu, reglu and their fast- variants */
    m->ffn_hidden = mint(c, "model.ffn_hidden_size", "model.ffn_hidden", 4 * m->hidden, NEMO ": 4h");
    m->kv_heads = mint(c, "model.num_query_groups", "model.kv_heads", m->heads,
                       NEMO ": null, one KV head per head");
    m->head_dim = mint(c, "model.kv_channels", "model.head_dim", m->hidden / m->heads,
                       NEMO ": hidden / heads");
    m->seq_len = mint(c, "model.max_position_embeddings", "model.max_positions", 2048, NULL);
    int64_t vocab = 50257;
    const char *why = NEMO ": tokenizer GPT2BPETokenizer, 50257 (GPT-2 BPE)";
    const char *tok = sval(c, "model.tokenizer.type", NULL);
    const char *lib = sval(c, "model.tokenizer.library", "megatron");
    if (tok ? strcmp(tok, "GPT2BPETokenizer") != 0 : strcmp(lib, "megatron") != 0) {
        vocab = 32000;
        why = "the tokenizer's vocabulary is not in the file (a SentencePiece model): 32000 "
              "(Llama 2's) assumed";
    }
    m->vocab = mint(c, "model.vocab_size", "model.vocab", vocab, why);
    int64_t pad = 128;
    imp_int(c, "model.make_vocab_size_divisible_by", 1, 1 << 20, &pad, NULL);
    m->vocab_pad_multiple = pad;
    m->rmsnorm = !strcmp(sval(c, "model.normalization", "layernorm"), "rmsnorm");
    int b = 1, tied = 1;
    imp_bool(c, "model.bias", &b, NULL);
    imp_bool(c, "model.share_embeddings_and_output_weights", &tied, NULL);
    m->bias = b;
    m->tied_embeddings = tied;
    const char *pos = sval(c, "model.position_embedding_type", "learned_absolute");
    m->position = !strcmp(pos, "rope") ? MP_POS_ROPE : !strcmp(pos, "alibi") ? MP_POS_ALIBI
                                                                            : MP_POS_LEARNED;
    double hd = 0.1, ad = 0.1;
    imp_real(c, "model.hidden_dropout", &hd, NULL);
    imp_real(c, "model.attention_dropout", &ad, NULL);
    m->dropout = hd > 0 || ad > 0;
    m->moe_experts = mint(c, "model.num_moe_experts", "model.experts", 0, NULL);
    if (m->moe_experts) {
        m->moe_topk = mint(c, "model.moe_router_topk", "model.topk", 2, NEMO ": 2");
        m->moe_ffn_hidden = m->ffn_hidden;
    }
    mp_strlcpy(m->key, "nemo-model", sizeof m->key);
    imp_fmt(m->name, sizeof m->name, "model of %s", c->name);
    imp_fmt(m->source, sizeof m->source, "NeMo model config in %s", c->name);
    return 1;
}

static void read_plan(imp_ctx *c, const mp_model *m, int have_model)
{
    static const char *const map[][2] = {
        {"model.tensor_model_parallel_size", "tp"}, {"model.pipeline_model_parallel_size", "pp"},
        {"model.virtual_pipeline_model_parallel_size", "vpp"},
        {"model.context_parallel_size", "cp"}, {"model.expert_model_parallel_size", "ep"},
        {"model.micro_batch_size", "mb"}, {"model.global_batch_size", "gb"},
        {"train.micro_batch_size", "mb"}, {"train.global_batch_size", "gb"},
        {"model_config.tensor_model_parallel_size", "tp"},
        {"model_config.pipeline_model_parallel_size", "pp"},
        {"model_config.virtual_pipeline_model_parallel_size", "vpp"},
        {"model_config.context_parallel_size", "cp"}, {"model_config.expert_model_parallel_size", "ep"},
        {"train_config.micro_batch_size", "mb"}, {"train_config.global_batch_size", "gb"},
        {"model_config.seq_length", "seq"}, {"dataset_config.seq_length", "seq"},
        {"model.encoder_seq_length", "seq"}, {"model.seq_length", "seq"},
        {"model.data.seq_length", "seq"},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!mp_import_get(c->out, map[i][1]))
            imp_map_int(c, map[i][0], MP_FIELD_PLAN, map[i][1], 1, (int64_t)1 << 26, NULL);
    if (!mp_import_get(c->out, "seq") && have_model)
        imp_set_int(c, MP_FIELD_PLAN, "seq", m->seq_len, NULL, MP_FROM_DEFAULT,
                    "no encoder_seq_length: max_position_embeddings");
    imp_kv *e = NULL;
    int on = 0;
    const mp_import_field *tpf = mp_import_get(c->out, "tp");
    int tp1 = !tpf || atoll(tpf->value) <= 1;
    if (imp_bool(c, "model.sequence_parallel", &on, &e) == 1)
        imp_set(c, MP_FIELD_PLAN, "sp", on && !tp1 ? "1" : "0", e, MP_FROM_FILE,
                on && tp1 ? "NeMo turns it off when tp = 1" : NULL);
    else
        imp_set(c, MP_FIELD_PLAN, "sp", "0", NULL, MP_FROM_DEFAULT, NEMO ": False");
    imp_kv *g = imp_find(c, "model.activations_checkpoint_granularity");
    if (g && !imp_is_null(g) && (!strcmp(g->val, "full") || !strcmp(g->val, "selective")))
        imp_set(c, MP_FIELD_PLAN, "recompute", g->val, g, MP_FROM_FILE, NULL);
    else if (g && !imp_is_null(g))
        imp_bad(c, g, "selective, full or null");
    else
        imp_set(c, MP_FIELD_PLAN, "recompute", "none", g, MP_FROM_DEFAULT, NEMO ": null (none)");
    int fsdp = 0;
    imp_kv *fe = NULL, *oe = imp_find(c, "model.optim.name");
    if (imp_bool(c, "model.fsdp", &fsdp, &fe) == 1 && fsdp)
        imp_set(c, MP_FIELD_PLAN, "zero", "3", fe, MP_FROM_FILE, "torch FSDP full shard");
    else if (oe && strstr(oe->val, "distributed"))
        imp_set(c, MP_FIELD_PLAN, "zero", "1", oe, MP_FROM_FILE,
                "distributed optimizer: optimizer states sharded over DP");
    else
        imp_set(c, MP_FIELD_PLAN, "zero", "0", NULL, MP_FROM_DEFAULT, NEMO ": fused_adam, no sharding");
    int fp8 = 0;
    imp_kv *p8 = NULL, *pr = imp_find(c, "trainer.precision");
    if (imp_bool(c, "model.fp8", &fp8, &p8) == 1 && fp8)
        imp_set(c, MP_FIELD_PLAN, "precision", "fp8", p8, MP_FROM_FILE, NULL);
    else if (pr && (strstr(pr->val, "bf16")))
        imp_set(c, MP_FIELD_PLAN, "precision", "bf16", pr, MP_FROM_FILE, NULL);
    else if (pr && (!strcmp(pr->val, "16") || strstr(pr->val, "16-mixed")))
        imp_set(c, MP_FIELD_PLAN, "precision", "fp16", pr, MP_FROM_FILE, NULL);
    else
        imp_set(c, MP_FIELD_PLAN, "precision", "bf16", pr, MP_FROM_DEFAULT,
                "trainer.precision 32 or absent: fp32 is not modelled; bf16 assumed");
}

static void read_cluster(imp_ctx *c)
{
    int64_t nodes = 1, dev = 1;
    imp_kv *en = NULL, *ed = NULL;
    int rn = imp_int(c, "trainer.num_nodes", 1, 1 << 20, &nodes, &en);
    int rd = imp_int(c, "trainer.devices", 1, 1 << 20, &dev, &ed);
    if (rn != 1 && rd != 1)
        return;
    if (rd == 1) imp_set_int(c, MP_FIELD_CLUSTER, "gpus_per_node", dev, ed, MP_FROM_FILE, NULL);
    else imp_set(c, MP_FIELD_CLUSTER, "gpus_per_node", "1", NULL, MP_FROM_DEFAULT,
                 "PyTorch Lightning trainer.devices default: 1");
    if (rn == 1) imp_set_int(c, MP_FIELD_CLUSTER, "nodes", nodes, en, MP_FROM_FILE, NULL);
    else imp_set(c, MP_FIELD_CLUSTER, "nodes", "1", NULL, MP_FROM_DEFAULT,
                 "PyTorch Lightning trainer.num_nodes default: 1");
    c->out->gpus = nodes * dev;
    c->out->gpus_per_node = dev;
    char why[96];
    imp_fmt(why, sizeof why, "trainer.num_nodes x trainer.devices = %lld x %lld",
             (long long)nodes, (long long)dev);
    imp_set_int(c, MP_FIELD_CLUSTER, "gpus", nodes * dev, NULL, MP_FROM_DERIVED, why);
}

/* Groups that configure logging, data, the optimizer's numbers or the launcher. */
static const char *const understood_prefix[] = {
    "defaults", "hydra.", "run.", "exp_manager.", "s3_checkpointing.", "name", "trainer.",
    "model.optim.", "model.data.", "model.nsys_profile.", "model.tokenizer.",
    "checkpoint.", "logger.", "dataset.", "optimizer.", "scheduler.", "rng.", "ddp.",
    "optimizer_config.", "scheduler_config.", "checkpoint_config.", "logger_config.",
    "dataset_config.", "rng_config.", "ddp_config.", "profiling_config.", "train_config.train_iters",
    "train_config.eval_", "train.train_iters", "train.eval_", NULL};

/* Model keys of NeMo's GPT config that set numerics, fusions, initialisation or Transformer
 * Engine knobs: read as understood (their effect on a step is within what the estimator's
 * calibrated efficiencies already hold), so they are not listed as unknown. Prefix match. */
static const char *const model_numerics[] = {
    "model.mcore_gpt", "model.rampup_batch_size", "model.init_method_std",
    "model.use_scaled_init_method", "model.ffn_dropout", "model.apply_query_key_layer_scaling",
    "model.layernorm_epsilon", "model.do_layer_norm_weight_decay", "model.pre_process",
    "model.post_process", "model.persist_layer_norm", "model.headscale",
    "model.transformer_block_type", "model.openai_gelu", "model.normalize_attention_scores",
    "model.rotary_percentage", "model.apply_rope_fusion", "model.attention_type",
    "model.native_amp_", "model.hysteresis", "model.fp32_residual_connection",
    "model.fp16_lm_cross_entropy", "model.megatron_amp_O2", "model.grad_allreduce_chunk_size_mb",
    "model.grad_div_ar_fusion", "model.gradient_accumulation_fusion", "model.bias_activation_fusion",
    "model.bias_dropout_add_fusion", "model.masked_softmax_fusion", "model.seed",
    "model.resume_from_checkpoint", "model.restore_from_", "model.use_cpu_initialization",
    "model.onnx_safe", "model.apex_transformer_log_level", "model.gradient_as_bucket_view",
    "model.sync_batch_comm", "model.activations_checkpoint_", "model.num_micro_batches_with_",
    "model.deterministic_mode", "model.cross_entropy_loss_fusion", "model.transformer_engine",
    "model.fp8_", "model.use_emha", "model.tp_comm_", "model.skip_train", "model.overlap_p2p_comm",
    "model.batch_p2p_comm", "model.seq_len_interpolation_factor", "model.scale_positional_embedding",
    "model.drop_layers", "model.reset_lr", "model.fsdp_", "model.sharp", "model.gc_interval",
    "model.nsys_profile", "model.ub_tp_comm_overlap_cfg", "model.dist_ckpt_",
    "model.megatron_timer_kwargs", "model.enable_megatron_timers", "model.nccl_communicator_",
    "model.get_attention_mask_from_fusion", "model.validation_param_sync_overlap",
    "model.reduce_amax", "model.cpu_offloading", NULL};

mp_status imp_nemo(imp_ctx *c)
{
    resolve_all(c);
    mp_import *o = c->out;
    o->have_model = read_model(c, &o->model);
    if (c->errors)
        return MP_ERR_INPUT;
    int any = imp_find(c, "model.tensor_model_parallel_size") || imp_find(c, "trainer.devices") ||
              imp_find(c, "model_config.tensor_model_parallel_size") ||
              imp_find(c, "train_config.micro_batch_size") ||
              imp_find(c, "model.micro_batch_size") || imp_find(c, "train.micro_batch_size");
    if (!o->have_model && !any) {
        mp_diag_add(c->diag, "%s:1: neither model.num_layers nor trainer/parallelism keys: "
                    "expected a NeMo, NeMo-Framework-Launcher or Megatron-Bridge training YAML",
                    c->name);
        return MP_ERR_INPUT;
    }
    read_plan(c, &o->model, o->have_model);
    read_cluster(c);
    int on = 0;
    imp_kv *e = NULL;
    if (imp_bool(c, "model.use_flash_attention", &on, &e) == 1)
        imp_set(c, MP_FIELD_PLAN, "flash", on ? "1" : "0", e, MP_FROM_FILE, NULL);
    if (imp_bool(c, "model.cpu_offloading", &on, &e) == 1 && on)
        imp_set(c, MP_FIELD_UNSUPPORTED, "offload_activations", "cpu", e, MP_FROM_FILE,
                "meshplan has no offload key: predicted as if on the GPU");
    if (imp_bool(c, "model.ub_tp_comm_overlap", &on, &e) == 1 && on)
        imp_set(c, MP_FIELD_UNSUPPORTED, "tp_comm_overlap", "1", e, MP_FROM_FILE,
                "userbuffer TP overlap: no plan key (trace --tp-overlap simulates one)");
    for (int i = 0; i < c->kv->n; i++)
        for (const char *const *p = model_numerics; *p; p++)
            if (!strncmp(c->kv->v[i].key, *p, strlen(*p)))
                c->kv->v[i].used = 1;
    /* The model: everything under model.* with a known effect was read above; the rest of the
     * groups configure things that do not change a step's time or memory. Keys outside them
     * are listed as unknown. */
    for (int i = 0; i < c->kv->n; i++)
        for (const char *const *p = understood_prefix; *p; p++)
            if (!strncmp(c->kv->v[i].key, *p, strlen(*p)))
                c->kv->v[i].used = 1;
    return c->errors ? MP_ERR_INPUT : MP_OK;
}
