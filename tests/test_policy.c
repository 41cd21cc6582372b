/* The `auto` decisions, without a GPU (issue 14): the Hines solver's CUDA
 * rule (hines/policy.c) and the GPU simulation's per-shape loop rule
 * (cable/sim_policy.c) on representative inputs, with the shared memory
 * and SM count of an H100/H200. The GPU tests check the same decisions on
 * the device through the public API (test_hines_tree_cuda, test_cable_cuda). */
#include "cable/sim_policy.h"
#include "check.h"
#include "hines/policy.h"
#include "neurosolve/neurosolve.h"

#define OPTIN 232448 /* [bytes] opt-in shared memory per block, H100/H200 */
#define SMS 132

int main(void) {
    /* the solver */
    CHECK(ns_hines_cuda_auto(54, 1000, 38580, OPTIN) == NS_HINES_TREE);     /* the bundled mix */
    CHECK(ns_hines_cuda_auto(54, 100000, 38580, OPTIN) == NS_HINES_TREE);
    CHECK(ns_hines_cuda_auto(10000, 10000, 3000, OPTIN) == NS_HINES_TREE);  /* every cell its own shape */
    CHECK(ns_hines_cuda_auto(1, 1, 38580, OPTIN) == NS_HINES_TREE);         /* one cell beyond shared memory */
    CHECK(ns_hines_cuda_auto(1, 256000, 76, OPTIN) == NS_HINES_ONCHIP);     /* small-low */
    CHECK(ns_hines_cuda_auto(1, 25600, 691, OPTIN) == NS_HINES_ONCHIP);     /* big-high, few cells */
    CHECK(ns_hines_cuda_auto(1, 256000, 691, OPTIN) == NS_HINES_INTERLEAVED);
    CHECK(ns_hines_cuda_auto(1, 1000, 7000, 49152) == NS_HINES_TREE);       /* a 48 KiB device */
    /* the simulation's loop per shape group */
    ns_sim_loop_facts f = {5, SMS, 1, 1, 75};
    CHECK(ns_sim_auto_loop(&f) == NS_SIM_LOOP_TREE); /* few cells: tree, whatever the schedule */
    CHECK(!ns_sim_auto_needs_onchip(5, SMS));
    f.cells = 2112; /* 16 per SM, a short path: onchip */
    CHECK(ns_sim_auto_needs_onchip(f.cells, SMS));
    CHECK(ns_sim_auto_loop(&f) == NS_SIM_LOOP_ONCHIP);
    f.onchip_path = 300; /* ca1_h10 */
    CHECK(ns_sim_auto_loop(&f) == NS_SIM_LOOP_TREE);
    f.onchip_path = 75;
    f.onchip_shared = 0; /* an image beyond shared memory */
    CHECK(ns_sim_auto_loop(&f) == NS_SIM_LOOP_TREE);
    f.onchip_shared = 1;
    f.onchip_fits = 0;
    CHECK(ns_sim_auto_loop(&f) == NS_SIM_LOOP_TREE);
    return check_summary("test_policy");
}
