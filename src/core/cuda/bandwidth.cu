// The device-to-device copy bandwidth: the ceiling every GPU benchmark
// reports against (BENCHMARKING.md, rule 3).
#include <stdlib.h>

#include "core/cuda_check.h"
#include "neurosolve/device.h"

namespace {

int compare_double(const void *x, const void *y) {
    const double a = *static_cast<const double *>(x), b = *static_cast<const double *>(y);
    return (a > b) - (a < b);
}

struct Resources {
    void *src = nullptr, *dst = nullptr;
    cudaEvent_t start = nullptr, stop = nullptr;
    double *ms = nullptr;
    ~Resources() {
        cudaFree(src);
        cudaFree(dst);
        if (start) cudaEventDestroy(start);
        if (stop) cudaEventDestroy(stop);
        free(ms);
        (void)cudaGetLastError();
    }
};

// Copies of `bytes` timed one by one; median into *ms_median.
ns_status measure(size_t bytes, int repeats, Resources &r, double *ms_median) {
    NS_CUDA_TRY(cudaMalloc(&r.src, bytes));
    NS_CUDA_TRY(cudaMalloc(&r.dst, bytes));
    NS_CUDA_TRY(cudaMemset(r.src, 1, bytes));  // touched memory, not lazily mapped pages
    NS_CUDA_TRY(cudaMemset(r.dst, 0, bytes));
    NS_CUDA_TRY(cudaEventCreate(&r.start));
    NS_CUDA_TRY(cudaEventCreate(&r.stop));
    r.ms = static_cast<double *>(malloc((size_t)repeats * sizeof(double)));
    if (!r.ms) return ns_fail(NS_ERR_OUT_OF_MEMORY, "copy bandwidth: %d timings", repeats);
    for (int k = 0; k < 2; ++k)  // warm-up
        NS_CUDA_TRY(cudaMemcpy(r.dst, r.src, bytes, cudaMemcpyDeviceToDevice));
    NS_CUDA_TRY(cudaDeviceSynchronize());
    for (int k = 0; k < repeats; ++k) {
        NS_CUDA_TRY(cudaEventRecord(r.start, 0));
        NS_CUDA_TRY(cudaMemcpyAsync(r.dst, r.src, bytes, cudaMemcpyDeviceToDevice, 0));
        NS_CUDA_TRY(cudaEventRecord(r.stop, 0));
        NS_CUDA_TRY(cudaEventSynchronize(r.stop));
        float ms = 0.0f;
        NS_CUDA_TRY(cudaEventElapsedTime(&ms, r.start, r.stop));
        r.ms[k] = (double)ms;
    }
    qsort(r.ms, (size_t)repeats, sizeof(double), compare_double);
    *ms_median = repeats % 2 ? r.ms[repeats / 2] : 0.5 * (r.ms[repeats / 2 - 1] + r.ms[repeats / 2]);
    return NS_OK;
}

}  // namespace

extern "C" ns_status ns_cuda_copy_bandwidth(int device, size_t bytes, int repeats,
                                            double *gb_per_s) {
    if (!gb_per_s) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_cuda_copy_bandwidth: gb_per_s is NULL");
    *gb_per_s = 0.0;
    if (repeats < 1) return ns_fail(NS_ERR_INVALID_ARGUMENT, "copy bandwidth: repeats = %d < 1", repeats);
    int n = 0;
    ns_status s = ns_cuda_device_count(&n);
    if (s != NS_OK) return s;
    if (device < 0 || device >= n)
        return ns_fail(NS_ERR_NO_DEVICE, "CUDA device %d does not exist (%d visible)", device, n);
    int old = 0;
    NS_CUDA_TRY(cudaGetDevice(&old));
    NS_CUDA_TRY(cudaSetDevice(device));
    // Two buffers of `bytes` must fit: shrink to what is free (less a margin).
    size_t free_b = 0, total_b = 0;
    s = ns_cuda_status(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo", __FILE__, __LINE__);
    if (s == NS_OK) {
        const size_t usable = free_b > ((size_t)256 << 20) ? (free_b - ((size_t)256 << 20)) / 2 : 0;
        if (bytes == 0) bytes = (size_t)1 << 30;  // the benchmarks' 1 GiB
        if (bytes > usable) bytes = usable;
        bytes &= ~(size_t)255;
        if (bytes < ((size_t)1 << 20))
            s = ns_fail(NS_ERR_DEVICE_MEMORY, "device %d: %zu bytes free, too few to time copies",
                        device, free_b);
    }
    double ms = 0.0;
    if (s == NS_OK) {
        Resources r;
        s = measure(bytes, repeats, r, &ms);
    }
    cudaSetDevice(old);
    (void)cudaGetLastError();
    if (s != NS_OK) return s;
    if (!(ms > 0.0)) return ns_fail(NS_ERR_CUDA, "device %d: copy of %zu bytes timed at %g ms", device, bytes, ms);
    // Bytes read plus bytes written, per second, in 1e9 bytes.
    *gb_per_s = 2.0 * (double)bytes / (ms * 1e-3) / 1e9;
    return NS_OK;
}
