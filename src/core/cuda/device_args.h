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

/* The pivot key (device, 64 bits) of the calls queued on a caller's
 * stream since the last wait. A call costs the caller's stream nothing but
 * an event record: the key is copied only when wait is called (behind the
 * event, on a stream of the key's own), and wait then resets the device
 * slot to all ones (no failure), so that the next calls start clean. */
typedef struct ns_device_key {
    unsigned long long *host;      /* pinned */
    unsigned long long *src;       /* the device slot of the pending calls */
    cudaEvent_t done;              /* recorded behind the last queued call */
    cudaStream_t own;              /* non-blocking, for the copy and the reset at wait */
    int device;                    /* the GPU of src, done and own */
    int pending;
} ns_device_key;

/* On the current device. */
ns_status ns_device_key_init(ns_device_key *k);
void ns_device_key_free(ns_device_key *k);
/* Mark the work queued on q so far as writing its failures into *src. */
ns_status ns_device_key_queue(ns_device_key *k, unsigned long long *src, cudaStream_t q);
/* Make q (another stream) wait for the marked work, if any. */
ns_status ns_device_key_order(const ns_device_key *k, cudaStream_t q);
/* Wait for the marked work and read its key (*had = 0 and *key untouched
 * when nothing was pending); the slot is reset. The caller's current
 * device is kept. */
ns_status ns_device_key_wait(ns_device_key *k, unsigned long long *key, int *had);

#ifdef __cplusplus
}
#endif
#endif
