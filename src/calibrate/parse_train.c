/* src/calibrate/parse_train.c — Megatron-LM iteration lines and its printed arguments block
 * (megatron/training/training.py training_log, arguments.py), torchtitan step lines
 * (torchtitan/components/metrics.py). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cal_internal.h"
#include "../internal.h"

/* The number after "key" on the line (commas allowed), or -1 when absent. */
double cal_after(const char *line, const char *key)
{
    const char *p = strstr(line, key);
    if (!p)
        return -1;
    p += strlen(key);
    while (*p == ' ' || *p == ':')
        p++;
    char buf[64];
    size_t j = 0;
    while (*p && (isdigit((unsigned char)*p) || strchr(".,eE+-", *p)) && j + 1 < sizeof buf)
        buf[j++] = *p++;
    buf[j] = 0;
    double v;
    return cal_plain_number(buf, 1, &v) ? v : -1;
}

static void megatron_arg(mp_megatron_args *a, int ln, const char *name, const char *val)
{
    static const struct { const char *k; size_t off; } ints[] = {
#define A(k, f) {k, offsetof(mp_megatron_args, f)}
        A("tensor_model_parallel_size", tp), A("pipeline_model_parallel_size", pp),
        A("virtual_pipeline_model_parallel_size", vpp), A("context_parallel_size", cp),
        A("expert_model_parallel_size", ep), A("micro_batch_size", mb), A("global_batch_size", gb),
        A("seq_length", seq), A("world_size", world_size), A("num_layers", layers),
        A("hidden_size", hidden), A("num_attention_heads", heads), A("num_query_groups", kv_groups),
        A("ffn_hidden_size", ffn_hidden), A("padded_vocab_size", vocab),
#undef A
    };
    if (!a->found)
        a->first_line = ln;
    a->found = 1;
    a->last_line = ln;
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (!strcmp(name, ints[i].k)) {
            if (cal_is_int_token(val))
                *(int64_t *)((char *)a + ints[i].off) = strtoll(val, NULL, 10);
            return;
        }
    int t = !strcmp(val, "True");
    if (!strcmp(name, "sequence_parallel")) a->sp = t;
    else if (!strcmp(name, "use_distributed_optimizer")) a->dist_opt = t;
    else if (!strcmp(name, "bf16")) a->bf16 = t;
    else if (!strcmp(name, "fp16")) a->fp16 = t;
    else if (!strcmp(name, "fp8")) a->fp8 = strcmp(val, "None") != 0;
    else if (!strcmp(name, "recompute_granularity"))
        mp_strlcpy(a->recompute, !strcmp(val, "None") ? "none" : val, sizeof a->recompute);
}

/* "  name ........ value" of the printed arguments block (megatron/training/arguments.py). */
int cal_megatron_args_line(mp_megatron_args *a, int ln, const char *line)
{
    const char *dots = strstr(line, " ...");
    if (!dots)
        return 0;
    char name[96], val[96];
    const char *p = line;
    while (*p == ' ')
        p++;
    size_t n = (size_t)(dots - p);
    if (!n || n >= sizeof name)
        return 0;
    memcpy(name, p, n);
    name[n] = 0;
    for (size_t i = 0; i < n; i++)
        if (!(isalnum((unsigned char)name[i]) || name[i] == '_'))
            return 0;
    const char *v = dots;
    while (*v == '.' || *v == ' ')
        v++;
    if (sscanf(v, "%95s", val) != 1)
        return 0;
    megatron_arg(a, ln, name, val);
    return 1;
}


static mp_status unit_check(cal_step_state *ss, const char *unit, const char *origin, int ln,
                            const char *what, mp_diag *d)
{
    if (!ss->unit[0]) {
        mp_strlcpy(ss->unit, unit, sizeof ss->unit);
        return MP_OK;
    }
    if (!strcmp(ss->unit, unit))
        return MP_OK;
    mp_diag_add(d, "%s:%d: mixed units: %s in %s, expected %s as on the earlier lines", origin, ln,
                what, unit, ss->unit);
    return MP_ERR_INPUT;
}

mp_status cal_megatron_line(mp_log *l, cal_step_state *ss, int ln, const char *line, mp_diag *d)
{
    const char *e = strstr(line, "elapsed time per iteration (");
    if (!e)
        return cal_megatron_args_line(&l->args, ln, line), MP_OK;
    char unit[16] = {0};
    sscanf(e + strlen("elapsed time per iteration ("), "%15[^)]", unit);
    if (strcmp(unit, "ms") && strcmp(unit, "s")) {
        mp_diag_add(d, "%s:%d: elapsed time per iteration (%s): expected (ms)", l->file, ln, unit);
        return MP_ERR_INPUT;
    }
    mp_status st = unit_check(ss, unit, l->file, ln, "elapsed time per iteration", d);
    if (st)
        return st;
    int g = cal_grow((void **)&l->steps, &l->nsteps, sizeof *l->steps, &ss->scap);
    if (g)
        return g == -1 ? MP_ERR_RANGE : MP_ERR_NOMEM;
    mp_train_step *s = &l->steps[l->nsteps];
    memset(s, 0, sizeof *s);
    s->line = ln;
    double it = cal_after(line, "iteration"), t = cal_after(e, ")");
    if (!(t > 0)) {
        mp_diag_add(d, "%s:%d: elapsed time per iteration: expected a number > 0", l->file, ln);
        return MP_ERR_INPUT;
    }
    s->step = (int64_t)l->nsteps + 1;
    if (it > 0 && !cal_count(it, &s->step)) {
        mp_diag_add(d, "%s:%d: iteration %g: expected a whole step number up to 2^53", l->file, ln,
                    it);
        return MP_ERR_INPUT;
    }
    s->step_s = t * (!strcmp(unit, "ms") ? 1e-3 : 1.0);
    double tf = cal_after(line, "(TFLOP/s/GPU)");
    s->tflops_per_gpu = tf > 0 ? tf : 0;
    double gb = cal_after(line, "global batch size");
    s->global_batch = 0;
    if (gb > 0 && !cal_count(gb, &s->global_batch)) {
        mp_diag_add(d, "%s:%d: global batch size %g: expected a whole number up to 2^53", l->file,
                    ln, gb);
        return MP_ERR_INPUT;
    }
    double loss = cal_after(line, "lm loss");
    s->loss = loss > 0 ? loss : 0;
    l->nsteps++;
    return MP_OK;
}

/* ---- torchtitan ---- */

mp_status cal_titan_line(mp_log *l, cal_step_state *ss, int ln, const char *line, mp_diag *d)
{
    const char *p = strstr(line, "step:");
    if (!p || !(strstr(p, "tps:") || strstr(p, "loss:")))
        return MP_OK;
    int g = cal_grow((void **)&l->steps, &l->nsteps, sizeof *l->steps, &ss->scap);
    if (g)
        return g == -1 ? MP_ERR_RANGE : MP_ERR_NOMEM;
    mp_train_step *s = &l->steps[l->nsteps];
    memset(s, 0, sizeof *s);
    s->line = ln;
    double v = cal_after(p, "step:");
    if (!cal_count(v, &s->step)) {
        if (v >= 0)
            mp_diag_add(d, "%s:%d: step: %g: expected a whole step number up to 2^53", l->file,
                        ln, v);
        else
            mp_diag_add(d, "%s:%d: step: expected the step number", l->file, ln);
        return MP_ERR_INPUT;
    }
    if ((v = cal_after(p, "loss:")) >= 0) s->loss = v;
    if ((v = cal_after(p, "tps:")) >= 0) s->tokens_per_s_per_gpu = v;
    if ((v = cal_after(p, "tflops:")) >= 0) s->tflops_per_gpu = v;
    if ((v = cal_after(p, "mfu:")) >= 0) s->mfu_frac = v / 100.0;
    const char *m = strstr(p, "memory:");
    if (m) {
        double gib = 0, pct = 0;
        char unit[8] = {0};
        if (sscanf(m + 7, " %lf%7[A-Za-z](%lf%%)", &gib, unit, &pct) < 2) {
            mp_diag_add(d, "%s:%d: memory: expected \"memory: 44.84GiB(47.19%%)\"", l->file, ln);
            return MP_ERR_INPUT;
        }
        mp_status st = unit_check(ss, unit, l->file, ln, "memory", d);
        if (st)
            return st;
        double scale = !strcmp(unit, "GiB") ? 1.0 : !strcmp(unit, "MiB") ? 1.0 / 1024 : 0;
        if (!scale) {
            mp_diag_add(d, "%s:%d: memory in %s: expected GiB or MiB", l->file, ln, unit);
            return MP_ERR_INPUT;
        }
        s->mem_gib = gib * scale;
        s->mem_frac = pct / 100.0;
    }
    l->nsteps++;
    return MP_OK;
}

mp_status mp_cal_parse_megatron_args(const char *text, size_t len, const char *origin,
                                     mp_megatron_args *out, mp_diag *diag)
{
    memset(out, 0, sizeof *out);
    char line[LINE_CAP];
    int ln = 0;
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && text[j] != '\n')
            j++;
        size_t n = j - i < LINE_CAP - 1 ? j - i : LINE_CAP - 1;
        memcpy(line, text + i, n);
        line[n] = 0;
        ln++;
        i = j + 1;
        cal_megatron_args_line(out, ln, line);
    }
    if (!out->found) {
        mp_diag_add(diag, "%s:1: expected a printed Megatron-LM arguments block (lines \"  name "
                    "........ value\"); found none", origin ? origin : "(config)");
        return MP_ERR_INPUT;
    }
    return MP_OK;
}

static void key_add(char *buf, size_t cap, int *n, const char *key, long long v, const char *sv)
{
    size_t used = strlen(buf);
    if (used + 1 >= cap)
        return;
    if (sv)
        snprintf(buf + used, cap - used, "%s%s=%s", *n ? "," : "", key, sv);
    else
        snprintf(buf + used, cap - used, "%s%s=%lld", *n ? "," : "", key, v);
    (*n)++;
}

int mp_megatron_args_plan(const mp_megatron_args *a, char *buf, size_t cap)
{
    int n = 0;
    if (!cap)
        return 0;
    buf[0] = 0;
    const struct { const char *k; int64_t v; } ints[] = {
        {"tp", a->tp}, {"pp", a->pp}, {"vpp", a->vpp}, {"cp", a->cp}, {"ep", a->ep},
        {"mb", a->mb}, {"gb", a->gb}, {"seq", a->seq}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (ints[i].v > 0)
            key_add(buf, cap, &n, ints[i].k, (long long)ints[i].v, NULL);
    if (a->found && a->dist_opt) key_add(buf, cap, &n, "zero", 1, NULL);
    if (a->found && a->sp) key_add(buf, cap, &n, "sp", 1, NULL);
    if (a->recompute[0]) key_add(buf, cap, &n, "recompute", 0, a->recompute);
    if (a->fp8) key_add(buf, cap, &n, "precision", 0, "fp8");
    else if (a->fp16) key_add(buf, cap, &n, "precision", 0, "fp16");
    return n;
}
