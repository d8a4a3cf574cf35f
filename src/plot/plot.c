/* src/plot/plot.c — what every figure shares: options, the format from the file name, and the
 * last step (the caller's title over the figure's, then render). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include <cairo.h>
#include <fontconfig/fontconfig.h>

#include "plot_internal.h"

void mp_plot_release_caches(void)
{
    cairo_debug_reset_static_data(); /* first: it holds fontconfig patterns */
    FcFini();
}

void mp_plot_opts_init(mp_plot_opts *o)
{
    memset(o, 0, sizeof *o);
    o->width_px = 960;
    o->height_px = 600;
}

static int ends_with_ci(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    if (n < k)
        return 0;
    for (size_t i = 0; i < k; i++)
        if (tolower((unsigned char)s[n - k + i]) != suffix[i])
            return 0;
    return 1;
}

mp_status mp_plot_format_from_path(const char *path, mp_plot_format *out, mp_diag *diag)
{
    if (path && ends_with_ci(path, ".svg")) {
        *out = MP_PLOT_SVG;
        return MP_OK;
    }
    if (path && ends_with_ci(path, ".png")) {
        *out = MP_PLOT_PNG;
        return MP_OK;
    }
    mp_diag_add(diag, "plot: output = \"%s\": expected a file name ending in .svg or .png",
                path ? path : "");
    return MP_ERR_INPUT;
}

mp_status plot_finish(pc_chart *c, const mp_plot_opts *opts, const char *path, mp_diag *d)
{
    mp_plot_format fmt;
    mp_status st = mp_plot_format_from_path(path, &fmt, d);
    if (st == MP_OK) {
        if (opts && opts->title)
            snprintf(c->title, sizeof c->title, "%s", opts->title);
        if (opts && opts->subtitle)
            snprintf(c->subtitle, sizeof c->subtitle, "%s", opts->subtitle);
        st = pc_render(c, opts, fmt, path, d);
    }
    pc_destroy(c);
    return st;
}
