/* meshplan/meshplan.h — umbrella header: everything a program needs to predict and plan
 * distributed LLM training with meshplan.
 *
 * Flow (DESIGN.md): catalog -> model + cluster (topo) + plan -> estimate -> report.
 *   mp_catalog_create, mp_catalog_model / mp_model_from_hf_json, mp_cluster_from_catalog,
 *   mp_plan_parse + mp_plan_resolve, mp_estimate_plan, mp_report_estimate_json;
 *   mp_search to find the best plan;
 *   mp_sim_run + mp_sim_write_trace for the event-by-event timeline of one step.
 * A whole run (energy, cost, failures, goodput): mp_energy_step, mp_fault_rates_for,
 *   mp_checkpoint_plan, mp_run_expected, mp_run_simulate, mp_cost_compute.
 * Every function that can fail returns mp_status and explains itself in an mp_diag.
 */
#ifndef MESHPLAN_H
#define MESHPLAN_H

#define MESHPLAN_VERSION "0.1.0"

#include "meshplan/status.h"
#include "meshplan/hw.h"
#include "meshplan/model.h"
#include "meshplan/catalog.h"
#include "meshplan/topo.h"
#include "meshplan/coll.h"
#include "meshplan/plan.h"
#include "meshplan/estimate.h"
#include "meshplan/validate.h"
#include "meshplan/report.h"
#include "meshplan/search.h"
#include "meshplan/energy.h"
#include "meshplan/faults.h"
#include "meshplan/sim.h"
#include "meshplan/xsync.h"
#include "meshplan/islands.h"
#include "meshplan/run.h"
#include "meshplan/import.h"

#endif
