/* Private: the `auto` rule of the CUDA backend's Hines methods, a pure
 * function of the batch's shape and the device's shared memory, so that the
 * decision is unit-tested without a GPU (tests/test_policy.c). The rule
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

/* optin_shared: the shared memory one block may opt in to [bytes]. */
ns_hines_method ns_hines_cuda_auto(int32_t n_shapes, int64_t n_cells, int32_t max_size, size_t optin_shared);

#endif
