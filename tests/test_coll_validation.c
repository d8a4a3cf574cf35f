/* tests/test_coll_validation.c — the collective model against published nccl-tests-style
 * measurements: MESHPLAN_VALIDATION_DIR/collectives.csv (validation/README.md).
 *
 * Every row that names a catalog GPU and links is predicted: the row's system becomes a cluster
 * description (tier 0: gpus_per_node GPUs on the row's intra_link; tier 1, when the row spans
 * nodes: the inter_link with inter_gbps_per_gpu of NIC per GPU; "infiniband" of unstated speed
 * is taken as the GPU's usual node's NIC, ib-ndr-400 for H100), read through
 * mp_cluster_from_json like a user's file. The algorithm is chosen among NCCL's (ring, tree,
 * NVLS): the algo and sharp columns only say whether NVLS was on (sharp 0 or algo "ring": off),
 * since nccl-tests lets NCCL's tuner choose per size.
 *
 * Asserted (issue 3): per system (source group and node count), the median |busbw error| over
 * messages from 1 MiB to 8 GiB is at most 15%; every message of at most 64 KiB is predicted
 * within 2x of its measured time. Rows whose measured time is more than 1.5x that of the next
 * larger message of the same series are warm-up artefacts (a collective cannot get faster with
 * more data) and are reported, not asserted. The figures printed are the README's.
 *
 * Honest note: the link efficiencies in data/links.json were derived from the large-message rows
 * of this file, the NVLS latency from the azure H100 and p6-b200 one-node curves, and the EFA
 * latency from the p6-b200 four-node curve (see their notes); the large-message and those
 * systems' rows are therefore not independent checks.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"

#include "meshplan/catalog.h"
#include "meshplan/coll.h"
#include "meshplan/topo.h"

#define MAXF 24
#define FCAP 512
#define MAXROWS 512

typedef struct {
    char id[64], group[64], op[32], gpu[48], intra[48], inter[48], algo[16], sharp[8];
    int nodes, gpn;
    double gbps, bytes, busbw, algbw, time_us;
    /* results */
    int predicted;
    double pred_s, meas_s, pred_busbw, err_pct;
    const char *why; /* not predicted */
    char algo_used[24];
} row;

static row rows[MAXROWS];
static int nrows;

/* One CSV record (RFC 4180 quotes) from *p; returns the field count, 0 at the end. */
static int csv_record(const char **p, char f[MAXF][FCAP])
{
    const char *s = *p;
    if (!*s)
        return 0;
    int n = 0;
    for (;;) {
        char *o = f[n < MAXF ? n : MAXF - 1];
        size_t k = 0;
        if (*s == '"') {
            s++;
            while (*s && !(*s == '"' && s[1] != '"')) {
                if (*s == '"')
                    s++;
                if (k + 1 < FCAP)
                    o[k++] = *s;
                s++;
            }
            if (*s == '"')
                s++;
        }
        while (*s && *s != ',' && *s != '\n' && *s != '\r') {
            if (k + 1 < FCAP)
                o[k++] = *s;
            s++;
        }
        o[k] = '\0';
        n++;
        if (*s == ',') {
            s++;
            continue;
        }
        while (*s == '\r' || *s == '\n')
            s++;
        break;
    }
    *p = s;
    return n;
}

static int col(char hdr[MAXF][FCAP], int nh, const char *name)
{
    for (int i = 0; i < nh; i++)
        if (!strcmp(hdr[i], name))
            return i;
    fail_msg("collectives.csv: no column \"%s\"", name);
    return -1;
}

/* Copy a field, truncating to the destination. */
static void copy(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static void load_rows(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/collectives.csv", MESHPLAN_VALIDATION_DIR);
    size_t len;
    char *text = slurp(path, &len);
    if (!text) { /* a clone without ../shared beside it: nothing to compare with */
        print_message("# %s absent (the validation data of ../shared): skipped\n", path);
        skip();
    }
    const char *p = text;
    static char hdr[MAXF][FCAP], f[MAXF][FCAP];
    int nh = csv_record(&p, hdr);
    int c_id = col(hdr, nh, "id"), c_g = col(hdr, nh, "source_group"),
        c_op = col(hdr, nh, "collective"), c_gpu = col(hdr, nh, "gpu"),
        c_nn = col(hdr, nh, "num_nodes"), c_gpn = col(hdr, nh, "gpus_per_node"),
        c_in = col(hdr, nh, "intra_link"), c_out = col(hdr, nh, "inter_link"),
        c_gb = col(hdr, nh, "inter_gbps_per_gpu"), c_b = col(hdr, nh, "message_bytes"),
        c_alg = col(hdr, nh, "algbw_GBps"), c_bus = col(hdr, nh, "busbw_GBps"),
        c_t = col(hdr, nh, "time_us"), c_a = col(hdr, nh, "algo"), c_sh = col(hdr, nh, "sharp");
    nrows = 0;
    int nf;
    while ((nf = csv_record(&p, f)) > 0 && nrows < MAXROWS) {
        if (nf < nh)
            continue;
        row *r = &rows[nrows++];
        memset(r, 0, sizeof *r);
        copy(r->id, sizeof r->id, f[c_id]);
        copy(r->group, sizeof r->group, f[c_g]);
        copy(r->op, sizeof r->op, f[c_op]);
        copy(r->gpu, sizeof r->gpu, f[c_gpu]);
        copy(r->intra, sizeof r->intra, f[c_in]);
        copy(r->inter, sizeof r->inter, f[c_out]);
        copy(r->algo, sizeof r->algo, f[c_a]);
        copy(r->sharp, sizeof r->sharp, f[c_sh]);
        r->nodes = atoi(f[c_nn]);
        r->gpn = atoi(f[c_gpn]);
        r->gbps = f[c_gb][0] ? atof(f[c_gb]) : 0.0;
        r->bytes = atof(f[c_b]);
        r->algbw = f[c_alg][0] ? atof(f[c_alg]) * 1e9 : 0.0;
        r->busbw = f[c_bus][0] ? atof(f[c_bus]) * 1e9 : 0.0;
        r->time_us = f[c_t][0] ? atof(f[c_t]) : 0.0;
    }
    free(text);
    assert_true(nrows >= 100); /* 111 rows in the handed file */
}

/* The row's system as a cluster description. */
static int build_cluster(row *r, mp_cluster *c)
{
    char intra[48];
    snprintf(intra, sizeof intra, "%s", r->intra);
    char *dash = strstr(intra, "-nvswitch");
    if (dash)
        *dash = '\0';
    if (!mp_catalog_link(g_cat, intra)) {
        r->why = "intra_link not in the catalog";
        return 0;
    }
    if (!mp_catalog_gpu(g_cat, r->gpu)) {
        r->why = "gpu not in the catalog";
        return 0;
    }
    char json[2048];
    int k = snprintf(json, sizeof json,
                     "{\"gpu\": \"%s\", \"num_gpus_count\": %d, \"tiers\": ["
                     "{\"name\": \"scale-up\", \"kind\": \"scaleup\", \"link\": \"%s\", "
                     "\"domain_gpus_count\": %d}",
                     r->gpu, r->nodes * r->gpn, intra, r->gpn);
    if (r->nodes > 1) {
        char inter[48];
        snprintf(inter, sizeof inter, "%s", r->inter);
        if (!strcmp(inter, "infiniband")) {
            const mp_node *nd = mp_catalog_node_for_gpu(g_cat, r->gpu);
            snprintf(inter, sizeof inter, "%s", nd ? nd->scaleout_link : "ib-ndr-400");
        }
        const mp_link *l = mp_catalog_link(g_cat, inter);
        if (!l) {
            r->why = "inter_link not in the catalog";
            return 0;
        }
        double nics = r->gbps > 0 ? r->gbps * 1.25e8 / l->bw_Bps : 1.0;
        k += snprintf(json + k, sizeof json - (size_t)k,
                      ", {\"name\": \"scale-out\", \"kind\": \"scaleout\", \"link\": \"%s\", "
                      "\"nics_per_gpu_count\": %g}",
                      inter, nics);
    }
    snprintf(json + k, sizeof json - (size_t)k, "]}");
    mp_diag d = {0};
    mp_status st = mp_cluster_from_json(g_cat, json, strlen(json), r->id, 0, c, &d);
    if (st != MP_OK)
        fail_msg("%s: cluster: %s\n%s", r->id, d.text, json);
    return 1;
}

static void predict_all(void)
{
    for (int i = 0; i < nrows; i++) {
        row *r = &rows[i];
        mp_coll_op op;
        if (mp_coll_op_parse(r->op, &op) != MP_OK) {
            r->why = "collective not modelled";
            continue;
        }
        mp_cluster c;
        if (!build_cluster(r, &c))
            continue;
        unsigned mask = MP_ALGO_MASK_NCCL;
        if (!strcmp(r->sharp, "0") || !strcmp(r->algo, "ring"))
            mask &= ~MP_ALGO_BIT(MP_ALGO_IN_NETWORK);
        mp_coll_cost cc;
        int64_t n = (int64_t)r->nodes * r->gpn;
        assert_int_equal(mp_coll_time_among(&c, op, r->bytes, (mp_group){n, 1}, mask, &cc), MP_OK);
        r->predicted = 1;
        r->pred_s = cc.total_s;
        snprintf(r->algo_used, sizeof r->algo_used, "%s/%s", mp_coll_algo_name(cc.algo),
                 mp_coll_proto_name(cc.proto));
        double f = mp_coll_busbw_factor(op, n);
        r->meas_s = r->time_us > 0 ? r->time_us * 1e-6
                    : r->algbw > 0 ? r->bytes / r->algbw : r->bytes * f / r->busbw;
        r->pred_busbw = r->bytes * f / r->pred_s;
        double meas_busbw = r->busbw > 0 ? r->busbw : r->bytes * f / r->meas_s;
        r->err_pct = 100.0 * (r->pred_busbw - meas_busbw) / meas_busbw;
    }
}

static int same_series(const row *a, const row *b)
{
    return !strcmp(a->group, b->group) && a->nodes == b->nodes && a->gpn == b->gpn &&
           !strcmp(a->op, b->op) && !strcmp(a->algo, b->algo) && !strcmp(a->sharp, b->sharp);
}

/* Measured time more than 1.5x that of the next larger message of the same series. */
static int artefact(const row *r)
{
    const row *next = NULL;
    for (int i = 0; i < nrows; i++) {
        const row *q = &rows[i];
        if (q != r && q->predicted && same_series(q, r) && q->bytes > r->bytes &&
            (!next || q->bytes < next->bytes))
            next = q;
    }
    return next && r->meas_s > 1.5 * next->meas_s;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void test_collectives_csv(void **state)
{
    (void)state;
    load_rows();
    predict_all();
    /* Systems: source group x node count, in file order. */
    char sys[32][96];
    int nsys = 0;
    for (int i = 0; i < nrows; i++) {
        if (!rows[i].predicted)
            continue;
        char key[96];
        snprintf(key, sizeof key, "%s/%dn", rows[i].group, rows[i].nodes);
        int found = 0;
        for (int s = 0; s < nsys; s++)
            found |= !strcmp(sys[s], key);
        if (!found && nsys < 32)
            snprintf(sys[nsys++], sizeof sys[0], "%s", key);
    }
    int predicted = 0, skipped = 0, failures = 0;
    for (int i = 0; i < nrows; i++) {
        predicted += rows[i].predicted;
        if (!rows[i].predicted) {
            skipped++;
            print_message("skipped %s: %s\n", rows[i].id, rows[i].why ? rows[i].why : "?");
        }
    }
    print_message("collectives.csv: %d rows, %d predicted\n", nrows, predicted);
    print_message("%-34s %5s %9s %9s %9s   %s\n", "system (1 MiB..8 GiB)", "rows", "med|err|",
                  "med err", "max|err|", "small-message (<= 64 KiB) predicted/measured time");
    double all[MAXROWS];
    int nall = 0;
    for (int s = 0; s < nsys; s++) {
        double e[MAXROWS], es[MAXROWS];
        int ne = 0;
        char small[512] = "";
        double worst = 0;
        for (int i = 0; i < nrows; i++) {
            row *r = &rows[i];
            char key[96];
            snprintf(key, sizeof key, "%s/%dn", r->group, r->nodes);
            if (!r->predicted || strcmp(key, sys[s]))
                continue;
            if (r->bytes >= 1048576.0 && r->bytes <= 8.0 * 1073741824.0) {
                es[ne] = r->err_pct;
                e[ne++] = fabs(r->err_pct);
                all[nall++] = fabs(r->err_pct);
                worst = fmax(worst, fabs(r->err_pct));
            }
            if (r->bytes <= 65536.0) {
                double ratio = r->pred_s / r->meas_s;
                int art = artefact(r);
                char one[48];
                snprintf(one, sizeof one, " %.2f%s", ratio, art ? "(artefact)" : "");
                strncat(small, one, sizeof small - strlen(small) - 1);
                if (!art && !(ratio >= 0.5 && ratio <= 2.0)) {
                    print_message("FAIL small message %s: predicted %.1f us, measured %.1f us "
                                  "(%s)\n", r->id, r->pred_s * 1e6, r->meas_s * 1e6, r->algo_used);
                    failures++;
                }
            }
        }
        if (ne == 0) {
            print_message("%-34s %5d %9s %9s %9s  %s\n", sys[s], 0, "-", "-", "-", small);
            continue;
        }
        qsort(e, (size_t)ne, sizeof e[0], cmpd);
        qsort(es, (size_t)ne, sizeof es[0], cmpd);
        double med = ne % 2 ? e[ne / 2] : 0.5 * (e[ne / 2 - 1] + e[ne / 2]);
        double meds = ne % 2 ? es[ne / 2] : 0.5 * (es[ne / 2 - 1] + es[ne / 2]);
        print_message("%-34s %5d %8.1f%% %+8.1f%% %8.1f%%  %s\n", sys[s], ne, med, meds, worst,
                      small);
        if (med > 15.0) {
            print_message("FAIL %s: median |busbw error| %.1f%% > 15%%\n", sys[s], med);
            failures++;
        }
    }
    qsort(all, (size_t)nall, sizeof all[0], cmpd);
    print_message("all systems: %d rows from 1 MiB to 8 GiB, median |busbw error| %.1f%%\n", nall,
                  nall ? (nall % 2 ? all[nall / 2] : 0.5 * (all[nall / 2 - 1] + all[nall / 2])) : 0);
    if (getenv("MESHPLAN_VERBOSE"))
        for (int i = 0; i < nrows; i++)
            if (rows[i].predicted)
                print_message("  %-30s %-20s pred %9.2f GB/s err %+7.1f%%  t %10.1f us meas %10.1f us\n",
                              rows[i].id, rows[i].algo_used, rows[i].pred_busbw / 1e9,
                              rows[i].err_pct, rows[i].pred_s * 1e6, rows[i].meas_s * 1e6);
    assert_true(predicted >= nrows - 5);
    assert_int_equal(failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_collectives_csv),
    };
    return cmocka_run_group_tests(tests, catalog_setup, catalog_teardown);
}
