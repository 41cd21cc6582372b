/* neurosolve: batches of Hines systems and their solvers.
 *
 * The host layout is Flat: the compartments of cell c occupy
 * [cell_offset[c], cell_offset[c+1]) of every value array, in the cell's tree
 * order. For compartment i of a cell with parent p (NEURON's convention):
 *     d[i] x[i] + b[i] x[p] = rhs[i]     and row p holds a[i] x[i].
 * The papers' names: u = a (upper), l = b (lower).
 *
 * A solve overwrites rhs with the solution x. d is overwritten with the
 * factorised diagonal by the CPU methods; the GPU methods leave the host's d
 * unspecified (they do not copy it back, which saves 8 of 48 bytes per
 * compartment: docs/methods.md). */
#ifndef NEUROSOLVE_HINES_H
#define NEUROSOLVE_HINES_H

#include "neurosolve/export.h"

#include <stddef.h>
#include <stdint.h>
#include "neurosolve/backend.h" /* ns_backend, ns_solve_timing, NS_DEVICE_CURRENT */
#include "neurosolve/status.h"
#include "neurosolve/tree.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Methods. Each belongs to one backend; docs/methods.md describes each. */
typedef enum ns_hines_method {
    NS_HINES_AUTO = 0,
    NS_HINES_SEQUENTIAL = 1,        /* CPU, one cell after another (the reference) */
    NS_HINES_OPENMP = 2,            /* CPU, cells spread over OpenMP threads (the paper's Multicore) */
    NS_HINES_FLAT = 3,              /* CUDA, one thread per cell, Flat layout */
    NS_HINES_INTERLEAVED = 4,       /* CUDA, one thread per cell, Full-Interleaved layout */
    NS_HINES_BLOCK_INTERLEAVED = 5, /* CUDA, Block-Interleaved layout (block_size cells per group) */
    NS_HINES_BLOCK_SHARED = 6,      /* CUDA, Block-Interleaved with rhs in shared memory */
    NS_HINES_ONCHIP = 7,            /* CUDA, intermediates kept on chip (docs/methods.md) */
    NS_HINES_BRANCH_LEVEL = 8,      /* CUDA, branches of a level as batched tridiagonal systems */
    NS_HINES_FINE_GRAINED = 9,      /* CUDA, one thread per branch */
    NS_HINES_TREE = 10              /* CUDA, tree contraction (rake and compress): log-depth rounds, any shapes */
} ns_hines_method;

NS_API const char *ns_hines_method_name(ns_hines_method method);
NS_API ns_status ns_hines_method_from_name(const char *name, ns_hines_method *method);
/* The backend a method runs on (NS_BACKEND_AUTO for NS_HINES_AUTO). */
NS_API ns_backend ns_hines_method_backend(ns_hines_method method);

typedef struct ns_solve_options {
    ns_backend backend;
    ns_hines_method method;
    int32_t block_size;          /* cells per group for the block methods; 0 = method's default */
    int32_t threads;             /* CPU threads; 0 = OpenMP's default */
    int32_t device;              /* CUDA device, or NS_DEVICE_CURRENT (the default): the
                                    device current on the calling thread at create */
    int32_t devices;             /* GPUs from `device` on (the same-shape one-thread-per-cell
                                    methods split host-array batches over them); 1 by default,
                                    0 = every usable GPU from `device` on */
    size_t device_memory_limit;  /* [bytes] per GPU; 0 = what the device has free */
    int check_finite;            /* 1: reject NaN/Inf in the inputs before solving */
    /* fine-grained and branch-level: planning passes, NS_PLAN_* flags;
     * 0 = both (re-root and split), NS_PLAN_NONE = neither (docs/methods.md) */
    int32_t plan_passes;
    /* fine-grained: where groups keep their images (NS_FINE_SHARED_*) */
    int32_t fine_shared;
} ns_solve_options;

#define NS_PLAN_REROOT 1 /* re-root each shape at its centre */
#define NS_PLAN_SPLIT 2  /* split branches longer than the level's mean */
#define NS_PLAN_NONE 4   /* neither pass */
#define NS_FINE_SHARED_AUTO 0   /* d and rhs in shared memory when every shape fits, else device memory */
#define NS_FINE_SHARED_NEVER 1  /* every group in device memory */
#define NS_FINE_SHARED_AB 2     /* as AUTO, with a and b in shared memory too */

NS_API void ns_solve_options_init(ns_solve_options *options);

/* ---------------------------------------------------------------- batch */

typedef struct ns_batch ns_batch_t;

/* A batch of n_cells cells drawn from n_shapes trees. cell_shape[c] is the
 * shape of cell c; with cell_shape NULL, cell c has shape c % n_shapes.
 * The trees are copied (the caller may destroy them afterwards). A batch of
 * more compartments than an array of doubles can address (2^60) gives
 * NS_ERR_SIZE. */
NS_API ns_status ns_batch_create(int32_t n_shapes, const ns_tree_t *const *shapes, int64_t n_cells,
                                 const int32_t *cell_shape, ns_batch_t **out);
NS_API void ns_batch_destroy(ns_batch_t *batch);
NS_API int64_t ns_batch_cells(const ns_batch_t *batch);
NS_API int64_t ns_batch_compartments(const ns_batch_t *batch);  /* length of each value array */
NS_API int32_t ns_batch_shapes(const ns_batch_t *batch);
NS_API const ns_tree_t *ns_batch_shape(const ns_batch_t *batch, int32_t shape);
NS_API const int32_t *ns_batch_cell_shape(const ns_batch_t *batch);   /* n_cells entries */
NS_API const int64_t *ns_batch_cell_offset(const ns_batch_t *batch);  /* n_cells + 1 entries */

/* Random, strictly diagonally dominant values for every cell (a, b in
 * [-1, -0.1], d = sum of |off-diagonals in the row| + [0.5, 1.5], rhs in
 * [-1, 1]); deterministic for a seed whatever the thread count. */
NS_API ns_status ns_batch_random_values(const ns_batch_t *batch, uint64_t seed,
                                        double *a, double *b, double *d, double *rhs);

/* ---------------------------------------------------------------- solve */

typedef struct ns_hines_solver ns_hines_solver_t;

/* A solver prepared for one batch and method: plans the layout and, for GPU
 * methods, allocates its device buffers once (in chunks if the batch does
 * not fit into options->device_memory_limit; the host-array path's staging
 * buffers are made by the first ns_hines_solver_solve and come on top of
 * that limit, docs/methods.md). The batch must outlive the solver. */
NS_API ns_status ns_hines_solver_create(const ns_batch_t *batch, const ns_solve_options *options,
                                        ns_hines_solver_t **out);
NS_API void ns_hines_solver_destroy(ns_hines_solver_t *solver);
/* The method and backend that NS_HINES_AUTO resolved to. */
NS_API ns_hines_method ns_hines_solver_method(const ns_hines_solver_t *solver);
NS_API ns_backend ns_hines_solver_backend(const ns_hines_solver_t *solver);

/* Solve every cell: a and b are read, rhs becomes x, d is overwritten with
 * unspecified values by GPU methods (the factorised diagonal on the CPU).
 * Arrays are host memory in the Flat layout. A zero or non-finite pivot gives
 * NS_ERR_SINGULAR naming the cell and compartment. */
NS_API ns_status ns_hines_solver_solve(ns_hines_solver_t *solver, const double *a, const double *b,
                                       double *d, double *rhs);
NS_API void ns_hines_solver_timing(const ns_hines_solver_t *solver, ns_solve_timing *timing);

/* Solve on device arrays: a, b, d, rhs are device memory of the solver's GPU
 * in the Flat layout (as the host arrays of ns_hines_solver_solve), and the
 * solve is queued on `stream` (a cudaStream_t of that GPU; NULL: the legacy
 * default stream). The call returns once the work is queued: the library
 * does not synchronise the device or the stream, and the arrays must stay
 * valid until the stream has run the solve. Pointers that are not device
 * memory of that GPU (or do not hold the batch), and a stream of another
 * GPU give NS_ERR_INVALID_ARGUMENT naming the argument. ns_hines_solver_wait
 * blocks until the last queued solve has finished and returns
 * NS_ERR_SINGULAR (cell and compartment) when it met a zero or non-finite
 * pivot. Every CUDA method (a solver created with devices = 1, the default);
 * CPU methods give NS_ERR_UNSUPPORTED (docs/api.md). One solver serves one
 * stream at a time: queue the next solve after the previous one on the same
 * stream, or use one solver per stream. */
NS_API ns_status ns_hines_solver_solve_device(ns_hines_solver_t *solver, const double *a, const double *b,
                                              double *d, double *rhs, void *stream);
NS_API ns_status ns_hines_solver_wait(ns_hines_solver_t *solver);

/* Device layouts. Flat is every method's; a batch of one shape solved by
 * NS_HINES_INTERLEAVED works in the paper's Full-Interleaved layout, where
 * compartment i of cell c is at i * n_cells + c, and device arrays already
 * in it skip the two conversions that a Flat device call makes
 * (docs/api.md, "Device layouts"). */
typedef enum ns_hines_layout {
    NS_HINES_LAYOUT_FLAT = 0,
    NS_HINES_LAYOUT_INTERLEAVED = 1
} ns_hines_layout;

/* The layout the solver's kernel works in. */
NS_API ns_hines_layout ns_hines_solver_native_layout(const ns_hines_solver_t *solver);

/* ns_hines_solver_solve_device on arrays in `layout`: Flat (any CUDA
 * method), or the solver's native layout. Another layout gives
 * NS_ERR_INVALID_ARGUMENT naming it and the native one. */
NS_API ns_status ns_hines_solver_solve_device_layout(ns_hines_solver_t *solver, ns_hines_layout layout,
                                                     const double *a, const double *b, double *d, double *rhs,
                                                     void *stream);

/* Convert one device array of a one-shape batch between layouts, queued on
 * `stream` (src and dst distinct, device memory of the current GPU, each
 * ns_batch_compartments long). NS_ERR_UNSUPPORTED for a batch of several
 * shapes or a build without CUDA. */
NS_API ns_status ns_hines_convert_device(const ns_batch_t *batch, ns_hines_layout from, ns_hines_layout to,
                                         const double *src, double *dst, void *stream);

/* Benchmark entry point: solve the same inputs `repeats` times and record
 * each run's kernel time [ms] in kernel_ms[0..repeats-1] (CUDA events on the
 * GPU, a monotonic clock on the CPU). Inputs are staged once (on the device
 * for GPU methods) and restored before every run outside the timed region;
 * the last run's results are written to d and rhs as by
 * ns_hines_solver_solve, so the caller can check them. */
NS_API ns_status ns_hines_solver_benchmark(ns_hines_solver_t *solver, const double *a, const double *b,
                                           double *d, double *rhs, int repeats, double *kernel_ms);

/* One-shot convenience: create, solve, destroy. options may be NULL (auto). */
NS_API ns_status ns_hines_solve(const ns_batch_t *batch, const ns_solve_options *options,
                                const double *a, const double *b, double *d, double *rhs);

/* The reference solve of one system (NEURON's triang + bksub), no checks
 * beyond the pivots: returns the index of the first zero or non-finite
 * pivot, or -1 on success. Exposed for tests and tools. */
NS_API int32_t ns_hines_solve_one(int32_t n, const int32_t *parent, const double *a, const double *b,
                                  double *d, double *rhs);

#ifdef __cplusplus
}
#endif
#endif
