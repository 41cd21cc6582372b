// CUDA device discovery for ns_cuda_device_count / ns_cuda_device_info.
#include <stdio.h>
#include <string.h>

#include "core/cuda_check.h"
#include "neurosolve/device.h"

extern "C" ns_status ns_cuda_device_count(int *count) {
    if (!count) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_cuda_device_count: count is NULL");
    *count = 0;
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver ||
        err == cudaErrorInitializationError || err == cudaErrorSystemDriverMismatch) {
        (void)cudaGetLastError();
        return NS_OK; /* CUDA compiled in, but nothing to run on: not an error */
    }
    NS_CUDA_TRY(err);
    *count = n;
    return NS_OK;
}

extern "C" ns_status ns_cuda_device_info(int device, ns_device_info *info) {
    if (!info) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_cuda_device_info: info is NULL");
    int n = 0;
    ns_status s = ns_cuda_device_count(&n);
    if (s != NS_OK) return s;
    if (device < 0 || device >= n)
        return ns_fail(NS_ERR_NO_DEVICE, "CUDA device %d does not exist (%d visible)", device, n);
    cudaDeviceProp p;
    NS_CUDA_TRY(cudaGetDeviceProperties(&p, device));
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "%s", p.name);
    info->major = p.major;
    info->minor = p.minor;
    info->multiprocessors = p.multiProcessorCount;
    info->global_memory_gib = (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0);
    info->shared_memory_per_block_optin = (int)p.sharedMemPerBlockOptin;
    info->l2_cache_bytes = p.l2CacheSize;
    int old = 0;
    NS_CUDA_TRY(cudaGetDevice(&old));
    NS_CUDA_TRY(cudaSetDevice(device));
    size_t free_b = 0, total_b = 0;
    ns_status ms = ns_cuda_status(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo", __FILE__, __LINE__);
    cudaSetDevice(old);
    if (ms != NS_OK) return ms;
    info->free_memory_gib = (double)free_b / (1024.0 * 1024.0 * 1024.0);
    return NS_OK;
}
