/* neurosolve life build / life report: LiFE from real data (docs/life_data.md).
 *   life build --dwi X.nii.gz --bvals X.bval --bvecs X.bvec --tracks T.trk|T.tck --out MODEL
 *   life report MODEL WEIGHTS [--pruned OUT.trk|.tck] [--csv FILE] [--plot FILE.png] */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

int life_build(int argc, char **argv);
int life_report(int argc, char **argv);

typedef struct bar {
    int tty;
    int pass;            /* the pass being timed */
    double t0;           /* its start (cli_now_s) */
} bar;

/* Progress on stderr, redrawn in place: pass, streamlines, percent of the
 * file, and the time left in this pass (each pass reads the whole file). */
static int show(int pass, int64_t n, uint64_t done, uint64_t total, void *ctx) {
    bar *p = ctx;
    const double now = cli_now_s();
    if (pass != p->pass) p->pass = pass, p->t0 = now;
    const double el = now - p->t0;
    const int width = 30;
    const double frac = total ? (double)done / (double)total : 1.0;
    char left[48] = "";
    if (frac > 0.0 && frac < 1.0) snprintf(left, sizeof left, ", about %.0f s left in it", el / frac * (1.0 - frac));
    char b[64];
    for (int i = 0; i < width; ++i) b[i] = i < (int)(frac * width) ? '#' : '.';
    b[width] = '\0';
    fprintf(stderr, "\r[%s] pass %d/2 (%s)  %lld streamlines  %5.1f %%%s   ", b, pass,
            pass == 1 ? "counting" : "filling", (long long)n, 100.0 * frac, left);
    fflush(stderr);
    return 0;
}

static int exists_path(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

int life_build(int argc, char **argv) {
    const char *cmd = "life build";
    const char *dwi = NULL, *bvals = NULL, *bvecs = NULL, *tracks = NULL, *out = NULL, *parcels = NULL;
    ns_life_build_options o;
    ns_life_build_options_init(&o);
    int quiet = 0, as_json = 0;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long x = 0;
        int ok = 1;
        if (strcmp(a, "--dwi") == 0 && v) dwi = v, ++i;
        else if (strcmp(a, "--bvals") == 0 && v) bvals = v, ++i;
        else if (strcmp(a, "--bvecs") == 0 && v) bvecs = v, ++i;
        else if (strcmp(a, "--tracks") == 0 && v) tracks = v, ++i;
        else if (strcmp(a, "--out") == 0 && v) out = v, ++i;
        else if (strcmp(a, "--parcels") == 0 && v) parcels = v, ++i;
        else if (strcmp(a, "--L") == 0) ok = cli_parse_long(cmd, a, v, 2, 4096, &x), o.dictionary_l = (int32_t)x, ++i;
        else if (strcmp(a, "--axial") == 0) ok = cli_parse_double(cmd, a, v, 0, 100, &o.axial_diffusivity), ++i;
        else if (strcmp(a, "--radial") == 0) ok = cli_parse_double(cmd, a, v, 0, 100, &o.radial_diffusivity), ++i;
        else if (strcmp(a, "--b0-threshold") == 0) ok = cli_parse_double(cmd, a, v, 0, 1e5, &o.b0_threshold), ++i;
        else if (strcmp(a, "--skip-bad") == 0) o.bad = NS_LIFE_BAD_SKIP;
        else if (strcmp(a, "--nodes") == 0 && v) {
            if (strcmp(v, "sum") == 0) o.nodes = NS_LIFE_NODES_SUM;
            else if (strcmp(v, "mean") == 0) o.nodes = NS_LIFE_NODES_MEAN;
            else return cli_usage_error(cmd, "--nodes takes sum (original LiFE, DIPY) or mean (ENCODE), not '%s'", v);
            ++i;
        }
        else if (strcmp(a, "--threads") == 0) ok = cli_parse_long(cmd, a, v, 1, 4096, &x), o.threads = (int32_t)x, ++i;
        else if (strcmp(a, "--quiet") == 0) quiet = 1;
        else if (strcmp(a, "--json") == 0) as_json = 1;
        else return cli_usage_error(cmd, "unknown option or missing value '%s'", a);
        if (!ok) return 2;
    }
    if (!dwi || !bvals || !bvecs || !tracks || !out)
        return cli_usage_error(cmd, "--dwi, --bvals, --bvecs, --tracks and --out are required");
    bar b = {isatty(fileno(stderr)), 0, 0.0};
    if (!quiet && !as_json && b.tty) o.progress = show, o.progress_context = &b;
    ns_life_built_t *r = NULL;
    ns_status s = ns_life_build(dwi, bvals, bvecs, tracks, &o, &r);
    if (o.progress) fputc('\n', stderr);
    if (s != NS_OK) return cli_status_error(cmd, s);
    const ns_life_build_stats *st = ns_life_built_stats(r);
    ns_life_model_t *m = ns_life_built_model(r);
    /* connection groups for life fit --group (docs/life.md, "Group sparsity"): computed before
     * anything is written, so a bad parcellation leaves no model behind */
    int32_t *groups = NULL, n_groups = 0;
    long long unconnected = 0;
    if (parcels) {
        int32_t *gs = NULL;
        int64_t n_sl = 0;
        s = ns_life_connection_groups(parcels, tracks, st->grid, &gs, &n_sl, &n_groups);
        const int32_t F = ns_life_model_n_fibers(m);
        const int64_t *sl = ns_life_built_streamline(r);
        if (s == NS_OK && !(groups = malloc((size_t)F * sizeof *groups))) {
            free(gs);
            ns_life_built_destroy(r);
            return cli_error("%s: out of memory (groups)", cmd);
        }
        for (int32_t f = 0; s == NS_OK && f < F; ++f) groups[f] = gs[sl[f]], unconnected += groups[f] < 0;
        free(gs);
        if (s != NS_OK) {
            free(groups);
            ns_life_built_destroy(r);
            return cli_status_error(cmd, s);
        }
    }
    int rc = cli_make_parent_dir(out);
    if (rc == 0 && (s = ns_life_built_save(r, out)) != NS_OK) rc = cli_status_error(cmd, s);
    char gpath[4096];
    snprintf(gpath, sizeof gpath, "%s/groups.npy", out);
    if (rc == 0 && groups) {
        ns_output *og = cli_output_open(gpath);
        if (!og) rc = 1;
        else if ((s = ns_life_groups_save(ns_output_temp_path(og), groups, ns_life_model_n_fibers(m))) != NS_OK)
            ns_output_abort(og), rc = cli_status_error(cmd, s);
        else rc = cli_output_commit(og);
    } else if (rc == 0 && exists_path(gpath) && unlink(gpath) != 0) { /* no stale groups of an earlier build */
        rc = cli_error("%s: %s: cannot remove the groups of an earlier build: %s", cmd, gpath, strerror(errno));
    }
    free(groups);
    if (rc != 0) {
        ns_life_built_destroy(r);
        return rc;
    }
    if (as_json) {
        cli_json j;
        json_begin(&j, stdout);
        json_string(&j, "model", out);
        json_int(&j, "streamlines", st->streamlines);
        json_int(&j, "fibers", st->fibers);
        json_int(&j, "streamlines_dropped", st->streamlines_dropped);
        json_int(&j, "nodes", st->nodes);
        json_int(&j, "nodes_outside", st->nodes_outside);
        json_int(&j, "nodes_zero_gradient", st->nodes_zero_gradient);
        json_int(&j, "n_b0", st->n_b0);
        json_string(&j, "nodes", o.nodes == NS_LIFE_NODES_MEAN ? "mean" : "sum");
        json_int(&j, "n_theta", ns_life_model_n_theta(m));
        json_int(&j, "n_atoms", ns_life_model_n_atoms(m));
        json_int(&j, "n_voxels", ns_life_model_n_voxels(m));
        json_int(&j, "n_coeffs", ns_life_model_n_coeffs(m));
        json_double(&j, "model_bytes", st->peak_model_bytes);
        json_double(&j, "seconds", st->seconds);
        if (parcels) {
            json_string(&j, "groups", gpath);
            json_int(&j, "n_groups", n_groups);
            json_int(&j, "fibers_without_connection", unconnected);
        }
        json_end(&j);
    } else {
        printf("%s: %lld streamlines -> %lld fibers (%lld dropped), %lld nodes (%lld outside, %lld without "
               "orientation)\n",
               out, (long long)st->streamlines, (long long)st->fibers, (long long)st->streamlines_dropped,
               (long long)st->nodes, (long long)st->nodes_outside, (long long)st->nodes_zero_gradient);
        printf("image %lld x %lld x %lld, %d b=0 + %d diffusion volumes; model: %d voxels, %d atoms, %lld "
               "coefficients (%.1f MB) in %.3f s\n",
               (long long)st->grid[0], (long long)st->grid[1], (long long)st->grid[2], (int)st->n_b0,
               (int)st->n_dwi, ns_life_model_n_voxels(m), ns_life_model_n_atoms(m),
               (long long)ns_life_model_n_coeffs(m), st->peak_model_bytes / 1e6, st->seconds);
        if (parcels)
            printf("groups: %d connections (endpoint parcel pairs of %s), %lld fibers with an end in label 0 "
                   "(a group each): %s\n", (int)n_groups, parcels, unconnected, gpath);
    }
    ns_life_built_destroy(r);
    return 0;
}

static int exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

static double median(const double *x, int64_t n) {
    if (n <= 0) return NAN;
    double *c = malloc((size_t)n * sizeof *c);
    if (!c) return NAN;
    memcpy(c, x, (size_t)n * sizeof *c);
    const double r = cli_median(c, (int)n);
    free(c);
    return r;
}

/* The residual per voxel before (the signal) and after (y - Mw) the fit, over the
 * directions and, DIPY's, over all volumes; obj = 0.5||y - Mw||^2, sig = ||y||^2. */
static void residuals(ns_life_model_t *m, const double *y, int32_t n_b0, double *before, double *after,
                      double *after_all, double *obj, double *sig) {
    const int32_t T = ns_life_model_n_theta(m), V = ns_life_model_n_voxels(m);
    const double *Y = ns_life_model_signal(m);
    for (int32_t v = 0; v < V; ++v) {
        double a = 0, b = 0;
        for (int32_t t = 0; t < T; ++t) {
            const double d = Y[(int64_t)v * T + t] - y[(int64_t)v * T + t];
            a += Y[(int64_t)v * T + t] * Y[(int64_t)v * T + t], b += d * d;
        }
        *sig += a, *obj += b;
        before[v] = sqrt(a / T), after[v] = sqrt(b / T), after_all[v] = sqrt(b / (T + n_b0));
    }
    *obj *= 0.5;
}

/* The RMSE CSV, opened into *out (committed or aborted by the caller). */
static int write_rmse_csv(const char *csv, const ns_life_built_t *r, int32_t V, const double *before,
                          const double *after, const double *after_all, ns_output **out) {
    *out = cli_output_open(csv);
    FILE *c = ns_output_stream(*out);
    if (!c) return 1;
    const int32_t *ijk = ns_life_built_voxel_ijk(r);
    const double *s0 = ns_life_built_s0(r);
    fprintf(c, "voxel,i,j,k,s0,rmse_before,rmse_after,rmse_after_all_volumes\n");
    for (int32_t v = 0; v < V; ++v)
        fprintf(c, "%d,%d,%d,%d,%.9g,%.9g,%.9g,%.9g\n", (int)v, ijk ? ijk[3 * v] : -1, ijk ? ijk[3 * v + 1] : -1,
                ijk ? ijk[3 * v + 2] : -1, s0 ? s0[v] : NAN, before[v], after[v], after_all[v]);
    /* committed by the caller, only if the pruned tractogram is written too; a
     * write error (a full disk) is seen here, before that is written */
    errno = 0;
    if (fflush(c) != 0 || ferror(c))
        return cli_error("%s: write failed: %s", csv, errno ? strerror(errno) : "write error");
    return 0;
}

/* What life report prints. */
typedef struct report {
    const char *dir, *csv, *pruned;
    double threshold;
    int32_t T, V, F, n_b0;
    double obj, sig;
    const double *before, *after, *after_all, *hist;
    int64_t nh, kept, written;
} report;

static void print_report(const report *q, int as_json) {
    const int32_t T = q->T, V = q->V, n_b0 = q->n_b0;
    const double obj = q->obj, sig = q->sig, *hist = q->hist;
    const int64_t nh = q->nh;
    const double mb = median(q->before, V), ma = median(q->after, V), mall = median(q->after_all, V);
    if (as_json) {
        cli_json j;
        json_begin(&j, stdout);
        json_string(&j, "model", q->dir);
        json_int(&j, "fibers", q->F);
        json_int(&j, "fibers_kept", q->kept);
        json_int(&j, "voxels", V);
        json_double(&j, "objective", obj);
        json_double(&j, "relative_residual", sig > 0 ? sqrt(2 * obj / sig) : NAN);
        json_double(&j, "median_rmse_before", mb);
        json_double(&j, "median_rmse_after", ma);
        json_double(&j, "median_rmse_after_all_volumes", mall);
        json_int(&j, "rmse_volumes", T + n_b0);
        if (hist) {
            json_int(&j, "updates", nh);
            json_double(&j, "objective_first", nh ? hist[0] : NAN);
            json_double(&j, "objective_last", nh ? hist[nh - 1] : NAN);
        }
        if (q->csv) json_string(&j, "csv", q->csv);
        if (q->pruned) json_string(&j, "pruned", q->pruned), json_int(&j, "pruned_streamlines", q->written);
        json_end(&j);
    } else {
        printf("%s: %lld of %d fibers kept (weight > %g), %d voxels\n", q->dir, (long long)q->kept, (int)q->F,
               q->threshold, (int)V);
        printf("objective 0.5||y - Mw||^2 = %.6e (signal 0.5||y||^2 = %.6e, relative residual %.4f)\n", obj,
               0.5 * sig, sig > 0 ? sqrt(2 * obj / sig) : NAN);
        double sb = 0, sa = 0;
        for (int32_t v = 0; v < V; ++v) sb += q->before[v], sa += q->after[v];
        printf("RMSE per voxel over the %d directions: median %.4g before -> %.4g after (mean %.4g -> %.4g)\n",
               (int)T, mb, ma, sb / V, sa / V);
        printf("RMSE per voxel over all %d volumes (DIPY's, b=0 predicted as S0): median %.4g after\n",
               (int)(T + n_b0), mall);
        if (hist && nh > 0) {
            printf("objective history: %lld updates, %.6e -> %.6e\n", (long long)nh, hist[0], hist[nh - 1]);
            const int64_t marks[] = {0, 1, 4, 9, 49, 99, 199, 499};
            printf("  update:objective");
            for (size_t k = 0; k < sizeof marks / sizeof *marks; ++k)
                if (marks[k] < nh) printf("  %lld:%.4e", (long long)marks[k] + 1, hist[marks[k]]);
            printf("\n");
        }
        if (q->csv) printf("per-voxel RMSE: %s\n", q->csv);
        if (q->pruned) printf("pruned tractogram: %s (%lld streamlines)\n", q->pruned, (long long)q->written);
    }
}

int life_report(int argc, char **argv) {
    const char *cmd = "life report";
    if (argc < 3 || argv[1][0] == '-' || argv[2][0] == '-') return cli_usage_error(cmd, "usage: life report MODEL WEIGHTS [options]");
    const char *dir = argv[1], *wpath = argv[2], *hist_path = NULL, *pruned = NULL, *tracks = NULL, *csv = NULL,
               *png = NULL;
    double threshold = 0.0;
    int as_json = 0;
    ns_life_options eo;
    ns_life_options_init(&eo);
    eo.backend = NS_BACKEND_CPU;
    for (int i = 3; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = 1;
        if (strcmp(a, "--history") == 0 && v) hist_path = v, ++i;
        else if (strcmp(a, "--pruned") == 0 && v) pruned = v, ++i;
        else if (strcmp(a, "--tracks") == 0 && v) tracks = v, ++i;
        else if (strcmp(a, "--csv") == 0 && v) csv = v, ++i;
        else if (strcmp(a, "--plot") == 0 && v) png = v, ++i;
        else if (strcmp(a, "--threshold") == 0) ok = cli_parse_double(cmd, a, v, 0, 1e300, &threshold), ++i;
        else if (strcmp(a, "--backend") == 0 && v) {
            const int bad = cli_parse_backend(cmd, a, v, &eo.backend);
            if (bad) return bad;
            ++i;
        } else if (strcmp(a, "--json") == 0) as_json = 1;
        else return cli_usage_error(cmd, "unknown option or missing value '%s'", a);
        if (!ok) return 2;
    }
    char hbuf[4096], cbuf[4096];
    if (!hist_path) {
        const size_t n = strlen(wpath);
        snprintf(hbuf, sizeof hbuf, "%.*s_history.npy", (int)(n > 4 && strcmp(wpath + n - 4, ".npy") == 0 ? n - 4 : n), wpath);
        hist_path = exists(hbuf) ? hbuf : NULL;
    }
    cli_plot_check(png);
    if (png && !csv) {
        const size_t n = strlen(png);
        snprintf(cbuf, sizeof cbuf, "%.*s_rmse.csv", (int)(n > 4 && strcmp(png + n - 4, ".png") == 0 ? n - 4 : n), png);
        csv = cbuf;
    }
    ns_life_built_t *r = NULL;
    ns_status s = ns_life_built_load(dir, &r);
    if (s != NS_OK) return cli_status_error(cmd, s);
    ns_life_model_t *m = ns_life_built_model(r);
    const int32_t T = ns_life_model_n_theta(m), V = ns_life_model_n_voxels(m), F = ns_life_model_n_fibers(m);
    double *w = NULL, *hist = NULL, *y = NULL, *before = NULL, *after = NULL, *after_all = NULL;
    /* DIPY's RMSE is over every volume: the b=0 volumes are predicted as S0 (their mean), so with
     * one b=0 volume they add no error, only to the count (docs/life_data.md) */
    const int32_t n_b0 = ns_life_built_stats(r)->n_b0 > 0 ? ns_life_built_stats(r)->n_b0 : 0;
    int64_t nw = 0, nh = 0;
    ns_life_engine_t *e = NULL;
    int rc = 0;
    if ((s = ns_life_vector_load(wpath, &w, &nw)) != NS_OK) rc = cli_status_error(cmd, s);
    else if (nw != F) rc = cli_error("%s has %lld weights but the model %s has %d fibers", wpath, (long long)nw, dir, (int)F);
    for (int64_t f = 0; rc == 0 && f < nw; ++f) /* finite on load; LiFE weights are also >= 0 */
        if (!(w[f] >= 0.0)) rc = cli_error("%s: weight %lld = %g is negative: LiFE weights are >= 0", wpath, (long long)f, w[f]);
    if (rc == 0 && hist_path && (s = ns_life_vector_load(hist_path, &hist, &nh)) != NS_OK) rc = cli_status_error(cmd, s);
    if (rc == 0 && (s = ns_life_engine_create(m, &eo, &e)) != NS_OK)
        rc = cli_error("%s: %s: preparing the products: %s: %s", cmd, dir, ns_status_string(s), ns_last_error());
    if (rc == 0) {
        y = malloc((size_t)T * V * sizeof *y);
        before = malloc((size_t)V * sizeof *before);
        after = malloc((size_t)V * sizeof *after);
        after_all = malloc((size_t)V * sizeof *after_all);
        if (!y || !before || !after || !after_all) rc = cli_error("out of memory");
    }
    if (rc == 0 && (s = ns_life_mw(e, w, y)) != NS_OK)
        rc = cli_error("%s: %s with the weights of %s: %s: %s", cmd, dir, wpath, ns_status_string(s), ns_last_error());
    double obj = 0, sig = 0;
    ns_output *csv_out = NULL; /* the RMSE CSV: appears only when the whole report succeeds */
    int64_t kept = 0;
    uint8_t *keep = NULL;
    if (rc == 0) {
        residuals(m, y, n_b0, before, after, after_all, &obj, &sig);
        const int64_t ns = ns_life_built_n_streamlines(r) > 0 ? ns_life_built_n_streamlines(r) : F;
        keep = calloc((size_t)(ns > 0 ? ns : 1), 1);
        const int64_t *map = ns_life_built_streamline(r);
        if (!keep) rc = cli_error("out of memory");
        for (int32_t f = 0; rc == 0 && f < F; ++f)
            if (w[f] > threshold) {
                ++kept;
                const int64_t idx = map ? map[f] : f;
                if (idx >= 0 && idx < ns) keep[idx] = 1;
            }
        if (rc == 0 && csv) rc = write_rmse_csv(csv, r, V, before, after, after_all, &csv_out);
        int64_t written = -1;
        if (rc == 0 && pruned) {
            const char *src = tracks ? tracks : ns_life_built_tracks_path(r);
            if (!src[0]) rc = cli_error("%s records no source tractogram: give --tracks", dir);
            else if (cli_make_parent_dir(pruned)) rc = 1;
            else if ((s = ns_tracts_write_subset(src, pruned, keep, ns, &written)) != NS_OK) rc = cli_status_error(cmd, s);
        }
        if (csv_out && rc == 0) rc = cli_output_commit(csv_out);
        else ns_output_abort(csv_out);
        csv_out = NULL;
        if (rc == 0) {
            const report q = {dir, csv, pruned, threshold, T, V, F, n_b0, obj, sig,
                              before, after, after_all, hist, nh, kept, written};
            print_report(&q, as_json);
        }
    }
    if (rc == 0 && png) {
        const char *extra[] = {"--weights", wpath, hist_path ? "--history" : NULL, hist_path, NULL};
        rc = cli_plot("bench/plot_life_report.py", csv, png, extra);
        if (rc == 0 && !as_json && cli_plot_available()) printf("plot: %s\n", png);
    }
    free(keep);
    free(w), free(hist), free(y), free(before), free(after), free(after_all);
    ns_life_engine_destroy(e);
    ns_life_built_destroy(r);
    return rc;
}
