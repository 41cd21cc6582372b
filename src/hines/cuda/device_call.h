/* Private: the Hines solver's device calls on core's shared checks and
 * pivot key (core/cuda/device_args.h): the four arrays a, b, d, rhs and the
 * stream checked against the solver's GPU, the pivot key read by wait. */
#ifndef NS_HINES_CUDA_DEVICE_CALL_H
#define NS_HINES_CUDA_DEVICE_CALL_H

#include "core/cuda/device_args.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ns_device_call {
    int device;
    ns_device_key key;
} ns_device_call;

ns_status ns_device_call_init(ns_device_call *call, int device);
void ns_device_call_free(ns_device_call *call);
/* a, b, d, rhs: device memory of call->device holding `bytes` each; q NULL or a stream of that GPU */
ns_status ns_device_call_check(const ns_device_call *call, const char *who, const void *const arrays[4],
                               size_t bytes, cudaStream_t q);
static inline ns_status ns_device_call_queue(ns_device_call *call, unsigned long long *bad, cudaStream_t q) {
    return ns_device_key_queue(&call->key, bad, q);
}
static inline ns_status ns_device_call_wait(ns_device_call *call, unsigned long long *key, int *had) {
    return ns_device_key_wait(&call->key, key, had);
}

#ifdef __cplusplus
}
#endif
#endif
