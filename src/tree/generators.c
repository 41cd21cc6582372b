/* Synthetic compartment trees (docs/generators.md):
 *   (i)   ns_generate_tree: exact size and exact number of unbranched runs;
 *   (ii)  ns_generate_binary_tree: the journal paper's binary-tree neurons;
 *   (iii) ns_generate_random_tree: random trees like Arbor's ring example.
 * Every generator numbers compartments so that each branch is contiguous and
 * parents come first (Hines order), and is deterministic for a seed (the
 * counter-based generator in core/rng.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/rng.h"
#include "neurosolve/tree.h"

/* A tree given as branches: branch b has len[b] compartments and hangs from
 * the last compartment of branch up[b] (-1 for the root branch); branches
 * are listed parents first. Numbers them contiguously in list order. */
static ns_status tree_from_branches(int32_t nb, const int32_t *up, const int32_t *len,
                                    ns_tree_t **out) {
    int64_t total = 0;
    for (int32_t b = 0; b < nb; ++b) total += len[b];
    if (total <= 0 || total > INT32_MAX / 2)
        return ns_fail(NS_ERR_SIZE, "generated tree of %lld compartments", (long long)total);
    int32_t *parent = malloc((size_t)total * sizeof *parent);
    int32_t *last = malloc((size_t)nb * sizeof *last);
    if (!parent || !last) {
        free(parent);
        free(last);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "generated tree of %lld compartments", (long long)total);
    }
    int32_t next = 0;
    for (int32_t b = 0; b < nb; ++b) {
        for (int32_t k = 0; k < len[b]; ++k, ++next)
            parent[next] = k > 0 ? next - 1 : (up[b] < 0 ? -1 : last[up[b]]);
        last[b] = next - 1;
    }
    ns_status st = ns_tree_create((int32_t)total, parent, out);
    free(parent);
    free(last);
    return st;
}

/* The same tree with its branches renumbered in depth-first preorder
 * (children in list order), so that a branch with a single child branch is
 * followed directly by it and the unbranched run stays contiguous. */
static ns_status tree_from_branches_preorder(int32_t nb, const int32_t *up, const int32_t *len,
                                             ns_tree_t **out) {
    int32_t *start = calloc((size_t)nb + 1, sizeof *start);
    int32_t *kids = malloc((size_t)nb * sizeof *kids);
    int32_t *stack = malloc((size_t)nb * sizeof *stack);
    int32_t *newid = malloc((size_t)nb * sizeof *newid);
    int32_t *up2 = malloc((size_t)nb * sizeof *up2);
    int32_t *len2 = malloc((size_t)nb * sizeof *len2);
    ns_status st;
    if (!start || !kids || !stack || !newid || !up2 || !len2) {
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "tree of %d branches", (int)nb);
        goto done;
    }
    for (int32_t b = 1; b < nb; ++b) start[up[b] + 1]++;
    for (int32_t b = 0; b < nb; ++b) start[b + 1] += start[b];
    for (int32_t b = 0; b < nb; ++b) newid[b] = start[b]; /* fill cursor, then the new ids */
    for (int32_t b = 1; b < nb; ++b) kids[newid[up[b]]++] = b;
    int32_t top = 0, m = 0;
    stack[top++] = 0;
    while (top > 0) {
        int32_t b = stack[--top];
        newid[b] = m;
        up2[m] = up[b] < 0 ? -1 : newid[up[b]];
        len2[m] = len[b];
        ++m;
        for (int32_t k = start[b + 1] - 1; k >= start[b]; --k) stack[top++] = kids[k];
    }
    st = tree_from_branches(nb, up2, len2, out);
done:
    free(start); free(kids); free(stack); free(newid); free(up2); free(len2);
    return st;
}

/* ------------------------------------------------ (i) size and branches */

ns_status ns_generate_tree(int32_t size, int32_t branches, uint64_t seed, ns_tree_t **out) {
    if (!out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_generate_tree: out is NULL");
    *out = NULL;
    if (size < 1) return ns_fail(NS_ERR_SIZE, "generate tree: size %d must be >= 1", (int)size);
    if (branches < 1 || branches > size)
        return ns_fail(NS_ERR_SIZE, "generate tree: %d branches needs 1 <= branches <= size = %d",
                       (int)branches, (int)size);
    if (branches == 2)
        return ns_fail(NS_ERR_SIZE, "generate tree: 2 branches is impossible (a branch point makes "
                       "at least 2 new runs besides the root's)");
    /* branches = 1 + 2 * (binary branch points) [+ 3 for one trifurcation
     * when the count is even] */
    const int32_t tri = branches % 2 == 0;
    const int32_t splits = tri ? (branches - 4) / 2 + 1 : (branches - 1) / 2;
    int32_t *up = malloc((size_t)branches * sizeof *up);
    int32_t *len = malloc((size_t)branches * sizeof *len);
    int32_t *leaves = malloc((size_t)branches * sizeof *leaves);
    ns_status st;
    if (!up || !len || !leaves) {
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "generate tree: %d branches", (int)branches);
        goto done;
    }
    ns_rng rng;
    ns_rng_seed(&rng, seed, 0x7472656555ULL);
    /* grow the branch tree: split a uniformly chosen leaf branch into 2
     * (once into 3 when the count is even) */
    int32_t nb = 1, nleaves = 1;
    up[0] = -1;
    leaves[0] = 0;
    int32_t tri_at = tri ? (int32_t)ns_rng_below(&rng, (uint64_t)splits) : -1;
    for (int32_t s = 0; s < splits; ++s) {
        int32_t li = (int32_t)ns_rng_below(&rng, (uint64_t)nleaves);
        int32_t b = leaves[li];
        int32_t k = s == tri_at ? 3 : 2;
        leaves[li] = leaves[--nleaves];
        for (int32_t c = 0; c < k; ++c) {
            up[nb] = b;
            leaves[nleaves++] = nb++;
        }
    }
    /* every branch gets one compartment, the rest go to uniformly chosen branches */
    for (int32_t b = 0; b < nb; ++b) len[b] = 1;
    for (int32_t r = size - nb; r > 0; --r) len[ns_rng_below(&rng, (uint64_t)nb)]++;
    st = tree_from_branches_preorder(nb, up, len, out);
done:
    free(up);
    free(len);
    free(leaves);
    return st;
}

static const struct {
    const char *name;
    int32_t size, branches;
} paper_trees[] = {
    {"small-low", 76, 7},     {"small-high", 76, 29},    {"medium-low", 305, 30},
    {"medium-high", 319, 157}, {"big-low", 695, 66},      {"big-high", 691, 341},
};

ns_status ns_generate_paper_tree(const char *name, uint64_t seed, ns_tree_t **out) {
    if (!out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_generate_paper_tree: out is NULL");
    *out = NULL;
    if (!name) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_generate_paper_tree: name is NULL");
    for (size_t i = 0; i < sizeof paper_trees / sizeof paper_trees[0]; ++i)
        if (strcmp(name, paper_trees[i].name) == 0)
            return ns_generate_tree(paper_trees[i].size, paper_trees[i].branches, seed, out);
    return ns_fail(NS_ERR_INVALID_ARGUMENT,
                   "unknown paper tree '%s' (small-low, small-high, medium-low, medium-high, "
                   "big-low, big-high)", name);
}

/* ------------------------------------------------ (ii) binary trees */

ns_status ns_generate_binary_tree(int32_t size, int32_t levels, ns_tree_t **out) {
    if (!out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_generate_binary_tree: out is NULL");
    *out = NULL;
    if (levels < 1 || levels > 20)
        return ns_fail(NS_ERR_SIZE, "binary tree: %d levels must be in [1, 20]", (int)levels);
    if (size < 1) return ns_fail(NS_ERR_SIZE, "binary tree: size %d must be >= 1", (int)size);
    /* level 0 is one branch of about half the size; levels 1..L-1 share the
     * other half equally, level k as 2^k branches of equal length
     * floor((size/2) / ((L-1) 2^k)); the root branch takes the remainder */
    const int32_t nb = (int32_t)((1L << levels) - 1);
    int32_t *up = malloc((size_t)nb * sizeof *up);
    int32_t *len = malloc((size_t)nb * sizeof *len);
    if (!up || !len) {
        free(up);
        free(len);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "binary tree of %d branches", (int)nb);
    }
    int64_t used = 0;
    for (int32_t k = 1; k < levels; ++k) {
        int64_t bl = (int64_t)(size / 2) / ((int64_t)(levels - 1) << k);
        if (bl < 1) {
            free(up);
            free(len);
            return ns_fail(NS_ERR_SIZE, "binary tree: size %d is too small for %d levels (level %d "
                           "branches would be empty)", (int)size, (int)levels, (int)k);
        }
        for (int32_t j = 0; j < (1 << k); ++j) {
            int32_t b = (1 << k) - 1 + j; /* breadth-first: level k starts at 2^k - 1 */
            up[b] = ((1 << (k - 1)) - 1) + j / 2;
            len[b] = (int32_t)bl;
            used += bl;
        }
    }
    up[0] = -1;
    len[0] = (int32_t)(size - used);
    ns_status st = tree_from_branches(nb, up, len, out);
    free(up);
    free(len);
    return st;
}

/* ------------------------------------------------ (iii) Arbor-like random trees */

ns_status ns_random_tree_preset(const char *name, ns_random_tree_params *p) {
    if (!name || !p) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_random_tree_preset: NULL argument");
    /* Arbor's ring/busyring cell shape (depth 10 as in busyring's benchmark
     * inputs, compartments 20 -> 2, lengths 200 -> 20 um); the presets
     * differ only in the branching probability at the deepest level */
    p->max_levels = 10;
    p->branch_prob_start = 1.0;
    p->compartments_start = 20;
    p->compartments_end = 2;
    p->length_start = 200.0;
    p->length_end = 20.0;
    if (strcmp(name, "low") == 0) p->branch_prob_end = 0.2;
    else if (strcmp(name, "medium") == 0) p->branch_prob_end = 0.5; /* Arbor's default */
    else if (strcmp(name, "high") == 0) p->branch_prob_end = 0.8;
    else return ns_fail(NS_ERR_INVALID_ARGUMENT, "unknown random tree preset '%s' (low, medium, high)", name);
    return NS_OK;
}

#define RANDOM_TREE_MAX 50000000 /* compartments: refuse presets that explode */

ns_status ns_generate_random_tree(const ns_random_tree_params *p, uint64_t seed, ns_tree_t **out) {
    if (!out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_generate_random_tree: out is NULL");
    *out = NULL;
    if (!p) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_generate_random_tree: params is NULL");
    if (p->max_levels < 0 || p->max_levels > 64)
        return ns_fail(NS_ERR_SIZE, "random tree: max_levels %d must be in [0, 64]", (int)p->max_levels);
    if (!(p->branch_prob_start >= 0.0 && p->branch_prob_start <= 1.0) ||
        !(p->branch_prob_end >= 0.0 && p->branch_prob_end <= 1.0))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "random tree: branch probabilities %g, %g must be in [0, 1]",
                       p->branch_prob_start, p->branch_prob_end);
    if (p->compartments_start < 1 || p->compartments_end < 1)
        return ns_fail(NS_ERR_SIZE, "random tree: compartments per branch %d, %d must be >= 1",
                       (int)p->compartments_start, (int)p->compartments_end);
    if (!(p->length_start > 0.0) || !(p->length_end > 0.0))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "random tree: lengths %g, %g um must be > 0",
                       p->length_start, p->length_end);
    ns_rng rng;
    ns_rng_seed(&rng, seed, 0x6172626f72ULL);
    int32_t cap = 1024, nb = 1, level_begin = 0, level_end = 1;
    int64_t total = 1;
    int32_t *up = malloc((size_t)cap * sizeof *up);
    int32_t *len = malloc((size_t)cap * sizeof *len);
    ns_status st = NS_OK;
    if (!up || !len) {
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "random tree");
        goto done;
    }
    up[0] = -1;
    len[0] = 1; /* the soma: one compartment */
    for (int32_t i = 0; i < p->max_levels; ++i) {
        /* Arbor interpolates linearly from the first to the last level */
        double t = p->max_levels > 1 ? (double)i / (p->max_levels - 1) : 0.0;
        double bp = p->branch_prob_start + t * (p->branch_prob_end - p->branch_prob_start);
        int32_t nc = (int32_t)lround(p->compartments_start + t * (p->compartments_end - p->compartments_start));
        if (nc < 1) nc = 1;
        for (int32_t b = level_begin; b < level_end; ++b)
            for (int j = 0; j < 2; ++j) {
                if (!(ns_rng_unit(&rng) < bp)) continue;
                if (nb == cap) {
                    int32_t *u2 = realloc(up, (size_t)cap * 2 * sizeof *up);
                    if (u2) up = u2;
                    int32_t *l2 = u2 ? realloc(len, (size_t)cap * 2 * sizeof *len) : NULL;
                    if (l2) len = l2;
                    if (!u2 || !l2) {
                        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "random tree of %d branches", (int)nb);
                        goto done;
                    }
                    cap *= 2;
                }
                up[nb] = b;
                len[nb] = nc;
                ++nb;
                total += nc;
                if (total > RANDOM_TREE_MAX) {
                    st = ns_fail(NS_ERR_SIZE, "random tree: more than %d compartments (max_levels %d)",
                                 RANDOM_TREE_MAX, (int)p->max_levels);
                    goto done;
                }
            }
        if (nb == level_end) break; /* no branch at this level: the tree is complete */
        level_begin = level_end;
        level_end = nb;
    }
    st = tree_from_branches_preorder(nb, up, len, out);
done:
    free(up);
    free(len);
    return st;
}
