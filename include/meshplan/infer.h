/* meshplan/infer.h — inference: time to first token, time per output token, throughput, memory,
 * KV-cache concurrency and energy of serving a model on a cluster, for a fixed batch of
 * sequences of `in` prompt and `out` output tokens (offline batch, as trtllm-bench and vLLM's
 * benchmark_throughput run). Built on the workload's prefill and decode phases
 * (workload.h mp_workload_infer) priced by the same kernel roofline and collectives as training;
 * the engine (vLLM, SGLang, TensorRT-LLM) is a data profile (data/engines.json). Equations and
 * sources: docs/infer.md.
 */
#ifndef MESHPLAN_INFER_H
#define MESHPLAN_INFER_H

#include <stddef.h>
#include <stdint.h>

#include "meshplan/model.h"
#include "meshplan/status.h"
#include "meshplan/topo.h"

/** Weight formats: names "bf16", "fp16", "fp8", "fp4", "int8", "int4" (mp_infer_weights_name). */
typedef enum { MP_WQ_BF16, MP_WQ_FP16, MP_WQ_FP8, MP_WQ_FP4, MP_WQ_INT8, MP_WQ_INT4, MP_WQ_COUNT } mp_infer_weights;
/** KV cache formats: "bf16", "fp8". */
typedef enum { MP_KVQ_BF16, MP_KVQ_FP8, MP_KVQ_COUNT } mp_infer_kv;
/** Engines with a profile in data/engines.json: "vllm", "sglang", "trtllm", "hf" (Hugging Face
 *  transformers generate(), eager PyTorch: the ML.ENERGY v1 runs). */
typedef enum { MP_ENGINE_VLLM, MP_ENGINE_SGLANG, MP_ENGINE_TRTLLM, MP_ENGINE_HF, MP_ENGINE_COUNT } mp_engine_id;

const char *mp_infer_weights_name(mp_infer_weights w);
const char *mp_infer_kv_name(mp_infer_kv k);
const char *mp_engine_name(mp_engine_id e);
/** Bytes per weight: 2, 2, 1, 0.5, 1, 0.5 (fp4/int4 scales, one per group of 16-128, not counted). */
double mp_infer_weights_bytes(mp_infer_weights w);

/** An inference plan (keys of `meshplan infer --plan`, docs/infer.md). */
typedef struct {
    int tp, pp, ep, dp;       /* degrees, >= 1; dp = replicas (0 before resolve: gpus/(tp*pp)) */
    int64_t batch;            /* sequences in flight per replica, >= 1 */
    int64_t in, out;          /* prompt and output tokens per sequence, >= 1 */
    int weights;              /* mp_infer_weights */
    int kv;                   /* mp_infer_kv */
    int engine;               /* mp_engine_id */
    double kv_frac;           /* the engine's memory share (vLLM gpu_memory_utilization, SGLang
                                 mem_fraction_static, TRT-LLM kv_cache_free_gpu_mem_fraction),
                                 (0, 1]; 0 = the engine's default */
    int cuda_graphs;          /* 0 or 1; -1 = the engine's default (on) */
    unsigned given;           /* one bit per key parsed (table order) */
    int64_t chunk;            /* tokens of one prefill chunk and of the engine's profile run
                                 (vLLM max_num_batched_tokens, SGLang chunked_prefill_size,
                                 TRT-LLM max_num_tokens), >= 1; 0 = the engine's default */
    int64_t longest;          /* decode steps the batch runs: a static batch (HF generate, the
                                 ML.ENERGY v1 benchmark) steps until its longest response stops,
                                 every sequence computed through it; out is then the mean
                                 response, the one the tokens are counted by. >= out; 0 = out
                                 (every response out tokens long) */
} mp_infer_plan;

/** Defaults: tp pp ep 1, dp 0 (derived), batch 1, in 1024, out 128, bf16 weights and KV, vLLM,
 *  its kv_frac and CUDA graphs. */
void mp_infer_plan_init(mp_infer_plan *p);

/** Parse "key=value,..." over p (initialised by the caller). Every bad or unknown key adds one
 *  diag line (field, value, what was expected; the nearest key for a typo). MP_OK or
 *  MP_ERR_INPUT. */
mp_status mp_infer_plan_parse(const char *text, mp_infer_plan *p, mp_diag *diag);

/** The plan as "tp=..,pp=..,..." (every key). Returns the length needed, as snprintf. */
int mp_infer_plan_format(const mp_infer_plan *p, char *buf, size_t cap);

/** Help lines of the inference keys (as mp_plan_keys_help). */
int mp_infer_plan_keys_help(char *buf, size_t cap);

/** One engine profile (data/engines.json; each value with its source there). */
typedef struct {
    char key[16], version[64];
    double step_overhead_graphs_s;   /* CPU + launch time per decode step with CUDA graphs */
    double step_overhead_eager_s;    /* the same without (eager kernel launches) */
    double gemm_frac, attn_frac, mem_frac; /* shares of the measured kernel rates (workload.h) */
    int kv_budget_of_free;           /* 0: kv_frac x capacity - weights - activations - runtime
                                        (vLLM, SGLang); 1: kv_frac x (capacity - the same) (TRT-LLM) */
    double kv_frac;                  /* default memory share */
    int block_tokens;                /* KV page size, tokens */
    double max_batched_tokens;       /* tokens of one prefill chunk (activation peak) */
    double runtime_bytes;            /* CUDA context and cuBLAS workspace of every GPU */
    double max_batch;                /* the engine's default cap on sequences in flight */
    double runtime_multi_gpu_bytes;  /* added when a replica spans GPUs: NCCL buffers and
                                        communicators, custom all-reduce workspaces */
    double step_overhead_eager_per_layer_s; /* eager steps: CPU dispatch of one layer's kernels
                                        (added x layers to step_overhead_eager_s; 0 when that
                                        figure already covers them) */
    char source[384];
} mp_engine_profile;

/** The built-in profile of engine e (data/engines.json). MP_OK, MP_ERR_INPUT for an unknown e,
 *  MP_ERR_PARSE when the embedded file is malformed (diag says where). */
mp_status mp_engine_profile_get(mp_engine_id e, mp_engine_profile *out, mp_diag *diag);

/** One phase of a request, per model replica. */
typedef struct {
    double compute_s;   /* kernels FLOP-bound */
    double memory_s;    /* kernels HBM-bound (weights, KV cache, element-wise) */
    double comm_s;      /* TP all-reduces, EP all-to-alls, pipeline sends */
    double overhead_s;  /* engine per-step CPU and launch time */
    double total_s;     /* the phase (prefill: once; decode: one step) */
    double flop;        /* model FLOPs per GPU of the phase (decode: one step) */
    double bytes;       /* weight + KV bytes read per GPU (decode: one step) */
    const char *bound;  /* "compute", "memory", "communication" or "overhead": the largest part */
    double mfu;         /* flop / (total_s x dense peak at the GEMM dtype) */
    double mbu;         /* bytes / (total_s x peak HBM bandwidth) */
    double power_w;     /* one GPU's average power in the phase */
} mp_infer_phase;

#define MP_INFER_MAX_ASSUMED 12
/** What mp_infer_estimate predicts. */
typedef struct {
    mp_infer_plan plan;             /* resolved (dp derived) */
    mp_engine_profile engine;
    int feasible;                   /* the batch's KV fits the engine's KV pool */
    char reason[256];               /* why not, when not */
    mp_infer_phase prefill;         /* the whole batch's prompts */
    mp_infer_phase decode;          /* one step at the mean context in + out/2 */
    double ttft_s, tpot_s, e2e_s;
    double output_tokens_per_s;     /* all replicas */
    double output_tokens_per_s_per_replica, output_tokens_per_s_per_gpu;
    double requests_per_s;
    double weights_bytes, kv_bytes, activations_bytes, runtime_bytes, total_bytes, capacity_bytes;
    double kv_pool_bytes;           /* the engine's KV pool per GPU */
    double kv_bytes_per_token;      /* whole model (mp_wl_kv_bytes_per_token) */
    double kv_bytes_per_token_gpu;  /* on one GPU */
    int64_t max_concurrency;        /* sequences of in + out tokens the pool holds (paged blocks) */
    double power_w;                 /* one GPU's average over the request */
    double energy_j_per_output_token; /* GPUs of a replica x power x e2e / (batch x out) */
    int nassumed;
    char assumed[MP_INFER_MAX_ASSUMED][160];
} mp_infer_result;

/** Predict plan p for model m on cluster c (c's GPU count = tp * pp * dp). MP_OK (an over-memory
 *  batch is an answer: feasible 0 with the reason), MP_ERR_INPUT when the plan cannot be formed
 *  (degrees that do not divide heads, layers, experts or the GPU count; a GPU without the
 *  weights' format; its TDP unknown), every reason in diag. */
mp_status mp_infer_estimate(const mp_model *m, const mp_cluster *c, const mp_infer_plan *p,
                            mp_infer_result *out, mp_diag *diag);

/** What engine `engine` ("vllm", ...) measured on GPU `gpu` (a catalog key) where a log of it
 *  was published (src/infer/device_mem.c, each figure with its source): *total_bytes the device
 *  memory CUDA reports (below the marketed capacity), *non_torch_bytes the memory outside
 *  PyTorch's allocator per GPU (CUDA context, library workspaces, NCCL buffers), for a replica of
 *  one GPU or, multi_gpu != 0, of several (0 when that shape was not measured); *source names the
 *  log (may be NULL). Returns 1 when listed, 0 (outputs untouched) otherwise. */
int mp_infer_device_memory(const char *engine, const char *gpu, int multi_gpu, double *total_bytes,
                           double *non_torch_bytes, const char **source);

/** The expected longest of n response lengths, tokens (src/infer/lengths.c, eq. 1): lengths
 *  lognormal of median median_tokens (> 0) and shape sigma (> 0, the deviation of the log
 *  length), cut at the generation limit cap_tokens (> 0); E[min(cap, max of n)] = the integral
 *  over [0, cap] of 1 - F^n (David & Nagaraja 2003, Order Statistics, Sec. 3.1). n = 1 gives the
 *  mean of the cut lengths. The decode steps of a static batch of n (plan key longest). Returns 0
 *  for an argument out of range. */
double mp_infer_expected_longest(double median_tokens, double sigma, double cap_tokens, int64_t n);

/** The share of those lengths that reach the cut: 1 - F(cap_tokens); 0 for an argument out of
 *  range. */
double mp_infer_cut_share(double median_tokens, double sigma, double cap_tokens);

/** The best GEMM rate of GPU g at dtype dt that the inference power model divides by, FLOP/s:
 *  mp_gpu_best_gemm_flops(g, dt), the catalog's one rule (src/catalog/gemm_rate.c; kept under
 *  this name for its callers). g: a catalog GPU. */
double mp_infer_best_gemm_flops(const mp_gpu *g, mp_dtype dt);

/** The activity model's power of one GPU while kernels run (Hong & Kim 2010; docs/energy.md),
 *  W: min(tdp_W, wait_W + (tdp_W - wait_W) * u + bytes / kernel_s * 8 * pj_per_bit * 1e-12),
 *  u = min(1, flop / kernel_s / best_flops) (0 when best_flops <= 0). tdp_W, wait_W: the GPU's
 *  power limit and active-idle power, W; best_flops: mp_infer_best_gemm_flops, FLOP/s;
 *  pj_per_bit: HBM + on-chip access energy, pJ/bit; flop, bytes: per GPU over kernel_s seconds.
 *  Returns wait_W when kernel_s <= 0. Used by mp_infer_phase_power_w and the serving
 *  simulator's step power. */
double mp_infer_kernel_power_w(double tdp_W, double wait_W, double best_flops, double pj_per_bit,
                               double flop, double bytes, double kernel_s);

/** Average power of one GPU over one inference phase (src/infer/power.c; docs/infer.md "Power").
 *  The phase splits into kernel_s (GPU-bound kernels at their roofline time: FLOP-, HBM- or
 *  link-bound), dispatch_s (eager steps: the CPU issuing the step's kernels one by one, the GPU
 *  running that stream as it arrives, which CUDA graphs remove) and host_s (host work the GPU
 *  waits on: scheduler, sampler, detokenizer). While kernels run and through the dispatch window
 *  the GPU draws the activity model's kernel power
 *    P_k = min(TDP, P_wait + (TDP - P_wait) * u + bytes / kernel_s * 8 * E_bit),
 *  u = flop / kernel_s / mp_infer_best_gemm_flops(g, dt) (mp_infer_kernel_power_w); through host_s
 *  it waits at P_wait. g: the GPU (tdp_W > 0); wait_W: its active-idle power, W
 *  (mp_energy_gpu_points); pj_per_bit: HBM + on-chip access energy, pJ/bit (mp_energy_opts);
 *  flop, bytes: FLOPs and HBM bytes per GPU of the phase; times in s, each >= 0. Returns W; 0
 *  when the three times sum to 0. An eager phase (dispatch_s > 0) on a GPU with a measured
 *  eager-decode power (mp_infer_eager_power_w) draws at least that, at most the TDP. */
double mp_infer_phase_power_w(const mp_gpu *g, double wait_W, double pj_per_bit, double flop,
                              double bytes, double kernel_s, double dispatch_s, double host_s,
                              mp_dtype dt);

/** Measured average power of one GPU through whole requests of launch-bound eager decoding
 *  (HF transformers without CUDA graphs), W; 0 when g is NULL or has no such measurement (then
 *  only the activity model prices the phase). source, when not NULL, receives the measurement's
 *  source (static storage) or NULL. The figures: data/gpus.json eager_decode_W (source and notes
 *  there), docs/infer.md
 *  "Measured eager-decode power". */
double mp_infer_eager_power_w(const mp_gpu *g, const char **source);

/** Stage-times the prefill pipeline's fill and drain add to pp stages that each run the batch
 *  as micro-batches of mb_tokens tokens (src/infer/infer.c; docs/infer.md "Pipeline prefill"):
 *  the scheduler sends engine steps of at most step_tokens down the pipeline, so the bubble is
 *  pp - 1 step-times (GPipe, Huang et al. 2019), each min(1, step_tokens / mb_tokens) of a
 *  stage-time. 0 when pp <= 1 or mb_tokens <= 0; step_tokens <= 0 means one step per
 *  micro-batch (pp - 1 whole stage-times). */
double mp_infer_prefill_bubble_stage_times(int pp, double mb_tokens, double step_tokens);

/** trtllm-bench's own engine settings for an offline throughput run (src/infer/bench_tuning.c,
 *  a transcription of finetune_setting in tensorrt_llm/bench/build/tuning.py; docs/infer.md
 *  "Validation"): from kv_requests, the requests of in + out tokens its KV cache holds, and pp:
 *  max_batch (per pipeline micro-batch: min(kv_requests, 4096) / pp rounded up, at least 64)
 *  and max_tokens (the step's token budget: min(batch x (1 + in / out), 32768) rounded up, at
 *  least 2048). Either pointer may be NULL. */
void mp_infer_trtllm_bench_settings(double kv_requests, double in, double out, int pp,
                                    int64_t *max_batch, int64_t *max_tokens);

/** infer --json (the CLI, the request -> JSON layer's "infer", the web's /api/infer): the object
 *  of rows[0] when sweep is 0 (nrows must be 1), else {"sweep": [one object per row]}. Keys:
 *  plan, engine_version, feasible, reason, ttft_s, tpot_s, e2e_s, output_tokens_per_s(_per_gpu,
 *  _per_replica), requests_per_s, memory_bytes{...}, kv_bytes_per_token(_per_gpu),
 *  max_concurrency, power_w, energy_j_per_output_token, mfu_prefill, mbu_decode, prefill{...},
 *  decode{...}, assumed[...]. Indented by 2, no trailing newline; malloc'd (caller frees); NULL
 *  when out of memory or nrows does not fit sweep. */
char *mp_report_infer_json(const mp_infer_result *rows, size_t nrows, int sweep);

#endif
