/* MRtrix .tck: a text header ("mrtrix tracks", "key: value" lines, "END"),
 * then from the byte offset in "file: . OFFSET" a flat list of point
 * triplets in world coordinates [mm] (float32 or float64, either byte
 * order as "datatype" says); a NaN triplet ends a streamline, an Inf
 * triplet ends the data. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "neurosolve/number.h"
#include "neurosolve/output.h"
#include "life/tracts_impl.h"

enum { MAX_LINE = 65536 };

/* One header line without its newline; fails on a line too long or EOF. */
static ns_status header_line(ns_tracts_t *t, char *line, int lineno) {
    size_t n = 0;
    for (;;) {
        const int c = fgetc(t->f);
        if (c == EOF) return ns_fail(NS_ERR_PARSE, "%s:%d: header ends without 'END'", t->path, lineno);
        ++t->pos;
        if (c == '\n') break;
        if (n + 1 >= MAX_LINE) return ns_fail(NS_ERR_PARSE, "%s:%d: header line too long", t->path, lineno);
        line[n++] = (char)c;
    }
    if (n && line[n - 1] == '\r') --n;
    line[n] = '\0';
    return NS_OK;
}

static char *value_of(char *line, const char *key) {
    const size_t k = strlen(key);
    if (strncmp(line, key, k) != 0 || line[k] != ':') return NULL;
    char *v = line + k + 1;
    while (*v == ' ' || *v == '\t') ++v;
    size_t n = strlen(v);
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t')) v[--n] = '\0';
    return v;
}

ns_status ns_tck_open(ns_tracts_t *t) {
    char *line = malloc(MAX_LINE);
    if (!line) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", t->path);
    ns_status s = header_line(t, line, 1);
    if (s == NS_OK && strcmp(line, "mrtrix tracks") != 0)
        s = ns_fail(NS_ERR_PARSE, "%s:1: not an MRtrix tractogram (first line is not 'mrtrix tracks')", t->path);
    int have_type = 0;
    long long offset = -1;
    t->declared = -1;
    for (int lineno = 2; s == NS_OK; ++lineno) {
        if ((s = header_line(t, line, lineno)) != NS_OK) break;
        if (strcmp(line, "END") == 0) break;
        char *v;
        if ((v = value_of(line, "datatype"))) {
            have_type = 1;
            if (strcmp(v, "Float32LE") == 0) t->f64 = 0, t->swap = 0;
            else if (strcmp(v, "Float32BE") == 0) t->f64 = 0, t->swap = 1;
            else if (strcmp(v, "Float64LE") == 0) t->f64 = 1, t->swap = 0;
            else if (strcmp(v, "Float64BE") == 0) t->f64 = 1, t->swap = 1;
            else s = ns_fail(NS_ERR_UNSUPPORTED, "%s:%d: datatype '%s' (Float32LE/BE, Float64LE/BE are read)", t->path, lineno, v);
        } else if ((v = value_of(line, "file"))) {
            int64_t o = 0;
            if (v[0] != '.' || v[1] != ' ')
                s = ns_fail(NS_ERR_UNSUPPORTED, "%s:%d: 'file: %s': only data in the same file ('. OFFSET') is read", t->path, lineno, v);
            else if (ns_integer_parse(v + 2, 1, INT64_MAX, &o) != NS_OK) /* neurosolve/number.h */
                s = ns_fail(NS_ERR_PARSE, "%s:%d: bad data offset in 'file: %s'", t->path, lineno, v);
            else offset = o;
        } else if ((v = value_of(line, "count"))) {
            int64_t c = 0;
            if (ns_integer_parse(v, 0, INT64_MAX, &c) != NS_OK) s = ns_fail(NS_ERR_PARSE, "%s:%d: bad count '%s'", t->path, lineno, v);
            else t->declared = c;
        }
    }
    free(line);
    if (s != NS_OK) return s;
    if (!have_type) return ns_fail(NS_ERR_PARSE, "%s: header has no 'datatype'", t->path);
    if (offset < 0) return ns_fail(NS_ERR_PARSE, "%s: header has no 'file: . OFFSET'", t->path);
    if ((uint64_t)offset < t->pos) return ns_fail(NS_ERR_PARSE, "%s: data offset %lld lies inside the header (%llu bytes)",
                                                  t->path, offset, (unsigned long long)t->pos);
    if ((uint64_t)offset > t->size) return ns_fail(NS_ERR_PARSE, "%s: truncated: data offset %lld is past the end (%llu bytes)",
                                                   t->path, offset, (unsigned long long)t->size);
    if (fseek(t->f, (long)offset, SEEK_SET) != 0) return ns_fail(NS_ERR_IO, "%s: cannot seek: %s", t->path, strerror(errno));
    t->pos = (uint64_t)offset;
    for (int i = 0; i < 4; ++i) t->to_world[i][i] = 1.0;
    return NS_OK;
}

static double value_at(const unsigned char *p, int f64, int swap) {
    unsigned char b[8];
    const int n = f64 ? 8 : 4;
    for (int i = 0; i < n; ++i) b[i] = swap ? p[n - 1 - i] : p[i];
    if (f64) {
        double d;
        memcpy(&d, b, 8);
        return d;
    }
    float f;
    memcpy(&f, b, 4);
    return f;
}

ns_status ns_tck_next(ns_tracts_t *t, int64_t *n_points, int *end) {
    *end = 0, *n_points = 0;
    const size_t tb = t->f64 ? 24 : 12; /* bytes per triplet */
    unsigned char b[24];
    int64_t m = 0;
    for (;;) {
        const uint64_t at = t->pos;
        const size_t got = fread(b, 1, tb, t->f);
        t->pos += got;
        if (got != tb) {
            if (ferror(t->f)) return ns_fail(NS_ERR_IO, "%s: read error: %s", t->path, strerror(errno));
            return ns_fail(NS_ERR_PARSE, "%s: truncated: streamline %lld at byte %llu: the file ends %s "
                           "without the end-of-data marker (an Inf triplet)", t->path, (long long)t->index,
                           (unsigned long long)at, got ? "inside a point" : "");
        }
        const double x = value_at(b, t->f64, t->swap), y = value_at(b + tb / 3, t->f64, t->swap),
                     z = value_at(b + 2 * tb / 3, t->f64, t->swap);
        /* isinf(-Inf) may be -1 (glibc's builtin): count with != 0, or (x, +Inf, -Inf) sums to 0 */
        const int nan = (isnan(x) != 0) + (isnan(y) != 0) + (isnan(z) != 0),
                  inf = (isinf(x) != 0) + (isinf(y) != 0) + (isinf(z) != 0);
        if (nan == 3) break; /* end of this streamline */
        if (inf == 3) {
            if (m > 0)
                return ns_fail(NS_ERR_PARSE, "%s: streamline %lld at byte %llu ends with the end-of-data marker "
                               "instead of a NaN triplet (truncated)", t->path, (long long)t->index, (unsigned long long)at);
            if (t->pos != t->size && t->size)
                return ns_fail(NS_ERR_PARSE, "%s: %llu bytes after the end-of-data marker", t->path,
                               (unsigned long long)(t->size - t->pos));
            *end = 1;
            return NS_OK;
        }
        if (nan || inf)
            return ns_fail(NS_ERR_PARSE, "%s: streamline %lld, point %lld at byte %llu mixes finite and NaN/Inf "
                           "coordinates (corrupt)", t->path, (long long)t->index, (long long)m, (unsigned long long)at);
        ns_status s = ns_tracts_reserve(t, m + 1);
        if (s != NS_OK) return s;
        t->pts[3 * m] = x, t->pts[3 * m + 1] = y, t->pts[3 * m + 2] = z;
        ++m;
    }
    *n_points = m;
    return NS_OK;
}

static void put_value(unsigned char *p, double v, int f64, int swap) {
    unsigned char b[8];
    const int n = f64 ? 8 : 4;
    if (f64) memcpy(b, &v, 8);
    else {
        const float f = (float)v;
        memcpy(b, &f, 4);
    }
    for (int i = 0; i < n; ++i) p[i] = swap ? b[n - 1 - i] : b[i];
}

static ns_status put_triplet(FILE *o, const char *path, double x, double y, double z, int f64, int swap) {
    unsigned char b[24];
    const int n = f64 ? 8 : 4;
    put_value(b, x, f64, swap), put_value(b + n, y, f64, swap), put_value(b + 2 * n, z, f64, swap);
    return fwrite(b, 1, (size_t)(3 * n), o) == (size_t)(3 * n) ? NS_OK : ns_fail(NS_ERR_IO, "%s: write error", path);
}

/* Header lines other than count/total_count/file are copied; the data
 * offset is chosen so that "file: . OFFSET" is consistent with its own
 * length. The count is written as a fixed-width field and patched at the
 * end (MRtrix reads it with leading zeros fine). */
ns_status ns_tck_write_subset(ns_tracts_t *t, const char *out_path, const uint8_t *keep, int64_t n,
                              int64_t *written) {
    ns_output *out = NULL;
    ns_status s = ns_output_open(out_path, &out);
    if (s != NS_OK) return s;
    FILE *o = ns_output_stream(out);
    char *line = malloc(MAX_LINE);
    if (!line) s = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", out_path);
    long head = 0;
    if (s == NS_OK && fseek(t->f, 0, SEEK_SET) != 0) s = ns_fail(NS_ERR_IO, "%s: cannot seek", t->path);
    t->pos = 0;
    for (int lineno = 1; s == NS_OK; ++lineno) {
        if ((s = header_line(t, line, lineno)) != NS_OK || strcmp(line, "END") == 0) break;
        if (value_of(line, "count") || value_of(line, "total_count") || value_of(line, "file")) continue;
        if (fprintf(o, "%s\n", line) < 0) s = ns_fail(NS_ERR_IO, "%s: write error", out_path);
    }
    long count_at = 0;
    if (s == NS_OK) {
        count_at = ftell(o) + (long)strlen("count: ");
        if (fprintf(o, "count: %020lld\n", 0LL) < 0) s = ns_fail(NS_ERR_IO, "%s: write error", out_path);
        head = ftell(o);
    }
    long offset = 0;
    if (s == NS_OK) {
        /* "file: . N\nEND\n" where N counts its own digits */
        const long fixed = head + (long)strlen("file: . \nEND\n");
        offset = fixed + 1;
        while (fixed + (long)snprintf(NULL, 0, "%ld", offset) > offset) ++offset;
        if (fprintf(o, "file: . %ld\nEND\n", offset) < 0) s = ns_fail(NS_ERR_IO, "%s: write error", out_path);
        while (s == NS_OK && ftell(o) < offset)
            if (fputc('\0', o) == EOF) s = ns_fail(NS_ERR_IO, "%s: write error", out_path);
    }
    free(line);
    if (s == NS_OK) s = ns_tracts_rewind(t);
    int64_t k = 0, i = 0;
    while (s == NS_OK) {
        const double *p = NULL;
        int64_t m = 0;
        int end = 0;
        if ((s = ns_tracts_next(t, &p, &m, &end)) != NS_OK || end) break;
        if (i >= n) {
            s = ns_fail(NS_ERR_SIZE, "%s: more than the %lld streamlines the weights cover", t->path, (long long)n);
            break;
        }
        if (!keep[i++]) continue;
        for (int64_t j = 0; s == NS_OK && j < m; ++j)
            s = put_triplet(o, out_path, p[3 * j], p[3 * j + 1], p[3 * j + 2], t->f64, t->swap);
        if (s == NS_OK) s = put_triplet(o, out_path, NAN, NAN, NAN, t->f64, t->swap);
        ++k;
    }
    if (s == NS_OK && i != n)
        s = ns_fail(NS_ERR_SIZE, "%s holds %lld streamlines but %lld keep flags were given", t->path, (long long)i,
                    (long long)n);
    if (s == NS_OK) s = put_triplet(o, out_path, INFINITY, INFINITY, INFINITY, t->f64, t->swap);
    if (s == NS_OK && (fseek(o, count_at, SEEK_SET) != 0 || fprintf(o, "%020lld", (long long)k) < 0))
        s = ns_fail(NS_ERR_IO, "%s: write error", out_path);
    if (s == NS_OK) s = ns_output_commit(out); /* the .tck appears only with its end marker */
    else ns_output_abort(out);
    if (s == NS_OK) *written = k;
    return s;
}
