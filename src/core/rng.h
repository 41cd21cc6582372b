/* Private: a small counter-based random generator (SplitMix64 stream per
 * (seed, stream) pair). Used for test inputs and generators, where the values
 * must not depend on the thread count; not for cryptography. */
#ifndef NS_CORE_RNG_H
#define NS_CORE_RNG_H

#include <stdint.h>

typedef struct ns_rng {
    uint64_t state;
} ns_rng;

static inline uint64_t ns_rng_mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline void ns_rng_seed(ns_rng *rng, uint64_t seed, uint64_t stream) {
    rng->state = ns_rng_mix(seed * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL) ^
                 ns_rng_mix(stream + 0x2545f4914f6cdd1dULL);
}

static inline uint64_t ns_rng_next(ns_rng *rng) {
    rng->state += 0x9e3779b97f4a7c15ULL;
    return ns_rng_mix(rng->state);
}

/* Uniform in [0, 1) with 53 random bits. */
static inline double ns_rng_unit(ns_rng *rng) {
    return (double)(ns_rng_next(rng) >> 11) * (1.0 / 9007199254740992.0);
}

static inline double ns_rng_uniform(ns_rng *rng, double lo, double hi) {
    return lo + (hi - lo) * ns_rng_unit(rng);
}

/* Uniform integer in [0, n). */
static inline uint64_t ns_rng_below(ns_rng *rng, uint64_t n) {
    return n ? ns_rng_next(rng) % n : 0;
}

#endif
