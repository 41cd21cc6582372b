/* Private: the LiFE model, its restructured copies, the engine and the
 * vector operations that SBBNNLS runs on (host or device). */
#ifndef NS_LIFE_IMPL_H
#define NS_LIFE_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "core/registry.h"
#include "neurosolve/life.h"

/* The fits' stopping rules, in order: the projected gradient g below
 * tol_gradient, or (from the second iteration, `later`) below rtol_gradient x
 * g_start; the objective's change `change` (where `compare`: two objectives
 * to compare) below tol_objective, or below rtol_objective x `scale`. The
 * NS_LIFE_STOP_* reason, or -1 to go on. */
static inline int ns_life_stop_rule(const ns_life_fit_options *opt, double g_start, double g, int later, int compare,
                                    double change, double scale) {
    if (g < opt->tol_gradient) return NS_LIFE_STOP_GRADIENT;
    if (later && g < opt->rtol_gradient * g_start) return NS_LIFE_STOP_GRADIENT_RELATIVE;
    if (compare && change < opt->tol_objective) return NS_LIFE_STOP_OBJECTIVE;
    if (compare && change < opt->rtol_objective * scale) return NS_LIFE_STOP_OBJECTIVE_RELATIVE;
    return -1;
}

#ifdef __cplusplus
extern "C" {
#endif

/* One ordering of the coefficients. For the sorted copies, start[g] ..
 * start[g + 1] - 1 are the coefficients of key g (atom or voxel): the
 * paper's sub-vectors; start has n_keys + 1 entries. */
typedef struct ns_life_layout {
    int32_t *atom, *voxel, *fiber;
    double *value;
    int64_t *start;   /* NULL for the original order */
    int32_t n_keys;
    int built;
} ns_life_layout;

enum { NS_LIFE_ORDER_ORIGINAL = 0, NS_LIFE_ORDER_ATOM = 1, NS_LIFE_ORDER_VOXEL = 2 };

struct ns_life_model {
    int32_t n_theta, n_atoms, n_voxels, n_fibers;
    int64_t n_coeffs;
    int32_t *atom, *voxel, *fiber;
    double *value;
    double *D;      /* n_theta x n_atoms, column-major */
    double *Y;      /* n_theta x n_voxels, column-major */
    double *w_true; /* NULL unless known */
    ns_life_layout original; /* a view of the arrays above (never freed) */
    ns_life_layout by_atom, by_voxel;
    /* CUDA AUTO's timed choice per product (NS_LIFE_AUTO = not timed yet); the CPU's is a rule. */
    ns_life_variant cuda_auto[2];
};

/* The layout for an order (builds the sorted copies on first use). */
ns_status ns_life_layout_get(ns_life_model_t *model, int order, const ns_life_layout **out);
void ns_life_layout_free(ns_life_layout *layout);
/* The ordering a variant runs on. */
int ns_life_variant_order(ns_life_variant variant);

/* ------------------------------------------------------------- CPU */
/* Per-thread fiber accumulators of the optimised w = M^T y (grown on use). */
typedef struct ns_life_cpu_work {
    double *buf;
    size_t n;
} ns_life_cpu_work;

/* One product with a CPU variant; threads 0 = OpenMP's default. */
ns_status ns_life_cpu_product(ns_life_model_t *model, ns_life_product product,
                              ns_life_variant variant, int32_t threads, const double *in,
                              double *out, ns_life_cpu_work *work);
/* Threads for a CPU product or solve: `requested` when > 0, else OpenMP's
 * default capped by the processors and by the work (n_coeffs). */
int32_t ns_life_cpu_threads(int32_t requested, int64_t n_coeffs);

/* ------------------------------------------------------------- voxel-sh */
/* The dictionary as U^T f(u_a) (sh_basis.c; docs/life.md, "voxel-sh"): f the
 * (lmax + 1)(lmax + 2) / 2 functions of sh_basis.c's header, lmax even in
 * NS_LIFE_SH_LMIN .. NS_LIFE_SH_LMAX (the CUDA kernels are instantiated for
 * these). NS_LIFE_SH_TOL: the largest entry error of the fit relative to
 * max |D| that voxel-sh accepts: 2^-16, 16x below the float16 rounding of
 * voxel-f16d's dictionary entries (2^-12 relative); on the 500,000-fiber
 * benchmark model (L = 360, b = 2000) lmax 12 gives 9.2e-6. */
#define NS_LIFE_SH_LMIN 10
#define NS_LIFE_SH_LMAX 16
#define NS_LIFE_SH_MAX_COUNT 153 /* (16 + 1)(16 + 2) / 2 */
#define NS_LIFE_SH_TOL (1.0 / 65536.0)
/* voxel-sh's float32 evaluation, added to the fit's error in its bound (ns_life_engine_error_bound):
 * a float32 dot product of R terms is within R u (u = 2^-24, Higham's gamma_R to first order) of
 * the sum of their magnitudes; R = ns_life_sh_count(lmax) */
#define NS_LIFE_SH_F32_ERROR(R) ((double)(R) / 16777216.0)
int ns_life_sh_count(int lmax);
/* ENCODE's L for a grid of n_atoms = (L - 1) L + 1 atoms, else 0. */
int32_t ns_life_grid_l(int32_t n_atoms);
/* f(u) into f[0 .. ns_life_sh_count(lmax) - 1]; u a unit vector. */
void ns_life_sh_basis(int lmax, const double u[3], double *f);
/* The smallest lmax whose fit has an error <= tol; U (malloc'ed, the
 * caller frees): R x n_theta, row-major (D(t, a) ~ sum_j U[j][t] f_j(u_a)).
 * NS_ERR_UNSUPPORTED when the atoms are not ENCODE's grid or no lmax fits. */
ns_status ns_life_sh_fit(const ns_life_model_t *model, double tol, int *lmax, double **U, double *err);

/* ------------------------------------------------------------- engine */
typedef struct ns_life_backend_ops ns_life_backend_ops;

struct ns_life_engine {
    ns_life_model_t *model;
    ns_life_options options;
    ns_backend backend;
    const ns_life_backend_ops *ops; /* the registry's implementation for backend */
    int device;                     /* CUDA: the GPU (options.device resolved); -1 on the CPU */
    ns_life_variant variant[2];
    ns_life_cpu_work work;
    double selection_seconds; /* CUDA AUTO's timing runs at creation (0 on the CPU, cached or explicit) */
    double sh_bound;          /* voxel-sh's error bound on the model (-1: not computed or not possible) */
    void *cuda; /* device state (src/life/cuda) */
};

/* ------------------------------------------------ SBBNNLS vector operations */
/* The solver (sbbnnls.c) is written once over these operations; the CPU
 * (fit_cpu.c) and CUDA (cuda/fit_cuda.c) backends implement them on host or
 * device vectors. Fiber vectors have n_fib entries, voxel vectors n_vox
 * (the CUDA backend pads n_theta, so n_vox may exceed n_theta * n_voxels;
 * padding entries stay 0). Scalars come back to the host. */
typedef struct ns_life_vec_ops {
    void *ctx;
    int64_t n_fib, n_vox;
    ns_status (*alloc)(void *ctx, int64_t n, double **p);
    void (*release)(void *ctx, double *p);
    ns_status (*upload)(void *ctx, double *dst, const double *host, int64_t n);
    ns_status (*download)(void *ctx, double *host, const double *src, int64_t n);
    ns_status (*upload_signal)(void *ctx, double *dst);  /* dst = Y (the model's signal) */
    ns_status (*mw)(void *ctx, const double *x, double *y);
    ns_status (*mty)(void *ctx, const double *y, double *x);
    ns_status (*fill)(void *ctx, double *v, double value, int64_t n);
    ns_status (*copy)(void *ctx, double *dst, const double *src, int64_t n);
    ns_status (*sub)(void *ctx, double *a, const double *b, int64_t n);       /* a -= b */
    ns_status (*mul)(void *ctx, double *a, const double *b, int64_t n);       /* a *= b */
    ns_status (*add_scalar)(void *ctx, double *a, double s, int64_t n);       /* a += s */
    ns_status (*dot)(void *ctx, const double *a, const double *b, int64_t n, double *r);
    /* v[i] = 0 where x[i] == 0 and g[i] > 0 (the set gp) */
    ns_status (*mask)(void *ctx, double *v, const double *x, const double *g, int64_t n);
    /* x = max(x - alpha g, 0) */
    ns_status (*update)(void *ctx, double *x, const double *g, double alpha, int64_t n);
    /* max |g_i| over i with x_i > 0 or g_i < 0; 0 if none */
    ns_status (*pgnorm)(void *ctx, const double *x, const double *g, int64_t n, double *r);
    ns_status (*nnz)(void *ctx, const double *x, int64_t n, int64_t *r);
    /* h[f] = 1 / sum_k value_k^2 ||D(:, atom_k)||^2 over f's coefficients */
    ns_status (*precond)(void *ctx, double *hinv);
    /* Host staging for sums over processes (ns_life_fit_options.reduce,
     * which takes host arrays): NULL when the vectors are host memory (the
     * hook then works in place); else a host buffer of n doubles (pinned on
     * CUDA) that fiber vectors go through: download, reduce, upload. */
    ns_status (*host_alloc)(void *ctx, int64_t n, double **p);
    void (*host_release)(void *ctx, double *p);
} ns_life_vec_ops;

/* A fit's resumable state (fit_state.c): the solver at the top of iteration updates + 1.
 * SBBNNLS keeps x, oldg; the group fit (FISTA, group.c) keeps x, y, M x, M y, t, L and F. */
enum { LIFE_STATE_SBBNNLS = 0, LIFE_STATE_GROUP = 1 };
struct ns_life_fit_state {
    uint64_t fingerprint;  /* the model and the options the iterates depend on (engine.c) */
    uint32_t solver;       /* LIFE_STATE_* */
    int32_t n_fibers;
    int32_t updates;       /* -1: empty */
    int64_t n_values;      /* group: the signal's values (n_theta x n_voxels); SBBNNLS: 0 */
    double pg_start;       /* projected gradient at the start (the relative gradient test) */
    double *x;             /* the iterate (x = h w under the preconditioner), n_fibers */
    double *oldg;          /* SBBNNLS: the lagged gradient; group: the extrapolated point y; n_fibers */
    double *history;       /* the objective after each update, `updates` entries */
    double t, L, F;        /* group: FISTA's momentum, the step bound, the objective at x */
    double *Mx, *My;       /* group: M x and M y, n_values each */
};
/* Sizes the arrays (contents undefined; n_values 0: no M x, M y); the counts are the caller's to set. */
ns_status life_fit_state_reserve(ns_life_fit_state_t *state, int32_t n_fibers, int32_t updates, int64_t n_values);

ns_status ns_life_sbbnnls(const ns_life_vec_ops *ops, const ns_life_fit_options *options,
                          double *w, double *history, ns_life_fit_result *result);
/* FISTA for the group-sparse objective (group.c) on host vectors through the
 * engine's products; options->ridge is the absolute mu. */
ns_status ns_life_group_fit(ns_life_engine_t *engine, const ns_life_fit_options *options, double *w,
                            double *history, ns_life_fit_result *result);
/* The largest group's ||[M^T y - lambda]_+|| / sqrt|g| over the median of the groups (group.c):
 * the G from which every group is zero. */
ns_status ns_life_group_max(ns_life_engine_t *engine, const ns_life_fit_options *options, double *g_max);
/* SBBNNLS on the CPU backend (fit_cpu.c). */
ns_status ns_life_cpu_fit(ns_life_engine_t *engine, const ns_life_fit_options *options, double *w,
                          double *history, ns_life_fit_result *result);
/* ENCODE's compute_diag on the host: d[f] = sum value_k^2 ||D(:, atom_k)||^2. */
void ns_life_diag(const ns_life_model_t *model, double *d);

/* The model's NPY files into an existing folder (io.c), for
 * ns_life_model_save and ns_life_built_save, which write them into a
 * temporary folder (ns_output_dir) and move them in when all are written;
 * then drop_stale removes a w_true.npy an earlier model left. */
ns_status life_model_write_files(const ns_life_model_t *model, const char *dir);
void life_model_drop_stale(const ns_life_model_t *model, const char *dir);

/* ------------------------------------------------------------- backends */
/* What each backend implements (registered in src/backends.c); engine.c
 * calls through it and never tests the backend. */
struct ns_life_backend_ops {
    const char *name;
    ns_status (*create)(ns_life_engine_t *engine); /* NULL: nothing to prepare */
    void (*destroy)(ns_life_engine_t *engine);     /* NULL: nothing to free */
    int (*supports)(ns_life_variant variant);
    ns_status (*product)(ns_life_engine_t *engine, ns_life_product product, ns_life_variant variant,
                         const double *in, double *out);
    /* NULL: engine.c times `product` with the host clock */
    ns_status (*time)(ns_life_engine_t *engine, ns_life_product product, ns_life_variant variant,
                      const double *in, double *out, int repeats, double *ms);
    ns_status (*fit)(ns_life_engine_t *engine, const ns_life_fit_options *options, double *w, double *history,
                     ns_life_fit_result *result);
    /* The group-sparse fit (options->group > 0; group.c); NULL: the backend refuses it */
    ns_status (*group_fit)(ns_life_engine_t *engine, const ns_life_fit_options *options, double *w,
                           double *history, ns_life_fit_result *result);
};

const ns_life_backend_ops *ns_life_cpu_backend(void);
const ns_life_backend_ops *ns_life_cuda_backend(void); /* NULL without CUDA (src/life/nocuda) */

/* LiFE's auto policy (a pure function, tests/core/test_policy.c) and the
 * backend's implementation from the registry. */
ns_backend ns_life_auto_backend(int usable_gpus);
ns_impl_table ns_life_impls(void);
ns_status ns_life_choose_backend(ns_backend requested, ns_backend *backend, const ns_life_backend_ops **ops);

/* The CUDA backend's entries (src/life/cuda/engine_cuda.c), behind its ops table. */
ns_status ns_life_cuda_create(ns_life_engine_t *engine);
void ns_life_cuda_destroy(ns_life_engine_t *engine);
int ns_life_cuda_supports(ns_life_variant variant);
ns_status ns_life_cuda_product(ns_life_engine_t *engine, ns_life_product product,
                               ns_life_variant variant, const double *in, double *out);
ns_status ns_life_cuda_time(ns_life_engine_t *engine, ns_life_product product,
                            ns_life_variant variant, const double *in, double *out, int repeats,
                            double *ms);
ns_status ns_life_cuda_fit(ns_life_engine_t *engine, const ns_life_fit_options *options,
                           double *w, double *history, ns_life_fit_result *result);

#ifdef __cplusplus
}
#endif
#endif
