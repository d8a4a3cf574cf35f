/* src/catalog/gemm_rate.c — the one rule for a GPU's best GEMM rate at a dtype, used by the
 * kernel roofline (src/workload/kernels.c), the training energy model (src/energy/energy.c) and
 * the inference power model (src/infer/power.c, the serving simulator's step power).
 *
 * In order:
 *   1. a dtype the GPU has no peak for runs at its 16-bit rate (bf16, else fp16);
 *   2. the catalog's measured rate at that dtype (validation/gpus.csv, gpus.json);
 *   3. fp8 on a GPU measured only at 16 bits: the share of the 16-bit peak that GPU's own
 *      measurement reached, at the fp8 peak — the same matrix units, so that GPU's efficiency
 *      rather than other GPUs' (MI300X: bf16 668.4 of 1307.4 TFLOP/s = 0.51; the default share
 *      would put its fp8 GEMMs at 2,183 TFLOP/s, 1.6x the 1,403 measured on an H100). Where both
 *      are measured the 16-bit share bounds the 8-bit one from above (H100: bf16 0.80, fp8 0.71);
 *   4. otherwise DEFAULT_MATMUL_FRAC of the dense peak. */
#include "meshplan/hw.h"

/* Share of the dense peak a large GEMM reaches when no measurement is catalogued: the mean of
 * the measured A100 (271.2/312 = 0.87) and H100 (794.5/989 = 0.80) bf16 rows of
 * validation/gpus.csv. */
#define DEFAULT_MATMUL_FRAC 0.835

double mp_gpu_best_gemm_flops(const mp_gpu *g, mp_dtype dt)
{
    if ((unsigned)dt >= MP_DT_COUNT)
        return 0.0;
    const mp_dtype half = g->peak_flops_per_s[MP_DT_BF16] > 0 ? MP_DT_BF16 : MP_DT_FP16;
    const mp_dtype d = g->peak_flops_per_s[dt] > 0 ? dt : half; /* 1 */
    if (g->measured_matmul_flops_per_s[d] > 0)                  /* 2 */
        return g->measured_matmul_flops_per_s[d];
    const mp_dtype h16[2] = {MP_DT_BF16, MP_DT_FP16};
    for (int i = 0; d == MP_DT_FP8 && i < 2; i++) /* 3 */
        if (g->measured_matmul_flops_per_s[h16[i]] > 0 && g->peak_flops_per_s[h16[i]] > 0)
            return g->peak_flops_per_s[d] * g->measured_matmul_flops_per_s[h16[i]] / g->peak_flops_per_s[h16[i]];
    return g->peak_flops_per_s[d] * DEFAULT_MATMUL_FRAC; /* 4 */
}
