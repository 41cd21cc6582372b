/* ns_output: files appear only when complete; an abort or a failed commit
 * leaves the destination as it was and no temporary file behind. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "neurosolve/neurosolve.h"

static char dir[256];

static const char *at(const char *name) {
    static char path[1024]; /* dir (255) + "/" + the longest name used (299) */
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

static int entries(void) { /* files in the folder, . and .. excluded */
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d) closedir(d);
    return n;
}

static void slurp(const char *path, char *buf, size_t n) {
    buf[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f) return;
    size_t got = fread(buf, 1, n - 1, f);
    buf[got] = '\0';
    fclose(f);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/ns_test_output_%ld", (long)getpid());
    CHECK(mkdir(dir, 0777) == 0);
    char buf[64];
    ns_output *o = NULL;

    /* a commit makes the file appear with its content */
    CHECK_OK(ns_output_open(at("a.csv"), &o));
    fputs("x,y\n1,2\n", ns_output_stream(o));
    CHECK(access(at("a.csv"), F_OK) != 0); /* not there while it is written */
    const char *temp = ns_output_temp_path(o);
    CHECK(strstr(temp, "/.a.csv.partial-") != NULL && strcmp(temp + strlen(temp) - 4, ".csv") == 0);
    CHECK_OK(ns_output_commit(o));
    slurp(at("a.csv"), buf, sizeof buf);
    CHECK(strcmp(buf, "x,y\n1,2\n") == 0);
    CHECK(entries() == 1);

    /* an abort leaves the existing file as it was and no temporary */
    CHECK_OK(ns_output_open(at("a.csv"), &o));
    fputs("partial", ns_output_stream(o));
    ns_output_abort(o);
    slurp(at("a.csv"), buf, sizeof buf);
    CHECK(strcmp(buf, "x,y\n1,2\n") == 0);
    CHECK(entries() == 1);

    /* a failed commit (the destination became a directory) names the path */
    CHECK_OK(ns_output_open(at("b.csv"), &o));
    fputs("data", ns_output_stream(o));
    CHECK(mkdir(at("b.csv"), 0777) == 0);
    mkdir(at("b.csv/inner"), 0777); /* a non-empty directory: rename must fail */
    ns_status st = ns_output_commit(o);
    CHECK_MSG(st == NS_ERR_IO && strstr(ns_last_error(), "b.csv: write failed: "), "%s", ns_last_error());
    CHECK(entries() == 2);
    rmdir(at("b.csv/inner"));
    rmdir(at("b.csv"));

    /* a directory, a missing folder: NS_ERR_IO with the OS reason */
    o = (ns_output *)1;
    CHECK(ns_output_open(dir, &o) == NS_ERR_IO && o == NULL && strstr(ns_last_error(), "is a directory"));
    CHECK(ns_output_open(at("missing/c.csv"), &o) == NS_ERR_IO &&
          strstr(ns_last_error(), "missing/c.csv: cannot create: No such file or directory"));
    CHECK(ns_output_open(NULL, &o) == NS_ERR_INVALID_ARGUMENT);
    ns_output_abort(NULL);

    /* the library's writers go through it: a NPY vector */
    const double v[3] = {1, 2, 3};
    CHECK_OK(ns_life_vector_save(at("w.npy"), v, 3));
    CHECK(ns_life_vector_save(at("missing/w.npy"), v, 3) == NS_ERR_IO);
    CHECK(entries() == 2);

    /* a folder of outputs: absent until the commit, then complete */
    ns_output_dir *d = NULL;
    CHECK_OK(ns_output_dir_open(at("model"), &d));
    char inner[512];
    snprintf(inner, sizeof inner, "%s/x.npy", ns_output_dir_path(d));
    CHECK_OK(ns_life_vector_save(inner, v, 3));
    CHECK(access(at("model"), F_OK) != 0);
    CHECK_OK(ns_output_dir_commit(d));
    CHECK(access(at("model/x.npy"), F_OK) == 0);
    /* an abort leaves the existing folder as it was */
    CHECK_OK(ns_output_dir_open(at("model/"), &d));
    snprintf(inner, sizeof inner, "%s/y.npy", ns_output_dir_path(d));
    CHECK_OK(ns_life_vector_save(inner, v, 2));
    ns_output_dir_abort(d);
    CHECK(access(at("model/y.npy"), F_OK) != 0 && access(at("model/x.npy"), F_OK) == 0);
    /* a commit into an existing folder moves the new files in */
    CHECK_OK(ns_output_dir_open(at("model"), &d));
    snprintf(inner, sizeof inner, "%s/x.npy", ns_output_dir_path(d));
    const double v5[5] = {5, 4, 3, 2, 1};
    CHECK_OK(ns_life_vector_save(inner, v5, 5));
    CHECK_OK(ns_output_dir_commit(d));
    double *back = NULL;
    int64_t nback = 0;
    CHECK_OK(ns_life_vector_load(at("model/x.npy"), &back, &nback));
    CHECK(nback == 5 && back && back[0] == 5);
    free(back);
    CHECK(entries() == 3); /* a.csv, w.npy, model: no temporary folder left */
    CHECK(ns_output_dir_open(at("a.csv"), &d) == NS_ERR_IO && strstr(ns_last_error(), "it is a file"));
    CHECK(ns_output_dir_open(at("missing/model"), &d) == NS_ERR_IO &&
          strstr(ns_last_error(), "No such file or directory"));
    remove(at("model/x.npy"));
    rmdir(at("model"));

    /* the longest names a folder takes (255 bytes): the temporary file's
     * longer name (".NAME.partial-PID-N.EXT") used to fail with "File name too long" */
    char longname[256];
    memset(longname, 'n', 251);
    memcpy(longname + 251, ".csv", 5);
    ns_output *lo = NULL;
    CHECK_OK(ns_output_open(at(longname), &lo));
    if (lo) {
        const char *tp = ns_output_temp_path(lo);
        CHECK_MSG(strlen(strrchr(tp, '/') + 1) <= 255, "temporary name of %zu bytes", strlen(strrchr(tp, '/') + 1));
        CHECK(strcmp(tp + strlen(tp) - 4, ".csv") == 0); /* the extension survives the cut */
        fputs("long\n", ns_output_stream(lo));
        CHECK_OK(ns_output_commit(lo));
        slurp(at(longname), buf, sizeof buf);
        CHECK(strcmp(buf, "long\n") == 0);
        CHECK(remove(at(longname)) == 0);
    }
    longname[251] = '\0';
    CHECK_OK(ns_output_dir_open(at(longname), &d));
    if (d) {
        snprintf(inner, sizeof inner, "%s/z.npy", ns_output_dir_path(d));
        CHECK_OK(ns_life_vector_save(inner, v, 3));
        CHECK_OK(ns_output_dir_commit(d));
        char z[300];
        snprintf(z, sizeof z, "%s/z.npy", longname);
        CHECK(access(at(z), F_OK) == 0);
        remove(at(z));
        rmdir(at(longname));
    }

    /* a failed open leaves *out NULL (docs/api.md), bad arguments included */
    ns_output *bad = (ns_output *)&bad;
    CHECK(ns_output_open("", &bad) == NS_ERR_INVALID_ARGUMENT && bad == NULL);
    bad = (ns_output *)&bad;
    CHECK(ns_output_open(NULL, &bad) == NS_ERR_INVALID_ARGUMENT && bad == NULL);
    ns_output_dir *bad_dir = (ns_output_dir *)&bad_dir;
    CHECK(ns_output_dir_open("", &bad_dir) == NS_ERR_INVALID_ARGUMENT && bad_dir == NULL);

    remove(at("a.csv"));
    remove(at("w.npy"));
    CHECK(rmdir(dir) == 0);
    return check_summary("test_output");
}
