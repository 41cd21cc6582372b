/* Models with mechanism libraries built by the system C compiler (skips with
 * 77 without one; test_sim_model.c covers the built-in mechanisms):
 *   1. BBP's channels (data/mechanisms/bbp) on one compartment in the
 *      simulation's model loop against the independent one-compartment
 *      driver of tests/common/nmodl_driver.h (NEURON's order, validated against
 *      NEURON 9.0.2 by test_nmodl_neuron.c): v and cai over 100 ms;
 *   2. an ion of the library's own (USEION x ... VALENCE 1) without NEURON's
 *      defaults: refused until the model gives its values, then used;
 *   3. a library's POINT_PROCESS with NET_RECEIVE as a synapse of a network (one without it is
 *      placed but no connection's target)
 *      (docs/networks.md): MySyn, expsyn.mod renamed, gives the traces of
 *      the built-in ExpSyn to the bit (pas + synapse: the same type order),
 *      a library's globals apply, and the catalogue's synapses are listed
 *      when a name is not one. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mech/builtin/builtin.h"
#include "check.h"
#include "cell_cylinder.h"
#include "neurosolve/neurosolve.h"
#include "neurosolve/nmodl.h"
#include "nmodl_driver.h"
#include "test_tmpdir.h"
#include "mech_build.h"

#define MECH_DIR NS_TEST_DATA "/../../data/mechanisms"

/* One compartment: a soma cylinder L = diam = 20 um, nseg 1 (the driver's). */
static ns_cell_t *one_compartment(int32_t *node) {
    ns_cell_t *cell = test_cylinder();
    if (!cell) return NULL;
    ns_section_info si;
    CHECK_OK(ns_cell_get_section(cell, 0, &si));
    CHECK_MSG(si.nseg == 1 && fabs(si.length - 20.0) < 1e-12 && fabs(si.area - AREA) <= 1e-12 * AREA,
              "the cylinder: nseg %d, L %.17g, area %.17g (want %.17g)", (int)si.nseg, si.length, si.area, AREA);
    CHECK_OK(ns_cell_locate(cell, 0, 0.5, node));
    ns_cell_info ci;
    ns_cell_get_info(cell, &ci);
    CHECK(ci.compartments <= 8); /* the arrays of 8 below */
    return cell;
}

/* The driver's case as a model text: every mechanism everywhere, its RANGE
 * parameters as NAME_MECH, ena/ek/eca when the case sets them. */
static void model_text(const ns_mech_library_t *lib, const tcase *tc, char *text, size_t size) {
    size_t u = (size_t)snprintf(text, size, "# %s, from the driver's case\nall.insert =", tc->name);
    for (int k = 0; k < MAX_MECH && tc->mechs[k]; ++k) u += (size_t)snprintf(text + u, size - u, " %s", tc->mechs[k]);
    u += (size_t)snprintf(text + u, size - u, "\n");
    for (int k = 0; k < 24 && tc->params[k].mech; ++k) {
        const ns_mech_desc *d = NULL;
        int f = -1;
        if (ns_mech_library_find(lib, tc->params[k].mech, &d) != NS_OK) d = NULL;
        const int global = d && ns_mech_field_index(d, tc->params[k].name, &f) != NS_OK;
        u += (size_t)snprintf(text + u, size - u, "%s.%s_%s = %.17g\n", global ? "global" : "all", tc->params[k].name,
                              tc->params[k].mech, tc->params[k].value);
    }
    if (tc->ena) u += (size_t)snprintf(text + u, size - u, "all.ena = %.17g\n", tc->ena);
    if (tc->ek) u += (size_t)snprintf(text + u, size - u, "all.ek = %.17g\n", tc->ek);
    if (tc->eca) u += (size_t)snprintf(text + u, size - u, "all.eca = %.17g\n", tc->eca);
}

#define N_CELLS 3

static void against_driver(ns_mech_library_t *lib, const tcase *tc, double tstop) {
    /* the driver */
    comp c;
    memset(&c, 0, sizeof c);
    c.celsius = tc->celsius;
    ns_mech_library_t *libs[1] = {lib};
    for (int k = 0; k < MAX_MECH && tc->mechs[k]; ++k) {
        const ns_mech_desc *d = find(libs, 1, tc->mechs[k]);
        const ns_mech_catalogue *bi = ns_mech_builtin(); /* pas: the built-in one, as the model's */
        for (int q = 0; !d && q < bi->n; ++q)
            if (strcmp(bi->mechs[q]->name, tc->mechs[k]) == 0) d = bi->mechs[q];
        CHECK_MSG(d != NULL, "%s: no mechanism %s", tc->name, tc->mechs[k]);
        if (!d || add_mech(&c, d)) {
            free_comp(&c);
            return;
        }
    }
    for (int k = 0; k < 24 && tc->params[k].mech; ++k)
        for (int j = 0; j < c.n; ++j)
            if (!strcmp(c.m[j].d->name, tc->params[k].mech)) {
                int idx = -1;
                if (ns_mech_field_index(c.m[j].d, tc->params[k].name, &idx) == NS_OK)
                    c.m[j].fields[idx] = tc->params[k].value;
                else if (ns_mech_global_index(c.m[j].d, tc->params[k].name, &idx) == NS_OK)
                    c.m[j].globals[idx] = tc->params[k].value;
            }
    const long steps = (long)(tstop / DT + 0.5);
    double *ref = malloc((size_t)steps * 3 * sizeof *ref);
    double *cai = malloc((size_t)steps * N_CELLS * sizeof *cai);
    ns_cell_t *cell = NULL;
    ns_sim_model_t *model = NULL;
    ns_sim_t *sim = NULL;
    if (!ref || !cai) goto out;
    CHECK_MSG(simulate(&c, tc, steps, ref) == 0, "%s: the driver's v is not finite", tc->name);
    /* the simulation: N_CELLS copies of the compartment */
    int32_t node = -1;
    cell = one_compartment(&node);
    if (!cell) goto out;
    char text[4096];
    model_text(lib, tc, text, sizeof text);
    CHECK_OK(ns_sim_model_create(lib, &model));
    if (!model) goto out;
    CHECK_OK(ns_sim_model_parse(model, text, strlen(text), tc->name));
    ns_sim_params p;
    ns_sim_params_init(&p);
    p.celsius = tc->celsius;
    p.v_init = tc->v_init;
    p.dt = DT;
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = NS_BACKEND_CPU;
    o.method = NS_HINES_SEQUENTIAL;
    o.model = model;
    const ns_cell_t *shapes[1] = {cell};
    CHECK_OK(ns_sim_create(1, shapes, N_CELLS, NULL, &p, &o, &sim));
    if (!sim) goto out;
    for (int64_t k = 0; k < N_CELLS; ++k) {
        for (int q = 0; q < 2; ++q)
            if (tc->clamps[q].amp != 0.0)
                CHECK_OK(ns_sim_add_iclamp(sim, k, node, tc->clamps[q].del, tc->clamps[q].dur, tc->clamps[q].amp));
        CHECK_OK(ns_sim_add_recording(sim, k, node, NULL));
    }
    ns_cell_info ci;
    ns_cell_get_info(cell, &ci);
    double *x = malloc((size_t)ci.compartments * sizeof *x);
    if (!x) goto out;
    int calcium = tc->calcium;
    for (long s = 0; s < steps; ++s) {
        CHECK_OK(ns_sim_advance(sim, 1));
        for (int64_t k = 0; k < N_CELLS && calcium; ++k) {
            ns_status st = ns_sim_get_model_var(sim, k, "cai", x);
            CHECK_OK(st);
            if (st != NS_OK) calcium = 0;
            cai[s * N_CELLS + k] = x[node];
        }
    }
    free(x);
    int64_t samples;
    int32_t sites;
    const double *tr = ns_sim_traces(sim, &samples, &sites);
    CHECK(samples == steps + 1 && sites == N_CELLS);
    double worst_v = 0.0, worst_ca = 0.0, v_min = INFINITY, v_max = -INFINITY, ca_max = 0.0;
    for (long s = 0; tr && samples == steps + 1 && s < steps; ++s)
        for (int k = 0; k < N_CELLS; ++k) {
            const double dv = fabs(tr[(s + 1) * sites + k] - ref[3 * s]);
            if (!(dv <= worst_v)) worst_v = dv;
            v_min = fmin(v_min, ref[3 * s]);
            v_max = fmax(v_max, ref[3 * s]);
            if (calcium) {
                const double dc = fabs(cai[s * N_CELLS + k] - ref[3 * s + 1]) / ref[3 * s + 1];
                if (!(dc <= worst_ca)) worst_ca = dc;
                ca_max = fmax(ca_max, ref[3 * s + 1]);
            }
        }
    /* spikes of the driver's trace: the protocol must make the cell fire */
    int spikes = 0;
    for (long s = 1; s < steps; ++s) spikes += ref[3 * (s - 1)] < 0.0 && ref[3 * s] >= 0.0;
    int64_t n_sp = 0;
    ns_sim_spikes(sim, 0, &n_sp);
    printf("%s: %d mechanisms, %ld steps, %d cells: max |dv| %.3e mV (v in [%.1f, %.1f]), cai max relative "
           "difference %.3e (cai up to %.3g mM), %d spikes (ours %lld at -20 mV)\n",
           tc->name, c.n, steps, N_CELLS, worst_v, v_min, v_max, worst_ca, ca_max, spikes, (long long)n_sp);
    CHECK_MSG(worst_v < 1e-9, "%s: v differs from the driver by %g mV", tc->name, worst_v);
    if (tc->calcium) CHECK_MSG(worst_ca < 1e-9, "%s: cai differs from the driver by %g (relative)", tc->name, worst_ca);
    CHECK_MSG(spikes >= 2 && (int64_t)spikes == n_sp, "%s: %d spikes in the driver, %lld here", tc->name, spikes,
              (long long)n_sp);
    CHECK(!tc->calcium || ca_max > 2e-4); /* calcium rises: the dynamics are exercised */
    /* ns_sim_init restarts the mechanisms too (states, cai, tables): the
     * same run again gives the same bits */
    {
        const size_t bytes = (size_t)(samples * sites) * sizeof(double);
        double *first = malloc(bytes ? bytes : 1);
        if (first && tr) memcpy(first, tr, bytes);
        CHECK_OK(ns_sim_init(sim));
        CHECK(ns_sim_time(sim) == 0.0);
        CHECK_OK(ns_sim_advance(sim, steps));
        int64_t samples2;
        int32_t sites2;
        const double *tr2 = ns_sim_traces(sim, &samples2, &sites2);
        CHECK_MSG(first && tr2 && samples2 == samples && sites2 == sites && memcmp(first, tr2, bytes) == 0,
                  "%s: a run after ns_sim_init differs from the first", tc->name);
        double ca_end[8];
        if (tc->calcium && ns_sim_get_model_var(sim, 0, "cai", ca_end) == NS_OK)
            CHECK(ca_end[node] == cai[(steps - 1) * N_CELLS]);
        free(first);
    }
out:
    ns_sim_destroy(sim);
    ns_sim_model_destroy(model);
    ns_cell_destroy(cell);
    free(ref);
    free(cai);
    free_comp(&c);
}

/* zero-filled tails of the initialisers are intended */
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif
static const tcase CASES[] = {
    /* the brief's set: pas first (IClamp follows it in both) */
    {"NaTs2_t SKv3_1 Ca_HVA CaDynamics_E2 Ih", 34, -75, 100,
     {"pas", "CaDynamics_E2", "Ca_HVA", "Ih", "NaTs2_t", "SKv3_1"},
     {{"pas", "g", 3e-5}, {"pas", "e", -90}, {"NaTs2_t", "gNaTs2_tbar", 0.5}, {"SKv3_1", "gSKv3_1bar", 0.3},
      {"Ca_HVA", "gCa_HVAbar", 0.002}, {"Ih", "gIhbar", 0.0002}, {"CaDynamics_E2", "gamma", 0.0005},
      {"CaDynamics_E2", "decay", 200}},
     {{10, 80, 0.2}}, {{0}}, 50, -85, 0, 1},
    /* test_nmodl_neuron.c's L5soma (all eleven BBP mechanisms of the soma) */
    NMODL_L5SOMA(100),
};

/* ------------------------------------------------ 2. an ion of its own */

static const char *XLEAK_MOD = "NEURON { SUFFIX xleak USEION x READ ex WRITE ix VALENCE 1 RANGE g }\n"
                               "UNITS { (mV) = (millivolt) (mA) = (milliamp) (S) = (siemens) }\n"
                               "PARAMETER { g = 0.001 (S/cm2) }\n"
                               "ASSIGNED { v (mV) ex (mV) ix (mA/cm2) }\n"
                               "BREAKPOINT { ix = g*(v - ex) }\n";

/* writes xi from the current: e of x then follows Nernst, from xi and xo */
static const char *XACC_MOD = "NEURON { SUFFIX xacc USEION x READ ix, xi WRITE xi VALENCE 1 RANGE k }\n"
                              "PARAMETER { k = 0.01 }\n"
                              "ASSIGNED { ix (mA/cm2) }\n"
                              "STATE { xi (mM) }\n"
                              "BREAKPOINT { SOLVE s METHOD cnexp }\n"
                              "DERIVATIVE s { xi' = -k*ix }\n";

/* A concentration writer of the own ion: refused without xi and xo (e is
 * Nernst's then), refused with an ex (it would be overwritten, as NEURON does
 * silently), and with xi and xo e = Nernst(xi, xo) at every step while xi
 * moves. */
static void own_ion_written(ns_mech_library_t *lib, const ns_cell_t *cell, int32_t node) {
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = NS_BACKEND_CPU;
    const ns_cell_t *shapes[1] = {cell};
    static const char *const texts[3] = {"all.insert = xleak xacc\n",
                                         "all.insert = xleak xacc\nall.xi = 1\nall.xo = 10\nall.ex = -52\n",
                                         "all.insert = xleak xacc\nall.xi = 1\nall.xo = 10\n"};
    for (int c = 0; c < 3; ++c) {
        ns_sim_model_t *model = NULL;
        CHECK_OK(ns_sim_model_create(lib, &model));
        if (!model) return;
        CHECK_OK(ns_sim_model_parse(model, texts[c], strlen(texts[c]), "xc.model"));
        o.model = model;
        ns_sim_t *sim = NULL;
        const ns_status s = ns_sim_create(1, shapes, 1, NULL, &p, &o, &sim);
        if (c == 0) {
            CHECK_MSG(s == NS_ERR_INVALID_ARGUMENT && strstr(ns_last_error(), "xacc uses the ion x") &&
                          strstr(ns_last_error(), "its concentrations Xi and Xo"),
                      "%s: \"%s\"", ns_status_string(s), ns_last_error());
            CHECK(sim == NULL);
        } else if (c == 1) {
            CHECK_MSG(s == NS_ERR_INVALID_ARGUMENT && strstr(ns_last_error(), "xc.model:4: all.ex") &&
                          strstr(ns_last_error(), "so ex follows from xi and xo by Nernst there"),
                      "%s: \"%s\"", ns_status_string(s), ns_last_error());
            CHECK(sim == NULL);
        } else {
            CHECK_OK(s);
            double e[8], ci[8], co[8], worst = 0.0, xi0 = 0.0;
            for (int step = 0; sim && step <= 400; step += 100) {
                if (step) CHECK_OK(ns_sim_advance(sim, 100));
                CHECK_OK(ns_sim_get_model_var(sim, 0, "ex", e));
                CHECK_OK(ns_sim_get_model_var(sim, 0, "xi", ci));
                CHECK_OK(ns_sim_get_model_var(sim, 0, "xo", co));
                if (step == 0) xi0 = ci[node];
                worst = fmax(worst, fabs(e[node] - ns_mech_nernst(ci[node], co[node], 1, p.celsius)));
            }
            printf("own ion x written by xacc: xi %.6g -> %.6g mM, e - Nernst(xi, xo) at most %.2e mV\n", xi0,
                   ci[node], worst);
            CHECK(xi0 == 1.0 && co[node] == 10.0 && ci[node] != 1.0);
            CHECK(worst == 0.0);
            ns_sim_destroy(sim);
        }
        ns_sim_model_destroy(model);
    }
}

static void own_ion(const char *dir) {
    char path[600], lib_path[600];
    snprintf(path, sizeof path, "%s/xleak.mod", dir);
    snprintf(lib_path, sizeof lib_path, "%s/libxleak.so", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(XLEAK_MOD, f);
    fclose(f);
    snprintf(path, sizeof path, "%s/xacc.mod", dir);
    f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(XACC_MOD, f);
    fclose(f);
    CHECK_OK(ns_mechanisms_build(dir, lib_path, NULL));
    ns_mech_library_t *lib = NULL;
    CHECK_OK(ns_mech_library_open(lib_path, &lib));
    if (!lib) return;
    int32_t node = -1;
    ns_cell_t *cell = one_compartment(&node);
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = NS_BACKEND_CPU;
    const ns_cell_t *shapes[1] = {cell};
    for (int with_e = 0; with_e < 2 && cell; ++with_e) {
        ns_sim_model_t *model = NULL;
        CHECK_OK(ns_sim_model_create(lib, &model));
        if (!model) break;
        const char *text = with_e ? "all.insert = xleak\nall.g_xleak = 2e-3\nall.ex = -52\n"
                                  : "all.insert = xleak\nall.g_xleak = 2e-3\n";
        CHECK_OK(ns_sim_model_parse(model, text, strlen(text), "x.model"));
        o.model = model;
        ns_sim_t *sim = NULL;
        const ns_status s = ns_sim_create(1, shapes, 1, NULL, &p, &o, &sim);
        if (!with_e) {
            CHECK_MSG(s == NS_ERR_INVALID_ARGUMENT, "%s", ns_status_string(s));
            CHECK_MSG(strstr(ns_last_error(), "shape 0: model: xleak uses the ion x") && strstr(ns_last_error(), "no default values") &&
                          strstr(ns_last_error(), "its eX") && strstr(ns_last_error(), "compartment"),
                      "\"%s\"", ns_last_error());
            CHECK(sim == NULL);
        } else {
            CHECK_OK(s);
            if (sim) {
                /* v relaxes to ex with tau = cm / g = 0.5 ms: after 20 ms
                 * it is there to rounding */
                CHECK_OK(ns_sim_add_recording(sim, 0, node, NULL));
                CHECK_OK(ns_sim_advance(sim, ns_sim_steps_for(sim, 20.0)));
                int64_t samples;
                int32_t sites;
                const double *tr = ns_sim_traces(sim, &samples, &sites);
                const double v_end = tr ? tr[(samples - 1) * sites] : NAN;
                double ex[8];
                CHECK_OK(ns_sim_get_model_var(sim, 0, "ex", ex));
                /* backward Euler toward ex: v(t) - ex = (v0 - ex) / (1 + dt/tau)^steps */
                const double want = -52.0 + (-65.0 + 52.0) * pow(1.0 / (1.0 + 0.025 / 0.5), (double)(samples - 1));
                printf("own ion x: refused without ex; with ex = -52 mV v ends at %.12f mV (want %.12f), ex %.3f\n",
                       v_end, want, ex[node]);
                CHECK_MSG(fabs(v_end - want) < 1e-9, "v %.15g, want %.15g", v_end, want);
                CHECK(ex[node] == -52.0);
                ns_sim_destroy(sim);
            }
        }
        ns_sim_model_destroy(model);
    }
    if (cell) own_ion_written(lib, cell, node);
    ns_cell_destroy(cell);
    ns_mech_library_close(lib);
}

/* v at the synapse's compartment, every step for 20 ms, of a one-compartment
 * cell with pas and synapse `mech` driven by a train (2, 3 and 3 ms, weights
 * 0.01 uS, delay 1 ms). */
static void library_synapse_run(const ns_mech_library_t *lib, const char *mech, double *v, int64_t *samples) {
    *samples = 0;
    int32_t node = -1;
    ns_cell_t *cell = one_compartment(&node);
    ns_sim_model_t *model = NULL;
    CHECK_OK(ns_sim_model_create(lib, &model));
    const char *text = "all.insert = pas\nall.e_pas = -65\n";
    if (model) CHECK_OK(ns_sim_model_parse(model, text, strlen(text), "syn.model"));
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = NS_BACKEND_CPU;
    o.model = model;
    ns_sim_t *sim = NULL;
    const ns_cell_t *shapes[1] = {cell};
    if (cell && model) CHECK_OK(ns_sim_create(1, shapes, 1, NULL, &p, &o, &sim));
    ns_sim_model_destroy(model);
    if (sim) {
        int64_t syn = -1, src = -1;
        int32_t site = -1;
        const double times[3] = {2.0, 3.0, 3.0};
        CHECK_OK(ns_sim_add_synapse(sim, 0, node, mech, &syn));
        CHECK_OK(ns_sim_synapse_set(sim, syn, "tau", 1.5));
        CHECK_OK(ns_sim_add_spike_source(sim, times, 3, &src));
        CHECK_OK(ns_sim_connect(sim, src, syn, 0.01, 1.0));
        CHECK_OK(ns_sim_add_recording(sim, 0, node, &site));
        CHECK_OK(ns_sim_init(sim));
        CHECK_OK(ns_sim_advance(sim, 800));
        const double *tr = ns_sim_traces(sim, samples, NULL);
        if (tr) memcpy(v, tr, (size_t)*samples * sizeof *v);
        ns_sim_destroy(sim);
    }
    ns_cell_destroy(cell);
}

static void library_synapse(const char *dir) {
    /* expsyn.mod with another name, and a point process without NET_RECEIVE */
    char path[600], lib_path[600];
    snprintf(path, sizeof path, "%s/expsyn.mod", MECH_DIR "/neuron");
    size_t n = 0;
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f) return;
    char text[8192];
    n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    char *at = strstr(text, "POINT_PROCESS ExpSyn");
    CHECK(at != NULL);
    if (!at) return;
    snprintf(path, sizeof path, "%s/mysyn.mod", dir);
    f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fwrite(text, 1, (size_t)(at - text), f);
    fputs("POINT_PROCESS MySyn", f);
    fputs(at + strlen("POINT_PROCESS ExpSyn"), f);
    fclose(f);
    snprintf(path, sizeof path, "%s/myclamp.mod", dir);
    f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs("NEURON { POINT_PROCESS MyClamp RANGE amp NONSPECIFIC_CURRENT i }\n"
          "PARAMETER { amp = 0 (nA) }\nASSIGNED { i (nA) }\nBREAKPOINT { i = amp }\n", f);
    fclose(f);
    snprintf(lib_path, sizeof lib_path, "%s/libmysyn.so", dir);
    CHECK_OK(ns_mechanisms_build(dir, lib_path, NULL));
    ns_mech_library_t *lib = NULL;
    CHECK_OK(ns_mech_library_open(lib_path, &lib));
    if (!lib) return;
    static double a[801], b[801];
    int64_t na = 0, nb = 0;
    library_synapse_run(lib, "MySyn", a, &na);
    library_synapse_run(NULL, "ExpSyn", b, &nb);
    CHECK(na == 801 && nb == 801);
    CHECK(memcmp(a, b, (size_t)na * sizeof *a) == 0);
    CHECK_MSG(a[800] > -65.0 && a[40] == -65.0, "v %.17g at 1 ms, %.17g at 20 ms", a[40], a[800]);
    /* a point process without NET_RECEIVE is not a synapse; the message lists the catalogue's synapses */
    int32_t node = -1;
    ns_cell_t *cell = one_compartment(&node);
    ns_sim_model_t *model = NULL;
    CHECK_OK(ns_sim_model_create(lib, &model));
    const char *mt = "all.insert = pas\n";
    if (model) CHECK_OK(ns_sim_model_parse(model, mt, strlen(mt), "syn.model"));
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = NS_BACKEND_CPU;
    o.model = model;
    ns_sim_t *sim = NULL;
    const ns_cell_t *shapes[1] = {cell};
    if (cell && model) CHECK_OK(ns_sim_create(1, shapes, 1, NULL, &p, &o, &sim));
    ns_sim_model_destroy(model);
    if (sim) {
        /* a point process without NET_RECEIVE is placed (an electrode: SEClamp), but it is no
         * connection's target; a density mechanism is no point process (the synapses listed) */
        int64_t id = -1, src = -1;
        const double t0 = 1.0;
        CHECK_OK(ns_sim_add_synapse(sim, 0, node, "MyClamp", &id));
        CHECK_OK(ns_sim_add_spike_source(sim, &t0, 1, &src));
        CHECK(ns_sim_connect(sim, src, id, 1.0, 1.0) == NS_ERR_INVALID_ARGUMENT);
        CHECK_MSG(strstr(ns_last_error(), "MyClamp has no NET_RECEIVE"), "\"%s\"", ns_last_error());
        CHECK(ns_sim_add_synapse(sim, 0, node, "pas", &id) == NS_ERR_INVALID_ARGUMENT);
        CHECK_MSG(strstr(ns_last_error(), "not a POINT_PROCESS") &&
                      strstr(ns_last_error(), "MySyn") && strstr(ns_last_error(), "ExpSyn"),
                  "\"%s\"", ns_last_error());
        ns_sim_destroy(sim);
    }
    ns_cell_destroy(cell);
    ns_mech_library_close(lib);
}

/* NEURON's ion style is per section: where CaDynamics_E2 (which writes cai)
 * is inserted, eca follows by Nernst from cai and cao; where only Ca_HVA is,
 * eca keeps the model's value (or NEURON's default), and setting it there is
 * allowed (where cai is written, refused). Checked on l5pc_bbp_axon with
 * CaDynamics in the soma and axon only, against ns_mech_nernst per node. */
static void nernst_per_section(ns_mech_library_t *lib) {
    ns_morph_t *mo = NULL;
    ns_cell_t *cell = NULL;
    CHECK_OK(ns_swc_read(NS_MORPHOLOGIES "/l5pc_bbp_axon.swc", NULL, &mo));
    if (mo) CHECK_OK(ns_discretize(mo, NULL, &cell));
    ns_morph_destroy(mo);
    if (!cell) return;
    ns_sim_params p;
    ns_sim_params_init(&p);
    p.celsius = 34.0;
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = NS_BACKEND_CPU;
    static const char *const text = "all.insert = pas Ca_HVA\nsoma.insert = CaDynamics_E2\naxon.insert = "
                                    "CaDynamics_E2\ndend.eca = 120\nsoma.cai = 1e-4\n";
    ns_sim_model_t *model = NULL;
    CHECK_OK(ns_sim_model_create(lib, &model));
    CHECK_OK(ns_sim_model_parse(model, text, strlen(text), "ca.model"));
    o.model = model;
    ns_sim_t *sim = NULL;
    CHECK_OK(ns_sim_create(1, (const ns_cell_t *const *)&cell, 1, NULL, &p, &o, &sim));
    ns_cell_info ci;
    ns_cell_get_info(cell, &ci);
    const int32_t n = ci.compartments;
    double *e = malloc(3 * (size_t)n * sizeof *e);
    if (sim && e) {
        CHECK_OK(ns_sim_add_iclamp(sim, 0, ns_sim_spike_compartment(sim, 0), 1.0, 20.0, 2.0));
        CHECK_OK(ns_sim_advance(sim, 800));
        double *cai = e + n, *cao = e + 2 * n;
        CHECK_OK(ns_sim_get_model_var(sim, 0, "eca", e));
        CHECK_OK(ns_sim_get_model_var(sim, 0, "cai", cai));
        CHECK_OK(ns_sim_get_model_var(sim, 0, "cao", cao));
        const double *area = ns_cell_area(cell);
        const int32_t *type = ns_cell_type(cell);
        int64_t wrong = 0, nernst = 0, fixed = 0;
        for (int32_t i = 0; i < n; ++i) {
            if (!(area[i] > 0.0)) continue;
            const ns_region r = ns_region_of_swc_type(type[i]);
            if (r == NS_REGION_SOMA || r == NS_REGION_AXON) {
                wrong += e[i] != ns_mech_nernst(cai[i], cao[i], 2, p.celsius) || cai[i] == 5e-5;
                ++nernst;
            } else if (r == NS_REGION_BASAL || r == NS_REGION_APICAL) {
                wrong += e[i] != 120.0;
                ++fixed;
            }
        }
        printf("eca per section: Nernst at %lld compartments (CaDynamics_E2), 120 mV kept at %lld: %lld wrong\n",
               (long long)nernst, (long long)fixed, (long long)wrong);
        CHECK(wrong == 0 && nernst > 0 && fixed > 0);
    }
    free(e);
    ns_sim_destroy(sim);
    ns_sim_model_destroy(model);
    /* eca where cai is written: refused */
    CHECK_OK(ns_sim_model_create(lib, &model));
    static const char *const bad = "all.insert = pas Ca_HVA CaDynamics_E2\nsoma.eca = 120\n";
    CHECK_OK(ns_sim_model_parse(model, bad, strlen(bad), "bad.model"));
    o.model = model;
    sim = NULL;
    CHECK(ns_sim_create(1, (const ns_cell_t *const *)&cell, 1, NULL, &p, &o, &sim) == NS_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(ns_last_error(), "bad.model:2: soma.eca") && strstr(ns_last_error(), "by Nernst there"), "%s",
              ns_last_error());
    ns_sim_model_destroy(model);
    ns_cell_destroy(cell);
}

int main(void) {
    if (tmpdir_make("ns_sim_model_cc")) return 1;
    int skip = 0;
    ns_mech_library_t *lib = test_mech_shared("NS_TEST_LIBBBP", MECH_DIR "/bbp", "libbbp.so", &skip);
    if (skip) return tmpdir_remove(), 77;
    if (lib) {
        for (size_t k = 0; k < sizeof CASES / sizeof *CASES; ++k) against_driver(lib, &CASES[k], 100.0);
        nernst_per_section(lib);
        ns_mech_library_close(lib);
    }
    char *xdir = tmp("xion");
    char cmd[700];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", xdir);
    if (system(cmd) == 0) own_ion(xdir);
    char *sdir = tmp("synapse");
    snprintf(cmd, sizeof cmd, "mkdir -p %s", sdir);
    if (system(cmd) == 0) library_synapse(sdir);
    tmpdir_remove();
    return check_summary("test_sim_model_cc");
}
