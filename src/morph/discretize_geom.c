/* nseg per section and NEURON's segment geometry from 3D points.
 *
 * The geometry follows NEURON's treeset.cpp (diam_from_list): the diameter
 * is linear in arc length between 3D points; a segment of length ds = L/nseg
 * is cut at its centre into two halves, each half is integrated piecewise
 * over the 3D points that fall inside it, and every piece [x1, x2] with end
 * diameters y1, y2 (a frustum) adds
 *   lateral area    pi/2 (y1 + y2) sqrt((x2 - x1)^2 + ((y2 - y1)/2)^2)   [um^2]
 *   axial resistance 4e-2 Ra/pi (x2 - x1) / (y1 y2)                      [MOhm]
 * (the second is exact for a frustum: rho L / (pi r1 r2), with Ra in ohm cm
 * and lengths in um). A piece of zero length with a jump in diameter adds
 * the area of the annulus, as in NEURON. A segment's diameter is NEURON's
 * too: the mean over its length of the linear diameter,
 *   diam = sum over its pieces (y1 + y2) (x2 - x1) / (2 ds). */
#include <math.h>

#include "morph/discretize_impl.h"

#define NS_PI 3.14159265358979323846

int32_t disc_nseg(const disc_section *sec, const disc_pt3d *pts, const ns_discretize_options *o) {
    const disc_pt3d *q = pts + sec->pt_begin;
    double L = sec->length, n;
    switch (o->rule) {
    case NS_NSEG_ONE:
        return 1;
    case NS_NSEG_FIXED_LENGTH:
        n = ceil(L / o->max_length);
        if (!(n >= 1.0)) n = 1.0;
        if (n > NSEG_MAX) n = NSEG_MAX;
        if (fmod(n, 2.0) == 0.0) n += 1.0;
        return (int32_t)n;
    case NS_NSEG_D_LAMBDA:
    default: {
        /* stdlib.hoc lambda_f(): the section's length in AC length
         * constants, integrated over the 3D points, then
         * nseg = int((L/(d_lambda*lambda_f) + 0.9)/2)*2 + 1 */
        if (sec->cm == 0.0) return 1; /* lambda_f returns 1e10 */
        double lam = 0.0;
        for (int32_t j = 1; j < sec->n3d; ++j)
            lam += (q[j].arc - q[j - 1].arc) / sqrt(q[j - 1].d + q[j].d);
        lam *= sqrt(2.0) * 1e-5 * sqrt(4.0 * NS_PI * o->frequency * sec->Ra * sec->cm);
        if (!(lam > 0.0)) return 1;
        double lambda_f = L / lam;
        n = floor((L / (o->d_lambda * lambda_f) + 0.9) / 2.0) * 2.0 + 1.0;
        if (!(n >= 1.0)) n = 1.0;
        if (n > NSEG_MAX) n = NSEG_MAX;
        return (int32_t)n;
    }
    }
}

static void add_piece(double x1, double y1, double x2, double y2, double *area, double *rsum, double *dsum) {
    double delta = x2 - x1;
    *dsum += (y1 + y2) * delta; /* before the guard, as NEURON */
    if (delta < 1e-15) delta = 1e-15; /* NEURON's guard for coincident points */
    double t = 0.5 * (y2 - y1);
    *area += (y1 + y2) * sqrt(delta * delta + t * t);
    double prod = y1 * y2;
    *rsum += prod > 0.0 ? delta / prod : 1e15;
}

void disc_segments(const disc_section *sec, const disc_pt3d *pts, double *area, double *diam,
                   double *rhalf) {
    const disc_pt3d *q = pts + sec->pt_begin;
    const int32_t nseg = sec->nseg, nh = 2 * nseg;
    const double half = sec->length / nseg / 2.0;
    for (int32_t k = 0; k < nseg; ++k) area[k] = diam[k] = 0.0;
    for (int32_t h = 0; h < nh; ++h) rhalf[h] = 0.0;
    int32_t h = 0;
    for (int32_t j = 0; j + 1 < sec->n3d; ++j) {
        double x1 = q[j].arc, y1 = q[j].d;
        const double x2 = q[j + 1].arc, y2 = q[j + 1].d;
        /* cut the piece at every half-segment boundary strictly inside it */
        while (h < nh - 1 && (h + 1) * half < x2) {
            double b = (h + 1) * half;
            double f = x2 - q[j].arc > 1e-10 ? (b - q[j].arc) / (x2 - q[j].arc) : 1.0;
            double yb = (1.0 - f) * q[j].d + f * y2;
            add_piece(x1, y1, b, yb, &area[h / 2], &rhalf[h], &diam[h / 2]);
            x1 = b;
            y1 = yb;
            ++h;
        }
        add_piece(x1, y1, x2, y2, &area[h / 2], &rhalf[h], &diam[h / 2]);
    }
    /* a section of zero length leaves halves without pieces; NEURON still
     * integrates one clamped piece there (tiny area, tiny resistance) */
    const double dl = q[sec->n3d - 1].d, xl = q[sec->n3d - 1].arc;
    for (int32_t i = 0; i < nh; ++i)
        if (rhalf[i] == 0.0) add_piece(xl, dl, xl, dl, &area[i / 2], &rhalf[i], &diam[i / 2]);
    for (int32_t k = 0; k < nseg; ++k) {
        area[k] *= 0.5 * NS_PI;
        diam[k] = half > 0.0 ? diam[k] * (0.25 / half) : dl; /* 0.5 / ds; a section of zero length: its diameter */
    }
    for (int32_t i = 0; i < nh; ++i) rhalf[i] *= sec->Ra / NS_PI * 4e-2;
}
