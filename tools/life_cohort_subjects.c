/* life cohort: the subjects (and sessions) of a BIDS derivatives folder and their inputs. */
#define _XOPEN_SOURCE 700
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "life_cohort.h"

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

const char *lc_find_pass(const cohort *c, const char *name) {
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
    char **names = lc_list_dir(dir, prefix, &n);
    char found[1024] = "";
    for (int i = 0; i < n; ++i) {
        int ok = 0;
        for (const char *const *s = suffixes; *s && !ok; ++s) ok = lc_ends_with(names[i], *s);
        if (!ok || !has_entities(names[i], entities)) continue;
        if (hits++ == 0) lc_pathf(path, PATHN, "%s/%s", dir, names[i]);
        const size_t l = strlen(found);
        snprintf(found + l, sizeof found - l, "%s%s", l ? ", " : "", names[i]);
    }
    lc_free_list(names);
    if (hits == 1) return 0;
    if (hits == 0)
        snprintf(problem, cap, "no %s in %s (%s_*%s%s%s)", what, dir, key, suffixes[0],
                 entities && *entities ? " with " : "", entities && *entities ? entities : "");
    else if (snprintf(problem, cap, "%d %ss match in %s (%s): choose one with %s", hits, what, dir, found, hint) >=
             (int)cap) /* the list cut: the message still names the option */
        snprintf(problem + cap - 40, 40, "...: choose one with %s", hint);
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
    const double tracks = stat(s->tracks, &st) == 0 ? (double)st.st_size * (lc_ends_with(s->tracks, ".gz") ? 4 : 1) : 0;
    return image + (double)((L - 1) * L + 1) * vols * 8 + 3 * vox * vols * 8 + 10 * tracks;
}

/* The subjects (and sessions) of the derivatives folder, in name order. */
subject *lc_discover(const cohort *c, int *count) {
    *count = 0;
    int n_sub = 0, cap = 16;
    char **subs = lc_list_dir(c->deriv, "sub-", &n_sub);
    subject *list = calloc((size_t)cap, sizeof *list);
    if (!subs || !list) {
        lc_free_list(subs);
        free(list);
        return NULL;
    }
    char dir[PATHN];
    for (int i = 0; i < n_sub; ++i) {
        lc_pathf(dir, sizeof dir, "%s/%s", c->deriv, subs[i]);
        if (!lc_is_dir(dir)) continue;
        if (c->participants) { /* --participant-label 01,02 (with or without sub-) */
            char want[1024];
            snprintf(want, sizeof want, "%s", c->participants);
            int keep = 0;
            for (char *save = NULL, *t = strtok_r(want, ",", &save); t && !keep; t = strtok_r(NULL, ",", &save))
                keep = strcmp(subs[i] + 4, lc_starts_with(t, "sub-") ? t + 4 : t) == 0;
            if (!keep) continue;
        }
        int n_ses = 0;
        char **sess = lc_list_dir(dir, "ses-", &n_ses);
        for (int k = 0; k < (n_ses ? n_ses : 1); ++k) {
            char sdir[PATHN];
            if (n_ses) lc_pathf(sdir, sizeof sdir, "%s/%s", dir, sess[k]);
            if (n_ses && !lc_is_dir(sdir)) continue;
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
            lc_pathf(dwi_dir, sizeof dwi_dir, "%s/%s%s%s/dwi", c->deriv, s->sub, n_ses ? "/" : "", rel);
            lc_pathf(tracks_dir, sizeof tracks_dir, "%s/%s%s%s/dwi", c->tracks_dir ? c->tracks_dir : c->deriv, s->sub,
                     n_ses ? "/" : "", rel);
            static const char *const dwi_sfx[] = {"_dwi.nii.gz", "_dwi.nii", NULL};
            static const char *const trk_sfx[] = {".tck", ".trk", ".trx", ".tck.gz", ".trk.gz", NULL};
            static const char *const seg_sfx[] = {"_dseg.nii.gz", "_dseg.nii", NULL};
            if (find_one(dwi_dir, s->key, dwi_sfx, c->dwi_match, "DWI image", "--dwi-match", s->dwi, s->problem,
                         sizeof s->problem) == 0) {
                const size_t n = strlen(s->dwi) - (lc_ends_with(s->dwi, ".gz") ? 7 : 4);
                snprintf(s->bval, sizeof s->bval, "%.*s.bval", (int)n, s->dwi);
                snprintf(s->bvec, sizeof s->bvec, "%.*s.bvec", (int)n, s->dwi);
                char b[PATHN];
                snprintf(b, sizeof b, "%.*s.b", (int)n, s->dwi);
                if (!lc_is_file(s->bval) || !lc_is_file(s->bvec))
                    snprintf(s->problem, sizeof s->problem, "%s: no %s and .bvec next to it%s", s->dwi,
                             lc_is_file(s->bval) ? ".bval" : ".bval", lc_is_file(b) ? " (only the MRtrix table .b: export the "
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
                lc_pathf(anat, sizeof anat, "%s/%s%s%s/anat", c->deriv, s->sub, n_ses ? "/" : "", rel);
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
        lc_free_list(sess);
    }
    lc_free_list(subs);
    return list;
}

/* A subject is complete when its folder holds the weights' sidecar (the folder appears whole). */
int lc_complete(const subject *s) {
    char p[PATHN];
    lc_pathf(p, sizeof p, "%s/%s_model-life_stats.tsv", s->out_dir, s->prefix);
    return lc_is_file(p);
}
