/* Private: host-side planning of the mixed-shape GPU methods (issue 5).
 * Needs no CUDA, so CI tests it on the CPU (tests/hines/test_hines_mixed.c).
 *
 * 1. ns_mixed_shapes_build: each shape is re-rooted at its centre (the node
 *    of least eccentricity, counted in compartments), renumbered so that
 *    every branch (unbranched run) is a contiguous range and branches come
 *    breadth first (a valid Hines order), and optionally its long branches
 *    are split per level (the Arbor report, section 6). The permutation and
 *    the flipped edges are kept so the caller never sees the new numbering.
 * 2. ns_mixed_layout_build: places every compartment of the batch in the
 *    solver's storage. Cells are packed into groups (one CUDA block each for
 *    the fine-grained method, one group for the branch-level method); inside
 *    a group each level stores its branches sorted by length, longest first,
 *    in a jagged-interleaved layout: node j of the level's branch slot t sits
 *    at base + rowoff[j] + t, where row j holds exactly the slots whose
 *    branch is longer than j (a prefix, thanks to the sort). Consecutive
 *    threads therefore touch consecutive addresses and there is no padding.
 * 3. ns_mixed_cells_build: the one-thread-per-cell baseline's layout: cells
 *    sorted by size (largest first), node k of sorted cell c at rowoff[k] + c.
 *
 * ns_mixed_solve_host runs the grouped layout's schedule on the CPU, step by
 * step as the GPU kernels do, so the plan is testable without a GPU. */
#ifndef NS_HINES_MIXED_PLAN_H
#define NS_HINES_MIXED_PLAN_H

#include <stdint.h>

#include "hines/batch_impl.h"

/* One shape after re-rooting (and splitting). "new" = solver numbering. */
typedef struct ns_mixed_shape {
    int32_t n;           /* compartments */
    int32_t root_old;    /* old index of the new root */
    int32_t *perm;       /* n: new index -> old index */
    int32_t *parent;     /* n: parent in the new numbering (Hines order) */
    int32_t *edge;       /* n: 2 * (old index holding the edge's a and b) + swapped; -1 at the root */
    int32_t n_branches;  /* branches, breadth first (a parent branch before its children) */
    int32_t *br_start;   /* first node (new numbering); the branch is [start, start + len) */
    int32_t *br_len;
    int32_t *br_parent;  /* parent branch, -1 for the root branch */
    int32_t *br_level;   /* 0 at the root branch */
    int32_t *child_begin; /* n_branches + 1: children of b are child[child_begin[b] ..] */
    int32_t *child;
    int32_t n_levels;
} ns_mixed_shape;

typedef struct ns_mixed_shapes {
    int32_t count;
    ns_mixed_shape *shape;
} ns_mixed_shapes;

typedef struct ns_mixed_plan_options {
    int reroot;  /* 1: re-root every shape at its centre */
    int split;   /* 1: split branches longer than their level's batch-wide average */
} ns_mixed_plan_options;

ns_status ns_mixed_shapes_build(const ns_batch_t *batch, const ns_mixed_plan_options *o,
                                ns_mixed_shapes *out);
void ns_mixed_shapes_free(ns_mixed_shapes *s);

/* One level of one group. */
typedef struct ns_mixed_level {
    int64_t base;          /* storage position of row 0, slot 0 */
    int64_t rows;          /* index of this level's first entry in rowoff (max_len + 1 entries) */
    int64_t first_branch;  /* index of slot 0's branch in the br_* arrays */
    int32_t width;         /* branches on this level of this group */
    int32_t max_len;       /* compartments of the longest one (slot 0) */
} ns_mixed_level;

typedef struct ns_mixed_layout {
    int64_t n_nodes;       /* = compartments of the batch */
    int64_t *gather;       /* n_nodes: storage position -> Flat index (d, rhs, x) */
    int64_t *edge;         /* n_nodes: 2 * Flat index of a and b + swapped, -1 (root: a = b = 0) */
    int32_t n_groups;
    int32_t *group_level;  /* n_groups + 1: levels of group g, root level first */
    int64_t n_levels;
    ns_mixed_level *levels;
    int64_t n_rowoff;
    int64_t *rowoff;       /* row j of a level starts at base + rowoff[rows + j] */
    int64_t n_branches;
    int32_t *br_len;
    int64_t *br_ppos;      /* storage position of the parent node (last of the parent branch), -1 */
    int64_t *br_child;     /* n_branches + 1 */
    int64_t *child_pos;    /* storage position of each child branch's first node */
    int32_t max_width;     /* widest level of any group */
    int32_t max_group_levels;
} ns_mixed_layout;

/* Pack cells into groups: a cell joins the current group while every level
 * keeps at most `threads` branches, the group has fewer than
 * `cells_per_group` cells and at most `max_group_nodes` compartments with it
 * (<= 0: no limit); a cell that alone exceeds `threads` on some level gets a
 * group of its own (the kernel loops). threads <= 0: one group for the
 * whole batch (branch-level method). */
ns_status ns_mixed_layout_build(const ns_batch_t *batch, const ns_mixed_shapes *shapes,
                                int32_t threads, int64_t cells_per_group, int64_t max_group_nodes,
                                ns_mixed_layout *out);
void ns_mixed_layout_free(ns_mixed_layout *l);

/* Solve on the CPU with the layout's schedule (gather, levels leaves-up,
 * levels root-down, scatter). Same contract as a GPU solve: rhs becomes x.
 * Returns NS_ERR_SINGULAR naming the cell and (caller's) compartment of
 * the lowest Flat index with a bad pivot. */
ns_status ns_mixed_solve_host(const ns_batch_t *batch, const ns_mixed_layout *l, const double *a,
                              const double *b, double *d, double *rhs);

/* The one-thread-per-cell interleaved layout. */
typedef struct ns_mixed_cells {
    int64_t n_cells;
    int32_t max_size;
    int32_t *order;        /* n_cells: sorted position -> batch cell (largest first) */
    int32_t *sorted_shape; /* n_cells: shape of each sorted cell */
    int64_t *rowoff;       /* max_size + 1: node k of sorted cell c at rowoff[k] + c */
    int64_t *gather;       /* compartments: storage position -> Flat index */
    int32_t *shape_size;   /* n_shapes */
    int64_t *shape_poff;   /* n_shapes: start of each shape's parent array in `parents` */
    int32_t *parents;      /* all shapes' parent arrays, concatenated */
    int64_t n_parents;
} ns_mixed_cells;

ns_status ns_mixed_cells_build(const ns_batch_t *batch, ns_mixed_cells *out);
void ns_mixed_cells_free(ns_mixed_cells *c);

/* The batch cell holding Flat index `flat` (binary search over cell_offset). */
int64_t ns_mixed_cell_of(const ns_batch_t *batch, int64_t flat);

#endif
