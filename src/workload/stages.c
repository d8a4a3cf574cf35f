/* src/workload/stages.c — what each pipeline stage holds (layer kinds with counts, parameters per
 * GPU) and one micro-batch's time on it from the priced layer kinds.
 *
 * Layers of stage i (of p, v model chunks each): chunk j of the C = p*v chunks holds L/C layers,
 * the first L%C chunks one more, and stage i holds chunks i, i+p, ... — with v = 1 the
 * contiguous split of Megatron-LM. The embedding is on the first stage; the final norm, the LM
 * head and the MTP modules (DeepSeek-AI 2024 Sec. 2.2) on the last. */
#include <math.h>
#include <string.h>

#include "workload_internal.h"

static void stage_layers(const mp_workload *w, const mp_model *m, int i, double *nl, double *nmoe)
{
    const int p = w->pp, v = w->vpp;
    const int64_t L = m->layers, C = (int64_t)p * v, q = L / C, r = L % C;
    if (!w->moe) {
        int64_t lmin = L / p, lextra = L % p;
        *nl = (double)(lmin + (i < lextra ? 1 : 0));
        *nmoe = 0.0;
        return;
    }
    int64_t n = 0, nm = 0;
    for (int64_t j = i; j < C; j += p) {
        int64_t first = j * q + (j < r ? j : r), cnt = q + (j < r ? 1 : 0);
        n += cnt;
        nm += mp_model_moe_layers_in(m, first, cnt);
    }
    *nl = (double)n;
    *nmoe = (double)nm;
}

void mp_workload_stage(const mp_workload *w, const mp_model *m, int i, mp_wl_stage *out)
{
    memset(out, 0, sizeof *out);
    if (i < 0 || i >= w->pp)
        return;
    const mp_param_count *pc = &w->params;
    const double tp = (double)w->tp;
    double nl, nm;
    stage_layers(w, m, i, &nl, &nm);
    out->n[MP_LK_DENSE] = nl - nm;
    out->n[MP_LK_MOE] = nm;
    /* Parameters before the TP split: non-expert (its layers, the embedding on the first stage,
     * the final norm, the LM head and the MTP modules' non-expert part on the last), routed
     * experts per GPU, and the non-linear ones (embedding, head: no fp8 copies). */
    const double epl = w->moe ? (double)m->moe_experts / w->ep * (double)pc->expert / w->etp : 0.0;
    double dense_p = (nl - nm) * (double)pc->per_layer + nm * w->moe_nonexpert_per_layer;
    double exp_p = nm * epl, nonlin = 0.0;
    if (i == 0) {
        out->n[MP_LK_EMBED] = 1.0;
        dense_p += (double)pc->embedding;
        nonlin += (double)pc->embedding;
    }
    if (i == w->pp - 1) {
        double head = (double)(pc->lm_head ? pc->lm_head
                                           : (w->pp > 1 ? (int64_t)(w->vocab_padded * (double)m->hidden) : 0));
        out->n[MP_LK_HEAD] = 1.0;
        out->n[MP_LK_MTP] = w->mtp_modules;
        dense_p += (double)pc->final_norm + head;
        nonlin += head;
        if (m->mtp_layers > 0) {
            dense_p += (double)pc->mtp - (w->mtp_moe ? w->mtp_modules * (double)(m->moe_experts * pc->expert) : 0.0);
            exp_p += w->mtp_moe ? w->mtp_modules * epl : 0.0;
        }
    }
    out->params = dense_p / tp;
    out->expert_params = exp_p;
    out->nonlinear_params = nonlin / tp;
}

int mp_workload_stage_same(const mp_wl_stage *a, const mp_wl_stage *b)
{
    for (int k = 0; k < MP_LK_COUNT; k++)
        if (a->n[k] != b->n[k])
            return 0;
    return 1;
}

/* Add stage i's counts s to the runs (a new run unless it equals the last) and the maxima. */
static void add_stage(mp_workload *w, int i, int count, const mp_wl_stage *s, int *nruns,
                      int *overflow, double *max_total)
{
    if (*nruns > 0 && !*overflow && mp_workload_stage_same(s, &w->run[*nruns - 1].s)) {
        w->run[*nruns - 1].count += count;
        return; /* the same parameters: no new maximum */
    }
    if (*nruns < MP_WL_MAX_RUNS && !*overflow) {
        w->run[*nruns].first = i;
        w->run[*nruns].count = count;
        w->run[*nruns].s = *s;
        (*nruns)++;
    } else {
        *overflow = 1;
    }
    if (s->expert_params > w->expert_params_per_gpu)
        w->expert_params_per_gpu = s->expert_params;
    if (s->params + s->expert_params > *max_total) {
        *max_total = s->params + s->expert_params;
        w->stage_params_max = s->params;
        w->stage_expert_params_max = s->expert_params;
        w->stage_linear_params_max = fmax(0.0, s->params - s->nonlinear_params) + s->expert_params;
    }
}

/* The runs of like stages and the per-stage maxima. A dense model's stages change only at
 * stage 1 (after the embedding), at L mod p (where stages stop holding one more layer) and at
 * the last (the head): one stage of each segment is enough. An MoE model's are walked. */
static void stage_maxima(mp_workload *w, const mp_model *m)
{
    const int64_t L = m->layers, lmin = L / w->pp, lextra = L % w->pp;
    w->layers_per_stage_min = (int)lmin;
    w->layers_per_stage_max = (int)(lmin + (lextra ? 1 : 0));
    double max_total = -1.0;
    int nruns = 0, overflow = 0;
    mp_wl_stage s;
    if (!w->moe) {
        /* segment ends, ascending; one that does not pass the previous (pp 1 or 2) is skipped */
        int cut[4], nc = 0, prev = 0;
        cut[nc++] = 1;
        if (lextra > 1 && lextra < w->pp - 1)
            cut[nc++] = (int)lextra;
        cut[nc++] = w->pp - 1;
        cut[nc++] = w->pp;
        for (int k = 0; k < nc; k++) {
            if (cut[k] <= prev)
                continue;
            mp_workload_stage(w, m, prev, &s);
            add_stage(w, prev, cut[k] - prev, &s, &nruns, &overflow, &max_total);
            prev = cut[k];
        }
    } else {
        for (int i = 0; i < w->pp; i++) {
            mp_workload_stage(w, m, i, &s);
            add_stage(w, i, 1, &s, &nruns, &overflow, &max_total);
        }
    }
    w->nruns = overflow ? 0 : nruns;
}

void mp_wl_stages(mp_workload *w, const mp_model *m, mp_wl_cache *cache)
{
    const int64_t key[5] = {w->pp, w->vpp, w->tp, w->ep, w->etp};
    mp_wl_stage_memo *x = cache ? &cache->stages[(w->pp + 7 * w->vpp + 3 * w->tp) & 3] : NULL;
    if (x && x->set && mp_wl_bytes_eq(x->key, key, sizeof key)) {
        w->nruns = x->nruns;
        memcpy(w->run, x->run, (size_t)x->nruns * sizeof w->run[0]);
        w->layers_per_stage_min = x->lmin, w->layers_per_stage_max = x->lmax;
        w->stage_params_max = x->params_max, w->stage_expert_params_max = x->expert_max;
        w->stage_linear_params_max = x->linear_max, w->expert_params_per_gpu = x->expert_per_gpu;
        return;
    }
    stage_maxima(w, m);
    if (!x)
        return;
    memcpy(x->key, key, sizeof key);
    x->nruns = w->nruns;
    memcpy(x->run, w->run, (size_t)w->nruns * sizeof w->run[0]);
    x->lmin = w->layers_per_stage_min, x->lmax = w->layers_per_stage_max;
    x->params_max = w->stage_params_max, x->expert_max = w->stage_expert_params_max;
    x->linear_max = w->stage_linear_params_max, x->expert_per_gpu = w->expert_params_per_gpu;
    x->set = 1;
}

int mp_workload_runs(const mp_workload *w)
{
    return w->nruns > 0 ? w->nruns : w->pp;
}

void mp_workload_run(const mp_workload *w, const mp_model *m, int r, mp_wl_stage *s, int *first,
                     int *count)
{
    if (w->nruns > 0 && r >= 0 && r < w->nruns) {
        *s = w->run[r].s;
        *first = w->run[r].first;
        *count = w->run[r].count;
        return;
    }
    mp_workload_stage(w, m, r, s);
    *first = r;
    *count = r >= 0 && r < w->pp ? 1 : 0;
}

void mp_workload_stage_time(const mp_workload *w, const mp_wl_stage *s, int last,
                            mp_wl_stage_time *out)
{
    const mp_wl_layer *d = &w->layer[MP_LK_DENSE], *mo = &w->layer[MP_LK_MOE];
    const mp_wl_layer *hd = &w->layer[MP_LK_HEAD], *mt = &w->layer[MP_LK_MTP];
    const mp_wl_layer *em = &w->layer[MP_LK_EMBED];
    const double nd = s->n[MP_LK_DENSE], nm = s->n[MP_LK_MOE], nl = nd + nm;
    const double nh = last ? s->n[MP_LK_HEAD] : 0.0, nx = last ? s->n[MP_LK_MTP] : 0.0;
    /* FSDP2: a layer's gather is copied out before its forward and again before its backward;
     * the root module (embedding, final norm and
     * LM head) once per micro-batch, FSDP2 keeping it gathered from forward to backward; an MTP
     * module as a layer (mp_fsdp_copy_out_s). */
    out->copy_out_s = 2.0 * (nd * d->copy_out_s + nm * mo->copy_out_s) + s->n[MP_LK_EMBED] * em->copy_out_s +
                      (last ? nh * hd->copy_out_s + 2.0 * nx * mt->copy_out_s : 0.0);
    out->compute_s = nd * (d->fwd_s + d->bwd_s) + nm * (mo->fwd_s + mo->bwd_s) +
                     (last ? nh * (hd->fwd_s + hd->bwd_s) + nx * (mt->fwd_s + mt->bwd_s) : 0.0) +
                     out->copy_out_s;
    out->recompute_s = nd * d->recompute_s + nm * mo->recompute_s;
    /* The MTP module's layer communicates as a layer of its kind. */
    double xd = last && !w->mtp_moe ? nx : 0.0, xm = last && w->mtp_moe ? nx : 0.0;
    out->tp_s = (nd + xd) * (2.0 * d->tp_fwd_s + d->tp_recompute_s) +
                (nm + xm) * (2.0 * mo->tp_fwd_s + mo->tp_recompute_s);
    out->cp_s = (nl + xd + xm) * (d->cp_fwd_s + d->cp_bwd_s);
    out->ep_s = (nm + xm) * (mo->ep_fwd_s + mo->ep_bwd_s + mo->ep_recompute_s);
    out->total_s = out->compute_s + out->recompute_s + out->tp_s + out->cp_s + out->ep_s;
    out->attn_s = (nl + nx) * 3.5 * d->attn_s;
    out->fwd_s = nd * (d->fwd_s + d->tp_fwd_s + d->cp_fwd_s) +
                 nm * (mo->fwd_s + mo->tp_fwd_s + mo->ep_fwd_s + mo->cp_fwd_s) +
                 (last ? nh * hd->fwd_s + nx * mt->fwd_s : 0.0);
    /* weight-gradient GEMMs: the forward GEMMs' FLOPs (Qi et al. 2023 Sec. 2) */
    out->weight_s = nd * d->bwd_weight_s + nm * mo->bwd_weight_s + (last ? nh * hd->bwd_weight_s : 0.0);
}
