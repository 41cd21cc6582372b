/* A cell's v and hh's gates through the accessors by name (ns_sim_get_state,
 * ns_sim_get_model_var's m_hh, h_hh, n_hh): what the tests of a simulation
 * of the built-in hh compare. */
#ifndef NS_TESTS_HH_STATE_H
#define NS_TESTS_HH_STATE_H

#include "neurosolve/neurosolve.h"

/* v, m, h, n of cell c (n compartments) at x, x + n, x + 2n, x + 3n; the
 * gates NaN where hh is not inserted (zero-area nodes). */
static inline ns_status hh_state(ns_sim_t *sim, int64_t c, int32_t n, double *x) {
    static const char *const gates[3] = {"m_hh", "h_hh", "n_hh"};
    ns_status st = ns_sim_get_state(sim, c, x);
    for (int k = 0; k < 3 && st == NS_OK; ++k) st = ns_sim_get_model_var(sim, c, gates[k], x + (size_t)(k + 1) * n);
    return st;
}

/* Set them (NULL arrays of `x` are skipped: v, m, h, n as above). */
static inline ns_status hh_set_state(ns_sim_t *sim, int64_t c, int32_t n, const double *x) {
    static const char *const gates[3] = {"m_hh", "h_hh", "n_hh"};
    ns_status st = ns_sim_set_state(sim, c, x);
    for (int k = 0; k < 3 && st == NS_OK; ++k) st = ns_sim_set_model_var(sim, c, gates[k], x + (size_t)(k + 1) * n);
    return st;
}

#endif
