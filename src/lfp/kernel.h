/* Private: LFPy's line-source and point-source kernels (lfpykit/lfpcalc.py),
 * for the host (forward.c: the coefficient matrix) and the GPU (cuda/lfp_gpu.cu:
 * coefficient tiles computed per reduction). */
#ifndef NS_LFP_KERNEL_H
#define NS_LFP_KERNEL_H

#include <math.h>

#ifdef __CUDACC__
#define NS_LFP_HD __host__ __device__
#else
#define NS_LFP_HD
#endif

/* The potential at pos of a unit current [nA] from a segment, times 4 pi
 * sigma (LFPy's `mapping / deltaS`; 1 / r for a point). */
NS_LFP_HD static inline double ns_lfp_kernel(const double *a, const double *b, double rlim, const double *pos,
                                             int point) {
    if (!point) {
        const double px = b[0] - a[0], py = b[1] - a[1], pz = b[2] - a[2];
        const double ds = sqrt(px * px + py * py + pz * pz);
        if (ds > 0.0) {
            const double ex = pos[0] - b[0], ey = pos[1] - b[1], ez = pos[2] - b[2];
            const double h = (ex * px + ey * py + ez * pz) / ds;
            double r2 = fabs(ex * ex + ey * ey + ez * ez - h * h);
            if (r2 < rlim * rlim) r2 = rlim * rlim;
            const double l = h + ds;
            double m;
            if (h < 0.0 && l < 0.0)
                m = log((sqrt(h * h + r2) - h) / (sqrt(l * l + r2) - l));
            else if (h < 0.0)
                m = log((sqrt(h * h + r2) - h) * (l + sqrt(l * l + r2)) / r2);
            else
                m = log((sqrt(l * l + r2) + l) / (sqrt(h * h + r2) + h));
            return m / ds;
        }
        /* a segment of zero length is its point (LFPy would divide by zero) */
    }
    const double mx = .5 * (a[0] + b[0]) - pos[0], my = .5 * (a[1] + b[1]) - pos[1], mz = .5 * (a[2] + b[2]) - pos[2];
    double r2 = mx * mx + my * my + mz * mz;
    if (r2 < rlim * rlim) r2 = rlim * rlim;
    return 1.0 / sqrt(r2);
}

#endif
