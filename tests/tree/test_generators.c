/* Tree generators: exact sizes and branch counts (counted by
 * ns_tree_get_stats and again by an independent walk here), Hines order,
 * contiguous branches, depth, determinism, the binary-tree split and the
 * Arbor-like random trees. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "neurosolve/tree.h"

/* Independent check: parent[i] < i, and every branch (a maximal run of
 * single-child links) occupies consecutive indices: a compartment that does
 * not start a branch must directly follow its parent. Returns the branches. */
static int check_shape(const ns_tree_t *t, const char *what) {
    int32_t n = ns_tree_size(t);
    const int32_t *p = ns_tree_parent(t);
    int32_t *nc = calloc(n, sizeof *nc);
    int ok = p[0] == -1, branches = 1;
    for (int32_t i = 1; i < n; ++i) {
        if (!(p[i] >= 0 && p[i] < i)) ok = 0;
        else nc[p[i]]++;
    }
    for (int32_t i = 1; i < n && ok; ++i) {
        if (nc[p[i]] != 1) ++branches;
        else if (p[i] != i - 1) ok = 0; /* continues a branch but is not next to its parent */
    }
    CHECK_MSG(ok, "%s: not Hines order with contiguous branches", what);
    free(nc);
    return branches;
}

static void test_size_branches(void) {
    const int32_t sizes[][2] = {{76, 7}, {76, 29}, {305, 30}, {319, 157}, {695, 66}, {691, 341},
                                {1, 1}, {5, 1}, {4, 4}, {3, 3}, {1000, 999}, {10, 6}};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) {
        for (uint64_t seed = 1; seed <= 5; ++seed) {
            ns_tree_t *t = NULL;
            CHECK_OK(ns_generate_tree(sizes[k][0], sizes[k][1], seed, &t));
            if (!t) continue;
            ns_tree_stats s;
            ns_tree_get_stats(t, &s);
            CHECK_MSG(s.size == sizes[k][0] && s.branches == sizes[k][1], "%d/%d: got %d/%d",
                      (int)sizes[k][0], (int)sizes[k][1], (int)s.size, (int)s.branches);
            CHECK(check_shape(t, "generate_tree") == sizes[k][1]);
            CHECK(s.depth >= 1 && s.depth <= s.size && s.branch_depth <= s.branches);
            ns_tree_destroy(t);
        }
    }
    ns_tree_t *t = NULL;
    CHECK(ns_generate_tree(10, 2, 1, &t) == NS_ERR_SIZE && t == NULL);
    CHECK(ns_generate_tree(5, 6, 1, &t) == NS_ERR_SIZE);
    CHECK(ns_generate_tree(0, 1, 1, &t) == NS_ERR_SIZE);
    CHECK(ns_generate_tree(10, 3, 1, NULL) == NS_ERR_INVALID_ARGUMENT);
}

static int same_tree(const ns_tree_t *a, const ns_tree_t *b) {
    return ns_tree_size(a) == ns_tree_size(b) &&
           memcmp(ns_tree_parent(a), ns_tree_parent(b), ns_tree_size(a) * sizeof(int32_t)) == 0;
}

static void test_paper_and_determinism(void) {
    const char *names[] = {"small-low", "small-high", "medium-low", "medium-high", "big-low", "big-high"};
    const int32_t expect[][2] = {{76, 7}, {76, 29}, {305, 30}, {319, 157}, {695, 66}, {691, 341}};
    for (int k = 0; k < 6; ++k) {
        ns_tree_t *a = NULL, *b = NULL, *c = NULL;
        CHECK_OK(ns_generate_paper_tree(names[k], 42, &a));
        CHECK_OK(ns_generate_paper_tree(names[k], 42, &b));
        CHECK_OK(ns_generate_paper_tree(names[k], 43, &c));
        if (a && b && c) {
            ns_tree_stats s;
            ns_tree_get_stats(a, &s);
            CHECK(s.size == expect[k][0] && s.branches == expect[k][1]);
            CHECK_MSG(same_tree(a, b), "%s: same seed, different tree", names[k]);
            CHECK_MSG(!same_tree(a, c), "%s: different seeds, same tree", names[k]);
        }
        ns_tree_destroy(a);
        ns_tree_destroy(b);
        ns_tree_destroy(c);
    }
    ns_tree_t *t = NULL;
    CHECK(ns_generate_paper_tree("huge", 1, &t) == NS_ERR_INVALID_ARGUMENT);
}

/* Branch lengths of a tree whose branch points all have two children:
 * walks the branches breadth-first and records (level, length). */
static void test_binary(void) {
    for (int32_t levels = 1; levels <= 4; ++levels) {
        ns_tree_t *t = NULL;
        CHECK_OK(ns_generate_binary_tree(512, levels, &t));
        if (!t) continue;
        ns_tree_stats s;
        ns_tree_get_stats(t, &s);
        CHECK(s.size == 512);
        CHECK(s.branches == (1 << levels) - 1 && s.branch_depth == levels);
        CHECK(check_shape(t, "binary") == (1 << levels) - 1);
        /* the rule written out: level k >= 1 has 2^k branches of
         * floor(256 / ((levels - 1) 2^k)); the root branch takes the rest */
        const int32_t *p = ns_tree_parent(t);
        int32_t n = ns_tree_size(t), *level = malloc(n * sizeof *level), *nc = calloc(n, sizeof *nc);
        int32_t len[8][300];
        int32_t count[8] = {0};
        memset(len, 0, sizeof len);
        for (int32_t i = 1; i < n; ++i) nc[p[i]]++;
        int32_t br = -1;
        for (int32_t i = 0; i < n; ++i) {
            int starts = i == 0 || nc[p[i]] != 1;
            level[i] = i == 0 ? 0 : level[p[i]] + (starts ? 1 : 0);
            if (starts) br = count[level[i]]++;
            len[level[i]][br]++;
        }
        int ok = count[0] == 1;
        int32_t used = 0;
        for (int32_t k = 1; k < levels; ++k) {
            int32_t want = 256 / ((levels - 1) << k);
            ok &= count[k] == (1 << k);
            for (int32_t j = 0; j < count[k]; ++j) ok &= len[k][j] == want;
            used += want << k;
        }
        ok &= len[0][0] == 512 - used;
        CHECK_MSG(ok, "binary tree with %d levels does not follow the documented split", (int)levels);
        if (levels == 3) CHECK(len[0][0] == 256 && len[1][0] == 64 && len[2][0] == 32);
        if (levels == 2) CHECK(len[0][0] == 256 && len[1][0] == 128);
        free(level);
        free(nc);
        ns_tree_destroy(t);
    }
    ns_tree_t *t = NULL;
    CHECK(ns_generate_binary_tree(8, 4, &t) == NS_ERR_SIZE);
    CHECK(ns_generate_binary_tree(512, 0, &t) == NS_ERR_SIZE);
}

static void test_random(void) {
    const char *presets[] = {"low", "medium", "high"};
    double mean_branches[3] = {0, 0, 0};
    for (int k = 0; k < 3; ++k) {
        ns_random_tree_params p;
        CHECK_OK(ns_random_tree_preset(presets[k], &p));
        for (uint64_t seed = 0; seed < 40; ++seed) {
            ns_tree_t *a = NULL, *b = NULL;
            CHECK_OK(ns_generate_random_tree(&p, seed, &a));
            CHECK_OK(ns_generate_random_tree(&p, seed, &b));
            if (!a || !b) continue;
            CHECK(same_tree(a, b));
            ns_tree_stats s;
            ns_tree_get_stats(a, &s);
            check_shape(a, presets[k]);
            /* the soma plus at least the two level-1 dendrites (probability 1) of 20 compartments */
            CHECK(s.size >= 41);
            /* a root-to-leaf path holds at most the soma and one branch per level */
            int32_t most = 1;
            for (int32_t i = 0; i < p.max_levels; ++i) {
                double t = (double)i / (p.max_levels - 1);
                most += (int32_t)lround(p.compartments_start + t * (p.compartments_end - p.compartments_start));
            }
            CHECK(s.depth <= most);
            mean_branches[k] += s.branches / 40.0;
            ns_tree_destroy(a);
            ns_tree_destroy(b);
        }
    }
    CHECK_MSG(mean_branches[0] < mean_branches[1] && mean_branches[1] < mean_branches[2],
              "mean branches low %g medium %g high %g", mean_branches[0], mean_branches[1], mean_branches[2]);
    printf("  mean branches over 40 seeds: low %.1f, medium %.1f, high %.1f\n", mean_branches[0],
           mean_branches[1], mean_branches[2]);
    /* probability 1 everywhere: the full binary tree, 2^levels - 1 sections below the soma */
    ns_random_tree_params full = {3, 1.0, 1.0, 4, 4, 100.0, 100.0};
    ns_tree_t *t = NULL;
    CHECK_OK(ns_generate_random_tree(&full, 7, &t));
    if (t) {
        ns_tree_stats s;
        ns_tree_get_stats(t, &s);
        CHECK(s.size == 1 + 14 * 4 && s.branches == 15 && s.leaves == 8);
        ns_tree_destroy(t);
    }
    ns_random_tree_params bad = full;
    bad.branch_prob_end = 1.5;
    CHECK(ns_generate_random_tree(&bad, 1, &t) == NS_ERR_INVALID_ARGUMENT);
    ns_random_tree_params none = full;
    none.max_levels = 0;
    CHECK_OK(ns_generate_random_tree(&none, 1, &t));
    CHECK(ns_tree_size(t) == 1);
    ns_tree_destroy(t);
    ns_random_tree_params pr;
    CHECK(ns_random_tree_preset("extreme", &pr) == NS_ERR_INVALID_ARGUMENT);
}

int main(void) {
    test_size_branches();
    test_paper_and_determinism();
    test_binary();
    test_random();
    return check_summary("test_generators");
}
