// The LiFE products on the GPU (docs/life.md): the paper's reference kernels
// (Fig. 6: one thread per coefficient, grid-stride loop, an atomic per row)
// and the optimised kernels of Section 4.2.2: a warp per sub-vector or per
// 32 coefficients, n_theta padded to Tp = 32 NT rows held NT per lane in
// registers, coefficient metadata loaded by 32 lanes at once and broadcast
// with shuffles, zero weights skipped with a warp ballot, dot products
// reduced with shuffles (no shared memory, no __syncthreads), several
// sub-vectors (warps) per block.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <string.h>

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

// The warp's index in the grid.
__device__ __forceinline__ int64_t warp_index() { return ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; }

// The voxel kernels' warp: its voxel (the key of the voxel-sorted copy) and
// its coefficients k0 .. k1 - 1; false for the warps past the last voxel.
// kSkipEmpty: false for a voxel without coefficients too.
template <bool kSkipEmpty>
__device__ __forceinline__ bool warp_key(const int64_t *start, int32_t n_keys, int64_t *key, int64_t *k0, int64_t *k1) {
    *key = warp_index();
    if (*key >= n_keys) return false;
    *k0 = start[*key], *k1 = start[*key + 1];
    return !kSkipEmpty || *k0 != *k1;
}

__device__ __forceinline__ double warp_sum(double x) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(FULL, x, o);
    return x;
}

// w[f] += c for the 32 lanes' coefficients (voxel_mty with a half-precision
// dictionary: where it measured faster) (lane j: fiber f, contribution c;
// valid: lane j holds a coefficient). The coefficients of a voxel come from
// a fiber about 1.6 times on average (a streamline changes its nearest atom
// inside a voxel; 1.61 coefficients per (voxel, fiber) pair on the 50,000-
// fiber model), and those of an atom often too, adjacent in the sorted copy
// when the original order is by fiber: a run of equal fibers in consecutive
// lanes is summed first (segmented suffix sums, warp-uniform branch taken
// only when some run is longer than one lane) and its first lane issues the
// one atomic. Runs are found by comparing neighbours, so a fiber that comes
// back later in the batch simply starts a run of its own (still correct).
__device__ __forceinline__ void add_runs(double *w, int32_t f, double c, bool valid, int lane) {
    if (!valid) f = -1, c = 0.0; // invalid lanes: a run of their own, never added
    const int32_t next = __shfl_down_sync(FULL, f, 1);
    const unsigned last = __ballot_sync(FULL, lane == 31 || next != f); // bit j: j ends its run
    if (last != FULL) {
        const int end = lane + __ffs(last >> lane) - 1; // the last lane of this lane's run
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const double up = __shfl_down_sync(FULL, c, o);
            if (lane + o <= end) c += up;
        }
    }
    const bool head = lane == 0 || ((last >> (lane - 1)) & 1u);
    if (valid && head) atomicAdd(&w[f], c);
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
    const int64_t warp = warp_index();
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
    const int64_t warp = warp_index();
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

// The voxel kernels (voxel-voxel, voxel-f32d, voxel-f16d): a warp per voxel
// of the voxel-sorted copy, the dictionary column of each coefficient
// gathered with 16-byte loads. T is the dictionary's storage type (double,
// float or __half); V = 16 / sizeof(T) entries per load, G = 32 / V lanes per
// column, so one warp step gathers V columns at once (V coefficients), lane
// g of group q holding rows 32 c + g V .. + V - 1 (c < NT = Tp / 32).
// Arithmetic type C: float64 for the float64 and float32 dictionaries; for
// the float16 one float32 (a float64 conversion issues at 16 per clock and SM
// on sm_80/90, an eighth of the float32 rate: 96 per coefficient would bound
// the kernel): y = M w sums a voxel's products per lane in float32, M^T y
// each dot product (float32 error ~1e-6 relative, far below the float16
// rounding of the dictionary, 2.4e-4); the sums over lanes and everything
// after them are float64.
// `scale` (a power of two) undoes the scaling of the float16 copy. Phi, y
// (M w) and Y (M^T y) are streamed (evict-first in L2) so that the
// dictionary, gathered about 400 times per column, stays in L2.
// 16 bytes of the dictionary: read-only path, not kept in L1 (no column is
// reused within an SM), kept in L2 before anything else (evict_last: the
// streamed Phi and voxel vectors go first).
__device__ __forceinline__ uint4 ld_dict16(const void *p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    uint64_t policy;
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
    uint4 v;
    asm("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p), "l"(policy));
    return v;
#else
    return __ldg(reinterpret_cast<const uint4 *>(p));
#endif
}

template <typename T> struct dict_vec;
template <> struct dict_vec<double> {
    typedef double C;
    static constexpr int V = 2;
    static __device__ __forceinline__ void load(const double *p, double *o) {
        const uint4 v = ld_dict16(p);
        o[0] = __hiloint2double((int)v.y, (int)v.x), o[1] = __hiloint2double((int)v.w, (int)v.z);
    }
};
template <> struct dict_vec<float> {
    typedef double C;
    static constexpr int V = 4;
    static __device__ __forceinline__ void load(const float *p, double *o) {
        const uint4 v = ld_dict16(p);
        o[0] = __uint_as_float(v.x), o[1] = __uint_as_float(v.y), o[2] = __uint_as_float(v.z),
        o[3] = __uint_as_float(v.w);
    }
};
template <> struct dict_vec<__half> {
    typedef float C;
    static constexpr int V = 8;
    static __device__ __forceinline__ void load(const __half *p, float *o) {
        const uint4 v = ld_dict16(p);
        const unsigned u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            __half2 h;
            memcpy(&h, &u[i], 4);
            const float2 f = __half22float2(h);
            o[2 * i] = f.x, o[2 * i + 1] = f.y;
        }
    }
};

// The rows of one gathered column that lane g of a group holds, from `col`
// (the column's row g V): f(c, i, d) with d = row 32 c + g V + i, type C.
template <int NT, typename T, typename F>
__device__ __forceinline__ void each_dict_row(const T *col, F f) {
#pragma unroll
    for (int c = 0; c < NT; ++c) {
        typename dict_vec<T>::C d[dict_vec<T>::V];
        dict_vec<T>::load(col + 32 * c, d);
#pragma unroll
        for (int i = 0; i < dict_vec<T>::V; ++i) f(c, i, d[i]);
    }
}

// Bit position of the n-th (0-based) set bit of m; n < popc(m).
__device__ __forceinline__ int nth_set_bit(unsigned m, int n) {
    int pos = 0;
#pragma unroll
    for (int w = 16; w > 0; w >>= 1) {
        const int c = __popc(m & ((1u << w) - 1u));
        if (n >= c) n -= c, m >>= w, pos += w;
    }
    return pos;
}

// y = M w: the voxel's column summed in registers (each group its share of
// the coefficients), the groups' sums added with shuffles, written once (no
// atomics, no zeroing). Zero weights are skipped: the nonzero coefficients
// of each batch of 32 are compacted to the low lanes first, so the V groups
// never gather a column that is multiplied by zero.
template <int NT, typename T>
__global__ void __launch_bounds__(32 * WARPS_PER_BLOCK)
voxel_mw(const int64_t *start, const int32_t *atom, const int32_t *fiber, const double *value,
         int32_t n_voxels, int tp, const T *D, double scale, const double *w, double *y) {
    typedef typename dict_vec<T>::C C;
    constexpr int V = dict_vec<T>::V, G = 32 / V;
    const int lane = threadIdx.x & 31, q = lane / G, g = lane % G;
    int64_t vox, k0, k1;
    if (!warp_key<false>(start, n_voxels, &vox, &k0, &k1)) return;
    C acc[NT][V];
#pragma unroll
    for (int c = 0; c < NT; ++c)
#pragma unroll
        for (int i = 0; i < V; ++i) acc[c][i] = 0;
    for (int64_t base = k0; base < k1; base += 32) {
        const int64_t k = base + lane;
        double s = 0.0;
        int32_t a = 0;
        if (k < k1) {
            s = __ldg(w + __ldcs(fiber + k)) * __ldcs(value + k);
            a = __ldcs(atom + k);
        }
        const unsigned todo = __ballot_sync(FULL, s != 0.0);
        const int n = __popc(todo);
        const int src = lane < n ? nth_set_bit(todo, lane) : 0;
        const C sc = (C)__shfl_sync(FULL, s, src);
        a = __shfl_sync(FULL, a, src);
#pragma unroll 2
        for (int t = 0; t < n; t += V) {
            const int j = t + q;
            const C sj = __shfl_sync(FULL, sc, j & 31);
            const int32_t aj = __shfl_sync(FULL, a, j & 31);
            if (j < n) each_dict_row<NT>(D + (int64_t)aj * tp + g * V, [&](int c, int i, C d) { acc[c][i] += sj * d; });
        }
    }
    double sum[NT][V];
#pragma unroll
    for (int c = 0; c < NT; ++c)
#pragma unroll
        for (int i = 0; i < V; ++i) sum[c][i] = (double)acc[c][i];
#pragma unroll
    for (int o = G; o < 32; o <<= 1)
#pragma unroll
        for (int c = 0; c < NT; ++c)
#pragma unroll
            for (int i = 0; i < V; ++i) sum[c][i] += __shfl_xor_sync(FULL, sum[c][i], o);
    if (q == 0) {
        double *col = y + vox * tp + g * V;
#pragma unroll
        for (int c = 0; c < NT; ++c)
#pragma unroll
            for (int i = 0; i < V; i += 2)
                __stcs(reinterpret_cast<double2 *>(col + 32 * c + i),
                       make_double2(sum[c][i] * scale, sum[c][i + 1] * scale));
    }
}

// w = M^T y: Y(:, v) in registers (the group's rows, type C), V columns
// gathered per step, each group's dot product reduced over its G lanes by
// shuffles; lane j keeps coefficient j's result (float64) and the 32
// atomics on w go out together.
template <int NT, typename T>
__global__ void __launch_bounds__(32 * WARPS_PER_BLOCK)
voxel_mty(const int64_t *start, const int32_t *atom, const int32_t *fiber, const double *value,
          int32_t n_voxels, int tp, const T *D, double scale, const double *y, double *w) {
    typedef typename dict_vec<T>::C C;
    constexpr int V = dict_vec<T>::V, G = 32 / V;
    const int lane = threadIdx.x & 31, q = lane / G, g = lane % G;
    int64_t vox, k0, k1;
    if (!warp_key<true>(start, n_voxels, &vox, &k0, &k1)) return;
    C r[NT][V];
    {
        const double *col = y + vox * tp + g * V;
#pragma unroll
        for (int c = 0; c < NT; ++c)
#pragma unroll
            for (int i = 0; i < V; i += 2) {
                const double2 v = __ldcs(reinterpret_cast<const double2 *>(col + 32 * c + i));
                r[c][i] = (C)v.x, r[c][i + 1] = (C)v.y;
            }
    }
    const int from = (lane % V) * G; // the group that computes coefficient `lane` of a batch
    for (int64_t base = k0; base < k1; base += 32) {
        const int64_t k = base + lane;
        const int count = k1 - base < 32 ? (int)(k1 - base) : 32;
        const int32_t a = k < k1 ? __ldcs(atom + k) : 0;
        double mine = 0.0;
#pragma unroll 2
        for (int t = 0; t < count; t += V) {
            const int j = t + q;
            const int32_t aj = __shfl_sync(FULL, a, j & 31);
            C p = 0;
            if (j < count) each_dict_row<NT>(D + (int64_t)aj * tp + g * V, [&](int c, int i, C d) { p += r[c][i] * d; });
#pragma unroll
            for (int o = 1; o < G; o <<= 1) p += __shfl_xor_sync(FULL, p, o);
            const C got = __shfl_sync(FULL, p, from);
            if (lane >= t && lane < t + V) mine = (double)got;
        }
        // the fiber runs pay only with a half-precision dictionary (slower with float32 and
        // float64; docs/life.md, "Runs of equal fibers")
        if (sizeof(T) == 2)
            add_runs(w, k < k1 ? __ldcs(fiber + k) : -1, k < k1 ? mine * __ldcs(value + k) * scale : 0.0, k < k1, lane);
        else if (k < k1)
            atomicAdd(&w[__ldcs(fiber + k)], mine * __ldcs(value + k) * scale);
    }
}

// The atom a of this warp (the atom kernels, a warp per atom): its
// coefficients [*k0, *k1) of the atom-sorted copy and this lane's rows of
// D(:, a) in d; false when there is no such atom or it has no coefficient.
template <int NT>
__device__ __forceinline__ bool atom_open(const int64_t *start, int32_t n_atoms, int tp, const double *D, int lane,
                                          int64_t *k0, int64_t *k1, double (&d)[NT]) {
    const int64_t at = warp_index();
    if (at >= n_atoms) return false;
    *k0 = start[at];
    *k1 = start[at + 1];
    if (*k0 == *k1) return false;
#pragma unroll
    for (int c = 0; c < NT; ++c) d[c] = D[at * tp + lane + 32 * c];
    return true;
}

// y = M w on the atom-sorted copy, a warp per atom: D(:, a) in registers,
// one atomic per row per coefficient (voxels differ within an atom).
template <int NT>
__global__ void atom_mw(const int64_t *start, const int32_t *voxel, const int32_t *fiber,
                        const double *value, int32_t n_atoms, int tp, const double *D,
                        const double *w, double *y) {
    const int lane = threadIdx.x & 31;
    int64_t k0, k1;
    double d[NT];
    if (!atom_open<NT>(start, n_atoms, tp, D, lane, &k0, &k1, d)) return;
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

// w = M^T y on the atom-sorted copy, a warp per atom: D(:, a) in registers,
// Y(:, v) read per coefficient.
template <int NT>
__global__ void atom_mty(const int64_t *start, const int32_t *voxel, const int32_t *fiber,
                         const double *value, int32_t n_atoms, int tp, const double *D,
                         const double *y, double *w) {
    const int lane = threadIdx.x & 31;
    int64_t k0, k1;
    double r[NT];
    if (!atom_open<NT>(start, n_atoms, tp, D, lane, &k0, &k1, r)) return;
    for (int64_t base = k0; base < k1; base += 32) {
        const int64_t k = base + lane;
        const int count = k1 - base < 32 ? (int)(k1 - base) : 32;
        const int32_t o = k < k1 ? voxel[k] : 0;
        double mine = 0.0;
#pragma unroll 8
        for (int j = 0; j < count; ++j) {
            const double *col = y + (int64_t)__shfl_sync(FULL, o, j) * tp + lane;
            double p = 0.0;
#pragma unroll
            for (int c = 0; c < NT; ++c) p += r[c] * col[32 * c];
            p = warp_sum(p);
            if (lane == j) mine = p;
        }
        if (k < k1) atomicAdd(&w[fiber[k]], mine * value[k]);
    }
}

// ------------------------------------------------ low-rank dictionary (voxel-lr16d)

// voxel-lr16d factors the dictionary as D ~ U C (U: n_theta x r orthonormal
// columns, the leading eigenvectors of D D^T; C = U^T D, r x n_atoms, kept in
// scaled float16), so a gathered column is r entries instead of n_theta:
//   y = M w:   P = C Z (the voxel kernel on C, r rows), then y(:, v) = U P(:, v)
//   w = M^T y: Q(:, v) = U^T y(:, v), then the voxel kernel on C and Q
// These two kernels apply U and U^T per voxel, LR_VOX voxels per warp: lane l
// holds rows (or components) l, l + 32, ... of all LR_VOX voxels in
// registers, so each entry of U, read through L1, serves LR_VOX voxels, and
// each staged input value (shared memory, a broadcast read) serves the
// lane's NT rows. Float64 throughout. Dynamic shared memory: LR_VOX x tp
// doubles per warp (24 KB per 4-warp block at tp = 96; fewer warps per block
// above 48 KB).
#define LR_VOX 8
extern __shared__ double lr_smem[];

// Z(:, v) = A^T X(:, v) for every voxel, A n_in rows of out_rows (row-major):
//   expand  (PROJECT false): y(:, v) = U P(:, v), A = Ut = U^T (r x tp, row j
//            = column j of U, zero in rows n_theta..tp-1 of U), X = P (r x
//            n_voxels), n_in = r, Z = y (every row written, streamed; n_theta
//            unused);
//   project (PROJECT true):  Q(:, v) = U^T y(:, v), A = Un = U (tp x r,
//            row-major: entry (row, j) at row * r + j; rows n_theta..tp-1
//            zero), X = y (tp x n_voxels), n_in = n_theta, Z = Q (r x
//            n_voxels; r <= tp: lane l holds components l + 32 c < r).
template <int NT, bool PROJECT>
__global__ void __launch_bounds__(32 * WARPS_PER_BLOCK)
lr_apply(const double *A, const double *X, int r, int n_theta, int32_t n_voxels, double *Z) {
    constexpr int tp = 32 * NT;
    const int n_in = PROJECT ? n_theta : r, in_rows = PROJECT ? tp : r, out_rows = PROJECT ? r : tp;
    const int lane = threadIdx.x & 31;
    double *sx = lr_smem + (size_t)(threadIdx.x >> 5) * LR_VOX * tp; /* [b][j], j < n_in <= tp */
    const int64_t v0 = warp_index() * LR_VOX;
    if (v0 >= n_voxels) return;
    const int nb = n_voxels - v0 < LR_VOX ? (int)(n_voxels - v0) : LR_VOX;
    for (int b = 0; b < LR_VOX; ++b)
        for (int j = lane; j < n_in; j += 32) sx[b * tp + j] = b < nb ? __ldcs(X + (v0 + b) * in_rows + j) : 0.0;
    __syncwarp();
    double acc[NT][LR_VOX];
#pragma unroll
    for (int c = 0; c < NT; ++c)
#pragma unroll
        for (int b = 0; b < LR_VOX; ++b) acc[c][b] = 0.0;
    for (int j = 0; j < n_in; ++j) {
        double u[NT];
#pragma unroll
        for (int c = 0; c < NT; ++c)
            u[c] = !PROJECT || 32 * c + lane < r ? __ldg(A + (int64_t)j * out_rows + lane + 32 * c) : 0.0;
#pragma unroll
        for (int b = 0; b < LR_VOX; ++b) {
            const double xb = sx[b * tp + j];
#pragma unroll
            for (int c = 0; c < NT; ++c) acc[c][b] += u[c] * xb;
        }
    }
#pragma unroll
    for (int b = 0; b < LR_VOX; ++b)
        if (b < nb)
#pragma unroll
            for (int c = 0; c < NT; ++c) {
                if (!PROJECT)
                    __stcs(Z + (v0 + b) * out_rows + lane + 32 * c, acc[c][b]);
                else if (32 * c + lane < r)
                    Z[(v0 + b) * out_rows + lane + 32 * c] = acc[c][b];
            }
}

// lr_apply's block shape: as many of the 4 warps as fit 48 KB of dynamic
// shared memory (LR_VOX x tp doubles each).
template <int NT>
static void launch_lr(bool project, const double *A, const double *X, int r, int n_theta, int32_t n_voxels,
                      double *Z, cudaStream_t s) {
    constexpr int tp = 32 * NT;
    int warps = WARPS_PER_BLOCK;
    while (warps > 1 && (size_t)warps * LR_VOX * tp * sizeof(double) > 48 * 1024) --warps;
    const int64_t groups = ((int64_t)n_voxels + LR_VOX - 1) / LR_VOX;
    const int64_t blocks = (groups + warps - 1) / warps;
    const int grid = blocks < 1 ? 1 : (int)blocks;
    const size_t smem = (size_t)warps * LR_VOX * tp * sizeof(double);
    (project ? lr_apply<NT, true> : lr_apply<NT, false>)<<<grid, 32 * warps, smem, s>>>(A, X, r, n_theta, n_voxels, Z);
}

// ------------------------------------------------------------ launchers

static int grid_for(int64_t warps, int blocks_hint) {
    int64_t blocks = (warps + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
    if (blocks_hint > 0 && blocks > blocks_hint) blocks = blocks_hint;
    return blocks < 1 ? 1 : (int)blocks;
}

// One product with Tp = 32 NT rows: y = M w (mty false: in = w, out = y) or
// w = M^T y (mty true: in = y, out = w); the two kernels of each partition
// take the same arguments.
template <int NT, typename T>
static void launch_voxel(bool mty, const ns_life_dev_phi *p, int tp, const T *D, double scale, const double *in,
                         double *out, cudaStream_t s) {
    (mty ? voxel_mty<NT, T> : voxel_mw<NT, T>)<<<grid_for(p->n_keys, 0), 32 * WARPS_PER_BLOCK, 0, s>>>(
        p->start, p->atom, p->fiber, p->value, p->n_keys, tp, D, scale, in, out);
}

template <int NT>
static void launch_product(bool mty, ns_life_kernel kernel, const ns_life_dev_phi *p, int by_voxel, int tp,
                           const double *D, const void *Dr, double scale, const double *in, double *out, int hint,
                           cudaStream_t s) {
    const int threads = 32 * WARPS_PER_BLOCK;
    if (kernel == NS_LIFE_K_VOXEL_F32D) {
        launch_voxel<NT, float>(mty, p, tp, (const float *)Dr, 1.0, in, out, s);
    } else if (kernel == NS_LIFE_K_VOXEL_F16D) {
        launch_voxel<NT, __half>(mty, p, tp, (const __half *)Dr, scale, in, out, s);
    } else if (kernel == NS_LIFE_K_COEFF) {
        (mty ? coeff_mty<NT> : coeff_mw<NT>)<<<grid_for((p->n_coeffs + 31) / 32, hint * 8), threads, 0, s>>>(
            p->atom, p->voxel, p->fiber, p->value, p->n_coeffs, tp, D, in, out);
    } else if (by_voxel) {
        launch_voxel<NT, double>(mty, p, tp, D, 1.0, in, out, s);
    } else {
        (mty ? atom_mty<NT> : atom_mw<NT>)<<<grid_for(p->n_keys, 0), threads, 0, s>>>(
            p->start, p->voxel, p->fiber, p->value, p->n_keys, tp, D, in, out);
    }
}

// fn<n>(...) for n = 1 .. 8 chunks of 32 rows.
#define NS_LIFE_DISPATCH(n, fn, ...)              \
    switch (n) {                                  \
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

// ns_life_launch_mw and ns_life_launch_mty: out (n_zero entries) zeroed
// first unless n_zero is 0 (the kernel writes all of it).
static cudaError_t product(bool mty, ns_life_kernel kernel, const ns_life_dev_phi *p, int by_voxel, int32_t n_theta,
                           int32_t tp, size_t n_zero, const double *D, const void *Dr, double scale,
                           const double *in, double *out, int hint, cudaStream_t s) {
    if (n_zero) {
        cudaError_t e = cudaMemsetAsync(out, 0, n_zero * sizeof(double), s);
        if (e != cudaSuccess) return e;
    }
    if (p->n_coeffs == 0) return cudaGetLastError();
    if (kernel == NS_LIFE_K_REFERENCE) {
        (mty ? ref_mty : ref_mw)<<<hint > 0 ? hint : 1, 256, 0, s>>>(p->atom, p->voxel, p->fiber, p->value,
                                                                     p->n_coeffs, n_theta, tp, D, in, out);
        return cudaGetLastError();
    }
    const bool reduced = kernel == NS_LIFE_K_VOXEL_F32D || kernel == NS_LIFE_K_VOXEL_F16D;
    if (((kernel == NS_LIFE_K_KEY || reduced) && !p->start) || (reduced && (!by_voxel || !Dr)))
        return cudaErrorInvalidValue;
    NS_LIFE_DISPATCH(tp / 32, launch_product, mty, kernel, p, by_voxel, tp, D, Dr, scale, in, out, hint, s);
    return cudaGetLastError();
}

extern "C" cudaError_t ns_life_launch_mw(ns_life_kernel kernel, const ns_life_dev_phi *p,
                                         int by_voxel, int32_t n_theta, int32_t tp,
                                         int32_t n_voxels, const double *D, const void *Dr, double scale,
                                         const double *w, double *y, int hint, cudaStream_t s) {
    const bool voxel = kernel == NS_LIFE_K_KEY || kernel == NS_LIFE_K_VOXEL_F32D || kernel == NS_LIFE_K_VOXEL_F16D;
    const bool writes_all = voxel && by_voxel && p->n_keys == n_voxels;
    return product(false, kernel, p, by_voxel, n_theta, tp, writes_all ? 0 : (size_t)tp * (size_t)n_voxels, D, Dr,
                   scale, w, y, hint, s);
}

extern "C" cudaError_t ns_life_launch_mty(ns_life_kernel kernel, const ns_life_dev_phi *p,
                                          int by_voxel, int32_t n_theta, int32_t tp,
                                          int32_t n_fibers, const double *D, const void *Dr, double scale,
                                          const double *y, double *w, int hint, cudaStream_t s) {
    return product(true, kernel, p, by_voxel, n_theta, tp, (size_t)n_fibers, D, Dr, scale, y, w, hint, s);
}

extern "C" cudaError_t ns_life_launch_lr_mw(const ns_life_dev_phi *p, int32_t r, int32_t tp, int32_t n_voxels,
                                            const void *C16, double scale, const double *Ut, double *P,
                                            const double *w, double *y, cudaStream_t s) {
    if (!p->start || p->n_keys != n_voxels || r < 32 || r % 32 || r > tp || tp > NS_LIFE_MAX_THETA)
        return cudaErrorInvalidValue;
    if (p->n_coeffs > 0) {
        /* P = C Z: the float16 voxel kernel on the r-row factor (writes every column) */
        NS_LIFE_DISPATCH(r / 32, launch_product, false, NS_LIFE_K_VOXEL_F16D, p, 1, r, NULL, C16, scale, w, P, 0, s);
    } else {
        cudaError_t e = cudaMemsetAsync(P, 0, (size_t)r * (size_t)n_voxels * sizeof(double), s);
        if (e != cudaSuccess) return e;
    }
    NS_LIFE_DISPATCH(tp / 32, launch_lr, false, Ut, P, r, 0, n_voxels, y, s);
    return cudaGetLastError();
}

extern "C" cudaError_t ns_life_launch_lr_mty(const ns_life_dev_phi *p, int32_t r, int32_t tp, int32_t n_theta,
                                             int32_t n_voxels, int32_t n_fibers, const void *C16, double scale,
                                             const double *Un, double *Q, const double *y, double *w,
                                             cudaStream_t s) {
    if (!p->start || p->n_keys != n_voxels || r < 32 || r % 32 || r > tp || tp > NS_LIFE_MAX_THETA)
        return cudaErrorInvalidValue;
    cudaError_t e = cudaMemsetAsync(w, 0, (size_t)n_fibers * sizeof(double), s);
    if (e != cudaSuccess) return e;
    if (p->n_coeffs == 0) return cudaGetLastError();
    NS_LIFE_DISPATCH(tp / 32, launch_lr, true, Un, y, r, n_theta, n_voxels, Q, s);
    NS_LIFE_DISPATCH(r / 32, launch_product, true, NS_LIFE_K_VOXEL_F16D, p, 1, r, NULL, C16, scale, Q, w, 0, s);
    return cudaGetLastError();
}
