// The LiFE products on the GPU (docs/life.md): the paper's reference kernels
// (Fig. 6: one thread per coefficient, grid-stride loop, an atomic per row)
// and the optimised kernels of Section 4.2.2: a warp per sub-vector or per
// 32 coefficients, n_theta padded to Tp = 32 NT rows held NT per lane in
// registers, coefficient metadata loaded by 32 lanes at once and broadcast
// with shuffles, zero weights skipped with a warp ballot, dot products
// reduced with shuffles (no shared memory, no __syncthreads), several
// sub-vectors (warps) per block.
#include <cuda_runtime.h>

#include "life/cuda/life_kernels.h"

#define FULL 0xffffffffu
#define WARPS_PER_BLOCK 4 /* sub-vectors per block: the paper found 4 best */

// ------------------------------------------------------------ reference

__global__ void ref_mw(const int32_t *atom, const int32_t *voxel, const int32_t *fiber,
                       const double *value, int64_t n_coeffs, int n_theta, int tp,
                       const double *D, const double *w, double *y) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t k = threadIdx.x + (int64_t)blockIdx.x * blockDim.x; k < n_coeffs; k += stride) {
        const int64_t a = (int64_t)atom[k] * tp, v = (int64_t)voxel[k] * tp;
        const double val1 = w[fiber[k]], val2 = value[k];
        for (int i = 0; i < n_theta; ++i) atomicAdd(&y[v + i], D[a + i] * val1 * val2);
    }
}

__global__ void ref_mty(const int32_t *atom, const int32_t *voxel, const int32_t *fiber,
                        const double *value, int64_t n_coeffs, int n_theta, int tp,
                        const double *D, const double *y, double *w) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t k = threadIdx.x + (int64_t)blockIdx.x * blockDim.x; k < n_coeffs; k += stride) {
        const int64_t a = (int64_t)atom[k] * tp, v = (int64_t)voxel[k] * tp;
        double val = 0.0;
        for (int i = 0; i < n_theta; ++i) val += D[a + i] * y[v + i];
        atomicAdd(&w[fiber[k]], val * value[k]);
    }
}

// ------------------------------------------------------------ helpers

// A dictionary entry as float64: the float32 copy through the read-only
// path, the float64 dictionary as the original kernels read it.
__device__ __forceinline__ double dict_at(const double *p) { return *p; }
__device__ __forceinline__ double dict_at(const float *p) { return (double)__ldg(p); }

__device__ __forceinline__ double warp_sum(double x) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(FULL, x, o);
    return x;
}

template <int NT>
__device__ __forceinline__ void flush_atomic(double *y, int32_t voxel, int tp, int lane, double *acc) {
    double *col = y + (int64_t)voxel * tp + lane;
#pragma unroll
    for (int c = 0; c < NT; ++c) atomicAdd(col + 32 * c, acc[c]);
}

// ------------------------------------------------------ coefficient partition

// y = M w, a warp per chunk of 32 consecutive coefficients. The warp keeps
// the running sum of the current voxel in registers and adds it to y when
// the voxel changes: on the voxel-sorted copy that is about one atomic per
// row per voxel, on the atom-sorted copy nearly one per coefficient.
template <int NT>
__global__ void coeff_mw(const int32_t *atom, const int32_t *voxel, const int32_t *fiber,
                         const double *value, int64_t n_coeffs, int tp, const double *D,
                         const double *w, double *y) {
    const int lane = threadIdx.x & 31;
    const int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int64_t n_warps = ((int64_t)gridDim.x * blockDim.x) >> 5;
    for (int64_t base = warp * 32; base < n_coeffs; base += n_warps * 32) {
        const int64_t k = base + lane;
        double s = 0.0;
        int32_t a = 0, v = 0;
        if (k < n_coeffs) {
            s = w[fiber[k]] * value[k];
            a = atom[k];
            v = voxel[k];
        }
        unsigned todo = __ballot_sync(FULL, s != 0.0); // skip zero weights
        double acc[NT];
#pragma unroll
        for (int c = 0; c < NT; ++c) acc[c] = 0.0;
        int32_t cur = -1;
        while (todo) {
            const int j = __ffs(todo) - 1;
            todo &= todo - 1;
            const double sj = __shfl_sync(FULL, s, j);
            const int32_t aj = __shfl_sync(FULL, a, j), vj = __shfl_sync(FULL, v, j);
            if (vj != cur) {
                if (cur >= 0) flush_atomic<NT>(y, cur, tp, lane, acc);
#pragma unroll
                for (int c = 0; c < NT; ++c) acc[c] = 0.0;
                cur = vj;
            }
            const double *d = D + (int64_t)aj * tp + lane;
#pragma unroll
            for (int c = 0; c < NT; ++c) acc[c] += sj * d[32 * c];
        }
        if (cur >= 0) flush_atomic<NT>(y, cur, tp, lane, acc);
    }
}

// w = M^T y, a warp per chunk of 32 coefficients: 32 dot products reduced by
// shuffles, lane j keeps coefficient j's result, then 32 atomics at once.
template <int NT>
__global__ void coeff_mty(const int32_t *atom, const int32_t *voxel, const int32_t *fiber,
                          const double *value, int64_t n_coeffs, int tp, const double *D,
                          const double *y, double *w) {
    const int lane = threadIdx.x & 31;
    const int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int64_t n_warps = ((int64_t)gridDim.x * blockDim.x) >> 5;
    for (int64_t base = warp * 32; base < n_coeffs; base += n_warps * 32) {
        const int64_t k = base + lane;
        const int count = n_coeffs - base < 32 ? (int)(n_coeffs - base) : 32;
        int32_t a = 0, v = 0;
        if (k < n_coeffs) a = atom[k], v = voxel[k];
        double mine = 0.0;
#pragma unroll 8
        for (int j = 0; j < count; ++j) {
            const int32_t aj = __shfl_sync(FULL, a, j), vj = __shfl_sync(FULL, v, j);
            const double *d = D + (int64_t)aj * tp + lane, *yv = y + (int64_t)vj * tp + lane;
            double p = 0.0;
#pragma unroll
            for (int c = 0; c < NT; ++c) p += d[32 * c] * yv[32 * c];
            p = warp_sum(p);
            if (lane == j) mine = p;
        }
        if (k < n_coeffs) atomicAdd(&w[fiber[k]], mine * value[k]);
    }
}

// ------------------------------------------------------ sub-vector partition

// y = M w on the voxel-sorted copy, a warp per voxel: the voxel's column is
// summed in registers and written once (no atomics, no zeroing needed).
template <int NT, typename DT>
__global__ void voxel_mw(const int64_t *start, const int32_t *atom, const int32_t *fiber,
                         const double *value, int32_t n_voxels, int tp, const DT *D,
                         const double *w, double *y) {
    const int lane = threadIdx.x & 31;
    const int64_t vox = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (vox >= n_voxels) return;
    const int64_t k0 = start[vox], k1 = start[vox + 1];
    double acc[NT];
#pragma unroll
    for (int c = 0; c < NT; ++c) acc[c] = 0.0;
    for (int64_t base = k0; base < k1; base += 32) {
        const int64_t k = base + lane;
        double s = 0.0;
        int32_t a = 0;
        if (k < k1) {
            s = w[fiber[k]] * value[k];
            a = atom[k];
        }
        unsigned todo = __ballot_sync(FULL, s != 0.0);
        while (todo) {
            const int j = __ffs(todo) - 1;
            todo &= todo - 1;
            const double sj = __shfl_sync(FULL, s, j);
            const DT *d = D + (int64_t)__shfl_sync(FULL, a, j) * tp + lane;
#pragma unroll
            for (int c = 0; c < NT; ++c) acc[c] += sj * dict_at(d + 32 * c);
        }
    }
    double *col = y + vox * tp + lane;
#pragma unroll
    for (int c = 0; c < NT; ++c) col[32 * c] = acc[c];
}

// y = M w on the atom-sorted copy, a warp per atom: D(:, a) in registers,
// one atomic per row per coefficient (voxels differ within an atom).
template <int NT>
__global__ void atom_mw(const int64_t *start, const int32_t *voxel, const int32_t *fiber,
                        const double *value, int32_t n_atoms, int tp, const double *D,
                        const double *w, double *y) {
    const int lane = threadIdx.x & 31;
    const int64_t at = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (at >= n_atoms) return;
    const int64_t k0 = start[at], k1 = start[at + 1];
    if (k0 == k1) return;
    double d[NT];
#pragma unroll
    for (int c = 0; c < NT; ++c) d[c] = D[at * tp + lane + 32 * c];
    for (int64_t base = k0; base < k1; base += 32) {
        const int64_t k = base + lane;
        double s = 0.0;
        int32_t v = 0;
        if (k < k1) {
            s = w[fiber[k]] * value[k];
            v = voxel[k];
        }
        unsigned todo = __ballot_sync(FULL, s != 0.0);
        while (todo) {
            const int j = __ffs(todo) - 1;
            todo &= todo - 1;
            const double sj = __shfl_sync(FULL, s, j);
            double *col = y + (int64_t)__shfl_sync(FULL, v, j) * tp + lane;
#pragma unroll
            for (int c = 0; c < NT; ++c) atomicAdd(col + 32 * c, sj * d[c]);
        }
    }
}

// w = M^T y on the voxel-sorted copy with the dictionary in float32 (the
// variant voxel-f32d): Y(:, v) in registers (float64), the float32 column of
// each coefficient's atom gathered (half the bytes of key_mty<NT, true>),
// products and sums in float64.
template <int NT>
__global__ void voxel_mty_f32(const int64_t *start, const int32_t *atom, const int32_t *fiber,
                              const double *value, int32_t n_voxels, int tp,
                              const float *D, const double *y, double *w) {
    const int lane = threadIdx.x & 31;
    const int64_t vox = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (vox >= n_voxels) return;
    const int64_t k0 = start[vox], k1 = start[vox + 1];
    if (k0 == k1) return;
    double r[NT];
#pragma unroll
    for (int c = 0; c < NT; ++c) r[c] = y[vox * tp + lane + 32 * c];
    for (int64_t base = k0; base < k1; base += 32) {
        const int64_t k = base + lane;
        const int count = k1 - base < 32 ? (int)(k1 - base) : 32;
        const int32_t a = k < k1 ? atom[k] : 0;
        double mine = 0.0;
#pragma unroll 8
        for (int j = 0; j < count; ++j) {
            const float *col = D + (int64_t)__shfl_sync(FULL, a, j) * tp + lane;
            double p = 0.0;
#pragma unroll
            for (int c = 0; c < NT; ++c) p += r[c] * dict_at(col + 32 * c);
            p = warp_sum(p);
            if (lane == j) mine = p;
        }
        if (k < k1) atomicAdd(&w[fiber[k]], mine * value[k]);
    }
}

// w = M^T y, a warp per sub-vector: the shared column (Y(:, v) for a voxel,
// D(:, a) for an atom) in registers, the other read per coefficient.
template <int NT, bool BY_VOXEL>
__global__ void key_mty(const int64_t *start, const int32_t *other, const int32_t *fiber,
                        const double *value, int32_t n_keys, int tp, const double *D,
                        const double *y, double *w) {
    const int lane = threadIdx.x & 31;
    const int64_t key = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (key >= n_keys) return;
    const int64_t k0 = start[key], k1 = start[key + 1];
    if (k0 == k1) return;
    const double *fixed = (BY_VOXEL ? y : D) + key * tp + lane;
    const double *moving = BY_VOXEL ? D : y;
    double r[NT];
#pragma unroll
    for (int c = 0; c < NT; ++c) r[c] = fixed[32 * c];
    for (int64_t base = k0; base < k1; base += 32) {
        const int64_t k = base + lane;
        const int count = k1 - base < 32 ? (int)(k1 - base) : 32;
        const int32_t o = k < k1 ? other[k] : 0;
        double mine = 0.0;
#pragma unroll 8
        for (int j = 0; j < count; ++j) {
            const double *col = moving + (int64_t)__shfl_sync(FULL, o, j) * tp + lane;
            double p = 0.0;
#pragma unroll
            for (int c = 0; c < NT; ++c) p += r[c] * col[32 * c];
            p = warp_sum(p);
            if (lane == j) mine = p;
        }
        if (k < k1) atomicAdd(&w[fiber[k]], mine * value[k]);
    }
}

// ------------------------------------------------------------ launchers

static int grid_for(int64_t warps, int blocks_hint) {
    int64_t blocks = (warps + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
    if (blocks_hint > 0 && blocks > blocks_hint) blocks = blocks_hint;
    return blocks < 1 ? 1 : (int)blocks;
}

template <int NT>
static void launch_mw(ns_life_kernel kernel, const ns_life_dev_phi *p, int by_voxel, int tp,
                      const double *D, const float *D32, const double *w, double *y, int hint,
                      cudaStream_t s) {
    const int threads = 32 * WARPS_PER_BLOCK;
    if (kernel == NS_LIFE_K_VOXEL_F32D) {
        voxel_mw<NT, float><<<grid_for(p->n_keys, 0), threads, 0, s>>>(
            p->start, p->atom, p->fiber, p->value, p->n_keys, tp, D32, w, y);
    } else if (kernel == NS_LIFE_K_COEFF) {
        coeff_mw<NT><<<grid_for((p->n_coeffs + 31) / 32, hint * 8), threads, 0, s>>>(
            p->atom, p->voxel, p->fiber, p->value, p->n_coeffs, tp, D, w, y);
    } else if (by_voxel) {
        voxel_mw<NT, double><<<grid_for(p->n_keys, 0), threads, 0, s>>>(
            p->start, p->atom, p->fiber, p->value, p->n_keys, tp, D, w, y);
    } else {
        atom_mw<NT><<<grid_for(p->n_keys, 0), threads, 0, s>>>(p->start, p->voxel, p->fiber,
                                                                p->value, p->n_keys, tp, D, w, y);
    }
}

template <int NT>
static void launch_mty(ns_life_kernel kernel, const ns_life_dev_phi *p, int by_voxel, int tp,
                       const double *D, const float *D32, const double *y, double *w, int hint,
                       cudaStream_t s) {
    const int threads = 32 * WARPS_PER_BLOCK;
    if (kernel == NS_LIFE_K_VOXEL_F32D) {
        voxel_mty_f32<NT><<<grid_for(p->n_keys, 0), threads, 0, s>>>(
            p->start, p->atom, p->fiber, p->value, p->n_keys, tp, D32, y, w);
    } else if (kernel == NS_LIFE_K_COEFF) {
        coeff_mty<NT><<<grid_for((p->n_coeffs + 31) / 32, hint * 8), threads, 0, s>>>(
            p->atom, p->voxel, p->fiber, p->value, p->n_coeffs, tp, D, y, w);
    } else if (by_voxel) {
        key_mty<NT, true><<<grid_for(p->n_keys, 0), threads, 0, s>>>(
            p->start, p->atom, p->fiber, p->value, p->n_keys, tp, D, y, w);
    } else {
        key_mty<NT, false><<<grid_for(p->n_keys, 0), threads, 0, s>>>(
            p->start, p->voxel, p->fiber, p->value, p->n_keys, tp, D, y, w);
    }
}

#define NS_LIFE_DISPATCH(fn, ...)                 \
    switch (tp / 32) {                            \
    case 1: fn<1>(__VA_ARGS__); break;            \
    case 2: fn<2>(__VA_ARGS__); break;            \
    case 3: fn<3>(__VA_ARGS__); break;            \
    case 4: fn<4>(__VA_ARGS__); break;            \
    case 5: fn<5>(__VA_ARGS__); break;            \
    case 6: fn<6>(__VA_ARGS__); break;            \
    case 7: fn<7>(__VA_ARGS__); break;            \
    case 8: fn<8>(__VA_ARGS__); break;            \
    default: return cudaErrorInvalidValue;        \
    }

extern "C" cudaError_t ns_life_launch_mw(ns_life_kernel kernel, const ns_life_dev_phi *p,
                                         int by_voxel, int32_t n_theta, int32_t tp,
                                         int32_t n_voxels, const double *D, const float *D32,
                                         const double *w, double *y, int hint, cudaStream_t s) {
    const bool writes_all = (kernel == NS_LIFE_K_KEY || kernel == NS_LIFE_K_VOXEL_F32D) && by_voxel &&
                            p->n_keys == n_voxels;
    if (!writes_all) {
        cudaError_t e = cudaMemsetAsync(y, 0, (size_t)tp * (size_t)n_voxels * sizeof(double), s);
        if (e != cudaSuccess) return e;
    }
    if (p->n_coeffs == 0) return cudaGetLastError();
    if (kernel == NS_LIFE_K_REFERENCE) {
        ref_mw<<<hint > 0 ? hint : 1, 256, 0, s>>>(p->atom, p->voxel, p->fiber, p->value,
                                                   p->n_coeffs, n_theta, tp, D, w, y);
        return cudaGetLastError();
    }
    if ((kernel == NS_LIFE_K_KEY || kernel == NS_LIFE_K_VOXEL_F32D) && !p->start) return cudaErrorInvalidValue;
    if (kernel == NS_LIFE_K_VOXEL_F32D && (!by_voxel || !D32)) return cudaErrorInvalidValue;
    NS_LIFE_DISPATCH(launch_mw, kernel, p, by_voxel, tp, D, D32, w, y, hint, s);
    return cudaGetLastError();
}

extern "C" cudaError_t ns_life_launch_mty(ns_life_kernel kernel, const ns_life_dev_phi *p,
                                          int by_voxel, int32_t n_theta, int32_t tp,
                                          int32_t n_fibers, const double *D, const float *D32,
                                          const double *y, double *w, int hint, cudaStream_t s) {
    cudaError_t e = cudaMemsetAsync(w, 0, (size_t)n_fibers * sizeof(double), s);
    if (e != cudaSuccess) return e;
    if (p->n_coeffs == 0) return cudaGetLastError();
    if (kernel == NS_LIFE_K_REFERENCE) {
        ref_mty<<<hint > 0 ? hint : 1, 256, 0, s>>>(p->atom, p->voxel, p->fiber, p->value,
                                                    p->n_coeffs, n_theta, tp, D, y, w);
        return cudaGetLastError();
    }
    if ((kernel == NS_LIFE_K_KEY || kernel == NS_LIFE_K_VOXEL_F32D) && !p->start) return cudaErrorInvalidValue;
    if (kernel == NS_LIFE_K_VOXEL_F32D && (!by_voxel || !D32)) return cudaErrorInvalidValue;
    NS_LIFE_DISPATCH(launch_mty, kernel, p, by_voxel, tp, D, D32, y, w, hint, s);
    return cudaGetLastError();
}
