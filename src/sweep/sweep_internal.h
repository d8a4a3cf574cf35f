/* src/sweep/sweep_internal.h — the parsed design space, shared by sweep_parse.c and sweep_run.c.
 * Internal to src/sweep/. */
#ifndef MESHPLAN_SWEEP_INTERNAL_H
#define MESHPLAN_SWEEP_INTERNAL_H

#include "meshplan/meshplan.h"
#include "meshplan/sweep.h"

/* The axes, outermost first: the expansion order of the systems (docs/sweep.md). */
enum { SW_MODEL, SW_GPU, SW_HBM, SW_SCALEUP, SW_NICS, SW_LINK, SW_OVERSUB, SW_GPUS, SW_NAXES };

/* One axis: catalog keys (models, gpus, fabric_links; "" = the default) or numbers (0 = the
 * default for hbm_GiB, scaleup_gpus and nics_per_gpu). */
typedef struct {
    int n;
    char key[MP_SWEEP_MAX_AXIS][MP_KEY_CAP];
    double num[MP_SWEEP_MAX_AXIS];
} sweep_axis;

struct mp_sweep {
    const mp_catalog *cat;
    sweep_axis ax[SW_NAXES];
    mp_sweep_workload workloads[MP_SWEEP_MAX_WORKLOADS];
    int nworkloads;
    int64_t systems;
    double price_gpu_hour_usd;
};

/* A task's coordinates: its system, the value index on each axis, its workload. */
typedef struct {
    int64_t system;
    int idx[SW_NAXES];
    int workload;
} sweep_point;

void sweep_decode(const mp_sweep *s, int64_t task, sweep_point *p);

#endif
