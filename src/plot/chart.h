/* src/plot/chart.h — the small chart layer under the figures (internal to src/plot/).
 *
 * A chart is one plot area with axes, ticks, a title, a legend and one kind of content:
 *   PC_XY    lines and markers over numeric axes (linear, log10 or log2), with an optional
 *            second y axis on the right;
 *   PC_BARS  stacked vertical bars over categories (x), numeric y;
 *   PC_ROWS  horizontal spans over categories (y rows), numeric x: a Gantt timeline, or one
 *            stacked bar per row.
 * Reference lines (a capacity, a limit) may be added to any kind. Numbers on the ticks come
 * from meshplan/format.h (SI or binary prefixes, or percent).
 *
 * pc_render draws with cairo into an SVG or PNG file (chosen by the caller). Cairo 1.16 writes
 * text in SVG as glyph outlines, so the SVG also carries a <metadata> element describing what
 * was drawn (title, axis labels, series with their colours and point counts, bars, segments) for
 * tests and tools to read. */
#ifndef MESHPLAN_PLOT_CHART_H
#define MESHPLAN_PLOT_CHART_H

#include "meshplan/plot.h"
#include "meshplan/status.h"

#define PC_MAX_SERIES 16
#define PC_MAX_CATS 64
#define PC_MAX_SEGS 12
#define PC_MAX_REFS 4
#define PC_MAX_TICKS 40
#define PC_MAX_RECTS 200000

typedef enum { PC_XY, PC_BARS, PC_ROWS } pc_kind;
typedef enum { PC_NUM_PLAIN, PC_NUM_SI, PC_NUM_BINARY, PC_NUM_PERCENT } pc_numfmt;
typedef enum { PC_SCALE_LINEAR, PC_SCALE_LOG10, PC_SCALE_LOG2 } pc_scale;

typedef struct {
    char label[112];        /* with its unit: "Throughput (tokens/s)" */
    char unit[16];          /* appended to tick numbers after the prefix: "B" -> "64 GiB" */
    pc_numfmt fmt;
    pc_scale scale;
    int from_zero;          /* linear: the range starts at 0 */
    int tight;              /* linear: the range ends at the data (not rounded to a tick) */
    int has_range;          /* min/max fixed by the figure */
    double min, max;
    int nticks;             /* > 0: ticks at these positions only (e.g. the GPU counts) */
    double ticks[PC_MAX_TICKS];
} pc_axis;

enum { PC_LINE = 1, PC_MARKERS = 2 };

typedef struct {
    char name[80];
    int color;              /* palette index */
    int style;              /* PC_LINE | PC_MARKERS */
    int dashed;
    int right;              /* on the right y axis */
    int n;
    double *x, *y;          /* owned copies */
} pc_series;

typedef struct {
    double x0, x1;
    int row, seg;
} pc_rect;

typedef struct {
    int vertical;           /* 1: at x = value; 0: at y = value */
    double value;
    char label[80];
} pc_ref;

typedef struct {
    pc_kind kind;
    char figure[16];        /* the figure kind, written in the metadata ("memory") */
    char title[200], subtitle[320];
    pc_axis x, y, y2;
    int has_y2;
    pc_series s[PC_MAX_SERIES];
    int ns;
    char cat[PC_MAX_CATS][48]; /* bars: x categories; rows: row labels, top first */
    int ncat;
    char seg[PC_MAX_SEGS][48];
    int seg_color[PC_MAX_SEGS];
    int nseg;
    double val[PC_MAX_CATS][PC_MAX_SEGS]; /* bars: segment heights */
    pc_rect *rect;          /* rows */
    int nrect, caprect;
    pc_ref ref[PC_MAX_REFS];
    int nref;
} pc_chart;

/** A zeroed chart of this kind (NULL when out of memory); free with pc_destroy (NULL is fine). */
pc_chart *pc_create(pc_kind kind, const char *figure);
void pc_destroy(pc_chart *c);

/** Copy n points into a new series. MP_ERR_RANGE when the chart holds PC_MAX_SERIES. */
mp_status pc_add_series(pc_chart *c, const char *name, const double *x, const double *y, int n,
                        int color, int style, int dashed, int right);
/** A category (bar or row); returns its index, or -1 when PC_MAX_CATS are taken. */
int pc_add_cat(pc_chart *c, const char *label);
/** A stacked segment kind with its legend name; returns its index or -1. */
int pc_add_seg(pc_chart *c, const char *name, int color);
/** A span [x0, x1] on row `row` in segment colour `seg`; MP_ERR_RANGE past PC_MAX_RECTS. */
mp_status pc_add_rect(pc_chart *c, int row, double x0, double x1, int seg);
/** A dashed reference line with a label; ignored past PC_MAX_REFS. */
void pc_add_ref(pc_chart *c, int vertical, double value, const char *label);

/** Draw the chart into path as `format`, opts->width_px x opts->height_px. Errors: MP_ERR_INPUT
 *  (nothing to draw, a size out of range), MP_ERR_IO (the file cannot be written, named in d),
 *  MP_ERR_NOMEM. */
mp_status pc_render(const pc_chart *c, const mp_plot_opts *opts, mp_plot_format format,
                    const char *path, mp_diag *d);

/** Palette colour i (wraps), components in [0, 1]; and as 0xRRGGBB. */
void pc_color(int i, double rgb[3]);
unsigned pc_color_hex(int i);

/* Between chart.c (drawing) and chart_out.c (files): */
struct _cairo; /* cairo_t */
/** Lay out and draw c on a cairo context of W x H device units (white background first). */
void pc_draw(const pc_chart *c, struct _cairo *cr, double W, double H);
/** 1 when something of segment k is drawn (a bar part > 0 or a span): only those are in the
 *  legend and the metadata. */
int pc_seg_used(const pc_chart *c, int k);

#endif
