/* LFPy 2.3's forward models (lfpykit/lfpcalc.py: calc_lfp_linesource,
 * calc_lfp_root_as_point, calc_lfp_pointsource) in a homogeneous medium,
 * disc contacts and the coefficient matrix. docs/extracellular.md. */
#include <math.h>
#include <string.h>

#include "core/error.h"
#include "core/names.h"
#include "lfp/kernel.h"
#include "lfp/lfp_impl.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static const char *const METHODS[3] = {"linesource", "root_as_point", "pointsource"};

const char *ns_lfp_method_name(ns_lfp_method m) { return ns_name_of(METHODS, 3, (int)m, "?"); }

ns_status ns_lfp_method_from_name(const char *name, ns_lfp_method *out) {
    if (!name || !out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_lfp_method_from_name: NULL argument");
    const int k = ns_name_index(METHODS, 3, name);
    if (k >= 0) *out = (ns_lfp_method)k;
    return k >= 0 ? NS_OK : ns_fail(NS_ERR_INVALID_ARGUMENT, "LFP method '%s': expected linesource, root_as_point or pointsource",
                   name);
}

ns_status ns_lfp_contact_points(const ns_lfp_contact *c, double *p) {
    if (!c || !p) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_lfp_contact_points: NULL argument");
    if (!(c->r > 0.0)) {
        p[0] = c->x, p[1] = c->y, p[2] = c->z;
        return NS_OK;
    }
    const double len = sqrt(c->nx * c->nx + c->ny * c->ny + c->nz * c->nz);
    if (!(len > 0.0) || !isfinite(len) || c->n < 1)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "disc contact: normal (%g, %g, %g) and %d points", c->nx, c->ny,
                       c->nz, (int)c->n);
    const double nv[3] = {c->nx / len, c->ny / len, c->nz / len};
    int axis = 0;
    for (int k = 1; k < 3; ++k)
        if (fabs(nv[k]) < fabs(nv[axis])) axis = k;
    const double e[3] = {axis == 0, axis == 1, axis == 2};
    double u[3] = {nv[1] * e[2] - nv[2] * e[1], nv[2] * e[0] - nv[0] * e[2], nv[0] * e[1] - nv[1] * e[0]};
    const double ul = sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
    for (int k = 0; k < 3; ++k) u[k] /= ul;
    const double w[3] = {nv[1] * u[2] - nv[2] * u[1], nv[2] * u[0] - nv[0] * u[2], nv[0] * u[1] - nv[1] * u[0]};
    const double golden = M_PI * (3.0 - sqrt(5.0));
    const double ctr[3] = {c->x, c->y, c->z};
    for (int32_t k = 0; k < c->n; ++k) {
        const double rho = c->r * sqrt((k + 0.5) / c->n), th = k * golden;
        for (int d = 0; d < 3; ++d) p[3 * k + d] = ctr[d] + rho * (cos(th) * u[d] + sin(th) * w[d]);
    }
    return NS_OK;
}

ns_status ns_lfp_check_contact(const ns_lfp_contact *c, int64_t k) {
    if (!isfinite(c->x) || !isfinite(c->y) || !isfinite(c->z) || !isfinite(c->r) || c->r < 0.0)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "contact %lld: position (%g, %g, %g), radius %g", (long long)k, c->x,
                       c->y, c->z, c->r);
    if (c->r > 0.0) {
        const double len = sqrt(c->nx * c->nx + c->ny * c->ny + c->nz * c->nz);
        if (!(len > 0.0) || !isfinite(len))
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "contact %lld: a disc needs a normal, got (%g, %g, %g)",
                           (long long)k, c->nx, c->ny, c->nz);
        if (c->n < 1 || c->n > NS_LFP_MAX_POINTS)
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "contact %lld: %d points on a disc (1 to %d)", (long long)k,
                           (int)c->n, NS_LFP_MAX_POINTS);
    }
    return NS_OK;
}

/* One contact's row over segments [0, n): the mean over its points. */
void ns_lfp_row(const ns_lfp_segments *seg, const ns_lfp_contact *c, const double *pts, ns_lfp_method method,
                double sigma, double *row) {
    const int32_t np = c->r > 0.0 ? c->n : 1;
    const double scale = 1.0 / (4.0 * M_PI * sigma * np);
    for (int64_t j = 0; j < seg->n; ++j) {
        const int point = method == NS_LFP_POINTSOURCE || (method == NS_LFP_ROOT_AS_POINT && j == seg->root);
        double acc = 0.0;
        for (int32_t q = 0; q < np; ++q)
            acc += ns_lfp_kernel(seg->start + 3 * j, seg->end + 3 * j, .5 * seg->diam[j], pts + 3 * q, point);
        row[j] = acc * scale;
    }
}

ns_status ns_lfp_matrix(const ns_lfp_segments *seg, const ns_lfp_contact *contacts, int64_t n_contacts,
                        ns_lfp_method method, double sigma, double *out) {
    if (!seg || !contacts || !out || !seg->start || !seg->end || !seg->diam)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_lfp_matrix: NULL argument");
    if (seg->n < 0 || n_contacts < 0) return ns_fail(NS_ERR_SIZE, "ns_lfp_matrix: negative size");
    if ((unsigned)method > NS_LFP_POINTSOURCE) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_lfp_matrix: method %d", (int)method);
    if (!(sigma > 0.0) || !isfinite(sigma)) return ns_fail(NS_ERR_INVALID_ARGUMENT, "LFP: sigma %g S/m must be > 0", sigma);
    double pts[3 * NS_LFP_MAX_POINTS];
    for (int64_t k = 0; k < n_contacts; ++k) {
        ns_status st = ns_lfp_check_contact(&contacts[k], k);
        if (st == NS_OK) st = ns_lfp_contact_points(&contacts[k], pts);
        if (st != NS_OK) return st;
        ns_lfp_row(seg, &contacts[k], pts, method, sigma, out + k * seg->n);
    }
    return NS_OK;
}

int64_t ns_lfp_coefficient_bytes(int64_t electrodes, int64_t compartments) {
    if (electrodes < 0 || compartments < 0) return -1;
    const int64_t rows = electrodes + 3;
    if (compartments > 0 && rows > INT64_MAX / 8 / compartments) return -1;
    return 8 * rows * compartments;
}
