/* Shared by the CUDA Hines implementations' device calls (device_call.h). */
#include "hines/cuda/device_call.h"
#include "core/cuda_check.h"

#include <stdint.h>
#include <string.h>

#include <cuda.h> /* types of the driver entry point only: nothing links libcuda */

/* The allocation that holds p (cuMemGetAddressRange, through the runtime's
 * driver entry point so that the library does not link the driver):
 * 1 and [*base, *base + *size), or 0 when it cannot be told. */
static int allocation_range(const void *p, uintptr_t *base, size_t *size) {
#if CUDART_VERSION >= 12050
    typedef CUresult (*range_fn)(CUdeviceptr *, size_t *, CUdeviceptr);
    static range_fn fn = NULL; /* benign race: every thread stores the same pointer */
    if (!fn) {
        void *f = NULL;
        enum cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &f, 12000, cudaEnableDefault, &q) !=
                cudaSuccess ||
            q != cudaDriverEntryPointSuccess || !f) {
            (void)cudaGetLastError();
            return 0;
        }
        memcpy(&fn, &f, sizeof fn); /* ISO C has no object-to-function pointer cast */
    }
    CUdeviceptr b = 0;
    size_t n = 0;
    if (fn(&b, &n, (CUdeviceptr)(uintptr_t)p) != CUDA_SUCCESS) return 0;
    *base = (uintptr_t)b;
    *size = n;
    return 1;
#else
    (void)p, (void)base, (void)size;
    return 0;
#endif
}

ns_status ns_device_call_init(ns_device_call *c, int device) {
    c->device = device;
    c->pending = 0;
    NS_CUDA_TRY(cudaMallocHost((void **)&c->key_host, sizeof *c->key_host));
    NS_CUDA_TRY(cudaEventCreateWithFlags(&c->done, cudaEventDisableTiming));
    return NS_OK;
}

void ns_device_call_free(ns_device_call *c) {
    if (c->done) cudaEventDestroy(c->done);
    cudaFreeHost(c->key_host);
    (void)cudaGetLastError();
    c->done = NULL;
    c->key_host = NULL;
}

static ns_status check_pointer(const ns_device_call *c, const char *who, const void *p, size_t bytes,
                               const char *name) {
    struct cudaPointerAttributes at;
    if (cudaPointerGetAttributes(&at, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: %s is not a CUDA pointer", who, name);
    }
    if (at.type != cudaMemoryTypeDevice && at.type != cudaMemoryTypeManaged)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: %s is %s memory, not device memory", who, name,
                       at.type == cudaMemoryTypeHost ? "pinned host" : "unregistered host");
    if (at.device != c->device)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: %s is on GPU %d, the solver on GPU %d", who, name, at.device,
                       c->device);
    /* the allocation must hold the whole array */
    uintptr_t base = 0;
    size_t size = 0;
    if (bytes > 0 && at.type == cudaMemoryTypeDevice && allocation_range(p, &base, &size) &&
        (uintptr_t)p + bytes > base + size)
        return ns_fail(NS_ERR_INVALID_ARGUMENT,
                       "%s: %s does not hold the batch's %zu bytes (its allocation ends %zu bytes after it)", who,
                       name, bytes, (size_t)(base + size - (uintptr_t)p));
    return NS_OK;
}

ns_status ns_device_call_check(const ns_device_call *c, const char *who, const void *const arrays[4], size_t bytes,
                               cudaStream_t q) {
    static const char *names[4] = {"a", "b", "d", "rhs"};
    for (int k = 0; k < 4; ++k) {
        ns_status e = check_pointer(c, who, arrays[k], bytes, names[k]);
        if (e != NS_OK) return e;
    }
    if (q) {
        int sdev = -1;
        if (cudaStreamGetDevice(q, &sdev) != cudaSuccess) {
            (void)cudaGetLastError();
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: stream is not a valid CUDA stream", who);
        }
        if (sdev != c->device)
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: the stream belongs to GPU %d, the solver to GPU %d", who, sdev,
                           c->device);
    }
    return NS_OK;
}

ns_status ns_device_call_queue(ns_device_call *c, const unsigned long long *bad, cudaStream_t q) {
    NS_CUDA_TRY(cudaMemcpyAsync(c->key_host, bad, sizeof *c->key_host, cudaMemcpyDeviceToHost, q));
    NS_CUDA_TRY(cudaEventRecord(c->done, q));
    c->pending = 1;
    return NS_OK;
}

ns_status ns_device_call_wait(ns_device_call *c, unsigned long long *key, int *had) {
    *had = c->pending;
    if (!c->pending) return NS_OK;
    c->pending = 0;
    NS_CUDA_TRY(cudaEventSynchronize(c->done));
    *key = *c->key_host;
    return NS_OK;
}
