/* The NMODL translator against NEURON, one mechanism at a time: the mechanism
 * libraries are built from data/mechanisms/ with the system C compiler
 * (ns_mechanisms_build, as `neurosolve mechanisms build` does), then one
 * isopotential compartment (L = diam = 20 um, cm = 1 uF/cm^2) is integrated by
 * NEURON's fixed-step scheme with the generated code and compared with the
 * NEURON 9.0.2 traces in tests/data/nmodl/ (validation/nmodl_neuron_traces.py):
 * RMS of v, spike times, and cai / eca where calcium is dynamic.
 * Also: derivimplicit and euler against their closed forms, and the
 * library's errors (unknown names, failed builds).
 * Without a C compiler the test skips (77). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "neurosolve/nmodl.h"
#include "test_tmpdir.h"
#include "mech_build.h"

#define MECH_DIR NS_TEST_DATA "/../../data/mechanisms"
#include "nmodl_driver.h"
#include "nmodl_ref.h"

static int spikes_of(const double *v, double v0, long steps, double *t, int cap) {
    int n = 0;
    double prev = v0;
    for (long s = 0; s < steps; ++s) {
        if (prev < 0.0 && v[3 * s] >= 0.0 && n < cap)
            t[n++] = s * DT + (0.0 - prev) * DT / (v[3 * s] - prev);
        prev = v[3 * s];
    }
    return n;
}

/* zero-filled tails of the initialisers are intended */
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif
static const tcase CASES[] = {
    {"hh", 6.3, -65, 50, {"hh"}, {{0}}, {{2, 30, 0.2}}, {{0, 0}}, 0, 0, 0, 0},
    {"pas", 6.3, -65, 40, {"pas"}, {{0}}, {{5, 20, 0.1}}, {{0, 0}}, 0, 0, 0, 0},
    /* NMODL's language (data/mechanisms/test/lang.mod): units after numbers, UNITS
     * constants, module LOCALs, arrays, FROM/WHILE, v and ena as the mechanism's
     * copies, VERBATIM return 0, SOLVE after a statement; a file with CR-only line ends */
    {"lang", 20, -65, 60, {"lang"}, {{0}}, {{2, 30, 0.2}}, {{0, 0}}, 0, 0, 0, 0},
    {"langcr", 6.3, -65, 40, {"langcr"}, {{0}}, {{5, 20, 0.1}}, {{0, 0}}, 0, 0, 0, 0},
    {"ExpSyn", 6.3, -70, 40, {"pas", "ExpSyn"},
     {{"pas", "g", 1e-4}, {"pas", "e", -70}, {"ExpSyn", "tau", 2}, {"ExpSyn", "e", 0}}, {{0}},
     {{5, 0.01}, {15, 0.02}}, 0, 0, 0, 0},
    {"Exp2Syn", 6.3, -70, 40, {"pas", "Exp2Syn"},
     {{"pas", "g", 1e-4}, {"pas", "e", -70}, {"Exp2Syn", "tau1", 0.5}, {"Exp2Syn", "tau2", 3}, {"Exp2Syn", "e", 0}},
     {{0}}, {{5, 0.01}, {15, 0.02}}, 0, 0, 0, 0},
    NMODL_BBP_CHANNELS,
    {"calcium", 34, -70, 200, {"pas", "CaDynamics_E2", "Ca_HVA", "Ca_LVAst", "SK_E2"},
     {{"pas", "g", 1e-4}, {"pas", "e", -70}, {"Ca_HVA", "gCa_HVAbar", 0.002}, {"Ca_LVAst", "gCa_LVAstbar", 0.005},
      {"CaDynamics_E2", "gamma", 0.05}, {"CaDynamics_E2", "decay", 80}, {"SK_E2", "gSK_E2bar", 0.01}},
     {{20, 100, 0.3}}, {{0}}, 0, -85, 0, 1},
    NMODL_L5SOMA(300),
    /* KINETIC schemes by METHOD sparse: NEURON's test files (data/mechanisms/kinetic) and cabuf */
    {"hhkin", 6.3, -65, 50, {"hhkin"}, {{0}}, {{2, 30, 0.2}}, {{0, 0}}, 0, 0, 0, 0},
    {"X2Y", 6.3, -65, 40, {"pas", "X2Y"}, {{0}}, {{5, 20, 0.1}}, {{0, 0}}, 0, 0, 0, 0},
    {"side_effects", 6.3, -65, 40, {"pas", "side_effects"}, {{0}}, {{5, 20, 0.1}}, {{0, 0}}, 0, 0, 0, 0},
    {"glia", 6.3, -65, 40, {"pas", "glia"}, {{0}}, {{5, 20, 0.1}}, {{0, 0}}, 0, 0, 0, 0, "C2"},
    {"minipump", 6.3, -65, 40, {"pas", "minipump"}, {{0}}, {{5, 20, 0.1}}, {{0, 0}}, 0, 0, 0, 0, "Z"},
    {"minipump_ss", 6.3, -65, 40, {"pas", "minipump"}, {{"minipump", "run_steady_state", 1}}, {{5, 20, 0.1}},
     {{0, 0}}, 0, 0, 0, 0, "Z"},
    /* ELECTRODE_CURRENT: NEURON's stim.mod (IClamp) and svclmp.mod (SEClamp, whose conductance
     * 1/rs goes into d) built from data/mechanisms/electrode, their current i compared */
    {"IClamp", 6.3, -65, 50, {"hh", "IClamp"}, {{"IClamp", "del", 2}, {"IClamp", "dur", 30}, {"IClamp", "amp", 0.2}},
     {{0}}, {{0, 0}}, 0, 0, 0, 0, "i"},
    {"SEClamp", 6.3, -65, 40, {"hh", "SEClamp"},
     {{"SEClamp", "dur1", 3}, {"SEClamp", "amp1", -65}, {"SEClamp", "dur2", 10}, {"SEClamp", "amp2", -30},
      {"SEClamp", "dur3", 5}, {"SEClamp", "amp3", -75}, {"SEClamp", "rs", 1}},
     {{0}}, {{0, 0}}, 0, 0, 0, 0, "i"},
    /* area and diam (the ppack's per-node geometry): our geom.mod (density) and geompp.mod (point) */
    {"geom", 6.3, -65, 40, {"pas", "geom"}, {{0}}, {{5, 20, 0.1}}, {{0, 0}}, 0, 0, 0, 0, "s"},
    {"geompp", 6.3, -65, 40, {"pas", "geompp"}, {{0}}, {{5, 20, 0.1}}, {{0, 0}}, 0, 0, 0, 0, "i"},
    /* WRITE ena: our wena.mod (no current: its BREAKPOINT after the v update) and wenai.mod (its own ina) */
    {"wena", 6.3, -65, 40, {"hh", "wena"}, {{0}}, {{2, 30, 0.2}}, {{0, 0}}, 0, 0, 0, 0, "ena"},
    {"wenai", 6.3, -65, 40, {"hh", "wenai"}, {{0}}, {{2, 30, 0.2}}, {{0, 0}}, 0, 0, 0, 0, "ena"},
    /* forms nocmodl accepts (test/kflow.mod: `~ g -> (rate)`, CHARGE, PROTECT, MUTEXLOCK, an undeclared
     * GLOBAL of a THREADSAFE file; test/nosuffix.mod: no NEURON block); KINETIC by METHOD euler and
     * runge (keuler.mod, krunge.mod: COMPARTMENT, a second-order reaction, a CONSERVE they ignore);
     * a DERIVATIVE by runge reading t (drunge.mod) */
    {"kflow", 20, -65, 40, {"pas", "kflow"}, {{0}}, {{5, 20, 0.1}}, {{0, 0}}, 50, 0, 0, 0, "g"},
    {"nosuffix", 6.3, -65, 40, {"pas", "nosuffix"}, {{0}}, {{5, 20, 0.1}}, {{0, 0}}, 0, 0, 0, 0, "x"},
    {"keuler", 6.3, -65, 40, {"pas", "keuler"}, {{0}}, {{5, 20, 0.1}}, {{0, 0}}, 0, 0, 0, 0, "o"},
    {"krunge", 6.3, -65, 40, {"pas", "krunge"}, {{0}}, {{5, 20, 0.1}}, {{0, 0}}, 0, 0, 0, 0, "o"},
    {"drunge", 6.3, -65, 40, {"pas", "drunge"}, {{0}}, {{5, 20, 0.1}}, {{0, 0}}, 0, 0, 0, 0, "m"},
    /* LINEAR (linspine.mod: NEURON's expsynspine pattern) and NONLINEAR (nonlin.mod), in INITIAL and in a
     * PROCEDURE that BREAKPOINT calls */
    {"linspine", 6.3, -65, 40, {"pas", "linspine"}, {{0}}, {{5, 20, 0.1}}, {{0, 0}}, 0, 0, 0, 0, "vsp"},
    {"nonlin", 6.3, -65, 40, {"pas", "nonlin"}, {{0}}, {{5, 20, 0.1}}, {{0, 0}}, 0, 0, 0, 0, "xs"},
    /* arrays in reactions: cadifus.mod (NEURON's cadifus pattern: shells, FROM loops, COMPARTMENT i) */
    {"cadifus", 34, -70, 200, {"pas", "cadifus", "Ca_HVA", "SK_E2"},
     {{"pas", "g", 1e-4}, {"pas", "e", -70}, {"Ca_HVA", "gCa_HVAbar", 0.002}, {"SK_E2", "gSK_E2bar", 0.01}},
     {{20, 100, 0.3}}, {{0}}, 0, -85, 0, 1},
    /* VERBATIM C: our data/mechanisms/verbatim/vbchan.mod (C in its rates, outside the blocks, an array, calls with
     * _threadargscomma_ and without; ntau, which the C computes, compared) and vbrand.mod (a FROM counter as C's int, mcell_ran4 and
     * nrnran123 draws in C: the noise current compared) */
    {"vbchan", 34, -70, 120, {"pas", "vbchan"}, {{"pas", "g", 1e-4}, {"pas", "e", -70}, {"vbchan", "gbar", 0.01}},
     {{10, 40, 0.15}, {60, 40, -0.15}}, {{0}}, 50, -85, 120, 0, "ntau"},
    {"vbrand", 6.3, -65, 40, {"pas", "vbrand"}, {{0}}, {{5, 20, 0.1}}, {{0, 0}}, 0, 0, 0, 0, "inoise"},
    /* vbstore.mod: a point process whose C keeps a structure of its own in a POINTER's slot and a RANGE variable
     * (through the file's C macros), allocated by hoc_Ecalloc in its CONSTRUCTOR, hoc_lookup NULL: its current */
    {"vbstore", 6.3, -65, 40, {"pas", "vbstore"}, {{0}}, {{5, 20, 0.1}}, {{0, 0}}, 0, 0, 0, 0, "i"},
    /* usetable read as a name and a PROCEDURE called as a value (test/usetab.mod: INITIAL's start of m) */
    {"usetab", 6.3, -65, 40, {"pas", "usetab"}, {{0}}, {{5, 20, 0.1}}, {{0, 0}}, 0, 0, 0, 0},
    /* a TABLE'd FUNCTION reading a GLOBAL that INITIAL sets (verbatim/tablazy.mod: built at the first call) */
    {"tablazy", 6.3, -65, 40, {"pas", "tablazy"}, {{0}}, {{5, 20, 0.1}}, {{0, 0}}, 0, 0, 0, 0},
    /* a SOLVE nested in BREAKPOINT's if/else (test/solveif.mod: ModelDB's bg_cvode.inc pattern) */
    {"solveif", 6.3, -65, 40, {"pas", "solveif"}, {{0}}, {{5, 20, 0.1}}, {{0, 0}}, 0, 0, 0, 0},
    /* FUNCTION_TABLE: our test/ftab.mod, the tables of ftab_tables() (validation/nmodl_neuron_traces.py's) */
    {"ftab", 6.3, -65, 40, {"pas", "ftab"}, {{0}}, {{5, 20, 0.3}}, {{0, 0}}, 0, 0, 0, 0, "ninf"},
    {"cabuf", 34, -70, 200, {"pas", "cabuf", "Ca_HVA", "SK_E2"},
     {{"pas", "g", 1e-4}, {"pas", "e", -70}, {"Ca_HVA", "gCa_HVAbar", 0.002}, {"SK_E2", "gSK_E2bar", 0.01}},
     {{20, 100, 0.3}}, {{0}}, 0, -85, 0, 1},
    /* the solver forms (tests/common/nmodl_driver.h): recursion, KINETIC loops and VERBATIM, derivimplicit,
     * cnexp's fallback, DERIVATIVE SOLVEs outside BREAKPOINT, array STATEs, NONLINEAR in BREAKPOINT, '~+' */
    NMODL_FORM_CASES,
};

/* test/ftab.mod's tables, as validation/nmodl_neuron_traces.py's ftab_tables() makes them: ninf over
 * v at uneven abscissae; ntau over v (16 points, -100 to 50 mV) and q (3 points, 1 to 3) */
static double ft_x[10] = {-100, -85, -70, -62, -50, -35, -20, 0, 30, 60}, ft_ninf[10], ft_tau[48];
static ns_mech_ftable ft_tables[2];
static const ns_mech_ftable *ftab_tables(void) {
    for (int i = 0; i < 10; ++i) ft_ninf[i] = 1 / (1 + exp(-(ft_x[i] + 45) / 9));
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 3; ++j) {
            const double a = (-100 + 10 * i + 50) / 25.0;
            ft_tau[3 * i + j] = 1 + 4 * exp(-(a * a)) * (0.5 + 0.4 * j);
        }
    ft_tables[0] = (ns_mech_ftable){1, {10}, {ft_x}, {0}, {0}, ft_ninf};
    ft_tables[1] = (ns_mech_ftable){2, {16, 3}, {NULL, NULL}, {-100, 1}, {50, 3}, ft_tau};
    return ft_tables;
}

static void run_case(ns_mech_library_t *const *libs, int n_libs, const tcase *tc) {
    comp c;
    memset(&c, 0, sizeof c);
    if (!strcmp(tc->name, "ftab")) c.ftable = ftab_tables();
    c.celsius = tc->celsius;
    for (int k = 0; k < MAX_MECH && tc->mechs[k]; ++k) {
        const ns_mech_desc *d = find(libs, n_libs, tc->mechs[k]);
        CHECK_MSG(d != NULL, "%s: no mechanism %s", tc->name, tc->mechs[k]);
        if (!d || add_mech(&c, d)) { free_comp(&c); return; }
    }
    for (int k = 0; k < 24 && tc->params[k].mech; ++k) {
        for (int j = 0; j < c.n; ++j)
            if (!strcmp(c.m[j].d->name, tc->params[k].mech)) {
                int idx = -1, gidx = -1;
                if (ns_mech_field_index(c.m[j].d, tc->params[k].name, &idx) == NS_OK) c.m[j].fields[idx] = tc->params[k].value;
                else {
                    CHECK_OK(ns_mech_global_index(c.m[j].d, tc->params[k].name, &gidx));
                    if (gidx >= 0) c.m[j].globals[gidx] = tc->params[k].value; /* pas e is RANGE; Ih's ehcn GLOBAL */
                }
            }
    }
    ref r;
    CHECK_MSG(read_ref(tc->name, &r) == 0, "%s: cannot read the NEURON trace", tc->name);
    long steps = (long)(tc->tstop / DT + 0.5);
    double *out = malloc((size_t)steps * 3 * sizeof *out);
    if (!out || !r.row) { free(out); free(r.row); free_comp(&c); return; }
    CHECK_MSG(simulate(&c, tc, steps, out) == 0, "%s: not finite", tc->name);
    /* compare at the recorded rows (row k is step 4k; row 0 is t = 0) */
    double sum = 0, worst = 0, worst_ca = 0, worst_e = 0, worst_p = 0;
    int n = 0;
    for (int k = 1; k < r.n; ++k) {
        long s = 4L * k - 1; /* out[s] is v after step s + 1 */
        if (s >= steps) break;
        double dv = out[3 * s] - r.row[4 * k + 1];
        sum += dv * dv;
        n++;
        if (fabs(dv) > worst) worst = fabs(dv);
        if (tc->probe) { /* relative to the trace's scale */
            double dp = fabs(out[3 * s + 1] - r.row[4 * k + 2]) / fmax(fabs(r.row[4 * k + 2]), 1e-9);
            if (dp > worst_p) worst_p = dp;
        }
        if (tc->calcium) {
            double dc = fabs(out[3 * s + 1] - r.row[4 * k + 2]) / r.row[4 * k + 2];
            double de = fabs(out[3 * s + 2] - r.row[4 * k + 3]);
            if (dc > worst_ca) worst_ca = dc;
            if (de > worst_e) worst_e = de;
        }
    }
    double rms = n ? sqrt(sum / n) : INFINITY;
    double sp[256];
    int ns = spikes_of(out, tc->v_init, steps, sp, 256);
    double dsp = 0;
    for (int k = 0; k < ns && k < r.n_spikes; ++k)
        if (fabs(sp[k] - r.spikes[k]) > dsp) dsp = fabs(sp[k] - r.spikes[k]);
    printf("%-9s rows %5d  RMS %.3e mV  max %.3e mV  spikes %d (NEURON %d), max |dt| %.2e ms", tc->name, n, rms, worst,
           ns, r.n_spikes, dsp);
    if (tc->calcium) printf("  cai rel %.1e  eca %.1e mV", worst_ca, worst_e);
    if (tc->probe) printf("  %s rel %.1e", tc->probe, worst_p);
    printf("\n");
    CHECK_MSG(n >= 100, "%s: only %d rows", tc->name, n);
    /* The bounds are RMS 0.1 mV and 0.05 ms; the generated code does
     * NEURON's arithmetic, so the traces agree to the CSV's 12 digits (measured:
     * RMS <= 3e-9 mV, spikes within 4e-10 ms, L5soma included). The bounds
     * below leave room for another libm's exp only. */
    CHECK_MSG(rms < 1e-6, "%s: RMS %g mV", tc->name, rms);
    CHECK_MSG(worst < 1e-4, "%s: max %g mV", tc->name, worst);
    CHECK_MSG(ns == r.n_spikes, "%s: %d spikes, NEURON %d", tc->name, ns, r.n_spikes);
    CHECK_MSG(dsp < 1e-5, "%s: spike times differ by %g ms", tc->name, dsp);
    if (tc->probe) CHECK_MSG(worst_p < 1e-8, "%s: %s differs by %g (relative)", tc->name, tc->probe, worst_p);
    if (tc->calcium) {
        CHECK_MSG(worst_ca < 1e-8, "%s: cai differs by %g (relative)", tc->name, worst_ca);
        CHECK_MSG(worst_e < 1e-6, "%s: eca differs by %g mV", tc->name, worst_e);
    }
    free(out);
    free(r.row);
    free_comp(&c);
}

/* Many instances of each mechanism at scattered voltages: the contiguous path
 * (node_begin) and the node_index path with a reversed order (and ion slots
 * through ion.index) give bit-identical fields, node sums and ion sums. */
#define NI 97
typedef struct many {
    double v[NI], rhs[NI], d[NI], e[8][NI], ci[8][NI], co[8][NI], i[8][NI], didv[8][NI];
    double *fields, *fp[64], *globals, *table, weight[NI], area[NI], diam[NI];
    ns_mech_ion_view ions[8];
    int index[NI];
    double ptv[4][NI], *pp_store[4][NI], **pp[4]; /* POINTER k of instance i: &ptv[k][i] */
    ns_mech_ppack p;
} many;

static void many_setup(many *m, const ns_mech_desc *d, int scattered) {
    memset(m, 0, offsetof(many, fields));
    m->fields = calloc((size_t)d->n_fields * NI + 1, sizeof(double));
    m->globals = calloc((size_t)d->n_globals + 1, sizeof(double));
    m->table = calloc((size_t)d->table_size + 1, sizeof(double));
    for (int k = 0; k < d->n_fields; ++k) {
        m->fp[k] = m->fields + (size_t)k * NI;
        for (int i = 0; i < NI; ++i) m->fp[k][i] = d->field_defaults[k] * (1.0 + 0.01 * (i % 7));
    }
    for (int k = 0; k < d->n_globals; ++k) m->globals[k] = d->global_defaults[k];
    for (int i = 0; i < NI; ++i) {
        int node = scattered ? NI - 1 - i : i; /* instance i sits at this node */
        m->index[i] = node;
        m->v[node] = -90.0 + 130.0 * i / (NI - 1);
        m->weight[i] = 1e2 / AREA;
        m->area[node] = AREA * (1.0 + 0.01 * (i % 5));
        m->diam[node] = 20.0 + 0.1 * (i % 3);
        for (int j = 0; j < 8; ++j) {
            m->e[j][node] = 50.0 - 100.0 * j / 7.0 + 0.1 * i;
            m->ci[j][node] = 5e-5 * (1 + i % 5);
            m->co[j][node] = 2.0;
        }
    }
    for (int j = 0; j < d->n_ions && j < 8; ++j)
        m->ions[j] = (ns_mech_ion_view){m->e[j], m->ci[j], m->co[j], m->i[j], m->didv[j], scattered ? m->index : NULL};
    for (int k = 0; k < d->n_pointers && k < 4; ++k) {
        m->pp[k] = m->pp_store[k];
        for (int i = 0; i < NI; ++i) {
            m->ptv[k][i] = -60.0 + 0.3 * i;
            m->pp_store[k][i] = &m->ptv[k][i];
        }
    }
    m->p = (ns_mech_ppack){NI, 0, scattered ? m->index : NULL, 0.0, DT, 34.0, m->v, m->rhs, m->d,
                           d->kind == NS_MECH_POINT ? m->weight : NULL, m->fp, m->globals, m->table, m->ions,
                           d->n_pointers ? (double *const *const *)m->pp : NULL, m->area, m->diam,
                           NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, {0}};
    if (d->n_ftables) m->p.ftable = ftab_tables(); /* ftab.mod's (the one file with FUNCTION_TABLEs) */
}

static void many_paths(ns_mech_library_t *const *libs, int n_libs) {
    int n_mech = 0, bad = 0;
    for (int l = 0; l < n_libs; ++l)
        for (int k = 0; k < ns_mech_library_count(libs[l]); ++k) {
            const ns_mech_desc *d = ns_mech_library_get(libs[l], k);
            static many a, b;
            many_setup(&a, d, 0);
            many_setup(&b, d, 1);
            /* the BEFORE/AFTER blocks and CONSTRUCTOR too, where the loops run them */
#define HOOK(h) do { if (d->hooks[h]) { d->hooks[h](&a.p); d->hooks[h](&b.p); } } while (0)
            for (int s = 0; s < 5; ++s) {
                if (s == 0) {
                    HOOK(NS_MECH_CONSTRUCTOR);
                    HOOK(NS_MECH_BEFORE_INITIAL);
                    d->init(&a.p);
                    d->init(&b.p);
                    HOOK(NS_MECH_AFTER_INITIAL);
                }
                HOOK(NS_MECH_BEFORE_BREAKPOINT);
                d->current(&a.p);
                d->current(&b.p);
                d->state(&a.p);
                d->state(&b.p);
                HOOK(NS_MECH_AFTER_SOLVE);
                HOOK(NS_MECH_BEFORE_STEP);
#undef HOOK
                if (d->has_net_receive) { d->net_receive(&a.p, 3, 0.01); d->net_receive(&b.p, 3, 0.01); }
            }
            /* vbstore's link and sop hold the addresses of the C's own structures (its DESTRUCTOR frees them) */
            static const char *addresses = " vbstore.link vbstore.sop ";
            for (int i = 0; i < NI; ++i) {
                int node = NI - 1 - i;
                for (int f = 0; f < d->n_fields; ++f) {
                    char fk[80];
                    snprintf(fk, sizeof fk, " %s.%s ", d->name, d->field_names[f]);
                    if (!strstr(addresses, fk)) bad += memcmp(&a.fp[f][i], &b.fp[f][i], sizeof(double)) != 0;
                }
                bad += a.rhs[i] != b.rhs[node] || a.d[i] != b.d[node];
                for (int j = 0; j < d->n_ions; ++j)
                    bad += a.i[j][i] != b.i[j][node] || a.didv[j][i] != b.didv[j][node] || a.ci[j][i] != b.ci[j][node];
            }
            static const char *no_current = " CaDynamics_E2 cabuf cadifus cadn glia minipump wena nosuffix "; /* write no current */
            char key[80];
            snprintf(key, sizeof key, " %s ", d->name);
            bad += a.rhs[0] == 0.0 && d->kind == NS_MECH_DENSITY && !strstr(no_current, key);
            n_mech++;
            if (d->hooks[NS_MECH_DESTRUCTOR]) {
                d->hooks[NS_MECH_DESTRUCTOR](&a.p);
                d->hooks[NS_MECH_DESTRUCTOR](&b.p);
            }
            free(a.fields); free(a.globals); free(a.table);
            free(b.fields); free(b.globals); free(b.table);
        }
    printf("%d mechanisms x %d instances: contiguous and node_index paths equal (%d differences)\n", n_mech, NI, bad);
    CHECK(n_mech == 65);
    CHECK_MSG(bad == 0, "%d differences between the contiguous and the node_index paths", bad);
}

/* The conductance d (and each ion's didv) that current() adds against NEURON's difference
 * (I(v + .001) - I(v)) / .001 of the same compiled current(), called at v and at v + .001 (rhs and
 * the ion currents): equal to rounding for every mechanism, whether it takes the difference itself
 * or, with currents affine in v, the symbolic slope after one evaluation (docs/mechanisms.md, "The
 * conductance"). A wrong slope (a term lost in the chain rule) differs at the first digit. */
static void slope_sums(const ns_mech_desc *d, many *m, double *rhs, double *dd, double *didv) {
    memset(m->rhs, 0, sizeof m->rhs);
    memset(m->d, 0, sizeof m->d);
    memset(m->i, 0, sizeof m->i);
    memset(m->didv, 0, sizeof m->didv);
    d->current(&m->p);
    memcpy(rhs, m->rhs, sizeof m->rhs);
    if (dd) memcpy(dd, m->d, sizeof m->d);
    for (int j = 0; j < d->n_ions && j < 8; ++j) {
        if (didv) memcpy(didv + (size_t)j * NI, m->didv[j], sizeof m->didv[j]);
        memcpy(rhs + (size_t)(1 + j) * NI, m->i[j], sizeof m->i[j]);
    }
}
static void slopes(ns_mech_library_t *const *libs, int n_libs) {
    /* not smooth at the step's scale: lang's clip() jumps at v = ena, nonlin's current is a NEWTON
     * solution to 1e-6 from the last one (its d a difference of two such) */
    static const char *skip = " lang nonlin ";
    int n_mech = 0;
    for (int l = 0; l < n_libs; ++l)
        for (int k = 0; k < ns_mech_library_count(libs[l]); ++k) {
            const ns_mech_desc *d = ns_mech_library_get(libs[l], k);
            char key[80];
            snprintf(key, sizeof key, " %s ", d->name);
            if (strstr(skip, key)) continue;
            static many a;
            static double r0[9 * NI], r1[9 * NI], g[NI], gi[8 * NI];
            many_setup(&a, d, 0);
            if (d->hooks[NS_MECH_CONSTRUCTOR]) d->hooks[NS_MECH_CONSTRUCTOR](&a.p);
            d->init(&a.p);
            for (int s = 0; s < 3; ++s) {
                d->current(&a.p);
                d->state(&a.p);
            }
            slope_sums(d, &a, r0, g, gi);
            for (int i = 0; i < NI; ++i) a.v[i] += .001;
            slope_sums(d, &a, r1, NULL, NULL);
            double worst = 0.0;
            for (int i = 0; i < NI; ++i) {
                /* rhs gets -I (an ELECTRODE_CURRENT +I) and d dI/dv (-dI/dv): d = -(rhs(v + .001) - rhs(v)) / .001 */
                const double fd = -(r1[i] - r0[i]) / .001, scale = fabs(g[i]) + 1e-9 * fabs(r0[i]) / .001;
                if (scale > 0.0 && fabs(g[i] - fd) / scale > worst) worst = fabs(g[i] - fd) / scale;
                for (int j = 0; j < d->n_ions && j < 8; ++j) {
                    const double *i0 = r0 + (size_t)(1 + j) * NI, *i1 = r1 + (size_t)(1 + j) * NI;
                    const double fi = (i1[i] - i0[i]) / .001, si = fabs(gi[j * NI + i]) + 1e-9 * fabs(i0[i]) / .001;
                    if (si > 0.0 && fabs(gi[j * NI + i] - fi) / si > worst) worst = fabs(gi[j * NI + i] - fi) / si;
                }
            }
            CHECK_MSG(worst < 1e-6, "%s: d or didv differs from the difference at v + .001 by %.1e (relative)",
                      d->name, worst);
            if (d->hooks[NS_MECH_DESTRUCTOR]) d->hooks[NS_MECH_DESTRUCTOR](&a.p);
            free(a.fields); free(a.globals); free(a.table);
            n_mech++;
        }
    printf("%d mechanisms: d and didv equal the difference at v + .001 to rounding\n", n_mech);
    CHECK(n_mech > 40);
}

/* derivimplicit and euler on x' = (xinf - x)/tau against their closed forms,
 * a coupled pair for derivimplicit, and the library's errors. */
static const char *SOLVERS_MOD =
    "NEURON { SUFFIX solvers RANGE tau, xinf, fv GLOBAL k }\n"
    "PARAMETER { tau = 3 xinf = 2 k = 1 }\n"
    "ASSIGNED { fv }\n"
    "STATE { x y z w }\n"
    "INITIAL { x = 0 y = 0 z = 0 w = 1 }\n"
    "BREAKPOINT { SOLVE di METHOD derivimplicit SOLVE eu METHOD euler\n  fv = f(v) }\n"
    "FUNCTION f(u) {\n  TABLE DEPEND k FROM -100 TO 100 WITH 200\n  f = k*u*u\n}\n"
    "DERIVATIVE di {\n  x' = (xinf - x)/tau\n  y' = x - y  : coupled to x\n}\n"
    "DERIVATIVE eu {\n  z' = (xinf - z)/tau\n  w' = -w*w : nonlinear is fine for euler\n}\n";

static void solvers(const char *dir) {
    char path[600];
    snprintf(path, sizeof path, "%s/solvers.mod", dir);
    FILE *f = fopen(path, "w");
    if (!f) return;
    fputs(SOLVERS_MOD, f);
    fclose(f);
    char lib[600];
    snprintf(lib, sizeof lib, "%s/libsolvers.so", dir);
    CHECK_OK(ns_mechanisms_build(dir, lib, NULL));
    ns_mech_library_t *l = NULL;
    CHECK_OK(ns_mech_library_open(lib, &l));
    if (!l) return;
    const ns_mech_desc *d = NULL;
    CHECK_OK(ns_mech_library_find(l, "solvers", &d));
    CHECK(ns_mech_library_find(l, "nosuch", &d) == NS_ERR_INVALID_ARGUMENT);
    CHECK(strstr(ns_last_error(), "solvers") != NULL);
    CHECK_OK(ns_mech_library_find(l, "solvers", &d));
    if (d) {
        comp c;
        memset(&c, 0, sizeof c);
        c.v = -65;
        if (add_mech(&c, d) == 0) {
            int ix, iy, iz, iw;
            CHECK_OK(ns_mech_field_index(d, "x", &ix));
            CHECK_OK(ns_mech_field_index(d, "y", &iy));
            CHECK_OK(ns_mech_field_index(d, "z", &iz));
            CHECK_OK(ns_mech_field_index(d, "w", &iw));
            d->init(&c.m[0].p);
            double x = 0, y = 0, z = 0, w = 1, worst = 0;
            const double dt = 0.5;
            c.m[0].p.dt = dt;
            for (int s = 0; s < 40; ++s) {
                d->state(&c.m[0].p);
                /* backward Euler of the linear pair, solved exactly */
                double xn = (x + dt * 2.0 / 3.0) / (1.0 + dt / 3.0);
                double yn = (y + dt * xn) / (1.0 + dt);
                double zn = z + dt * (2.0 - z) / 3.0, wn = w + dt * (-w * w);
                x = xn, y = yn, z = zn, w = wn;
                const double *F = c.m[0].fields;
                double e = fmax(fmax(fabs(F[ix] - x), fabs(F[iy] - y)), fmax(fabs(F[iz] - z), fabs(F[iw] - w)));
                if (e > worst) worst = e;
            }
            printf("derivimplicit and euler against their closed forms: max error %.2e\n", worst);
            CHECK(worst < 1e-9);
            /* TABLE in a FUNCTION: at v = -65.3, entries -66 and -65, theta 0.7 */
            int ifv, ik, iu;
            CHECK_OK(ns_mech_field_index(d, "fv", &ifv));
            CHECK_OK(ns_mech_global_index(d, "k", &ik));
            CHECK_OK(ns_mech_global_index(d, "usetable_f", &iu));
            c.v = -65.3; /* a BREAKPOINT without currents runs in state() (nocmodl's nrn_state) */
            d->state(&c.m[0].p);
            double tab = 4356.0 + (-65.3 - (-100.0) - 34.0) * (4225.0 - 4356.0);
            CHECK_MSG(fabs(c.m[0].fields[ifv] - tab) < 1e-9, "TABLE: %.12g, want %.12g", c.m[0].fields[ifv], tab);
            c.m[0].globals[ik] = 2.0; /* a DEPEND global changed: state() rebuilds the table */
            CHECK(d->table_update(&c.m[0].p) == 1 && d->table_update(&c.m[0].p) == 0);
            d->state(&c.m[0].p);
            CHECK(fabs(c.m[0].fields[ifv] - 2.0 * tab) < 1e-9);
            c.m[0].globals[iu] = 0.0; /* usetable_f = 0: the exact function */
            d->state(&c.m[0].p);
            CHECK(fabs(c.m[0].fields[ifv] - 2.0 * 65.3 * 65.3) < 1e-9);
        }
        free_comp(&c);
        int idx = 0;
        CHECK(ns_mech_field_index(d, "tua", &idx) == NS_ERR_INVALID_ARGUMENT);
        CHECK_MSG(strstr(ns_last_error(), "'tua'") && strstr(ns_last_error(), "tau, xinf, fv, x, y, z, w"), "%s",
                  ns_last_error());
    }
    ns_mech_library_close(l);
    /* a file the compiler rejects (a name that is a C keyword) and a file the
     * translator rejects: errors, and no library left behind */
    f = fopen(path, "w");
    if (f) {
        fputs("NEURON { SUFFIX bad }\nBREAKPOINT {\n  PARTIAL\n}\n", f);
        fclose(f);
    }
    remove(lib);
    ns_status s = ns_mechanisms_build(dir, lib, NULL);
    CHECK(s == NS_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(ns_last_error(), "solvers.mod:3") && strstr(ns_last_error(), "PARTIAL"), "%s", ns_last_error());
    FILE *g = fopen(lib, "r");
    CHECK(g == NULL);
    if (g) fclose(g);
    CHECK(ns_mech_library_open(path, &l) == NS_ERR_IO); /* not a shared library */
}

int main(void) {
    if (tmpdir_make("ns_nmodl")) return 77;
    ns_mechanisms_build_options o = {0};
    o.keep_sources = 0;
    enum { N_LIBS = 6 };
    ns_mech_library_t *libs[N_LIBS] = {NULL, NULL, NULL, NULL, NULL, NULL};
    /* verbatim: VERBATIM C of which some is not device C (vbrand's mcell_ran4_init, vbstore's structures that
     * its host CONSTRUCTOR makes: docs/mechanisms.md, "VERBATIM on the GPU"); its own folder, as the others
     * are built for the GPU too */
    const char *dirs[N_LIBS] = {MECH_DIR "/neuron", MECH_DIR "/bbp", MECH_DIR "/test", MECH_DIR "/kinetic",
                                MECH_DIR "/electrode", MECH_DIR "/verbatim"};
    const char *names[N_LIBS] = {"libneuron.so", "libbbp.so", "libtest.so", "libkinetic.so", "libelectrode.so",
                                 "libverbatim.so"};
    for (int k = 0, skip = 0; k < N_LIBS; ++k) {
        /* BBP's: the run's fixture mechlib_bbp (tests/CMakeLists.txt) */
        libs[k] = k == 1 ? test_mech_shared("NS_TEST_LIBBBP", dirs[k], names[k], &skip)
                         : test_mech_build(dirs[k], names[k], &o, &skip);
        if (skip) return tmpdir_remove(), 77;
        if (!libs[k]) { tmpdir_remove(); return check_summary("test_nmodl_neuron"); }
    }
    CHECK(ns_mech_library_count(libs[0]) == 4);
    CHECK(ns_mech_library_count(libs[1]) == 12);
    CHECK(ns_mech_library_count(libs[2]) == 38);
    CHECK(ns_mech_library_count(libs[3]) == 5);
    CHECK(ns_mech_library_count(libs[4]) == 2);
    CHECK(ns_mech_library_count(libs[5]) == 4);
    many_paths(libs, N_LIBS);
    slopes(libs, N_LIBS);
    for (size_t k = 0; k < sizeof CASES / sizeof *CASES; ++k) run_case(libs, N_LIBS, &CASES[k]);
    for (int k = 0; k < N_LIBS; ++k) ns_mech_library_close(libs[k]);
    char *sdir = tmp("solvers");
    char cmd[700];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", sdir);
    if (system(cmd) == 0) solvers(sdir);
    tmpdir_remove();
    return check_summary("test_nmodl_neuron");
}
