/* neurosolve bench sim --network: the busyring benchmark of Arbor
 * (arbor/example/busyring) on the CPU loop, against the same population
 * without a network and against NEURON with the same threads on the same
 * network (bench/neuron_network_bench.py), rasters compared in the same run.
 *
 * The network (docs/networks.md, "Benchmark"): N cells of one morphology in
 * rings of R; each cell has S ExpSyn (tau 2 ms, e 0 mV): synapse 0 at
 * soma(0.5), synapse k >= 1 in the middle of section 1 + (k-1) mod
 * (sections - 1); a detector at soma(0.5) (-20 mV); cell i's detector drives
 * synapse 0 of the next cell of its ring (weight W, the minimum delay D);
 * synapse k >= 1 of every cell gets one connection from a random other cell
 * with weight 0 and delay D (1 + (k-1)/S) (event traffic without effect); a
 * train at 1 ms drives synapse 0 of the first cell of every ring. The
 * description is written as a network file (include/neurosolve/network.h)
 * that both neurosolve and the NEURON script read: the random choices are
 * made here, once. */
#define _XOPEN_SOURCE 700 /* mkdtemp, realpath */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_sim.h"
#include "cli.h"
#include "neurosolve/network.h"

#define MAX_LIST 16
#define MAX_REPEATS 25

static void help(void) {
    printf("usage: neurosolve bench sim --network [options]\n"
           "  busyring (Arbor's benchmark): rings of cells of a real morphology, each cell with S\n"
           "  ExpSyn; cell i drives synapse 0 of cell i+1 of its ring; the other S-1 synapses get a\n"
           "  connection of weight 0 from a random cell each; one spike train starts every ring.\n"
           "  The CPU loop with and without the network (the same cells), and with --neuron the\n"
           "  same network in NEURON (bench/neuron_network_bench.py), rasters compared.\n"
           "  --morph FILE.swc      morphology (default data/morphologies/ca1_ko20x-07.swc)\n"
           "  --cells N,...         cell counts (default 1000,4000; 1 to 1,000,000)\n"
           "  --ring R              cells per ring (default 10)\n"
           "  --synapses S          synapses per cell (default 10; 1 to 10,000)\n"
           "  --tstop MS            simulated time (default 100 ms; dt 0.025 ms)\n"
           "  --delay MS            the ring's delay, the minimum delay (default 5 ms)\n"
           "  --weight US           the ring's weight (default 0.05 uS: enough to fire)\n"
           "  --seed N              the random connections' seed (default 1)\n"
           "  --repeats N           runs of each, alternated, medians reported (default 3; 1 to 25)\n"
           "  --threads T           threads of our loop and of NEURON (default: OpenMP's default for\n"
           "                        ours, 1 for NEURON)\n"
           "  --backend cpu|cuda    cpu (default); cuda: the GPU loop with and without the network,\n"
           "                        and the CPU loop (--threads) on the network, rasters compared\n"
           "  --neuron              also NEURON (python3 with neuron importable) on every size\n"
           "  --keep-net DIR        keep the network files written (DIR/busyring_N.net)\n"
           "  --csv FILE  --json\n");
}

typedef struct net_row {
    long long cells, compartments, synapses, connections, steps, spikes;
    double net_s, bare_s, neuron_s, max_diff;
    double cpu_s, cpu_diff; /* --backend cuda: the CPU loop's network run, its raster's largest difference; cpu_s < 0: none */
    long long neuron_segments, neuron_spikes;
    int raster_ok; /* -1: no NEURON run */
    double bytes, gbs, copy_gbs; /* the network run's minimum bytes per compartment-step, over its time; a copy's */
} net_row;

/* SplitMix64 (the random sources of the weight-0 connections) */
static uint64_t next_u64(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Write the busyring network file; 0 or 1 after printing the error. */
static int write_net(const char *path, const char *morph, const ns_cell_t *cell, long long n, long long ring,
                     long long syn, double delay, double weight, uint64_t seed) {
    ns_cell_info ci;
    ns_cell_get_info(cell, &ci);
    FILE *f = fopen(path, "w");
    if (!f) return cli_error("bench sim --network: cannot write %s", path);
    fprintf(f, "# busyring (neurosolve bench sim --network): %lld cells in rings of %lld, %lld ExpSyn per cell\n", n,
            ring, syn);
    fprintf(f, "cells c %lld %s\nmodel: all.insert = hh\n", n, morph);
    fprintf(f, "synapse ring c soma(0.5) ExpSyn tau=2 e=0\n");
    for (long long k = 1; k < syn; ++k) {
        ns_section_info si;
        const int32_t sec = ci.sections > 1 ? (int32_t)(1 + (k - 1) % (ci.sections - 1)) : 0;
        ns_cell_get_section(cell, sec, &si);
        fprintf(f, "synapse bg%lld c swc:%lld(0.5) ExpSyn tau=2 e=0\n", k, (long long)si.first_point_id);
    }
    fprintf(f, "detector spk c soma(0.5) -20\ntrain kick 1\n");
    /* spk[i] -> ring[next of i in its ring] */
    fprintf(f, "connect spk ring[");
    for (long long a = 0; a < n; a += ring) {
        const long long b = a + ring < n ? a + ring : n; /* [a, b) */
        if (b - a > 1) fprintf(f, "%s%lld-%lld,%lld", a ? "," : "", a + 1, b - 1, a);
        else fprintf(f, "%s%lld", a ? "," : "", a);
    }
    fprintf(f, "] %.17g %.17g\n", weight, delay);
    fprintf(f, "connect kick ring[0-%lld:%lld] %.17g %.17g\n", n - 1, ring, weight, delay);
    uint64_t s = seed;
    for (long long k = 1; k < syn && n > 1; ++k) {
        fprintf(f, "connect spk[");
        for (long long c = 0; c < n; ++c) {
            long long src = (long long)(next_u64(&s) % (uint64_t)(n - 1));
            if (src >= c) ++src; /* no self connection */
            fprintf(f, "%s%lld", c ? "," : "", src);
        }
        fprintf(f, "] bg%lld 0 %.17g\n", k, delay * (1.0 + (double)(k - 1) / (double)syn));
    }
    if (ferror(f) | fclose(f)) return cli_error("bench sim --network: cannot write %s", path);
    return 0;
}

/* The time of `steps` steps of a simulation (ns_sim_advance, seconds). */
static int run_steps(ns_sim_t *sim, long long steps, double *seconds) {
    const double t0 = cli_now_s();
    ns_status st = ns_sim_advance(sim, steps);
    *seconds = cli_now_s() - t0;
    return st == NS_OK ? 0 : cli_status_error("bench sim --network", st);
}

/* NEURON on the same file: its raster (source,time rows) in `raster`;
 * wall seconds of the run, or -1. */
static double run_neuron(const char *net_path, const char *raster, double tstop, int threads, long long *segments) {
    char script[4096], tstop_s[64], threads_s[32];
    snprintf(script, sizeof script, "%s/bench/neuron_network_bench.py", NS_SOURCE_DIR);
    snprintf(tstop_s, sizeof tstop_s, "%.17g", tstop);
    snprintf(threads_s, sizeof threads_s, "%d", threads);
    const char *argv[] = {"python3", script, net_path, tstop_s, threads_s, raster, NULL};
    pid_t pid;
    FILE *f = cli_program_output(argv, &pid); /* no shell */
    if (!f) return -1.0;
    char line[8192];
    double wall = -1.0;
    while (fgets(line, sizeof line, f)) {
        const char *w = strstr(line, "\"wall_s\":"), *s = strstr(line, "\"segments\":");
        if (w) wall = atof(w + 9);
        if (s) *segments = atoll(s + 11);
    }
    if (cli_program_close(f, pid) != 0) return -1.0;
    return wall;
}

/* Compare two simulations' rasters source by source (the GPU loop's with the
 * CPU loop's): 1 when every source has the same count and every time is
 * within 0.05 ms; *max_diff the largest difference. */
static int compare_sims(const ns_sim_t *a, const ns_sim_t *b, double *max_diff) {
    *max_diff = 0.0;
    if (ns_sim_sources(a) != ns_sim_sources(b)) return 0;
    int same = 1;
    for (int64_t s = 0; s < ns_sim_sources(a); ++s) {
        int64_t ca = 0, cb = 0;
        const double *x = ns_sim_source_spikes(a, s, &ca), *y = ns_sim_source_spikes(b, s, &cb);
        if (ca != cb) {
            if (same)
                fprintf(stderr, "neurosolve bench sim --network: source %lld: %lld spikes on the GPU, %lld on the CPU\n",
                        (long long)s, (long long)ca, (long long)cb);
            same = 0;
            continue;
        }
        for (int64_t k = 0; k < ca; ++k)
            if (fabs(x[k] - y[k]) > *max_diff) *max_diff = fabs(x[k] - y[k]);
    }
    return same && *max_diff <= 0.05;
}

/* Compare NEURON's raster with ours source by source: 1 when every source
 * has the same count and every time is within 0.05 ms (issue 20). */
static int compare_raster(const char *raster, const ns_sim_t *sim, long long *neuron_spikes, double *max_diff) {
    const int64_t n_src = ns_sim_sources(sim);
    int64_t *count = calloc((size_t)n_src, sizeof *count);
    double **times = calloc((size_t)n_src, sizeof *times);
    int64_t *cap = calloc((size_t)n_src, sizeof *cap);
    FILE *f = fopen(raster, "r");
    int ok = count && times && cap && f;
    char line[256];
    *neuron_spikes = 0;
    *max_diff = 0.0;
    while (ok && fgets(line, sizeof line, f)) {
        char *end;
        const long long s = strtoll(line, &end, 10);
        if (end == line || *end != ',') continue; /* the header */
        const double t = strtod(end + 1, NULL);
        if (s < 0 || s >= n_src) { ok = 0; break; }
        if (count[s] == cap[s]) {
            cap[s] = cap[s] ? 2 * cap[s] : 8;
            double *g = realloc(times[s], (size_t)cap[s] * sizeof *g);
            if (!g) { ok = 0; break; }
            times[s] = g;
        }
        times[s][count[s]++] = t;
        ++*neuron_spikes;
    }
    int same = ok;
    for (int64_t s = 0; s < n_src && ok; ++s) {
        int64_t c = 0;
        const double *ours = ns_sim_source_spikes(sim, s, &c);
        if (c != count[s]) {
            if (same) fprintf(stderr, "neurosolve bench sim --network: source %lld: %lld spikes here, %lld in NEURON\n",
                              (long long)s, (long long)c, (long long)count[s]);
            same = 0;
            continue;
        }
        for (int64_t k = 0; k < c; ++k) {
            const double d = fabs(ours[k] - times[s][k]);
            if (d > *max_diff) *max_diff = d;
        }
    }
    if (!ok) fprintf(stderr, "neurosolve bench sim --network: cannot read NEURON's raster %s\n", raster);
    for (int64_t s = 0; times && s < n_src; ++s) free(times[s]);
    free(times);
    free(count);
    free(cap);
    if (f) fclose(f);
    return ok && same && *max_diff <= 0.05;
}

static int time_size(const char *dir, int keep, const char *morph, const ns_cell_t *cell, long long n, long long ring,
                     long long syn, double tstop, double delay, double weight, uint64_t seed, int threads,
                     int neuron, int repeats, int cuda, net_row *r) {
    char path[4200], raster[4300];
    snprintf(path, sizeof path, "%s/busyring_%lld.net", dir, n);
    if (write_net(path, morph, cell, n, ring, syn, delay, weight, seed)) return 1;
    ns_network_t *net = NULL;
    ns_sim_model_t *model = NULL;
    ns_status st = ns_network_read(path, &net);
    if (st == NS_OK) st = ns_network_model(net, NULL, &model);
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.model = model;
    o.backend = cuda ? NS_BACKEND_CUDA : NS_BACKEND_CPU;
    o.threads = threads;
    o.record_every = 1000000000; /* no recording on the hot path */
    o.check_every = 100;
    const long long steps = (long long)llround(tstop / p.dt);
    ns_sim_t *sim = NULL, *bare = NULL;
    /* the population alone (the same cells and model, no synapses, in the
     * loop the network runs in: the GPU's tree loop, where `auto` would take
     * onchip for the cells alone) and the network, alternated `repeats`
     * times from ns_sim_init: medians */
    if (st == NS_OK) st = ns_sim_create(1, &cell, n, NULL, &p, &o, &sim);
    if (st == NS_OK) st = ns_network_apply(net, sim, &cell);
    if (st == NS_OK) st = ns_sim_init(sim);
    if (st == NS_OK) {
        ns_sim_options ob = o;
        ob.method = ns_sim_method(sim);
        st = ns_sim_create(1, &cell, n, NULL, &p, &ob, &bare);
    }
    int rc = st == NS_OK ? 0 : cli_status_error("bench sim --network", st);
    double net_s[MAX_REPEATS], bare_s[MAX_REPEATS];
    for (int q = 0; q < repeats && !rc; ++q) {
        st = ns_sim_init(bare);
        rc = st == NS_OK ? run_steps(bare, steps, &bare_s[q]) : cli_status_error("bench sim --network", st);
        if (!rc) st = ns_sim_init(sim);
        if (!rc) rc = st == NS_OK ? run_steps(sim, steps, &net_s[q]) : cli_status_error("bench sim --network", st);
    }
    ns_sim_destroy(bare);
    if (!rc) {
        r->net_s = cli_median(net_s, repeats);
        r->bare_s = cli_median(bare_s, repeats);
    }
    /* the GPU loop: the CPU loop on the same network (one run), rasters compared */
    r->cpu_s = -1.0;
    if (!rc && cuda) {
        ns_sim_t *cpu = NULL;
        o.backend = NS_BACKEND_CPU;
        st = ns_sim_create(1, &cell, n, NULL, &p, &o, &cpu);
        if (st == NS_OK) st = ns_network_apply(net, cpu, &cell);
        if (st == NS_OK) st = ns_sim_init(cpu);
        rc = st == NS_OK ? run_steps(cpu, steps, &r->cpu_s) : cli_status_error("bench sim --network", st);
        if (!rc && !compare_sims(sim, cpu, &r->cpu_diff))
            rc = cli_error("bench sim --network: %lld cells: the GPU raster differs from the CPU loop's (largest "
                           "difference %.3g ms)",
                           n, r->cpu_diff);
        ns_sim_destroy(cpu);
    }
    if (!rc) {
        r->cells = n;
        r->compartments = ns_sim_compartments(sim);
        r->synapses = ns_sim_synapses(sim);
        r->connections = ns_sim_connections(sim);
        r->steps = steps;
        const sim_timing t = {.compartments = r->compartments, .ms_per_step = r->net_s * 1e3 / (double)steps,
                              .min_bytes = ns_sim_step_min_bytes(sim)};
        r->bytes = t.min_bytes;
        bench_sim_bandwidth(&t, cuda, &r->gbs, &r->copy_gbs);
        r->spikes = 0;
        for (int64_t s = 0; s < ns_sim_sources(sim); ++s) {
            int64_t c = 0;
            ns_sim_source_spikes(sim, s, &c);
            r->spikes += c;
        }
        r->raster_ok = -1;
        r->neuron_s = -1.0;
        if (neuron) {
            snprintf(raster, sizeof raster, "%s/busyring_%lld_neuron.csv", dir, n);
            r->neuron_s = run_neuron(path, raster, tstop, threads > 0 ? threads : 1, &r->neuron_segments);
            if (r->neuron_s < 0)
                rc = cli_error("bench sim --network: the NEURON baseline failed (python3 with neuron importable: "
                               "pip install neuron)");
            else {
                r->raster_ok = compare_raster(raster, sim, &r->neuron_spikes, &r->max_diff);
                if (!r->raster_ok)
                    rc = cli_error("bench sim --network: %lld cells: the raster differs from NEURON's (%lld spikes "
                                   "here, %lld in NEURON, largest difference %.3g ms)",
                                   n, r->spikes, r->neuron_spikes, r->max_diff);
            }
            if (!keep) unlink(raster);
        }
    }
    ns_sim_destroy(sim);
    ns_sim_model_destroy(model);
    ns_network_destroy(net);
    if (!keep) unlink(path);
    return rc;
}

/* The command line of a run. */
typedef struct net_opts {
    char morph[4096];
    long long cells[MAX_LIST], ring, syn, threads, seed, repeats;
    double tstop, delay, weight;
    int n_cells, neuron, as_json, cuda;
    const char *csv, *keep;
} net_opts;

/* The command line into o; -1 to go on, else the exit status (printed; 0 after --help). */
static int parse_options(int argc, char **argv, net_opts *o) {
    const char *cmd = "bench sim --network";
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = 1;
        if (strcmp(a, "--network") == 0) continue;
        if (strcmp(a, "--help") == 0) { help(); return 0; }
        else if (strcmp(a, "--morph") == 0 && v) snprintf(o->morph, sizeof o->morph, "%s", v), ++i;
        else if (strcmp(a, "--cells") == 0) ok = cli_parse_long_list(cmd, a, v, 1, 1000000, o->cells, MAX_LIST, &o->n_cells), ++i;
        else if (strcmp(a, "--ring") == 0) ok = cli_parse_long(cmd, a, v, 1, 1000000, &o->ring), ++i;
        else if (strcmp(a, "--synapses") == 0) ok = cli_parse_long(cmd, a, v, 1, 10000, &o->syn), ++i;
        else if (strcmp(a, "--threads") == 0) ok = cli_parse_long(cmd, a, v, 1, 4096, &o->threads), ++i;
        else if (strcmp(a, "--repeats") == 0) ok = cli_parse_long(cmd, a, v, 1, MAX_REPEATS, &o->repeats), ++i;
        else if (strcmp(a, "--seed") == 0) ok = cli_parse_long(cmd, a, v, 0, INT64_MAX, &o->seed), ++i;
        else if (strcmp(a, "--tstop") == 0) ok = cli_parse_double(cmd, a, v, 0.025, 1e6, &o->tstop), ++i;
        else if (strcmp(a, "--delay") == 0) ok = cli_parse_double(cmd, a, v, 1e-6, 1e4, &o->delay), ++i;
        else if (strcmp(a, "--weight") == 0) ok = cli_parse_double(cmd, a, v, 0.0, 1e3, &o->weight), ++i;
        else if (strcmp(a, "--backend") == 0 && v) {
            if (strcmp(v, "cuda") == 0) o->cuda = 1;
            else if (strcmp(v, "cpu") == 0) o->cuda = 0;
            else return cli_usage_error(cmd, "--backend takes cpu or cuda, not '%s'", v);
            ++i;
        } else if (strcmp(a, "--neuron") == 0) o->neuron = 1;
        else if (strcmp(a, "--keep-net") == 0 && v) o->keep = v, ++i;
        else if (strcmp(a, "--csv") == 0 && v) o->csv = v, ++i;
        else if (strcmp(a, "--json") == 0) o->as_json = 1;
        else return cli_usage_error(cmd, "unknown option or missing value '%s'", a);
        if (!ok) return 2;
    }
    if (o->neuron && o->threads > 1 && o->delay < 0.05)
        return cli_usage_error(cmd, "--neuron with --threads %lld needs --delay >= 0.05 ms: NEURON's threads refuse a "
                                    "minimum delay below two steps (\"usable mindelay ... less than dt\"); use a longer delay "
                                    "or --threads 1",
                               o->threads);
    for (int k = 0; k < o->n_cells; ++k)
        if (o->cells[k] < o->ring)
            return cli_usage_error(cmd, "--cells %lld is smaller than --ring %lld", o->cells[k], o->ring);
    return -1;
}

/* One row of the table (threads: how the run's threads are named). */
static void print_row(const net_row *r, const char *nthr_s) {
    printf("%8lld %12lld %9lld %11lld %8lld %10.3f %10.3f %9.3f %10.3f ", r->cells, r->compartments, r->synapses,
           r->connections, r->spikes, r->net_s, r->net_s * 1e6 / ((double)r->cells * r->steps), r->bare_s,
           r->net_s / r->bare_s);
    if (r->neuron_s > 0)
        printf("%10.3f %8.2fx %s (%lld, %.1e ms)\n", r->neuron_s, r->neuron_s / r->net_s,
               r->raster_ok ? "same" : "DIFFERS", r->neuron_spikes, r->max_diff);
    else printf("%10s %9s %10s\n", "-", "-", "-");
    printf("%8s the network run: %.1f B per compartment-step (the cells' model), %.1f GB/s", "", r->bytes, r->gbs);
    if (r->copy_gbs > 0) printf(", %.3f of a device-to-device copy of the same bytes", r->gbs / r->copy_gbs);
    printf("\n");
    if (r->cpu_s > 0)
        printf("%8s the GPU loop above; the CPU loop (threads %s) on the network: %.3f s, %.3f us/cell-step, "
               "GPU %.2fx faster, rasters the same (largest difference %.1e ms)\n",
               "", nthr_s, r->cpu_s, r->cpu_s * 1e6 / ((double)r->cells * r->steps), r->cpu_s / r->net_s,
               r->cpu_diff);
    fflush(stdout);
}

/* The rows as CSV (--csv); 0 or 1 (printed). */
static int write_csv(const net_opts *o, const net_row *rows, int n_rows, int nthr) {
    ns_output *out = cli_output_open(o->csv);
    FILE *f = ns_output_stream(out);
    if (!f) return 1;
    fprintf(f, "cells,compartments,synapses,connections,steps,spikes,network_s,us_per_cell_step,bare_s,"
               "net_over_bare,neuron_s,neuron_segments,neuron_spikes,vs_neuron,raster_max_diff_ms,threads,ring,"
               "synapses_per_cell,delay_ms,backend,cpu_network_s,gpu_cpu_raster_max_diff_ms,bytes_per_compartment_step,gbs,"
               "copy_gbs\n");
    for (int k = 0; k < n_rows; ++k) {
        const net_row *r = &rows[k];
        fprintf(f, "%lld,%lld,%lld,%lld,%lld,%lld,%.6g,%.6g,%.6g,%.6g,%.6g,%lld,%lld,%.6g,%.6g,%d,%lld,%lld,%g,%s,%.6g,%.6g,%.6g,%.6g,%.6g\n",
                r->cells, r->compartments, r->synapses, r->connections, r->steps, r->spikes, r->net_s,
                r->net_s * 1e6 / ((double)r->cells * r->steps), r->bare_s, r->net_s / r->bare_s, r->neuron_s,
                r->neuron_segments, r->neuron_spikes, r->neuron_s > 0 ? r->neuron_s / r->net_s : -1.0,
                r->raster_ok == 1 ? r->max_diff : -1.0, nthr, o->ring, o->syn, o->delay, o->cuda ? "cuda" : "cpu",
                r->cpu_s, r->cpu_s > 0 ? r->cpu_diff : -1.0, r->bytes, r->gbs, r->copy_gbs);
    }
    return cli_output_commit(out) ? 1 : 0;
}

/* The rows as one JSON document on stdout (--json). */
static void write_json(const net_opts *o, const net_row *rows, int n_rows, int nthr) {
    cli_json j;
    json_begin(&j, stdout);
    json_int(&j, "threads", nthr);
    json_int(&j, "ring", o->ring);
    json_int(&j, "synapses_per_cell", o->syn);
    json_double(&j, "delay_ms", o->delay);
    json_double(&j, "tstop_ms", o->tstop);
    json_string(&j, "backend", o->cuda ? "cuda" : "cpu");
    json_array_begin(&j, "rows");
    for (int k = 0; k < n_rows; ++k) {
        const net_row *r = &rows[k];
        json_object_begin(&j, NULL);
        json_int(&j, "cells", r->cells);
        json_int(&j, "compartments", r->compartments);
        json_int(&j, "synapses", r->synapses);
        json_int(&j, "connections", r->connections);
        json_int(&j, "steps", r->steps);
        json_int(&j, "spikes", r->spikes);
        json_double(&j, "network_s", r->net_s);
        if (r->cpu_s > 0) {
            json_double(&j, "cpu_network_s", r->cpu_s);
            json_double(&j, "gpu_cpu_raster_max_diff_ms", r->cpu_diff);
        }
        json_double(&j, "us_per_cell_step", r->net_s * 1e6 / ((double)r->cells * r->steps));
        json_double(&j, "bare_s", r->bare_s);
        json_double(&j, "net_over_bare", r->net_s / r->bare_s);
        json_double(&j, "bytes_per_compartment_step", r->bytes);
        json_double(&j, "gbs", r->gbs);
        if (r->copy_gbs > 0) {
            json_double(&j, "copy_gbs", r->copy_gbs);
            json_double(&j, "bw_ratio", r->gbs / r->copy_gbs);
        }
        if (r->neuron_s > 0) {
            json_double(&j, "neuron_s", r->neuron_s);
            json_int(&j, "neuron_segments", r->neuron_segments);
            json_int(&j, "neuron_spikes", r->neuron_spikes);
            json_double(&j, "vs_neuron", r->neuron_s / r->net_s);
            json_double(&j, "raster_max_diff_ms", r->max_diff);
        }
        json_object_end(&j);
    }
    json_array_end(&j);
    json_end(&j);
}

int bench_sim_network(int argc, char **argv) {
    const char *cmd = "bench sim --network";
    net_opts o = {.cells = {1000, 4000}, .ring = 10, .syn = 10, .seed = 1, .repeats = 3, .tstop = 100.0,
                  .delay = 5.0, .weight = 0.05, .n_cells = 2};
    snprintf(o.morph, sizeof o.morph, "%s/ca1_ko20x-07.swc", cli_morphology_dir());
    int rc = parse_options(argc, argv, &o);
    if (rc >= 0) return rc;
    /* the morphology as ns_network_create_sim discretises it: defaults, the parameters' Ra */
    char abs_morph[PATH_MAX];
    if (!realpath(o.morph, abs_morph)) return cli_error("%s: cannot find the morphology %s", cmd, o.morph);
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_discretize_options d;
    ns_discretize_options_init(&d);
    d.Ra = p.Ra;
    ns_morph_t *m = NULL;
    ns_cell_t *cell = NULL;
    ns_status st = ns_swc_read(abs_morph, NULL, &m);
    if (st == NS_OK) st = ns_discretize(m, &d, &cell);
    ns_morph_destroy(m);
    if (st != NS_OK) return cli_status_error(o.morph, st);
    const char *name = strrchr(abs_morph, '/') ? strrchr(abs_morph, '/') + 1 : abs_morph;
    char tmp[4096];
    const char *dir = o.keep;
    if (dir && mkdir(dir, 0777) != 0 && errno != EEXIST) {
        ns_cell_destroy(cell);
        return cli_error("%s: cannot make the folder %s", cmd, dir);
    }
    if (!dir) {
        const char *base = getenv("TMPDIR");
        snprintf(tmp, sizeof tmp, "%s/ns_busyring_XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(tmp)) {
            ns_cell_destroy(cell);
            return cli_error("%s: cannot make a temporary folder %s", cmd, tmp);
        }
        dir = tmp;
    }
    const int nthr = o.threads > 0 ? (int)o.threads : 0;
    char nthr_s[32];
    if (nthr) snprintf(nthr_s, sizeof nthr_s, "%d", nthr);
    else snprintf(nthr_s, sizeof nthr_s, "OpenMP default");
    if (!o.as_json) {
        printf("busyring: %s, rings of %lld, %lld ExpSyn per cell, delay %g ms, weight %g uS, %g ms of 0.025 ms; "
               "threads %s (NEURON %d)\n",
               name, o.ring, o.syn, o.delay, o.weight, o.tstop, nthr_s, nthr ? nthr : 1);
        printf("%8s %12s %9s %11s %8s %10s %10s %9s %10s %10s %9s %10s\n", "cells", "compartments", "synapses",
               "connections", "spikes", "net [s]", "us/cell-st", "bare [s]", "net/bare", "NEURON [s]", "vs NEURON",
               "raster");
    }
    net_row rows[MAX_LIST];
    int n_rows = 0;
    rc = 0;
    for (int k = 0; k < o.n_cells && !rc; ++k) {
        net_row *r = &rows[n_rows];
        memset(r, 0, sizeof *r);
        rc = time_size(dir, o.keep != NULL, abs_morph, cell, o.cells[k], o.ring, o.syn, o.tstop, o.delay, o.weight,
                       (uint64_t)o.seed, nthr, o.neuron, (int)o.repeats, o.cuda, r);
        if (rc && !r->cells) break;
        ++n_rows;
        if (!o.as_json) print_row(r, nthr_s);
    }
    if (!o.keep) rmdir(tmp);
    ns_cell_destroy(cell);
    if (!rc && o.csv && write_csv(&o, rows, n_rows, nthr)) return 1;
    if (!rc && o.as_json) write_json(&o, rows, n_rows, nthr);
    return rc;
}
