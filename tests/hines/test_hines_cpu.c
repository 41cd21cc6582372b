/* The CPU Hines solvers against LAPACK's dense LU, sequential against
 * OpenMP, and the batch API's error handling. */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "lapack.h"
#include "neurosolve/neurosolve.h"

/* A random Hines-ordered tree made here, independently of the library's
 * generators: parent[i] uniform in [max(0, i - span), i). */
static int32_t *random_parents(int32_t n, int32_t span, unsigned *state) {
    int32_t *p = malloc((size_t)n * sizeof *p);
    p[0] = -1;
    for (int32_t i = 1; i < n; ++i) {
        *state = *state * 1103515245u + 12345u;
        int32_t lo = i - span > 0 ? i - span : 0;
        p[i] = lo + (int32_t)((*state >> 8) % (unsigned)(i - lo));
    }
    return p;
}

static double max_rel(const double *x, const double *ref, int64_t n) {
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        double e = fabs(x[i] - ref[i]);
        if (!(e <= num)) num = e;
        if (fabs(ref[i]) > den) den = fabs(ref[i]);
    }
    return num / den;
}

typedef struct values {
    double *a, *b, *d, *rhs, *d0, *rhs0;
} values;

static values alloc_values(int64_t n) {
    values v;
    v.a = malloc((size_t)n * sizeof(double));
    v.b = malloc((size_t)n * sizeof(double));
    v.d = malloc((size_t)n * sizeof(double));
    v.rhs = malloc((size_t)n * sizeof(double));
    v.d0 = malloc((size_t)n * sizeof(double));
    v.rhs0 = malloc((size_t)n * sizeof(double));
    return v;
}

static void free_values(values *v) {
    free(v->a); free(v->b); free(v->d); free(v->rhs); free(v->d0); free(v->rhs0);
}

/* Every cell of a mixed batch against LAPACK, for one method. */
static void check_against_lapack(ns_hines_method method) {
    unsigned state = 12345u;
    enum { SHAPES = 5 };
    const int32_t sizes[SHAPES] = {1, 2, 37, 400, 1500};
    const int32_t spans[SHAPES] = {1, 1, 3, 40, 1500};
    ns_tree_t *trees[SHAPES];
    for (int s = 0; s < SHAPES; ++s) {
        int32_t *p = random_parents(sizes[s], spans[s], &state);
        CHECK_OK(ns_tree_create(sizes[s], p, &trees[s]));
        free(p);
    }
    ns_batch_t *batch = NULL;
    const int64_t cells = 23; /* not a multiple of anything in particular */
    CHECK_OK(ns_batch_create(SHAPES, (const ns_tree_t *const *)trees, cells, NULL, &batch));
    const int64_t n = ns_batch_compartments(batch);
    values v = alloc_values(n);
    CHECK_OK(ns_batch_random_values(batch, 99, v.a, v.b, v.d, v.rhs));
    memcpy(v.d0, v.d, (size_t)n * sizeof(double));
    memcpy(v.rhs0, v.rhs, (size_t)n * sizeof(double));
    ns_solve_options opt;
    ns_solve_options_init(&opt);
    opt.method = method;
    opt.threads = 3;
    CHECK_OK(ns_hines_solve(batch, &opt, v.a, v.b, v.d, v.rhs));
    const int64_t *off = ns_batch_cell_offset(batch);
    const int32_t *cs = ns_batch_cell_shape(batch);
    double worst = 0.0;
    for (int64_t c = 0; c < cells; ++c) {
        const ns_tree_t *t = ns_batch_shape(batch, cs[c]);
        int32_t sz = ns_tree_size(t);
        double *x = malloc((size_t)sz * sizeof *x);
        int info = lapack_hines_solve(sz, ns_tree_parent(t), v.a + off[c], v.b + off[c], v.d0 + off[c],
                                      v.rhs0 + off[c], x);
        CHECK(info == 0);
        double e = max_rel(v.rhs + off[c], x, sz);
        if (e > worst) worst = e;
        free(x);
    }
    CHECK_MSG(worst <= 1e-12, "%s: max relative error against LAPACK %.3e", ns_hines_method_name(method), worst);
    free_values(&v);
    ns_batch_destroy(batch);
    for (int s = 0; s < SHAPES; ++s) ns_tree_destroy(trees[s]);
}

/* OpenMP must give the sequential results bit for bit: same operations per cell. */
static void check_openmp_equals_sequential(void) {
    ns_tree_t *t = NULL;
    unsigned state = 7u;
    int32_t *p = random_parents(300, 20, &state);
    CHECK_OK(ns_tree_create(300, p, &t));
    free(p);
    ns_batch_t *batch = NULL;
    CHECK_OK(ns_batch_create(1, (const ns_tree_t *const *)&t, 1001, NULL, &batch));
    const int64_t n = ns_batch_compartments(batch);
    values v = alloc_values(n);
    CHECK_OK(ns_batch_random_values(batch, 5, v.a, v.b, v.d, v.rhs));
    memcpy(v.d0, v.d, (size_t)n * sizeof(double));
    memcpy(v.rhs0, v.rhs, (size_t)n * sizeof(double));
    ns_solve_options opt;
    ns_solve_options_init(&opt);
    opt.method = NS_HINES_SEQUENTIAL;
    CHECK_OK(ns_hines_solve(batch, &opt, v.a, v.b, v.d, v.rhs));
    opt.method = NS_HINES_OPENMP;
    opt.threads = 4;
    CHECK_OK(ns_hines_solve(batch, &opt, v.a, v.b, v.d0, v.rhs0));
    CHECK(memcmp(v.rhs, v.rhs0, (size_t)n * sizeof(double)) == 0);
    CHECK(memcmp(v.d, v.d0, (size_t)n * sizeof(double)) == 0);
    /* auto resolves to a CPU method here and is exercised too */
    ns_hines_solver_t *s = NULL;
    ns_solve_options_init(&opt);
    opt.backend = NS_BACKEND_CPU;
    CHECK_OK(ns_hines_solver_create(batch, &opt, &s));
    CHECK(ns_hines_solver_backend(s) == NS_BACKEND_CPU);
    CHECK(ns_hines_solver_method(s) == NS_HINES_SEQUENTIAL || ns_hines_solver_method(s) == NS_HINES_OPENMP);
    ns_hines_solver_destroy(s);
    free_values(&v);
    ns_batch_destroy(batch);
    ns_tree_destroy(t);
}

static void check_bad_input(void) {
    int32_t parent[4] = {-1, 0, 1, 1};
    ns_tree_t *t = NULL;
    CHECK_OK(ns_tree_create(4, parent, &t));
    ns_batch_t *batch = NULL;
    /* N = 0 cells is an error */
    CHECK(ns_batch_create(1, (const ns_tree_t *const *)&t, 0, NULL, &batch) == NS_ERR_EMPTY);
    CHECK(batch == NULL);
    CHECK(strstr(ns_last_error(), "at least one cell") != NULL);
    /* trees out of Hines order */
    int32_t bad1[3] = {-1, 2, 0}, bad2[3] = {0, 0, 1}, bad3[3] = {-1, 0, -5};
    ns_tree_t *tb = NULL;
    CHECK(ns_tree_create(3, bad1, &tb) == NS_ERR_TOPOLOGY && tb == NULL);
    CHECK(strstr(ns_last_error(), "compartment 1 has parent 2") != NULL);
    CHECK(ns_tree_create(3, bad2, &tb) == NS_ERR_TOPOLOGY);
    CHECK(ns_tree_create(3, bad3, &tb) == NS_ERR_TOPOLOGY);
    CHECK(ns_tree_create(0, bad3, &tb) == NS_ERR_EMPTY);
    /* a cell pointing at a shape that does not exist */
    int32_t shape_of[2] = {0, 1};
    CHECK(ns_batch_create(1, (const ns_tree_t *const *)&t, 2, shape_of, &batch) == NS_ERR_SIZE);

    CHECK_OK(ns_batch_create(1, (const ns_tree_t *const *)&t, 3, NULL, &batch));
    values v = alloc_values(12);
    CHECK_OK(ns_batch_random_values(batch, 1, v.a, v.b, v.d, v.rhs));
    /* a zero pivot in cell 1: the whole row 6 (cell 1, compartment 2) is zero */
    memcpy(v.d0, v.d, sizeof(double) * 12);
    v.d[6] = 0.0;
    ns_solve_options opt;
    ns_solve_options_init(&opt);
    opt.method = NS_HINES_SEQUENTIAL;
    CHECK(ns_hines_solve(batch, &opt, v.a, v.b, v.d, v.rhs) == NS_ERR_SINGULAR);
    CHECK_MSG(strstr(ns_last_error(), "cell 1, compartment 2") != NULL, "got '%s'", ns_last_error());
    opt.method = NS_HINES_OPENMP;
    memcpy(v.d, v.d0, sizeof(double) * 12);
    v.d[6] = 0.0;
    CHECK(ns_hines_solve(batch, &opt, v.a, v.b, v.d, v.rhs) == NS_ERR_SINGULAR);
    CHECK(strstr(ns_last_error(), "cell 1, compartment 2") != NULL);
    /* NaN input with check_finite names the array and index */
    CHECK_OK(ns_batch_random_values(batch, 1, v.a, v.b, v.d, v.rhs));
    v.b[5] = NAN;
    opt.check_finite = 1;
    CHECK(ns_hines_solve(batch, &opt, v.a, v.b, v.d, v.rhs) == NS_ERR_NOT_FINITE);
    CHECK(strstr(ns_last_error(), "b[5]") != NULL);
    /* without the check, a NaN reaching a pivot is still reported, never silent */
    opt.check_finite = 0;
    CHECK_OK(ns_batch_random_values(batch, 1, v.a, v.b, v.d, v.rhs));
    v.d[7] = NAN; /* cell 1, compartment 3: a leaf, its own pivot */
    CHECK(ns_hines_solve(batch, &opt, v.a, v.b, v.d, v.rhs) == NS_ERR_SINGULAR);
    /* a method of another backend than the one asked for */
    opt.method = NS_HINES_INTERLEAVED;
    opt.backend = NS_BACKEND_CPU;
    CHECK(ns_hines_solve(batch, &opt, v.a, v.b, v.d, v.rhs) == NS_ERR_INVALID_ARGUMENT);
    /* a GPU method where there is no GPU (or no CUDA) is a status, not a crash */
    int devices = 0;
    if (ns_cuda_device_count(&devices) != NS_OK || devices == 0) {
        opt.backend = NS_BACKEND_AUTO;
        ns_status st = ns_hines_solve(batch, &opt, v.a, v.b, v.d, v.rhs);
        CHECK(st == NS_ERR_NO_DEVICE || st == NS_ERR_UNSUPPORTED);
    }
    CHECK(ns_hines_solve(NULL, NULL, v.a, v.b, v.d, v.rhs) == NS_ERR_INVALID_ARGUMENT);
    CHECK(ns_hines_solve(batch, NULL, NULL, v.b, v.d, v.rhs) == NS_ERR_INVALID_ARGUMENT);
    /* names round-trip */
    ns_hines_method m;
    CHECK(ns_hines_method_from_name("block-interleaved", &m) == NS_OK && m == NS_HINES_BLOCK_INTERLEAVED);
    CHECK(ns_hines_method_from_name("nonsense", &m) == NS_ERR_INVALID_ARGUMENT);
    CHECK(strcmp(ns_status_string(NS_ERR_SINGULAR), "singular system (zero pivot)") == 0);
    free_values(&v);
    ns_batch_destroy(batch);
    ns_tree_destroy(t);
    ns_batch_destroy(NULL);
    ns_tree_destroy(NULL);
}

/* A one-compartment cell: x = rhs / d. */
static void check_one_compartment(void) {
    int32_t parent[1] = {-1};
    ns_tree_t *t = NULL;
    CHECK_OK(ns_tree_create(1, parent, &t));
    ns_batch_t *batch = NULL;
    CHECK_OK(ns_batch_create(1, (const ns_tree_t *const *)&t, 5, NULL, &batch));
    double a[5] = {0}, b[5] = {0}, d[5] = {2, 4, 8, 0.5, 1}, r[5] = {1, 1, 1, 1, -3};
    CHECK_OK(ns_hines_solve(batch, NULL, a, b, d, r));
    CHECK(r[0] == 0.5 && r[1] == 0.25 && r[2] == 0.125 && r[3] == 2.0 && r[4] == -3.0);
    ns_batch_destroy(batch);
    ns_tree_destroy(t);
    /* an empty system reads nothing (it used to test the pivot d[0]) */
    double *none = malloc(1);
    CHECK(ns_hines_solve_one(0, (const int32_t *)none, (const double *)none, (const double *)none,
                             (double *)none, (double *)none) == -1);
    free(none);
}

/* Tree statistics on a hand-drawn tree:
 *   0 - 1 - 2 - 3
 *        \
 *         4 - 5 - 6
 *              \
 *               7
 * node 1 has children 2 and 4, node 5 has children 6 and 7, so the
 * unbranched runs are {0,1} {2,3} {4,5} {6} {7}. */
static void check_tree_stats(void) {
    int32_t parent[8] = {-1, 0, 1, 2, 1, 4, 5, 5};
    ns_tree_t *t = NULL;
    CHECK_OK(ns_tree_create(8, parent, &t));
    ns_tree_stats s;
    ns_tree_get_stats(t, &s);
    CHECK(s.size == 8);
    CHECK(s.branch_points == 2);
    CHECK(s.leaves == 3);
    CHECK_MSG(s.branches == 5, "branches = %d", s.branches); /* {0,1} {2,3} {4,5} {6} {7} */
    CHECK(s.depth == 5);        /* 0-1-4-5-6 */
    CHECK(s.branch_depth == 3); /* {0,1} {4,5} {6} */
    ns_tree_destroy(t);
}

/* Cell counts whose arrays or offsets overflow: a status, never a wrapped
 * allocation (2^62 cells: 4 * 2^62 bytes wraps to 0 and 8 * (2^62 + 1) to 8,
 * so the loop that fills them wrote past both). */
static void check_huge_batch(void) {
    int32_t parent[3] = {-1, 0, 1};
    ns_tree_t *t = NULL;
    CHECK_OK(ns_tree_create(3, parent, &t));
    ns_batch_t *batch = (ns_batch_t *)&batch;
    const int64_t huge[3] = {(int64_t)1 << 62, INT64_MAX, ((int64_t)1 << 60) + 1};
    for (int k = 0; k < 3; ++k) {
        ns_status st = ns_batch_create(1, (const ns_tree_t *const *)&t, huge[k], NULL, &batch);
        CHECK_MSG(st == NS_ERR_SIZE, "%lld cells: %s", (long long)huge[k], ns_status_string(st));
        CHECK(batch == NULL);
        CHECK_MSG(strstr(ns_last_error(), "cells") != NULL, "got '%s'", ns_last_error());
    }
    ns_tree_destroy(t);
}

int main(void) {
    check_huge_batch();
    check_against_lapack(NS_HINES_SEQUENTIAL);
    check_against_lapack(NS_HINES_OPENMP);
    check_openmp_equals_sequential();
    check_bad_input();
    check_one_compartment();
    check_tree_stats();
    return check_summary("test_hines_cpu");
}
