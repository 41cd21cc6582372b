/* Private: the GPU simulation loops' decisions that need the device or the
 * groups (sim/cuda/policy.c; the CPU loop's: sim/cpu/policy.h; the pure
 * rules they apply, ns_sim_auto_loop and friends: sim/policy.h): the loop of
 * every shape and the size of the tree loop's small groups
 * (docs/simulation.md, "GPU loops"). */
#ifndef NS_SIM_CUDA_POLICY_H
#define NS_SIM_CUDA_POLICY_H

#include <stdint.h>

#include "sim/cuda/step.h"
#include "sim/policy.h"

/* Nodes per small group of the tree loop at most (a block of
 * NS_SIM_TREE_THREADS threads with the group's d, rhs and solve scratch in
 * shared memory: 40 bytes per node, two blocks per SM), except to fill one
 * wave (ns_gpu_tree_group_cap): then up to what TREE_GROUPS_PER_SM blocks per SM
 * hold in the device's shared memory. */
#define TREE_GROUP_NODES 2048
#define TREE_GROUPS_PER_SM 2

enum { LOOP_ONCHIP = NS_SIM_LOOP_ONCHIP, LOOP_TREE = NS_SIM_LOOP_TREE };

/* The loop of every shape (LOOP_*), the onchip preparations of those that
 * run onchip (oc[k]), and the rule: docs/simulation.md, "GPU loops". A
 * model runs onchip where the onchip kernel has its mechanisms
 * (ns_sim_fused_onchip_ok) and not `tree_only` (a network: ns_gpu_init). */
ns_status ns_gpu_choose_loops(ns_sim_t *sim, const int64_t *cells, int sms, int tree_only, int *loop,
                              ns_sim_onchip_group *oc);
/* The most nodes per small group of the tree loop for its `cells` cells
 * (cell_id: their global numbers, in the group's order): sim/cuda/policy.c. */
int32_t ns_gpu_tree_group_cap(const ns_sim_t *sim, const int64_t *cell_id, int64_t cells, int32_t shared_nodes,
                              int32_t group_max, int64_t slots);

#endif
