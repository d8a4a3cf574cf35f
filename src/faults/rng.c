/* src/faults/rng.c — the seeded pseudo-random generator of the Monte Carlo: xoshiro256** seeded
 * with splitmix64. Both are transcribed from their authors' public-domain reference code
 * (Blackman & Vigna, prng.di.unimi.it: xoshiro256starstar.c and splitmix64.c). Reproducible: the
 * same seed gives the same stream on every platform (only 64-bit integer arithmetic). */
#include <math.h>

#include "meshplan/faults.h"

uint64_t mp_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

void mp_rng_seed(mp_rng *r, uint64_t seed)
{
    uint64_t st = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = mp_splitmix64(&st);
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t mp_rng_next(mp_rng *r)
{
    uint64_t *s = r->s;
    const uint64_t result = rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double mp_rng_uniform(mp_rng *r)
{
    /* The top 53 bits scaled by 2^-53 (Vigna's recommended conversion): [0, 1). */
    return (double)(mp_rng_next(r) >> 11) * 0x1.0p-53;
}

double mp_rng_exp1(mp_rng *r)
{
    /* Inverse transform of Exp(1): -log(1 - U); 1 - U is in (0, 1], so the result is finite. */
    return -log1p(-mp_rng_uniform(r));
}
