/* Shared by test_cable_checkpoint.c (CPU) and test_cable_checkpoint_cuda.c:
 * a mixed population of real morphologies with stimuli and recordings, and
 * comparisons of two simulations' results. */
#ifndef NS_TESTS_CHECKPOINT_COMMON_H
#define NS_TESTS_CHECKPOINT_COMMON_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hh_state.h"
#include "neurosolve/neurosolve.h"

/* a small cell, a medium one and (for the GPU: the tree loop) a large one */
static const char *ck_files[] = {"ca1_h10.swc", "str_lts_noaxon.swc", "purk_dbbs.swc"};

static int ck_read_cells(int count, ns_cell_t **cells) {
    for (int k = 0; k < count; ++k) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", NS_MORPHOLOGIES, ck_files[k]);
        ns_morph_t *m = NULL;
        CHECK_OK(ns_swc_read(path, NULL, &m));
        cells[k] = NULL;
        if (m) CHECK_OK(ns_discretize(m, NULL, &cells[k]));
        ns_morph_destroy(m);
        if (!cells[k]) return -1;
    }
    return 0;
}

/* n_cells cells over n_shapes shapes (cell c: shape c % n_shapes), clamps of
 * different delays and amplitudes at the soma, a second one in the
 * dendrites of some cells, recordings at the soma and a distal compartment of
 * every third cell. `celsius` varies the parameters for refusal tests. */
static ns_sim_t *ck_make_sim(ns_backend backend, ns_hines_method method, int n_shapes, ns_cell_t **cells,
                             int64_t n_cells, int32_t record_every, double celsius) {
    ns_sim_params p;
    ns_sim_params_init(&p);
    CHECK_OK(ns_sim_params_set(&p, "dend.pas", 1));
    CHECK_OK(ns_sim_params_set(&p, "dend.g_pas", 5e-5));
    CHECK_OK(ns_sim_params_set(&p, "celsius", celsius));
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = backend;
    o.method = method;
    o.threads = 2;
    o.record_every = record_every;
    ns_sim_t *sim = NULL;
    CHECK_OK(ns_sim_create(n_shapes, (const ns_cell_t *const *)cells, n_cells, NULL, &p, &o, &sim));
    if (!sim) return NULL;
    for (int64_t c = 0; c < n_cells; ++c) {
        const ns_cell_t *cell = cells[c % n_shapes];
        int32_t soma;
        CHECK_OK(ns_cell_locate(cell, 0, 0.5, &soma));
        ns_cell_info ci;
        ns_cell_get_info(cell, &ci);
        const double amp = 1.5e-4 * ci.total_area * (0.8 + 0.1 * (double)(c % 5));
        CHECK_OK(ns_sim_add_iclamp(sim, c, soma, 1.0 + 0.3 * (double)(c % 7), 40.0, amp));
        const int32_t n = ns_tree_size(ns_cell_tree(cell));
        if (c % 2 == 0) CHECK_OK(ns_sim_add_iclamp(sim, c, n - 1, 12.0, 8.0, 0.05));
        if (c % 3 == 0) {
            CHECK_OK(ns_sim_add_recording(sim, c, soma, NULL));
            CHECK_OK(ns_sim_add_recording(sim, c, n - 1, NULL));
        }
    }
    return sim;
}

/* The largest difference of the two runs' traces, spike times and states
 * (v, m, h, n of every compartment); -1 when their sizes differ, Inf when a
 * spike count differs. *bitwise: every value has the same bits. */
static double ck_compare(ns_sim_t *a, ns_sim_t *b, int n_shapes, ns_cell_t **cells, int *bitwise) {
    *bitwise = 1;
    int64_t sa, sb;
    int32_t ka, kb;
    const double *ta = ns_sim_traces(a, &sa, &ka), *tb = ns_sim_traces(b, &sb, &kb);
    if (sa != sb || ka != kb || ns_sim_cells(a) != ns_sim_cells(b) || ns_sim_step_count(a) != ns_sim_step_count(b))
        return -1.0;
    const double time_a = ns_sim_time(a), time_b = ns_sim_time(b);
    if (memcmp(&time_a, &time_b, sizeof time_a) != 0) *bitwise = 0;
    double worst = 0.0;
    for (int64_t i = 0; i < sa * ka; ++i) {
        worst = fmax(worst, fabs(ta[i] - tb[i]));
        if (memcmp(&ta[i], &tb[i], sizeof(double)) != 0) *bitwise = 0;
    }
    int32_t nmax = 0;
    for (int k = 0; k < n_shapes; ++k)
        if (ns_tree_size(ns_cell_tree(cells[k])) > nmax) nmax = ns_tree_size(ns_cell_tree(cells[k]));
    double *va = malloc((size_t)nmax * 4 * sizeof *va), *vb = malloc((size_t)nmax * 4 * sizeof *vb);
    for (int64_t c = 0; c < ns_sim_cells(a) && va && vb; ++c) {
        int64_t na, nb;
        const double *pa = ns_sim_spikes(a, c, &na), *pb = ns_sim_spikes(b, c, &nb);
        if (na != nb) {
            worst = INFINITY;
            *bitwise = 0;
            continue;
        }
        for (int64_t q = 0; q < na; ++q) {
            worst = fmax(worst, fabs(pa[q] - pb[q]));
            if (memcmp(&pa[q], &pb[q], sizeof(double)) != 0) *bitwise = 0;
        }
        const int32_t n = ns_tree_size(ns_cell_tree(cells[c % n_shapes]));
        CHECK_OK(hh_state(a, c, n, va));
        CHECK_OK(hh_state(b, c, n, vb));
        for (int32_t i = 0; i < 4 * n; ++i) {
            worst = fmax(worst, fabs(va[i] - vb[i]));
            if (memcmp(&va[i], &vb[i], sizeof(double)) != 0) *bitwise = 0;
        }
    }
    free(va);
    free(vb);
    return worst;
}

#endif
