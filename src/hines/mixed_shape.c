/* Mixed-shape planning, part 1: re-root each shape at its centre, renumber
 * it branch by branch (breadth first) and split long branches per level
 * (mixed_plan.h; the Arbor report, section 6). */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "hines/mixed_plan.h"
#include "tree/tree_impl.h"

/* The branch arrays of a shape (decompose's output). */
static void free_branches(ns_mixed_shape *m) {
    free(m->br_start);
    free(m->br_len);
    free(m->br_parent);
    free(m->br_level);
    free(m->child_begin);
    free(m->child);
}

void ns_mixed_shapes_free(ns_mixed_shapes *s) {
    if (!s || !s->shape) return;
    for (int32_t k = 0; k < s->count; ++k) {
        ns_mixed_shape *m = &s->shape[k];
        free(m->perm);
        free(m->parent);
        free(m->edge);
        free_branches(m);
    }
    free(s->shape);
    s->shape = NULL;
    s->count = 0;
}

/* Undirected adjacency (CSR) of a parent array. */
typedef struct {
    int32_t *begin, *adj;
} adjacency;

static int adjacency_build(int32_t n, const int32_t *parent, adjacency *g) {
    g->begin = calloc((size_t)n + 1, sizeof *g->begin);
    g->adj = malloc((size_t)(n > 1 ? 2 * (n - 1) : 1) * sizeof *g->adj);
    int32_t *fill = malloc((size_t)n * sizeof *fill);
    if (!g->begin || !g->adj || !fill) {
        free(fill);
        return 0;
    }
    for (int32_t i = 1; i < n; ++i) {
        g->begin[i + 1]++;
        g->begin[parent[i] + 1]++;
    }
    for (int32_t i = 0; i < n; ++i) g->begin[i + 1] += g->begin[i];
    memcpy(fill, g->begin, (size_t)n * sizeof *fill);
    for (int32_t i = 1; i < n; ++i) {
        g->adj[fill[i]++] = parent[i];
        g->adj[fill[parent[i]]++] = i;
    }
    free(fill);
    return 1;
}

/* Breadth-first search from `src`: pred[] (pred[src] = -1) and the
 * farthest node (the last one reached). `queue` holds n entries. */
static int32_t bfs(int32_t n, const adjacency *g, int32_t src, int32_t *pred, int32_t *queue) {
    for (int32_t i = 0; i < n; ++i) pred[i] = -2; /* unvisited */
    int32_t head = 0, tail = 0;
    queue[tail++] = src;
    pred[src] = -1;
    while (head < tail) {
        const int32_t v = queue[head++];
        for (int32_t e = g->begin[v]; e < g->begin[v + 1]; ++e)
            if (pred[g->adj[e]] == -2) {
                pred[g->adj[e]] = v;
                queue[tail++] = g->adj[e];
            }
    }
    return queue[tail - 1];
}

/* The centre of the tree: the middle node of a longest path (two searches;
 * its eccentricity is ceil(diameter / 2), the least possible). */
static int32_t centre(int32_t n, const adjacency *g, int32_t *pred, int32_t *queue) {
    const int32_t u = bfs(n, g, 0, pred, queue);
    const int32_t v = bfs(n, g, u, pred, queue);
    int32_t len = 0;
    for (int32_t w = v; pred[w] >= 0; w = pred[w]) ++len;
    int32_t w = v;
    for (int32_t k = 0; k < len / 2; ++k) w = pred[w];
    return w;
}

/* Renumber shape `t` from `root`: nodes of a branch contiguous, branches
 * breadth first. Fills m->perm, m->parent, m->edge. */
static ns_status renumber(const ns_tree_t *t, int32_t root, const adjacency *g, ns_mixed_shape *m,
                          int32_t *rpar, int32_t *queue) {
    const int32_t n = t->size;
    const int32_t *op = t->parent;
    (void)bfs(n, g, root, rpar, queue); /* rpar: parent in the re-rooted tree (old numbering) */
    int32_t *newidx = malloc((size_t)n * sizeof *newidx);
    int32_t *bq = malloc((size_t)n * sizeof *bq); /* queue of branch first nodes */
    if (!newidx || !bq) {
        free(newidx);
        free(bq);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "re-rooting a shape of %d compartments", (int)n);
    }
    int32_t next = 0, head = 0, tail = 0;
    bq[tail++] = root;
    while (head < tail) {
        int32_t v = bq[head++];
        for (;;) {
            m->perm[next] = v;
            newidx[v] = next++;
            int32_t only = -1, kids = 0;
            for (int32_t e = g->begin[v]; e < g->begin[v + 1]; ++e)
                if (g->adj[e] != rpar[v]) {
                    only = g->adj[e];
                    ++kids;
                }
            if (kids != 1) {
                for (int32_t e = g->begin[v]; e < g->begin[v + 1]; ++e)
                    if (g->adj[e] != rpar[v]) bq[tail++] = g->adj[e];
                break;
            }
            v = only;
        }
    }
    for (int32_t k = 0; k < n; ++k) {
        const int32_t o = m->perm[k], q = rpar[o];
        if (q < 0) {
            m->parent[k] = -1;
            m->edge[k] = -1;
        } else {
            m->parent[k] = newidx[q];
            /* Edge (o, q): kept if q was o's parent, else flipped: the
             * values live at q (whose parent was o) with a and b swapped. */
            m->edge[k] = q == op[o] ? 2 * o : 2 * q + 1;
        }
    }
    free(newidx);
    free(bq);
    return NS_OK;
}

/* Cut the renumbered shape into branches: node k starts one at the root,
 * at a cut, or where k - 1 is not its only-child parent. */
static ns_status decompose(ns_mixed_shape *m, const int32_t *nchild, const unsigned char *cut) {
    const int32_t n = m->n;
    int32_t nb = 0;
    for (int32_t k = 0; k < n; ++k)
        if (k == 0 || cut[k] || m->parent[k] != k - 1 || nchild[k - 1] != 1) ++nb;
    free_branches(m);
    m->br_start = malloc((size_t)nb * sizeof(int32_t));
    m->br_len = malloc((size_t)nb * sizeof(int32_t));
    m->br_parent = malloc((size_t)nb * sizeof(int32_t));
    m->br_level = malloc((size_t)nb * sizeof(int32_t));
    m->child_begin = calloc((size_t)nb + 1, sizeof(int32_t));
    m->child = malloc((size_t)nb * sizeof(int32_t));
    int32_t *branch_of = malloc((size_t)n * sizeof(int32_t));
    if (!m->br_start || !m->br_len || !m->br_parent || !m->br_level || !m->child_begin ||
        !m->child || !branch_of) {
        free(branch_of);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "branches of a shape of %d compartments", (int)n);
    }
    m->n_branches = nb;
    m->n_levels = 0;
    int32_t b = -1;
    for (int32_t k = 0; k < n; ++k) {
        if (k == 0 || cut[k] || m->parent[k] != k - 1 || nchild[k - 1] != 1) {
            ++b;
            m->br_start[b] = k;
            m->br_len[b] = 0;
            /* The parent node is the last node of an earlier branch. */
            m->br_parent[b] = k == 0 ? -1 : branch_of[m->parent[k]];
            m->br_level[b] = k == 0 ? 0 : m->br_level[m->br_parent[b]] + 1;
            if (m->br_level[b] + 1 > m->n_levels) m->n_levels = m->br_level[b] + 1;
        }
        branch_of[k] = b;
        m->br_len[b]++;
    }
    for (b = 1; b < nb; ++b) m->child_begin[m->br_parent[b] + 1]++;
    for (b = 0; b < nb; ++b) m->child_begin[b + 1] += m->child_begin[b];
    int32_t *fill = branch_of; /* reuse: n >= nb */
    memcpy(fill, m->child_begin, (size_t)nb * sizeof *fill);
    for (b = 1; b < nb; ++b) m->child[fill[m->br_parent[b]]++] = b;
    free(branch_of);
    return NS_OK;
}

ns_status ns_mixed_shapes_build(const ns_batch_t *batch, const ns_mixed_plan_options *o,
                                ns_mixed_shapes *out) {
    memset(out, 0, sizeof *out);
    const int32_t ns = batch->n_shapes;
    out->shape = calloc((size_t)ns, sizeof *out->shape);
    double *weight = calloc((size_t)ns, sizeof *weight); /* cells of each shape */
    unsigned char **cut = calloc((size_t)ns, sizeof *cut);
    int32_t **nchild = calloc((size_t)ns, sizeof *nchild);
    if (!out->shape || !weight || !cut || !nchild) {
        free(out->shape);
        free(weight);
        free(cut);
        free(nchild);
        out->shape = NULL;
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "planning %d shapes", (int)ns);
    }
    out->count = ns;
    for (int64_t c = 0; c < batch->n_cells; ++c) weight[batch->cell_shape[c]] += 1.0;
    ns_status st = NS_OK;
    for (int32_t s = 0; s < ns && st == NS_OK; ++s) {
        const ns_tree_t *t = batch->shapes[s];
        ns_mixed_shape *m = &out->shape[s];
        const int32_t n = t->size;
        m->n = n;
        m->perm = malloc((size_t)n * sizeof(int32_t));
        m->parent = malloc((size_t)n * sizeof(int32_t));
        m->edge = malloc((size_t)n * sizeof(int32_t));
        cut[s] = calloc((size_t)n, 1);
        nchild[s] = calloc((size_t)n, sizeof(int32_t));
        int32_t *rpar = malloc((size_t)n * sizeof(int32_t)), *queue = malloc((size_t)n * sizeof(int32_t));
        adjacency g = {NULL, NULL};
        if (!m->perm || !m->parent || !m->edge || !cut[s] || !nchild[s] || !rpar || !queue ||
            !adjacency_build(n, t->parent, &g)) {
            st = ns_fail(NS_ERR_OUT_OF_MEMORY, "planning shape %d (%d compartments)", (int)s, (int)n);
        } else {
            m->root_old = o->reroot ? centre(n, &g, rpar, queue) : 0;
            st = renumber(t, m->root_old, &g, m, rpar, queue);
        }
        if (st == NS_OK) {
            for (int32_t k = 1; k < n; ++k) nchild[s][m->parent[k]]++;
            st = decompose(m, nchild[s], cut[s]);
        }
        free(rpar);
        free(queue);
        free(g.begin);
        free(g.adj);
    }
    /* Split per level, root level first: a cut moves everything below it
     * one level down, so a level's branches are final only once the levels
     * above it are done. */
    for (int32_t level = 0; o->split && st == NS_OK; ++level) {
        double sum = 0.0, count = 0.0;
        int any = 0;
        for (int32_t s = 0; s < ns; ++s) {
            const ns_mixed_shape *m = &out->shape[s];
            for (int32_t b = 0; b < m->n_branches; ++b)
                if (m->br_level[b] == level) {
                    any = 1;
                    sum += weight[s] * m->br_len[b];
                    count += weight[s];
                }
        }
        if (!any) break;
        if (count <= 0.0) continue;
        const int32_t head = (int32_t)(sum / count + 0.999999); /* ceil(average), >= 1 */
        for (int32_t s = 0; s < ns && st == NS_OK; ++s) {
            ns_mixed_shape *m = &out->shape[s];
            int changed = 0;
            for (int32_t b = 0; b < m->n_branches; ++b)
                if (m->br_level[b] == level && m->br_len[b] > head) {
                    cut[s][m->br_start[b] + head] = 1;
                    changed = 1;
                }
            if (changed) st = decompose(m, nchild[s], cut[s]);
        }
    }
    for (int32_t s = 0; s < ns; ++s) {
        free(cut[s]);
        free(nchild[s]);
    }
    free(cut);
    free(nchild);
    free(weight);
    if (st != NS_OK) ns_mixed_shapes_free(out);
    return st;
}
