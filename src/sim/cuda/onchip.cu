// The on-chip GPU simulation loop (docs/simulation.md, "GPU loops"): a warp
// holds 32 / L cells of one shape, L lanes per cell, and keeps their whole
// state (v, m, h, n) and scratch (d, rhs) in shared memory for every step of
// a launch. Device memory sees the state once per launch (read at the start,
// written at the end), the recorded samples and the spikes; a step is
// arithmetic and shared-memory traffic only. Cells whose image does not fit
// a block run the same code with kShared = false: the state stays where it
// lives in device memory, d and rhs in the group's scratch (32 lanes).
//
// One step, NEURON's order of operations (sim/cpu/step.c):
//   1. per compartment (all 32 lanes over the warp's cells): pas, IClamp, hh
//      currents and slopes, capacitance, then the axial terms gathered at the
//      node (its own term first, then its children in increasing compartment
//      order: the order in which the CPU loop's scatter adds them);
//   2. the Hines solve by the on-chip schedule (onchip_sweeps.cuh): backward
//      sweep by height storing G = b/d' over d and F = rhs'/d' over rhs,
//      forward sweep x = F - G x_parent over rhs;
//   3. per compartment: v += x, NaN check, hh gates by cnexp from the new v,
//      spike detection at the spike compartment; then recording.
// Everything is in position order (the schedule's renumbering: each run of
// the tree is a contiguous range); the host converts stimulus, recording and
// spike compartments to positions, and the state to and from this layout.
//
// A model (kModel: the built-in pas and hh; sim/cuda/fused.h, the rule in
// sim/policy.h) runs their generated per-instance functions in the same
// phases, as the fused tree loop does (sim/cuda/fused_one.cuh): pas's current
// before the clamps, hh's after them, hh's states after v += x. hh's states
// sit in shared memory where the hand-written gates do (m, h, n per
// position, loaded from and stored to the mechanism's fields once per
// launch), the parameters and e come from the distinct tuples by the
// position's map in the constants, hh's TABLE and GLOBALs are copied to
// shared memory per block, and the assigned variables stay in registers,
// stored in the launch's last step.
#include "core/cuda_check.h"
#include <cuda_runtime.h>
#include <stdint.h>

#include "sim/cuda/step.h"
#include "sim/membrane.h"
#include "hines/cuda/onchip_sweeps.cuh"
#include "sim/cuda/fused_one.cuh"
#include "mech/builtin/builtin.h"
#include "mech/builtin/pas.h"
#include "mech/builtin/hh.h"

namespace {

// cnexp for x' = (inf - x) / tau in its algebraically equal short form
// (one reciprocal instead of nocmodl's three divisions; results differ from
// sim/membrane.h's ns_cnexp by rounding only).
__device__ __forceinline__ double cnexp_short(double x, double inf, double tau, double dt) {
    return fma(1.0 - exp(-dt * onchip_rcp(tau)), inf - x, x);
}

// The current's slope (I(v + .001) - I(v)) / .001, as a product (1e3 differs
// from 1 / .001 by rounding only).
__device__ __forceinline__ double slope(double i1, double i0) { return (i1 - i0) * 1e3; }

// One cell's arrays (position order): in the warp's shared memory, or (cells
// too large for it) the state in device memory where it lives and d, rhs in
// the group's scratch.
struct CellView {
    double *v, *m, *h, *gn, *d, *rhs;
};

template <bool kShared>
__device__ __forceinline__ CellView cell_view(double *wbase, int cs, int n, int c, const ns_sim_gpu_group &g,
                                              long long j) {
    if constexpr (kShared) {
        double *v = wbase + c * cs;
        return CellView{v, v + n, v + 2 * n, v + 3 * n, v + 4 * n, v + 5 * n};
    } else {
        const long long o = j * n;
        return CellView{g.v + o, g.m + o, g.h + o, g.gn + o, g.d + o, g.rhs + o};
    }
}

// A model's mechanisms at one position (kModel): pas's current (before the
// clamps), hh's current (after them) or hh's states (v the new one), the
// generated functions on locals (sim/cuda/fused_one.cuh); hh's states at
// st[0], st[n], st[2 n] (the cell's m, h, n in shared memory). LAST: the
// assigned variables that the function sets go to the fields.
enum { MODEL_PAS_CURRENT, MODEL_HH_CURRENT, MODEL_HH_STATE };

template <int kWhat, bool LAST>
__device__ __forceinline__ void model_call(const ns_sim_onchip_model &M, int32_t q, int tuple, double *st, int n,
                                           double *glob, double *tab, double *vl, double *rl, double *dl, double t,
                                           double dt) {
    if constexpr (kWhat == MODEL_PAS_CURRENT) {
        ns_fused_call<NS_FUSED_PAS_FIELDS, NS_FUSED_PAS_PARAMS, 0, 0, nsm_pas_current_one, LAST>(
            M.pas.sets + (int64_t)tuple * NS_FUSED_PAS_PARAMS, nullptr, 0, M.pas.fields, M.pas.count, q, nullptr,
            nullptr, vl, rl, dl, false, t, dt, M.celsius);
    } else {
        ns_fused_call<NS_FUSED_HH_FIELDS, NS_FUSED_HH_PARAMS, NS_FUSED_HH_STATES, 2,
                      kWhat == MODEL_HH_STATE ? nsm_hh_state_one : nsm_hh_current_one, LAST>(
            M.hh.sets + (int64_t)tuple * (NS_FUSED_HH_PARAMS + 2), st, n, M.hh.fields, M.hh.count, q, glob, tab, vl,
            rl, dl, kWhat == MODEL_HH_STATE, t, dt, M.celsius);
    }
}

// ... of cell j at position p: its instance (read only in the last step,
// where the assigned variables are stored) from the per-position `local`.
template <int kWhat>
__device__ __forceinline__ void model_at(const ns_sim_onchip_model &M, bool last, long long j, int p,
                                         const ushort2 *local, int tuple, double *st, int n, double *glob,
                                         double *tab, double *vl, double *rl, double *dl, double t, double dt) {
    if (last) {
        const ushort2 li = __ldg(local + p);
        const int32_t q = kWhat == MODEL_PAS_CURRENT ? (int32_t)(j * M.pas.per_cell + li.x)
                                                     : (int32_t)(j * M.hh.per_cell + li.y);
        model_call<kWhat, true>(M, q, tuple, st, n, glob, tab, vl, rl, dl, t, dt);
    } else {
        model_call<kWhat, false>(M, 0, tuple, st, n, glob, tab, vl, rl, dl, t, dt);
    }
}

// kShared: the cells' images and the shape's constants in shared memory
// (the on-chip loop); otherwise everything stays in device memory (L1/L2)
// and only the warp structure remains (cells that do not fit a block).
// kModel (shared only): the membrane is the model's pas and hh (above).
template <int L, bool kShared, bool kModel>
__global__ void sim_onchip(ns_onchip_sched s, ns_sim_onchip o, ns_sim_gpu_group g, ns_sim_gpu_run r) {
    static_assert(kShared || !kModel, "a model runs in shared memory only");
    constexpr int C = NS_ONCHIP_LANES / L;
    extern __shared__ __align__(16) double smem[];
    // hand-written: the regions' parameters and hh's rate table (9.6 KB, read
    // at every gate update); a model: hh's TABLE, then its GLOBALs
    constexpr int kStatic = kModel ? NS_FUSED_HH_TABLE + NS_FUSED_HH_GLOBALS
                                   : (int)(sizeof(ns_hh_table) / sizeof(double));
    __shared__ sim_region regions[kModel ? 1 : NS_REGION_COUNT];
    __shared__ double stab[kStatic];
    const ns_hh_table &table = *reinterpret_cast<const ns_hh_table *>(stab);
    double *const mtab = stab, *const mglob = stab + (kModel ? NS_FUSED_HH_TABLE : 0);
    const ns_sim_onchip_model &M = o.mech;
    // The schedule's core and the shape's constants, once per block.
    const int core4 = (s.core + 3) / 4;
    {
        int4 *dst = reinterpret_cast<int4 *>(smem);
        const int4 *core = reinterpret_cast<const int4 *>(s.base);
        const int4 *consts = reinterpret_cast<const int4 *>(o.consts);
        if (kShared) {
            for (int k = threadIdx.x; k < core4; k += blockDim.x) dst[k] = __ldg(core + k);
            for (int k = threadIdx.x; k < o.const_words; k += blockDim.x) dst[core4 + k] = __ldg(consts + k);
        }
        if constexpr (kModel) {
            if (M.hh.count > 0) {
                for (int k = threadIdx.x; k < NS_FUSED_HH_TABLE; k += blockDim.x) mtab[k] = __ldg(M.hh_table + k);
                if (threadIdx.x < M.hh_globals) mglob[threadIdx.x] = __ldg(M.hh_global + threadIdx.x);
            }
        } else {
            if (threadIdx.x < NS_REGION_COUNT) regions[threadIdx.x] = r.regions[threadIdx.x];
            const double *src = reinterpret_cast<const double *>(r.table);
            for (int k = threadIdx.x; k < kStatic; k += blockDim.x) stab[k] = __ldg(src + k);
        }
    }
    __syncthreads();
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int role = lane & (L - 1);
    const int mine = lane / L;
    const long long c0 = ((long long)blockIdx.x * (blockDim.x >> 5) + warp) * C;
    if (c0 >= g.cells) return;  // whole warps only
    const int nc = g.cells - c0 < C ? (int)(g.cells - c0) : C;

    const int32_t *const sched = kShared ? reinterpret_cast<const int32_t *>(smem) : s.base;
    const OnchipTables tables = onchip_tables(s, sched);

    const int n = s.n;
    // Shape constants (ns_sim_onchip_const_bytes layout), position order.
    const double *const sa =
        kShared ? reinterpret_cast<const double *>(smem + core4 * 2) : static_cast<const double *>(o.consts);
    const double *const sb = sa + n;
    const double *const scap = sb + n;
    // a model's tuples of pas and hh per position; their instances within the cell (device memory)
    const ushort2 *const smap = reinterpret_cast<const ushort2 *>(scap + n);
    const ushort2 *const local = reinterpret_cast<const ushort2 *>(M.local);
    const int32_t *const spar =
        kModel ? reinterpret_cast<const int32_t *>(smap + n) : reinterpret_cast<const int32_t *>(scap + n);
    const int32_t *const schild_begin = spar + n;
    const int32_t *const schild = schild_begin + n + 1;
    const int8_t *const sregion = reinterpret_cast<const int8_t *>(schild + (n > 1 ? n - 1 : 1));

    const int cs = ns_sim_onchip_cell_doubles(n);
    double *const wbase = smem + (size_t)(core4 + o.const_words) * 2 + (size_t)warp * C * cs;
    // cell c of the warp: cell_view(c) (shared: v, m, h, n, d, rhs at wbase + c * cs + {0, ..., 5} * n)

    // Load the state: element e of the warp's range is (cell e / n, position e % n).
    const long long g0 = c0 * n;
    const int total = nc * n;
    for (int e = lane; kShared && e < total; e += 32) {
        const int c = e / n, p = e - c * n;
        double *cell = wbase + c * cs;
        cell[p] = g.v[g0 + e];
        if constexpr (kModel) {  // hh's states from its fields
            const int li = __ldg(local + p).y;
            if (li != NS_SIM_ONCHIP_NONE) {
                const int64_t q = (c0 + c) * M.hh.per_cell + li, f = (NS_FUSED_HH_FIELDS - NS_FUSED_HH_STATES) * M.hh.count;
                cell[n + p] = M.hh.fields[f + q];
                cell[2 * n + p] = M.hh.fields[f + M.hh.count + q];
                cell[3 * n + p] = M.hh.fields[f + 2 * M.hh.count + q];
            }
        } else {
            cell[n + p] = g.m[g0 + e];
            cell[2 * n + p] = g.h[g0 + e];
            cell[3 * n + p] = g.gn[g0 + e];
        }
    }
    if (lane < nc) g.spike_count[c0 + lane] = 0;
    __syncwarp();

    const double dt = r.dt;
    const int sp = g.spike_node;          // a position
    unsigned alive = nc == 32 ? 0xFFFFFFFFu : ((1u << nc) - 1u);  // bit c: cell c still runs
    double t = r.t0;
    for (long long k = 0; k < r.steps && alive; ++k) {
        const double tp = t;
        const double tm = t + .5 * dt;
        const bool last = k == r.steps - 1;  // kModel: the assigned variables are stored
        // 1. membrane, stimulus, capacitance, axial terms
        for (int c = 0; c < nc; ++c) {
            if (!(alive >> c & 1u)) continue;
            const long long j = c0 + c;
            const CellView cv = cell_view<kShared>(wbase, cs, n, c, g, j);
            const double *const v = cv.v, *const m = cv.m, *const h = cv.h, *const gn = cv.gn;
            double *const d = cv.d, *const rhs = cv.rhs;
            const long long st0 = g.stim_begin[j], st1 = g.stim_begin[j + 1];
            for (int p = lane; p < n; p += 32) {
                const int reg = sregion[p];
                double vi = v[p];
                double ri = 0.0, di = 0.0;
                ushort2 mp;
                if constexpr (kModel) {
                    mp = smap[p];
                    if (mp.x != NS_SIM_ONCHIP_NONE)
                        model_at<MODEL_PAS_CURRENT>(M, last, j, p, local, mp.x, nullptr, n, nullptr, nullptr, &vi, &ri,
                                                    &di, tm, dt);
                } else if (reg >= 0 && regions[reg].pas) {
                    const sim_region *q = &regions[reg];
                    const double g1 = ns_pas_current(vi + .001, q->g_pas, q->e_pas);
                    const double i0 = ns_pas_current(vi, q->g_pas, q->e_pas);
                    ri -= i0;
                    di += slope(g1, i0);
                }
                for (long long q = st0; q < st1; ++q) {
                    if (g.stim_node[q] != p) continue;
                    const double i = (tm < g.stim_del[q] + g.stim_dur[q] && tm >= g.stim_del[q]) ? g.stim_amp[q] : 0.0;
                    ri += i * g.stim_scale[q];
                }
                if constexpr (kModel) {
                    if (mp.y != NS_SIM_ONCHIP_NONE)
                        model_at<MODEL_HH_CURRENT>(M, last, j, p, local, mp.y, const_cast<double *>(m + p), n, mglob,
                                                   mtab, &vi, &ri, &di, tm, dt);
                }
                if (reg >= 0) {
                    if (!kModel && regions[reg].hh) {
                        const sim_region *q = &regions[reg];
                        const double g1 = ns_hh_current(vi + .001, m[p], h[p], gn[p], q->gnabar, q->gkbar, q->gl,
                                                        q->el, q->ena, q->ek);
                        const double i0 =
                            ns_hh_current(vi, m[p], h[p], gn[p], q->gnabar, q->gkbar, q->gl, q->el, q->ena, q->ek);
                        ri -= i0;
                        di += slope(g1, i0);
                    }
                    di += scap[p];
                }
                const int par = spar[p];
                if (par >= 0) {
                    const double dv = v[par] - vi;
                    ri -= sb[p] * dv;
                    di -= sb[p];
                }
                for (int q = schild_begin[p]; q < schild_begin[p + 1]; ++q) {
                    const int ch = schild[q];
                    const double dv = vi - v[ch];
                    ri += sa[ch] * dv;
                    di -= sa[ch];
                }
                d[p] = di;
                rhs[p] = ri;
            }
        }
        __syncwarp();

        // 2. the Hines solve of this lane's cell (G over d, F then x over rhs)
        const CellView sv = cell_view<kShared>(wbase, cs, n, mine, g, c0 + (mine < nc ? mine : 0));
        const bool bad = onchip_backward<L>(tables, s.n_bwd, role, sa, sb, sv.d, sv.rhs, nullptr) >= 0;
        onchip_forward<L>(tables, s.n_fwd, role, sv.d, sv.rhs);

        // 3. v += x, NaN check, gates, spikes
        t = tm + .5 * dt;
        const long long step = r.step0 + k + 1;
        const bool check = (step % r.check) == 0 || k == r.steps - 1;
        unsigned fault = bad && mine < nc ? 1u << mine : 0u;
        for (int c = 0; c < nc; ++c) {
            if (!(alive >> c & 1u)) continue;
            const CellView cv = cell_view<kShared>(wbase, cs, n, c, g, c0 + c);
            double *const v = cv.v, *const m = cv.m, *const h = cv.h, *const gn = cv.gn;
            const double *const x = cv.rhs;
            for (int p = lane; p < n; p += 32) {
                const double v_old = v[p];
                double vi = v_old + x[p];
                v[p] = vi;
                if (check && !isfinite(vi)) fault |= 1u << c;
                if constexpr (kModel) {
                    const int tuple = smap[p].y;
                    if (tuple != NS_SIM_ONCHIP_NONE) {
                        double rl = 0.0, dl = 0.0;
                        model_at<MODEL_HH_STATE>(M, last, c0 + c, p, local, tuple, m + p, n, mglob, mtab, &vi, &rl, &dl,
                                                 t, dt);
                    }
                } else {
                    const int reg = sregion[p];
                    if (reg >= 0 && regions[reg].hh) {
                        ns_hh_rates q;
                        ns_hh_rates_of(&table, r.usetable, r.q10, vi, &q);
                        m[p] = cnexp_short(m[p], q.minf, q.mtau, dt);
                        h[p] = cnexp_short(h[p], q.hinf, q.htau, dt);
                        gn[p] = cnexp_short(gn[p], q.ninf, q.ntau, dt);
                    }
                }
                double ts;
                if (p == sp && ns_spike_step(r.netcon, r.threshold, tp, v_old, t, vi, &ts)) {
                    const long long j = c0 + c;
                    const int count = g.spike_count[j];
                    if (count < r.spike_cap) g.spike_t[j * r.spike_cap + count] = ts;
                    g.spike_count[j] = count + 1;
                }
            }
        }
#if __CUDA_ARCH__ >= 800
        fault = __reduce_or_sync(0xFFFFFFFFu, fault) & alive;
#else
        // __reduce_or_sync needs sm_80: the same bitwise OR over the warp
        for (int o = 16; o > 0; o >>= 1) fault |= __shfl_xor_sync(0xFFFFFFFFu, fault, o);
        fault &= alive;
#endif
        if (fault) {
            if (lane < nc && (fault >> lane & 1u))
                atomicMin(g.fault, ((unsigned long long)(k + 1) << 24) | (unsigned long long)(c0 + lane));
            alive &= ~fault;
        }
        __syncwarp();
        // recording (cells that faulted this step record nothing, as on the CPU)
        if (step % r.every == 0) {
            double *row = g.traces + (step / r.every - r.first_sample) * r.n_sites;
            for (int c = 0; c < nc; ++c) {
                if (!(alive >> c & 1u)) continue;
                const long long j = c0 + c;
                const double *v = cell_view<kShared>(wbase, cs, n, c, g, j).v;
                for (long long q = g.rec_begin[j] + lane; q < g.rec_begin[j + 1]; q += 32)
                    row[g.rec_site[q]] = v[g.rec_node[q]];
            }
        }
    }
    __syncwarp();
    for (int e = lane; kShared && e < total; e += 32) {
        const int c = e / n, p = e - c * n;
        const double *cell = wbase + c * cs;
        g.v[g0 + e] = cell[p];
        if constexpr (kModel) {  // hh's states to its fields
            const int li = __ldg(local + p).y;
            if (li != NS_SIM_ONCHIP_NONE) {
                const int64_t q = (c0 + c) * M.hh.per_cell + li, f = (NS_FUSED_HH_FIELDS - NS_FUSED_HH_STATES) * M.hh.count;
                M.hh.fields[f + q] = cell[n + p];
                M.hh.fields[f + M.hh.count + q] = cell[2 * n + p];
                M.hh.fields[f + 2 * M.hh.count + q] = cell[3 * n + p];
            }
        } else {
            g.m[g0 + e] = cell[n + p];
            g.h[g0 + e] = cell[2 * n + p];
            g.gn[g0 + e] = cell[3 * n + p];
        }
    }
}

typedef void (*kernel_fn)(ns_onchip_sched, ns_sim_onchip, ns_sim_gpu_group, ns_sim_gpu_run);

// shared: 1, 2, 4, ..., 32 lanes per cell, the hand-written membrane or a
// model's; in device memory: 32 lanes, the hand-written membrane
template <bool kModel>
kernel_fn pick_shared(int lanes) {
    switch (lanes) {
    case 1: return sim_onchip<1, true, kModel>;
    case 2: return sim_onchip<2, true, kModel>;
    case 4: return sim_onchip<4, true, kModel>;
    case 8: return sim_onchip<8, true, kModel>;
    case 16: return sim_onchip<16, true, kModel>;
    case 32: return sim_onchip<32, true, kModel>;
    default: return nullptr;
    }
}

kernel_fn pick(int lanes, bool shared, bool model) {
    if (!shared) return lanes == 32 && !model ? sim_onchip<32, false, false> : nullptr;
    return model ? pick_shared<true>(lanes) : pick_shared<false>(lanes);
}

}  // namespace

extern "C" cudaError_t ns_sim_onchip_setup(int lanes, size_t optin) {
    for (int model = 0; model < 2; ++model) {
        const kernel_fn k = pick(lanes, true, model);
        if (!k) return cudaErrorInvalidValue;
        cudaError_t e = ns_cuda_allow_shared((const void *)k, optin - NS_SIM_ONCHIP_STATIC_BYTES(model));
        if (e == cudaSuccess)
            e = cudaFuncSetAttribute(k, cudaFuncAttributePreferredSharedMemoryCarveout,
                                     (int)cudaSharedmemCarveoutMaxShared);
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}

extern "C" cudaError_t ns_sim_onchip_occupancy(int lanes, int model, int warps, size_t bytes, int *blocks) {
    const kernel_fn k = pick(lanes, true, model);
    if (!k) return cudaErrorInvalidValue;
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, k, warps * NS_ONCHIP_LANES, bytes);
}

extern "C" cudaError_t ns_sim_launch_onchip(const ns_onchip_sched *sched, const ns_sim_onchip *o,
                                            const ns_sim_gpu_group *group, const ns_sim_gpu_run *run,
                                            cudaStream_t stream) {
    if (group->cells <= 0) return cudaSuccess;
    const kernel_fn k = pick(sched->lanes, o->in_shared, o->model);
    if (!k) return cudaErrorInvalidValue;
    const int64_t per_block = (int64_t)o->warps * (NS_ONCHIP_LANES / sched->lanes);
    const long long blocks = (group->cells + per_block - 1) / per_block;
    const size_t smem =
        o->in_shared ? ns_sim_onchip_block_bytes(sched->n, sched->lanes, sched->core, o->const_words, o->warps) : 0;
    k<<<(unsigned)blocks, o->warps * NS_ONCHIP_LANES, smem, stream>>>(*sched, *o, *group, *run);
    return cudaGetLastError();
}
