/* A model's per-step path on the GPU's tree group, step by step or as a
 * replayed CUDA graph (sim/cuda/step_graph.h). */
#include <stdio.h>
#include <string.h>

#include "sim/cuda/step_graph.h"
#include "sim/policy.h"
#include "core/cuda_check.h"
#include "core/error.h"

ns_status ns_sim_gpu_step_phases(const ns_sim_t *sim, gpu_model *model, gpu_net *net, int64_t net_step,
                            const ns_sim_tree *tree, const ns_contract_dev *layout, const ns_sim_gpu_group *group,
                            const ns_sim_gpu_run *r1, cudaStream_t stream) {
    const cudaStream_t one[3] = {stream, stream, stream};
    const double tmid = ns_sim_half_step(r1->t0, r1->dt), tnew = ns_sim_half_step(tmid, r1->dt);
    ns_status st = NS_OK;
    /* NEURON's deliver_net_events at the start of the step */
    if (net && (st = ns_gpu_net_deliver(sim, net, model, net_step, stream)) != NS_OK) return st;
    if ((st = ns_gpu_model_currents(sim, model, group->rhs, group->d, tmid, stream)) != NS_OK) return st;
    NS_CUDA_TRY(ns_sim_launch_tree(tree, layout, group, r1, one));
    if ((st = ns_gpu_model_states(sim, model, tnew, stream)) != NS_OK) return st;
    /* the detectors after the states, as the CPU loop */
    if (net && (st = ns_gpu_net_detect(net, group->v, tnew, stream)) != NS_OK) return st;
    return NS_OK;
}

void ns_sim_step_graph_free(ns_sim_step_graph *sg) {
    if (!sg) return;
    cudaFree(sg->clock);
    sg->clock = NULL;
}

/* The capture of one step: the tree step and the fused launches read the
 * clock; *graph NULL (and sim->gpu_graph_why) where CUDA refused it. */
static ns_status capture(ns_sim_t *sim, ns_sim_step_graph *sg, gpu_model *model, const ns_sim_tree *tree,
                         const ns_contract_dev *layout, const ns_sim_gpu_group *group, const ns_sim_gpu_run *run,
                         cudaStream_t stream, cudaGraph_t *graph) {
    *graph = NULL;
    ns_sim_gpu_run r1 = *run;
    r1.steps = 1;
    r1.k0 = 0;
    r1.continued = 0;
    r1.preassembled = 1;
    r1.clock = sg->clock;
    cudaError_t e = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) {
        snprintf(sim->gpu_graph_why, sizeof sim->gpu_graph_why, "cudaStreamBeginCapture: %s", cudaGetErrorString(e));
        (void)cudaGetLastError();
        return NS_OK;
    }
    ns_gpu_model_clock(model, &sg->clock->tmid, &sg->clock->tnew);
    ns_status st = ns_sim_gpu_step_phases(sim, model, NULL, 0, tree, layout, group, &r1, stream);
    ns_gpu_model_clock(model, NULL, NULL);
    cudaError_t et = st == NS_OK ? ns_sim_launch_clock_tick(sg->clock, run->dt, stream) : cudaSuccess;
    e = cudaStreamEndCapture(stream, graph);
    if (st != NS_OK || et != cudaSuccess || e != cudaSuccess || !*graph) {
        /* a launch the capture refused: the part runs step by step (the launches' own errors show there) */
        snprintf(sim->gpu_graph_why, sizeof sim->gpu_graph_why, "%s", st != NS_OK ? ns_last_error()
                                               : et != cudaSuccess ? cudaGetErrorString(et)
                                               : e != cudaSuccess ? cudaGetErrorString(e)
                                                                  : "no graph");
        if (*graph) cudaGraphDestroy(*graph);
        *graph = NULL;
        (void)cudaGetLastError();
    }
    return NS_OK;
}

ns_status ns_sim_step_graph_part(ns_sim_t *sim, ns_sim_step_graph *sg, gpu_model *model, int network,
                                 const ns_sim_tree *tree, const ns_contract_dev *layout, const ns_sim_gpu_group *group,
                                 const ns_sim_gpu_run *run, cudaStream_t stream, int *done) {
    *done = 0;
    sim->gpu_graph = 0;
    sim->gpu_graph_why[0] = 0;
    if (!ns_sim_step_graph_rule((int)sim->options.gpu_mechanisms, network, ns_gpu_model_time_free(model), run->steps))
        return NS_OK;
    if (!sg->clock) NS_CUDA_TRY(cudaMalloc((void **)&sg->clock, sizeof *sg->clock));
    /* the part's first step, as the host loop counts it */
    const ns_sim_gpu_clock c0 = {0, run->t0, ns_sim_half_step(run->t0, run->dt),
                                 ns_sim_half_step(ns_sim_half_step(run->t0, run->dt), run->dt)};
    NS_CUDA_TRY(cudaMemcpyAsync(sg->clock, &c0, sizeof c0, cudaMemcpyHostToDevice, stream));
    NS_CUDA_TRY(cudaStreamSynchronize(stream)); /* c0 is on this stack */
    cudaGraph_t graph = NULL;
    ns_status st = capture(sim, sg, model, tree, layout, group, run, stream, &graph);
    if (st != NS_OK || !graph) return st;
    cudaGraphExec_t exec = NULL;
    cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    if (e != cudaSuccess) {
        snprintf(sim->gpu_graph_why, sizeof sim->gpu_graph_why, "cudaGraphInstantiate: %s", cudaGetErrorString(e));
        (void)cudaGetLastError();
        return NS_OK;
    }
    for (int64_t k = 0; k < run->steps && e == cudaSuccess; ++k) e = cudaGraphLaunch(exec, stream);
    cudaGraphExecDestroy(exec); /* after the launches it was given: CUDA keeps it until they finish */
    if (e != cudaSuccess) return ns_cuda_status(e, "cudaGraphLaunch", __FILE__, __LINE__);
    sim->gpu_graph = 1;
    *done = 1;
    return NS_OK;
}
