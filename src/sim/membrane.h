/* Private: the hand-written membrane mechanisms (static inline, host and
 * device), read by the GPU's hand-written onchip and tree paths only
 * (src/sim/cuda): every simulation runs a model of the generated built-in hh
 * and pas (src/mech/builtin), and the CPU side includes nothing of this.
 * Its regions are never set (sim/cuda/step.c), so those paths take no
 * membrane from here; they go when the onchip kernel's generated hh is as
 * fast (issue 41).
 *
 * Every expression follows the C that NEURON's nocmodl generates from
 * hh.mod, passive.mod and stim.mod, operation for operation, so that the
 * rounding matches NEURON's (docs/simulation.md):
 *   - currents: I(v) summed in the mod file's order; the slope is
 *     (I(v + 0.001) - I(v)) / 0.001;
 *   - hh gates: cnexp, x += (1 - exp(dt * (-1 / tau))) * (-(inf / tau) / (-1 / tau) - x);
 *   - hh rates: hh.mod's PROCEDURE rates, or its TABLE: 201 entries from
 *     -100 to 100 mV, linear interpolation, clamped at the ends. */
#ifndef NS_CABLE_MECH_H
#define NS_CABLE_MECH_H

#include <math.h>

#ifdef __CUDACC__
#define NS_MECH_FN static inline __host__ __device__
#else
#define NS_MECH_FN static inline
#endif

#define NS_HH_TABLE_N 201       /* entries of hh's rate table */
#define NS_HH_TABLE_VMIN (-100.0) /* [mV] */
#define NS_HH_TABLE_DV 1.0      /* [mV] (200 mV / 200 steps) */

/* The hand-written membrane of one region (the GPU kernels' `regions`). */
typedef struct sim_region {
    int hh, pas;
    double gnabar, gkbar, gl, el, ena, ek;
    double g_pas, e_pas;
} sim_region;

/* Rates of one voltage: inf and tau of m, h, n. */
typedef struct ns_hh_rates {
    double minf, mtau, hinf, htau, ninf, ntau;
} ns_hh_rates;

/* hh's rate table: six columns of NS_HH_TABLE_N entries each. */
typedef struct ns_hh_table {
    double minf[NS_HH_TABLE_N], mtau[NS_HH_TABLE_N];
    double hinf[NS_HH_TABLE_N], htau[NS_HH_TABLE_N];
    double ninf[NS_HH_TABLE_N], ntau[NS_HH_TABLE_N];
} ns_hh_table;

/* hh.mod's FUNCTION vtrap: x / (exp(x/y) - 1) without the 0/0. */
NS_MECH_FN double ns_hh_vtrap(double x, double y) {
    if (fabs(x / y) < 1e-6) return y * (1.0 - x / y / 2.0);
    return x / (exp(x / y) - 1.0);
}

/* hh.mod's PROCEDURE rates without the table; q10 = 3^((celsius - 6.3)/10). */
NS_MECH_FN void ns_hh_rates_exact(double v, double q10, ns_hh_rates *r) {
    double alpha = .1 * ns_hh_vtrap(-(v + 40.0), 10.0);
    double beta = 4.0 * exp(-(v + 65.0) / 18.0);
    double sum = alpha + beta;
    r->mtau = 1.0 / (q10 * sum);
    r->minf = alpha / sum;
    alpha = .07 * exp(-(v + 65.0) / 20.0);
    beta = 1.0 / (exp(-(v + 35.0) / 10.0) + 1.0);
    sum = alpha + beta;
    r->htau = 1.0 / (q10 * sum);
    r->hinf = alpha / sum;
    alpha = .01 * ns_hh_vtrap(-(v + 55.0), 10.0);
    beta = .125 * exp(-(v + 65.0) / 80.0);
    sum = alpha + beta;
    r->ntau = 1.0 / (q10 * sum);
    r->ninf = alpha / sum;
}

/* The table lookup as nocmodl writes it (NaN in, NaN out). */
NS_MECH_FN void ns_hh_rates_table(const ns_hh_table *t, double v, ns_hh_rates *r) {
    const double xi = (1.0 / NS_HH_TABLE_DV) * (v - NS_HH_TABLE_VMIN);
    if (isnan(xi)) {
        r->minf = r->mtau = r->hinf = r->htau = r->ninf = r->ntau = xi;
        return;
    }
    if (xi <= 0.0 || xi >= (double)(NS_HH_TABLE_N - 1)) {
        /* clamped at the ends: the end entry itself, as nocmodl does */
        const int e = xi <= 0.0 ? 0 : NS_HH_TABLE_N - 1;
        r->minf = t->minf[e];
        r->mtau = t->mtau[e];
        r->hinf = t->hinf[e];
        r->htau = t->htau[e];
        r->ninf = t->ninf[e];
        r->ntau = t->ntau[e];
        return;
    }
    const int i = (int)xi;
    const double theta = xi - (double)i;
    r->minf = t->minf[i] + theta * (t->minf[i + 1] - t->minf[i]);
    r->mtau = t->mtau[i] + theta * (t->mtau[i + 1] - t->mtau[i]);
    r->hinf = t->hinf[i] + theta * (t->hinf[i + 1] - t->hinf[i]);
    r->htau = t->htau[i] + theta * (t->htau[i + 1] - t->htau[i]);
    r->ninf = t->ninf[i] + theta * (t->ninf[i + 1] - t->ninf[i]);
    r->ntau = t->ntau[i] + theta * (t->ntau[i + 1] - t->ntau[i]);
}

NS_MECH_FN void ns_hh_rates_of(const ns_hh_table *table, int usetable, double q10, double v,
                               ns_hh_rates *r) {
    if (usetable) ns_hh_rates_table(table, v, r);
    else ns_hh_rates_exact(v, q10, r);
}

/* cnexp for x' = (inf - x) / tau over dt, in nocmodl's arithmetic. */
NS_MECH_FN double ns_cnexp(double x, double inf, double tau, double dt) {
    return x + (1. - exp(dt * ((-1.0) / tau))) * (-(inf / tau) / ((-1.0) / tau) - x);
}

/* hh's BREAKPOINT current [mA/cm^2]: ina + ik + il in that order. */
NS_MECH_FN double ns_hh_current(double v, double m, double h, double n, double gnabar,
                                double gkbar, double gl, double el, double ena, double ek) {
    const double gna = gnabar * m * m * m * h;
    const double ina = gna * (v - ena);
    const double gk = gkbar * n * n * n * n;
    const double ik = gk * (v - ek);
    const double il = gl * (v - el);
    double current = 0.0;
    current += ina;
    current += ik;
    current += il;
    return current;
}

/* pas's current [mA/cm^2]. */
NS_MECH_FN double ns_pas_current(double v, double g, double e) { return g * (v - e); }

#endif
