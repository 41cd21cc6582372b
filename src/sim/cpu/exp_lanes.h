/* Private: exp in arithmetic the compiler vectorises, for the CPU loop
 * (sim/cpu/step.c) and its test (tests/sim/test_exp_lanes.c). Include it only in
 * files compiled without contraction into fused multiply-adds
 * (-ffp-contract=off), so that every build computes the same values. */
#ifndef NS_CABLE_EXP_LANES_H
#define NS_CABLE_EXP_LANES_H

#include "neurosolve/mechanism.h"

#if defined(__GNUC__) || defined(__clang__)
#define NS_ALWAYS_INLINE static inline __attribute__((always_inline))
#else
#define NS_ALWAYS_INLINE static inline
#endif

/* exp in arithmetic the compiler vectorises: the mechanism ABI's
 * ns_mech_exp (include/neurosolve/mechanism.h, where its derivation is),
 * which the generated mechanisms' host code calls too. Within 1 ulp of the
 * C library's exp (docs/simulation.md, "CPU loop": the effect on traces;
 * tests/sim/test_exp_lanes.c checks it). */
NS_ALWAYS_INLINE double exp_lanes(double x) { return ns_mech_exp(x); }

#endif
