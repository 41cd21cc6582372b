// On-chip solvers: a warp (n <= 512) or a block (n <= 8192) per system on
// the Flat layout, keeping every intermediate in registers and shared
// memory so that device memory sees only the 40 bytes per unknown (double)
// of reading dl, d, du, rhs and writing x once.
//
// Algorithm (a partition / PCR-Thomas hybrid; docs/tridiag.md):
//  1. Thread t of the system owns M consecutive rows F = tM .. L = tM+M-1,
//     loaded coalesced through a per-warp shared-memory tile.
//  2. Inside its rows the thread eliminates downwards and upwards
//     (Thomas-like, 2M steps, registers only) so that every inner row reads
//         x[r] = delta[r] - alpha[r] x[F] - gamma[r] x[L],
//     leaving two rows per thread (F and L) that couple only to the
//     neighbouring threads' L and F: a tridiagonal system of 2T rows.
//  3. That reduced system is solved by parallel cyclic reduction: shuffles
//     inside a warp, shared memory inside a block (log2(2T) steps).
//  4. Each thread substitutes x[F], x[L] into its inner rows and stores.
// Rows past n are identity rows (0, 1, 0 | 0); dl[0] and du[n-1] are taken
// as 0. Arithmetic: about 20 flops per unknown plus 12 per reduced row and
// PCR step.
#include <cstdint>

#include "tridiag/cuda/kernels.h"

namespace {

constexpr unsigned kFull = 0xffffffffu;
constexpr int kWarpBlock = 128;  // warp method: 4 systems per block
constexpr int kBlockMax = 512;   // block method: at most 512 threads per system

template <typename T>
__device__ __forceinline__ bool bad_pivot(T p, T scale, T tol) {
    return !(fabs(p) > tol * scale) || isinf(p);
}

__device__ __forceinline__ void report(unsigned long long *err, long long system, long long unknown) {
    atomicMin(err, (static_cast<unsigned long long>(system) << 32) |
                       static_cast<unsigned long long>(unknown));
}

// Load rows [row0, row0 + 32M) of one array of a system: the warp reads 32
// consecutive entries per instruction into a tile (lane l's M rows at
// l * (M + 1), the +1 keeping 64-bit reads conflict-free), then each lane
// takes its own M rows. Rows >= n get `pad`.
template <typename T, int M>
__device__ __forceinline__ void stage_in(const T *__restrict__ src, int n, int row0, T pad,
                                         T *tile, int lane, T (&v)[M]) {
    if constexpr (M == 1) {
        const int row = row0 + lane;
        v[0] = row < n ? src[row] : pad;
    } else {
#pragma unroll
        for (int j = 0; j < M; ++j) {
            const int local = j * 32 + lane;
            const int row = row0 + local;
            tile[(local / M) * (M + 1) + local % M] = row < n ? src[row] : pad;
        }
        __syncwarp();
#pragma unroll
        for (int r = 0; r < M; ++r) v[r] = tile[lane * (M + 1) + r];
        __syncwarp();
    }
}

template <typename T, int M>
__device__ __forceinline__ void stage_out(T *__restrict__ dst, int n, int row0, T *tile, int lane,
                                          const T (&v)[M]) {
    if constexpr (M == 1) {
        const int row = row0 + lane;
        if (row < n) dst[row] = v[0];
    } else {
#pragma unroll
        for (int r = 0; r < M; ++r) tile[lane * (M + 1) + r] = v[r];
        __syncwarp();
#pragma unroll
        for (int j = 0; j < M; ++j) {
            const int local = j * 32 + lane;
            const int row = row0 + local;
            if (row < n) dst[row] = tile[(local / M) * (M + 1) + local % M];
        }
        __syncwarp();
    }
}

// One PCR step on normalised rows (diagonal 1): row i combines with rows
// i - s (lo) and i + s (hi); out-of-range neighbours are zero rows.
template <typename T>
__device__ __forceinline__ void pcr_combine(T ai, T ci, T di, T al, T cl, T dl_, T ah, T ch, T dh,
                                            T tol, T &na, T &nc, T &nd, bool &ok) {
    const T nb = T(1) - ai * cl - ci * ah;
    if (bad_pivot(nb, T(1), tol)) ok = false;
    const T inv = T(1) / nb;
    na = -ai * al * inv;
    nc = -ci * ch * inv;
    nd = (di - ai * dl_ - ci * dh) * inv;
}

// PCR on the reduced system of a warp: Q rows per lane, row i = Q*lane + q.
// The parity of a neighbour's row is the same on every lane, so each
// shuffle fetches one register from the source lane.
template <typename T, int Q>
__device__ __forceinline__ void pcr_warp(T (&ra)[Q], T (&rc)[Q], T (&rd)[Q], int lane, T tol, bool &ok) {
    constexpr int R = 32 * Q;
#pragma unroll
    for (int s = 1; s < R; s <<= 1) {
        T na[Q], nc[Q], nd[Q];
#pragma unroll
        for (int q = 0; q < Q; ++q) {
            const int i = Q * lane + q;
            const int jl = i - s, jh = i + s;
            const int ql = Q == 1 ? 0 : (jl & 1), qh = Q == 1 ? 0 : (jh & 1);
            const int sl = (Q == 1 ? jl : (jl >> 1)) & 31, sh = (Q == 1 ? jh : (jh >> 1)) & 31;
            T al = __shfl_sync(kFull, ql ? ra[Q - 1] : ra[0], sl);
            T cl = __shfl_sync(kFull, ql ? rc[Q - 1] : rc[0], sl);
            T dl_ = __shfl_sync(kFull, ql ? rd[Q - 1] : rd[0], sl);
            T ah = __shfl_sync(kFull, qh ? ra[Q - 1] : ra[0], sh);
            T ch = __shfl_sync(kFull, qh ? rc[Q - 1] : rc[0], sh);
            T dh = __shfl_sync(kFull, qh ? rd[Q - 1] : rd[0], sh);
            if (jl < 0) al = cl = dl_ = T(0);
            if (jh >= R) ah = ch = dh = T(0);
            pcr_combine(ra[q], rc[q], rd[q], al, cl, dl_, ah, ch, dh, tol, na[q], nc[q], nd[q], ok);
        }
#pragma unroll
        for (int q = 0; q < Q; ++q) {
            ra[q] = na[q];
            rc[q] = nc[q];
            rd[q] = nd[q];
        }
    }
}

// PCR on the reduced system of a block (R = Q * T rows) in shared memory.
template <typename T, int Q>
__device__ __forceinline__ void pcr_block(T (&ra)[Q], T (&rc)[Q], T (&rd)[Q], int t, int tps,
                                          T *sa, T *sc, T *sd, T tol, bool &ok) {
    const int R = Q * tps;
    for (int s = 1; s < R; s <<= 1) {
#pragma unroll
        for (int q = 0; q < Q; ++q) {
            sa[Q * t + q] = ra[q];
            sc[Q * t + q] = rc[q];
            sd[Q * t + q] = rd[q];
        }
        __syncthreads();
#pragma unroll
        for (int q = 0; q < Q; ++q) {
            const int i = Q * t + q;
            const int jl = i - s, jh = i + s;
            const bool lo = jl >= 0, hi = jh < R;
            pcr_combine(ra[q], rc[q], rd[q], lo ? sa[jl] : T(0), lo ? sc[jl] : T(0), lo ? sd[jl] : T(0),
                        hi ? sa[jh] : T(0), hi ? sc[jh] : T(0), hi ? sd[jh] : T(0), tol, ra[q], rc[q],
                        rd[q], ok);
        }
        __syncthreads();
    }
}

template <typename T, int M, bool kBlock>
__global__ void __launch_bounds__(kBlock ? kBlockMax : kWarpBlock)
onchip_kernel(int n, int batch, int tps, const T *__restrict__ dl, const T *__restrict__ d,
              const T *__restrict__ du, T *__restrict__ x, T tol, unsigned long long *err) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T *smem = reinterpret_cast<T *>(smem_raw);
    constexpr int Q = M == 1 ? 1 : 2; // reduced rows per thread
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int t = threadIdx.x % tps;  // rank of the thread in its system
    const long long sys = static_cast<long long>(blockIdx.x) * (blockDim.x / tps) + threadIdx.x / tps;
    if (sys >= batch) return; // whole warps (warp method) or whole blocks (block method)

    T *tile = smem + warp * 32 * (M + 1);
    const int row0 = (t - lane) * M; // first row of this warp's segment
    const size_t base = static_cast<size_t>(sys) * n;
    T a[M], b[M], c[M], r[M];
    stage_in<T, M>(dl + base, n, row0, T(0), tile, lane, a);
    stage_in<T, M>(d + base, n, row0, T(1), tile, lane, b);
    stage_in<T, M>(du + base, n, row0, T(0), tile, lane, c);
    stage_in<T, M>(x + base, n, row0, T(0), tile, lane, r);
    const int first = t * M;
    if (first == 0) a[0] = T(0);
#pragma unroll
    for (int q = 0; q < M; ++q)
        if (first + q == n - 1) c[q] = T(0);

    bool ok = true;
    int bad_row = first;
    T ra[Q], rc[Q], rd[Q];
    if constexpr (M == 1) {
        if (bad_pivot(b[0], fabs(a[0]) + fabs(b[0]) + fabs(c[0]), tol)) ok = false;
        const T inv = T(1) / b[0];
        ra[0] = a[0] * inv;
        rc[0] = c[0] * inv;
        rd[0] = r[0] * inv;
    } else {
        // Downward: row q becomes alpha[q] x[F] + x[q] + gamma[q] x[q+1] = delta[q].
#pragma unroll
        for (int q = 1; q < M; ++q) {
            const T p = q == 1 ? b[1] : b[q] - a[q] * c[q - 1];
            if (ok && bad_pivot(p, fabs(a[q]) + fabs(b[q]) + fabs(c[q]), tol)) {
                ok = false;
                bad_row = first + q;
            }
            const T inv = T(1) / p;
            if (q == 1) {
                r[1] = r[1] * inv;
                a[1] = a[1] * inv;
            } else {
                r[q] = (r[q] - a[q] * r[q - 1]) * inv;
                a[q] = -a[q] * a[q - 1] * inv;
            }
            c[q] = c[q] * inv;
        }
        // The thread's last row L is a reduced row as it stands.
        ra[1] = a[M - 1];
        rc[1] = c[M - 1];
        rd[1] = r[M - 1];
        // Upward: inner rows become x[q] + alpha'[q] x[F] + gamma'[q] x[L] = delta'[q].
#pragma unroll
        for (int q = M - 3; q >= 1; --q) {
            r[q] = r[q] - c[q] * r[q + 1];
            a[q] = a[q] - c[q] * a[q + 1];
            c[q] = -c[q] * c[q + 1];
        }
        // Row F with x[F+1] substituted (for M = 2, F+1 is L itself).
        T fb = b[0], fc = c[0], fd = r[0];
        if constexpr (M > 2) {
            fb = b[0] - c[0] * a[1];
            fc = -c[0] * c[1];
            fd = r[0] - c[0] * r[1];
        }
        if (ok && bad_pivot(fb, fabs(a[0]) + fabs(fb) + fabs(fc), tol)) {
            ok = false;
            bad_row = first;
        }
        const T inv = T(1) / fb;
        ra[0] = a[0] * inv;
        rc[0] = fc * inv;
        rd[0] = fd * inv;
    }

    bool pcr_ok = true;
    if constexpr (kBlock) {
        __syncthreads(); // every warp is done with its tile before the PCR arrays reuse it
        const int R = Q * tps;
        pcr_block<T, Q>(ra, rc, rd, t, tps, smem, smem + R, smem + 2 * R, tol, pcr_ok);
    } else {
        pcr_warp<T, Q>(ra, rc, rd, lane, tol, pcr_ok);
    }
    if (ok && !pcr_ok) {
        ok = false;
        bad_row = first;
    }
    if (!ok) report(err, sys, bad_row < n ? bad_row : n - 1);

    if constexpr (M == 1) {
        r[0] = rd[0];
    } else {
        const T xf = rd[0], xl = rd[1];
        r[0] = xf;
        r[M - 1] = xl;
#pragma unroll
        for (int q = 1; q < M - 1; ++q) r[q] = r[q] - a[q] * xf - c[q] * xl;
    }
    stage_out<T, M>(x + base, n, row0, tile, lane, r);
}

int next_pow2(int v) {
    int p = 1;
    while (p < v) p <<= 1;
    return p;
}

// Threads per system for M rows per thread in the block method.
int block_tps(int n, int M) {
    const int t = next_pow2((n + M - 1) / M);
    return t < 32 ? 32 : t;
}

template <typename T, int M, bool kBlock>
cudaError_t launch(const ns_td_args *a, int tps, cudaStream_t stream) {
    const int threads = kBlock ? tps : kWarpBlock;
    const int systems_per_block = threads / tps;
    const unsigned grid = static_cast<unsigned>((a->batch + systems_per_block - 1) / systems_per_block);
    size_t tile = static_cast<size_t>(threads) * (M + 1) * sizeof(T);
    size_t pcr = kBlock ? static_cast<size_t>(3) * (M == 1 ? 1 : 2) * tps * sizeof(T) : 0;
    size_t shared = tile > pcr ? tile : pcr;
    auto kernel = onchip_kernel<T, M, kBlock>;
    if (shared > 48 * 1024) {
        cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             static_cast<int>(shared));
        if (e != cudaSuccess) return e;
    }
    kernel<<<grid, threads, shared, stream>>>(a->n, a->batch, tps, static_cast<const T *>(a->dl),
                                              static_cast<const T *>(a->d), static_cast<const T *>(a->du),
                                              static_cast<T *>(a->x), static_cast<T>(a->tol), a->err);
    return cudaGetLastError();
}

template <typename T>
cudaError_t launch_typed(const ns_td_args *a, int block, int M, int tps, cudaStream_t stream) {
    if (!block) {
        switch (M) {
        case 1: return launch<T, 1, false>(a, 32, stream);
        case 2: return launch<T, 2, false>(a, 32, stream);
        case 4: return launch<T, 4, false>(a, 32, stream);
        case 8: return launch<T, 8, false>(a, 32, stream);
        case 16: return launch<T, 16, false>(a, 32, stream);
        default: return cudaErrorInvalidValue;
        }
    }
    switch (M) {
    case 4: return launch<T, 4, true>(a, tps, stream);
    case 8: return launch<T, 8, true>(a, tps, stream);
    case 16: return launch<T, 16, true>(a, tps, stream);
    default: return cudaErrorInvalidValue;
    }
}

} // namespace

extern "C" void ns_td_onchip_shape(int32_t n, int32_t batch, int block, int *rows_per_thread,
                                   int *threads_per_system) {
    int M = 16, tps = 32;
    if (!block) {
        M = next_pow2((n + 31) / 32);
    } else {
        // Few systems: more threads per system (M = 4) to fill the GPU; many
        // systems: fewer, longer threads (M = 8, then 16) for less PCR work.
        const long long fill = 1LL << 18; // threads that keep an H100/H200 busy
        if (block_tps(n, 4) <= kBlockMax && static_cast<long long>(batch) * block_tps(n, 4) <= fill)
            M = 4;
        else if (block_tps(n, 8) <= kBlockMax)
            M = 8;
        else
            M = 16;
        tps = block_tps(n, M);
    }
    if (rows_per_thread) *rows_per_thread = M;
    if (threads_per_system) *threads_per_system = tps;
}

extern "C" cudaError_t ns_td_launch_onchip(const ns_td_args *a, int block, cudaStream_t stream) {
    int M = 0, tps = 0;
    ns_td_onchip_shape(a->n, a->batch, block, &M, &tps);
    if ((!block && M > 16) || (block && tps > kBlockMax)) return cudaErrorInvalidValue;
    return a->f32 ? launch_typed<float>(a, block, M, tps, stream)
                  : launch_typed<double>(a, block, M, tps, stream);
}
