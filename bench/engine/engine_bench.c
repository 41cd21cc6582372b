#define _POSIX_C_SOURCE 199309L /* clock_gettime */
/* The engine's figures (issue 15; bench/README.md, "Host arrays and device
 * arrays"), on one GPU, in one run:
 *   - the kernel time of a method (ns_hines_solver_benchmark: inputs on the
 *     device, CUDA events, median of 10);
 *   - the device entry point on the caller's arrays and stream (events
 *     around ns_hines_solver_solve_device, median of 10): its ratio to the
 *     kernel time (target <= 1.02);
 *   - the host entry point on pageable and on pinned host arrays (wall
 *     time, median of 5): its ratio to the kernel time (target <= 3);
 *   - the ceilings: host-to-device copy bandwidth from pinned memory and
 *     device-to-device copy bandwidth;
 * each result checked against the sequential CPU solve in the same run.
 * Workloads: 100,000 cells of ten bundled real morphologies (mixed), and
 * 100,000 cells of one (allen_chat).
 *
 * usage: engine_bench MORPHOLOGY_DIR [cells]        (needs a GPU) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>
#include <neurosolve/neurosolve.h>

static const char *mix[10] = {"ca1_h10.swc",         "purk_dbbs.swc",         "l5pc_bbp_axon.swc",
                              "allen_rbp4_485574832.swc", "dg_granule_1220882a.swc", "str_chin.swc",
                              "allen_chat_614430666.swc", "ca3_l22.swc",           "cereb_golgi_dbbs.swc",
                              "hip_970529c.swc"};

static int cmp(const void *x, const void *y) {
    const double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp);
    return v[n / 2];
}
static double max_rel(const double *x, const double *ref, int64_t n) {
    double e = 0, m = 0;
    for (int64_t i = 0; i < n; ++i) {
        const double d = fabs(x[i] - ref[i]);
        if (!(d <= e)) e = d;
        if (fabs(ref[i]) > m) m = fabs(ref[i]);
    }
    return e / (m > 0 ? m : 1);
}
#define TRY(x)                                                                   \
    do {                                                                         \
        if ((x) != NS_OK) {                                                      \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, ns_last_error()); \
            exit(1);                                                             \
        }                                                                        \
    } while (0)
#define CU(x)                                                                    \
    do {                                                                         \
        cudaError_t e_ = (x);                                                    \
        if (e_ != cudaSuccess) {                                                 \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

static double copy_gbs(enum cudaMemcpyKind kind, size_t bytes) {
    void *src = NULL, *dst = NULL;
    if (kind == cudaMemcpyHostToDevice) {
        CU(cudaMallocHost(&src, bytes));
        memset(src, 1, bytes);
        CU(cudaMalloc(&dst, bytes));
    } else if (kind == cudaMemcpyDeviceToHost) {
        CU(cudaMalloc(&src, bytes));
        CU(cudaMemset(src, 1, bytes));
        CU(cudaMallocHost(&dst, bytes));
    } else {
        CU(cudaMalloc(&src, bytes));
        CU(cudaMalloc(&dst, bytes));
        CU(cudaMemset(src, 1, bytes));
    }
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    double t[7];
    for (int r = 0; r < 7; ++r) {
        cudaEventRecord(e0, 0);
        CU(cudaMemcpyAsync(dst, src, bytes, kind, 0));
        cudaEventRecord(e1, 0);
        cudaEventSynchronize(e1);
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        t[r] = ms;
    }
    const double ms = median(t, 7);
    if (kind == cudaMemcpyHostToDevice) cudaFreeHost(src);
    else cudaFree(src);
    if (kind == cudaMemcpyDeviceToHost) cudaFreeHost(dst);
    else cudaFree(dst);
    return (kind == cudaMemcpyDeviceToDevice ? 2.0 : 1.0) * (double)bytes / (ms * 1e6);
}

static void run(const char *label, ns_batch_t *batch, ns_hines_method m, const double *a, const double *b,
                const double *d, const double *rhs, const double *x_ref) {
    const int64_t n = ns_batch_compartments(batch);
    const size_t bytes = (size_t)n * sizeof(double);
    ns_solve_options o;
    ns_solve_options_init(&o);
    o.method = m;
    ns_hines_solver_t *s = NULL;
    TRY(ns_hines_solver_create(batch, &o, &s));
    const char *name = ns_hines_method_name(ns_hines_solver_method(s));
    double *hd = malloc(bytes), *hx = malloc(bytes);
    /* kernel */
    double k[10];
    memcpy(hd, d, bytes);
    memcpy(hx, rhs, bytes);
    TRY(ns_hines_solver_benchmark(s, a, b, hd, hx, 10, k));
    const double err_kernel = max_rel(hx, x_ref, n);
    const double kernel = median(k, 10);
    /* device entry point */
    double *g[4], *g0[2];
    for (int i = 0; i < 4; ++i) CU(cudaMalloc((void **)&g[i], bytes));
    for (int i = 0; i < 2; ++i) CU(cudaMalloc((void **)&g0[i], bytes));
    CU(cudaMemcpy(g[0], a, bytes, cudaMemcpyHostToDevice));
    CU(cudaMemcpy(g[1], b, bytes, cudaMemcpyHostToDevice));
    CU(cudaMemcpy(g0[0], d, bytes, cudaMemcpyHostToDevice));
    CU(cudaMemcpy(g0[1], rhs, bytes, cudaMemcpyHostToDevice));
    cudaStream_t q;
    CU(cudaStreamCreateWithFlags(&q, cudaStreamNonBlocking));
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    double dv[10];
    for (int r = 0; r < 11; ++r) {
        CU(cudaMemcpyAsync(g[2], g0[0], bytes, cudaMemcpyDeviceToDevice, q));
        CU(cudaMemcpyAsync(g[3], g0[1], bytes, cudaMemcpyDeviceToDevice, q));
        cudaEventRecord(e0, q);
        TRY(ns_hines_solver_solve_device(s, g[0], g[1], g[2], g[3], q));
        cudaEventRecord(e1, q);
        TRY(ns_hines_solver_wait(s));
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        if (r) dv[r - 1] = ms; /* the first is a warm-up */
    }
    CU(cudaMemcpy(hx, g[3], bytes, cudaMemcpyDeviceToHost));
    double err_device = max_rel(hx, x_ref, n);
    double device = median(dv, 10);
    /* a method whose native layout is not Flat: the device call in that layout (no conversion) */
    const int native = ns_hines_solver_native_layout(s) != NS_HINES_LAYOUT_FLAT;
    if (native) {
        double *gi[2];
        for (int i = 0; i < 2; ++i) CU(cudaMalloc((void **)&gi[i], bytes));
        for (int i = 0; i < 2; ++i) TRY(ns_hines_convert_device(batch, NS_HINES_LAYOUT_FLAT, NS_HINES_LAYOUT_INTERLEAVED, g0[i], gi[i], q));
        for (int i = 0; i < 2; ++i) TRY(ns_hines_convert_device(batch, NS_HINES_LAYOUT_FLAT, NS_HINES_LAYOUT_INTERLEAVED, i ? g[1] : g[0], i ? g0[1] : g0[0], q));
        /* g0 now holds a, b interleaved; gi holds d, rhs interleaved (pristine) */
        for (int r = 0; r < 11; ++r) {
            CU(cudaMemcpyAsync(g[2], gi[0], bytes, cudaMemcpyDeviceToDevice, q));
            CU(cudaMemcpyAsync(g[3], gi[1], bytes, cudaMemcpyDeviceToDevice, q));
            cudaEventRecord(e0, q);
            TRY(ns_hines_solver_solve_device_layout(s, ns_hines_solver_native_layout(s), g0[0], g0[1], g[2], g[3], q));
            cudaEventRecord(e1, q);
            TRY(ns_hines_solver_wait(s));
            float ms = 0;
            cudaEventElapsedTime(&ms, e0, e1);
            if (r) dv[r - 1] = ms;
        }
        TRY(ns_hines_convert_device(batch, NS_HINES_LAYOUT_INTERLEAVED, NS_HINES_LAYOUT_FLAT, g[3], gi[0], q));
        CU(cudaStreamSynchronize(q)); /* q is non-blocking: the legacy stream's copy would not wait for it */
        CU(cudaMemcpy(hx, gi[0], bytes, cudaMemcpyDeviceToHost));
        const double e2 = max_rel(hx, x_ref, n);
        printf("| %-22s | %-12s | %9lld | %8.3f | %8.3f | %5.3f | (native interleaved layout; Flat device call "
               "%.3f ms with its conversions) | | | | | %.1e |\n",
               label, ns_hines_method_name(ns_hines_solver_method(s)), (long long)n, kernel, median(dv, 10),
               median(dv, 10) / kernel, device, e2);
        if (e2 > err_device) err_device = e2;
        for (int i = 0; i < 2; ++i) cudaFree(gi[i]);
    }
    /* host entry point: pageable, then pinned */
    double host[2] = {0, 0}, err_host[2] = {0, 0}, up[2] = {0, 0}, down[2] = {0, 0};
    for (int pinned = 0; pinned < 2; ++pinned) {
        double *A = (double *)a, *B = (double *)b, *D = hd, *X = hx;
        if (pinned) {
            CU(cudaMallocHost((void **)&A, bytes));
            CU(cudaMallocHost((void **)&B, bytes));
            CU(cudaMallocHost((void **)&D, bytes));
            CU(cudaMallocHost((void **)&X, bytes));
            memcpy(A, a, bytes);
            memcpy(B, b, bytes);
        }
        double t[6];
        for (int r = 0; r < 6; ++r) {
            memcpy(D, d, bytes);
            memcpy(X, rhs, bytes);
            TRY(ns_hines_solver_solve(s, A, B, D, X));
            ns_solve_timing tm;
            ns_hines_solver_timing(s, &tm);
            if (r) t[r - 1] = tm.total_ms; /* the first sets the pipeline up */
            up[pinned] = tm.upload_ms;
            down[pinned] = tm.download_ms;
        }
        host[pinned] = median(t, 5);
        err_host[pinned] = max_rel(X, x_ref, n);
        if (pinned) {
            cudaFreeHost(A);
            cudaFreeHost(B);
            cudaFreeHost(D);
            cudaFreeHost(X);
        }
    }
    /* what pinning the caller's pageable arrays in place would cost per call (cudaHostRegister and
     * cudaHostUnregister of a, b, d, rhs): the alternative to staging copies */
    double reg_ms = 0;
    {
        double *arr[4] = {(double *)a, (double *)b, hd, hx};
        double t[3];
        for (int r = 0; r < 3; ++r) {
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            for (int i = 0; i < 4; ++i) CU(cudaHostRegister(arr[i], bytes, cudaHostRegisterDefault));
            for (int i = 0; i < 4; ++i) CU(cudaHostUnregister(arr[i]));
            clock_gettime(CLOCK_MONOTONIC, &t1);
            t[r] = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) * 1e-6;
        }
        reg_ms = median(t, 3);
    }
    double err = err_kernel;
    if (err_device > err) err = err_device;
    if (err_host[0] > err) err = err_host[0];
    if (err_host[1] > err) err = err_host[1];
    printf("| %-22s | %-12s | %9lld | %8.3f | %8.3f | %5.3f | %8.2f | %5.2f | %8.2f | %5.2f | %.1f/%.1f | %.1f | %.1e |\n",
           label, name, (long long)n, kernel, device, device / kernel, host[0], host[0] / kernel, host[1],
           host[1] / kernel, up[0], down[0], reg_ms, err);
    fflush(stdout);
    for (int i = 0; i < 4; ++i) cudaFree(g[i]);
    for (int i = 0; i < 2; ++i) cudaFree(g0[i]);
    cudaStreamDestroy(q);
    free(hd);
    free(hx);
    ns_hines_solver_destroy(s);
}

static void workload(const char *label, const char *dir, const char *const *files, int n_files, int64_t cells,
                     const ns_hines_method *methods, int n_methods) {
    ns_cell_t *cell[10];
    const ns_tree_t *shape[10];
    for (int k = 0; k < n_files; ++k) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, files[k]);
        ns_morph_t *mo = NULL;
        TRY(ns_swc_read(path, NULL, &mo));
        TRY(ns_discretize(mo, NULL, &cell[k]));
        ns_morph_destroy(mo);
        shape[k] = ns_cell_tree(cell[k]);
    }
    ns_batch_t *batch = NULL;
    TRY(ns_batch_create(n_files, shape, cells, NULL, &batch));
    const int64_t n = ns_batch_compartments(batch);
    const size_t bytes = (size_t)n * sizeof(double);
    double *v[5];
    for (int i = 0; i < 5; ++i) v[i] = malloc(bytes);
    TRY(ns_batch_random_values(batch, 7, v[0], v[1], v[2], v[3]));
    /* the reference: the sequential solve */
    double *dr = malloc(bytes);
    memcpy(dr, v[2], bytes);
    memcpy(v[4], v[3], bytes);
    ns_solve_options o;
    ns_solve_options_init(&o);
    o.method = NS_HINES_SEQUENTIAL;
    TRY(ns_hines_solve(batch, &o, v[0], v[1], dr, v[4]));
    free(dr);
    for (int k = 0; k < n_methods; ++k) run(label, batch, methods[k], v[0], v[1], v[2], v[3], v[4]);
    for (int i = 0; i < 5; ++i) free(v[i]);
    ns_batch_destroy(batch);
    for (int k = 0; k < n_files; ++k) ns_cell_destroy(cell[k]);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: engine_bench MORPHOLOGY_DIR [cells]\n");
        return 2;
    }
    const int64_t cells = argc > 2 ? atoll(argv[2]) : 100000;
    int gpus = 0;
    if (ns_cuda_device_count(&gpus) != NS_OK || gpus == 0) {
        printf("engine_bench: no GPU\n");
        return 77;
    }
    ns_device_info di;
    TRY(ns_cuda_device_info(0, &di));
    printf("device: %s; copy bandwidth device-to-device %.0f GB/s (read + write), host-to-device from pinned "
           "memory %.1f GB/s, device-to-host to pinned %.1f GB/s\n",
           di.name, copy_gbs(cudaMemcpyDeviceToDevice, (size_t)1 << 30), copy_gbs(cudaMemcpyHostToDevice, (size_t)1 << 30),
           copy_gbs(cudaMemcpyDeviceToHost, (size_t)1 << 30));
    printf("\n| workload | method | compartments | kernel ms | device call ms | device/kernel | host call ms "
           "(pageable) | host/kernel | host call ms (pinned) | host/kernel | up/down ms (pageable) | register+unregister ms | max rel error |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    const ns_hines_method mixed_methods[] = {NS_HINES_TREE, NS_HINES_FINE_GRAINED, NS_HINES_INTERLEAVED};
    workload("10 bundled x 10,000", argv[1], mix, 10, cells, mixed_methods, 3);
    const ns_hines_method one_methods[] = {NS_HINES_ONCHIP, NS_HINES_INTERLEAVED, NS_HINES_TREE};
    const char *one[1] = {"allen_chat_614430666.swc"};
    workload("allen_chat x 100,000", argv[1], one, 1, cells, one_methods, 3);
    return 0;
}
