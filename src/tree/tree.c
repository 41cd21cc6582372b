/* Compartment trees: validation and statistics. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tree/tree_impl.h"

ns_status ns_tree_create(int32_t size, const int32_t *parent, ns_tree_t **out) {
    if (!out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_tree_create: out is NULL");
    *out = NULL;
    if (size <= 0) return ns_fail(NS_ERR_EMPTY, "a tree needs at least one compartment (size = %d)", (int)size);
    if (!parent) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_tree_create: parent is NULL");
    if (parent[0] != -1)
        return ns_fail(NS_ERR_TOPOLOGY, "compartment 0 must be the root (parent -1), has parent %d", (int)parent[0]);
    for (int32_t i = 1; i < size; ++i)
        if (parent[i] < 0 || parent[i] >= i)
            return ns_fail(NS_ERR_TOPOLOGY,
                           "compartment %d has parent %d: Hines order needs 0 <= parent < index",
                           (int)i, (int)parent[i]);
    ns_tree_t *t = calloc(1, sizeof *t);
    int32_t *p = malloc((size_t)size * sizeof *p);
    if (!t || !p) {
        free(t);
        free(p);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "tree of %d compartments", (int)size);
    }
    memcpy(p, parent, (size_t)size * sizeof *p);
    t->size = size;
    t->parent = p;
    *out = t;
    return NS_OK;
}

void ns_tree_destroy(ns_tree_t *tree) {
    if (!tree) return;
    free(tree->parent);
    free(tree);
}

int32_t ns_tree_size(const ns_tree_t *tree) { return tree ? tree->size : 0; }
const int32_t *ns_tree_parent(const ns_tree_t *tree) { return tree ? tree->parent : NULL; }

void ns_tree_get_stats(const ns_tree_t *tree, ns_tree_stats *stats) {
    if (!stats) return;
    memset(stats, 0, sizeof *stats);
    if (!tree) return;
    const int32_t n = tree->size;
    const int32_t *p = tree->parent;
    int32_t *children = calloc((size_t)n, sizeof *children);
    int32_t *depth = malloc((size_t)n * sizeof *depth);        /* compartments from the root */
    int32_t *bdepth = malloc((size_t)n * sizeof *bdepth);      /* branches from the root */
    if (!children || !depth || !bdepth) {
        free(children); free(depth); free(bdepth);
        stats->size = n;
        return;
    }
    for (int32_t i = 1; i < n; ++i) children[p[i]]++;
    stats->size = n;
    for (int32_t i = 0; i < n; ++i) {
        if (children[i] >= 2) stats->branch_points++;
        if (children[i] == 0) stats->leaves++;
    }
    /* A branch starts at the root and at every child of a node that does not
     * have exactly one child (a branch point). */
    for (int32_t i = 0; i < n; ++i) {
        if (i == 0) {
            depth[0] = 1;
            bdepth[0] = 1;
            stats->branches = 1;
        } else {
            depth[i] = depth[p[i]] + 1;
            int starts = children[p[i]] != 1;
            bdepth[i] = bdepth[p[i]] + starts;
            stats->branches += starts;
        }
        if (depth[i] > stats->depth) stats->depth = depth[i];
        if (bdepth[i] > stats->branch_depth) stats->branch_depth = bdepth[i];
    }
    free(children);
    free(depth);
    free(bdepth);
}
