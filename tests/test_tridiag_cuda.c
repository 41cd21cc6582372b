/* Batched tridiagonal solvers on the GPU: every CUDA method and both
 * cuSPARSE wrappers against the CPU solve (and LAPACK), in both layouts and
 * precisions, with strides, odd sizes, n = 1 and 2, batch 1, variable sizes;
 * the device-pointer solve, timings, memory reports and pivot errors.
 * Skips (exit 77) without a GPU. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef NS_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "test_tridiag_common.h"

static const ns_tridiag_method gpu_methods[] = {
    NS_TRIDIAG_THOMAS_BATCH, NS_TRIDIAG_VBATCH_CP,        NS_TRIDIAG_VBATCH_NCP,
    NS_TRIDIAG_WARP,         NS_TRIDIAG_BLOCK,            NS_TRIDIAG_CUSPARSE_STRIDED,
    NS_TRIDIAG_CUSPARSE_INTERLEAVED,
};
#define N_GPU_METHODS (int)(sizeof gpu_methods / sizeof gpu_methods[0])

static int supports(ns_tridiag_method m, int32_t n) {
    if (m == NS_TRIDIAG_WARP) return n <= 512;
    if (m == NS_TRIDIAG_BLOCK) return n <= 8192;
    if (m == NS_TRIDIAG_CUSPARSE_STRIDED || m == NS_TRIDIAG_CUSPARSE_INTERLEAVED) return n >= 3;
    return 1;
}

/* Solve `t` with one method/layout/precision/stride on host arrays and
 * compare with the reference (LAPACK for double, CPU float Thomas for float). */
static void run_case(const td_set *t, int32_t n, ns_tridiag_method m, int layout, int f32, int extra,
                     const double *ref, const double *ref32) {
    ns_tridiag_options o;
    ns_tridiag_options_init(&o);
    o.method = m;
    o.layout = (ns_tridiag_layout)layout;
    o.precision = f32 ? NS_TRIDIAG_FLOAT32 : NS_TRIDIAG_FLOAT64;
    o.stride = extra ? (layout ? t->batch : n) + extra : 0;
    ns_tridiag_solver_t *solver = NULL;
    ns_status st = ns_tridiag_solver_create(n, t->batch, &o, &solver);
    CHECK_OK(st);
    if (st != NS_OK) return;
    const int64_t len = ns_tridiag_solver_length(solver);
    const size_t es = f32 ? sizeof(float) : sizeof(double);
    const td_place p = {o.layout, o.stride ? o.stride : (layout ? t->batch : n), NULL};
    void *dl = malloc((size_t)len * es), *d = malloc((size_t)len * es), *du = malloc((size_t)len * es),
         *x = malloc((size_t)len * es);
    td_scatter(t, &p, len, f32, NAN, dl, d, du, x);
    st = f32 ? ns_tridiag_solver_solve_f32(solver, dl, d, du, x) : ns_tridiag_solver_solve(solver, dl, d, du, x);
    CHECK_OK(st);
    const double err = td_max_error(t, &p, f32, x, f32 ? ref32 : ref);
    /* Double: every method within 1e-11 of LAPACK on these well-conditioned
     * systems. Float: within 1e-4 of the CPU's float Thomas. */
    CHECK_MSG(err <= (f32 ? 1e-4 : 1e-11), "%s n %d batch %lld layout %d f32 %d stride+%d: error %g",
              ns_tridiag_method_name(m), n, (long long)t->batch, layout, f32, extra, err);
    int64_t touched = 0;
    for (int64_t i = 0; i < len; ++i)
        if (!isnan(f32 ? (double)((float *)x)[i] : ((double *)x)[i])) ++touched;
    CHECK_MSG(touched == t->total, "%s: %lld entries outside the systems written",
              ns_tridiag_method_name(m), (long long)(touched - t->total));
    ns_solve_timing tm;
    ns_tridiag_solver_timing(solver, &tm);
    CHECK(tm.kernel_ms >= 0.0 && tm.upload_ms >= 0.0 && tm.download_ms >= 0.0 && tm.total_ms >= 0.0);
    const size_t arrays = 4 * (size_t)n * (size_t)t->batch * es;
    CHECK(ns_tridiag_solver_device_bytes(solver) >= arrays);
    if (m != NS_TRIDIAG_CUSPARSE_STRIDED && m != NS_TRIDIAG_CUSPARSE_INTERLEAVED)
        CHECK(ns_tridiag_solver_workspace_bytes(solver) == 0);
    free(dl), free(d), free(du), free(x);
    ns_tridiag_solver_destroy(solver);
}

static void test_fixed(void) {
    const struct { int32_t n; int64_t batch; } cases[] = {
        {1, 1}, {2, 7}, {3, 1}, {5, 33}, {31, 64}, {32, 100}, {33, 5}, {64, 300},
        {100, 37}, {512, 40}, {513, 3}, {1000, 7}, {4097, 3}, {8192, 2},
        /* Many systems: the warp method packs several systems per warp
         * (2-16 lanes each), with padding rows and a partial last warp. */
        {20, 40001}, {100, 30001}, {256, 25601},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        const int32_t n = cases[c].n;
        const int64_t batch = cases[c].batch;
        td_set t;
        CHECK(td_make_fixed(&t, batch, n, 500 + c));
        double *ref = malloc((size_t)t.total * sizeof *ref), *ref32 = malloc((size_t)t.total * sizeof *ref32);
        CHECK(td_lapack(&t, ref));
        float *f = malloc((size_t)t.total * sizeof *f);
        CHECK(td_lapack_f32(&t, f));
        for (int64_t i = 0; i < t.total; ++i) ref32[i] = f[i];
        for (int mi = 0; mi < N_GPU_METHODS; ++mi) {
            if (!supports(gpu_methods[mi], n)) continue;
            for (int layout = 0; layout < 2; ++layout)
                for (int f32 = 0; f32 < 2; ++f32)
                    run_case(&t, n, gpu_methods[mi], layout, f32, (layout + f32 + (int)c) % 2 ? 3 : 0, ref, ref32);
        }
        free(ref), free(ref32), free(f);
        td_free(&t);
    }
}

/* VBatch CP and NCP on variable sizes (1..600), Flat packed, Flat with gaps
 * and padded Interleaved, against LAPACK. */
static void test_variable(void) {
    const int64_t batch = 300;
    int32_t *sizes = malloc((size_t)batch * sizeof *sizes);
    ns_rng rng;
    ns_rng_seed(&rng, 11, 3);
    for (int64_t s = 0; s < batch; ++s) sizes[s] = 1 + (int32_t)ns_rng_below(&rng, 600);
    sizes[0] = 1, sizes[1] = 2, sizes[2] = 600;
    td_set t;
    CHECK(td_make(&t, batch, sizes, 21));
    double *ref = malloc((size_t)t.total * sizeof *ref);
    CHECK(td_lapack(&t, ref));
    int64_t *offsets = malloc((size_t)(batch + 1) * sizeof *offsets), *packed = malloc((size_t)(batch + 1) * sizeof *packed);
    offsets[0] = 3, packed[0] = 0;
    for (int64_t s = 0; s < batch; ++s) {
        offsets[s + 1] = offsets[s] + sizes[s] + (s % 4);
        packed[s + 1] = packed[s] + sizes[s];
    }
    const ns_tridiag_method methods[] = {NS_TRIDIAG_VBATCH_CP, NS_TRIDIAG_VBATCH_NCP, NS_TRIDIAG_AUTO};
    for (int mi = 0; mi < 3; ++mi)
        for (int shape = 0; shape < 3; ++shape)
            for (int f32 = 0; f32 < 2; ++f32) {
                ns_tridiag_options o;
                ns_tridiag_options_init(&o);
                o.method = methods[mi];
                o.precision = f32 ? NS_TRIDIAG_FLOAT32 : NS_TRIDIAG_FLOAT64;
                o.layout = shape == 2 ? NS_TRIDIAG_INTERLEAVED : NS_TRIDIAG_FLAT;
                o.stride = shape == 2 ? batch + 5 : 0;
                ns_tridiag_solver_t *solver = NULL;
                ns_status st = ns_tridiag_solver_create_variable(batch, sizes, shape == 1 ? offsets : NULL, &o, &solver);
                CHECK_OK(st);
                if (st != NS_OK) continue;
                const int64_t len = ns_tridiag_solver_length(solver);
                const size_t es = f32 ? 4 : 8;
                const td_place p = {o.layout, o.stride, shape == 1 ? offsets : shape == 0 ? packed : NULL};
                void *dl = malloc((size_t)len * es), *d = malloc((size_t)len * es), *du = malloc((size_t)len * es),
                     *x = malloc((size_t)len * es);
                td_scatter(&t, &p, len, f32, NAN, dl, d, du, x);
                st = f32 ? ns_tridiag_solver_solve_f32(solver, dl, d, du, x) : ns_tridiag_solver_solve(solver, dl, d, du, x);
                CHECK_OK(st);
                const double err = td_max_error(&t, &p, f32, x, ref);
                CHECK_MSG(err <= (f32 ? 1e-4 : 1e-11), "variable %s shape %d f32 %d: error %g",
                          ns_tridiag_method_name(ns_tridiag_solver_method(solver)), shape, f32, err);
                free(dl), free(d), free(du), free(x);
                ns_tridiag_solver_destroy(solver);
            }
    free(offsets), free(packed), free(ref), free(sizes);
    td_free(&t);
}

/* Device-pointer solve in the native layout and in the other one, and the
 * benchmark entry point; all against LAPACK. */
static void test_device_and_benchmark(void) {
#ifdef NS_HAVE_CUDA
    const int32_t n = 77;
    const int64_t batch = 129;
    td_set t;
    CHECK(td_make_fixed(&t, batch, n, 31));
    double *ref = malloc((size_t)t.total * sizeof *ref);
    CHECK(td_lapack(&t, ref));
    const size_t bytes = (size_t)t.total * sizeof(double);
    for (int mi = 0; mi < N_GPU_METHODS; ++mi)
        for (int layout = 0; layout < 2; ++layout) {
            ns_tridiag_options o;
            ns_tridiag_options_init(&o);
            o.method = gpu_methods[mi];
            o.layout = (ns_tridiag_layout)layout;
            ns_tridiag_solver_t *solver = NULL;
            CHECK_OK(ns_tridiag_solver_create(n, batch, &o, &solver));
            if (!solver) continue;
            const td_place p = {o.layout, layout ? batch : n, NULL};
            double *h[4];
            void *dv[4] = {NULL, NULL, NULL, NULL};
            for (int a = 0; a < 4; ++a) {
                h[a] = malloc(bytes);
                CHECK(cudaMalloc(&dv[a], bytes) == cudaSuccess);
            }
            td_scatter(&t, &p, t.total, 0, NAN, h[0], h[1], h[2], h[3]);
            for (int a = 0; a < 4; ++a) CHECK(cudaMemcpy(dv[a], h[a], bytes, cudaMemcpyHostToDevice) == cudaSuccess);
            CHECK_OK(ns_tridiag_solver_solve_device(solver, dv[0], dv[1], dv[2], dv[3]));
            double *x = malloc(bytes);
            CHECK(cudaMemcpy(x, dv[3], bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
            double err = td_max_error(&t, &p, 0, x, ref);
            CHECK_MSG(err <= 1e-11, "device solve %s layout %d: %g", ns_tridiag_method_name(gpu_methods[mi]), layout, err);
            /* Benchmark: 3 timed runs; the inputs are restored before each. */
            double ms[3] = {-1, -1, -1};
            memcpy(x, h[3], bytes);
            CHECK_OK(ns_tridiag_solver_benchmark(solver, h[0], h[1], h[2], x, 3, ms));
            CHECK(ms[0] > 0.0 && ms[1] > 0.0 && ms[2] > 0.0);
            err = td_max_error(&t, &p, 0, x, ref);
            CHECK_MSG(err <= 1e-11, "benchmark %s layout %d: %g", ns_tridiag_method_name(gpu_methods[mi]), layout, err);
            for (int a = 0; a < 4; ++a) {
                cudaFree(dv[a]);
                free(h[a]);
            }
            free(x);
            ns_tridiag_solver_destroy(solver);
        }
    free(ref);
    td_free(&t);
#endif
}

/* Accuracy of the refined on-chip methods: max over systems of
 * |x - x_ld|_inf / |x_ld|_inf against Thomas in long double must stay within
 * 4 units of roundoff (without the refinement step the PCR levels leave
 * ~1e-15, which fails), and no worse than the CPU's double Thomas + 2^-52. */
static void test_onchip_accuracy(void) {
#ifdef NS_HAVE_CUDA
    const struct { ns_tridiag_method m; int32_t n; int64_t batch; } cases[] = {
        {NS_TRIDIAG_WARP, 64, 3000}, {NS_TRIDIAG_WARP, 64, 40000}, {NS_TRIDIAG_WARP, 500, 400},
        {NS_TRIDIAG_BLOCK, 1000, 60}, {NS_TRIDIAG_BLOCK, 8192, 8},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        const int32_t n = cases[c].n;
        const int64_t batch = cases[c].batch;
        td_set t;
        CHECK(td_make_fixed(&t, batch, n, 900 + c));
        const size_t len = (size_t)t.total;
        double *dl = malloc(len * sizeof *dl), *d = malloc(len * sizeof *d), *du = malloc(len * sizeof *du),
               *x = malloc(len * sizeof *x), *xc = malloc(len * sizeof *xc);
        long double *ref = malloc(len * sizeof *ref), *cp = malloc((size_t)n * sizeof *cp);
        memcpy(dl, t.a, len * sizeof *dl), memcpy(d, t.b, len * sizeof *d), memcpy(du, t.c, len * sizeof *du);
        memcpy(x, t.r, len * sizeof *x), memcpy(xc, t.r, len * sizeof *xc);
        for (int64_t s = 0; s < batch; ++s) { /* Thomas in long double */
            const int64_t o = t.start[s];
            long double c0 = 0.0L, y = 0.0L;
            for (int32_t k = 0; k < n; ++k) {
                const long double a = k > 0 ? (long double)t.a[o + k] : 0.0L, u = k + 1 < n ? (long double)t.c[o + k] : 0.0L;
                const long double p = (long double)t.b[o + k] - a * c0;
                c0 = u / p;
                y = ((long double)t.r[o + k] - a * y) / p;
                cp[k] = c0;
                ref[o + k] = y;
            }
            for (int32_t k = n - 2; k >= 0; --k) ref[o + k] -= cp[k] * ref[o + k + 1];
        }
        ns_tridiag_options o;
        ns_tridiag_options_init(&o);
        o.method = cases[c].m;
        ns_tridiag_solver_t *solver = NULL;
        CHECK_OK(ns_tridiag_solver_create(n, batch, &o, &solver));
        CHECK_OK(ns_tridiag_solver_solve(solver, dl, d, du, x));
        ns_tridiag_solver_destroy(solver);
        o.method = NS_TRIDIAG_SEQUENTIAL;
        solver = NULL;
        CHECK_OK(ns_tridiag_solver_create(n, batch, &o, &solver));
        CHECK_OK(ns_tridiag_solver_solve(solver, dl, d, du, xc));
        ns_tridiag_solver_destroy(solver);
        double err = 0.0, err_cpu = 0.0;
        for (int64_t s = 0; s < batch; ++s) {
            long double e = 0.0L, ec = 0.0L, mag = 0.0L;
            for (int32_t k = 0; k < n; ++k) {
                const int64_t i = t.start[s] + k;
                if (fabsl(ref[i]) > mag) mag = fabsl(ref[i]);
                if (fabsl((long double)x[i] - ref[i]) > e) e = fabsl((long double)x[i] - ref[i]);
                if (fabsl((long double)xc[i] - ref[i]) > ec) ec = fabsl((long double)xc[i] - ref[i]);
            }
            if ((double)(e / mag) > err) err = (double)(e / mag);
            if ((double)(ec / mag) > err_cpu) err_cpu = (double)(ec / mag);
        }
        printf("accuracy %s n %d batch %lld: %.3g (CPU Thomas %.3g)\n", ns_tridiag_method_name(cases[c].m), n,
               (long long)batch, err, err_cpu);
        CHECK_MSG(err <= 4.0 * 0x1p-52 && err <= err_cpu + 2.0 * 0x1p-53, "%s n %d batch %lld: error %g (CPU %g)",
                  ns_tridiag_method_name(cases[c].m), n, (long long)batch, err, err_cpu);
        free(dl), free(d), free(du), free(x), free(xc), free(ref), free(cp);
        td_free(&t);
    }
#endif
}

/* A zero row in system 5 (unknown 7) of 40: every method reports system 5. */
static void test_singular(void) {
    const int32_t n = 50;
    const int64_t batch = 40;
    const size_t len = (size_t)n * (size_t)batch;
    double *dl = malloc(len * 8), *d = malloc(len * 8), *du = malloc(len * 8), *x = malloc(len * 8);
    for (int mi = 0; mi < N_GPU_METHODS; ++mi) {
        const ns_tridiag_method m = gpu_methods[mi];
        const int interleaved = ns_tridiag_method_layout(m) == NS_TRIDIAG_INTERLEAVED;
        for (size_t i = 0; i < len; ++i) dl[i] = -1, d[i] = 4, du[i] = -1, x[i] = 1;
        const size_t bad = interleaved ? 7 * (size_t)batch + 5 : 5 * (size_t)n + 7;
        dl[bad] = d[bad] = du[bad] = 0;
        ns_tridiag_options o;
        ns_tridiag_options_init(&o);
        o.method = m;
        o.layout = interleaved ? NS_TRIDIAG_INTERLEAVED : NS_TRIDIAG_FLAT;
        ns_tridiag_solver_t *solver = NULL;
        CHECK_OK(ns_tridiag_solver_create(n, batch, &o, &solver));
        ns_status st = ns_tridiag_solver_solve(solver, dl, d, du, x);
        const int named = strstr(ns_last_error(), "system 5 ") != NULL;
        if (m == NS_TRIDIAG_CUSPARSE_STRIDED || m == NS_TRIDIAG_CUSPARSE_INTERLEAVED) {
            /* cuSPARSE reports no pivots; the wrapper catches Inf/NaN results. */
            if (st != NS_ERR_SINGULAR || !named)
                printf("NOTE: %s on a singular system: %s (%s)\n", ns_tridiag_method_name(m),
                       ns_status_string(st), ns_last_error());
        } else {
            CHECK_MSG(st == NS_ERR_SINGULAR && named, "%s: %s: %s", ns_tridiag_method_name(m),
                      ns_status_string(st), ns_last_error());
            if (m == NS_TRIDIAG_THOMAS_BATCH || m == NS_TRIDIAG_VBATCH_CP || m == NS_TRIDIAG_VBATCH_NCP)
                CHECK_MSG(strstr(ns_last_error(), "unknown 7:") != NULL, "%s: %s", ns_tridiag_method_name(m),
                          ns_last_error());
        }
        ns_tridiag_solver_destroy(solver);
    }
    free(dl), free(d), free(du), free(x);
}

int main(void) {
    int gpus = 0;
    if (ns_cuda_device_count(&gpus) != NS_OK || gpus <= 0) CHECK_SKIP("no GPU (tridiagonal CUDA tests)");
    test_fixed();
    test_variable();
    test_device_and_benchmark();
    test_singular();
    test_onchip_accuracy();
    return check_summary("test_tridiag_cuda");
}
