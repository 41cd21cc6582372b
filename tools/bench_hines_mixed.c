/* neurosolve bench hines --mixed: batches of different shapes (issue 5).
 * Workloads:
 *   a  every bundled morphology, replicated to 1,000 / 10,000 / 100,000 cells,
 *      plus "a-ref": one bundled shape of about the mean size on a batch of
 *      the same total size (the same-shape ceiling the target compares to)
 *   b  the journal's binary-tree neurons (512 compartments, 2/3/4 levels),
 *      256 to 256,000 cells (its Fig. 14)
 *   c  Arbor-style random trees, low/medium/high branching, 10 to 100,000
 *      cells, drawn from a pool of min(cells, 1024) different trees
 *   d  ca1_c91662 discretised to ~1,400 compartments (--nseg length:13 gives
 *      1,468) at 500, 1,000, 1,500 and 3,000 cells
 *   e  10,000 cells of 10,000 different Arbor-style random trees (medium
 *      branching): every cell its own shape
 *   f  the largest bundled cell (38,580 compartments, 613 branch levels) alone
 * Every row is checked against the sequential CPU solve of the same run
 * (max relative error per cell); speedups over sequential and over one
 * thread per cell (the interleaved row of the same batch). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "shapes.h"

#define FLOOR_BYTES 40.0 /* read a, b, d, rhs once, write x once [bytes/compartment] */
#define MAX_METHODS 8

static void help(void) {
    printf("usage: neurosolve bench hines --mixed [options]\n"
           "  --workloads a,b,c,d,e,f  which workloads (default all; see the source's header)\n"
           "  --quick                  a small grid (smoke test)\n"
           "  --methods M,...          GPU methods (default interleaved,flat,fine-grained,\n"
           "                           branch-level,tree; onchip is added for one-shape batches)\n"
           "  --repeats N              timed GPU runs per row, median (default 10)\n"
           "  --cpu-repeats N          timed sequential/OpenMP runs, median (default 5)\n"
           "  --fine-threads T         threads per block of fine-grained (default: the library's)\n"
           "  --ca1-length L           [um] fixed segment length for workload d (default 13)\n"
           "  --seed S                 random seed (default 1)\n"
           "  --csv FILE               write every row\n"
           "  --json                   one JSON document on stdout instead of the table\n"
           "environment: NEUROSOLVE_MIXED_PLAN=reroot,split|reroot|split|none and NEUROSOLVE_FINE_SHARED=0|ab set the\n"
           "fine-grained/branch-level planning passes and fine-grained's shared memory (docs/methods.md)\n");
}

typedef struct mrow {
    char workload[8], label[48], method[32];
    long long cells, comps;
    int shapes;
    double ms, vs_seq, vs_cell, gbs, copy_gbs, ratio, layout_ms, gcomps, error;
} mrow;

typedef CLI_ARRAY(mrow) mrows;

static mrow *add_row(mrows *r) {
    mrow *x = CLI_APPEND(r);
    if (x) x->ratio = x->layout_ms = x->vs_cell = -1.0;
    return x;
}

typedef struct {
    int repeats, cpu_repeats, gpu, as_json, fine_threads;
    const char *methods[MAX_METHODS];
    int n_methods;
    uint64_t seed;
} bench_cfg;

/* Time one method (median of repeats) and check it; 0 on success. */
static ns_status run_method(const ns_batch_t *batch, ns_hines_method m, int repeats, int fine_threads,
                            const double *a, const double *b, const double *d0, const double *r0,
                            const double *xref, double *work, double *ms, double *err,
                            double *layout_ms) {
    const int64_t n = ns_batch_compartments(batch);
    const size_t bytes = (size_t)n * sizeof(double);
    double *d = work, *x = work + n;
    double *times = malloc((size_t)repeats * sizeof *times);
    if (!times) return NS_ERR_OUT_OF_MEMORY;
    memcpy(d, d0, bytes);
    memcpy(x, r0, bytes);
    ns_solve_options o;
    ns_solve_options_init(&o);
    cli_solve_env(&o);
    o.method = m;
    if (m == NS_HINES_FINE_GRAINED) o.block_size = fine_threads; /* 0: the default */
    ns_hines_solver_t *s = NULL;
    ns_status st = ns_hines_solver_create(batch, &o, &s);
    if (st == NS_OK) st = ns_hines_solver_benchmark(s, a, b, d, x, repeats, times);
    if (st == NS_OK) {
        ns_solve_timing t;
        ns_hines_solver_timing(s, &t);
        *layout_ms = t.layout_ms;
        *ms = cli_median(times, repeats);
        if (xref) *err = cli_batch_error(batch, x, xref);
        else memcpy(work + 2 * n, x, bytes); /* the caller's reference */
    }
    ns_hines_solver_destroy(s);
    free(times);
    return st;
}

/* A --methods item: a method name. 0, or 2 after printing the usage error. */
static int method_parse(const char *item, ns_hines_method *m) {
    if (ns_hines_method_from_name(item, m) != NS_OK)
        return cli_usage_error("bench hines --mixed", "%s", ns_last_error());
    return 0;
}

static int is_cell_method(const char *name) {
    return strcmp(name, "interleaved") == 0;
}

/* All rows of one batch. Returns 0, or 1 after printing an error. */
static int bench_batch(const bench_cfg *cfg, const char *workload, const char *label,
                       const ns_batch_t *batch, mrows *out) {
    const int64_t n = ns_batch_compartments(batch);
    const size_t bytes = (size_t)n * sizeof(double);
    double *mem = malloc(8 * bytes);
    if (!mem) return cli_error("out of memory (%zu bytes)", 8 * bytes);
    double *a = mem, *b = a + n, *d0 = b + n, *r0 = d0 + n, *work = r0 + n, *xref = work + 2 * n;
    ns_status st = ns_batch_random_values(batch, cfg->seed + (uint64_t)n, a, b, d0, r0);
    const char *names[MAX_METHODS + 3];
    int nm = 0;
    names[nm++] = "sequential";
    names[nm++] = "openmp";
    for (int k = 0; cfg->gpu && k < cfg->n_methods; ++k) names[nm++] = cfg->methods[k];
    if (cfg->gpu && ns_batch_shapes(batch) == 1) names[nm++] = "onchip";
    double copy_bw = -1.0; /* a device-to-device copy of the batch's 40 bytes per compartment */
    if (cfg->gpu && ns_cuda_copy_bandwidth(0, (size_t)(FLOOR_BYTES * (double)n), 10, &copy_bw) != NS_OK)
        copy_bw = -1.0;
    const int first = out->n;
    double cell_ms = -1.0;
    int rc = 0;
    for (int k = 0; k < nm && st == NS_OK && !rc; ++k) {
        ns_hines_method m;
        if ((rc = method_parse(names[k], &m)) != 0) break;
        const int cpu = ns_hines_method_backend(m) == NS_BACKEND_CPU;
        mrow *r = add_row(out);
        if (!r) { rc = cli_error("out of memory"); break; }
        snprintf(r->workload, sizeof r->workload, "%s", workload);
        snprintf(r->label, sizeof r->label, "%s", label);
        snprintf(r->method, sizeof r->method, "%s", names[k]);
        r->cells = ns_batch_cells(batch);
        r->comps = n;
        r->shapes = ns_batch_shapes(batch);
        ns_status vs = run_method(batch, m, cpu ? cfg->cpu_repeats : cfg->repeats, cfg->fine_threads, a, b, d0, r0,
                                  k == 0 ? NULL : xref, work, &r->ms, &r->error, &r->layout_ms);
        if (k == 0 && vs == NS_OK) memcpy(xref, work + 2 * n, bytes), r->error = 0.0;
        if (vs != NS_OK) {
            if (k == 0) st = vs;
            fprintf(stderr, "neurosolve bench hines --mixed: %s on %s x %lld: %s: %s\n", r->method,
                    label, r->cells, ns_status_string(vs), ns_last_error());
            out->n--;
            continue;
        }
        if (cpu) r->layout_ms = -1.0;
        r->gbs = FLOOR_BYTES * (double)n * 1e-9 / (r->ms * 1e-3);
        r->gcomps = (double)n * 1e-9 / (r->ms * 1e-3);
        if (!cpu && copy_bw > 0) r->copy_gbs = copy_bw, r->ratio = r->gbs / copy_bw;
        if (is_cell_method(r->method)) cell_ms = r->ms;
    }
    if (st != NS_OK && !rc) rc = cli_status_error("sequential baseline", st);
    for (int k = first; k < out->n; ++k) {
        mrow *r = &out->v[k];
        r->vs_seq = out->v[first].ms / r->ms;
        if (cell_ms > 0) r->vs_cell = cell_ms / r->ms;
        if (!cfg->as_json) {
            printf("%-5s %-22.22s %8lld %10lld %-13s %9.3f %8.1fx ", r->workload, r->label, r->cells,
                   r->comps, r->method, r->ms, r->vs_seq);
            if (r->vs_cell > 0) printf("%7.2fx ", r->vs_cell); else printf("%8s ", "-");
            printf("%8.1f ", r->gbs);
            if (r->ratio >= 0) printf("%6.3f ", r->ratio); else printf("%6s ", "-");
            if (r->layout_ms >= 0) printf("%8.3f ", r->layout_ms); else printf("%8s ", "-");
            printf("%8.3f %9.1e\n", r->gcomps, r->error);
            fflush(stdout);
        }
    }
    free(mem);
    return rc;
}

static int bench_shapes(const bench_cfg *cfg, const char *workload, const char *label, int n_shapes,
                        const ns_tree_t *const *shapes, long long cells, mrows *out) {
    ns_batch_t *batch = NULL;
    ns_status st = ns_batch_create(n_shapes, shapes, cells, NULL, &batch);
    if (st != NS_OK) return cli_status_error("batch", st);
    int rc = bench_batch(cfg, workload, label, batch, out);
    ns_batch_destroy(batch);
    return rc;
}

static void write_csv(FILE *f, const mrows *rows, const char *device) {
    fprintf(f, "workload,label,shapes,cells,compartments,method,ms,speedup_seq,speedup_cell,gbs,"
               "bw_ratio,layout_ms,gcomp_s,max_rel_error,device,copy_gbs\n");
    for (int k = 0; k < rows->n; ++k) {
        const mrow *r = &rows->v[k];
        fprintf(f, "%s,\"%s\",%d,%lld,%lld,%s,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.3e,\"%s\",%.6g\n",
                r->workload, r->label, r->shapes, r->cells, r->comps, r->method, r->ms, r->vs_seq,
                r->vs_cell, r->gbs, r->ratio, r->layout_ms, r->gcomps, r->error, device, r->copy_gbs);
    }
}

static void write_json(const mrows *rows, const char *device, const bench_cfg *cfg) {
    cli_json j;
    json_begin(&j, stdout);
    json_string(&j, "device", device);
    json_double(&j, "bytes_per_compartment", FLOOR_BYTES);
    json_int(&j, "repeats", cfg->repeats);
    json_array_begin(&j, "rows");
    for (int k = 0; k < rows->n; ++k) {
        const mrow *r = &rows->v[k];
        json_object_begin(&j, NULL);
        json_string(&j, "workload", r->workload);
        json_string(&j, "label", r->label);
        json_int(&j, "shapes", r->shapes);
        json_int(&j, "cells", r->cells);
        json_int(&j, "compartments", r->comps);
        json_string(&j, "method", r->method);
        json_double(&j, "ms", r->ms);
        json_double(&j, "speedup_seq", r->vs_seq);
        if (r->vs_cell > 0) json_double(&j, "speedup_cell", r->vs_cell);
        bench_json_bandwidth(&j, r->gbs, r->copy_gbs, r->ratio);
        if (r->layout_ms >= 0) json_double(&j, "layout_ms", r->layout_ms);
        json_double(&j, "gcomp_s", r->gcomps);
        json_double(&j, "max_rel_error", r->error);
        json_object_end(&j);
    }
    json_array_end(&j);
    json_end(&j);
}

/* The fastest GPU row (not cpu, not the per-cell baseline) of a group. */
static const mrow *best_gpu(const mrows *rows, const char *workload, const char *label, long long cells) {
    const mrow *best = NULL;
    for (int k = 0; k < rows->n; ++k) {
        const mrow *r = &rows->v[k];
        if (strcmp(r->workload, workload) || strcmp(r->label, label) || r->cells != cells) continue;
        if (r->ratio < 0) continue; /* CPU */
        if (!best || r->ms < best->ms) best = r;
    }
    return best;
}

static void print_targets(const mrows *rows) {
    printf("\ntargets (issues 5, 14): best GPU row per batch\n");
    double worst_err = 0.0;
    for (int k = 0; k < rows->n; ++k)
        if (rows->v[k].error > worst_err) worst_err = rows->v[k].error;
    for (int k = 0; k < rows->n; ++k) {
        const mrow *r = &rows->v[k];
        if (strcmp(r->method, "sequential") != 0) continue;
        const mrow *b = best_gpu(rows, r->workload, r->label, r->cells);
        if (!b) continue;
        printf("  %-5s %-22.22s %8lld cells: best %-13s %8.3f ms  %6.2fx over one thread per cell  %7.3f Gcomp/s\n",
               r->workload, r->label, r->cells, b->method, b->ms, b->vs_cell, b->gcomps);
    }
    /* workload a against its same-shape reference of equal size (issue 14: >= 0.7) */
    for (int k = 0; k < rows->n; ++k) {
        const mrow *r = &rows->v[k];
        if (strcmp(r->workload, "a") || strcmp(r->method, "sequential")) continue;
        const mrow *b = best_gpu(rows, "a", r->label, r->cells);
        for (int q = k + 1; b && q < rows->n; ++q) {
            const mrow *f = &rows->v[q];
            if (strcmp(f->workload, "a-ref") || strcmp(f->method, "sequential")) continue;
            const mrow *br = best_gpu(rows, "a-ref", f->label, f->cells);
            if (br)
                printf("  a %8lld cells: mix %s %.3f Gcomp/s / one shape %s %.3f Gcomp/s = %.2f\n", r->cells,
                       b->method, b->gcomps, br->method, br->gcomps, b->gcomps / br->gcomps);
            break;
        }
    }
    printf("  largest max relative error over all rows: %.1e (target <= 1e-12)\n", worst_err);
}

/* The command line of a run beside the configuration. */
typedef struct mixed_opts {
    int quick;
    double ca1_length;
    const char *csv;
    char workloads[64], methods_buf[256];
} mixed_opts;

/* The command line into cfg and o, the methods checked; -1 to go on, else the
 * exit status (printed; 0 after --help). */
static int parse_options(int argc, char **argv, bench_cfg *cfg, mixed_opts *o) {
    long long v = 0;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = 1;
        if (strcmp(a, "--mixed") == 0) continue;
        if (strcmp(a, "--help") == 0) { help(); return 0; }
        else if (strcmp(a, "--quick") == 0) o->quick = 1;
        else if (strcmp(a, "--json") == 0) cfg->as_json = 1;
        else if (strcmp(a, "--workloads") == 0 && val) snprintf(o->workloads, sizeof o->workloads, "%s", val), ++i;
        else if (strcmp(a, "--methods") == 0 && val) snprintf(o->methods_buf, sizeof o->methods_buf, "%s", val), ++i;
        else if (strcmp(a, "--csv") == 0 && val) o->csv = val, ++i;
        else if (strcmp(a, "--repeats") == 0) ok = cli_parse_long("bench hines --mixed", a, val, 1, 100000, &v), cfg->repeats = (int)v, ++i;
        else if (strcmp(a, "--cpu-repeats") == 0) ok = cli_parse_long("bench hines --mixed", a, val, 1, 100000, &v), cfg->cpu_repeats = (int)v, ++i;
        else if (strcmp(a, "--seed") == 0) ok = cli_parse_long("bench hines --mixed", a, val, 0, 1LL << 62, &v), cfg->seed = (uint64_t)v, ++i;
        else if (strcmp(a, "--fine-threads") == 0) ok = cli_parse_long("bench hines --mixed", a, val, 1, 1024, &v), cfg->fine_threads = (int)v, ++i;
        else if (strcmp(a, "--ca1-length") == 0) ok = cli_parse_double("bench hines --mixed", a, val, 1e-3, 1e6, &o->ca1_length), ++i;
        else return cli_usage_error("bench hines --mixed", "unknown option or missing value '%s'", a);
        if (!ok) return 2;
    }
    cfg->n_methods = cli_split_list(o->methods_buf, cfg->methods, MAX_METHODS);
    for (int k = 0; k < cfg->n_methods; ++k) {
        ns_hines_method m;
        if (method_parse(cfg->methods[k], &m)) return 2;
    }
    return -1;
}

/* count random trees of a preset (the seeds seed0, seed0 + 1, ...) into a new
 * array *pool (pool_free frees it, also after a failure); 0 or 1 (printed). */
static int random_pool(const char *preset, uint64_t seed0, long long count, ns_tree_t ***pool) {
    ns_random_tree_params rp;
    ns_status st = ns_random_tree_preset(preset, &rp);
    if (st != NS_OK) return cli_status_error("random tree preset", st);
    *pool = calloc((size_t)count, sizeof **pool);
    if (!*pool) return cli_error("out of memory");
    for (long long k = 0; k < count && st == NS_OK; ++k)
        st = ns_generate_random_tree(&rp, seed0 + (uint64_t)k, &(*pool)[k]);
    return st != NS_OK ? cli_status_error("random tree", st) : 0;
}

static void pool_free(ns_tree_t **pool, long long count) {
    for (long long k = 0; pool && k < count; ++k) ns_tree_destroy(pool[k]);
    free(pool);
}

/* Workload A: the bundled mix, and the same-shape reference of equal total size. */
static int workload_a(const bench_cfg *cfg, const mixed_opts *o, const cli_morph_options *mo, mrows *rows) {
    int rc = 0;
    cli_shape_set set = {0};
    rc = cli_shapes_add(&set, "bundled", mo, cfg->seed);
    const ns_tree_t *trees[256];
    int nt = 0;
    long long total = 0;
    for (int k = 0; !rc && k < set.count && nt < 256; ++k) {
        trees[nt++] = set.items[k].tree;
        total += ns_tree_size(set.items[k].tree);
    }
    static const long long full[] = {1000, 10000, 100000}, small[] = {1000};
    const long long *cells = o->quick ? small : full;
    const int nc = o->quick ? 1 : 3;
    /* The same-shape reference: the bundled shape nearest the mean size. */
    int ref = 0;
    const double mean = nt ? (double)total / nt : 0.0;
    for (int k = 1; k < nt; ++k)
        if (fabs(ns_tree_size(trees[k]) - mean) < fabs(ns_tree_size(trees[ref]) - mean)) ref = k;
    for (int i = 0; i < nc && !rc; ++i) {
        rc = bench_shapes(cfg, "a", "bundled mix", nt, trees, cells[i], rows);
        if (rc || !nt) break;
        /* Equal total size: cells * mean / ref size. */
        const long long ref_cells = (long long)((double)cells[i] * mean / ns_tree_size(trees[ref]) + 0.5);
        char label[48];
        snprintf(label, sizeof label, "ref %.16s", set.items[ref].name);
        rc = bench_shapes(cfg, "a-ref", label, 1, &trees[ref], ref_cells, rows);
    }
    cli_shapes_free(&set);
    return rc;
}

/* Workload B: binary trees of 512 compartments, 2 to 4 levels. */
static int workload_b(const bench_cfg *cfg, const mixed_opts *o, const cli_morph_options *mo, mrows *rows) {
    int rc = 0;
    static const long long full[] = {256, 2560, 25600, 256000}, small[] = {256, 25600};
    const long long *cells = o->quick ? small : full;
    const int nc = o->quick ? 2 : 4;
    for (int levels = 2; levels <= 4 && !rc; ++levels) {
        ns_tree_t *t = NULL;
        ns_status st = ns_generate_binary_tree(512, levels, &t);
        if (st != NS_OK) { rc = cli_status_error("binary tree", st); break; }
        char label[48];
        snprintf(label, sizeof label, "binary 512, %d levels", levels);
        const ns_tree_t *one = t;
        for (int i = 0; i < nc && !rc; ++i) rc = bench_shapes(cfg, "b", label, 1, &one, cells[i], rows);
        ns_tree_destroy(t);
    }
    return rc;
}

/* Workload C: random trees of each preset, up to 1024 shapes. */
static int workload_c(const bench_cfg *cfg, const mixed_opts *o, const cli_morph_options *mo, mrows *rows) {
    int rc = 0;
    static const long long full[] = {10, 100, 1000, 10000, 100000}, small[] = {10, 1000};
    const long long *cells = o->quick ? small : full;
    const int nc = o->quick ? 2 : 5;
    static const char *presets[3] = {"low", "medium", "high"};
    for (int p = 0; p < 3 && !rc; ++p) {
        enum { POOL = 1024 };
        ns_tree_t **pool = NULL;
        rc = random_pool(presets[p], cfg->seed * 7919, POOL, &pool);
        char label[48];
        snprintf(label, sizeof label, "random %s", presets[p]);
        for (int i = 0; i < nc && !rc; ++i) {
            const int shapes = cells[i] < POOL ? (int)cells[i] : POOL;
            rc = bench_shapes(cfg, "c", label, shapes, (const ns_tree_t *const *)pool, cells[i], rows);
        }
        pool_free(pool, POOL);
    }
    return rc;
}

/* Workload D: ca1_c91662 on a fixed-length grid (--ca1-length). */
static int workload_d(const bench_cfg *cfg, const mixed_opts *o, const cli_morph_options *mo, mrows *rows) {
    int rc = 0;
    static const long long full[] = {500, 1000, 1500, 3000}, small[] = {500, 3000};
    const long long *cells = o->quick ? small : full;
    const int nc = o->quick ? 2 : 4;
    cli_morph_options dmo = *mo;
    dmo.disc.rule = NS_NSEG_FIXED_LENGTH;
    dmo.disc.max_length = o->ca1_length;
    char path[1024];
    snprintf(path, sizeof path, "%s/ca1_c91662.swc", cli_morphology_dir());
    cli_shape_set set = {0};
    rc = cli_shapes_add(&set, path, &dmo, cfg->seed);
    if (!rc && set.count == 1) {
        char label[48];
        snprintf(label, sizeof label, "ca1_c91662 (%d comps)", (int)ns_tree_size(set.items[0].tree));
        const ns_tree_t *one = set.items[0].tree;
        for (int i = 0; i < nc && !rc; ++i) rc = bench_shapes(cfg, "d", label, 1, &one, cells[i], rows);
    }
    cli_shapes_free(&set);
    return rc;
}

/* Workload E: random medium trees, every cell its own shape. */
static int workload_e(const bench_cfg *cfg, const mixed_opts *o, const cli_morph_options *mo, mrows *rows) {
    int rc = 0;
    const long long cells = o->quick ? 1000 : 10000;
    ns_tree_t **pool = NULL;
    rc = random_pool("medium", cfg->seed * 104729, cells, &pool);
    if (!rc) rc = bench_shapes(cfg, "e", "random medium, all distinct", (int)cells,
                               (const ns_tree_t *const *)pool, cells, rows);
    pool_free(pool, cells);
    return rc;
}

/* Workload F: the largest bundled morphology, one cell. */
static int workload_f(const bench_cfg *cfg, const mixed_opts *o, const cli_morph_options *mo, mrows *rows) {
    int rc = 0;
    cli_shape_set set = {0};
    rc = cli_shapes_add(&set, "bundled", mo, cfg->seed);
    int big = 0;
    for (int k = 1; !rc && k < set.count; ++k)
        if (ns_tree_size(set.items[k].tree) > ns_tree_size(set.items[big].tree)) big = k;
    if (!rc && set.count > 0) {
        char label[48];
        snprintf(label, sizeof label, "largest: %.30s", set.items[big].name);
        const ns_tree_t *one = set.items[big].tree;
        rc = bench_shapes(cfg, "f", label, 1, &one, 1, rows);
    }
    cli_shapes_free(&set);
    return rc;
}

int bench_hines_mixed(int argc, char **argv) {
    bench_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.repeats = 10;
    cfg.cpu_repeats = 5;
    cfg.seed = 1;
    cfg.gpu = 1;
    mixed_opts o = {.ca1_length = 13.0, .workloads = "a,b,c,d,e,f",
                    .methods_buf = "interleaved,flat,fine-grained,branch-level,tree"};
    int rc = parse_options(argc, argv, &cfg, &o);
    if (rc >= 0) return rc;
    char device_name[256] = "none";
    int n_dev = 0;
    if (ns_cuda_device_count(&n_dev) != NS_OK || n_dev == 0) {
        fprintf(stderr, "neurosolve bench hines --mixed: no usable GPU: CPU rows only\n");
        cfg.gpu = 0;
    } else {
        ns_device_info di;
        if (ns_cuda_device_info(0, &di) == NS_OK) snprintf(device_name, sizeof device_name, "%s", di.name);
        if (!cfg.as_json)
            printf("device 0: %s; bw/cp: against a device-to-device copy of each batch's 40 bytes per "
                   "compartment (read + write, median of 10)\n", device_name);
    }
    if (!cfg.as_json) {
        printf("%d GPU runs, %d CPU runs per row (median); speedups over sequential and over one thread per cell (interleaved)\n",
               cfg.repeats, cfg.cpu_repeats);
        printf("%-5s %-22s %8s %10s %-13s %9s %9s %8s %8s %6s %8s %8s %9s\n", "work", "batch", "cells",
               "comps", "method", "ms", "vs seq", "vs cell", "GB/s", "bw/cp", "layout", "Gcomp/s",
               "max_err");
    }
    mrows rows = {0};
    rc = 0;
    cli_morph_options mo;
    cli_morph_options_init(&mo);
    /* One bundled tracing has no diameters: give it 0.5 um so that all 54
     * files take part (the radii do not change the tree). */
    mo.swc.radii = NS_RADIUS_DEFAULT;
    mo.swc.default_radius = 0.5;
    static int (*const workload[6])(const bench_cfg *, const mixed_opts *, const cli_morph_options *, mrows *) = {
        workload_a, workload_b, workload_c, workload_d, workload_e, workload_f};
    for (int w = 0; w < 6 && !rc; ++w)
        if (strchr(o.workloads, 'a' + w)) rc = workload[w](&cfg, &o, &mo, &rows);
    if (!rc && o.csv) {
        ns_output *out = cli_output_open(o.csv);
        FILE *f = ns_output_stream(out);
        if (!f) rc = 1;
        else {
            write_csv(f, &rows, device_name);
            rc = cli_output_commit(out);
        }
    }
    if (!rc && cfg.as_json) write_json(&rows, device_name, &cfg);
    else if (!rc && cfg.gpu) print_targets(&rows);
    free(rows.v);
    return rc;
}
