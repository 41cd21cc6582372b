/* NIfTI-1 single-file images (.nii, .nii.gz) read through zlib's gzread,
 * which reads plain files transparently. The 348-byte header is decoded
 * field by field at its documented offsets (both byte orders); the data are
 * kept in the file's datatype to bound memory (an int16 image stays 2 bytes
 * per value). Not read: NIfTI-2, Analyze and .hdr/.img pairs, complex and RGB
 * datatypes (a diffusion image never uses them). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/error.h"
#include "neurosolve/life_io.h"

struct ns_nifti {
    ns_nifti_info info;
    int elem;         /* bytes per value */
    unsigned char *data;
};

enum { HDR = 348 };
/* The most values an image may hold (8 TiB of float64): bounds every size product. */
#define NS_NIFTI_MAX_VALUES (INT64_C(1) << 40)

static int16_t rd16(const unsigned char *p, int swap) {
    uint16_t v = swap ? (uint16_t)(p[0] << 8 | p[1]) : (uint16_t)(p[1] << 8 | p[0]);
    return (int16_t)v;
}
static int32_t rd32(const unsigned char *p, int swap) {
    uint32_t v = swap ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
                      : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
    return (int32_t)v;
}
static double rdf(const unsigned char *p, int swap) {
    uint32_t v = (uint32_t)rd32(p, swap);
    float f;
    memcpy(&f, &v, 4);
    return f;
}

static int elem_size(int32_t dt) {
    switch (dt) {
    case 2: case 256: return 1;
    case 4: case 512: return 2;
    case 8: case 16: case 768: return 4;
    case 64: case 1024: case 1280: return 8;
    default: return 0;
    }
}

const char *ns_nifti_datatype_name(int32_t dt) {
    switch (dt) {
    case 2: return "uint8";
    case 4: return "int16";
    case 8: return "int32";
    case 16: return "float32";
    case 64: return "float64";
    case 256: return "int8";
    case 512: return "uint16";
    case 768: return "uint32";
    case 1024: return "int64";
    case 1280: return "uint64";
    default: return NULL;
    }
}

/* NIfTI-1's qform: quaternion (b, c, d) with a = sqrt(1 - b^2 - c^2 - d^2),
 * qfac = pixdim[0] (-1 flips the third axis), offsets qoffset_x/y/z. */
static void qform_affine(double b, double c, double d, double qfac, const double *pix,
                         const double *off, double A[4][4]) {
    double a = 1.0 - (b * b + c * c + d * d);
    if (a < 1e-7) { /* 180-degree rotation: renormalise (b, c, d) as the standard says */
        const double s = 1.0 / sqrt(b * b + c * c + d * d);
        b *= s, c *= s, d *= s, a = 0.0;
    } else {
        a = sqrt(a);
    }
    const double R[3][3] = {{a * a + b * b - c * c - d * d, 2 * (b * c - a * d), 2 * (b * d + a * c)},
                            {2 * (b * c + a * d), a * a + c * c - b * b - d * d, 2 * (c * d - a * b)},
                            {2 * (b * d - a * c), 2 * (c * d + a * b), a * a + d * d - c * c - b * b}};
    const double sx = pix[0] > 0 ? pix[0] : 1.0, sy = pix[1] > 0 ? pix[1] : 1.0,
                 sz = (pix[2] > 0 ? pix[2] : 1.0) * (qfac < 0 ? -1.0 : 1.0);
    for (int r = 0; r < 3; ++r) {
        A[r][0] = R[r][0] * sx, A[r][1] = R[r][1] * sy, A[r][2] = R[r][2] * sz, A[r][3] = off[r];
    }
}

/* Reads exactly n bytes or fails naming what was being read. */
static ns_status gz_read_all(gzFile f, const char *path, void *dst, uint64_t n, const char *what,
                             uint64_t offset) {
    unsigned char *p = dst;
    uint64_t done = 0;
    while (done < n) {
        const uint64_t left = n - done;
        const unsigned chunk = left > (1u << 30) ? (1u << 30) : (unsigned)left;
        const int got = gzread(f, p + done, chunk);
        if (got < 0) {
            int code = 0;
            const char *msg = gzerror(f, &code);
            return ns_fail(NS_ERR_PARSE, "%s: corrupt compressed data while reading the %s: %s", path,
                           what, msg ? msg : "zlib error");
        }
        if (got == 0) {
            int code = 0;
            const char *msg = gzerror(f, &code);
            if (code != Z_OK && code != Z_BUF_ERROR)
                return ns_fail(NS_ERR_PARSE, "%s: corrupt compressed data while reading the %s: %s",
                               path, what, msg);
            return ns_fail(NS_ERR_PARSE,
                           "%s: truncated: the %s needs %llu bytes from offset %llu, the file ends "
                           "after %llu",
                           path, what, (unsigned long long)n, (unsigned long long)offset,
                           (unsigned long long)done);
        }
        done += (uint64_t)got;
    }
    return NS_OK;
}

static ns_status parse_header(const char *path, const unsigned char *h, ns_nifti_info *info,
                              int64_t *vox_offset) {
    int swap = 0;
    int32_t size = rd32(h, 0);
    if (size != HDR) {
        if (rd32(h, 1) == HDR) swap = 1;
        else if (size == 540 || rd32(h, 1) == 540)
            return ns_fail(NS_ERR_UNSUPPORTED, "%s: NIfTI-2 header (sizeof_hdr 540) is not supported; "
                           "convert to NIfTI-1", path);
        else
            return ns_fail(NS_ERR_PARSE, "%s: not a NIfTI-1 file (sizeof_hdr = %d, expected 348)", path,
                           (int)size);
    }
    info->big_endian = swap; /* relative to a little-endian host (the only kind supported) */
    if (memcmp(h + 344, "n+1\0", 4) != 0) {
        if (memcmp(h + 344, "ni1\0", 4) == 0)
            return ns_fail(NS_ERR_UNSUPPORTED, "%s: a .hdr/.img pair (magic 'ni1') is not supported; "
                           "use a single-file .nii or .nii.gz", path);
        return ns_fail(NS_ERR_PARSE, "%s: bad NIfTI-1 magic (expected 'n+1'): Analyze 7.5 or corrupt",
                       path);
    }
    const int ndim = rd16(h + 40, swap);
    if (ndim < 1 || ndim > 7) return ns_fail(NS_ERR_PARSE, "%s: dim[0] = %d is not in 1..7", path, ndim);
    info->ndim = ndim;
    info->n_values = 1;
    for (int i = 0; i < 7; ++i) {
        const int d = rd16(h + 42 + 2 * i, swap);
        if (i < ndim && d < 1) return ns_fail(NS_ERR_PARSE, "%s: dim[%d] = %d must be >= 1", path, i + 1, d);
        info->dim[i] = i < ndim ? d : 1;
        info->pixdim[i] = rdf(h + 80 + 4 * i, swap);
    }
    /* The product of up to seven dims of up to 32767 overflows 64 bits:
     * multiply with a bound check before each step. */
    for (int i = 0; i < 7; ++i) {
        if (info->n_values > NS_NIFTI_MAX_VALUES / info->dim[i])
            return ns_fail(NS_ERR_SIZE,
                           "%s: dims %lld x %lld x %lld x %lld x %lld x %lld x %lld hold more than 2^40 "
                           "values: too large to read",
                           path, (long long)info->dim[0], (long long)info->dim[1], (long long)info->dim[2],
                           (long long)info->dim[3], (long long)info->dim[4], (long long)info->dim[5],
                           (long long)info->dim[6]);
        info->n_values *= info->dim[i];
    }
    info->datatype = rd16(h + 70, swap);
    const int bitpix = rd16(h + 72, swap);
    const int es = elem_size(info->datatype);
    if (!es) return ns_fail(NS_ERR_UNSUPPORTED, "%s: datatype %d is not supported (uint8, int8, int16, "
                            "uint16, int32, uint32, int64, uint64, float32, float64 are)", path,
                            (int)info->datatype);
    if (bitpix != 8 * es)
        return ns_fail(NS_ERR_PARSE, "%s: bitpix = %d does not match datatype %s (%d bits)", path, bitpix,
                       ns_nifti_datatype_name(info->datatype), 8 * es);
    const double off = rdf(h + 108, swap);
    if (!(off >= 0) || off > 1e15) return ns_fail(NS_ERR_PARSE, "%s: vox_offset = %g is invalid", path, off);
    *vox_offset = off < HDR + 4 ? HDR + 4 : (int64_t)off; /* 0 in some writers means 352 */
    const double slope = rdf(h + 112, swap), inter = rdf(h + 116, swap);
    if (isinf(slope) || isinf(inter))
        return ns_fail(NS_ERR_NOT_FINITE, "%s: scl_slope = %g, scl_inter = %g are not finite", path, slope,
                       inter);
    /* The standard: slope 0 (or NaN) means the data are not scaled. */
    if (slope != 0 && !isnan(slope)) info->slope = slope, info->intercept = isnan(inter) ? 0.0 : inter;
    else info->slope = 1.0, info->intercept = 0.0;

    const int qcode = rd16(h + 252, swap), scode = rd16(h + 254, swap);
    memset(info->affine, 0, sizeof info->affine);
    info->affine[3][3] = 1.0;
    if (scode > 0) {
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 4; ++c) info->affine[r][c] = rdf(h + 280 + 16 * r + 4 * c, swap);
        info->affine_source = NS_NIFTI_AFFINE_SFORM;
    } else if (qcode > 0) {
        const double offs[3] = {rdf(h + 268, swap), rdf(h + 272, swap), rdf(h + 276, swap)};
        const double qfac = rdf(h + 76, swap); /* pixdim[0]: -1 flips k; 0 is read as 1 */
        qform_affine(rdf(h + 256, swap), rdf(h + 260, swap), rdf(h + 264, swap), qfac == 0 ? 1.0 : qfac,
                     info->pixdim, offs, info->affine);
        info->affine_source = NS_NIFTI_AFFINE_QFORM;
    } else {
        for (int r = 0; r < 3; ++r) info->affine[r][r] = info->pixdim[r] > 0 ? info->pixdim[r] : 1.0;
        info->affine_source = NS_NIFTI_AFFINE_PIXDIM;
    }
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 4; ++c)
            if (!isfinite(info->affine[r][c]))
                return ns_fail(NS_ERR_NOT_FINITE, "%s: affine entry [%d][%d] = %g is not finite", path, r, c,
                               info->affine[r][c]);
    double (*A)[4] = info->affine;
    const double det = A[0][0] * (A[1][1] * A[2][2] - A[1][2] * A[2][1]) -
                       A[0][1] * (A[1][0] * A[2][2] - A[1][2] * A[2][0]) +
                       A[0][2] * (A[1][0] * A[2][1] - A[1][1] * A[2][0]);
    if (fabs(det) < 1e-12)
        return ns_fail(NS_ERR_PARSE, "%s: the voxel-to-world affine (%s) is singular", path,
                       scode > 0 ? "sform" : qcode > 0 ? "qform" : "pixdim");
    return NS_OK;
}

enum { DATA_CHUNK = 64 << 20 }; /* first image-data buffer [bytes] */

static void swap_bytes(unsigned char *p, int64_t n, int es) {
    for (int64_t i = 0; i < n; ++i, p += es)
        for (int a = 0, b = es - 1; a < b; ++a, --b) {
            const unsigned char t = p[a];
            p[a] = p[b], p[b] = t;
        }
}

ns_status ns_nifti_read(const char *path, ns_nifti_t **out) {
    if (!path || !out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_nifti_read: NULL argument");
    *out = NULL;
    gzFile f = gzopen(path, "rb");
    if (!f) return ns_fail(NS_ERR_IO, "%s: cannot open", path);
    gzbuffer(f, 1 << 20);
    unsigned char h[HDR];
    ns_nifti_t *img = calloc(1, sizeof *img);
    ns_status s = img ? gz_read_all(f, path, h, HDR, "header", 0) : ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", path);
    int64_t off = 0;
    if (s == NS_OK) s = parse_header(path, h, &img->info, &off);
    if (s == NS_OK) {
        img->elem = elem_size(img->info.datatype);
        /* skip extensions up to vox_offset */
        unsigned char skip[4096];
        for (int64_t at = HDR; s == NS_OK && at < off;) {
            const int64_t n = off - at < (int64_t)sizeof skip ? off - at : (int64_t)sizeof skip;
            s = gz_read_all(f, path, skip, (uint64_t)n, "header extensions", (uint64_t)at);
            at += n;
        }
    }
    if (s == NS_OK) {
        /* The buffer grows with the data read (doubling from 64 MiB), so a header that declares
         * more than the file holds fails as truncated instead of allocating what it declares. */
        const uint64_t bytes = (uint64_t)img->info.n_values * (uint64_t)img->elem;
        uint64_t cap = bytes < DATA_CHUNK ? bytes : DATA_CHUNK, got = 0;
        if (!(img->data = malloc(cap ? cap : 1)))
            s = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: %llu bytes of image data", path, (unsigned long long)cap);
        while (s == NS_OK && got < bytes) {
            if (got == cap) {
                const uint64_t grown = bytes - cap < cap ? bytes : 2 * cap;
                void *p = realloc(img->data, grown);
                if (!p) {
                    s = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: %llu bytes of image data", path, (unsigned long long)grown);
                    break;
                }
                img->data = p, cap = grown;
            }
            s = gz_read_all(f, path, (unsigned char *)img->data + got, cap - got, "image data", (uint64_t)off + got);
            got = cap;
        }
        if (s == NS_OK && img->info.big_endian) swap_bytes(img->data, img->info.n_values, img->elem);
    }
    gzclose(f);
    if (s != NS_OK) {
        ns_nifti_destroy(img);
        return s;
    }
    *out = img;
    return NS_OK;
}

void ns_nifti_destroy(ns_nifti_t *img) {
    if (!img) return;
    free(img->data);
    free(img);
}

const ns_nifti_info *ns_nifti_get_info(const ns_nifti_t *img) { return img ? &img->info : NULL; }

double ns_nifti_value(const ns_nifti_t *img, int64_t i) {
    const unsigned char *p = img->data + i * img->elem;
    double v = 0;
    switch (img->info.datatype) {
    case 2: v = *p; break;
    case 256: v = (int8_t)*p; break;
    case 4: { int16_t x; memcpy(&x, p, 2); v = x; } break;
    case 512: { uint16_t x; memcpy(&x, p, 2); v = x; } break;
    case 8: { int32_t x; memcpy(&x, p, 4); v = x; } break;
    case 768: { uint32_t x; memcpy(&x, p, 4); v = x; } break;
    case 16: { float x; memcpy(&x, p, 4); v = x; } break;
    case 64: memcpy(&v, p, 8); break;
    case 1024: { int64_t x; memcpy(&x, p, 8); v = (double)x; } break;
    case 1280: { uint64_t x; memcpy(&x, p, 8); v = (double)x; } break;
    default: break;
    }
    return img->info.slope * v + img->info.intercept;
}

/* ------------------------------------------------------------------ writer */

static void wr16(unsigned char *b, int off, int v) {
    b[off] = (unsigned char)(v & 0xff);
    b[off + 1] = (unsigned char)((v >> 8) & 0xff);
}
static void wr32(unsigned char *b, int off, uint32_t v) {
    for (int i = 0; i < 4; ++i) b[off + i] = (unsigned char)((v >> (8 * i)) & 0xff);
}
static uint32_t float_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

ns_status ns_nifti_write(const char *path, const int64_t dim[4], int32_t datatype, const double affine[4][4],
                         const void *data) {
    if (!path || !dim || !affine || !data) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_nifti_write: NULL argument");
    if (datatype != 16 && datatype != 4)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: ns_nifti_write writes float32 (16) or int16 (4), not datatype %d",
                       path, (int)datatype);
    int64_t count = 1;
    for (int i = 0; i < 4; ++i) {
        if (dim[i] < 1 || dim[i] > 32767)
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: axis %d has size %lld: NIfTI-1 sizes are 1..32767", path, i + 1,
                           (long long)dim[i]);
        count *= dim[i];
    }
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 4; ++c)
            if (!isfinite(affine[r][c])) return ns_fail(NS_ERR_NOT_FINITE, "%s: affine[%d][%d] is not finite", path, r, c);
    unsigned char h[352];
    memset(h, 0, sizeof h);
    wr32(h, 0, 348);
    const int dims[8] = {dim[3] > 1 ? 4 : 3, (int)dim[0], (int)dim[1], (int)dim[2], (int)dim[3], 1, 1, 1};
    for (int i = 0; i < 8; ++i) wr16(h, 40 + 2 * i, dims[i]);
    const int elem = datatype == 16 ? 4 : 2;
    wr16(h, 70, datatype);
    wr16(h, 72, 8 * elem); /* bitpix */
    float pix[8] = {1, 1, 1, 1, 1, 1, 1, 1}; /* qfac, the voxel sizes (column norms of the affine) */
    for (int c = 0; c < 3; ++c)
        pix[1 + c] = (float)sqrt(affine[0][c] * affine[0][c] + affine[1][c] * affine[1][c] + affine[2][c] * affine[2][c]);
    for (int i = 0; i < 8; ++i) wr32(h, 76 + 4 * i, float_bits(pix[i]));
    wr32(h, 108, float_bits(352.0f)); /* vox_offset */
    wr32(h, 112, float_bits(1.0f));   /* scl_slope */
    wr16(h, 254, 2);                  /* sform_code: aligned */
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 4; ++c) wr32(h, 280 + 4 * (4 * r + c), float_bits((float)affine[r][c]));
    memcpy(h + 344, "n+1", 4);
    const size_t n = strlen(path);
    const int gz = n > 3 && strcmp(path + n - 3, ".gz") == 0;
    /* gzopen's "T" mode writes the bytes as they are: one code path for both */
    gzFile f = gzopen(path, gz ? "wb6" : "wbT");
    if (!f) return ns_fail(NS_ERR_IO, "%s: cannot create", path);
    int ok = gzwrite(f, h, sizeof h) == (int)sizeof h;
    unsigned char buf[8192];
    for (int64_t i = 0; ok && i < count;) {
        int64_t m = 0;
        if (datatype == 16)
            for (const float *d = data; m < 2048 && i < count; ++m, ++i) wr32(buf, (int)(4 * m), float_bits(d[i]));
        else
            for (const int16_t *d = data; m < 4096 && i < count; ++m, ++i) wr16(buf, (int)(2 * m), d[i]);
        ok = gzwrite(f, buf, (unsigned)(m * elem)) == (int)(m * elem);
    }
    if (gzclose(f) != Z_OK) ok = 0;
    return ok ? NS_OK : ns_fail(NS_ERR_IO, "%s: write failed", path);
}
