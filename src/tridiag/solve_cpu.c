/* The CPU backend: Thomas on every system, one after another (sequential)
 * or spread over OpenMP threads, reading either layout in place. */
#include <stdlib.h>
#include <string.h>

#ifdef NS_HAVE_OPENMP
#include <omp.h>
#endif

#include "core/error.h"
#include "core/timer.h"
#include "tridiag/tridiag_impl.h"

static ns_status cpu_create(ns_tridiag_solver_t *solver) {
    solver->state = NULL;
    solver->device_bytes = 0;
    solver->workspace_bytes = 0;
    return NS_OK;
}

static void cpu_destroy(ns_tridiag_solver_t *solver) { (void)solver; }

/* Solve systems [0, batch); on failure *bad_key = system * (n + 1) + unknown
 * of the lowest failing system (the key orders by system first). */
#define NS_CPU_LOOP(T, THOMAS)                                                                \
    do {                                                                                      \
        const T *DL = dl, *D = d, *DU = du;                                                   \
        T *X = x;                                                                             \
        const T tol = (T)solver->tol;                                                         \
        if (parallel) {                                                                       \
            NS_OMP_PARALLEL                                                                   \
            {                                                                                 \
                T *work = malloc((size_t)solver->n * sizeof *work);                           \
                if (!work) oom = 1;                                                           \
                NS_OMP_FOR                                                                    \
                for (int64_t s = 0; s < batch; ++s) {                                         \
                    if (!work) continue;                                                      \
                    const int64_t b = ns_tridiag_base_of(solver, s);                          \
                    int32_t k = THOMAS(ns_tridiag_size_of(solver, s), step, DL + b, D + b,    \
                                       DU + b, X + b, work, tol);                             \
                    if (k >= 0) {                                                             \
                        int64_t key = s * key_scale + k;                                      \
                        NS_OMP_CRITICAL                                                       \
                        if (key < bad_key) bad_key = key;                                     \
                    }                                                                         \
                }                                                                             \
                free(work);                                                                   \
            }                                                                                 \
        } else {                                                                              \
            T *work = malloc((size_t)solver->n * sizeof *work);                               \
            if (!work) oom = 1;                                                               \
            for (int64_t s = 0; work && s < batch; ++s) {                                     \
                const int64_t b = ns_tridiag_base_of(solver, s);                              \
                int32_t k = THOMAS(ns_tridiag_size_of(solver, s), step, DL + b, D + b,        \
                                   DU + b, X + b, work, tol);                                 \
                if (k >= 0) {                                                                 \
                    bad_key = s * key_scale + k;                                              \
                    break;                                                                    \
                }                                                                             \
            }                                                                                 \
            free(work);                                                                       \
        }                                                                                     \
    } while (0)

#ifdef NS_HAVE_OPENMP
#define NS_PRAGMA(x) _Pragma(#x)
#define NS_OMP_PARALLEL NS_PRAGMA(omp parallel num_threads(threads))
#define NS_OMP_FOR NS_PRAGMA(omp for schedule(static))
#define NS_OMP_CRITICAL NS_PRAGMA(omp critical(ns_tridiag_bad))
#else
#define NS_OMP_PARALLEL
#define NS_OMP_FOR
#define NS_OMP_CRITICAL
#endif

static ns_status cpu_run(ns_tridiag_solver_t *solver, const void *dl, const void *d, const void *du,
                         void *x) {
    const int64_t batch = solver->batch;
    const ptrdiff_t step = ns_tridiag_step_of(solver);
    const int64_t key_scale = (int64_t)solver->n + 1;
    const int parallel = solver->method == NS_TRIDIAG_OPENMP;
#ifdef NS_HAVE_OPENMP
    const int threads = solver->threads > 0 ? solver->threads : omp_get_max_threads();
#endif
    int64_t bad_key = INT64_MAX;
    int oom = 0;
    if (solver->precision == NS_TRIDIAG_FLOAT32)
        NS_CPU_LOOP(float, ns_tridiag_thomas_f32);
    else
        NS_CPU_LOOP(double, ns_tridiag_thomas_f64);
    if (oom)
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "tridiag: no memory for the %d-element Thomas scratch",
                       solver->n);
    if (bad_key != INT64_MAX)
        return ns_tridiag_pivot_error(solver, bad_key / key_scale, bad_key % key_scale);
    return NS_OK;
}

static ns_status cpu_solve(ns_tridiag_solver_t *solver, const void *dl, const void *d,
                           const void *du, void *x) {
    const double t0 = ns_time_ms();
    ns_status st = cpu_run(solver, dl, d, du, x);
    solver->timing.upload_ms = solver->timing.layout_ms = solver->timing.download_ms = -1.0;
    solver->timing.kernel_ms = ns_time_ms() - t0;
    return st;
}

/* Time `repeats` solves after one warm-up, restoring the right-hand side
 * from a copy before each (untimed). */
static ns_status cpu_benchmark(ns_tridiag_solver_t *solver, const void *dl, const void *d,
                               const void *du, void *x, int repeats, double *kernel_ms) {
    const size_t bytes = (size_t)solver->length *
                         (solver->precision == NS_TRIDIAG_FLOAT32 ? sizeof(float) : sizeof(double));
    void *rhs = malloc(bytes);
    if (!rhs) return ns_fail(NS_ERR_OUT_OF_MEMORY, "tridiag benchmark: no memory for a copy of x (%zu bytes)", bytes);
    memcpy(rhs, x, bytes);
    ns_status st = NS_OK;
    for (int r = -1; r < repeats && st == NS_OK; ++r) {
        memcpy(x, rhs, bytes);
        const double t0 = ns_time_ms();
        st = cpu_run(solver, dl, d, du, x);
        if (r >= 0) kernel_ms[r] = ns_time_ms() - t0;
    }
    free(rhs);
    solver->timing.upload_ms = solver->timing.layout_ms = solver->timing.download_ms = -1.0;
    if (st == NS_OK) solver->timing.kernel_ms = solver->timing.total_ms = kernel_ms[repeats - 1];
    return st;
}

static const ns_tridiag_backend_ops cpu_ops = {
    "cpu", cpu_create, cpu_solve, NULL, NULL, cpu_benchmark, cpu_destroy,
};

const ns_tridiag_backend_ops *ns_tridiag_cpu_backend(void) { return &cpu_ops; }
