/* meshplan/report.h — writers for predictions and validation results (text table and JSON).
 * JSON keys are the stable interface of DESIGN.md ("predict --json", "validate --json"). */
#ifndef MESHPLAN_REPORT_H
#define MESHPLAN_REPORT_H

#include <stdio.h>
#include "meshplan/estimate.h"
#include "meshplan/validate.h"

/** The predict --json object as a malloc'd NUL-terminated string (caller frees), or NULL when
 *  out of memory. Keys: feasible, reasons, memory_bytes{...,per_stage[]}, step_s, time_s{...},
 *  tokens_per_s, tokens_per_s_per_gpu, model_tflops_per_gpu, hardware_tflops_per_gpu, mfu, hfu,
 *  bottleneck, plus model, cluster and plan echoes. */
char *mp_report_estimate_json(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                              const mp_estimate *e);

/** Human-readable table of the same. */
void mp_report_estimate_text(FILE *f, const mp_model *m, const mp_cluster *c, const mp_plan *p,
                             const mp_estimate *e);

/** validate --json: {"rows": [...], "skipped": [...], "summary": {...}} (malloc'd; caller frees). */
char *mp_report_validation_json(const mp_validation *v);

/** Per-row table, skipped rows, per-source summary and the overall summary. */
void mp_report_validation_text(FILE *f, const mp_validation *v);

#endif
