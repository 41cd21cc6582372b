#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dense_lu.h"

int dense_lu_solve(int32_t n, const int32_t *parent, const double *a, const double *b,
                   const double *d, const double *rhs, double *x) {
    const size_t nn = (size_t)n;
    double *m = calloc(nn * nn, sizeof *m); /* row-major */
    if (!m) return 2;
    for (int32_t i = 0; i < n; ++i) {
        m[(size_t)i * nn + (size_t)i] = d[i];
        x[i] = rhs[i];
        if (i > 0) {
            m[(size_t)i * nn + (size_t)parent[i]] = b[i];
            m[(size_t)parent[i] * nn + (size_t)i] = a[i];
        }
    }
    for (size_t k = 0; k < nn; ++k) {
        size_t piv = k;
        for (size_t r = k + 1; r < nn; ++r)
            if (fabs(m[r * nn + k]) > fabs(m[piv * nn + k])) piv = r;
        if (m[piv * nn + k] == 0.0) {
            free(m);
            return 1;
        }
        if (piv != k) {
            for (size_t c = 0; c < nn; ++c) {
                double t = m[k * nn + c];
                m[k * nn + c] = m[piv * nn + c];
                m[piv * nn + c] = t;
            }
            double t = x[k];
            x[k] = x[piv];
            x[piv] = t;
        }
        const double inv = 1.0 / m[k * nn + k];
        for (size_t r = k + 1; r < nn; ++r) {
            const double f = m[r * nn + k] * inv;
            if (f == 0.0) continue;
            for (size_t c = k + 1; c < nn; ++c) m[r * nn + c] -= f * m[k * nn + c];
            x[r] -= f * x[k];
        }
    }
    for (size_t k = nn; k-- > 0;) {
        double s = x[k];
        for (size_t c = k + 1; c < nn; ++c) s -= m[k * nn + c] * x[c];
        x[k] = s / m[k * nn + k];
    }
    free(m);
    return 0;
}
