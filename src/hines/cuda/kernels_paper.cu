// The cuHinesBatch kernels (Valero-Lara et al., ICCS 2017, Algorithm 1):
// one thread solves one cell, in NEURON's convention
//     d[i] x[i] + b[i] x[p] = rhs[i], row p holds a[i] x[i].
// Flat, Full-Interleaved and Block-Interleaved differ only in where element
// i of cell c lives (hines_kernels.h): base(c) + i * G, so one kernel serves
// the three layouts; Block-Shared keeps its group's rhs in shared memory.
#include "core/cuda_check.h"
#include <cuda_runtime.h>

#include "hines/cuda/hines_kernels.h"

namespace {

// Zero or non-finite: the reference's bad_pivot (solve_cpu.c).
__device__ __forceinline__ bool bad_pivot(double p) { return p == 0.0 || !isfinite(p); }

__device__ __forceinline__ void report(unsigned long long *bad, long long cell, int index) {
    atomicMin(bad, ns_pivot_key(cell, index));
}

__global__ void strided_kernel(int n, const int *__restrict__ parent, const double *__restrict__ a,
                               const double *__restrict__ b, double *__restrict__ d,
                               double *__restrict__ rhs, long long n_cells, long long group,
                               long long first_cell, unsigned long long *bad) {
    const long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n_cells) return;
    const long long base = (c / group) * group * n + (c % group);
    const long long s = group;  // distance between consecutive elements of a cell
    // triang: from the leaves (highest index) towards the root.
    for (int i = n - 1; i >= 1; --i) {
        const double di = d[base + i * s];
        if (bad_pivot(di)) {
            report(bad, first_cell + c, i);
            return;
        }
        const double f = a[base + i * s] / di;
        const long long p = base + (long long)parent[i] * s;
        d[p] -= f * b[base + i * s];
        rhs[p] -= f * rhs[base + i * s];
    }
    if (bad_pivot(d[base])) {
        report(bad, first_cell + c, 0);
        return;
    }
    // bksub: the root, then each node from its parent's solution.
    rhs[base] /= d[base];
    for (int i = 1; i < n; ++i) {
        const long long k = base + i * s;
        rhs[k] = (rhs[k] - b[k] * rhs[base + (long long)parent[i] * s]) / d[k];
    }
}

// One CUDA block of BS threads per group of BS cells. The group's rhs is a
// contiguous BS * n range of the Block-Interleaved array, copied whole into
// shared memory (coalesced), solved there and copied back.
__global__ void block_shared_kernel(int n, const int *__restrict__ parent,
                                    const double *__restrict__ a, const double *__restrict__ b,
                                    double *__restrict__ d, double *__restrict__ rhs,
                                    long long n_cells, int bs, long long first_cell,
                                    unsigned long long *bad) {
    extern __shared__ double srhs[];  // [n][bs]
    const long long g0 = (long long)blockIdx.x * bs;  // first cell of the group
    const long long gbase = g0 * n;                  // the group's offset in the arrays
    const int lane = threadIdx.x;
    const long long left = n_cells - g0;
    const int valid = left < bs ? (int)left : bs;  // cells of the (last) group that exist
    const long long total = (long long)bs * n;
    // Thread `lane` copies every element of cell `lane` (j % bs == lane);
    // threads of missing cells in the last group copy nothing.
    if (lane < valid)
        for (long long j = lane; j < total; j += bs) srhs[j] = rhs[gbase + j];
    __syncthreads();
    if (lane < valid) {
        const long long base = gbase + lane;
        bool ok = true;
        for (int i = n - 1; i >= 1; --i) {
            const double di = d[base + (long long)i * bs];
            if (bad_pivot(di)) {
                report(bad, first_cell + g0 + lane, i);
                ok = false;
                break;
            }
            const double f = a[base + (long long)i * bs] / di;
            const int p = parent[i];
            d[base + (long long)p * bs] -= f * b[base + (long long)i * bs];
            srhs[p * bs + lane] -= f * srhs[i * bs + lane];
        }
        if (ok && bad_pivot(d[base])) {
            report(bad, first_cell + g0 + lane, 0);
            ok = false;
        }
        if (ok) {
            srhs[lane] /= d[base];
            for (int i = 1; i < n; ++i)
                srhs[i * bs + lane] = (srhs[i * bs + lane] -
                                       b[base + (long long)i * bs] * srhs[parent[i] * bs + lane]) /
                                      d[base + (long long)i * bs];
        }
    }
    __syncthreads();
    if (lane < valid)
        for (long long j = lane; j < total; j += bs) rhs[gbase + j] = srhs[j];
}

}  // namespace

extern "C" cudaError_t ns_hines_launch_strided(int32_t n, const int32_t *parent, const double *a,
                                               const double *b, double *d, double *rhs,
                                               int64_t n_cells, int64_t group, int64_t first_cell,
                                               int threads, unsigned long long *bad,
                                               cudaStream_t stream) {
    if (n_cells <= 0) return cudaSuccess;
    if (threads <= 0) threads = 128;
    const long long blocks = (n_cells + threads - 1) / threads;
    strided_kernel<<<(unsigned)blocks, threads, 0, stream>>>(n, parent, a, b, d, rhs, n_cells,
                                                             group, first_cell, bad);
    return cudaGetLastError();
}

extern "C" cudaError_t ns_hines_block_shared_setup(size_t bytes) {
    return ns_cuda_allow_shared((const void *)block_shared_kernel, bytes);
}

extern "C" cudaError_t ns_hines_launch_block_shared(int32_t n, const int32_t *parent,
                                                    const double *a, const double *b, double *d,
                                                    double *rhs, int64_t n_cells,
                                                    int32_t block_size, int64_t first_cell,
                                                    unsigned long long *bad, cudaStream_t stream) {
    if (n_cells <= 0) return cudaSuccess;
    const long long groups = (n_cells + block_size - 1) / block_size;
    const size_t smem = (size_t)block_size * (size_t)n * sizeof(double);
    block_shared_kernel<<<(unsigned)groups, block_size, smem, stream>>>(
        n, parent, a, b, d, rhs, n_cells, block_size, first_cell, bad);
    return cudaGetLastError();
}
