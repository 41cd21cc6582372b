/* The CPU loop: cells of one shape side by side in lane blocks.
 *
 * Layout (docs/simulation.md, "CPU loop"). The cells of a shape are grouped
 * into blocks of w = 8, 4, 2 or 1 cells (sim/cpu/policy.h: the widest that does
 * not exceed one thread's share of the work, then the rest of the cells in
 * decreasing powers of two, so that no lane is padding). A block keeps its
 * state interleaved, v[pos(node) * w + lane] (pos: the node order of a
 * shape with short runs, sim/cpu/policy.h ns_cpu_reorder; else the node), so
 * that
 *   - the membrane mechanisms run over runs of nodes of one region as flat
 *     arrays of (end - begin) * w doubles: the compiler vectorises them over
 *     nodes and cells alike (w = 1 included);
 *   - the matrix assembly and the Hines solve visit each node once for all
 *     the block's cells, with w independent lanes at each node.
 * The host array sim->v (Flat layout) is written from the blocks when the
 * state is read (sync_state); the mechanisms' variables stay in the blocks
 * (mech/blocks.c).
 *
 * Threads: one parallel region per ns_sim_advance call; each thread owns a
 * static set of blocks balanced by compartments (sim/cpu/policy.h) and advances
 * each of its blocks through all the steps of the call before the next
 * (blocks are independent: no barrier, no waiting but the end of the call);
 * a thread done with its own blocks takes the blocks other threads have not
 * started (a network's intervals keep to the owners).
 * Never more threads than blocks, except with a cell larger than a thread's
 * share (ns_cpu_split): then the call goes step by step, every thread runs
 * its node range of that cell's blocks (its copies in the widest blocks
 * their count allows) and the Hines solve of the subtrees in it, one thread
 * a block's top (ns_cpu_cut) while the others advance their own blocks by
 * the step (two barriers per step; docs/simulation.md, "A cell split across
 * threads").
 *
 * One step is NEURON's nrn_fixed_step_thread (fadvance.cpp, treeset.cpp),
 * for every cell:
 *
 *   t += dt/2
 *   rhs = 0, d = 0
 *   the model's mechanisms in NEURON's type order (pas, the concentration
 *   writers, IClamp, the synapses, hh, the library's others): each
 *           rhs -= i(v),              d += (i(v + .001) - i(v)) / .001
 *   IClamp: rhs += i(t) * 1e2 / area  (in the order the clamps were added)
 *   d += cm * 1e-3/dt
 *   axial, for every node i with parent p:
 *           rhs[i] -= b[i] (v[p] - v[i]),  rhs[p] += a[i] (v[p] - v[i])
 *           d[i] -= b[i],                  d[p] -= a[i]
 *   Hines solve (triang from the leaves, bksub from the root); v += rhs
 *   t += dt/2
 *   the mechanisms' states from the new v (hh's gates by cnexp)
 *
 * Mechanisms run one after the other over the whole cell, as NEURON runs them
 * (mech/blocks.c: per step, or the built-in pas and hh fused into the
 * loop's passes), so that the sums at each node add in NEURON's order. The axial terms of d do not
 * depend on v: they are added with the capacitance, as one constant per
 * node (diagonal_constant); those of rhs are added by the elimination, node
 * by node from the leaves (eliminate_node). Every lane performs the same
 * floating-point operations in the same order as one cell alone (the file is
 * compiled without contraction into fused multiply-adds, and exp_lanes is
 * elementwise), so the results do not depend on the block a cell lands in,
 * nor on the thread count. */
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef NS_HAVE_OPENMP
#include <omp.h>
#endif
#if defined(__unix__) || defined(__APPLE__)
#include <sched.h>
#define NS_YIELD() sched_yield()
#else
#define NS_YIELD() ((void)0)
#endif

#include "sim/cpu/layout.h"
#include "sim/cpu/policy.h"
#include "sim/cpu/exp_lanes.h"
#include "mech/blocks.h"
#include "sim/network.h"
#include "sim/sim_impl.h"
#include "sim/policy.h"
#include "sim/spike_rule.h"
#include "core/error.h"

/* The run_block_W below: one function per width, so that the lane loops have a constant trip count;
 * on x86-64 Linux with gcc or clang, each compiled for AVX-512, AVX2 and the
 * baseline, chosen at load time by the CPU (function multiversioning; the
 * AVX-512 clone is the faster on the hosts measured, bench/README.md at 01b826c,
 * "The H200 host, 2026-11-28: gcc 13 and the rate table, split blocks"). No
 * FMA contraction in any of them (-ffp-contract=off), so the clones compute
 * the same values. NS_NO_CLONES (with NSM_NO_CLONES for the generated
 * mechanisms) builds one version for the compiler's target instead, for
 * measuring one instruction set on a machine that has a wider one
 * (`-mavx2 -DNS_NO_CLONES -DNSM_NO_CLONES` in CMAKE_C_FLAGS). */
#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(__INTEL_COMPILER) && !defined(NS_NO_CLONES)
#define NS_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#define NS_CLONES_ON 1
#else
#define NS_CLONES
#endif
typedef struct block_fault {
    int64_t step, cell;
    int32_t node;
    double value;
    const ns_mech_error *mech; /* a mechanism's error (sim_fault.mech) */
} block_fault;

/* The block's arrays for one width. */
typedef struct block_view {
    const sim_shape *s;
    const cpu_shape *cs;
    const cpu_block *blk;
    double *v;
    const double *cap;
} block_view;

NS_ALWAYS_INLINE block_view view_of(const ns_sim_t *sim, const cpu_state *st, const cpu_block *blk) {
    block_view bv;
    bv.s = &sim->shapes[blk->shape];
    bv.cs = &st->shapes[blk->shape];
    bv.blk = blk;
    bv.v = blk->v;
    bv.cap = bv.cs->cap[log2w(blk->w)];
    return bv;
}

/* IClamp on nodes [n0, n1): an ELECTRODE_CURRENT in nA, turned into mA/cm^2
 * by 1e2/area; its slope is 0, so d is left alone. */
NS_ALWAYS_INLINE void clamps(const ns_sim_t *sim, const block_view *bv, const int32_t W, int32_t n0, int32_t n1,
                             double tm, double *restrict rhs) {
    for (int32_t j = 0; j < W; ++j) {
        const int64_t c = bv->blk->cell[j];
        for (int64_t q = sim->stim_begin[c]; q < sim->stim_begin[c + 1]; ++q) {
            const sim_stim *stim = &sim->stims[sim->stim_order[q]];
            if (stim->node < n0 || stim->node >= n1) continue;
            const double i = (tm < stim->del + stim->dur && tm >= stim->del) ? stim->amp : 0.0;
            rhs[(int64_t)pos_of(bv->cs->pos, stim->node) * W + j] += i * bv->s->stim_scale[stim->node];
        }
    }
}

/* The membrane pass of a model's mechanisms (mech/blocks.c) at the half step
 * tm: rhs and d from zero, the ions' currents from zero, the mechanisms in
 * NEURON's type order with IClamp after pas (the capacitance: phase_assembly). */
static void model_pass(const ns_sim_t *sim, const block_view *bv, const int32_t W, double tm, double *restrict d,
                       double *restrict rhs) {
    const int64_t nw = (int64_t)bv->s->n * W;
    const sim_model *model = sim->model;
    memset(rhs, 0, (size_t)nw * sizeof *rhs);
    memset(d, 0, (size_t)nw * sizeof *d);
    ns_model_block_zero_ions(model, bv->blk->mech);
    const double dt = sim->params.dt, celsius = sim->params.celsius;
    /* the synapses' types (net.c) merged in by NEURON's type order: every
     * one after IClamp, so after the mechanisms before it */
    net_block *nb = bv->blk->net;
    int32_t slot = 0;
    const int32_t n_points = nb ? nb->n_points : 0;
    for (int32_t k = 0; k < model->n_mechs; ++k) {
        if (k == model->n_before_clamp) clamps(sim, bv, W, 0, bv->s->n, tm, rhs);
        if (k >= model->n_before_clamp)
            for (; slot < n_points && nb->points[slot].key < model->mechs[k].key; ++slot)
                ns_net_current(nb, slot, bv->v, rhs, d, tm, dt, celsius);
        ns_model_block_current(model, bv->blk->mech, k, bv->v, rhs, d, tm, dt, celsius);
    }
    if (model->n_before_clamp == model->n_mechs) clamps(sim, bv, W, 0, bv->s->n, tm, rhs);
    for (; slot < n_points; ++slot) ns_net_current(nb, slot, bv->v, rhs, d, tm, dt, celsius);
}

/* The same pass for a block that takes the fused pass (mech/blocks.c,
 * ns_model_block_fused): rhs and d from zero and pas, the clamps, the
 * synapses (built-in types, all before hh in NEURON's order), hh
 * and the capacitance (phase_assembly's, node by node in the pass), each
 * node's terms in model_pass's and phase_assembly's order. */
static void fused_pass(const ns_sim_t *sim, const block_view *bv, const int32_t W, double tm, double *restrict d,
                       double *restrict rhs, int last) {
    const sim_model *model = sim->model;
    const double dt = sim->params.dt, celsius = sim->params.celsius;
    ns_model_block_fused_first(model, bv->blk->mech, W, bv->v, rhs, d, tm, dt, celsius, last);
    clamps(sim, bv, W, 0, bv->s->n, tm, rhs);
    net_block *nb = bv->blk->net;
    for (int32_t slot = 0; nb && slot < nb->n_points; ++slot) ns_net_current(nb, slot, bv->v, rhs, d, tm, dt, celsius);
    ns_model_block_fused_second(model, bv->blk->mech, W, bv->v, rhs, d, bv->cap, tm, dt, celsius, last);
}

/* The currents and assembly phases (fused_pass) over the nodes [n0, n1) of
 * a block split across the threads (no network there: cpu_steps), and its
 * states phase after the solve: each node gets what the whole-block pass
 * gives it. */
NS_ALWAYS_INLINE void phase_currents_range(const ns_sim_t *sim, const block_view *bv, const int32_t W, int32_t n0,
                                           int32_t n1, double tm, double *restrict d, double *restrict rhs, int last) {
    const double dt = sim->params.dt, celsius = sim->params.celsius;
    model_block *mb = bv->blk->mech;
    ns_model_block_fused_range(sim->model, mb, W, 0, n0, n1, bv->v, rhs, d, NULL, tm, dt, celsius, last);
    clamps(sim, bv, W, n0, n1, tm, rhs);
    ns_model_block_fused_range(sim->model, mb, W, 1, n0, n1, bv->v, rhs, d, bv->cap, tm, dt, celsius, last);
}

NS_ALWAYS_INLINE void phase_states_range(const ns_sim_t *sim, const block_view *bv, const int32_t W, int32_t n0,
                                         int32_t n1, double t, int last) {
    ns_model_block_fused_range(sim->model, bv->blk->mech, W, 2, n0, n1, bv->v, NULL, NULL, NULL, t, sim->params.dt,
                               sim->params.celsius, last);
}

/* The Hines solve with the axial terms of rhs, every lane at once, and
 * v += rhs, node by node. Each node's lane loop computes into locals, then
 * stores: the lanes of a node and of its parent never overlap, but the
 * compiler cannot prove it from the indexes and kept the loops scalar when
 * they stored as they went (scalar divisions in the elimination and in the
 * back substitution; bench/README.md at 01b826c, "The solve's lane loops
 * vectorised"). */
typedef struct solve_view {
    const int32_t *restrict pos;    /* the node order (cpu_shape.pos), or NULL */
    const int32_t *restrict parent; /* the parents' positions */
    const double *restrict a, *restrict b, *restrict v;
    double *restrict d, *restrict rhs;
} solve_view;

NS_ALWAYS_INLINE solve_view solve_of(const block_view *bv, double *d, double *rhs) {
    solve_view sv = {bv->cs->pos, bv->cs->ppar ? bv->cs->ppar : bv->s->parent, bv->s->a, bv->s->b, bv->v, d, rhs};
    return sv;
}

/* A pivot that is zero or not finite: the solve of its lane failed. */
NS_ALWAYS_INLINE int bad_pivot(double piv) { return !(fabs(piv) <= DBL_MAX) | (piv == 0.0); }

/* node i's axial terms on rhs (on itself and on its parent; their part of
 * d is constant, in cap: diagonal_constant), then i eliminated into its
 * parent, in one pass from the leaves. i's children were eliminated before
 * it, so each rhs gets its children's terms in the order of elimination,
 * then its own; every path (whole blocks, streams, split cells) eliminates
 * the children of a node in descending order, so they compute the same
 * values. The pivot's reciprocal replaces it in d: one division per node
 * here, a multiplication in the back substitution (substitute_node). The
 * pivot is final from here on, so the pivots are checked afterwards
 * (solve_lanes, split_front_w, split_top_w; 1/x is zero or not finite
 * where x is), not in the elimination's chain of divisions, where a check
 * per node slowed the elimination (bench/probe/prof.py; bench/README.md at 01b826c,
 * "The machine's ceiling, the solve's pivot check"); the axial pass folded
 * in and the reciprocal are faster again (same file, "The solve in one
 * pass, the rate table as rows"). */
NS_ALWAYS_INLINE void eliminate_at(const solve_view *sv, const int32_t W, int64_t ii, int64_t pi, double ai,
                                   double bi) {
    double x0[NS_CPU_LANES_MAX], x1[NS_CPU_LANES_MAX], x2[NS_CPU_LANES_MAX], x3[NS_CPU_LANES_MAX];
    for (int32_t j = 0; j < W; ++j) {
        const double dv = sv->v[pi + j] - sv->v[ii + j];
        const double ri = sv->rhs[ii + j] - bi * dv;
        const double inv = 1.0 / sv->d[ii + j];
        const double f = ai * inv;
        x0[j] = ri;
        x1[j] = inv;
        x2[j] = sv->d[pi + j] - f * bi;
        x3[j] = (sv->rhs[pi + j] + ai * dv) - f * ri;
    }
    for (int32_t j = 0; j < W; ++j) sv->rhs[ii + j] = x0[j];
    for (int32_t j = 0; j < W; ++j) sv->d[ii + j] = x1[j];
    for (int32_t j = 0; j < W; ++j) sv->d[pi + j] = x2[j];
    for (int32_t j = 0; j < W; ++j) sv->rhs[pi + j] = x3[j];
}

NS_ALWAYS_INLINE void eliminate_node(const solve_view *sv, const int32_t W, int32_t i) {
    eliminate_at(sv, W, (int64_t)pos_of(sv->pos, i) * W, (int64_t)sv->parent[i] * W, sv->a[i], sv->b[i]);
}

/* Whether any pivot of d[q0 .. q1) is bad (a loop that vectorises). */
NS_ALWAYS_INLINE int any_bad_pivot(const double *restrict d, int64_t q0, int64_t q1) {
    int bad = 0;
    for (int64_t q = q0; q < q1; ++q) bad |= bad_pivot(d[q]);
    return bad;
}

NS_ALWAYS_INLINE int solve_root(const solve_view *sv, const int32_t W) {
    const int64_t r = (int64_t)pos_of(sv->pos, 0) * W;
    int bad = 0;
    for (int32_t j = 0; j < W; ++j) {
        bad |= bad_pivot(sv->d[r + j]);
        sv->rhs[r + j] /= sv->d[r + j];
    }
    return bad;
}

NS_ALWAYS_INLINE void substitute_at(const solve_view *sv, const int32_t W, int64_t ii, int64_t pi, double bi) {
    double x0[NS_CPU_LANES_MAX];
    for (int32_t j = 0; j < W; ++j) x0[j] = (sv->rhs[ii + j] - bi * sv->rhs[pi + j]) * sv->d[ii + j];
    for (int32_t j = 0; j < W; ++j) sv->rhs[ii + j] = x0[j];
}

NS_ALWAYS_INLINE void substitute_node(const solve_view *sv, const int32_t W, int32_t i) {
    substitute_at(sv, W, (int64_t)pos_of(sv->pos, i) * W, (int64_t)sv->parent[i] * W, sv->b[i]);
}

/* The top of a cut (ns_cpu_cut): its nodes and the cut roots eliminated
 * from the last entry (node 0 left to solve_root), then substituted from
 * the first. */
NS_ALWAYS_INLINE void top_eliminate(const solve_view *sv, const int32_t W, const int32_t *restrict top, int32_t nt) {
    for (int32_t e = nt - 1; e >= 0; --e) {
        const int32_t i = top[e] >= 0 ? top[e] : -1 - top[e];
        if (i > 0) eliminate_node(sv, W, i);
    }
}

NS_ALWAYS_INLINE void top_substitute(const solve_view *sv, const int32_t W, const int32_t *restrict top, int32_t nt) {
    for (int32_t e = 0; e < nt; ++e) {
        const int32_t i = top[e] >= 0 ? top[e] : -1 - top[e];
        if (i > 0) substitute_node(sv, W, i);
    }
}

/* The whole solve of a block; the spike node's old v into v_old. Returns
 * nonzero when a pivot was zero or not finite (looked for afterwards, in
 * the pass of v += rhs). A block of at most SOLVE_STREAMS_W_MAX lanes
 * eliminates its cut subtrees as SOLVE_STREAMS interleaved streams, then
 * its top, and substitutes back in the reverse order; wider blocks node by
 * node from the last. */
NS_ALWAYS_INLINE int solve_lanes(const block_view *bv, const int32_t W, double *restrict d, double *restrict rhs,
                                 double *v_old) {
    const int32_t n = bv->s->n;
    const cpu_shape *cs = bv->cs;
    const solve_view sv = solve_of(bv, d, rhs);
    if (W <= SOLVE_STREAMS_W_MAX) {
        const solve_entry *restrict order = cs->order;
        for (int32_t k = 0; k < cs->n_order; ++k)
            if (order[k].at >= 0)
                eliminate_at(&sv, W, (int64_t)order[k].at * W, (int64_t)order[k].parent * W, order[k].a, order[k].b);
        top_eliminate(&sv, W, cs->top, cs->n_top);
        solve_root(&sv, W);
        top_substitute(&sv, W, cs->top, cs->n_top);
        for (int32_t k = cs->n_order - 1; k >= 0; --k)
            if (order[k].at >= 0)
                substitute_at(&sv, W, (int64_t)order[k].at * W, (int64_t)order[k].parent * W, order[k].b);
    } else {
        for (int32_t i = n - 1; i >= 1; --i) eliminate_node(&sv, W, i);
        solve_root(&sv, W);
        for (int32_t i = 1; i < n; ++i) substitute_node(&sv, W, i);
    }
    const int64_t sp = (int64_t)pos_of(bv->cs->pos, bv->s->spike_node) * W, nw = (int64_t)n * W;
    double *restrict v = bv->v;
    for (int32_t j = 0; j < W; ++j) v_old[j] = v[sp + j];
    int bad = 0;
    for (int64_t q = 0; q < nw; ++q) {
        v[q] += rhs[q];
        bad |= bad_pivot(d[q]);
    }
    return bad;
}

/* The first bad pivot of each lane, from the leaves as the solve meets
 * them (a pivot is final once its node is eliminated); the lowest cell of
 * the block with one. Returns 1 when one was found (fault filled in). */
NS_ALWAYS_INLINE int bad_fault(const block_view *bv, const int32_t W, int64_t step, const double *d,
                               block_fault *fault) {
    const int32_t n = bv->s->n;
    for (int32_t j = 0; j < W; ++j)
        for (int32_t i = n - 1; i >= 0; --i) {
            const double piv = d[(int64_t)pos_of(bv->cs->pos, i) * W + j];
            if (piv == 0.0 || !isfinite(piv)) {
                if (bv->blk->cell[j] < fault->cell || fault->step != step) {
                    fault->step = step;
                    fault->cell = bv->blk->cell[j];
                    fault->node = i;
                    fault->value = NAN;
                }
                break;
            }
        }
    return fault->step == step;
}

/* The first non-finite v of each lane; the lowest cell of the block with
 * one (fault filled in, returns 1), else 0. */
NS_ALWAYS_INLINE int nonfinite_fault(const block_view *bv, const int32_t W, int64_t step, block_fault *fault) {
    const int32_t n = bv->s->n;
    int found = 0;
    for (int32_t j = 0; j < W; ++j)
        for (int32_t i = 0; i < n; ++i) {
            const double x = bv->v[(int64_t)pos_of(bv->cs->pos, i) * W + j];
            if (!isfinite(x)) {
                if (fault->step != step || bv->blk->cell[j] < fault->cell) {
                    fault->step = step;
                    fault->cell = bv->blk->cell[j];
                    fault->node = i;
                    fault->value = x;
                }
                found = 1;
                break;
            }
        }
    return found;
}

/* Whether x[q0 .. q1) are all finite (a loop that vectorises). */
NS_ALWAYS_INLINE int all_finite(const double *restrict x, int64_t q0, int64_t q1) {
    int finite = 1;
    for (int64_t q = q0; q < q1; ++q) finite &= fabs(x[q]) <= DBL_MAX;
    return finite;
}

/* Whether step `step` (the `k`-th of `steps`) checks v for NaN/Inf. */
NS_ALWAYS_INLINE int check_step(const ns_sim_t *sim, int64_t step, int64_t k, int64_t steps) {
    return (step % sim->options.check_every) == 0 || k == steps - 1;
}

/* After the solve of step `step` (the `k`-th of `steps`): the faults (a bad
 * pivot, or a non-finite v at a check step or the call's last step).
 * Returns 1 on a fault (filled in), else 0. */
NS_ALWAYS_INLINE int faults(const ns_sim_t *sim, const block_view *bv, const int32_t W, int bad, int64_t step,
                            int64_t k, int64_t steps, const double *d, block_fault *fault) {
    if (bad && bad_fault(bv, W, step, d, fault)) return 1;
    if (check_step(sim, step, k, steps) && !all_finite(bv->v, 0, (int64_t)bv->s->n * W))
        return nonfinite_fault(bv, W, step, fault);
    return 0;
}

/* The cells' spikes: threshold crossings at the spike node by the
 * parameters' rule (spike_rule.h), into the detection phase's output
 * (sim->spikes). Returns -1 when a spike could not be stored. */
NS_ALWAYS_INLINE int spike_crossings(ns_sim_t *sim, const block_view *bv, const int32_t W, const double *v_old,
                                     double tp, double t) {
    const double thr = sim->params.spike_threshold;
    const int netcon = sim->params.netcon_spikes;
    const int64_t sp = (int64_t)pos_of(bv->cs->pos, bv->s->spike_node) * W;
    for (int32_t j = 0; j < W; ++j) {
        double tc;
        if (ns_spike_step(netcon, thr, tp, v_old[j], t, bv->v[sp + j], &tc) &&
            ns_spike_out_push(&sim->spikes, bv->blk->cell[j], tc) != 0)
            return -1;
    }
    return 0;
}

/* The recording phase: the recorded sites at nodes [n0, n1) at step `step`. */
NS_ALWAYS_INLINE void phase_recording(ns_sim_t *sim, const block_view *bv, const int32_t W, int64_t step, int32_t n0,
                              int32_t n1) {
    const int64_t every = sim->options.record_every;
    if (step % every != 0 || sim->n_recs == 0) return;
    double *row = sim->traces + (size_t)(step / every) * (size_t)sim->n_recs;
    for (int32_t j = 0; j < W; ++j) {
        const int64_t c = bv->blk->cell[j];
        for (int64_t q = sim->rec_begin[c]; q < sim->rec_begin[c + 1]; ++q) {
            const int32_t site = sim->rec_order[q], node = sim->recs[site].node;
            if (node >= n0 && node < n1) row[site] = bv->v[(int64_t)pos_of(bv->cs->pos, node) * W + j];
        }
    }
}

/* The BEFORE/AFTER blocks h and then h2 (-1: none) of the block's mechanisms and point
 * processes at time t (NEURON's nrn_ba) */
static void hooks(const ns_sim_t *sim, const cpu_block *blk, double *v, int h, int h2, double t) {
    for (int q = 0; q < 2 && h >= 0; ++q, h = h2) {
        ns_model_block_hook(sim->model, blk->mech, h, v, t, sim->params.dt, sim->params.celsius);
        if (blk->net) ns_net_hook(blk->net, h, v, t, sim->params.dt, sim->params.celsius);
    }
}

/* The step's phases (sim/step_phases.h) on one lane block of W lanes; t is
 * the time at the step's start, tm its midpoint, `last` whether it is the
 * call's last step (the fused pass keeps its state then). */

/* events: NEURON's deliver_net_events at the start of the step */
NS_ALWAYS_INLINE void phase_events(const ns_sim_t *sim, const cpu_block *blk, double *v, double t) {
    if (blk->net) ns_net_deliver(blk->net, v, t, sim->params.dt, sim->params.celsius);
}

/* currents: the BEFORE BREAKPOINT blocks, then the membrane pass (with the
 * fused pass, the assembly's capacitance too) */
NS_ALWAYS_INLINE void phase_currents(const ns_sim_t *sim, const block_view *bv, const int32_t W, int fused, double tm,
                                     double *restrict d, double *restrict rhs, int last) {
    if (fused) {
        fused_pass(sim, bv, W, tm, d, rhs, last);
        return;
    }
    if (sim->model) hooks(sim, bv->blk, bv->v, NS_MECH_BEFORE_BREAKPOINT, -1, tm);
    model_pass(sim, bv, W, tm, d, rhs);
}

/* assembly: the capacitance and the axial terms of d (one constant per
 * node: diagonal_constant; the fused pass added it node by node); the axial
 * terms of rhs are added by the solve's elimination (eliminate_at) */
NS_ALWAYS_INLINE void phase_assembly(const block_view *bv, const int32_t W, int fused, double *restrict d) {
    if (fused) return;
    const int64_t nw = (int64_t)bv->s->n * W;
    const double *restrict cap = bv->cap;
    for (int64_t q = 0; q < nw; ++q) d[q] += cap[q];
}

/* solve: the Hines solve and v += x (the spike node's old v into v_old),
 * then the faults of step `step` (the k-th of `steps`). Returns 1 on a
 * fault (filled in), else 0. */
NS_ALWAYS_INLINE int phase_solve(const ns_sim_t *sim, const block_view *bv, const int32_t W, double *restrict d,
                                 double *restrict rhs, double *v_old, int64_t step, int64_t k, int64_t steps,
                                 block_fault *fault) {
    const int bad = solve_lanes(bv, W, d, rhs, v_old);
    return faults(sim, bv, W, bad, step, k, steps, d, fault);
}

/* states: the mechanisms' and synapses' states from the new v at t (the
 * step's end), the AFTER SOLVE and BEFORE STEP blocks, and a mechanism's
 * error (returns 1, fault filled in) */
NS_ALWAYS_INLINE int phase_states(const ns_sim_t *sim, const block_view *bv, const int32_t W, int fused, double t,
                                  int64_t step, int last, block_fault *fault) {
    const cpu_block *blk = bv->blk;
    const double dt = sim->params.dt, celsius = sim->params.celsius;
    if (fused) ns_model_block_fused_states(sim->model, blk->mech, W, bv->v, t, dt, celsius, last);
    else ns_model_block_states(sim->model, blk->mech, bv->v, t, dt, celsius);
    if (blk->net) ns_net_states(blk->net, bv->v, t, dt, celsius);
    if (!fused && blk->mech) ns_ldifus_step(blk->mech, W, bv->v, t, dt, celsius);
    if (!fused) hooks(sim, blk, bv->v, NS_MECH_AFTER_SOLVE, NS_MECH_BEFORE_STEP, t);
    if (blk->mech && ns_model_block_error(blk->mech)->set) { /* a mechanism's C stopped the run */
        *fault = (block_fault){step, blk->cell[0], -1, 0.0, ns_model_block_error(blk->mech)};
        return 1;
    }
    return 0;
}

/* detection: the network's detectors and the cells' spike node at t, from
 * tp (the step's start). Returns -1 when a spike could not be stored. */
NS_ALWAYS_INLINE int phase_detection(ns_sim_t *sim, const block_view *bv, const int32_t W, const double *v_old,
                                     double tp, double t) {
    if (bv->blk->net && ns_net_detect(bv->blk->net, bv->v, t) != 0) return -1;
    return spike_crossings(sim, bv, W, v_old, tp, t);
}

/* Advance block `blk` (of W lanes) through steps k0 <= k < k1 of a call of
 * `steps` steps from step count `step0`, phase by phase; t0 is the time at
 * step k0. d and rhs are scratch of at least n * W. Returns 0, or 1 on a
 * fault (filled in), or -1 when a spike could not be stored. */
NS_ALWAYS_INLINE int run_block(ns_sim_t *sim, const cpu_state *st, const cpu_block *blk, const int32_t W,
                               int64_t step0, int64_t k0, int64_t k1, int64_t steps, double t0,
                               double *restrict d, double *restrict rhs, block_fault *fault) {
    const block_view bv = view_of(sim, st, blk);
    const int32_t n = bv.s->n;
    const double dt = sim->params.dt;
    const int fused = sim->gpu_mechanisms == NS_SIM_GPU_MECHANISMS_FUSED;
    double t = t0;
    for (int64_t k = k0; k < k1; ++k) {
        const double tp = t, tm = ns_sim_half_step(t, dt);
        const int64_t step = step0 + k + 1;
        const int last = k == steps - 1;
        double v_old[NS_CPU_LANES_MAX];
        phase_events(sim, blk, bv.v, t);
        phase_currents(sim, &bv, W, fused, tm, d, rhs, last);
        phase_assembly(&bv, W, fused, d);
        if (phase_solve(sim, &bv, W, d, rhs, v_old, step, k, steps, fault)) return 1;
        t = ns_sim_half_step(tm, dt);
        if (phase_states(sim, &bv, W, fused, t, step, last, fault)) return 1;
        if (phase_detection(sim, &bv, W, v_old, tp, t) != 0) return -1;
        phase_recording(sim, &bv, W, step, 0, n);
    }
    return 0;
}

#define NS_RUN_W(W)                                                                                      \
    NS_CLONES static int run_block_##W(ns_sim_t *sim, const cpu_state *st, const cpu_block *blk, int64_t step0,   \
                                       int64_t k0, int64_t k1, int64_t steps, double t0, double *d, double *rhs, \
                                       block_fault *fault) {                                                 \
        return run_block(sim, st, blk, W, step0, k0, k1, steps, t0, d, rhs, fault);                         \
    }
NS_RUN_W(1)
NS_RUN_W(2)
NS_RUN_W(4)
NS_RUN_W(8)
#undef NS_RUN_W

/* The split cells' barrier (two per step): a sense-reversing counter that
 * spins briefly, then yields the core at each look. OpenMP's barrier spins
 * (GOMP: about 300,000 looks) before it sleeps; on a machine with other
 * runnable work that kept the working thread off its core (a loaded
 * 2-core machine ran one split cell several times slower on 2 threads with
 * OMP_WAIT_POLICY=active than with passive or on one thread).
 * A yield costs nothing when nothing else wants the core. The acquire and
 * release orders make each thread's writes before the barrier visible to
 * the others after it. */
typedef struct split_barrier {
    atomic_int count, sense;
} split_barrier;

static void split_wait(split_barrier *b, int *local_sense, int32_t team) {
    const int mine = !*local_sense;
    *local_sense = mine;
    if (atomic_fetch_add_explicit(&b->count, 1, memory_order_acq_rel) == team - 1) {
        atomic_store_explicit(&b->count, 0, memory_order_relaxed);
        atomic_store_explicit(&b->sense, mine, memory_order_release);
        return;
    }
    for (int looks = 0; atomic_load_explicit(&b->sense, memory_order_acquire) != mine; ++looks)
        if (looks >= 64) NS_YIELD();
}

/* The split blocks' parts of one step (sim/cpu/policy.h: ns_cpu_split,
 * ns_cpu_cut). Thread `me` of the team owns the nodes [range[me],
 * range[me + 1]) of each split block and the cut subtrees among them:
 *   front (before the step's first barrier): the membrane pass of its
 *     nodes, then its cut subtrees' elimination (with the axial terms) up to
 *     their roots (a bad pivot sets the block's split_bad);
 *   top (between the barriers; thread s for split block s): the
 *     elimination of the cut roots and of the top's nodes, the root, its
 *     back substitution and v += rhs at its nodes (and the spikes when the
 *     spike node is one), and the faults: the NaN/Inf that the previous step's back parts found
 *     (split_nan; reported with that step, whose v is still in place), or
 *     a bad pivot of this step;
 *   back (after the second barrier): its cut subtrees' back substitution
 *     and v += rhs (the top's thread updated the top's nodes), then its
 *     nodes' NaN/Inf check at check steps (setting split_nan), the gates,
 *     the spikes (at the spike node) and the recordings.
 * Every node gets its terms in the order of the whole-block solve
 * (ns_cpu_cut), and lane by lane the arithmetic of run_block, so the same
 * values whatever the team and the block's width. After a fault the state
 * is undefined (cable.h), and what the faulty step recorded or spiked is
 * dropped by ns_sim_advance, so that the gates and recordings of the step
 * whose NaN is found one step later do not matter. */
NS_ALWAYS_INLINE void split_front_w(const ns_sim_t *sim, const cpu_state *st, const block_view *bv, int64_t q,
                                    const int32_t W, int32_t me, double tm, int last) {
    const ns_cpu_cut *cut = &st->split_cut[q];
    double *d = st->split_d + st->split_at[q], *rhs = st->split_rhs + st->split_at[q];
    phase_currents_range(sim, bv, W, cut->range[me], cut->range[me + 1], tm, d, rhs, last);
    const solve_view sv = solve_of(bv, d, rhs);
    int bad = 0;
    for (int32_t c = cut->cut_first[me]; c < cut->cut_first[me + 1]; ++c) {
        const int32_t r = cut->root[c], e = cut->end[c];
        for (int32_t i = e - 1; i > r; --i) eliminate_node(&sv, W, i);
        bad |= any_bad_pivot(d, (int64_t)(r + 1) * W, (int64_t)e * W);
    }
    if (bad) atomic_store_explicit(&st->split_bad[q], 1, memory_order_relaxed);
}

NS_ALWAYS_INLINE int split_top_w(ns_sim_t *sim, const cpu_state *st, const block_view *bv, int64_t s,
                                 const int32_t W, int64_t step, int solve, double tp, double t,
                                 block_fault *fault) {
    if (atomic_load_explicit(&st->split_nan[s], memory_order_relaxed)) return nonfinite_fault(bv, W, step - 1, fault);
    if (!solve) return 0;
    const ns_cpu_cut *cut = &st->split_cut[s];
    double *d = st->split_d + st->split_at[s], *rhs = st->split_rhs + st->split_at[s];
    const solve_view sv = solve_of(bv, d, rhs);
    const int32_t *top = cut->top, nt = cut->n_top;
    top_eliminate(&sv, W, top, nt);
    int bad = solve_root(&sv, W);
    for (int32_t e = 0; e < nt; ++e) {
        const int64_t q = (int64_t)(top[e] >= 0 ? top[e] : -1 - top[e]) * W;
        bad |= any_bad_pivot(d, q, q + W);
    }
    top_substitute(&sv, W, top, nt);
    bad |= atomic_exchange_explicit(&st->split_bad[s], 0, memory_order_relaxed);
    if (bad && bad_fault(bv, W, step, d, fault)) return 1;
    /* v += rhs at the top's nodes here (the back parts update their cut
     * subtrees only), so that the next step's front (the membrane pass of
     * the top's nodes, other threads) reads their new v with no write to it
     * in flight */
    const int32_t sp = bv->s->spike_node;
    double v_old[NS_CPU_LANES_MAX] = {0};
    int spike_here = 0;
    double *restrict v = bv->v;
    for (int32_t e = 0; e < nt; ++e) {
        const int32_t i = top[e];
        if (i < 0) continue;
        if (i == sp) {
            spike_here = 1;
            for (int32_t j = 0; j < W; ++j) v_old[j] = v[(int64_t)i * W + j];
        }
        for (int32_t j = 0; j < W; ++j) v[(int64_t)i * W + j] += rhs[(int64_t)i * W + j];
    }
    return spike_here && spike_crossings(sim, bv, W, v_old, tp, t) != 0 ? -1 : 0;
}

NS_ALWAYS_INLINE int split_back_w(ns_sim_t *sim, const cpu_state *st, const block_view *bv, int64_t q,
                                  const int32_t W, int32_t me, int64_t step, int check, double tp, double t,
                                  int last) {
    const ns_cpu_cut *cut = &st->split_cut[q];
    double *d = st->split_d + st->split_at[q], *restrict rhs = st->split_rhs + st->split_at[q];
    const solve_view sv = solve_of(bv, d, rhs);
    const int32_t n0 = cut->range[me], n1 = cut->range[me + 1], sp = bv->s->spike_node;
    const int has_spike_node = sp >= n0 && sp < n1 && !st->split_spike_top[q];
    double v_old[NS_CPU_LANES_MAX] = {0};
    double *restrict v = bv->v;
    for (int32_t j = 0; has_spike_node && j < W; ++j) v_old[j] = v[(int64_t)sp * W + j];
    for (int32_t c = cut->cut_first[me]; c < cut->cut_first[me + 1]; ++c) {
        for (int32_t i = cut->root[c] + 1; i < cut->end[c]; ++i) substitute_node(&sv, W, i);
        for (int64_t x = (int64_t)cut->root[c] * W; x < (int64_t)cut->end[c] * W; ++x) v[x] += rhs[x];
    }
    if (check && !all_finite(v, (int64_t)n0 * W, (int64_t)n1 * W))
        atomic_store_explicit(&st->split_nan[q], 1, memory_order_relaxed);
    phase_states_range(sim, bv, W, n0, n1, t, last);
    phase_recording(sim, bv, W, step, n0, n1);
    return has_spike_node ? spike_crossings(sim, bv, W, v_old, tp, t) : 0;
}

#define NS_SPLIT_W(call)              \
    switch (bv.blk->w) {              \
    case 8: call(8); break;           \
    case 4: call(4); break;           \
    case 2: call(2); break;           \
    default: call(1); break;          \
    }

NS_CLONES static void split_front(const ns_sim_t *sim, const cpu_state *st, int32_t me, double tm, int last) {
    for (int64_t q = 0; q < st->n_split; ++q) {
        if (st->split_stopped[q]) continue;
        const block_view bv = view_of(sim, st, &st->blocks[st->split[q]]);
#define NS_FRONT(W) split_front_w(sim, st, &bv, q, W, me, tm, last)
        NS_SPLIT_W(NS_FRONT)
#undef NS_FRONT
    }
}

/* The top of split block s at step `step` (solve = 0: only the NaN/Inf of
 * the step before, after a call's last step). Returns 1 on a fault, -1
 * when a spike could not be stored. */
NS_CLONES static int split_top(ns_sim_t *sim, const cpu_state *st, int64_t s, int64_t step, int solve, double tp,
                               double t, block_fault *fault) {
    const block_view bv = view_of(sim, st, &st->blocks[st->split[s]]);
    int r = 0;
#define NS_TOP(W) r = split_top_w(sim, st, &bv, s, W, step, solve, tp, t, fault)
    NS_SPLIT_W(NS_TOP)
#undef NS_TOP
    return r;
}

/* Returns -1 when a spike could not be stored. */
NS_CLONES static int split_back(ns_sim_t *sim, const cpu_state *st, int32_t me, int64_t step, int check, double tp,
                                double t, int last) {
    int r = 0;
    for (int64_t q = 0; q < st->n_split; ++q) {
        if (st->split_stopped[q]) continue;
        const block_view bv = view_of(sim, st, &st->blocks[st->split[q]]);
#define NS_BACK(W) r |= split_back_w(sim, st, &bv, q, W, me, step, check, tp, t, last)
        NS_SPLIT_W(NS_BACK)
#undef NS_BACK
    }
    return r;
}
#undef NS_SPLIT_W

static int run_one(ns_sim_t *sim, const cpu_state *st, const cpu_block *blk, int64_t step0, int64_t k0, int64_t k1,
                   int64_t steps, double t0, double *d, double *rhs, block_fault *f) {
    switch (blk->w) {
    case 8: return run_block_8(sim, st, blk, step0, k0, k1, steps, t0, d, rhs, f);
    case 4: return run_block_4(sim, st, blk, step0, k0, k1, steps, t0, d, rhs, f);
    case 2: return run_block_2(sim, st, blk, step0, k0, k1, steps, t0, d, rhs, f);
    default: return run_block_1(sim, st, blk, step0, k0, k1, steps, t0, d, rhs, f);
    }
}

static void keep_first(sim_fault *mine, const block_fault *f) {
    if (f->step < mine->step || (f->step == mine->step && f->cell < mine->cell)) {
        mine->step = f->step;
        mine->cell = f->cell;
        mine->node = f->node;
        mine->value = f->value;
        mine->mech = f->mech;
    }
}

/* Block b through all n_steps steps of a call; a fault into mine. Returns 1
 * when a spike could not be stored, else 0. */
static int run_call(ns_sim_t *sim, const cpu_state *st, int64_t b, int64_t step0, int64_t n_steps, double t0,
                    double *d, double *rhs, sim_fault *mine) {
    block_fault f = {INT64_MAX, INT64_MAX, -1, 0.0, NULL};
    const int r = run_one(sim, st, &st->blocks[b], step0, 0, n_steps, n_steps, t0, d, rhs, &f);
    if (r > 0) keep_first(mine, &f);
    return r < 0;
}

/* Advance every block by `steps` steps from sim->steps; or, with a network
 * (loop != NULL), by the intervals of ns_net_loop_next, all in one parallel
 * region: after each interval the threads meet at a barrier, thread 0 (the
 * calling thread) exchanges the interval's spikes and prepares the next
 * interval alone, and a second barrier releases the others (one region and
 * two barriers per interval rather than a region per interval: with a short
 * minimum delay the interval is a step or two; bench/README.md,
 * "Networks"). The blocks compute what they compute in one call per
 * interval, so results do not depend on the thread count. */
static ns_status cpu_steps(ns_sim_t *sim, int64_t steps, net_loop *loop, sim_fault *fault) {
    cpu_state *st = sim->backend_state;
    ns_status path = ns_cpu_mechanisms(sim, st);
    /* the TABLEs current on this thread, before any block runs (the blocks only read them) */
    if (path == NS_OK) path = ns_model_tables_update(sim->model, st->tables, sim->params.celsius);
    if (path != NS_OK) return path;
    /* the split blocks' passes over node ranges (split_pass): the fused built-in pas and hh; with
     * a network on them, or the mechanisms per step (a network's synapse types), each split block
     * runs whole, by the thread that would solve its top, step by step beside the others */
    int split_fused = sim->gpu_mechanisms == NS_SIM_GPU_MECHANISMS_FUSED;
    for (int64_t q = 0; q < st->n_split; ++q) split_fused &= st->blocks[st->split[q]].net == NULL;
    const int32_t threads = st->threads;
    int out_of_memory = 0;
    ns_status net_status = NS_OK;
    int64_t shared_len = steps;
    split_barrier barrier;
    atomic_init(&barrier.count, 0);
    atomic_init(&barrier.sense, 0);
#ifdef NS_HAVE_OPENMP
#pragma omp parallel num_threads(threads) if (threads > 1)
#endif
    {
        int32_t t = 0;
#ifdef NS_HAVE_OPENMP
        t = omp_get_thread_num();
#endif
        double *d = ns_cpu_aligned((size_t)st->max_nw * sizeof *d);
        double *rhs = ns_cpu_aligned((size_t)st->max_nw * sizeof *rhs);
        sim_fault mine = {INT64_MAX, -1, -1, 0.0, NULL};
        const int64_t q0 = st->thread_begin[t], q1 = st->thread_begin[t + 1];
        char *done = st->n_split ? calloc((size_t)(q1 - q0 + 1), 1) : NULL;
        int oom = !d || !rhs || (st->n_split && !done);
        int sense = 0;
        for (;;) {
            if (loop) {
                /* the previous interval's faults and failures, then one thread
                 * between the intervals */
#ifdef NS_HAVE_OPENMP
#pragma omp critical(ns_sim_fault)
#endif
                {
                    if (oom) out_of_memory = 1;
                    if (mine.step < fault->step || (mine.step == fault->step && mine.cell < fault->cell))
                        *fault = mine;
                }
                split_wait(&barrier, &sense, threads);
                if (t == 0) {
                    shared_len = out_of_memory ? 0 : ns_net_loop_next(sim, loop, fault, &net_status);
                    for (int64_t q = 0; q < st->n_split; ++q) st->split_stopped[q] = 0;
                }
                split_wait(&barrier, &sense, threads);
            }
            const int64_t n_steps = shared_len, step0 = sim->steps;
            const double t0 = sim->t;
            if (n_steps <= 0) break;
            if (st->n_split == 0 && !loop) {
                /* each block through all the steps, one after the other: the
                 * thread's own blocks, then those that other threads have not
                 * started yet (from the thread after it on), so that a core
                 * that runs slower (another process on it) holds back the call
                 * by one block at most, not by its whole share */
                for (int32_t k = 0; k < threads && !oom; ++k) {
                    const int32_t u = (t + k) % threads;
                    const int64_t end = st->thread_begin[u + 1];
                    int64_t q;
                    while (!oom && (q = atomic_fetch_add_explicit(&st->next[u].q, 1, memory_order_relaxed)) < end)
                        oom |= run_call(sim, st, st->order[q], step0, n_steps, t0, d, rhs, &mine);
                }
            } else if (st->n_split == 0) {
                /* an interval of a network: the thread's own blocks (taking
                 * others' would move a block's state between cores every
                 * interval, which can be a step) */
                for (int64_t q = q0; q < q1 && !oom; ++q)
                    oom |= run_call(sim, st, st->order[q], step0, n_steps, t0, d, rhs, &mine);
            } else {
                /* step by step (split_front, split_top, split_back): every
                 * thread its nodes and cut subtrees of the split blocks; a
                 * barrier; thread s < n_split the top of split block s, then
                 * every thread its own blocks by the step; a barrier; every
                 * thread its back part. A last barrier, and the NaN/Inf of the
                 * last step. */
                if (done) memset(done, 0, (size_t)(q1 - q0 + 1));
                double tp = t0;
                for (int64_t k = 0; k < n_steps; ++k) {
                    const double tn = ns_sim_half_step(ns_sim_half_step(tp, sim->params.dt), sim->params.dt);
                    const int64_t step = step0 + k + 1;
                    if (split_fused) split_front(sim, st, t, ns_sim_half_step(tp, sim->params.dt), k == n_steps - 1);
                    split_wait(&barrier, &sense, threads);
                    if (t < st->n_split && !st->split_stopped[t]) {
                        block_fault f = {INT64_MAX, INT64_MAX, -1, 0.0, NULL};
                        const int r = split_fused ? split_top(sim, st, t, step, 1, tp, tn, &f)
                                                  : run_one(sim, st, &st->blocks[st->split[t]], step0, k, k + 1,
                                                            n_steps, tp, d, rhs, &f);
                        if (r < 0) oom = 1;
                        if (r > 0) {
                            keep_first(&mine, &f);
                            st->split_stopped[t] = 1;
                        }
                    }
                    for (int64_t q = q0; done && q < q1; ++q) {
                        if (done[q - q0]) continue;
                        block_fault f = {INT64_MAX, INT64_MAX, -1, 0.0, NULL};
                        const int r = run_one(sim, st, &st->blocks[st->order[q]], step0, k, k + 1, n_steps, tp, d,
                                              rhs, &f);
                        if (r < 0) oom = 1;
                        if (r > 0) keep_first(&mine, &f);
                        if (r != 0) done[q - q0] = 1;
                    }
                    split_wait(&barrier, &sense, threads);
                    if (split_fused &&
                        split_back(sim, st, t, step, check_step(sim, step, k, n_steps), tp, tn, k == n_steps - 1) != 0)
                        oom = 1;
                    tp = tn;
                }
                split_wait(&barrier, &sense, threads);
                if (split_fused && t < st->n_split && !st->split_stopped[t]) {
                    block_fault f = {INT64_MAX, INT64_MAX, -1, 0.0, NULL};
                    if (split_top(sim, st, t, step0 + n_steps + 1, 0, tp, tp, &f) > 0) {
                        keep_first(&mine, &f);
                        st->split_stopped[t] = 1;
                    }
                }
            }
            if (!loop) break;
        }
        free(done);
        free(d);
        free(rhs);
        if (!loop) {
#ifdef NS_HAVE_OPENMP
#pragma omp critical(ns_sim_fault)
#endif
            {
                if (oom) out_of_memory = 1;
                if (mine.step < fault->step || (mine.step == fault->step && mine.cell < fault->cell)) *fault = mine;
            }
        }
    }
    if (out_of_memory) return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: scratch or spike storage");
    return net_status;
}

static ns_status cpu_advance(ns_sim_t *sim, int64_t steps, sim_fault *fault) {
    cpu_state *st = sim->backend_state;
    for (int64_t q = 0; q < st->n_split; ++q) {
        st->split_stopped[q] = 0;
        atomic_store(&st->split_bad[q], 0);
        atomic_store(&st->split_nan[q], 0);
    }
    for (int32_t t = 0; t < st->threads; ++t)
        atomic_store_explicit(&st->next[t].q, st->thread_begin[t], memory_order_relaxed);
    return cpu_steps(sim, steps, NULL, fault);
}

static ns_status cpu_advance_net(ns_sim_t *sim, net_loop *loop, sim_fault *fault) {
    return cpu_steps(sim, 0, loop, fault);
}

const sim_ops *ns_sim_cpu_ops(void) {
    /* no read_var / write_var: the host arrays after ns_cpu_sync_state (sim.c) */
    static const sim_ops ops = {"cpu",          ns_cpu_create,     ns_cpu_destroy, ns_cpu_init, cpu_advance,
                                ns_cpu_sync_state, ns_cpu_load_state, NULL,        NULL,     ns_cpu_model_var,
                                cpu_advance_net, ns_cpu_state_parts, ns_cpu_state_part, NULL, ns_cpu_state_field};
    return &ops;
}

