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
/* NEURON 9's RANDOM variables are NEURON's nrnran123 streams (src/gnu/nrnran123.cpp), draw for
 * draw: a stream's four fields are its ids 1, 2, 3 and its position seq4 = 4 seq + which; its
 * words are those of Philox4x32-10 of the counter {seq, id3, id1, id2} under the key {0, 0}
 * (NEURON's global index 0), word `which` the next (then the next word, the next block). */
NS_MECH_FN uint32_t nsm_r123_ipick(double *id1, double *id2, double *id3, double *seq4) {
    const uint64_t x = (uint64_t)*seq4;
    const uint32_t i3 = (uint32_t)(int64_t)*id3;
    uint32_t c[4] = {(uint32_t)(x >> 2), i3, (uint32_t)(int64_t)*id1, (uint32_t)(int64_t)*id2};
    const uint32_t key[2] = {0, 0};
    nsm_philox4x32(c, key);
    if (x + 1 < ((uint64_t)1 << 34)) {
        *seq4 = (double)(x + 1);
    } else { /* Random123's counter carries into its next word, id3 */
        *seq4 = 0.0;
        *id3 = (double)(uint32_t)(i3 + 1u);
    }
    return c[x & 3];
}
/* nrnran123_dblpick: (u + 1) / (2^32 + 1), as NEURON multiplies */
NS_MECH_FN double nsm_r123_uniform0(double *a, double *b, double *c, double *s) {
    return ((double)nsm_r123_ipick(a, b, c, s) + 1.0) * (1.0 / 4294967297.0);
}
NS_MECH_FN double nsm_r123_uniform(double *a, double *b, double *c, double *s, double lo, double hi) {
    return lo + nsm_r123_uniform0(a, b, c, s) * (hi - lo);
}
NS_MECH_FN double nsm_r123_negexp(double *a, double *b, double *c, double *s, double mean) {
    return -log(nsm_r123_uniform0(a, b, c, s)) * mean;
}
/* the polar method, NEURON's (two words a try) */
NS_MECH_FN double nsm_r123_normal(double *a, double *b, double *c, double *s, double mu, double sigma) {
    double w, u1, u2;
    do {
        u1 = 2. * nsm_r123_uniform0(a, b, c, s) - 1.;
        u2 = 2. * nsm_r123_uniform0(a, b, c, s) - 1.;
        w = u1 * u1 + u2 * u2;
    } while (w > 1);
    return mu + u1 * sqrt(-2. * log(w) / w) * sigma;
}
/* nrnran123_setseq(s, double seq4which): outside [0, 2^40): 0; the low 34 bits */
NS_MECH_FN double nsm_r123_setseq(double *a, double *b, double *c, double *s, double x) {
    (void)a; (void)b; (void)c;
    if (!(x >= 0.0) || x > (double)0xffffffffffLL) x = 0.0;
    *s = (double)(((uint64_t)x) & 0x3ffffffffULL);
    return 0.0;
}
/* nrnran123_setids: the position stays (NEURON keeps the block it drew before until the next
 * block or setseq; here the next word is the new stream's) */
NS_MECH_FN double nsm_r123_setids(double *a, double *b, double *c, double *s, double i1, double i2, double i3) {
    (void)s;
    *a = (double)(uint32_t)(int64_t)i1;
    *b = (double)(uint32_t)(int64_t)i2;
    *c = (double)(uint32_t)(int64_t)i3;
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
