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
// sim/cpu/step.c, so the assembly is bit-identical to the CPU loop's):
//   A  per node: pas's current into rhs, d (FUSED; per step: rhs and d as
//      the mechanisms' launches left them, sim/cuda/mechanisms.c)
//   B  per cell: the current clamps, in the order they were added; the
//      spike node's old v
//   C  per node: hh's current (FUSED), capacitance, then the axial terms:
//      its own (parent) first, then its children in increasing order
//      (NEURON adds a child's term to the parent row when it reaches the
//      child, i.e. in increasing child order after the parent's own)
//   -  the tree solve (ns_contract_sweeps)
//   D  per node: v += x, the fault check, hh's states (FUSED)
//   S  a step the LFP samples: per node its inflow from its parent (in
//      rhs), per node its membrane current, then per cell the clamps
//      (lfp_sample)
//   E  per cell: spike detection and recording
// A model of built-in density mechanisms runs fused (FUSED, sim/cuda/fused.h):
// the generated per-instance functions of pas in phase A, hh's current in
// phase C and its state in phase D, in NEURON's type order (pas, IClamp,
// hh: the CPU loop's per-node order), over per-node instance maps. With a
// network (NET, sim/cuda/fused.h: built-in ExpSyn and Exp2Syn synapses) the
// launch runs an interval's steps: at the start of each step the step's due
// events (NET_RECEIVE, each instance's in order), phase C2 after C for the
// nodes with synapses (a thread each: the synapses' currents, then hh, the
// capacitance and the axial terms), and in phase E the synapses' states and
// the detectors; the events, spike buffer and detector flags are
// sim/cuda/network.c's (docs/networks.md, "The GPU loop").
#include "core/cuda_check.h"
#include <math.h>
#include <string.h>

#include "sim/cuda/step.h"
#include "sim/cuda/fused.h"
#include "hines/cuda/contract_sweeps.cuh"
#include "sim/cuda/fused_one.cuh"
#include "sim/cuda/lfp_norm.cuh"
#include "mech/builtin/pas.h"
#include "mech/builtin/hh.h"
#include "mech/builtin/ExpSyn.h"
#include "mech/builtin/Exp2Syn.h"

namespace {

// One generated per-instance function (current_one or state_one) of
// instance q at one node (sim/cuda/fused_one.cuh): its parameters and ions'
// e from its tuple (read-only path, shared by many nodes), its states from
// and (when `states`) to its fields, the assigned variables it set to its
// fields in the last step of a launch (LAST).
template <int NF, int NP, int NS, int NIONS, void (*FN)(ns_mech_ppack *, int, int), bool LAST>
__device__ __forceinline__ void fused_one(const ns_sim_fused_mech &m, int2 qs, double *vl, double *rl, double *dl,
                                          bool states, double t, double dt, double celsius) {
    const int32_t q = qs.x;
    ns_fused_call<NF, NP, NS, NIONS, FN, LAST>(m.sets + (int64_t)qs.y * (NP + NIONS), m.fields + (int64_t)(NF - NS) * m.count + q,
                                               m.count, m.fields, m.count, q, m.global, const_cast<double *>(m.table),
                                               vl, rl, dl, states, t, dt, celsius);
}

// One synapse's generated current_one or state_one (instance q of a point
// type, NF fields: NP parameters, assigned, NS states) at group-local node
// `node`: parameters and states from the type's fields, the assigned
// variables UNSET locals as fused_one's; rhs, d and v are the group's
// arrays (the generated current adds to rhs[node] and d[node] with atomics,
// which need shared or device memory: the caller has stored the node's sums
// there). States stored when `states`, the set assigned variables in LAST.
template <int NF, int NP, int NS, void (*FN)(ns_mech_ppack *, int, int), bool LAST>
__device__ __forceinline__ void fused_point(const ns_sim_fused_net &net, int slot, int32_t q, double *v, double *rhs,
                                            double *d, int32_t node, bool states, double t, double dt,
                                            double celsius) {
    const ns_mech_ppack &pp = net.pp[slot];
    double *fields = net.fields[slot];
    const int64_t count = pp.n;
    double F[NF];
    double *fp[NF];
#pragma unroll
    for (int k = 0; k < NF; ++k) {
        const bool assigned = k >= NP && k < NF - NS;
        F[k] = assigned ? __longlong_as_double(NS_FUSED_UNSET) : fields[(int64_t)k * count + q];
        fp[k] = &F[k];
    }
    ns_mech_ppack p = ns_fused_ppack(v, rhs, d, pp.weight + q, fp, pp.global, pp.table, nullptr, t, dt, celsius);
    FN(&p, 0, node);
#pragma unroll
    for (int k = NP; k < NF; ++k) {
        const bool assigned = k < NF - NS;
        if (assigned ? LAST && __double_as_longlong(F[k]) != NS_FUSED_UNSET : states) fields[(int64_t)k * count + q] = F[k];
    }
}

// The first index of x[0 .. n) (ascending) not below `key`.
__device__ __forceinline__ int32_t lower_bound32(const int32_t *x, int32_t n, int64_t key) {
    int32_t lo = 0, hi = n;
    while (lo < hi) {
        const int32_t mid = lo + (hi - lo) / 2;
        if (x[mid] < key) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

// The synapses of synapse node k (group-local node i), in order: their
// currents (phase C2; the generated code adds to rhs[i] and d[i]) or their
// states (STATE, phase E: after the step's barrier, v final).
template <bool STATE, bool LAST>
__device__ __forceinline__ void net_snode(const ns_sim_fused_net &net, int32_t k, int32_t i, double *v, double *rhs,
                                          double *d, double t, double dt, double celsius) {
    for (int32_t e = net.snode_begin[k]; e < net.snode_begin[k + 1]; ++e) {
        const int32_t code = net.syn[e], slot = code >> 28, q = code & ((1 << 28) - 1);
        if (net.kind[slot] == NS_FUSED_EXPSYN)
            fused_point<NS_FUSED_EXPSYN_FIELDS, NS_FUSED_EXPSYN_PARAMS, NS_FUSED_EXPSYN_STATES,
                        STATE ? nsm_ExpSyn_state_one : nsm_ExpSyn_current_one, LAST>(net, slot, q, v, rhs, d, i, STATE,
                                                                                     t, dt, celsius);
        else
            fused_point<NS_FUSED_EXP2SYN_FIELDS, NS_FUSED_EXP2SYN_PARAMS, NS_FUSED_EXP2SYN_STATES,
                        STATE ? nsm_Exp2Syn_state_one : nsm_Exp2Syn_current_one, LAST>(net, slot, q, v, rhs, d, i,
                                                                                       STATE, t, dt, celsius);
    }
}

// Interval step j's due events of the group's instances (NEURON's
// deliver_net_events at the start of the step): per type, bucket (j, slot)
// holds them sorted by instance, then time and sequence; the group's
// instances are [inst0[c0], inst0[c1]) (cells in order), found by binary
// search. An instance's events are applied in order by the thread that runs
// its synapse node in phases C2 and E (thread (k - s_lo) % nt of synapse
// node k: the one thread that reads and writes the instance's fields, so
// that no other block of a cluster sees stale values).
__device__ __forceinline__ void net_deliver(const ns_sim_fused_net &net, int64_t j, int32_t c0, int32_t c1,
                                            int32_t s_lo, int32_t tid, int32_t nt, double dt, double celsius) {
    for (int32_t slot = 0; slot < net.slots; ++slot) {
        const int64_t b = j * net.slots + slot;
        int64_t lo = net.offsets[b], hi = net.offsets[b + 1];
        if (lo >= hi) continue;
        const int32_t i0 = net.inst0[slot][c0], i1 = net.inst0[slot][c1];
        if (i0 >= i1) continue;
        int64_t a = lo, z = hi;  // the first event of an instance >= i0
        while (a < z) {
            const int64_t mid = a + (z - a) / 2;
            if (net.events[mid].instance < i0) a = mid + 1;
            else z = mid;
        }
        lo = a;
        z = hi;  // the first event of an instance >= i1
        while (a < z) {
            const int64_t mid = a + (z - a) / 2;
            if (net.events[mid].instance < i1) a = mid + 1;
            else z = mid;
        }
        hi = a;
        for (int64_t e = lo; e < hi; ++e) {
            const int32_t q = net.events[e].instance;
            if (e > lo && net.events[e - 1].instance == q) continue;
            if ((net.snode_of[slot][q] - s_lo) % nt != tid) continue;
            ns_mech_ppack p = net.pp[slot];
            p.dt = dt;
            p.celsius = celsius;
            const int32_t node = p.node_index[q];
            for (int64_t k = e; k < hi && net.events[k].instance == q; ++k) {
                p.t = net.events[k].t;
                double w = net.events[k].weight; /* the weight vector of one */
                if (net.kind[slot] == NS_FUSED_EXPSYN) nsm_ExpSyn_net_receive_one(&p, q, node, &w, 0.0);
                else nsm_Exp2Syn_net_receive_one(&p, q, node, &w, 0.0);
            }
        }
    }
}

// pas's current at `node` (phase A): rhs and d from 0, as the CPU loop's.
__device__ __forceinline__ void fused_before_clamp(const ns_sim_fused &f, int64_t node, double vi, double &ri,
                                                   double &di, bool last, double t, double dt) {
    const int2 q = f.pas.inst ? __ldg(reinterpret_cast<const int2 *>(f.pas.inst) + node) : make_int2(-1, 0);
    if (q.x < 0) return;
    if (last)
        fused_one<NS_FUSED_PAS_FIELDS, NS_FUSED_PAS_PARAMS, 0, 0, nsm_pas_current_one, true>(f.pas, q, &vi, &ri,
                                                                                             &di, false, t, dt, f.celsius);
    else
        fused_one<NS_FUSED_PAS_FIELDS, NS_FUSED_PAS_PARAMS, 0, 0, nsm_pas_current_one, false>(
            f.pas, q, &vi, &ri, &di, false, t, dt, f.celsius);
}

// hh's current at `node` (phase C, after the clamps).
__device__ __forceinline__ void fused_after_clamp(const ns_sim_fused &f, int64_t node, double vi, double &ri,
                                                  double &di, bool last, double t, double dt) {
    const int2 q = f.hh.inst ? __ldg(reinterpret_cast<const int2 *>(f.hh.inst) + node) : make_int2(-1, 0);
    if (q.x < 0) return;
    if (last)
        fused_one<NS_FUSED_HH_FIELDS, NS_FUSED_HH_PARAMS, NS_FUSED_HH_STATES, 2, nsm_hh_current_one, true>(
            f.hh, q, &vi, &ri, &di, false, t, dt, f.celsius);
    else
        fused_one<NS_FUSED_HH_FIELDS, NS_FUSED_HH_PARAMS, NS_FUSED_HH_STATES, 2, nsm_hh_current_one, false>(
            f.hh, q, &vi, &ri, &di, false, t, dt, f.celsius);
}

// hh's state at `node` (phase D, v the new one); pas has no STATE (its
// state() is empty).
__device__ __forceinline__ void fused_states(const ns_sim_fused &f, int64_t node, double vi, bool last, double t,
                                             double dt) {
    const int2 q = f.hh.inst ? __ldg(reinterpret_cast<const int2 *>(f.hh.inst) + node) : make_int2(-1, 0);
    if (q.x < 0) return;
    double rl = 0.0, dl = 0.0;
    if (last)
        fused_one<NS_FUSED_HH_FIELDS, NS_FUSED_HH_PARAMS, NS_FUSED_HH_STATES, 2, nsm_hh_state_one, true>(
            f.hh, q, &vi, &rl, &dl, true, t, dt, f.celsius);
    else
        fused_one<NS_FUSED_HH_FIELDS, NS_FUSED_HH_PARAMS, NS_FUSED_HH_STATES, 2, nsm_hh_state_one, false>(
            f.hh, q, &vi, &rl, &dl, true, t, dt, f.celsius);
}

// Node i's assembly (phase C, after the clamps and hh's current): the capacitance (reg: its region,
// -1 without a membrane) and the axial terms added to its ri, di, then rhs, d and the solve's U, W.
template <class Team>
__device__ __forceinline__ void assemble_node(const Team &tm, const ns_sim_tree &t, int32_t i, int reg, double vi,
                                              double ri, double di, const double *v, const double *a,
                                              const double *b, const double *cap, const int32_t *parent,
                                              const int32_t *cb, double *rhs, double *d, double *U, double *W) {
    if (reg >= 0) di = di + cap[i];
    const int32_t pi = parent[i];  // group-local, -1 at a root
    if (pi >= 0) {
        const double dv = tm.ld(v + pi) - vi;
        ri -= b[i] * dv;
        di -= b[i];
    }
    for (int32_t q = cb[i]; q < cb[i + 1]; ++q) {
        const int32_t ch = t.child[q];  // group-local
        const double dv = vi - tm.ld(v + ch);
        ri += a[ch] * dv;
        di -= a[ch];
    }
    rhs[i] = ri;
    d[i] = di;
    U[i] = b[i];
    W[i] = a[i];
}

// Phase E of cell c (its thread): its spike at the soma's crossing (spikes: its count so far) and
// its recorded sites of the step.
template <class Team>
__device__ __forceinline__ void record_cell(const Team &tm, const ns_sim_tree &t, const ns_sim_gpu_group &g,
                                            const ns_sim_gpu_run &r, int32_t c, const double *v, int64_t cell_base,
                                            int64_t step, double tp, double v_old, double tcur, int32_t &spikes) {
    const double v_new = tm.ld(v + cell_base + t.spike_node[c]);
    double ts;
    if (ns_spike_step(r.netcon, r.threshold, tp, v_old, tcur, v_new, &ts)) {
        if (spikes < r.spike_cap) g.spike_t[(int64_t)c * r.spike_cap + spikes] = ts;
        ++spikes;
    }
    if (g.rec_begin[c + 1] > g.rec_begin[c] && step % r.every == 0) {
        double *row = g.traces + (step / r.every - r.first_sample) * r.n_sites;
        for (int64_t q = g.rec_begin[c]; q < g.rec_begin[c + 1]; ++q)
            row[g.rec_site[q]] = tm.ld(v + cell_base + g.rec_node[q]);
    }
}

// The sums of squares of the sampled currents by parts (sim_impl.h's snap_slot): one warp per
// window of NS_SIM_SNAP_WINDOW positions (windows aligned to the positions in all, p0 the first
// of the values x, n of them), the lanes' squares summed in runs of one part (lfp_norm_window;
// a group of one cell: one run per window, so that only its last lane reads its slot). The
// whole team calls it (x outside [0, n): nothing).
template <class Team>
__device__ __forceinline__ void lfp_norm_parts(const Team &tm, const double *x, const int32_t *slot, int64_t p0,
                                               int32_t n, bool one_cell, int32_t tid, int32_t nt, double *norm) {
    const int lane = (int)(threadIdx.x & 31u);
    const int64_t a0 = p0 / NS_SIM_SNAP_WINDOW, a1 = (p0 + n - 1) / NS_SIM_SNAP_WINDOW;
    for (int64_t a = a0 + tid / 32; n > 0 && a <= a1; a += nt / 32) {
        const int64_t i = a * NS_SIM_SNAP_WINDOW + lane - p0;
        const bool in = i >= 0 && i < n;
        const double xi = in ? tm.ld(x + i) : 0.0;
        lfp_norm_window(xi * xi, !in ? -1 : one_cell ? 0 : slot[i], lane, in ? slot + i : nullptr, norm);
    }
}

// The LFP's sample (sim_impl.h's snap) after the step's update, v final in every node of the team:
// each node's membrane current, Kirchhoff's axial inflow at the new v, into its column of the
// sample's row (none without a membrane). Two passes, so that no node waits on a chain of loads
// from memory (its column, then its conductance, then each child's): first each node's inflow
// from its parent, g_i (v_parent - v_i) (snap_g: each position's conductance to its parent), into
// s (the step's rhs, free from phase D's barrier to the next phase A); after a barrier, each
// node's s less its children's s. Then, after a barrier, each cell's thread adds its clamps on at
// the step's midpoint, in the order added (lfp.c's CPU currents, in the same order per node). The
// currents are stored evict-first in L2 (__stcs): only the next reduction reads them, and the
// step's own state stays in L2. With snap_slot, each node's current also goes to q (the solve's
// scratch U, free from the solve to the next phase C; 0 without a membrane), the clamps added
// there too, and after a barrier the parts' sums of squares into norm (lfp_norm_parts).
template <class Team>
__device__ __forceinline__ void lfp_sample(const Team &tm, const ns_sim_tree &t, const ns_sim_gpu_group &g,
                                           double *row, double *norm, int64_t base, int32_t N, const double *v,
                                           double *s, double *q, const int32_t *parent, const int32_t *cb,
                                           int32_t tid, int32_t nt, bool own, int32_t c, int64_t cell_base,
                                           bool one_cell, double tm_half) {
    const int32_t *col = g.snap_col + base;
    const double *gp = g.snap_g + base;
    const bool parts = g.snap_slot != nullptr;
    for (int32_t i = tid; i < N; i += nt) {
        const int32_t pi = parent[i];
        s[i] = pi >= 0 ? gp[i] * (tm.ld(v + pi) - tm.ld(v + i)) : 0.0;
    }
    tm.sync();
    for (int32_t i = tid; i < N; i += nt) {
        const int32_t cc = col[i];
        if (cc < 0) {
            if (parts) q[i] = 0.0;
            continue;
        }
        double im = tm.ld(s + i);
        for (int32_t k = cb[i]; k < cb[i + 1]; ++k) im -= tm.ld(s + t.child[k]);  // group-local
        __stcs(row + cc, im);
        if (parts) q[i] = im;
    }
    tm.sync();  // s read, before the next phase A writes rhs; the currents written, before the clamps
    if (own) {
        for (int64_t k = g.stim_begin[c]; k < g.stim_begin[c + 1]; ++k) {
            const int64_t i = cell_base + g.stim_node[k];
            const int32_t cc = col[i];
            if (cc >= 0 && tm_half < g.stim_del[k] + g.stim_dur[k] && tm_half >= g.stim_del[k]) {
                const double x = tm.ld(row + cc) + g.stim_amp[k];
                row[cc] = x;
                if (parts) q[i] = x;
            }
        }
    }
    if (!parts) return;
    tm.sync();  // q complete (the next phase C writes it after phase A's barrier)
    lfp_norm_parts(tm, q, g.snap_slot + base, g.snap_at + base, N, one_cell, tid, nt, norm);
}

// NET, after the step's update: the synapses' states (after hh's, as the CPU loop; by the threads
// of C2), then the detectors of the group (the per-step path's detect_kernel, after the states).
template <class Team>
__device__ __forceinline__ void net_states_detect(const Team &tm, const ns_sim_fused &fz, int64_t base,
                                                  int32_t s_lo, int32_t s_hi, int32_t det_lo, int32_t det_hi,
                                                  int32_t tid, int32_t nt, bool last, double tcur, double dt,
                                                  double *v, double *rhs, double *d) {
    const ns_sim_fused_net &net = fz.net;
    for (int32_t sk = s_lo + tid; sk < s_hi; sk += nt) {
        const int32_t i = net.snode_node[sk] - (int32_t)base;
        if (last) net_snode<true, true>(net, sk, i, v, rhs, d, tcur, dt, fz.celsius);
        else net_snode<true, false>(net, sk, i, v, rhs, d, tcur, dt, fz.celsius);
    }
    for (int32_t q = det_lo + tid; q < det_hi; q += nt) {
        const int32_t kd = net.det_index[q];
        const ns_gpu_net_out &out = net.out;
        const int a = tm.ld(v + (net.det_node[q] - base)) > out.det_thr[kd];
        if (a && !out.det_above[kd]) {
            const unsigned long long at = atomicAdd(out.count, 1ULL);
            if (at < (unsigned long long)out.cap) out.spikes[at] = ns_net_spike{tcur + out.teps, out.det_source[kd]};
        }
        out.det_above[kd] = (unsigned char)a;
    }
}

// SHARED: d, rhs and the solve's up, down, lo of the group live in shared
// memory (groups that fit; Team = one block); else in device memory (big
// cells; Team = a block, or a cluster of blocks where the GPU has them). In
// a cluster, the per-cell phases run in its first block, and values that
// other blocks wrote are loaded past L1 (Team::ld).
template <bool SHARED, class Team, bool FUSED, bool NET = false>
__global__ void __launch_bounds__(NS_SIM_TREE_THREADS, FUSED ? 2 : 0)
    sim_tree_steps(ns_sim_tree t, ns_contract_dev p, const int32_t *__restrict__ list, int32_t team_blocks,
                   ns_sim_gpu_group g, ns_sim_gpu_run r, ns_sim_fused fz) {
    extern __shared__ double sm[];
    __shared__ unsigned long long bad_block;  // pivot key of this step (sweeps' atomicMin)
    __shared__ int stop_block;                // a cell of the group failed: the group stops
    const Team tm;
    const int32_t slot = blockIdx.x / team_blocks;
    const int32_t grp = list[slot];
    const int32_t tmpl = p.g_tmpl[grp];
    const int32_t N = p.t_nodes[tmpl];
    const int64_t base = p.g_base[grp];
    const int32_t c0 = t.g_cell0[grp], c1 = t.g_cell0[grp + 1];
    // a team of several blocks keeps its flags in device memory
    unsigned long long *bad = team_blocks > 1 ? t.flags + 2 * slot : &bad_block;
    int *stop = team_blocks > 1 ? (int *)(t.flags + 2 * slot + 1) : &stop_block;
    double *v = g.v + base;
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
    const int32_t tid = tm.tid(), nt = tm.size();
    // a replayed graph's step (sim/cuda/step_graph.h): clock->k steps after the captured one
    const int64_t kc = r.clock ? r.clock->k : 0;
    double tcur = r.clock ? r.clock->t : r.t0;
    // thread j of the first block owns cell c0 + j in phases B and E (groups
    // hold at most NS_SIM_TREE_THREADS cells)
    const int32_t c = c0 + (int32_t)threadIdx.x;
    const int own = tm.rank() == 0 && c < c1;
    const int64_t cell_base = own ? t.cell_base[c] - base : 0;
    int32_t spikes = own && (r.continued || kc > 0) ? g.spike_count[c] : 0;
    double v_old = 0.0;
    if (tm.rank() == 0 && threadIdx.x == 0) *stop = 0;
    // NET: the group's detectors [det_lo, det_hi) and synapse nodes [s_lo, s_hi) (both by node)
    int32_t det_lo = 0, det_hi = 0, s_lo = 0, s_hi = 0;
    if (NET) {
        const ns_sim_fused_net &net = fz.net;
        det_lo = lower_bound32(net.det_node, net.n_det, base);
        det_hi = lower_bound32(net.det_node, net.n_det, base + N);
        s_lo = lower_bound32(net.snode_node, net.n_snodes, base);
        s_hi = lower_bound32(net.snode_node, net.n_snodes, base + N);
    }
    for (int64_t k = 0; k < r.steps; ++k) {
        const double tp = tcur;
        const double tm_half = tcur + .5 * dt;
        const bool last = k == r.steps - 1; // FUSED: the assigned variables are stored
        // NET: the step's due events, before any current (read in C2 and E by the same thread)
        if (NET && fz.net.offsets && fz.net.j0 + k < fz.net.len)
            net_deliver(fz.net, fz.net.j0 + k, c0, c1, s_lo, tid, nt, dt, fz.celsius);
        // A: pas (FUSED; per step: the mechanisms' currents, assembled before the launch)
        for (int32_t i = tid; i < N && r.preassembled; i += nt) {
            if (SHARED) {
                rhs[i] = g.rhs[base + i];
                d[i] = g.d[base + i];
            }
        }
        for (int32_t i = tid; i < N && !r.preassembled; i += nt) {
            double ri = 0.0, di = 0.0;
            if (FUSED) fused_before_clamp(fz, base + i, v[i], ri, di, last, tm_half, dt);
            rhs[i] = ri;
            d[i] = di;
        }
        tm.sync();
        // B: clamps, one thread per cell (every thread has read last step's
        // `bad` before A's barrier: reset it here)
        if (tm.rank() == 0 && threadIdx.x == 0) *bad = NS_CONTRACT_PIVOT_NONE;
        if (own) {
            for (int64_t s = g.stim_begin[c]; s < g.stim_begin[c + 1]; ++s) {
                const double i =
                    (tm_half < g.stim_del[s] + g.stim_dur[s] && tm_half >= g.stim_del[s]) ? g.stim_amp[s] : 0.0;
                double *x = rhs + cell_base + g.stim_node[s];
                *x = tm.ld(x) + i * g.stim_scale[s];
            }
            v_old = tm.ld(v + cell_base + t.spike_node[c]);
        }
        tm.sync();
        // C: hh, capacitance, axial
        for (int32_t i = tid; i < N; i += nt) {
            const int reg = region[i];
            double ri = tm.ld(rhs + i), di = d[i];
            const double vi = v[i];
            if (NET && fz.net.syn_flag[base + i]) {  // a synapse node: C2 goes on from here
                rhs[i] = ri, d[i] = di;
                continue;
            }
            if (FUSED) fused_after_clamp(fz, base + i, vi, ri, di, last, tm_half, dt);
            assemble_node(tm, t, i, reg, vi, ri, di, v, a, b, cap, parent, cb, rhs, d, U, W);
        }
        // C2 (NET): the synapse nodes, a thread each (all lanes busy: the
        // synapses are few and spread over the nodes): the synapses'
        // currents in type and instance order (after IClamp, before hh:
        // NEURON's type order), then hh, the capacitance and the axial terms
        // as in C: every node's sums in the CPU loop's order
        if (NET) {
            tm.sync();
            for (int32_t sk = s_lo + tid; sk < s_hi; sk += nt) {
                const int32_t i = fz.net.snode_node[sk] - (int32_t)base;
                if (last) net_snode<false, true>(fz.net, sk, i, v, rhs, d, tm_half, dt, fz.celsius);
                else net_snode<false, false>(fz.net, sk, i, v, rhs, d, tm_half, dt, fz.celsius);
                double ri = SHARED ? rhs[i] : __ldcg(rhs + i), di = SHARED ? d[i] : __ldcg(d + i);
                const double vi = v[i];
                fused_after_clamp(fz, base + i, vi, ri, di, last, tm_half, dt);
                assemble_node(tm, t, i, region[i], vi, ri, di, v, a, b, cap, parent, cb, rhs, d, U, W);
            }
        }
        // the solve (starts and ends with a barrier); a big cell's last
        // rounds on a copy in shared memory
        ns_contract_sweeps(tm, p, tmpl, d, rhs, U, W, Lo, 0, bad, SHARED ? nullptr : sm);
        tcur = tm_half + .5 * dt;
        const int64_t step = r.step0 + kc + k + 1;
        const unsigned long long key_now = *(volatile unsigned long long *)bad;
        const int check = key_now != NS_CONTRACT_PIVOT_NONE || (step % r.check) == 0 || k == r.steps - 1;
        // D: v, the fault check, hh's states
        for (int32_t i = tid; i < N; i += nt) {
            const double vi = v[i] + tm.ld(rhs + i);
            v[i] = vi;
            if (check && !isfinite(vi)) *(volatile int *)stop = 1;
            if (FUSED) fused_states(fz, base + i, vi, last, tm_half + .5 * dt, dt);
        }
        tm.sync();
        const unsigned long long key = *(volatile unsigned long long *)bad;
        if (*(volatile int *)stop || key != NS_CONTRACT_PIVOT_NONE) {  // the same decision in every thread
            // the failed cells: non-finite v, or the cell of the bad pivot
            if (own) {
                const int64_t cb1 = t.cell_base[c + 1] - base;
                const int64_t node = (int64_t)(key & ((1ULL << 40) - 1));
                int fault = key != NS_CONTRACT_PIVOT_NONE && node >= cell_base && node < cb1;
                for (int64_t i = cell_base; i < cb1 && !fault; ++i) fault = !isfinite(tm.ld(v + i));
                if (fault) atomicMin(g.fault, ((unsigned long long)(r.k0 + kc + k + 1) << 24) | (unsigned long long)c);
            }
            break;
        }
        // the LFP's sample (sim_impl.h), the same decision in every thread
        if (g.snap && step % r.snap_every == 0)
            lfp_sample(tm, t, g, g.snap + (step / r.snap_every - r.snap_first) * r.snap_ld,
                       g.snap + r.snap_norm_at + (step / r.snap_every - r.snap_first) * r.snap_norm_ld, base, N, v,
                       rhs, U, parent, cb, tid, nt, own, c, cell_base, c1 - c0 == 1, tm_half);
        // E: spikes and recording, one thread per cell
        if (own) record_cell(tm, t, g, r, c, v, cell_base, step, tp, v_old, tcur, spikes);
        // NET: the synapses' states, then the detectors
        if (NET) net_states_detect(tm, fz, base, s_lo, s_hi, det_lo, det_hi, tid, nt, last, tcur, dt, v, rhs, d);
        // the next step's phase A writes rhs and d, which E does not read
    }
    if (own) g.spike_count[c] = spikes;
}

}  // namespace

namespace {

template <bool FUSED, bool NET>
cudaError_t tree_setup(size_t shared_bytes) {
    cudaError_t e =
        ns_cuda_allow_shared((const void *)sim_tree_steps<true, ns_block_team, FUSED, NET>, shared_bytes);
    if (e == cudaSuccess)
        e = ns_cuda_allow_shared((const void *)sim_tree_steps<false, ns_block_team, FUSED, NET>, shared_bytes);
    if (e == cudaSuccess)
        e = ns_cuda_allow_shared((const void *)sim_tree_steps<false, ns_cluster_team, FUSED, NET>, shared_bytes);
    return e;
}

template <bool FUSED, bool NET>
cudaError_t launch_tree(const ns_sim_tree *tree, const ns_contract_dev *layout, const ns_sim_gpu_group *group,
                        const ns_sim_gpu_run *run, const ns_sim_fused &fz, const cudaStream_t streams[3]) {
    // small groups, single medium cells (shared memory), big cells (device
    // memory, a cluster of blocks each where the GPU has clusters): three
    // launches side by side
    if (layout->n_large > 0) return cudaErrorInvalidValue; /* the simulation's layout has no large class */
    if (layout->n_small > 0)
        sim_tree_steps<true, ns_block_team, FUSED, NET>
            <<<(unsigned)layout->n_small, NS_SIM_TREE_THREADS, ns_contract_shared_bytes(layout->max_small_nodes),
               streams[0]>>>(*tree, *layout, layout->small, 1, *group, *run, fz);
    if (layout->n_medium > 0)
        sim_tree_steps<true, ns_block_team, FUSED, NET>
            <<<(unsigned)layout->n_medium, NS_SIM_TREE_THREADS, ns_contract_shared_bytes(layout->max_medium_nodes),
               streams[1]>>>(*tree, *layout, layout->medium, 1, *group, *run, fz);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess || layout->n_big == 0) return e;
    const size_t tail = ns_contract_shared_bytes(layout->max_tail_nodes);
    if (layout->cluster <= 1) {
        sim_tree_steps<false, ns_block_team, FUSED, NET><<<(unsigned)layout->n_big, NS_SIM_TREE_THREADS, tail, streams[2]>>>(
            *tree, *layout, layout->big, 1, *group, *run, fz);
        return cudaGetLastError();
    }
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t cfg = ns_contract_cluster_config(layout, NS_SIM_TREE_THREADS, tail, streams[2], &attr);
    return cudaLaunchKernelEx(&cfg, sim_tree_steps<false, ns_cluster_team, FUSED, NET>, *tree, *layout, layout->big,
                              (int32_t)layout->cluster, *group, *run, fz);
}

}  // namespace

extern "C" cudaError_t ns_sim_tree_setup(size_t shared_bytes) {
    cudaError_t e = tree_setup<false, false>(shared_bytes);
    if (e == cudaSuccess) e = tree_setup<true, false>(shared_bytes);
    return e == cudaSuccess ? tree_setup<true, true>(shared_bytes) : e;
}

extern "C" cudaError_t ns_sim_tree_resident(size_t shared_bytes, int *blocks_per_sm) {
    int a = 0, b = 0;
    cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &a, sim_tree_steps<true, ns_block_team, false>, NS_SIM_TREE_THREADS, shared_bytes);
    if (e == cudaSuccess)
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, sim_tree_steps<true, ns_block_team, true>,
                                                          NS_SIM_TREE_THREADS, shared_bytes);
    *blocks_per_sm = a < b ? a : b;
    return e;
}

extern "C" cudaError_t ns_sim_launch_tree(const ns_sim_tree *tree, const ns_contract_dev *layout,
                                          const ns_sim_gpu_group *group, const ns_sim_gpu_run *run,
                                          const cudaStream_t streams[3]) {
    ns_sim_fused none;
    memset(&none, 0, sizeof none);
    return launch_tree<false, false>(tree, layout, group, run, none, streams);
}

extern "C" cudaError_t ns_sim_launch_tree_fused(const ns_sim_tree *tree, const ns_contract_dev *layout,
                                                const ns_sim_gpu_group *group, const ns_sim_gpu_run *run,
                                                const ns_sim_fused *fused, const cudaStream_t streams[3]) {
    if (run->preassembled) return cudaErrorInvalidValue; /* the fused loop assembles its own */
    if (fused->net.slots > 0) return launch_tree<true, true>(tree, layout, group, run, *fused, streams);
    return launch_tree<true, false>(tree, layout, group, run, *fused, streams);
}
