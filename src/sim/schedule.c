/* src/sim/schedule.c — the order in which one pipeline stage runs its forward (F), backward (B)
 * and weight-gradient (W) passes, for each schedule. Stage i of p, M micro-batches, v chunks.
 *
 * GPipe (Huang et al. 2019): all forwards, then all backwards (chunk by chunk, last chunk's
 *   backward first when v > 1).
 * 1F1B / PipeDream-Flush (Narayanan et al. 2021 Sec. 2.2.1): min(p-1-i, M) warm-up forwards, then
 *   one forward and one backward alternately, then the remaining backwards.
 * Interleaved 1F1B (Narayanan et al. 2021 Sec. 2.2.2; Megatron-LM
 *   forward_backward_pipelining_with_interleaving): micro-batches in groups of p run chunk by
 *   chunk — forward k is micro-batch (k / (p v)) p + k mod p of chunk (k / p) mod v, backward k
 *   the same micro-batch of chunk v-1-((k / p) mod v); warm-up min(2(p-1-i) + (v-1)p, M v)
 *   forwards, then alternation. A last group smaller than p is handled the same way, with its size.
 * ZB-H1 (Qi et al. 2023 Sec. 2.1, Fig. 3 top): 1F1B's order with the backward split into B (input
 *   gradient, on the critical path) and W (weight gradient); stage i delays its W passes by i
 *   backwards, so every stage holds p micro-batches in flight, as 1F1B's first stage does; the
 *   delayed W passes fill the drain.
 */
#include "sim_internal.h"

static int64_t push(sim_op *out, int64_t n, int type, int64_t mb, int chunk)
{
    out[n].type = (uint8_t)type;
    out[n].mb = (int32_t)mb;
    out[n].chunk = chunk;
    return n + 1;
}

/* Interleaved order: the k-th forward (backward when bwd) as (micro-batch, chunk). */
static void interleaved_at(int64_t k, int p, int v, int64_t M, int bwd, int64_t *mb, int *chunk)
{
    int64_t per_group = (int64_t)p * v;
    int64_t group = k / per_group, r = k % per_group;
    int64_t first = group * p;
    int64_t gsize = M - first < p ? M - first : p; /* the last group may be short */
    int64_t c = r / gsize;
    *mb = first + r % gsize;
    *chunk = (int)(bwd ? v - 1 - c : c);
}

int64_t sim_schedule(mp_schedule s, int p, int v, int64_t M, int stage, sim_op *out)
{
    int64_t n = 0;
    if (s == MP_SCHED_GPIPE) {
        for (int c = 0; c < v; c++)
            for (int64_t j = 0; j < M; j++)
                n = push(out, n, OP_F, j, c);
        for (int c = v - 1; c >= 0; c--)
            for (int64_t j = 0; j < M; j++)
                n = push(out, n, OP_B, j, c);
        return n;
    }
    if (s == MP_SCHED_INTERLEAVED && v > 1) {
        int64_t total = M * v;
        int64_t w = 2 * (int64_t)(p - 1 - stage) + (int64_t)(v - 1) * p;
        if (w > total)
            w = total;
        int64_t mb;
        int c;
        for (int64_t k = 0; k < w; k++) {
            interleaved_at(k, p, v, M, 0, &mb, &c);
            n = push(out, n, OP_F, mb, c);
        }
        for (int64_t k = 0; k < total - w; k++) {
            interleaved_at(w + k, p, v, M, 0, &mb, &c);
            n = push(out, n, OP_F, mb, c);
            interleaved_at(k, p, v, M, 1, &mb, &c);
            n = push(out, n, OP_B, mb, c);
        }
        for (int64_t k = total - w; k < total; k++) {
            interleaved_at(k, p, v, M, 1, &mb, &c);
            n = push(out, n, OP_B, mb, c);
        }
        return n;
    }
    /* 1F1B, and ZB-H1 on the same skeleton. */
    int zb = s == MP_SCHED_ZB;
    int64_t w = p - 1 - stage;
    if (w > M)
        w = M;
    int64_t delay = stage; /* ZB-H1: W of micro-batch k runs after the B of k + stage */
    for (int64_t k = 0; k < w; k++)
        n = push(out, n, OP_F, k, 0);
    for (int64_t k = 0; k < M; k++) {
        if (k + w < M)
            n = push(out, n, OP_F, k + w, 0);
        n = push(out, n, OP_B, k, 0);
        if (zb && k - delay >= 0)
            n = push(out, n, OP_W, k - delay, 0);
    }
    if (zb)
        for (int64_t k = M - delay < 0 ? 0 : M - delay; k < M; k++)
            n = push(out, n, OP_W, k, 0);
    return n;
}
