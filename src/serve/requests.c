/* src/serve/requests.c — the requests of a serving run: arrival times (Poisson, gamma-bursty,
 * a trace, or all at once) and prompt / output lengths (fixed, drawn from a table, or the
 * built-in ShareGPT-like profile), from one seeded generator (xoshiro256**, faults.h) so that a
 * seed gives the same requests on every platform. Also the lengths / trace CSV reader.
 *
 * Coupling: the gaps are drawn as unit-mean variates scaled by 1 / rate, and the lengths from a
 * second stream, so that two runs at different rates see the same requests at proportionally
 * compressed times (what the monotonicity properties of docs/serve.md rely on). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshplan/faults.h"
#include "serve/serve_internal.h"

/* The ShareGPT-like profile. Means: vLLM's evaluation of the ShareGPT dataset (Kwon et al.,
 * "Efficient Memory Management for Large Language Model Serving with PagedAttention", SOSP 2023,
 * Sec. 6.1 and Fig. 11: mean input 161.31 and output 337.99 tokens; 8.4x and 5.8x Alpaca's
 * 19.31 and 58.45). Shape ASSUMED: log-normal (the long right tail of Fig. 11), sigma 1.0 for
 * prompts and 0.8 for outputs, clipped to [4, 4096] and [1, 2048] tokens. */
#define SG_IN_MEAN 161.31
#define SG_OUT_MEAN 337.99
#define SG_IN_SIGMA 1.0
#define SG_OUT_SIGMA 0.8

void sv_sharegpt_means(double *in, double *out)
{
    *in = SG_IN_MEAN;
    *out = SG_OUT_MEAN;
}

static double normal(mp_rng *r)
{
    /* Box-Muller (1958), one of the pair */
    double u1 = 1.0 - mp_rng_uniform(r), u2 = mp_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static int64_t lognormal_len(mp_rng *r, double mean, double sigma, double lo, double hi)
{
    double mu = log(mean) - 0.5 * sigma * sigma; /* E[X] = exp(mu + sigma^2 / 2) */
    double x = exp(mu + sigma * normal(r));
    return (int64_t)llround(fmin(hi, fmax(lo, x)));
}

/* Gamma(shape k, scale 1) by Marsaglia & Tsang (2000, ACM TOMS 26(3)); k < 1 boosted by U^(1/k). */
static double gamma_var(mp_rng *r, double k)
{
    if (k < 1.0) {
        double u = mp_rng_uniform(r);
        return gamma_var(r, k + 1.0) * pow(1.0 - u, 1.0 / k);
    }
    double d = k - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x = normal(r), v = 1.0 + c * x;
        if (v <= 0)
            continue;
        v = v * v * v;
        double u = 1.0 - mp_rng_uniform(r);
        if (log(u) < 0.5 * x * x + d - d * v + d * log(v))
            return d * v;
    }
}

mp_status sv_requests_make(const mp_serve_opts *o, mp_serve_request **out, int64_t *n, mp_diag *d)
{
    *out = NULL;
    *n = o->arrivals == MP_ARRIVE_TRACE ? (int64_t)o->ntrace : o->requests;
    if (*n < 1) {
        mp_diag_add(d, "requests = %lld: expected at least 1", (long long)*n);
        return MP_ERR_INPUT;
    }
    mp_serve_request *q = malloc((size_t)*n * sizeof *q);
    if (!q)
        return MP_ERR_NOMEM;
    if (o->arrivals == MP_ARRIVE_TRACE) {
        double last = *n > 0 ? o->trace[*n - 1].arrival_s : 0.0;
        if (!(last <= SV_MAX_SPAN_S)) {
            mp_diag_add(d, "arrivals trace: request %lld arrives at %g s: expected arrival_s <= %g s (the "
                        "serving clock is int64 nanoseconds)", (long long)*n, last, SV_MAX_SPAN_S);
            free(q);
            return MP_ERR_INPUT;
        }
        memcpy(q, o->trace, (size_t)*n * sizeof *q);
        *out = q;
        return MP_OK;
    }
    mp_rng ra, rl;
    mp_rng_seed(&ra, o->seed);
    mp_rng_seed(&rl, o->seed ^ 0x5DEECE66DULL);
    const double k = 1.0 / (o->burst_cv * o->burst_cv); /* gamma: CV^2 = 1 / shape */
    double t = 0;
    for (int64_t i = 0; i < *n; i++) {
        double gap = o->arrivals == MP_ARRIVE_POISSON ? mp_rng_exp1(&ra)
                     : o->arrivals == MP_ARRIVE_GAMMA ? gamma_var(&ra, k) / k : 0.0;
        q[i].arrival_s = t; /* the first request at t = 0 */
        t += o->arrivals == MP_ARRIVE_BATCH ? 0.0 : gap / o->rate_per_s;
        if (o->lengths == MP_LEN_TABLE) {
            size_t j = (size_t)(mp_rng_uniform(&rl) * (double)o->ntable);
            j = j < o->ntable ? j : o->ntable - 1;
            q[i].in = o->table_in[j];
            q[i].out = o->table_out[j];
        } else if (o->lengths == MP_LEN_SHAREGPT) {
            q[i].in = lognormal_len(&rl, SG_IN_MEAN, SG_IN_SIGMA, 4, 4096);
            q[i].out = lognormal_len(&rl, SG_OUT_MEAN, SG_OUT_SIGMA, 1, 2048);
        } else {
            q[i].in = o->in;
            q[i].out = o->out;
        }
    }
    /* q[n-1].arrival_s is the span: the first request arrives at t = 0 */
    if (!(q[*n - 1].arrival_s <= SV_MAX_SPAN_S)) {
        double span = q[*n - 1].arrival_s;
        mp_diag_add(d, "rate (--rate) = %g/s: its %lld arrivals span %.3g s: expected a schedule of at most %g s "
                    "(the serving clock is int64 nanoseconds): a rate of at least about %.3g/s for %lld "
                    "requests, or fewer --requests", o->rate_per_s, (long long)*n, span, SV_MAX_SPAN_S,
                    o->rate_per_s * span / SV_MAX_SPAN_S, (long long)*n);
        free(q);
        return MP_ERR_INPUT;
    }
    *out = q;
    return MP_OK;
}

/* ---- CSV: input_len,output_len[,arrival_s] ------------------------------------------------- */

static int col_of(const char *hdr, size_t hl, const char *name)
{
    int c = 0;
    size_t nl = strlen(name);
    for (size_t i = 0; i <= hl;) {
        size_t j = i;
        while (j < hl && hdr[j] != ',')
            j++;
        size_t a = i, b = j;
        while (a < b && (hdr[a] == ' ' || hdr[a] == '"'))
            a++;
        while (b > a && (hdr[b - 1] == ' ' || hdr[b - 1] == '"' || hdr[b - 1] == '\r'))
            b--;
        if (b - a == nl && !memcmp(hdr + a, name, nl))
            return c;
        c++;
        i = j + 1;
    }
    return -1;
}

/* The text of field c of the line [s, e) into buf (cut at cap - 1), for a message. */
static const char *cell(const char *s, const char *e, int c, char *buf, size_t cap)
{
    for (int i = 0; i < c && s < e; i++) {
        while (s < e && *s != ',')
            s++;
        if (s < e)
            s++;
    }
    size_t k = 0;
    while (s < e && *s != ',' && *s != '\r' && k + 1 < cap)
        buf[k++] = *s++;
    buf[k] = '\0';
    return buf;
}

/* Field c of the line [s, e) as a number; 0 when missing or not a number. */
static int field(const char *s, const char *e, int c, double *x)
{
    for (int i = 0; i < c && s < e; i++) {
        while (s < e && *s != ',')
            s++;
        if (s < e)
            s++;
    }
    char buf[64];
    size_t k = 0;
    while (s < e && *s != ',' && k + 1 < sizeof buf)
        buf[k++] = *s++;
    buf[k] = '\0';
    char *end;
    *x = strtod(buf, &end);
    while (*end == ' ' || *end == '\r' || *end == '"')
        end++;
    return k > 0 && *end == '\0' && isfinite(*x);
}

mp_status mp_serve_csv_parse(const char *text, size_t len, const char *origin, int64_t **in,
                             int64_t **out, double **arrival_s, size_t *n, mp_diag *d)
{
    *in = *out = NULL;
    if (arrival_s)
        *arrival_s = NULL;
    *n = 0;
    const char *p = text, *end = text + len;
    const char *nl = memchr(p, '\n', len);
    const char *he = nl ? nl : end;
    int ci = col_of(p, (size_t)(he - p), "input_len"), co = col_of(p, (size_t)(he - p), "output_len");
    int ca = arrival_s ? col_of(p, (size_t)(he - p), "arrival_s") : 0;
    if (ci < 0 || co < 0 || ca < 0) {
        mp_diag_add(d, "%s: header: expected columns input_len, output_len%s", origin,
                    arrival_s ? ", arrival_s (a trace)" : "");
        return MP_ERR_PARSE;
    }
    size_t cap = 0;
    for (const char *q = he; q < end; q++)
        cap += *q == '\n';
    cap++;
    *in = malloc(cap * sizeof **in);
    *out = malloc(cap * sizeof **out);
    if (arrival_s)
        *arrival_s = malloc(cap * sizeof **arrival_s);
    if (!*in || !*out || (arrival_s && !*arrival_s))
        goto nomem;
    size_t line = 1;
    double last = 0;
    for (p = nl ? nl + 1 : end; p < end;) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        e = e ? e : end;
        line++;
        const char *s = p;
        p = e < end ? e + 1 : end;
        if (e - s == 0 || (e - s == 1 && *s == '\r'))
            continue;
        double a = 0, i = 0, o = 0;
        /* each count a whole number (100.5 was rounded silently), the cell named with its text */
        const int bad_i = !field(s, e, ci, &i) || i < 1 || i > (1 << 24) || i != floor(i);
        const int bad_o = !bad_i && (!field(s, e, co, &o) || o < 1 || o > (1 << 24) || o != floor(o));
        if (bad_i || bad_o) {
            char t[40];
            mp_diag_add(d, "%s: line %zu: %s = \"%s\": expected an integer in [1, 2^24]", origin, line,
                        bad_i ? "input_len" : "output_len", cell(s, e, bad_i ? ci : co, t, sizeof t));
            goto bad;
        }
        if (arrival_s && (!field(s, e, ca, &a) || a < last || a > 1e9)) {
            char t[40];
            mp_diag_add(d, "%s: line %zu: arrival_s = \"%s\": expected a time in s in [%g, 1e9] (at or after "
                           "the previous line's)", origin, line, cell(s, e, ca, t, sizeof t), last);
            goto bad;
        }
        last = a;
        (*in)[*n] = (int64_t)llround(i);
        (*out)[*n] = (int64_t)llround(o);
        if (arrival_s)
            (*arrival_s)[*n] = a;
        (*n)++;
    }
    if (*n == 0) {
        mp_diag_add(d, "%s: no data rows", origin);
        goto bad;
    }
    return MP_OK;
nomem:
    free(*in), free(*out), *in = *out = NULL;
    if (arrival_s)
        free(*arrival_s), *arrival_s = NULL;
    return MP_ERR_NOMEM;
bad:
    free(*in), free(*out), *in = *out = NULL;
    if (arrival_s)
        free(*arrival_s), *arrival_s = NULL;
    *n = 0;
    return MP_ERR_PARSE;
}
