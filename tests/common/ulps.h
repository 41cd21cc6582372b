/* Test helpers for floating-point comparisons: the distance of two doubles
 * in units in the last place, and a xorshift64 stream of uniform doubles
 * (seeded by the caller's state, so that every run draws the same). */
#ifndef NS_TESTS_ULPS_H
#define NS_TESTS_ULPS_H

#include <stdint.h>
#include <string.h>

/* doubles between a and b (0: equal, +0 and -0 included; INT64_MAX: signs differ) */
static inline int64_t ulps(double a, double b) {
    int64_t x, y;
    memcpy(&x, &a, sizeof x);
    memcpy(&y, &b, sizeof y);
    if ((x < 0) != (y < 0)) return a == b ? 0 : INT64_MAX;
    return x > y ? x - y : y - x;
}

/* uniform in [lo, hi), advancing *state (xorshift64; nonzero seed) */
static inline double uniform_in(uint64_t *state, double lo, double hi) {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return lo + (hi - lo) * ((double)(*state >> 11) * 0x1.0p-53);
}

#endif
