/* src/cli/cli_util.c — option access (the parser is cli_table.c), file reading, catalog and
 * model loading for the commands. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <jansson.h>

#include "cli.h"

int cli_fail(const char *fmt, const char *a)
{
    fprintf(stderr, "meshplan: ");
    fprintf(stderr, fmt, a);
    fprintf(stderr, "\n");
    return EXIT_INPUT;
}

int cli_output_path(const cli_args *a, const char *cmd, const char **path)
{
    const char *o = cli_opt(a, "-o"), *out = cli_opt(a, "--output");
    *path = o ? o : out;
    if (o && out) {
        fprintf(stderr, "meshplan: %s: -o \"%s\" and --output \"%s\" are the same option: "
                        "expected one output file\n", cmd, o, out);
        return EXIT_INPUT;
    }
    return 0;
}

int cli_check_output(const char *cmd, const char *opt, const char *path)
{
    struct stat sb;
    int existed = stat(path, &sb) == 0;
    if (existed && S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "meshplan: %s: %s \"%s\": a directory: expected a file name\n", cmd, opt, path);
        return EXIT_INPUT;
    }
    FILE *f = fopen(path, "a");
    if (!f) {
        fprintf(stderr, "meshplan: %s: %s \"%s\": cannot be written (%s): expected a file in a "
                        "directory this user can write\n", cmd, opt, path, strerror(errno));
        return EXIT_INPUT;
    }
    fclose(f);
    if (!existed)
        remove(path);
    return 0;
}

int cli_exit_for(mp_status st)
{
    switch (st) {
    case MP_OK: return 0;
    case MP_ERR_NOMEM:
    case MP_ERR_INTERNAL: return EXIT_INTERNAL;
    default: return EXIT_INPUT;
    }
}

void cli_print_diag(const mp_diag *d)
{
    if (d->len) {
        /* Every line gets the prefix, so each reason reads on its own. */
        const char *line = d->text;
        while (*line) {
            const char *nl = strchr(line, '\n');
            int n = nl ? (int)(nl - line) : (int)strlen(line);
            fprintf(stderr, "meshplan: %.*s\n", n, line);
            line += n + (nl ? 1 : 0);
        }
        if (d->count > 1)
            fprintf(stderr, "meshplan: %d problems\n", d->count);
    }
}

const char *cli_opt(const cli_args *a, const char *name)
{
    const char *v = NULL;
    for (int i = 0; i < a->nopts; i++)
        if (!strcmp(a->name[i], name) && a->value[i])
            v = a->value[i];
    return v;
}

int cli_flag(const cli_args *a, const char *name)
{
    for (int i = 0; i < a->nopts; i++)
        if (!strcmp(a->name[i], name))
            return 1;
    return 0;
}

int cli_opt_all(const cli_args *a, const char *name, const char **out, int cap)
{
    int n = 0;
    for (int i = 0; i < a->nopts && n < cap; i++)
        if (!strcmp(a->name[i], name) && a->value[i])
            out[n++] = a->value[i];
    return n;
}

int cli_parse_count(const char *name, const char *s, long long min, long long max, long long *out)
{
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (!s[0] || *end || errno) {
        fprintf(stderr, "meshplan: %s = \"%s\": expected an integer in [%lld, %lld], in digits\n", name, s,
                min, max);
        return EXIT_INPUT;
    }
    if (x < min || x > max) {
        fprintf(stderr, "meshplan: %s = %lld: expected an integer in [%lld, %lld]\n", name, x, min, max);
        return EXIT_INPUT;
    }
    *out = x;
    return 0;
}

int cli_plan_estimate(const mp_model *m, const mp_cluster *cl, const char *plan_text,
                      int64_t ngpus, mp_plan *p, mp_estimate **e, mp_diag *d)
{
    mp_plan_init_default(p);
    mp_status st = mp_islands_plan_parse_single(plan_text, p, d); /* island keys: bad input */
    if (st == MP_OK)
        st = mp_plan_resolve(p, m, ngpus, d);
    if (st != MP_OK) {
        fprintf(stderr, "meshplan: the plan cannot be formed:\n");
        return cli_exit_for(st);
    }
    if (!(*e = malloc(sizeof **e)))
        return EXIT_INTERNAL;
    mp_estimate_opts o;
    st = mp_estimate_plan(m, cl, p, cli_cal_opts(cl->gpu.key, &o), *e, d);
    return st == MP_OK ? 0 : cli_exit_for(st);
}

int cli_job_estimate(const mp_catalog *cat, const char *model, const char *gpu, long long ngpus,
                     long long gpus_per_node, const char *scale_out, const char *plan_text,
                     mp_model *m, mp_cluster *cl, mp_plan *p, mp_estimate **e, mp_diag *d)
{
    int rc = cli_load_model(cat, model, m);
    if (rc)
        return rc;
    mp_status st = mp_cluster_from_catalog(cat, gpu, ngpus, (int)gpus_per_node, scale_out, cl, d);
    if (st != MP_OK)
        return cli_exit_for(st);
    cli_cal_cluster(cl);
    return cli_plan_estimate(m, cl, plan_text, ngpus, p, e, d);
}

int cli_print_json(json_t *o, size_t flags)
{
    char *s = o ? json_dumps(o, flags) : NULL;
    json_decref(o);
    if (!s) {
        fprintf(stderr, "meshplan: the JSON output could not be formed (out of memory, or a "
                "string that is not UTF-8)\n");
        return EXIT_INTERNAL;
    }
    printf("%s\n", s);
    free(s);
    return 0;
}

int cli_parse_real(const char *name, const char *s, double min, double max, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (!s[0] || *end || errno || !isfinite(x)) {
        fprintf(stderr, "meshplan: %s = \"%s\": expected a number\n", name, s);
        return EXIT_INPUT;
    }
    if (x < min || x > max) {
        fprintf(stderr, "meshplan: %s = %g: expected a number in [%g, %g]\n", name, x, min, max);
        return EXIT_INPUT;
    }
    *out = x;
    return 0;
}

int cli_opt_real(const cli_args *a, const char *opt, double min, double max, double *out)
{
    const char *v = cli_opt(a, opt);
    return v ? cli_parse_real(opt + 2, v, min, max, out) : 0;
}

mp_status cli_read_file(const char *path, char **buf, size_t *len, mp_diag *d)
{
    *buf = NULL;
    *len = 0;
    struct stat sb;
    if (stat(path, &sb) != 0) {
        mp_diag_add(d, "%s: %s", path, strerror(errno));
        return MP_ERR_NOT_FOUND;
    }
    if (!S_ISREG(sb.st_mode)) {
        mp_diag_add(d, "%s: not a regular file", path);
        return MP_ERR_INPUT;
    }
    if (sb.st_size > MAX_FILE_BYTES) {
        mp_diag_add(d, "%s: %lld bytes: expected at most %ld", path, (long long)sb.st_size,
                    MAX_FILE_BYTES);
        return MP_ERR_INPUT;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        mp_diag_add(d, "%s: %s", path, strerror(errno));
        return MP_ERR_IO;
    }
    char *b = malloc((size_t)sb.st_size + 1);
    if (!b) {
        fclose(f);
        return MP_ERR_NOMEM;
    }
    size_t n = fread(b, 1, (size_t)sb.st_size, f);
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(b);
        mp_diag_add(d, "%s: read error", path);
        return MP_ERR_IO;
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return MP_OK;
}

int cli_load_catalog(const cli_args *a, mp_catalog **cat)
{
    mp_diag d = {0};
    mp_status st = mp_catalog_create(cat, &d);
    if (st != MP_OK) {
        cli_print_diag(&d);
        fprintf(stderr, "meshplan: built-in catalog failed to load (%s)\n", mp_status_str(st));
        return EXIT_INTERNAL;
    }
    const char *file = cli_opt(a, "--catalog");
    if (file) {
        char *buf;
        size_t len;
        st = cli_read_file(file, &buf, &len, &d);
        if (st == MP_OK) {
            st = mp_catalog_merge_json(*cat, buf, len, file, &d);
            free(buf);
        }
        if (st != MP_OK) {
            fprintf(stderr, "meshplan: catalog = \"%s\": not a valid catalog file:\n", file);
            cli_print_diag(&d);
            mp_catalog_destroy(*cat);
            *cat = NULL;
            return cli_exit_for(st);
        }
    }
    int rc = cli_cal_load(a);
    if (rc) {
        mp_catalog_destroy(*cat);
        *cat = NULL;
    }
    return rc;
}

/* --model: a catalog key, else a file (HF config.json or a models.json-style entry). */
int cli_load_model(const mp_catalog *cat, const char *spec, mp_model *m)
{
    const mp_model *cm = mp_catalog_model(cat, spec);
    if (!cm)
        cm = cli_config_model(spec); /* --config FILE: the model that file describes */
    if (cm) {
        *m = *cm;
        return 0;
    }
    struct stat sb;
    if (stat(spec, &sb) != 0) {
        const char *names[512], *near[3];
        int n = 0;
        for (size_t i = 0; i < mp_catalog_model_count(cat) && n < 512; i++)
            names[n++] = mp_catalog_model_at(cat, i)->key;
        int k = cli_nearest(spec, names, n, near, 3);
        fprintf(stderr, "meshplan: model = \"%s\": not a catalog key (see `meshplan catalog "
                        "models`) and not a readable file", spec);
        for (int i = 0; i < k; i++)
            fprintf(stderr, "%s%s", i ? (i + 1 < k ? ", " : " or ") : "; did you mean ", near[i]);
        fprintf(stderr, "%s\n", k ? "?" : "");
        return EXIT_INPUT;
    }
    mp_diag d = {0};
    char *buf;
    size_t len;
    mp_status st = cli_read_file(spec, &buf, &len, &d);
    if (st == MP_OK) {
        memset(m, 0, sizeof *m);
        /* Our own schema says "layers_count"; everything else is read as a Hugging Face config. */
        if (strstr(buf, "\"layers_count\""))
            st = mp_model_from_catalog_json(buf, len, m, &d);
        else
            st = mp_model_from_hf_json(buf, len, m, &d);
        free(buf);
    }
    if (st != MP_OK) {
        fprintf(stderr, "meshplan: model = \"%s\": not a valid model file:\n", spec);
        cli_print_diag(&d);
        return cli_exit_for(st);
    }
    return 0;
}

