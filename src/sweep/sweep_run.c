/* src/sweep/sweep_run.c — one task of a sweep (build its system, search it, price the best plan),
 * the Pareto set, the CSV and the checkpoint. Rows are formatted text from the start and every
 * figure the Pareto set compares is read back from that text (%.9g), so a row computed now, one
 * computed on another rank and one loaded from a checkpoint are the same bytes. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, CLOCK_MONOTONIC (clang hides them under C11 otherwise: the fuzz build) */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sweep_internal.h"

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Append one CSV field (RFC 4180 quoting when it holds a comma, quote or newline). */
static void put_field(char *buf, size_t cap, size_t *len, const char *s, int first)
{
    int quote = strpbrk(s, ",\"\n\r") != NULL;
    if (!first && *len + 1 < cap)
        buf[(*len)++] = ',';
    if (quote && *len + 1 < cap)
        buf[(*len)++] = '"';
    for (; *s && *len + 2 < cap; s++) {
        if (*s == '"')
            buf[(*len)++] = '"';
        buf[(*len)++] = (*s == '\n' || *s == '\r') ? ' ' : *s;
    }
    if (quote && *len + 1 < cap)
        buf[(*len)++] = '"';
    buf[*len] = '\0';
}

static void put_num(char *buf, size_t cap, size_t *len, double x)
{
    char t[40];
    snprintf(t, sizeof t, "%.9g", x);
    put_field(buf, cap, len, t, 0);
}

/* The system columns of task i (they identify it; a checkpoint line must start with them). */
static void system_prefix(const mp_sweep *s, int64_t task, char *buf, size_t cap)
{
    sweep_point p;
    sweep_decode(s, task, &p);
    size_t len = 0;
    char t[40];
    snprintf(t, sizeof t, "%lld", (long long)p.system);
    buf[0] = '\0';
    put_field(buf, cap, &len, t, 1);
    put_field(buf, cap, &len, s->ax[SW_MODEL].key[p.idx[SW_MODEL]], 0);
    put_field(buf, cap, &len, s->ax[SW_GPU].key[p.idx[SW_GPU]], 0);
    const int numeric[] = {SW_HBM, SW_SCALEUP, SW_NICS};
    for (int k = 0; k < 3; k++) {
        double x = s->ax[numeric[k]].num[p.idx[numeric[k]]];
        if (x > 0)
            put_num(buf, cap, &len, x);
        else
            put_field(buf, cap, &len, "default", 0);
    }
    const char *link = s->ax[SW_LINK].key[p.idx[SW_LINK]];
    put_field(buf, cap, &len, link[0] ? link : "default", 0);
    put_num(buf, cap, &len, s->ax[SW_OVERSUB].num[p.idx[SW_OVERSUB]]);
    put_num(buf, cap, &len, s->ax[SW_GPUS].num[p.idx[SW_GPUS]]);
    put_field(buf, cap, &len, s->workloads[p.workload].name, 0);
    put_field(buf, cap, &len, mp_objective_name(s->workloads[p.workload].objective), 0);
}

const char *mp_sweep_csv_header(void)
{
    return "system,model,gpu,hbm_GiB,scaleup_gpus,nics_per_gpu,fabric,oversubscription,gpus,"
           "workload,objective,status,plan,tokens_per_s,usd_per_Mtoken,J_per_token,mfu,step_s,"
           "memory_GiB,bottleneck,plans_evaluated,pareto,wall_s";
}

/* The system of point p as a cluster: the catalog's GPU and node with the design's changes.
 * Returns MP_OK, or an error with the reason in d (the system is then "invalid_system"). */
static mp_status build_cluster(const mp_sweep *s, const sweep_point *p, mp_cluster *c, mp_diag *d)
{
    const char *link = s->ax[SW_LINK].key[p->idx[SW_LINK]];
    mp_status st = mp_cluster_from_catalog(s->cat, s->ax[SW_GPU].key[p->idx[SW_GPU]],
                                           (int64_t)s->ax[SW_GPUS].num[p->idx[SW_GPUS]],
                                           (int)s->ax[SW_SCALEUP].num[p->idx[SW_SCALEUP]],
                                           link[0] ? link : NULL, c, d);
    if (st != MP_OK)
        return st;
    double hbm_GiB = s->ax[SW_HBM].num[p->idx[SW_HBM]];
    if (hbm_GiB > 0)
        c->gpu.memory_bytes = hbm_GiB * 1073741824.0;
    double nics = s->ax[SW_NICS].num[p->idx[SW_NICS]];
    if (nics > 0 && c->ntiers > 1) {
        /* Per-GPU scale-out bandwidth = NIC ports per GPU x one port's bandwidth (topo.h). */
        mp_tier *t = &c->tier[1];
        double port_Bps = t->port_bw_Bps > 0 ? t->port_bw_Bps
                                             : (t->nics_per_gpu > 0 ? t->bw_Bps / t->nics_per_gpu : 0);
        if (port_Bps > 0) {
            t->bw_Bps = nics * port_Bps;
            t->nics_per_gpu = nics;
        }
    }
    for (int t = 1; t < c->ntiers; t++)
        c->tier[t].oversubscription = s->ax[SW_OVERSUB].num[p->idx[SW_OVERSUB]];
    return mp_cluster_check(c, d);
}

/* The first line of d's text, for the status's reason column. */
static void first_line(const mp_diag *d, char *buf, size_t cap)
{
    size_t k = 0;
    for (; k + 1 < cap && d->text[k] && d->text[k] != '\n'; k++)
        buf[k] = d->text[k];
    buf[k] = '\0';
}

/* Format the outcome columns after the system prefix. */
static void finish_row(mp_sweep_result *out, const char *status, const char *plan,
                       const mp_search_entry *best, double gpus, double price, const char *why)
{
    size_t len = strlen(out->row);
    const size_t cap = sizeof out->row;
    put_field(out->row, cap, &len, status, 0);
    put_field(out->row, cap, &len, plan, 0);
    if (best) {
        char t[40];
        /* $/Mtoken = price per GPU-hour x GPUs / 3600 s / (tokens/s) x 1e6. */
        double usd = price > 0 ? price * gpus / 3600.0 / best->tokens_per_s * 1e6 : 0;
        double v[6] = {best->tokens_per_s, usd, best->energy_J_per_token, best->mfu,
                       best->step_s, best->memory_bytes / 1073741824.0};
        double *dst[3] = {&out->tokens_per_s, &out->usd_per_Mtoken, &out->J_per_token};
        for (int k = 0; k < 6; k++) {
            snprintf(t, sizeof t, "%.9g", v[k]);
            put_field(out->row, cap, &len, t, 0);
            if (k < 3)
                *dst[k] = strtod(t, NULL); /* the figure as the row says it */
        }
        out->ok = 1;
    } else {
        for (int k = 0; k < 6; k++)
            put_field(out->row, cap, &len, "", 0);
    }
    put_field(out->row, cap, &len, why, 0);
    char t[32];
    snprintf(t, sizeof t, "%llu", (unsigned long long)out->evaluated);
    put_field(out->row, cap, &len, t, 0);
}

mp_status mp_sweep_run_task(const mp_sweep *s, int64_t i, int threads, mp_sweep_result *out,
                            mp_diag *diag)
{
    memset(out, 0, sizeof *out);
    if (i < 0 || i >= mp_sweep_tasks(s)) {
        mp_diag_add(diag, "sweep: task %lld out of range [0, %lld)", (long long)i,
                    (long long)mp_sweep_tasks(s));
        return MP_ERR_INPUT;
    }
    double t0 = mono_s();
    sweep_point p;
    sweep_decode(s, i, &p);
    out->task = i;
    out->model = p.idx[SW_MODEL];
    out->workload = p.workload;
    system_prefix(s, i, out->row, sizeof out->row);
    const mp_sweep_workload *w = &s->workloads[p.workload];
    const mp_model *m = mp_catalog_model(s->cat, s->ax[SW_MODEL].key[p.idx[SW_MODEL]]);
    mp_cluster c;
    mp_diag d = {0};
    char why[256];
    if (build_cluster(s, &p, &c, &d) != MP_OK) {
        first_line(&d, why, sizeof why);
        finish_row(out, "invalid_system", "", NULL, 0, 0, why);
        out->wall_s = mono_s() - t0;
        return MP_OK;
    }
    mp_search_opts o;
    mp_search_opts_init(&o);
    o.pin.gb = w->gb;
    o.pin.seq = w->seq ? w->seq : m->seq_len;
    o.objective = w->objective;
    o.tokens = w->tokens;
    o.price_per_gpu_hour = s->price_gpu_hour_usd;
    o.top_n = 1;
    o.threads = threads;
    if (w->objective == MP_OBJ_ENERGY)
        o.energy = mp_energy_step_facility_J;
    mp_search_result r;
    memset(&r, 0, sizeof r);
    mp_status st = mp_search(m, &c, 1, &o, &r, &d);
    out->evaluated = r.counts.evaluated;
    if (st == MP_ERR_NOMEM || st == MP_ERR_INTERNAL) {
        mp_search_result_free(&r);
        mp_diag_add(diag, "%s", d.text);
        return st;
    }
    if (st != MP_OK) {
        first_line(&d, why, sizeof why);
        finish_row(out, "search_error", "", NULL, 0, 0, why);
    } else if (r.counts.plans == 0) {
        finish_row(out, "unformable", "", NULL, 0, 0, r.unformable);
    } else if (r.ntop == 0) {
        finish_row(out, "no_fit", "", NULL, 0, 0, "no plan fits in memory");
    } else {
        mp_search_entry best = r.top[0], priced;
        /* Energy of the winner alone (pricing every plan's energy would slow the search). */
        mp_search_opts eo = o;
        eo.energy = mp_energy_step_facility_J;
        mp_diag de = {0};
        if (mp_search_evaluate(m, &c, 0, &eo, &best.plan, &priced, &de) == MP_OK)
            best.energy_J_per_token = priced.energy_J_per_token;
        char plan[512];
        mp_plan_format(&best.plan, plan, sizeof plan);
        finish_row(out, "ok", plan, &best, (double)c.num_gpus, s->price_gpu_hour_usd,
                   best.bottleneck);
    }
    mp_search_result_free(&r);
    out->wall_s = mono_s() - t0;
    return MP_OK;
}

void mp_sweep_pareto(const mp_sweep_result *res, int64_t n, unsigned char *pareto)
{
    for (int64_t a = 0; a < n; a++) {
        pareto[a] = (unsigned char)res[a].ok;
        for (int64_t b = 0; b < n && pareto[a]; b++) {
            if (b == a || !res[b].ok || res[b].model != res[a].model ||
                res[b].workload != res[a].workload)
                continue;
            int ge = res[b].tokens_per_s >= res[a].tokens_per_s &&
                     res[b].usd_per_Mtoken <= res[a].usd_per_Mtoken &&
                     res[b].J_per_token <= res[a].J_per_token;
            int gt = res[b].tokens_per_s > res[a].tokens_per_s ||
                     res[b].usd_per_Mtoken < res[a].usd_per_Mtoken ||
                     res[b].J_per_token < res[a].J_per_token;
            if (ge && gt)
                pareto[a] = 0;
        }
    }
}

mp_status mp_sweep_write_csv(FILE *f, const mp_sweep_result *res, int64_t n)
{
    unsigned char *par = calloc((size_t)(n > 0 ? n : 1), 1);
    if (!par)
        return MP_ERR_NOMEM;
    mp_sweep_pareto(res, n, par);
    fprintf(f, "%s\n", mp_sweep_csv_header());
    for (int64_t k = 0; k < n; k++)
        fprintf(f, "%s,%d,%.3f\n", res[k].row, par[k], res[k].wall_s);
    free(par);
    return fflush(f) || ferror(f) ? MP_ERR_IO : MP_OK;
}

mp_status mp_sweep_checkpoint_append(FILE *f, const mp_sweep_result *r)
{
    fprintf(f, "%lld,%llu,%.3f,%d,%lld,%lld,%.9g,%.9g,%.9g,%s\n", (long long)r->task,
            (unsigned long long)r->evaluated, r->wall_s, r->ok, (long long)r->model,
            (long long)r->workload, r->tokens_per_s, r->usd_per_Mtoken, r->J_per_token, r->row);
    return fflush(f) || ferror(f) ? MP_ERR_IO : MP_OK;
}

/* One checkpoint line into r; 0 if it is torn or malformed. */
static int parse_line(char *line, mp_sweep_result *r)
{
    memset(r, 0, sizeof *r);
    long long task, model, wl;
    unsigned long long ev;
    int ok, used = 0;
    if (sscanf(line, "%lld,%llu,%lf,%d,%lld,%lld,%lf,%lf,%lf,%n", &task, &ev, &r->wall_s, &ok,
               &model, &wl, &r->tokens_per_s, &r->usd_per_Mtoken, &r->J_per_token, &used) < 9 ||
        !used)
        return 0;
    size_t len = strlen(line + used);
    if (len == 0 || line[used + len - 1] != '\n' || len >= sizeof r->row)
        return 0; /* torn (no newline) or too long */
    line[used + len - 1] = '\0';
    memcpy(r->row, line + used, len);
    r->task = task;
    r->evaluated = ev;
    r->ok = ok;
    r->model = model;
    r->workload = wl;
    return 1;
}

mp_status mp_sweep_checkpoint_load(const mp_sweep *s, FILE *f, mp_sweep_result *results,
                                   unsigned char *done, int64_t *ndone, mp_diag *diag)
{
    char line[MP_SWEEP_ROW_CAP + 256], prefix[MP_SWEEP_ROW_CAP];
    *ndone = 0;
    int64_t lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        mp_sweep_result r;
        if (!parse_line(line, &r) || r.task < 0 || r.task >= mp_sweep_tasks(s) || done[r.task])
            continue;
        system_prefix(s, r.task, prefix, sizeof prefix);
        size_t pl = strlen(prefix);
        if (strncmp(r.row, prefix, pl) || r.row[pl] != ',') {
            mp_diag_add(diag, "checkpoint line %lld: task %lld is not this sweep's (its system is "
                              "\"%.*s\", expected \"%s\"): remove the checkpoint or use the sweep "
                              "file it was written for", (long long)lineno, (long long)r.task,
                        (int)pl, r.row, prefix);
            return MP_ERR_INPUT;
        }
        results[r.task] = r;
        done[r.task] = 1;
        (*ndone)++;
    }
    return MP_OK;
}
