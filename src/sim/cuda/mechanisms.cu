// The Nernst potential over a model's nodes where a mechanism writes the
// ion's concentration (sim/cuda/mechanisms.c): mechanism.h's
// ns_mech_nernst_ktf, the arithmetic of ns_mech_nernst.
#include "sim/cuda/mechanisms.h"

namespace {

__global__ void nernst_kernel(double *e, const double *ci, const double *co, const unsigned char *written, int64_t n,
                              int charge, double ktf) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || !written[i]) return;
    e[i] = ns_mech_nernst_ktf(ci[i], co[i], charge, ktf);
}

}  // namespace

extern "C" cudaError_t ns_sim_launch_nernst(double *e, const double *ci, const double *co, const unsigned char *written,
                                            int64_t n, int charge, double celsius, cudaStream_t stream) {
    if (n <= 0) return cudaSuccess;
    const double ktf = ns_mech_ktf(celsius);
    const int threads = 256;
    nernst_kernel<<<(unsigned)((n + threads - 1) / threads), threads, 0, stream>>>(e, ci, co, written, n, charge, ktf);
    return cudaGetLastError();
}
