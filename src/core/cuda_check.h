/* Private: turning CUDA runtime errors into statuses at the call site.
 * Include only from .cu files. */
#ifndef NS_CORE_CUDA_CHECK_H
#define NS_CORE_CUDA_CHECK_H

#include <cuda_runtime.h>
#include "core/error.h"

/* Evaluate a CUDA runtime call; on failure record "where: call: message"
 * and return a status from the enclosing function. Allocation failures map
 * to NS_ERR_DEVICE_MEMORY, a missing device to NS_ERR_NO_DEVICE. */
static inline ns_status ns_cuda_status(cudaError_t err, const char *what, const char *file, int line) {
    if (err == cudaSuccess) return NS_OK;
    (void)cudaGetLastError(); /* clear a sticky non-fatal error so later calls work */
    ns_status s = NS_ERR_CUDA;
    if (err == cudaErrorMemoryAllocation) s = NS_ERR_DEVICE_MEMORY;
    if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver) s = NS_ERR_NO_DEVICE;
    return ns_fail(s, "%s:%d: %s: %s (%s)", file, line, what, cudaGetErrorString(err),
                   cudaGetErrorName(err));
}

#define NS_CUDA_TRY(call)                                                        \
    do {                                                                         \
        ns_status ns_cuda_try_s_ = ns_cuda_status((call), #call, __FILE__, __LINE__); \
        if (ns_cuda_try_s_ != NS_OK) return ns_cuda_try_s_;                      \
    } while (0)

/* Same, but jump to a cleanup label with `status` set. */
#define NS_CUDA_GOTO(call, status, label)                                        \
    do {                                                                         \
        (status) = ns_cuda_status((call), #call, __FILE__, __LINE__);            \
        if ((status) != NS_OK) goto label;                                       \
    } while (0)

/* Allow `func` (a kernel) dynamic shared memory up to the most the current
 * device lets it have (the opt-in maximum less its static shared memory),
 * whatever one launch needs. The attribute is per process, so a value sized
 * for one solver would fail the launches of another solver with larger
 * groups in the same process (seen with the host pipeline's sub-solvers);
 * `bytes` beyond that maximum is asked for as it is, so that the call fails
 * as it should. */
static inline cudaError_t ns_cuda_allow_shared(const void *func, size_t bytes) {
    int dev = 0, optin = 0;
    struct cudaFuncAttributes at;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    if (e == cudaSuccess) e = cudaFuncGetAttributes(&at, func);
    if (e != cudaSuccess) return e;
    const size_t most = (size_t)optin > at.sharedSizeBytes ? (size_t)optin - at.sharedSizeBytes : 0;
    return cudaFuncSetAttribute(func, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)(bytes > most ? bytes : most));
}

/* The device memory a solver may plan for: `limit` when set (> 0), else the
 * current device's free memory less a twentieth of it and `reserve` bytes. */
static inline cudaError_t ns_cuda_memory_budget(size_t limit, size_t reserve, size_t *budget) {
    *budget = limit;
    if (limit > 0) return cudaSuccess;
    size_t free_b = 0, total_b = 0;
    const cudaError_t e = cudaMemGetInfo(&free_b, &total_b);
    if (e != cudaSuccess) return e;
    const size_t keep = free_b / 20 + reserve;
    *budget = free_b > keep ? free_b - keep : 0;
    return cudaSuccess;
}

/* Destroy the first n of `ev` and the stream q (those that are not null):
 * a backend's queue and its events. */
static inline void ns_cuda_queue_destroy(cudaStream_t q, cudaEvent_t *ev, int n) {
    for (int k = 0; k < n; ++k)
        if (ev[k]) cudaEventDestroy(ev[k]);
    if (q) cudaStreamDestroy(q);
}

/* ns_cuda_allow_shared, then the largest shared-memory carveout for `func`
 * (the kernels that keep their data in shared memory). */
static inline cudaError_t ns_cuda_prefer_shared(const void *func, size_t bytes) {
    cudaError_t e = ns_cuda_allow_shared(func, bytes);
    if (e != cudaSuccess) return e;
    return cudaFuncSetAttribute(func, cudaFuncAttributePreferredSharedMemoryCarveout,
                                (int)cudaSharedmemCarveoutMaxShared);
}

#endif
