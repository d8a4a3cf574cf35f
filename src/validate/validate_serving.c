/* src/validate/validate_serving.c — the one place where validate predicts `server` and
 * `interactive` rows of the inference schema (Poisson arrivals at request_rate_per_s under the
 * row's latency_slo). A fixed-batch estimate cannot state them: TTFT and TPOT at load depend on
 * queueing and on how continuous batching mixes prefills into decode steps, which is the
 * request-level serving simulator's job (issue 21, src/serve/): validate_serve.c, which forms the
 * row's model, cluster and plan with mp_val_infer_setup (validate_internal.h). */
#include <stdio.h>

#include "validate/validate_internal.h"

int mp_val_infer_serving_row(const mp_catalog *cat, mp_val_infer_row *row, double *predicted)
{
    /* the serving simulator (src/serve/) at the row's rate or the highest meeting its SLO */
    return mp_val_serve_predict(cat, row, predicted);
}
