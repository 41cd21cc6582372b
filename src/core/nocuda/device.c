/* CUDA device discovery in a build without CUDA. */
#include <stddef.h>

#include "core/cuda_arch.h"
#include "core/error.h"
#include "core/device_impl.h"
#include "neurosolve/device.h"

ns_status ns_cuda_device_count(int *count) {
    if (count) *count = 0;
    return ns_fail(NS_ERR_UNSUPPORTED, "neurosolve was built without CUDA (NS_CUDA=OFF or no nvcc)");
}

ns_status ns_cuda_device_info(int device, ns_device_info *info) {
    (void)device;
    (void)info;
    return ns_fail(NS_ERR_UNSUPPORTED, "neurosolve was built without CUDA (NS_CUDA=OFF or no nvcc)");
}

ns_status ns_cuda_copy_bandwidth(int device, size_t bytes, int repeats, double *gb_per_s) {
    (void)device;
    (void)bytes;
    (void)repeats;
    if (gb_per_s) *gb_per_s = 0.0;
    return ns_fail(NS_ERR_UNSUPPORTED, "neurosolve was built without CUDA (NS_CUDA=OFF or no nvcc)");
}

/* Nothing to fake without CUDA (core/cuda_arch.h). */
void ns_cuda_fake_capability(int major, int minor) {
    (void)major;
    (void)minor;
}

int ns_cuda_usable_devices(void) { return 0; }

ns_status ns_cuda_resolve_device(int32_t requested, const char *who, int *device) {
    (void)requested;
    (void)device;
    return ns_fail(NS_ERR_UNSUPPORTED, "%s: neurosolve was built without CUDA (NS_CUDA=OFF or no nvcc)", who);
}

size_t ns_cuda_optin_shared(int device) {
    (void)device;
    return 0;
}

int ns_cuda_save_device(void) { return -1; }
void ns_cuda_restore_device(int device) { (void)device; }
