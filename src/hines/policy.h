/* Private: the `auto` rule of the CUDA backend's Hines methods, a pure
 * function of the batch's shape and the device's shared memory, so that the
 * decision is unit-tested without a GPU (tests/core/test_policy.c). The rule
 * and its measurements: docs/methods.md, "The auto rule". */
#ifndef NS_HINES_POLICY_H
#define NS_HINES_POLICY_H

#include <stddef.h>
#include <stdint.h>
#include "neurosolve/hines.h"

/* onchip for cells of at most this many compartments... */
#define NS_AUTO_ONCHIP_MAX_N 128
/* ...and for batches of at most this many cells */
#define NS_AUTO_ONCHIP_MAX_CELLS 25600

/* Below this many compartments the GPU is not chosen for host arrays: the
 * copies and launches cost more than the CPU needs for the whole batch
 * (docs/methods.md, "The auto rule"). */
#define NS_AUTO_GPU_MIN_COMPARTMENTS (1 << 20)

/* optin_shared: the shared memory one block may opt in to [bytes]. */
ns_hines_method ns_hines_cuda_auto(int32_t n_shapes, int64_t n_cells, int32_t max_size, size_t optin_shared);

/* What the one `auto` rule of the Hines family looks at. */
typedef struct ns_hines_auto_facts {
    ns_backend backend;     /* asked for: AUTO, CPU or CUDA */
    int gpus;               /* usable GPUs */
    int cpu_threads;        /* OpenMP threads the solve would get (1 without OpenMP) */
    int32_t n_shapes;
    int64_t n_cells;
    int64_t compartments;
    int32_t max_size;       /* largest shape */
    size_t optin_shared;    /* [bytes] of the GPU the solve would run on */
} ns_hines_auto_facts;

/* The family's auto rule: the backend (when AUTO), then the method. */
ns_hines_method ns_hines_auto(const ns_hines_auto_facts *facts);

#endif
