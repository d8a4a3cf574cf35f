/* src/cli/cli_csv.c — --csv for a list (catalog: one row per entry) and for the commands whose
 * answer is one record rather than a table (run, trace): the --json object flattened into "key,value" rows, keys as dotted paths
 * ("time_s.compute", "top.0.plan"), values exact (numbers as %.10g, whole ones in full, booleans
 * 1/0, null empty),
 * fields quoted per RFC 4180 Sec. 2. The keys are the JSON's, so both stay one interface. */
#include <jansson.h>
#include <math.h>
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

static void scalar(json_t *v)
{
    if (json_is_string(v))
        cli_csv_field(json_string_value(v));
    else if (json_is_integer(v))
        printf("%lld", (long long)json_integer_value(v));
    else if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) && fabs(json_real_value(v)) < 1e15)
        printf("%.0f", json_real_value(v)); /* whole numbers (bytes, counts) in full */
    else if (json_is_real(v))
        printf("%.10g", json_real_value(v));
    else if (json_is_boolean(v))
        putchar(json_is_true(v) ? '1' : '0');
}

int cli_print_csv_table(json_t *arr)
{
    json_t *first = json_array_get(arr, 0);
    if (!json_is_object(first)) {
        fprintf(stderr, "meshplan: internal error: no table to write as CSV\n");
        return EXIT_INTERNAL;
    }
    const char *k;
    json_t *x;
    int col = 0;
    json_object_foreach(first, k, x) {
        if (col++)
            putchar(',');
        cli_csv_field(k);
    }
    putchar('\n');
    size_t i;
    json_t *row;
    json_array_foreach(arr, i, row) {
        col = 0;
        json_object_foreach(first, k, x) {
            if (col++)
                putchar(',');
            scalar(json_object_get(row, k));
        }
        putchar('\n');
    }
    return 0;
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
