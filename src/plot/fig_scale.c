/* src/plot/fig_scale.c — the scaling figure: tokens/s (left, log) and efficiency (right, %) vs
 * GPUs (log2), strong and weak scaling, and the ideal line (linear in N from the first count
 * that fits: T_ideal(N) = T(N0) * N / N0, the efficiency-1 line of docs/search.md "Scaling"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "plot_internal.h"

mp_status mp_plot_scale(const mp_plot_scale_point *pts, int n, const mp_plot_opts *opts,
                        const char *path, mp_diag *diag)
{
    if (!pts || n < 1 || n > PC_MAX_TICKS) {
        mp_diag_add(diag, "plot scale: %d GPU counts: expected 1..%d", n, PC_MAX_TICKS);
        return MP_ERR_INPUT;
    }
    int any = 0;
    for (int i = 0; i < n; i++)
        any |= pts[i].strong_ok || pts[i].weak_ok;
    if (!any) {
        mp_diag_add(diag, "plot scale: no plan fits at any of the %d GPU counts: nothing to draw", n);
        return MP_ERR_INPUT;
    }
    pc_chart *c = pc_create(PC_XY, "scale");
    double *buf = malloc(sizeof(double) * (size_t)n * 6);
    if (!c || !buf) {
        pc_destroy(c);
        free(buf);
        return MP_ERR_NOMEM;
    }
    double *gx = buf, *st = buf + n, *wk = buf + 2 * n, *se = buf + 3 * n, *we = buf + 4 * n,
           *ideal = buf + 5 * n;
    int ref = -1;
    for (int i = 0; i < n; i++) {
        gx[i] = (double)pts[i].gpus;
        st[i] = pts[i].strong_ok ? pts[i].strong_tokens_per_s : NAN;
        wk[i] = pts[i].weak_ok ? pts[i].weak_tokens_per_s : NAN;
        se[i] = pts[i].strong_ok ? pts[i].strong_efficiency_frac : NAN;
        we[i] = pts[i].weak_ok ? pts[i].weak_efficiency_frac : NAN;
        if (ref < 0 && pts[i].strong_ok)
            ref = i;
        c->x.ticks[c->x.nticks++] = gx[i];
    }
    for (int i = 0; i < n; i++)
        ideal[i] = ref >= 0 && i >= ref ? pts[ref].strong_tokens_per_s * gx[i] / gx[ref] : NAN;
    snprintf(c->title, sizeof c->title, "Scaling: throughput and efficiency vs GPU count");
    snprintf(c->x.label, sizeof c->x.label, "GPUs (count, log scale)");
    c->x.scale = PC_SCALE_LOG2;
    c->x.has_range = 1;
    c->x.min = gx[0] / 1.25;
    c->x.max = gx[n - 1] * 1.25;
    snprintf(c->y.label, sizeof c->y.label, "Throughput (tokens/s, log scale)");
    snprintf(c->y.unit, sizeof c->y.unit, "tok/s");
    c->y.fmt = PC_NUM_SI;
    c->y.scale = PC_SCALE_LOG10;
    c->has_y2 = 1;
    snprintf(c->y2.label, sizeof c->y2.label, "Scaling efficiency (%% of ideal)");
    c->y2.fmt = PC_NUM_PERCENT;
    c->y2.has_range = 1;
    c->y2.min = 0.0;
    c->y2.max = 1.2;
    mp_status s = MP_OK;
    if (s == MP_OK) s = pc_add_series(c, "tokens/s, strong (fixed batch)", gx, st, n, 0, PC_LINE | PC_MARKERS, 0, 0);
    if (s == MP_OK) s = pc_add_series(c, "tokens/s, weak (batch per GPU fixed)", gx, wk, n, 2, PC_LINE | PC_MARKERS, 0, 0);
    if (s == MP_OK) s = pc_add_series(c, "tokens/s, ideal (linear)", gx, ideal, n, 7, PC_LINE, 1, 0);
    if (s == MP_OK) s = pc_add_series(c, "efficiency, strong", gx, se, n, 1, PC_LINE | PC_MARKERS, 1, 1);
    if (s == MP_OK) s = pc_add_series(c, "efficiency, weak", gx, we, n, 3, PC_LINE | PC_MARKERS, 1, 1);
    free(buf);
    if (s != MP_OK) {
        pc_destroy(c);
        return s;
    }
    {
        char a[32];
        snprintf(a, sizeof a, "%lld", (long long)pts[ref].gpus);
        snprintf(c->subtitle, sizeof c->subtitle,
                 "efficiency = tokens/s per GPU relative to %s GPUs, the smallest count with a plan that fits", a);
    }
    return plot_finish(c, opts, path, diag);
}
