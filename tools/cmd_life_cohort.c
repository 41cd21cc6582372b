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
#include <stdarg.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "cli.h"

int life_cohort(int argc, char **argv);
int life_synth_cohort(int argc, char **argv);

enum { PATHN = 4096 };

/* ------------------------------------------------------------- small helpers */

/* snprintf for paths: a path that does not fit is cut (the file is then not found, or not
 * created, and that error names it). */
static void pathf(char *dst, size_t cap, const char *format, ...) {
    va_list ap;
    va_start(ap, format);
    vsnprintf(dst, cap, format, ap);
    va_end(ap);
}

static int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int ends_with(const char *s, const char *tail) {
    const size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

static int starts_with(const char *s, const char *head) { return strncmp(s, head, strlen(head)) == 0; }

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The sorted names in `dir` that start with `prefix` (NULL-terminated, malloc'ed; NULL if unreadable). */
static char **list_dir(const char *dir, const char *prefix, int *count) {
    *count = 0;
    DIR *d = opendir(dir);
    if (!d) return NULL;
    int cap = 16;
    char **names = malloc((size_t)cap * sizeof *names);
    for (struct dirent *e; names && (e = readdir(d));) {
        if (e->d_name[0] == '.' || !starts_with(e->d_name, prefix)) continue;
        if (*count + 1 >= cap) {
            char **m = realloc(names, (size_t)(cap *= 2) * sizeof *names);
            if (!m) break;
            names = m;
        }
        names[(*count)++] = strdup(e->d_name);
    }
    closedir(d);
    if (!names) return NULL;
    qsort(names, (size_t)*count, sizeof *names, by_name);
    names[*count] = NULL;
    return names;
}

static void free_list(char **names) {
    for (char **p = names; p && *p; ++p) free(*p);
    free(names);
}

/* Remove a folder and what it holds (its sub-folders too); a missing folder is fine. */
static void remove_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    char p[PATHN];
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        pathf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) remove_tree(p); /* a link is removed, not followed */
        else unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

/* The whole of a (small) text file, NUL-terminated, malloc'ed; NULL if unreadable. */
static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *s = malloc(cap);
    for (size_t got; s && (got = fread(s + n, 1, cap - n - 1, f)) > 0;) {
        n += got;
        if (n + 1 >= cap) {
            char *m = realloc(s, cap *= 2);
            if (!m) free(s);
            s = m;
        }
    }
    fclose(f);
    if (s) s[n] = '\0';
    return s;
}

/* The value of the top-level member `key` of a JSON object written by this command's --json
 * (tools/json.c): a number or a string (without quotes; the writer's escapes are kept as they
 * are). 1 when found and copied into `value`. */
static int json_member(const char *text, const char *key, char *value, size_t cap) {
    int depth = 0;
    const size_t klen = strlen(key);
    for (const char *p = text; p && *p; ++p) {
        if (*p == '{' || *p == '[') ++depth;
        else if (*p == '}' || *p == ']') --depth;
        else if (*p == '"') {
            const char *s = ++p;
            while (*p && *p != '"') p += *p == '\\' && p[1] ? 2 : 1;
            if (!*p) return 0;
            const char *colon = p + 1;
            while (*colon == ' ') ++colon;
            if (depth != 1 || *colon != ':' || (size_t)(p - s) != klen || strncmp(s, key, klen) != 0) continue;
            const char *v = colon + 1, *e;
            while (*v == ' ') ++v;
            if (*v == '"') {
                e = ++v;
                while (*e && *e != '"') e += *e == '\\' && e[1] ? 2 : 1;
            } else {
                e = v;
                while (*e && *e != ',' && *e != '}' && *e != ']') ++e;
            }
            snprintf(value, cap, "%.*s", (int)(e - v), v);
            return 1;
        }
    }
    return 0;
}

static double json_number(const char *text, const char *key) {
    char v[64];
    return json_member(text, key, v, sizeof v) ? strtod(v, NULL) : NAN;
}

/* "_key-value_" in "_NAME": a BIDS entity of the file name (NAME starts with sub-X_). */
static int has_entities(const char *name, const char *entities) {
    if (!entities || !*entities) return 1;
    char list[1024], probe[300], padded[PATHN];
    snprintf(list, sizeof list, "%s", entities);
    snprintf(padded, sizeof padded, "_%s", name);
    for (char *save = NULL, *e = strtok_r(list, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
        snprintf(probe, sizeof probe, "_%s_", e);
        if (!strstr(padded, probe)) return 0;
    }
    return 1;
}

/* ------------------------------------------------------------- the subjects */

typedef enum { PENDING, COMPLETE, RUNNING, DONE, FAILED, INTERRUPTED } sstate;

typedef struct subject {
    char sub[128], ses[128];          /* labels with their prefixes ("sub-01", "ses-1" or "") */
    char key[300];                    /* file prefix: sub-01[_ses-1] */
    char prefix[400];                 /* output prefix: key[_space-X] */
    char dwi[PATHN], bval[PATHN], bvec[PATHN], tracks[PATHN], parcels[PATHN];
    char out_dir[PATHN];              /* OUT/sub-01[/ses-1]/dwi */
    char problem[1024];               /* found when looking for the inputs: fails without running */
    double est_bytes, t0, seconds;
    sstate state;
    pid_t pid;
    int rc;
    char error[1024];
} subject;

/* The options passed on to life build (b), fit (f) and report (r); v is the value (NULL: a flag). */
typedef struct passed {
    const char *name, *v;
    char stage;
} passed;

typedef struct cohort {
    const char *deriv, *out, *tracks_dir, *dwi_match, *tracks_match, *parcels_match, *participants;
    passed pass[32];
    int n_pass, jobs, threads, quiet, as_json, plot, group;
    double max_bytes;
    long long L;
    ns_backend backend;
    const char *lambda; /* as given: a number, or what life fit's --lambda takes (auto, a list) */
} cohort;

static const char *find_pass(const cohort *c, const char *name) {
    for (int i = 0; i < c->n_pass; ++i)
        if (strcmp(c->pass[i].name, name) == 0) return c->pass[i].v ? c->pass[i].v : "";
    return NULL;
}

/* The one file in `dir` named KEY_..._SUFFIX with the entities, for one of the suffixes; its
 * path in `path`. 0: found; else the problem is in `problem`. */
static int find_one(const char *dir, const char *key, const char *const *suffixes, const char *entities,
                    const char *what, const char *hint, char *path, char *problem, size_t cap) {
    int n = 0, hits = 0;
    char prefix[320];
    snprintf(prefix, sizeof prefix, "%s_", key);
    char **names = list_dir(dir, prefix, &n);
    char found[1024] = "";
    for (int i = 0; i < n; ++i) {
        int ok = 0;
        for (const char *const *s = suffixes; *s && !ok; ++s) ok = ends_with(names[i], *s);
        if (!ok || !has_entities(names[i], entities)) continue;
        if (hits++ == 0) pathf(path, PATHN, "%s/%s", dir, names[i]);
        const size_t l = strlen(found);
        snprintf(found + l, sizeof found - l, "%s%s", l ? ", " : "", names[i]);
    }
    free_list(names);
    if (hits == 1) return 0;
    if (hits == 0)
        snprintf(problem, cap, "no %s in %s (%s_*%s%s%s)", what, dir, key, suffixes[0],
                 entities && *entities ? " with " : "", entities && *entities ? entities : "");
    else snprintf(problem, cap, "%d %ss match in %s (%s): choose one with %s", hits, what, dir, found, hint);
    return 1;
}

/* Bytes the subject may need at once: the image in its datatype, the dictionary ((L-1)L+1 atoms
 * x volumes), three voxel-space vectors over the whole grid and about 10 bytes per tractogram
 * byte (a node is 12 bytes in .tck/.trk and gives at most one 20-byte coefficient, kept in three
 * orders, plus the build's keys). A rough upper estimate, used only to schedule --jobs. */
static double estimate_bytes(const subject *s, long long L) {
    double image = 0, vox = 0, vols = 1;
    gzFile g = gzopen(s->dwi, "rb");
    unsigned char h[348];
    if (g && gzread(g, h, sizeof h) == (int)sizeof h) {
        const int swap = !(h[0] == 0x5c && h[1] == 0x01); /* sizeof_hdr 348, little-endian */
        double dims[8];
        for (int i = 0; i < 8; ++i) {
            const unsigned char *p = h + 40 + 2 * i;
            dims[i] = (double)(int16_t)(swap ? (p[0] << 8 | p[1]) : (p[1] << 8 | p[0]));
        }
        const unsigned char *b = h + 72;
        const int bitpix = (int16_t)(swap ? (b[0] << 8 | b[1]) : (b[1] << 8 | b[0]));
        vox = fmax(dims[1], 1) * fmax(dims[2], 1) * fmax(dims[3], 1);
        vols = dims[0] >= 4 ? fmax(dims[4], 1) : 1;
        image = vox * vols * fmax(bitpix, 8) / 8;
    }
    if (g) gzclose(g);
    struct stat st;
    const double tracks = stat(s->tracks, &st) == 0 ? (double)st.st_size * (ends_with(s->tracks, ".gz") ? 4 : 1) : 0;
    return image + (double)((L - 1) * L + 1) * vols * 8 + 3 * vox * vols * 8 + 10 * tracks;
}

/* The subjects (and sessions) of the derivatives folder, in name order. */
static subject *discover(const cohort *c, int *count) {
    *count = 0;
    int n_sub = 0, cap = 16;
    char **subs = list_dir(c->deriv, "sub-", &n_sub);
    subject *list = calloc((size_t)cap, sizeof *list);
    if (!subs || !list) {
        free_list(subs);
        free(list);
        return NULL;
    }
    char dir[PATHN];
    for (int i = 0; i < n_sub; ++i) {
        pathf(dir, sizeof dir, "%s/%s", c->deriv, subs[i]);
        if (!is_dir(dir)) continue;
        if (c->participants) { /* --participant-label 01,02 (with or without sub-) */
            char want[1024];
            snprintf(want, sizeof want, "%s", c->participants);
            int keep = 0;
            for (char *save = NULL, *t = strtok_r(want, ",", &save); t && !keep; t = strtok_r(NULL, ",", &save))
                keep = strcmp(subs[i] + 4, starts_with(t, "sub-") ? t + 4 : t) == 0;
            if (!keep) continue;
        }
        int n_ses = 0;
        char **sess = list_dir(dir, "ses-", &n_ses);
        for (int k = 0; k < (n_ses ? n_ses : 1); ++k) {
            char sdir[PATHN];
            if (n_ses) pathf(sdir, sizeof sdir, "%s/%s", dir, sess[k]);
            if (n_ses && !is_dir(sdir)) continue;
            if (*count == cap) {
                subject *m = realloc(list, (size_t)(cap *= 2) * sizeof *list);
                if (!m) break;
                list = m;
            }
            subject *s = &list[(*count)++];
            memset(s, 0, sizeof *s);
            snprintf(s->sub, sizeof s->sub, "%s", subs[i]);
            if (n_ses) snprintf(s->ses, sizeof s->ses, "%s", sess[k]);
            snprintf(s->key, sizeof s->key, "%s%s%s", s->sub, n_ses ? "_" : "", s->ses);
            const char *rel = n_ses ? s->ses : "";
            snprintf(s->out_dir, sizeof s->out_dir, "%s/%s%s%s/dwi", c->out, s->sub, n_ses ? "/" : "", rel);
            char dwi_dir[PATHN], tracks_dir[PATHN];
            pathf(dwi_dir, sizeof dwi_dir, "%s/%s%s%s/dwi", c->deriv, s->sub, n_ses ? "/" : "", rel);
            pathf(tracks_dir, sizeof tracks_dir, "%s/%s%s%s/dwi", c->tracks_dir ? c->tracks_dir : c->deriv, s->sub,
                     n_ses ? "/" : "", rel);
            static const char *const dwi_sfx[] = {"_dwi.nii.gz", "_dwi.nii", NULL};
            static const char *const trk_sfx[] = {".tck", ".trk", ".trx", ".tck.gz", ".trk.gz", NULL};
            static const char *const seg_sfx[] = {"_dseg.nii.gz", "_dseg.nii", NULL};
            if (find_one(dwi_dir, s->key, dwi_sfx, c->dwi_match, "DWI image", "--dwi-match", s->dwi, s->problem,
                         sizeof s->problem) == 0) {
                const size_t n = strlen(s->dwi) - (ends_with(s->dwi, ".gz") ? 7 : 4);
                snprintf(s->bval, sizeof s->bval, "%.*s.bval", (int)n, s->dwi);
                snprintf(s->bvec, sizeof s->bvec, "%.*s.bvec", (int)n, s->dwi);
                char b[PATHN];
                snprintf(b, sizeof b, "%.*s.b", (int)n, s->dwi);
                if (!is_file(s->bval) || !is_file(s->bvec))
                    snprintf(s->problem, sizeof s->problem, "%s: no %s and .bvec next to it%s", s->dwi,
                             is_file(s->bval) ? ".bval" : ".bval", is_file(b) ? " (only the MRtrix table .b: export the "
                             "FSL pair with mrconvert -export_grad_fsl)" : "");
                const char *space = strstr(s->dwi + strlen(dwi_dir), "_space-");
                int sl = 0;
                if (space) while (space[1 + sl] && space[1 + sl] != '_') ++sl;
                snprintf(s->prefix, sizeof s->prefix, "%s%s%.*s", s->key, space ? "_" : "", sl, space ? space + 1 : "");
            }
            if (!s->problem[0])
                find_one(tracks_dir, s->key, trk_sfx, c->tracks_match, "tractogram", "--tracks-match", s->tracks,
                         s->problem, sizeof s->problem);
            if (!s->problem[0] && c->group) {
                char anat[PATHN];
                pathf(anat, sizeof anat, "%s/%s%s%s/anat", c->deriv, s->sub, n_ses ? "/" : "", rel);
                char p2[1024] = "";
                if (find_one(dwi_dir, s->key, seg_sfx, c->parcels_match, "parcellation", "--parcels-match", s->parcels,
                             s->problem, sizeof s->problem) &&
                    find_one(anat, s->key, seg_sfx, c->parcels_match, "parcellation", "--parcels-match", s->parcels, p2,
                             sizeof p2) == 0)
                    s->problem[0] = '\0';
                else if (s->problem[0])
                    snprintf(s->problem + strlen(s->problem), sizeof s->problem - strlen(s->problem),
                             " (--group needs one; nor in %s)", anat);
            }
            if (!s->problem[0]) s->est_bytes = estimate_bytes(s, c->L);
            else s->state = FAILED, snprintf(s->error, sizeof s->error, "%s", s->problem);
        }
        free_list(sess);
    }
    free_list(subs);
    return list;
}

/* A subject is complete when its folder holds the weights' sidecar (the folder appears whole). */
static int complete(const subject *s) {
    char p[PATHN];
    pathf(p, sizeof p, "%s/%s_model-life_stats.tsv", s->out_dir, s->prefix);
    return is_file(p);
}

/* ----------------------------------------------------------- one subject (child) */

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

/* Decompress a .tck.gz/.trk.gz into `to` (the builder streams through the file twice). */
static int gunzip(const char *from, const char *to) {
    gzFile g = gzopen(from, "rb");
    FILE *f = g ? fopen(to, "wb") : NULL;
    if (!g || !f) {
        if (g) gzclose(g);
        return cli_error("%s: cannot %s", g ? to : from, g ? "create" : "open");
    }
    unsigned char buf[1 << 16];
    int n, ok = 1;
    while (ok && (n = gzread(g, buf, sizeof buf)) > 0) ok = fwrite(buf, 1, (size_t)n, f) == (size_t)n;
    if (n < 0) ok = 0;
    gzclose(g);
    if (fclose(f) != 0) ok = 0;
    return ok ? 0 : cli_error("%s: cannot decompress into %s", from, to);
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
    pathf(p, sizeof p, "%s/%s_%s.json", dir, s->prefix, name);
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

/* The stats row's columns (the group table's, after participant_id and session_id). */
static const char *const stat_columns[] = {
    "status", "streamlines", "fibers", "fibers_kept", "kept_fraction", "voxels", "updates", "stop",
    "lambda", "lambda_source", "ridge", "group", "objective", "relative_residual", "median_rmse_before",
    "median_rmse_after", "backend", "build_s", "fit_s", "report_s", "total_s", "error"};
enum { N_STAT = sizeof stat_columns / sizeof *stat_columns };

static void tsv_header(FILE *f) {
    fprintf(f, "participant_id\tsession_id");
    for (int i = 0; i < N_STAT; ++i) fprintf(f, "\t%s", stat_columns[i]);
    fputc('\n', f);
}

static int run_one(const cohort *c, const subject *s) {
    const double t_start = cli_now_s();
    char work[PATHN], model[PATHN], wpath[PATHN], bj[PATHN], fj[PATHN], rj[PATHN], csv[PATHN], tracks[PATHN];
    pathf(work, sizeof work, "%s/.work/%s", c->out, s->key);
    remove_tree(work); /* what a killed run left */
    if (cli_make_dirs(work)) return 1;
    pathf(model, sizeof model, "%s/model", work);
    pathf(wpath, sizeof wpath, "%s/weights.npy", work);
    pathf(bj, sizeof bj, "%s/build.json", work);
    pathf(fj, sizeof fj, "%s/fit.json", work);
    pathf(rj, sizeof rj, "%s/report.json", work);
    pathf(csv, sizeof csv, "%s/rmse.csv", work);
    snprintf(tracks, sizeof tracks, "%s", s->tracks);
    if (ends_with(s->tracks, ".gz")) {
        pathf(tracks, sizeof tracks, "%s/tracks%s", work, ends_with(s->tracks, ".tck.gz") ? ".tck" : ".trk");
        if (gunzip(s->tracks, tracks)) return 1;
    }
    const char *ext = ends_with(tracks, ".trk") ? "trk" : ends_with(tracks, ".trx") ? "trx" : "tck";
    char threads[32];
    snprintf(threads, sizeof threads, "%d", c->threads);
    const char *args[96];
    int n = 0;
    /* life build */
    const char *head_b[] = {"life", "build", "--dwi", s->dwi, "--bvals", s->bval, "--bvecs", s->bvec, "--tracks",
                            tracks, "--out", model, "--threads", threads, "--json"};
    for (size_t i = 0; i < sizeof head_b / sizeof *head_b; ++i) args[n++] = head_b[i];
    if (s->parcels[0]) args[n++] = "--parcels", args[n++] = s->parcels;
    for (int i = 0; i < c->n_pass; ++i)
        if (c->pass[i].stage == 'b') {
            args[n++] = c->pass[i].name;
            if (c->pass[i].v) args[n++] = c->pass[i].v;
        }
    double t0 = cli_now_s();
    int rc = call_life(bj, args, n);
    const double t_build = cli_now_s() - t0;
    if (rc) return rc;
    /* life fit */
    n = 0;
    const char *head_f[] = {"life", "fit", model, "--out", wpath, "--threads", threads, "--json"};
    for (size_t i = 0; i < sizeof head_f / sizeof *head_f; ++i) args[n++] = head_f[i];
    for (int i = 0; i < c->n_pass; ++i)
        if (c->pass[i].stage == 'f') {
            args[n++] = c->pass[i].name;
            if (c->pass[i].v) args[n++] = c->pass[i].v;
        }
    t0 = cli_now_s();
    rc = call_life(fj, args, n);
    const double t_fit = cli_now_s() - t0;
    if (rc) return rc;
    /* the subject's folder, under a temporary name until every file is in it */
    ns_output_dir *od = NULL;
    if (cli_make_parent_dir(s->out_dir)) return 1;
    ns_status st = ns_output_dir_open(s->out_dir, &od);
    if (st != NS_OK) return cli_status_error("life cohort", st);
    const char *T = ns_output_dir_path(od);
    char pruned[PATHN], wnpy[PATHN], wtxt[PATHN], m_after[PATHN], m_before[PATHN], stats[PATHN], side[PATHN];
    pathf(pruned, sizeof pruned, "%s/%s_model-life_desc-pruned_streamlines.%s", T, s->prefix, ext);
    pathf(wnpy, sizeof wnpy, "%s/%s_model-life_streamlineweights.npy", T, s->prefix);
    pathf(wtxt, sizeof wtxt, "%s/%s_model-life_streamlineweights.txt", T, s->prefix);
    pathf(m_after, sizeof m_after, "%s/%s_model-life_param-rmse_dwimap.nii.gz", T, s->prefix);
    pathf(m_before, sizeof m_before, "%s/%s_model-life_param-signalrms_dwimap.nii.gz", T, s->prefix);
    pathf(stats, sizeof stats, "%s/%s_model-life_stats.tsv", T, s->prefix);
    pathf(side, sizeof side, "%s/%s_model-life_streamlineweights.json", T, s->prefix);
    /* life report */
    n = 0;
    const char *head_r[] = {"life", "report", model, wpath, "--pruned", pruned, "--csv", csv, "--json"};
    for (size_t i = 0; i < sizeof head_r / sizeof *head_r; ++i) args[n++] = head_r[i];
    for (int i = 0; i < c->n_pass; ++i)
        if (c->pass[i].stage == 'r') args[n++] = c->pass[i].name, args[n++] = c->pass[i].v;
    t0 = cli_now_s();
    rc = call_life(rj, args, n);
    const double t_report = cli_now_s() - t0;
    int64_t n_streamlines = 0;
    if (rc == 0) rc = write_weights(model, wpath, wnpy, wtxt, &n_streamlines);
    if (rc == 0) rc = write_maps(s->dwi, csv, m_after, m_before);
    char *b = rc == 0 ? read_text(bj) : NULL, *fit = rc == 0 ? read_text(fj) : NULL, *rep = rc == 0 ? read_text(rj) : NULL;
    if (rc == 0 && (!b || !fit || !rep)) rc = cli_error("%s: cannot read the commands' results", work);
    /* the regularisation the fit used: what life fit reports (its --lambda auto path reports the
     * chosen value, its penalty, and lambda, ridge and group), else the values given (0 when none) */
    char penalty[32] = "", rule[64] = "";
    const int chosen = rc == 0 && !isnan(json_number(fit, "chosen_value"));
    if (chosen) json_member(fit, "penalty", penalty, sizeof penalty), json_member(fit, "rule", rule, sizeof rule);
    char lambda_source[160] = "given";
    if (chosen) snprintf(lambda_source, sizeof lambda_source, "chosen by life fit (%s%s%s)", penalty[0] ? penalty : "",
                         rule[0] ? ", rule " : "", rule);
    double reg[3]; /* lambda, ridge, group */
    static const char *const reg_names[3] = {"lambda", "ridge", "group"};
    for (int k = 0; k < 3; ++k) {
        reg[k] = rc == 0 ? json_number(fit, reg_names[k]) : NAN;
        char opt[16];
        snprintf(opt, sizeof opt, "--%s", reg_names[k]);
        const char *given = find_pass(c, opt);
        char *end = NULL;
        if (isnan(reg[k])) reg[k] = given ? strtod(given, &end) : 0.0; /* "auto", a list: NaN below */
        if (given && end && (end == given || *end)) reg[k] = NAN;
    }
    const double lambda = reg[0];
    char stop[128] = "", backend[32] = "", mw[64] = "", mty[64] = "";
    if (rc == 0) {
        json_member(fit, "stop", stop, sizeof stop);
        json_member(fit, "backend", backend, sizeof backend);
        json_member(fit, "mw_variant", mw, sizeof mw);
        json_member(fit, "mty_variant", mty, sizeof mty);
    }
    const double fibers = rc == 0 ? json_number(rep, "fibers") : NAN, kept = rc == 0 ? json_number(rep, "fibers_kept") : NAN;
    if (rc == 0) { /* the main sidecar: options, results, sources, timings */
        FILE *f = fopen(side, "w");
        if (!f) rc = cli_error("%s: cannot create: %s", side, strerror(errno));
        else {
            cli_json j;
            json_begin(&j, f);
            json_string(&j, "Description", "LiFE streamline weights: one per streamline of the input tractogram (0: not "
                                           "in the model), float64 NPY and text");
            json_sources(&j, s);
            json_object_begin(&j, "Parameters");
            for (int i = 0; i < c->n_pass; ++i) {
                char key[64];
                snprintf(key, sizeof key, "%s%s", c->pass[i].stage == 'b' ? "build " : c->pass[i].stage == 'f' ? "fit "
                                                                                                                : "report ",
                         c->pass[i].name + 2);
                json_string(&j, key, c->pass[i].v ? c->pass[i].v : "true");
            }
            json_object_end(&j);
            json_double(&j, "Lambda", lambda);
            json_double(&j, "Ridge", reg[1]);
            json_double(&j, "Group", reg[2]);
            json_string(&j, "LambdaSource", lambda_source);
            if (chosen) json_double(&j, "ChosenValue", json_number(fit, "chosen_value"));
            if (c->lambda) json_string(&j, "LambdaOption", c->lambda);
            json_string(&j, "Backend", backend);
            json_string(&j, "MwVariant", mw);
            json_string(&j, "MtyVariant", mty);
            json_double(&j, "Updates", json_number(fit, "updates"));
            json_string(&j, "Stop", stop);
            json_double(&j, "Objective", json_number(fit, "objective"));
            json_double(&j, "RidgeMu", json_number(fit, "ridge_mu"));
            if (c->group) json_double(&j, "GroupLambda", json_number(fit, "group_lambda"));
            json_int(&j, "Streamlines", n_streamlines);
            json_double(&j, "Fibers", fibers);
            json_double(&j, "FibersKept", kept);
            json_double(&j, "Voxels", json_number(rep, "voxels"));
            json_double(&j, "RelativeResidual", json_number(rep, "relative_residual"));
            json_double(&j, "MedianRMSEBefore", json_number(rep, "median_rmse_before"));
            json_double(&j, "MedianRMSEAfter", json_number(rep, "median_rmse_after"));
            json_double(&j, "MedianRMSEAfterAllVolumes", json_number(rep, "median_rmse_after_all_volumes"));
            json_object_begin(&j, "Timings");
            json_double(&j, "build_s", t_build);
            json_double(&j, "fit_s", t_fit);
            json_double(&j, "fit_solver_s", json_number(fit, "seconds"));
            json_double(&j, "report_s", t_report);
            json_double(&j, "total_s", cli_now_s() - t_start);
            json_object_end(&j);
            json_end(&j);
            if (fclose(f) != 0) rc = cli_error("%s: write failed", side);
        }
    }
    if (rc == 0) rc = write_sidecar(T, s, "model-life_desc-pruned_streamlines", "the streamlines with a LiFE weight above "
                                    "the threshold (report --threshold, 0 by default), records copied from the input", NULL);
    if (rc == 0) rc = write_sidecar(T, s, "model-life_param-rmse_dwimap", "RMSE per voxel of the LiFE prediction over the "
                                    "diffusion directions (demeaned signal); 0 outside the model's voxels", "same as the DWI");
    if (rc == 0) rc = write_sidecar(T, s, "model-life_param-signalrms_dwimap", "RMS per voxel of the demeaned diffusion "
                                    "signal (the RMSE of predicting nothing); 0 outside the model's voxels", "same as the DWI");
    if (rc == 0) { /* one row of the group table, timings last */
        FILE *f = fopen(stats, "w");
        if (!f) rc = cli_error("%s: cannot create: %s", stats, strerror(errno));
        else {
            tsv_header(f);
            fprintf(f, "%s\t%s\tdone\t%lld\t%.0f\t%.0f\t%.6g\t%.0f\t%.0f\t%s\t%.9g\t%s\t%.9g\t%.9g\t%.9g\t%.6g\t%.6g\t%.6g\t%s"
                       "\t%.3f\t%.3f\t%.3f\t%.3f\t\n",
                    s->sub, s->ses[0] ? s->ses : "n/a", (long long)n_streamlines, fibers, kept,
                    fibers > 0 ? kept / fibers : NAN, json_number(rep, "voxels"), json_number(fit, "updates"), stop,
                    lambda, lambda_source, reg[1], reg[2], json_number(fit, "objective"),
                    json_number(rep, "relative_residual"), json_number(rep, "median_rmse_before"),
                    json_number(rep, "median_rmse_after"), backend, t_build, t_fit, t_report, cli_now_s() - t_start);
            if (fclose(f) != 0) rc = cli_error("%s: write failed", stats);
        }
    }
    free(b), free(fit), free(rep);
    if (rc == 0) {
        if ((st = ns_output_dir_commit(od)) != NS_OK) rc = cli_status_error("life cohort", st);
    } else {
        ns_output_dir_abort(od);
    }
    if (rc == 0) remove_tree(work);
    return rc;
}

/* --------------------------------------------------------------- the parent */

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
    char *text = read_text(log);
    out[0] = '\0';
    for (char *p = text, *line; p && (line = strstr(p, "neurosolve: ")); p = line + 1) {
        const char *e = strchr(line, '\n');
        snprintf(out, cap, "%.*s", (int)(e ? e - line - 12 : (long)strlen(line) - 12), line + 12);
    }
    free(text);
}

static int launch(const cohort *c, subject *s) {
    char log[PATHN];
    pathf(log, sizeof log, "%s/logs/%s.log", c->out, s->key);
    fflush(NULL);
    const pid_t pid = fork();
    if (pid < 0) return cli_error("%s: cannot start a process: %s", s->key, strerror(errno));
    if (pid == 0) {
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        const int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) dup2(fd, STDOUT_FILENO), dup2(fd, STDERR_FILENO), close(fd);
        const int rc = run_one(c, s);
        fflush(NULL);
        _exit(rc);
    }
    s->pid = pid, s->state = RUNNING, s->t0 = cli_now_s();
    return 0;
}

static void finished(const cohort *c, subject *s, int status) {
    s->seconds = cli_now_s() - s->t0;
    char log[PATHN];
    pathf(log, sizeof log, "%s/logs/%s.log", c->out, s->key);
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
    pathf(p, sizeof p, "%s/dataset_description.json", c->out);
    if (is_file(p)) return;
    ns_output *o = cli_output_open(p);
    FILE *f = ns_output_stream(o);
    if (!f) return;
    if (!realpath(c->deriv, abs)) snprintf(abs, sizeof abs, "%s", c->deriv);
    cli_json j;
    json_begin(&j, f);
    json_string(&j, "Name", "LiFE connectome pruning (neurosolve life cohort)");
    json_string(&j, "BIDSVersion", "1.10.0");
    json_string(&j, "DatasetType", "derivative");
    json_array_begin(&j, "GeneratedBy");
    json_object_begin(&j, NULL);
    json_string(&j, "Name", "neurosolve");
    json_string(&j, "Version", ns_version());
    json_string(&j, "Description", "life cohort: life build, life fit and life report per subject (docs/life.md)");
    json_object_end(&j);
    json_array_end(&j);
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
    pathf(p, sizeof p, "%s/life_cohort.tsv", c->out);
    pathf(js, sizeof js, "%s/life_cohort.json", c->out);
    pathf(png, sizeof png, "%s/life_cohort.png", c->out);
    ns_output *o = cli_output_open(p);
    FILE *f = ns_output_stream(o);
    if (!f) return 1;
    tsv_header(f);
    for (int i = 0; i < n; ++i) {
        const subject *s = &list[i];
        char stats[PATHN];
        pathf(stats, sizeof stats, "%s/%s_model-life_stats.tsv", s->out_dir, s->prefix);
        char *row = s->state == DONE || s->state == COMPLETE ? read_text(stats) : NULL;
        const char *nl = row ? strchr(row, '\n') : NULL;
        if (nl && nl[1]) fputs(nl + 1, f);
        else {
            fprintf(f, "%s\t%s\t%s", s->sub, s->ses[0] ? s->ses : "n/a",
                    s->state == INTERRUPTED ? "interrupted" : s->state == PENDING ? "not run" : "failed");
            for (int k = 1; k < N_STAT - 1; ++k) fprintf(f, "\tn/a");
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

int life_cohort(int argc, char **argv) {
    const char *cmd = "life cohort";
    for (int i = 1; i < argc; ++i)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return printf("%s", usage_cohort), 0;
    if (argc < 2 || argv[1][0] == '-') return cli_usage_error(cmd, "missing the derivatives folder");
    cohort c;
    memset(&c, 0, sizeof c);
    c.deriv = argv[1];
    c.jobs = 1, c.plot = 1, c.L = 180;
    c.backend = NS_BACKEND_AUTO;
    long long x = 0;
    double gb = 0;
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
                if (strcmp(a, "--group") == 0) c.group = d > 0;
            } else if (opts[k].kind == 'l') {
                ok = cli_parse_long(cmd, a, v, (long long)opts[k].lo, (long long)opts[k].hi, &x);
                if (strcmp(a, "--L") == 0) c.L = x;
            } else if (strcmp(a, "--backend") == 0) {
                const int bad = cli_parse_backend(cmd, a, v, &c.backend);
                if (bad) return bad;
            } else if (strcmp(a, "--lambda") == 0) {
                c.lambda = v;
            }
            if (c.n_pass == (int)(sizeof c.pass / sizeof *c.pass)) return cli_usage_error(cmd, "too many options");
            c.pass[c.n_pass++] = (passed){a, opts[k].kind == 'f' ? NULL : v, opts[k].stage};
            if (opts[k].kind != 'f') ++i;
        }
        if (taken) {
            if (!ok) return 2;
            continue;
        }
        if (strcmp(a, "--out") == 0 && v) c.out = v, ++i;
        else if (strcmp(a, "--tracks-dir") == 0 && v) c.tracks_dir = v, ++i;
        else if (strcmp(a, "--dwi-match") == 0 && v) c.dwi_match = v, ++i;
        else if (strcmp(a, "--tracks-match") == 0 && v) c.tracks_match = v, ++i;
        else if (strcmp(a, "--parcels-match") == 0 && v) c.parcels_match = v, ++i;
        else if (strcmp(a, "--participant-label") == 0 && v) c.participants = v, ++i;
        else if (strcmp(a, "--jobs") == 0) ok = cli_parse_long(cmd, a, v, 1, 4096, &x), c.jobs = (int)x, ++i;
        else if (strcmp(a, "--threads") == 0) ok = cli_parse_long(cmd, a, v, 1, 4096, &x), c.threads = (int)x, ++i;
        else if (strcmp(a, "--max-gb") == 0) ok = cli_parse_double(cmd, a, v, 1e-6, 1e9, &gb), ++i;
        else if (strcmp(a, "--no-plot") == 0) c.plot = 0;
        else if (strcmp(a, "--quiet") == 0) c.quiet = 1;
        else if (strcmp(a, "--json") == 0) c.as_json = 1;
        else return cli_usage_error(cmd, "unknown option or missing value '%s'", a);
        if (!ok) return 2;
    }
    if (!c.out) return cli_usage_error(cmd, "--out OUT_DIR is required");
    if (!is_dir(c.deriv)) return cli_error("%s: %s: not a folder", cmd, c.deriv);
    if (c.tracks_dir && !is_dir(c.tracks_dir)) return cli_error("%s: --tracks-dir %s: not a folder", cmd, c.tracks_dir);
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
    subject *list = discover(&c, &n);
    if (!list) return cli_error("%s: %s: cannot read the folder", cmd, c.deriv);
    if (n == 0) {
        free(list);
        return cli_error("%s: %s holds no sub-*/[ses-*/]dwi folder%s", cmd, c.deriv,
                         c.participants ? " of the --participant-label subjects" : "");
    }
    char logs[PATHN];
    pathf(logs, sizeof logs, "%s/logs", c.out);
    if (cli_make_dirs(logs)) {
        free(list);
        return 1;
    }
    write_dataset_description(&c);
    int skipped = 0;
    for (int i = 0; i < n; ++i)
        if (list[i].state == PENDING && complete(&list[i])) list[i].state = COMPLETE, ++skipped;
    if (!c.quiet && !c.as_json)
        fprintf(stderr, "life cohort: %d subject%s in %s, %d complete already, %d job%s of %d thread%s\n", n,
                n == 1 ? "" : "s", c.deriv, skipped, c.jobs, c.jobs == 1 ? "" : "s", c.threads, c.threads == 1 ? "" : "s");
    if (!c.quiet && !c.as_json && !isatty(fileno(stderr)))
        for (int i = 0; i < n; ++i)
            if (list[i].state == FAILED) fprintf(stderr, "%s: failed: %s\n", list[i].key, list[i].error);
    cli_catch_signals();
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
        for (int i = 0; i < n && !stop_signal && !usage_stop && running < c.jobs; ++i) {
            subject *s = &list[i];
            if (s->state != PENDING) continue;
            if (running > 0 && used + s->est_bytes > c.max_bytes) break; /* in order: wait for memory */
            if (running == 0 && s->est_bytes > c.max_bytes && !c.quiet)
                fprintf(stderr, "%sneurosolve: warning: %s may need %.1f GB (estimate), more than --max-gb %.1f: it runs "
                                "alone\n", isatty(fileno(stderr)) ? "\n" : "", s->key, s->est_bytes / 1e9, c.max_bytes / 1e9);
            if (launch(&c, s)) {
                s->state = FAILED;
                snprintf(s->error, sizeof s->error, "%s", "cannot start a process");
                continue;
            }
            ++running, used += s->est_bytes;
        }
        if (running == 0) break;
        draw(&c, list, n, t0, 0);
        int status = 0;
        const pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid > 0) {
            for (int i = 0; i < n; ++i)
                if (list[i].state == RUNNING && list[i].pid == pid) {
                    finished(&c, &list[i], status);
                    if (list[i].state == FAILED && list[i].rc == 2) usage_stop = 1; /* refused options: all would fail */
                }
        } else {
            const struct timespec nap = {0, 50 * 1000 * 1000};
            nanosleep(&nap, NULL);
        }
    }
    draw(&c, list, n, t0, 1);
    const int signal_number = (int)stop_signal;
    cli_release_signals();
    int done = 0, failed = 0, interrupted = 0;
    for (int i = 0; i < n; ++i) {
        done += list[i].state == DONE || list[i].state == COMPLETE;
        failed += list[i].state == FAILED;
        interrupted += list[i].state == INTERRUPTED || list[i].state == PENDING;
    }
    int rc = 0;
    if (!signal_number) { /* what the subjects' processes left (a failure's model, a kill after a commit) */
        char work[PATHN];
        pathf(work, sizeof work, "%s/.work", c.out);
        remove_tree(work);
        rc = write_group(&c, list, n);
    }
    if (c.as_json) {
        cli_json j;
        json_begin(&j, stdout);
        json_string(&j, "derivatives", c.deriv);
        json_string(&j, "out", c.out);
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
    } else if (!c.quiet) {
        printf("%s: %d of %d subjects done (%d before this run), %d failed%s; group table %s/life_cohort.tsv\n", c.out,
               done, n, skipped, failed, interrupted ? ", some not done" : "", c.out);
        for (int i = 0; i < n && isatty(fileno(stderr)); ++i)
            if (list[i].state == FAILED) printf("  %s: failed: %s\n", list[i].key, list[i].error);
    }
    free(list);
    if (signal_number) {
        return cli_error("life cohort interrupted (%s): %d of %d subjects done; run the same command to continue",
                         signal_number == SIGTERM ? "SIGTERM" : "SIGINT", done, n);
    }
    if (usage_stop) return cli_error("life cohort: the options were refused (see the failed subject's log): stopped");
    if (failed) return cli_error("life cohort: %d of %d subjects failed (logs in %s/logs)", failed, n, c.out);
    return rc;
}

/* ----------------------------------------------------- life synth DIR --cohort N */

static int copy_file(const char *from, const char *to) {
    FILE *a = fopen(from, "rb"), *b = a ? fopen(to, "wb") : NULL;
    if (!a || !b) {
        if (a) fclose(a);
        return cli_error("%s: cannot %s: %s", a ? to : from, a ? "create" : "open", strerror(errno));
    }
    char buf[1 << 16];
    size_t n;
    int ok = 1;
    while (ok && (n = fread(buf, 1, sizeof buf, a)) > 0) ok = fwrite(buf, 1, n, b) == n;
    if (ferror(a)) ok = 0;
    fclose(a);
    if (fclose(b) != 0) ok = 0;
    return ok ? 0 : cli_error("%s: write failed", to);
}

static int move_file(const char *from, const char *to) {
    return rename(from, to) == 0 ? 0 : cli_error("%s: cannot move to %s: %s", from, to, strerror(errno));
}

/* One phantom subject (session): the phantom's files under BIDS names in DIR/KEY-path/dwi. */
static int synth_phantom_unit(const char *root, const char *rel, const char *key, const ns_life_phantom_options *o) {
    char tmp[PATHN], dwi[PATHN], a[PATHN], b[PATHN];
    pathf(tmp, sizeof tmp, "%s/.synth-%s", root, key);
    pathf(dwi, sizeof dwi, "%s/%s/dwi", root, rel);
    remove_tree(tmp);
    ns_status st = ns_life_phantom_write(o, tmp, NULL);
    if (st != NS_OK) return cli_status_error("life synth --cohort", st);
    if (cli_make_dirs(dwi)) return 1;
    static const char *const names[][2] = {
        {"dwi.nii", "space-orig_desc-preproc_dwi.nii"},
        {"dwi.bval", "space-orig_desc-preproc_dwi.bval"},
        {"dwi.bvec", "space-orig_desc-preproc_dwi.bvec"},
        {"tracks.tck", "space-orig_model-phantom_streamlines.tck"},
        {"parcels.nii", "space-orig_seg-phantom_dseg.nii"},
        {"labels.npy", "space-orig_model-phantom_desc-truth_labels.npy"},
        {"kinds.npy", "space-orig_model-phantom_desc-truth_kinds.npy"},
        {"bundles.npy", "space-orig_model-phantom_desc-truth_bundles.npy"}};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof names / sizeof *names; ++i) {
        pathf(a, sizeof a, "%s/%s", tmp, names[i][0]);
        pathf(b, sizeof b, "%s/%s_%s", dwi, key, names[i][1]);
        rc = move_file(a, b);
    }
    remove_tree(tmp);
    return rc;
}

int life_synth_cohort(int argc, char **argv) {
    const char *cmd = "life synth --cohort", *root = argv[1];
    long long subjects = 10, x = 0;
    ns_life_phantom_options o;
    ns_life_phantom_options_init(&o);
    o.n_streamlines = 2000, o.grid = 32;
    for (int i = 2; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = 1;
        if (strcmp(a, "--cohort") == 0) ok = cli_parse_long(cmd, a, v, 1, 999, &subjects), ++i;
        else if (strcmp(a, "--streamlines") == 0) ok = cli_parse_long(cmd, a, v, 20, 100000000, &x), o.n_streamlines = (int32_t)x, ++i;
        else if (strcmp(a, "--grid") == 0) ok = cli_parse_long(cmd, a, v, 24, 512, &x), o.grid = (int32_t)x, ++i;
        else if (strcmp(a, "--theta") == 0) ok = cli_parse_long(cmd, a, v, 2, 4096, &x), o.n_directions = (int32_t)x, ++i;
        else if (strcmp(a, "--snr") == 0) ok = cli_parse_double(cmd, a, v, 0, 1e12, &o.snr), ++i;
        else if (strcmp(a, "--seed") == 0) ok = cli_parse_long(cmd, a, v, 0, 1LL << 40, &x), o.seed = (uint64_t)x, ++i;
        else return cli_usage_error(cmd, "unknown option or missing value '%s'", a);
        if (!ok) return 2;
    }
    char data[PATHN], p[PATHN];
    pathf(data, sizeof data, "%s/data/life", NS_SOURCE_DIR);
    const int real = subjects >= 2 && is_dir(data);
    if (cli_make_dirs(root)) return 1;
    const uint64_t seed = o.seed;
    const int32_t base = o.n_streamlines;
    int units = 0;
    for (long long i = 1; i <= subjects; ++i) {
        char sub[32], rel[64], key[64];
        snprintf(sub, sizeof sub, "sub-%02lld", i);
        if (real && i == subjects) { /* the bundled real case (DIPY's small_25, data/life/SOURCES.md) */
            char dwi[PATHN];
            pathf(dwi, sizeof dwi, "%s/%s/dwi", root, sub);
            if (cli_make_dirs(dwi)) return 1;
            static const char *const names[][2] = {{"small_25.nii.gz", "space-orig_desc-preproc_dwi.nii.gz"},
                                                   {"small_25.bval", "space-orig_desc-preproc_dwi.bval"},
                                                   {"small_25.bvec", "space-orig_desc-preproc_dwi.bvec"},
                                                   {"EuDX_small_25.trk", "space-orig_model-eudx_streamlines.trk"}};
            for (size_t k = 0; k < sizeof names / sizeof *names; ++k) {
                char a[PATHN];
                pathf(a, sizeof a, "%s/%s", data, names[k][0]);
                pathf(p, sizeof p, "%s/%s_%s", dwi, sub, names[k][1]);
                if (copy_file(a, p)) return 1;
            }
            ++units;
            continue;
        }
        /* every third subject from the second has two sessions; sizes from 0.75 to 1.25 x --streamlines */
        const int n_ses = i % 3 == 2 ? 2 : 1;
        for (int k = 1; k <= n_ses; ++k) {
            if (n_ses > 1) pathf(rel, sizeof rel, "%s/ses-%d", sub, k), snprintf(key, sizeof key, "%s_ses-%d", sub, k);
            else snprintf(rel, sizeof rel, "%s", sub), snprintf(key, sizeof key, "%s", sub);
            o.seed = seed + 100 * (uint64_t)i + (uint64_t)k;
            const double f = subjects > 2 ? 0.75 + 0.5 * (double)(i - 1) / (double)(subjects - 2) : 1.0;
            o.n_streamlines = (int32_t)fmax(20, floor(base * f));
            if (synth_phantom_unit(root, rel, key, &o)) return 1;
            ++units;
        }
    }
    pathf(p, sizeof p, "%s/dataset_description.json", root);
    ns_output *od = cli_output_open(p);
    FILE *f = ns_output_stream(od);
    if (!f) return 1;
    cli_json j;
    json_begin(&j, f);
    json_string(&j, "Name", "neurosolve synthetic LiFE cohort (ground-truth phantoms and DIPY's small_25)");
    json_string(&j, "BIDSVersion", "1.10.0");
    json_string(&j, "DatasetType", "derivative");
    json_string(&j, "License", "phantoms: generated by neurosolve (src/life/phantom.c); the last subject: DIPY's "
                               "small_25 and EuDX_small_25.trk, BSD 3-clause (data/life/SOURCES.md)");
    json_array_begin(&j, "GeneratedBy");
    json_object_begin(&j, NULL);
    json_string(&j, "Name", "neurosolve");
    json_string(&j, "Version", ns_version());
    json_string(&j, "Description", "life synth DIR --cohort N (docs/life.md, \"Studies: life cohort\")");
    json_object_end(&j);
    json_array_end(&j);
    json_end(&j);
    if (cli_output_commit(od)) return 1;
    printf("%s: %lld subjects (%d subject-sessions): %lld phantoms of %d-%d streamlines on %d^3 voxels%s\n", root,
           subjects, units, subjects - real, (int)fmax(20, floor(base * (subjects > 2 ? 0.75 : 1.0))),
           (int)fmax(20, floor(base * (subjects > 2 ? 1.25 : 1.0))), (int)o.grid,
           real ? ", and the bundled real case (DIPY's small_25)" : "");
    return 0;
}
