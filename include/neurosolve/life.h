/* neurosolve: LiFE connectome pruning (docs/life.md).
 *
 * The model is ENCODE's sparse Tucker decomposition of the LiFE matrix M
 * (n_theta * n_voxels rows, n_fibers columns):
 *   Phi   n_coeffs coefficients (atom[k], voxel[k], fiber[k], value[k]),
 *         0-based 32-bit indices;
 *   D     the dictionary, n_theta x n_atoms, column-major (column a at
 *         D + a * n_theta);
 *   Y     the demeaned signal, n_theta x n_voxels, column-major.
 * The two products:
 *   y = M w:    y(:, voxel[k]) += D(:, atom[k]) * (w[fiber[k]] * value[k])
 *   w = M^T y:  w[fiber[k]]    += value[k] * <D(:, atom[k]), y(:, voxel[k])>
 * Vectors in voxel space (y, Y) have n_theta * n_voxels entries, column-major;
 * vectors in fiber space (w) have n_fibers entries.
 *
 * Scale-out (MPI, issue 9): a model may hold a subset of the voxels with
 * local voxel numbers and every fiber; then y = M w needs no communication
 * and w = M^T y needs a sum over processes, which ns_life_fit performs
 * through ns_life_fit_options.reduce. */
#ifndef NEUROSOLVE_LIFE_H
#define NEUROSOLVE_LIFE_H

#include "neurosolve/export.h"

#include <stddef.h>
#include <stdint.h>
#include "neurosolve/status.h"
#include "neurosolve/backend.h" /* ns_backend, ns_solve_timing */

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- model */

typedef struct ns_life_model ns_life_model_t;

/* A model with zeroed arrays of the given sizes (all >= 1, n_coeffs >= 1);
 * fill it through the accessors below, then call ns_life_model_validate. */
NS_API ns_status ns_life_model_create(int32_t n_theta, int32_t n_atoms, int32_t n_voxels,
                                      int32_t n_fibers, int64_t n_coeffs, ns_life_model_t **out);
NS_API void ns_life_model_destroy(ns_life_model_t *model);

NS_API int32_t ns_life_model_n_theta(const ns_life_model_t *model);
NS_API int32_t ns_life_model_n_atoms(const ns_life_model_t *model);
NS_API int32_t ns_life_model_n_voxels(const ns_life_model_t *model);
NS_API int32_t ns_life_model_n_fibers(const ns_life_model_t *model);
NS_API int64_t ns_life_model_n_coeffs(const ns_life_model_t *model);

/* The arrays (writable). Writing them after an engine was created on the
 * model is not allowed (engines keep restructured copies). */
NS_API int32_t *ns_life_model_atom(ns_life_model_t *model);    /* n_coeffs */
NS_API int32_t *ns_life_model_voxel(ns_life_model_t *model);   /* n_coeffs */
NS_API int32_t *ns_life_model_fiber(ns_life_model_t *model);   /* n_coeffs */
NS_API double *ns_life_model_value(ns_life_model_t *model);    /* n_coeffs */
NS_API double *ns_life_model_dictionary(ns_life_model_t *model); /* n_theta * n_atoms */
NS_API double *ns_life_model_signal(ns_life_model_t *model);   /* n_theta * n_voxels */
/* The weights that generated a synthetic signal, or NULL (a real model). */
NS_API const double *ns_life_model_true_weights(const ns_life_model_t *model);
/* Attach a copy of known true weights (n_fibers entries). */
NS_API ns_status ns_life_model_set_true_weights(ns_life_model_t *model, const double *w);

/* Full check: indices in range, values, D and Y finite, every fiber with at
 * least one coefficient. The detail names the array and the first offending
 * entry, e.g. "phi_voxel[17] = 250000 is out of range [0, 200000)". */
NS_API ns_status ns_life_model_validate(const ns_life_model_t *model);

/* ------------------------------------------------------- on-disk format */
/* A model directory holds NPY files (format version 1.0, little-endian;
 * docs/life.md lists every array):
 *   phi_shape.npy   int64   (3,)               n_atoms, n_voxels, n_fibers
 *   phi_atom.npy    int32   (n_coeffs,)
 *   phi_voxel.npy   int32   (n_coeffs,)
 *   phi_fiber.npy   int32   (n_coeffs,)
 *   phi_value.npy   float64 (n_coeffs,)
 *   dictionary.npy  float64 (n_theta, n_atoms)  Fortran (column-major) order
 *   signal.npy      float64 (n_theta, n_voxels) Fortran order
 *   w_true.npy      float64 (n_fibers,)         optional
 * Loading also accepts dictionary/signal in C order (transposed on load).
 * Every failure names the file and, for bad content, the first bad entry. */
NS_API ns_status ns_life_model_load(const char *directory, ns_life_model_t **out);
/* Creates the directory if needed; overwrites the files. */
NS_API ns_status ns_life_model_save(const ns_life_model_t *model, const char *directory);

/* One-dimensional float64 NPY files (weights, objective histories). */
NS_API ns_status ns_life_vector_save(const char *path, const double *values, int64_t n);
/* Reads a float64 vector; *values is malloc'ed (free() it). */
NS_API ns_status ns_life_vector_load(const char *path, double **values, int64_t *n);

/* ------------------------------------------------------ synthetic models */

typedef struct ns_life_synth_options {
    int32_t n_theta;        /* gradient directions on the sphere (96) */
    int32_t dictionary_l;   /* ENCODE's L: (L - 1) * L + 1 atoms (180 -> 32,221, as life build; ENCODE's 360 -> 129,241) */
    double b_value;         /* [s/mm^2] (2000) */
    double axial_diffusivity; /* [um^2/ms] of the stick (1.0, ENCODE's default) */
    int32_t n_fibers;       /* streamlines (50,000) */
    int32_t grid[3];        /* voxel grid; streamlines stay inside the inscribed
                               ellipsoid ({72, 88, 72}: about 150,000-250,000
                               voxels are touched) */
    double mean_length;     /* mean streamline length [voxels] (90) */
    double step;            /* tracking step [voxels] (0.5) */
    double curvature;       /* random turning per step [rad] (0.05) */
    double active_fraction; /* fraction of fibers with a non-zero true weight (0.5) */
    double noise;           /* Gaussian noise sd relative to the signal's rms (0) */
    uint64_t seed;          /* (1) */
} ns_life_synth_options;

NS_API void ns_life_synth_options_init(ns_life_synth_options *options);
/* The checks ns_life_synth applies to its options (ranges, a grid of at
 * most 2e9 cells), without building anything: NS_ERR_INVALID_ARGUMENT or
 * NS_ERR_SIZE naming the value. */
NS_API ns_status ns_life_synth_options_check(const ns_life_synth_options *options);
/* A model with the paper's structure: directions spread on the sphere, the
 * stick-model dictionary demeaned per atom, streamlines as smooth random
 * curves following a smooth orientation field (so coefficients cluster by
 * voxel and by atom), voxels numbered in raster order, a known non-negative
 * weight vector (kept as the true weights) and Y = M w_true (+ noise).
 * Deterministic for a seed whatever the thread count. */
NS_API ns_status ns_life_synth(const ns_life_synth_options *options, ns_life_model_t **out);

/* ------------------------------------------------------------- products */

typedef enum ns_life_product {
    NS_LIFE_MW = 0, /* y = M w   (the paper's DSC) */
    NS_LIFE_MTY = 1 /* w = M^T y (the paper's WC)  */
} ns_life_product;

/* Variants: restructuring x partitioning (docs/life.md). The optimised ones
 * are named partition_restructuring as in the paper's tables. */
typedef enum ns_life_variant {
    NS_LIFE_AUTO = 0,        /* the fastest of the optimised variants, timed (CPU: 1 run each, CUDA: 3) */
    NS_LIFE_NAIVE = 1,       /* original order. CPU: the paper's Fig. 3 loops, one thread;
                                CUDA: the Fig. 6 reference kernels (atomics) */
    NS_LIFE_NAIVE_ATOM = 2,  /* same loops/kernels on the atom-sorted copy
                                (CUDA: the paper's Ref-opt, the GPU reference) */
    NS_LIFE_NAIVE_VOXEL = 3, /* same loops/kernels on the voxel-sorted copy */
    NS_LIFE_COEFF_ATOM = 4,  /* atom-sorted copy, coefficients split evenly */
    NS_LIFE_COEFF_VOXEL = 5, /* voxel-sorted copy, coefficients split evenly; for y = M w
                                the splits move to voxel boundaries (synchronisation-free) */
    NS_LIFE_ATOM_ATOM = 6,   /* atom-sorted copy, whole atoms per thread (CUDA: warp per atom) */
    NS_LIFE_VOXEL_VOXEL = 7, /* voxel-sorted copy, whole voxels per thread (CUDA: warp per voxel) */
    NS_LIFE_VOXEL_F32D = 8,  /* CUDA only, opt-in, never chosen by AUTO: voxel-voxel with the
                                dictionary read as float32 (half the gathered bytes; arithmetic
                                in float64; products within about 1e-7 relative, not 1e-12) */
    NS_LIFE_VOXEL_F16D = 9,  /* CUDA only, opt-in, never chosen by AUTO: voxel-voxel with the
                                dictionary read as float16 scaled by a power of two (a quarter
                                of the gathered bytes; a voxel's products in float32, sums over
                                lanes and coefficients' results in float64; products within
                                about 1e-3 relative) */
    NS_LIFE_VOXEL_LR16D = 10, /* CUDA only, opt-in, never chosen by AUTO: the dictionary factored
                                as U C (C = U^T D keeps the r leading eigen-directions of D D^T,
                                r a multiple of 32, the fewest whose discarded singular values
                                are below 2^-11 of the largest), C in float16 as voxel-f16d; a
                                gathered column has r entries instead of n_theta (64 instead of
                                96 for ENCODE's stick dictionary; docs/life.md) */
    NS_LIFE_VOXEL_SH = 11    /* CUDA only, opt-in, never chosen by AUTO: no dictionary in memory.
                                Each coefficient's column is computed in registers from its atom's
                                orientation on ENCODE's grid as U^T f(u), f the even spherical
                                harmonics up to a degree lmax (10-16) in a cheap polynomial form, U
                                fitted to D by least squares when the engine is made: the fewest
                                harmonics whose largest entry error is <= 2^-16 of max |D|;
                                float32 arithmetic, sums over lanes and results in float64. Needs
                                (L - 1) L + 1 atoms (ENCODE's grid, as life build and life synth
                                make) and a dictionary smooth in the orientation (stick and tensor
                                models are); NS_ERR_UNSUPPORTED otherwise (docs/life.md) */
} ns_life_variant;
/* The exact variants (1 .. NS_LIFE_VARIANT_COUNT - 1: every backend, 1e-12
 * of the naive products); NS_LIFE_VARIANT_ALL also counts the reduced-
 * precision ones. */
#define NS_LIFE_VARIANT_COUNT 8
#define NS_LIFE_VARIANT_ALL 12

NS_API const char *ns_life_variant_name(ns_life_variant variant);
NS_API ns_status ns_life_variant_from_name(const char *name, ns_life_variant *variant);
NS_API const char *ns_life_product_name(ns_life_product product);

typedef struct ns_life_options {
    ns_backend backend;          /* CPU or CUDA; AUTO: CUDA when a GPU is usable */
    ns_life_variant mw_variant;  /* AUTO by default */
    ns_life_variant mty_variant; /* AUTO by default */
    int32_t threads;             /* CPU threads; 0 = automatic (ns_life_engine_threads) */
    int32_t device;              /* CUDA backend: device ordinal, or NS_DEVICE_CURRENT (the default):
                                    the device current on the calling thread at create; every call
                                    of the engine runs on it and restores the caller's device */
    size_t device_memory_limit;  /* [bytes]; 0 = what the device has free */
    /* The relative product error the caller accepts (0 = the exact variants only, the default).
     * On CUDA, AUTO then runs both products with voxel-sh when its error bound on this model
     * (ns_life_engine_error_bound) is below it (ns_life_cuda_auto_variant); life fit passes
     * the fit's relative gradient tolerance (rtol_gradient, 1e-3). */
    double tolerance;
} ns_life_options;

NS_API void ns_life_options_init(ns_life_options *options);

typedef struct ns_life_engine ns_life_engine_t;

/* Prepares the products on a validated model (restructured copies, device
 * memory). The model must outlive the engine. A model that does not fit
 * into device memory fails with NS_ERR_DEVICE_MEMORY naming the bytes
 * needed and available. AUTO on the CPU follows ns_life_cpu_auto_variant (a
 * rule, no timing); on CUDA each optimised variant is timed once per model
 * (cached in the model: a second CUDA engine does not time again). */
NS_API ns_status ns_life_engine_create(ns_life_model_t *model, const ns_life_options *options,
                                       ns_life_engine_t **out);
NS_API void ns_life_engine_destroy(ns_life_engine_t *engine);
NS_API ns_backend ns_life_engine_backend(const ns_life_engine_t *engine);
/* The variant a product runs with (AUTO resolved). */
NS_API ns_life_variant ns_life_engine_variant(const ns_life_engine_t *engine, ns_life_product product);
/* Seconds the CUDA AUTO selection spent timing variants when the engine was
 * created (0 on the CPU, or when the choice was cached in the model or given
 * explicitly). */
NS_API double ns_life_engine_selection_seconds(const ns_life_engine_t *engine);
/* The variant AUTO runs a product with on the CPU backend for a model's
 * sizes: y = M w on voxel-voxel; w = M^T y on atom-atom when the model has at
 * most 1.5 voxels per atom, else voxel-voxel. A rule from measurements
 * (docs/life.md, "Runtime selection"), so the choice, and the fit, do not
 * depend on the load of the machine. */
NS_API ns_life_variant ns_life_cpu_auto_variant(ns_life_product product, int32_t n_voxels, int32_t n_atoms);
/* AUTO's rule on CUDA, after the timing: voxel-sh when its error bound on the model is below the
 * accepted tolerance (sh_bound < tolerance; sh_bound < 0: voxel-sh cannot serve the model), else
 * the fastest exact variant `timed`. A pure function (tested without a GPU). */
NS_API ns_life_variant ns_life_cuda_auto_variant(ns_life_variant timed, double sh_bound, double tolerance);
/* The bound on the relative error of the engine's products against the exact float64 ones: 0 for
 * the exact variants; for voxel-sh the fit's largest dictionary entry error relative to max |D|
 * (sh_basis.c, at most 2^-16) plus 2^-20 for its float32 arithmetic (docs/life.md, "voxel-sh";
 * measured product errors 1.2e-6 to 3.6e-6, bench/README.md 2.1e-6); -1 for the other
 * reduced-precision variants (no bound is stated). */
NS_API double ns_life_engine_error_bound(const ns_life_engine_t *engine);
/* CPU threads the products and the solver use (0 for CUDA): options.threads
 * when > 0, else OpenMP's default capped by the processors this process may
 * use and by the work (one thread per 16,384 coefficients): never more
 * threads than cores or work. */
NS_API int32_t ns_life_engine_threads(const ns_life_engine_t *engine);
/* Whether a variant exists on the engine's backend. */
NS_API int ns_life_engine_supports(const ns_life_engine_t *engine, ns_life_variant variant);

/* y = M w and w = M^T y on host arrays with the engine's variants. */
NS_API ns_status ns_life_mw(ns_life_engine_t *engine, const double *w, double *y);
NS_API ns_status ns_life_mty(ns_life_engine_t *engine, const double *y, double *w);

/* Benchmark entry: run `variant` of `product` `repeats` times on `in`
 * (staged once; on the device for CUDA) and record each run's time [ms]
 * (CUDA events / monotonic clock); the last run's result goes to `out`. */
NS_API ns_status ns_life_time_product(ns_life_engine_t *engine, ns_life_product product,
                                      ns_life_variant variant, const double *in, double *out,
                                      int repeats, double *ms);

/* Bytes a product must move at least (BENCHMARKING.md's floor): each
 * coefficient's indices and value once, each touched D and Y column once,
 * the output once. */
NS_API double ns_life_floor_bytes(const ns_life_model_t *model, ns_life_product product);

/* ------------------------------------------------------------- SBBNNLS */

/* Sums `n` doubles over all processes in place, giving every process the
 * same bits (ns_mpi_life_fit's, or ns_mpi_life_reduce); NULL for a single
 * process. `values` is always host memory: with the CUDA backend SBBNNLS
 * copies a device fiber vector to a pinned host buffer, calls the hook and
 * copies the sum back. */
typedef ns_status (*ns_life_reduce_fn)(double *values, int64_t n, void *context);
/* Called after every update; return non-zero to stop early. */
typedef int (*ns_life_progress_fn)(int32_t iteration, double objective, int64_t nonzero,
                                   void *context);

typedef struct ns_life_fit_options {
    int32_t max_iterations;  /* ENCODE's maxit (500): at most maxit - 1 updates */
    double tol_gradient;     /* tolg (1e-5) on the projected gradient's max norm */
    double tol_objective;    /* tolo (1e-5) on |f(it-1) - f(it-2)|; 0 disables */
    /* Relative tolerances (docs/life.md, "Stopping"): stop when |f(it-1) - f(it-2)| <
     * rtol_objective * f(it-1), or when the projected gradient < rtol_gradient x its value at
     * the start. ENCODE's absolute tolerances above also apply (the first met stops); 0
     * disables. Defaults chosen on small_25 and the phantoms (bench/README.md). */
    double rtol_objective;   /* (1e-5) */
    double rtol_gradient;    /* (1e-3) */
    double lambda;           /* ReAl-LiFE L1 weight (0): gradient + lambda */
    /* Tikhonov (ridge) weight R, relative (0 = off): adds 0.5 mu ||w||^2 to the objective with
     * mu = R ||M 1||^2 / n_fibers (the Rayleigh quotient of M^T M at equal weights, about its
     * largest eigenvalue), so R depends neither on the signal's scale nor on the streamline
     * density. Spreads weight evenly over streamlines the data cannot tell apart instead of
     * keeping an arbitrary few (NNLS's vertex solutions); costs one product more. Evidence
     * (docs/life.md, "Pruning quality"): R = 0.1 ranks true above false streamlines best on
     * the phantoms. */
    double ridge;
    /* COMMIT2-style group sparsity (docs/life.md, "Group sparsity"): adds
     * lambda_g sum_g sqrt(|g|) ||w_g||_2 over the groups of `groups` (n_fibers entries: a
     * group id >= 0 per fiber, e.g. the connection of its endpoint parcels; a negative id
     * puts the fiber in a group of its own). `group` is relative: lambda_g = group x the
     * median over groups of ||[-grad_g(0)]_+||_2 / sqrt(|g|), the value above which a
     * group is zero at w = 0, so group = 1 leaves about half the groups out at the start.
     * group > 0 needs `groups` and runs the accelerated proximal gradient solver (FISTA with
     * backtracking; docs/life.md) instead of SBBNNLS, with the ridge, lambda and w0 but
     * without the preconditioner; its vectors live on the host (with the CUDA backend the
     * products run on the device, their vectors copied in and out each time). 0 = off. */
    double group;
    const int32_t *groups;
    int preconditioner;      /* ENCODE's diagonal preconditioner (0 = off) */
    const double *w0;        /* start (NULL: zeros) */
    ns_life_progress_fn progress;
    void *progress_context;
    ns_life_reduce_fn reduce; /* for a voxel-partitioned model (CPU or CUDA) */
    void *reduce_context;
    /* Resumable state (SBBNNLS or the group fit; docs/life.md, "Interrupted fits"); NULL: none.
     * A state that holds one (ns_life_fit_state_load, or an earlier fit's) makes the fit continue
     * from it instead of from w0: the same model, solver and lambda, ridge, preconditioner, group
     * and groups are required (NS_ERR_INVALID_ARGUMENT otherwise) and max_iterations must exceed
     * its updates. Whenever the fit stops (a stopping test, or the progress callback's request),
     * the state receives what the next iteration needs. On the CPU with the same thread count, a
     * fit stopped and resumed gives the uninterrupted fit's weights and history bit for bit. */
    struct ns_life_fit_state *state;
} ns_life_fit_options;

typedef enum ns_life_stop {
    NS_LIFE_STOP_MAX_ITERATIONS = 0,
    NS_LIFE_STOP_GRADIENT = 1,  /* projected gradient below tolg */
    NS_LIFE_STOP_OBJECTIVE = 2, /* objective change below tolo */
    NS_LIFE_STOP_ZERO_STEP = 3, /* the lagged gradient vanished (step undefined) */
    NS_LIFE_STOP_USER = 4,      /* progress callback asked to stop */
    NS_LIFE_STOP_GRADIENT_RELATIVE = 5,  /* projected gradient below rtol_gradient x its start */
    NS_LIFE_STOP_OBJECTIVE_RELATIVE = 6  /* objective change below rtol_objective x objective */
} ns_life_stop;

typedef struct ns_life_fit_result {
    int32_t updates;      /* weight updates performed (= history entries) */
    ns_life_stop stop;
    double objective;     /* 0.5 ||M w - y||^2 (+ 0.5 mu ||w||^2 with a ridge) at the result */
    double projected_gradient;
    double projected_gradient_start; /* at w0, before the first update */
    int64_t nonzero;      /* non-zero weights */
    double seconds;       /* wall time of the iterations (setup_seconds included) [s] */
    double setup_seconds; /* of which the first gradient (2 products), before the first update [s]:
                             per update = (seconds - setup_seconds) / updates */
    int32_t mw_calls, mty_calls;
    double ridge_mu;      /* the absolute ridge weight mu used (0 without a ridge) */
    /* Group sparsity (options.group > 0; else 0): the absolute lambda_g used, the groups
     * and the groups with a non-zero weight at the result. `objective` then includes
     * lambda_g sum_g sqrt(|g|) ||w_g|| (and lambda sum w) and `projected_gradient` is the
     * max norm of the proximal gradient mapping L (y - x+) of the last step. */
    double group_lambda;
    int32_t n_groups, groups_nonzero;
} ns_life_fit_result;

NS_API void ns_life_fit_options_init(ns_life_fit_options *options);

/* A fit's resumable state (ns_life_fit_options.state): the iterate, the solver's other
 * vectors (SBBNNLS: the lagged gradient; the group fit: FISTA's point and products), the
 * objective history and a fingerprint of the model and options it belongs to. create: an
 * empty state (updates -1) for a fit to fill. save: written atomically (ns_output). load:
 * validated like any input (checksum, sizes against the file's length, finite weights >= 0,
 * finite gradient and history): NS_ERR_PARSE or NS_ERR_IO naming the path and the value. */
typedef struct ns_life_fit_state ns_life_fit_state_t;
NS_API ns_status ns_life_fit_state_create(ns_life_fit_state_t **out);
NS_API void ns_life_fit_state_destroy(ns_life_fit_state_t *state);
/* Updates done before the state was kept; -1 for an empty state. */
NS_API int32_t ns_life_fit_state_updates(const ns_life_fit_state_t *state);
NS_API ns_status ns_life_fit_state_save(const ns_life_fit_state_t *state, const char *path);
NS_API ns_status ns_life_fit_state_load(const char *path, ns_life_fit_state_t **out);
NS_API const char *ns_life_stop_name(ns_life_stop stop);

/* Solve min 0.5 ||M w - Y||^2 (+ lambda sum w), w >= 0, by SBBNNLS exactly as
 * ENCODE's bbnnls runs it (docs/life.md); with options.group > 0 the group-sparse
 * objective above by FISTA. w: n_fibers entries (output).
 * history: NULL or max_iterations entries, receives the objective after
 * each update. With the CUDA backend every vector stays on the device. */
NS_API ns_status ns_life_fit(ns_life_engine_t *engine, const ns_life_fit_options *options, double *w,
                             double *history, ns_life_fit_result *result);

/* ------------------------------------------------- regularisation path */
/* Fits over a path of values of one penalty, each warm-started from the previous one, with the
 * choice made by K-fold cross-validation over voxels (docs/life.md, "Choosing lambda"). */

typedef enum ns_life_penalty {
    NS_LIFE_PENALTY_L1 = 0,    /* ns_life_fit_options.lambda (absolute) */
    NS_LIFE_PENALTY_RIDGE = 1, /* .ridge (R, relative) */
    NS_LIFE_PENALTY_GROUP = 2  /* .group (G, relative; needs .groups) */
} ns_life_penalty;

NS_API const char *ns_life_penalty_name(ns_life_penalty penalty); /* "lambda", "ridge", "group" */
NS_API ns_status ns_life_penalty_from_name(const char *name, ns_life_penalty *penalty);

typedef enum ns_life_cv_rule {
    NS_LIFE_CV_ONE_SE = 0, /* the largest value whose CV error is within one standard error of the minimum */
    NS_LIFE_CV_MIN = 1,    /* the value of least CV error */
    /* the default: the largest value whose CV error is within max(one standard error,
     * ns_life_cv_gain_tolerance(penalty) x the gain) of the minimum, the gain being the minimum's
     * drop from the zero prediction's held-out error (ns_life_path_result.cv_zero) */
    NS_LIFE_CV_ONE_SE_GAIN = 2
} ns_life_cv_rule;

/* The 1se-gain rule's share of the gain for a penalty: 0.05 for the group penalty and the ridge,
 * 0 for L1 (there the rule is the one-SE rule; docs/life.md, "Choosing lambda"). */
NS_API double ns_life_cv_gain_tolerance(ns_life_penalty penalty);

NS_API const char *ns_life_cv_rule_name(ns_life_cv_rule rule); /* "1se", "min", "1se-gain" */
NS_API ns_status ns_life_cv_rule_from_name(const char *name, ns_life_cv_rule *rule);

typedef struct ns_life_path_options {
    ns_life_penalty penalty;
    /* The path: `values` (n_values entries, > 0, any order: fitted from the largest down) or,
     * when NULL, n_values values spaced geometrically from the largest, `max_value` (0: the
     * penalty's maximum, ns_life_penalty_max: every weight 0 for L1 and group, R = 10 for the
     * ridge) down to max_value x min_fraction. */
    int32_t n_values;      /* (8) */
    double max_value;      /* (0: ns_life_penalty_max) */
    double min_fraction;   /* (0: 1e-2 for L1 and group, 1e-3 for the ridge) */
    const double *values;  /* (NULL) */
    /* Cross-validation: the voxels are dealt at random (seed) into `folds` folds of equal size;
     * each fold's voxels are held out in turn, the path is fitted on the others and the held-out
     * RMSE of its prediction M w measured. folds < 2: no cross-validation (the chosen value is
     * then the smallest). */
    int32_t folds;         /* (5) */
    uint64_t seed;         /* (1) */
    ns_life_cv_rule rule;  /* (NS_LIFE_CV_ONE_SE_GAIN) */
    int cold;              /* 1: every fit starts from the fit options' w0 (or 0): no warm starts (0) */
    /* 1: a value's held-out error is that of a refit without the path's penalty on the fibers its
     * fold fit kept (the relaxed lasso), so that the criterion compares the kept fibers, not the
     * shrinkage of their weights; the weights returned stay the penalised full fit's (0) */
    int refit;
    /* Called after every fit of the path (done of total fits); non-zero stops the path (the
     * result's `stopped`; no weights are written). */
    int (*progress)(int32_t done, int32_t total, void *context);
    void *progress_context;
} ns_life_path_options;

NS_API void ns_life_path_options_init(ns_life_path_options *options);

/* One value of the path. */
typedef struct ns_life_path_point {
    double value;          /* the penalty's value, in ns_life_fit_options' units */
    double cv_rmse;        /* mean over folds of the held-out RMSE (NAN without cross-validation) */
    double cv_se;          /* its standard error: the folds' standard deviation / sqrt(folds) */
    double rmse;           /* the full fit's RMSE on all the signal */
    double objective;      /* the full fit's objective */
    int64_t nonzero;       /* the full fit's non-zero weights */
    int32_t groups_nonzero; /* group penalty: its non-zero groups (else 0) */
    int32_t updates;       /* the full fit's updates */
    int32_t cv_updates;    /* the folds' updates, summed */
    ns_life_stop stop;     /* the full fit's */
} ns_life_path_point;

typedef struct ns_life_path_result {
    int32_t n_values;      /* points written */
    int32_t chosen;        /* index of the chosen value (rule); -1 when stopped */
    int32_t minimum;       /* index of the least CV error (-1 without cross-validation) */
    int32_t folds;
    double max_value;      /* the path's largest value */
    int64_t updates;       /* all fits' updates */
    double seconds, cv_seconds; /* wall time, of which the folds' fits [s] */
    int stopped;           /* the progress callback stopped the path */
    double cv_zero;        /* the held-out RMSE of the zero prediction (w = 0), mean over folds (NAN
                            * without cross-validation): the baseline of the gain */
} ns_life_path_result;

/* The penalty's largest useful value on the engine's model: L1: max_f (M^T y)_f (w = 0 is the
 * solution from there on); group: max_g ||[M^T y - lambda]_+ on g|| / sqrt|g| divided by the
 * median over groups (in G's units, times 1 + 1e-9 against rounding: every group is zero);
 * ridge: 10 (R, where the weights approach the matched filter M^T y / mu). */
NS_API ns_status ns_life_penalty_max(ns_life_engine_t *engine, const ns_life_fit_options *fit,
                                     ns_life_penalty penalty, double *value);

/* Fits the path (fit: the other options, as ns_life_fit; its value of the penalty is ignored;
 * no state, reduce or preconditioner) on the engine's backend, the folds on engines of the same
 * backend and variants. points: n_values entries (path->n_values). w: the weights of a fit at the
 * chosen value with the fit options as given (ns_life_fit with that value: the same bytes);
 * path_weights: NULL or n_values x n_fibers, every full fit of the path's weights (warm-started). */
NS_API ns_status ns_life_path(ns_life_engine_t *engine, const ns_life_fit_options *fit,
                              const ns_life_path_options *path, ns_life_path_point *points, double *w,
                              double *path_weights, ns_life_path_result *result);

#ifdef __cplusplus
}
#endif
#endif
