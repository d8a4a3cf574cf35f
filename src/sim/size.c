/* src/sim/size.c — how large a simulated step will be, worked out from the plan and the estimate
 * before anything is allocated, so that a step over the caps is refused in microseconds instead
 * of after gigabytes of task graph (issue 15, defect 2).
 *
 * The count is a lower bound on the tasks build.c creates: only the tasks every pass of every
 * micro-batch certainly has, each counted when its duration rounds to at least 1 ns (build.c
 * makes no task of a zero duration, and contention, stragglers and copy-outs only lengthen a
 * task). Per micro-batch and layer: the forward; the backward (with ZB-H1 its input-gradient and
 * weight-gradient halves); the recompute and its TP collectives; the TP collectives of the
 * forward and the backward; the CP exchange of each; the LM head's forward and backward on the
 * last stage; 2 (v p - 1) pipeline sends per micro-batch; and the MoE layers' all-to-all of each
 * pass. Left out, so the bound stays a
 * bound whatever the overlap and ZeRO settings: DP/ZeRO collectives, the embedding's FSDP2
 * copy-outs, the optimizer steps. The engine processes at least one event per task (its end),
 * and the trace writes at least one slice per task (trace.c), so the same bound holds for both.
 * tests/test_sim.c checks bound <= actual, and bound >= half of actual, on plans of every
 * schedule, ZeRO stage, CP, MoE and the analytical rules.
 */
#include <math.h>
#include <stdint.h>

#include "sim_internal.h"

/* 1 when s seconds become a task of at least 1 ns (build.c's to_ns rounds to nearest). */
static int64_t nonzero(double s)
{
    return s >= 0.5e-9 ? 1 : 0;
}

/* Both kinds of layer, where the model has MoE layers: a task is certain only when the dense and
 * the MoE layer's time are both nonzero (the simulator runs each layer as its kind). */
static int64_t layer_nonzero(const mp_model *m, double dense_s, double moe_s)
{
    return nonzero(dense_s) && (!mp_model_is_moe(m) || moe_s <= 0.0 || nonzero(moe_s));
}

static int64_t clamp_i64(double x)
{
    return x >= 9.2e18 ? INT64_MAX : x <= 0.0 ? 0 : (int64_t)x;
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
    const int zb = p->schedule == MP_SCHED_ZB;
    /* Layers simulated: L, or under the analytical rules every stage as the slowest, at least
     * floor(L / p) each. */
    const double layers = opts->analytical_rules ? P * (double)(m->layers / p->pp) : (double)m->layers;

    /* Tasks of one layer in one micro-batch (forward pass + backward pass). */
    int64_t per_layer = layer_nonzero(m, pt->layer_fwd_s, pt->moe_layer_fwd_s) +
                        layer_nonzero(m, pt->layer_recompute_s, pt->moe_layer_recompute_s) +
                        2 * layer_nonzero(m, pt->layer_tp_fwd_s, pt->moe_layer_tp_fwd_s) +
                        (mp_model_is_moe(m) ? 0 : nonzero(pt->layer_tp_recompute_s)) + 2 * nonzero(pt->layer_cp_s);
    int64_t head = 0;
    if (zb && !opts->analytical_rules) {
        /* B = backward - weight gradient and W = weight gradient, as build.c splits them. */
        double w = fmin(pt->layer_bwd_weight_s, pt->layer_bwd_s);
        per_layer += nonzero(pt->layer_bwd_s - w) + nonzero(w);
    } else {
        per_layer += layer_nonzero(m, pt->layer_bwd_s, pt->moe_layer_bwd_s); /* B, or B and W */
    }
    if (!opts->analytical_rules) /* the LM head is its own unit on the last virtual stage */
        head = nonzero(pt->head_fwd_s) + nonzero(pt->head_bwd_s);
    const double sends = p->pp > 1 && nonzero(pt->p2p_s) ? 2.0 * (nvs - 1.0) : 0.0;
    /* The MoE layers' dispatch + combine all-to-all, one task per pass (forward, backward, and
     * the recompute forward under full recompute), on the MoE layers the model has; none counted
     * under the analytical rules, where every stage copies the slowest one's layers. */
    double ep = 0.0;
    if (mp_model_is_moe(m) && !opts->analytical_rules)
        ep = (double)mp_model_moe_layers_in(m, 0, m->layers) *
             (double)(nonzero(pt->moe_layer_ep_fwd_s) + nonzero(pt->moe_layer_ep_bwd_s) +
                      (p->recompute == MP_RC_FULL ? nonzero(pt->moe_layer_ep_fwd_s) : 0));
    const double per_mb = layers * (double)per_layer + (double)head + sends + ep;
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
