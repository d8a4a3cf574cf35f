/* meshplan/workflow.h — multi-LLM agentic workflows on one cluster (issue 22): a workflow file
 * lists its LLMs and the calls one workflow request makes to them (lengths, fan-out, repeats,
 * dependencies); the planner searches GPUs, TP degrees, replicas and the batch cap per LLM
 * (fractional GPUs for small models, co-located with their memory summed), then places the
 * replicas on nodes keeping each TP group inside the scale-up domain.
 *
 * Per-call latency and per-replica throughput come from the inference model (infer.h,
 * mp_infer_estimate: TTFT + out x TPOT at the batch cap). Each LLM is a pool of dp x batch
 * slots; the wait for a slot is the M/M/c (Erlang C) wait (Kleinrock, Queueing Systems vol. 1,
 * §3.5). The workflow's end-to-end time is the longest path through the call graph (a call's
 * wait + service, fan-out copies wait for the slowest). Equations and sources: docs/workflow.md.
 */
#ifndef MESHPLAN_WORKFLOW_H
#define MESHPLAN_WORKFLOW_H

#include <stddef.h>
#include <stdint.h>

#include "meshplan/catalog.h"
#include "meshplan/infer.h"
#include "meshplan/model.h"
#include "meshplan/status.h"
#include "meshplan/topo.h"

#define MP_WF_MAX_LLMS 16
#define MP_WF_MAX_CALLS 64
#define MP_WF_MAX_DEPS 8

/** One LLM of the workflow. */
typedef struct {
    char name[32];       /* unique within the workflow */
    mp_model model;      /* resolved from the catalog */
    int weights;         /* mp_infer_weights */
    int engine;          /* mp_engine_id */
} mp_wf_llm;

/** One call of a workflow request to an LLM. */
typedef struct {
    char id[32];         /* unique */
    int llm;             /* index into llms */
    int64_t in, out;     /* prompt and output tokens, >= 1 */
    int fanout;          /* parallel copies (>= 1): the call finishes when the slowest does */
    int repeat;          /* sequential iterations (>= 1), e.g. a coder-critic loop */
    int ndeps;
    int deps[MP_WF_MAX_DEPS]; /* calls (earlier in the list) that must finish first */
} mp_wf_call;

typedef struct {
    char name[64];
    int nllms, ncalls;
    mp_wf_llm llm[MP_WF_MAX_LLMS];
    mp_wf_call call[MP_WF_MAX_CALLS];
} mp_workflow;

/** Parse a workflow JSON (docs/workflow.md):
 *  {"name": ..., "llms": [{"name", "model" (catalog key), "weights" (bf16|fp8|...; default bf16),
 *   "engine" (vllm|sglang|trtllm; default vllm)}],
 *   "calls": [{"id", "llm", "in_tokens", "out_tokens", "fanout" (1), "repeat" (1),
 *   "after": [ids of earlier calls]}]}.
 *  source names the text in messages. MP_OK, MP_ERR_PARSE (not JSON) or MP_ERR_INPUT (each bad
 *  field in diag: its name, value and what was expected). */
mp_status mp_workflow_parse(const mp_catalog *cat, const char *text, size_t len, const char *source,
                            mp_workflow *out, mp_diag *diag);

/** Planning options. */
typedef struct {
    int64_t gpus;          /* GPUs available, >= 1 */
    double rate_per_s;     /* > 0: the fewest GPUs serving this many workflow requests/s;
                              0: the most requests/s on `gpus` */
    double slo_e2e_p99_s;  /* > 0: the end-to-end p99 bound; 0: none (throughput is then the
                              saturation rate and the latency is reported at load_frac of it) */
    double load_frac;      /* with no SLO and no rate, the load the latency is reported at, (0,1);
                              default 0.8 */
} mp_wf_opts;

void mp_wf_opts_init(mp_wf_opts *o);

/** One LLM's share of an allocation. */
typedef struct {
    double gpus;           /* GPUs it holds (fractions when shared) */
    int tp, dp;            /* TP degree and replicas */
    double gpu_frac;       /* share of one GPU per replica (< 1: co-located with others), else 1 */
    int64_t batch;         /* sequences in flight per replica (the batch cap) */
    double capacity_per_s; /* workflow requests/s it can serve */
    double util_frac;      /* its load / capacity at the operating rate */
    double wait_mean_s;    /* mean wait for a slot at the operating rate */
    double mem_per_gpu_bytes; /* its memory per GPU (weights, KV at the cap, activations, runtime) */
    char placement[128];   /* "node0:gpu0-3,node1:gpu0-3", or "node0:gpu7(0.25)" */
} mp_wf_alloc_llm;

/** An allocation and its figures. */
typedef struct {
    int feasible;          /* 0: no allocation on the GPUs meets the objective (reason says why) */
    char reason[256];
    double requests_per_s; /* workflow requests/s: the max under the SLO, or saturation */
    double rate_per_s;     /* the rate the latency figures are at */
    double e2e_mean_s, e2e_p99_s;
    double gpus_used;
    int bottleneck;        /* the LLM with the highest utilisation */
    mp_wf_alloc_llm llm[MP_WF_MAX_LLMS];
    int critical[MP_WF_MAX_CALLS]; /* calls of the longest path, in order */
    int ncritical;
    int split_groups;      /* TP groups that had to span nodes */
    double split_cost_s;   /* extra decode time per step of those groups (their TP all-reduces
                              over the scale-out link instead of NVLink) */
    double fragmentation_frac; /* free GPUs in partly used nodes / free GPUs (0 when none free) */
} mp_wf_alloc;

/** What mp_workflow_plan returns: the best allocation and the two baselines. */
typedef struct {
    mp_wf_alloc best;
    mp_wf_alloc one_replica;  /* every LLM one replica at its smallest fitting TP, whole GPUs */
    mp_wf_alloc equal_split;  /* gpus / nllms whole GPUs each, the best tp/dp/batch inside */
    int64_t evaluations;      /* inference estimates made */
} mp_wf_result;

/** Plan workflow w on cluster c (c->num_gpus is not used: opts.gpus is the budget; c's GPU and
 *  gpus_per_node set the hardware and the scale-up domain). MP_OK (a workflow that fits nowhere is
 *  an answer: feasible 0 with the reason), MP_ERR_INPUT for bad options (diag). */
mp_status mp_workflow_plan(const mp_workflow *w, const mp_cluster *c, const mp_wf_opts *opts,
                           mp_wf_result *out, mp_diag *diag);

/** Erlang C: the probability an arrival waits in an M/M/c queue with c servers and offered load
 *  a = lambda / mu (Erlarg B recursion, Kleinrock vol. 1 eq. 3.40-3.42). 1 when a >= c. */
double mp_wf_erlang_c(int64_t c, double a);

#endif
