/* The gradient's GPU sweep (docs/gradients.md, "On the GPU") against the CPU
 * sweep (itself checked against finite differences: test_grad.c,
 * test_grad_bbp.c): a batch of cells of a real morphology (ca1_ko20x-07),
 * each with its own parameters' values, with hh and pas, and with BBP's
 * channels (NaTa_t, SKv3_1, Im, Ih from data/mechanisms/bbp, built with
 * nvcc); the loss, the traces and every parameter's derivative of every
 * cell within 1e-9 relative; the sweep with checkpoints (the segments
 * recomputed on the device) the same bits as with the whole tape, and two
 * runs the same bits. Skips without a GPU. */
#include "check.h"
#include "test_tmpdir.h"
#include "neurosolve/nmodl.h"
#include "neurosolve/device.h"
#include "neurosolve/grad.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifdef NS_NVCC
#include "load_cell.h"

#define MECH_DIR NS_TEST_DATA "/../../data/mechanisms"
#define CELLS 6
#define STEPS 240
#define SITES 3

static const char *HH = "all.insert = hh pas\nglobal.usetable_hh = 0\nall.g_pas = 1e-4\nall.e_pas = -68\n"
                        "dend.gnabar_hh = 0.03\ndend.gkbar_hh = 0.01\nsoma.gnabar_hh = 0.2\n";
static const char *BBP = "all.insert = pas Ih\nsoma.insert = NaTa_t SKv3_1 Im\nall.ena = 50\nall.ek = -85\n"
                         "all.g_pas = 3e-5\nall.e_pas = -75\nall.gIhbar_Ih = 8e-5\n"
                         "soma.gNaTa_tbar_NaTa_t = 2.04\nsoma.gSKv3_1bar_SKv3_1 = 0.69\nsoma.gImbar_Im = 0.0005\n";

typedef struct pdef {
    const char *where, *name;
} pdef;
static const pdef HH_P[] = {{"soma", "gnabar_hh"}, {"dend", "gkbar_hh"}, {"all", "gl_hh"}, {"all", "g_pas"},
                            {"all", "cm"},         {"all", "Ra"},        {"all", "v_init"}};
static const pdef BBP_P[] = {{"soma", "gNaTa_tbar_NaTa_t"}, {"soma", "gSKv3_1bar_SKv3_1"}, {"soma", "gImbar_Im"},
                             {"all", "gIhbar_Ih"},          {"all", "g_pas"},              {"soma", "cm"}};

typedef struct result {
    double L, grad[8], traces[(STEPS + 1) * SITES * CELLS];
    ns_backend backend;
} result;

/* The batch's loss, gradient (parameter q of cell c at grad[q], each cell's parameters in turn) and
 * traces on `be` (the simulation's and the gradient's), checkpoints every `every` steps (0: the
 * default) */
static int run(const ns_cell_t *cell, const char *text, const ns_mech_library_t *lib, const pdef *pd, int np,
               ns_backend be, int64_t every, result *out, double *grad) {
    ns_sim_model_t *m = NULL;
    CHECK_OK(ns_sim_model_create(lib, &m));
    CHECK_OK(ns_sim_model_parse(m, text, strlen(text), "grad-cuda"));
    ns_sim_params p;
    ns_sim_params_init(&p);
    p.dt = 0.025;
    p.v_init = -65.0;
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = be;
    o.model = m;
    ns_sim_t *sim = NULL;
    CHECK_OK(ns_sim_create(1, &cell, CELLS, NULL, &p, &o, &sim));
    if (!sim) return -1;
    ns_cell_info info;
    ns_cell_get_info(cell, &info);
    const int32_t rec[SITES] = {0, info.compartments / 2, info.compartments - 1};
    for (int64_t c = 0; c < CELLS; ++c) {
        CHECK_OK(ns_sim_add_iclamp(sim, c, 0, 0.5, 3.0, 0.6 + 0.15 * (double)c));
        for (int k = 0; k < SITES; ++k) CHECK_OK(ns_sim_add_recording(sim, c, rec[k], NULL));
    }
    ns_grad_options go;
    ns_grad_options_init(&go);
    go.checkpoint_every = every;
    ns_grad_t *g = NULL;
    CHECK_OK(ns_grad_create(sim, &go, &g));
    out->backend = ns_grad_backend(g);
    for (int64_t c = 0; g && c < CELLS; ++c)
        for (int q = 0; q < np; ++q) {
            int32_t k = -1;
            double v = 0.0;
            CHECK_OK(ns_grad_add_param(g, c, pd[q].where, pd[q].name, &k));
            CHECK_OK(ns_grad_get_param(g, k, &v));
            CHECK_OK(ns_grad_set_param(g, k, v * (1.0 + 0.04 * (double)c * (q % 2 ? -1.0 : 1.0))));
        }
    const int64_t n = (STEPS + 1) * SITES * CELLS;
    double *target = malloc((size_t)n * sizeof *target);
    for (int64_t q = 0; target && q < n; ++q) target[q] = -60.0 + 8.0 * sin(0.05 * (double)q);
    ns_grad_loss loss = {target, NULL, NULL};
    if (g && target) CHECK_OK(ns_grad_run(g, STEPS, &loss, &out->L, grad, out->traces));
    free(target);
    ns_grad_destroy(g);
    ns_sim_destroy(sim);
    ns_sim_model_destroy(m);
    return 0;
}

static void compare(const char *what, const ns_cell_t *cell, const char *text, const ns_mech_library_t *lib,
                    const pdef *pd, int np) {
    static result cpu, gpu, gck, gpu2;
    const int n = np * CELLS;
    double gc[64], gg[64], gk[64], g2[64];
    run(cell, text, lib, pd, np, NS_BACKEND_CPU, 0, &cpu, gc);
    run(cell, text, lib, pd, np, NS_BACKEND_CUDA, 0, &gpu, gg);
    run(cell, text, lib, pd, np, NS_BACKEND_CUDA, 17, &gck, gk);
    run(cell, text, lib, pd, np, NS_BACKEND_CUDA, 0, &gpu2, g2);
    CHECK(cpu.backend == NS_BACKEND_CPU && gpu.backend == NS_BACKEND_CUDA); /* auto: the simulation's */
    double worst = 0.0, tw = 0.0;
    for (int q = 0; q < n; ++q) {
        double scale = 0.0; /* the parameter's largest derivative over the cells */
        for (int c = 0; c < CELLS; ++c) scale = fmax(scale, fabs(gc[c * np + q % np]));
        const double e = fabs(gg[q] - gc[q]) / fmax(scale, 1e-300);
        worst = fmax(worst, e);
        CHECK_MSG(e <= 1e-9, "%s: cell %d %s: GPU %.17g, CPU %.17g (%.3g)", what, q / np, pd[q % np].name, gg[q], gc[q],
                  e);
        CHECK_MSG(gk[q] == gg[q], "%s: cell %d %s: with checkpoints %.17g, the whole tape %.17g", what, q / np,
                  pd[q % np].name, gk[q], gg[q]);
        CHECK_MSG(g2[q] == gg[q], "%s: cell %d %s: two runs %.17g, %.17g", what, q / np, pd[q % np].name, g2[q], gg[q]);
    }
    for (int q = 0; q < (STEPS + 1) * SITES * CELLS; ++q) tw = fmax(tw, fabs(gpu.traces[q] - cpu.traces[q]));
    CHECK_MSG(tw <= 1e-7, "%s: traces differ by %.3g mV", what, tw);
    CHECK_MSG(check_rel(gpu.L, cpu.L) <= 1e-9, "%s: loss GPU %.17g, CPU %.17g", what, gpu.L, cpu.L);
    printf("%s, %d cells: gradients within %.3g relative of the CPU's, traces within %.3g mV\n", what, CELLS, worst,
           tw);
}

/* A copy of data/mechanisms/bbp's NAME.mod into the test's folder */
static int copy_mod(const char *dir, const char *name) {
    char src[1024], dst[2200];
    snprintf(src, sizeof src, MECH_DIR "/bbp/%s.mod", name);
    snprintf(dst, sizeof dst, "%s/%s.mod", dir, name);
    FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
    CHECK_MSG(in && out, "copy %s", name);
    char buf[8192];
    size_t k;
    while (in && out && (k = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, k, out);
    if (in) fclose(in);
    if (out) fclose(out);
    return in && out ? 0 : -1;
}

int main(void) {
    int devices = 0;
    if (ns_cuda_device_count(&devices) != NS_OK || devices == 0) CHECK_SKIP("no GPU");
    ns_cell_t *cell = test_load_cell("ca1_ko20x-07.swc", 100.0);
    CHECK(cell != NULL);
    if (!cell) return check_summary("test_grad_cuda");
    compare("hh and pas", cell, HH, NULL, HH_P, (int)(sizeof HH_P / sizeof *HH_P));
    if (tmpdir_make("ns_grad_cuda")) return 77;
    const char *dir = tmp("mods");
    char mods[1024];
    snprintf(mods, sizeof mods, "%s", dir);
    CHECK(mkdir(mods, 0755) == 0);
    const char *names[] = {"NaTa_t", "SKv3_1", "Im", "Ih"};
    for (int k = 0; k < 4; ++k) copy_mod(mods, names[k]);
    ns_mechanisms_build_options o = {0};
    o.nvcc = NS_NVCC;
    o.cuda_arch = NS_CUDA_ARCH;
    char lib_path[1024];
    snprintf(lib_path, sizeof lib_path, "%s", tmp("libbbp_cuda.so"));
    CHECK_OK(ns_mechanisms_build(mods, lib_path, &o));
    ns_mech_library_t *lib = NULL;
    CHECK_OK(ns_mech_library_open(lib_path, &lib));
    if (lib) compare("BBP's NaTa_t, SKv3_1, Im, Ih and pas", cell, BBP, lib, BBP_P, (int)(sizeof BBP_P / sizeof *BBP_P));
    ns_mech_library_close(lib);
    ns_cell_destroy(cell);
    tmpdir_remove();
    return check_summary("test_grad_cuda");
}
#else
int main(void) { CHECK_SKIP("a build without CUDA (no nvcc)"); }
#endif
