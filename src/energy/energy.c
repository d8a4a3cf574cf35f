/* src/energy/energy.c — power of a training step by phase, per GPU, node and facility.
 *
 * GPU power model: an activity-based linear model (Hong & Kim 2010, "An integrated GPU power and
 * performance model", ISCA: power = idle power + sum over units of access rate x unit power). A GPU
 * inside a job never drops to its bare idle: it holds a context at P0 clocks and draws its
 * "active-idle" P_wait; each phase adds the dynamic power of what it does:
 *   tensor:  P_wait + (TDP - P_wait) x u, u = sustained / best tensor rate. The best measured GEMM
 *            rate is reached at the power limit (dense GEMMs on Hopper run power-capped: their SM
 *            clock follows the cap from 200 to 700 W, Ujeniya et al. 2026, arXiv 2604.11391, and
 *            the measured H100 bf16 GEMM, 794.5 of 989 TFLOP/s in validation/gpus.csv, is below
 *            the boost-clock peak); at a fixed energy per FLOP the dynamic power is proportional to
 *            the FLOP rate, so the phase at u of that rate draws u of the dynamic budget. The
 *            instantaneous peak is the limit itself (large GEMMs at the best rate).
 *   memory:  P_wait + (bytes/s through HBM) x 8 x E_bit.
 *   comm:    P_wait + (HBM bytes/s of the NCCL kernels: ~3 per link byte, read the send buffer,
 *            write the received chunk, read it again to reduce) x 8 x E_bit.
 *   wait:    P_wait.
 * A power cap below a phase's power clips it to the cap and stretches the phase by
 * (dynamic power uncapped / dynamic power capped)^(1/3): under DVFS the dynamic power C V^2 f
 * scales as f^3 while V tracks f, and the phase's speed as f.
 *
 * Node: the host (everything but the GPUs: CPUs, DRAM, NICs, NVSwitches, storage, fans, PSU
 * losses) has a maximum, the catalog's power_overhead_W = rated node power - GPUs x TDP; it draws
 * host_idle_frac of that at idle (Barroso & Hoelzle 2007, "The case for energy-proportional
 * computing", IEEE Computer 40(12): servers draw about half their peak power when idle) and rises
 * linearly with its own activity, which in GPU training is low (host_util_frac). Scale-out
 * switches: ports of a non-blocking fat tree (Al-Fares et al. 2008, SIGCOMM: a k-ary three-level
 * fat tree has 5k^2/4 switches of k ports for k^3/4 hosts, i.e. 5 ports per host; two levels 3;
 * one switch 1) x power per port. Facility: x PUE.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "meshplan/energy.h"
#include "meshplan/parts.h"

static const char *const phase_names[] = {
#define MP_X(n, s) s,
    MP_PHASE_LIST(MP_X)
#undef MP_X
};
_Static_assert(sizeof phase_names / sizeof phase_names[0] == MP_PHASE_COUNT, "phase names");

const char *mp_phase_name(mp_phase p)
{
    return (unsigned)p < MP_PHASE_COUNT ? phase_names[p] : "?";
}

/* Measured GPU power points, W. 0 = not measured (derived from the TDP). */
static const struct {
    const char *key;
    double idle_W; /* no job: nvidia-smi with no process */
    double wait_W; /* a process holding memory at P0, no kernels */
    const char *source;
} gpu_power_points[] = {
    {"h100-sxm5-80gb", 78.8, 142.5,
     "H100 SXM: idle 78.8 W (nvidia-smi -q, 700 W limit: stackhpc/ansible-slurm-appliance pull "
     "request 975); active idle 142.5 W (145 and 140 W at P0 with 72.8 GB allocated and 0-4% "
     "utilisation: wilicc/gpu-burn issue 114)"},
    {"v100-sxm2-32gb", 0.0, 53.0,
     "V100 SXM2: active idle 53 W (P0, 20 GB allocated, 0% utilisation: zai-org/GLM-130B issue "
     "32); idle derived"},
};

/* Shares of the TDP for GPUs without a measurement: H100 idle 78.8 / 700; active idle the mean
 * of H100 142.5 / 700 = 0.204 and V100 53 / 300 = 0.177 (the points above). */
#define UNSEEN_IDLE_FRAC (78.8 / 700.0)
#define UNSEEN_WAIT_FRAC (0.5 * (142.5 / 700.0 + 53.0 / 300.0))

/* Share of peak HBM bandwidth when none is measured: the same fallback as src/workload/kernels.c
 * (MP_DEFAULT_HBM_FRAC), from the measured A100/H100 rows of validation/gpus.csv. The best GEMM
 * rate is the catalog's one rule, mp_gpu_best_gemm_flops. */
#define FALLBACK_HBM_FRAC 0.865

/* Node overhead when the catalog has none: DGX H100's 4600 W over 8 x 700 W of GPUs (the
 * nodes.json derivation from the 10.2 kW rating). */
#define UNSEEN_OVERHEAD_PER_GPU_TDP (4600.0 / 5600.0)

void mp_energy_opts_init(mp_energy_opts *o)
{
    memset(o, 0, sizeof *o);
    o->power_cap_W = 0.0;
    /* PUE 1.2: between the hyperscale fleets (Google 2023 fleet average 1.10) and the industry
     * survey average (Uptime Institute 2023: 1.58); new AI halls are built near 1.2. */
    o->pue = 1.2;
    o->host_idle_frac = 0.5; /* Barroso & Hoelzle 2007 */
    /* Host activity in GPU training: per GPU one busy training-loop thread and NCCL's busy-polling
     * proxy thread, plus a few data-loader workers: ~2-3 busy cores per GPU, 16-24 of the 112
     * cores of a DGX H100 host (2 x 56-core Xeon Platinum 8480C) = 0.14-0.21. ASSUMED 0.2. */
    o->host_util_frac = 0.2;
    /* ASSUMED 20 W per 400 Gb/s switch port with its optics: a 64-port 51.2 Tb/s switch of ~750 W
     * typical (~12 W/port) plus ~8 W of optics per port (a twin-port 800G OSFP ~16 W). Typical
     * datasheet magnitudes, not measured here. */
    o->switch_port_W = 20.0;
    o->switch_radix = 64;
    o->scaleout_ports_per_node = 0.0;
    /* HBM2 access ~3.97 pJ/bit (O'Connor et al. 2017, "Fine-Grained DRAM", MICRO), doubled for the
     * on-chip path (L2, crossbar, SM load/store) — the doubling is ASSUMED. */
    o->mem_pJ_per_bit = 8.0;
    o->node_overhead_W = 0.0;
}

/* Scale-out switch ports per endpoint of a non-blocking fat tree of radix k (Al-Fares 2008). */
static double fat_tree_ports_per_endpoint(double endpoints, double k)
{
    if (endpoints <= 1)
        return 0.0;
    if (endpoints <= k)
        return 1.0;
    if (endpoints <= k * k / 2.0)
        return 3.0;
    if (endpoints <= k * k * k / 4.0)
        return 5.0;
    return 7.0;
}

/* The inputs the power model needs, each out-of-range one named; returns how many are bad. */
static int check_inputs(const mp_cluster *c, const mp_estimate *e, const mp_energy_opts *o, mp_diag *d)
{
    const mp_gpu *g = &c->gpu;
    int bad = 0;
    if (!(g->tdp_W > 0)) {
        mp_diag_add(d, "gpu %s: tdp_W is unknown: power cannot be derived (give tdp_W in a "
                       "--catalog file)", g->key);
        bad++;
    }
    if (!(o->pue >= 1.0 && o->pue <= 5.0)) { mp_diag_add(d, "pue = %g: expected a number in [1, 5]", o->pue); bad++; }
    if (!(o->host_idle_frac >= 0 && o->host_idle_frac <= 1)) { mp_diag_add(d, "host_idle_frac = %g: expected a number in [0, 1]", o->host_idle_frac); bad++; }
    if (!(o->host_util_frac >= 0 && o->host_util_frac <= 1)) { mp_diag_add(d, "host-util = %g: expected a number in [0, 1]", o->host_util_frac); bad++; }
    if (!(o->switch_port_W >= 0 && o->switch_port_W < 1e5)) { mp_diag_add(d, "switch_port_W = %g: expected a number in [0, 1e5)", o->switch_port_W); bad++; }
    if (o->switch_radix < 4 || o->switch_radix > 4096) { mp_diag_add(d, "switch_radix = %d: expected 4 .. 4096", o->switch_radix); bad++; }
    if (!(o->scaleout_ports_per_node >= 0 && o->scaleout_ports_per_node <= 4096)) { mp_diag_add(d, "scaleout_ports_per_node = %g: expected 0 .. 4096", o->scaleout_ports_per_node); bad++; }
    if (!(o->mem_pJ_per_bit > 0 && o->mem_pJ_per_bit < 1000)) { mp_diag_add(d, "mem_pJ_per_bit = %g: expected a number in (0, 1000)", o->mem_pJ_per_bit); bad++; }
    if (!(o->node_overhead_W >= 0 && o->node_overhead_W < 1e7)) { mp_diag_add(d, "node_overhead_W = %g: expected a number in [0, 1e7)", o->node_overhead_W); bad++; }
    if (!(e->step_s > 0) || !isfinite(e->step_s) || c->num_gpus < 1 || c->gpus_per_node < 1) {
        mp_diag_add(d, "energy: the estimate has no step time (step_s = %g)", e->step_s);
        bad++;
    }
    return bad;
}

/* The node (GPUs, host overhead), the scale-out switches and the facility (PUE) around the
 * GPUs' average power, and the energy per step and per million tokens at each level. */
static void node_and_facility(const mp_cluster *c, const mp_estimate *e, const mp_energy_opts *o,
                              double idle, double energy_gpu, mp_power *out)
{
    const double tdp = c->gpu.tdp_W, step = out->step_s;
    const double gpn = (double)c->gpus_per_node;
    const double nodes = ceil((double)c->num_gpus / gpn);
    out->nodes = nodes;
    out->gpu_per_node = gpn;
    double oh_max = o->node_overhead_W > 0 ? o->node_overhead_W
                  : c->node_power_overhead_W > 0 ? c->node_power_overhead_W
                  : UNSEEN_OVERHEAD_PER_GPU_TDP * gpn * tdp;
    out->node_overhead_max_W = oh_max;
    out->node_overhead_W = oh_max * (o->host_idle_frac + (1.0 - o->host_idle_frac) * o->host_util_frac);
    out->node_avg_W = gpn * out->gpu_avg_W + out->node_overhead_W;
    out->node_peak_W = gpn * out->gpu_peak_W + out->node_overhead_W;
    out->node_idle_W = gpn * idle + oh_max * o->host_idle_frac;
    if (c->ntiers > 1 && nodes > 1) {
        double ports_node = o->scaleout_ports_per_node > 0 ? o->scaleout_ports_per_node : gpn;
        double endpoints = nodes * ports_node;
        double ppe = fat_tree_ports_per_endpoint(endpoints, (double)o->switch_radix);
        out->switch_ports_per_gpu = ppe * endpoints / (double)c->num_gpus;
        out->switch_W = ppe * endpoints * o->switch_port_W;
    }
    out->it_avg_W = nodes * out->node_avg_W + out->switch_W;
    out->facility_avg_W = out->it_avg_W * o->pue;
    out->facility_peak_W = (nodes * out->node_peak_W + out->switch_W) * o->pue;
    out->energy_J_per_step_gpu = (double)c->num_gpus * energy_gpu;
    out->energy_J_per_step_node = nodes * out->node_avg_W * step;
    out->energy_J_per_step_facility = out->facility_avg_W * step;
    double mtok = e->tokens_per_step / 1e6;
    if (mtok > 0) {
        out->energy_J_per_mtoken_gpu = out->energy_J_per_step_gpu / mtok;
        out->energy_J_per_mtoken_node = out->energy_J_per_step_node / mtok;
        out->energy_J_per_mtoken_facility = out->energy_J_per_step_facility / mtok;
    }
}

mp_status mp_energy_step(const mp_cluster *c, const mp_plan *p, const mp_estimate *e,
                         const mp_estimate_opts *eo, const mp_energy_opts *o, mp_power *out,
                         mp_diag *d)
{
    mp_energy_opts od;
    mp_estimate_opts eod;
    if (!o) {
        mp_energy_opts_init(&od);
        o = &od;
    }
    if (!eo) {
        mp_estimate_opts_init(&eod);
        eo = &eod;
    }
    memset(out, 0, sizeof *out);
    const mp_gpu *g = &c->gpu;
    if (check_inputs(c, e, o, d))
        return MP_ERR_INPUT;

    /* --- the GPU's power points ------------------------------------------------------------ */
    const double tdp = g->tdp_W;
    double idle = 0.0, wait = 0.0;
    const char *src = NULL;
    for (size_t i = 0; i < sizeof gpu_power_points / sizeof gpu_power_points[0]; i++)
        if (!strcmp(g->key, gpu_power_points[i].key)) {
            idle = gpu_power_points[i].idle_W;
            wait = gpu_power_points[i].wait_W;
            src = gpu_power_points[i].source;
        }
    out->unseen_gpu = !(idle > 0 && wait > 0);
    if (!(idle > 0))
        idle = UNSEEN_IDLE_FRAC * tdp;
    if (!(wait > 0))
        wait = UNSEEN_WAIT_FRAC * tdp;
    if (src)
        snprintf(out->gpu_power_source, sizeof out->gpu_power_source, "%s%s", src,
                 out->unseen_gpu ? " (the rest derived from the TDP)" : "");
    else
        snprintf(out->gpu_power_source, sizeof out->gpu_power_source,
                 "unseen GPU %s: no power measurement; idle %.3f and active idle %.3f of its %.0f W "
                 "TDP (shares measured on H100 and V100)", g->key, UNSEEN_IDLE_FRAC,
                 UNSEEN_WAIT_FRAC, tdp);
    out->tdp_W = tdp;
    out->gpu_idle_W = idle;
    out->gpu_wait_W = wait;
    const double cap = o->power_cap_W > 0 ? o->power_cap_W : tdp;
    if (cap > tdp * (1 + 1e-9) || cap <= wait) {
        mp_diag_add(d, "power-cap-W = %g: expected a limit above the GPU's active-idle power "
                       "(%.0f W) and at most its TDP (%.0f W)", o->power_cap_W, wait, tdp);
        return MP_ERR_INPUT;
    }
    out->cap_W = cap;

    /* --- phases of the step (uncapped) ------------------------------------------------------ */
    /* The step-time parts by kind (include/meshplan/parts.h). */
    const mp_time *t = &e->time;
    const double compute_s = mp_time_kind_s(t, MP_TIME_KIND_COMPUTE);
    const double flops_gpu = e->hardware_flops_per_step / (double)c->num_gpus;
    const double gemm_frac = fmin(1.0, fmax(0.0, eo->gemm_sustained_frac));
    const double rate_best = mp_gpu_best_gemm_flops(g, p->precision);
    const double rate_sust = rate_best * gemm_frac;
    double ph_s[MP_PHASE_COUNT];
    ph_s[MP_PHASE_TENSOR] = rate_sust > 0 ? fmin(compute_s, flops_gpu / rate_sust) : 0.0;
    ph_s[MP_PHASE_MEMORY] = compute_s - ph_s[MP_PHASE_TENSOR] + mp_time_kind_s(t, MP_TIME_KIND_UPDATE);
    ph_s[MP_PHASE_COMM] = mp_time_kind_s(t, MP_TIME_KIND_COMM);
    ph_s[MP_PHASE_WAIT] = mp_time_kind_s(t, MP_TIME_KIND_WAIT);
    double sum = 0.0;
    for (int i = 0; i < MP_PHASE_COUNT; i++)
        sum += ph_s[i];
    if (e->step_s > sum) /* anything the parts do not name is waiting */
        ph_s[MP_PHASE_WAIT] += e->step_s - sum;

    const double hbm_Bps = g->measured_mem_bw_Bps > 0 ? g->measured_mem_bw_Bps
                                                       : g->mem_bw_Bps * FALLBACK_HBM_FRAC;
    const double J_per_byte = 8.0 * o->mem_pJ_per_bit * 1e-12;
    double link_Bps = c->ntiers > 0 ? c->tier[0].bw_Bps * c->tier[0].efficiency_frac : 0.0;
    double ph_W[MP_PHASE_COUNT];
    ph_W[MP_PHASE_TENSOR] = wait + (tdp - wait) * gemm_frac;
    ph_W[MP_PHASE_MEMORY] = wait + hbm_Bps * eo->memory_bound_sustained_frac * J_per_byte;
    ph_W[MP_PHASE_COMM] = wait + fmin(3.0 * link_Bps, hbm_Bps) * J_per_byte;
    ph_W[MP_PHASE_WAIT] = wait;
    double peak = tdp; /* large GEMMs at the best measured rate reach the power limit */
    if (ph_s[MP_PHASE_TENSOR] <= 0) {
        peak = 0.0;
        for (int i = 0; i < MP_PHASE_COUNT; i++)
            if (ph_s[i] > 0 && ph_W[i] > peak)
                peak = ph_W[i];
    }

    /* --- the power cap -------------------------------------------------------------------- */
    double step = 0.0, energy_gpu = 0.0;
    for (int i = 0; i < MP_PHASE_COUNT; i++) {
        double w = fmin(ph_W[i], tdp);
        if (w > cap) {
            ph_s[i] *= cbrt((w - wait) / (cap - wait));
            w = cap;
        }
        out->phase_s[i] = ph_s[i];
        out->phase_W[i] = w;
        step += ph_s[i];
        energy_gpu += w * ph_s[i];
    }
    out->step_s = step;
    out->step_uncapped_s = e->step_s;
    out->gpu_avg_W = energy_gpu / step;
    out->gpu_peak_W = fmin(peak, cap);

    node_and_facility(c, e, o, idle, energy_gpu, out);
    if (!isfinite(out->facility_avg_W) || !isfinite(out->energy_J_per_step_facility) ||
        !isfinite(out->energy_J_per_mtoken_facility)) {
        mp_diag_add(d, "energy: a result is not finite (facility %g W)", out->facility_avg_W);
        return MP_ERR_RANGE;
    }
    return MP_OK;
}

mp_status mp_energy_step_facility_J(void *ctx, const mp_model *m, const mp_cluster *c,
                                    const mp_plan *p, const mp_estimate *e,
                                    double *joules_per_step)
{
    (void)ctx;
    (void)m;
    mp_power pw;
    mp_status st = mp_energy_step(c, p, e, NULL, NULL, &pw, NULL);
    if (st == MP_OK)
        *joules_per_step = pw.energy_J_per_step_facility;
    return st;
}

void mp_energy_run(const mp_power *pw, double pue, double running_s, double stalled_s,
                   double wall_s, double spare_nodes, mp_run_energy *out)
{
    memset(out, 0, sizeof *out);
    const double gpn = pw->nodes > 0 ? pw->gpu_per_node : 0.0;
    /* Stalled: the job's GPUs hold their context at active idle; hosts and switches stay up. */
    const double stalled_W = (pw->nodes * (gpn * pw->gpu_wait_W + pw->node_overhead_W) + pw->switch_W) * pue;
    out->running_J = pw->facility_avg_W * fmax(0.0, running_s);
    out->stalled_J = stalled_W * fmax(0.0, stalled_s);
    out->spares_J = fmax(0.0, spare_nodes) * pw->node_idle_W * pue * fmax(0.0, wall_s);
    out->total_J = out->running_J + out->stalled_J + out->spares_J;
    out->MWh = out->total_J / 3.6e9;
}

/* ---- cost ------------------------------------------------------------------------------------ */

void mp_cost_opts_init(mp_cost_opts *o)
{
    /* ASSUMED defaults — a user's own prices should be given: $2.50 per H100 GPU-hour is the order
     * of 2024-25 cloud rental prices; 4-year straight-line amortization of accelerators; 8 cents
     * per kWh, about the US industrial average (EIA Electric Power Monthly, 2023). */
    o->price_gpu_hour_usd = 2.5;
    o->capex_per_gpu_usd = 0.0;
    o->amortization_years = 4.0;
    o->price_kwh_usd = 0.08;
}

mp_status mp_cost_compute(const mp_cost_opts *o, double gpus_billed, double wall_s,
                          double energy_J, double tokens, mp_cost *out, mp_diag *d)
{
    memset(out, 0, sizeof *out);
    int bad = 0;
    if (!(o->price_gpu_hour_usd >= 0 && isfinite(o->price_gpu_hour_usd))) { mp_diag_add(d, "price-gpu-hour = %g: expected a finite number >= 0", o->price_gpu_hour_usd); bad++; }
    if (!(o->capex_per_gpu_usd >= 0 && isfinite(o->capex_per_gpu_usd))) { mp_diag_add(d, "capex-per-gpu = %g: expected a finite number >= 0", o->capex_per_gpu_usd); bad++; }
    if (!(o->amortization_years > 0 && o->amortization_years <= 100)) { mp_diag_add(d, "amortization-years = %g: expected a number in (0, 100]", o->amortization_years); bad++; }
    if (!(o->price_kwh_usd >= 0 && isfinite(o->price_kwh_usd))) { mp_diag_add(d, "price-kwh = %g: expected a finite number >= 0", o->price_kwh_usd); bad++; }
    if (!(gpus_billed >= 0 && isfinite(gpus_billed)) || !(wall_s >= 0 && isfinite(wall_s)) ||
        !(energy_J >= 0 && isfinite(energy_J)) || !(tokens > 0 && isfinite(tokens))) {
        mp_diag_add(d, "cost: gpus %g, wall %g s, energy %g J, tokens %g: expected finite, "
                       "non-negative values and tokens > 0", gpus_billed, wall_s, energy_J, tokens);
        bad++;
    }
    if (bad)
        return MP_ERR_INPUT;
    out->gpu_hours = gpus_billed * wall_s / 3600.0;
    if (o->capex_per_gpu_usd > 0) {
        out->capex_mode = 1;
        /* Straight-line amortization over the accelerator's life (8766 h per year). */
        out->capital_usd = o->capex_per_gpu_usd / (o->amortization_years * 8766.0) * out->gpu_hours;
        out->energy_usd = energy_J / 3.6e6 * o->price_kwh_usd;
        out->usd = out->capital_usd + out->energy_usd;
    } else {
        out->rental_usd = out->gpu_hours * o->price_gpu_hour_usd;
        out->usd = out->rental_usd;
    }
    out->usd_per_mtoken = out->usd / (tokens / 1e6);
    return MP_OK;
}

int mp_energy_gpu_points(const mp_gpu *g, double *idle_W, double *wait_W)
{
    double idle = 0.0, wait = 0.0;
    for (size_t i = 0; i < sizeof gpu_power_points / sizeof gpu_power_points[0]; i++)
        if (!strcmp(g->key, gpu_power_points[i].key)) {
            idle = gpu_power_points[i].idle_W;
            wait = gpu_power_points[i].wait_W;
        }
    int measured = idle > 0 && wait > 0;
    *idle_W = idle > 0 ? idle : UNSEEN_IDLE_FRAC * fmax(0.0, g->tdp_W);
    *wait_W = wait > 0 ? wait : UNSEEN_WAIT_FRAC * fmax(0.0, g->tdp_W);
    return measured;
}
