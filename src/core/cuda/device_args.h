/* Private (core, CUDA builds): what a device-array call of any family
 * needs around its launches — the argument checks (device memory of the
 * handle's GPU holding the array, a stream of that GPU) and the pivot key
 * that follows the work on the caller's stream into pinned host memory,
 * read by the family's wait call. Used by the tridiagonal solvers and,
 * through hines/cuda/device_call.h, by the Hines solvers. */
#ifndef NS_CORE_CUDA_DEVICE_ARGS_H
#define NS_CORE_CUDA_DEVICE_ARGS_H

#include <stddef.h>
#include <cuda_runtime_api.h>
#include "neurosolve/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* NS_OK when p is device (or managed) memory of `device` whose allocation
 * holds `bytes` from p on; else NS_ERR_INVALID_ARGUMENT "who: name ...". */
ns_status ns_device_args_pointer(int device, const char *who, const void *p, size_t bytes, const char *name);

/* NS_OK when q is NULL (the legacy default stream of the current device,
 * which the caller has made `device`) or a stream of `device`. */
ns_status ns_device_args_stream(int device, const char *who, cudaStream_t q);

/* A key (device, 64 bits) copied behind the queued work into pinned host
 * memory, with an event that says when it has arrived. */
typedef struct ns_device_key {
    unsigned long long *host; /* pinned */
    cudaEvent_t done;
    int pending;
} ns_device_key;

ns_status ns_device_key_init(ns_device_key *k);
void ns_device_key_free(ns_device_key *k);
/* Queue the copy of *src (device) behind the work on q. */
ns_status ns_device_key_queue(ns_device_key *k, const unsigned long long *src, cudaStream_t q);
/* Make q (another stream) wait for the queued copy, if any. */
ns_status ns_device_key_order(const ns_device_key *k, cudaStream_t q);
/* Wait for the queued copy; *key gets it (*had = 0 and *key untouched when
 * nothing was pending). */
ns_status ns_device_key_wait(ns_device_key *k, unsigned long long *key, int *had);

#ifdef __cplusplus
}
#endif
#endif
