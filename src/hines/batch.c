/* Batches of Hines systems: shapes, cell-to-shape map, Flat offsets, and
 * random diagonally dominant values. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/rng.h"
#include "hines/batch_impl.h"
#include "tree/tree_impl.h"

/* The most compartments a batch may have: each value array (doubles) must
 * be addressable. */
#define BATCH_MAX_COMPARTMENTS ((int64_t)(PTRDIFF_MAX / (ptrdiff_t)sizeof(double)))

void ns_batch_destroy(ns_batch_t *batch) {
    if (!batch) return;
    if (batch->shapes)
        for (int32_t s = 0; s < batch->n_shapes; ++s) ns_tree_destroy(batch->shapes[s]);
    free(batch->shapes);
    free(batch->cell_shape);
    free(batch->cell_offset);
    free(batch);
}

ns_status ns_batch_create(int32_t n_shapes, const ns_tree_t *const *shapes, int64_t n_cells,
                          const int32_t *cell_shape, ns_batch_t **out) {
    if (!out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_batch_create: out is NULL");
    *out = NULL;
    if (n_cells <= 0) return ns_fail(NS_ERR_EMPTY, "a batch needs at least one cell (cells = %lld)", (long long)n_cells);
    if (n_shapes <= 0 || !shapes)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "a batch needs at least one shape (shapes = %d)", (int)n_shapes);
    for (int32_t s = 0; s < n_shapes; ++s)
        if (!shapes[s]) return ns_fail(NS_ERR_INVALID_ARGUMENT, "shape %d is NULL", (int)s);
    /* Every cell has at least one compartment, and the value arrays hold
     * 8 bytes per compartment: more cells than that can address would wrap
     * the sizes of the allocations below. */
    if (n_cells > BATCH_MAX_COMPARTMENTS)
        return ns_fail(NS_ERR_SIZE, "a batch of %lld cells is more than the %lld compartments a value array can hold",
                       (long long)n_cells, (long long)BATCH_MAX_COMPARTMENTS);

    ns_batch_t *b = calloc(1, sizeof *b);
    if (!b) return ns_fail(NS_ERR_OUT_OF_MEMORY, "batch");
    b->n_shapes = n_shapes;
    b->n_cells = n_cells;
    b->shapes = calloc((size_t)n_shapes, sizeof *b->shapes);
    b->cell_shape = malloc((size_t)n_cells * sizeof *b->cell_shape);
    b->cell_offset = malloc((size_t)(n_cells + 1) * sizeof *b->cell_offset);
    if (!b->shapes || !b->cell_shape || !b->cell_offset) {
        ns_batch_destroy(b);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "batch of %lld cells", (long long)n_cells);
    }
    for (int32_t s = 0; s < n_shapes; ++s) {
        ns_status st = ns_tree_create(ns_tree_size(shapes[s]), ns_tree_parent(shapes[s]), &b->shapes[s]);
        if (st != NS_OK) {
            ns_batch_destroy(b);
            return st;
        }
        if (ns_tree_size(shapes[s]) > b->max_size) b->max_size = ns_tree_size(shapes[s]);
    }
    b->cell_offset[0] = 0;
    for (int64_t c = 0; c < n_cells; ++c) {
        int32_t s = cell_shape ? cell_shape[c] : (int32_t)(c % n_shapes);
        if (s < 0 || s >= n_shapes) {
            ns_batch_destroy(b);
            return ns_fail(NS_ERR_SIZE, "cell %lld has shape %d, but the batch has %d shapes",
                           (long long)c, (int)s, (int)n_shapes);
        }
        b->cell_shape[c] = s;
        if (b->cell_offset[c] > BATCH_MAX_COMPARTMENTS - ns_tree_size(b->shapes[s])) {
            ns_batch_destroy(b);
            return ns_fail(NS_ERR_SIZE, "a batch of %lld cells has more than the %lld compartments a value array "
                           "can hold (at cell %lld)", (long long)n_cells, (long long)BATCH_MAX_COMPARTMENTS,
                           (long long)c);
        }
        b->cell_offset[c + 1] = b->cell_offset[c] + ns_tree_size(b->shapes[s]);
    }
    *out = b;
    return NS_OK;
}

int64_t ns_batch_cells(const ns_batch_t *batch) { return batch ? batch->n_cells : 0; }
int64_t ns_batch_compartments(const ns_batch_t *batch) {
    return batch ? batch->cell_offset[batch->n_cells] : 0;
}
int32_t ns_batch_shapes(const ns_batch_t *batch) { return batch ? batch->n_shapes : 0; }
const ns_tree_t *ns_batch_shape(const ns_batch_t *batch, int32_t shape) {
    if (!batch || shape < 0 || shape >= batch->n_shapes) return NULL;
    return batch->shapes[shape];
}
const int32_t *ns_batch_cell_shape(const ns_batch_t *batch) { return batch ? batch->cell_shape : NULL; }
const int64_t *ns_batch_cell_offset(const ns_batch_t *batch) { return batch ? batch->cell_offset : NULL; }

void ns_hines_random_cell(const ns_tree_t *tree, uint64_t seed, uint64_t stream, double *a, double *b,
                          double *d, double *rhs) {
    const int32_t n = tree->size;
    const int32_t *p = tree->parent;
    ns_rng rng;
    ns_rng_seed(&rng, seed, stream);
    a[0] = 0.0;
    b[0] = 0.0;
    for (int32_t i = 1; i < n; ++i) {
        a[i] = -ns_rng_uniform(&rng, 0.1, 1.0);
        b[i] = -ns_rng_uniform(&rng, 0.1, 1.0);
    }
    for (int32_t i = 0; i < n; ++i) {
        d[i] = ns_rng_uniform(&rng, 0.5, 1.5) - (i ? b[i] : 0.0);
        rhs[i] = ns_rng_uniform(&rng, -1.0, 1.0);
    }
    for (int32_t i = 1; i < n; ++i) d[p[i]] -= a[i]; /* row p holds a[i] */
}

ns_status ns_batch_random_values(const ns_batch_t *batch, uint64_t seed, double *a, double *b,
                                 double *d, double *rhs) {
    if (!batch || !a || !b || !d || !rhs)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_batch_random_values: NULL argument");
    /* Each cell draws from its own stream (seed, cell), so the values do not
     * depend on the thread count. */
#ifdef NS_HAVE_OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int64_t c = 0; c < batch->n_cells; ++c) {
        const int64_t o = batch->cell_offset[c];
        ns_hines_random_cell(batch->shapes[batch->cell_shape[c]], seed, (uint64_t)c, a + o, b + o, d + o,
                             rhs + o);
    }
    return NS_OK;
}
