/* neurosolve bench life --quality: pruning quality on a ground-truth phantom
 * (docs/life.md, "Pruning quality"). Makes the phantom (ns_life_phantom_write)
 * unless the folder already holds one, builds the LiFE model from its files
 * as `life build` does, fits it with each setting asked for and scores the
 * weights against the truth: ROC AUC of true vs false streamlines (also
 * against bridges only and random curves only), precision and recall of the
 * kept streamlines (weight > 0) and of the n_true highest weights. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"

#define MAX_SETTINGS 32

typedef struct setting {
    char name[64];
    double lambda, ridge, group;
} setting;

typedef struct quality_row {
    setting s;
    double auc, auc_bridges, auc_random, precision, recall, precision_top, residual, seconds;
    long long kept;
    int updates;
    const char *stop;
} quality_row;

static void help(void) {
    printf("usage: neurosolve bench life --quality DIR [options]\n"
           "  DIR                  a phantom folder (life synth --phantom); made there when it holds none\n"
           "  --streamlines N --false F --snr S --bundles B --seed S   the phantom when made\n"
           "                       (10000, 0.3, 20, 12, 1)\n"
           "  --settings LIST      fits to score, comma-separated; each nnls, lambda=X (ReAl-LiFE L1),\n"
           "                       ridge=R (life fit --ridge), group=G (life fit --group: groups by the\n"
           "                       endpoint parcels of DIR/parcels.nii) or a '+' combination\n"
           "                       (default nnls,lambda=3e6,ridge=0.2,group=1)\n"
           "  --nodes sum|mean --L N --axial A --radial R   the model (life build's defaults)\n"
           "  --iters N --rtolo R --rtolg R --threads T      the fit (life fit's defaults)\n"
           "  --csv FILE           one row per setting\n");
}

static int parse_settings(const char *text, setting *out, int *n) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", text);
    const char *items[MAX_SETTINGS];
    const int k = cli_split_list(buf, items, MAX_SETTINGS);
    for (int i = 0; i < k; ++i) {
        setting *s = &out[i];
        memset(s, 0, sizeof *s);
        snprintf(s->name, sizeof s->name, "%s", items[i]);
        char part[128];
        snprintf(part, sizeof part, "%s", items[i]);
        for (char *save = NULL, *p = strtok_r(part, "+", &save); p; p = strtok_r(NULL, "+", &save)) {
            if (strcmp(p, "nnls") == 0) continue;
            /* the one number reader (neurosolve/number.h) */
            double *dst = strncmp(p, "lambda=", 7) == 0 ? &s->lambda : strncmp(p, "ridge=", 6) == 0 ? &s->ridge
                        : strncmp(p, "group=", 6) == 0 ? &s->group : NULL;
            if (!dst || ns_number_parse(strchr(p, '=') + 1, 0.0, HUGE_VAL, dst) != NS_OK)
                return cli_usage_error("bench life --quality",
                                       "--settings: '%s' is not nnls, lambda=X, ridge=R or group=G (X, R, G >= 0)", p),
                       0;
        }
    }
    *n = k;
    return k > 0 ? 1 : (cli_usage_error("bench life --quality", "--settings is empty"), 0);
}

static double auc_subset(const double *w, const int32_t *lab, const int32_t *kind, int64_t n, int drop_kind,
                         double *tmp_w, int32_t *tmp_l) {
    int64_t m = 0;
    for (int64_t i = 0; i < n; ++i)
        if (kind[i] != drop_kind) tmp_w[m] = w[i], tmp_l[m] = lab[i], ++m;
    double a = NAN;
    if (ns_life_roc_auc(tmp_w, tmp_l, m, &a) != NS_OK) a = NAN;
    return a;
}

static int cmp_desc(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

typedef struct quality_args {
    const char *dir, *csv;
    ns_life_phantom_options po;
    ns_life_build_options bo;
    ns_life_fit_options fo;
    ns_life_options lo;
    setting settings[MAX_SETTINGS];
    int n_settings, phantom_given;
} quality_args;

/* The command line into *opt; -1: go on, else the exit status (0 after --help). */
static int parse_args(int argc, char **argv, quality_args *opt) {
    const char *cmd = "bench life --quality";
    opt->dir = NULL, opt->csv = NULL;
    ns_life_phantom_options_init(&opt->po);
    ns_life_build_options_init(&opt->bo);
    ns_life_fit_options_init(&opt->fo);
    ns_life_options_init(&opt->lo);
    opt->lo.backend = NS_BACKEND_CPU;
    opt->n_settings = 0, opt->phantom_given = 0;
    if (!parse_settings("nnls,lambda=3e6,ridge=0.2,group=1", opt->settings, &opt->n_settings)) return 2;
    for (int i = 1; i < argc; ++i)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            help();
            return 0;
        }
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long x = 0;
        int ok = 1;
        if (strcmp(a, "--quality") == 0) {
            if (!v || v[0] == '-') return cli_usage_error(cmd, "--quality takes the phantom folder");
            opt->dir = v, ++i;
        } else if (strcmp(a, "--help") == 0) {
            help();
            return 0;
        } else if (strcmp(a, "--streamlines") == 0)
            ok = cli_parse_long(cmd, a, v, 2, 100000000, &x), opt->po.n_streamlines = (int32_t)x,
            opt->phantom_given = 1, ++i;
        else if (strcmp(a, "--false") == 0)
            ok = cli_parse_double(cmd, a, v, 0, 1, &opt->po.false_fraction), opt->phantom_given = 1, ++i;
        else if (strcmp(a, "--snr") == 0)
            ok = cli_parse_double(cmd, a, v, 0, 1e12, &opt->po.snr), opt->phantom_given = 1, ++i;
        else if (strcmp(a, "--bundles") == 0)
            ok = cli_parse_long(cmd, a, v, 2, 10000, &x), opt->po.n_bundles = (int32_t)x, opt->phantom_given = 1, ++i;
        else if (strcmp(a, "--seed") == 0)
            ok = cli_parse_long(cmd, a, v, 0, 1LL << 62, &x), opt->po.seed = (uint64_t)x, opt->phantom_given = 1, ++i;
        else if (strcmp(a, "--settings") == 0 && v) ok = parse_settings(v, opt->settings, &opt->n_settings), ++i;
        else if (strcmp(a, "--nodes") == 0 && v) {
            if (strcmp(v, "sum") == 0) opt->bo.nodes = NS_LIFE_NODES_SUM;
            else if (strcmp(v, "mean") == 0) opt->bo.nodes = NS_LIFE_NODES_MEAN;
            else return cli_usage_error(cmd, "--nodes takes sum or mean");
            ++i;
        } else if (strcmp(a, "--L") == 0)
            ok = cli_parse_long(cmd, a, v, 2, 4096, &x), opt->bo.dictionary_l = (int32_t)x, ++i;
        else if (strcmp(a, "--axial") == 0) ok = cli_parse_double(cmd, a, v, 0, 100, &opt->bo.axial_diffusivity), ++i;
        else if (strcmp(a, "--radial") == 0) ok = cli_parse_double(cmd, a, v, 0, 100, &opt->bo.radial_diffusivity), ++i;
        else if (strcmp(a, "--iters") == 0)
            ok = cli_parse_long(cmd, a, v, 1, 100000000, &x), opt->fo.max_iterations = (int32_t)x, ++i;
        else if (strcmp(a, "--rtolo") == 0) ok = cli_parse_double(cmd, a, v, 0, 1e300, &opt->fo.rtol_objective), ++i;
        else if (strcmp(a, "--rtolg") == 0) ok = cli_parse_double(cmd, a, v, 0, 1e300, &opt->fo.rtol_gradient), ++i;
        else if (strcmp(a, "--threads") == 0)
            ok = cli_parse_long(cmd, a, v, 1, 4096, &x), opt->lo.threads = (int32_t)x, ++i;
        else if (strcmp(a, "--csv") == 0 && v) opt->csv = v, ++i;
        else return cli_usage_error(cmd, "unknown option or missing value '%s'", a);
        if (!ok) return 2;
    }
    if (!opt->dir) return cli_usage_error(cmd, "missing the phantom folder (--quality DIR)");
    return -1;
}

/* Connection groups (settings with group=G): the end-point parcels of DIR/parcels.nii, per fiber. */
static int connection_groups(const char *cmd, const char *dir, const char *tck, const ns_life_built_t *built,
                             const int64_t *sl, int32_t F, int64_t n_sl, int32_t **groups, int32_t *n_groups) {
    int rc = 0;
    ns_status s;
    char parcels[4096];
    snprintf(parcels, sizeof parcels, "%s/parcels.nii", dir);
    int32_t *gs = NULL;
    int64_t ng_sl = 0;
    struct stat pb;
    if (stat(parcels, &pb) != 0)
        rc = cli_error("%s: %s is missing: group=G settings group the streamlines by its end-point parcels "
                       "(life synth --phantom writes it; remake the phantom)", cmd, parcels);
    else if ((s = ns_life_connection_groups(parcels, tck, ns_life_built_stats(built)->grid, &gs, &ng_sl,
                                            n_groups)) != NS_OK)
        rc = cli_status_error(cmd, s);
    else if (ng_sl != n_sl) rc = cli_error("%s: %s has %lld streamlines, labels.npy %lld", cmd, tck, (long long)ng_sl,
                                           (long long)n_sl);
    else if (!(*groups = malloc((size_t)F * sizeof **groups))) rc = cli_error("%s: out of memory", cmd);
    else
        for (int32_t f = 0; f < F; ++f) (*groups)[f] = gs[sl[f]];
    free(gs);
    return rc;
}

/* Scores the weights w of one fit against the truth lab (kind: 1 a random curve, 2 a bridge). */
static ns_status score(const double *w, const int32_t *lab, const int32_t *kind, int32_t F, long long n_true,
                       double *tmp_w, int32_t *tmp_l, quality_row *q) {
    const ns_status s = ns_life_roc_auc(w, lab, F, &q->auc);
    if (s != NS_OK) return s;
    q->auc_bridges = auc_subset(w, lab, kind, F, 2, tmp_w, tmp_l);
    q->auc_random = auc_subset(w, lab, kind, F, 1, tmp_w, tmp_l);
    long long kept = 0, kept_true = 0;
    for (int32_t f = 0; f < F; ++f) kept += w[f] > 0, kept_true += w[f] > 0 && lab[f];
    q->kept = kept;
    q->precision = kept ? (double)kept_true / kept : NAN;
    q->recall = n_true ? (double)kept_true / n_true : NAN;
    /* precision of the n_true highest weights (= their recall): ties at the cut count
     * in proportion */
    memcpy(tmp_w, w, (size_t)F * sizeof *w);
    qsort(tmp_w, (size_t)F, sizeof *tmp_w, cmp_desc);
    if (n_true > 0 && n_true < F) {
        const double cut = tmp_w[n_true - 1];
        long long above = 0, above_true = 0, at = 0, at_true = 0;
        for (int32_t f = 0; f < F; ++f) {
            if (w[f] > cut) ++above, above_true += lab[f];
            else if (w[f] == cut) ++at, at_true += lab[f];
        }
        q->precision_top = (above_true + (double)(n_true - above) * at_true / at) / n_true;
    } else q->precision_top = NAN;
    return NS_OK;
}

/* One CSV row per setting. */
static int write_csv(const char *csv, const quality_row *rows, int n, int32_t F, long long n_true) {
    ns_output *out = cli_output_open(csv);
    if (!out) return 1;
    FILE *f = ns_output_stream(out);
    fprintf(f, "setting,lambda,ridge,group,auc,auc_bridges,auc_random,kept,precision,recall,precision_top,"
               "relative_residual,updates,seconds,stop,fibers,true\n");
    for (int k = 0; k < n; ++k) {
        const quality_row *q = &rows[k];
        fprintf(f, "%s,%.17g,%.17g,%.17g,%.6f,%.6f,%.6f,%lld,%.6f,%.6f,%.6f,%.6f,%d,%.4f,%s,%d,%lld\n", q->s.name,
                q->s.lambda, q->s.ridge, q->s.group, q->auc, q->auc_bridges, q->auc_random, q->kept, q->precision,
                q->recall, q->precision_top, q->residual, q->updates, q->seconds, q->stop, (int)F, n_true);
    }
    return cli_output_commit(out);
}

int bench_life_quality(int argc, char **argv) {
    const char *cmd = "bench life --quality";
    quality_args A;
    const int done = parse_args(argc, argv, &A);
    if (done >= 0) return done;
    const char *dir = A.dir, *csv = A.csv;
    char path[4096], dwi[4096], bval[4096], bvec[4096], tck[4096];
    snprintf(path, sizeof path, "%s/labels.npy", dir);
    struct stat sb;
    const int exists = stat(path, &sb) == 0;
    if (exists && A.phantom_given)
        fprintf(stderr, "neurosolve: %s: %s holds a phantom already: its files are used, the phantom options "
                "are ignored\n", cmd, dir);
    if (!exists) {
        ns_life_phantom_stats ps;
        ns_status s = ns_life_phantom_write(&A.po, dir, &ps);
        if (s != NS_OK) return cli_status_error("bench life --quality: phantom", s);
        printf("%s: phantom of %lld streamlines (%lld true in %d bundles, %lld bridges, %lld random curves), "
               "%lld nodes, SNR %g, seed %llu\n", dir, (long long)ps.n_streamlines, (long long)ps.n_true,
               (int)ps.n_bundles, (long long)ps.n_bridges, (long long)ps.n_random, (long long)ps.n_nodes, A.po.snr,
               (unsigned long long)A.po.seed);
    }
    snprintf(dwi, sizeof dwi, "%s/dwi.nii", dir);
    snprintf(bval, sizeof bval, "%s/dwi.bval", dir);
    snprintf(bvec, sizeof bvec, "%s/dwi.bvec", dir);
    snprintf(tck, sizeof tck, "%s/tracks.tck", dir);
    int32_t *label_sl = NULL, *kind_sl = NULL;
    int64_t n_sl = 0;
    ns_status s = ns_life_phantom_read_truth(dir, &label_sl, &kind_sl, &n_sl);
    if (s != NS_OK) return cli_status_error("bench life --quality", s);
    ns_life_built_t *built = NULL;
    s = ns_life_build(dwi, bval, bvec, tck, &A.bo, &built);
    if (s != NS_OK) {
        free(label_sl), free(kind_sl);
        return cli_status_error("bench life --quality: build", s);
    }
    ns_life_model_t *m = ns_life_built_model(built);
    const int32_t F = ns_life_model_n_fibers(m);
    const int64_t *sl = ns_life_built_streamline(built);
    int rc = 0;
    if (ns_life_built_n_streamlines(built) != n_sl) {
        rc = cli_error("%s: %s: the tractogram holds %lld streamlines, labels.npy %lld", cmd, dir,
                       (long long)ns_life_built_n_streamlines(built), (long long)n_sl);
    }
    int32_t *lab = malloc((size_t)F * sizeof *lab), *kind = malloc((size_t)F * sizeof *kind),
            *tmp_l = malloc((size_t)F * sizeof *tmp_l);
    double *w = malloc((size_t)F * sizeof *w), *tmp_w = malloc((size_t)F * sizeof *tmp_w);
    const int64_t nvox = (int64_t)ns_life_model_n_theta(m) * ns_life_model_n_voxels(m);
    double *y = malloc((size_t)nvox * sizeof *y);
    if (rc == 0 && (!lab || !kind || !tmp_l || !w || !tmp_w || !y)) rc = cli_error("%s: out of memory", cmd);
    long long n_true = 0;
    for (int32_t f = 0; rc == 0 && f < F; ++f) lab[f] = label_sl[sl[f]], kind[f] = kind_sl[sl[f]], n_true += lab[f];
    double yy = 0.0;
    const double *Y = ns_life_model_signal(m);
    for (int64_t i = 0; i < nvox; ++i) yy += Y[i] * Y[i];
    int32_t *groups = NULL, n_groups = 0;
    int any_group = 0;
    for (int k = 0; k < A.n_settings; ++k) any_group |= A.settings[k].group > 0;
    if (rc == 0 && any_group) rc = connection_groups(cmd, dir, tck, built, sl, F, n_sl, &groups, &n_groups);
    ns_life_engine_t *e = NULL;
    if (rc == 0 && (s = ns_life_engine_create(m, &A.lo, &e)) != NS_OK) rc = cli_status_error(cmd, s);
    quality_row rows[MAX_SETTINGS];
    if (rc == 0) {
        char date[32];
        time_t now = time(NULL);
        strftime(date, sizeof date, "%Y-%m-%d %H:%M", gmtime(&now));
        printf("neurosolve bench life --quality  %s UTC  %s: %d fibers (%lld true), %d voxels, %lld coefficients, "
               "nodes %s, L %d, kernel axial %g radial %g, %s backend, %d threads\n",
               date, dir, (int)F, n_true, ns_life_model_n_voxels(m), (long long)ns_life_model_n_coeffs(m),
               A.bo.nodes == NS_LIFE_NODES_SUM ? "sum" : "mean", (int)A.bo.dictionary_l, A.bo.axial_diffusivity,
               A.bo.radial_diffusivity,
               ns_backend_name(ns_life_engine_backend(e)), (int)ns_life_engine_threads(e));
        if (any_group) {
            long long none = 0;
            for (int32_t f = 0; f < F; ++f) none += groups[f] < 0;
            printf("connection groups: %d endpoint-parcel pairs (%s/parcels.nii), %lld fibers with an end in "
                   "label 0 (a group each)\n", (int)n_groups, dir, none);
        }
        printf("%-22s %6s %8s %8s %7s %9s %6s %9s %8s %7s %7s  %s\n", "setting", "AUC", "vs bridges", "vs random",
               "kept", "precision", "recall", "prec@top", "residual", "updates", "seconds", "stop");
    }
    for (int k = 0; rc == 0 && k < A.n_settings; ++k) {
        ns_life_fit_options o = A.fo;
        o.lambda = A.settings[k].lambda;
        o.ridge = A.settings[k].ridge;
        o.group = A.settings[k].group;
        o.groups = groups;
        ns_life_fit_result r;
        s = ns_life_fit(e, &o, w, NULL, &r);
        if (s != NS_OK) {
            rc = cli_status_error(cmd, s);
            break;
        }
        quality_row *q = &rows[k];
        memset(q, 0, sizeof *q);
        q->s = A.settings[k];
        if ((s = score(w, lab, kind, F, n_true, tmp_w, tmp_l, q)) != NS_OK) {
            rc = cli_status_error(cmd, s);
            break;
        }
        if ((s = ns_life_mw(e, w, y)) != NS_OK) {
            rc = cli_status_error(cmd, s);
            break;
        }
        double rr = 0.0;
        for (int64_t i = 0; i < nvox; ++i) rr += (y[i] - Y[i]) * (y[i] - Y[i]);
        q->residual = sqrt(rr / yy);
        q->updates = r.updates;
        q->seconds = r.seconds;
        q->stop = ns_life_stop_name(r.stop);
        printf("%-22s %6.3f %8.3f %8.3f %7lld %9.3f %6.3f %9.3f %8.4f %7d %7.2f  %s\n", q->s.name, q->auc,
               q->auc_bridges, q->auc_random, q->kept, q->precision, q->recall, q->precision_top, q->residual,
               q->updates, q->seconds, q->stop);
        if (o.group > 0)
            printf("%-22s group lambda %.4g (%g x the median group gradient norm at w = 0): %d of %d groups kept\n", "",
                   r.group_lambda, o.group, (int)r.groups_nonzero, (int)r.n_groups);
        fflush(stdout);
    }
    if (rc == 0) printf("baseline precision (keep everything): %.3f\n", (double)n_true / F);
    if (rc == 0 && csv) rc = write_csv(csv, rows, A.n_settings, F, n_true);
    ns_life_engine_destroy(e);
    ns_life_built_destroy(built);
    free(label_sl), free(kind_sl), free(lab), free(kind), free(tmp_l), free(w), free(tmp_w), free(y), free(groups);
    return rc;
}
