/* src/workload/workload_internal.h — what the workload's files share (internal). */
#ifndef MESHPLAN_WORKLOAD_INTERNAL_H
#define MESHPLAN_WORKLOAD_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "meshplan/workload.h"

/* Whether the n bytes at a and b are equal: memcmp(a, b, n) == 0, for the memo keys looked up
 * on every evaluation. Eight bytes at a time, OR-ing their differences without a branch per
 * word, so that with n known at the call the compiler unrolls and vectorises it; a libc memcmp
 * call per key was 15% of an evaluation on the 405B search (perf, docs/search.md round 9). */
static inline int mp_wl_bytes_eq(const void *a, const void *b, size_t n)
{
    const unsigned char *x = a, *y = b;
    uint64_t d = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t u, v;
        memcpy(&u, x + i, 8);
        memcpy(&v, y + i, 8);
        d |= u ^ v;
    }
    for (; i < n; i++)
        d |= (uint64_t)(x[i] ^ y[i]);
    return d == 0;
}

/* cache.c: empty the cache unless it was filled for this model and cluster. */
void mp_wl_cache_validate(mp_wl_cache *cache, const mp_model *m, const mp_cluster *c);
/* cache.c: a new shape generation (mp_wl_cache.shape_gen), never 0, unique in the process. */
uint64_t mp_wl_shape_gen_next(void);
/* cache.c: the memo slot (0 .. MP_WL_MEMO-1) of a plan by four of its keys. */
int mp_wl_memo_slot(int64_t a, int64_t b, int64_t c, int64_t d);
_Static_assert(MP_WL_MEMO == 256, "mp_wl_memo_slot returns the hash's top 8 bits");
/* cache.c: w's parameter counts, attention geometry and FLOPs (from the cache when it has
 * them; cache may be NULL). Needs w's tp. */
void mp_wl_model_values(mp_workload *w, const mp_model *m, const mp_plan *p, mp_wl_cache *cache);
/* cache.c: w's activation bytes of one dense and one MoE layer (from the cache when it has
 * them; cache may be NULL). Needs w's tp, cp, etp, moe_load. */
void mp_wl_model_act(mp_workload *w, const mp_model *m, const mp_plan *p, mp_wl_cache *cache);
/* layers.c: parameters per GPU of each layer kind, from w's shape. */
void mp_wl_kind_params(mp_workload *w, const mp_model *m);
/* stages.c: the runs of like stages and the per-stage maxima (layers, parameters), from the cache when it has them for w's pp, vpp, tp, ep, etp. */
void mp_wl_stages(mp_workload *w, const mp_model *m, mp_wl_cache *cache);
/* comm.c: the collectives of the step, described and priced (needs the stage maxima); opts
 * says how the stack issues the ZeRO-3 gathers (zero3_gather_per_tensor). */
void mp_wl_price_colls(mp_workload *w, const mp_model *m, const mp_cluster *c, const mp_plan *p,
                       const mp_workload_opts *opts, mp_wl_cache *cache);
/* layers.c: compute of every layer kind and its per-pass communication (needs the
 * collectives priced). */
void mp_wl_price_layers(mp_workload *w, const mp_model *m, const mp_plan *p,
                        const mp_workload_opts *opts, mp_wl_cache *cache);

/* finetune.c: w's frozen/qlora flags, element bytes, adapter parameters per layer kind and
 * gradient fraction, from the plan (needs the kind parameters and the stage maxima). */
void mp_wl_finetune_shape(mp_workload *w, const mp_model *m, const mp_plan *p);
/* finetune.c: the adapters' and the dequantisation's time of every layer kind (after the
 * layer kernels are priced). */
void mp_wl_finetune_price(mp_workload *w, const mp_model *m, const mp_plan *p);

#endif
