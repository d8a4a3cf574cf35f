/* meshplan/hw.h — GPUs, links and node types as the cost models see them.
 *
 * All quantities are SI: bytes, seconds, FLOP/s, bytes/s, watts. Vendor GB/s and Gb/s are
 * converted once, when the catalog is loaded (1 GB/s = 1e9 B/s; 1 Gb/s = 1.25e8 B/s).
 * A value of 0 means "not known" (the catalog's null); the cost models say what they fall back to.
 */
#ifndef MESHPLAN_HW_H
#define MESHPLAN_HW_H

#include <stdint.h>

#define MP_KEY_CAP 48
#define MP_NAME_CAP 256
#define MP_SOURCE_CAP 512

/** Numeric formats the cost models know. Names in mp_dtype_name(). */
typedef enum { MP_DT_BF16, MP_DT_FP16, MP_DT_FP8, MP_DT_TF32, MP_DT_FP32, MP_DT_COUNT } mp_dtype;

/** "bf16", "fp16", "fp8", "tf32", "fp32"; "?" for an invalid value. */
const char *mp_dtype_name(mp_dtype d);

/** Bytes per element of a dtype (bf16 2, fp16 2, fp8 1, tf32 4, fp32 4). */
double mp_dtype_bytes(mp_dtype d);

/** One GPU model (catalog gpus.json). */
typedef struct {
    char key[MP_KEY_CAP];
    char name[MP_NAME_CAP];
    double memory_bytes;                          /* HBM capacity */
    double mem_bw_Bps;                            /* peak HBM bandwidth */
    double measured_mem_bw_Bps;                   /* measured HBM bandwidth, 0 = unknown */
    double peak_flops_per_s[MP_DT_COUNT];         /* dense peak per dtype, 0 = unsupported */
    double measured_matmul_flops_per_s[MP_DT_COUNT]; /* best measured GEMM rate, 0 = unknown */
    int sm_count;                                 /* SMs (NVIDIA) or CUs (AMD), 0 = unknown */
    double tdp_W;                                 /* board power, 0 = unknown */
    double attention_flops_frac;                  /* fused attention fwd+bwd / bf16 peak, 0 = unknown */
    char scaleup_link[MP_KEY_CAP];
    char source[MP_SOURCE_CAP];
    /* Added later. */
    double attention_fa3_flops_frac;              /* FlashAttention-3 / cuDNN-9-class fused
                                                     attention fwd+bwd / bf16 peak (Hopper and
                                                     later), 0 = unknown */
    double eager_decode_W;                        /* measured average power through whole requests
                                                     of launch-bound eager decoding (no CUDA
                                                     graphs), 0 = unknown (mp_infer_eager_power_w) */
} mp_gpu;

typedef enum { MP_LINK_SCALEUP, MP_LINK_SCALEOUT, MP_LINK_WAN, MP_LINK_KIND_COUNT } mp_link_kind;

/** The best GEMM rate of GPU g at dtype dt, FLOP/s: the one rule every cost model uses
 *  (src/catalog/gemm_rate.c). A dtype without a peak on g runs at its 16-bit rate (bf16, else
 *  fp16); then the catalog's measured rate at that dtype; fp8 measured only at 16 bits: that
 *  measurement's share of the 16-bit peak, at the fp8 peak; otherwise 0.835 x the dense peak
 *  (the mean measured share of the A100/H100 rows of validation/gpus.csv). g: a catalog GPU;
 *  returns 0 for an invalid dt or a GPU with no peak. */
double mp_gpu_best_gemm_flops(const mp_gpu *g, mp_dtype dt);

/** One link type (catalog links.json). bw_Bps is per direction: per GPU for scale-up links
 *  (all of one GPU's NVLinks together), per port for NICs and WAN links. */
typedef struct {
    char key[MP_KEY_CAP];
    mp_link_kind kind;
    double bw_Bps;
    double latency_s;          /* alpha: one-hop latency */
    double efficiency_frac;    /* achievable fraction of bw_Bps for large messages, (0, 1] */
    int in_network_reduction;  /* NVLS or SHARP available */
    double in_network_algbw_frac; /* in-network all-reduce algbw / bw_Bps (NVLS), 0 = unknown */
    char source[MP_SOURCE_CAP];
} mp_link;

typedef enum { MP_SU_SWITCH, MP_SU_MESH, MP_SU_PCIE, MP_SU_COUNT } mp_scaleup_topology;

/** One node type (catalog nodes.json): a scale-up domain of GPUs and its NICs. */
typedef struct {
    char key[MP_KEY_CAP];
    char gpu[MP_KEY_CAP];
    int gpus_per_node;
    char scaleup_link[MP_KEY_CAP];
    mp_scaleup_topology scaleup_topology;
    char scaleout_link[MP_KEY_CAP];
    int nics_per_node;
    double power_overhead_W;   /* node power beyond the GPUs, 0 = unknown */
    char source[MP_SOURCE_CAP];
} mp_node;

#endif
