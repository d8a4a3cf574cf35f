/* meshplan/search.h — find the best parallel plan for a model on a cluster, and say why.
 *
 * The space (docs/search.md) is every plan mp_plan_resolve accepts for the job — model, GPU count,
 * global batch gb, sequence length, precision, attention kernel — built directly as resolved
 * mp_plan structs (no strings in the hot loop):
 *   degrees  tp, cp, pp over the divisors of the GPU count, dp = gpus / (tp*cp*pp); a degree shape
 *            that breaks a rule (mp_search_rule) is counted as rejected, with the rule;
 *   below    ZeRO stage 0-3 and HSDP shard groups (zero 3, every divisor of dp); the expert
 *            layout of MoE models (ep | experts, etp | moe_ffn_hidden, etp*ep | tp*cp*dp);
 *            vpp 1..layers/pp (schedule interleaved when vpp > 1, else 1F1B, unless pinned);
 *            sp 0/1 when tp > 1; recompute none|selective|full; CP ring or all-gather when
 *            cp > 1; mb every divisor of gb/dp; the rank order (Megatron-Core's default, or
 *            every distinct one with opts.all_orders) — only valid values are generated.
 *   job      gb, seq, precision, flash, attn_kernel, fp8_comm, capacity_factor and imbalance
 *            are the job's (from opts.pin), not searched.
 * Every plan is evaluated with mp_estimate_plan, in parallel with OpenMP. Pruning skips only
 * plans proven to be over memory (never a feasible one): a (sharding, expert layout, vpp)
 * subtree of a degree shape when the model states of its first plan already exceed the capacity
 * (weights, gradients, optimizer and buffers do not depend on sp, recompute, the CP algorithm or
 * mb), and the larger micro-batches of a line once one does not fit (memory is non-decreasing in
 * mb), and the expert layouts with no larger ep*etp than one proven so (the states never grow
 * with ep*etp; the layouts are walked in descending ep*etp); and skips, without evaluating, CP-algorithm and rank-order variants of a plan (same
 * memory, same compute) whose best possible step cannot enter the top list, a frontier or the
 * rank (counts.order_skipped; docs/search.md). Results are identical with pruning off and with any thread count: top plans and
 * frontiers are merged under one total order (mp_search_entry_cmp). tests/test_search.c checks
 * both against exhaustive enumeration.
 *
 * Sizes: Llama 3 405B on 16,384 GPUs at gb 2048 x 8192 is 6.0 million plans, 120 million with
 * every rank order (bench/bench_search.c).
 */
#ifndef MESHPLAN_SEARCH_H
#define MESHPLAN_SEARCH_H

#include <stdint.h>
#include <stdio.h>

#include "meshplan/estimate.h"
#include "meshplan/model.h"
#include "meshplan/plan.h"
#include "meshplan/status.h"
#include "meshplan/topo.h"

/** Most plans kept in the top list. */
#define MP_SEARCH_MAX_TOP 1000
/** Most points kept on one Pareto frontier (a cap; result.truncated says when it was hit). */
#define MP_SEARCH_MAX_FRONTIER 65536
/** Most plans in one space (about 10 minutes on two cores); larger spaces are refused with
 *  MP_ERR_RANGE — pin some keys. A build may set a smaller cap (the fuzz build does:
 *  fuzz/CMakeLists.txt, so that no input searches for longer than the fuzzer's timeout). */
#ifndef MP_SEARCH_MAX_PLANS
#define MP_SEARCH_MAX_PLANS 1000000000ULL
#endif
/** Most GPU counts searched at once. */
#define MP_SEARCH_MAX_CLUSTERS 64

/** What "best" means. All objectives are minimised through mp_search_entry.score. With one GPU
 *  count, throughput, time-to-train and cost rank plans identically (the tokens per step are the
 *  same for every plan); they differ when several GPU counts are searched. */
#define MP_OBJECTIVE_LIST(X)                                                                \
    X(MP_OBJ_THROUGHPUT, "throughput")       /* score: seconds per token (1 / tokens/s) */ \
    X(MP_OBJ_TIME_TO_TRAIN, "time-to-train") /* score: seconds to train opts.tokens */    \
    X(MP_OBJ_COST, "cost")                   /* score: USD per token at the GPU-hour price */ \
    X(MP_OBJ_ENERGY, "energy")               /* score: joules per token (needs opts.energy) */

typedef enum {
#define MP_X(n, s) n,
    MP_OBJECTIVE_LIST(MP_X)
#undef MP_X
    MP_OBJ_COUNT
} mp_objective;

/** "throughput", "time-to-train", "cost", "energy"; "?" for an invalid value. */
const char *mp_objective_name(mp_objective o);
/** Parse an objective name; MP_ERR_INPUT for an unknown one. */
mp_status mp_objective_parse(const char *s, mp_objective *out);

/** Rules a degree shape (tp, cp, pp, dp) can break; the same checks as mp_plan_resolve. */
#define MP_SEARCH_RULE_LIST(X)                                                                  \
    X(MP_RULE_TP_HEADS, "tp_heads", "tp does not divide the attention heads")                 \
    X(MP_RULE_TP_KV_HEADS, "tp_kv_heads", "tp neither divides the KV heads nor is a multiple of them") \
    X(MP_RULE_TP_FFN, "tp_ffn", "tp does not divide ffn_hidden")                              \
    X(MP_RULE_CP_SEQ, "cp_seq", "seq is not divisible by 2*cp (causal load balancing)")       \
    X(MP_RULE_PP_LAYERS, "pp_layers", "more pipeline stages than layers")                     \
    X(MP_RULE_GB_DP, "gb_dp", "the global batch is not divisible by dp")

typedef enum {
#define MP_X(n, k, s) n,
    MP_SEARCH_RULE_LIST(MP_X)
#undef MP_X
    MP_RULE_COUNT
} mp_search_rule;

/** Short key ("tp_heads") and sentence of a rule; "?" for an invalid value. */
const char *mp_search_rule_key(mp_search_rule r);
const char *mp_search_rule_text(mp_search_rule r);

/** Energy of one training step of plan p on cluster c, joules: the hook through which the energy
 *  model (issue 6) plugs into the search. Returns MP_OK or an error (the plan is then counted as
 *  failed). Called from several threads at once: it must be reentrant. */
typedef mp_status (*mp_energy_fn)(void *ctx, const mp_model *m, const mp_cluster *c,
                                  const mp_plan *p, const mp_estimate *e, double *joules_per_step);

/** Progress: share of the space done, [0, 1], and plans done. Called from one thread at a time. */
typedef void (*mp_progress_fn)(void *ctx, double done_frac, uint64_t plans_done);

/** Search options. Initialise with mp_search_opts_init, then set what you need. */
typedef struct {
    /* The job and any pinned dimension. gb (> 0) is required; seq 0 = the model's default;
     * precision, flash, attn_kernel, fp8_comm, moe_capacity_factor and moe_imbalance are the
     * job's (defaults bf16, flash on, fa2, off, dropless, the estimator's). A dimension is free
     * unless set: tp, pp, vpp, dp, cp, ep, etp, mb, hsdp 0; sp -1; zero -1; recompute
     * MP_RC_COUNT; cp_algo MP_CP_ALGO_COUNT; schedule free unless schedule_given. Pinned values
     * restrict the space to plans that have them. */
    mp_plan pin;
    mp_objective objective;          /* default MP_OBJ_THROUGHPUT */
    double tokens;                   /* token budget, > 0 for MP_OBJ_TIME_TO_TRAIN; 0 = none */
    double price_per_gpu_hour;       /* USD, > 0 for MP_OBJ_COST; 0 = no price */
    mp_energy_fn energy;             /* energy model hook; NULL = none */
    void *energy_ctx;
    int top_n;                       /* plans kept, 1..MP_SEARCH_MAX_TOP (default 10) */
    int threads;                     /* 0 = OpenMP's default (all cores); 1 = serial */
    int prune;                       /* 1 (default): skip plans proven over memory; 0: evaluate all */
    int all_orders;                  /* 0 (default): the default rank order (Megatron-Core's
                                        tp-cp-ep-dp-pp) only; 1: every distinct rank order (up
                                        to 24x the plans); a pinned order (pin.order_listed) is
                                        the only one either way */
    const mp_estimate_opts *estimate; /* estimator assumptions; NULL = defaults */
    const mp_plan *rank_plan;        /* optional resolved plan: report its rank (result.rank_*) */
    int rank_cluster;                /* index of the cluster rank_plan runs on */
    mp_progress_fn progress;         /* optional */
    void *progress_ctx;
    /* Added later. */
    int64_t parallel_min_plans;      /* spaces with fewer plans run on one thread whatever
                                        `threads` says (starting a team costs more than it
                                        gains there; results never depend on it); 0 = the
                                        default, MP_SEARCH_PARALLEL_MIN_PLANS; 1 = always
                                        `threads` (the tests' thread-independence checks) */
} mp_search_opts;

/** Default of mp_search_opts.parallel_min_plans: a space this small is tens of milliseconds of
 *  work on one core (bench/search_speed.sh measures both sides). */
#define MP_SEARCH_PARALLEL_MIN_PLANS 50000

/** Defaults: pin = the free plan above, objective throughput, top 10, all threads, pruning on. */
void mp_search_opts_init(mp_search_opts *o);

/** One evaluated plan. */
typedef struct {
    mp_plan plan;                    /* resolved */
    int cluster;                     /* index into the clusters searched */
    int64_t gpus;
    int feasible;                    /* fits in memory */
    double score;                    /* objective value, lower is better */
    double step_s, tokens_per_s, mfu;
    double memory_bytes;             /* most loaded GPU, everything it holds (estimate.h
                                        mp_memory.total: runtime parts included) */
    double capacity_bytes;
    double headroom_bytes;           /* capacity - memory; negative when over */
    double time_to_train_s;          /* steps to train opts.tokens x step_s; 0 without a budget */
    double cost_usd;                 /* at opts.price_per_gpu_hour: for opts.tokens, else per
                                        million tokens; 0 without a price */
    double energy_J_per_token;       /* from opts.energy; 0 without it */
    char bottleneck[160];            /* filled for the plans in the result lists */
    /* Added later. */
    int verdict;                     /* mp_verdict (estimate.h): fits, tight (inside the
                                        margin: may run out of memory) or oom */
} mp_search_entry;

/** The total order of the ranking: score ascending, then memory headroom descending, then fewer
 *  GPUs, then the plan keys tp, cp, pp, vpp, dp, ep, etp, cp_algo, mb, sp, zero, hsdp,
 *  recompute, schedule ascending. Returns <0, 0 (same plan and cluster) or >0. */
int mp_search_entry_cmp(const mp_search_entry *a, const mp_search_entry *b);

/** Counts over the space searched (sums over the clusters). */
typedef struct {
    uint64_t shapes;                 /* degree shapes (tp, cp, pp) tried, pins applied */
    uint64_t shapes_rejected;        /* of which cannot be formed */
    uint64_t rule[MP_RULE_COUNT];    /* shapes breaking each rule (a shape may break several) */
    uint64_t plans;                  /* plans in the space (formed) */
    uint64_t evaluated;              /* plans fully evaluated (timed) by mp_estimate_plan */
    uint64_t feasible;
    uint64_t over_memory;            /* infeasible: over the GPU memory (evaluated or proven) */
    uint64_t over_memory_proven;     /* of which skipped without evaluation */
    uint64_t failed;                 /* the estimator (or energy hook) returned an error */
    uint64_t order_skipped;          /* feasible communication variants (CP algorithm, rank order)
                                        not evaluated: proven unable to enter the top list, a
                                        frontier or a rank */
    /* Added later. */
    uint64_t memory_checked;         /* over memory, found from mp_estimate_plan's memory alone
                                        (opts feasibility_only, with pruning) and never timed;
                                        in over_memory, not in evaluated nor over_memory_proven */
    uint64_t bound_skipped;          /* feasible plans never timed: a lower bound on their step
                                        (src/search/bound.c) proved they cannot enter the top
                                        list, a frontier or the rank; in feasible. evaluated +
                                        memory_checked + over_memory_proven + order_skipped +
                                        bound_skipped = plans */
} mp_search_counts;

/** Why the winner beats the runner-up. */
typedef struct {
    char text[1024];                 /* a few sentences */
    char differs[256];               /* plan keys that differ, "pp 16 vs 8, vpp 2 vs 1" */
    char term[48];                   /* the time term that differs most ("pipeline bubble") */
    double term_winner_s, term_runner_up_s;
    char memory_term[32];            /* the memory component that differs most */
    double memory_winner_bytes, memory_runner_up_bytes;
    double step_winner_s, step_runner_up_s;
    int tied;                        /* equal scores: decided by the tie-break order */
} mp_search_explanation;

typedef struct {
    mp_search_entry *top;            /* best first, ntop <= opts.top_n */
    int ntop;
    mp_search_entry *pareto_memory;  /* throughput vs memory headroom, fastest first */
    int npareto_memory;
    mp_search_entry *pareto_cost;    /* throughput vs cost per token (with a price), fastest first */
    int npareto_cost;
    int truncated;                   /* a frontier hit MP_SEARCH_MAX_FRONTIER */
    mp_search_counts counts;
    int have_least_memory;           /* no plan fits: the evaluated plan needing the least memory */
    mp_search_entry least_memory;
    int have_explanation;            /* ntop >= 2: why #1 beats #2 */
    mp_search_explanation explanation;
    uint64_t winner_ties;            /* plans with #1's score, #1 included */
    uint64_t next_distinct_rank;     /* when #2 ties with #1: the rank of the first plan that scores
                                        differently (winner_ties + 1), explained against #1 in
                                        explanation_next; 0 when #2 does not tie or none exists */
    mp_search_entry next_distinct;
    mp_search_explanation explanation_next;
    /* opts.rank_plan: */
    int rank_in_space;               /* the plan is one of the space's plans */
    int rank_feasible;
    uint64_t rank;                   /* 1 + feasible plans ordered before it (when feasible) */
    mp_search_entry rank_entry;
    double wall_s;                   /* search time */
    int threads;                     /* threads used */
    /* Added later. */
    char unformable[1024];           /* counts.plans == 0 (no plan can be formed at all, as
                                        opposed to none fitting in memory): why — the rules every
                                        degree shape breaks, or the pins — and the nearest GPU
                                        counts (in steps of clusters[0]'s node) and global batches
                                        near clusters[0] that have a plan; "" otherwise */
} mp_search_result;

/** Search the plans of model m on each of the clusters (1..MP_SEARCH_MAX_CLUSTERS, e.g. one GPU
 *  count or a doubling range). Errors: MP_ERR_INPUT (gb missing, a bad option or pin, the model
 *  or precision unsupported, the energy objective without opts.energy: "energy objective needs
 *  the energy model (issue 6)"), MP_ERR_RANGE (more than MP_SEARCH_MAX_PLANS plans), MP_ERR_NOMEM.
 *  A space with no feasible plan is an answer
 *  (ntop == 0, have_least_memory). A space with no plan at all (counts.plans == 0: every degree
 *  shape breaks a rule, or the pins leave nothing) returns MP_OK with nothing evaluated and
 *  result.unformable saying why and what would have a plan; the CLI treats it as bad input
 *  (exit 2), as DESIGN.md treats a plan that cannot be formed. Free with mp_search_result_free. */
mp_status mp_search(const mp_model *m, const mp_cluster *clusters, int nclusters,
                    const mp_search_opts *opts, mp_search_result *out, mp_diag *diag);

void mp_search_result_free(mp_search_result *r);

/** Visit every plan of the space of model m on gpus GPUs (serially, in enumeration order, no
 *  evaluation). visit returns 0 to go on, non-zero to stop. counts (optional) receives the shape
 *  and plan counts. Errors as mp_search. */
mp_status mp_search_enumerate(const mp_model *m, int64_t gpus, const mp_search_opts *opts,
                              int (*visit)(void *ctx, const mp_plan *p), void *ctx,
                              mp_search_counts *counts, mp_diag *diag);

/** Evaluate one resolved plan on cluster c as the search would (score, headroom, bottleneck).
 *  Errors: those of mp_estimate_plan and of the energy hook. */
mp_status mp_search_evaluate(const mp_model *m, const mp_cluster *c, int cluster_index,
                             const mp_search_opts *opts, const mp_plan *p, mp_search_entry *out,
                             mp_diag *diag);

/** Explain why entry a beats b: the plan keys that differ, the step time term and the memory
 *  component that differ most. Both are re-evaluated on their clusters. rank_a and rank_b (>= 1)
 *  name them in the text ("#1 beats #2"). */
mp_status mp_search_explain(const mp_model *m, const mp_cluster *clusters, int nclusters,
                            const mp_search_opts *opts, const mp_search_entry *a, int rank_a,
                            const mp_search_entry *b, int rank_b, mp_search_explanation *out,
                            mp_diag *diag);

/** Writers. Text: the top plans, the frontiers, the rejections, the explanation. JSON: one
 *  object (malloc'd, caller frees; NULL when out of memory), no NaN or infinity. CSV: a header
 *  and one row per plan of the top list and the frontiers, the `set` column saying which. */
void mp_search_report_text(FILE *f, const mp_model *m, const mp_cluster *clusters, int nclusters,
                           const mp_search_opts *opts, const mp_search_result *r);
char *mp_search_report_json(const mp_model *m, const mp_cluster *clusters, int nclusters,
                            const mp_search_opts *opts, const mp_search_result *r);
void mp_search_report_csv(FILE *f, const mp_search_opts *opts, const mp_search_result *r);

#endif
