/* Mixed-shape planning, part 2: pack cells into groups and place every
 * compartment in the jagged-interleaved per-level storage (mixed_plan.h). */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "hines/mixed_plan.h"
#include "tree/tree_impl.h"

void ns_mixed_layout_free(ns_mixed_layout *l) {
    if (!l) return;
    free(l->gather);
    free(l->edge);
    free(l->group_level);
    free(l->levels);
    free(l->rowoff);
    free(l->br_len);
    free(l->br_ppos);
    free(l->br_child);
    free(l->child_pos);
    memset(l, 0, sizeof *l);
}

/* A branch of a cell of the group being laid out. */
typedef struct {
    int32_t k;    /* cell within the group */
    int32_t b;    /* branch of the cell's shape */
    int32_t len;
} item;

/* Longest first; ties keep the cell order (stable), so equal cells of a
 * group take neighbouring slots. */
static void sort_items(item *v, int32_t n, int32_t max_len, int32_t *count) {
    if (n <= 48) {
        for (int32_t i = 1; i < n; ++i) {
            item x = v[i];
            int32_t j = i;
            while (j > 0 && v[j - 1].len < x.len) {
                v[j] = v[j - 1];
                --j;
            }
            v[j] = x;
        }
        return;
    }
    /* Counting sort by descending length; `count` has max_len + 2 entries. */
    memset(count, 0, ((size_t)max_len + 2) * sizeof *count);
    for (int32_t i = 0; i < n; ++i) count[max_len - v[i].len + 1]++;
    for (int32_t L = 1; L <= max_len + 1; ++L) count[L] += count[L - 1];
    item *tmp = malloc((size_t)n * sizeof *tmp);
    if (!tmp) { /* fall back to the quadratic sort rather than fail */
        for (int32_t i = 1; i < n; ++i) {
            item x = v[i];
            int32_t j = i;
            while (j > 0 && v[j - 1].len < x.len) v[j] = v[j - 1], --j;
            v[j] = x;
        }
        return;
    }
    for (int32_t i = 0; i < n; ++i) tmp[count[max_len - v[i].len]++] = v[i];
    memcpy(v, tmp, (size_t)n * sizeof *v);
    free(tmp);
}

typedef struct {
    void *p;
    int64_t n, cap;
    size_t size;
} growable;

static void *grow(growable *g, int64_t more) {
    if (g->n + more > g->cap) {
        int64_t cap = g->cap ? g->cap : 64;
        while (cap < g->n + more) cap *= 2;
        void *q = realloc(g->p, (size_t)cap * g->size);
        if (!q) return NULL;
        g->p = q;
        g->cap = cap;
    }
    void *at = (char *)g->p + (size_t)g->n * g->size;
    g->n += more;
    return at;
}

/* Per-shape index: branches grouped by level. */
typedef struct {
    int32_t *begin; /* n_levels + 1 */
    int32_t *br;
    int32_t *per_level_max;
} by_level;

static int by_level_build(const ns_mixed_shape *m, by_level *x) {
    x->begin = calloc((size_t)m->n_levels + 1, sizeof(int32_t));
    x->br = malloc((size_t)m->n_branches * sizeof(int32_t));
    x->per_level_max = calloc((size_t)m->n_levels, sizeof(int32_t));
    if (!x->begin || !x->br || !x->per_level_max) return 0;
    for (int32_t b = 0; b < m->n_branches; ++b) x->begin[m->br_level[b] + 1]++;
    for (int32_t l = 0; l < m->n_levels; ++l) x->begin[l + 1] += x->begin[l];
    int32_t *fill = malloc((size_t)m->n_levels * sizeof(int32_t));
    if (!fill) return 0;
    memcpy(fill, x->begin, (size_t)m->n_levels * sizeof(int32_t));
    for (int32_t b = 0; b < m->n_branches; ++b) {
        const int32_t l = m->br_level[b];
        x->br[fill[l]++] = b;
        if (m->br_len[b] > x->per_level_max[l]) x->per_level_max[l] = m->br_len[b];
    }
    free(fill);
    return 1;
}

int64_t ns_mixed_cell_of(const ns_batch_t *batch, int64_t flat) {
    int64_t lo = 0, hi = batch->n_cells - 1;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo + 1) / 2;
        if (batch->cell_offset[mid] <= flat) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* Cells in packing order: shapes by decreasing size, cells of a shape in
 * batch order (equal cells side by side balance a group's levels). */
static int64_t *packing_order(const ns_batch_t *batch) {
    const int32_t ns = batch->n_shapes;
    int32_t *shape_rank = malloc((size_t)ns * sizeof *shape_rank);
    int64_t *start = calloc((size_t)ns + 1, sizeof *start);
    int64_t *order = malloc((size_t)batch->n_cells * sizeof *order);
    if (!shape_rank || !start || !order) {
        free(shape_rank);
        free(start);
        free(order);
        return NULL;
    }
    for (int32_t s = 0; s < ns; ++s) shape_rank[s] = s;
    for (int32_t i = 1; i < ns; ++i) { /* insertion sort: shapes are few */
        const int32_t x = shape_rank[i];
        int32_t j = i;
        while (j > 0 && batch->shapes[shape_rank[j - 1]]->size < batch->shapes[x]->size) {
            shape_rank[j] = shape_rank[j - 1];
            --j;
        }
        shape_rank[j] = x;
    }
    int32_t *rank_of = malloc((size_t)ns * sizeof *rank_of);
    if (!rank_of) {
        free(shape_rank);
        free(start);
        free(order);
        return NULL;
    }
    for (int32_t r = 0; r < ns; ++r) rank_of[shape_rank[r]] = r;
    for (int64_t c = 0; c < batch->n_cells; ++c) start[rank_of[batch->cell_shape[c]] + 1]++;
    for (int32_t r = 0; r < ns; ++r) start[r + 1] += start[r];
    for (int64_t c = 0; c < batch->n_cells; ++c) order[start[rank_of[batch->cell_shape[c]]]++] = c;
    free(rank_of);
    free(shape_rank);
    free(start);
    return order;
}

/* The state of one ns_mixed_layout_build. */
typedef struct {
    const ns_batch_t *batch;
    const ns_mixed_shapes *shapes;
    ns_mixed_layout *out;
    by_level *bl;     /* per shape */
    int64_t *order;   /* packing_order */
    int32_t max_levels, max_len;
    int64_t total_br;
    int32_t *acc;     /* max_levels: the chosen group's branches per level */
    int32_t *count;   /* max_len + 2: sort_items' counts */
    growable glev, grow_ro;
    /* Group-local scratch, grown as needed: first global branch of each
     * cell of the group, the items of one level, first/last positions. */
    int64_t *cell_br0, *first_pos, *last_pos;
    item *items, *g_items;
    int64_t scratch_cells, scratch_br;
    int64_t pos, gbr, gchild; /* placed so far: compartments, branches, children */
} builder;

/* The shapes' level indexes, the packing order and the layout's arrays. */
static ns_status builder_prepare(builder *B) {
    const ns_batch_t *batch = B->batch;
    const ns_mixed_shapes *shapes = B->shapes;
    ns_mixed_layout *out = B->out;
    const int32_t ns = batch->n_shapes;
    const int64_t n_cells = batch->n_cells;
    ns_status st = NS_OK;
    B->bl = calloc((size_t)ns, sizeof *B->bl);
    B->order = packing_order(batch);
    B->max_levels = 1;
    B->max_len = 1;
    if (!B->bl || !B->order) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "packing %lld cells", (long long)n_cells);
    for (int32_t s = 0; s < ns && st == NS_OK; ++s) {
        if (!by_level_build(&shapes->shape[s], &B->bl[s]))
            st = ns_fail(NS_ERR_OUT_OF_MEMORY, "levels of shape %d", (int)s);
        if (shapes->shape[s].n_levels > B->max_levels) B->max_levels = shapes->shape[s].n_levels;
        for (int32_t b = 0; b < shapes->shape[s].n_branches; ++b)
            if (shapes->shape[s].br_len[b] > B->max_len) B->max_len = shapes->shape[s].br_len[b];
    }
    for (int64_t c = 0; c < n_cells && st == NS_OK; ++c)
        B->total_br += shapes->shape[batch->cell_shape[c]].n_branches;
    const int64_t total_br = B->total_br;

    out->n_nodes = ns_batch_compartments(batch);
    out->n_branches = total_br;
    if (st == NS_OK) {
        out->gather = malloc((size_t)out->n_nodes * sizeof(int64_t));
        out->edge = malloc((size_t)out->n_nodes * sizeof(int64_t));
        out->br_len = malloc((size_t)total_br * sizeof(int32_t));
        out->br_ppos = malloc((size_t)total_br * sizeof(int64_t));
        out->br_child = malloc(((size_t)total_br + 1) * sizeof(int64_t));
        out->child_pos = malloc((size_t)(total_br - n_cells + 1) * sizeof(int64_t));
        out->group_level = malloc(((size_t)n_cells + 1) * sizeof(int32_t));
        if (!out->gather || !out->edge || !out->br_len || !out->br_ppos || !out->br_child ||
            !out->child_pos || !out->group_level)
            st = ns_fail(NS_ERR_OUT_OF_MEMORY, "layout of %lld compartments, %lld branches",
                         (long long)out->n_nodes, (long long)total_br);
    }
    B->acc = calloc((size_t)B->max_levels, sizeof *B->acc);
    B->count = malloc(((size_t)B->max_len + 2) * sizeof *B->count);
    if (st == NS_OK && (!B->acc || !B->count)) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "packing");
    return st;
}

/* The group's cells [c0, c1) of `order` (c1 returned): cells are added while
 * every level keeps at most `threads` branches and the group within
 * cells_per_group and max_group_nodes (<= 0: no limit); a group has at least
 * one cell. Its branches and levels in *group_br and *group_levels. */
static int64_t choose_group(builder *B, int64_t c0, int32_t threads, int64_t cells_per_group,
                            int64_t max_group_nodes, int64_t *group_br_out, int32_t *group_levels_out) {
    const ns_batch_t *batch = B->batch;
    const by_level *bl = B->bl;
    int32_t *acc = B->acc;
    memset(acc, 0, (size_t)B->max_levels * sizeof *acc);
    int64_t c1 = c0, group_br = 0, group_nodes = 0;
    int32_t group_levels = 0, overfull = 0; /* a lone cell wider than `threads` */
    while (c1 < batch->n_cells) {
        const int32_t s = batch->cell_shape[B->order[c1]];
        const ns_mixed_shape *m = &B->shapes->shape[s];
        if (c1 > c0 && threads > 0) {
            int fits = !overfull && (cells_per_group <= 0 || c1 - c0 < cells_per_group) &&
                       (max_group_nodes <= 0 || group_nodes + m->n <= max_group_nodes);
            for (int32_t l = 0; l < m->n_levels && fits; ++l)
                if (acc[l] + bl[s].begin[l + 1] - bl[s].begin[l] > threads) fits = 0;
            if (!fits) break;
        }
        for (int32_t l = 0; l < m->n_levels; ++l) {
            acc[l] += bl[s].begin[l + 1] - bl[s].begin[l];
            if (threads > 0 && acc[l] > threads) overfull = 1;
        }
        if (m->n_levels > group_levels) group_levels = m->n_levels;
        group_br += m->n_branches;
        group_nodes += m->n;
        ++c1;
    }
    *group_br_out = group_br;
    *group_levels_out = group_levels;
    return c1;
}

/* The group scratch for gcells cells of group_br branches. */
static ns_status group_scratch(builder *B, int64_t gcells, int64_t group_br) {
    if (gcells > B->scratch_cells) {
        free(B->cell_br0);
        B->cell_br0 = malloc((size_t)gcells * sizeof *B->cell_br0);
        B->scratch_cells = gcells;
    }
    if (group_br > B->scratch_br) {
        free(B->first_pos);
        free(B->last_pos);
        free(B->items);
        free(B->g_items);
        B->first_pos = malloc((size_t)group_br * sizeof *B->first_pos);
        B->last_pos = malloc((size_t)group_br * sizeof *B->last_pos);
        B->items = malloc((size_t)group_br * sizeof *B->items);
        B->g_items = malloc((size_t)group_br * sizeof *B->g_items);
        B->scratch_br = group_br;
    }
    if (!B->cell_br0 || !B->first_pos || !B->last_pos || !B->items || !B->g_items)
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "group of %lld cells", (long long)gcells);
    return NS_OK;
}

/* Level l of the group of cells [c0, c0 + gcells) whose first branch is
 * gbr0: its branches longest first, one slot each, row j holding the
 * branches longer than j; their compartments placed. */
static ns_status place_level(builder *B, int64_t c0, int64_t gcells, int32_t l, int64_t gbr0) {
    const ns_batch_t *batch = B->batch;
    const ns_mixed_shapes *shapes = B->shapes;
    ns_mixed_layout *out = B->out;
    item *items = B->items;
    const int64_t pos = B->pos, gbr = B->gbr;
    int32_t w = 0, lmax = 0;
    for (int64_t k = 0; k < gcells; ++k) {
        const int32_t s = batch->cell_shape[B->order[c0 + k]];
        const ns_mixed_shape *m = &shapes->shape[s];
        if (l >= m->n_levels) continue;
        for (int32_t e = B->bl[s].begin[l]; e < B->bl[s].begin[l + 1]; ++e) {
            const int32_t b = B->bl[s].br[e];
            items[w].k = (int32_t)k;
            items[w].b = b;
            items[w].len = m->br_len[b];
            if (items[w].len > lmax) lmax = items[w].len;
            ++w;
        }
    }
    sort_items(items, w, B->max_len, B->count);
    ns_mixed_level *L = grow(&B->glev, 1);
    int64_t *ro = grow(&B->grow_ro, (int64_t)lmax + 1);
    if (!L || !ro) return ns_fail(NS_ERR_OUT_OF_MEMORY, "level table");
    L->base = pos;
    L->rows = B->grow_ro.n - (lmax + 1);
    L->first_branch = gbr;
    L->width = w;
    L->max_len = lmax;
    if (w > out->max_width) out->max_width = w;
    /* Row j holds the slots t < w_j whose branch is longer than j. */
    ro[0] = 0;
    for (int32_t j = 0, t = w; j < lmax; ++j) {
        while (t > 0 && items[t - 1].len <= j) --t;
        ro[j + 1] = ro[j] + t;
    }
    for (int32_t t = 0; t < w; ++t) {
        const item *it = &items[t];
        const int64_t cell = B->order[c0 + it->k];
        const ns_mixed_shape *m = &shapes->shape[batch->cell_shape[cell]];
        const int64_t off = batch->cell_offset[cell];
        const int64_t local = B->cell_br0[it->k] + it->b;
        const int32_t start = m->br_start[it->b];
        for (int32_t j = 0; j < it->len; ++j) {
            const int64_t p = pos + ro[j] + t;
            const int32_t node = start + j;
            out->gather[p] = off + m->perm[node];
            out->edge[p] = m->edge[node] < 0 ? -1 : 2 * off + m->edge[node];
        }
        B->first_pos[local] = pos + t;
        B->last_pos[local] = pos + ro[it->len - 1] + t;
        B->g_items[gbr + t - gbr0] = *it;
        out->br_len[gbr + t] = it->len;
        const int32_t pb = m->br_parent[it->b];
        out->br_ppos[gbr + t] = pb < 0 ? -1 : B->last_pos[B->cell_br0[it->k] + pb];
    }
    B->pos = pos + ro[lmax];
    B->gbr = gbr + w;
    return NS_OK;
}

/* The children lists of the group's branches gbr0 .. B->gbr, in global
 * branch order. */
static void group_children(builder *B, int64_t c0, int64_t gbr0) {
    ns_mixed_layout *out = B->out;
    for (int64_t g = gbr0; g < B->gbr; ++g) {
        const item *it = &B->g_items[g - gbr0];
        const ns_mixed_shape *m = &B->shapes->shape[B->batch->cell_shape[B->order[c0 + it->k]]];
        for (int32_t e = m->child_begin[it->b]; e < m->child_begin[it->b + 1]; ++e)
            out->child_pos[B->gchild++] = B->first_pos[B->cell_br0[it->k] + m->child[e]];
        out->br_child[g + 1] = B->gchild;
    }
}

static void builder_free(builder *B) {
    free(B->glev.p);
    free(B->grow_ro.p);
    free(B->cell_br0);
    free(B->first_pos);
    free(B->last_pos);
    free(B->items);
    free(B->g_items);
    free(B->acc);
    free(B->count);
    free(B->order);
    for (int32_t s = 0; B->bl && s < B->batch->n_shapes; ++s) {
        free(B->bl[s].begin);
        free(B->bl[s].br);
        free(B->bl[s].per_level_max);
    }
    free(B->bl);
}

ns_status ns_mixed_layout_build(const ns_batch_t *batch, const ns_mixed_shapes *shapes,
                                int32_t threads, int64_t cells_per_group, int64_t max_group_nodes,
                                ns_mixed_layout *out) {
    memset(out, 0, sizeof *out);
    const int64_t n_cells = batch->n_cells;
    builder B;
    memset(&B, 0, sizeof B);
    B.batch = batch;
    B.shapes = shapes;
    B.out = out;
    B.glev = (growable){NULL, 0, 0, sizeof(ns_mixed_level)};
    B.grow_ro = (growable){NULL, 0, 0, sizeof(int64_t)};
    ns_status st = builder_prepare(&B);
    int64_t c0 = 0;
    int32_t n_groups = 0;
    if (st == NS_OK) out->br_child[0] = 0;
    while (st == NS_OK && c0 < n_cells) {
        int64_t group_br = 0;
        int32_t group_levels = 0;
        const int64_t c1 = choose_group(&B, c0, threads, cells_per_group, max_group_nodes, &group_br, &group_levels);
        const int64_t gcells = c1 - c0;
        st = group_scratch(&B, gcells, group_br);
        if (st != NS_OK) break;
        /* Local index of (cell k, branch b) = cell_br0[k] + b. */
        int64_t lb = 0;
        for (int64_t k = 0; k < gcells; ++k) {
            B.cell_br0[k] = lb;
            lb += shapes->shape[batch->cell_shape[B.order[c0 + k]]].n_branches;
        }
        out->group_level[n_groups] = (int32_t)B.glev.n;
        const int64_t gbr0 = B.gbr;
        for (int32_t l = 0; l < group_levels && st == NS_OK; ++l) st = place_level(&B, c0, gcells, l, gbr0);
        if (st != NS_OK) break;
        group_children(&B, c0, gbr0);
        if (group_levels > out->max_group_levels) out->max_group_levels = group_levels;
        ++n_groups;
        c0 = c1;
    }
    if (st == NS_OK) {
        out->group_level[n_groups] = (int32_t)B.glev.n;
        out->n_groups = n_groups;
        out->levels = B.glev.p;
        out->n_levels = B.glev.n;
        out->rowoff = B.grow_ro.p;
        out->n_rowoff = B.grow_ro.n;
        B.glev.p = B.grow_ro.p = NULL;
        if (B.pos != out->n_nodes || B.gbr != B.total_br)
            st = ns_fail(NS_ERR_INTERNAL, "layout placed %lld of %lld compartments, %lld of %lld branches",
                         (long long)B.pos, (long long)out->n_nodes, (long long)B.gbr, (long long)B.total_br);
    }
    builder_free(&B);
    if (st != NS_OK) ns_mixed_layout_free(out);
    return st;
}
