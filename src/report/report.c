/* src/report/report.c — text and JSON writers (JSON through jansson). */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "meshplan/format.h"
#include "meshplan/parts.h"
#include "meshplan/report.h"

#define GiB 1073741824.0

/* Byte counts as JSON integers (exact up to 2^63; the estimator keeps them finite). */
static json_t *bytes_json(double b)
{
    return b < 9.2e18 ? json_integer((json_int_t)llround(b)) : json_real(b);
}

static json_t *mem_json(const mp_memory *m)
{
    json_t *o = json_object();
    for (int k = 0; k < MP_MEMORY_PART_COUNT; k++)
        json_object_set_new(o, mp_memory_parts[k].key, bytes_json(mp_memory_part_bytes(m, (mp_memory_part)k)));
    return o;
}

/* time_s: every step-time part, those beside the step (dp_comm_total) included. */
static json_t *time_json(const mp_time *t)
{
    json_t *o = json_object();
    for (int k = 0; k < MP_TIME_PART_COUNT; k++)
        json_object_set_new(o, mp_time_parts[k].key, json_real(mp_time_part_s(t, (mp_time_part)k)));
    return o;
}

char *mp_report_estimate_json(const mp_model *m, const mp_cluster *c, const mp_plan *p,
                              const mp_estimate *e)
{
    json_t *o = json_object();
    json_object_set_new(o, "feasible", json_boolean(e->feasible));
    json_object_set_new(o, "verdict", json_string(mp_verdict_name(e->verdict)));
    json_object_set_new(o, "peak_moment", json_string(e->peak_moment));
    json_t *reasons = json_array();
    for (int i = 0; i < e->nreasons; i++)
        json_array_append_new(reasons, json_string(e->reasons[i]));
    json_object_set_new(o, "reasons", reasons);
    json_t *mem = mem_json(&e->memory);
    json_t *stages = json_array();
    int ns = e->nstages < MP_MAX_STAGES ? e->nstages : MP_MAX_STAGES;
    for (int i = 0; i < ns; i++)
        json_array_append_new(stages, mem_json(&e->per_stage[i]));
    json_object_set_new(mem, "per_stage", stages);
    json_object_set_new(o, "memory_bytes", mem);
    json_object_set_new(o, "step_s", json_real(e->step_s));
    json_object_set_new(o, "time_s", time_json(&e->time));
    /* Shares of time_s.compute (FSDP2's copy-outs after the parameter gathers), beside time_s. */
    for (int k = 0; k < MP_TIME_DETAIL_COUNT; k++)
        json_object_set_new(o, mp_time_details[k].key, json_real(mp_time_detail_s(e, (mp_time_detail)k)));
    json_object_set_new(o, "tokens_per_step", json_real(e->tokens_per_step));
    json_object_set_new(o, "tokens_per_s", json_real(e->tokens_per_s));
    json_object_set_new(o, "tokens_per_s_per_gpu", json_real(e->tokens_per_s_per_gpu));
    json_object_set_new(o, "model_tflops_per_gpu", json_real(e->model_tflops_per_gpu));
    json_object_set_new(o, "hardware_tflops_per_gpu", json_real(e->hardware_tflops_per_gpu));
    json_object_set_new(o, "mfu", json_real(e->mfu));
    json_object_set_new(o, "hfu", json_real(e->hfu));
    json_object_set_new(o, "peak_flops_per_s", json_real(e->peak_flops_per_s));
    json_object_set_new(o, "bottleneck", json_string(e->bottleneck));
    json_object_set_new(o, "microbatches", json_integer(e->microbatches));
    json_object_set_new(o, "layers_per_stage",
                        json_pack("{s:i,s:i}", "min", e->layers_per_stage_min, "max",
                                  e->layers_per_stage_max));
    mp_param_count pc;
    mp_model_params(m, (int)p->tp, &pc);
    json_object_set_new(o, "model", json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "key", m->key,
                                              "params", (json_int_t)pc.total, "layers",
                                              (json_int_t)m->layers, "hidden", (json_int_t)m->hidden,
                                              "heads", (json_int_t)m->heads, "kv_heads",
                                              (json_int_t)m->kv_heads, "ffn_hidden",
                                              (json_int_t)m->ffn_hidden, "vocab",
                                              (json_int_t)m->vocab));
    json_object_set_new(o, "cluster", json_pack("{s:s,s:s,s:I,s:i,s:s,s:s}", "name", c->name, "gpu",
                                                c->gpu.key, "gpus", (json_int_t)c->num_gpus,
                                                "gpus_per_node", c->gpus_per_node, "scale_up",
                                                c->tier[0].link, "scale_out",
                                                c->ntiers > 1 ? c->tier[1].link : ""));
    json_object_set_new(json_object_get(o, "model"), "activated_params", json_integer((json_int_t)pc.activated));
    /* Long context: where attention stands (issue 7). */
    mp_flops fl;
    mp_model_flops(m, p->seq, &fl);
    /* keys_per_query: what one query sees on average over the layers (causal, within its window
     * and, when doc_len is given, its document): mp_model_keys_per_query. */
    json_object_set_new(o, "attention", json_pack("{s:f,s:f,s:f,s:I,s:f}", "compute_time_frac", e->attention_frac,
                                                  "flops_frac", e->attention_flops_frac,
                                                  "equal_matmul_seq", fl.attn_equal_seq,
                                                  "doc_len", (json_int_t)p->doc_len, "keys_per_query",
                                                  mp_model_keys_per_query(m, p->seq, p->doc_len)));
    if (mp_model_is_moe(m))
        json_object_set_new(o, "moe", json_pack("{s:I,s:I,s:I,s:I,s:f,s:f,s:f,s:f}", "experts",
                                                (json_int_t)m->moe_experts, "topk", (json_int_t)m->moe_topk,
                                                "ep", (json_int_t)p->ep, "etp", (json_int_t)(p->etp ? p->etp : p->tp),
                                                "expert_params_per_gpu", e->expert_params_per_gpu,
                                                "load_factor", e->moe_load,
                                                "a2a_bytes_per_moe_layer", e->parts.moe_layer_ep_bytes,
                                                "a2a_s_per_moe_layer", e->parts.moe_layer_ep_fwd_s + e->parts.moe_layer_ep_bwd_s));
    char plan[512];
    mp_plan_format(p, plan, sizeof plan);
    json_object_set_new(o, "plan", json_string(plan));
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(8));
    json_decref(o);
    return s;
}

/* The memory table: one column per part of the total, then total / capacity. */
static void mem_header(FILE *f)
{
    fprintf(f, "\nmemory per GPU (GiB)\n  %-10s", "");
    for (int k = 0; k < MP_MEMORY_PART_COUNT; k++)
        if (mp_memory_parts[k].kind == MP_MEM_KIND_PART)
            fprintf(f, " %8s", mp_memory_parts[k].label);
    for (int k = 0; k < MP_MEMORY_PART_COUNT; k++)
        if (mp_memory_parts[k].kind == MP_MEM_KIND_TOTAL)
            fprintf(f, " %9s", mp_memory_parts[k].label);
    for (int k = 0; k < MP_MEMORY_PART_COUNT; k++)
        if (mp_memory_parts[k].kind == MP_MEM_KIND_CAPACITY)
            fprintf(f, "/%s", mp_memory_parts[k].label);
    fprintf(f, "\n");
}

static void mem_row(FILE *f, const char *label, const mp_memory *m)
{
    fprintf(f, "  %-10s", label);
    for (int k = 0; k < MP_MEMORY_PART_COUNT; k++)
        if (mp_memory_parts[k].kind == MP_MEM_KIND_PART)
            fprintf(f, " %8.2f", mp_memory_part_bytes(m, (mp_memory_part)k) / GiB);
    for (int k = 0; k < MP_MEMORY_PART_COUNT; k++)
        if (mp_memory_parts[k].kind == MP_MEM_KIND_TOTAL)
            fprintf(f, " %9.2f", mp_memory_part_bytes(m, (mp_memory_part)k) / GiB);
    for (int k = 0; k < MP_MEMORY_PART_COUNT; k++)
        if (mp_memory_parts[k].kind == MP_MEM_KIND_CAPACITY)
            fprintf(f, " / %.2f", mp_memory_part_bytes(m, (mp_memory_part)k) / GiB);
    fprintf(f, "\n");
}

/* The step-time table: key, seconds, share of the step and the part in words; the parts beside
 * the step after it, then the shares of compute the estimate names. */
static void time_table(FILE *f, const mp_estimate *e)
{
    const mp_time *t = &e->time;
    fprintf(f, "\nstep time %.4f s\n", e->step_s);
    for (int k = 0; k < MP_TIME_PART_COUNT; k++) {
        const mp_time_part_info *q = &mp_time_parts[k];
        double v = mp_time_part_s(t, (mp_time_part)k);
        if (q->kind != MP_TIME_KIND_BESIDE)
            fprintf(f, "  %-16s %10.4f s %6.1f%%  %s\n", q->key, v, 100.0 * v / e->step_s, q->label);
    }
    for (int k = 0; k < MP_TIME_PART_COUNT; k++) {
        const mp_time_part_info *q = &mp_time_parts[k];
        if (q->kind != MP_TIME_KIND_BESIDE)
            continue;
        fprintf(f, "  (%s %.4f s: %s", q->key, mp_time_part_s(t, (mp_time_part)k), q->label);
        if (k == MP_TIME_dp_comm_total)
            fprintf(f, ", %.4f s of it hidden behind compute", t->dp_comm_total - t->dp_comm_exposed);
        fprintf(f, ")\n");
    }
    for (int k = 0; k < MP_TIME_DETAIL_COUNT; k++) {
        double v = mp_time_detail_s(e, (mp_time_detail)k);
        if (v > 0)
            fprintf(f, "  (of compute, %s %.4f s %s)\n", mp_time_details[k].key, v, mp_time_details[k].desc);
    }
}

void mp_report_estimate_text(FILE *f, const mp_model *m, const mp_cluster *c, const mp_plan *p,
                             const mp_estimate *e)
{
    mp_param_count pc;
    mp_model_params(m, (int)p->tp, &pc);
    char plan[512];
    mp_plan_format(p, plan, sizeof plan);
    fprintf(f, "model    %s: %.2fB parameters, %lld layers, hidden %lld, %lld heads (%lld KV), "
               "FFN %lld%s, vocab %lld\n",
            m->key, pc.total / 1e9, (long long)m->layers, (long long)m->hidden,
            (long long)m->heads, (long long)m->kv_heads, (long long)m->ffn_hidden,
            m->glu ? " GLU" : "", (long long)m->vocab);
    if (mp_model_is_moe(m))
        fprintf(f, "         MoE: %lld experts of width %lld, top-%lld, %lld shared, %lld MoE / %lld dense layers; "
                   "%.2fB of %.2fB parameters activated per token\n",
                (long long)m->moe_experts, (long long)m->moe_ffn_hidden, (long long)m->moe_topk,
                (long long)m->moe_shared_experts, (long long)pc.moe_layers, (long long)pc.dense_layers,
                pc.activated / 1e9, pc.total / 1e9);
    if (m->kv_lora_rank > 0)
        fprintf(f, "         multi-head latent attention: q_lora %lld, kv_lora %lld, qk %lld+%lld rope, v %lld\n",
                (long long)m->q_lora_rank, (long long)m->kv_lora_rank,
                (long long)(m->qk_nope_head_dim ? m->qk_nope_head_dim : m->head_dim),
                (long long)m->qk_rope_head_dim, (long long)(m->v_head_dim ? m->v_head_dim : m->head_dim));
    fprintf(f, "cluster  %s\n", c->name);
    fprintf(f, "plan     %s\n", plan);
    fprintf(f, "         %d micro-batches per DP rank, %d-%d layers per stage\n\n", e->microbatches,
            e->layers_per_stage_min, e->layers_per_stage_max);
    if (e->verdict == MP_VERDICT_TIGHT)
        fprintf(f, "FEASIBLE but tight: %.2f GiB of %.2f GiB, inside the %.2f GiB margin "
                   "(verdict tight: it may run out of memory)\n",
                e->memory.total / GiB, e->memory.capacity / GiB, e->memory.allocator_margin / GiB);
    else
        fprintf(f, "%s", e->feasible ? "FEASIBLE: fits in memory (verdict fits)\n"
                                     : "INFEASIBLE (verdict oom)\n");
    if (e->peak_moment[0])
        fprintf(f, "  peak: %s\n", e->peak_moment);
    for (int i = 0; i < e->nreasons; i++)
        fprintf(f, "  - %s\n", e->reasons[i]);
    mem_header(f);
    mem_row(f, "max", &e->memory);
    int ns = e->nstages < MP_MAX_STAGES ? e->nstages : MP_MAX_STAGES;
    if (ns > 1)
        for (int i = 0; i < ns; i++) {
            if (ns > 8 && i >= 3 && i < ns - 3) {
                if (i == 3)
                    fprintf(f, "  ...\n");
                continue;
            }
            char label[32];
            snprintf(label, sizeof label, "stage %d", i);
            mem_row(f, label, &e->per_stage[i]);
        }
    for (int k = 0; k < MP_MEMORY_PART_COUNT; k++)
        if (mp_memory_parts[k].kind == MP_MEM_KIND_BESIDE)
            fprintf(f, "  %s (%s, not in total): %.2f GiB\n", mp_memory_parts[k].label, mp_memory_parts[k].key,
                    mp_memory_part_bytes(&e->memory, (mp_memory_part)k) / GiB);
    time_table(f, e);
    char tps[48], tpg[48];
    mp_format_si(e->tokens_per_s, "tok/s", 4, tps, sizeof tps);
    mp_format_si(e->tokens_per_s_per_gpu, "tok/s", 4, tpg, sizeof tpg);
    fprintf(f, "\nthroughput\n  tokens/s          %s\n  tokens/s per GPU  %s\n", tps, tpg);
    fprintf(f, "  model TFLOP/s per GPU     %.1f\n  hardware TFLOP/s per GPU  %.1f\n",
            e->model_tflops_per_gpu, e->hardware_tflops_per_gpu);
    fprintf(f, "  MFU %.1f%%  HFU %.1f%%  (of %.0f TFLOP/s dense peak at the plan's precision)\n", 100 * e->mfu,
            100 * e->hfu, e->peak_flops_per_s / 1e12);
    fprintf(f, "  (%s)\n", MP_MFU_CONVENTION);
    {
        mp_flops fl;
        mp_model_flops(m, p->seq, &fl);
        fprintf(f, "\nattention at seq %lld: %.0f%% of compute time, %.0f%% of the FLOPs (causal)",
                (long long)p->seq, 100 * e->attention_frac, 100 * e->attention_flops_frac);
        if (fl.attn_equal_seq > 0)
            fprintf(f, "; its FLOPs equal the matmuls' at seq %.0f", fl.attn_equal_seq);
        if (p->doc_len > 0)
            fprintf(f, "\n  packed documents of %lld tokens under a document mask: a query sees %.0f keys on "
                       "average, not %.0f%s; MFU still counts the whole sequence", (long long)p->doc_len,
                    mp_model_keys_per_query(m, p->seq, p->doc_len), mp_model_keys_per_query(m, p->seq, 0),
                    p->flash ? "" : " (unfused attention computes every score: no saving)");
        fprintf(f, "\n");
    }
    if (mp_model_is_moe(m))
        fprintf(f, "experts: %lld per GPU (ep %lld, etp %lld), %.2fB expert parameters per GPU, load factor %.2f; "
                   "all-to-all per MoE layer %.1f MB sent, %.3f ms (fwd+bwd)\n",
                (long long)(m->moe_experts / (p->ep > 0 ? p->ep : 1)), (long long)p->ep,
                (long long)(p->etp ? p->etp : p->tp), e->expert_params_per_gpu / 1e9, e->moe_load,
                e->parts.moe_layer_ep_bytes / 1e6,
                1e3 * (e->parts.moe_layer_ep_fwd_s + e->parts.moe_layer_ep_bwd_s));
    fprintf(f, "\nbottleneck: %s\n", e->bottleneck);
}

static json_t *stats_json(const mp_val_stats *s)
{
    return json_pack("{s:I,s:f,s:f,s:f}", "n", (json_int_t)s->n, "mean_abs_error_pct",
                     s->mean_abs_error_pct, "median_abs_error_pct", s->median_abs_error_pct,
                     "max_abs_error_pct", s->max_abs_error_pct);
}

/* Distinct source groups in order of first appearance; returns count (<= cap). */
static size_t groups(const mp_validation *v, const char **out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < v->nrows; i++) {
        size_t j;
        for (j = 0; j < n; j++)
            if (!strcmp(out[j], v->rows[i].source_group))
                break;
        if (j == n && n < cap)
            out[n++] = v->rows[i].source_group;
    }
    return n;
}

/* Memory rows by basis: "allocated" and "active" compare with memory_bytes.allocated, the others
 * (reserved, nvidia-smi, torchtitan's peak) with the total (validate.c). basis_alloc: 1 the
 * first kind, 0 the second. */
static void mem_basis_stats(const mp_validation *v, int basis_alloc, mp_val_stats *out)
{
    memset(out, 0, sizeof *out);
    double *e = malloc((v->nrows + 1) * sizeof *e);
    if (!e)
        return;
    size_t n = 0;
    double sum = 0.0;
    for (size_t i = 0; i < v->nrows; i++) {
        const mp_val_row *r = &v->rows[i];
        if (strcmp(r->metric, "mem_gib"))
            continue;
        int a = !strcmp(r->mem_basis, "allocated") || !strcmp(r->mem_basis, "active");
        if (a != basis_alloc)
            continue;
        double x = fabs(r->error_pct);
        e[n++] = x;
        sum += x;
        if (x > out->max_abs_error_pct)
            out->max_abs_error_pct = x;
    }
    for (size_t i = 1; i < n; i++) /* insertion sort: memory rows are few */
        for (size_t j = i; j > 0 && e[j - 1] > e[j]; j--) {
            double t = e[j];
            e[j] = e[j - 1];
            e[j - 1] = t;
        }
    out->n = n;
    if (n) {
        out->mean_abs_error_pct = sum / n;
        out->median_abs_error_pct = n % 2 ? e[n / 2] : 0.5 * (e[n / 2 - 1] + e[n / 2]);
    }
    free(e);
}

char *mp_report_validation_json(const mp_validation *v)
{
    json_t *o = json_object(), *rows = json_array(), *skipped = json_array();
    for (size_t i = 0; i < v->nrows; i++) {
        const mp_val_row *r = &v->rows[i];
        json_t *jr = json_pack("{s:s,s:s,s:s,s:f,s:f,s:f}", "id", r->id, "source_group",
                               r->source_group, "metric", r->metric, "measured", r->measured,
                               "predicted", r->predicted, "error_pct", r->error_pct);
        if (r->assumed[0])
            json_object_set_new(jr, "assumed", json_string(r->assumed));
        json_array_append_new(rows, jr);
    }
    for (size_t i = 0; i < v->nskips; i++)
        json_array_append_new(skipped, json_pack("{s:s,s:s}", "id", v->skips[i].id, "reason",
                                                 v->skips[i].reason));
    json_object_set_new(o, "rows", rows);
    json_object_set_new(o, "skipped", skipped);
    mp_val_stats st;
    mp_validation_stats(v, MP_VAL_THROUGHPUT, NULL, &st);
    json_t *sum = stats_json(&st);
    mp_validation_stats(v, MP_VAL_MEMORY, NULL, &st);
    json_object_set_new(sum, "memory", stats_json(&st));
    json_object_set_new(sum, "rows_in", json_integer((json_int_t)v->ninput));
    json_object_set_new(sum, "rows_skipped", json_integer((json_int_t)v->nskips));
    const char *g[256];
    size_t ng = groups(v, g, 256);
    /* by source group: throughput metrics; memory apart (by_source_group_memory), and memory
     * by basis (memory_by_basis), so a file with memory rows does not pool the two */
    json_t *by = json_object(), *bym = json_object(), *bb = json_object();
    for (size_t i = 0; i < ng; i++) {
        mp_validation_stats(v, MP_VAL_THROUGHPUT, g[i], &st);
        if (st.n)
            json_object_set_new(by, g[i], stats_json(&st));
        mp_validation_stats(v, MP_VAL_MEMORY, g[i], &st);
        if (st.n)
            json_object_set_new(bym, g[i], stats_json(&st));
    }
    json_object_set_new(sum, "by_source_group", by);
    json_object_set_new(sum, "by_source_group_memory", bym);
    mem_basis_stats(v, 1, &st);
    json_object_set_new(bb, "allocated", stats_json(&st));
    mem_basis_stats(v, 0, &st);
    json_object_set_new(bb, "reserved", stats_json(&st));
    json_object_set_new(sum, "memory_by_basis", bb);
    json_object_set_new(o, "summary", sum);
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(8));
    json_decref(o);
    return s;
}

/* One summary line; with no row (n = 0) it says so instead of printing 0.0% figures that read
 * as a perfect prediction. */
static void val_stats_line(FILE *f, const char *label, const mp_val_stats *st, const char *what)
{
    if (st->n == 0) {
        fprintf(f, "%s n=0 (no row has %s)\n", label, what);
        return;
    }
    fprintf(f, "%s n=%zu median |error| %.1f%%, mean %.1f%%, max %.1f%%\n", label, st->n,
            st->median_abs_error_pct, st->mean_abs_error_pct, st->max_abs_error_pct);
}

void mp_report_validation_text(FILE *f, const mp_validation *v)
{
    fprintf(f, "%-20s %-24s %-24s %11s %11s %8s  %s\n", "id", "source_group", "metric", "measured",
            "predicted", "error%", "assumed");
    for (size_t i = 0; i < v->nrows; i++) {
        const mp_val_row *r = &v->rows[i];
        fprintf(f, "%-20s %-24s %-24s %11.4g %11.4g %+8.1f  %s\n", r->id, r->source_group, r->metric,
                r->measured, r->predicted, r->error_pct, r->assumed);
    }
    if (v->nskips) {
        fprintf(f, "\nskipped %zu rows:\n", v->nskips);
        for (size_t i = 0; i < v->nskips; i++)
            fprintf(f, "  %-20s %s\n", v->skips[i].id, v->skips[i].reason);
    }
    const char *g[256];
    size_t ng = groups(v, g, 256);
    mp_val_stats st;
    /* throughput and memory apart: a group's memory rows do not pool with its throughput */
    for (int mem = 0; mem < 2; mem++) {
        int any = 0;
        for (size_t i = 0; i < ng; i++) {
            mp_validation_stats(v, mem ? MP_VAL_MEMORY : MP_VAL_THROUGHPUT, g[i], &st);
            if (!st.n)
                continue;
            if (!any++)
                fprintf(f, "\nby source group, %s (|error| %%):\n  %-26s %4s %8s %8s %8s\n",
                        mem ? "memory" : "throughput", "group", "n", "median", "mean", "max");
            fprintf(f, "  %-26s %4zu %8.1f %8.1f %8.1f\n", g[i], st.n, st.median_abs_error_pct,
                    st.mean_abs_error_pct, st.max_abs_error_pct);
        }
    }
    size_t predicted = v->ninput - v->nskips;
    fprintf(f, "\npredicted %zu of %zu rows (%.1f%%)\n", predicted, v->ninput,
            v->ninput ? 100.0 * predicted / v->ninput : 0.0);
    mp_validation_stats(v, MP_VAL_MEMORY, NULL, &st);
    val_stats_line(f, "memory:    ", &st, "a measured_mem_gib value");
    if (st.n) {
        mem_basis_stats(v, 1, &st);
        val_stats_line(f, "  allocated/active:", &st, "an allocated basis");
        mem_basis_stats(v, 0, &st);
        val_stats_line(f, "  reserved/peak:   ", &st, "a reserved basis");
    }
    mp_validation_stats(v, MP_VAL_THROUGHPUT, NULL, &st);
    val_stats_line(f, "throughput:", &st, "a measured throughput, MFU or step time");
}
