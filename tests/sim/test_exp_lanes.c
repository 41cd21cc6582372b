/* The CPU loop's vector exp (src/sim/cpu/exp_lanes.h) against the C library's
 * exp: within 1 ulp everywhere the loop can call it (2 million random
 * arguments over the whole finite range, dense over the cnexp range
 * dt * (-1/tau) in [-5, 0] and around 0), the results that differ at all
 * a minority, and the ends: NaN, +-Inf, overflow, underflow, subnormals. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sim/cpu/exp_lanes.h"
#include "check.h"
#include "ulps.h"

static uint64_t state = 0x9e3779b97f4a7c15ull;
static double uniform(double lo, double hi) { return uniform_in(&state, lo, hi); }

static void range(double lo, double hi, long count, const char *name) {
    int64_t worst = 0;
    long differ = 0;
    double at = 0.0;
    for (long i = 0; i < count; ++i) {
        const double x = uniform(lo, hi);
        const int64_t u = ulps(exp_lanes(x), exp(x));
        if (u > worst) {
            worst = u;
            at = x;
        }
        differ += u != 0;
    }
    printf("%-28s worst %lld ulp (x = %.17g), %.2f %% differ\n", name, (long long)worst, at,
           100.0 * (double)differ / (double)count);
    CHECK_MSG(worst <= 1, "%s: exp_lanes(%.17g) is %lld ulp from exp", name, at, (long long)worst);
    CHECK_MSG(differ < count / 4, "%s: %ld of %ld results differ from exp", name, differ, count);
}

int main(void) {
    range(-745.0, 709.7, 1000000, "whole range");
    range(-5.0, 0.0, 500000, "cnexp range [-5, 0]");
    range(-1e-3, 1e-3, 200000, "around 0");
    range(-745.1, -708.0, 200000, "subnormal results");
    CHECK(isnan(exp_lanes(NAN)));
    CHECK(exp_lanes(-INFINITY) == 0.0);
    CHECK(exp_lanes(INFINITY) == INFINITY);
    CHECK(exp_lanes(710.0) == INFINITY);
    CHECK(exp_lanes(-746.0) == 0.0);
    CHECK(exp_lanes(0.0) == 1.0);
    CHECK(ulps(exp_lanes(709.78), exp(709.78)) <= 1);
    CHECK(exp_lanes(-745.13) == exp(-745.13)); /* the smallest subnormal */
    CHECK(ulps(exp_lanes(1.0), 2.718281828459045) <= 1);
    return check_summary("test_exp_lanes");
}
