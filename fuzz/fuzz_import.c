/* fuzz/fuzz_import.c — libFuzzer harness for the launch-config readers (mp_import_text: the
 * bash-subset reader, the DeepSpeed JSON, torchtitan TOML, NeMo and fine-tuning YAML and model
 * config readers). The first byte picks the format; the rest is the file. Whatever the text:
 * the status is one the reader documents, a failure carries a message and success none, every
 * field is NUL-terminated, and an accepted file resolves (or is refused with a message) and, with
 * its own model, emits in each format without overflowing.
 *
 * Seeds: tests/data/import/ (the first byte of a seed file is its own first character).
 */
#include "fuzz_common.h"
#include "meshplan/import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const names[] = {"job.sh", "ds.json", "job.toml", "job.yaml", "ft.yaml",
                                    "config.json", "noext"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > FZ_MAX_INPUT)
        return 0;
    (void)fz_catalog();
    static mp_import imp;
    mp_import_opts o = {0};
    o.gpus = (data[0] & 1) ? 64 : 0;
    mp_diag d = {0};
    const char *name = names[data[0] % (sizeof names / sizeof names[0])];
    mp_status st = mp_import_text(name, (const char *)data + 1, size - 1, NULL, &o, &imp, &d);
    fz_check_outcome(st, &d, FZ_ST(MP_ERR_INPUT) | FZ_ST(MP_ERR_PARSE) | FZ_ST(MP_ERR_NOMEM) |
                                 FZ_ST(MP_ERR_RANGE) | FZ_ST(MP_ERR_NOT_FOUND));
    if (st != MP_OK)
        return 0;
    for (int i = 0; i < imp.nfields; i++)
        FZ_CHECK(memchr(imp.field[i].key, '\0', sizeof imp.field[i].key) &&
                     memchr(imp.field[i].value, '\0', sizeof imp.field[i].value) &&
                     memchr(imp.field[i].from, '\0', sizeof imp.field[i].from),
                 "field %d unterminated", i);
    FZ_CHECK(imp.nfields <= MP_IMPORT_FIELDS_MAX && imp.nunknown <= MP_IMPORT_UNKNOWN_MAX,
             "%d fields, %d unknown", imp.nfields, imp.nunknown);
    mp_plan p;
    mp_diag dr = {0};
    int64_t n = imp.gpus > 0 && imp.gpus <= (1 << 20) ? imp.gpus : 8;
    const mp_model *m = imp.have_model ? &imp.model : NULL;
    st = mp_import_resolve(&imp, m, n, &p, &dr);
    fz_check_outcome(st, &dr, FZ_ST(MP_ERR_INPUT) | FZ_ST(MP_ERR_PARSE));
    if (st != MP_OK || !m)
        return 0;
    static char buf[32768];
    for (int f = MP_IMPORT_MEGATRON; f <= MP_IMPORT_NEMO; f++) {
        mp_diag de = {0};
        st = mp_import_emit((mp_import_format)f, m, &p, n, 8, buf, sizeof buf, &de);
        fz_check_outcome(st, &de, FZ_ST(MP_ERR_INPUT) | FZ_ST(MP_ERR_RANGE));
        if (st == MP_OK)
            FZ_CHECK(memchr(buf, '\0', sizeof buf) != NULL, "emit unterminated");
    }
    return 0;
}
