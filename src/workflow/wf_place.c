/* src/workflow/wf_place.c — placing an allocation on nodes: whole-GPU replicas by first-fit
 * decreasing of their TP size into nodes (power-of-two sizes into power-of-two nodes: never
 * split while the GPUs suffice), shared GPUs (1/4, 1/2 shares) packed the same way into GPUs
 * taken after them; a TP group that fits no node is spread over several and priced
 * (wf_split_cost_s: its all-reduces over the scale-out link). Fragmentation: free GPUs in partly
 * used nodes / all free GPUs (free GPUs a TP group of a node's size cannot use). */
#include <stdio.h>
#include <string.h>

#include "workflow/wf_internal.h"

#define WF_MAX_NODES 8192
#define WF_MAX_SHARED 4096

static void append(char *dst, size_t cap, const char *piece)
{
    size_t n = strlen(dst), k = strlen(piece);
    if (n + k + 2 >= cap) {
        if (n + 4 < cap && (n < 3 || strcmp(dst + n - 3, "...") != 0))
            strcat(dst, "...");
        return;
    }
    if (n)
        strcat(dst, ",");
    strcat(dst, piece);
}

void wf_place(const mp_workflow *w, const mp_cluster *c, int64_t gpus, const wf_llm_opts *lo,
              const wf_choice *ch, mp_wf_alloc *a)
{
    const int gpn = c->gpus_per_node > 0 ? c->gpus_per_node : 1;
    int nn = (int)((gpus + gpn - 1) / gpn);
    nn = nn > WF_MAX_NODES ? WF_MAX_NODES : nn;
    static int used[WF_MAX_NODES];
    char buf[64];
    for (int n = 0; n < nn; n++)
        used[n] = 0;
    int size_of_last = (int)(gpus - (int64_t)(nn - 1) * gpn);
#define NODE_CAP(n) ((n) == nn - 1 ? size_of_last : gpn)
    for (int l = 0; l < w->nllms; l++)
        a->llm[l].placement[0] = '\0';
    /* whole-GPU groups, largest TP first (LLM order within a size) */
    for (int tp = 8; tp >= 1; tp /= 2)
        for (int l = 0; l < w->nllms; l++) {
            const wf_option *o = &lo[l].opt[ch->o[l]];
            if (o->frac < 1.0 || o->tp != tp)
                continue;
            for (int r = 0; r < ch->dp[l]; r++) {
                int n = 0;
                while (n < nn && NODE_CAP(n) - used[n] < tp)
                    n++;
                if (n < nn) {
                    if (tp == 1)
                        snprintf(buf, sizeof buf, "n%d:g%d", n, used[n]);
                    else
                        snprintf(buf, sizeof buf, "n%d:g%d-%d", n, used[n], used[n] + tp - 1);
                    used[n] += tp;
                    append(a->llm[l].placement, sizeof a->llm[l].placement, buf);
                    continue;
                }
                int left = tp, piece = tp;
                for (n = 0; n < nn && left > 0; n++) {
                    int take = NODE_CAP(n) - used[n] < left ? NODE_CAP(n) - used[n] : left;
                    if (take <= 0)
                        continue;
                    snprintf(buf, sizeof buf, "n%d:g%d-%d", n, used[n], used[n] + take - 1);
                    append(a->llm[l].placement, sizeof a->llm[l].placement, buf);
                    used[n] += take;
                    left -= take;
                    piece = take < piece ? take : piece;
                }
                if (left > 0)
                    append(a->llm[l].placement, sizeof a->llm[l].placement, "unplaced");
                a->split_groups++;
                a->split_cost_s += wf_split_cost_s(w, c, l, tp, piece > 0 ? piece : 1, o->batch);
            }
        }
    /* shared GPUs: halves first, then quarters, each into the first shared GPU with room */
    static double room[WF_MAX_SHARED];
    static int at_node[WF_MAX_SHARED], at_gpu[WF_MAX_SHARED];
    int ns = 0;
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < w->nllms; l++) {
            const wf_option *o = &lo[l].opt[ch->o[l]];
            if (o->frac >= 1.0 || (h == 0) != (o->frac > 0.3))
                continue;
            for (int r = 0; r < ch->dp[l]; r++) {
                int s = 0;
                while (s < ns && room[s] < o->frac - 1e-9)
                    s++;
                if (s == ns) {
                    int n = 0;
                    while (n < nn && NODE_CAP(n) - used[n] < 1)
                        n++;
                    if (n == nn || ns == WF_MAX_SHARED) {
                        append(a->llm[l].placement, sizeof a->llm[l].placement, "unplaced");
                        continue;
                    }
                    room[ns] = 1.0;
                    at_node[ns] = n;
                    at_gpu[ns] = used[n]++;
                    ns++;
                }
                room[s] -= o->frac;
                snprintf(buf, sizeof buf, "n%d:g%d(%.2g)", at_node[s], at_gpu[s], o->frac);
                append(a->llm[l].placement, sizeof a->llm[l].placement, buf);
            }
        }
    int64_t free_all = 0, free_partial = 0;
    for (int n = 0; n < nn; n++) {
        int f = NODE_CAP(n) - used[n];
        free_all += f;
        if (used[n] > 0)
            free_partial += f;
    }
#undef NODE_CAP
    a->fragmentation_frac = free_all > 0 ? (double)free_partial / (double)free_all : 0.0;
}
