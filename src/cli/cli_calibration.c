/* src/cli/cli_calibration.c — --calibration FILE, one loader and one applier for every command
 * that takes it (cli.h), and a training log's plan from --plan, its Megatron arguments block and
 * --config (shared by calibrate and doctor). The fitting itself is the library's
 * (include/meshplan/calibrate.h); the calibrate command is cmd_calibrate.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* snprintf that truncates quietly (plan texts are cut at their buffer, never overflowed). */
static void fmt(char *buf, size_t cap, const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, cap, f, ap);
    va_end(ap);
}

static mp_calibration g_cal;
static int g_cal_on;
static int g_cal_said_cluster, g_cal_said_opts; /* each "nothing applies" note once per command */

int cli_cal_load(const cli_args *a)
{
    g_cal_on = 0;
    g_cal_said_cluster = g_cal_said_opts = 0;
    const char *file = cli_opt(a, "--calibration");
    if (!file)
        return 0;
    mp_diag d = {0};
    char *buf;
    size_t len;
    mp_status st = cli_read_file(file, &buf, &len, &d);
    if (st == MP_OK) {
        st = mp_cal_read_json(buf, len, file, &g_cal, &d);
        free(buf);
    }
    if (st != MP_OK) {
        fprintf(stderr, "meshplan: calibration = \"%s\": not a calibration file:\n", file);
        cli_print_diag(&d);
        return cli_exit_for(st);
    }
    g_cal_on = 1;
    return 0;
}

void cli_cal_cluster(mp_cluster *c)
{
    if (!g_cal_on)
        return;
    int n = mp_cal_apply_cluster(&g_cal, c);
    if (n && !g_cal_said_cluster++)
        fprintf(stderr, "meshplan: --calibration: %d constant%s applied to this %s cluster\n",
                n, n > 1 ? "s" : "", c->gpu.key);
    else if (!n && !g_cal_said_cluster++)
        fprintf(stderr, "meshplan: --calibration: no constant for GPU %s or the links of this "
                        "cluster (%s%s%s); its figures are unchanged\n", c->gpu.key,
                c->tier[0].link, c->ntiers > 1 ? ", " : "", c->ntiers > 1 ? c->tier[1].link : "");
}

const mp_estimate_opts *cli_cal_opts(const char *gpu_key, mp_estimate_opts *o)
{
    mp_estimate_opts_init(o);
    if (!g_cal_on)
        return o;
    int n = mp_cal_apply_opts(&g_cal, gpu_key, o);
    if (!n && !g_cal_said_opts++)
        fprintf(stderr, "meshplan: --calibration: no estimator constant for GPU %s; the estimator's "
                        "defaults stand\n", gpu_key);
    return o;
}

/* Append to out the keys of a's plan text that out does not give yet. */
static void merge_keys(const mp_megatron_args *ma, char *out, size_t cap)
{
    char args[512];
    mp_megatron_args_plan(ma, args, sizeof args);
    for (char *k = strtok(args, ","); k; k = strtok(NULL, ",")) {
        char key[32];
        fmt(key, sizeof key, "%.*s=", (int)strcspn(k, "="), k);
        size_t kl = strlen(key);
        int given = 0;
        for (const char *p = out; (p = strstr(p, key)); p += kl)
            given |= p == out || p[-1] == ',';
        if (!given) {
            size_t u = strlen(out);
            fmt(out + u, cap - u, "%s%s", u ? "," : "", k);
        }
    }
}

int cli_cal_training_plan(const cli_args *a, const mp_log *l, char *out, size_t cap)
{
    const char *user = cli_opt(a, "--plan");
    fmt(out, cap, "%s", user ? user : "");
    if (l->kind == MP_LOG_MEGATRON && l->args.found)
        merge_keys(&l->args, out, cap);
    const char *cfg = cli_opt(a, "--config");
    if (!cfg)
        return 0;
    mp_diag d = {0};
    char *buf = NULL;
    size_t len = 0;
    mp_megatron_args ma;
    mp_status st = cli_read_file(cfg, &buf, &len, &d);
    if (st == MP_OK)
        st = mp_cal_parse_megatron_args(buf, len, cfg, &ma, &d);
    free(buf);
    if (st != MP_OK) {
        cli_print_diag(&d);
        return cli_exit_for(st);
    }
    merge_keys(&ma, out, cap);
    return 0;
}
