#define _POSIX_C_SOURCE 200809L
/* tests/test_plot.c — the readable-number helper (meshplan/format.h) on hand-checked values, and
 * the figures' library entry points on hand-built inputs: files written, errors named.
 * tests/plot_e2e.sh checks the figures' content through the CLI. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "meshplan/format.h"
#include "meshplan/plot.h"
#include "test_util.h"

static void si(double v, const char *unit, int sig, const char *want)
{
    char buf[64];
    int n = mp_format_si(v, unit, sig, buf, sizeof buf);
    if (strcmp(buf, want))
        fail_msg("mp_format_si(%.17g, \"%s\", %d) = \"%s\", expected \"%s\"", v, unit ? unit : "(null)",
                 sig, buf, want);
    assert_int_equal(n, (int)strlen(want));
}

static void bin(double v, int sig, const char *want)
{
    char buf[64];
    mp_format_binary(v, "B", sig, buf, sizeof buf);
    if (strcmp(buf, want))
        fail_msg("mp_format_binary(%.17g, %d) = \"%s\", expected \"%s\"", v, sig, buf, want);
}

static void test_format_si(void **state)
{
    (void)state;
    si(1.08e6, "$", 3, "1.08 M$");       /* the examples */
    si(3.2e6, "Wh", 3, "3.2 MWh");
    si(1234, "tok/s", 2, "1.2 k tok/s");
    si(999.6, "B/s", 3, "1 kB/s");        /* rounds up into the next prefix */
    si(999.4, "B/s", 3, "999 B/s");
    si(0.0123, "s", 3, "12.3 ms");
    si(0.507, "", 3, "0.507");           /* no unit: no milli */
    si(0.0, "s", 3, "0 s");
    si(-2.5e9, "FLOP", 3, "-2.5 GFLOP");
    si(5e20, "B", 3, "500 EB");          /* past the last prefix the mantissa grows */
    si(512, "GB/s", 1, "500 GB/s");      /* one digit */
    si(5.788e6, "", 4, "5.788 M");        /* a bare prefix, no trailing space */
    si(5.656e6, "GPU-hours", 4, "5.656 M GPU-hours");
    char small[6];
    assert_int_equal(mp_format_si(1.08e6, "$", 3, small, sizeof small), 7); /* snprintf's contract */
    assert_string_equal(small, "1.08 ");
}

static void test_format_binary(void **state)
{
    (void)state;
    bin(8, 3, "8 B");
    bin(1024, 3, "1 KiB");
    bin(80.0 * 1024 * 1024 * 1024, 3, "80 GiB");
    bin(76.56e9, 3, "71.3 GiB");          /* 76.56e9 / 2^30 = 71.30 */
    bin(1536.0 * 1024 * 1024, 3, "1.5 GiB");
    char buf[32];
    mp_format_binary(1.0 / 0.0, NULL, 3, buf, sizeof buf);
    assert_string_equal(buf, "inf B");
}

static void test_format_from_path(void **state)
{
    (void)state;
    mp_plot_format f;
    mp_diag d = {0};
    assert_int_equal(mp_plot_format_from_path("a/fig.SVG", &f, &d), MP_OK);
    assert_int_equal(f, MP_PLOT_SVG);
    assert_int_equal(mp_plot_format_from_path("fig.png", &f, &d), MP_OK);
    assert_int_equal(f, MP_PLOT_PNG);
    assert_int_equal(mp_plot_format_from_path("fig.pdf", &f, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "\"fig.pdf\""));
    assert_non_null(strstr(d.text, ".svg or .png"));
}

static char *tmp_path(const char *name)
{
    static char buf[256];
    snprintf(buf, sizeof buf, "/tmp/meshplan_test_plot_%d_%s", (int)getpid(), name);
    return buf;
}

/* A file exists, starts with the format's signature, and is removed. */
static void assert_written(const char *path, const char *magic)
{
    size_t len = 0;
    char *b = slurp(path, &len);
    assert_non_null(b);
    assert_true(len > 1000);
    assert_memory_equal(b, magic, strlen(magic));
    free(b);
    unlink(path);
}

static void test_scale_figure(void **state)
{
    (void)state;
    mp_plot_scale_point pts[3] = {
        {64, 0, 0, 0, 0, 0, 0},                  /* nothing fits at 64 */
        {128, 1, 1, 2.0e5, 1.0, 2.0e5, 1.0},
        {256, 1, 1, 3.6e5, 0.9, 3.8e5, 0.95},
    };
    mp_diag d = {0};
    char *p = tmp_path("scale.svg");
    assert_int_equal(mp_plot_scale(pts, 3, NULL, p, &d), MP_OK);
    size_t len;
    char *svg = slurp(p, &len);
    assert_non_null(svg);
    /* the subtitle names the reference: the first count that fits */
    assert_non_null(strstr(svg, "relative to 128 GPUs"));
    assert_non_null(strstr(svg, "points=\"2\"")); /* the count where nothing fits is a gap */
    assert_null(strstr(svg, "points=\"3\""));
    free(svg);
    unlink(p);
    assert_int_equal(mp_plot_scale(pts, 0, NULL, p, &d), MP_ERR_INPUT);
    pts[1].strong_ok = pts[1].weak_ok = pts[2].strong_ok = pts[2].weak_ok = 0;
    assert_int_equal(mp_plot_scale(pts, 3, NULL, p, &d), MP_ERR_INPUT); /* nothing fits anywhere */
    assert_non_null(strstr(d.text, "no plan fits"));
}

static void test_memory_figure(void **state)
{
    (void)state;
    mp_estimate *e = calloc(1, sizeof *e);
    assert_non_null(e);
    e->nstages = 100; /* more stages than bars: 0..30, an empty "...", 68..99 */
    e->feasible = 1;
    for (int i = 0; i < 100; i++) {
        e->per_stage[i].weights = 1e9 + i;
        e->per_stage[i].activations = 2e9;
        e->per_stage[i].total = 3e9;
    }
    e->memory = e->per_stage[0];
    e->memory.capacity = 80e9;
    mp_plot_opts o;
    mp_plot_opts_init(&o);
    o.title = "my title";
    mp_diag d = {0};
    char *p = tmp_path("mem.svg");
    assert_int_equal(mp_plot_memory(e, &o, p, &d), MP_OK);
    size_t len;
    char *svg = slurp(p, &len);
    assert_non_null(svg);
    assert_non_null(strstr(svg, "<title>my title</title>"));
    assert_non_null(strstr(svg, "<bar name=\"30\"/>\n<bar name=\"...\"/>\n<bar name=\"68\"/>"));
    assert_non_null(strstr(svg, "<bar name=\"99\"/>"));
    assert_null(strstr(svg, "<bar name=\"50\"/>"));
    assert_null(strstr(svg, "segment name=\"gradients\"")); /* nothing of it drawn */
    free(svg);
    unlink(p);
    p = tmp_path("mem.png");
    assert_int_equal(mp_plot_memory(e, NULL, p, &d), MP_OK);
    assert_written(p, "\x89PNG");
    o.width_px = 100;
    assert_int_equal(mp_plot_memory(e, &o, p, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "100 x 600"));
    assert_int_equal(mp_plot_memory(e, NULL, "/nonexistent-dir/x.svg", &d), MP_ERR_IO);
    assert_int_equal(mp_plot_memory(NULL, NULL, p, &d), MP_ERR_INPUT);
    assert_int_equal(mp_plot_parts(e, NULL, NULL, p, &d), MP_ERR_INPUT); /* step_s 0 */
    assert_int_equal(mp_plot_timeline(NULL, NULL, NULL, p, &d), MP_ERR_INPUT);
    free(e);
}

static void test_pareto_needs_plans(void **state)
{
    (void)state;
    mp_search_result r;
    memset(&r, 0, sizeof r);
    mp_diag d = {0};
    assert_int_equal(mp_plot_pareto(&r, NULL, tmp_path("p.svg"), &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "no feasible plan"));
}

static void test_collective_figure(void **state)
{
    (void)state;
    double bytes[4] = {1024, 1 << 20, 1 << 24, 1 << 30}, bw[4] = {1e9, 50e9, 200e9, 400e9};
    mp_plot_coll_series s[2] = {{"ring", 4, bytes, bw}, {"chosen", 4, bytes, bw}};
    mp_diag d = {0};
    char *p = tmp_path("c.svg");
    assert_int_equal(mp_plot_collective(s, 2, NULL, p, &d), MP_OK);
    assert_written(p, "<?xml");
    assert_int_equal(mp_plot_collective(s, 0, NULL, p, &d), MP_ERR_INPUT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_si),       cmocka_unit_test(test_format_binary),
        cmocka_unit_test(test_format_from_path), cmocka_unit_test(test_scale_figure),
        cmocka_unit_test(test_memory_figure),   cmocka_unit_test(test_pareto_needs_plans),
        cmocka_unit_test(test_collective_figure),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    mp_plot_release_caches(); /* fontconfig's caches, for LeakSanitizer */
    return failed;
}
