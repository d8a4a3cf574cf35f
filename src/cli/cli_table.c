/* src/cli/cli_table.c — the command tables read (cli.h "commands as tables"): the option parser,
 * the per-command and global help, and the nearest-name suggestion for a mistyped option or
 * command. Sizes: a command has tens of options, names are short; every lookup is linear. */
#define _POSIX_C_SOURCE 200809L /* strnlen */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define HELP_WIDTH 100 /* columns the help is wrapped to */
#define NAME_CAP 64    /* longest option or command name compared for suggestions */

/* Where every help prints the plan keys: from the library's key tables (cli_plan_keys.c). A
 * command's help names the option it takes them with and lists the islands keys only where an
 * islands description is accepted (predict, islands-scale); the global help lists all. */
static const char *const islands_commands[] = {"predict", "islands-scale"};

static void print_plan_keys(FILE *f, const cli_command *c);

static const char clusters_help[] =
    "clusters:  C is a catalog node (dgx-h100, ...), a shipped cluster (docs/cluster.md) or a\n"
    "           cluster description file\n";
static const char exit_codes_help[] = "exit codes: 0 ok, 2 bad usage or input, 1 internal error\n";

/* ---- nearest names ----------------------------------------------------------------------------- */

static const char *undash(const char *s)
{
    while (*s == '-')
        s++;
    return s;
}

/* Optimal string alignment distance (Levenshtein with adjacent transpositions counted as one
 * edit; Damerau 1964), on at most NAME_CAP characters of each. O(|a| |b|). */
static int osa_distance(const char *a, const char *b)
{
    int la = (int)strnlen(a, NAME_CAP), lb = (int)strnlen(b, NAME_CAP);
    int row[3][NAME_CAP + 1]; /* rows i-2, i-1, i, used cyclically */
    for (int j = 0; j <= lb; j++)
        row[0][j] = j;
    for (int i = 1; i <= la; i++) {
        int *cur = row[i % 3], *prev = row[(i - 1) % 3], *prev2 = row[(i + 1) % 3];
        cur[0] = i;
        for (int j = 1; j <= lb; j++) {
            int cost = a[i - 1] != b[j - 1];
            int d = prev[j - 1] + cost;
            if (prev[j] + 1 < d)
                d = prev[j] + 1;
            if (cur[j - 1] + 1 < d)
                d = cur[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && prev2[j - 2] + 1 < d)
                d = prev2[j - 2] + 1;
            cur[j] = d;
        }
    }
    return row[la % 3][lb];
}

static int common_prefix(const char *a, const char *b)
{
    int n = 0;
    while (a[n] && a[n] == b[n])
        n++;
    return n;
}

int cli_nearest(const char *s, const char *const *names, int n, const char **out, int cap)
{
    const char *u = undash(s);
    const int len = (int)strnlen(u, NAME_CAP);
    int best = 1 << 30, nout = 0;
    for (int i = 0; i < n; i++) {
        const char *v = undash(names[i]);
        const int d = osa_distance(u, v), dl = abs(len - (int)strnlen(v, NAME_CAP));
        /* Plausible: a few edits for the length (a third of it, at least two), or the same first
         * three characters (--gpu-count for --gpus: the rest was made up, not mistyped). */
        const int near = d <= (len / 3 > 2 ? len / 3 : 2) || common_prefix(u, v) >= 3;
        /* Closest first; at equal distance the name nearer in length (gpu-count: gpus, not gpu,
         * both 6 edits away). */
        const int score = d * (NAME_CAP + 1) + dl;
        if (!near || score > best)
            continue;
        if (score < best) {
            best = score;
            nout = 0;
        }
        if (nout < cap)
            out[nout++] = names[i];
    }
    return nout;
}

/* "; did you mean --a, --b or --c?" for the nearest of the table's names, or "". */
static void suggestion(const char *s, const char *const *names, int n, char *buf, size_t cap)
{
    const char *near[3];
    int k = cli_nearest(s, names, n, near, 3);
    buf[0] = '\0';
    if (!k)
        return;
    size_t used = (size_t)snprintf(buf, cap, "; did you mean ");
    for (int i = 0; i < k && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", near[i],
                                 i + 2 < k ? ", " : i + 1 < k ? " or " : "?");
}

/* ---- the parser -------------------------------------------------------------------------------- */

static const cli_option *find_option(const cli_option *opts, const char *name, size_t len)
{
    for (const cli_option *o = opts; o && o->name; o++)
        if (strlen(o->name) == len && !strncmp(o->name, name, len))
            return o;
    return NULL;
}

static int unknown_option(const char *cmd, const cli_option *opts, const char *k, size_t len)
{
    const char *names[128];
    int n = 0;
    for (const cli_option *o = opts; o && o->name && n < 128; o++)
        names[n++] = o->name;
    char name[NAME_CAP + 1], near[256];
    snprintf(name, sizeof name, "%.*s", (int)(len < NAME_CAP ? len : NAME_CAP), k);
    suggestion(name, names, n, near, sizeof near);
    if (cmd)
        fprintf(stderr, "meshplan: unknown option \"%s\" for %s%s (meshplan %s --help lists its "
                        "options)\n", name, cmd, near, cmd);
    else
        fprintf(stderr, "meshplan: unknown option \"%s\"%s (see meshplan help)\n", name, near);
    return EXIT_INPUT;
}

/* One "--name", "--name=VALUE" or "--name VALUE" at argv[*i] into a. */
static int parse_option(const char *cmd, const cli_option *opts, int argc, char **argv, int *i,
                        cli_args *a)
{
    const char *k = argv[*i];
    const char *eq = k[1] == '-' ? strchr(k, '=') : NULL;
    const size_t len = eq ? (size_t)(eq - k) : strlen(k);
    const cli_option *o = find_option(opts, k, len);
    if (!o)
        return unknown_option(cmd, opts, k, len);
    if (a->nopts >= CLI_MAX_OPTS)
        return cli_fail("too many options at \"%s\"", k);
    const char *value = NULL;
    if (!o->takes_value && eq) {
        fprintf(stderr, "meshplan: option %s is a flag and takes no value (got \"%s\")\n", o->name, k);
        return EXIT_INPUT;
    }
    if (o->takes_value) {
        if (eq)
            value = eq + 1;
        else if (*i + 1 < argc)
            value = argv[++*i];
        else
            return cli_fail("option %s needs a value", o->name);
    }
    /* the same option twice: which one counts would be a guess (--gpus 8 --gpus 16 ran 16),
     * like a plan key given twice; a repeated flag or the same value again is harmless */
    for (int j = 0; j < a->nopts && !o->repeatable; j++)
        if (a->name[j] == o->name && value && strcmp(a->value[j], value)) {
            fprintf(stderr, "meshplan: option %s given twice (\"%s\", then \"%s\"): expected it "
                            "once\n", o->name, a->value[j], value);
            return EXIT_INPUT;
        }
    a->name[a->nopts] = o->name;
    a->value[a->nopts++] = value;
    return 0;
}

/* The parser both entry points share; cmd NULL: no command name to report (cli_parse). */
static int parse_core(const char *cmd, const cli_option *opts, int max_args, int argc, char **argv,
                      cli_args *a)
{
    memset(a, 0, sizeof *a);
    if (max_args > CLI_MAX_POSITIONAL)
        max_args = CLI_MAX_POSITIONAL;
    for (int i = 0; i < argc; i++) {
        const char *k = argv[i];
        if (k[0] == '-' && k[1]) {
            int rc = parse_option(cmd, opts, argc, argv, &i, a);
            if (rc)
                return rc;
        } else if (a->npositional < max_args) {
            a->positional[a->npositional++] = k;
        } else if (cmd) {
            fprintf(stderr, "meshplan: %s: unexpected argument \"%s\"\n", cmd, k);
            return EXIT_INPUT;
        } else {
            return cli_fail("too many arguments at \"%s\"", k);
        }
    }
    return 0;
}

int cli_parse_cmd(const cli_command *c, int argc, char **argv, cli_args *a)
{
    int rc = parse_core(c->name, c->options, c->max_args, argc, argv, a);
    if (rc)
        return rc;
    for (const cli_option *o = c->options; o && o->name; o++)
        if (o->required && !cli_flag(a, o->name)) {
            fprintf(stderr, "meshplan: %s: %s%s%s is required: %s (meshplan %s --help)\n", c->name,
                    o->name, o->value ? " " : "", o->value ? o->value : "", o->help, c->name);
            return EXIT_INPUT;
        }
    return 0;
}

int cli_parse(int argc, char **argv, const char *const *options, const char *const *flags,
              cli_args *a)
{
    cli_option opts[128];
    int n = 0;
    for (; options && *options && n < 127; options++)
        opts[n++] = (cli_option)CLI_OPT(*options, "VALUE", "");
    for (; flags && *flags && n < 127; flags++)
        opts[n++] = (cli_option)CLI_FLAG(*flags, "");
    opts[n] = (cli_option)CLI_END;
    return parse_core(NULL, opts, CLI_MAX_POSITIONAL, argc, argv, a);
}

/* ---- help -------------------------------------------------------------------------------------- */

/* text from column `col` (the cursor is there), wrapped at HELP_WIDTH with `indent` spaces. */
static void print_wrapped(FILE *f, const char *text, int col, int indent)
{
    const char *p = text;
    while (*p) {
        const char *sp = p;
        while (*sp && *sp != ' ')
            sp++;
        int w = (int)(sp - p);
        if (col > indent && col + 1 + w > HELP_WIDTH) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
        } else if (p != text) {
            fputc(' ', f);
            col++;
        }
        fprintf(f, "%.*s", w, p);
        col += w;
        p = *sp ? sp + 1 : sp;
    }
    fputc('\n', f);
}

/* Commands whose --plan takes another key table than the training plan's: their help prints it
 * instead (one row per such command). */
static const struct {
    const char *command;
    void (*print)(FILE *f);
} own_plan_keys[] = {
    {"infer", cli_print_infer_keys},
    {"lora", cli_print_infer_keys},
    {"serve", cli_print_serve_keys},
    {"serve-search", cli_print_serve_keys},
    {"rl", cli_print_rl_keys},
    {"rl-search", cli_print_rl_keys},
};

static void (*plan_keys_of(const cli_command *c))(FILE *)
{
    for (size_t i = 0; i < sizeof own_plan_keys / sizeof own_plan_keys[0]; i++)
        if (!strcmp(c->name, own_plan_keys[i].command))
            return own_plan_keys[i].print;
    return NULL;
}

static int takes_plan(const cli_command *c)
{
    return find_option(c->options, "--plan", 6) || find_option(c->options, "--fix", 5);
}

static void print_plan_keys(FILE *f, const cli_command *c)
{
    if (!c) {
        cli_print_plan_keys(f);
        return;
    }
    int islands = 0;
    for (size_t i = 0; i < sizeof islands_commands / sizeof islands_commands[0]; i++)
        islands |= !strcmp(c->name, islands_commands[i]);
    cli_print_plan_keys_for(f, find_option(c->options, "--plan", 6) ? "--plan" : "--fix", islands);
}

void cli_print_command_help(FILE *f, const cli_command *c)
{
    int col = fprintf(f, "usage: meshplan %s", c->name), optional = 0;
    char word[160];
    for (const cli_option *o = c->options; o && o->name; o++) {
        if (!o->required) {
            optional = 1;
            continue;
        }
        snprintf(word, sizeof word, "%s %s", o->name, o->value ? o->value : "");
        if (col + 1 + (int)strlen(word) > HELP_WIDTH)
            col = fprintf(f, "\n%*s", 15 + (int)strlen(c->name), "") - 1;
        col += fprintf(f, " %s", word);
    }
    if (c->args)
        col += fprintf(f, " %s", c->args);
    if (optional)
        fprintf(f, "%s[options]", col + 10 > HELP_WIDTH ? "\n       " : " ");
    fprintf(f, "\n\n");
    print_wrapped(f, c->summary, 0, 0);
    int width = 0;
    for (const cli_option *o = c->options; o && o->name; o++) {
        int w = (int)strlen(o->name) + (o->value ? 1 + (int)strlen(o->value) : 0);
        width = w > width && w <= 28 ? w : width;
    }
    fprintf(f, "\noptions:\n");
    for (const cli_option *o = c->options; o && o->name; o++) {
        snprintf(word, sizeof word, "%s%s%s", o->name, o->value ? " " : "", o->value ? o->value : "");
        int w = fprintf(f, "  %-*s  ", width, word);
        char help[512];
        snprintf(help, sizeof help, "%s%s", o->required ? "(required) " : "", o->help);
        print_wrapped(f, help, w, width + 4);
    }
    if (c->notes)
        fprintf(f, "\n%s", c->notes);
    void (*own_keys)(FILE *) = plan_keys_of(c);
    if (own_keys) {
        fputc('\n', f);
        own_keys(f);
    } else if (takes_plan(c)) {
        fputc('\n', f);
        print_plan_keys(f, c);
    }
    fprintf(f, "\n%s", exit_codes_help);
}

void cli_print_usage(FILE *f, const cli_command *const *cmds, int n)
{
    fprintf(f, "usage: meshplan <command> [options]\n"
               "       meshplan <command> --help    that command's usage and options\n\n"
               "commands:\n");
    for (int i = 0; i < n; i++) {
        int w = fprintf(f, "  %-14s ", cmds[i]->name);
        print_wrapped(f, cmds[i]->summary, w, 17);
    }
    fprintf(f, "  %-14s this text; `meshplan help COMMAND` is `meshplan COMMAND --help`\n", "help");
    fprintf(f, "  %-14s the version\n\n", "--version");
    print_plan_keys(f, NULL);
    fprintf(f, "%s%s", clusters_help, exit_codes_help);
}
