// The GPU simulation loop for any population (mixed shapes, large cells):
// the cells are laid out in groups of the tree-contraction solver
// (src/hines/contract.h), one CUDA block per group runs `run.steps` of
// NEURON's fixed step with no host round trip, and the Hines solve of every
// step is the solver's own block sweep (ns_contract_sweeps), so a cell of
// 38,580 compartments is solved in 15 rounds instead of walking its chain.
//
// State is Flat (the population's cells in order, each cell's compartments
// in its tree order) in device memory; d, rhs and the solve's scratch are in
// shared memory for groups that fit (three launches: several-cell groups,
// single cells in shared memory, big cells in device memory). A step, phase by phase, each ended by
// a block barrier (the same operations in the same order per node as
// step_cpu.c, so the assembly is bit-identical to the CPU loop's):
//   A  per node: pas current and slope into rhs, d
//   B  per cell: the current clamps, in the order they were added; the
//      spike node's old v
//   C  per node: hh current and slope, capacitance, then the axial terms:
//      its own (parent) first, then its children in increasing order
//      (NEURON adds a child's term to the parent row when it reaches the
//      child, i.e. in increasing child order after the parent's own)
//   -  the tree solve (ns_contract_sweeps)
//   D  per node: v += x, the fault check, the hh gates
//   E  per cell: spike detection and recording
#include <math.h>

#include "cable/cuda/sim_cuda.h"
#include "cable/mech.h"
#include "hines/cuda/contract_sweeps.cuh"

namespace {

// SHARED: d, rhs and the solve's up, down, lo of the group live in shared
// memory (groups that fit); else in device memory (big cells).
template <bool SHARED>
__global__ void __launch_bounds__(NS_SIM_TREE_THREADS)
    sim_tree_steps(ns_sim_tree t, ns_contract_dev p, const int32_t *__restrict__ list, ns_sim_gpu_group g,
                   ns_sim_gpu_run r) {
    extern __shared__ double sm[];
    __shared__ unsigned long long bad;  // pivot key of this step (sweeps' atomicMin)
    __shared__ int stop;                // a cell of the group failed: the group stops
    const int32_t grp = list[blockIdx.x];
    const int32_t tmpl = p.g_tmpl[grp];
    const int32_t N = p.t_nodes[tmpl];
    const int64_t base = p.g_base[grp];
    const int32_t c0 = t.g_cell0[grp], c1 = t.g_cell0[grp + 1];
    double *v = g.v + base, *m = g.m + base, *h = g.h + base, *gn = g.gn + base;
    double *d, *rhs, *U, *W, *Lo;
    if (SHARED) {
        d = sm, rhs = d + N, U = rhs + N, W = U + N, Lo = W + N;
    } else {
        d = g.d + base, rhs = g.rhs + base, U = t.up + base, W = t.down + base, Lo = t.lo + base;
    }
    const double *a = t.a + base, *b = t.b + base, *cap = t.cap + base;
    const int8_t *region = t.region + base;
    const int32_t *parent = t.parent + base, *cb = t.child_begin + base;
    const double dt = r.dt;
    double tcur = r.t0;
    // thread j owns cell c0 + j in phases B and E (groups hold at most
    // NS_SIM_TREE_THREADS cells)
    const int32_t c = c0 + (int32_t)threadIdx.x;
    const int own = c < c1;
    const int64_t cell_base = own ? t.cell_base[c] - base : 0;
    int32_t spikes = 0;
    double v_old = 0.0;
    if (threadIdx.x == 0) stop = 0;
    for (int64_t k = 0; k < r.steps; ++k) {
        const double tp = tcur;
        const double tm = tcur + .5 * dt;
        // A: pas
        for (int32_t i = threadIdx.x; i < N; i += blockDim.x) {
            double ri = 0.0, di = 0.0;
            const int reg = region[i];
            if (reg >= 0 && r.regions[reg].pas) {
                const sim_region *q = &r.regions[reg];
                const double vi = v[i];
                const double g1 = ns_pas_current(vi + .001, q->g_pas, q->e_pas);
                const double i0 = ns_pas_current(vi, q->g_pas, q->e_pas);
                ri -= i0;
                di += (g1 - i0) / .001;
            }
            rhs[i] = ri;
            d[i] = di;
        }
        __syncthreads();
        // B: clamps, one thread per cell (every thread has read last step's
        // `bad` before A's barrier: reset it here)
        if (threadIdx.x == 0) bad = NS_CONTRACT_PIVOT_NONE;
        if (own) {
            for (int64_t s = g.stim_begin[c]; s < g.stim_begin[c + 1]; ++s) {
                const double i = (tm < g.stim_del[s] + g.stim_dur[s] && tm >= g.stim_del[s]) ? g.stim_amp[s] : 0.0;
                rhs[cell_base + g.stim_node[s]] += i * g.stim_scale[s];
            }
            v_old = v[cell_base + t.spike_node[c]];
        }
        __syncthreads();
        // C: hh, capacitance, axial
        for (int32_t i = threadIdx.x; i < N; i += blockDim.x) {
            const int reg = region[i];
            double ri = rhs[i], di = d[i];
            const double vi = v[i];
            if (reg >= 0) {
                if (r.regions[reg].hh) {
                    const sim_region *q = &r.regions[reg];
                    const double mi = m[i], hi = h[i], ni = gn[i];
                    const double g1 =
                        ns_hh_current(vi + .001, mi, hi, ni, q->gnabar, q->gkbar, q->gl, q->el, q->ena, q->ek);
                    const double i0 = ns_hh_current(vi, mi, hi, ni, q->gnabar, q->gkbar, q->gl, q->el, q->ena, q->ek);
                    ri -= i0;
                    di += (g1 - i0) / .001;
                }
                di = di + cap[i];
            }
            const int32_t pi = parent[i];  // group-local, -1 at a root
            if (pi >= 0) {
                const double dv = v[pi] - vi;
                ri -= b[i] * dv;
                di -= b[i];
            }
            for (int32_t q = cb[i]; q < cb[i + 1]; ++q) {
                const int32_t ch = t.child[q];  // group-local
                const double dv = vi - v[ch];
                ri += a[ch] * dv;
                di -= a[ch];
            }
            rhs[i] = ri;
            d[i] = di;
            U[i] = b[i];
            W[i] = a[i];
        }
        // the solve (starts and ends with a barrier); a big cell's last
        // rounds on a copy in shared memory
        ns_contract_sweeps(p, tmpl, d, rhs, U, W, Lo, 0, &bad, SHARED ? nullptr : sm);
        tcur = tm + .5 * dt;
        const int64_t step = r.step0 + k + 1;
        const int check = bad != NS_CONTRACT_PIVOT_NONE || (step % r.check) == 0 || k == r.steps - 1;
        // D: v, the fault check, gates
        for (int32_t i = threadIdx.x; i < N; i += blockDim.x) {
            const double vi = v[i] + rhs[i];
            v[i] = vi;
            if (check && !isfinite(vi)) stop = 1;
            const int reg = region[i];
            if (reg < 0 || !r.regions[reg].hh) continue;
            ns_hh_rates q;
            ns_hh_rates_of(r.table, r.usetable, r.q10, vi, &q);
            m[i] = ns_cnexp(m[i], q.minf, q.mtau, dt);
            h[i] = ns_cnexp(h[i], q.hinf, q.htau, dt);
            gn[i] = ns_cnexp(gn[i], q.ninf, q.ntau, dt);
        }
        __syncthreads();
        const unsigned long long key = bad;
        if (stop || key != NS_CONTRACT_PIVOT_NONE) {  // the same decision in every thread
            // the failed cells: non-finite v, or the cell of the bad pivot
            if (own) {
                const int64_t cb1 = t.cell_base[c + 1] - base;
                const int64_t node = (int64_t)(key & ((1ULL << 40) - 1));
                int fault = key != NS_CONTRACT_PIVOT_NONE && node >= cell_base && node < cb1;
                for (int64_t i = cell_base; i < cb1 && !fault; ++i) fault = !isfinite(v[i]);
                if (fault) atomicMin(g.fault, ((unsigned long long)(k + 1) << 24) | (unsigned long long)c);
            }
            break;
        }
        // E: spikes and recording, one thread per cell
        if (own) {
            const double v_new = v[cell_base + t.spike_node[c]];
            if (v_old < r.threshold && v_new >= r.threshold) {
                if (spikes < r.spike_cap)
                    g.spike_t[(int64_t)c * r.spike_cap + spikes] =
                        tp + (tcur - tp) * (r.threshold - v_old) / (v_new - v_old);
                ++spikes;
            }
            if (g.rec_begin[c + 1] > g.rec_begin[c] && step % r.every == 0) {
                double *row = g.traces + (step / r.every - r.first_sample) * r.n_sites;
                for (int64_t q = g.rec_begin[c]; q < g.rec_begin[c + 1]; ++q)
                    row[g.rec_site[q]] = v[cell_base + g.rec_node[q]];
            }
        }
        // the next step's phase A writes rhs and d, which E does not read
    }
    if (own) g.spike_count[c] = spikes;
}

}  // namespace

extern "C" cudaError_t ns_sim_tree_setup(size_t shared_bytes) {
    const cudaError_t e =
        cudaFuncSetAttribute(sim_tree_steps<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared_bytes);
    if (e != cudaSuccess) return e;
    return cudaFuncSetAttribute(sim_tree_steps<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared_bytes);
}

extern "C" cudaError_t ns_sim_launch_tree(const ns_sim_tree *tree, const ns_contract_dev *layout,
                                          const ns_sim_gpu_group *group, const ns_sim_gpu_run *run,
                                          const cudaStream_t streams[3]) {
    // small groups, single medium or large cells (shared memory), big cells
    // (device memory): three launches side by side
    const int32_t n[3] = {layout->n_small, layout->n_medium + layout->n_large, layout->n_big};
    if (layout->n_large > 0) return cudaErrorInvalidValue; /* the simulation's layout has no large class */
    const int32_t *lists[3] = {layout->small, layout->medium, layout->big};
    const int32_t nodes[2] = {layout->max_small_nodes, layout->max_medium_nodes};
    for (int k = 0; k < 3; ++k) {
        if (n[k] <= 0) continue;
        if (k < 2)
            sim_tree_steps<true><<<(unsigned)n[k], NS_SIM_TREE_THREADS, ns_contract_shared_bytes(nodes[k]), streams[k]>>>(
                *tree, *layout, lists[k], *group, *run);
        else
            sim_tree_steps<false><<<(unsigned)n[k], NS_SIM_TREE_THREADS, ns_contract_shared_bytes(layout->max_tail_nodes),
                                   streams[k]>>>(*tree, *layout, lists[k], *group, *run);
        const cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}
