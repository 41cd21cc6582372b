/* The Thomas algorithm on one system: the reference every batched method is
 * tested against. Forward elimination keeps the modified upper diagonal
 * c'[k] = du[k] / p[k] in a scratch array and the modified right-hand side in
 * x; back substitution then overwrites x with the solution:
 *     p[0] = d[0],  p[k] = d[k] - dl[k] c'[k-1]
 *     x'[k] = (rhs[k] - dl[k] x'[k-1]) / p[k]
 *     x[n-1] = x'[n-1],  x[k] = x'[k] - c'[k] x[k+1]
 * 8n flops; dl[0] and du[n-1] are never read. */
#include <math.h>
#include <stdlib.h>

#include "tridiag/tridiag_impl.h"

/* A pivot fails when it is not larger than tol times its row's magnitude
 * (tol = 0: exactly zero), or when it is NaN or infinite. Written with `!(>)`
 * so that NaN fails. */
#define NS_THOMAS_BODY(T, FABS)                                                        \
    if (n <= 0) return -1;                                                             \
    T c0 = n > 1 ? du[0] : (T)0;                                                       \
    T p = d[0];                                                                        \
    if (!(FABS(p) > tol * (FABS(p) + FABS(c0))) || isinf(p)) return 0;                 \
    T cp = c0 / p;                                                                     \
    T xp = x[0] / p;                                                                   \
    work[0] = cp;                                                                      \
    x[0] = xp;                                                                         \
    for (int32_t k = 1; k < n; ++k) {                                                  \
        const ptrdiff_t i = (ptrdiff_t)k * stride;                                     \
        const T a = dl[i], b = d[i], c = k + 1 < n ? du[i] : (T)0;                     \
        p = b - a * cp;                                                                \
        if (!(FABS(p) > tol * (FABS(a) + FABS(b) + FABS(c))) || isinf(p)) return k;    \
        cp = c / p;                                                                    \
        xp = (x[i] - a * xp) / p;                                                      \
        work[k] = cp;                                                                  \
        x[i] = xp;                                                                     \
    }                                                                                  \
    for (int32_t k = n - 2; k >= 0; --k) {                                             \
        const ptrdiff_t i = (ptrdiff_t)k * stride;                                     \
        xp = x[i] - work[k] * xp;                                                      \
        x[i] = xp;                                                                     \
    }                                                                                  \
    return -1;

int32_t ns_tridiag_thomas_f64(int32_t n, ptrdiff_t stride, const double *dl, const double *d,
                              const double *du, double *x, double *work, double tol) {
    NS_THOMAS_BODY(double, fabs)
}

int32_t ns_tridiag_thomas_f32(int32_t n, ptrdiff_t stride, const float *dl, const float *d,
                              const float *du, float *x, float *work, float tol) {
    NS_THOMAS_BODY(float, fabsf)
}

/* Scratch on the stack up to this many unknowns [elements]: 32 KiB; a
 * larger system's from the heap (-2 when that fails). */
#define NS_THOMAS_STACK 4096
#define NS_THOMAS_ONE_BODY(T, THOMAS)                                                  \
    if (n <= 0) return -1;                                                             \
    T local[NS_THOMAS_STACK];                                                          \
    T *work = n <= NS_THOMAS_STACK ? local : malloc((size_t)n * sizeof *work);         \
    if (!work) return -2;                                                              \
    int32_t r = THOMAS(n, stride, dl, d, du, x, work, (T)0);                           \
    if (work != local) free(work);                                                     \
    return r;

int32_t ns_thomas_one(int32_t n, ptrdiff_t stride, const double *dl, const double *d,
                      const double *du, double *x) {
    NS_THOMAS_ONE_BODY(double, ns_tridiag_thomas_f64)
}

int32_t ns_thomas_one_f32(int32_t n, ptrdiff_t stride, const float *dl, const float *d,
                          const float *du, float *x) {
    NS_THOMAS_ONE_BODY(float, ns_tridiag_thomas_f32)
}
