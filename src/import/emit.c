/* src/import/emit.c — mp_import_emit(): a resolved plan written back in a launch format the
 * readers of this module take, so that the written file re-imports to the same plan (the
 * round trip tests/test_import.c checks). Keys a format cannot hold are refused by name rather
 * than dropped: DeepSpeed's JSON has no tensor or pipeline degree, Megatron-LM has no ZeRO-2,
 * torchtitan shards with FSDP or replicates (no ZeRO-1/2), NeMo's GPT model no ZeRO-2.
 *
 *   megatron:   a torchrun script running pretrain_gpt.py with Megatron-LM core_r0.12.0 flags
 *   torchtitan: a job TOML (torchtitan v0.2.0 JobConfig sections), run as NGPU=N run_train.sh
 *   deepspeed:  a config JSON (DeepSpeed v0.16 keys)
 *   nemo:       a NeMo r2.0 / NeMo-Framework-Launcher training YAML (trainer + model)
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "import/import_internal.h"
#include "internal.h"

typedef struct {
    char *buf;
    size_t cap, len;
    int over;
} ebuf;

static void put(ebuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void put(ebuf *b, const char *fmt, ...)
{
    if (b->over)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->buf + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= b->cap - b->len)
        b->over = 1;
    else
        b->len += (size_t)n;
}

static int refuse(mp_diag *d, const char *fmt, const char *f, const char *what)
{
    mp_diag_add(d, fmt, f, what);
    return 1;
}

/* Keys no writer holds: the MoE load and document-packing inputs and a listed rank order. */
static int common_refusals(const char *f, const mp_plan *p, mp_diag *d)
{
    int bad = 0;
    if (p->order_listed)
        bad |= refuse(d, "emit %s: plan.order: %s launchers place ranks in their own order", f, f);
    if (p->hsdp && strcmp(f, "torchtitan"))
        bad |= refuse(d, "emit %s: plan.hsdp: %s has no hybrid-shard key here (torchtitan has)", f, f);
    if (p->attn_kernel != MP_ATTN_FA2)
        bad |= refuse(d, "emit %s: plan.attn_kernel: %s picks its attention kernel itself", f, f);
    if ((p->recompute == MP_RC_OP || p->recompute_every > 1) && strcmp(f, "torchtitan"))
        bad |= refuse(d, "emit %s: plan.recompute = op / plan.recompute_every: %s", f,
                      "torchtitan's per-op and every-n-layers checkpointing");
    if (p->recompute == MP_RC_MLP)
        bad |= refuse(d, "emit %s: plan.recompute = mlp: %s", f,
                      "no importer reads MLP-only checkpointing back yet");
    if (p->moe_capacity_factor > 0 || p->moe_imbalance > 0 || p->doc_len > 0)
        bad |= refuse(d, "emit %s: plan.capacity_factor/imbalance/doc_len: %s", f,
                      "workload inputs meshplan models, not launch settings written here");
    if (p->cp_algo != MP_CP_RING && strcmp(f, "megatron"))
        bad |= refuse(d, "emit %s: plan.cp_algo = allgather: %s", f, "only Megatron-LM's flag is written");
    if (p->compile && strcmp(f, "torchtitan"))
        bad |= refuse(d, "emit %s: plan.compile: %s", f, "torch.compile is written for torchtitan only");
    if (p->logits_fp32)
        bad |= refuse(d, "emit %s: plan.logits_fp32: %s", f,
                      "fp32 logits held through the backward are a fine-tuning framework's "
                      "(torchtune, transformers), not a launch setting of this format");
    if (p->fp8_comm && strcmp(f, "megatron") && strcmp(f, "torchtitan"))
        bad |= refuse(d, "emit %s: plan.fp8_comm: %s", f, "no fp8 gather key in this format");
    /* The model's states: these launchers train every parameter with fp32-state AdamW and
     * fp32 master weights; DeepSpeed's JSON alone holds offload. */
    if (p->finetune != MP_FT_FULL)
        bad |= refuse(d, "emit %s: plan.finetune: %s", f,
                      "a pre-training launcher holds no adapters (LoRA/QLoRA run from axolotl or "
                      "LLaMA-Factory YAML, which meshplan reads but does not write)");
    if (p->optimizer != MP_OPT_ADAMW || p->opt_dtype || p->no_master)
        bad |= refuse(d, "emit %s: plan.optimizer/opt_dtype/master_weights: %s", f,
                      "only AdamW with fp32 states and master weights is written");
    if (p->offload != MP_OFF_NONE && strcmp(f, "deepspeed"))
        bad |= refuse(d, "emit %s: plan.offload: %s", f, "only the DeepSpeed JSON has offload keys");
    /* ZeRO-3's kind: torch FSDP2 (Megatron-LM --use-torch-fsdp2, torchtitan) is per-parameter;
     * DeepSpeed's ZeRO-3 and NeMo's torch FSDP (1.x) shard flat buffers. */
    int per_param = !strcmp(f, "megatron") || !strcmp(f, "torchtitan");
    if (p->zero == 3 && (p->fsdp == 2) != per_param)
        bad |= refuse(d, "emit %s: plan.fsdp: %s", f,
                      per_param ? "its ZeRO-3 is torch FSDP2 (fsdp=2)"
                                : "its ZeRO-3 shards flat buffers (fsdp=1), not FSDP2");
    return bad;
}

static const char *gpu_name(const char *key)
{
    static const char *const names[][2] = {{"a100", "A100"}, {"h100", "H100"}, {"h200", "H200"},
                                           {"b200", "B200"}, {"mi300x", "MI300X"}};
    for (size_t i = 0; key && i < sizeof names / sizeof names[0]; i++)
        if (!strncmp(key, names[i][0], strlen(names[i][0])))
            return names[i][1];
    return NULL;
}

static int emit_megatron(ebuf *b, const mp_model *m, const mp_plan *p, int64_t n, int64_t gpn,
                         mp_diag *d)
{
    int bad = common_refusals("megatron", p, d);
    if (p->zero == 2)
        bad |= refuse(d, "emit %s: plan.zero = 2: %s has the distributed optimizer (zero=1) "
                      "and torch FSDP2 (zero=3), no ZeRO-2", "megatron", "Megatron-LM");
    if (p->schedule == MP_SCHED_GPIPE || p->schedule == MP_SCHED_ZB)
        bad |= refuse(d, "emit %s: plan.schedule = %s: Megatron-LM runs 1F1B and interleaved 1F1B",
                      "megatron", mp_schedule_name(p->schedule));
    if (p->vpp > 1 && m->layers % (p->pp * p->vpp) != 0)
        bad |= refuse(d, "emit %s: plan.vpp: %s needs layers divisible by pp x vpp", "megatron",
                      "--num-layers-per-virtual-pipeline-stage");
    if (bad)
        return 1;
    if (gpn <= 0 || gpn > n)
        gpn = n < 8 ? n : 8;
    put(b, "#!/bin/bash\n# Megatron-LM (core_r0.12.0 flags) launch written by meshplan: %s on %lld GPUs.\n"
           "# Run from a Megatron-LM checkout on each node (NODE_RANK, MASTER_ADDR as usual).\n",
        m->name, (long long)n);
    put(b, "GPUS_PER_NODE=%lld\nNNODES=%lld\n\n", (long long)gpn, (long long)(n / gpn));
    put(b, "MODEL_ARGS=(\n    --num-layers %lld\n    --hidden-size %lld\n    --ffn-hidden-size %lld\n"
           "    --num-attention-heads %lld\n    --kv-channels %lld\n",
        (long long)m->layers, (long long)m->hidden, (long long)m->ffn_hidden, (long long)m->heads,
        (long long)m->head_dim);
    if (m->kv_heads != m->heads && !m->kv_lora_rank)
        put(b, "    --group-query-attention\n    --num-query-groups %lld\n", (long long)m->kv_heads);
    put(b, "    --seq-length %lld\n    --max-position-embeddings %lld\n    --vocab-size %lld\n"
           "    --make-vocab-size-divisible-by %lld\n",
        (long long)p->seq, (long long)(m->seq_len > p->seq ? m->seq_len : p->seq), (long long)m->vocab,
        (long long)(m->vocab_pad_multiple > 0 ? m->vocab_pad_multiple : 1));
    put(b, "    --tokenizer-type NullTokenizer\n");
    if (m->glu) put(b, "    --swiglu\n");
    if (m->rmsnorm) put(b, "    --normalization RMSNorm\n");
    if (!m->bias) put(b, "    --disable-bias-linear\n");
    if (!m->tied_embeddings) put(b, "    --untie-embeddings-and-output-weights\n");
    if (m->position == MP_POS_ROPE) put(b, "    --position-embedding-type rope\n");
    if (!m->dropout) put(b, "    --hidden-dropout 0.0\n    --attention-dropout 0.0\n");
    if (m->moe_experts)
        put(b, "    --num-experts %lld\n    --moe-router-topk %lld\n    --moe-ffn-hidden-size %lld\n",
            (long long)m->moe_experts, (long long)m->moe_topk, (long long)m->moe_ffn_hidden);
    if (m->kv_lora_rank)
        put(b, "    --multi-latent-attention\n    --q-lora-rank %lld\n    --kv-lora-rank %lld\n"
               "    --qk-head-dim %lld\n    --qk-pos-emb-head-dim %lld\n    --v-head-dim %lld\n",
            (long long)m->q_lora_rank, (long long)m->kv_lora_rank, (long long)m->qk_nope_head_dim,
            (long long)m->qk_rope_head_dim, (long long)m->v_head_dim);
    put(b, ")\n\nPARALLEL_ARGS=(\n    --tensor-model-parallel-size %lld\n"
           "    --pipeline-model-parallel-size %lld\n    --context-parallel-size %lld\n"
           "    --expert-model-parallel-size %lld\n",
        (long long)p->tp, (long long)p->pp, (long long)p->cp, (long long)p->ep);
    if (p->etp && p->etp != p->tp)
        put(b, "    --expert-tensor-parallel-size %lld\n", (long long)p->etp);
    if (p->vpp > 1)
        put(b, "    --num-layers-per-virtual-pipeline-stage %lld\n",
            (long long)(m->layers / (p->pp * p->vpp)));
    if (p->sp) put(b, "    --sequence-parallel\n");
    if (p->cp > 1) put(b, "    --cp-comm-type %s\n", p->cp_algo == MP_CP_ALLGATHER ? "all_gather" : "p2p");
    if (p->zero == 1) put(b, "    --use-distributed-optimizer\n");
    if (p->zero == 3) put(b, "    --use-torch-fsdp2\n");
    put(b, ")\n\nTRAINING_ARGS=(\n    --micro-batch-size %lld\n    --global-batch-size %lld\n",
        (long long)p->mb, (long long)p->gb);
    put(b, "    %s\n", p->precision == MP_DT_FP16 ? "--fp16" : "--bf16");
    if (p->precision == MP_DT_FP8) put(b, "    --fp8-format hybrid\n");
    if (p->fp8_comm) put(b, "    --fp8-param-gather\n");
    if (p->recompute == MP_RC_FULL)
        put(b, "    --recompute-granularity full\n    --recompute-method uniform\n"
               "    --recompute-num-layers 1\n");
    else if (p->recompute == MP_RC_SELECTIVE)
        put(b, "    --recompute-granularity selective\n");
    put(b, "    --attention-backend %s\n", p->flash ? "auto" : "unfused");
    put(b, "    --mock-data\n)\n\ntorchrun --nproc_per_node $GPUS_PER_NODE --nnodes $NNODES "
           "pretrain_gpt.py \\\n    ${MODEL_ARGS[@]} ${PARALLEL_ARGS[@]} ${TRAINING_ARGS[@]}\n");
    return 0;
}

/* "llama3-8b" -> name "llama3", flavour "8B" (torchtitan's naming of the same models). */
static int torchtitan_names(const mp_model *m, char *name, size_t nc, char *flavor, size_t fc)
{
    const char *dash = strrchr(m->key, '-');
    if (!dash || dash == m->key || !dash[1])
        return 0;
    imp_fmt(name, nc, "%.*s", (int)(dash - m->key), m->key);
    imp_fmt(flavor, fc, "%s", dash + 1);
    for (char *c = flavor; *c; c++)
        if (*c >= 'a' && *c <= 'z')
            *c = (char)(*c - 'a' + 'A');
    return 1;
}

static int emit_torchtitan(ebuf *b, const mp_model *m, const mp_plan *p, int64_t n,
                           const char *gpu, mp_diag *d)
{
    int bad = common_refusals("torchtitan", p, d);
    if (p->zero == 1 || p->zero == 2)
        bad |= refuse(d, "emit %s: plan.zero = %s: torchtitan shards with FSDP2 (zero=3) or "
                      "replicates (zero=0)", "torchtitan", p->zero == 1 ? "1" : "2");
    if (p->vpp > 2)
        bad |= refuse(d, "emit %s: plan.vpp: %s holds 2 stages per rank in its interleaved schedules",
                      "torchtitan", "torchtitan");
    if (p->recompute == MP_RC_SELECTIVE)
        bad |= refuse(d, "emit %s: plan.recompute = %s: torchtitan's selective mode is per-op (op) or "
                      "every n layers (full, recompute_every=n)", "torchtitan", mp_recompute_name(p->recompute));
    char name[64], flavor[64];
    if (!torchtitan_names(m, name, sizeof name, flavor, sizeof flavor))
        bad |= refuse(d, "emit %s: the model %s has no torchtitan name and flavour", "torchtitan", m->key);
    if (bad)
        return 1;
    const char *g = gpu_name(gpu);
    put(b, "# torchtitan job config written by meshplan: run NGPU=%lld ./run_train.sh with it.\n", (long long)n);
    if (g)
        put(b, "# NOTE: this toml config is a preset for %lld %s GPUs.\n", (long long)n, g);
    put(b, "\n[model]\nname = \"%s\"\nflavor = \"%s\"\n", name, flavor);
    if (p->precision == MP_DT_FP8)
        put(b, "converters = [\"float8\"]\n");
    int64_t shard = p->zero == 3 ? (p->hsdp ? p->hsdp : p->dp) : 1;
    int64_t rep = p->dp / shard;
    put(b, "\n[training]\nlocal_batch_size = %lld\nglobal_batch_size = %lld\nseq_len = %lld\n",
        (long long)(p->pp > 1 ? p->gb / p->dp : p->mb), (long long)p->gb, (long long)p->seq);
    if (p->precision == MP_DT_FP16)
        put(b, "mixed_precision_param = \"float16\"\n");
    put(b, "\n[parallelism]\ndata_parallel_replicate_degree = %lld\ndata_parallel_shard_degree = %lld\n"
           "tensor_parallel_degree = %lld\npipeline_parallel_degree = %lld\n"
           "context_parallel_degree = %lld\nexpert_parallel_degree = %lld\n"
           "expert_tensor_parallel_degree = %lld\n",
        (long long)rep, (long long)shard, (long long)p->tp, (long long)p->pp, (long long)p->cp,
        (long long)p->ep, (long long)(p->etp ? p->etp : 1));
    if (p->pp > 1)
        put(b, "pipeline_parallel_schedule = \"%s\"\npipeline_parallel_microbatch_size = %lld\n",
            p->schedule == MP_SCHED_INTERLEAVED ? "Interleaved1F1B" : p->schedule == MP_SCHED_GPIPE ? "GPipe"
            : p->schedule == MP_SCHED_ZB ? "ZBVZeroBubble" : "1F1B", (long long)p->mb);
    if (p->recompute == MP_RC_OP)
        put(b, "\n[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = \"op\"\n");
    else if (p->recompute == MP_RC_FULL && p->recompute_every > 1)
        put(b, "\n[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = \"%lld\"\n",
            (long long)p->recompute_every);
    else
        put(b, "\n[activation_checkpoint]\nmode = \"%s\"\n", mp_recompute_name(p->recompute));
    if (p->fp8_comm)
        put(b, "\n[quantize.linear.float8]\nenable_fsdp_float8_all_gather = true\n");
    if (p->compile)
        put(b, "\n[compile]\nenable = true\ncomponents = [%s]\n",
            p->compile == 3 ? "\"model\", \"loss\"" : p->compile == 1 ? "\"model\"" : "\"loss\"");
    return 0;
}

static int emit_deepspeed(ebuf *b, const mp_plan *p, mp_diag *d)
{
    int bad = common_refusals("deepspeed", p, d);
    if (p->tp > 1 || p->pp > 1 || p->cp > 1 || p->ep > 1)
        bad |= refuse(d, "emit %s: plan.tp/pp/cp/ep > 1: %s (ZeRO data parallelism; use --emit "
                      "megatron or torchtitan)", "deepspeed", "a DeepSpeed config JSON holds no model-parallel degree");
    if (p->precision == MP_DT_FP8)
        bad |= refuse(d, "emit %s: plan.precision = fp8: %s", "deepspeed", "the DeepSpeed JSON has bf16 and fp16");
    if (p->recompute == MP_RC_SELECTIVE)
        bad |= refuse(d, "emit %s: plan.recompute = selective: %s", "deepspeed",
                      "DeepSpeed's activation_checkpointing recomputes whole layers (full)");
    if (bad)
        return 1;
    put(b, "{\n  \"train_batch_size\": %lld,\n  \"train_micro_batch_size_per_gpu\": %lld,\n"
           "  \"gradient_accumulation_steps\": %lld,\n",
        (long long)p->gb, (long long)p->mb, (long long)(p->gb / (p->mb * p->dp)));
    put(b, "  \"%s\": {\n    \"enabled\": true\n  },\n", p->precision == MP_DT_FP16 ? "fp16" : "bf16");
    if (p->recompute == MP_RC_FULL)
        put(b, "  \"activation_checkpointing\": {\n    \"partition_activations\": false,\n"
               "    \"contiguous_memory_optimization\": false\n  },\n");
    put(b, "  \"zero_optimization\": {\n    \"stage\": %d,\n    \"overlap_comm\": true", p->zero);
    /* ZeRO-Offload / ZeRO-Infinity (DeepSpeed config docs: offload_optimizer, offload_param) */
    const char *dev = p->offload_device == 1 ? "nvme" : "cpu";
    if (p->offload == MP_OFF_OPTIMIZER || p->offload == MP_OFF_ALL)
        put(b, ",\n    \"offload_optimizer\": {\n      \"device\": \"%s\",\n      \"pin_memory\": true\n    }", dev);
    if (p->offload == MP_OFF_PARAMS || p->offload == MP_OFF_ALL)
        put(b, ",\n    \"offload_param\": {\n      \"device\": \"%s\",\n      \"pin_memory\": true\n    }", dev);
    put(b, "\n  }\n}\n");
    return 0;
}

static int emit_nemo(ebuf *b, const mp_model *m, const mp_plan *p, int64_t n, int64_t gpn, mp_diag *d)
{
    int bad = common_refusals("nemo", p, d);
    if (p->zero == 2)
        bad |= refuse(d, "emit %s: plan.zero = 2: %s", "nemo",
                      "NeMo's GPT model has the distributed optimizer (1) and FSDP (3)");
    if (p->schedule == MP_SCHED_GPIPE || p->schedule == MP_SCHED_ZB)
        bad |= refuse(d, "emit %s: plan.schedule = %s: NeMo runs Megatron-Core's 1F1B and interleaved",
                      "nemo", mp_schedule_name(p->schedule));
    if (bad)
        return 1;
    if (gpn <= 0 || gpn > n)
        gpn = n < 8 ? n : 8;
    put(b, "# NeMo (r2.0 megatron_gpt_config keys) training config written by meshplan: %s.\n", m->name);
    put(b, "trainer:\n  num_nodes: %lld\n  devices: %lld\n  precision: %s\n",
        (long long)(n / gpn), (long long)gpn, p->precision == MP_DT_FP16 ? "16-mixed" : "bf16-mixed");
    put(b, "model:\n  micro_batch_size: %lld\n  global_batch_size: %lld\n"
           "  tensor_model_parallel_size: %lld\n  pipeline_model_parallel_size: %lld\n",
        (long long)p->mb, (long long)p->gb, (long long)p->tp, (long long)p->pp);
    if (p->vpp > 1)
        put(b, "  virtual_pipeline_model_parallel_size: %lld\n", (long long)p->vpp);
    else
        put(b, "  virtual_pipeline_model_parallel_size: null\n");
    put(b, "  context_parallel_size: %lld\n  expert_model_parallel_size: %lld\n"
           "  encoder_seq_length: %lld\n  max_position_embeddings: %lld\n"
           "  sequence_parallel: %s\n  activations_checkpoint_granularity: %s\n  fp8: %s\n",
        (long long)p->cp, (long long)p->ep, (long long)p->seq,
        (long long)(m->seq_len > p->seq ? m->seq_len : p->seq), p->sp ? "true" : "false",
        p->recompute == MP_RC_NONE ? "null" : mp_recompute_name(p->recompute),
        p->precision == MP_DT_FP8 ? "true" : "false");
    put(b, "  num_layers: %lld\n  hidden_size: %lld\n  ffn_hidden_size: %lld\n"
           "  num_attention_heads: %lld\n  num_query_groups: %lld\n  kv_channels: %lld\n",
        (long long)m->layers, (long long)m->hidden, (long long)m->ffn_hidden, (long long)m->heads,
        (long long)m->kv_heads, (long long)m->head_dim);
    put(b, "  activation: %s\n  normalization: %s\n  bias: %s\n"
           "  share_embeddings_and_output_weights: %s\n  position_embedding_type: %s\n"
           "  hidden_dropout: %s\n  attention_dropout: %s\n  make_vocab_size_divisible_by: %lld\n",
        m->glu ? "fast-swiglu" : "gelu", m->rmsnorm ? "rmsnorm" : "layernorm", m->bias ? "true" : "false",
        m->tied_embeddings ? "true" : "false", m->position == MP_POS_ROPE ? "rope" : "learned_absolute",
        m->dropout ? "0.1" : "0.0", m->dropout ? "0.1" : "0.0",
        (long long)(m->vocab_pad_multiple > 0 ? m->vocab_pad_multiple : 1));
    if (m->moe_experts)
        put(b, "  num_moe_experts: %lld\n  moe_router_topk: %lld\n", (long long)m->moe_experts,
            (long long)m->moe_topk);
    put(b, "  fsdp: %s\n  optim:\n    name: %s\n", p->zero == 3 ? "true" : "false",
        p->zero == 1 ? "distributed_fused_adam" : "fused_adam");
    if (m->vocab == 50257)
        put(b, "  tokenizer:\n    library: 'megatron'\n    type: 'GPT2BPETokenizer'\n");
    else /* NeMo takes the vocabulary from the tokenizer's files, not from a key */
        put(b, "  tokenizer:\n    library: 'huggingface'\n    type: null  # the model's own tokenizer "
               "(vocabulary %lld)\n", (long long)m->vocab);
    return 0;
}

mp_status mp_import_emit(mp_import_format f, const mp_model *m, const mp_plan *p, int64_t ngpus,
                         int64_t gpus_per_node, char *buf, size_t cap, mp_diag *diag)
{
    return mp_import_emit_gpu(f, m, p, ngpus, gpus_per_node, NULL, buf, cap, diag);
}

mp_status mp_import_emit_gpu(mp_import_format f, const mp_model *m, const mp_plan *p,
                             int64_t ngpus, int64_t gpus_per_node, const char *gpu, char *buf,
                             size_t cap, mp_diag *diag)
{
    if (!m || !p || !buf || cap == 0 || ngpus <= 0) {
        mp_diag_add(diag, "emit: no model, plan, buffer or GPU count given");
        return MP_ERR_INPUT;
    }
    ebuf b = {buf, cap, 0, 0};
    buf[0] = '\0';
    int bad;
    switch (f) {
    case MP_IMPORT_MEGATRON: bad = emit_megatron(&b, m, p, ngpus, gpus_per_node, diag); break;
    case MP_IMPORT_TORCHTITAN: bad = emit_torchtitan(&b, m, p, ngpus, gpu, diag); break;
    case MP_IMPORT_DEEPSPEED: bad = emit_deepspeed(&b, p, diag); break;
    case MP_IMPORT_NEMO: bad = emit_nemo(&b, m, p, ngpus, gpus_per_node, diag); break;
    default:
        mp_diag_add(diag, "emit: format %s: expected megatron, torchtitan, deepspeed or nemo",
                    mp_import_format_name(f));
        return MP_ERR_INPUT;
    }
    if (bad)
        return MP_ERR_INPUT;
    if (b.over) {
        mp_diag_add(diag, "emit %s: more than %zu bytes", mp_import_format_name(f), cap);
        return MP_ERR_RANGE;
    }
    return MP_OK;
}
