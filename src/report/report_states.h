/* src/report/report_states.h — the model's states and offload in predict's text and JSON
 * (internal to report/; report_states.c). */
#ifndef MESHPLAN_REPORT_STATES_H
#define MESHPLAN_REPORT_STATES_H

#include <jansson.h>
#include <stdio.h>

#include "meshplan/estimate.h"
#include "meshplan/plan.h"

/* Add "states" and "offload" objects to o (always, with stable keys). */
void mp_report_states_json(json_t *o, const mp_plan *p, const mp_estimate *e);

/* The states and offload lines of predict's text; nothing for a plan with the defaults
 * (adamw, fp32 states, master weights, full training, no offload). */
void mp_report_states_text(FILE *f, const mp_plan *p, const mp_estimate *e);

#endif
