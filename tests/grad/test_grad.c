/* Gradients by the discrete adjoint (src/grad, docs/gradients.md) against
 * central finite differences of the simulation's own CPU loop (ns_sim with
 * the parameter changed: an independent path), for every parameter kind, on
 * a real morphology with the built-in hh and pas; the checkpointed sweep
 * against the stored-all one, thread counts and batches (bit-identical), the
 * general dL/dy form, and the refusals. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "load_cell.h"
#include "neurosolve/neurosolve.h"

#define STEPS 160
#define MORPH "ca1_ko20x-07.swc"
#define RA0 100.0

static const char *BASE_MODEL = "all.insert = hh pas\n"
                                "global.usetable_hh = 0\n"
                                "all.g_pas = 1e-4\nall.e_pas = -68\n"
                                "dend.gnabar_hh = 0.03\ndend.gkbar_hh = 0.01\n"
                                "soma.gnabar_hh = 0.2\n";

#include "grad_check.h"

static const variant BASE = {NULL, RA0, 1.0, 1.0, -65.0};

typedef struct pcase {
    const char *where, *name;
    double rel_h;             /* the finite differences' relative step */
} pcase;

int main(void) {
    setup su;
    const int32_t some_dend = setup_init(&su, MORPH, RA0, RA0 * 1e-3, BASE_MODEL, NULL, STEPS);
    if (some_dend < 0) return check_summary("test_grad");
    const int64_t ns = su.samples * 3;
    const int32_t *section = ns_cell_section(su.cell);

    /* ---- the gradient of every parameter kind against central differences ---- */
    char sec_where[32], comp_where[32], sec_model[64], comp_model[64];
    snprintf(sec_where, sizeof sec_where, "sec:%d", section[some_dend]);
    snprintf(comp_where, sizeof comp_where, "c%d", some_dend);
    snprintf(sec_model, sizeof sec_model, "sec:%d", section[some_dend]);
    /* the compartment as the model file names it: its section at its x */
    snprintf(comp_model, sizeof comp_model, "sec:%d(%.17g)", section[some_dend], ns_cell_position(su.cell)[some_dend]);
    const pcase cases[] = {
        {"dend", "gnabar_hh", 1e-3}, {"soma", "gkbar_hh", 1e-3}, {"dend", "g_pas", 1e-3},
        {"all", "e_pas", 1e-3},     {"all", "el_hh", 1e-3},     {sec_where, "gkbar_hh", 5e-2},
        {comp_where, "gnabar_hh", 5e-2}, {"all", "cm", 1e-3}, {"soma", "cm", 1e-3},
        {"all", "Ra", 1e-3},        {"all", "v_init", 2.5e-4},
    };
    const int n_cases = (int)(sizeof cases / sizeof *cases);
    ns_sim_model_t *m = NULL;
    ns_sim_t *sim = make_sim(&su, su.cell, 1, &BASE, &m);
    add_io(sim, &su, 1);
    ns_grad_options go;
    ns_grad_options_init(&go);
    go.tape_bytes = 1; /* below the whole run's tape: checkpoints every sqrt(steps) */
    ns_grad_t *g = NULL;
    CHECK_OK(ns_grad_create(sim, &go, &g));
    for (int k = 0; g && k < n_cases; ++k) {
        int32_t idx = -1;
        CHECK_OK(ns_grad_add_param(g, 0, cases[k].where, cases[k].name, &idx));
        CHECK(idx == k);
    }
    CHECK(ns_grad_params(g) == n_cases);
    double *grad = calloc((size_t)n_cases, sizeof *grad), *tr = calloc((size_t)ns, sizeof *tr);
    double L = 0.0;
    ns_grad_loss loss = {su.target, su.weight, NULL};
    CHECK_OK(ns_grad_run(g, STEPS, &loss, &L, grad, tr));
    /* the forward pass is the simulation's loop */
    {
        CHECK_OK(ns_sim_init(sim));
        CHECK_OK(ns_sim_advance(sim, STEPS));
        int64_t samples = 0;
        int32_t sites = 0;
        const double *ref = ns_sim_traces(sim, &samples, &sites);
        double worst = 0.0;
        for (int64_t q = 0; q < ns; ++q) worst = fmax(worst, fabs(tr[q] - ref[q]));
        CHECK_MSG(worst <= 1e-9, "forward pass vs ns_sim: max |dv| = %.3g mV", worst);
        const double Lref = sim_loss(&su, su.cell, &BASE);
        CHECK_MSG(check_rel(L, Lref) <= 1e-12, "loss %.17g vs the simulation's %.17g", L, Lref);
        double vmax = -1e9;
        for (int64_t q = 0; q < su.samples; ++q) vmax = fmax(vmax, tr[3 * q]);
        CHECK_MSG(vmax > 0.0, "the soma spikes in the run (max v %.3g mV)", vmax);
    }
    for (int k = 0; k < n_cases; ++k) {
        double value = 0.0;
        CHECK_OK(ns_grad_get_param(g, k, &value));
        const double h = fabs(value) * cases[k].rel_h;
        const char *w = cases[k].where == sec_where ? sec_model
                      : cases[k].where == comp_where ? comp_model : cases[k].where;
        const double fd = central_difference(&su, &BASE, w, cases[k].name, value, h);
        const double err = check_rel(grad[k], fd);
        /* the differences' own error (rounding over 2h, truncation) is most of this: the
         * adjoint is exact to rounding (test_grad_jac.c) */
        printf("  %-8s %-10s adjoint % .12e  central differences % .12e  relative %.2e\n", cases[k].where,
               cases[k].name, grad[k], fd, err);
        CHECK_MSG(err <= 1e-7, "%s at %s: adjoint %.12g vs central differences %.12g (relative %.3g)", cases[k].name,
                  cases[k].where, grad[k], fd, err);
    }

    /* ---- checkpoints: the same bits whatever the segment (0 with the default tape_bytes: the
     * whole run's tape, which fits); the dL/dy form ---- */
    const int64_t every[] = {1, 7, STEPS, 0};
    size_t bytes_all = 0;
    for (int e = 0; e < 4; ++e) {
        go.checkpoint_every = every[e];
        go.tape_bytes = 0;
        ns_grad_t *g2 = NULL;
        CHECK_OK(ns_grad_create(sim, &go, &g2));
        for (int k = 0; g2 && k < n_cases; ++k) CHECK_OK(ns_grad_add_param(g2, 0, cases[k].where, cases[k].name, NULL));
        double *grad2 = calloc((size_t)n_cases, sizeof *grad2), L2 = 0.0;
        /* the handle keeps its stored states' buffers between runs: a shorter run's, grown below */
        if (e == 3) CHECK_OK(ns_grad_run(g2, STEPS / 2, &loss, &L2, grad2, NULL));
        CHECK_OK(ns_grad_run(g2, STEPS, &loss, &L2, grad2, NULL));
        CHECK(L2 == L);
        CHECK_MSG(!memcmp(grad2, grad, (size_t)n_cases * sizeof *grad), "checkpoint_every %lld: not the same bits",
                  (long long)every[e]);
        if (e == 2) bytes_all = ns_grad_bytes(g2);
        if (e == 3)
            CHECK_MSG(ns_grad_bytes(g2) == bytes_all, "default tape_bytes: %zu bytes, the whole tape's %zu",
                      ns_grad_bytes(g2), bytes_all);
        if (e == 0) {
            /* every state stored costs more than the default's sqrt(steps) segments */
            CHECK_MSG(ns_grad_bytes(g2) > ns_grad_bytes(g), "bytes: every step %zu, default %zu", ns_grad_bytes(g2),
                      ns_grad_bytes(g));
            double *dldy = malloc((size_t)ns * sizeof *dldy), Ld = 0.0;
            for (int64_t q = 0; q < ns; ++q) dldy[q] = 2.0 * su.weight[q] * (tr[q] - su.target[q]);
            ns_grad_loss lin = {NULL, NULL, dldy};
            CHECK_OK(ns_grad_run(g2, STEPS, &lin, &Ld, grad2, NULL));
            CHECK_MSG(!memcmp(grad2, grad, (size_t)n_cases * sizeof *grad), "dL/dy form: not the same bits");
            free(dldy);
        }
        free(grad2);
        ns_grad_destroy(g2);
    }
    ns_grad_destroy(g);
    ns_sim_destroy(sim);
    ns_sim_model_destroy(m);

    /* ---- batches: two cells with their own values; one thread or two ---- */
    {
        sim = make_sim(&su, su.cell, 2, &BASE, &m);
        add_io(sim, &su, 2);
        double *gb[2], Lb[2];
        for (int th = 0; th < 2; ++th) {
            go.checkpoint_every = 0;
            go.threads = th + 1;
            ns_grad_t *gbt = NULL;
            CHECK_OK(ns_grad_create(sim, &go, &gbt));
            int32_t q = 0;
            for (int64_t c = 0; c < 2; ++c) {
                CHECK_OK(ns_grad_add_param(gbt, c, "all", "gnabar_hh", &q));
                CHECK_OK(ns_grad_set_param(gbt, q, 0.1 + 0.05 * (double)c));
                CHECK_OK(ns_grad_add_param(gbt, c, "all", "cm", &q));
                CHECK_OK(ns_grad_set_param(gbt, q, 1.0 + 0.5 * (double)c));
            }
            const int64_t ns2 = 2 * ns;
            double *t2 = malloc((size_t)ns2 * sizeof *t2), *w2 = malloc((size_t)ns2 * sizeof *w2);
            for (int64_t s = 0; s < su.samples; ++s)
                for (int c = 0; c < 2; ++c)
                    for (int k = 0; k < 3; ++k) {
                        t2[s * 6 + c * 3 + k] = su.target[s * 3 + k];
                        w2[s * 6 + c * 3 + k] = c == 0 ? su.weight[s * 3 + k] : 0.0;
                    }
            ns_grad_loss l2 = {t2, w2, NULL};
            gb[th] = calloc(4, sizeof *gb[th]);
            CHECK_OK(ns_grad_run(gbt, STEPS, &l2, &Lb[th], gb[th], NULL));
            /* cell 1 has weight 0: its parameters' derivatives are 0 */
            CHECK(gb[th][2] == 0.0 && gb[th][3] == 0.0);
            free(t2);
            free(w2);
            ns_grad_destroy(gbt);
        }
        CHECK(Lb[0] == Lb[1]);
        CHECK_MSG(!memcmp(gb[0], gb[1], 4 * sizeof *gb[0]), "one thread and two: not the same bits");
        /* cell 0 of the batch is the single cell with those values */
        ns_sim_model_t *m1 = NULL;
        ns_sim_t *s1 = make_sim(&su, su.cell, 1, &BASE, &m1);
        add_io(s1, &su, 1);
        ns_grad_t *g1 = NULL;
        CHECK_OK(ns_grad_create(s1, NULL, &g1));
        int32_t q = 0;
        CHECK_OK(ns_grad_add_param(g1, 0, "all", "gnabar_hh", &q));
        CHECK_OK(ns_grad_set_param(g1, q, 0.1));
        CHECK_OK(ns_grad_add_param(g1, 0, "all", "cm", &q));
        CHECK_OK(ns_grad_set_param(g1, q, 1.0));
        double g1v[2], L1 = 0.0;
        CHECK_OK(ns_grad_run(g1, STEPS, &loss, &L1, g1v, NULL));
        CHECK(L1 == Lb[0]);
        CHECK(g1v[0] == gb[0][0] && g1v[1] == gb[0][1]);
        free(gb[0]);
        free(gb[1]);

        /* ---- refusals ---- */
        CHECK_FAILS(ns_grad_add_param(g1, 0, "all", "usetable_hh", NULL), NS_ERR_UNSUPPORTED, "usetable_hh",
                    "TABLE's switch");
        CHECK_FAILS(ns_grad_add_param(g1, 0, "all", "gbar_foo", NULL), NS_ERR_INVALID_ARGUMENT, "gbar_foo");
        CHECK_FAILS(ns_grad_add_param(g1, 0, "all", "minf_hh", NULL), NS_ERR_INVALID_ARGUMENT, "minf_hh",
                    "RANGE PARAMETER");
        CHECK_FAILS(ns_grad_add_param(g1, 0, "soma(0.5)", "gnabar_hh", NULL), NS_ERR_UNSUPPORTED, "soma(0.5)");
        CHECK_FAILS(ns_grad_add_param(g1, 0, "soma", "Ra", NULL), NS_ERR_UNSUPPORTED, "Ra", "where = all");
        CHECK_FAILS(ns_grad_add_param(g1, 3, "all", "cm", NULL), NS_ERR_INVALID_ARGUMENT, "cell 3");
        CHECK_FAILS(ns_grad_set_param(g1, 1, -1.0), NS_ERR_INVALID_ARGUMENT, "cm");
        ns_grad_loss none = {NULL, NULL, NULL};
        CHECK_FAILS(ns_grad_run(g1, STEPS, &none, &L1, g1v, NULL), NS_ERR_INVALID_ARGUMENT, "target or dldy");
        ns_grad_destroy(g1);
        ns_sim_destroy(s1);
        ns_sim_model_destroy(m1);
        ns_sim_destroy(sim);
        ns_sim_model_destroy(m);
    }
    {
        /* ns_sim_params alone: a model of the built-in hh and pas (one membrane, issue 41), so it has gradients */
        ns_sim_params p;
        ns_sim_params_init(&p);
        ns_sim_options o;
        ns_sim_options_init(&o);
        o.backend = NS_BACKEND_CPU;
        ns_sim_t *hs = NULL;
        CHECK_OK(ns_sim_create(1, (const ns_cell_t *const *)&su.cell, 1, NULL, &p, &o, &hs));
        ns_grad_t *gh = NULL;
        CHECK_OK(ns_grad_create(hs, NULL, &gh));
        ns_grad_destroy(gh);
        ns_sim_destroy(hs);
    }
    free(grad);
    free(tr);
    setup_free(&su);
    return check_summary("test_grad");
}
