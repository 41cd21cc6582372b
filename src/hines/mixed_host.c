/* Mixed-shape planning, part 3: the one-thread-per-cell layout, and a CPU
 * run of the grouped schedule (the same per-branch steps as the kernels in
 * cuda/mixed_kernels.cu), so that CI can check a plan without a GPU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "hines/mixed_plan.h"
#include "tree/tree_impl.h"

void ns_mixed_cells_free(ns_mixed_cells *c) {
    if (!c) return;
    free(c->order);
    free(c->sorted_shape);
    free(c->rowoff);
    free(c->gather);
    free(c->shape_size);
    free(c->shape_poff);
    free(c->parents);
    memset(c, 0, sizeof *c);
}

ns_status ns_mixed_cells_build(const ns_batch_t *batch, ns_mixed_cells *out) {
    memset(out, 0, sizeof *out);
    const int64_t nc = batch->n_cells;
    const int32_t ns = batch->n_shapes, nmax = batch->max_size;
    out->n_cells = nc;
    out->max_size = nmax;
    out->order = malloc((size_t)nc * sizeof(int32_t));
    out->sorted_shape = malloc((size_t)nc * sizeof(int32_t));
    out->rowoff = calloc((size_t)nmax + 1, sizeof(int64_t));
    out->gather = malloc((size_t)ns_batch_compartments(batch) * sizeof(int64_t));
    out->shape_size = malloc((size_t)ns * sizeof(int32_t));
    out->shape_poff = malloc((size_t)ns * sizeof(int64_t));
    int64_t *by_size = calloc((size_t)nmax + 2, sizeof(int64_t));
    if (!out->order || !out->sorted_shape || !out->rowoff || !out->gather || !out->shape_size ||
        !out->shape_poff || !by_size || nc > INT32_MAX) {
        free(by_size);
        ns_mixed_cells_free(out);
        return ns_fail(nc > INT32_MAX ? NS_ERR_SIZE : NS_ERR_OUT_OF_MEMORY,
                       "one-thread-per-cell layout of %lld cells", (long long)nc);
    }
    for (int32_t s = 0; s < ns; ++s) {
        out->shape_size[s] = batch->shapes[s]->size;
        out->shape_poff[s] = out->n_parents;
        out->n_parents += batch->shapes[s]->size;
    }
    out->parents = malloc((size_t)out->n_parents * sizeof(int32_t));
    if (!out->parents) {
        free(by_size);
        ns_mixed_cells_free(out);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "parent arrays");
    }
    for (int32_t s = 0; s < ns; ++s)
        memcpy(out->parents + out->shape_poff[s], batch->shapes[s]->parent,
               (size_t)batch->shapes[s]->size * sizeof(int32_t));
    /* Counting sort of the cells by decreasing size (stable). */
    for (int64_t c = 0; c < nc; ++c) by_size[nmax - batch->shapes[batch->cell_shape[c]]->size + 1]++;
    for (int32_t k = 1; k <= nmax + 1; ++k) by_size[k] += by_size[k - 1];
    for (int64_t c = 0; c < nc; ++c) {
        const int32_t s = batch->cell_shape[c];
        const int64_t r = by_size[nmax - batch->shapes[s]->size]++;
        out->order[r] = (int32_t)c;
        out->sorted_shape[r] = s;
    }
    free(by_size);
    /* Row k holds the sorted cells with more than k compartments: a prefix. */
    int64_t alive = nc;
    for (int32_t k = 0; k < nmax; ++k) {
        while (alive > 0 && out->shape_size[out->sorted_shape[alive - 1]] <= k) --alive;
        out->rowoff[k + 1] = out->rowoff[k] + alive;
    }
    for (int64_t r = 0; r < nc; ++r) {
        const int64_t off = batch->cell_offset[out->order[r]];
        for (int32_t k = 0; k < out->shape_size[out->sorted_shape[r]]; ++k)
            out->gather[out->rowoff[k] + r] = off + k;
    }
    return NS_OK;
}

static inline int bad_pivot(double p) { return p == 0.0 || !isfinite(p); }

ns_status ns_mixed_solve_host(const ns_batch_t *batch, const ns_mixed_layout *l, const double *a,
                              const double *b, double *d, double *rhs) {
    const int64_t n = l->n_nodes;
    double *A = malloc((size_t)n * 4 * sizeof(double));
    if (!A) return ns_fail(NS_ERR_OUT_OF_MEMORY, "host solve of %lld compartments", (long long)n);
    double *B = A + n, *D = B + n, *R = D + n;
    for (int64_t p = 0; p < n; ++p) {
        const int64_t g = l->gather[p], e = l->edge[p];
        D[p] = d[g];
        R[p] = rhs[g];
        if (e < 0) A[p] = B[p] = 0.0;
        else {
            const int64_t o = e >> 1;
            A[p] = (e & 1) ? b[o] : a[o];
            B[p] = (e & 1) ? a[o] : b[o];
        }
    }
    int64_t bad = INT64_MAX;
    for (int32_t g = 0; g < l->n_groups; ++g) {
        /* Backward (triang), deepest level first. */
        for (int32_t li = l->group_level[g + 1] - 1; li >= l->group_level[g]; --li) {
            const ns_mixed_level *L = &l->levels[li];
            const int64_t *ro = l->rowoff + L->rows;
            for (int32_t t = 0; t < L->width; ++t) {
                const int64_t br = L->first_branch + t;
                const int32_t len = l->br_len[br];
                int64_t p = L->base + ro[len - 1] + t;
                double dl = D[p], rl = R[p];
                for (int64_t k = l->br_child[br]; k < l->br_child[br + 1]; ++k) {
                    const int64_t c = l->child_pos[k];
                    if (bad_pivot(D[c]) && l->gather[c] < bad) bad = l->gather[c];
                    const double f = A[c] / D[c];
                    dl -= f * B[c];
                    rl -= f * R[c];
                }
                D[p] = dl;
                R[p] = rl;
                for (int32_t j = len - 2; j >= 0; --j) {
                    if (bad_pivot(dl) && l->gather[p] < bad) bad = l->gather[p];
                    const int64_t q = L->base + ro[j] + t;
                    const double f = A[p] / dl;
                    dl = D[q] - f * B[p];
                    rl = R[q] - f * rl;
                    D[q] = dl;
                    R[q] = rl;
                    p = q;
                }
            }
        }
        /* Forward (bksub), root level first. */
        for (int32_t li = l->group_level[g]; li < l->group_level[g + 1]; ++li) {
            const ns_mixed_level *L = &l->levels[li];
            const int64_t *ro = l->rowoff + L->rows;
            for (int32_t t = 0; t < L->width; ++t) {
                const int64_t br = L->first_branch + t;
                const int64_t pp = l->br_ppos[br];
                double x = pp >= 0 ? R[pp] : 0.0;
                if (pp < 0 && bad_pivot(D[L->base + t]) && l->gather[L->base + t] < bad)
                    bad = l->gather[L->base + t];
                for (int32_t j = 0; j < l->br_len[br]; ++j) {
                    const int64_t q = L->base + ro[j] + t;
                    x = (R[q] - B[q] * x) / D[q];
                    R[q] = x;
                }
            }
        }
    }
    for (int64_t p = 0; p < n; ++p) {
        rhs[l->gather[p]] = R[p];
        d[l->gather[p]] = D[p];
    }
    free(A);
    if (bad != INT64_MAX) {
        const int64_t cell = ns_mixed_cell_of(batch, bad);
        return ns_hines_pivot_error(batch, cell, (int32_t)(bad - batch->cell_offset[cell]));
    }
    return NS_OK;
}
