/* src/sim/size.c — how large a simulated step will be, worked out from the plan and the estimate
 * before anything is allocated, so that a step over the caps is refused in microseconds instead
 * of after gigabytes of task graph (issue 15, defect 2).
 *
 * The count is a lower bound on the tasks build.c creates: only the tasks every pass of every
 * micro-batch certainly has, each counted when its duration rounds to at least 1 ns (build.c
 * makes no task of a zero duration, and contention, stragglers and copy-outs only lengthen a
 * task). Per micro-batch and layer of each kind (dense, MoE): the forward; the backward (with
 * ZB-H1 its input-gradient and weight-gradient halves); the recompute and its TP collectives;
 * the TP collectives of the forward and the backward; the CP exchange of each; an MoE layer's
 * all-to-all of each; the LM head's forward and backward on the last stage; and 2 (v p - 1)
 * pipeline sends per micro-batch. Left out, so the bound stays a bound whatever the overlap and
 * ZeRO settings: DP/ZeRO collectives, MTP modules, the embedding's FSDP2 copy-outs, the
 * optimizer steps. The engine processes at least one event per task (its end), and the trace
 * writes at least one slice per task (trace.c), so the same bound holds for both.
 * tests/test_sim.c checks bound <= actual, and 3 x bound >= actual, on plans of every schedule,
 * ZeRO stage, CP, MoE, FSDP2 and the analytical rules (measured: 0.39 to 1.0 of the tasks).
 */
#include <math.h>
#include <stdint.h>

#include "sim_internal.h"

/* 1 when s seconds become a task of at least 1 ns (build.c's to_ns rounds to nearest). */
static int64_t nonzero(double s)
{
    return s >= 0.5e-9 ? 1 : 0;
}

static int64_t clamp_i64(double x)
{
    return x >= 9.2e18 ? INT64_MAX : x <= 0.0 ? 0 : (int64_t)x;
}

/* One layer's times for one micro-batch (mp_step_parts' fields of its kind). */
typedef struct {
    double fwd, bwd, bwd_w, rc, tp, tp_rc, cp, ep_f, ep_b;
} layer_times;

/* Tasks one layer certainly has in one micro-batch: its forward and its backward pass. split:
 * ZB-H1 splits the backward into B (backward - weight gradient) and W (the weight gradient),
 * a task each when nonzero; otherwise the backward is one task (or, when the split is not known,
 * at least one of B and W). */
static int64_t layer_tasks(const layer_times *t, int zb, int split_known)
{
    int64_t n = nonzero(t->fwd) + nonzero(t->rc) + 2 * nonzero(t->tp) + nonzero(t->tp_rc) + 2 * nonzero(t->cp) +
                nonzero(t->ep_f) + nonzero(t->ep_b);
    if (zb && split_known) {
        double w = fmin(t->bwd_w, t->bwd);
        n += nonzero(t->bwd - w) + nonzero(w);
    } else {
        n += nonzero(t->bwd);
    }
    return n;
}

void mp_sim_size_bound(const mp_model *m, const mp_plan *p, const mp_estimate *e, const mp_sim_opts *opts,
                       mp_sim_size *out)
{
    mp_sim_opts defaults;
    if (!opts) {
        mp_sim_opts_init(&defaults);
        opts = &defaults;
    }
    *out = (mp_sim_size){0};
    if (p->pp < 1 || p->vpp < 1 || p->mb < 1 || p->dp < 1 || e->microbatches < 1 || m->layers < 1)
        return;
    const mp_step_parts *pt = &e->parts;
    const double P = (double)p->pp, nvs = P * (double)p->vpp;
    const int zb = p->schedule == MP_SCHED_ZB, rules = opts->analytical_rules;
    const layer_times dense = {pt->layer_fwd_s, pt->layer_bwd_s, pt->layer_bwd_weight_s, pt->layer_recompute_s,
                               pt->layer_tp_fwd_s, pt->layer_tp_recompute_s, pt->layer_cp_s, 0.0, 0.0};
    /* An MoE layer (build.c makes its units from the workload's MoE kind): its compute, TP and
     * all-to-all of each pass; CP as a dense layer's (the same attention); its recompute TP and
     * weight-gradient share are not in mp_step_parts, so not counted. */
    const layer_times moe = {pt->moe_layer_fwd_s, pt->moe_layer_bwd_s, 0.0, pt->moe_layer_recompute_s,
                             pt->moe_layer_tp_fwd_s, 0.0, pt->layer_cp_s, pt->moe_layer_ep_fwd_s,
                             pt->moe_layer_ep_bwd_s};
    const double L = (double)m->layers;
    const double L_moe = mp_model_is_moe(m) ? (double)mp_model_moe_layers_in(m, 0, m->layers) : 0.0;
    double per_mb;
    if (rules) {
        /* Every stage holds the slowest stage's units (its LM head folded into its layers): at
         * least floor(L / (p v)) layers a virtual stage, of either kind; count a task only where
         * both kinds have it. */
        layer_times both = dense;
        if (L_moe > 0) {
            both.fwd = fmin(dense.fwd, moe.fwd);
            both.bwd = fmin(dense.bwd, moe.bwd);
            both.rc = fmin(dense.rc, moe.rc);
            both.tp = fmin(dense.tp, moe.tp);
            both.tp_rc = 0.0;
        }
        per_mb = nvs * floor(L / nvs) * (double)layer_tasks(&both, zb, 0);
    } else {
        /* Each layer as its kind, and the LM head, a unit of its own on the last virtual stage. */
        per_mb = (L - L_moe) * (double)layer_tasks(&dense, zb, 1) + L_moe * (double)layer_tasks(&moe, zb, 0) +
                 (double)(nonzero(pt->head_fwd_s) + nonzero(pt->head_bwd_s));
    }
    if (p->pp > 1 && nonzero(pt->p2p_s)) /* a send after every pass but the last's */
        per_mb += 2.0 * (nvs - 1.0);
    const double M = (double)e->microbatches;

    out->microbatches = e->microbatches;
    out->tasks_per_microbatch = clamp_i64(per_mb);
    out->tasks_min = clamp_i64(per_mb * M);
    out->memory_bytes_min = clamp_i64(per_mb * M * (double)sizeof(sim_task));
    out->trace_bytes_min = clamp_i64(per_mb * M * (double)SIM_TRACE_MIN_SLICE_BYTES);
    out->trace_bytes_per_microbatch = clamp_i64(per_mb * (double)SIM_TRACE_MIN_SLICE_BYTES);
    /* The largest global batch within max_events: M <= max_events / per_mb micro-batches per DP
     * rank of mb sequences each. */
    if (per_mb > 0)
        out->max_gb = clamp_i64(floor((double)opts->max_events / per_mb) * (double)p->mb * (double)p->dp);
}

mp_status sim_size_check(const mp_model *m, const mp_plan *p, const mp_estimate *e, const mp_sim_opts *opts,
                         mp_diag *d)
{
    mp_sim_size z;
    mp_sim_size_bound(m, p, e, opts, &z);
    const int64_t cap = opts ? opts->max_events : MP_SIM_DEFAULT_MAX_EVENTS;
    if (z.tasks_min <= cap)
        return MP_OK;
    mp_diag_add(d, "simulation: the step needs at least %lld tasks and as many events (%lld micro-batches x %lld "
                   "tasks), more than max_events = %lld; they would take at least %.3g GB",
                (long long)z.tasks_min, (long long)z.microbatches, (long long)z.tasks_per_microbatch,
                (long long)cap, (double)z.memory_bytes_min / 1e9);
    if (z.max_gb >= p->mb * p->dp)
        mp_diag_add(d, "simulation: a global batch of gb = %lld sequences or less brings this count under the cap "
                       "(gb = %lld now), or raise max_events", (long long)z.max_gb, (long long)p->gb);
    else
        mp_diag_add(d, "simulation: even one micro-batch per DP rank needs %lld tasks: raise max_events",
                    (long long)z.tasks_per_microbatch);
    return MP_ERR_RANGE;
}
