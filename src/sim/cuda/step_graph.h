/* Private: one step of a model's per-step path on the GPU's tree group (the
 * network's due events, the mechanisms' currents, the tree loop's step, the
 * states, the detectors), launched step by step, or captured once per part
 * as a CUDA graph and replayed (docs/simulation.md, "Models: the fused
 * loop"): the tree step and the library's fused launches read the step and
 * its times from a clock in device memory that the graph's last launch moves
 * on. The rule: sim/policy.h, ns_sim_step_graph_rule. */
#ifndef NS_SIM_CUDA_STEP_GRAPH_H
#define NS_SIM_CUDA_STEP_GRAPH_H

#include <stdint.h>
#include <cuda_runtime_api.h>

#include "sim/cuda/step.h"
#include "sim/cuda/mechanisms.h"
#include "sim/cuda/network.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One step from r1->t0 (r1: the tree step's run, one step, preassembled);
 * with a network (net not NULL) its events of interval step net_step first
 * and its detectors last. */
ns_status ns_sim_gpu_step_phases(const ns_sim_t *sim, gpu_model *model, gpu_net *net, int64_t net_step,
                            const ns_sim_tree *tree, const ns_contract_dev *layout, const ns_sim_gpu_group *group,
                            const ns_sim_gpu_run *r1, cudaStream_t stream);

/* The step graph of a simulation: its clock. Whether the last part ran as a
 * graph and why a capture was refused: sim->gpu_graph, gpu_graph_why. */
typedef struct ns_sim_step_graph {
    ns_sim_gpu_clock *clock; /* device */
} ns_sim_step_graph;

/* A part (run: its steps from run->t0, as gpu_advance gives the tree loop)
 * as one captured step replayed run->steps times, where the rule allows it;
 * *done 0 where not (the rule, or a refused capture: the caller launches
 * step by step). */
ns_status ns_sim_step_graph_part(ns_sim_t *sim, ns_sim_step_graph *sg, gpu_model *model, int network,
                                 const ns_sim_tree *tree, const ns_contract_dev *layout, const ns_sim_gpu_group *group,
                                 const ns_sim_gpu_run *run, cudaStream_t stream, int *done);
void ns_sim_step_graph_free(ns_sim_step_graph *sg);

/* The clock's move to the next step (step_graph.cu): k + 1, t its tnew, the next times. */
cudaError_t ns_sim_launch_clock_tick(ns_sim_gpu_clock *clock, double dt, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
