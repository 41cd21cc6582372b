/* The `auto` decisions, without a GPU (issue 14): the Hines solver's CUDA
 * rule (hines/policy.c) and the GPU simulation's per-shape loop rule
 * (cable/sim_policy.c) on representative inputs, with the shared memory
 * and SM count of an H100/H200. The GPU tests check the same decisions on
 * the device through the public API (test_hines_tree_cuda, test_cable_cuda). */
#include "cable/cpu_policy.h"
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
    /* the CPU loop (cable/cpu_policy.c): lane width, blocks, threads, partition */
    CHECK(ns_cpu_lane_width(307, 1000LL * 307, 16) == 8);  /* 1,000 L5 cells: full blocks */
    CHECK(ns_cpu_lane_width(307, 1000LL * 307, 1) == 8);
    CHECK(ns_cpu_lane_width(307, 16LL * 307, 16) == 1);    /* 16 cells, 16 threads: one cell per block */
    CHECK(ns_cpu_lane_width(307, 64LL * 307, 16) == 4);    /* 64 cells: 16 blocks of 4 */
    CHECK(ns_cpu_lane_width(38580, 363000, 16) == 1);      /* the large cell of the mix: alone */
    CHECK(ns_cpu_lane_width(259, 363000, 16) == 8);        /* a small one of the mix: full blocks */
    CHECK(ns_cpu_lane_width(0, 10, 2) == 1 && ns_cpu_lane_width(5, 10, 0) == 1);
    int32_t wd[16];
    CHECK(ns_cpu_blocks(5, 8, wd) == 2 && wd[0] == 4 && wd[1] == 1); /* no padded lanes */
    CHECK(ns_cpu_blocks(21, 8, wd) == 4 && wd[0] == 8 && wd[1] == 8 && wd[2] == 4 && wd[3] == 1);
    CHECK(ns_cpu_blocks(7, 4, wd) == 3 && wd[0] == 4 && wd[1] == 2 && wd[2] == 1);
    CHECK(ns_cpu_blocks(3, 1, wd) == 3 && wd[2] == 1);
    CHECK(ns_cpu_blocks(0, 8, wd) == 0);
    CHECK(ns_cpu_blocks(1000, 8, NULL) == 125);
    CHECK(ns_cpu_threads(2, 1) == 1);   /* one cell, two threads: one thread */
    CHECK(ns_cpu_threads(16, 125) == 16);
    CHECK(ns_cpu_threads(0, 5) == 1);
    CHECK(ns_cpu_threads(16, 0) == 1);
    {
        /* longest first onto the least-loaded thread */
        const int64_t w[6] = {10, 3, 3, 3, 1, 4};
        int32_t own[6];
        /* 10 -> t0; 4, 3, 3 -> t1 (10); 3 -> t0 (tie: lowest, 13); 1 -> t1 (11) */
        CHECK(ns_cpu_partition(6, w, 2, own) == 13);
        int64_t load[2] = {0, 0};
        for (int b = 0; b < 6; ++b) load[own[b]] += w[b];
        CHECK(load[0] == 13 && load[1] == 11);
        CHECK(own[0] == 0); /* the largest block first, onto thread 0 */
        CHECK(ns_cpu_partition(6, w, 1, own) == 24);
        for (int b = 0; b < 6; ++b) CHECK(own[b] == 0);
        /* 125 equal blocks over 16 threads: 8 at most, every thread busy */
        int64_t eq[125];
        int32_t o2[125], per[16] = {0};
        for (int b = 0; b < 125; ++b) eq[b] = 8 * 307;
        CHECK(ns_cpu_partition(125, eq, 16, o2) == 8 * 8 * 307);
        for (int b = 0; b < 125; ++b) per[o2[b]]++;
        for (int t = 0; t < 16; ++t) CHECK(per[t] == 7 || per[t] == 8);
    }
    return check_summary("test_policy");
}
