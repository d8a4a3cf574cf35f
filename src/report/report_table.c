/* src/report/report_table.c — the prediction as Markdown tables and as a CSV row
 * (meshplan/report.h): the same numbers as predict's text and JSON, readable (meshplan/format.h)
 * in Markdown, exact in CSV. */
#include <stdio.h>
#include <string.h>

#include "meshplan/format.h"
#include "meshplan/report.h"

#define TIME_PARTS(X)                                   \
    X(compute, "compute")                               \
    X(recompute, "recompute")                           \
    X(tp_comm, "TP communication")                      \
    X(cp_comm, "CP communication")                      \
    X(ep_comm, "EP all-to-all")                         \
    X(pp_comm, "pipeline send/recv")                    \
    X(pp_bubble, "pipeline bubble")                     \
    X(dp_comm_exposed, "exposed DP/ZeRO communication") \
    X(optimizer, "optimizer step")

/* A Markdown cell: '|' escaped, newlines as spaces. */
static void md_cell(FILE *f, const char *s)
{
    for (; *s; s++)
        if (*s == '|')
            fputs("\\|", f);
        else
            fputc(*s == '\n' ? ' ' : *s, f);
}

void mp_report_estimate_markdown(FILE *f, const mp_model *m, const mp_cluster *c, const mp_plan *p,
                                 const mp_estimate *e)
{
    char plan[512], a[48], b[48];
    mp_plan_format(p, plan, sizeof plan);
    fprintf(f, "| meshplan predict | %s on %lld x %s |\n| --- | --- |\n", m->key, (long long)c->num_gpus,
            c->gpu.key);
    fputs("| cluster | ", f);
    md_cell(f, c->name);
    fprintf(f, " |\n| plan | `%s` |\n", plan);
    fprintf(f, "| feasible | %s |\n", e->feasible ? "yes, fits in memory" : "no");
    for (int i = 0; i < e->nreasons; i++) {
        fputs("| reason | ", f);
        md_cell(f, e->reasons[i]);
        fputs(" |\n", f);
    }
    mp_format_si(e->step_s, "s", 4, a, sizeof a);
    fprintf(f, "| step | %s |\n", a);
    mp_format_si(e->tokens_per_s, "tok/s", 4, a, sizeof a);
    mp_format_si(e->tokens_per_s_per_gpu, "tok/s", 4, b, sizeof b);
    fprintf(f, "| throughput | %s (%s per GPU) |\n", a, b);
    fprintf(f, "| model / hardware TFLOP/s per GPU | %.1f / %.1f |\n", e->model_tflops_per_gpu,
            e->hardware_tflops_per_gpu);
    mp_format_si(e->peak_flops_per_s, "FLOP/s", 4, a, sizeof a);
    fprintf(f, "| MFU / HFU | %.1f%% / %.1f%% of %s (%s) |\n", 100 * e->mfu, 100 * e->hfu, a, MP_MFU_CONVENTION);
    mp_format_binary(e->memory.total, "B", 4, a, sizeof a);
    mp_format_binary(e->memory.capacity, "B", 4, b, sizeof b);
    fprintf(f, "| memory, most loaded GPU | %s of %s |\n| bottleneck | ", a, b);
    md_cell(f, e->bottleneck);
    fputs(" |\n\n| step part | time | share |\n| --- | ---: | ---: |\n", f);
#define X(field, name)                                                                        \
    mp_format_si(e->time.field, "s", 4, a, sizeof a);                                      \
    fprintf(f, "| %s | %s | %.1f%% |\n", name, a, e->step_s > 0 ? 100.0 * e->time.field / e->step_s : 0.0);
    TIME_PARTS(X)
#undef X
    fputs("\n| memory per GPU | weights | gradients | optimizer | activations | logits | buffers | total |\n"
          "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n", f);
    int ns = e->nstages > 1 ? (e->nstages < MP_MAX_STAGES ? e->nstages : MP_MAX_STAGES) : 0;
    for (int i = -1; i < ns; i++) {
        const mp_memory *x = i < 0 ? &e->memory : &e->per_stage[i];
        if (i < 0)
            fputs("| most loaded |", f);
        else
            fprintf(f, "| stage %d |", i);
        const double v[7] = {x->weights, x->gradients, x->optimizer, x->activations, x->logits, x->buffers, x->total};
        for (int k = 0; k < 7; k++) {
            mp_format_binary(v[k], "B", 3, a, sizeof a);
            fprintf(f, " %s |", a);
        }
        fputc('\n', f);
    }
}

/* A CSV field, quoted when it holds a comma, a quote or a newline (RFC 4180 Sec. 2). */
static void csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

void mp_report_estimate_csv(FILE *f, const mp_model *m, const mp_cluster *c, const mp_plan *p,
                            const mp_estimate *e, int header)
{
    if (header) {
        fputs("model,cluster,gpu,gpus,plan,feasible,step_s,tokens_per_s,tokens_per_s_per_gpu,"
              "model_tflops_per_gpu,hardware_tflops_per_gpu,mfu,hfu,memory_total_bytes,"
              "memory_capacity_bytes", f);
#define X(field, name) fputs(",time_" #field "_s", f);
        TIME_PARTS(X)
#undef X
        fputs(",dp_comm_total_s,bottleneck\n", f);
    }
    char plan[512];
    mp_plan_format(p, plan, sizeof plan);
    csv_field(f, m->key);
    fputc(',', f);
    csv_field(f, c->name);
    fputc(',', f);
    csv_field(f, c->gpu.key);
    fprintf(f, ",%lld,", (long long)c->num_gpus);
    csv_field(f, plan);
    fprintf(f, ",%d,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.0f,%.0f", e->feasible, e->step_s,
            e->tokens_per_s, e->tokens_per_s_per_gpu, e->model_tflops_per_gpu, e->hardware_tflops_per_gpu,
            e->mfu, e->hfu, e->memory.total, e->memory.capacity);
#define X(field, name) fprintf(f, ",%.10g", e->time.field);
    TIME_PARTS(X)
#undef X
    fprintf(f, ",%.10g,", e->time.dp_comm_total);
    csv_field(f, e->bottleneck);
    fputc('\n', f);
}
