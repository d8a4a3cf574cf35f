/* src/cli/cli_plan_keys.c — the plan keys' part of `meshplan help`, from the library's tables
 * (mp_plan_keys_help, mp_islands_plan_keys_help): the CLI never lists the keys by hand. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

/* One table's help lines, sized first. */
static void print_help(FILE *f, int (*help)(char *, size_t))
{
    int n = help(NULL, 0);
    char *buf = n > 0 ? malloc((size_t)n + 1) : NULL;
    if (!buf)
        return;
    help(buf, (size_t)n + 1);
    fputs(buf, f);
    free(buf);
}

void cli_print_plan_keys(FILE *f)
{
    cli_print_plan_keys_for(f, "--plan", 1);
}

void cli_print_plan_keys_for(FILE *f, const char *option, int islands)
{
    fprintf(f, "plan keys: %s \"key=value,...\" (docs/plan.md)\n", option);
    print_help(f, mp_plan_keys_help);
    if (!islands)
        return;
    fputs("plan keys across islands: with --cluster ISLANDS, and predict --quality-factor F\n"
          "(docs/islands.md)\n", f);
    print_help(f, mp_islands_plan_keys_help);
}
