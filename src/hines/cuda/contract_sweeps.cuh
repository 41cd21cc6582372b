// The tree-contraction sweeps of one group by one *team* of threads (the
// method: src/hines/contract.h). Shared by the solver kernels
// (contract_kernel.cu) and the GPU simulation loop
// (src/sim/cuda/tree.cu): one implementation of the solve.
//
// A team is one CUDA block (ns_block_team), or every block of a thread-block
// cluster (ns_cluster_team, Hopper and later: a big cell spread over the SMs
// of a cluster, so its rounds are not limited by what one SM can load; the
// barrier is the cluster's, and loads of values other blocks wrote bypass
// the SM's L1, which is not coherent between SMs).
#ifndef NS_HINES_CUDA_CONTRACT_SWEEPS_CUH
#define NS_HINES_CUDA_CONTRACT_SWEEPS_CUH

#include "hines/cuda/contract_cuda.h"

struct ns_block_team {
    __device__ __forceinline__ int32_t rank() const { return 0; }
    __device__ __forceinline__ int32_t tid() const { return (int32_t)threadIdx.x; }
    __device__ __forceinline__ int32_t size() const { return (int32_t)blockDim.x; }
    __device__ __forceinline__ void sync() const { __syncthreads(); }
    __device__ __forceinline__ double ld(const double *p) const { return *p; }
};

// `sm90` on sm_90 and later (a cluster's registers), `older` before (a
// cluster of one block).
#if __CUDA_ARCH__ >= 900
#define NS_SM90_OR(sm90, older) (sm90)
#else
#define NS_SM90_OR(sm90, older) (older)
#endif

struct ns_cluster_team {
    __device__ __forceinline__ int32_t rank() const { return NS_SM90_OR((int32_t)__clusterRelativeBlockRank(), 0); }
    __device__ __forceinline__ int32_t blocks() const { return NS_SM90_OR((int32_t)__clusterSizeInBlocks(), 1); }
    __device__ __forceinline__ int32_t tid() const { return rank() * (int32_t)blockDim.x + (int32_t)threadIdx.x; }
    __device__ __forceinline__ int32_t size() const { return blocks() * (int32_t)blockDim.x; }
    // every thread of every block of the cluster; release/acquire at
    // cluster scope orders the global-memory writes before it
    __device__ __forceinline__ void sync() const {
#if __CUDA_ARCH__ >= 900
        asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
#else
        __syncthreads();
#endif
    }
    __device__ __forceinline__ double ld(const double *p) const { return __ldcg(p); }
};

// The launch of one cluster of `cluster` blocks per big cell (host side;
// attr must outlive the launch call): used with cudaLaunchKernelEx.
static inline cudaLaunchConfig_t ns_contract_cluster_config(const ns_contract_dev *dev, unsigned threads,
                                                            size_t shared_bytes, cudaStream_t stream,
                                                            cudaLaunchAttribute *attr) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)(dev->n_big * dev->cluster));
    cfg.blockDim = dim3(threads);
    cfg.dynamicSmemBytes = shared_bytes;
    cfg.stream = stream;
    attr->id = cudaLaunchAttributeClusterDimension;
    attr->val.clusterDim.x = (unsigned)dev->cluster;
    attr->val.clusterDim.y = 1;
    attr->val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return cfg;
}

// One pull task (see ns_contract_fwd): kept node k takes in its eliminated
// children and, when f.w >= 0, its eliminated parent.
template <class Team>
__device__ __forceinline__ void ns_contract_pull(const Team &tm, int4 f, const int32_t *list, double *D, double *R,
                                                 double *U, double *W, double *Lo) {
    double dk = tm.ld(D + f.x), rk = tm.ld(R + f.x);
    if (f.y >= 0) {
        const double g = tm.ld(W + f.y) / tm.ld(D + f.y);
        dk -= g * tm.ld(U + f.y);
        rk -= g * tm.ld(R + f.y);
        if (f.z >= 0) {
            const double g2 = tm.ld(W + f.z) / tm.ld(D + f.z);
            dk -= g2 * tm.ld(U + f.z);
            rk -= g2 * tm.ld(R + f.z);
        }
    } else if (f.y <= -2) {
        const int32_t first = -2 - f.y;
        for (int32_t q = first; q < first + f.z; ++q) {
            const int32_t u = __ldg(list + q);
            const double g = tm.ld(W + u) / tm.ld(D + u);
            dk -= g * tm.ld(U + u);
            rk -= g * tm.ld(R + u);
        }
    }
    if (f.w >= 0) {
        const int32_t u = f.w;
        const double inv = 1.0 / tm.ld(D + u);
        const double wk = tm.ld(W + f.x), g = tm.ld(U + f.x) * inv;
        dk -= g * wk;
        rk -= g * tm.ld(R + u);
        Lo[u] = wk;
        W[f.x] = -tm.ld(W + u) * wk * inv;
        U[f.x] = -g * tm.ld(U + u);
    }
    D[f.x] = dk;
    R[f.x] = rk;
}

// Forward rounds [r0, r1) of a template's schedule rt (pull tasks; each
// thread loads its first task of the next round before the barrier: the
// schedule does not depend on the values, so a round costs the barrier and
// the value loads). Ends with a barrier; the caller's data must be visible
// (a barrier before).
template <class Team>
__device__ __forceinline__ void ns_contract_forward(const Team &tm, const ns_contract_dev &p, const int32_t *rt,
                                                    int32_t r0, int32_t r1, double *D, double *R, double *U,
                                                    double *W, double *Lo) {
    if (r0 >= r1) return;
    const int4 *fwd = reinterpret_cast<const int4 *>(p.fwd);
    const int32_t tid = tm.tid(), nt = tm.size();
    int32_t t0 = __ldg(rt + r0) + tid, t1 = __ldg(rt + r0 + 1);
    int4 f = make_int4(0, -1, -1, -1);
    if (t0 < t1) f = __ldg(fwd + t0);
    for (int32_t r = r0; r < r1; ++r) {
        if (t0 < t1) {
            ns_contract_pull(tm, f, p.list, D, R, U, W, Lo);
            for (int32_t t = t0 + nt; t < t1; t += nt) ns_contract_pull(tm, __ldg(fwd + t), p.list, D, R, U, W, Lo);
        }
        if (r + 1 < r1) {
            t0 = t1 + tid;
            t1 = __ldg(rt + r + 2);
            if (t0 < t1) f = __ldg(fwd + t0);
        }
        tm.sync();
    }
}

// Backward rounds r1 down to r0 (rb: the backward boundaries); pivot keys
// count rounds from round0 and name node node_of[u] (NULL: the identity).
// Ends with a barrier.
template <class Team>
__device__ __forceinline__ void ns_contract_backward(const Team &tm, const ns_contract_dev &p, const int32_t *rb,
                                                     int32_t r1, int32_t r0, int32_t round0, double *D, double *R,
                                                     double *U, double *Lo, const int32_t *node_of,
                                                     int64_t base, unsigned long long *bad) {
    if (r1 < r0) return;
    const int4 *bwd = reinterpret_cast<const int4 *>(p.bwd);
    const int32_t tid = tm.tid(), nt = tm.size();
    int32_t t0 = __ldg(rb + r1) + tid, t1 = __ldg(rb + r1 + 1);
    int4 w = make_int4(0, -1, -1, 0);
    if (t0 < t1) w = __ldg(bwd + t0);
    for (int32_t r = r1; r >= r0; --r) {
        for (int32_t t = t0; t < t1; t += nt) {
            if (t != t0) w = __ldg(bwd + t);  // u, p, c
            const double du = tm.ld(D + w.x);
            if (du == 0.0 || !isfinite(du)) {
                const int32_t node = node_of ? __ldg(node_of + w.x) : w.x;
                atomicMin(bad, ((unsigned long long)(round0 + r) << 40) | (unsigned long long)(base + node));
            }
            double x = tm.ld(R + w.x);
            if (w.y >= 0) x -= tm.ld(U + w.x) * tm.ld(R + w.y);
            if (w.z >= 0) x -= tm.ld(Lo + w.x) * tm.ld(R + w.z);
            R[w.x] = x / du;
        }
        if (r > r0) {
            t0 = __ldg(rb + r - 1) + tid;
            t1 = __ldg(rb + r);
            if (t0 < t1) w = __ldg(bwd + t0);
        }
        tm.sync();
    }
}

// All R rounds of schedule rt by the team: forward, then backward. Starts
// after a barrier, ends with one.
template <class Team>
__device__ __forceinline__ void ns_contract_rounds(const Team &tm, const ns_contract_dev &p, const int32_t *rt,
                                                   int32_t R, int32_t round0, double *D, double *X, double *U,
                                                   double *Wd, double *Lo, const int32_t *node_of,
                                                   int64_t base, unsigned long long *bad) {
    ns_contract_forward(tm, p, rt, 0, R, D, X, U, Wd, Lo);
    ns_contract_backward(tm, p, rt + R + 1, R, 0, round0, D, X, U, Lo, node_of, base, bad);
}

// Eliminate and back-substitute the group whose template is `tmpl`. D, R,
// U, W, Lo address the group's node 0 (shared or device memory): d, rhs, up
// (holding b on entry), down (holding a) and lo (scratch). R becomes x; D,
// U, W, Lo are left factorised. A zero or non-finite pivot is recorded in
// *bad as (round << 40) | (base + node). A
// template with a tail (big cells in device memory) runs its tail on a
// copy in `tail` (shared memory of NS_CONTRACT_SHARED_DOUBLES x
// t_nodes[tail] doubles), by the team's first block alone. Starts and
// ends with a barrier of the whole team (every thread of it must call it).
template <class Team>
__device__ __forceinline__ void ns_contract_sweeps(const Team &tm, const ns_contract_dev &p, int32_t tmpl, double *D,
                                                   double *R, double *U, double *W, double *Lo, int64_t base,
                                                   unsigned long long *bad, double *tail = nullptr) {
    const int32_t rounds = __ldg(p.t_rounds + tmpl);
    const int32_t *rt = p.rt + __ldg(p.t_rt + tmpl);
    const int32_t tt = tail ? __ldg(p.t_tail + tmpl) : -1;
    tm.sync();
    if (tt < 0) {
        ns_contract_rounds(tm, p, rt, rounds, 0, D, R, U, W, Lo, nullptr, base, bad);
        return;
    }
    const int32_t K = __ldg(p.t_head + tmpl);
    ns_contract_forward(tm, p, rt, 0, K, D, R, U, W, Lo);
    if (tm.rank() == 0) {
        const ns_block_team blk;
        const int32_t T = __ldg(p.t_nodes + tt), Rt = __ldg(p.t_rounds + tt);
        const int32_t *map = p.tmap + __ldg(p.t_map + tt), *trt = p.rt + __ldg(p.t_rt + tt);
        double *sD = tail, *sR = sD + T, *sU = sR + T, *sW = sU + T, *sL = sW + T;
        for (int32_t j = threadIdx.x; j < T; j += blockDim.x) {
            const int32_t i = __ldg(map + j);
            sD[j] = tm.ld(D + i), sR[j] = tm.ld(R + i), sU[j] = tm.ld(U + i), sW[j] = tm.ld(W + i);
        }
        __syncthreads();
        ns_contract_rounds(blk, p, trt, Rt, K, sD, sR, sU, sW, sL, map, base, bad);
        for (int32_t j = threadIdx.x; j < T; j += blockDim.x) R[__ldg(map + j)] = sR[j];
    }
    tm.sync();
    ns_contract_backward(tm, p, rt + rounds + 1, K - 1, 0, 0, D, R, U, Lo, nullptr, base, bad);
}

#endif
