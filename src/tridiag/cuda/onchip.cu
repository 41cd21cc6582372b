// On-chip solvers: a group of G = 1..32 lanes of a warp per system (warp
// method, n <= 512; several systems per warp when G < 32) or a block per
// system (block method, n <= 8192), on the Flat layout, keeping every
// intermediate in registers and shared memory so that device memory sees
// only the 40 bytes per unknown (double) of reading dl, d, du, rhs and
// writing x once.
//
// Algorithm (a partition / PCR-Thomas hybrid with one step of iterative
// refinement; docs/tridiag.md):
//  1. Thread t of the system owns M consecutive rows F = tM .. L = tM+M-1,
//     loaded coalesced through a per-warp shared-memory tile.
//  2. Inside its rows the thread eliminates downwards and upwards
//     (Thomas-like, 2M steps, registers only) so that every inner row reads
//         x[r] = delta[r] - alpha[r] x[F] - gamma[r] x[L],
//     leaving two rows per thread (F and L) that couple only to the
//     neighbouring threads' L and F: a tridiagonal system of 2T rows.
//  3. That reduced system is solved by parallel cyclic reduction: shuffles
//     inside a warp (width G), shared memory inside a block (log2(2T) steps).
//  4. Each thread substitutes x[F], x[L] into its inner rows.
//  5. Refinement: the thread takes its rows' original coefficients and rhs
//     (warp method: the four input tiles, kept in shared memory; block
//     method: reloaded, L1/L2 hits), forms the residual rhs - A x in working
//     precision (neighbour x by shuffle or shared memory), solves
//     A e = residual by steps 2-4 and stores x + e. The PCR
//     levels leave ~1e-15 relative error in double (2-3x Thomas's); one
//     refinement step brings it to ~2e-16, below Thomas (measured on CPU
//     emulation and on the H200; bench/tridiag.md).
// Rows past n are identity rows (0, 1, 0 | 0); dl[0] and du[n-1] are taken
// as 0. Arithmetic per pass: about 20 flops per unknown plus 12 per reduced
// row and PCR step; the refinement doubles it and adds 7 flops per unknown.
#include "core/cuda_check.h"
#include <cstdint>

#include "tridiag/cuda/kernels.h"
#include "tridiag/cuda/pivot.cuh"

namespace {

constexpr unsigned kFull = 0xffffffffu;
constexpr int kWarpBlock = 128;  // warp method: 4 warps per block
// At least 3 warp-method blocks (12 warps) per SM: caps registers at 168
// per thread (M = 16, double), where the kernel stays memory-bound.
constexpr int kWarpMinBlocks = 3;
constexpr int kBlockMax = 512;   // block method: at most 512 threads per system
// Shared memory, in T values per thread: a region for the staging tiles
// (M + 1; the block method also runs PCR there: 3 arrays of 2), then the
// first pass's x (M + 1, padded like the tiles) for the refinement.
template <int M, bool kBlock>
__host__ __device__ constexpr int per_thread_region() {
    return kBlock && M + 1 < 6 ? 6 : M + 1;
}

// Where the warp's staged element `local` (0 .. 32M-1) lives, as an offset
// from the warp's first row (row 0 of system sys0): the owner lane
// local / M has rank rank0 + owner (block method: the block's one system)
// or rank owner % tps in system sys0 + owner / tps (warp method). False
// for rows past n and systems past batch.
template <int M, bool kBlock>
__device__ __forceinline__ bool stage_where(int local, int n, int systems_left, int rank0,
                                            int log_tps, int &off) {
    const int owner = local / M;
    if constexpr (kBlock) {
        off = (rank0 + owner) * M + local % M;
        return off < n;
    } else {
        const int sys = owner >> log_tps;
        const int row = (owner & ((1 << log_tps) - 1)) * M + local % M;
        off = sys * n + row;
        return row < n && sys < systems_left;
    }
}

// Load one array for the warp: 32 consecutive staged elements per
// instruction into a tile (lane l's M rows at l * (M + 1), the +1 keeping
// 64-bit reads conflict-free), then each lane takes its own M rows. Rows
// past n and systems past batch get `pad`. src: row 0 of system sys0.
template <typename T, int M, bool kBlock>
__device__ __forceinline__ void stage_in(const T *__restrict__ src, int n, int systems_left,
                                         int rank0, int log_tps, T pad, T *tile, int lane,
                                         T (&v)[M]) {
#pragma unroll
    for (int j = 0; j < M; ++j) {
        const int local = j * 32 + lane;
        int off = 0;
        const bool in = stage_where<M, kBlock>(local, n, systems_left, rank0, log_tps, off);
        tile[(local / M) * (M + 1) + local % M] = in ? src[off] : pad;
    }
    __syncwarp();
#pragma unroll
    for (int q = 0; q < M; ++q) v[q] = tile[lane * (M + 1) + q];
    __syncwarp();
}

template <typename T, int M, bool kBlock>
__device__ __forceinline__ void stage_out(T *__restrict__ dst, int n, int systems_left, int rank0,
                                          int log_tps, T *tile, int lane, const T (&v)[M]) {
#pragma unroll
    for (int q = 0; q < M; ++q) tile[lane * (M + 1) + q] = v[q];
    __syncwarp();
#pragma unroll
    for (int j = 0; j < M; ++j) {
        const int local = j * 32 + lane;
        int off = 0;
        if (stage_where<M, kBlock>(local, n, systems_left, rank0, log_tps, off))
            dst[off] = tile[(local / M) * (M + 1) + local % M];
    }
    __syncwarp();
}

// One PCR step on normalised rows (diagonal 1): row i combines with rows
// i - s (lo) and i + s (hi); out-of-range neighbours are zero rows.
template <typename T, bool kCheck>
__device__ __forceinline__ void pcr_combine(T ai, T ci, T di, T al, T cl, T dl_, T ah, T ch, T dh,
                                            T tol, T &na, T &nc, T &nd, bool &ok) {
    const T nb = T(1) - ai * cl - ci * ah;
    if (kCheck && bad_pivot(nb, T(1), tol)) ok = false;
    const T inv = T(1) / nb;
    na = -ai * al * inv;
    nc = -ci * ch * inv;
    nd = (di - ai * dl_ - ci * dh) * inv;
}

// PCR on the reduced system of a group of G = tps lanes (R = Q * G rows,
// row i = Q * t + q on rank t). The parity of a neighbour's row is the same
// on every lane, so each shuffle fetches one register from the source lane.
template <typename T, int Q, bool kCheck>
__device__ __forceinline__ void pcr_warp(T (&ra)[Q], T (&rc)[Q], T (&rd)[Q], int t, int tps, T tol,
                                         bool &ok) {
    const int R = Q * tps;
    for (int s = 1; s < R; s <<= 1) {
        T na[Q], nc[Q], nd[Q];
#pragma unroll
        for (int q = 0; q < Q; ++q) {
            const int i = Q * t + q;
            const int jl = i - s, jh = i + s;
            const int ql = Q == 1 ? 0 : (jl & 1), qh = Q == 1 ? 0 : (jh & 1);
            const int sl = (Q == 1 ? jl : (jl >> 1)) & (tps - 1);
            const int sh = (Q == 1 ? jh : (jh >> 1)) & (tps - 1);
            T al = __shfl_sync(kFull, ql ? ra[Q - 1] : ra[0], sl, tps);
            T cl = __shfl_sync(kFull, ql ? rc[Q - 1] : rc[0], sl, tps);
            T dl_ = __shfl_sync(kFull, ql ? rd[Q - 1] : rd[0], sl, tps);
            T ah = __shfl_sync(kFull, qh ? ra[Q - 1] : ra[0], sh, tps);
            T ch = __shfl_sync(kFull, qh ? rc[Q - 1] : rc[0], sh, tps);
            T dh = __shfl_sync(kFull, qh ? rd[Q - 1] : rd[0], sh, tps);
            if (jl < 0) al = cl = dl_ = T(0);
            if (jh >= R) ah = ch = dh = T(0);
            pcr_combine<T, kCheck>(ra[q], rc[q], rd[q], al, cl, dl_, ah, ch, dh, tol, na[q], nc[q],
                                   nd[q], ok);
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
template <typename T, int Q, bool kCheck>
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
            pcr_combine<T, kCheck>(ra[q], rc[q], rd[q], lo ? sa[jl] : T(0), lo ? sc[jl] : T(0),
                                   lo ? sd[jl] : T(0), hi ? sa[jh] : T(0), hi ? sc[jh] : T(0),
                                   hi ? sd[jh] : T(0), tol, ra[q], rc[q], rd[q], ok);
        }
        __syncthreads();
    }
}

// Steps 2-4 of the algorithm on one thread's rows: on return r holds x for
// them; a, b, c are consumed. kCheck: test the pivots (first pass only; the
// refinement pass meets the same pivots).
template <typename T, int M, bool kBlock, bool kCheck>
__device__ __forceinline__ void solve_pass(T (&a)[M], T (&b)[M], T (&c)[M], T (&r)[M], int first,
                                           int t, int tps, T *smem, T tol, bool &ok, int &bad_row) {
    constexpr int Q = M == 1 ? 1 : 2; // reduced rows per thread
    T ra[Q], rc[Q], rd[Q];
    if constexpr (M == 1) {
        if (kCheck && bad_pivot(b[0], fabs(a[0]) + fabs(b[0]) + fabs(c[0]), tol)) ok = false;
        const T inv = T(1) / b[0];
        ra[0] = a[0] * inv;
        rc[0] = c[0] * inv;
        rd[0] = r[0] * inv;
    } else {
        // Downward: row q becomes alpha[q] x[F] + x[q] + gamma[q] x[q+1] = delta[q].
#pragma unroll
        for (int q = 1; q < M; ++q) {
            const T p = q == 1 ? b[1] : b[q] - a[q] * c[q - 1];
            if (kCheck && ok && bad_pivot(p, fabs(a[q]) + fabs(b[q]) + fabs(c[q]), tol)) {
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
        if (kCheck && ok && bad_pivot(fb, fabs(a[0]) + fabs(fb) + fabs(fc), tol)) {
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
        pcr_block<T, Q, kCheck>(ra, rc, rd, t, tps, smem, smem + R, smem + 2 * R, tol, pcr_ok);
    } else {
        pcr_warp<T, Q, kCheck>(ra, rc, rd, t, tps, tol, pcr_ok);
    }
    if (kCheck && ok && !pcr_ok) {
        ok = false;
        bad_row = first;
    }

    if constexpr (M == 1) {
        r[0] = rd[0];
    } else {
        const T xf = rd[0], xl = rd[1];
        r[0] = xf;
        r[M - 1] = xl;
#pragma unroll
        for (int q = 1; q < M - 1; ++q) r[q] = r[q] - a[q] * xf - c[q] * xl;
    }
}

// Stage a thread's rows of dl, d, du, rhs and make dl[0] and du[n-1] zero.
template <typename T, int M, bool kBlock>
__device__ __forceinline__ void load_rows(const T *dl, const T *d, const T *du, const T *rhs, int n,
                                          int systems_left, int rank0, int log_tps,
                                          T *tile, int lane, int first, T (&a)[M], T (&b)[M],
                                          T (&c)[M], T (&r)[M]) {
    stage_in<T, M, kBlock>(dl, n, systems_left, rank0, log_tps, T(0), tile, lane, a);
    stage_in<T, M, kBlock>(d, n, systems_left, rank0, log_tps, T(1), tile, lane, b);
    stage_in<T, M, kBlock>(du, n, systems_left, rank0, log_tps, T(0), tile, lane, c);
    stage_in<T, M, kBlock>(rhs, n, systems_left, rank0, log_tps, T(0), tile, lane, r);
    if (first == 0) a[0] = T(0);
#pragma unroll
    for (int q = 0; q < M; ++q)
        if (first + q == n - 1) c[q] = T(0);
}

template <typename T, int M, bool kBlock>
__global__ void __launch_bounds__(kBlockMax, 1)
onchip_kernel(int n, int batch, int tps, int log_tps, const T *__restrict__ dl,
              const T *__restrict__ d, const T *__restrict__ du, T *__restrict__ x, T tol,
              unsigned long long *err) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T *smem = reinterpret_cast<T *>(smem_raw);
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int t = threadIdx.x & (tps - 1); // rank of the thread in its system
    const int systems_per_block = blockDim.x >> log_tps;
    const long long sys = static_cast<long long>(blockIdx.x) * systems_per_block + (threadIdx.x >> log_tps);
    // Staging: the block method's warp holds ranks warp*32 .. of its one
    // system; the warp method's warp holds 32 / tps whole systems from sys0.
    const long long sys0 = kBlock ? sys : static_cast<long long>(blockIdx.x) * systems_per_block + ((warp * 32) >> log_tps);
    const int rank0 = kBlock ? warp * 32 : 0;
    if (sys0 >= batch) return; // whole warps (warp method) or whole blocks (block method)

    T *tile = smem + warp * 32 * (M + 1);
    const int first = t * M;
    // The warp's arrays from row 0 of system sys0 (32-bit offsets from here).
    const size_t base = static_cast<size_t>(sys0) * n;
    dl += base;
    d += base;
    du += base;
    x += base;
    const T *rhs = x;
    const int systems_left = batch - sys0 < 32 ? static_cast<int>(batch - sys0) : 32;
    T a[M], b[M], c[M], r[M];
    load_rows<T, M, kBlock>(dl, d, du, rhs, n, systems_left, rank0, log_tps, tile, lane, first, a, b, c, r);

    bool ok = true;
    int bad_row = first;
    solve_pass<T, M, kBlock, true>(a, b, c, r, first, t, tps, smem, tol, ok, bad_row);
    if (!ok && sys < batch) report(err, sys, bad_row < n ? bad_row : n - 1);

    // Refinement (step 5): residual of x, then x += A^{-1} residual. x waits
    // in shared memory (registers hold a, b, c, r for the second pass).
    T *xs = smem + (per_thread_region<M, kBlock>() * blockDim.x) + threadIdx.x * (M + 1);
#pragma unroll
    for (int q = 0; q < M; ++q) xs[q] = r[q];
    if constexpr (kBlock) __syncthreads(); // the neighbour may sit in another warp
    else __syncwarp();
    // x of the rows just before F and just after L (0 outside the system).
    const T x_prev = t > 0 ? xs[-2] : T(0); // thread - 1: stride M + 1, its row M - 1
    const T x_next = t + 1 < tps ? xs[M + 1] : T(0); // thread + 1, its row 0
    // Keep the compiler from hoisting the reload above the first pass (that
    // would hold 4M more values in registers and spill).
    asm volatile("" ::: "memory");
    load_rows<T, M, kBlock>(dl, d, du, rhs, n, systems_left, rank0, log_tps, tile, lane, first, a, b, c, r);
#pragma unroll
    for (int q = 0; q < M; ++q) {
        const T xm = q == 0 ? x_prev : xs[q - 1];
        const T xp = q == M - 1 ? x_next : xs[q + 1];
        r[q] = r[q] - b[q] * xs[q] - a[q] * xm - c[q] * xp;
    }
    bool ok2 = true;
    int bad2 = first;
    solve_pass<T, M, kBlock, false>(a, b, c, r, first, t, tps, smem, tol, ok2, bad2);
#pragma unroll
    for (int q = 0; q < M; ++q) r[q] = xs[q] + r[q];
    stage_out<T, M, kBlock>(x, n, systems_left, rank0, log_tps, tile, lane, r);
}

// The warp method keeps the four input tiles in shared memory for the whole
// kernel (4 x 32 (M + 1) values per warp): all four arrays are loaded in one
// round (4M loads in flight per lane), and the refinement reads the
// original coefficients from there instead of reloading them.
template <typename T, int M>
__global__ void __launch_bounds__(kWarpBlock, kWarpMinBlocks)
warp_kernel(int n, int batch, int tps, int log_tps, const T *__restrict__ dl,
            const T *__restrict__ d, const T *__restrict__ du, T *__restrict__ x, T tol,
            unsigned long long *err) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    constexpr int kTile = 32 * (M + 1);
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int t = threadIdx.x & (tps - 1); // rank of the lane in its system
    const int systems_per_block = blockDim.x >> log_tps;
    const long long sys = static_cast<long long>(blockIdx.x) * systems_per_block + (threadIdx.x >> log_tps);
    const long long sys0 = static_cast<long long>(blockIdx.x) * systems_per_block + ((warp * 32) >> log_tps);
    if (sys0 >= batch) return; // whole warps
    T *ta = reinterpret_cast<T *>(smem_raw) + warp * 4 * kTile;
    T *tb = ta + kTile, *tc = tb + kTile, *tr = tc + kTile;
    const size_t base = static_cast<size_t>(sys0) * n;
    dl += base;
    d += base;
    du += base;
    x += base;
    const int systems_left = batch - sys0 < 32 ? static_cast<int>(batch - sys0) : 32;
#pragma unroll
    for (int j = 0; j < M; ++j) {
        const int local = j * 32 + lane;
        int off = 0;
        const bool in = stage_where<M, false>(local, n, systems_left, 0, log_tps, off);
        const int slot = (local / M) * (M + 1) + local % M;
        ta[slot] = in ? dl[off] : T(0);
        tb[slot] = in ? d[off] : T(1);
        tc[slot] = in ? du[off] : T(0);
        tr[slot] = in ? x[off] : T(0);
    }
    __syncwarp();
    const int first = t * M;
    const int mine = lane * (M + 1);
    T a[M], b[M], c[M], r[M];
#pragma unroll
    for (int q = 0; q < M; ++q) {
        // dl[0] and du[n-1] lie outside the matrix: taken as 0.
        a[q] = first + q == 0 ? T(0) : ta[mine + q];
        b[q] = tb[mine + q];
        c[q] = first + q == n - 1 ? T(0) : tc[mine + q];
        r[q] = tr[mine + q];
    }
    bool ok = true;
    int bad_row = first;
    solve_pass<T, M, false, true>(a, b, c, r, first, t, tps, nullptr, tol, ok, bad_row);
    if (!ok && sys < batch) report(err, sys, bad_row < n ? bad_row : n - 1);

    // Refinement: residual = rhs - A x from the tiles (x of the neighbouring
    // rows by shuffle, 0 outside the system), then x + A^{-1} residual.
    T x_prev = __shfl_up_sync(kFull, r[M - 1], 1, tps);
    T x_next = __shfl_down_sync(kFull, r[0], 1, tps);
    if (t == 0) x_prev = T(0);
    if (t == tps - 1) x_next = T(0);
#pragma unroll
    for (int q = 0; q < M; ++q) {
        const T aq = first + q == 0 ? T(0) : ta[mine + q];
        const T cq = first + q == n - 1 ? T(0) : tc[mine + q];
        const T xm = q == 0 ? x_prev : r[q - 1];
        const T xp = q == M - 1 ? x_next : r[q + 1];
        a[q] = tr[mine + q] - tb[mine + q] * r[q] - aq * xm - cq * xp; // residual, for now in a
    }
#pragma unroll
    for (int q = 0; q < M; ++q) {
        tr[mine + q] = r[q]; // x waits in the lane's own rows of the rhs tile
        r[q] = a[q];
        a[q] = first + q == 0 ? T(0) : ta[mine + q];
        b[q] = tb[mine + q];
        c[q] = first + q == n - 1 ? T(0) : tc[mine + q];
    }
    bool ok2 = true;
    int bad2 = first;
    solve_pass<T, M, false, false>(a, b, c, r, first, t, tps, nullptr, tol, ok2, bad2);
#pragma unroll
    for (int q = 0; q < M; ++q) tr[mine + q] += r[q];
    __syncwarp();
#pragma unroll
    for (int j = 0; j < M; ++j) {
        const int local = j * 32 + lane;
        int off = 0;
        if (stage_where<M, false>(local, n, systems_left, 0, log_tps, off))
            x[off] = tr[(local / M) * (M + 1) + local % M];
    }
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

int log2_int(int v) {
    int l = 0;
    while ((1 << l) < v) ++l;
    return l;
}

template <typename T, int M, bool kBlock>
cudaError_t launch(const ns_td_args *a, int tps, cudaStream_t stream) {
    const int threads = kBlock ? tps : kWarpBlock;
    const int systems_per_block = threads / tps;
    const unsigned grid = static_cast<unsigned>((a->batch + systems_per_block - 1) / systems_per_block);
    const size_t per_thread = kBlock ? per_thread_region<M, kBlock>() + M + 1 : 4 * (M + 1);
    const size_t shared = static_cast<size_t>(threads) * per_thread * sizeof(T);
    auto kernel = kBlock ? onchip_kernel<T, M, true> : warp_kernel<T, M>;
    if (shared > 48 * 1024) {
        cudaError_t e = ns_cuda_allow_shared((const void *)kernel, shared);
        if (e != cudaSuccess) return e;
    }
    kernel<<<grid, threads, shared, stream>>>(a->n, a->batch, tps, log2_int(tps),
                                              static_cast<const T *>(a->dl), static_cast<const T *>(a->d),
                                              static_cast<const T *>(a->du), static_cast<T *>(a->x),
                                              static_cast<T>(a->tol), a->err);
    return cudaGetLastError();
}

template <typename T>
cudaError_t launch_typed(const ns_td_args *a, int block, int M, int tps, cudaStream_t stream) {
    if (!block) {
        switch (M) {
        case 1: return launch<T, 1, false>(a, tps, stream);
        case 2: return launch<T, 2, false>(a, tps, stream);
        case 4: return launch<T, 4, false>(a, tps, stream);
        case 8: return launch<T, 8, false>(a, tps, stream);
        case 16: return launch<T, 16, false>(a, tps, stream);
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

// Threads that keep an H100/H200 busy (132 SMs x 2,048): below this the
// shape trades rows per thread for threads.
constexpr long long kFillThreads = 1LL << 18;
// The warp method prefers M = 16 down to batch * G = 2^14 lanes: M = 16 was
// the fastest, or close, from 2,560 to 256,000 systems of 64-512 unknowns,
// M = 8 only below ~16K lanes (H200, bench/README.md, "Batched tridiagonal").
constexpr long long kWarpFillDivisor = 16;

} // namespace

extern "C" void ns_td_onchip_shape(int32_t n, int32_t batch, int block, int *rows_per_thread,
                                   int *threads_per_system) {
    int M = 16, tps = 32;
    if (!block) {
        // Lanes per system G = next_pow2(ceil(n / M)) <= 32. Many systems:
        // the largest M (fewest PCR levels and shuffles per unknown) that
        // still gives kFillThreads threads; few systems: the most lanes.
        static const int rows[] = {16, 8, 4, 2, 1};
        int chosen = 0;
        for (int i = 0; i < 5; ++i) {
            const int g = next_pow2((n + rows[i] - 1) / rows[i]);
            if (g > 32) break;
            chosen = i; // the smallest M so far that fits: the most threads
            if (static_cast<long long>(batch) * g >= kFillThreads / kWarpFillDivisor) break;
        }
        M = rows[chosen];
        tps = next_pow2((n + M - 1) / M);
        if (tps > 32) { // n > 512: not for the warp method (the launcher refuses)
            M = 32;
            tps = 32;
        }
    } else {
        // Few systems: more threads per system (M = 4) to fill the GPU; many
        // systems: fewer, longer threads (M = 8, then 16) for less PCR work.
        if (block_tps(n, 4) <= kBlockMax && static_cast<long long>(batch) * block_tps(n, 4) <= kFillThreads)
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
    if ((!block && (M > 16 || tps > 32)) || (block && tps > kBlockMax)) return cudaErrorInvalidValue;
    return a->f32 ? launch_typed<float>(a, block, M, tps, stream)
                  : launch_typed<double>(a, block, M, tps, stream);
}
