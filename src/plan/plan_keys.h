/* src/plan/plan_keys.h — the plan keys of one cluster, written once (library-internal).
 *
 * One line per key: X(name, TYPE, field of mp_plan, min, max, VALUES, ops, FMT, default, help).
 *   TYPE    INT (integer), BOOL (0/1), REAL (number), ENUM (one of names) or TEXT (own syntax,
 *           parsed by the key's ops)
 *   VALUES  MP_NOENUM, MP_ENUM(names array, value of its first name) or
 *           MP_SYNTAX("syntax as help shows it", "a sample value that parses")
 *   ops     NULL, or hooks for a rule the type cannot say (plan.c)
 *   FMT     ALWAYS written by mp_plan_format, or IFSET (only when the field is not zero)
 * The order is the order of the canonical plan string (mp_plan_format), of `meshplan help` and of
 * the README's list. It drives parsing, the duplicate and unknown-key messages, formatting and
 * help (plan.c, plan_key.c); tests/test_plan.c checks every key at its range ends and
 * tests/test_plan_docs.c checks the README against it. To add a key: docs/plan.md.
 *
 * The names arrays, ops and MP_PLAN_MAX / MP_PLAN_GB_MAX are defined in plan.c.
 */
#ifndef MESHPLAN_PLAN_KEYS_H
#define MESHPLAN_PLAN_KEYS_H

#define MP_PLAN_KEYS(X)                                                                            \
    X(tp, INT, tp, 1, MP_PLAN_MAX, MP_NOENUM, NULL, ALWAYS, "1", "tensor-parallel degree")          \
    X(pp, INT, pp, 1, MP_PLAN_MAX, MP_NOENUM, NULL, ALWAYS, "1", "pipeline-parallel stages")        \
    X(vpp, INT, vpp, 1, 4096, MP_NOENUM, NULL, ALWAYS, "1",                                         \
      "virtual pipeline stages (model chunks) per rank; > 1 needs pp > 1")                          \
    X(dp, INT, dp, 1, MP_PLAN_MAX, MP_NOENUM, NULL, ALWAYS, "gpus / (tp*pp*cp)",                    \
      "data-parallel degree")                                                                       \
    X(cp, INT, cp, 1, MP_PLAN_MAX, MP_NOENUM, NULL, ALWAYS, "1",                                    \
      "context-parallel degree (the sequence split across GPUs for attention)")                    \
    X(ep, INT, ep, 1, MP_PLAN_MAX, MP_NOENUM, NULL, ALWAYS, "1",                                    \
      "expert-parallel degree (MoE), carved out of the cp*dp ranks")                                \
    X(sp, BOOL, sp, 0, 1, MP_NOENUM, NULL, ALWAYS, "1 when tp > 1",                                 \
      "Megatron sequence parallelism")                                                              \
    X(mb, INT, mb, 1, MP_PLAN_MAX, MP_NOENUM, NULL, ALWAYS, "1", "micro-batch, sequences")          \
    X(gb, INT, gb, 1, MP_PLAN_GB_MAX, MP_NOENUM, NULL, ALWAYS, "dp*mb", "global batch, sequences")  \
    X(seq, INT, seq, 1, (int64_t)1 << 26, MP_NOENUM, NULL, ALWAYS, "the model's",                   \
      "tokens per sequence")                                                                        \
    X(zero, INT, zero, 0, 3, MP_NOENUM, NULL, ALWAYS, "0, 3 with hsdp",                            \
      "ZeRO stage: 1 shards optimizer states, 2 also gradients, 3 also parameters (FSDP)")          \
    X(hsdp, INT, hsdp, 1, MP_PLAN_MAX, MP_NOENUM, NULL, IFSET, "off",                               \
      "HSDP shard group size: ZeRO-3 inside a group, replicated across groups")                    \
    X(recompute, ENUM, recompute, 0, 0, MP_ENUM(rc_names, 0), NULL, ALWAYS, "none",                 \
      "activation recomputation: selective (Megatron), full, op (torchtitan per-op), mlp")          \
    X(recompute_every, INT, recompute_every, 1, 4096, MP_NOENUM, NULL, IFSET, "1",                  \
      "the recompute mode on one layer in every n, the others store all (torchtitan option n)")    \
    X(precision, ENUM, precision, 0, 0, MP_ENUM(precision_names, 0), NULL, ALWAYS, "bf16",          \
      "GEMM precision")                                                                             \
    X(flash, BOOL, flash, 0, 1, MP_NOENUM, &given_ops, ALWAYS, "1; 0 on megatron-2021, pre-Ampere",   \
      "fused attention (FlashAttention)")                                                           \
    X(compile, INT, compile, 0, 3, MP_NOENUM, NULL, IFSET, "0",                                      \
      "torch.compile, a sum: 1 each transformer block (its saved pointwise outputs recomputed), "    \
      "2 the loss (no fp32 logits); 3 both, 0 eager")                                                 \
    X(logits_fp32, BOOL, logits_fp32, 0, 1, MP_NOENUM, NULL, IFSET, "0",                              \
      "1: the model returns fp32 logits the step holds through the backward (torchtune, "           \
      "transformers < 4.45): 4 more bytes a logit")                                                 \
    X(schedule, ENUM, schedule, 0, 0, MP_ENUM(sched_names, 0), &schedule_ops, ALWAYS,               \
      "1f1b, interleaved when vpp > 1", "pipeline schedule")                                        \
    X(order, TEXT, order, 0, 0, MP_SYNTAX("tp-cp-ep-dp-pp", "dp-tp-pp-cp"), &order_ops, IFSET,      \
      "tp-cp-ep-dp-pp",                                                                             \
      "rank order, innermost first; unnamed dimensions follow and must have degree 1")             \
    X(etp, INT, etp, 1, MP_PLAN_MAX, MP_NOENUM, &etp_ops, IFSET, "tp",                              \
      "expert tensor parallelism: each expert split over etp GPUs (MoE)")                          \
    X(cp_algo, ENUM, cp_algo, 0, 0, MP_ENUM(cp_algo_names, 0), NULL, IFSET, "ring",                 \
      "context-parallel attention: ring (overlapped) or all-gather")                               \
    X(capacity_factor, REAL, moe_capacity_factor, 0, 64, MP_NOENUM, &capacity_ops, IFSET,           \
      "0, dropless", "MoE expert buffer: 0 dropless, else 0.1-64 x the balanced share")           \
    X(imbalance, REAL, moe_imbalance, 1, 64, MP_NOENUM, NULL, IFSET, "the estimator's, 1",         \
      "routed tokens of the busiest GPU / mean (MoE)")                                              \
    X(fp8_comm, BOOL, fp8_comm, 0, 1, MP_NOENUM, NULL, IFSET, "0",                                  \
      "fp8 MoE dispatch and ZeRO parameter all-gathers (needs precision fp8)")                     \
    X(attn_kernel, ENUM, attn_kernel, 0, 0, MP_ENUM(attn_kernel_names, 0), &given_ops, IFSET,       \
      "the named stack's (fa3 class on Megatron-Core/NeMo), else fa2",                             \
      "fused-attention kernel generation (FlashAttention-2, -3, FlexAttention)")                   \
    X(doc_len, INT, doc_len, 1, (int64_t)1 << 40, MP_NOENUM, NULL, IFSET,                           \
      "none, one causal sequence",                                                                 \
      "mean tokens per document when sequences pack documents under a document mask")             \
    X(fsdp, INT, fsdp, 1, 2, MP_NOENUM, &fsdp_ops, IFSET, "1",                                      \
      "with zero=3: 1 flat parameters (FSDP1, DeepSpeed), 2 per-parameter sharding (FSDP2)")     \
    X(opt_dtype, ENUM, opt_dtype, 0, 0, MP_ENUM(opt_dtype_names, 0), NULL, IFSET, "fp32",          \
      "optimizer-state dtype (AdamW moments): fp32 8 bytes per parameter, bf16 4")                 \
    X(master_weights, ENUM, no_master, 0, 0, MP_ENUM(master_names, 0), NULL, IFSET, "1",          \
      "1 keeps fp32 master weights (4 bytes per parameter), 0 updates the 16-bit weights")      \
    X(stack, ENUM, stack, 0, 0, MP_ENUM(stack_names, 0), &stack_ops, IFSET, "generic",         \
      "software stack whose kernels, overlaps and era features price the step (docs/stacks.md)")      \
    X(optimizer, ENUM, optimizer, 0, 0, MP_ENUM(optimizer_names, 0), NULL, IFSET, "adamw",         \
      "optimizer states per trained parameter: adamw 2 moments, adam8bit 2 block-wise 8-bit "     \
      "moments, adafactor factored 2nd moment, sgd momentum, muon momentum + Newton-Schulz")       \
    X(finetune, ENUM, finetune, 0, 0, MP_ENUM(finetune_names, 0), NULL, IFSET, "full",    \
      "full trains every parameter; lora: frozen 16-bit base + rank-r adapters; qlora: frozen "    \
      "4-bit NF4 base (4.127 bits per parameter) + adapters")                                     \
    X(lora_rank, INT, lora_rank, 1, 65536, MP_NOENUM, NULL, IFSET, "8",                             \
      "LoRA rank r: r*(d_in+d_out) adapter parameters per target matrix (finetune lora|qlora)")   \
    X(lora_targets, TEXT, lora_targets, 0, 0, MP_SYNTAX("attn|mlp|all|q+k+v+o+gate+up+down", "q+v"), \
      &lora_targets_ops, IFSET, "q+v", "the matrices LoRA adapts (PEFT target_modules)")          \
    X(offload, ENUM, offload, 0, 0, MP_ENUM(offload_names, 0), NULL, IFSET, "none",                 \
      "ZeRO-Offload: optimizer states and fp32 gradients (zero >= 1), params (zero = 3) or all")   \
    X(offload_device, ENUM, offload_device, 0, 0, MP_ENUM(offload_device_names, 0), NULL, IFSET,    \
      "cpu", "where offloaded states live: cpu (host RAM) or nvme (ZeRO-Infinity)")

#endif
