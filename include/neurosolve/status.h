/* neurosolve: status codes and error details.
 *
 * Every fallible call returns an ns_status: NS_OK (0) on success, a stable
 * negative code otherwise. The code says what kind of failure it was;
 * ns_last_error() gives the detail of the most recent failure on the calling
 * thread (for example "cell.swc:41: parent 17 does not exist").
 * The library never prints, exits or aborts. */
#ifndef NEUROSOLVE_STATUS_H
#define NEUROSOLVE_STATUS_H

#include "neurosolve/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The numeric values are part of the ABI: never renumber, only append. */
typedef enum ns_status {
    NS_OK = 0,
    NS_ERR_INVALID_ARGUMENT = -1, /* NULL pointer, negative size, unknown enum value */
    NS_ERR_OUT_OF_MEMORY = -2,    /* host allocation failed */
    NS_ERR_IO = -3,               /* file cannot be opened, read or written */
    NS_ERR_PARSE = -4,            /* malformed file content */
    NS_ERR_TOPOLOGY = -5,         /* not a tree: missing parent, cycle, duplicate id, bad order */
    NS_ERR_SINGULAR = -6,         /* zero (or non-finite) pivot during a solve */
    NS_ERR_NOT_FINITE = -7,       /* NaN or Inf in an input or state */
    NS_ERR_UNSUPPORTED = -8,      /* method or backend not available in this build or for this input */
    NS_ERR_NO_DEVICE = -9,        /* no usable GPU */
    NS_ERR_CUDA = -10,            /* a CUDA runtime call failed; detail carries CUDA's message */
    NS_ERR_CUSPARSE = -11,        /* a cuSPARSE call failed */
    NS_ERR_SIZE = -12,            /* sizes, shapes or strides are inconsistent */
    NS_ERR_EMPTY = -13,           /* empty input (no data lines, zero cells) */
    NS_ERR_DEVICE_MEMORY = -14,   /* device allocation failed */
    NS_ERR_INTERNAL = -15,        /* a bug in neurosolve: please report it */
    NS_ERR_MECHANISM = -16        /* a mechanism's own code stopped the run (NEURON's hoc_execerror) */
} ns_status;

/* A short constant description of a status code ("parse error", ...). */
NS_API const char *ns_status_string(ns_status status);

/* Detail of the most recent failure on this thread; "" when there is none.
 * The pointer stays valid until the next neurosolve call on this thread. */
NS_API const char *ns_last_error(void);

/* Forget the detail of the last failure on this thread. */
NS_API void ns_clear_error(void);

#ifdef __cplusplus
}
#endif
#endif
