/* src/validate/validate.c — read runs.csv-style files, predict each row, compute the error.
 *
 * CSV: RFC 4180 (commas, double-quoted fields with "" escapes, CRLF or LF). The header names the
 * columns; order does not matter; unknown columns are ignored. Each row becomes a model (its
 * dims, with the flags a dims-only row cannot state taken from the catalog model with the same
 * dims, else from the architecture family: GLU rows are Llama-style, others GPT-style), a
 * cluster from the catalog GPU and its usual node, and a plan.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "meshplan/plan.h"
#include "meshplan/stack.h"
#include "meshplan/topo.h"
#include "meshplan/validate.h"
#include "validate/validate_internal.h"

#define MAX_COLS MP_VAL_MAX_COLS
/* FLOPs-per-token agreement within which a row's TFLOP/s is taken to use our convention
 * (Narayanan et al. 2021: 6 x activated matmul weights + non-causal attention + LM head).
 * Measured on runs.csv: NeMo 24.07 agrees to 0.1%, MosaicML to 3.2% (its 125M model counts
 * the embedding in 6N); Megatron-Bridge 25.11 (causal attention, MTP, gpt-oss experts as two
 * matrices) differs by 4.0% to 27%. */
#define MP_VALIDATE_FLOPS_CONVENTION_TOL 0.035
#define MAX_FIELD MP_VAL_FIELD

typedef struct {
    const char *p, *end;
} csv_reader;

/* Read one record into fields (each truncated to MAX_FIELD-1). Returns the number of fields,
 * 0 at end of input, -1 on an unterminated quote. */
static int csv_record(csv_reader *r, char (*fields)[MAX_FIELD], int *overflow)
{
    if (r->p >= r->end)
        return 0;
    int n = 0;
    *overflow = 0;
    for (;;) {
        char *dst = n < MAX_COLS ? fields[n] : NULL;
        size_t len = 0;
        if (r->p < r->end && *r->p == '"') {
            r->p++;
            for (;;) {
                if (r->p >= r->end)
                    return -1;
                if (*r->p == '"') {
                    if (r->p + 1 < r->end && r->p[1] == '"') {
                        if (dst && len < MAX_FIELD - 1) dst[len++] = '"';
                        r->p += 2;
                        continue;
                    }
                    r->p++;
                    break;
                }
                if (dst && len < MAX_FIELD - 1) dst[len++] = *r->p;
                r->p++;
            }
        }
        while (r->p < r->end && *r->p != ',' && *r->p != '\n' && *r->p != '\r') {
            if (dst && len < MAX_FIELD - 1) dst[len++] = *r->p;
            r->p++;
        }
        if (dst)
            dst[len] = '\0';
        if (n < MAX_COLS)
            n++;
        else
            *overflow = 1;
        if (r->p >= r->end)
            return n;
        if (*r->p == ',') {
            r->p++;
            continue;
        }
        if (*r->p == '\r')
            r->p++;
        if (r->p < r->end && *r->p == '\n')
            r->p++;
        return n;
    }
}

int mp_val_csv_next(const char **p, const char *end, char (*fields)[MP_VAL_FIELD], int *overflow)
{
    csv_reader r = {*p, end};
    int n = csv_record(&r, fields, overflow);
    *p = r.p;
    return n;
}

enum {
    C_ID, C_GROUP, C_NAME, C_LAYERS, C_HIDDEN, C_HEADS, C_KV, C_FFN, C_GLU, C_VOCAB, C_SEQ,
    C_EXPERTS, C_TOPK, C_MOEFFN, C_GPU, C_NGPUS, C_GPN, C_TP, C_PP, C_DP, C_CP, C_EP, C_VPP, C_SP,
    C_MB, C_GB, C_RC, C_PREC, C_ZERO, C_TFLOPS, C_BASIS, C_MFU, C_HFU, C_TOK, C_STEP, C_MEM,
    C_MEMBASIS, C_EXTRA, C_STACK, C_COUNT
};
static const char *const col_names[C_COUNT] = {
    "id", "source_group", "model_name", "layers", "hidden", "heads", "kv_heads", "ffn_hidden",
    "glu", "vocab", "seq_len", "moe_experts", "moe_topk", "moe_ffn_hidden", "gpu", "num_gpus",
    "gpus_per_node", "tp", "pp", "dp", "cp", "ep", "vpp", "sp", "micro_batch", "global_batch",
    "recompute", "precision", "zero_stage", "measured_tflops_per_gpu", "tflops_basis",
    "measured_mfu", "measured_hfu", "measured_tokens_per_s_per_gpu", "measured_step_s",
    "measured_mem_gib", "mem_basis", "plan_extra", "stack"};
/* Columns a file must have. */
static const int required_cols[] = {C_ID, C_LAYERS, C_HIDDEN, C_HEADS, C_FFN, C_VOCAB, C_SEQ,
                                    C_GPU, C_NGPUS, C_TP, C_PP, C_GB};

/* Parse a non-negative number cell; returns 1 if present and valid, 0 if empty, -1 if bad. */
static int num_cell(const char *s, double *out)
{
    if (!s || !s[0])
        return 0;
    char *end;
    double x = strtod(s, &end);
    while (*end == ' ')
        end++;
    if (*end || !isfinite(x) || x < 0)
        return -1;
    *out = x;
    return 1;
}

static int int_cell(const char *s, int64_t *out)
{
    double x;
    int st = num_cell(s, &x);
    if (st <= 0)
        return st;
    if (x != floor(x) || x > 1e12)
        return -1;
    *out = (int64_t)x;
    return 1;
}

/* Flags a dims-only row cannot state: from the catalog model with the same dims, else by
 * family (GLU rows: Llama-style RoPE/RMSNorm, no bias, no dropout, untied; others GPT-style
 * learned positions, LayerNorm with biases, tied embeddings and dropout as in Megatron-LM GPT).
 * An MoE row matches on layers, hidden, heads, experts, top-k and expert width (its ffn_hidden
 * column is the dense or the expert width, as the source printed it) and also takes the
 * architecture details a row has no column for: head width, shared experts, dense layers,
 * multi-head latent attention, sliding windows, MTP modules. Returns the catalog model used, or
 * NULL. */
static const mp_model *infer_flags(const mp_catalog *cat, mp_model *m)
{
    for (size_t i = 0; i < mp_catalog_model_count(cat); i++) {
        const mp_model *c = mp_catalog_model_at(cat, i);
        int same = c->layers == m->layers && c->hidden == m->hidden && c->heads == m->heads &&
                   c->glu == m->glu;
        if (m->moe_experts > 0)
            same = same && c->moe_experts == m->moe_experts && c->moe_topk == m->moe_topk &&
                   c->moe_ffn_hidden == m->moe_ffn_hidden;
        else
            same = same && c->ffn_hidden == m->ffn_hidden && c->moe_experts == 0;
        if (same) {
            m->tied_embeddings = c->tied_embeddings;
            m->position = c->position;
            m->rmsnorm = c->rmsnorm;
            m->bias = c->bias;
            m->dropout = c->dropout;
            if (m->moe_experts > 0) {
                m->head_dim = c->head_dim;
                m->moe_shared_experts = c->moe_shared_experts;
                m->moe_dense_layers = c->moe_dense_layers;
                m->moe_layer_freq = c->moe_layer_freq;
                m->q_lora_rank = c->q_lora_rank;
                m->kv_lora_rank = c->kv_lora_rank;
                m->qk_rope_head_dim = c->qk_rope_head_dim;
                m->qk_nope_head_dim = c->qk_nope_head_dim;
                m->v_head_dim = c->v_head_dim;
                m->attn_window = c->attn_window;
                m->attn_window_layers = c->attn_window_layers;
                m->mtp_layers = c->mtp_layers;
            }
            return c;
        }
    }
    if (m->glu) {
        m->position = MP_POS_ROPE;
        m->rmsnorm = 1;
        m->bias = 0;
        m->dropout = 0;
        m->tied_embeddings = 0;
    } else {
        m->position = MP_POS_LEARNED;
        m->rmsnorm = 0;
        m->bias = 1;
        m->dropout = 1;
        m->tied_embeddings = 1;
    }
    return NULL;
}

/* The stack each known source group ran (docs/stacks.md "Which stack a row runs on"), read
 * from the source itself, never guessed from the group's name: a row's own `stack` column wins,
 * then this table (a group matches on the whole name or on its prefix before '_'), and a row
 * found in neither runs on MP_STACK_DEFAULT with the assumption stated in its output. The era
 * features follow from the stack's profile (data/stacks.json): megatron-2021 has no fused
 * attention and no SP unless the row states SP. */
static const struct { const char *group_prefix; mp_stack_id stack; int fsdp; const char *why; } source_stacks[] = {
    /* Narayanan et al. 2021 and Korthikanti et al. 2022: Megatron-LM of the time, fused
     * softmax, no FlashAttention (Dao et al., May 2022, postdates both). */
    {"megatron2021", MP_STACK_MEGATRON_2021, 0, "Megatron-LM 2021 (Narayanan et al. 2021)"},
    {"korthikanti2022", MP_STACK_MEGATRON_2021, 0, "Megatron-LM 2022 (Korthikanti et al. 2022)"},
    /* NeMo 24.07's performance page: NeMo recipes on Megatron-Core + TE. */
    {"nemo2407", MP_STACK_NEMO, 0, "NeMo 24.07 performance recipes"},
    /* Megatron-Bridge 25.11 performance page: Megatron-Core + TE recipes. */
    {"mbridge2511", MP_STACK_MEGATRON_CORE, 0, "Megatron-Bridge 25.11 (Megatron-Core)"},
    /* Megatron-LM PR 482's memory figures (tests/data/c2_memory.csv). */
    {"megatron_pr482", MP_STACK_MEGATRON_CORE, 0, "Megatron-LM (Megatron-Core)"},
    /* torchtitan's performance pages and its 2024-12 paper tables: FSDP2's fully_shard
     * (torchtitan docs/fsdp.md), per-parameter sharding: fsdp = 2 with its ZeRO-3. */
    {"torchtitan", MP_STACK_TORCHTITAN, 2, "torchtitan (FSDP2 fully_shard)"},
    /* MosaicML's llm-foundry benchmark tables (FSDP1 FlatParameter, the default fsdp = 1). */
    {"mosaic", MP_STACK_LLM_FOUNDRY, 0, "MosaicML llm-foundry"},
};

static int push_skip(mp_validation *v, size_t cap, const char *id, const char *reason)
{
    if (v->nskips >= cap)
        return 0;
    mp_val_skip *s = &v->skips[v->nskips++];
    mp_strlcpy(s->id, id, sizeof s->id);
    mp_strlcpy(s->reason, reason, sizeof s->reason);
    /* Truncation (here or in the %.40s of a reason) can cut a UTF-8 sequence; the JSON writer
     * drops strings that are not UTF-8. */
    mp_utf8_scrub(s->id);
    mp_utf8_scrub(s->reason);
    return 1;
}

/* Add a compared row (validate_internal.h). Returns 0 (and adds nothing) when the relative error
 * is not finite; the physical ranges below (measured_range) keep every measured value away from
 * that, so this is a last guard, not a path any checked value takes. */
int mp_val_push_row(mp_validation *v, const char *id, const char *group, const char *metric,
                    double measured, double predicted, const char *assumed, const char *stack)
{
    double err = 100.0 * (predicted - measured) / measured;
    if (!isfinite(err))
        return 0;
    mp_val_row *r = &v->rows[v->nrows++];
    mp_strlcpy(r->id, id, sizeof r->id);
    mp_strlcpy(r->source_group, group, sizeof r->source_group);
    mp_strlcpy(r->metric, metric, sizeof r->metric);
    mp_strlcpy(r->assumed, assumed, sizeof r->assumed);
    r->mem_basis[0] = '\0';
    r->verdict = MP_VERDICT_FITS;
    mp_strlcpy(r->stack, stack, sizeof r->stack);
    mp_utf8_scrub(r->id);
    mp_utf8_scrub(r->source_group);
    mp_utf8_scrub(r->assumed);
    r->measured = measured;
    r->predicted = predicted;
    r->error_pct = err;
    return 1;
}

static void append(char *buf, size_t cap, const char *what)
{
    size_t n = strlen(buf);
    snprintf(buf + n, cap - n, "%s%s", n ? "; " : "", what);
}

/* One data row as the stages below read it. A stage that cannot go on writes why (the skip
 * reason, naming the column and its value) and returns non-zero. */
typedef struct {
    const char *cell[C_COUNT];
    char id[64];
    const char *group;
    char why[256];
    char assumed[256];
    const char *stack;
} row_in;

/* --- model: the dims, the MoE columns, the flags a dims-only row cannot state --- */
static int row_model(const mp_catalog *cat, row_in *r, mp_model *m)
{
    const char *const *cell = r->cell;
    memset(m, 0, sizeof *m);
    mp_strlcpy(m->key, r->id, sizeof m->key);
    mp_strlcpy(m->name, cell[C_NAME], sizeof m->name);
    struct { int col; int64_t *dst; } dims[] = {
        {C_LAYERS, &m->layers}, {C_HIDDEN, &m->hidden}, {C_HEADS, &m->heads},
        {C_FFN, &m->ffn_hidden}, {C_VOCAB, &m->vocab}, {C_SEQ, &m->seq_len}};
    for (size_t k = 0; k < sizeof dims / sizeof dims[0]; k++) {
        int st = int_cell(cell[dims[k].col], dims[k].dst);
        if (st < 0 || (st == 1 && *dims[k].dst < 1)) {
            snprintf(r->why, sizeof r->why, "%s = \"%.40s\": expected a positive integer",
                     col_names[dims[k].col], cell[dims[k].col]);
            return 1;
        }
        if (st == 0) {
            snprintf(r->why, sizeof r->why, "model dims not stated (%s empty)", col_names[dims[k].col]);
            return 1;
        }
    }
    if (int_cell(cell[C_KV], &m->kv_heads) <= 0)
        m->kv_heads = m->heads;
    int64_t x = 0;
    m->glu = int_cell(cell[C_GLU], &x) == 1 && x == 1;
    int64_t experts = 0;
    if (int_cell(cell[C_EXPERTS], &experts) == 1 && experts > 0) {
        m->moe_experts = experts;
        if (int_cell(cell[C_TOPK], &m->moe_topk) != 1 || m->moe_topk < 1) {
            snprintf(r->why, sizeof r->why,
                     "moe_topk = \"%.40s\": expected a positive integer for an MoE row", cell[C_TOPK]);
            return 1;
        }
        if (int_cell(cell[C_MOEFFN], &m->moe_ffn_hidden) != 1 || m->moe_ffn_hidden < 1)
            m->moe_ffn_hidden = m->ffn_hidden; /* full-width experts (Mixtral) */
    }
    m->vocab_pad_multiple = 1;
    m->head_dim = 0;
    const mp_model *from = infer_flags(cat, m);
    if (m->moe_experts > 0) {
        if (from) {
            char a[MP_KEY_CAP + 40];
            snprintf(a, sizeof a, "arch details of catalog %s", from->key);
            append(r->assumed, sizeof r->assumed, a);
        } else {
            append(r->assumed, sizeof r->assumed, "MoE: all layers MoE, no shared experts");
        }
    }
    int no_head_dim = m->head_dim == 0;
    if (no_head_dim)
        m->head_dim = m->hidden / m->heads;
    mp_diag md = {0};
    if (mp_model_check(m, &md) != MP_OK || (no_head_dim && m->hidden % m->heads)) {
        snprintf(r->why, sizeof r->why, "model: %.200s",
                 md.count ? md.text : "hidden not divisible by heads");
        return 1;
    }
    return 0;
}

/* --- cluster: the catalog GPU on its usual node (or gpus_per_node) --- */
static int row_cluster(const mp_catalog *cat, row_in *r, mp_cluster *cl, int64_t *ngpus)
{
    const char *const *cell = r->cell;
    int64_t gpn = 0;
    if (int_cell(cell[C_NGPUS], ngpus) != 1 || *ngpus < 1) {
        snprintf(r->why, sizeof r->why, "num_gpus = \"%.40s\": expected a positive integer",
                 cell[C_NGPUS]);
        return 1;
    }
    int gst = int_cell(cell[C_GPN], &gpn);
    if (gst == 0)
        gpn = 0; /* not stated: the GPU's usual node */
    else if (gst < 0 || gpn < 1 || gpn > (1 << 20)) {
        snprintf(r->why, sizeof r->why, "gpus_per_node = \"%.40s\": expected an integer in [1, 2^20]",
                 cell[C_GPN]);
        return 1;
    }
    /* GB200/GB300: a source's "4 GPUs per node" is the compute tray; the NVLink domain is the
     * NVL72 rack (72 GPUs on NVLink 5 switches, NVIDIA GB200 NVL72), which is the scale-up tier
     * (data/nodes.json gb200-nvl72, gb300-nvl72). */
    const mp_node *nd = mp_catalog_node_for_gpu(cat, cell[C_GPU]);
    if (nd && strstr(nd->scaleup_link, "nvl72") && gpn < nd->gpus_per_node &&
        (gpn > 0 || *ngpus % nd->gpus_per_node)) {
        /* A job of n GPUs fills racks with the largest multiple of the tray (the row's figure,
         * else 4: 18 compute trays of 4 GPUs per NVL72) that divides n, at most 72. */
        const int64_t tray = gpn > 0 ? gpn : 4;
        int64_t dom = 0;
        for (int64_t k = nd->gpus_per_node; k >= tray && !dom; k--)
            if (k % tray == 0 && *ngpus % k == 0)
                dom = k;
        if (dom > gpn) {
            char a[160];
            snprintf(a, sizeof a, "scale-up domain: NVL72 rack, %lld GPUs of it per NVLink domain%s",
                     (long long)dom, gpn > 0 ? " (gpus_per_node read as the compute tray)" : "");
            append(r->assumed, sizeof r->assumed, a);
            gpn = dom;
        }
    }
    mp_diag cd = {0};
    if (mp_cluster_from_catalog(cat, cell[C_GPU], *ngpus, (int)gpn, NULL, cl, &cd) != MP_OK) {
        snprintf(r->why, sizeof r->why, "%.250s", cd.text);
        return 1;
    }
    return 0;
}

/* Rows of a known group that ran another stack than the rest, by id: Narayanan et al. 2021
 * Table 2 compares Megatron with DeepSpeed ZeRO-3 run without model parallelism (its rows'
 * notes say so). predates_flash: the run is older than fused attention (FlashAttention, Dao et
 * al. 2022; the paper is of April 2021) while its stack's profile offers it, so the row runs
 * flash=0 and says so (issue 17: a 2021 run is never given FlashAttention silently). */
static const struct { const char *id; mp_stack_id stack; int predates_flash; } source_rows[] = {
    {"meg21_t2_1", MP_STACK_DEEPSPEED, 1}, {"meg21_t2_2", MP_STACK_DEEPSPEED, 1},
    {"meg21_t2_3", MP_STACK_DEEPSPEED, 1}, {"meg21_t2_4", MP_STACK_DEEPSPEED, 1},
    {"meg21_t2_5", MP_STACK_DEEPSPEED, 1}, {"meg21_t2_6", MP_STACK_DEEPSPEED, 1},
};

/* --- the stack: the row's column, else the row or group table, else the default (stated) --- */
static int row_stack(row_in *r, mp_plan *p)
{
    const char *col = r->cell[C_STACK];
    int fsdp = 0;
    p->stack = -1;
    if (col[0]) {
        for (int s = 0; s < MP_STACK_COUNT; s++)
            if (!strcmp(col, mp_stack_name((mp_stack_id)s)))
                p->stack = s;
        if (p->stack < 0) {
            snprintf(r->why, sizeof r->why, "stack = \"%.40s\": expected megatron-core, megatron-2021, "
                     "torchtitan, deepspeed, nemo, llm-foundry, eager or generic", col);
            return 1;
        }
    }
    for (size_t k = 0; k < sizeof source_stacks / sizeof source_stacks[0]; k++) {
        const char *g = source_stacks[k].group_prefix;
        size_t n = strlen(g);
        if (!strncmp(r->group, g, n) && (r->group[n] == '\0' || r->group[n] == '_')) {
            if (p->stack < 0)
                p->stack = source_stacks[k].stack;
            fsdp = source_stacks[k].fsdp;
        }
    }
    for (size_t k = 0; k < sizeof source_rows / sizeof source_rows[0] && !col[0]; k++)
        if (!strcmp(r->cell[C_GROUP], "megatron2021_t2") && !strcmp(r->id, source_rows[k].id)) {
            p->stack = source_rows[k].stack;
            if (source_rows[k].predates_flash && !p->flash_given) {
                p->flash = 0;
                p->flash_given = 1;
                append(r->assumed, sizeof r->assumed, "flash 0 (the run predates FlashAttention)");
            }
        }
    if (p->stack < 0) {
        p->stack = MP_STACK_DEFAULT;
        char a[96];
        snprintf(a, sizeof a, "stack %s (default: the source states none)", mp_stack_name(MP_STACK_DEFAULT));
        append(r->assumed, sizeof r->assumed, a);
    }
    p->stack_given = 1;
    r->stack = mp_stack_name((mp_stack_id)p->stack);
    if (fsdp == 2 && p->zero == 3 && p->stack == MP_STACK_TORCHTITAN)
        p->fsdp = 2;
    return 0;
}

/* Groups whose source describes its model chunks without printing the depth: Dubey et al. 2024
 * (Llama 3) Sec. 3.3.2 removes one Transformer layer from the first and the last stage, so that
 * the first model chunk of the first stage holds only the embedding and the last chunk of the
 * last stage only the output projection and the loss: one layer per chunk, and two chunks of
 * their own, v = (layers + 2) / pp (126 layers over 16 stages: v = 8). */
static const struct { const char *group; int64_t layers_per_chunk, own_chunks; const char *why; } source_chunks[] = {
    {"llama3_2024", 1, 2, "Dubey et al. 2024 Sec. 3.3.2: a layer per chunk, embedding and output layer in chunks of their own"},
};

/* Rows whose source's own launch script states the micro-batch and the interleaving depth the
 * row's cells leave empty. Narayanan et al. 2021 Table 1 (meg21_t1_*): NVIDIA/Megatron-LM
 * examples/sc21/run_table_1.sh, the script its README calls the one "used to produce the
 * results" of arXiv 2104.04473 (read at commit 79a3bb6b). Per model it sets MBS (line `mbs_line`)
 * and, in MEGATRON_EXTRA_PARAMS (line `vpp_line`), --num-layers-per-virtual-pipeline-stage L:
 * v = layers / pp / L; no such flag on a pipelined model = the 1F1B schedule (v 1); vpp 0 here:
 * the script says nothing about it (pp 1, no pipeline). A cell the row states wins. */
static const struct {
    const char *group, *id;
    int64_t mb, vpp;
    int mbs_line, vpp_line;
} source_layouts[] = {
    {"megatron2021_t1", "meg21_t1_1", 16, 0, 17, 24},  /* 1.7B: MBS=16 */
    {"megatron2021_t1", "meg21_t1_2", 16, 0, 28, 35},  /* 3.6B: MBS=16 */
    {"megatron2021_t1", "meg21_t1_3", 16, 0, 39, 46},  /* 7.5B: MBS=16 */
    {"megatron2021_t1", "meg21_t1_4", 8, 0, 50, 57},   /* 18B: MBS=8 */
    {"megatron2021_t1", "meg21_t1_5", 4, 1, 61, 68},   /* 39B: MBS=4, no flag: 1F1B */
    {"megatron2021_t1", "meg21_t1_6", 2, 3, 72, 79},   /* 76B: MBS=2, 5 layers: 60/4/5 = 3 */
    {"megatron2021_t1", "meg21_t1_7", 2, 2, 83, 90},   /* 145B: MBS=2, 5 layers: 80/8/5 = 2 */
    {"megatron2021_t1", "meg21_t1_8", 1, 2, 94, 101},  /* 310B: MBS=1, 3 layers: 96/16/3 = 2 */
    {"megatron2021_t1", "meg21_t1_9", 1, 3, 105, 112}, /* 530B: MBS=1, 1 layer: 105/35/1 = 3 */
    {"megatron2021_t1", "meg21_t1_10", 1, 1, 116, 123}, /* 1T: MBS=1, no flag: 1F1B */
};

/* --- the micro-batch and interleaving depth a row leaves empty, from its source's launch
 *     script (source_layouts), said --- */
static void row_source_layout(row_in *r, mp_plan *p)
{
    for (size_t k = 0; k < sizeof source_layouts / sizeof source_layouts[0]; k++) {
        if (strcmp(r->cell[C_GROUP], source_layouts[k].group) || strcmp(r->id, source_layouts[k].id))
            continue;
        char a[160];
        if (!p->mb && source_layouts[k].mb) {
            p->mb = source_layouts[k].mb;
            snprintf(a, sizeof a, "micro_batch %lld (Megatron-LM examples/sc21/run_table_1.sh line %d)",
                     (long long)p->mb, source_layouts[k].mbs_line);
            append(r->assumed, sizeof r->assumed, a);
        }
        if (!p->vpp && source_layouts[k].vpp) {
            p->vpp = source_layouts[k].vpp;
            snprintf(a, sizeof a, "vpp %lld (Megatron-LM examples/sc21/run_table_1.sh line %d%s)",
                     (long long)p->vpp, source_layouts[k].vpp_line,
                     p->vpp == 1 ? ": no virtual-stage flag, 1F1B" : "");
            append(r->assumed, sizeof r->assumed, a);
        }
        return;
    }
}

/* --- interleaving a row does not state: the chunks its source describes, else the stack's
 *     default depth, said --- */
static void row_interleave(row_in *r, const mp_model *m, mp_plan *p)
{
    if (p->vpp || p->pp <= 1)
        return;
    for (size_t k = 0; k < sizeof source_chunks / sizeof source_chunks[0]; k++) {
        const int64_t per = source_chunks[k].layers_per_chunk * p->pp;
        const int64_t chunks = m->layers + source_chunks[k].own_chunks;
        if (strcmp(r->cell[C_GROUP], source_chunks[k].group) || chunks % per)
            continue;
        char a[224];
        p->vpp = chunks / per;
        snprintf(a, sizeof a, "vpp %lld (%s)", (long long)p->vpp, source_chunks[k].why);
        append(r->assumed, sizeof r->assumed, a);
        return;
    }
    const mp_stack_profile *sk = mp_stack_profile_of((mp_stack_id)p->stack);
    const int64_t vmax = sk ? sk->interleave_depth : 0;
    char a[192];
    /* the largest v <= the stack's depth that divides the layers of a stage evenly */
    int64_t v = 0;
    for (int64_t k = vmax; k >= 2 && !v; k--)
        if (m->layers % (p->pp * k) == 0)
            v = k;
    if (v) {
        p->vpp = v;
        snprintf(a, sizeof a, "vpp %lld (interleaving not stated: %s's depth %lld, or the largest "
                 "below it dividing the %lld layers of a stage)", (long long)v, sk->key,
                 (long long)vmax, (long long)(m->layers / p->pp));
    } else {
        snprintf(a, sizeof a, "vpp 1 (1F1B: interleaving not stated%s)",
                 vmax > 0 ? ", and no depth of the stack's divides the layers of a stage" : "");
    }
    append(r->assumed, sizeof r->assumed, a);
}

/* --- plan: the degrees and batch columns, with stated assumptions for the missing ones --- */
static int row_plan(row_in *r, const mp_model *m, int64_t ngpus, mp_plan *p)
{
    const char *const *cell = r->cell;
    mp_plan_init_default(p);
    struct { int col; int64_t *dst; } deg[] = {
        {C_TP, &p->tp}, {C_PP, &p->pp}, {C_DP, &p->dp}, {C_CP, &p->cp}, {C_EP, &p->ep},
        {C_VPP, &p->vpp}, {C_MB, &p->mb}, {C_GB, &p->gb}};
    for (size_t k = 0; k < sizeof deg / sizeof deg[0]; k++) {
        int st = int_cell(cell[deg[k].col], deg[k].dst);
        if (st < 0 || (st == 1 && *deg[k].dst < 1)) {
            snprintf(r->why, sizeof r->why, "%s = \"%.40s\": expected a positive integer",
                     col_names[deg[k].col], cell[deg[k].col]);
            return 1;
        }
    }
    /* The step is the global batch: without it the plan would be one micro-batch per DP rank,
     * a run nobody published (a 0.016 MFU against a published 0.5), so the row is skipped. */
    if (!cell[C_GB][0]) {
        snprintf(r->why, sizeof r->why,
                 "global_batch empty: expected the global batch in sequences (the step it measures)");
        return 1;
    }
    p->seq = m->seq_len;
    row_source_layout(r, p);
    if (!p->mb) {
        p->mb = 1;
        append(r->assumed, sizeof r->assumed, "micro_batch 1");
    }
    int64_t x;
    if (int_cell(cell[C_SP], &x) == 1)
        p->sp = (int)(x != 0);
    else if (p->tp > 1)
        append(r->assumed, sizeof r->assumed, "sp on");
    if (int_cell(cell[C_ZERO], &x) == 1 && x <= 3)
        p->zero = (int)x;
    const char *rc = cell[C_RC];
    int rc_known = 0;
    for (int k = 0; k < MP_RC_COUNT; k++)
        if (!strcmp(rc, mp_recompute_name((mp_recompute)k))) {
            p->recompute = (mp_recompute)k;
            rc_known = 1;
        }
    if (!rc_known && !rc[0])
        append(r->assumed, sizeof r->assumed, "recompute none");
    else if (!rc_known) {
        snprintf(r->why, sizeof r->why, "recompute = \"%.40s\": expected none, selective, full, op or mlp", rc);
        return 1;
    }
    const char *pr = cell[C_PREC];
    if (!strcmp(pr, "fp16")) p->precision = MP_DT_FP16;
    else if (!strcmp(pr, "fp8")) p->precision = MP_DT_FP8;
    else if (!strcmp(pr, "bf16") || !pr[0]) p->precision = MP_DT_BF16;
    else if (!strcmp(pr, "tf32")) p->precision = MP_DT_TF32;
    else if (!strcmp(pr, "fp32")) p->precision = MP_DT_FP32;
    else {
        snprintf(r->why, sizeof r->why, "precision = \"%.40s\": expected bf16, fp16, fp8, tf32 or fp32", pr);
        return 1;
    }
    if (row_stack(r, p))
        return 1;
    row_interleave(r, m, p);
    mp_diag pd = {0};
    /* plan_extra (optional): plan keys the columns cannot say ("fsdp=2,opt_dtype=bf16"),
     * applied last. Separated by ';' or spaces in the CSV cell, as ',' separates cells. */
    if (cell[C_EXTRA][0]) {
        char extra[256];
        mp_strlcpy(extra, cell[C_EXTRA], sizeof extra);
        for (char *q = extra; *q; q++)
            if (*q == ';' || *q == ' ')
                *q = ',';
        if (mp_plan_parse(extra, p, &pd) != MP_OK) {
            snprintf(r->why, sizeof r->why, "plan_extra = \"%.40s\": %.180s", cell[C_EXTRA], pd.text);
            return 1;
        }
    }
    if (mp_plan_resolve(p, m, ngpus, &pd) != MP_OK) {
        snprintf(r->why, sizeof r->why, "plan cannot be formed: %.220s", pd.text);
        return 1;
    }
    return 0;
}

/* --- the measured cells and their physical ranges ---
 *
 * A measured cell that is stated must be a finite number inside the range its quantity can
 * physically take on the row's GPU, else the row is skipped naming the column and the value
 * (a NaN, an infinity, a zero, a negative number, a percentage written into a fraction column,
 * 1e-300: each would otherwise be dropped in silence or give a meaningless error_pct).
 *   utilization (measured_mfu, measured_hfu): a fraction of the dense peak, in
 *     [MP_VALIDATE_MIN_UTIL_FRAC, 1]: no GPU runs above its peak (the definition of MFU/HFU,
 *     Chowdhery et al. 2022, PaLM, App. B);
 *   TFLOP/s per GPU: the same fractions of the dense peak at the row's precision (est.peak);
 *   tokens/s per GPU and step_s: the model FLOP/s they imply with meshplan's FLOPs per token
 *     (Narayanan et al. 2021, Eq. 3) within [MP_VALIDATE_MIN_UTIL_FRAC,
 *     MP_VALIDATE_MAX_IMPLIED_PEAK_FRAC] of the peak — the upper bound above 1 because a
 *     source's FLOPs count differs from ours by up to 27% (MP_VALIDATE_FLOPS_CONVENTION_TOL);
 *   memory (measured_mem_gib): in [MP_VALIDATE_MIN_MEM_GIB, capacity / 1e9]: no run holds more
 *     than the HBM (the bound in GB, not GiB, allows a source that printed GB in a GiB column).
 */
/* 1e-4 of the peak: below any training run (the smallest MFU in runs.csv is 0.12); a value so
 * low is a unit slip (TFLOP/s written as PFLOP/s, a fraction divided by 100 twice). */
#define MP_VALIDATE_MIN_UTIL_FRAC 1e-4
#define MP_VALIDATE_MAX_IMPLIED_PEAK_FRAC 1.5
/* 0.1 GiB: a run holds at least its weights, and 0.1 GiB is a 50 M-parameter bf16 model, below
 * every model of the catalog and of the validation sets. */
#define MP_VALIDATE_MIN_MEM_GIB 0.1

/* Check the stated measured cells against their ranges (above). Returns 0, or 1 with r->why
 * naming the first cell out of range. */
static int measured_ranges(row_in *r, const mp_cluster *cl, const mp_estimate *est)
{
    const double peak = est->peak_flops_per_s;
    const double fpt = est->model_flops_per_step / est->tokens_per_step; /* FLOP per token */
    const double lo_u = MP_VALIDATE_MIN_UTIL_FRAC, hi_u = MP_VALIDATE_MAX_IMPLIED_PEAK_FRAC;
    const double n = (double)cl->num_gpus, tps = est->tokens_per_step;
    struct { int col; double lo, hi; const char *unit; } q[] = {
        {C_TFLOPS, lo_u * peak / 1e12, peak / 1e12, "TFLOP/s: 1e-4 to 1x the GPU's dense peak"},
        {C_MFU, lo_u, 1.0, "a fraction of the GPU's dense peak"},
        {C_HFU, lo_u, 1.0, "a fraction of the GPU's dense peak"},
        {C_TOK, lo_u * peak / fpt, hi_u * peak / fpt,
         "tokens/s per GPU: 1e-4 to 1.5x the GPU's dense peak at our FLOPs per token"},
        {C_STEP, tps * fpt / (n * peak * hi_u), tps * fpt / (n * peak * lo_u),
         "s: a step at 1.5x to 1e-4 of the GPU's dense peak at our FLOPs per token"},
        {C_MEM, MP_VALIDATE_MIN_MEM_GIB, cl->gpu.memory_bytes / 1e9,
         "GiB: 0.1 to the GPU's memory in GB"}};
    for (size_t k = 0; k < sizeof q / sizeof q[0]; k++) {
        const char *s = r->cell[q[k].col];
        if (!s[0])
            continue;
        char *end;
        double x = strtod(s, &end);
        while (*end == ' ')
            end++;
        if (end == s || *end || !isfinite(x) || x < q[k].lo || x > q[k].hi) {
            snprintf(r->why, sizeof r->why, "%s = \"%.40s\": expected a finite number in [%.4g, %.4g] (%s)",
                     col_names[q[k].col], s, q[k].lo, q[k].hi, q[k].unit);
            return 1;
        }
    }
    return 0;
}

/* --- metrics: the row's throughput metric (the first stated in DESIGN.md's order, or tokens/s
 * when its TFLOP/s uses another FLOPs convention) and its memory --- */
static void row_metrics(mp_validation *out, row_in *r, const mp_estimate *est)
{
    const char *const *cell = r->cell;
    const char *basis = cell[C_BASIS];
    const size_t first_row = out->nrows;
    int have_metric = 0;
    const char *bad_metric = NULL; /* a measured cell whose error overflowed */
    double meas = 0, bad_value = 0;
#define PUSH(col, metric, pred)                                                              \
    do {                                                                                     \
        if (mp_val_push_row(out, r->id, r->group, (metric), meas, (pred), r->assumed, r->stack)) \
            have_metric = 1;                                                                 \
        else if (!bad_metric) {                                                              \
            bad_metric = col_names[col];                                                     \
            bad_value = meas;                                                                \
        }                                                                                    \
    } while (0)
    /* A row's TFLOP/s is its tokens/s times its source's FLOPs per token. When it states both
     * and that FLOPs count differs from ours (another convention: causal attention, MTP layers,
     * which matrices count), the TFLOP/s would compare conventions, not predictions: then
     * tokens/s, which needs no convention, is compared. */
    double tok = 0, tfl = 0;
    int convention_differs = 0;
    if (num_cell(cell[C_TOK], &tok) == 1 && tok > 0 && num_cell(cell[C_TFLOPS], &tfl) == 1 &&
        tfl > 0 && (!strcmp(basis, "model") || !strcmp(basis, "hardware"))) {
        double ours = (!strcmp(basis, "model") ? est->model_flops_per_step : est->hardware_flops_per_step) /
                      est->tokens_per_step;
        double theirs = tfl * 1e12 / tok;
        convention_differs = fabs(ours / theirs - 1.0) > MP_VALIDATE_FLOPS_CONVENTION_TOL;
        if (convention_differs) {
            char a[96];
            snprintf(a, sizeof a, "TFLOP/s convention %.4g vs our %.4g GFLOP/token: tokens/s compared",
                     theirs / 1e9, ours / 1e9);
            append(r->assumed, sizeof r->assumed, a);
        }
    }
    if (convention_differs) {
        meas = tok;
        PUSH(C_TOK, "tokens_per_s_per_gpu", est->tokens_per_s_per_gpu);
    } else if (num_cell(cell[C_TFLOPS], &meas) == 1 && meas > 0 &&
               (!strcmp(basis, "model") || !strcmp(basis, "hardware"))) {
        int hw = !strcmp(basis, "hardware");
        PUSH(C_TFLOPS, hw ? "hardware_tflops_per_gpu" : "model_tflops_per_gpu",
             hw ? est->hardware_tflops_per_gpu : est->model_tflops_per_gpu);
    } else if (num_cell(cell[C_MFU], &meas) == 1 && meas > 0) {
        PUSH(C_MFU, "mfu", est->mfu);
    } else if (num_cell(cell[C_HFU], &meas) == 1 && meas > 0) {
        PUSH(C_HFU, "hfu", est->hfu);
    } else if (num_cell(cell[C_TOK], &meas) == 1 && meas > 0) {
        PUSH(C_TOK, "tokens_per_s_per_gpu", est->tokens_per_s_per_gpu);
    } else if (num_cell(cell[C_STEP], &meas) == 1 && meas > 0) {
        PUSH(C_STEP, "step_s", est->step_s);
    }
    /* Memory by its basis: "allocated" (torch.cuda.max_memory_allocated, Megatron's "max
     * allocated") and "active" (peak active, memory_stats; >= allocated by the blocks freed but
     * still awaiting their stream) are the peak of allocated tensors; "reserved" and "peak"
     * (torchtitan's logged peak, max_memory_reserved: torchtitan/components/metrics.py
     * DeviceMemoryMonitor) what the caching allocator holds, memory_bytes.reserved; "nvidia-smi"
     * everything the process holds, the total (the CUDA context and NCCL's buffers too). */
    if (num_cell(cell[C_MEM], &meas) == 1 && meas > 0) {
        size_t before = out->nrows;
        const char *mb = cell[C_MEMBASIS];
        PUSH(C_MEM, "mem_gib",
             (!strcmp(mb, "allocated") || !strcmp(mb, "active") ? est->memory.allocated
              : !strcmp(mb, "reserved") || !strcmp(mb, "peak")  ? est->memory.reserved
                                                                 : est->memory.total) /
                 1073741824.0);
        if (out->nrows > before)
            mp_strlcpy(out->rows[out->nrows - 1].mem_basis, cell[C_MEMBASIS],
                       sizeof out->rows[0].mem_basis);
    }
    for (size_t k = first_row; k < out->nrows; k++)
        out->rows[k].verdict = est->verdict;
#undef PUSH
    if (!have_metric && bad_metric)
        snprintf(r->why, sizeof r->why, "%s = %g: out of range (the relative error overflows)",
                 bad_metric, bad_value);
    else if (!have_metric)
        snprintf(r->why, sizeof r->why, "no measured metric in the row");
}

/* Read the header into idx (the column of each known name, -1 if absent). Returns 0, or the
 * number of problems (each named in diag). */
static int read_header(char (*fields)[MAX_FIELD], int nh, const char *origin, int idx[C_COUNT],
                       mp_diag *diag)
{
    int missing = 0;
    for (int c = 0; c < C_COUNT; c++) {
        idx[c] = -1;
        for (int i = 0; i < nh; i++)
            if (strcmp(fields[i], col_names[c]) == 0) {
                if (idx[c] >= 0) { /* which of the two would be read is a guess: refuse */
                    mp_diag_add(diag, "%s: header: column \"%s\" appears twice (columns %d and %d)",
                                origin, col_names[c], idx[c] + 1, i + 1);
                    missing++;
                }
                idx[c] = i;
            }
    }
    for (size_t k = 0; k < sizeof required_cols / sizeof required_cols[0]; k++)
        if (idx[required_cols[k]] < 0) {
            mp_diag_add(diag, "%s: header has no column \"%s\"", origin, col_names[required_cols[k]]);
            missing++;
        }
    return missing;
}

/* Predict one record (n fields) and add its rows or its skip. */
static void validate_record(const mp_catalog *cat, const mp_estimate_opts *opts,
                            char (*fields)[MAX_FIELD], int n, const int idx[C_COUNT], size_t rec,
                            size_t cap, mp_validation *out)
{
    row_in r;
    memset(&r, 0, sizeof r);
    r.stack = "";
    for (int c = 0; c < C_COUNT; c++)
        r.cell[c] = (idx[c] >= 0 && idx[c] < n) ? fields[idx[c]] : "";
    if (r.cell[C_ID][0])
        mp_strlcpy(r.id, r.cell[C_ID], sizeof r.id);
    else
        snprintf(r.id, sizeof r.id, "row%zu", rec + 2);
    r.group = r.cell[C_GROUP][0] ? r.cell[C_GROUP] : "(none)";
    mp_model m;
    mp_cluster cl;
    mp_plan p;
    int64_t ngpus = 0;
    mp_estimate est;
    int bad = row_model(cat, &r, &m) || row_cluster(cat, &r, &cl, &ngpus) ||
              row_plan(&r, &m, ngpus, &p);
    if (!bad) {
        mp_diag ed = {0};
        if (mp_estimate_plan(&m, &cl, &p, opts, &est, &ed) != MP_OK) {
            snprintf(r.why, sizeof r.why, "estimate failed: %.220s", ed.text);
            bad = 1;
        }
    }
    if (!bad && !measured_ranges(&r, &cl, &est))
        row_metrics(out, &r, &est);
    if (r.why[0])
        push_skip(out, cap, r.id, r.why);
}

mp_status mp_validate_csv(const mp_catalog *cat, const char *csv_text, size_t len,
                          const char *origin, const mp_estimate_opts *opts, mp_validation *out,
                          mp_diag *diag)
{
    memset(out, 0, sizeof *out);
    /* a NUL byte or a Latin-1 or binary file would end up cut or dropped in the report */
    if (mp_utf8_check_text(csv_text, len, origin, diag))
        return MP_ERR_PARSE;
    char(*fields)[MAX_FIELD] = malloc(MAX_COLS * sizeof *fields);
    if (!fields)
        return MP_ERR_NOMEM;
    csv_reader rd = {csv_text, csv_text + len};
    if (len >= 3 && !memcmp(csv_text, "\xEF\xBB\xBF", 3))
        rd.p += 3; /* UTF-8 byte-order mark */
    int overflow = 0;
    int nh = csv_record(&rd, fields, &overflow);
    if (nh <= 0) {
        mp_diag_add(diag, "%s: empty file or no header line: expected the runs.csv columns", origin);
        free(fields);
        return MP_ERR_PARSE;
    }
    if (mp_val_header_is_rl(fields, nh)) { /* ../shared/validation/inference/README.md, RL */
        free(fields);
        return mp_validate_rl_csv(cat, csv_text, len, origin, out, diag);
    }
    if (mp_val_header_is_infer(fields, nh)) { /* ../shared/validation/inference/README.md */
        free(fields);
        return mp_validate_infer_csv(cat, csv_text, len, origin, out, diag);
    }
    int idx[C_COUNT];
    if (read_header(fields, nh, origin, idx, diag)) {
        free(fields);
        return MP_ERR_PARSE;
    }

    /* Count records to size the arrays (two passes keep memory exact and capped). */
    size_t nrec = 0;
    for (csv_reader cnt = rd;;) {
        int n = csv_record(&cnt, fields, &overflow);
        if (n == 0)
            break;
        if (n < 0) {
            mp_diag_add(diag, "%s: record %zu: unterminated quoted field", origin, nrec + 2);
            free(fields);
            return MP_ERR_PARSE;
        }
        if (++nrec > MP_VALIDATE_MAX_ROWS) {
            mp_diag_add(diag, "%s: more than %d rows", origin, MP_VALIDATE_MAX_ROWS);
            free(fields);
            return MP_ERR_RANGE;
        }
    }
    out->rows = calloc(2 * nrec + 1, sizeof *out->rows);
    out->skips = calloc(nrec + 1, sizeof *out->skips);
    if (!out->rows || !out->skips) {
        mp_validation_free(out);
        free(fields);
        return MP_ERR_NOMEM;
    }
    for (size_t rec = 0; rec < nrec; rec++) {
        int n = csv_record(&rd, fields, &overflow);
        if (n <= 0)
            break;
        if (n == 1 && fields[0][0] == '\0')
            continue; /* blank line */
        out->ninput++;
        validate_record(cat, opts, fields, n, idx, rec, nrec + 1, out);
    }
    free(fields);
    return MP_OK;
}

void mp_validation_free(mp_validation *v)
{
    if (!v)
        return;
    free(v->rows);
    free(v->skips);
    memset(v, 0, sizeof *v);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void mp_validation_stats(const mp_validation *v, mp_val_filter filter, const char *group,
                         mp_val_stats *out)
{
    memset(out, 0, sizeof *out);
    double *e = malloc((v->nrows + 1) * sizeof *e);
    if (!e)
        return;
    size_t n = 0;
    double sum = 0;
    for (size_t i = 0; i < v->nrows; i++) {
        const mp_val_row *r = &v->rows[i];
        int mem = strcmp(r->metric, "mem_gib") == 0;
        if ((filter == MP_VAL_THROUGHPUT && mem) || (filter == MP_VAL_MEMORY && !mem))
            continue;
        if (group && strcmp(group, r->source_group) != 0)
            continue;
        double a = fabs(r->error_pct);
        e[n++] = a;
        sum += a;
        if (a > out->max_abs_error_pct)
            out->max_abs_error_pct = a;
    }
    out->n = n;
    if (n) {
        qsort(e, n, sizeof *e, cmp_double);
        out->mean_abs_error_pct = sum / n;
        out->median_abs_error_pct = n % 2 ? e[n / 2] : 0.5 * (e[n / 2 - 1] + e[n / 2]);
    }
    free(e);
}
