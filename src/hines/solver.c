/* The public solver: method names, option defaults, choosing a method (the
 * family's one auto rule, hines/policy.c) and its implementation (the
 * registry, core/registry.h), and dispatching through its ops. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef NS_HAVE_OPENMP
#include <omp.h>
#endif

#include "core/device_impl.h"
#include "core/error.h"
#include "core/registry.h"
#include "hines/batch_impl.h"
#include "hines/policy.h"

static const struct {
    ns_hines_method method;
    const char *name;
} method_table[] = {
    {NS_HINES_AUTO, "auto"},
    {NS_HINES_SEQUENTIAL, "sequential"},
    {NS_HINES_OPENMP, "openmp"},
    {NS_HINES_FLAT, "flat"},
    {NS_HINES_INTERLEAVED, "interleaved"},
    {NS_HINES_BLOCK_INTERLEAVED, "block-interleaved"},
    {NS_HINES_BLOCK_SHARED, "block-shared"},
    {NS_HINES_ONCHIP, "onchip"},
    {NS_HINES_BRANCH_LEVEL, "branch-level"},
    {NS_HINES_FINE_GRAINED, "fine-grained"},
    {NS_HINES_TREE, "tree"},
};
#define N_METHODS (sizeof method_table / sizeof method_table[0])

const char *ns_hines_method_name(ns_hines_method method) {
    for (size_t i = 0; i < N_METHODS; ++i)
        if (method_table[i].method == method) return method_table[i].name;
    return "unknown";
}

ns_status ns_hines_method_from_name(const char *name, ns_hines_method *method) {
    if (!name || !method) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_hines_method_from_name: NULL argument");
    for (size_t i = 0; i < N_METHODS; ++i)
        if (strcmp(method_table[i].name, name) == 0) {
            *method = method_table[i].method;
            return NS_OK;
        }
    return ns_fail(NS_ERR_INVALID_ARGUMENT,
                   "unknown method '%s' (auto, sequential, openmp, flat, interleaved, "
                   "block-interleaved, block-shared, onchip, branch-level, fine-grained, tree)", name);
}

/* The family's implementations, in order of preference where two list one
 * method: one-shape batches go to the same-shape kernels, batches of several
 * shapes to the mixed-shape ones (core/registry.h). */
static const void *impl_cpu(void) { return ns_hines_cpu_backend(); }
static const void *impl_cuda(void) { return ns_hines_cuda_backend(); }
static const void *impl_cuda_mixed(void) { return ns_hines_mixed_cuda_backend(); }
static const void *impl_cuda_tree(void) { return ns_hines_tree_cuda_backend(); }

static int one_shape(int32_t method, const void *batch) {
    (void)method;
    return ((const ns_batch_t *)batch)->n_shapes == 1;
}

#define B NS_METHOD_BIT
static const ns_impl impls[] = {
    {NS_FAMILY_HINES, NS_BACKEND_CPU, "cpu", B(NS_HINES_SEQUENTIAL) | B(NS_HINES_OPENMP), impl_cpu, NULL},
    {NS_FAMILY_HINES, NS_BACKEND_CUDA, "cuda-tree", B(NS_HINES_TREE), impl_cuda_tree, NULL},
    {NS_FAMILY_HINES, NS_BACKEND_CUDA, "cuda",
     B(NS_HINES_FLAT) | B(NS_HINES_INTERLEAVED) | B(NS_HINES_BLOCK_INTERLEAVED) | B(NS_HINES_BLOCK_SHARED) |
         B(NS_HINES_ONCHIP),
     impl_cuda, one_shape},
    {NS_FAMILY_HINES, NS_BACKEND_CUDA, "cuda-mixed",
     B(NS_HINES_FLAT) | B(NS_HINES_INTERLEAVED) | B(NS_HINES_FINE_GRAINED) | B(NS_HINES_BRANCH_LEVEL),
     impl_cuda_mixed, NULL},
};
#undef B

ns_impl_table ns_hines_impls(void) { return NS_IMPL_TABLE(impls); }

ns_backend ns_hines_method_backend(ns_hines_method method) {
    return ns_registry_backend(ns_hines_impls(), (int32_t)method);
}

void ns_solve_options_init(ns_solve_options *options) {
    if (!options) return;
    memset(options, 0, sizeof *options);
    options->backend = NS_BACKEND_AUTO;
    options->method = NS_HINES_AUTO;
    options->device = NS_DEVICE_CURRENT;
    options->devices = 1;
}

static int cpu_threads(const ns_solve_options *o) {
#ifdef NS_HAVE_OPENMP
    return o->threads > 0 ? o->threads : omp_get_max_threads();
#else
    (void)o;
    return 1;
#endif
}

/* The method (the family's auto rule for AUTO), its implementation from the
 * registry, and the device it runs on. */
static ns_status resolve(ns_hines_solver_t *s) {
    const ns_batch_t *batch = s->batch;
    const ns_solve_options *o = &s->options;
    ns_hines_method m = o->method;
    if (m != NS_HINES_AUTO) {
        const ns_backend mb = ns_hines_method_backend(m);
        if (mb == NS_BACKEND_AUTO) return ns_fail(NS_ERR_INVALID_ARGUMENT, "unknown method %d", (int)m);
        if (o->backend != NS_BACKEND_AUTO && o->backend != mb)
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "method '%s' runs on the %s backend, not on %s",
                           ns_hines_method_name(m), ns_backend_name(mb), ns_backend_name(o->backend));
    } else {
        if (o->backend != NS_BACKEND_AUTO && o->backend != NS_BACKEND_CPU && o->backend != NS_BACKEND_CUDA)
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "unknown backend %d", (int)o->backend);
        ns_hines_auto_facts f;
        memset(&f, 0, sizeof f);
        f.backend = o->backend;
        f.gpus = ns_cuda_usable_devices();
        f.cpu_threads = cpu_threads(o);
        f.n_shapes = batch->n_shapes;
        f.n_cells = batch->n_cells;
        f.compartments = ns_batch_compartments(batch);
        f.max_size = batch->max_size;
        int dev = 0;
        if (f.gpus > 0 && ns_cuda_resolve_device(o->device, "hines solver", &dev) == NS_OK)
            f.optin_shared = ns_cuda_optin_shared(dev);
        ns_clear_error();
        m = ns_hines_auto(&f);
    }
    const ns_impl *impl = ns_registry_find(ns_hines_impls(), (int32_t)m, batch);
    char what[64];
    snprintf(what, sizeof what, "method '%s'", ns_hines_method_name(m));
    if (!impl)
        return ns_fail(NS_ERR_UNSUPPORTED,
                       "method '%s' needs cells of one shape; this batch has %d shapes (for several shapes use "
                       "tree, fine-grained, branch-level, interleaved or flat)",
                       ns_hines_method_name(m), (int)batch->n_shapes);
    ns_status st = ns_registry_ready(impl, what);
    if (st != NS_OK) return st;
    s->method = m;
    s->backend = impl->backend;
    s->ops = impl->ops();
    s->device = -1;
    if (impl->backend == NS_BACKEND_CUDA) return ns_cuda_resolve_device(o->device, what, &s->device);
    return NS_OK;
}

ns_status ns_hines_solver_create(const ns_batch_t *batch, const ns_solve_options *options,
                                 ns_hines_solver_t **out) {
    if (!out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_hines_solver_create: out is NULL");
    *out = NULL;
    if (!batch) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_hines_solver_create: batch is NULL");
    ns_solve_options o;
    if (options) o = *options;
    else ns_solve_options_init(&o);
    if (o.block_size < 0 || o.threads < 0 || o.devices < 0)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "block_size, threads and devices must be >= 0");
    if (o.device < NS_DEVICE_CURRENT)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "device = %d is neither a device ordinal nor NS_DEVICE_CURRENT",
                       (int)o.device);
    if (o.plan_passes < 0 || o.plan_passes > (NS_PLAN_REROOT | NS_PLAN_SPLIT | NS_PLAN_NONE) ||
        ((o.plan_passes & NS_PLAN_NONE) && (o.plan_passes & (NS_PLAN_REROOT | NS_PLAN_SPLIT))))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "plan_passes = %d is not a combination of NS_PLAN_REROOT and "
                       "NS_PLAN_SPLIT, or NS_PLAN_NONE", (int)o.plan_passes);
    if (o.fine_shared < NS_FINE_SHARED_AUTO || o.fine_shared > NS_FINE_SHARED_AB)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "fine_shared = %d is not an NS_FINE_SHARED_* value",
                       (int)o.fine_shared);

    ns_hines_solver_t *s = calloc(1, sizeof *s);
    if (!s) return ns_fail(NS_ERR_OUT_OF_MEMORY, "solver");
    s->batch = batch;
    s->options = o;
    const int caller_device = ns_cuda_save_device();
    ns_status st = resolve(s);
    if (st == NS_OK) st = s->ops->create(s);
    ns_cuda_restore_device(caller_device);
    if (st != NS_OK) {
        free(s);
        return st;
    }
    s->timing.upload_ms = s->timing.layout_ms = s->timing.kernel_ms = s->timing.download_ms = -1.0;
    s->timing.total_ms = -1.0;
    *out = s;
    return NS_OK;
}

void ns_hines_solver_destroy(ns_hines_solver_t *solver) {
    if (!solver) return;
    const int caller_device = ns_cuda_save_device();
    ns_host_pipeline_destroy(solver->pipeline);
    if (solver->ops && solver->ops->destroy) solver->ops->destroy(solver);
    ns_cuda_restore_device(caller_device);
    free(solver);
}

ns_hines_method ns_hines_solver_method(const ns_hines_solver_t *solver) {
    return solver ? solver->method : NS_HINES_AUTO;
}
ns_backend ns_hines_solver_backend(const ns_hines_solver_t *solver) {
    return solver ? solver->backend : NS_BACKEND_AUTO;
}

void ns_hines_solver_timing(const ns_hines_solver_t *solver, ns_solve_timing *timing) {
    if (solver && timing) *timing = solver->timing;
}

static ns_status check_finite(const ns_batch_t *batch, const double *const arrays[4]) {
    static const char *names[4] = {"a", "b", "d", "rhs"};
    const int64_t n = ns_batch_compartments(batch);
    for (int k = 0; k < 4; ++k)
        for (int64_t i = 0; i < n; ++i)
            if (!(arrays[k][i] - arrays[k][i] == 0.0)) /* false for NaN and +-Inf */
                return ns_fail(NS_ERR_NOT_FINITE, "%s[%lld] = %g is not finite", names[k],
                               (long long)i, arrays[k][i]);
    return NS_OK;
}

ns_status ns_hines_solver_solve(ns_hines_solver_t *solver, const double *a, const double *b,
                                double *d, double *rhs) {
    if (!solver || !a || !b || !d || !rhs)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_hines_solver_solve: NULL argument");
    if (solver->options.check_finite) {
        const double *arrays[4] = {a, b, d, rhs};
        ns_status st = check_finite(solver->batch, arrays);
        if (st != NS_OK) return st;
    }
    const int caller_device = ns_cuda_save_device();
    ns_status st = solver->ops->solve ? solver->ops->solve(solver, a, b, d, rhs)
                                      : ns_host_pipeline_solve(solver, a, b, d, rhs);
    ns_cuda_restore_device(caller_device);
    return st;
}

ns_status ns_hines_solver_solve_device(ns_hines_solver_t *solver, const double *a, const double *b,
                                       double *d, double *rhs, void *stream) {
    if (!solver || !a || !b || !d || !rhs)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_hines_solver_solve_device: NULL argument");
    if (!solver->ops->solve_device)
        return ns_fail(NS_ERR_UNSUPPORTED, "method '%s' runs on the %s backend: device arrays need a CUDA method",
                       ns_hines_method_name(solver->method), ns_backend_name(solver->backend));
    const int caller_device = ns_cuda_save_device();
    ns_status st = solver->ops->solve_device(solver, a, b, d, rhs, stream);
    ns_cuda_restore_device(caller_device);
    return st;
}

ns_hines_layout ns_hines_solver_native_layout(const ns_hines_solver_t *solver) {
    return solver && solver->method == NS_HINES_INTERLEAVED && solver->ops->solve_device_interleaved
               ? NS_HINES_LAYOUT_INTERLEAVED
               : NS_HINES_LAYOUT_FLAT;
}

static const char *layout_name(ns_hines_layout layout) {
    return layout == NS_HINES_LAYOUT_FLAT ? "flat" : layout == NS_HINES_LAYOUT_INTERLEAVED ? "interleaved" : "unknown";
}

ns_status ns_hines_solver_solve_device_layout(ns_hines_solver_t *solver, ns_hines_layout layout, const double *a,
                                              const double *b, double *d, double *rhs, void *stream) {
    if (!solver) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_hines_solver_solve_device_layout: solver is NULL");
    if (layout == NS_HINES_LAYOUT_FLAT) return ns_hines_solver_solve_device(solver, a, b, d, rhs, stream);
    if (layout != ns_hines_solver_native_layout(solver))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "layout '%s' is not method '%s''s on this batch (flat or %s)",
                       layout_name(layout), ns_hines_method_name(solver->method),
                       layout_name(ns_hines_solver_native_layout(solver)));
    if (!a || !b || !d || !rhs)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_hines_solver_solve_device_layout: NULL argument");
    const int caller_device = ns_cuda_save_device();
    ns_status st = solver->ops->solve_device_interleaved(solver, a, b, d, rhs, stream);
    ns_cuda_restore_device(caller_device);
    return st;
}

ns_status ns_hines_convert_device(const ns_batch_t *batch, ns_hines_layout from, ns_hines_layout to, const double *src,
                                  double *dst, void *stream) {
    if (!batch || !src || !dst || src == dst)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_hines_convert_device: NULL or identical arrays");
    if ((from != NS_HINES_LAYOUT_FLAT && from != NS_HINES_LAYOUT_INTERLEAVED) ||
        (to != NS_HINES_LAYOUT_FLAT && to != NS_HINES_LAYOUT_INTERLEAVED))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_hines_convert_device: unknown layout");
    if (batch->n_shapes != 1)
        return ns_fail(NS_ERR_UNSUPPORTED, "the interleaved layout needs cells of one shape (this batch has %d)",
                       (int)batch->n_shapes);
    if (from == to) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_hines_convert_device: from and to are both '%s'",
                                   layout_name(from));
    return ns_hines_convert_launch(batch, to == NS_HINES_LAYOUT_FLAT, src, dst, stream);
}

ns_status ns_hines_solver_wait(ns_hines_solver_t *solver) {
    if (!solver) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_hines_solver_wait: solver is NULL");
    if (!solver->ops->wait) return NS_OK;
    const int caller_device = ns_cuda_save_device();
    ns_status st = solver->ops->wait(solver);
    ns_cuda_restore_device(caller_device);
    return st;
}

ns_status ns_hines_solver_benchmark(ns_hines_solver_t *solver, const double *a, const double *b,
                                    double *d, double *rhs, int repeats, double *kernel_ms) {
    if (!solver || !a || !b || !d || !rhs || !kernel_ms)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_hines_solver_benchmark: NULL argument");
    if (repeats < 1) return ns_fail(NS_ERR_INVALID_ARGUMENT, "repeats = %d must be >= 1", repeats);
    if (solver->ops->benchmark) {
        const int caller_device = ns_cuda_save_device();
        ns_status st = solver->ops->benchmark(solver, a, b, d, rhs, repeats, kernel_ms);
        ns_cuda_restore_device(caller_device);
        return st;
    }
    /* Generic path: keep pristine copies of d and rhs, restore before each run. */
    const size_t bytes = (size_t)ns_batch_compartments(solver->batch) * sizeof(double);
    double *d0 = malloc(bytes), *r0 = malloc(bytes);
    if (!d0 || !r0) {
        free(d0);
        free(r0);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "benchmark copies of %zu bytes", bytes);
    }
    memcpy(d0, d, bytes);
    memcpy(r0, rhs, bytes);
    ns_status st = NS_OK;
    for (int r = 0; r < repeats && st == NS_OK; ++r) {
        if (r) {
            memcpy(d, d0, bytes);
            memcpy(rhs, r0, bytes);
        }
        st = ns_hines_solver_solve(solver, a, b, d, rhs);
        kernel_ms[r] = solver->timing.kernel_ms;
    }
    free(d0);
    free(r0);
    return st;
}

ns_status ns_hines_solve(const ns_batch_t *batch, const ns_solve_options *options, const double *a,
                         const double *b, double *d, double *rhs) {
    ns_hines_solver_t *s = NULL;
    ns_status st = ns_hines_solver_create(batch, options, &s);
    if (st != NS_OK) return st;
    st = ns_hines_solver_solve(s, a, b, d, rhs);
    ns_hines_solver_destroy(s);
    return st;
}

ns_status ns_hines_pivot_error(const ns_batch_t *batch, int64_t cell, int32_t index) {
    (void)batch;
    return ns_fail(NS_ERR_SINGULAR, "cell %lld, compartment %d: zero or non-finite pivot",
                   (long long)cell, (int)index);
}
