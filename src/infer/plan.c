/* src/infer/plan.c — the inference plan: its key table (infer_keys.h), parsing, formatting and
 * help, through the plan-key machinery shared with the training plan (src/plan/plan_key.c). */
#include <stdio.h>
#include <string.h>

#include "infer/infer_keys.h"
#include "meshplan/infer.h"
#include "plan/plan_key.h"

static const char *const weights_names[] = {"bf16", "fp16", "fp8", "fp4", "int8", "int4"};
static const char *const kv_names[] = {"bf16", "fp8"};
static const char *const engine_names[] = {"vllm", "sglang", "trtllm", "hf"};
_Static_assert(sizeof weights_names / sizeof *weights_names == MP_WQ_COUNT, "weights names");
_Static_assert(sizeof kv_names / sizeof *kv_names == MP_KVQ_COUNT, "kv names");
_Static_assert(sizeof engine_names / sizeof *engine_names == MP_ENGINE_COUNT, "engine names");

const char *mp_infer_weights_name(mp_infer_weights w) { return (unsigned)w < MP_WQ_COUNT ? weights_names[w] : "?"; }
const char *mp_infer_kv_name(mp_infer_kv k) { return (unsigned)k < MP_KVQ_COUNT ? kv_names[k] : "?"; }
const char *mp_engine_name(mp_engine_id e) { return (unsigned)e < MP_ENGINE_COUNT ? engine_names[e] : "?"; }

double mp_infer_weights_bytes(mp_infer_weights w)
{
    static const double b[MP_WQ_COUNT] = {2.0, 2.0, 1.0, 0.5, 1.0, 0.5};
    return (unsigned)w < MP_WQ_COUNT ? b[w] : 0.0;
}

#define INFER_ROW(...) MP_PLAN_KEY_ROW(mp_infer_plan, __VA_ARGS__)
static const mp_plan_key_def infer_keys[] = {MP_INFER_KEYS(INFER_ROW)};
#undef INFER_ROW
enum { N_INFER_KEYS = (int)(sizeof infer_keys / sizeof infer_keys[0]) };
_Static_assert(N_INFER_KEYS <= 32, "mp_infer_plan.given keeps one bit per key");

void mp_infer_plan_init(mp_infer_plan *p)
{
    memset(p, 0, sizeof *p);
    p->tp = p->pp = p->ep = 1;
    p->batch = 1;
    p->in = 1024;
    p->out = 128;
    p->cuda_graphs = -1;
}

typedef struct {
    mp_infer_plan *p;
    mp_diag *diag;
    int errors;
} parse_state;

static void parse_token(char *key, char *val, void *ctx)
{
    parse_state *s = ctx;
    if (!val) {
        mp_diag_add(s->diag, "plan: \"%s\": expected key=value", key);
        s->errors++;
        return;
    }
    int k = mp_plan_key_find(infer_keys, N_INFER_KEYS, key);
    if (k < 0) {
        const mp_plan_key_def *tabs[1] = {infer_keys};
        int ns[1] = {N_INFER_KEYS};
        mp_plan_key_unknown(key, val, tabs, ns, 1, s->diag);
        s->errors++;
        return;
    }
    if (s->p->given & (1u << k)) {
        mp_diag_add(s->diag, "plan: key \"%s\" given twice (second value \"%s\")", key, val);
        s->errors++;
        return;
    }
    s->p->given |= 1u << k;
    if (!mp_plan_key_parse(&infer_keys[k], val, s->p, s->diag))
        s->errors++;
}

mp_status mp_infer_plan_parse(const char *text, mp_infer_plan *p, mp_diag *diag)
{
    if (!text)
        return MP_OK;
    if (strlen(text) > MP_PLAN_TEXT_MAX) {
        mp_diag_add(diag, "plan: %zu characters: expected at most %d", strlen(text), MP_PLAN_TEXT_MAX);
        return MP_ERR_INPUT;
    }
    parse_state s = {p, diag, 0};
    mp_plan_key_tokens(text, parse_token, &s);
    return s.errors ? MP_ERR_INPUT : MP_OK;
}

int mp_infer_plan_format(const mp_infer_plan *p, char *buf, size_t cap)
{
    size_t len = 0;
    if (cap)
        buf[0] = '\0';
    for (int k = 0; k < N_INFER_KEYS; k++)
        mp_plan_key_format(&infer_keys[k], p, buf, cap, &len);
    /* drop the leading comma of the first ",key=value" */
    if (len > 0 && cap > 0 && buf[0] == ',')
        memmove(buf, buf + 1, strlen(buf));
    return len > 0 ? (int)len - 1 : 0;
}

int mp_infer_plan_keys_help(char *buf, size_t cap)
{
    return mp_plan_key_help(infer_keys, N_INFER_KEYS, buf, cap);
}
