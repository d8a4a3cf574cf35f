/* src/plot/fig_timeline.c — a simulated step as a Gantt chart. The slices come from the
 * simulator's public output, its Chrome trace (mp_sim_write_trace: "X" events with pid = stage,
 * tid = stream, ts/dur in microseconds, cat and name), read back with jansson; slices of one
 * row and colour closer than 1/1500 of the step are merged (they would share a pixel). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "meshplan/format.h"
#include "plot_internal.h"

#define MAX_STREAMS 8
#define MAX_DRAWN_STAGES 8

enum { K_FWD, K_BWD, K_WGRAD, K_RECOMPUTE, K_TP, K_CP, K_PP, K_DP, K_OPT, K_COUNT };
static const struct { const char *name; int color; } kinds[K_COUNT] = {
    {"forward", 0}, {"backward", 5}, {"weight gradient", 10}, {"recompute", 6},
    {"TP collective", 1}, {"CP exchange", 9}, {"pipeline send", 4}, {"DP/ZeRO collective", 3},
    {"optimizer", 2},
};

static int kind_of(const char *cat, const char *name)
{
    if (!strcmp(cat, "compute"))
        return name[0] == 'B' ? K_BWD : name[0] == 'W' ? K_WGRAD : name[0] == 'R' ? K_RECOMPUTE : K_FWD;
    if (!strcmp(cat, "tp")) return K_TP;
    if (!strcmp(cat, "cp")) return K_CP;
    if (!strcmp(cat, "pp")) return K_PP;
    if (!strcmp(cat, "optimizer")) return K_OPT;
    return K_DP;
}

/* The trace of s as a jansson tree (NULL on error, said in d). */
static json_t *read_trace(const mp_sim *s, mp_diag *d)
{
    FILE *f = tmpfile();
    if (!f) {
        mp_diag_add(d, "plot timeline: no temporary file for the trace");
        return NULL;
    }
    json_t *root = NULL;
    if (mp_sim_write_trace(s, f, NULL, d) == MP_OK) {
        rewind(f);
        json_error_t err;
        root = json_loadf(f, 0, &err);
        if (!root)
            mp_diag_add(d, "plot timeline: the trace does not parse: %s", err.text);
    }
    fclose(f);
    return root;
}

/* Stages drawn: all up to 8, else the first 4 and the last 4. Returns the row base of stage st
 * (row = base + stream slot), or -1 when it is left out. */
static int stage_slot(int st, int pp)
{
    if (pp <= MAX_DRAWN_STAGES)
        return st;
    if (st < MAX_DRAWN_STAGES / 2)
        return st;
    if (st >= pp - MAX_DRAWN_STAGES / 2)
        return st - (pp - MAX_DRAWN_STAGES);
    return -1;
}

typedef struct { double x0, x1; int kind, used; } last_span;

static mp_status add_spans(pc_chart *c, json_t *events, int pp, const int *row_of, double step_us)
{
    last_span last[MAX_DRAWN_STAGES * MAX_STREAMS];
    memset(last, 0, sizeof last);
    double gap = step_us / 1500.0; /* under a pixel of a 1500-pixel-wide plot */
    size_t i;
    json_t *ev;
    json_array_foreach(events, i, ev) {
        const char *ph = json_string_value(json_object_get(ev, "ph"));
        if (!ph || strcmp(ph, "X"))
            continue;
        int st = (int)json_integer_value(json_object_get(ev, "pid"));
        int q = (int)json_integer_value(json_object_get(ev, "tid"));
        int slot = st >= 0 && st < pp ? stage_slot(st, pp) : -1;
        if (slot < 0 || q < 0 || q >= MAX_STREAMS || row_of[slot * MAX_STREAMS + q] < 0)
            continue;
        double ts = json_number_value(json_object_get(ev, "ts")), dur = json_number_value(json_object_get(ev, "dur"));
        const char *cat = json_string_value(json_object_get(ev, "cat")), *name = json_string_value(json_object_get(ev, "name"));
        int k = kind_of(cat ? cat : "", name ? name : "");
        last_span *l = &last[slot * MAX_STREAMS + q];
        if (l->used && l->kind == k && ts - l->x1 < gap) {
            l->x1 = fmax(l->x1, ts + dur);
            continue;
        }
        if (l->used) {
            mp_status s = pc_add_rect(c, row_of[slot * MAX_STREAMS + q], l->x0 * 1e-6, l->x1 * 1e-6, l->kind);
            if (s != MP_OK)
                return s;
        }
        *l = (last_span){ts, ts + dur, k, 1};
    }
    for (int r = 0; r < MAX_DRAWN_STAGES * MAX_STREAMS; r++)
        if (last[r].used) {
            mp_status s = pc_add_rect(c, row_of[r], last[r].x0 * 1e-6, last[r].x1 * 1e-6, last[r].kind);
            if (s != MP_OK)
                return s;
        }
    return MP_OK;
}

/* One row per (drawn stage, stream that has a thread_name); fills row_of. */
static void add_rows(pc_chart *c, json_t *events, int pp, int *row_of)
{
    char names[MAX_DRAWN_STAGES * MAX_STREAMS][32];
    memset(names, 0, sizeof names);
    size_t i;
    json_t *ev;
    json_array_foreach(events, i, ev) {
        const char *ph = json_string_value(json_object_get(ev, "ph"));
        const char *nm = json_string_value(json_object_get(ev, "name"));
        if (!ph || strcmp(ph, "M") || !nm || strcmp(nm, "thread_name"))
            continue;
        int st = (int)json_integer_value(json_object_get(ev, "pid"));
        int q = (int)json_integer_value(json_object_get(ev, "tid"));
        int slot = st >= 0 && st < pp ? stage_slot(st, pp) : -1;
        const char *tn = json_string_value(json_object_get(json_object_get(ev, "args"), "name"));
        if (slot >= 0 && q >= 0 && q < MAX_STREAMS && tn)
            snprintf(names[slot * MAX_STREAMS + q], sizeof names[0], "%s", tn);
    }
    for (int st = 0; st < pp; st++) {
        int slot = stage_slot(st, pp);
        if (slot < 0)
            continue;
        for (int q = 0; q < MAX_STREAMS; q++) {
            int r = slot * MAX_STREAMS + q;
            row_of[r] = -1;
            if (!names[r][0])
                continue;
            char label[64];
            snprintf(label, sizeof label, "stage %d %s", st, names[r]);
            row_of[r] = pc_add_cat(c, label);
        }
    }
}

mp_status mp_plot_timeline(const mp_sim *s, const mp_sim_result *r, const mp_plot_opts *opts,
                           const char *path, mp_diag *diag)
{
    if (!s || !r) {
        mp_diag_add(diag, "plot timeline: no simulated step to draw (mp_sim_run's sim and result)");
        return MP_ERR_INPUT;
    }
    json_t *root = read_trace(s, diag);
    if (!root)
        return MP_ERR_INTERNAL;
    pc_chart *c = pc_create(PC_ROWS, "timeline");
    if (!c) {
        json_decref(root);
        return MP_ERR_NOMEM;
    }
    for (int k = 0; k < K_COUNT; k++)
        pc_add_seg(c, kinds[k].name, kinds[k].color);
    json_t *events = json_object_get(root, "traceEvents");
    int pp = r->nstages > 0 ? r->nstages : 1;
    int row_of[MAX_DRAWN_STAGES * MAX_STREAMS];
    for (int i = 0; i < MAX_DRAWN_STAGES * MAX_STREAMS; i++)
        row_of[i] = -1;
    add_rows(c, events, pp, row_of);
    mp_status st = add_spans(c, events, pp, row_of, r->step_s * 1e6);
    json_decref(root);
    if (st != MP_OK) {
        pc_destroy(c);
        return st;
    }
    char step[32];
    mp_format_si(r->step_s, "s", 3, step, sizeof step);
    snprintf(c->title, sizeof c->title, "Simulated training step: %s, %d pipeline stage%s", step, pp,
             pp > 1 ? "s" : "");
    snprintf(c->subtitle, sizeof c->subtitle,
             "one rank per stage; bubble %.1f%% of the step, critical stage %d%s", 100.0 * r->bubble_frac,
             r->critical_stage, pp > MAX_DRAWN_STAGES ? "; middle stages left out" : "");
    snprintf(c->x.label, sizeof c->x.label, "Time since the step started (seconds)");
    snprintf(c->x.unit, sizeof c->x.unit, "s");
    c->x.fmt = PC_NUM_SI;
    c->x.from_zero = 1;
    c->x.tight = 1;
    snprintf(c->y.label, sizeof c->y.label, "Stage and stream");
    return plot_finish(c, opts, path, diag);
}
