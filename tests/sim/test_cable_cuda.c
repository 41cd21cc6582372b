/* The GPU simulation loop against the CPU loop: a population of several real
 * morphologies (many cells, different stimuli) run on both; the GPU's
 * voltages at every recorded site and its spike times must match the CPU's
 * (not bit for bit: the GPU's exp and fused multiply-adds round differently;
 * measured differences are ~1e-10 mV), for both GPU loops (tree, the
 * mechanisms fused and per step; onchip with several lane counts: the
 * parameters' hh and pas as the model the onchip kernel runs). Also a NaN
 * stop naming the cell, and the onchip loop's refusal of a cell beyond its
 * shared memory (a model runs there only). Skips without a GPU. */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "neurosolve/neurosolve.h"

static const char *files[] = {"ca1_h10.swc", "str_lts_noaxon.swc", "dg_granule_1220882a.swc", "purk_dbbs.swc"};
#define N_FILES 4
#define N_CELLS 203

static ns_sim_t *make_sim(ns_backend backend, ns_hines_method method, int32_t lanes, ns_cell_t **cells) {
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = backend;
    o.method = method;
    o.gpu_lanes = lanes;
    o.record_every = 2;
    ns_sim_t *sim = NULL;
    CHECK_OK(ns_sim_create(N_FILES, (const ns_cell_t *const *)cells, N_CELLS, NULL, &p, &o, &sim));
    if (!sim) return NULL;
    for (int64_t c = 0; c < N_CELLS; ++c) {
        int32_t soma;
        CHECK_OK(ns_cell_locate(cells[c % N_FILES], 0, 0.5, &soma));
        ns_cell_info ci;
        ns_cell_get_info(cells[c % N_FILES], &ci);
        CHECK_OK(ns_sim_add_iclamp(sim, c, soma, 2.0 + 0.1 * (c % 11), 40.0, 1e-4 * ci.total_area * (1 + (c % 3))));
        if (c % 17 == 0) {
            CHECK_OK(ns_sim_add_recording(sim, c, soma, NULL));
            CHECK_OK(ns_sim_add_recording(sim, c, ns_tree_size(ns_cell_tree(cells[c % N_FILES])) - 1, NULL));
        }
    }
    return sim;
}

/* One GPU loop against the CPU run (2400 steps, already advanced). */
static void compare(ns_sim_t *cpu, ns_hines_method method, int32_t lanes, ns_cell_t **cells) {
    ns_sim_t *gpu = make_sim(NS_BACKEND_CUDA, method, lanes, cells);
    if (!gpu) return;
    const char *name = ns_hines_method_name(ns_sim_method(gpu));
    CHECK(ns_sim_backend(gpu) == NS_BACKEND_CUDA);
    /* AUTO with about 50 cells per shape (fewer than 16 per SM): the tree loop */
    CHECK_MSG(ns_sim_method(gpu) == (method == NS_HINES_AUTO ? NS_HINES_TREE : method), "method %s resolved to %s",
              ns_hines_method_name(method), name);
    /* several calls, one longer than a GPU launch part (2000 steps) */
    CHECK_OK(ns_sim_advance(gpu, 100));
    CHECK_OK(ns_sim_advance(gpu, 2300));
    int64_t sa, sb;
    int32_t na, nb;
    const double *ta = ns_sim_traces(cpu, &sa, &na), *tb = ns_sim_traces(gpu, &sb, &nb);
    CHECK(sa == sb && na == nb && sa == 1201);
    double worst = 0.0;
    for (int64_t i = 0; sa == sb && na == nb && i < sa * na; ++i) worst = fmax(worst, fabs(ta[i] - tb[i]));
    CHECK_MSG(worst < 1e-6, "%s: GPU traces differ from the CPU's by %g mV", name, worst);
    double wspike = 0.0;
    int64_t total = 0;
    for (int64_t c = 0; c < N_CELLS; ++c) {
        int64_t a, b;
        const double *xa = ns_sim_spikes(cpu, c, &a), *xb = ns_sim_spikes(gpu, c, &b);
        CHECK_MSG(a == b, "%s: cell %lld: %lld spikes on the CPU, %lld on the GPU", name, (long long)c,
                  (long long)a, (long long)b);
        for (int64_t q = 0; q < a && q < b; ++q) wspike = fmax(wspike, fabs(xa[q] - xb[q]));
        total += a;
    }
    CHECK(total > N_CELLS);
    CHECK_MSG(wspike < 1e-6, "%s: GPU spike times differ by %g ms", name, wspike);
    double va[2000], vb[2000], ma[2000], mb[2000];
    CHECK_OK(ns_sim_get_state(cpu, 77, va));
    CHECK_OK(ns_sim_get_state(gpu, 77, vb));
    CHECK_OK(ns_sim_get_model_var(cpu, 77, "m_hh", ma));
    CHECK_OK(ns_sim_get_model_var(gpu, 77, "m_hh", mb));
    double ws = 0.0, wm = 0.0;
    for (int32_t i = 0; i < ns_tree_size(ns_cell_tree(cells[77 % N_FILES])); ++i) {
        ws = fmax(ws, fabs(va[i] - vb[i]));
        wm = fmax(wm, fabs(ma[i] - mb[i]));
    }
    CHECK_MSG(ws < 1e-6 && wm < 1e-8, "%s: GPU state of cell 77 differs by %g mV, m by %g", name, ws, wm);
    printf("%s (lanes asked %d, used %d): %lld spikes, traces within %.2e mV, spikes within %.2e ms\n", name,
           (int)lanes, (int)ns_sim_gpu_lanes(gpu), (long long)total, worst, wspike);
    /* NaN: an overflowing current in cell 150 only */
    CHECK_OK(ns_sim_init(gpu));
    CHECK_OK(ns_sim_add_iclamp(gpu, 150, 0, 1.0, 1.0, 1e308));
    ns_status st = ns_sim_advance(gpu, 200);
    CHECK(st == NS_ERR_NOT_FINITE);
    CHECK_MSG(strstr(ns_last_error(), "cell 150,") != NULL, "%s: %s", name, ns_last_error());
    ns_sim_destroy(gpu);
}

/* Every bundled morphology that reads with its own radii (53 of 54), two
 * cells each, the 38,580-compartment tracing included: the GPU loop (auto,
 * which runs the large cells in the tree loop, and tree for all) against
 * the CPU loop (and onchip, for comparison), spike times within 1e-9 ms,
 * traces within 1e-7 mV (see below). */
static void test_bundled_population(void) {
    enum { MAX = 64, PER = 2, STEPS = 1200 };
    ns_cell_t *cells[MAX] = {0};
    int n = 0;
    DIR *dir = opendir(NS_MORPHOLOGIES);
    char *names[128];
    int nn = 0;
    for (struct dirent *e; dir && (e = readdir(dir)) != NULL && nn < 128;) {
        const size_t len = strlen(e->d_name);
        if (len > 4 && strcmp(e->d_name + len - 4, ".swc") == 0) names[nn++] = strdup(e->d_name);
    }
    if (dir) closedir(dir);
    for (int k = 0; k < nn; ++k) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", NS_MORPHOLOGIES, names[k]);
        ns_morph_t *m = NULL;
        if (n < MAX && ns_swc_read(path, NULL, &m) == NS_OK && ns_discretize(m, NULL, &cells[n]) == NS_OK) ++n;
        ns_morph_destroy(m);
        free(names[k]);
    }
    CHECK_MSG(n == 53, "%d bundled morphologies read with their own radii, expected 53", n);
    ns_sim_t *sims[4] = {0};
    const ns_backend be[4] = {NS_BACKEND_CPU, NS_BACKEND_CUDA, NS_BACKEND_CUDA, NS_BACKEND_CUDA};
    /* the last: the tree loop with the mechanisms per step (the others fused) */
    const ns_hines_method me[4] = {NS_HINES_AUTO, NS_HINES_AUTO, NS_HINES_TREE, NS_HINES_TREE};
    const int64_t N = (int64_t)n * PER;
    for (int b = 0; b < 4 && n > 0; ++b) {
        ns_sim_params p;
        ns_sim_params_init(&p);
        ns_sim_options o;
        ns_sim_options_init(&o);
        o.backend = be[b];
        o.method = me[b];
        if (b == 3) o.gpu_mechanisms = NS_SIM_GPU_MECHANISMS_PER_STEP;
        CHECK_OK(ns_sim_create(n, (const ns_cell_t *const *)cells, N, NULL, &p, &o, &sims[b]));
        for (int64_t c = 0; sims[b] && c < N; ++c) {
            ns_cell_info ci;
            ns_cell_get_info(cells[c % n], &ci);
            const int32_t soma = ns_sim_spike_compartment(sims[b], c);
            CHECK_OK(ns_sim_add_iclamp(sims[b], c, soma, 1.0, 25.0, 2e-4 * ci.total_area * (1 + c % 2)));
            CHECK_OK(ns_sim_add_recording(sims[b], c, soma, NULL));
            CHECK_OK(ns_sim_add_recording(sims[b], c, ns_tree_size(ns_cell_tree(cells[c % n])) - 1, NULL));
        }
        if (sims[b]) CHECK_OK(ns_sim_advance(sims[b], STEPS));
    }
    for (int b = 1; b < 4 && sims[0] && sims[b]; ++b) {
        int64_t sa, sb;
        int32_t na, nb;
        const double *ta = ns_sim_traces(sims[0], &sa, &na), *tb = ns_sim_traces(sims[b], &sb, &nb);
        CHECK(sa == sb && na == nb && sa == STEPS + 1);
        double worst = 0.0, wspike = 0.0;
        int64_t wsite = -1;
        for (int64_t i = 0; sa == sb && na == nb && i < sa * na; ++i)
            if (fabs(ta[i] - tb[i]) > worst) worst = fabs(ta[i] - tb[i]), wsite = i % na;
        if (wsite >= 0) /* sites: soma, last compartment of each cell in order */
            printf("bundled population (%s): largest trace difference at cell %lld (%d compartments), %s\n",
                   ns_hines_method_name(me[b]), (long long)(wsite / 2),
                   (int)ns_tree_size(ns_cell_tree(cells[(wsite / 2) % n])), wsite % 2 ? "last compartment" : "soma");
        int64_t spikes = 0;
        for (int64_t c = 0; c < N; ++c) {
            int64_t x, y;
            const double *xa = ns_sim_spikes(sims[0], c, &x), *xb = ns_sim_spikes(sims[b], c, &y);
            CHECK_MSG(x == y, "bundled population (%s), cell %lld: %lld spikes on the CPU, %lld on the GPU",
                      ns_hines_method_name(me[b]), (long long)c, (long long)x, (long long)y);
            for (int64_t q = 0; q < x && q < y; ++q) wspike = fmax(wspike, fabs(xa[q] - xb[q]));
            spikes += x;
        }
        CHECK(spikes > N);
        /* spike times to the 1e-9 ms; traces to 1e-7 mV: the worst
         * site (the soma of ngf_eNGC_contour, 1,642 compartments) differs by
         * 1.1e-8 mV, rounding carried through 1,200 steps of its dynamics,
         * although one solve of its matrix differs from NEURON's order by
         * 6e-16 relative (docs/simulation.md, "Agreement") */
        CHECK_MSG(wspike <= 1e-9, "bundled population (%s): spikes within %.2e ms", ns_hines_method_name(me[b]),
                  wspike);
        CHECK_MSG(worst <= 1e-7, "bundled population (%s): traces within %.2e mV", ns_hines_method_name(me[b]), worst);
        printf("bundled population x%d (%s, resolved %s): %lld spikes, traces within %.2e mV, spikes within %.2e ms\n",
               PER, ns_hines_method_name(me[b]), ns_hines_method_name(ns_sim_method(sims[b])), (long long)spikes,
               worst, wspike);
    }
    /* auto: 53 shape groups of 2 cells (too few for the onchip loop) all
     * join the tree loop */
    if (sims[1]) CHECK(ns_sim_method(sims[1]) == NS_HINES_TREE);
    if (sims[2]) CHECK(ns_sim_method(sims[2]) == NS_HINES_TREE);
    for (int b = 0; b < 4; ++b) ns_sim_destroy(sims[b]);
    for (int k = 0; k < n; ++k) ns_cell_destroy(cells[k]);
}

/* A cell too large for shared memory (mouselight_AA0059, 5,500
 * compartments: the onchip loop refuses it by name, its model runs in shared
 * memory only) next to a small one, the tree loop against the CPU loop. */
static void test_large_cell(void) {
    const char *names[2] = {"mouselight_AA0059_rootlast.swc", "dg_granule_1220882a.swc"};
    ns_cell_t *cells[2] = {0};
    for (int k = 0; k < 2; ++k) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", NS_MORPHOLOGIES, names[k]);
        ns_morph_t *m = NULL;
        CHECK_OK(ns_swc_read(path, NULL, &m));
        if (m) CHECK_OK(ns_discretize(m, NULL, &cells[k]));
        ns_morph_destroy(m);
    }
    if (cells[0] && cells[1]) {
        ns_sim_params p;
        ns_sim_params_init(&p);
        ns_sim_options o;
        ns_sim_options_init(&o);
        o.backend = NS_BACKEND_CUDA;
        o.method = NS_HINES_ONCHIP;
        ns_sim_t *oc = NULL;
        CHECK_FAILS(ns_sim_create(2, (const ns_cell_t *const *)cells, 6, NULL, &p, &o, &oc), NS_ERR_UNSUPPORTED,
                    "shared memory", "'tree'");
        ns_sim_destroy(oc);
    }
    ns_sim_t *sims[2] = {0};
    for (int b = 0; b < 2 && cells[0] && cells[1]; ++b) {
        ns_sim_params p;
        ns_sim_params_init(&p);
        ns_sim_options o;
        ns_sim_options_init(&o);
        o.backend = b ? NS_BACKEND_CUDA : NS_BACKEND_CPU;
        o.method = b ? NS_HINES_TREE : NS_HINES_AUTO;
        CHECK_OK(ns_sim_create(2, (const ns_cell_t *const *)cells, 6, NULL, &p, &o, &sims[b]));
        for (int64_t c = 0; sims[b] && c < 6; ++c) {
            ns_cell_info ci;
            ns_cell_get_info(cells[c % 2], &ci);
            const int32_t soma = ns_sim_spike_compartment(sims[b], c);
            CHECK_OK(ns_sim_add_iclamp(sims[b], c, soma, 1.0, 20.0, 1.5e-4 * ci.total_area * (1 + c % 3)));
            CHECK_OK(ns_sim_add_recording(sims[b], c, soma, NULL));
            CHECK_OK(ns_sim_add_recording(sims[b], c, ns_tree_size(ns_cell_tree(cells[c % 2])) - 1, NULL));
        }
        if (sims[b]) CHECK_OK(ns_sim_advance(sims[b], 1000));
    }
    if (sims[0] && sims[1]) {
        CHECK(ns_sim_method(sims[1]) == NS_HINES_TREE);
        int64_t sa, sb;
        int32_t na, nb;
        const double *ta = ns_sim_traces(sims[0], &sa, &na), *tb = ns_sim_traces(sims[1], &sb, &nb);
        CHECK(sa == sb && na == nb && sa == 1001);
        double worst = 0.0;
        for (int64_t i = 0; sa == sb && na == nb && i < sa * na; ++i) worst = fmax(worst, fabs(ta[i] - tb[i]));
        int64_t spikes = 0;
        for (int64_t c = 0; c < 6; ++c) {
            int64_t a, b2;
            ns_sim_spikes(sims[0], c, &a);
            ns_sim_spikes(sims[1], c, &b2);
            CHECK_MSG(a == b2, "large cell test, cell %lld: %lld spikes on the CPU, %lld on the GPU", (long long)c,
                      (long long)a, (long long)b2);
            spikes += a;
        }
        CHECK(spikes > 6);
        CHECK_MSG(worst < 1e-6, "large cell test: GPU traces differ from the CPU's by %g mV", worst);
        printf("the tree loop, a 5,500-compartment cell beside small ones: %lld spikes, traces within "
               "%.2e mV\n", (long long)spikes, worst);
    }
    for (int b = 0; b < 2; ++b) ns_sim_destroy(sims[b]);
    for (int k = 0; k < 2; ++k) ns_cell_destroy(cells[k]);
}

int main(void) {
    int devices = 0;
    if (ns_cuda_device_count(&devices) != NS_OK || devices == 0) {
        printf("SKIPPED: no GPU\n");
        return 77;
    }
    ns_cell_t *cells[N_FILES] = {0};
    for (int k = 0; k < N_FILES; ++k) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", NS_MORPHOLOGIES, files[k]);
        ns_morph_t *m = NULL;
        CHECK_OK(ns_swc_read(path, NULL, &m));
        CHECK_OK(ns_discretize(m, NULL, &cells[k]));
        ns_morph_destroy(m);
        if (!cells[k]) return check_summary("test_cable_cuda");
    }
    ns_sim_t *cpu = make_sim(NS_BACKEND_CPU, NS_HINES_AUTO, 0, cells);
    if (cpu) CHECK_OK(ns_sim_advance(cpu, 2400));
    /* both GPU loops; onchip with the automatic lane count and with 1, 4
     * and 32 lanes per cell asked for (more where a warp's cells do not fit
     * shared memory) */
    const struct { ns_hines_method method; int32_t lanes; } gpu_runs[] = {
        {NS_HINES_AUTO, 0}, {NS_HINES_ONCHIP, 1}, {NS_HINES_ONCHIP, 4}, {NS_HINES_ONCHIP, 32}, {NS_HINES_TREE, 0}};
    for (size_t r = 0; cpu && r < sizeof gpu_runs / sizeof gpu_runs[0]; ++r)
        compare(cpu, gpu_runs[r].method, gpu_runs[r].lanes, cells);
    ns_sim_destroy(cpu);
    test_large_cell();
    test_bundled_population();
    for (int k = 0; k < N_FILES; ++k) ns_cell_destroy(cells[k]);
    return check_summary("test_cable_cuda");
}
