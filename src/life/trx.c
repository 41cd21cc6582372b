/* TRX tractograms (tee-ar-ex/trx-spec, the format of trx-python and pyAFQ):
 * a ZIP archive (entries stored or deflated, ZIP64 when large) or a plain
 * folder holding
 *   header.json            VOXEL_TO_RASMM, DIMENSIONS, NB_STREAMLINES, NB_VERTICES
 *   positions.3.<dtype>    NB_VERTICES x 3 world coordinates [mm] (RASMM),
 *                          float16, float32 or float64, little-endian
 *   offsets.<dtype>        uint32 or uint64: the first vertex of each streamline,
 *                          NB_STREAMLINES entries (the spec) or NB_STREAMLINES + 1
 *                          with the vertex count last (trx-python >= 0.3)
 *   dps/, dpv/, groups/, dpg/   optional: skipped when reading; dps and dpv
 *                          are carried into a pruned subset, groups and dpg not
 * Reading streams the positions (one streamline in memory) and holds the
 * offsets (8 bytes per streamline). Writing (the pruned subset) produces a
 * stored (uncompressed) ZIP with offsets of NB_STREAMLINES + 1 entries. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "core/error.h"
#include "neurosolve/output.h"
#include "life/tracts_impl.h"

enum { MAX_ARRAYS = 256, INBUF = 1 << 16 };

/* One array of the TRX: where its bytes are and how they are stored. */
typedef struct trx_entry {
    char *name;               /* as in the archive / relative to the folder */
    char *file;               /* the file that holds it (archive or folder file) */
    uint64_t start;           /* first byte of its (compressed) data in `file` */
    uint64_t csize, usize;    /* stored and uncompressed sizes */
    int method;               /* 0 stored, 8 deflate */
    int has_crc;              /* ZIP entries: crc is the CRC-32 of the uncompressed bytes */
    uint32_t crc;
} trx_entry;

/* A sequential reader of one entry. */
typedef struct trx_stream {
    const trx_entry *e;
    const char *trx_path;
    FILE *f;
    uint64_t done_c, done_u;
    uint32_t crc;             /* of the bytes read so far */
    z_stream z;
    int z_open;
    unsigned char *in;
} trx_stream;

struct ns_trx {
    trx_entry *entries;
    int n_entries;
    int pos_entry, off_entry;
    int pos_size;             /* bytes per coordinate: 2, 4, 8 */
    char pos_dtype[8];
    uint64_t n_streamlines, n_vertices;
    uint64_t *offsets;        /* n_streamlines + 1 */
    double affine[16];
    int dims[3];
    trx_stream pos;
};

/* ------------------------------------------------------------- helpers */

static uint16_t le16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t le64(const unsigned char *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }

static char *dup_str(const char *s) {
    char *d = malloc(strlen(s) + 1);
    if (d) strcpy(d, s);
    return d;
}

static double half_to_double(uint16_t h) {
    const int sign = h >> 15, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
    double v;
    if (exp == 0) v = ldexp((double)frac, -24);
    else if (exp == 31) v = frac ? NAN : INFINITY;
    else v = ldexp((double)(frac | 0x400), exp - 25);
    return sign ? -v : v;
}

static ns_status read_at(FILE *f, const char *path, uint64_t at, void *dst, size_t n, const char *what) {
    if (fseeko(f, (off_t)at, SEEK_SET) != 0) return ns_fail(NS_ERR_IO, "%s: cannot seek to %s: %s", path, what, strerror(errno));
    if (fread(dst, 1, n, f) != n)
        return ns_fail(NS_ERR_PARSE, "%s: truncated: the %s (%zu bytes at byte %llu) lies past the end of the file",
                       path, what, n, (unsigned long long)at);
    return NS_OK;
}

/* ----------------------------------------------------- entry streams */

static void stream_close(trx_stream *s) {
    if (s->f) fclose(s->f);
    if (s->z_open) inflateEnd(&s->z);
    free(s->in);
    memset(s, 0, sizeof *s);
}

static ns_status stream_open(trx_stream *s, const trx_entry *e, const char *trx_path) {
    stream_close(s);
    s->e = e, s->trx_path = trx_path;
    s->crc = (uint32_t)crc32(0L, Z_NULL, 0);
    s->f = fopen(e->file, "rb");
    if (!s->f) return ns_fail(NS_ERR_IO, "%s: cannot open %s: %s", trx_path, e->name, strerror(errno));
    setvbuf(s->f, NULL, _IOFBF, 1 << 20);
    if (fseeko(s->f, (off_t)e->start, SEEK_SET) != 0)
        return ns_fail(NS_ERR_IO, "%s: cannot seek to %s: %s", trx_path, e->name, strerror(errno));
    if (e->method == 8) {
        if (!(s->in = malloc(INBUF))) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: %s", trx_path, e->name);
        if (inflateInit2(&s->z, -MAX_WBITS) != Z_OK)
            return ns_fail(NS_ERR_INTERNAL, "%s: %s: zlib inflateInit2 failed", trx_path, e->name);
        s->z_open = 1;
    }
    return NS_OK;
}

static ns_status stream_read_raw(trx_stream *s, void *dst, size_t n);

/* Exactly n more uncompressed bytes of the entry; the CRC-32 of a ZIP entry
 * is checked when its last byte has been read. */
static ns_status stream_read(trx_stream *s, void *dst, size_t n) {
    ns_status st = stream_read_raw(s, dst, n);
    if (st != NS_OK || !s->e->has_crc) return st;
    for (size_t k = 0; k < n; k += (size_t)1 << 30) {
        const size_t m = n - k < ((size_t)1 << 30) ? n - k : ((size_t)1 << 30);
        s->crc = (uint32_t)crc32(s->crc, (const unsigned char *)dst + k, (uInt)m);
    }
    if (s->done_u == s->e->usize && s->crc != s->e->crc)
        return ns_fail(NS_ERR_PARSE, "%s: %s is corrupt (CRC-32 %08x, the archive says %08x)", s->trx_path,
                       s->e->name, (unsigned)s->crc, (unsigned)s->e->crc);
    return NS_OK;
}

static ns_status stream_read_raw(trx_stream *s, void *dst, size_t n) {
    const trx_entry *e = s->e;
    if (s->done_u + n > e->usize)
        return ns_fail(NS_ERR_PARSE, "%s: %s: %zu bytes asked past its %llu bytes", s->trx_path, e->name, n,
                       (unsigned long long)e->usize);
    if (e->method == 0) {
        const size_t got = n ? fread(dst, 1, n, s->f) : 0;
        s->done_u += got, s->done_c += got;
        if (got != n)
            return ns_fail(NS_ERR_PARSE, "%s: truncated: %s ends after %llu of its %llu bytes", s->trx_path, e->name,
                           (unsigned long long)s->done_u, (unsigned long long)e->usize);
        return NS_OK;
    }
    s->z.next_out = dst;
    s->z.avail_out = (uInt)n; /* callers ask for at most a streamline at a time */
    while (s->z.avail_out > 0) {
        if (s->z.avail_in == 0) {
            const uint64_t left = e->csize - s->done_c;
            const size_t want = left < INBUF ? (size_t)left : INBUF;
            const size_t got = want ? fread(s->in, 1, want, s->f) : 0;
            if (got == 0)
                return ns_fail(NS_ERR_PARSE, "%s: truncated: the compressed data of %s ends after %llu of %llu "
                               "uncompressed bytes", s->trx_path, e->name,
                               (unsigned long long)(s->done_u + n - s->z.avail_out), (unsigned long long)e->usize);
            s->done_c += got;
            s->z.next_in = s->in, s->z.avail_in = (uInt)got;
        }
        const int r = inflate(&s->z, Z_NO_FLUSH);
        if (r == Z_STREAM_END && s->z.avail_out > 0)
            return ns_fail(NS_ERR_PARSE, "%s: %s: the compressed data ends before its %llu bytes", s->trx_path,
                           e->name, (unsigned long long)e->usize);
        if (r != Z_OK && r != Z_STREAM_END && !(r == Z_BUF_ERROR && s->z.avail_out == 0))
            return ns_fail(NS_ERR_PARSE, "%s: %s: corrupt deflate data (zlib %d)", s->trx_path, e->name, r);
    }
    s->done_u += n;
    return NS_OK;
}

/* A whole (small) entry into memory. */
static ns_status entry_load(const trx_entry *e, const char *trx_path, uint64_t limit, unsigned char **out) {
    *out = NULL;
    if (e->usize > limit)
        return ns_fail(NS_ERR_SIZE, "%s: %s has %llu bytes (more than the %llu expected)", trx_path, e->name,
                       (unsigned long long)e->usize, (unsigned long long)limit);
    unsigned char *b = malloc(e->usize + 1);
    if (!b) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: %s", trx_path, e->name);
    trx_stream s;
    memset(&s, 0, sizeof s);
    ns_status st = stream_open(&s, e, trx_path);
    for (uint64_t k = 0; st == NS_OK && k < e->usize; k += 1 << 24) {
        const uint64_t n = e->usize - k < (1u << 24) ? e->usize - k : (1u << 24);
        st = stream_read(&s, b + k, (size_t)n);
    }
    stream_close(&s);
    if (st != NS_OK) {
        free(b);
        return st;
    }
    b[e->usize] = 0;
    *out = b;
    return NS_OK;
}

/* --------------------------------------------------------- directory */

static ns_status add_entry(struct ns_trx *x, const char *trx_path, const char *name, const char *file,
                           uint64_t start, uint64_t csize, uint64_t usize, int method, int has_crc, uint32_t crc) {
    if (x->n_entries >= MAX_ARRAYS)
        return ns_fail(NS_ERR_SIZE, "%s: more than %d arrays", trx_path, MAX_ARRAYS);
    trx_entry *e = &x->entries[x->n_entries];
    memset(e, 0, sizeof *e);
    e->name = dup_str(name), e->file = dup_str(file);
    if (!e->name || !e->file) {
        free(e->name), free(e->file);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", trx_path);
    }
    e->start = start, e->csize = csize, e->usize = usize, e->method = method;
    e->has_crc = has_crc, e->crc = crc;
    ++x->n_entries;
    return NS_OK;
}

/* The folder form: header.json etc. as files (dps/ dpv/ one level down). */
static ns_status scan_folder(struct ns_trx *x, const char *dir, const char *prefix, const char *trx_path, int depth) {
    DIR *d = opendir(dir);
    if (!d) return ns_fail(NS_ERR_IO, "%s: cannot list %s: %s", trx_path, dir, strerror(errno));
    ns_status s = NS_OK;
    struct dirent *de;
    while (s == NS_OK && (de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        const size_t n = strlen(dir) + strlen(de->d_name) + 2, m = strlen(prefix) + strlen(de->d_name) + 2;
        char *full = malloc(n), *rel = malloc(m);
        if (!full || !rel) {
            free(full), free(rel);
            s = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", trx_path);
            break;
        }
        snprintf(full, n, "%s/%s", dir, de->d_name);
        snprintf(rel, m, "%s%s", prefix, de->d_name);
        struct stat st;
        if (stat(full, &st) == 0 && S_ISDIR(st.st_mode)) {
            if (depth < 2) {
                char *p = malloc(m + 1);
                if (!p) s = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", trx_path);
                else {
                    snprintf(p, m + 1, "%s/", rel);
                    s = scan_folder(x, full, p, trx_path, depth + 1);
                    free(p);
                }
            }
        } else if (stat(full, &st) == 0) {
            s = add_entry(x, trx_path, rel, full, 0, (uint64_t)st.st_size, (uint64_t)st.st_size, 0, 0, 0);
        }
        free(full), free(rel);
    }
    closedir(d);
    return s;
}

/* The ZIP form: the central directory (ZIP64 fields where present). */
static ns_status scan_zip(struct ns_trx *x, FILE *f, uint64_t size, const char *path) {
    if (size < 22) return ns_fail(NS_ERR_PARSE, "%s: truncated: %llu bytes cannot hold a ZIP archive", path, (unsigned long long)size);
    const size_t tail = size < 65557 ? (size_t)size : 65557;
    unsigned char *b = malloc(tail);
    if (!b) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", path);
    ns_status s = read_at(f, path, size - tail, b, tail, "end of the archive");
    long eocd = -1;
    for (long i = (long)tail - 22; s == NS_OK && i >= 0; --i)
        if (le32(b + i) == 0x06054b50u) {
            eocd = i;
            break;
        }
    if (s == NS_OK && eocd < 0)
        s = ns_fail(NS_ERR_PARSE, "%s: not a complete ZIP archive (no end-of-central-directory record: truncated?)", path);
    uint64_t count = 0, cd_size = 0, cd_off = 0;
    if (s == NS_OK) {
        count = le16(b + eocd + 10), cd_size = le32(b + eocd + 12), cd_off = le32(b + eocd + 16);
        if ((count == 0xffff || cd_size == 0xffffffffu || cd_off == 0xffffffffu) && eocd >= 20 &&
            le32(b + eocd - 20) == 0x07064b50u) {
            unsigned char z[56];
            s = read_at(f, path, le64(b + eocd - 20 + 8), z, sizeof z, "ZIP64 end record");
            if (s == NS_OK && le32(z) != 0x06064b50u) s = ns_fail(NS_ERR_PARSE, "%s: corrupt ZIP64 end record", path);
            if (s == NS_OK) count = le64(z + 32), cd_size = le64(z + 40), cd_off = le64(z + 48);
        }
    }
    free(b);
    if (s != NS_OK) return s;
    if (cd_off + cd_size > size || cd_size > ((uint64_t)1 << 30))
        return ns_fail(NS_ERR_PARSE, "%s: truncated or corrupt ZIP archive: the central directory (%llu bytes at %llu) "
                       "is not inside the %llu-byte file", path, (unsigned long long)cd_size,
                       (unsigned long long)cd_off, (unsigned long long)size);
    unsigned char *cd = malloc(cd_size ? cd_size : 1);
    if (!cd) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", path);
    s = read_at(f, path, cd_off, cd, cd_size, "central directory");
    uint64_t p = 0;
    for (uint64_t k = 0; s == NS_OK && k < count; ++k) {
        if (p + 46 > cd_size || le32(cd + p) != 0x02014b50u) {
            s = ns_fail(NS_ERR_PARSE, "%s: corrupt ZIP central directory at entry %llu", path, (unsigned long long)k);
            break;
        }
        const unsigned char *c = cd + p;
        const int method = le16(c + 10), flags = le16(c + 8);
        uint64_t csize = le32(c + 20), usize = le32(c + 24), loff = le32(c + 42);
        const size_t nl = le16(c + 28), xl = le16(c + 30), cl = le16(c + 32);
        if (p + 46 + nl + xl + cl > cd_size) {
            s = ns_fail(NS_ERR_PARSE, "%s: corrupt ZIP central directory at entry %llu", path, (unsigned long long)k);
            break;
        }
        char name[1024];
        if (nl >= sizeof name) {
            s = ns_fail(NS_ERR_PARSE, "%s: ZIP entry name of %zu bytes", path, nl);
            break;
        }
        memcpy(name, c + 46, nl);
        name[nl] = 0;
        for (const unsigned char *e = c + 46 + nl; e + 4 <= c + 46 + nl + xl;) { /* ZIP64 extra */
            const int tag = le16(e), len = le16(e + 2);
            const unsigned char *v = e + 4;
            if (tag == 1) {
                if (usize == 0xffffffffu && v + 8 <= e + 4 + len) usize = le64(v), v += 8;
                if (csize == 0xffffffffu && v + 8 <= e + 4 + len) csize = le64(v), v += 8;
                if (loff == 0xffffffffu && v + 8 <= e + 4 + len) loff = le64(v), v += 8;
            }
            e += 4 + len;
        }
        p += 46 + nl + xl + cl;
        if (nl && name[nl - 1] == '/') continue; /* a folder */
        if (flags & 1) {
            s = ns_fail(NS_ERR_UNSUPPORTED, "%s: %s is encrypted", path, name);
            break;
        }
        if (method != 0 && method != 8) {
            s = ns_fail(NS_ERR_UNSUPPORTED, "%s: %s uses ZIP compression method %d (stored and deflate are read)",
                        path, name, method);
            break;
        }
        unsigned char lh[30];
        if ((s = read_at(f, path, loff, lh, 30, name)) != NS_OK) break;
        if (le32(lh) != 0x04034b50u) {
            s = ns_fail(NS_ERR_PARSE, "%s: corrupt ZIP archive: no local header for %s at byte %llu", path, name,
                        (unsigned long long)loff);
            break;
        }
        const uint64_t start = loff + 30 + le16(lh + 26) + le16(lh + 28);
        if (start + csize > size) {
            s = ns_fail(NS_ERR_PARSE, "%s: truncated: %s needs bytes %llu..%llu, the file has %llu", path, name,
                        (unsigned long long)start, (unsigned long long)(start + csize), (unsigned long long)size);
            break;
        }
        if (method == 0 && csize != usize) {
            s = ns_fail(NS_ERR_PARSE, "%s: corrupt ZIP entry %s (stored with %llu != %llu bytes)", path, name,
                        (unsigned long long)csize, (unsigned long long)usize);
            break;
        }
        s = add_entry(x, path, name, path, start, csize, usize, method, 1, le32(c + 16));
    }
    free(cd);
    return s;
}

/* ------------------------------------------------------------ header */

/* The value after "key": in a JSON object (a number or the numbers of
 * nested lists, in order); returns how many were found (at most max). */
static int json_numbers(const char *json, const char *key, double *v, int max) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\"", key);
    const char *p = strstr(json, pat);
    if (!p) return -1;
    p += strlen(pat);
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') ++p;
    if (*p != ':') return -1;
    ++p;
    int n = 0, depth = 0;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == ',') ++p;
        if (*p == '[') {
            ++depth, ++p;
            continue;
        }
        if (*p == ']') {
            if (--depth <= 0) break;
            ++p;
            continue;
        }
        char *end = NULL;
        const double d = strtod(p, &end);
        if (end == p) break;
        if (n < max) v[n] = d;
        ++n;
        p = end;
        if (depth == 0) break;
    }
    return n;
}

static ns_status parse_header(struct ns_trx *x, const char *json, const char *path) {
    double v[16];
    if (json_numbers(json, "NB_STREAMLINES", v, 1) != 1 || !(v[0] >= 0) || v[0] != floor(v[0]))
        return ns_fail(NS_ERR_PARSE, "%s: header.json has no valid NB_STREAMLINES", path);
    x->n_streamlines = (uint64_t)v[0];
    if (json_numbers(json, "NB_VERTICES", v, 1) != 1 || !(v[0] >= 0) || v[0] != floor(v[0]))
        return ns_fail(NS_ERR_PARSE, "%s: header.json has no valid NB_VERTICES", path);
    x->n_vertices = (uint64_t)v[0];
    for (int i = 0; i < 16; ++i) x->affine[i] = i % 5 == 0;
    const int na = json_numbers(json, "VOXEL_TO_RASMM", v, 16);
    if (na == 16) memcpy(x->affine, v, sizeof v);
    else if (na >= 0) return ns_fail(NS_ERR_PARSE, "%s: header.json: VOXEL_TO_RASMM has %d numbers, not 16", path, na);
    const int nd = json_numbers(json, "DIMENSIONS", v, 3);
    if (nd == 3) for (int i = 0; i < 3; ++i) x->dims[i] = (int)v[i];
    else if (nd >= 0) return ns_fail(NS_ERR_PARSE, "%s: header.json: DIMENSIONS has %d numbers, not 3", path, nd);
    return NS_OK;
}

/* -------------------------------------------------------------- open */

static int starts_with(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

static ns_status find_arrays(struct ns_trx *x, const char *path) {
    x->pos_entry = x->off_entry = -1;
    int header = -1;
    for (int i = 0; i < x->n_entries; ++i) {
        const char *n = x->entries[i].name;
        if (strcmp(n, "header.json") == 0) header = i;
        else if (starts_with(n, "positions.")) {
            if (x->pos_entry >= 0) return ns_fail(NS_ERR_PARSE, "%s: two positions arrays", path);
            const char *dt = n + strlen("positions.");
            if (starts_with(dt, "3.")) dt += 2;
            else return ns_fail(NS_ERR_PARSE, "%s: %s: positions must have 3 components ('positions.3.<dtype>')", path, n);
            if (strcmp(dt, "float16") == 0) x->pos_size = 2;
            else if (strcmp(dt, "float32") == 0) x->pos_size = 4;
            else if (strcmp(dt, "float64") == 0) x->pos_size = 8;
            else return ns_fail(NS_ERR_UNSUPPORTED, "%s: %s: positions of type '%s' (float16, float32 or float64 are "
                                "allowed)", path, n, dt);
            snprintf(x->pos_dtype, sizeof x->pos_dtype, "%s", dt);
            x->pos_entry = i;
        } else if (starts_with(n, "offsets.")) {
            if (x->off_entry >= 0) return ns_fail(NS_ERR_PARSE, "%s: two offsets arrays", path);
            const char *dt = n + strlen("offsets.");
            if (strcmp(dt, "uint32") != 0 && strcmp(dt, "uint64") != 0)
                return ns_fail(NS_ERR_UNSUPPORTED, "%s: %s: offsets of type '%s' (uint32 or uint64 are allowed)", path, n, dt);
            x->off_entry = i;
        }
    }
    if (header < 0) return ns_fail(NS_ERR_PARSE, "%s: no header.json (not a TRX tractogram)", path);
    if (x->pos_entry < 0) return ns_fail(NS_ERR_PARSE, "%s: no positions.3.<dtype> array", path);
    if (x->off_entry < 0) return ns_fail(NS_ERR_PARSE, "%s: no offsets.<dtype> array", path);
    unsigned char *json = NULL;
    ns_status s = entry_load(&x->entries[header], path, 1 << 20, &json);
    if (s == NS_OK) s = parse_header(x, (const char *)json, path);
    free(json);
    if (s != NS_OK) return s;
    const trx_entry *pe = &x->entries[x->pos_entry], *oe = &x->entries[x->off_entry];
    if (pe->usize != x->n_vertices * 3 * (uint64_t)x->pos_size)
        return ns_fail(NS_ERR_PARSE, "%s: %s holds %llu bytes, but NB_VERTICES = %llu needs %llu", path, pe->name,
                       (unsigned long long)pe->usize, (unsigned long long)x->n_vertices,
                       (unsigned long long)(x->n_vertices * 3 * (uint64_t)x->pos_size));
    const int osz = strcmp(oe->name, "offsets.uint32") == 0 ? 4 : 8;
    const uint64_t nb = x->n_streamlines;
    if (oe->usize != nb * osz && oe->usize != (nb + 1) * osz)
        return ns_fail(NS_ERR_PARSE, "%s: %s holds %llu bytes: NB_STREAMLINES = %llu needs %llu (or %llu with the "
                       "vertex count last)", path, oe->name, (unsigned long long)oe->usize, (unsigned long long)nb,
                       (unsigned long long)(nb * osz), (unsigned long long)((nb + 1) * osz));
    unsigned char *raw = NULL;
    if ((s = entry_load(oe, path, oe->usize, &raw)) != NS_OK) return s;
    const uint64_t stored = oe->usize / osz;
    x->offsets = malloc((size_t)(nb + 1) * sizeof *x->offsets);
    if (!x->offsets) s = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: offsets of %llu streamlines", path, (unsigned long long)nb);
    for (uint64_t i = 0; s == NS_OK && i < stored; ++i) {
        const uint64_t o = osz == 4 ? le32(raw + 4 * i) : le64(raw + 8 * i);
        const uint64_t prev = i ? x->offsets[i - 1] : 0;
        if ((i == 0 && o != 0) || o < prev || o > x->n_vertices)
            s = ns_fail(NS_ERR_PARSE, "%s: %s: entry %llu is %llu: offsets must start at 0, never decrease and stay "
                        "within NB_VERTICES = %llu", path, oe->name, (unsigned long long)i, (unsigned long long)o,
                        (unsigned long long)x->n_vertices);
        else x->offsets[i] = o;
    }
    if (s == NS_OK && stored == nb + 1 && x->offsets[nb] != x->n_vertices)
        s = ns_fail(NS_ERR_PARSE, "%s: %s: the last entry is %llu, not NB_VERTICES = %llu", path, oe->name,
                    (unsigned long long)x->offsets[nb], (unsigned long long)x->n_vertices);
    if (s == NS_OK) x->offsets[nb] = x->n_vertices;
    free(raw);
    return s;
}

static void trx_free(struct ns_trx *x) {
    if (!x) return;
    stream_close(&x->pos);
    for (int i = 0; i < x->n_entries; ++i) free(x->entries[i].name), free(x->entries[i].file);
    free(x->entries);
    free(x->offsets);
    free(x);
}

void ns_trx_close(ns_tracts_t *t) {
    trx_free(t->trx);
    t->trx = NULL;
}

ns_status ns_trx_open(ns_tracts_t *t, int is_dir) {
    struct ns_trx *x = calloc(1, sizeof *x);
    if (!x || !(x->entries = calloc(MAX_ARRAYS, sizeof *x->entries))) {
        free(x);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", t->path);
    }
    t->trx = x;
    ns_status s = is_dir ? scan_folder(x, t->path, "", t->path, 0) : scan_zip(x, t->f, t->size, t->path);
    if (s == NS_OK) s = find_arrays(x, t->path);
    if (s == NS_OK) s = stream_open(&x->pos, &x->entries[x->pos_entry], t->path);
    if (s != NS_OK) return s;
    if (x->n_streamlines > (uint64_t)INT64_MAX) return ns_fail(NS_ERR_SIZE, "%s: too many streamlines", t->path);
    t->declared = (int64_t)x->n_streamlines;
    memset(t->to_world, 0, sizeof t->to_world);
    for (int i = 0; i < 4; ++i) t->to_world[i][i] = 1.0; /* positions are RASMM */
    t->size = x->entries[x->pos_entry].usize;
    t->pos = 0;
    return NS_OK;
}

ns_status ns_trx_rewind(ns_tracts_t *t) {
    struct ns_trx *x = t->trx;
    t->pos = 0;
    return stream_open(&x->pos, &x->entries[x->pos_entry], t->path);
}

/* The raw bytes of streamline t->index into t->raw, then decoded to t->pts. */
ns_status ns_trx_next(ns_tracts_t *t, int64_t *n_points, int *end) {
    struct ns_trx *x = t->trx;
    *n_points = 0, *end = 0;
    const uint64_t i = (uint64_t)t->index;
    if (i >= x->n_streamlines) {
        *end = 1;
        return NS_OK;
    }
    const uint64_t m = x->offsets[i + 1] - x->offsets[i];
    const size_t bytes = (size_t)(m * 3 * (uint64_t)x->pos_size);
    if (bytes > t->raw_cap) {
        unsigned char *r = realloc(t->raw, bytes);
        if (!r) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: streamline %lld with %llu points", t->path,
                               (long long)t->index, (unsigned long long)m);
        t->raw = r, t->raw_cap = bytes;
    }
    ns_status s = stream_read(&x->pos, t->raw, bytes);
    if (s != NS_OK) return s;
    t->raw_len = bytes;
    t->pos += bytes;
    if ((s = ns_tracts_reserve(t, (int64_t)m)) != NS_OK) return s;
    for (uint64_t k = 0; k < 3 * m; ++k) {
        const unsigned char *p = t->raw + k * (uint64_t)x->pos_size;
        double v;
        if (x->pos_size == 2) v = half_to_double(le16(p));
        else if (x->pos_size == 4) {
            const uint32_t u = le32(p);
            float f;
            memcpy(&f, &u, 4);
            v = f;
        } else {
            const uint64_t u = le64(p);
            memcpy(&v, &u, 8);
        }
        if (!isfinite(v))
            return ns_fail(NS_ERR_PARSE, "%s: streamline %lld, point %llu has a non-finite coordinate", t->path,
                           (long long)t->index, (unsigned long long)(k / 3));
        t->pts[k] = v;
    }
    *n_points = (int64_t)m;
    return NS_OK;
}

/* ------------------------------------------------------------ writing */

/* A ZIP being written: stored entries, ZIP64 records where needed. */
typedef struct zip_out {
    FILE *o;
    const char *path;
    struct { char name[256]; uint64_t off, size; uint32_t crc; } e[MAX_ARRAYS];
    int n;
    uint64_t cur_size;
    uint32_t cur_crc;
} zip_out;

static void put16(unsigned char *p, unsigned v) { p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8); }
static void put32(unsigned char *p, uint32_t v) { for (int i = 0; i < 4; ++i) p[i] = (unsigned char)(v >> (8 * i)); }
static void put64(unsigned char *p, uint64_t v) { for (int i = 0; i < 8; ++i) p[i] = (unsigned char)(v >> (8 * i)); }

static ns_status zw(zip_out *z, const void *b, size_t n) {
    return fwrite(b, 1, n, z->o) == n ? NS_OK : ns_fail(NS_ERR_IO, "%s: write error", z->path);
}

/* Local header with a ZIP64 extra field (sizes patched by zip_end). */
static ns_status zip_begin(zip_out *z, const char *name) {
    if (z->n >= MAX_ARRAYS || strlen(name) >= sizeof z->e[0].name)
        return ns_fail(NS_ERR_SIZE, "%s: too many or too long entries", z->path);
    const off_t off = ftello(z->o);
    if (off < 0) return ns_fail(NS_ERR_IO, "%s: cannot tell the position", z->path);
    snprintf(z->e[z->n].name, sizeof z->e[0].name, "%s", name);
    z->e[z->n].off = (uint64_t)off;
    unsigned char h[30 + 20];
    memset(h, 0, sizeof h);
    const size_t nl = strlen(name);
    put32(h, 0x04034b50u), put16(h + 4, 45), put16(h + 10, 0), put16(h + 12, 0), put16(h + 14, 0x21);
    put32(h + 18, 0xffffffffu), put32(h + 22, 0xffffffffu), put16(h + 26, (unsigned)nl), put16(h + 28, 20);
    unsigned char *x = h + 30;
    put16(x, 1), put16(x + 2, 16);
    ns_status s = zw(z, h, 30);
    if (s == NS_OK) s = zw(z, name, nl);
    if (s == NS_OK) s = zw(z, x, 20);
    z->cur_size = 0, z->cur_crc = (uint32_t)crc32(0L, Z_NULL, 0);
    return s;
}

static ns_status zip_data(zip_out *z, const void *b, size_t n) {
    z->cur_crc = (uint32_t)crc32(z->cur_crc, b, (uInt)n);
    z->cur_size += n;
    return zw(z, b, n);
}

static ns_status zip_end(zip_out *z) {
    const uint64_t off = z->e[z->n].off;
    const size_t nl = strlen(z->e[z->n].name);
    unsigned char c[4], x[16];
    put32(c, z->cur_crc), put64(x, z->cur_size), put64(x + 8, z->cur_size);
    if (fseeko(z->o, (off_t)(off + 14), SEEK_SET) != 0 || fwrite(c, 1, 4, z->o) != 4 ||
        fseeko(z->o, (off_t)(off + 30 + nl + 4), SEEK_SET) != 0 || fwrite(x, 1, 16, z->o) != 16 ||
        fseeko(z->o, 0, SEEK_END) != 0)
        return ns_fail(NS_ERR_IO, "%s: write error", z->path);
    z->e[z->n].size = z->cur_size, z->e[z->n].crc = z->cur_crc;
    ++z->n;
    return NS_OK;
}

static ns_status zip_finish(zip_out *z) {
    const off_t cd0 = ftello(z->o);
    ns_status s = cd0 < 0 ? ns_fail(NS_ERR_IO, "%s: cannot tell the position", z->path) : NS_OK;
    for (int i = 0; s == NS_OK && i < z->n; ++i) {
        const int big = z->e[i].size >= 0xffffffffu, far = z->e[i].off >= 0xffffffffu;
        unsigned char h[46], x[4 + 24];
        memset(h, 0, sizeof h);
        const size_t nl = strlen(z->e[i].name);
        size_t xl = 0;
        put16(x, 1);
        if (big) put64(x + 4 + xl, z->e[i].size), put64(x + 12 + xl, z->e[i].size), xl += 16;
        if (far) put64(x + 4 + xl, z->e[i].off), xl += 8;
        put16(x + 2, (unsigned)xl);
        put32(h, 0x02014b50u), put16(h + 4, 45), put16(h + 6, 45), put16(h + 14, 0x21);
        put32(h + 16, z->e[i].crc);
        put32(h + 20, big ? 0xffffffffu : (uint32_t)z->e[i].size);
        put32(h + 24, big ? 0xffffffffu : (uint32_t)z->e[i].size);
        put16(h + 28, (unsigned)nl), put16(h + 30, xl ? (unsigned)(xl + 4) : 0);
        put32(h + 42, far ? 0xffffffffu : (uint32_t)z->e[i].off);
        s = zw(z, h, 46);
        if (s == NS_OK) s = zw(z, z->e[i].name, nl);
        if (s == NS_OK && xl) s = zw(z, x, xl + 4);
    }
    const off_t cd1 = ftello(z->o);
    if (s != NS_OK || cd1 < 0) return s != NS_OK ? s : ns_fail(NS_ERR_IO, "%s: cannot tell the position", z->path);
    const uint64_t cd_off = (uint64_t)cd0, cd_size = (uint64_t)(cd1 - cd0);
    const int z64 = cd_off >= 0xffffffffu || cd1 >= 0xffffffff;
    if (z64) {
        unsigned char r[56 + 20];
        memset(r, 0, sizeof r);
        put32(r, 0x06064b50u), put64(r + 4, 44), put16(r + 12, 45), put16(r + 14, 45);
        put64(r + 24, (uint64_t)z->n), put64(r + 32, (uint64_t)z->n), put64(r + 40, cd_size), put64(r + 48, cd_off);
        put32(r + 56, 0x07064b50u), put64(r + 56 + 8, (uint64_t)cd1), put32(r + 56 + 16, 1);
        s = zw(z, r, sizeof r);
    }
    unsigned char e[22];
    memset(e, 0, sizeof e);
    put32(e, 0x06054b50u), put16(e + 8, (unsigned)z->n), put16(e + 10, (unsigned)z->n);
    put32(e + 12, z64 ? 0xffffffffu : (uint32_t)cd_size), put32(e + 16, z64 ? 0xffffffffu : (uint32_t)cd_off);
    if (s == NS_OK) s = zw(z, e, 22);
    return s;
}

/* Copies the kept rows of an optional array (dps: one row per streamline,
 * dpv: one per vertex) into the archive under the same name. */
static ns_status copy_rows(zip_out *z, struct ns_trx *x, const trx_entry *e, const char *path, const uint8_t *keep,
                           int per_vertex) {
    const uint64_t rows = per_vertex ? x->n_vertices : x->n_streamlines;
    if (rows == 0 || e->usize % rows)
        return ns_fail(NS_ERR_PARSE, "%s: %s holds %llu bytes, not a whole number of rows for %llu %s", path, e->name,
                       (unsigned long long)e->usize, (unsigned long long)rows, per_vertex ? "vertices" : "streamlines");
    const uint64_t row = e->usize / rows;
    trx_stream in;
    memset(&in, 0, sizeof in);
    ns_status s = stream_open(&in, e, path);
    unsigned char *buf = NULL;
    size_t cap = 0;
    if (s == NS_OK) s = zip_begin(z, e->name);
    for (uint64_t i = 0; s == NS_OK && i < x->n_streamlines; ++i) {
        const uint64_t n = per_vertex ? x->offsets[i + 1] - x->offsets[i] : 1;
        const size_t bytes = (size_t)(n * row);
        if (bytes > cap) {
            unsigned char *b = realloc(buf, bytes);
            if (!b) {
                s = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: %s", path, e->name);
                break;
            }
            buf = b, cap = bytes;
        }
        s = stream_read(&in, buf, bytes);
        if (s == NS_OK && keep[i]) s = zip_data(z, buf, bytes);
    }
    if (s == NS_OK) s = zip_end(z);
    free(buf);
    stream_close(&in);
    return s;
}

ns_status ns_trx_write_subset(ns_tracts_t *t, const char *out_path, const uint8_t *keep, int64_t n, int64_t *written) {
    struct ns_trx *x = t->trx;
    if ((uint64_t)n != x->n_streamlines)
        return ns_fail(NS_ERR_SIZE, "%s holds %llu streamlines but %lld keep flags were given", t->path,
                       (unsigned long long)x->n_streamlines, (long long)n);
    ns_output *out = NULL;
    ns_status s = ns_output_open(out_path, &out);
    if (s != NS_OK) return s;
    zip_out *z = calloc(1, sizeof *z);
    if (!z) {
        ns_output_abort(out);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", out_path);
    }
    z->o = ns_output_stream(out), z->path = out_path;
    /* positions, streamed in the input's dtype, byte for byte */
    char name[64];
    snprintf(name, sizeof name, "positions.3.%s", x->pos_dtype);
    uint64_t kept = 0, verts = 0;
    s = ns_tracts_rewind(t);
    if (s == NS_OK) s = zip_begin(z, name);
    for (int64_t i = 0; s == NS_OK && i < n; ++i) {
        int64_t m = 0;
        int end = 0;
        const double *p = NULL;
        if ((s = ns_tracts_next(t, &p, &m, &end)) != NS_OK) break;
        if (end) {
            s = ns_fail(NS_ERR_PARSE, "%s: ends after %lld streamlines", t->path, (long long)i);
            break;
        }
        if (keep[i]) s = zip_data(z, t->raw, t->raw_len), ++kept, verts += (uint64_t)m;
    }
    if (s == NS_OK) s = zip_end(z);
    /* offsets: NB_STREAMLINES + 1 entries, the vertex count last */
    if (s == NS_OK) s = zip_begin(z, "offsets.uint64");
    uint64_t acc = 0;
    for (int64_t i = 0; s == NS_OK && i <= n; ++i) {
        if (i < n && !keep[i]) continue;
        unsigned char b[8];
        put64(b, acc);
        s = zip_data(z, b, 8);
        if (i < n) acc += x->offsets[i + 1] - x->offsets[i];
    }
    if (s == NS_OK) s = zip_end(z);
    for (int i = 0; s == NS_OK && i < x->n_entries; ++i) {
        const trx_entry *e = &x->entries[i];
        if (starts_with(e->name, "dps/")) s = copy_rows(z, x, e, t->path, keep, 0);
        else if (starts_with(e->name, "dpv/")) s = copy_rows(z, x, e, t->path, keep, 1);
    }
    if (s == NS_OK) {
        char json[1024];
        const double *a = x->affine;
        const int len = snprintf(json, sizeof json,
            "{\"VOXEL_TO_RASMM\": [[%.17g, %.17g, %.17g, %.17g], [%.17g, %.17g, %.17g, %.17g], "
            "[%.17g, %.17g, %.17g, %.17g], [%.17g, %.17g, %.17g, %.17g]], \"DIMENSIONS\": [%d, %d, %d], "
            "\"NB_STREAMLINES\": %llu, \"NB_VERTICES\": %llu}",
            a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15],
            x->dims[0], x->dims[1], x->dims[2], (unsigned long long)kept, (unsigned long long)verts);
        s = zip_begin(z, "header.json");
        if (s == NS_OK) s = zip_data(z, json, (size_t)len);
        if (s == NS_OK) s = zip_end(z);
    }
    if (s == NS_OK) s = zip_finish(z);
    free(z);
    if (s == NS_OK) s = ns_output_commit(out); /* the .trx appears only when complete */
    else ns_output_abort(out);
    if (s == NS_OK) *written = (int64_t)kept;
    return s;
}
