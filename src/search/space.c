/* src/search/space.c — the search space: degree shapes, the axes below them, and the walk.
 *
 * Plans are built directly as resolved mp_plan structs. The rules are those of mp_plan_resolve
 * (src/plan/plan.c), applied once per degree shape instead of per plan; below a shape only valid
 * values are generated (vpp <= (layers+2)/pp, mb | gb/dp, hsdp | dp; for MoE models ep | experts,
 * etp | moe_ffn_hidden and etp*ep | tp*cp*dp), so every plan visited is one mp_plan_resolve
 * accepts unchanged, and every plan it accepts for the job is visited (tests/test_search.c checks
 * both on a grid).
 *
 * Loop order below a shape, outermost first: ZeRO/HSDP sharding, expert layout (ep, etp), vpp,
 * then sp, recompute, mb, and innermost the communication variants (CP algorithm, rank order).
 * The first three come first because the model states
 * (weights, gradients, optimizer, buffers) depend only on the shape and on them (vpp through the
 * layers an MoE model's interleaved chunks put on a stage): when the first plan of such a subtree
 * already exceeds the GPU memory with its states alone, so does every plan of the subtree. mb
 * comes last because memory is non-decreasing in mb (next to sp_walk): once one micro-batch size
 * does not fit, larger ones do not either. The CP algorithm and the rank order are innermost:
 * they change no memory and no compute, only how and where groups communicate, so these variants
 * follow the line's head (ring, default order), whose memory verdict and lower bound on the step
 * they share (src/search/search.c).
 *
 * Sizes: a few hundred shapes per GPU count; up to millions of plans (Llama 3 405B on 16,384
 * GPUs: 462 shapes, 6.0 million plans; 120 million with every rank order).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search_internal.h"

/* Divisors of n (>= 1) in ascending order; returns how many (<= cap). Trial division up to
 * sqrt(n): n <= 2^30 takes at most 32768 steps. */
static int divisors(int64_t n, int64_t *out, int cap)
{
    int nlo = 0, nhi = 0;
    int64_t hi[SP_MAX_DIVISORS];
    for (int64_t d = 1; d * d <= n; d++) {
        if (n % d)
            continue;
        if (nlo < cap)
            out[nlo++] = d;
        if (d != n / d && nhi < SP_MAX_DIVISORS)
            hi[nhi++] = n / d;
    }
    for (int i = nhi - 1; i >= 0 && nlo < cap; i--)
        out[nlo++] = hi[i];
    return nlo;
}

mp_status sp_space_init(sp_space *s, const mp_model *m, const mp_search_opts *o, mp_diag *diag)
{
    memset(s, 0, sizeof *s);
    s->m = m;
    s->o = o;
    const mp_plan *pin = &o->pin;
    int bad = 0;
#define FAIL(...) do { mp_diag_add(diag, __VA_ARGS__); bad++; } while (0)
    if (pin->gb < 1)
        FAIL("search: gb = %lld: expected the global batch in sequences, >= 1", (long long)pin->gb);
    if (pin->seq < 0)
        FAIL("search: seq = %lld: expected >= 1 (0 = the model's %lld)", (long long)pin->seq,
             (long long)m->seq_len);
    if (pin->ep > 1 && m->moe_experts == 0)
        FAIL("search: ep = %lld pinned: the model has no experts", (long long)pin->ep);
    if (pin->etp > 1 && m->moe_experts == 0)
        FAIL("search: etp = %lld pinned: the model has no experts", (long long)pin->etp);
    if ((int)pin->cp_algo < 0 || pin->cp_algo > MP_CP_ALGO_COUNT)
        FAIL("search: cp_algo = %d: expected ring, allgather or free", (int)pin->cp_algo);
    if (pin->fp8_comm && pin->precision != MP_DT_FP8)
        FAIL("search: fp8_comm = 1 needs precision fp8 (got %s)", mp_dtype_name(pin->precision));
    if ((int)pin->recompute < 0 || pin->recompute > MP_RC_COUNT)
        FAIL("search: recompute = %d: expected none, selective, full, op, mlp or free", (int)pin->recompute);
    if (pin->zero < -1 || pin->zero > 3)
        FAIL("search: zero = %d: expected 0..3 or free", pin->zero);
    if (pin->hsdp && pin->zero >= 0 && pin->zero != 3)
        FAIL("search: hsdp = %lld pinned with zero = %d: HSDP shards parameters (zero = 3)",
             (long long)pin->hsdp, pin->zero);
    if (pin->fsdp == 2 && pin->zero >= 0 && pin->zero != 3)
        FAIL("search: fsdp = 2 pinned with zero = %d: per-parameter sharding is ZeRO-3", pin->zero);
    if (pin->sp < -1 || pin->sp > 1)
        FAIL("search: sp = %d: expected 0, 1 or free", pin->sp);
    if ((int)pin->precision < 0 || pin->precision >= MP_DT_COUNT)
        FAIL("search: precision = %d: expected bf16, fp16, fp8, tf32 or fp32", (int)pin->precision);
    if (pin->finetune == MP_FT_QLORA && pin->precision != MP_DT_BF16 && pin->precision != MP_DT_FP16)
        FAIL("search: finetune = qlora needs precision bf16 or fp16 (got %s)", mp_dtype_name(pin->precision));
    if ((pin->offload == MP_OFF_PARAMS || pin->offload == MP_OFF_ALL) && pin->zero >= 0 && pin->zero != 3)
        FAIL("search: offload = %s pinned with zero = %d: parameter offload needs zero = 3",
             mp_offload_name((mp_offload)pin->offload), pin->zero);
    if (pin->finetune == MP_FT_FULL && (pin->lora_rank || pin->lora_targets))
        FAIL("search: lora_rank/lora_targets pinned without finetune = lora or qlora");
    if (pin->offload_device && pin->offload == MP_OFF_NONE)
        FAIL("search: offload_device = nvme pinned without offload");
    if (pin->offload == MP_OFF_OPTIMIZER && pin->zero == 0)
        FAIL("search: offload = optimizer pinned with zero = 0: ZeRO-Offload needs zero >= 1");
    if (pin->schedule_given && ((int)pin->schedule < 0 || pin->schedule >= MP_SCHED_COUNT))
        FAIL("search: schedule = %d: expected 1f1b, interleaved, gpipe or zb", (int)pin->schedule);
    if (o->top_n < 1 || o->top_n > MP_SEARCH_MAX_TOP)
        FAIL("search: top = %d: expected 1..%d", o->top_n, MP_SEARCH_MAX_TOP);
    if (o->threads < 0 || o->threads > 4096)
        FAIL("search: threads = %d: expected 0 (all) .. 4096", o->threads);
    if ((int)o->objective < 0 || o->objective >= MP_OBJ_COUNT)
        FAIL("search: objective = %d: expected throughput, time-to-train, cost or energy",
             (int)o->objective);
    if (!(o->tokens >= 0 && o->tokens <= 1e18))
        FAIL("search: tokens = %g: expected a token budget in [0, 1e18]", o->tokens);
    if (!(o->price_per_gpu_hour >= 0 && o->price_per_gpu_hour <= 1e6))
        FAIL("search: price = %g: expected USD per GPU-hour in [0, 1e6]", o->price_per_gpu_hour);
    if (o->objective == MP_OBJ_TIME_TO_TRAIN && !(o->tokens > 0))
        FAIL("search: objective time-to-train needs a token budget (tokens > 0)");
    if (o->objective == MP_OBJ_COST && !(o->price_per_gpu_hour > 0))
        FAIL("search: objective cost needs a price per GPU-hour (> 0)");
    if (o->objective == MP_OBJ_ENERGY && !o->energy)
        FAIL("energy objective needs the energy model (issue 6)");
#undef FAIL
    if (bad)
        return MP_ERR_INPUT;
    s->seq = pin->seq ? pin->seq : m->seq_len;
    s->gb = pin->gb;
    mp_plan_init_default(&s->base);
    s->base.seq = s->seq;
    s->base.gb = s->gb;
    s->base.precision = pin->precision;
    s->base.flash = pin->flash ? 1 : 0;
    s->base.schedule_given = pin->schedule_given;
    s->base.ep = 1;
    s->base.etp = 1;
    s->base.cp_algo = MP_CP_RING;
    /* Job inputs, not choices: the routing and the kernels. */
    s->base.moe_capacity_factor = pin->moe_capacity_factor;
    s->base.moe_imbalance = pin->moe_imbalance;
    s->base.fp8_comm = pin->fp8_comm;
    s->base.compile = pin->compile;
    s->base.attn_kernel = pin->attn_kernel;
    s->base.doc_len = pin->doc_len;
    /* The training stack (--fix stack=...): its kernels, overlaps and fitted fractions
     * (data/stacks.json) are the job's, never searched over (it was left at the default). */
    s->base.stack = pin->stack;
    /* The framework's FSDP: with fsdp = 2 pinned every candidate is ZeRO-3 (sp_shape_axes). */
    s->base.fsdp = pin->fsdp == 2 ? 2 : 0;
    /* The model's states: job inputs when pinned (--fix), never searched over, so the default
     * space and its speed are unchanged (memory_states.c). */
    s->base.opt_dtype = pin->opt_dtype;
    s->base.no_master = pin->no_master;
    s->base.optimizer = pin->optimizer;
    s->base.finetune = pin->finetune;
    s->base.lora_rank = pin->lora_rank;
    s->base.lora_targets = pin->lora_targets;
    s->base.offload = pin->offload;
    s->base.offload_device = pin->offload_device;
    return MP_OK;
}

/* The rules mp_plan_resolve applies to the degrees (src/plan/plan.c); a bit per broken rule. */
static unsigned shape_rules(const sp_space *s, int64_t tp, int64_t cp, int64_t pp, int64_t dp)
{
    const mp_model *m = s->m;
    unsigned bad = 0;
    if (m->heads % tp)
        bad |= 1u << MP_RULE_TP_HEADS;
    if (m->kv_heads % tp && tp % m->kv_heads)
        bad |= 1u << MP_RULE_TP_KV_HEADS;
    if (m->ffn_hidden % tp)
        bad |= 1u << MP_RULE_TP_FFN;
    /* seq % (2 cp) for causal load balancing; cp > seq implies it (2cp > seq > 0). */
    if (cp > 1 && (s->seq % (2 * cp) || cp > s->seq))
        bad |= 1u << MP_RULE_CP_SEQ;
    if (pp > m->layers)
        bad |= 1u << MP_RULE_PP_LAYERS;
    if (s->gb % dp)
        bad |= 1u << MP_RULE_GB_DP;
    return bad;
}

mp_status sp_shapes(const sp_space *s, int cluster, int64_t gpus, sp_shape **shapes, size_t *n,
                    size_t *cap, mp_search_counts *counts)
{
    const mp_plan *pin = &s->o->pin;
    int64_t dv[SP_MAX_DIVISORS], dv2[SP_MAX_DIVISORS], dv3[SP_MAX_DIVISORS];
    int n1 = divisors(gpus, dv, SP_MAX_DIVISORS);
    sp_axes *ax = malloc(sizeof *ax);
    if (!ax)
        return MP_ERR_NOMEM;
    for (int i = 0; i < n1; i++) {
        int64_t tp = dv[i];
        if (pin->tp && pin->tp != tp)
            continue;
        int n2 = divisors(gpus / tp, dv2, SP_MAX_DIVISORS);
        for (int j = 0; j < n2; j++) {
            int64_t cp = dv2[j];
            if (pin->cp && pin->cp != cp)
                continue;
            int n3 = divisors(gpus / tp / cp, dv3, SP_MAX_DIVISORS);
            for (int k = 0; k < n3; k++) {
                int64_t pp = dv3[k], dp = gpus / tp / cp / pp;
                if ((pin->pp && pin->pp != pp) || (pin->dp && pin->dp != dp))
                    continue;
                counts->shapes++;
                unsigned bad = shape_rules(s, tp, cp, pp, dp);
                if (bad) {
                    counts->shapes_rejected++;
                    for (int r = 0; r < MP_RULE_COUNT; r++)
                        counts->rule[r] += (bad >> r) & 1u;
                    continue;
                }
                sp_shape sh = {cluster, tp, cp, pp, dp, 0};
                sh.size = sp_shape_axes(s, &sh, ax);
                if (!sh.size)
                    continue; /* the pins leave nothing below it */
                counts->plans = counts->plans > UINT64_MAX - sh.size ? UINT64_MAX
                                                                      : counts->plans + sh.size;
                if (*n == *cap) {
                    size_t nc = *cap ? 2 * *cap : 256;
                    sp_shape *g = realloc(*shapes, nc * sizeof *g);
                    if (!g) {
                        free(ax);
                        return MP_ERR_NOMEM;
                    }
                    *shapes = g;
                    *cap = nc;
                }
                (*shapes)[(*n)++] = sh;
            }
        }
    }
    free(ax);
    return MP_OK;
}

/* Layout sizes of the dimensions (plan.c layout(): EP carved out of DP when it divides dp). */
static void layout_sizes(const mp_plan *p, int64_t size[MP_DIM_COUNT])
{
    int64_t ep = p->ep > 1 ? p->ep : 1, dp = p->dp > 1 ? p->dp : 1;
    size[MP_DIM_TP] = p->tp;
    size[MP_DIM_CP] = p->cp;
    size[MP_DIM_PP] = p->pp;
    size[MP_DIM_EP] = dp % ep == 0 ? ep : 1;
    size[MP_DIM_DP] = dp / size[MP_DIM_EP];
}

/* Next permutation in lexicographic order (of the dimension numbers); 0 after the last. */
static int next_perm(mp_dim *a, int n)
{
    int i = n - 2;
    while (i >= 0 && a[i] >= a[i + 1])
        i--;
    if (i < 0)
        return 0;
    int j = n - 1;
    while (a[j] <= a[i])
        j--;
    mp_dim t = a[i]; a[i] = a[j]; a[j] = t;
    for (int l = i + 1, r = n - 1; l < r; l++, r--) {
        t = a[l]; a[l] = a[r]; a[r] = t;
    }
    return 1;
}

void sp_rank_orders(const sp_space *s, const mp_plan *p, sp_orders *out)
{
    const mp_plan *pin = &s->o->pin;
    const int64_t deg[MP_DIM_COUNT] = {p->tp, p->cp, p->ep, p->dp, p->pp};
    unsigned must = 0; /* dimensions of degree > 1: an order key must name them (plan.c) */
    for (int i = 0; i < MP_DIM_COUNT; i++)
        if (deg[i] > 1)
            must |= MP_DIM_BIT(i);
    out->n = 0;
    if (pin->order_listed) {
        if ((pin->order_listed & must) == must) {
            memcpy(out->order[0], pin->order, sizeof out->order[0]);
            out->listed[0] = pin->order_listed;
            out->n = 1;
        }
        return;
    }
    int64_t size[MP_DIM_COUNT];
    layout_sizes(p, size);
    mp_dim moving[MP_DIM_COUNT], rest[MP_DIM_COUNT];
    int nm = 0, nr = 0;
    for (int i = 0; i < MP_DIM_COUNT; i++) {
        if (size[i] > 1)
            moving[nm++] = (mp_dim)i;
        else
            rest[nr++] = (mp_dim)i;
    }
    /* The first permutation (ascending) is the default order. */
    if (!s->o->all_orders)
        nm = 0; /* the default only */
    do {
        mp_dim *o = out->order[out->n];
        for (int i = 0; i < nm; i++)
            o[i] = moving[i];
        for (int i = 0; i < nr; i++)
            o[nm + i] = rest[i];
        out->listed[out->n] = out->n ? must : 0;
        if (!out->n)
            for (int i = 0; i < MP_DIM_COUNT; i++)
                o[i] = (mp_dim)i; /* the default, as mp_plan_init_default writes it */
        out->n++;
    } while (out->n < SP_MAX_ORDERS && next_perm(moving, nm));
}

/* Expert layouts ordered by ep*etp descending, then ep ascending: the layouts that shard the
 * experts most (least state memory) come first, so that once one is proven over memory every
 * later one with no larger ep*etp is too (sp_walk). */
typedef struct {
    int64_t ep, etp;
} layout_pair;

static int layout_cmp(const void *a, const void *b)
{
    const layout_pair *x = a, *y = b;
    int64_t px = x->ep * x->etp, py = y->ep * y->etp;
    if (px != py)
        return px > py ? -1 : 1;
    return (x->ep > y->ep) - (x->ep < y->ep);
}

static void sort_layouts(sp_axes *ax)
{
    layout_pair *t = malloc((size_t)(ax->nexp + 1) * sizeof *t);
    if (!t)
        return; /* any order is correct; this one only prunes more */
    for (int i = 0; i < ax->nexp; i++)
        t[i] = (layout_pair){ax->ep[i], ax->etp[i]};
    qsort(t, (size_t)ax->nexp, sizeof *t, layout_cmp);
    for (int i = 0; i < ax->nexp; i++) {
        ax->ep[i] = t[i].ep;
        ax->etp[i] = t[i].etp;
    }
    free(t);
}

uint64_t sp_shape_axes(const sp_space *s, const sp_shape *sh, sp_axes *ax)
{
    const mp_plan *pin = &s->o->pin;
    const mp_model *m = s->m;
    int64_t dv[SP_MAX_DIVISORS];
    /* ZeRO stage 0..3, then HSDP (zero 3) over every divisor of dp (plan.c: hsdp must divide
     * dp). hsdp = 1 and hsdp = dp are valid plans too; with cp = 1, hsdp = dp equals plain zero 3
     * and the tie-break keeps hsdp 0. */
    ax->nshard = 0;
    if (!pin->hsdp) {
        /* fsdp = 2 pinned (the framework is FSDP2): ZeRO-3 plans only, as with hsdp. */
        /* offload (pinned with --fix) needs zero >= 1 for the optimizer, 3 for the params */
        const int zmin = pin->fsdp == 2 || pin->offload == MP_OFF_PARAMS || pin->offload == MP_OFF_ALL ? 3
                       : pin->offload == MP_OFF_OPTIMIZER ? 1 : 0;
        for (int z = zmin; z <= 3; z++)
            if (pin->zero < 0 || pin->zero == z) {
                ax->shard_zero[ax->nshard] = z;
                ax->shard_hsdp[ax->nshard++] = 0;
            }
    }
    if (pin->zero < 0 || pin->zero == 3) {
        int nd = divisors(sh->dp, dv, SP_MAX_DIVISORS);
        for (int i = 0; i < nd; i++)
            if (!pin->hsdp || pin->hsdp == dv[i]) {
                ax->shard_zero[ax->nshard] = 3;
                ax->shard_hsdp[ax->nshard++] = dv[i];
            }
    }
    /* Expert layout: dense models ep = etp = 1 (plan.c fills etp = 1); MoE models every ep
     * dividing the experts and etp dividing moe_ffn_hidden with etp*ep | tp*cp*dp (plan.c: the
     * expert grid re-partitions a stage's tp*cp*dp ranks). */
    ax->nexp = 0;
    if (m->moe_experts > 0) {
        int64_t de[SP_MAX_DIVISORS];
        int ne = divisors(m->moe_experts, de, SP_MAX_DIVISORS);
        int nf = m->moe_ffn_hidden > 0 ? divisors(m->moe_ffn_hidden, dv, SP_MAX_DIVISORS) : 0;
        const int64_t grid = sh->tp * sh->cp * sh->dp;
        for (int i = 0; i < ne; i++)
            for (int j = 0; j < nf && ax->nexp < SP_MAX_EXPERT; j++) {
                int64_t ep = de[i], etp = dv[j];
                if (grid % (ep * etp) == 0 && (!pin->ep || pin->ep == ep) &&
                    (!pin->etp || pin->etp == etp)) {
                    ax->ep[ax->nexp] = ep;
                    ax->etp[ax->nexp++] = etp;
                }
            }
        sort_layouts(ax);
    } else if (pin->ep <= 1 && pin->etp <= 1) {
        ax->ep[ax->nexp] = 1;
        ax->etp[ax->nexp++] = 1;
    }
    /* vpp: 1 without pipelining; else 1..(layers+2)/pp (pp*vpp <= layers + 2, the embedding and
     * the output layer in chunks of their own as plan.c accepts; uneven splits allowed).
     * A pinned schedule: interleaved needs vpp >= 2, the others run vpp = 1. */
    ax->vpp_lo = 1;
    ax->vpp_hi = sh->pp > 1 ? (m->layers + 2) / sh->pp : 1;
    if (s->o->pin.schedule_given) {
        if (pin->schedule == MP_SCHED_INTERLEAVED)
            ax->vpp_lo = 2;
        else
            ax->vpp_hi = 1;
    }
    if (pin->vpp) {
        if (pin->vpp >= ax->vpp_lo && pin->vpp <= ax->vpp_hi)
            ax->vpp_lo = ax->vpp_hi = pin->vpp;
        else
            ax->vpp_hi = ax->vpp_lo - 1;
    }
    /* sp: 0 or 1 with TP; plan.c refuses sp = 1 with tp = 1. */
    ax->nsp = 0;
    for (int v = 0; v <= (sh->tp > 1 ? 1 : 0); v++)
        if (pin->sp < 0 || pin->sp == v)
            ax->sp[ax->nsp++] = v;
    ax->nrc = 0;
    /* free: the first MP_RC_SEARCHED modes (none, selective, full), the default space; a pinned
     * mode (op, mlp too) is the only one */
    for (int r = 0; r < MP_RC_COUNT; r++)
        if ((pin->recompute == MP_RC_COUNT && r < MP_RC_SEARCHED) || (int)pin->recompute == r)
            ax->rc[ax->nrc++] = (mp_recompute)r;
    /* CP attention: ring or all-gather, a choice only with cp > 1 (with cp = 1 it does nothing:
     * ring, unless pinned). */
    ax->ncpa = 0;
    for (int a = 0; a < (sh->cp > 1 ? MP_CP_ALGO_COUNT : 1); a++)
        if (pin->cp_algo == MP_CP_ALGO_COUNT || (int)pin->cp_algo == a || sh->cp == 1)
            ax->cpa[ax->ncpa++] = sh->cp == 1 && pin->cp_algo != MP_CP_ALGO_COUNT ? pin->cp_algo
                                                                                 : (mp_cp_algo)a;
    /* mb: every divisor of gb/dp (plan.c: gb % (mb*dp) == 0). */
    ax->nmb = 0;
    {
        int nd = divisors(s->gb / sh->dp, dv, SP_MAX_DIVISORS);
        for (int i = 0; i < nd; i++)
            if (!pin->mb || pin->mb == dv[i])
                ax->mb[ax->nmb++] = dv[i];
    }
    uint64_t nvpp = ax->vpp_hi >= ax->vpp_lo ? (uint64_t)(ax->vpp_hi - ax->vpp_lo + 1) : 0;
    /* Rank orders per expert layout (they depend on ep). */
    uint64_t norders = 0;
    {
        mp_plan p = s->base;
        p.tp = sh->tp; p.cp = sh->cp; p.pp = sh->pp; p.dp = sh->dp;
        sp_orders ords;
        for (int i = 0; i < ax->nexp; i++) {
            p.ep = ax->ep[i];
            sp_rank_orders(s, &p, &ords);
            norders += (uint64_t)ords.n;
        }
    }
    const uint64_t f[] = {(uint64_t)ax->nshard, norders, nvpp, (uint64_t)ax->nsp,
                          (uint64_t)ax->nrc, (uint64_t)ax->ncpa, (uint64_t)ax->nmb};
    uint64_t n = 1;
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        n = (f[i] && n > UINT64_MAX / f[i]) ? UINT64_MAX : n * f[i]; /* saturating */
    return n;
}

/* Memory is non-decreasing in mb for fixed other keys (the pruning of the mb loop): with G =
 * gb/dp and M = G/mb micro-batches, every activation term of mp_layer_activation and
 * mp_moe_layer_activation is linear in mb; the in-flight count times mb is min(G, (pp-i)*mb) for
 * 1F1B, min(c*mb, G*v)/v interleaved (c the warm-up chunks), G for GPipe — all non-decreasing;
 * logits and the full-recompute working layer are linear in mb; weights, gradients, optimizer
 * and buffers do not depend on it. */
/* Expert layouts and memory: the model states of a plan depend on its expert layout only
 * through ep*etp, and never grow with it. Per stage, the routed experts' parameters on a GPU
 * are E/ep experts of width moe_ffn_hidden/etp, so proportional to 1/(ep*etp), and the
 * expert-DP group that shards their ZeRO states has grid/(ep*etp) ranks (or hsdp, if fewer):
 * bytes per GPU proportional to 1/min(ep*etp*hsdp, grid) — non-increasing; the ZeRO-3/ZeRO-2
 * buffers hold one expert layer only when that group has more than one rank, and the NCCL
 * buckets only when some DP group has (src/estimate/estimate.c, memory per stage). So once the
 * states of one layout exceed the memory at a (sharding, vpp), those of every layout with no
 * larger ep*etp do too, on the same stage; with the layouts in descending ep*etp
 * (sort_layouts), the rest of them are skipped without evaluation. The exhaustive tests
 * (tests/test_search.c) check it against unpruned searches of MoE models. */
#define SP_MAX_VPP_TRACKED 65536

/* The plans of one (sharding, expert layout) below a shape — vpp, sp, recompute, mb, then the
 * communication variants — with p's degrees, sharding and layout set and ords its rank orders.
 * proven (NULL: no cross-layout pruning) as in sp_walk. Returns 0, or -2 if visit stopped. */
static int walk_layout(const sp_space *s, const sp_axes *ax, mp_plan p, const sp_orders *ords,
                       int64_t *proven, sp_walker *w)
{
    const int64_t product = p.ep * p.etp;
    /* Plans below one (sharding, expert layout, vpp): the subtree the states bound. */
    const uint64_t nvar = (uint64_t)ax->ncpa * (uint64_t)ords->n; /* variants of a line */
    const uint64_t below = (uint64_t)ax->nsp * (uint64_t)ax->nrc * (uint64_t)ax->nmb * nvar;
    /* Dense models put layers/pp layers on a stage whatever vpp (src/estimate: only an MoE
     * model's interleaved chunks move MoE layers between stages), so states proven too big at
     * one vpp are too big at all. The exhaustive tests cover both kinds. */
    const int states_vary_with_vpp = s->m->moe_experts > 0;
    for (int64_t v = ax->vpp_lo; v <= ax->vpp_hi; v++) {
        if (proven && proven[v - ax->vpp_lo] >= product) {
            /* A layout sharding the experts at least as much is over memory at this vpp. */
            w->skip(w, below);
            continue;
        }
        p.vpp = v;
        p.schedule = s->o->pin.schedule_given ? s->o->pin.schedule
                     : v > 1 ? MP_SCHED_INTERLEAVED : MP_SCHED_1F1B;
        uint64_t done = 0; /* plans of this subtree visited or skipped */
        int first = 1, over = 0;
        for (int isp = 0; isp < ax->nsp && !over; isp++) {
            p.sp = ax->sp[isp];
            for (int ir = 0; ir < ax->nrc && !over; ir++) {
                p.recompute = ax->rc[ir];
                for (int im = 0; im < ax->nmb; im++) {
                    p.mb = ax->mb[im];
                    /* The line's head: the first CP algorithm, the default order. */
                    p.cp_algo = ax->cpa[0];
                    memcpy(p.order, ords->order[0], sizeof p.order);
                    p.order_listed = ords->listed[0];
                    const int tail = w->prune && !first && w->tail
                                         ? w->tail(w, &p, &ax->mb[im], ax->nmb - im, nvar) : 0;
                    if (tail == 1) {
                        /* This micro-batch and the larger ones cannot matter (bound.c). */
                        done += (uint64_t)(ax->nmb - im) * nvar;
                        break;
                    }
                    if (tail == 2) {
                        done += nvar; /* this micro-batch cannot matter; the next may */
                        continue;
                    }
                    double states = 0, capacity = 0;
                    int fit = w->visit(w, &p, &states, &capacity);
                    done++;
                    if (fit == -2)
                        return -2;
                    if (w->prune && fit >= 0 && first && states > capacity) {
                        /* The model states alone exceed the memory: so they do in every plan
                         * of this subtree (they depend only on the shape, the sharding, the
                         * expert layout and vpp), and of every later layout at this vpp. */
                        w->skip(w, below - done);
                        over = 1;
                        if (proven && proven[v - ax->vpp_lo] < product)
                            proven[v - ax->vpp_lo] = product;
                        if (!states_vary_with_vpp && v < ax->vpp_hi) {
                            w->skip(w, (uint64_t)(ax->vpp_hi - v) * below);
                            v = ax->vpp_hi; /* the other vpp values too */
                        }
                        break;
                    }
                    first = 0;
                    /* Its communication variants: the other CP algorithms and rank orders
                     * change where and how groups communicate, not memory nor compute (the
                     * walker decides from the head's visit). */
                    for (int ia = 0; ia < ax->ncpa; ia++) {
                        p.cp_algo = ax->cpa[ia];
                        for (int io = ia ? 0 : 1; io < ords->n; io++) {
                            memcpy(p.order, ords->order[io], sizeof p.order);
                            p.order_listed = ords->listed[io];
                            if (w->variant(w, &p) == -2)
                                return -2;
                            done++;
                        }
                    }
                    if (w->prune && fit == 0) {
                        /* Larger micro-batches need at least as much memory. */
                        uint64_t rest = (uint64_t)(ax->nmb - im - 1) * nvar;
                        if (rest)
                            w->skip(w, rest);
                        done += rest;
                        break;
                    }
                }
            }
        }
    }
    return 0;
}

int sp_walk(const sp_space *s, const sp_shape *sh, const sp_axes *ax, int shard_lo, int shard_hi,
            sp_walker *w)
{
    mp_plan p = s->base;
    p.tp = sh->tp;
    p.cp = sh->cp;
    p.pp = sh->pp;
    p.dp = sh->dp;
    sp_orders ords;
    /* proven[v - vpp_lo]: the largest ep*etp proven over memory at vpp v (0: none), for the
     * sharding being walked. Without it (dense models, no memory) nothing is skipped across
     * layouts, which changes no result. */
    const int64_t nv = ax->vpp_hi >= ax->vpp_lo ? ax->vpp_hi - ax->vpp_lo + 1 : 0;
    int64_t *proven = w->prune && ax->nexp > 1 && nv > 0 && nv <= SP_MAX_VPP_TRACKED
                          ? malloc((size_t)nv * sizeof *proven) : NULL;
    int ret = 0;
    if (shard_lo < 0)
        shard_lo = 0;
    if (shard_hi > ax->nshard)
        shard_hi = ax->nshard;
    for (int is = shard_lo; is < shard_hi && !ret; is++) {
        p.zero = ax->shard_zero[is];
        p.hsdp = ax->shard_hsdp[is];
        p.fsdp = p.zero == 3 ? s->base.fsdp : 0;
        if (proven)
            memset(proven, 0, (size_t)nv * sizeof *proven);
        for (int ie = 0; ie < ax->nexp && !ret; ie++) {
            p.ep = ax->ep[ie];
            p.etp = ax->etp[ie];
            sp_rank_orders(s, &p, &ords);
            if (ords.n)
                ret = walk_layout(s, ax, p, &ords, proven, w);
        }
    }
    free(proven);
    return ret;
}

int sp_contains(const sp_space *s, int64_t gpus, const mp_plan *p)
{
    const mp_plan *pin = &s->o->pin;
    if (p->tp < 1 || p->cp < 1 || p->pp < 1 || p->dp < 1 || p->tp * p->cp * p->pp * p->dp != gpus)
        return 0;
    if ((pin->tp && pin->tp != p->tp) || (pin->cp && pin->cp != p->cp) ||
        (pin->pp && pin->pp != p->pp) || (pin->dp && pin->dp != p->dp))
        return 0;
    if (shape_rules(s, p->tp, p->cp, p->pp, p->dp))
        return 0;
    /* The job. */
    if (p->gb != s->gb || p->seq != s->seq || p->precision != s->base.precision ||
        p->flash != s->base.flash || p->moe_capacity_factor != s->base.moe_capacity_factor ||
        p->moe_imbalance != s->base.moe_imbalance || p->fp8_comm != s->base.fp8_comm ||
        p->compile != s->base.compile ||
        p->attn_kernel != s->base.attn_kernel || p->doc_len != s->base.doc_len ||
        p->optimizer != s->base.optimizer || p->finetune != s->base.finetune ||
        p->offload != s->base.offload || p->opt_dtype != s->base.opt_dtype ||
        p->no_master != s->base.no_master || p->stack != s->base.stack ||
        (p->fsdp == 2) != (p->zero == 3 && s->base.fsdp == 2))
        return 0;
    sp_axes *ax = malloc(sizeof *ax);
    if (!ax)
        return 0;
    sp_shape sh = {0, p->tp, p->cp, p->pp, p->dp, 0};
    sp_shape_axes(s, &sh, ax);
    int ok = p->vpp >= ax->vpp_lo && p->vpp <= ax->vpp_hi;
    mp_schedule sched = pin->schedule_given ? pin->schedule
                        : p->vpp > 1 ? MP_SCHED_INTERLEAVED : MP_SCHED_1F1B;
    ok = ok && p->schedule == sched;
    int in = 0;
    for (int i = 0; i < ax->nshard; i++)
        in |= ax->shard_zero[i] == p->zero && ax->shard_hsdp[i] == p->hsdp;
    ok = ok && in;
    in = 0;
    for (int i = 0; i < ax->nexp; i++)
        in |= ax->ep[i] == p->ep && ax->etp[i] == p->etp;
    ok = ok && in;
    in = 0;
    for (int i = 0; i < ax->ncpa; i++)
        in |= ax->cpa[i] == p->cp_algo;
    ok = ok && in;
    if (ok) {
        sp_orders *ords = malloc(sizeof *ords);
        in = 0;
        if (ords) {
            /* The same layout (the strides of the dimensions of size > 1), however the order is
             * written. */
            int64_t size[MP_DIM_COUNT];
            layout_sizes(p, size);
            sp_rank_orders(s, p, ords);
            for (int i = 0; i < ords->n && !in; i++) {
                mp_plan q = *p;
                memcpy(q.order, ords->order[i], sizeof q.order);
                q.order_listed = ords->listed[i];
                int same = 1;
                for (int d = 0; d < MP_DIM_COUNT; d++)
                    if (size[d] > 1)
                        same &= mp_plan_stride(&q, (mp_dim)d) == mp_plan_stride(p, (mp_dim)d);
                in = same;
            }
            free(ords);
        }
        ok = in;
    }
    in = 0;
    for (int i = 0; i < ax->nsp; i++)
        in |= ax->sp[i] == p->sp;
    ok = ok && in;
    in = 0;
    for (int i = 0; i < ax->nrc; i++)
        in |= ax->rc[i] == p->recompute;
    ok = ok && in;
    in = 0;
    for (int i = 0; i < ax->nmb; i++)
        in |= ax->mb[i] == p->mb;
    ok = ok && in;
    free(ax);
    return ok;
}

/* ---- the public enumerator ------------------------------------------------------------- */

typedef struct {
    sp_walker base;
    int (*fn)(void *ctx, const mp_plan *p);
    void *ctx;
} enum_walker;

static int enum_visit(sp_walker *w, const mp_plan *p, double *states, double *capacity)
{
    (void)states;
    (void)capacity;
    enum_walker *ew = (enum_walker *)w;
    return ew->fn(ew->ctx, p) ? -2 : -1;
}

static void enum_skip(sp_walker *w, uint64_t n)
{
    (void)w;
    (void)n;
}

static int enum_variant(sp_walker *w, const mp_plan *p)
{
    return enum_visit(w, p, NULL, NULL);
}

mp_status mp_search_enumerate(const mp_model *m, int64_t gpus, const mp_search_opts *opts,
                              int (*visit)(void *ctx, const mp_plan *p), void *ctx,
                              mp_search_counts *counts, mp_diag *diag)
{
    mp_search_counts local;
    if (!counts)
        counts = &local;
    memset(counts, 0, sizeof *counts);
    if (gpus < 1 || gpus > ((int64_t)1 << 24)) {
        mp_diag_add(diag, "search: gpus = %lld: expected an integer in [1, 2^24]", (long long)gpus);
        return MP_ERR_INPUT;
    }
    sp_space s;
    mp_status st = sp_space_init(&s, m, opts, diag);
    if (st != MP_OK)
        return st;
    sp_shape *shapes = NULL;
    size_t n = 0, cap = 0;
    st = sp_shapes(&s, 0, gpus, &shapes, &n, &cap, counts);
    sp_axes *ax = malloc(sizeof *ax);
    if (st == MP_OK && !ax)
        st = MP_ERR_NOMEM;
    if (st == MP_OK && counts->plans > MP_SEARCH_MAX_PLANS) {
        mp_diag_add(diag, "search: the space has %llu plans, more than %llu: pin some keys (--fix)",
                    (unsigned long long)counts->plans, (unsigned long long)MP_SEARCH_MAX_PLANS);
        st = MP_ERR_RANGE;
    }
    enum_walker ew = {{enum_visit, enum_skip, enum_variant, 0, NULL}, visit, ctx};
    for (size_t i = 0; st == MP_OK && i < n; i++) {
        sp_shape_axes(&s, &shapes[i], ax);
        if (sp_walk(&s, &shapes[i], ax, 0, ax->nshard, &ew.base) == -2)
            break;
    }
    free(ax);
    free(shapes);
    return st;
}

/* ---- a space with no plan: why, and the nearest jobs that have one ---------------------- */

/* 1 if the job of s with global batch gb has at least one plan on gpus GPUs. */
static int formable(const sp_space *s, int64_t gpus, int64_t gb)
{
    sp_space t = *s;
    t.gb = gb;
    t.base.gb = gb;
    mp_search_counts k;
    memset(&k, 0, sizeof k);
    sp_shape *sh = NULL;
    size_t n = 0, cap = 0;
    mp_status st = sp_shapes(&t, 0, gpus, &sh, &n, &cap, &k);
    free(sh);
    return st == MP_OK && k.plans > 0;
}

/* The nearest values below and above x, stepping by step (x - step, x + step, x - 2 step, ...),
 * for which ok(value) holds, within [lo, hi] and at most SP_NEAREST_STEPS steps each way; 0
 * for a side with none. */
#define SP_NEAREST_STEPS 4096
static void nearest(const sp_space *s, int64_t x, int64_t step, int64_t lo, int64_t hi,
                    int64_t gpus, int by_gpus, int64_t *below, int64_t *above)
{
    *below = *above = 0;
    for (int64_t k = 1; k <= SP_NEAREST_STEPS && (!*below || !*above); k++) {
        int64_t d = x - k * step, u = x + k * step;
        if (!*below && d >= lo && (by_gpus ? formable(s, d, s->gb) : formable(s, gpus, d)))
            *below = d;
        if (!*above && u <= hi && (by_gpus ? formable(s, u, s->gb) : formable(s, gpus, u)))
            *above = u;
        if (d < lo && u > hi)
            break;
    }
}

static void appendf(char *buf, size_t cap, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void appendf(char *buf, size_t cap, const char *fmt, ...)
{
    size_t n = strlen(buf);
    if (n + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, cap - n, fmt, ap);
    va_end(ap);
}

/* "2^3 x 641": the prime factors of n (trial division; n <= 2^24). */
static void factor_text(int64_t n, char *buf, size_t cap)
{
    buf[0] = '\0';
    for (int64_t p = 2; p * p <= n; p++) {
        int e = 0;
        while (n % p == 0) {
            n /= p;
            e++;
        }
        if (e == 1)
            appendf(buf, cap, "%s%lld", buf[0] ? " x " : "", (long long)p);
        else if (e > 1)
            appendf(buf, cap, "%s%lld^%d", buf[0] ? " x " : "", (long long)p, e);
    }
    if (n > 1)
        appendf(buf, cap, "%s%lld", buf[0] ? " x " : "", (long long)n);
}

/* When the largest prime factor p of the GPU count fits in none of the degrees (every shape
 * puts a multiple of p in tp, cp, pp or dp), say so: the usual reason nothing can be formed
 * (5,128 = 8 x 641). */
static void prime_factor_reason(const sp_space *s, int64_t n, char *buf, size_t cap)
{
    int64_t p = 1, x = n;
    for (int64_t d = 2; d * d <= x; d++)
        while (x % d == 0) {
            x /= d;
            p = d;
        }
    if (x > 1)
        p = x;
    const mp_model *m = s->m;
    if (p < 3 || !(m->heads % p) || !(m->ffn_hidden % p) || (s->seq % (2 * p) == 0 && p <= s->seq) ||
        p <= m->layers || !(s->gb % p))
        return;
    appendf(buf, cap, ". Every shape puts the prime factor %lld in one degree, and it fits none: "
                      "tp (no multiple of %lld divides the %lld heads), cp (seq %lld is not divisible by "
                      "2 x %lld), pp (%lld stages are more than the %lld layers), dp (gb %lld is "
                      "not divisible by %lld)",
            (long long)p, (long long)p, (long long)m->heads, (long long)s->seq, (long long)p,
            (long long)p, (long long)m->layers, (long long)s->gb, (long long)p);
}

void sp_explain_unformable(const sp_space *s, const int64_t *gpus, int ngpus, int64_t gpus_step,
                           const mp_search_counts *k, char *buf, size_t cap)
{
    buf[0] = '\0';
    const int64_t n0 = gpus[0];
    char f[128];
    factor_text(n0, f, sizeof f);
    appendf(buf, cap, "no plan can be formed for %s at gb %lld x seq %lld on ", s->m->key,
            (long long)s->gb, (long long)s->seq);
    if (ngpus == 1)
        appendf(buf, cap, "%lld GPUs (%s)", (long long)n0, f[0] ? f : "1");
    else
        appendf(buf, cap, "any of %d GPU counts %lld..%lld", ngpus, (long long)n0,
                (long long)gpus[ngpus - 1]);
    if (!k->shapes) {
        appendf(buf, cap, ": the pinned degrees (tp, cp, pp, dp) give no degree shape whose product "
                          "is the GPU count");
    } else if (k->shapes_rejected == k->shapes) {
        appendf(buf, cap, ": each of the %llu degree shapes (tp, cp, pp, dp with tp*cp*pp*dp = the "
                          "GPU count) breaks at least one rule (shapes breaking each:",
                (unsigned long long)k->shapes);
        for (int r = 0, first = 1; r < MP_RULE_COUNT; r++)
            if (k->rule[r]) {
                appendf(buf, cap, "%s %s %llu", first ? "" : ",", mp_search_rule_key((mp_search_rule)r),
                        (unsigned long long)k->rule[r]);
                first = 0;
            }
        appendf(buf, cap, ")");
        if (ngpus == 1)
            prime_factor_reason(s, n0, buf, cap);
    } else {
        appendf(buf, cap, ": %llu of %llu degree shapes can be formed, but the pinned keys leave no "
                          "plan below them (mb must divide gb/dp, vpp <= layers/pp, ep | experts)",
                (unsigned long long)(k->shapes - k->shapes_rejected), (unsigned long long)k->shapes);
    }
    /* The nearest jobs that have a plan: other GPU counts (in steps of the node), other batches. */
    int64_t lo = 0, hi = 0, glo = 0, ghi = 0;
    const int64_t step = gpus_step > 0 ? gpus_step : 1;
    nearest(s, n0, step, step, (int64_t)1 << 24, 0, 1, &lo, &hi);
    nearest(s, s->gb, 1, 1, (int64_t)1 << 30, n0, 0, &glo, &ghi);
    appendf(buf, cap, ". ");
    if (lo || hi) {
        appendf(buf, cap, "Nearest GPU counts with a plan (multiples of %lld): ", (long long)step);
        if (lo)
            appendf(buf, cap, "%lld", (long long)lo);
        if (lo && hi)
            appendf(buf, cap, " and ");
        if (hi)
            appendf(buf, cap, "%lld", (long long)hi);
        appendf(buf, cap, "; ");
    } else {
        appendf(buf, cap, "No GPU count within %d nodes has a plan; ", SP_NEAREST_STEPS);
    }
    if (glo || ghi) {
        appendf(buf, cap, "nearest global batches with a plan on %lld GPUs: ", (long long)n0);
        if (glo)
            appendf(buf, cap, "%lld", (long long)glo);
        if (glo && ghi)
            appendf(buf, cap, " and ");
        if (ghi)
            appendf(buf, cap, "%lld", (long long)ghi);
        appendf(buf, cap, ".");
    } else {
        appendf(buf, cap, "no global batch within %d of gb %lld has a plan on %lld GPUs.",
                SP_NEAREST_STEPS, (long long)s->gb, (long long)n0);
    }
}
