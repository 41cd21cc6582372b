/* Checks and the pivot key of device-array calls (device_args.h). */
#include "core/cuda/device_args.h"
#include "core/cuda_check.h"
#include "core/device_impl.h"

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

ns_status ns_device_args_pointer(int device, const char *who, const void *p, size_t bytes, const char *name) {
    struct cudaPointerAttributes at;
    if (cudaPointerGetAttributes(&at, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: %s is not a CUDA pointer", who, name);
    }
    if (at.type != cudaMemoryTypeDevice && at.type != cudaMemoryTypeManaged)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: %s is %s memory, not device memory", who, name,
                       at.type == cudaMemoryTypeHost ? "pinned host" : "unregistered host");
    if (at.device != device)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: %s is on GPU %d, the solver on GPU %d", who, name, at.device,
                       device);
    uintptr_t base = 0;
    size_t size = 0;
    if (bytes > 0 && at.type == cudaMemoryTypeDevice && allocation_range(p, &base, &size) &&
        (uintptr_t)p + bytes > base + size)
        return ns_fail(NS_ERR_INVALID_ARGUMENT,
                       "%s: %s does not hold the batch's %zu bytes (its allocation ends %zu bytes after it)", who,
                       name, bytes, (size_t)(base + size - (uintptr_t)p));
    return NS_OK;
}

ns_status ns_device_args_stream(int device, const char *who, cudaStream_t q) {
    if (!q) return NS_OK;
    int sdev = -1;
    if (cudaStreamGetDevice(q, &sdev) != cudaSuccess) {
        (void)cudaGetLastError();
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: stream is not a valid CUDA stream", who);
    }
    if (sdev != device)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: the stream belongs to GPU %d, the solver to GPU %d", who, sdev,
                       device);
    return NS_OK;
}

ns_status ns_device_key_init(ns_device_key *k) {
    memset(k, 0, sizeof *k);
    NS_CUDA_TRY(cudaGetDevice(&k->device));
    NS_CUDA_TRY(cudaMallocHost((void **)&k->host, sizeof *k->host));
    NS_CUDA_TRY(cudaEventCreateWithFlags(&k->done, cudaEventDisableTiming));
    NS_CUDA_TRY(cudaStreamCreateWithFlags(&k->own, cudaStreamNonBlocking));
    return NS_OK;
}

void ns_device_key_free(ns_device_key *k) {
    if (k->own) cudaStreamDestroy(k->own);
    if (k->done) cudaEventDestroy(k->done);
    if (k->host) cudaFreeHost(k->host);
    (void)cudaGetLastError();
    memset(k, 0, sizeof *k);
}

ns_status ns_device_key_queue(ns_device_key *k, unsigned long long *src, cudaStream_t q) {
    NS_CUDA_TRY(cudaEventRecord(k->done, q));
    k->src = src;
    k->pending = 1;
    return NS_OK;
}

ns_status ns_device_key_order(const ns_device_key *k, cudaStream_t q) {
    if (k->pending) NS_CUDA_TRY(cudaStreamWaitEvent(q, k->done, 0));
    return NS_OK;
}

ns_status ns_device_key_wait(ns_device_key *k, unsigned long long *key, int *had) {
    *had = k->pending;
    if (!k->pending) return NS_OK;
    k->pending = 0;
    const int caller = ns_cuda_save_device();
    if (caller != k->device) ns_cuda_restore_device(k->device);
    cudaError_t e = cudaStreamWaitEvent(k->own, k->done, 0);
    if (e == cudaSuccess) e = cudaMemcpyAsync(k->host, k->src, sizeof *k->host, cudaMemcpyDeviceToHost, k->own);
    if (e == cudaSuccess) e = cudaMemsetAsync(k->src, 0xFF, sizeof *k->src, k->own);
    if (e == cudaSuccess) e = cudaStreamSynchronize(k->own);
    if (caller != k->device) ns_cuda_restore_device(caller);
    if (e != cudaSuccess) return ns_cuda_status(e, "pivot key", __FILE__, __LINE__);
    *key = *k->host;
    return NS_OK;
}
