/* Checkpoints of the GPU loops (docs/simulation.md, "Checkpoints"): a mixed
 * population (three morphologies of 36 to 703 compartments) in each GPU loop
 * (onchip, tree; the model of the parameters' hh and pas, which both run
 * fused), saved at a step that is not a multiple of the loop's launch part
 * (2,000 steps) or of record_every, restored into a new GPU simulation and
 * continued:
 *   - GPU -> GPU, same loop: the same as the uninterrupted GPU run (the
 *     kernels are deterministic; reported whether bit for bit, required
 *     within 1e-9); onchip -> tree: within 1e-6 of the tree run;
 *   - GPU -> CPU and CPU -> GPU: within the GPU/CPU agreement of the loops
 *     (test_cable_cuda: 1e-6 mV, spikes within 1e-6 ms);
 *   - ns_sim_set_state and ns_sim_set_model_var (hh's gates by name) on a GPU
 *     simulation reach the device; a parameter written with a new value is
 *     refused onchip and turns the tree loop's model to per step.
 * Skips without a GPU. */
#define _POSIX_C_SOURCE 200809L
#include "checkpoint_common.h"
#include "test_tmpdir.h"

enum { STEPS = 2600, SAVE = 2077, EVERY = 4, CELLS = 40, SHAPES = 3 };

static ns_cell_t *cells[SHAPES];

static ns_hines_method method = NS_HINES_TREE;

static ns_sim_t *make(ns_backend backend) {
    return ck_make_sim(backend, backend == NS_BACKEND_CUDA ? method : NS_HINES_AUTO, SHAPES, cells, CELLS, EVERY,
                       6.3);
}

static void run_loop(void);

int main(void) {
    int devices = 0;
    if (ns_cuda_device_count(&devices) != NS_OK || devices == 0) {
        printf("SKIPPED: no GPU\n");
        return 77;
    }
    if (tmpdir_make("ns_checkpoint_cuda") != 0) return 1;
    if (ck_read_cells(SHAPES, cells) != 0) return check_summary("test_cable_checkpoint_cuda");
    const ns_hines_method methods[2] = {NS_HINES_ONCHIP, NS_HINES_TREE};
    for (int q = 0; q < 2; ++q) {
        method = methods[q];
        printf("GPU loop %s:\n", ns_hines_method_name(method));
        run_loop();
    }
    /* onchip -> tree: a checkpoint is independent of the loop's layout */
    method = NS_HINES_ONCHIP;
    ns_sim_t *oc = make(NS_BACKEND_CUDA);
    method = NS_HINES_TREE;
    ns_sim_t *tr = make(NS_BACKEND_CUDA), *tref = make(NS_BACKEND_CUDA);
    if (oc && tr && tref) {
        CHECK(ns_sim_method(oc) == NS_HINES_ONCHIP && ns_sim_method(tr) == NS_HINES_TREE);
        CHECK_OK(ns_sim_advance(oc, SAVE));
        CHECK_OK(ns_sim_save_state(oc, tmp("onchip.ckpt")));
        CHECK_OK(ns_sim_restore_state(tr, tmp("onchip.ckpt")));
        CHECK_OK(ns_sim_advance(tr, STEPS - SAVE));
        CHECK_OK(ns_sim_advance(tref, STEPS));
        int bitwise = 0;
        const double d = ck_compare(tref, tr, SHAPES, cells, &bitwise);
        printf("onchip checkpoint resumed in the tree loop: %.3g\n", d);
        CHECK_MSG(d >= 0.0 && d <= 1e-6, "onchip -> tree differs from the tree run by %g", d);
        /* the restore wrote back the parameters' and ions' values unchanged: the tree loop stays fused */
        CHECK(ns_sim_gpu_mechanisms_of(tr) == NS_SIM_GPU_MECHANISMS_FUSED);
    }
    ns_sim_destroy(oc);
    ns_sim_destroy(tr);
    ns_sim_destroy(tref);
    for (int k = 0; k < SHAPES; ++k) ns_cell_destroy(cells[k]);
    tmpdir_remove();
    return check_summary("test_cable_checkpoint_cuda");
}

static void run_loop(void) {
    ns_sim_t *gref = make(NS_BACKEND_CUDA), *cref = make(NS_BACKEND_CPU), *grun = make(NS_BACKEND_CUDA),
             *crun = make(NS_BACKEND_CPU);
    if (!gref || !cref || !grun || !crun) goto out;
    CHECK(ns_sim_backend(gref) == NS_BACKEND_CUDA);
    CHECK(ns_sim_method(gref) == method);
    CHECK_OK(ns_sim_advance(gref, STEPS));
    CHECK_OK(ns_sim_advance(cref, STEPS));
    CHECK_OK(ns_sim_advance(grun, SAVE));
    CHECK_OK(ns_sim_save_state(grun, tmp("gpu.ckpt")));
    CHECK_OK(ns_sim_advance(crun, SAVE));
    CHECK_OK(ns_sim_save_state(crun, tmp("cpu.ckpt")));
    char gpu_file[512], cpu_file[512];
    snprintf(gpu_file, sizeof gpu_file, "%s", tmp("gpu.ckpt"));
    snprintf(cpu_file, sizeof cpu_file, "%s", tmp("cpu.ckpt"));
    int bitwise = 0;
    const double gpu_cpu = ck_compare(gref, cref, SHAPES, cells, &bitwise);
    printf("uninterrupted GPU vs CPU: %.3g\n", gpu_cpu);
    /* GPU -> GPU */
    ns_sim_t *g2 = make(NS_BACKEND_CUDA);
    if (g2) {
        CHECK_OK(ns_sim_restore_state(g2, gpu_file));
        CHECK_OK(ns_sim_advance(g2, STEPS - SAVE));
        const double d = ck_compare(gref, g2, SHAPES, cells, &bitwise);
        printf("GPU resumed on the GPU vs uninterrupted GPU: %.3g (%s)\n", d, bitwise ? "bit for bit" : "not bitwise");
        CHECK_MSG(d >= 0.0 && d <= 1e-9, "GPU -> GPU differs by %g", d);
        ns_sim_destroy(g2);
    }
    /* GPU -> CPU and CPU -> GPU, against the uninterrupted run of the
     * backend that ran the second part (each part's rounding is its loop's) */
    ns_sim_t *c2 = make(NS_BACKEND_CPU), *g3 = make(NS_BACKEND_CUDA);
    if (c2 && g3) {
        CHECK_OK(ns_sim_restore_state(c2, gpu_file));
        CHECK_OK(ns_sim_advance(c2, STEPS - SAVE));
        CHECK_OK(ns_sim_restore_state(g3, cpu_file));
        CHECK_OK(ns_sim_advance(g3, STEPS - SAVE));
        const double d1 = ck_compare(cref, c2, SHAPES, cells, &bitwise);
        const double d2 = ck_compare(gref, g3, SHAPES, cells, &bitwise);
        printf("GPU checkpoint resumed on the CPU: %.3g; CPU checkpoint resumed on the GPU: %.3g\n", d1, d2);
        CHECK_MSG(d1 >= 0.0 && d1 <= 1e-6, "GPU -> CPU differs from the CPU run by %g", d1);
        CHECK_MSG(d2 >= 0.0 && d2 <= 1e-6, "CPU -> GPU differs from the GPU run by %g", d2);
    }
    ns_sim_destroy(c2);
    ns_sim_destroy(g3);
    /* set_state reaches the device: a cell set to another cell's state (same
     * shape) then runs as that cell did, the stimuli apart (none after 60 ms) */
    ns_sim_t *g4 = make(NS_BACKEND_CUDA);
    if (g4) {
        const int32_t n = ns_tree_size(ns_cell_tree(cells[0]));
        double *s = malloc((size_t)n * 4 * sizeof *s), *u = malloc((size_t)n * 4 * sizeof *u);
        CHECK_OK(ns_sim_advance(g4, 2400 + 3)); /* t > 60 ms: every clamp is off */
        if (s && u) {
            CHECK_OK(hh_state(g4, 3, n, s));
            CHECK_OK(hh_set_state(g4, 0, n, s));
            CHECK_OK(ns_sim_advance(g4, 50));
            CHECK_OK(hh_state(g4, 3, n, s));
            CHECK_OK(hh_state(g4, 0, n, u));
            double worst = 0.0;
            for (int32_t i = 0; i < 4 * n; ++i) worst = fmax(worst, fabs(s[i] - u[i]));
            CHECK_MSG(worst == 0.0, "cell 0 set to cell 3's state differs from it by %g after 50 steps", worst);
            /* a parameter written: its own value again is taken by both loops; a new one is refused
             * onchip (the kernel reads copies made at create) and makes the tree loop run the
             * model per step from then on, with the new value */
            CHECK_OK(ns_sim_get_model_var(g4, 0, "gnabar_hh", s));
            CHECK_OK(ns_sim_set_model_var(g4, 0, "gnabar_hh", s));
            for (int32_t i = 0; i < n; ++i) s[i] *= 1.5; /* NaN where hh is not inserted: ignored */
            if (method == NS_HINES_ONCHIP) {
                CHECK_FAILS(ns_sim_set_model_var(g4, 0, "gnabar_hh", s), NS_ERR_UNSUPPORTED, "onchip", "'tree'");
            } else {
                CHECK_OK(ns_sim_set_model_var(g4, 0, "gnabar_hh", s));
                CHECK_OK(ns_sim_advance(g4, 10));
                CHECK(ns_sim_gpu_mechanisms_of(g4) == NS_SIM_GPU_MECHANISMS_PER_STEP);
                CHECK_OK(ns_sim_get_model_var(g4, 0, "gnabar_hh", u));
                int same = 1;
                for (int32_t i = 0; i < n; ++i) same &= isnan(s[i]) ? isnan(u[i]) : s[i] == u[i];
                CHECK_MSG(same, "a written gnabar_hh is not read back");
            }
        }
        free(s);
        free(u);
        ns_sim_destroy(g4);
    }
out:
    ns_sim_destroy(gref);
    ns_sim_destroy(cref);
    ns_sim_destroy(grun);
    ns_sim_destroy(crun);
}
