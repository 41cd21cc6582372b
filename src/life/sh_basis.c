/* voxel-sh (docs/life.md, "voxel-sh: the dictionary from its orientations"):
 * the dictionary's columns as a smooth function of the atom's orientation u,
 *   D(:, a) ~ U^T f(u_a),
 * f the basis of the even spherical harmonics up to degree lmax written in a
 * form that is cheap to evaluate in registers (the CUDA kernels compute f(u_a)
 * per coefficient instead of gathering the column): for m = 0 .. lmax and
 * k = 0 .. K(m) - 1, with K(m) = (lmax - m) / 2 + 1 for even m and
 * (lmax - m + 1) / 2 for odd m,
 *   T_k(2 z^2 - 1) z^(m mod 2) Re (x + i y)^m, and for m > 0 the same with Im,
 * T_k the Chebyshev polynomials: on the unit sphere these span exactly the
 * harmonics of even degree <= lmax ((lmax + 1)(lmax + 2) / 2 functions), the
 * space a stick or tensor dictionary (even in u) is close to. U is the least
 * squares fit over every atom of ENCODE's orientation grid (the atoms are the
 * only points where f is ever evaluated), through the normal equations
 * (Cholesky; the basis is well conditioned: cond <= 2e3 up to lmax 16). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/pragma.h"
#include "life/life_impl.h"
#include "neurosolve/life_io.h"

int ns_life_sh_count(int lmax) {
    if (lmax < 0 || lmax % 2) return 0;
    return (lmax + 1) * (lmax + 2) / 2;
}

int32_t ns_life_grid_l(int32_t n_atoms) {
    /* (L - 1) L + 1 = n_atoms */
    const double r = (1.0 + sqrt(4.0 * (double)n_atoms - 3.0)) / 2.0;
    const int32_t L = (int32_t)llround(r);
    return L >= 2 && (int64_t)(L - 1) * L + 1 == n_atoms ? L : 0;
}

void ns_life_sh_basis(int lmax, const double u[3], double *f) {
    const double x = u[0], y = u[1], z = u[2], c2 = 2.0 * z * z - 1.0;
    double T[NS_LIFE_SH_LMAX / 2 + 1], zT[NS_LIFE_SH_LMAX / 2 + 1];
    const int K0 = lmax / 2 + 1;
    T[0] = 1.0;
    if (K0 > 1) T[1] = c2;
    for (int k = 2; k < K0; ++k) T[k] = 2.0 * c2 * T[k - 1] - T[k - 2];
    for (int k = 0; k < K0; ++k) zT[k] = z * T[k];
    double re = 1.0, im = 0.0;
    int j = 0;
    for (int m = 0; m <= lmax; ++m) {
        if (m > 0) {
            const double r2 = re * x - im * y;
            im = re * y + im * x;
            re = r2;
        }
        const int K = m % 2 == 0 ? (lmax - m) / 2 + 1 : (lmax - m + 1) / 2;
        const double *P = m % 2 ? zT : T;
        for (int k = 0; k < K; ++k) {
            f[j++] = P[k] * re;
            if (m > 0) f[j++] = P[k] * im;
        }
    }
}

/* In-place Cholesky of the SPD n x n matrix G (row-major, lower triangle),
 * then G X = B for the n x c right-hand sides B (row-major). 0 when G is not
 * numerically positive definite. */
static int cholesky_solve(double *G, int n, double *B, int c) {
    for (int i = 0; i < n; ++i) {
        for (int j = 0; j <= i; ++j) {
            double s = G[i * n + j];
            for (int k = 0; k < j; ++k) s -= G[i * n + k] * G[j * n + k];
            if (i == j) {
                if (!(s > 1e-13 * G[i * n + i] + 1e-300)) return 0;
                G[i * n + i] = sqrt(s);
            } else {
                G[i * n + j] = s / G[j * n + j];
            }
        }
    }
    for (int col = 0; col < c; ++col) {
        for (int i = 0; i < n; ++i) { /* L z = b */
            double s = B[i * c + col];
            for (int k = 0; k < i; ++k) s -= G[i * n + k] * B[k * c + col];
            B[i * c + col] = s / G[i * n + i];
        }
        for (int i = n - 1; i >= 0; --i) { /* L^T x = z */
            double s = B[i * c + col];
            for (int k = i + 1; k < n; ++k) s -= G[k * n + i] * B[k * c + col];
            B[i * c + col] = s / G[i * n + i];
        }
    }
    return 1;
}

/* The fit for one lmax: U (R x n_theta, row-major) and the largest error over
 * the model's dictionary relative to max |D|. */
static ns_status fit_one(const ns_life_model_t *m, int32_t L, int lmax, double *U, double *err) {
    const int R = ns_life_sh_count(lmax), T = m->n_theta;
    const int32_t A = m->n_atoms;
    double *G = calloc((size_t)R * R, sizeof *G);
    if (!G) return ns_fail(NS_ERR_OUT_OF_MEMORY, "voxel-sh: the %d x %d normal equations", R, R);
    memset(U, 0, (size_t)R * T * sizeof *U);
    ns_status s = NS_OK;
    NS_PRAGMA(omp parallel)
    {
        double *g = calloc((size_t)R * R + (size_t)R * T + R, sizeof *g);
        double *b = g ? g + (size_t)R * R : NULL, *f = g ? b + (size_t)R * T : NULL;
        if (g) {
            NS_PRAGMA(omp for schedule(static))
            for (int32_t a = 0; a < A; ++a) {
                double u[3];
                ns_life_atom_orientation(L, a, u);
                ns_life_sh_basis(lmax, u, f);
                const double *d = m->D + (int64_t)a * T;
                for (int i = 0; i < R; ++i) {
                    for (int k = 0; k <= i; ++k) g[i * R + k] += f[i] * f[k];
                    for (int t = 0; t < T; ++t) b[i * T + t] += f[i] * d[t];
                }
            }
            NS_PRAGMA(omp critical)
            {
                for (int i = 0; i < R * R; ++i) G[i] += g[i];
                for (int i = 0; i < R * T; ++i) U[i] += b[i];
            }
        } else {
            NS_PRAGMA(omp critical)
            s = ns_fail(NS_ERR_OUT_OF_MEMORY, "voxel-sh: per-thread sums");
        }
        free(g);
    }
    if (s == NS_OK && !cholesky_solve(G, R, U, T))
        s = ns_fail(NS_ERR_UNSUPPORTED, "voxel-sh: the basis of degree %d is singular on %d atoms", lmax, (int)A);
    free(G);
    if (s != NS_OK) return s;
    double worst = 0.0, big = 0.0;
    NS_PRAGMA(omp parallel for schedule(static) reduction(max : worst, big))
    for (int32_t a = 0; a < A; ++a) {
        double u[3], f[NS_LIFE_SH_MAX_COUNT];
        ns_life_atom_orientation(L, a, u);
        ns_life_sh_basis(lmax, u, f);
        const double *d = m->D + (int64_t)a * T;
        for (int t = 0; t < T; ++t) {
            double v = 0.0;
            for (int i = 0; i < R; ++i) v += U[i * T + t] * f[i];
            const double e = fabs(v - d[t]);
            if (e > worst) worst = e;
            if (fabs(d[t]) > big) big = fabs(d[t]);
        }
    }
    *err = big > 0 ? worst / big : (worst > 0 ? INFINITY : 0.0);
    return NS_OK;
}

ns_status ns_life_sh_fit(const ns_life_model_t *m, double tol, int *lmax, double **U, double *err) {
    *lmax = 0;
    *U = NULL;
    *err = INFINITY;
    const int32_t L = ns_life_grid_l(m->n_atoms);
    if (!L)
        return ns_fail(NS_ERR_UNSUPPORTED,
                       "voxel-sh: %d atoms is not ENCODE's orientation grid ((L - 1) L + 1 atoms): the "
                       "atoms' orientations are unknown", (int)m->n_atoms);
    double best = INFINITY;
    int best_l = 0;
    if ((int64_t)m->n_atoms < 2 * (int64_t)ns_life_sh_count(NS_LIFE_SH_LMIN))
        return ns_fail(NS_ERR_UNSUPPORTED,
                       "voxel-sh: %d atoms are too few to fit the %d functions of degree %d (at least %d; use "
                       "another variant)", (int)m->n_atoms, ns_life_sh_count(NS_LIFE_SH_LMIN), NS_LIFE_SH_LMIN,
                       2 * ns_life_sh_count(NS_LIFE_SH_LMIN));
    for (int l = NS_LIFE_SH_LMIN; l <= NS_LIFE_SH_LMAX; l += 2) {
        const int R = ns_life_sh_count(l);
        if ((int64_t)m->n_atoms < 2 * (int64_t)R) break; /* too few atoms to pin the fit down */
        double *u = malloc((size_t)R * m->n_theta * sizeof *u), e = INFINITY;
        if (!u) return ns_fail(NS_ERR_OUT_OF_MEMORY, "voxel-sh: the basis matrix");
        ns_status s = fit_one(m, L, l, u, &e);
        if (s != NS_OK && s != NS_ERR_UNSUPPORTED) {
            free(u);
            return s;
        }
        if (s == NS_OK && e <= tol) {
            *lmax = l;
            *U = u;
            *err = e;
            return NS_OK;
        }
        free(u);
        if (s == NS_OK && e < best) best = e, best_l = l;
    }
    return ns_fail(NS_ERR_UNSUPPORTED,
                   "voxel-sh: the dictionary is not a smooth function of its atoms' orientations: the "
                   "best fit (degree %d) is %.2g of max |D| off, more than %.2g (%d atoms; use another variant)",
                   best_l, best, tol, (int)m->n_atoms);
}
