/* src/plot/fig_collective.c — bus bandwidth vs message size, one line per algorithm (the
 * nccl-tests busbw convention: algbw times the op's factor, e.g. 2(n-1)/n for all-reduce;
 * nccl-tests doc/PERFORMANCE.md). */
#include <stdio.h>

#include "plot_internal.h"

mp_status mp_plot_collective(const mp_plot_coll_series *series, int nseries,
                             const mp_plot_opts *opts, const char *path, mp_diag *diag)
{
    if (!series || nseries < 1 || nseries > PC_MAX_SERIES) {
        mp_diag_add(diag, "plot collective: %d series: expected 1..%d", nseries, PC_MAX_SERIES);
        return MP_ERR_INPUT;
    }
    for (int i = 0; i < nseries; i++)
        if (!series[i].name || series[i].n < 1 || !series[i].bytes || !series[i].busbw_Bps) {
            mp_diag_add(diag, "plot collective: series %d has no points", i);
            return MP_ERR_INPUT;
        }
    pc_chart *c = pc_create(PC_XY, "collective");
    if (!c)
        return MP_ERR_NOMEM;
    snprintf(c->title, sizeof c->title, "Collective bus bandwidth vs message size");
    snprintf(c->x.label, sizeof c->x.label, "Message size (bytes, log scale)");
    snprintf(c->x.unit, sizeof c->x.unit, "B");
    c->x.fmt = PC_NUM_BINARY;
    c->x.scale = PC_SCALE_LOG2;
    snprintf(c->y.label, sizeof c->y.label, "Bus bandwidth (bytes/s, nccl-tests busbw)");
    snprintf(c->y.unit, sizeof c->y.unit, "B/s");
    c->y.fmt = PC_NUM_SI;
    c->y.from_zero = 1;
    mp_status st = MP_OK;
    for (int i = 0; i < nseries && st == MP_OK; i++)
        st = pc_add_series(c, series[i].name, series[i].bytes, series[i].busbw_Bps, series[i].n,
                           i + 1 == nseries && nseries > 1 ? 8 : i, PC_LINE | PC_MARKERS,
                           i + 1 < nseries, 0);
    if (st != MP_OK) {
        pc_destroy(c);
        return st;
    }
    return plot_finish(c, opts, path, diag);
}
