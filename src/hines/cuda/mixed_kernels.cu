// Mixed-shape Hines kernels (issue 5). NEURON's convention: for node i with
// parent p, d[i] x[i] + b[i] x[p] = rhs[i] and row p holds a[i] x[i].
//
// Grouped layout (hines/mixed_plan.h): a branch is a chain, so inside it the
// elimination is Thomas' algorithm with the parent implied (node j's parent
// is node j - 1); only the branch's first node couples to another branch
// (its parent node is the parent branch's last node). Backward: fold the
// children's first nodes into the branch's last node, then eliminate
// towards the first node. Forward: from the parent's solution outwards.
#include <cuda_runtime.h>

#include "hines/cuda/mixed_kernels.h"

namespace {

__device__ __forceinline__ bool bad_pivot(double p) { return p == 0.0 || !isfinite(p); }

__device__ __forceinline__ void report(unsigned long long *bad, int64_t flat) {
    atomicMin(bad, (unsigned long long)flat);
}

// Backward sweep of slot t of level L.
__device__ __forceinline__ void branch_backward(const ns_mixed_args &g, const ns_mixed_level &L,
                                                int t) {
    const double *__restrict__ a = g.a;
    const double *__restrict__ b = g.b;
    double *__restrict__ d = g.d;
    double *__restrict__ r = g.rhs;
    const int64_t br = L.first_branch + t;
    const int len = __ldg(g.br_len + br);
    const int64_t *__restrict__ ro = g.rowoff + L.rows;
    const int64_t base = L.base + t;
    int64_t p = base + __ldg(ro + len - 1);
    double dl = d[p], rl = r[p];
    const int64_t k1 = __ldg(g.br_child + br + 1);
    for (int64_t k = __ldg(g.br_child + br); k < k1; ++k) {
        const int64_t c = __ldg(g.child_pos + k);
        const double dc = d[c];
        if (bad_pivot(dc)) report(g.bad, g.gather[c]);
        const double f = __ldg(a + c) / dc;
        dl -= f * __ldg(b + c);
        rl -= f * r[c];
    }
    d[p] = dl;
    r[p] = rl;
#pragma unroll 4
    for (int j = len - 2; j >= 0; --j) {
        if (bad_pivot(dl)) report(g.bad, g.gather[p]);
        const int64_t q = base + __ldg(ro + j);
        const double f = __ldg(a + p) / dl;
        dl = d[q] - f * __ldg(b + p);
        rl = r[q] - f * rl;
        d[q] = dl;
        r[q] = rl;
        p = q;
    }
}

// Forward sweep of slot t of level L: x overwrites rhs.
__device__ __forceinline__ void branch_forward(const ns_mixed_args &g, const ns_mixed_level &L,
                                               int t) {
    const double *__restrict__ b = g.b;
    const double *__restrict__ d = g.d;
    double *__restrict__ r = g.rhs;
    const int64_t br = L.first_branch + t;
    const int len = __ldg(g.br_len + br);
    const int64_t *__restrict__ ro = g.rowoff + L.rows;
    const int64_t base = L.base + t;
    const int64_t pp = __ldg(g.br_ppos + br);
    double x = 0.0;
    if (pp >= 0) x = r[pp];
    else if (bad_pivot(d[base])) report(g.bad, g.gather[base]);  // the root's pivot
#pragma unroll 4
    for (int j = 0; j < len; ++j) {
        const int64_t q = base + __ldg(ro + j);
        x = (r[q] - __ldg(b + q) * x) / d[q];
        r[q] = x;
    }
}

// One block per group; levels in order with a block-wide barrier between
// them (never warp lockstep: a level wider than the block loops).
__global__ void fine_kernel(ns_mixed_args g) {
    const int l0 = g.group_level[blockIdx.x], l1 = g.group_level[blockIdx.x + 1];
    for (int li = l1 - 1; li >= l0; --li) {
        const ns_mixed_level L = g.levels[li];
        for (int t = threadIdx.x; t < L.width; t += blockDim.x) branch_backward(g, L, t);
        __syncthreads();
    }
    for (int li = l0; li < l1; ++li) {
        const ns_mixed_level L = g.levels[li];
        for (int t = threadIdx.x; t < L.width; t += blockDim.x) branch_forward(g, L, t);
        __syncthreads();
    }
}

__global__ void level_kernel(ns_mixed_args g, ns_mixed_level L, int backward) {
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= L.width) return;
    if (backward) branch_backward(g, L, (int)t);
    else branch_forward(g, L, (int)t);
}

// One thread per cell; `pos(k)` places node k of the thread's cell.
template <typename Pos>
__device__ __forceinline__ void cell_solve(int n, const int *__restrict__ par, Pos pos,
                                           const double *__restrict__ a, const double *__restrict__ b,
                                           double *__restrict__ d, double *__restrict__ rhs,
                                           unsigned long long *bad, const int64_t *gather) {
    for (int i = n - 1; i >= 1; --i) {
        const int64_t pi = pos(i);
        const double di = d[pi];
        if (bad_pivot(di)) {
            report(bad, gather ? gather[pi] : pi);
            return;
        }
        const double f = a[pi] / di;
        const int64_t pp = pos(__ldg(par + i));
        d[pp] -= f * b[pi];
        rhs[pp] -= f * rhs[pi];
    }
    const int64_t p0 = pos(0);
    if (bad_pivot(d[p0])) {
        report(bad, gather ? gather[p0] : p0);
        return;
    }
    rhs[p0] /= d[p0];
    for (int i = 1; i < n; ++i) {
        const int64_t pi = pos(i);
        rhs[pi] = (rhs[pi] - b[pi] * rhs[pos(__ldg(par + i))]) / d[pi];
    }
}

struct JaggedPos {
    const int64_t *rowoff;
    int64_t c;
    __device__ int64_t operator()(int k) const { return __ldg(rowoff + k) + c; }
};
struct FlatPos {
    int64_t off;
    __device__ int64_t operator()(int k) const { return off + k; }
};

__global__ void cells_kernel(int64_t n_cells, const int *sorted_shape, const int *shape_size,
                             const int64_t *shape_poff, const int *parents,
                             const int64_t *rowoff, const int64_t *gather, const double *a,
                             const double *b, double *d, double *rhs, unsigned long long *bad) {
    const int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n_cells) return;
    const int s = sorted_shape[c];
    JaggedPos pos{rowoff, c};
    cell_solve(shape_size[s], parents + shape_poff[s], pos, a, b, d, rhs, bad, gather);
}

__global__ void flat_kernel(int64_t n_cells, const int *cell_shape, const int64_t *cell_offset,
                            const int *shape_size, const int64_t *shape_poff, const int *parents,
                            const double *a, const double *b, double *d, double *rhs,
                            unsigned long long *bad) {
    const int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n_cells) return;
    const int s = cell_shape[c];
    FlatPos pos{cell_offset[c]};
    cell_solve(shape_size[s], parents + shape_poff[s], pos, a, b, d, rhs, bad, nullptr);
}

__global__ void gather_kernel(int64_t n, const int64_t *__restrict__ gather,
                              const int64_t *__restrict__ edge, const double *sa,
                              const double *sb, const double *sd, const double *sr, double *da,
                              double *db, double *dd, double *dr, int which) {
    for (int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; p < n;
         p += (int64_t)gridDim.x * blockDim.x) {
        const int64_t g = gather[p];
        if (which & 2) {
            dd[p] = sd[g];
            dr[p] = sr[g];
        }
        if (which & 1) {
            const int64_t e = edge ? edge[p] : 2 * g;
            if (e < 0) {
                da[p] = 0.0;
                db[p] = 0.0;
            } else {
                const int64_t o = e >> 1;
                const double x = sa[o], y = sb[o];
                da[p] = (e & 1) ? y : x;
                db[p] = (e & 1) ? x : y;
            }
        }
    }
}

__global__ void scatter_kernel(int64_t n, const int64_t *__restrict__ gather,
                               const double *__restrict__ x, double *flat) {
    for (int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; p < n;
         p += (int64_t)gridDim.x * blockDim.x)
        flat[gather[p]] = x[p];
}

unsigned grid_for(int64_t n, int threads) {
    int64_t blocks = (n + threads - 1) / threads;
    if (blocks > 1 << 20) blocks = 1 << 20;  // grid-stride loops cover the rest
    return (unsigned)(blocks > 0 ? blocks : 1);
}

}  // namespace

extern "C" cudaError_t ns_mixed_launch_fine(const ns_mixed_args *args, int32_t n_groups,
                                            int threads, cudaStream_t stream) {
    if (n_groups <= 0) return cudaSuccess;
    fine_kernel<<<(unsigned)n_groups, threads, 0, stream>>>(*args);
    return cudaGetLastError();
}

extern "C" cudaError_t ns_mixed_launch_level(const ns_mixed_args *args, const ns_mixed_level *level,
                                             int backward, cudaStream_t stream) {
    if (level->width <= 0) return cudaSuccess;
    const int threads = 128;
    const unsigned blocks = (unsigned)((level->width + threads - 1) / threads);
    level_kernel<<<blocks, threads, 0, stream>>>(*args, *level, backward);
    return cudaGetLastError();
}

extern "C" cudaError_t ns_mixed_launch_cells(int64_t n_cells, const int32_t *sorted_shape,
                                             const int32_t *shape_size, const int64_t *shape_poff,
                                             const int32_t *parents, const int64_t *rowoff,
                                             const int64_t *gather, const double *a,
                                             const double *b, double *d, double *rhs,
                                             unsigned long long *bad, cudaStream_t stream) {
    if (n_cells <= 0) return cudaSuccess;
    const int threads = 128;  // the paper's block of the one-thread-per-cell kernels
    cells_kernel<<<(unsigned)((n_cells + threads - 1) / threads), threads, 0, stream>>>(
        n_cells, sorted_shape, shape_size, shape_poff, parents,
        rowoff, gather, a, b, d, rhs, bad);
    return cudaGetLastError();
}

extern "C" cudaError_t ns_mixed_launch_flat(int64_t n_cells, const int32_t *cell_shape,
                                            const int64_t *cell_offset, const int32_t *shape_size,
                                            const int64_t *shape_poff, const int32_t *parents,
                                            const double *a, const double *b, double *d,
                                            double *rhs, unsigned long long *bad,
                                            cudaStream_t stream) {
    if (n_cells <= 0) return cudaSuccess;
    const int threads = 128;
    flat_kernel<<<(unsigned)((n_cells + threads - 1) / threads), threads, 0, stream>>>(
        n_cells, cell_shape, cell_offset, shape_size,
        shape_poff, parents, a, b, d, rhs, bad);
    return cudaGetLastError();
}

extern "C" cudaError_t ns_mixed_launch_gather(int64_t n, const int64_t *gather, const int64_t *edge,
                                              const double *const src[4], double *const dst[4],
                                              int which, cudaStream_t stream) {
    if (n <= 0) return cudaSuccess;
    gather_kernel<<<grid_for(n, 256), 256, 0, stream>>>(
        n, gather, edge, src[0], src[1], src[2], src[3],
        dst[0], dst[1], dst[2], dst[3], which);
    return cudaGetLastError();
}

extern "C" cudaError_t ns_mixed_launch_scatter(int64_t n, const int64_t *gather, const double *x,
                                               double *flat, cudaStream_t stream) {
    if (n <= 0) return cudaSuccess;
    scatter_kernel<<<grid_for(n, 256), 256, 0, stream>>>(n, gather, x, flat);
    return cudaGetLastError();
}
