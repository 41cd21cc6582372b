/* Shared by the LiFE tests: tiny synthetic models and an explicit sparse
 * matrix M (CSR) built from the tensor by code independent of the library. */
#ifndef NS_TESTS_TEST_LIFE_COMMON_H
#define NS_TESTS_TEST_LIFE_COMMON_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "neurosolve/neurosolve.h"

/* A small model with the synthetic generator's structure. */
static inline ns_life_model_t *tiny_model(int32_t n_theta, int32_t L, int32_t n_fibers, int32_t g,
                                          double noise, uint64_t seed) {
    ns_life_synth_options o;
    ns_life_synth_options_init(&o);
    o.n_theta = n_theta;
    o.dictionary_l = L;
    o.n_fibers = n_fibers;
    o.grid[0] = g, o.grid[1] = g + 2, o.grid[2] = g;
    o.mean_length = g * 0.8;
    o.curvature = 0.3;
    o.noise = noise;
    o.seed = seed;
    ns_life_model_t *m = NULL;
    if (ns_life_synth(&o, &m) != NS_OK) return NULL;
    return m;
}

/* The models of voxel-sh's higher degrees (64 directions, ENCODE's L = 40 grid, b-value b):
 * test_life_products asserts the degree each needs, test_life_cuda runs its kernels on them. */
static inline ns_life_model_t *b_value_model(double b) {
    ns_life_synth_options o;
    ns_life_synth_options_init(&o);
    o.n_theta = 64, o.dictionary_l = 40, o.n_fibers = 300, o.b_value = b;
    o.grid[0] = 10, o.grid[1] = 12, o.grid[2] = 10, o.mean_length = 8, o.curvature = 0.3, o.seed = 27;
    ns_life_model_t *m = NULL;
    if (ns_life_synth(&o, &m) != NS_OK) return NULL;
    return m;
}

/* M as CSR (rows n_theta * n_voxels, columns n_fibers), duplicates summed. */
typedef struct csr {
    int64_t rows, cols;
    int64_t *ptr;
    int32_t *col;
    double *val;
} csr;

static inline void csr_free(csr *c) {
    free(c->ptr);
    free(c->col);
    free(c->val);
}

static inline int csr_build(ns_life_model_t *m, csr *c) {
    memset(c, 0, sizeof *c);
    const int64_t T = ns_life_model_n_theta(m), V = ns_life_model_n_voxels(m);
    const int64_t F = ns_life_model_n_fibers(m), K = ns_life_model_n_coeffs(m);
    const int32_t *atom = ns_life_model_atom(m), *voxel = ns_life_model_voxel(m),
                  *fiber = ns_life_model_fiber(m);
    const double *value = ns_life_model_value(m), *D = ns_life_model_dictionary(m);
    c->rows = T * V;
    c->cols = F;
    /* count entries per row (before merging) */
    int64_t *cnt = calloc((size_t)c->rows + 1, sizeof *cnt);
    if (!cnt) return 0;
    for (int64_t k = 0; k < K; ++k)
        for (int64_t i = 0; i < T; ++i) ++cnt[voxel[k] * T + i + 1];
    for (int64_t r = 0; r < c->rows; ++r) cnt[r + 1] += cnt[r];
    const int64_t nnz = cnt[c->rows];
    int32_t *tc = malloc((size_t)nnz * sizeof *tc);
    double *tv = malloc((size_t)nnz * sizeof *tv);
    int64_t *fill = malloc((size_t)c->rows * sizeof *fill);
    if (!tc || !tv || !fill) return 0;
    memcpy(fill, cnt, (size_t)c->rows * sizeof *fill);
    for (int64_t k = 0; k < K; ++k)
        for (int64_t i = 0; i < T; ++i) {
            const int64_t r = voxel[k] * T + i, j = fill[r]++;
            tc[j] = fiber[k];
            tv[j] = D[(int64_t)atom[k] * T + i] * value[k];
        }
    /* merge duplicate columns within each row */
    c->ptr = calloc((size_t)c->rows + 1, sizeof *c->ptr);
    c->col = malloc((size_t)nnz * sizeof *c->col);
    c->val = malloc((size_t)nnz * sizeof *c->val);
    int64_t *where = malloc((size_t)F * sizeof *where);
    if (!c->ptr || !c->col || !c->val || !where) return 0;
    for (int64_t f = 0; f < F; ++f) where[f] = -1;
    int64_t out = 0;
    for (int64_t r = 0; r < c->rows; ++r) {
        const int64_t begin = out;
        for (int64_t j = cnt[r]; j < cnt[r + 1]; ++j) {
            if (where[tc[j]] >= begin) {
                c->val[where[tc[j]]] += tv[j];
            } else {
                where[tc[j]] = out;
                c->col[out] = tc[j];
                c->val[out] = tv[j];
                ++out;
            }
        }
        c->ptr[r + 1] = out;
    }
    free(cnt);
    free(tc);
    free(tv);
    free(fill);
    free(where);
    return 1;
}

static inline void csr_mw(const csr *c, const double *w, double *y) {
    for (int64_t r = 0; r < c->rows; ++r) {
        double s = 0.0;
        for (int64_t j = c->ptr[r]; j < c->ptr[r + 1]; ++j) s += c->val[j] * w[c->col[j]];
        y[r] = s;
    }
}

static inline void csr_mty(const csr *c, const double *y, double *w) {
    memset(w, 0, (size_t)c->cols * sizeof *w);
    for (int64_t r = 0; r < c->rows; ++r)
        for (int64_t j = c->ptr[r]; j < c->ptr[r + 1]; ++j) w[c->col[j]] += c->val[j] * y[r];
}

/* max |a - b| / max |b| */
static inline double rel_inf(const double *a, const double *b, int64_t n) {
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        if (fabs(a[i] - b[i]) > num || a[i] != a[i]) num = a[i] != a[i] ? INFINITY : fabs(a[i] - b[i]);
        if (fabs(b[i]) > den) den = fabs(b[i]);
    }
    return den > 0 ? num / den : num;
}

#endif
