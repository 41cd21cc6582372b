/* A program that uses an installed neurosolve as any project would: built
 * by tests/install/consumer/CMakeLists.txt (find_package) or by hand with
 * pkg-config (tests/install/scripts/consumer.cmake). It solves a batch of random
 * Hines systems with the auto method and with a GPU method (which, in a
 * static CUDA build, pulls the CUDA objects and runtime into the link),
 * and checks both against the sequential reference. Exit 0 on success. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <neurosolve/neurosolve.h>

#if NS_VERSION_NUMBER != NS_VERSION_MAJOR * 10000 + NS_VERSION_MINOR * 100 + NS_VERSION_PATCH
#error "NS_VERSION_NUMBER disagrees with NS_VERSION_MAJOR/MINOR/PATCH"
#endif

static int fail(const char *what, ns_status st) {
    fprintf(stderr, "consumer: %s: %s (%s)\n", what, ns_status_string(st), ns_last_error());
    return 1;
}

/* Solve with `method` and compare with the sequential solve of every cell. */
static int solve_and_check(const ns_batch_t *batch, ns_hines_method method, int *ran) {
    const int64_t n = ns_batch_compartments(batch);
    double *v = malloc(8 * (size_t)n * sizeof(double));
    if (!v) return 1;
    double *a = v, *b = v + n, *d = v + 2 * n, *rhs = v + 3 * n;
    double *d0 = v + 4 * n, *x0 = v + 5 * n;
    ns_status st = ns_batch_random_values(batch, 42, a, b, d, rhs);
    if (st != NS_OK) { free(v); return fail("random values", st); }
    memcpy(d0, d, (size_t)n * sizeof(double));
    memcpy(x0, rhs, (size_t)n * sizeof(double));

    ns_solve_options opt;
    ns_solve_options_init(&opt);
    opt.method = method;
    st = ns_hines_solve(batch, &opt, a, b, d, rhs);
    *ran = st == NS_OK;
    if (st == NS_ERR_NO_DEVICE || st == NS_ERR_UNSUPPORTED) {
        printf("method %s: not available here (%s)\n", ns_hines_method_name(method), ns_status_string(st));
        free(v);
        return 0;
    }
    if (st != NS_OK) { free(v); return fail(ns_hines_method_name(method), st); }

    const int64_t *off = ns_batch_cell_offset(batch);
    const int32_t *shape = ns_batch_cell_shape(batch);
    double worst = 0;
    for (int64_t c = 0; c < ns_batch_cells(batch); ++c) {
        const ns_tree_t *t = ns_batch_shape(batch, shape[c]);
        const int64_t o = off[c];
        if (ns_hines_solve_one(ns_tree_size(t), ns_tree_parent(t), a + o, b + o, d0 + o, x0 + o) >= 0) {
            free(v);
            fprintf(stderr, "consumer: reference solve failed\n");
            return 1;
        }
        for (int64_t i = o; i < off[c + 1]; ++i) {
            const double e = fabs(rhs[i] - x0[i]) / (fabs(x0[i]) + 1e-300);
            if (e > worst) worst = e;
        }
    }
    free(v);
    printf("method %s: max relative difference from the sequential solve %.3e\n",
           ns_hines_method_name(method), worst);
    return worst < 1e-10 ? 0 : 1;
}

int main(void) {
    if (ns_version_number() != NS_VERSION_NUMBER || strcmp(ns_version(), NS_VERSION_STRING) != 0) {
        fprintf(stderr, "consumer: headers %s (%d) but library %s (%u)\n", NS_VERSION_STRING,
                NS_VERSION_NUMBER, ns_version(), ns_version_number());
        return 1;
    }
    ns_build_info info;
    ns_get_build_info(&info);
    int devices = 0;
    ns_status st = ns_cuda_device_count(&devices);
    printf("neurosolve %s (%u): cuda %d (%d devices, %s), openmp %d\n", ns_version(), ns_version_number(),
           info.cuda, devices, ns_status_string(st), info.openmp);

    ns_tree_t *tree;
    st = ns_generate_binary_tree(255, 4, &tree);
    if (st != NS_OK) return fail("tree", st);
    const ns_tree_t *shapes[1] = {tree};
    ns_batch_t *batch;
    st = ns_batch_create(1, shapes, 300, NULL, &batch);
    ns_tree_destroy(tree);
    if (st != NS_OK) return fail("batch", st);

    int ran_auto = 0, ran_gpu = 0;
    int rc = solve_and_check(batch, NS_HINES_AUTO, &ran_auto);
    if (!rc) rc = solve_and_check(batch, NS_HINES_INTERLEAVED, &ran_gpu);
    ns_batch_destroy(batch);
    if (!rc && !ran_auto) rc = 1;
    printf("consumer: %s\n", rc ? "FAILED" : "ok");
    return rc;
}
