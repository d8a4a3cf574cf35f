/* examples/trace.c — simulate one training step event by event, compare it with the analytical
 * estimate, and write its timeline as a Chrome trace (open it in https://ui.perfetto.dev).
 *   cc examples/trace.c $(pkg-config --cflags --libs meshplan) -o trace && ./trace step.json
 *   ./trace step.json llama3-8b h100-sxm5-80gb 16 "tp=2,pp=4,gb=64"   # out, model, GPU, count, plan */
#include <stdio.h>
#include <stdlib.h>

#include <meshplan/meshplan.h>

int main(int argc, char **argv)
{
    const char *out = argc > 1 ? argv[1] : "step.json";
    const char *model = argc > 2 ? argv[2] : "llama3-8b", *gpu = argc > 3 ? argv[3] : "h100-sxm5-80gb";
    const long gpus = argc > 4 ? atol(argv[4]) : 16;
    const char *plan = argc > 5 ? argv[5] : "tp=2,pp=4,mb=1,gb=64";
    mp_catalog *cat = NULL;
    mp_diag d = {0};
    mp_cluster c;
    mp_plan p;
    mp_sim *sim = NULL;
    mp_sim_result res;
    mp_estimate *e = malloc(sizeof *e);
    mp_plan_init_default(&p);
    mp_status st = e ? mp_catalog_create(&cat, &d) : MP_ERR_NOMEM;
    const mp_model *m = st == MP_OK ? mp_catalog_model(cat, model) : NULL;
    if (st == MP_OK && !m) {
        mp_diag_add(&d, "model = \"%s\": expected a catalog key (meshplan catalog models)", model);
        st = MP_ERR_NOT_FOUND;
    }
    if (st == MP_OK) st = mp_cluster_from_catalog(cat, gpu, gpus, 0, NULL, &c, &d);
    if (st == MP_OK) st = mp_plan_parse(plan, &p, &d);
    if (st == MP_OK) st = mp_plan_resolve(&p, m, c.num_gpus, &d);
    if (st == MP_OK) st = mp_estimate_plan(m, &c, &p, NULL, e, &d);
    if (st == MP_OK) st = mp_sim_run(m, &c, &p, e, NULL, &sim, &res, &d); /* default options */
    FILE *f = st == MP_OK ? fopen(out, "w") : NULL;
    if (st == MP_OK && !f) {
        mp_diag_add(&d, "out = \"%s\": cannot be opened for writing", out);
        st = MP_ERR_IO;
    }
    if (st == MP_OK) st = mp_sim_write_trace(sim, f, model, &d);
    if (f && fclose(f) != 0 && st == MP_OK) st = MP_ERR_IO;
    if (st == MP_OK) {
        printf("step: simulated %.4f s (critical stage %d, bubble %.1f%%), analytical %.4f s\n",
               res.step_s, res.critical_stage, 100.0 * res.bubble_frac, e->step_s);
        printf("%lld tasks, %lld events; trace written to %s\n", (long long)res.tasks,
               (long long)res.events, out);
    } else {
        fprintf(stderr, "trace: %s:\n%s", mp_status_str(st), d.text);
    }
    mp_sim_destroy(sim);
    free(e);
    mp_catalog_destroy(cat);
    return st == MP_OK ? 0 : st == MP_ERR_INTERNAL || st == MP_ERR_NOMEM || st == MP_ERR_IO ? 1 : 2;
}
