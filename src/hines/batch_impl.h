/* Private: the batch and solver handles, and the backend table that the CPU
 * and CUDA backends fill. Algorithms never test `if (cuda)`: the solver
 * calls through `ops`. */
#ifndef NS_HINES_BATCH_IMPL_H
#define NS_HINES_BATCH_IMPL_H

#include "core/registry.h"
#include "neurosolve/hines.h"

struct ns_batch {
    int32_t n_shapes;
    ns_tree_t **shapes;    /* owned copies */
    int64_t n_cells;
    int32_t *cell_shape;   /* n_cells */
    int64_t *cell_offset;  /* n_cells + 1: start of each cell in the Flat arrays */
    int32_t max_size;      /* largest shape */
};

typedef struct ns_hines_backend_ops ns_hines_backend_ops;
typedef struct ns_host_pipeline ns_host_pipeline;

struct ns_hines_solver {
    const ns_batch_t *batch;
    ns_solve_options options;
    ns_hines_method method;  /* resolved, never AUTO */
    ns_backend backend;      /* resolved, never AUTO */
    int device;              /* CUDA: the first GPU (options.device resolved); CPU: -1 */
    ns_solve_timing timing;
    const ns_hines_backend_ops *ops;
    void *state;             /* backend-private */
    ns_host_pipeline *pipeline; /* CUDA: host arrays (hines/cuda/host_pipeline.c), made on first use */
};

struct ns_hines_backend_ops {
    const char *name;
    /* Allocate solver->state for solver->method. */
    ns_status (*create)(ns_hines_solver_t *solver);
    /* Solve in place on host Flat arrays; fill solver->timing. NULL for the
     * CUDA implementations: the framework's host pipeline runs their
     * device entry point on chunks (host_pipeline.c). */
    ns_status (*solve)(ns_hines_solver_t *solver, const double *a, const double *b, double *d,
                       double *rhs);
    void (*destroy)(ns_hines_solver_t *solver);
    /* Optional (NULL: the generic loop in solver.c restores the inputs on the
     * host and calls solve). Stage the inputs once, run `repeats` timed
     * solves restoring the inputs between them, leave the last result in d
     * and rhs; kernel_ms[r] is the kernel time of run r. */
    ns_status (*benchmark)(ns_hines_solver_t *solver, const double *a, const double *b, double *d,
                           double *rhs, int repeats, double *kernel_ms);
    /* Optional (NULL: NS_ERR_UNSUPPORTED). Queue a solve of device arrays
     * (Flat) on `stream` (a cudaStream_t); wait blocks until the last one
     * finished and reports its pivots. */
    ns_status (*solve_device)(ns_hines_solver_t *solver, const double *a, const double *b, double *d,
                              double *rhs, void *stream);
    ns_status (*wait)(ns_hines_solver_t *solver);
    /* Optional (NULL: the native layout is Flat). The native layout's
     * device call: NS_HINES_LAYOUT_INTERLEAVED arrays, no conversion. */
    ns_status (*solve_device_interleaved)(ns_hines_solver_t *solver, const double *a, const double *b, double *d,
                                          double *rhs, void *stream);
};

/* The family's implementations (core/registry.h), in hines/solver.c. */
ns_impl_table ns_hines_impls(void);

/* The host path of every CUDA implementation (host_pipeline.c; in a build
 * without CUDA never reached). */
ns_status ns_host_pipeline_solve(ns_hines_solver_t *solver, const double *a, const double *b, double *d,
                                 double *rhs);
void ns_host_pipeline_destroy(ns_host_pipeline *pipeline);

/* ns_hines_convert_device's kernel launch (hines/cuda/solve_cuda.c; without
 * CUDA: NS_ERR_UNSUPPORTED). */
ns_status ns_hines_convert_launch(const ns_batch_t *batch, int to_flat, const double *src, double *dst, void *stream);

/* The implementations (registered in src/backends.c); the CUDA ones return
 * NULL in a build without CUDA. cuda: the same-shape kernels (one thread per
 * cell, onchip); mixed: several shapes, fine-grained, branch-level; tree:
 * tree contraction. */
const ns_hines_backend_ops *ns_hines_cpu_backend(void);
const ns_hines_backend_ops *ns_hines_cuda_backend(void);
const ns_hines_backend_ops *ns_hines_mixed_cuda_backend(void);
const ns_hines_backend_ops *ns_hines_tree_cuda_backend(void);

/* The random diagonally dominant values of one cell (ns_batch_random_values'
 * recipe) from the stream (seed, stream); callers use the global cell index
 * as the stream so values do not depend on threads or processes.
 * NS_API: exported from a shared libneurosolve for libneurosolve_mpi. */
NS_API void ns_hines_random_cell(const ns_tree_t *tree, uint64_t seed, uint64_t stream, double *a, double *b,
                                 double *d, double *rhs);

/* Turn the pivot index returned by ns_hines_solve_one for `cell` into a status. */
ns_status ns_hines_pivot_error(const ns_batch_t *batch, int64_t cell, int32_t index);

#endif
