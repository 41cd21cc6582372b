/* Every CUDA Hines method against the CPU reference (ns_hines_solve_one per
 * cell) and against the explicit matrix (residual of A x = rhs), on the
 * paper's six synthetic sizes, real morphologies, awkward cell counts,
 * one-compartment cells, forced chunking, all visible GPUs, bad pivots and
 * non-finite input. Skips (exit 77) without a GPU. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "neurosolve/device.h"
#include "neurosolve/hines.h"
#include "neurosolve/morph.h"
#include "neurosolve/status.h"
#include "neurosolve/tree.h"

#define TOL 1e-12

static const ns_hines_method gpu_methods[] = {NS_HINES_FLAT, NS_HINES_INTERLEAVED,
                                              NS_HINES_BLOCK_INTERLEAVED, NS_HINES_BLOCK_SHARED,
                                              NS_HINES_ONCHIP};
#define N_GPU_METHODS (int)(sizeof gpu_methods / sizeof gpu_methods[0])

/* A batch's inputs and the reference solution. */
typedef struct {
    ns_batch_t *batch;
    int64_t total;
    double *a, *b, *d0, *r0; /* pristine inputs */
    double *xref;            /* CPU reference solution */
} problem;

static void problem_free(problem *p) {
    ns_batch_destroy(p->batch);
    free(p->a);
    free(p->b);
    free(p->d0);
    free(p->r0);
    free(p->xref);
    memset(p, 0, sizeof *p);
}

/* Random values (seeded) and the reference solve, cell by cell. */
static int problem_make(problem *p, const ns_tree_t *tree, int64_t cells, uint64_t seed) {
    memset(p, 0, sizeof *p);
    const ns_tree_t *shapes[1] = {tree};
    if (ns_batch_create(1, shapes, cells, NULL, &p->batch) != NS_OK) return 0;
    p->total = ns_batch_compartments(p->batch);
    const size_t bytes = (size_t)p->total * sizeof(double);
    p->a = malloc(bytes);
    p->b = malloc(bytes);
    p->d0 = malloc(bytes);
    p->r0 = malloc(bytes);
    p->xref = malloc(bytes);
    double *dtmp = malloc(bytes);
    if (!p->a || !p->b || !p->d0 || !p->r0 || !p->xref || !dtmp) {
        free(dtmp);
        return 0;
    }
    if (ns_batch_random_values(p->batch, seed, p->a, p->b, p->d0, p->r0) != NS_OK) {
        free(dtmp);
        return 0;
    }
    memcpy(dtmp, p->d0, bytes);
    memcpy(p->xref, p->r0, bytes);
    const int32_t n = ns_tree_size(tree);
    const int32_t *parent = ns_tree_parent(tree);
    for (int64_t c = 0; c < cells; ++c) {
        const int64_t o = c * n;
        if (ns_hines_solve_one(n, parent, p->a + o, p->b + o, dtmp + o, p->xref + o) >= 0) {
            free(dtmp);
            return 0;
        }
    }
    free(dtmp);
    return 1;
}

/* Largest over cells of max|x - xref| / max|xref| (normwise per cell). */
static double max_rel_error(const problem *p, const double *x) {
    const int32_t n = ns_tree_size(ns_batch_shape(p->batch, 0));
    const int64_t cells = ns_batch_cells(p->batch);
    double worst = 0.0;
    for (int64_t c = 0; c < cells; ++c) {
        double diff = 0.0, scale = 1e-300;
        for (int32_t i = 0; i < n; ++i) {
            const double e = fabs(x[c * n + i] - p->xref[c * n + i]);
            if (!(e <= diff)) diff = e; /* NaN propagates */
            if (fabs(p->xref[c * n + i]) > scale) scale = fabs(p->xref[c * n + i]);
        }
        if (!(diff / scale <= worst)) worst = diff / scale;
    }
    return worst;
}

/* Largest relative residual |A x - rhs| / (|A| |x| + |rhs|) row by row,
 * from the explicit rows (independent of any solver). */
static double max_residual(const problem *p, const double *x) {
    const ns_tree_t *t = ns_batch_shape(p->batch, 0);
    const int32_t n = ns_tree_size(t);
    const int32_t *parent = ns_tree_parent(t);
    const int64_t cells = ns_batch_cells(p->batch);
    double *r = malloc((size_t)n * sizeof *r), *s = malloc((size_t)n * sizeof *s);
    double worst = 0.0;
    if (!r || !s) {
        free(r);
        free(s);
        return INFINITY;
    }
    for (int64_t c = 0; c < cells; ++c) {
        const int64_t o = c * n;
        for (int32_t i = 0; i < n; ++i) {
            r[i] = p->d0[o + i] * x[o + i] - p->r0[o + i];
            s[i] = fabs(p->d0[o + i] * x[o + i]) + fabs(p->r0[o + i]);
        }
        for (int32_t i = 1; i < n; ++i) {
            const int32_t q = parent[i];
            r[i] += p->b[o + i] * x[o + q];     /* row i: b[i] x[p] */
            s[i] += fabs(p->b[o + i] * x[o + q]);
            r[q] += p->a[o + i] * x[o + i];     /* row p: a[i] x[i] */
            s[q] += fabs(p->a[o + i] * x[o + i]);
        }
        for (int32_t i = 0; i < n; ++i) {
            const double e = fabs(r[i]) / (s[i] > 1e-300 ? s[i] : 1e-300);
            if (!(e <= worst)) worst = e;
        }
    }
    free(r);
    free(s);
    return worst;
}

/* Solve p with `o` on fresh copies; x (total entries) receives the result. */
static ns_status gpu_solve(const problem *p, const ns_solve_options *o, double *x) {
    const size_t bytes = (size_t)p->total * sizeof(double);
    double *d = malloc(bytes);
    if (!d) return NS_ERR_OUT_OF_MEMORY;
    memcpy(d, p->d0, bytes);
    memcpy(x, p->r0, bytes); /* any entry the GPU fails to write keeps its rhs value: wrong */
    ns_status st = ns_hines_solve(p->batch, o, p->a, p->b, d, x);
    free(d);
    return st;
}

/* Solve with method m (block size bs, memory limit, devices) and compare. */
static void check_method(const problem *p, ns_hines_method m, int32_t bs, size_t limit, int devices,
                         const char *label) {
    ns_solve_options o;
    ns_solve_options_init(&o);
    o.backend = NS_BACKEND_CUDA;
    o.method = m;
    o.block_size = bs;
    o.device_memory_limit = limit;
    o.devices = devices;
    double *x = malloc((size_t)p->total * sizeof *x);
    CHECK(x != NULL);
    if (!x) return;
    ns_status st = gpu_solve(p, &o, x);
    CHECK_MSG(st == NS_OK, "%s, %s (bs %d): %s: %s", label, ns_hines_method_name(m), (int)bs,
              ns_status_string(st), ns_last_error());
    if (st == NS_OK) {
        const double err = max_rel_error(p, x), res = max_residual(p, x);
        CHECK_MSG(err <= TOL, "%s, %s (bs %d): error %.3g against the CPU solve", label,
                  ns_hines_method_name(m), (int)bs, err);
        CHECK_MSG(res <= TOL, "%s, %s (bs %d): residual %.3g", label, ns_hines_method_name(m),
                  (int)bs, res);
    }
    free(x);
}

static void check_all_methods(const problem *p, const char *label) {
    for (int k = 0; k < N_GPU_METHODS; ++k) check_method(p, gpu_methods[k], 0, 0, 1, label);
    check_method(p, NS_HINES_BLOCK_INTERLEAVED, 32, 0, 1, label);
    check_method(p, NS_HINES_BLOCK_INTERLEAVED, 512, 0, 1, label);
    check_method(p, NS_HINES_BLOCK_SHARED, 3, 0, 1, label);
}

/* A test-local random tree: mostly chains, sometimes a jump back to an
 * earlier node (a branch point). Independent of the library's generators. */
static ns_tree_t *local_tree(int32_t n, uint64_t seed) {
    int32_t *parent = malloc((size_t)n * sizeof *parent);
    ns_tree_t *t = NULL;
    if (!parent) return NULL;
    uint64_t s = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    parent[0] = -1;
    for (int32_t i = 1; i < n; ++i) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        const uint32_t r = (uint32_t)(s >> 33);
        parent[i] = (r % 100 < 80) ? i - 1 : (int32_t)(r % (uint32_t)i);
    }
    if (ns_tree_create(n, parent, &t) != NS_OK) t = NULL;
    free(parent);
    return t;
}

static void test_paper_sizes(void) {
    static const char *names[] = {"small-low", "small-high", "medium-low",
                                  "medium-high", "big-low", "big-high"};
    for (int k = 0; k < 6; ++k) {
        ns_tree_t *t = NULL;
        CHECK_OK(ns_generate_paper_tree(names[k], 7, &t));
        if (!t) continue;
        problem p;
        CHECK(problem_make(&p, t, 300, 100 + (uint64_t)k));
        if (p.batch) check_all_methods(&p, names[k]);
        problem_free(&p);
        ns_tree_destroy(t);
    }
}

static void test_morphologies(void) {
    static const char *files[] = {"allen_pvalb_469628681.swc", "ca1_n120.swc", "purk_dbbs.swc",
                                  "hip_ri05.swc"};
    for (int k = 0; k < 4; ++k) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", NS_MORPHOLOGIES, files[k]);
        ns_morph_t *m = NULL;
        ns_cell_t *cell = NULL;
        ns_status st = ns_swc_read(path, NULL, &m);
        CHECK_MSG(st == NS_OK, "%s: %s", path, ns_last_error());
        if (st == NS_OK) st = ns_discretize(m, NULL, &cell);
        CHECK_MSG(st == NS_OK, "%s: %s", path, ns_last_error());
        if (st == NS_OK) {
            problem p;
            CHECK(problem_make(&p, ns_cell_tree(cell), 97, 200 + (uint64_t)k));
            if (p.batch)
                for (int j = 0; j < N_GPU_METHODS; ++j) {
                    /* onchip may not fit a very large cell: that must be a clean
                     * NS_ERR_UNSUPPORTED, which check_method would flag, so ask. */
                    ns_solve_options o;
                    ns_solve_options_init(&o);
                    o.method = gpu_methods[j];
                    ns_hines_solver_t *s = NULL;
                    ns_status cs = ns_hines_solver_create(p.batch, &o, &s);
                    ns_hines_solver_destroy(s);
                    if (cs == NS_ERR_UNSUPPORTED) {
                        printf("%s: %s unsupported here: %s\n", files[k],
                               ns_hines_method_name(gpu_methods[j]), ns_last_error());
                        continue;
                    }
                    check_method(&p, gpu_methods[j], 0, 0, 1, files[k]);
                }
            problem_free(&p);
        }
        ns_cell_destroy(cell);
        ns_morph_destroy(m);
    }
}

static void test_cell_counts(void) {
    static const int64_t counts[] = {1, 31, 33, 257, 1000};
    ns_tree_t *t = local_tree(57, 3);
    CHECK(t != NULL);
    if (!t) return;
    for (int k = 0; k < 5; ++k) {
        problem p;
        char label[64];
        snprintf(label, sizeof label, "%lld cells", (long long)counts[k]);
        CHECK(problem_make(&p, t, counts[k], 300 + (uint64_t)k));
        if (p.batch) check_all_methods(&p, label);
        problem_free(&p);
    }
    ns_tree_destroy(t);
}

static void test_tiny_cells(void) {
    for (int32_t n = 1; n <= 2; ++n) {
        ns_tree_t *t = local_tree(n, 5);
        CHECK(t != NULL);
        if (!t) continue;
        problem p;
        CHECK(problem_make(&p, t, 45, 400 + (uint64_t)n));
        if (p.batch) check_all_methods(&p, n == 1 ? "one-compartment cells" : "two-compartment cells");
        problem_free(&p);
        ns_tree_destroy(t);
    }
}

/* A memory limit that forces many chunks; one too small for a single cell. */
static void test_chunks(void) {
    ns_tree_t *t = NULL;
    CHECK_OK(ns_generate_paper_tree("medium-high", 11, &t));
    if (!t) return;
    problem p;
    CHECK(problem_make(&p, t, 2000, 500));
    if (p.batch) {
        /* 4 MiB: 5 chunks of Flat cells of 319 compartments, 16 of Block-Interleaved
         * groups of 128 cells (64 bytes per compartment with the layout copies). */
        const size_t limit = (size_t)4 << 20;
        for (int k = 0; k < N_GPU_METHODS; ++k) check_method(&p, gpu_methods[k], 0, limit, 1, "chunked");
        check_method(&p, NS_HINES_BLOCK_INTERLEAVED, 32, limit, 1, "chunked");
        ns_solve_options o;
        ns_solve_options_init(&o);
        o.method = NS_HINES_INTERLEAVED;
        o.device_memory_limit = 1024;
        ns_hines_solver_t *s = NULL;
        ns_status st = ns_hines_solver_create(p.batch, &o, &s);
        CHECK_MSG(st == NS_ERR_DEVICE_MEMORY, "1 KiB limit gave %s", ns_status_string(st));
        ns_hines_solver_destroy(s);
    }
    problem_free(&p);
    ns_tree_destroy(t);
}

/* All visible GPUs give the same bits as one GPU (same kernels per cell). */
static void test_all_devices(void) {
    ns_tree_t *t = NULL;
    CHECK_OK(ns_generate_paper_tree("big-high", 13, &t));
    if (!t) return;
    problem p;
    CHECK(problem_make(&p, t, 1001, 600));
    if (p.batch) {
        double *x1 = malloc((size_t)p.total * sizeof *x1), *xall = malloc((size_t)p.total * sizeof *xall);
        CHECK(x1 && xall);
        for (int k = 0; x1 && xall && k < N_GPU_METHODS; ++k) {
            ns_solve_options o;
            ns_solve_options_init(&o);
            o.method = gpu_methods[k];
            o.devices = 1;
            CHECK_OK(gpu_solve(&p, &o, x1));
            o.devices = 0;
            CHECK_OK(gpu_solve(&p, &o, xall));
            CHECK_MSG(memcmp(x1, xall, (size_t)p.total * sizeof *x1) == 0,
                      "%s: all GPUs differ from one GPU", ns_hines_method_name(gpu_methods[k]));
            CHECK(max_rel_error(&p, xall) <= TOL);
            /* chunks on every GPU at once */
            o.device_memory_limit = (size_t)8 << 20; /* one 128-cell group of 691 */
            CHECK_OK(gpu_solve(&p, &o, xall));
            CHECK(max_rel_error(&p, xall) <= TOL);
        }
        free(x1);
        free(xall);
    }
    problem_free(&p);
    ns_tree_destroy(t);
}

/* Zero pivots in cells 7 and 12 (two leaves of cell 7): the status and the
 * message must be the CPU reference's, whatever the method. NaN likewise. */
static void test_bad_pivots(void) {
    ns_tree_t *t = local_tree(90, 9);
    CHECK(t != NULL);
    if (!t) return;
    problem p;
    CHECK(problem_make(&p, t, 40, 700));
    const int32_t n = 90;
    int32_t leaves[2] = {-1, -1};
    {
        /* Two leaves (nodes without children): their pivots are their inputs. */
        int *has_child = calloc((size_t)n, sizeof *has_child);
        const int32_t *parent = ns_tree_parent(t);
        for (int32_t i = 1; i < n && has_child; ++i) has_child[parent[i]] = 1;
        int found = 0;
        for (int32_t i = 0; i < n && has_child && found < 2; ++i)
            if (!has_child[i]) leaves[found++] = i;
        free(has_child);
    }
    CHECK(leaves[0] >= 0 && leaves[1] >= 0);
    for (int kind = 0; p.batch && leaves[1] >= 0 && kind < 2; ++kind) {
        const double bad = kind == 0 ? 0.0 : NAN;
        p.d0[7 * n + leaves[0]] = bad;
        p.d0[7 * n + leaves[1]] = bad;
        p.d0[12 * n + leaves[0]] = bad;
        /* The reference's verdict and message. */
        ns_solve_options o;
        ns_solve_options_init(&o);
        o.method = NS_HINES_SEQUENTIAL;
        double *x = malloc((size_t)p.total * sizeof *x);
        CHECK(x != NULL);
        if (!x) break;
        ns_status ref = gpu_solve(&p, &o, x);
        char want[512];
        snprintf(want, sizeof want, "%s", ns_last_error());
        CHECK(ref == NS_ERR_SINGULAR);
        CHECK(strstr(want, "cell 7,") != NULL);
        for (int k = 0; k < N_GPU_METHODS; ++k) {
            o.method = gpu_methods[k];
            ns_status st = gpu_solve(&p, &o, x);
            CHECK_MSG(st == NS_ERR_SINGULAR && strcmp(ns_last_error(), want) == 0,
                      "%s, %s pivot: got %s '%s', want '%s'", ns_hines_method_name(gpu_methods[k]),
                      kind ? "NaN" : "zero", ns_status_string(st), ns_last_error(), want);
            /* The other cells are still solved. */
            CHECK_MSG(fabs(x[3 * n] - p.xref[3 * n]) <= TOL * (fabs(p.xref[3 * n]) + 1.0),
                      "%s, %s pivot: cell 3 got %.17g, want %.17g", ns_hines_method_name(gpu_methods[k]),
                      kind ? "NaN" : "zero", x[3 * n], p.xref[3 * n]);
        }
        if (kind == 1) {
            /* With check_finite the NaN is refused before any solve. */
            o.method = NS_HINES_ONCHIP;
            o.check_finite = 1;
            ns_status st = gpu_solve(&p, &o, x);
            CHECK_MSG(st == NS_ERR_NOT_FINITE, "check_finite gave %s", ns_status_string(st));
        }
        free(x);
    }
    problem_free(&p);
    ns_tree_destroy(t);
}

static void test_unsupported_and_auto(void) {
    /* Mixed shapes: the one-thread-per-cell methods take them (mixed_backend.c,
     * tested in test_hines_mixed_cuda.c); the same-shape-only kernels refuse
     * them by name. */
    ns_tree_t *t1 = local_tree(20, 1), *t2 = local_tree(30, 2);
    CHECK(t1 && t2);
    if (t1 && t2) {
        const ns_tree_t *shapes[2] = {t1, t2};
        ns_batch_t *batch = NULL;
        CHECK_OK(ns_batch_create(2, shapes, 10, NULL, &batch));
        ns_solve_options o;
        ns_solve_options_init(&o);
        ns_hines_solver_t *s = NULL;
        o.method = NS_HINES_INTERLEAVED;
        CHECK_OK(ns_hines_solver_create(batch, &o, &s));
        ns_hines_solver_destroy(s);
        s = NULL;
        o.method = NS_HINES_ONCHIP;
        ns_status st = ns_hines_solver_create(batch, &o, &s);
        CHECK_MSG(st == NS_ERR_UNSUPPORTED && strstr(ns_last_error(), "onchip") != NULL,
                  "onchip on mixed shapes: %s '%s'", ns_status_string(st), ns_last_error());
        ns_hines_solver_destroy(s);
        ns_batch_destroy(batch);
    }
    ns_tree_destroy(t1);
    ns_tree_destroy(t2);

    /* A cell too large for shared memory: onchip refuses, auto takes tree. */
    ns_tree_t *big = local_tree(12000, 4);
    CHECK(big != NULL);
    if (big) {
        problem p;
        CHECK(problem_make(&p, big, 3, 800));
        if (p.batch) {
            ns_solve_options o;
            ns_solve_options_init(&o);
            o.method = NS_HINES_ONCHIP;
            ns_hines_solver_t *s = NULL;
            CHECK(ns_hines_solver_create(p.batch, &o, &s) == NS_ERR_UNSUPPORTED);
            ns_hines_solver_destroy(s);
            s = NULL;
            o.method = NS_HINES_AUTO;
            o.backend = NS_BACKEND_CUDA;
            CHECK_OK(ns_hines_solver_create(p.batch, &o, &s));
            CHECK(ns_hines_solver_method(s) == NS_HINES_TREE);
            ns_hines_solver_destroy(s);
            check_method(&p, NS_HINES_AUTO, 0, 0, 1, "large cell, auto");
        }
        problem_free(&p);
        ns_tree_destroy(big);
    }

    /* Small cells: auto picks onchip on the CUDA backend. */
    ns_tree_t *small = local_tree(76, 6);
    if (small) {
        problem p;
        CHECK(problem_make(&p, small, 10, 900));
        ns_solve_options o;
        ns_solve_options_init(&o);
        o.backend = NS_BACKEND_CUDA;
        ns_hines_solver_t *s = NULL;
        if (p.batch) {
            CHECK_OK(ns_hines_solver_create(p.batch, &o, &s));
            CHECK(ns_hines_solver_method(s) == NS_HINES_ONCHIP);
        }
        ns_hines_solver_destroy(s);
        problem_free(&p);
        ns_tree_destroy(small);
    }
}

/* The benchmark entry point: staged inputs, per-run kernel times, results. */
static void test_benchmark(void) {
    ns_tree_t *t = NULL;
    CHECK_OK(ns_generate_paper_tree("small-high", 17, &t));
    if (!t) return;
    problem p;
    CHECK(problem_make(&p, t, 513, 1000));
    for (int k = 0; p.batch && k < N_GPU_METHODS; ++k) {
        for (int chunked = 0; chunked < 2; ++chunked) {
            ns_solve_options o;
            ns_solve_options_init(&o);
            o.method = gpu_methods[k];
            o.block_size = gpu_methods[k] == NS_HINES_BLOCK_INTERLEAVED ? 64 : 0;
            o.device_memory_limit = chunked ? (size_t)1 << 20 : 0; /* 1 MiB: 2-3 chunks */
            ns_hines_solver_t *s = NULL;
            double *d = malloc((size_t)p.total * sizeof *d), *x = malloc((size_t)p.total * sizeof *x);
            double ms[3] = {-1, -1, -1};
            CHECK_OK(ns_hines_solver_create(p.batch, &o, &s));
            if (s && d && x) {
                memcpy(d, p.d0, (size_t)p.total * sizeof *d);
                memcpy(x, p.r0, (size_t)p.total * sizeof *x);
                CHECK_OK(ns_hines_solver_benchmark(s, p.a, p.b, d, x, 3, ms));
                CHECK(ms[0] > 0 && ms[1] > 0 && ms[2] > 0);
                CHECK_MSG(max_rel_error(&p, x) <= TOL, "benchmark %s chunked %d: error %.3g",
                          ns_hines_method_name(gpu_methods[k]), chunked, max_rel_error(&p, x));
                ns_solve_timing tm;
                ns_hines_solver_timing(s, &tm);
                CHECK(tm.kernel_ms > 0);
            }
            free(d);
            free(x);
            ns_hines_solver_destroy(s);
        }
    }
    problem_free(&p);
    ns_tree_destroy(t);
}

static void test_copy_bandwidth(void) {
    double gbs = 0.0;
    CHECK_OK(ns_cuda_copy_bandwidth(0, (size_t)64 << 20, 5, &gbs));
    printf("copy bandwidth of device 0 (64 MiB copies): %.0f GB/s\n", gbs);
    CHECK(gbs > 1.0);
    CHECK(ns_cuda_copy_bandwidth(0, 1 << 20, 0, &gbs) == NS_ERR_INVALID_ARGUMENT);
}

int main(void) {
    int devices = 0;
    if (ns_cuda_device_count(&devices) != NS_OK || devices == 0) CHECK_SKIP("no GPU");
    ns_device_info info;
    if (ns_cuda_device_info(0, &info) == NS_OK)
        printf("device 0: %s (sm_%d%d), %d visible\n", info.name, info.major, info.minor, devices);
    if (getenv("NS_TEST_QUICK")) {
        /* A small subset for compute-sanitizer (bench/grid.sh check). */
        test_cell_counts();
        test_tiny_cells();
        test_bad_pivots();
        return check_summary("test_hines_cuda (quick)");
    }
    test_copy_bandwidth();
    test_paper_sizes();
    test_morphologies();
    test_cell_counts();
    test_tiny_cells();
    test_chunks();
    test_all_devices();
    test_bad_pivots();
    test_unsupported_and_auto();
    test_benchmark();
    return check_summary("test_hines_cuda");
}
