/* neurosolve life cohort (docs/life.md, "Studies: life cohort"): what its files share.
 *   cmd_life_cohort.c     the command: options, the schedule of the subjects' processes, the group table
 *   life_cohort_subjects.c  the subjects (and sessions) of a BIDS derivatives folder and their inputs
 *   life_cohort_run.c     one subject in a child process: life build, fit and report, its outputs
 *   life_cohort_synth.c   life synth DIR --cohort N: a synthetic derivatives folder
 *   life_cohort_util.c    paths, folders, small files, the --json documents' members */
#ifndef NS_TOOLS_LIFE_COHORT_H
#define NS_TOOLS_LIFE_COHORT_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "cli.h"

enum { PATHN = 4096 };

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

/* The stats row's columns (the group table's, after participant_id and session_id). */
enum { LC_N_STAT = 22 };
extern const char *const lc_stat_columns[LC_N_STAT];
void lc_tsv_header(FILE *f);

/* life_cohort_subjects.c */
subject *lc_discover(const cohort *c, int *count);
int lc_complete(const subject *s);
const char *lc_find_pass(const cohort *c, const char *name);

/* life_cohort_run.c: the child's work for one subject; 0 when its folder is complete */
int lc_run_one(const cohort *c, const subject *s);

/* life_cohort_util.c */
void lc_pathf(char *dst, size_t cap, const char *format, ...);
int lc_is_dir(const char *p);
int lc_is_file(const char *p);
int lc_ends_with(const char *s, const char *tail);
int lc_starts_with(const char *s, const char *head);
char **lc_list_dir(const char *dir, const char *prefix, int *count);
void lc_free_list(char **names);
void lc_remove_tree(const char *dir);
char *lc_read_text(const char *path);
int lc_json_member(const char *text, const char *key, char *value, size_t cap);
double lc_json_number(const char *text, const char *key);
int lc_gunzip(const char *from, const char *to);
int lc_copy_file(const char *from, const char *to);
int lc_move_file(const char *from, const char *to);
/* A BIDS dataset_description.json's "GeneratedBy": neurosolve, its version, `description`. */
void lc_json_generated_by(cli_json *j, const char *description);

int life_cohort(int argc, char **argv);
int life_synth_cohort(int argc, char **argv);

#endif
