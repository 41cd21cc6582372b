/* Private: the one device-selection model (core). Every family asks here
 * how many GPUs the library may use and which device a handle gets. */
#ifndef NS_CORE_DEVICE_IMPL_H
#define NS_CORE_DEVICE_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include "neurosolve/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Usable GPUs (ns_cuda_device_count; 0 without CUDA, a GPU or a driver);
 * never fails and leaves no error detail behind. */
int ns_cuda_usable_devices(void);

/* The device a handle created now with option `requested` runs on:
 * requested itself (checked against the usable devices), or for
 * NS_DEVICE_CURRENT the calling thread's current device. NS_ERR_NO_DEVICE
 * names `who` and the device when it is not usable. */
ns_status ns_cuda_resolve_device(int32_t requested, const char *who, int *device);

/* The calling thread's current device (-1 without CUDA or on failure), and
 * making `device` current again (ignored when < 0): a handle's calls run on
 * its own device and leave the caller's current device as they found it. */
int ns_cuda_save_device(void);
void ns_cuda_restore_device(int device);

/* The calls of a handle on `device` (< 0: a CPU handle, nothing to do):
 * ns_cuda_enter_device makes it current and returns the caller's device,
 * which ns_cuda_leave_device makes current again. */
static inline int ns_cuda_enter_device(int device) {
    if (device < 0) return -1;
    const int caller = ns_cuda_save_device();
    if (caller != device) ns_cuda_restore_device(device);
    return caller;
}
static inline void ns_cuda_leave_device(int device, int caller) {
    if (device >= 0 && caller != device) ns_cuda_restore_device(caller);
}

/* Shared memory one block of `device` may opt in to [bytes]; 0 without CUDA. */
size_t ns_cuda_optin_shared(int device);

#ifdef __cplusplus
}
#endif
#endif
