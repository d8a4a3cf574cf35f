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
 * with sigma / mu the coefficient of variation of a sequence's work. The GEMMs' work is linear in
 * a sequence's tokens s, attention's (each sequence attends only to itself: varlen kernels over
 * packed micro-batches) quadratic: with a the attention share of the pass's compute time, a
 * sequence's work over the mean one's is
 *     w(s) = (1 - a) s / E[s] + a s^2 / E[s^2]                                             (2)
 * and sigma / mu = sqrt(E[w^2] - 1) (a = 0: tokens' own coefficient of variation). Forward-only
 * passes (log-probs, reference) run the rank's whole balanced share without a per-mini-batch
 * barrier and are not scaled. */
#include <math.h>

#include "rl/rl_internal.h"

double mp_rl_expected_max_z(int64_t g)
{
    if (g <= 1)
        return 0.0;
    return mp_rl_norm_quantile(((double)g - 0.375) / ((double)g + 0.25));
}

void mp_rl_seq_moments(const mp_rl_lengths *l, double prompt, double m[5])
{
    /* over 256 quantiles (the rollout's lengths, coarser: this runs for every candidate of
     * rl-search) */
    const int64_t n = l ? 256 : 1;
    m[0] = 1.0;
    for (int k = 1; k < 5; k++)
        m[k] = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double w = prompt + (l ? mp_rl_length_quantile(l, i, n) : 0.0), p = 1.0;
        for (int k = 1; k < 5; k++)
            m[k] += (p *= w) / (double)n;
    }
}

double mp_rl_dp_imbalance(const mp_rl_lengths *l, double prompt, double seqs_per_rank, int64_t ranks,
                          double attn_frac)
{
    if (ranks <= 1 || seqs_per_rank < 1.0 || !l)
        return 1.0;
    double m[5];
    mp_rl_seq_moments(l, prompt, m);
    if (m[1] <= 0.0 || m[2] <= m[1] * m[1])
        return 1.0;
    /* a sequence's work over the mean one's, w(s) = (1 - a) s / E[s] + a s^2 / E[s^2] (eq. 2):
     * E[w] = 1 and E[w^2] from the moments; a = 0 gives sigma_w = sigma / mu */
    const double a = attn_frac > 0.0 ? fmin(attn_frac, 1.0) : 0.0, b = 1.0 - a;
    const double ew2 = b * b * m[2] / (m[1] * m[1]) + 2.0 * a * b * m[3] / (m[1] * m[2]) + a * a * m[4] / (m[2] * m[2]);
    if (ew2 <= 1.0)
        return 1.0;
    return 1.0 + sqrt(ew2 - 1.0) * mp_rl_expected_max_z(ranks) / sqrt(seqs_per_rank); /* (1) */
}
