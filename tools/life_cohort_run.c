/* life cohort: one subject, in a child process: life build, life fit and life report (cmd_life)
 * with their --json output captured, then the subject's folder under a temporary name
 * (ns_output_dir), renamed into place only when every file is written. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "life_cohort.h"

int cmd_life(int argc, char **argv);

/* Run `life ARGS` in this process with its stdout (the --json document) in `json_path`. */
static int call_life(const char *json_path, const char **args, int n) {
    fflush(stdout);
    const int fd = open(json_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return cli_error("%s: cannot create: %s", json_path, strerror(errno));
    const int saved = dup(STDOUT_FILENO);
    dup2(fd, STDOUT_FILENO);
    close(fd);
    fprintf(stderr, "neurosolve");
    for (int i = 0; i < n; ++i) fprintf(stderr, " %s", args[i]);
    fputc('\n', stderr);
    const int rc = cmd_life(n, (char **)args);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    return rc;
}


static void json_sources(cli_json *j, const subject *s) {
    json_array_begin(j, "Sources");
    const char *src[] = {s->dwi, s->bval, s->bvec, s->tracks, s->parcels[0] ? s->parcels : NULL};
    for (int i = 0; i < 5; ++i)
        if (src[i]) json_string(j, NULL, src[i]);
    json_array_end(j);
}

/* A small JSON sidecar next to an output. */
static int write_sidecar(const char *dir, const subject *s, const char *name, const char *description,
                         const char *units) {
    char p[PATHN];
    lc_pathf(p, sizeof p, "%s/%s_%s.json", dir, s->prefix, name);
    FILE *f = fopen(p, "w");
    if (!f) return cli_error("%s: cannot create: %s", p, strerror(errno));
    cli_json j;
    json_begin(&j, f);
    json_string(&j, "Description", description);
    if (units) json_string(&j, "Units", units);
    json_sources(&j, s);
    json_end(&j);
    return fclose(f) == 0 ? 0 : cli_error("%s: write failed", p);
}

/* Weights per streamline of the input tractogram (0 for one the model dropped), as NPY and as
 * MRtrix's text format (tcksift2's output, read by tck2connectome -tck_weights_in). */
static int write_weights(const char *model, const char *wpath, const char *npy, const char *txt, int64_t *n_out) {
    ns_life_built_t *b = NULL;
    double *w = NULL, *ws = NULL;
    int64_t nw = 0;
    ns_status st = ns_life_built_load(model, &b);
    if (st == NS_OK) st = ns_life_vector_load(wpath, &w, &nw);
    if (st != NS_OK) {
        ns_life_built_destroy(b);
        return cli_status_error("life cohort", st);
    }
    const int64_t ns = ns_life_built_n_streamlines(b) > 0 ? ns_life_built_n_streamlines(b) : nw;
    const int64_t *map = ns_life_built_streamline(b);
    int rc = (ws = calloc((size_t)(ns > 0 ? ns : 1), sizeof *ws)) ? 0 : cli_error("out of memory");
    for (int64_t f = 0; rc == 0 && f < nw; ++f) {
        const int64_t i = map ? map[f] : f;
        if (i >= 0 && i < ns) ws[i] = w[f];
    }
    if (rc == 0 && (st = ns_life_vector_save(npy, ws, ns)) != NS_OK) rc = cli_status_error("life cohort", st);
    FILE *f = rc == 0 ? fopen(txt, "w") : NULL;
    if (rc == 0 && !f) rc = cli_error("%s: cannot create: %s", txt, strerror(errno));
    if (f) {
        fprintf(f, "# LiFE streamline weights (neurosolve life cohort), one per streamline of the input\n");
        for (int64_t i = 0; i < ns; ++i) fprintf(f, "%.17g\n", ws[i]);
        if (fclose(f) != 0) rc = cli_error("%s: write failed", txt);
    }
    *n_out = ns;
    free(w), free(ws);
    ns_life_built_destroy(b);
    return rc;
}

/* The RMSE per voxel (after the fit, and of the signal itself: the RMSE of predicting nothing)
 * from life report's CSV as 3-D float32 NIfTI maps on the DWI's grid and affine, 0 outside
 * the model's voxels. */
static int write_maps(const char *dwi, const char *csv, const char *after_path, const char *before_path) {
    ns_nifti_t *img = NULL;
    ns_status st = ns_nifti_read(dwi, &img);
    if (st != NS_OK) return cli_status_error("life cohort", st);
    const ns_nifti_info *in = ns_nifti_get_info(img);
    const int64_t dim[4] = {in->dim[0], in->dim[1], in->dim[2], 1}, nv = dim[0] * dim[1] * dim[2];
    double affine[4][4];
    memcpy(affine, in->affine, sizeof affine);
    ns_nifti_destroy(img);
    float *after = calloc((size_t)nv, sizeof *after), *before = calloc((size_t)nv, sizeof *before);
    FILE *f = fopen(csv, "r");
    int rc = after && before && f ? 0 : cli_error("%s: cannot read the RMSE", csv);
    char line[512];
    if (rc == 0 && !fgets(line, sizeof line, f)) rc = cli_error("%s: empty", csv);
    while (rc == 0 && fgets(line, sizeof line, f)) {
        long long v, i, j, k;
        double s0, b, a;
        if (sscanf(line, "%lld,%lld,%lld,%lld,%lf,%lf,%lf", &v, &i, &j, &k, &s0, &b, &a) != 7 || i < 0 || j < 0 ||
            k < 0 || i >= dim[0] || j >= dim[1] || k >= dim[2]) {
            rc = cli_error("%s: unexpected line '%.60s'", csv, line);
            break;
        }
        const int64_t x = i + dim[0] * (j + dim[1] * k);
        after[x] = (float)a, before[x] = (float)b;
    }
    if (f) fclose(f);
    if (rc == 0 && (st = ns_nifti_write(after_path, dim, 16, (const double(*)[4])affine, after)) != NS_OK)
        rc = cli_status_error("life cohort", st);
    if (rc == 0 && (st = ns_nifti_write(before_path, dim, 16, (const double(*)[4])affine, before)) != NS_OK)
        rc = cli_status_error("life cohort", st);
    free(after), free(before);
    return rc;
}

const char *const lc_stat_columns[] = {
    "status", "streamlines", "fibers", "fibers_kept", "kept_fraction", "voxels", "updates", "stop",
    "lambda", "lambda_source", "ridge", "group", "objective", "relative_residual", "median_rmse_before",
    "median_rmse_after", "backend", "build_s", "fit_s", "report_s", "total_s", "error"};
_Static_assert(sizeof lc_stat_columns / sizeof *lc_stat_columns == LC_N_STAT, "LC_N_STAT: the stats columns");

void lc_tsv_header(FILE *f) {
    fprintf(f, "participant_id\tsession_id");
    for (int i = 0; i < LC_N_STAT; ++i) fprintf(f, "\t%s", lc_stat_columns[i]);
    fputc('\n', f);
}

/* `life STAGE` with the head of its arguments, then the options of that stage passed on
 * (stage: b build, f fit, r report), its --json document in `json`; its wall time in *seconds. */
static int run_stage(const cohort *c, char stage, const char *json, const char *const *head, int n_head,
                     double *seconds) {
    const char *args[96];
    int n = 0;
    for (int i = 0; i < n_head; ++i) args[n++] = head[i];
    for (int i = 0; i < c->n_pass; ++i)
        if (c->pass[i].stage == stage) {
            args[n++] = c->pass[i].name;
            if (c->pass[i].v) args[n++] = c->pass[i].v;
        }
    const double t0 = cli_now_s();
    const int rc = call_life(json, args, n);
    *seconds = cli_now_s() - t0;
    return rc;
}

/* What one subject's run measured and read, for its sidecar and its stats row. */
typedef struct unit {
    const cohort *c;
    const subject *s;
    char *fit, *rep; /* life fit's and life report's --json documents */
    double t_start, t_build, t_fit, t_report;
    int64_t n_streamlines;
    double reg[3]; /* lambda, ridge, group as the fit used them */
    int chosen;    /* life fit chose the value (--lambda auto) */
    char lambda_source[160], stop[128], backend[32], mw[64], mty[64];
    double fibers, kept;
} unit;

/* The regularisation the fit used: what life fit reports (its --lambda auto path reports the
 * chosen value, its penalty, and lambda, ridge and group), else the values given (0 when none). */
static void read_regularisation(unit *u) {
    char penalty[32] = "", rule[64] = "";
    u->chosen = !isnan(lc_json_number(u->fit, "chosen_value"));
    if (u->chosen) lc_json_member(u->fit, "penalty", penalty, sizeof penalty), lc_json_member(u->fit, "rule", rule, sizeof rule);
    snprintf(u->lambda_source, sizeof u->lambda_source, "given");
    if (u->chosen) snprintf(u->lambda_source, sizeof u->lambda_source, "chosen by life fit (%s%s%s)", penalty[0] ? penalty : "",
                            rule[0] ? ", rule " : "", rule);
    static const char *const reg_names[3] = {"lambda", "ridge", "group"};
    for (int k = 0; k < 3; ++k) {
        u->reg[k] = lc_json_number(u->fit, reg_names[k]);
        char opt[16];
        snprintf(opt, sizeof opt, "--%s", reg_names[k]);
        const char *given = lc_find_pass(u->c, opt);
        char *end = NULL;
        if (isnan(u->reg[k])) u->reg[k] = given ? strtod(given, &end) : 0.0; /* "auto", a list: NaN below */
        if (given && end && (end == given || *end)) u->reg[k] = NAN;
    }
    lc_json_member(u->fit, "stop", u->stop, sizeof u->stop);
    lc_json_member(u->fit, "backend", u->backend, sizeof u->backend);
    lc_json_member(u->fit, "mw_variant", u->mw, sizeof u->mw);
    lc_json_member(u->fit, "mty_variant", u->mty, sizeof u->mty);
    u->fibers = lc_json_number(u->rep, "fibers"), u->kept = lc_json_number(u->rep, "fibers_kept");
}

/* The main sidecar: options, results, sources, timings. */
static int write_weights_sidecar(const unit *u, const char *side) {
    const cohort *c = u->c;
    FILE *f = fopen(side, "w");
    if (!f) return cli_error("%s: cannot create: %s", side, strerror(errno));
    cli_json j;
    json_begin(&j, f);
    json_string(&j, "Description", "LiFE streamline weights: one per streamline of the input tractogram (0: not "
                                   "in the model), float64 NPY and text");
    json_sources(&j, u->s);
    json_object_begin(&j, "Parameters");
    for (int i = 0; i < c->n_pass; ++i) {
        char key[64];
        snprintf(key, sizeof key, "%s%s", c->pass[i].stage == 'b' ? "build " : c->pass[i].stage == 'f' ? "fit "
                                                                                                        : "report ",
                 c->pass[i].name + 2);
        json_string(&j, key, c->pass[i].v ? c->pass[i].v : "true");
    }
    json_object_end(&j);
    json_double(&j, "Lambda", u->reg[0]);
    json_double(&j, "Ridge", u->reg[1]);
    json_double(&j, "Group", u->reg[2]);
    json_string(&j, "LambdaSource", u->lambda_source);
    if (u->chosen) json_double(&j, "ChosenValue", lc_json_number(u->fit, "chosen_value"));
    if (c->lambda) json_string(&j, "LambdaOption", c->lambda);
    json_string(&j, "Backend", u->backend);
    json_string(&j, "MwVariant", u->mw);
    json_string(&j, "MtyVariant", u->mty);
    json_double(&j, "Updates", lc_json_number(u->fit, "updates"));
    json_string(&j, "Stop", u->stop);
    json_double(&j, "Objective", lc_json_number(u->fit, "objective"));
    json_double(&j, "RidgeMu", lc_json_number(u->fit, "ridge_mu"));
    if (c->group) json_double(&j, "GroupLambda", lc_json_number(u->fit, "group_lambda"));
    json_int(&j, "Streamlines", u->n_streamlines);
    json_double(&j, "Fibers", u->fibers);
    json_double(&j, "FibersKept", u->kept);
    json_double(&j, "Voxels", lc_json_number(u->rep, "voxels"));
    json_double(&j, "RelativeResidual", lc_json_number(u->rep, "relative_residual"));
    json_double(&j, "MedianRMSEBefore", lc_json_number(u->rep, "median_rmse_before"));
    json_double(&j, "MedianRMSEAfter", lc_json_number(u->rep, "median_rmse_after"));
    json_double(&j, "MedianRMSEAfterAllVolumes", lc_json_number(u->rep, "median_rmse_after_all_volumes"));
    json_object_begin(&j, "Timings");
    json_double(&j, "build_s", u->t_build);
    json_double(&j, "fit_s", u->t_fit);
    json_double(&j, "fit_solver_s", lc_json_number(u->fit, "seconds"));
    json_double(&j, "report_s", u->t_report);
    json_double(&j, "total_s", cli_now_s() - u->t_start);
    json_object_end(&j);
    json_end(&j);
    return fclose(f) == 0 ? 0 : cli_error("%s: write failed", side);
}

/* One row of the group table, timings last. */
static int write_stats_row(const unit *u, const char *stats) {
    const subject *s = u->s;
    FILE *f = fopen(stats, "w");
    if (!f) return cli_error("%s: cannot create: %s", stats, strerror(errno));
    lc_tsv_header(f);
    fprintf(f, "%s\t%s\tdone\t%lld\t%.0f\t%.0f\t%.6g\t%.0f\t%.0f\t%s\t%.9g\t%s\t%.9g\t%.9g\t%.9g\t%.6g\t%.6g\t%.6g\t%s"
               "\t%.3f\t%.3f\t%.3f\t%.3f\t\n",
            s->sub, s->ses[0] ? s->ses : "n/a", (long long)u->n_streamlines, u->fibers, u->kept,
            u->fibers > 0 ? u->kept / u->fibers : NAN, lc_json_number(u->rep, "voxels"), lc_json_number(u->fit, "updates"),
            u->stop, u->reg[0], u->lambda_source, u->reg[1], u->reg[2], lc_json_number(u->fit, "objective"),
            lc_json_number(u->rep, "relative_residual"), lc_json_number(u->rep, "median_rmse_before"),
            lc_json_number(u->rep, "median_rmse_after"), u->backend, u->t_build, u->t_fit, u->t_report,
            cli_now_s() - u->t_start);
    return fclose(f) == 0 ? 0 : cli_error("%s: write failed", stats);
}

/* The subject's folder (T, its temporary name): life report, then the weights, the maps, the
 * sidecars and the stats row. */
static int write_outputs(unit *u, const char *T, const char *work, const char *model, const char *wpath,
                         const char *ext) {
    const subject *s = u->s;
    char pruned[PATHN], wnpy[PATHN], wtxt[PATHN], m_after[PATHN], m_before[PATHN], stats[PATHN], side[PATHN];
    char bj[PATHN], fj[PATHN], rj[PATHN], csv[PATHN];
    lc_pathf(pruned, sizeof pruned, "%s/%s_model-life_desc-pruned_streamlines.%s", T, s->prefix, ext);
    lc_pathf(wnpy, sizeof wnpy, "%s/%s_model-life_streamlineweights.npy", T, s->prefix);
    lc_pathf(wtxt, sizeof wtxt, "%s/%s_model-life_streamlineweights.txt", T, s->prefix);
    lc_pathf(m_after, sizeof m_after, "%s/%s_model-life_param-rmse_dwimap.nii.gz", T, s->prefix);
    lc_pathf(m_before, sizeof m_before, "%s/%s_model-life_param-signalrms_dwimap.nii.gz", T, s->prefix);
    lc_pathf(stats, sizeof stats, "%s/%s_model-life_stats.tsv", T, s->prefix);
    lc_pathf(side, sizeof side, "%s/%s_model-life_streamlineweights.json", T, s->prefix);
    lc_pathf(bj, sizeof bj, "%s/build.json", work);
    lc_pathf(fj, sizeof fj, "%s/fit.json", work);
    lc_pathf(rj, sizeof rj, "%s/report.json", work);
    lc_pathf(csv, sizeof csv, "%s/rmse.csv", work);
    const char *head_r[] = {"life", "report", model, wpath, "--pruned", pruned, "--csv", csv, "--json"};
    int rc = run_stage(u->c, 'r', rj, head_r, (int)(sizeof head_r / sizeof *head_r), &u->t_report);
    if (rc == 0) rc = write_weights(model, wpath, wnpy, wtxt, &u->n_streamlines);
    if (rc == 0) rc = write_maps(s->dwi, csv, m_after, m_before);
    char *b = rc == 0 ? lc_read_text(bj) : NULL;
    u->fit = rc == 0 ? lc_read_text(fj) : NULL, u->rep = rc == 0 ? lc_read_text(rj) : NULL;
    if (rc == 0 && (!b || !u->fit || !u->rep)) rc = cli_error("%s: cannot read the commands' results", work);
    if (rc == 0) read_regularisation(u);
    if (rc == 0) rc = write_weights_sidecar(u, side);
    if (rc == 0) rc = write_sidecar(T, s, "model-life_desc-pruned_streamlines", "the streamlines with a LiFE weight above "
                                    "the threshold (report --threshold, 0 by default), records copied from the input", NULL);
    if (rc == 0) rc = write_sidecar(T, s, "model-life_param-rmse_dwimap", "RMSE per voxel of the LiFE prediction over the "
                                    "diffusion directions (demeaned signal); 0 outside the model's voxels", "same as the DWI");
    if (rc == 0) rc = write_sidecar(T, s, "model-life_param-signalrms_dwimap", "RMS per voxel of the demeaned diffusion "
                                    "signal (the RMSE of predicting nothing); 0 outside the model's voxels", "same as the DWI");
    if (rc == 0) rc = write_stats_row(u, stats);
    free(b), free(u->fit), free(u->rep);
    u->fit = u->rep = NULL;
    return rc;
}

int lc_run_one(const cohort *c, const subject *s) {
    unit u = {.c = c, .s = s, .t_start = cli_now_s()};
    char work[PATHN], model[PATHN], wpath[PATHN], bj[PATHN], fj[PATHN], tracks[PATHN];
    lc_pathf(work, sizeof work, "%s/.work/%s", c->out, s->key);
    lc_remove_tree(work); /* what a killed run left */
    if (cli_make_dirs(work)) return 1;
    lc_pathf(model, sizeof model, "%s/model", work);
    lc_pathf(wpath, sizeof wpath, "%s/weights.npy", work);
    lc_pathf(bj, sizeof bj, "%s/build.json", work);
    lc_pathf(fj, sizeof fj, "%s/fit.json", work);
    snprintf(tracks, sizeof tracks, "%s", s->tracks);
    if (lc_ends_with(s->tracks, ".gz")) {
        lc_pathf(tracks, sizeof tracks, "%s/tracks%s", work, lc_ends_with(s->tracks, ".tck.gz") ? ".tck" : ".trk");
        if (lc_gunzip(s->tracks, tracks)) return 1;
    }
    const char *ext = lc_ends_with(tracks, ".trk") ? "trk" : lc_ends_with(tracks, ".trx") ? "trx" : "tck";
    char threads[32];
    snprintf(threads, sizeof threads, "%d", c->threads);
    const char *head_b[] = {"life", "build", "--dwi", s->dwi, "--bvals", s->bval, "--bvecs", s->bvec, "--tracks",
                            tracks, "--out", model, "--threads", threads, "--json", "--parcels", s->parcels};
    const int n_b = (int)(sizeof head_b / sizeof *head_b) - (s->parcels[0] ? 0 : 2);
    int rc = run_stage(c, 'b', bj, head_b, n_b, &u.t_build);
    if (rc) return rc;
    const char *head_f[] = {"life", "fit", model, "--out", wpath, "--threads", threads, "--json"};
    rc = run_stage(c, 'f', fj, head_f, (int)(sizeof head_f / sizeof *head_f), &u.t_fit);
    if (rc) return rc;
    /* the subject's folder, under a temporary name until every file is in it */
    ns_output_dir *od = NULL;
    if (cli_make_parent_dir(s->out_dir)) return 1;
    ns_status st = ns_output_dir_open(s->out_dir, &od);
    if (st != NS_OK) return cli_status_error("life cohort", st);
    rc = write_outputs(&u, ns_output_dir_path(od), work, model, wpath, ext);
    if (rc == 0) {
        if ((st = ns_output_dir_commit(od)) != NS_OK) rc = cli_status_error("life cohort", st);
    } else {
        ns_output_dir_abort(od);
    }
    if (rc == 0) lc_remove_tree(work);
    return rc;
}
