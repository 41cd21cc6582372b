/* Batched tridiagonal solvers on the GPU: every CUDA method and both
 * cuSPARSE wrappers against the CPU solve (and LAPACK), in both layouts and
 * precisions, with strides, odd sizes, n = 1 and 2, batch 1, variable sizes;
 * the device call (every GPU method on the caller's stream against the
 * sequential solve, two threads at once, bad arguments, pivots reported by
 * wait), timings, memory reports and pivot errors.
 * Skips (exit 77) without a GPU. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef NS_HAVE_CUDA
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
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
    const size_t es = f32 ? sizeof(float) : sizeof(double);
    const td_place p = {o.layout, o.stride ? o.stride : (layout ? t->batch : n), NULL};
    double err;
    int64_t touched;
    void *x = td_solve_host(t, solver, &p, f32, f32 ? ref32 : ref, &err, &touched);
    /* Double: every method within 1e-11 of LAPACK on these well-conditioned
     * systems. Float: within 1e-4 of the CPU's float Thomas. */
    CHECK_MSG(err <= (f32 ? 1e-4 : 1e-11), "%s n %d batch %lld layout %d f32 %d stride+%d: error %g",
              ns_tridiag_method_name(m), n, (long long)t->batch, layout, f32, extra, err);
    CHECK_MSG(touched == t->total, "%s: %lld entries outside the systems written",
              ns_tridiag_method_name(m), (long long)(touched - t->total));
    ns_solve_timing tm;
    ns_tridiag_solver_timing(solver, &tm);
    CHECK(tm.kernel_ms >= 0.0 && tm.upload_ms >= 0.0 && tm.download_ms >= 0.0 && tm.total_ms >= 0.0);
    const size_t arrays = 4 * (size_t)n * (size_t)t->batch * es;
    CHECK(ns_tridiag_solver_device_bytes(solver) >= arrays);
    if (m != NS_TRIDIAG_CUSPARSE_STRIDED && m != NS_TRIDIAG_CUSPARSE_INTERLEAVED)
        CHECK(ns_tridiag_solver_workspace_bytes(solver) == 0);
    free(x);
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
                const td_place p = {o.layout, o.stride, shape == 1 ? offsets : shape == 0 ? packed : NULL};
                double err;
                int64_t touched;
                void *x = td_solve_host(&t, solver, &p, f32, ref, &err, &touched);
                CHECK_MSG(err <= (f32 ? 1e-4 : 1e-11), "variable %s shape %d f32 %d: error %g",
                          ns_tridiag_method_name(ns_tridiag_solver_method(solver)), shape, f32, err);
                free(x);
                ns_tridiag_solver_destroy(solver);
            }
    free(offsets), free(packed), free(ref), free(sizes);
    td_free(&t);
}

#ifdef NS_HAVE_CUDA
/* The sequential Thomas solve of the same arrays (the reference). */
static void thomas_reference(const td_set *t, const td_place *p, int64_t len, int f32, int32_t n,
                             const int32_t *sizes, double *ref) {
    ns_tridiag_options o;
    ns_tridiag_options_init(&o);
    o.method = NS_TRIDIAG_SEQUENTIAL;
    o.layout = p->layout;
    o.stride = p->offsets ? 0 : p->stride;
    ns_tridiag_solver_t *cpu = NULL;
    CHECK_OK(sizes ? ns_tridiag_solver_create_variable(t->batch, sizes, p->offsets, &o, &cpu)
                   : ns_tridiag_solver_create(n, t->batch, &o, &cpu));
    double *h[4];
    for (int a = 0; a < 4; ++a) h[a] = malloc((size_t)len * sizeof(double));
    td_scatter(t, p, len, 0, NAN, h[0], h[1], h[2], h[3]);
    CHECK_OK(ns_tridiag_solver_solve(cpu, h[0], h[1], h[2], h[3]));
    /* back to the packed order of td_set, as td_max_error compares */
    const int64_t step = p->layout == NS_TRIDIAG_INTERLEAVED ? p->stride : 1;
    for (int64_t s = 0; s < t->batch; ++s) {
        const int64_t base = p->layout == NS_TRIDIAG_INTERLEAVED ? s : p->offsets ? p->offsets[s] : s * p->stride;
        for (int32_t k = 0; k < t->size[s]; ++k) ref[t->start[s] + k] = h[3][base + (int64_t)k * step];
    }
    (void)f32;
    for (int a = 0; a < 4; ++a) free(h[a]);
    ns_tridiag_solver_destroy(cpu);
}

/* A host function on the stream that holds it until the test releases it
 * (or 5 s pass): a call that synchronised the stream or the device would
 * not return before the release. */
typedef struct gate {
    atomic_int open;
    atomic_int timed_out;
} gate;

static void CUDART_CB gate_wait(void *arg) {
    gate *g = arg;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (!atomic_load(&g->open)) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec) > 5.0) {
            atomic_store(&g->timed_out, 1);
            return;
        }
    }
}

/* One device call of `m` on caller arrays (layout, precision, stride extra,
 * variable sizes when sizes != NULL), on a stream of the test's own or the
 * legacy default stream, against the sequential Thomas solve. */
static void device_case(const td_set *t, int32_t n, const int32_t *sizes, ns_tridiag_method m, int layout, int f32,
                        int extra, int own_stream) {
    ns_tridiag_options o;
    ns_tridiag_options_init(&o);
    o.method = m;
    o.layout = (ns_tridiag_layout)layout;
    o.precision = f32 ? NS_TRIDIAG_FLOAT32 : NS_TRIDIAG_FLOAT64;
    o.stride = extra ? (layout ? t->batch : n) + extra : 0;
    if (sizes && !layout) o.stride = 0;
    ns_tridiag_solver_t *solver = NULL;
    ns_status st = sizes ? ns_tridiag_solver_create_variable(t->batch, sizes, NULL, &o, &solver)
                         : ns_tridiag_solver_create(n, t->batch, &o, &solver);
    CHECK_OK(st);
    if (st != NS_OK) return;
    const int64_t len = ns_tridiag_solver_length(solver);
    const size_t es = f32 ? sizeof(float) : sizeof(double), bytes = (size_t)len * es;
    int64_t *packed = NULL;
    if (sizes && !layout) {
        packed = malloc((size_t)(t->batch + 1) * sizeof *packed);
        packed[0] = 0;
        for (int64_t s = 0; s < t->batch; ++s) packed[s + 1] = packed[s] + sizes[s];
    }
    const td_place p = {o.layout, o.stride ? o.stride : (layout ? t->batch : n), packed};
    double *ref = malloc((size_t)t->total * sizeof *ref);
    thomas_reference(t, &p, len, f32, n, sizes, ref);
    void *h[4], *dv[4] = {NULL, NULL, NULL, NULL};
    for (int a = 0; a < 4; ++a) {
        h[a] = malloc(bytes);
        CHECK(cudaMalloc(&dv[a], bytes) == cudaSuccess);
    }
    td_scatter(t, &p, len, f32, NAN, h[0], h[1], h[2], h[3]);
    cudaStream_t q = NULL;
    if (own_stream) CHECK(cudaStreamCreateWithFlags(&q, cudaStreamNonBlocking) == cudaSuccess);
    for (int a = 0; a < 4; ++a) CHECK(cudaMemcpyAsync(dv[a], h[a], bytes, cudaMemcpyHostToDevice, q) == cudaSuccess);
    gate g;
    atomic_init(&g.open, 0);
    atomic_init(&g.timed_out, 0);
    CHECK(cudaLaunchHostFunc(q, gate_wait, &g) == cudaSuccess);
    int before = -1, after = -2;
    cudaGetDevice(&before);
    CHECK_OK(ns_tridiag_solver_solve_device(solver, dv[0], dv[1], dv[2], dv[3], q));
    cudaGetDevice(&after);
    atomic_store(&g.open, 1);
    CHECK_MSG(before == after, "the caller's device changed: %d -> %d", before, after);
    CHECK_OK(ns_tridiag_solver_wait(solver));
    CHECK_MSG(!atomic_load(&g.timed_out), "%s: solve_device did not return before its stream ran",
              ns_tridiag_method_name(m));
    CHECK(cudaMemcpyAsync(h[3], dv[3], bytes, cudaMemcpyDeviceToHost, q) == cudaSuccess);
    CHECK(cudaStreamSynchronize(q) == cudaSuccess);
    const double err = td_max_error(t, &p, f32, h[3], ref);
    CHECK_MSG(err <= (f32 ? 1e-4 : 1e-11), "device call %s n %d layout %d f32 %d stride+%d %s stream: error %g",
              ns_tridiag_method_name(m), n, layout, f32, extra, own_stream ? "own" : "NULL", err);
    int64_t touched = 0;
    for (int64_t i = 0; i < len; ++i)
        if (!isnan(f32 ? (double)((float *)h[3])[i] : ((double *)h[3])[i])) ++touched;
    CHECK_MSG(touched == t->total, "device call %s: %lld entries outside the systems written",
              ns_tridiag_method_name(m), (long long)(touched - t->total));
    CHECK_OK(ns_tridiag_solver_wait(solver)); /* nothing queued any more */
    for (int a = 0; a < 4; ++a) {
        cudaFree(dv[a]);
        free(h[a]);
    }
    if (q) cudaStreamDestroy(q);
    free(ref), free(packed);
    ns_tridiag_solver_destroy(solver);
}
#endif

/* The device call of every GPU method, in both layouts and precisions, with
 * and without strides, on the caller's stream and on the legacy default
 * stream, against the sequential Thomas solve; the benchmark entry point. */
static void test_device_calls(void) {
#ifdef NS_HAVE_CUDA
    const struct { int32_t n; int64_t batch; } cases[] = {{77, 129}, {3, 1}, {256, 2000}, {1000, 33}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        td_set t;
        CHECK(td_make_fixed(&t, cases[c].batch, cases[c].n, 70 + c));
        for (int mi = 0; mi < N_GPU_METHODS; ++mi) {
            if (!supports(gpu_methods[mi], cases[c].n)) continue;
            for (int layout = 0; layout < 2; ++layout)
                for (int f32 = 0; f32 < 2; ++f32)
                    device_case(&t, cases[c].n, NULL, gpu_methods[mi], layout, f32, (layout + f32 + (int)c) % 2 ? 3 : 0,
                                (layout + (int)c) % 2 == 0);
        }
        td_free(&t);
    }
    /* variable sizes: Flat packed (converted on the device) and padded Interleaved (in place) */
    const int64_t batch = 200;
    int32_t *sizes = malloc((size_t)batch * sizeof *sizes);
    for (int64_t s = 0; s < batch; ++s) sizes[s] = 1 + (int32_t)((s * 37) % 300);
    td_set t;
    CHECK(td_make(&t, batch, sizes, 77));
    const ns_tridiag_method vb[2] = {NS_TRIDIAG_VBATCH_CP, NS_TRIDIAG_VBATCH_NCP};
    for (int mi = 0; mi < 2; ++mi)
        for (int layout = 0; layout < 2; ++layout)
            for (int f32 = 0; f32 < 2; ++f32) device_case(&t, 300, sizes, vb[mi], layout, f32, layout ? 5 : 0, 1);
    td_free(&t);
    free(sizes);

    /* Benchmark: 3 timed runs; the inputs are restored before each. */
    const int32_t n = 77;
    CHECK(td_make_fixed(&t, 129, n, 31));
    double *ref = malloc((size_t)t.total * sizeof *ref);
    CHECK(td_lapack(&t, ref));
    const size_t bytes = (size_t)t.total * sizeof(double);
    for (int mi = 0; mi < N_GPU_METHODS; ++mi) {
        ns_tridiag_options o;
        ns_tridiag_options_init(&o);
        o.method = gpu_methods[mi];
        ns_tridiag_solver_t *solver = NULL;
        CHECK_OK(ns_tridiag_solver_create(n, t.batch, &o, &solver));
        if (!solver) continue;
        const td_place p = {o.layout, n, NULL};
        double *h[4];
        for (int a = 0; a < 4; ++a) h[a] = malloc(bytes);
        td_scatter(&t, &p, t.total, 0, NAN, h[0], h[1], h[2], h[3]);
        double ms[3] = {-1, -1, -1};
        CHECK_OK(ns_tridiag_solver_benchmark(solver, h[0], h[1], h[2], h[3], 3, ms));
        CHECK(ms[0] > 0.0 && ms[1] > 0.0 && ms[2] > 0.0);
        const double err = td_max_error(&t, &p, 0, h[3], ref);
        CHECK_MSG(err <= 1e-11, "benchmark %s: %g", ns_tridiag_method_name(gpu_methods[mi]), err);
        for (int a = 0; a < 4; ++a) free(h[a]);
        ns_tridiag_solver_destroy(solver);
    }
    free(ref);
    td_free(&t);
#endif
}

#ifdef NS_HAVE_CUDA
typedef struct job {
    ns_tridiag_method method;
    uint64_t seed;
    double err;
    int ok;
} job;

/* One thread: its own solver, stream and data; 20 device calls in a row
 * (each on fresh inputs), every result against the sequential solve. */
static void *thread_job(void *arg) {
    job *j = arg;
    const int32_t n = 200;
    const int64_t batch = 3000;
    j->ok = 0;
    j->err = INFINITY;
    td_set t;
    if (!td_make_fixed(&t, batch, n, j->seed)) return NULL;
    ns_tridiag_options o;
    ns_tridiag_options_init(&o);
    o.method = j->method;
    o.layout = ns_tridiag_method_layout(j->method);
    const td_place p = {o.layout, o.layout ? batch : n, NULL};
    const int64_t len = (int64_t)n * batch;
    const size_t bytes = (size_t)len * sizeof(double);
    ns_tridiag_solver_t *solver = NULL;
    if (ns_tridiag_solver_create(n, batch, &o, &solver) != NS_OK) return NULL;
    /* the reference, in packed order (sequential Thomas) */
    double *ref = malloc((size_t)t.total * sizeof *ref), *h[4], *x = malloc(bytes);
    for (int a = 0; a < 4; ++a) h[a] = malloc(bytes);
    ns_tridiag_options oc;
    ns_tridiag_options_init(&oc);
    oc.method = NS_TRIDIAG_SEQUENTIAL;
    oc.layout = o.layout;
    ns_tridiag_solver_t *cpu = NULL;
    td_scatter(&t, &p, len, 0, NAN, h[0], h[1], h[2], h[3]);
    memcpy(x, h[3], bytes);
    int ok = ns_tridiag_solver_create(n, batch, &oc, &cpu) == NS_OK &&
             ns_tridiag_solver_solve(cpu, h[0], h[1], h[2], x) == NS_OK;
    ns_tridiag_solver_destroy(cpu);
    for (int64_t s = 0; s < batch; ++s)
        for (int32_t k = 0; k < n; ++k)
            ref[t.start[s] + k] = x[o.layout ? (int64_t)k * batch + s : s * n + k];
    void *dv[4] = {NULL, NULL, NULL, NULL};
    cudaStream_t q = NULL;
    ok = ok && cudaStreamCreateWithFlags(&q, cudaStreamNonBlocking) == cudaSuccess;
    for (int a = 0; a < 4 && ok; ++a) ok = cudaMalloc(&dv[a], bytes) == cudaSuccess;
    double worst = 0.0;
    for (int r = 0; r < 20 && ok; ++r) {
        for (int a = 0; a < 4 && ok; ++a)
            ok = cudaMemcpyAsync(dv[a], h[a], bytes, cudaMemcpyHostToDevice, q) == cudaSuccess;
        ok = ok && ns_tridiag_solver_solve_device(solver, dv[0], dv[1], dv[2], dv[3], q) == NS_OK;
        ok = ok && ns_tridiag_solver_wait(solver) == NS_OK;
        ok = ok && cudaMemcpyAsync(x, dv[3], bytes, cudaMemcpyDeviceToHost, q) == cudaSuccess &&
             cudaStreamSynchronize(q) == cudaSuccess;
        if (ok) {
            const double e = td_max_error(&t, &p, 0, x, ref);
            if (e > worst) worst = e;
        }
    }
    for (int a = 0; a < 4; ++a) cudaFree(dv[a]), free(h[a]);
    if (q) cudaStreamDestroy(q);
    free(x), free(ref);
    ns_tridiag_solver_destroy(solver);
    td_free(&t);
    j->err = worst;
    j->ok = ok;
    return NULL;
}
#endif

/* Two threads with separate solvers on one GPU at once, for every GPU method
 * with n = 200 (pairs of the same method and of different methods). */
static void test_two_threads(void) {
#ifdef NS_HAVE_CUDA
    for (int mi = 0; mi < N_GPU_METHODS; ++mi) {
        job jobs[2] = {{gpu_methods[mi], 1000 + (uint64_t)mi, 0, 0},
                       {gpu_methods[(mi + 1 + (mi % 2)) % N_GPU_METHODS], 2000 + (uint64_t)mi, 0, 0}};
        pthread_t th[2];
        for (int k = 0; k < 2; ++k) pthread_create(&th[k], NULL, thread_job, &jobs[k]);
        for (int k = 0; k < 2; ++k) pthread_join(th[k], NULL);
        for (int k = 0; k < 2; ++k)
            CHECK_MSG(jobs[k].ok && jobs[k].err <= 1e-11, "two threads, %s (thread %d): ok %d error %.3e",
                      ns_tridiag_method_name(jobs[k].method), k, jobs[k].ok, jobs[k].err);
    }
#endif
}

/* Bad input to the device call: a status naming the argument, never a crash. */
static void test_device_bad_input(void) {
#ifdef NS_HAVE_CUDA
    const int32_t n = 40;
    const int64_t batch = 50;
    const size_t bytes = (size_t)n * (size_t)batch * sizeof(double);
    ns_tridiag_options o;
    ns_tridiag_options_init(&o);
    o.method = NS_TRIDIAG_WARP;
    ns_tridiag_solver_t *solver = NULL;
    CHECK_OK(ns_tridiag_solver_create(n, batch, &o, &solver));
    if (!solver) return;
    void *dv[4] = {NULL, NULL, NULL, NULL}, *pinned = NULL, *small = NULL;
    for (int a = 0; a < 4; ++a) CHECK(cudaMalloc(&dv[a], bytes) == cudaSuccess);
    CHECK(cudaMallocHost(&pinned, bytes) == cudaSuccess);
    CHECK(cudaMalloc(&small, bytes / 2) == cudaSuccess);
    double *host = malloc(bytes);
    ns_status st = ns_tridiag_solver_solve_device(solver, host, dv[1], dv[2], dv[3], NULL);
    CHECK_MSG(st == NS_ERR_INVALID_ARGUMENT && strstr(ns_last_error(), "dl is ") != NULL, "host dl: %s",
              ns_last_error());
    st = ns_tridiag_solver_solve_device(solver, dv[0], pinned, dv[2], dv[3], NULL);
    CHECK_MSG(st == NS_ERR_INVALID_ARGUMENT && strstr(ns_last_error(), "d is pinned host memory") != NULL,
              "pinned d: %s", ns_last_error());
    st = ns_tridiag_solver_solve_device(solver, dv[0], dv[1], small, dv[3], NULL);
    CHECK_MSG(st == NS_ERR_INVALID_ARGUMENT && strstr(ns_last_error(), "du does not hold") != NULL,
              "short du: %s", ns_last_error());
    st = ns_tridiag_solver_solve_device(solver, dv[0], dv[1], dv[2], (char *)dv[3] + bytes / 2, NULL);
    CHECK_MSG(st == NS_ERR_INVALID_ARGUMENT && strstr(ns_last_error(), "x does not hold") != NULL,
              "x past its allocation: %s", ns_last_error());
    st = ns_tridiag_solver_solve_device(solver, dv[0], dv[1], dv[2], NULL, NULL);
    CHECK_MSG(st == NS_ERR_INVALID_ARGUMENT && strstr(ns_last_error(), "x is NULL") != NULL, "NULL x: %s",
              ns_last_error());
    CHECK_OK(ns_tridiag_solver_wait(solver)); /* the refused calls queued nothing */
    int gpus = 0;
    CHECK_OK(ns_cuda_device_count(&gpus));
    if (gpus >= 2) {
        /* a stream of GPU 1 for a solver on GPU 0, and a solver on GPU 1 (the option) with arrays of GPU 0 */
        cudaStream_t q1 = NULL;
        CHECK(cudaSetDevice(1) == cudaSuccess);
        CHECK(cudaStreamCreate(&q1) == cudaSuccess);
        CHECK(cudaSetDevice(0) == cudaSuccess);
        st = ns_tridiag_solver_solve_device(solver, dv[0], dv[1], dv[2], dv[3], q1);
        CHECK_MSG(st == NS_ERR_INVALID_ARGUMENT && strstr(ns_last_error(), "stream belongs to GPU 1") != NULL,
                  "stream of GPU 1: %s", ns_last_error());
        ns_tridiag_options o1 = o;
        o1.device = 1;
        ns_tridiag_solver_t *s1 = NULL;
        CHECK_OK(ns_tridiag_solver_create(n, batch, &o1, &s1));
        int cur = -1;
        cudaGetDevice(&cur);
        CHECK_MSG(cur == 0, "create on GPU 1 left GPU %d current", cur);
        st = ns_tridiag_solver_solve_device(s1, dv[0], dv[1], dv[2], dv[3], q1);
        CHECK_MSG(st == NS_ERR_INVALID_ARGUMENT && strstr(ns_last_error(), "dl is on GPU 0, the solver on GPU 1"),
                  "arrays of GPU 0: %s", ns_last_error());
        ns_tridiag_solver_destroy(s1);
        cudaSetDevice(1);
        cudaStreamDestroy(q1);
        cudaSetDevice(0);
    } else {
        printf("NOTE: one GPU: the stream-of-another-GPU case is not exercised here\n");
    }
    /* the device option: an ordinal past the usable GPUs */
    ns_tridiag_options ob = o;
    ob.device = gpus;
    ns_tridiag_solver_t *bad = NULL;
    st = ns_tridiag_solver_create(n, batch, &ob, &bad);
    CHECK_MSG(st == NS_ERR_NO_DEVICE && bad == NULL && strstr(ns_last_error(), "is not usable"), "device %d: %s",
              gpus, ns_last_error());
    /* float32 solver: the extent counts 4-byte entries (a float array of the right size passes) */
    ns_tridiag_options of = o;
    of.precision = NS_TRIDIAG_FLOAT32;
    ns_tridiag_solver_t *sf = NULL;
    CHECK_OK(ns_tridiag_solver_create(n, batch, &of, &sf));
    CHECK_OK(ns_tridiag_solver_solve_device(sf, dv[0], dv[1], small, dv[3], NULL)); /* bytes / 2 = the float extent */
    ns_tridiag_solver_destroy(sf); /* waits for the queued solve */
    for (int a = 0; a < 4; ++a) cudaFree(dv[a]);
    cudaFree(small);
    cudaFreeHost(pinned);
    free(host);
    ns_tridiag_solver_destroy(solver);
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
#ifdef NS_HAVE_CUDA
        /* The device call: wait reports the same system. A second, regular
         * solve queued before the wait does not hide the first one's pivot. */
        for (size_t i = 0; i < len; ++i) x[i] = 1;
        void *dv[4] = {NULL, NULL, NULL, NULL}, *good[4] = {NULL, NULL, NULL, NULL};
        const double *hv[4] = {dl, d, du, x};
        for (int a = 0; a < 4; ++a) {
            CHECK(cudaMalloc(&dv[a], len * 8) == cudaSuccess && cudaMalloc(&good[a], len * 8) == cudaSuccess);
            CHECK(cudaMemcpy(dv[a], hv[a], len * 8, cudaMemcpyHostToDevice) == cudaSuccess);
            CHECK(cudaMemcpy(good[a], hv[a], len * 8, cudaMemcpyHostToDevice) == cudaSuccess);
        }
        const double four = 4.0, minus1 = -1.0;
        CHECK(cudaMemcpy((double *)good[0] + bad, &minus1, 8, cudaMemcpyHostToDevice) == cudaSuccess);
        CHECK(cudaMemcpy((double *)good[1] + bad, &four, 8, cudaMemcpyHostToDevice) == cudaSuccess);
        CHECK(cudaMemcpy((double *)good[2] + bad, &minus1, 8, cudaMemcpyHostToDevice) == cudaSuccess);
        /* the failed host call above left no report behind: a regular
         * device call after it waits clean (the slot is reset after a
         * failure, device calls do not reset it) */
        CHECK_OK(ns_tridiag_solver_solve_device(solver, good[0], good[1], good[2], good[3], NULL));
        CHECK_MSG(ns_tridiag_solver_wait(solver) == NS_OK, "%s: a regular device call after a failed host call: %s",
                  ns_tridiag_method_name(m), ns_last_error());
        for (int a = 0; a < 4; ++a)
            CHECK(cudaMemcpy(good[a], hv[a], len * 8, cudaMemcpyHostToDevice) == cudaSuccess); /* solves overwrite x (and du) */
        CHECK(cudaMemcpy((double *)good[0] + bad, &minus1, 8, cudaMemcpyHostToDevice) == cudaSuccess);
        CHECK(cudaMemcpy((double *)good[1] + bad, &four, 8, cudaMemcpyHostToDevice) == cudaSuccess);
        CHECK(cudaMemcpy((double *)good[2] + bad, &minus1, 8, cudaMemcpyHostToDevice) == cudaSuccess);
        CHECK_OK(ns_tridiag_solver_solve_device(solver, dv[0], dv[1], dv[2], dv[3], NULL));
        const int accumulate = m == NS_TRIDIAG_THOMAS_BATCH || m == NS_TRIDIAG_WARP;
        if (accumulate) CHECK_OK(ns_tridiag_solver_solve_device(solver, good[0], good[1], good[2], good[3], NULL));
        st = ns_tridiag_solver_wait(solver);
        const int named_dev = strstr(ns_last_error(), "system 5 ") != NULL;
        if (m == NS_TRIDIAG_CUSPARSE_STRIDED || m == NS_TRIDIAG_CUSPARSE_INTERLEAVED) {
            if (st != NS_ERR_SINGULAR || !named_dev)
                printf("NOTE: %s device call on a singular system: %s (%s)\n", ns_tridiag_method_name(m),
                       ns_status_string(st), ns_last_error());
        } else {
            CHECK_MSG(st == NS_ERR_SINGULAR && named_dev, "device call %s%s: %s: %s", ns_tridiag_method_name(m),
                      accumulate ? " (then a regular solve)" : "", ns_status_string(st), ns_last_error());
        }
        CHECK_OK(ns_tridiag_solver_solve_device(solver, good[0], good[1], good[2], good[3], NULL));
        CHECK_OK(ns_tridiag_solver_wait(solver)); /* the report was consumed by the last wait */
        for (int a = 0; a < 4; ++a) cudaFree(dv[a]), cudaFree(good[a]);
#endif
        ns_tridiag_solver_destroy(solver);
    }
    free(dl), free(d), free(du), free(x);
}

#ifdef NS_HAVE_CUDA
/* cuSPARSE's wrappers find failures by scanning the result for Inf/NaN
 * (thomas.cu, nonfinite_kernel: 16-byte vectors, then a scalar tail). A
 * non-finite right-hand side entry makes its system's solution non-finite
 * whatever the algorithm, so the device call's wait must name that system
 * (the lowest one when several are), and a clean batch must pass: both
 * precisions (double2 and float4 loads), a total that leaves a scalar tail
 * (51 x 41) and one that does not (64 x 32), the bad entry in the last
 * system (the tail's). */
static void test_nonfinite_scan(void) {
    const ns_tridiag_method methods[2] = {NS_TRIDIAG_CUSPARSE_STRIDED, NS_TRIDIAG_CUSPARSE_INTERLEAVED};
    const int32_t sizes[2][2] = {{51, 41}, {64, 32}};
    for (int mi = 0; mi < 2; ++mi)
        for (int f32 = 0; f32 < 2; ++f32)
            for (int z = 0; z < 2; ++z) {
                const int32_t n = sizes[z][0], batch = sizes[z][1];
                const size_t len = (size_t)n * (size_t)batch, es = f32 ? 4 : 8;
                const int interleaved = ns_tridiag_method_layout(methods[mi]) == NS_TRIDIAG_INTERLEAVED;
                ns_tridiag_options o;
                ns_tridiag_options_init(&o);
                o.method = methods[mi];
                o.layout = interleaved ? NS_TRIDIAG_INTERLEAVED : NS_TRIDIAG_FLAT;
                o.precision = f32 ? NS_TRIDIAG_FLOAT32 : NS_TRIDIAG_FLOAT64;
                ns_tridiag_solver_t *solver = NULL;
                CHECK_OK(ns_tridiag_solver_create(n, batch, &o, &solver));
                void *h[4], *dv[4] = {NULL, NULL, NULL, NULL};
                for (int a = 0; a < 4; ++a) {
                    h[a] = malloc(len * es);
                    CHECK(cudaMalloc(&dv[a], len * es) == cudaSuccess);
                }
                /* cases: (bad system, second bad system or -1, expected report or -1 for none) */
                const int32_t cases[3][3] = {{5, batch - 1, 5}, {batch - 1, -1, batch - 1}, {-1, -1, -1}};
                for (int c = 0; c < 3; ++c) {
                    for (size_t i = 0; i < len; ++i) {
                        const double v[4] = {-1.0, 4.0, -1.0, 1.0};
                        for (int a = 0; a < 4; ++a) {
                            if (f32) ((float *)h[a])[i] = (float)v[a];
                            else ((double *)h[a])[i] = v[a];
                        }
                    }
                    for (int b = 0; b < 2; ++b) {
                        const int32_t sys = cases[c][b];
                        if (sys < 0) continue;
                        const int32_t k = b == 0 ? 7 : n - 1;
                        const size_t at = interleaved ? (size_t)k * (size_t)batch + (size_t)sys
                                                      : (size_t)sys * (size_t)n + (size_t)k;
                        const double bad = b == 0 ? NAN : INFINITY;
                        if (f32) ((float *)h[3])[at] = (float)bad;
                        else ((double *)h[3])[at] = bad;
                    }
                    for (int a = 0; a < 4; ++a) CHECK(cudaMemcpy(dv[a], h[a], len * es, cudaMemcpyHostToDevice) == cudaSuccess);
                    CHECK_OK(ns_tridiag_solver_solve_device(solver, dv[0], dv[1], dv[2], dv[3], NULL));
                    const ns_status st = ns_tridiag_solver_wait(solver);
                    char want[64];
                    snprintf(want, sizeof want, "system %d ", (int)cases[c][2]);
                    if (cases[c][2] < 0)
                        CHECK_MSG(st == NS_OK, "%s %s %dx%d: a clean batch reported %s (%s)",
                                  ns_tridiag_method_name(methods[mi]), f32 ? "f32" : "f64", (int)n, (int)batch,
                                  ns_status_string(st), ns_last_error());
                    else
                        CHECK_MSG(st == NS_ERR_SINGULAR && strstr(ns_last_error(), want) != NULL,
                                  "%s %s %dx%d: non-finite in system %d: %s (%s)", ns_tridiag_method_name(methods[mi]),
                                  f32 ? "f32" : "f64", (int)n, (int)batch, (int)cases[c][2], ns_status_string(st),
                                  ns_last_error());
                }
                for (int a = 0; a < 4; ++a) free(h[a]), cudaFree(dv[a]);
                ns_tridiag_solver_destroy(solver);
            }
}
#endif

int main(void) {
    int gpus = 0;
    if (ns_cuda_device_count(&gpus) != NS_OK || gpus <= 0) CHECK_SKIP("no GPU (tridiagonal CUDA tests)");
    test_fixed();
    test_variable();
    test_device_calls();
    test_two_threads();
    test_device_bad_input();
    test_singular();
#ifdef NS_HAVE_CUDA
    test_nonfinite_scan();
#endif
    test_onchip_accuracy();
    return check_summary("test_tridiag_cuda");
}
