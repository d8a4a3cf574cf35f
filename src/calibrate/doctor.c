/* src/calibrate/doctor.c — why a measured step differs from the prediction.
 *
 * The gap g = measured - predicted step is laid against every part of the predicted step. A part
 * of time t alone explains it when it runs k = (t + g) / t times as long as predicted; how likely
 * that is depends on how far the part's model is usually off, its plausible factor P (below, with
 * its source). The score log(k) / log(P) counts "typical model errors" the part must be off by:
 * the lowest score is the dominant gap. Communication that the estimator hides behind compute is
 * scored on its whole time (a fabric k times slower makes (k-1) t of it exposed). docs/calibrate.md
 * gives the rule and worked examples.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "meshplan/calibrate.h"
#include "../internal.h"

/* Plausible factors (how far each part's model is typically off):
 *  compute 1.16: the leave-one-source-out held-out median throughput error on a stack not seen,
 *    16.0% (README "Validation", bench/fit_calibration);
 *  collectives on the scale-up tier 1.10 and on network tiers 1.15: median |busbw error| of
 *    tests/test_coll_validation.c on validation/collectives.csv, 5.0-11.0% NVLink, 3.2-14.2%
 *    network (docs/cluster.md section 5);
 *  pipeline bubble 1.10 (the schedule's closed form, Narayanan et al. 2021 eq. 1; the 10% covers
 *    uneven stages); optimizer 1.5 (a memory-bound Adam estimate, not validated alone). */
#define PLAUS_COMPUTE 1.16
#define PLAUS_SCALEUP 1.10
#define PLAUS_NETWORK 1.15
#define PLAUS_BUBBLE 1.10
#define PLAUS_OPTIMIZER 1.5
#define AS_PREDICTED_FRAC 0.10 /* |gap| within 10% of the prediction: the model's own error */
#define MEM_PRESSURE_FRAC 0.90 /* logged memory above this share of capacity */

static const char *tier_name(const mp_cluster *c, int t)
{
    return t >= 0 && t < c->ntiers ? c->tier[t].link : "?";
}

static void add(mp_doctor_report *r, const char *part, double t, double plaus, const char *what,
                const char *check)
{
    if (!(t > 0) || r->n >= MP_DOCTOR_MAX_ITEMS || !(t + r->gap_s > 0))
        return; /* a part shorter than a negative gap cannot explain it alone */
    mp_doctor_item *it = &r->item[r->n];
    memset(it, 0, sizeof *it);
    mp_strlcpy(it->part, part, sizeof it->part);
    it->predicted_s = t;
    it->factor_needed = (t + r->gap_s) / t;
    it->plausible_factor = plaus;
    it->score = it->factor_needed > 0 ? fabs(log(it->factor_needed)) / log(plaus) : INFINITY;
    snprintf(it->what, sizeof it->what, "%s %.2f x %s than predicted", what,
             it->factor_needed >= 1 ? it->factor_needed : 1.0 / fmax(it->factor_needed, 1e-9),
             it->factor_needed >= 1 ? "slower" : "faster");
    if (it->factor_needed >= 1)
        mp_strlcpy(it->check, check, sizeof it->check);
    else
        snprintf(it->check, sizeof it->check, "faster than predicted: the model overstates this "
                 "part here; check that the plan given (mb, recompute, precision, kernels) is the "
                 "one that ran");
    r->n++;
}

static void comm(mp_doctor_report *r, const mp_cluster *c, const char *part, const char *label,
                 double t, int tier)
{
    char what[96], check[200];
    int net = tier >= 1;
    snprintf(what, sizeof what, "%s on tier %d (%s)", label, tier, tier_name(c, tier));
    if (net)
        snprintf(check, sizeof check, "%.40s slower than the fabric should be: check NCCL_IB_HCA, GPUDirect "
                 "RDMA (NCCL_NET_GDR_LEVEL, NCCL_DEBUG=INFO), nccl-tests across nodes", label);
    else
        snprintf(check, sizeof check, "%.40s slower than NVLink should be: check nvidia-smi "
                 "nvlink --status, NCCL_P2P_LEVEL / NCCL_NVLS_ENABLE, and run all_reduce_perf in "
                 "one node", label);
    add(r, part, t, net ? PLAUS_NETWORK : PLAUS_SCALEUP, what, check);
}

static int by_score(const mp_doctor_item *a, const mp_doctor_item *b)
{
    return (a->score > b->score) - (a->score < b->score);
}

static void rank(mp_doctor_report *r)
{
    for (int i = 1; i < r->n; i++)
        for (int j = i; j > 0 && by_score(&r->item[j - 1], &r->item[j]) > 0; j--) {
            mp_doctor_item x = r->item[j];
            r->item[j] = r->item[j - 1];
            r->item[j - 1] = x;
        }
}

mp_status mp_doctor(const mp_cluster *c, const mp_plan *p, const mp_estimate *e,
                    double measured_step_s, double measured_mem_frac, mp_doctor_report *out,
                    mp_diag *diag)
{
    memset(out, 0, sizeof *out);
    if (!(measured_step_s > 0) || !(e->step_s > 0)) {
        mp_diag_add(diag, "measured step = %g s, predicted %g s: expected both > 0",
                    measured_step_s, e->step_s);
        return MP_ERR_INPUT;
    }
    out->measured_step_s = measured_step_s;
    out->predicted_step_s = e->step_s;
    out->gap_s = measured_step_s - e->step_s;
    out->gap_pct = 100.0 * out->gap_s / e->step_s;
    out->measured_mem_frac = measured_mem_frac;
    const mp_time *t = &e->time;
    add(out, "compute", t->compute + t->recompute, PLAUS_COMPUTE,
        "GPU compute (GEMMs, attention, element-wise)",
        "compute slower than this GPU and stack sustain: check clocks and power (nvidia-smi -q -d "
        "CLOCK,POWER), throttling, torch.compile / fused kernels, the attention kernel, data-loader "
        "stalls");
    comm(out, c, "tp_comm", "TP collectives", t->tp_comm, e->tp_tier);
    comm(out, c, "cp_comm", "CP exchange", t->cp_comm, e->cp_tier);
    mp_group gi, go;
    mp_placement pl;
    mp_plan_group(p, MP_DIM_BIT(MP_DIM_EP), &gi, &go);
    mp_group_place_2d(c, gi, go, &pl);
    comm(out, c, "ep_comm", "MoE all-to-all", t->ep_comm, pl.outer_tier);
    comm(out, c, "pp_comm", "pipeline send/recv", t->pp_comm, e->pp_tier);
    comm(out, c, "dp_comm", "DP gradient reduction", fmax(t->dp_comm_total, t->dp_comm_exposed),
         e->dp_tier);
    add(out, "pp_bubble", t->pp_bubble, PLAUS_BUBBLE, "pipeline bubble",
        "bubble larger than the schedule's: check the micro-batch count per step and interleaving "
        "(vpp), and uneven stages");
    add(out, "optimizer", t->optimizer, PLAUS_OPTIMIZER, "optimizer step",
        "optimizer slower than a fused Adam: check foreach/fused Adam, CPU offload");
    if (measured_mem_frac > MEM_PRESSURE_FRAC && out->n < MP_DOCTOR_MAX_ITEMS) {
        mp_doctor_item *it = &out->item[out->n++];
        memset(it, 0, sizeof *it);
        mp_strlcpy(it->part, "memory", sizeof it->part);
        /* 5% headroom left scores 1 (one typical error); less scores lower. */
        it->score = (1.0 - measured_mem_frac) / 0.05;
        snprintf(it->what, sizeof it->what, "memory at %.0f%% of capacity",
                 100.0 * measured_mem_frac);
        mp_strlcpy(it->check, "allocator pressure: check torch.cuda.memory_stats() "
                   "num_alloc_retries, set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
                   sizeof it->check);
    }
    rank(out);
    if (fabs(out->gap_s) <= AS_PREDICTED_FRAC * e->step_s)
        snprintf(out->verdict, sizeof out->verdict, "as predicted: measured %.3f s is within %.0f%% "
                 "of the predicted %.3f s", measured_step_s, 100 * AS_PREDICTED_FRAC, e->step_s);
    else if (out->n)
        snprintf(out->verdict, sizeof out->verdict, "measured %.3f s is %.0f%% %s than the "
                 "predicted %.3f s; dominant gap: %s", measured_step_s, fabs(out->gap_pct),
                 out->gap_s > 0 ? "slower" : "faster", e->step_s, out->item[0].what);
    else
        snprintf(out->verdict, sizeof out->verdict, "measured %.3f s against %.3f s predicted; no "
                 "predicted part to explain it", measured_step_s, e->step_s);
    return MP_OK;
}
