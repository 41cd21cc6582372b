// The on-chip kernel: one warp per cell on the Flat layout. The warp copies
// the cell's a, b, d, rhs into shared memory (asynchronous, coalesced,
// 16-byte copies where the alignment allows), solves there with one lane per
// run (unbranched path) following a schedule built once per shape on the
// host (onchip_plan.c), and writes x back coalesced. Device memory sees 32
// bytes read and 8 bytes written per compartment: the 40-byte floor. The
// factorised diagonal stays on chip (d is not written back).
//
// Backward sweep (triang), by height: a lane takes a run whose child runs
// are done, folds the children into the run's last node, then walks to the
// run's first node carrying d and rhs in registers. It stores 1/d (so the
// forward sweep multiplies) and the reduced rhs.
// Forward sweep (bksub), by depth: a lane takes a run whose parent node is
// solved and walks from its first node outwards carrying x in a register.
// __syncwarp() separates the steps: lanes never rely on implicit lockstep.
#include <cuda_pipeline.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "hines/cuda/hines_kernels.h"

namespace {

constexpr int kLanes = NS_ONCHIP_LANES;

__device__ __forceinline__ bool bad_pivot(double p) { return p == 0.0 || !isfinite(p); }

// Asynchronously copy n doubles from global `src` to shared `dst`; both have
// the same address modulo 16, so everything but a leading and a trailing
// element moves in 16-byte pieces.
__device__ __forceinline__ void copy_in(double *dst, const double *src, int n, int lane) {
    const int head = (reinterpret_cast<uintptr_t>(src) & 15) ? 1 : 0;
    const int pairs = (n - head) >> 1;
    if (head && lane == 0) __pipeline_memcpy_async(dst, src, sizeof(double));
    for (int k = lane; k < pairs; k += kLanes)
        __pipeline_memcpy_async(dst + head + 2 * k, src + head + 2 * k, 2 * sizeof(double));
    if (((n - head) & 1) && lane == 0)
        __pipeline_memcpy_async(dst + n - 1, src + n - 1, sizeof(double));
}

// Write n doubles from shared `src` to global `dst` (same alignment rule),
// with streaming stores: x is not read again by this kernel.
__device__ __forceinline__ void copy_out(double *dst, const double *src, int n, int lane) {
    const int head = (reinterpret_cast<uintptr_t>(dst) & 15) ? 1 : 0;
    const int pairs = (n - head) >> 1;
    if (head && lane == 0) __stcs(dst, src[0]);
    for (int k = lane; k < pairs; k += kLanes)
        __stcs(reinterpret_cast<double2 *>(dst + head) + k,
               reinterpret_cast<const double2 *>(src + head)[k]);
    if (((n - head) & 1) && lane == 0) __stcs(dst + n - 1, src[n - 1]);
}

__global__ void onchip_kernel(ns_onchip_sched s, const double *__restrict__ ga,
                              const double *__restrict__ gb, const double *__restrict__ gd,
                              double *__restrict__ grhs, long long n_cells, long long first_cell,
                              unsigned long long *bad) {
    extern __shared__ __align__(16) double smem[];
    const int lane = threadIdx.x & (kLanes - 1);
    const int warp = threadIdx.x / kLanes;
    const long long cell = (long long)blockIdx.x * (blockDim.x / kLanes) + warp;
    if (cell >= n_cells) return;  // whole warps only: the warp's lanes share `cell`

    const int n = s.n;
    const int stride = (n + 2) & ~1;  // doubles per array, even: each array starts 16-aligned
    const long long off = cell * n;
    // An odd global offset starts 8 bytes into a 16-byte word: shift the
    // shared copy by one double so both sides agree modulo 16.
    const int shift = (int)(off & 1);
    double *base = smem + (size_t)warp * 4 * stride;
    double *sa = base + shift;
    double *sb = base + stride + shift;
    double *sd = base + 2 * stride + shift;
    double *sr = base + 3 * stride + shift;

    copy_in(sa, ga + off, n, lane);
    copy_in(sb, gb + off, n, lane);
    copy_in(sd, gd + off, n, lane);
    copy_in(sr, grhs + off, n, lane);
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncwarp();

    // Backward sweep. `worst` is the highest compartment with a bad pivot
    // seen by this lane: NEURON's triang meets that one first.
    int worst = -1;
    for (int step = 0; step < s.n_bwd; ++step) {
        const int q1 = __ldg(s.bwd_begin + step * kLanes + lane + 1);
        for (int q = __ldg(s.bwd_begin + step * kLanes + lane); q < q1; ++q) {
            const int r = __ldg(s.bwd_runs + q);
            const int beg = __ldg(s.run_begin + r);
            int k = __ldg(s.run_begin + r + 1) - 1;
            int node = __ldg(s.run_nodes + k);
            // Nodes increase along a run; a run without gaps needs no index loads.
            const bool contiguous = node - __ldg(s.run_nodes + beg) == k - beg;
            double dk = sd[node], rk = sr[node];
            // Fold in the child runs (already reduced: sd holds 1/d there).
            const int j1 = __ldg(s.child_begin + r + 1);
            for (int j = __ldg(s.child_begin + r); j < j1; ++j) {
                const int c0 = __ldg(s.child_first + j);
                const double f = sa[c0] * sd[c0];
                dk -= f * sb[c0];
                rk -= f * sr[c0];
            }
            for (;;) {
                if (bad_pivot(dk) && node > worst) worst = node;
                const double inv = 1.0 / dk;
                sd[node] = inv;
                sr[node] = rk;
                if (k == beg) break;
                --k;
                const int prev = contiguous ? node - 1 : __ldg(s.run_nodes + k);
                const double f = sa[node] * inv;
                dk = sd[prev] - f * sb[node];
                rk = sr[prev] - f * rk;
                node = prev;
            }
        }
        __syncwarp();
    }
    if (worst >= 0) atomicMin(bad, ns_pivot_key(first_cell + cell, worst));

    // Forward sweep: x overwrites the reduced rhs.
    for (int step = 0; step < s.n_fwd; ++step) {
        const int q1 = __ldg(s.fwd_begin + step * kLanes + lane + 1);
        for (int q = __ldg(s.fwd_begin + step * kLanes + lane); q < q1; ++q) {
            const int r = __ldg(s.fwd_runs + q);
            const int end = __ldg(s.run_begin + r + 1);
            int k = __ldg(s.run_begin + r);
            int node = __ldg(s.run_nodes + k);
            const bool contiguous = __ldg(s.run_nodes + end - 1) - node == end - 1 - k;
            const int p = __ldg(s.run_parent + r);
            double x = (p < 0 ? sr[node] : sr[node] - sb[node] * sr[p]) * sd[node];
            sr[node] = x;
            for (++k; k < end; ++k) {
                node = contiguous ? node + 1 : __ldg(s.run_nodes + k);
                x = (sr[node] - sb[node] * x) * sd[node];
                sr[node] = x;
            }
        }
        __syncwarp();
    }

    copy_out(grhs + off, sr, n, lane);
}

}  // namespace

extern "C" cudaError_t ns_hines_onchip_setup(size_t bytes) {
    cudaError_t e = cudaFuncSetAttribute(onchip_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)bytes);
    if (e != cudaSuccess) return e;
    return cudaFuncSetAttribute(onchip_kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                (int)cudaSharedmemCarveoutMaxShared);
}

extern "C" cudaError_t ns_hines_onchip_occupancy(int warps, size_t bytes, int *blocks) {
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, onchip_kernel, warps * kLanes,
                                                         bytes);
}

extern "C" cudaError_t ns_hines_launch_onchip(const ns_onchip_sched *sched, const double *a,
                                              const double *b, const double *d, double *rhs,
                                              int64_t n_cells, int64_t first_cell, int warps,
                                              unsigned long long *bad, cudaStream_t stream) {
    if (n_cells <= 0) return cudaSuccess;
    const long long blocks = (n_cells + warps - 1) / warps;
    const size_t smem = (size_t)warps * ns_onchip_cell_doubles(sched->n) * sizeof(double);
    onchip_kernel<<<(unsigned)blocks, warps * kLanes, smem, stream>>>(*sched, a, b, d, rhs, n_cells,
                                                                      first_cell, bad);
    return cudaGetLastError();
}
