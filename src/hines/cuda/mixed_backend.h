/* Private: the CUDA backend's mixed-shape path (issue 5). backend_cuda.c
 * hands a solver over to it (ns_hines_mixed_cuda_wants) by switching the
 * solver's ops table to this one before creating it. */
#ifndef NS_HINES_CUDA_MIXED_BACKEND_H
#define NS_HINES_CUDA_MIXED_BACKEND_H

#include "hines/batch_impl.h"

/* 1 if this solver belongs to the mixed path: a batch of several shapes, or
 * one of the methods only the mixed path implements (fine-grained,
 * branch-level). */
int ns_hines_mixed_cuda_wants(const ns_batch_t *batch, ns_hines_method method);
const ns_hines_backend_ops *ns_hines_mixed_cuda_backend(void);

#endif
