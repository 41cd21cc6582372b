/* Tractograms: opening by extension or magic, streaming, rewinding and
 * writing a subset in the input's format. The formats are in trk.c / tck.c. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "neurosolve/output.h"
#include "life/tracts_impl.h"

static int ends_with(const char *s, const char *suffix) {
    const size_t n = strlen(s), m = strlen(suffix);
    if (n < m) return 0;
    for (size_t i = 0; i < m; ++i) {
        char a = s[n - m + i];
        if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
        if (a != suffix[i]) return 0;
    }
    return 1;
}

ns_status ns_tracts_read(ns_tracts_t *t, void *dst, size_t n, const char *what, int *eof_at_start) {
    const size_t got = n ? fread(dst, 1, n, t->f) : 0;
    t->pos += got;
    if (got == n) return NS_OK;
    if (ferror(t->f)) return ns_fail(NS_ERR_IO, "%s: read error at byte %llu: %s", t->path,
                                     (unsigned long long)t->pos, strerror(errno));
    if (got == 0 && eof_at_start) {
        *eof_at_start = 1;
        return NS_OK;
    }
    return ns_fail(NS_ERR_PARSE, "%s: truncated: streamline %lld: the %s needs %zu bytes at byte %llu, "
                   "the file ends after %zu", t->path, (long long)t->index, what, n,
                   (unsigned long long)(t->pos - got), got);
}

ns_status ns_tracts_reserve(ns_tracts_t *t, int64_t n) {
    if (n <= t->pts_cap) return NS_OK;
    int64_t cap = t->pts_cap ? t->pts_cap : 256;
    while (cap < n) cap *= 2;
    double *p = realloc(t->pts, (size_t)cap * 3 * sizeof *p);
    if (!p) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: streamline %lld with %lld points", t->path,
                           (long long)t->index, (long long)n);
    t->pts = p, t->pts_cap = cap;
    return NS_OK;
}

ns_status ns_tracts_open(const char *path, ns_tracts_t **out) {
    if (!path || !out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_tracts_open: NULL argument");
    *out = NULL;
    ns_tracts_t *t = calloc(1, sizeof *t);
    if (!t || !(t->path = malloc(strlen(path) + 1))) {
        free(t);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", path);
    }
    strcpy(t->path, path);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) { /* TRX's folder form */
        t->format = NS_TRACTS_TRX;
        ns_status s = ns_trx_open(t, 1);
        if (s != NS_OK) {
            ns_tracts_close(t);
            return s;
        }
        *out = t;
        return NS_OK;
    }
    t->f = fopen(path, "rb");
    if (!t->f) {
        ns_status s = ns_fail(NS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        ns_tracts_close(t);
        return s;
    }
    setvbuf(t->f, NULL, _IOFBF, 1 << 20);
    if (fstat(fileno(t->f), &st) == 0) t->size = (uint64_t)st.st_size;
    char magic[13] = {0};
    const size_t got = fread(magic, 1, 12, t->f);
    rewind(t->f);
    if (ends_with(path, ".trk")) t->format = NS_TRACTS_TRK;
    else if (ends_with(path, ".tck")) t->format = NS_TRACTS_TCK;
    else if (ends_with(path, ".trx")) t->format = NS_TRACTS_TRX;
    else if (got >= 5 && memcmp(magic, "TRACK", 5) == 0) t->format = NS_TRACTS_TRK;
    else if (got >= 12 && memcmp(magic, "mrtrix track", 12) == 0) t->format = NS_TRACTS_TCK;
    else if (got >= 4 && memcmp(magic, "PK\x03\x04", 4) == 0) t->format = NS_TRACTS_TRX;
    ns_status s;
    if (t->format == NS_TRACTS_TRK) s = ns_trk_open(t);
    else if (t->format == NS_TRACTS_TCK) s = ns_tck_open(t);
    else if (t->format == NS_TRACTS_TRX) s = ns_trx_open(t, 0);
    else if (ends_with(path, ".trk.gz") || ends_with(path, ".tck.gz"))
        s = ns_fail(NS_ERR_UNSUPPORTED, "%s: compressed tractograms are not read (gunzip it first: the "
                    "builder streams through the file twice)", path);
    else
        s = ns_fail(NS_ERR_UNSUPPORTED, "%s: unknown tractogram format (expected .trk, .tck or .trx)", path);
    if (s == NS_OK) {
        t->data_offset = t->pos;
    } else {
        ns_tracts_close(t);
        return s;
    }
    *out = t;
    return NS_OK;
}

void ns_tracts_close(ns_tracts_t *t) {
    if (!t) return;
    if (t->f) fclose(t->f);
    ns_trx_close(t);
    free(t->path);
    free(t->raw);
    free(t->pts);
    free(t);
}

ns_tracts_format ns_tracts_get_format(const ns_tracts_t *t) { return t->format; }
int64_t ns_tracts_declared_count(const ns_tracts_t *t) { return t->declared; }
int64_t ns_tracts_index(const ns_tracts_t *t) { return t->index; }

void ns_tracts_to_world(const ns_tracts_t *t, double a[16]) {
    for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c) a[4 * r + c] = t->to_world[r][c];
}

void ns_tracts_progress(const ns_tracts_t *t, uint64_t *done, uint64_t *total) {
    if (done) *done = t->pos;
    if (total) *total = t->size;
}

ns_status ns_tracts_next(ns_tracts_t *t, const double **points, int64_t *n_points, int *end) {
    if (!t || !points || !n_points || !end) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_tracts_next: NULL argument");
    *points = NULL, *n_points = 0, *end = 0;
    if (t->ended) {
        *end = 1;
        return NS_OK;
    }
    ns_status s;
    int64_t n = 0;
    if (t->format == NS_TRACTS_TRK) {
        s = ns_trk_next_raw(t, &n, end);
        if (s == NS_OK && !*end) s = ns_trk_decode(t, n);
    } else if (t->format == NS_TRACTS_TRX) {
        s = ns_trx_next(t, &n, end);
    } else {
        s = ns_tck_next(t, &n, end);
    }
    if (s != NS_OK) return s;
    if (*end) {
        t->ended = 1;
        if (t->declared >= 0 && t->index != t->declared)
            return ns_fail(NS_ERR_PARSE, "%s: the header declares %lld streamlines but the file holds %lld",
                           t->path, (long long)t->declared, (long long)t->index);
        return NS_OK;
    }
    ++t->index;
    *points = t->pts, *n_points = n;
    return NS_OK;
}

ns_status ns_tracts_rewind(ns_tracts_t *t) {
    if (!t) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_tracts_rewind: NULL argument");
    if (t->format == NS_TRACTS_TRX) {
        t->index = 0, t->ended = 0;
        return ns_trx_rewind(t);
    }
    if (fseek(t->f, (long)t->data_offset, SEEK_SET) != 0)
        return ns_fail(NS_ERR_IO, "%s: cannot seek: %s", t->path, strerror(errno));
    t->pos = t->data_offset, t->index = 0, t->ended = 0;
    return NS_OK;
}

static ns_status trk_subset(ns_tracts_t *t, const char *out_path, const uint8_t *keep, int64_t n,
                            int64_t *written) {
    ns_output *out = NULL;
    ns_status s = ns_output_open(out_path, &out);
    if (s != NS_OK) return s;
    FILE *o = ns_output_stream(out);
    unsigned char h[1000];
    memcpy(h, t->header, sizeof h);
    if (fwrite(h, 1, sizeof h, o) != sizeof h) s = ns_fail(NS_ERR_IO, "%s: write error", out_path);
    int64_t k = 0, i = 0;
    while (s == NS_OK) {
        int end = 0;
        int64_t m = 0;
        if ((s = ns_trk_next_raw(t, &m, &end)) != NS_OK || end) break;
        if (i >= n) {
            s = ns_fail(NS_ERR_SIZE, "%s: more than the %lld streamlines the weights cover", t->path, (long long)n);
            break;
        }
        ++t->index;
        if (keep[i++]) {
            if (fwrite(t->raw, 1, t->raw_len, o) != t->raw_len) s = ns_fail(NS_ERR_IO, "%s: write error", out_path);
            ++k;
        }
    }
    if (s == NS_OK && i != n)
        s = ns_fail(NS_ERR_SIZE, "%s holds %lld streamlines but %lld keep flags were given", t->path,
                    (long long)i, (long long)n);
    if (s == NS_OK) { /* n_count at byte 988, in the file's byte order */
        const uint32_t v = (uint32_t)k;
        unsigned char b[4];
        for (int j = 0; j < 4; ++j) b[t->swap ? 3 - j : j] = (unsigned char)(v >> (8 * j));
        if (fseek(o, 988, SEEK_SET) != 0 || fwrite(b, 1, 4, o) != 4) s = ns_fail(NS_ERR_IO, "%s: write error", out_path);
    }
    if (s == NS_OK) s = ns_output_commit(out); /* the .trk appears only when complete */
    else ns_output_abort(out);
    if (s == NS_OK) *written = k;
    return s;
}

ns_status ns_tracts_write_subset(const char *in_path, const char *out_path, const uint8_t *keep, int64_t n,
                                 int64_t *written) {
    if (!in_path || !out_path || (!keep && n > 0) || !written)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_tracts_write_subset: NULL argument");
    *written = 0;
    ns_tracts_t *t = NULL;
    ns_status s = ns_tracts_open(in_path, &t);
    if (s != NS_OK) return s;
    /* the subset is written in the input's format: an output named for another one is refused */
    static const char *const ext[4] = {"", ".trk", ".tck", ".trx"};
    for (int f = NS_TRACTS_TRK; f <= NS_TRACTS_TRX; ++f)
        if (ends_with(out_path, ext[f]) && f != (int)t->format) {
            s = ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: the pruned tractogram is written in the format of %s (%s); "
                        "name it %s", out_path, in_path, ext[t->format], ext[t->format]);
            ns_tracts_close(t);
            return s;
        }
    if (t->format == NS_TRACTS_TRK && t->declared > INT32_MAX)
        s = ns_fail(NS_ERR_SIZE, "%s: too many streamlines for a .trk count", in_path);
    else if (t->format == NS_TRACTS_TRK) s = trk_subset(t, out_path, keep, n, written);
    else if (t->format == NS_TRACTS_TRX) s = ns_trx_write_subset(t, out_path, keep, n, written);
    else s = ns_tck_write_subset(t, out_path, keep, n, written);
    ns_tracts_close(t);
    return s;
}
