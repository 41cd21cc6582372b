/* EEG from a current dipole in lfpykit's four-sphere head model
 * (lfpykit/eegmegcalc.py, FourSphereVolumeConductor: Naess et al. 2017 with
 * the correction of Hagen et al. 2018): brain, CSF, skull and scalp as
 * concentric shells, the potential as Legendre series summed until a term
 * falls below iter_factor times the sum, as lfpykit sums them.
 * docs/extracellular.md, "EEG". */
#include <math.h>

#include "core/error.h"
#include "lfp/lfp_impl.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

#define MAX_TERMS 1000000

typedef struct head {
    double r1, r2, r3, r4, s1;
    double r12, r23, r34, s12, s23, s34;
    double rz, rz1;
} head;

static double vn(const head *h, int n) {
    const double rc = (pow(h->r34, 2 * n + 1) - 1) / ((n + 1.0) / n * pow(h->r34, 2 * n + 1) + 1);
    if (h->s23 + rc == 0.0) return 1e12; /* lfpykit's guard (it tests sigma23) */
    return (n / (n + 1.0) * h->s34 - rc) / (h->s34 + rc);
}
static double yn(const head *h, int n) {
    const double v = vn(h, n);
    const double rc = (n / (n + 1.0) * pow(h->r23, 2 * n + 1) - v) / (pow(h->r23, 2 * n + 1) + v);
    if (h->s23 + rc == 0.0) return 1e12;
    return (n / (n + 1.0) * h->s23 - rc) / (h->s23 + rc);
}
static double zn(const head *h, int n) {
    const double y = yn(h, n);
    return (pow(h->r12, 2 * n + 1) - (n + 1.0) / n * y) / (pow(h->r12, 2 * n + 1) + y);
}
static double c1n(const head *h, int n) {
    const double z = zn(h, n);
    return ((n + 1.0) / n * h->s12 + z) / (h->s12 - z) * pow(h->rz1, n + 1);
}
static double c2n(const head *h, int n) {
    return (c1n(h, n) + pow(h->rz1, n + 1)) * pow(h->r12, n + 1) / (pow(h->r12, 2 * n + 1) + yn(h, n));
}
static double c3n(const head *h, int n) {
    const double c2 = c2n(h, n), d2 = yn(h, n) * c2;
    return (c2 + d2) * pow(h->r23, n + 1) / (pow(h->r23, 2 * n + 1) + vn(h, n));
}
static double c4n(const head *h, int n) {
    const double c3 = c3n(h, n), d3 = vn(h, n) * c3;
    return (n + 1.0) / n * pow(h->r34, n + 1) * (c3 + d3) / ((n + 1.0) / n * pow(h->r34, 2 * n + 1) + 1);
}

/* Term n of the series at radius r (without lfpykit's factor n of the radial series). */
static double term(const head *h, int n, double r) {
    if (r <= h->r1) return c1n(h, n) * pow(r / h->r1, n) + pow(h->rz / r, n + 1);
    if (r <= h->r2) {
        const double y = yn(h, n), c1 = c1n(h, n), q = pow(h->r1 * r / (h->r2 * h->r2), n);
        const double t1 = (c1 + pow(h->rz1, n + 1)) * h->r12 * q / (pow(h->r12, 2 * n + 1) + y);
        const double t2 = y * (c1 + pow(h->rz1, n + 1)) / (r / h->r2 * q + pow(r / h->r1, n + 1) * y);
        return t1 + t2;
    }
    if (r <= h->r3) {
        const double c3 = c3n(h, n);
        return c3 * pow(r / h->r3, n) + vn(h, n) * c3 * pow(h->r3 / r, n + 1);
    }
    const double c4 = c4n(h, n);
    return c4 * pow(r / h->r4, n) + n / (n + 1.0) * c4 * pow(h->r4 / r, n + 1);
}

/* sum_n n t_n P_n(x) (radial) and sum_n t_n P_n^1(x) (tangential, with the
 * Condon-Shortley phase as scipy's lpmv), n = 1 .. until t stops counting. */
static ns_status series(const head *h, double r, double x, double stop, double *rad, double *tan_) {
    const double s = sqrt(fmax(0.0, 1.0 - x * x));
    double p0 = 1.0, p1 = x;        /* P_{n-1}, P_n */
    double q0 = 0.0, q1 = -s;       /* P^1_{n-1}, P^1_n */
    double sum_r = 0.0, sum_t = 0.0, acc_r = 0.0, acc_t = 0.0;
    int done_r = 0, done_t = 0;
    for (int n = 1; n <= MAX_TERMS; ++n) {
        const double t = term(h, n, r);
        if (!done_r) {
            const double c = n * t;
            acc_r += c;
            sum_r += c * p1;
            /* lfpykit: the brain's radial series runs to a factor 1e-6 smaller */
            done_r = !(c > stop * (r <= h->r1 ? 1e-6 : 1.0) * acc_r);
        }
        if (!done_t) {
            acc_t += t;
            sum_t += t * q1;
            done_t = !(t > stop * acc_t);
        }
        if (done_r && done_t) {
            *rad = sum_r, *tan_ = sum_t;
            return NS_OK;
        }
        const double p2 = ((2 * n + 1) * x * p1 - n * p0) / (n + 1);
        const double q2 = n == 1 ? -3.0 * x * s : ((2 * n + 1) * x * q1 - (n + 1) * q0) / n;
        p0 = p1, p1 = p2, q0 = q1, q1 = q2;
    }
    return ns_fail(NS_ERR_NOT_FINITE, "four-sphere: the series at r = %g um did not converge in %d terms", r,
                   MAX_TERMS);
}

ns_status ns_lfp_four_sphere(const double radii[4], const double sigmas[4], const double dipole[3],
                             const double *electrodes, int64_t n, double iter_factor, double *out) {
    if (!radii || !sigmas || !dipole || (!electrodes && n > 0) || (!out && n > 0))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_lfp_four_sphere: NULL argument");
    if (!(radii[0] > 0.0 && radii[0] < radii[1] && radii[1] < radii[2] && radii[2] < radii[3]) || !isfinite(radii[3]))
        return ns_fail(NS_ERR_INVALID_ARGUMENT,
                       "four-sphere: radii %g, %g, %g, %g um must be 0 < brain < CSF < skull < scalp", radii[0],
                       radii[1], radii[2], radii[3]);
    for (int k = 0; k < 4; ++k)
        if (!(sigmas[k] > 0.0) || !isfinite(sigmas[k]))
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "four-sphere: conductivity %d is %g S/m (> 0)", k, sigmas[k]);
    if (!(iter_factor > 0.0)) iter_factor = 2.0 / 99.0 * 1e-6;
    head h = {radii[0], radii[1], radii[2], radii[3], sigmas[0], radii[0] / radii[1], radii[1] / radii[2],
              radii[2] / radii[3], sigmas[0] / sigmas[1], sigmas[1] / sigmas[2], sigmas[2] / sigmas[3], 0.0, 0.0};
    h.rz = sqrt(dipole[0] * dipole[0] + dipole[1] * dipole[1] + dipole[2] * dipole[2]);
    h.rz1 = h.rz / h.r1;
    if (!(h.rz > 0.0) || !(h.rz1 < 1.0))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "four-sphere: the dipole at %g um from the centre must be inside the "
                                                "brain (0 < |rz| < %g um)", h.rz, h.r1);
    const double z[3] = {dipole[0] / h.rz, dipole[1] / h.rz, dipole[2] / h.rz};
    const double k0 = 1.0 / (4.0 * M_PI * h.s1 * h.rz * h.rz);
    for (int64_t e = 0; e < n; ++e) {
        const double *x = electrodes + 3 * e;
        const double r = sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
        if (!(r > h.rz) || r > h.r4)
            return ns_fail(NS_ERR_INVALID_ARGUMENT,
                           "four-sphere: electrode %lld at %g um from the centre: it must lie farther out than the "
                           "dipole (%g um) and inside the scalp (%g um)", (long long)e, r, h.rz, h.r4);
        const double proj = x[0] * z[0] + x[1] * z[1] + x[2] * z[2];
        double cth = proj / r;
        cth = cth > 1.0 ? 1.0 : cth < -1.0 ? -1.0 : cth;
        const double theta = acos(cth);
        double rad = 0.0, tan_ = 0.0;
        ns_status st = series(&h, r, cos(theta), iter_factor, &rad, &tan_);
        if (st != NS_OK) return st;
        const double ruv[3] = {x[0] - proj * z[0], x[1] - proj * z[1], x[2] - proj * z[2]};
        const double nruv = sqrt(ruv[0] * ruv[0] + ruv[1] * ruv[1] + ruv[2] * ruv[2]);
        for (int k = 0; k < 3; ++k) { /* unit dipole along axis k: radial z_k z, tangential e_k - z_k z */
            double ptan[3] = {-z[k] * z[0], -z[k] * z[1], -z[k] * z[2]};
            ptan[k] += 1.0;
            const double np_ = sqrt(ptan[0] * ptan[0] + ptan[1] * ptan[1] + ptan[2] * ptan[2]);
            double v = z[k] * k0 * rad; /* sign(rz . p) |p_rad| = z_k */
            if (np_ > 0.0 && theta != 0.0 && theta != M_PI && nruv > 0.0) {
                /* phi: the angle between r_uv and u = p_tan x z, negative where r_uv . p_tan < 0 */
                const double u[3] = {ptan[1] * z[2] - ptan[2] * z[1], ptan[2] * z[0] - ptan[0] * z[2],
                                     ptan[0] * z[1] - ptan[1] * z[0]};
                const double nu = sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
                double cphi = (ruv[0] * u[0] + ruv[1] * u[1] + ruv[2] * u[2]) / (nruv * nu);
                cphi = cphi > 1.0 ? 1.0 : cphi < -1.0 ? -1.0 : cphi;
                double phi = acos(cphi);
                if (ruv[0] * ptan[0] + ruv[1] * ptan[1] + ruv[2] * ptan[2] < 0.0) phi = -phi;
                v += -np_ * k0 * sin(phi) * tan_;
            }
            out[3 * e + k] = v;
        }
    }
    return NS_OK;
}
