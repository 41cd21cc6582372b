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

/* The dynamic shared memory a kernel is allowed (its
 * cudaFuncAttributeMaxDynamicSharedMemorySize): the current device's opt-in
 * maximum, whatever one launch needs. The attribute is per process, so a
 * value sized for one solver would fail the launches of another solver
 * with larger groups in the same process (seen with the host pipeline's
 * sub-solvers); `bytes` is returned when it exceeds the maximum, so that
 * the call fails as it should. */
static inline int ns_cuda_shared_ceiling(size_t bytes) {
    int dev = 0, optin = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return (int)bytes;
    }
    return (size_t)optin >= bytes ? optin : (int)bytes;
}

#endif
