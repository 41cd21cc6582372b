/* Shared by test_hines_mixed.c (CPU planning) and test_hines_mixed_cuda.c:
 * the bundled morphologies as trees, batches with random values, and the
 * error against the sequential CPU solve. */
#ifndef NS_TEST_HINES_MIXED_COMMON_H
#define NS_TEST_HINES_MIXED_COMMON_H

#include <dirent.h>
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "neurosolve/neurosolve.h"

typedef struct {
    int count;
    ns_tree_t *tree[128];
    char name[128][128];
    int largest; /* index of the tree with the most compartments */
} bundled_set;

static int cmp_names(const void *x, const void *y) {
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* Every *.swc of the bundled set, discretised with the defaults. */
static int bundled_load(bundled_set *set) {
    memset(set, 0, sizeof *set);
    DIR *dir = opendir(NS_MORPHOLOGIES);
    if (!dir) return 0;
    char *names[256];
    int n = 0;
    for (struct dirent *e; (e = readdir(dir)) != NULL && n < 256;) {
        size_t len = strlen(e->d_name);
        if (len > 4 && strcmp(e->d_name + len - 4, ".swc") == 0) {
            names[n] = malloc(len + 1);
            if (names[n]) memcpy(names[n++], e->d_name, len + 1);
        }
    }
    closedir(dir);
    qsort(names, (size_t)n, sizeof *names, cmp_names);
    for (int k = 0; k < n; ++k) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", NS_MORPHOLOGIES, names[k]);
        ns_morph_t *m = NULL;
        ns_cell_t *cell = NULL;
        ns_swc_options so;
        ns_swc_options_init(&so);
        so.radii = NS_RADIUS_DEFAULT; /* one tracing has no diameters; radii do not change the tree */
        so.default_radius = 0.5;
        ns_status st = ns_swc_read(path, &so, &m);
        if (st == NS_OK) st = ns_discretize(m, NULL, &cell);
        if (st == NS_OK && set->count < 128) {
            const ns_tree_t *t = ns_cell_tree(cell);
            if (ns_tree_create(ns_tree_size(t), ns_tree_parent(t), &set->tree[set->count]) == NS_OK) {
                snprintf(set->name[set->count], sizeof set->name[0], "%s", names[k]);
                if (ns_tree_size(t) > ns_tree_size(set->tree[set->largest])) set->largest = set->count;
                set->count++;
            }
        }
        ns_cell_destroy(cell);
        ns_morph_destroy(m);
        free(names[k]);
    }
    return set->count;
}

static void bundled_free(bundled_set *set) {
    for (int k = 0; k < set->count; ++k) ns_tree_destroy(set->tree[k]);
    set->count = 0;
}

/* Inputs of one batch and the sequential solution. */
typedef struct {
    ns_batch_t *batch;
    int64_t n;
    double *a, *b, *d, *rhs, *x_ref;
} problem;

static int problem_make(problem *p, int32_t n_shapes, const ns_tree_t *const *shapes, int64_t cells,
                        const int32_t *cell_shape, uint64_t seed) {
    memset(p, 0, sizeof *p);
    if (ns_batch_create(n_shapes, shapes, cells, cell_shape, &p->batch) != NS_OK) return 0;
    p->n = ns_batch_compartments(p->batch);
    p->a = malloc((size_t)p->n * 5 * sizeof(double));
    if (!p->a) return 0;
    p->b = p->a + p->n;
    p->d = p->b + p->n;
    p->rhs = p->d + p->n;
    p->x_ref = p->rhs + p->n;
    if (ns_batch_random_values(p->batch, seed, p->a, p->b, p->d, p->rhs) != NS_OK) return 0;
    double *d = malloc((size_t)p->n * sizeof(double));
    if (!d) return 0;
    memcpy(d, p->d, (size_t)p->n * sizeof(double));
    memcpy(p->x_ref, p->rhs, (size_t)p->n * sizeof(double));
    ns_solve_options o;
    ns_solve_options_init(&o);
    o.method = NS_HINES_SEQUENTIAL;
    ns_status st = ns_hines_solve(p->batch, &o, p->a, p->b, d, p->x_ref);
    free(d);
    return st == NS_OK;
}

static void problem_free(problem *p) {
    ns_batch_destroy(p->batch);
    free(p->a);
    memset(p, 0, sizeof *p);
}

/* Largest per-cell relative error max|x - ref| / max|ref| over the batch. */
static double problem_error(const problem *p, const double *x) {
    const int64_t *off = ns_batch_cell_offset(p->batch);
    double worst = 0.0;
    for (int64_t c = 0; c < ns_batch_cells(p->batch); ++c) {
        double num = 0.0, den = 0.0;
        for (int64_t i = off[c]; i < off[c + 1]; ++i) {
            const double e = fabs(x[i] - p->x_ref[i]);
            if (!(e <= num)) num = e; /* NaN propagates */
            if (fabs(p->x_ref[i]) > den) den = fabs(p->x_ref[i]);
        }
        const double rel = num / (den > DBL_MIN ? den : DBL_MIN);
        if (!(rel <= worst)) worst = rel;
    }
    return worst;
}

#endif
