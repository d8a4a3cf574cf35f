/* src/cli/main.c — the meshplan command. Uses only the public headers in include/.
 *
 * The commands are the list below; each is a cli_command defined in its own cmd_*.c with the
 * table of its options (cli.h "commands as tables"). `meshplan help` lists them with their
 * summaries; `meshplan COMMAND --help` prints that command's usage and options.
 *
 * Exit codes: 0 success, 2 bad usage or bad input (the message names the field, the value and
 * what was expected), 1 internal error.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* Every command, in the order `meshplan help` lists them. Adding one: its cmd_NAME.c defines
 * `const cli_command cli_cmd_NAME` and one X(NAME) line goes here (docs/cli.md). */
#define CLI_COMMAND_LIST(X) \
    X(predict)              \
    X(collective)           \
    X(compare)              \
    X(validate)             \
    X(catalog)              \
    X(search)               \
    X(scale)                \
    X(run)                  \
    X(trace)                \
    X(islands_scale)        \
    X(plot)                 \
    X(web)                  \
    X(calibrate)            \
    X(doctor)               \
    X(import)               \
    X(infer)                \
    X(infer_search)         \
    X(serve)                \
    X(serve_search)         \
    X(rl)                   \
    X(rl_search)            \
    X(sweep)                \
    X(probe)                \
    X(lora)                 \
    X(workflow)

#define CLI_X(id) extern const cli_command cli_cmd_##id;
CLI_COMMAND_LIST(CLI_X)
#undef CLI_X

static const cli_command *const commands[] = {
#define CLI_X(id) &cli_cmd_##id,
    CLI_COMMAND_LIST(CLI_X)
#undef CLI_X
};
#define NCOMMANDS ((int)(sizeof commands / sizeof commands[0]))

const cli_command *const *cli_commands(int *n)
{
    *n = NCOMMANDS;
    return commands;
}

static const cli_command *find_command(const char *name)
{
    for (int i = 0; i < NCOMMANDS; i++)
        if (!strcmp(name, commands[i]->name))
            return commands[i];
    return NULL;
}

static int is_help(const char *s)
{
    return !strcmp(s, "--help") || !strcmp(s, "-h");
}

/* An unknown command: its nearest names, then the list of commands. */
static int unknown_command(const char *cmd)
{
    const char *names[NCOMMANDS + 1], *near[3];
    for (int i = 0; i < NCOMMANDS; i++)
        names[i] = commands[i]->name;
    names[NCOMMANDS] = "help";
    int k = cli_nearest(cmd, names, NCOMMANDS + 1, near, 3);
    fprintf(stderr, "meshplan: unknown command \"%s\"", cmd);
    for (int i = 0; i < k; i++)
        fprintf(stderr, "%s%s", i ? " or " : "; did you mean ", near[i]);
    fprintf(stderr, "%s (meshplan help lists the commands)\n", k ? "?" : "");
    return EXIT_INPUT;
}

/* Every argument must be UTF-8 text: the names and plans a command is given are echoed into its
 * JSON, CSV and text output, and JSON strings must be UTF-8 (RFC 8259 section 8.1; jansson
 * refuses others). 0, or EXIT_INPUT naming the first argument that is not. */
static int check_args_utf8(int argc, char **argv)
{
    for (int a = 1; a < argc; a++) {
        size_t n = strlen(argv[a]), at = mp_utf8_invalid_at(argv[a], n);
        if (at == n)
            continue;
        char shown[64];
        snprintf(shown, sizeof shown, "%.60s", argv[a]);
        mp_utf8_scrub(shown);
        if (a > 2 && !strncmp(argv[a - 1], "--", 2))
            fprintf(stderr, "meshplan: %.40s = \"%s\"", argv[a - 1], shown);
        else
            fprintf(stderr, "meshplan: argument %d = \"%s\"", a, shown);
        fprintf(stderr, ": byte %zu is not UTF-8: expected UTF-8 text (meshplan writes the names "
                "it is given into UTF-8 JSON, CSV and text)\n", at + 1);
        return EXIT_INPUT;
    }
    return 0;
}

int cli_main(int argc, char **argv)
{
    if (argc < 2) {
        cli_print_usage(stderr, commands, NCOMMANDS);
        return EXIT_INPUT;
    }
    int rc = check_args_utf8(argc, argv);
    if (rc)
        return rc;
    const char *cmd = argv[1];
    const cli_command *c = find_command(cmd);
    if (c) {
        /* `meshplan COMMAND --help`: that command's usage and options only. */
        for (int a = 2; a < argc; a++)
            if (is_help(argv[a])) {
                cli_print_command_help(stdout, c);
                return 0;
            }
        return c->run(argc - 2, argv + 2);
    }
    if (!strcmp(cmd, "help") || is_help(cmd)) {
        if (argc > 2 && !strcmp(cmd, "help")) {
            if (!(c = find_command(argv[2])))
                return unknown_command(argv[2]);
            cli_print_command_help(stdout, c);
            return 0;
        }
        cli_print_usage(stdout, commands, NCOMMANDS);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("meshplan %s\n", MESHPLAN_VERSION);
        return 0;
    }
    return unknown_command(cmd);
}

/* The fuzz harness (fuzz/fuzz_cli.c) builds these files with MESHPLAN_CLI_NO_MAIN and calls
 * cli_main itself. */
#ifndef MESHPLAN_CLI_NO_MAIN
int main(int argc, char **argv) { return cli_main(argc, argv); }
#endif
