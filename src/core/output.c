/* Output files that appear only when complete (include/neurosolve/output.h). */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "neurosolve/output.h"

struct ns_output {
    FILE *f;
    char *path;
    char *temp;
};

static atomic_uint serial;

#ifndef NAME_MAX
#define NAME_MAX 255
#endif

/* Room for ".", ".partial-PID-N" and the extension copied again. */
#define TEMP_EXTRA 64

/* The temporary name ".NAME.partial-PID-N.EXT" of `path` (its folder is the
 * first `dir` bytes) in `temp` (`cap` >= strlen(path) + TEMP_EXTRA bytes).
 * NAME is cut so that the name stays within the file system's NAME_MAX:
 * any NAME that is valid itself gets a valid temporary name (uniqueness
 * comes from PID-N, not from NAME). */
static void temp_name(char *temp, size_t cap, const char *path, size_t dir, unsigned k, const char *ext) {
    char tail[48];
    snprintf(tail, sizeof tail, ".partial-%ld-%u", (long)getpid(), k);
    size_t base = strlen(path + dir), ext_len = strlen(ext);
    const size_t fixed = 1 + strlen(tail); /* the leading dot and the tail */
    if (ext_len > NAME_MAX - fixed) ext_len = NAME_MAX - fixed;
    if (base > NAME_MAX - fixed - ext_len) base = NAME_MAX - fixed - ext_len;
    snprintf(temp, cap, "%.*s.%.*s%s%.*s", (int)dir, path, (int)base, path + dir, tail, (int)ext_len, ext);
}

static int move_entries(const char *from, const char *to);
static void move_entries_unlink(const char *from) { move_entries(from, NULL); }

/* Whether `name` (an entry of NAME's folder) is a temporary of NAME
 * (".NAME.partial-PID-N.EXT", NAME and EXT possibly cut as temp_name cuts
 * them) left by a process that no longer runs: its PID answers ESRCH. Not
 * this process's, not a live one's (EPERM: another user's, alive). */
static int stale_temp(const char *name, const char *base, const char *ext) {
    if (name[0] != '.') return 0;
    const char *tag = strstr(name + 1, ".partial-");
    if (!tag) return 0;
    const size_t plen = (size_t)(tag - name - 1), blen = strlen(base), nlen = strlen(name);
    /* NAME itself, or a prefix of it in a name cut at NAME_MAX */
    if (plen > blen || strncmp(name + 1, base, plen) != 0 || (plen < blen && nlen < NAME_MAX)) return 0;
    const char *p = tag + 9;
    char *end;
    errno = 0;
    const long pid = strtol(p, &end, 10);
    if (end == p || *end != '-' || errno || pid <= 0 || pid > INT_MAX) return 0;
    p = end + 1;
    if (*p < '0' || *p > '9') return 0;
    while (*p >= '0' && *p <= '9') ++p;
    const size_t elen = strlen(p), want = strlen(ext);
    if (elen > want || strncmp(p, ext, elen) != 0 || (elen < want && nlen < NAME_MAX)) return 0;
    if ((pid_t)pid == getpid()) return 0;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* Removes the temporaries of `path` (folder: its first `dir` bytes) that a
 * killed run left (SIGKILL, a crash, a power cut: no code ran to remove
 * them), so that they do not pile up next to the results. */
static void remove_stale(const char *path, size_t dir, const char *ext, int is_dir) {
    char folder[4096];
    if (dir >= sizeof folder) return;
    snprintf(folder, sizeof folder, "%.*s", (int)(dir ? dir : 1), dir ? path : ".");
    DIR *d = opendir(folder);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        if (!stale_temp(e->d_name, path + dir, ext)) continue;
        char full[4096 + NAME_MAX + 2];
        snprintf(full, sizeof full, "%s%s%s", folder, dir ? "" : "/", e->d_name);
        if (is_dir) {
            move_entries_unlink(full);
            rmdir(full);
        } else
            unlink(full);
    }
    closedir(d);
}

static void release(ns_output *o) {
    free(o->path);
    free(o->temp);
    free(o);
}

ns_status ns_output_open(const char *path, ns_output **out) {
    if (out) *out = NULL;
    if (!out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_output_open: out is NULL");
    if (!path || !*path) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_output_open: path is %s", path ? "empty" : "NULL");
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return ns_fail(NS_ERR_IO, "%s: cannot write: it is a directory", path);
    ns_output *o = calloc(1, sizeof *o);
    const size_t n = strlen(path);
    if (!o || !(o->path = malloc(n + 1)) || !(o->temp = malloc(n + TEMP_EXTRA))) {
        if (o) release(o);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: output", path);
    }
    memcpy(o->path, path, n + 1);
    /* ".NAME.partial-PID-N" next to NAME, keeping NAME's extension last */
    const char *slash = strrchr(path, '/');
    const size_t dir = slash ? (size_t)(slash - path + 1) : 0;
    int fd = -1, err = 0;
    const char *ext = strrchr(path + dir, '.');
    if (!ext || ext == path + dir) ext = "";
    remove_stale(path, dir, ext, 0);
    for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
        const unsigned k = atomic_fetch_add(&serial, 1u);
        temp_name(o->temp, n + TEMP_EXTRA, path, dir, k, ext);
        fd = open(o->temp, O_WRONLY | O_CREAT | O_EXCL, 0666); /* the umask applies, as to fopen */
        err = errno;
        if (fd < 0 && err != EEXIST) break;
    }
    if (fd < 0) {
        ns_status s = ns_fail(NS_ERR_IO, "%s: cannot create: %s", path, strerror(err));
        release(o);
        return s;
    }
    o->f = fdopen(fd, "wb");
    if (!o->f) {
        err = errno;
        close(fd);
        unlink(o->temp);
        release(o);
        return ns_fail(NS_ERR_IO, "%s: cannot create: %s", path, strerror(err));
    }
    *out = o;
    return NS_OK;
}

FILE *ns_output_stream(ns_output *o) { return o ? o->f : NULL; }
const char *ns_output_temp_path(const ns_output *o) { return o ? o->temp : NULL; }

ns_status ns_output_commit(ns_output *o) {
    if (!o) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_output_commit: NULL output");
    int failed = ferror(o->f) != 0, err = failed ? EIO : 0;
    if (fclose(o->f) != 0 && !failed) failed = 1, err = errno;
    o->f = NULL;
    if (!failed && rename(o->temp, o->path) != 0) failed = 1, err = errno;
    ns_status s = NS_OK;
    if (failed) {
        unlink(o->temp);
        s = ns_fail(NS_ERR_IO, "%s: write failed: %s", o->path, strerror(err));
    }
    release(o);
    return s;
}

struct ns_output_dir {
    char *path;
    char *temp;
};

static void dir_release(ns_output_dir *d) {
    free(d->path);
    free(d->temp);
    free(d);
}

/* Apply `op` (rename into `to`, or unlink when `to` is NULL) to every entry of `from`. */
static int move_entries(const char *from, const char *to) {
    DIR *dir = opendir(from);
    if (!dir) return errno;
    int err = 0;
    char src[4096], dst[4096];
    for (struct dirent *e; !err && (e = readdir(dir));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(src, sizeof src, "%s/%s", from, e->d_name);
        if (to) {
            snprintf(dst, sizeof dst, "%s/%s", to, e->d_name);
            if (rename(src, dst) != 0) err = errno;
        } else if (unlink(src) != 0) {
            err = errno;
        }
    }
    closedir(dir);
    return err;
}

ns_status ns_output_dir_open(const char *path, ns_output_dir **out) {
    if (out) *out = NULL;
    if (!out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_output_dir_open: out is NULL");
    if (!path || !*path) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_output_dir_open: path is %s", path ? "empty" : "NULL");
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISDIR(st.st_mode))
        return ns_fail(NS_ERR_IO, "%s: cannot write a folder there: it is a file", path);
    ns_output_dir *d = calloc(1, sizeof *d);
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') --n; /* "model/" is "model" */
    if (!d || !(d->path = malloc(n + 1)) || !(d->temp = malloc(n + TEMP_EXTRA))) {
        if (d) dir_release(d);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: output folder", path);
    }
    memcpy(d->path, path, n);
    d->path[n] = '\0';
    const char *slash = strrchr(d->path, '/');
    const size_t base = slash ? (size_t)(slash - d->path + 1) : 0;
    int ok = 0, err = 0;
    remove_stale(d->path, base, "", 1);
    for (int attempt = 0; attempt < 100 && !ok; ++attempt) {
        temp_name(d->temp, n + TEMP_EXTRA, d->path, base, atomic_fetch_add(&serial, 1u), "");
        ok = mkdir(d->temp, 0777) == 0;
        err = errno;
        if (!ok && err != EEXIST) break;
    }
    if (!ok) {
        ns_status s = ns_fail(NS_ERR_IO, "%s: cannot create: %s", d->path, strerror(err));
        dir_release(d);
        return s;
    }
    *out = d;
    return NS_OK;
}

const char *ns_output_dir_path(const ns_output_dir *d) { return d ? d->temp : NULL; }

ns_status ns_output_dir_commit(ns_output_dir *d) {
    if (!d) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_output_dir_commit: NULL output");
    int err = 0;
    if (rename(d->temp, d->path) != 0) { /* NAME exists: move the files in one by one */
        if (mkdir(d->path, 0777) != 0 && errno != EEXIST) err = errno;
        if (!err) err = move_entries(d->temp, d->path);
    }
    ns_status s = NS_OK;
    if (err) s = ns_fail(NS_ERR_IO, "%s: cannot move the new files in: %s", d->path, strerror(err));
    move_entries(d->temp, NULL); /* gone after a rename; after a failure, what is left */
    rmdir(d->temp);
    dir_release(d);
    return s;
}

void ns_output_dir_abort(ns_output_dir *d) {
    if (!d) return;
    move_entries(d->temp, NULL);
    rmdir(d->temp);
    dir_release(d);
}

void ns_output_abort(ns_output *o) {
    if (!o) return;
    if (o->f) fclose(o->f);
    unlink(o->temp);
    release(o);
}
