/* src/faults/faults.c — failure causes and their rates, a job's interruption rate, and the size and
 * timing of a checkpoint.
 *
 * Defaults: "The Llama 3 Herd of Models" (Dubey et al. 2024, arXiv 2407.21783), Sec. 3.3.4 and
 * Table 5: during a 54-day snapshot of Llama 3 405B pre-training on 16,384 H100 80 GB there were
 * 466 job interruptions, 47 planned and 419 unexpected; Table 5 gives the 419 by root cause (the
 * counts below, with the paper's own category in the comment). The fleet: 2,048 Grand Teton
 * servers of 8 GPUs and 2 CPUs, one 400 Gb/s RoCE NIC per GPU (paper Sec. 3.3.1). Each count is
 * divided by the units of its kind in that fleet and by 54 days, so a job of another size or shape
 * scales every cause by its own units (GPUs, nodes or NIC ports). Software causes are counted per
 * GPU: every GPU runs one training process, and at constant code a larger job exercises
 * proportionally more of them. validation/cases.md C6 restates the figures.
 */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "meshplan/faults.h"

static const char *const component_names[] = {
#define MP_X(n, s) s,
    MP_FAULT_COMPONENT_LIST(MP_X)
#undef MP_X
};
static const char *const unit_names[] = {
#define MP_X(n, s) s,
    MP_FAULT_UNIT_LIST(MP_X)
#undef MP_X
};
_Static_assert(sizeof component_names / sizeof component_names[0] == MP_FC_COUNT, "component names");
_Static_assert(sizeof unit_names / sizeof unit_names[0] == MP_PER_COUNT, "unit names");

const char *mp_fault_component_name(mp_fault_component c)
{
    return (unsigned)c < MP_FC_COUNT ? component_names[c] : "?";
}

const char *mp_fault_unit_name(mp_fault_unit u)
{
    return (unsigned)u < MP_PER_COUNT ? unit_names[u] : "?";
}

/* Llama 3 Table 5 and the fleet it was observed on. */
#define LLAMA3_GPUS 16384.0
#define LLAMA3_NODES 2048.0  /* 8 GPUs per server */
#define LLAMA3_NICS 16384.0  /* one 400 Gb/s NIC per GPU */
#define LLAMA3_DAYS 54.0

static const struct {
    const char *name;
    mp_fault_component comp;
    mp_fault_unit unit;
    double count;
    int needs_spare;
} llama3_table5[] = {
    {"faulty_gpu", MP_FC_GPU, MP_PER_GPU, 148, 1},             /* GPU (incl. NVLink) */
    {"gpu_hbm3_memory", MP_FC_HBM, MP_PER_GPU, 72, 1},         /* GPU */
    {"software_bug", MP_FC_SOFTWARE, MP_PER_GPU, 54, 0},       /* Dependency */
    {"network_switch_cable", MP_FC_NETWORK, MP_PER_NIC, 35, 1}, /* Network */
    {"host_maintenance", MP_FC_HOST, MP_PER_NODE, 32, 1},      /* Unplanned maintenance */
    {"gpu_sram_memory", MP_FC_GPU, MP_PER_GPU, 19, 1},         /* GPU */
    {"gpu_system_processor", MP_FC_GPU, MP_PER_GPU, 17, 1},    /* GPU */
    {"nic", MP_FC_NIC, MP_PER_NIC, 7, 1},                      /* Host */
    {"nccl_watchdog_timeout", MP_FC_SOFTWARE, MP_PER_GPU, 7, 0}, /* Unknown */
    {"silent_data_corruption", MP_FC_GPU, MP_PER_GPU, 6, 1},   /* GPU */
    {"gpu_thermal_interface_sensor", MP_FC_GPU, MP_PER_GPU, 6, 1}, /* GPU */
    {"ssd", MP_FC_HOST, MP_PER_NODE, 3, 1},                    /* Host */
    {"power_supply", MP_FC_HOST, MP_PER_NODE, 3, 1},           /* Host */
    {"server_chassis", MP_FC_HOST, MP_PER_NODE, 2, 1},         /* Host */
    {"io_expansion_board", MP_FC_HOST, MP_PER_NODE, 2, 1},     /* Host */
    {"dependency", MP_FC_SOFTWARE, MP_PER_GPU, 2, 0},          /* Dependency */
    {"cpu", MP_FC_HOST, MP_PER_NODE, 2, 1},                    /* Host */
    {"system_memory", MP_FC_HOST, MP_PER_NODE, 2, 1},          /* Host */
};

void mp_fault_default_observation(mp_fault_observation *o)
{
    o->gpus = LLAMA3_GPUS;
    o->nodes = LLAMA3_NODES;
    o->nics = LLAMA3_NICS;
    o->days = LLAMA3_DAYS;
}

static double units_of(const mp_fault_observation *o, mp_fault_unit u)
{
    switch (u) {
    case MP_PER_GPU: return o->gpus;
    case MP_PER_NODE: return o->nodes;
    default: return o->nics;
    }
}

void mp_fault_model_default(mp_fault_model *fm)
{
    memset(fm, 0, sizeof *fm);
    mp_fault_observation o;
    mp_fault_default_observation(&o);
    const size_t n = sizeof llama3_table5 / sizeof llama3_table5[0];
    for (size_t i = 0; i < n; i++) {
        mp_fault_cause *c = &fm->cause[i];
        mp_strlcpy(c->name, llama3_table5[i].name, sizeof c->name);
        c->component = llama3_table5[i].comp;
        c->unit = llama3_table5[i].unit;
        c->needs_spare = llama3_table5[i].needs_spare;
        c->observed_count = llama3_table5[i].count;
        /* rate per unit per second = count / (units in the observed fleet x observed seconds) */
        c->rate_per_unit_s = c->observed_count / (units_of(&o, c->unit) * o.days * 86400.0);
    }
    fm->ncauses = (int)n;
    mp_strlcpy(fm->source,
               "Llama 3 405B pre-training, 54-day snapshot, 16,384 H100 in 2,048 8-GPU servers: 419 "
               "unexpected interruptions by root cause (Dubey et al. 2024, The Llama 3 Herd of "
               "Models, Table 5)",
               sizeof fm->source);
}

void mp_fault_rates_for(const mp_fault_model *fm, const mp_fault_fleet *fleet, double scale,
                        mp_fault_rates *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < fm->ncauses && i < MP_FAULT_MAX_CAUSES; i++) {
        const mp_fault_cause *c = &fm->cause[i];
        double units = c->unit == MP_PER_GPU ? fleet->gpus
                     : c->unit == MP_PER_NODE ? fleet->nodes : fleet->nics;
        /* Independent components in series: the job's rate is the sum of its components' rates
         * (a synchronous job stops when any one of them fails). */
        double r = scale * c->rate_per_unit_s * units;
        out->by_cause_per_s[i] = r;
        if ((unsigned)c->component < MP_FC_COUNT)
            out->by_component_per_s[c->component] += r;
        out->total_per_s += r;
        if (c->needs_spare)
            out->spare_per_s += r;
    }
}

/* ---- --failures FILE ------------------------------------------------------------------------- */

static int lookup_name(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

/* A positive finite number at o[field] (or >= 0 when zero_ok); 0 and a diag line otherwise. */
static int read_number(const json_t *o, const char *field, int zero_ok, double *out,
                       const char *origin, const char *where, mp_diag *d)
{
    const json_t *v = json_object_get(o, field);
    double x = v && json_is_number(v) ? json_number_value(v) : NAN;
    if (!isfinite(x) || x < 0 || (!zero_ok && x == 0) || x > 1e30) {
        char *txt = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
        mp_diag_add(d, "%s: %s.%s = %.40s: expected a %s number", origin, where, field,
                    txt ? txt : "(missing)", zero_ok ? "finite non-negative" : "positive finite");
        free(txt);
        return 0;
    }
    *out = x;
    return 1;
}

mp_status mp_fault_model_from_json(const char *text, size_t len, const char *origin,
                                   mp_fault_model *fm, mp_diag *d)
{
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        char at[80];
        mp_text_line(text, len, jerr.line, jerr.column, at, sizeof at);
        mp_diag_add(d, "%s: line %d: %s%s%s%s", origin, jerr.line, jerr.text,
                    at[0] ? " (the line reads: " : "", at, at[0] ? ")" : "");
        return MP_ERR_PARSE;
    }
    mp_status st = MP_OK;
    mp_fault_model m;
    memset(&m, 0, sizeof m);
    const json_t *causes = json_object_get(root, "causes");
    if (!json_is_object(root) || !json_is_array(causes) || json_array_size(causes) == 0) {
        mp_diag_add(d, "%s: expected an object with a non-empty array \"causes\"", origin);
        st = MP_ERR_INPUT;
        goto out;
    }
    if (json_array_size(causes) > MP_FAULT_MAX_CAUSES) {
        mp_diag_add(d, "%s: %zu causes: expected at most %d", origin, json_array_size(causes),
                    MP_FAULT_MAX_CAUSES);
        st = MP_ERR_RANGE;
        goto out;
    }
    const json_t *src = json_object_get(root, "source");
    mp_strlcpy(m.source, json_is_string(src) ? json_string_value(src) : origin, sizeof m.source);
    mp_fault_observation obs = {0, 0, 0, 0};
    const json_t *ob = json_object_get(root, "observed");
    int have_obs = 0, errors = 0;
    if (ob) {
        if (!json_is_object(ob)) {
            mp_diag_add(d, "%s: observed: expected an object", origin);
            errors++;
        } else {
            have_obs = 1;
            errors += !read_number(ob, "days", 0, &obs.days, origin, "observed", d);
            /* Unit counts are needed only by the causes counted per that unit (checked below). */
            const char *uf[] = {"gpus_count", "nodes_count", "nics_count"};
            double *ud[] = {&obs.gpus, &obs.nodes, &obs.nics};
            for (int k = 0; k < 3; k++)
                if (json_object_get(ob, uf[k]))
                    errors += !read_number(ob, uf[k], 0, ud[k], origin, "observed", d);
        }
    }
    size_t i;
    json_t *c;
    json_array_foreach(causes, i, c) {
        char where[64];
        snprintf(where, sizeof where, "causes[%zu]", i);
        mp_fault_cause *fc = &m.cause[i];
        if (!json_is_object(c)) {
            mp_diag_add(d, "%s: %s: expected an object", origin, where);
            errors++;
            continue;
        }
        const json_t *name = json_object_get(c, "name");
        const json_t *comp = json_object_get(c, "component");
        const json_t *per = json_object_get(c, "per");
        const json_t *spare = json_object_get(c, "needs_spare");
        if (!json_is_string(name) || !json_string_length(name) || json_string_length(name) >= sizeof fc->name) {
            mp_diag_add(d, "%s: %s.name: expected a string of 1 to %zu characters", origin, where,
                        sizeof fc->name - 1);
            errors++;
        } else {
            mp_strlcpy(fc->name, json_string_value(name), sizeof fc->name);
        }
        int ci = json_is_string(comp) ? lookup_name(json_string_value(comp), component_names, MP_FC_COUNT) : -1;
        if (ci < 0) {
            mp_diag_add(d, "%s: %s.component = %s: expected gpu, hbm, host, nic, switch or software",
                        origin, where, json_is_string(comp) ? json_string_value(comp) : "(missing)");
            errors++;
        }
        int ui = json_is_string(per) ? lookup_name(json_string_value(per), unit_names, MP_PER_COUNT) : -1;
        if (ui < 0) {
            mp_diag_add(d, "%s: %s.per = %s: expected gpu, node or nic", origin, where,
                        json_is_string(per) ? json_string_value(per) : "(missing)");
            errors++;
        }
        if (!json_is_boolean(spare)) {
            mp_diag_add(d, "%s: %s.needs_spare: expected true or false", origin, where);
            errors++;
        }
        if (ci < 0 || ui < 0 || !json_is_boolean(spare))
            continue;
        fc->component = (mp_fault_component)ci;
        fc->unit = (mp_fault_unit)ui;
        fc->needs_spare = json_is_true(spare);
        int has_count = json_object_get(c, "count") != NULL;
        int has_rate = json_object_get(c, "rate_per_unit_per_day") != NULL;
        if (has_count == has_rate) {
            mp_diag_add(d, "%s: %s: give exactly one of count and rate_per_unit_per_day", origin, where);
            errors++;
            continue;
        }
        if (has_rate) {
            double r;
            if (read_number(c, "rate_per_unit_per_day", 1, &r, origin, where, d))
                fc->rate_per_unit_s = r / 86400.0;
            else
                errors++;
            continue;
        }
        double cnt;
        if (!read_number(c, "count", 1, &cnt, origin, where, d)) {
            errors++;
            continue;
        }
        double units = units_of(&obs, fc->unit);
        if (!have_obs || obs.days <= 0 || units <= 0) {
            mp_diag_add(d, "%s: %s.count needs observed.days and observed.%ss_count > 0", origin,
                        where, unit_names[ui]);
            errors++;
            continue;
        }
        fc->observed_count = cnt;
        fc->rate_per_unit_s = cnt / (units * obs.days * 86400.0);
    }
    if (errors) {
        st = MP_ERR_INPUT;
        goto out;
    }
    m.ncauses = (int)json_array_size(causes);
    *fm = m;
out:
    json_decref(root);
    return st;
}

/* ---- checkpoints ----------------------------------------------------------------------------- */

mp_status mp_checkpoint_plan(double params, double bytes_per_param, double gpus,
                             double max_shard_bytes, double storage_Bps, double d2h_Bps, int async,
                             mp_checkpoint *out, mp_diag *d)
{
    memset(out, 0, sizeof *out);
    int bad = 0;
    if (!(params > 0) || !isfinite(params)) { mp_diag_add(d, "checkpoint: params = %g: expected > 0", params); bad++; }
    if (!(bytes_per_param > 0) || bytes_per_param > 1e3) { mp_diag_add(d, "checkpoint: bytes_per_param = %g: expected in (0, 1000]", bytes_per_param); bad++; }
    if (!(gpus >= 1) || !isfinite(gpus)) { mp_diag_add(d, "checkpoint: gpus = %g: expected >= 1", gpus); bad++; }
    if (!(max_shard_bytes >= 0) || !isfinite(max_shard_bytes)) { mp_diag_add(d, "checkpoint: max_shard_bytes = %g: expected >= 0", max_shard_bytes); bad++; }
    if (!(storage_Bps > 0) || !isfinite(storage_Bps)) { mp_diag_add(d, "checkpoint: storage bandwidth = %g B/s: expected > 0", storage_Bps); bad++; }
    if (async && (!(d2h_Bps > 0) || !isfinite(d2h_Bps))) { mp_diag_add(d, "checkpoint: device-to-host bandwidth = %g B/s: expected > 0", d2h_Bps); bad++; }
    if (bad)
        return MP_ERR_INPUT;
    out->async = async ? 1 : 0;
    out->bytes = params * bytes_per_param;
    out->bytes_per_gpu = max_shard_bytes > 0 ? max_shard_bytes : out->bytes / gpus;
    /* Every rank writes its shard at once (PyTorch DCP, Megatron distributed checkpointing); the
     * aggregate storage bandwidth bounds the whole write, and the slowest shard cannot go faster
     * than its fair share: max(total / B, shard * gpus / B) = the larger of the two. */
    double eff_bytes = fmax(out->bytes, out->bytes_per_gpu * gpus);
    out->save_s = eff_bytes / storage_Bps;
    out->load_s = out->save_s; /* read back at the same aggregate bandwidth */
    if (async) {
        /* Asynchronous (Nebula, PyTorch DCP async_save, Megatron async): training stalls only for
         * the copy of the shard to pinned host memory; the write proceeds behind training. A
         * failure within save_s of a snapshot finds that checkpoint incomplete and rolls back
         * one more interval: with probability ~ save_s / (interval + stall) it costs one more
         * (interval + stall), i.e. save_s in expectation (first order). */
        out->block_s = out->bytes_per_gpu / d2h_Bps;
        out->lag_s = out->save_s;
    } else {
        out->block_s = out->save_s;
        out->lag_s = 0.0;
    }
    return MP_OK;
}
