/* The public tridiagonal solver: method names, options, checking sizes and
 * strides, choosing a method (the auto rule) and dispatching through the
 * backend table. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/device_impl.h"
#include "core/error.h"
#include "core/timer.h"
#include "neurosolve/device.h"
#include "tridiag/tridiag_impl.h"

static const struct {
    ns_tridiag_method method;
    const char *name;
    ns_tridiag_layout layout;
    int variable;
} method_table[NS_TRIDIAG_METHOD_COUNT] = {
    {NS_TRIDIAG_AUTO, "auto", NS_TRIDIAG_FLAT, 1},
    {NS_TRIDIAG_SEQUENTIAL, "sequential", NS_TRIDIAG_FLAT, 1},
    {NS_TRIDIAG_OPENMP, "openmp", NS_TRIDIAG_FLAT, 1},
    {NS_TRIDIAG_THOMAS_BATCH, "thomas-batch", NS_TRIDIAG_INTERLEAVED, 0},
    {NS_TRIDIAG_VBATCH_CP, "vbatch-cp", NS_TRIDIAG_INTERLEAVED, 1},
    {NS_TRIDIAG_VBATCH_NCP, "vbatch-ncp", NS_TRIDIAG_INTERLEAVED, 1},
    {NS_TRIDIAG_WARP, "warp", NS_TRIDIAG_FLAT, 0},
    {NS_TRIDIAG_BLOCK, "block", NS_TRIDIAG_FLAT, 0},
    {NS_TRIDIAG_CUSPARSE_STRIDED, "cusparse-strided", NS_TRIDIAG_FLAT, 0},
    {NS_TRIDIAG_CUSPARSE_INTERLEAVED, "cusparse-interleaved",
     NS_TRIDIAG_INTERLEAVED, 0},
};

static int method_index(ns_tridiag_method method) {
    for (int i = 0; i < NS_TRIDIAG_METHOD_COUNT; ++i)
        if (method_table[i].method == method) return i;
    return -1;
}

const char *ns_tridiag_method_name(ns_tridiag_method method) {
    int i = method_index(method);
    return i < 0 ? "unknown" : method_table[i].name;
}

ns_status ns_tridiag_method_from_name(const char *name, ns_tridiag_method *method) {
    if (!name || !method)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_tridiag_method_from_name: NULL argument");
    for (int i = 0; i < NS_TRIDIAG_METHOD_COUNT; ++i)
        if (strcmp(method_table[i].name, name) == 0) {
            *method = method_table[i].method;
            return NS_OK;
        }
    return ns_fail(NS_ERR_INVALID_ARGUMENT,
                   "unknown tridiagonal method '%s' (auto, sequential, openmp, thomas-batch, "
                   "vbatch-cp, vbatch-ncp, warp, block, cusparse-strided, cusparse-interleaved)",
                   name);
}

ns_backend ns_tridiag_method_backend(ns_tridiag_method method) {
    return ns_registry_backend(ns_tridiag_impls(), (int32_t)method);
}

ns_tridiag_layout ns_tridiag_method_layout(ns_tridiag_method method) {
    int i = method_index(method);
    return i < 0 ? NS_TRIDIAG_FLAT : method_table[i].layout;
}

int ns_tridiag_method_variable(ns_tridiag_method method) {
    int i = method_index(method);
    return i < 0 ? 0 : method_table[i].variable;
}

/* Limits of the on-chip kernels (src/tridiag/cuda/onchip.cu): a warp holds
 * 32 threads x 16 rows, a block 512 threads x 16 rows. */
#define NS_TRIDIAG_WARP_MAX_N 512
#define NS_TRIDIAG_BLOCK_MAX_N 8192

/* Below this many unknowns in all, a GPU solve from host arrays costs more
 * in transfers and launches than the CPU needs for all of it. */
#define NS_TRIDIAG_AUTO_GPU_MIN_UNKNOWNS 16384
/* Below this many unknowns OpenMP's start-up costs more than it saves. */
#define NS_TRIDIAG_AUTO_OPENMP_MIN_UNKNOWNS 65536

/* The rule of docs/tridiag.md, "Choosing a method", from the H200 runs
 * (bench/README.md, "Batched tridiagonal"): warp fastest at every point of grid a
 * (n 64-512), block at every point of grid b (n 1,024-8,192), in both
 * precisions; within them the kernel picks its shape from n and batch. */
ns_tridiag_method ns_tridiag_auto_method(int32_t n, int64_t batch, ns_tridiag_precision precision,
                                         int variable, int gpu_usable) {
    (void)precision; /* the same crossover points were measured in both precisions */
    const double unknowns = (double)n * (double)batch;
    if (!gpu_usable || unknowns < NS_TRIDIAG_AUTO_GPU_MIN_UNKNOWNS)
        return unknowns < NS_TRIDIAG_AUTO_OPENMP_MIN_UNKNOWNS ? NS_TRIDIAG_SEQUENTIAL
                                                               : NS_TRIDIAG_OPENMP;
    if (variable) return NS_TRIDIAG_VBATCH_CP;
    if (n < 32) return NS_TRIDIAG_THOMAS_BATCH; /* outside the measured grids */
    if (n <= NS_TRIDIAG_WARP_MAX_N) return NS_TRIDIAG_WARP;
    if (n <= NS_TRIDIAG_BLOCK_MAX_N) return NS_TRIDIAG_BLOCK;
    return NS_TRIDIAG_THOMAS_BATCH;
}

void ns_tridiag_options_init(ns_tridiag_options *options) {
    if (!options) return;
    memset(options, 0, sizeof *options);
    options->layout = NS_TRIDIAG_FLAT;
    options->precision = NS_TRIDIAG_FLOAT64;
    options->method = NS_TRIDIAG_AUTO;
    options->device = NS_DEVICE_CURRENT;
}

/* ------------------------------------------------------------ creation */

static ns_status check_options(const ns_tridiag_options *o) {
    if (o->layout != NS_TRIDIAG_FLAT && o->layout != NS_TRIDIAG_INTERLEAVED)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "tridiag: unknown layout %d", (int)o->layout);
    if (o->precision != NS_TRIDIAG_FLOAT64 && o->precision != NS_TRIDIAG_FLOAT32)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "tridiag: unknown precision %d", (int)o->precision);
    if (method_index(o->method) < 0)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "tridiag: unknown method %d", (int)o->method);
    if (o->stride < 0)
        return ns_fail(NS_ERR_SIZE, "tridiag: stride %lld is negative", (long long)o->stride);
    if (o->threads < 0)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "tridiag: threads = %d is negative", o->threads);
    if (o->device < NS_DEVICE_CURRENT)
        return ns_fail(NS_ERR_INVALID_ARGUMENT,
                       "tridiag: device = %d is neither a device ordinal nor NS_DEVICE_CURRENT", (int)o->device);
    if (!(o->pivot_tolerance >= 0.0) || isinf(o->pivot_tolerance))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "tridiag: pivot_tolerance %g must be finite and >= 0",
                       o->pivot_tolerance);
    return NS_OK;
}

/* Resolve AUTO (the family's rule, ns_tridiag_auto_method), find the
 * method's implementation (core/registry.h) and check that it can take this
 * batch here. */
static ns_status choose_method(ns_tridiag_solver_t *s, ns_tridiag_method requested) {
    const ns_impl *cuda = ns_registry_for_backend(ns_tridiag_impls(), NS_BACKEND_CUDA);
    const int gpus = cuda && cuda->ops() ? ns_cuda_usable_devices() : 0;
    ns_tridiag_method m = requested;
    if (m == NS_TRIDIAG_AUTO) m = ns_tridiag_auto_method(s->n, s->batch, s->precision, s->variable, gpus > 0);
    const char *name = ns_tridiag_method_name(m);
    if (s->variable && !ns_tridiag_method_variable(m))
        return ns_fail(NS_ERR_UNSUPPORTED,
                       "tridiag: method %s needs systems of one size (variable sizes: sequential, "
                       "openmp, vbatch-cp, vbatch-ncp)", name);
    const ns_impl *impl = ns_registry_find(ns_tridiag_impls(), (int32_t)m, NULL);
    if (!impl) return ns_fail(NS_ERR_INVALID_ARGUMENT, "tridiag: unknown method %d", (int)m);
    char what[64];
    snprintf(what, sizeof what, "tridiag: method %s", name);
    ns_status ready = ns_registry_ready(impl, what);
    if (ready != NS_OK) return ready;
    if (m == NS_TRIDIAG_WARP && s->n > NS_TRIDIAG_WARP_MAX_N)
        return ns_fail(NS_ERR_UNSUPPORTED, "tridiag: method warp takes n <= %d (n = %d): use block",
                       NS_TRIDIAG_WARP_MAX_N, s->n);
    if (m == NS_TRIDIAG_BLOCK && s->n > NS_TRIDIAG_BLOCK_MAX_N)
        return ns_fail(NS_ERR_UNSUPPORTED,
                       "tridiag: method block takes n <= %d (n = %d): use thomas-batch",
                       NS_TRIDIAG_BLOCK_MAX_N, s->n);
    if (m == NS_TRIDIAG_CUSPARSE_STRIDED || m == NS_TRIDIAG_CUSPARSE_INTERLEAVED) {
        if (s->n < 3)
            return ns_fail(NS_ERR_UNSUPPORTED, "tridiag: cuSPARSE's gtsv routines need n >= 3 (n = %d)",
                           s->n);
        if ((double)s->n * (double)s->batch > (double)INT_MAX)
            return ns_fail(NS_ERR_UNSUPPORTED,
                           "tridiag: cuSPARSE takes int sizes: n * batch = %.0f exceeds %d",
                           (double)s->n * (double)s->batch, INT_MAX);
    }
    if (impl->backend == NS_BACKEND_CUDA && s->batch > INT_MAX)
        return ns_fail(NS_ERR_UNSUPPORTED, "tridiag: GPU methods take batch <= %d", INT_MAX);
    s->method = m;
    s->backend = impl->backend;
    s->ops = impl->ops();
    return NS_OK;
}

static ns_status finish_create(ns_tridiag_solver_t *s, const ns_tridiag_options *o,
                               ns_tridiag_solver_t **out) {
    ns_status st = choose_method(s, o->method);
    const int cuda = st == NS_OK && s->backend == NS_BACKEND_CUDA;
    const int caller_device = cuda ? ns_cuda_save_device() : -1;
    if (cuda) st = ns_cuda_resolve_device(o->device, "tridiag solver", &s->device); /* made current by create */
    if (st == NS_OK) st = s->ops->create(s);
    if (cuda) ns_cuda_restore_device(caller_device);
    if (st != NS_OK) {
        s->ops = NULL; /* nothing to destroy in the backend */
        ns_tridiag_solver_destroy(s);
        return st;
    }
    *out = s;
    return NS_OK;
}

static ns_tridiag_solver_t *new_solver(const ns_tridiag_options *o) {
    ns_tridiag_solver_t *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->layout = o->layout;
    s->precision = o->precision;
    s->threads = o->threads;
    s->check_finite = o->check_finite;
    s->device = -1;
    const double eps = o->precision == NS_TRIDIAG_FLOAT32 ? (double)FLT_EPSILON : DBL_EPSILON;
    s->tol = o->pivot_tolerance > 0.0 ? o->pivot_tolerance : 4.0 * eps;
    s->timing.upload_ms = s->timing.layout_ms = s->timing.kernel_ms = -1.0;
    s->timing.download_ms = s->timing.total_ms = -1.0;
    return s;
}

ns_status ns_tridiag_solver_create(int32_t n, int64_t batch, const ns_tridiag_options *options,
                                   ns_tridiag_solver_t **out) {
    if (!out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_tridiag_solver_create: out is NULL");
    *out = NULL;
    ns_tridiag_options defaults;
    ns_tridiag_options_init(&defaults);
    const ns_tridiag_options *o = options ? options : &defaults;
    ns_status st = check_options(o);
    if (st != NS_OK) return st;
    if (n < 1) return ns_fail(NS_ERR_SIZE, "tridiag: n = %d unknowns per system, must be >= 1", n);
    if (batch < 1) return ns_fail(NS_ERR_EMPTY, "tridiag: batch = %lld systems, must be >= 1", (long long)batch);
    /* The extent of the layout must fit in int64 (and in memory, checked by malloc). */
    const int64_t minimum = o->layout == NS_TRIDIAG_FLAT ? n : batch;
    const int64_t count = o->layout == NS_TRIDIAG_FLAT ? batch : n;
    const int64_t stride = o->stride ? o->stride : minimum;
    if (stride < minimum)
        return ns_fail(NS_ERR_SIZE, "tridiag: stride %lld is smaller than %s = %lld (%s layout)",
                       (long long)stride, o->layout == NS_TRIDIAG_FLAT ? "n" : "batch",
                       (long long)minimum, o->layout == NS_TRIDIAG_FLAT ? "Flat" : "Interleaved");
    if (count - 1 > (INT64_MAX - minimum) / stride)
        return ns_fail(NS_ERR_SIZE, "tridiag: n = %d, batch = %lld, stride %lld overflow 64-bit indices",
                       n, (long long)batch, (long long)stride);
    ns_tridiag_solver_t *s = new_solver(o);
    if (!s) return ns_fail(NS_ERR_OUT_OF_MEMORY, "tridiag: no memory for the solver");
    s->n = n;
    s->batch = batch;
    s->stride = stride;
    s->length = (count - 1) * stride + minimum;
    return finish_create(s, o, out);
}

ns_status ns_tridiag_solver_create_variable(int64_t batch, const int32_t *sizes,
                                            const int64_t *offsets,
                                            const ns_tridiag_options *options,
                                            ns_tridiag_solver_t **out) {
    if (!out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_tridiag_solver_create_variable: out is NULL");
    *out = NULL;
    if (!sizes) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_tridiag_solver_create_variable: sizes is NULL");
    ns_tridiag_options defaults;
    ns_tridiag_options_init(&defaults);
    const ns_tridiag_options *o = options ? options : &defaults;
    ns_status st = check_options(o);
    if (st != NS_OK) return st;
    if (batch < 1) return ns_fail(NS_ERR_EMPTY, "tridiag: batch = %lld systems, must be >= 1", (long long)batch);
    if (o->layout == NS_TRIDIAG_INTERLEAVED && offsets)
        return ns_fail(NS_ERR_INVALID_ARGUMENT,
                       "tridiag: offsets apply to the Flat layout only (Interleaved is padded)");
    int32_t nmax = 0;
    for (int64_t i = 0; i < batch; ++i) {
        if (sizes[i] < 1)
            return ns_fail(NS_ERR_SIZE, "tridiag: system %lld has size %d, must be >= 1", (long long)i, sizes[i]);
        if (sizes[i] > nmax) nmax = sizes[i];
    }
    if (offsets) {
        if (offsets[0] < 0)
            return ns_fail(NS_ERR_SIZE, "tridiag: offsets[0] = %lld is negative", (long long)offsets[0]);
        for (int64_t i = 0; i < batch; ++i)
            if (offsets[i + 1] < offsets[i] || offsets[i + 1] - offsets[i] < sizes[i])
                return ns_fail(NS_ERR_SIZE,
                               "tridiag: system %lld of size %d does not fit between offsets %lld and %lld",
                               (long long)i, sizes[i], (long long)offsets[i], (long long)offsets[i + 1]);
    }
    int64_t stride = 0;
    if (o->layout == NS_TRIDIAG_INTERLEAVED) {
        stride = o->stride ? o->stride : batch;
        if (stride < batch)
            return ns_fail(NS_ERR_SIZE, "tridiag: stride %lld is smaller than batch = %lld (Interleaved)",
                           (long long)stride, (long long)batch);
        if (nmax - 1 > (INT64_MAX - batch) / stride)
            return ns_fail(NS_ERR_SIZE, "tridiag: sizes and stride overflow 64-bit indices");
    } else if (o->stride) {
        return ns_fail(NS_ERR_INVALID_ARGUMENT,
                       "tridiag: variable sizes in the Flat layout take offsets, not a stride");
    }
    ns_tridiag_solver_t *s = new_solver(o);
    if (!s) return ns_fail(NS_ERR_OUT_OF_MEMORY, "tridiag: no memory for the solver");
    s->n = nmax;
    s->batch = batch;
    s->variable = 1;
    s->stride = stride ? stride : 1;
    s->sizes = malloc((size_t)batch * sizeof *s->sizes);
    if (o->layout == NS_TRIDIAG_FLAT) s->offsets = malloc((size_t)(batch + 1) * sizeof *s->offsets);
    if (!s->sizes || (o->layout == NS_TRIDIAG_FLAT && !s->offsets)) {
        ns_tridiag_solver_destroy(s);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "tridiag: no memory for %lld sizes", (long long)batch);
    }
    memcpy(s->sizes, sizes, (size_t)batch * sizeof *sizes);
    if (o->layout == NS_TRIDIAG_FLAT) {
        if (offsets) {
            memcpy(s->offsets, offsets, (size_t)(batch + 1) * sizeof *offsets);
        } else {
            s->offsets[0] = 0;
            for (int64_t i = 0; i < batch; ++i) s->offsets[i + 1] = s->offsets[i] + sizes[i];
        }
        s->length = s->offsets[batch];
    } else {
        s->length = (int64_t)(nmax - 1) * stride + batch;
    }
    return finish_create(s, o, out);
}

/* Every call of a CUDA solver runs on its device and gives the caller's
 * current device back (core/device_impl.h). */
static int enter(const ns_tridiag_solver_t *solver) { return ns_cuda_enter_device(solver->device); }
static void leave(const ns_tridiag_solver_t *solver, int caller) { ns_cuda_leave_device(solver->device, caller); }

void ns_tridiag_solver_destroy(ns_tridiag_solver_t *solver) {
    if (!solver) return;
    const int caller = enter(solver);
    if (solver->ops && solver->ops->destroy) solver->ops->destroy(solver);
    leave(solver, caller);
    free(solver->sizes);
    free(solver->offsets);
    free(solver);
}

ns_tridiag_method ns_tridiag_solver_method(const ns_tridiag_solver_t *solver) {
    return solver ? solver->method : NS_TRIDIAG_AUTO;
}

ns_backend ns_tridiag_solver_backend(const ns_tridiag_solver_t *solver) {
    return solver ? solver->backend : NS_BACKEND_AUTO;
}

int64_t ns_tridiag_solver_length(const ns_tridiag_solver_t *solver) { return solver ? solver->length : 0; }

size_t ns_tridiag_solver_device_bytes(const ns_tridiag_solver_t *solver) {
    return solver ? solver->device_bytes : 0;
}

size_t ns_tridiag_solver_workspace_bytes(const ns_tridiag_solver_t *solver) {
    return solver ? solver->workspace_bytes : 0;
}

void ns_tridiag_solver_timing(const ns_tridiag_solver_t *solver, ns_solve_timing *timing) {
    if (!solver || !timing) return;
    *timing = solver->timing;
}

/* --------------------------------------------------------------- errors */

ns_status ns_tridiag_pivot_error(const ns_tridiag_solver_t *solver, int64_t system, int64_t unknown) {
    return ns_fail(NS_ERR_SINGULAR,
                   "tridiag: system %lld (of %lld), unknown %lld: zero, near-zero or non-finite pivot "
                   "(method %s, tolerance %g)",
                   (long long)system, (long long)solver->batch, (long long)unknown,
                   ns_tridiag_method_name(solver->method), solver->tol);
}

#define NS_FINITE_SCAN(T)                                                                  \
    do {                                                                                   \
        const T *arr[4] = {(const T *)dl, (const T *)d, (const T *)du, (const T *)x};     \
        for (int64_t s = 0; s < solver->batch; ++s) {                                      \
            const int32_t n = ns_tridiag_size_of(solver, s);                               \
            const int64_t base = ns_tridiag_base_of(solver, s);                            \
            for (int32_t k = 0; k < n; ++k) {                                              \
                const int64_t i = base + (int64_t)k * step;                                \
                for (int a = 0; a < 4; ++a) {                                              \
                    if ((a == 0 && k == 0) || (a == 2 && k == n - 1)) continue;            \
                    if (!isfinite(arr[a][i]))                                              \
                        return ns_fail(NS_ERR_NOT_FINITE,                                  \
                                       "tridiag: system %lld, unknown %d: %s is %g",       \
                                       (long long)s, k, names[a], (double)arr[a][i]);      \
                }                                                                          \
            }                                                                              \
        }                                                                                  \
    } while (0)

ns_status ns_tridiag_check_finite(const ns_tridiag_solver_t *solver, const void *dl, const void *d,
                                  const void *du, const void *x) {
    static const char *const names[4] = {"dl", "d", "du", "rhs (x)"};
    const int64_t step = (int64_t)ns_tridiag_step_of(solver);
    if (solver->precision == NS_TRIDIAG_FLOAT32)
        NS_FINITE_SCAN(float);
    else
        NS_FINITE_SCAN(double);
    return NS_OK;
}

/* ---------------------------------------------------------------- solve */

static ns_status check_solve(ns_tridiag_solver_t *solver, const void *dl, const void *d,
                             const void *du, const void *x, ns_tridiag_precision precision,
                             const char *what) {
    if (!solver) return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: solver is NULL", what);
    if (!dl || !d || !du || !x)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: %s is NULL", what,
                       !dl ? "dl" : !d ? "d" : !du ? "du" : "x");
    if (solver->precision != precision)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: the solver was created for %s", what,
                       solver->precision == NS_TRIDIAG_FLOAT32 ? "float32 (use the _f32 call)"
                                                               : "float64");
    return NS_OK;
}

static ns_status solve_host(ns_tridiag_solver_t *solver, const void *dl, const void *d,
                            const void *du, void *x) {
    if (solver->check_finite) {
        ns_status st = ns_tridiag_check_finite(solver, dl, d, du, x);
        if (st != NS_OK) return st;
    }
    const int caller = enter(solver);
    const double t0 = ns_time_ms();
    ns_status st = solver->ops->solve(solver, dl, d, du, x);
    solver->timing.total_ms = ns_time_ms() - t0;
    leave(solver, caller);
    return st;
}

ns_status ns_tridiag_solver_solve(ns_tridiag_solver_t *solver, const double *dl, const double *d,
                                  const double *du, double *x) {
    ns_status st = check_solve(solver, dl, d, du, x, NS_TRIDIAG_FLOAT64, "ns_tridiag_solver_solve");
    return st != NS_OK ? st : solve_host(solver, dl, d, du, x);
}

ns_status ns_tridiag_solver_solve_f32(ns_tridiag_solver_t *solver, const float *dl, const float *d,
                                      const float *du, float *x) {
    ns_status st = check_solve(solver, dl, d, du, x, NS_TRIDIAG_FLOAT32, "ns_tridiag_solver_solve_f32");
    return st != NS_OK ? st : solve_host(solver, dl, d, du, x);
}

ns_status ns_tridiag_solver_solve_device(ns_tridiag_solver_t *solver, void *dl, void *d, void *du, void *x,
                                         void *stream) {
    if (!solver) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_tridiag_solver_solve_device: solver is NULL");
    ns_status st = check_solve(solver, dl, d, du, x, solver->precision, "ns_tridiag_solver_solve_device");
    if (st != NS_OK) return st;
    if (!solver->ops->solve_device)
        return ns_fail(NS_ERR_UNSUPPORTED, "ns_tridiag_solver_solve_device: method %s runs on the CPU",
                       ns_tridiag_method_name(solver->method));
    const int caller = enter(solver);
    st = solver->ops->solve_device(solver, dl, d, du, x, stream);
    leave(solver, caller);
    /* queued, not finished: no host-side timings for it */
    solver->timing.upload_ms = solver->timing.layout_ms = solver->timing.kernel_ms = -1.0;
    solver->timing.download_ms = solver->timing.total_ms = -1.0;
    return st;
}

ns_status ns_tridiag_solver_wait(ns_tridiag_solver_t *solver) {
    if (!solver) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_tridiag_solver_wait: solver is NULL");
    if (!solver->ops->wait) return NS_OK; /* CPU methods queue nothing */
    const int caller = enter(solver);
    ns_status st = solver->ops->wait(solver);
    leave(solver, caller);
    return st;
}

ns_status ns_tridiag_solver_benchmark(ns_tridiag_solver_t *solver, const void *dl, const void *d,
                                      const void *du, void *x, int repeats, double *kernel_ms) {
    if (!solver) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_tridiag_solver_benchmark: solver is NULL");
    ns_status st = check_solve(solver, dl, d, du, x, solver->precision, "ns_tridiag_solver_benchmark");
    if (st != NS_OK) return st;
    if (repeats < 1 || !kernel_ms)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_tridiag_solver_benchmark: repeats = %d, kernel_ms %s",
                       repeats, kernel_ms ? "given" : "NULL");
    if (solver->check_finite) {
        st = ns_tridiag_check_finite(solver, dl, d, du, x);
        if (st != NS_OK) return st;
    }
    const int caller = enter(solver);
    st = solver->ops->benchmark(solver, dl, d, du, x, repeats, kernel_ms);
    leave(solver, caller);
    return st;
}

ns_status ns_tridiag_solve(int32_t n, int64_t batch, const ns_tridiag_options *options,
                           const double *dl, const double *d, const double *du, double *x) {
    ns_tridiag_solver_t *solver = NULL;
    ns_status st = ns_tridiag_solver_create(n, batch, options, &solver);
    if (st != NS_OK) return st;
    st = ns_tridiag_solver_solve(solver, dl, d, du, x);
    ns_tridiag_solver_destroy(solver);
    return st;
}

/* The family's implementations (core/registry.h). */
static const void *impl_cpu(void) { return ns_tridiag_cpu_backend(); }
static const void *impl_cuda(void) { return ns_tridiag_cuda_backend(); }
#define B NS_METHOD_BIT
static const ns_impl impls[] = {
    {NS_FAMILY_TRIDIAG, NS_BACKEND_CPU, "cpu", B(NS_TRIDIAG_SEQUENTIAL) | B(NS_TRIDIAG_OPENMP), impl_cpu, NULL},
    {NS_FAMILY_TRIDIAG, NS_BACKEND_CUDA, "cuda",
     B(NS_TRIDIAG_THOMAS_BATCH) | B(NS_TRIDIAG_VBATCH_CP) | B(NS_TRIDIAG_VBATCH_NCP) | B(NS_TRIDIAG_WARP) |
         B(NS_TRIDIAG_BLOCK) | B(NS_TRIDIAG_CUSPARSE_STRIDED) | B(NS_TRIDIAG_CUSPARSE_INTERLEAVED),
     impl_cuda, NULL},
};
#undef B

ns_impl_table ns_tridiag_impls(void) { return NS_IMPL_TABLE(impls); }
