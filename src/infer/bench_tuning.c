/* src/infer/bench_tuning.c — the engine settings TensorRT-LLM's benchmark harness, trtllm-bench,
 * picks for itself when it is not told them: the max batch size and max num tokens of an offline
 * throughput run (the TensorRT-LLM perf overview's rows), from the requests its KV cache holds and
 * the dataset's lengths. A transcription of finetune_setting() in tensorrt_llm/bench/build/tuning.py
 * (NVIDIA/TensorRT-LLM, v1.0 era; called by calc_engine_setting via get_benchmark_engine_settings
 * for FP8, NVFP4 and unquantized checkpoints); the engine's own defaults (data/engines.json:
 * max_batch 2048, max_num_tokens 8192) are what trtllm-serve and the LLM API use instead.
 * Nothing here is fitted. */
#include <math.h>

#include "meshplan/infer.h"

/* tuning.py: "Cap total batch size to avoid decoder buffer size becoming too large" (4096) and
 * "Cap num tokens to avoid TRT activation buffer becoming too large" (32768) */
#define BENCH_BATCH_CAP 4096.0
#define BENCH_TOKENS_CAP 32768.0

void mp_infer_trtllm_bench_settings(double kv_requests, double in, double out, int pp,
                                    int64_t *max_batch, int64_t *max_tokens)
{
    if (pp < 1)
        pp = 1;
    if (!(kv_requests > 0))
        kv_requests = 0;
    const double raw_bs = fmin(kv_requests, BENCH_BATCH_CAP) / pp;
    const double raw_tok = fmin(raw_bs * (1.0 + (out > 0 ? in / out : 0.0)), BENCH_TOKENS_CAP);
    /* optimistic tuning: batch rounded up to 32 (at least 64) below 256, to 128 below 1024,
     * else to 256 */
    double bs = raw_bs < 256 ? fmax(64.0, 32.0 * ceil(raw_bs / 32.0))
                : raw_bs < 1024 ? 128.0 * ceil(raw_bs / 128.0) : 256.0 * ceil(raw_bs / 256.0);
    /* tokens rounded up to 256 (at least 2048, "to ensure Ctx/Gen overlap efficiency") below
     * 4096, to 512 below 8192, else to 1024 */
    double tok = raw_tok < 4096 ? fmax(2048.0, 256.0 * ceil(raw_tok / 256.0))
                 : raw_tok < 8192 ? 512.0 * ceil(raw_tok / 512.0) : 1024.0 * ceil(raw_tok / 1024.0);
    if (max_batch)
        *max_batch = (int64_t)bs;
    if (max_tokens)
        *max_tokens = (int64_t)tok;
}
