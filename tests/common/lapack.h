/* LAPACK prototypes used by the tests as the independent reference
 * (Debian's liblapack, Fortran calling convention). */
#ifndef NS_TESTS_LAPACK_H
#define NS_TESTS_LAPACK_H

#include <stdlib.h>
#include <string.h>

extern void dgesv_(const int *n, const int *nrhs, double *a, const int *lda, int *ipiv, double *b,
                   const int *ldb, int *info);
extern void dgtsv_(const int *n, const int *nrhs, double *dl, double *d, double *du, double *b,
                   const int *ldb, int *info);
extern void sgtsv_(const int *n, const int *nrhs, float *dl, float *d, float *du, float *b,
                   const int *ldb, int *info);

/* Solve the Hines system of one cell (NEURON's convention: row i holds d[i]
 * on the diagonal and b[i] in the parent's column; row p holds a[i] in
 * column i) as a dense matrix with LAPACK's LU. x receives the solution.
 * Returns LAPACK's info (0 on success), -100 when memory runs out. */
static inline int lapack_hines_solve(int n, const int *parent, const double *a, const double *b,
                                     const double *d, const double *rhs, double *x) {
    double *m = calloc((size_t)n * (size_t)n, sizeof *m); /* column-major */
    int *ipiv = malloc((size_t)n * sizeof *ipiv);
    if (!m || !ipiv) {
        free(m);
        free(ipiv);
        return -100;
    }
    for (int i = 0; i < n; ++i) {
        m[(size_t)i * (size_t)n + (size_t)i] = d[i];
        if (i > 0) {
            const size_t p = (size_t)parent[i];
            m[p * (size_t)n + (size_t)i] = b[i]; /* row i, column p */
            m[(size_t)i * (size_t)n + p] = a[i]; /* row p, column i */
        }
    }
    memcpy(x, rhs, (size_t)n * sizeof *x);
    int one = 1, info = 0;
    dgesv_(&n, &one, m, &n, ipiv, x, &n, &info);
    free(m);
    free(ipiv);
    return info;
}

#endif
