// The Nernst potential over a model's nodes where a mechanism writes the
// ion's concentration (sim/cuda/mechanisms.c): NEURON 9's
// nrn_nernst with its 2019 SI constants, the arithmetic of ns_mech_nernst.
#include "sim/cuda/mechanisms.h"

namespace {

__global__ void nernst_kernel(double *e, const double *ci, const double *co, const unsigned char *written, int64_t n,
                              int charge, double ktf) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || !written[i]) return;
    const double c_in = ci[i], c_out = co[i];
    e[i] = charge == 0 ? 0.0 : c_in <= 0.0 ? 1e6 : c_out <= 0.0 ? -1e6 : ktf / charge * log(c_out / c_in);
}

}  // namespace

extern "C" cudaError_t ns_sim_launch_nernst(double *e, const double *ci, const double *co, const unsigned char *written,
                                            int64_t n, int charge, double celsius, cudaStream_t stream) {
    if (n <= 0) return cudaSuccess;
    const double ktf = 1000. * 8.31446261815324 * (celsius + 273.15) / 96485.33212331001;
    const int threads = 256;
    nernst_kernel<<<(unsigned)((n + threads - 1) / threads), threads, 0, stream>>>(e, ci, co, written, n, charge, ktf);
    return cudaGetLastError();
}
