/* src/sim/sim_internal.h — what the simulator's files share: the task graph, the event engine,
 * the pipeline schedules. Not part of the public API (include/meshplan/sim.h is). */
#ifndef MESHPLAN_SIM_INTERNAL_H
#define MESHPLAN_SIM_INTERNAL_H

#include <stdint.h>

#include "meshplan/coll.h"
#include "meshplan/sim.h"

/* Streams of one rank (the trace's threads, in this order). */
enum { SS_COMPUTE, SS_TP, SS_CP, SS_EP, SS_PP, SS_DP, SS_OPT, SS_COUNT };

/* What a task is. Compute kinds first: they run on SMs and are slowed by contention. */
typedef enum {
    SK_FWD,          /* one unit's forward */
    SK_BWD,          /* its whole backward (dgrad + wgrad) */
    SK_BWD_INPUT,    /* ZB-H1's B: input gradient only */
    SK_BWD_WEIGHT,   /* ZB-H1's W: weight gradient */
    SK_RECOMPUTE,    /* recomputation before the backward */
    SK_OPTIMIZER,
    SK_TP,           /* TP/SP collectives of one unit's pass */
    SK_TP_RECOMPUTE, /* TP collectives of the recompute forward */
    SK_CP,           /* exposed CP K/V exchange of one pass */
    SK_SEND_FWD,     /* pipeline send of activations */
    SK_SEND_BWD,     /* pipeline send of activation gradients */
    SK_DP_GRAD,      /* ZeRO-0 all-reduce or ZeRO-1/2 reduce-scatter of a bucket */
    SK_DP_PARAM,     /* ZeRO-1/2 all-gather of a bucket's updated parameters */
    SK_Z3_GATHER,    /* ZeRO-3 all-gather of a unit's parameters */
    SK_Z3_REDUCE,    /* ZeRO-3 reduce-scatter of a unit's gradients */
    SK_HSDP,         /* HSDP all-reduce across replicas */
    SK_EP,           /* MoE dispatch + combine all-to-all of one MoE layer's pass */
    SK_COUNT
} sim_kind;
#define SK_IS_COMPUTE(k) ((k) <= SK_OPTIMIZER)

/* Units of a stage: a layer (dense or MoE), the embedding (parameters only), the LM head, an
 * MTP module (workload.h mp_layer_kind). */
enum { SU_LAYER, SU_EMBED, SU_HEAD, SU_MTP };

/* One task. start/end are set by the run. */
typedef struct {
    int64_t dur_ns;     /* nominal duration (before contention) */
    int64_t start_ns, end_ns;
    int64_t left_ns;    /* compute: nominal work left at resume_ns */
    int64_t resume_ns;
    double bytes;       /* collectives: message bytes (nccl-tests convention), per collective */
    int32_t succ_off, succ_n; /* successors, in sim_graph.succ */
    int32_t npred;      /* unfinished dependencies */
    int32_t mb, chunk, layer; /* -1 where not applicable; layer: global index, -2 LM head, -3 embedding */
    int32_t rank, peer; /* peer: receiving rank of a send, else -1 */
    int32_t group;      /* collectives: ranks in the group */
    uint32_t version;   /* bumped when a compute task's end is rescheduled */
    uint8_t stream, kind, op, algo, count, slowed, done, started;
} sim_task;

/* One event: a task's end at time t. Ordered by (t, seq). */
typedef struct {
    int64_t t;
    uint64_t seq;
    int32_t task;
    uint32_t version;
} sim_event;

typedef struct {
    sim_task *t;
    int64_t n, cap;
    int32_t *efrom, *eto; /* dependency edges while building */
    int64_t ne, ecap;
    int32_t *succ;        /* CSR successors after sim_graph_finish */
    int32_t *pred_of;     /* CSR predecessors (for attribution) */
    int32_t *pred_off;
    int nranks;
    /* stream queues: tasks of (rank, stream) in issue order */
    int32_t *q;
    int64_t *q_off;       /* nranks*SS_COUNT + 1 */
    int64_t *q_head;
    int32_t *busy;        /* running task per queue, -1 idle */
    int32_t *active_comm; /* per rank: communication tasks running */
    sim_event *heap;
    int64_t nheap, heapcap;
    uint64_t seq;
    int64_t now, events, max_events, max_tasks;
    double contention;    /* compute slowdown while communication runs on the rank */
} sim_graph;

/* Add a task; returns its id, or -1 (out of memory or over max_tasks: g->t is NULL or n == cap). */
int32_t sim_task_add(sim_graph *g, int rank, int stream, sim_kind kind, int64_t dur_ns);
/* to runs only after from has ended; returns 0 or -1 (out of memory). from < 0 is ignored. */
int sim_dep(sim_graph *g, int32_t from, int32_t to);
/* Run the graph to completion. */
mp_status sim_graph_run(sim_graph *g, mp_diag *d);
void sim_graph_free(sim_graph *g);

/* Pipeline schedules: the order of a stage's compute passes. */
enum { OP_F, OP_B, OP_W };
typedef struct {
    uint8_t type;
    int32_t mb, chunk;
} sim_op;
/* Writes the op order of stage `stage` (0..p-1) for M micro-batches and v chunks into out (room
 * for 3*M*v ops); returns the count. ZB-H1 needs v == 1 (checked by the caller). */
int64_t sim_schedule(mp_schedule s, int p, int v, int64_t M, int stage, sim_op *out);

/* The simulated step. */
struct mp_sim {
    sim_graph g;
    int pp, vpp;
    int64_t ranks_per_stage;     /* tp*cp*dp */
    int64_t straggler_rank;
    int straggler_stage;
    int64_t microbatches;
    double step_s;
    mp_schedule schedule;
};

/* The shortest slice trace.c writes, bytes: the optimizer's,
 *   ,\n{"ph":"X","pid":0,"tid":5,"ts":0.000,"dur":0.001,"name":"optimizer","cat":"optimizer",
 *   "args":{"what":"optimizer"}}
 * is 116; a compute slice carries its micro-batch, chunk and layer (141 and up), a collective its
 * bytes, algorithm and group. tests/test_sim.c checks every slice of real traces against it. */
#define SIM_TRACE_MIN_SLICE_BYTES 112

/* MP_OK, or MP_ERR_RANGE with the count, the cap and what to change in d when the step certainly
 * needs more than opts->max_events tasks (mp_sim_size_bound); mp_sim_run calls it first. */
mp_status sim_size_check(const mp_model *m, const mp_plan *p, const mp_estimate *e, const mp_sim_opts *opts,
                         mp_diag *d);

const char *sim_kind_name(sim_kind k);
const char *sim_stream_name(int s);

#endif
