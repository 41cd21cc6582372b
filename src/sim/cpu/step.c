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

#include "sim/cpu/policy.h"
#include "sim/cpu/exp_lanes.h"
#include "mech/blocks.h"
#include "sim/network.h"
#include "sim/sim_impl.h"
#include "sim/policy.h"
#include "sim/spike_rule.h"
#include "core/error.h"

#define ALIGN 64           /* [bytes] block arrays start on a cache line */
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
#define LOG2_LANES_MAX 3   /* widths 1, 2, 4, 8 */

/* A narrow block's elimination and back substitution as independent
 * chains interleaved: the tree cut for SOLVE_STREAMS streams (ns_cpu_cut
 * with as many "threads" and 2 pieces each); stream s eliminates the cut
 * subtrees of range s, one node of each stream in turn, so that the
 * divisions of different subtrees overlap; then the top (docs/simulation.md,
 * "The narrow blocks' solve streams"; blocks of 1 and 2 lanes take them,
 * wider blocks fill the divider with lanes). 4 streams: with the shape's
 * part read as one sequence (solve_entry), the 2-lane solve was faster
 * with 4 than with 8 and the 1-lane one the same (bench/README.md at 01b826c, "The
 * solve in one pass, the rate table as rows"; -DSOLVE_STREAMS=N for another
 * count). */
#ifndef SOLVE_STREAMS
#define SOLVE_STREAMS 4
#endif
#ifndef SOLVE_STREAMS_W_MAX
#define SOLVE_STREAMS_W_MAX 2
#endif

/* A node of a narrow block's solve streams: what its elimination and back
 * substitution read of the shape, in the streams' order (cpu_shape.order),
 * so that the streams read the shape in one sequence. */
typedef struct solve_entry {
    int32_t at, parent; /* the node's position and its parent's (-1: past the stream's end) */
    double a, b;        /* the node's a and b */
} solve_entry;

typedef struct cpu_shape {
    int32_t *pos;  /* the node order (ns_cpu_reorder): node i's position in the block's arrays; NULL:
                      position i */
    int32_t *ppar; /* with pos: pos[parent[i]] (node 0: 0) */
    int32_t n_top, *top;  /* ns_cpu_cut's top entries */
    int32_t n_order;      /* SOLVE_STREAMS x the longest stream */
    solve_entry *order;   /* order[k * SOLVE_STREAMS + s]: stream s's k-th node to eliminate (its cut
                             subtrees' nodes below their roots, each subtree from its last node) */
    double *cap[LOG2_LANES_MAX + 1]; /* cap repeated over w = 1, 2, 4, 8 lanes (those used) */
} cpu_shape;

typedef struct cpu_block {
    int32_t shape, w;
    int32_t split;                  /* 1: one cell run by every thread (split_front, split_top, split_back) */
    int64_t cell[NS_CPU_LANES_MAX]; /* the cells in lane order (ascending) */
    double *v;                      /* n * w, v[pos(node) * w + lane] */
    model_block *mech;              /* the model's mechanisms (sim->model) */
    net_block *net;                 /* its synapses, events and detectors (sim->net's, net.c), else NULL */
} cpu_block;

/* A thread's next block, on a cache line of its own (other threads take
 * from it once their own blocks are done). */
typedef struct cpu_cursor {
    _Alignas(ALIGN) atomic_llong q;
} cpu_cursor;

typedef struct cpu_state {
    int32_t threads;       /* threads that run (<= blocks) */
    int64_t n_blocks;
    cpu_block *blocks;
    int64_t *thread_begin; /* threads + 1 into `order` */
    int64_t *order;        /* blocks, thread by thread, each thread's longest first */
    cpu_cursor *next;      /* per thread: its next block in `order` (taken by any thread, below) */
    int64_t *lane_of;      /* n_cells: block * NS_CPU_LANES_MAX + lane */
    cpu_shape *shapes;
    model_tables *tables;  /* the model's TABLEs, one copy for every block (mech/blocks.h) */
    double *store;         /* the blocks' state */
    int64_t max_nw;        /* largest n * w (scratch per thread) */
    int64_t n_split;       /* blocks run by every thread, one after the other */
    int64_t *split;        /* their indices */
    int64_t *split_at;     /* each one's offset in the shared scratch */
    double *split_d, *split_rhs; /* their shared scratch (d, rhs) */
    int *split_stopped;    /* per split cell: stopped by a fault in this call */
    ns_cpu_cut *split_cut; /* per split block: its subtrees and node ranges per thread */
    atomic_int *split_bad; /* per split block: a bad pivot in a cut subtree this step */
    atomic_int *split_nan; /* per split block: v not finite in a node range at the last step */
    int *split_spike_top;  /* per split block: its spike node is a node of the top */
    int64_t *part_flat;    /* ns_sim_state_part: the Flat index of each block position, block by block
                              (n_comp, made on first use) */
    int64_t *part_base;    /* n_blocks + 1 into part_flat */
} cpu_state;

/* The nodes with a membrane (the mechanisms are inserted at nodes with area
 * only) among reg[0 .. n) (regions in array order, -1: a zero-area node) and
 * their runs (maximal sequences of one region): ns_cpu_reorder's facts. */
static void membrane_runs_of(const int8_t *reg, int32_t n, int64_t *nodes, int64_t *runs) {
    *nodes = *runs = 0;
    for (int32_t i = 0; i < n; ++i) {
        const int m = reg[i] >= 0;
        *nodes += m;
        *runs += m && (i == 0 || reg[i - 1] != reg[i]);
    }
}

/* Node i's position in its block's arrays (cpu_shape.pos). */
static inline int32_t pos_of(const int32_t *pos, int32_t i) { return pos ? pos[i] : i; }

static void *aligned(size_t bytes) {
    const size_t z = (bytes + ALIGN - 1) / ALIGN * ALIGN;
    return aligned_alloc(ALIGN, z ? z : ALIGN);
}

/* Each node's constant part of d: its capacitance (cm 1e-3/dt, 0 at
 * zero-area nodes), then its axial terms in NEURON's index order, its own
 * (-b[i]) and its children's links (-a[c]); neither depends on v, so the
 * membrane passes add it with the capacitance, and the elimination
 * (eliminate_node) does not carry them in its chain of divisions. */
static void diagonal_constant(const sim_shape *s, double *dc) {
    for (int32_t i = 0; i < s->n; ++i) dc[i] = s->cap[i];
    for (int32_t i = 1; i < s->n; ++i) {
        dc[i] -= s->b[i];
        dc[s->parent[i]] -= s->a[i];
    }
}

static int log2w(int32_t w) { return w >= 8 ? 3 : w >= 4 ? 2 : w >= 2 ? 1 : 0; }

static int32_t requested_threads(const ns_sim_t *sim) {
#ifdef NS_HAVE_OPENMP
    if (sim->method == NS_HINES_OPENMP)
        return sim->options.threads > 0 ? sim->options.threads : omp_get_max_threads();
#else
    (void)sim;
#endif
    return 1;
}

static void cpu_destroy(ns_sim_t *sim) {
    cpu_state *st = sim->backend_state;
    if (!st) return;
    if (st->shapes)
        for (int32_t k = 0; k < sim->n_shapes; ++k) {
            free(st->shapes[k].pos);
            free(st->shapes[k].ppar);
            free(st->shapes[k].top);
            free(st->shapes[k].order);
            for (int l = 0; l <= LOG2_LANES_MAX; ++l) free(st->shapes[k].cap[l]);
        }
    free(st->shapes);
    for (int64_t b = 0; st->blocks && b < st->n_blocks; ++b) ns_model_block_free(st->blocks[b].mech);
    ns_model_tables_free(st->tables);
    free(st->blocks);
    free(st->thread_begin);
    free(st->order);
    free(st->next);
    free(st->lane_of);
    free(st->split);
    free(st->split_at);
    free(st->split_stopped);
    for (int64_t q = 0; st->split_cut && q < st->n_split; ++q) ns_cpu_cut_free(&st->split_cut[q]);
    free(st->split_cut);
    free(st->split_bad);
    free(st->split_nan);
    free(st->split_spike_top);
    free(st->split_d);
    free(st->split_rhs);
    free(st->store);
    free(st->part_flat);
    free(st->part_base);
    free(st);
    sim->backend_state = NULL;
}

/* How the loop runs a model's mechanisms: the GPU's rule (sim/policy.h,
 * ns_sim_gpu_mechanisms_rule) over the CPU's facts, fused (mech/blocks.c,
 * ns_model_block_fused_*) or per step; at create, and at each advance with
 * the network's synapse types. */
static ns_status cpu_mechanisms(ns_sim_t *sim, const cpu_state *st) {
    ns_sim_mech_facts f;
    memset(&f, 0, sizeof f);
    f.requested = (int)sim->options.gpu_mechanisms;
    f.builtin_only = ns_model_fusable(sim->model);
    for (int32_t k = 0; k < sim->model->n_mechs; ++k) f.writes_concentration |= sim->model->mechs[k].writes_c != 0;
    f.network_fused = 1;
    for (int64_t b = 0; b < st->n_blocks; ++b) {
        const net_block *nb = st->blocks[b].net;
        f.network |= nb != NULL;
        for (int32_t t = 0; nb && t < nb->n_points; ++t) f.network_fused &= ns_model_point_fusable(nb->points[t].desc);
    }
    return ns_sim_mechanisms_choose(&f, "the CPU loop's fused pass", &sim->gpu_mechanisms);
}

/* A mechanism that is not thread-safe (ns_mech_desc.thread_unsafe, VERBATIM C with static state)
 * runs on one thread: OpenMP's default thread count becomes 1, an explicit request for more is
 * refused, as NEURON's ParallelContext.nthread refuses it (docs/mechanisms.md, "VERBATIM") */
static ns_status thread_unsafe(const ns_sim_t *sim, const ns_mech_desc *d, int32_t threads) {
    if (threads <= 1 || d->abi_version < 5 || !d->thread_unsafe) return NS_OK;
    return ns_fail(NS_ERR_UNSUPPORTED,
                   "%s: mechanism %s is not thread safe, and the simulation asks for %d threads: run it with one "
                   "thread (threads = 1%s)",
                   d->thread_unsafe, d->name, (int)threads,
                   sim->options.threads > 1 ? "" : "; OpenMP's default was more");
}

static ns_status cpu_create(ns_sim_t *sim) {
    cpu_state *st = calloc(1, sizeof *st);
    if (!st) return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: CPU layout");
    sim->backend_state = st;
    const int32_t ns = sim->n_shapes;
    const int64_t nc = sim->n_cells;
    int32_t requested = requested_threads(sim);
    for (int32_t k = 0; sim->model && k < sim->model->n_mechs; ++k) {
        const ns_mech_desc *d = sim->model->mechs[k].desc;
        if (d->abi_version >= 5 && d->thread_unsafe && sim->options.threads <= 0) requested = 1;
        const ns_status e = thread_unsafe(sim, d, requested);
        if (e != NS_OK) return e;
    }
    st->shapes = calloc((size_t)ns, sizeof *st->shapes);
    int64_t *count = calloc((size_t)ns, sizeof *count);
    int32_t *wmax = malloc((size_t)ns * sizeof *wmax);
    st->lane_of = malloc((size_t)nc * sizeof *st->lane_of);
    if (!st->shapes || !count || !wmax || !st->lane_of) goto oom;
    for (int64_t c = 0; c < nc; ++c) count[sim->cell_shape[c]]++;
    /* a cell split across the threads runs the built-in pas and hh fused into the split passes over
     * each thread's node range (ns_model_block_fused_range); other models, and a network, run its
     * block whole on one thread at each step (cpu_steps) */
    const int split_ok = ns_model_fusable(sim->model) && sim->options.gpu_mechanisms != NS_SIM_GPU_MECHANISMS_PER_STEP;
    /* the node order of each shape (ns_cpu_reorder: its membrane nodes
     * region by region, then its zero-area nodes, each in node order) */
    for (int32_t k = 0; k < ns; ++k) {
        const sim_shape *s = &sim->shapes[k];
        cpu_shape *cs = &st->shapes[k];
        int64_t m_nodes, m_runs;
        membrane_runs_of(s->region, s->n, &m_nodes, &m_runs);
        const int split = split_ok && ns_cpu_split(s->n, sim->n_comp, requested);
        if (!split && ns_cpu_reorder(m_nodes, m_runs)) {
            cs->pos = malloc((size_t)s->n * sizeof *cs->pos);
            cs->ppar = malloc((size_t)s->n * sizeof *cs->ppar);
            if (!cs->pos || !cs->ppar) goto oom;
            int32_t next[INT8_MAX + 3] = {0}; /* start of each key: regions, zero-area nodes (-1) as INT8_MAX + 1 */
            for (int32_t i = 0; i < s->n; ++i) next[(s->region[i] < 0 ? INT8_MAX + 1 : s->region[i]) + 1]++;
            for (int r = 1; r <= INT8_MAX + 1; ++r) next[r] += next[r - 1];
            for (int32_t i = 0; i < s->n; ++i) cs->pos[i] = next[s->region[i] < 0 ? INT8_MAX + 1 : s->region[i]]++;
            cs->ppar[0] = 0;
            for (int32_t i = 1; i < s->n; ++i) cs->ppar[i] = cs->pos[s->parent[i]];
        }
    }
    /* blocks: the widest width per shape, then the cells in ascending order */
    for (int32_t k = 0; k < ns; ++k) {
        /* a shape whose cells are split across the threads goes in the
         * widest blocks its count allows: the split passes then vectorise
         * across the lanes, and one solve serves the block's cells (the
         * same chain of divisions, w lanes wide) */
        wmax[k] = split_ok && ns_cpu_split(sim->shapes[k].n, sim->n_comp, requested)
                      ? NS_CPU_LANES_MAX
                      : ns_cpu_lane_width(sim->shapes[k].n, sim->n_comp, requested);
        st->n_blocks += ns_cpu_blocks(count[k], wmax[k], NULL);
    }
    st->blocks = calloc((size_t)st->n_blocks, sizeof *st->blocks);
    if (!st->blocks) goto oom;
    {
        int32_t widths[64];
        int64_t b = 0;
        int64_t *next = calloc((size_t)ns, sizeof *next); /* first block of each shape */
        int64_t *fill = calloc((size_t)st->n_blocks, sizeof *fill);
        if (!next || !fill) {
            free(next);
            free(fill);
            goto oom;
        }
        for (int32_t k = 0; k < ns; ++k) {
            next[k] = b;
            int64_t full = count[k] / wmax[k];
            for (int64_t q = 0; q < full; ++q, ++b) {
                st->blocks[b].shape = k;
                st->blocks[b].w = wmax[k];
            }
            const int64_t rest = ns_cpu_blocks(count[k] - full * wmax[k], wmax[k], widths);
            for (int64_t q = 0; q < rest; ++q, ++b) {
                st->blocks[b].shape = k;
                st->blocks[b].w = widths[q];
            }
        }
        for (int64_t c = 0; c < nc; ++c) {
            const int32_t k = sim->cell_shape[c];
            int64_t q = next[k];
            cpu_block *blk = &st->blocks[q];
            blk->cell[fill[q]] = c;
            st->lane_of[c] = q * NS_CPU_LANES_MAX + fill[q];
            if (++fill[q] == blk->w) next[k]++;
        }
        free(next);
        free(fill);
    }
    /* the solve's streams of cut subtrees and its top, for the shapes with a
     * block of at most SOLVE_STREAMS_W_MAX lanes (solve_lanes) */
    for (int64_t b = 0; b < st->n_blocks; ++b) {
        const sim_shape *s = &sim->shapes[st->blocks[b].shape];
        cpu_shape *cs = &st->shapes[st->blocks[b].shape];
        if (st->blocks[b].w > SOLVE_STREAMS_W_MAX || cs->order) continue;
        ns_cpu_cut cut;
        if (ns_cpu_cut_make(s->n, s->parent, SOLVE_STREAMS, 2, &cut) != 0) goto oom;
        int32_t longest = 0;
        for (int32_t t = 0; t < SOLVE_STREAMS; ++t) {
            int32_t len = 0;
            for (int32_t c = cut.cut_first[t]; c < cut.cut_first[t + 1]; ++c) len += cut.end[c] - cut.root[c] - 1;
            if (len > longest) longest = len;
        }
        cs->n_order = longest * SOLVE_STREAMS;
        cs->order = malloc(((size_t)cs->n_order + 1) * sizeof *cs->order);
        cs->top = cut.top;
        cs->n_top = cut.n_top;
        cut.top = NULL;
        for (int32_t k = 0; cs->order && k < cs->n_order; ++k) cs->order[k] = (solve_entry){-1, 0, 0.0, 0.0};
        for (int32_t t = 0; cs->order && t < SOLVE_STREAMS; ++t) {
            int32_t len = 0;
            for (int32_t c = cut.cut_first[t]; c < cut.cut_first[t + 1]; ++c)
                for (int32_t i = cut.end[c] - 1; i > cut.root[c]; --i)
                    cs->order[len++ * SOLVE_STREAMS + t] =
                        (solve_entry){pos_of(cs->pos, i), cs->ppar ? cs->ppar[i] : s->parent[i], s->a[i], s->b[i]};
        }
        ns_cpu_cut_free(&cut);
        if (!cs->order) goto oom;
    }
    /* state storage, and the shapes' capacitance at the widths used */
    int64_t total = 0;
    for (int64_t b = 0; b < st->n_blocks; ++b) {
        const cpu_block *blk = &st->blocks[b];
        const int64_t nw = (int64_t)sim->shapes[blk->shape].n * blk->w;
        const int64_t padded = (nw + ALIGN / 8 - 1) / (ALIGN / 8) * (ALIGN / 8);
        total += padded;
        if (nw > st->max_nw) st->max_nw = nw;
        cpu_shape *cs = &st->shapes[blk->shape];
        const int l = log2w(blk->w);
        if (!cs->cap[l]) {
            cs->cap[l] = aligned((size_t)nw * sizeof(double));
            if (!cs->cap[l]) goto oom;
            const sim_shape *s = &sim->shapes[blk->shape];
            double *dc = malloc((size_t)s->n * sizeof *dc);
            if (!dc) goto oom;
            diagonal_constant(s, dc);
            for (int32_t i = 0; i < s->n; ++i)
                for (int32_t j = 0; j < blk->w; ++j) cs->cap[l][(int64_t)pos_of(cs->pos, i) * blk->w + j] = dc[i];
            free(dc);
        }
    }
    st->store = aligned((size_t)total * sizeof(double));
    if (!st->store) goto oom;
    {
        double *p = st->store;
        for (int64_t b = 0; b < st->n_blocks; ++b) {
            cpu_block *blk = &st->blocks[b];
            const int64_t nw = (int64_t)sim->shapes[blk->shape].n * blk->w;
            const int64_t padded = (nw + ALIGN / 8 - 1) / (ALIGN / 8) * (ALIGN / 8);
            blk->v = p;
            p += padded;
        }
    }
    /* a model's mechanism instances per block, its TABLEs one copy for all */
    ns_status made = ns_model_tables_create(sim->model, &st->tables);
    for (int64_t b = 0; made == NS_OK && b < st->n_blocks; ++b) {
        cpu_block *blk = &st->blocks[b];
        made = ns_model_block_create(sim->model, st->tables, blk->shape, sim->shapes[blk->shape].n, blk->w,
                                     st->shapes[blk->shape].pos, &blk->mech);
    }
    if (made != NS_OK) {
        free(count);
        free(wmax);
        return made;
    }
    /* cells split across the threads (sim/cpu/policy.h; split_ok above),
     * then the threads and the other blocks' owners */
    int64_t split_total = 0;
    for (int64_t b = 0; b < st->n_blocks; ++b) {
        cpu_block *blk = &st->blocks[b];
        const int32_t n = sim->shapes[blk->shape].n;
        blk->split = split_ok && ns_cpu_split(n, sim->n_comp, requested);
        if (blk->split) {
            st->n_split++;
            split_total += (int64_t)n * blk->w;
        }
    }
    st->threads = st->n_split > 0 ? requested : ns_cpu_threads(requested, st->n_blocks);
    {
        const int64_t rest = st->n_blocks - st->n_split;
        /* weight is reused below as one fill position per thread: a split
         * cell runs on `requested` threads, which can exceed the blocks */
        const int64_t wlen = (st->n_blocks > st->threads ? st->n_blocks : st->threads) + 1;
        int64_t *weight = malloc((size_t)wlen * sizeof *weight);
        int64_t *index = malloc((size_t)(st->n_blocks + 1) * sizeof *index);
        int32_t *owner = malloc((size_t)(st->n_blocks + 1) * sizeof *owner);
        int64_t *placed = malloc((size_t)(st->n_blocks + 1) * sizeof *placed);
        st->thread_begin = calloc((size_t)st->threads + 1, sizeof *st->thread_begin);
        st->order = malloc((size_t)(st->n_blocks + 1) * sizeof *st->order);
        st->next = aligned((size_t)st->threads * sizeof *st->next);
        st->split = malloc((size_t)(st->n_split + 1) * sizeof *st->split);
        st->split_at = malloc((size_t)(st->n_split + 1) * sizeof *st->split_at);
        st->split_stopped = calloc((size_t)(st->n_split + 1), sizeof *st->split_stopped);
        st->split_cut = calloc((size_t)(st->n_split + 1), sizeof *st->split_cut);
        st->split_bad = calloc((size_t)(st->n_split + 1), sizeof *st->split_bad);
        st->split_nan = calloc((size_t)(st->n_split + 1), sizeof *st->split_nan);
        st->split_spike_top = calloc((size_t)(st->n_split + 1), sizeof *st->split_spike_top);
        st->split_d = aligned((size_t)split_total * sizeof(double));
        st->split_rhs = aligned((size_t)split_total * sizeof(double));
        int64_t *load0 = calloc((size_t)st->threads, sizeof *load0);
        int ok = weight && index && owner && placed && st->thread_begin && st->order && st->next && st->split && st->split_at &&
                 st->split_stopped && st->split_cut && st->split_bad && st->split_nan && st->split_spike_top &&
                 st->split_d && st->split_rhs && load0;
        if (ok) {
            int64_t q = 0, p = 0;
            for (int64_t b = 0; ok && b < st->n_blocks; ++b) {
                const cpu_block *blk = &st->blocks[b];
                const sim_shape *sh = &sim->shapes[blk->shape];
                if (blk->split) {
                    const cpu_block *prev = p > 0 ? &st->blocks[st->split[p - 1]] : NULL;
                    st->split_at[p] = prev ? st->split_at[p - 1] + (int64_t)sim->shapes[prev->shape].n * prev->w : 0;
                    ok = ns_cpu_cut_make(sh->n, sh->parent, st->threads, NS_CPU_SPLIT_PIECES, &st->split_cut[p]) == 0;
                    /* thread p solves the block's top while the others advance
                     * their blocks: about a third of a compartment-step per entry */
                    if (ok) load0[p] = (int64_t)st->split_cut[p].n_top * blk->w / 3;
                    for (int32_t e = 0; ok && e < st->split_cut[p].n_top; ++e)
                        if (st->split_cut[p].top[e] == sh->spike_node) st->split_spike_top[p] = 1;
                    atomic_init(&st->split_bad[p], 0);
                    atomic_init(&st->split_nan[p], 0);
                    st->split[p++] = b;
                    continue;
                }
                index[q] = b;
                weight[q++] = (int64_t)sh->n * blk->w;
            }
            /* the other blocks over every thread, those solving a top
             * starting with its work (n_split < threads: a split cell has
             * more than 1/threads of the compartments) */
            ok = ok && ns_cpu_partition(rest, weight, st->threads, st->n_split ? load0 : NULL, owner, placed) >= 0;
        }
        free(load0);
        if (ok) {
            for (int64_t q = 0; q < rest; ++q) st->thread_begin[owner[q] + 1]++;
            for (int32_t t = 0; t < st->threads; ++t) st->thread_begin[t + 1] += st->thread_begin[t];
            int64_t *at = weight; /* reused as fill positions */
            for (int32_t t = 0; t < st->threads; ++t) at[t] = st->thread_begin[t];
            /* each thread's blocks in the order they were placed, longest
             * first, so that its list ends with its shortest blocks, the ones
             * other threads take */
            for (int64_t k = 0; k < rest; ++k) st->order[at[owner[placed[k]]]++] = index[placed[k]];
            for (int32_t t = 0; t < st->threads; ++t) atomic_init(&st->next[t].q, st->thread_begin[t]);
        }
        free(weight);
        free(index);
        free(owner);
        free(placed);
        if (!ok) goto oom;
    }
    free(count);
    free(wmax);
    return cpu_mechanisms(sim, st);
oom:
    free(count);
    free(wmax);
    return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: CPU layout of %lld cells", (long long)nc);
}

static ns_status cpu_load_state(ns_sim_t *sim);

/* The host arrays' initial state (sim.c), into the lane blocks. */
static ns_status cpu_init(ns_sim_t *sim) {
    ns_status e = cpu_load_state(sim);
    cpu_state *st = sim->backend_state;
    if (e == NS_OK) e = ns_model_tables_update(sim->model, st->tables, sim->params.celsius);
    for (int64_t b = 0; e == NS_OK && b < st->n_blocks; ++b) {
        cpu_block *blk = &st->blocks[b];
        ns_model_block_init(sim->model, blk->mech, blk->shape, sim->shapes[blk->shape].n, blk->w,
                            st->shapes[blk->shape].pos, blk->cell, blk->v, sim->params.dt, sim->params.celsius);
    }
    /* the network's instances per block (net.c), after the density
     * mechanisms' INITIAL, as NEURON's type order has them after pas */
    for (int64_t b = 0; b < st->n_blocks; ++b) st->blocks[b].net = NULL;
    if (e == NS_OK && sim->net) {
        net_block_in *in = malloc((size_t)st->n_blocks * sizeof *in);
        if (!in) return ns_fail(NS_ERR_OUT_OF_MEMORY, "network: %lld blocks", (long long)st->n_blocks);
        for (int64_t b = 0; b < st->n_blocks; ++b) {
            cpu_block *blk = &st->blocks[b];
            in[b] = (net_block_in){blk->shape, blk->w, blk->cell, blk->mech, blk->v, st->shapes[blk->shape].pos};
        }
        e = ns_net_build(sim, st->n_blocks, in);
        free(in);
        for (int64_t b = 0; e == NS_OK && b < st->n_blocks; ++b) st->blocks[b].net = sim->net->blocks[b];
    }
    for (int64_t b = 0; e == NS_OK && b < st->n_blocks; ++b) /* the synapse types: known from here */
        for (int32_t k = 0; e == NS_OK && st->blocks[b].net && k < st->blocks[b].net->n_points; ++k)
            e = thread_unsafe(sim, st->blocks[b].net->points[k].desc, st->threads);
    /* a mechanism's error in CONSTRUCTOR, INITIAL or the hooks of finitialize: the first block's */
    for (int64_t b = 0; e == NS_OK && b < st->n_blocks; ++b)
        if (st->blocks[b].mech && ns_model_block_error(st->blocks[b].mech)->set)
            e = ns_sim_mech_error(ns_model_block_error(st->blocks[b].mech), 0.0, -1);
    return e;
}

static ns_status cpu_sync_state(ns_sim_t *sim) {
    cpu_state *st = sim->backend_state;
    for (int64_t c = 0; c < sim->n_cells; ++c) {
        const cpu_block *blk = &st->blocks[st->lane_of[c] / NS_CPU_LANES_MAX];
        const int32_t j = (int32_t)(st->lane_of[c] % NS_CPU_LANES_MAX), w = blk->w;
        const int64_t o = sim->cell_offset[c];
        const int32_t n = sim->shapes[blk->shape].n, *pos = st->shapes[blk->shape].pos;
        for (int32_t i = 0; i < n; ++i) {
            const int64_t k = (int64_t)pos_of(pos, i) * w + j;
            sim->v[o + i] = blk->v[k];
        }
    }
    return NS_OK;
}

/* The host arrays into the lane blocks: the inverse of cpu_sync_state, for
 * a state set through ns_sim_set_state or a checkpoint (sim.c). */
static ns_status cpu_load_state(ns_sim_t *sim) {
    cpu_state *st = sim->backend_state;
    for (int64_t c = 0; c < sim->n_cells; ++c) {
        cpu_block *blk = &st->blocks[st->lane_of[c] / NS_CPU_LANES_MAX];
        const int32_t j = (int32_t)(st->lane_of[c] % NS_CPU_LANES_MAX), w = blk->w;
        const int64_t o = sim->cell_offset[c];
        const int32_t n = sim->shapes[blk->shape].n, *pos = st->shapes[blk->shape].pos;
        for (int32_t i = 0; i < n; ++i) {
            const int64_t k = (int64_t)pos_of(pos, i) * w + j;
            blk->v[k] = sim->v[o + i];
        }
    }
    return NS_OK;
}

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
NS_ALWAYS_INLINE void phase_currents_range(const ns_sim_t *sim, const block_view *bv, const int32_t W, int32_t n0, int32_t n1,
                                 double tm, double *restrict d, double *restrict rhs, int last) {
    const double dt = sim->params.dt, celsius = sim->params.celsius;
    model_block *mb = bv->blk->mech;
    ns_model_block_fused_range(sim->model, mb, W, 0, n0, n1, bv->v, rhs, d, NULL, tm, dt, celsius, last);
    clamps(sim, bv, W, n0, n1, tm, rhs);
    ns_model_block_fused_range(sim->model, mb, W, 1, n0, n1, bv->v, rhs, d, bv->cap, tm, dt, celsius, last);
}

NS_ALWAYS_INLINE void phase_states_range(const ns_sim_t *sim, const block_view *bv, const int32_t W, int32_t n0, int32_t n1,
                                   double t, int last) {
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
NS_ALWAYS_INLINE int spike_crossings(ns_sim_t *sim, const block_view *bv, const int32_t W, const double *v_old, double tp,
                            double t) {
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
    ns_status path = cpu_mechanisms(sim, st);
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
        double *d = aligned((size_t)st->max_nw * sizeof *d);
        double *rhs = aligned((size_t)st->max_nw * sizeof *rhs);
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

/* A model's variable of one cell in its lane block, read or written. */
static ns_status cpu_model_var(ns_sim_t *sim, int64_t cell, int32_t mech, int32_t field, int32_t ion, int32_t q,
                               double *io, int write) {
    const cpu_state *st = sim->backend_state;
    const cpu_block *blk = &st->blocks[st->lane_of[cell] / NS_CPU_LANES_MAX];
    const int32_t lane = (int32_t)(st->lane_of[cell] % NS_CPU_LANES_MAX), w = blk->w;
    const int32_t n = sim->shapes[blk->shape].n;
    /* a parameter or an ion's value written: the fused pass reloads it per node from now on */
    if (write && (mech < 0 || field < sim->model->mechs[mech].desc->n_params)) ns_model_block_expose(blk->mech);
    if (mech < 0) {
        double *x = (double *)ns_model_block_ion(blk->mech, ion, q);
        const int32_t *pos = st->shapes[blk->shape].pos;
        for (int32_t i = 0; i < n; ++i) {
            double *at = &x[(int64_t)pos_of(pos, i) * w + lane];
            if (write) *at = io[i];
            else io[i] = *at;
        }
        return NS_OK;
    }
    const sim_mech_shape *ms = &sim->model->per_shape[(size_t)blk->shape * sim->model->n_mechs + mech];
    double *x = (double *)ns_model_block_field(blk->mech, mech, field);
    if (!write)
        for (int32_t i = 0; i < n; ++i) io[i] = NAN;
    for (int32_t k = 0; k < ms->n; ++k) {
        const int64_t at = (int64_t)ns_model_block_slot(blk->mech, mech, k) * w + lane;
        if (write) x[at] = io[ms->node[k]];
        else io[ms->node[k]] = x[at];
    }
    return NS_OK;
}

/* ns_sim_state_part: a part is a lane block, v[node * w + lane] (the
 * blocks' arrays themselves; the host copy is refreshed from them whenever
 * it is read, so writes need no notice). */
static int64_t cpu_state_parts(const ns_sim_t *sim) {
    return ((const cpu_state *)sim->backend_state)->n_blocks;
}

static ns_status cpu_state_part(ns_sim_t *sim, int64_t part, ns_sim_part *out) {
    static const int64_t lane[NS_CPU_LANES_MAX] = {0, 1, 2, 3, 4, 5, 6, 7};
    cpu_state *st = sim->backend_state;
    if (!st->part_flat) {
        int64_t *base = malloc((size_t)(st->n_blocks + 1) * sizeof *base);
        int64_t *flat = malloc((size_t)(sim->n_comp ? sim->n_comp : 1) * sizeof *flat);
        if (!base || !flat) {
            free(base), free(flat);
            return ns_fail(NS_ERR_OUT_OF_MEMORY, "ns_sim_state_part: map of %lld compartments",
                           (long long)sim->n_comp);
        }
        base[0] = 0;
        for (int64_t b = 0; b < st->n_blocks; ++b) {
            const cpu_block *blk = &st->blocks[b];
            const int32_t n = sim->shapes[blk->shape].n, w = blk->w, *pos = st->shapes[blk->shape].pos;
            for (int32_t j = 0; j < w; ++j)
                for (int32_t i = 0; i < n; ++i)
                    flat[base[b] + (int64_t)pos_of(pos, i) * w + j] = sim->cell_offset[blk->cell[j]] + i;
            base[b + 1] = base[b] + (int64_t)n * w;
        }
        st->part_flat = flat;
        st->part_base = base;
    }
    cpu_block *blk = &st->blocks[part];
    out->v = blk->v;
    out->size = st->part_base[part + 1] - st->part_base[part];
    out->flat_of = st->part_flat + st->part_base[part];
    out->cells = blk->w;
    out->cell = blk->cell;
    out->first = lane;
    out->stride = blk->w;
    out->node_pos = st->shapes[blk->shape].pos;
    out->device = -1;
    return NS_OK;
}

/* ns_sim_state_field: the block's arrays of the model (mech/blocks.c): a
 * mechanism's field over its instances (node_index: their lane-nodes, the
 * block's positions), an ion's array over the lane-nodes. */
static ns_status cpu_state_field(ns_sim_t *sim, int64_t part, int32_t mech, int32_t field, int32_t ion, int32_t q,
                                 ns_sim_field *out) {
    cpu_state *st = sim->backend_state;
    cpu_block *blk = &st->blocks[part];
    const int64_t nw = (int64_t)sim->shapes[blk->shape].n * blk->w;
    out->device = -1;
    if (mech < 0) {
        ns_model_block_expose(blk->mech); /* an e written there is used from the next step */
        out->data = ns_model_block_ion_data(blk->mech, ion) + (size_t)q * (size_t)nw;
        out->size = nw;
        out->pos = NULL;
        return NS_OK;
    }
    ns_model_block_expose(blk->mech); /* a parameter written there is used from the next step */
    out->data = (double *)ns_model_block_field(blk->mech, mech, field);
    out->size = ns_model_block_instances(blk->mech, mech);
    out->pos = (const int32_t *)ns_model_block_node_index(blk->mech, mech);
    return NS_OK;
}

const sim_ops *ns_sim_cpu_ops(void) {
    /* no read_var / write_var: the host arrays after cpu_sync_state (sim.c) */
    static const sim_ops ops = {"cpu",          cpu_create,     cpu_destroy, cpu_init, cpu_advance,
                                cpu_sync_state, cpu_load_state, NULL,        NULL,     cpu_model_var,
                                cpu_advance_net, cpu_state_parts, cpu_state_part, NULL, cpu_state_field};
    return &ops;
}

