/* src/plot/fig_pareto.c — the search's plans on the two axes it trades: memory per GPU (x) and
 * tokens/s (y). The memory frontier (mp_search_result.pareto_memory: no other plan is both
 * faster and lighter) is joined; the top list is scattered; #1 is marked; the capacity of the
 * GPU is the vertical line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshplan/format.h"
#include "plot_internal.h"

static mp_status add_entries(pc_chart *c, const char *name, const mp_search_entry *e, int n,
                             int color, int style)
{
    double *x = malloc(sizeof(double) * (size_t)(n ? n : 1)), *y = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!x || !y) {
        free(x);
        free(y);
        return MP_ERR_NOMEM;
    }
    for (int i = 0; i < n; i++) {
        x[i] = e[i].memory_bytes;
        y[i] = e[i].tokens_per_s;
    }
    mp_status st = pc_add_series(c, name, x, y, n, color, style, 0, 0);
    free(x);
    free(y);
    return st;
}

/* The plan's keys without the job's (gb, seq, precision) and without defaults that say nothing
 * here (vpp=1, ep=1, sp=0, flash=1, schedule=1f1b), for a subtitle that fits. */
static void short_plan(const mp_plan *p, char *out, size_t cap)
{
    static const char *const drop[] = {"gb=", "seq=", "precision=", "vpp=1", "ep=1", "sp=0",
                                       "flash=1", "schedule=1f1b", NULL};
    char full[512];
    mp_plan_format(p, full, sizeof full);
    size_t n = 0;
    out[0] = '\0';
    for (char *tok = strtok(full, ","); tok; tok = strtok(NULL, ",")) {
        int skip = 0;
        for (int i = 0; drop[i] && !skip; i++)
            skip = drop[i][strlen(drop[i]) - 1] == '=' ? !strncmp(tok, drop[i], strlen(drop[i]))
                                                       : !strcmp(tok, drop[i]);
        if (!skip && n + strlen(tok) + 2 < cap)
            n += (size_t)snprintf(out + n, cap - n, "%s%s", n ? "," : "", tok);
    }
}

mp_status mp_plot_pareto(const mp_search_result *r, const mp_plot_opts *opts, const char *path,
                         mp_diag *diag)
{
    if (!r || (!r->ntop && !r->npareto_memory)) {
        mp_diag_add(diag, "plot pareto: no feasible plan to draw (the search found none that fits)");
        return MP_ERR_INPUT;
    }
    pc_chart *c = pc_create(PC_XY, "pareto");
    if (!c)
        return MP_ERR_NOMEM;
    char top[64];
    snprintf(top, sizeof top, "top %d plans", r->ntop);
    mp_status st = add_entries(c, "frontier: throughput vs memory", r->pareto_memory,
                               r->npareto_memory, 0, PC_LINE | PC_MARKERS);
    if (st == MP_OK)
        st = add_entries(c, top, r->top, r->ntop, 1, PC_MARKERS);
    if (st == MP_OK && r->ntop)
        st = add_entries(c, "#1 (best by the objective)", r->top, 1, 3, PC_MARKERS);
    if (st != MP_OK) {
        pc_destroy(c);
        return st;
    }
    const mp_search_entry *best = r->ntop ? &r->top[0] : &r->pareto_memory[0];
    char cap[64], num[32];
    mp_format_binary(best->capacity_bytes, "B", 3, num, sizeof num);
    snprintf(cap, sizeof cap, "capacity %s", num);
    pc_add_ref(c, 1, best->capacity_bytes, cap);
    char plan[512], tps[32];
    short_plan(&best->plan, plan, sizeof plan);
    mp_format_si(best->tokens_per_s, "tok/s", 3, tps, sizeof tps);
    snprintf(c->title, sizeof c->title, "Search: %llu feasible plans of %llu, the frontier and the best",
             (unsigned long long)r->counts.feasible, (unsigned long long)r->counts.plans);
    snprintf(c->subtitle, sizeof c->subtitle, "#1 %s, %.1f%% MFU (%s): %.200s", tps, 100.0 * best->mfu,
             MP_MFU_CONVENTION_SHORT, plan);
    snprintf(c->x.label, sizeof c->x.label, "Memory per GPU, most loaded (bytes)");
    snprintf(c->x.unit, sizeof c->x.unit, "B");
    c->x.fmt = PC_NUM_BINARY;
    c->x.from_zero = 1;
    snprintf(c->y.label, sizeof c->y.label, "Throughput (tokens/s)");
    snprintf(c->y.unit, sizeof c->y.unit, "tok/s");
    c->y.fmt = PC_NUM_SI;
    c->y.from_zero = 1;
    return plot_finish(c, opts, path, diag);
}
