/* src/sim/trace.c — the simulated step as Chrome trace JSON (Trace Event Format, "JSON Object
 * Format": {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}), which Perfetto
 * (ui.perfetto.dev) and chrome://tracing open.
 *
 * One process per pipeline stage (pid = stage), named with the ranks it stands for; one thread
 * per stream (tid = stream). Every task is a complete event ("ph": "X") with ts and dur in
 * microseconds, printed exactly from the integer nanoseconds. Tasks of one stream run one at a
 * time, so the slices of one thread never overlap. Pipeline sends carry flow arrows to the
 * task of the receiving stage that waited for them. Written with fprintf rather than jansson: a
 * step of Llama 3 405B has ~10^5 slices and a JSON tree of them would cost more than the
 * simulation.
 */
#include <inttypes.h>
#include <stdio.h>

#include "sim_internal.h"

/* The names of the task kinds and streams: the trace's slice and thread names (and the
 * engine's deadlock message). */
const char *sim_kind_name(sim_kind k)
{
    static const char *const names[] = {
        "forward", "backward", "backward (input grad)", "weight grad", "recompute", "optimizer",
        "TP", "TP (recompute)", "CP exchange", "send activations", "send gradients",
        "DP grad reduce", "DP param gather", "ZeRO-3 gather", "ZeRO-3 reduce-scatter",
        "HSDP all-reduce", "EP all-to-all"};
    _Static_assert(sizeof names / sizeof names[0] == SK_COUNT, "one name per task kind");
    return (unsigned)k < SK_COUNT ? names[k] : "?";
}

const char *sim_stream_name(int s)
{
    static const char *const names[] = {"compute", "TP", "CP", "EP", "PP send", "DP/ZeRO",
                                        "optimizer"};
    _Static_assert(sizeof names / sizeof names[0] == SS_COUNT, "one name per stream");
    return s >= 0 && s < SS_COUNT ? names[s] : "?";
}


static void put_us(FILE *f, int64_t ns)
{
    fprintf(f, "%" PRId64 ".%03" PRId64, ns / 1000, ns % 1000);
}

static void put_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

static const char *pass_letter(sim_kind k)
{
    switch (k) {
    case SK_FWD: return "F";
    case SK_BWD: case SK_BWD_INPUT: return "B";
    case SK_BWD_WEIGHT: return "W";
    case SK_RECOMPUTE: return "R";
    default: return "";
    }
}

static void put_layer(FILE *f, int32_t layer)
{
    if (layer == -2)
        fputs(",\"layer\":\"lm_head\"", f);
    else if (layer == -3)
        fputs(",\"layer\":\"embedding\"", f);
    else if (layer >= 0)
        fprintf(f, ",\"layer\":%d", layer);
}

static void put_coll_args(FILE *f, const sim_task *x)
{
    fprintf(f, ",\"bytes\":%.0f,\"algorithm\":", x->bytes);
    put_str(f, mp_coll_algo_name((mp_coll_algo)x->algo));
    fprintf(f, ",\"group_ranks\":%d,\"count\":%d", x->group, x->count);
}

static void put_task(FILE *f, const mp_sim *s, const sim_task *x)
{
    sim_kind k = (sim_kind)x->kind;
    fputs(",\n{\"ph\":\"X\",\"pid\":", f);
    fprintf(f, "%d,\"tid\":%d,\"ts\":", x->rank, x->stream);
    put_us(f, x->start_ns);
    fputs(",\"dur\":", f);
    put_us(f, x->end_ns - x->start_ns);
    fputs(",\"name\":", f);
    char name[96];
    const char *cat;
    if (k == SK_OPTIMIZER) {
        snprintf(name, sizeof name, "optimizer");
        cat = "optimizer";
    } else if (SK_IS_COMPUTE(k)) {
        snprintf(name, sizeof name, "%s%d", pass_letter(k), x->mb);
        cat = "compute";
    } else if (k == SK_SEND_FWD || k == SK_SEND_BWD) {
        snprintf(name, sizeof name, "%s %s%d", k == SK_SEND_FWD ? "send act" : "send grad",
                 k == SK_SEND_FWD ? "F" : "B", x->mb);
        cat = "pp";
    } else if (k == SK_TP || k == SK_TP_RECOMPUTE) {
        snprintf(name, sizeof name, "TP %s", x->op == MP_COLL_ALL_GATHER ? "all_gather+reduce_scatter"
                                                                          : "all_reduce");
        cat = "tp";
    } else if (k == SK_CP) {
        snprintf(name, sizeof name, "CP K/V ring (exposed)");
        cat = "cp";
    } else {
        const char *who = k == SK_Z3_GATHER || k == SK_Z3_REDUCE ? "ZeRO-3" : k == SK_HSDP ? "HSDP" : "DP";
        snprintf(name, sizeof name, "%s %s", who, mp_coll_op_name((mp_coll_op)x->op));
        cat = "dp";
    }
    put_str(f, name);
    fputs(",\"cat\":", f);
    put_str(f, cat);
    fputs(",\"args\":{\"what\":", f);
    put_str(f, sim_kind_name(k));
    if (x->mb >= 0)
        fprintf(f, ",\"micro_batch\":%d", x->mb);
    if (x->chunk >= 0 && (s->vpp > 1 || SK_IS_COMPUTE(k)))
        fprintf(f, ",\"chunk\":%d", x->chunk);
    put_layer(f, x->layer);
    if (!SK_IS_COMPUTE(k))
        put_coll_args(f, x);
    if (x->peer >= 0)
        fprintf(f, ",\"to_stage\":%d", x->peer);
    if (SK_IS_COMPUTE(k) && x->end_ns - x->start_ns != x->dur_ns)
        fprintf(f, ",\"nominal_us\":%.3f", (double)x->dur_ns / 1000.0);
    fputs("}}", f);
}

mp_status mp_sim_write_trace(const mp_sim *s, FILE *f, const char *title, mp_diag *diag)
{
    const sim_graph *g = &s->g;
    fputs("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":\"meshplan trace\",\"title\":", f);
    put_str(f, title ? title : "");
    fprintf(f, ",\"step_s\":%.9f,\"schedule\":", s->step_s);
    put_str(f, mp_schedule_name(s->schedule));
    fprintf(f, ",\"stages\":%d,\"vpp\":%d,\"micro_batches\":%" PRId64 ",\"ranks_per_stage\":%" PRId64 "},\n",
            s->pp, s->vpp, s->microbatches, s->ranks_per_stage);
    fputs("\"traceEvents\":[\n", f);
    for (int st = 0; st < s->pp; st++) {
        int64_t lo = (int64_t)st * s->ranks_per_stage, hi = lo + s->ranks_per_stage - 1;
        int64_t rep = st == s->straggler_stage ? s->straggler_rank : lo;
        char pname[200];
        snprintf(pname, sizeof pname, "stage %d (ranks %" PRId64 "-%" PRId64 "; simulated: rank %" PRId64 "%s)",
                 st, lo, hi, rep, st == s->straggler_stage ? ", the straggler" : "");
        fprintf(f, "%s{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_name\",\"args\":{\"name\":",
                st ? ",\n" : "", st);
        put_str(f, pname);
        fprintf(f, "}},\n{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_sort_index\",\"args\":{\"sort_index\":%d}}",
                st, st);
        for (int q = 0; q < SS_COUNT; q++) {
            int64_t k = (int64_t)st * SS_COUNT + q;
            if (g->q_off[k + 1] == g->q_off[k])
                continue;
            fprintf(f, ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_name\",\"args\":{\"name\":", st, q);
            put_str(f, sim_stream_name(q));
            fprintf(f, "}},\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_sort_index\","
                       "\"args\":{\"sort_index\":%d}}", st, q, q);
        }
    }
    for (int64_t i = 0; i < g->n; i++) {
        const sim_task *x = &g->t[i];
        if (x->end_ns > x->start_ns)
            put_task(f, s, x);
    }
    /* Flow arrows: each pipeline send to the first task of the receiving stage it releases
     * (flow events "s" and "f", bound to the enclosing slices). */
    for (int64_t i = 0; i < g->n; i++) {
        const sim_task *x = &g->t[i];
        if ((x->kind != SK_SEND_FWD && x->kind != SK_SEND_BWD) || x->end_ns <= x->start_ns)
            continue;
        for (int32_t k = 0; k < x->succ_n; k++) {
            const sim_task *y = &g->t[g->succ[x->succ_off + k]];
            if (y->rank != x->peer || y->end_ns <= y->start_ns)
                continue;
            fprintf(f, ",\n{\"ph\":\"s\",\"id\":%" PRId64 ",\"name\":\"p2p\",\"cat\":\"pp\",\"pid\":%d,"
                       "\"tid\":%d,\"ts\":", i, x->rank, x->stream);
            put_us(f, x->start_ns);
            fprintf(f, "},\n{\"ph\":\"f\",\"bp\":\"e\",\"id\":%" PRId64 ",\"name\":\"p2p\",\"cat\":\"pp\","
                       "\"pid\":%d,\"tid\":%d,\"ts\":", i, y->rank, y->stream);
            put_us(f, y->start_ns);
            fputs("}", f);
        }
    }
    fputs("\n]}\n", f);
    if (ferror(f)) {
        mp_diag_add(diag, "trace: write error");
        return MP_ERR_IO;
    }
    return MP_OK;
}
