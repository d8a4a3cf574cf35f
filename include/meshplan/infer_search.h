/* meshplan/infer_search.h — the serving planner (`meshplan infer-search`): for a model on N GPUs
 * of one type, the TP / PP / EP split, replicas, batch and precision that serve best under a
 * latency SLO, by cost ($ per million output tokens), energy (J per output token) or throughput.
 * It enumerates plans and calls mp_infer_estimate (a composer over the estimator, DESIGN.md);
 * percentiles come from the fixed-batch model in closed form (docs/infer.md, "infer-search").
 */
#ifndef MESHPLAN_INFER_SEARCH_H
#define MESHPLAN_INFER_SEARCH_H

#include <stdint.h>

#include "meshplan/infer.h"

/** What the search minimises or maximises: names "cost", "energy", "throughput". */
typedef enum { MP_ISO_COST, MP_ISO_ENERGY, MP_ISO_THROUGHPUT, MP_ISO_COUNT } mp_infer_objective;
const char *mp_infer_objective_name(mp_infer_objective o);

/** The search's request and constraints. */
typedef struct {
    int64_t in, out;              /* prompt and output tokens per request, >= 1 */
    double ttft_p99_s;            /* SLO on the 99th-percentile time to first token; 0 = none */
    double tpot_p99_s;            /* SLO on the 99th-percentile time per output token; 0 = none */
    int objective;                /* mp_infer_objective */
    int engine;                   /* mp_engine_id */
    double price_gpu_hour_usd;    /* rental price of one GPU-hour, > 0; 0 = the built-in table
                                     (mp_infer_gpu_price_usd) */
    int64_t max_batch;            /* largest batch tried per replica (powers of two), >= 1;
                                     0 = 4096 */
} mp_infer_search_opts;

/** Defaults: in 1024, out 256, no SLO, objective cost, vLLM, the built-in price, batch <= 4096. */
void mp_infer_search_opts_init(mp_infer_search_opts *o);

/** Rental price of one GPU-hour of gpu_key, USD, from the built-in table (each ASSUMED, with its
 *  basis, in src/infer/search.c); 0 for a GPU it does not list. */
double mp_infer_gpu_price_usd(const char *gpu_key);

/** 1 when g has fp4 tensor cores (Blackwell: b200, b300, gb200, gb300, rtx-pro-6000-se; the
 *  catalog has no fp4 peak key, so a list in src/infer/search.c), else 0. */
int mp_infer_gpu_has_fp4(const mp_gpu *g);

/** One candidate as the search scored it. */
typedef struct {
    mp_infer_result r;            /* the estimate (plan resolved: tp, pp, ep, dp, batch, formats) */
    double ttft_p99_s, tpot_p99_s;
    double usd_per_mtoken;        /* GPU rental per million output tokens */
    double j_per_mtoken;          /* GPU energy per million output tokens */
    double objective;             /* the scored value (lower is better: throughput negated) */
} mp_infer_candidate;

/** What the search found on one cluster. */
typedef struct {
    int found;                    /* 0: no plan fits memory and the SLO (why says what failed) */
    mp_infer_candidate best;
    mp_infer_candidate runner_up; /* the best with another (tp, pp, ep, precision); found_runner_up */
    int found_runner_up;
    int64_t evaluated;            /* estimates made */
    int64_t feasible;             /* of which fit memory and the SLO */
    int64_t next_batch;           /* the best split's next batch tried (0 = none) */
    char next_batch_why[160];     /* why that batch was not taken */
    char why[640];                /* the explanation of the pick, one paragraph */
    double price_gpu_hour_usd;    /* the price used */
} mp_infer_search_result;

/** Search the serving plans of model m on cluster c (all its GPUs: replicas x tp x pp = the GPU
 *  count): tp and pp in {1, 2, 4, 8, ...} dividing heads, layers and the GPU count, ep = 1 or tp
 *  for MoE, weights bf16, fp8 (GPUs with fp8 tensor cores) and fp4 (Blackwell), KV fp8 with
 *  8-bit-or-smaller weights, batch 1, 2, 4, ... up to what the KV pool holds. MP_OK (found 0 is an
 *  answer), MP_ERR_INPUT for bad options (each named in diag) or a GPU without a price. */
mp_status mp_infer_search(const mp_model *m, const mp_cluster *c, const mp_infer_search_opts *o,
                          mp_infer_search_result *out, mp_diag *diag);

#endif
