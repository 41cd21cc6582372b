/* A model on the GPU's onchip loop (src/sim/cuda/onchip.cu: the
 * generated functions of the built-in pas and hh with hh's states in shared
 * memory) against the CPU loop's model path (src/sim/cpu: the same model,
 * an independent implementation of the step), and the routing of models
 * to the onchip loop (src/sim/policy.c, src/sim/cuda/policy.c):
 *   - a small cell (dg_granule, 94 compartments, 8 lanes: 4 cells per warp,
 *     the last warp partly filled) and a big one (l5pc_bbp_axon, 1,221
 *     compartments, 32 lanes) in one simulation, two models (hh everywhere
 *     with pas in the dendrites by distance; pas and hh everywhere), 60 ms =
 *     2,400 steps (two launches: the states stored and loaded between them),
 *     recording at two sites per cell and spikes: spike times within 1e-6 ms,
 *     traces within 1e-6 mV RMS and 1e-5 mV at most (the GPU-vs-CPU bounds
 *     of tests/mech/test_sim_model_cuda.c), the model's states and assigned
 *     variables of a cell of each shape after the run within 1e-6 relative;
 *   - data/models/hh.model against the parameters' hh (the shorthand for the
 *     same built-in hh), both onchip: the same results bit for bit;
 *   - `auto` takes onchip for a model of built-in mechanisms as for the
 *     parameters' hh (2,112+ cells on an H100 ... 16 per SM), the tree loop
 *     for per-step mechanisms; a network moves the cells to the tree loop at
 *     ns_sim_init (refused when onchip was asked for by name); a parameter's
 *     array of an onchip part is refused, a state's handed out (checkpoints
 *     of the onchip loop: tests/sim/test_cable_checkpoint_cuda.c).
 * Without a GPU the test skips (77). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "load_cell.h"
#include "neurosolve/neurosolve.h"


#define CELLS 13   /* cell c has shape c % 2: 7 small, 6 big */
#define NVARS 6
static const char *const VARS[NVARS] = {"m_hh", "h_hh", "n_hh", "ina_hh", "mtau_hh", "i_pas"};

typedef struct run_out {
    int64_t samples;
    int32_t sites;
    double *traces;
    double *vars[2]; /* cells 0 and 1 (one of each shape): VARS, compartments each (NaN where absent) */
    int32_t n_comp[2];
    int64_t n_spikes[CELLS];
    double spikes[CELLS][64];
    ns_hines_method method;
    ns_sim_gpu_mechanisms path;
} run_out;

static void run(ns_backend backend, ns_hines_method method, ns_cell_t **cells, const ns_sim_params *p,
                const ns_sim_model_t *model, double tstop, run_out *out) {
    memset(out, 0, sizeof *out);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = backend;
    o.method = method;
    o.model = model;
    ns_sim_t *sim = NULL;
    CHECK_OK(ns_sim_create(2, (const ns_cell_t *const *)cells, CELLS, NULL, p, &o, &sim));
    if (!sim) return;
    for (int64_t c = 0; c < CELLS; ++c) {
        const int32_t soma = ns_sim_spike_compartment(sim, c);
        ns_cell_info ci;
        ns_cell_get_info(cells[c % 2], &ci);
        CHECK_OK(ns_sim_add_iclamp(sim, c, soma, 2.0 + 0.5 * (double)c, tstop, 1e-4 * ci.total_area * (1 + c % 3)));
        CHECK_OK(ns_sim_add_recording(sim, c, soma, NULL));
        CHECK_OK(ns_sim_add_recording(sim, c, ci.compartments * 2 / 3, NULL));
    }
    CHECK_OK(ns_sim_init(sim));
    CHECK_OK(ns_sim_advance(sim, ns_sim_steps_for(sim, tstop)));
    out->method = ns_sim_method(sim);
    out->path = ns_sim_gpu_mechanisms_of(sim);
    for (int c = 0; c < 2; ++c) {
        out->n_comp[c] = (int32_t)(ns_sim_cell_offset(sim, c + 1) - ns_sim_cell_offset(sim, c));
        out->vars[c] = malloc(NVARS * (size_t)out->n_comp[c] * sizeof(double));
        for (int k = 0; k < NVARS; ++k)
            if (ns_sim_get_model_var(sim, c, VARS[k], out->vars[c] + (size_t)k * out->n_comp[c]) != NS_OK)
                for (int32_t i = 0; i < out->n_comp[c]; ++i) out->vars[c][(size_t)k * out->n_comp[c] + i] = NAN;
    }
    const double *t = ns_sim_traces(sim, &out->samples, &out->sites);
    out->traces = malloc((size_t)(out->samples * out->sites) * sizeof(double));
    memcpy(out->traces, t, (size_t)(out->samples * out->sites) * sizeof(double));
    for (int64_t c = 0; c < CELLS; ++c) {
        const double *s = ns_sim_spikes(sim, c, &out->n_spikes[c]);
        for (int64_t q = 0; q < out->n_spikes[c] && q < 64; ++q) out->spikes[c][q] = s[q];
    }
    ns_sim_destroy(sim);
}

static void compare(const char *what, const run_out *a, const run_out *b, int vars) {
    CHECK(a->samples == b->samples && a->sites == b->sites && a->samples > 0);
    int64_t total = 0;
    double worst_t = 0.0;
    for (int64_t c = 0; c < CELLS; ++c) {
        CHECK_MSG(a->n_spikes[c] == b->n_spikes[c], "%s: cell %lld: %lld and %lld spikes", what, (long long)c,
                  (long long)a->n_spikes[c], (long long)b->n_spikes[c]);
        for (int64_t q = 0; q < a->n_spikes[c] && q < b->n_spikes[c] && q < 64; ++q)
            worst_t = fmax(worst_t, fabs(a->spikes[c][q] - b->spikes[c][q]));
        total += a->n_spikes[c];
    }
    double worst_rms = 0.0, worst_max = 0.0;
    for (int32_t k = 0; a->sites == b->sites && k < a->sites; ++k) {
        double sum = 0.0;
        for (int64_t s = 0; s < a->samples && s < b->samples; ++s) {
            const double d = a->traces[s * a->sites + k] - b->traces[s * a->sites + k];
            sum += d * d;
            worst_max = fmax(worst_max, fabs(d));
        }
        worst_rms = fmax(worst_rms, sqrt(sum / (double)a->samples));
    }
    double worst_var = 0.0;
    int nan_differ = 0, finite = 0;
    for (int c = 0; vars && c < 2; ++c) {
        CHECK(a->vars[c] && b->vars[c] && a->n_comp[c] == b->n_comp[c]);
        for (int64_t k = 0; a->vars[c] && b->vars[c] && k < (int64_t)NVARS * a->n_comp[c]; ++k) {
            const double x = a->vars[c][k], y = b->vars[c][k];
            if (isnan(x) || isnan(y)) nan_differ += isnan(x) != isnan(y);
            else finite++, worst_var = fmax(worst_var, fabs(x - y) / fmax(fabs(y), 1e-12));
        }
    }
    printf("%s: %lld spikes, max spike-time difference %.2e ms, max RMS %.2e mV, max |dv| %.2e mV; %d variable "
           "values within %.2e relative\n",
           what, (long long)total, worst_t, worst_rms, worst_max, finite, worst_var);
    CHECK_MSG(total >= CELLS, "%s: %lld spikes (the clamps should make at least one per cell)", what, (long long)total);
    CHECK_MSG(worst_t <= 1e-6, "%s: spike times differ by %g ms", what, worst_t);
    CHECK_MSG(worst_rms <= 1e-6 && worst_max <= 1e-5, "%s: traces differ (RMS %g, max %g mV)", what, worst_rms,
              worst_max);
    CHECK_MSG(!vars || (finite > 0 && nan_differ == 0 && worst_var <= 1e-6),
              "%s: model variables differ (%g relative, %d NaN places, %d finite)", what, worst_var, nan_differ,
              finite);
}

static void free_out(run_out *o) {
    free(o->traces);
    free(o->vars[0]);
    free(o->vars[1]);
}

static ns_sim_model_t *model_of(const char *text) {
    ns_sim_model_t *model = NULL;
    CHECK_OK(ns_sim_model_create(NULL, &model));
    CHECK_OK(ns_sim_model_parse(model, text, strlen(text), "onchip.model"));
    return model;
}

/* A simulation of `cells` cells of one shape under `method` (auto picks per
 * the SM count), created only: the loop it chose. */
static ns_sim_t *create_many(ns_cell_t *cell, int64_t cells, ns_hines_method method, const ns_sim_params *p,
                             const ns_sim_model_t *model, ns_sim_gpu_mechanisms gm) {
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = NS_BACKEND_CUDA;
    o.method = method;
    o.model = model;
    o.gpu_mechanisms = gm;
    ns_sim_t *sim = NULL;
    const ns_cell_t *const shapes[1] = {cell};
    CHECK_OK(ns_sim_create(1, shapes, cells, NULL, p, &o, &sim));
    return sim;
}

int main(void) {
    int gpus = 0;
    if (ns_cuda_device_count(&gpus) != NS_OK || gpus <= 0) CHECK_SKIP("no GPU (models on the onchip loop)");
    ns_cell_t *cells[2] = {test_load_cell("dg_granule_1220882a.swc", 35.4), test_load_cell("l5pc_bbp_axon.swc", 35.4)};
    ns_sim_params p;
    ns_sim_params_init(&p);

    /* 1. onchip (by name) against the CPU loop, two models */
    static const char *const MODELS[2][2] = {
        {"hh + pas(d)", "all.insert = hh\ndend.insert = pas\ndend.g_pas = 2e-4 * (1 + d / 500)\n"
                        "dend.e_pas = -65\ndend.gnabar_hh = 0.06\n"},
        {"pas + hh everywhere", "all.insert = pas hh\nall.g_pas = 1e-4\nall.e_pas = -70\n"}};
    for (int mi = 0; mi < 2; ++mi) {
        ns_sim_model_t *model = model_of(MODELS[mi][1]);
        run_out g, c;
        run(NS_BACKEND_CUDA, NS_HINES_ONCHIP, cells, &p, model, 60.0, &g);
        run(NS_BACKEND_CPU, NS_HINES_SEQUENTIAL, cells, &p, model, 60.0, &c);
        CHECK_MSG(g.method == NS_HINES_ONCHIP && g.path == NS_SIM_GPU_MECHANISMS_FUSED, "%s: ran %s, %s",
                  MODELS[mi][0], ns_hines_method_name(g.method), ns_sim_gpu_mechanisms_name(g.path));
        char what[160];
        snprintf(what, sizeof what, "%s, dg_granule x 7 + l5pc x 6, GPU onchip model vs CPU", MODELS[mi][0]);
        compare(what, &g, &c, 1);
        free_out(&g);
        free_out(&c);
        ns_sim_model_destroy(model);
    }

    /* 2. hh everywhere as a model (data/models/hh.model) and as the
     * parameters' hh (their shorthand for it), both onchip */
    {
        ns_sim_model_t *model = NULL;
        CHECK_OK(ns_sim_model_create(NULL, &model));
        CHECK_OK(ns_sim_model_read(model, NS_TEST_DATA "/../../data/models/hh.model"));
        run_out g, h;
        run(NS_BACKEND_CUDA, NS_HINES_ONCHIP, cells, &p, model, 60.0, &g);
        run(NS_BACKEND_CUDA, NS_HINES_ONCHIP, cells, &p, NULL, 60.0, &h);
        CHECK(g.method == NS_HINES_ONCHIP && h.method == NS_HINES_ONCHIP);
        compare("hh everywhere, onchip: hh.model vs the parameters' hh", &g, &h, 1);
        int same = g.samples == h.samples && g.sites == h.sites && g.traces && h.traces &&
                   memcmp(g.traces, h.traces, (size_t)(g.samples * g.sites) * sizeof(double)) == 0;
        for (int c = 0; c < 2 && same; ++c)
            same = g.vars[c] && h.vars[c] &&
                   memcmp(g.vars[c], h.vars[c], NVARS * (size_t)g.n_comp[c] * sizeof(double)) == 0;
        CHECK_MSG(same, "hh.model and the parameters' hh differ onchip (the same model: bit for bit expected)");
        free_out(&g);
        free_out(&h);
        ns_sim_model_destroy(model);
    }

    /* 3. routing under `auto`, the network move, state fields, checkpoints */
    {
        /* more than 16 cells per SM on any GPU up to 264 SMs (an H100 has 132) */
        const int64_t many = 16LL * 264;
        ns_sim_model_t *model = model_of("all.insert = hh\nall.ena = 50\nall.ek = -77\n");
        ns_sim_t *params = create_many(cells[0], many, NS_HINES_AUTO, &p, NULL, NS_SIM_GPU_MECHANISMS_AUTO);
        ns_sim_t *sim = create_many(cells[0], many, NS_HINES_AUTO, &p, model, NS_SIM_GPU_MECHANISMS_AUTO);
        ns_sim_t *step = create_many(cells[0], many, NS_HINES_AUTO, &p, model, NS_SIM_GPU_MECHANISMS_PER_STEP);
        CHECK(params && ns_sim_method(params) == NS_HINES_ONCHIP); /* the shape rule: onchip... */
        CHECK(sim && ns_sim_method(sim) == NS_HINES_ONCHIP);    /* ...for the model as for the params */
        CHECK(sim && ns_sim_gpu_mechanisms_of(sim) == NS_SIM_GPU_MECHANISMS_FUSED);
        CHECK(step && ns_sim_method(step) == NS_HINES_TREE);    /* per step: the tree loop */
        /* onchip by name with per-step mechanisms: refused, naming the way out */
        ns_sim_options o;
        ns_sim_options_init(&o);
        o.backend = NS_BACKEND_CUDA;
        o.method = NS_HINES_ONCHIP;
        o.model = model;
        o.gpu_mechanisms = NS_SIM_GPU_MECHANISMS_PER_STEP;
        ns_sim_t *bad = NULL;
        const ns_cell_t *const one[1] = {cells[0]};
        CHECK(ns_sim_create(1, one, 4, NULL, &p, &o, &bad) == NS_ERR_UNSUPPORTED && bad == NULL);
        CHECK_MSG(strstr(ns_last_error(), "'tree'") != NULL, "message: %s", ns_last_error());
        /* state fields of the onchip part: a state yes (hh's m over its instances), a parameter no */
        ns_sim_field f;
        CHECK(ns_sim_state_parts(sim) == 1);
        CHECK_OK(ns_sim_state_field(sim, 0, "m_hh", &f));
        CHECK(f.size > 0 && f.size % many == 0 && f.size <= many * ns_sim_cell_offset(sim, 1) && f.device >= 0 &&
              f.pos != NULL);
        CHECK(ns_sim_state_field(sim, 0, "gnabar_hh", &f) == NS_ERR_UNSUPPORTED);
        CHECK_MSG(strstr(ns_last_error(), "onchip") != NULL, "message: %s", ns_last_error());
        /* a network: the cells move to the tree loop at ns_sim_init, and run */
        int64_t syn = -1, src = -1;
        const double times[1] = {1.0};
        CHECK_OK(ns_sim_add_synapse(sim, 0, 0, "ExpSyn", &syn));
        CHECK_OK(ns_sim_add_spike_source(sim, times, 1, &src));
        CHECK_OK(ns_sim_connect(sim, src, syn, 0.5, 1.0));
        CHECK_OK(ns_sim_init(sim));
        CHECK(ns_sim_method(sim) == NS_HINES_TREE);
        CHECK_OK(ns_sim_advance(sim, 200));
        int64_t count = 0;
        ns_sim_spikes(sim, 0, &count);
        CHECK_MSG(count >= 1, "the synapse's cell spiked %lld times (0.5 uS at 2 ms should make it fire)", (long long)count);
        /* ...unless onchip was asked for by name */
        o.gpu_mechanisms = NS_SIM_GPU_MECHANISMS_AUTO;
        CHECK_OK(ns_sim_create(1, one, 4, NULL, &p, &o, &bad));
        CHECK(bad && ns_sim_method(bad) == NS_HINES_ONCHIP);
        CHECK_OK(ns_sim_add_synapse(bad, 0, 0, "ExpSyn", &syn));
        CHECK(ns_sim_init(bad) == NS_ERR_UNSUPPORTED);
        CHECK_MSG(strstr(ns_last_error(), "network") != NULL, "message: %s", ns_last_error());
        ns_sim_destroy(bad);
        ns_sim_destroy(params);
        ns_sim_destroy(sim);
        ns_sim_destroy(step);
        ns_sim_model_destroy(model);
    }
    ns_cell_destroy(cells[0]);
    ns_cell_destroy(cells[1]);
    return check_summary("test_sim_model_onchip");
}
