/* Private: the CUDA backend's `tree` method (contract_backend.c) and the
 * layout planning that the GPU simulation loop shares with it. */
#ifndef NS_HINES_CUDA_TREE_BACKEND_H
#define NS_HINES_CUDA_TREE_BACKEND_H

#include "hines/batch_impl.h"
#include "hines/contract.h"

/* Plan every shape of a batch and lay the batch out in groups (sizes in
 * nodes; src/hines/contract.h). */
ns_status ns_tree_layout_for(const ns_batch_t *batch, int32_t group_nodes, int32_t mid_nodes, int32_t big_nodes,
                             int32_t min_groups, int32_t max_cells, int32_t tail_nodes, ns_contract_layout *layout);
/* The same with the group sizes the kernels use on `device`. */
ns_status ns_tree_layout_device(int device, const ns_batch_t *batch, ns_contract_layout *layout);

#endif
