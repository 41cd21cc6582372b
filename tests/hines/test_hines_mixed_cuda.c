/* Mixed-shape GPU methods (issue 5) against the sequential CPU solve:
 * flat, interleaved (one thread per cell), fine-grained and branch-level on
 * every bundled morphology, on binary and random trees, on one-compartment
 * cells mixed with the largest bundled cell, with blocks too small for a
 * cell's widest level, on a same-shape batch, and a zero pivot reported for
 * the right cell; fine-grained's shared-memory kernel on every bundled
 * morphology but the largest, with its pivot report. Re-rooting and splitting are on by default (fine-grained),
 * so every fine-grained result also checks the permutation back.
 * Skips (77) without a GPU. */
#include "test_hines_mixed_common.h"

/* The fine-grained kernel variant of this run (argv[1]: "never" keeps every
 * group in device memory, "ab" keeps a and b in shared memory too;
 * tests/hines/hines_mixed.cmake runs all three). */
static int32_t fine_mode = NS_FINE_SHARED_AUTO;

static const ns_hines_method methods[] = {NS_HINES_FLAT, NS_HINES_INTERLEAVED,
                                          NS_HINES_FINE_GRAINED, NS_HINES_BRANCH_LEVEL};
#define N_METHODS 4

static void check_method(const problem *p, ns_hines_method m, int32_t block_size, const char *what) {
    ns_solve_options o;
    ns_solve_options_init(&o);
    o.fine_shared = fine_mode;
    o.method = m;
    o.block_size = block_size;
    double *d = malloc((size_t)p->n * sizeof(double)), *x = malloc((size_t)p->n * sizeof(double));
    memcpy(d, p->d, (size_t)p->n * sizeof(double));
    memcpy(x, p->rhs, (size_t)p->n * sizeof(double));
    ns_hines_solver_t *s = NULL;
    ns_status st = ns_hines_solver_create(p->batch, &o, &s);
    CHECK_MSG(st == NS_OK, "%s, %s: create: %s", what, ns_hines_method_name(m), ns_last_error());
    if (st == NS_OK) {
        st = ns_hines_solver_solve(s, p->a, p->b, d, x);
        CHECK_MSG(st == NS_OK, "%s, %s: solve: %s", what, ns_hines_method_name(m), ns_last_error());
        const double err = problem_error(p, x);
        CHECK_MSG(err <= 1e-12, "%s, %s: max rel error %.3e", what, ns_hines_method_name(m), err);
        /* The benchmark path (staged inputs, restored between runs). */
        double times[3];
        memcpy(d, p->d, (size_t)p->n * sizeof(double));
        memcpy(x, p->rhs, (size_t)p->n * sizeof(double));
        st = ns_hines_solver_benchmark(s, p->a, p->b, d, x, 3, times);
        CHECK_MSG(st == NS_OK, "%s, %s: benchmark: %s", what, ns_hines_method_name(m), ns_last_error());
        const double err2 = problem_error(p, x);
        CHECK_MSG(err2 <= 1e-12, "%s, %s (benchmark): max rel error %.3e", what,
                  ns_hines_method_name(m), err2);
    }
    ns_hines_solver_destroy(s);
    free(d);
    free(x);
}

static void check_all(const problem *p, const char *what) {
    for (int k = 0; k < N_METHODS; ++k) check_method(p, methods[k], 0, what);
}

int main(int argc, char **argv) {
    if (argc > 1) fine_mode = strcmp(argv[1], "never") == 0 ? NS_FINE_SHARED_NEVER
                             : strcmp(argv[1], "ab") == 0  ? NS_FINE_SHARED_AB
                                                           : NS_FINE_SHARED_AUTO;
    int devices = 0;
    if (ns_cuda_device_count(&devices) != NS_OK || devices == 0) CHECK_SKIP("no GPU");

    bundled_set set;
    const int nb = bundled_load(&set);
    CHECK_MSG(nb == 54, "%d bundled morphologies loaded, expected 54", nb);
    problem p;
    if (nb > 0) {
        /* Every bundled morphology, three cells each, shapes interleaved. */
        CHECK(problem_make(&p, nb, (const ns_tree_t *const *)set.tree, 3 * nb, NULL, 21));
        check_all(&p, "bundled x3");
        check_method(&p, NS_HINES_FINE_GRAINED, 32, "bundled x3, 32-thread blocks");
        /* auto on a mixed batch picks a mixed method and is right. */
        check_method(&p, NS_HINES_AUTO, 0, "bundled x3, auto");
        /* Same-shape-only methods refuse mixed batches with a status. */
        ns_solve_options o;
        ns_solve_options_init(&o);
        o.fine_shared = fine_mode;
        o.method = NS_HINES_BLOCK_SHARED;
        ns_hines_solver_t *s = NULL;
        CHECK(ns_hines_solver_create(p.batch, &o, &s) == NS_ERR_UNSUPPORTED);
        problem_free(&p);

        /* One-compartment cells mixed with the largest bundled cell. */
        int32_t one_parent[1] = {-1};
        ns_tree_t *one = NULL;
        CHECK_OK(ns_tree_create(1, one_parent, &one));
        const ns_tree_t *mix[2] = {one, set.tree[set.largest]};
        int32_t cell_shape[9] = {0, 1, 0, 0, 0, 0, 1, 0, 0};
        CHECK(problem_make(&p, 2, mix, 9, cell_shape, 22));
        check_all(&p, "one-compartment + largest");
        check_method(&p, NS_HINES_FINE_GRAINED, 32, "one-compartment + largest, 32-thread blocks");

        /* A zero pivot in cell 4 (a one-compartment cell) is named. */
        for (int k = 0; k < N_METHODS; ++k) {
            ns_solve_options_init(&o);
            o.fine_shared = fine_mode;
            o.method = methods[k];
            double *d = malloc((size_t)p.n * sizeof(double)), *x = malloc((size_t)p.n * sizeof(double));
            memcpy(d, p.d, (size_t)p.n * sizeof(double));
            memcpy(x, p.rhs, (size_t)p.n * sizeof(double));
            d[ns_batch_cell_offset(p.batch)[4]] = 0.0;
            ns_status st = ns_hines_solve(p.batch, &o, p.a, p.b, d, x);
            CHECK_MSG(st == NS_ERR_SINGULAR && strstr(ns_last_error(), "cell 4,") != NULL,
                      "%s: zero pivot: %s (%s)", ns_hines_method_name(methods[k]),
                      ns_status_string(st), ns_last_error());
            free(d);
            free(x);
        }
        problem_free(&p);
        ns_tree_destroy(one);

        /* Every bundled morphology but the largest (38,580 compartments, too
         * large for shared memory): fine-grained takes its shared-memory
         * kernel here (mixed_fine_shared.cu), and names a zero pivot. */
        const ns_tree_t *fit[64];
        int nf = 0;
        for (int k = 0; k < nb && nf < 64; ++k)
            if (k != set.largest) fit[nf++] = set.tree[k];
        CHECK(problem_make(&p, nf, fit, 2 * nf, NULL, 25));
        check_method(&p, NS_HINES_FINE_GRAINED, 0, "bundled but the largest x2");
        ns_solve_options_init(&o);
        o.fine_shared = fine_mode;
        o.method = NS_HINES_FINE_GRAINED;
        double *d = malloc((size_t)p.n * sizeof(double)), *x = malloc((size_t)p.n * sizeof(double));
        memcpy(d, p.d, (size_t)p.n * sizeof(double));
        memcpy(x, p.rhs, (size_t)p.n * sizeof(double));
        /* cell 7's diagonal all zero: its leaves' pivots are exactly zero */
        for (int64_t i = ns_batch_cell_offset(p.batch)[7]; i < ns_batch_cell_offset(p.batch)[8]; ++i) d[i] = 0.0;
        ns_status st = ns_hines_solve(p.batch, &o, p.a, p.b, d, x);
        CHECK_MSG(st == NS_ERR_SINGULAR && strstr(ns_last_error(), "cell 7,") != NULL,
                  "fine-grained (bundled but the largest): zero pivot: %s (%s)", ns_status_string(st),
                  ns_last_error());
        free(d);
        free(x);
        problem_free(&p);
    }
    bundled_free(&set);

    /* The journal's binary trees (2, 3, 4 levels) and Arbor's random trees. */
    ns_tree_t *t[6] = {NULL};
    for (int k = 0; k < 3; ++k) CHECK_OK(ns_generate_binary_tree(512, 2 + k, &t[k]));
    const char *presets[3] = {"low", "medium", "high"};
    for (int k = 0; k < 3; ++k) {
        ns_random_tree_params rp;
        CHECK_OK(ns_random_tree_preset(presets[k], &rp));
        CHECK_OK(ns_generate_random_tree(&rp, 30 + (uint64_t)k, &t[3 + k]));
    }
    CHECK(problem_make(&p, 6, (const ns_tree_t *const *)t, 1000, NULL, 23));
    check_all(&p, "binary + random trees x1000");
    problem_free(&p);
    /* One shape: fine-grained and branch-level take same-shape batches too. */
    CHECK(problem_make(&p, 1, (const ns_tree_t *const *)&t[4], 300, NULL, 24));
    check_method(&p, NS_HINES_FINE_GRAINED, 0, "random medium x300 (one shape)");
    check_method(&p, NS_HINES_BRANCH_LEVEL, 0, "random medium x300 (one shape)");
    problem_free(&p);
    for (int k = 0; k < 6; ++k) ns_tree_destroy(t[k]);
    return check_summary("test_hines_mixed_cuda");
}
