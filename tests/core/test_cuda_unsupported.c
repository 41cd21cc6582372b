/* The "unsupported device" path on a real GPU: ns_cuda_fake_capability(6, 0)
 * (private, for tests) makes every device look like a Pascal, for which no build has code. Then no
 * device is usable, ns_cuda_device_info still describes device 0 (usable 0),
 * the auto method solves on the CPU, and an explicit GPU method fails with
 * NS_ERR_NO_DEVICE. Without CUDA or without a GPU the test skips (77). */
#include <stdlib.h>

#include "check.h"
#include "core/cuda_arch.h"
#include "neurosolve/neurosolve.h"

int main(void) {
    ns_build_info b;
    ns_get_build_info(&b);
    int n = 0;
    if (!b.cuda || ns_cuda_device_count(&n) != NS_OK || n == 0) {
        printf("test_cuda_unsupported: skipped (no usable GPU)\n");
        return 77;
    }
    printf("built for %s; %d usable GPU(s)\n", b.cuda_architectures, n);
    ns_device_info di;
    CHECK(ns_cuda_device_info(0, &di) == NS_OK && di.usable == 1);

    ns_cuda_fake_capability(6, 0);
    CHECK(ns_cuda_device_count(&n) == NS_OK && n == 0);
    CHECK(ns_cuda_device_info(0, &di) == NS_OK && di.usable == 0 && di.major > 0);

    ns_tree_t *tree = NULL;
    CHECK(ns_generate_paper_tree("big-high", 1, &tree) == NS_OK);
    const ns_tree_t *shapes[1] = {tree};
    ns_batch_t *batch = NULL;
    CHECK(ns_batch_create(1, shapes, 2000, NULL, &batch) == NS_OK); /* large enough for auto -> GPU */
    const int64_t m = ns_batch_compartments(batch);
    double *v = malloc(4 * (size_t)m * sizeof(double));
    CHECK(v != NULL);
    CHECK(ns_batch_random_values(batch, 7, v, v + m, v + 2 * m, v + 3 * m) == NS_OK);

    ns_solve_options o;
    ns_solve_options_init(&o);
    ns_hines_solver_t *solver = NULL;
    CHECK(ns_hines_solver_create(batch, &o, &solver) == NS_OK);
    if (solver) {
        CHECK(ns_hines_solver_backend(solver) == NS_BACKEND_CPU);
        CHECK(ns_hines_solver_solve(solver, v, v + m, v + 2 * m, v + 3 * m) == NS_OK);
        ns_hines_solver_destroy(solver);
    }
    o.method = NS_HINES_INTERLEAVED;
    solver = NULL;
    ns_status st = ns_hines_solver_create(batch, &o, &solver);
    CHECK_MSG(st == NS_ERR_NO_DEVICE, "explicit GPU method: %s (%s)", ns_status_string(st), ns_last_error());
    ns_hines_solver_destroy(solver);

    /* back to the real device */
    ns_cuda_fake_capability(0, 0);
    CHECK(ns_cuda_device_count(&n) == NS_OK && n > 0);
    solver = NULL;
    ns_solve_options_init(&o);
    CHECK(ns_hines_solver_create(batch, &o, &solver) == NS_OK);
    if (solver) {
        CHECK(ns_hines_solver_backend(solver) == NS_BACKEND_CUDA);
        ns_hines_solver_destroy(solver);
    }
    free(v);
    ns_batch_destroy(batch);
    ns_tree_destroy(tree);
    return check_summary("test_cuda_unsupported");
}
