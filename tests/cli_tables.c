/* tests/cli_tables.c — the CLI's command tables (src/cli/cli.h "commands as tables"), in-process.
 *
 * Documentation and code cannot drift: every option of every table appears in that command's
 * --help, and a command's help lists no option that is not in its table. The parser: --opt=value
 * and --opt value give the same, flags refuse a value, required options are enforced, unknown
 * options and commands get the nearest name. Built from the CLI's sources without main (like the CLI
 * fuzz harness). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_rl_opts.h"

/* c's --help as a malloc'd string. */
static char *help_of(const cli_command *c)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    cli_print_command_help(f, c);
    long len = ftell(f);
    assert_true(len > 0);
    char *buf = malloc((size_t)len + 1);
    assert_non_null(buf);
    rewind(f);
    assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
    buf[len] = '\0';
    fclose(f);
    return buf;
}

static const cli_command *command(const char *name)
{
    int n;
    const cli_command *const *cmds = cli_commands(&n);
    for (int i = 0; i < n; i++)
        if (!strcmp(cmds[i]->name, name))
            return cmds[i];
    fail_msg("no command %s", name);
    return NULL;
}

static int in_table(const cli_command *c, const char *name, size_t len)
{
    for (const cli_option *o = c->options; o->name; o++)
        if (strlen(o->name) == len && !strncmp(o->name, name, len))
            return 1;
    return 0;
}

/* Every table option is listed (at a line's start, as "  --name") in its command's help; every
 * option the help lists at a line's start is in the table; every option has a help line. */
static void test_every_option_in_its_help(void **state)
{
    (void)state;
    int n;
    const cli_command *const *cmds = cli_commands(&n);
    assert_true(n >= 10);
    for (int i = 0; i < n; i++) {
        const cli_command *c = cmds[i];
        assert_non_null(c->summary);
        assert_non_null(c->run);
        char *h = help_of(c);
        for (const cli_option *o = c->options; o->name; o++) {
            char want[128];
            snprintf(want, sizeof want, "\n  %s%s", o->name, o->takes_value ? " " : "");
            if (!strstr(h, want))
                fail_msg("%s --help does not list %s", c->name, o->name);
            assert_true(o->help && o->help[0]);
            assert_true(!o->takes_value == !o->value); /* a value has a placeholder */
        }
        for (const char *p = strstr(h, "\n  -"); p; p = strstr(p + 1, "\n  -")) {
            const char *name = p + 3;
            size_t len = strcspn(name, " \n");
            if (!in_table(c, name, len))
                fail_msg("%s --help lists %.*s, which is not in its table", c->name, (int)len, name);
        }
        free(h);
    }
}

/* search and run: different help, each with only its own options. */
static void test_help_per_command(void **state)
{
    (void)state;
    char *s = help_of(command("search")), *r = help_of(command("run"));
    assert_string_not_equal(s, r);
    assert_non_null(strstr(s, "usage: meshplan search"));
    assert_non_null(strstr(r, "usage: meshplan run"));
    assert_non_null(strstr(s, "\n  --no-prune"));
    assert_null(strstr(r, "--no-prune"));
    assert_non_null(strstr(r, "\n  --trials "));
    assert_null(strstr(s, "--trials"));
    assert_null(strstr(s, "usage: meshplan run"));
    free(s);
    free(r);
}

/* A command's help lists the keys its --plan takes (found by a new user: serve, serve-search and
 * lora take the inference plan but listed the training keys, zero= and the like, which their
 * --plan refuses). */
static void test_plan_keys_per_command(void **state)
{
    (void)state;
    static const struct { const char *cmd; int infer, serve, train; } c[] = {
        {"predict", 0, 0, 1}, {"search", 0, 0, 1}, {"infer", 1, 0, 0}, {"lora", 1, 0, 0},
        {"serve", 1, 1, 0},   {"serve-search", 1, 1, 0}, {"rl", 1, 0, 1},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char *h = help_of(command(c[i].cmd));
        if (!!strstr(h, "inference plan keys") != c[i].infer || !!strstr(h, "\n  max_seqs ") != c[i].serve ||
            !!strstr(h, "\n  zero ") != c[i].train)
            fail_msg("%s --help: inference keys %d (want %d), scheduler keys %d (want %d), training keys %d "
                     "(want %d)", c[i].cmd, !!strstr(h, "inference plan keys"), c[i].infer,
                     !!strstr(h, "\n  max_seqs "), c[i].serve, !!strstr(h, "\n  zero "), c[i].train);
        free(h);
    }
}

/* The defaults run's help states are the library's (mp_run_opts_init and the energy and cost
 * defaults it takes): the help says "(default X)" with X as %g prints it. */
static void test_run_help_defaults(void **state)
{
    (void)state;
    mp_run_opts o;
    mp_run_opts_init(&o);
    const struct { const char *opt; double value; } d[] = {
        {"--price-gpu-hour", o.cost.price_gpu_hour_usd},
        {"--amortization-years", o.cost.amortization_years},
        {"--price-kwh", o.cost.price_kwh_usd},
        {"--pue", o.energy.pue},
        {"--grid-gco2-per-kwh", o.grid_gco2_per_kwh},
        {"--host-util", o.energy.host_util_frac},
        {"--checkpoint-GBps", o.checkpoint_Bps / 1e9},
        {"--restart-s", o.restart_s},
        {"--repair-h", o.repair_h},
        {"--failure-scale", o.failure_scale},
        {"--trials", (double)o.trials},
        {"--seed", (double)o.seed},
    };
    const cli_command *c = command("run");
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) {
        const cli_option *opt = NULL;
        for (const cli_option *x = c->options; x->name; x++)
            if (!strcmp(x->name, d[i].opt))
                opt = x;
        assert_non_null(opt);
        char want[64];
        snprintf(want, sizeof want, "(default %g)", d[i].value);
        if (!strstr(opt->help, want))
            fail_msg("run %s: help \"%s\" does not say %s", d[i].opt, opt->help, want);
    }
    assert_int_equal(o.spare_nodes, -1); /* "default auto" */
    assert_true(o.checkpoint_interval_s == 0.0); /* "default: the optimum" */
}

static void test_opt_equals_value(void **state)
{
    (void)state;
    const cli_command *c = command("run");
    char *a1[] = {"--model=llama3-8b", "--gpu", "h100-sxm5-80gb", "--gpus=8", "--plan=tp=2,gb=64",
                  "--tokens=1e9", "--json", "--seed="};
    cli_args a;
    assert_int_equal(cli_parse_cmd(c, 8, a1, &a), 0);
    assert_string_equal(cli_opt(&a, "--model"), "llama3-8b");
    assert_string_equal(cli_opt(&a, "--gpu"), "h100-sxm5-80gb");
    assert_string_equal(cli_opt(&a, "--gpus"), "8");
    assert_string_equal(cli_opt(&a, "--plan"), "tp=2,gb=64"); /* only the first = splits */
    assert_string_equal(cli_opt(&a, "--seed"), "");
    assert_true(cli_flag(&a, "--json"));
    assert_false(cli_flag(&a, "--async-checkpoint"));
    /* A flag takes no value. */
    char *a2[] = {"--model=m", "--gpu=g", "--gpus=8", "--plan=tp=1", "--tokens=1", "--json=1"};
    assert_int_equal(cli_parse_cmd(c, 6, a2, &a), EXIT_INPUT);
    /* A required option missing. */
    char *a3[] = {"--model=m", "--gpu=g", "--gpus=8", "--plan=tp=1"};
    assert_int_equal(cli_parse_cmd(c, 4, a3, &a), EXIT_INPUT);
    /* A value option at the end with no value; a positional where none is taken. */
    char *a4[] = {"--model=m", "--gpu=g", "--gpus=8", "--plan=tp=1", "--tokens"};
    assert_int_equal(cli_parse_cmd(c, 5, a4, &a), EXIT_INPUT);
    char *a5[] = {"--model=m", "--gpu=g", "--gpus=8", "--plan=tp=1", "--tokens=1", "extra"};
    assert_int_equal(cli_parse_cmd(c, 6, a5, &a), EXIT_INPUT);
    /* validate takes one positional. */
    char *a6[] = {"runs.csv", "--json"};
    assert_int_equal(cli_parse_cmd(command("validate"), 2, a6, &a), 0);
    assert_int_equal(a.npositional, 1);
    assert_string_equal(a.positional[0], "runs.csv");
}

static void nearest_is(const char *typed, const char *const *names, int n, const char *want)
{
    const char *out[3];
    int k = cli_nearest(typed, names, n, out, 3);
    if (!want) {
        if (k)
            fail_msg("%s: expected no suggestion, got %s", typed, out[0]);
        return;
    }
    if (k != 1 || strcmp(out[0], want))
        fail_msg("%s: expected only %s, got %d suggestions (first %s)", typed, want, k,
                 k ? out[0] : "none");
}

static void test_suggestions(void **state)
{
    (void)state;
    const char *names[64];
    int n = 0;
    for (const cli_option *o = command("predict")->options; o->name; o++)
        names[n++] = o->name;
    nearest_is("--gpu-count", names, n, "--gpus"); /* prefix gpu, 6 edits, nearer in length */
    nearest_is("--modle", names, n, "--model");     /* a transposition: 1 edit */
    nearest_is("--jsno", names, n, "--json");
    nearest_is("--gpus-per-nod", names, n, "--gpus-per-node");
    nearest_is("--qualityfactor", names, n, "--quality-factor");
    nearest_is("--xyzzy", names, n, NULL);
    const char *cmds[] = {"predict", "validate", "catalog", "search", "scale", "run", "trace"};
    nearest_is("serach", cmds, 7, "search");
    nearest_is("predcit", cmds, 7, "predict");
    nearest_is("rnu", cmds, 7, "run");
    nearest_is("frobnicate", cmds, 7, NULL);
}

/* Through the whole command: exit codes of an unknown option, an unknown command, --help. */
static void test_cli_main_exit_codes(void **state)
{
    (void)state;
    char *u1[] = {"meshplan", "predict", "--gpu-count", "8"};
    assert_int_equal(cli_main(4, u1), EXIT_INPUT);
    char *u2[] = {"meshplan", "serach"};
    assert_int_equal(cli_main(2, u2), EXIT_INPUT);
    char *u3[] = {"meshplan", "help", "nosuch"};
    assert_int_equal(cli_main(3, u3), EXIT_INPUT);
    /* (The two helps go to stdout, into the test's log.) */
    char *h1[] = {"meshplan", "trace", "--help"};
    assert_int_equal(cli_main(3, h1), 0);
    char *h2[] = {"meshplan", "help", "run"};
    assert_int_equal(cli_main(3, h2), 0);
}

/* rl and rl-search read one option table (src/cli/cli_rl_opts.h): each shared option is in both
 * commands, with the same help text and the same required flag, once. */
static const cli_option *find_opt(const cli_command *c, const char *name)
{
    const cli_option *hit = NULL;
    for (const cli_option *o = c->options; o->name; o++)
        if (!strcmp(o->name, name)) {
            assert_null(hit); /* listed once */
            hit = o;
        }
    return hit;
}

static void test_rl_tables_shared(void **state)
{
    (void)state;
    static const cli_option shared[] = {CLI_OPTS_RL_JOB CLI_END};
    const cli_command *rl = command("rl"), *rs = command("rl-search");
    int n = 0;
    for (const cli_option *o = shared; o->name; o++, n++) {
        const cli_option *a = find_opt(rl, o->name), *b = find_opt(rs, o->name);
        assert_non_null(a);
        assert_non_null(b);
        assert_string_equal(a->help, b->help);
        assert_int_equal(a->required, b->required);
        assert_int_equal(a->required, o->required);
    }
    assert_int_equal(n, 24);
    assert_non_null(find_opt(rs, "--top"));
    assert_null(find_opt(rl, "--top"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_option_in_its_help),
        cmocka_unit_test(test_help_per_command),
        cmocka_unit_test(test_plan_keys_per_command),
        cmocka_unit_test(test_run_help_defaults),
        cmocka_unit_test(test_opt_equals_value),
        cmocka_unit_test(test_suggestions),
        cmocka_unit_test(test_cli_main_exit_codes),
        cmocka_unit_test(test_rl_tables_shared),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
