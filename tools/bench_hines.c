/* neurosolve bench hines: the cuHinesBatch paper's experiments (Figs. 3-5).
 * For each shape x cell count: the sequential CPU solve (the baseline and the
 * reference every other row is checked against), OpenMP, and with
 * --backend cuda every GPU method (Block-Interleaved over a BS sweep).
 * Columns: median ms, speedup over sequential, effective bandwidth at the
 * solve's minimum bytes per compartment (40: a, b, d, rhs read, x written)
 * and, on the GPU, its ratio to a device-to-device copy of the same bytes
 * timed in the same run (once per batch); max relative error. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shapes.h"

#define MAX_LIST 32
#define FLOOR_BYTES 40.0 /* read a, b, d, rhs once, write x once [bytes/compartment] */

static void help(void) {
    printf("usage: neurosolve bench hines [options]\n"
           "  --backend cpu|cuda|all   rows to run (default cpu; cuda adds the GPU methods)\n"
           "  --shapes SPEC,...        shapes (default: the paper's six sizes; see `solve --help`)\n"
           "  --cells N,...            cell counts (default 256,2560,25600)\n"
           "  --large                  add 256000 cells\n"
           "  --block-sizes BS,...     Block-Interleaved sweep (default 32,64,128,256,512)\n"
           "  --methods M,...          GPU methods (default all: flat, interleaved,\n"
           "                           block-interleaved, block-shared, onchip)\n"
           "  --repeats N              timed runs per row, median reported (default 10; >= 5)\n"
           "  --threads T              OpenMP threads (default: OpenMP's)\n"
           "  --devices G              GPUs for the GPU methods (default 1)\n"
           "  --seed S                 random seed (default 1)\n"
           "  --csv FILE               write every row\n"
           "  --plot FILE.png          draw the speedup figures (needs --csv and matplotlib)\n"
           "  --json                   one JSON document on stdout instead of the table\n"
           "  --mixed ...              the mixed-shape benchmark (bench hines --mixed --help)\n");
}

typedef struct row {
    char shape[512];
    int32_t size, branches;
    long long cells;
    char method[32];
    int block_size;
    double ms, speedup, gbs, copy_gbs, ratio, error, layout_ms;
} row;

typedef CLI_ARRAY(row) rows;

static row *add_row(rows *r) {
    row *x = CLI_APPEND(r);
    if (x) x->ratio = x->layout_ms = -1.0;
    return x;
}

typedef struct bench_case {
    const ns_batch_t *batch;
    int64_t total;
    const double *a0, *b0, *d0, *r0; /* pristine inputs */
    const double *xref;              /* sequential solution */
    int repeats;
} bench_case;

/* CPU rows: rotate between several copies of the inputs so that a run never
 * finds its data in cache from the previous one (BENCHMARKING.md). */
static ns_status time_cpu(const bench_case *bc, const ns_solve_options *opt, double *ms, double *err,
                          double *xout) {
    const size_t bytes = (size_t)bc->total * sizeof(double);
    int copies = (int)((512.0 * 1024 * 1024) / (4.0 * (double)bytes)) + 1;
    if (copies > 8) copies = 8;
    if (copies > bc->repeats) copies = bc->repeats;
    double *buf = malloc((size_t)copies * 4 * bytes);
    double *times = malloc((size_t)bc->repeats * sizeof *times);
    ns_hines_solver_t *s = NULL;
    ns_status st = buf && times ? ns_hines_solver_create(bc->batch, opt, &s) : NS_ERR_OUT_OF_MEMORY;
    for (int r = 0; st == NS_OK && r < bc->repeats; ++r) {
        const int k = r % copies;
        double *a = buf + (size_t)k * 4 * (size_t)bc->total, *b = a + bc->total, *d = b + bc->total,
               *x = d + bc->total;
        if (k == 0)
            for (int j = 0; j < copies; ++j) {
                double *aj = buf + (size_t)j * 4 * (size_t)bc->total;
                memcpy(aj, bc->a0, bytes);
                memcpy(aj + bc->total, bc->b0, bytes);
                memcpy(aj + 2 * bc->total, bc->d0, bytes);
                memcpy(aj + 3 * bc->total, bc->r0, bytes);
            }
        st = ns_hines_solver_solve(s, a, b, d, x);
        ns_solve_timing t;
        ns_hines_solver_timing(s, &t);
        times[r] = t.kernel_ms;
        if (r == bc->repeats - 1 && st == NS_OK) {
            if (xout) memcpy(xout, x, bytes);
            if (bc->xref) *err = cli_batch_error(bc->batch, x, bc->xref);
        }
    }
    if (st == NS_OK) *ms = cli_median(times, bc->repeats);
    ns_hines_solver_destroy(s);
    free(buf);
    free(times);
    return st;
}

static ns_status time_gpu(const bench_case *bc, const ns_solve_options *opt, double *ms, double *err,
                          double *layout_ms, double *work) {
    const size_t bytes = (size_t)bc->total * sizeof(double);
    double *d = work, *x = work + bc->total;
    double *times = malloc((size_t)bc->repeats * sizeof *times);
    if (!times) return NS_ERR_OUT_OF_MEMORY;
    memcpy(d, bc->d0, bytes);
    memcpy(x, bc->r0, bytes);
    ns_hines_solver_t *s = NULL;
    ns_status st = ns_hines_solver_create(bc->batch, opt, &s);
    if (st == NS_OK) st = ns_hines_solver_benchmark(s, bc->a0, bc->b0, d, x, bc->repeats, times);
    if (st == NS_OK) {
        ns_solve_timing t;
        ns_hines_solver_timing(s, &t);
        *layout_ms = t.layout_ms;
        *ms = cli_median(times, bc->repeats);
        *err = cli_batch_error(bc->batch, x, bc->xref);
    }
    ns_hines_solver_destroy(s);
    free(times);
    return st;
}

/* The command line of a run. */
typedef struct hines_opts {
    int cpu, gpu, as_json, n_cells, n_bs, large;
    long long cells[MAX_LIST], bss[MAX_LIST], repeats, threads, devices, seed;
    const char *csv, *plot;
    char shapes_buf[4096], methods_buf[512];
} hines_opts;

/* The command line into o, every --methods name checked before any work (GPU
 * or not); -1 to go on, else the exit status (printed; 0 after --help). */
static int parse_options(int argc, char **argv, hines_opts *o) {
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = 1;
        if (strcmp(a, "--help") == 0) { help(); return 0; }
        else if (strcmp(a, "--backend") == 0 && v) {
            if (strcmp(v, "cpu") == 0) o->cpu = 1, o->gpu = 0;
            else if (strcmp(v, "cuda") == 0 || strcmp(v, "all") == 0) o->cpu = 1, o->gpu = 1;
            else return cli_usage_error("bench hines", "--backend takes cpu, cuda or all");
            ++i;
        } else if (strcmp(a, "--shapes") == 0 && v) snprintf(o->shapes_buf, sizeof o->shapes_buf, "%s", v), ++i;
        else if (strcmp(a, "--methods") == 0 && v) snprintf(o->methods_buf, sizeof o->methods_buf, "%s", v), ++i;
        else if (strcmp(a, "--cells") == 0) ok = cli_parse_long_list("bench hines", a, v, 1, 1LL << 32, o->cells, MAX_LIST, &o->n_cells), ++i;
        else if (strcmp(a, "--block-sizes") == 0) ok = cli_parse_long_list("bench hines", a, v, 1, 1024, o->bss, MAX_LIST, &o->n_bs), ++i;
        else if (strcmp(a, "--large") == 0) o->large = 1;
        else if (strcmp(a, "--repeats") == 0) ok = cli_parse_long("bench hines", a, v, 5, 100000, &o->repeats), ++i;
        else if (strcmp(a, "--threads") == 0) ok = cli_parse_long("bench hines", a, v, 1, 4096, &o->threads), ++i;
        else if (strcmp(a, "--devices") == 0) ok = cli_parse_long("bench hines", a, v, 1, 64, &o->devices), ++i;
        else if (strcmp(a, "--seed") == 0) ok = cli_parse_long("bench hines", a, v, 0, 1LL << 62, &o->seed), ++i;
        else if (strcmp(a, "--csv") == 0 && v) o->csv = v, ++i;
        else if (strcmp(a, "--plot") == 0 && v) o->plot = v, ++i;
        else if (strcmp(a, "--json") == 0) o->as_json = 1;
        else return cli_usage_error("bench hines", "unknown option or missing value '%s'", a);
        if (!ok) return 2;
    }
    if (o->large && o->n_cells < MAX_LIST) o->cells[o->n_cells++] = 256000;
    if (o->plot && !o->csv) return cli_usage_error("bench hines", "--plot needs --csv FILE");
    cli_plot_check(o->plot);
    char check_buf[sizeof o->methods_buf];
    const char *names[16];
    memcpy(check_buf, o->methods_buf, sizeof check_buf);
    const int n = cli_split_list(check_buf, names, 16);
    for (int k = 0; k < n; ++k) {
        ns_hines_method m;
        if (ns_hines_method_from_name(names[k], &m) != NS_OK)
            return cli_usage_error("bench hines", "--methods: %s", ns_last_error());
    }
    return -1;
}

/* One row of the table. */
static void print_row(const row *r) {
    char mname[40];
    if (r->block_size) snprintf(mname, sizeof mname, "%s/%d", r->method, r->block_size);
    else snprintf(mname, sizeof mname, "%s", r->method);
    printf("%-12.12s %5d %5d %8lld %-20s %8.3f %9.*fx %9.1f ", r->shape, r->size, r->branches, r->cells, mname, r->ms,
           r->speedup < 10.0 ? 2 : 1, r->speedup, r->gbs);
    if (r->ratio >= 0) printf("%8.3f ", r->ratio); else printf("%8s ", "-");
    if (r->layout_ms >= 0) printf("%7.3f ", r->layout_ms); else printf("%7s ", "-");
    printf("%9.1e\n", r->error);
    fflush(stdout);
}

/* The rows of one shape (item of the set) and cell count (cells[ci]): the
 * sequential baseline, OpenMP, the GPU methods; 0 or the exit status (printed). */
static int bench_batch(const hines_opts *o, const cli_shape *item, int ci, const char *const *methods, int n_methods,
                       rows *out) {
    ns_tree_stats ts;
    ns_tree_get_stats(item->tree, &ts);
    const ns_tree_t *shape = item->tree;
    ns_batch_t *batch = NULL;
    ns_status st = ns_batch_create(1, &shape, o->cells[ci], NULL, &batch);
    if (st != NS_OK) return cli_status_error("batch", st);
    const int64_t total = ns_batch_compartments(batch);
    const size_t bytes = (size_t)total * sizeof(double);
    double *mem = malloc(7 * bytes);
    if (!mem) {
        ns_batch_destroy(batch);
        return cli_error("out of memory (%zu bytes)", 7 * bytes);
    }
    double *a0 = mem, *b0 = a0 + total, *d0 = b0 + total, *r0 = d0 + total, *xref = r0 + total, *work = xref + total;
    ns_batch_random_values(batch, (uint64_t)o->seed + (uint64_t)ci, a0, b0, d0, r0);
    bench_case bc = {batch, total, a0, b0, d0, r0, NULL, (int)o->repeats};
    const double gbytes = FLOOR_BYTES * (double)total * 1e-9;
    double copy_bw = -1.0; /* a copy of the same bytes, once per batch */
    if (o->gpu && ns_cuda_copy_bandwidth(0, (size_t)(FLOOR_BYTES * (double)total), 10, &copy_bw) != NS_OK)
        copy_bw = -1.0;

    ns_solve_options opt;
    ns_solve_options_init(&opt);
    opt.threads = (int32_t)o->threads;
    opt.devices = (int32_t)o->devices;
    double seq_ms = 0.0, err = 0.0;
    /* The sequential row is the baseline and produces the reference. */
    opt.method = NS_HINES_SEQUENTIAL;
    st = time_cpu(&bc, &opt, &seq_ms, &err, xref);
    bc.xref = xref;
    int n_variants = 0, rc = 0;
    struct { ns_hines_method m; int bs; } variants[64];
    if (o->cpu) variants[n_variants++].m = NS_HINES_OPENMP, variants[n_variants - 1].bs = 0;
    for (int mi = 0; o->gpu && mi < n_methods; ++mi) {
        ns_hines_method m;
        if (ns_hines_method_from_name(methods[mi], &m) != NS_OK) {
            rc = cli_usage_error("bench hines", "%s", ns_last_error());
            break;
        }
        if (m == NS_HINES_BLOCK_INTERLEAVED)
            for (int b = 0; b < o->n_bs && n_variants < 64; ++b)
                variants[n_variants].m = m, variants[n_variants++].bs = (int)o->bss[b];
        else if (n_variants < 64) variants[n_variants].m = m, variants[n_variants++].bs = 0;
    }
    for (int vi = -1; vi < n_variants && st == NS_OK && !rc; ++vi) {
        row *r = add_row(out);
        if (!r) { rc = cli_error("out of memory"); break; }
        snprintf(r->shape, sizeof r->shape, "%s", item->name);
        r->size = ts.size;
        r->branches = ts.branches;
        r->cells = o->cells[ci];
        ns_hines_method m = vi < 0 ? NS_HINES_SEQUENTIAL : variants[vi].m;
        snprintf(r->method, sizeof r->method, "%s", ns_hines_method_name(m));
        r->block_size = vi < 0 ? 0 : variants[vi].bs;
        if (vi < 0) {
            r->ms = seq_ms;
            r->error = 0.0;
        } else {
            opt.method = m;
            opt.block_size = variants[vi].bs;
            ns_status vs = ns_hines_method_backend(m) == NS_BACKEND_CPU
                               ? time_cpu(&bc, &opt, &r->ms, &r->error, NULL)
                               : time_gpu(&bc, &opt, &r->ms, &r->error, &r->layout_ms, work);
            if (vs != NS_OK) {
                fprintf(stderr, "neurosolve bench hines: %s on %s x %lld: %s: %s\n", r->method, r->shape, r->cells,
                        ns_status_string(vs), ns_last_error());
                out->n--;
                continue;
            }
        }
        r->speedup = seq_ms / r->ms;
        r->gbs = gbytes / (r->ms * 1e-3);
        r->copy_gbs = r->ratio = -1.0;
        if (ns_hines_method_backend(m) == NS_BACKEND_CUDA && copy_bw > 0)
            r->copy_gbs = copy_bw, r->ratio = r->gbs / copy_bw;
        if (!o->as_json) print_row(r);
    }
    if (st != NS_OK) rc = cli_status_error("sequential baseline", st);
    free(mem);
    ns_batch_destroy(batch);
    return rc;
}

/* The rows as CSV (--csv); 0 or 1 (printed). */
static int write_csv(const char *csv, const rows *out, const char *device_name) {
    ns_output *o = cli_output_open(csv);
    FILE *f = ns_output_stream(o);
    if (!f) return 1;
    fprintf(f, "shape,size,branches,cells,method,block_size,ms,speedup,gbs,bw_ratio,layout_ms,max_rel_error,device,copy_gbs\n");
    for (int k = 0; k < out->n; ++k) {
        const row *r = &out->v[k];
        fprintf(f, "%s,%d,%d,%lld,%s,%d,%.6g,%.6g,%.6g,%.6g,%.6g,%.3e,%s,%.6g\n", r->shape, r->size, r->branches,
                r->cells, r->method, r->block_size, r->ms, r->speedup, r->gbs, r->ratio, r->layout_ms, r->error,
                device_name, r->copy_gbs);
    }
    return cli_output_commit(o);
}

/* The rows as one JSON document on stdout (--json). */
static void write_json(const hines_opts *o, const rows *out, const char *device_name, long long threads) {
    cli_json j;
    json_begin(&j, stdout);
    json_string(&j, "device", device_name);
    json_double(&j, "bytes_per_compartment", FLOOR_BYTES);
    json_int(&j, "threads", threads);
    json_int(&j, "repeats", o->repeats);
    json_array_begin(&j, "rows");
    for (int k = 0; k < out->n; ++k) {
        const row *r = &out->v[k];
        json_object_begin(&j, NULL);
        json_string(&j, "shape", r->shape);
        json_int(&j, "size", r->size);
        json_int(&j, "branches", r->branches);
        json_int(&j, "cells", r->cells);
        json_string(&j, "method", r->method);
        json_int(&j, "block_size", r->block_size);
        json_double(&j, "ms", r->ms);
        json_double(&j, "speedup", r->speedup);
        bench_json_bandwidth(&j, r->gbs, r->copy_gbs, r->ratio);
        if (r->layout_ms >= 0) json_double(&j, "layout_ms", r->layout_ms);
        json_double(&j, "max_rel_error", r->error);
        json_object_end(&j);
    }
    json_array_end(&j);
    json_end(&j);
}

int bench_hines(int argc, char **argv) {
    hines_opts o = {.cpu = 1, .cells = {256, 2560, 25600}, .bss = {32, 64, 128, 256, 512}, .n_cells = 3, .n_bs = 5,
                    .repeats = 10, .devices = 1, .seed = 1,
                    .shapes_buf = "small-low,small-high,medium-low,medium-high,big-low,big-high",
                    .methods_buf = "flat,interleaved,block-interleaved,block-shared,onchip"};
    for (int i = 1; i < argc; ++i)
        if (strcmp(argv[i], "--mixed") == 0) return bench_hines_mixed(argc, argv);
    int rc = parse_options(argc, argv, &o);
    if (rc >= 0) return rc;

    char device_name[256] = "none";
    if (o.gpu) {
        int n_dev = 0;
        ns_status st = ns_cuda_device_count(&n_dev);
        if (st != NS_OK || n_dev == 0) {
            fprintf(stderr, "neurosolve bench hines: no usable GPU (%s): CPU rows only\n",
                    st != NS_OK ? ns_last_error() : "none visible");
            o.gpu = 0;
        } else {
            ns_device_info di;
            if (ns_cuda_device_info(0, &di) == NS_OK) snprintf(device_name, sizeof device_name, "%s", di.name);
            if (!o.as_json)
                printf("device 0: %s; bw/copy: against a device-to-device copy of the batch's 40 bytes per "
                       "compartment (read + write, median of 10)\n", device_name);
        }
    }
    ns_build_info bi;
    ns_get_build_info(&bi);
    const long long threads = o.threads ? o.threads : (long long)bi.openmp_threads;
    if (!o.as_json) printf("CPU: %lld OpenMP threads; %lld timed runs per row (median)\n", threads, o.repeats);

    const char *shape_specs[MAX_LIST], *methods[16];
    int n_shapes = cli_split_list(o.shapes_buf, shape_specs, MAX_LIST);
    int n_methods = cli_split_list(o.methods_buf, methods, 16);
    cli_morph_options mo;
    cli_morph_options_init(&mo);
    cli_shape_set set = {0};
    rc = 0;
    for (int k = 0; k < n_shapes && !rc; ++k) rc = cli_shapes_add(&set, shape_specs[k], &mo, (uint64_t)o.seed);
    rows out = {0};
    int cpus = 1;
    double loaded = cli_machine_loaded(&cpus);

    if (!o.as_json && !rc)
        printf("%-12s %5s %5s %8s %-20s %8s %10s %9s %8s %7s %9s\n", "shape", "size", "brnch", "cells",
               "method", "ms", "speedup", "GB/s", "bw/copy", "layout", "max_err");
    for (int s = 0; s < set.count && !rc; ++s)
        for (int ci = 0; ci < o.n_cells && !rc; ++ci) rc = bench_batch(&o, &set.items[s], ci, methods, n_methods, &out);
    cli_shapes_free(&set);
    const double loaded_end = cli_machine_loaded(NULL);
    if (loaded_end > loaded) loaded = loaded_end;
    if (loaded > 0.0 && !rc) /* stderr: --json keeps one document on stdout */
        fprintf(stderr, "neurosolve bench hines: note: the load average (%.1f) was above this machine's %d CPUs: "
                "other processes took CPU time, so these timings and speed-ups are noisy (compare runs on an "
                "idle machine)\n", loaded, cpus);
    if (!rc && o.csv) rc = write_csv(o.csv, &out, device_name);
    if (!rc && o.as_json) write_json(&o, &out, device_name, threads);
    if (!rc && o.plot) rc = cli_plot("bench/plot_hines.py", o.csv, o.plot, NULL);
    free(out.v);
    return rc;
}
