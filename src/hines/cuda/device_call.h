/* Private: what every CUDA implementation of the Hines solver shares for
 * ns_hines_solver_solve_device / ns_hines_solver_wait: the argument checks
 * (device memory of the solver's GPU, a stream of that GPU), and the pivot
 * key that follows the solve on the caller's stream into pinned host
 * memory, read by wait. */
#ifndef NS_HINES_CUDA_DEVICE_CALL_H
#define NS_HINES_CUDA_DEVICE_CALL_H

#include <cuda_runtime_api.h>
#include "neurosolve/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ns_device_call {
    int device;
    unsigned long long *key_host; /* pinned */
    cudaEvent_t done;
    int pending;
} ns_device_call;

ns_status ns_device_call_init(ns_device_call *call, int device);
void ns_device_call_free(ns_device_call *call);

/* a, b, d, rhs must be device (or managed) memory of call->device holding
 * `bytes` each from the pointer on; q NULL or a stream of call->device. */
ns_status ns_device_call_check(const ns_device_call *call, const char *who, const void *const arrays[4],
                               size_t bytes, cudaStream_t q);

/* Queue the copy of the pivot key `bad` (device) behind the solve on q. */
ns_status ns_device_call_queue(ns_device_call *call, const unsigned long long *bad, cudaStream_t q);

/* Wait for the last queued call; *key gets its pivot key (unchanged and
 * *had = 0 when nothing was pending). */
ns_status ns_device_call_wait(ns_device_call *call, unsigned long long *key, int *had);

#ifdef __cplusplus
}
#endif
#endif
