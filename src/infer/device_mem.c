/* src/infer/device_mem.c — what an engine's memory profiler measures on a GPU, where a log of it
 * was published: the device memory CUDA reports (torch.cuda.mem_get_info()[1], below the marketed
 * capacity the catalog carries: the driver and ECC reserve part of it) and the engine's
 * "non-torch" memory (CUDA context, cuBLAS/cuBLASLt workspaces, kernel images, NCCL buffers when a
 * replica spans GPUs: device memory in use that PyTorch's allocator does not account for).
 * vLLM's KV pool is total x gpu_memory_utilization - (the profile run's torch peak + the
 * non-torch memory) (vllm/v1/worker/gpu_worker.py determine_available_memory; the same rule in
 * V0's worker.py since vLLM pull request 10511), so both enter max concurrency directly.
 * A GPU or engine not listed keeps the catalog's capacity and the engine profile's runtime bytes. */
#include <string.h>

#include "meshplan/infer.h"

#define GIB 1073741824.0

static const struct {
    const char *engine, *gpu;
    double total_bytes;          /* device memory as CUDA reports it */
    double non_torch_bytes;      /* one GPU per replica */
    double non_torch_multi_bytes; /* per GPU when the replica spans GPUs; 0 = not measured */
    const char *source;
} measured[] = {
    /* vLLM pull request 10511 (memory-profiling overhaul, merged 2024-12), comment of
     * 2024-12-13 with `vllm serve meta-llama/Meta-Llama-3-8B` on H100 80GB: "total_gpu_memory
     * 79.22GiB", "non_torch_memory 1.79GiB" at tp 1 and "3.58GiB" at tp 2 */
    {"vllm", "h100-sxm5-80gb", 79.22 * GIB, 1.79 * GIB, 3.58 * GIB,
     "vLLM PR 10511 log (H100 80GB): total_gpu_memory 79.22 GiB; non_torch_memory 1.79 GiB (tp 1), 3.58 GiB (tp 2)"},
    /* vLLM issue 10517 (2024-12-02), Llama-3.1-8B-Instruct on one RTX 3090: "total_gpu_memory
     * 23.58GiB", "non_torch_memory=0.35GiB" */
    {"vllm", "rtx3090", 23.58 * GIB, 0.35 * GIB, 0.0,
     "vLLM issue 10517 log (RTX 3090): total_gpu_memory 23.58 GiB; non_torch_memory 0.35 GiB"},
};

int mp_infer_device_memory(const char *engine, const char *gpu, int multi_gpu, double *total_bytes,
                           double *non_torch_bytes, const char **source)
{
    for (size_t i = 0; engine && gpu && i < sizeof measured / sizeof measured[0]; i++) {
        if (strcmp(measured[i].engine, engine) || strcmp(measured[i].gpu, gpu))
            continue;
        double nt = multi_gpu ? measured[i].non_torch_multi_bytes : measured[i].non_torch_bytes;
        *total_bytes = measured[i].total_bytes;
        *non_torch_bytes = nt; /* 0: not measured for this replica shape */
        if (source)
            *source = measured[i].source;
        return 1;
    }
    return 0;
}
