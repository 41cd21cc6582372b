/* neurosolve life cohort: LiFE over a BIDS derivatives folder (docs/life.md, "Studies: life cohort").
 *   life cohort DERIV_DIR --out OUT_DIR   per subject (and session): life build, fit and report,
 *                                         outputs in BIDS-derivatives layout, a group table
 *   life synth DIR --cohort N             a synthetic derivatives folder (phantoms + the bundled case)
 *
 * Each subject runs in a child process (fork) that calls `life build`, `life fit` and `life report`
 * (cmd_life) with their --json output captured; the child writes the subject's folder under a
 * temporary name (ns_output_dir) renamed into place only when every file is written, so a subject
 * whose folder exists is complete and is not redone. A failed subject does not stop the others. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "life_cohort.h"

static volatile sig_atomic_t stop_signal = 0;

static void draw(const cohort *c, const subject *list, int n, double t0, int final) {
    if (c->quiet || c->as_json || !isatty(fileno(stderr))) return;
    int done = 0, failed = 0, todo = 0, running = 0;
    double spent = 0;
    int ran = 0;
    char names[256] = "";
    for (int i = 0; i < n; ++i) {
        done += list[i].state == DONE || list[i].state == COMPLETE;
        failed += list[i].state == FAILED;
        todo += list[i].state == PENDING || list[i].state == RUNNING;
        if (list[i].state == DONE) spent += list[i].seconds, ++ran;
        if (list[i].state == RUNNING) {
            const size_t l = strlen(names);
            snprintf(names + l, sizeof names - l, "%s%s", running++ ? ", " : "", list[i].key);
        }
    }
    const int width = 30, filled = n ? (int)((double)(done + failed) * width / n) : width;
    char bar[64], left[64] = "";
    for (int i = 0; i < width; ++i) bar[i] = i < filled ? '#' : '.';
    bar[width] = '\0';
    if (ran && todo) snprintf(left, sizeof left, ", about %.0f s left", spent / ran * todo / (c->jobs > 0 ? c->jobs : 1));
    fprintf(stderr, "\r[%s] %d/%d subjects done, %d failed  %.0f s%s%s%s   ", bar, done, n, failed, cli_now_s() - t0, left,
            running ? "  running: " : "", names);
    if (final) fputc('\n', stderr);
    fflush(stderr);
}

/* The last "neurosolve: ..." line of a subject's log: its error. */
static void log_error(const char *log, char *out, size_t cap) {
    char *text = lc_read_text(log);
    out[0] = '\0';
    for (char *p = text, *line; p && (line = strstr(p, "neurosolve: ")); p = line + 1) {
        const char *e = strchr(line, '\n');
        snprintf(out, cap, "%.*s", (int)(e ? e - line - 12 : (long)strlen(line) - 12), line + 12);
    }
    free(text);
}

static int launch(const cohort *c, subject *s) {
    char log[PATHN];
    lc_pathf(log, sizeof log, "%s/logs/%s.log", c->out, s->key);
    fflush(NULL);
    const pid_t pid = fork();
    if (pid < 0) return cli_error("%s: cannot start a process: %s", s->key, strerror(errno));
    if (pid == 0) {
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        const int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) dup2(fd, STDOUT_FILENO), dup2(fd, STDERR_FILENO), close(fd);
        const int rc = lc_run_one(c, s);
        fflush(NULL);
        _exit(rc);
    }
    s->pid = pid, s->state = RUNNING, s->t0 = cli_now_s();
    return 0;
}

static void finished(const cohort *c, subject *s, int status) {
    s->seconds = cli_now_s() - s->t0;
    char log[PATHN];
    lc_pathf(log, sizeof log, "%s/logs/%s.log", c->out, s->key);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        s->state = DONE;
    } else if (stop_signal) {
        s->state = INTERRUPTED;
    } else {
        s->state = FAILED;
        s->rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        log_error(log, s->error, sizeof s->error);
        if (!WIFEXITED(status))
            snprintf(s->error + strlen(s->error), sizeof s->error - strlen(s->error), "%skilled by signal %d",
                     s->error[0] ? "; " : "", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        else if (!s->error[0]) snprintf(s->error, sizeof s->error, "exit status %d", s->rc);
    }
    if (c->quiet || c->as_json || isatty(fileno(stderr))) return;
    if (s->state == DONE) fprintf(stderr, "%s: done in %.1f s\n", s->key, s->seconds);
    else if (s->state == FAILED) fprintf(stderr, "%s: failed: %s (log: %s)\n", s->key, s->error, log);
}

static void write_dataset_description(const cohort *c) {
    char p[PATHN], abs[PATHN];
    lc_pathf(p, sizeof p, "%s/dataset_description.json", c->out);
    if (lc_is_file(p)) return;
    ns_output *o = cli_output_open(p);
    FILE *f = ns_output_stream(o);
    if (!f) return;
    if (!realpath(c->deriv, abs)) snprintf(abs, sizeof abs, "%s", c->deriv);
    cli_json j;
    json_begin(&j, f);
    json_string(&j, "Name", "LiFE connectome pruning (neurosolve life cohort)");
    json_string(&j, "BIDSVersion", "1.10.0");
    json_string(&j, "DatasetType", "derivative");
    lc_json_generated_by(&j, "life cohort: life build, life fit and life report per subject (docs/life.md)");
    json_array_begin(&j, "SourceDatasets");
    json_object_begin(&j, NULL);
    char url[PATHN + 8];
    snprintf(url, sizeof url, "file://%s", abs);
    json_string(&j, "URL", url);
    json_object_end(&j);
    json_array_end(&j);
    json_end(&j);
    cli_output_commit(o);
}

/* OUT/life_cohort.tsv: every subject's row (from its stats file, or its failure), the column
 * descriptions as its JSON sidecar, and OUT/life_cohort.png when matplotlib is there. */
static int write_group(const cohort *c, const subject *list, int n) {
    char p[PATHN], js[PATHN], png[PATHN];
    lc_pathf(p, sizeof p, "%s/life_cohort.tsv", c->out);
    lc_pathf(js, sizeof js, "%s/life_cohort.json", c->out);
    lc_pathf(png, sizeof png, "%s/life_cohort.png", c->out);
    ns_output *o = cli_output_open(p);
    FILE *f = ns_output_stream(o);
    if (!f) return 1;
    lc_tsv_header(f);
    for (int i = 0; i < n; ++i) {
        const subject *s = &list[i];
        char stats[PATHN];
        lc_pathf(stats, sizeof stats, "%s/%s_model-life_stats.tsv", s->out_dir, s->prefix);
        char *row = s->state == DONE || s->state == COMPLETE ? lc_read_text(stats) : NULL;
        const char *nl = row ? strchr(row, '\n') : NULL;
        if (nl && nl[1]) fputs(nl + 1, f);
        else {
            fprintf(f, "%s\t%s\t%s", s->sub, s->ses[0] ? s->ses : "n/a",
                    s->state == INTERRUPTED ? "interrupted" : s->state == PENDING ? "not run" : "failed");
            for (int k = 1; k < LC_N_STAT - 1; ++k) fprintf(f, "\tn/a");
            char err[1024];
            snprintf(err, sizeof err, "%s", s->error);
            for (char *q = err; *q; ++q)
                if (*q == '\t' || *q == '\n') *q = ' ';
            fprintf(f, "\t%s\n", err);
        }
        free(row);
    }
    if (cli_output_commit(o)) return 1;
    ns_output *oj = cli_output_open(js);
    FILE *g = ns_output_stream(oj);
    if (!g) return 1;
    static const char *const desc[][2] = {
        {"participant_id", "subject label"},
        {"session_id", "session label (n/a without sessions)"},
        {"status", "done, failed, interrupted or not run"},
        {"streamlines", "streamlines of the input tractogram"},
        {"fibers", "streamlines in the model (those with nodes in the image)"},
        {"fibers_kept", "fibers with a weight above the report threshold"},
        {"lambda", "L1 weight the fit used (as life fit reports it, after --lambda auto the chosen one; else --lambda)"},
        {"lambda_source", "given, or chosen by life fit (its penalty and rule)"},
        {"ridge", "ridge weight (as life fit reports it, else --ridge)"},
        {"group", "group-sparsity weight G (as life fit reports it, else --group)"},
        {"relative_residual", "||y - Mw|| / ||y|| over the demeaned signal"},
        {"median_rmse_before", "median over voxels of the demeaned signal's RMS"},
        {"median_rmse_after", "median over voxels of the RMSE after the fit"},
        {"total_s", "wall time of the subject [s] (build_s, fit_s, report_s: its parts)"},
        {"error", "the failure's message (see logs/KEY.log)"}};
    cli_json j;
    json_begin(&j, g);
    for (size_t k = 0; k < sizeof desc / sizeof *desc; ++k) {
        json_object_begin(&j, desc[k][0]);
        json_string(&j, "Description", desc[k][1]);
        json_object_end(&j);
    }
    json_end(&j);
    if (cli_output_commit(oj)) return 1;
    if (!c->plot) return 0;
    const int rc = cli_plot("bench/plot_life_cohort.py", p, png, NULL);
    if (rc == 0 && cli_plot_available() && !c->quiet && !c->as_json) printf("plot: %s\n", png);
    return rc;
}

static const char *const usage_cohort =
    "usage: neurosolve life cohort DERIV_DIR --out OUT_DIR [options]\n"
    "Per subject (and session) of a BIDS derivatives folder: life build, life fit and life report;\n"
    "outputs in BIDS-derivatives layout under OUT_DIR, a group table OUT_DIR/life_cohort.tsv (docs/life.md).\n"
    "A subject whose outputs are complete is not redone: rerun the same command after a failure or a kill.\n"
    "inputs (DERIV_DIR/sub-X[/ses-Y]/dwi/):\n"
    "  KEY_*_dwi.nii[.gz] with .bval/.bvec, a tractogram KEY_*.tck|.trk|.trx|.tck.gz|.trk.gz\n"
    "  --tracks-dir DIR      tractograms from another derivatives folder of the same layout (QSIRecon's)\n"
    "  --dwi-match E,E       entities the DWI's name must hold (e.g. space-T1w,desc-preproc)\n"
    "  --tracks-match E,E    entities the tractogram's name must hold (e.g. model-ifod2)\n"
    "  --parcels-match E,E   for --group: the KEY_*_dseg.nii[.gz] (dwi/ or anat/) with these entities\n"
    "  --participant-label L,L   only these subjects (01 or sub-01)\n"
    "passed on: build --L --nodes --axial --radial --b0-threshold --skip-bad; fit --iters --lambda --ridge\n"
    "  --group --rtolo --rtolg --backend --mw --mty; report --threshold (life SUB --help)\n"
    "running:\n"
    "  --jobs N              CPU subjects at once (1); with a GPU the subjects run one after another\n"
    "  --max-gb G            memory the subjects running at once may need by their estimate (80 % of RAM)\n"
    "  --threads T           threads per subject (the processors / jobs)\n"
    "  --no-plot             no OUT_DIR/life_cohort.png (drawn when python3 has matplotlib)\n"
    "  --quiet --json        no progress; one JSON document on stdout\n";

/* The command line into `c` (defaults set here); 0, or the exit code of a refusal. */
static int parse_options(int argc, char **argv, cohort *c, double *gb) {
    const char *cmd = "life cohort";
    memset(c, 0, sizeof *c);
    c->deriv = argv[1];
    c->jobs = 1, c->plot = 1, c->L = 180;
    c->backend = NS_BACKEND_AUTO;
    long long x = 0;
    static const struct {
        const char *name;
        char stage, kind; /* d double, l integer, s string, f flag */
        double lo, hi;
    } opts[] = {{"--L", 'b', 'l', 2, 4096},          {"--nodes", 'b', 's', 0, 0},       {"--axial", 'b', 'd', 0, 100},
                {"--radial", 'b', 'd', 0, 100},      {"--b0-threshold", 'b', 'd', 0, 1e5}, {"--skip-bad", 'b', 'f', 0, 0},
                {"--iters", 'f', 'l', 1, 1e8},       {"--lambda", 'f', 's', 0, 0},      {"--ridge", 'f', 'd', 0, 1e300},
                {"--group", 'f', 'd', 0, 1e300},     {"--rtolo", 'f', 'd', 0, 1e300},   {"--rtolg", 'f', 'd', 0, 1e300},
                {"--backend", 'f', 's', 0, 0},       {"--mw", 'f', 's', 0, 0},          {"--mty", 'f', 's', 0, 0},
                {"--threshold", 'r', 'd', 0, 1e300}};
    for (int i = 2; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = 1, taken = 0;
        for (size_t k = 0; k < sizeof opts / sizeof *opts && !taken; ++k) {
            if (strcmp(a, opts[k].name) != 0) continue;
            taken = 1;
            if (opts[k].kind != 'f' && !v) return cli_usage_error(cmd, "%s needs a value", a);
            if (opts[k].kind == 'd') {
                double d;
                ok = cli_parse_double(cmd, a, v, opts[k].lo, opts[k].hi, &d);
                if (strcmp(a, "--group") == 0) c->group = d > 0;
            } else if (opts[k].kind == 'l') {
                ok = cli_parse_long(cmd, a, v, (long long)opts[k].lo, (long long)opts[k].hi, &x);
                if (strcmp(a, "--L") == 0) c->L = x;
            } else if (strcmp(a, "--backend") == 0) {
                const int bad = cli_parse_backend(cmd, a, v, &c->backend);
                if (bad) return bad;
            } else if (strcmp(a, "--lambda") == 0) {
                c->lambda = v;
            }
            if (c->n_pass == (int)(sizeof c->pass / sizeof *c->pass)) return cli_usage_error(cmd, "too many options");
            c->pass[c->n_pass++] = (passed){a, opts[k].kind == 'f' ? NULL : v, opts[k].stage};
            if (opts[k].kind != 'f') ++i;
        }
        if (taken) {
            if (!ok) return 2;
            continue;
        }
        if (strcmp(a, "--out") == 0 && v) c->out = v, ++i;
        else if (strcmp(a, "--tracks-dir") == 0 && v) c->tracks_dir = v, ++i;
        else if (strcmp(a, "--dwi-match") == 0 && v) c->dwi_match = v, ++i;
        else if (strcmp(a, "--tracks-match") == 0 && v) c->tracks_match = v, ++i;
        else if (strcmp(a, "--parcels-match") == 0 && v) c->parcels_match = v, ++i;
        else if (strcmp(a, "--participant-label") == 0 && v) c->participants = v, ++i;
        else if (strcmp(a, "--jobs") == 0) ok = cli_parse_long(cmd, a, v, 1, 4096, &x), c->jobs = (int)x, ++i;
        else if (strcmp(a, "--threads") == 0) ok = cli_parse_long(cmd, a, v, 1, 4096, &x), c->threads = (int)x, ++i;
        else if (strcmp(a, "--max-gb") == 0) ok = cli_parse_double(cmd, a, v, 1e-6, 1e9, gb), ++i;
        else if (strcmp(a, "--no-plot") == 0) c->plot = 0;
        else if (strcmp(a, "--quiet") == 0) c->quiet = 1;
        else if (strcmp(a, "--json") == 0) c->as_json = 1;
        else return cli_usage_error(cmd, "unknown option or missing value '%s'", a);
        if (!ok) return 2;
    }
    if (!c->out) return cli_usage_error(cmd, "--out OUT_DIR is required");
    return 0;
}

/* The subjects' processes, --jobs at once within the memory budget, until all have ended or a
 * signal stops them (passed on to the running ones). 1 when a subject's options were refused. */
static int run_all(const cohort *c, subject *list, int n) {
    const double t0 = cli_now_s();
    int usage_stop = 0;
    for (;;) {
        if (cli_interrupted() && !stop_signal) {
            stop_signal = cli_interrupted();
            for (int i = 0; i < n; ++i)
                if (list[i].state == RUNNING) kill(list[i].pid, SIGTERM);
        }
        int running = 0;
        double used = 0;
        for (int i = 0; i < n; ++i)
            if (list[i].state == RUNNING) ++running, used += list[i].est_bytes;
        for (int i = 0; i < n && !stop_signal && !usage_stop && running < c->jobs; ++i) {
            subject *s = &list[i];
            if (s->state != PENDING) continue;
            if (running > 0 && used + s->est_bytes > c->max_bytes) break; /* in order: wait for memory */
            if (running == 0 && s->est_bytes > c->max_bytes && !c->quiet)
                fprintf(stderr, "%sneurosolve: warning: %s may need %.1f GB (estimate), more than --max-gb %.1f: it runs "
                                "alone\n", isatty(fileno(stderr)) ? "\n" : "", s->key, s->est_bytes / 1e9, c->max_bytes / 1e9);
            if (launch(c, s)) {
                s->state = FAILED;
                snprintf(s->error, sizeof s->error, "%s", "cannot start a process");
                continue;
            }
            ++running, used += s->est_bytes;
        }
        if (running == 0) break;
        draw(c, list, n, t0, 0);
        int status = 0;
        const pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid > 0) {
            for (int i = 0; i < n; ++i)
                if (list[i].state == RUNNING && list[i].pid == pid) {
                    finished(c, &list[i], status);
                    if (list[i].state == FAILED && list[i].rc == 2) usage_stop = 1; /* refused options: all would fail */
                }
        } else {
            const struct timespec nap = {0, 50 * 1000 * 1000};
            nanosleep(&nap, NULL);
        }
    }
    draw(c, list, n, t0, 1);
    return usage_stop;
}

/* The subjects done (now or before), failed and not done (interrupted or not started). */
static void tally(const subject *list, int n, int *done, int *failed, int *interrupted) {
    *done = *failed = *interrupted = 0;
    for (int i = 0; i < n; ++i) {
        *done += list[i].state == DONE || list[i].state == COMPLETE;
        *failed += list[i].state == FAILED;
        *interrupted += list[i].state == INTERRUPTED || list[i].state == PENDING;
    }
}

/* The run's outcome: a JSON document (--json) or a line per run and failure. */
static void report_run(const cohort *c, const subject *list, int n, int skipped) {
    int done, failed, interrupted;
    tally(list, n, &done, &failed, &interrupted);
    if (c->as_json) {
        cli_json j;
        json_begin(&j, stdout);
        json_string(&j, "derivatives", c->deriv);
        json_string(&j, "out", c->out);
        json_int(&j, "subjects", n);
        json_int(&j, "done", done);
        json_int(&j, "complete_before", skipped);
        json_int(&j, "failed", failed);
        json_int(&j, "not_done", interrupted);
        json_array_begin(&j, "results");
        for (int i = 0; i < n; ++i) {
            const subject *s = &list[i];
            json_object_begin(&j, NULL);
            json_string(&j, "subject", s->key);
            json_string(&j, "status", s->state == DONE ? "done" : s->state == COMPLETE ? "complete before"
                                      : s->state == FAILED ? "failed" : "not done");
            if (s->state == DONE) json_double(&j, "seconds", s->seconds);
            if (s->state == FAILED) json_string(&j, "error", s->error);
            json_object_end(&j);
        }
        json_array_end(&j);
        json_end(&j);
    } else if (!c->quiet) {
        printf("%s: %d of %d subjects done (%d before this run), %d failed%s; group table %s/life_cohort.tsv\n", c->out,
               done, n, skipped, failed, interrupted ? ", some not done" : "", c->out);
        for (int i = 0; i < n && isatty(fileno(stderr)); ++i)
            if (list[i].state == FAILED) printf("  %s: failed: %s\n", list[i].key, list[i].error);
    }
}

int life_cohort(int argc, char **argv) {
    const char *cmd = "life cohort";
    for (int i = 1; i < argc; ++i)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return printf("%s", usage_cohort), 0;
    if (argc < 2 || argv[1][0] == '-') return cli_usage_error(cmd, "missing the derivatives folder");
    cohort c;
    double gb = 0;
    const int bad = parse_options(argc, argv, &c, &gb);
    if (bad) return bad;
    if (!lc_is_dir(c.deriv)) return cli_error("%s: %s: not a folder", cmd, c.deriv);
    if (c.tracks_dir && !lc_is_dir(c.tracks_dir)) return cli_error("%s: --tracks-dir %s: not a folder", cmd, c.tracks_dir);
    /* GPU fits run one after another: they share the device's memory */
    int gpus = 0;
    if (c.backend != NS_BACKEND_CPU && ns_cuda_device_count(&gpus) == NS_OK && gpus > 0 && c.jobs > 1) {
        if (!c.quiet) fprintf(stderr, "neurosolve: note: %d GPU(s) here: the subjects run one after another (--jobs is "
                                      "for --backend cpu)\n", gpus);
        c.jobs = 1;
    }
    ns_clear_error();
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (!c.threads) c.threads = cpus > c.jobs ? (int)(cpus / c.jobs) : 1;
    const double ram = cli_physical_memory();
    c.max_bytes = gb > 0 ? gb * 1e9 : ram > 0 ? 0.8 * ram : 1e300;
    if (c.plot) cli_plot_check("life_cohort.png");
    int n = 0;
    subject *list = lc_discover(&c, &n);
    if (!list) return cli_error("%s: %s: cannot read the folder", cmd, c.deriv);
    if (n == 0) {
        free(list);
        return cli_error("%s: %s holds no sub-*/[ses-*/]dwi folder%s", cmd, c.deriv,
                         c.participants ? " of the --participant-label subjects" : "");
    }
    char logs[PATHN];
    lc_pathf(logs, sizeof logs, "%s/logs", c.out);
    if (cli_make_dirs(logs)) {
        free(list);
        return 1;
    }
    write_dataset_description(&c);
    int skipped = 0;
    for (int i = 0; i < n; ++i)
        if (list[i].state == PENDING && lc_complete(&list[i])) list[i].state = COMPLETE, ++skipped;
    if (!c.quiet && !c.as_json)
        fprintf(stderr, "life cohort: %d subject%s in %s, %d complete already, %d job%s of %d thread%s\n", n,
                n == 1 ? "" : "s", c.deriv, skipped, c.jobs, c.jobs == 1 ? "" : "s", c.threads, c.threads == 1 ? "" : "s");
    if (!c.quiet && !c.as_json && !isatty(fileno(stderr)))
        for (int i = 0; i < n; ++i)
            if (list[i].state == FAILED) fprintf(stderr, "%s: failed: %s\n", list[i].key, list[i].error);
    cli_catch_signals();
    const int usage_stop = run_all(&c, list, n);
    const int signal_number = (int)stop_signal;
    cli_release_signals();
    int rc = 0;
    if (!signal_number) { /* what the subjects' processes left (a failure's model, a kill after a commit) */
        char work[PATHN];
        lc_pathf(work, sizeof work, "%s/.work", c.out);
        lc_remove_tree(work);
        rc = write_group(&c, list, n);
    }
    report_run(&c, list, n, skipped);
    int done, failed, interrupted;
    tally(list, n, &done, &failed, &interrupted);
    free(list);
    if (signal_number) {
        return cli_error("life cohort interrupted (%s): %d of %d subjects done; run the same command to continue",
                         signal_number == SIGTERM ? "SIGTERM" : "SIGINT", done, n);
    }
    if (usage_stop) return cli_error("life cohort: the options were refused (see the failed subject's log): stopped");
    if (failed) return cli_error("life cohort: %d of %d subjects failed (logs in %s/logs)", failed, n, c.out);
    return rc;
}
