/* NEURON's type order with concentration writers in the simulation: NEURON
 * runs a mechanism that writes an ion's concentration (WRITE cai) right after
 * pas, before IClamp and every other mechanism, whatever its name, and several
 * writers in reverse registration order (init.cpp's nrn_writes_conc).
 *   1. the order the model resolves to, for a library of CaDynamics_E2.mod,
 *      Ca_HVA.mod, SK_E2.mod, cabuf.mod (file-name order): pas, cabuf,
 *      CaDynamics_E2, Ca_HVA, SK_E2, IClamp after the two writers;
 *   2. pas + cabuf + Ca_HVA + SK_E2 (cabuf's file name sorts after SK_E2's,
 *      which reads cai) on three one-compartment cells in the simulation
 *      against NEURON 9.0.2's trace tests/data/nmodl/cabuf.csv
 *      (validation/nmodl_neuron_traces.py, case cabuf): every cell's v (RMS
 *      and max) and cai. With the name order SK_E2 reads the step's old cai
 *      and v parts from NEURON's. The row at t = 0 holds the ions' i at 0
 *      before INITIAL (cabuf's STEADYSTATE reads ica).
 * Without a C compiler the test skips (77). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cell_cylinder.h"
#include "mech/model_impl.h"
#include "neurosolve/neurosolve.h"
#include "neurosolve/nmodl.h"
#include "nmodl_ref.h"
#include "test_tmpdir.h"
#include "mech_build.h"

#define MECH_DIR NS_TEST_DATA "/../../data/mechanisms"
#define DT 0.025
#define N_CELLS 3

static const char *MODEL = "all.insert = pas cabuf Ca_HVA SK_E2\n"
                           "all.g_pas = 1e-4\nall.e_pas = -70\n"
                           "all.gCa_HVAbar_Ca_HVA = 0.002\nall.gSK_E2bar_SK_E2 = 0.01\n"
                           "all.ek = -85\n";

/* 1. the resolved order */
static void order(ns_mech_library_t *lib, const ns_cell_t *cell) {
    static const char *text = "all.insert = SK_E2 Ca_HVA pas cabuf CaDynamics_E2\n";
    static const char *want[5] = {"pas", "cabuf", "CaDynamics_E2", "Ca_HVA", "SK_E2"};
    ns_sim_model_t *model = NULL;
    CHECK_OK(ns_sim_model_create(lib, &model));
    if (!model) return;
    CHECK_OK(ns_sim_model_parse(model, text, strlen(text), "order.model"));
    ns_sim_params p;
    ns_sim_params_init(&p);
    const ns_cell_t *cells[1] = {cell};
    sim_model *r = NULL;
    CHECK_OK(ns_sim_model_resolve(model, NULL, 1, cells, &p, &r));
    if (r) {
        CHECK(r->n_mechs == 5);
        for (int k = 0; k < 5 && k < r->n_mechs; ++k)
            CHECK_MSG(strcmp(r->mechs[k].desc->name, want[k]) == 0, "mechanism %d: %s (want %s)", k,
                      r->mechs[k].desc->name, want[k]);
        CHECK_MSG(r->n_before_clamp == 3, "IClamp after %d mechanisms (want 3: pas and the two writers)",
                  (int)r->n_before_clamp);
        /* a synapse type's key (net.c merges them in by it) follows the writers' */
        const int32_t expsyn = ns_sim_model_find(r, "ExpSyn");
        CHECK(expsyn >= 0 && ns_sim_model_key(r, expsyn) > r->mechs[2].key &&
              ns_sim_model_key(r, expsyn) < r->mechs[3].key);
    }
    ns_sim_model_free(r);
    ns_sim_model_destroy(model);
}

/* 2. against NEURON */
static void against_neuron(ns_mech_library_t *lib, ns_cell_t *cell) {
    ref rf;
    CHECK_MSG(read_ref("cabuf", &rf) == 0 && rf.cols == 4 && rf.n > 1000, "cannot read NEURON's cabuf trace");
    ns_sim_model_t *model = NULL;
    ns_sim_t *sim = NULL;
    double x[8];
    if (!rf.row) goto out;
    int32_t node = -1;
    CHECK_OK(ns_cell_locate(cell, 0, 0.5, &node));
    CHECK_OK(ns_sim_model_create(lib, &model));
    if (!model) goto out;
    CHECK_OK(ns_sim_model_parse(model, MODEL, strlen(MODEL), "cabuf.model"));
    ns_sim_params p;
    ns_sim_params_init(&p);
    p.celsius = 34;
    p.v_init = -70;
    p.dt = DT;
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = NS_BACKEND_CPU;
    o.model = model;
    const ns_cell_t *shapes[1] = {cell};
    CHECK_OK(ns_sim_create(1, shapes, N_CELLS, NULL, &p, &o, &sim));
    if (!sim) goto out;
    for (int64_t k = 0; k < N_CELLS; ++k) {
        CHECK_OK(ns_sim_add_iclamp(sim, k, node, 20, 100, 0.3));
        CHECK_OK(ns_sim_add_recording(sim, k, node, NULL));
    }
    double worst_ca = 0.0, ca_max = 0.0;
    for (int j = 0; j < rf.n; ++j) {
        const long step = lround(rf.row[4 * j] / DT);
        if (step > 0) CHECK_OK(ns_sim_advance(sim, step - (long)lround(ns_sim_time(sim) / DT)));
        for (int64_t k = 0; k < N_CELLS; ++k) {
            CHECK_OK(ns_sim_get_model_var(sim, k, "cai", x));
            const double dc = fabs(x[node] - rf.row[4 * j + 2]) / rf.row[4 * j + 2];
            if (!(dc <= worst_ca)) worst_ca = dc;
        }
        ca_max = fmax(ca_max, rf.row[4 * j + 2]);
    }
    int64_t samples = 0;
    int32_t sites = 0;
    const double *tr = ns_sim_traces(sim, &samples, &sites);
    const long steps = lround(rf.row[4 * (rf.n - 1)] / DT);
    CHECK(tr && samples == steps + 1 && sites == N_CELLS);
    for (int k = 0; tr && samples == steps + 1 && k < N_CELLS; ++k) {
        double sum = 0.0, worst = 0.0;
        for (int j = 0; j < rf.n; ++j) {
            const double dv = tr[lround(rf.row[4 * j] / DT) * sites + k] - rf.row[4 * j + 1];
            sum += dv * dv;
            if (!(fabs(dv) <= worst)) worst = fabs(dv);
        }
        const double rms = sqrt(sum / rf.n);
        printf("cabuf, cell %d: %d samples of %ld steps, RMS of v %.3e mV, max %.3e mV\n", k, rf.n, steps, rms, worst);
        CHECK_MSG(rms <= 1e-6 && worst <= 1e-4, "cell %d: v differs from NEURON's: RMS %g mV, max %g mV", k, rms,
                  worst);
    }
    printf("cabuf: cai max relative difference %.3e (cai up to %.3g mM)\n", worst_ca, ca_max);
    CHECK_MSG(worst_ca <= 1e-8, "cai differs from NEURON's by %g (relative)", worst_ca);
    CHECK(ca_max > 1e-4); /* calcium rises: the buffer and SK_E2 are exercised */
out:
    ns_sim_destroy(sim);
    ns_sim_model_destroy(model);
    free(rf.row);
}

int main(void) {
    if (tmpdir_make("ns_sim_conc_order")) return 1;
    int skip = 0;
    ns_mech_library_t *lib = test_mech_from_files(MECH_DIR "/bbp/CaDynamics_E2.mod " MECH_DIR "/bbp/Ca_HVA.mod " MECH_DIR
                                                  "/bbp/SK_E2.mod " MECH_DIR "/test/cabuf.mod", "libconc.so", &skip);
    if (skip) return tmpdir_remove(), 77;
    ns_cell_t *cell = test_cylinder();
    if (lib && cell) {
        order(lib, cell);
        against_neuron(lib, cell);
    }
    ns_cell_destroy(cell);
    ns_mech_library_close(lib);
    tmpdir_remove();
    return check_summary("test_sim_conc_order");
}
