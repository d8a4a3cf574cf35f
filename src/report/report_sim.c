/* src/report/report_sim.c — the simulated step as JSON (meshplan/report.h mp_report_trace_json):
 * the object `meshplan trace --json` prints and `meshplan web`'s /api/trace answers, written in
 * one place so both stay the same. */
#include <jansson.h>

#include "meshplan/parts.h"
#include "meshplan/report.h"

/* Every step-time part, by the parts table (meshplan/parts.h), as every writer does. */
static json_t *time_json(const mp_time *t)
{
    json_t *o = json_object();
    for (int k = 0; k < MP_TIME_PART_COUNT; k++)
        json_object_set_new(o, mp_time_parts[k].key, json_real(mp_time_part_s(t, (mp_time_part)k)));
    return o;
}

char *mp_report_trace_json(const mp_plan *p, const mp_estimate *e, const mp_sim_opts *so,
                           const mp_sim_result *r, double wall_s, const char *trace_path)
{
    char pstr[512];
    mp_plan_format(p, pstr, sizeof pstr);
    json_t *o = json_object();
    json_t *js = json_object();
    json_object_set_new(js, "step_s", json_real(r->step_s));
    json_object_set_new(js, "time_s", time_json(&r->time));
    json_object_set_new(js, "bubble_frac", json_real(r->bubble_frac));
    json_object_set_new(js, "critical_stage", json_integer(r->critical_stage));
    json_object_set_new(js, "tasks", json_integer(r->tasks));
    json_object_set_new(js, "events", json_integer(r->events));
    json_object_set_new(js, "wall_s", json_real(wall_s));
    json_object_set_new(o, "simulated", js);
    json_t *ja = json_object();
    json_object_set_new(ja, "step_s", json_real(e->step_s));
    json_object_set_new(ja, "time_s", time_json(&e->time));
    json_object_set_new(o, "analytical", ja);
    json_object_set_new(o, "difference_pct", json_real(100.0 * (r->step_s - e->step_s) / e->step_s));
    json_t *jo = json_object();
    json_object_set_new(jo, "contention_frac", json_real(so->contention_frac));
    json_object_set_new(jo, "analytical_rules", json_boolean(so->analytical_rules));
    json_object_set_new(jo, "tp_overlap", json_boolean(so->tp_overlap));
    json_object_set_new(jo, "p2p_overlap", json_boolean(so->p2p_overlap));
    json_object_set_new(jo, "straggler_rank", json_integer(so->straggler_rank));
    json_object_set_new(jo, "straggler_stage", json_integer(r->straggler_stage));
    json_object_set_new(jo, "straggler_compute_factor", json_real(so->straggler_compute_factor));
    json_object_set_new(jo, "straggler_link_factor", json_real(so->straggler_link_factor));
    json_object_set_new(o, "options", jo);
    json_object_set_new(o, "plan", json_string(pstr));
    json_object_set_new(o, "trace", trace_path ? json_string(trace_path) : json_null());
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    json_decref(o);
    return s;
}
