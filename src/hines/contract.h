/* Internal interface: tree contraction (rake and compress) for Hines systems.
 *
 * The solver's parallel method for any tree (docs/methods.md, "tree"): the
 * tree is eliminated in rounds; in each round an independent set of nodes
 * of degree <= 2 is eliminated at once: leaves (rake: Hines elimination into
 * the parent) and nodes with a single remaining child (compress: the child
 * is coupled directly to the grandparent, as in cyclic reduction on a
 * chain). The remaining nodes still form a tree, so every round is local and
 * the number of rounds grows like log n (a chain of 100,000 compartments:
 * 17 rounds) instead of the depth.
 *
 * Every node i holds d[i], rhs[i] and its coupling to its current parent P:
 * up[i] (row i's entry for x[P], initially b[i]) and down[i] (row P's entry
 * for x[i], initially a[i]). Round r is executed by *pull tasks*: every kept
 * node K with an eliminated neighbour pulls that neighbour's contribution
 * into its own d, rhs (and up, down when its parent was compressed); a kept
 * node writes only its own entries, so a round needs no atomics and the
 * result does not depend on the thread order. Back substitution runs the
 * rounds in reverse: x[u] = (rhs[u] - up[u] x[P] - lo[u] x[c]) / d[u], where
 * lo[u] is the child's old down (written by the child when it pulled).
 *
 * The plan is host data (this file and contract.c, no CUDA); the CUDA kernel
 * (cuda/contract_kernel.cuh) and the CPU executor below run the same plan.
 * Node indices in tasks are the tree's own (Hines order). */
#ifndef NS_HINES_CONTRACT_H
#define NS_HINES_CONTRACT_H

#include <stdint.h>
#include "neurosolve/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A forward (elimination) task: kept node k pulls its eliminated children
 * and, when pu >= 0, its eliminated parent pu. The children are inline when
 * there are at most two (u1, u2; -1 for none: one load less per task on the
 * GPU), else in list[-2 - u1 .. -2 - u1 + u2) (u1 <= -2, u2 the count). */
typedef struct ns_contract_fwd {
    int32_t k, u1, u2, pu;
} ns_contract_fwd;

/* The eliminated children of a forward task. */
static inline int32_t ns_contract_fwd_count(ns_contract_fwd f) {
    return f.u1 <= -2 ? f.u2 : (f.u1 >= 0) + (f.u2 >= 0);
}
static inline int32_t ns_contract_fwd_child(ns_contract_fwd f, const int32_t *list, int32_t q) {
    return f.u1 <= -2 ? list[-2 - f.u1 + q] : (q == 0 ? f.u1 : f.u2);
}

/* A backward task: x[u] from x[p] (its parent when eliminated; -1 for the
 * root) and x[c] (its only child when compressed; -1 when raked). */
typedef struct ns_contract_bwd {
    int32_t u, p, c, pad;
} ns_contract_bwd;

typedef struct ns_contract_plan {
    int32_t n;          /* nodes */
    int32_t rounds;     /* elimination rounds (0 for n = 1) */
    int32_t n_fwd, n_list;
    int32_t *fwd_begin; /* rounds + 1 */
    ns_contract_fwd *fwd;
    int32_t *list;      /* eliminated children, grouped by task */
    /* bwd_begin[r] .. bwd_begin[r + 1]: the nodes eliminated in round r
     * (r < rounds); round `rounds` holds the root alone. */
    int32_t *bwd_begin; /* rounds + 2 */
    ns_contract_bwd *bwd; /* n */
} ns_contract_plan;

/* Plan the contraction of a tree given by its parent array (Hines order). */
ns_status ns_contract_plan_create(int32_t n, const int32_t *parent, ns_contract_plan *plan);
void ns_contract_plan_destroy(ns_contract_plan *plan);

/* Execute a plan on the CPU (the GPU kernel's arithmetic, in the same
 * order): a, b are read; d, rhs are overwritten (rhs becomes x); up, down,
 * lo are scratch of n doubles each. Returns the node with a zero or
 * non-finite pivot that was eliminated first (the lowest within its round;
 * later pivots that depend on it are not reported), or -1. For tests and as the reference of the kernel. */
int32_t ns_contract_solve_cpu(const ns_contract_plan *plan, const double *a, const double *b, double *d,
                              double *rhs, double *up, double *down, double *lo);


/* ------------------------------------------------------------ batch layout
 *
 * A batch is cut into *groups* of consecutive cells (so a group's nodes are
 * one contiguous range of the Flat arrays), each solved by one CUDA block.
 * A group's plan is the concatenation of its cells' plans, round by round,
 * with node indices local to the group; groups with the same sequence of
 * shapes share one *template* (a same-shape batch has one or two). Groups
 * whose image (NS_CONTRACT_SHARED_DOUBLES per node) fits the shared-memory
 * budget run in shared memory ("small"); a cell beyond it is a group of its
 * own solved in device memory by a block of many threads ("big"). */

/* Doubles per node of a group's image: d, rhs, up, down, lo. */
#define NS_CONTRACT_SHARED_DOUBLES 5

typedef struct ns_contract_layout_options {
    int32_t group_nodes;   /* most nodes of a small group (its shared-memory budget) */
    int32_t mid_nodes;     /* a single cell of at most this many nodes is "medium", of more "large" */
    int32_t big_nodes;     /* a cell of more nodes is a big group (device memory) */
    int32_t min_groups;    /* cap small groups at total / min_groups nodes (spread over SMs) */
    int32_t max_cells;     /* most cells of a group (0: no limit) */
    int32_t tail_nodes;    /* big groups: once at most this many nodes are left, the remaining
                              rounds run on a shared-memory copy of them (0: never) */
} ns_contract_layout_options;

typedef struct ns_contract_layout {
    int32_t n_groups, n_templates;
    int64_t *g_base;       /* n_groups: first Flat node */
    int32_t *g_tmpl;       /* n_groups: template */
    int64_t *g_scratch;    /* n_groups: offset of a big group's up/down/lo in the scratch (-1: small) */
    /* small: at most group_nodes nodes (several blocks per SM); medium: one
     * cell of at most mid_nodes; large: one cell of at most big_nodes (both
     * in shared memory, launched apart so each launch asks for the shared
     * memory its own groups need); big: device memory */
    int32_t n_small, n_medium, n_large, n_big;
    int32_t *small, *medium, *large, *big; /* group indices of each kind */
    int64_t scratch_nodes; /* nodes of all big groups */
    int32_t max_small_nodes, max_medium_nodes, max_large_nodes, max_rounds;
    /* templates */
    int32_t *t_nodes, *t_rounds, *t_rt; /* n_templates; t_rt: offset into rt */
    /* A big group's template may have a *tail*: after its first t_head
     * rounds at most tail_nodes nodes are left; the tail template (t_tail,
     * -1: none) holds the remaining rounds on those nodes renumbered 0..T-1,
     * and tmap[t_map[tail] + j] is the group-local node of tail node j. */
    int32_t *t_tail, *t_head, *t_map;
    int32_t *tmap;
    int64_t n_tmap;
    int32_t max_tail_nodes;
    int32_t *rt;           /* per template: rounds + 1 forward, rounds + 2 backward boundaries */
    int64_t n_rt, n_fwd, n_list, n_bwd;
    ns_contract_fwd *fwd;  /* k, pu local to the group; first into list */
    int32_t *list;         /* local */
    ns_contract_bwd *bwd;  /* local */
} ns_contract_layout;

/* Plans per shape (plans[s] for tree shape s) must outlive nothing: the
 * layout copies what it needs. cell_offset has n_cells + 1 entries. */
ns_status ns_contract_layout_create(int32_t n_shapes, const ns_contract_plan *plans, int64_t n_cells,
                                    const int32_t *cell_shape, const int64_t *cell_offset,
                                    const ns_contract_layout_options *options, ns_contract_layout *out);
void ns_contract_layout_destroy(ns_contract_layout *layout);

/* Run group g of a layout on the CPU exactly as the kernel does (the
 * group's nodes start at d + g_base etc.; a tail on a renumbered copy, a
 * round-ordered template on a copy in its order, x scattered back);
 * returns the group-local node of the first bad pivot (as
 * ns_contract_solve_cpu), -1, or -2 when out of memory. Scratch: 3 x nodes. */
int32_t ns_contract_group_cpu(const ns_contract_layout *layout, int32_t g, const double *a, const double *b,
                              double *d, double *rhs, double *scratch);

#ifdef __cplusplus
}
#endif
#endif
