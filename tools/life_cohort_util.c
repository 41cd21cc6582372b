/* life cohort's small helpers: paths, folders, small files, the --json documents' members. */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "life_cohort.h"

/* snprintf for paths: a path that does not fit is cut (the file is then not found, or not
 * created, and that error names it). */
void lc_pathf(char *dst, size_t cap, const char *format, ...) {
    va_list ap;
    va_start(ap, format);
    vsnprintf(dst, cap, format, ap);
    va_end(ap);
}

int lc_is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int lc_is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

int lc_ends_with(const char *s, const char *tail) {
    const size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

int lc_starts_with(const char *s, const char *head) { return strncmp(s, head, strlen(head)) == 0; }

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The sorted names in `dir` that start with `prefix` (NULL-terminated, malloc'ed; NULL if unreadable). */
char **lc_list_dir(const char *dir, const char *prefix, int *count) {
    *count = 0;
    DIR *d = opendir(dir);
    if (!d) return NULL;
    int cap = 16;
    char **names = malloc((size_t)cap * sizeof *names);
    for (struct dirent *e; names && (e = readdir(d));) {
        if (e->d_name[0] == '.' || !lc_starts_with(e->d_name, prefix)) continue;
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

void lc_free_list(char **names) {
    for (char **p = names; p && *p; ++p) free(*p);
    free(names);
}

/* Remove a folder and what it holds (its sub-folders too); a missing folder is fine. */
void lc_remove_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    char p[PATHN];
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        lc_pathf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) lc_remove_tree(p); /* a link is removed, not followed */
        else unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

/* The whole of a (small) text file, NUL-terminated, malloc'ed; NULL if unreadable. */
char *lc_read_text(const char *path) {
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
int lc_json_member(const char *text, const char *key, char *value, size_t cap) {
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

double lc_json_number(const char *text, const char *key) {
    char v[64];
    return lc_json_member(text, key, v, sizeof v) ? strtod(v, NULL) : NAN;
}

/* Decompress a .tck.gz/.trk.gz into `to` (the builder streams through the file twice). */
int lc_gunzip(const char *from, const char *to) {
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

int lc_copy_file(const char *from, const char *to) {
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

int lc_move_file(const char *from, const char *to) {
    return rename(from, to) == 0 ? 0 : cli_error("%s: cannot move to %s: %s", from, to, strerror(errno));
}

void lc_json_generated_by(cli_json *j, const char *description) {
    json_array_begin(j, "GeneratedBy");
    json_object_begin(j, NULL);
    json_string(j, "Name", "neurosolve");
    json_string(j, "Version", ns_version());
    json_string(j, "Description", description);
    json_object_end(j);
    json_array_end(j);
}
