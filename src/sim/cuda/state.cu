/* The simulation state between a group's own layout and the caller's Flat
 * array (ns_sim_read_var / ns_sim_write_var): one thread per compartment
 * of the group, through the group's map from its layout to Flat indexes
 * (sim/cuda/layout.c builds it once, on the first call). */
#include "sim/cuda/step.h"

#define STATE_THREADS 256

__global__ void sim_state_gather(const double *__restrict__ state, const int64_t *__restrict__ flat_of, int64_t count,
                                 double *__restrict__ flat) {
    const int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (p < count) flat[flat_of[p]] = state[p];
}

__global__ void sim_state_scatter(double *__restrict__ state, const int64_t *__restrict__ flat_of, int64_t count,
                                  const double *__restrict__ flat) {
    const int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (p < count) state[p] = flat[flat_of[p]];
}

extern "C" cudaError_t ns_sim_launch_state_copy(double *state, const int64_t *flat_of, int64_t count, double *flat,
                                                int to_flat, cudaStream_t stream) {
    if (count <= 0) return cudaSuccess;
    const unsigned blocks = (unsigned)((count + STATE_THREADS - 1) / STATE_THREADS);
    if (to_flat) sim_state_gather<<<blocks, STATE_THREADS, 0, stream>>>(state, flat_of, count, flat);
    else sim_state_scatter<<<blocks, STATE_THREADS, 0, stream>>>(state, flat_of, count, flat);
    return cudaGetLastError();
}
