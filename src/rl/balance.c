/* src/rl/balance.c — the data-parallel imbalance of an RL policy update over variable-length
 * responses (docs/rl.md "The update: ranks wait for the longest share").
 *
 * verl's update (verl/workers/actor/dp_actor.py, update_policy) splits each data-parallel rank's
 * share of the step into ppo mini-batches and takes one optimizer step per mini-batch; the
 * gradient reduction makes every rank wait for the slowest rank at each of them. The trainer's
 * balance_batch (verl/trainer/ppo/ray_trainer.py, _balance_batch, on by default) equalises the
 * whole step's tokens across ranks, not each mini-batch's; within a rank, use_dynamic_bsz packs
 * the micro-batches by tokens (verl/utils/seqlen_balancing.py) and the dp group runs the largest
 * micro-batch count. So each optimizer step costs the largest of `ranks` sums of `n` random
 * sequence lengths. By the central limit theorem a rank's sum is ~ normal, mean n mu, standard
 * deviation sqrt(n) sigma (mu, sigma of prompt + response tokens); the expected largest of G
 * normals is mean + sd x z_G, with Blom's (1958) z_G = Phi^-1((G - 0.375) / (G + 0.25)). The
 * step's time over the balanced one is therefore
 *     f = 1 + (sigma / mu) z_G / sqrt(n)                                                  (1)
 * Work is taken as linear in tokens (the GEMMs; attention's quadratic share is left out, which
 * understates f for long sequences). Forward-only passes (log-probs, reference) run the rank's
 * whole balanced share without a per-mini-batch barrier and are not scaled. */
#include <math.h>

#include "rl/rl_internal.h"

/* Standard normal quantile: Acklam's rational approximation (relative error < 1.2e-9). */
static double phi_inv(double p)
{
    static const double a[6] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                                1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[5] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                                6.680131188771972e+01, -1.328068155288572e+01};
    static const double c[6] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00};
    static const double e[4] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                3.754408661907416e+00};
    if (p <= 0.0)
        return -INFINITY;
    if (p >= 1.0)
        return INFINITY;
    if (p < 0.02425) {
        double q = sqrt(-2 * log(p));
        return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
               ((((e[0] * q + e[1]) * q + e[2]) * q + e[3]) * q + 1);
    }
    if (p > 1 - 0.02425)
        return -phi_inv(1 - p);
    double q = p - 0.5, r = q * q;
    return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
           (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

double mp_rl_expected_max_z(int64_t g)
{
    if (g <= 1)
        return 0.0;
    return phi_inv(((double)g - 0.375) / ((double)g + 0.25));
}

double mp_rl_dp_imbalance(const mp_rl_lengths *l, double prompt, double seqs_per_rank, int64_t ranks)
{
    if (ranks <= 1 || seqs_per_rank < 1.0 || !l)
        return 1.0;
    /* mean and variance of prompt + response over 256 quantiles (the rollout's lengths, coarser:
     * this runs for every candidate of rl-search) */
    const int64_t n = 256;
    double s = 0.0, s2 = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double w = prompt + mp_rl_length_quantile(l, i, n);
        s += w;
        s2 += w * w;
    }
    double mu = s / (double)n, var = s2 / (double)n - mu * mu;
    if (mu <= 0.0 || var <= 0.0)
        return 1.0;
    return 1.0 + sqrt(var) / mu * mp_rl_expected_max_z(ranks) / sqrt(seqs_per_rank); /* (1) */
}
