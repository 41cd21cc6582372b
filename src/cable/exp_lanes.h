/* Private: exp in arithmetic the compiler vectorises, for the CPU loop
 * (step_cpu.c) and its test (tests/test_exp_lanes.c). Include it only in
 * files compiled without contraction into fused multiply-adds
 * (-ffp-contract=off), so that every build computes the same values. */
#ifndef NS_CABLE_EXP_LANES_H
#define NS_CABLE_EXP_LANES_H

#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define NS_ALWAYS_INLINE static inline __attribute__((always_inline))
#else
#define NS_ALWAYS_INLINE static inline
#endif

/* exp(x) in arithmetic the compiler vectorises (no table, no call): x =
 * k ln2 + r with |r| <= ln2/2 (ln2 in two parts, Cody and Waite), exp(r) by
 * a polynomial of degree 11 (its error below 2^-55 of the result), then 2^k in two factors (so that results down to the smallest subnormal
 * and up to DBL_MAX come out). Within 1 ulp of the C library's exp; where
 * they differ the last bit does (docs/simulation.md, "CPU loop": the effect
 * on traces; tests/test_exp_lanes.c checks it). NaN in, NaN out; below
 * -745.2: 0; above 709.8: Inf. */
NS_ALWAYS_INLINE double exp_lanes(double x) {
    const double inv_ln2 = 1.4426950408889634074, shift = 6755399441055744.0; /* 1.5 * 2^52 */
    const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
    double xc = x < -746.0 ? -746.0 : x; /* NaN stays NaN here... */
    xc = xc > 710.0 ? 710.0 : xc;
    const double xs = xc == xc ? xc : 0.0; /* ...and 0 for the bits */
    /* k = round(xs / ln2), its halves k1 + k2 = k, all as doubles: AVX2 has
     * no 64-bit arithmetic shift, so no signed 64-bit integers here */
    const double kd = (xs * inv_ln2 + shift) - shift;
    const double k1 = (kd * 0.5 + shift) - shift, k2 = kd - k1; /* |k1|, |k2| <= 539 */
    const double r = (xs - kd * ln2_hi) - kd * ln2_lo;
    /* exp(r) = 1 + (r + r^2 q(r)), q of degree 9 in Estrin's scheme (a short
     * dependency chain: independent products the core overlaps); q's
     * coefficients are the Chebyshev fit of (exp(r) - 1 - r) / r^2 on
     * [-ln2/2, ln2/2] (mpmath.chebyfit, 40 digits, rounded to double): the
     * polynomial is within 1.6e-17 (2^-55.8) of exp(r) relatively, measured
     * at 2,001 points in 40 digits. It replaced the Taylor series to r^13 in
     * Horner's form (a 26-operation dependency chain): the whole CPU loop ran
     * 1.19x faster (docs/simulation.md) */
    const double r2 = r * r, r4 = r2 * r2;
    const double b0 = 0.5000000000000001 + 0.16666666666666669 * r;
    const double b1 = 0.04166666666662413 + 0.008333333333330062 * r;
    const double b2 = 0.0013888888917213717 + 0.00019841269863053618 * r;
    const double b3 = 2.4801521295954376e-05 + 2.7557268459997064e-06 * r;
    const double b4 = 2.7620088445409746e-07 + 2.510038549551032e-08 * r;
    const double q = ((b0 + b1 * r2) + (b2 + b3 * r2) * r4) + b4 * (r4 * r4);
    const double p = 1.0 + (r + r2 * q);
    /* 2^k = 2^k1 * 2^k2, each exponent within the normal range: k + 1023 + shift
     * holds k + 1023 in its low mantissa bits, shifted into the exponent field */
    double e1 = k1 + (1023.0 + shift), e2 = k2 + (1023.0 + shift);
    uint64_t u1, u2;
    memcpy(&u1, &e1, sizeof u1);
    memcpy(&u2, &e2, sizeof u2);
    u1 <<= 52;
    u2 <<= 52;
    double s1, s2;
    memcpy(&s1, &u1, sizeof s1);
    memcpy(&s2, &u2, sizeof s2);
    const double y = p * s1 * s2;
    return xc == xc ? y : x;
}

#endif
