/* examples/search.c — search every valid plan for a job and print the best few, with why the
 * winner beats the runner-up.
 *   cc examples/search.c $(pkg-config --cflags --libs meshplan) -o search && ./search
 *   ./search llama3-8b h100-sxm5-80gb 16 128                  # model, GPU, count, global batch */
#include <stdio.h>
#include <stdlib.h>

#include <meshplan/meshplan.h>

int main(int argc, char **argv)
{
    const char *model = argc > 1 ? argv[1] : "llama3-70b", *gpu = argc > 2 ? argv[2] : "h100-sxm5-80gb";
    const long gpus = argc > 3 ? atol(argv[3]) : 64, gb = argc > 4 ? atol(argv[4]) : 128;
    mp_catalog *cat = NULL;
    mp_diag d = {0};
    mp_cluster c;
    mp_search_opts o;
    mp_search_result r = {0};
    mp_search_opts_init(&o);        /* the pinned plan inside is initialised too */
    o.pin.gb = gb;                  /* the job: global batch in sequences (required) */
    o.top_n = 5;
    mp_status st = mp_catalog_create(&cat, &d);
    const mp_model *m = st == MP_OK ? mp_catalog_model(cat, model) : NULL;
    if (st == MP_OK && !m) {
        mp_diag_add(&d, "model = \"%s\": expected a catalog key (meshplan catalog models)", model);
        st = MP_ERR_NOT_FOUND;
    }
    if (st == MP_OK) st = mp_cluster_from_catalog(cat, gpu, gpus, 0, NULL, &c, &d);
    if (st == MP_OK) st = mp_search(m, &c, 1, &o, &r, &d);
    if (st == MP_OK) {
        printf("%s on %ld x %s, gb %ld: %llu plans, %llu feasible\n", m->key, gpus, gpu, gb,
               (unsigned long long)r.counts.plans, (unsigned long long)r.counts.feasible);
        for (int i = 0; i < r.ntop; i++) {
            char text[512];
            mp_plan_format(&r.top[i].plan, text, sizeof text);
            printf("%d. %8.0f tokens/s  MFU %.3f  %5.1f GiB  %s\n", i + 1, r.top[i].tokens_per_s,
                   r.top[i].mfu, r.top[i].memory_bytes / 1073741824.0, text);
        }
        if (r.have_explanation)
            printf("why #1: %s\n", r.explanation.text);
        else if (!r.ntop)
            printf("no plan fits in memory\n");
    } else {
        fprintf(stderr, "search: %s:\n%s", mp_status_str(st), d.text);
    }
    mp_search_result_free(&r);
    mp_catalog_destroy(cat);
    return st == MP_OK ? 0 : st == MP_ERR_INTERNAL || st == MP_ERR_NOMEM ? 1 : 2;
}
