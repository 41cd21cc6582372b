/* Tree contraction plans (src/hines/contract.c), on the CPU: the plan's
 * structure (every non-root node eliminated exactly once, rounds
 * independent sets of degree <= 2 nodes), its round count (the decision the
 * method rests on: logarithmic in the size, not in the depth), and the
 * executor against the sequential solve and LAPACK's dense LU on every
 * bundled morphology, on chains of 100,000 compartments and on a
 * 1,000,000-compartment random tree. */
#include "hines/contract.h"
#include "lapack.h"
#include "test_hines_mixed_common.h"

/* Structural invariants of a plan. */
static void check_plan(const ns_contract_plan *p, const int32_t *parent, const char *what) {
    const int32_t n = p->n;
    int32_t *round_of = malloc((size_t)n * sizeof *round_of);
    for (int32_t i = 0; i < n; ++i) round_of[i] = -1;
    int ok = 1;
    for (int32_t r = 0; r <= p->rounds; ++r)
        for (int32_t t = p->bwd_begin[r]; t < p->bwd_begin[r + 1]; ++t) {
            const ns_contract_bwd w = p->bwd[t];
            if (w.u < 0 || w.u >= n || round_of[w.u] >= 0) ok = 0;
            else round_of[w.u] = r;
        }
    for (int32_t i = 0; i < n; ++i)
        if (round_of[i] < 0) ok = 0;
    CHECK_MSG(ok, "%s: a node is eliminated never or twice", what);
    if (!ok) {
        free(round_of);
        return;
    }
    CHECK_MSG(round_of[0] == p->rounds, "%s: the root is not last", what);
    /* the neighbours a node had when it was eliminated go later */
    int later = 1, anc = 1;
    for (int32_t t = 0; t < n; ++t) {
        const ns_contract_bwd w = p->bwd[t];
        if (w.p >= 0 && round_of[w.p] <= round_of[w.u]) later = 0;
        if (w.c >= 0 && round_of[w.c] <= round_of[w.u]) later = 0;
        /* the parent at elimination is an ancestor in the original tree */
        if (w.p >= 0) {
            int32_t q = parent[w.u];
            while (q > w.p) q = parent[q];
            if (q != w.p) anc = 0;
        }
    }
    CHECK_MSG(later, "%s: a neighbour is eliminated before the node that needs it", what);
    CHECK_MSG(anc, "%s: a parent at elimination is not an ancestor", what);
    /* forward tasks: kept nodes, each at most once per round */
    int tasks_ok = 1;
    unsigned char *seen = calloc((size_t)n, 1);
    for (int32_t r = 0; r < p->rounds; ++r) {
        for (int32_t t = p->fwd_begin[r]; t < p->fwd_begin[r + 1]; ++t) {
            const ns_contract_fwd f = p->fwd[t];
            if (round_of[f.k] <= r || seen[f.k]) tasks_ok = 0;
            seen[f.k] = 1;
            for (int32_t q = 0; q < ns_contract_fwd_count(f); ++q)
                if (round_of[ns_contract_fwd_child(f, p->list, q)] != r) tasks_ok = 0;
            if (f.pu >= 0 && round_of[f.pu] != r) tasks_ok = 0;
        }
        for (int32_t t = p->fwd_begin[r]; t < p->fwd_begin[r + 1]; ++t) seen[p->fwd[t].k] = 0;
    }
    CHECK_MSG(tasks_ok, "%s: a forward task pulls from the wrong round or repeats", what);
    free(seen);
    free(round_of);
}

/* Solve one cell with the plan; error against the sequential solve. */
static double plan_error(const ns_contract_plan *p, const int32_t *parent, uint64_t seed, int with_lapack,
                         double *lapack_err) {
    const int32_t n = p->n;
    ns_tree_t *t = NULL;
    if (ns_tree_create(n, parent, &t) != NS_OK) return INFINITY;
    const ns_tree_t *shapes[1] = {t};
    problem pr;
    double err = INFINITY;
    if (problem_make(&pr, 1, shapes, 1, NULL, seed)) {
        double *w = malloc((size_t)n * 5 * sizeof *w);
        double *d = w, *x = w + n;
        memcpy(d, pr.d, (size_t)n * sizeof *d);
        memcpy(x, pr.rhs, (size_t)n * sizeof *x);
        const int32_t bad = ns_contract_solve_cpu(p, pr.a, pr.b, d, x, w + 2 * n, w + 3 * n, w + 4 * n);
        err = bad >= 0 ? INFINITY : problem_error(&pr, x);
        if (with_lapack) {
            double *y = malloc((size_t)n * sizeof *y);
            if (lapack_hines_solve(n, parent, pr.a, pr.b, pr.d, pr.rhs, y) == 0) {
                double num = 0, den = 0;
                for (int32_t i = 0; i < n; ++i) {
                    num = fmax(num, fabs(x[i] - y[i]));
                    den = fmax(den, fabs(y[i]));
                }
                *lapack_err = num / den;
            }
            free(y);
        }
        free(w);
    }
    problem_free(&pr);
    ns_tree_destroy(t);
    return err;
}

static int32_t ceil_log2(int64_t n) {
    int32_t k = 0;
    while (((int64_t)1 << k) < n) ++k;
    return k;
}

/* The schedule of every template of a layout as the kernel runs it, one
 * round at a time in parallel: no task of a round writes what another task
 * of the round reads or writes (so any thread order, a block's or a warp's,
 * gives the sequential result). */
static void check_schedule(const ns_contract_layout *L, const char *what) {
    for (int32_t t = 0; t < L->n_templates; ++t) {
        const int32_t n = L->t_nodes[t], R = L->t_rounds[t];
        const int32_t *rt = L->rt + L->t_rt[t], *rb = rt + R + 1;
        int32_t *writer = malloc((size_t)n * sizeof *writer), *lo_writer = malloc((size_t)n * sizeof *lo_writer);
        for (int32_t i = 0; i < n; ++i) writer[i] = lo_writer[i] = -1;
        int race = 0;
        for (int32_t r = 0; r < R; ++r) {
            for (int32_t q = rt[r]; q < rt[r + 1]; ++q) {
                const ns_contract_fwd f = L->fwd[q];
                if (writer[f.k] >= 0) race = 1;
                writer[f.k] = q;
                if (f.pu >= 0) {
                    if (lo_writer[f.pu] >= 0) race = 1;
                    lo_writer[f.pu] = q;
                }
            }
            for (int32_t q = rt[r]; q < rt[r + 1]; ++q) {
                const ns_contract_fwd f = L->fwd[q];
                for (int32_t c = 0; c < ns_contract_fwd_count(f); ++c) {
                    const int32_t u = ns_contract_fwd_child(f, L->list, c);
                    if (writer[u] >= 0) race = 1;
                }
                if (f.pu >= 0 && writer[f.pu] >= 0) race = 1;
            }
            for (int32_t q = rt[r]; q < rt[r + 1]; ++q) {
                writer[L->fwd[q].k] = -1;
                if (L->fwd[q].pu >= 0) lo_writer[L->fwd[q].pu] = -1;
            }
        }
        for (int32_t r = 0; r <= R; ++r) {
            for (int32_t q = rb[r]; q < rb[r + 1]; ++q) writer[L->bwd[q].u] = q;
            for (int32_t q = rb[r]; q < rb[r + 1]; ++q) {
                const ns_contract_bwd w = L->bwd[q];
                if ((w.p >= 0 && writer[w.p] >= 0) || (w.c >= 0 && writer[w.c] >= 0)) race = 1;
            }
            for (int32_t q = rb[r]; q < rb[r + 1]; ++q) writer[L->bwd[q].u] = -1;
        }
        CHECK_MSG(!race, "%s: template %d: a round's tasks touch each other's values", what, (int)t);
        free(writer), free(lo_writer);
    }
}

/* A batch solved group by group through a layout (what the kernel runs),
 * against the sequential solve; checks the packing invariants too. */
static void check_layout(int32_t n_shapes, const ns_tree_t *const *shapes, int64_t cells, const int32_t *cell_shape,
                         const ns_contract_layout_options *lo, const char *what, int32_t *templates) {
    problem pr;
    if (!problem_make(&pr, n_shapes, shapes, cells, cell_shape, 77)) {
        CHECK_MSG(0, "%s: problem", what);
        return;
    }
    ns_contract_plan *plans = calloc((size_t)n_shapes, sizeof *plans);
    for (int32_t s = 0; s < n_shapes; ++s)
        CHECK_OK(ns_contract_plan_create(ns_tree_size(shapes[s]), ns_tree_parent(shapes[s]), &plans[s]));
    ns_contract_layout L;
    CHECK_OK(ns_contract_layout_create(n_shapes, plans, cells, ns_batch_cell_shape(pr.batch),
                                       ns_batch_cell_offset(pr.batch), lo, &L));
    /* groups tile the batch in order; small groups respect the cap */
    int64_t next = 0;
    int ok = L.n_small + L.n_medium + L.n_large + L.n_big == L.n_groups;
    for (int32_t g = 0; g < L.n_groups; ++g) {
        if (L.g_base[g] != next) ok = 0;
        const int32_t n = L.t_nodes[L.g_tmpl[g]];
        if (L.g_scratch[g] < 0 && n > lo->group_nodes && n > lo->big_nodes) ok = 0; /* one cell may exceed the cap */
        if (L.g_scratch[g] >= 0 && n <= lo->big_nodes) ok = 0;
        next += n;
    }
    CHECK_MSG(ok && next == pr.n, "%s: groups do not tile the batch", what);
    double *d = malloc((size_t)pr.n * sizeof *d), *x = malloc((size_t)pr.n * sizeof *x);
    double *scratch = malloc(3 * (size_t)ns_batch_compartments(pr.batch) * sizeof *scratch);
    memcpy(d, pr.d, (size_t)pr.n * sizeof *d);
    memcpy(x, pr.rhs, (size_t)pr.n * sizeof *x);
    for (int32_t g = 0; g < L.n_groups; ++g) CHECK(ns_contract_group_cpu(&L, g, pr.a, pr.b, d, x, scratch) < 0);
    const double e = problem_error(&pr, x);
    CHECK_MSG(e <= 1e-12, "%s: error %.3e against the sequential solve", what, e);
    if (templates) *templates = L.n_templates;
    check_schedule(&L, what);
    int tails = 0; /* big groups whose template has a tail */
    for (int32_t k = 0; k < L.n_big; ++k) tails += L.t_tail[L.g_tmpl[L.big[k]]] >= 0;
    if (lo->tail_nodes > 0)
        CHECK_MSG(tails == L.n_big && L.max_tail_nodes <= lo->tail_nodes, "%s: %d tails for %d big groups", what, tails,
                  (int)L.n_big);
    printf("%s: %d groups (%d big, %d tails), %d templates, at most %d rounds\n", what, (int)L.n_groups,
           (int)L.n_big, tails, (int)L.n_templates, (int)L.max_rounds);
    free(d), free(x), free(scratch);
    ns_contract_layout_destroy(&L);
    for (int32_t s = 0; s < n_shapes; ++s) ns_contract_plan_destroy(&plans[s]);
    free(plans);
    problem_free(&pr);
}

int main(void) {
    /* chains: cyclic reduction, exactly ceil(log2 n) rounds */
    static const int32_t chains[] = {1, 2, 3, 7, 64, 1000, 100000};
    for (size_t k = 0; k < sizeof chains / sizeof *chains; ++k) {
        const int32_t n = chains[k];
        int32_t *parent = malloc((size_t)n * sizeof *parent);
        for (int32_t i = 0; i < n; ++i) parent[i] = i - 1;
        ns_contract_plan p;
        CHECK_OK(ns_contract_plan_create(n, parent, &p));
        char what[64];
        snprintf(what, sizeof what, "chain of %d", (int)n);
        check_plan(&p, parent, what);
        CHECK_MSG(p.rounds <= ceil_log2(n), "%s: %d rounds > ceil(log2 n) = %d", what, (int)p.rounds,
                  (int)ceil_log2(n));
        double le = 0.0;
        const double e = plan_error(&p, parent, 11 + k, n <= 1000, &le);
        CHECK_MSG(e <= 1e-12, "%s: error %.3e against the sequential solve", what, e);
        CHECK_MSG(le <= 1e-12, "%s: error %.3e against LAPACK", what, le);
        ns_contract_plan_destroy(&p);
        free(parent);
    }
    /* the paper's sizes and Arbor-style random trees, against LAPACK too */
    static const char *paper[] = {"small-low", "small-high", "medium-low", "medium-high", "big-low", "big-high"};
    for (int k = 0; k < 6; ++k) {
        ns_tree_t *t = NULL;
        CHECK_OK(ns_generate_paper_tree(paper[k], 5 + k, &t));
        if (!t) continue;
        ns_contract_plan p;
        CHECK_OK(ns_contract_plan_create(ns_tree_size(t), ns_tree_parent(t), &p));
        check_plan(&p, ns_tree_parent(t), paper[k]);
        double le = 1.0;
        const double e = plan_error(&p, ns_tree_parent(t), 31 + k, 1, &le);
        CHECK_MSG(e <= 1e-12 && le <= 1e-12, "%s: errors %.3e (sequential) %.3e (LAPACK)", paper[k], e, le);
        CHECK_MSG(p.rounds <= 3 * ceil_log2(ns_tree_size(t)), "%s: %d rounds", paper[k], (int)p.rounds);
        ns_contract_plan_destroy(&p);
        ns_tree_destroy(t);
    }
    /* every bundled morphology; the largest (38,580 compartments, hundreds of
     * branch levels deep) must need few rounds */
    bundled_set set;
    if (bundled_load(&set) == 0) CHECK_MSG(0, "no bundled morphologies under %s", NS_MORPHOLOGIES);
    int32_t worst_rounds = 0;
    for (int k = 0; k < set.count; ++k) {
        const ns_tree_t *t = set.tree[k];
        ns_contract_plan p;
        CHECK_OK(ns_contract_plan_create(ns_tree_size(t), ns_tree_parent(t), &p));
        check_plan(&p, ns_tree_parent(t), set.name[k]);
        double le = 0.0;
        const int small = ns_tree_size(t) <= 2000;
        const double e = plan_error(&p, ns_tree_parent(t), 100 + (uint64_t)k, small, &le);
        CHECK_MSG(e <= 1e-12, "%s: error %.3e against the sequential solve", set.name[k], e);
        CHECK_MSG(le <= 1e-12, "%s: error %.3e against LAPACK", set.name[k], le);
        ns_tree_stats s;
        ns_tree_get_stats(t, &s);
        CHECK_MSG(p.rounds <= 3 * ceil_log2(s.size), "%s: %d rounds for %d compartments", set.name[k],
                  (int)p.rounds, (int)s.size);
        if (k == set.largest)
            printf("largest bundled cell %s: %d compartments, depth %d, %d branch levels -> %d rounds\n",
                   set.name[k], (int)s.size, (int)s.depth, (int)s.branch_depth, (int)p.rounds);
        if (p.rounds > worst_rounds) worst_rounds = p.rounds;
        ns_contract_plan_destroy(&p);
    }
    printf("bundled: at most %d rounds\n", (int)worst_rounds);
    /* the bundled set as one batch (3 cells each, the largest cell big),
     * then a same-shape batch: its full groups share one template */
    {
        const ns_tree_t *shapes[128];
        for (int k = 0; k < set.count; ++k) shapes[k] = set.tree[k];
        ns_contract_layout_options lo = {1500, 2500, 5000, 64, 0, 0};
        check_layout(set.count, shapes, 3 * (int64_t)set.count, NULL, &lo, "bundled x 3", NULL);
        int32_t templates = 0;
        check_layout(1, shapes, 2000, NULL, &lo, "one shape x 2000", &templates);
        CHECK_MSG(templates <= 2, "one shape: %d templates (expected <= 2)", (int)templates);
        ns_contract_layout_options few = {100000, 100000, 1 << 30, 1, 7, 0};
        check_layout(set.count, shapes, 100, NULL, &few, "bundled, 7 cells per group", NULL);
        /* big cells with tails: the largest cell's last rounds on 1,000 nodes */
        ns_contract_layout_options tails = {1500, 2500, 5000, 64, 0, 1000};
        check_layout(set.count, shapes, 2 * (int64_t)set.count, NULL, &tails, "bundled x2, tails", NULL);
        const ns_tree_t *largest[1] = {set.tree[set.largest]};
        check_layout(1, largest, 3, NULL, &tails, "the largest cell x3, tails", NULL);
    }
    bundled_free(&set);
    /* many distinct big shapes, each with a tail (more templates than groups) */
    {
        enum { S = 24 };
        ns_tree_t *trees[S];
        const ns_tree_t *shapes[S];
        for (int k = 0; k < S; ++k) {
            CHECK_OK(ns_generate_tree(2500 + 37 * k, 101, 900 + (uint64_t)k, &trees[k]));
            shapes[k] = trees[k];
        }
        ns_contract_layout_options lo = {800, 1500, 2000, 8, 0, 400};
        check_layout(S, shapes, S, NULL, &lo, "24 distinct big shapes, tails", NULL);
        for (int k = 0; k < S; ++k) ns_tree_destroy(trees[k]);
    }
    /* a random tree of 1,000,000 compartments (random parents: every shape of
     * branching at once) */
    {
        const int32_t n = 1000000;
        int32_t *parent = malloc((size_t)n * sizeof *parent);
        uint64_t x = 0x9E3779B97F4A7C15ULL;
        parent[0] = -1;
        for (int32_t i = 1; i < n; ++i) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            /* mostly the previous node (long runs), sometimes anywhere */
            parent[i] = (x % 16) ? i - 1 : (int32_t)((x >> 8) % (uint64_t)i);
        }
        ns_contract_plan p;
        CHECK_OK(ns_contract_plan_create(n, parent, &p));
        check_plan(&p, parent, "random 1e6");
        double le = 0.0;
        const double e = plan_error(&p, parent, 7, 0, &le);
        CHECK_MSG(e <= 1e-12, "random 1e6: error %.3e", e);
        CHECK_MSG(p.rounds <= 3 * ceil_log2(n), "random 1e6: %d rounds", (int)p.rounds);
        printf("random tree of 1e6 compartments: %d rounds\n", (int)p.rounds);
        ns_contract_plan_destroy(&p);
        free(parent);
    }
    /* a zero pivot is reported */
    {
        const int32_t parent[4] = {-1, 0, 1, 1};
        const double a[4] = {0, -1, -1, -1}, b[4] = {0, -1, -1, -1};
        double d[4] = {3, 3, 0, 2}, rhs[4] = {1, 1, 1, 1}, w[12];
        ns_contract_plan p;
        CHECK_OK(ns_contract_plan_create(4, parent, &p));
        CHECK(ns_contract_solve_cpu(&p, a, b, d, rhs, w, w + 4, w + 8) == 2);
        ns_contract_plan_destroy(&p);
    }
    return check_summary("test_hines_tree");
}
