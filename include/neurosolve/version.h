/* neurosolve: version and build information. */
#ifndef NEUROSOLVE_VERSION_H
#define NEUROSOLVE_VERSION_H

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

#ifdef __cplusplus
}
#endif
#endif
