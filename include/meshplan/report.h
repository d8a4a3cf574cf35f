/* meshplan/report.h — writers for predictions and validation results (text table and JSON).
 * JSON keys are the stable interface of DESIGN.md ("predict --json", "validate --json"). */
#ifndef MESHPLAN_REPORT_H
#define MESHPLAN_REPORT_H

#include <stdio.h>
#include "meshplan/estimate.h"
#include "meshplan/sim.h"
#include "meshplan/run.h"
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

/** predict --format markdown: tables to paste into a document or a ticket — the job and its
 *  answer (readable numbers, meshplan/format.h; the MFU convention named), the step's parts
 *  and the memory per stage. */
void mp_report_estimate_markdown(FILE *f, const mp_model *m, const mp_cluster *c, const mp_plan *p,
                                 const mp_estimate *e);

/** predict --csv: with header != 0 the header line, then one row of exact values (SI units:
 *  seconds, bytes, tokens/s; mfu and hfu as fractions), columns model, cluster, gpu, gpus, plan,
 *  feasible, step_s, tokens_per_s, tokens_per_s_per_gpu, model_tflops_per_gpu,
 *  hardware_tflops_per_gpu, mfu, hfu, memory_total_bytes, memory_capacity_bytes, time_<part>_s
 *  for the nine parts of time_s, dp_comm_total_s, bottleneck. The plan pastes back into --plan. */
void mp_report_estimate_csv(FILE *f, const mp_model *m, const mp_cluster *c, const mp_plan *p,
                            const mp_estimate *e, int header);

/** trace --json (and web's /api/trace): {"simulated": {step_s, time_s{...}, bubble_frac,
 *  critical_stage, tasks, events, wall_s}, "analytical": {step_s, time_s{...}},
 *  "difference_pct", "options": {...}, "plan", "trace"} for plan p, its estimate e and the
 *  simulated step r run with options so in wall_s seconds; trace_path is the Chrome trace
 *  written (NULL: none, null in the JSON). Malloc'd (caller frees), NULL when out of memory. */
char *mp_report_trace_json(const mp_plan *p, const mp_estimate *e, const mp_sim_opts *so,
                           const mp_sim_result *r, double wall_s, const char *trace_path);

/** validate --json: {"rows": [...], "skipped": [...], "summary": {...}} (malloc'd; caller frees). */
char *mp_report_validation_json(const mp_validation *v);

/** Per-row table, skipped rows, per-source summary and the overall summary. */
void mp_report_validation_text(FILE *f, const mp_validation *v);

/** run --json: the priced run r of plan p (model m, cluster c, step e) under options o, as
 *  mp_run_plan returned it (malloc'd; caller frees; NULL when out of memory). Keys: model, gpu,
 *  num_gpus, plan, feasible, reasons, tokens, steps, step_s, step_uncapped_s, phase_s,
 *  phase_power_W, energy_J_per_step(_by_level), energy_J_per_mtoken(_by_level), power_W{...},
 *  power_model, energy_MWh, co2e_t, grid_gco2_per_kwh, gpu_hours(_billed), cost_usd,
 *  cost_usd_per_mtoken, cost{...}, failures{...}, checkpoint{...}, restart_s, goodput,
 *  goodput_expected, goodput_mc{...}, wall_clock_s{...}, time_s{...}, trials, seed. */
char *mp_report_run_json(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                         const mp_estimate *e, const mp_run_opts *o, const mp_run_result *r);

#endif
