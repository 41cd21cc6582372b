/* neurosolve: version and build information. */
#ifndef NEUROSOLVE_VERSION_H
#define NEUROSOLVE_VERSION_H

#include "neurosolve/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NS_VERSION_MAJOR 0
#define NS_VERSION_MINOR 1
#define NS_VERSION_PATCH 0

/* "MAJOR.MINOR.PATCH" of the library that is linked. */
const char *ns_version(void);

/* Build options of the linked library. */
typedef struct ns_build_info {
    int cuda;             /* 1 when the CUDA backend was compiled in */
    int openmp;           /* 1 when OpenMP was compiled in */
    int openmp_threads;   /* threads an OpenMP region would use now (1 without OpenMP) */
    const char *build_type; /* CMake build type, e.g. "Release" */
} ns_build_info;

void ns_get_build_info(ns_build_info *info);

/* One CUDA device as the runtime reports it. */
typedef struct ns_device_info {
    char name[256];
    int major, minor;            /* compute capability */
    int multiprocessors;
    double global_memory_gib;    /* [GiB] */
    double free_memory_gib;      /* [GiB] free when queried */
    int shared_memory_per_block_optin; /* [bytes] the most a block can ask for */
    int l2_cache_bytes;          /* [bytes] */
} ns_device_info;

/* Number of usable CUDA devices. Returns NS_OK with *count = 0 when the
 * library has CUDA but the machine has no GPU or driver, and
 * NS_ERR_UNSUPPORTED when the library was built without CUDA. */
ns_status ns_cuda_device_count(int *count);
ns_status ns_cuda_device_info(int device, ns_device_info *info);

#ifdef __cplusplus
}
#endif
#endif
