/* SWC records -> one checked tree in depth-first preorder.
 *
 * Every stage is O(n) (or O(n log n) for the sort of sparse ids):
 *   1. id -> index: a direct table when the ids are dense (the usual case),
 *      else a sorted (id, index) array searched by bisection;
 *   2. parent ids -> parent indices (missing parents, self-parents);
 *   3. children lists (CSR, children in file order);
 *   4. depth-first preorder from every root in file order; points that no
 *      root reaches lie on or hang from a cycle;
 *   5. the root policy picks one tree, which is moved to the front in place.
 * Preorder puts every parent before its children and keeps each unbranched
 * run contiguous (a point's only child comes right after it), which is the
 * Hines order the discretisation wants. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "morph/swc_impl.h"

typedef struct id_pair {
    int64_t id;
    int32_t index;
} id_pair;

typedef struct id_map {
    int64_t min_id;
    int64_t range;     /* dense: table entries */
    int32_t *table;    /* dense: index or -1 */
    id_pair *pairs;    /* sparse: sorted by (id, index) */
    int64_t n;
} id_map;

static int pair_cmp(const void *a, const void *b) {
    const id_pair *p = a, *q = b;
    if (p->id != q->id) return p->id < q->id ? -1 : 1;
    return (p->index > q->index) - (p->index < q->index);
}

static void id_map_free(id_map *m) {
    free(m->table);
    free(m->pairs);
    m->table = NULL;
    m->pairs = NULL;
}

static ns_status duplicate(const swc_records *rec, int32_t first, int32_t second) {
    return ns_fail(NS_ERR_TOPOLOGY, "%s:%lld: duplicate id %lld (also on line %lld)", rec->name,
                   (long long)rec->pts[second].line, (long long)rec->pts[second].id,
                   (long long)rec->pts[first].line);
}

/* Build the map; reports the duplicate whose second occurrence comes first
 * in the file (the same one in the dense and the sparse path). */
static ns_status id_map_build(const swc_records *rec, id_map *m) {
    int64_t n = rec->n, lo = rec->pts[0].id, hi = lo;
    for (int64_t i = 1; i < n; ++i) {
        if (rec->pts[i].id < lo) lo = rec->pts[i].id;
        if (rec->pts[i].id > hi) hi = rec->pts[i].id;
    }
    memset(m, 0, sizeof *m);
    m->min_id = lo;
    m->n = n;
    /* Dense table when it costs at most about 2 ints per point. */
    if ((uint64_t)(hi - lo) <= (uint64_t)(2 * n + 1024)) {
        m->range = hi - lo + 1;
        m->table = malloc((size_t)m->range * sizeof *m->table);
        if (!m->table) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: id table", rec->name);
        memset(m->table, 0xff, (size_t)m->range * sizeof *m->table); /* all -1 */
        for (int64_t i = 0; i < n; ++i) {
            int32_t *slot = &m->table[rec->pts[i].id - lo];
            if (*slot >= 0) return duplicate(rec, *slot, (int32_t)i);
            *slot = (int32_t)i;
        }
        return NS_OK;
    }
    m->pairs = malloc((size_t)n * sizeof *m->pairs);
    if (!m->pairs) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: id index", rec->name);
    for (int64_t i = 0; i < n; ++i) {
        m->pairs[i].id = rec->pts[i].id;
        m->pairs[i].index = (int32_t)i;
    }
    qsort(m->pairs, (size_t)n, sizeof *m->pairs, pair_cmp);
    int32_t best_first = -1, best_second = -1;
    for (int64_t i = 1; i < n; ++i) {
        /* In a run of equal ids, pairs[start] is the first occurrence and
         * pairs[start + 1] the second; only that pair can be the earliest. */
        if (m->pairs[i].id == m->pairs[i - 1].id && (i < 2 || m->pairs[i - 2].id != m->pairs[i].id)) {
            if (best_second < 0 || m->pairs[i].index < best_second) {
                best_first = m->pairs[i - 1].index;
                best_second = m->pairs[i].index;
            }
        }
    }
    if (best_second >= 0) return duplicate(rec, best_first, best_second);
    return NS_OK;
}

static int32_t id_map_find(const id_map *m, int64_t id) {
    if (m->table) {
        int64_t k = id - m->min_id;
        return (k >= 0 && k < m->range) ? m->table[k] : -1;
    }
    int64_t a = 0, b = m->n; /* first pair with pairs[k].id >= id */
    while (a < b) {
        int64_t mid = a + (b - a) / 2;
        if (m->pairs[mid].id < id) a = mid + 1;
        else b = mid;
    }
    return (a < m->n && m->pairs[a].id == id) ? m->pairs[a].index : -1;
}

/* pts[i].parent <- index of the parent id (file order still). */
static ns_status resolve_parents(swc_records *rec) {
    id_map m;
    ns_status st = id_map_build(rec, &m);
    for (int64_t i = 0; st == NS_OK && i < rec->n; ++i) {
        ns_morph_point *p = &rec->pts[i];
        int64_t pid = rec->pid[i];
        if (pid < 0) {
            p->parent = -1;
        } else if (pid == p->id) {
            st = ns_fail(NS_ERR_TOPOLOGY, "%s:%lld: point %lld is its own parent", rec->name,
                         (long long)p->line, (long long)p->id);
        } else {
            int32_t k = id_map_find(&m, pid);
            if (k < 0)
                st = ns_fail(NS_ERR_TOPOLOGY, "%s:%lld: parent %lld of point %lld does not exist",
                             rec->name, (long long)p->line, (long long)pid, (long long)p->id);
            p->parent = k;
        }
    }
    id_map_free(&m);
    free(rec->pid);
    rec->pid = NULL;
    return st;
}

/* Points no root reaches: walk parents from the first of them (in file
 * order) until a point repeats, and name the cycle. */
static ns_status report_cycle(const swc_records *rec, int32_t *mark) {
    int32_t v = 0;
    while (mark[v] >= 0) ++v; /* mark[v] = preorder position, -1 unvisited */
    while (mark[v] != -2) {
        mark[v] = -2;
        v = rec->pts[v].parent;
    }
    /* v is on the cycle: list it from the point with the smallest line. */
    int32_t start = v, u = rec->pts[v].parent;
    int64_t length = 1;
    while (u != v) {
        if (rec->pts[u].line < rec->pts[start].line) start = u;
        u = rec->pts[u].parent;
        ++length;
    }
    char text[256];
    size_t k = 0;
    u = start;
    for (int64_t step = 0; step <= length && k < sizeof text - 40; ++step) {
        k += (size_t)snprintf(text + k, sizeof text - k, "%s%lld", step ? " -> " : "",
                              (long long)rec->pts[u].id);
        u = rec->pts[u].parent;
    }
    if (k >= sizeof text - 40) snprintf(text + k, sizeof text - k, " -> ...");
    return ns_fail(NS_ERR_TOPOLOGY, "%s:%lld: cycle of %lld points: id %s (point -> its parent)",
                   rec->name, (long long)rec->pts[start].line, (long long)length, text);
}

/* Apply out[j] = pts[perm[j]] in place by following the permutation's
 * cycles; perm is consumed (every entry ends as its own index). */
static void permute(ns_morph_point *pts, int32_t *perm, int64_t n) {
    for (int64_t s = 0; s < n; ++s) {
        if (perm[s] == s) continue;
        ns_morph_point held = pts[s];
        int64_t j = s;
        for (;;) {
            int64_t k = perm[j];
            perm[j] = (int32_t)j;
            if (k == s) {
                pts[j] = held;
                break;
            }
            pts[j] = pts[k];
            j = k;
        }
    }
}

typedef struct tree_choice {
    int64_t start, size, soma; /* the chosen tree's range in preorder */
    int64_t roots;
    int64_t root_line[2];      /* lines of the first two roots */
} tree_choice;

/* Keep the tree with the most soma points; ties, and files without soma
 * points, go to the larger tree; full ties to the earlier root. */
static void consider(tree_choice *c, int64_t start, int64_t size, int64_t soma) {
    if (c->roots == 1 || soma > c->soma || (soma == c->soma && size > c->size)) {
        c->start = start;
        c->size = size;
        c->soma = soma;
    }
}

ns_status swc_build_tree(swc_records *rec, ns_root_policy policy, swc_tree_result *result) {
    int64_t n = rec->n;
    ns_status st = resolve_parents(rec);
    if (st != NS_OK) return st;

    int32_t *first = malloc((size_t)(n + 1) * sizeof *first); /* CSR offsets */
    int32_t *child = malloc((size_t)n * sizeof *child);
    int32_t *order = malloc((size_t)n * sizeof *order);
    int32_t *work = malloc((size_t)n * sizeof *work); /* DFS stack, then the permutation */
    int32_t *mark = malloc((size_t)n * sizeof *mark); /* preorder position, -1 unvisited */
    if (!first || !child || !order || !work || !mark) {
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: tree of %lld points", rec->name, (long long)n);
        goto done;
    }
    memset(first, 0, (size_t)(n + 1) * sizeof *first);
    for (int64_t i = 0; i < n; ++i)
        if (rec->pts[i].parent >= 0) first[rec->pts[i].parent + 1]++;
    for (int64_t i = 0; i < n; ++i) first[i + 1] += first[i];
    memcpy(work, first, (size_t)n * sizeof *work); /* fill cursors */
    for (int64_t i = 0; i < n; ++i) {
        int32_t p = rec->pts[i].parent;
        if (p >= 0) child[work[p]++] = (int32_t)i;
    }

    tree_choice c;
    memset(&c, 0, sizeof c);
    memset(mark, 0xff, (size_t)n * sizeof *mark);
    int64_t k = 0;
    for (int64_t r = 0; r < n; ++r) {
        if (rec->pts[r].parent >= 0) continue;
        if (c.roots < 2) c.root_line[c.roots] = rec->pts[r].line;
        c.roots++;
        int64_t start = k, soma = 0, top = 0;
        work[top++] = (int32_t)r;
        while (top > 0) {
            int32_t v = work[--top];
            mark[v] = (int32_t)k;
            order[k++] = v;
            if (rec->pts[v].type == NS_SWC_SOMA) soma++;
            for (int32_t e = first[v + 1]; e > first[v]; --e) work[top++] = child[e - 1];
        }
        consider(&c, start, k - start, soma);
    }
    if (k < n) {
        st = report_cycle(rec, mark);
        goto done;
    }
    if (policy == NS_ROOTS_REJECT && c.roots > 1) {
        st = ns_fail(NS_ERR_TOPOLOGY,
                     "%s: %lld roots (parent -1 on lines %lld, %lld, ...): the file holds %lld trees "
                     "and the root policy is reject",
                     rec->name, (long long)c.roots, (long long)c.root_line[0],
                     (long long)c.root_line[1], (long long)c.roots);
        goto done;
    }

    /* New index j holds old point perm[j]: the kept tree first, in
     * preorder, then the dropped points. */
    int32_t *perm = work;
    int64_t j = 0;
    for (int64_t q = c.start; q < c.start + c.size; ++q) perm[j++] = order[q];
    for (int64_t q = 0; q < n; ++q)
        if (q < c.start || q >= c.start + c.size) perm[j++] = order[q];
    for (j = 0; j < n; ++j) mark[perm[j]] = (int32_t)j; /* old -> new */
    for (j = 0; j < c.size; ++j) {
        ns_morph_point *p = &rec->pts[perm[j]];
        if (p->parent >= 0) p->parent = mark[p->parent];
    }
    permute(rec->pts, perm, n);
    if (c.size < n) {
        ns_morph_point *shrunk = realloc(rec->pts, (size_t)c.size * sizeof *shrunk);
        if (shrunk) rec->pts = shrunk;
    }
    rec->n = c.size;
    rec->cap = c.size;
    result->roots = c.roots;
    result->kept = c.size;

done:
    free(first);
    free(child);
    free(order);
    free(work);
    free(mark);
    return st;
}
