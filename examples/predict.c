/* examples/predict.c — the C API in one page: predict one plan on one cluster.
 *   cc examples/predict.c $(pkg-config --cflags --libs meshplan) -o predict && ./predict
 *   ./predict llama3-8b h100-sxm5-80gb 8 "zero=1,gb=64"       # model, GPU, count, plan
 * Prints tokens/s, MFU, the step time, memory per GPU and what bounds the step. */
#include <stdio.h>
#include <stdlib.h>

#include <meshplan/meshplan.h>

int main(int argc, char **argv)
{
    const char *model = argc > 1 ? argv[1] : "llama3-70b", *gpu = argc > 2 ? argv[2] : "h100-sxm5-80gb";
    const long gpus = argc > 3 ? atol(argv[3]) : 64;
    const char *plan = argc > 4 ? argv[4] : "tp=8,pp=2,gb=128,seq=8192,zero=1,recompute=selective";
    mp_catalog *cat = NULL;
    mp_diag d = {0};                      /* every failing call appends a line naming the field */
    mp_model m;
    mp_cluster c;
    mp_plan p;
    mp_estimate *e = malloc(sizeof *e);   /* large (per-stage arrays): keep it off the stack */
    mp_plan_init_default(&p);             /* always: a plan not initialised is refused */
    mp_status st = e ? mp_catalog_create(&cat, &d) : MP_ERR_NOMEM;
    if (st == MP_OK && !mp_catalog_model(cat, model)) {
        mp_diag_add(&d, "model = \"%s\": expected a catalog key (meshplan catalog models)", model);
        st = MP_ERR_NOT_FOUND;
    }
    if (st == MP_OK) {
        m = *mp_catalog_model(cat, model);
        st = mp_cluster_from_catalog(cat, gpu, gpus, 0, NULL, &c, &d); /* usual node and fabric */
    }
    if (st == MP_OK) st = mp_plan_parse(plan, &p, &d);
    if (st == MP_OK) st = mp_plan_resolve(&p, &m, c.num_gpus, &d);   /* dp, mb, ... filled in */
    if (st == MP_OK) st = mp_estimate_plan(&m, &c, &p, NULL, e, &d);
    if (st == MP_OK) {
        char text[512];
        mp_plan_format(&p, text, sizeof text);
        printf("%s on %lld x %s\nplan %s\n", m.key, (long long)c.num_gpus, c.gpu.key, text);
        printf("tokens/s %.0f, MFU %.3f, step %.3f s, memory %.1f GiB of %.1f GiB%s\n",
               e->tokens_per_s, e->mfu, e->step_s, e->memory.total / 1073741824.0,
               e->memory.capacity / 1073741824.0, e->feasible ? "" : " (does not fit)");
        printf("bound by %s\n", e->bottleneck);
    } else {
        fprintf(stderr, "predict: %s:\n%s", mp_status_str(st), d.text);
    }
    free(e);
    mp_catalog_destroy(cat);
    return st == MP_OK ? 0 : st == MP_ERR_INTERNAL || st == MP_ERR_NOMEM ? 1 : 2;
}
