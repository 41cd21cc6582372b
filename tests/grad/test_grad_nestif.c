/* Gradients through nested IF/ELSE on v, which the derivative code writes as
 * selects (both branches computed for every instance, the taken one's duals
 * kept: docs/gradients.md, "Cost of the vectorised products"), against the
 * fourth-order central differences of the simulation's own loop. The channel
 * (tests/data/grad/nestif.mod) is a gated leak whose steady state is a C1
 * spline in v of four pieces under two levels of IF, with the RANGE
 * parameter vh and the GLOBALs amin and amax in the conditions and the
 * pieces; it is built with the system C compiler at test time. The test
 * asserts that the run visits every piece (the soma below the lowest joint
 * and above the highest) and that the generated C has the selects. */
#include "check.h"
#include "load_cell.h"
#include "test_tmpdir.h"
#include "neurosolve/nmodl.h"
#include "mech_build.h"
#include "grad_check.h"

#define NESTIF NS_TEST_DATA "/grad/nestif.mod"
#define STEPS 200

static const char *MODEL = "all.insert = hh pas nestif\n"
                           "global.usetable_hh = 0\n"
                           "all.g_pas = 5e-5\nall.e_pas = -75\n"
                           "soma.gnabar_hh = 0.25\ndend.gnabar_hh = 0.06\n"
                           "soma.g_nestif = 0.004\ndend.vh_nestif = -35\n";

/* the derivative code of nestif.mod has its nested IFs as selects: the path this test checks */
static void check_selects(void) {
    ns_nmodl_t *m = NULL;
    char *c_text = NULL;
    CHECK_OK(ns_nmodl_parse_file(NESTIF, &m));
    if (m) CHECK_OK(ns_nmodl_emit(m, NS_NMODL_C, &c_text));
    int sel = 0;
    for (const char *s = c_text; s && (s = strstr(s, "_sel(c1_")) != NULL; ++s) ++sel; /* the inner IF's */
    CHECK_MSG(sel >= 1, "the nested IF of nestif.mod is written as selects (%d found)", sel);
    CHECK_MSG(c_text && strstr(c_text, "c1_ = c0_ &") != NULL, "the inner IF's condition is taken under the outer's");
    ns_nmodl_free(c_text);
    ns_nmodl_destroy(m);
}

int main(void) {
    if (tmpdir_make("ns_grad_nestif")) return 1;
    check_selects();
    int skip = 0;
    ns_mech_library_t *lib = test_mech_from_files(NESTIF, "libnestif.so", &skip);
    if (skip) return tmpdir_remove(), 77;
    if (!lib) return tmpdir_remove(), check_summary("test_grad_nestif");
    setup su;
    if (setup_init(&su, "ca1_ko20x-07.swc", 100.0, 0.0, MODEL, lib, STEPS) < 0)
        return check_summary("test_grad_nestif");
    su.amp = 2.0;
    const variant base = {NULL, 100.0, 1.0, 1.0, -78.0};
    /* the differences' relative steps: e moves the spikes most (at 1e-3, 0.08 mV, the
     * differences' truncation was 4e-5 relative; at 1e-4 they agree to 1e-9) */
    static const fd_case cases[] = {{"soma", "g_nestif", 1e-3, NULL},   {"soma", "vh_nestif", 1e-3, NULL},
                                    {"dend", "vh_nestif", 1e-3, NULL},   {"all", "e_nestif", 1e-4, NULL},
                                    {"all", "amin_nestif", 1e-3, "global"}, {"all", "amax_nestif", 1e-3, "global"},
                                    {"all", "tau_nestif", 1e-3, "global"}};
    enum { N = sizeof cases / sizeof *cases };
    ns_sim_model_t *m = NULL;
    ns_sim_t *sim = NULL;
    ns_grad_t *g = NULL;
    double grad[N], L = 0.0, vmin = 0.0;
    const double vmax = grad_fd_cases(&su, &base, cases, N, 1e-6, grad, &L, &g, &sim, &m, &vmin);
    /* the soma's vh is -40: the joints at -70, -40 and -10 mV */
    CHECK_MSG(vmin < -70.0 && vmax > -10.0, "the soma visits all four pieces (v from %.3g to %.3g mV)", vmin, vmax);
    grad_fd_free(&su, g, sim, m);
    ns_mech_library_close(lib);
    tmpdir_remove();
    return check_summary("test_grad_nestif");
}
