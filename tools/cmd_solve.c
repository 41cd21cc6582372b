/* neurosolve solve: a batch of Hines systems from morphologies or
 * generators, random diagonally dominant values (or the passive cable
 * matrix), one method and backend; --check compares with the sequential
 * solve and, for cells of up to --dense-max unknowns, with dense LU. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dense_lu.h"
#include "shapes.h"

static void help(void) {
    printf("usage: neurosolve solve [SHAPE...] [options]\n"
           "Solves a batch of Hines systems; cell c has shape c mod (number of shapes).\n\n"
           "  --cells N            cells in the batch (default 1024)\n"
           "  --method M           auto, sequential, openmp, flat, interleaved, block-interleaved,\n"
           "                       block-shared, onchip, fine-grained, branch-level, tree (default auto)\n"
           "  --backend B          auto, cpu, cuda (default auto)\n"
           "  --block-size BS      cells per group for the block methods\n"
           "  --threads T          CPU threads (default: OpenMP's)\n"
           "  --devices G          GPUs for the one-thread-per-cell methods (default 1)\n"
           "  --values random|cable  random diagonally dominant values (default), or the passive\n"
           "                       cable matrix of each morphology (dt 0.025 ms) with random rhs\n"
           "  --seed S             random seed (default 1)\n"
           "  --check              compare with the sequential solve and with dense LU\n"
           "  --dense-max N        largest cell checked by dense LU (default 2000)\n"
           "  --tolerance T        --check fails (exit 1) above this relative error (default 1e-10)\n"
           "  --json               one JSON document on stdout\n\n%s\n%s",
           cli_shape_spec_help, cli_morph_options_help);
}

typedef struct solve_args {
    double tolerance;
    long long cells, seed, dense_max;
    int check, as_json, cable;
    ns_solve_options opt;
} solve_args;

/* ||x - ref||_inf / ||ref||_inf over one cell's n unknowns. */
static double cell_error(const double *x, const double *ref, int32_t n) {
    double num = 0.0, den = 0.0;
    for (int32_t i = 0; i < n; ++i) {
        double e = fabs(x[i] - ref[i]);
        if (!(e <= num)) num = e; /* NaN propagates as the error */
        if (fabs(ref[i]) > den) den = fabs(ref[i]);
    }
    return num / (den > DBL_MIN ? den : DBL_MIN);
}

static int fill_cable(const cli_shape_set *set, const ns_batch_t *batch, double *a, double *b, double *d) {
    const int64_t *off = ns_batch_cell_offset(batch);
    const int32_t *shape = ns_batch_cell_shape(batch);
    for (int64_t c = 0; c < ns_batch_cells(batch); ++c) {
        const cli_shape *s = &set->items[shape[c]];
        if (!s->cell) return cli_error("--values cable needs morphology files, and '%s' is generated", s->name);
        ns_status st = ns_cell_matrix(s->cell, 1.0, 0.025, NS_FORM_NEURON, a + off[c], b + off[c], d + off[c]);
        if (st != NS_OK) return cli_status_error(s->name, st);
    }
    return 0;
}

/* Bytes the solve allocates up front: per cell its shape and offset (12 B),
 * per compartment a, b, d, rhs (32 B) and with --check the saved d and rhs
 * (16 B more). The solver's own work space comes on top. */
static int check_memory(const cli_shape_set *set, const solve_args *args) {
    double per_round = 0.0; /* compartments of one cell of every shape */
    for (int k = 0; k < set->count; ++k) per_round += ns_tree_size(set->items[k].tree);
    const double cells = (double)args->cells;
    const double compartments = per_round * (cells / set->count);
    const double need = 12.0 * cells + (args->check ? 48.0 : 32.0) * compartments;
    const double have = cli_physical_memory();
    if (have > 0 && need > have)
        return cli_error("solve: %lld cells of about %.3g compartments need about %.1f GB (%.3g compartments x %d "
                         "arrays of doubles), more than the %.1f GB of memory of this machine",
                         args->cells, compartments, need / 1e9, compartments, args->check ? 6 : 4, have / 1e9);
    /* A GPU solve asked for by name holds at least a, b, d, rhs and the
     * offsets on the devices (its layouts come on top): refuse when that
     * alone exceeds their free memory, before the host arrays are filled. */
    const ns_hines_method m = args->opt.method;
    const int gpu = args->opt.backend == NS_BACKEND_CUDA ||
                    (m != NS_HINES_AUTO && m != NS_HINES_SEQUENTIAL && m != NS_HINES_OPENMP);
    int n_dev = 0;
    if (gpu && !cli_mpi_active() && ns_cuda_device_count(&n_dev) == NS_OK && n_dev > 0) {
        if (args->opt.devices > 0 && args->opt.devices < n_dev) n_dev = args->opt.devices;
        double free_bytes = 0.0;
        for (int d = 0; d < n_dev; ++d) {
            ns_device_info di;
            if (ns_cuda_device_info(d, &di) == NS_OK) free_bytes += di.free_memory_gib * 1073741824.0;
        }
        const double need_gpu = 12.0 * cells + 32.0 * compartments;
        if (free_bytes > 0 && need_gpu > free_bytes)
            return cli_error("solve: %lld cells of about %.3g compartments need at least %.1f GB of GPU memory, more "
                             "than the %.1f GB free on %d GPU%s",
                             args->cells, compartments, need_gpu / 1e9, free_bytes / 1e9, n_dev, n_dev == 1 ? "" : "s");
    }
    return 0;
}

/* The command line into args, mo and the shape specs; -1 to go on, else the
 * exit status (printed; 0 after --help). */
static int parse_options(int argc, char **argv, solve_args *args, cli_morph_options *mo, const char **specs,
                         int *n_specs) {
    int rc = 0;
    for (int i = 1; i < argc && !rc; ++i) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long x;
        int m = cli_morph_option("solve", argc, argv, &i, mo);
        if (m < 0) rc = 2;
        else if (m > 0) continue;
        else if (strcmp(o, "--help") == 0) { help(); return 0; }
        else if (strcmp(o, "--cells") == 0) rc = !cli_parse_long("solve", o, v, 1, 1LL << 40, &args->cells) * 2, ++i;
        else if (strcmp(o, "--seed") == 0) rc = !cli_parse_long("solve", o, v, 0, LLONG_MAX, &args->seed) * 2, ++i;
        else if (strcmp(o, "--tolerance") == 0) rc = !cli_parse_double("solve", o, v, 0.0, 1.0, &args->tolerance) * 2, ++i;
        else if (strcmp(o, "--dense-max") == 0) rc = !cli_parse_long("solve", o, v, 0, 20000, &args->dense_max) * 2, ++i;
        else if (strcmp(o, "--block-size") == 0) { rc = !cli_parse_long("solve", o, v, 1, 1 << 20, &x) * 2; args->opt.block_size = (int32_t)x; ++i; }
        else if (strcmp(o, "--threads") == 0) { rc = !cli_parse_long("solve", o, v, 1, 4096, &x) * 2; args->opt.threads = (int32_t)x; ++i; }
        else if (strcmp(o, "--devices") == 0) { rc = !cli_parse_long("solve", o, v, 1, 64, &x) * 2; args->opt.devices = (int32_t)x; ++i; }
        else if (strcmp(o, "--method") == 0) {
            ns_status st = v ? ns_hines_method_from_name(v, &args->opt.method) : NS_ERR_INVALID_ARGUMENT;
            if (st != NS_OK) rc = cli_usage_error("solve", "%s", v ? ns_last_error() : "--method needs a value");
            ++i;
        } else if (strcmp(o, "--backend") == 0) {
            rc = cli_parse_backend("solve", o, v, &args->opt.backend);
            ++i;
        } else if (strcmp(o, "--values") == 0) {
            if (v && strcmp(v, "random") == 0) args->cable = 0;
            else if (v && strcmp(v, "cable") == 0) args->cable = 1;
            else rc = cli_usage_error("solve", "--values takes random or cable");
            ++i;
        } else if (strcmp(o, "--check") == 0) args->check = 1;
        else if (strcmp(o, "--json") == 0) args->as_json = 1;
        else if (o[0] == '-' && o[1] == '-') rc = cli_usage_error("solve", "unknown option '%s'", o);
        else specs[(*n_specs)++] = o;
    }
    return rc ? rc : -1;
}

/* What a solve reports. */
typedef struct solve_result {
    ns_solve_timing tm;
    ns_hines_method used;
    ns_backend backend;
    double err_seq, err_dense; /* the largest relative errors (-1: not checked) */
    long long dense_cells;     /* cells checked against dense LU */
} solve_result;

/* The solve of the batch (v: a, b, d, rhs), on this process or spread over
 * mpirun's (docs/mpi.md); 0 or 1 (printed). */
static int solve(const cli_shape_set *set, ns_batch_t *batch, const solve_args *args, double *const *v,
                 ns_hines_solver_t **solver, solve_result *res) {
    double *a = v[0], *b = v[1], *d = v[2], *rhs = v[3];
    ns_status st;
    if (cli_mpi_active()) { /* under mpirun: cells spread over the processes (docs/mpi.md) */
        st = cli_mpi_solve(batch, &args->opt, a, b, d, rhs, &res->tm, &res->used, &res->backend);
        return st != NS_OK ? cli_status_error("solving", st) : 0;
    }
    st = ns_hines_solver_create(batch, &args->opt, solver);
    if (st != NS_OK) return cli_status_error("preparing the solver", st);
    st = ns_hines_solver_solve(*solver, a, b, d, rhs);
    const long long bad = st == NS_OK ? -1 : cli_failed_cell(ns_last_error());
    if (bad >= 0 && bad < (long long)ns_batch_cells(batch)) /* name the file of the failing cell */
        return cli_error("solving: %s: %s: %s", set->items[ns_batch_cell_shape(batch)[bad]].name,
                         ns_status_string(st), ns_last_error());
    if (st != NS_OK) return cli_status_error("solving", st);
    ns_hines_solver_timing(*solver, &res->tm);
    res->used = ns_hines_solver_method(*solver);
    res->backend = ns_hines_solver_backend(*solver);
    return 0;
}

/* The checks: every cell against the sequential solve on the saved inputs
 * (v: a, b, d, x, d0, rhs0); the first cell of each shape (up to dense_max
 * unknowns) against dense LU. 0 or 1 (printed). */
static int check_solution(const cli_shape_set *set, const ns_batch_t *batch, const solve_args *args,
                          double *const *v, solve_result *res) {
    const double *a = v[0], *b = v[1], *x = v[3];
    const int64_t *off = ns_batch_cell_offset(batch);
    const int32_t *cs = ns_batch_cell_shape(batch);
    double *dref = v[4], *xref = v[5];
    res->err_seq = 0.0;
    int *dense_done = calloc((size_t)set->count, sizeof *dense_done);
    for (int64_t c = 0; c < ns_batch_cells(batch); ++c) {
        const ns_tree_t *t = ns_batch_shape(batch, cs[c]);
        const int32_t n = ns_tree_size(t);
        const int64_t o = off[c];
        double *x_dense = NULL;
        if (dense_done && !dense_done[cs[c]] && n <= args->dense_max &&
            (x_dense = malloc((size_t)n * sizeof *x_dense)) != NULL) {
            dense_done[cs[c]] = 1;
            if (dense_lu_solve(n, ns_tree_parent(t), a + o, b + o, dref + o, xref + o, x_dense) == 0) {
                double e = cell_error(x + o, x_dense, n);
                if (res->err_dense < 0 || !(e <= res->err_dense)) res->err_dense = e;
                ++res->dense_cells;
            }
            free(x_dense);
        }
        if (ns_hines_solve_one(n, ns_tree_parent(t), a + o, b + o, dref + o, xref + o) >= 0) {
            free(dense_done);
            return cli_error("%s: the sequential reference hit a zero pivot in cell %lld", set->items[cs[c]].name,
                             (long long)c);
        }
        double e = cell_error(x + o, xref + o, n);
        if (!(e <= res->err_seq)) res->err_seq = e;
    }
    free(dense_done);
    return 0;
}

/* The summary on stdout, as JSON with --json. */
static void report(const cli_shape_set *set, const ns_batch_t *batch, const solve_args *args,
                   const solve_result *res) {
    const ns_solve_timing *tm = &res->tm;
    const long long total = (long long)ns_batch_compartments(batch);
    if (args->as_json) {
        cli_json j;
        json_begin(&j, stdout);
        json_int(&j, "cells", (long long)ns_batch_cells(batch));
        json_int(&j, "compartments", total);
        if (cli_mpi_size() > 1) json_int(&j, "processes", cli_mpi_size());
        json_int(&j, "shapes", set->count);
        json_string(&j, "method", ns_hines_method_name(res->used));
        json_string(&j, "backend", ns_backend_name(res->backend));
        json_string(&j, "values", args->cable ? "cable" : "random");
        json_double(&j, "milliseconds", tm->total_ms);
        json_double(&j, "kernel_ms", tm->kernel_ms);
        json_double(&j, "upload_ms", tm->upload_ms);
        json_double(&j, "layout_ms", tm->layout_ms);
        json_double(&j, "download_ms", tm->download_ms);
        json_bool(&j, "checked", args->check);
        if (args->check) {
            json_double(&j, "max_rel_error_sequential", res->err_seq);
            if (res->err_dense >= 0) json_double(&j, "max_rel_error_dense_lu", res->err_dense);
            else { json_key(&j, "max_rel_error_dense_lu"); fputs("null", stdout); }
            json_int(&j, "dense_lu_cells", res->dense_cells);
        }
        json_end(&j);
        return;
    }
    printf("%lld cells, %lld compartments, %d shape%s; method %s on %s\n", (long long)ns_batch_cells(batch), total,
           set->count, set->count == 1 ? "" : "s", ns_hines_method_name(res->used), ns_backend_name(res->backend));
    printf("time: %.3f ms total (kernel %.3f ms", tm->total_ms, tm->kernel_ms);
    if (tm->upload_ms >= 0) printf(", upload %.3f, layout %.3f, download %.3f", tm->upload_ms, tm->layout_ms, tm->download_ms);
    printf(")\n");
    if (args->check) {
        printf("max relative error vs sequential solve: %.3e\n", res->err_seq);
        if (res->err_dense >= 0)
            printf("max relative error vs dense LU (%lld cells): %.3e\n", res->dense_cells, res->err_dense);
        else printf("dense LU check skipped: no cell has <= %lld unknowns\n", args->dense_max);
    }
}

int cmd_solve(int argc, char **argv) {
    solve_args args = {1e-10, 1024, 1, 2000, 0, 0, 0, {0}};
    ns_solve_options_init(&args.opt);
    cli_solve_env(&args.opt);
    cli_morph_options mo;
    cli_morph_options_init(&mo);
    const char **specs = calloc((size_t)argc, sizeof *specs);
    int n_specs = 0;
    if (!specs) return cli_error("out of memory");
    int rc = parse_options(argc, argv, &args, &mo, specs, &n_specs);
    if (rc >= 0) { free(specs); return rc; }
    rc = 0;
    if (n_specs == 0) specs[n_specs++] = "medium-high";

    cli_shape_set set = {0};
    for (int k = 0; k < n_specs && !rc; ++k) rc = cli_shapes_add(&set, specs[k], &mo, (uint64_t)args.seed);
    free(specs);
    if (rc) { cli_shapes_free(&set); return rc; }

    /* The memory the batch needs is known before anything is allocated:
     * refuse early instead of growing until malloc fails (issue 18). */
    if ((rc = check_memory(&set, &args))) { cli_shapes_free(&set); return rc; }

    ns_tree_t **trees = malloc((size_t)set.count * sizeof *trees);
    ns_batch_t *batch = NULL;
    double *v[6] = {0}; /* a, b, d, rhs, d0, rhs0 */
    ns_hines_solver_t *solver = NULL;
    if (!trees) { cli_shapes_free(&set); return cli_error("out of memory"); }
    for (int k = 0; k < set.count; ++k) trees[k] = set.items[k].tree;
    ns_status st = ns_batch_create(set.count, (const ns_tree_t *const *)trees, args.cells, NULL, &batch);
    free(trees);
    if (st != NS_OK) { rc = cli_status_error("creating the batch", st); goto done; }

    const int64_t total = ns_batch_compartments(batch);
    for (int k = 0; k < 6; ++k) {
        if (k >= 4 && !args.check) break;
        v[k] = malloc((size_t)total * sizeof(double));
        if (!v[k]) { rc = cli_error("out of memory for %lld compartments", (long long)total); goto done; }
    }
    st = ns_batch_random_values(batch, (uint64_t)args.seed, v[0], v[1], v[2], v[3]);
    if (st != NS_OK) { rc = cli_status_error("random values", st); goto done; }
    if (args.cable && (rc = fill_cable(&set, batch, v[0], v[1], v[2]))) goto done;
    if (args.check) {
        memcpy(v[4], v[2], (size_t)total * sizeof(double));
        memcpy(v[5], v[3], (size_t)total * sizeof(double));
    }
    solve_result res = {.err_seq = -1.0, .err_dense = -1.0};
    if ((rc = solve(&set, batch, &args, v, &solver, &res)) != 0) goto done;
    if (args.check && (rc = check_solution(&set, batch, &args, v, &res)) != 0) goto done;
    report(&set, batch, &args, &res);
    if (args.check && !(res.err_seq <= args.tolerance && res.err_dense <= args.tolerance))
        rc = cli_error("check failed: relative error %.3e (sequential) / %.3e (dense LU) above %.1e",
                       res.err_seq, res.err_dense, args.tolerance);
done:
    ns_hines_solver_destroy(solver);
    for (int k = 0; k < 6; ++k) free(v[k]);
    ns_batch_destroy(batch);
    cli_shapes_free(&set);
    return rc;
}
