// The step graph's clock (sim/cuda/step_graph.h): its last launch moves it
// to the next step, with the host loop's arithmetic (ns_sim_half_step).
#include "sim/cuda/step_graph.h"

namespace {

__global__ void clock_tick(ns_sim_gpu_clock *c, double dt) {
    c->k += 1;
    c->t = c->tnew;
    c->tmid = c->t + .5 * dt;
    c->tnew = c->tmid + .5 * dt;
}

}  // namespace

extern "C" cudaError_t ns_sim_launch_clock_tick(ns_sim_gpu_clock *clock, double dt, cudaStream_t stream) {
    clock_tick<<<1, 1, 0, stream>>>(clock, dt);
    return cudaGetLastError();
}
