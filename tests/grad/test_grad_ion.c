/* Gradients through the ions' state (docs/gradients.md, "Ions"): a cell
 * whose soma has Hay et al. 2011's calcium system (data/mechanisms/bbp:
 * CaDynamics_E2 writes cai from ica, Ca_HVA and Ca_LVAst write ica and read
 * eca, which Nernst takes from cai, SK_E2 reads cai) with a sodium and a
 * potassium channel, so that it spikes and its calcium rises. The reference
 * is the fourth-order central difference of the simulation's own CPU loop
 * (ns_sim with the parameter changed in the model text): an independent
 * path. Also: the forward pass is the simulation's (its loss), checkpoints
 * and threads give the same bits, and a mechanism that writes a reversal
 * potential is still refused by name. */
#include "check.h"
#include "load_cell.h"
#include "test_tmpdir.h"
#include "neurosolve/nmodl.h"
#include "mech_build.h"
#include "grad_check.h"
#include "grad/grad_ion.h"
#include "sim/sim_impl.h"

#define MECH_DIR NS_TEST_DATA "/../../data/mechanisms"
#define STEPS 240

static const char *CELL = "soma.insert = NaTs2_t SKv3_1 Ca_HVA Ca_LVAst SK_E2 CaDynamics_E2\n"
                          "all.insert = pas\n"
                          "all.g_pas = 3e-5\nall.e_pas = -75\n"
                          "soma.ena = 50\nsoma.ek = -85\n"
                          "soma.gNaTs2_tbar_NaTs2_t = 0.983955\n"
                          "soma.gSKv3_1bar_SKv3_1 = 0.693\n"
                          "soma.gCa_HVAbar_Ca_HVA = 0.004\n"
                          "soma.gCa_LVAstbar_Ca_LVAst = 0.006\n"
                          "soma.gSK_E2bar_SK_E2 = 0.05\n"
                          "soma.gamma_CaDynamics_E2 = 0.05\n"
                          "soma.decay_CaDynamics_E2 = 40\n";

/* WRITE eca: still refused */
static const char *EWR = "NEURON {\n SUFFIX ewr\n USEION ca WRITE eca\n}\nASSIGNED { eca (mV) }\n"
                         "BREAKPOINT { eca = 120 }\n";

/* The constant-ion rule (gion_constant) on a simulation's model: whether mechanism `name`'s
 * ion values are constants of the run (its products then have no lanes for them) */
static void check_constant(const ns_sim_t *sim, const char *name, int want) {
    const sim_model *sm = sim ? sim->model : NULL;
    int found = 0;
    for (int32_t k = 0; sm && k < sm->n_mechs; ++k)
        if (!strcmp(sm->mechs[k].desc->name, name)) {
            found = 1;
            CHECK_MSG(gion_constant(sm, k) == want, "%s: its ion values are %sconstants", name, want ? "" : "not ");
        }
    CHECK_MSG(found, "%s is in the model", name);
}

int main(void) {
    if (tmpdir_make("ns_grad_ion")) return 1;
    int skip = 0;
    ns_mech_library_t *lib = test_mech_shared("NS_TEST_LIBBBP", MECH_DIR "/bbp", "libbbp.so", &skip);
    if (skip) return tmpdir_remove(), 77;
    if (!lib) return tmpdir_remove(), check_summary("test_grad_ion");
    setup su;
    if (setup_init(&su, "ca1_ko20x-07.swc", 100.0, 0.0, CELL, lib, STEPS) < 0) return check_summary("test_grad_ion");
    su.amp = 3.0;
    const variant base = {NULL, 100.0, 1.0, 1.0, -70.0};
    static const fd_case cases[] = {{"soma", "gamma_CaDynamics_E2", 1e-3, NULL},    {"soma", "decay_CaDynamics_E2", 1e-2, NULL},
                                    {"soma", "gCa_HVAbar_Ca_HVA", 1e-3, NULL},      {"soma", "gSK_E2bar_SK_E2", 1e-3, NULL},
                                    {"soma", "initCai_CaDynamics_E2", 1e-2, NULL},  {"soma", "gCa_LVAstbar_Ca_LVAst", 1e-3, NULL},
                                    {"soma", "minCai_CaDynamics_E2", 1e-2, NULL}};
    enum { N_CASES = (int)(sizeof cases / sizeof *cases) };
    ns_sim_model_t *m = NULL;
    ns_sim_t *sim = NULL;
    ns_grad_t *g = NULL;
    double grad[N_CASES], L = 0.0;
    const double vmax = grad_fd_cases(&su, &base, cases, N_CASES, 1e-6, grad, &L, &g, &sim, &m, NULL);
    CHECK_MSG(vmax > 0.0, "the soma spikes in the run (max v %.3g mV)", vmax);
    /* checkpoints every 7 steps (the ions recomputed from them): the same bits */
    ns_grad_options o;
    ns_grad_options_init(&o);
    o.checkpoint_every = 7;
    ns_grad_t *g7 = NULL;
    CHECK_OK(ns_grad_create(sim, &o, &g7));
    for (int k = 0; g7 && k < N_CASES; ++k) CHECK_OK(ns_grad_add_param(g7, 0, cases[k].where, cases[k].name, NULL));
    double grad7[N_CASES], L7 = 0.0;
    ns_grad_loss loss = {su.target, su.weight, NULL};
    CHECK_OK(ns_grad_run(g7, STEPS, &loss, &L7, grad7, NULL));
    CHECK_MSG(L7 == L && !memcmp(grad7, grad, sizeof grad), "checkpoints every 7 steps: the same bits");
    ns_grad_destroy(g7);
    ns_grad_destroy(g);
    ns_sim_destroy(sim);
    ns_sim_model_destroy(m);
    /* two cells (their own clamps) on one and two threads, a dL/dy loss: the same bits */
    sim = make_sim(&su, su.cell, 2, &base, &m);
    add_io(sim, &su, 2);
    const size_t n_y = (size_t)su.samples * 6;
    double *dldy = malloc(n_y * sizeof *dldy), gt[2][2 * N_CASES], Lt[2] = {0.0, 0.0};
    for (size_t q = 0; q < n_y; ++q) dldy[q] = cos(0.01 * (double)q);
    ns_grad_loss dl = {NULL, NULL, dldy};
    for (int th = 1; th <= 2; ++th) {
        o.checkpoint_every = 0;
        o.threads = th;
        ns_grad_t *gb = NULL;
        CHECK_OK(ns_grad_create(sim, &o, &gb));
        for (int c = 0; gb && c < 2; ++c)
            for (int k = 0; k < N_CASES; ++k) CHECK_OK(ns_grad_add_param(gb, c, cases[k].where, cases[k].name, NULL));
        memset(gt[th - 1], 0, sizeof gt[th - 1]);
        CHECK_OK(ns_grad_run(gb, STEPS, &dl, &Lt[th - 1], gt[th - 1], NULL));
        ns_grad_destroy(gb);
    }
    CHECK_MSG(Lt[0] == Lt[1] && !memcmp(gt[0], gt[1], sizeof gt[0]), "two cells on 1 and 2 threads: the same bits");
    CHECK_MSG(gt[0][0] != 0.0 && gt[0][N_CASES] != gt[0][0], "the cells' gradients are their own");
    /* CaDynamics_E2 writes cai: the calcium channels' and SK_E2's ion values change; sodium and
     * potassium are no mechanism's to write */
    check_constant(sim, "NaTs2_t", 1);
    check_constant(sim, "SKv3_1", 1);
    check_constant(sim, "pas", 1);
    check_constant(sim, "Ca_HVA", 0);
    check_constant(sim, "Ca_LVAst", 0);
    check_constant(sim, "SK_E2", 0);
    check_constant(sim, "CaDynamics_E2", 0);
    free(dldy);
    ns_sim_destroy(sim);
    ns_sim_model_destroy(m);

    /* a mechanism that writes a reversal potential is refused by name */
    char ewr[1024];
    snprintf(ewr, sizeof ewr, "%s", tmp("ewr.mod"));
    FILE *f = fopen(ewr, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(EWR, f);
        fclose(f);
        ns_mech_library_t *elib = test_mech_from_files(ewr, "libewr.so", &skip);
        if (elib) {
            setup se;
            setup_init(&se, "ca1_ko20x-07.swc", 100.0, 0.0, "soma.insert = ewr hh\n", elib, 10);
            sim = make_sim(&se, se.cell, 1, &base, &m);
            check_constant(sim, "ewr", 0); /* a written reversal potential is no constant */
            check_constant(sim, "hh", 1);
            g = NULL;
            CHECK_FAILS(ns_grad_create(sim, NULL, &g), NS_ERR_UNSUPPORTED, "ewr", "eca");
            ns_sim_destroy(sim);
            ns_sim_model_destroy(m);
            setup_free(&se);
            ns_mech_library_close(elib);
        }
    }
    setup_free(&su);
    ns_mech_library_close(lib);
    tmpdir_remove();
    return check_summary("test_grad_ion");
}
