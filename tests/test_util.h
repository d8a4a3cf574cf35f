/* tests/test_util.h — helpers shared by the cmocka test programs (include after <cmocka.h>).
 * Everything is static inline so a test that does not use a helper gets no warning. */
#ifndef MESHPLAN_TEST_UTIL_H
#define MESHPLAN_TEST_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "meshplan/catalog.h"

/* The built-in catalog, loaded once per test group by catalog_setup. */
static mp_catalog *g_cat;

static inline int catalog_setup(void **state)
{
    (void)state;
    mp_diag d = {0};
    return mp_catalog_create(&g_cat, &d) == MP_OK ? 0 : -1;
}

static inline int catalog_teardown(void **state)
{
    (void)state;
    mp_catalog_destroy(g_cat);
    g_cat = NULL;
    return 0;
}

/* |got - want| <= rel * |want|, with the expression and line in the failure message. */
static inline void assert_close_(double got, double want, double rel, const char *what, int line)
{
    if (!(fabs(got - want) <= rel * fabs(want)))
        fail_msg("line %d: %s = %.17g, expected %.17g (rel. error %.3g > %.3g)", line, what, got,
                 want, (got - want) / want, rel);
}
#define assert_close(got, want, rel) assert_close_((got), (want), (rel), #got, __LINE__)

/* Whole file into a malloc'd NUL-terminated buffer; NULL if it cannot be opened. */
static inline char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)(n > 0 ? n : 0) + 1);
    assert_non_null(buf);
    *len = fread(buf, 1, (size_t)(n > 0 ? n : 0), f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

#endif
