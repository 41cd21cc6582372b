// Private (CUDA): the two sweeps of the on-chip schedule over one cell's
// shared-memory image, shared by the Hines solver's on-chip kernel
// (kernel_onchip.cu) and the on-chip simulation loop
// (src/sim/cuda/onchip.cu). docs/methods.md, "onchip".
//
// Backward sweep (triang), by height: a lane takes a run whose child runs
// are done, folds them into the run's last node, then walks to the run's
// first node carrying d and rhs in registers. At every node it stores
// G = b / d' over d and F = rhs' / d' over rhs, which is all the forward
// sweep needs: x = F - G x_parent. The parent's update is d_p -= a b / d',
// rhs_p -= a F. The next node's inputs are loaded before the current node's
// reciprocal, so the dependency chain per node is one reciprocal and one FMA.
// Forward sweep (bksub), by depth: a lane takes a run whose parent is solved
// and walks outwards carrying x in a register (one FMA per node); x
// overwrites F. __syncwarp() separates the steps; every cell of a warp has
// the same shape, so the warp's cells walk the same schedule side by side.
#ifndef NS_HINES_CUDA_ONCHIP_SWEEPS_CUH
#define NS_HINES_CUDA_ONCHIP_SWEEPS_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "hines/cuda/hines_kernels.h"

// The instance of an on-chip kernel template `kernel` for `lanes` lanes per
// cell (1, 2, 4, ..., 32), or nullptr for any other count.
#define NS_ONCHIP_PICK(kernel, lanes)                                                                   \
    ((lanes) == 1 ? kernel<1> : (lanes) == 2 ? kernel<2> : (lanes) == 4 ? kernel<4> : (lanes) == 8 ? kernel<8> \
     : (lanes) == 16 ? kernel<16> : (lanes) == 32 ? kernel<32> : nullptr)

// The resident blocks per SM of an on-chip kernel (k from NS_ONCHIP_PICK) of
// `warps` warps and `bytes` of dynamic shared memory.
template <class K> static inline cudaError_t ns_onchip_occupancy(K k, int warps, size_t bytes, int *blocks) {
    if (!k) return cudaErrorInvalidValue;
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, k, warps * NS_ONCHIP_LANES, bytes);
}

// The schedule's tables, in the copy each block keeps in shared memory.
struct OnchipTables {
    const int32_t *bwd_begin, *fwd_begin, *child_pos;
    const int4 *bwd, *fwd;
};

// `copy`: the schedule's core (s.core int32 from s.base) copied to shared memory.
__device__ __forceinline__ OnchipTables onchip_tables(const ns_onchip_sched &s, const int32_t *copy) {
    OnchipTables t;
    t.bwd_begin = copy + (s.bwd_begin - s.base);
    t.fwd_begin = copy + (s.fwd_begin - s.base);
    t.child_pos = copy + (s.child_pos - s.base);
    t.bwd = reinterpret_cast<const int4 *>(copy + (s.bwd_desc - s.base));
    t.fwd = reinterpret_cast<const int4 *>(copy + (s.fwd_desc - s.base));
    return t;
}

__device__ __forceinline__ bool onchip_bad_pivot(double p) { return p == 0.0 || !isfinite(p); }

// 1/x within an ulp or so, without the division's special-case branch: the
// hardware's approximate reciprocal (about 20 correct bits) and two Newton
// steps (each doubles the correct bits). 0 and non-finite x give non-finite
// results (the pivot checks catch them).
__device__ __forceinline__ double onchip_rcp(double x) {
    double y;
    asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(y) : "d"(x));
    double e = fma(-x, y, 1.0);
    y = fma(y, e, y);
    e = fma(-x, y, 1.0);
    return fma(y, e, y);
}

// Backward sweep of lane `role` (of L) for one cell: a, b read only; d in,
// G out; rhs in, F out (position order). Returns the highest compartment
// with a zero or non-finite pivot met by this lane, or -1 (node_of_pos:
// NULL when positions are compartments).
template <int L>
__device__ __forceinline__ int onchip_backward(const OnchipTables &t, int n_steps, int role,
                                               const double *a, const double *b, double *d,
                                               double *rhs, const int32_t *node_of_pos) {
    int worst = -1;
    for (int step = 0; step < n_steps; ++step) {
        const int q1 = t.bwd_begin[step * L + role + 1];
        for (int q = t.bwd_begin[step * L + role]; q < q1; ++q) {
            const int4 run = t.bwd[q];
            const int first = run.x;
            int node = run.y;
            double dk = d[node], rk = rhs[node];
            double an = a[node], bn = b[node];
            const int cb = (int)((unsigned)run.w >> 16), ce = cb + (run.w & 0xFFFF);
            for (int j = cb; j < ce; ++j) {
                const int c = t.child_pos[j];
                const double ac = a[c];
                dk = fma(-ac, d[c], dk);
                rk = fma(-ac, rhs[c], rk);
            }
            for (;;) {
                const bool more = node > first;
                double dp = 0.0, rp = 0.0, ap = 0.0, bp = 0.0;
                if (more) {  // the next node's inputs, ahead of the chain
                    dp = d[node - 1];
                    rp = rhs[node - 1];
                    ap = a[node - 1];
                    bp = b[node - 1];
                }
                if (onchip_bad_pivot(dk)) {
                    const int orig = node_of_pos ? __ldg(node_of_pos + node) : node;
                    if (orig > worst) worst = orig;
                }
                const double ab = an * bn;
                const double inv = onchip_rcp(dk);
                const double f = rk * inv;
                d[node] = bn * inv;
                rhs[node] = f;
                if (!more) break;
                dk = fma(-ab, inv, dp);
                rk = fma(-an, f, rp);
                an = ap;
                bn = bp;
                --node;
            }
        }
        __syncwarp();
    }
    return worst;
}

// Forward sweep of lane `role` (of L): G (over d) read only, F in, x out.
template <int L>
__device__ __forceinline__ void onchip_forward(const OnchipTables &t, int n_steps, int role,
                                               const double *g, double *fx) {
    for (int step = 0; step < n_steps; ++step) {
        const int q1 = t.fwd_begin[step * L + role + 1];
        for (int q = t.fwd_begin[step * L + role]; q < q1; ++q) {
            const int4 run = t.fwd[q];
            const int last = run.y;
            int node = run.x;
            double x = run.z >= 0 ? fx[run.z] : 0.0;
            double gk = run.z >= 0 ? g[node] : 0.0, f = fx[node];
            for (;;) {
                const bool more = node < last;
                double gn = 0.0, fn = 0.0;
                if (more) {
                    gn = g[node + 1];
                    fn = fx[node + 1];
                }
                x = fma(-gk, x, f);
                fx[node] = x;
                if (!more) break;
                gk = gn;
                f = fn;
                ++node;
            }
        }
        __syncwarp();
    }
}

#endif
