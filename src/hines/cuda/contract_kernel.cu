// The solver's tree-contraction kernels (src/hines/contract.h): one block
// per group; small groups copy their image into shared memory, big cells
// work in device memory (L2-resident) with a block of 1024 threads.
#include "core/cuda_check.h"
#include "hines/cuda/contract_sweeps.cuh"

namespace {

__global__ void __launch_bounds__(NS_CONTRACT_SMALL_THREADS)
    contract_small(ns_contract_dev p, const int32_t *__restrict__ list, const double *__restrict__ a,
                   const double *__restrict__ b, double *d, double *rhs, unsigned long long *bad) {
    extern __shared__ double sm[];
    const int32_t g = list[blockIdx.x];
    const int32_t tmpl = p.g_tmpl[g], n = p.t_nodes[tmpl];
    const int64_t base = p.g_base[g];
    double *D = sm, *R = D + n, *U = R + n, *W = U + n, *Lo = W + n;
    for (int32_t i = threadIdx.x; i < n; i += blockDim.x) {
        D[i] = d[base + i];
        R[i] = rhs[base + i];
        U[i] = __ldg(b + base + i);
        W[i] = __ldg(a + base + i);
    }
    ns_contract_sweeps(ns_block_team(), p, tmpl, D, R, U, W, Lo, base, bad);
    for (int32_t i = threadIdx.x; i < n; i += blockDim.x) __stcs(rhs + base + i, R[i]);
}

// A big cell: one block (Team = ns_block_team) or a cluster of `blocks`
// blocks (ns_cluster_team) per cell.
template <class Team>
__global__ void __launch_bounds__(NS_CONTRACT_BIG_THREADS)
    contract_big(ns_contract_dev p, int32_t blocks, const double *__restrict__ a, const double *__restrict__ b,
                 double *d, double *rhs, double *scratch, unsigned long long *bad) {
    extern __shared__ double tail[];
    const Team tm;
    const int32_t g = p.big[blockIdx.x / blocks];
    const int32_t tmpl = p.g_tmpl[g], n = p.t_nodes[tmpl];
    const int64_t base = p.g_base[g];
    double *U = scratch + 3 * p.g_scratch[g], *W = U + n, *Lo = W + n;
    for (int32_t i = tm.tid(); i < n; i += tm.size()) {
        U[i] = __ldg(b + base + i);
        W[i] = __ldg(a + base + i);
    }
    ns_contract_sweeps(tm, p, tmpl, d + base, rhs + base, U, W, Lo, base, bad, tail);
}

}  // namespace

extern "C" cudaError_t ns_contract_setup(size_t shared_bytes) {
    cudaError_t e = ns_cuda_allow_shared((const void *)contract_small, shared_bytes);
    if (e != cudaSuccess) return e;
    e = ns_cuda_allow_shared((const void *)contract_big<ns_block_team>, shared_bytes);
    if (e != cudaSuccess) return e;
    e = ns_cuda_allow_shared((const void *)contract_big<ns_cluster_team>, shared_bytes);
    if (e != cudaSuccess) return e;
    return cudaFuncSetAttribute(contract_small, cudaFuncAttributePreferredSharedMemoryCarveout,
                                cudaSharedmemCarveoutMaxShared);
}

extern "C" cudaError_t ns_contract_launch(const ns_contract_dev *dev, const double *a, const double *b, double *d,
                                          double *rhs, double *scratch, unsigned long long *bad,
                                          cudaStream_t stream, cudaStream_t side, cudaEvent_t fork,
                                          cudaEvent_t join) {
    cudaError_t e;
    const int apart = dev->n_medium + dev->n_large + dev->n_big > 0 && dev->n_small > 0;
    cudaStream_t q = stream;
    if (apart) {
        if ((e = cudaEventRecord(fork, stream)) != cudaSuccess) return e;
        if ((e = cudaStreamWaitEvent(side, fork, 0)) != cudaSuccess) return e;
        q = side;
    }
    if (dev->n_big > 0) {
        const size_t tail = ns_contract_shared_bytes(dev->max_tail_nodes);
        if (dev->cluster <= 1) {
            contract_big<ns_block_team><<<(unsigned)dev->n_big, NS_CONTRACT_BIG_THREADS, tail, q>>>(
                *dev, 1, a, b, d, rhs, scratch, bad);
            e = cudaGetLastError();
        } else {
            cudaLaunchAttribute attr;
            const cudaLaunchConfig_t cfg = ns_contract_cluster_config(dev, NS_CONTRACT_BIG_THREADS, tail, q, &attr);
            e = cudaLaunchKernelEx(&cfg, contract_big<ns_cluster_team>, *dev, (int32_t)dev->cluster, a, b, d, rhs,
                                   scratch, bad);
        }
        if (e != cudaSuccess) return e;
    }
    if (dev->n_large > 0) {
        contract_small<<<(unsigned)dev->n_large, NS_CONTRACT_SMALL_THREADS,
                         ns_contract_shared_bytes(dev->max_large_nodes), q>>>(*dev, dev->large, a, b, d, rhs, bad);
        if ((e = cudaGetLastError()) != cudaSuccess) return e;
    }
    if (dev->n_medium > 0) {
        contract_small<<<(unsigned)dev->n_medium, NS_CONTRACT_SMALL_THREADS,
                         ns_contract_shared_bytes(dev->max_medium_nodes), q>>>(*dev, dev->medium, a, b, d, rhs, bad);
        if ((e = cudaGetLastError()) != cudaSuccess) return e;
    }
    if (apart && (e = cudaEventRecord(join, side)) != cudaSuccess) return e;
    if (dev->n_small > 0) {
        contract_small<<<(unsigned)dev->n_small, NS_CONTRACT_SMALL_THREADS,
                         ns_contract_shared_bytes(dev->max_small_nodes), stream>>>(*dev, dev->small, a, b, d, rhs, bad);
        if ((e = cudaGetLastError()) != cudaSuccess) return e;
    }
    if (apart) return cudaStreamWaitEvent(stream, join, 0);
    return cudaSuccess;
}
