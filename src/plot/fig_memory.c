/* src/plot/fig_memory.c — the memory stack per pipeline stage (bars) against the GPU capacity,
 * and the step's parts (one stacked horizontal bar per estimate), from an mp_estimate. */
#include <stdio.h>

#include "meshplan/format.h"
#include "plot_internal.h"

#define MEM_PARTS(X)                                       \
    X(weights, "weights", 0)                               \
    X(gradients, "gradients", 1)                           \
    X(optimizer, "optimizer states", 2)                    \
    X(activations, "activations", 3)                       \
    X(logits, "logits (last stage)", 4)                    \
    X(buffers, "buffers (comm., ZeRO-3, workspace)", 7)

mp_status mp_plot_memory(const mp_estimate *e, const mp_plot_opts *opts, const char *path,
                         mp_diag *diag)
{
    if (!e) {
        mp_diag_add(diag, "plot memory: no estimate to draw");
        return MP_ERR_INPUT;
    }
    pc_chart *c = pc_create(PC_BARS, "memory");
    if (!c)
        return MP_ERR_NOMEM;
#define X(field, name, color) pc_add_seg(c, name, color);
    MEM_PARTS(X)
#undef X
    int ns = e->nstages < 1 ? 1 : e->nstages > MP_MAX_STAGES ? MP_MAX_STAGES : e->nstages;
    int shown = ns > PC_MAX_CATS ? PC_MAX_CATS : ns;
    for (int i = 0; i < shown; i++) {
        /* more stages than bars: the first 31, an empty bar "...", the last 32 */
        int half = PC_MAX_CATS / 2;
        if (ns > PC_MAX_CATS && i == half - 1) {
            pc_add_cat(c, "...");
            continue;
        }
        int st = ns > PC_MAX_CATS && i >= half ? ns - (shown - i) : i;
        const mp_memory *m = e->nstages > 1 ? &e->per_stage[st] : &e->memory;
        char label[32];
        snprintf(label, sizeof label, "%d", st);
        int k = pc_add_cat(c, label), s = 0;
#define X(field, name, color) c->val[k][s++] = m->field;
        MEM_PARTS(X)
#undef X
    }
    char cap[64], tot[32], margin[32];
    mp_format_binary(e->memory.capacity, "B", 3, tot, sizeof tot);
    snprintf(cap, sizeof cap, "capacity %s", tot);
    pc_add_ref(c, 0, e->memory.capacity, cap);
    mp_format_binary(e->memory.total, "B", 3, tot, sizeof tot);
    mp_format_binary(e->memory.allocator_margin, "B", 3, margin, sizeof margin);
    snprintf(c->title, sizeof c->title, "Memory per GPU by pipeline stage (%s)",
             e->feasible ? "fits" : "does not fit");
    snprintf(c->subtitle, sizeof c->subtitle,
             "most loaded GPU %s; caching-allocator margin %s not stacked%s", tot, margin,
             ns > PC_MAX_CATS ? "; middle stages left out" : "");
    snprintf(c->x.label, sizeof c->x.label, "Pipeline stage");
    snprintf(c->y.label, sizeof c->y.label, "Memory per GPU (bytes)");
    snprintf(c->y.unit, sizeof c->y.unit, "B");
    c->y.fmt = PC_NUM_BINARY;
    c->y.from_zero = 1;
    return plot_finish(c, opts, path, diag);
}

#define TIME_PARTS(X)                                     \
    X(compute, "compute", 0)                              \
    X(recompute, "recompute", 5)                          \
    X(tp_comm, "TP communication", 1)                     \
    X(cp_comm, "CP communication", 9)                     \
    X(ep_comm, "EP all-to-all", 10)                       \
    X(pp_comm, "pipeline send/recv", 4)                   \
    X(pp_bubble, "pipeline bubble", 7)                    \
    X(dp_comm_exposed, "exposed DP/ZeRO communication", 3) \
    X(optimizer, "optimizer step", 2)

static void parts_row(pc_chart *c, const char *label, const mp_time *t)
{
    int row = pc_add_cat(c, label), s = 0;
    double x = 0;
#define X(field, name, color) \
    if (t->field > 0) { pc_add_rect(c, row, x, x + t->field, s); x += t->field; } s++;
    TIME_PARTS(X)
#undef X
}

mp_status mp_plot_parts(const mp_estimate *e, const mp_sim_result *sim, const mp_plot_opts *opts,
                        const char *path, mp_diag *diag)
{
    if (!e || !(e->step_s > 0)) {
        mp_diag_add(diag, "plot parts: no estimate with a positive step time to draw");
        return MP_ERR_INPUT;
    }
    pc_chart *c = pc_create(PC_ROWS, "parts");
    if (!c)
        return MP_ERR_NOMEM;
#define X(field, name, color) pc_add_seg(c, name, color);
    TIME_PARTS(X)
#undef X
    char a[32], b[32];
    mp_format_si(e->step_s, "s", 3, a, sizeof a);
    parts_row(c, "analytical", &e->time);
    if (sim) {
        parts_row(c, "simulated", &sim->time);
        mp_format_si(sim->step_s, "s", 3, b, sizeof b);
        snprintf(c->subtitle, sizeof c->subtitle, "analytical step %s, simulated %s (%+.1f%%); "
                 "communication hidden behind compute is not shown", a, b,
                 100.0 * (sim->step_s - e->step_s) / e->step_s);
    } else {
        snprintf(c->subtitle, sizeof c->subtitle, "step %s; communication hidden behind compute is "
                 "not shown (bottleneck: %s)", a, e->bottleneck);
    }
    snprintf(c->title, sizeof c->title, "The step's parts");
    snprintf(c->x.label, sizeof c->x.label, "Time in one training step (seconds)");
    snprintf(c->x.unit, sizeof c->x.unit, "s");
    c->x.fmt = PC_NUM_SI;
    c->x.from_zero = 1;
    c->x.tight = 1;
    snprintf(c->y.label, sizeof c->y.label, "Estimate");
    return plot_finish(c, opts, path, diag);
}
