/* The gradient of Hay et al. 2011's L5 pyramidal cell (data/models/l5pc_hay.model
 * on its real morphology, data/morphologies/l5pc_bbp_axon.swc: ten BBP channels,
 * calcium dynamics with eca by Nernst, SK_E2 reading cai) with respect to a
 * handful of its conductances and its calcium parameters, against fourth-order
 * central differences of the simulation's own CPU loop (the parameters are
 * uniform over the region named, so that the model text's change is the
 * gradient's parameter). A short run: 200 steps of 0.025 ms with a somatic
 * clamp. Labelled large (tests/grad/grad_ion.cmake). */
#include "check.h"
#include "load_cell.h"
#include "test_tmpdir.h"
#include "neurosolve/nmodl.h"
#include "mech_build.h"
#include "grad_check.h"

#define MECH_DIR NS_TEST_DATA "/../../data/mechanisms"
#define MODEL NS_TEST_DATA "/../../data/models/l5pc_hay.model"
#define STEPS 200

int main(void) {
    if (tmpdir_make("ns_grad_hay")) return 1;
    int skip = 0;
    ns_mech_library_t *lib = test_mech_shared("NS_TEST_LIBBBP", MECH_DIR "/bbp", "libbbp.so", &skip);
    if (skip) return tmpdir_remove(), 77;
    if (!lib) return tmpdir_remove(), check_summary("test_grad_hay");
    static char text[16384];
    FILE *f = fopen(MODEL, "r");
    CHECK(f != NULL);
    if (!f) return check_summary("test_grad_hay");
    const size_t nt = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[nt] = 0;
    CHECK(nt > 0 && nt < sizeof text - 1);
    setup su;
    if (setup_init(&su, "l5pc_bbp_axon.swc", 100.0, 0.0, text, lib, STEPS) < 0) return check_summary("test_grad_hay");
    su.amp = 2.0;
    const variant base = {NULL, 100.0, 1.0, 1.0, -80.0};
    static const fd_case cases[] = {{"soma", "gCa_HVAbar_Ca_HVA", 1e-3, NULL},    {"soma", "gSK_E2bar_SK_E2", 1e-3, NULL},
                                    {"soma", "gamma_CaDynamics_E2", 1e-3, NULL},  {"soma", "gCa_LVAstbar_Ca_LVAst", 1e-3, NULL},
                                    {"soma", "gNaTa_tbar_NaTa_t", 1e-3, NULL},    {"axon", "gNaTa_tbar_NaTa_t", 1e-3, NULL},
                                    {"soma", "gSKv3_1bar_SKv3_1", 1e-3, NULL}};
    enum { N_CASES = (int)(sizeof cases / sizeof *cases) };
    ns_sim_model_t *m = NULL;
    ns_sim_t *sim = NULL;
    ns_grad_t *g = NULL;
    double grad[N_CASES], L = 0.0;
    printf("  the soma's highest v: %.3f mV\n",
           grad_fd_cases(&su, &base, cases, N_CASES, 1e-6, grad, &L, &g, &sim, &m, NULL));
    grad_fd_free(&su, g, sim, m);
    ns_mech_library_close(lib);
    tmpdir_remove();
    return check_summary("test_grad_hay");
}
