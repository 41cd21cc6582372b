/* Private: the tridiagonal solver handle and the backend table that the CPU
 * and CUDA backends fill, so that solver.c never tests `if (cuda)`. */
#ifndef NS_TRIDIAG_IMPL_H
#define NS_TRIDIAG_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "core/registry.h"
#include "neurosolve/tridiag.h"

typedef struct ns_tridiag_backend_ops ns_tridiag_backend_ops;

struct ns_tridiag_solver {
    int32_t n;                  /* unknowns per system; the largest size when variable */
    int64_t batch;
    int variable;               /* 1: sizes[] differ per system */
    int32_t *sizes;             /* variable: batch entries (owned), else NULL */
    int64_t *offsets;           /* variable Flat: batch + 1 entries (owned), else NULL */
    ns_tridiag_layout layout;   /* of the caller's arrays */
    ns_tridiag_precision precision;
    int64_t stride;             /* resolved (never 0) */
    int64_t length;             /* entries of each caller array */
    double tol;                 /* resolved relative pivot tolerance */
    int32_t threads;
    int check_finite;
    ns_tridiag_method method;   /* resolved, never AUTO */
    ns_backend backend;         /* resolved, never AUTO */
    int device;                 /* CUDA methods: the GPU (resolved at create); -1 on the CPU */
    ns_solve_timing timing;
    size_t device_bytes;        /* filled by the backend's create */
    size_t workspace_bytes;
    const ns_tridiag_backend_ops *ops;
    void *state;                /* backend-private */
};

struct ns_tridiag_backend_ops {
    const char *name;
    /* Allocate solver->state (device buffers, workspaces) for solver->method. */
    ns_status (*create)(ns_tridiag_solver_t *solver);
    /* Solve on host arrays of the solver's precision; fill solver->timing. */
    ns_status (*solve)(ns_tridiag_solver_t *solver, const void *dl, const void *d, const void *du,
                       void *x);
    /* Queue a solve on device arrays on `stream` (NULL: not supported by
     * this backend); wait finishes the queued ones. Called on solver->device. */
    ns_status (*solve_device)(ns_tridiag_solver_t *solver, void *dl, void *d, void *du, void *x, void *stream);
    ns_status (*wait)(ns_tridiag_solver_t *solver);
    /* See ns_tridiag_solver_benchmark. */
    ns_status (*benchmark)(ns_tridiag_solver_t *solver, const void *dl, const void *d,
                           const void *du, void *x, int repeats, double *kernel_ms);
    void (*destroy)(ns_tridiag_solver_t *solver);
};

const ns_tridiag_backend_ops *ns_tridiag_cpu_backend(void);
/* The family's implementations (core/registry.h), in solver.c. */
ns_impl_table ns_tridiag_impls(void);
/* NULL in a build without CUDA. */
const ns_tridiag_backend_ops *ns_tridiag_cuda_backend(void);

/* Thomas on one system with a relative pivot tolerance and a caller scratch
 * of n elements; returns the first failing unknown or -1. */
int32_t ns_tridiag_thomas_f64(int32_t n, ptrdiff_t stride, const double *dl, const double *d,
                              const double *du, double *x, double *work, double tol);
int32_t ns_tridiag_thomas_f32(int32_t n, ptrdiff_t stride, const float *dl, const float *d,
                              const float *du, float *x, float *work, float tol);

/* Size of system s and where its unknown 0 lies / the stride between its
 * unknowns in the caller's arrays. */
static inline int32_t ns_tridiag_size_of(const ns_tridiag_solver_t *s, int64_t system) {
    return s->variable ? s->sizes[system] : s->n;
}
static inline int64_t ns_tridiag_base_of(const ns_tridiag_solver_t *s, int64_t system) {
    if (s->layout == NS_TRIDIAG_INTERLEAVED) return system;
    return s->variable ? s->offsets[system] : system * s->stride;
}
static inline ptrdiff_t ns_tridiag_step_of(const ns_tridiag_solver_t *s) {
    return s->layout == NS_TRIDIAG_INTERLEAVED ? (ptrdiff_t)s->stride : 1;
}

/* NS_ERR_SINGULAR naming the system and unknown (and the method). */
ns_status ns_tridiag_pivot_error(const ns_tridiag_solver_t *solver, int64_t system, int64_t unknown);

/* NS_ERR_NOT_FINITE naming the first NaN/Inf entry of the matrix or
 * right-hand side (entries outside the matrix are skipped), or NS_OK. */
ns_status ns_tridiag_check_finite(const ns_tridiag_solver_t *solver, const void *dl, const void *d,
                                  const void *du, const void *x);

#endif
