/* src/workflow/wf_internal.h — what the workflow planner's files share. Internal. */
#ifndef MESHPLAN_WF_INTERNAL_H
#define MESHPLAN_WF_INTERNAL_H

#include "meshplan/workflow.h"

#define WF_MAX_OPTS 96

/** One way to run a replica of an LLM: TP degree or GPU share, batch cap, and what that costs. */
typedef struct {
    int tp;
    double frac;          /* share of one GPU (tp 1 only when < 1) */
    int64_t batch;
    double gpus;          /* tp x frac */
    double L_s[MP_WF_MAX_CALLS]; /* service time of each of the LLM's calls (0 for others' calls) */
    double work_s;        /* replica-seconds per workflow request: sum n_c L_c / batch */
    double tau_s;         /* mean service time of one call */
    double calls;         /* calls per workflow request: sum fanout x repeat */
    double mem_bytes;     /* per GPU */
} wf_option;

typedef struct {
    int nopts;
    wf_option opt[WF_MAX_OPTS];
} wf_llm_opts;

/** A choice per LLM: option index and replicas. */
typedef struct {
    int o[MP_WF_MAX_LLMS];
    int dp[MP_WF_MAX_LLMS];
} wf_choice;

/** Place choice ch of w on c's nodes (budget gpus): fills a's placement strings, split groups and
 *  their cost, and the fragmentation (wf_place.c). */
void wf_place(const mp_workflow *w, const mp_cluster *c, int64_t gpus, const wf_llm_opts *lo,
              const wf_choice *ch, mp_wf_alloc *a);
/** The decode-step time of llm l at tp and batch with its TP group spread over nodes of `piece`
 *  GPUs minus the same inside one node (its first call's lengths; wf_plan.c). */
double wf_split_cost_s(const mp_workflow *w, const mp_cluster *c, int l, int tp, int piece, int64_t batch);

#endif
