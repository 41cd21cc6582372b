/* The `tree` method (tree contraction) on the GPU against the sequential
 * CPU solve: every bundled morphology (three cells each, the 38,580-
 * compartment cell solved in device memory), one shape of many cells, a
 * chain of 100,000 compartments, a random tree of 1,000,000, a zero pivot
 * named by cell and compartment; the device entry point on the caller's
 * stream against the host entry point, two threads with separate solvers
 * on one GPU at once, and its bad-argument statuses (host pointers, a
 * stream of another GPU cannot be made with one GPU). Skips (77) without a
 * GPU. A zero pivot at a leaf of the largest cell (a big cell, its tail
 * renumbered) is named by its own number. */
#include <pthread.h>

#ifdef NS_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "test_hines_mixed_common.h"

static double run_tree(const problem *p, const char *what) {
    ns_solve_options o;
    ns_solve_options_init(&o);
    o.method = NS_HINES_TREE;
    double *d = malloc((size_t)p->n * sizeof(double)), *x = malloc((size_t)p->n * sizeof(double));
    memcpy(d, p->d, (size_t)p->n * sizeof(double));
    memcpy(x, p->rhs, (size_t)p->n * sizeof(double));
    ns_hines_solver_t *s = NULL;
    double err = INFINITY;
    ns_status st = ns_hines_solver_create(p->batch, &o, &s);
    CHECK_MSG(st == NS_OK, "%s: create: %s", what, ns_last_error());
    if (st == NS_OK) {
        st = ns_hines_solver_solve(s, p->a, p->b, d, x);
        CHECK_MSG(st == NS_OK, "%s: solve: %s", what, ns_last_error());
        err = problem_error(p, x);
        CHECK_MSG(err <= 1e-12, "%s: max rel error %.3e", what, err);
        double times[3];
        memcpy(d, p->d, (size_t)p->n * sizeof(double));
        memcpy(x, p->rhs, (size_t)p->n * sizeof(double));
        st = ns_hines_solver_benchmark(s, p->a, p->b, d, x, 3, times);
        CHECK_MSG(st == NS_OK, "%s: benchmark: %s", what, ns_last_error());
        const double err2 = problem_error(p, x);
        CHECK_MSG(err2 <= 1e-12, "%s (benchmark): max rel error %.3e", what, err2);
        printf("%s: %lld compartments, error %.2e, kernel %.3f ms\n", what, (long long)p->n, err, times[2]);
    }
    ns_hines_solver_destroy(s);
    free(d);
    free(x);
    return err;
}

#ifdef NS_HAVE_CUDA
typedef struct {
    const problem *p;
    double err;
    int ok;
} device_job;

/* The device entry point: arrays on the GPU, a stream of the caller's. */
static void *device_solve(void *arg) {
    device_job *job = arg;
    const problem *p = job->p;
    const size_t bytes = (size_t)p->n * sizeof(double);
    double *g[4] = {NULL, NULL, NULL, NULL};
    cudaStream_t q = NULL;
    ns_hines_solver_t *s = NULL;
    ns_solve_options o;
    ns_solve_options_init(&o);
    o.method = NS_HINES_TREE;
    job->ok = 0;
    job->err = INFINITY;
    if (cudaStreamCreate(&q) != cudaSuccess) return NULL;
    for (int k = 0; k < 4; ++k)
        if (cudaMalloc((void **)&g[k], bytes) != cudaSuccess) goto out;
    const double *h[4] = {p->a, p->b, p->d, p->rhs};
    for (int k = 0; k < 4; ++k)
        if (cudaMemcpyAsync(g[k], h[k], bytes, cudaMemcpyHostToDevice, q) != cudaSuccess) goto out;
    if (ns_hines_solver_create(p->batch, &o, &s) != NS_OK) goto out;
    /* twice: the second solve reuses the solver on the same stream */
    for (int rep = 0; rep < 2; ++rep) {
        if (rep && (cudaMemcpyAsync(g[2], p->d, bytes, cudaMemcpyHostToDevice, q) != cudaSuccess ||
                    cudaMemcpyAsync(g[3], p->rhs, bytes, cudaMemcpyHostToDevice, q) != cudaSuccess))
            goto out;
        if (ns_hines_solver_solve_device(s, g[0], g[1], g[2], g[3], q) != NS_OK) goto out;
        if (ns_hines_solver_wait(s) != NS_OK) goto out;
    }
    double *x = malloc(bytes);
    if (x && cudaMemcpy(x, g[3], bytes, cudaMemcpyDeviceToHost) == cudaSuccess) {
        job->err = problem_error(p, x);
        job->ok = 1;
    }
    free(x);
out:
    ns_hines_solver_destroy(s);
    for (int k = 0; k < 4; ++k) cudaFree(g[k]);
    cudaStreamDestroy(q);
    return NULL;
}
#endif

int main(void) {
    int devices = 0;
    if (ns_cuda_device_count(&devices) != NS_OK || devices == 0) CHECK_SKIP("no GPU");

    bundled_set set;
    const int nb = bundled_load(&set);
    CHECK_MSG(nb == 54, "%d bundled morphologies loaded, expected 54", nb);
    problem p;
    if (nb > 0) {
        const ns_tree_t *shapes[128];
        for (int k = 0; k < nb; ++k) shapes[k] = set.tree[k];
        if (problem_make(&p, nb, shapes, 3 * (int64_t)nb, NULL, 2024)) {
            run_tree(&p, "bundled x3");
#ifdef NS_HAVE_CUDA
            /* two threads, separate solvers, one GPU, at once */
            device_job jobs[2] = {{&p, 0, 0}, {&p, 0, 0}};
            pthread_t th[2];
            for (int k = 0; k < 2; ++k) pthread_create(&th[k], NULL, device_solve, &jobs[k]);
            for (int k = 0; k < 2; ++k) pthread_join(th[k], NULL);
            for (int k = 0; k < 2; ++k)
                CHECK_MSG(jobs[k].ok && jobs[k].err <= 1e-12, "device entry point, thread %d: ok %d error %.3e", k,
                          jobs[k].ok, jobs[k].err);
            /* bad arguments: host pointers */
            {
                ns_solve_options o;
                ns_solve_options_init(&o);
                o.method = NS_HINES_TREE;
                ns_hines_solver_t *s = NULL;
                CHECK_OK(ns_hines_solver_create(p.batch, &o, &s));
                double *d = malloc((size_t)p.n * sizeof(double)), *x = malloc((size_t)p.n * sizeof(double));
                const ns_status st = ns_hines_solver_solve_device(s, p.a, p.b, d, x, NULL);
                CHECK_MSG(st == NS_ERR_INVALID_ARGUMENT && strstr(ns_last_error(), "a is"),
                          "host pointers: %s (%s)", ns_status_string(st), ns_last_error());
                free(d);
                free(x);
                ns_hines_solver_destroy(s);
                /* a CPU method has no device entry point and says so */
                o.method = NS_HINES_SEQUENTIAL;
                CHECK_OK(ns_hines_solver_create(p.batch, &o, &s));
                CHECK(ns_hines_solver_solve_device(s, p.a, p.b, p.d, p.rhs, NULL) == NS_ERR_UNSUPPORTED);
                ns_hines_solver_destroy(s);
            }
#endif
            /* a zero pivot in cell 4's leaf is named */
            const int32_t *sh = ns_batch_cell_shape(p.batch);
            const int64_t *off = ns_batch_cell_offset(p.batch);
            const ns_tree_t *t4 = shapes[sh[4]];
            const int32_t leaf = ns_tree_size(t4) - 1; /* the highest node is a leaf in Hines order */
            double *d = malloc((size_t)p.n * sizeof(double)), *x = malloc((size_t)p.n * sizeof(double));
            memcpy(d, p.d, (size_t)p.n * sizeof(double));
            memcpy(x, p.rhs, (size_t)p.n * sizeof(double));
            d[off[4] + leaf] = 0.0;
            ns_solve_options o;
            ns_solve_options_init(&o);
            o.method = NS_HINES_TREE;
            const ns_status st = ns_hines_solve(p.batch, &o, p.a, p.b, d, x);
            char want[64];
            snprintf(want, sizeof want, "cell 4, compartment %d:", (int)leaf);
            CHECK_MSG(st == NS_ERR_SINGULAR && strstr(ns_last_error(), want), "zero pivot: %s (%s), want %s",
                      ns_status_string(st), ns_last_error(), want);
            free(d);
            free(x);
            problem_free(&p);
        }
        /* the largest cell alone, and one shape in many cells */
        if (problem_make(&p, 1, &shapes[set.largest], 1, NULL, 5)) {
            run_tree(&p, "largest bundled cell x1");
            /* a zero pivot at a leaf of the big cell is named by its own number */
            const int32_t leaf = ns_tree_size(shapes[set.largest]) - 1;
            double *d = malloc((size_t)p.n * sizeof(double)), *x = malloc((size_t)p.n * sizeof(double));
            memcpy(d, p.d, (size_t)p.n * sizeof(double));
            memcpy(x, p.rhs, (size_t)p.n * sizeof(double));
            d[leaf] = 0.0;
            ns_solve_options o;
            ns_solve_options_init(&o);
            o.method = NS_HINES_TREE;
            const ns_status st = ns_hines_solve(p.batch, &o, p.a, p.b, d, x);
            char want[64];
            snprintf(want, sizeof want, "cell 0, compartment %d:", (int)leaf);
            CHECK_MSG(st == NS_ERR_SINGULAR && strstr(ns_last_error(), want), "zero pivot, big cell: %s (%s), want %s",
                      ns_status_string(st), ns_last_error(), want);
            free(d);
            free(x);
            problem_free(&p);
        }
        if (problem_make(&p, 1, &shapes[0], 20000, NULL, 6)) {
            run_tree(&p, "one shape x20000");
            problem_free(&p);
        }
    }
    bundled_free(&set);
    /* a chain of 100,000 and a random tree of 1,000,000 compartments */
    {
        const int32_t sizes[2] = {100000, 1000000};
        for (int k = 0; k < 2; ++k) {
            const int32_t n = sizes[k];
            int32_t *parent = malloc((size_t)n * sizeof *parent);
            uint64_t x = 0x9E3779B97F4A7C15ULL;
            parent[0] = -1;
            for (int32_t i = 1; i < n; ++i) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                parent[i] = (k == 0 || x % 16) ? i - 1 : (int32_t)((x >> 8) % (uint64_t)i);
            }
            ns_tree_t *t = NULL;
            CHECK_OK(ns_tree_create(n, parent, &t));
            const ns_tree_t *shapes[1] = {t};
            if (t && problem_make(&p, 1, shapes, 2, NULL, 9 + k)) {
                run_tree(&p, k == 0 ? "chain of 1e5 x2" : "random tree of 1e6 x2");
                problem_free(&p);
            }
            ns_tree_destroy(t);
            free(parent);
        }
    }
    return check_summary("test_hines_tree_cuda");
}
