/* src/model/model.c — parameter counts, FLOPs per token and activation bytes per layer of a
 * decoder-only transformer. Pure functions; sources in meshplan/model.h and inline. */
#include <math.h>
#include <string.h>

#include "meshplan/model.h"

#define MP_DIM_MAX ((int64_t)1 << 40)
#define MP_LAYERS_MAX ((int64_t)1 << 24)

mp_status mp_model_check(const mp_model *m, mp_diag *diag)
{
    int bad = 0;
    const char *k = m->key[0] ? m->key : "model";
#define POS(field)                                                                          \
    if (m->field < 1 || m->field > MP_DIM_MAX) {                                            \
        mp_diag_add(diag, "%s.%s = %lld: expected an integer in [1, 2^40]", k, #field,      \
                    (long long)m->field);                                                   \
        bad++;                                                                              \
    }
    POS(layers) POS(hidden) POS(heads) POS(kv_heads) POS(head_dim) POS(ffn_hidden) POS(vocab)
    POS(vocab_pad_multiple) POS(seq_len)
#undef POS
    if (bad)
        return MP_ERR_INPUT;
    if (m->layers > MP_LAYERS_MAX) {
        /* Layer counts are per-stage ints in mp_estimate; no model has more than a few hundred. */
        mp_diag_add(diag, "%s.layers = %lld: expected at most 2^24 (16777216)", k,
                    (long long)m->layers);
        return MP_ERR_INPUT;
    }
    if (m->vocab_pad_multiple > 65536) {
        mp_diag_add(diag, "%s.vocab_pad_multiple = %lld: expected at most 65536", k,
                    (long long)m->vocab_pad_multiple);
        return MP_ERR_INPUT;
    }
    {
        /* Bound the size in double arithmetic so the int64 parameter counts cannot wrap. */
        const double h = (double)m->hidden, ad = (double)m->heads * (double)m->head_dim,
                     kvd = (double)m->kv_heads * (double)m->head_dim;
        const double f = (double)(m->ffn_hidden > m->moe_ffn_hidden ? m->ffn_hidden : m->moe_ffn_hidden);
        const double experts = m->moe_experts > 0 ? (double)m->moe_experts + (double)m->moe_shared_experts : 1.0;
        const double per_layer = 2.0 * h * ad + 2.0 * h * kvd + 3.0 * h * f * experts + 4.0 * h;
        const double total = (double)m->layers * per_layer +
                             2.0 * ((double)m->vocab + (double)m->vocab_pad_multiple * 65536.0) * h +
                             (double)m->seq_len * h;
        if (!(total <= 1e18) || !(ad <= 1e15) || !(kvd <= 1e15)) {
            mp_diag_add(diag, "%s: layers %lld, hidden %lld, heads %lld x head_dim %lld, ffn_hidden %lld, "
                        "vocab %lld: about %.3g parameters: expected at most 1e18", k,
                        (long long)m->layers, (long long)m->hidden, (long long)m->heads,
                        (long long)m->head_dim, (long long)m->ffn_hidden, (long long)m->vocab, total);
            return MP_ERR_INPUT;
        }
    }
    if (m->heads % m->kv_heads != 0) {
        mp_diag_add(diag, "%s.kv_heads = %lld: must divide heads (%lld)", k, (long long)m->kv_heads,
                    (long long)m->heads);
        bad++;
    }
    if (m->moe_experts < 0 || m->moe_topk < 0 || m->moe_ffn_hidden < 0 || m->moe_shared_experts < 0 ||
        m->moe_dense_layers < 0) {
        mp_diag_add(diag, "%s: MoE counts must be >= 0", k);
        bad++;
    } else if (m->moe_experts > 0) {
        if (m->moe_topk < 1 || m->moe_topk > m->moe_experts) {
            mp_diag_add(diag, "%s.moe_topk = %lld: expected 1..moe_experts (%lld)", k,
                        (long long)m->moe_topk, (long long)m->moe_experts);
            bad++;
        }
        if (m->moe_ffn_hidden < 1) {
            mp_diag_add(diag, "%s.moe_ffn_hidden = %lld: expected >= 1 for an MoE model", k,
                        (long long)m->moe_ffn_hidden);
            bad++;
        }
        if (m->moe_dense_layers > m->layers) {
            mp_diag_add(diag, "%s.moe_dense_layers = %lld: expected <= layers (%lld)", k,
                        (long long)m->moe_dense_layers, (long long)m->layers);
            bad++;
        }
    }
    return bad ? MP_ERR_INPUT : MP_OK;
}

int64_t mp_model_padded_vocab(const mp_model *m, int tp)
{
    /* Megatron-LM pads the vocabulary to a multiple of make-vocab-size-divisible-by * tp
     * (megatron/training/tokenizer: _vocab_size_with_padding). */
    int64_t mult = m->vocab_pad_multiple * (m->vocab_pad_multiple > 1 ? (int64_t)tp : 1);
    if (mult < 1)
        mult = 1;
    return (m->vocab + mult - 1) / mult * mult;
}

/* FFN weights of one layer: (3 with GLU, else 2) * h * f. */
static int64_t ffn_weights(const mp_model *m, int64_t f) { return (m->glu ? 3 : 2) * m->hidden * f; }

void mp_model_params(const mp_model *m, int tp, mp_param_count *out)
{
    memset(out, 0, sizeof *out);
    const int64_t h = m->hidden, ad = m->heads * m->head_dim, kvd = m->kv_heads * m->head_dim;
    const int64_t V = mp_model_padded_vocab(m, tp);
    /* Q: h x ad, K and V: h x kvd each, O: ad x h. */
    int64_t attn = h * ad + 2 * h * kvd + ad * h;
    int64_t ffn = ffn_weights(m, m->ffn_hidden);
    int64_t matmul = attn + ffn;
    if (m->bias) {
        attn += ad + 2 * kvd + h;
        ffn += (m->glu ? 2 : 1) * m->ffn_hidden + h;
    }
    int64_t norm = m->rmsnorm ? 2 * h : 4 * h; /* two norms per layer, LayerNorm has a bias */
    out->attention_per_layer = attn;
    out->ffn_per_layer = ffn;
    out->norm_per_layer = norm;
    out->per_layer = attn + ffn + norm;
    out->matmul_per_layer = matmul;
    out->embedding = V * h + (m->position == MP_POS_LEARNED ? m->seq_len * h : 0);
    out->lm_head = m->tied_embeddings ? 0 : V * h;
    out->final_norm = m->rmsnorm ? h : 2 * h;
    out->total = m->layers * out->per_layer + out->embedding + out->lm_head + out->final_norm;
}

void mp_model_flops(const mp_model *m, int64_t seq, mp_flops *out)
{
    memset(out, 0, sizeof *out);
    const double h = (double)m->hidden, L = (double)m->layers, s = (double)seq;
    const double ad = (double)(m->heads * m->head_dim), kvd = (double)(m->kv_heads * m->head_dim);
    const double V = (double)mp_model_padded_vocab(m, 1);
    /* 2 FLOPs per multiply-add per weight (Kaplan et al. 2020, Sec. 2.1). */
    double matmul_layer = 2.0 * (h * ad + 2 * h * kvd + ad * h) + 2.0 * (double)ffn_weights(m, m->ffn_hidden);
    out->fwd_matmul_per_token = L * matmul_layer;
    /* QK^T and scores x V: 2 * 2 * s * ad per token per layer, non-causal (Narayanan et al.
     * 2021, Sec. 5.1: the 4*s*h term of 24*h^2 + 4*s*h per layer per token). */
    out->fwd_attn_per_token = L * 4.0 * s * ad;
    /* LM head: 2 * h * V per token (Narayanan et al. 2021, the 6*h*V of backward+forward). */
    out->fwd_lm_head_per_token = 2.0 * h * V;
    out->fwd_per_token = out->fwd_matmul_per_token + out->fwd_attn_per_token + out->fwd_lm_head_per_token;
    /* Backward costs twice the forward (Narayanan et al. 2021 Sec. 5.1). */
    out->model_per_token = 3.0 * out->fwd_per_token;
    /* Full recompute: one more forward of every layer, not of the LM head (eq. (3), factor 4). */
    out->recompute_full_per_token = out->fwd_matmul_per_token + out->fwd_attn_per_token;
    /* Selective: only the attention core (Korthikanti et al. 2022, Sec. 5). */
    out->recompute_selective_per_token = out->fwd_attn_per_token;
}

void mp_layer_activation(const mp_model *m, int64_t seq, int64_t micro_batch, int tp, int sp,
                         int cp, int flash, mp_recompute rc, mp_layer_act *out)
{
    /* Each CP rank holds seq/cp tokens of every sequence (Megatron context parallelism). */
    const double s = (double)seq / (double)(cp > 0 ? cp : 1), b = (double)micro_batch;
    const double h = (double)m->hidden, a = (double)m->heads, t = (double)(tp > 0 ? tp : 1);
    const double ad = (double)(m->heads * m->head_dim), kvd = (double)(m->kv_heads * m->head_dim);
    const double f = (double)m->ffn_hidden;
    const double sbh = s * b * h;
    const double mask = m->dropout ? 1.0 : 0.0; /* 1 byte per element */

    /* Korthikanti et al. 2022 Sec. 4.1, tensor by tensor, 2-byte activations.
     * Parts replicated on every TP rank without SP (Table 2, the 10*s*b*h term): the two LN
     * inputs (4sbh), the QKV and FC1 inputs (LN outputs, 4sbh), the two dropout masks (2sbh). */
    double replicated = 4.0 * sbh + 2.0 * sbh + 2.0 * sbh + 2.0 * mask * sbh;
    /* Parts sharded by TP: Q (2 s b ad), K and V (2 s b kvd each), output-projection input
     * (2 s b ad); FFN: activation input and FC2 input (2 s b f each; GLU keeps gate and up: an
     * extra 2 s b f). Korthikanti: 2+2+2+2 (=8sbh for Q,K,V,proj) + 8+8 sbh for 4h GELU in/out. */
    double sharded = 2.0 * s * b * ad + 4.0 * s * b * kvd + 2.0 * s * b * ad +
                     (m->glu ? 6.0 : 4.0) * s * b * f;
    /* Attention scores (s x s per head). Without fused attention: softmax output 2*a*s^2*b and,
     * with dropout, its mask a*s^2*b and output 2*a*s^2*b (Korthikanti's 5*a*s^2*b). With fused
     * attention only the fp32 row statistics (log-sum-exp) are kept: 4*a*s*b (Dao 2022 Alg. 2). */
    double s2 = 0.0, stats = 0.0;
    if (flash)
        stats = 4.0 * a * s * b;
    else
        s2 = (2.0 + 3.0 * mask) * a * s * s * b;

    double per_rank_sharded = (sharded + s2 + stats) / t;
    double per_rank_repl = sp ? replicated / t : replicated;
    double full = per_rank_repl + per_rank_sharded;

    out->working_bytes = full;
    out->attention_s2_bytes = s2 / t;
    switch (rc) {
    case MP_RC_NONE:
        out->stored_bytes = full;
        break;
    case MP_RC_SELECTIVE:
        /* Selective recompute re-runs the attention core and drops its s^2 tensors
         * (Korthikanti et al. Sec. 5, Table 2 row "selective": 34 s b h / t with SP). With fused
         * attention there are none, so it saves ~nothing (case C3). */
        out->stored_bytes = full - s2 / t;
        out->attention_s2_bytes = 0;
        break;
    default:
        /* Full recompute stores only the layer input: 2 s b h (/t with SP) (Table 2). */
        out->stored_bytes = sp ? 2.0 * sbh / t : 2.0 * sbh;
        out->attention_s2_bytes = 0;
        break;
    }
}
