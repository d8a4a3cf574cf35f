/* meshplan/plot.h — figures of meshplan's results, drawn with cairo into SVG or PNG files.
 *
 * Each figure takes what the library computed and draws it; nothing is recomputed here:
 *   mp_plot_scale       tokens/s and scaling efficiency vs GPU count (the `scale` study)
 *   mp_plot_pareto      the search's plans: throughput vs memory per GPU, its Pareto frontier
 *   mp_plot_memory      the memory stack (weights ... buffers) of each pipeline stage vs capacity
 *   mp_plot_parts       the step's parts (compute, bubble, exposed communication ...) as a
 *                       stacked bar, analytical and (when given) simulated
 *   mp_plot_timeline    a simulated step (mp_sim_run) as a Gantt chart: one row per stage and
 *                       stream, spans coloured by what runs
 *   mp_plot_collective  bus bandwidth vs message size, one line per algorithm
 * Axes carry their units; tick numbers use SI or binary prefixes (meshplan/format.h). An SVG
 * file also holds a <metadata> element that lists the title, the axis labels, the series and the
 * bars drawn (docs/plot.md), since cairo writes SVG text as glyph outlines.
 *
 * Every function returns MP_OK, MP_ERR_INPUT (no data to draw, a size out of range, an unknown
 * file extension; named in diag), MP_ERR_IO (the file cannot be written) or MP_ERR_NOMEM. */
#ifndef MESHPLAN_PLOT_H
#define MESHPLAN_PLOT_H

#include <stdint.h>

#include "meshplan/estimate.h"
#include "meshplan/search.h"
#include "meshplan/sim.h"
#include "meshplan/status.h"

typedef enum { MP_PLOT_SVG, MP_PLOT_PNG } mp_plot_format;

/** Drawing options. mp_plot_opts_init: 960 x 600 pixels, no title (each figure then writes its
 *  own). Sizes 200..8000 pixels. For SVG the pixels are CSS pixels (the document unit is px). */
typedef struct {
    int width_px, height_px;
    const char *title;     /* NULL: the figure's own title */
    const char *subtitle;  /* NULL: the figure's own subtitle (usually the job) */
} mp_plot_opts;

void mp_plot_opts_init(mp_plot_opts *o);

/** The format of a path from its extension: ".svg" or ".png" (case-insensitive).
 *  MP_ERR_INPUT otherwise, naming the path and the extensions expected. */
mp_status mp_plot_format_from_path(const char *path, mp_plot_format *out, mp_diag *diag);

/** One GPU count of a scaling study (strong: fixed global batch; weak: batch per GPU fixed;
 *  docs/search.md "Scaling"). *_ok 0: no plan fits (the point is left out). */
typedef struct {
    int64_t gpus;
    int strong_ok, weak_ok;
    double strong_tokens_per_s, strong_efficiency_frac;
    double weak_tokens_per_s, weak_efficiency_frac;
} mp_plot_scale_point;

/** Tokens/s (left axis, log) and efficiency (right axis, %) vs GPUs (log2), strong and weak,
 *  with the ideal linear line from the first point that fits. n >= 1; MP_ERR_INPUT when no
 *  point fits (nothing to draw). */
mp_status mp_plot_scale(const mp_plot_scale_point *pts, int n, const mp_plot_opts *opts,
                        const char *path, mp_diag *diag);

/** The search's result r: every plan of the top list and of the memory frontier, tokens/s vs
 *  memory per GPU, the frontier joined, #1 marked, the GPU capacity as a vertical line. */
mp_status mp_plot_pareto(const mp_search_result *r, const mp_plot_opts *opts, const char *path,
                         mp_diag *diag);

/** The memory stack of each pipeline stage of e, with the capacity as a horizontal line. Up to
 *  64 stages; of more, the first 31 and the last 32 around an empty bar "...". */
mp_status mp_plot_memory(const mp_estimate *e, const mp_plot_opts *opts, const char *path,
                         mp_diag *diag);

/** The step's parts of e as one stacked horizontal bar; with sim (may be NULL) a second bar for
 *  the simulated step. */
mp_status mp_plot_parts(const mp_estimate *e, const mp_sim_result *sim, const mp_plot_opts *opts,
                        const char *path, mp_diag *diag);

/** The simulated step s (mp_sim_run, with its result r) as a Gantt chart over time: one row per
 *  pipeline stage and stream (compute, TP, CP, PP send, DP/ZeRO, optimizer), spans coloured by
 *  forward, backward, weight gradient, recompute and each communication kind. At most 8 stages
 *  are drawn (the first 4 and the last 4 of more), so that each row stays readable. */
mp_status mp_plot_timeline(const mp_sim *s, const mp_sim_result *r, const mp_plot_opts *opts,
                           const char *path, mp_diag *diag);

/** One line of the collective figure: n sizes (bytes, > 0) and bus bandwidths (bytes/s, the
 *  nccl-tests busbw convention). */
typedef struct {
    const char *name;
    int n;
    const double *bytes;
    const double *busbw_Bps;
} mp_plot_coll_series;

/** Bus bandwidth (linear) vs message size (log2), one line per series (1..16); of several,
 *  the last is drawn solid black on top (meant for the algorithm chosen), the others dashed. */
mp_status mp_plot_collective(const mp_plot_coll_series *series, int nseries,
                             const mp_plot_opts *opts, const char *path, mp_diag *diag);

/** Free the process-wide font caches that cairo and fontconfig keep after drawing text
 *  (cairo_debug_reset_static_data, FcFini), so a leak checker sees a clean exit. Call it once,
 *  when no figure is being drawn on any thread (the CLI does, after its figure); figures drawn
 *  after it rebuild the caches. */
void mp_plot_release_caches(void);

#endif
