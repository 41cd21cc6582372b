/* neurosolve bench grad: the cost of one gradient (ns_grad_run, docs/gradients.md)
 * over the forward run (the simulation's CPU loop, per-step mechanisms) of the
 * same cell, model and steps: by default hh and pas everywhere, a clamp at the
 * soma, the soma recorded, a squared loss; the best of --repeat runs of each.
 * The options give another case (a parameter file, a model, the clamp, the
 * sites, the parameters, a constant target) and --json its loss and gradient:
 * bench/grad_jaxley.py runs Jaxley's model through it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "neurosolve/grad.h"

static const char *MODEL = "all.insert = hh pas\nglobal.usetable_hh = 0\nall.g_pas = 1e-4\nall.e_pas = -65\n"
                           "soma.gnabar_hh = 0.2\ndend.gnabar_hh = 0.05\n";

enum { MAX_ITEMS = 64 };

/* A compartment from a location (ns_location_parse's forms); prints the error. */
static int locate(const ns_cell_t *cell, const char *option, const char *text, int32_t *compartment) {
    ns_location loc;
    if (ns_location_parse(text, &loc) || ns_location_compartment(cell, &loc, compartment))
        return cli_usage_error("bench grad", "%s %s: %s", option, text, ns_last_error());
    return 0;
}

/* The command line of a run. */
typedef struct grad_opts {
    const char *morph, *params_file, *model_file, *traces_file, *iclamp;
    const char *records[MAX_ITEMS], *params[MAX_ITEMS];
    int n_records, n_params, json, has_target, repeat, threads, cuda;
    double target_mv;
    long long steps, every, n_cells;
} grad_opts;

static void help(const char *morph) {
    printf("usage: neurosolve bench grad [--morph FILE.swc] [--steps N] [--repeat R] [--checkpoint-every K]\n"
           "         [--cells C] [--threads T] [--backend cpu|cuda]\n"
           "         [--params FILE] [--model FILE] [--iclamp LOC:DEL:DUR:AMP] [--record LOC]... [--param WHERE:NAME]...\n"
           "         [--target MV] [--traces FILE] [--json]\n"
           "  the gradient of a squared loss sum (v - target)^2 over the recorded samples with respect\n"
           "  to the parameters (default gnabar_hh, gkbar_hh, cm, Ra over all) over the forward run of the\n"
           "  same cell (default hh + pas everywhere, a 1 nA clamp at the soma, the soma recorded, a sine\n"
           "  target), the best of R runs each (default %s, 1000 steps of 0.025 ms, R = 3).\n"
           "  --cells: C copies of the cell, each with its own clamp, sites and parameters (default 1);\n"
           "  --threads: the forward run's and the gradient's threads (default 1);\n"
           "  --backend cuda: the forward run on the GPU loop and the gradient by the GPU sweep (its\n"
           "  memory: the device's), default cpu;\n"
           "  --params: a parameter file (dt, celsius, v_init, Ra, the per-section nseg and start_diam);\n"
           "  --model: the model file in place of the default; --traces: the forward pass's samples\n"
           "  (one line per sample, one column per site); --json: one JSON line;\n"
           "  K: steps between stored states (0: about sqrt(N); >= N: every state, nothing recomputed)\n",
           morph);
}

/* The command line into o, the defaults of the sites and parameters; -1 to go
 * on, else the exit status (printed; 0 after --help). */
static int parse_options(int argc, char **argv, grad_opts *o) {
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--help")) {
            help(o->morph);
            return 0;
        }
        if (!strcmp(argv[i], "--json")) {
            o->json = 1;
            continue;
        }
        if (i + 1 >= argc) return cli_usage_error("bench grad", "%s needs a value", argv[i]);
        const char *a = argv[i], *val = argv[++i];
        if (!strcmp(a, "--morph")) o->morph = val;
        else if (!strcmp(a, "--steps")) o->steps = atoll(val);
        else if (!strcmp(a, "--repeat")) o->repeat = atoi(val);
        else if (!strcmp(a, "--checkpoint-every")) o->every = atoll(val);
        else if (!strcmp(a, "--cells")) o->n_cells = atoll(val);
        else if (!strcmp(a, "--threads")) o->threads = atoi(val);
        else if (!strcmp(a, "--backend")) {
            if (strcmp(val, "cpu") && strcmp(val, "cuda"))
                return cli_usage_error("bench grad", "--backend %s: cpu or cuda", val);
            o->cuda = !strcmp(val, "cuda");
        }
        else if (!strcmp(a, "--params")) o->params_file = val;
        else if (!strcmp(a, "--model")) o->model_file = val;
        else if (!strcmp(a, "--iclamp")) o->iclamp = val;
        else if (!strcmp(a, "--traces")) o->traces_file = val;
        else if (!strcmp(a, "--target")) {
            if (!cli_parse_double("bench grad", "--target", val, -1e4, 1e4, &o->target_mv)) return 2;
            o->has_target = 1;
        } else if (!strcmp(a, "--record") || !strcmp(a, "--param")) {
            const int is_record = a[2] == 'r';
            int *n = is_record ? &o->n_records : &o->n_params;
            if (*n == MAX_ITEMS) return cli_usage_error("bench grad", "at most %d of %s", MAX_ITEMS, a);
            (is_record ? o->records : o->params)[(*n)++] = val;
        } else return cli_usage_error("bench grad", "unknown option '%s'", a);
    }
    if (o->steps < 1 || o->repeat < 1 || o->every < 0 || o->n_cells < 1 || o->n_cells > 1000000 || o->threads < 1 ||
        o->threads > 4096)
        return cli_usage_error("bench grad", "--steps, --repeat, --cells and --threads must be >= 1, "
                                             "--checkpoint-every >= 0");
    static const char *const default_params[4] = {"all:gnabar_hh", "all:gkbar_hh", "all:cm", "all:Ra"};
    if (o->n_params == 0)
        for (; o->n_params < 4; ++o->n_params) o->params[o->n_params] = default_params[o->n_params];
    if (o->n_records == 0) o->records[o->n_records++] = "soma";
    return -1;
}

/* --iclamp LOC:DEL:DUR:AMP in every cell: 0, 2 (a usage error, printed), or
 * the simulation's failure in *s (1). */
static int add_iclamp(const grad_opts *o, const ns_cell_t *cell, ns_sim_t *sim, ns_status *s) {
    /* LOC:DEL:DUR:AMP, the location itself may hold no ':' but sec:K and swc:ID do: split from the right */
    char buf[256];
    snprintf(buf, sizeof buf, "%s", o->iclamp);
    const char *f[3];
    int ok = 1;
    for (int k = 2; k >= 0 && ok; --k) {
        char *c = strrchr(buf, ':');
        ok = c != NULL;
        if (ok) {
            *c = '\0';
            f[k] = c + 1;
        }
    }
    double del = 0, dur = 0, amp = 0;
    int32_t comp = 0;
    if (!ok) return cli_usage_error("bench grad", "--iclamp %s: expected LOC:DEL:DUR:AMP", o->iclamp);
    if (!cli_parse_double("bench grad", "--iclamp DEL", f[0], -1e9, 1e9, &del) ||
        !cli_parse_double("bench grad", "--iclamp DUR", f[1], 0.0, 1e9, &dur) ||
        !cli_parse_double("bench grad", "--iclamp AMP", f[2], -1e6, 1e6, &amp) || locate(cell, "--iclamp", buf, &comp))
        return 2;
    for (int64_t c = 0; c < o->n_cells; ++c)
        if ((*s = ns_sim_add_iclamp(sim, c, comp, del, dur, amp))) return 1;
    return 0;
}

/* The parameters (--param WHERE:NAME) of every cell, parameter k of cell q
 * gradient entry k * n_cells + q: 0, 2 (a usage error, printed), or the
 * gradient's failure in *s (1). */
static int add_params(const grad_opts *o, const ns_cell_t *cell, ns_grad_t *g, ns_status *s) {
    for (int k = 0; k < o->n_params; ++k) {
        char where[128];
        snprintf(where, sizeof where, "%s", o->params[k]);
        char *c = strrchr(where, ':');
        if (!c) return cli_usage_error("bench grad", "--param %s: expected WHERE:NAME", o->params[k]);
        *c = '\0';
        /* swc:ID and NAME[K] (the location grammar's sections) as ns_grad's sec:K */
        ns_location loc;
        int32_t sec = 0;
        char name[128];
        snprintf(name, sizeof name, "%s", c + 1);
        if (ns_location_parse(where, &loc) == NS_OK &&
            (loc.kind == NS_LOCATION_SWC_ID || loc.kind == NS_LOCATION_NAMED)) {
            if (loc.has_x || ns_location_section(cell, &loc, &sec))
                return cli_usage_error("bench grad", "--param %s: %s", o->params[k],
                                       loc.has_x ? "a section takes no (X)" : ns_last_error());
            snprintf(where, sizeof where, "sec:%d", (int)sec);
        }
        for (int64_t q = 0; q < o->n_cells; ++q)
            if ((*s = ns_grad_add_param(g, q, where, name, NULL))) return 1;
    }
    return 0;
}

/* The forward pass's samples (--traces): one line per sample, one column per site; 0 or 1 (printed). */
static int write_traces(const char *file, const double *traces, int64_t samples, int64_t sites) {
    FILE *f = fopen(file, "w");
    if (!f) return cli_error("bench grad: %s: cannot write", file);
    for (int64_t q = 0; q < samples; ++q)
        for (int64_t k = 0; k < sites; ++k)
            fprintf(f, "%.17g%c", traces[q * sites + k], k + 1 < sites ? ' ' : '\n');
    if (fclose(f)) return cli_error("bench grad: %s: write error", file);
    return 0;
}

/* The summary: the best times (fwd, grd [s]), the loss and cell 0's gradient with --json. */
static void report(const grad_opts *o, const ns_cell_t *cell, const ns_grad_t *g, double fwd, double grd, double L,
                   const double *grad) {
    ns_cell_info info;
    ns_cell_get_info(cell, &info);
    if (o->json) {
        cli_json j;
        json_begin(&j, stdout);
        json_string(&j, "morph", o->morph);
        json_int(&j, "compartments", info.compartments);
        json_int(&j, "steps", o->steps);
        json_int(&j, "cells", o->n_cells);
        json_int(&j, "threads", o->threads);
        json_string(&j, "backend", o->cuda ? "cuda" : "cpu");
        json_int(&j, "repeat", o->repeat);
        json_double(&j, "forward_ms", 1e3 * fwd);
        json_double(&j, "gradient_ms", 1e3 * grd);
        json_int(&j, "bytes", (long long)ns_grad_bytes(g));
        json_double(&j, "loss", L);
        json_array_begin(&j, "params");
        for (int k = 0; k < o->n_params; ++k) json_string(&j, NULL, o->params[k]);
        json_array_end(&j);
        json_array_begin(&j, "gradient");
        for (int k = 0; k < o->n_params; ++k) json_double(&j, NULL, grad[k * o->n_cells]); /* cell 0's */
        json_array_end(&j);
        json_end(&j);
        return;
    }
    printf("bench grad: %s, %d compartments, %lld cell%s, %lld steps, %d thread%s, best of %d\n", o->morph,
           (int)info.compartments, o->n_cells, o->n_cells > 1 ? "s" : "", o->steps, o->threads,
           o->threads > 1 ? "s" : "", o->repeat);
    printf("  forward (ns_sim, %s loop)  %10.3f ms\n  gradient (ns_grad_run, %s) %9.3f ms\n"
           "  gradient / forward          %10.2f\n  %-27s %10.2f MB\n",
           o->cuda ? "GPU" : "CPU", 1e3 * fwd, o->cuda ? "GPU" : "CPU", 1e3 * grd, grd / fwd,
           o->cuda ? "device memory of the sweep" : "stored states and work", (double)ns_grad_bytes(g) / 1e6);
}

int bench_grad(int argc, char **argv) {
    grad_opts o = {.morph = "data/morphologies/ca1_ko20x-07.swc", .iclamp = "soma:1:1e9:1", .steps = 1000,
                   .repeat = 3, .threads = 1, .n_cells = 1};
    int rc = parse_options(argc, argv, &o);
    if (rc >= 0) return rc;
    const long long steps = o.steps, n_cells = o.n_cells;
    ns_morph_t *mo = NULL;
    ns_cell_t *cell = NULL;
    ns_sim_model_t *model = NULL;
    ns_sim_t *sim = NULL;
    ns_grad_t *g = NULL;
    double *target = NULL, *traces = NULL, *grad = NULL;
    char *params_text = NULL;
    size_t params_len = 0;
    rc = 1;
    ns_sim_params p;
    ns_sim_params_init(&p);
    p.dt = 0.025;
    ns_discretize_options dop;
    ns_discretize_options_init(&dop);
    ns_status s = NS_OK;
    if (o.params_file) {
        if (cli_read_text(o.params_file, "bench grad", "a parameter file", &params_text, &params_len)) return 1;
        if ((s = ns_sim_params_parse(&p, params_text, params_len, o.params_file))) {
            free(params_text);
            return cli_status_error("parameters", s);
        }
        dop.Ra = p.Ra;
        dop.sections = params_text;
        dop.sections_length = params_len;
        dop.sections_name = o.params_file;
    }
    if ((s = ns_swc_read(o.morph, NULL, &mo))) {
        free(params_text);
        return cli_status_error(o.morph, s);
    }
    if ((s = ns_discretize(mo, &dop, &cell))) goto fail;
    if ((s = ns_sim_model_create(NULL, &model)) ||
        (s = o.model_file ? ns_sim_model_read(model, o.model_file)
                          : ns_sim_model_parse(model, MODEL, strlen(MODEL), "bench-grad")))
        goto fail;
    ns_sim_options so;
    ns_sim_options_init(&so);
    so.backend = o.cuda ? NS_BACKEND_CUDA : NS_BACKEND_CPU;
    so.model = model;
    so.threads = o.threads;
    /* the CPU loop's per-step mechanisms (the gradient's step); the GPU loop its fastest */
    so.gpu_mechanisms = o.cuda ? NS_SIM_GPU_MECHANISMS_AUTO : NS_SIM_GPU_MECHANISMS_PER_STEP;
    const ns_cell_t *cells[1] = {cell};
    if ((s = ns_sim_create(1, cells, n_cells, NULL, &p, &so, &sim))) goto fail;
    int bad = add_iclamp(&o, cell, sim, &s);
    if (bad == 1) goto fail;
    if (bad) {
        rc = bad;
        goto done;
    }
    /* the sites: cell 0's records, then cell 1's, ... */
    for (int64_t c = 0; c < n_cells; ++c)
        for (int k = 0; k < o.n_records; ++k) {
            int32_t comp = 0;
            if (locate(cell, "--record", o.records[k], &comp)) {
                rc = 2;
                goto done;
            }
            if ((s = ns_sim_add_recording(sim, c, comp, NULL))) goto fail;
        }
    const int64_t samples = steps + 1, sites = o.n_records * n_cells, values = samples * sites;
    target = calloc((size_t)values, sizeof *target);
    traces = calloc((size_t)values, sizeof *traces);
    grad = calloc((size_t)(o.n_params * n_cells), sizeof *grad);
    if (!target || !traces || !grad) {
        s = NS_ERR_OUT_OF_MEMORY;
        goto fail;
    }
    for (int64_t q = 0; q < values; ++q)
        target[q] = o.has_target ? o.target_mv : -65.0 + 20.0 * sin(0.01 * (double)(q / sites));
    double fwd = INFINITY, grd = INFINITY, L = 0.0;
    for (int r = 0; r < o.repeat; ++r) {
        const double t0 = cli_now_s();
        if ((s = ns_sim_init(sim)) || (s = ns_sim_advance(sim, steps))) goto fail;
        fwd = fmin(fwd, cli_now_s() - t0);
    }
    ns_grad_options go;
    ns_grad_options_init(&go);
    go.threads = o.threads;
    go.checkpoint_every = o.every;
    go.backend = o.cuda ? NS_BACKEND_CUDA : NS_BACKEND_CPU;
    if ((s = ns_grad_create(sim, &go, &g))) goto fail;
    if ((bad = add_params(&o, cell, g, &s)) == 1) goto fail;
    if (bad) {
        rc = bad;
        goto done;
    }
    ns_grad_loss loss = {target, NULL, NULL};
    for (int r = 0; r < o.repeat; ++r) {
        const double t0 = cli_now_s();
        if ((s = ns_grad_run(g, steps, &loss, &L, grad, traces))) goto fail;
        grd = fmin(grd, cli_now_s() - t0);
    }
    if (o.traces_file && (rc = write_traces(o.traces_file, traces, samples, sites)) != 0) goto done;
    report(&o, cell, g, fwd, grd, L, grad);
    rc = 0;
fail:
    if (rc) cli_status_error("bench grad", s);
done:
    free(target);
    free(traces);
    free(grad);
    free(params_text);
    ns_grad_destroy(g);
    ns_sim_destroy(sim);
    ns_sim_model_destroy(model);
    ns_cell_destroy(cell);
    ns_morph_destroy(mo);
    return rc;
}
