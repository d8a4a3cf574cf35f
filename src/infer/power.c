/* src/infer/power.c — one GPU's average power over an inference phase (prefill, or one decode
 * step), from the energy module's activity model (docs/energy.md; Hong & Kim 2010, ISCA: power =
 * idle + sum over units of access rate x unit power) applied to the parts of the phase.
 *
 * kernel_s: the phase's GPU-bound kernels at their roofline time. Their power is
 *   P_k = min(TDP, P_wait + (TDP - P_wait) x u + (bytes / kernel_s) x 8 x E_bit),
 *   u = achieved FLOP rate / the best measured GEMM rate, which is reached at the power limit
 *   (dense GEMMs on Hopper run power-capped: Ujeniya et al. 2026, arXiv 2604.11391; the
 *   rates are those of the kernels, not of the whole step: the bytes and FLOPs move while they run).
 * dispatch_s: eager (no CUDA graph) steps are CPU-launch-bound: the CPU issues the step's kernels
 *   one at a time (~45 per Llama layer in transformers, data/engines.json hf profile) and the GPU
 *   runs that stream as it arrives, its weight-streaming GEMVs spread between the small kernels.
 *   The GPU does not fall back to active idle in that window: its kernels are microseconds apart
 *   and the SMs stay resident at boost clocks, so the window draws P_k (ASSUMED: its shape, not
 *   a fitted value — the rate terms over the kernel time stand in for the clock and issue power
 *   of resident SMs; no per-GPU measurement of that state was found). Measured support: in
 *   launch-bound decode, lowering the SM clock from its maximum to its minimum saved ~42% of GPU
 *   energy for a 1-6% longer latency (Maliakel et al. 2025, arXiv 2501.08219): a large share of
 *   decode power is clock power drawn whatever work is done, which an idle-between-kernels model
 *   (P_wait through the dispatch window) leaves out. With CUDA graphs there is no dispatch window.
 * host_s: host work the GPU waits on (scheduler, sampler, stopping criteria, detokenizer): P_wait,
 *   the measured active-idle power (mp_energy_gpu_points).
 * The phase's average is the time-weighted mean of the parts.
 * Measured eager-decode power (mp_infer_eager_power_w): where a GPU's average power through
 *   launch-bound eager decoding was measured, an eager phase (dispatch_s > 0) draws at least that
 *   (capped at the TDP). ML.ENERGY v1's A100 table shows why the activity model alone is low there:
 *   its 14 chat models outside the validation rows draw 146-238 W through such requests, in no
 *   order of the bytes each step streams (7B models span 146-233 W), where the activity model
 *   gives ~154 W for every such step: a state power of SMs held at boost clocks, which the
 *   rate terms miss (docs/infer.md "Measured eager-decode power"). Measured for the A100 only;
 *   no TDP share carries it to other GPUs (the same benchmark's A40 runs draw 0.80 of their TDP,
 *   the A100's 0.47), so an unseen GPU keeps the activity model. */
#include <math.h>

#include "meshplan/infer.h"

/* The catalog's one best-GEMM-rate rule (src/catalog/gemm_rate.c), under the name the inference
 * power model and the serving simulator call. */
double mp_infer_best_gemm_flops(const mp_gpu *g, mp_dtype dt) { return mp_gpu_best_gemm_flops(g, dt); }

double mp_infer_kernel_power_w(double tdp_W, double wait_W, double best_flops, double pj_per_bit,
                               double flop, double bytes, double kernel_s)
{
    if (!(kernel_s > 0))
        return wait_W;
    double u = best_flops > 0 ? fmin(1.0, flop / kernel_s / best_flops) : 0.0;
    return fmin(tdp_W, wait_W + (tdp_W - wait_W) * u + bytes / kernel_s * 8.0 * pj_per_bit * 1e-12);
}

double mp_infer_eager_power_w(const mp_gpu *g, const char **source)
{
    /* The catalog's measurement (data/gpus.json eager_decode_W, with its source there). */
    const double w = g && g->eager_decode_W > 0 ? g->eager_decode_W : 0.0;
    if (source)
        *source = w > 0 ? "the catalog's eager_decode_W; data/gpus.json names its source" : NULL;
    return w;
}

double mp_infer_phase_power_w(const mp_gpu *g, double wait_W, double pj_per_bit, double flop,
                              double bytes, double kernel_s, double dispatch_s, double host_s,
                              mp_dtype dt)
{
    kernel_s = fmax(0.0, kernel_s);
    dispatch_s = fmax(0.0, dispatch_s);
    host_s = fmax(0.0, host_s);
    const double total = kernel_s + dispatch_s + host_s;
    if (!(total > 0))
        return 0.0;
    double p_k = mp_infer_kernel_power_w(g->tdp_W, wait_W, mp_infer_best_gemm_flops(g, dt), pj_per_bit,
                                         flop, bytes, kernel_s);
    double avg = (p_k * (kernel_s + dispatch_s) + wait_W * host_s) / total;
    if (dispatch_s > 0)
        avg = fmax(avg, fmin(g->tdp_W, mp_infer_eager_power_w(g, NULL)));
    return avg;
}
