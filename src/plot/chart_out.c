/* src/plot/chart_out.c — a chart into a file (chart.h pc_render): cairo's SVG surface into memory,
 * with the <title>, <desc> and <metadata> of what was drawn put after the opening <svg> tag
 * (docs/plot.md "SVG metadata"), or cairo's image surface into a PNG. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cairo.h>
#include <cairo-svg.h>

#include "chart.h"


typedef struct {
    char *p;
    size_t n, cap;
    int oom;
} membuf;

static void mb_put(membuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (n >= SIZE_MAX / 2 - b->n) { /* no size_t wrap in the sums below */
        b->oom = 1;
        return;
    }
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1 << 16;
        while (b->n + n + 1 > cap)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static cairo_status_t mb_write(void *ctx, const unsigned char *data, unsigned int len)
{
    membuf *b = ctx;
    mb_put(b, (const char *)data, len);
    return b->oom ? CAIRO_STATUS_NO_MEMORY : CAIRO_STATUS_SUCCESS;
}

static void mb_xml(membuf *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': mb_put(b, "&lt;", 4); break;
        case '>': mb_put(b, "&gt;", 4); break;
        case '&': mb_put(b, "&amp;", 5); break;
        case '"': mb_put(b, "&quot;", 6); break;
        default:
            if ((unsigned char)*s >= 0x20)
                mb_put(b, s, 1);
        }
    }
}

static void mb_printf(membuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void mb_printf(membuf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0)
        mb_put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* <title>, <desc> and the machine-readable <metadata> (docs/plot.md "SVG metadata"). */
static void metadata(const pc_chart *c, membuf *b)
{
    mb_put(b, "<title>", 7);
    mb_xml(b, c->title);
    mb_put(b, "</title>\n<desc>", 15);
    mb_xml(b, c->subtitle);
    mb_printf(b, "</desc>\n<metadata>\n<chart xmlns=\"urn:meshplan:plot\" figure=\"%s\" title=\"", c->figure);
    mb_xml(b, c->title);
    mb_put(b, "\">\n", 3);
    const pc_axis *axes[3] = {&c->x, &c->y, &c->y2};
    const char *ids[3] = {"x", "y", "y2"};
    for (int i = 0; i < (c->has_y2 ? 3 : 2); i++) {
        mb_printf(b, "<axis id=\"%s\" label=\"", ids[i]);
        mb_xml(b, axes[i]->label);
        mb_printf(b, "\" scale=\"%s\"/>\n", axes[i]->scale == PC_SCALE_LINEAR ? "linear"
                                            : axes[i]->scale == PC_SCALE_LOG2 ? "log2" : "log10");
    }
    for (int i = 0; i < c->ns; i++) {
        mb_put(b, "<series name=\"", 14);
        mb_xml(b, c->s[i].name);
        int finite = 0; /* the points drawn: a gap (NaN) is not one */
        for (int k = 0; k < c->s[i].n; k++)
            finite += isfinite(c->s[i].x[k]) && isfinite(c->s[i].y[k]);
        mb_printf(b, "\" color=\"#%06X\" points=\"%d\" axis=\"%s\"/>\n", pc_color_hex(c->s[i].color), finite,
                  c->s[i].right ? "y2" : "y");
    }
    for (int i = 0; i < c->nseg; i++) {
        if (!pc_seg_used(c, i))
            continue;
        mb_put(b, "<segment name=\"", 15);
        mb_xml(b, c->seg[i]);
        mb_printf(b, "\" color=\"#%06X\"/>\n", pc_color_hex(c->seg_color[i]));
    }
    for (int i = 0; i < c->ncat; i++) {
        mb_put(b, c->kind == PC_BARS ? "<bar name=\"" : "<row name=\"", c->kind == PC_BARS ? 11 : 11);
        mb_xml(b, c->cat[i]);
        mb_put(b, "\"/>\n", 4);
    }
    if (c->kind == PC_ROWS)
        mb_printf(b, "<spans count=\"%d\"/>\n", c->nrect);
    for (int i = 0; i < c->nref; i++) {
        mb_printf(b, "<reference axis=\"%s\" value=\"%.9g\" label=\"", c->ref[i].vertical ? "x" : "y",
                  c->ref[i].value);
        mb_xml(b, c->ref[i].label);
        mb_put(b, "\"/>\n", 4);
    }
    mb_put(b, "</chart>\n</metadata>\n", 21);
}

static mp_status write_file(const char *path, const char *a, size_t na, const char *b, size_t nb,
                            mp_diag *d)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        mp_diag_add(d, "plot: cannot write \"%s\"", path);
        return MP_ERR_IO;
    }
    size_t w = fwrite(a, 1, na, f) + (nb ? fwrite(b, 1, nb, f) : 0);
    int bad = fclose(f) != 0 || w != na + nb;
    if (bad) {
        mp_diag_add(d, "plot: write error on \"%s\"", path);
        return MP_ERR_IO;
    }
    return MP_OK;
}

static mp_status render_svg(const pc_chart *c, int W, int H, const char *path, mp_diag *d)
{
    membuf svg = {0}, meta = {0};
    cairo_surface_t *s = cairo_svg_surface_create_for_stream(mb_write, &svg, W, H);
    cairo_svg_surface_set_document_unit(s, CAIRO_SVG_UNIT_PX);
    cairo_t *cr = cairo_create(s);
    pc_draw(c, cr, W, H);
    cairo_destroy(cr);
    cairo_surface_finish(s);
    int bad = cairo_surface_status(s) != CAIRO_STATUS_SUCCESS;
    cairo_surface_destroy(s);
    metadata(c, &meta);
    mp_status st = MP_OK;
    char *open = svg.p ? strstr(svg.p, "<svg") : NULL;
    char *gt = open ? strchr(open, '>') : NULL;
    if (svg.oom || meta.oom) {
        st = MP_ERR_NOMEM;
    } else if (bad || !gt) {
        mp_diag_add(d, "plot: cairo could not draw the SVG");
        st = MP_ERR_INTERNAL;
    } else {
        /* the metadata goes right after the opening <svg ...> tag */
        size_t head = (size_t)(gt - svg.p) + 1;
        membuf out = {0};
        mb_put(&out, svg.p, head);
        mb_put(&out, "\n", 1);
        mb_put(&out, meta.p, meta.n);
        st = out.oom ? MP_ERR_NOMEM : write_file(path, out.p, out.n, svg.p + head, svg.n - head, d);
        free(out.p);
    }
    free(svg.p);
    free(meta.p);
    return st;
}

static mp_status render_png(const pc_chart *c, int W, int H, const char *path, mp_diag *d)
{
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, W, H);
    if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) {
        cairo_surface_destroy(s);
        return MP_ERR_NOMEM;
    }
    cairo_t *cr = cairo_create(s);
    pc_draw(c, cr, W, H);
    cairo_destroy(cr);
    cairo_surface_flush(s);
    cairo_status_t cs = cairo_surface_write_to_png(s, path);
    cairo_surface_destroy(s);
    if (cs != CAIRO_STATUS_SUCCESS) {
        mp_diag_add(d, "plot: cannot write \"%s\" (%s)", path, cairo_status_to_string(cs));
        return MP_ERR_IO;
    }
    return MP_OK;
}

mp_status pc_render(const pc_chart *c, const mp_plot_opts *opts, mp_plot_format format,
                    const char *path, mp_diag *d)
{
    mp_plot_opts o;
    mp_plot_opts_init(&o);
    if (opts)
        o = *opts;
    if (o.width_px < 200 || o.width_px > 8000 || o.height_px < 200 || o.height_px > 8000) {
        mp_diag_add(d, "plot: size %d x %d pixels: expected 200..8000 each", o.width_px, o.height_px);
        return MP_ERR_INPUT;
    }
    int points = 0;
    for (int i = 0; i < c->ns; i++)
        points += c->s[i].n;
    if (!points && !c->ncat && !c->nrect) {
        mp_diag_add(d, "plot: nothing to draw (no point, bar or span)");
        return MP_ERR_INPUT;
    }
    return format == MP_PLOT_SVG ? render_svg(c, o.width_px, o.height_px, path, d)
                                 : render_png(c, o.width_px, o.height_px, path, d);
}
