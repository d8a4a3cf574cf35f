/* src/infer/infer_keys.h — the plan keys of `meshplan infer`, written once (library-internal).
 * The same columns and machinery as the training plan keys (src/plan/plan_keys.h,
 * src/plan/plan_key.h), for the fields of mp_infer_plan:
 *   X(name, TYPE, field, min, max, VALUES, ops, FMT, default, help)
 * The order is the order of the `given` bits, of mp_infer_plan_format and of the help. The names
 * arrays are defined in src/infer/plan.c. */
#ifndef MESHPLAN_INFER_KEYS_H
#define MESHPLAN_INFER_KEYS_H

#define MP_INFER_KEYS(X)                                                                           \
    X(tp, INT, tp, 1, 1024, MP_NOENUM, NULL, ALWAYS, "1", "tensor-parallel degree of one replica")  \
    X(pp, INT, pp, 1, 1024, MP_NOENUM, NULL, ALWAYS, "1", "pipeline stages of one replica")         \
    X(ep, INT, ep, 1, 1024, MP_NOENUM, NULL, ALWAYS, "1",                                           \
      "expert-parallel degree inside the replica's TP ranks (MoE; at most tp)")                    \
    X(dp, INT, dp, 1, 1 << 24, MP_NOENUM, NULL, ALWAYS, "gpus/(tp*pp)", "replicas")                 \
    X(batch, INT, batch, 1, 1 << 20, MP_NOENUM, NULL, ALWAYS, "1", "sequences in flight per replica") \
    X(in, INT, in, 1, 1 << 24, MP_NOENUM, NULL, ALWAYS, "1024", "prompt tokens per sequence")       \
    X(out, INT, out, 1, 1 << 24, MP_NOENUM, NULL, ALWAYS, "128", "output tokens per sequence")     \
    X(weights, ENUM, weights, 0, 0, MP_ENUM(weights_names, 0), NULL, ALWAYS, "bf16",                \
      "weight format (int8/int4: weight-only, AWQ/GPTQ-style)")                                    \
    X(kv, ENUM, kv, 0, 0, MP_ENUM(kv_names, 0), NULL, ALWAYS, "bf16", "KV cache format")            \
    X(engine, ENUM, engine, 0, 0, MP_ENUM(engine_names, 0), NULL, ALWAYS, "vllm",                   \
      "engine profile (data/engines.json)")                                                        \
    X(kv_frac, REAL, kv_frac, 0.01, 1, MP_NOENUM, NULL, IFSET, "the engine's",                      \
      "engine memory share (gpu_memory_utilization, mem_fraction_static, free fraction)")          \
    X(cuda_graphs, BOOL, cuda_graphs, 0, 1, MP_NOENUM, NULL, ALWAYS, "1", "decode under CUDA graphs") \
    X(chunk, INT, chunk, 1, 1 << 24, MP_NOENUM, NULL, IFSET, "the engine's",                        \
      "prefill chunk and profile-run tokens (max_num_batched_tokens)")                         \
    X(longest, INT, longest, 1, 1 << 24, MP_NOENUM, NULL, IFSET, "out",                             \
      "decode steps of a static batch: its longest response (HF generate; >= out)")

#endif
