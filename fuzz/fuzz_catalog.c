/* fuzz/fuzz_catalog.c — libFuzzer harness for user catalog files (mp_catalog_merge_json, used by
 * --catalog FILE). Each input is merged into a fresh built-in catalog. A rejected file must leave
 * the catalog unchanged; an accepted one must make its entries findable, and the GPUs, node
 * types and models it names must give checked predictions (fuzz_common.h).
 *
 * The catalog is created once and re-created only after an accepted merge (creating it costs
 * more than most merges).
 *
 * Input: the JSON text. Seeds: the data/ JSON files and their entries (fuzz/run.sh).
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Up to cap string values of `member` of the objects in root[arr]. */
static size_t keys_of(const json_t *root, const char *arr, const char *member, const char **out,
                      size_t cap)
{
    size_t n = 0, i;
    const json_t *o;
    json_array_foreach(json_object_get(root, arr), i, o) {
        const char *k = json_string_value(json_object_get(o, member));
        if (k && n < cap)
            out[n++] = k;
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_MAX_INPUT)
        return 0;
    const mp_catalog *base = fz_catalog();
    static mp_catalog *cat;
    mp_diag d = {0};
    if (!cat && mp_catalog_create(&cat, &d) != MP_OK)
        abort();
    mp_status st = mp_catalog_merge_json(cat, (const char *)data, size, "fuzz.json", &d);
    fz_check_outcome(st, &d, FZ_ST(MP_ERR_INPUT) | FZ_ST(MP_ERR_PARSE) | FZ_ST(MP_ERR_RANGE));
    FZ_CHECK(mp_catalog_gpu_count(cat) <= MP_CATALOG_CAP &&
                 mp_catalog_link_count(cat) <= MP_CATALOG_CAP &&
                 mp_catalog_node_count(cat) <= MP_CATALOG_CAP &&
                 mp_catalog_model_count(cat) <= MP_CATALOG_CAP,
             "over the cap");
    if (st != MP_OK) {
        /* Unchanged on error. */
        FZ_CHECK(mp_catalog_gpu_count(cat) == mp_catalog_gpu_count(base) &&
                     mp_catalog_model_count(cat) == mp_catalog_model_count(base) &&
                     mp_catalog_link_count(cat) == mp_catalog_link_count(base) &&
                     mp_catalog_node_count(cat) == mp_catalog_node_count(base),
                 "catalog changed by a rejected merge");
        for (size_t i = 0; i < mp_catalog_model_count(cat); i++)
            FZ_CHECK(!memcmp(mp_catalog_model_at(cat, i), mp_catalog_model_at(base, i),
                             sizeof(mp_model)),
                     "model %zu changed by a rejected merge", i);
        return 0;
    }
    for (size_t i = 0; i < mp_catalog_gpu_count(cat); i++)
        FZ_CHECK(mp_catalog_gpu(cat, mp_catalog_gpu_at(cat, i)->key) != NULL, "gpu %zu lost", i);
    for (size_t i = 0; i < mp_catalog_model_count(cat); i++)
        FZ_CHECK(mp_model_check(mp_catalog_model_at(cat, i), NULL) == MP_OK,
                 "model %zu invalid", i);

    json_t *root = json_loadb((const char *)data, size, 0, NULL);
    FZ_CHECK(root != NULL, "accepted text does not parse");
    const char *gpus[4], *models[4];
    size_t ng = keys_of(root, "gpus", "key", gpus, 4);
    ng += keys_of(root, "nodes", "gpu", gpus + ng, 4 - ng);
    size_t nm = keys_of(root, "models", "key", models, 4);
    static const char *const plans[] = {"tp=2,mb=1,zero=1", "pp=2,zero=3,recompute=full",
                                        "tp=4,cp=2,seq=4096,zero=2"};
    const mp_model *m7 = mp_catalog_model(cat, "llama2-7b");
    for (size_t i = 0; i < ng; i++) {
        for (int64_t n = 8; n <= 64; n *= 8) {
            mp_cluster cl;
            if (mp_cluster_from_catalog(cat, gpus[i], n, 0, NULL, &cl, NULL) != MP_OK)
                continue;
            for (size_t j = 0; j < sizeof plans / sizeof plans[0]; j++) {
                static mp_estimate e;
                mp_plan p;
                mp_plan_init_default(&p);
                if (mp_plan_parse(plans[j], &p, NULL) != MP_OK ||
                    mp_plan_resolve(&p, m7, n, NULL) != MP_OK)
                    continue;
                mp_diag ed = {0};
                if (mp_estimate_plan(m7, &cl, &p, NULL, &e, &ed) == MP_OK)
                    fz_check_estimate(m7, &cl, &p, &e);
                else
                    FZ_CHECK(ed.count > 0, "estimate failed without a message");
            }
        }
    }
    for (size_t i = 0; i < nm; i++) {
        const mp_model *m = mp_catalog_model(cat, models[i]);
        FZ_CHECK(m != NULL, "merged model \"%s\" not found", models[i]);
        fz_predict_some(m);
    }
    json_decref(root);
    mp_catalog_destroy(cat);
    cat = NULL;
    return 0;
}
