/* src/cli/cli_csv.c — --csv for the commands whose answer is one record rather than a table
 * (run, trace): the --json object flattened into "key,value" rows, keys as dotted paths
 * ("time_s.compute", "top.0.plan"), values exact (numbers as %.10g, booleans 1/0, null empty),
 * fields quoted per RFC 4180 Sec. 2. The keys are the JSON's, so both stay one interface. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void cli_csv_field(const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, stdout);
        return;
    }
    putchar('"');
    for (; *s; s++) {
        if (*s == '"')
            putchar('"');
        putchar(*s);
    }
    putchar('"');
}

static void flatten(const char *path, json_t *v)
{
    char key[512];
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) {
            snprintf(key, sizeof key, "%s%s%s", path, *path ? "." : "", k);
            flatten(key, x);
        }
        return;
    }
    if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) {
            snprintf(key, sizeof key, "%s%s%zu", path, *path ? "." : "", i);
            flatten(key, x);
        }
        return;
    }
    cli_csv_field(path);
    putchar(',');
    if (json_is_string(v))
        cli_csv_field(json_string_value(v));
    else if (json_is_integer(v))
        printf("%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        printf("%.10g", json_real_value(v));
    else if (json_is_boolean(v))
        putchar(json_is_true(v) ? '1' : '0');
    putchar('\n');
}

int cli_print_csv_flat(json_t *o)
{
    if (!o) {
        fprintf(stderr, "meshplan: out of memory writing CSV\n");
        return EXIT_INTERNAL;
    }
    printf("key,value\n");
    flatten("", o);
    json_decref(o);
    return 0;
}
