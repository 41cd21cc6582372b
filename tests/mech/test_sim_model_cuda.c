/* A model's mechanisms on the GPU (src/sim/cuda/mechanisms.c) against
 * the CPU loop's (src/mech/blocks.c), an independent implementation of
 * the same step (host entry points over lane blocks, the CPU Hines solve):
 *   - the built-in hh (generated) everywhere and pas in the dendrites, on
 *     three morphologies x 3 cells: spike times within 1e-6 ms, traces within
 *     1e-6 mV (the GPU adds IClamp after the mechanisms, the CPU after pas:
 *     sums in another order, and the GPU's exp);
 *   - a multi-channel layer 5 model from data/mechanisms/bbp (12 BBP
 *     mechanisms with calcium dynamics, distance-dependent Ih and a Ca hot
 *     zone), its library built with cc and nvcc (--cuda): spike times within
 *     1e-4 ms, RMS of v within 1e-4 mV per site over 300 ms;
 *   - a model whose library has no CUDA code is refused naming the mechanism;
 *   - FUNCTION_TABLEs (test/ftab.mod built with nvcc, the tables in the model text) with hh on
 *     the L5 cell: spike times within 1e-6 ms, RMS 1e-6 mV of the CPU loop.
 *   - the fused loop (pas and hh inside the tree kernel, sim/cuda/fused.h) that
 *     `auto` picks for built-in mechanisms: against the per-step path and
 *     the CPU loop (three models), assigned variables after a run, the
 *     checkpoint refusal; the L5 model's library runs per step and a fused
 *     request for it is refused.
 * Without a GPU the test skips (77); without nvcc, the BBP part says SKIPPED. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "load_cell.h"
#include "net/exchange.h"
#include "neurosolve/neurosolve.h"
#include "test_tmpdir.h"

#define MECH_DIR NS_TEST_DATA "/../../data/mechanisms"

static const char *HH_MODEL = "all.insert = hh\n"
                              "dend.insert = pas\n"
                              "dend.g_pas = 2e-4 * (1 + d / 500)\n"
                              "dend.e_pas = -65\n"
                              "dend.gnabar_hh = 0.06\n";

static const char *L5_MODEL =
    "all.insert = pas\n"
    "all.e_pas = -90\n"
    "all.g_pas = 3e-5\n"
    "soma.insert = Ca_LVAst Ca_HVA SKv3_1 SK_E2 K_Tst K_Pst Nap_Et2 NaTa_t CaDynamics_E2 Ih\n"
    "soma.ek = -85\n"
    "soma.ena = 50\n"
    "soma.gSKv3_1bar_SKv3_1 = 0.693\n"
    "soma.gNaTa_tbar_NaTa_t = 2.04\n"
    "soma.gamma_CaDynamics_E2 = 0.000501\n"
    "soma.decay_CaDynamics_E2 = 460\n"
    "axon.insert = NaTa_t K_Pst K_Tst SKv3_1 Nap_Et2 SK_E2 Ca_HVA Ca_LVAst CaDynamics_E2\n"
    "axon.ek = -85\n"
    "axon.ena = 50\n"
    "axon.gNaTa_tbar_NaTa_t = 3.137968\n"
    "axon.gSKv3_1bar_SKv3_1 = 1.021945\n"
    "axon.gK_Pstbar_K_Pst = 0.973538\n"
    "dend.insert = Ih\n"
    "apical.insert = NaTs2_t SKv3_1 Im SK_E2 Ca_LVAst Ca_HVA CaDynamics_E2\n"
    "apical.ek = -85\n"
    "apical.ena = 50\n"
    "apical.gIhbar_Ih = 0.0002*(-0.8696 + 2.087*exp(0.0031*d))\n"
    "apical.gCa_LVAstbar_Ca_LVAst = 0.0187*(0.01 + 0.99*(d > 685)*(d < 885))\n";


/* Run one model on `backend`; spikes of every cell and traces at 2 sites per cell. */
typedef struct run_out {
    int64_t samples;
    int32_t sites;
    double *traces;
    double *vars;   /* cell 0's model variables named in VARS, compartments each */
    int32_t n_vars, n_comp;
    int64_t n_spikes[16];
    double spikes[16][64];
    ns_sim_gpu_mechanisms path; /* how the mechanisms ran (ns_sim_gpu_mechanisms_of) */
    int graph;                  /* the per-step path's last part ran as a replayed CUDA graph */
    char graph_why[200];        /* why its capture was refused */
} run_out;

static int run_path(ns_backend backend, ns_sim_gpu_mechanisms gm, int n_shapes, ns_cell_t **cells, int cells_per,
                    const ns_sim_params *p, const ns_sim_model_t *model, double tstop, double amp, run_out *out) {
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = backend;
    o.gpu_mechanisms = gm;
    o.method = backend == NS_BACKEND_CPU ? NS_HINES_SEQUENTIAL : NS_HINES_AUTO;
    o.model = model;
    ns_sim_t *sim = NULL;
    const int64_t n = (int64_t)n_shapes * cells_per;
    ns_status st = ns_sim_create(n_shapes, (const ns_cell_t *const *)cells, n, NULL, p, &o, &sim);
    if (st != NS_OK) return -1;
    for (int64_t c = 0; c < n; ++c) {
        const int32_t soma = ns_sim_spike_compartment(sim, c);
        CHECK_OK(ns_sim_add_iclamp(sim, c, soma, 5.0 + 3.0 * (double)(c / n_shapes), tstop, amp * (1.0 + 0.2 * (c % 3))));
        ns_cell_info ci;
        ns_cell_get_info(cells[c % n_shapes], &ci);
        CHECK_OK(ns_sim_add_recording(sim, c, soma, NULL));
        CHECK_OK(ns_sim_add_recording(sim, c, ci.compartments * 2 / 3, NULL));
    }
    CHECK_OK(ns_sim_init(sim));
    CHECK_OK(ns_sim_advance(sim, ns_sim_steps_for(sim, tstop)));
    CHECK(ns_sim_method(sim) == (backend == NS_BACKEND_CPU ? NS_HINES_SEQUENTIAL : NS_HINES_TREE));
    out->path = ns_sim_gpu_mechanisms_of(sim);
    const char *why = "";
    out->graph = ns_sim_gpu_graph_of(sim, &why);
    snprintf(out->graph_why, sizeof out->graph_why, "%s", why);
    /* the mechanisms' and ions' state of cell 0 (ns_sim_get_model_var):
     * states, and RANGE assigned variables (the fused loop stores those in
     * the last step of each launch only: sim/cuda/fused.h) */
    static const char *const VARS[7] = {"m_hh", "h_hh", "cai", "m_NaTa_t", "ina_hh", "mtau_hh", "il_hh"};
    out->n_comp = (int32_t)(ns_sim_cell_offset(sim, 1) - ns_sim_cell_offset(sim, 0));
    out->vars = malloc(7 * (size_t)out->n_comp * sizeof *out->vars);
    out->n_vars = 0;
    for (int k = 0; out->vars && k < 7; ++k)
        if (ns_sim_get_model_var(sim, 0, VARS[k], out->vars + (size_t)out->n_vars * out->n_comp) == NS_OK)
            out->n_vars++;
    const double *t = ns_sim_traces(sim, &out->samples, &out->sites);
    out->traces = malloc((size_t)(out->samples * out->sites) * sizeof(double));
    memcpy(out->traces, t, (size_t)(out->samples * out->sites) * sizeof(double));
    for (int64_t c = 0; c < n && c < 16; ++c) {
        const double *s = ns_sim_spikes(sim, c, &out->n_spikes[c]);
        for (int64_t q = 0; q < out->n_spikes[c] && q < 64; ++q) out->spikes[c][q] = s[q];
    }
    ns_sim_destroy(sim);
    return 0;
}

static int run(ns_backend backend, int n_shapes, ns_cell_t **cells, int cells_per, const ns_sim_params *p,
               const ns_sim_model_t *model, double tstop, double amp, run_out *out) {
    return run_path(backend, NS_SIM_GPU_MECHANISMS_AUTO, n_shapes, cells, cells_per, p, model, tstop, amp, out);
}

/* the same traces and spikes, bit for bit */
static int same_bits(const run_out *a, const run_out *b) {
    return a->traces && b->traces && a->samples == b->samples && a->sites == b->sites &&
           memcmp(a->traces, b->traces, (size_t)(a->samples * a->sites) * sizeof(double)) == 0 &&
           memcmp(a->spikes, b->spikes, sizeof a->spikes) == 0 && memcmp(a->n_spikes, b->n_spikes, sizeof a->n_spikes) == 0;
}

static void compare(const char *what, const run_out *a, const run_out *b, int64_t cells, double tol_t, double tol_rms,
                    double tol_max) {
    CHECK(a->samples == b->samples && a->sites == b->sites);
    int64_t total = 0;
    double worst_t = 0.0;
    for (int64_t c = 0; c < cells && c < 16; ++c) {
        CHECK_MSG(a->n_spikes[c] == b->n_spikes[c], "%s: cell %lld: %lld spikes on the GPU, %lld on the CPU", what,
                  (long long)c, (long long)a->n_spikes[c], (long long)b->n_spikes[c]);
        for (int64_t q = 0; q < a->n_spikes[c] && q < b->n_spikes[c] && q < 64; ++q)
            worst_t = fmax(worst_t, fabs(a->spikes[c][q] - b->spikes[c][q]));
        total += a->n_spikes[c];
    }
    double worst_rms = 0.0, worst_max = 0.0;
    for (int32_t k = 0; k < a->sites; ++k) {
        double sum = 0.0;
        for (int64_t s = 0; s < a->samples; ++s) {
            const double d = a->traces[s * a->sites + k] - b->traces[s * a->sites + k];
            sum += d * d;
            worst_max = fmax(worst_max, fabs(d));
        }
        worst_rms = fmax(worst_rms, sqrt(sum / (double)a->samples));
    }
    /* the model's variables read back from the device against the CPU's
     * (NaN where a mechanism is absent: the same places) */
    double worst_var = 0.0;
    int nan_differ = 0;
    CHECK(a->n_vars == b->n_vars && a->n_vars >= 2 && a->n_comp == b->n_comp);
    for (int64_t k = 0; a->vars && b->vars && a->n_vars == b->n_vars && k < (int64_t)a->n_vars * a->n_comp; ++k) {
        if (isnan(a->vars[k]) || isnan(b->vars[k])) nan_differ += isnan(a->vars[k]) != isnan(b->vars[k]);
        else worst_var = fmax(worst_var, fabs(a->vars[k] - b->vars[k]) / fmax(fabs(b->vars[k]), 1e-12));
    }
    printf("%s: %lld spikes, max spike-time difference %.2e ms, max RMS %.2e mV, max |dv| %.2e mV; %d model variables "
           "of cell 0 within %.2e relative\n", what, (long long)total, worst_t, worst_rms, worst_max, a->n_vars,
           worst_var);
    CHECK_MSG(nan_differ == 0 && worst_var <= 1e-6, "%s: model variables differ (%g relative, %d NaN places)", what,
              worst_var, nan_differ);
    CHECK_MSG(total > 0, "%s: no spikes (the clamps should make some)", what);
    CHECK_MSG(worst_t <= tol_t, "%s: spike times differ by %g ms", what, worst_t);
    CHECK_MSG(worst_rms <= tol_rms && worst_max <= tol_max, "%s: traces differ (RMS %g, max %g mV)", what, worst_rms,
              worst_max);
}

static void free_out(run_out *o) {
    free(o->traces);
    free(o->vars);
}

int main(void) {
    int gpus = 0;
    if (ns_cuda_device_count(&gpus) != NS_OK || gpus <= 0) CHECK_SKIP("no GPU (model mechanisms on the GPU)");

    /* 1. built-in hh and pas */
    {
        const char *files[3] = {"ca1_h10.swc", "l5pc_bbp_axon.swc", "purk_dbbs.swc"};
        ns_cell_t *cells[3];
        for (int k = 0; k < 3; ++k) cells[k] = test_load_cell(files[k], 35.4);
        ns_sim_params p;
        ns_sim_params_init(&p);
        ns_sim_model_t *model = NULL;
        CHECK_OK(ns_sim_model_create(NULL, &model));
        CHECK_OK(ns_sim_model_parse(model, HH_MODEL, strlen(HH_MODEL), "hh.model"));
        /* the per-step path (forced) against the CPU loop */
        run_out g, c;
        memset(&g, 0, sizeof g);
        memset(&c, 0, sizeof c);
        CHECK(run_path(NS_BACKEND_CUDA, NS_SIM_GPU_MECHANISMS_PER_STEP, 3, cells, 3, &p, model, 40.0, 2.0, &g) == 0);
        CHECK(run(NS_BACKEND_CPU, 3, cells, 3, &p, model, 40.0, 2.0, &c) == 0);
        /* the CPU loop takes its fused pass for this model (the same rule) */
        CHECK(g.path == NS_SIM_GPU_MECHANISMS_PER_STEP && c.path == NS_SIM_GPU_MECHANISMS_FUSED);
        compare("hh + pas(d), 3 shapes x 3 cells, GPU per step vs CPU", &g, &c, 9, 1e-6, 1e-6, 1e-5);
        free_out(&g);
        free_out(&c);
        ns_sim_model_destroy(model);
        for (int k = 0; k < 3; ++k) ns_cell_destroy(cells[k]);
    }

    /* 1b. the fused loop (src/sim/cuda/fused.h: pas and hh inside the
     * tree kernel, 2,000 steps per launch) chosen by `auto` for models of
     * built-in mechanisms, against the per-step path and the CPU loop with
     * the tolerances above: hh everywhere, hh with pas in the dendrites,
     * pas and hh at every node (IClamp between them: the fused loop sums in
     * the CPU loop's order, pas, IClamp, hh; the per-step path adds IClamp
     * last). 60 ms = 2,400 steps: two launches, the states carried over and
     * the assigned variables (ina_hh, mtau_hh, il_hh) read after the run. */
    {
        const char *files[3] = {"ca1_h10.swc", "l5pc_bbp_axon.swc", "purk_dbbs.swc"};
        ns_cell_t *cells[3];
        for (int k = 0; k < 3; ++k) cells[k] = test_load_cell(files[k], 35.4);
        ns_sim_params p;
        ns_sim_params_init(&p);
        static const char *const MODELS[3][2] = {
            {"hh everywhere", "all.insert = hh\n"},
            {"hh + pas(d)", NULL},
            {"pas + hh everywhere", "all.insert = pas hh\nall.g_pas = 1e-4\nall.e_pas = -70\n"}};
        for (int mi = 0; mi < 3; ++mi) {
            const char *text = MODELS[mi][1] ? MODELS[mi][1] : HH_MODEL;
            ns_sim_model_t *model = NULL;
            CHECK_OK(ns_sim_model_create(NULL, &model));
            CHECK_OK(ns_sim_model_parse(model, text, strlen(text), "fused.model"));
            run_out f, g, c;
            memset(&f, 0, sizeof f);
            memset(&g, 0, sizeof g);
            memset(&c, 0, sizeof c);
            CHECK(run(NS_BACKEND_CUDA, 3, cells, 3, &p, model, 60.0, 2.0, &f) == 0);
            CHECK(run_path(NS_BACKEND_CUDA, NS_SIM_GPU_MECHANISMS_PER_STEP, 3, cells, 3, &p, model, 60.0, 2.0, &g) ==
                  0);
            CHECK(run(NS_BACKEND_CPU, 3, cells, 3, &p, model, 60.0, 2.0, &c) == 0);
            CHECK_MSG(f.path == NS_SIM_GPU_MECHANISMS_FUSED, "%s: auto ran %s", MODELS[mi][0],
                      ns_sim_gpu_mechanisms_name(f.path));
            CHECK(g.path == NS_SIM_GPU_MECHANISMS_PER_STEP);
            char what[160];
            snprintf(what, sizeof what, "%s, 3 shapes x 3 cells, GPU fused vs CPU", MODELS[mi][0]);
            compare(what, &f, &c, 9, 1e-6, 1e-6, 1e-5);
            snprintf(what, sizeof what, "%s, 3 shapes x 3 cells, GPU fused vs per step", MODELS[mi][0]);
            compare(what, &f, &g, 9, 1e-6, 1e-6, 1e-5);
            free_out(&f);
            free_out(&g);
            free_out(&c);
            ns_sim_model_destroy(model);
        }
        /* pas's assigned current after a run, fused against per step (at
         * rest in places: compared absolutely, in mA/cm^2), and a fused
         * simulation's checkpoint */
        ns_sim_model_t *model = NULL;
        CHECK_OK(ns_sim_model_create(NULL, &model));
        CHECK_OK(ns_sim_model_parse(model, HH_MODEL, strlen(HH_MODEL), "hh.model"));
        double *ipas[2] = {NULL, NULL};
        int32_t n0 = 0;
        CHECK(tmpdir_make("ns_sim_fused") == 0);
        for (int path = 0; path < 2; ++path) {
            ns_sim_options o;
            ns_sim_options_init(&o);
            o.backend = NS_BACKEND_CUDA;
            o.model = model;
            o.gpu_mechanisms = path == 0 ? NS_SIM_GPU_MECHANISMS_FUSED : NS_SIM_GPU_MECHANISMS_PER_STEP;
            ns_sim_t *sim = NULL;
            CHECK_OK(ns_sim_create(3, (const ns_cell_t *const *)cells, 3, NULL, &p, &o, &sim));
            CHECK(ns_sim_gpu_mechanisms_of(sim) == o.gpu_mechanisms);
            for (int64_t cl = 0; cl < 3; ++cl)
                CHECK_OK(ns_sim_add_iclamp(sim, cl, ns_sim_spike_compartment(sim, cl), 1.0, 100.0, 1.5));
            CHECK_OK(ns_sim_advance(sim, 2100));
            n0 = (int32_t)(ns_sim_cell_offset(sim, 1) - ns_sim_cell_offset(sim, 0));
            ipas[path] = malloc((size_t)n0 * sizeof(double));
            CHECK_OK(ns_sim_get_model_var(sim, 0, "i_pas", ipas[path]));
            if (path == 0) {
                /* a checkpoint of the fused loop (every state by name, issue 41) restored into a
                 * fresh simulation continues it bit for bit on the same loop */
                CHECK_OK(ns_sim_save_state(sim, tmp("fused.ckpt")));
                ns_sim_t *again = NULL;
                CHECK_OK(ns_sim_create(3, (const ns_cell_t *const *)cells, 3, NULL, &p, &o, &again));
                for (int64_t cl = 0; cl < 3; ++cl)
                    CHECK_OK(ns_sim_add_iclamp(again, cl, ns_sim_spike_compartment(again, cl), 1.0, 100.0, 1.5));
                CHECK_OK(ns_sim_restore_state(again, tmp("fused.ckpt")));
                double *x = malloc((size_t)n0 * sizeof(double)), *y = malloc((size_t)n0 * sizeof(double));
                CHECK_OK(ns_sim_get_model_var(again, 0, "i_pas", x));
                CHECK(memcmp(x, ipas[0], (size_t)n0 * sizeof(double)) == 0);
                CHECK_OK(ns_sim_advance(sim, 200));
                CHECK_OK(ns_sim_advance(again, 200));
                CHECK_OK(ns_sim_get_state(sim, 0, x));
                CHECK_OK(ns_sim_get_state(again, 0, y));
                CHECK_MSG(memcmp(x, y, (size_t)n0 * sizeof(double)) == 0, "a restored fused run differs");
                free(x);
                free(y);
                ns_sim_destroy(again);
            }
            ns_sim_destroy(sim);
        }
        double worst = 0.0;
        int finite = 0, nan_differ = 0;
        for (int32_t i = 0; ipas[0] && ipas[1] && i < n0; ++i) {
            if (isnan(ipas[0][i]) || isnan(ipas[1][i])) nan_differ += isnan(ipas[0][i]) != isnan(ipas[1][i]);
            else finite++, worst = fmax(worst, fabs(ipas[0][i] - ipas[1][i]));
        }
        printf("i_pas of cell 0 after 2,100 steps, fused vs per step: %d compartments, max difference %.2e mA/cm^2\n",
               finite, worst);
        CHECK_MSG(finite > 0 && nan_differ == 0 && worst <= 1e-9, "i_pas: %d finite, %d NaN places differ, %g", finite,
                  nan_differ, worst);
        free(ipas[0]);
        free(ipas[1]);
        tmpdir_remove();
        ns_sim_model_destroy(model);
        for (int k = 0; k < 3; ++k) ns_cell_destroy(cells[k]);
    }

    /* 2. the BBP layer 5 model (cc and nvcc build its library) */
    const int have_nvcc = system("nvcc --version > /dev/null 2>&1") == 0;
    const int have_cc = system("cc --version > /dev/null 2>&1") == 0;
    if (!have_nvcc || !have_cc) {
        printf("BBP part SKIPPED: no %s\n", have_cc ? "nvcc" : "cc");
        return check_summary("test_sim_model_cuda");
    }
    CHECK(tmpdir_make("ns_sim_model_cuda") == 0);
    char lib_path[600], cpu_lib_path[600];
    snprintf(lib_path, sizeof lib_path, "%s", tmp("libbbp_cuda.so"));
    snprintf(cpu_lib_path, sizeof cpu_lib_path, "%s", tmp("libbbp.so"));
    ns_mechanisms_build_options bo;
    memset(&bo, 0, sizeof bo);
    CHECK_OK(ns_mechanisms_build(MECH_DIR "/bbp", cpu_lib_path, &bo));
    bo.nvcc = "nvcc";
    CHECK_OK(ns_mechanisms_build(MECH_DIR "/bbp", lib_path, &bo));
    ns_mech_library_t *lib = NULL, *cpu_lib = NULL;
    CHECK_OK(ns_mech_library_open(lib_path, &lib));
    CHECK_OK(ns_mech_library_open(cpu_lib_path, &cpu_lib));
    ns_cell_t *l5[1] = {test_load_cell("l5pc_bbp_axon.swc", 100.0)};
    ns_sim_params p;
    ns_sim_params_init(&p);
    p.celsius = 34.0;
    p.v_init = -80.0;
    p.region[NS_REGION_BASAL].cm = p.region[NS_REGION_APICAL].cm = 2.0;
    ns_sim_model_t *model = NULL;
    CHECK_OK(ns_sim_model_create(lib, &model));
    CHECK_OK(ns_sim_model_parse(model, L5_MODEL, strlen(L5_MODEL), "l5.model"));
    run_out g, c;
    memset(&g, 0, sizeof g);
    memset(&c, 0, sizeof c);
    /* per step asked for: the library's fused launches and the step's graph (auto keeps one
     * launch per mechanism until this test and the bench rows have run on a GPU) */
    CHECK(run_path(NS_BACKEND_CUDA, NS_SIM_GPU_MECHANISMS_PER_STEP, 1, l5, 2, &p, model, 300.0, 0.8, &g) == 0);
    CHECK(run(NS_BACKEND_CPU, 1, l5, 2, &p, model, 300.0, 0.8, &c) == 0);
    compare("BBP layer 5 model, 2 cells, GPU vs CPU", &g, &c, 2, 1e-4, 1e-4, 1e-2);
    /* a library's mechanisms run per step; asking for the fused loop is refused */
    CHECK(g.path == NS_SIM_GPU_MECHANISMS_PER_STEP);
    /* ABI 6: every BBP mechanism is a member of the library's fused launches (one launch per
     * phase for all of them), each with its own case; none in the library built without --cuda */
    {
        int members = 0;
        unsigned seen = 0;
        ns_mech_cuda_fused_fn cur = NULL;
        for (int k = 0; k < ns_mech_library_count(lib); ++k) {
            const ns_mech_desc *d = ns_mech_library_get(lib, k), *dc = ns_mech_library_get(cpu_lib, k);
            CHECK_MSG(d->fused_index >= 0 && d->fused_index < 32 && !(seen & (1u << d->fused_index)) &&
                          d->cuda_fused_current && d->cuda_fused_state,
                      "%s: fused_index %d", d->name, d->fused_index);
            if (d->fused_index >= 0 && d->fused_index < 32) seen |= 1u << d->fused_index;
            if (!cur) cur = d->cuda_fused_current;
            CHECK(d->cuda_fused_current == cur);
            CHECK(dc->fused_index == -1 && !dc->cuda_fused_current && !dc->cuda_fused_state);
            members++;
        }
        CHECK(members == 12);
    }
    /* the step replayed as a CUDA graph (pas: no t read; no network) */
    CHECK_MSG(g.graph == 1, "the per-step path ran without its graph (%s)", g.graph_why);
    printf("BBP: per step with the library's fused launches, graph %d (refused: '%s')\n", g.graph, g.graph_why);
    /* deterministic: the same run again gives the same bits (a state launch that ran a member
     * reading cai with the CaDynamics_E2 that writes it would race here) */
    {
        run_out g2;
        memset(&g2, 0, sizeof g2);
        CHECK(run_path(NS_BACKEND_CUDA, NS_SIM_GPU_MECHANISMS_PER_STEP, 1, l5, 2, &p, model, 300.0, 0.8, &g2) == 0);
        CHECK(g2.samples == g.samples && g2.sites == g.sites);
        CHECK_MSG(same_bits(&g2, &g), "BBP: two GPU runs differ");
        free_out(&g2);
    }
    /* one launch per mechanism (the path before ABI 6, no graph): the same model against the CPU
     * and against the fused launches, within the GPU-vs-CPU bounds */
    {
        run_out pm;
        memset(&pm, 0, sizeof pm);
        CHECK(run_path(NS_BACKEND_CUDA, NS_SIM_GPU_MECHANISMS_PER_MECHANISM, 1, l5, 2, &p, model, 300.0, 0.8, &pm) == 0);
        CHECK(pm.path == NS_SIM_GPU_MECHANISMS_PER_MECHANISM && pm.graph == 0);
        compare("BBP layer 5 model, 2 cells, GPU per mechanism vs CPU", &pm, &c, 2, 1e-4, 1e-4, 1e-2);
        /* not the same bits: the fused kernels inline every member's functions, and nvcc contracts
         * their expressions into FMAs differently than in the per-mechanism kernels (H100,
         * 2026-12-07: max |dv| 4.8e-10 mV over 300 ms, the GPU-vs-CPU scale); the order of the
         * phases and of the concentration writers is the same (the determinism check above) */
        compare("BBP layer 5 model, 2 cells, GPU fused launches vs per mechanism", &g, &pm, 2, 1e-4, 1e-4, 1e-2);
        free_out(&pm);
    }
    {
        ns_sim_options o;
        ns_sim_options_init(&o);
        o.backend = NS_BACKEND_CUDA;
        o.model = model;
        o.gpu_mechanisms = NS_SIM_GPU_MECHANISMS_FUSED;
        ns_sim_t *sim = NULL;
        CHECK(ns_sim_create(1, (const ns_cell_t *const *)l5, 1, NULL, &p, &o, &sim) == NS_ERR_UNSUPPORTED);
        CHECK_MSG(strstr(ns_last_error(), "fused") != NULL, "message: %s", ns_last_error());
        CHECK(sim == NULL);
    }
    free_out(&g);
    free_out(&c);
    ns_sim_model_destroy(model);

    /* 4. FUNCTION_TABLEs on the GPU (test/ftab.mod, built with nvcc; the tables in the model text,
     * uploaded by the GPU loop): hh and ftab on the L5 cell against the CPU loop */
    {
        static const char *FTAB_MODEL = "all.insert = hh ftab\nall.gbar_ftab = 0.002\n"
                                        "table.tabninf_ftab = x -90 -60 -40 30 ; y 0.01 0.2 0.6 0.99\n"
                                        "table.tabntau_ftab = range 2 -100 50 ; range 3 1 3 ; y 2 2.5 3 1 1.5 4\n";
        char cmd[1200], ftlib[600];
        snprintf(cmd, sizeof cmd, "mkdir -p %s && cp %s/test/ftab.mod %s/", tmp("ftab"), MECH_DIR, tmp("ftab"));
        CHECK(system(cmd) == 0);
        snprintf(ftlib, sizeof ftlib, "%s", tmp("libftab_cuda.so"));
        CHECK_OK(ns_mechanisms_build(tmp("ftab"), ftlib, &bo)); /* bo: nvcc */
        ns_mech_library_t *fl = NULL;
        CHECK_OK(ns_mech_library_open(ftlib, &fl));
        const ns_mech_desc *fd = NULL;
        if (fl) CHECK_OK(ns_mech_library_find(fl, "ftab", &fd));
        CHECK_MSG(fd && fd->cuda_state && !fd->cuda_why_not, "ftab: %s", fd && fd->cuda_why_not ? fd->cuda_why_not : "");
        CHECK(fd && fd->fused_index >= 0 && fd->cuda_fused_current); /* a member of its library's fused launches */
        ns_sim_model_t *fm = NULL;
        if (fl) CHECK_OK(ns_sim_model_create(fl, &fm));
        if (fm) CHECK_OK(ns_sim_model_parse(fm, FTAB_MODEL, strlen(FTAB_MODEL), "ftab.model"));
        run_out fg, fc;
        memset(&fg, 0, sizeof fg);
        memset(&fc, 0, sizeof fc);
        ns_sim_params fp;
        ns_sim_params_init(&fp);
        if (fm) {
            CHECK(run(NS_BACKEND_CUDA, 1, l5, 2, &fp, fm, 100.0, 0.8, &fg) == 0);
            CHECK(run(NS_BACKEND_CPU, 1, l5, 2, &fp, fm, 100.0, 0.8, &fc) == 0);
            compare("hh + ftab (FUNCTION_TABLEs), 2 cells, GPU vs CPU", &fg, &fc, 2, 1e-6, 1e-6, 1e-5);
            /* ftab in the library's fused launches (their ppacks carry the tables): the same bits */
            run_out fs;
            memset(&fs, 0, sizeof fs);
            CHECK(run_path(NS_BACKEND_CUDA, NS_SIM_GPU_MECHANISMS_PER_STEP, 1, l5, 2, &fp, fm, 100.0, 0.8, &fs) == 0);
            CHECK_MSG(same_bits(&fs, &fg), "hh + ftab: the fused launches and one launch per mechanism differ");
            free_out(&fs);
        }
        free_out(&fg);
        free_out(&fc);
        ns_sim_model_destroy(fm);
        ns_mech_library_close(fl);
    }

    /* 3. a library without CUDA code on the GPU: refused, naming a mechanism */
    CHECK_OK(ns_sim_model_create(cpu_lib, &model));
    CHECK_OK(ns_sim_model_parse(model, L5_MODEL, strlen(L5_MODEL), "l5.model"));
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = NS_BACKEND_CUDA;
    o.model = model;
    ns_sim_t *sim = NULL;
    CHECK(ns_sim_create(1, (const ns_cell_t *const *)l5, 1, NULL, &p, &o, &sim) == NS_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(ns_last_error(), "has no CUDA code") != NULL, "message: %s", ns_last_error());
    CHECK(sim == NULL);
    ns_sim_model_destroy(model);
    ns_mech_library_close(lib);
    ns_mech_library_close(cpu_lib);
    ns_cell_destroy(l5[0]);
    tmpdir_remove();
    return check_summary("test_sim_model_cuda");
}
