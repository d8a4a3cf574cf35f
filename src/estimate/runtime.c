/* src/estimate/runtime.c — the memory a training process holds beside its tensors: the CUDA
 * context and library workspaces, NCCL's channel buffers, and the caching allocator's reserve
 * (reserved minus allocated); and the verdict with its margin. docs/memory.md gives each
 * figure's source. */
#include <string.h>

#include "estimate_internal.h"

#define MiB 1048576.0

/* CUDA context and cuBLAS workspaces by GPU generation (the key's prefix; the first match wins).
 * context_bytes: the CUDA context with PyTorch's kernels loaded lazily (CUDA_MODULE_LOADING=LAZY,
 * PyTorch >= 2.0): "a few hundred MiB" per process, PyTorch docs "CUDA semantics" and the
 * commonly measured 0.4-0.6 GiB on an idle `torch.cuda.init()` under nvidia-smi; 512 MiB.
 * workspace_bytes: cuBLAS workspaces of two streams (compute and the autograd/NCCL side stream):
 * PyTorch's default CUBLAS_WORKSPACE_CONFIG is 4096 KiB x 2 + 16 KiB x 8 per handle before
 * Hopper and 32 MiB on sm90 and later (aten/src/ATen/cuda/CublasHandlePool.cpp). */
typedef struct {
    const char *prefix;
    double context_bytes, workspace_bytes;
} runtime_row;

static const runtime_row runtime_rows[] = {
    {"h1", 512 * MiB, 2 * 32 * MiB},  {"h2", 512 * MiB, 2 * 32 * MiB},
    {"h8", 512 * MiB, 2 * 32 * MiB},  {"gh", 512 * MiB, 2 * 32 * MiB},
    {"b", 512 * MiB, 2 * 32 * MiB},   {"gb", 512 * MiB, 2 * 32 * MiB},
    {"", 512 * MiB, 2 * (8 * MiB + 8 * 16384.0)}, /* Volta, Ampere, Ada and the rest */
};

/* NCCL buffers per communicator a rank belongs to: nchannels x (Simple 4 MiB, NCCL_BUFFSIZE's
 * default; LL128 ~4.5 MiB; LL 256 KiB) per ring peer, NCCL docs "Environment variables"
 * (NCCL_BUFFSIZE, NCCL_MIN/MAX_NCHANNELS); 16 channels, NCCL's usual count on NVSwitch A100/H100
 * nodes (NCCL_DEBUG=INFO "16 coll channels"). ~140 MiB per communicator. */
static const double nccl_per_comm_bytes = 16.0 * (4.0 * MiB + 4.5 * MiB + 0.25 * MiB);

/* The caching allocator's reserve, reserved minus allocated (docs/memory.md "Allocator
 * reserve"): a fraction of the peak allocated bytes, by framework, the median over sources of
 * each source's median reserved / peak (allocated or active) ratio, minus 1. Published pairs
 * (tests/data/SOURCES.md, "Allocator pairs"; the fit and its leave-one-source-out errors are
 * recomputed by tests/test_memory.c from tests/data/allocator_pairs.csv):
 *   flat-parameter ZeRO-3 (PyTorch FSDP1; DeepSpeed ZeRO-3 frees its gather blocks with
 *     record_stream as FSDP1 does, pytorch/pytorch issue 114299), 3 sources:
 *     meta-llama/llama-cookbook issue 120 (1.50, 1.38), PR 41 (1.26, 1.35, 1.27),
 *     pytorch/torchtitan PR 135 FSDP1 (1.36, 1.27): source medians 1.44, 1.27, 1.32 -> 0.316;
 *   per-parameter FSDP2 (fsdp=2), 2 sources: llama-cookbook PR 165 (1.31, per-parameter FSDP
 *     prototype), torchtitan PR 135 FSDP2 (1.37, 1.20): 1.31, 1.28 -> 0.295;
 *   the rest (Megatron's contiguous parameter and gradient buffers, DDP, ZeRO 1/2): no
 *     published pair, but a bound: Megatron-LM PR 482's Llama-2-7B DP 8 run held 69.1 GiB
 *     allocated and completed on an 80 GB H800 (74.5 GiB), so its reserve was at most
 *     (74.5 - 69.1 - 0.7 GiB of context and NCCL) / 69.1 = 6.8% of allocated (tests/data/
 *     c2_memory.csv row c2_dp8, which shaped this default): 0.06, below the bound. The pooled
 *     median of the five PyTorch-FSDP sources (1.31 -> 0.307) is reported beside it.
 * The ratios are of reserved to peak active memory in most sources (active >= allocated), so
 * the fraction errs on the large side. Near the capacity the allocator frees cached blocks and
 * retries a failed cudaMalloc before it reports an OOM (PyTorch "CUDA semantics"; the
 * "cudaMalloc retries" of memory_summary), so a total just over the capacity may still run
 * slowly: the verdict counts the reserve in full, erring towards "does not fit". */
static const double reserve_frac_fsdp1 = 0.316, reserve_frac_fsdp2 = 0.295,
                    reserve_frac_buffers = 0.06;

/* torch.compile of the blocks (compile bit 1) under FSDP2: the allocator holds less beside the
 * same tensors. Inductor's generated code plans its buffers inside each compiled graph
 * (torch._inductor.config.allow_buffer_reuse, on by default: a freed intermediate's buffer is
 * reused by a later one of the graph) and fuses the eager pointwise chains (RMSNorm's fp32
 * upcast, RoPE, SwiGLU), so the per-op activation-sized blocks of different sizes that split
 * and strand the caching allocator's segments in eager mode are never requested. Measured:
 * the same run eager and compiled where meshplan's allocated tensors are the same for both
 * (per-op SAC and full AC store only matmul/SDPA outputs or layer inputs either way), the
 * compiled reserved / eager reserved ratio, tests/data/compile_reserve_pairs.csv: torchtitan's
 * 2024-12 benchmark Tables 1 and 3 (0.934, 0.925: source median 0.930), torchtitan PR 135's
 * full-AC FSDP2 pair (0.932); the median over sources 0.931, each source's from the other's
 * within 0.2% (tests/test_memory.c recomputes the fit). (1 + f) x 0.931 - 1: 0.295 -> 0.205.
 * FSDP1, DeepSpeed and Megatron keep their fraction: no compiled pair is published. */
static const double compile_reserved_ratio_fsdp2 = 0.931;

void mp_est_runtime_memory(const mp_workload *w, const mp_cluster *c, const mp_plan *p,
                           mp_runtime_mem *rt)
{
    const char *key = c->gpu.key;
    const runtime_row *row = &runtime_rows[sizeof runtime_rows / sizeof runtime_rows[0] - 1];
    for (size_t i = 0; i < sizeof runtime_rows / sizeof runtime_rows[0]; i++) {
        if (strncmp(key, runtime_rows[i].prefix, strlen(runtime_rows[i].prefix)) == 0) {
            row = &runtime_rows[i];
            break;
        }
    }
    rt->runtime_bytes = row->context_bytes + row->workspace_bytes;
    /* One communicator per parallel dimension of degree > 1 (tp, cp, ep, the data-parallel or
     * ZeRO shard group, HSDP's replicate group) and one for the pipeline's neighbours. */
    int comms = (w->tp > 1) + (w->cp > 1) + (w->ep > 1) + (w->pp > 1) + (w->dp_ranks > 1);
    if (p->zero == 3 && w->shard > 1 && w->shard < w->dp_ranks)
        comms++; /* HSDP: the shard group and the replicate group */
    rt->nccl_bytes = comms * nccl_per_comm_bytes;
    rt->reserve_frac = p->zero != 3 ? reserve_frac_buffers
                     : p->fsdp == 2 ? reserve_frac_fsdp2 : reserve_frac_fsdp1;
    if ((p->compile & 1) && p->zero == 3 && p->fsdp == 2)
        rt->reserve_frac = (1.0 + reserve_frac_fsdp2) * compile_reserved_ratio_fsdp2 - 1.0;
    rt->reserve_per_buffer = 0.0;
}

void mp_est_runtime_apply(const mp_runtime_mem *rt, mp_memory *mm)
{
    mm->runtime = rt->runtime_bytes;
    mm->nccl = rt->nccl_bytes;
    mm->allocator_reserve = rt->reserve_frac * mm->allocated + rt->reserve_per_buffer * mm->buffers;
    mm->total = mm->allocated + mm->runtime + mm->nccl + mm->allocator_reserve;
    /* torch.cuda.max_memory_reserved counts the segments the caching allocator has cudaMalloc'd
     * (PyTorch docs, torch.cuda.memory_reserved: "memory managed by the caching allocator"); the
     * CUDA context, cuBLAS's workspaces and NCCL's channel buffers (ncclCommInitRank allocates
     * them with cudaMalloc/cuMem itself) are outside it, visible only to nvidia-smi. */
    mm->reserved = mm->allocated + mm->allocator_reserve;
}

int mp_est_verdict(const mp_memory *m, double margin_frac)
{
    if (!(m->total <= m->capacity))
        return MP_VERDICT_OOM;
    return m->total * (1.0 + margin_frac) > m->capacity ? MP_VERDICT_TIGHT : MP_VERDICT_FITS;
}

const char *mp_verdict_name(int v)
{
    switch (v) {
    case MP_VERDICT_FITS: return "fits";
    case MP_VERDICT_TIGHT: return "tight";
    case MP_VERDICT_OOM: return "oom";
    default: return "?";
    }
}
