/* Models (ns_sim_model: NMODL mechanisms in the cable simulation) without a
 * C compiler (the built-in pas, hh, ExpSyn, Exp2Syn):
 *   1. src/mech/builtin/ is the translator's output for data/mechanisms/neuron
 *      (regenerated in memory, compared byte for byte);
 *   2. a model `all.insert = hh` (and hh + pas per region, ion and hh
 *      parameters, usetable_hh = 0) gives traces and spike times bit-identical
 *      to the hand-written hh and pas of ns_sim_params, on three bundled
 *      morphologies of different kinds, 5 cells each with different clamps,
 *      sequential and OpenMP (lane blocks of width > 1);
 *   3. the distance d of the expressions against NEURON's
 *      h.distance(soma(0.5), seg) (tests/data/neuron_distances/, made by
 *      validation/neuron_distances.py), region selection, statement order,
 *      and the expression language's semantics (precedence, comparisons,
 *      logic, functions, errors);
 *   4. bad input: each error's status and message.
 * test_sim_model_cc.c covers what needs a mechanism library built with cc. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mech/builtin/builtin.h"
#include "mech/model_impl.h"
#include "check.h"
#include "cell_cylinder.h"
#include "neurosolve/neurosolve.h"
#include "neurosolve/nmodl.h"
#include "test_tmpdir.h"

#define SRC_DIR NS_TEST_DATA "/../.."
#define N_PER_SHAPE 5
#define MAX_SITES 4

static const char *const SHAPES[3] = {"l5pc_bbp_axon.swc", "ca1_h10.swc", "purk_dbbs.swc"};

static ns_cell_t *load_cell(const char *file) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", NS_MORPHOLOGIES, file);
    ns_morph_t *morph = NULL;
    ns_cell_t *cell = NULL;
    CHECK_OK(ns_swc_read(path, NULL, &morph));
    if (morph) CHECK_OK(ns_discretize(morph, NULL, &cell)); /* d_lambda 0.1 at 100 Hz, Ra 35.4 */
    ns_morph_destroy(morph);
    return cell;
}

/* ------------------------------------------------ 1. the generated built-ins */

static char *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap + 1);
    for (size_t got; buf && (got = fread(buf + len, 1, cap - len, f)) > 0;) {
        len += got;
        if (len == cap) {
            char *b = realloc(buf, 2 * cap + 1);
            if (!b) { free(buf); buf = NULL; break; }
            buf = b;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf) buf[len] = 0;
    *n = len;
    return buf;
}

static void builtins_are_generated(void) {
    static const char *const files[4][2] = {
        {"hh", "hh"}, {"passive", "pas"}, {"expsyn", "ExpSyn"}, {"exp2syn", "Exp2Syn"}};
    static const char *const ext[3] = {"h", "c", "cu"};
    int compared = 0;
    for (int k = 0; k < 4; ++k) {
        char path[1024];
        snprintf(path, sizeof path, "%s/data/mechanisms/neuron/%s.mod", SRC_DIR, files[k][0]);
        ns_nmodl_t *m = NULL;
        CHECK_OK(ns_nmodl_parse_file(path, &m));
        if (!m) continue;
        CHECK_MSG(strcmp(ns_nmodl_name(m), files[k][1]) == 0, "%s.mod is %s", files[k][0], ns_nmodl_name(m));
        for (int t = 0; t < 3; ++t) {
            char *text = NULL;
            CHECK_OK(ns_nmodl_emit(m, (ns_nmodl_target)t, &text));
            snprintf(path, sizeof path, "%s/src/mech/builtin/%s.%s", SRC_DIR, files[k][1], ext[t]);
            size_t n = 0;
            char *file = read_all(path, &n);
            CHECK_MSG(file != NULL, "cannot read %s", path);
            /* the per-step path's CUDA graph runs the density built-ins in launches whose t is fixed at
             * the capture (ns_sim_step_graph_rule's time_free): their code reads no t (p->t) */
            for (const char *q = text; t == 0 && k < 2 && q && (q = strstr(q, "p->t")) != NULL; q += 4)
                CHECK_MSG(q[4] == '_' || (q[4] >= 'a' && q[4] <= 'z'), "%s.h reads t: the GPU's step graph needs time_free",
                          files[k][1]);
            if (text && file) {
                const size_t tn = strlen(text);
                size_t at = 0;
                while (at < n && at < tn && text[at] == file[at]) ++at;
                CHECK_MSG(tn == n && at == n,
                          "%s differs from the translator's output for %s.mod (%zu and %zu bytes, first difference "
                          "at byte %zu): regenerate (src/mech/builtin/README.md)",
                          path, files[k][0], n, tn, at);
                compared++;
            }
            free(file);
            ns_nmodl_free(text);
        }
        ns_nmodl_destroy(m);
    }
    printf("built-ins: %d generated files equal to src/mech/builtin/\n", compared);
    CHECK(compared == 12);
}

/* ------------------------------------------ 2. model hh == hand-written hh */

typedef struct run_out {
    int64_t samples;
    int32_t sites;
    double *traces;
    int64_t n_spikes[3 * N_PER_SHAPE];
    double *spikes[3 * N_PER_SHAPE];
    int64_t total_spikes;
    ns_sim_gpu_mechanisms path; /* how the loop ran the mechanisms */
    double *vars;               /* the model's variables asked for, cells 0 .. 2, after the run */
} run_out;

static void run_out_free(run_out *r) {
    free(r->traces);
    free(r->vars);
    for (int c = 0; c < 3 * N_PER_SHAPE; ++c) free(r->spikes[c]);
    memset(r, 0, sizeof *r);
}

/* 3 shapes x 5 cells (cell c has shape c % 3), a clamp at every soma whose
 * amplitude grows with the cell, v recorded at the soma and three other
 * compartments of every cell. */
static int run_pop_with(ns_cell_t *const *cells, const ns_sim_params *p, const ns_sim_model_t *model,
                        ns_hines_method method, ns_sim_gpu_mechanisms mechanisms, const char *const *vars, double tstop,
                        int write_gnabar, run_out *out) {
    memset(out, 0, sizeof *out);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = NS_BACKEND_CPU;
    o.method = method;
    o.threads = method == NS_HINES_OPENMP ? 2 : 1;
    o.model = model;
    o.gpu_mechanisms = mechanisms;
    const ns_cell_t *shapes[3] = {cells[0], cells[1], cells[2]};
    ns_sim_t *sim = NULL;
    ns_status s = ns_sim_create(3, shapes, 3 * N_PER_SHAPE, NULL, p, &o, &sim);
    CHECK_OK(s);
    if (!sim) return -1;
    CHECK(ns_sim_method(sim) == method);
    for (int64_t c = 0; c < 3 * N_PER_SHAPE; ++c) {
        const ns_cell_t *cell = shapes[c % 3];
        ns_cell_info ci;
        ns_cell_get_info(cell, &ci);
        int32_t soma;
        CHECK_OK(ns_cell_locate(cell, 0, 0.5, &soma));
        /* 1.0 to 1.8 times the amplitude that makes hh everywhere fire */
        const double amp = 1.5e-4 * ci.total_area * (1.0 + 0.2 * (double)(c / 3));
        CHECK_OK(ns_sim_add_iclamp(sim, c, soma, 2.0, 100.0, amp));
        const int32_t nodes[MAX_SITES] = {soma, ci.compartments / 3, (2 * ci.compartments) / 3,
                                          ci.compartments - 1};
        for (int k = 0; k < MAX_SITES; ++k) CHECK_OK(ns_sim_add_recording(sim, c, nodes[k], NULL));
    }
    if (write_gnabar) /* gnabar_hh through the loop's own arrays: 0 at every third instance */
        for (int64_t k = 0; k < ns_sim_state_parts(sim); ++k) {
            ns_sim_field f;
            CHECK_OK(ns_sim_state_field(sim, k, "gnabar_hh", &f));
            for (int64_t q = 0; q < f.size; q += 3) f.data[q] = 0.0;
        }
    CHECK_OK(ns_sim_advance(sim, ns_sim_steps_for(sim, tstop)));
    out->path = ns_sim_gpu_mechanisms_of(sim);
    int n_vars = 0, total = 0;
    while (vars && vars[n_vars]) ++n_vars;
    for (int c = 0; c < 3; ++c) {
        ns_cell_info ci;
        ns_cell_get_info(shapes[c], &ci);
        total += ci.compartments;
    }
    if (n_vars) out->vars = malloc((size_t)(n_vars * total) * sizeof(double));
    for (int k = 0, at = 0; out->vars && k < n_vars; ++k)
        for (int c = 0; c < 3; ++c) {
            ns_cell_info ci;
            ns_cell_get_info(shapes[c], &ci);
            CHECK_OK(ns_sim_get_model_var(sim, c, vars[k], out->vars + at));
            at += ci.compartments;
        }
    const double *tr = ns_sim_traces(sim, &out->samples, &out->sites);
    out->traces = malloc((size_t)(out->samples * out->sites) * sizeof(double));
    if (out->traces && tr) memcpy(out->traces, tr, (size_t)(out->samples * out->sites) * sizeof(double));
    for (int64_t c = 0; c < 3 * N_PER_SHAPE; ++c) {
        const double *sp = ns_sim_spikes(sim, c, &out->n_spikes[c]);
        out->spikes[c] = malloc((size_t)(out->n_spikes[c] + 1) * sizeof(double));
        if (out->spikes[c] && out->n_spikes[c]) memcpy(out->spikes[c], sp, (size_t)out->n_spikes[c] * sizeof(double));
        out->total_spikes += out->n_spikes[c];
    }
    ns_sim_destroy(sim);
    return 0;
}

static int run_pop(ns_cell_t *const *cells, const ns_sim_params *p, const ns_sim_model_t *model,
                   ns_hines_method method, double tstop, run_out *out) {
    return run_pop_with(cells, p, model, method, NS_SIM_GPU_MECHANISMS_AUTO, NULL, tstop, 0, out);
}

static ns_sim_model_t *model_of(const char *text, const char *name) {
    ns_sim_model_t *m = NULL;
    CHECK_OK(ns_sim_model_create(NULL, &m));
    if (!m) return NULL;
    ns_status s = ns_sim_model_parse(m, text, strlen(text), name);
    CHECK_OK(s);
    if (s != NS_OK) {
        ns_sim_model_destroy(m);
        return NULL;
    }
    return m;
}

typedef struct equiv_case {
    const char *name;
    const char *params; /* parameter file text (hand-written membrane) */
    const char *model;  /* model text (the same membrane from the built-ins) */
    int min_spikes;     /* over the 15 cells */
    int methods;        /* 2: sequential and OpenMP; 1: sequential only (the same loop: CI's time) */
} equiv_case;

static const equiv_case EQUIV[] = {
    {"hh everywhere", "", "all.insert = hh\n", 15, 2},
    {"hh soma+axon, pas dend, ion and hh values",
     "dend.hh = 0\ndend.pas = 1\ndend.g_pas = 5e-5\ndend.e_pas = -60\n"
     "soma.pas = 1\nsoma.g_pas = 2e-4\nsoma.e_pas = -75\n"
     "soma.gnabar_hh = 0.15\naxon.gkbar_hh = 0.04\nall.ek = -80\nother.gl_hh = 0.0004\n",
     "# the same membrane as the parameters\n"
     "soma.insert = hh pas\naxon.insert = hh\nother.insert = hh\ndend.insert = pas\n"
     "dend.g_pas = 5e-5\ndend.e_pas = -60\nsoma.g_pas = 2e-4\nsoma.e_pas = -75\n"
     "soma.gnabar_hh = 0.15\naxon.gkbar_hh = 0.04\nall.ek = -80\nother.gl_hh = 0.0004\n",
     5, 2},
    {"usetable_hh = 0", "usetable_hh = 0\n", "all.insert = hh\nglobal.usetable_hh = 0\n", 15, 2},
    /* the rate table's clamped ends (every reversal potential at +-160 mV
     * holds v beyond +-100 mV): the hand-written loop's lookup against the
     * generated one, whose ends table_lookup_is_nocmodls checks against
     * nocmodl's */
    {"table's upper end", "v_init = 160\nall.ena = 160\nall.ek = 160\nall.el_hh = 160\n",
     "all.insert = hh\nall.ena = 160\nall.ek = 160\nall.el_hh = 160\n", 0, 1},
    {"table's lower end", "v_init = -160\nall.ena = -160\nall.ek = -160\nall.el_hh = -160\n",
     "all.insert = hh\nall.ena = -160\nall.ek = -160\nall.el_hh = -160\n", 0, 1},
};

static void model_equals_handwritten(ns_cell_t *const *cells) {
    const double tstop = 15.0;
    for (size_t q = 0; q < sizeof EQUIV / sizeof *EQUIV; ++q) {
        const equiv_case *ec = &EQUIV[q];
        ns_sim_params p;
        ns_sim_params_init(&p);
        CHECK_OK(ns_sim_params_parse(&p, ec->params, strlen(ec->params), ec->name));
        ns_sim_model_t *model = model_of(ec->model, ec->name);
        if (!model) continue;
        /* the model must ignore the params' hh and pas: spoil them */
        ns_sim_params pm = p;
        for (int r = 0; r < NS_REGION_COUNT; ++r) {
            pm.region[r].hh = 1;
            pm.region[r].pas = 1;
            pm.region[r].gnabar = 0.5;
            pm.region[r].g_pas = 0.01;
        }
        pm.usetable = 1 - p.usetable;
        for (int meth = 0; meth < ec->methods; ++meth) {
            const ns_hines_method method = meth ? NS_HINES_OPENMP : NS_HINES_SEQUENTIAL;
            run_out a, b;
            if (run_pop(cells, &p, NULL, method, tstop, &a) || run_pop(cells, &pm, model, method, tstop, &b)) {
                run_out_free(&a);
                continue;
            }
            double worst = 0.0;
            int64_t differ = 0, differ_shape[3] = {0, 0, 0};
            CHECK(a.samples == b.samples && a.sites == b.sites && a.sites == 3 * N_PER_SHAPE * MAX_SITES);
            if (a.traces && b.traces && a.samples == b.samples && a.sites == b.sites)
                for (int64_t k = 0; k < a.samples * a.sites; ++k) {
                    const double dv = fabs(a.traces[k] - b.traces[k]);
                    const int bits = memcmp(&a.traces[k], &b.traces[k], sizeof(double)) != 0;
                    differ += bits;
                    differ_shape[(k % a.sites) / MAX_SITES % 3] += bits;
                    if (!(dv <= worst)) worst = dv;
                }
            int counts_equal = 1;
            double worst_t = 0.0;
            for (int c = 0; c < 3 * N_PER_SHAPE; ++c) {
                counts_equal &= a.n_spikes[c] == b.n_spikes[c];
                for (int64_t k = 0; k < a.n_spikes[c] && k < b.n_spikes[c]; ++k)
                    if (!(fabs(a.spikes[c][k] - b.spikes[c][k]) <= worst_t))
                        worst_t = fabs(a.spikes[c][k] - b.spikes[c][k]);
            }
            printf("model vs hand-written (%s, %s): %lld samples x %d sites, %lld differ in some bit (%lld %lld %lld "
                   "per shape), max %.3g mV; spikes %lld / %lld, max |dt| %.3g ms\n",
                   ec->name, meth ? "openmp" : "sequential", (long long)a.samples, a.sites, (long long)differ,
                   (long long)differ_shape[0], (long long)differ_shape[1], (long long)differ_shape[2], worst,
                   (long long)a.total_spikes, (long long)b.total_spikes, worst_t);
            /* Not bit-identical: the generated host code's exp is nsm_exp (a
             * polynomial within 1 ulp of libm's), the hand-written loop has
             * libm's exp in its rates and table, exp_lanes in the gates and
             * the target inf where nocmodl (and the generated hh) write
             * -(inf/tau)/(-1/tau). Before nsm_exp (5e489b3), libm's exp and
             * nocmodl's target in the hand-written gates made the traces
             * bit-identical (checked by hand). So: rounding only, and the
             * same decisions (spike counts). */
            CHECK_MSG(worst <= 1e-8, "%s: traces differ by %g mV", ec->name, worst);
            CHECK_MSG(counts_equal, "%s: spike counts differ", ec->name);
            CHECK_MSG(worst_t <= 1e-9, "%s: spike times differ by %g ms", ec->name, worst_t);
            /* the protocol must exercise the channels: the cells fire */
            CHECK_MSG(a.total_spikes >= ec->min_spikes, "%s: only %lld spikes", ec->name, (long long)a.total_spikes);
            /* a control: the model without the global (the TABLE's rates)
             * is far from the exact rates, so the bound above decides */
            if (p.usetable == 0 && meth == 0) {
                ns_sim_model_t *table = model_of("all.insert = hh\n", "table");
                run_out t;
                if (table && run_pop(cells, &pm, table, method, tstop, &t) == 0) {
                    double far = 0.0;
                    for (int64_t k = 0; t.traces && a.traces && k < a.samples * a.sites; ++k)
                        far = fmax(far, fabs(t.traces[k] - a.traces[k]));
                    printf("control: the TABLE's rates against usetable_hh = 0: max %.3g mV\n", far);
                    CHECK_MSG(far > 1e-3, "usetable_hh = 0 changes nothing (%g mV)", far);
                    run_out_free(&t);
                }
                ns_sim_model_destroy(table);
            }
            run_out_free(&a);
            run_out_free(&b);
        }
        ns_sim_model_destroy(model);
    }
}

/* ------------------------- 2b. the CPU loop's fused pass == its per-step path */

/* The fused pass (src/mech/blocks_fused.c) runs the generated per-instance
 * functions that the per-step path runs, on locals, each node's terms in the
 * same order: the same traces, spike times and, after the run (the
 * assigned variables are stored in a call's last step), model variables,
 * bit for bit. The rule's decision (sim/policy.h, the GPU's) is asserted:
 * auto fuses a model of the built-in pas and hh with hh's table, not one
 * without the table; fused is refused then. */
static void fused_equals_per_step(ns_cell_t *const *cells) {
    static const char *const HH[] = {"m_hh", "n_hh", "ina_hh", "ik_hh", "il_hh", "gna_hh", "minf_hh", "ntau_hh", NULL};
    static const char *const HH_PAS[] = {"h_hh", "gk_hh", "hinf_hh", "mtau_hh", "i_pas", "g_pas", NULL};
    static const struct {
        const char *name, *model;
        const char *const *vars;
        int fused, write;
    } CASES[] = {
        {"hh everywhere", "all.insert = hh\n", HH, 1, 0},
        /* parameters written in place: the fused pass, which reads a segment's
         * parameters once, then reads every instance's */
        {"hh everywhere, gnabar_hh written through ns_sim_state_field", "all.insert = hh\n", HH, 1, 1},
        {"hh soma+axon, pas dend, values per region",
         "soma.insert = hh pas\naxon.insert = hh\nother.insert = hh\ndend.insert = pas\n"
         "dend.g_pas = 5e-5\ndend.e_pas = -60\nsoma.g_pas = 2e-4\nsoma.gnabar_hh = 0.15\n"
         "axon.gkbar_hh = 0.04\nall.ek = -80\nother.gl_hh = 0.0004\n",
         HH_PAS, 1, 0},
        {"usetable_hh = 0", "all.insert = hh\nglobal.usetable_hh = 0\n", HH, 0, 0},
    };
    int64_t spikes_unwritten = -1;
    for (size_t q = 0; q < sizeof CASES / sizeof *CASES; ++q) {
        ns_sim_params p;
        ns_sim_params_init(&p);
        ns_sim_model_t *model = model_of(CASES[q].model, CASES[q].name);
        if (!model) continue;
        run_out a, b;
        if (run_pop_with(cells, &p, model, NS_HINES_OPENMP, NS_SIM_GPU_MECHANISMS_PER_STEP, CASES[q].vars, 15.0,
                         CASES[q].write, &a) ||
            run_pop_with(cells, &p, model, NS_HINES_OPENMP, NS_SIM_GPU_MECHANISMS_AUTO, CASES[q].vars, 15.0,
                         CASES[q].write, &b)) {
            run_out_free(&a);
            ns_sim_model_destroy(model);
            continue;
        }
        CHECK_MSG(a.path == NS_SIM_GPU_MECHANISMS_PER_STEP, "%s: per-step asked, %d ran", CASES[q].name, (int)a.path);
        CHECK_MSG(b.path == (CASES[q].fused ? NS_SIM_GPU_MECHANISMS_FUSED : NS_SIM_GPU_MECHANISMS_PER_STEP),
                  "%s: auto ran %d", CASES[q].name, (int)b.path);
        int64_t differ = 0, vars_differ = 0, spikes_differ = 0;
        CHECK(a.samples == b.samples && a.sites == b.sites && a.traces && b.traces);
        for (int64_t k = 0; a.traces && b.traces && a.samples == b.samples && k < a.samples * a.sites; ++k)
            differ += memcmp(&a.traces[k], &b.traces[k], sizeof(double)) != 0;
        for (int c = 0; c < 3 * N_PER_SHAPE; ++c) {
            spikes_differ += a.n_spikes[c] != b.n_spikes[c];
            for (int64_t k = 0; a.n_spikes[c] == b.n_spikes[c] && k < a.n_spikes[c]; ++k)
                spikes_differ += memcmp(&a.spikes[c][k], &b.spikes[c][k], sizeof(double)) != 0;
        }
        int n_vars = 0, total = 0;
        while (CASES[q].vars[n_vars]) ++n_vars;
        for (int c = 0; c < 3; ++c) {
            ns_cell_info ci;
            ns_cell_get_info(cells[c], &ci);
            total += ci.compartments;
        }
        int64_t finite = 0;
        for (int64_t k = 0; a.vars && b.vars && k < (int64_t)n_vars * total; ++k) {
            vars_differ += memcmp(&a.vars[k], &b.vars[k], sizeof(double)) != 0;
            finite += isfinite(a.vars[k]) && a.vars[k] != 0.0;
        }
        printf("fused vs per-step (%s): %lld samples x %d sites, %lld differ; %lld spikes, %lld differ; %d "
               "variables x %d compartments (%lld finite, nonzero), %lld differ\n",
               CASES[q].name, (long long)a.samples, a.sites, (long long)differ, (long long)a.total_spikes,
               (long long)spikes_differ, n_vars, total, (long long)finite, (long long)vars_differ);
        CHECK_MSG(differ == 0 && spikes_differ == 0 && vars_differ == 0, "%s: the fused pass differs", CASES[q].name);
        CHECK_MSG(a.total_spikes >= 15 && finite > (int64_t)total, "%s: the protocol exercises too little",
                  CASES[q].name);
        if (q == 0) spikes_unwritten = a.total_spikes;
        if (CASES[q].write) /* the writes matter */
            CHECK_MSG(a.total_spikes != spikes_unwritten, "%s: %lld spikes, as many as without the writes",
                      CASES[q].name, (long long)a.total_spikes);
        run_out_free(&a);
        run_out_free(&b);
        if (!CASES[q].fused) {
            /* fused asked for a model the pass does not run: refused */
            ns_sim_options o;
            ns_sim_options_init(&o);
            o.backend = NS_BACKEND_CPU;
            o.model = model;
            o.gpu_mechanisms = NS_SIM_GPU_MECHANISMS_FUSED;
            const ns_cell_t *one = cells[0];
            ns_sim_t *sim = NULL;
            CHECK_FAILS(ns_sim_create(1, &one, 1, NULL, &p, &o, &sim), NS_ERR_UNSUPPORTED, "hh's rate table");
            CHECK(sim == NULL);
            ns_sim_destroy(sim);
        }
        ns_sim_model_destroy(model);
    }
}

/* ------------------------------------------ 3. distances and expressions */

static int32_t section_of_key(const ns_cell_t *cell, long long key) {
    ns_cell_info ci;
    ns_cell_get_info(cell, &ci);
    for (int32_t k = 0; k < ci.sections; ++k) {
        ns_section_info si;
        if (ns_cell_get_section(cell, k, &si) == NS_OK && si.first_point_id == key) return k;
    }
    return -1;
}

/* The value of parameter `field` of mechanism `mech` per compartment of shape
 * 0 (NAN where it is not inserted), from ns_sim_model_resolve. */
static int resolve_param(const ns_sim_model_t *model, const ns_cell_t *cell, const char *mech, const char *field,
                         double *value) {
    ns_cell_info ci;
    ns_cell_get_info(cell, &ci);
    for (int32_t i = 0; i < ci.compartments; ++i) value[i] = NAN;
    ns_sim_params p;
    ns_sim_params_init(&p);
    sim_model *r = NULL;
    const ns_cell_t *shapes[1] = {cell};
    ns_status s = ns_sim_model_resolve(model, NULL, 1, shapes, &p, &r);
    if (s != NS_OK) return -1;
    int found = -1;
    for (int32_t m = 0; m < r->n_mechs; ++m)
        if (strcmp(r->mechs[m].desc->name, mech) == 0) {
            int f = -1;
            CHECK_OK(ns_mech_field_index(r->mechs[m].desc, field, &f));
            const sim_mech_shape *ms = &r->per_shape[m];
            for (int32_t k = 0; f >= 0 && k < ms->n; ++k) value[ms->node[k]] = ms->param[(int64_t)f * ms->n + k];
            found = f >= 0 ? 0 : -1;
        }
    ns_sim_model_free(r);
    return found;
}

typedef struct dist_row { long long key; double x, d; } dist_row;

static int read_distances(const char *path, dist_row **rows) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[512];
    int n = 0, cap = 0;
    *rows = NULL;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == 'f') continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 1024;
            dist_row *r = realloc(*rows, (size_t)cap * sizeof *r);
            if (!r) break;
            *rows = r;
        }
        if (sscanf(line, "%lld,%lf,%lf", &(*rows)[n].key, &(*rows)[n].x, &(*rows)[n].d) == 3) ++n;
    }
    fclose(f);
    return n;
}

/* profile: also the expressions per region (a cell with every region) */
static void distances_against_neuron(const ns_cell_t *cell, const char *name, int profile) {
    char path[1024];
    snprintf(path, sizeof path, "%s/neuron_distances/%s.csv", NS_TEST_DATA, name);
    dist_row *rows = NULL;
    const int n_rows = read_distances(path, &rows);
    CHECK_MSG(n_rows > 50, "%s: %d rows", path, n_rows);
    ns_cell_info ci;
    ns_cell_get_info(cell, &ci);
    const int32_t n = ci.compartments;
    double *d = malloc((size_t)n * sizeof *d), *g = malloc((size_t)n * sizeof *g);
    double *nd = malloc((size_t)n * sizeof *nd);
    const int32_t *type = ns_cell_type(cell);
    const double *area = ns_cell_area(cell);
    if (!d || !g || !nd || n_rows <= 0) goto out;
    /* d itself (the identity expression) and expressions in d per region */
    ns_sim_model_t *m = model_of("all.insert = pas\nall.g_pas = d\n", "identity");
    CHECK(m && resolve_param(m, cell, "pas", "g", d) == 0);
    ns_sim_model_destroy(m);
    m = model_of("all.insert = pas\n"
                 "apical.g_pas = 1e-5*(1 + d/100)\n"
                 "dend.e_pas = -70 + d/50  # after apical's g_pas: dend covers apical, only e_pas\n"
                 "basal.g_pas = (d > 200)*(d < 400)*2e-5 + 1e-6\n"
                 "axon.g_pas = 3e-5*exp(-d/250) + 1e-6*log(1 + d) + sqrt(d)*1e-7 + fabs(d - 500)*1e-8"
                 " + pow(d, 1.5)*1e-9 + min(d, 100)*1e-7 + max(d, 700)*1e-9\n"
                 "soma.g_pas = 4e-5\n",
                 "profile");
    CHECK(m && resolve_param(m, cell, "pas", "g", g) == 0);
    double *e = malloc((size_t)n * sizeof *e);
    CHECK(e && m && resolve_param(m, cell, "pas", "e", e) == 0);
    ns_sim_model_destroy(m);
    /* NEURON's distance at every segment */
    for (int32_t i = 0; i < n; ++i) nd[i] = NAN;
    int mapped = 0, bad_map = 0;
    for (int r = 0; r < n_rows; ++r) {
        const int32_t sec = section_of_key(cell, rows[r].key);
        int32_t node = -1;
        if (sec < 0 || ns_cell_locate(cell, sec, rows[r].x, &node) != NS_OK || !isnan(nd[node])) {
            bad_map++;
            continue;
        }
        nd[node] = rows[r].d;
        mapped++;
    }
    int with_area = 0;
    for (int32_t i = 0; i < n; ++i) with_area += area[i] > 0.0;
    CHECK_MSG(bad_map == 0 && mapped == with_area, "%s: %d segments mapped to distinct compartments, %d not, %d "
              "compartments with membrane", name, mapped, bad_map, with_area);
    double worst = 0.0, worst_abs = 0.0, worst_g = 0.0, worst_e = 0.0, dmax = 0.0;
    int counted[NS_REGION_COUNT] = {0}, checked = 0, in_band = 0;
    for (int32_t i = 0; i < n; ++i) {
        if (!(area[i] > 0.0)) {
            CHECK(isnan(d[i])); /* zero-area nodes carry no membrane: no instance */
            continue;
        }
        if (isnan(nd[i])) continue;
        checked++;
        /* relative, but to at least 100 um: NEURON's 3D points are float32,
         * an ulp is 3e-5 um at coordinates of 300 um (measured: 5e-5 um on
         * allen_pvalb at d = 98 um, 1.1e-6 of it) */
        const double rel = fabs(d[i] - nd[i]) / fmax(nd[i], 100.0);
        if (rel > worst) worst = rel;
        if (fabs(d[i] - nd[i]) > worst_abs) worst_abs = fabs(d[i] - nd[i]);
        if (nd[i] > dmax) dmax = nd[i];
        const ns_region reg = ns_region_of_swc_type(type[i]);
        counted[reg]++;
        /* the profile from NEURON's distance */
        const double x = nd[i];
        double want;
        switch (reg) {
        case NS_REGION_APICAL: want = 1e-5 * (1 + x / 100); break;
        case NS_REGION_BASAL: /* a step: decided on our d (NEURON's float32 points may sit across it) */
            want = (d[i] > 200) * (d[i] < 400) * 2e-5 + 1e-6;
            in_band += d[i] > 200 && d[i] < 400;
            break;
        case NS_REGION_AXON:
            want = 3e-5 * exp(-x / 250) + 1e-6 * log(1 + x) + sqrt(x) * 1e-7 + fabs(x - 500) * 1e-8 +
                   pow(x, 1.5) * 1e-9 + fmin(x, 100) * 1e-7 + fmax(x, 700) * 1e-9;
            break;
        case NS_REGION_SOMA: want = 4e-5; break;
        default: want = 0.001; /* pas's default */
        }
        const double rg = fabs(g[i] - want) / want;
        if (rg > worst_g) worst_g = rg;
        const double want_e = (reg == NS_REGION_APICAL || reg == NS_REGION_BASAL) ? -70 + x / 50 : -70.0;
        if (fabs(e[i] - want_e) > worst_e) worst_e = fabs(e[i] - want_e);
    }
    printf("distances (%s): %d segments against NEURON's h.distance (up to %.1f um): max difference %.2e um, "
           "%.2e relative (to >= 100 um); expressions: g_pas %.2e relative, e_pas %.2e mV; %d soma, %d axon, "
           "%d basal (%d in 200-400 um), %d apical\n",
           name, checked, dmax, worst_abs, worst, worst_g, worst_e, counted[0], counted[1], counted[2], in_band,
           counted[3]);
    CHECK(checked == with_area);
    CHECK_MSG(worst < 1e-6, "%s: distance differs from NEURON's by %g (relative)", name, worst);
    if (profile) {
        CHECK_MSG(worst_g < 1e-6 && worst_e < 1e-6, "%s: expression values differ: %g, %g", name, worst_g, worst_e);
        /* every region and the band are exercised */
        CHECK(counted[NS_REGION_SOMA] > 0 && counted[NS_REGION_AXON] > 0 && counted[NS_REGION_BASAL] > 0 &&
              counted[NS_REGION_APICAL] > 0 && in_band > 0 && in_band < counted[NS_REGION_BASAL]);
        CHECK(dmax > 500);
    }
    free(e);
out:
    free(d);
    free(g);
    free(nd);
    free(rows);
}

/* g_pas = EXPR at d = 0 on the one-compartment cell; NAN on an error. */
static double eval_at0(const ns_cell_t *cell, const char *expr, ns_status *status) {
    ns_sim_model_t *m = NULL;
    double value[8];
    *status = ns_sim_model_create(NULL, &m);
    if (*status == NS_OK) *status = ns_sim_model_insert(m, "all", "pas");
    if (*status == NS_OK) *status = ns_sim_model_set(m, "all", "g_pas", expr);
    ns_cell_info ci;
    ns_cell_get_info(cell, &ci);
    double r = NAN;
    if (*status == NS_OK && ci.compartments <= 8) {
        if (resolve_param(m, cell, "pas", "g", value) == 0) {
            for (int32_t i = 0; i < ci.compartments; ++i)
                if (!isnan(value[i])) r = value[i];
        } else *status = NS_ERR_INVALID_ARGUMENT;
    }
    ns_sim_model_destroy(m);
    return r;
}

static void expression_semantics(const ns_cell_t *cell) {
    static const struct { const char *text; double want; } ok[] = {
        {"2^3^2", 512.0},          /* right-associative */
        {"-2^2", -4.0},            /* ^ binds tighter than unary minus */
        {"2^-1", 0.5},
        {"1+2*3", 7.0},
        {"(1+2)*3", 9.0},
        {"8/4/2", 1.0},            /* left-associative */
        {"7-2-1", 4.0},
        {"--3", 3.0},
        {"+4", 4.0},
        {"1 < 2", 1.0},
        {"2 <= 2", 1.0},
        {"2 > 3", 0.0},
        {"3 >= 3.5", 0.0},
        {"2 == 2", 1.0},
        {"2 != 2", 0.0},
        {"1 + 1 < 3", 1.0},        /* arithmetic before comparison */
        {"1 && 0", 0.0},
        {"2 && 3", 1.0},
        {"0 || 0", 0.0},
        {"0 || -1", 1.0},
        {"1 || 0 && 0", 1.0},      /* && before || */
        {"!0", 1.0},
        {"!5", 0.0},
        {"!0 + 1", 2.0},
        {"1 < 2 && 3 > 2", 1.0},
        {"exp(1)", 2.718281828459045},
        {"log(exp(2))", 2.0},
        {"sqrt(16)", 4.0},
        {"fabs(-3.5)", 3.5},
        {"pow(2, 10)", 1024.0},
        {"min(3, -1)", -1.0},
        {"max(3, -1)", 3.0},
        {"max(min(5, 2), 1.5)", 2.0},
        {"1e-3", 1e-3},
        {".5e1", 5.0},
        {"d + 1", 1.0},            /* d = 0 at the only compartment (the root's middle) */
        {" ( 2 ) ", 2.0},
    };
    int n_ok = 0;
    for (size_t k = 0; k < sizeof ok / sizeof *ok; ++k) {
        ns_status s;
        const double x = eval_at0(cell, ok[k].text, &s);
        CHECK_MSG(s == NS_OK, "'%s': %s", ok[k].text, ns_last_error());
        CHECK_MSG(fabs(x - ok[k].want) <= 1e-15 * fabs(ok[k].want), "'%s' = %.17g, want %.17g", ok[k].text, x,
                  ok[k].want);
        n_ok += s == NS_OK && fabs(x - ok[k].want) <= 1e-15 * fabs(ok[k].want);
    }
    static const struct { const char *text, *needle; } bad[] = {
        {"1+", "unexpected end"},
        {"foo(1)", "unknown name"},
        {"(1", "expected ')'"},
        {"1 2", "unexpected text"},
        {"", "unexpected end"},
        {"exp 1", "expected '('"},
        {"pow(1)", "expected ','"},
        {"min(1, 2", "expected ')'"},
        {"1 & 2", "unexpected text"},
        {"dd", "unknown name"},
        {"1e999", "'1e999' is beyond the range of a double"},
        /* the one number reader (issue 47: 0x10 was read as 16) */
        {"0x10", "'0x10' is not a decimal number"},
        {"2*0x1p3", "'0x1p3' is not a decimal number"},
        {"1e-320", "'1e-320' is too close to 0 for a double"},
        {"1.5.2", "'1.5.2' is not a decimal number"},
        {"*2", "expected a number"},
    };
    int n_bad = 0;
    for (size_t k = 0; k < sizeof bad / sizeof *bad; ++k) {
        ns_sim_model_t *m = NULL;
        CHECK_OK(ns_sim_model_create(NULL, &m));
        if (!m) continue;
        CHECK_OK(ns_sim_model_insert(m, "all", "pas"));
        const ns_status s = ns_sim_model_set(m, "all", "g_pas", bad[k].text);
        const char *msg = ns_last_error();
        CHECK_MSG(s == NS_ERR_PARSE, "'%s': %s", bad[k].text, ns_status_string(s));
        CHECK_MSG(strstr(msg, bad[k].needle) && strstr(msg, "ns_sim_model_set") && strstr(msg, "g_pas"),
                  "'%s': \"%s\" lacks '%s'", bad[k].text, msg, bad[k].needle);
        n_bad += s == NS_ERR_PARSE && strstr(msg, bad[k].needle) != NULL;
        ns_sim_model_destroy(m);
    }
    /* nesting: refused beyond the limit instead of overflowing the stack
     * (200,000 parentheses crashed the parser), accepted below it */
    {
        const size_t deep = 200000;
        char *text = malloc(2 * deep + 2);
        if (text) {
            for (int kind = 0; kind < 3; ++kind) {
                const size_t n = kind == 2 ? 80 : deep; /* 80 parentheses: within the limit */
                size_t u = 0;
                for (size_t k = 0; k < n; ++k) text[u++] = kind == 1 ? '-' : '(';
                text[u++] = '2';
                for (size_t k = 0; kind != 1 && k < n; ++k) text[u++] = ')';
                text[u] = 0;
                ns_status s;
                const double x = eval_at0(cell, text, &s);
                if (kind < 2) {
                    CHECK_MSG(s == NS_ERR_PARSE && strstr(ns_last_error(), "nested too deeply") &&
                                  strstr(ns_last_error(), "...: "),
                              "%zu nested levels: %s (%.200s)", n, ns_status_string(s), ns_last_error());
                } else CHECK_MSG(s == NS_OK && x == 2.0, "80 parentheses: %s", ns_last_error());
            }
            free(text);
        }
    }
    printf("expressions: %d of %zu values and %d of %zu errors as expected\n", n_ok, sizeof ok / sizeof *ok, n_bad,
           sizeof bad / sizeof *bad);
}

/* Statement order, re-insertion, region selectors. */
static void statement_order(const ns_cell_t *cell) {
    ns_cell_info ci;
    ns_cell_get_info(cell, &ci);
    const int32_t *type = ns_cell_type(cell);
    const double *area = ns_cell_area(cell);
    double *g = malloc((size_t)ci.compartments * sizeof *g), *gk = malloc((size_t)ci.compartments * sizeof *gk);
    if (!g || !gk) { free(g); free(gk); return; }
    /* later statements override earlier ones where both apply; inserting
     * again keeps the values (NEURON's insert on a section that has it) */
    ns_sim_model_t *m = model_of("all.insert = pas\nall.g_pas = 1\nsoma.g_pas = 2\ndend.g_pas = 3\n"
                                 "basal.g_pas = 4\nall.insert = pas\naxon.insert = hh\naxon.gkbar_hh = 0.05\n",
                                 "order");
    CHECK(m && resolve_param(m, cell, "pas", "g", g) == 0);
    CHECK(m && resolve_param(m, cell, "hh", "gkbar", gk) == 0);
    ns_sim_model_destroy(m);
    int bad = 0, seen[NS_REGION_COUNT] = {0};
    for (int32_t i = 0; i < ci.compartments; ++i) {
        if (!(area[i] > 0.0)) {
            bad += !isnan(g[i]) || !isnan(gk[i]);
            continue;
        }
        const ns_region r = ns_region_of_swc_type(type[i]);
        seen[r]++;
        const double want = r == NS_REGION_SOMA ? 2 : r == NS_REGION_BASAL ? 4 : r == NS_REGION_APICAL ? 3 : 1;
        bad += g[i] != want;
        bad += r == NS_REGION_AXON ? gk[i] != 0.05 : !isnan(gk[i]);
    }
    CHECK_MSG(bad == 0, "%d compartments with the wrong value", bad);
    CHECK(seen[NS_REGION_SOMA] && seen[NS_REGION_AXON] && seen[NS_REGION_BASAL] && seen[NS_REGION_APICAL]);
    /* defaults of an inserted mechanism: hh's gnabar 0.12 */
    m = model_of("soma.insert = hh\n", "defaults");
    CHECK(m && resolve_param(m, cell, "hh", "gnabar", g) == 0);
    ns_sim_model_destroy(m);
    bad = 0;
    for (int32_t i = 0; i < ci.compartments; ++i)
        bad += (area[i] > 0.0 && ns_region_of_swc_type(type[i]) == NS_REGION_SOMA) ? g[i] != 0.12 : !isnan(g[i]);
    CHECK_MSG(bad == 0, "%d compartments with the wrong default", bad);
    free(g);
    free(gk);
}

/* Ion values from expressions reach every lane of every block: ek per node
 * in a population of 3 shapes x 5 cells (CPU, both methods), read back from
 * the loop's ion arrays; ena stays NEURON's default. */
static void ion_values_per_node(ns_cell_t *const *cells) {
    ns_sim_model_t *m = model_of("all.insert = hh\nall.ek = -77 - d/1000\nsoma.ek = -90\n", "ions");
    ns_sim_params p;
    ns_sim_params_init(&p);
    int bad = 0, checked = 0;
    for (int meth = 0; meth < 2 && m; ++meth) {
        ns_sim_options o;
        ns_sim_options_init(&o);
        o.method = meth ? NS_HINES_OPENMP : NS_HINES_SEQUENTIAL;
        o.threads = 2;
        o.model = m;
        const ns_cell_t *shapes[3] = {cells[0], cells[1], cells[2]};
        ns_sim_t *sim = NULL;
        CHECK_OK(ns_sim_create(3, shapes, 3 * N_PER_SHAPE, NULL, &p, &o, &sim));
        if (!sim) break;
        CHECK_OK(ns_sim_advance(sim, 4));
        for (int64_t c = 0; c < 3 * N_PER_SHAPE; ++c) {
            const ns_cell_t *cell = shapes[c % 3];
            ns_cell_info ci;
            ns_cell_get_info(cell, &ci);
            double *ek = malloc((size_t)ci.compartments * sizeof *ek), *ena = malloc((size_t)ci.compartments * sizeof *ena);
            double *d = malloc((size_t)ci.compartments * sizeof *d);
            ns_sim_model_t *id = model_of("all.insert = pas\nall.g_pas = d\n", "identity");
            if (ek && ena && d && id && resolve_param(id, cell, "pas", "g", d) == 0) {
                CHECK_OK(ns_sim_get_model_var(sim, c, "ek", ek));
                CHECK_OK(ns_sim_get_model_var(sim, c, "ena", ena));
                const double *area = ns_cell_area(cell);
                const int32_t *type = ns_cell_type(cell);
                for (int32_t i = 0; i < ci.compartments; ++i) {
                    if (!(area[i] > 0.0)) continue;
                    const double want = ns_region_of_swc_type(type[i]) == NS_REGION_SOMA ? -90.0 : -77 - d[i] / 1000;
                    bad += ek[i] != want || ena[i] != 50.0;
                    checked++;
                }
            }
            ns_sim_model_destroy(id);
            free(ek);
            free(ena);
            free(d);
        }
        ns_sim_destroy(sim);
    }
    printf("ion values per node: %d compartment values checked, %d wrong\n", checked, bad);
    CHECK(bad == 0 && checked > 1000);
    ns_sim_model_destroy(m);
}

/* ------------------------------------------------------ 4. bad input */

static ns_status create_with(const char *text, const ns_cell_t *cell, ns_sim_t **sim) {
    ns_sim_model_t *m = model_of(text, "t.model");
    *sim = NULL;
    if (!m) return NS_ERR_INTERNAL;
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = NS_BACKEND_CPU;
    o.model = m;
    const ns_cell_t *shapes[1] = {cell};
    ns_status s = ns_sim_create(1, shapes, 2, NULL, &p, &o, sim);
    ns_sim_model_destroy(m);
    return s;
}

static void bad_input(const ns_cell_t *l5, const ns_cell_t *one) {
    ns_sim_model_t *m = NULL;
    CHECK_OK(ns_sim_model_create(NULL, &m));
    if (!m) return;
    /* NULL arguments */
    CHECK_FAILS(ns_sim_model_create(NULL, NULL), NS_ERR_INVALID_ARGUMENT, "ns_sim_model_create");
    CHECK_FAILS(ns_sim_model_insert(NULL, "all", "pas"), NS_ERR_INVALID_ARGUMENT, "NULL");
    CHECK_FAILS(ns_sim_model_insert(m, NULL, "pas"), NS_ERR_INVALID_ARGUMENT, "region", "soma, axon");
    CHECK_FAILS(ns_sim_model_insert(m, "all", NULL), NS_ERR_INVALID_ARGUMENT, "NULL");
    CHECK_FAILS(ns_sim_model_set(NULL, "all", "g_pas", "1"), NS_ERR_INVALID_ARGUMENT, "NULL");
    CHECK_FAILS(ns_sim_model_set(m, "all", NULL, "1"), NS_ERR_INVALID_ARGUMENT, "NULL");
    CHECK_FAILS(ns_sim_model_set(m, "all", "g_pas", NULL), NS_ERR_INVALID_ARGUMENT, "NULL");
    CHECK_FAILS(ns_sim_model_set_global(NULL, "usetable_hh", 0), NS_ERR_INVALID_ARGUMENT, "NULL");
    CHECK_FAILS(ns_sim_model_set_global(m, NULL, 0), NS_ERR_INVALID_ARGUMENT, "NULL");
    CHECK_FAILS(ns_sim_model_parse(NULL, "", 0, "x"), NS_ERR_INVALID_ARGUMENT, "NULL");
    CHECK_FAILS(ns_sim_model_parse(m, NULL, 4, "x"), NS_ERR_INVALID_ARGUMENT, "NULL");
    CHECK_FAILS(ns_sim_model_read(m, NULL), NS_ERR_INVALID_ARGUMENT, "NULL");
    CHECK_FAILS(ns_sim_model_read(NULL, "x"), NS_ERR_INVALID_ARGUMENT, "NULL");
    ns_sim_model_destroy(NULL); /* safe */
    CHECK_OK(ns_sim_model_parse(m, NULL, 0, "empty")); /* nothing to do */
    /* unknown region, mechanism, names */
    CHECK_FAILS(ns_sim_model_insert(m, "somma", "pas"), NS_ERR_INVALID_ARGUMENT, "'somma'",
           "soma, axon, basal, apical, other, dend, all, sec:K", "swc:ID");
    CHECK_FAILS(ns_sim_model_insert(m, "sec:-1", "pas"), NS_ERR_INVALID_ARGUMENT, "'sec:-1'");
    CHECK_FAILS(ns_sim_model_insert(m, "swc:12x", "pas"), NS_ERR_INVALID_ARGUMENT, "'swc:12x'");
    CHECK_FAILS(ns_sim_model_set(m, "dendrite", "g_pas", "1"), NS_ERR_INVALID_ARGUMENT, "'dendrite'");
    CHECK_FAILS(ns_sim_model_insert(m, "all", "kdr"), NS_ERR_INVALID_ARGUMENT, "'kdr'", "pas, hh, ExpSyn, Exp2Syn");
    CHECK_FAILS(ns_sim_model_insert(m, "all", "ExpSyn"), NS_ERR_UNSUPPORTED, "ExpSyn", "POINT_PROCESS");
    CHECK_FAILS(ns_sim_model_set(m, "all", "m_hh", "0.5"), NS_ERR_INVALID_ARGUMENT, "m_hh", "not a PARAMETER");
    CHECK_FAILS(ns_sim_model_set(m, "all", "gnabarr_hh", "0.5"), NS_ERR_INVALID_ARGUMENT, "gnabarr_hh", "gnabar, gkbar, gl, el");
    CHECK_FAILS(ns_sim_model_set(m, "all", "g_kdr", "0.5"), NS_ERR_INVALID_ARGUMENT, "'g_kdr'", "pas, hh");
    CHECK_FAILS(ns_sim_model_set(m, "all", "conductance", "0.5"), NS_ERR_INVALID_ARGUMENT, "'conductance'", "eX, Xi, Xo");
    CHECK_FAILS(ns_sim_model_set_global(m, "usetable_kdr", 0), NS_ERR_INVALID_ARGUMENT, "usetable_kdr");
    CHECK_FAILS(ns_sim_model_set_global(m, "nosuch_hh", 0), NS_ERR_INVALID_ARGUMENT, "nosuch_hh", "usetable");
    CHECK_FAILS(ns_sim_model_set_global(m, "usetable_hh", NAN), NS_ERR_INVALID_ARGUMENT, "usetable_hh", "finite");
    CHECK_FAILS(ns_sim_model_read(m, "/nonexistent/dir/m.model"), NS_ERR_IO, "/nonexistent/dir/m.model");
    /* none of the failed calls added a statement: an empty model resolves
     * to no mechanisms */
    {
        ns_sim_params p;
        ns_sim_params_init(&p);
        sim_model *r = NULL;
        const ns_cell_t *shapes[1] = {one};
        CHECK_OK(ns_sim_model_resolve(m, NULL, 1, shapes, &p, &r));
        CHECK(r && r->n_mechs == 0 && r->n_ions == 0);
        ns_sim_model_free(r);
    }
    /* parse errors name the file and the line */
    static const struct { const char *text, *needle; } perr[] = {
        {"all.insert = pas\nall.g_pas = 1+\n", "m.model:2:"},
        {"\n# comment\nall.insert = pas\n  no equals sign\n", "m.model:4: expected REGION.NAME = VALUE"},
        {"all.insert = pas\nall.g_pas =\n", "m.model:2: empty name or value"},
        {"global.usetable_hh = off\n", "m.model:1: global.usetable_hh: 'off' is not a decimal number"},
        {"all.insert = pas\nglobal.usetable_hh = 0\n", "m.model:2:"},
        {"all.insert = pas kdr\n", "m.model:1: no mechanism 'kdr'"},
        {"all.insert = pas\nall.g_pas = 1\nbogus.g_pas = 2\n", "m.model:3: region 'bogus'"},
        {"all.insert = pas\nsoma.m_hh = 1\n", "m.model:2: m_hh"},
        {"global.usetable_hh = 0x1\n", "m.model:1: global.usetable_hh: '0x1' is not a decimal number"},
        {"all.insert = pas\nall.g_pas = 0x10\n", "m.model:2: g_pas = 0x10: '0x10' is not a decimal number"},
    };
    ns_sim_model_t *m2 = NULL;
    CHECK_OK(ns_sim_model_create(NULL, &m2));
    if (m2) {
        const char *first = "all.insert = pas\nall.g_pas = 7e-5\n";
        CHECK_OK(ns_sim_model_parse(m2, first, strlen(first), "first.model"));
        for (size_t k = 0; k < sizeof perr / sizeof *perr; ++k) {
            const ns_status s = ns_sim_model_parse(m2, perr[k].text, strlen(perr[k].text), "m.model");
            if (k == 4) { /* usetable_hh of hh, which is not inserted: an error at resolution */
                CHECK_MSG(s == NS_OK, "%s", ns_last_error());
                continue;
            }
            CHECK_MSG(s != NS_OK, "case %zu parsed", k);
            CHECK_MSG(strstr(ns_last_error(), perr[k].needle) != NULL, "case %zu: '%s' not in \"%s\"", k,
                      perr[k].needle, ns_last_error());
        }
        /* case 4 added global.usetable_hh for a mechanism inserted nowhere */
        ns_sim_params p;
        ns_sim_params_init(&p);
        sim_model *r = NULL;
        const ns_cell_t *shapes[1] = {one};
        CHECK_FAILS(ns_sim_model_resolve(m2, NULL, 1, shapes, &p, &r), NS_ERR_INVALID_ARGUMENT, "m.model:2:",
               "global.usetable_hh", "hh is not inserted anywhere");
        CHECK(r == NULL);
        ns_sim_model_destroy(m2);
    }
    /* a failed parse leaves the model as it was: the statements before it
     * and none of the failed text */
    CHECK_OK(ns_sim_model_create(NULL, &m2));
    if (m2) {
        const char *first = "all.insert = pas\nall.g_pas = 7e-5\n";
        const char *second = "soma.g_pas = 3e-5\nsoma.insert = hh\nsoma.e_pas = (1\n";
        CHECK_OK(ns_sim_model_parse(m2, first, strlen(first), "first.model"));
        CHECK_FAILS(ns_sim_model_parse(m2, second, strlen(second), "second.model"), NS_ERR_PARSE, "second.model:3:",
               "expected ')'");
        ns_sim_params p;
        ns_sim_params_init(&p);
        sim_model *r = NULL;
        const ns_cell_t *shapes[1] = {l5};
        CHECK_OK(ns_sim_model_resolve(m2, NULL, 1, shapes, &p, &r));
        if (r) {
            CHECK(r->n_mechs == 1 && strcmp(r->mechs[0].desc->name, "pas") == 0);
            int bad = 0;
            for (int32_t k = 0; k < r->per_shape[0].n; ++k) bad += r->per_shape[0].param[k] != 7e-5;
            CHECK_MSG(bad == 0 && r->per_shape[0].n > 100, "%d of %d g_pas values changed by the failed parse", bad,
                      (int)r->per_shape[0].n);
        }
        ns_sim_model_free(r);
        /* a NUL byte */
        CHECK_FAILS(ns_sim_model_parse(m2, "all.g_pas = 1\0x", 15, "nul.model"), NS_ERR_PARSE, "nul.model", "NUL");
        ns_sim_model_destroy(m2);
    }
    ns_sim_model_destroy(m);

    /* errors at ns_sim_create: a set where the mechanism is not inserted
     * (names the statement, compartment and region), a value that is not
     * finite somewhere (names the compartment), an ion no mechanism uses */
    ns_sim_t *sim = NULL;
    CHECK_FAILS(create_with("soma.insert = pas\nall.g_pas = 1e-4\n", l5, &sim), NS_ERR_INVALID_ARGUMENT,
           "shape 0: t.model:2: all.g_pas: pas is not inserted at compartment", "(region ");
    CHECK(sim == NULL);
    CHECK_FAILS(create_with("all.insert = pas\ndend.g_pas = 1e-5*log(d - 1000)\n", l5, &sim), NS_ERR_INVALID_ARGUMENT,
           "shape 0: t.model:2: dend.g_pas is ", "nan at compartment", "d = ");
    CHECK(sim == NULL);
    CHECK_FAILS(create_with("all.insert = pas\nall.g_pas = 1/d\n", l5, &sim), NS_ERR_INVALID_ARGUMENT, "shape 0: t.model:2: all.g_pas is inf at compartment", "(d = 0 um)");
    CHECK_FAILS(create_with("all.g_pas = 1e-4\n", l5, &sim), NS_ERR_INVALID_ARGUMENT, "t.model:1: all.g_pas",
           "pas is not inserted anywhere"); /* found by fuzz_model: the mechanism's index was -1 */
    CHECK(sim == NULL);
    CHECK_FAILS(create_with("all.insert = pas\nall.ena = 60\n", l5, &sim), NS_ERR_INVALID_ARGUMENT, "t.model:2",
           "all.ena", "no inserted mechanism uses the ion na");
    CHECK(sim == NULL);
    /* a negative concentration (issue 47: all.nai = -1 was accepted) */
    CHECK_FAILS(create_with("all.insert = hh\nall.nai = -1\n", l5, &sim), NS_ERR_INVALID_ARGUMENT,
                "shape 0: t.model:2: all.nai is -1 at compartment", "a concentration must be >= 0 mM");
    CHECK(sim == NULL);
    CHECK_FAILS(create_with("all.insert = hh\nsoma.nao = -1 - d\n", l5, &sim), NS_ERR_INVALID_ARGUMENT,
                "t.model:2: soma.nao is");
    CHECK(sim == NULL);
    /* the model's simulation: its checkpoint holds every mechanism's state by name (m_hh, ...) and
     * resumes bit for bit; refused for another model, and a version-1 file (v and hh's gates
     * without names) is refused naming its version */
    CHECK_OK(create_with("all.insert = hh pas\n", one, &sim));
    ns_sim_t *twin = NULL, *other = NULL;
    CHECK_OK(create_with("all.insert = hh pas\n", one, &twin));
    CHECK_OK(create_with("all.insert = hh\n", one, &other));
    if (sim && twin && other) {
        char *path = tmp("model.ckpt");
        CHECK_OK(ns_sim_add_iclamp(sim, 0, 0, 0.5, 2.0, 0.3));
        CHECK_OK(ns_sim_add_iclamp(twin, 0, 0, 0.5, 2.0, 0.3));
        CHECK_OK(ns_sim_add_iclamp(other, 0, 0, 0.5, 2.0, 0.3));
        CHECK_OK(ns_sim_advance(sim, 40));
        CHECK_OK(ns_sim_save_state(sim, path));
        CHECK_FAILS(ns_sim_restore_state(other, path), NS_ERR_INVALID_ARGUMENT, "another simulation");
        CHECK_OK(ns_sim_restore_state(twin, path));
        CHECK_OK(ns_sim_advance(sim, 40));
        CHECK_OK(ns_sim_advance(twin, 40));
        const int64_t nc = ns_sim_compartments(sim);
        double *a = calloc((size_t)nc * 2, sizeof *a);
        if (a) {
            static const char *const names[3] = {"m_hh", "h_hh", "n_hh"};
            CHECK_OK(ns_sim_get_state(sim, 0, a));
            CHECK_OK(ns_sim_get_state(twin, 0, a + nc));
            CHECK_MSG(memcmp(a, a + nc, (size_t)nc * sizeof *a) == 0, "v after a model's checkpoint differs");
            CHECK(a[0] > -65.0 + 1.0); /* the clamp moved it: the comparison is not of two resting cells */
            for (int k = 0; k < 3; ++k) {
                CHECK_OK(ns_sim_get_model_var(sim, 0, names[k], a));
                CHECK_OK(ns_sim_get_model_var(twin, 0, names[k], a + nc));
                CHECK_MSG(memcmp(a, a + nc, (size_t)nc * sizeof *a) == 0, "%s after a model's checkpoint differs",
                          names[k]);
            }
            /* set_model_var: a written gate is read back; NaN refused where hh is inserted */
            for (int64_t i = 0; i < nc; ++i) a[i] = 0.25;
            CHECK_OK(ns_sim_set_model_var(sim, 0, "m_hh", a));
            CHECK_OK(ns_sim_get_model_var(sim, 0, "m_hh", a + nc));
            CHECK(a[nc] == 0.25);
            a[0] = NAN;
            CHECK_FAILS(ns_sim_set_model_var(sim, 0, "m_hh", a), NS_ERR_NOT_FINITE, "m_hh = nan");
            CHECK_FAILS(ns_sim_set_model_var(sim, 0, "m_nope", a), NS_ERR_INVALID_ARGUMENT, "m_nope");
            free(a);
        }
        /* version 1: the same header with version 1 */
        FILE *f = fopen(path, "r+b");
        if (f) {
            const unsigned char one_le[4] = {1, 0, 0, 0};
            fseek(f, 8, SEEK_SET);
            fwrite(one_le, 1, 4, f);
            fclose(f);
            CHECK_FAILS(ns_sim_restore_state(twin, path), NS_ERR_UNSUPPORTED, "version 1", "run again");
        }
        remove(path);
    }
    ns_sim_destroy(sim);
    ns_sim_destroy(twin);
    ns_sim_destroy(other);
    {
        /* v through the bulk accessor, the only variable it has (the mechanisms': ns_sim_state_field) */
        CHECK_OK(create_with("all.insert = hh pas\n", one, &sim));
        const int64_t nc = sim ? ns_sim_compartments(sim) : 0;
        double *buf = calloc((size_t)(nc ? nc : 1), sizeof *buf);
        if (sim) {
            CHECK_OK(ns_sim_read_var(sim, NS_SIM_VAR_V, buf, NULL));
            CHECK(buf && buf[0] == -65.0);
            CHECK_FAILS(ns_sim_read_var(sim, NS_SIM_VAR_COUNT, buf, NULL), NS_ERR_INVALID_ARGUMENT, "var");
            CHECK_OK(ns_sim_set_state(sim, 0, buf));
            /* and it runs: a model of hh and pas on one compartment */
            CHECK_OK(ns_sim_advance(sim, 40));
        }
        free(buf);
        ns_sim_destroy(sim);
    }
    printf("bad input: checked\n");
}

/* ns_sim_get_model_var: the params' shorthand (gnabar, ena of a region) against
 * the same membrane as a model file after the same run, the parameters and ion
 * values the model gives, NaN where a mechanism is absent, and the refusals. */
static void model_var_reads(const ns_cell_t *cell) {
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = NS_BACKEND_CPU;
    ns_sim_t *hand = NULL, *gen = NULL;
    ns_sim_model_t *model = model_of("all.insert = hh\nsoma.gnabar_hh = 0.2\nsoma.ena = 55\n", "var.model");
    ns_sim_params ph = p; /* the same membrane through the parameters */
    ph.region[NS_REGION_SOMA].gnabar = 0.2;
    ph.region[NS_REGION_SOMA].ena = 55.0;
    CHECK_OK(ns_sim_create(1, &cell, 3, NULL, &ph, &o, &hand));
    o.model = model;
    CHECK_OK(ns_sim_create(1, &cell, 3, NULL, &p, &o, &gen));
    ns_sim_model_destroy(model);
    if (!hand || !gen) {
        ns_sim_destroy(hand);
        ns_sim_destroy(gen);
        return;
    }
    for (int64_t c = 0; c < 3; ++c) {
        CHECK_OK(ns_sim_add_iclamp(hand, c, ns_sim_spike_compartment(hand, c), 1.0, 5.0, 1.0 + c));
        CHECK_OK(ns_sim_add_iclamp(gen, c, ns_sim_spike_compartment(gen, c), 1.0, 5.0, 1.0 + c));
    }
    CHECK_OK(ns_sim_advance(hand, 400));
    CHECK_OK(ns_sim_advance(gen, 400));
    ns_cell_info ci;
    ns_cell_get_info(cell, &ci);
    const int32_t n = ci.compartments;
    double *m = malloc((size_t)n * 6 * sizeof *m);
    if (!m) return;
    double *h = m + n, *gn = m + 2 * n, *x = m + 3 * n, *y = m + 4 * n, *z = m + 5 * n;
    const double *area = ns_cell_area(cell);
    const int32_t *type = ns_cell_type(cell);
    double worst = 0.0;
    int64_t bad = 0;
    for (int64_t c = 0; c < 3; ++c) {
        CHECK_OK(ns_sim_get_model_var(hand, c, "m_hh", m));
        CHECK_OK(ns_sim_get_model_var(hand, c, "h_hh", h));
        CHECK_OK(ns_sim_get_model_var(hand, c, "n_hh", gn));
        CHECK_OK(ns_sim_get_model_var(gen, c, "m_hh", x));
        CHECK_OK(ns_sim_get_model_var(gen, c, "h_hh", y));
        CHECK_OK(ns_sim_get_model_var(gen, c, "n_hh", z));
        for (int32_t i = 0; i < n; ++i) {
            if (!(area[i] > 0.0)) {
                bad += !isnan(x[i]) || !isnan(y[i]) || !isnan(z[i]);
                continue;
            }
            worst = fmax(worst, fmax(fabs(x[i] - m[i]), fmax(fabs(y[i] - h[i]), fabs(z[i] - gn[i]))));
        }
        CHECK_OK(ns_sim_get_model_var(gen, c, "gnabar_hh", x));
        CHECK_OK(ns_sim_get_model_var(gen, c, "ena", y));
        CHECK_OK(ns_sim_get_model_var(gen, c, "ki", z));
        for (int32_t i = 0; i < n; ++i) {
            if (!(area[i] > 0.0)) continue;
            const int soma = ns_region_of_swc_type(type[i]) == NS_REGION_SOMA;
            bad += x[i] != (soma ? 0.2 : 0.12) || y[i] != (soma ? 55.0 : 50.0) || z[i] != 54.4;
        }
    }
    printf("ns_sim_get_model_var: hh's gates of the params' shorthand against the model file's within %.3g; %lld "
           "wrong values\n", worst, (long long)bad);
    CHECK_MSG(worst == 0.0 && bad == 0, "gates differ by %g, %lld wrong values", worst, (long long)bad);
    /* refusals */
    CHECK_FAILS(ns_sim_get_model_var(gen, 0, "m_NaTs2_t", x), NS_ERR_INVALID_ARGUMENT, "'m_NaTs2_t'", "hh", "ena");
    CHECK_FAILS(ns_sim_get_model_var(gen, 0, "q_hh", x), NS_ERR_INVALID_ARGUMENT, "q", "minf");
    CHECK_FAILS(ns_sim_get_model_var(gen, 0, "ina", x), NS_ERR_UNSUPPORTED, "no mechanism reads the current of na");
    CHECK_FAILS(ns_sim_get_model_var(gen, 3, "m_hh", x), NS_ERR_INVALID_ARGUMENT, "cell 3 of 3");
    CHECK_FAILS(ns_sim_get_model_var(gen, 0, NULL, x), NS_ERR_INVALID_ARGUMENT, "NULL");
    free(m);
    ns_sim_destroy(hand);
    ns_sim_destroy(gen);
}

/* Statements for one section (sec:K, swc:ID): exactly that section's
 * compartments take the value, against ns_cell_section and the sections'
 * first SWC ids read here; a section no shape has is refused. */
static void section_selectors(const ns_cell_t *cell) {
    ns_cell_info ci;
    ns_cell_get_info(cell, &ci);
    const int32_t ksec = ci.sections / 2, kswc = ci.sections - 1;
    ns_section_info si;
    CHECK_OK(ns_cell_get_section(cell, kswc, &si));
    char text[256];
    snprintf(text, sizeof text, "all.insert = pas\nall.g_pas = 1e-4\nsec:%d.g_pas = 3e-4\nswc:%lld.g_pas = 5e-4\n",
             (int)ksec, (long long)si.first_point_id);
    ns_sim_model_t *m = NULL;
    CHECK_OK(ns_sim_model_create(NULL, &m));
    CHECK_OK(ns_sim_model_parse(m, text, strlen(text), "sec.model"));
    double *g = malloc((size_t)ci.compartments * sizeof *g);
    CHECK(g && resolve_param(m, cell, "pas", "g", g) == 0);
    const double *area = ns_cell_area(cell);
    const int32_t *sec = ns_cell_section(cell);
    int64_t in_k = 0, in_swc = 0, wrong = 0;
    for (int32_t i = 0; g && i < ci.compartments; ++i) {
        if (!(area[i] > 0.0)) {
            wrong += !isnan(g[i]);
            continue;
        }
        const double want = sec[i] == kswc ? 5e-4 : sec[i] == ksec ? 3e-4 : 1e-4;
        in_k += sec[i] == ksec;
        in_swc += sec[i] == kswc;
        wrong += g[i] != want;
    }
    CHECK_MSG(wrong == 0 && in_k > 0 && in_swc > 0, "sec:%d (%lld compartments), swc:%lld (%lld): %lld wrong values",
              (int)ksec, (long long)in_k, (long long)si.first_point_id, (long long)in_swc, (long long)wrong);
    free(g);
    ns_sim_model_destroy(m);
    /* a section no shape has */
    CHECK_OK(ns_sim_model_create(NULL, &m));
    snprintf(text, sizeof text, "all.insert = pas\nsec:%d.g_pas = 1e-3\n", (int)ci.sections + 5);
    CHECK_OK(ns_sim_model_parse(m, text, strlen(text), "nosec.model"));
    sim_model *r = NULL;
    ns_sim_params p;
    ns_sim_params_init(&p);
    const ns_cell_t *shapes[1] = {cell};
    CHECK_FAILS(ns_sim_model_resolve(m, NULL, 1, shapes, &p, &r), NS_ERR_INVALID_ARGUMENT, "nosec.model:2:",
           "is no section with membrane of any shape");
    CHECK(r == NULL);
    ns_sim_model_destroy(m);
    printf("section selectors: sec:%d %lld compartments, swc:%lld %lld compartments\n", (int)ksec, (long long)in_k,
           (long long)si.first_point_id, (long long)in_swc);
}

/* One segment (sec:K(X), swc:ID(X), NEURON's sec(x)): only the compartment
 * that ns_cell_locate gives for (K, X) takes the value, for x at a segment's
 * centre, at its boundary (the right one), 0 and 1; a later statement wins. */
static void segment_selectors(const ns_cell_t *cell) {
    ns_cell_info ci;
    ns_cell_get_info(cell, &ci);
    int32_t k = -1;
    ns_section_info si;
    for (int32_t c = 0; c < ci.sections && k < 0; ++c)
        if (ns_cell_get_section(cell, c, &si) == NS_OK && si.nseg >= 3) k = c;
    CHECK_MSG(k >= 0, "no section with 3 or more segments");
    if (k < 0) return;
    const double xs[4] = {0.5 / si.nseg, 2.0 / si.nseg, 0.0, 1.0};
    const double vals[4] = {2e-4, 3e-4, 4e-4, 5e-4};
    char text[600];
    int used = snprintf(text, sizeof text, "all.insert = pas\nall.g_pas = 1e-4\n");
    for (int q = 0; q < 4; ++q)
        used += snprintf(text + used, sizeof text - (size_t)used, "%s:%lld(%.17g).g_pas = %g\n", q % 2 ? "swc" : "sec",
                         q % 2 ? (long long)si.first_point_id : (long long)k, xs[q], vals[q]);
    ns_sim_model_t *m = NULL;
    CHECK_OK(ns_sim_model_create(NULL, &m));
    CHECK_OK(ns_sim_model_parse(m, text, strlen(text), "seg.model"));
    double *g = malloc((size_t)ci.compartments * sizeof *g);
    CHECK(g && resolve_param(m, cell, "pas", "g", g) == 0);
    double want_at[4];
    int32_t comp[4];
    for (int q = 0; q < 4; ++q) {
        CHECK_OK(ns_cell_locate(cell, k, xs[q], &comp[q]));
        want_at[q] = vals[q];
    }
    const double *area = ns_cell_area(cell);
    int64_t wrong = 0;
    for (int32_t i = 0; g && i < ci.compartments; ++i) {
        if (!(area[i] > 0.0)) continue;
        double want = 1e-4;
        for (int q = 0; q < 4; ++q)
            if (comp[q] == i) want = want_at[q];
        wrong += g[i] != want;
    }
    CHECK_MSG(wrong == 0 && comp[0] != comp[1] && comp[2] == comp[0], "segment selectors on section %d (nseg %d): %lld wrong",
              (int)k, (int)si.nseg, (long long)wrong);
    free(g);
    ns_sim_model_destroy(m);
    CHECK_OK(ns_sim_model_create(NULL, &m));
    CHECK_FAILS(ns_sim_model_insert(m, "sec:1(1.5)", "pas"), NS_ERR_INVALID_ARGUMENT, "'sec:1(1.5)'");
    CHECK_FAILS(ns_sim_model_insert(m, "soma(0.5)", "pas"), NS_ERR_INVALID_ARGUMENT, "'soma(0.5)'");
    CHECK_FAILS(ns_sim_model_insert(m, "swc:3(nan)", "pas"), NS_ERR_INVALID_ARGUMENT, "'swc:3(nan)'");
    ns_sim_model_destroy(m);
}

/* The generated TABLE lookup (branch-free, nmodl_gen_block.c nm_emit_callable) gives
 * nocmodl's values: hh's rates after init() on the contiguous path and on the
 * node_index path against nocmodl's branchy lookup written here (NaN: NaN,
 * xi <= 0: the first entry, xi >= 200: the last, else linear), bit for bit,
 * at both ends, just inside them, exactly on them, outside and NaN. */
static void table_lookup_is_nocmodls(void) {
    const ns_mech_catalogue *cat = ns_mech_builtin();
    const ns_mech_desc *hh = NULL;
    for (int k = 0; cat && k < cat->n; ++k)
        if (!strcmp(cat->mechs[k]->name, "hh")) hh = cat->mechs[k];
    CHECK(hh != NULL && hh->table_size == 5 + 6 * 201);
    if (!hh || hh->table_size != 5 + 6 * 201) return;
    enum { N = 12 };
    const double vs[N] = {-250.0, -100.0, -99.9999, -99.0, -65.0, 3.3, 99.0, 99.9999, 100.0, 250.0, NAN, -INFINITY};
    static const char *const cols[6] = {"minf", "mtau", "hinf", "htau", "ninf", "ntau"};
    int fi[6];
    for (int c = 0; c < 6; ++c) CHECK_OK(ns_mech_field_index(hh, cols[c], &fi[c]));
    for (int path = 0; path < 2; ++path) {
        double store[18][N], *field[18], global[1] = {1.0}, v[N], rhs[N] = {0}, d[N] = {0};
        double *table = calloc((size_t)hh->table_size, sizeof *table);
        double e[2][N], zero[2][N] = {{0}};
        int ni[N];
        for (int i = 0; i < N; ++i) { v[i] = vs[i]; ni[i] = i; e[0][i] = 50.0; e[1][i] = -77.0; }
        for (int f = 0; f < hh->n_fields; ++f) {
            field[f] = store[f];
            for (int i = 0; i < N; ++i) store[f][i] = hh->field_defaults[f];
        }
        ns_mech_ion_view ion[2] = {{e[0], zero[0], zero[0], NULL, NULL, NULL}, {e[1], zero[1], zero[1], NULL, NULL, NULL}};
        ns_mech_ppack p = {0};
        p.n = N;
        p.node_index = path ? ni : NULL;
        p.dt = 0.025;
        p.celsius = 6.3;
        p.v = v;
        p.rhs = rhs;
        p.d = d;
        p.field = field;
        p.global = global;
        p.table = table;
        p.ion = ion;
        if (!table) { CHECK(table != NULL); return; }
        hh->init(&p);
        CHECK(table[0] == 1.0 && global[0] == 1.0);
        int bad = 0;
        for (int i = 0; i < N; ++i) {
            const double xi = table[3] * (vs[i] - table[2]);
            for (int c = 0; c < 6; ++c) {
                const double *col = table + 5 + 201 * c;
                double want;
                if (isnan(xi)) want = xi;
                else if (xi <= 0.) want = col[0];
                else if (xi >= 200.) want = col[200];
                else {
                    const int j = (int)xi;
                    const double th = xi - (double)j;
                    want = col[j] + th * (col[j + 1] - col[j]);
                }
                const double got = store[fi[c]][i];
                if (!(got == want || (isnan(got) && isnan(want)))) {
                    if (bad++ < 5)
                        fprintf(stderr, "hh %s at v %g (%s path): %.17g, nocmodl's lookup %.17g\n", cols[c], vs[i],
                                path ? "node_index" : "contiguous", got, want);
                }
            }
        }
        CHECK_MSG(bad == 0, "%d lookups differ from nocmodl's", bad);
        free(table);
    }
}


/* ------------------------------------------ models per shape (shape_models) */

/* Soma v of n_cells cells (cell c of shape c % n_shapes, the (c / n_shapes)-th
 * of its shape, whose clamp grows with that rank) over 20 ms, `model` for
 * every shape or shape_models per shape. NULL when the creation fails. */
static double *run_shapes(const ns_cell_t *const *shapes, int32_t n_shapes, int64_t n_cells,
                          const ns_sim_model_t *model, const ns_sim_model_t *const *shape_models, int64_t *samples) {
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = NS_BACKEND_CPU;
    o.threads = 1;
    o.model = model;
    o.shape_models = shape_models;
    ns_sim_t *sim = NULL;
    CHECK_OK(ns_sim_create(n_shapes, shapes, n_cells, NULL, &p, &o, &sim));
    if (!sim) return NULL;
    for (int64_t c = 0; c < n_cells; ++c) {
        const ns_cell_t *cell = shapes[c % n_shapes];
        ns_cell_info ci;
        ns_cell_get_info(cell, &ci);
        int32_t soma;
        CHECK_OK(ns_cell_locate(cell, 0, 0.5, &soma));
        const double amp = 1.5e-4 * ci.total_area * (1.0 + 0.3 * (double)(c / n_shapes));
        CHECK_OK(ns_sim_add_iclamp(sim, c, soma, 2.0, 100.0, amp));
        CHECK_OK(ns_sim_add_recording(sim, c, soma, NULL));
    }
    CHECK_OK(ns_sim_advance(sim, ns_sim_steps_for(sim, 20.0)));
    int32_t sites = 0;
    const double *tr = ns_sim_traces(sim, samples, &sites);
    double *out = tr && sites == n_cells ? malloc((size_t)(*samples * sites) * sizeof *out) : NULL;
    if (out) memcpy(out, tr, (size_t)(*samples * sites) * sizeof *out);
    ns_sim_destroy(sim);
    return out;
}

/* Two shapes under two models in one simulation: every cell's soma trace is
 * the one of its shape simulated alone under its model, to the bit, and the
 * two models give different traces (the per-shape choice shows); a GLOBAL
 * that two models set differently, or a shape without a model, is refused. */
static void models_per_shape(ns_cell_t *const *cells) {
    ns_sim_model_t *a = model_of("all.insert = hh\n", "a.model");
    ns_sim_model_t *b = model_of("all.insert = pas\nall.e_pas = -70\nsoma.insert = hh\nsoma.gnabar_hh = 0.2\n",
                                 "b.model");
    ns_sim_model_t *g0 = model_of("all.insert = hh\nglobal.usetable_hh = 0\n", "g0.model");
    ns_sim_model_t *g1 = model_of("all.insert = hh\nglobal.usetable_hh = 1\n", "g1.model");
    if (!a || !b || !g0 || !g1) goto done;
    const ns_cell_t *both[2] = {cells[0], cells[1]};
    enum { PER = 2 };
    int64_t n_mix = 0, n_alone[2] = {0, 0}, n_swap = 0;
    const ns_sim_model_t *per[2] = {a, b}, *swapped[2] = {b, a};
    double *mix = run_shapes(both, 2, 2 * PER, NULL, per, &n_mix);
    double *alone[2] = {run_shapes(&both[0], 1, PER, a, NULL, &n_alone[0]),
                        run_shapes(&both[1], 1, PER, b, NULL, &n_alone[1])};
    double *swap = run_shapes(both, 2, 2 * PER, NULL, swapped, &n_swap);
    CHECK(mix && alone[0] && alone[1] && swap && n_mix > 100 && n_alone[0] == n_mix && n_alone[1] == n_mix &&
          n_swap == n_mix);
    if (mix && alone[0] && alone[1] && swap && n_alone[0] == n_mix && n_alone[1] == n_mix && n_swap == n_mix) {
        for (int64_t c = 0; c < 2 * PER; ++c) {
            int64_t differ = 0, moved = 0;
            for (int64_t t = 0; t < n_mix; ++t) {
                differ += memcmp(&mix[t * 2 * PER + c], &alone[c % 2][t * PER + c / 2], sizeof(double)) != 0;
                moved += mix[t * 2 * PER + c] != swap[t * 2 * PER + c];
            }
            CHECK_MSG(differ == 0, "models per shape: cell %lld: %lld of %lld samples differ from its shape alone",
                      (long long)c, (long long)differ, (long long)n_mix);
            CHECK_MSG(moved > n_mix / 2, "models per shape: cell %lld: the other model changes only %lld samples",
                      (long long)c, (long long)moved);
        }
    }
    free(mix);
    free(alone[0]);
    free(alone[1]);
    free(swap);
    /* refusals */
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = NS_BACKEND_CPU;
    ns_sim_t *sim = NULL;
    const ns_sim_model_t *clash[2] = {g0, g1}, *agree[2] = {g0, g0}, *none[2] = {NULL, b};
    o.shape_models = clash;
    CHECK_FAILS(ns_sim_create(2, both, 2, NULL, &p, &o, &sim), NS_ERR_INVALID_ARGUMENT, "g1.model:2:",
                "g0.model:2", "one value");
    CHECK(sim == NULL);
    o.shape_models = agree;
    CHECK_OK(ns_sim_create(2, both, 2, NULL, &p, &o, &sim));
    ns_sim_destroy(sim);
    sim = NULL;
    o.shape_models = none;
    CHECK_FAILS(ns_sim_create(2, both, 2, NULL, &p, &o, &sim), NS_ERR_INVALID_ARGUMENT, "shape 0 has no model");
    o.model = a; /* the default for the NULL entry */
    CHECK_OK(ns_sim_create(2, both, 2, NULL, &p, &o, &sim));
    ns_sim_destroy(sim);
done:
    ns_sim_model_destroy(a);
    ns_sim_model_destroy(b);
    ns_sim_model_destroy(g0);
    ns_sim_model_destroy(g1);
}

int main(void) {
    if (tmpdir_make("ns_sim_model")) return 1;
    builtins_are_generated();
    table_lookup_is_nocmodls();
    ns_cell_t *cells[3] = {NULL, NULL, NULL};
    for (int k = 0; k < 3; ++k) cells[k] = load_cell(SHAPES[k]);
    ns_cell_t *one = test_cylinder();
    if (cells[0] && cells[1] && cells[2] && one) {
        model_equals_handwritten(cells);
        fused_equals_per_step(cells);
        distances_against_neuron(cells[0], "l5pc_bbp_axon", 1);
        distances_against_neuron(cells[1], "ca1_h10", 0);
        distances_against_neuron(cells[2], "purk_dbbs", 0);
        /* a soma contour (Import3d's soma rules) and a small Allen cell */
        static const char *const more[2] = {"ngf_eNGC_contour", "allen_pvalb_469628681"};
        for (int k = 0; k < 2; ++k) {
            char file[128];
            snprintf(file, sizeof file, "%s.swc", more[k]);
            ns_cell_t *c = load_cell(file);
            if (c) distances_against_neuron(c, more[k], 0);
            ns_cell_destroy(c);
        }
        expression_semantics(one);
        statement_order(cells[0]);
        section_selectors(cells[0]);
        segment_selectors(cells[0]);
        model_var_reads(cells[1]);
        ion_values_per_node(cells);
        bad_input(cells[0], one);
        models_per_shape(cells);
    }
    for (int k = 0; k < 3; ++k) ns_cell_destroy(cells[k]);
    ns_cell_destroy(one);
    tmpdir_remove();
    return check_summary("test_sim_model");
}
