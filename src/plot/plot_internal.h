/* src/plot/plot_internal.h — shared by the figure files of src/plot/ (internal). */
#ifndef MESHPLAN_PLOT_INTERNAL_H
#define MESHPLAN_PLOT_INTERNAL_H

#include "chart.h"

/** Apply opts' title and subtitle (when set), render c into path (format from its extension),
 *  then free c — also on error. Returns pc_render's status or mp_plot_format_from_path's. */
mp_status plot_finish(pc_chart *c, const mp_plot_opts *opts, const char *path, mp_diag *d);

#endif
