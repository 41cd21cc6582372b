/* CUDA device discovery in a build without CUDA. */
#include <stddef.h>

#include "core/error.h"
#include "neurosolve/version.h"

ns_status ns_cuda_device_count(int *count) {
    if (count) *count = 0;
    return ns_fail(NS_ERR_UNSUPPORTED, "neurosolve was built without CUDA (NS_CUDA=OFF or no nvcc)");
}

ns_status ns_cuda_device_info(int device, ns_device_info *info) {
    (void)device;
    (void)info;
    return ns_fail(NS_ERR_UNSUPPORTED, "neurosolve was built without CUDA (NS_CUDA=OFF or no nvcc)");
}
