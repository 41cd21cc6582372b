/* neurosolve: compartment trees (the shape of a Hines system) and generators.
 *
 * A tree of n compartments is its parent array: parent[0] = -1 and
 * 0 <= parent[i] < i for i > 0 (Hines order). One tree is shared by every
 * cell of that shape in a batch. */
#ifndef NEUROSOLVE_TREE_H
#define NEUROSOLVE_TREE_H

#include "neurosolve/export.h"

#include <stdint.h>
#include "neurosolve/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ns_tree ns_tree_t;

typedef struct ns_tree_stats {
    int32_t size;          /* compartments */
    int32_t branches;      /* unbranched runs (a run ends where a node has != 1 child) */
    int32_t branch_points; /* nodes with two or more children */
    int32_t leaves;
    int32_t depth;         /* most compartments on a root-to-leaf path */
    int32_t branch_depth;  /* most branches on a root-to-leaf path */
} ns_tree_stats;

/* Copy and check a parent array; NS_ERR_TOPOLOGY names the first bad index. */
NS_API ns_status ns_tree_create(int32_t size, const int32_t *parent, ns_tree_t **out);
NS_API void ns_tree_destroy(ns_tree_t *tree);
NS_API int32_t ns_tree_size(const ns_tree_t *tree);
NS_API const int32_t *ns_tree_parent(const ns_tree_t *tree);
NS_API void ns_tree_get_stats(const ns_tree_t *tree, ns_tree_stats *stats);

/* --------------------------------------------------------- generators */

/* (i) A random tree with exactly `size` compartments cut into exactly
 * `branches` unbranched runs (the cuHinesBatch paper's Table 1 sizes:
 * 76/7, 76/29, 305/30, 319/157, 695/66, 691/341). Needs 1 <= branches <= size
 * and branches != 2 (impossible: any branch point adds at least two runs).
 * Odd counts use binary branch points only; even counts use one
 * trifurcation. The construction is in docs/generators.md. Deterministic
 * for a seed. */
NS_API ns_status ns_generate_tree(int32_t size, int32_t branches, uint64_t seed, ns_tree_t **out);

/* The six named sizes of the cuHinesBatch paper: "small-low", "small-high",
 * "medium-low", "medium-high", "big-low", "big-high". */
NS_API ns_status ns_generate_paper_tree(const char *name, uint64_t seed, ns_tree_t **out);

/* (ii) The journal paper's binary-tree neuron: `size` compartments and
 * `levels` branch levels (1 to 20). Level k >= 1 holds 2^k branches of
 * floor((size/2) / ((levels-1) * 2^k)) compartments each (so every level
 * below the root has about the same total and each branch is half its
 * parent's length, as in the paper); the root branch (level 0) takes the
 * rest, about size/2. size 512: 2 levels = 256 + 2x128, 3 levels =
 * 256 + 2x64 + 4x32, 4 levels = 264 + 2x42 + 4x21 + 8x10. The paper's own
 * 4-level example (256 + 2x32 + 4x16 + 8x8) adds up to 448, not 512; see
 * docs/generators.md. Branches are numbered level by level. */
NS_API ns_status ns_generate_binary_tree(int32_t size, int32_t levels, ns_tree_t **out);

/* (iii) Random trees like the Arbor ring network's cells. */
typedef struct ns_random_tree_params {
    int32_t max_levels;          /* branch levels below the soma */
    double branch_prob_start;    /* probability that a branch forks, at level 1 */
    double branch_prob_end;      /* ... at the deepest level (linear in between) */
    int32_t compartments_start;  /* compartments per branch at level 1 */
    int32_t compartments_end;    /* ... at the deepest level */
    double length_start;         /* [um] branch length at level 1 (shrinks with depth) */
    double length_end;           /* [um] ... at the deepest level */
} ns_random_tree_params;

/* Presets "low", "medium", "high" branching (docs/generators.md): Arbor's
 * ring cell (compartments 20 -> 2, lengths 200 -> 20 um) with 10 levels and
 * branching probability 1 -> 0.2, 0.5 (Arbor's default) and 0.8. The soma is
 * one compartment; branches are numbered depth-first. */
NS_API ns_status ns_random_tree_preset(const char *name, ns_random_tree_params *params);
NS_API ns_status ns_generate_random_tree(const ns_random_tree_params *params, uint64_t seed,
                                         ns_tree_t **out);

#ifdef __cplusplus
}
#endif
#endif
