/* The `auto` decisions, without a GPU (issues 14, 15): the Hines family's
 * one rule (hines/policy.c: backend, then method), the GPU simulation's
 * per-shape loop rule (sim/policy.c) and LiFE's backend rule on
 * representative inputs, with the shared memory and SM count of an
 * H100/H200; the registry's routing of every Hines method (which
 * implementation takes a one-shape and a mixed batch); and the capability
 * query of this build. The GPU tests check the same decisions on the
 * device through the public API (test_hines_tree_cuda, test_cable_cuda,
 * test_hines_device_cuda). And the CPU simulation loop's lane-block and
 * thread decisions (sim/cpu/policy.c), and whether a model's mechanisms
 * run fused into the GPU tree kernel or per step (sim/policy.c). */
#include <string.h>

#include "sim/cpu/policy.h"
#include "sim/policy.h"
#include "check.h"
#include "core/registry.h"
#include "hines/batch_impl.h"
#include "hines/policy.h"
#include "life/life_impl.h"
#include "mech/builtin/builtin.h"
#include "neurosolve/neurosolve.h"

extern const ns_mech_desc nsm_hh_desc; /* src/mech/builtin/hh.c */

#define OPTIN 232448 /* [bytes] opt-in shared memory per block, H100/H200 */
#define OPTIN_H100 OPTIN
#define SMS 132

/* The registry's implementation name for method m of a batch of n_shapes. */
static const char *impl_for(ns_hines_method m, int32_t n_shapes) {
    int32_t p0[1] = {-1}, p1[2] = {-1, 0};
    ns_tree_t *t[2] = {NULL, NULL};
    ns_tree_create(1, p0, &t[0]);
    ns_tree_create(2, p1, &t[1]);
    ns_batch_t *b = NULL;
    const ns_tree_t *shapes[2] = {t[0], t[1]};
    ns_batch_create(n_shapes, shapes, 4, NULL, &b);
    const ns_impl *impl = ns_registry_find(ns_hines_impls(), (int32_t)m, b);
    ns_batch_destroy(b);
    ns_tree_destroy(t[0]);
    ns_tree_destroy(t[1]);
    return impl ? impl->name : "none";
}

static ns_hines_method hines_auto(ns_backend backend, int gpus, int threads, int32_t shapes, int64_t cells,
                                  int64_t compartments, int32_t max_size) {
    ns_hines_auto_facts f = {backend, gpus, threads, shapes, cells, compartments, max_size, OPTIN_H100};
    return ns_hines_auto(&f);
}


static void check_bytes(double got, double want, int line) {
    CHECK_MSG(got == want, "line %d: %.17g bytes per compartment-step, want %g", line, got, want);
}

/* The step's minimum bytes per compartment-step (sim/policy.h), counted by
 * hand. hh + pas on every one of 10 compartments: v 16, a b d 24, pas's g
 * and e 16, hh's 4 parameters 32 and 3 states 48, ena and ek 8 each: 152. */
static void test_min_bytes(void) {
    const ns_sim_bytes_mech hh_pas[2] = {{2, 0, 10}, {4, 3, 10}};
    const unsigned use = NS_MECH_ION_READ_E | NS_MECH_ION_WRITE_I;
    const ns_sim_bytes_ion na_k[2] = {{10, use}, {10, use}};
    check_bytes(ns_sim_min_bytes(10, 2, hh_pas, 2, na_k), 152.0, __LINE__);
    check_bytes(ns_sim_min_bytes(10, 1, hh_pas, 0, NULL), 56.0, __LINE__); /* pas alone */
    CHECK(ns_sim_min_bytes(0, 2, hh_pas, 2, na_k) == 0.0);
    /* A multi-channel model on 100 compartments (an L5 dendrite's kind):
     * pas (2 parameters) and Ih (1 parameter, 1 state) on all 100; NaTs2_t
     * (1, 2 states, na) and SKv3_1 (1, 1 state, k) on 40; Ca_HVA (1, 2 states,
     * ca: reads e, writes i) and CaDynamics_E2 (4 parameters, 1 state; reads
     * ica, writes cai) on 20. Values: v + matrix 5 x 100 = 500; pas 200; Ih
     * 300; NaTs2_t 40 x 5 = 200; SKv3_1 40 x 3 = 120; Ca_HVA 20 x 5 = 100;
     * CaDynamics 20 x 6 = 120; na, k: e read on 40 slots each = 80; ca on 20
     * slots: e read, cai read and written, e written by Nernst = 4 x 20 = 80.
     * 1,700 values x 8 B / 100 compartments = 136 B. */
    const ns_sim_bytes_mech l5[6] = {{2, 0, 100}, {1, 1, 100}, {1, 2, 40}, {1, 1, 40}, {1, 2, 20}, {4, 1, 20}};
    const ns_sim_bytes_ion l5_ions[3] = {
        {40, use}, {40, use}, {20, use | NS_MECH_ION_READ_I | NS_MECH_ION_WRITE_CI}};
    check_bytes(ns_sim_min_bytes(100, 6, l5, 3, l5_ions), 136.0, __LINE__);
    /* what each ion flag costs per slot, one at a time */
    const struct { unsigned f; double values; } per[] = {
        {NS_MECH_ION_WRITE_I, 0}, {NS_MECH_ION_READ_I, 0}, {NS_MECH_ION_READ_E, 1}, {NS_MECH_ION_READ_CI, 1},
        {NS_MECH_ION_READ_CO, 1}, {NS_MECH_ION_WRITE_CI, 3}, {NS_MECH_ION_WRITE_CO, 3}, {NS_MECH_ION_WRITE_E, 1}};
    for (size_t k = 0; k < sizeof per / sizeof per[0]; ++k) {
        const ns_sim_bytes_ion one = {10, per[k].f};
        check_bytes(ns_sim_min_bytes(10, 0, NULL, 1, &one), 40.0 + 8.0 * per[k].values, __LINE__);
    }
}

int main(void) {
    test_min_bytes();
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
    ns_sim_loop_facts f = {5, SMS, 1, 1, 75, 0, 0};
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
    /* a model: onchip where the onchip kernel runs its mechanisms, as the params' hh */
    f.onchip_fits = 1;
    f.model = 1;
    f.model_onchip = 1;
    CHECK(ns_sim_auto_loop(&f) == NS_SIM_LOOP_ONCHIP);
    f.model_onchip = 0; /* a library's mechanisms: the tree loop */
    CHECK(ns_sim_auto_loop(&f) == NS_SIM_LOOP_TREE);
    f.model_onchip = 1;
    f.onchip_path = 300; /* the same shape rule as without a model */
    CHECK(ns_sim_auto_loop(&f) == NS_SIM_LOOP_TREE);
    f.onchip_path = 75;
    f.cells = 5;
    CHECK(ns_sim_auto_loop(&f) == NS_SIM_LOOP_TREE);
    /* the Hines family's one rule: the backend first */
    CHECK(hines_auto(NS_BACKEND_AUTO, 1, 16, 54, 5400, 1 << 21, 38580) == NS_HINES_TREE); /* large, a GPU */
    CHECK(hines_auto(NS_BACKEND_AUTO, 0, 16, 54, 5400, 1 << 21, 38580) == NS_HINES_OPENMP); /* no GPU */
    CHECK(hines_auto(NS_BACKEND_AUTO, 1, 16, 1, 100, 30000, 300) == NS_HINES_OPENMP);       /* small: the CPU */
    CHECK(hines_auto(NS_BACKEND_AUTO, 1, 1, 1, 100, 30000, 300) == NS_HINES_SEQUENTIAL);    /* one thread */
    CHECK(hines_auto(NS_BACKEND_CPU, 1, 16, 1, 10, 3000, 300) == NS_HINES_SEQUENTIAL);      /* few cells */
    CHECK(hines_auto(NS_BACKEND_CUDA, 1, 16, 1, 10, 3000, 300) == NS_HINES_ONCHIP);         /* asked for CUDA */
    CHECK(hines_auto(NS_BACKEND_CUDA, 1, 16, 1, 256000, 256000 * 691LL, 691) == NS_HINES_INTERLEAVED);
    /* the simulation and LiFE: the GPU whenever one is usable */
    CHECK(ns_sim_auto_backend(1, 1) == NS_BACKEND_CUDA);
    CHECK(ns_sim_auto_backend(0, 1) == NS_BACKEND_CPU);
    /* a model whose library was built without CUDA code: the CPU, GPU or not */
    CHECK(ns_sim_auto_backend(1, 0) == NS_BACKEND_CPU);
    CHECK(ns_sim_auto_backend(0, 0) == NS_BACKEND_CPU);
    /* networks: `auto` keeps the CPU with or without a GPU (docs/networks.md, "The GPU loop") */
    CHECK(ns_sim_auto_network_backend(1) == NS_BACKEND_CPU);
    CHECK(ns_sim_auto_network_backend(0) == NS_BACKEND_CPU);
    /* a model on the GPU tree loop: its mechanisms fused into the tree
     * kernel when they are all built-in (pas, hh), none writes a
     * concentration and there is no network; per step otherwise; a FUSED
     * request the facts rule out is refused (-1), a PER_STEP one honoured */
    {
        const int AUTO = NS_SIM_GPU_MECHANISMS_AUTO, FUSED = NS_SIM_GPU_MECHANISMS_FUSED,
                  STEP = NS_SIM_GPU_MECHANISMS_PER_STEP;
        ns_sim_mech_facts mf = {AUTO, 1, 0, 0, 0, 0};
        CHECK(ns_sim_gpu_mechanisms_rule(&mf) == FUSED);          /* hh, pas: fused */
        mf.requested = FUSED;
        CHECK(ns_sim_gpu_mechanisms_rule(&mf) == FUSED);
        mf.requested = STEP;
        CHECK(ns_sim_gpu_mechanisms_rule(&mf) == STEP);           /* the bench's `before` */
        const ns_sim_mech_facts library = {AUTO, 0, 0, 0, 0, 0}, writer = {AUTO, 1, 1, 0, 0, 0}, net = {AUTO, 1, 0, 1, 0, 0};
        CHECK(ns_sim_gpu_mechanisms_rule(&library) == STEP);     /* the L5 model's library */
        CHECK(ns_sim_gpu_mechanisms_rule(&writer) == STEP);      /* Nernst after a writer */
        CHECK(ns_sim_gpu_mechanisms_rule(&net) == STEP);         /* a network of other synapses: per step */
        ns_sim_mech_facts syn = net;
        syn.network_fused = 1;
        CHECK(ns_sim_gpu_mechanisms_rule(&syn) == FUSED);        /* built-in ExpSyn/Exp2Syn: fused */
        syn.requested = STEP;
        CHECK(ns_sim_gpu_mechanisms_rule(&syn) == STEP);
        syn = writer;
        syn.network = syn.network_fused = 1;
        CHECK(ns_sim_gpu_mechanisms_rule(&syn) == STEP);         /* a writer stays per step */
        ns_sim_mech_facts exposed = {AUTO, 1, 0, 0, 0, 1};       /* gnabar_hh handed out on the GPU */
        CHECK(ns_sim_gpu_mechanisms_rule(&exposed) == STEP);
        exposed.requested = FUSED;
        CHECK(ns_sim_gpu_mechanisms_rule(&exposed) == -1);
        ns_sim_mech_facts forced = library;
        forced.requested = FUSED;
        CHECK(ns_sim_gpu_mechanisms_rule(&forced) == -1);
        forced = net;
        forced.requested = FUSED;
        CHECK(ns_sim_gpu_mechanisms_rule(&forced) == -1);
        forced = writer;
        forced.requested = STEP;
        CHECK(ns_sim_gpu_mechanisms_rule(&forced) == STEP);
        /* per mechanism asked for: the per-step path with one launch per mechanism, even for hh and pas */
        const int PER_MECH = NS_SIM_GPU_MECHANISMS_PER_MECHANISM;
        forced = mf;
        forced.requested = PER_MECH;
        CHECK(ns_sim_gpu_mechanisms_rule(&forced) == PER_MECH);
        CHECK(!ns_sim_onchip_model_rule(&forced));
        forced = library;
        forced.requested = PER_MECH;
        CHECK(ns_sim_gpu_mechanisms_rule(&forced) == PER_MECH);
        /* a library's fused launches (ABI 6) and the step's graph: where per step is asked for
         * or auto, with members of one library's launches */
        CHECK(ns_sim_library_fused_rule(AUTO, 12, 1));           /* the L5 model's library, auto */
        CHECK(!ns_sim_library_fused_rule(AUTO, 12, 0));
        CHECK(ns_sim_library_fused_rule(STEP, 12, 1));
        CHECK(ns_sim_library_fused_rule(STEP, 1, 1));
        CHECK(!ns_sim_library_fused_rule(PER_MECH, 12, 1));      /* the bench's `before` */
        CHECK(!ns_sim_library_fused_rule(STEP, 0, 1));           /* built-ins, a library of ABI 3-5, no --cuda */
        CHECK(!ns_sim_library_fused_rule(STEP, 2, 0));           /* two libraries' launches */
        CHECK(ns_sim_step_graph_rule(STEP, 0, 1, NS_SIM_STEP_GRAPH_MIN_STEPS));
        CHECK(ns_sim_step_graph_rule(AUTO, 0, 1, 2000));
        CHECK(!ns_sim_step_graph_rule(AUTO, 1, 1, 2000));
        CHECK(!ns_sim_step_graph_rule(PER_MECH, 0, 1, 2000));
        CHECK(!ns_sim_step_graph_rule(STEP, 1, 1, 2000));         /* a network */
        CHECK(!ns_sim_step_graph_rule(STEP, 0, 0, 2000));         /* a mechanism that reads t, launched apart */
        CHECK(!ns_sim_step_graph_rule(STEP, 0, 1, NS_SIM_STEP_GRAPH_MIN_STEPS - 1));
        /* the onchip loop runs a model that fuses and has no network, with the
         * built-in hh's TABLE and GLOBALs in the shared memory it sizes for them */
        CHECK(nsm_hh_desc.table_size == NS_FUSED_HH_TABLE && nsm_hh_desc.n_globals <= NS_FUSED_HH_GLOBALS);
        const ns_sim_mech_facts hh = {AUTO, 1, 0, 0, 0, 0};
        CHECK(ns_sim_onchip_model_rule(&hh));                    /* hh, pas: onchip */
        ns_sim_mech_facts o = hh;
        o.requested = FUSED;
        CHECK(ns_sim_onchip_model_rule(&o));
        o.requested = STEP;                                      /* per step asked for: the tree loop */
        CHECK(!ns_sim_onchip_model_rule(&o));
        CHECK(!ns_sim_onchip_model_rule(&library));              /* a library's mechanisms */
        CHECK(!ns_sim_onchip_model_rule(&writer));               /* Nernst after a writer */
        CHECK(!ns_sim_onchip_model_rule(&exposed));              /* parameters handed out */
        o = hh;
        o.network = o.network_fused = 1;                         /* a fused network: the tree loop */
        CHECK(!ns_sim_onchip_model_rule(&o));
    }
    CHECK(ns_life_auto_backend(1) == NS_BACKEND_CUDA);
    CHECK(ns_life_auto_backend(0) == NS_BACKEND_CPU);
    /* the registry: one implementation per method and batch, none swapped during create */
    CHECK(strcmp(impl_for(NS_HINES_SEQUENTIAL, 2), "cpu") == 0);
    CHECK(strcmp(impl_for(NS_HINES_TREE, 1), "cuda-tree") == 0);
    CHECK(strcmp(impl_for(NS_HINES_TREE, 2), "cuda-tree") == 0);
    CHECK(strcmp(impl_for(NS_HINES_INTERLEAVED, 1), "cuda") == 0);
    CHECK(strcmp(impl_for(NS_HINES_INTERLEAVED, 2), "cuda-mixed") == 0);
    CHECK(strcmp(impl_for(NS_HINES_ONCHIP, 1), "cuda") == 0);
    CHECK(strcmp(impl_for(NS_HINES_ONCHIP, 2), "none") == 0);
    CHECK(strcmp(impl_for(NS_HINES_FINE_GRAINED, 1), "cuda-mixed") == 0);
    CHECK(strcmp(impl_for(NS_HINES_BRANCH_LEVEL, 2), "cuda-mixed") == 0);
    CHECK(ns_hines_method_backend(NS_HINES_OPENMP) == NS_BACKEND_CPU);
    CHECK(ns_hines_method_backend(NS_HINES_TREE) == NS_BACKEND_CUDA);
    CHECK(ns_tridiag_method_backend(NS_TRIDIAG_CUSPARSE_STRIDED) == NS_BACKEND_CUDA);
    CHECK(ns_backend_methods(NS_BACKEND_CPU, NS_FAMILY_SIM, NULL, 0) == 2);
    CHECK(ns_backend_methods(NS_BACKEND_CPU, NS_FAMILY_TRIDIAG, NULL, 0) == 2);
    /* the capability query of this build: the CPU always, every method listed once */
    ns_backend_info info;
    CHECK_OK(ns_backend_query(NS_BACKEND_CPU, &info));
    CHECK(info.compiled == 1 && info.devices == 1 && info.threads >= 1);
    int32_t methods[16];
    CHECK(ns_backend_methods(NS_BACKEND_CPU, NS_FAMILY_HINES, methods, 16) == 2);
    CHECK(methods[0] == NS_HINES_SEQUENTIAL && methods[1] == NS_HINES_OPENMP);
    CHECK(ns_backend_methods(NS_BACKEND_CPU, NS_FAMILY_LIFE, NULL, 0) == NS_LIFE_VARIANT_COUNT - 1);
    CHECK_OK(ns_method_available(NS_FAMILY_HINES, NS_HINES_SEQUENTIAL));
    CHECK(ns_method_available(NS_FAMILY_HINES, 99) == NS_ERR_UNSUPPORTED);
    CHECK_OK(ns_backend_query(NS_BACKEND_CUDA, &info));
    int gpus = 0;
    const int have_cuda = ns_cuda_device_count(&gpus) == NS_OK;
    CHECK(info.compiled == have_cuda && info.devices == gpus);
    const int32_t n_cuda = ns_backend_methods(NS_BACKEND_CUDA, NS_FAMILY_HINES, methods, 16);
    CHECK(n_cuda == (have_cuda ? 8 : 0));
    const ns_status tree = ns_method_available(NS_FAMILY_HINES, NS_HINES_TREE);
    CHECK_MSG(tree == (!have_cuda ? NS_ERR_UNSUPPORTED : gpus ? NS_OK : NS_ERR_NO_DEVICE), "tree: %s (%s)",
              ns_status_string(tree), ns_last_error());
    /* the CPU loop (sim/cpu/policy.c): lane width, blocks, threads, partition */
    CHECK(ns_cpu_lane_width(307, 1000LL * 307, 16) == 8);  /* 1,000 L5 cells: full blocks */
    CHECK(ns_cpu_lane_width(307, 1000LL * 307, 1) == 8);
    CHECK(ns_cpu_lane_width(307, 16LL * 307, 16) == 1);    /* 16 cells, 16 threads: one cell per block */
    CHECK(ns_cpu_lane_width(307, 64LL * 307, 16) == 4);    /* 64 cells: 16 blocks of 4 */
    CHECK(ns_cpu_lane_width(38580, 363000, 16) == 1);      /* the large cell of the mix: alone */
    CHECK(ns_cpu_lane_width(259, 363000, 16) == 8);        /* a small one of the mix: full blocks */
    CHECK(ns_cpu_lane_width(0, 10, 2) == 1 && ns_cpu_lane_width(5, 10, 0) == 1);
    /* a cell split across the threads: when it exceeds one thread's share and
     * has 1,024 compartments per thread */
    CHECK(ns_cpu_split(38580, 369580, 16) == 1);           /* the large cell of the mix */
    CHECK(ns_cpu_split(38580, 369580, 1) == 0);            /* one thread: nothing to split */
    CHECK(ns_cpu_split(38580, 16LL * 38580, 16) == 0);     /* 16 of them: one per thread */
    CHECK(ns_cpu_split(20000, 369580, 16) == 0);           /* below a share */
    CHECK(ns_cpu_split(259, 259, 16) == 0);                /* one small cell: too small to split */
    CHECK(ns_cpu_split(16384, 16384, 16) == 1);            /* one cell of 1,024 per thread */
    /* the node order: shapes whose hh runs average under 8 nodes:
     * dense_Animal_2_Basal_2, allen_rbp4, fly_OP1_diadem_axon (99 in 49
     * runs); not mouselight_AA0059 (5,173 in 330 runs: 15.7), nor a shape
     * without hh */
    CHECK(ns_cpu_reorder(25727, 12857) && ns_cpu_reorder(215, 50) && ns_cpu_reorder(99, 49));
    CHECK(!ns_cpu_reorder(5173, 330) && !ns_cpu_reorder(0, 0) && !ns_cpu_reorder(80, 10));
    CHECK(ns_cpu_split(16383, 16383, 16) == 0);
    CHECK(ns_cpu_split(4096, 4096, 2) == 1 && ns_cpu_split(0, 0, 2) == 0);
    {
        /* the cut of a split cell's tree: subtrees of at most n / (threads *
         * pieces) nodes that are index ranges; the top = their ancestors */
        const int32_t parent[10] = {-1, 0, 1, 1, 0, 4, 5, 5, 4, 8};
        ns_cpu_cut cut;
        CHECK(ns_cpu_cut_make(10, parent, 2, 1, &cut) == 0); /* at most 5 nodes */
        CHECK(cut.n_cuts == 3 && cut.root[0] == 1 && cut.end[0] == 4 && cut.root[1] == 5 && cut.end[1] == 8 &&
              cut.root[2] == 8 && cut.end[2] == 10);
        const int32_t top[5] = {0, -1 - 1, 4, -1 - 5, -1 - 8}; /* node 4 (6 nodes below) stays in the top */
        CHECK(cut.n_top == 5 && memcmp(cut.top, top, sizeof top) == 0);
        CHECK(cut.range[0] == 0 && cut.range[1] == 5 && cut.range[2] == 10); /* n / 2 = 5: a cut root */
        CHECK(cut.cut_first[0] == 0 && cut.cut_first[1] == 1 && cut.cut_first[2] == 3);
        ns_cpu_cut_free(&cut);
        CHECK(ns_cpu_cut_make(10, parent, 3, 1, &cut) == 0); /* at most 3: the same cuts */
        /* 10/3 = 3 is inside [1, 4): the nearer end, 4; 20/3 = 6 inside [5, 8): 5 */
        CHECK(cut.n_cuts == 3 && cut.range[1] == 4 && cut.range[2] == 5 && cut.range[3] == 10);
        CHECK(cut.cut_first[1] == 1 && cut.cut_first[2] == 1 && cut.cut_first[3] == 3);
        ns_cpu_cut_free(&cut);
        /* a subtree that is not an index range ({1, 3}) is not cut */
        const int32_t gap[4] = {-1, 0, 0, 1};
        CHECK(ns_cpu_cut_make(4, gap, 2, 1, &cut) == 0);
        const int32_t top2[4] = {0, 1, -1 - 2, -1 - 3};
        CHECK(cut.n_cuts == 2 && cut.n_top == 4 && memcmp(cut.top, top2, sizeof top2) == 0);
        ns_cpu_cut_free(&cut);
        ns_cpu_cut_free(NULL);
    }
    {
        /* the loads a split cell's top leaves on its thread */
        const int64_t w[3] = {4, 4, 4}, load0[2] = {6, 0};
        int32_t own[3];
        CHECK(ns_cpu_partition(3, w, 2, load0, own, NULL) == 10 && own[0] == 1 && own[1] == 1 && own[2] == 0);
    }
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
        CHECK(ns_cpu_partition(6, w, 2, NULL, own, NULL) == 13);
        int64_t load[2] = {0, 0};
        for (int b = 0; b < 6; ++b) load[own[b]] += w[b];
        CHECK(load[0] == 13 && load[1] == 11);
        CHECK(own[0] == 0); /* the largest block first, onto thread 0 */
        /* the placing order: longest first, equal weights by block */
        int64_t placed[6];
        const int64_t want[6] = {0, 5, 1, 2, 3, 4};
        CHECK(ns_cpu_partition(6, w, 1, NULL, own, placed) == 24);
        for (int b = 0; b < 6; ++b) CHECK(own[b] == 0 && placed[b] == want[b]);
        /* 125 equal blocks over 16 threads: 8 at most, every thread busy */
        int64_t eq[125];
        int32_t o2[125], per[16] = {0};
        for (int b = 0; b < 125; ++b) eq[b] = 8 * 307;
        CHECK(ns_cpu_partition(125, eq, 16, NULL, o2, NULL) == 8 * 8 * 307);
        for (int b = 0; b < 125; ++b) per[o2[b]]++;
        for (int t = 0; t < 16; ++t) CHECK(per[t] == 7 || per[t] == 8);
    }
    return check_summary("test_policy");
}
