/* src/cli/main.c — the meshplan command. Uses only the public headers in include/.
 *
 *   meshplan predict  --model M --gpu G --gpus N [--gpus-per-node K] [--scale-out LINK]
 *                     [--catalog FILE] --plan "tp=8,pp=4,..." [--json]
 *   meshplan validate FILE.csv [--json] [--catalog FILE]
 *   meshplan catalog  [gpus|links|nodes|models] [--json]
 *
 * Exit codes: 0 success, 2 bad usage or bad input (the message names the field, the value and
 * what was expected), 1 internal error.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "meshplan/meshplan.h"

#define EXIT_INPUT 2
#define EXIT_INTERNAL 1
#define MAX_FILE_BYTES (64L * 1024 * 1024)

static const char *usage_text =
    "usage: meshplan <command> [options]\n"
    "\n"
    "commands:\n"
    "  predict   --model M --gpu G --gpus N [--gpus-per-node K] [--scale-out LINK]\n"
    "            [--catalog FILE] --plan \"tp=8,pp=4,mb=1,gb=512,seq=4096,...\" [--json]\n"
    "            M is a catalog key, a Hugging Face config.json or a model JSON file.\n"
    "  validate  FILE.csv [--json] [--catalog FILE]   predict published runs, report the error\n"
    "  catalog   [gpus|links|nodes|models] [--json] [--catalog FILE]\n"
    "  help      this text\n"
    "\n"
    "plan keys: tp pp vpp dp cp ep sp mb gb seq zero hsdp recompute(none|selective|full)\n"
    "           precision(bf16|fp16|fp8) flash(0|1) schedule(1f1b|interleaved|gpipe|zb)\n"
    "exit codes: 0 ok, 2 bad usage or input, 1 internal error\n";

static int fail_input(const char *fmt, const char *a)
{
    fprintf(stderr, "meshplan: ");
    fprintf(stderr, fmt, a);
    fprintf(stderr, "\n");
    return EXIT_INPUT;
}

static int exit_for(mp_status st)
{
    switch (st) {
    case MP_OK: return 0;
    case MP_ERR_NOMEM:
    case MP_ERR_INTERNAL: return EXIT_INTERNAL;
    default: return EXIT_INPUT;
    }
}

static void print_diag(const mp_diag *d)
{
    if (d->len) {
        fprintf(stderr, "meshplan: %s\n", d->text);
        if (d->count > 1)
            fprintf(stderr, "meshplan: %d problems\n", d->count);
    }
}

/* Read a whole regular file (at most MAX_FILE_BYTES). */
static mp_status read_file(const char *path, char **buf, size_t *len, mp_diag *d)
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

typedef struct {
    const char *model, *gpu, *gpus, *gpus_per_node, *scale_out, *plan, *catalog;
    const char *positional[4];
    int npositional;
    int json;
} args;

/* Options taking a value; returns 0 on success, EXIT_INPUT after printing the problem. */
static int parse_args(int argc, char **argv, args *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 0; i < argc; i++) {
        const char *k = argv[i];
        const char **dst = NULL;
        if (!strcmp(k, "--json")) { a->json = 1; continue; }
        else if (!strcmp(k, "--model")) dst = &a->model;
        else if (!strcmp(k, "--gpu")) dst = &a->gpu;
        else if (!strcmp(k, "--gpus")) dst = &a->gpus;
        else if (!strcmp(k, "--gpus-per-node")) dst = &a->gpus_per_node;
        else if (!strcmp(k, "--scale-out")) dst = &a->scale_out;
        else if (!strcmp(k, "--plan")) dst = &a->plan;
        else if (!strcmp(k, "--catalog")) dst = &a->catalog;
        else if (k[0] == '-' && k[1]) return fail_input("unknown option \"%s\" (see meshplan help)", k);
        else {
            if (a->npositional >= 4)
                return fail_input("too many arguments at \"%s\"", k);
            a->positional[a->npositional++] = k;
            continue;
        }
        if (i + 1 >= argc)
            return fail_input("option %s needs a value", k);
        *dst = argv[++i];
    }
    return 0;
}

static int parse_count(const char *name, const char *s, long long min, long long max, long long *out)
{
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (!s[0] || *end || errno) {
        fprintf(stderr, "meshplan: %s = \"%s\": expected an integer\n", name, s);
        return EXIT_INPUT;
    }
    if (x < min || x > max) {
        fprintf(stderr, "meshplan: %s = %lld: expected an integer in [%lld, %lld]\n", name, x, min, max);
        return EXIT_INPUT;
    }
    *out = x;
    return 0;
}

static int load_catalog(const args *a, mp_catalog **cat)
{
    mp_diag d = {0};
    mp_status st = mp_catalog_create(cat, &d);
    if (st != MP_OK) {
        print_diag(&d);
        fprintf(stderr, "meshplan: built-in catalog failed to load (%s)\n", mp_status_str(st));
        return EXIT_INTERNAL;
    }
    if (a->catalog) {
        char *buf;
        size_t len;
        st = read_file(a->catalog, &buf, &len, &d);
        if (st == MP_OK) {
            st = mp_catalog_merge_json(*cat, buf, len, a->catalog, &d);
            free(buf);
        }
        if (st != MP_OK) {
            print_diag(&d);
            mp_catalog_destroy(*cat);
            *cat = NULL;
            return exit_for(st);
        }
    }
    return 0;
}

/* --model: a catalog key, else a file (HF config.json or a models.json-style entry). */
static int load_model(const mp_catalog *cat, const char *spec, mp_model *m)
{
    const mp_model *cm = mp_catalog_model(cat, spec);
    if (cm) {
        *m = *cm;
        return 0;
    }
    struct stat sb;
    if (stat(spec, &sb) != 0) {
        fprintf(stderr, "meshplan: model = \"%s\": not a catalog key (see `meshplan catalog "
                        "models`) and not a readable file\n", spec);
        return EXIT_INPUT;
    }
    mp_diag d = {0};
    char *buf;
    size_t len;
    mp_status st = read_file(spec, &buf, &len, &d);
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
        print_diag(&d);
        return exit_for(st);
    }
    return 0;
}

static int cmd_predict(int argc, char **argv)
{
    args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    if (a.npositional)
        return fail_input("predict: unexpected argument \"%s\"", a.positional[0]);
    if (!a.model && !a.gpu && !a.gpus && !a.plan) {
        /* The built-in default job: Llama 3 70B on 64 H100 (8 DGX H100 nodes). */
        a.model = "llama3-70b";
        a.gpu = "h100-sxm5-80gb";
        a.gpus = "64";
        a.plan = "tp=8,pp=2,mb=1,gb=128,seq=8192,zero=1,recompute=selective";
        fprintf(stderr, "meshplan: no options given: predicting the default job --model %s --gpu %s "
                        "--gpus %s --plan \"%s\"\n", a.model, a.gpu, a.gpus, a.plan);
    }
    if (!a.model) return fail_input("predict: --model is required%s", "");
    if (!a.gpu) return fail_input("predict: --gpu is required%s", "");
    if (!a.gpus) return fail_input("predict: --gpus is required%s", "");
    long long ngpus = 0, gpn = 0;
    if ((rc = parse_count("gpus", a.gpus, 1, 1LL << 24, &ngpus)))
        return rc;
    if (a.gpus_per_node && (rc = parse_count("gpus-per-node", a.gpus_per_node, 1, 1 << 20, &gpn)))
        return rc;

    mp_catalog *cat = NULL;
    if ((rc = load_catalog(&a, &cat)))
        return rc;
    mp_model m;
    mp_cluster cl;
    mp_plan p;
    mp_estimate *e = NULL;
    mp_diag d = {0};
    if ((rc = load_model(cat, a.model, &m)))
        goto done;
    mp_status st = mp_cluster_from_catalog(cat, a.gpu, ngpus, (int)gpn, a.scale_out, &cl, &d);
    if (st != MP_OK) {
        rc = exit_for(st);
        goto done;
    }
    mp_plan_init_default(&p);
    st = mp_plan_parse(a.plan, &p, &d);
    if (st == MP_OK)
        st = mp_plan_resolve(&p, &m, ngpus, &d);
    if (st != MP_OK) {
        fprintf(stderr, "meshplan: the plan cannot be formed:\n");
        rc = exit_for(st);
        goto done;
    }
    e = malloc(sizeof *e);
    if (!e) {
        rc = EXIT_INTERNAL;
        goto done;
    }
    st = mp_estimate_plan(&m, &cl, &p, NULL, e, &d);
    if (st != MP_OK) {
        rc = exit_for(st);
        goto done;
    }
    if (a.json) {
        char *s = mp_report_estimate_json(&m, &cl, &p, e);
        if (!s) {
            fprintf(stderr, "meshplan: out of memory writing JSON\n");
            rc = EXIT_INTERNAL;
            goto done;
        }
        printf("%s\n", s);
        free(s);
    } else {
        mp_report_estimate_text(stdout, &m, &cl, &p, e);
    }
    rc = 0;
done:
    print_diag(&d);
    free(e);
    mp_catalog_destroy(cat);
    return rc;
}

static int cmd_validate(int argc, char **argv)
{
    args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    if (a.npositional != 1)
        return fail_input("validate: expected one CSV file, got %s", a.npositional ? "more" : "none");
    mp_catalog *cat = NULL;
    if ((rc = load_catalog(&a, &cat)))
        return rc;
    mp_diag d = {0};
    char *buf = NULL;
    size_t len = 0;
    mp_validation v;
    memset(&v, 0, sizeof v);
    mp_status st = read_file(a.positional[0], &buf, &len, &d);
    if (st == MP_OK)
        st = mp_validate_csv(cat, buf, len, a.positional[0], NULL, &v, &d);
    free(buf);
    if (st != MP_OK) {
        print_diag(&d);
        mp_catalog_destroy(cat);
        return exit_for(st);
    }
    if (a.json) {
        char *s = mp_report_validation_json(&v);
        if (s)
            printf("%s\n", s);
        else
            rc = EXIT_INTERNAL;
        free(s);
    } else {
        mp_report_validation_text(stdout, &v);
    }
    mp_validation_free(&v);
    mp_catalog_destroy(cat);
    return rc;
}

static int cmd_catalog(int argc, char **argv)
{
    args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    if (a.npositional > 1)
        return fail_input("catalog: unexpected argument \"%s\"", a.positional[1]);
    const char *what = a.npositional ? a.positional[0] : "all";
    int all = !strcmp(what, "all");
    if (!all && strcmp(what, "gpus") && strcmp(what, "links") && strcmp(what, "nodes") &&
        strcmp(what, "models"))
        return fail_input("catalog: \"%s\": expected gpus, links, nodes or models", what);
    mp_catalog *cat = NULL;
    if ((rc = load_catalog(&a, &cat)))
        return rc;
    json_t *o = json_object();
    if (all || !strcmp(what, "gpus")) {
        json_t *arr = json_array();
        if (!a.json)
            printf("GPUs\n  %-20s %9s %10s %10s %10s %8s  %s\n", "key", "mem GiB", "HBM TB/s",
                   "bf16 TF/s", "fp8 TF/s", "TDP W", "scale-up");
        for (size_t i = 0; i < mp_catalog_gpu_count(cat); i++) {
            const mp_gpu *g = mp_catalog_gpu_at(cat, i);
            if (a.json)
                json_array_append_new(arr, json_pack("{s:s,s:s,s:f,s:f,s:f,s:f,s:f,s:s,s:s}", "key", g->key,
                    "name", g->name, "memory_bytes", g->memory_bytes, "mem_bw_Bps", g->mem_bw_Bps,
                    "bf16_flops_per_s", g->peak_flops_per_s[MP_DT_BF16], "fp8_flops_per_s",
                    g->peak_flops_per_s[MP_DT_FP8], "tdp_W", g->tdp_W, "scaleup_link", g->scaleup_link,
                    "source", g->source));
            else
                printf("  %-20s %9.1f %10.2f %10.0f %10.0f %8.0f  %s\n", g->key, g->memory_bytes / 1073741824.0,
                       g->mem_bw_Bps / 1e12, g->peak_flops_per_s[MP_DT_BF16] / 1e12,
                       g->peak_flops_per_s[MP_DT_FP8] / 1e12, g->tdp_W, g->scaleup_link);
        }
        json_object_set_new(o, "gpus", arr);
    }
    if (all || !strcmp(what, "links")) {
        static const char *kinds[] = {"scaleup", "scaleout", "wan"};
        json_t *arr = json_array();
        if (!a.json)
            printf("links\n  %-16s %-9s %10s %11s %6s %s\n", "key", "kind", "GB/s/dir", "latency us",
                   "eff", "in-network");
        for (size_t i = 0; i < mp_catalog_link_count(cat); i++) {
            const mp_link *l = mp_catalog_link_at(cat, i);
            if (a.json)
                json_array_append_new(arr, json_pack("{s:s,s:s,s:f,s:f,s:f,s:b,s:s}", "key", l->key,
                    "kind", kinds[l->kind], "bw_Bps", l->bw_Bps, "latency_s", l->latency_s,
                    "efficiency_frac", l->efficiency_frac, "in_network_reduction",
                    l->in_network_reduction, "source", l->source));
            else
                printf("  %-16s %-9s %10.1f %11.1f %6.2f %s\n", l->key, kinds[l->kind], l->bw_Bps / 1e9,
                       l->latency_s * 1e6, l->efficiency_frac, l->in_network_reduction ? "yes" : "no");
        }
        json_object_set_new(o, "links", arr);
    }
    if (all || !strcmp(what, "nodes")) {
        static const char *topos[] = {"switch", "mesh", "pcie"};
        json_t *arr = json_array();
        if (!a.json)
            printf("nodes\n  %-16s %-20s %5s %-14s %-7s %-12s %5s\n", "key", "gpu", "gpus", "scale-up",
                   "topo", "scale-out", "nics");
        for (size_t i = 0; i < mp_catalog_node_count(cat); i++) {
            const mp_node *nd = mp_catalog_node_at(cat, i);
            if (a.json)
                json_array_append_new(arr, json_pack("{s:s,s:s,s:i,s:s,s:s,s:s,s:i,s:s}", "key", nd->key,
                    "gpu", nd->gpu, "gpus_per_node", nd->gpus_per_node, "scaleup_link", nd->scaleup_link,
                    "scaleup_topology", topos[nd->scaleup_topology], "scaleout_link", nd->scaleout_link,
                    "nics_per_node", nd->nics_per_node, "source", nd->source));
            else
                printf("  %-16s %-20s %5d %-14s %-7s %-12s %5d\n", nd->key, nd->gpu, nd->gpus_per_node,
                       nd->scaleup_link, topos[nd->scaleup_topology], nd->scaleout_link, nd->nics_per_node);
        }
        json_object_set_new(o, "nodes", arr);
    }
    if (all || !strcmp(what, "models")) {
        json_t *arr = json_array();
        if (!a.json)
            printf("models\n  %-14s %9s %6s %7s %5s %4s %7s %4s %7s\n", "key", "params B", "layers",
                   "hidden", "heads", "kv", "ffn", "glu", "vocab");
        for (size_t i = 0; i < mp_catalog_model_count(cat); i++) {
            const mp_model *m = mp_catalog_model_at(cat, i);
            mp_param_count pc;
            mp_model_params(m, 1, &pc);
            if (a.json)
                json_array_append_new(arr, json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:b,s:I,s:s}", "key",
                    m->key, "name", m->name, "params", (json_int_t)pc.total, "layers",
                    (json_int_t)m->layers, "hidden", (json_int_t)m->hidden, "heads", (json_int_t)m->heads,
                    "kv_heads", (json_int_t)m->kv_heads, "ffn_hidden", (json_int_t)m->ffn_hidden, "glu",
                    m->glu, "vocab", (json_int_t)m->vocab, "source", m->source));
            else
                printf("  %-14s %9.2f %6lld %7lld %5lld %4lld %7lld %4s %7lld\n", m->key, pc.total / 1e9,
                       (long long)m->layers, (long long)m->hidden, (long long)m->heads,
                       (long long)m->kv_heads, (long long)m->ffn_hidden, m->glu ? "yes" : "no",
                       (long long)m->vocab);
        }
        json_object_set_new(o, "models", arr);
    }
    if (a.json) {
        char *s = json_dumps(o, JSON_INDENT(2));
        if (s)
            printf("%s\n", s);
        free(s);
    }
    json_decref(o);
    mp_catalog_destroy(cat);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_text, stderr);
        return EXIT_INPUT;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "predict"))
        return cmd_predict(argc - 2, argv + 2);
    if (!strcmp(cmd, "validate"))
        return cmd_validate(argc - 2, argv + 2);
    if (!strcmp(cmd, "catalog"))
        return cmd_catalog(argc - 2, argv + 2);
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("meshplan %s\n", MESHPLAN_VERSION);
        return 0;
    }
    fprintf(stderr, "meshplan: unknown command \"%s\"\n%s", cmd, usage_text);
    return EXIT_INPUT;
}
