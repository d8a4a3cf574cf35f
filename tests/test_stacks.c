/* tests/test_stacks.c — the software-stack profiles (meshplan/stack.h, data/stacks.json): every
 * profile loads with its source; the plan key and its era rules; a plan naming no stack is priced
 * exactly as before the profiles (generic); the overlap rules (hidden TP never more than there is,
 * the resource-aware slowdown = hidden x SMs held / SMs, by hand); the unfused attention's
 * backward at 2x its forward; fp8 dynamic scaling costs traffic; pre-Ampere GPUs default to no
 * fused attention; and validate's rows name their stack, the Korthikanti 2022 set at its
 * measured figure; torchtitan's fp8 casts fused under torch.compile. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"

#include "meshplan/meshplan.h"
#include "k22_table4.h" /* bench/k22_table4.c: Table 4 and its pricing, shared with bench/ */

static mp_status estimate(const char *model, const char *gpu, int64_t gpus, const char *plan,
                          const mp_estimate_opts *o, mp_estimate *e, mp_plan *pout, mp_diag *d)
{
    const mp_model *m = mp_catalog_model(g_cat, model);
    assert_non_null(m);
    mp_cluster c;
    assert_int_equal(mp_cluster_from_catalog(g_cat, gpu, gpus, 0, NULL, &c, d), MP_OK);
    mp_plan p;
    mp_plan_init_default(&p);
    mp_status st = mp_plan_parse(plan, &p, d);
    if (st == MP_OK)
        st = mp_plan_resolve(&p, m, gpus, d);
    if (st == MP_OK)
        st = mp_estimate_plan(m, &c, &p, o, e, d);
    if (pout)
        *pout = p;
    return st;
}

static void test_every_profile_loads(void **s)
{
    (void)s;
    for (int k = 0; k < MP_STACK_COUNT; k++) {
        mp_stack_profile p;
        mp_diag d = {0};
        assert_int_equal(mp_stack_profile_get((mp_stack_id)k, &p, &d), MP_OK);
        assert_string_equal(p.key, mp_stack_name((mp_stack_id)k));
        assert_true(strlen(p.source) > 40); /* every entry says where its values come from */
        assert_true(p.gemm_sustained_frac > 0 && p.gemm_sustained_frac <= 1);
        assert_true(p.elementwise_bytes_frac > 0);
        assert_ptr_equal(mp_stack_profile_of((mp_stack_id)k), mp_stack_profile_of((mp_stack_id)k));
    }
    mp_stack_profile p;
    mp_diag d = {0};
    assert_int_equal(mp_stack_profile_get(MP_STACK_COUNT, &p, &d), MP_ERR_INPUT);
    assert_null(mp_stack_profile_of(MP_STACK_COUNT));
    assert_string_equal(mp_stack_name(MP_STACK_COUNT), "?");
    assert_int_equal(MP_STACK_DEFAULT, MP_STACK_GENERIC);
}

/* Era rules: megatron-2021 predates FlashAttention (a plan asking for it is bad input naming the
 * key and the stack) and runs the unfused core and no SP when the plan does not say. */
static void test_plan_key_and_era(void **s)
{
    (void)s;
    const mp_model *m = mp_catalog_model(g_cat, "gpt3-175b");
    mp_plan p;
    mp_diag d = {0};
    mp_plan_init_default(&p);
    assert_int_equal(mp_plan_parse("tp=8,pp=8,stack=megatron-2021", &p, &d), MP_OK);
    assert_int_equal(mp_plan_resolve(&p, m, 64, &d), MP_OK);
    assert_int_equal(p.stack, MP_STACK_MEGATRON_2021);
    assert_int_equal(p.flash, 0);
    assert_int_equal(p.sp, 0);
    char txt[512];
    mp_plan_format(&p, txt, sizeof txt);
    assert_non_null(strstr(txt, "stack=megatron-2021"));
    mp_plan_init_default(&p);
    d = (mp_diag){0};
    assert_int_equal(mp_plan_parse("tp=8,pp=8,stack=megatron-2021,flash=1", &p, &d), MP_OK);
    assert_int_equal(mp_plan_resolve(&p, m, 64, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "plan.flash = 1"));
    assert_non_null(strstr(d.text, "megatron-2021"));
    mp_plan_init_default(&p);
    d = (mp_diag){0};
    assert_int_equal(mp_plan_parse("tp=8,stack=megatron-2021,sp=1", &p, &d), MP_OK);
    assert_int_equal(mp_plan_resolve(&p, m, 8, &d), MP_OK); /* Korthikanti et al. 2022 has SP */
    assert_int_equal(p.sp, 1);
    mp_plan_init_default(&p);
    d = (mp_diag){0};
    assert_int_equal(mp_plan_parse("tp=8,stack=llm-foundry,sp=1", &p, &d), MP_OK);
    assert_int_equal(mp_plan_resolve(&p, m, 8, &d), MP_ERR_INPUT);
    assert_non_null(strstr(d.text, "plan.sp = 1"));
    mp_plan_init_default(&p);
    d = (mp_diag){0};
    assert_int_equal(mp_plan_parse("stack=megatron", &p, &d), MP_ERR_INPUT);
    /* the named stack's attention default; the plan's own key wins */
    mp_plan_init_default(&p);
    assert_int_equal(mp_plan_parse("tp=8,stack=nemo", &p, &d), MP_OK);
    assert_int_equal(mp_plan_resolve(&p, m, 8, &d), MP_OK);
    assert_int_equal(p.attn_kernel, MP_ATTN_FA3);
    mp_plan_init_default(&p);
    assert_int_equal(mp_plan_parse("tp=8,stack=nemo,attn_kernel=fa2", &p, &d), MP_OK);
    assert_int_equal(mp_plan_resolve(&p, m, 8, &d), MP_OK);
    assert_int_equal(p.attn_kernel, MP_ATTN_FA2);
}

/* A plan naming no stack and the same plan with stack=generic are one prediction (differential). */
static void test_default_is_generic(void **s)
{
    (void)s;
    mp_estimate *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    mp_diag d = {0};
    assert_int_equal(estimate("llama3-70b", "h100-sxm5-80gb", 64, "tp=8,pp=2,gb=128,seq=8192,zero=1", NULL, a, NULL, &d), MP_OK);
    assert_int_equal(estimate("llama3-70b", "h100-sxm5-80gb", 64, "tp=8,pp=2,gb=128,seq=8192,zero=1,stack=generic", NULL, b, NULL, &d), MP_OK);
    assert_close(a->step_s, b->step_s, 1e-15);
    assert_close(a->parts.tp_hidden_s, 0.0, 0.0);
    free(a);
    free(b);
}

/* TP overlap: hidden at most what there is; none without TP; the slowdown it costs is hidden x
 * overlap_comm_sms / SMs (H100: 132 SMs), by hand. */
static void test_tp_overlap_and_slowdown(void **s)
{
    (void)s;
    mp_estimate *e = malloc(sizeof *e), *g = malloc(sizeof *g);
    mp_diag d = {0};
    const char *plan = "tp=8,pp=1,mb=1,gb=8,seq=8192,zero=1,stack=nemo";
    assert_int_equal(estimate("llama3-8b", "h100-sxm5-80gb", 8, plan, NULL, e, NULL, &d), MP_OK);
    const mp_stack_profile *nemo = mp_stack_profile_of(MP_STACK_NEMO);
    const double tp_all = e->time.tp_comm + e->parts.tp_hidden_s * e->microbatches;
    assert_true(e->parts.tp_hidden_s > 0);
    assert_true(e->parts.tp_hidden_s * e->microbatches <= tp_all + 1e-15);
    assert_close(e->parts.overlap_slowdown_s, e->parts.tp_hidden_s * nemo->overlap_comm_sms / 132.0, 1e-12);
    assert_int_equal(estimate("llama3-8b", "h100-sxm5-80gb", 8, "tp=1,mb=1,gb=8,seq=8192,zero=1,stack=nemo", NULL, g, NULL, &d), MP_OK);
    assert_close(g->parts.tp_hidden_s, 0.0, 0.0);
    free(e);
    free(g);
}

/* The unfused core's backward is 2x its forward, a fused kernel's 2.5x (layers.c passes). */
static void test_unfused_attention_backward(void **s)
{
    (void)s;
    const mp_model *m = mp_catalog_model(g_cat, "gpt3-175b");
    mp_cluster c;
    mp_diag d = {0};
    assert_int_equal(mp_cluster_from_catalog(g_cat, "a100-sxm4-80gb", 8, 0, NULL, &c, &d), MP_OK);
    for (int flash = 0; flash <= 1; flash++) {
        mp_plan p;
        mp_plan_init_default(&p);
        char txt[128];
        snprintf(txt, sizeof txt, "tp=8,mb=1,gb=1,seq=2048,flash=%d", flash);
        assert_int_equal(mp_plan_parse(txt, &p, &d), MP_OK);
        assert_int_equal(mp_plan_resolve(&p, m, 8, &d), MP_OK);
        mp_workload w;
        assert_int_equal(mp_workload_build(m, &c, &p, MP_WL_TRAIN_STEP, NULL, &w, &d), MP_OK);
        const mp_wl_layer *l = &w.layer[MP_LK_DENSE];
        double attn_bwd = l->bwd_s - 2.0 * l->gemm_s - l->elem_bwd_s - l->bwd_extra_s;
        assert_close(attn_bwd / l->attn_s, flash ? 2.5 : 2.0, 1e-9);
    }
}

/* The element-wise backward, kernel by kernel (kernels.c mp_kernel_elem_bwd_bytes_per_token), by
 * hand. GPT-18.4B layer at TP 8 without SP (f/tp = h/2, learned positions, dropout on): forward
 * 2 x (4h + 6h + 2 x h/2) + 10h = 32h bytes per token; backward 2 x (6h + 6h + 3 x h/2) + 10h =
 * 37h. Llama 3 8B at TP 1 (SwiGLU, rotary on q = 4096 and k = 1024, no dropout): forward
 * 2 x (10h + 3f + 2 x 5120), backward 2 x (12h + 5f + 2 x 5120). The stack's fusion factor scales
 * both alike, so the ratio of the workload's two times is the ratio of the byte counts. */
static void test_elementwise_backward_by_kernel(void **s)
{
    (void)s;
    struct { const char *model, *gpu, *plan; double ratio; } c[] = {
        {"gpt-18.4b", "a100-sxm4-80gb", "tp=8,mb=1,gb=1,seq=2048,sp=0,precision=fp16", 37.0 / 32.0},
        {"llama3-8b", "h100-sxm5-80gb", "tp=1,mb=1,gb=8,seq=8192",
         (12.0 * 4096 + 5.0 * 14336 + 2.0 * 5120) / (10.0 * 4096 + 3.0 * 14336 + 2.0 * 5120)},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        const mp_model *m = mp_catalog_model(g_cat, c[i].model);
        assert_non_null(m);
        mp_cluster cl;
        mp_diag d = {0};
        assert_int_equal(mp_cluster_from_catalog(g_cat, c[i].gpu, 8, 0, NULL, &cl, &d), MP_OK);
        mp_plan p;
        mp_plan_init_default(&p);
        assert_int_equal(mp_plan_parse(c[i].plan, &p, &d), MP_OK);
        assert_int_equal(mp_plan_resolve(&p, m, 8, &d), MP_OK);
        mp_workload *w = malloc(sizeof *w);
        assert_int_equal(mp_workload_build(m, &cl, &p, MP_WL_TRAIN_STEP, NULL, w, &d), MP_OK);
        const mp_wl_layer *l = &w->layer[MP_LK_DENSE];
        assert_close(l->elem_bwd_s / l->elem_s, c[i].ratio, 1e-9);
        free(w);
    }
}

/* One transformer layer of Korthikanti et al. 2022's GPT-22B (48 layers, h 6144, 64 heads, TP 8,
 * micro-batch 4 of 2048 tokens, A100), forward + backward, against the paper's Table 4 (ms):
 * no recompute 19.6, with SP 19.0, full recompute 27.2, selective 20.9, selective + SP 20.3 (the table
 * and its pricing: bench/k22_table4.c, which bench/fit_calibration and bench/table4_layers share). The
 * layer's time is the step's growth per layer (48 layers against 24), the optimizer's share
 * removed. Each within 5% (measured: +1.8% to +4.4% on the fitted megatron-2021 profile, which
 * bench/fit_calibration keeps within this bound), and what SP saves within 0.25 ms of the
 * published 0.6 ms (0.75 ms; the rule "element-wise backward = 2x forward" gave 1.34 ms). */
static void test_korthikanti_table4_per_layer(void **s)
{
    (void)s;
    mp_diag d = {0};
    double layer_ms[K22_T4_MODES], err_pct[K22_T4_MODES];
    if (k22_table4_layers(g_cat, NULL, layer_ms, err_pct, &d))
        fail_msg("Table 4 layers: %s", d.text);
    for (int k = 0; k < K22_T4_MODES; k++) {
        print_message("22B layer %-26s %.2f ms (Table 4: %.1f, %+.1f%%)\n", k22_t4[k].keys, layer_ms[k], k22_t4[k].ms,
                      err_pct[k]);
        assert_true(fabs(layer_ms[k] / k22_t4[k].ms - 1.0) <= 0.05);
    }
    assert_true(fabs((layer_ms[0] - layer_ms[1]) - 0.6) <= 0.25);
}

/* fp8 with dynamic scaling (torchao, torchtitan's profile): the amax pass and the casts TE would
 * fuse cost traffic on top of Transformer Engine's casts; by hand for the forward: the extra
 * bytes are 2 per TE-cast element plus (4 + 2) per norm-adjacent input and weight element. */
static void test_fp8_dynamic_scaling_costs(void **s)
{
    (void)s;
    const mp_model *m = mp_catalog_model(g_cat, "llama3-8b");
    mp_cluster c;
    mp_diag d = {0};
    assert_int_equal(mp_cluster_from_catalog(g_cat, "h100-sxm5-80gb", 8, 0, NULL, &c, &d), MP_OK);
    mp_plan p;
    mp_plan_init_default(&p);
    assert_int_equal(mp_plan_parse("tp=8,mb=1,gb=8,seq=8192,precision=fp8", &p, &d), MP_OK);
    assert_int_equal(mp_plan_resolve(&p, m, 8, &d), MP_OK);
    mp_workload_opts te, dyn;
    mp_workload_opts_init(&te);
    dyn = te;
    dyn.fp8_scale_bytes_per_elem = 2.0;
    mp_workload *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    assert_int_equal(mp_workload_build(m, &c, &p, MP_WL_TRAIN_STEP, &te, a, &d), MP_OK);
    assert_int_equal(mp_workload_build(m, &c, &p, MP_WL_TRAIN_STEP, &dyn, b, &d), MP_OK);
    const mp_wl_layer *la = &a->layer[MP_LK_DENSE], *lb = &b->layer[MP_LK_DENSE];
    const double T = 8192, h = 4096, f = 14336, tp = 8, Bps = a->rates.elem_Bps;
    const double te_cast = T * h / tp + T * f / tp; /* output projection and FC2 inputs */
    const double extra = (2.0 * te_cast + 6.0 * (2.0 * T * h + la->params)) / Bps;
    assert_close(lb->elem_s - la->elem_s, extra, 1e-9);
    assert_true(lb->bwd_extra_s > la->bwd_extra_s);
    free(a);
    free(b);
}

/* V100 (no bf16 tensor cores): no FlashAttention-2 unless the plan says flash=1. */
static void test_pre_ampere_defaults_to_unfused(void **s)
{
    (void)s;
    mp_estimate *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    mp_diag d = {0};
    assert_int_equal(estimate("gpt-1.7b", "v100-sxm2-32gb", 8, "tp=1,mb=1,gb=8,seq=2048,precision=fp16", NULL, a, NULL, &d), MP_OK);
    assert_int_equal(estimate("gpt-1.7b", "v100-sxm2-32gb", 8, "tp=1,mb=1,gb=8,seq=2048,precision=fp16,flash=0", NULL, b, NULL, &d), MP_OK);
    assert_close(a->step_s, b->step_s, 1e-15);
    free(a);
    free(b);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Model chunks: the embedding and the output layer may each take a chunk of their own (Llama 3,
 * Dubey et al. 2024 Sec. 3.3.2), so pp * vpp may reach layers + 2 and no further. */
static void test_chunks_of_their_own(void **s)
{
    (void)s;
    const mp_model *m = mp_catalog_model(g_cat, "llama3-8b"); /* 32 layers */
    assert_non_null(m);
    static const struct { const char *plan; mp_status want; } c[] = {
        {"tp=8,pp=2,vpp=16", MP_OK}, {"tp=8,pp=2,vpp=17", MP_OK}, {"tp=8,pp=2,vpp=18", MP_ERR_INPUT}};
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        mp_plan p;
        mp_diag d = {0};
        mp_plan_init_default(&p);
        assert_int_equal(mp_plan_parse(c[k].plan, &p, &d), MP_OK);
        assert_int_equal(mp_plan_resolve(&p, m, 16, &d), c[k].want);
        if (c[k].want != MP_OK)
            assert_non_null(strstr(d.text, "pp*vpp = 36"));
    }
}

/* ZeRO-3 as DeepSpeed of 2021 ran it (data/stacks.json deepspeed): one all-gather per parameter
 * tensor, each with the ring's latency over the shard group, so a layer's gather costs more than
 * FSDP's one flat gather of the same bytes and the more so the larger the group; and with full
 * recompute one more gather per layer and micro-batch (ZeRO-Infinity Sec. 4.1: forward,
 * recomputation, backward), where FSDP's backward unshard serves the recompute. */
static void test_deepspeed_zero3_gathers(void **s)
{
    (void)s;
    assert_true(mp_stack_profile_of(MP_STACK_DEEPSPEED)->zero3_gather_per_tensor);
    assert_true(mp_stack_profile_of(MP_STACK_DEEPSPEED)->zero3_recompute_gathers);
    assert_false(mp_stack_profile_of(MP_STACK_TORCHTITAN)->zero3_gather_per_tensor);
    assert_false(mp_stack_profile_of(MP_STACK_TORCHTITAN)->zero3_recompute_gathers);
    static const char *const stacks[2] = {"deepspeed", "torchtitan"};
    static const char *const rc[2] = {"full", "selective"};
    const int64_t gpus[2] = {384, 1536};
    double ag[2][2] = {{0}}, dp_total[2][2] = {{0}};
    const double M = 2; /* micro-batches per DP rank: gb = 2 x gpus, mb 1 */
    for (int k = 0; k < 2; k++)
        for (int g = 0; g < 2; g++)
            for (int r = 0; r < 2; r++) {
                char plan[200];
                snprintf(plan, sizeof plan, "tp=1,pp=1,mb=1,gb=%lld,seq=2048,zero=3,recompute=%s,"
                         "precision=fp16,flash=1,stack=%s", (long long)(2 * gpus[g]), rc[r], stacks[k]);
                mp_estimate e;
                mp_diag d = {0};
                assert_int_equal(estimate("gpt3-175b", "a100-sxm4-80gb", gpus[g], plan, NULL, &e, NULL, &d), MP_OK);
                if (r == 0)
                    ag[k][g] = e.parts.zero3_layer_gather_s;
                if (g == 1)
                    dp_total[k][r] = e.time.dp_comm_total;
            }
    /* per-tensor gathers: dearer than the flat one, the more so over 1536 ranks than 384 */
    assert_true(ag[0][0] > ag[1][0]);
    assert_true(ag[0][1] - ag[1][1] > ag[0][0] - ag[1][0]);
    /* the recompute's gather: 96 layers x 2 micro-batches x one more gather on DeepSpeed only */
    assert_true(fabs(dp_total[0][0] - dp_total[0][1] - M * 96 * ag[0][1]) <= 1e-6 * dp_total[0][0]);
    assert_true(fabs(dp_total[1][0] - dp_total[1][1]) <= 1e-9 * dp_total[1][0]);
}

/* DeepSpeed of 2021's host time per parameter-tensor gather (data/stacks.json): 0.38 ms at 8
 * ranks (DeepSpeed issue 1069's measurement) = zero3_gather_host_s + 8 x zero3_gather_host_rank_s
 * (2 us: one Python tensor op per rank, PyTorch issue 41383); the only profile that gives them,
 * the optional fields read 0 elsewhere; and over 1536 ranks a dense GPT layer's gather takes
 * exactly its 12 tensors' worth more (fused QKV, output, FFN-in, FFN-out weights, their 4
 * biases, 2 LayerNorms' weights and biases) than the same per-tensor gather without it. */
static void test_deepspeed_gather_host_time(void **s)
{
    (void)s;
    const mp_stack_profile *ds = mp_stack_profile_of(MP_STACK_DEEPSPEED);
    assert_true(fabs(ds->zero3_gather_host_s + 8 * ds->zero3_gather_host_rank_s - 0.38e-3) < 1e-12);
    assert_true(fabs(ds->zero3_gather_host_rank_s - 2e-6) < 1e-15);
    const double host_s = ds->zero3_gather_host_s + 1536 * ds->zero3_gather_host_rank_s;
    for (int k = 0; k < MP_STACK_COUNT; k++)
        if (k != MP_STACK_DEEPSPEED) {
            assert_true(mp_stack_profile_of((mp_stack_id)k)->zero3_gather_host_s == 0.0);
            assert_true(mp_stack_profile_of((mp_stack_id)k)->zero3_gather_host_rank_s == 0.0);
        }
    const mp_model *m = mp_catalog_model(g_cat, "gpt3-175b");
    assert_non_null(m);
    assert_true(m->bias && !m->rmsnorm);
    mp_cluster c;
    mp_diag d = {0};
    assert_int_equal(mp_cluster_from_catalog(g_cat, "a100-sxm4-80gb", 1536, 0, NULL, &c, &d), MP_OK);
    mp_plan p;
    mp_plan_init_default(&p);
    assert_int_equal(mp_plan_parse("tp=1,mb=1,gb=1536,seq=2048,zero=3,recompute=full,precision=fp16,"
                                   "stack=deepspeed", &p, &d), MP_OK);
    assert_int_equal(mp_plan_resolve(&p, m, 1536, &d), MP_OK);
    mp_estimate e;
    assert_int_equal(mp_estimate_plan(m, &c, &p, NULL, &e, &d), MP_OK);
    assert_true(e.workload_opts.zero3_gather_per_tensor);
    assert_true(e.workload_opts.zero3_gather_host_s == ds->zero3_gather_host_s);
    assert_true(e.workload_opts.zero3_gather_host_rank_s == ds->zero3_gather_host_rank_s);
    mp_workload_opts o = e.workload_opts;
    double ag[2];
    for (int k = 0; k < 2; k++) {
        mp_workload *w = malloc(sizeof *w);
        assert_non_null(w);
        o.zero3_gather_host_s = k ? ds->zero3_gather_host_s : 0.0;
        o.zero3_gather_host_rank_s = k ? ds->zero3_gather_host_rank_s : 0.0;
        assert_int_equal(mp_workload_build(m, &c, &p, MP_WL_TRAIN_STEP, &o, w, &d), MP_OK);
        ag[k] = w->coll[MP_WC_Z3_AG].time_s;
        free(w);
    }
    assert_true(fabs(ag[1] - ag[0] - 12 * host_s) < 1e-12);
    assert_true(fabs(e.parts.zero3_layer_gather_s - ag[1]) < 1e-12);
    /* Its gradients: reduced per tensor as well, in fp16 (zero3_reduce_bytes 2; 0 = fp32
     * elsewhere): per tensor dearer than one reduce-scatter of the same bytes (a latency each),
     * fp32 dearer than fp16. rs[per tensor][bytes 2 | 4] */
    assert_true(mp_stack_profile_of(MP_STACK_DEEPSPEED)->zero3_reduce_bytes == 2.0);
    assert_true(mp_stack_profile_of(MP_STACK_TORCHTITAN)->zero3_reduce_bytes == 0.0);
    double rs[2][2];
    for (int k = 0; k < 4; k++) {
        mp_workload *w = malloc(sizeof *w);
        assert_non_null(w);
        o.zero3_gather_per_tensor = k / 2;
        o.zero3_reduce_bytes = k % 2 ? 4.0 : 2.0;
        assert_int_equal(mp_workload_build(m, &c, &p, MP_WL_TRAIN_STEP, &o, w, &d), MP_OK);
        rs[k / 2][k % 2] = w->coll[MP_WC_Z3_RS].time_s;
        if (k % 2) { /* 4 bytes given = the default fp32 */
            mp_workload *w0 = malloc(sizeof *w0);
            assert_non_null(w0);
            o.zero3_reduce_bytes = 0.0;
            assert_int_equal(mp_workload_build(m, &c, &p, MP_WL_TRAIN_STEP, &o, w0, &d), MP_OK);
            assert_true(w0->coll[MP_WC_Z3_RS].time_s == rs[k / 2][1]);
            free(w0);
        }
        free(w);
    }
    assert_true(rs[1][0] > rs[0][0] && rs[1][1] > rs[0][1]);
    assert_true(rs[0][1] > rs[0][0] && rs[1][1] > rs[1][0]);
    assert_true(fabs(e.parts.zero3_layer_reduce_s - rs[1][0]) < 1e-12);
}

/* validate names every row's stack, states the default, and the Korthikanti et al. 2022 set
 * (k22_ rows, stack megatron-2021) is at its measured figure: mean |error| 4.81%, max 7.85%
 * (k22_fullrc_2; issue 17's bar is 5% / 10%; was 5.59 / 8.60% before the 2021 Table 1 rows took
 * their launch script's layouts and megatron-2021 was refitted, docs/stacks.md); every source
 * group's median |error| at most a quarter point above what it measures (docs/stacks.md), so a
 * regression in any group fails. The refit moved two of them up, within issue 17's one point:
 * megatron2021_t1 1.87 -> 2.20% and megatron2021_t2 2.03 -> 2.53% (docs/stacks.md). */
static void test_validate_rows_name_their_stack(void **s)
{
    (void)s;
    const char *path = MESHPLAN_VALIDATION_DIR "/runs.csv";
    FILE *f = fopen(path, "rb");
    if (!f) { /* a clone without ../shared beside it */
        print_message("# %s absent (the published runs of ../shared): skipped\n", path);
        skip();
        return;
    }
    static char buf[1 << 21];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    mp_validation v;
    mp_diag d = {0};
    assert_int_equal(mp_validate_csv(g_cat, buf, len, path, NULL, &v, &d), MP_OK);
    double sum = 0, mx = 0;
    int n = 0, defaults = 0, ds = 0;
    double ds_err[6];
    for (size_t i = 0; i < v.nrows; i++) {
        const mp_val_row *r = &v.rows[i];
        assert_true(r->stack[0]);
        if (!strcmp(r->source_group, "korthikanti2022")) {
            assert_string_equal(r->stack, "megatron-2021");
            sum += fabs(r->error_pct), mx = fmax(mx, fabs(r->error_pct)), n++;
        }
        if (!strcmp(r->source_group, "llama3_2024")) {
            assert_string_equal(r->stack, "generic");
            assert_non_null(strstr(r->assumed, "stack generic (default"));
            assert_non_null(strstr(r->assumed, "vpp 8 (Dubey et al. 2024"));
            defaults++;
        }
        if (!strncmp(r->id, "meg21_t2_", 9) && !strcmp(r->stack, "deepspeed") && ds < 6) {
            ds_err[ds++] = fabs(r->error_pct);
            assert_non_null(strstr(r->assumed, "flash 0 (the run predates FlashAttention)"));
        }
        if (!strcmp(r->source_group, "mosaic_a100_80g"))
            assert_string_equal(r->stack, "llm-foundry");
        /* Narayanan et al. 2021 Table 1: the micro-batch and depth of the authors' launch script
         * (validate.c source_layouts; Megatron-LM examples/sc21/run_table_1.sh) */
        if (!strcmp(r->id, "meg21_t1_1"))
            assert_non_null(strstr(r->assumed, "micro_batch 16 (Megatron-LM examples/sc21/run_table_1.sh line 17)"));
        if (!strcmp(r->id, "meg21_t1_8"))
            assert_non_null(strstr(r->assumed, "vpp 2 (Megatron-LM examples/sc21/run_table_1.sh line 101)"));
        if (!strcmp(r->id, "meg21_t1_10")) {
            assert_non_null(strstr(r->assumed, "vpp 1 (Megatron-LM examples/sc21/run_table_1.sh line 123"));
            assert_null(strstr(r->assumed, "interleaving not stated"));
        }
    }
    print_message("k22 set: mean |error| %.2f%%, max %.2f%% over %d rows\n", sum / n, mx, n);
    assert_int_equal(n, 9);
    assert_int_equal(defaults, 3);
    assert_int_equal(ds, 6);
    assert_true(sum / n <= 4.85 && mx <= 7.9);
    /* DeepSpeed ZeRO-3 of 2021 (Narayanan et al. 2021 Table 2): median |error| 14.63% with the
     * per-tensor gathers and reduce-scatters, their host time, the recompute's gather and no
     * FlashAttention (was 73.8%, then 36.2%; docs/stacks.md) */
    qsort(ds_err, 6, sizeof ds_err[0], cmp_double);
    print_message("ZeRO-3 rows: median |error| %.2f%%\n", 0.5 * (ds_err[2] + ds_err[3]));
    assert_true(0.5 * (ds_err[2] + ds_err[3]) <= 14.9);
    static const struct { const char *group; double median_pct; } med[] = {
        {"megatron2021_t1", 2.20}, {"megatron2021_t2", 2.53}, {"korthikanti2022", 4.86},
        {"llama3_2024", 12.30}, {"torchtitan_a100_perfdoc", 5.08}, {"torchtitan_h100_perfdoc", 2.11},
        {"mosaic_h100_bf16", 6.81}, {"mosaic_h100_fp8", 1.38}, {"mosaic_a100_80g", 3.96},
        {"nemo2407_h100", 3.99}, {"mbridge2511_b200", 6.24}, {"mbridge2511_h100", 7.48}};
    for (size_t g = 0; g < sizeof med / sizeof med[0]; g++) {
        mp_val_stats st;
        mp_validation_stats(&v, MP_VAL_THROUGHPUT, med[g].group, &st);
        print_message("%-24s median |error| %.2f%% (bound %.2f%%)\n", med[g].group, st.median_abs_error_pct,
                      med[g].median_pct + 0.25);
        assert_true(st.n > 0 && st.median_abs_error_pct <= med[g].median_pct + 0.25);
    }
    mp_validation_free(&v);
}

/* torchtitan's fp8 under torch.compile: the casts fused as Transformer Engine's (no separate amax
 * pass), eager PyTorch's not (data/stacks.json); on torchtitan's 2024-12 H100 runs
 * (tests/data/torchtitan_h100_2412.csv) the profile's median |error| is 5.20% (was 6.0% with the
 * amax pass, 7.5% held out), bounded a quarter point above, and the compiled bf16 8B rows within
 * 10% (+5.8%, +9.1%; were +16%, +19%) with the fp8 ones within 3%. */
static void test_torchtitan_fp8_fused_under_compile(void **s)
{
    (void)s;
    assert_true(mp_stack_profile_of(MP_STACK_TORCHTITAN)->fp8_scale_bytes_per_elem == 0.0);
    assert_true(mp_stack_profile_of(MP_STACK_EAGER)->fp8_scale_bytes_per_elem > 0.0);
    const char *path = MESHPLAN_SOURCE_DIR "/tests/data/torchtitan_h100_2412.csv";
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char buf[1 << 16];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    mp_validation v;
    mp_diag d = {0};
    assert_int_equal(mp_validate_csv(g_cat, buf, len, path, NULL, &v, &d), MP_OK);
    mp_val_stats st;
    mp_validation_stats(&v, MP_VAL_THROUGHPUT, "torchtitan_h100_2412", &st);
    print_message("torchtitan_h100_2412: median |error| %.2f%% over %zu rows\n", st.median_abs_error_pct, st.n);
    assert_true(st.n == 18 && st.median_abs_error_pct <= 5.45);
    int seen = 0;
    for (size_t i = 0; i < v.nrows; i++) {
        const mp_val_row *r = &v.rows[i];
        if (strcmp(r->metric, "tokens_per_s_per_gpu"))
            continue;
        if (!strcmp(r->id, "tt2412_t1_compile") || !strcmp(r->id, "tt2412_t3_compile"))
            assert_true(fabs(r->error_pct) <= 10.0), seen++;
        if (!strcmp(r->id, "tt2412_t1_float8") || !strcmp(r->id, "tt2412_t3_float8"))
            assert_true(fabs(r->error_pct) <= 3.0), seen++;
    }
    assert_int_equal(seen, 4);
    mp_validation_free(&v);
}

/* GB200: a row's "4 GPUs per node" is the compute tray; the NVLink domain is the NVL72 rack, of
 * which a 256-GPU job uses 64 per domain (the largest multiple of the tray dividing 256). */
static void test_nvl72_is_the_scale_up_tier(void **s)
{
    (void)s;
    const char *hdr = "id,source_group,layers,hidden,heads,kv_heads,ffn_hidden,glu,vocab,seq_len,gpu,num_gpus,"
                      "gpus_per_node,tp,pp,micro_batch,global_batch,precision,measured_tokens_per_s_per_gpu\n";
    char csv[1024];
    double pred[3];
    const char *gpn[3] = {"4", "", "64"};
    for (int i = 0; i < 3; i++) {
        snprintf(csv, sizeof csv, "%sr,g,32,4096,32,8,14336,1,128256,8192,gb200,256,%s,4,1,1,256,bf16,5000\n", hdr, gpn[i]);
        mp_validation v;
        mp_diag d = {0};
        assert_int_equal(mp_validate_csv(g_cat, csv, strlen(csv), "nvl72", NULL, &v, &d), MP_OK);
        assert_int_equal((int)v.nrows, 1);
        pred[i] = v.rows[0].predicted;
        if (i < 2)
            assert_non_null(strstr(v.rows[0].assumed, "NVL72 rack, 64 GPUs"));
        mp_validation_free(&v);
    }
    assert_close(pred[0], pred[2], 1e-12);
    assert_close(pred[1], pred[2], 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_profile_loads),
        cmocka_unit_test(test_plan_key_and_era),
        cmocka_unit_test(test_default_is_generic),
        cmocka_unit_test(test_tp_overlap_and_slowdown),
        cmocka_unit_test(test_unfused_attention_backward),
        cmocka_unit_test(test_elementwise_backward_by_kernel),
        cmocka_unit_test(test_korthikanti_table4_per_layer),
        cmocka_unit_test(test_fp8_dynamic_scaling_costs),
        cmocka_unit_test(test_pre_ampere_defaults_to_unfused),
        cmocka_unit_test(test_chunks_of_their_own),
        cmocka_unit_test(test_deepspeed_zero3_gathers),
        cmocka_unit_test(test_deepspeed_gather_host_time),
        cmocka_unit_test(test_validate_rows_name_their_stack),
        cmocka_unit_test(test_torchtitan_fp8_fused_under_compile),
        cmocka_unit_test(test_nvl72_is_the_scale_up_tier),
    };
    return cmocka_run_group_tests(tests, catalog_setup, catalog_teardown);
}
