/* neurosolve bench grad: the cost of one gradient (ns_grad_run, docs/gradients.md)
 * over the forward run (the simulation's CPU loop, per-step mechanisms) of the
 * same cell, model and steps: hh and pas everywhere, a clamp at the soma, the
 * soma recorded, a squared loss; the best of --repeat runs of each. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "neurosolve/grad.h"

static const char *MODEL = "all.insert = hh pas\nglobal.usetable_hh = 0\nall.g_pas = 1e-4\nall.e_pas = -65\n"
                           "soma.gnabar_hh = 0.2\ndend.gnabar_hh = 0.05\n";

int bench_grad(int argc, char **argv) {
    const char *morph = "data/morphologies/ca1_ko20x-07.swc";
    long long steps = 1000;
    int repeat = 3;
    long long every = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--help")) {
            printf("usage: neurosolve bench grad [--morph FILE.swc] [--steps N] [--repeat R] [--checkpoint-every K]\n"
                   "  the gradient of a squared loss with respect to 4 parameters (gnabar_hh, gkbar_hh, cm, Ra)\n"
                   "  over the forward run of the same cell (hh + pas everywhere, a 1 nA clamp at the soma),\n"
                   "  one thread, the best of R runs each (default %s, 1000 steps of 0.025 ms, R = 3);\n"
                   "  K: steps between stored states (0: about sqrt(N); >= N: every state, nothing recomputed)\n",
                   morph);
            return 0;
        }
        if (i + 1 >= argc) return cli_usage_error("bench grad", "%s needs a value", argv[i]);
        if (!strcmp(argv[i], "--morph")) morph = argv[++i];
        else if (!strcmp(argv[i], "--steps")) steps = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--repeat")) repeat = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--checkpoint-every")) every = atoll(argv[++i]);
        else return cli_usage_error("bench grad", "unknown option '%s'", argv[i]);
    }
    if (steps < 1 || repeat < 1 || every < 0)
        return cli_usage_error("bench grad", "--steps and --repeat must be >= 1, --checkpoint-every >= 0");
    ns_morph_t *mo = NULL;
    ns_cell_t *cell = NULL;
    ns_sim_model_t *model = NULL;
    ns_sim_t *sim = NULL;
    ns_grad_t *g = NULL;
    double *target = NULL;
    int rc = 1;
    ns_status s = ns_swc_read(morph, NULL, &mo);
    if (s) return cli_status_error(morph, s);
    ns_discretize_options dop;
    ns_discretize_options_init(&dop);
    if ((s = ns_discretize(mo, &dop, &cell))) goto fail;
    if ((s = ns_sim_model_create(NULL, &model)) || (s = ns_sim_model_parse(model, MODEL, strlen(MODEL), "bench-grad")))
        goto fail;
    ns_sim_params p;
    ns_sim_params_init(&p);
    p.dt = 0.025;
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = NS_BACKEND_CPU;
    o.model = model;
    o.threads = 1;
    o.gpu_mechanisms = NS_SIM_GPU_MECHANISMS_PER_STEP;
    const ns_cell_t *cells[1] = {cell};
    if ((s = ns_sim_create(1, cells, 1, NULL, &p, &o, &sim))) goto fail;
    if ((s = ns_sim_add_iclamp(sim, 0, 0, 1.0, 1e9, 1.0)) || (s = ns_sim_add_recording(sim, 0, 0, NULL))) goto fail;
    const int64_t samples = steps + 1;
    target = calloc((size_t)samples, sizeof *target);
    if (!target) {
        s = NS_ERR_OUT_OF_MEMORY;
        goto fail;
    }
    for (int64_t q = 0; q < samples; ++q) target[q] = -65.0 + 20.0 * sin(0.01 * (double)q);
    double fwd = INFINITY, grd = INFINITY, L = 0.0, grad[4];
    for (int r = 0; r < repeat; ++r) {
        const double t0 = cli_now_s();
        if ((s = ns_sim_init(sim)) || (s = ns_sim_advance(sim, steps))) goto fail;
        fwd = fmin(fwd, cli_now_s() - t0);
    }
    ns_grad_options go;
    ns_grad_options_init(&go);
    go.threads = 1;
    go.checkpoint_every = every;
    if ((s = ns_grad_create(sim, &go, &g))) goto fail;
    static const char *const names[4] = {"gnabar_hh", "gkbar_hh", "cm", "Ra"};
    for (int k = 0; k < 4; ++k)
        if ((s = ns_grad_add_param(g, 0, "all", names[k], NULL))) goto fail;
    ns_grad_loss loss = {target, NULL, NULL};
    for (int r = 0; r < repeat; ++r) {
        const double t0 = cli_now_s();
        if ((s = ns_grad_run(g, steps, &loss, &L, grad, NULL))) goto fail;
        grd = fmin(grd, cli_now_s() - t0);
    }
    ns_cell_info info;
    ns_cell_get_info(cell, &info);
    printf("bench grad: %s, %d compartments, %lld steps, one thread, best of %d\n", morph, (int)info.compartments,
           steps, repeat);
    printf("  forward (ns_sim, CPU loop)  %10.3f ms\n  gradient (ns_grad_run)      %10.3f ms\n"
           "  gradient / forward          %10.2f\n  stored states and work      %10.2f MB\n",
           1e3 * fwd, 1e3 * grd, grd / fwd, (double)ns_grad_bytes(g) / 1e6);
    rc = 0;
fail:
    if (rc) cli_status_error("bench grad", s);
    free(target);
    ns_grad_destroy(g);
    ns_sim_destroy(sim);
    ns_sim_model_destroy(model);
    ns_cell_destroy(cell);
    ns_morph_destroy(mo);
    return rc;
}
