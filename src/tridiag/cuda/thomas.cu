// One thread per system on the Interleaved layout: cuThomasBatch (fixed
// size) and cuThomasVBatch (variable sizes, with and without computing
// padding), plus the layout conversions and the cuSPARSE helpers.
//
// Thread s walks rows k = 0..n-1 at k * batch + s, so the 32 threads of a
// warp read 32 consecutive entries of each array per row (coalesced). The
// forward sweep stores c'[k] in du and x'[k] in x; the backward sweep reads
// them back: 72 bytes per unknown in double (40 is the floor), which is
// why the on-chip kernels (onchip.cu) can beat it.
#include <cstdint>

#include "tridiag/cuda/kernels.h"
#include "tridiag/cuda/pivot.cuh"

namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kThreads)
thomas_kernel(int n, int batch, const T *__restrict__ dl, const T *__restrict__ d,
              T *__restrict__ du, T *__restrict__ x, T tol, unsigned long long *err) {
    const int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= batch) return;
    const size_t B = static_cast<size_t>(batch);
    T c = n > 1 ? du[s] : T(0);
    T p = d[s];
    if (bad_pivot(p, fabs(p) + fabs(c), tol)) {
        report(err, s, 0);
        return;
    }
    T inv = T(1) / p;
    T cp = c * inv;
    T xp = x[s] * inv;
    if (n > 1) du[s] = cp;
    x[s] = xp;
#pragma unroll 4
    for (int k = 1; k < n; ++k) {
        const size_t i = static_cast<size_t>(k) * B + s;
        const T a = dl[i], b = d[i];
        c = k + 1 < n ? du[i] : T(0);
        p = b - a * cp;
        if (bad_pivot(p, fabs(a) + fabs(b) + fabs(c), tol)) {
            report(err, s, k);
            return;
        }
        inv = T(1) / p;
        cp = c * inv;
        xp = (x[i] - a * xp) * inv;
        if (k + 1 < n) du[i] = cp;
        x[i] = xp;
    }
#pragma unroll 4
    for (int k = n - 2; k >= 0; --k) {
        const size_t i = static_cast<size_t>(k) * B + s;
        xp = x[i] - du[i] * xp;
        x[i] = xp;
    }
}

// The variable-size batch, two ways (kCP):
// Computing padding (CP): every thread runs all nmax rows; rows past its
// size are identity rows (0, 1, 0 | 0) built in registers, so loads and
// stores are predicated but the loop and the addresses stay in lockstep
// across the warp (coalesced). The padding never reaches the real rows
// because du at the last real row is taken as 0.
// No computing padding (NCP): each thread stops at its own size. Fewer
// loads and flops, but threads of a warp leave the loop at different rows
// and the backward sweep starts at different rows, so a warp's accesses are
// no longer one contiguous segment (the paper's Fig. 13 effect).
template <typename T, bool kCP>
__global__ void __launch_bounds__(kThreads)
vbatch_kernel(int nmax, int batch, const int *__restrict__ sizes, const T *__restrict__ dl,
              const T *__restrict__ d, T *__restrict__ du, T *__restrict__ x, T tol,
              unsigned long long *err) {
    const int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= batch) return;
    const int n = sizes[s];
    const size_t B = static_cast<size_t>(batch);
    T cp = T(0), xp = T(0);
    for (int k = 0; k < (kCP ? nmax : n); ++k) {
        const size_t i = static_cast<size_t>(k) * B + s;
        const bool live = !kCP || k < n;
        const T a = live && k > 0 ? dl[i] : T(0);
        const T b = live ? d[i] : T(1);
        const T c = k + 1 < n ? du[i] : T(0);
        const T r = live ? x[i] : T(0);
        const T p = b - a * cp;
        if (live && bad_pivot(p, fabs(a) + fabs(b) + fabs(c), tol)) {
            report(err, s, k);
            return;
        }
        const T inv = T(1) / p;
        cp = c * inv;
        xp = (r - a * xp) * inv;
        if (k + 1 < n) du[i] = cp;
        if (live) x[i] = xp;
    }
    if constexpr (kCP) {
        // Backward over all rows: padding rows give x = 0; the last real row
        // keeps x' (its c' is 0).
        T xn = T(0);
        for (int k = nmax - 1; k >= 0; --k) {
            const size_t i = static_cast<size_t>(k) * B + s;
            if (k + 1 < n) {
                xn = x[i] - du[i] * xn;
                x[i] = xn;
            } else {
                xn = k < n ? x[i] : T(0);
            }
        }
    } else {
        for (int k = n - 2; k >= 0; --k) {
            const size_t i = static_cast<size_t>(k) * B + s;
            xp = x[i] - du[i] * xp;
            x[i] = xp;
        }
    }
}

// 32 x 32 tiles through shared memory so that both the reads and the
// writes are coalesced; the +1 column avoids bank conflicts.
template <typename T>
__global__ void transpose_kernel(const T *__restrict__ src, T *__restrict__ dst, int64_t rows,
                                 int64_t cols) {
    __shared__ T tile[32][33];
    const int64_t col_tiles = (cols + 31) / 32, row_tiles = (rows + 31) / 32;
    for (int64_t ty = blockIdx.y; ty < row_tiles; ty += gridDim.y) {
        for (int64_t tx = blockIdx.x; tx < col_tiles; tx += gridDim.x) {
            const int64_t c = tx * 32 + threadIdx.x;
            for (int j = threadIdx.y; j < 32; j += blockDim.y) {
                const int64_t r = ty * 32 + j;
                if (r < rows && c < cols) tile[j][threadIdx.x] = src[r * cols + c];
            }
            __syncthreads();
            const int64_t r_out = ty * 32 + threadIdx.x;
            for (int j = threadIdx.y; j < 32; j += blockDim.y) {
                const int64_t c_out = tx * 32 + j;
                if (r_out < rows && c_out < cols) dst[c_out * rows + r_out] = tile[threadIdx.x][j];
            }
            __syncthreads();
        }
    }
}

template <typename T>
__global__ void flat_padded_kernel(const T *__restrict__ src, T *__restrict__ dst,
                                   const int64_t *__restrict__ offsets, const int *__restrict__ sizes,
                                   int batch, int nmax, bool to_padded) {
    const int64_t total = static_cast<int64_t>(nmax) * batch;
    for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
         idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        const int k = static_cast<int>(idx / batch);
        const int s = static_cast<int>(idx % batch);
        if (k >= sizes[s]) continue;
        const int64_t f = offsets[s] + k;
        if (to_padded)
            dst[idx] = src[f];
        else
            dst[f] = src[idx];
    }
}

template <typename T>
__global__ void zero_ends_kernel(bool interleaved, int n, int batch, T *dl, T *du) {
    const int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= batch) return;
    if (interleaved) {
        dl[s] = T(0);
        du[static_cast<size_t>(n - 1) * batch + s] = T(0);
    } else {
        dl[static_cast<size_t>(s) * n] = T(0);
        du[static_cast<size_t>(s) * n + n - 1] = T(0);
    }
}

// One non-finite entry of x at flat index idx: the system and unknown it belongs to.
template <typename T>
__device__ __forceinline__ void report_entry(bool interleaved, int n, int batch, int64_t idx, unsigned long long *err) {
    const int64_t s = interleaved ? idx % batch : idx / n;
    const int64_t k = interleaved ? idx / batch : idx % n;
    report(err, s, k);
}

template <typename T> struct vec16;
template <> struct vec16<double> { using type = double2; };
template <> struct vec16<float> { using type = float4; };

// cuSPARSE's result scanned for Inf/NaN (it reports no pivots). A read of x
// right behind the solve, so it is what the device call adds to cuSPARSE's
// time: 16-byte loads over a grid of a few blocks per SM (grid-stride),
// the entry-by-entry test only in a vector that holds a non-finite value.
template <typename T>
__global__ void __launch_bounds__(kThreads)
nonfinite_kernel(bool interleaved, int n, int batch, const T *__restrict__ x, unsigned long long *err) {
    using V = typename vec16<T>::type;
    constexpr int W = 16 / sizeof(T);
    const int64_t total = static_cast<int64_t>(n) * batch;
    const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
    const int64_t first = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    const int64_t nv = (reinterpret_cast<uintptr_t>(x) % 16 == 0) ? total / W : 0;
    const V *xv = reinterpret_cast<const V *>(x);
    for (int64_t i = first; i < nv; i += step) {
        const V v = __ldg(xv + i);
        const T *e = reinterpret_cast<const T *>(&v);
        bool fine = true;
#pragma unroll
        for (int w = 0; w < W; ++w) fine &= static_cast<bool>(isfinite(e[w]));
        if (fine) continue;
#pragma unroll
        for (int w = 0; w < W; ++w)
            if (!isfinite(e[w])) report_entry<T>(interleaved, n, batch, i * W + w, err);
    }
    for (int64_t idx = nv * W + first; idx < total; idx += step)
        if (!isfinite(x[idx])) report_entry<T>(interleaved, n, batch, idx, err);
}

unsigned blocks_for(int64_t threads, int per_block) {
    int64_t b = (threads + per_block - 1) / per_block;
    if (b > 65535LL * 32) b = 65535LL * 32; // grid-stride loops cover the rest
    return static_cast<unsigned>(b < 1 ? 1 : b);
}

} // namespace

extern "C" cudaError_t ns_td_launch_thomas(const ns_td_args *a, cudaStream_t stream) {
    const unsigned grid = static_cast<unsigned>((a->batch + kThreads - 1) / kThreads);
    if (a->f32)
        thomas_kernel<float><<<grid, kThreads, 0, stream>>>(
            a->n, a->batch, static_cast<const float *>(a->dl), static_cast<const float *>(a->d),
            static_cast<float *>(a->du), static_cast<float *>(a->x), static_cast<float>(a->tol), a->err);
    else
        thomas_kernel<double><<<grid, kThreads, 0, stream>>>(
            a->n, a->batch, static_cast<const double *>(a->dl), static_cast<const double *>(a->d),
            static_cast<double *>(a->du), static_cast<double *>(a->x), a->tol, a->err);
    return cudaGetLastError();
}

template <typename T>
static void launch_vbatch(const ns_td_args *a, bool computing_padding, T tol, cudaStream_t stream) {
    const unsigned grid = static_cast<unsigned>((a->batch + kThreads - 1) / kThreads);
    const T *dl = static_cast<const T *>(a->dl), *d = static_cast<const T *>(a->d);
    T *du = static_cast<T *>(a->du), *x = static_cast<T *>(a->x);
    (computing_padding ? vbatch_kernel<T, true> : vbatch_kernel<T, false>)<<<grid, kThreads, 0, stream>>>(
        a->n, a->batch, a->sizes, dl, d, du, x, tol, a->err);
}

extern "C" cudaError_t ns_td_launch_vbatch(const ns_td_args *a, int computing_padding,
                                           cudaStream_t stream) {
    if (a->f32)
        launch_vbatch<float>(a, computing_padding != 0, static_cast<float>(a->tol), stream);
    else
        launch_vbatch<double>(a, computing_padding != 0, a->tol, stream);
    return cudaGetLastError();
}

extern "C" cudaError_t ns_td_launch_transpose(int f32, const void *src, void *dst, int64_t rows,
                                              int64_t cols, cudaStream_t stream) {
    const int64_t tx = (cols + 31) / 32, ty = (rows + 31) / 32;
    dim3 grid(static_cast<unsigned>(tx < 65535 * 16 ? tx : 65535 * 16),
              static_cast<unsigned>(ty < 65535 ? ty : 65535));
    dim3 block(32, 8);
    if (f32)
        transpose_kernel<float><<<grid, block, 0, stream>>>(static_cast<const float *>(src),
                                                            static_cast<float *>(dst), rows, cols);
    else
        transpose_kernel<double><<<grid, block, 0, stream>>>(static_cast<const double *>(src),
                                                             static_cast<double *>(dst), rows, cols);
    return cudaGetLastError();
}

static cudaError_t flat_padded(int f32, const void *src, void *dst, const int64_t *offsets,
                               const int32_t *sizes, int32_t batch, int32_t nmax, bool to_padded,
                               cudaStream_t stream) {
    const unsigned grid = blocks_for(static_cast<int64_t>(nmax) * batch, kThreads);
    if (f32)
        flat_padded_kernel<float><<<grid, kThreads, 0, stream>>>(
            static_cast<const float *>(src), static_cast<float *>(dst), offsets, sizes, batch, nmax, to_padded);
    else
        flat_padded_kernel<double><<<grid, kThreads, 0, stream>>>(
            static_cast<const double *>(src), static_cast<double *>(dst), offsets, sizes, batch, nmax, to_padded);
    return cudaGetLastError();
}

extern "C" cudaError_t ns_td_launch_flat_to_padded(int f32, const void *flat, void *padded,
                                                   const int64_t *offsets, const int32_t *sizes,
                                                   int32_t batch, int32_t nmax, cudaStream_t stream) {
    return flat_padded(f32, flat, padded, offsets, sizes, batch, nmax, true, stream);
}

extern "C" cudaError_t ns_td_launch_padded_to_flat(int f32, const void *padded, void *flat,
                                                   const int64_t *offsets, const int32_t *sizes,
                                                   int32_t batch, int32_t nmax, cudaStream_t stream) {
    return flat_padded(f32, padded, flat, offsets, sizes, batch, nmax, false, stream);
}

extern "C" cudaError_t ns_td_launch_zero_ends(int f32, int interleaved, int32_t n, int32_t batch,
                                              void *dl, void *du, cudaStream_t stream) {
    const unsigned grid = static_cast<unsigned>((batch + kThreads - 1) / kThreads);
    if (f32)
        zero_ends_kernel<float><<<grid, kThreads, 0, stream>>>(interleaved != 0, n, batch,
                                                               static_cast<float *>(dl), static_cast<float *>(du));
    else
        zero_ends_kernel<double><<<grid, kThreads, 0, stream>>>(interleaved != 0, n, batch,
                                                                static_cast<double *>(dl), static_cast<double *>(du));
    return cudaGetLastError();
}

extern "C" cudaError_t ns_td_launch_find_nonfinite(int f32, int interleaved, int32_t n, int32_t batch,
                                                   const void *x, unsigned long long *err,
                                                   cudaStream_t stream) {
    // 16-byte vectors; at most 2,048 blocks of 256 threads (16 per SM of
    // an H100: the grid-stride loop covers the rest), so that a short scan
    // is one wave and a long one does not pay for retiring 10^5 blocks
    const int64_t vectors = (static_cast<int64_t>(n) * batch + (f32 ? 3 : 1)) / (f32 ? 4 : 2);
    unsigned grid = blocks_for(vectors, kThreads);
    if (grid > 2048) grid = 2048;
    if (f32)
        nonfinite_kernel<float><<<grid, kThreads, 0, stream>>>(interleaved != 0, n, batch,
                                                               static_cast<const float *>(x), err);
    else
        nonfinite_kernel<double><<<grid, kThreads, 0, stream>>>(interleaved != 0, n, batch,
                                                                static_cast<const double *>(x), err);
    return cudaGetLastError();
}
