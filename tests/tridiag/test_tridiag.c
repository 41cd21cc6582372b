/* Batched tridiagonal solvers on the CPU: the reference Thomas solve and the
 * sequential and OpenMP batches in both layouts and precisions, fixed and
 * variable sizes, against LAPACK's dgtsv/sgtsv; bad input. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_tridiag_common.h"

static int contains(const char *text, const char *part) { return strstr(text, part) != NULL; }

/* ns_thomas_one / ns_thomas_one_f32 against LAPACK, with a stride. */
static void test_thomas_one(void) {
    const int32_t sizes[] = {1, 2, 3, 7, 100, 5000}; /* 5000: the heap scratch path */
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
        td_set t;
        CHECK(td_make(&t, 1, &sizes[i], 100 + i));
        const int32_t n = sizes[i];
        const ptrdiff_t stride = 3;
        double *dl = calloc((size_t)n * 3, sizeof *dl), *d = calloc((size_t)n * 3, sizeof *d);
        double *du = calloc((size_t)n * 3, sizeof *du), *x = calloc((size_t)n * 3, sizeof *x);
        float *fl = calloc((size_t)n, sizeof *fl), *fd = calloc((size_t)n, sizeof *fd);
        float *fu = calloc((size_t)n, sizeof *fu), *fx = calloc((size_t)n, sizeof *fx);
        double *ref = malloc((size_t)n * sizeof *ref);
        float *fref = malloc((size_t)n * sizeof *fref);
        for (int32_t k = 0; k < n; ++k) {
            dl[k * stride] = t.a[k], d[k * stride] = t.b[k], du[k * stride] = t.c[k], x[k * stride] = t.r[k];
            fl[k] = (float)t.a[k], fd[k] = (float)t.b[k], fu[k] = (float)t.c[k], fx[k] = (float)t.r[k];
        }
        CHECK(td_lapack(&t, ref));
        CHECK(td_lapack_f32(&t, fref));
        CHECK(ns_thomas_one(n, stride, dl, d, du, x) == -1);
        CHECK(ns_thomas_one_f32(n, 1, fl, fd, fu, fx) == -1);
        double err = 0.0, ferr = 0.0, norm = 0.0;
        for (int32_t k = 0; k < n; ++k) {
            err = fmax(err, fabs(x[k * stride] - ref[k]));
            ferr = fmax(ferr, fabs((double)fx[k] - (double)fref[k]));
            norm = fmax(norm, fabs(ref[k]));
        }
        CHECK_MSG(err <= 1e-13 * norm, "n = %d: thomas vs dgtsv %g", n, err / norm);
        CHECK_MSG(ferr <= 1e-5 * norm, "n = %d: thomas_f32 vs sgtsv %g", n, ferr / norm);
        free(dl), free(d), free(du), free(x), free(fl), free(fd), free(fu), free(fx), free(ref), free(fref);
        td_free(&t);
    }
    /* Pivots: exactly zero at unknown 1, NaN at unknown 0. */
    double dl[3] = {0, 1, 1}, d[3] = {1, 1, 4}, du[3] = {1, 1, 0}, x[3] = {1, 2, 3};
    CHECK(ns_thomas_one(3, 1, dl, d, du, x) == 1);
    double d2[3] = {NAN, 4, 4}, x2[3] = {1, 2, 3};
    CHECK(ns_thomas_one(3, 1, dl, d2, du, x2) == 0);
    CHECK(ns_thomas_one(0, 1, dl, d, du, x) == -1);
}

/* Every CPU method, layout, precision and stride on fixed sizes. */
static void test_fixed(void) {
    const struct { int32_t n; int64_t batch; } cases[] = {
        {1, 1}, {1, 17}, {2, 3}, {7, 1}, {33, 5}, {129, 9}, {64, 256},
    };
    const ns_tridiag_method methods[] = {NS_TRIDIAG_SEQUENTIAL, NS_TRIDIAG_OPENMP, NS_TRIDIAG_AUTO};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        const int32_t n = cases[c].n;
        const int64_t batch = cases[c].batch;
        td_set t;
        CHECK(td_make_fixed(&t, batch, n, 1000 + c));
        double *ref = malloc((size_t)t.total * sizeof *ref);
        float *fref = malloc((size_t)t.total * sizeof *fref);
        CHECK(td_lapack(&t, ref));
        CHECK(td_lapack_f32(&t, fref));
        double *fref_d = malloc((size_t)t.total * sizeof *fref_d);
        for (int64_t i = 0; i < t.total; ++i) fref_d[i] = fref[i];
        for (int layout = 0; layout < 2; ++layout)
            for (int f32 = 0; f32 < 2; ++f32)
                for (int extra = 0; extra <= 3; extra += 3) {
                    void *seq_x = NULL;
                    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; ++m) {
                        ns_tridiag_options o;
                        ns_tridiag_options_init(&o);
                        o.layout = (ns_tridiag_layout)layout;
                        o.precision = f32 ? NS_TRIDIAG_FLOAT32 : NS_TRIDIAG_FLOAT64;
                        o.method = methods[m];
                        o.threads = m == 1 ? 2 : 0;
                        o.stride = extra ? (layout ? batch : n) + extra : 0;
                        ns_tridiag_solver_t *solver = NULL;
                        ns_status st = ns_tridiag_solver_create(n, batch, &o, &solver);
                        CHECK_OK(st);
                        if (st != NS_OK) continue;
                        if (methods[m] == NS_TRIDIAG_AUTO)
                            CHECK(ns_tridiag_solver_backend(solver) == NS_BACKEND_CPU ||
                                  ns_tridiag_solver_backend(solver) == NS_BACKEND_CUDA);
                        const int64_t len = ns_tridiag_solver_length(solver);
                        const td_place p = {o.layout, o.stride ? o.stride : (layout ? batch : n), NULL};
                        const size_t es = f32 ? sizeof(float) : sizeof(double);
                        double err;
                        int64_t touched;
                        void *x = td_solve_host(&t, solver, &p, f32, f32 ? fref_d : ref, &err, &touched);
                        const double tol = f32 ? 2e-5 : 1e-12;
                        CHECK_MSG(err <= tol, "n %d batch %lld layout %d f32 %d stride+%d %s: %g vs LAPACK", n,
                                  (long long)batch, layout, f32, extra, ns_tridiag_method_name(methods[m]), err);
                        /* Entries outside the systems are never written. */
                        CHECK(touched == t.total);
                        /* Sequential and OpenMP run the same arithmetic per system: bit-identical. */
                        if (m == 0) {
                            seq_x = malloc((size_t)len * es);
                            memcpy(seq_x, x, (size_t)len * es);
                        } else if (seq_x && ns_tridiag_solver_method(solver) != NS_TRIDIAG_AUTO &&
                                   ns_tridiag_solver_backend(solver) == NS_BACKEND_CPU) {
                            CHECK(memcmp(seq_x, x, (size_t)len * es) == 0);
                        }
                        ns_solve_timing tm;
                        ns_tridiag_solver_timing(solver, &tm);
                        if (ns_tridiag_solver_backend(solver) == NS_BACKEND_CPU) {
                            CHECK(tm.kernel_ms >= 0.0 && tm.upload_ms == -1.0);
                            CHECK(ns_tridiag_solver_device_bytes(solver) == 0);
                        }
                        free(x);
                        ns_tridiag_solver_destroy(solver);
                    }
                    free(seq_x);
                }
        free(ref), free(fref), free(fref_d);
        td_free(&t);
    }
}

/* Variable sizes: Flat packed, Flat with gaps, Interleaved padded. */
static void test_variable(void) {
    const int64_t batch = 23;
    int32_t sizes[23];
    ns_rng rng;
    ns_rng_seed(&rng, 5, 5);
    for (int64_t s = 0; s < batch; ++s) sizes[s] = 1 + (int32_t)ns_rng_below(&rng, 40);
    sizes[3] = 1;
    sizes[4] = 2;
    td_set t;
    CHECK(td_make(&t, batch, sizes, 77));
    double *ref = malloc((size_t)t.total * sizeof *ref);
    CHECK(td_lapack(&t, ref));
    int64_t offsets[24];
    offsets[0] = 5;
    for (int64_t s = 0; s < batch; ++s) offsets[s + 1] = offsets[s] + sizes[s] + (s % 3);
    for (int shape = 0; shape < 3; ++shape)
        for (int m = 0; m < 2; ++m) {
            ns_tridiag_options o;
            ns_tridiag_options_init(&o);
            o.method = m ? NS_TRIDIAG_OPENMP : NS_TRIDIAG_SEQUENTIAL;
            o.layout = shape == 2 ? NS_TRIDIAG_INTERLEAVED : NS_TRIDIAG_FLAT;
            o.stride = shape == 2 ? batch + 4 : 0;
            const int64_t *off = shape == 1 ? offsets : NULL;
            ns_tridiag_solver_t *solver = NULL;
            ns_status st = ns_tridiag_solver_create_variable(batch, sizes, off, &o, &solver);
            CHECK_OK(st);
            if (st != NS_OK) continue;
            const int64_t len = ns_tridiag_solver_length(solver);
            int64_t packed[24];
            packed[0] = 0;
            for (int64_t s = 0; s < batch; ++s) packed[s + 1] = packed[s] + sizes[s];
            const td_place p = {o.layout, o.stride, shape == 1 ? offsets : shape == 0 ? packed : NULL};
            CHECK(len == (shape == 0 ? t.total : shape == 1 ? offsets[batch] : 0) || shape == 2);
            double err;
            int64_t touched;
            void *x = td_solve_host(&t, solver, &p, 0, ref, &err, &touched);
            CHECK_MSG(err <= 1e-12, "variable shape %d method %d: %g vs LAPACK", shape, m, err);
            /* nothing written in the gaps and padding */
            CHECK_MSG(touched == t.total, "variable shape %d method %d: %lld entries outside the systems written",
                      shape, m, (long long)(touched - t.total));
            free(x);
            ns_tridiag_solver_destroy(solver);
        }
    free(ref);
    td_free(&t);
}

/* The benchmark entry point on the CPU restores x before every run. */
static void test_benchmark(void) {
    const int32_t n = 50;
    const int64_t batch = 20;
    td_set t;
    CHECK(td_make_fixed(&t, batch, n, 9));
    double *ref = malloc((size_t)t.total * sizeof *ref);
    CHECK(td_lapack(&t, ref));
    ns_tridiag_options o;
    ns_tridiag_options_init(&o);
    o.method = NS_TRIDIAG_OPENMP;
    ns_tridiag_solver_t *solver = NULL;
    CHECK_OK(ns_tridiag_solver_create(n, batch, &o, &solver));
    double ms[5] = {-1, -1, -1, -1, -1};
    const td_place p = {NS_TRIDIAG_FLAT, n, NULL};
    double *x = malloc((size_t)t.total * 8);
    memcpy(x, t.r, (size_t)t.total * 8);
    CHECK_OK(ns_tridiag_solver_benchmark(solver, t.a, t.b, t.c, x, 5, ms));
    for (int i = 0; i < 5; ++i) CHECK(ms[i] >= 0.0);
    CHECK(td_max_error(&t, &p, 0, x, ref) <= 1e-12);
    CHECK(ns_tridiag_solver_benchmark(solver, t.a, t.b, t.c, x, 0, ms) == NS_ERR_INVALID_ARGUMENT);
    CHECK(ns_tridiag_solver_solve_device(solver, t.a, t.b, t.c, x, NULL) == NS_ERR_UNSUPPORTED);
    CHECK_OK(ns_tridiag_solver_wait(solver)); /* nothing queued on the CPU */
    ns_tridiag_solver_destroy(solver);
    free(x), free(ref);
    td_free(&t);
}

static void expect_singular(ns_tridiag_method method, const double *dl, const double *d, const double *du,
                            const double *rhs, int32_t n, int64_t batch, const char *system,
                            const char *unknown) {
    ns_tridiag_options o;
    ns_tridiag_options_init(&o);
    o.method = method;
    ns_tridiag_solver_t *solver = NULL;
    CHECK_OK(ns_tridiag_solver_create(n, batch, &o, &solver));
    double *x = malloc((size_t)n * (size_t)batch * sizeof *x);
    memcpy(x, rhs, (size_t)n * (size_t)batch * sizeof *x);
    ns_status st = ns_tridiag_solver_solve(solver, dl, d, du, x);
    CHECK_MSG(st == NS_ERR_SINGULAR, "%s: status %s", ns_tridiag_method_name(method), ns_status_string(st));
    CHECK_MSG(contains(ns_last_error(), system) && contains(ns_last_error(), unknown), "%s: detail '%s'",
              ns_tridiag_method_name(method), ns_last_error());
    free(x);
    ns_tridiag_solver_destroy(solver);
}

static void test_bad_input(void) {
    ns_tridiag_solver_t *solver = (ns_tridiag_solver_t *)&solver; /* must be reset to NULL */
    ns_tridiag_options o;
    ns_tridiag_options_init(&o);
    CHECK(ns_tridiag_solver_create(0, 5, &o, &solver) == NS_ERR_SIZE && solver == NULL);
    CHECK(contains(ns_last_error(), "n = 0"));
    CHECK(ns_tridiag_solver_create(-3, 5, &o, &solver) == NS_ERR_SIZE);
    CHECK(ns_tridiag_solver_create(5, 0, &o, &solver) == NS_ERR_EMPTY);
    CHECK(ns_tridiag_solver_create(5, 1, &o, NULL) == NS_ERR_INVALID_ARGUMENT);
    o.stride = 4;
    CHECK(ns_tridiag_solver_create(5, 3, &o, &solver) == NS_ERR_SIZE); /* Flat stride < n */
    o.layout = NS_TRIDIAG_INTERLEAVED;
    o.stride = 2;
    CHECK(ns_tridiag_solver_create(5, 3, &o, &solver) == NS_ERR_SIZE); /* Interleaved stride < batch */
    o.stride = -1;
    CHECK(ns_tridiag_solver_create(5, 3, &o, &solver) == NS_ERR_SIZE);
    o.stride = INT64_MAX / 2;
    CHECK(ns_tridiag_solver_create(5, 3, &o, &solver) == NS_ERR_SIZE); /* overflow */
    ns_tridiag_options_init(&o);
    o.pivot_tolerance = -1.0;
    CHECK(ns_tridiag_solver_create(5, 3, &o, &solver) == NS_ERR_INVALID_ARGUMENT);
    o.pivot_tolerance = NAN;
    CHECK(ns_tridiag_solver_create(5, 3, &o, &solver) == NS_ERR_INVALID_ARGUMENT);
    ns_tridiag_options_init(&o);
    o.layout = (ns_tridiag_layout)7;
    CHECK(ns_tridiag_solver_create(5, 3, &o, &solver) == NS_ERR_INVALID_ARGUMENT);
    ns_tridiag_options_init(&o);
    o.method = (ns_tridiag_method)99;
    CHECK(ns_tridiag_solver_create(5, 3, &o, &solver) == NS_ERR_INVALID_ARGUMENT);
    ns_tridiag_options_init(&o);
    o.precision = (ns_tridiag_precision)3;
    CHECK(ns_tridiag_solver_create(5, 3, &o, &solver) == NS_ERR_INVALID_ARGUMENT);

    /* Variable sizes. */
    int32_t sizes[3] = {4, 0, 2};
    int64_t offsets[4] = {0, 4, 4, 5};
    ns_tridiag_options_init(&o);
    CHECK(ns_tridiag_solver_create_variable(3, NULL, NULL, &o, &solver) == NS_ERR_INVALID_ARGUMENT);
    CHECK(ns_tridiag_solver_create_variable(3, sizes, NULL, &o, &solver) == NS_ERR_SIZE);
    CHECK(contains(ns_last_error(), "system 1"));
    sizes[1] = 1;
    CHECK(ns_tridiag_solver_create_variable(3, sizes, offsets, &o, &solver) == NS_ERR_SIZE); /* 2 at 4..5 */
    CHECK(ns_tridiag_solver_create_variable(0, sizes, NULL, &o, &solver) == NS_ERR_EMPTY);
    o.layout = NS_TRIDIAG_INTERLEAVED;
    offsets[3] = 8;
    CHECK(ns_tridiag_solver_create_variable(3, sizes, offsets, &o, &solver) == NS_ERR_INVALID_ARGUMENT);
    o.method = NS_TRIDIAG_WARP;
    CHECK(ns_tridiag_solver_create_variable(3, sizes, NULL, &o, &solver) == NS_ERR_UNSUPPORTED);

    /* NULL arrays and a precision mismatch. */
    ns_tridiag_options_init(&o);
    o.method = NS_TRIDIAG_SEQUENTIAL;
    CHECK_OK(ns_tridiag_solver_create(3, 2, &o, &solver));
    double v[6] = {1, 1, 1, 1, 1, 1};
    float f[6] = {1, 1, 1, 1, 1, 1};
    CHECK(ns_tridiag_solver_solve(solver, NULL, v, v, v) == NS_ERR_INVALID_ARGUMENT);
    CHECK(ns_tridiag_solver_solve(solver, v, v, v, NULL) == NS_ERR_INVALID_ARGUMENT);
    CHECK(ns_tridiag_solver_solve(NULL, v, v, v, v) == NS_ERR_INVALID_ARGUMENT);
    CHECK(ns_tridiag_solver_solve_f32(solver, f, f, f, f) == NS_ERR_INVALID_ARGUMENT);
    CHECK(contains(ns_last_error(), "float64"));
    ns_tridiag_solver_destroy(solver);
    ns_tridiag_solver_destroy(NULL);

    /* Zero pivot at unknown 1 of system 3 (rows 0-1 of that system are
     * [1 1; 1 1]); and a second failing system 5: the lowest is named. */
    const int32_t n = 4;
    const int64_t batch = 6;
    double dl[24], d[24], du[24], rhs[24];
    for (int i = 0; i < 24; ++i) dl[i] = -1, d[i] = 4, du[i] = -1, rhs[i] = 1;
    d[3 * n + 0] = 1, du[3 * n + 0] = 1, dl[3 * n + 1] = 1, d[3 * n + 1] = 1;
    d[5 * n + 2] = 0, dl[5 * n + 2] = 0, du[5 * n + 2] = 0;
    expect_singular(NS_TRIDIAG_SEQUENTIAL, dl, d, du, rhs, n, batch, "system 3 ", "unknown 1:");
    expect_singular(NS_TRIDIAG_OPENMP, dl, d, du, rhs, n, batch, "system 3 ", "unknown 1:");
    /* Near zero: 1e-20 against off-diagonals of 1. */
    for (int i = 0; i < 24; ++i) dl[i] = -1, d[i] = 4, du[i] = -1;
    d[2 * n + 0] = 1e-20;
    expect_singular(NS_TRIDIAG_SEQUENTIAL, dl, d, du, rhs, n, batch, "system 2 ", "unknown 0:");
    /* NaN on the diagonal: a NaN pivot. */
    d[2 * n + 0] = 4;
    d[1 * n + 2] = NAN;
    expect_singular(NS_TRIDIAG_OPENMP, dl, d, du, rhs, n, batch, "system 1 ", "unknown 2:");
    /* NaN in the right-hand side: caught by check_finite. */
    d[1 * n + 2] = 4;
    rhs[4 * n + 3] = NAN;
    ns_tridiag_options_init(&o);
    o.check_finite = 1;
    double x[24];
    memcpy(x, rhs, sizeof x);
    CHECK(ns_tridiag_solve(n, batch, &o, dl, d, du, x) == NS_ERR_NOT_FINITE);
    CHECK(contains(ns_last_error(), "system 4") && contains(ns_last_error(), "unknown 3"));
    /* dl[0] and du[n-1] are outside the matrix: NaN there is fine. */
    rhs[4 * n + 3] = 1;
    dl[0] = NAN, du[n - 1] = NAN;
    memcpy(x, rhs, sizeof x);
    CHECK_OK(ns_tridiag_solve(n, batch, &o, dl, d, du, x));

    /* GPU methods without a GPU (or without CUDA). */
    int gpus = 0;
    ns_status dc = ns_cuda_device_count(&gpus);
    ns_tridiag_options_init(&o);
    o.method = NS_TRIDIAG_THOMAS_BATCH;
    ns_status st = ns_tridiag_solver_create(8, 8, &o, &solver);
    if (dc == NS_ERR_UNSUPPORTED) CHECK(st == NS_ERR_UNSUPPORTED);
    else if (gpus == 0) CHECK(st == NS_ERR_NO_DEVICE);
    else {
        CHECK_OK(st);
        ns_tridiag_solver_destroy(solver);
    }
    o.method = NS_TRIDIAG_CUSPARSE_STRIDED;
    st = ns_tridiag_solver_create(2, 8, &o, &solver);
    CHECK(st == NS_ERR_UNSUPPORTED || st == NS_ERR_NO_DEVICE);
}

static void test_names(void) {
    for (int m = 0; m < NS_TRIDIAG_METHOD_COUNT; ++m) {
        ns_tridiag_method back = NS_TRIDIAG_AUTO;
        CHECK_OK(ns_tridiag_method_from_name(ns_tridiag_method_name((ns_tridiag_method)m), &back));
        CHECK(back == (ns_tridiag_method)m);
    }
    ns_tridiag_method m;
    CHECK(ns_tridiag_method_from_name("nope", &m) == NS_ERR_INVALID_ARGUMENT);
    CHECK(ns_tridiag_method_layout(NS_TRIDIAG_THOMAS_BATCH) == NS_TRIDIAG_INTERLEAVED);
    CHECK(ns_tridiag_method_layout(NS_TRIDIAG_CUSPARSE_STRIDED) == NS_TRIDIAG_FLAT);
    CHECK(ns_tridiag_method_backend(NS_TRIDIAG_OPENMP) == NS_BACKEND_CPU);
    /* The documented auto rule (docs/tridiag.md). */
    CHECK(ns_tridiag_auto_method(64, 256000, NS_TRIDIAG_FLOAT64, 0, 0) == NS_TRIDIAG_OPENMP);
    CHECK(ns_tridiag_auto_method(8, 100, NS_TRIDIAG_FLOAT64, 0, 1) == NS_TRIDIAG_SEQUENTIAL);
    CHECK(ns_tridiag_auto_method(16, 25600, NS_TRIDIAG_FLOAT64, 0, 1) == NS_TRIDIAG_THOMAS_BATCH);
    CHECK(ns_tridiag_auto_method(512, 2560, NS_TRIDIAG_FLOAT64, 0, 1) == NS_TRIDIAG_WARP);
    CHECK(ns_tridiag_auto_method(8192, 20, NS_TRIDIAG_FLOAT32, 0, 1) == NS_TRIDIAG_BLOCK);
    CHECK(ns_tridiag_auto_method(20000, 20, NS_TRIDIAG_FLOAT32, 0, 1) == NS_TRIDIAG_THOMAS_BATCH);
    CHECK(ns_tridiag_auto_method(512, 2560, NS_TRIDIAG_FLOAT64, 1, 1) == NS_TRIDIAG_VBATCH_CP);
}

/* The defaults of ns_tridiag_options_init, and a device below
 * NS_DEVICE_CURRENT refused (on any build, before a GPU is looked for). */
static void test_option_defaults(void) {
    ns_tridiag_options o;
    memset(&o, 0x5a, sizeof o);
    ns_tridiag_options_init(&o);
    CHECK(o.layout == NS_TRIDIAG_FLAT);
    CHECK(o.precision == NS_TRIDIAG_FLOAT64);
    CHECK(o.method == NS_TRIDIAG_AUTO);
    CHECK(o.stride == 0 && o.threads == 0 && o.pivot_tolerance == 0.0 && o.check_finite == 0);
    CHECK(o.device == NS_DEVICE_CURRENT);
    CHECK(NS_DEVICE_CURRENT == -1);
    ns_tridiag_solver_t *solver = NULL;
    o.device = -2;
    o.method = NS_TRIDIAG_SEQUENTIAL;
    CHECK(ns_tridiag_solver_create(8, 2, &o, &solver) == NS_ERR_INVALID_ARGUMENT && solver == NULL);
    CHECK(strstr(ns_last_error(), "device = -2") != NULL);
    /* A CPU method ignores the device: any ordinal is accepted and unused. */
    o.device = 5;
    CHECK_OK(ns_tridiag_solver_create(8, 2, &o, &solver));
    ns_tridiag_solver_destroy(solver);
}

int main(void) {
    test_option_defaults();
    test_thomas_one();
    test_fixed();
    test_variable();
    test_benchmark();
    test_bad_input();
    test_names();
    return check_summary("test_tridiag");
}
