/* src/estimate/memory_states.c — what the model's states weigh on a GPU (and on the host, with
 * offload) and what the optimizer step costs in time, for every optimizer, state dtype, master
 * weights on/off, training dtype, fine-tuning mode and offload target. The layer matrices and
 * adapter sizes come from the workload (src/workload/finetune.c).
 *
 * Bytes per trained parameter (before ZeRO divides the sharded parts by the shard group):
 *   weights   2 in 16-bit training, 4 in fp32/tf32;
 *   gradients ZeRO 0/1: fp32 main gradients, 4 (Megatron-LM's main_grad; 2 without master
 *             weights, "pure bf16", torchtitan/FSDP mixed-precision docs); ZeRO 2/3: the 16-bit
 *             gradient partition (Rajbhandari et al. 2020, Sec. 3 / Fig. 1); fp32 training 4;
 *   master    fp32 master weights, 4, in 16-bit training with master_weights=1;
 *   states    per optimizer (state_bytes), AdamW's two fp32 moments 8 by default.
 * The default (adamw, fp32 states, master weights, bf16) is 2 + 4 + 12 = 18 at ZeRO 0 and
 * 2 + 2 + 12 = 16 at ZeRO 2/3: the figures memory.c had before this file.
 *
 * Fine-tuning: the frozen base holds its weights only (no gradients, no states): 16-bit with
 * LoRA, NF4 with QLoRA (MP_NF4_BYTES_PER_PARAM on the linear layers; the embedding and the LM
 * head stay 16-bit: bitsandbytes quantises nn.Linear modules and transformers keeps the output
 * head unquantised, llm_int8_skip_modules / get_keys_to_not_convert). The adapters are trained
 * in fp32 (PEFT's autocast_adapter_dtype = True, the default since PEFT 0.12, keeps adapter
 * weights fp32 when the base is 16-bit): 4 bytes weight + 4 gradient + the optimizer's states,
 * no separate master copy.
 *
 * Offload (ZeRO-Offload, Ren et al. 2021, Sec. 4 and Fig. 2; ZeRO-Infinity, Rajbhandari et al.
 * 2021): offload=optimizer moves the fp32 master weights, the optimizer states and an fp32
 * gradient partition (4 bytes per parameter) to the host and runs the update there; the GPU
 * keeps the 16-bit weights and 16-bit gradients. offload=params (ZeRO-3) moves the 16-bit
 * parameter partitions to the host; each gather fetches them over PCIe. With offload_device=nvme
 * those bytes live on NVMe and the host keeps DeepSpeed's default swap buffers. */
#include <math.h>
#include <string.h>

#include "memory_states.h"

/* Host-side rates (per node; a GPU gets its share). All ASSUMED where no measurement is
 * catalogued, each with its reasoning:
 * - host DRAM bandwidth a multi-threaded CPU Adam sustains: 200 GB/s per node, half of a DGX
 *   A100's peak (2 x AMD EPYC 7742, 16 channels of DDR4-3200 = 409.6 GB/s; DGX A100 datasheet),
 *   for a streaming update across two NUMA domains. CPU Adam is memory-bound: it reads and
 *   writes the fp32 states as the GPU version does (the same bytes per parameter, below).
 * - NVMe: 25 GB/s per node, 8 PCIe 4 NVMe drives at ~3.2 GB/s each (DGX A100: 8 x 3.84 TB
 *   U.2), the aggregate ZeRO-Infinity's design assumes per DGX-2 node (Sec. 3).
 * - GPU <-> host: the GPU's PCIe x16 link (PCIe 4: 31.5 GB/s, PCIe 5: 63 GB/s per direction;
 *   NVLink-C2C on Grace parts: 450 GB/s per direction, NVIDIA GH200 datasheet) at 0.8 of it
 *   (the catalog's pcie efficiency_frac); in 8-GPU nodes two GPUs share a PCIe switch's x16
 *   uplink to the CPU (DGX A100 / DGX H100 system topology: 4 switches, 2 GPUs each). */
#define MP_HOST_MEM_BPS_PER_NODE 2.0e11
#define MP_NVME_BPS_PER_NODE 2.5e10
#define MP_PCIE_EFF_FRAC 0.8

/* DeepSpeed's default swap buffers when offloading to NVMe (DeepSpeed config docs,
 * offload_param / offload_optimizer: buffer_count 5 and 4, buffer_size 1e8 elements), in
 * 16-bit for parameters and fp32 for optimizer states, pinned in host RAM per GPU. */
#define MP_NVME_PARAM_BUFFER_BYTES (5.0 * 1e8 * 2.0)
#define MP_NVME_OPTIM_BUFFER_BYTES (4.0 * 1e8 * 4.0)

/* 8-bit Adam: two moments quantised block-wise, 1 byte each, plus one fp32 absmax per block of
 * 2048 values per moment (Dettmers et al. 2021, "8-bit Optimizers via Block-wise
 * Quantization", Sec. 2; bitsandbytes' blocksize 2048). */
#define MP_ADAM8BIT_BYTES (2.0 + 2.0 * 4.0 / 2048.0)

/* Newton-Schulz iterations of Muon (Jordan et al. 2024, the quintic iteration run 5 times; the
 * same in Moonlight, Liu et al. 2025 "Muon is Scalable for LLM Training"). */
#define MP_MUON_NS_STEPS 5.0

static int fp32_training(const mp_plan *p)
{
    return p->precision == MP_DT_FP32 || p->precision == MP_DT_TF32;
}

/* AdamW-class moment bytes per parameter in the state dtype: 4 each in fp32, 2 in bf16. */
static double moment_bytes(const mp_plan *p) { return p->opt_dtype == 1 ? 2.0 : 4.0; }

/* Optimizer-state bytes of the matrices mx[0..n) and of nonmat other parameters (embedding,
 * head, norms), per optimizer. */
static double state_bytes(const mp_plan *p, const mp_wl_matrix *mx, int n, double nonmat)
{
    const double mb = moment_bytes(p);
    double mat = 0.0, fac = 0.0;
    for (int i = 0; i < n; i++) {
        mat += mx[i].count * mx[i].d_in * mx[i].d_out;
        /* Adafactor: a row and a column accumulator per matrix (Shazeer & Stern 2018, Sec. 3:
         * the factored second moment R (n) and C (m)), no first moment (beta1 = 0, the paper's
         * and Hugging Face's default) */
        fac += mx[i].count * (mx[i].d_in + mx[i].d_out);
    }
    switch ((mp_optimizer)p->optimizer) {
    case MP_OPT_ADAM8BIT: return MP_ADAM8BIT_BYTES * (mat + nonmat);
    /* vectors (and the embedding, whose factors are negligible beside it) keep a full second
     * moment in Adafactor; counted as factored here only for matrices */
    case MP_OPT_ADAFACTOR: return mb * (fac + nonmat);
    /* SGD with momentum: one buffer (PyTorch SGD momentum_buffer) */
    case MP_OPT_SGD: return mb * (mat + nonmat);
    /* Muon: one momentum buffer on the hidden matrices; the embedding, head and norms use AdamW
     * (Jordan et al. 2024; Liu et al. 2025 Sec. 2.2) */
    case MP_OPT_MUON: return mb * mat + 2.0 * mb * nonmat;
    default: return 2.0 * mb * (mat + nonmat);
    }
}

/* State bytes per parameter of a stage's trained parameters (full training): the layers'
 * matrices by kind, the embedding/head as non-matrices. For AdamW, 8-bit Adam and SGD this is a
 * constant per parameter (no per-stage sums: the default's figures stay bit for bit). */
static double states_per_param(const mp_workload *w, const mp_model *m, const mp_plan *p,
                               const mp_wl_stage *st)
{
    const double mb = moment_bytes(p);
    switch ((mp_optimizer)p->optimizer) {
    case MP_OPT_ADAM8BIT: return MP_ADAM8BIT_BYTES;
    case MP_OPT_SGD: return mb;
    case MP_OPT_ADAFACTOR:
    case MP_OPT_MUON: break;
    default: return 2.0 * mb;
    }
    mp_wl_matrix dm[12], mm[12];
    const int nd = mp_wl_layer_matrices(w, m, 0, dm);
    const int nm = w->moe ? mp_wl_layer_matrices(w, m, 1, mm) : 0;
    const double all = st->params + st->expert_params;
    if (!(all > 0))
        return 0.0;
    double mat = 0.0; /* the layers' matrix params; the rest (embedding, head, norms) nonmat */
    for (int i = 0; i < nd; i++)
        mat += st->n[MP_LK_DENSE] * dm[i].count * dm[i].d_in * dm[i].d_out;
    for (int i = 0; i < nm; i++)
        mat += st->n[MP_LK_MOE] * mm[i].count * mm[i].d_in * mm[i].d_out;
    const double nonmat = fmax(0.0, all - mat);
    double s = 0.0;
    /* the per-layer sums scaled by the layer counts (state_bytes is linear in the counts) */
    s += st->n[MP_LK_DENSE] * state_bytes(p, dm, nd, 0.0);
    s += st->n[MP_LK_MOE] * state_bytes(p, mm, nm, 0.0);
    s += state_bytes(p, NULL, 0, nonmat);
    return s / all;
}

/* Bytes per parameter of one class of trained parameters by ZeRO stage. */
typedef struct {
    double weights, grads, optim;
} bytes_per_param;

static void class_bytes(const mp_plan *p, double wB, double g01, double optim, double shard,
                        bytes_per_param *b)
{
    switch (p->zero) {
    case 0: b->weights = wB; b->grads = g01; b->optim = optim; break;
    case 1: b->weights = wB; b->grads = g01; b->optim = optim / shard; break;
    case 2: b->weights = wB; b->grads = wB / shard; b->optim = optim / shard; break;
    default: b->weights = wB / shard; b->grads = wB / shard; b->optim = optim / shard; break;
    }
}

/* Full training: every parameter trained. */
static void full_states(const mp_workload *w, const mp_model *m, const mp_plan *p,
                        const mp_wl_stage *st, mp_stage_states *o)
{
    const int f32 = fp32_training(p);
    const double wB = f32 ? 4.0 : 2.0;
    const double master = (f32 || p->no_master) ? 0.0 : 4.0;
    const double g01 = f32 ? 4.0 : (p->no_master ? 2.0 : 4.0);
    o->state_bytes_per_param = states_per_param(w, m, p, st);
    o->master_bytes_per_param = master;
    const double optim = o->state_bytes_per_param + master;
    bytes_per_param bd, be;
    class_bytes(p, wB, g01, optim, w->shard, &bd);
    class_bytes(p, wB, g01, optim, w->expert_shard, &be);
    const double dp = st->params, ep = st->expert_params;
    o->weights = bd.weights * dp + be.weights * ep;
    o->gradients = bd.grads * dp + be.grads * ep;
    o->optimizer = bd.optim * dp + be.optim * ep;
    o->trainable_params = dp + ep;
    o->gather_bytes_per_param = wB;
    o->grad_buffer_bytes_per_param = wB;
    if (p->optimizer == MP_OPT_MUON) {
        /* Newton-Schulz on the largest matrix, whole (Moonlight's distributed Muon gathers the
         * momentum partition into the full matrix first, Liu et al. 2025 Sec. 2.3): the
         * gathered fp32 momentum m x n, X in bf16 (m x n), A = X X^T and B (m x m each, bf16),
         * m <= n: 6 m n + 4 m^2 bytes. */
        mp_wl_matrix mx[12];
        const int n = mp_wl_layer_matrices(w, m, w->moe && st->n[MP_LK_MOE] > 0, mx);
        for (int i = 0; i < n; i++) {
            double a = fmin(mx[i].d_in, mx[i].d_out), b = fmax(mx[i].d_in, mx[i].d_out);
            o->step_transient_bytes = fmax(o->step_transient_bytes, 6.0 * a * b + 4.0 * a * a);
        }
    }
}

/* LoRA / QLoRA: a frozen base and fp32 adapters. */
static void lora_states(const mp_workload *w, const mp_model *m, const mp_plan *p,
                        const mp_wl_stage *st, mp_stage_states *o)
{
    const mp_wl_layer *d = &w->layer[MP_LK_DENSE], *mo = &w->layer[MP_LK_MOE];
    const double A = st->n[MP_LK_DENSE] * d->adapter_params + st->n[MP_LK_MOE] * mo->adapter_params;
    const double base_lin = fmax(0.0, st->params - st->nonlinear_params);
    const double wB = fp32_training(p) ? 4.0 : 2.0;
    const double z3 = p->zero == 3 ? 1.0 : 0.0;
    const double sd = z3 ? w->shard : 1.0, se = z3 ? w->expert_shard : 1.0;
    if (w->qlora)
        o->weights = (MP_NF4_BYTES_PER_PARAM * base_lin + 2.0 * st->nonlinear_params) / sd +
                     MP_NF4_BYTES_PER_PARAM * st->expert_params / se;
    else
        o->weights = wB * st->params / sd + wB * st->expert_params / se;
    /* the adapters' states, by optimizer: A (d_in x r) and B (r x d_out) of each adapted
     * matrix are matrices themselves */
    mp_wl_matrix dm[12], am[24];
    double S = 0.0;
    for (int kind = 0; kind < 2; kind++) {
        const double units = st->n[kind ? MP_LK_MOE : MP_LK_DENSE];
        if (!(units > 0))
            continue;
        const int n = mp_wl_layer_matrices(w, m, kind, dm);
        const double r = p->lora_rank > 0 ? (double)p->lora_rank : 8.0;
        const unsigned t = p->lora_targets ? p->lora_targets : MP_LORA_Q | MP_LORA_V;
        int na = 0;
        for (int i = 0; i < n; i++)
            if (dm[i].lora_bit & t) {
                am[na++] = (mp_wl_matrix){dm[i].d_in, r, dm[i].count, dm[i].rows, dm[i].lora_bit};
                am[na++] = (mp_wl_matrix){r, dm[i].d_out, dm[i].count, dm[i].rows, dm[i].lora_bit};
            }
        S += units * state_bytes(p, am, na, 0.0);
    }
    const double s1 = p->zero >= 1 ? w->shard : 1.0, s2 = p->zero >= 2 ? w->shard : 1.0;
    o->weights += 4.0 * A / (z3 ? w->shard : 1.0);
    o->gradients = 4.0 * A / s2;
    o->optimizer = S / s1;
    o->trainable_params = A;
    o->state_bytes_per_param = A > 0 ? S / A : 0.0;
    o->frozen_params = st->params + st->expert_params;
    o->gather_bytes_per_param = w->qlora ? MP_NF4_BYTES_PER_PARAM : wB;
    o->grad_buffer_bytes_per_param = 0.0; /* the base has no gradients */
}

/* Offload: move what the plan offloads off the GPU (host RAM or NVMe). */
static void offload_states(const mp_workload *w, const mp_plan *p,
                           mp_stage_states *o)
{
    const int opt = p->offload == MP_OFF_OPTIMIZER || p->offload == MP_OFF_ALL;
    const int par = p->offload == MP_OFF_PARAMS || p->offload == MP_OFF_ALL;
    const int nvme = p->offload_device == 1;
    double moved = 0.0, saved = 0.0;
    if (opt) {
        /* ZeRO 2/3: each bucket of 16-bit gradients is reduced and copied to the host as
         * backward produces it (Ren et al. 2021 Sec. 4.1), so the GPU holds no gradient
         * partition, only the layer in flight (memory.c's gradient buffer); ZeRO 1 keeps the
         * 16-bit gradients until the step. The fp32 gradient partition lives on the host beside
         * the master weights and states (Fig. 2). */
        const double wB = fp32_training(p) ? 4.0 : 2.0;
        const double trained = o->trainable_params;
        const double gpu_grads = w->frozen ? o->gradients : p->zero >= 2 ? 0.0 : wB * trained;
        const double shard1 = p->zero >= 1 ? w->shard : 1.0;
        moved += o->optimizer + 4.0 * trained / shard1;
        saved += o->optimizer + fmax(0.0, o->gradients - gpu_grads);
        o->gradients = fmin(o->gradients, gpu_grads);
        o->optimizer = 0.0;
    }
    if (par) {
        moved += o->weights;
        saved += o->weights;
        o->weights = 0.0;
    }
    o->gpu_bytes_saved = saved;
    if (nvme) {
        o->nvme_bytes = moved;
        o->host_bytes = (par ? MP_NVME_PARAM_BUFFER_BYTES : 0.0) + (opt ? MP_NVME_OPTIM_BUFFER_BYTES : 0.0);
    } else {
        o->host_bytes = moved;
    }
}

void mp_est_stage_states(const mp_workload *w, const mp_model *m, const mp_plan *p,
                         const mp_wl_stage *st, int last, mp_stage_states *out)
{
    (void)last;
    *out = (mp_stage_states){0};
    if (w->frozen)
        lora_states(w, m, p, st, out);
    else
        full_states(w, m, p, st, out);
    if (p->offload != MP_OFF_NONE)
        offload_states(w, p, out);
}

/* ---- time ----------------------------------------------------------------------------- */

/* GPU <-> host bandwidth per GPU, bytes/s per direction (constants above). */
static double host_link_Bps(const mp_cluster *c)
{
    const char *k = c->gpu.key;
    double bw = 31.5e9; /* PCIe 4 x16: A100, L40S, RTX 4090 (their datasheets) */
    if (!strncmp(k, "gh200", 5) || !strncmp(k, "gb200", 5) || !strncmp(k, "gb300", 5))
        bw = 450e9;
    else if (!strncmp(k, "h100", 4) || !strncmp(k, "h200", 4) || !strncmp(k, "h800", 4) ||
             !strncmp(k, "b200", 4) || !strncmp(k, "b300", 4) || !strncmp(k, "mi3", 3))
        bw = 63e9; /* PCIe 5 x16 */
    else if (!strncmp(k, "v100", 4))
        bw = 15.75e9; /* PCIe 3 x16 */
    const double share = c->gpus_per_node >= 8 && bw < 100e9 ? 2.0 : 1.0;
    return MP_PCIE_EFF_FRAC * bw / share;
}

/* Bytes the update moves per trained parameter (read and write of every state, the master
 * weights and the weights, one read of the gradient): AdamW with fp32 master weights and
 * moments 2 x 8 + 4 + 4 + 2 + 4 = 30 (read m, v, master, grad; write m, v, master, 16-bit
 * weight) — the figure step.c used before. Adafactor reads the gradient twice more (the row and
 * column means of g^2, then the update). */
static double step_bytes_per_param(const mp_plan *p, int frozen, double S)
{
    const int f32 = fp32_training(p) || frozen; /* adapters are fp32 */
    const double wB = f32 ? 4.0 : 2.0;
    double rw, g;
    if (f32) {
        rw = 2.0 * wB, g = 4.0;
    } else if (p->no_master) {
        rw = 2.0 * wB, g = 2.0;
    } else {
        rw = 4.0 + 4.0 + 2.0, g = 4.0;
    }
    return 2.0 * S + rw + g * (p->optimizer == MP_OPT_ADAFACTOR ? 3.0 : 1.0);
}

/* Muon on the most loaded stage: the Newton-Schulz FLOPs of every hidden matrix, whole, in bf16
 * — per iteration A = X X^T (2 m^2 n), B = b A + c A^2 (2 m^3), X = a X + B X (2 m^2 n), m <= n
 * (Jordan et al. 2024) — shared out over the data-parallel ranks: with ZeRO each rank
 * orthogonalises the matrices its partition covers after all-gathering their momentum into
 * whole matrices (Liu et al. 2025 Sec. 2.3 "Distributed Muon"), without ZeRO the reference
 * implementation assigns the matrices round-robin to the ranks and all-gathers the updates
 * (Jordan et al. 2024, muon.py); that gather is not priced at ZeRO 0 (no parameter all-gather
 * in the plan's collectives). */
static double muon_s(const mp_workload *w, const mp_model *m, const mp_plan *p)
{
    mp_wl_matrix mx[12];
    const double nl = (double)w->layers_per_stage_max;
    const double nm = w->moe ? fmin(nl, (double)w->params.moe_layers) : 0.0, nd = nl - nm;
    double flop = 0.0;
    for (int kind = 0; kind < 2; kind++) {
        const double units = kind ? nm : nd;
        if (!(units > 0))
            continue;
        const int n = mp_wl_layer_matrices(w, m, kind, mx);
        for (int i = 0; i < n; i++) {
            double a = fmin(mx[i].d_in, mx[i].d_out), b = fmax(mx[i].d_in, mx[i].d_out);
            flop += units * mx[i].count * MP_MUON_NS_STEPS * (4.0 * a * a * b + 2.0 * a * a * a);
        }
    }
    double gather = 0.0;
    if (p->zero == 1 || p->zero == 2)
        gather = w->coll[MP_WC_DP_AG].time_s + w->coll[MP_WC_EDP_AG].time_s;
    else if (p->zero == 3)
        gather = nd * w->coll[MP_WC_Z3_AG].time_s +
                 nm * (w->coll[MP_WC_Z3_MOE_AG].time_s + w->coll[MP_WC_Z3_EXPERT_AG].time_s);
    const double ranks = p->zero >= 1 ? w->shard : w->dp_ranks;
    return flop / (ranks > 1 ? ranks : 1.0) / w->rates.bf16_matmul_flops_per_s + gather;
}

double mp_est_optimizer_step(const mp_workload *w, const mp_model *m, const mp_cluster *c,
                             const mp_plan *p, double t_mb_s, double bwd_mb_s, mp_estimate *e)
{
    mp_states *s = &e->states;
    const double elem_Bps = w->rates.elem_Bps;
    const double opt_shard = p->zero >= 1 ? w->shard : 1.0;
    const double opt_eshard = p->zero >= 1 ? w->expert_shard : 1.0;
    /* the trained parameters of the most loaded stage, per GPU, over the optimizer's shard */
    double trained;
    double S;
    if (w->frozen) {
        /* the dense layer's adapters, or the MoE layer's in a model of MoE layers only */
        const int moe_only = w->moe && (int64_t)w->params.moe_layers >= (int64_t)m->layers;
        const mp_wl_layer *l = &w->layer[moe_only ? MP_LK_MOE : MP_LK_DENSE];
        trained = (double)w->layers_per_stage_max * l->adapter_params / opt_shard;
        S = s->trainable_params > 0 ? s->state_bytes_per_param : 2.0 * moment_bytes(p);
    } else {
        trained = w->stage_params_max / opt_shard + w->stage_expert_params_max / opt_eshard;
        S = s->state_bytes_per_param;
    }
    if (!(S > 0)) /* no stage state recorded: the optimizer's constant (AdamW's 2 moments) */
        S = p->optimizer == MP_OPT_ADAM8BIT ? MP_ADAM8BIT_BYTES
          : p->optimizer == MP_OPT_SGD || p->optimizer == MP_OPT_MUON ? moment_bytes(p)
          : p->optimizer == MP_OPT_ADAFACTOR ? 0.0 : 2.0 * moment_bytes(p);
    const double bytes_pp = step_bytes_per_param(p, w->frozen, S);
    const int opt_off = p->offload == MP_OFF_OPTIMIZER || p->offload == MP_OFF_ALL;
    const int par_off = p->offload == MP_OFF_PARAMS || p->offload == MP_OFF_ALL;
    s->gpu_optimizer_s = opt_off ? 0.0 : bytes_pp * trained / elem_Bps;
    if (p->optimizer == MP_OPT_MUON && !w->frozen && !opt_off) {
        s->muon_s = muon_s(w, m, p);
        s->gpu_optimizer_s += s->muon_s;
    }
    if (p->offload == MP_OFF_NONE)
        return s->gpu_optimizer_s;
    /* Offload's transfers per GPU per step (Ren et al. 2021 Sec. 4.1: the 16-bit gradients go
     * down during backward, the updated 16-bit parameters come back up after the host's step;
     * ZeRO-Infinity Sec. 5: offloaded parameters are fetched for every gather, forward and
     * backward). ZeRO 2/3 move each micro-batch's gradients (DeepSpeed accumulates them on the
     * host), ZeRO 1 once per step. */
    const double gpn = c->gpus_per_node > 0 ? (double)c->gpus_per_node : 1.0;
    const double wB = fp32_training(p) ? 4.0 : 2.0;
    const double M = w->microbatches;
    s->pcie_Bps = host_link_Bps(c);
    s->nvme_Bps = MP_NVME_BPS_PER_NODE / gpn;
    s->host_mem_Bps = MP_HOST_MEM_BPS_PER_NODE / gpn;
    const double n_red = p->zero >= 2 ? M : 1.0;
    double down_mb = 0.0, up = 0.0, fetch_mb = 0.0, nvme_opt = 0.0, nvme_par = 0.0;
    if (opt_off) {
        down_mb = wB * trained; /* 16-bit gradient partition */
        up = wB * trained;      /* updated 16-bit parameters */
        s->cpu_optimizer_s = bytes_pp * trained / s->host_mem_Bps;
        if (p->offload_device == 1) /* states read from and written back to NVMe every step */
            nvme_opt = 2.0 * (S + 4.0) * trained;
    }
    if (par_off) {
        const double part = (w->frozen && w->qlora ? MP_NF4_BYTES_PER_PARAM : wB) *
                            (w->stage_params_max / w->shard + w->stage_expert_params_max / w->expert_shard);
        fetch_mb = 2.0 * part; /* forward and backward gathers */
        if (!opt_off)
            up += part; /* the GPU's update written back */
        if (p->offload_device == 1)
            nvme_par = M * fetch_mb;
    }
    s->pcie_bytes_per_step = n_red * down_mb + up + M * fetch_mb;
    s->nvme_bytes_per_step = nvme_opt + nvme_par;
    s->pcie_s = s->pcie_bytes_per_step / s->pcie_Bps;
    s->nvme_s = s->nvme_bytes_per_step / s->nvme_Bps;
    /* Exposed: what backward cannot hide of each micro-batch's gradient transfer, what the
     * micro-batch's compute cannot hide of its parameter fetches (from NVMe when there, the
     * slower of the two links), and the host's step with the parameter upload after it (no
     * delayed parameter update: DeepSpeed's default). The NVMe swap of the states overlaps the
     * host's step (ZeRO-Infinity's overlap-centric design). */
    const double down_s = down_mb / s->pcie_Bps;
    const double fetch_s = fmax(fetch_mb / s->pcie_Bps, p->offload_device == 1 ? fetch_mb / s->nvme_Bps : 0.0);
    s->offload_exposed_s = n_red * fmax(0.0, down_s - bwd_mb_s) + M * fmax(0.0, fetch_s - t_mb_s) +
                           fmax(s->cpu_optimizer_s, nvme_opt / s->nvme_Bps) + up / s->pcie_Bps;
    return s->gpu_optimizer_s + s->offload_exposed_s;
}
