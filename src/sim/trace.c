/* src/sim/trace.c — the simulated step as Chrome trace JSON (Trace Event Format, "JSON Object
 * Format": {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}), which Perfetto
 * (ui.perfetto.dev) and chrome://tracing open.
 *
 * One process per pipeline stage (pid = stage), named with the ranks it stands for; one thread
 * per stream (tid = stream). Every task is a complete event ("ph": "X") with ts and dur in
 * microseconds, printed exactly from the integer nanoseconds. Tasks of one stream run one at a
 * time, so the slices of one thread never overlap. Pipeline sends carry flow arrows to the
 * task of the receiving stage that waited for them. Written by hand rather than with jansson:
 * a step of Llama 3 405B has ~10^5 slices and a JSON tree of them would cost more than the
 * simulation.
 *
 * Each event is formatted into a line buffer and written whole, so the size is known before it
 * reaches the file: mp_sim_write_trace_max stops before the event that would pass its cap.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

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


/* The writer: one event at a time in buf (longer texts, such as a caller's title, go out in
 * pieces), every piece checked against the cap before it is written. */
typedef struct {
    FILE *f;
    int64_t bytes, max_bytes; /* written so far; cap */
    int over, io;             /* the cap was reached; a write failed */
    size_t n;
    char buf[1024];
} writer;

static void w_flush(writer *w)
{
    if (w->over || w->io || !w->n)
        return;
    if (w->bytes + (int64_t)w->n > w->max_bytes) {
        w->over = 1;
        return;
    }
    if (fwrite(w->buf, 1, w->n, w->f) != w->n)
        w->io = 1;
    w->bytes += (int64_t)w->n;
    w->n = 0;
}

/* Append formatted text; an event longer than the buffer is written in pieces. */
static void w_printf(writer *w, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k < 0)
        return;
    size_t len = (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1; /* formats here are short */
    if (w->n + len > sizeof w->buf)
        w_flush(w);
    if (w->over || w->io)
        return;
    memcpy(w->buf + w->n, tmp, len);
    w->n += len;
}

static void w_putc(writer *w, char ch);

/* Append a literal. */
static void w_puts(writer *w, const char *text)
{
    size_t len = strlen(text);
    if (w->n + len > sizeof w->buf)
        w_flush(w);
    if (w->over || w->io)
        return;
    if (len > sizeof w->buf) { /* not one of ours: in pieces */
        for (; *text; text++)
            w_putc(w, *text);
        return;
    }
    memcpy(w->buf + w->n, text, len);
    w->n += len;
}

static void w_putc(writer *w, char ch)
{
    if (w->n == sizeof w->buf)
        w_flush(w);
    if (!w->over && !w->io)
        w->buf[w->n++] = ch;
}

static void put_us(writer *w, int64_t ns)
{
    w_printf(w, "%" PRId64 ".%03" PRId64, ns / 1000, ns % 1000);
}

static void put_str(writer *w, const char *s)
{
    w_putc(w, '"');
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            w_printf(w, "\\%c", ch);
        else if (ch < 0x20)
            w_printf(w, "\\u%04x", ch);
        else
            w_putc(w, (char)ch);
    }
    w_putc(w, '"');
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

static void put_layer(writer *f, int32_t layer)
{
    if (layer == -2)
        w_puts(f, ",\"layer\":\"lm_head\"");
    else if (layer == -3)
        w_puts(f, ",\"layer\":\"embedding\"");
    else if (layer >= 0)
        w_printf(f, ",\"layer\":%d", layer);
}

static void put_coll_args(writer *f, const sim_task *x)
{
    w_printf(f, ",\"bytes\":%.0f,\"algorithm\":", x->bytes);
    put_str(f, mp_coll_algo_name((mp_coll_algo)x->algo));
    w_printf(f, ",\"group_ranks\":%d,\"count\":%d", x->group, x->count);
}

static void put_task(writer *f, const mp_sim *s, const sim_task *x)
{
    sim_kind k = (sim_kind)x->kind;
    w_puts(f, ",\n{\"ph\":\"X\",\"pid\":");
    w_printf(f, "%d,\"tid\":%d,\"ts\":", x->rank, x->stream);
    put_us(f, x->start_ns);
    w_puts(f, ",\"dur\":");
    put_us(f, x->end_ns - x->start_ns);
    w_puts(f, ",\"name\":");
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
    } else if (k == SK_EP) {
        snprintf(name, sizeof name, "EP dispatch+combine all_to_all");
        cat = "ep";
    } else {
        const char *who = k == SK_Z3_GATHER || k == SK_Z3_REDUCE ? "ZeRO-3" : k == SK_HSDP ? "HSDP" : "DP";
        snprintf(name, sizeof name, "%s %s", who, mp_coll_op_name((mp_coll_op)x->op));
        cat = "dp";
    }
    put_str(f, name);
    w_puts(f, ",\"cat\":");
    put_str(f, cat);
    w_puts(f, ",\"args\":{\"what\":");
    put_str(f, sim_kind_name(k));
    if (x->mb >= 0)
        w_printf(f, ",\"micro_batch\":%d", x->mb);
    if (x->chunk >= 0 && (s->vpp > 1 || SK_IS_COMPUTE(k)))
        w_printf(f, ",\"chunk\":%d", x->chunk);
    put_layer(f, x->layer);
    if (!SK_IS_COMPUTE(k))
        put_coll_args(f, x);
    if (x->peer >= 0)
        w_printf(f, ",\"to_stage\":%d", x->peer);
    if (SK_IS_COMPUTE(k) && x->end_ns - x->start_ns != x->dur_ns)
        w_printf(f, ",\"nominal_us\":%.3f", (double)x->dur_ns / 1000.0);
    w_puts(f, "}}");
}

/* The header and the metadata events: the job, one process per stage, its threads. */
static void put_metadata(writer *f, const mp_sim *s, const char *title)
{
    const sim_graph *g = &s->g;
    w_puts(f, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":\"meshplan trace\",\"title\":");
    put_str(f, title ? title : "");
    w_printf(f, ",\"step_s\":%.9f,\"schedule\":", s->step_s);
    put_str(f, mp_schedule_name(s->schedule));
    w_printf(f, ",\"stages\":%d,\"vpp\":%d,\"micro_batches\":%" PRId64 ",\"ranks_per_stage\":%" PRId64 "},\n",
             s->pp, s->vpp, s->microbatches, s->ranks_per_stage);
    w_puts(f, "\"traceEvents\":[\n");
    w_flush(f);
    for (int st = 0; st < s->pp; st++) {
        int64_t lo = (int64_t)st * s->ranks_per_stage, hi = lo + s->ranks_per_stage - 1;
        int64_t rep = st == s->straggler_stage ? s->straggler_rank : lo;
        char pname[200];
        snprintf(pname, sizeof pname, "stage %d (ranks %" PRId64 "-%" PRId64 "; simulated: rank %" PRId64 "%s)",
                 st, lo, hi, rep, st == s->straggler_stage ? ", the straggler" : "");
        w_printf(f, "%s{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_name\",\"args\":{\"name\":",
                 st ? ",\n" : "", st);
        put_str(f, pname);
        w_printf(f, "}},\n{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_sort_index\",\"args\":{\"sort_index\":%d}}",
                 st, st);
        for (int q = 0; q < SS_COUNT; q++) {
            int64_t k = (int64_t)st * SS_COUNT + q;
            if (g->q_off[k + 1] == g->q_off[k])
                continue;
            w_printf(f, ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_name\",\"args\":{\"name\":", st, q);
            put_str(f, sim_stream_name(q));
            w_printf(f, "}},\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_sort_index\","
                        "\"args\":{\"sort_index\":%d}}", st, q, q);
        }
        w_flush(f);
    }
}

/* Flow arrows: each pipeline send to the first task of the receiving stage it releases (flow
 * events "s" and "f", bound to the enclosing slices). */
static void put_flows(writer *f, const sim_graph *g, int64_t i)
{
    const sim_task *x = &g->t[i];
    if ((x->kind != SK_SEND_FWD && x->kind != SK_SEND_BWD) || x->end_ns <= x->start_ns)
        return;
    for (int32_t k = 0; k < x->succ_n && !f->over; k++) {
        const sim_task *y = &g->t[g->succ[x->succ_off + k]];
        if (y->rank != x->peer || y->end_ns <= y->start_ns)
            continue;
        w_printf(f, ",\n{\"ph\":\"s\",\"id\":%" PRId64 ",\"name\":\"p2p\",\"cat\":\"pp\",\"pid\":%d,"
                    "\"tid\":%d,\"ts\":", i, x->rank, x->stream);
        put_us(f, x->start_ns);
        w_printf(f, "},\n{\"ph\":\"f\",\"bp\":\"e\",\"id\":%" PRId64 ",\"name\":\"p2p\",\"cat\":\"pp\","
                    "\"pid\":%d,\"tid\":%d,\"ts\":", i, y->rank, y->stream);
        put_us(f, y->start_ns);
        w_puts(f, "}");
        w_flush(f);
    }
}

mp_status mp_sim_write_trace_max(const mp_sim *s, FILE *out, const char *title, int64_t max_bytes,
                                 int64_t *bytes, mp_diag *diag)
{
    if (bytes)
        *bytes = 0;
    if (max_bytes < 1) {
        mp_diag_add(diag, "trace: max_bytes = %lld: expected >= 1", (long long)max_bytes);
        return MP_ERR_INPUT;
    }
    const sim_graph *g = &s->g;
    writer w = {.f = out, .max_bytes = max_bytes}, *f = &w;
    put_metadata(f, s, title);
    int64_t slices = 0, written = 0;
    for (int64_t i = 0; i < g->n; i++)
        slices += g->t[i].end_ns > g->t[i].start_ns;
    for (int64_t i = 0; i < g->n && !f->over && !f->io; i++) {
        const sim_task *x = &g->t[i];
        if (x->end_ns > x->start_ns) {
            put_task(f, s, x);
            w_flush(f);
            written += !f->over;
        }
    }
    for (int64_t i = 0; i < g->n && !f->over && !f->io; i++)
        put_flows(f, g, i);
    w_puts(f, "\n]}\n");
    w_flush(f);
    mp_status st = MP_OK;
    if (f->over) {
        /* The size the whole trace would take, at the mean size of the slices written. */
        double whole = written > 0 ? (double)f->bytes / (double)written * (double)slices : (double)f->bytes;
        mp_diag_add(diag, "trace: the file would pass max_bytes = %lld (%.4g MiB) after %lld of %lld slices; "
                          "the whole trace would take about %.4g MB", (long long)max_bytes,
                    (double)max_bytes / 1048576.0, (long long)written, (long long)slices, whole / 1e6);
        st = MP_ERR_RANGE;
    } else if (f->io || ferror(out)) {
        mp_diag_add(diag, "trace: write error");
        st = MP_ERR_IO;
    }
    if (bytes)
        *bytes = f->bytes;
    return st;
}

mp_status mp_sim_write_trace(const mp_sim *s, FILE *f, const char *title, mp_diag *diag)
{
    return mp_sim_write_trace_max(s, f, title, INT64_MAX, NULL, diag);
}
