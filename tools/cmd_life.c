/* neurosolve life: LiFE connectome pruning.
 *   life synth DIR   write a synthetic model directory (docs/life.md)
 *   life fit MODEL   SBBNNLS; writes the weights and the objective history
 *   life info MODEL  sizes and checks of a model directory
 * The benchmark (neurosolve bench life) is in life_bench.c. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* The usage of each subcommand, and of all (`life --help`). */
static const char *const usage_synth =
    "usage: neurosolve life synth DIR [options]   write a synthetic model\n";
static const char *const usage_fit =
    "       neurosolve life fit MODEL [options]   fit fiber weights (SBBNNLS)\n";
static const char *const usage_info =
    "       neurosolve life info MODEL            sizes of a model directory\n";
static const char *const usage_build =
    "       neurosolve life build --dwi X.nii.gz --bvals X.bval --bvecs X.bvec --tracks T.trk|T.tck\n"
    "                             --out MODEL [--L 180] [--axial 1] [--radial 0] [--b0-threshold 50] [--nodes sum|mean]\n"
    "                             [--parcels LABELS.nii] [--skip-bad] [--threads T] [--quiet] [--json]   model from real data\n"
    "                             (--parcels: MODEL/groups.npy, the connection of each fiber's end points\n"
    "                             in an integer label image of the DWI's grid, for life fit --group)\n";
int life_synth_cohort(int argc, char **argv); /* life synth DIR --cohort N: tools/life_cohort_synth.c */
static const char *const usage_report =
    "       neurosolve life report MODEL WEIGHTS [--history H] [--pruned OUT.trk|.tck] [--tracks T]\n"
    "                             [--csv FILE] [--plot FILE.png] [--threshold 0] [--json]\n"
    "                             RMSE per voxel, fibers kept, pruned tractogram (docs/life_data.md)\n"
    "       neurosolve life cohort DERIV_DIR --out OUT_DIR [options]   build, fit and report per subject of\n"
    "                             a BIDS derivatives folder, resumable (life cohort --help)\n\n";
static const char *const options_synth =
    "synth options (defaults: the paper's structure, docs/life.md):\n"
    "  --fibers N         streamlines (50000)\n"
    "  --theta N          gradient directions (96)\n"
    "  --L N              dictionary steps: (L-1)L+1 atoms (180 -> 32,221, as life build)\n"
    "  --b B              b-value [s/mm^2] (2000)\n"
    "  --grid X,Y,Z       voxel grid (72,88,72: about 150,000-250,000 voxels touched)\n"
    "  --length L         mean streamline length [voxels] (90)\n"
    "  --curvature C      random turn per 0.5-voxel step [rad] (0.05)\n"
    "  --active F         fraction of fibers with a non-zero true weight (0.5)\n"
    "  --noise S          Gaussian noise sd relative to the signal rms (0)\n"
    "  --seed S           (1)\n"
    "  --phantom          a ground-truth phantom instead (docs/life.md, \"Pruning quality\"):\n"
    "                     DIR/dwi.nii, dwi.bval, dwi.bvec, tracks.tck, labels.npy, kinds.npy,\n"
    "                     bundles.npy; options --streamlines N (10000) --false F (0.3)\n"
    "                     --snr S (20; 0: none) --bundles B (12) --grid N (48) --theta N (30)\n"
    "                     --b B (2000) --seed S (1)\n"
    "  --cohort N         a BIDS derivatives folder of N subjects instead (docs/life.md, \"Studies:\n"
    "                     life cohort\"): phantoms and, last, the bundled real case; options\n"
    "                     --streamlines N (2000) --grid N (32) --theta N (30) --snr S (20) --seed S (1)\n\n";
static const char *const options_fit =
    "fit options:\n"
    "  --iters N          ENCODE's maxit (500): at most N-1 updates\n"
    "  --backend B        cpu, cuda or auto (auto)\n"
    "  --out FILE         weights as a float64 NPY vector (weights.npy)\n"
    "  --history FILE     objective after each update (default: OUT with _history)\n"
    "  --lambda L         ReAl-LiFE L1 weight (0)\n"
    "  --lambda auto      a regularisation path, the value chosen by cross-validation (docs/life.md,\n"
    "                     \"Choosing lambda\"): 8 values of --penalty's weight from its maximum down,\n"
    "                     warm-started; writes OUT (the chosen value's weights), OUT_path.csv and\n"
    "                     the sidecar OUT.json (the curve and the choice), and OUT_path.png with\n"
    "                     matplotlib (without it a warning)\n"
    "  --lambda A,B,...   the same over the values given (in --penalty's units)\n"
    "  --lambda-path N    --lambda auto with N values (>= 2)\n"
    "  --penalty P        the weight the path varies: group (G, needs groups; the default when\n"
    "                     MODEL/groups.npy or --groups exists), ridge (R; the default otherwise) or\n"
    "                     lambda (L1); the other weights (--ridge, --lambda L) stay fixed\n"
    "  --folds K          cross-validation folds of voxels (5; 0: none, the smallest value is kept)\n"
    "  --cv-rule R        1se-gain (default: the largest value whose held-out RMSE is within one\n"
    "                     standard error or 5 % of the gain over the zero prediction, whichever is\n"
    "                     larger, of the least; for L1 one standard error), 1se (within one\n"
    "                     standard error) or min (the least)\n"
    "  --cv-refit         judge each value by a refit without the penalty on the fibers it keeps\n"
    "                     (relaxed): the criterion compares supports, not shrinkage\n"
    "  --plot FILE.png    with a path: where to draw its curve (OUT_path.png)\n"
    "  --ridge R          Tikhonov weight relative to ||M 1||^2 / fibers (0; 0.2 for pruning\n"
    "                     without a parcellation, docs/life.md)\n"
    "  --group G          COMMIT2-style group sparsity: + G x (median group gradient norm at 0) x\n"
    "                     sum_g sqrt(|g|) ||w_g|| over connection groups, solved by FISTA\n"
    "                     (0: off; G = 1 ranks best on the phantoms, AUC 0.98-0.99, docs/life.md)\n"
    "  --groups FILE      group of each fiber (int NPY, -1: none; default MODEL/groups.npy from\n"
    "                     life build --parcels); one entry per fiber or per tractogram streamline\n"
    "  --preconditioner   ENCODE's diagonal preconditioner (not with --group)\n"
    "  --tolg T --tolo T  ENCODE's absolute stopping tolerances (1e-5 each; 0 disables)\n"
    "  --rtolg R          stop when the projected gradient < R x its start (1e-3; 0 disables)\n"
    "  --rtolo R          stop when the objective changes by < R x objective (1e-5; 0 disables)\n"
    "  --mw V --mty V     product variants (auto: timed; naive, naive-atom, naive-voxel,\n"
    "                     coeff-atom, coeff-voxel, atom-atom, voxel-voxel; CUDA only,\n"
    "                     reduced-precision dictionary: voxel-f32d, voxel-f16d, voxel-lr16d,\n"
    "                     voxel-sh: columns computed from the atoms' orientations)\n"
    "  --threads T        CPU threads (OpenMP's default)\n"
    "  --state FILE       where SIGINT or SIGTERM saves the fit's resumable state (default:\n"
    "                     OUT with _state.bin); no weights are written then\n"
    "  --resume FILE      continue from a saved state (same model, --lambda, --ridge,\n"
    "                     --preconditioner, --group and groups; on the CPU with the same\n"
    "                     --threads the weights are the uninterrupted fit's bit for bit)\n"
    "  --quiet            no progress bar\n"
    "  --json             one JSON document on stdout\n";

/* `life --help` (sub NULL): every subcommand; `life SUB --help`: that one's. */
static void help(const char *sub) {
    if (!sub) {
        printf("%s%s%s%s%s%s%s", usage_synth, usage_fit, usage_info, usage_build, usage_report, options_synth,
               options_fit);
        return;
    }
    const char *u = !strcmp(sub, "synth") ? usage_synth : !strcmp(sub, "fit") ? usage_fit
                  : !strcmp(sub, "info") ? usage_info : !strcmp(sub, "build") ? usage_build : usage_report;
    printf("usage: %s", strstr(u, "neurosolve life"));
    if (!strcmp(sub, "synth")) printf("\n%s", options_synth);
    if (!strcmp(sub, "fit")) printf("\n%s", options_fit);
}

/* life synth DIR --phantom: the ground-truth phantom (image, gradients, tractogram, truth). */
static int synth_phantom(int argc, char **argv) {
    const char *cmd = "life synth --phantom";
    ns_life_phantom_options o;
    ns_life_phantom_options_init(&o);
    for (int i = 2; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long x = 0;
        int ok = 1;
        if (strcmp(a, "--phantom") == 0) continue;
        else if (strcmp(a, "--streamlines") == 0) ok = cli_parse_long(cmd, a, v, 2, 100000000, &x), o.n_streamlines = (int32_t)x, ++i;
        else if (strcmp(a, "--false") == 0) ok = cli_parse_double(cmd, a, v, 0, 1, &o.false_fraction), ++i;
        else if (strcmp(a, "--snr") == 0) ok = cli_parse_double(cmd, a, v, 0, 1e12, &o.snr), ++i;
        else if (strcmp(a, "--bundles") == 0) ok = cli_parse_long(cmd, a, v, 2, 10000, &x), o.n_bundles = (int32_t)x, ++i;
        else if (strcmp(a, "--grid") == 0) ok = cli_parse_long(cmd, a, v, 24, 512, &x), o.grid = (int32_t)x, ++i;
        else if (strcmp(a, "--theta") == 0) ok = cli_parse_long(cmd, a, v, 2, 4096, &x), o.n_directions = (int32_t)x, ++i;
        else if (strcmp(a, "--b") == 0) ok = cli_parse_double(cmd, a, v, 1, 1e5, &o.b_value), ++i;
        else if (strcmp(a, "--seed") == 0) ok = cli_parse_long(cmd, a, v, 0, 1LL << 62, &x), o.seed = (uint64_t)x, ++i;
        else return cli_usage_error(cmd, "unknown option or missing value '%s'", a);
        if (!ok) return 2;
    }
    ns_life_phantom_stats ps;
    if (cli_make_parent_dir(argv[1])) return 1;
    ns_status s = ns_life_phantom_write(&o, argv[1], &ps);
    if (s != NS_OK) return cli_status_error(cmd, s);
    printf("%s: %lld streamlines (%lld true in %d bundles, %lld bridges, %lld random curves), %lld nodes, "
           "%d^3 voxels of 2 mm, 2 b=0 + %d directions at b = %g, SNR %g\n",
           argv[1], (long long)ps.n_streamlines, (long long)ps.n_true, (int)ps.n_bundles, (long long)ps.n_bridges,
           (long long)ps.n_random, (long long)ps.n_nodes, (int)o.grid, (int)o.n_directions, o.b_value, o.snr);
    return 0;
}

static int synth(int argc, char **argv) {
    if (argc < 2 || argv[1][0] == '-') return cli_usage_error("life synth", "missing output directory");
    for (int i = 2; i < argc; ++i)
        if (strcmp(argv[i], "--phantom") == 0) return synth_phantom(argc, argv);
        else if (strcmp(argv[i], "--cohort") == 0) return life_synth_cohort(argc, argv);
    const char *dir = argv[1];
    ns_life_synth_options o;
    ns_life_synth_options_init(&o);
    int as_json = 0;
    for (int i = 2; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long x = 0;
        double d = 0;
        int ok = 1;
        if (strcmp(a, "--fibers") == 0) ok = cli_parse_long("life synth", a, v, 1, INT32_MAX, &x), o.n_fibers = (int32_t)x, ++i;
        else if (strcmp(a, "--theta") == 0) ok = cli_parse_long("life synth", a, v, 1, 4096, &x), o.n_theta = (int32_t)x, ++i;
        else if (strcmp(a, "--L") == 0) ok = cli_parse_long("life synth", a, v, 2, 4096, &x), o.dictionary_l = (int32_t)x, ++i;
        else if (strcmp(a, "--b") == 0) ok = cli_parse_double("life synth", a, v, 0, 1e5, &d), o.b_value = d, ++i;
        else if (strcmp(a, "--length") == 0) ok = cli_parse_double("life synth", a, v, 0.5, 1e6, &d), o.mean_length = d, ++i;
        else if (strcmp(a, "--curvature") == 0) ok = cli_parse_double("life synth", a, v, 0, 10, &d), o.curvature = d, ++i;
        else if (strcmp(a, "--active") == 0) ok = cli_parse_double("life synth", a, v, 0, 1, &d), o.active_fraction = d, ++i;
        else if (strcmp(a, "--noise") == 0) ok = cli_parse_double("life synth", a, v, 0, 1e6, &d), o.noise = d, ++i;
        else if (strcmp(a, "--seed") == 0) ok = cli_parse_long("life synth", a, v, 0, 1LL << 62, &x), o.seed = (uint64_t)x, ++i;
        else if (strcmp(a, "--grid") == 0) ok = cli_parse_grid("life synth", a, v, 3, 2048, o.grid), ++i;
        else if (strcmp(a, "--json") == 0) as_json = 1;
        else return cli_usage_error("life synth", "unknown option or missing value '%s'", a);
        if (!ok) return 2;
    }
    if (ns_life_synth_options_check(&o) != NS_OK) /* out-of-range combinations: usage errors */
        return cli_usage_error("life synth", "%s", ns_last_error());
    ns_life_model_t *m = NULL;
    ns_status s = ns_life_synth(&o, &m);
    if (s != NS_OK) return cli_status_error("life synth", s);
    if (cli_make_parent_dir(dir)) {
        ns_life_model_destroy(m);
        return 1;
    }
    s = ns_life_model_save(m, dir);
    if (s != NS_OK) {
        ns_life_model_destroy(m);
        return cli_status_error("life synth", s);
    }
    if (as_json) {
        cli_json j;
        json_begin(&j, stdout);
        json_string(&j, "model", dir);
        json_int(&j, "n_theta", ns_life_model_n_theta(m));
        json_int(&j, "n_atoms", ns_life_model_n_atoms(m));
        json_int(&j, "n_voxels", ns_life_model_n_voxels(m));
        json_int(&j, "n_fibers", ns_life_model_n_fibers(m));
        json_int(&j, "n_coeffs", ns_life_model_n_coeffs(m));
        json_end(&j);
    } else {
        printf("%s: %d directions, %d atoms, %d voxels, %d fibers, %lld coefficients (%.1f MB of Phi)\n",
               dir, ns_life_model_n_theta(m), ns_life_model_n_atoms(m), ns_life_model_n_voxels(m),
               ns_life_model_n_fibers(m), (long long)ns_life_model_n_coeffs(m),
               ns_life_model_n_coeffs(m) * 20.0 / 1e6);
    }
    ns_life_model_destroy(m);
    return 0;
}

static int info(int argc, char **argv) {
    if (argc < 2) return cli_usage_error("life info", "missing model directory");
    ns_life_model_t *m = NULL;
    ns_status s = ns_life_model_load(argv[1], &m);
    if (s != NS_OK) return cli_status_error("life info", s);
    printf("%s: %d directions, %d atoms, %d voxels, %d fibers, %lld coefficients, true weights: %s\n",
           argv[1], ns_life_model_n_theta(m), ns_life_model_n_atoms(m), ns_life_model_n_voxels(m),
           ns_life_model_n_fibers(m), (long long)ns_life_model_n_coeffs(m),
           ns_life_model_true_weights(m) ? "yes" : "no");
    ns_life_model_destroy(m);
    return 0;
}

typedef struct progress {
    int32_t total;
    int draw;
    double start; /* cli_now_s */
} progress;

/* After each update: stop on SIGINT/SIGTERM (the fit keeps its state), and with `draw` a
 * one-line bar on stderr, redrawn in place: iteration, objective, non-zero weights, and the
 * time left at most (the fit may converge before --iters). */
static int show(int32_t it, double f, int64_t nnz, void *ctx) {
    const progress *p = ctx;
    if (cli_interrupted()) return 1;
    if (!p->draw) return 0;
    const double el = cli_now_s() - p->start;
    char left[48] = "";
    if (it > 0 && p->total > it) snprintf(left, sizeof left, "  at most %.0f s left", el / it * (p->total - it));
    const int width = 30;
    const int done = p->total > 0 ? (int)((double)it * width / p->total) : width;
    char bar[64];
    for (int i = 0; i < width; ++i) bar[i] = i < done ? '#' : '.';
    bar[width] = '\0';
    fprintf(stderr, "\r[%s] iteration %d/%d  objective %.6e  non-zero weights %lld%s   ", bar, (int)it,
            (int)p->total, f, (long long)nnz, left);
    fflush(stderr);
    return cli_interrupted();
}

/* The fit's groups: FILE (or MODEL/groups.npy), one id per model fiber, or one per
 * streamline of the tractogram the model was built from (mapped through
 * MODEL/streamlines.npy when streamlines were dropped). */
static int load_groups(const char *dir, const char *path, ns_life_model_t *m, int32_t **out) {
    char def[4096];
    if (!path) {
        snprintf(def, sizeof def, "%s/groups.npy", dir);
        path = def;
    }
    int32_t *g = NULL;
    int64_t n = 0;
    ns_status s = ns_life_groups_load(path, &g, &n);
    if (s != NS_OK) {
        if (path == def)
            return cli_error("life fit: --group needs the fibers' groups: %s (%s); make it with life build --parcels "
                             "or give --groups FILE", ns_last_error(), ns_status_string(s));
        return cli_status_error("life fit: --groups", s);
    }
    const int32_t F = ns_life_model_n_fibers(m);
    if (n == F) {
        *out = g;
        return 0;
    }
    ns_life_built_t *b = NULL;
    int64_t n_sl = -1;
    const int64_t *sl = NULL;
    if (ns_life_built_load(dir, &b) == NS_OK) n_sl = ns_life_built_n_streamlines(b), sl = ns_life_built_streamline(b);
    else ns_clear_error();
    int32_t *gf = NULL;
    if (sl && n == n_sl && (gf = malloc((size_t)F * sizeof *gf)))
        for (int32_t f = 0; f < F; ++f) gf[f] = g[sl[f]];
    ns_life_built_destroy(b);
    free(g);
    if (!gf)
        return n_sl >= 0 ? cli_error("life fit: %s has %lld groups: it needs one per fiber of the model (%d) or one per "
                                     "streamline of its tractogram (%lld)", path, (long long)n, (int)F, (long long)n_sl)
                         : cli_error("life fit: %s has %lld groups: it needs one per fiber of the model (%d)", path,
                                     (long long)n, (int)F);
    *out = gf;
    return 0;
}

/* A path's fits stop at SIGINT/SIGTERM (the path then stops too). */
static int interrupted_only(int32_t it, double f, int64_t nnz, void *ctx) {
    (void)it, (void)f, (void)nnz, (void)ctx;
    return cli_interrupted();
}

/* After each fit of a path: stop on a signal; with a terminal, a bar of the fits done. */
static int show_path(int32_t done, int32_t total, void *ctx) {
    if (cli_interrupted()) return 1;
    if (*(const int *)ctx) {
        const int width = 30, fill = total > 0 ? (int)((double)done * width / total) : width;
        char bar[64];
        for (int i = 0; i < width; ++i) bar[i] = i < fill ? '#' : '.';
        bar[width] = '\0';
        fprintf(stderr, "\r[%s] fit %d/%d of the path (the folds', then the whole data's)   ", bar, (int)done, (int)total);
        fflush(stderr);
    }
    return 0;
}

/* The path's record: the life fit --json document and the sidecar OUT.json. */
static void path_json(FILE *f, const char *dir, const ns_life_engine_t *e, const ns_life_fit_options *fo,
                      const ns_life_path_options *po, const ns_life_path_point *pt, const ns_life_path_result *r,
                      const char *weights, const char *csv) {
    cli_json j;
    json_begin(&j, f);
    json_string(&j, "model", dir);
    json_string(&j, "backend", ns_backend_name(ns_life_engine_backend(e)));
    json_string(&j, "mw_variant", ns_life_variant_name(ns_life_engine_variant(e, NS_LIFE_MW)));
    json_string(&j, "mty_variant", ns_life_variant_name(ns_life_engine_variant(e, NS_LIFE_MTY)));
    json_double(&j, "product_error_bound", ns_life_engine_error_bound(e));
    json_string(&j, "penalty", ns_life_penalty_name(po->penalty));
    json_double(&j, "lambda", po->penalty == NS_LIFE_PENALTY_L1 ? pt[r->chosen].value : fo->lambda);
    json_double(&j, "ridge", po->penalty == NS_LIFE_PENALTY_RIDGE ? pt[r->chosen].value : fo->ridge);
    json_double(&j, "group", po->penalty == NS_LIFE_PENALTY_GROUP ? pt[r->chosen].value : 0.0);
    json_double(&j, "chosen_value", pt[r->chosen].value);
    json_int(&j, "chosen_index", r->chosen);
    if (r->minimum >= 0) json_double(&j, "minimum_cv_value", pt[r->minimum].value);
    json_string(&j, "rule", r->folds ? ns_life_cv_rule_name(po->rule) : "none (the smallest value)");
    if (r->folds) json_double(&j, "cv_zero", r->cv_zero);
    if (r->folds && po->rule == NS_LIFE_CV_ONE_SE_GAIN) json_double(&j, "gain_tolerance", ns_life_cv_gain_tolerance(po->penalty));
    json_string(&j, "held_out", "voxels");
    json_int(&j, "folds", r->folds);
    json_int(&j, "seed", (long long)po->seed);
    json_double(&j, "max_value", r->max_value);
    json_bool(&j, "warm_starts", !po->cold);
    json_bool(&j, "cv_refit", po->refit);
    json_int(&j, "updates", r->updates);
    json_double(&j, "seconds", r->seconds);
    json_double(&j, "cv_seconds", r->cv_seconds);
    json_array_begin(&j, "path");
    for (int32_t k = 0; k < r->n_values; ++k) {
        json_object_begin(&j, NULL);
        json_double(&j, "value", pt[k].value);
        json_double(&j, "cv_rmse", pt[k].cv_rmse);
        json_double(&j, "cv_se", pt[k].cv_se);
        json_double(&j, "rmse", pt[k].rmse);
        json_double(&j, "objective", pt[k].objective);
        json_int(&j, "nonzero", pt[k].nonzero);
        if (po->penalty == NS_LIFE_PENALTY_GROUP) json_int(&j, "groups_nonzero", pt[k].groups_nonzero);
        json_int(&j, "updates", pt[k].updates);
        json_int(&j, "cv_updates", pt[k].cv_updates);
        json_string(&j, "stop", ns_life_stop_name(pt[k].stop));
        json_object_end(&j);
    }
    json_array_end(&j);
    json_string(&j, "weights", weights);
    json_string(&j, "curve", csv);
    json_end(&j);
}

/* life fit --lambda auto | A,B,... | --lambda-path N: the path, the chosen weights, the curve
 * (OUT_path.csv, OUT_path.png) and the sidecar OUT.json. */
static int fit_path(const char *dir, ns_life_model_t *m, ns_life_engine_t *e, ns_life_fit_options *fo,
                    ns_life_path_options *po, const char *out, const char *plot, int draw, int as_json) {
    const char *cmd = "life fit";
    char csv[4096], side[4096], png[4096];
    const size_t n_out = strlen(out);
    const int stem = n_out > 4 && strcmp(out + n_out - 4, ".npy") == 0 ? (int)(n_out - 4) : (int)n_out;
    snprintf(csv, sizeof csv, "%.*s_path.csv", stem, out);
    snprintf(side, sizeof side, "%.*s.json", stem, out);
    snprintf(png, sizeof png, "%.*s_path.png", stem, out);
    if (!plot) plot = png;
    cli_plot_check(plot);
    const int32_t F = ns_life_model_n_fibers(m), n = po->n_values;
    double *w = malloc((size_t)F * sizeof *w);
    ns_life_path_point *pt = malloc((size_t)n * sizeof *pt);
    if (!w || !pt) {
        free(w), free(pt);
        return cli_error("%s: out of memory", cmd);
    }
    fo->progress = interrupted_only;
    fo->state = NULL;
    po->progress = show_path;
    po->progress_context = &draw;
    ns_life_path_result r;
    cli_catch_signals();
    ns_status s = ns_life_path(e, fo, po, pt, w, NULL, &r);
    if (draw) fputc('\n', stderr);
    int rc = 0;
    if (s != NS_OK) rc = cli_error("%s: %s: %s: %s", cmd, dir, ns_status_string(s), ns_last_error());
    else if (r.stopped)
        rc = cli_error("%s interrupted (%s) during the path: nothing written", cmd,
                       cli_interrupted() == SIGTERM ? "SIGTERM" : "SIGINT");
    /* the weights, the curve and the sidecar appear together or not at all */
    ns_output *ow = rc == 0 ? cli_output_open(out) : NULL, *oc = ow ? cli_output_open(csv) : NULL,
              *os = oc ? cli_output_open(side) : NULL;
    if (rc == 0 && !os) rc = 1;
    if (rc == 0 && (s = ns_life_vector_save(ns_output_temp_path(ow), w, F)) != NS_OK)
        rc = cli_error("%s: writing %s: %s: %s", cmd, out, ns_status_string(s), ns_last_error());
    if (rc == 0) {
        FILE *f = ns_output_stream(oc);
        fprintf(f, "%s,cv_rmse,cv_se,rmse,objective,nonzero,groups_nonzero,updates,cv_updates,chosen,minimum\n",
                ns_life_penalty_name(po->penalty));
        for (int32_t k = 0; k < n; ++k)
            fprintf(f, "%.17g,%.17g,%.17g,%.17g,%.17g,%lld,%d,%d,%d,%d,%d\n", pt[k].value, pt[k].cv_rmse, pt[k].cv_se,
                    pt[k].rmse, pt[k].objective, (long long)pt[k].nonzero, (int)pt[k].groups_nonzero, (int)pt[k].updates,
                    (int)pt[k].cv_updates, k == r.chosen, k == r.minimum);
        path_json(ns_output_stream(os), dir, e, fo, po, pt, &r, out, csv);
    }
    if (rc == 0) {
        rc = cli_output_commit(ow);
        if (rc == 0) rc = cli_output_commit(oc);
        else ns_output_abort(oc);
        if (rc == 0) rc = cli_output_commit(os);
        else ns_output_abort(os);
    } else {
        ns_output_abort(ow), ns_output_abort(oc), ns_output_abort(os);
    }
    cli_release_signals();
    if (rc == 0 && as_json) path_json(stdout, dir, e, fo, po, pt, &r, out, csv);
    else if (rc == 0) {
        printf("%s: %s path of %d values on %s (Mw %s, MTy %s) in %.3f s (%.3f s cross-validating, %lld updates)\n", dir,
               ns_life_penalty_name(po->penalty), (int)n, ns_backend_name(ns_life_engine_backend(e)),
               ns_life_variant_name(ns_life_engine_variant(e, NS_LIFE_MW)),
               ns_life_variant_name(ns_life_engine_variant(e, NS_LIFE_MTY)), r.seconds, r.cv_seconds,
               (long long)r.updates);
        if (ns_life_engine_error_bound(e) > 0)
            printf("product error bound: %.2e relative (voxel-sh; the fit's rtolg %g)\n", ns_life_engine_error_bound(e),
                   fo->rtol_gradient);
        printf("%14s %12s %10s %12s %9s %7s %8s\n", ns_life_penalty_name(po->penalty), "CV RMSE", "CV SE", "RMSE",
               "non-zero", "groups", "updates");
        for (int32_t k = 0; k < n; ++k)
            printf("%14.6g %12.6g %10.3g %12.6g %9lld %7d %8d%s\n", pt[k].value, pt[k].cv_rmse, pt[k].cv_se, pt[k].rmse,
                   (long long)pt[k].nonzero, (int)pt[k].groups_nonzero, (int)pt[k].updates,
                   k == r.chosen ? (k == r.minimum ? "  <- chosen (least CV error)" : "  <- chosen") :
                   k == r.minimum ? "  (least CV error)" : "");
        if (r.folds) {
            printf("chosen: %s %.6g by %d-fold cross-validation over voxels (%s)\n", ns_life_penalty_name(po->penalty),
                   pt[r.chosen].value, (int)r.folds,
                   po->rule == NS_LIFE_CV_ONE_SE ? "the largest value within one standard error of the least held-out RMSE"
                   : po->rule == NS_LIFE_CV_MIN  ? "the least held-out RMSE"
                                                 : "the largest value within one standard error or a share of the gain "
                                                   "over the zero prediction, whichever is larger, of the least held-out "
                                                   "RMSE");
            if (po->rule == NS_LIFE_CV_ONE_SE_GAIN)
                printf("held-out RMSE of the zero prediction %.6g, of the least %.6g; tolerance max(SE %.3g, %g x gain "
                       "%.6g)\n", r.cv_zero, pt[r.minimum].cv_rmse, pt[r.minimum].cv_se, ns_life_cv_gain_tolerance(po->penalty),
                       r.cv_zero - pt[r.minimum].cv_rmse);
        } else
            printf("chosen: %s %.6g (no cross-validation: the smallest value)\n", ns_life_penalty_name(po->penalty),
                   pt[r.chosen].value);
        printf("weights: %s, curve: %s, sidecar: %s\n", out, csv, side);
    }
    if (rc == 0) {
        rc = cli_plot("bench/plot_life_path.py", csv, plot, NULL);
        if (rc == 0 && !as_json && cli_plot_available()) printf("plot: %s\n", plot);
    }
    free(w);
    free(pt);
    return rc;
}

typedef struct fit_args {
    const char *dir, *out, *hist_path, *groups_path, *state_path, *resume, *plot;
    ns_life_options o;
    ns_life_fit_options fo;
    ns_life_path_options po;
    int quiet, as_json, path_mode;
    double path_values[64];
    char hist_buf[4096], state_buf[4096];
} fit_args;

/* life fit's command line into *A (argv[1] is the model); -1: go on, else the exit status. */
static int parse_fit_args(int argc, char **argv, fit_args *A) {
    A->dir = argv[1], A->out = "weights.npy", A->hist_path = NULL, A->groups_path = NULL, A->state_path = NULL,
    A->resume = NULL, A->plot = NULL;
    ns_life_options_init(&A->o);
    ns_life_fit_options_init(&A->fo);
    A->quiet = 0, A->as_json = 0, A->path_mode = 0;
    int penalty_given = 0, lambda_given = 0, ridge_given = 0, group_given = 0;
    ns_life_path_options_init(&A->po);
    const char *path_option = NULL; /* an option only a path takes */
    for (int i = 2; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long x = 0;
        int ok = 1;
        if (strcmp(a, "--iters") == 0)
            ok = cli_parse_long("life fit", a, v, 1, 100000000, &x), A->fo.max_iterations = (int32_t)x, ++i;
        else if (strcmp(a, "--backend") == 0 && v) {
            const int bad = cli_parse_backend("life fit", a, v, &A->o.backend);
            if (bad) return bad;
            ++i;
        } else if (strcmp(a, "--out") == 0 && v) A->out = v, ++i;
        else if (strcmp(a, "--history") == 0 && v) A->hist_path = v, ++i;
        else if (strcmp(a, "--state") == 0 && v) A->state_path = v, ++i;
        else if (strcmp(a, "--resume") == 0 && v) A->resume = v, ++i;
        else if (strcmp(a, "--lambda") == 0 && v && (strcmp(v, "auto") == 0 || strchr(v, ','))) {
            A->path_mode = 1;
            if (strcmp(v, "auto") != 0) {
                char buf[4096];
                snprintf(buf, sizeof buf, "%s", v);
                const char *items[65];
                const int k = cli_split_list(buf, items, 65);
                if (k < 1 || k > 64) return cli_usage_error("life fit", "--lambda takes auto, a value or 1-64 values");
                for (int j = 0; j < k && ok; ++j)
                    ok = cli_parse_double("life fit", a, items[j], 1e-300, 1e300, &A->path_values[j]);
                A->po.n_values = k, A->po.values = A->path_values;
            }
            ++i;
        } else if (strcmp(a, "--lambda") == 0)
            ok = cli_parse_double("life fit", a, v, 0, 1e300, &A->fo.lambda), lambda_given = 1, ++i;
        else if (strcmp(a, "--lambda-path") == 0)
            ok = cli_parse_long("life fit", a, v, 2, 1000, &x), A->po.n_values = (int32_t)x,
            A->po.values = NULL, A->path_mode = 1, ++i;
        else if (strcmp(a, "--penalty") == 0 && v) {
            if (ns_life_penalty_from_name(v, &A->po.penalty) != NS_OK)
                return cli_usage_error("life fit", "%s", ns_last_error());
            penalty_given = 1, path_option = a, ++i;
        } else if (strcmp(a, "--folds") == 0)
            ok = cli_parse_long("life fit", a, v, 0, 100, &x), A->po.folds = (int32_t)x, path_option = a, ++i;
        else if (strcmp(a, "--cv-refit") == 0) A->po.refit = 1, path_option = a;
        else if (strcmp(a, "--cv-rule") == 0 && v) {
            path_option = a;
            if (ns_life_cv_rule_from_name(v, &A->po.rule) != NS_OK)
                return cli_usage_error("life fit", "--cv-rule: %s", ns_last_error());
            ++i;
        }
        else if (strcmp(a, "--ridge") == 0)
            ok = cli_parse_double("life fit", a, v, 0, 1e300, &A->fo.ridge), ridge_given = 1, ++i;
        else if (strcmp(a, "--group") == 0)
            ok = cli_parse_double("life fit", a, v, 0, 1e300, &A->fo.group), group_given = 1, ++i;
        else if (strcmp(a, "--groups") == 0 && v) A->groups_path = v, ++i;
        else if (strcmp(a, "--tolg") == 0) ok = cli_parse_double("life fit", a, v, 0, 1e300, &A->fo.tol_gradient), ++i;
        else if (strcmp(a, "--tolo") == 0) ok = cli_parse_double("life fit", a, v, 0, 1e300, &A->fo.tol_objective), ++i;
        else if (strcmp(a, "--rtolg") == 0) ok = cli_parse_double("life fit", a, v, 0, 1e300, &A->fo.rtol_gradient), ++i;
        else if (strcmp(a, "--rtolo") == 0)
            ok = cli_parse_double("life fit", a, v, 0, 1e300, &A->fo.rtol_objective), ++i;
        else if (strcmp(a, "--preconditioner") == 0) A->fo.preconditioner = 1;
        else if (strcmp(a, "--plot") == 0 && v) A->plot = v, path_option = a, ++i;
        else if ((strcmp(a, "--mw") == 0 || strcmp(a, "--mty") == 0) && v) {
            if (ns_life_variant_from_name(v, strcmp(a, "--mw") == 0 ? &A->o.mw_variant : &A->o.mty_variant) != NS_OK)
                return cli_usage_error("life fit", "%s", ns_last_error());
            ++i;
        } else if (strcmp(a, "--threads") == 0)
            ok = cli_parse_long("life fit", a, v, 1, 4096, &x), A->o.threads = (int32_t)x, ++i;
        else if (strcmp(a, "--quiet") == 0) A->quiet = 1;
        else if (strcmp(a, "--json") == 0) A->as_json = 1;
        else return cli_usage_error("life fit", "unknown option or missing value '%s'", a);
        if (!ok) return 2;
    }
    const size_t n_out = strlen(A->out);
    const int stem = n_out > 4 && strcmp(A->out + n_out - 4, ".npy") == 0 ? (int)(n_out - 4) : (int)n_out;
    if (!A->hist_path)
        snprintf(A->hist_buf, sizeof A->hist_buf, "%.*s_history.npy", stem, A->out), A->hist_path = A->hist_buf;
    if (!A->state_path)
        snprintf(A->state_buf, sizeof A->state_buf, "%.*s_state.bin", stem, A->out), A->state_path = A->state_buf;
    if (A->path_mode) {
        /* the path's penalty: given, else group when the fibers' groups exist, else the ridge */
        char def[4096];
        snprintf(def, sizeof def, "%s/groups.npy", A->dir);
        if (!penalty_given)
            A->po.penalty = A->groups_path || access(def, R_OK) == 0 ? NS_LIFE_PENALTY_GROUP : NS_LIFE_PENALTY_RIDGE;
        const int fixed[3] = {lambda_given, ridge_given, group_given};
        static const char *const opt[3] = {"--lambda L", "--ridge", "--group"};
        if (fixed[A->po.penalty])
            return cli_usage_error("life fit", "the path varies the %s weight: drop %s (or choose another --penalty)",
                                   ns_life_penalty_name(A->po.penalty), opt[A->po.penalty]);
        if (A->po.penalty != NS_LIFE_PENALTY_GROUP && A->fo.group > 0)
            return cli_usage_error("life fit", "--group with a %s path is not offered: give --penalty group",
                                   ns_life_penalty_name(A->po.penalty));
        if (A->resume || A->fo.preconditioner)
            return cli_usage_error("life fit", "%s is not offered with a path (--lambda auto, a list or --lambda-path)",
                                   A->resume ? "--resume" : "--preconditioner");
        if (A->po.penalty == NS_LIFE_PENALTY_GROUP) A->fo.group = 1.0; /* loads the groups below; the path sets G */
    } else if (path_option) {
        return cli_usage_error("life fit", "%s needs a path (--lambda auto, a list or --lambda-path N)", path_option);
    }
    if (A->groups_path && !(A->fo.group > 0)) return cli_usage_error("life fit", "--groups needs --group G > 0");
    return -1;
}

/* The weights and the objective history of a finished fit (rc: the fit's status so far). */
static int save_fit(int rc, const char *out, const char *hist_path, const double *w, int32_t F, const double *hist,
                    const ns_life_fit_result *r) {
    /* the weights and their history appear together or not at all: both are
     * written under their temporary names, then both renamed into place */
    ns_output *ow = rc == 0 ? cli_output_open(out) : NULL, *oh = ow ? cli_output_open(hist_path) : NULL;
    ns_status s;
    if (rc == 0 && !oh) rc = 1;
    if (rc == 0 && (s = ns_life_vector_save(ns_output_temp_path(ow), w, F)) != NS_OK)
        rc = cli_error("life fit: writing %s: %s: %s", out, ns_status_string(s), ns_last_error());
    if (rc == 0 && (s = ns_life_vector_save(ns_output_temp_path(oh), hist, r->updates)) != NS_OK)
        rc = cli_error("life fit: writing %s: %s: %s", hist_path, ns_status_string(s), ns_last_error());
    if (rc == 0) {
        rc = cli_output_commit(ow);
        if (rc) ns_output_abort(oh);
        else rc = cli_output_commit(oh);
    } else {
        ns_output_abort(ow);
        ns_output_abort(oh);
    }
    return rc;
}

/* What life fit prints (or its --json document) after a fit. */
static void print_fit(const char *dir, const ns_life_model_t *m, const ns_life_engine_t *e,
                      const ns_life_fit_options *fo, const ns_life_fit_result *r, const double *w,
                      int32_t resumed_at, const char *resume, int auto_variants, const char *out,
                      const char *hist_path, int as_json) {
    const int32_t F = ns_life_model_n_fibers(m);
    const double *wt = ns_life_model_true_weights(m);
    double err = -1.0;
    if (wt) {
        double num = 0.0, den = 0.0;
        for (int32_t f = 0; f < F; ++f) num += (w[f] - wt[f]) * (w[f] - wt[f]), den += wt[f] * wt[f];
        err = den > 0 ? sqrt(num / den) : sqrt(num);
    }
    if (as_json) {
        cli_json j;
        json_begin(&j, stdout);
        json_string(&j, "model", dir);
        json_string(&j, "backend", ns_backend_name(ns_life_engine_backend(e)));
        json_string(&j, "mw_variant", ns_life_variant_name(ns_life_engine_variant(e, NS_LIFE_MW)));
        json_string(&j, "mty_variant", ns_life_variant_name(ns_life_engine_variant(e, NS_LIFE_MTY)));
        json_double(&j, "product_error_bound", ns_life_engine_error_bound(e));
        json_int(&j, "updates", r->updates);
        if (resumed_at >= 0) json_int(&j, "resumed_at_update", resumed_at);
        json_string(&j, "stop", ns_life_stop_name(r->stop));
        json_double(&j, "objective", r->objective);
        json_double(&j, "ridge_mu", r->ridge_mu);
        if (fo->group > 0) {
            json_double(&j, "group_lambda", r->group_lambda);
            json_int(&j, "groups", r->n_groups);
            json_int(&j, "groups_nonzero", r->groups_nonzero);
        }
        json_double(&j, "projected_gradient", r->projected_gradient);
        json_double(&j, "projected_gradient_start", r->projected_gradient_start);
        json_int(&j, "nonzero", r->nonzero);
        json_double(&j, "seconds", r->seconds);
        json_double(&j, "setup_seconds", r->setup_seconds);
        json_double(&j, "variant_selection_seconds", ns_life_engine_selection_seconds(e));
        json_int(&j, "threads", ns_life_engine_threads(e));
        if (wt) json_double(&j, "relative_error_vs_true_weights", err);
        json_string(&j, "weights", out);
        json_string(&j, "history", hist_path);
        json_end(&j);
    } else {
        printf("%s: %d updates on %s (Mw %s, MTy %s) in %.3f s: %s\n", dir, (int)r->updates,
               ns_backend_name(ns_life_engine_backend(e)),
               ns_life_variant_name(ns_life_engine_variant(e, NS_LIFE_MW)),
               ns_life_variant_name(ns_life_engine_variant(e, NS_LIFE_MTY)), r->seconds,
               ns_life_stop_name(r->stop));
        if (auto_variants && ns_life_engine_backend(e) == NS_BACKEND_CPU)
            printf("variant choice: the CPU rule (docs/life.md, Runtime selection)\n");
        else if (auto_variants)
            printf("variant choice: timed (%.3f s of timing runs)\n", ns_life_engine_selection_seconds(e));
        if (ns_life_engine_error_bound(e) > 0)
            printf("product error bound: %.2e relative (voxel-sh; the fit's rtolg %g)\n", ns_life_engine_error_bound(e),
                   fo->rtol_gradient);
        if (ns_life_engine_backend(e) == NS_BACKEND_CPU) printf("threads: %d\n", (int)ns_life_engine_threads(e));
        if (resumed_at >= 0) printf("resumed from %s after update %d\n", resume, (int)resumed_at);
        printf("objective %.9e, projected gradient %.3e (%.2e of its start), %lld of %d weights non-zero\n",
               r->objective, r->projected_gradient,
               r->projected_gradient_start > 0 ? r->projected_gradient / r->projected_gradient_start : 0.0,
               (long long)r->nonzero, (int)F);
        if (fo->group > 0)
            printf("group penalty %.4g (%g x the median group gradient norm at 0): %d of %d groups non-zero\n",
                   r->group_lambda, fo->group, (int)r->groups_nonzero, (int)r->n_groups);
        if (wt) printf("relative error against the true weights: %.3e\n", err);
        printf("weights: %s, objective history: %s\n", out, hist_path);
    }
}

static int fit(int argc, char **argv) {
    if (argc < 2 || argv[1][0] == '-') return cli_usage_error("life fit", "missing model directory");
    fit_args A;
    const int done = parse_fit_args(argc, argv, &A);
    if (done >= 0) return done;
    /* the state to continue from, or an empty one for an interruption to fill */
    ns_life_fit_state_t *state = NULL;
    ns_status s = A.resume ? ns_life_fit_state_load(A.resume, &state) : ns_life_fit_state_create(&state);
    if (s != NS_OK) return cli_status_error("life fit: --resume", s);
    ns_life_model_t *m = NULL;
    s = ns_life_model_load(A.dir, &m);
    if (s != NS_OK) {
        ns_life_fit_state_destroy(state);
        return cli_status_error("life fit", s);
    }
    int32_t *groups = NULL;
    if (A.fo.group > 0) {
        const int rc = load_groups(A.dir, A.groups_path, m, &groups);
        if (rc) {
            ns_life_fit_state_destroy(state);
            ns_life_model_destroy(m);
            return rc;
        }
        A.fo.groups = groups;
    }
    ns_life_engine_t *e = NULL;
    const int auto_variants = A.o.mw_variant == NS_LIFE_AUTO || A.o.mty_variant == NS_LIFE_AUTO;
    /* AUTO may run voxel-sh on the GPU when its error bound is below the fit's relative gradient
     * tolerance (docs/life.md, "voxel-sh") */
    A.o.tolerance = A.fo.rtol_gradient;
    s = ns_life_engine_create(m, &A.o, &e);
    if (s != NS_OK) {
        ns_life_fit_state_destroy(state);
        ns_life_model_destroy(m);
        return cli_error("life fit: %s: preparing the products: %s: %s", A.dir, ns_status_string(s), ns_last_error());
    }
    if (A.path_mode) {
        const int draw = !A.quiet && !A.as_json && isatty(fileno(stderr));
        const int rc = fit_path(A.dir, m, e, &A.fo, &A.po, A.out, A.plot, draw, A.as_json);
        free(groups);
        ns_life_fit_state_destroy(state);
        ns_life_engine_destroy(e);
        ns_life_model_destroy(m);
        return rc;
    }
    progress p = {A.fo.max_iterations - 1, !A.quiet && !A.as_json && isatty(fileno(stderr)), 0.0};
    p.start = cli_now_s();
    A.fo.progress = show;
    A.fo.progress_context = &p;
    A.fo.state = state;
    const int32_t resumed_at = ns_life_fit_state_updates(state);
    cli_catch_signals(); /* released at the end: a signal during the writes lets them finish */
    const int32_t F = ns_life_model_n_fibers(m);
    double *w = malloc((size_t)F * sizeof *w);
    double *hist = malloc((size_t)A.fo.max_iterations * sizeof *hist);
    ns_life_fit_result r;
    s = w && hist ? ns_life_fit(e, &A.fo, w, hist, &r) : NS_ERR_OUT_OF_MEMORY;
    if (p.draw) fputc('\n', stderr);
    int rc = 0;
    if (s != NS_OK) rc = cli_error("life fit: %s: %s: %s", A.dir, ns_status_string(s), ns_last_error());
    else if (r.stop == NS_LIFE_STOP_USER) { /* SIGINT or SIGTERM: the state, not weights */
        rc = cli_error("life fit interrupted (%s) after %d updates", cli_interrupted() == SIGTERM ? "SIGTERM" : "SIGINT",
                       (int)r.updates);
        if ((s = ns_life_fit_state_save(state, A.state_path)) != NS_OK)
            cli_status_error("life fit: saving the state", s);
        else
            fprintf(stderr, "neurosolve: the fit's state is in %s (continue with the same options and --resume %s)\n",
                    A.state_path, A.state_path);
    }
    rc = save_fit(rc, A.out, A.hist_path, w, F, hist, &r);
    if (rc == 0)
        print_fit(A.dir, m, e, &A.fo, &r, w, resumed_at, A.resume, auto_variants, A.out, A.hist_path, A.as_json);
    cli_release_signals();
    free(w);
    free(hist);
    free(groups);
    ns_life_fit_state_destroy(state);
    ns_life_engine_destroy(e);
    ns_life_model_destroy(m);
    return rc;
}

/* tools/life_build.c: LiFE from real data (docs/life_data.md); tools/cmd_life_cohort.c: studies. */
int life_build(int argc, char **argv);
int life_report(int argc, char **argv);
int life_cohort(int argc, char **argv);

int cmd_life(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        help(NULL);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "cohort") == 0) return life_cohort(argc - 1, argv + 1); /* its own --help */
    /* `life SUBCOMMAND ... --help` prints that subcommand's help and touches no file */
    static const char *const subs[] = {"synth", "fit", "info", "build", "report"};
    for (int i = 2; i < argc; ++i)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            const char *sub = NULL;
            for (size_t k = 0; k < sizeof subs / sizeof *subs; ++k)
                if (strcmp(argv[1], subs[k]) == 0) sub = subs[k];
            help(sub);
            return 0;
        }
    if (strcmp(argv[1], "synth") == 0) return synth(argc - 1, argv + 1);
    if (strcmp(argv[1], "fit") == 0) return fit(argc - 1, argv + 1);
    if (strcmp(argv[1], "info") == 0) return info(argc - 1, argv + 1);
    if (strcmp(argv[1], "build") == 0) return life_build(argc - 1, argv + 1);
    if (strcmp(argv[1], "report") == 0) return life_report(argc - 1, argv + 1);
    return cli_usage_error("life", "unknown subcommand '%s' (synth, build, fit, report, info, cohort)", argv[1]);
}
