/* src/search/search_report.c — the search result as a text report, JSON (jansson) and CSV. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "meshplan/format.h"
#include "meshplan/search.h"

#define GiB 1073741824.0
/* Frontier rows shown in the text report; JSON and CSV list them all. */
#define TEXT_FRONTIER_ROWS 15

static void plan_cells(FILE *f, const mp_search_entry *e)
{
    const mp_plan *p = &e->plan;
    fprintf(f, "%6lld %3lld %3lld %3lld %3lld %5lld", (long long)e->gpus, (long long)p->tp,
            (long long)p->cp, (long long)p->pp, (long long)p->vpp, (long long)p->dp);
    fprintf(f, " %3lld %2d %4d ", (long long)p->mb, p->sp, p->zero);
    if (p->hsdp)
        fprintf(f, "%4lld", (long long)p->hsdp);
    else
        fprintf(f, "%4s", "-");
    fprintf(f, " %-9s", mp_recompute_name(p->recompute));
    if (p->ep > 1 || p->etp > 1)
        fprintf(f, " ep%lld etp%lld", (long long)p->ep, (long long)p->etp);
    if (p->cp_algo != MP_CP_RING)
        fprintf(f, " cp:%s", mp_cp_algo_name(p->cp_algo));
    if (p->order_listed) {
        char o[48];
        fprintf(f, " order:%s", mp_plan_order_text(p, o, sizeof o));
    }
}

static void plan_header(FILE *f)
{
    fprintf(f, "%6s %3s %3s %3s %3s %5s %3s %2s %4s %4s %-9s", "gpus", "tp", "cp", "pp", "vpp", "dp",
            "mb", "sp", "zero", "hsdp", "recompute");
}

static void metrics_cells(FILE *f, const mp_search_opts *o, const mp_search_entry *e)
{
    fprintf(f, " %9.4g %11.4g %5.1f%% %7.1f %7.1f", e->step_s, e->tokens_per_s, 100.0 * e->mfu,
            e->memory_bytes / GiB, e->headroom_bytes / GiB);
    if (o->tokens > 0)
        fprintf(f, " %8.2f", e->time_to_train_s / 86400.0);
    if (o->price_per_gpu_hour > 0)
        fprintf(f, " %11.4g", e->cost_usd);
    if (o->energy)
        fprintf(f, " %9.4g", e->energy_J_per_token);
}

static void metrics_header(FILE *f, const mp_search_opts *o)
{
    fprintf(f, " %9s %11s %6s %7s %7s", "step_s", "tokens/s", "MFU", "mem_GiB", "free_GiB");
    if (o->tokens > 0)
        fprintf(f, " %8s", "days");
    if (o->price_per_gpu_hour > 0)
        fprintf(f, " %11s", o->tokens > 0 ? "cost_usd" : "usd_per_Mtok");
    if (o->energy)
        fprintf(f, " %9s", "J_per_tok");
}

static void entry_row(FILE *f, const mp_search_opts *o, int rank, const mp_search_entry *e)
{
    if (rank > 0)
        fprintf(f, "%4d ", rank);
    else
        fprintf(f, "%4s ", "");
    plan_cells(f, e);
    metrics_cells(f, o, e);
    fprintf(f, "  %s%s\n", e->verdict == MP_VERDICT_TIGHT ? "[tight: inside the memory margin] " : "",
            e->bottleneck);
}

/* The search ranks by its objective; a tight plan ranked above a safe one is said so. */
static void tight_note(FILE *f, const mp_search_result *r)
{
    int first_safe = -1, tight_above = 0;
    for (int i = 0; i < r->ntop; i++) {
        if (r->top[i].verdict == MP_VERDICT_FITS) {
            first_safe = i;
            break;
        }
        tight_above += r->top[i].verdict == MP_VERDICT_TIGHT;
    }
    if (tight_above && first_safe >= 0)
        fprintf(f, "note: the %d plan%s ranked above #%d %s tight (memory inside the margin, may run "
                   "out of memory); #%d is the best plan that fits with the margin to spare\n",
                tight_above, tight_above == 1 ? "" : "s", first_safe + 1,
                tight_above == 1 ? "is" : "are", first_safe + 1);
    else if (tight_above)
        fprintf(f, "note: every listed plan is tight (memory inside the margin, may run out of memory)\n");
}

void mp_search_report_text(FILE *f, const mp_model *m, const mp_cluster *clusters, int nclusters,
                           const mp_search_opts *o, const mp_search_result *r)
{
    const mp_cluster *c0 = &clusters[0];
    fprintf(f, "search: %s (%s) on ", m->key, m->name);
    if (nclusters == 1)
        fprintf(f, "%s\n", c0->name);
    else
        fprintf(f, "%s x %lld..%lld GPUs (%d counts)\n", c0->gpu.key, (long long)clusters[0].num_gpus,
                (long long)clusters[nclusters - 1].num_gpus, nclusters);
    const int64_t seq = o->pin.seq ? o->pin.seq : m->seq_len;
    char docs[64] = "";
    if (o->pin.doc_len > 0)
        snprintf(docs, sizeof docs, " over documents of %lld tokens", (long long)o->pin.doc_len);
    fprintf(f, "job: gb %lld x seq %lld = %.4g tokens per step, %s, %s attention%s%s; objective %s",
            (long long)o->pin.gb, (long long)seq, (double)o->pin.gb * (double)seq,
            mp_dtype_name(o->pin.precision), o->pin.flash ? "fused" : "unfused", docs,
            o->pin.fsdp == 2 ? ", ZeRO-3 as FSDP2" : "", mp_objective_name(o->objective));
    if (o->tokens > 0)
        fprintf(f, ", budget %.4g tokens", o->tokens);
    if (o->price_per_gpu_hour > 0)
        fprintf(f, ", $%.4g per GPU-hour", o->price_per_gpu_hour);
    fprintf(f, "\n");
    const mp_search_counts *k = &r->counts;
    fprintf(f, "space: %llu plans below %llu degree shapes (tp, cp, pp) that can be formed, of %llu tried\n",
            (unsigned long long)k->plans, (unsigned long long)(k->shapes - k->shapes_rejected),
            (unsigned long long)k->shapes);
    fprintf(f, "evaluated %llu plans in %.3f s on %d thread%s; %llu more found over memory before "
            "their timing; %llu proven over memory and %llu communication variants (CP algorithm, "
            "rank order) proven unable to matter, without evaluation",
            (unsigned long long)k->evaluated, r->wall_s, r->threads, r->threads == 1 ? "" : "s",
            (unsigned long long)k->memory_checked, (unsigned long long)k->over_memory_proven,
            (unsigned long long)k->order_skipped);
    if (k->bound_skipped)
        fprintf(f, "; %llu feasible plans proven unable to matter by a lower bound on their step "
                   "and never timed", (unsigned long long)k->bound_skipped);
    fprintf(f, "\n\n");

    if (r->ntop) {
        fprintf(f, "top %d of %llu feasible plans (%s):\n", r->ntop, (unsigned long long)k->feasible,
                mp_objective_name(o->objective));
        fprintf(f, "%4s ", "#");
        plan_header(f);
        metrics_header(f, o);
        fprintf(f, "  bottleneck\n");
        for (int i = 0; i < r->ntop; i++)
            entry_row(f, o, i + 1, &r->top[i]);
        tight_note(f, r);
    } else {
        fprintf(f, "no plan fits in memory.\n");
        if (r->have_least_memory) {
            const mp_search_entry *e = &r->least_memory;
            char plan[512];
            mp_plan_format(&e->plan, plan, sizeof plan);
            fprintf(f, "the evaluated plan needing the least memory needs %.1f GiB of %.1f GiB: %s\n",
                    e->memory_bytes / GiB, e->capacity_bytes / GiB, plan);
        }
    }

    const struct { const char *title; const mp_search_entry *a; int n; } fr[] = {
        {"Pareto frontier, throughput vs memory headroom", r->pareto_memory, r->npareto_memory},
        {"Pareto frontier, throughput vs cost", r->pareto_cost, r->npareto_cost}};
    for (int s = 0; s < 2; s++) {
        if (!fr[s].n)
            continue;
        fprintf(f, "\n%s (%d plan%s, fastest first):\n", fr[s].title, fr[s].n, fr[s].n == 1 ? "" : "s");
        fprintf(f, "%4s ", "");
        plan_header(f);
        metrics_header(f, o);
        fprintf(f, "  bottleneck\n");
        int shown = fr[s].n < TEXT_FRONTIER_ROWS ? fr[s].n : TEXT_FRONTIER_ROWS;
        for (int i = 0; i < shown; i++)
            entry_row(f, o, 0, &fr[s].a[i]);
        if (fr[s].n > shown)
            fprintf(f, "     ... and %d more (--json or --csv lists them all)\n", fr[s].n - shown);
    }
    if (r->truncated)
        fprintf(f, "(a frontier reached %d points and was cut)\n", MP_SEARCH_MAX_FRONTIER);

    fprintf(f, "\nrejected:\n");
    fprintf(f, "  cannot be formed: %llu of %llu degree shapes (tp, cp, pp)\n",
            (unsigned long long)k->shapes_rejected, (unsigned long long)k->shapes);
    for (int i = 0; i < MP_RULE_COUNT; i++)
        if (k->rule[i])
            fprintf(f, "    %-12s %8llu  %s\n", mp_search_rule_key((mp_search_rule)i),
                    (unsigned long long)k->rule[i], mp_search_rule_text((mp_search_rule)i));
    fprintf(f, "  over memory: %llu plans (%llu of them proven without evaluation)\n",
            (unsigned long long)k->over_memory, (unsigned long long)k->over_memory_proven);
    if (k->failed)
        fprintf(f, "  estimator errors: %llu plans\n", (unsigned long long)k->failed);

    if (r->have_explanation)
        fprintf(f, "\nwhy #1: %s\n", r->explanation.text);
    fprintf(f, "\n%s\n", MP_MFU_CONVENTION);
    if (r->next_distinct_rank) {
        char plan[512];
        mp_plan_format(&r->next_distinct.plan, plan, sizeof plan);
        fprintf(f, "%llu plans share #1's score. Against #%llu, the first that scores differently "
                "(%s): %s\n", (unsigned long long)r->winner_ties,
                (unsigned long long)r->next_distinct_rank, plan, r->explanation_next.text);
    }
    if (o->rank_plan) {
        char plan[512];
        mp_plan_format(o->rank_plan, plan, sizeof plan);
        fprintf(f, "\ngiven plan %s:\n  ", plan);
        if (!r->rank_in_space)
            fprintf(f, "not in the space searched (a pinned key or the job differs)");
        if (!r->rank_feasible)
            fprintf(f, "%sdoes not fit (%.1f of %.1f GiB)", r->rank_in_space ? "" : "; ",
                    r->rank_entry.memory_bytes / GiB, r->rank_entry.capacity_bytes / GiB);
        else {
            fprintf(f, "%srank %llu of %llu feasible plans: step %.4g s, %.4g tokens/s",
                    r->rank_in_space ? "" : "; it would ", (unsigned long long)r->rank,
                    (unsigned long long)k->feasible, r->rank_entry.step_s, r->rank_entry.tokens_per_s);
            if (r->ntop)
                fprintf(f, " (#1 is %.1f%% faster)",
                        100.0 * (r->top[0].tokens_per_s / r->rank_entry.tokens_per_s - 1.0));
        }
        fprintf(f, "\n");
    }
}

/* ---- JSON ------------------------------------------------------------------------------- */

static json_t *num(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static json_t *entry_json(const mp_search_entry *e, json_int_t rank)
{
    const mp_plan *p = &e->plan;
    char plan[512];
    mp_plan_format(p, plan, sizeof plan);
    json_t *o = json_object();
    if (rank > 0)
        json_object_set_new(o, "rank", json_integer(rank));
    json_object_set_new(o, "plan", json_string(plan));
    json_object_set_new(o, "gpus", json_integer((json_int_t)e->gpus));
    json_object_set_new(o, "tp", json_integer((json_int_t)p->tp));
    json_object_set_new(o, "cp", json_integer((json_int_t)p->cp));
    json_object_set_new(o, "pp", json_integer((json_int_t)p->pp));
    json_object_set_new(o, "vpp", json_integer((json_int_t)p->vpp));
    json_object_set_new(o, "dp", json_integer((json_int_t)p->dp));
    json_object_set_new(o, "ep", json_integer((json_int_t)p->ep));
    json_object_set_new(o, "etp", json_integer((json_int_t)p->etp));
    json_object_set_new(o, "cp_algo", json_string(mp_cp_algo_name(p->cp_algo)));
    char ord[48];
    json_object_set_new(o, "order", json_string(mp_plan_order_text(p, ord, sizeof ord)));
    json_object_set_new(o, "mb", json_integer((json_int_t)p->mb));
    json_object_set_new(o, "sp", json_integer(p->sp));
    json_object_set_new(o, "zero", json_integer(p->zero));
    json_object_set_new(o, "hsdp", json_integer((json_int_t)p->hsdp));
    json_object_set_new(o, "recompute", json_string(mp_recompute_name(p->recompute)));
    json_object_set_new(o, "schedule", json_string(mp_schedule_name(p->schedule)));
    json_object_set_new(o, "feasible", json_boolean(e->feasible));
    json_object_set_new(o, "verdict", json_string(mp_verdict_name(e->verdict)));
    json_object_set_new(o, "score", num(e->score));
    json_object_set_new(o, "step_s", num(e->step_s));
    json_object_set_new(o, "tokens_per_s", num(e->tokens_per_s));
    json_object_set_new(o, "mfu", num(e->mfu));
    json_object_set_new(o, "memory_bytes", num(e->memory_bytes));
    json_object_set_new(o, "capacity_bytes", num(e->capacity_bytes));
    json_object_set_new(o, "headroom_bytes", num(e->headroom_bytes));
    json_object_set_new(o, "time_to_train_s", num(e->time_to_train_s));
    json_object_set_new(o, "cost_usd", num(e->cost_usd));
    json_object_set_new(o, "energy_J_per_token", num(e->energy_J_per_token));
    json_object_set_new(o, "bottleneck", json_string(e->bottleneck));
    return o;
}

static json_t *list_json(const mp_search_entry *a, int n, int ranked)
{
    json_t *arr = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(arr, entry_json(&a[i], ranked ? i + 1 : 0));
    return arr;
}

static json_t *explanation_json(const mp_search_explanation *x, json_int_t against)
{
    json_t *jx = json_object();
    json_object_set_new(jx, "against", json_integer(against));
    json_object_set_new(jx, "text", json_string(x->text));
    json_object_set_new(jx, "differs", json_string(x->differs));
    json_object_set_new(jx, "tied", json_boolean(x->tied));
    json_object_set_new(jx, "term", json_string(x->term));
    json_object_set_new(jx, "term_winner_s", num(x->term_winner_s));
    json_object_set_new(jx, "term_runner_up_s", num(x->term_runner_up_s));
    json_object_set_new(jx, "memory_term", json_string(x->memory_term));
    json_object_set_new(jx, "memory_winner_bytes", num(x->memory_winner_bytes));
    json_object_set_new(jx, "memory_runner_up_bytes", num(x->memory_runner_up_bytes));
    json_object_set_new(jx, "step_winner_s", num(x->step_winner_s));
    json_object_set_new(jx, "step_runner_up_s", num(x->step_runner_up_s));
    return jx;
}

char *mp_search_report_json(const mp_model *m, const mp_cluster *clusters, int nclusters,
                            const mp_search_opts *o, const mp_search_result *r)
{
    json_t *root = json_object();
    json_object_set_new(root, "model", json_string(m->key));
    json_object_set_new(root, "gpu", json_string(clusters[0].gpu.key));
    json_t *counts = json_array();
    for (int i = 0; i < nclusters; i++)
        json_array_append_new(counts, json_integer((json_int_t)clusters[i].num_gpus));
    json_object_set_new(root, "gpus", counts);
    json_object_set_new(root, "objective", json_string(mp_objective_name(o->objective)));
    json_t *job = json_object();
    json_object_set_new(job, "gb", json_integer((json_int_t)o->pin.gb));
    json_object_set_new(job, "seq", json_integer((json_int_t)(o->pin.seq ? o->pin.seq : m->seq_len)));
    json_object_set_new(job, "precision", json_string(mp_dtype_name(o->pin.precision)));
    json_object_set_new(job, "flash", json_boolean(o->pin.flash));
    json_object_set_new(job, "doc_len", json_integer((json_int_t)o->pin.doc_len));
    json_object_set_new(job, "fsdp", json_integer(o->pin.fsdp == 2 ? 2 : 1));
    json_object_set_new(job, "tokens", num(o->tokens));
    json_object_set_new(job, "price_per_gpu_hour", num(o->price_per_gpu_hour));
    json_object_set_new(root, "job", job);
    const mp_search_counts *k = &r->counts;
    json_t *jc = json_object();
    json_object_set_new(jc, "shapes", json_integer((json_int_t)k->shapes));
    json_object_set_new(jc, "shapes_rejected", json_integer((json_int_t)k->shapes_rejected));
    json_t *rules = json_object();
    for (int i = 0; i < MP_RULE_COUNT; i++)
        json_object_set_new(rules, mp_search_rule_key((mp_search_rule)i),
                            json_integer((json_int_t)k->rule[i]));
    json_object_set_new(jc, "rules", rules);
    json_object_set_new(jc, "plans", json_integer((json_int_t)k->plans));
    json_object_set_new(jc, "evaluated", json_integer((json_int_t)k->evaluated));
    json_object_set_new(jc, "feasible", json_integer((json_int_t)k->feasible));
    json_object_set_new(jc, "over_memory", json_integer((json_int_t)k->over_memory));
    json_object_set_new(jc, "over_memory_proven", json_integer((json_int_t)k->over_memory_proven));
    json_object_set_new(jc, "failed", json_integer((json_int_t)k->failed));
    json_object_set_new(jc, "order_skipped", json_integer((json_int_t)k->order_skipped));
    json_object_set_new(jc, "memory_checked", json_integer((json_int_t)k->memory_checked));
    json_object_set_new(jc, "bound_skipped", json_integer((json_int_t)k->bound_skipped));
    json_object_set_new(root, "counts", jc);
    json_object_set_new(root, "top", list_json(r->top, r->ntop, 1));
    json_object_set_new(root, "pareto_memory", list_json(r->pareto_memory, r->npareto_memory, 0));
    json_object_set_new(root, "pareto_cost", list_json(r->pareto_cost, r->npareto_cost, 0));
    json_object_set_new(root, "truncated", json_boolean(r->truncated));
    json_object_set_new(root, "least_memory",
                        r->have_least_memory ? entry_json(&r->least_memory, 0) : json_null());
    json_object_set_new(root, "explanation",
                        r->have_explanation ? explanation_json(&r->explanation, 2) : json_null());
    json_object_set_new(root, "winner_ties", json_integer((json_int_t)r->winner_ties));
    json_object_set_new(root, "explanation_next",
                        r->next_distinct_rank
                            ? explanation_json(&r->explanation_next, (json_int_t)r->next_distinct_rank)
                            : json_null());
    json_object_set_new(root, "next_distinct",
                        r->next_distinct_rank ? entry_json(&r->next_distinct, (json_int_t)r->next_distinct_rank)
                                              : json_null());
    if (o->rank_plan) {
        json_t *jr = json_object();
        json_object_set_new(jr, "in_space", json_boolean(r->rank_in_space));
        json_object_set_new(jr, "feasible", json_boolean(r->rank_feasible));
        json_object_set_new(jr, "rank", r->rank_feasible ? json_integer((json_int_t)r->rank) : json_null());
        json_object_set_new(jr, "of_feasible", json_integer((json_int_t)k->feasible));
        json_object_set_new(jr, "entry", entry_json(&r->rank_entry, 0));
        json_object_set_new(root, "rank", jr);
    } else {
        json_object_set_new(root, "rank", json_null());
    }
    json_object_set_new(root, "wall_s", num(r->wall_s));
    json_object_set_new(root, "threads", json_integer(r->threads));
    /* 17 significant digits: every number reads back exactly (a threshold test feeds the
     * winner's memory need back as a capacity). */
    char *s = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    json_decref(root);
    return s;
}

/* ---- CSV -------------------------------------------------------------------------------- */

static void csv_text(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void csv_rows(FILE *f, const char *set, const mp_search_entry *a, int n, int ranked)
{
    for (int i = 0; i < n; i++) {
        const mp_search_entry *e = &a[i];
        const mp_plan *p = &e->plan;
        fprintf(f, "%s,", set);
        if (ranked)
            fprintf(f, "%d", i + 1);
        char ord[48];
        fprintf(f, ",%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%s,%s,%lld,%d,%d,%lld,%s,%s,%lld,%lld,%s,%d,",
                (long long)e->gpus, (long long)p->tp, (long long)p->cp, (long long)p->pp,
                (long long)p->vpp, (long long)p->dp, (long long)p->ep, (long long)p->etp,
                mp_cp_algo_name(p->cp_algo), mp_plan_order_text(p, ord, sizeof ord), (long long)p->mb, p->sp,
                p->zero, (long long)p->hsdp, mp_recompute_name(p->recompute),
                mp_schedule_name(p->schedule), (long long)p->gb, (long long)p->seq,
                mp_dtype_name(p->precision), p->flash);
        fprintf(f, "%.10g,%.10g,%.6g,%.6g,%.6g,%.10g,%.10g,%.10g,%.10g,", e->step_s, e->tokens_per_s,
                e->mfu, e->memory_bytes / GiB, e->headroom_bytes / GiB, e->time_to_train_s,
                e->cost_usd, e->energy_J_per_token, e->score);
        csv_text(f, e->bottleneck);
        fputc('\n', f);
    }
}

void mp_search_report_csv(FILE *f, const mp_search_opts *o, const mp_search_result *r)
{
    (void)o;
    fprintf(f, "set,rank,gpus,tp,cp,pp,vpp,dp,ep,etp,cp_algo,order,mb,sp,zero,hsdp,recompute,schedule,gb,seq,precision,"
               "flash,step_s,tokens_per_s,mfu,memory_gib,headroom_gib,time_to_train_s,cost_usd,"
               "energy_J_per_token,score,bottleneck\n");
    csv_rows(f, "top", r->top, r->ntop, 1);
    csv_rows(f, "pareto_memory", r->pareto_memory, r->npareto_memory, 0);
    csv_rows(f, "pareto_cost", r->pareto_cost, r->npareto_cost, 0);
}
