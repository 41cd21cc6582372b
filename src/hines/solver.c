/* The public solver: method names, option defaults, choosing a backend and
 * method, and dispatching through the backend table. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "hines/batch_impl.h"

static const struct {
    ns_hines_method method;
    const char *name;
    ns_backend backend;
} method_table[] = {
    {NS_HINES_AUTO, "auto", NS_BACKEND_AUTO},
    {NS_HINES_SEQUENTIAL, "sequential", NS_BACKEND_CPU},
    {NS_HINES_OPENMP, "openmp", NS_BACKEND_CPU},
    {NS_HINES_FLAT, "flat", NS_BACKEND_CUDA},
    {NS_HINES_INTERLEAVED, "interleaved", NS_BACKEND_CUDA},
    {NS_HINES_BLOCK_INTERLEAVED, "block-interleaved", NS_BACKEND_CUDA},
    {NS_HINES_BLOCK_SHARED, "block-shared", NS_BACKEND_CUDA},
    {NS_HINES_ONCHIP, "onchip", NS_BACKEND_CUDA},
    {NS_HINES_BRANCH_LEVEL, "branch-level", NS_BACKEND_CUDA},
    {NS_HINES_FINE_GRAINED, "fine-grained", NS_BACKEND_CUDA},
    {NS_HINES_TREE, "tree", NS_BACKEND_CUDA},
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

ns_backend ns_hines_method_backend(ns_hines_method method) {
    for (size_t i = 0; i < N_METHODS; ++i)
        if (method_table[i].method == method) return method_table[i].backend;
    return NS_BACKEND_AUTO;
}

const char *ns_backend_name(ns_backend backend) {
    switch (backend) {
    case NS_BACKEND_AUTO: return "auto";
    case NS_BACKEND_CPU: return "cpu";
    case NS_BACKEND_CUDA: return "cuda";
    }
    return "unknown";
}

ns_status ns_backend_from_name(const char *name, ns_backend *backend) {
    if (!name || !backend) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_backend_from_name: NULL argument");
    if (strcmp(name, "auto") == 0) *backend = NS_BACKEND_AUTO;
    else if (strcmp(name, "cpu") == 0) *backend = NS_BACKEND_CPU;
    else if (strcmp(name, "cuda") == 0 || strcmp(name, "gpu") == 0) *backend = NS_BACKEND_CUDA;
    else return ns_fail(NS_ERR_INVALID_ARGUMENT, "unknown backend '%s' (auto, cpu, cuda)", name);
    return NS_OK;
}

void ns_solve_options_init(ns_solve_options *options) {
    if (!options) return;
    memset(options, 0, sizeof *options);
    options->backend = NS_BACKEND_AUTO;
    options->method = NS_HINES_AUTO;
}

/* Below this many compartments a GPU solve costs more in transfers and
 * launches than the CPU needs for the whole batch (docs/methods.md). */
#define NS_AUTO_GPU_MIN_COMPARTMENTS (1 << 20)

static ns_status resolve(const ns_batch_t *batch, const ns_solve_options *o, ns_backend *backend,
                         ns_hines_method *method, const ns_hines_backend_ops **ops) {
    ns_backend want = o->backend;
    ns_hines_method m = o->method;
    if (m != NS_HINES_AUTO) {
        ns_backend mb = ns_hines_method_backend(m);
        if (mb == NS_BACKEND_AUTO) return ns_fail(NS_ERR_INVALID_ARGUMENT, "unknown method %d", (int)m);
        if (want != NS_BACKEND_AUTO && want != mb)
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "method '%s' runs on the %s backend, not on %s",
                           ns_hines_method_name(m), ns_backend_name(mb), ns_backend_name(want));
        want = mb;
    }
    if (want == NS_BACKEND_AUTO)
        want = (ns_cuda_usable_devices() > 0 &&
                ns_batch_compartments(batch) >= NS_AUTO_GPU_MIN_COMPARTMENTS)
                   ? NS_BACKEND_CUDA
                   : NS_BACKEND_CPU;
    const ns_hines_backend_ops *impl =
        want == NS_BACKEND_CUDA ? ns_hines_cuda_backend() : ns_hines_cpu_backend();
    if (!impl)
        return ns_fail(NS_ERR_UNSUPPORTED, "the %s backend is not available in this build",
                       ns_backend_name(want));
    if (want == NS_BACKEND_CUDA && ns_cuda_usable_devices() == 0)
        return ns_fail(NS_ERR_NO_DEVICE, "the cuda backend needs a GPU, and none is usable here");
    if (m == NS_HINES_AUTO) m = impl->choose(batch, o);
    *backend = want;
    *method = m;
    *ops = impl;
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
    ns_status st = resolve(batch, &o, &s->backend, &s->method, &s->ops);
    if (st == NS_OK) st = s->ops->create(s);
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
    if (solver->ops && solver->ops->destroy) solver->ops->destroy(solver);
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
    return solver->ops->solve(solver, a, b, d, rhs);
}

ns_status ns_hines_solver_solve_device(ns_hines_solver_t *solver, const double *a, const double *b,
                                       double *d, double *rhs, void *stream) {
    if (!solver || !a || !b || !d || !rhs)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_hines_solver_solve_device: NULL argument");
    if (!solver->ops->solve_device)
        return ns_fail(NS_ERR_UNSUPPORTED, "method '%s' solves host arrays only (device arrays: 'tree')",
                       ns_hines_method_name(solver->method));
    return solver->ops->solve_device(solver, a, b, d, rhs, stream);
}

ns_status ns_hines_solver_wait(ns_hines_solver_t *solver) {
    if (!solver) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_hines_solver_wait: solver is NULL");
    return solver->ops->wait ? solver->ops->wait(solver) : NS_OK;
}

ns_status ns_hines_solver_benchmark(ns_hines_solver_t *solver, const double *a, const double *b,
                                    double *d, double *rhs, int repeats, double *kernel_ms) {
    if (!solver || !a || !b || !d || !rhs || !kernel_ms)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_hines_solver_benchmark: NULL argument");
    if (repeats < 1) return ns_fail(NS_ERR_INVALID_ARGUMENT, "repeats = %d must be >= 1", repeats);
    if (solver->ops->benchmark) return solver->ops->benchmark(solver, a, b, d, rhs, repeats, kernel_ms);
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
