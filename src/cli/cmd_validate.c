/* src/cli/cmd_validate.c — `meshplan validate FILE.csv`: predicted vs published runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const cli_option validate_opts[] = {
    CLI_OPT_CATALOG,
    CLI_OPT_JSON,
    CLI_FLAG("--csv", "print the rows (id, source_group, metric, measured, predicted, error_pct, "
             "assumed) as CSV"),
    CLI_END,
};

const cli_command cli_cmd_validate = {
    "validate", "predict published runs from a CSV and report the error of each",
    "FILE.csv", 1, validate_opts,
    "FILE.csv: rows in the schema of ../shared/validation/runs.csv (the header says which).\n",
    cmd_validate,
};

int cmd_validate(int argc, char **argv)
{
    cli_args a;
    int rc = cli_parse_cmd(&cli_cmd_validate, argc, argv, &a);
    if (rc)
        return rc;
    if (cli_flag(&a, "--json") && cli_flag(&a, "--csv"))
        return cli_fail("validate: --json and --csv exclude each other%s", "");
    if (a.npositional != 1)
        return cli_fail("validate: expected one CSV file, got %s", a.npositional ? "more" : "none");
    mp_catalog *cat = NULL;
    if ((rc = cli_load_catalog(&a, &cat)))
        return rc;
    mp_diag d = {0};
    char *buf = NULL;
    size_t len = 0;
    mp_validation v;
    memset(&v, 0, sizeof v);
    mp_status st = cli_read_file(a.positional[0], &buf, &len, &d);
    if (st == MP_OK)
        st = mp_validate_csv(cat, buf, len, a.positional[0], NULL, &v, &d);
    free(buf);
    if (st != MP_OK) {
        fprintf(stderr, "meshplan: validate \"%s\": not a valid runs CSV file:\n", a.positional[0]);
        cli_print_diag(&d);
        mp_catalog_destroy(cat);
        return cli_exit_for(st);
    }
    if (cli_flag(&a, "--json")) {
        char *s = mp_report_validation_json(&v);
        if (s)
            printf("%s\n", s);
        else
            rc = EXIT_INTERNAL;
        free(s);
    } else if (cli_flag(&a, "--csv")) {
        /* the rows of --json's "rows" (skipped rows are left out: they have no prediction) */
        printf("id,source_group,metric,measured,predicted,error_pct,assumed\n");
        for (size_t i = 0; i < v.nrows; i++) {
            const mp_val_row *r = &v.rows[i];
            cli_csv_field(r->id);
            putchar(',');
            cli_csv_field(r->source_group);
            putchar(',');
            cli_csv_field(r->metric);
            printf(",%.10g,%.10g,%.10g,", r->measured, r->predicted, r->error_pct);
            cli_csv_field(r->assumed);
            putchar('\n');
        }
    } else {
        mp_report_validation_text(stdout, &v);
    }
    mp_validation_free(&v);
    mp_catalog_destroy(cat);
    return rc;
}

