/* src/validate/mlperf_lengths.c — per-request prompt / output lengths of the MLPerf Inference
 * v4.1 LLM datasets, as samples of their published per-sample token counts, for the defaults
 * table of validate_infer.c (the dataset's mean input when a row does not state it) and for the
 * serving simulator's length table (validate_serve.c: server rows drawn from the distribution
 * rather than a fixed mean: prefill lengths vary 10x inside these sets and the p99 TTFT is set by
 * the long ones).
 *
 * Source: openshift-psap/performance-dashboard, mlperf-data/summaries/llama2-70b-99.csv (commit
 * 7cd1065d; 24,576 rows: tok_input_length and tok_output_length of MLCommons'
 * open_orca_gpt4_tokenized_llama.sampled_24576.pkl, Llama 2 tokenizer) and
 * mlperf-data/summaries/mixtral-8x7b.csv (commit 67033bae; 15,000 rows of the
 * 09292024_mixtral_15k_mintoken2_v1.pkl set: 5k OpenOrca, 5k GSM8K, 5k MBXP, Mixtral tokenizer).
 * The files are ordered by sub-dataset, so the sample is stratified: consecutive rows from read
 * offsets spread over each file, as many from each as the stretch of the file it stands for
 * (data/lengths/<dataset>.csv hold the pairs with the offset each came from, embedded in the
 * binary by cmake/embed_files.cmake; tests/data/SOURCES.md says how they were drawn). Sample means: OpenOrca 223.9 input tokens (24,576-row set;
 * median 152, p99 827, max 992 of the sample), Mixtral mix 403.2 (median 224, p99 1,483). The
 * second number of each pair is the reference answer's length: GPT-4's for OpenOrca (mean 220.5,
 * not Llama 2's 294.45 of the MLPerf accuracy run), Mixtral's own for the mix (138.2 here against
 * the 144.84 tokens per sample of its accuracy target, mlcommons/inference
 * language/mixtral-8x7b/README.md: the sample is within 5%). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "meshplan/serve.h"
#include "validate/validate_internal.h"

/* generated: embedded_lengths.c (data/lengths/NAME.csv, one entry per file) */
struct mp_embedded_file { const char *name; const char *data; size_t len; };
extern const struct mp_embedded_file mp_embedded_lengths[];

/* The datasets with a length sample: the name a row's length_dist gives ("dataset:NAME"), whose
 * sample is data/lengths/NAME.csv, and what the sample is. */
static const struct {
    const char *name;
    const char *source;
} TABLES[] = {
    {"mlperf_openorca",
     "575-request stratified sample of the 24,576 per-sample lengths (openshift-psap/performance-dashboard llama2-70b-99.csv)"},
    {"mlperf_mixtral_openorca_gsm8k_mbxp",
     "284-request stratified sample of the 15,000 per-sample lengths (openshift-psap/performance-dashboard mixtral-8x7b.csv)"},
};

static const struct mp_embedded_file *embedded_csv(const char *dataset)
{
    size_t n = strlen(dataset);
    for (const struct mp_embedded_file *f = mp_embedded_lengths; f->name; f++)
        if (!strncmp(f->name, dataset, n) && !strcmp(f->name + n, ".csv"))
            return f;
    return NULL;
}

int mp_val_dataset_lengths(const char *dataset, mp_val_lengths *out)
{
    memset(out, 0, sizeof *out);
    for (size_t t = 0; dataset && t < sizeof TABLES / sizeof TABLES[0]; t++) {
        if (strcmp(dataset, TABLES[t].name))
            continue;
        const struct mp_embedded_file *f = embedded_csv(dataset);
        int64_t *in = NULL, *outl = NULL;
        size_t n = 0;
        mp_diag d = {0};
        /* the shipped file is checked by tests/test_mlperf.c: a parse failure is a build defect,
         * answered as "no sample" (the row falls back to the generic default and says so) */
        if (!f || mp_serve_csv_parse(f->data, f->len, f->name, &in, &outl, NULL, &n, &d) != MP_OK || !n) {
            free(in);
            free(outl);
            return 0;
        }
        out->n = n < MP_VAL_MAX_LENGTHS ? n : MP_VAL_MAX_LENGTHS;
        double si = 0, so = 0;
        for (size_t i = 0; i < out->n; i++) {
            out->in[i] = in[i];
            out->out[i] = outl[i];
            si += (double)in[i];
            so += (double)outl[i];
        }
        free(in);
        free(outl);
        out->in_mean = si / (double)out->n;
        out->out_mean = so / (double)out->n;
        out->source = TABLES[t].source;
        return 1;
    }
    return 0;
}
