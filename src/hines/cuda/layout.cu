// Flat <-> grouped (Full- or Block-Interleaved) layout conversion on the
// device. Flat is an N x n row-major matrix (a row per cell); the grouped
// layouts store it column by column inside each group of G cells, so the
// conversion is a tiled transpose: a 32 x 32 tile (32 cells x 32
// compartments) is read coalesced along one index into shared memory and
// written coalesced along the other.
#include <cuda_runtime.h>

#include "hines/cuda/hines_kernels.h"

namespace {

constexpr int kTile = 32;
constexpr int kRows = 8;  // threads per block: kTile x kRows

__device__ __forceinline__ long long grouped_index(long long c, long long i, long long n,
                                                   long long g) {
    return (c / g) * g * n + i * g + (c % g);
}

__global__ void layout_kernel(int n, const double *__restrict__ src, double *__restrict__ dst,
                              long long n_cells, long long group, int to_flat) {
    __shared__ double tile[kTile][kTile + 1];  // [cell][compartment], +1 against bank conflicts
    const long long c0 = (long long)blockIdx.x * kTile;
    for (long long i0 = (long long)blockIdx.y * kTile; i0 < n; i0 += (long long)gridDim.y * kTile) {
        if (!to_flat) {
            // read Flat rows (threadIdx.x along compartments) ...
            for (int r = threadIdx.y; r < kTile; r += kRows) {
                const long long c = c0 + r, i = i0 + threadIdx.x;
                if (c < n_cells && i < n) tile[r][threadIdx.x] = src[c * n + i];
            }
            __syncthreads();
            // ... write grouped columns (threadIdx.x along cells).
            for (int r = threadIdx.y; r < kTile; r += kRows) {
                const long long c = c0 + threadIdx.x, i = i0 + r;
                if (c < n_cells && i < n) dst[grouped_index(c, i, n, group)] = tile[threadIdx.x][r];
            }
        } else {
            for (int r = threadIdx.y; r < kTile; r += kRows) {
                const long long c = c0 + threadIdx.x, i = i0 + r;
                if (c < n_cells && i < n) tile[threadIdx.x][r] = src[grouped_index(c, i, n, group)];
            }
            __syncthreads();
            for (int r = threadIdx.y; r < kTile; r += kRows) {
                const long long c = c0 + r, i = i0 + threadIdx.x;
                if (c < n_cells && i < n) dst[c * n + i] = tile[r][threadIdx.x];
            }
        }
        __syncthreads();  // the tile is reused by the next compartment tile
    }
}

}  // namespace

extern "C" cudaError_t ns_hines_launch_layout(int32_t n, const double *src, double *dst,
                                              int64_t n_cells, int64_t group, int to_flat,
                                              cudaStream_t stream) {
    if (n_cells <= 0 || n <= 0) return cudaSuccess;
    const long long cell_tiles = (n_cells + kTile - 1) / kTile;
    long long comp_tiles = ((long long)n + kTile - 1) / kTile;
    if (comp_tiles > 65535) comp_tiles = 65535;  // grid.y limit; the kernel loops over the rest
    const dim3 grid((unsigned)cell_tiles, (unsigned)comp_tiles);
    const dim3 block(kTile, kRows);
    layout_kernel<<<grid, block, 0, stream>>>(n, src, dst, n_cells, group, to_flat);
    return cudaGetLastError();
}
