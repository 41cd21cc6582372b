// The fine-grained tree solver with the group in shared memory (issue 5,
// docs/methods.md, "Mixed shapes"): the same schedule as fine_kernel
// (mixed_kernels.cu: one block per group of cells, one thread per branch of
// a level, block barriers between levels), but the block first copies its
// group's d and rhs and its tables (levels, branch lengths, parents,
// children, row offsets) into shared memory, so that a level costs a
// barrier and shared-memory latency instead of a chain of dependent loads
// from device memory (docs/methods.md, "Mixed shapes").
// kAB: a and b in shared memory too (32 bytes per compartment instead of 16:
// fewer groups per SM, no device-memory load inside the sweeps).
//
// The sweeps are onchip_sweeps.cuh's formulation on the jagged rows of a
// level: backward stores G = b / d' over d and F = rhs' / d' over rhs and
// updates the parent with d_p -= a G, rhs_p -= a F; forward x = F - G x_p.
// Device memory sees d, rhs read once and x written once per compartment
// (plus a and b once each).
#include "core/cuda_check.h"
#include <cuda_runtime.h>
#include <stdint.h>

#include "hines/cuda/mixed_kernels.h"
#include "hines/cuda/onchip_sweeps.cuh"

namespace {

// The group's image in shared memory; indices and positions are local to
// the group (position - s0, branch - b0, child entry - k0, row - r0).
struct GroupImage {
    int64_t s0;                 // storage position of the group's first compartment
    double *d, *r;              // d then G, rhs then F then x
    const double *a, *b;        // shared (kAB) or device memory at s0
    const int32_t *len, *ppos, *cbeg, *cpos;
};

__device__ __forceinline__ void report_bad(const ns_mixed_args &g, int64_t pos) {
    atomicMin(g.bad, (unsigned long long)__ldg(g.gather + pos));
}

// Backward sweep of branch `br` (local) whose row 0 sits at `base` (local).
__device__ __forceinline__ void image_backward(const ns_mixed_args &g, const GroupImage &im,
                                               const int32_t *ro, int base, int br) {
    const int n = im.len[br];
    int q = base + ro[n - 1];
    double dk = im.d[q], rk = im.r[q];
    for (int k = im.cbeg[br]; k < im.cbeg[br + 1]; ++k) {
        const int c = im.cpos[k];
        const double ac = im.a[c];
        dk = fma(-ac, im.d[c], dk);
        rk = fma(-ac, im.r[c], rk);
    }
    double an = im.a[q], bn = im.b[q];
    for (int j = n - 1;; --j) {
        const bool more = j > 0;
        int qn = q;
        double dn = 0.0, rn = 0.0, ann = 0.0, bnn = 0.0;
        if (more) {  // the next node's inputs, ahead of the reciprocal
            qn = base + ro[j - 1];
            dn = im.d[qn];
            rn = im.r[qn];
            ann = im.a[qn];
            bnn = im.b[qn];
        }
        if (onchip_bad_pivot(dk)) report_bad(g, im.s0 + q);
        const double inv = onchip_rcp(dk);
        const double gk = bn * inv, fk = rk * inv;
        im.d[q] = gk;
        im.r[q] = fk;
        if (!more) break;
        dk = fma(-an, gk, dn);
        rk = fma(-an, fk, rn);
        an = ann;
        bn = bnn;
        q = qn;
    }
}

// Forward sweep of branch `br` (local): x = F - G x_parent, over F.
__device__ __forceinline__ void image_forward(const GroupImage &im, const int32_t *ro, int base,
                                              int br) {
    const int n = im.len[br];
    const int pp = im.ppos[br];
    double x = pp >= 0 ? im.r[pp] : 0.0;
    for (int j = 0; j < n; ++j) {
        const int q = base + ro[j];
        x = fma(-im.d[q], x, im.r[q]);
        im.r[q] = x;
    }
}

template <bool kAB>
__global__ void fine_shared_kernel(ns_mixed_args g) {
    extern __shared__ __align__(16) double smem[];
    const int grp = blockIdx.x;
    const int l0 = g.group_level[grp], nl = g.group_level[grp + 1] - l0;
    ns_mixed_level *lev = reinterpret_cast<ns_mixed_level *>(smem);
    for (int i = threadIdx.x; i < nl; i += blockDim.x) lev[i] = g.levels[l0 + i];
    __syncthreads();
    const ns_mixed_level &first = lev[0], &last = lev[nl - 1];
    const int64_t s0 = first.base, b0 = first.first_branch, r0 = first.rows;
    const int nn = (int)(last.base + __ldg(g.rowoff + last.rows + last.max_len) - s0);
    const int nb = (int)(last.first_branch + last.width - b0);
    const int64_t k0 = __ldg(g.br_child + b0);
    const int nk = (int)(__ldg(g.br_child + b0 + nb) - k0);
    const int nr = (int)(last.rows + last.max_len + 1 - r0);
    // ns_mixed_fine_shared_bytes has the same layout.
    GroupImage im;
    im.s0 = s0;
    double *dd = reinterpret_cast<double *>(lev + nl);
    im.d = dd;
    im.r = dd + nn;
    double *ab = dd + 2 * nn;
    im.a = kAB ? ab : g.a + s0;
    im.b = kAB ? ab + nn : g.b + s0;
    int32_t *tabs = reinterpret_cast<int32_t *>(dd + (kAB ? 4 : 2) * nn);
    int32_t *len = tabs, *ppos = len + nb, *cbeg = ppos + nb, *cpos = cbeg + nb + 1, *ro = cpos + nk;
    for (int i = threadIdx.x; i < nn; i += blockDim.x) {
        dd[i] = g.d[s0 + i];
        dd[nn + i] = g.rhs[s0 + i];
        if (kAB) {
            ab[i] = __ldg(g.a + s0 + i);
            ab[nn + i] = __ldg(g.b + s0 + i);
        }
    }
    for (int i = threadIdx.x; i < nb; i += blockDim.x) {
        len[i] = __ldg(g.br_len + b0 + i);
        const int64_t p = __ldg(g.br_ppos + b0 + i);
        ppos[i] = p < 0 ? -1 : (int)(p - s0);
    }
    for (int i = threadIdx.x; i <= nb; i += blockDim.x) cbeg[i] = (int)(__ldg(g.br_child + b0 + i) - k0);
    for (int i = threadIdx.x; i < nk; i += blockDim.x) cpos[i] = (int)(__ldg(g.child_pos + k0 + i) - s0);
    for (int i = threadIdx.x; i < nr; i += blockDim.x) ro[i] = (int)__ldg(g.rowoff + r0 + i);
    im.len = len;
    im.ppos = ppos;
    im.cbeg = cbeg;
    im.cpos = cpos;
    __syncthreads();

    for (int li = nl - 1; li >= 0; --li) {
        const ns_mixed_level &L = lev[li];
        const int base = (int)(L.base - s0), fb = (int)(L.first_branch - b0);
        const int32_t *lro = ro + (L.rows - r0);
        for (int t = threadIdx.x; t < L.width; t += blockDim.x) image_backward(g, im, lro, base + t, fb + t);
        __syncthreads();
    }
    // The root branches' first pivots were checked in the backward sweep.
    for (int li = 0; li < nl; ++li) {
        const ns_mixed_level &L = lev[li];
        const int base = (int)(L.base - s0), fb = (int)(L.first_branch - b0);
        const int32_t *lro = ro + (L.rows - r0);
        for (int t = threadIdx.x; t < L.width; t += blockDim.x) image_forward(im, lro, base + t, fb + t);
        __syncthreads();
    }
    for (int i = threadIdx.x; i < nn; i += blockDim.x) __stcs(g.rhs + s0 + i, im.r[i]);
}

}  // namespace

extern "C" cudaError_t ns_mixed_fine_shared_setup(int ab_shared, size_t bytes) {
    const void *k = ab_shared ? (const void *)fine_shared_kernel<true> : (const void *)fine_shared_kernel<false>;
    return ns_cuda_prefer_shared(k, bytes);
}

extern "C" cudaError_t ns_mixed_launch_fine_shared(const ns_mixed_args *args, int32_t n_groups,
                                                   int threads, int ab_shared, size_t bytes,
                                                   cudaStream_t stream) {
    if (n_groups <= 0) return cudaSuccess;
    if (ab_shared)
        fine_shared_kernel<true><<<(unsigned)n_groups, threads, bytes, stream>>>(*args);
    else
        fine_shared_kernel<false><<<(unsigned)n_groups, threads, bytes, stream>>>(*args);
    return cudaGetLastError();
}
