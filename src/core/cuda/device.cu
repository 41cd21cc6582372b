// CUDA device discovery for ns_cuda_device_count / ns_cuda_device_info.
#include <stdio.h>
#include <string.h>

#include <stdlib.h>

#include "core/cuda_arch.h"
#include "core/cuda_check.h"
#include "core/device_impl.h"
#include "neurosolve/backend.h"
#include "neurosolve/device.h"

/* Visible devices, whether the library can use them or not (0 without a
 * GPU or driver). */
static ns_status visible_devices(int *n) {
    *n = 0;
    cudaError_t err = cudaGetDeviceCount(n);
    if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver ||
        err == cudaErrorInitializationError || err == cudaErrorSystemDriverMismatch) {
        (void)cudaGetLastError();
        *n = 0;
        return NS_OK; /* CUDA compiled in, but nothing to run on: not an error */
    }
    NS_CUDA_TRY(err);
    return NS_OK;
}

static int fake_major = 0, fake_minor = 0; /* ns_cuda_fake_capability */

extern "C" void ns_cuda_fake_capability(int major, int minor) {
    fake_major = major;
    fake_minor = minor;
}

/* Whether this build's kernels run on `device`: its compute capability
 * against the architectures compiled in (CMAKE_CUDA_ARCHITECTURES), or the
 * one a test set with ns_cuda_fake_capability. */
static int device_usable(int device, int *major, int *minor) {
    *major = *minor = 0;
    if (cudaDeviceGetAttribute(major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    if (fake_major > 0) {
        *major = fake_major;
        *minor = fake_minor;
    }
    return ns_cuda_archs_run_on(ns_cuda_built_archs(), *major, *minor) != 0; /* -1: cannot judge */
}

/* Usable devices are the visible ones in order up to the first this build
 * cannot run on (docs/install.md): the backends use devices 0..count-1. */
extern "C" ns_status ns_cuda_device_count(int *count) {
    if (!count) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_cuda_device_count: count is NULL");
    *count = 0;
    int n = 0;
    ns_status s = visible_devices(&n);
    if (s != NS_OK) return s;
    int usable = 0, major, minor;
    while (usable < n && device_usable(usable, &major, &minor)) ++usable;
    *count = usable;
    return NS_OK;
}

extern "C" ns_status ns_cuda_device_info(int device, ns_device_info *info) {
    if (!info) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_cuda_device_info: info is NULL");
    int n = 0;
    ns_status s = visible_devices(&n);
    if (s != NS_OK) return s;
    if (device < 0 || device >= n)
        return ns_fail(NS_ERR_NO_DEVICE, "CUDA device %d does not exist (%d visible)", device, n);
    cudaDeviceProp p;
    NS_CUDA_TRY(cudaGetDeviceProperties(&p, device));
    memset(info, 0, sizeof *info);
    int usable = 0;
    s = ns_cuda_device_count(&usable);
    if (s != NS_OK) return s;
    info->usable = device < usable;
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

extern "C" int ns_cuda_usable_devices(void) {
    int n = 0;
    if (ns_cuda_device_count(&n) != NS_OK) {
        ns_clear_error();
        return 0;
    }
    return n;
}

extern "C" ns_status ns_cuda_resolve_device(int32_t requested, const char *who, int *device) {
    const int usable = ns_cuda_usable_devices();
    if (usable == 0) return ns_fail(NS_ERR_NO_DEVICE, "%s needs a GPU, and none is usable here", who);
    int d = requested;
    if (requested == NS_DEVICE_CURRENT) {
        NS_CUDA_TRY(cudaGetDevice(&d));
    } else if (requested < 0) {
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: device = %d is neither a device ordinal nor NS_DEVICE_CURRENT",
                       who, (int)requested);
    }
    if (d >= usable)
        return ns_fail(NS_ERR_NO_DEVICE, "%s: GPU %d is not usable (%d usable GPU%s: 0..%d)", who, d, usable,
                       usable == 1 ? "" : "s", usable - 1);
    *device = d;
    return NS_OK;
}

extern "C" size_t ns_cuda_optin_shared(int device) {
    int v = 0;
    if (cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess || v <= 0) {
        (void)cudaGetLastError();
        return 0;
    }
    return (size_t)v;
}

extern "C" int ns_cuda_save_device(void) {
    int d = -1;
    if (cudaGetDevice(&d) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    return d;
}

extern "C" void ns_cuda_restore_device(int device) {
    if (device >= 0 && cudaSetDevice(device) != cudaSuccess) (void)cudaGetLastError();
}
