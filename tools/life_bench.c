/* neurosolve bench life: the LiFE paper's experiments (Tables 2-10) on
 * synthetic models of the paper's structure.
 *   products: per-call time of y = M w and w = M^T y for every variant
 *     (restructuring x partitioning) on each backend, with a dense weight
 *     vector (iteration 1) and the sparse true weights (later iterations),
 *     bytes moved at the floor vs the copy bandwidth; each checked against
 *     the naive CPU product of the same run (max relative error);
 *   sbbnnls: overall times of CPU-naive, CPU-opt, GPU-reference (the Fig. 6
 *     kernels on the atom-sorted copy, the paper's Ref-opt) and GPU-opt, for
 *     each fiber count of the sweep, weights checked against CPU-opt.
 * CPU-naive runs --naive-iters updates and its time for --iters is the
 * per-update time times the updates (marked extrapolated). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

#define MAX_LIST 16

static void help(void) {
    printf("usage: neurosolve bench life [options]\n"
           "  --fibers N,...       fiber counts (default 50000,100000,150000,200000,250000,500000)\n"
           "  --products-at N      fiber count of the per-variant product table (default: the largest)\n"
           "  --no-products        skip the per-variant product table\n"
           "  --variants V,...     only these variants in the product table (default: every one)\n"
           "  --ref-variant V      CPU variant that checks the product rows (default naive, one\n"
           "                       thread; another variant runs on --threads: faster on large models)\n"
           "  --iters N            SBBNNLS maxit of the overall rows (default 500)\n"
           "  --naive-iters N      maxit actually run by CPU-naive (default 4; the rest is extrapolated)\n"
           "  --gpu-ref-iters N    maxit actually run by GPU-reference (default: --iters; fewer are\n"
           "                       extrapolated: its kernels skip nothing, so each update costs the same)\n"
           "  --backend cpu|cuda|all  (default all: cuda rows when a GPU is usable)\n"
           "  --repeats N          timed runs per product, median reported (default 5)\n"
           "  --threads T          CPU threads (default: OpenMP's)\n"
           "  --grid X,Y,Z --length L --L N --theta N --seed S   synthetic model (see life synth; L 360 here)\n"
           "  --quick              small models: fibers 5000,10000, L 60, iters 20, repeats 3\n"
           "  --csv FILE           write every row\n"
           "  --plot FILE.png      draw the figures (needs --csv and matplotlib)\n"
           "  --json               one JSON document on stdout instead of the tables\n"
           "  --quality DIR        pruning quality on a ground-truth phantom instead (bench life --quality --help)\n");
}

typedef struct row {
    char table[12], backend[8], product[8], variant[16], input[48];
    long long fibers, voxels, coeffs;
    int iters;
    double ms, gbs, copy_fraction, error, seconds, speedup;
    int extrapolated;
} row;

typedef CLI_ARRAY(row) rows;

static row *add(rows *r) {
    row *x = CLI_APPEND(r);
    if (!x) return NULL;
    x->copy_fraction = x->gbs = x->speedup = x->seconds = x->ms = x->error = -1.0;
    return x;
}

static double rel_inf(const double *a, const double *b, int64_t n) {
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        const double e = fabs(a[i] - b[i]);
        if (!(e <= num)) num = e;
        if (fabs(b[i]) > den) den = fabs(b[i]);
    }
    return den > 0 ? num / den : num;
}

typedef struct bench {
    int cpu, gpu, repeats, iters, naive_iters, ref_iters, threads;
    ns_life_variant ref; /* CPU variant of the product check */
    unsigned only;       /* bit v: variant v in the product table (0: every one) */
    double copy_bw;
    rows out;
} bench;

static ns_status engine(ns_life_model_t *m, ns_backend b, ns_life_variant v, int threads,
                        ns_life_engine_t **e) {
    ns_life_options o;
    ns_life_options_init(&o);
    o.backend = b;
    o.mw_variant = o.mty_variant = v;
    o.threads = threads;
    return ns_life_engine_create(m, &o, e);
}

/* Per-variant product rows on one model. */
static int products(bench *B, ns_life_model_t *m, long long fibers) {
    const int64_t F = ns_life_model_n_fibers(m), NY = (int64_t)ns_life_model_n_theta(m) * ns_life_model_n_voxels(m);
    double *dense = malloc((size_t)F * 8), *out_w = malloc((size_t)F * 8), *ref_w = malloc((size_t)F * 8);
    double *y = malloc((size_t)NY * 8), *out_y = malloc((size_t)NY * 8), *ref_y = malloc((size_t)NY * 8);
    double *ms = malloc((size_t)B->repeats * 8);
    if (!dense || !out_w || !ref_w || !y || !out_y || !ref_y || !ms) return cli_error("bench life: out of memory");
    for (int64_t f = 0; f < F; ++f) dense[f] = 0.5 + 0.5 * (double)((f * 2654435761u) % 1000) / 1000.0;
    const double *sparse = ns_life_model_true_weights(m);
    for (int64_t i = 0; i < NY; ++i) y[i] = ns_life_model_signal(m)[i];
    const double floor = ns_life_floor_bytes(m, NS_LIFE_MW);
    ns_life_engine_t *naive = NULL;
    ns_status s = engine(m, NS_BACKEND_CPU, B->ref, B->ref == NS_LIFE_NAIVE ? 1 : B->threads, &naive);
    if (s != NS_OK) return cli_status_error("bench life", s);
    for (int b = 0; b < 2; ++b) {
        if ((b == 0 && !B->cpu) || (b == 1 && !B->gpu)) continue;
        const ns_backend be = b ? NS_BACKEND_CUDA : NS_BACKEND_CPU;
        for (int p = 0; p < 2; ++p)
            for (int in = 0; in < (p == 0 ? 2 : 1); ++in) {
                const double *w = in == 0 ? dense : sparse;
                /* the reference of this input */
                if (p == 0) s = ns_life_mw(naive, w, ref_y);
                else s = ns_life_mty(naive, y, ref_w);
                if (s != NS_OK) return cli_status_error("bench life: naive product", s);
                for (int v = NS_LIFE_NAIVE; v < NS_LIFE_VARIANT_ALL && s == NS_OK; ++v) {
                    if (!b && v >= NS_LIFE_VARIANT_COUNT) continue; /* CUDA-only variants */
                    if (B->only && !(B->only & (1u << v))) continue;
                    /* the sequential naive loops are the slow baseline: time them once on the CPU */
                    ns_life_engine_t *e = NULL;
                    s = engine(m, be, (ns_life_variant)v, B->threads, &e);
                    if (s != NS_OK) break;
                    const int reps = !b && v <= NS_LIFE_NAIVE_VOXEL ? 1 : B->repeats;
                    double *o = p == 0 ? out_y : out_w;
                    const int64_t n_out = p == 0 ? NY : F;
                    for (int64_t i = 0; i < n_out; ++i) o[i] = NAN; /* poison */
                    s = ns_life_time_product(e, (ns_life_product)p, (ns_life_variant)v, p == 0 ? w : y, o, reps, ms);
                    ns_life_engine_destroy(e);
                    if (s != NS_OK) break;
                    row *r = add(&B->out);
                    if (!r) return cli_error("bench life: out of memory");
                    snprintf(r->table, sizeof r->table, "products");
                    snprintf(r->backend, sizeof r->backend, "%s", b ? "cuda" : "cpu");
                    snprintf(r->product, sizeof r->product, "%s", ns_life_product_name((ns_life_product)p));
                    snprintf(r->variant, sizeof r->variant, "%s", ns_life_variant_name((ns_life_variant)v));
                    snprintf(r->input, sizeof r->input, "%s", p == 1 ? "signal" : in == 0 ? "dense" : "sparse");
                    r->fibers = fibers;
                    r->voxels = ns_life_model_n_voxels(m);
                    r->coeffs = ns_life_model_n_coeffs(m);
                    r->ms = cli_median(ms, reps);
                    r->gbs = floor / (r->ms * 1e-3) / 1e9;
                    if (b && B->copy_bw > 0) r->copy_fraction = r->gbs / B->copy_bw;
                    r->error = p == 0 ? rel_inf(out_y, ref_y, NY) : rel_inf(out_w, ref_w, F);
                }
                if (s != NS_OK) return cli_status_error("bench life: products", s);
            }
    }
    ns_life_engine_destroy(naive);
    free(dense), free(out_w), free(ref_w), free(y), free(out_y), free(ref_y), free(ms);
    return 0;
}

/* One overall SBBNNLS row; w receives the weights. */
static int overall(bench *B, ns_life_model_t *m, long long fibers, const char *name, ns_backend be,
                   ns_life_variant v, int iters, double *w, row **out) {
    ns_life_engine_t *e = NULL;
    ns_status s = engine(m, be, v, v == NS_LIFE_NAIVE && be == NS_BACKEND_CPU ? 1 : B->threads, &e);
    if (s != NS_OK) return cli_status_error(name, s);
    ns_life_fit_options fo;
    ns_life_fit_options_init(&fo);
    fo.max_iterations = iters;
    fo.tol_gradient = fo.tol_objective = 0.0; /* the same number of updates for every row */
    fo.rtol_gradient = fo.rtol_objective = 0.0;
    ns_life_fit_result res;
    s = ns_life_fit(e, &fo, w, NULL, &res);
    char variants[40];
    snprintf(variants, sizeof variants, "%s/%s", ns_life_variant_name(ns_life_engine_variant(e, NS_LIFE_MW)),
             ns_life_variant_name(ns_life_engine_variant(e, NS_LIFE_MTY)));
    ns_life_engine_destroy(e);
    if (s != NS_OK) return cli_status_error(name, s);
    row *r = add(&B->out);
    if (!r) return cli_error("bench life: out of memory");
    snprintf(r->table, sizeof r->table, "sbbnnls");
    snprintf(r->backend, sizeof r->backend, "%s", be == NS_BACKEND_CUDA ? "cuda" : "cpu");
    snprintf(r->product, sizeof r->product, "fit");
    snprintf(r->variant, sizeof r->variant, "%s", name);
    snprintf(r->input, sizeof r->input, "%s", variants);
    r->fibers = fibers;
    r->voxels = ns_life_model_n_voxels(m);
    r->coeffs = ns_life_model_n_coeffs(m);
    r->iters = B->iters;
    r->seconds = res.seconds;
    /* per update without the first gradient, which a fit pays once */
    r->ms = res.updates > 0 ? (res.seconds - res.setup_seconds) * 1e3 / res.updates : 0.0;
    if (iters < B->iters) {
        r->seconds = res.setup_seconds + r->ms * 1e-3 * (B->iters - 1);
        r->extrapolated = 1;
    }
    *out = r;
    return 0;
}

static int sweep_point(bench *B, ns_life_model_t *m, long long fibers) {
    const int64_t F = ns_life_model_n_fibers(m);
    double *wref = malloc((size_t)F * 8), *w = malloc((size_t)F * 8);
    if (!wref || !w) return cli_error("bench life: out of memory");
    row *opt = NULL, *r = NULL;
    int rc = 0;
    if (B->cpu) {
        if ((rc = overall(B, m, fibers, "cpu-opt", NS_BACKEND_CPU, NS_LIFE_AUTO, B->iters, wref, &opt))) return rc;
        opt->error = 0.0;
        if ((rc = overall(B, m, fibers, "cpu-naive", NS_BACKEND_CPU, NS_LIFE_NAIVE, B->naive_iters, w, &r))) return rc;
        opt->speedup = r->seconds / opt->seconds;
    }
    if (B->gpu) {
        row *ref = NULL, *gopt = NULL;
        if ((rc = overall(B, m, fibers, "gpu-reference", NS_BACKEND_CUDA, NS_LIFE_NAIVE_ATOM, B->ref_iters, w, &ref))) return rc;
        /* extrapolated rows stopped early: their weights are not comparable */
        if (opt && !ref->extrapolated) ref->error = rel_inf(w, wref, F);
        const int have_ref = opt || !ref->extrapolated;
        if (!opt && have_ref) memcpy(wref, w, (size_t)F * 8);
        if ((rc = overall(B, m, fibers, "gpu-opt", NS_BACKEND_CUDA, NS_LIFE_AUTO, B->iters, w, &gopt))) return rc;
        if (have_ref) gopt->error = rel_inf(w, wref, F);
        gopt->speedup = ref->seconds / gopt->seconds;
    }
    free(wref), free(w);
    return 0;
}

static void print_tables(const bench *B, FILE *out) {
    fprintf(out, "\nProducts (median of %d; CPU naive rows: 1 run): ms per call, floor bytes / time, vs the CPU %s product\n",
            B->repeats, ns_life_variant_name(B->ref));
    fprintf(out, "%-8s %-7s %-5s %-4s %-12s %-7s %10s %9s %8s %10s\n", "fibers", "coeffs", "back", "prod",
            "variant", "input", "ms", "GB/s", "of copy", "max rel err");
    for (int i = 0; i < B->out.n; ++i) {
        const row *r = &B->out.v[i];
        if (strcmp(r->table, "products") != 0) continue;
        char frac[16] = "-";
        if (r->copy_fraction >= 0) snprintf(frac, sizeof frac, "%.3f", r->copy_fraction);
        fprintf(out, "%-8lld %-7.3g %-5s %-4s %-12s %-7s %10.3f %9.1f %8s %10.2e\n", r->fibers,
                (double)r->coeffs, r->backend, r->product, r->variant, r->input, r->ms, r->gbs, frac, r->error);
    }
    fprintf(out, "\nSBBNNLS, %d iterations (maxit; %d updates): seconds (first gradient included), ms per update (without it), speedup over the baseline "
                 "(cpu-opt vs cpu-naive, gpu-opt vs gpu-reference), weights vs cpu-opt\n", B->iters, B->iters - 1);
    fprintf(out, "%-8s %-9s %-8s %-14s %-24s %12s %10s %8s %10s\n", "fibers", "voxels", "coeffs", "code", "variant",
            "seconds", "ms/update", "speedup", "max rel err");
    for (int i = 0; i < B->out.n; ++i) {
        const row *r = &B->out.v[i];
        if (strcmp(r->table, "sbbnnls") != 0) continue;
        char sp[16] = "-", er[16] = "-";
        if (r->speedup > 0) snprintf(sp, sizeof sp, "%.2fx", r->speedup);
        if (r->error >= 0) snprintf(er, sizeof er, "%.2e", r->error);
        fprintf(out, "%-8lld %-9lld %-8.3g %-14s %-24s %11.2f%s %10.2f %8s %10s\n", r->fibers, r->voxels,
                (double)r->coeffs, r->variant, r->input, r->seconds, r->extrapolated ? "*" : " ", r->ms, sp, er);
    }
    fprintf(out, "* extrapolated from the updates actually run (--naive-iters, --gpu-ref-iters)\n");
}

static int write_csv(const bench *B, const char *path) {
    ns_output *o = cli_output_open(path);
    FILE *f = ns_output_stream(o);
    if (!f) return 1;
    fprintf(f, "table,fibers,voxels,coeffs,backend,product,variant,input,ms,gbs,copy_fraction,max_rel_err,iters,seconds,extrapolated,speedup\n");
    for (int i = 0; i < B->out.n; ++i) {
        const row *r = &B->out.v[i];
        fprintf(f, "%s,%lld,%lld,%lld,%s,%s,%s,%s,%.6g,%.6g,%.6g,%.3e,%d,%.6g,%d,%.6g\n", r->table, r->fibers,
                r->voxels, r->coeffs, r->backend, r->product, r->variant, r->input, r->ms, r->gbs,
                r->copy_fraction, r->error, r->iters, r->seconds, r->extrapolated, r->speedup);
    }
    return cli_output_commit(o);
}

static void write_json(const bench *B, const char *device) {
    cli_json j;
    json_begin(&j, stdout);
    json_string(&j, "device", device);
    json_double(&j, "copy_bandwidth_gbs", B->copy_bw);
    json_int(&j, "iterations", B->iters);
    json_array_begin(&j, "rows");
    for (int i = 0; i < B->out.n; ++i) {
        const row *r = &B->out.v[i];
        json_object_begin(&j, NULL);
        json_string(&j, "table", r->table);
        json_int(&j, "fibers", r->fibers);
        json_int(&j, "voxels", r->voxels);
        json_int(&j, "coeffs", r->coeffs);
        json_string(&j, "backend", r->backend);
        json_string(&j, "product", r->product);
        json_string(&j, "variant", r->variant);
        json_string(&j, "input", r->input);
        json_double(&j, "ms", r->ms);
        if (r->gbs >= 0) json_double(&j, "gbs", r->gbs);
        if (r->copy_fraction >= 0) json_double(&j, "copy_fraction", r->copy_fraction);
        if (r->error >= 0) json_double(&j, "max_rel_err", r->error);
        if (r->seconds >= 0) json_double(&j, "seconds", r->seconds), json_bool(&j, "extrapolated", r->extrapolated);
        if (r->speedup >= 0) json_double(&j, "speedup", r->speedup);
        json_object_end(&j);
    }
    json_array_end(&j);
    json_end(&j);
}

int bench_life(int argc, char **argv) {
    for (int i = 1; i < argc; ++i)
        if (strcmp(argv[i], "--quality") == 0) return bench_life_quality(argc, argv);
    bench B;
    memset(&B, 0, sizeof B);
    B.cpu = 1, B.gpu = -1, B.repeats = 5, B.iters = 500, B.naive_iters = 4, B.copy_bw = -1;
    B.ref = NS_LIFE_NAIVE;
    long long fibers[MAX_LIST] = {50000, 100000, 150000, 200000, 250000, 500000}, at = 0, x = 0;
    int n_fibers = 6, as_json = 0, quick = 0, fibers_given = 0, no_products = 0, iters_given = 0, repeats_given = 0;
    const char *csv = NULL, *plot = NULL;
    ns_life_synth_options so;
    ns_life_synth_options_init(&so);
    so.dictionary_l = 360; /* the paper's models (ENCODE's L): the benchmark tables are on them */
    for (int i = 1; i < argc; ++i) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = 1;
        if (strcmp(o, "--help") == 0) { help(); return 0; }
        else if (strcmp(o, "--backend") == 0 && v) {
            if (strcmp(v, "cpu") == 0) B.cpu = 1, B.gpu = 0;
            else if (strcmp(v, "cuda") == 0) B.cpu = 0, B.gpu = 1;
            else if (strcmp(v, "all") == 0) B.cpu = 1, B.gpu = -1;
            else return cli_usage_error("bench life", "--backend takes cpu, cuda or all");
            ++i;
        } else if (strcmp(o, "--fibers") == 0) ok = cli_parse_long_list("bench life", o, v, 1, INT32_MAX, fibers, MAX_LIST, &n_fibers), fibers_given = 1, ++i;
        else if (strcmp(o, "--products-at") == 0) ok = cli_parse_long("bench life", o, v, 1, INT32_MAX, &at), ++i;
        else if (strcmp(o, "--iters") == 0) ok = cli_parse_long("bench life", o, v, 2, 1000000, &x), B.iters = (int)x, iters_given = 1, ++i;
        else if (strcmp(o, "--naive-iters") == 0) ok = cli_parse_long("bench life", o, v, 2, 1000000, &x), B.naive_iters = (int)x, ++i;
        else if (strcmp(o, "--gpu-ref-iters") == 0) ok = cli_parse_long("bench life", o, v, 2, 1000000, &x), B.ref_iters = (int)x, ++i;
        else if (strcmp(o, "--repeats") == 0) ok = cli_parse_long("bench life", o, v, 1, 10000, &x), B.repeats = (int)x, repeats_given = 1, ++i;
        else if (strcmp(o, "--threads") == 0) ok = cli_parse_long("bench life", o, v, 1, 4096, &x), B.threads = (int)x, ++i;
        else if (strcmp(o, "--length") == 0) ok = cli_parse_double("bench life", o, v, 0.5, 1e6, &so.mean_length), ++i;
        else if (strcmp(o, "--L") == 0) ok = cli_parse_long("bench life", o, v, 2, 4096, &x), so.dictionary_l = (int32_t)x, ++i;
        else if (strcmp(o, "--theta") == 0) ok = cli_parse_long("bench life", o, v, 1, 4096, &x), so.n_theta = (int32_t)x, ++i;
        else if (strcmp(o, "--seed") == 0) ok = cli_parse_long("bench life", o, v, 0, 1LL << 62, &x), so.seed = (uint64_t)x, ++i;
        else if (strcmp(o, "--grid") == 0) ok = cli_parse_grid("bench life", o, v, 3, 2048, so.grid), ++i;
        else if (strcmp(o, "--quick") == 0) quick = 1;
        else if (strcmp(o, "--no-products") == 0) no_products = 1;
        else if (strcmp(o, "--ref-variant") == 0 && v) {
            if (ns_life_variant_from_name(v, &B.ref) != NS_OK || B.ref == NS_LIFE_AUTO)
                return cli_usage_error("bench life", "--ref-variant takes a variant name (naive, voxel-voxel, ...)");
            ++i;
        }
        else if (strcmp(o, "--variants") == 0 && v) {
            char buf[256];
            snprintf(buf, sizeof buf, "%s", v);
            for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                ns_life_variant lv;
                if (ns_life_variant_from_name(tok, &lv) != NS_OK || lv == NS_LIFE_AUTO)
                    return cli_usage_error("bench life", "--variants takes variant names (voxel-voxel,voxel-sh,...): '%s'",
                                           tok);
                B.only |= 1u << lv;
            }
            ++i;
        }
        else if (strcmp(o, "--csv") == 0 && v) csv = v, ++i;
        else if (strcmp(o, "--plot") == 0 && v) plot = v, ++i;
        else if (strcmp(o, "--json") == 0) as_json = 1;
        else return cli_usage_error("bench life", "unknown option or missing value '%s'", o);
        if (!ok) return 2;
    }
    if (plot && !csv) return cli_usage_error("bench life", "--plot needs --csv FILE");
    cli_plot_check(plot);
    if (quick) {
        if (!fibers_given) fibers[0] = 5000, fibers[1] = 10000, n_fibers = 2;
        so.dictionary_l = 60;
        so.grid[0] = 32, so.grid[1] = 36, so.grid[2] = 32;
        so.mean_length = 30;
        if (!iters_given) B.iters = 20; /* --quick sets defaults, explicit options win */
        if (!repeats_given) B.repeats = 3;
    }
    if (ns_life_synth_options_check(&so) != NS_OK) return cli_usage_error("bench life", "%s", ns_last_error());
    if (B.naive_iters > B.iters) B.naive_iters = B.iters;
    if (B.ref_iters < 2 || B.ref_iters > B.iters) B.ref_iters = B.iters;
    char device[256] = "none";
    if (B.gpu != 0) {
        int n = 0;
        if (ns_cuda_device_count(&n) != NS_OK || n == 0) {
            if (B.gpu == 1) return cli_error("bench life: --backend cuda, but no usable GPU");
            B.gpu = 0;
        } else {
            B.gpu = 1;
            ns_device_info info;
            if (ns_cuda_device_info(0, &info) == NS_OK) snprintf(device, sizeof device, "%s", info.name);
            ns_status s = ns_cuda_copy_bandwidth(0, (size_t)1 << 30, 10, &B.copy_bw);
            if (s != NS_OK) {
                fprintf(stderr, "neurosolve bench life: copy bandwidth not measured (%s)\n", ns_last_error());
                B.copy_bw = -1;
            }
        }
    }
    if (!at) at = fibers[n_fibers - 1];
    FILE *log = as_json ? stderr : stdout;
    char date[32];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M", gmtime(&now));
    fprintf(log, "neurosolve bench life  %s UTC  device: %s  copy bandwidth: %.0f GB/s\n", date, device, B.copy_bw);
    int rc = 0;
    for (int i = 0; i < n_fibers && rc == 0; ++i) {
        so.n_fibers = (int32_t)fibers[i];
        ns_life_model_t *m = NULL;
        ns_status s = ns_life_synth(&so, &m);
        if (s != NS_OK) return cli_status_error("bench life: synth", s);
        fprintf(log, "model: %lld fibers, %d voxels, %lld coefficients, %d atoms\n", fibers[i],
                ns_life_model_n_voxels(m), (long long)ns_life_model_n_coeffs(m), ns_life_model_n_atoms(m));
        fflush(log);
        if (fibers[i] == at && !no_products) rc = products(&B, m, fibers[i]);
        if (rc == 0) rc = sweep_point(&B, m, fibers[i]);
        ns_life_model_destroy(m);
    }
    if (rc == 0) {
        if (as_json) write_json(&B, device);
        else print_tables(&B, stdout);
        if (csv) rc = write_csv(&B, csv);
        if (rc == 0 && plot) rc = cli_plot("bench/plot_life.py", csv, plot, NULL);
    }
    free(B.out.v);
    return rc;
}
