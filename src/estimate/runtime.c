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
 * reserve"), in two terms:
 *   every framework: 0.06 x the peak allocated bytes, the caching allocator's rounding (large
 *     blocks rounded to 2 MiB, segments of 20 MiB split and cached: PyTorch
 *     c10/cuda/CUDACachingAllocator.cpp, kRoundLarge / kLargeBuffer) with expandable segments
 *     off. An assumption, not a fit: the published pairs at hand are FSDP1's (docs/memory.md
 *     "Allocator reserve" says what would calibrate it);
 *   flat-parameter ZeRO-3 (FSDP1, DeepSpeed; zero=3, fsdp=1): 4 x the gathered-layer buffers.
 *     Its all-gathers and reduce-scatters run on side streams and their blocks are freed with
 *     record_stream, so the allocator holds them until the compute stream passes, per stream
 *     (PyTorch FSDP2 RFC, pytorch/pytorch issue 114299: "record_stream ... non-deterministic
 *     memory"); fitted to Llama 2 70B pure-bf16 FSDP on 16 x A100 80 GB, 63 GiB reserved for
 *     42 GiB allocated (meta-llama/llama-cookbook issue 120; tests/data/memory_runs.csv row
 *     cookbook120_70b_pure_bf16): (63 - 1.06 x 42) / 4.8 GiB of buffers = 3.9. FSDP2 frees
 *     them deterministically: 0. */
static const double reserve_alloc_frac = 0.06, reserve_fsdp1_per_buffer = 4.0;

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
    rt->reserve_frac = reserve_alloc_frac;
    rt->reserve_per_buffer = p->zero == 3 && p->fsdp != 2 ? reserve_fsdp1_per_buffer : 0.0;
}

void mp_est_runtime_apply(const mp_runtime_mem *rt, mp_memory *mm)
{
    mm->runtime = rt->runtime_bytes;
    mm->nccl = rt->nccl_bytes;
    mm->allocator_reserve = rt->reserve_frac * mm->allocated + rt->reserve_per_buffer * mm->buffers;
    mm->total = mm->allocated + mm->runtime + mm->nccl + mm->allocator_reserve;
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
