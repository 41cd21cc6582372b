/* Host-side planning of the mixed-shape GPU methods (issue 5), on the CPU:
 * re-rooting (against a brute-force eccentricity search), renumbering and
 * branch invariants, splitting, packing into blocks, the per-cell layout,
 * and the grouped schedule run on the CPU (ns_mixed_solve_host) against the
 * sequential solve on every bundled morphology, on re-rooted and split
 * trees, and on one-compartment cells mixed with the largest bundled cell. */
#include "hines/mixed_plan.h"
#include "tree/tree_impl.h"
#include "test_hines_mixed_common.h"

/* Eccentricity (in edges) of every node, by one BFS per node. */
static int32_t eccentricity(int32_t n, const int32_t *parent, int32_t src) {
    int32_t *dist = malloc((size_t)n * sizeof *dist), *queue = malloc((size_t)n * sizeof *queue);
    int32_t best = 0;
    for (int32_t i = 0; i < n; ++i) dist[i] = -1;
    int32_t h = 0, t = 0;
    queue[t++] = src;
    dist[src] = 0;
    while (h < t) {
        const int32_t v = queue[h++];
        if (dist[v] > best) best = dist[v];
        for (int32_t i = 1; i < n; ++i) { /* O(n^2): small trees only */
            int32_t w = -1;
            if (parent[i] == v) w = i;
            else if (i == v) w = parent[i];
            if (w >= 0 && dist[w] < 0) {
                dist[w] = dist[v] + 1;
                queue[t++] = w;
            }
        }
    }
    free(dist);
    free(queue);
    return best;
}

/* Invariants of a planned shape against its original tree. */
static void check_shape(const ns_tree_t *t, const ns_mixed_shape *m, const char *what) {
    const int32_t n = ns_tree_size(t);
    const int32_t *op = ns_tree_parent(t);
    CHECK(m->n == n);
    unsigned char *seen = calloc((size_t)n, 1);
    int ok_perm = 1, ok_order = 1, ok_edge = 1, ok_branch = 1;
    for (int32_t k = 0; k < n; ++k) {
        if (m->perm[k] < 0 || m->perm[k] >= n || seen[m->perm[k]]) ok_perm = 0;
        else seen[m->perm[k]] = 1;
        if (k == 0) {
            if (m->parent[0] != -1 || m->edge[0] != -1) ok_order = 0;
            continue;
        }
        if (m->parent[k] < 0 || m->parent[k] >= k) ok_order = 0;
        /* The new edge joins two nodes that were neighbours; its values sit
         * at the old child, swapped when the direction flipped. */
        const int32_t o = m->perm[k], q = m->perm[m->parent[k]];
        const int32_t owner = m->edge[k] >> 1, swapped = m->edge[k] & 1;
        if (!((op[o] == q && owner == o && !swapped) || (op[q] == o && owner == q && swapped))) ok_edge = 0;
    }
    CHECK_MSG(ok_perm, "%s: perm is not a permutation", what);
    CHECK_MSG(ok_order, "%s: new numbering is not a Hines order", what);
    CHECK_MSG(ok_edge, "%s: edge values mapped wrongly", what);
    CHECK(m->perm[0] == m->root_old);
    int32_t total = 0;
    for (int32_t b = 0; b < m->n_branches; ++b) {
        const int32_t s = m->br_start[b], len = m->br_len[b], pb = m->br_parent[b];
        total += len;
        if (len < 1) ok_branch = 0;
        for (int32_t j = s + 1; j < s + len; ++j)
            if (m->parent[j] != j - 1) ok_branch = 0;
        if (b == 0) {
            if (pb != -1 || s != 0 || m->br_level[0] != 0) ok_branch = 0;
        } else if (pb < 0 || pb >= b || m->parent[s] != m->br_start[pb] + m->br_len[pb] - 1 ||
                   m->br_level[b] != m->br_level[pb] + 1) {
            ok_branch = 0;
        }
        for (int32_t e = m->child_begin[b]; e < m->child_begin[b + 1]; ++e)
            if (m->br_parent[m->child[e]] != b) ok_branch = 0;
    }
    CHECK_MSG(ok_branch, "%s: branch table inconsistent", what);
    CHECK_MSG(total == n, "%s: branches cover %d of %d nodes", what, (int)total, (int)n);
    CHECK(m->child_begin[m->n_branches] == m->n_branches - 1);
    free(seen);
}

/* Layout invariants: a permutation of the Flat indices; packing limits. */
static void check_layout(const ns_batch_t *batch, const ns_mixed_layout *l, int32_t threads,
                         int64_t max_nodes, const char *what) {
    const int64_t n = ns_batch_compartments(batch);
    unsigned char *seen = calloc((size_t)n, 1);
    int ok = 1;
    for (int64_t p = 0; p < n; ++p) {
        if (l->gather[p] < 0 || l->gather[p] >= n || seen[l->gather[p]]) ok = 0;
        else seen[l->gather[p]] = 1;
    }
    CHECK_MSG(ok, "%s: gather is not a permutation", what);
    free(seen);
    int ok_pack = 1;
    for (int32_t g = 0; g < l->n_groups; ++g) {
        int64_t cells = 0;
        for (int32_t li = l->group_level[g]; li < l->group_level[g + 1]; ++li) {
            const ns_mixed_level *L = &l->levels[li];
            if (li == l->group_level[g]) cells = L->width; /* one root branch per cell */
            for (int32_t t = 1; t < L->width; ++t)
                if (l->br_len[L->first_branch + t] > l->br_len[L->first_branch + t - 1]) ok_pack = 0;
        }
        /* Over-full levels only for a group of one cell. */
        for (int32_t li = l->group_level[g]; threads > 0 && li < l->group_level[g + 1]; ++li)
            if (l->levels[li].width > threads && cells > 1) ok_pack = 0;
        /* More than max_nodes compartments only for a group of one cell. */
        const ns_mixed_level *f = &l->levels[l->group_level[g]], *z = &l->levels[l->group_level[g + 1] - 1];
        const int64_t nodes = z->base + l->rowoff[z->rows + z->max_len] - f->base;
        if (threads > 0 && max_nodes > 0 && nodes > max_nodes && cells > 1) ok_pack = 0;
    }
    CHECK_MSG(ok_pack, "%s: packing limit or length order broken", what);
    if (threads <= 0) CHECK(l->n_groups == 1);
}

static void check_host_solve(const problem *p, const ns_mixed_layout *l, const char *what) {
    double *d = malloc((size_t)p->n * sizeof(double)), *x = malloc((size_t)p->n * sizeof(double));
    memcpy(d, p->d, (size_t)p->n * sizeof(double));
    memcpy(x, p->rhs, (size_t)p->n * sizeof(double));
    CHECK_OK(ns_mixed_solve_host(p->batch, l, p->a, p->b, d, x));
    const double err = problem_error(p, x);
    CHECK_MSG(err <= 1e-12, "%s: max rel error %.3e", what, err);
    free(d);
    free(x);
}

static void plan_and_solve(const problem *p, int reroot, int split, int32_t threads,
                           int64_t per_group, int64_t max_nodes, const char *what) {
    ns_mixed_plan_options o = {reroot, split};
    ns_mixed_shapes sh;
    ns_mixed_layout l;
    char label[256];
    snprintf(label, sizeof label, "%s (reroot %d, split %d, threads %d)", what, reroot, split, (int)threads);
    CHECK_OK(ns_mixed_shapes_build(p->batch, &o, &sh));
    for (int32_t s = 0; s < sh.count; ++s) check_shape(ns_batch_shape(p->batch, s), &sh.shape[s], label);
    CHECK_OK(ns_mixed_layout_build(p->batch, &sh, threads, per_group, max_nodes, &l));
    check_layout(p->batch, &l, threads, max_nodes, label);
    check_host_solve(p, &l, label);
    ns_mixed_layout_free(&l);
    ns_mixed_shapes_free(&sh);
}

static void test_reroot_minimises_depth(void) {
    for (uint64_t seed = 1; seed <= 6; ++seed) {
        ns_tree_t *t = NULL;
        CHECK_OK(ns_generate_tree(120, 31, seed, &t));
        if (!t) continue;
        const ns_tree_t *shapes[1] = {t};
        ns_batch_t *batch = NULL;
        CHECK_OK(ns_batch_create(1, shapes, 1, NULL, &batch));
        ns_mixed_plan_options o = {1, 0};
        ns_mixed_shapes sh;
        CHECK_OK(ns_mixed_shapes_build(batch, &o, &sh));
        int32_t best = INT32_MAX;
        for (int32_t v = 0; v < 120; ++v) {
            int32_t e = eccentricity(120, ns_tree_parent(t), v);
            if (e < best) best = e;
        }
        const int32_t got = eccentricity(120, ns_tree_parent(t), sh.shape[0].root_old);
        CHECK_MSG(got == best, "seed %llu: root %d has eccentricity %d, the least is %d",
                  (unsigned long long)seed, (int)sh.shape[0].root_old, (int)got, (int)best);
        /* The new tree's depth (in the new numbering) is that eccentricity + 1. */
        int32_t *depth = malloc(120 * sizeof *depth), deepest = 0;
        depth[0] = 1;
        for (int32_t k = 1; k < 120; ++k) {
            depth[k] = depth[sh.shape[0].parent[k]] + 1;
            if (depth[k] > deepest) deepest = depth[k];
        }
        CHECK(deepest == best + 1);
        free(depth);
        ns_mixed_shapes_free(&sh);
        ns_batch_destroy(batch);
        ns_tree_destroy(t);
    }
}

/* Splitting: every level-0 branch of a lone chain-heavy tree is cut to the
 * average; the tree still solves exactly. */
static void test_split(void) {
    ns_random_tree_params rp;
    CHECK_OK(ns_random_tree_preset("low", &rp));
    ns_tree_t *t[3] = {NULL, NULL, NULL};
    for (int k = 0; k < 3; ++k) CHECK_OK(ns_generate_random_tree(&rp, 10 + (uint64_t)k, &t[k]));
    problem p;
    CHECK(problem_make(&p, 3, (const ns_tree_t *const *)t, 9, NULL, 5));
    ns_mixed_plan_options plain = {0, 0}, cut = {0, 1};
    ns_mixed_shapes a, b;
    CHECK_OK(ns_mixed_shapes_build(p.batch, &plain, &a));
    CHECK_OK(ns_mixed_shapes_build(p.batch, &cut, &b));
    int32_t na = 0, nb = 0, la = 0, lb = 0;
    for (int s = 0; s < 3; ++s) {
        na += a.shape[s].n_branches;
        nb += b.shape[s].n_branches;
        la += a.shape[s].n_levels;
        lb += b.shape[s].n_levels;
        /* Same renumbering: splitting only cuts branches. */
        CHECK(memcmp(a.shape[s].perm, b.shape[s].perm, (size_t)a.shape[s].n * sizeof(int32_t)) == 0);
    }
    CHECK_MSG(nb > na, "splitting added no branch (%d vs %d)", (int)nb, (int)na);
    CHECK(lb >= la);
    /* Level 0 after splitting: no branch longer than the level's average
     * over the batch, rounded up (all shapes have equal weight here). */
    double sum = 0;
    int cnt = 0, longest = 0;
    for (int s = 0; s < 3; ++s) {
        sum += 3.0 * a.shape[s].br_len[0];
        cnt += 3;
        if (b.shape[s].br_len[0] > longest) longest = b.shape[s].br_len[0];
    }
    CHECK(longest <= (int)(sum / cnt + 0.999999));
    ns_mixed_shapes_free(&a);
    ns_mixed_shapes_free(&b);
    plan_and_solve(&p, 1, 1, 32, 0, 0, "random low trees");
    plan_and_solve(&p, 0, 1, 0, 0, 0, "random low trees, one group");
    problem_free(&p);
    for (int k = 0; k < 3; ++k) ns_tree_destroy(t[k]);
}

static void test_cells_layout(const problem *p) {
    ns_mixed_cells c;
    CHECK_OK(ns_mixed_cells_build(p->batch, &c));
    const int64_t n = p->n;
    unsigned char *seen = calloc((size_t)n, 1);
    int ok = 1, sorted = 1;
    for (int64_t r = 0; r < c.n_cells; ++r) {
        if (r && c.shape_size[c.sorted_shape[r]] > c.shape_size[c.sorted_shape[r - 1]]) sorted = 0;
        const int64_t off = ns_batch_cell_offset(p->batch)[c.order[r]];
        for (int32_t k = 0; k < c.shape_size[c.sorted_shape[r]]; ++k) {
            const int64_t pos = c.rowoff[k] + r;
            if (pos >= c.rowoff[k + 1] || c.gather[pos] != off + k || seen[pos]) ok = 0;
            else seen[pos] = 1;
        }
    }
    for (int64_t q = 0; q < n; ++q)
        if (!seen[q]) ok = 0;
    CHECK_MSG(ok, "per-cell layout: node k of sorted cell r is not at rowoff[k] + r");
    CHECK(sorted);
    free(seen);
    ns_mixed_cells_free(&c);
}

int main(void) {
    test_reroot_minimises_depth();
    test_split();

    bundled_set set;
    const int nb = bundled_load(&set);
    CHECK_MSG(nb == 54, "%d bundled morphologies loaded, expected 54", nb);
    if (nb > 0) {
        /* Every bundled morphology, twice, in one batch. */
        problem p;
        CHECK(problem_make(&p, nb, (const ns_tree_t *const *)set.tree, 2 * nb, NULL, 11));
        plan_and_solve(&p, 1, 1, 128, 0, 0, "bundled");
        plan_and_solve(&p, 0, 0, 128, 2, 0, "bundled, no re-rooting");
        plan_and_solve(&p, 1, 0, 0, 0, 0, "bundled, one group");
        plan_and_solve(&p, 1, 1, 32, 0, 0, "bundled, 32 threads (over-full levels)");
        plan_and_solve(&p, 1, 1, 128, 0, 2000, "bundled, at most 2,000 compartments per group");
        test_cells_layout(&p);
        problem_free(&p);

        /* One-compartment cells mixed with the largest bundled cell. */
        int32_t one_parent[1] = {-1};
        ns_tree_t *one = NULL;
        CHECK_OK(ns_tree_create(1, one_parent, &one));
        const ns_tree_t *mix[2] = {one, set.tree[set.largest]};
        int32_t cell_shape[7] = {0, 0, 1, 0, 0, 0, 1};
        CHECK(problem_make(&p, 2, mix, 7, cell_shape, 12));
        plan_and_solve(&p, 1, 1, 64, 0, 0, "one-compartment + largest");
        plan_and_solve(&p, 1, 1, 0, 0, 0, "one-compartment + largest, one group");
        test_cells_layout(&p);

        /* A zero pivot is reported for the right cell. */
        ns_mixed_plan_options o = {1, 1};
        ns_mixed_shapes sh;
        ns_mixed_layout l;
        CHECK_OK(ns_mixed_shapes_build(p.batch, &o, &sh));
        CHECK_OK(ns_mixed_layout_build(p.batch, &sh, 64, 0, 0, &l));
        double *d = malloc((size_t)p.n * sizeof(double)), *x = malloc((size_t)p.n * sizeof(double));
        memcpy(d, p.d, (size_t)p.n * sizeof(double));
        memcpy(x, p.rhs, (size_t)p.n * sizeof(double));
        const int64_t *off = ns_batch_cell_offset(p.batch);
        d[off[3]] = 0.0; /* cell 3: the one-compartment cell's only pivot */
        ns_status st = ns_mixed_solve_host(p.batch, &l, p.a, p.b, d, x);
        CHECK(st == NS_ERR_SINGULAR);
        CHECK_MSG(strstr(ns_last_error(), "cell 3,") != NULL, "detail: %s", ns_last_error());
        free(d);
        free(x);
        ns_mixed_layout_free(&l);
        ns_mixed_shapes_free(&sh);
        problem_free(&p);
        ns_tree_destroy(one);
    }
    bundled_free(&set);
    return check_summary("test_hines_mixed");
}
