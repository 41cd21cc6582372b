/* An independent one-compartment driver for generated mechanisms: NEURON's
 * finitialize and fixed-step fadvance (fadvance.cpp, nrn_fixed_step_thread)
 * for one isopotential compartment (L = diam = 20 um, cm = 1 uF/cm^2) in
 * NEURON's order, validated against NEURON 9.0.2's traces by
 * test_nmodl_neuron.c and used as the reference of the simulation's model
 * loop by test_sim_model_cc.c. IClamp runs right after the first mechanism
 * (pas in NEURON's type order); a CONSTRUCTOR runs when the instance is made, a DESTRUCTOR
 * when it is freed. Include after check.h and neurosolve/nmodl.h. */
#ifndef NS_TESTS_NMODL_DRIVER_H
#define NS_TESTS_NMODL_DRIVER_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "neurosolve/nmodl.h"

#define DT 0.025
#define AREA (3.14159265358979323846 * 20.0 * 20.0) /* [um^2] NEURON's area of L = diam = 20 */
#define MAX_MECH 16

enum { ION_NA, ION_K, ION_CA, N_IONS };
static const char *ION_NAMES[N_IONS] = {"na", "k", "ca"};

typedef struct inst {
    const ns_mech_desc *d;
    double *fields;       /* n_fields values of the one instance */
    double *fp[64];
    double *globals;
    double *table;
    ns_mech_ion_view ions[8];
    double weight;
    ns_mech_ppack p;
    int writes_ci[8];     /* ion index (ION_*) whose concentration it writes, per desc ion; -1 */
} inst;

typedef struct comp {
    double v, rhs, d, t, celsius;
    double area, diam; /* the compartment's, for area/diam in a mechanism */
    double e[N_IONS], ci[N_IONS], co[N_IONS], i[N_IONS], didv[N_IONS];
    int n;
    inst m[MAX_MECH];
    const ns_mech_ftable *ftable; /* FUNCTION_TABLE values, for a case whose mechanism has them */
} comp;

typedef struct param { const char *mech, *name; double value; } param;
typedef struct clamp { double del, dur, amp; } clamp;
typedef struct event { double t, w; } event;

typedef struct tcase {
    const char *name;
    double celsius, v_init, tstop;
    const char *mechs[MAX_MECH]; /* in NEURON's order: pas, those that write a concentration, the others by name */
    param params[24];
    clamp clamps[2];
    event events[2];
    double ena, ek, eca;         /* 0: NEURON's default */
    int calcium;                 /* compare cai and eca too */
    const char *probe;           /* or compare this field of the last mechanism (one without a current) */
} tcase;

/* Shared cases: each BBP channel alone with pas under two clamps, and the L5 soma (all eleven BBP
 * mechanisms of the Hay model's soma) over tstop ms */
#define NMODL_CHAN(n, g, val)                                                                                \
    {n, 34, -70, 120, {"pas", n}, {{"pas", "g", 1e-4}, {"pas", "e", -70}, {n, g, val}},                      \
     {{10, 40, 0.15}, {60, 40, -0.15}}, {{0}}, 50, -85, 120, 0}
#define NMODL_BBP_CHANNELS                                                                                   \
    NMODL_CHAN("NaTs2_t", "gNaTs2_tbar", 0.01), NMODL_CHAN("NaTa_t", "gNaTa_tbar", 0.01),                      \
        NMODL_CHAN("Nap_Et2", "gNap_Et2bar", 0.001), NMODL_CHAN("K_Pst", "gK_Pstbar", 0.01),                   \
        NMODL_CHAN("K_Tst", "gK_Tstbar", 0.01), NMODL_CHAN("SKv3_1", "gSKv3_1bar", 0.01),                      \
        NMODL_CHAN("Im", "gImbar", 0.001), NMODL_CHAN("Ih", "gIhbar", 0.001),                                  \
        NMODL_CHAN("Ca_HVA", "gCa_HVAbar", 0.001), NMODL_CHAN("Ca_LVAst", "gCa_LVAstbar", 0.001)
#define NMODL_L5SOMA(tstop)                                                                                  \
    {"L5soma", 34, -80, tstop,                                                                               \
     {"pas", "CaDynamics_E2", "Ca_HVA", "Ca_LVAst", "Ih", "K_Pst", "K_Tst", "NaTs2_t", "Nap_Et2", "SK_E2", "SKv3_1"}, \
     {{"NaTs2_t", "gNaTs2_tbar", 0.983955}, {"SKv3_1", "gSKv3_1bar", 0.303472}, {"SK_E2", "gSK_E2bar", 0.008407}, \
      {"K_Tst", "gK_Tstbar", 0.0812}, {"K_Pst", "gK_Pstbar", 0.00223}, {"Nap_Et2", "gNap_Et2bar", 0.00172},   \
      {"Ih", "gIhbar", 0.0002}, {"Ca_HVA", "gCa_HVAbar", 0.000994}, {"Ca_LVAst", "gCa_LVAstbar", 0.000333},   \
      {"CaDynamics_E2", "gamma", 0.000609}, {"CaDynamics_E2", "decay", 210.485284}, {"pas", "g", 3.38e-5},   \
      {"pas", "e", -90}},                                                                                     \
     {{20, 200, 0.25}}, {{0}}, 50, -85, 0, 1}

/* The solver-form cases: test_nmodl_neuron compares each with NEURON 9.0.2's trace, test_nmodl_gpu_forms
 * runs each with the device's forms of the generated code against the host's C. Their files under
 * data/mechanisms/test (NMODL_FORM_FILES(dir): the paths, space-separated) and cases, in one order: a form
 * is added here once. recur.mod: recursive FUNCTIONs and PROCEDUREs (hh's n gate by recursion, a TABLE'd
 * FUNCTION over it); vbkin.mod: VERBATIM C in a KINETIC block (its rates at each Newton step); kloop.mod: a
 * FROM loop to a PARAMETER in a KINETIC block; kfloc.mod: LOCALs inside its FROM loops, one nested; hhdi.mod:
 * derivimplicit as NEURON's Newton; cadn.mod: cnexp on an equation not linear in its state (run by
 * derivimplicit, as nocmodl) and STEADYSTATE derivimplicit in INITIAL; dinit.mod: a DERIVATIVE that INITIAL
 * and a PROCEDURE SOLVE by derivimplicit while BREAKPOINT's is cnexp; arrcn.mod, arrdi.mod: array STATEs in a
 * DERIVATIVE block by cnexp and by derivimplicit; nonlinbp.mod: a NONLINEAR block SOLVEd in BREAKPOINT;
 * linadd.mod: '~+' in NONLINEAR and LINEAR blocks; linif.mod: equations inside an if, a FROM and a WHILE
 * loop in them; kinit.mod: a KINETIC block SOLVEd by sparse in INITIAL and a PROCEDURE; karreu.mod,
 * karrrk.mod: a KINETIC scheme of array STATEs by euler and by runge. */
#define NMODL_FORM_FILES(dir)                                                                                \
    dir "/test/recur.mod " dir "/test/vbkin.mod " dir "/test/kloop.mod " dir "/test/kfloc.mod " dir          \
        "/test/hhdi.mod " dir "/test/cadn.mod " dir "/test/dinit.mod " dir "/test/arrcn.mod " dir            \
        "/test/arrdi.mod " dir "/test/nonlinbp.mod " dir "/test/linadd.mod " dir "/test/linif.mod " dir       \
        "/test/kinit.mod " dir "/test/karreu.mod " dir "/test/karrrk.mod"
#define NMODL_FORM_CASES                                                                                     \
    {"recur", 6.3, -65, 50, {"hh", "recur"}, {{"hh", "gkbar", 0}}, {{2, 30, 0.2}}, {{0, 0}}, 0, 0, 0, 0, "ntau"}, \
        {"vbkin", 20, -65, 50, {"hh", "vbkin"}, {{"hh", "gkbar", 0}}, {{2, 30, 0.2}}, {{0, 0}}, 0, 0, 0, 0, "kf"}, \
        {"kloop", 6.3, -65, 50, {"hh", "kloop"}, {{"hh", "gkbar", 0}}, {{2, 30, 0.2}}, {{0, 0}}, 0, 0, 0, 0, "o"}, \
        {"kfloc", 6.3, -65, 50, {"hh", "kfloc"}, {{"hh", "gkbar", 0}}, {{2, 30, 0.2}}, {{0, 0}}, 0, 0, 0, 0, "o"}, \
        {"hhdi", 6.3, -65, 50, {"hhdi"}, {{0}}, {{2, 30, 0.2}}, {{0, 0}}, 0, 0, 0, 0},                         \
        {"cadn", 34, -70, 200, {"pas", "cadn", "Ca_HVA", "SK_E2"},                                             \
         {{"pas", "g", 1e-4}, {"pas", "e", -70}, {"Ca_HVA", "gCa_HVAbar", 0.002}, {"SK_E2", "gSK_E2bar", 0.01}}, \
         {{20, 100, 0.3}}, {{0}}, 0, -85, 0, 1},                                                                \
        {"dinit", 6.3, -65, 40, {"pas", "dinit"}, {{0}}, {{5, 20, 0.1}}, {{0, 0}}, 0, 0, 0, 0, "m"},           \
        {"arrcn", 6.3, -65, 40, {"pas", "arrcn"}, {{0}}, {{5, 20, 0.1}}, {{0, 0}}, 0, 0, 0, 0, "o"},           \
        {"arrdi", 6.3, -65, 40, {"pas", "arrdi"}, {{0}}, {{5, 20, 0.1}}, {{0, 0}}, 0, 0, 0, 0, "o"},           \
        {"nonlinbp", 6.3, -65, 40, {"pas", "nonlinbp"}, {{0}}, {{5, 20, 0.1}}, {{0, 0}}, 0, 0, 0, 0, "xs"},    \
        {"linadd", 6.3, -65, 40, {"pas", "linadd"}, {{0}}, {{5, 20, 0.1}}, {{0, 0}}, 0, 0, 0, 0, "zs"},        \
        {"linif", 6.3, -65, 40, {"pas", "linif"}, {{0}}, {{5, 20, 0.1}}, {{0, 0}}, 0, 0, 0, 0, "zs"},          \
        {"kinit", 6.3, -65, 40, {"pas", "kinit"}, {{0}}, {{5, 20, 0.1}}, {{0, 0}}, 0, 0, 0, 0, "o"},           \
        {"karreu", 6.3, -65, 40, {"pas", "karreu"}, {{0}}, {{5, 20, 0.1}}, {{0, 0}}, 0, 0, 0, 0, "i"},         \
        {"karrrk", 6.3, -65, 40, {"pas", "karrrk"}, {{0}}, {{5, 20, 0.1}}, {{0, 0}}, 0, 0, 0, 0, "i"}

static const ns_mech_desc *find(ns_mech_library_t *const *libs, int n_libs, const char *name) {
    for (int l = 0; l < n_libs; ++l)
        for (int k = 0; k < ns_mech_library_count(libs[l]); ++k)
            if (!strcmp(ns_mech_library_get(libs[l], k)->name, name)) return ns_mech_library_get(libs[l], k);
    return NULL;
}

static int ion_of(const char *name) {
    for (int k = 0; k < N_IONS; ++k)
        if (!strcmp(ION_NAMES[k], name)) return k;
    return -1;
}

static int add_mech(comp *c, const ns_mech_desc *d) {
    inst *m = &c->m[c->n++];
    memset(m, 0, sizeof *m);
    m->d = d;
    m->fields = calloc((size_t)d->n_fields + 1, sizeof(double));
    m->globals = calloc((size_t)d->n_globals + 1, sizeof(double));
    m->table = calloc((size_t)d->table_size + 1, sizeof(double));
    if (!m->fields || !m->globals || !m->table || d->n_fields > 64) return -1;
    for (int k = 0; k < d->n_fields; ++k) {
        m->fields[k] = d->field_defaults[k];
        m->fp[k] = &m->fields[k];
    }
    for (int k = 0; k < d->n_globals; ++k) m->globals[k] = d->global_defaults[k];
    for (int k = 0; k < d->n_ions; ++k) {
        int ion = ion_of(d->ions[k].name);
        if (ion < 0) return -1;
        m->ions[k] = (ns_mech_ion_view){&c->e[ion], &c->ci[ion], &c->co[ion], &c->i[ion], &c->didv[ion], NULL};
        m->writes_ci[k] = (d->ions[k].flags & NS_MECH_ION_WRITE_CI) ? ion : -1;
    }
    m->weight = 1e2 / AREA;
    m->p = (ns_mech_ppack){1, 0, NULL, 0.0, DT, c->celsius, &c->v, &c->rhs, &c->d,
                           d->kind == NS_MECH_POINT ? &m->weight : NULL, m->fp, m->globals, m->table, m->ions,
                           NULL, &c->area, &c->diam, NULL, NULL, NULL, NULL, NULL, NULL, c->ftable, NULL, NULL, {0}};
    c->area = AREA;
    c->diam = 20.0;
    if (d->hooks[NS_MECH_CONSTRUCTOR]) d->hooks[NS_MECH_CONSTRUCTOR](&m->p); /* NEURON's, at the instance's making */
    return 0;
}

static void free_comp(comp *c) {
    for (int k = 0; k < c->n; ++k) {
        if (c->m[k].d->hooks[NS_MECH_DESTRUCTOR]) c->m[k].d->hooks[NS_MECH_DESTRUCTOR](&c->m[k].p);
        free(c->m[k].fields);
        free(c->m[k].globals);
        free(c->m[k].table);
    }
}

static void nernst_after(comp *c, inst *m) {
    for (int k = 0; k < m->d->n_ions; ++k)
        if (m->writes_ci[k] >= 0) {
            int ion = m->writes_ci[k];
            c->e[ion] = ns_mech_nernst(c->ci[ion], c->co[ion], m->d->ions[k].charge, c->celsius);
        }
}

/* NEURON's finitialize and fadvance for one compartment (fadvance.cpp,
 * nrn_fixed_step_thread): events, t += dt/2, currents (pas, IClamp, the
 * rest), v += rhs / d, t += dt/2, states; Nernst after a concentration write.
 * Writes v (and cai or the probed field, eca) of every step into out[step * 3 + {0,1,2}]. */
static int simulate(comp *c, const tcase *tc, long steps, double *out) {
    int probe = -1;
    if (tc->probe && ns_mech_field_index(c->m[c->n - 1].d, tc->probe, &probe) != NS_OK) return -1;
    c->t = 0.0;
    c->v = tc->v_init;
    /* NEURON's ion defaults (na_ion, k_ion, ca_ion) */
    const double e0[N_IONS] = {tc->ena ? tc->ena : 50.0, tc->ek ? tc->ek : -77.0, tc->eca ? tc->eca : 132.4579341637009};
    const double ci0[N_IONS] = {10.0, 54.4, 5e-5}, co0[N_IONS] = {140.0, 2.5, 2.0};
    for (int k = 0; k < N_IONS; ++k) {
        c->e[k] = e0[k];
        c->ci[k] = ci0[k];
        c->co[k] = co0[k];
    }
    for (int j = 0; j < c->n; ++j) /* an ion whose concentration is written gets e by Nernst */
        for (int k = 0; k < c->m[j].d->n_ions; ++k)
            if (c->m[j].writes_ci[k] >= 0) nernst_after(c, &c->m[j]);
    for (int j = 0; j < c->n; ++j) {
        c->m[j].p.t = c->t;
        c->m[j].d->init(&c->m[j].p);
        nernst_after(c, &c->m[j]);
    }
    /* finitialize's evaluation of the currents (setup_tree_matrix): seen by a
     * step only where a BREAKPOINT with currents writes e (WRITE ena) */
    for (int j = 0; j < c->n; ++j) {
        int writes_e = 0;
        for (int k = 0; k < c->m[j].d->n_ions; ++k) writes_e |= (c->m[j].d->ions[k].flags & NS_MECH_ION_WRITE_E) != 0;
        if (writes_e) c->m[j].d->current(&c->m[j].p);
    }
    c->rhs = c->d = 0.0;
    for (int k = 0; k < N_IONS; ++k) c->i[k] = c->didv[k] = 0.0;
    int delivered[2] = {0, 0};
    for (long s = 0; s < steps; ++s) {
        for (int e = 0; e < 2; ++e) /* NEURON delivers events due by t + dt/2 */
            if (tc->events[e].w != 0.0 && !delivered[e] && tc->events[e].t <= c->t + 0.5 * DT) {
                for (int j = 0; j < c->n; ++j)
                    if (c->m[j].d->has_net_receive) c->m[j].d->net_receive(&c->m[j].p, 0, tc->events[e].w);
                delivered[e] = 1;
            }
        c->t += 0.5 * DT;
        c->rhs = c->d = 0.0;
        for (int k = 0; k < N_IONS; ++k) c->i[k] = c->didv[k] = 0.0;
        for (int j = 0; j < c->n; ++j) {
            c->m[j].p.t = c->t;
            c->m[j].d->current(&c->m[j].p);
            if (j == 0) /* IClamp after pas: NEURON's type order */
                for (int k = 0; k < 2; ++k)
                    if (tc->clamps[k].amp != 0.0 && c->t < tc->clamps[k].del + tc->clamps[k].dur &&
                        c->t >= tc->clamps[k].del)
                        c->rhs += tc->clamps[k].amp * (1e2 / AREA);
        }
        c->d += 1.0 * 1e-3 / DT;
        c->v += c->rhs / c->d;
        c->t += 0.5 * DT;
        /* NEURON recomputes e by Nernst at the start of the current phase
         * (ion_cur), from the concentration of the step before: the same e in
         * every current as here, but its recorded e lags one step */
        out[3 * s + 2] = c->e[ION_CA];
        for (int j = 0; j < c->n; ++j) {
            c->m[j].p.t = c->t;
            c->m[j].d->state(&c->m[j].p);
            nernst_after(c, &c->m[j]);
        }
        out[3 * s] = c->v;
        out[3 * s + 1] = probe >= 0 ? c->m[c->n - 1].fields[probe] : c->ci[ION_CA];
        if (!isfinite(c->v)) return -1;
    }
    return 0;
}

#endif
