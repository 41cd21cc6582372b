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

#endif
