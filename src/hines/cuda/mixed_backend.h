/* Private: the CUDA backend's mixed-shape implementation (issue 5):
 * batches of several shapes with the one-thread-per-cell kernels, and the
 * fine-grained and branch-level methods on any batch. The registry
 * (src/backends.c) routes solvers to it; its ops are declared in
 * hines/batch_impl.h. */
#ifndef NS_HINES_CUDA_MIXED_BACKEND_H
#define NS_HINES_CUDA_MIXED_BACKEND_H

#include "hines/batch_impl.h"

#endif
