/* src/cli/cmd_lora.c — `meshplan lora`: many LoRA adapters on one base model, in closed form:
 * adapter size, the cache per replica that keeps the stated percentile of requests on resident
 * adapters, the KV pool it leaves, swap rate and cost, the segmented-GEMM cost per step. The
 * simulated figures (latency percentiles) come from `meshplan serve --adapters`. The model:
 * src/lora_serve/, docs/workflow.md. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "meshplan/lora.h"

static const cli_option lora_opts[] = {
    CLI_REQ("--model", "M", "the base model: " CLI_MODEL_HELP),
    CLI_REQ("--cluster", "C", "a catalog node (dgx-h100), a shipped cluster or a cluster file"),
    CLI_REQ("--gpus", "N", "GPUs; replicas = N / tp"),
    CLI_OPT("--plan", "PLAN", "the replica's inference plan keys (tp=, weights=, engine=, kv_frac=; default tp=1)"),
    CLI_REQ("--adapters", "N", "LoRA adapters of the base model"),
    CLI_OPT("--adapter-rank", "R", "their rank (default 16)"),
    CLI_OPT("--adapter-targets", "attn|all", "q, k, v, o (default) or every linear layer"),
    CLI_OPT("--adapter-popularity", "zipf:S", "request share of the i-th adapter ~ i^-S (default zipf:1.1), or uniform"),
    CLI_OPT("--adapter-cache", "K", "resident adapters per replica (default: the smallest with <= 1% misses)"),
    CLI_OPT("--rate", "R/s", "requests per second over all replicas (default 1/s)"),
    CLI_OPT("--batch", "B", "decode batch per replica for the per-step cost (default 64)"),
    CLI_OPT_CATALOG,
    CLI_OPT_JSON,
    CLI_END,
};

static int lora_run(int argc, char **argv);

const cli_command cli_cmd_lora = {
    "lora", "many LoRA adapters on one base model (closed form): cache for a percentile, KV/adapter "
    "memory split, swap rate and cost, segmented-GEMM step cost",
    NULL, 0, lora_opts, NULL, lora_run,
};

/* The adapter options shared with serve: --adapters, --adapter-rank, --adapter-targets,
 * --adapter-popularity, --adapter-cache into o. 0 or EXIT_INPUT. */
int cli_lora_opts(const cli_args *a, mp_lora_opts *o)
{
    long long v;
    int rc;
    mp_diag d = {0};
    mp_lora_opts_init(o);
    if ((rc = cli_parse_count("adapters", cli_opt(a, "--adapters"), 1, 1000000, &v)))
        return rc;
    o->adapters = v;
    if (cli_opt(a, "--adapter-rank") && (rc = cli_parse_count("adapter-rank", cli_opt(a, "--adapter-rank"), 0, 1024, &v)))
        return rc;
    if (cli_opt(a, "--adapter-rank"))
        o->rank = (int)v;
    if (cli_opt(a, "--adapter-cache") && (rc = cli_parse_count("adapter-cache", cli_opt(a, "--adapter-cache"), 1, 1000000, &v)))
        return rc;
    if (cli_opt(a, "--adapter-cache"))
        o->cache_adapters = v;
    const char *t = cli_opt(a, "--adapter-targets");
    if (t && strcmp(t, "attn") && strcmp(t, "all"))
        return cli_fail("adapter-targets = \"%s\": expected attn or all", t);
    o->targets = t && !strcmp(t, "all") ? MP_LORA_ALL : MP_LORA_ATTN;
    if (cli_opt(a, "--adapter-popularity") && mp_lora_popularity_parse(cli_opt(a, "--adapter-popularity"), o, &d) != MP_OK) {
        cli_print_diag(&d);
        return EXIT_INPUT;
    }
    return 0;
}

static int lora_run(int argc, char **argv)
{
    cli_args a;
    int rc = cli_parse_cmd(&cli_cmd_lora, argc, argv, &a);
    if (rc)
        return rc;
    mp_lora_opts o;
    if ((rc = cli_lora_opts(&a, &o)))
        return rc;
    long long gpus = 0, batch = 64;
    double rate = 1.0;
    mp_diag d = {0};
    if ((rc = cli_parse_count("gpus", cli_opt(&a, "--gpus"), 1, 1 << 20, &gpus)))
        return rc;
    if (cli_opt(&a, "--batch") && (rc = cli_parse_count("batch", cli_opt(&a, "--batch"), 1, 1 << 20, &batch)))
        return rc;
    if (cli_opt(&a, "--rate")) {
        const char *s = cli_opt(&a, "--rate");
        char num[48];
        size_t n = strcspn(s, "/");
        if (n == 0 || n >= sizeof num || (s[n] && strcmp(s + n, "/s")))
            return cli_fail("rate = \"%s\": expected requests per second, e.g. 30/s", s);
        memcpy(num, s, n);
        num[n] = '\0';
        if ((rc = cli_parse_real("rate", num, 0, 1e9, &rate)))
            return rc;
    }
    mp_infer_plan p;
    mp_infer_plan_init(&p);
    if (cli_opt(&a, "--plan") && mp_infer_plan_parse(cli_opt(&a, "--plan"), &p, &d) != MP_OK) {
        cli_print_diag(&d);
        return EXIT_INPUT;
    }
    if (gpus % ((long long)p.tp * p.pp) != 0)
        return cli_fail("gpus: expected a multiple of tp x pp of the plan%s", "");
    mp_catalog *cat = NULL;
    if ((rc = cli_load_catalog(&a, &cat)))
        return rc;
    mp_model m;
    mp_cluster cl;
    if ((rc = cli_load_model(cat, cli_opt(&a, "--model"), &m)) ||
        (rc = cli_load_cluster(cat, cli_opt(&a, "--cluster"), gpus, NULL, &cl))) {
        mp_catalog_destroy(cat);
        return rc;
    }
    mp_catalog_destroy(cat);
    int replicas = (int)(gpus / ((long long)p.tp * p.pp));
    mp_lora_result r;
    mp_status st = mp_lora_plan(&m, &cl, &p, &o, rate, replicas, batch, &r, &d);
    if (st != MP_OK) {
        cli_print_diag(&d);
        return cli_exit_for(st);
    }
    if (cli_flag(&a, "--json")) {
        json_t *j = json_pack("{s:s,s:I,s:i,s:i,s:f,s:f,s:f,s:f,s:f,s:I,s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}",
                              "model", m.key, "adapters", (json_int_t)o.adapters, "rank", o.rank, "replicas", replicas,
                              "adapter_params", r.adapter_params, "adapter_bytes", r.adapter_bytes, "adapter_bytes_per_gpu",
                              r.adapter_bytes_gpu, "host_Bps", r.host_Bps, "load_s", r.load_s, "cache_adapters",
                              (json_int_t)r.cache_adapters, "cache_for_slo", (json_int_t)r.cache_for_slo, "cache_max",
                              (json_int_t)r.cache_max, "cache_bytes_per_gpu", r.cache_bytes_gpu, "kv_pool_bytes_base",
                              r.kv_pool_bytes_base, "kv_pool_bytes", r.kv_pool_bytes, "kv_frac", r.kv_frac, "hit_frac",
                              r.hit_frac, "swaps_per_s_per_replica", r.swaps_per_s, "swap_busy_frac", r.swap_busy_frac,
                              "sgmv_s_per_step", r.sgmv_s_per_step, "distinct_adapters_per_step", r.distinct_per_step);
        return cli_print_json(j, JSON_INDENT(2) | JSON_REAL_PRECISION(9));
    }
    const double G = 1073741824.0;
    printf("%s: %lld LoRA adapters of rank %d (zipf %.2g) on %d replicas of %lld x %s\n", m.key, (long long)o.adapters,
           o.rank, o.zipf_s, replicas, (long long)p.tp * p.pp, cl.gpu.key);
    printf("adapter: %.2fM parameters, %.1f MiB (%.1f MiB per GPU); load %.3f ms over %.1f GB/s\n",
           r.adapter_params / 1e6, r.adapter_bytes / 1048576.0, r.adapter_bytes_gpu / 1048576.0, r.load_s * 1e3,
           r.host_Bps / 1e9);
    printf("cache: %lld resident per replica (%.2f GiB per GPU); %lld keep %.0f%% of requests resident, %lld fit "
           "%.0f%% of memory\n", (long long)r.cache_adapters, r.cache_bytes_gpu / G, (long long)r.cache_for_slo,
           o.slo_quantile * 100, (long long)r.cache_max, o.max_cache_frac * 100);
    printf("memory per GPU: KV pool %.2f GiB -> %.2f GiB with the cache (engine share %.3f)\n", r.kv_pool_bytes_base / G,
           r.kv_pool_bytes / G, r.kv_frac);
    printf("hit ratio %.4f (LRU, Che's approximation): %.3f swaps/s per replica, %.3f%% of its time loading\n",
           r.hit_frac, r.swaps_per_s, r.swap_busy_frac * 100);
    printf("segmented GEMMs: %.3f ms per decode step of %lld (%.1f distinct adapters)\n", r.sgmv_s_per_step * 1e3,
           batch, r.distinct_per_step);
    return 0;
}

/* ---- serve --adapters: the per-step adapter model in the serving simulator -------------------- */

struct cli_lora_serve {
    mp_lora_opts o;
    mp_lora_result r;
    mp_lora_sim *sim;
    int replicas;
    double kv_frac_base;
};

static double replica_hook(void *ctx, int replica, const int64_t *reqs, const int64_t *tokens, size_t n)
{
    return mp_lora_sim_step_s(((cli_lora_serve *)ctx)->sim, replica, reqs, tokens, n);
}

int cli_lora_serve_setup(const cli_args *a, cli_serve_job *j, cli_lora_serve **out)
{
    *out = NULL;
    if (!cli_opt(a, "--adapters")) {
        const char *dep[] = {"--adapter-rank", "--adapter-targets", "--adapter-popularity", "--adapter-cache"};
        for (int i = 0; i < 4; i++)
            if (cli_opt(a, dep[i]))
                return cli_fail("serve: %s needs --adapters", dep[i]);
        return 0;
    }
    if (j->o.disaggregate)
        return cli_fail("serve: --adapters with --disaggregate: not modelled (adapters on colocated replicas only)%s", "");
    cli_lora_serve *x = calloc(1, sizeof *x);
    if (!x)
        return EXIT_INTERNAL;
    int rc = cli_lora_opts(a, &x->o);
    mp_diag d = {0};
    const int64_t per = (int64_t)j->o.plan.tp * j->o.plan.pp;
    x->replicas = j->o.plan.dp > 0 ? j->o.plan.dp : (int)(j->cluster.num_gpus / (per > 0 ? per : 1));
    x->o.seed = j->o.seed;
    int64_t batch = j->o.max_seqs > 0 ? j->o.max_seqs : 64;
    mp_status st = rc ? MP_OK : mp_lora_plan(&j->model, &j->cluster, &j->o.plan, &x->o, j->o.rate_per_s, x->replicas,
                                              batch, &x->r, &d);
    if (!rc && st == MP_OK && !(x->r.kv_frac > 0)) {
        mp_diag_add(&d, "adapter-cache = %lld adapters of %.1f MiB per GPU: more than the engine's memory share",
                    (long long)x->r.cache_adapters, x->r.adapter_bytes_gpu / 1048576.0);
        st = MP_ERR_INPUT;
    }
    if (!rc && st == MP_OK)
        st = mp_lora_sim_create(&j->model, &j->cluster, &j->o.plan, &x->o, &x->r, x->replicas, &x->sim, &d);
    if (rc || st != MP_OK) {
        if (!rc) {
            cli_print_diag(&d);
            rc = cli_exit_for(st);
        }
        cli_lora_serve_free(x);
        return rc;
    }
    x->kv_frac_base = j->o.plan.kv_frac;
    j->o.plan.kv_frac = x->r.kv_frac; /* the cache comes out of the KV pool */
    j->o.replica_hook = replica_hook;
    j->o.hook_ctx = x;
    *out = x;
    return 0;
}

void cli_lora_serve_free(cli_lora_serve *x)
{
    if (x) {
        mp_lora_sim_destroy(x->sim);
        free(x);
    }
}

int cli_lora_serve_report(const cli_lora_serve *x, const mp_serve_result *res, char **json)
{
    mp_lora_counters c;
    mp_lora_sim_counters(x->sim, &c);
    const double nreq = res->requests > 0 ? (double)res->requests : 1.0, span = res->span_s > 0 ? res->span_s : 1.0;
    const double miss = (double)c.loads / nreq, swaps_per_s = (double)c.loads / (span + 1e-30);
    if (json) {
        json_t *o = json_loads(*json, 0, NULL);
        if (!o)
            return EXIT_INTERNAL;
        json_object_set_new(o, "adapters", json_pack(
            "{s:I,s:i,s:f,s:f,s:f,s:I,s:I,s:f,s:f,s:f,s:f,s:I,s:f,s:f,s:f,s:f,s:f}", "count", (json_int_t)x->o.adapters,
            "rank", x->o.rank, "zipf_s", x->o.zipf_s, "adapter_bytes_per_gpu", x->r.adapter_bytes_gpu, "load_s", x->r.load_s,
            "resident_per_replica", (json_int_t)x->r.cache_adapters, "cache_for_slo", (json_int_t)x->r.cache_for_slo,
            "cache_bytes_per_gpu", x->r.cache_bytes_gpu, "kv_pool_bytes_base", x->r.kv_pool_bytes_base,
            "kv_pool_bytes", x->r.kv_pool_bytes, "hit_frac_che", x->r.hit_frac, "swaps", (json_int_t)c.loads,
            "swaps_per_request", miss, "swaps_per_s", swaps_per_s, "swap_s", c.load_s, "sgmv_s_per_step",
            c.steps ? c.sgmv_s / (double)c.steps : 0.0, "swap_s_per_step", c.steps ? c.load_s / (double)c.steps : 0.0));
        free(*json);
        *json = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(9));
        json_decref(o);
        return *json ? 0 : EXIT_INTERNAL;
    }
    const double G = 1073741824.0;
    printf("adapters: %lld of rank %d (zipf %.2g), %.1f MiB per GPU each, load %.3f ms over %.1f GB/s\n",
           (long long)x->o.adapters, x->o.rank, x->o.zipf_s, x->r.adapter_bytes_gpu / 1048576.0, x->r.load_s * 1e3,
           x->r.host_Bps / 1e9);
    printf("  resident %lld per replica (%.2f GiB per GPU; %lld keep %.0f%% resident); KV pool %.2f -> %.2f GiB per GPU\n",
           (long long)x->r.cache_adapters, x->r.cache_bytes_gpu / G, (long long)x->r.cache_for_slo, x->o.slo_quantile * 100,
           x->r.kv_pool_bytes_base / G, x->r.kv_pool_bytes / G);
    printf("  swaps %lld (%.4f per request, Che's LRU %.4f; %.2f/s), %.3f s loading; segmented GEMMs %.3f ms per step\n",
           (long long)c.loads, miss, 1.0 - x->r.hit_frac, swaps_per_s, c.load_s,
           c.steps ? c.sgmv_s / (double)c.steps * 1e3 : 0.0);
    return 0;
}
