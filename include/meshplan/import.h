/* meshplan/import.h — read the job a user already has (a Megatron-LM launch script, a DeepSpeed
 * JSON, a torchtitan TOML, a NeMo / Megatron-Bridge YAML, an axolotl / LLaMA-Factory fine-tuning
 * YAML, a Hugging Face config.json or DeepSeek's native model config) into meshplan's model,
 * cluster and plan, every field tagged with where it came from; and write a plan back in those
 * launch formats (emit).
 *
 * Nothing is executed: launch scripts are read by a bash-subset reader (line continuations,
 * variables set in the script, ${VAR:-default}, $((...)), arrays and +=, [[ ... ]] skipped).
 * Defaults are those of each framework, at the version named in docs/import.md and beside each
 * reader (src/import/). The library neither prints nor exits; it reads the files it is named.
 */
#ifndef MESHPLAN_IMPORT_H
#define MESHPLAN_IMPORT_H

#include <stddef.h>
#include <stdint.h>

#include "meshplan/catalog.h"
#include "meshplan/model.h"
#include "meshplan/plan.h"
#include "meshplan/status.h"

/** Formats, as X(enum, name): the name is what --format/--emit take. */
#define MP_IMPORT_FORMAT_LIST(X)                                                           \
    X(MP_IMPORT_AUTO, "auto")             /* detect from the name and the text */          \
    X(MP_IMPORT_MEGATRON, "megatron")     /* Megatron-LM launch script / argument list */  \
    X(MP_IMPORT_DEEPSPEED, "deepspeed")   /* DeepSpeed config JSON */                      \
    X(MP_IMPORT_TORCHTITAN, "torchtitan") /* torchtitan job TOML */                        \
    X(MP_IMPORT_NEMO, "nemo")             /* NeMo / NeMo-Framework-Launcher / Bridge YAML */ \
    X(MP_IMPORT_FINETUNE, "finetune")     /* axolotl / LLaMA-Factory YAML */               \
    X(MP_IMPORT_HF, "hf")                 /* Hugging Face config.json, DeepSeek native */

typedef enum {
#define MP_X_ENUM(e, n) e,
    MP_IMPORT_FORMAT_LIST(MP_X_ENUM)
#undef MP_X_ENUM
        MP_IMPORT_FORMAT_COUNT
} mp_import_format;

/** "megatron", ...; "?" for an invalid value. */
const char *mp_import_format_name(mp_import_format f);
/** The format named `name` into *out; MP_ERR_INPUT naming the choices otherwise. */
mp_status mp_import_format_parse(const char *name, mp_import_format *out, mp_diag *diag);

/** Where a field's value came from. */
typedef enum {
    MP_FROM_FILE,     /* read: `from` is "FILE:LINE:KEY" */
    MP_FROM_OPTION,   /* given on the command line (--gpus, an override): `from` names it */
    MP_FROM_DEFAULT,  /* stated nowhere: the framework's (or meshplan's) default; `from` is why */
    MP_FROM_DERIVED,  /* computed from other fields: `from` gives the formula */
} mp_import_origin;

/** Kind of field: a plan key, a model dimension, a cluster fact, a setting of the job that
 *  meshplan has no key for (listed, not used: fine-tuning, offload, ...), or one the plan implies
 *  (MP_FIELD_JOB: gradient accumulation steps = gb / (mb x dp), torchtitan's local batch). */
typedef enum {
    MP_FIELD_PLAN,
    MP_FIELD_MODEL,
    MP_FIELD_CLUSTER,
    MP_FIELD_UNSUPPORTED,
    MP_FIELD_JOB
} mp_field_kind;

#define MP_IMPORT_KEY_CAP 40
#define MP_IMPORT_VALUE_CAP 128
#define MP_IMPORT_FROM_CAP 240
#define MP_IMPORT_FIELDS_MAX 128
#define MP_IMPORT_UNKNOWN_MAX 64

typedef struct {
    char key[MP_IMPORT_KEY_CAP];     /* plan key ("tp"), "model.layers", "gpus", "finetune" */
    char value[MP_IMPORT_VALUE_CAP]; /* as text, in meshplan's units and names */
    mp_import_origin origin;
    mp_field_kind kind;
    char from[MP_IMPORT_FROM_CAP];
    int resolved; /* added by mp_import_resolve (a default or a derived value), not the file's:
                     left out of mp_import_plan_string, so resolving again gives the same plan */
} mp_import_field;

/** The result of reading one file. Plain struct owned by the caller (about 60 KB: allocate it). */
typedef struct {
    mp_import_format format;
    char file[256];                  /* the path as given */
    mp_import_field field[MP_IMPORT_FIELDS_MAX];
    int nfields;
    /* Keys of the file that no reader understood (listed, not fatal), "KEY (line N)". */
    char unknown[MP_IMPORT_UNKNOWN_MAX][96];
    int nunknown, unknown_dropped;
    /* The model: dimensions read from the file (have_model = 1; model fields are listed as
     * MP_FIELD_MODEL), or only its name (model_id: a catalog key, a Hugging Face id or a
     * framework flavour) for the caller to resolve with mp_import_find_model. */
    mp_model model;
    int have_model;
    char model_id[MP_NAME_CAP];
    char model_id_from[MP_IMPORT_FROM_CAP];
    /* Cluster facts (0 / "" when stated nowhere; the fields say where from). */
    int64_t gpus, gpus_per_node;
    char gpu[MP_KEY_CAP];
} mp_import;

/** What the command line adds. Every member is optional (NULL / 0). */
typedef struct {
    const char *model;       /* --model: overrides the file's model */
    const char *gpu;         /* --gpu: catalog GPU key */
    int64_t gpus;            /* --gpus: overrides the file's GPU count */
    /* torchtitan-style overrides "--section.key value" (or "--section.key=value"), applied on
     * top of a TOML as torchtitan's ConfigManager does; also "--key value" Megatron flags
     * appended to a script's argument list. n pairs at argv[0..2n). */
    const char *const *overrides;
    int noverrides;
    mp_import_format format; /* MP_IMPORT_AUTO: detect */
} mp_import_opts;

/** Read the file at path (a regular file of at most 64 MiB; a directory means a checkpoint
 *  holding config.json) into *out. Detects the format unless opts->format says it. Fields the
 *  file does not state get the framework's default (MP_FROM_DEFAULT, the reason in `from`).
 *  Errors (MP_ERR_IO, MP_ERR_NOT_FOUND, MP_ERR_PARSE, MP_ERR_INPUT) name the file, the line and
 *  the key, and what was expected: a truncated YAML/TOML, a script with no model or training
 *  flags, a directory without config.json, a batch that does not divide. */
mp_status mp_import_file(const char *path, const mp_import_opts *opts, mp_import *out,
                         mp_diag *diag);

/** The same from text already in memory; name is used in messages ("FILE:LINE:KEY") and for
 *  detection; dir (may be NULL) is where files the text refers to (a LLaMA-Factory
 *  `deepspeed:` JSON) are looked for. */
mp_status mp_import_text(const char *name, const char *text, size_t len, const char *dir,
                         const mp_import_opts *opts, mp_import *out, mp_diag *diag);

/** Resolve a model id: a catalog key (also written with '_' or capitals: "llama3_8b"), a
 *  directory holding config.json, a config.json path, or a Hugging Face id ORG/NAME found in the
 *  local cache hub_dir/models--ORG--NAME/snapshots/(any)/config.json (hub_dir: $HF_HOME/hub or
 *  ~/.cache/huggingface/hub; NULL to skip the cache). No network. Returns MP_OK with *out and
 *  `where` (cap bytes) saying which; MP_ERR_NOT_FOUND when nothing matches (diag untouched);
 *  MP_ERR_INPUT / MP_ERR_PARSE when a config.json was found but is not a model meshplan reads. */
mp_status mp_import_find_model(const mp_catalog *cat, const char *id, const char *hub_dir,
                               mp_model *out, char *where, size_t cap, mp_diag *diag);

/** The plan string of the plan keys the import holds (what pastes into --plan). */
int mp_import_plan_string(const mp_import *imp, char *buf, size_t cap);

/** Parse the import's plan into *p and resolve it: with a model, mp_plan_resolve on ngpus
 *  GPUs; without one (model NULL), the model-free defaults (tp, pp, cp, ep, vpp 1, dp =
 *  ngpus/(tp*pp*cp), mb 1, gb = mb*dp, zero 0, sp = tp > 1). Checks first that the file's batch
 *  divides (gb by mb*dp) and the degrees divide the GPU count, naming the file's lines.
 *  Fields filled by the defaults are added to imp as MP_FROM_DEFAULT / MP_FROM_DERIVED. */
mp_status mp_import_resolve(mp_import *imp, const mp_model *model, int64_t ngpus, mp_plan *p,
                            mp_diag *diag);

/** The field named key, or NULL. */
const mp_import_field *mp_import_get(const mp_import *imp, const char *key);

/** Write a resolved plan (model m for its dimensions where the format wants them, on ngpus
 *  GPUs of gpus_per_node per node) in a launch format: megatron (pretrain_gpt.py flags as a
 *  torchrun script), torchtitan (job TOML), deepspeed (config JSON), nemo (NeMo 2 / Launcher
 *  training YAML). Into buf (cap bytes). Returns MP_OK, MP_ERR_INPUT when the format cannot
 *  hold a key of the plan (naming it: DeepSpeed's JSON has no tensor or pipeline degree), or
 *  MP_ERR_RANGE when cap is too small. */
mp_status mp_import_emit(mp_import_format f, const mp_model *m, const mp_plan *p, int64_t ngpus,
                         int64_t gpus_per_node, char *buf, size_t cap, mp_diag *diag);

/** The same naming the GPU (a catalog key, may be NULL), which torchtitan's writer states in
 *  its "preset for N <GPU> GPUs" comment so that the file re-imports on the same GPU type. */
mp_status mp_import_emit_gpu(mp_import_format f, const mp_model *m, const mp_plan *p,
                             int64_t ngpus, int64_t gpus_per_node, const char *gpu, char *buf,
                             size_t cap, mp_diag *diag);

#endif
