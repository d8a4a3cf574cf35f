/* src/cli/cmd_doctor.c — `meshplan doctor LOG`: the measured step next to the predicted split, and
 * the parts that explain the gap, ranked (mp_doctor; the rule is in docs/calibrate.md). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>

#include "cli.h"

/* snprintf that truncates quietly (messages and source ranges are cut, never overflowed). */
static void fmt(char *buf, size_t cap, const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, cap, f, ap);
    va_end(ap);
}

static const cli_option doctor_opts[] = {
    CLI_OPT("--model", "M", "the job's model: " CLI_MODEL_HELP),
    CLI_OPT("--gpu", "G", "the GPU, a catalog key"),
    CLI_OPT("--gpus", "N", "GPUs in the job"),
    CLI_OPT_GPUS_PER_NODE,
    CLI_OPT_SCALE_OUT,
    CLI_OPT("--plan", "PLAN", "the job's plan (keys a Megatron arguments block prints are added)"),
    CLI_OPT("--config", "FILE", "a printed Megatron-LM arguments block: its plan keys are added to --plan's"),
    CLI_OPT_CALIBRATION,
    CLI_OPT_CATALOG,
    CLI_OPT_JSON,
    CLI_END,
};

int cmd_doctor(int argc, char **argv);
const cli_command cli_cmd_doctor = {
    "doctor", "a training log against the prediction: measured vs predicted step, the parts that "
    "explain the gap, ranked, and what to check",
    "LOG", 1, doctor_opts,
    "LOG: a Megatron-LM or torchtitan training log. The dominant gap is the part that would need\n"
    "the fewest typical model errors to explain the whole gap (docs/calibrate.md).\n",
    cmd_doctor,
};

static void print_text(const mp_doctor_report *r, const mp_estimate *e, const char *file, int f0, int f1)
{
    printf("%s lines %d-%d: measured step %.3f s; predicted %.3f s (%+.0f%%)\n", file, f0, f1,
           r->measured_step_s, r->predicted_step_s, r->gap_pct);
    const mp_time *t = &e->time;
    printf("predicted split: compute %.3f, recompute %.3f, tp %.3f, cp %.3f, ep %.3f, pp %.3f, "
           "bubble %.3f, dp exposed %.3f (of %.3f), optimizer %.3f s\n", t->compute, t->recompute,
           t->tp_comm, t->cp_comm, t->ep_comm, t->pp_comm, t->pp_bubble, t->dp_comm_exposed,
           t->dp_comm_total, t->optimizer);
    if (r->measured_mem_frac > 0)
        printf("logged memory: %.0f%% of capacity\n", 100 * r->measured_mem_frac);
    printf("verdict: %s\n", r->verdict);
    printf("%-4s %-10s %-10s %-8s %-7s %s\n", "rank", "part", "predicted", "needed", "score", "what");
    for (int i = 0; i < r->n; i++) {
        const mp_doctor_item *it = &r->item[i];
        if (it->predicted_s > 0) /* a part of the step */
            printf("%-4d %-10s %8.3f s %7.2fx %7.2f  %s\n", i + 1, it->part, it->predicted_s,
                   it->factor_needed, it->score, it->what);
        else /* memory pressure: no time of its own */
            printf("%-4d %-10s %10s %8s %7.2f  %s\n", i + 1, it->part, "-", "-", it->score, it->what);
        printf("       check: %s\n", it->check);
    }
}

static json_t *report_json(const mp_doctor_report *r, const mp_estimate *e, const char *file, int f0,
                           int f1, const char *plan)
{
    json_t *items = json_array();
    for (int i = 0; i < r->n; i++) {
        const mp_doctor_item *it = &r->item[i];
        json_t *o = json_pack("{s:s,s:s,s:f,s:f,s:s}", "part", it->part, "what", it->what,
                              "predicted_s", it->predicted_s, "score",
                              isfinite(it->score) ? it->score : -1, "check", it->check);
        /* memory pressure has no time of its own: factor_needed and plausible_factor are null */
        json_object_set_new(o, "factor_needed", it->predicted_s > 0 ? json_real(it->factor_needed) : json_null());
        json_object_set_new(o, "plausible_factor", it->predicted_s > 0 ? json_real(it->plausible_factor) : json_null());
        json_array_append_new(items, o);
    }
    const mp_time *t = &e->time;
    char src[MP_CAL_PATH_CAP + 32];
    fmt(src, sizeof src, "%s:%d-%d", file, f0, f1);
    return json_pack("{s:s,s:s,s:f,s:f,s:f,s:f,s:f,s:{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f},s:s,s:s,s:o}",
        "sources", src, "plan", plan, "measured_step_s", r->measured_step_s, "predicted_step_s",
        r->predicted_step_s, "gap_s", r->gap_s, "gap_pct", r->gap_pct, "measured_mem_frac",
        r->measured_mem_frac, "time_s", "compute", t->compute, "recompute", t->recompute,
        "tp_comm", t->tp_comm, "cp_comm", t->cp_comm, "ep_comm", t->ep_comm, "pp_comm", t->pp_comm,
        "pp_bubble", t->pp_bubble, "dp_comm_exposed", t->dp_comm_exposed, "dp_comm_total",
        t->dp_comm_total, "optimizer", t->optimizer, "verdict", r->verdict, "dominant",
        r->n ? r->item[0].part : "", "explanations", items);
}

static int doctor_job(const cli_args *a, const mp_catalog *cat, const mp_log *l)
{
    char plan[1024];
    int rc = cli_cal_training_plan(a, l, plan, sizeof plan);
    if (rc)
        return rc;
    const char *model = cli_opt(a, "--model"), *gpu = cli_opt(a, "--gpu"), *gpus = cli_opt(a, "--gpus");
    if (!model || !gpu || !gpus || !plan[0]) {
        fprintf(stderr, "meshplan: doctor: %s: the job is not known: expected --model, --gpu, --gpus "
                        "and --plan (the log states: %s)\n", l->file, plan[0] ? plan : "no plan keys");
        return EXIT_INPUT;
    }
    long long n = 0, gpn = 0;
    rc = cli_parse_count("gpus", gpus, 1, 1LL << 24, &n);
    const char *g = cli_opt(a, "--gpus-per-node");
    if (!rc && g)
        rc = cli_parse_count("gpus-per-node", g, 1, 1 << 20, &gpn);
    mp_model m;
    mp_cluster c;
    mp_plan p;
    if (!rc)
        rc = cli_load_model(cat, model, &m);
    if (rc)
        return rc;
    mp_diag d = {0};
    mp_status st = mp_cluster_from_catalog(cat, gpu, n, (int)gpn, cli_opt(a, "--scale-out"), &c, &d);
    if (st != MP_OK) {
        cli_print_diag(&d);
        return cli_exit_for(st);
    }
    cli_cal_cluster(&c);
    mp_plan_init_default(&p);
    st = mp_plan_parse(plan, &p, &d);
    if (st == MP_OK)
        st = mp_plan_resolve(&p, &m, n, &d);
    if (st != MP_OK) {
        fprintf(stderr, "meshplan: doctor: the plan \"%s\" cannot be formed:\n", plan);
        cli_print_diag(&d);
        return cli_exit_for(st);
    }
    mp_estimate_opts o;
    mp_estimate *e = malloc(sizeof *e);
    if (!e)
        return EXIT_INTERNAL;
    st = mp_estimate_plan(&m, &c, &p, cli_cal_opts(c.gpu.key, &o), e, &d);
    int f0 = 0, f1 = 0;
    double step = 0;
    if (l->kind == MP_LOG_MEGATRON)
        step = mp_cal_steady(l, MP_STEP_TIME_S, &f0, &f1);
    else {
        double tps = mp_cal_steady(l, MP_STEP_TOKENS_PER_S, &f0, &f1); /* torchtitan tps is per GPU */
        step = tps > 0 ? (double)p.gb * (double)p.seq / (double)n / tps : 0;
    }
    mp_doctor_report r;
    if (st == MP_OK)
        st = mp_doctor(&c, &p, e, step, mp_cal_steady(l, MP_STEP_MEM_FRAC, NULL, NULL), &r, &d);
    if (st != MP_OK) {
        cli_print_diag(&d);
        free(e);
        return cli_exit_for(st);
    }
    if (cli_flag(a, "--json"))
        rc = cli_print_json(report_json(&r, e, l->file, f0, f1, plan), JSON_INDENT(2) | JSON_REAL_PRECISION(6));
    else
        print_text(&r, e, l->file, f0, f1);
    free(e);
    return rc;
}

int cmd_doctor(int argc, char **argv)
{
    cli_args args;
    int rc = cli_parse_cmd(&cli_cmd_doctor, argc, argv, &args);
    if (rc)
        return rc;
    if (args.npositional != 1)
        return cli_fail("doctor: expected one training LOG%s", "");
    mp_catalog *cat = NULL;
    if ((rc = cli_load_catalog(&args, &cat)))
        return rc;
    mp_log l;
    memset(&l, 0, sizeof l); /* freed below even when the file is not read */
    mp_diag d = {0};
    char *buf = NULL;
    size_t len = 0;
    mp_status st = cli_read_file(args.positional[0], &buf, &len, &d);
    if (st == MP_OK)
        st = mp_cal_parse(buf, len, args.positional[0], &l, &d);
    free(buf);
    if (st != MP_OK) {
        cli_print_diag(&d);
        rc = cli_exit_for(st);
    } else if (l.kind != MP_LOG_MEGATRON && l.kind != MP_LOG_TORCHTITAN) {
        fprintf(stderr, "meshplan: doctor: %s:1: a %s log: expected a Megatron-LM or torchtitan "
                        "training log\n", l.file, mp_log_kind_name(l.kind));
        rc = EXIT_INPUT;
    } else {
        rc = doctor_job(&args, cat, &l);
    }
    mp_log_free(&l);
    mp_catalog_destroy(cat);
    return rc;
}
