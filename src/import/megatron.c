/* src/import/megatron.c — Megatron-LM pretrain_gpt.py flags (from bash.c) into meshplan's model,
 * plan and cluster.
 *
 * Defaults are Megatron-LM's megatron/training/arguments.py at core_r0.12.0 (2025): tp, pp, cp,
 * ep 1; --expert-tensor-parallel-size = tp; --global-batch-size = micro-batch x DP;
 * --micro-batch-size and --seq-length have no default (None); fp32 unless --bf16 / --fp16
 * (--fp8-format: FP8 GEMMs); no recompute unless --recompute-granularity (or the old
 * --recompute-activations = selective); the distributed optimizer (ZeRO-1 in meshplan's terms:
 * optimizer states sharded over DP) only with --use-distributed-optimizer; model: LayerNorm,
 * learned absolute positions, GeLU, biases, tied embeddings, dropout 0.1 (hidden and attention),
 * --ffn-hidden-size 4h (with --swiglu int(8h/3 / 64) * 64), --kv-channels h/heads,
 * --num-query-groups = heads unless --group-query-attention, vocabulary padded to a multiple of
 * 128 (--make-vocab-size-divisible-by) x tp, --moe-router-topk 2, --moe-ffn-hidden-size =
 * --ffn-hidden-size, --moe-layer-freq 1 (or a Python list such as "([0]*3+[1]*58)": the zeros
 * are dense layers), MLA (--multi-latent-attention) --q-lora-rank None, --kv-lora-rank 32
 * (arguments.py's; MLATransformerConfig's own default is 512), --qk-head-dim 128,
 * --qk-pos-emb-head-dim 64, --v-head-dim 128. The GPU count is torchrun's --nproc_per_node x
 * --nnodes, else GPUS_PER_NODE x NNODES (NUM_NODES) set in the script, else WORLD_SIZE.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/import_internal.h"
#include "internal.h"

#define MEG "Megatron-LM core_r0.12.0 default"

/* Flags that configure the optimizer, data, logging or checkpoints: understood, and without an
 * effect on a step's time or memory, so not listed as unknown. Prefix match. */
static const char *const ignored_prefix[] = {
    "--lr", "--min-lr", "--weight-decay", "--adam-", "--clip-grad", "--init-method-std",
    "--train-iters", "--train-samples", "--data-", "--vocab-file", "--merge-file", "--split",
    "--save", "--load", "--log", "--eval-", "--tensorboard", "--wandb-", "--tokenizer-",
    "--seed", "--no-load-", "--use-mcore-models", "--distributed-backend", "--exit-",
    "--ckpt-", "--mock-data", "--no-masked-softmax-fusion", "--no-bias-", "--bias-",
    "--overlap-", "--no-gradient-accumulation-fusion", "--accumulate-allreduce-grads-in-fp32",
    "--timing-", "--rotary-", "--rope-", "--moe-router-load-balancing-type", "--moe-aux-loss-coeff",
    "--moe-token-dispatcher-type", "--moe-grouped-gemm", "--moe-z-loss-coeff", "--moe-router-",
    "--num-workers", "--dataloader-", "--attention-softmax-in-fp32", "--step-batch-size-schedule",
    "--use-flash-attn", "--transformer-impl", "--apply-", "--norm-epsilon", "--qk-layernorm",
    "--no-position-embedding", "--manual-gc", "--use-checkpoint-", "--dist-ckpt-", "--async-save",
    "--profile", "--distributed-timeout-minutes", "--loss-scale", "--initial-loss-scale",
    "--hysteresis", "--min-loss-scale", "--use-torch-fsdp2", "--ddp-", "--cross-entropy-",
    "--swiglu", "--group-query-attention", "--untie-embeddings-and-output-weights",
    "--disable-bias-linear", "--use-rotary-position-embeddings", "--rampup-batch-size",
    "--make-vocab-size-divisible-by", "--fp8-", "--first-last-layers-bf16", "--override-opt",
    "--num-experts", "--moe-", "launcher:--node_rank", "launcher:--node-rank",
    "launcher:--master_addr", "launcher:--master-addr", "launcher:--master_port",
    "launcher:--master-port", "launcher:--rdzv", "--cp-comm-type", "--recompute-method",
    "--recompute-num-layers", "--use-torch-fsdp2", "--decoupled-", "--grad-reduce-in-",
    "--calculate-per-token-loss", "--empty-unused-memory-level", "--tiktoken-",
    "--no-create-attention-mask-in-dataloader", "--no-mmap-bin-files", "--num-workers",
    "--fp8-param-gather", "--log-throughput", "--attention-softmax-in-fp32", "--use-legacy-models", "--bf16", "--fp16", "--kv-channels", "--q-lora-rank", "--kv-lora-rank",
    "--qk-head-dim", "--qk-pos-emb-head-dim", "--v-head-dim", "--mtp-num-layers",
    "--position-embedding-type", "--normalization", "--hidden-dropout", "--attention-dropout",
    "--vocab-size", "--multi-latent-attention", "--attention-backend", "--max-position-embeddings",
    NULL};

static int ignored(const char *key)
{
    for (const char *const *p = ignored_prefix; *p; p++)
        if (!strncmp(key, *p, strlen(*p)))
            return 1;
    return 0;
}

/* Vocabulary sizes of the tokenizers Megatron names (their published vocabularies). */
static const struct {
    const char *tokenizer;
    int64_t vocab;
    const char *source;
} tokenizers[] = {
    {"GPT2BPETokenizer", 50257, "GPT-2 BPE vocabulary (Radford et al. 2019)"},
    {"Llama2Tokenizer", 32000, "Llama 2 SentencePiece vocabulary (Touvron et al. 2023)"},
    {"BertWordPieceLowerCase", 30522, "BERT uncased WordPiece (Devlin et al. 2019)"},
    {"BertWordPieceCase", 28996, "BERT cased WordPiece (Devlin et al. 2019)"},
};

static int flag_on(imp_ctx *c, const char *key, imp_kv **at)
{
    int v = 0;
    return imp_bool(c, key, &v, at) == 1 && v;
}

static int64_t model_int(imp_ctx *c, const char *flag, const char *field, int64_t def,
                         const char *def_why, int *found)
{
    int64_t v = def;
    imp_kv *e = NULL;
    int r = imp_int(c, flag, 1, (int64_t)1 << 40, &v, &e);
    if (found)
        *found = r == 1;
    if (r == 1)
        imp_set_int(c, MP_FIELD_MODEL, field, v, e, MP_FROM_FILE, NULL);
    else if (r == 0 && def_why)
        imp_set_int(c, MP_FIELD_MODEL, field, def, NULL, MP_FROM_DEFAULT, def_why);
    return r == 1 ? v : def;
}

static void read_vocab(imp_ctx *c, mp_model *m)
{
    int found = 0;
    m->vocab = model_int(c, "--vocab-size", "model.vocab", 0, NULL, &found);
    if (found)
        return;
    imp_kv *tk = imp_find(c, "--tokenizer-type");
    const char *name = tk && tk->val[0] ? tk->val : "GPT2BPETokenizer";
    for (size_t i = 0; i < sizeof tokenizers / sizeof tokenizers[0]; i++)
        if (!strcmp(name, tokenizers[i].tokenizer)) {
            m->vocab = tokenizers[i].vocab;
            char why[200];
            imp_fmt(why, sizeof why, "%s%s: %s", tk ? "" : "no --tokenizer-type (" MEG " "
                     "GPT2BPETokenizer) ", name, tokenizers[i].source);
            if (tk)
                imp_set_int(c, MP_FIELD_MODEL, "model.vocab", m->vocab, tk, MP_FROM_FILE, why);
            else
                imp_set_int(c, MP_FIELD_MODEL, "model.vocab", m->vocab, NULL, MP_FROM_DEFAULT, why);
            return;
        }
    m->vocab = 128256;
    char why[200];
    imp_fmt(why, sizeof why, "tokenizer %.60s: vocabulary size not stated (no --vocab-size); "
             "Llama 3's 128256 assumed", name);
    imp_set_int(c, MP_FIELD_MODEL, "model.vocab", m->vocab, NULL, MP_FROM_DEFAULT, why);
}

/* --moe-layer-freq: an integer k (every k-th layer MoE) or Megatron's Python list pattern,
 * "([0]*3+[1]*58)" or "[0,1,1,...]": 0 a dense layer, 1 an MoE layer (dense layers leading). */
static void read_layer_freq(imp_ctx *c, mp_model *m)
{
    imp_kv *e = imp_find(c, "--moe-layer-freq");
    if (!e || !e->val[0])
        return;
    if (!strchr(e->val, '[')) {
        int64_t freq = 1;
        if (imp_int(c, "--moe-layer-freq", 1, 1 << 20, &freq, NULL) == 1 && freq > 1) {
            m->moe_layer_freq = freq;
            m->moe_dense_layers = m->layers - m->layers / freq;
            imp_set_int(c, MP_FIELD_MODEL, "model.moe_layer_freq", freq, e, MP_FROM_FILE, NULL);
        }
        return;
    }
    int64_t dense = 0, total = 0;
    const char *p = e->val;
    while (*p) {
        const char *open = strchr(p, '[');
        if (!open)
            break;
        const char *close = strchr(open, ']');
        if (!close) {
            imp_bad(c, e, "an integer or a list such as ([0]*3+[1]*58)");
            return;
        }
        int64_t zeros = 0, n = 0;
        for (const char *q = open + 1; q < close; q++)
            if (*q == '0' || *q == '1') {
                zeros += *q == '0';
                n++;
            }
        int64_t rep = 1;
        const char *star = close + 1;
        while (*star == ' ') star++;
        if (*star == '*') {
            /* at most 2^24 (the most layers a model has): n and zeros are under IMP_VAL_CAP, so
             * the products and sums below stay far inside int64 (9223372036854775807 x 2 did not) */
            char *end = NULL;
            rep = strtoll(star + 1, &end, 10);
            if (end == star + 1 || rep < 0 || rep > (1 << 24)) {
                imp_bad(c, e, "lists repeated 0 to 2^24 (16777216) times, such as ([0]*3+[1]*58)");
                return;
            }
        }
        dense += zeros * rep;
        total += n * rep;
        p = close + 1;
    }
    if (total != m->layers) {
        char want[96];
        imp_fmt(want, sizeof want, "one entry per layer (%lld), not %lld", (long long)m->layers,
                (long long)total);
        imp_bad(c, e, want);
        return;
    }
    m->moe_dense_layers = dense;
    imp_set_int(c, MP_FIELD_MODEL, "model.moe_dense_layers", dense, e, MP_FROM_FILE,
                "the list's zeros, leading");
}

static void read_moe_mla(imp_ctx *c, mp_model *m)
{
    int found = 0;
    m->moe_experts = model_int(c, "--num-experts", "model.experts", 0, NULL, &found);
    if (found) {
        m->moe_topk = model_int(c, "--moe-router-topk", "model.topk", 2, MEG, NULL);
        m->moe_ffn_hidden = model_int(c, "--moe-ffn-hidden-size", "model.moe_ffn_hidden",
                                      m->ffn_hidden, MEG " (= --ffn-hidden-size)", NULL);
        int64_t shared = model_int(c, "--moe-shared-expert-intermediate-size",
                                   "model.moe_shared_width", 0, NULL, NULL);
        if (shared > 0 && m->moe_ffn_hidden > 0)
            m->moe_shared_experts = (shared + m->moe_ffn_hidden / 2) / m->moe_ffn_hidden;
        read_layer_freq(c, m);
    }
    if (flag_on(c, "--multi-latent-attention", NULL)) {
        m->q_lora_rank = model_int(c, "--q-lora-rank", "model.q_lora_rank", 0,
                                   MEG " (None: full-rank queries)", NULL);
        m->kv_lora_rank = model_int(c, "--kv-lora-rank", "model.kv_lora_rank", 32, MEG, NULL);
        m->qk_nope_head_dim = model_int(c, "--qk-head-dim", "model.qk_nope_head_dim", 128, MEG, NULL);
        m->qk_rope_head_dim = model_int(c, "--qk-pos-emb-head-dim", "model.qk_rope_head_dim", 64,
                                        MEG, NULL);
        m->v_head_dim = model_int(c, "--v-head-dim", "model.v_head_dim", 128, MEG, NULL);
        m->head_dim = m->v_head_dim;
        m->kv_heads = m->heads;
    }
    m->mtp_layers = model_int(c, "--mtp-num-layers", "model.mtp_layers", 0, NULL, NULL);
}

/* The model from the flags; 0 when the script has none of the three size flags. */
static int read_model(imp_ctx *c, mp_model *m)
{
    memset(m, 0, sizeof *m);
    int fl = 0, fh = 0, fa = 0;
    m->layers = model_int(c, "--num-layers", "model.layers", 0, NULL, &fl);
    m->hidden = model_int(c, "--hidden-size", "model.hidden", 0, NULL, &fh);
    m->heads = model_int(c, "--num-attention-heads", "model.heads", 0, NULL, &fa);
    if (!fl && !fh && !fa)
        return 0;
    if (!fl || !fh || !fa) {
        mp_diag_add(c->diag, "%s: the model flags are incomplete: expected --num-layers, "
                    "--hidden-size and --num-attention-heads (found %s%s%s)", c->name,
                    fl ? "--num-layers " : "", fh ? "--hidden-size " : "",
                    fa ? "--num-attention-heads" : "");
        c->errors++;
        return 0;
    }
    imp_kv *e = NULL;
    m->glu = flag_on(c, "--swiglu", &e);
    imp_set(c, MP_FIELD_MODEL, "model.glu", m->glu ? "1" : "0", m->glu ? e : NULL,
            MP_FROM_DEFAULT, m->glu ? NULL : MEG " (GeLU MLP)");
    int64_t ffn_def = m->glu ? (m->hidden * 8 / 3 / 64) * 64 : 4 * m->hidden;
    m->ffn_hidden = model_int(c, "--ffn-hidden-size", "model.ffn_hidden", ffn_def,
                              m->glu ? MEG " with --swiglu: int(8h/3 / 64) * 64" : MEG ": 4h", NULL);
    int gqa = flag_on(c, "--group-query-attention", NULL);
    m->kv_heads = gqa ? model_int(c, "--num-query-groups", "model.kv_heads", 1, MEG, NULL)
                      : m->heads;
    if (!gqa)
        imp_set_int(c, MP_FIELD_MODEL, "model.kv_heads", m->heads, NULL, MP_FROM_DEFAULT,
                    MEG ": no --group-query-attention, one KV head per head");
    m->head_dim = model_int(c, "--kv-channels", "model.head_dim",
                            m->heads ? m->hidden / m->heads : 0, MEG ": hidden / heads", NULL);
    m->seq_len = model_int(c, "--max-position-embeddings", "model.max_positions", 4096,
                           NULL, NULL);
    read_vocab(c, m);
    int64_t pad = 128;
    imp_int(c, "--make-vocab-size-divisible-by", 1, 1 << 20, &pad, NULL);
    m->vocab_pad_multiple = pad;
    imp_kv *ne = imp_find(c, "--normalization");
    m->rmsnorm = ne && !strcmp(ne->val, "RMSNorm");
    m->bias = !flag_on(c, "--disable-bias-linear", NULL);
    m->tied_embeddings = !flag_on(c, "--untie-embeddings-and-output-weights", NULL);
    imp_kv *pe = imp_find(c, "--position-embedding-type");
    m->position = (pe && !strcmp(pe->val, "rope")) || flag_on(c, "--use-rotary-position-embeddings", NULL)
                      ? MP_POS_ROPE : MP_POS_LEARNED;
    double hd = 0.1, ad = 0.1;
    imp_real(c, "--hidden-dropout", &hd, NULL);
    imp_real(c, "--attention-dropout", &ad, NULL);
    m->dropout = hd > 0 || ad > 0;
    read_moe_mla(c, m);
    mp_strlcpy(m->key, "megatron-model", sizeof m->key);
    imp_fmt(m->name, sizeof m->name, "model of %s", c->name);
    imp_fmt(m->source, sizeof m->source, "Megatron-LM flags in %s", c->name);
    return 1;
}

static void read_plan(imp_ctx *c, const mp_model *m, int have_model)
{
    static const struct { const char *flag, *key; } degrees[] = {
        {"--tensor-model-parallel-size", "tp"}, {"--pipeline-model-parallel-size", "pp"},
        {"--context-parallel-size", "cp"}, {"--expert-model-parallel-size", "ep"},
        {"--expert-tensor-parallel-size", "etp"}, {"--micro-batch-size", "mb"},
        {"--global-batch-size", "gb"}, {"--seq-length", "seq"},
        {"--virtual-pipeline-model-parallel-size", "vpp"},
    };
    int64_t pp = 1;
    for (size_t i = 0; i < sizeof degrees / sizeof degrees[0]; i++)
        imp_map_int(c, degrees[i].flag, MP_FIELD_PLAN, degrees[i].key, 1, (int64_t)1 << 26,
                    !strcmp(degrees[i].key, "pp") ? &pp : NULL);
    int64_t per = 0;
    imp_kv *e = NULL;
    if (imp_int(c, "--num-layers-per-virtual-pipeline-stage", 1, 1 << 24, &per, &e) == 1 &&
        have_model && pp > 0 && m->layers % (pp * per) == 0) {
        char why[96];
        imp_fmt(why, sizeof why, "vpp = layers / (pp x %lld)", (long long)per);
        imp_set_int(c, MP_FIELD_PLAN, "vpp", m->layers / (pp * per), e, MP_FROM_FILE, why);
    }
    if (!mp_import_get(c->out, "mb"))
        imp_set(c, MP_FIELD_PLAN, "mb", "1", NULL, MP_FROM_DEFAULT,
                "no --micro-batch-size (Megatron-LM has no default): 1 assumed");
    if (!mp_import_get(c->out, "seq") && have_model) {
        imp_set_int(c, MP_FIELD_PLAN, "seq", m->seq_len, NULL, MP_FROM_DEFAULT,
                    "no --seq-length: --max-position-embeddings");
    }
    const mp_import_field *tpf = mp_import_get(c->out, "tp");
    if (flag_on(c, "--sequence-parallel", &e))
        imp_set(c, MP_FIELD_PLAN, "sp", tpf && atoll(tpf->value) > 1 ? "1" : "0", e, MP_FROM_FILE,
                tpf && atoll(tpf->value) > 1 ? NULL
                                             : "Megatron-LM turns it off when tp = 1 (arguments.py)");
    else
        imp_set(c, MP_FIELD_PLAN, "sp", "0", NULL, MP_FROM_DEFAULT, MEG ": off");
    if (flag_on(c, "--use-torch-fsdp2", &e)) {
        imp_set(c, MP_FIELD_PLAN, "zero", "3", e, MP_FROM_FILE, "torch FSDP2: everything sharded");
        imp_set(c, MP_FIELD_PLAN, "fsdp", "2", e, MP_FROM_FILE, NULL);
    } else if (flag_on(c, "--use-distributed-optimizer", &e))
        imp_set(c, MP_FIELD_PLAN, "zero", "1", e, MP_FROM_FILE,
                "distributed optimizer: optimizer states sharded over DP");
    else
        imp_set(c, MP_FIELD_PLAN, "zero", "0", NULL, MP_FROM_DEFAULT, MEG ": no distributed optimizer");
    imp_kv *g = imp_find(c, "--recompute-granularity");
    if (g && (!strcmp(g->val, "full") || !strcmp(g->val, "selective")))
        imp_set(c, MP_FIELD_PLAN, "recompute", g->val, g, MP_FROM_FILE, NULL);
    else if (g)
        imp_bad(c, g, "full or selective");
    else if (flag_on(c, "--recompute-activations", &e))
        imp_set(c, MP_FIELD_PLAN, "recompute", "selective", e, MP_FROM_FILE, NULL);
    else
        imp_set(c, MP_FIELD_PLAN, "recompute", "none", NULL, MP_FROM_DEFAULT, MEG ": no recompute");
    imp_kv *f8 = imp_find(c, "--fp8-format");
    if (f8 && f8->val[0])
        imp_set(c, MP_FIELD_PLAN, "precision", "fp8", f8, MP_FROM_FILE, NULL);
    else if (flag_on(c, "--bf16", &e))
        imp_set(c, MP_FIELD_PLAN, "precision", "bf16", e, MP_FROM_FILE, NULL);
    else if (flag_on(c, "--fp16", &e))
        imp_set(c, MP_FIELD_PLAN, "precision", "fp16", e, MP_FROM_FILE, NULL);
    else
        imp_set(c, MP_FIELD_PLAN, "precision", "bf16", NULL, MP_FROM_DEFAULT,
                "no --bf16/--fp16: Megatron-LM trains in fp32, which meshplan does not model; "
                "bf16 assumed");
    imp_kv *cpt = imp_find(c, "--cp-comm-type");
    if (cpt && !strcmp(cpt->val, "all_gather"))
        imp_set(c, MP_FIELD_PLAN, "cp_algo", "allgather", cpt, MP_FROM_FILE, NULL);
    if (flag_on(c, "--fp8-param-gather", &e))
        imp_set(c, MP_FIELD_PLAN, "fp8_comm", "1", e, MP_FROM_FILE, "FP8 parameter all-gathers");
    imp_kv *ab = imp_find(c, "--attention-backend");
    if (ab && !strcmp(ab->val, "unfused"))
        imp_set(c, MP_FIELD_PLAN, "flash", "0", ab, MP_FROM_FILE, NULL);
    else
        imp_set(c, MP_FIELD_PLAN, "flash", "1", ab, MP_FROM_DEFAULT,
                ab ? NULL : MEG ": --attention-backend auto (Transformer Engine's fused attention)");
}

/* A GPU or node count of the launcher or a script variable: the entry when it is a number; a
 * value the script computes when it runs ($(...), backticks, an unset variable) is no count
 * (listed under assumed by the caller's absence), and neither is an error. */
static imp_kv *count_of(imp_ctx *c, const char *key, int64_t *out)
{
    imp_kv *e = imp_find(c, key);
    if (!e || !e->val[0])
        return NULL;
    char *end = NULL;
    long long v = strtoll(e->val, &end, 10);
    if (*end || v < 1 || v > (1 << 24)) {
        if (strchr(e->val, '`') || strstr(e->val, "$("))
            imp_set(c, MP_FIELD_CLUSTER, "gpus_note", e->val, e, MP_FROM_FILE,
                    "computed by the script when it runs: give --gpus");
        return NULL;
    }
    *out = v;
    return e;
}

static void read_cluster(imp_ctx *c)
{
    static const char *const nproc[] = {"launcher:--nproc_per_node", "launcher:--nproc-per-node",
                                        "launcher:--num_gpus", "launcher:--gpus-per-node", NULL};
    static const char *const nodes[] = {"launcher:--nnodes", "launcher:--num_nodes",
                                        "launcher:--nodes", "launcher:-N", NULL};
    static const char *const gvars[] = {"var:GPUS_PER_NODE", "var:NPROC_PER_NODE", "var:NGPUS",
                                        "var:GPUS", NULL};
    static const char *const nvars[] = {"var:NNODES", "var:NUM_NODES", "var:NODES", "var:N_NODES",
                                        NULL};
    int64_t g = 0, n = 0;
    imp_kv *eg = NULL, *en = NULL;
    for (const char *const *k = nproc; *k && !eg; k++)
        eg = count_of(c, *k, &g);
    for (const char *const *k = gvars; *k && !eg; k++)
        eg = count_of(c, *k, &g);
    for (const char *const *k = nodes; *k && !en; k++)
        en = count_of(c, *k, &n);
    for (const char *const *k = nvars; *k && !en; k++)
        en = count_of(c, *k, &n);
    if (eg) {
        imp_set_int(c, MP_FIELD_CLUSTER, "gpus_per_node", g, eg, MP_FROM_FILE, NULL);
        c->out->gpus_per_node = g;
        if (!en) {
            n = 1;
            imp_set(c, MP_FIELD_CLUSTER, "nodes", "1", NULL, MP_FROM_DEFAULT,
                    "torchrun --nnodes default: 1");
        } else {
            imp_set_int(c, MP_FIELD_CLUSTER, "nodes", n, en, MP_FROM_FILE, NULL);
        }
        c->out->gpus = g * n;
        char why[MP_IMPORT_FROM_CAP], wg[IMP_KEY_CAP + 300], wn[IMP_KEY_CAP + 300] = "default";
        imp_where(c, eg, wg, sizeof wg);
        if (en)
            imp_where(c, en, wn, sizeof wn);
        imp_fmt(why, sizeof why, "gpus_per_node x nodes = %lld x %lld (%s; %s)", (long long)g,
                (long long)n, wg, wn);
        imp_set_int(c, MP_FIELD_CLUSTER, "gpus", g * n, NULL, MP_FROM_DERIVED, why);
        return;
    }
    int64_t w = 0;
    imp_kv *ew = count_of(c, "var:WORLD_SIZE", &w);
    if (ew) {
        c->out->gpus = w;
        imp_set_int(c, MP_FIELD_CLUSTER, "gpus", w, ew, MP_FROM_FILE, NULL);
    }
}

mp_status imp_megatron(imp_ctx *c)
{
    imp_kv *script = imp_find(c, "script:");
    if (script && (strstr(script->val, "t5") || strstr(script->val, "bert") ||
                   imp_find(c, "--encoder-num-layers") || imp_find(c, "--decoder-num-layers"))) {
        mp_diag_add(c->diag, "%s:%d: %s trains an encoder-decoder or encoder model: meshplan "
                    "predicts decoder-only transformers (expected pretrain_gpt.py or "
                    "pretrain_mamba-free GPT flags)", c->name, script->line, script->val);
        return MP_ERR_INPUT;
    }
    mp_import *o = c->out;
    /* --model given: the model is that one, whatever dimension flags the file has */
    o->have_model = c->opts && c->opts->model ? 0 : read_model(c, &o->model);
    if (c->errors)
        return MP_ERR_INPUT;
    if (!o->have_model && !(c->opts && c->opts->model)) {
        int plan_flags = 0;
        for (int i = 0; i < c->kv->n; i++)
            plan_flags += !strncmp(c->kv->v[i].key, "--", 2);
        mp_diag_add(c->diag, "%s:%d: no model flags: expected --num-layers, --hidden-size and "
                    "--num-attention-heads (Megatron-LM pretrain_gpt.py), or give --model "
                    "(%d other flags read)", c->name, script ? script->line : 1, plan_flags);
        return MP_ERR_INPUT;
    }
    read_plan(c, &o->model, o->have_model);
    read_cluster(c);
    for (int i = 0; i < c->kv->n; i++)
        if (ignored(c->kv->v[i].key))
            c->kv->v[i].used = 1;
    return c->errors ? MP_ERR_INPUT : MP_OK;
}
