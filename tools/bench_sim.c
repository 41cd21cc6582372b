/* neurosolve bench sim: time per step of the Hodgkin-Huxley population
 * simulation (docs/simulation.md) for growing cell counts on the CPU
 * (OpenMP) and the GPU, against NEURON single-threaded on the same host
 * (bench/neuron_sim_bench.py) when --neuron is given.
 *
 * Bandwidth: the step's minimum bytes per compartment-step
 * (ns_sim_step_min_bytes: v, the matrix's constant coefficients, every
 * mechanism's states and RANGE parameters, the ions; docs/simulation.md,
 * "Bytes per compartment-step") x compartments / time per step; a GPU row
 * also reports it against a device-to-device copy of the same bytes timed
 * in the same run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_sim.h"
#include "cli.h"

#define MAX_LIST 16
#define MAX_GPU 8 /* GPU loop variants */

static void help(void) {
    printf("usage: neurosolve bench sim [options]\n"
           "  --morph FILE.swc      morphology (default data/morphologies/allen_chat_614430666.swc,\n"
           "                        328 compartments)\n"
           "  --cells N,...         cell counts (default 1000,10000,100000,1000000)\n"
           "  --backend cpu|cuda|all  (default all: CPU rows up to --cpu-max cells, GPU rows if a GPU)\n"
           "  --gpu-methods LIST    GPU loops timed, comma-separated: onchip, onchip:L (L lanes per\n"
           "                        cell), tree, auto (default onchip,tree; onchip rows of a model\n"
           "                        other than the built-in pas and hh run in the tree loop)\n"
           "  --cpu-max N           largest cell count timed on the CPU (default 100000)\n"
           "  --steps N             timed steps per row after 40 warm-up steps (default 400 = 10 ms)\n"
           "  --neuron N            also time N cells in NEURON (python3 bench/neuron_sim_bench.py,\n"
           "                        needs `pip install neuron`) and report speedups per cell-step\n"
           "  --arbor N             also time N cells in Arbor (python3 bench/arbor_sim_bench.py,\n"
           "                        needs `pip install arbor`), speedups per cell-step\n"
           "  --threads T           CPU threads of our loop and of the NEURON and Arbor baselines\n"
           "                        (default: OpenMP's default for ours, 1 for the baselines)\n"
           "  --model FILE [--mechanisms LIB] [--params FILE]\n"
           "                        the membrane from NMODL mechanisms (docs/simulation.md, \"Models\");\n"
           "                        --neuron then runs bench/neuron_model_bench.py with the same files\n"
           "  --gpu-mechanisms auto|fused|per-step|per-mechanism\n"
           "                        how the GPU rows run the model's mechanisms (default auto;\n"
           "                        per-mechanism: one launch per mechanism and step, no graph)\n"
           "  --csv FILE  --json\n"
           "  --mixed               populations of different real cells (bench sim --mixed --help)\n"
           "  --network             the busyring network benchmark (bench sim --network --help)\n");
}

typedef struct row {
    char backend[8], method[24];
    int lanes; /* onchip: lanes per cell (0: not onchip) */
    long long cells, compartments;
    double ms_per_step, cell_steps_per_s, comp_steps_per_s, bytes, gbs, copy_gbs, ratio, vs_neuron, vs_arbor;
} row;

int bench_sim_time(int n_shapes, const ns_cell_t *const *shapes, long long cells, const int32_t *cell_shape,
                   ns_backend be, ns_hines_method method, int lanes, int threads, int steps,
                   const ns_sim_params *params, const ns_sim_model_t *model, ns_sim_gpu_mechanisms gpu_mechanisms,
                   sim_timing *t) {
    ns_sim_params p;
    if (params) p = *params;
    else ns_sim_params_init(&p);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.model = model;
    o.backend = be;
    o.method = method;
    o.gpu_lanes = lanes;
    o.gpu_mechanisms = gpu_mechanisms;
    o.threads = threads;
    o.record_every = 1000000; /* recording off the hot path: sample 0 only */
    o.check_every = 100;
    ns_sim_t *sim = NULL;
    const double t0 = 1e3 * cli_now_s();
    ns_status st = ns_sim_create(n_shapes, shapes, cells, cell_shape, &p, &o, &sim);
    if (st == NS_ERR_UNSUPPORTED && model && method == NS_HINES_ONCHIP) {
        /* a model the onchip loop does not run (docs/simulation.md, "Models: the fused loop"): the tree loop */
        o.method = NS_HINES_TREE;
        st = ns_sim_create(n_shapes, shapes, cells, cell_shape, &p, &o, &sim);
    }
    for (long long c = 0; c < cells && st == NS_OK; ++c) {
        ns_cell_info ci;
        ns_cell_get_info(shapes[cell_shape ? cell_shape[c] : c % n_shapes], &ci);
        st = ns_sim_add_iclamp(sim, c, ns_sim_spike_compartment(sim, c), 5.0, 1e9, 1.5e-4 * ci.total_area);
    }
    if (st == NS_OK) st = ns_sim_init(sim);
    const double t1 = 1e3 * cli_now_s();
    if (st == NS_OK) st = ns_sim_advance(sim, 40); /* warm-up: first touch, module load */
    const double e0 = ns_sim_elapsed_ms(sim);
    if (st == NS_OK) st = ns_sim_advance(sim, steps);
    const double ms = ns_sim_elapsed_ms(sim) - e0;
    if (st != NS_OK) {
        ns_sim_destroy(sim);
        return cli_status_error("bench sim", st);
    }
    snprintf(t->backend, sizeof t->backend, "%s", ns_backend_name(ns_sim_backend(sim)));
    snprintf(t->method, sizeof t->method, "%s%s", ns_hines_method_name(ns_sim_method(sim)),
             ns_sim_gpu_mechanisms_of(sim) == NS_SIM_GPU_MECHANISMS_PER_MECHANISM ? "+per-mech"
             : ns_sim_gpu_graph_of(sim, NULL)                                     ? "+graph"
                                                                                  : "");
    t->lanes = ns_sim_method(sim) == NS_HINES_ONCHIP ? ns_sim_gpu_lanes(sim) : 0;
    t->compartments = ns_sim_compartments(sim);
    t->setup_s = (t1 - t0) * 1e-3;
    t->ms_per_step = ms / steps;
    t->min_bytes = ns_sim_step_min_bytes(sim);
    ns_sim_destroy(sim);
    return 0;
}

void bench_sim_bandwidth(const sim_timing *t, int gpu, double *gbs, double *copy_gbs) {
    const double bytes = t->min_bytes * (double)t->compartments;
    *gbs = bytes / (t->ms_per_step * 1e-3) * 1e-9;
    *copy_gbs = -1.0;
    if (gpu && bytes >= 1.0 && ns_cuda_copy_bandwidth(0, (size_t)bytes, 10, copy_gbs) != NS_OK) *copy_gbs = -1.0;
}

static int time_row(const ns_cell_t *cell, long long cells, ns_backend be, ns_hines_method method, int lanes,
                    int threads, int steps, const ns_sim_params *params, const ns_sim_model_t *model,
                    ns_sim_gpu_mechanisms gpu_mechanisms, row *r) {
    sim_timing t;
    const int rc =
        bench_sim_time(1, &cell, cells, NULL, be, method, lanes, threads, steps, params, model, gpu_mechanisms, &t);
    if (rc) return rc;
    snprintf(r->backend, sizeof r->backend, "%s", t.backend);
    snprintf(r->method, sizeof r->method, "%s", t.method);
    r->lanes = t.lanes;
    r->cells = cells;
    r->compartments = t.compartments;
    r->ms_per_step = t.ms_per_step;
    r->cell_steps_per_s = (double)cells / (t.ms_per_step * 1e-3);
    r->comp_steps_per_s = (double)r->compartments / (t.ms_per_step * 1e-3);
    r->bytes = t.min_bytes;
    bench_sim_bandwidth(&t, be == NS_BACKEND_CUDA, &r->gbs, &r->copy_gbs);
    r->ratio = r->copy_gbs > 0 ? r->gbs / r->copy_gbs : -1.0;
    r->vs_neuron = -1.0;
    return 0;
}

/* Run a baseline script (no shell) and read its JSON line: cells, segments
 * and the wall seconds of `steps` steps; cell-steps per second, or -1. */
static double run_baseline(const char *const *argv, int steps, long long *cells, long long *segments) {
    pid_t pid;
    FILE *f = cli_program_output(argv, &pid); /* no shell: file names may hold any character */
    if (!f) return -1.0;
    char line[8192] = "";
    double wall = -1.0;
    while (fgets(line, sizeof line, f)) {
        const char *w = strstr(line, "\"wall_s\":"), *s = strstr(line, "\"segments\":"),
                   *c = strstr(line, "\"cells\":");
        if (w) wall = atof(w + 9);
        if (s) *segments = atoll(s + 11);
        if (c) *cells = atoll(c + 8);
    }
    if (cli_program_close(f, pid) != 0 || wall <= 0) return -1.0;
    return (double)*cells * steps / wall;
}

double bench_sim_baseline(const char *script, const char *files, long long per, int steps, int threads,
                          long long *cells, long long *segments) {
    char path[4096], per_s[32], tstop[64], threads_s[32];
    snprintf(path, sizeof path, "%s/bench/%s_sim_bench.py", NS_SOURCE_DIR, script);
    snprintf(per_s, sizeof per_s, "%lld", per);
    snprintf(tstop, sizeof tstop, "%g", steps * 0.025);
    snprintf(threads_s, sizeof threads_s, "%d", threads);
    const char *argv[] = {"python3", path, files, per_s, tstop, "0.025", threads_s, NULL};
    return run_baseline(argv, steps, cells, segments);
}

double bench_sim_baseline_model(const char *swc, const char *params_file, const char *model_file, long long per,
                                int steps, int threads, double amp, long long *cells, long long *segments) {
    char path[4096], per_s[32], steps_s[32], threads_s[32], amp_s[64];
    snprintf(path, sizeof path, "%s/bench/neuron_model_bench.py", NS_SOURCE_DIR);
    snprintf(per_s, sizeof per_s, "%lld", per);
    snprintf(steps_s, sizeof steps_s, "%d", steps);
    snprintf(threads_s, sizeof threads_s, "%d", threads);
    snprintf(amp_s, sizeof amp_s, "%.17g", amp);
    const char *argv[] = {"python3", path, swc, params_file, model_file, per_s, steps_s, threads_s, amp_s, "5.0", NULL};
    return run_baseline(argv, steps, cells, segments);
}

char *bench_sim_arbor_accepts(char **files, int n_files) {
    size_t z = 8192;
    for (int k = 0; k < n_files; ++k) z += strlen(files[k]) + 1;
    char *list = malloc(z), *out = calloc(z, 1);
    if (!list || !out) {
        free(list);
        free(out);
        return NULL;
    }
    size_t at = 0;
    list[0] = 0;
    for (int k = 0; k < n_files; ++k) at += (size_t)sprintf(list + at, "%s%s", k ? "," : "", files[k]);
    char path[4096];
    snprintf(path, sizeof path, "%s/bench/arbor_sim_bench.py", NS_SOURCE_DIR);
    const char *argv[] = {"python3", path, "--accepts", list, NULL};
    pid_t pid;
    FILE *f = cli_program_output(argv, &pid); /* no shell: file names may hold any character */
    size_t len = 0;
    if (f) {
        char line[4096];
        while (fgets(line, sizeof line, f)) {
            line[strcspn(line, "\r\n")] = 0;
            if (!line[0] || len + strlen(line) + 2 > z) continue;
            len += (size_t)sprintf(out + len, "%s%s", len ? "," : "", line);
        }
    }
    free(list);
    if (!f || cli_program_close(f, pid) != 0 || len == 0) {
        free(out);
        return NULL;
    }
    return out;
}

int bench_sim_listed(const char *list, const char *file) {
    const size_t z = strlen(file);
    for (const char *p = list; (p = strstr(p, file)) != NULL; p += z)
        if ((p == list || p[-1] == ',') && (p[z] == ',' || p[z] == 0)) return 1;
    return 0;
}

/* The command line of a run. */
typedef struct sim_opts {
    char morph[4096];
    long long cells[MAX_LIST], cpu_max, steps, neuron_cells, arbor_cells, threads;
    int n_cells, cpu, gpu, as_json;
    const char *csv, *model_file, *mech_lib, *params_file;
    ns_sim_gpu_mechanisms gpu_mechanisms;
    ns_hines_method gpu_method[MAX_GPU];
    int gpu_lanes[MAX_GPU], n_gpu;
} sim_opts;

/* --gpu-methods onchip[:L],tree,auto; 0 or 2 (printed). */
static int option_gpu_methods(sim_opts *o, const char *v) {
    static char text[256];
    const char *items[MAX_GPU];
    snprintf(text, sizeof text, "%s", v);
    o->n_gpu = cli_split_list(text, items, MAX_GPU);
    if (o->n_gpu <= 0) return cli_usage_error("bench sim", "--gpu-methods takes 1 to %d items", MAX_GPU);
    for (int k = 0; k < o->n_gpu; ++k) {
        o->gpu_lanes[k] = 0;
        char *colon = strchr((char *)items[k], ':');
        int64_t lanes = 0;
        if (colon && ns_integer_parse(colon + 1, 0, 32, &lanes) != NS_OK)
            return cli_usage_error("bench sim", "--gpu-methods: '%s': %s", v, ns_last_error());
        if (colon) *colon = 0, o->gpu_lanes[k] = (int)lanes;
        if (ns_hines_method_from_name(items[k], &o->gpu_method[k]) != NS_OK ||
            (o->gpu_method[k] != NS_HINES_ONCHIP && o->gpu_method[k] != NS_HINES_TREE &&
             o->gpu_method[k] != NS_HINES_AUTO) ||
            (colon && o->gpu_method[k] != NS_HINES_ONCHIP))
            return cli_usage_error("bench sim", "--gpu-methods: '%s' is not onchip[:L], tree or auto", v);
    }
    return 0;
}

/* The command line into o; -1 to go on, else the exit status (printed; 0 after --help). */
static int parse_options(int argc, char **argv, sim_opts *o) {
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = 1;
        if (strcmp(a, "--help") == 0) { help(); return 0; }
        else if (strcmp(a, "--morph") == 0 && v) snprintf(o->morph, sizeof o->morph, "%s", v), ++i;
        else if (strcmp(a, "--cells") == 0) ok = cli_parse_long_list("bench sim", a, v, 1, 100000000, o->cells, MAX_LIST, &o->n_cells), ++i;
        else if (strcmp(a, "--cpu-max") == 0) ok = cli_parse_long("bench sim", a, v, 0, 100000000, &o->cpu_max), ++i;
        else if (strcmp(a, "--steps") == 0) ok = cli_parse_long("bench sim", a, v, 1, 10000000, &o->steps), ++i;
        else if (strcmp(a, "--neuron") == 0) ok = cli_parse_long("bench sim", a, v, 1, 1000000, &o->neuron_cells), ++i;
        else if (strcmp(a, "--arbor") == 0) ok = cli_parse_long("bench sim", a, v, 1, 1000000, &o->arbor_cells), ++i;
        else if (strcmp(a, "--threads") == 0) ok = cli_parse_long("bench sim", a, v, 1, 4096, &o->threads), ++i;
        else if (strcmp(a, "--backend") == 0 && v) {
            if (strcmp(v, "cpu") == 0) o->cpu = 1, o->gpu = 0;
            else if (strcmp(v, "cuda") == 0) o->cpu = 0, o->gpu = 1;
            else if (strcmp(v, "all") == 0) o->cpu = 1, o->gpu = 1;
            else return cli_usage_error("bench sim", "--backend takes cpu, cuda or all");
            ++i;
        } else if (strcmp(a, "--gpu-methods") == 0 && v) {
            if (option_gpu_methods(o, v)) return 2;
            ++i;
        } else if (strcmp(a, "--csv") == 0 && v) o->csv = v, ++i;
        else if (strcmp(a, "--model") == 0 && v) o->model_file = v, ++i;
        else if (strcmp(a, "--mechanisms") == 0 && v) o->mech_lib = v, ++i;
        else if (strcmp(a, "--params") == 0 && v) o->params_file = v, ++i;
        else if (strcmp(a, "--gpu-mechanisms") == 0 && v) {
            if (ns_sim_gpu_mechanisms_from_name(v, &o->gpu_mechanisms) != NS_OK)
                return cli_usage_error("bench sim", "--gpu-mechanisms: %s", ns_last_error());
            ++i;
        }
        else if (strcmp(a, "--json") == 0) o->as_json = 1;
        else return cli_usage_error("bench sim", "unknown option or missing value '%s'", a);
        if (!ok) return 2;
    }
    return -1;
}

/* The baselines' cell-steps per second and segments (-1: not run or failed). */
typedef struct baselines {
    int threads; /* --threads (1 without it) */
    double neuron, arbor;
    long long neuron_segments, arbor_segments;
} baselines;

/* NEURON's and Arbor's runs of the same cell (--neuron N, --arbor N). */
static void run_baselines(const sim_opts *o, const ns_cell_t *cell, const ns_sim_model_t *model, baselines *b) {
    if (o->neuron_cells > 0) {
        long long built = 0;
        if (model) {
            ns_cell_info ci;
            ns_cell_get_info(cell, &ci);
            b->neuron = bench_sim_baseline_model(o->morph, o->params_file, o->model_file, o->neuron_cells,
                                                 (int)o->steps, b->threads, 1.5e-4 * ci.total_area, &built,
                                                 &b->neuron_segments);
        } else
            b->neuron = bench_sim_baseline("neuron", o->morph, o->neuron_cells, (int)o->steps, b->threads, &built,
                                           &b->neuron_segments);
        if (b->neuron < 0) fprintf(stderr, "neurosolve bench sim: the NEURON baseline failed (pip install neuron)\n");
    }
    if (o->arbor_cells > 0) {
        long long built = 0;
        b->arbor = bench_sim_baseline("arbor", o->morph, o->arbor_cells, (int)o->steps, b->threads, &built,
                                      &b->arbor_segments);
        if (b->arbor < 0) fprintf(stderr, "neurosolve bench sim: the Arbor baseline failed (pip install arbor)\n");
    }
}

/* The table's head: the baselines, the cell, the columns. */
static void print_header(const sim_opts *o, const baselines *b, const char *name) {
    if (b->neuron > 0)
        printf("NEURON (%d thread(s), %lld cells, %lld segments): %.4g cell-steps/s = %.4g segment-steps/s\n",
               b->threads, o->neuron_cells, b->neuron_segments, b->neuron,
               b->neuron * (double)b->neuron_segments / (double)o->neuron_cells);
    if (b->arbor > 0)
        printf("Arbor (%d thread(s), %lld cells, %lld CVs): %.4g cell-steps/s = %.4g CV-steps/s\n", b->threads,
               o->arbor_cells, b->arbor_segments, b->arbor, b->arbor * (double)b->arbor_segments / (double)o->arbor_cells);
    printf("%s, %lld timed steps of 0.025 ms per row\n", name, o->steps);
    printf("%-5s %-12s %5s %9s %12s %10s %14s %14s %7s %9s %9s %8s %10s %9s\n", "be", "method", "lanes",
           "cells", "compartments", "ms/step", "cell-steps/s", "comp-steps/s", "B/comp", "GB/s", "copy GB/s",
           "bw/copy", "vs NEURON", "vs Arbor");
}

static void print_row(const row *r) {
    printf("%-5s %-12s %5d %9lld %12lld %10.4f %14.4g %14.4g ", r->backend, r->method, r->lanes, r->cells,
           r->compartments, r->ms_per_step, r->cell_steps_per_s, r->comp_steps_per_s);
    printf("%7.1f %9.1f ", r->bytes, r->gbs);
    if (r->copy_gbs > 0) printf("%9.1f ", r->copy_gbs); else printf("%9s ", "-");
    if (r->ratio >= 0) printf("%8.3f ", r->ratio); else printf("%8s ", "-");
    if (r->vs_neuron >= 0) printf("%9.2fx ", r->vs_neuron); else printf("%10s ", "-");
    if (r->vs_arbor >= 0) printf("%8.2fx\n", r->vs_arbor); else printf("%9s\n", "-");
    fflush(stdout);
}

/* The rows as CSV (--csv); 0 or 1 (printed). */
static int write_csv(const char *csv, const row *rows, int n_rows, const baselines *b) {
    ns_output *o = cli_output_open(csv);
    FILE *f = ns_output_stream(o);
    if (!f) return 1;
    fprintf(f, "backend,method,lanes,cells,compartments,ms_per_step,cell_steps_per_s,compartment_steps_per_s,bytes_per_compartment_step,gbs,bw_ratio,vs_neuron,copy_gbs,neuron_cell_steps_per_s,vs_arbor,arbor_cell_steps_per_s,threads\n");
    for (int k = 0; k < n_rows; ++k)
        fprintf(f, "%s,%s,%d,%lld,%lld,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%d\n", rows[k].backend,
                rows[k].method, rows[k].lanes, rows[k].cells, rows[k].compartments, rows[k].ms_per_step, rows[k].cell_steps_per_s,
                rows[k].comp_steps_per_s, rows[k].bytes, rows[k].gbs, rows[k].ratio, rows[k].vs_neuron, rows[k].copy_gbs, b->neuron,
                rows[k].vs_arbor, b->arbor, b->threads);
    return cli_output_commit(o) ? 1 : 0;
}

/* The rows as one JSON document on stdout (--json). */
static void write_json(const sim_opts *o, const row *rows, int n_rows, const baselines *b) {
    cli_json j;
    json_begin(&j, stdout);
    json_double(&j, "neuron_cell_steps_per_s", b->neuron);
    json_double(&j, "arbor_cell_steps_per_s", b->arbor);
    json_int(&j, "threads", o->threads);
    json_int(&j, "steps", o->steps);
    json_array_begin(&j, "rows");
    for (int k = 0; k < n_rows; ++k) {
        const row *r = &rows[k];
        json_object_begin(&j, NULL);
        json_string(&j, "backend", r->backend);
        json_string(&j, "method", r->method);
        if (r->lanes) json_int(&j, "lanes", r->lanes);
        json_int(&j, "cells", r->cells);
        json_int(&j, "compartments", r->compartments);
        json_double(&j, "ms_per_step", r->ms_per_step);
        json_double(&j, "cell_steps_per_s", r->cell_steps_per_s);
        json_double(&j, "compartment_steps_per_s", r->comp_steps_per_s);
        json_double(&j, "bytes_per_compartment_step", r->bytes);
        bench_json_bandwidth(&j, r->gbs, r->copy_gbs, r->ratio);
        if (r->vs_neuron >= 0) json_double(&j, "vs_neuron", r->vs_neuron);
        if (r->vs_arbor >= 0) json_double(&j, "vs_arbor", r->vs_arbor);
        json_object_end(&j);
    }
    json_array_end(&j);
    json_end(&j);
}

int bench_sim(int argc, char **argv) {
    for (int i = 1; i < argc; ++i)
        if (strcmp(argv[i], "--mixed") == 0) return bench_sim_mixed(argc, argv);
    for (int i = 1; i < argc; ++i)
        if (strcmp(argv[i], "--network") == 0) return bench_sim_network(argc, argv);
    sim_opts o = {.cells = {1000, 10000, 100000, 1000000}, .cpu_max = 100000, .steps = 400, .n_cells = 4,
                  .cpu = 1, .gpu = 1, .gpu_mechanisms = NS_SIM_GPU_MECHANISMS_AUTO,
                  .gpu_method = {NS_HINES_ONCHIP, NS_HINES_TREE}, .n_gpu = 2};
    snprintf(o.morph, sizeof o.morph, "%s/allen_chat_614430666.swc", cli_morphology_dir());
    int rc = parse_options(argc, argv, &o);
    if (rc >= 0) return rc;
    int n_dev = 0;
    if (o.gpu && (ns_cuda_device_count(&n_dev) != NS_OK || n_dev == 0)) {
        fprintf(stderr, "neurosolve bench sim: no usable GPU: CPU rows only\n");
        o.gpu = 0;
    }
    if (o.mech_lib && !o.model_file) return cli_usage_error("bench sim", "--mechanisms LIB needs --model FILE");
    ns_sim_params params;
    ns_sim_params_init(&params);
    if (o.model_file && o.neuron_cells > 0 && !o.params_file)
        return cli_usage_error("bench sim", "--neuron with --model needs --params FILE (NEURON reads the same file)");
    if (o.params_file) {
        ns_status pst = ns_sim_params_read(&params, o.params_file);
        if (pst != NS_OK) return cli_status_error("bench sim: parameters", pst);
    }
    ns_mech_library_t *lib = NULL;
    ns_sim_model_t *model = NULL;
    if (o.model_file && ((o.mech_lib && ns_mech_library_open(o.mech_lib, &lib) != NS_OK) ||
                         ns_sim_model_create(lib, &model) != NS_OK || ns_sim_model_read(model, o.model_file) != NS_OK)) {
        cli_error("bench sim: model: %s", ns_last_error());
        ns_sim_model_destroy(model);
        ns_mech_library_close(lib);
        return 1;
    }
    cli_morph_options mo;
    cli_morph_options_init(&mo);
    mo.disc.Ra = params.Ra;
    cli_shape_set set = {0};
    if (cli_shapes_add(&set, o.morph, &mo, 1)) {
        ns_sim_model_destroy(model);
        ns_mech_library_close(lib);
        return 1;
    }
    const ns_cell_t *cell = set.items[0].cell;

    baselines b = {o.threads > 0 ? (int)o.threads : 1, -1.0, -1.0, 0, 0};
    run_baselines(&o, cell, model, &b);
    if (!o.as_json) print_header(&o, &b, set.items[0].name);
    row rows[(1 + MAX_GPU) * MAX_LIST];
    int n_rows = 0;
    rc = 0;
    /* variant 0: the CPU; 1 .. n_gpu: the GPU loops */
    for (int be = 0; be <= o.n_gpu && !rc; ++be) {
        if ((be == 0 && !o.cpu) || (be > 0 && !o.gpu)) continue;
        for (int k = 0; k < o.n_cells && !rc; ++k) {
            if (be == 0 && o.cells[k] > o.cpu_max) continue;
            row *r = &rows[n_rows];
            memset(r, 0, sizeof *r);
            rc = time_row(cell, o.cells[k], be == 0 ? NS_BACKEND_CPU : NS_BACKEND_CUDA,
                          be == 0 ? NS_HINES_AUTO : o.gpu_method[be - 1], be == 0 ? 0 : o.gpu_lanes[be - 1],
                          (int)o.threads, (int)o.steps, &params, model,
                          be == 0 ? NS_SIM_GPU_MECHANISMS_AUTO : o.gpu_mechanisms, r);
            if (rc) break;
            if (b.neuron > 0) r->vs_neuron = r->cell_steps_per_s / b.neuron;
            r->vs_arbor = b.arbor > 0 ? r->cell_steps_per_s / b.arbor : -1.0;
            ++n_rows;
            if (!o.as_json) print_row(r);
        }
    }
    cli_shapes_free(&set);
    ns_sim_model_destroy(model);
    ns_mech_library_close(lib);
    if (!rc && o.csv && write_csv(o.csv, rows, n_rows, &b)) return 1;
    if (!rc && o.as_json) write_json(&o, rows, n_rows, &b);
    return rc;
}
