/* neurosolve: batched tridiagonal solvers (Thomas batches of fixed and
 * variable size, on-chip GPU solvers, cuSPARSE for comparison).
 * Owned by the tridiagonal module; see docs/tridiag.md.
 *
 * System s of a batch, with n unknowns (row k = 0 .. n-1):
 *     dl[k] x[k-1] + d[k] x[k] + du[k] x[k+1] = rhs[k]
 * dl[0] and du[n-1] lie outside the matrix: every method ignores them
 * (cuSPARSE's convention is that they are zero; the wrappers zero their
 * device copies). The right-hand side is passed in x and overwritten by the
 * solution, as in LAPACK's ?gtsv and cuSPARSE's gtsv*Batch.
 *
 * Layouts of the four arrays (dl, d, du, x), unknown k of system s:
 *     NS_TRIDIAG_FLAT         s * stride + k    (stride >= n, default n)
 *                             what cuSPARSE gtsv2StridedBatch takes
 *     NS_TRIDIAG_INTERLEAVED  k * stride + s    (stride >= batch, default batch)
 *                             what cuSPARSE gtsvInterleavedBatch takes
 * Variable sizes (ns_tridiag_solver_create_variable): system s has sizes[s]
 * unknowns; Flat puts it at offsets[s] + k (offsets NULL: packed one after
 * another), Interleaved at k * stride + s for k < sizes[s] (padded to the
 * largest size; padding entries are never read as data nor written). */
#ifndef NEUROSOLVE_TRIDIAG_H
#define NEUROSOLVE_TRIDIAG_H

#include "neurosolve/export.h"

#include <stddef.h>
#include <stdint.h>
#include "neurosolve/backend.h" /* ns_backend, ns_solve_timing, NS_DEVICE_CURRENT */
#include "neurosolve/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Solve one system of n unknowns by the Thomas algorithm, reading
 * dl[1..n-1], d[0..n-1], du[0..n-2] with stride `stride` between unknowns and
 * overwriting x (which holds the right-hand side on entry). Returns the index
 * of the first zero or non-finite pivot, or -1 on success (-2 when n > 4096
 * and the n-double scratch cannot be allocated). The reference. */
NS_API int32_t ns_thomas_one(int32_t n, ptrdiff_t stride, const double *dl, const double *d,
                             const double *du, double *x);
/* The same in single precision (arithmetic in float). */
NS_API int32_t ns_thomas_one_f32(int32_t n, ptrdiff_t stride, const float *dl, const float *d,
                                 const float *du, float *x);

typedef enum ns_tridiag_layout {
    NS_TRIDIAG_FLAT = 0,        /* system after system: s * stride + k */
    NS_TRIDIAG_INTERLEAVED = 1  /* unknown after unknown: k * stride + s */
} ns_tridiag_layout;

typedef enum ns_tridiag_precision {
    NS_TRIDIAG_FLOAT64 = 0,     /* double arrays, double arithmetic */
    NS_TRIDIAG_FLOAT32 = 1      /* float arrays, float arithmetic */
} ns_tridiag_precision;

/* Methods; docs/tridiag.md describes each. The native layout is the one the
 * kernel reads; other layouts are converted on the device (layout_ms). */
typedef enum ns_tridiag_method {
    NS_TRIDIAG_AUTO = 0,
    NS_TRIDIAG_SEQUENTIAL = 1,          /* CPU, Thomas, one system after another (the reference) */
    NS_TRIDIAG_OPENMP = 2,              /* CPU, systems spread over OpenMP threads */
    NS_TRIDIAG_THOMAS_BATCH = 3,        /* CUDA, one thread per system, Interleaved (cuThomasBatch) */
    NS_TRIDIAG_VBATCH_CP = 4,           /* CUDA, variable sizes, padded Interleaved, computing padding */
    NS_TRIDIAG_VBATCH_NCP = 5,          /* CUDA, variable sizes, padded Interleaved, no computing padding */
    NS_TRIDIAG_WARP = 6,                /* CUDA, one warp per system, Flat, n <= 512, on chip */
    NS_TRIDIAG_BLOCK = 7,               /* CUDA, one block per system, Flat, n <= 8192, on chip */
    NS_TRIDIAG_CUSPARSE_STRIDED = 8,    /* cuSPARSE gtsv2StridedBatch, Flat, n >= 3 */
    NS_TRIDIAG_CUSPARSE_INTERLEAVED = 9 /* cuSPARSE gtsvInterleavedBatch algo 0, Interleaved, n >= 3 */
} ns_tridiag_method;

#define NS_TRIDIAG_METHOD_COUNT 10

NS_API const char *ns_tridiag_method_name(ns_tridiag_method method); /* "thomas-batch", ... */
NS_API ns_status ns_tridiag_method_from_name(const char *name, ns_tridiag_method *method);
NS_API ns_backend ns_tridiag_method_backend(ns_tridiag_method method); /* AUTO for NS_TRIDIAG_AUTO */
/* The layout the method's kernel reads (Flat for the CPU methods, which
 * read either layout in place). */
NS_API ns_tridiag_layout ns_tridiag_method_layout(ns_tridiag_method method);
/* 1 if the method takes variable sizes (CPU methods and the VBatch kernels). */
NS_API int ns_tridiag_method_variable(ns_tridiag_method method);

/* The method NS_TRIDIAG_AUTO picks for fixed-size systems (variable = 0) or
 * variable sizes with the largest size n (variable = 1), given whether a GPU
 * is usable. The rule is in docs/tridiag.md and comes from measurements. */
NS_API ns_tridiag_method ns_tridiag_auto_method(int32_t n, int64_t batch, ns_tridiag_precision precision,
                                                int variable, int gpu_usable);

typedef struct ns_tridiag_options {
    ns_tridiag_layout layout;       /* of the caller's arrays */
    ns_tridiag_precision precision;
    ns_tridiag_method method;
    int64_t stride;                 /* 0 = dense; see the layouts above */
    int32_t threads;                /* CPU threads for NS_TRIDIAG_OPENMP; 0 = OpenMP's default */
    /* A pivot p of row k counts as zero when |p| <= tol * (|dl[k]| + |d[k]| + |du[k]|)
     * (or p is not finite). 0 = automatic: 4 machine epsilons of the precision. */
    double pivot_tolerance;
    int check_finite;               /* 1: reject NaN/Inf in the inputs before solving */
    int32_t device;                 /* GPU methods: CUDA device ordinal, or NS_DEVICE_CURRENT (the
                                       default): the device current on the calling thread at create */
} ns_tridiag_options;

/* Defaults: Flat, float64, auto, dense, automatic tolerance, no finite
 * check, device NS_DEVICE_CURRENT. */
NS_API void ns_tridiag_options_init(ns_tridiag_options *options);

typedef struct ns_tridiag_solver ns_tridiag_solver_t;

/* A solver for `batch` systems of n unknowns each. GPU methods allocate the
 * device arrays and any workspace here, once, on options->device, which the
 * solver keeps for life: every call makes it current for its own work and
 * gives the caller's current device back. options may be NULL (defaults).
 * Thread safety: one solver is used by one thread at a time; separate
 * solvers may be used by separate threads at once, on one GPU or several. */
NS_API ns_status ns_tridiag_solver_create(int32_t n, int64_t batch, const ns_tridiag_options *options,
                                          ns_tridiag_solver_t **out);
/* A solver for systems of different sizes: sizes[s] >= 1 unknowns for
 * s < batch. With the Flat layout, offsets (batch + 1 entries, increasing,
 * offsets[s] + sizes[s] <= offsets[s+1]) place the systems; NULL packs them.
 * With the Interleaved layout offsets must be NULL and stride >= batch.
 * The sizes and offsets are copied. */
NS_API ns_status ns_tridiag_solver_create_variable(int64_t batch, const int32_t *sizes,
                                                   const int64_t *offsets,
                                                   const ns_tridiag_options *options,
                                                   ns_tridiag_solver_t **out);
NS_API void ns_tridiag_solver_destroy(ns_tridiag_solver_t *solver);

/* The method NS_TRIDIAG_AUTO resolved to, and its backend. */
NS_API ns_tridiag_method ns_tridiag_solver_method(const ns_tridiag_solver_t *solver);
NS_API ns_backend ns_tridiag_solver_backend(const ns_tridiag_solver_t *solver);
/* Entries each caller array must hold (the extent of the layout). */
NS_API int64_t ns_tridiag_solver_length(const ns_tridiag_solver_t *solver);
/* Device memory the solver holds [bytes], workspace included, and of that
 * the workspace alone (cuSPARSE's buffer; 0 for the CPU and our kernels). */
NS_API size_t ns_tridiag_solver_device_bytes(const ns_tridiag_solver_t *solver);
NS_API size_t ns_tridiag_solver_workspace_bytes(const ns_tridiag_solver_t *solver);

/* Solve every system. Host arrays in the solver's layout and precision
 * (solve for float64, solve_f32 for float32); dl, d, du are read, x holds the
 * right-hand side on entry and the solution on return. A zero, near-zero or
 * non-finite pivot gives NS_ERR_SINGULAR naming the lowest failing system
 * and its unknown; x is then unspecified. */
NS_API ns_status ns_tridiag_solver_solve(ns_tridiag_solver_t *solver, const double *dl, const double *d,
                                         const double *du, double *x);
NS_API ns_status ns_tridiag_solver_solve_f32(ns_tridiag_solver_t *solver, const float *dl, const float *d,
                                             const float *du, float *x);

/* Solve on device arrays: dl, d, du, x are device memory of the solver's
 * GPU in the solver's layout, stride and precision (float or double, as
 * created), each holding ns_tridiag_solver_length entries, and the solve is
 * queued on `stream` (a cudaStream_t of that GPU; NULL: the legacy default
 * stream). The call returns once the work is queued: the library does not
 * synchronise the device or the stream, and the arrays must stay valid
 * until the stream has run the solve. When the layout is the method's
 * native one and dense, the kernel works in place and may overwrite du
 * (thomas-batch, vbatch-*: the eliminated upper diagonal) or dl, du
 * (cusparse-*: dl[0] and du[n-1] of each system are zeroed; cusparse-
 * interleaved may also overwrite d); otherwise the arrays are converted into
 * the solver's own buffers on the stream and only x is written. Pointers
 * that are not device memory of that GPU (or do not hold the extent), and a
 * stream of another GPU give NS_ERR_INVALID_ARGUMENT naming the argument;
 * CPU methods give NS_ERR_UNSUPPORTED. ns_tridiag_solver_wait blocks until
 * the solves queued since the last wait have run (it waits for them only,
 * not for the stream or the device) and returns NS_ERR_SINGULAR naming the
 * lowest failing system and unknown among them (cusparse-*: a non-finite
 * solution entry), NS_OK otherwise or when nothing is queued. One solver
 * serves one stream at a time: queue the next solve after the previous one
 * on the same stream, or use one solver per stream. A host-array call or
 * destroy first waits for a queued device solve (its pivot report is kept
 * for the next wait). docs/tridiag.md, "Device arrays". */
NS_API ns_status ns_tridiag_solver_solve_device(ns_tridiag_solver_t *solver, void *dl, void *d, void *du,
                                                void *x, void *stream);
NS_API ns_status ns_tridiag_solver_wait(ns_tridiag_solver_t *solver);

/* Benchmark entry point: stage the host inputs once (on the device for GPU
 * methods), solve `repeats` times restoring the inputs before each run
 * outside the timed region, and record each run's kernel time [ms] in
 * kernel_ms[0..repeats-1] (CUDA events on the GPU, a monotonic clock on the
 * CPU). One untimed warm-up run comes first. The last run's solution is
 * written to x (arrays typed by the solver's precision). */
NS_API ns_status ns_tridiag_solver_benchmark(ns_tridiag_solver_t *solver, const void *dl, const void *d,
                                             const void *du, void *x, int repeats, double *kernel_ms);

/* Timings of the last solve [ms]; -1 where not applicable (CPU: no copies). */
NS_API void ns_tridiag_solver_timing(const ns_tridiag_solver_t *solver, ns_solve_timing *timing);

/* One-shot convenience for float64: create, solve, destroy. */
NS_API ns_status ns_tridiag_solve(int32_t n, int64_t batch, const ns_tridiag_options *options,
                                  const double *dl, const double *d, const double *du, double *x);

#ifdef __cplusplus
}
#endif
#endif
