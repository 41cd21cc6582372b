/* CPU backend: the reference Hines solve (NEURON's triang + bksub) and the
 * batch over cells, sequential or spread over OpenMP threads. */
#include <math.h>
#include <stdlib.h>

#include "core/error.h"
#include "core/timer.h"
#include "hines/batch_impl.h"
#include "tree/tree_impl.h"

#ifdef NS_HAVE_OPENMP
#include <omp.h>
#endif

/* Pivots must be non-zero and finite; `p == p` rejects NaN, isfinite Inf. */
static inline int bad_pivot(double p) { return p == 0.0 || !isfinite(p); }

int32_t ns_hines_solve_one(int32_t n, const int32_t *parent, const double *a, const double *b,
                           double *d, double *rhs) {
    if (n <= 0) return -1; /* nothing to solve: no d[0] to read */
    /* triang: eliminate the children's entries a[i] in their parents' rows,
     * from the leaves (highest index) towards the root. */
    for (int32_t i = n - 1; i >= 1; --i) {
        if (bad_pivot(d[i])) return i;
        const double f = a[i] / d[i];
        const int32_t p = parent[i];
        d[p] -= f * b[i];
        rhs[p] -= f * rhs[i];
    }
    if (bad_pivot(d[0])) return 0;
    /* bksub: the root first, then every node from its parent's solution. */
    rhs[0] /= d[0];
    for (int32_t i = 1; i < n; ++i) rhs[i] = (rhs[i] - b[i] * rhs[parent[i]]) / d[i];
    return -1;
}

static ns_status cpu_create(ns_hines_solver_t *s) {
    if (s->method != NS_HINES_SEQUENTIAL && s->method != NS_HINES_OPENMP)
        return ns_fail(NS_ERR_UNSUPPORTED, "method '%s' is not a CPU method",
                       ns_hines_method_name(s->method));
    return NS_OK;
}

/* Solve cell c of the batch; the index of its first bad pivot, or -1. */
static inline int32_t solve_cell(const ns_batch_t *batch, int64_t c, const double *a, const double *b,
                                 double *d, double *rhs) {
    const ns_tree_t *t = batch->shapes[batch->cell_shape[c]];
    const int64_t o = batch->cell_offset[c];
    return ns_hines_solve_one(t->size, t->parent, a + o, b + o, d + o, rhs + o);
}

static ns_status cpu_solve(ns_hines_solver_t *s, const double *a, const double *b, double *d,
                           double *rhs) {
    const ns_batch_t *batch = s->batch;
    const int64_t n_cells = batch->n_cells;
    const double t0 = ns_time_ms();
    /* The first failing cell (lowest index) is reported, whatever the thread
     * order; the other cells are still solved. */
    int64_t bad_cell = n_cells;
    int32_t bad_index = -1;
#ifdef NS_HAVE_OPENMP
    if (s->method == NS_HINES_OPENMP) {
        const int threads = s->options.threads > 0 ? s->options.threads : omp_get_max_threads();
#pragma omp parallel num_threads(threads)
        {
            int64_t my_cell = n_cells;
            int32_t my_index = -1;
#pragma omp for schedule(static)
            for (int64_t c = 0; c < n_cells; ++c) {
                int32_t r = solve_cell(batch, c, a, b, d, rhs);
                if (r >= 0 && c < my_cell) {
                    my_cell = c;
                    my_index = r;
                }
            }
#pragma omp critical(ns_hines_bad_pivot)
            if (my_cell < bad_cell) {
                bad_cell = my_cell;
                bad_index = my_index;
            }
        }
    } else
#endif
    {
        /* NS_HINES_SEQUENTIAL, and NS_HINES_OPENMP in a build without OpenMP */
        for (int64_t c = 0; c < n_cells; ++c) {
            int32_t r = solve_cell(batch, c, a, b, d, rhs);
            if (r >= 0 && c < bad_cell) {
                bad_cell = c;
                bad_index = r;
            }
        }
    }
    s->timing.kernel_ms = s->timing.total_ms = ns_time_ms() - t0;
    if (bad_cell < n_cells) return ns_hines_pivot_error(batch, bad_cell, bad_index);
    return NS_OK;
}

static void cpu_destroy(ns_hines_solver_t *s) { (void)s; }

const ns_hines_backend_ops *ns_hines_cpu_backend(void) {
    static const ns_hines_backend_ops ops = {"cpu", cpu_create, cpu_solve, cpu_destroy, NULL, NULL, NULL, NULL};
    return &ops;
}
