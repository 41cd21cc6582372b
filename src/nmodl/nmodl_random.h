/* The random numbers of generated mechanisms (normrand, exprand, scop_random,
 * set_seed; src/nmodl/nmodl_random.c): CMake embeds this file as text
 * (ns_nmodl_random_header) and the translator writes it into the header of
 * each mechanism that draws (host and device: NS_MECH_FN). Needs
 * neurosolve/mechanism.h (stdint) and math.h first.
 *
 * Block n of instance (id1, id2) under seed s of mechanism k is Random123's
 * Philox4x32-10 with key {id1, id2} of the counter {n mod 2^32, n / 2^32, s,
 * k}; each draw takes the instance's next block (docs/mechanisms.md,
 * "Random numbers"). */
#ifndef NSM_RANDOM
#define NSM_RANDOM
/* Random123's Philox4x32-10 (Salmon et al., SC11): 4 words of counter c under key k */
NS_MECH_FN void nsm_philox4x32(uint32_t c[4], const uint32_t key[2]) {
    uint32_t k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; ++r) {
        if (r) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
        const uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
        const uint32_t x0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0, x2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1;
        c[1] = (uint32_t)p1;
        c[3] = (uint32_t)p0;
        c[0] = x0;
        c[2] = x2;
    }
}
/* the instance's next block (its counter advanced by one) */
NS_MECH_FN void nsm_rng_block(const double *id1, const double *id2, const double *seed, double *count,
                              uint32_t mech, uint32_t out[4]) {
    const uint64_t n = (uint64_t)*count;
    *count = (double)(n + 1);
    const uint32_t key[2] = {(uint32_t)(int64_t)*id1, (uint32_t)(int64_t)*id2};
    out[0] = (uint32_t)n;
    out[1] = (uint32_t)(n >> 32);
    out[2] = (uint32_t)(int64_t)*seed;
    out[3] = mech;
    nsm_philox4x32(out, key);
}
/* two words as a double in (0, 1): the top 52 bits, offset by half a step
 * (2^-53 .. 1 - 2^-53, both exact) */
NS_MECH_FN double nsm_rng_u01(uint32_t hi, uint32_t lo) {
    return ((double)((((uint64_t)hi << 32) | lo) >> 12) + 0.5) * 2.220446049250313e-16;
}
NS_MECH_FN double nsm_rng_scop_random(const double *a, const double *b, const double *s, double *n, uint32_t k) {
    uint32_t w[4];
    nsm_rng_block(a, b, s, n, k, w);
    return nsm_rng_u01(w[0], w[1]);
}
NS_MECH_FN double nsm_rng_exprand(const double *a, const double *b, const double *s, double *n, uint32_t k,
                                  double mean) {
    return -mean * log(nsm_rng_scop_random(a, b, s, n, k));
}
/* Box and Muller's cosine branch: one normal per block */
NS_MECH_FN double nsm_rng_normrand(const double *a, const double *b, const double *s, double *n, uint32_t k,
                                   double mean, double sd) {
    uint32_t w[4];
    nsm_rng_block(a, b, s, n, k, w);
    const double r = sqrt(-2.0 * log(nsm_rng_u01(w[0], w[1])));
    return mean + sd * r * cos(6.283185307179586 * nsm_rng_u01(w[2], w[3]));
}
/* NEURON 9's RANDOM functions: random_uniform(r, a, b), random_setseq(r, n)
 * (the stream's position: its next draw is block n), random_setids(r, id1,
 * id2, id3) (the stream's key and third counter word; position 0) */
NS_MECH_FN double nsm_rng_uniform(const double *a, const double *b, const double *s, double *n, uint32_t k, double lo,
                                  double hi) {
    return lo + (hi - lo) * nsm_rng_scop_random(a, b, s, n, k);
}
NS_MECH_FN double nsm_rng_setseq(const double *a, const double *b, const double *s, double *n, uint32_t k, double x) {
    (void)a; (void)b; (void)s; (void)k;
    *n = x >= 0.0 ? (double)(uint64_t)x : 0.0;
    return 0.0;
}
NS_MECH_FN double nsm_rng_setids(double *a, double *b, double *s, double *n, uint32_t k, double i1, double i2,
                                 double i3) {
    (void)k;
    *a = (double)(uint32_t)(int64_t)i1;
    *b = (double)(uint32_t)(int64_t)i2;
    *s = (double)(uint32_t)(int64_t)i3;
    *n = 0.0;
    return 0.0;
}
/* the instance's stream restarted under seed s (NEURON's set_seed seeds its one generator) */
NS_MECH_FN double nsm_rng_set_seed(const double *a, const double *b, double *s, double *n, uint32_t k,
                                   double seed) {
    (void)a; (void)b; (void)k;
    *s = (double)(uint32_t)(int64_t)seed;
    *n = 0.0;
    return 0.0;
}
#endif
