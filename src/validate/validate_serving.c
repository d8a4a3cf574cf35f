/* src/validate/validate_serving.c — the one place where validate predicts `server` and
 * `interactive` rows of the inference schema (Poisson arrivals at request_rate_per_s under the
 * row's latency_slo). A fixed-batch estimate cannot state them: TTFT and TPOT at load depend on
 * queueing and on how continuous batching mixes prefills into decode steps, which is the
 * request-level serving simulator's job (issue 21, src/serve/). Until it lands every such row is
 * skipped here with that reason; the simulator replaces the body of this function, using
 * mp_val_infer_setup for the row's model, cluster and plan (validate_internal.h). */
#include <stdio.h>

#include "validate/validate_internal.h"

int mp_val_infer_serving_row(const mp_catalog *cat, mp_val_infer_row *row, double *predicted)
{
    (void)cat;
    *predicted = 0.0;
    snprintf(row->why, sizeof row->why, "scenario %s: needs the serving simulator (issue 21)",
             row->cell[MP_VIC_SCENARIO]);
    return 0;
}
