/* The device entry point (ns_hines_solver_solve_device / wait) of every
 * CUDA method against the sequential CPU solve: the bundled real
 * morphologies (several shapes: tree, fine-grained, branch-level,
 * interleaved, flat) and one shape of many cells (every method), on a
 * stream of the caller's, twice on one solver; the host entry point on
 * pageable and on pinned host arrays (the staging paths) against the same
 * reference; a zero pivot named by wait; bad arguments named (host memory,
 * an array shorter than the batch, a CPU method); the caller's current
 * device left as it was; and the capability query agreeing with what
 * creates. Skips (77) without a GPU. */
#ifndef NS_HAVE_CUDA
#include "check.h"
#include "neurosolve/neurosolve.h"

int main(void) { CHECK_SKIP("no GPU (built without CUDA)"); }
#else
#include <cuda_runtime.h>

#include "test_hines_mixed_common.h"

/* One device solve of p with method m on a caller stream; returns the max
 * relative error against the sequential solve (INFINITY on failure). */
static double device_run(const problem *p, ns_hines_method m, const char *what) {
    const size_t bytes = (size_t)p->n * sizeof(double);
    double *g[4] = {NULL, NULL, NULL, NULL};
    cudaStream_t q = NULL;
    ns_hines_solver_t *s = NULL;
    double err = INFINITY;
    ns_solve_options o;
    ns_solve_options_init(&o);
    o.method = m;
    const char *name = ns_hines_method_name(m);
    CHECK_MSG(cudaStreamCreateWithFlags(&q, cudaStreamNonBlocking) == cudaSuccess, "%s %s: stream", what, name);
    for (int k = 0; k < 4; ++k) CHECK_MSG(cudaMalloc((void **)&g[k], bytes) == cudaSuccess, "cudaMalloc");
    const double *h[4] = {p->a, p->b, p->d, p->rhs};
    ns_status st = ns_hines_solver_create(p->batch, &o, &s);
    CHECK_MSG(st == NS_OK, "%s %s: create: %s", what, name, ns_last_error());
    for (int rep = 0; rep < 2 && st == NS_OK; ++rep) {
        for (int k = 0; k < 4; ++k) cudaMemcpyAsync(g[k], h[k], bytes, cudaMemcpyHostToDevice, q);
        st = ns_hines_solver_solve_device(s, g[0], g[1], g[2], g[3], q);
        CHECK_MSG(st == NS_OK, "%s %s: solve_device: %s", what, name, ns_last_error());
        if (st == NS_OK) st = ns_hines_solver_wait(s);
        CHECK_MSG(st == NS_OK, "%s %s: wait: %s", what, name, ns_last_error());
    }
    if (st == NS_OK) {
        double *x = malloc(bytes);
        cudaMemcpy(x, g[3], bytes, cudaMemcpyDeviceToHost);
        err = problem_error(p, x);
        CHECK_MSG(err <= 1e-12, "%s %s (device arrays): max rel error %.3e", what, name, err);
        free(x);
    }
    ns_hines_solver_destroy(s);
    for (int k = 0; k < 4; ++k) cudaFree(g[k]);
    cudaStreamDestroy(q);
    return err;
}

/* The host entry point on pinned arrays (copied directly) and on pageable
 * ones (through the staging slots): both must give the reference. */
static void host_run(const problem *p, ns_hines_method m, const char *what) {
    const size_t bytes = (size_t)p->n * sizeof(double);
    ns_solve_options o;
    ns_solve_options_init(&o);
    o.method = m;
    ns_hines_solver_t *s = NULL;
    CHECK_OK(ns_hines_solver_create(p->batch, &o, &s));
    for (int pinned = 0; pinned < 2 && s; ++pinned) {
        double *d = NULL, *x = NULL;
        if (pinned) {
            cudaMallocHost((void **)&d, bytes);
            cudaMallocHost((void **)&x, bytes);
        } else {
            d = malloc(bytes);
            x = malloc(bytes);
        }
        memcpy(d, p->d, bytes);
        memcpy(x, p->rhs, bytes);
        const ns_status st = ns_hines_solver_solve(s, p->a, p->b, d, x);
        CHECK_MSG(st == NS_OK, "%s %s host (%s): %s", what, ns_hines_method_name(m), pinned ? "pinned" : "pageable",
                  ns_last_error());
        if (st == NS_OK) {
            const double err = problem_error(p, x);
            CHECK_MSG(err <= 1e-12, "%s %s host (%s): max rel error %.3e", what, ns_hines_method_name(m),
                      pinned ? "pinned" : "pageable", err);
        }
        if (pinned) {
            cudaFreeHost(d);
            cudaFreeHost(x);
        } else {
            free(d);
            free(x);
        }
    }
    ns_hines_solver_destroy(s);
}

int main(void) {
    int devices = 0;
    if (ns_cuda_device_count(&devices) != NS_OK || devices == 0) CHECK_SKIP("no GPU");
    /* the capability query agrees with this machine */
    ns_backend_info info;
    CHECK_OK(ns_backend_query(NS_BACKEND_CUDA, &info));
    CHECK(info.compiled == 1 && info.devices == devices);
    CHECK_OK(ns_method_available(NS_FAMILY_HINES, NS_HINES_TREE));
    CHECK_OK(ns_method_available(NS_FAMILY_TRIDIAG, NS_TRIDIAG_THOMAS_BATCH));

    bundled_set set;
    const int nb = bundled_load(&set);
    CHECK_MSG(nb == 54, "%d bundled morphologies loaded, expected 54", nb);
    const ns_tree_t *shapes[128];
    for (int k = 0; k < nb; ++k) shapes[k] = set.tree[k];
    problem p;
    /* several shapes: every method that takes them (the largest cell excluded for the one-thread-per-cell
     * kernels' sake of time: it is in test_hines_tree_cuda) */
    const ns_hines_method mixed[] = {NS_HINES_TREE, NS_HINES_FINE_GRAINED, NS_HINES_BRANCH_LEVEL,
                                     NS_HINES_INTERLEAVED, NS_HINES_FLAT};
    if (nb > 0 && problem_make(&p, nb, shapes, 2 * (int64_t)nb, NULL, 77)) {
        for (size_t k = 0; k < sizeof mixed / sizeof mixed[0]; ++k) device_run(&p, mixed[k], "bundled x2");
        host_run(&p, NS_HINES_TREE, "bundled x2");
        host_run(&p, NS_HINES_FINE_GRAINED, "bundled x2");
        /* bad arguments */
        ns_solve_options o;
        ns_solve_options_init(&o);
        o.method = NS_HINES_FINE_GRAINED;
        ns_hines_solver_t *s = NULL;
        CHECK_OK(ns_hines_solver_create(p.batch, &o, &s));
        const size_t bytes = (size_t)p.n * sizeof(double);
        double *g[4] = {NULL, NULL, NULL, NULL};
        for (int k = 0; k < 4; ++k) cudaMalloc((void **)&g[k], bytes);
        ns_status st = ns_hines_solver_solve_device(s, g[0], g[1], g[2], p.rhs, NULL);
        CHECK_MSG(st == NS_ERR_INVALID_ARGUMENT && strstr(ns_last_error(), "rhs is"), "host rhs: %s",
                  ns_last_error());
        st = ns_hines_solver_solve_device(s, g[0], g[1], g[2] + p.n / 2, g[3], NULL);
        CHECK_MSG(st == NS_ERR_INVALID_ARGUMENT && strstr(ns_last_error(), "d does not hold"), "short d: %s",
                  ns_last_error());
        /* a zero pivot is reported by wait, naming cell and compartment */
        const int64_t *off = ns_batch_cell_offset(p.batch);
        const int32_t leaf = ns_tree_size(shapes[ns_batch_cell_shape(p.batch)[3]]) - 1; /* a leaf in Hines order */
        double *d = malloc(bytes);
        memcpy(d, p.d, bytes);
        d[off[3] + leaf] = 0.0; /* a leaf's pivot is its d: zero */
        const double *h[4] = {p.a, p.b, d, p.rhs};
        for (int k = 0; k < 4; ++k) cudaMemcpy(g[k], h[k], bytes, cudaMemcpyHostToDevice);
        st = ns_hines_solver_solve_device(s, g[0], g[1], g[2], g[3], NULL);
        CHECK_OK(st);
        st = ns_hines_solver_wait(s);
        /* fine-grained reports the lowest compartment whose pivot is zero or
         * not finite (the leaf's parent, once the leaf's zero has reached it) */
        const char *want = "cell 3, compartment ";
        CHECK_MSG(st == NS_ERR_SINGULAR && strstr(ns_last_error(), want), "zero pivot: %s (%s), want %s",
                  ns_status_string(st), ns_last_error(), want);
        /* the host path names the same cell (the pipeline renumbers a chunk's cells) */
        double *x = malloc(bytes);
        memcpy(x, p.rhs, bytes);
        st = ns_hines_solver_solve(s, p.a, p.b, d, x);
        CHECK_MSG(st == NS_ERR_SINGULAR && strstr(ns_last_error(), want), "zero pivot (host): %s (%s)",
                  ns_status_string(st), ns_last_error());
        free(x);
        free(d);
        for (int k = 0; k < 4; ++k) cudaFree(g[k]);
        ns_hines_solver_destroy(s);
        /* the caller's current device is left as it was */
        int before = -1, after = -2;
        cudaGetDevice(&before);
        o.method = NS_HINES_TREE;
        o.device = devices - 1;
        CHECK_OK(ns_hines_solver_create(p.batch, &o, &s));
        cudaGetDevice(&after);
        CHECK(before == after);
        ns_hines_solver_destroy(s);
        /* a device that is not usable is named */
        o.device = devices;
        CHECK(ns_hines_solver_create(p.batch, &o, &s) == NS_ERR_NO_DEVICE);
        problem_free(&p);
    }
    /* one shape: every CUDA method */
    const ns_hines_method one[] = {NS_HINES_FLAT,    NS_HINES_INTERLEAVED,  NS_HINES_BLOCK_INTERLEAVED,
                                   NS_HINES_BLOCK_SHARED, NS_HINES_ONCHIP, NS_HINES_BRANCH_LEVEL,
                                   NS_HINES_FINE_GRAINED, NS_HINES_TREE};
    if (nb > 0 && problem_make(&p, 1, &shapes[0], 3000, NULL, 78)) {
        for (size_t k = 0; k < sizeof one / sizeof one[0]; ++k) device_run(&p, one[k], "one shape x3000");
        host_run(&p, NS_HINES_INTERLEAVED, "one shape x3000");
        /* the interleaved method in its native layout: convert, solve, convert back */
        {
            ns_solve_options o;
            ns_solve_options_init(&o);
            o.method = NS_HINES_INTERLEAVED;
            ns_hines_solver_t *s = NULL;
            CHECK_OK(ns_hines_solver_create(p.batch, &o, &s));
            CHECK(ns_hines_solver_native_layout(s) == NS_HINES_LAYOUT_INTERLEAVED);
            const size_t bytes = (size_t)p.n * sizeof(double);
            double *f[4], *g[4];
            const double *h[4] = {p.a, p.b, p.d, p.rhs};
            for (int k = 0; k < 4; ++k) {
                cudaMalloc((void **)&f[k], bytes);
                cudaMalloc((void **)&g[k], bytes);
                cudaMemcpy(f[k], h[k], bytes, cudaMemcpyHostToDevice);
                CHECK_OK(ns_hines_convert_device(p.batch, NS_HINES_LAYOUT_FLAT, NS_HINES_LAYOUT_INTERLEAVED, f[k],
                                                 g[k], NULL));
            }
            CHECK_OK(ns_hines_solver_solve_device_layout(s, NS_HINES_LAYOUT_INTERLEAVED, g[0], g[1], g[2], g[3], NULL));
            CHECK_OK(ns_hines_solver_wait(s));
            CHECK_OK(ns_hines_convert_device(p.batch, NS_HINES_LAYOUT_INTERLEAVED, NS_HINES_LAYOUT_FLAT, g[3], f[3],
                                             NULL));
            double *x = malloc(bytes);
            cudaMemcpy(x, f[3], bytes, cudaMemcpyDeviceToHost);
            const double err = problem_error(&p, x);
            CHECK_MSG(err <= 1e-12, "interleaved layout: max rel error %.3e", err);
            /* the layout of element (i, c) is i * cells + c: the converted rhs says so */
            cudaMemcpy(x, g[3], bytes, cudaMemcpyDeviceToHost);
            const int64_t cells = ns_batch_cells(p.batch), n1 = p.n / cells;
            double *xf = malloc(bytes);
            cudaMemcpy(xf, f[3], bytes, cudaMemcpyDeviceToHost);
            CHECK(x[5 * cells + 7] == xf[7 * n1 + 5]);
            free(xf);
            free(x);
            ns_hines_solver_destroy(s);
            /* another method has no interleaved layout */
            o.method = NS_HINES_TREE;
            CHECK_OK(ns_hines_solver_create(p.batch, &o, &s));
            CHECK(ns_hines_solver_native_layout(s) == NS_HINES_LAYOUT_FLAT);
            CHECK(ns_hines_solver_solve_device_layout(s, NS_HINES_LAYOUT_INTERLEAVED, g[0], g[1], g[2], g[3], NULL) ==
                  NS_ERR_INVALID_ARGUMENT);
            ns_hines_solver_destroy(s);
            for (int k = 0; k < 4; ++k) {
                cudaFree(f[k]);
                cudaFree(g[k]);
            }
        }
        host_run(&p, NS_HINES_ONCHIP, "one shape x3000");
        problem_free(&p);
    }
    bundled_free(&set);
    return check_summary("test_hines_device_cuda");
}
#endif
