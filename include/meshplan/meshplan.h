/* meshplan/meshplan.h — umbrella header: everything a program needs to predict and plan
 * distributed LLM training with meshplan. Build against the installed library with
 *   cc my.c $(pkg-config --cflags --libs meshplan)
 *
 * Flow (DESIGN.md): catalog -> model + cluster (topo) + plan -> estimate -> report.
 *   mp_catalog_create, mp_catalog_model / mp_model_from_hf_json, mp_cluster_from_catalog,
 *   mp_plan_init_default + mp_plan_parse + mp_plan_resolve, mp_estimate_plan,
 *   mp_report_estimate_json;
 *   mp_search to find the best plan;
 *   mp_sim_run + mp_sim_write_trace for the event-by-event timeline of one step.
 * A whole run (energy, cost, failures, goodput): mp_energy_step, mp_fault_rates_for,
 *   mp_checkpoint_plan, mp_run_expected, mp_run_simulate, mp_cost_compute.
 * JSON in, JSON out (bindings, servers): api.h, mp_api_call_json("predict", request, ...).
 * Every function that can fail returns mp_status and explains itself in an mp_diag.
 *
 * Worked example (compiled and run from this comment by tests/install_test.sh; examples/predict.c
 * is the same as a program): Llama 3 70B on 64 H100 SXM (8 DGX H100 nodes on their NDR
 * InfiniBand), TP 8 x PP 2 x DP 4, 128 sequences of 8192 tokens.
 *
 *   mp_catalog *cat = NULL;
 *   mp_diag d = {0};                          // collects one line per problem
 *   mp_model m;
 *   mp_cluster c;
 *   mp_plan p;                                // a complete type: declare it, then
 *   mp_estimate *e = malloc(sizeof *e);       //   (the estimate is large: heap, not stack)
 *   mp_plan_init_default(&p);                 // ALWAYS initialise (else MP_ERR_INPUT)
 *   if (mp_catalog_create(&cat, &d) != MP_OK ||
 *       !mp_catalog_model(cat, "llama3-70b") ||
 *       (m = *mp_catalog_model(cat, "llama3-70b"),
 *        mp_cluster_from_catalog(cat, "h100-sxm5-80gb", 64, 0, NULL, &c, &d)) != MP_OK ||
 *       mp_plan_parse("tp=8,pp=2,gb=128,seq=8192,zero=1", &p, &d) != MP_OK ||
 *       mp_plan_resolve(&p, &m, c.num_gpus, &d) != MP_OK ||   // fills dp = 4, mb = 1, ...
 *       mp_estimate_plan(&m, &c, &p, NULL, e, &d) != MP_OK)
 *       fprintf(stderr, "%s", d.text);        // e.g. "plan.tp = 3: must divide heads (64)"
 *   else
 *       printf("%.0f tokens/s, MFU %.3f, bound by %s\n", e->tokens_per_s, e->mfu, e->bottleneck);
 *   free(e);
 *   mp_catalog_destroy(cat);
 */
#ifndef MESHPLAN_H
#define MESHPLAN_H

#define MESHPLAN_VERSION "0.1.0"

#include "meshplan/status.h"
#include "meshplan/hw.h"
#include "meshplan/infer.h"
#include "meshplan/infer_search.h"
#include "meshplan/model.h"
#include "meshplan/catalog.h"
#include "meshplan/topo.h"
#include "meshplan/coll.h"
#include "meshplan/plan.h"
#include "meshplan/stack.h"
#include "meshplan/estimate.h"
#include "meshplan/validate.h"
#include "meshplan/parts.h"
#include "meshplan/report.h"
#include "meshplan/search.h"
#include "meshplan/energy.h"
#include "meshplan/faults.h"
#include "meshplan/sim.h"
#include "meshplan/xsync.h"
#include "meshplan/islands.h"
#include "meshplan/format.h"
#include "meshplan/plot.h"
#include "meshplan/web.h"
#include "meshplan/run.h"
#include "meshplan/api.h"
#include "meshplan/sweep.h"
#include "meshplan/probe.h"
#include "meshplan/calibrate.h"
#include "meshplan/import.h"
#include "meshplan/rl.h"
#include "meshplan/workflow.h"
#include "meshplan/lora.h"

#endif
