/* src/infer/lengths.c — the longest of a static batch's responses (docs/infer.md "Static batches").
 *
 * A static batch (HF generate's loop, the ML.ENERGY v1 benchmark) runs every sequence until the
 * last one stops or reaches the generation limit, so its decode steps are the longest of its n
 * response lengths, not their mean. Lengths L are lognormal (median M, shape s: the log length
 * is normal, mean ln M, deviation s; Johnson, Kotz & Balakrishnan 1994, Continuous Univariate
 * Distributions 1, Ch. 14) and cut at the limit C. The expected largest of n independent draws of
 * a non-negative variable is the integral of its survival function (the order statistic's mean;
 * David & Nagaraja 2003, Order Statistics, Sec. 3.1):
 *     E[min(C, max L_i)] = int_0^C (1 - F(x)^n) dx,   F(x) = Phi(ln(x / M) / s)          (1)
 * evaluated exactly by Simpson's rule (the integrand is smooth and bounded in [0, 1]); n = 1
 * gives the mean of the cut lengths. Blom's plotting position (Blom 1958; src/rl/balance.c) would
 * give the median at n = 1, not the mean, and leaves the cut out, so (1) is used here. */
#include <math.h>

#include "meshplan/infer.h"

/* Phi(z) by C99 erfc. */
static double lognormal_cdf(double x, double median, double sigma)
{
    if (!(x > 0))
        return 0.0;
    return 0.5 * erfc(-log(x / median) / (sigma * 1.4142135623730951));
}

double mp_infer_cut_share(double median_tokens, double sigma, double cap_tokens)
{
    if (!(median_tokens > 0) || !(sigma > 0) || !(cap_tokens > 0))
        return 0.0;
    return 1.0 - lognormal_cdf(cap_tokens, median_tokens, sigma);
}

double mp_infer_expected_longest(double median_tokens, double sigma, double cap_tokens, int64_t n)
{
    if (!(median_tokens > 0) || !(sigma > 0) || !(cap_tokens > 0) || n < 1)
        return 0.0;
    /* Simpson in t = ln x (dx = e^t dt) over ln M -+ 8 s, where F runs from Phi(-8) ~ 6e-16 to
     * 1 - 6e-16; below that the integrand is 1 (x_lo is added whole), above it 0; the cut ends
     * the range earlier. 4096 panels: below 1e-9 relative error (tests/test_infer_power.c) */
    const double t_lo = log(median_tokens) - 8.0 * sigma, x_lo = exp(t_lo);
    if (x_lo >= cap_tokens)
        return cap_tokens;
    const double t_hi = fmin(log(cap_tokens), log(median_tokens) + 8.0 * sigma);
    const int k = 4096;
    const double h = (t_hi - t_lo) / k, dn = (double)n;
    double sum = 0.0;
    for (int i = 0; i <= k; i++) {
        double w = i == 0 || i == k ? 1.0 : i % 2 ? 4.0 : 2.0, x = exp(t_lo + i * h);
        sum += w * (1.0 - pow(lognormal_cdf(x, median_tokens, sigma), dn)) * x; /* (1) */
    }
    return x_lo + sum * h / 3.0;
}
