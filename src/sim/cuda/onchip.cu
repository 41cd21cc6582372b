// The on-chip GPU simulation loop (docs/simulation.md, "GPU loops"): a warp
// holds 32 / L cells of one shape, L lanes per cell, and keeps their whole
// state (v and hh's m, h, n) and scratch (d, rhs) in shared memory for every
// step of a launch. Device memory sees the state once per launch (read at the
// start, written at the end), the recorded samples and the spikes; a step is
// arithmetic and shared-memory traffic only. It runs a model of the built-in
// pas and hh (sim/cuda/fused.h, the rule in sim/policy.h); a shape whose image
// does not fit a block runs in the tree loop.
//
// One step, NEURON's order of operations (sim/cpu/step.c):
//   1. per compartment (all 32 lanes over the warp's cells): pas's current,
//      IClamp, hh's current, capacitance, then the axial terms gathered at the
//      node (its own term first, then its children in increasing compartment
//      order: the order in which the CPU loop's scatter adds them);
//   2. the Hines solve by the on-chip schedule (onchip_sweeps.cuh): backward
//      sweep by height storing G = b/d' over d and F = rhs'/d' over rhs,
//      forward sweep x = F - G x_parent over rhs;
//   3. per compartment: v += x, NaN check, hh's states from the new v,
//      spike detection at the spike compartment; then recording.
// Everything is in position order (the schedule's renumbering: each run of
// the tree is a contiguous range); the host converts stimulus, recording and
// spike compartments to positions, and the state to and from this layout.
//
// The mechanisms are their generated per-instance functions, as in the fused
// tree loop (sim/cuda/fused_one.cuh). hh's states sit in shared memory (m, h,
// n per position, loaded from and stored to the mechanism's fields once per
// launch), the parameters and e come from the distinct tuples by the
// position's map in the constants, hh's TABLE is copied to shared memory per
// block and its GLOBALs to registers, and the assigned variables stay in
// registers, stored in the launch's last step (peeled off the step loop).
// The slope of a generated current is the division's double in three
// operations (nsm_slope in the generated header).
#include "core/cuda_check.h"
#include <cuda_runtime.h>
#include <stdint.h>

#include "sim/cuda/step.h"
#include "hines/cuda/onchip_sweeps.cuh"
#include "sim/cuda/fused_one.cuh"
#include "sim/cuda/lfp_norm.cuh"
#include "mech/builtin/builtin.h"
#include "mech/builtin/pas.h"
#include "mech/builtin/hh.h"

namespace {

// One cell's arrays in the warp's shared memory (position order): v, hh's
// states m, h, n, then d and rhs.
struct CellView {
    double *v, *m, *d, *rhs;
};

__device__ __forceinline__ CellView cell_view(double *wbase, int cs, int n, int c) {
    double *v = wbase + c * cs;
    return CellView{v, v + n, v + 4 * n, v + 5 * n};
}

// The model's mechanisms at one position: pas's current (before the
// clamps), hh's current (after them) or hh's states (v the new one), the
// generated functions on locals (sim/cuda/fused_one.cuh); hh's states at
// st[0], st[n], st[2 n] (the cell's m, h, n in shared memory). LAST: the
// assigned variables that the function sets go to the fields.
enum { MODEL_PAS_CURRENT, MODEL_HH_CURRENT, MODEL_HH_STATE };

// A step's kind as a type (the kernel's step is a lambda, instantiated twice for a model).
template <bool B>
struct Last {
    static constexpr bool value = B;
};

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
template <int kWhat, bool LAST>
__device__ __forceinline__ void model_at(const ns_sim_onchip_model &M, long long j, int p, const ushort2 *local,
                                         int tuple, double *st, int n, double *glob, double *tab, double *vl,
                                         double *rl, double *dl, double t, double dt) {
    if constexpr (LAST) {
        const ushort2 li = __ldg(local + p);
        const int32_t q = kWhat == MODEL_PAS_CURRENT ? (int32_t)(j * M.pas.per_cell + li.x)
                                                     : (int32_t)(j * M.hh.per_cell + li.y);
        model_call<kWhat, true>(M, q, tuple, st, n, glob, tab, vl, rl, dl, t, dt);
    } else {
        model_call<kWhat, false>(M, 0, tuple, st, n, glob, tab, vl, rl, dl, t, dt);
    }
}

// The warp's nc cells from device memory into shared memory (LOAD) or back: element e of the range
// is (cell e / n, position e % n): v, and hh's states from and to its fields.
template <bool LOAD>
__device__ __forceinline__ void cells_state(const ns_sim_onchip_model &M, const ns_sim_gpu_group &g,
                                            const ushort2 *local, double *wbase, int cs, int n, long long c0,
                                            int total, int lane) {
    const long long g0 = c0 * n;
    for (int e = lane; e < total; e += 32) {
        const int c = e / n, p = e - c * n;
        double *cell = wbase + c * cs;
        if (LOAD) cell[p] = g.v[g0 + e];
        else g.v[g0 + e] = cell[p];
        const int li = __ldg(local + p).y;
        if (li != NS_SIM_ONCHIP_NONE) {
            const int64_t q = (c0 + c) * M.hh.per_cell + li, f = (NS_FUSED_HH_FIELDS - NS_FUSED_HH_STATES) * M.hh.count;
            if (LOAD) {
                cell[n + p] = M.hh.fields[f + q];
                cell[2 * n + p] = M.hh.fields[f + M.hh.count + q];
                cell[3 * n + p] = M.hh.fields[f + 2 * M.hh.count + q];
            } else {
                M.hh.fields[f + q] = cell[n + p];
                M.hh.fields[f + M.hh.count + q] = cell[2 * n + p];
                M.hh.fields[f + 2 * M.hh.count + q] = cell[3 * n + p];
            }
        }
    }
}

// Phase 3 of a step over the warp's live cells: v += x, the NaN check (`fault` with the faulted
// cells' bits added, returned), hh's states, the spike at position sp.
template <bool LAST>
__device__ __forceinline__ unsigned update_cells(const ns_sim_onchip_model &M, const ns_sim_gpu_group &g,
                                                 const ns_sim_gpu_run &r, double *wbase, int cs, int n, int nc,
                                                 long long c0, unsigned alive, int lane, const ushort2 *smap,
                                                 const ushort2 *local, double *mglob, double *mtab, double tp,
                                                 double t, double dt, int sp, bool check, unsigned fault) {
    for (int c = 0; c < nc; ++c) {
        if (!(alive >> c & 1u)) continue;
        const CellView cv = cell_view(wbase, cs, n, c);
        double *const v = cv.v, *const m = cv.m;
        const double *const x = cv.rhs;
        for (int p = lane; p < n; p += 32) {
            const double v_old = v[p];
            double vi = v_old + x[p];
            v[p] = vi;
            if (check && !isfinite(vi)) fault |= 1u << c;
            const int tuple = smap[p].y;
            if (tuple != NS_SIM_ONCHIP_NONE) {
                double rl = 0.0, dl = 0.0;
                model_at<MODEL_HH_STATE, LAST>(M, c0 + c, p, local, tuple, m + p, n, mglob, mtab, &vi, &rl, &dl, t,
                                               dt);
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
    return fault;
}

// The step's recorded sites (cells that faulted this step record nothing, as on the CPU) and the
// LFP's sample (sim_impl.h) of the warp's live cells: each position's membrane current,
// Kirchhoff's axial inflow at the new v (snap_g: the conductance to the parent) and the clamps
// on at the step's midpoint tm, in the order added, into its column of the sample's row (stored
// evict-first in L2, as in sim/cuda/tree.cu's lfp_sample).
__device__ __forceinline__ void record_cells(const ns_sim_gpu_group &g, const ns_sim_gpu_run &r, double *wbase,
                                             int cs, int n, int nc, long long c0, unsigned alive, int lane,
                                             long long step, const int32_t *spar, const int32_t *schild_begin,
                                             const int32_t *schild, double tm) {
    if (step % r.every == 0) {
        double *row = g.traces + (step / r.every - r.first_sample) * r.n_sites;
        for (int c = 0; c < nc; ++c) {
            if (!(alive >> c & 1u)) continue;
            const long long j = c0 + c;
            const double *v = cell_view(wbase, cs, n, c).v;
            for (long long q = g.rec_begin[j] + lane; q < g.rec_begin[j + 1]; q += 32)
                row[g.rec_site[q]] = v[g.rec_node[q]];
        }
    }
    if (!g.snap || step % r.snap_every != 0) return;
    const long long k = step / r.snap_every - r.snap_first;
    double *row = g.snap + k * r.snap_ld, *norm = g.snap + r.snap_norm_at + k * r.snap_norm_ld;
    for (int c = 0; c < nc; ++c) {
        if (!(alive >> c & 1u)) continue;
        const long long j = c0 + c, p0 = g.snap_at + j * n;  // the cell's first position in all
        const double *v = cell_view(wbase, cs, n, c).v;
        const int32_t *col = g.snap_col + j * n;
        const double *gp = g.snap_g + j * n;
        // the warp over windows of positions aligned as sim_impl.h's snap_slot's parts
        for (long long a = p0 / NS_SIM_SNAP_WINDOW; a <= (p0 + n - 1) / NS_SIM_SNAP_WINDOW; ++a) {
            const long long p = a * NS_SIM_SNAP_WINDOW + lane - p0;
            const int32_t cc = p >= 0 && p < n ? col[p] : -1;
            double im = 0.0;
            if (cc >= 0) {
                const double vi = v[p];
                const int par = spar[p];
                im = par >= 0 ? gp[p] * (v[par] - vi) : 0.0;
                for (int q = schild_begin[p]; q < schild_begin[p + 1]; ++q) im -= gp[schild[q]] * (vi - v[schild[q]]);
                for (long long q = g.stim_begin[j]; q < g.stim_begin[j + 1]; ++q)
                    if (g.stim_node[q] == p && tm < g.stim_del[q] + g.stim_dur[q] && tm >= g.stim_del[q])
                        im += g.stim_amp[q];
                __stcs(row + cc, im);
            }
            if (g.snap_slot)  // the window within the cell: one run
                lfp_norm_window(im * im, p >= 0 && p < n ? 0 : -1, lane, p >= 0 && p < n ? g.snap_slot + j * n + p : nullptr,
                                norm);
        }
    }
}

// The cells' images and the shape's constants in shared memory; the
// membrane is the model's pas and hh (above).
template <int L>
__global__ void sim_onchip(ns_onchip_sched s, ns_sim_onchip o, ns_sim_gpu_group g, ns_sim_gpu_run r) {
    constexpr int C = NS_ONCHIP_LANES / L;
    extern __shared__ __align__(16) double smem[];
    __shared__ double mtab[NS_FUSED_HH_TABLE];  // hh's TABLE
    const ns_sim_onchip_model &M = o.mech;
    // hh's GLOBALs in registers (usetable, tested at every call of hh)
    double mglob[NS_FUSED_HH_GLOBALS] = {0.0};
#pragma unroll
    for (int k = 0; k < NS_FUSED_HH_GLOBALS; ++k)
        if (k < M.hh_globals) mglob[k] = __ldg(M.hh_global + k);
    // The schedule's core and the shape's constants, once per block.
    const int core4 = (s.core + 3) / 4;
    {
        int4 *dst = reinterpret_cast<int4 *>(smem);
        const int4 *core = reinterpret_cast<const int4 *>(s.base);
        const int4 *consts = reinterpret_cast<const int4 *>(o.consts);
        for (int k = threadIdx.x; k < core4; k += blockDim.x) dst[k] = __ldg(core + k);
        for (int k = threadIdx.x; k < o.const_words; k += blockDim.x) dst[core4 + k] = __ldg(consts + k);
        if (M.hh.count > 0) {
            for (int k = threadIdx.x; k < NS_FUSED_HH_TABLE; k += blockDim.x) mtab[k] = __ldg(M.hh_table + k);
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

    const int32_t *const sched = reinterpret_cast<const int32_t *>(smem);
    const OnchipTables tables = onchip_tables(s, sched);

    const int n = s.n;
    // Shape constants (ns_sim_onchip_const_bytes layout), position order.
    const double *const sa = reinterpret_cast<const double *>(smem + core4 * 2);
    const double *const sb = sa + n;
    const double *const scap = sb + n;
    // the tuples of pas and hh per position; their instances within the cell (device memory)
    const ushort2 *const smap = reinterpret_cast<const ushort2 *>(scap + n);
    const ushort2 *const local = reinterpret_cast<const ushort2 *>(M.local);
    const int32_t *const spar = reinterpret_cast<const int32_t *>(smap + n);
    const int32_t *const schild_begin = spar + n;
    const int32_t *const schild = schild_begin + n + 1;
    const int8_t *const sregion = reinterpret_cast<const int8_t *>(schild + (n > 1 ? n - 1 : 1));

    const int cs = ns_sim_onchip_cell_doubles(n);
    double *const wbase = smem + (size_t)(core4 + o.const_words) * 2 + (size_t)warp * C * cs;
    // cell c of the warp: cell_view(c) (v, m, h, n, d, rhs at wbase + c * cs + {0, ..., 5} * n)

    // Load the state: v and hh's states.
    const int total = nc * n;
    cells_state<true>(M, g, local, wbase, cs, n, c0, total, lane);
    if (lane < nc) g.spike_count[c0 + lane] = 0;
    __syncwarp();

    const double dt = r.dt;
    const int sp = g.spike_node;          // a position
    unsigned alive = nc == 32 ? 0xFFFFFFFFu : ((1u << nc) - 1u);  // bit c: cell c still runs
    double t = r.t0;
    // one step, k; Last<true>: the last step of the launch, where the
    // assigned variables are stored (peeled off the loop below, so that the
    // other steps carry no code for it)
    auto one_step = [&](const long long k, auto last_tag) {
        [[maybe_unused]] constexpr bool last = decltype(last_tag)::value;
        const double tp = t;
        const double tm = t + .5 * dt;
        // 1. membrane, stimulus, capacitance, axial terms
        for (int c = 0; c < nc; ++c) {
            if (!(alive >> c & 1u)) continue;
            const long long j = c0 + c;
            const CellView cv = cell_view(wbase, cs, n, c);
            const double *const v = cv.v, *const m = cv.m;
            double *const d = cv.d, *const rhs = cv.rhs;
            const long long st0 = g.stim_begin[j], st1 = g.stim_begin[j + 1];
            for (int p = lane; p < n; p += 32) {
                const int reg = sregion[p];
                double vi = v[p];
                double ri = 0.0, di = 0.0;
                const ushort2 mp = smap[p];
                if (mp.x != NS_SIM_ONCHIP_NONE)
                    model_at<MODEL_PAS_CURRENT, last>(M, j, p, local, mp.x, nullptr, n, nullptr, nullptr, &vi, &ri,
                                                      &di, tm, dt);
                for (long long q = st0; q < st1; ++q) {
                    if (g.stim_node[q] != p) continue;
                    const double i = (tm < g.stim_del[q] + g.stim_dur[q] && tm >= g.stim_del[q]) ? g.stim_amp[q] : 0.0;
                    ri += i * g.stim_scale[q];
                }
                if (mp.y != NS_SIM_ONCHIP_NONE)
                    model_at<MODEL_HH_CURRENT, last>(M, j, p, local, mp.y, const_cast<double *>(m + p), n, mglob,
                                                     mtab, &vi, &ri, &di, tm, dt);
                if (reg >= 0) di += scap[p];
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
        const CellView sv = cell_view(wbase, cs, n, mine);  // an absent cell's lanes: its own (unused) slot
        const bool bad = onchip_backward<L>(tables, s.n_bwd, role, sa, sb, sv.d, sv.rhs, nullptr) >= 0;
        onchip_forward<L>(tables, s.n_fwd, role, sv.d, sv.rhs);

        // 3. v += x, NaN check, gates, spikes
        t = tm + .5 * dt;
        const long long step = r.step0 + k + 1;
        const bool check = (step % r.check) == 0 || k == r.steps - 1;
        unsigned fault = bad && mine < nc ? 1u << mine : 0u;
        fault = update_cells<last>(M, g, r, wbase, cs, n, nc, c0, alive, lane, smap, local, mglob, mtab, tp, t, dt, sp,
                                   check, fault);
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
        // recording and the LFP's sample
        record_cells(g, r, wbase, cs, n, nc, c0, alive, lane, step, spar, schild_begin, schild, tm);
    };
    long long k = 0;
    for (; k < r.steps - 1 && alive; ++k) one_step(k, Last<false>{});
    if (k < r.steps && alive) one_step(k, Last<true>{});
    __syncwarp();
    cells_state<false>(M, g, local, wbase, cs, n, c0, total, lane);
}

typedef void (*kernel_fn)(ns_onchip_sched, ns_sim_onchip, ns_sim_gpu_group, ns_sim_gpu_run);

kernel_fn pick(int lanes) { return NS_ONCHIP_PICK(sim_onchip, lanes); }

}  // namespace

extern "C" cudaError_t ns_sim_onchip_setup(int lanes, size_t optin) {
    const kernel_fn k = pick(lanes);
    if (!k) return cudaErrorInvalidValue;
    return ns_cuda_prefer_shared((const void *)k, optin - NS_SIM_ONCHIP_STATIC_BYTES);
}

extern "C" cudaError_t ns_sim_onchip_occupancy(int lanes, int warps, size_t bytes, int *blocks) {
    return ns_onchip_occupancy(pick(lanes), warps, bytes, blocks);
}

extern "C" cudaError_t ns_sim_launch_onchip(const ns_onchip_sched *sched, const ns_sim_onchip *o,
                                            const ns_sim_gpu_group *group, const ns_sim_gpu_run *run,
                                            cudaStream_t stream) {
    if (group->cells <= 0) return cudaSuccess;
    const kernel_fn k = o->in_shared ? pick(sched->lanes) : nullptr;
    if (!k) return cudaErrorInvalidValue;
    const int64_t per_block = (int64_t)o->warps * (NS_ONCHIP_LANES / sched->lanes);
    const long long blocks = (group->cells + per_block - 1) / per_block;
    const size_t smem = ns_sim_onchip_block_bytes(sched->n, sched->lanes, sched->core, o->const_words, o->warps);
    k<<<(unsigned)blocks, o->warps * NS_ONCHIP_LANES, smem, stream>>>(*sched, *o, *group, *run);
    return cudaGetLastError();
}
