/* neurosolve bench sim --mixed: populations of different real cells
 * (issue 14). Populations:
 *   bundled xK  every bundled morphology that reads with its own radii (53
 *               of 54), K cells each (default 5, 20, 200)
 *   ref xK      one bundled shape near the mean size, as many cells as give
 *               the same total compartments (the one-shape ceiling)
 *   jitter      every cell its own shape: the bundled morphologies of at
 *               most 10,000 compartments, each cell discretised with its own
 *               d_lambda in [0.05, 0.2] (default 10,000 cells)
 * Each row: the GPU loops asked for (default auto and tree), and the CPU
 * loop (OpenMP) on populations of at most --cpu-max compartments, timed
 * over --steps steps after 40 warm-up steps; set-up (create + init) apart.
 * --neuron-threads T adds NEURON with T threads on the bundled x5
 * population (bench/neuron_sim_bench.py) and speedups per cell-step;
 * --arbor adds Arbor (bench/arbor_sim_bench.py, --threads threads) and
 * restricts the bundled set to the morphologies Arbor's SWC loader
 * accepts, so that all rows simulate the same cells. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_sim.h"

#define MAX_LIST 8

typedef struct mrow {
    char pop[32], backend[8], method[24];
    long long cells, comps;
    int shapes;
    double setup_s, ms_per_step, cell_steps, comp_steps, vs_neuron, vs_arbor, vs_cpu, vs_ref;
    double bytes, gbs, copy_gbs; /* the step's minimum bytes per compartment-step, over the time; the copy's */
} mrow;

static void help(void) {
    printf("usage: neurosolve bench sim --mixed [options]\n"
           "  --per N,...           cells per bundled morphology (default 5,20,200)\n"
           "  --jitter N            cells of the all-different population (default 10000; 0: none)\n"
           "  --gpu-methods LIST    GPU loops: auto, tree, onchip (default auto,tree)\n"
           "  --cpu-max N           largest population (compartments) timed on the CPU (default 500000)\n"
           "  --steps N             timed steps after 40 warm-up steps (default 400 = 10 ms)\n"
           "  --neuron-threads T    NEURON with T threads on bundled x5 (needs `pip install neuron`)\n"
           "  --arbor               Arbor on bundled x5 (needs `pip install arbor`), with --threads threads;\n"
           "                        the bundled set becomes the morphologies Arbor's SWC loader accepts\n"
           "  --threads T           CPU threads of our loop (default: OpenMP's default) and of Arbor (1)\n"
           "  --csv FILE\n");
}

/* Time one population into a row (bench_sim_time). */
static int cpu_threads; /* --threads (0: OpenMP's default) */

static int time_pop(int n_shapes, ns_cell_t **shapes, long long cells, const int32_t *cell_shape, ns_backend be,
                    ns_hines_method method, int steps, mrow *r) {
    sim_timing t;
    const int rc = bench_sim_time(n_shapes, (const ns_cell_t *const *)shapes, cells, cell_shape, be, method, 0,
                                  cpu_threads, steps, NULL, NULL, NS_SIM_GPU_MECHANISMS_AUTO, &t);
    if (rc) return rc;
    snprintf(r->backend, sizeof r->backend, "%s", t.backend);
    snprintf(r->method, sizeof r->method, "%s", t.method);
    r->cells = cells;
    r->comps = t.compartments;
    r->setup_s = t.setup_s;
    r->ms_per_step = t.ms_per_step;
    r->cell_steps = (double)cells / (t.ms_per_step * 1e-3);
    r->comp_steps = (double)r->comps / (t.ms_per_step * 1e-3);
    r->vs_neuron = r->vs_arbor = r->vs_cpu = r->vs_ref = -1.0;
    r->bytes = t.min_bytes;
    bench_sim_bandwidth(&t, be == NS_BACKEND_CUDA, &r->gbs, &r->copy_gbs);
    return 0;
}

static void print_row(const mrow *r) {
    printf("%-14s %6d %8lld %10lld %-5s %-12s %8.2f %10.4f %12.4g %12.4g", r->pop, r->shapes, r->cells, r->comps,
           r->backend, r->method, r->setup_s, r->ms_per_step, r->cell_steps, r->comp_steps);
    if (r->vs_cpu > 0) printf(" %8.1fx", r->vs_cpu); else printf(" %9s", "-");
    if (r->vs_neuron > 0) printf(" %8.2fx", r->vs_neuron); else printf(" %9s", "-");
    if (r->vs_arbor > 0) printf(" %8.2fx", r->vs_arbor); else printf(" %9s", "-");
    if (r->vs_ref > 0) printf(" %7.2f", r->vs_ref); else printf(" %7s", "-");
    printf(" %7.1f %8.1f", r->bytes, r->gbs);
    if (r->copy_gbs > 0) printf(" %8.3f", r->gbs / r->copy_gbs); else printf(" %8s", "-");
    printf("\n");
    fflush(stdout);
}

/* The command line of a run. */
typedef struct mixed_opts {
    long long per[MAX_LIST], jitter, cpu_max, steps, nthreads, threads;
    int n_per, with_arbor;
    const char *csv;
    char methods_buf[128];
} mixed_opts;

/* The command line into o; -1 to go on, else the exit status (printed; 0 after --help). */
static int parse_options(int argc, char **argv, mixed_opts *o) {
    const char *cmd = "bench sim --mixed";
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = 1;
        if (strcmp(a, "--mixed") == 0) continue;
        if (strcmp(a, "--help") == 0) { help(); return 0; }
        else if (strcmp(a, "--per") == 0) ok = cli_parse_long_list(cmd, a, v, 1, 100000, o->per, MAX_LIST, &o->n_per), ++i;
        else if (strcmp(a, "--jitter") == 0) ok = cli_parse_long(cmd, a, v, 0, 10000000, &o->jitter), ++i;
        else if (strcmp(a, "--cpu-max") == 0) ok = cli_parse_long(cmd, a, v, 0, 1LL << 40, &o->cpu_max), ++i;
        else if (strcmp(a, "--steps") == 0) ok = cli_parse_long(cmd, a, v, 1, 10000000, &o->steps), ++i;
        else if (strcmp(a, "--neuron-threads") == 0) ok = cli_parse_long(cmd, a, v, 1, 1024, &o->nthreads), ++i;
        else if (strcmp(a, "--threads") == 0) ok = cli_parse_long(cmd, a, v, 1, 4096, &o->threads), ++i;
        else if (strcmp(a, "--arbor") == 0) o->with_arbor = 1;
        else if (strcmp(a, "--gpu-methods") == 0 && v) snprintf(o->methods_buf, sizeof o->methods_buf, "%s", v), ++i;
        else if (strcmp(a, "--csv") == 0 && v) o->csv = v, ++i;
        else return cli_usage_error(cmd, "unknown option or missing value '%s'", a);
        if (!ok) return 2;
    }
    return -1;
}

/* The bundled cells of a run, the GPU loops timed, the baselines and the rows. */
typedef struct mixed_run {
    ns_cell_t *cells[256];
    ns_morph_t *morphs[256];
    int n, ref;       /* cells; the one nearest the mean size */
    long long total;  /* compartments of one of each */
    double mean;
    char *list;       /* the files, comma-separated (for the baselines) */
    ns_hines_method methods[MAX_LIST];
    int n_methods, gpu;
    double neuron, arbor; /* the baselines' cell-steps/s (-1: none) */
    mrow *rows;
    int nr, cap;
} mixed_run;

/* The bundled morphologies that read with their own radii (with --arbor: the
 * ones Arbor's loader accepts too). */
static void load_bundled(mixed_opts *o, mixed_run *m, char **files, int n_files) {
    m->list = calloc((size_t)n_files, 1100);
    char *accepted = NULL; /* with --arbor: the files Arbor's loader accepts */
    if (o->with_arbor && (accepted = bench_sim_arbor_accepts(files, n_files)) == NULL) {
        fprintf(stderr, "neurosolve bench sim --mixed: bench/arbor_sim_bench.py --accepts failed (pip install arbor)\n");
        o->with_arbor = 0;
    }
    for (int k = 0; k < n_files && m->n < 256; ++k) {
        if (accepted && !bench_sim_listed(accepted, files[k])) continue;
        ns_morph_t *mo = NULL;
        if (ns_swc_read(files[k], NULL, &mo) == NS_OK && ns_discretize(mo, NULL, &m->cells[m->n]) == NS_OK) {
            if (m->list) {
                if (m->n) strcat(m->list, ",");
                strcat(m->list, files[k]);
            }
            m->morphs[m->n++] = mo;
        } else {
            ns_morph_destroy(mo);
        }
    }
    free(accepted);
    for (int k = 0; k < m->n; ++k) m->total += ns_tree_size(ns_cell_tree(m->cells[k]));
    m->mean = m->n ? (double)m->total / m->n : 0.0;
    for (int k = 1; k < m->n; ++k)
        if (fabs(ns_tree_size(ns_cell_tree(m->cells[k])) - m->mean) <
            fabs(ns_tree_size(ns_cell_tree(m->cells[m->ref])) - m->mean))
            m->ref = k;
    printf("bundled: %d morphologies, %lld compartments per set; reference shape %d compartments; %lld timed steps\n",
           m->n, m->total, (int)ns_tree_size(ns_cell_tree(m->cells[m->ref])), o->steps);
}

/* NEURON (--neuron-threads) and Arbor (--arbor) on the bundled set x5. */
static void run_baselines(const mixed_opts *o, mixed_run *m) {
    if (o->nthreads > 0 && m->list) {
        long long segments = 0, neuron_cells = 0;
        m->neuron = bench_sim_baseline("neuron", m->list, 5, (int)o->steps, (int)o->nthreads, &neuron_cells, &segments);
        if (m->neuron < 0) fprintf(stderr, "neurosolve bench sim --mixed: the NEURON baseline failed (pip install neuron)\n");
        else printf("NEURON, %lld threads, bundled x5 (%lld cells Import3d read): %.4g cell-steps/s\n", o->nthreads,
                    neuron_cells, m->neuron);
    }
    if (o->with_arbor && m->list) {
        long long arbor_cells = 0, cvs = 0;
        const int at = o->threads > 0 ? (int)o->threads : 1;
        m->arbor = bench_sim_baseline("arbor", m->list, 5, (int)o->steps, at, &arbor_cells, &cvs);
        if (m->arbor < 0) fprintf(stderr, "neurosolve bench sim --mixed: the Arbor baseline failed (pip install arbor)\n");
        else printf("Arbor, %d threads, bundled x5 (%lld cells, %lld CVs): %.4g cell-steps/s\n", at, arbor_cells, cvs,
                    m->arbor);
    }
}

/* The populations of the bundled set x per[q]: the one-shape reference of
 * equal total size (GPU, auto), the CPU, the GPU loops; 0 or the exit status (printed). */
static int run_populations(const mixed_opts *o, mixed_run *m) {
    int rc = 0;
    for (int q = 0; q < o->n_per && !rc && m->n > 0; ++q) {
        const long long N = o->per[q] * m->n;
        char pop[32];
        snprintf(pop, sizeof pop, "bundled x%lld", o->per[q]);
        double cpu_rate = -1.0, ref_rate = -1.0;
        const long long ref_cells =
            (long long)((double)N * m->mean / ns_tree_size(ns_cell_tree(m->cells[m->ref])) + 0.5);
        if (m->gpu) {
            mrow *r = cli_append_zeroed(&m->rows, &m->nr, &m->cap, sizeof *r);
            if (!r) { rc = cli_error("out of memory"); break; }
            snprintf(r->pop, sizeof r->pop, "ref x%lld", o->per[q]);
            r->shapes = 1;
            if ((rc = time_pop(1, &m->cells[m->ref], ref_cells, NULL, NS_BACKEND_CUDA, NS_HINES_AUTO, (int)o->steps, r)))
                break;
            ref_rate = r->comp_steps;
            print_row(r);
        }
        for (int v = -1; v < m->n_methods && !rc; ++v) {
            const int cpu = v < 0;
            if (cpu && m->total * o->per[q] > o->cpu_max) continue;
            if (!cpu && !m->gpu) break;
            mrow *r = cli_append_zeroed(&m->rows, &m->nr, &m->cap, sizeof *r);
            if (!r) { rc = cli_error("out of memory"); break; }
            snprintf(r->pop, sizeof r->pop, "%s", pop);
            r->shapes = m->n;
            if ((rc = time_pop(m->n, m->cells, N, NULL, cpu ? NS_BACKEND_CPU : NS_BACKEND_CUDA,
                               cpu ? NS_HINES_OPENMP : m->methods[v], (int)o->steps, r)))
                break;
            if (cpu) cpu_rate = r->cell_steps;
            else if (cpu_rate > 0) r->vs_cpu = r->cell_steps / cpu_rate;
            if (m->neuron > 0 && o->per[q] == 5) r->vs_neuron = r->cell_steps / m->neuron;
            if (m->arbor > 0 && o->per[q] == 5) r->vs_arbor = r->cell_steps / m->arbor;
            if (!cpu && ref_rate > 0) r->vs_ref = r->comp_steps / ref_rate;
            print_row(r);
        }
    }
    return rc;
}

/* Every cell its own shape: --jitter cells of the bundled morphologies up to
 * 10,000 compartments, each discretised with its own d_lambda; 0 or the exit
 * status (printed). */
static int run_jitter(const mixed_opts *o, mixed_run *m) {
    const long long jitter = o->jitter;
    int small[256], ns = 0, rc = 0;
    for (int k = 0; k < m->n; ++k)
        if (ns_tree_size(ns_cell_tree(m->cells[k])) <= 10000) small[ns++] = k;
    ns_cell_t **jc = calloc((size_t)jitter, sizeof *jc);
    int32_t *js = malloc((size_t)jitter * sizeof *js);
    if (!jc || !js) rc = cli_error("out of memory");
    uint64_t x = 0x2545F4914F6CDD1DULL;
    for (long long c = 0; c < jitter && !rc; ++c) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        ns_discretize_options d;
        ns_discretize_options_init(&d);
        d.d_lambda = 0.05 + 0.15 * (double)(x >> 11) / 9007199254740992.0;
        if (ns_discretize(m->morphs[small[c % ns]], &d, &jc[c]) != NS_OK)
            rc = cli_status_error("jitter: discretising", NS_ERR_INVALID_ARGUMENT);
        js[c] = (int32_t)c;
    }
    for (int v = 0; v < m->n_methods && !rc; ++v) {
        /* one kernel per shape for 10,000 shapes is no contender (and
         * its set-up alone plans 10,000 onchip schedules): not timed */
        if (m->methods[v] == NS_HINES_ONCHIP) continue;
        mrow *r = cli_append_zeroed(&m->rows, &m->nr, &m->cap, sizeof *r);
        if (!r) { rc = cli_error("out of memory"); break; }
        snprintf(r->pop, sizeof r->pop, "jitter");
        r->shapes = (int)jitter;
        if ((rc = time_pop((int)jitter, jc, jitter, js, NS_BACKEND_CUDA, m->methods[v], (int)o->steps, r))) break;
        print_row(r);
    }
    for (long long c = 0; jc && c < jitter; ++c) ns_cell_destroy(jc[c]);
    free(jc), free(js);
    return rc;
}

/* The rows as CSV (--csv); 0 or 1 (printed). */
static int write_csv(const mixed_opts *o, const mixed_run *m) {
    FILE *f = cli_make_parent_dir(o->csv) ? NULL : fopen(o->csv, "w");
    if (!f) return cli_error("%s: cannot write", o->csv);
    fprintf(f, "population,shapes,cells,compartments,backend,method,setup_s,ms_per_step,cell_steps_per_s,"
               "compartment_steps_per_s,vs_cpu,vs_neuron,vs_ref,neuron_threads,neuron_cell_steps_per_s,"
               "vs_arbor,arbor_cell_steps_per_s,threads,bytes_per_compartment_step,gbs,copy_gbs\n");
    for (int k = 0; k < m->nr; ++k) {
        const mrow *r = &m->rows[k];
        fprintf(f, "\"%s\",%d,%lld,%lld,%s,%s,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%lld,%.6g,%.6g,%.6g,%lld,%.6g,%.6g,%.6g\n",
                r->pop, r->shapes, r->cells, r->comps, r->backend, r->method, r->setup_s, r->ms_per_step,
                r->cell_steps, r->comp_steps, r->vs_cpu, r->vs_neuron, r->vs_ref, o->nthreads, m->neuron,
                r->vs_arbor, m->arbor, o->threads, r->bytes, r->gbs, r->copy_gbs);
    }
    fclose(f);
    return 0;
}

int bench_sim_mixed(int argc, char **argv) {
    mixed_opts o = {.per = {5, 20, 200}, .jitter = 10000, .cpu_max = 500000, .steps = 400, .n_per = 3,
                    .methods_buf = "auto,tree"};
    int rc = parse_options(argc, argv, &o);
    if (rc >= 0) return rc;
    cpu_threads = (int)o.threads;
    mixed_run m = {.neuron = -1.0, .arbor = -1.0};
    const char *items[MAX_LIST];
    m.n_methods = cli_split_list(o.methods_buf, items, MAX_LIST);
    for (int k = 0; k < m.n_methods; ++k)
        if (ns_hines_method_from_name(items[k], &m.methods[k]) != NS_OK ||
            (m.methods[k] != NS_HINES_AUTO && m.methods[k] != NS_HINES_TREE && m.methods[k] != NS_HINES_ONCHIP))
            return cli_usage_error("bench sim --mixed", "--gpu-methods: '%s' is not a GPU loop", items[k]);
    if (ns_cuda_device_count(&m.gpu) != NS_OK || m.gpu == 0) {
        fprintf(stderr, "neurosolve bench sim --mixed: no usable GPU: CPU rows only\n");
        m.gpu = 0;
    }
    char **files = NULL;
    int n_files = 0;
    if (cli_expand_path(cli_morphology_dir(), &files, &n_files)) return 1;
    load_bundled(&o, &m, files, n_files);
    run_baselines(&o, &m);
    printf("%-14s %6s %8s %10s %-5s %-12s %8s %10s %12s %12s %9s %9s %9s %7s %7s %8s %8s\n", "population", "shapes",
           "cells", "comps", "be", "method", "setup_s", "ms/step", "cell-steps/s", "comp-steps/s", "vs CPU",
           "vs NEURON", "vs Arbor", "vs ref", "B/comp", "GB/s", "bw/copy");
    rc = run_populations(&o, &m);
    if (o.jitter > 0 && !rc && m.n > 0 && m.gpu) rc = run_jitter(&o, &m);
    if (!rc && o.csv) rc = write_csv(&o, &m);
    free(m.rows);
    free(m.list);
    for (int k = 0; k < m.n; ++k) ns_cell_destroy(m.cells[k]), ns_morph_destroy(m.morphs[k]);
    for (int k = 0; k < n_files; ++k) free(files[k]);
    free(files);
    return rc;
}
