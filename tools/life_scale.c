/* neurosolve bench life-scale: LiFE at whole-brain scale (issue 21, part 4).
 * For each streamline count: a synthetic model over a brain-sized grid
 * (default 91 x 109 x 91: a 2 mm MNI brain) is generated in memory (nothing
 * written to disk), then fitted with fixed variants (voxel-voxel: one sorted
 * copy) on the GPU (Phi in device memory) and/or on the CPU, with the time
 * of each phase, the process's peak resident memory after it, the device
 * bytes the engine needs, and the weights of the two backends compared when
 * both ran the same number of updates. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cli.h"
#include "neurosolve/neurosolve.h"

#define MAX_LIST 8

static void help(void) {
    printf("usage: neurosolve bench life-scale [options]\n"
           "  --fibers N,...     streamline counts (default 1000000)\n"
           "  --grid X,Y,Z       voxel grid (default 91,109,91: a 2 mm whole brain)\n"
           "  --length L         mean streamline length [voxels] (default 60: 120 mm at 2 mm)\n"
           "  --iters N          SBBNNLS maxit on the GPU (default 100; all run: tolerances 0)\n"
           "  --cpu-iters N      maxit on the CPU (default 5; 0 skips the CPU)\n"
           "  --backend B        cpu, cuda or all (default all: cuda when a GPU is usable)\n"
           "  --variant V        product variant of both products (default voxel-voxel; the CPU\n"
           "                     runs voxel-voxel for the CUDA-only reduced-precision ones)\n"
           "  --threads T        CPU threads (default: OpenMP's)\n"
           "  --seed S           (1)\n"
           "  --csv FILE         one row per model and backend\n");
}

static double peak_rss_gb(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss / (1024.0 * 1024.0); /* kB on Linux */
}

typedef struct result {
    double engine_s, fit_s, ms_update, objective, rss_gb;
    int updates;
} result;

static int fit(ns_life_model_t *m, ns_backend b, ns_life_variant v, int threads, int iters, double *w,
               result *r) {
    ns_life_options o;
    ns_life_options_init(&o);
    o.backend = b;
    o.mw_variant = o.mty_variant = v;
    o.threads = threads;
    ns_life_engine_t *e = NULL;
    const double t0 = 1e3 * cli_now_s();
    ns_status s = ns_life_engine_create(m, &o, &e);
    /* engine creation: the sorted copy when not built yet (synth's Y = M w builds it) and, on
     * the GPU, the dictionary's upload; Phi goes up at the first product, inside the fit's first
     * gradient (fit s includes it, ms/update does not) */
    r->engine_s = (1e3 * cli_now_s() - t0) * 1e-3;
    if (s != NS_OK) return cli_status_error(b == NS_BACKEND_CUDA ? "life-scale gpu engine" : "life-scale cpu engine", s);
    ns_life_fit_options fo;
    ns_life_fit_options_init(&fo);
    fo.max_iterations = iters;
    fo.tol_gradient = fo.tol_objective = 0.0;
    fo.rtol_gradient = fo.rtol_objective = 0.0; /* the updates asked for */
    ns_life_fit_result res;
    s = ns_life_fit(e, &fo, w, NULL, &res);
    ns_life_engine_destroy(e);
    if (s != NS_OK) return cli_status_error("life-scale fit", s);
    r->fit_s = res.seconds;
    r->updates = res.updates;
    r->ms_update = res.updates > 0 ? (res.seconds - res.setup_seconds) * 1e3 / res.updates : 0.0;
    r->objective = res.objective;
    r->rss_gb = peak_rss_gb();
    return 0;
}

int bench_life_scale(int argc, char **argv) {
    long long fibers[MAX_LIST] = {1000000}, x = 0;
    int n_fibers = 1, iters = 100, cpu_iters = 5, threads = 0, want_cpu = 1, want_gpu = 1;
    ns_life_variant v = NS_LIFE_VOXEL_VOXEL;
    const char *csv = NULL;
    ns_life_synth_options so;
    ns_life_synth_options_init(&so);
    so.dictionary_l = 360; /* the paper's models (ENCODE's L): the benchmark tables are on them */
    so.grid[0] = 91, so.grid[1] = 109, so.grid[2] = 91;
    so.mean_length = 60.0;
    for (int i = 1; i < argc; ++i) {
        const char *o = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = 1;
        if (strcmp(o, "--help") == 0) { help(); return 0; }
        else if (strcmp(o, "--fibers") == 0) ok = cli_parse_long_list("bench life-scale", o, val, 1, INT32_MAX, fibers, MAX_LIST, &n_fibers), ++i;
        else if (strcmp(o, "--iters") == 0) ok = cli_parse_long("bench life-scale", o, val, 2, 1000000, &x), iters = (int)x, ++i;
        else if (strcmp(o, "--cpu-iters") == 0) ok = cli_parse_long("bench life-scale", o, val, 0, 1000000, &x), cpu_iters = (int)x, ++i;
        else if (strcmp(o, "--threads") == 0) ok = cli_parse_long("bench life-scale", o, val, 1, 4096, &x), threads = (int)x, ++i;
        else if (strcmp(o, "--length") == 0) ok = cli_parse_double("bench life-scale", o, val, 0.5, 1e6, &so.mean_length), ++i;
        else if (strcmp(o, "--seed") == 0) ok = cli_parse_long("bench life-scale", o, val, 0, 1LL << 62, &x), so.seed = (uint64_t)x, ++i;
        else if (strcmp(o, "--grid") == 0) ok = cli_parse_grid("bench life-scale", o, val, 2, 4096, so.grid), ++i;
        else if (strcmp(o, "--backend") == 0 && val) {
            if (strcmp(val, "cpu") == 0) want_gpu = 0;
            else if (strcmp(val, "cuda") == 0) want_cpu = 0;
            else if (strcmp(val, "all") != 0) return cli_usage_error("bench life-scale", "--backend takes cpu, cuda or all");
            ++i;
        } else if (strcmp(o, "--variant") == 0 && val) {
            if (ns_life_variant_from_name(val, &v) != NS_OK || v == NS_LIFE_AUTO)
                return cli_usage_error("bench life-scale", "--variant takes a variant name (voxel-voxel, ...)");
            ++i;
        } else if (strcmp(o, "--csv") == 0 && val) csv = val, ++i;
        else return cli_usage_error("bench life-scale", "unknown option '%s'", o);
        if (!ok) return 2;
    }
    if (cpu_iters < 2) want_cpu = 0;
    int n_dev = 0;
    if (want_gpu && (ns_cuda_device_count(&n_dev) != NS_OK || n_dev == 0)) {
        want_gpu = 0;
        printf("no usable GPU: CPU rows only\n");
    }
    FILE *f = NULL;
    if (csv && !(f = fopen(csv, "w"))) return cli_error("bench life-scale: cannot write %s", csv);
    if (f) fprintf(f, "fibers,voxels,coeffs,phi_gb,backend,variant,synth_s,engine_s,fit_s,updates,ms_update,"
                      "total_s,peak_rss_gb,device_gb,objective,max_rel_diff\n");
    printf("%-9s %-8s %-9s %-7s %-5s %8s %9s %8s %8s %10s %8s %9s %9s %12s %9s\n", "fibers", "voxels", "coeffs",
           "Phi GB", "back", "synth s", "engine s", "fit s", "updates", "ms/update", "total s", "RSS GB",
           "device GB", "objective", "rel diff");
    int rc = 0;
    for (int k = 0; k < n_fibers && rc == 0; ++k) {
        so.n_fibers = (int32_t)fibers[k];
        ns_life_model_t *m = NULL;
        const double t0 = 1e3 * cli_now_s();
        ns_status s = ns_life_synth(&so, &m);
        const double synth_s = (1e3 * cli_now_s() - t0) * 1e-3;
        if (s != NS_OK) return cli_status_error("life-scale synth", s);
        const int64_t F = ns_life_model_n_fibers(m), C = ns_life_model_n_coeffs(m);
        const int32_t V = ns_life_model_n_voxels(m), T = ns_life_model_n_theta(m), A = ns_life_model_n_atoms(m);
        const double phi_gb = C * 20.0 / 1e9;
        /* What the CUDA engine holds with one sorted copy (engine_cuda.c's setup): D, 5 voxel and 8
         * fiber vectors, Phi (20 bytes per coefficient) and the voxel offsets. */
        const double tp = (T + 31) / 32 * 32;
        const double dev_gb = (tp * A * 8 + 5 * tp * V * 8 + 8.0 * F * 8 + C * 20.0 + (V + 1) * 8.0) / 1e9;
        double *wg = malloc((size_t)F * 8), *wc = malloc((size_t)F * 8);
        if (!wg || !wc) return cli_error("bench life-scale: out of memory");
        result g = {0}, c = {0};
        int have_g = 0;
        for (int b = 0; b < 2 && rc == 0; ++b) {
            const int gpu = b == 0;
            if ((gpu && !want_gpu) || (!gpu && !want_cpu)) continue;
            result *r = gpu ? &g : &c;
            /* the reduced-precision dictionaries are CUDA only: the CPU's float64 fit is their reference */
            const ns_life_variant vb =
                !gpu && (int)v >= NS_LIFE_VARIANT_COUNT ? NS_LIFE_VOXEL_VOXEL : v;
            rc = fit(m, gpu ? NS_BACKEND_CUDA : NS_BACKEND_CPU, vb, threads, gpu ? iters : cpu_iters, gpu ? wg : wc, r);
            if (rc) break;
            have_g |= gpu;
            double diff = -1.0;
            if (!gpu && have_g && cpu_iters == iters) { /* same updates: the weights must agree */
                double num = 0.0, den = 0.0;
                for (int64_t i = 0; i < F; ++i) {
                    num = fmax(num, fabs(wc[i] - wg[i]));
                    den = fmax(den, fabs(wg[i]));
                }
                diff = den > 0 ? num / den : num;
            }
            const double total = synth_s + r->engine_s + r->fit_s;
            printf("%-9lld %-8d %-9.3g %-7.2f %-5s %8.2f %9.2f %8.2f %8d %10.2f %8.2f %9.2f %9s %12.6e %9s\n",
                   fibers[k], (int)V, (double)C, phi_gb, gpu ? "cuda" : "cpu", synth_s, r->engine_s, r->fit_s,
                   r->updates, r->ms_update, total, r->rss_gb, gpu ? "" : "-", r->objective, "");
            if (gpu) printf("          device memory the engine needs: %.2f GB\n", dev_gb);
            if (diff >= 0) printf("          CPU vs GPU weights after %d updates: max relative difference %.2e\n",
                                  r->updates, diff);
            if (f)
                fprintf(f, "%lld,%d,%lld,%.4f,%s,%s,%.4f,%.4f,%.4f,%d,%.4f,%.4f,%.4f,%.4f,%.10e,%.3e\n", fibers[k],
                        (int)V, (long long)C, phi_gb, gpu ? "cuda" : "cpu", ns_life_variant_name(gpu ? v : vb), synth_s,
                        r->engine_s, r->fit_s, r->updates, r->ms_update, total, r->rss_gb, gpu ? dev_gb : 0.0,
                        r->objective, diff);
        }
        free(wg), free(wc);
        ns_life_model_destroy(m);
    }
    if (f) fclose(f);
    return rc;
}
