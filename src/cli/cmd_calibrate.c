/* src/cli/cmd_calibrate.c — `meshplan calibrate LOG... -o FILE`: fit the constants the logs
 * determine (include/meshplan/calibrate.h, docs/calibrate.md) and write them as JSON. The loader
 * of --calibration FILE that every command applies is cli_calibration.c. */
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
#include "meshplan/calibrate.h"

/* ---- calibrate ---- */

static const cli_option calibrate_opts[] = {
    CLI_OPT("-o", "FILE", "write the calibration JSON here (default: print it on stdout, the summary on stderr)"),
    CLI_OPT("--model", "M", "the training logs' model: " CLI_MODEL_HELP),
    CLI_OPT("--gpu", "G", "the GPU, a catalog key (default: from the nccl-tests device names)"),
    CLI_OPT("--gpus", "N", "GPUs of the training logs' job"),
    CLI_OPT_GPUS_PER_NODE,
    CLI_OPT_SCALE_OUT,
    CLI_OPT("--plan", "PLAN", "the training logs' plan (keys the Megatron arguments block prints are added)"),
    CLI_OPT("--config", "FILE", "a printed Megatron-LM arguments block: its plan keys are added to --plan's"),
    CLI_OPT("--validate", "CSV", "runs in the schema of runs.csv: their error before and after, by source group and all"),
    CLI_OPT_CATALOG,
    CLI_END,
};

int cmd_calibrate(int argc, char **argv);
const cli_command cli_cmd_calibrate = {
    "calibrate", "fit link latency/efficiency, GEMM efficiency and the allocator reserve from "
    "nccl-tests and Megatron/torchtitan logs (docs/calibrate.md)",
    "LOG...", CLI_MAX_POSITIONAL, calibrate_opts,
    "Logs: nccl-tests *_perf output, collectives.csv rows, Megatron-LM and torchtitan training logs,\n"
    "measure_gpu.py gemm.csv. Training logs need their configuration: --model --gpu --gpus --plan.\n"
    "Apply the result with --calibration FILE in predict, search, run, trace, compare, collective.\n",
    cmd_calibrate,
};

/* Catalog key of a GPU from an nccl-tests device name ("NVIDIA H100 80GB HBM3"), as
 * shared/device/measure_gpu.py maps them; the name itself when it is a key. */
static const char *gpu_key_for(const mp_catalog *cat, const char *name)
{
    static const struct { const char *a, *b, *key; } map[] = {
        {"H100", "PCIe", "h100-pcie-80gb"}, {"H100", "HBM2e", "h100-sxm-96gb-500w"},
        {"H100", "", "h100-sxm5-80gb"}, {"H200", "", "h200-sxm-141gb"},
        {"A100", "40GB", "a100-sxm4-40gb"}, {"A100", "", "a100-sxm4-80gb"}, {"B200", "", "b200"},
        {"GB200", "", "gb200"}, {"MI300X", "", "mi300x"}, {"L40S", "", "l40s"}};
    if (mp_catalog_gpu(cat, name))
        return name;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strstr(name, map[i].a) && strstr(name, map[i].b))
            return map[i].key;
    return NULL;
}

/* A training log whose GEMM fraction could be fitted, kept for the joint fit per GPU. */
typedef struct {
    mp_model m;
    mp_cluster c;
    mp_plan p;
    double tps;
    char src[MP_CAL_PATH_CAP + 32];
} train_rec;

typedef struct {
    const cli_args *a;
    const mp_catalog *cat;
    mp_calibration cal;
    json_t *fits, *training, *left;
    train_rec *train; /* MP_CAL_MAX_TRAIN of them */
    int ntrain;
    FILE *msg;        /* the text summary: stdout with -o, else stderr (stdout is the JSON) */
} cal_job;

static void left_alone(cal_job *j, const char *name, const char *why)
{
    json_array_append_new(j->left, json_pack("{s:s,s:s}", "name", name, "reason", why));
}

static json_t *constant_json(const mp_cal_constant *k)
{
    json_t *o = json_pack("{s:s,s:f,s:s,s:s,s:f,s:i}", "name", mp_cal_kind_name(k->kind), "value",
                          k->value, "unit", k->unit, "sources", k->sources, "fit_error_pct",
                          k->fit_error_pct, "n_points", k->npoints);
    if (k->gpu[0]) json_object_set_new(o, "gpu", json_string(k->gpu));
    if (k->key[0]) json_object_set_new(o, "link", json_string(k->key));
    if (k->tier >= 0) json_object_set_new(o, "tier", json_integer(k->tier));
    if (k->kind == MP_CAL_GPU_MATMUL) json_object_set_new(o, "dtype", json_string(mp_dtype_name(k->dtype)));
    return o;
}

static int sweep_cluster(cal_job *j, const mp_nccl_table *t, mp_cluster *c)
{
    const char *gpu = cli_opt(j->a, "--gpu");
    if (!gpu && !(gpu = gpu_key_for(j->cat, t->gpu_name))) {
        fprintf(stderr, "meshplan: calibrate: GPU \"%s\" (lines %d-%d): expected a catalog key; "
                        "give --gpu\n", t->gpu_name, t->first_line, t->last_line);
        return EXIT_INPUT;
    }
    long long gpn = t->gpus_per_node ? t->gpus_per_node : t->nranks / (t->nnodes > 0 ? t->nnodes : 1);
    const char *g = cli_opt(j->a, "--gpus-per-node");
    if (g && cli_parse_count("gpus-per-node", g, 1, 1 << 20, &gpn))
        return EXIT_INPUT;
    const char *so = cli_opt(j->a, "--scale-out");
    if (!so && t->scaleout[0] && mp_catalog_link(j->cat, t->scaleout))
        so = t->scaleout;
    mp_diag d = {0};
    mp_status st = mp_cluster_from_catalog(j->cat, gpu, t->nranks, (int)gpn, so, c, &d);
    if (st != MP_OK) {
        cli_print_diag(&d);
        return cli_exit_for(st);
    }
    return 0;
}

/* A sweep: at least 4 rows of increasing size (collectives.csv groups that vary the algorithm at
 * one size are comparisons, not sweeps). */
static int is_sweep(const mp_nccl_table *t)
{
    if (t->nrows < 4)
        return 0;
    for (size_t i = 1; i < t->nrows; i++)
        if (!(t->rows[i].bytes > t->rows[i - 1].bytes))
            return 0;
    return 1;
}

static int fit_sweep(cal_job *j, const mp_log *l, const mp_nccl_table *t)
{
    if (!is_sweep(t)) {
        char why[300];
        fmt(why, sizeof why, "%s:%d-%d %s: fewer than 4 sizes, or sizes not increasing: not a "
            "sweep, not fitted", l->file, t->first_line, t->last_line, t->label);
        left_alone(j, "tier_latency_s/tier_efficiency_frac", why);
        return 0;
    }
    mp_cluster c;
    int rc = sweep_cluster(j, t, &c);
    if (rc)
        return rc;
    mp_cal_link_fit f;
    mp_diag d = {0};
    double hb = 0, ho = 0;
    mp_status st = mp_cal_fit_link(&c, t, 1, 0, &f, &d);
    if (st == MP_OK)
        st = mp_cal_holdout(&c, t, &hb, &ho, &d);
    if (st != MP_OK) {
        fprintf(stderr, "meshplan: calibrate: %s:\n", l->file);
        cli_print_diag(&d);
        return cli_exit_for(st);
    }
    mp_cal_constant k = {0};
    fmt(k.gpu, sizeof k.gpu, "%s", c.gpu.key);
    fmt(k.key, sizeof k.key, "%s", c.tier[f.tier].link);
    k.tier = f.tier;
    fmt(k.sources, sizeof k.sources, "%s:%d-%d%s%s", l->file, t->first_line, t->last_line,
             t->label[0] ? " " : "", t->label);
    k.fit_error_pct = f.after_err_pct;
    k.npoints = f.npoints;
    k.kind = MP_CAL_TIER_LATENCY;
    k.value = f.latency_s;
    fmt(k.unit, sizeof k.unit, "%s", "s");
    mp_cal_add(&j->cal, &k);
    k.kind = MP_CAL_TIER_EFFICIENCY;
    k.value = f.efficiency_frac;
    fmt(k.unit, sizeof k.unit, "%s", "fraction");
    mp_cal_add(&j->cal, &k);
    if (f.nvls_fitted) {
        mp_cal_constant kn = k;
        kn.kind = MP_CAL_TIER_NVLS;
        kn.tier = 0;
        fmt(kn.key, sizeof kn.key, "%s", c.tier[0].link);
        kn.value = f.in_network_algbw_frac;
        mp_cal_add(&j->cal, &kn);
    }
    json_array_append_new(j->fits, json_pack(
        "{s:s,s:s,s:s,s:I,s:I,s:s,s:i,s:s,s:i,s:{s:f,s:f},s:{s:f,s:f},s:f,s:f,s:{s:f,s:f}}",
        "sources", k.sources, "collective", mp_coll_op_name(t->op), "gpu", c.gpu.key,
        "ranks", (json_int_t)t->nranks, "nodes", (json_int_t)t->nnodes, "link", k.key,
        "tier", f.tier, "tier_name", c.tier[f.tier].name, "n_points", f.npoints,
        "before", "latency_s", f.before_latency_s, "efficiency_frac", f.before_efficiency_frac,
        "after", "latency_s", f.latency_s, "efficiency_frac", f.efficiency_frac,
        "median_abs_time_error_pct_before", f.before_err_pct,
        "median_abs_time_error_pct_after", f.after_err_pct,
        "half_half", "fit_even_predict_odd_before_pct", hb, "fit_even_predict_odd_after_pct", ho));
    if (f.nvls_fitted) {
        json_t *last = json_array_get(j->fits, json_array_size(j->fits) - 1);
        json_object_set_new(json_object_get(last, "before"), "in_network_algbw_frac",
                            json_real(f.before_in_network_algbw_frac));
        json_object_set_new(json_object_get(last, "after"), "in_network_algbw_frac",
                            json_real(f.in_network_algbw_frac));
    }
    fprintf(j->msg, "%s lines %d-%d%s%s: %s on %lld ranks / %lld nodes, tier %d (%s): latency %.3g s -> "
           "%.3g s, efficiency %.3f -> %.3f; median |time error| %.1f%% -> %.1f%%; half/half "
           "(fit even sizes, predict odd) %.1f%% -> %.1f%%\n", l->file, t->first_line,
           t->last_line, t->label[0] ? " " : "", t->label, mp_coll_op_name(t->op),
           (long long)t->nranks, (long long)t->nnodes, f.tier, k.key, f.before_latency_s,
           f.latency_s, f.before_efficiency_frac, f.efficiency_frac, f.before_err_pct,
           f.after_err_pct, hb, ho);
    if (f.nvls_fitted)
        fprintf(j->msg, "  NVLS carries the large sizes: tier 0 (%s) in_network_algbw_frac %.3f -> %.3f\n",
               c.tier[0].link, f.before_in_network_algbw_frac, f.in_network_algbw_frac);
    if (f.tier > 0) {
        char why[200];
        fmt(why, sizeof why, "%s: tiers inside tier %d are crossed but do not bound this "
                 "sweep; fit them from a sweep inside one node", l->file, f.tier);
        left_alone(j, "tier_latency_s, tier_efficiency_frac, tier_in_network_algbw_frac (inner tiers)", why);
    }
    return 0;
}

/* The training log's plan: --plan, then the keys the Megatron arguments block states that --plan
 * does not (a key given twice is refused by the plan parser). */

/* Estimate the training log's job into *e (malloc'd); 0, 1 (configuration not known: reported in
 * left_alone) or an exit code. */
static int training_job(cal_job *j, const mp_log *l, mp_model *m, mp_cluster *c, mp_plan *p)
{
    const char *model = cli_opt(j->a, "--model"), *gpu = cli_opt(j->a, "--gpu"),
               *gpus = cli_opt(j->a, "--gpus");
    char plan[1024];
    int rc = cli_cal_training_plan(j->a, l, plan, sizeof plan);
    if (rc)
        return rc;
    if (!model || !gpu || !gpus || !plan[0]) {
        char why[300];
        fmt(why, sizeof why, "%s: the configuration is not known: give --model, --gpu, --gpus "
                 "and --plan (the log states %s)", l->file, plan[0] ? plan : "no plan keys");
        left_alone(j, "gemm_sustained_frac", why);
        return 1;
    }
    long long n = 0, gpn = 0;
    rc = cli_parse_count("gpus", gpus, 1, 1LL << 24, &n);
    const char *g = cli_opt(j->a, "--gpus-per-node");
    if (!rc && g)
        rc = cli_parse_count("gpus-per-node", g, 1, 1 << 20, &gpn);
    if (!rc)
        rc = cli_load_model(j->cat, model, m);
    if (rc)
        return rc;
    mp_diag d = {0};
    mp_status st = mp_cluster_from_catalog(j->cat, gpu, n, (int)gpn, cli_opt(j->a, "--scale-out"), c, &d);
    mp_plan_init_default(p);
    if (st == MP_OK)
        st = mp_plan_parse(plan, p, &d);
    if (st == MP_OK)
        st = mp_plan_resolve(p, m, n, &d);
    if (st != MP_OK) {
        fprintf(stderr, "meshplan: calibrate: %s: the job (plan \"%s\") cannot be formed:\n", l->file, plan);
        cli_print_diag(&d);
        return cli_exit_for(st);
    }
    return 0;
}

static int fit_memory(cal_job *j, const mp_log *l, const mp_model *m, const mp_cluster *c,
                      const mp_plan *p)
{
    int f0, f1;
    double gib = mp_cal_steady(l, MP_STEP_MEM_GIB, &f0, &f1);
    if (!(gib > 0)) {
        left_alone(j, "allocator_margin_frac", "no logged memory (torchtitan prints it; Megatron's "
                   "iteration lines do not)");
        return 0;
    }
    mp_estimate *e = malloc(sizeof *e);
    if (!e)
        return EXIT_INTERNAL;
    mp_diag d = {0};
    mp_estimate_opts o;
    mp_estimate_opts_init(&o);
    mp_status st = mp_estimate_plan(m, c, p, &o, e, &d);
    double total = st == MP_OK ? e->memory.total : 0;
    free(e);
    double margin = total > 0 ? gib * 1073741824.0 / total - 1.0 : -1;
    char why[300];
    if (!(margin >= 0 && margin <= 1.0)) {
        fmt(why, sizeof why, "%s:%d-%d: logged %.2f GiB against %.2f GiB predicted before the "
                 "reserve: the gap is the memory model's, not a reserve; not fitted", l->file, f0,
                 f1, gib, total / 1073741824.0);
        left_alone(j, "allocator_margin_frac", why);
        return 0;
    }
    mp_cal_constant k = {.kind = MP_CAL_ALLOCATOR_MARGIN, .tier = -1, .value = margin, .npoints = 1};
    fmt(k.gpu, sizeof k.gpu, "%s", c->gpu.key);
    fmt(k.unit, sizeof k.unit, "%s", "fraction");
    fmt(k.sources, sizeof k.sources, "%s:%d-%d", l->file, f0, f1);
    for (int i = 0; i < j->cal.n; i++) { /* another log of this GPU: the mean of the logs */
        mp_cal_constant *prev = &j->cal.c[i];
        if (prev->kind == MP_CAL_ALLOCATOR_MARGIN && !strcmp(prev->gpu, k.gpu)) {
            k.value = (prev->value * prev->npoints + margin) / (prev->npoints + 1);
            k.npoints = prev->npoints + 1;
            char src[sizeof k.sources];
            fmt(src, sizeof src, "%s; %s", prev->sources, k.sources);
            fmt(k.sources, sizeof k.sources, "%s", src);
        }
    }
    mp_cal_add(&j->cal, &k);
    return 0;
}

static int fit_training(cal_job *j, const mp_log *l)
{
    mp_model m;
    mp_cluster c;
    mp_plan p;
    int rc = training_job(j, l, &m, &c, &p);
    if (rc)
        return rc == 1 ? 0 : rc;
    int f0, f1;
    double tps = 0;
    if (l->kind == MP_LOG_TORCHTITAN)
        tps = mp_cal_steady(l, MP_STEP_TOKENS_PER_S, &f0, &f1);
    else {
        double step = mp_cal_steady(l, MP_STEP_TIME_S, &f0, &f1);
        tps = step > 0 ? (double)p.gb * (double)p.seq / step / (double)c.num_gpus : 0;
    }
    double fitted = 0, before = 0, after = 0;
    mp_diag d = {0};
    mp_status st = mp_cal_fit_gemm(&m, &c, &p, NULL, tps, &fitted, &before, &after, &d);
    char src[MP_CAL_PATH_CAP + 32];
    fmt(src, sizeof src, "%s:%d-%d", l->file, f0, f1);
    if (st != MP_OK) {
        char why[600];
        fmt(why, sizeof why, "%s: %s", src, d.text);
        left_alone(j, "gemm_sustained_frac", why);
    } else if (j->ntrain >= MP_CAL_MAX_TRAIN) {
        left_alone(j, "gemm_sustained_frac", "more training logs than one fit takes (16); this one "
                   "is not used");
    } else {
        train_rec *r = &j->train[j->ntrain++];
        r->m = m;
        r->c = c;
        r->p = p;
        r->tps = tps;
        fmt(r->src, sizeof r->src, "%s", src);
        json_array_append_new(j->training, json_pack(
            "{s:s,s:s,s:f,s:f,s:f,s:f}", "sources", src, "gpu", c.gpu.key, "measured_tokens_per_s_per_gpu",
            tps, "gemm_sustained_frac_this_log", fitted, "throughput_error_pct_before", before,
            "throughput_error_pct_after_this_log", after));
        fprintf(j->msg, "%s: %.0f tokens/s per GPU measured; gemm_sustained_frac 0.85 -> %.3f on this log "
               "alone; throughput error %+.1f%% -> %+.1f%%\n", src, tps, fitted, before, after);
    }
    left_alone(j, "attention_sustained_frac, memory_bound_sustained_frac", "one step time per "
               "configuration cannot separate GEMM, attention and element-wise time; these need "
               "logs of configurations whose attention and element-wise shares differ");
    return fit_memory(j, l, &m, &c, &p);
}

/* One gemm_sustained_frac per GPU from every training log of that GPU (mp_cal_fit_gemm_joint). */
static int fit_gemm_joint(cal_job *j)
{
    for (int i = 0; i < j->ntrain; i++) {
        const char *gpu = j->train[i].c.gpu.key;
        int seen = 0;
        for (int k = 0; k < i; k++)
            seen |= !strcmp(j->train[k].c.gpu.key, gpu);
        if (seen)
            continue;
        mp_cal_train_point pts[MP_CAL_MAX_TRAIN];
        mp_cal_constant k = {.kind = MP_CAL_GEMM_SUSTAINED, .tier = -1};
        for (int q = i; q < j->ntrain; q++) {
            train_rec *r = &j->train[q];
            if (strcmp(r->c.gpu.key, gpu))
                continue;
            pts[k.npoints++] = (mp_cal_train_point){&r->m, &r->c, &r->p, r->tps};
            size_t u = strlen(k.sources);
            fmt(k.sources + u, sizeof k.sources - u, "%s%s", u ? "; " : "", r->src);
        }
        mp_diag d = {0};
        mp_status st = mp_cal_fit_gemm_joint(pts, k.npoints, NULL, &k.value, &k.fit_error_pct, &d);
        if (st != MP_OK) {
            cli_print_diag(&d);
            return cli_exit_for(st);
        }
        fmt(k.gpu, sizeof k.gpu, "%s", gpu);
        fmt(k.unit, sizeof k.unit, "%s", "fraction");
        mp_cal_add(&j->cal, &k);
        fprintf(j->msg, "%s: gemm_sustained_frac %.3f from %d training log%s (median |throughput error| "
               "%.1f%%)\n", gpu, k.value, k.npoints, k.npoints > 1 ? "s" : "", k.fit_error_pct);
    }
    return 0;
}

/* gemm.csv: the best measured rate per dtype, the catalog's measured_matmul_flops_per_s. */
static int fit_gemm_csv(cal_job *j, const mp_log *l)
{
    const char *gpu = cli_opt(j->a, "--gpu");
    if (!gpu || !mp_catalog_gpu(j->cat, gpu)) {
        left_alone(j, "measured_matmul_flops_per_s", "gemm.csv does not name its GPU: give --gpu");
        return 0;
    }
    for (int dt = 0; dt < MP_DT_COUNT; dt++) {
        mp_cal_constant k = {.kind = MP_CAL_GPU_MATMUL, .tier = -1, .dtype = (mp_dtype)dt};
        int line = 0;
        for (size_t i = 0; i < l->ngemms; i++)
            if (l->gemms[i].dtype == (mp_dtype)dt) {
                k.npoints++;
                if (l->gemms[i].flops_per_s > k.value)
                    k.value = l->gemms[i].flops_per_s, line = l->gemms[i].line;
            }
        if (!k.npoints)
            continue;
        fmt(k.gpu, sizeof k.gpu, "%s", gpu);
        fmt(k.unit, sizeof k.unit, "%s", "FLOP/s");
        fmt(k.sources, sizeof k.sources, "%s:%d (best of %d shapes)", l->file, line, k.npoints);
        mp_cal_add(&j->cal, &k);
    }
    return 0;
}

/* --validate CSV: median |error| by source group with the defaults and with the calibration. */
static json_t *validate_before_after(cal_job *j, const char *file)
{
    char *buf;
    size_t len;
    mp_diag d = {0};
    if (cli_read_file(file, &buf, &len, &d) != MP_OK) {
        cli_print_diag(&d);
        return NULL;
    }
    json_t *out = json_object();
    for (int pass = 0; pass < 2; pass++) {
        mp_estimate_opts o;
        mp_estimate_opts_init(&o);
        const char *gpu = cli_opt(j->a, "--gpu");
        if (pass)
            mp_cal_apply_opts(&j->cal, gpu, &o);
        mp_validation v = {0};
        if (mp_validate_csv(j->cat, buf, len, file, &o, &v, &d) != MP_OK) {
            cli_print_diag(&d);
            json_decref(out);
            free(buf);
            return NULL;
        }
        for (size_t i = 0; i < v.nrows; i++) {
            const char *gname = v.rows[i].source_group;
            if (!strcmp(v.rows[i].metric, "mem_gib") || json_object_get(json_object_get(out, gname), pass ? "after_median_abs_error_pct" : "before_median_abs_error_pct"))
                continue;
            mp_val_stats s;
            mp_validation_stats(&v, MP_VAL_THROUGHPUT, gname, &s);
            json_t *g = json_object_get(out, gname);
            if (!g)
                json_object_set_new(out, gname, g = json_object());
            json_object_set_new(g, "n", json_integer((json_int_t)s.n));
            json_object_set_new(g, pass ? "after_median_abs_error_pct" : "before_median_abs_error_pct",
                                json_real(s.median_abs_error_pct));
        }
        mp_val_stats all;
        mp_validation_stats(&v, MP_VAL_THROUGHPUT, NULL, &all);
        json_t *g = json_object_get(out, "all");
        if (!g)
            json_object_set_new(out, "all", g = json_object());
        json_object_set_new(g, "n", json_integer((json_int_t)all.n));
        json_object_set_new(g, pass ? "after_median_abs_error_pct" : "before_median_abs_error_pct",
                            json_real(all.median_abs_error_pct));
        mp_validation_free(&v);
    }
    free(buf);
    return out;
}

static int write_calibration(cal_job *j)
{
    json_t *consts = json_array();
    for (int i = 0; i < j->cal.n; i++)
        json_array_append_new(consts, constant_json(&j->cal.c[i]));
    json_t *root = json_pack("{s:i,s:o,s:O,s:O,s:O}", "meshplan_calibration", 1, "constants", consts,
                             "collective_fits", j->fits, "training_fits", j->training, "left_alone", j->left);
    const char *vf = cli_opt(j->a, "--validate");
    if (vf) {
        json_t *v = validate_before_after(j, vf);
        if (!v) {
            json_decref(root);
            return EXIT_INPUT;
        }
        json_object_set_new(root, "validation_by_source_group", v);
    }
    for (size_t i = 0; i < json_array_size(j->left); i++) {
        json_t *o = json_array_get(j->left, i);
        fprintf(j->msg, "left alone: %s: %s\n", json_string_value(json_object_get(o, "name")),
               json_string_value(json_object_get(o, "reason")));
    }
    const char *out = cli_opt(j->a, "-o");
    if (!out)
        return cli_print_json(root, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
    int rc = json_dump_file(root, out, JSON_INDENT(2) | JSON_REAL_PRECISION(6)) ? EXIT_INPUT : 0;
    json_decref(root);
    if (rc)
        fprintf(stderr, "meshplan: calibrate: -o \"%s\": could not be written\n", out);
    else
        fprintf(j->msg, "wrote %d constants to %s\n", j->cal.n, out);
    return rc;
}

int cmd_calibrate(int argc, char **argv)
{
    cli_args args;
    int rc = cli_parse_cmd(&cli_cmd_calibrate, argc, argv, &args);
    if (rc)
        return rc;
    if (args.npositional < 1)
        return cli_fail("calibrate: expected at least one LOG file%s", "");
    if (cli_opt(&args, "-o") && (rc = cli_check_output("calibrate", "-o", cli_opt(&args, "-o"))))
        return rc; /* before the summary is printed */
    mp_catalog *cat = NULL;
    if ((rc = cli_load_catalog(&args, &cat)))
        return rc;
    cal_job j = {&args, cat, {0}, json_array(), json_array(), json_array(),
                 calloc(MP_CAL_MAX_TRAIN, sizeof(train_rec)), 0,
                 cli_opt(&args, "-o") ? stdout : stderr};
    if (!j.train)
        rc = EXIT_INTERNAL;
    for (int i = 0; i < args.npositional && !rc; i++) {
        mp_log l;
        memset(&l, 0, sizeof l); /* freed below even when the file is not read */
        mp_diag d = {0};
        char *buf = NULL;
        size_t len = 0;
        mp_status st = cli_read_file(args.positional[i], &buf, &len, &d);
        if (st == MP_OK)
            st = mp_cal_parse(buf, len, args.positional[i], &l, &d);
        free(buf);
        if (st != MP_OK) {
            cli_print_diag(&d);
            rc = cli_exit_for(st);
        }
        for (size_t t = 0; !rc && t < l.ntables; t++)
            rc = fit_sweep(&j, &l, &l.tables[t]);
        if (!rc && (l.kind == MP_LOG_MEGATRON || l.kind == MP_LOG_TORCHTITAN))
            rc = fit_training(&j, &l);
        if (!rc && l.kind == MP_LOG_GEMM_CSV)
            rc = fit_gemm_csv(&j, &l);
        mp_log_free(&l);
    }
    if (!rc)
        rc = fit_gemm_joint(&j);
    if (!rc)
        rc = write_calibration(&j);
    free(j.train);
    json_decref(j.fits);
    json_decref(j.training);
    json_decref(j.left);
    mp_catalog_destroy(cat);
    return rc;
}
