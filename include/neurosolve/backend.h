/* neurosolve: the backend layer every family shares (core).
 *
 * A backend is where work runs (the CPU, CUDA GPUs). Each family of work
 * (Hines solves, tridiagonal solves, the cable simulation, LiFE) has its
 * methods; every method runs on exactly one backend, and one `auto` policy
 * per family picks a method when the caller asks for NS_*_AUTO. The
 * implementations of every family are registered in one table
 * (src/core/registry.c); ns_backend_query and ns_method_available answer
 * from it, so a caller can ask what this build and this machine can run
 * before creating anything (docs/architecture.md).
 *
 * Devices: every options struct that can run on a GPU has an int32_t
 * `device` field, a CUDA device ordinal or NS_DEVICE_CURRENT (the default):
 * the device current on the calling thread when the handle is created
 * (cudaSetDevice's convention, what a simulator that owns its device
 * expects). A handle keeps its device for life; every call makes it
 * current for its own work and restores the caller's current device. */
#ifndef NEUROSOLVE_BACKEND_H
#define NEUROSOLVE_BACKEND_H

#include "neurosolve/export.h"

#include <stdint.h>
#include "neurosolve/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ns_backend {
    NS_BACKEND_AUTO = 0, /* the family's auto policy decides */
    NS_BACKEND_CPU = 1,
    NS_BACKEND_CUDA = 2
} ns_backend;
#define NS_BACKEND_COUNT 3

/* The families of work. Method values are the family's own enum
 * (ns_hines_method for Hines and the simulation, ns_tridiag_method,
 * ns_life_variant for LiFE's products). */
typedef enum ns_family {
    NS_FAMILY_HINES = 0,
    NS_FAMILY_TRIDIAG = 1,
    NS_FAMILY_SIM = 2,
    NS_FAMILY_LIFE = 3
} ns_family;
#define NS_FAMILY_COUNT 4

/* A CUDA device ordinal, or this: the device current on the calling thread
 * when the handle is created. */
#define NS_DEVICE_CURRENT (-1)

NS_API const char *ns_backend_name(ns_backend backend); /* "auto", "cpu", "cuda" */
NS_API ns_status ns_backend_from_name(const char *name, ns_backend *backend);
NS_API const char *ns_family_name(ns_family family);    /* "hines", "tridiag", "sim", "life" */

/* What a backend offers here: compiled into this library, and the devices
 * it can use now (the CPU: 1 when compiled, with its OpenMP threads; CUDA:
 * the usable GPUs, ns_cuda_device_count). */
typedef struct ns_backend_info {
    ns_backend backend;
    int compiled;      /* 1: this build has the backend */
    int devices;       /* usable devices (0: the backend cannot run here) */
    int threads;       /* CPU: OpenMP threads (1 without OpenMP); CUDA: 0 */
} ns_backend_info;

NS_API ns_status ns_backend_query(ns_backend backend, ns_backend_info *info);

/* The methods of `family` that run on `backend` in this build (compiled
 * in, whether or not a device is present now), in the family's enum
 * values, AUTO excluded. Writes at most `capacity` into `methods` (which
 * may be NULL when capacity is 0) and returns how many there are. */
NS_API int32_t ns_backend_methods(ns_backend backend, ns_family family, int32_t *methods, int32_t capacity);

/* NS_OK when `method` of `family` can run here now; otherwise the status a
 * create call would give (NS_ERR_UNSUPPORTED: not in this build or not a
 * method of the family; NS_ERR_NO_DEVICE: no usable GPU), with the reason
 * in ns_last_error(). */
NS_API ns_status ns_method_available(ns_family family, int32_t method);

/* Timings of the last call of a solver [ms]; -1 where not applicable. */
typedef struct ns_solve_timing {
    double upload_ms;    /* host -> device copies */
    double layout_ms;    /* Flat -> method layout and back, on the device */
    double kernel_ms;    /* the solve itself */
    double download_ms;  /* device -> host copies */
    double total_ms;
} ns_solve_timing;

#ifdef __cplusplus
}
#endif
#endif
