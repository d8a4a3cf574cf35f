/* src/plot/chart.c — the chart layer (chart.h): data, then axes, ticks, content and legend,
 * drawn with cairo (chart_out.c writes the files and the SVG metadata). Sizes it is built for:
 * up to 16 series of a few hundred points, 64 bars of 12 segments, some 10^5 spans (a simulated
 * step's slices after merging). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cairo.h>

#include "chart.h"
#include "meshplan/format.h"

#define PC_PI 3.14159265358979323846

/* Okabe & Ito, "Color Universal Design" (2008): eight colours told apart with any colour vision;
 * then four more for the step's nine parts. */
static const unsigned palette[] = {0x0072B2, 0xE69F00, 0x009E73, 0xD55E00, 0xCC79A7, 0x56B4E9,
                                   0xF0E442, 0x999999, 0x000000, 0x8C564B, 0x17BECF, 0x5E3C99};
#define NPALETTE (int)(sizeof palette / sizeof palette[0])

void pc_color(int i, double rgb[3])
{
    unsigned c = palette[((i % NPALETTE) + NPALETTE) % NPALETTE];
    rgb[0] = ((c >> 16) & 255) / 255.0;
    rgb[1] = ((c >> 8) & 255) / 255.0;
    rgb[2] = (c & 255) / 255.0;
}

unsigned pc_color_hex(int i) { return palette[((i % NPALETTE) + NPALETTE) % NPALETTE]; }

pc_chart *pc_create(pc_kind kind, const char *figure)
{
    pc_chart *c = calloc(1, sizeof *c);
    if (c) {
        c->kind = kind;
        snprintf(c->figure, sizeof c->figure, "%s", figure ? figure : "");
    }
    return c;
}

void pc_destroy(pc_chart *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->ns; i++) {
        free(c->s[i].x);
        free(c->s[i].y);
    }
    free(c->rect);
    free(c);
}

mp_status pc_add_series(pc_chart *c, const char *name, const double *x, const double *y, int n,
                        int color, int style, int dashed, int right)
{
    if (c->ns >= PC_MAX_SERIES || n < 0)
        return MP_ERR_RANGE;
    pc_series *s = &c->s[c->ns];
    memset(s, 0, sizeof *s);
    s->x = malloc(sizeof(double) * (size_t)(n ? n : 1));
    s->y = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!s->x || !s->y) {
        free(s->x);
        free(s->y);
        return MP_ERR_NOMEM;
    }
    memcpy(s->x, x, sizeof(double) * (size_t)n);
    memcpy(s->y, y, sizeof(double) * (size_t)n);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->n = n;
    s->color = color;
    s->style = style;
    s->dashed = dashed;
    s->right = right;
    c->ns++;
    return MP_OK;
}

int pc_add_cat(pc_chart *c, const char *label)
{
    if (c->ncat >= PC_MAX_CATS)
        return -1;
    snprintf(c->cat[c->ncat], sizeof c->cat[0], "%s", label);
    return c->ncat++;
}

int pc_add_seg(pc_chart *c, const char *name, int color)
{
    if (c->nseg >= PC_MAX_SEGS)
        return -1;
    snprintf(c->seg[c->nseg], sizeof c->seg[0], "%s", name);
    c->seg_color[c->nseg] = color;
    return c->nseg++;
}

mp_status pc_add_rect(pc_chart *c, int row, double x0, double x1, int seg)
{
    if (c->nrect >= c->caprect) {
        if (c->caprect >= PC_MAX_RECTS)
            return MP_ERR_RANGE;
        int cap = c->caprect ? 2 * c->caprect : 256;
        if (cap > PC_MAX_RECTS)
            cap = PC_MAX_RECTS;
        pc_rect *r = realloc(c->rect, sizeof *r * (size_t)cap);
        if (!r)
            return MP_ERR_NOMEM;
        c->rect = r;
        c->caprect = cap;
    }
    c->rect[c->nrect++] = (pc_rect){x0, x1, row, seg};
    return MP_OK;
}

void pc_add_ref(pc_chart *c, int vertical, double value, const char *label)
{
    if (c->nref >= PC_MAX_REFS)
        return;
    c->ref[c->nref].vertical = vertical;
    c->ref[c->nref].value = value;
    snprintf(c->ref[c->nref].label, sizeof c->ref[0].label, "%s", label);
    c->nref++;
}

/* ---- axes: ranges and ticks ------------------------------------------------------------- */

typedef struct {
    double lo, hi;          /* data range shown (in data units) */
    pc_scale scale;
    double ticks[PC_MAX_TICKS];
    int nticks;
} axis_map;

static double tr(const axis_map *a, double v)
{
    if (a->scale == PC_SCALE_LOG10)
        return log10(v);
    if (a->scale == PC_SCALE_LOG2)
        return log2(v);
    return v;
}

/* Position of v in [0, 1] along the axis. */
static double frac(const axis_map *a, double v)
{
    double lo = tr(a, a->lo), hi = tr(a, a->hi);
    return hi > lo ? (tr(a, v) - lo) / (hi - lo) : 0.5;
}

/* 1, 2 or 5 times a power of ten, the smallest at least raw. */
static double nice_step(double raw)
{
    double p = pow(10.0, floor(log10(raw))), m = raw / p;
    return (m <= 1.0 ? 1.0 : m <= 2.0 ? 2.0 : m <= 5.0 ? 5.0 : 10.0) * p;
}

static void linear_ticks(axis_map *a, const pc_axis *ax)
{
    double span = a->hi - a->lo, unit = 1.0;
    if (!(span > 0)) {
        a->hi = a->lo + (a->lo != 0 ? fabs(a->lo) : 1.0);
        span = a->hi - a->lo;
    }
    /* Binary axes step in whole KiB, MiB, GiB ...: 8 GiB rather than 8.59 GB. */
    if (ax->fmt == PC_NUM_BINARY)
        while (unit * 1024.0 <= fmax(fabs(a->hi), fabs(a->lo)) / 2.0)
            unit *= 1024.0;
    double step = nice_step(span / unit / 5.0) * unit;
    if (!ax->has_range && !ax->tight) {
        a->hi = ceil(a->hi / step - 1e-9) * step;
        if (!ax->from_zero)
            a->lo = floor(a->lo / step + 1e-9) * step;
    }
    a->nticks = 0;
    for (double t = ceil(a->lo / step - 1e-9) * step; t <= a->hi + 1e-9 * step && a->nticks < PC_MAX_TICKS;
         t += step)
        a->ticks[a->nticks++] = fabs(t) < 1e-12 * step ? 0.0 : t;
}

static void log_ticks(axis_map *a, const pc_axis *ax)
{
    double b = ax->scale == PC_SCALE_LOG2 ? 2.0 : 10.0;
    if (!ax->has_range) {
        /* a margin of 30% each side; widened to a whole power of the base when narrower */
        a->lo /= 1.3;
        a->hi *= 1.3;
        if (a->hi < a->lo * b) {
            double mid = sqrt(a->lo * a->hi);
            a->lo = mid / sqrt(b);
            a->hi = mid * sqrt(b);
        }
    }
    double decades = log(a->hi / a->lo) / log(b);
    int every = decades > 24 ? 4 : decades > 12 ? 2 : 1; /* binary: every 4th power past 24 */
    a->nticks = 0;
    int k0 = (int)floor(log(a->lo) / log(b) - 1e-9), k1 = (int)ceil(log(a->hi) / log(b) + 1e-9);
    for (int k = k0; k <= k1 && a->nticks < PC_MAX_TICKS; k++) {
        double base = pow(b, k);
        static const double mult10[] = {1, 2, 5};
        int nm = b == 10.0 && decades < 2.5 ? 3 : 1;
        if (k % every)
            continue;
        for (int m = 0; m < nm && a->nticks < PC_MAX_TICKS; m++) {
            double t = base * mult10[m];
            if (t >= a->lo * (1 - 1e-9) && t <= a->hi * (1 + 1e-9))
                a->ticks[a->nticks++] = t;
        }
    }
}

/* The axis range from data lo..hi (already scanned by the caller), then its ticks. */
static void axis_setup(axis_map *a, const pc_axis *ax, double lo, double hi)
{
    a->scale = ax->scale;
    if (ax->has_range) {
        lo = ax->min;
        hi = ax->max;
    } else if (ax->scale == PC_SCALE_LINEAR && ax->from_zero) {
        lo = fmin(0.0, lo);
    }
    if (ax->scale != PC_SCALE_LINEAR) {
        if (!(lo > 0))
            lo = hi > 0 ? hi / 10.0 : 1.0;
        if (!(hi > lo))
            hi = lo * 10.0;
    }
    if (!isfinite(lo) || !isfinite(hi)) {
        lo = 0.0;
        hi = 1.0;
    }
    a->lo = lo;
    a->hi = hi;
    if (ax->scale == PC_SCALE_LINEAR)
        linear_ticks(a, ax);
    else
        log_ticks(a, ax);
    if (ax->nticks > 0) {
        a->nticks = 0;
        for (int i = 0; i < ax->nticks && i < PC_MAX_TICKS; i++)
            if (ax->ticks[i] >= a->lo && ax->ticks[i] <= a->hi)
                a->ticks[a->nticks++] = ax->ticks[i];
    }
}

static void tick_text(const pc_axis *ax, double v, char *buf, size_t cap)
{
    switch (ax->fmt) {
    case PC_NUM_SI: mp_format_si(v, ax->unit, 3, buf, cap); break;
    case PC_NUM_BINARY: mp_format_binary(v, ax->unit, 3, buf, cap); break;
    case PC_NUM_PERCENT: snprintf(buf, cap, "%.0f%%", 100.0 * v); break;
    default: snprintf(buf, cap, "%g", v); break;
    }
}

/* ---- drawing -------------------------------------------------------------------------------- */

typedef struct {
    cairo_t *cr;
    double x0, y0, w, h;    /* plot area, device units, y0 at the top */
    axis_map ax, ay, ay2;
} frame;

static void set_rgb(cairo_t *cr, int color) {
    double rgb[3];
    pc_color(color, rgb);
    cairo_set_source_rgb(cr, rgb[0], rgb[1], rgb[2]);
}

static double text_w(cairo_t *cr, const char *s, double size)
{
    cairo_text_extents_t e;
    cairo_set_font_size(cr, size);
    cairo_text_extents(cr, s, &e);
    return e.x_advance;
}

/* Text with its anchor: ha 0 left, 0.5 centre, 1 right; baseline at y + size*va_shift. */
static void text_at(cairo_t *cr, const char *s, double x, double y, double size, double ha, double va)
{
    double w = text_w(cr, s, size);
    cairo_move_to(cr, x - ha * w, y + va * size);
    cairo_show_text(cr, s);
}

/* Centred text shrunk (to 9 px) and then cut with "..." to fit in width w. */
static void fit_text(cairo_t *cr, const char *s, double x, double y, double w)
{
    char buf[sizeof ((pc_chart *)0)->subtitle];
    snprintf(buf, sizeof buf, "%s", s);
    double size = 12;
    while (size > 9 && text_w(cr, buf, size) > w)
        size -= 0.5;
    size_t n = strlen(buf);
    while (n > 4 && text_w(cr, buf, size) > w) {
        n--;
        memcpy(buf + n - 3, "...", 4);
    }
    text_at(cr, buf, x, y, size, 0.5, 0.0);
}

static void data_range(const pc_chart *c, int right, double *xlo, double *xhi, double *ylo, double *yhi)
{
    *xlo = *ylo = INFINITY;
    *xhi = *yhi = -INFINITY;
    for (int i = 0; i < c->ns; i++)
        for (int k = 0; k < c->s[i].n; k++) {
            double x = c->s[i].x[k], y = c->s[i].y[k];
            if (!isfinite(x) || !isfinite(y))
                continue;
            if (c->x.scale != PC_SCALE_LINEAR && !(x > 0))
                continue;
            *xlo = fmin(*xlo, x);
            *xhi = fmax(*xhi, x);
            if (c->s[i].right != right)
                continue;
            const pc_axis *ya = right ? &c->y2 : &c->y;
            if (ya->scale != PC_SCALE_LINEAR && !(y > 0))
                continue;
            *ylo = fmin(*ylo, y);
            *yhi = fmax(*yhi, y);
        }
    if (c->kind == PC_BARS)
        for (int i = 0; i < c->ncat; i++) {
            double sum = 0;
            for (int k = 0; k < c->nseg; k++)
                sum += c->val[i][k];
            *ylo = fmin(*ylo, 0.0);
            *yhi = fmax(*yhi, sum);
        }
    if (c->kind == PC_ROWS)
        for (int i = 0; i < c->nrect; i++) {
            *xlo = fmin(*xlo, c->rect[i].x0);
            *xhi = fmax(*xhi, c->rect[i].x1);
        }
    for (int i = 0; i < c->nref; i++) {
        if (c->ref[i].vertical) {
            *xlo = fmin(*xlo, c->ref[i].value);
            *xhi = fmax(*xhi, c->ref[i].value);
        } else if (!right) {
            *ylo = fmin(*ylo, c->ref[i].value);
            *yhi = fmax(*yhi, c->ref[i].value);
        }
    }
}

static double px(const frame *f, double v) { return f->x0 + f->w * frac(&f->ax, v); }
static double py(const frame *f, const axis_map *a, double v) { return f->y0 + f->h * (1.0 - frac(a, v)); }

static void draw_grid_and_ticks(const pc_chart *c, const frame *f)
{
    cairo_t *cr = f->cr;
    char buf[64];
    cairo_set_line_width(cr, 1.0);
    /* y ticks and horizontal grid (numeric y: XY and bars) */
    if (c->kind != PC_ROWS)
        for (int i = 0; i < f->ay.nticks; i++) {
            double y = py(f, &f->ay, f->ay.ticks[i]);
            cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
            cairo_move_to(cr, f->x0, y);
            cairo_line_to(cr, f->x0 + f->w, y);
            cairo_stroke(cr);
            cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
            tick_text(&c->y, f->ay.ticks[i], buf, sizeof buf);
            text_at(cr, buf, f->x0 - 8, y, 12, 1.0, 0.35);
        }
    if (c->has_y2)
        for (int i = 0; i < f->ay2.nticks; i++) {
            double y = py(f, &f->ay2, f->ay2.ticks[i]);
            cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
            tick_text(&c->y2, f->ay2.ticks[i], buf, sizeof buf);
            text_at(cr, buf, f->x0 + f->w + 8, y, 12, 0.0, 0.35);
        }
    /* x ticks and vertical grid (numeric x: XY and rows) */
    if (c->kind != PC_BARS)
        for (int i = 0; i < f->ax.nticks; i++) {
            double x = px(f, f->ax.ticks[i]);
            cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
            cairo_move_to(cr, x, f->y0);
            cairo_line_to(cr, x, f->y0 + f->h);
            cairo_stroke(cr);
            cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
            tick_text(&c->x, f->ax.ticks[i], buf, sizeof buf);
            text_at(cr, buf, x, f->y0 + f->h + 8, 12, 0.5, 0.9);
        }
    /* category labels */
    double slot = c->ncat ? (c->kind == PC_BARS ? f->w : f->h) / c->ncat : 0;
    int every = c->kind == PC_BARS && slot < 36 ? (int)ceil(36 / slot) : 1;
    for (int i = 0; i < c->ncat; i++) {
        cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
        if (c->kind == PC_BARS && i % every == 0)
            text_at(cr, c->cat[i], f->x0 + slot * (i + 0.5), f->y0 + f->h + 8, 12, 0.5, 0.9);
        else if (c->kind == PC_ROWS)
            text_at(cr, c->cat[i], f->x0 - 8, f->y0 + slot * (i + 0.5), slot < 14 ? slot * 0.85 : 12, 1.0, 0.35);
    }
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    cairo_set_line_width(cr, 1.2);
    cairo_rectangle(cr, f->x0, f->y0, f->w, f->h);
    cairo_stroke(cr);
}

static void draw_series(const pc_chart *c, const frame *f)
{
    cairo_t *cr = f->cr;
    cairo_save(cr);
    cairo_rectangle(cr, f->x0 - 6, f->y0 - 6, f->w + 12, f->h + 12);
    cairo_clip(cr);
    for (int i = 0; i < c->ns; i++) {
        const pc_series *s = &c->s[i];
        const axis_map *ay = s->right ? &f->ay2 : &f->ay;
        set_rgb(cr, s->color);
        cairo_set_line_width(cr, 2.5);
        double dash[] = {7.0, 5.0};
        cairo_set_dash(cr, dash, s->dashed ? 2 : 0, 0);
        if (s->style & PC_LINE) {
            int pen = 0;
            for (int k = 0; k < s->n; k++) {
                if (!isfinite(s->x[k]) || !isfinite(s->y[k])) {
                    pen = 0;
                    continue;
                }
                double x = px(f, s->x[k]), y = py(f, ay, s->y[k]);
                if (pen)
                    cairo_line_to(cr, x, y);
                else
                    cairo_move_to(cr, x, y);
                pen = 1;
            }
            cairo_stroke(cr);
        }
        cairo_set_dash(cr, dash, 0, 0);
        if (s->style & PC_MARKERS)
            for (int k = 0; k < s->n; k++) {
                if (!isfinite(s->x[k]) || !isfinite(s->y[k]))
                    continue;
                cairo_arc(cr, px(f, s->x[k]), py(f, ay, s->y[k]), s->style & PC_LINE ? 4.5 : 4.0, 0, 2 * PC_PI);
                cairo_fill(cr);
            }
    }
    cairo_restore(cr);
}

static void draw_bars(const pc_chart *c, const frame *f)
{
    cairo_t *cr = f->cr;
    double slot = f->w / (c->ncat ? c->ncat : 1), bw = slot * 0.7;
    for (int i = 0; i < c->ncat; i++) {
        double base = 0;
        for (int k = 0; k < c->nseg; k++) {
            double v = c->val[i][k];
            if (!(v > 0))
                continue;
            double y1 = py(f, &f->ay, base), y2 = py(f, &f->ay, base + v);
            set_rgb(cr, c->seg_color[k]);
            cairo_rectangle(cr, f->x0 + slot * i + (slot - bw) / 2, y2, bw, y1 - y2);
            cairo_fill(cr);
            base += v;
        }
    }
}

static void draw_rows(const pc_chart *c, const frame *f)
{
    cairo_t *cr = f->cr;
    double slot = f->h / (c->ncat ? c->ncat : 1), bh = slot * 0.72;
    /* Spans are often thinner than a pixel: drawn without antialiasing and at least a pixel
     * wide, a short task keeps its colour instead of fading into a pale smear. */
    cairo_save(cr);
    cairo_set_antialias(cr, CAIRO_ANTIALIAS_NONE);
    for (int i = 0; i < c->nrect; i++) {
        const pc_rect *r = &c->rect[i];
        double x1 = px(f, r->x0), x2 = px(f, r->x1);
        set_rgb(cr, c->seg_color[r->seg]);
        /* at least a hairline so short tasks stay visible */
        cairo_rectangle(cr, x1, f->y0 + slot * r->row + (slot - bh) / 2, fmax(x2 - x1, 1.0), bh);
        cairo_fill(cr);
    }
    cairo_restore(cr);
}

static void draw_refs(const pc_chart *c, const frame *f)
{
    cairo_t *cr = f->cr;
    for (int i = 0; i < c->nref; i++) {
        const pc_ref *r = &c->ref[i];
        double dash[] = {6.0, 4.0};
        cairo_set_source_rgb(cr, 0.75, 0.1, 0.1);
        cairo_set_line_width(cr, 1.8);
        cairo_set_dash(cr, dash, 2, 0);
        if (r->vertical) {
            double x = px(f, r->value);
            cairo_move_to(cr, x, f->y0);
            cairo_line_to(cr, x, f->y0 + f->h);
            cairo_stroke(cr);
            cairo_set_dash(cr, dash, 0, 0);
            text_at(cr, r->label, x - 5, f->y0 + 16, 12, 1.0, 0.0);
        } else {
            double y = py(f, &f->ay, r->value);
            cairo_move_to(cr, f->x0, y);
            cairo_line_to(cr, f->x0 + f->w, y);
            cairo_stroke(cr);
            cairo_set_dash(cr, dash, 0, 0);
            text_at(cr, r->label, f->x0 + f->w - 6, y - 6, 12, 1.0, 0.0);
        }
    }
}

/* A segment is in the legend and the metadata only when something of it is drawn. */
int pc_seg_used(const pc_chart *c, int k)
{
    if (c->kind == PC_BARS) {
        for (int i = 0; i < c->ncat; i++)
            if (c->val[i][k] > 0)
                return 1;
        return 0;
    }
    for (int i = 0; i < c->nrect; i++)
        if (c->rect[i].seg == k)
            return 1;
    return 0;
}

/* Legend entries: series, then segments. */
static int legend_items(const pc_chart *c, const char **names, int *colors, int *kinds, int cap)
{
    int n = 0;
    for (int i = 0; i < c->ns && n < cap; i++, n++) {
        names[n] = c->s[i].name;
        colors[n] = c->s[i].color;
        kinds[n] = c->s[i].dashed ? 2 : c->s[i].style == PC_MARKERS ? 3 : 1;
    }
    for (int i = 0; i < c->nseg && n < cap; i++) {
        if (!pc_seg_used(c, i))
            continue;
        names[n] = c->seg[i];
        colors[n] = c->seg_color[i];
        kinds[n++] = 0;
    }
    return n;
}

static double legend_width(const pc_chart *c, cairo_t *cr)
{
    const char *names[PC_MAX_SERIES + PC_MAX_SEGS];
    int colors[PC_MAX_SERIES + PC_MAX_SEGS], kinds[PC_MAX_SERIES + PC_MAX_SEGS];
    int n = legend_items(c, names, colors, kinds, PC_MAX_SERIES + PC_MAX_SEGS);
    double w = 0;
    for (int i = 0; i < n; i++)
        w = fmax(w, text_w(cr, names[i], 12));
    return n ? w + 44 : 0;
}

static void draw_legend(const pc_chart *c, const frame *f, double x)
{
    cairo_t *cr = f->cr;
    const char *names[PC_MAX_SERIES + PC_MAX_SEGS];
    int colors[PC_MAX_SERIES + PC_MAX_SEGS], kinds[PC_MAX_SERIES + PC_MAX_SEGS];
    int n = legend_items(c, names, colors, kinds, PC_MAX_SERIES + PC_MAX_SEGS);
    double y = f->y0 + 8;
    for (int i = 0; i < n; i++, y += 20) {
        set_rgb(cr, colors[i]);
        double dash[] = {5.0, 3.0};
        if (kinds[i] == 0) {
            cairo_rectangle(cr, x, y - 6, 22, 12);
            cairo_fill(cr);
        } else if (kinds[i] == 3) {
            cairo_arc(cr, x + 11, y, 4.0, 0, 2 * PC_PI);
            cairo_fill(cr);
        } else {
            cairo_set_line_width(cr, 2.5);
            cairo_set_dash(cr, dash, kinds[i] == 2 ? 2 : 0, 0);
            cairo_move_to(cr, x, y);
            cairo_line_to(cr, x + 22, y);
            cairo_stroke(cr);
            cairo_set_dash(cr, dash, 0, 0);
        }
        cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
        text_at(cr, names[i], x + 30, y, 12, 0.0, 0.35);
    }
}

static double max_cat_width(const pc_chart *c, cairo_t *cr)
{
    double w = 0;
    for (int i = 0; i < c->ncat; i++)
        w = fmax(w, text_w(cr, c->cat[i], 12));
    return w;
}

/* Lay out and draw everything on cr (width W, height H). */
void pc_draw(const pc_chart *c, cairo_t *cr, double W, double H)
{
    frame f = {.cr = cr};
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    double xlo, xhi, ylo, yhi, y2lo, y2hi, d1, d2;
    data_range(c, 0, &xlo, &xhi, &ylo, &yhi);
    data_range(c, 1, &d1, &d2, &y2lo, &y2hi);
    if (c->kind != PC_BARS)
        axis_setup(&f.ax, &c->x, xlo, xhi);
    if (c->kind != PC_ROWS)
        axis_setup(&f.ay, &c->y, ylo, yhi);
    if (c->has_y2)
        axis_setup(&f.ay2, &c->y2, y2lo, y2hi);
    /* left margin: the widest y tick or row label, plus the rotated axis label */
    double left = 0;
    char buf[64];
    for (int i = 0; i < f.ay.nticks && c->kind != PC_ROWS; i++) {
        tick_text(&c->y, f.ay.ticks[i], buf, sizeof buf);
        left = fmax(left, text_w(cr, buf, 12));
    }
    if (c->kind == PC_ROWS)
        left = fmax(left, max_cat_width(c, cr));
    double right = 24;
    if (c->has_y2) {
        double w2 = 0;
        for (int i = 0; i < f.ay2.nticks; i++) {
            tick_text(&c->y2, f.ay2.ticks[i], buf, sizeof buf);
            w2 = fmax(w2, text_w(cr, buf, 12));
        }
        right = w2 + 44;
    }
    double lw = legend_width(c, cr);
    f.x0 = left + 52;
    f.y0 = c->subtitle[0] ? 70 : 52;
    f.w = W - f.x0 - right - (lw > 0 ? lw + 16 : 0);
    f.h = H - f.y0 - 64;
    if (f.w < 40) f.w = 40;
    if (f.h < 40) f.h = 40;

    cairo_set_source_rgb(cr, 0.05, 0.05, 0.05);
    cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
    text_at(cr, c->title, W / 2, 28, 17, 0.5, 0.0);
    cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
    if (c->subtitle[0])
        fit_text(cr, c->subtitle, W / 2, 50, W - 24);

    draw_grid_and_ticks(c, &f);
    if (c->kind == PC_BARS)
        draw_bars(c, &f);
    if (c->kind == PC_ROWS)
        draw_rows(c, &f);
    draw_series(c, &f);
    draw_refs(c, &f);
    if (lw > 0)
        draw_legend(c, &f, f.x0 + f.w + right + 8);

    /* axis labels */
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    text_at(cr, c->x.label, f.x0 + f.w / 2, H - 18, 14, 0.5, 0.0);
    cairo_save(cr);
    cairo_translate(cr, 20, f.y0 + f.h / 2);
    cairo_rotate(cr, -PC_PI / 2);
    text_at(cr, c->y.label, 0, 0, 14, 0.5, 0.35);
    cairo_restore(cr);
    if (c->has_y2) {
        cairo_save(cr);
        cairo_translate(cr, W - (lw > 0 ? lw + 16 : 0) - 14, f.y0 + f.h / 2);
        cairo_rotate(cr, -PC_PI / 2);
        text_at(cr, c->y2.label, 0, 0, 14, 0.5, 0.35);
        cairo_restore(cr);
    }
}

