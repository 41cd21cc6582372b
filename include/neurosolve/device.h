/* neurosolve: CUDA devices as the library sees them. */
#ifndef NEUROSOLVE_DEVICE_H
#define NEUROSOLVE_DEVICE_H

#include "neurosolve/export.h"

#include <stddef.h>
#include "neurosolve/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One CUDA device as the runtime reports it. */
typedef struct ns_device_info {
    char name[256];
    int major, minor;            /* compute capability */
    int multiprocessors;
    double global_memory_gib;    /* [GiB] */
    double free_memory_gib;      /* [GiB] free when queried */
    int shared_memory_per_block_optin; /* [bytes] the most a block can ask for */
    int l2_cache_bytes;          /* [bytes] */
    int usable;                  /* 1 when the library uses it: this build's CUDA code runs on its
                                    compute capability, and so does every device before it */
} ns_device_info;

/* Number of usable CUDA devices: the visible devices in order, up to the
 * first whose compute capability this build has no code for (the
 * architectures compiled in: ns_build_info.cuda_architectures, docs/install.md);
 * every method with backend `auto` falls back to the CPU when it is 0.
 * Returns NS_OK with *count = 0 when the library has CUDA but the machine
 * has no GPU or driver, and NS_ERR_UNSUPPORTED when the library was built
 * without CUDA. ns_cuda_device_info describes every visible device, usable
 * or not. */
NS_API ns_status ns_cuda_device_count(int *count);
NS_API ns_status ns_cuda_device_info(int device, ns_device_info *info);

/* Device-to-device copy bandwidth of `device` [GB/s, 1e9 bytes/s], counting
 * bytes read plus bytes written, from cudaMemcpy of `bytes` (>= 1 GiB for
 * the benchmarks' ceiling; less if the device lacks the memory): the median
 * of `repeats` copies after a warm-up, timed with CUDA events. This is the
 * ceiling every GPU benchmark reports against (BENCHMARKING.md). */
NS_API ns_status ns_cuda_copy_bandwidth(int device, size_t bytes, int repeats, double *gb_per_s);

#ifdef __cplusplus
}
#endif
#endif
