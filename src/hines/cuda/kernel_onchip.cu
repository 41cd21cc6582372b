// The on-chip kernel (docs/methods.md, "onchip"): Flat layout, no
// conversion; each warp solves 32 / L cells side by side, L lanes per cell
// (L = 1 for small cells: one lane per cell; more lanes for large cells,
// whose shared-memory image leaves room for few cells per SM and whose
// solve must therefore be short).
//
// The warp copies its cells' a, b, d, rhs (contiguous in Flat: C x n
// doubles per array) into shared memory with coalesced asynchronous copies,
// solves there, and writes x back coalesced: device memory sees 32 bytes
// read and 8 written per compartment, the 40-byte floor.
//
// The two sweeps are onchip_sweeps.cuh's (G over d, F then x over rhs).
// Each CUDA block first copies the schedule's core (run descriptors, step
// tables, child positions; a few KB) into shared memory: read at every run
// start, it would otherwise wait on L2 behind the streaming traffic
// (docs/methods.md, "onchip").
#include "core/cuda_check.h"
#include <cuda_pipeline.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "hines/cuda/hines_kernels.h"
#include "hines/cuda/onchip_sweeps.cuh"

namespace {

// Lanes of one cell per warp: L; cells per warp: 32 / L.
template <int L>
__global__ void onchip_kernel(ns_onchip_sched s, const double *__restrict__ ga,
                              const double *__restrict__ gb, const double *__restrict__ gd,
                              double *__restrict__ grhs, long long n_cells, long long first_cell,
                              unsigned long long *bad) {
    constexpr int C = NS_ONCHIP_LANES / L;
    extern __shared__ __align__(16) double smem[];
    // The schedule's core (descriptors, step tables, child positions) into
    // shared memory: read at every run start, it must not wait on L2 behind
    // the streaming traffic.
    int32_t *const sched = reinterpret_cast<int32_t *>(smem);
    {
        const int4 *src = reinterpret_cast<const int4 *>(s.base);
        int4 *dst = reinterpret_cast<int4 *>(sched);
        for (int k = threadIdx.x; k < (s.core + 3) / 4; k += blockDim.x) dst[k] = __ldg(src + k);
    }
    __syncthreads();
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int role = lane & (L - 1);
    const int mine = lane / L;  // this lane's cell within the warp
    const long long c0 = ((long long)blockIdx.x * (blockDim.x >> 5) + warp) * C;
    if (c0 >= n_cells) return;  // whole warps only
    const int nc = n_cells - c0 < C ? (int)(n_cells - c0) : C;  // cells of this warp
    const OnchipTables tables = onchip_tables(s, sched);

    const int n = s.n;
    const int cs = 4 * n + 1;  // doubles per cell (odd: see ns_onchip_cell_doubles)
    double *const wbase = smem + (s.core + 3) / 4 * 2 + (size_t)warp * C * cs;
    const long long g0 = c0 * n;
    const int total = nc * n;  // doubles of one array for the warp's cells

    // Copy in: element e of the warp's range is (cell e / n, compartment e % n).
    {
        int c = 0, i = lane;
        while (i >= n) i -= n, ++c;
        for (int e = lane; e < total; e += 32) {
            const int p = s.identity ? i : __ldg(s.pos_of_node + i);
            double *dst = wbase + c * cs + p;
            __pipeline_memcpy_async(dst, ga + g0 + e, sizeof(double));
            __pipeline_memcpy_async(dst + n, gb + g0 + e, sizeof(double));
            __pipeline_memcpy_async(dst + 2 * n, gd + g0 + e, sizeof(double));
            __pipeline_memcpy_async(dst + 3 * n, grhs + g0 + e, sizeof(double));
            i += 32;
            while (i >= n) i -= n, ++c;
        }
    }
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncwarp();

    double *const sa = wbase + mine * cs;
    double *const sb = sa + n;
    double *const sd = sb + n;  // d, then G = b / d'
    double *const sr = sd + n;  // rhs, then F = rhs' / d', then x
    const int worst =
        onchip_backward<L>(tables, s.n_bwd, role, sa, sb, sd, sr, s.identity ? nullptr : s.node_of_pos);
    onchip_forward<L>(tables, s.n_fwd, role, sd, sr);
    if (worst >= 0 && mine < nc) atomicMin(bad, ns_pivot_key(first_cell + c0 + mine, worst));

    // Copy out x, coalesced, with streaming stores (x is not read again here).
    {
        int c = 0, i = lane;
        while (i >= n) i -= n, ++c;
        for (int e = lane; e < total; e += 32) {
            const int p = s.identity ? i : __ldg(s.pos_of_node + i);
            __stcs(grhs + g0 + e, wbase[c * cs + 3 * n + p]);
            i += 32;
            while (i >= n) i -= n, ++c;
        }
    }
}

typedef void (*kernel_fn)(ns_onchip_sched, const double *, const double *, const double *,
                          double *, long long, long long, unsigned long long *);

kernel_fn pick(int lanes) { return NS_ONCHIP_PICK(onchip_kernel, lanes); }

}  // namespace

extern "C" cudaError_t ns_hines_onchip_setup(int lanes, size_t bytes) {
    const kernel_fn k = pick(lanes);
    if (!k) return cudaErrorInvalidValue;
    return ns_cuda_prefer_shared((const void *)k, bytes);
}

extern "C" cudaError_t ns_hines_onchip_occupancy(int lanes, int warps, size_t bytes, int *blocks) {
    return ns_onchip_occupancy(pick(lanes), warps, bytes, blocks);
}

extern "C" cudaError_t ns_hines_launch_onchip(const ns_onchip_sched *sched, const double *a,
                                              const double *b, const double *d, double *rhs,
                                              int64_t n_cells, int64_t first_cell, int warps,
                                              unsigned long long *bad, cudaStream_t stream) {
    if (n_cells <= 0) return cudaSuccess;
    const kernel_fn k = pick(sched->lanes);
    if (!k) return cudaErrorInvalidValue;
    const int64_t per_block = (int64_t)warps * (NS_ONCHIP_LANES / sched->lanes);
    const long long blocks = (n_cells + per_block - 1) / per_block;
    const size_t smem = ns_onchip_block_bytes(sched->n, sched->lanes, sched->core, warps);
    k<<<(unsigned)blocks, warps * NS_ONCHIP_LANES, smem, stream>>>(*sched, a, b, d, rhs, n_cells,
                                                                   first_cell, bad);
    return cudaGetLastError();
}
