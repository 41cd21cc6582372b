/* Private: the CPU simulation loop's decisions (sim/cpu/step.c) as pure
 * functions, unit-tested in tests/core/test_policy.c: how many cells of a shape
 * share one lane block, how many threads run, and which thread runs which
 * block. The rules and the measurements behind them: docs/simulation.md,
 * "CPU loop". */
#ifndef NS_CABLE_CPU_POLICY_H
#define NS_CABLE_CPU_POLICY_H

#include <stdint.h>

/* The widest lane block: 8 doubles (one AVX-512 vector, two AVX2 vectors). */
#define NS_CPU_LANES_MAX 8

/* The widest block for cells of `n` compartments when `total` compartments
 * (all cells) run on `threads` threads: the largest power of two w <=
 * NS_CPU_LANES_MAX with w * n <= total / threads (so that no block holds
 * more than one thread's share of the work), and 1 when even one cell
 * exceeds the share. */
int32_t ns_cpu_lane_width(int32_t n, int64_t total, int32_t threads);

/* The blocks of `cells` cells with widest block `wmax` (a power of two):
 * as many blocks of wmax as fit, then the rest in blocks of decreasing
 * powers of two (5 cells, wmax 8: 4 + 1), so that no lane is padding.
 * Writes the widths into `widths` (at most cells / wmax + log2(wmax) + 1
 * entries) and returns their count. */
int64_t ns_cpu_blocks(int64_t cells, int32_t wmax, int32_t *widths);

/* The least compartments per thread for a cell split across threads: the
 * membrane and gate passes of 1,024 compartments take an order of magnitude
 * longer than the two barriers per step the split costs (docs/simulation.md,
 * "A cell split across threads"). */
#define NS_CPU_SPLIT_MIN_PER_THREAD 1024

/* Whether a cell of `n` compartments runs on all `threads` threads (its
 * node ranges, and the subtrees of its Hines solve, one set per thread;
 * sim/cpu/step.c, cpu_steps; the copies of such a cell go in the widest lane
 * blocks their count allows, each block split so): when alone it exceeds
 * one thread's share of the `total` compartments (it would bound the run's
 * time: the 38,580-compartment cell of the bundled mix at 16 threads) and it
 * has at least NS_CPU_SPLIT_MIN_PER_THREAD compartments per thread. With a
 * split cell all requested threads run (even with fewer blocks). */
int ns_cpu_split(int32_t n, int64_t total, int32_t threads);

/* Subtrees of a split cell per thread: the cut subtrees have at most
 * n / (threads * NS_CPU_SPLIT_PIECES) nodes, so that each thread's node
 * range (whole subtrees) lies within that of its share n / threads. More
 * pieces balance better and leave more nodes in the top, which one thread
 * solves (docs/simulation.md, "A cell split across threads"). */
#ifndef NS_CPU_SPLIT_PIECES
#define NS_CPU_SPLIT_PIECES 2
#endif

/* The cut of a split cell's tree (parent[i] < i) for `threads` threads.
 * A node whose subtree has at most n / (threads * pieces) nodes and is a
 * contiguous index range [root, end), while its parent's is not so, roots
 * a cut subtree; the other nodes (every ancestor of a cut root) form the
 * top. Thread t owns the nodes [range[t], range[t + 1]), whole cut subtrees
 * and the top nodes between them, the boundary nearest to n t / threads;
 * its cut subtrees are cuts cut_first[t] .. cut_first[t + 1] - 1. The top's
 * entries in ascending node order: a node i of the top as i, a cut root r
 * (its link to its parent, which is in the top) as -1 - r. Eliminating each
 * cut subtree up to its root, then the top's entries, then substituting
 * back gives each node's d and rhs their terms in the order of the
 * sequential solve (children in index order), so the same values. */
typedef struct ns_cpu_cut {
    int32_t threads;
    int32_t *range;     /* threads + 1 */
    int32_t *cut_first; /* threads + 1 into root, end */
    int32_t n_cuts;
    int32_t *root, *end; /* the cut subtrees [root, end), ascending */
    int32_t n_top;
    int32_t *top;        /* entries: i (a node of the top) or -1 - r (a cut root) */
} ns_cpu_cut;

/* Fills `cut` (zeroed first); 0, or -1 when out of memory (nothing then
 * to free). */
int ns_cpu_cut_make(int32_t n, const int32_t *parent, int32_t threads, int32_t pieces, ns_cpu_cut *cut);
void ns_cpu_cut_free(ns_cpu_cut *cut);

/* The node order of a shape's lane blocks (sim/cpu/step.c): a shape whose hh
 * runs (between zero-area nodes or other regions) average under
 * NS_CPU_REORDER_RUN nodes keeps its membrane nodes region by region and its
 * zero-area nodes after them in its blocks' arrays, so that its membrane and
 * gate passes run over long runs; its solve visits the nodes in their order
 * through the positions (the same arithmetic, node by node). Not for a cell
 * split across threads (its threads own node ranges) nor with a model. */
#ifndef NS_CPU_REORDER_RUN
#define NS_CPU_REORDER_RUN 8
#endif
int ns_cpu_reorder(int64_t hh_nodes, int64_t hh_runs);

/* Threads that run: the request, but never more than the blocks (a thread
 * without a block would only wait), and at least 1. */
int32_t ns_cpu_threads(int32_t requested, int64_t blocks);

/* A static partition of `count` blocks of work `weight[b]` over `threads`
 * threads that start with the loads `load0` (NULL: none), balancing work
 * (longest first onto the least-loaded thread, ties to the lowest thread):
 * owner[b] receives the thread of block b, and order_out (unless NULL) the
 * blocks in the order they were placed (longest first). Returns the largest
 * load of a thread, or -1 when out of memory. */
int64_t ns_cpu_partition(int64_t count, const int64_t *weight, int32_t threads, const int64_t *load0,
                         int32_t *owner, int64_t *order_out);

#endif
