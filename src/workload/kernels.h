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

/* Element-wise HBM bytes of one layer's forward per token (f_act: the FFN width whose
 * activation runs here; tp, sp as the plan). */
double mp_kernel_elem_fwd_bytes_per_token(const mp_model *m, const mp_attn_dims *ad, double f_act,
                                          int tp, int sp);

/* The same kernels' backward HBM bytes per token, counted kernel by kernel (kernels.c). */
double mp_kernel_elem_bwd_bytes_per_token(const mp_model *m, const mp_attn_dims *ad, double f_act,
                                          int tp, int sp);

#endif
