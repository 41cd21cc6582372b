// The tree-contraction sweeps of one group by one CUDA block (the method:
// src/hines/contract.h). Shared by the solver kernel (contract_kernel.cu)
// and the GPU simulation loop (src/cable/cuda/sim_tree.cu): one
// implementation of the solve.
#ifndef NS_HINES_CUDA_CONTRACT_SWEEPS_CUH
#define NS_HINES_CUDA_CONTRACT_SWEEPS_CUH

#include "hines/cuda/contract_cuda.h"

// Eliminate and back-substitute the group whose template is `tmpl`. D, R,
// U, W, Lo address the group's node 0 (shared or device memory): d, rhs, up
// (holding b on entry), down (holding a) and lo (scratch). R becomes x; D,
// U, W, Lo are left factorised. A zero or non-finite pivot is recorded in
// *bad as (round << 40) | (base + node). Starts and ends with a barrier of
// the whole block (every thread must call it).
__device__ __forceinline__ void ns_contract_sweeps(const ns_contract_dev &p, int32_t tmpl, double *D, double *R,
                                                   double *U, double *W, double *Lo, int64_t base,
                                                   unsigned long long *bad) {
    const int32_t rounds = p.t_rounds[tmpl];
    const int32_t *rt = p.rt + p.t_rt[tmpl];
    const int4 *fwd = reinterpret_cast<const int4 *>(p.fwd);
    const int4 *bwd = reinterpret_cast<const int4 *>(p.bwd);
    __syncthreads();
    for (int32_t r = 0; r < rounds; ++r) {
        const int32_t t1 = rt[r + 1];
        for (int32_t t = rt[r] + (int32_t)threadIdx.x; t < t1; t += (int32_t)blockDim.x) {
            const int4 f = __ldg(fwd + t);  // k, first, count, pu
            double dk = D[f.x], rk = R[f.x];
            for (int32_t q = f.y; q < f.y + f.z; ++q) {
                const int32_t u = __ldg(p.list + q);
                const double g = W[u] / D[u];
                dk -= g * U[u];
                rk -= g * R[u];
            }
            if (f.w >= 0) {
                const int32_t u = f.w;
                const double inv = 1.0 / D[u];
                const double wk = W[f.x], g = U[f.x] * inv;
                dk -= g * wk;
                rk -= g * R[u];
                Lo[u] = wk;
                W[f.x] = -W[u] * wk * inv;
                U[f.x] = -g * U[u];
            }
            D[f.x] = dk;
            R[f.x] = rk;
        }
        __syncthreads();
    }
    const int32_t *rb = rt + rounds + 1;
    for (int32_t r = rounds; r >= 0; --r) {
        const int32_t t1 = rb[r + 1];
        for (int32_t t = rb[r] + (int32_t)threadIdx.x; t < t1; t += (int32_t)blockDim.x) {
            const int4 w = __ldg(bwd + t);  // u, p, c
            const double du = D[w.x];
            if (du == 0.0 || !isfinite(du))
                atomicMin(bad, ((unsigned long long)r << 40) | (unsigned long long)(base + w.x));
            double x = R[w.x];
            if (w.y >= 0) x -= U[w.x] * R[w.y];
            if (w.z >= 0) x -= Lo[w.x] * R[w.z];
            R[w.x] = x / du;
        }
        __syncthreads();
    }
}

#endif
