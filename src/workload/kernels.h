/* src/workload/kernels.h — the kernel roofline the workload is priced with (internal): GEMM,
 * grouped GEMM, attention and element-wise rates of a GPU at a plan's precision. */
#ifndef MESHPLAN_WORKLOAD_KERNELS_H
#define MESHPLAN_WORKLOAD_KERNELS_H

#include "meshplan/hw.h"
#include "meshplan/model.h"
#include "meshplan/plan.h"
#include "meshplan/workload.h"

/* Rates of GPU g for GEMMs at precision prec and attention kernel kern, the sustained fractions
 * of opts applied (elem_Bps = mem_Bps x memory_bound_sustained_frac; mem_Bps itself stays the
 * measured figure, as STREAM-like copies reach it). */
void mp_kernel_rates_of(const mp_gpu *g, mp_dtype prec, mp_attn_kernel kern,
                        const mp_workload_opts *opts, mp_kernel_rates *r);

/* One GEMM C[M,N] = A[M,K] B[K,N] with e-byte elements at `rate` FLOP/s, seconds. */
double mp_kernel_gemm_s(const mp_kernel_rates *r, double rate, double M, double N, double K, double e);

/* G independent GEMMs [M,K] x [K,N] in one grouped kernel, seconds. */
double mp_kernel_grouped_gemm_s(const mp_kernel_rates *r, double rate, double G, double M, double N,
                                double K, double e);

/* Imperfect overlap of a GEMM's operand stream with its MMAs: t = max(m, c) + A(M) x min(m, c),
 * m the HBM time of its operands, c its FLOP time, A(M) = MP_KERNEL_GEMM_OVERLAP x min(1, M /
 * MP_KERNEL_GEMM_OVERLAP_FULL_M). A = 0.75 is read off DeepGEMM's published FP8 GEMM timings on
 * H800 (deepseek-ai/DeepGEMM README, initial release, Feb 2025, NVCC 12.8; the 18 dense shapes at
 * M = 64, 128, 4096 in tests/data/deepgemm_h800_fp8.csv): taking each shape's M = 4096 time as
 * its compute plus A x its memory time, with m at the measured STREAM bandwidth of that HBM3
 * (H100 SXM 3.04 TB/s, data/gpus.json), the twelve M = 64 and 128 timings are met with a median
 * log error of 0.00 at A = 0.75 (-0.27 at A = 0, the ideal roofline; +0.05 at A = 1, the sum);
 * fitted to that kernel measurement only, no validation row (tests/test_infer_overlap.c redoes
 * the fit). At the token counts of serving steps (M = 100-2000) the weight stream and the MMAs
 * are of the same order, where the ideal roofline's max() under-prices a GEMM by up to 1.75x; at
 * prefill's M of thousands the term is a few per cent. Below M = 64, the smallest M measured,
 * decode runs small-batch kernels (split-K GEMV, mma.sync m16n8k16) whose measured single-stream
 * decode streams the weights at full speed (tests/test_infer.c, H20): A rises linearly from 0 at
 * M = 0 (ASSUMED shape between the two measured ends; it keeps a step's time continuous and
 * increasing in M). Used by the inference phases only (src/workload/infer_phase.c): the training
 * estimator's rates were calibrated with the ideal roofline (docs/model.md) and keep it. */
#define MP_KERNEL_GEMM_OVERLAP 0.75
#define MP_KERNEL_GEMM_OVERLAP_FULL_M 64.0
double mp_kernel_overlap_s(double M, double mem_s, double flop_s);

/* Element-wise HBM bytes of one layer's forward per token (f_act: the FFN width whose
 * activation runs here; tp, sp as the plan). */
double mp_kernel_elem_fwd_bytes_per_token(const mp_model *m, const mp_attn_dims *ad, double f_act,
                                          int tp, int sp);

/* The same kernels' backward HBM bytes per token, counted kernel by kernel (kernels.c). */
double mp_kernel_elem_bwd_bytes_per_token(const mp_model *m, const mp_attn_dims *ad, double f_act,
                                          int tp, int sp);

#endif
