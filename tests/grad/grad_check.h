/* What the gradient tests share (tests/grad): a cell with a stimulus and
 * three recordings, a weighted squared loss, the simulation's own loss
 * (ns_sim, the CPU loop, per-step mechanisms) for a variant of the model and
 * the cable parameters, and central differences of it: the reference that
 * the adjoint's gradients are checked against. Include after check.h and
 * load_cell.h. */
#ifndef NS_TEST_GRAD_CHECK_H
#define NS_TEST_GRAD_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neurosolve/neurosolve.h"

typedef struct setup {
    ns_cell_t *cell, *cell_ra[4]; /* the cell at RA0, and at RA0 -+ the Ra step, -+ twice it */
    double ra_h;
    int32_t rec[3];               /* recorded compartments */
    int32_t stim;
    int64_t steps, samples;
    double amp;                   /* the stimulus [nA] (cell c: amp + 0.1 c), 1 unless changed */
    const char *base_model;       /* the model text; variants append to it */
    const ns_mech_library_t *lib; /* its library, or NULL (the built-ins) */
    double *target, *weight;
} setup;

typedef struct variant {
    const char *model_extra; /* appended to the base model */
    double Ra, cm_all, cm_soma, v_init;
} variant;

static ns_sim_t *make_sim(const setup *su, const ns_cell_t *cell, int64_t n_cells, const variant *va,
                          ns_sim_model_t **model_out) {
    char text[4096];
    snprintf(text, sizeof text, "%s%s", su->base_model, va->model_extra ? va->model_extra : "");
    ns_sim_model_t *m = NULL;
    CHECK_OK(ns_sim_model_create(su->lib, &m));
    CHECK_OK(ns_sim_model_parse(m, text, strlen(text), "grad-model"));
    ns_sim_params p;
    ns_sim_params_init(&p);
    p.dt = 0.025;
    p.v_init = va->v_init;
    for (int r = 0; r < NS_REGION_COUNT; ++r) p.region[r].cm = va->cm_all;
    p.region[NS_REGION_SOMA].cm = va->cm_soma;
    p.Ra = va->Ra;
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = NS_BACKEND_CPU;
    o.model = m;
    o.gpu_mechanisms = NS_SIM_GPU_MECHANISMS_PER_STEP;
    ns_sim_t *sim = NULL;
    CHECK_OK(ns_sim_create(1, &cell, n_cells, NULL, &p, &o, &sim));
    *model_out = m;
    return sim;
}

static void add_io(ns_sim_t *sim, const setup *su, int64_t n_cells) {
    for (int64_t c = 0; c < n_cells; ++c) {
        CHECK_OK(ns_sim_add_iclamp(sim, c, su->stim, 0.5, 3.0, su->amp + 0.1 * (double)c));
        for (int k = 0; k < 3; ++k) CHECK_OK(ns_sim_add_recording(sim, c, su->rec[k], NULL));
    }
}

static double loss_of(const setup *su, const double *y, int64_t n) {
    double L = 0.0;
    for (int64_t q = 0; q < n; ++q) {
        const double e = y[q] - su->target[q];
        L += su->weight[q] * e * e;
    }
    return L;
}

/* the loss of the simulation's own loop with variant va */
static double sim_loss(const setup *su, const ns_cell_t *cell, const variant *va) {
    ns_sim_model_t *m = NULL;
    ns_sim_t *sim = make_sim(su, cell, 1, va, &m);
    if (!sim) return NAN;
    add_io(sim, su, 1);
    CHECK_OK(ns_sim_init(sim));
    CHECK_OK(ns_sim_advance(sim, su->steps));
    int64_t samples = 0;
    int32_t sites = 0;
    const double *tr = ns_sim_traces(sim, &samples, &sites);
    CHECK(samples == su->samples && sites == 3);
    const double L = loss_of(su, tr, samples * sites);
    ns_sim_destroy(sim);
    ns_sim_model_destroy(m);
    return L;
}


/* The cell of morphology `morph` at Ra ra0 (and at ra0 -+ ra_h, -+ 2 ra_h for
 * an Ra case), the stimulus at the root, three recorded compartments (the
 * root, the last, one with membrane in the middle), a target and weights.
 * Returns a dendritic compartment with membrane past the first third. */
static int32_t setup_init(setup *su, const char *morph, double ra0, double ra_h, const char *base_model,
                          const ns_mech_library_t *lib, int64_t steps) {
    memset(su, 0, sizeof *su);
    su->base_model = base_model;
    su->lib = lib;
    su->steps = steps;
    su->amp = 1.0;
    su->cell = test_load_cell(morph, ra0);
    if (!su->cell) return -1;
    su->ra_h = ra_h;
    ns_cell_info info;
    ns_cell_get_info(su->cell, &info);
    const int32_t n = info.compartments;
    for (int sgn = 0; ra_h > 0.0 && sgn < 4; ++sgn) {
        su->cell_ra[sgn] = test_load_cell(morph, ra0 + (sgn & 1 ? 1.0 : -1.0) * (sgn & 2 ? 2.0 : 1.0) * ra_h);
        ns_cell_info ir;
        ns_cell_get_info(su->cell_ra[sgn], &ir);
        CHECK(ir.compartments == n); /* d_lambda's segments unchanged by the Ra step */
    }
    const int32_t *type = ns_cell_type(su->cell);
    const double *area = ns_cell_area(su->cell);
    su->stim = 0;
    su->rec[0] = 0;
    su->rec[1] = n - 1;
    su->rec[2] = n / 2;
    while (area[su->rec[2]] == 0.0) su->rec[2]++;
    int32_t some_dend = -1;
    for (int32_t i = 0; i < n && some_dend < 0; ++i)
        if ((type[i] == 3 || type[i] == 4) && area[i] > 0.0 && i > n / 3) some_dend = i;
    CHECK(some_dend > 0);
    su->samples = steps + 1;
    const int64_t ns = su->samples * 3;
    su->target = malloc((size_t)ns * sizeof *su->target);
    su->weight = malloc((size_t)ns * sizeof *su->weight);
    for (int64_t q = 0; q < ns; ++q) {
        su->target[q] = -60.0 + 8.0 * sin(0.05 * (double)q);
        su->weight[q] = 1.0 + (double)(q % 3);
    }
    return some_dend;
}

static void setup_free(setup *su) {
    free(su->target);
    free(su->weight);
    ns_cell_destroy(su->cell);
    for (int sgn = 0; sgn < 4; ++sgn) ns_cell_destroy(su->cell_ra[sgn]);
}

/* The fourth-order central difference of the simulation's loss in parameter
 * `name` at `where` (model-file names, or cm, Ra, v_init) from value, step
 * h: (8 (L(h) - L(-h)) - (L(2h) - L(-2h))) / 12h, with steps large enough
 * that the loss's rounding stays far below the tolerance. */
static double central_difference(const setup *su, const variant *base, const char *where, const char *name,
                                 double value, double h) {
    double Lpm[4];
    for (int sgn = 0; sgn < 4; ++sgn) {
        const double x = value + (sgn & 1 ? 1.0 : -1.0) * (sgn & 2 ? 2.0 * h : h);
        variant va = *base;
        char extra[4096] = "";
        if (!strcmp(name, "cm")) {
            if (!strcmp(where, "all")) va.cm_all = va.cm_soma = x;
            else va.cm_soma = x;
        } else if (!strcmp(name, "Ra")) {
            va.Ra = x;
        } else if (!strcmp(name, "v_init")) {
            va.v_init = x;
        } else {
            snprintf(extra, sizeof extra, "%s%s.%s = %.17g\n", base->model_extra ? base->model_extra : "", where,
                     name, x);
            va.model_extra = extra;
        }
        Lpm[sgn] = sim_loss(su, !strcmp(name, "Ra") ? su->cell_ra[sgn] : su->cell, &va);
    }
    return (8.0 * (Lpm[1] - Lpm[0]) - (Lpm[3] - Lpm[2])) / (12.0 * h);
}

/* A parameter checked against central differences: where, name (as ns_grad_add_param), the
 * differences' step relative to its value and, where it differs from where, the differences'
 * where (a GLOBAL: "global", the model file's global.NAME) */
typedef struct fd_case {
    const char *where, *name;
    double rel_h;
    const char *fd_where;
} fd_case;

/* grad[k], the adjoint of g's parameter k (added in the order of cases), against the central
 * difference of the simulation's loss (within tol relative), printing both */
static inline void check_against_fd(const setup *su, const variant *base, const ns_grad_t *g, const fd_case *cases, int n,
                                    const double *grad, double tol) {
    for (int k = 0; g && k < n; ++k) {
        double value = 0.0;
        CHECK_OK(ns_grad_get_param(g, k, &value));
        const char *fd_where = cases[k].fd_where ? cases[k].fd_where : cases[k].where;
        const double fd =
            central_difference(su, base, fd_where, cases[k].name, value, cases[k].rel_h * fabs(value));
        const double err = check_rel(grad[k], fd);
        printf("  %-5s %-24s adjoint % .12e  central differences % .12e  relative %.2e\n", cases[k].where,
               cases[k].name, grad[k], fd, err);
        CHECK_MSG(err <= tol, "%s at %s: adjoint %.12g vs central differences %.12g (relative %.3g)", cases[k].name,
                  cases[k].where, grad[k], fd, err);
    }
}

/* One cell of su with the model base, cell 0's parameters of cases: the gradient of the loss on
 * its three traces (the loss against the simulation's to 1e-12), then each case against central
 * differences within tol. Returns the soma's highest v (and in *vmin, unless NULL, its lowest);
 * *g_out, *sim_out and *m_out stay for the caller's further checks (it destroys them), with grad
 * and *L. */
static inline double grad_fd_cases(setup *su, const variant *base, const fd_case *cases, int n, double tol,
                                   double *grad, double *L, ns_grad_t **g_out, ns_sim_t **sim_out,
                                   ns_sim_model_t **m_out, double *vmin) {
    ns_sim_t *sim = make_sim(su, su->cell, 1, base, m_out);
    add_io(sim, su, 1);
    ns_grad_t *g = NULL;
    CHECK_OK(ns_grad_create(sim, NULL, &g));
    for (int k = 0; g && k < n; ++k) CHECK_OK(ns_grad_add_param(g, 0, cases[k].where, cases[k].name, NULL));
    double *tr = calloc((size_t)su->samples * 3, sizeof *tr);
    ns_grad_loss loss = {su->target, su->weight, NULL};
    CHECK_OK(ns_grad_run(g, su->steps, &loss, L, grad, tr));
    double vmax = -1e9, vlow = 1e9;
    for (int64_t q = 0; tr && q < su->samples; ++q) {
        vmax = fmax(vmax, tr[3 * q]);
        vlow = fmin(vlow, tr[3 * q]);
    }
    if (vmin) *vmin = vlow;
    free(tr);
    CHECK_MSG(check_rel(*L, sim_loss(su, su->cell, base)) <= 1e-12, "loss %.17g vs the simulation's", *L);
    check_against_fd(su, base, g, cases, n, grad, tol);
    *g_out = g;
    *sim_out = sim;
    return vmax;
}

/* grad_fd_cases' objects and su freed */
static inline void grad_fd_free(setup *su, ns_grad_t *g, ns_sim_t *sim, ns_sim_model_t *m) {
    ns_grad_destroy(g);
    ns_sim_destroy(sim);
    ns_sim_model_destroy(m);
    setup_free(su);
}

#endif
