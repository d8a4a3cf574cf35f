/* bench/k22_table4.h — one transformer layer of Korthikanti et al. 2022's GPT-22B priced against
 * the paper's Table 4, shared by bench/table4_layers.c and bench/fit_calibration.c (bench-only:
 * not part of the library). */
#ifndef MESHPLAN_BENCH_K22_TABLE4_H
#define MESHPLAN_BENCH_K22_TABLE4_H

#include "meshplan/meshplan.h"

#define K22_T4_MODES 5
/* The five modes of Table 4: plan keys and the published forward + backward ms per layer. */
extern const struct k22_t4_mode { const char *keys; double ms; } k22_t4[K22_T4_MODES];

/* Price the layer in each mode with opts (NULL: defaults): ms[k] per layer, err_pct[k] signed
 * error against Table 4. Returns 0, or 1 with the message in d. */
int k22_table4_layers(const mp_catalog *cat, const mp_estimate_opts *opts, double ms[K22_T4_MODES],
                      double err_pct[K22_T4_MODES], mp_diag *d);

#endif
