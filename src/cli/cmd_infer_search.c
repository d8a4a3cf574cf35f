/* src/cli/cmd_infer_search.c — `meshplan infer-search`: for each GPU type of --gpu, the serving
 * plan (TP / PP / EP, replicas, batch, precision) that is best by --objective within --slo, with
 * $ and J per million output tokens and why; then the pick across the types. The planner:
 * src/infer/search.c (include/meshplan/infer_search.h), docs/infer.md "infer-search". */
#define _POSIX_C_SOURCE 200809L /* strtok_r, clock_gettime: clang hides POSIX under -std=c11 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "meshplan/infer_search.h"

#define MAX_TYPES 16

static const cli_option infer_search_opts[] = {
    CLI_REQ("--model", "M", "the model: " CLI_MODEL_HELP),
    CLI_REQ("--gpu", "G[,G...]", "GPU types to compare, catalog keys (at most 16)"),
    CLI_OPT("--gpus", "N", "GPUs of each type (default 8)"),
    CLI_OPT_GPUS_PER_NODE,
    CLI_OPT_SCALE_OUT,
    CLI_OPT_CATALOG,
    CLI_OPT("--in", "TOKENS", "prompt tokens per request (default 1024)"),
    CLI_OPT("--out", "TOKENS", "output tokens per request (default 256)"),
    CLI_OPT("--slo", "SLO", "\"ttft_p99=2s,tpot_p99=50ms\" (units s, ms or us; either may be left out)"),
    CLI_OPT("--objective", "OBJ", "cost ($ per million output tokens, default), energy (J per token) or throughput"),
    CLI_OPT("--engine", "E", "engine profile: vllm (default), sglang, trtllm or hf"),
    CLI_OPT("--price", "G=USD[,...]", "rental price per GPU-hour of a type (default: the built-in ASSUMED table)"),
    CLI_OPT_JSON,
    CLI_END,
};

static int infer_search_run(int argc, char **argv);

const cli_command cli_cmd_infer_search = {
    "infer-search", "serving planner: best TP/PP/EP, replicas, batch and precision per GPU type "
    "under a TTFT/TPOT p99 SLO, by cost, energy or throughput",
    NULL, 0, infer_search_opts,
    "Percentiles come from the fixed-batch model in closed form: ttft_p99 = ceil(0.99 B)/B x the\n"
    "batch's TTFT, tpot_p99 = the decode step at context in + 0.99 out (docs/infer.md).\n",
    infer_search_run,
};

/* "2s", "50ms", "800us" or a bare number of seconds into *s; 0 or EXIT_INPUT. */
static int parse_time(const char *key, const char *v, double *s)
{
    char *e;
    double x = strtod(v, &e);
    double unit = !strcmp(e, "ms") ? 1e-3 : !strcmp(e, "us") ? 1e-6 : (!strcmp(e, "s") || !*e) ? 1.0 : 0.0;
    if (e == v || !(unit > 0) || !isfinite(x) || !(x > 0) || x > 1e6) {
        fprintf(stderr, "meshplan: infer-search: --slo %s = \"%s\": expected a positive time such as 2s, 50ms or 800us\n", key, v);
        return EXIT_INPUT;
    }
    *s = x * unit;
    return 0;
}

static int parse_slo(const char *text, mp_infer_search_opts *o)
{
    char buf[256];
    if (strlen(text) >= sizeof buf)
        return cli_fail("infer-search: --slo is too long (%s)", "at most 255 characters");
    snprintf(buf, sizeof buf, "%s", text);
    int seen_t = 0, seen_p = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq)
            return cli_fail("infer-search: --slo \"%s\": expected key=time (ttft_p99=2s,tpot_p99=50ms)", tok);
        *eq = '\0';
        int rc;
        const int t = !strcmp(tok, "ttft_p99"), p = !strcmp(tok, "tpot_p99");
        if ((t && seen_t++) || (p && seen_p++))
            return cli_fail("infer-search: --slo key \"%s\" given twice: expected each of ttft_p99 and tpot_p99 "
                            "at most once", tok);
        if (t)
            rc = parse_time(tok, eq + 1, &o->ttft_p99_s);
        else if (p)
            rc = parse_time(tok, eq + 1, &o->tpot_p99_s);
        else
            return cli_fail("infer-search: --slo key \"%s\": expected ttft_p99 or tpot_p99", tok);
        if (rc)
            return rc;
    }
    return 0;
}

/* The price of each GPU type of --gpu from --price "G=USD,..." into usd[0 .. n-1] (0: not
 * given, the built-in table). Every entry names a GPU of --gpu, once, with a price: a typo'd key
 * was silently left at the built-in price. */
static int parse_prices(const char *list, char (*gpus)[64], int n, double *usd)
{
    for (int i = 0; i < n; i++)
        usd[i] = 0.0;
    if (!list)
        return 0;
    char seen[MAX_TYPES] = {0};
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t l = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', l);
        if (!eq)
            return cli_fail("infer-search: --price \"%s\": expected G=USD[,G=USD...]", list);
        size_t kl = (size_t)(eq - p);
        int k = -1;
        for (int i = 0; i < n && k < 0; i++)
            if (strlen(gpus[i]) == kl && !strncmp(p, gpus[i], kl))
                k = i;
        if (k < 0) {
            fprintf(stderr, "meshplan: infer-search: --price \"%.*s\": \"%.*s\" is not a GPU of --gpu: expected one of",
                    (int)l, p, (int)kl, p);
            for (int i = 0; i < n; i++)
                fprintf(stderr, "%s %s", i ? "," : "", gpus[i]);
            fputc('\n', stderr);
            return EXIT_INPUT;
        }
        if (seen[k]++)
            return cli_fail("infer-search: --price: %s given twice: expected one price per GPU type", gpus[k]);
        char num[64];
        size_t vl = l - kl - 1;
        if (vl >= sizeof num)
            return cli_fail("infer-search: --price \"%s\": a price is too long", list);
        memcpy(num, eq + 1, vl);
        num[vl] = '\0';
        int rc = cli_parse_real("price", num, 1e-6, 1e6, &usd[k]);
        if (rc)
            return rc;
        p += l + (end ? 1 : 0);
    }
    return 0;
}

static int parse_opts(const cli_args *a, mp_infer_search_opts *o)
{
    long long v;
    int rc = 0;
    mp_infer_search_opts_init(o);
    if (cli_opt(a, "--in") && (rc = cli_parse_count("in", cli_opt(a, "--in"), 1, 1 << 24, &v)) == 0)
        o->in = v;
    if (!rc && cli_opt(a, "--out") && (rc = cli_parse_count("out", cli_opt(a, "--out"), 1, 1 << 24, &v)) == 0)
        o->out = v;
    if (!rc && cli_opt(a, "--slo"))
        rc = parse_slo(cli_opt(a, "--slo"), o);
    const char *obj = cli_opt(a, "--objective"), *eng = cli_opt(a, "--engine");
    if (!rc && obj) {
        o->objective = -1;
        for (int i = 0; i < MP_ISO_COUNT; i++)
            if (!strcmp(obj, mp_infer_objective_name((mp_infer_objective)i)))
                o->objective = i;
        if (o->objective < 0)
            rc = cli_fail("infer-search: --objective \"%s\": expected cost, energy or throughput", obj);
    }
    if (!rc && eng) {
        o->engine = -1;
        for (int i = 0; i < MP_ENGINE_COUNT; i++)
            if (!strcmp(eng, mp_engine_name((mp_engine_id)i)))
                o->engine = i;
        if (o->engine < 0)
            rc = cli_fail("infer-search: --engine \"%s\": expected vllm, sglang, trtllm or hf", eng);
    }
    return rc;
}

static json_t *candidate_json(const mp_infer_candidate *c)
{
    const mp_infer_plan *p = &c->r.plan;
    char plan[512];
    mp_infer_plan_format(p, plan, sizeof plan);
    return json_pack("{s:s, s:i, s:i, s:i, s:i, s:I, s:s, s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:s, s:s}",
                     "plan", plan, "tp", p->tp, "pp", p->pp, "ep", p->ep, "replicas", p->dp,
                     "batch", (json_int_t)p->batch, "weights", mp_infer_weights_name((mp_infer_weights)p->weights),
                     "kv", mp_infer_kv_name((mp_infer_kv)p->kv), "ttft_p99_s", c->ttft_p99_s,
                     "tpot_p99_s", c->tpot_p99_s, "ttft_s", c->r.ttft_s, "tpot_s", c->r.tpot_s,
                     "output_tokens_per_s", c->r.output_tokens_per_s, "usd_per_mtoken", c->usd_per_mtoken,
                     "j_per_mtoken", c->j_per_mtoken, "power_w", c->r.power_w,
                     "decode_bound", c->r.decode.bound, "prefill_bound", c->r.prefill.bound);
}

static void text_row(const char *gpu, const mp_infer_search_result *r)
{
    if (!r->found) {
        printf("%-18s %s\n", gpu, r->why);
        return;
    }
    const mp_infer_candidate *c = &r->best;
    const mp_infer_plan *p = &c->r.plan;
    char split[48];
    snprintf(split, sizeof split, "tp%d pp%d ep%d x%d", p->tp, p->pp, p->ep, p->dp);
    printf("%-18s %-16s %-5s %6lld %10.0f %9.3f %9.2f %9.3f %10.0f\n", gpu, split,
           mp_infer_weights_name((mp_infer_weights)p->weights), (long long)p->batch,
           c->r.output_tokens_per_s, c->ttft_p99_s, c->tpot_p99_s * 1e3, c->usd_per_mtoken, c->j_per_mtoken);
}

/* Index of the best type by the objective, or -1. */
static int pick(const mp_infer_search_result *res, int n)
{
    int best = -1;
    for (int i = 0; i < n; i++)
        if (res[i].found && (best < 0 || res[i].best.objective < res[best].best.objective))
            best = i;
    return best;
}

static int report(const mp_model *m, const mp_infer_search_opts *o, char gpus[][64], int n,
                  const mp_infer_search_result *res, long long ngpus, int json)
{
    int b = pick(res, n);
    const char *obj = mp_infer_objective_name((mp_infer_objective)o->objective);
    if (json) {
        json_t *arr = json_array();
        for (int i = 0; i < n; i++) {
            json_t *t = json_pack("{s:s, s:b, s:f, s:I, s:I, s:s}", "gpu", gpus[i], "found", res[i].found,
                                  "price_gpu_hour_usd", res[i].price_gpu_hour_usd, "evaluated",
                                  (json_int_t)res[i].evaluated, "feasible", (json_int_t)res[i].feasible, "why", res[i].why);
            if (t && res[i].found)
                json_object_set_new(t, "best", candidate_json(&res[i].best));
            if (t && res[i].found_runner_up)
                json_object_set_new(t, "runner_up", candidate_json(&res[i].runner_up));
            json_array_append_new(arr, t);
        }
        json_t *root = json_pack("{s:s, s:I, s:I, s:I, s:f, s:f, s:s, s:o, s:s?}", "model", m->key,
                                 "gpus", (json_int_t)ngpus, "in", (json_int_t)o->in, "out", (json_int_t)o->out,
                                 "ttft_p99_slo_s", o->ttft_p99_s, "tpot_p99_slo_s", o->tpot_p99_s, "objective", obj,
                                 "per_gpu", arr, "pick", b >= 0 ? gpus[b] : NULL);
        return cli_print_json(root, JSON_INDENT(2) | JSON_REAL_PRECISION(9));
    }
    printf("%s on %lld GPUs of each type, in %lld / out %lld tokens, objective %s\n", m->key, ngpus,
           (long long)o->in, (long long)o->out, obj);
    printf("%-18s %-16s %-5s %6s %10s %9s %9s %9s %10s\n", "gpu", "split", "wts", "batch", "tok/s",
           "ttft_p99s", "tpot_p99ms", "$/Mtok", "J/Mtok");
    for (int i = 0; i < n; i++)
        text_row(gpus[i], &res[i]);
    for (int i = 0; i < n; i++)
        if (res[i].found)
            printf("\n%s ($%.2f per GPU-hour): %s\n", gpus[i], res[i].price_gpu_hour_usd, res[i].why);
    if (b >= 0) {
        printf("\npick: %s, %s %.4g", gpus[b], obj, fabs(res[b].best.objective));
        int second = -1;
        for (int i = 0; i < n; i++)
            if (i != b && res[i].found && (second < 0 || res[i].best.objective < res[second].best.objective))
                second = i;
        if (second >= 0)
            printf(" (next: %s at %.4g, %.2fx)", gpus[second], fabs(res[second].best.objective),
                   o->objective == MP_ISO_THROUGHPUT ? res[b].best.objective / res[second].best.objective
                                                     : res[second].best.objective / res[b].best.objective);
        printf("\n");
    } else {
        printf("\npick: none: no GPU type serves %s within memory and the SLO\n", m->key);
    }
    printf("assumed: percentiles of a fixed batch (closed form, docs/infer.md); GPU rental prices %s; "
           "energy of the GPUs only\n", "as listed (ASSUMED table unless --price)");
    return 0;
}

static int infer_search_run(int argc, char **argv)
{
    cli_args a;
    int rc = cli_parse_cmd(&cli_cmd_infer_search, argc, argv, &a);
    if (rc)
        return rc;
    mp_infer_search_opts o;
    long long ngpus = 8, gpn = 0;
    if ((rc = parse_opts(&a, &o)))
        return rc;
    if (cli_opt(&a, "--gpus") && (rc = cli_parse_count("gpus", cli_opt(&a, "--gpus"), 1, 1 << 20, &ngpus)))
        return rc;
    if (cli_opt(&a, "--gpus-per-node") &&
        (rc = cli_parse_count("gpus-per-node", cli_opt(&a, "--gpus-per-node"), 1, 1 << 20, &gpn)))
        return rc;
    char gpus[MAX_TYPES][64];
    int n = 0;
    const char *list = cli_opt(&a, "--gpu");
    for (const char *p = list; *p && n <= MAX_TYPES;) {
        size_t l = strcspn(p, ",");
        if (l == 0 || l >= sizeof gpus[0] || n == MAX_TYPES)
            return cli_fail("infer-search: --gpu \"%s\": expected 1 to 16 comma-separated GPU keys", list);
        memcpy(gpus[n], p, l);
        gpus[n][l] = '\0';
        for (int i = 0; i < n; i++)
            if (!strcmp(gpus[i], gpus[n]))
                return fprintf(stderr, "meshplan: infer-search: --gpu \"%s\": %s given twice: expected each GPU "
                               "type once\n", list, gpus[n]), EXIT_INPUT;
        n++;
        p += l + (p[l] == ',');
    }
    if (n == 0)
        return cli_fail("infer-search: --gpu \"%s\": expected at least one GPU key", list);
    double usd[MAX_TYPES];
    if ((rc = parse_prices(cli_opt(&a, "--price"), gpus, n, usd)))
        return rc;
    mp_catalog *cat = NULL;
    if ((rc = cli_load_catalog(&a, &cat)))
        return rc;
    mp_model m;
    mp_infer_search_result *res = calloc((size_t)n, sizeof *res);
    if (!res || (rc = cli_load_model(cat, cli_opt(&a, "--model"), &m))) {
        mp_catalog_destroy(cat);
        free(res);
        return rc ? rc : EXIT_INTERNAL;
    }
    for (int i = 0; i < n && !rc; i++) {
        mp_cluster cl;
        mp_diag d = {0};
        mp_infer_search_opts oi = o;
        oi.price_gpu_hour_usd = usd[i];
        mp_status st = mp_cluster_from_catalog(cat, gpus[i], ngpus, (int)gpn, cli_opt(&a, "--scale-out"), &cl, &d);
        if (st == MP_OK)
            st = mp_infer_search(&m, &cl, &oi, &res[i], &d);
        if (st != MP_OK) {
            fprintf(stderr, "meshplan: infer-search: %s:\n", gpus[i]);
            cli_print_diag(&d);
            rc = cli_exit_for(st);
        }
    }
    mp_catalog_destroy(cat);
    if (!rc)
        rc = report(&m, &o, gpus, n, res, ngpus, cli_flag(&a, "--json"));
    free(res);
    return rc;
}
