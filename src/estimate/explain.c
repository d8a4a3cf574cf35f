/* src/estimate/explain.c — the estimate in words: why a plan does not fit, and what bounds its
 * step (the largest part; for communication, the link of the outermost tier its group crosses). */
#include <stdio.h>

#include "estimate_internal.h"

static void add_reason(mp_estimate *e, const char *fmt, double a, double b, double c, double d)
{
    if (e->nreasons >= 4)
        return;
    snprintf(e->reasons[e->nreasons++], sizeof e->reasons[0], fmt, a, b, c, d);
}

void mp_est_explain(const mp_workload *w, const mp_cluster *c, const mp_plan *p,
                    const mp_estimate_opts *opts, mp_estimate *e)
{
    if (opts->skip_text)
        return; /* texts left empty on request (mp_estimate_opts.skip_text) */
    if (!e->feasible) {
        add_reason(e, "memory: %.1f GiB needed on the most loaded GPU, capacity %.1f GiB "
                      "(%.1f GiB allocated tensors + %.1f GiB runtime, NCCL and allocator reserve)",
                   e->memory.total / 1073741824.0, e->memory.capacity / 1073741824.0,
                   e->memory.allocated / 1073741824.0,
                   (e->memory.total - e->memory.allocated) / 1073741824.0);
    }
    const mp_group gsh = {w->g_shard_in.size * w->g_shard_out.size, w->g_shard_in.stride};
    enum { B_COMPUTE, B_RC, B_TP, B_CP, B_EP, B_PP, B_BUBBLE, B_DP, B_OPT, B_N };
    struct { const char *what; double t; } parts[B_N] = {
        {"compute", e->time.compute},
        {"recompute", e->time.recompute},
        {"TP communication", e->time.tp_comm},
        {"CP communication", e->time.cp_comm},
        {"EP all-to-all", e->time.ep_comm},
        {"pipeline send/recv", e->time.pp_comm},
        {"pipeline bubble", e->time.pp_bubble},
        {"exposed DP/ZeRO communication", e->time.dp_comm_exposed},
        {"optimizer step", e->time.optimizer},
    };
    size_t bi = 0;
    double comm_sum = e->time.tp_comm + e->time.cp_comm + e->time.ep_comm + e->time.pp_comm +
                      e->time.dp_comm_exposed;
    for (size_t i = 1; i < B_N; i++)
        if (parts[i].t > parts[bi].t)
            bi = i;
    if (!e->feasible) {
        snprintf(e->bottleneck, sizeof e->bottleneck, "memory (%.1f of %.1f GiB)",
                 e->memory.total / 1073741824.0, e->memory.capacity / 1073741824.0);
    } else if (bi == B_COMPUTE && comm_sum < 0.25 * e->step_s) {
        if (e->attention_frac > 0.5)
            snprintf(e->bottleneck, sizeof e->bottleneck,
                     "compute (%.0f%% of the step), dominated by attention (%.0f%% of compute at seq %lld)",
                     100.0 * e->time.compute / e->step_s, 100.0 * e->attention_frac, (long long)p->seq);
        else
            snprintf(e->bottleneck, sizeof e->bottleneck,
                     "compute (%.0f%% of the step; GEMMs at %.0f TFLOP/s achievable)",
                     100.0 * e->time.compute / e->step_s, w->rates.matmul_flops_per_s / 1e12);
    } else {
        /* The link: the outermost tier the group crosses. */
        const char *link = c->tier[0].link;
        mp_placement pl;
        mp_group grp = {1, 1};
        if (bi == B_TP) grp = w->g_tp;
        else if (bi == B_CP) grp = w->g_cp;
        else if (bi == B_EP) grp = w->g_ep;
        else if (bi == B_PP) grp = (mp_group){2, mp_plan_stride(p, MP_DIM_PP)};
        else if (bi == B_DP) grp = w->stage_expert_params_max > w->stage_params_max ? w->g_edp : gsh;
        int known = bi == B_TP ? e->tp_tier : bi == B_CP ? e->cp_tier : bi == B_PP ? e->pp_tier
                  : (bi == B_DP && grp.size == gsh.size && grp.stride == gsh.stride) ? e->dp_tier : -1;
        if (known >= 0 && known < c->ntiers) {
            link = c->tier[known].link;
        } else if (grp.size > 1) {
            mp_group_place(c, grp, &pl);
            if (bi == B_PP) {
                int t = 0;
                while (t < c->ntiers - 1 && grp.stride >= c->tier[t].domain_gpus)
                    t++;
                link = c->tier[t].link;
            } else if (pl.outer_tier >= 0) {
                link = c->tier[pl.outer_tier].link;
            }
        }
        int comm = bi == B_TP || bi == B_CP || bi == B_EP || bi == B_PP || bi == B_DP;
        snprintf(e->bottleneck, sizeof e->bottleneck, "%s (%.0f%% of the step)%s%s",
                 parts[bi].what, 100.0 * parts[bi].t / e->step_s, comm ? " over " : "",
                 comm ? link : "");
    }

}
