/* src/lora_serve/lora.c — multi-LoRA serving (include/meshplan/lora.h): adapter sizes, Zipf
 * popularity, Che's LRU hit ratio, the cache that meets a percentile, the KV pool it leaves, and
 * the per-step model (LRU caches per replica, PCIe loads, segmented-GEMM cost) the serving
 * simulator calls. Sizes: N <= 10^6 adapters, N x replicas <= 2^26 residency entries. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshplan/lora.h"

void mp_lora_opts_init(mp_lora_opts *o)
{
    memset(o, 0, sizeof *o);
    o->adapters = 1;
    o->rank = 16;
    o->targets = MP_LORA_ATTN;
    o->zipf_s = 1.1;
    o->slo_quantile = 0.99;
    o->max_cache_frac = 0.1;
    /* a host-to-device copy costs ~10 us of launch and synchronisation (CUDA cudaMemcpyAsync
     * latency, NVIDIA CUDA C++ Best Practices Guide "Data Transfer Between Host and Device");
     * per adapter several tensors (A and B of each target and layer), so 50 us in all */
    o->load_latency_s = 50e-6;
    /* a kernel's floor on H100-class GPUs: ~2 us (launch and tail of a small grid; Punica's
     * SGMV at batch 1 runs in a few us per layer, Chen et al. 2023 Fig. 7) */
    o->kernel_s = 2e-6;
    o->seed = 1;
}

mp_status mp_lora_popularity_parse(const char *text, mp_lora_opts *o, mp_diag *diag)
{
    char *end = NULL;
    double v = -1;
    if (text && strcmp(text, "uniform") == 0)
        v = 0;
    else if (text && strncmp(text, "zipf:", 5) == 0 && text[5])
        v = strtod(text + 5, &end);
    if (!(v >= 0 && v <= 10) || (end && *end)) {
        mp_diag_add(diag, "adapter-popularity = \"%s\": expected zipf:S with S in [0, 10] (e.g. zipf:1.1) or uniform",
                    text ? text : "");
        return MP_ERR_INPUT;
    }
    o->zipf_s = v;
    return MP_OK;
}

static int modules(int targets, const mp_model *m)
{
    return targets == MP_LORA_ALL ? 4 + (m->glu ? 3 : 2) : 4;
}

mp_status mp_lora_adapter_size(const mp_model *m, int rank, int targets, int tp, double *params,
                               double *bytes_gpu, mp_diag *diag)
{
    if (rank < 0 || rank > 1024 || tp < 1 || (targets != MP_LORA_ATTN && targets != MP_LORA_ALL)) {
        mp_diag_add(diag, "adapter rank = %d (expected 0 to 1024), tp = %d (>= 1), targets = %d", rank, tp, targets);
        return MP_ERR_INPUT;
    }
    const double h = (double)m->hidden, q = (double)(m->heads * m->head_dim),
                 kv = (double)(m->kv_heads * m->head_dim), f = (double)m->ffn_hidden;
    /* LoRA (Hu et al. 2021, eq. 3): W + B A with A r x d_in and B d_out x r, per target matrix:
     * q: h -> heads x head_dim, k and v: h -> kv_heads x head_dim, o: back to h */
    double per_layer = (h + q) + 2.0 * (h + kv) + (q + h);
    if (targets == MP_LORA_ALL) /* the MLP: up (and gate when gated) h -> f, down f -> h */
        per_layer += (m->glu ? 2.0 : 1.0) * (h + f) + (f + h);
    *params = (double)rank * per_layer * (double)m->layers;
    /* 16-bit adapters; under TP each GPU holds 1/tp (S-LoRA, Sheng et al. 2024, Sec. 6: A or B
     * is split the way the base weight it rides on is) */
    *bytes_gpu = *params * 2.0 / (double)tp;
    return MP_OK;
}

double mp_lora_che_hit(const double *p, int64_t n, int64_t k)
{
    if (k >= n)
        return 1.0;
    if (k <= 0)
        return 0.0;
    double lo = 0, hi = 1;
    for (;;) { /* sum_i (1 - exp(-p_i T)) grows from 0 to n: bracket k */
        double s = 0;
        for (int64_t i = 0; i < n; i++)
            s += -expm1(-p[i] * hi);
        if (s >= (double)k || hi > 1e30)
            break;
        lo = hi;
        hi *= 4;
    }
    for (int it = 0; it < 80; it++) {
        double T = 0.5 * (lo + hi), s = 0;
        for (int64_t i = 0; i < n; i++)
            s += -expm1(-p[i] * T);
        if (s < (double)k)
            lo = T;
        else
            hi = T;
    }
    double T = 0.5 * (lo + hi), hit = 0;
    for (int64_t i = 0; i < n; i++)
        hit += p[i] * -expm1(-p[i] * T);
    return hit;
}

/* Zipf probabilities p_i = i^-s / H(N, s), i = 1..N (most popular first). */
static double *zipf(int64_t n, double s)
{
    double *p = malloc((size_t)n * sizeof *p), sum = 0;
    if (!p)
        return NULL;
    for (int64_t i = 0; i < n; i++)
        sum += (p[i] = pow((double)(i + 1), -s));
    for (int64_t i = 0; i < n; i++)
        p[i] /= sum;
    return p;
}

static int bad_opts(const mp_lora_opts *o, mp_diag *d)
{
    int bad = 0;
    if (o->adapters < 1 || o->adapters > 1000000) {
        mp_diag_add(d, "adapters = %lld: expected 1 to 1000000", (long long)o->adapters);
        bad++;
    }
    if (o->rank < 0 || o->rank > 1024) {
        mp_diag_add(d, "adapter-rank = %d: expected 0 to 1024", o->rank);
        bad++;
    }
    if (!(o->zipf_s >= 0 && o->zipf_s <= 10)) {
        mp_diag_add(d, "adapter-popularity zipf exponent = %g: expected 0 to 10", o->zipf_s);
        bad++;
    }
    if (o->cache_adapters < 0 || !(o->slo_quantile > 0 && o->slo_quantile < 1) ||
        !(o->max_cache_frac > 0 && o->max_cache_frac < 1) || !(o->host_Bps >= 0) ||
        !(o->load_latency_s >= 0) || !(o->kernel_s >= 0)) {
        mp_diag_add(d, "adapter cache = %lld (>= 0), quantile = %g ((0,1)), max cache share = %g ((0,1)), "
                    "host bandwidth, load latency, kernel floor (>= 0): out of range",
                    (long long)o->cache_adapters, o->slo_quantile, o->max_cache_frac);
        bad++;
    }
    return bad;
}

/* The roofline of one step's segmented GEMMs on one GPU (Punica SGMV, Chen et al. 2023 Sec. 4:
 * shrink x A then expand x B, per adapter segment): 2 x tokens x params / tp FLOPs, each distinct
 * adapter's A and B read once; at least one shrink and one expand kernel per target and layer. */
static double sgmv_s(const mp_model *m, const mp_cluster *c, const mp_engine_profile *e, int rank, int targets,
                     double params, double bytes_gpu, int tp, double tokens, double distinct, double kernel_s)
{
    if (rank == 0 || tokens <= 0 || distinct <= 0)
        return 0.0;
    double peak = c->gpu.peak_flops_per_s[MP_DT_BF16] * (e->gemm_frac > 0 ? e->gemm_frac : 1.0);
    double bw = (c->gpu.measured_mem_bw_Bps > 0 ? c->gpu.measured_mem_bw_Bps : c->gpu.mem_bw_Bps) *
                (e->mem_frac > 0 ? e->mem_frac : 1.0);
    double flop = 2.0 * tokens * params / (double)tp, bytes = distinct * bytes_gpu;
    double t = fmax(peak > 0 ? flop / peak : 0.0, bw > 0 ? bytes / bw : 0.0);
    return t + 2.0 * modules(targets, m) * (double)m->layers * kernel_s;
}

static double host_bw(const mp_cluster *c, const mp_lora_opts *o)
{
    /* PCIe x16: 5.0 (32 GT/s) on fp8-capable GPUs (Hopper and later), else 4.0 (16 GT/s), 128b/130b
     * coding (PCI-SIG base specifications 4.0, 5.0), as src/serve prices swap */
    double lane_GTs = c->gpu.peak_flops_per_s[MP_DT_FP8] > 0 ? 32.0 : 16.0;
    return o->host_Bps > 0 ? o->host_Bps : lane_GTs * 1e9 * 16.0 * 128.0 / 130.0 / 8.0;
}

static mp_status replica_infer(const mp_model *m, const mp_cluster *c, const mp_infer_plan *p, double kv_frac,
                               mp_infer_result *r, mp_diag *d)
{
    mp_cluster pc = *c;
    mp_infer_plan q = *p;
    int64_t g = (int64_t)p->tp * p->pp;
    pc.num_gpus = g;
    if (g < pc.gpus_per_node) { /* as src/rl/sync.c mp_rl_pool */
        pc.gpus_per_node = (int)g;
        pc.tier[0].domain_gpus = g;
    }
    q.dp = 1;
    q.batch = 1;
    q.kv_frac = kv_frac;
    return mp_infer_estimate(m, &pc, &q, r, d);
}

/* The smallest cache whose LRU miss ratio is <= 1 - q (the hit ratio grows with the cache). */
static int64_t cache_for(const double *p, int64_t n, double q)
{
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (1.0 - mp_lora_che_hit(p, n, mid) <= 1.0 - q + 1e-12)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

mp_status mp_lora_plan(const mp_model *m, const mp_cluster *c, const mp_infer_plan *p,
                       const mp_lora_opts *o, double rate_per_s, int replicas, int64_t batch,
                       mp_lora_result *out, mp_diag *diag)
{
    memset(out, 0, sizeof *out);
    if (bad_opts(o, diag) || !(rate_per_s >= 0) || replicas < 1 || batch < 1) {
        if (!(rate_per_s >= 0) || replicas < 1 || batch < 1)
            mp_diag_add(diag, "rate = %g (>= 0), replicas = %d (>= 1), batch = %lld (>= 1)", rate_per_s, replicas,
                        (long long)batch);
        return MP_ERR_INPUT;
    }
    mp_status st = mp_lora_adapter_size(m, o->rank, o->targets, p->tp, &out->adapter_params, &out->adapter_bytes_gpu, diag);
    if (st != MP_OK)
        return st;
    out->adapter_bytes = out->adapter_params * 2.0;
    out->host_Bps = host_bw(c, o);
    out->load_s = out->adapter_bytes_gpu / out->host_Bps + o->load_latency_s;
    double *pz = zipf(o->adapters, o->zipf_s);
    if (!pz)
        return MP_ERR_NOMEM;
    mp_infer_result base;
    if ((st = replica_infer(m, c, p, p->kv_frac, &base, diag)) != MP_OK) {
        free(pz);
        return st;
    }
    const double cap = base.capacity_bytes, frac0 = p->kv_frac > 0 ? p->kv_frac : base.engine.kv_frac;
    out->cache_for_slo = cache_for(pz, o->adapters, o->slo_quantile);
    out->cache_max = out->adapter_bytes_gpu > 0 ? (int64_t)floor(o->max_cache_frac * cap / out->adapter_bytes_gpu)
                                                : o->adapters;
    if (out->cache_max > o->adapters)
        out->cache_max = o->adapters;
    int64_t k = o->cache_adapters > 0 ? o->cache_adapters : out->cache_for_slo;
    if (o->cache_adapters == 0 && k > out->cache_max)
        k = out->cache_max;
    if (k < 1)
        k = 1; /* a request cannot run without its adapter resident */
    if (k > o->adapters)
        k = o->adapters;
    out->cache_adapters = k;
    out->cache_bytes_gpu = (double)k * out->adapter_bytes_gpu;
    /* the cache comes out of the engine's memory share, so out of the KV pool (vLLM reserves
     * max_loras slots before it sizes the KV cache; S-LoRA's unified pool shares the same pages) */
    out->kv_frac = frac0 - out->cache_bytes_gpu / cap;
    out->kv_pool_bytes_base = base.kv_pool_bytes;
    mp_infer_result with;
    if (out->kv_frac > 0 && (st = replica_infer(m, c, p, out->kv_frac, &with, diag)) == MP_OK)
        out->kv_pool_bytes = with.kv_pool_bytes > 0 ? with.kv_pool_bytes : 0;
    if (st != MP_OK) {
        free(pz);
        return st;
    }
    out->hit_frac = mp_lora_che_hit(pz, o->adapters, k);
    /* swaps: each request's adapter is looked up once on admission (a miss loads it) */
    out->swaps_per_s = rate_per_s / replicas * (1.0 - out->hit_frac);
    out->swap_busy_frac = out->swaps_per_s * out->load_s;
    double distinct = 0;
    for (int64_t i = 0; i < o->adapters; i++) /* E[distinct among batch draws] */
        distinct += -expm1((double)batch * log1p(-fmin(pz[i], 1.0 - 1e-16)));
    out->distinct_per_step = o->adapters == 1 ? 1.0 : distinct;
    out->sgmv_s_per_step = sgmv_s(m, c, &base.engine, o->rank, o->targets, out->adapter_params, out->adapter_bytes_gpu,
                                  p->tp, (double)batch, out->distinct_per_step, o->kernel_s);
    free(pz);
    return MP_OK;
}

struct mp_lora_sim {
    mp_model m;
    mp_cluster c;
    mp_engine_profile e;
    mp_lora_opts o;
    int tp, replicas;
    int64_t n, k;
    double params, bytes_gpu, load_s;
    double *cdf;            /* n */
    int32_t *slot_of;       /* replicas x n: the slot holding adapter a, -1 none */
    int64_t *slot_adapter;  /* replicas x k */
    int64_t *slot_used;     /* replicas x k: the step it was last used in */
    int64_t *seen;          /* n: the step an adapter was last counted in (distinct per step) */
    int64_t step;
    mp_lora_counters cnt;
};

void mp_lora_sim_destroy(mp_lora_sim *s)
{
    if (!s)
        return;
    free(s->cdf);
    free(s->slot_of);
    free(s->slot_adapter);
    free(s->slot_used);
    free(s->seen);
    free(s);
}

mp_status mp_lora_sim_create(const mp_model *m, const mp_cluster *c, const mp_infer_plan *p,
                             const mp_lora_opts *o, const mp_lora_result *r, int replicas,
                             mp_lora_sim **out, mp_diag *diag)
{
    *out = NULL;
    if (bad_opts(o, diag) || replicas < 1 || r->cache_adapters < 1 ||
        (double)o->adapters * replicas > (double)(1 << 26)) {
        mp_diag_add(diag, "adapters x replicas = %lld x %d: expected at most 2^26, a cache of >= 1", (long long)o->adapters,
                    replicas);
        return MP_ERR_INPUT;
    }
    mp_lora_sim *s = calloc(1, sizeof *s);
    if (!s)
        return MP_ERR_NOMEM;
    s->m = *m;
    s->c = *c;
    s->o = *o;
    s->tp = p->tp;
    s->replicas = replicas;
    s->n = o->adapters;
    s->k = r->cache_adapters;
    s->params = r->adapter_params;
    s->bytes_gpu = r->adapter_bytes_gpu;
    s->load_s = r->load_s;
    mp_status st = mp_engine_profile_get((mp_engine_id)p->engine, &s->e, diag);
    double *pz = zipf(s->n, o->zipf_s);
    s->cdf = pz;
    s->slot_of = malloc((size_t)(s->n * replicas) * sizeof *s->slot_of);
    s->slot_adapter = malloc((size_t)(s->k * replicas) * sizeof *s->slot_adapter);
    s->slot_used = calloc((size_t)(s->k * replicas), sizeof *s->slot_used);
    s->seen = malloc((size_t)s->n * sizeof *s->seen);
    if (st != MP_OK || !pz || !s->slot_of || !s->slot_adapter || !s->slot_used || !s->seen) {
        mp_lora_sim_destroy(s);
        return st != MP_OK ? st : MP_ERR_NOMEM;
    }
    for (int64_t i = 1; i < s->n; i++)
        pz[i] += pz[i - 1];
    for (int64_t i = 0; i < s->n; i++)
        s->seen[i] = -1;
    for (int rep = 0; rep < replicas; rep++) { /* warm: the k most popular resident */
        for (int64_t a = 0; a < s->n; a++)
            s->slot_of[(int64_t)rep * s->n + a] = a < s->k ? (int32_t)a : -1;
        for (int64_t j = 0; j < s->k; j++) { /* the least popular is the least recently used */
            s->slot_adapter[(int64_t)rep * s->k + j] = j;
            s->slot_used[(int64_t)rep * s->k + j] = -j;
        }
    }
    *out = s;
    return MP_OK;
}

/* splitmix64 (Steele, Lea, Flood 2014): a 64-bit hash of (seed, request). */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

int64_t mp_lora_sim_adapter(const mp_lora_sim *s, int64_t request)
{
    double u = (double)(mix(s->o.seed * 0x100000001b3ULL ^ (uint64_t)request) >> 11) * 0x1.0p-53;
    int64_t lo = 0, hi = s->n - 1;
    while (lo < hi) { /* the first adapter whose CDF exceeds u */
        int64_t mid = lo + (hi - lo) / 2;
        if (s->cdf[mid] > u)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

double mp_lora_sim_step_s(mp_lora_sim *s, int replica, const int64_t *reqs, const int64_t *tokens,
                          size_t n)
{
    if (replica < 0 || replica >= s->replicas || n == 0)
        return 0.0;
    s->step++;
    s->cnt.steps++;
    int32_t *slot_of = s->slot_of + (int64_t)replica * s->n;
    int64_t *sa = s->slot_adapter + (int64_t)replica * s->k, *su = s->slot_used + (int64_t)replica * s->k;
    double load = 0, toks = 0, distinct = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t a = mp_lora_sim_adapter(s, reqs[i]);
        toks += (double)tokens[i];
        s->cnt.lookups++;
        if (s->seen[a] != s->step) {
            s->seen[a] = s->step;
            distinct += 1;
        }
        int32_t j = slot_of[a];
        if (j >= 0) {
            s->cnt.hits++;
        } else { /* evict the least recently used slot and load a over the host link */
            int64_t v = 0;
            for (int64_t q = 1; q < s->k; q++)
                if (su[q] < su[v])
                    v = q;
            slot_of[sa[v]] = -1;
            sa[v] = a;
            slot_of[a] = j = (int32_t)v;
            load += s->load_s;
            s->cnt.loads++;
        }
        su[j] = s->step;
    }
    double g = sgmv_s(&s->m, &s->c, &s->e, s->o.rank, s->o.targets, s->params, s->bytes_gpu, s->tp, toks, distinct,
                      s->o.kernel_s);
    s->cnt.load_s += load;
    s->cnt.sgmv_s += g;
    return load + g;
}

void mp_lora_sim_counters(const mp_lora_sim *s, mp_lora_counters *out)
{
    *out = s->cnt;
}
