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
