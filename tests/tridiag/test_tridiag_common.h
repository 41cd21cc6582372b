/* Helpers shared by the tridiagonal tests: random diagonally dominant
 * systems, scattering them into a layout, LAPACK reference solves. */
#ifndef NS_TESTS_TRIDIAG_COMMON_H
#define NS_TESTS_TRIDIAG_COMMON_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/rng.h"
#include "lapack.h"
#include "neurosolve/neurosolve.h"

/* A batch in a neutral form: system s occupies [start[s], start[s] + size[s])
 * of four packed double arrays (a = dl, b = d, c = du, r = rhs). */
typedef struct td_set {
    int64_t batch;
    int32_t *size;
    int64_t *start;
    int64_t total;
    double *a, *b, *c, *r;
} td_set;

/* Strictly diagonally dominant: |d| >= |dl| + |du| + 0.5, random signs of the
 * off-diagonals, rhs in [-1, 1]. dl[0] and du[n-1] get garbage on purpose
 * (every method must ignore them). */
static inline int td_make(td_set *t, int64_t batch, const int32_t *sizes, uint64_t seed) {
    memset(t, 0, sizeof *t);
    t->batch = batch;
    t->size = malloc((size_t)batch * sizeof *t->size);
    t->start = malloc((size_t)(batch + 1) * sizeof *t->start);
    if (!t->size || !t->start) return 0;
    t->start[0] = 0;
    for (int64_t s = 0; s < batch; ++s) {
        t->size[s] = sizes[s];
        t->start[s + 1] = t->start[s] + sizes[s];
    }
    t->total = t->start[batch];
    size_t bytes = (size_t)t->total * sizeof(double);
    t->a = malloc(bytes), t->b = malloc(bytes), t->c = malloc(bytes), t->r = malloc(bytes);
    if (!t->a || !t->b || !t->c || !t->r) return 0;
    ns_rng rng;
    ns_rng_seed(&rng, seed, 7);
    for (int64_t s = 0; s < batch; ++s) {
        for (int32_t k = 0; k < sizes[s]; ++k) {
            const int64_t i = t->start[s] + k;
            t->a[i] = ns_rng_uniform(&rng, -1.0, 1.0);
            t->c[i] = ns_rng_uniform(&rng, -1.0, 1.0);
            double lo = k > 0 ? fabs(t->a[i]) : 0.0, up = k + 1 < sizes[s] ? fabs(t->c[i]) : 0.0;
            double mag = lo + up + ns_rng_uniform(&rng, 0.5, 1.5);
            t->b[i] = ns_rng_unit(&rng) < 0.5 ? -mag : mag;
            t->r[i] = ns_rng_uniform(&rng, -1.0, 1.0);
            if (k == 0) t->a[i] = 1e3;          /* outside the matrix */
            if (k + 1 == sizes[s]) t->c[i] = -1e3; /* outside the matrix */
        }
    }
    return 1;
}

static inline void td_free(td_set *t) {
    free(t->size);
    free(t->start);
    free(t->a);
    free(t->b);
    free(t->c);
    free(t->r);
    memset(t, 0, sizeof *t);
}

/* LAPACK's dgtsv on every system: x (packed like the set) gets the solutions. */
static inline int td_lapack(const td_set *t, double *x) {
    for (int64_t s = 0; s < t->batch; ++s) {
        const int n = t->size[s];
        const int64_t o = t->start[s];
        double *dl = malloc((size_t)n * sizeof *dl), *d = malloc((size_t)n * sizeof *d);
        double *du = malloc((size_t)n * sizeof *du);
        if (!dl || !d || !du) return 0;
        for (int k = 0; k < n; ++k) {
            d[k] = t->b[o + k];
            if (k + 1 < n) {
                dl[k] = t->a[o + k + 1]; /* LAPACK's dl[k] is the entry below d[k] */
                du[k] = t->c[o + k];
            }
            x[o + k] = t->r[o + k];
        }
        int one = 1, info = 0;
        dgtsv_(&n, &one, dl, d, du, x + o, &n, &info);
        free(dl);
        free(d);
        free(du);
        if (info != 0) return 0;
    }
    return 1;
}

/* Same in single precision with sgtsv. */
static inline int td_lapack_f32(const td_set *t, float *x) {
    for (int64_t s = 0; s < t->batch; ++s) {
        const int n = t->size[s];
        const int64_t o = t->start[s];
        float *dl = malloc((size_t)n * sizeof *dl), *d = malloc((size_t)n * sizeof *d);
        float *du = malloc((size_t)n * sizeof *du);
        if (!dl || !d || !du) return 0;
        for (int k = 0; k < n; ++k) {
            d[k] = (float)t->b[o + k];
            if (k + 1 < n) {
                dl[k] = (float)t->a[o + k + 1];
                du[k] = (float)t->c[o + k];
            }
            x[o + k] = (float)t->r[o + k];
        }
        int one = 1, info = 0;
        sgtsv_(&n, &one, dl, d, du, x + o, &n, &info);
        free(dl);
        free(d);
        free(du);
        if (info != 0) return 0;
    }
    return 1;
}

/* Where unknown k of system s lies in the caller's arrays. */
typedef struct td_place {
    ns_tridiag_layout layout;
    int64_t stride;        /* resolved */
    const int64_t *offsets; /* variable Flat, else NULL */
} td_place;

static inline int64_t td_index(const td_place *p, const td_set *t, int64_t s, int32_t k) {
    if (p->layout == NS_TRIDIAG_INTERLEAVED) return (int64_t)k * p->stride + s;
    if (p->offsets) return p->offsets[s] + k;
    (void)t;
    return s * p->stride + k;
}

/* Scatter the set into four arrays of `length` entries (filled first with
 * `fill`), in double or float. */
static inline void td_scatter(const td_set *t, const td_place *p, int64_t length, int f32, double fill,
                              void *dl, void *d, void *du, void *x) {
    void *arr[4] = {dl, d, du, x};
    const double *src[4] = {t->a, t->b, t->c, t->r};
    for (int a = 0; a < 4; ++a) {
        for (int64_t i = 0; i < length; ++i) {
            if (f32) ((float *)arr[a])[i] = (float)fill;
            else ((double *)arr[a])[i] = fill;
        }
        for (int64_t s = 0; s < t->batch; ++s)
            for (int32_t k = 0; k < t->size[s]; ++k) {
                const int64_t i = td_index(p, t, s, k);
                const double v = src[a][t->start[s] + k];
                if (f32) ((float *)arr[a])[i] = (float)v;
                else ((double *)arr[a])[i] = v;
            }
    }
}

/* Largest normwise relative difference over systems between the solution in
 * the caller's x and a packed reference: max_s |x_s - ref_s|_inf / |ref_s|_inf. */
static inline double td_max_error(const td_set *t, const td_place *p, int f32, const void *x,
                                  const double *ref) {
    double worst = 0.0;
    for (int64_t s = 0; s < t->batch; ++s) {
        double diff = 0.0, norm = 0.0;
        for (int32_t k = 0; k < t->size[s]; ++k) {
            const int64_t i = td_index(p, t, s, k);
            const double v = f32 ? (double)((const float *)x)[i] : ((const double *)x)[i];
            const double r = ref[t->start[s] + k];
            const double e = fabs(v - r);
            if (!(e <= diff)) diff = e; /* NaN wins */
            if (fabs(r) > norm) norm = fabs(r);
        }
        const double rel = diff / (norm > 0.0 ? norm : 1.0);
        if (!(rel <= worst)) worst = rel;
    }
    return worst;
}

/* One solve of `t` on host arrays by `solver` (made with precision f32): the
 * systems scattered at `p` into arrays of the solver's length, NaN in the
 * gaps, then solved (checked). Returns x (malloc'd; the caller frees it),
 * with the largest error against `ref` (td_max_error) and how many entries
 * the solve left other than NaN (the systems' own only, when nothing outside
 * them is written). */
static inline void *td_solve_host(const td_set *t, ns_tridiag_solver_t *solver, const td_place *p, int f32,
                                  const double *ref, double *err, int64_t *written) {
    const int64_t len = ns_tridiag_solver_length(solver);
    const size_t es = f32 ? sizeof(float) : sizeof(double);
    void *dl = malloc((size_t)len * es), *d = malloc((size_t)len * es), *du = malloc((size_t)len * es),
         *x = malloc((size_t)len * es);
    td_scatter(t, p, len, f32, NAN, dl, d, du, x);
    CHECK_OK(f32 ? ns_tridiag_solver_solve_f32(solver, dl, d, du, x) : ns_tridiag_solver_solve(solver, dl, d, du, x));
    *err = td_max_error(t, p, f32, x, ref);
    *written = 0;
    for (int64_t i = 0; i < len; ++i)
        if (!isnan(f32 ? (double)((float *)x)[i] : ((double *)x)[i])) ++*written;
    free(dl), free(d), free(du);
    return x;
}

/* td_make with every system of size n. */
static inline int td_make_fixed(td_set *t, int64_t batch, int32_t n, uint64_t seed) {
    int32_t *sizes = malloc((size_t)batch * sizeof *sizes);
    if (!sizes) return 0;
    for (int64_t s = 0; s < batch; ++s) sizes[s] = n;
    const int ok = td_make(t, batch, sizes, seed);
    free(sizes);
    return ok;
}

#endif
