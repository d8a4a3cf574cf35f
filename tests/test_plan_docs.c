/* tests/test_plan_docs.c — the docs and the code list the same plan keys: every key of the two
 * tables (src/plan/plan_keys.h, src/islands/xsync_keys.h) is in the README's plan-key list
 * (between the "plan-keys" markers) and in `meshplan help` and `meshplan predict --help`, and
 * every key the README lists is in a table. Fails when a key is added, renamed or removed in one
 * place only (docs/plan.md). */
#define _POSIX_C_SOURCE 200809L /* popen */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"

#include "meshplan/plan.h"
#include "meshplan/xsync.h"

#ifndef MESHPLAN_CLI
#error "MESHPLAN_CLI: the path of the meshplan binary (tests/CMakeLists.txt)"
#endif

static const mp_plan_key *key_any(int i)
{
    int n = 0;
    while (mp_plan_key_at(n))
        n++;
    return i < n ? mp_plan_key_at(i) : mp_islands_plan_key_at(i - n);
}

static int is_key(const char *name)
{
    for (int i = 0; key_any(i); i++)
        if (!strcmp(key_any(i)->name, name))
            return 1;
    return 0;
}

/* The names the README's list gives: each `code span` inside the block that is a name
 * ([a-z][a-z0-9_]*) or name=value. Returns how many, into names[0..cap). */
static int readme_keys(char names[][40], int cap)
{
    size_t len = 0;
    char *text = slurp(MESHPLAN_SOURCE_DIR "/README.md", &len);
    assert_non_null(text);
    char *open = strstr(text, "<!-- plan-keys");
    assert_non_null(open);
    char *start = strstr(open, "-->");
    char *end = strstr(open, "<!-- /plan-keys -->");
    assert_true(start && end && start < end);
    int n = 0;
    for (char *s = start; (s = strchr(s, '`')) && s < end;) {
        char *e = strchr(s + 1, '`');
        assert_true(e && e < end);
        size_t k = 0;
        while (s + 1 + k < e && ((s[1 + k] >= 'a' && s[1 + k] <= 'z') || s[1 + k] == '_' ||
                                 (k > 0 && s[1 + k] >= '0' && s[1 + k] <= '9')))
            k++;
        if (k > 0 && k < 40 && (s + 1 + k == e || s[1 + k] == '=') && n < cap) {
            memcpy(names[n], s + 1, k);
            names[n++][k] = '\0';
        }
        s = e + 1;
    }
    free(text);
    return n;
}

static void test_readme_lists_the_table(void **state)
{
    (void)state;
    static char names[128][40];
    int n = readme_keys(names, 128);
    for (int i = 0; i < n; i++)
        if (!is_key(names[i]))
            fail_msg("README.md lists plan key \"%s\", which no table has", names[i]);
    for (int i = 0; key_any(i); i++) {
        int found = 0;
        for (int j = 0; j < n; j++)
            found |= !strcmp(names[j], key_any(i)->name);
        if (!found)
            fail_msg("plan key \"%s\" is missing from README.md's plan-key list", key_any(i)->name);
    }
}

/* Everything the command prints for args, or fail. */
static char *run_cli(const char *args)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", MESHPLAN_CLI, args);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    assert_non_null(out);
    size_t got;
    while ((got = fread(out + len, 1, cap - 1 - len, f)) > 0)
        len += got;
    out[len] = '\0';
    int rc = pclose(f);
    if (rc != 0)
        fail_msg("%s: exit status %d\n%s", cmd, rc, out);
    return out;
}

static void test_help_lists_the_table(void **state)
{
    (void)state;
    static const char *const cmds[] = {"help", "predict --help"};
    for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
        char *out = run_cli(cmds[c]);
        for (int i = 0; key_any(i); i++) {
            char line[64];
            snprintf(line, sizeof line, "\n  %-16s ", key_any(i)->name);
            if (!strstr(out, line))
                fail_msg("`meshplan %s` does not list plan key \"%s\"", cmds[c], key_any(i)->name);
        }
        free(out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_readme_lists_the_table),
        cmocka_unit_test(test_help_lists_the_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
