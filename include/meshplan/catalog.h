/* meshplan/catalog.h — the built-in catalog of GPUs, links, node types and models.
 *
 * The data lives in data/ JSON files (schema: data/SCHEMA.md) and is embedded in the binary at build
 * time, so the tool runs with no files beside it. A user catalog file (same schema, any subset of
 * the arrays) overrides entries with the same key and adds new ones. Sizes: a few hundred entries;
 * lookups are linear scans, done once per command, never in the estimator's hot path.
 */
#ifndef MESHPLAN_CATALOG_H
#define MESHPLAN_CATALOG_H

#include <stddef.h>
#include "meshplan/hw.h"
#include "meshplan/model.h"
#include "meshplan/status.h"

/** At most this many entries of each kind (a cap on every growable array). */
#define MP_CATALOG_CAP 512

typedef struct mp_catalog mp_catalog;

/** Load the built-in catalog. Returns MP_OK, MP_ERR_NOMEM, or MP_ERR_PARSE/MP_ERR_INPUT if the
 *  embedded data is broken (a build error; tests catch it). *out is NULL on failure. */
mp_status mp_catalog_create(mp_catalog **out, mp_diag *diag);

/** Free a catalog. c may be NULL. */
void mp_catalog_destroy(mp_catalog *c);

/** Merge JSON text in the data/SCHEMA.md schema: entries with an existing key replace it, others
 *  are added. origin names the file in messages. Returns MP_ERR_PARSE for malformed JSON,
 *  MP_ERR_INPUT for a missing, mistyped or out-of-range field (named in diag), MP_ERR_RANGE when
 *  a cap would be exceeded. On error the catalog is unchanged. */
mp_status mp_catalog_merge_json(mp_catalog *c, const char *json_text, size_t len,
                                const char *origin, mp_diag *diag);

/** Look up by key (exact, lowercase). Return NULL when absent. Pointers stay valid until the
 *  next merge or destroy. */
const mp_gpu *mp_catalog_gpu(const mp_catalog *c, const char *key);
const mp_link *mp_catalog_link(const mp_catalog *c, const char *key);
const mp_node *mp_catalog_node(const mp_catalog *c, const char *key);
const mp_model *mp_catalog_model(const mp_catalog *c, const char *key);

/** The node type a GPU usually comes in (first node entry whose gpu is key), or NULL. */
const mp_node *mp_catalog_node_for_gpu(const mp_catalog *c, const char *gpu_key);

/** Enumerate: count and i-th entry (0 <= i < count). */
size_t mp_catalog_gpu_count(const mp_catalog *c);
const mp_gpu *mp_catalog_gpu_at(const mp_catalog *c, size_t i);
size_t mp_catalog_link_count(const mp_catalog *c);
const mp_link *mp_catalog_link_at(const mp_catalog *c, size_t i);
size_t mp_catalog_node_count(const mp_catalog *c);
const mp_node *mp_catalog_node_at(const mp_catalog *c, size_t i);
size_t mp_catalog_model_count(const mp_catalog *c);
const mp_model *mp_catalog_model_at(const mp_catalog *c, size_t i);

/** Parse one model object (the models.json entry schema) from JSON text; used for --model FILE
 *  when the file is not a Hugging Face config. */
mp_status mp_model_from_catalog_json(const char *json_text, size_t len, mp_model *out,
                                     mp_diag *diag);

#endif
