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
        const double mla = ((double)m->q_lora_rank + (double)m->kv_lora_rank) *
                           (h + (double)m->heads * 3.0 * (double)(m->head_dim + m->qk_rope_head_dim +
                                                                  m->qk_nope_head_dim + m->v_head_dim));
        const double per_layer = 2.0 * h * ad + 2.0 * h * kvd + 3.0 * h * f * experts + 4.0 * h + mla;
        const double total = ((double)m->layers + (double)m->mtp_layers) * per_layer +
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
    {
        /* The fields added later: non-negative, bounded, consistent. */
        struct { const char *name; int64_t v; } later[] = {
            {"q_lora_rank", m->q_lora_rank}, {"kv_lora_rank", m->kv_lora_rank},
            {"qk_rope_head_dim", m->qk_rope_head_dim}, {"qk_nope_head_dim", m->qk_nope_head_dim},
            {"v_head_dim", m->v_head_dim}, {"attn_window", m->attn_window},
            {"attn_window_layers", m->attn_window_layers}, {"moe_layer_freq", m->moe_layer_freq},
            {"mtp_layers", m->mtp_layers}, {"context_len", m->context_len}};
        for (size_t i = 0; i < sizeof later / sizeof later[0]; i++)
            if (later[i].v < 0 || later[i].v > ((int64_t)1 << 30)) {
                mp_diag_add(diag, "%s.%s = %lld: expected an integer in [0, 2^30]", k,
                            later[i].name, (long long)later[i].v);
                bad++;
            }
        if (bad)
            return MP_ERR_INPUT;
        if (m->attn_window_layers > m->layers) {
            mp_diag_add(diag, "%s.attn_window_layers = %lld: expected <= layers (%lld)", k,
                        (long long)m->attn_window_layers, (long long)m->layers);
            bad++;
        }
        if (m->mtp_layers > 64) {
            mp_diag_add(diag, "%s.mtp_layers = %lld: expected at most 64", k,
                        (long long)m->mtp_layers);
            bad++;
        }
        if (m->kv_lora_rank == 0 && (m->q_lora_rank || m->qk_rope_head_dim)) {
            mp_diag_add(diag, "%s: q_lora_rank/qk_rope_head_dim given without kv_lora_rank: "
                        "expected kv_lora_rank > 0 for multi-head latent attention", k);
            bad++;
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

int mp_model_is_moe(const mp_model *m) { return m->moe_experts > 0 && m->moe_topk > 0; }

int64_t mp_model_moe_layers_in(const mp_model *m, int64_t first, int64_t count)
{
    if (!mp_model_is_moe(m) || count <= 0)
        return 0;
    const int64_t L = m->layers, nmoe = L - (m->moe_dense_layers < L ? m->moe_dense_layers : L);
    int64_t a = first < 0 ? 0 : first, b = first + count > L ? L : first + count;
    if (b <= a)
        return 0;
    if (m->moe_layer_freq <= 1) {
        /* dense layers lead: MoE layers are [L - nmoe, L) */
        int64_t lo = L - nmoe;
        return b > lo ? b - (a > lo ? a : lo) : 0;
    }
    /* layer i is MoE iff (i+1) % k == 0 and (i+1)/k <= nmoe: in [a, b) there are
     * min(b/k, nmoe) - min(a/k, nmoe) of them. */
    const int64_t k = m->moe_layer_freq;
    int64_t hi_n = b / k, lo_n = a / k;
    if (hi_n > nmoe) hi_n = nmoe;
    if (lo_n > nmoe) lo_n = nmoe;
    return hi_n - lo_n;
}

void mp_model_attn_dims(const mp_model *m, mp_attn_dims *o)
{
    memset(o, 0, sizeof *o);
    const double h = (double)m->hidden, a = (double)m->heads;
    if (m->kv_lora_rank > 0) {
        /* DeepSeek-AI 2024 (arXiv 2412.19437) Sec. 2.1.1, eqs. (1)-(11). */
        const double nope = (double)(m->qk_nope_head_dim ? m->qk_nope_head_dim : m->head_dim);
        const double rope = (double)m->qk_rope_head_dim;
        const double v = (double)(m->v_head_dim ? m->v_head_dim : m->head_dim);
        const double ql = (double)m->q_lora_rank, kvl = (double)m->kv_lora_rank;
        o->mla = 1;
        o->qk_head = nope + rope;
        o->v_head = v;
        o->q_width = a * o->qk_head;
        o->k_width = a * o->qk_head;
        o->v_width = a * v;
        o->o_width = a * v;
        /* W_DQ h x q_lora, W_UQ/W_QR q_lora x a(nope+rope) (or W_Q h x a(nope+rope)),
         * W_DKV/W_KR h x (kv_lora + rope), W_UK/W_UV kv_lora x a(nope + v), W_O a v x h. */
        double q = ql > 0 ? h * ql + ql * o->q_width : h * o->q_width;
        double kv = h * (kvl + rope) + kvl * a * (nope + v);
        o->matmul_params = q + kv + o->o_width * h;
        /* Megatron-Core keeps the down-projections whole on every TP rank. */
        o->tp_replicated_params = (ql > 0 ? h * ql : 0.0) + h * (kvl + rope);
        o->latent_width = ql + kvl + rope;
    } else {
        const double d = (double)m->head_dim;
        o->qk_head = o->v_head = d;
        o->q_width = a * d;
        o->k_width = o->v_width = (double)m->kv_heads * d;
        o->o_width = a * d;
        /* Q: h x ad, K and V: h x kvd each, O: ad x h. */
        o->matmul_params = h * o->q_width + h * (o->k_width + o->v_width) + o->o_width * h;
    }
}

double mp_moe_dispatch_bytes_per_token(const mp_model *m, double elem_bytes)
{
    /* Each token goes to topk experts: topk copies of its h-wide hidden state (Lepikhin et al.
     * 2020, GShard Sec. 2.2; one message per (token, expert) pair in Megatron-Core's
     * all-to-all dispatcher). */
    if (!mp_model_is_moe(m))
        return 0.0;
    return (double)m->moe_topk * (double)m->hidden * elem_bytes;
}

/* Attention weights of one layer, biases and MLA's latent norms included. */
static int64_t attention_params(const mp_model *m, const mp_attn_dims *ad)
{
    int64_t attn = (int64_t)ad->matmul_params;
    if (ad->mla)
        attn += m->q_lora_rank + m->kv_lora_rank; /* RMSNorms on the two latents */
    if (m->bias)
        attn += (int64_t)(ad->q_width + ad->k_width + ad->v_width) + m->hidden;
    return attn;
}

void mp_model_params(const mp_model *m, int tp, mp_param_count *out)
{
    memset(out, 0, sizeof *out);
    const int64_t h = m->hidden;
    const int64_t V = mp_model_padded_vocab(m, tp);
    mp_attn_dims ad;
    mp_model_attn_dims(m, &ad);
    int64_t attn = attention_params(m, &ad);
    int64_t ffn = ffn_weights(m, m->ffn_hidden);
    int64_t matmul = (int64_t)ad.matmul_params + ffn;
    if (m->bias)
        ffn += (m->glu ? 2 : 1) * m->ffn_hidden + h;
    int64_t norm = m->rmsnorm ? 2 * h : 4 * h; /* two norms per layer, LayerNorm has a bias */
    out->attention_per_layer = attn;
    out->ffn_per_layer = ffn;
    out->norm_per_layer = norm;
    out->per_layer = attn + ffn + norm;
    out->matmul_per_layer = matmul;
    out->embedding = V * h + (m->position == MP_POS_LEARNED ? m->seq_len * h : 0);
    out->lm_head = m->tied_embeddings ? 0 : V * h;
    out->final_norm = m->rmsnorm ? h : 2 * h;

    /* MoE layers: attention and norms as a dense layer; the FFN replaced by E routed experts,
     * S shared experts of the same width and the router h x E (Fedus et al. 2021, Switch
     * Transformer Sec. 2.1; DeepSeek-AI 2024 Sec. 2.1.2). */
    const int64_t nmoe = mp_model_moe_layers_in(m, 0, m->layers);
    out->moe_layers = nmoe;
    out->dense_layers = m->layers - nmoe;
    int64_t act_layer_moe = 0, act_matmul_moe = 0;
    if (mp_model_is_moe(m)) {
        int64_t fe = m->moe_ffn_hidden;
        out->expert = ffn_weights(m, fe) + (m->bias ? (m->glu ? 2 : 1) * fe + h : 0);
        out->router_per_layer = h * m->moe_experts;
        out->shared_per_layer = m->moe_shared_experts * out->expert;
        out->moe_per_layer = attn + norm + out->router_per_layer + out->shared_per_layer +
                             m->moe_experts * out->expert;
        out->routed_total = nmoe * m->moe_experts * out->expert;
        act_layer_moe = attn + norm + out->router_per_layer +
                        (m->moe_topk + m->moe_shared_experts) * out->expert;
        /* The FLOP basis leaves the router out (Megatron-LM's and Megatron-Bridge's FLOP
         * formulas do; its 2*h*E FLOPs per token are < 0.5% and would make the FLOPs of a token
         * depend on how many experts it did not use). */
        act_matmul_moe = (int64_t)ad.matmul_params + (m->moe_topk + m->moe_shared_experts) * ffn_weights(m, fe);
    }
    int64_t layers_total = out->dense_layers * out->per_layer + nmoe * out->moe_per_layer;
    /* MTP module (DeepSeek-AI 2024 Sec. 2.2): two RMSNorms h, projection 2h x h, one layer of
     * the kind the stack ends with; embedding and head are shared. */
    if (m->mtp_layers > 0) {
        int last_moe = mp_model_moe_layers_in(m, m->layers - 1, 1) > 0;
        out->mtp = m->mtp_layers * (2 * h + 2 * h * h + (last_moe ? out->moe_per_layer : out->per_layer));
    }
    out->total = layers_total + out->embedding + out->lm_head + out->final_norm + out->mtp;
    out->activated_matmul_layers = out->dense_layers * matmul + nmoe * act_matmul_moe;
    out->activated = out->dense_layers * out->per_layer + nmoe * act_layer_moe + out->embedding +
                     out->lm_head + out->final_norm;
}

/* Keys one query attends to in a layer with a window w (0 = none) at sequence length s:
 * non-causal convention min(w, s) (or s); causal: (s+1)/2 without a window, else
 * w - w(w-1)/(2s) for w < s (Megatron-Bridge flop_utils, exact average of a causal window). */
static double keys_noncausal(double s, double w) { return (w > 0 && w < s) ? w : s; }
static double keys_causal(double s, double w) { return mp_attn_keys_per_query(s, w, 0.0); }

double mp_attn_keys_per_query(double s, double w, double mu)
{
    if (!(s > 0))
        return 0.0;
    const int windowed = w > 0 && w < s;
    if (!(mu > 0))
        return windowed ? w - w * (w - 1.0) / (2.0 * s) : (s + 1.0) / 2.0;
    if (!windowed)
        w = s;
    /* Poisson document boundaries (model.h): (mu/s)[w - mu(1 - e^(-w/mu)) + (s - w)(1 - e^(-w/mu))].
     * -expm1 keeps 1 - e^(-x) exact for documents much longer than the sequence. */
    const double x = w / mu, q = -expm1(-x);
    /* w - mu(1 - e^-x) = mu(x - 1 + e^-x): its series when documents are far longer than the
     * window, where the difference would cancel. */
    const double a = x < 1e-4 ? mu * x * x * (0.5 - x / 6.0) : w - mu * q;
    const double k = mu / s * (a + (s - w) * q);
    return k > 0 ? k : 0.0;
}

double mp_model_keys_per_query(const mp_model *m, int64_t seq, int64_t doc_len)
{
    if (seq <= 0 || m->layers <= 0)
        return 0.0;
    const double L = (double)m->layers, s = (double)seq, mu = (double)doc_len, w = (double)m->attn_window;
    const double Lw = m->attn_window > 0 ? (double)(m->attn_window_layers ? m->attn_window_layers : m->layers) : 0.0;
    return ((L - Lw) * mp_attn_keys_per_query(s, 0.0, mu) + Lw * mp_attn_keys_per_query(s, w, mu)) / L;
}

void mp_model_flops(const mp_model *m, int64_t seq, mp_flops *out)
{
    memset(out, 0, sizeof *out);
    const double h = (double)m->hidden, L = (double)m->layers, s = (double)seq;
    const double V = (double)mp_model_padded_vocab(m, 1);
    mp_param_count pc;
    mp_model_params(m, 1, &pc);
    mp_attn_dims ad;
    mp_model_attn_dims(m, &ad);
    /* 2 FLOPs per multiply-add per weight a token passes (Kaplan et al. 2020, Sec. 2.1); for
     * MoE layers only the activated experts (top-k routed + shared) and the router. */
    double matmul = 2.0 * (double)pc.activated_matmul_layers;
    /* QK^T and scores x V: 2*s*(q width) + 2*s*(o width) per token per layer, non-causal
     * (Narayanan et al. 2021, Sec. 5.1: the 4*s*h term of 24*h^2 + 4*s*h per layer per token);
     * windowed layers see min(w, s) keys. */
    const double Lw = m->attn_window > 0 ? (double)(m->attn_window_layers ? m->attn_window_layers : m->layers) : 0.0;
    const double w = (double)m->attn_window;
    const double per_key = 2.0 * (ad.q_width + ad.o_width);
    double attn = ((L - Lw) * keys_noncausal(s, 0) + Lw * keys_noncausal(s, w)) * per_key;
    double attn_causal = ((L - Lw) * keys_causal(s, 0) + Lw * keys_causal(s, w)) * per_key;
    /* LM head: 2 * h * V per token (Narayanan et al. 2021, the 6*h*V of backward+forward). */
    double head = 2.0 * h * V;
    if (m->mtp_layers > 0) {
        /* Each MTP module: its layer (activated weights, full attention), the 2h x h projection
         * and another LM-head pass (DeepSeek-AI 2024 Sec. 2.2; Megatron-Bridge counts it). */
        const double D = (double)m->mtp_layers;
        int last_moe = mp_model_moe_layers_in(m, m->layers - 1, 1) > 0;
        double layer_matmul = last_moe
            ? ad.matmul_params + (double)(m->moe_topk + m->moe_shared_experts) * (double)ffn_weights(m, m->moe_ffn_hidden)
            : (double)pc.matmul_per_layer;
        matmul += D * 2.0 * (layer_matmul + 2.0 * h * h);
        attn += D * keys_noncausal(s, 0) * per_key;
        attn_causal += D * keys_causal(s, 0) * per_key;
        head *= 1.0 + D;
    }
    out->fwd_matmul_per_token = matmul;
    out->fwd_attn_per_token = attn;
    out->fwd_lm_head_per_token = head;
    out->fwd_per_token = matmul + attn + head;
    /* Backward costs twice the forward (Narayanan et al. 2021 Sec. 5.1). */
    out->model_per_token = 3.0 * out->fwd_per_token;
    /* Full recompute: one more forward of every layer, not of the LM head (eq. (3), factor 4). */
    out->recompute_full_per_token = matmul + attn;
    /* Selective: only the attention core (Korthikanti et al. 2022, Sec. 5). */
    out->recompute_selective_per_token = attn;
    out->fwd_attn_causal_per_token = attn_causal;
    /* Recomputed matmuls of the per-op and MLP-only modes (model.h mp_recompute): the FFN's
     * share of the layers' matmul FLOPs, 1/3 of it (GLU up projection) or 1/2 (plain FC2) under
     * per-op SAC, with K and the output projection; MTP modules counted as layers. */
    {
        double attn_mm = 2.0 * (L + (double)m->mtp_layers) * ad.matmul_params;
        double ffn_mm = fmax(0.0, matmul - attn_mm - (m->mtp_layers > 0 ? (double)m->mtp_layers * 4.0 * h * h : 0.0));
        out->recompute_mlp_per_token = ffn_mm;
        out->recompute_op_per_token = (L + (double)m->mtp_layers) * 2.0 * (ad.k_width * h + ad.o_width * h) +
                                      ffn_mm * (m->glu ? 1.0 / 3.0 : 0.5);
    }
    /* Full-attention layers grow as s * per_key / 2 (causal); windowed ones are bounded. The
     * crossover: (L - Lw) * per_key * s / 2 + windowed = matmul. */
    double grow = (L - Lw + (double)m->mtp_layers) * per_key / 2.0;
    double fixed = Lw * keys_causal(s, w) * per_key;
    out->attn_equal_seq = grow > 0 ? fmax(0.0, (matmul - fixed) / grow) : 0.0; /* 0: never */
}

/* One layer's activations; moe selects the FFN part (see model.h). */
static void layer_activation(const mp_model *m, int64_t seq, int64_t micro_batch, int tp, int sp,
                             int cp, int flash, mp_recompute rc, int moe, int etp, double load,
                             int compiled, mp_layer_act *out)
{
    /* Each CP rank holds seq/cp tokens of every sequence (Megatron context parallelism). */
    const double s = (double)seq / (double)(cp > 0 ? cp : 1), b = (double)micro_batch;
    const double h = (double)m->hidden, a = (double)m->heads, t = (double)(tp > 0 ? tp : 1);
    const double f = (double)m->ffn_hidden;
    const double sbh = s * b * h;
    const double mask = m->dropout ? 1.0 : 0.0; /* 1 byte per element */
    mp_attn_dims ad;
    mp_model_attn_dims(m, &ad);

    /* Korthikanti et al. 2022 Sec. 4.1, tensor by tensor, 2-byte activations.
     * Parts replicated on every TP rank without SP (Table 2, the 10*s*b*h term): the two LN
     * inputs (4sbh), the QKV and FC1 inputs (LN outputs, 4sbh), the two dropout masks (2sbh).
     * MLA adds its latents, computed by the un-split down-projections: the Q latent before and
     * after its norm (2 x q_lora), the KV latent + RoPE key and the normed KV latent. */
    double replicated = 4.0 * sbh + 2.0 * sbh + 2.0 * sbh + 2.0 * mask * sbh;
    if (ad.mla)
        replicated += 2.0 * s * b * (2.0 * (double)m->q_lora_rank + 2.0 * (double)m->kv_lora_rank +
                                     (double)m->qk_rope_head_dim);
    /* Parts sharded by TP: Q, K and V (2 s b x their widths), output-projection input
     * (2 s b ad); FFN: activation input and FC2 input (2 s b f each; GLU keeps gate and up: an
     * extra 2 s b f). Korthikanti: 2+2+2+2 (=8sbh for Q,K,V,proj) + 8+8 sbh for 4h GELU in/out. */
    double sharded = 2.0 * s * b * (ad.q_width + ad.k_width + ad.v_width + ad.o_width);
    double moe_rank = 0.0; /* MoE part already per GPU (its own split) */
    if (!moe) {
        sharded += (m->glu ? 6.0 : 4.0) * s * b * f;
    } else {
        const double fe = (double)m->moe_ffn_hidden, k = (double)m->moe_topk;
        const double e_tp = (double)(etp > 0 ? etp : 1);
        /* Routed copies on this GPU: tokens of this TP rank's sequence shard times top-k,
         * gathered over the expert-TP group, times the busiest GPU's load factor. */
        const double R = s * b / t * k * e_tp * (load > 1.0 ? load : 1.0);
        moe_rank = R * (2.0 * h + 2.0 * (m->glu ? 2.0 : 1.0) * fe / e_tp + 2.0 * fe / e_tp + 2.0 * h);
        /* Router probabilities, fp32, on the sequence shard (MoE needs SP with TP). */
        moe_rank += 4.0 * (double)m->moe_experts * s * b / (sp ? t : 1.0);
        /* Shared experts: a dense FFN of width shared * fe, split by TP. */
        sharded += (m->glu ? 6.0 : 4.0) * s * b * (double)m->moe_shared_experts * fe;
    }
    /* Attention scores (s x s per head). Without fused attention: softmax output 2*a*s^2*b and,
     * with dropout, its mask a*s^2*b and output 2*a*s^2*b (Korthikanti's 5*a*s^2*b). With fused
     * attention only the fp32 row statistics (log-sum-exp) are kept: 4*a*s*b (Dao 2022 Alg. 2). */
    double s2 = 0.0, stats = 0.0;
    if (flash)
        stats = 4.0 * a * s * b;
    else
        s2 = (2.0 + 3.0 * mask) * a * s * s * b;

    /* torch.compile of the block (bit 1 of compiled): AOTAutograd's min-cut partitioner
     * (torch/_functorch/partitioners.py, min_cut_rematerialization_partition; docs: "Min-cut
     * rematerialization", Chillee 2022 dev-discuss post) recomputes in backward every output of
     * a fusible pointwise or reduction op whose inputs it already saves, instead of saving it;
     * it still saves matmul and attention-kernel inputs/outputs it cannot recompute cheaply.
     * Of the tensors above that drops: the two norm outputs (4sbh: recomputed from the saved
     * norm inputs), the two dropout masks (Inductor regenerates them from the Philox seed), the
     * MLA latents' norm outputs (2 s b (q_lora + kv_lora)), the FC2 input (2 s b f: GELU output
     * or silu(gate)*up, recomputed from the FC1/gate and up outputs it keeps; routed experts
     * 2 fe/etp per copy, shared experts 2 s b shared*fe) and, without fused attention, the
     * attention dropout mask and output (3 a s^2 b: recomputed from the softmax output). Q, K, V
     * (post-RoPE SDPA inputs), the SDPA output and the matmul outputs stay saved. */
    if (compiled & 1) {
        replicated -= 4.0 * sbh + 2.0 * mask * sbh;
        if (ad.mla)
            replicated -= 2.0 * s * b * ((double)m->q_lora_rank + (double)m->kv_lora_rank);
        if (!moe) {
            sharded -= 2.0 * s * b * f;
        } else {
            const double fe = (double)m->moe_ffn_hidden, k = (double)m->moe_topk;
            const double e_tp = (double)(etp > 0 ? etp : 1);
            const double R = s * b / t * k * e_tp * (load > 1.0 ? load : 1.0);
            moe_rank -= R * 2.0 * fe / e_tp;
            sharded -= 2.0 * s * b * (double)m->moe_shared_experts * fe;
        }
        s2 -= 3.0 * mask * a * s * s * b * (flash ? 0.0 : 1.0);
    }
    double per_rank_sharded = (sharded + s2 + stats) / t;
    double per_rank_repl = sp ? replicated / t : replicated;
    double full = per_rank_repl + per_rank_sharded + moe_rank;

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
    case MP_RC_OP: {
        /* torchtitan's per-op selective AC (torchtitan/distributed/activation_checkpoint.py:
         * _save_list holds aten.mm, the SDPA kernels and the TP reduce-scatter; its policy saves
         * every mm except the 2nd, 4th, ... of the layer). The checkpointed layer keeps its input
         * (2 s b h, sequence-sharded with SP) and the saved outputs: of the mms in forward order
         * Q (1st) and V (3rd), FC1/gate (5th) and FC2 (7th, GLU) or FC1 (5th, plain MLP); K, the
         * output projection and the GLU's up projection (2nd, 4th, 6th) are recomputed; SDPA's
         * output (2 s b o_width) and fp32 log-sum-exp (4 a s b); with TP the two
         * reduce-scatter outputs (2 s b h / t each). Column-parallel outputs are split by TP; a
         * row-parallel one (FC2) is a full-width partial sum before its reduce-scatter. MoE
         * layers: the attention part as here, the expert part keeps every other of its matmul
         * outputs, half of its stored bytes (an approximation, docs/memory.md). */
        double in = sp ? 2.0 * sbh / t : 2.0 * sbh;
        double attn = 2.0 * s * b * (ad.q_width + ad.v_width + ad.o_width) / t + 4.0 * a * s * b / t;
        double ffn = 0.0;
        if (!moe)
            ffn = m->glu ? 2.0 * s * b * f / t + 2.0 * sbh : 2.0 * s * b * f / t;
        else
            ffn = 0.5 * moe_rank + 2.0 * s * b * (double)m->moe_shared_experts * (double)m->moe_ffn_hidden / t;
        double rs = t > 1.0 && sp ? 2.0 * 2.0 * sbh / t : 0.0;
        out->stored_bytes = fmin(full, in + attn + ffn + rs);
        out->attention_s2_bytes = 0;
        break;
    }
    case MP_RC_MLP: {
        /* MLP-only checkpointing (Megatron-Core --recompute-modules mlp): the MLP block keeps
         * its input and drops what is inside it: the pre-MLP norm's output (2 s b h, /t with SP)
         * and the sharded FFN tensors (FC1 input aside, 4 or 6 s b f / t; MoE: the routed part). */
        double ffn_in = (compiled & 1) ? 0.0 : sp ? 2.0 * sbh / t : 2.0 * sbh; /* compiled: dropped above */
        double inside = !moe ? (m->glu ? 6.0 : 4.0) * s * b * f / t - ((compiled & 1) ? 2.0 * s * b * f / t : 0.0)
                             : moe_rank;
        out->stored_bytes = fmax(0.0, full - ffn_in - inside);
        out->attention_s2_bytes = s2 / t;
        break;
    }
    default:
        /* Full recompute stores only the layer input: 2 s b h (/t with SP) (Table 2). */
        out->stored_bytes = sp ? 2.0 * sbh / t : 2.0 * sbh;
        out->attention_s2_bytes = 0;
        break;
    }
}

void mp_layer_activation(const mp_model *m, int64_t seq, int64_t micro_batch, int tp, int sp,
                         int cp, int flash, mp_recompute rc, mp_layer_act *out)
{
    layer_activation(m, seq, micro_batch, tp, sp, cp, flash, rc, 0, 1, 1.0, 0, out);
}

void mp_moe_layer_activation(const mp_model *m, int64_t seq, int64_t micro_batch, int tp, int sp,
                             int cp, int etp, int flash, mp_recompute rc, double load,
                             mp_layer_act *out)
{
    layer_activation(m, seq, micro_batch, tp, sp, cp, flash, rc, mp_model_is_moe(m), etp, load, 0, out);
}

void mp_layer_activation_compiled(const mp_model *m, int64_t seq, int64_t micro_batch, int tp, int sp,
                                  int cp, int etp, int flash, mp_recompute rc, int moe, double load,
                                  int compiled, mp_layer_act *out)
{
    layer_activation(m, seq, micro_batch, tp, sp, cp, flash, rc, moe && mp_model_is_moe(m), etp, load,
                     compiled, out);
}
