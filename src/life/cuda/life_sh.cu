// voxel-sh (docs/life.md, "voxel-sh"): the LiFE products with no dictionary in
// memory. A dictionary column is U^T f(u_a), f the sh_basis.c functions of the
// atom's orientation u_a on ENCODE's grid (R = (lmax + 1)(lmax + 2) / 2 of
// them), so per coefficient a lane computes u_a (a table of angles) and f (about
// 2 R float32 operations, no memory) instead of gathering n_theta entries
// through L2, which bound the gathering voxel kernels (life_products.cu):
//   y = M w:    P(:, v) = sum_k s_k f(u_k) (s_k = Phi_k w_fiber), y(:, v) = U^T P(:, v)
//   w = M^T y:  Q(:, v) = U y(:, v), w_fiber += Phi_k f(u_k) . Q(:, v)
// GV = 8 lanes per voxel (4 voxels per warp). In w = M^T y each lane takes a
// contiguous share of its voxel's coefficients (runs of equal fibers then
// meet in one lane and are summed before their atomic); in y = M w the lanes
// interleave (coalesced loads). Both load SH_BATCH coefficients at a time so
// that their memory latencies overlap. U stays in shared memory for the
// block's life (persistent blocks: one load per block), the voxels go to the
// warps in order of decreasing coefficient count (`order`), so the 4 voxels
// of a warp have similar work. float32 arithmetic; y and the contributions
// to w are float64.
#include <cuda_runtime.h>

#include "life/cuda/life_kernels.h"

#define FULL 0xffffffffu
#define SH_GV 8      /* lanes per voxel */
#define SH_WARPS 4   /* warps per block */
#ifndef SH_BATCH
#define SH_BATCH 4   /* coefficients a lane loads at once */
#endif
#ifndef SH_MINB_MW
#define SH_MINB_MW 4 /* blocks per SM the registers must allow: y = M w up to lmax 12, faster */
#endif               /* at 4 than at 1 (128 registers, 36 bytes spilled; docs/life.md, "voxel-sh"); */
                     /* lmax 14 and 16 would spill 0.8 and 2.4 KB at 128, so they are not held) */
#ifndef SH_MINB_MTY
#define SH_MINB_MTY 1 /* w = M^T y: not held (3 blocks at 159-162 registers; at 128, before the */
#endif                /* Horner form: 160 bytes spilled and slower) */

// Features of the basis of degree LMAX; RP: R rounded up to 4 x SH_GV (each
// lane of a voxel owns RL = RP / SH_GV consecutive ones when forming Q).
__host__ __device__ constexpr int sh_count(int lmax) { return (lmax + 1) * (lmax + 2) / 2; }
__host__ __device__ constexpr int sh_padded(int lmax) {
    return (sh_count(lmax) + 4 * SH_GV - 1) / (4 * SH_GV) * (4 * SH_GV);
}

// The orientation of atom a on ENCODE's grid of L steps (ns_life_atom_orientation):
// atom 0 the zenith, else (cos p sin t, sin p sin t, cos t) with p = i pi / L,
// t = (j + 1) pi / L, a - 1 = i (L - 1) + j. ang: (cos, sin) of p for i < L,
// then (sin, cos) of t for j < L - 1 (made on the host in float64; in shared
// memory here: two table reads instead of two sincospi per coefficient).
__device__ __forceinline__ void atom_dir(int32_t a, int L, float inv_lm1, const float2 *ang, float &x, float &y,
                                         float &z) {
    if (a <= 0) {
        x = 0.f, y = 0.f, z = 1.f;
        return;
    }
    const int b = a - 1;
    int i = (int)((float)b * inv_lm1), j = b - i * (L - 1);
    if (j < 0) --i, j += L - 1;
    else if (j >= L - 1) ++i, j -= L - 1;
    const float2 p = ang[i], t = ang[L + j];
    x = p.x * t.x, y = p.y * t.x, z = t.y;
}

// The shared memory of a block: the U layout (`floats` of them) then the angle table.
__device__ __forceinline__ const float2 *load_smem(float *su, const float *U, int floats, const float2 *ang, int L) {
    for (int i = threadIdx.x; i < floats; i += blockDim.x) su[i] = U[i];
    float2 *sa = reinterpret_cast<float2 *>(su + (floats + 1) / 2 * 2);
    for (int i = threadIdx.x; i < 2 * L - 1; i += blockDim.x) sa[i] = ang[i];
    __syncthreads();
    return sa;
}

// The Chebyshev terms T_k(2 z^2 - 1) (k <= LMAX / 2) and z times them.
template <int LMAX>
__device__ __forceinline__ void sh_radial(float z, float *T, float *zT) {
    constexpr int K0 = LMAX / 2 + 1;
    const float c2 = 2.f * z * z - 1.f;
    T[0] = 1.f;
    T[1] = c2;
#pragma unroll
    for (int k = 2; k < K0; ++k) T[k] = 2.f * c2 * T[k - 1] - T[k - 2];
#pragma unroll
    for (int k = 0; k < K0; ++k) zT[k] = z * T[k];
}

// Terms of order m (features J .. of sh_basis.c's order), then m + 1: a
// recursion over m rather than a loop, so that every register index is known
// at compile time at every degree (a loop over m left the arrays in local
// memory from lmax 14 on).
__host__ __device__ constexpr int sh_terms(int lmax, int m) {
    return m % 2 == 0 ? (lmax - m) / 2 + 1 : (lmax - m + 1) / 2;
}

template <int LMAX, int M, int J> struct sh_order_m {
    // The dot product of orders M.. as Horner's scheme in w = x + i y: with c_m = dc_m - i ds_m
    // (dc_m, ds_m: the order's radial terms against q's cosine and sine features),
    // f(u) . q = Re sum_m c_m w^m, and h_M = c_M + w h_(M+1) (returned as hr + i hi): 4
    // multiply-adds per order where forming w^m and adding re dc + im ds took 6.
    static __device__ __forceinline__ void dot(float x, float y, const float *T, const float *zT, const float *q,
                                               float &hr, float &hi) {
        constexpr int K = sh_terms(LMAX, M);
        float dc = 0.f, ds = 0.f;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const float p = M % 2 ? zT[k] : T[k];
            dc = fmaf(p, q[J + (M > 0 ? 2 * k : k)], dc);
            if (M > 0) ds = fmaf(p, q[J + 2 * k + 1], ds);
        }
        float ur = 0.f, ui = 0.f;
        sh_order_m<LMAX, M + 1, J + (M > 0 ? 2 * K : K)>::dot(x, y, T, zT, q, ur, ui);
        hr = fmaf(ur, x, fmaf(-ui, y, dc));
        hi = fmaf(ur, y, fmaf(ui, x, -ds));
    }
    // P_{J..} += s f(u)_{J..}
    static __device__ __forceinline__ void add(float x, float y, const float *T, const float *zT, float re,
                                               float im, float s, float *P) {
        if (M > 0) {
            const float r2 = re * x - im * y;
            im = re * y + im * x;
            re = r2;
        }
        constexpr int K = sh_terms(LMAX, M);
        const float sr = s * re, si = s * im;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const float p = M % 2 ? zT[k] : T[k];
            if (M > 0) {
                P[J + 2 * k] = fmaf(p, sr, P[J + 2 * k]);
                P[J + 2 * k + 1] = fmaf(p, si, P[J + 2 * k + 1]);
            } else {
                P[J + k] = fmaf(p, sr, P[J + k]);
            }
        }
        sh_order_m<LMAX, M + 1, J + (M > 0 ? 2 * K : K)>::add(x, y, T, zT, re, im, s, P);
    }
};
template <int LMAX, int J> struct sh_order_m<LMAX, LMAX + 1, J> {
    static __device__ __forceinline__ void dot(float, float, const float *, const float *, const float *, float &hr,
                                               float &hi) {
        hr = 0.f, hi = 0.f;
    }
    static __device__ __forceinline__ void add(float, float, const float *, const float *, float, float, float,
                                               float *) {}
};

// f(u) . q (q: R values in registers, sh_basis.c's order).
template <int LMAX>
__device__ __forceinline__ float sh_dot(float x, float y, float z, const float *q) {
    float T[LMAX / 2 + 1], zT[LMAX / 2 + 1], hr, hi;
    sh_radial<LMAX>(z, T, zT);
    sh_order_m<LMAX, 0, 0>::dot(x, y, T, zT, q, hr, hi);
    return hr;
}

// P += s f(u) (P: R values in registers).
template <int LMAX>
__device__ __forceinline__ void sh_add(float x, float y, float z, float s, float *P) {
    float T[LMAX / 2 + 1], zT[LMAX / 2 + 1];
    sh_radial<LMAX>(z, T, zT);
    sh_order_m<LMAX, 0, 0>::add(x, y, T, zT, 1.f, 0.f, s, P);
}

extern __shared__ float sh_smem[];

// The share [*k, *end) of a voxel's coefficients k0 .. k1 - 1 that lane r of SH_GV takes.
__device__ __forceinline__ void lane_share(int64_t k0, int64_t k1, int r, int64_t *k, int64_t *end) {
    const int64_t n = k1 - k0, per = (n + SH_GV - 1) / SH_GV;
    *k = k0 + r * per < k1 ? k0 + r * per : k1;
    *end = *k + per < k1 ? *k + per : k1;
}

// y = M w. Um: U^T in shared memory, row j (feature) of tp floats; every
// voxel in `order` (n_voxels of them) gets all tp rows of y written.
template <int LMAX>
__global__ void __launch_bounds__(32 * SH_WARPS, LMAX <= 12 ? SH_MINB_MW : 1)
sh_mw(const int64_t *start, const int32_t *atom, const int32_t *fiber, const double *value,
      const int32_t *order, int32_t n_voxels, int tp, int L, const float *Um, const float2 *ang, const double *w,
      double *y) {
    constexpr int R = sh_count(LMAX);
    float *su = sh_smem;
    const float2 *sa = load_smem(su, Um, R * tp, ang, L);
    const int lane = threadIdx.x & 31, grp = lane / SH_GV, r = lane % SH_GV;
    const int tl = tp / SH_GV; /* rows per lane: a multiple of 4 (tp is a multiple of 32) */
    const float inv_lm1 = 1.f / (float)(L - 1);
    const int64_t n_warps = ((int64_t)gridDim.x * blockDim.x) >> 5;
    for (int64_t quad = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; quad * 4 < n_voxels;
         quad += n_warps) {
        const int64_t slot = quad * 4 + grp;
        const bool have = slot < n_voxels;
        const int32_t vox = have ? order[slot] : 0;
        const int64_t k1 = have ? start[vox + 1] : 0;
        float P[R];
#pragma unroll
        for (int j = 0; j < R; ++j) P[j] = 0.f;
        // lane r takes coefficients k0 + r, k0 + r + GV, ... (coalesced in the group), SH_BATCH
        // at a time: their loads, then their w gathers, are in flight together
        for (int64_t base = (have ? start[vox] : 0) + r; base < k1; base += SH_GV * SH_BATCH) {
            int32_t f[SH_BATCH], a[SH_BATCH];
            double v[SH_BATCH], s[SH_BATCH];
#pragma unroll
            for (int i = 0; i < SH_BATCH; ++i) {
                const int64_t k = base + SH_GV * i;
                f[i] = k < k1 ? __ldcs(fiber + k) : -1;
                a[i] = k < k1 ? __ldcs(atom + k) : 0;
                v[i] = k < k1 ? __ldcs(value + k) : 0.0;
            }
#pragma unroll
            for (int i = 0; i < SH_BATCH; ++i) s[i] = f[i] >= 0 ? __ldg(w + f[i]) * v[i] : 0.0;
#pragma unroll
            for (int i = 0; i < SH_BATCH; ++i)
                if (s[i] != 0.0) {
                    float x, yy, z;
                    atom_dir(a[i], L, inv_lm1, sa, x, yy, z);
                    sh_add<LMAX>(x, yy, z, (float)s[i], P);
                }
        }
#pragma unroll
        for (int o = SH_GV / 2; o > 0; o >>= 1)
#pragma unroll
            for (int j = 0; j < R; ++j) P[j] += __shfl_xor_sync(FULL, P[j], o);
        // rows r tl .. r tl + tl - 1 of y(:, vox) = U^T P
        double *out = y + (int64_t)vox * tp + r * tl;
        for (int t0 = 0; t0 < tl; t0 += 4) {
            float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
            for (int j = 0; j < R; ++j) {
                const float4 u = *reinterpret_cast<const float4 *>(su + j * tp + r * tl + t0);
                acc.x = fmaf(u.x, P[j], acc.x), acc.y = fmaf(u.y, P[j], acc.y);
                acc.z = fmaf(u.z, P[j], acc.z), acc.w = fmaf(u.w, P[j], acc.w);
            }
            if (have) {
                __stcs(reinterpret_cast<double2 *>(out + t0), make_double2(acc.x, acc.y));
                __stcs(reinterpret_cast<double2 *>(out + t0 + 2), make_double2(acc.z, acc.w));
            }
        }
    }
}

// w = M^T y (w zeroed before). Uq: U in shared memory, row t of RP floats
// (features R .. RP - 1 zero); the first n_busy voxels of `order` have
// coefficients. rows: n_theta rounded up to even (rows beyond n_theta are
// zero in y and in U).
template <int LMAX>
__global__ void __launch_bounds__(32 * SH_WARPS, SH_MINB_MTY)
sh_mty(const int64_t *start, const int32_t *atom, const int32_t *fiber, const double *value,
       const int32_t *order, int32_t n_busy, int tp, int rows, int L, const float *Uq, const float2 *ang,
       const double *y, double *w) {
    constexpr int R = sh_count(LMAX), RP = sh_padded(LMAX), RL = RP / SH_GV;
    float *su = sh_smem;
    const float2 *sa = load_smem(su, Uq, rows * RP, ang, L);
    const int lane = threadIdx.x & 31, grp = lane / SH_GV, r = lane % SH_GV;
    const float inv_lm1 = 1.f / (float)(L - 1);
    const int64_t n_warps = ((int64_t)gridDim.x * blockDim.x) >> 5;
    for (int64_t quad = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; quad * 4 < n_busy;
         quad += n_warps) {
        const int64_t slot = quad * 4 + grp;
        const bool have = slot < n_busy;
        const int32_t vox = have ? order[slot] : 0;
        // Q(:, vox) = U y(:, vox): lane r forms features r RL .. r RL + RL - 1
        float qm[RL];
#pragma unroll
        for (int i = 0; i < RL; ++i) qm[i] = 0.f;
        if (have) {
            const double *yv = y + (int64_t)vox * tp;
#pragma unroll 8
            for (int t = 0; t < rows; t += 2) {
                const double2 yy = __ldcs(reinterpret_cast<const double2 *>(yv + t));
                const float y0 = (float)yy.x, y1 = (float)yy.y;
                const float *u0 = su + t * RP + r * RL, *u1 = u0 + RP;
#pragma unroll
                for (int i = 0; i < RL; i += 4) {
                    const float4 a = *reinterpret_cast<const float4 *>(u0 + i);
                    const float4 b = *reinterpret_cast<const float4 *>(u1 + i);
                    qm[i] = fmaf(a.x, y0, fmaf(b.x, y1, qm[i]));
                    qm[i + 1] = fmaf(a.y, y0, fmaf(b.y, y1, qm[i + 1]));
                    qm[i + 2] = fmaf(a.z, y0, fmaf(b.z, y1, qm[i + 2]));
                    qm[i + 3] = fmaf(a.w, y0, fmaf(b.w, y1, qm[i + 3]));
                }
            }
        }
        float q[R];
#pragma unroll
        for (int j = 0; j < R; ++j) q[j] = __shfl_sync(FULL, qm[j % RL], grp * SH_GV + j / RL);
        if (!have) continue;
        int64_t k = 0, end = 0;
        lane_share(start[vox], start[vox + 1], r, &k, &end);
        int32_t run = -1; // the fiber of the run being summed
        double sum = 0.0;
        for (; k < end; k += SH_BATCH) { // SH_BATCH coefficients' loads in flight together
            int32_t f[SH_BATCH], a[SH_BATCH];
            double v[SH_BATCH];
#pragma unroll
            for (int i = 0; i < SH_BATCH; ++i) {
                f[i] = k + i < end ? __ldg(fiber + k + i) : -1;
                a[i] = k + i < end ? __ldg(atom + k + i) : 0;
                v[i] = k + i < end ? __ldg(value + k + i) : 0.0;
            }
#pragma unroll
            for (int i = 0; i < SH_BATCH; ++i) {
                if (f[i] < 0) break;
                float x, yy, z;
                atom_dir(a[i], L, inv_lm1, sa, x, yy, z);
                const double c = (double)sh_dot<LMAX>(x, yy, z, q) * v[i];
                if (f[i] != run) {
                    if (run >= 0) atomicAdd(w + run, sum);
                    run = f[i], sum = c;
                } else {
                    sum += c;
                }
            }
        }
        if (run >= 0) atomicAdd(w + run, sum);
    }
}

static size_t with_angles(size_t floats, int L) {
    return ((floats + 1) / 2 * 2) * sizeof(float) + (2 * (size_t)L - 1) * sizeof(float2);
}
template <int LMAX> static size_t mw_smem(int tp, int L) { return with_angles((size_t)sh_count(LMAX) * tp, L); }
template <int LMAX> static size_t mty_smem(int rows, int L) { return with_angles((size_t)sh_padded(LMAX) * rows, L); }
static int even_rows(int n_theta) { return (n_theta + 1) / 2 * 2; }

// Persistent blocks: as many as are resident at once (at least one per SM).
template <typename K> static cudaError_t grid_of(K kernel, size_t smem, int sms, int *grid) {
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e != cudaSuccess) return e;
    int per_sm = 0;
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 32 * SH_WARPS, smem);
    if (e != cudaSuccess) return e;
    if (per_sm < 1) return cudaErrorInvalidConfiguration;
    *grid = per_sm * (sms > 0 ? sms : 1);
    return cudaSuccess;
}

template <int LMAX> static cudaError_t prepare(int tp, int n_theta, int L, int sms, int grid[2]) {
    cudaError_t e = grid_of(sh_mw<LMAX>, mw_smem<LMAX>(tp, L), sms, &grid[0]);
    return e == cudaSuccess ? grid_of(sh_mty<LMAX>, mty_smem<LMAX>(even_rows(n_theta), L), sms, &grid[1]) : e;
}

extern "C" int ns_life_sh_padded(int lmax) { return sh_padded(lmax); }

extern "C" cudaError_t ns_life_sh_prepare(int lmax, int32_t tp, int32_t n_theta, int32_t L, int sms, int grid[2]) {
    if (tp % 32 || tp > NS_LIFE_MAX_THETA || n_theta > tp || n_theta < 1 || L < 2) return cudaErrorInvalidValue;
    switch (lmax) {
    case 10: return prepare<10>(tp, n_theta, L, sms, grid);
    case 12: return prepare<12>(tp, n_theta, L, sms, grid);
    case 14: return prepare<14>(tp, n_theta, L, sms, grid);
    case 16: return prepare<16>(tp, n_theta, L, sms, grid);
    default: return cudaErrorInvalidValue;
    }
}

extern "C" cudaError_t ns_life_launch_sh_mw(const ns_life_dev_phi *p, int lmax, int32_t tp, int32_t n_voxels,
                                            int32_t L, const float *Um, const float *ang, const int32_t *order,
                                            const double *w, double *y, int grid, cudaStream_t s) {
    if (!p->start || p->n_keys != n_voxels || tp % 32 || tp > NS_LIFE_MAX_THETA || L < 2 || grid < 1)
        return cudaErrorInvalidValue;
    const int threads = 32 * SH_WARPS;
#define NS_SH_MW(l)                                                                                            \
    sh_mw<l><<<grid, threads, mw_smem<l>(tp, L), s>>>(p->start, p->atom, p->fiber, p->value, order, n_voxels, tp, \
                                                      L, Um, (const float2 *)ang, w, y)
    switch (lmax) {
    case 10: NS_SH_MW(10); break;
    case 12: NS_SH_MW(12); break;
    case 14: NS_SH_MW(14); break;
    case 16: NS_SH_MW(16); break;
    default: return cudaErrorInvalidValue;
    }
#undef NS_SH_MW
    return cudaGetLastError();
}

extern "C" cudaError_t ns_life_launch_sh_mty(const ns_life_dev_phi *p, int lmax, int32_t tp, int32_t n_theta,
                                             int32_t n_busy, int32_t n_fibers, int32_t L, const float *Uq,
                                             const float *ang, const int32_t *order, const double *y, double *w,
                                             int grid, cudaStream_t s) {
    if (!p->start || tp % 32 || tp > NS_LIFE_MAX_THETA || n_theta > tp || L < 2 || grid < 1)
        return cudaErrorInvalidValue;
    cudaError_t e = cudaMemsetAsync(w, 0, (size_t)n_fibers * sizeof(double), s);
    if (e != cudaSuccess || n_busy == 0) return e;
    const int rows = even_rows(n_theta), threads = 32 * SH_WARPS;
#define NS_SH_MTY(l)                                                                                           \
    sh_mty<l><<<grid, threads, mty_smem<l>(rows, L), s>>>(p->start, p->atom, p->fiber, p->value, order, n_busy, \
                                                          tp, rows, L, Uq, (const float2 *)ang, y, w)
    switch (lmax) {
    case 10: NS_SH_MTY(10); break;
    case 12: NS_SH_MTY(12); break;
    case 14: NS_SH_MTY(14); break;
    case 16: NS_SH_MTY(16); break;
    default: return cudaErrorInvalidValue;
    }
#undef NS_SH_MTY
    return cudaGetLastError();
}
