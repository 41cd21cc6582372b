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

int bench_sim_mixed(int argc, char **argv) {
    long long per[MAX_LIST] = {5, 20, 200}, jitter = 10000, cpu_max = 500000, steps = 400, nthreads = 0,
              threads = 0;
    int n_per = 3, with_arbor = 0;
    const char *csv = NULL;
    char methods_buf[128] = "auto,tree";
    for (int i = 1; i < argc; ++i) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = 1;
        if (strcmp(o, "--mixed") == 0) continue;
        if (strcmp(o, "--help") == 0) { help(); return 0; }
        else if (strcmp(o, "--per") == 0) ok = cli_parse_long_list("bench sim --mixed", o, v, 1, 100000, per, MAX_LIST, &n_per), ++i;
        else if (strcmp(o, "--jitter") == 0) ok = cli_parse_long("bench sim --mixed", o, v, 0, 10000000, &jitter), ++i;
        else if (strcmp(o, "--cpu-max") == 0) ok = cli_parse_long("bench sim --mixed", o, v, 0, 1LL << 40, &cpu_max), ++i;
        else if (strcmp(o, "--steps") == 0) ok = cli_parse_long("bench sim --mixed", o, v, 1, 10000000, &steps), ++i;
        else if (strcmp(o, "--neuron-threads") == 0) ok = cli_parse_long("bench sim --mixed", o, v, 1, 1024, &nthreads), ++i;
        else if (strcmp(o, "--threads") == 0) ok = cli_parse_long("bench sim --mixed", o, v, 1, 4096, &threads), ++i;
        else if (strcmp(o, "--arbor") == 0) with_arbor = 1;
        else if (strcmp(o, "--gpu-methods") == 0 && v) snprintf(methods_buf, sizeof methods_buf, "%s", v), ++i;
        else if (strcmp(o, "--csv") == 0 && v) csv = v, ++i;
        else return cli_usage_error("bench sim --mixed", "unknown option or missing value '%s'", o);
        if (!ok) return 2;
    }
    cpu_threads = (int)threads;
    const char *items[MAX_LIST];
    const int n_methods = cli_split_list(methods_buf, items, MAX_LIST);
    ns_hines_method methods[MAX_LIST];
    for (int k = 0; k < n_methods; ++k)
        if (ns_hines_method_from_name(items[k], &methods[k]) != NS_OK ||
            (methods[k] != NS_HINES_AUTO && methods[k] != NS_HINES_TREE && methods[k] != NS_HINES_ONCHIP))
            return cli_usage_error("bench sim --mixed", "--gpu-methods: '%s' is not a GPU loop", items[k]);
    int gpu = 0;
    if (ns_cuda_device_count(&gpu) != NS_OK || gpu == 0) {
        fprintf(stderr, "neurosolve bench sim --mixed: no usable GPU: CPU rows only\n");
        gpu = 0;
    }
    /* the bundled morphologies that read with their own radii */
    char **files = NULL;
    int n_files = 0;
    if (cli_expand_path(cli_morphology_dir(), &files, &n_files)) return 1;
    ns_cell_t *cells[256];
    ns_morph_t *morphs[256];
    char *list = calloc((size_t)n_files, 1100);
    int n = 0, rc = 0;
    char *accepted = NULL; /* with --arbor: the files Arbor's loader accepts */
    if (with_arbor && (accepted = bench_sim_arbor_accepts(files, n_files)) == NULL) {
        fprintf(stderr, "neurosolve bench sim --mixed: bench/arbor_sim_bench.py --accepts failed (pip install arbor)\n");
        with_arbor = 0;
    }
    for (int k = 0; k < n_files && n < 256; ++k) {
        if (accepted && !bench_sim_listed(accepted, files[k])) continue;
        ns_morph_t *m = NULL;
        if (ns_swc_read(files[k], NULL, &m) == NS_OK && ns_discretize(m, NULL, &cells[n]) == NS_OK) {
            if (list) {
                if (n) strcat(list, ",");
                strcat(list, files[k]);
            }
            morphs[n++] = m;
        } else {
            ns_morph_destroy(m);
        }
    }
    long long total = 0;
    for (int k = 0; k < n; ++k) total += ns_tree_size(ns_cell_tree(cells[k]));
    int ref = 0;
    const double mean = n ? (double)total / n : 0.0;
    for (int k = 1; k < n; ++k)
        if (fabs(ns_tree_size(ns_cell_tree(cells[k])) - mean) < fabs(ns_tree_size(ns_cell_tree(cells[ref])) - mean))
            ref = k;
    printf("bundled: %d morphologies, %lld compartments per set; reference shape %d compartments; %lld timed steps\n",
           n, total, (int)ns_tree_size(ns_cell_tree(cells[ref])), steps);
    double neuron = -1.0;
    long long neuron_cells = 0;
    if (nthreads > 0 && list) {
        long long segments = 0;
        neuron = bench_sim_baseline("neuron", list, 5, (int)steps, (int)nthreads, &neuron_cells, &segments);
        if (neuron < 0) fprintf(stderr, "neurosolve bench sim --mixed: the NEURON baseline failed (pip install neuron)\n");
        else printf("NEURON, %lld threads, bundled x5 (%lld cells Import3d read): %.4g cell-steps/s\n", nthreads,
                    neuron_cells, neuron);
    }
    double arbor = -1.0;
    if (with_arbor && list) {
        long long arbor_cells = 0, cvs = 0;
        const int at = threads > 0 ? (int)threads : 1;
        arbor = bench_sim_baseline("arbor", list, 5, (int)steps, at, &arbor_cells, &cvs);
        if (arbor < 0) fprintf(stderr, "neurosolve bench sim --mixed: the Arbor baseline failed (pip install arbor)\n");
        else printf("Arbor, %d threads, bundled x5 (%lld cells, %lld CVs): %.4g cell-steps/s\n", at, arbor_cells, cvs,
                    arbor);
    }
    free(accepted);
    printf("%-14s %6s %8s %10s %-5s %-12s %8s %10s %12s %12s %9s %9s %9s %7s %7s %8s %8s\n", "population", "shapes",
           "cells", "comps", "be", "method", "setup_s", "ms/step", "cell-steps/s", "comp-steps/s", "vs CPU",
           "vs NEURON", "vs Arbor", "vs ref", "B/comp", "GB/s", "bw/copy");
    mrow *rows = NULL;
    int nr = 0, cap = 0;
    for (int q = 0; q < n_per && !rc && n > 0; ++q) {
        const long long N = per[q] * n;
        char pop[32];
        snprintf(pop, sizeof pop, "bundled x%lld", per[q]);
        double cpu_rate = -1.0, ref_rate = -1.0;
        /* the one-shape reference of equal total size (GPU, auto) */
        const long long ref_cells = (long long)((double)N * mean / ns_tree_size(ns_cell_tree(cells[ref])) + 0.5);
        if (gpu) {
            mrow *r = cli_append_zeroed(&rows, &nr, &cap, sizeof *rows);
            if (!r) { rc = cli_error("out of memory"); break; }
            snprintf(r->pop, sizeof r->pop, "ref x%lld", per[q]);
            r->shapes = 1;
            if ((rc = time_pop(1, &cells[ref], ref_cells, NULL, NS_BACKEND_CUDA, NS_HINES_AUTO, (int)steps, r))) break;
            ref_rate = r->comp_steps;
            print_row(r);
        }
        for (int v = -1; v < n_methods && !rc; ++v) {
            const int cpu = v < 0;
            if (cpu && total * per[q] > cpu_max) continue;
            if (!cpu && !gpu) break;
            mrow *r = cli_append_zeroed(&rows, &nr, &cap, sizeof *rows);
            if (!r) { rc = cli_error("out of memory"); break; }
            snprintf(r->pop, sizeof r->pop, "%s", pop);
            r->shapes = n;
            if ((rc = time_pop(n, cells, N, NULL, cpu ? NS_BACKEND_CPU : NS_BACKEND_CUDA,
                               cpu ? NS_HINES_OPENMP : methods[v], (int)steps, r)))
                break;
            if (cpu) cpu_rate = r->cell_steps;
            else if (cpu_rate > 0) r->vs_cpu = r->cell_steps / cpu_rate;
            if (neuron > 0 && per[q] == 5) r->vs_neuron = r->cell_steps / neuron;
            if (arbor > 0 && per[q] == 5) r->vs_arbor = r->cell_steps / arbor;
            if (!cpu && ref_rate > 0) r->vs_ref = r->comp_steps / ref_rate;
            print_row(r);
        }
    }
    /* every cell its own shape */
    if (jitter > 0 && !rc && n > 0 && gpu) {
        int small[256], ns = 0;
        for (int k = 0; k < n; ++k)
            if (ns_tree_size(ns_cell_tree(cells[k])) <= 10000) small[ns++] = k;
        ns_cell_t **jc = calloc((size_t)jitter, sizeof *jc);
        int32_t *js = malloc((size_t)jitter * sizeof *js);
        if (!jc || !js) rc = cli_error("out of memory");
        uint64_t x = 0x2545F4914F6CDD1DULL;
        for (long long c = 0; c < jitter && !rc; ++c) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            ns_discretize_options d;
            ns_discretize_options_init(&d);
            d.d_lambda = 0.05 + 0.15 * (double)(x >> 11) / 9007199254740992.0;
            if (ns_discretize(morphs[small[c % ns]], &d, &jc[c]) != NS_OK)
                rc = cli_status_error("jitter: discretising", NS_ERR_INVALID_ARGUMENT);
            js[c] = (int32_t)c;
        }
        for (int v = 0; v < n_methods && !rc; ++v) {
            /* one kernel per shape for 10,000 shapes is no contender (and
             * its set-up alone plans 10,000 onchip schedules): not timed */
            if (methods[v] == NS_HINES_ONCHIP) continue;
            mrow *r = cli_append_zeroed(&rows, &nr, &cap, sizeof *rows);
            if (!r) { rc = cli_error("out of memory"); break; }
            snprintf(r->pop, sizeof r->pop, "jitter");
            r->shapes = (int)jitter;
            if ((rc = time_pop((int)jitter, jc, jitter, js, NS_BACKEND_CUDA, methods[v], (int)steps, r))) break;
            print_row(r);
        }
        for (long long c = 0; jc && c < jitter; ++c) ns_cell_destroy(jc[c]);
        free(jc), free(js);
    }
    if (!rc && csv) {
        FILE *f = cli_make_parent_dir(csv) ? NULL : fopen(csv, "w");
        if (!f) rc = cli_error("%s: cannot write", csv);
        else {
            fprintf(f, "population,shapes,cells,compartments,backend,method,setup_s,ms_per_step,cell_steps_per_s,"
                       "compartment_steps_per_s,vs_cpu,vs_neuron,vs_ref,neuron_threads,neuron_cell_steps_per_s,"
                       "vs_arbor,arbor_cell_steps_per_s,threads,bytes_per_compartment_step,gbs,copy_gbs\n");
            for (int k = 0; k < nr; ++k) {
                const mrow *r = &rows[k];
                fprintf(f, "\"%s\",%d,%lld,%lld,%s,%s,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%lld,%.6g,%.6g,%.6g,%lld,%.6g,%.6g,%.6g\n",
                        r->pop, r->shapes, r->cells, r->comps, r->backend, r->method, r->setup_s, r->ms_per_step,
                        r->cell_steps, r->comp_steps, r->vs_cpu, r->vs_neuron, r->vs_ref, nthreads, neuron,
                        r->vs_arbor, arbor, threads, r->bytes, r->gbs, r->copy_gbs);
            }
            fclose(f);
        }
    }
    free(rows);
    free(list);
    for (int k = 0; k < n; ++k) ns_cell_destroy(cells[k]), ns_morph_destroy(morphs[k]);
    for (int k = 0; k < n_files; ++k) free(files[k]);
    free(files);
    return rc;
}
