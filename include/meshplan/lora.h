/* meshplan/lora.h — many LoRA adapters on one base model (issue 22): adapter size, an adapter
 * cache per replica in GPU memory (the memory it takes from the KV pool), loading from host
 * memory over PCIe, the popularity of the adapters (Zipf), the LRU hit ratio (Che's
 * approximation), and the per-step cost of batching requests of different adapters (segmented
 * GEMMs: Punica's SGMV, S-LoRA's MBGMM). Closed form (mp_lora_plan) and a per-step model the
 * serving simulator calls (mp_lora_sim_step_s: real LRU caches, loads, SGMV cost). The library
 * never prints. Equations and sources: docs/workflow.md (multi-LoRA section).
 */
#ifndef MESHPLAN_LORA_H
#define MESHPLAN_LORA_H

#include <stddef.h>
#include <stdint.h>

#include "meshplan/infer.h"
#include "meshplan/model.h"
#include "meshplan/plan.h"
#include "meshplan/status.h"
#include "meshplan/topo.h"

/* Which linear layers carry an adapter: the plan key lora_targets' bits (meshplan/plan.h);
 * serving takes MP_LORA_ATTN (q, k, v, o) or MP_LORA_ALL (every linear layer). */

typedef struct {
    int64_t adapters;        /* N, 1 .. 10^6 */
    int rank;                /* r, 0 .. 1024 (0: an adapter that adds nothing, the base model) */
    int targets;             /* MP_LORA_ATTN (default: q, k, v, o) or MP_LORA_ALL (plan.h) */
    double zipf_s;           /* popularity: P(adapter i) ~ i^-s, s >= 0 (0 uniform); default 1.1 */
    int64_t cache_adapters;  /* resident adapter slots per replica; 0 = auto: the smallest cache
                                whose LRU miss ratio is <= 1 - slo_quantile (capped at N and by
                                max_cache_frac of the GPU memory) */
    double slo_quantile;     /* the percentile the cache is sized for, (0, 1); default 0.99 */
    double max_cache_frac;   /* most of one GPU's memory the cache may take, (0, 1); default 0.1 */
    double host_Bps;         /* host-to-GPU bandwidth per GPU; 0 = PCIe x16 of the GPU's
                                generation (as src/serve: 5.0 on fp8-capable GPUs, else 4.0) */
    double load_latency_s;   /* fixed time per adapter load (allocation, launch); default 50e-6 */
    double kernel_s;         /* least time of one LoRA kernel (shrink or expand) per module and
                                layer; default 2e-6 */
    uint64_t seed;           /* the adapter of request i: a hash of (seed, i); default 1 */
} mp_lora_opts;

void mp_lora_opts_init(mp_lora_opts *o);

/** Parse a popularity "zipf:S" (S in [0, 10]) or "uniform" (= zipf:0) into o->zipf_s. MP_OK or
 *  MP_ERR_INPUT naming the value. */
mp_status mp_lora_popularity_parse(const char *text, mp_lora_opts *o, mp_diag *diag);

/** What mp_lora_plan predicts, per replica. */
typedef struct {
    double adapter_params;       /* one adapter: r x sum over targets (d_in + d_out) x layers */
    double adapter_bytes;        /* x 2 bytes (16-bit adapters) */
    double adapter_bytes_gpu;    /* one GPU's shard under TP (S-LoRA's TP scheme shards A or B
                                    with the base weight it rides on) */
    double host_Bps;
    double load_s;               /* one adapter onto one GPU: bytes / host_Bps + latency */
    int64_t cache_adapters;      /* resident per replica */
    int64_t cache_for_slo;       /* the smallest cache with miss ratio <= 1 - slo_quantile */
    int64_t cache_max;           /* what max_cache_frac of the memory holds */
    double cache_bytes_gpu;      /* cache_adapters x adapter_bytes_gpu */
    double kv_frac;              /* the engine memory share left for weights + KV after the cache
                                    (plan kv_frac, or the engine's, minus cache / capacity) */
    double kv_pool_bytes_base, kv_pool_bytes; /* per GPU, without and with the cache */
    double hit_frac;             /* LRU hit ratio at the cache size (Che et al. 2002) */
    double swaps_per_s;          /* per replica at rate / replicas */
    double swap_busy_frac;       /* swaps_per_s x load_s: share of time loading */
    double sgmv_s_per_step;      /* one decode step of `batch` requests, distinct adapters as the
                                    popularity gives, on one GPU */
    double distinct_per_step;    /* expected distinct adapters among `batch` requests */
} mp_lora_result;

/** Adapter size for model m at rank r on targets t, TP degree tp: params and bytes per GPU.
 *  MP_OK or MP_ERR_INPUT (a rank or tp out of range). */
mp_status mp_lora_adapter_size(const mp_model *m, int rank, int targets, int tp, double *params,
                               double *bytes_gpu, mp_diag *diag);

/** Che's approximation of the LRU hit ratio for n items of probabilities p (sum 1) and a cache of
 *  k items: the characteristic time T solves sum_i (1 - exp(-p_i T)) = k, and the hit ratio is
 *  sum_i p_i (1 - exp(-p_i T)) (Che, Tung, Wang 2002, IEEE JSAC 20(7), eqs. 3-5). k >= n: 1. */
double mp_lora_che_hit(const double *p, int64_t n, int64_t k);

/** Closed form: the adapters of o on replicas of plan p (tp, engine, kv_frac) of model m on
 *  cluster c's GPU, at `rate_per_s` requests/s spread over `replicas`, decode batch `batch`.
 *  MP_OK, MP_ERR_INPUT (o out of range; diag), MP_ERR_NOMEM. */
mp_status mp_lora_plan(const mp_model *m, const mp_cluster *c, const mp_infer_plan *p,
                       const mp_lora_opts *o, double rate_per_s, int replicas, int64_t batch,
                       mp_lora_result *out, mp_diag *diag);

/** The per-step model: an LRU cache of r->cache_adapters per replica, pre-loaded with the most
 *  popular adapters (so a cache of N never swaps). */
typedef struct mp_lora_sim mp_lora_sim;

/** Create for `replicas` replicas from the closed form r (sizes, load time, cache) and o.
 *  MP_OK, MP_ERR_INPUT, MP_ERR_NOMEM. */
mp_status mp_lora_sim_create(const mp_model *m, const mp_cluster *c, const mp_infer_plan *p,
                             const mp_lora_opts *o, const mp_lora_result *r, int replicas,
                             mp_lora_sim **out, mp_diag *diag);
void mp_lora_sim_destroy(mp_lora_sim *s);

/** The adapter of request i (0 .. N-1): Zipf-distributed, a pure function of (seed, i). */
int64_t mp_lora_sim_adapter(const mp_lora_sim *s, int64_t request);

/** Extra seconds of one engine step on `replica` running requests reqs[0..n) with tokens[i]
 *  tokens each: loads of the adapters not resident (LRU eviction; the step waits for them, as
 *  vLLM loads an adapter before the step that needs it) plus the segmented GEMMs (roofline of
 *  2 x tokens x params FLOPs and the distinct adapters' bytes, at least 2 kernels per target
 *  and layer). */
double mp_lora_sim_step_s(mp_lora_sim *s, int replica, const int64_t *reqs, const int64_t *tokens,
                          size_t n);

/** Counters since create: loads (swaps), their seconds, steps, adapter-steps. */
typedef struct {
    int64_t loads, steps, lookups, hits;
    double load_s, sgmv_s;
} mp_lora_counters;

void mp_lora_sim_counters(const mp_lora_sim *s, mp_lora_counters *out);

#endif
