/* Gradients of a multi-channel model against central differences of the
 * simulation's own loop: the bundled BBP/Hay sodium channel
 * (data/mechanisms/bbp/NaTs2_t.mod, ena read) and a channel of the test's
 * own with GLOBAL parameters, built with the system C compiler (the build is
 * most of the test's time: three channels only). The ions' state (a
 * concentration writer, CaDynamics_E2): test_grad_ion.c. */
#include "check.h"
#include "load_cell.h"
#include "test_tmpdir.h"
#include "neurosolve/nmodl.h"
#include "mech_build.h"
#include "grad_check.h"

#define MECH_DIR NS_TEST_DATA "/../../data/mechanisms"
#define STEPS 80

/* Hay et al. 2011's somatic sodium channel (their value) */
static const char *HAY = "soma.insert = NaTs2_t pas glk gdi\n"
                         "dend.insert = pas\n"
                         "all.ena = 50\n"
                         "all.g_pas = 3e-5\nall.e_pas = -90\n"
                         "soma.gNaTs2_tbar_NaTs2_t = 0.983955\n";

static const char *GLK = "NEURON {\n SUFFIX glk\n NONSPECIFIC_CURRENT i\n RANGE g\n GLOBAL tau, e\n}\n"
                         "PARAMETER {\n g = 0.0005 (S/cm2)\n tau = 3 (ms)\n e = -70 (mV)\n}\n"
                         "ASSIGNED {\n v (mV)\n i (mA/cm2)\n}\nSTATE { a }\nINITIAL { a = 0.5 }\n"
                         "BREAKPOINT {\n SOLVE states METHOD cnexp\n i = g * a * (v - e)\n}\n"
                         "DERIVATIVE states { a' = (1 / (1 + exp(-(v + 50) / 5)) - a) / tau }\n";

/* two coupled nonlinear states by METHOD derivimplicit (the implicit function theorem at its
 * Newton solution) */
static const char *GDI = "NEURON {\n SUFFIX gdi\n NONSPECIFIC_CURRENT i\n RANGE g\n GLOBAL k\n}\n"
                         "PARAMETER {\n g = 0.0004 (S/cm2)\n k = 0.3 (/ms)\n}\n"
                         "ASSIGNED {\n v (mV)\n i (mA/cm2)\n}\nSTATE { a b }\nINITIAL {\n a = 0.3\n b = 0.2\n}\n"
                         "BREAKPOINT {\n SOLVE states METHOD derivimplicit\n i = g * a * b * (v + 80)\n}\n"
                         "DERIVATIVE states {\n a' = k * (1 / (1 + exp(-(v + 45) / 6)) - a) - 0.5 * a * a * b\n"
                         " b' = (a - b) / (1 + exp((v + 60) / 20))\n}\n";

static int write_mod(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return -1;
    fputs(text, f);
    fclose(f);
    return 0;
}

int main(void) {
    if (tmpdir_make("ns_grad_bbp")) return 1;
    int skip = 0;
    /* a leak gated by a slow state, its time constant and reversal GLOBALs */
    char glk_path[1024], gdi_path[1024];
    snprintf(glk_path, sizeof glk_path, "%s", tmp("glk.mod"));
    snprintf(gdi_path, sizeof gdi_path, "%s", tmp("gdi.mod"));
    if (write_mod(glk_path, GLK) || write_mod(gdi_path, GDI)) return tmpdir_remove(), check_summary("test_grad_bbp");
    char files[4096];
    snprintf(files, sizeof files, MECH_DIR "/bbp/NaTs2_t.mod %s %s", glk_path, gdi_path);
    ns_mech_library_t *lib = test_mech_from_files(files, "libbbp.so", &skip);
    if (skip) return tmpdir_remove(), 77;
    if (!lib) return tmpdir_remove(), check_summary("test_grad_bbp");
    setup su;
    if (setup_init(&su, "ca1_ko20x-07.swc", 100.0, 0.0, HAY, lib, STEPS) < 0) return check_summary("test_grad_bbp");
    su.amp = 3.0;
    const variant base = {NULL, 100.0, 1.0, 1.0, -75.0};
    static const struct {
        const char *where, *name;
        double rel_h; /* the central differences' relative step: cm moves the spikes most */
        int global;   /* a GLOBAL: the model file's global.NAME */
    } cases[] = {{"soma", "gNaTs2_tbar_NaTs2_t", 1e-3, 0}, {"all", "cm", 1e-4, 0},
                 {"soma", "g_glk", 2.5e-4, 0},             {"all", "tau_glk", 1e-3, 1},
                 {"all", "e_glk", 1e-3, 1},                {"soma", "g_gdi", 1e-3, 0},
                 {"all", "k_gdi", 1e-3, 1}};
    const int n_cases = (int)(sizeof cases / sizeof *cases);
    ns_sim_model_t *m = NULL;
    ns_sim_t *sim = make_sim(&su, su.cell, 1, &base, &m);
    add_io(sim, &su, 1);
    ns_grad_t *g = NULL;
    CHECK_OK(ns_grad_create(sim, NULL, &g));
    for (int k = 0; g && k < n_cases; ++k) CHECK_OK(ns_grad_add_param(g, 0, cases[k].where, cases[k].name, NULL));
    double grad[7], L = 0.0;
    double *tr = calloc((size_t)su.samples * 3, sizeof *tr);
    ns_grad_loss loss = {su.target, su.weight, NULL};
    CHECK_OK(ns_grad_run(g, STEPS, &loss, &L, grad, tr));
    double vmax = -1e9;
    for (int64_t q = 0; q < su.samples; ++q) vmax = fmax(vmax, tr[3 * q]);
    CHECK_MSG(vmax > 0.0, "the soma spikes in the run (max v %.3g mV)", vmax);
    CHECK_MSG(check_rel(L, sim_loss(&su, su.cell, &base)) <= 1e-12, "loss vs the simulation's");
    for (int k = 0; g && k < n_cases; ++k) {
        double value = 0.0;
        CHECK_OK(ns_grad_get_param(g, k, &value));
        const double fd = central_difference(&su, &base, cases[k].global ? "global" : cases[k].where, cases[k].name, value, cases[k].rel_h * fabs(value));
        const double err = check_rel(grad[k], fd);
        /* the differences' own error (rounding over 2h, truncation) is most of this: the
         * adjoint is exact to rounding (test_grad_jac.c) */
        printf("  %-5s %-20s adjoint % .12e  central differences % .12e  relative %.2e\n", cases[k].where,
               cases[k].name, grad[k], fd, err);
        CHECK_MSG(err <= 1e-7, "%s at %s: adjoint %.12g vs central differences %.12g (relative %.3g)", cases[k].name,
                  cases[k].where, grad[k], fd, err);
    }
    ns_grad_destroy(g);
    ns_sim_destroy(sim);
    ns_sim_model_destroy(m);
    free(tr);
    setup_free(&su);
    ns_mech_library_close(lib);
    tmpdir_remove();
    return check_summary("test_grad_bbp");
}
