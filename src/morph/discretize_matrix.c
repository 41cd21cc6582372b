/* One backward-Euler step of the passive cable equation, in NEURON's row
 * form and in the symmetric form (docs/discretisation.md).
 *
 * NEURON (treeset.cpp connection_coef) keeps each row per unit membrane
 * area:  a[i] = -1e2 g[i] / A[p],  b[i] = -1e2 g[i] / A[i]   [S/cm^2]
 * with g in uS and A in um^2 (1e2 converts uS/um^2 to S/cm^2). Zero-area
 * nodes get NEURON's nominal A = 100, which makes their row plain uS, and
 * no capacitance: their equation is current balance alone. The capacitive
 * term 1e-3 cm/dt [S/cm^2] comes from cm [uF/cm^2] / dt [ms].
 *
 * The symmetric form multiplies row i by A[i] * 1e-2 (um^2 -> uS scale):
 * a[i] = b[i] = -g[i] [uS] and d[i] = 1e-5 cm/dt area[i] + g[i] + sum g[c]. */
#include <math.h>
#include <stdlib.h>

#include "core/error.h"
#include "morph/cell_impl.h"

ns_status ns_cell_matrix(const ns_cell_t *cell, double cm, double dt, ns_matrix_form form,
                         double *a, double *b, double *d) {
    if (!cell || !a || !b || !d) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_cell_matrix: NULL argument");
    if (!(dt > 0.0) || !isfinite(dt))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_cell_matrix: dt = %g ms must be > 0", dt);
    if (!(cm >= 0.0) || !isfinite(cm))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_cell_matrix: cm = %g uF/cm^2 must be >= 0", cm);
    if (form != NS_FORM_NEURON && form != NS_FORM_SYMMETRIC)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_cell_matrix: unknown form %d", (int)form);
    const int32_t n = ns_tree_size(cell->tree);
    const int32_t *parent = ns_tree_parent(cell->tree);
    const double *area = cell->area, *g = cell->g_axial;
    const double cap = 1e-3 * cm / dt; /* [S/cm^2] */
    for (int32_t i = 0; i < n; ++i) {
        const double A = area[i] > 0.0 ? area[i] : JUNCTION_AREA;
        if (form == NS_FORM_NEURON) {
            d[i] = area[i] > 0.0 ? cap : 0.0;
            if (i == 0) {
                a[0] = b[0] = 0.0;
            } else {
                const int32_t p = parent[i];
                const double Ap = area[p] > 0.0 ? area[p] : JUNCTION_AREA;
                a[i] = -1e2 * g[i] / Ap;
                b[i] = -1e2 * g[i] / A;
            }
        } else {
            d[i] = area[i] > 0.0 ? 1e-2 * cap * area[i] : 0.0; /* [uS] */
            a[i] = b[i] = i == 0 ? 0.0 : -g[i];
        }
    }
    /* d[i] -= b[i] (own link to the parent) and d[p] -= a[i] (the child's
     * link, seen from the parent's row) */
    for (int32_t i = 1; i < n; ++i) {
        d[i] -= b[i];
        d[parent[i]] -= a[i];
    }
    /* rows the discretisation let through can still overflow with extreme
     * cm / dt or many children: refused, not returned as inf */
    for (int32_t i = 0; i < n; ++i)
        if (!isfinite(a[i]) || !isfinite(b[i]) || !isfinite(d[i]))
            return ns_fail(NS_ERR_NOT_FINITE,
                           "ns_cell_matrix: compartment %d: a %g, b %g, d %g: the geometry, cm = %g or dt = %g "
                           "overflows the matrix",
                           (int)i, a[i], b[i], d[i], cm, dt);
    return NS_OK;
}
