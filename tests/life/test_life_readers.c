/* Readers of LiFE's real inputs on tiny hand-made files written here byte by
 * byte at the formats' documented offsets: NIfTI-1 (.nii, .nii.gz, both byte
 * orders, sform / qform / pixdim affines, every datatype read, slope and
 * intercept), FSL bval/bvec (both layouts), TrackVis .trk (scalars and
 * properties skipped, voxel order, vox_to_ras) and MRtrix .tck (float32/64,
 * both byte orders), the pruned-subset writers, and every corrupt or
 * truncated variant with its status and the file name in the detail. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "neurosolve/neurosolve.h"
#include "test_tmpdir.h"


/* ------------------------------------------------------------- bytes */
static void put16(unsigned char *p, int v, int be) {
    const uint16_t u = (uint16_t)v;
    p[be ? 1 : 0] = (unsigned char)u, p[be ? 0 : 1] = (unsigned char)(u >> 8);
}
static void put32(unsigned char *p, uint32_t u, int be) {
    for (int i = 0; i < 4; ++i) p[be ? 3 - i : i] = (unsigned char)(u >> (8 * i));
}
static void putf(unsigned char *p, float f, int be) {
    uint32_t u;
    memcpy(&u, &f, 4);
    put32(p, u, be);
}
static void put_value(unsigned char *p, double v, int dt, int be) {
    unsigned char b[8];
    int n = 0;
    switch (dt) {
    case 2: b[0] = (unsigned char)v, n = 1; break;
    case 256: { int8_t x = (int8_t)v; memcpy(b, &x, 1); n = 1; } break;
    case 4: { int16_t x = (int16_t)v; memcpy(b, &x, 2); n = 2; } break;
    case 512: { uint16_t x = (uint16_t)v; memcpy(b, &x, 2); n = 2; } break;
    case 8: { int32_t x = (int32_t)v; memcpy(b, &x, 4); n = 4; } break;
    case 768: { uint32_t x = (uint32_t)v; memcpy(b, &x, 4); n = 4; } break;
    case 16: { float x = (float)v; memcpy(b, &x, 4); n = 4; } break;
    case 64: memcpy(b, &v, 8), n = 8; break;
    case 1024: { int64_t x = (int64_t)v; memcpy(b, &x, 8); n = 8; } break;
    case 1280: { uint64_t x = (uint64_t)v; memcpy(b, &x, 8); n = 8; } break;
    }
    for (int i = 0; i < n; ++i) p[i] = be ? b[n - 1 - i] : b[i];
}
static int dt_size(int dt) { return dt == 2 || dt == 256 ? 1 : dt == 4 || dt == 512 ? 2 : dt == 8 || dt == 16 || dt == 768 ? 4 : 8; }

typedef struct nii_spec {
    int dt, be, gz, ndim, dim[4];
    float slope, inter;
    int sform, qform;
    float srow[12];
    float quat[3], qoff[3], pix[4], qfac;
    const char *magic;
    int sizeof_hdr, bitpix_override;
    long truncate; /* bytes of data to drop (>0) */
} nii_spec;

/* values[i] = raw stored value for linear index i */
static void write_nii(const char *path, const nii_spec *s, const double *raw) {
    unsigned char h[352];
    memset(h, 0, sizeof h);
    put32(h, (uint32_t)(s->sizeof_hdr ? s->sizeof_hdr : 348), s->be);
    put16(h + 40, s->ndim, s->be);
    long n = 1;
    for (int i = 0; i < 7; ++i) {
        const int d = i < s->ndim ? s->dim[i] : 1;
        put16(h + 42 + 2 * i, d, s->be);
        n *= d;
    }
    put16(h + 70, s->dt, s->be);
    put16(h + 72, s->bitpix_override ? s->bitpix_override : 8 * dt_size(s->dt), s->be);
    putf(h + 76, s->qfac, s->be);
    for (int i = 0; i < 3; ++i) putf(h + 80 + 4 * i, s->pix[i], s->be);
    putf(h + 108, 352.0f, s->be);
    putf(h + 112, s->slope, s->be);
    putf(h + 116, s->inter, s->be);
    put16(h + 252, s->qform, s->be);
    put16(h + 254, s->sform, s->be);
    for (int i = 0; i < 3; ++i) putf(h + 256 + 4 * i, s->quat[i], s->be), putf(h + 268 + 4 * i, s->qoff[i], s->be);
    for (int i = 0; i < 12; ++i) putf(h + 280 + 4 * i, s->srow[i], s->be);
    memcpy(h + 344, s->magic ? s->magic : "n+1\0", 4);
    const int es = dt_size(s->dt);
    unsigned char *d = calloc((size_t)n, (size_t)es);
    for (long i = 0; i < n; ++i) put_value(d + i * es, raw[i], s->dt, s->be);
    const long bytes = n * es - s->truncate;
    if (s->gz) {
        gzFile f = gzopen(path, "wb");
        gzwrite(f, h, sizeof h);
        gzwrite(f, d, (unsigned)bytes);
        gzclose(f);
    } else {
        FILE *f = fopen(path, "wb");
        fwrite(h, 1, sizeof h, f);
        fwrite(d, 1, (size_t)bytes, f);
        fclose(f);
    }
    free(d);
}

static nii_spec base_spec(void) {
    nii_spec s;
    memset(&s, 0, sizeof s);
    s.dt = 4, s.ndim = 4, s.dim[0] = 3, s.dim[1] = 2, s.dim[2] = 2, s.dim[3] = 5;
    s.sform = 1;
    const float srow[12] = {2, 0, 0, -10, 0, 2.5f, 0, 20, 0, 0, 3, 5};
    memcpy(s.srow, srow, sizeof srow);
    s.pix[0] = 2, s.pix[1] = 2.5f, s.pix[2] = 3, s.qfac = 1;
    return s;
}

#define EXPECT_FAIL(expr, status, needle)                                                              \
    do {                                                                                               \
        ns_status s_ = (expr);                                                                         \
        CHECK_MSG(s_ == (status), "%s: got %s (%s)", #expr, ns_status_string(s_), ns_last_error());     \
        CHECK_MSG(strstr(ns_last_error(), (needle)) != NULL, "detail '%s' lacks '%s'", ns_last_error(), \
                  (needle));                                                                           \
    } while (0)

static void test_nifti(void) {
    const int n = 3 * 2 * 2 * 5;
    double raw[60];
    for (int i = 0; i < n; ++i) raw[i] = (i * 7) % 50 + 1;
    const int dts[] = {2, 256, 4, 512, 8, 768, 16, 64, 1024, 1280};
    for (size_t q = 0; q < sizeof dts / sizeof *dts; ++q)
        for (int be = 0; be < 2; ++be)
            for (int gz = 0; gz < 2; ++gz) {
                nii_spec s = base_spec();
                s.dt = dts[q], s.be = be, s.gz = gz;
                if (q % 2) s.slope = 0.5f, s.inter = -3;
                const char *p = tmp(gz ? "img.nii.gz" : "img.nii");
                write_nii(p, &s, raw);
                ns_nifti_t *img = NULL;
                CHECK_OK(ns_nifti_read(p, &img));
                if (!img) continue;
                const ns_nifti_info *in = ns_nifti_get_info(img);
                CHECK(in->datatype == dts[q] && in->ndim == 4 && in->dim[3] == 5 && in->n_values == n);
                CHECK(in->affine_source == NS_NIFTI_AFFINE_SFORM && in->affine[1][1] == 2.5 && in->affine[2][3] == 5);
                CHECK(in->big_endian == be);
                int bad = 0;
                for (int i = 0; i < n; ++i) {
                    const double want = (q % 2) ? 0.5 * raw[i] - 3 : raw[i];
                    bad += ns_nifti_value(img, i) != want;
                }
                CHECK_MSG(bad == 0, "datatype %s be %d gz %d: %d values differ", ns_nifti_datatype_name(dts[q]), be, gz, bad);
                ns_nifti_destroy(img);
            }
    /* qform: 90 degrees about z (b = c = 0, d = sin 45), qfac -1 */
    nii_spec s = base_spec();
    s.sform = 0, s.qform = 1, s.quat[2] = (float)sqrt(0.5), s.qoff[0] = 1, s.qoff[1] = 2, s.qoff[2] = 3, s.qfac = -1;
    write_nii(tmp("q.nii"), &s, raw);
    ns_nifti_t *img = NULL;
    CHECK_OK(ns_nifti_read(tmp("q.nii"), &img));
    if (img) {
        const ns_nifti_info *in = ns_nifti_get_info(img);
        /* R = [[0,-1,0],[1,0,0],[0,0,1]] times diag(2, 2.5, -3) */
        const double want[3][4] = {{0, -2.5, 0, 1}, {2, 0, 0, 2}, {0, 0, -3, 3}};
        double err = 0;
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 4; ++c) err = fmax(err, fabs(in->affine[r][c] - want[r][c]));
        CHECK_MSG(err < 1e-6 && in->affine_source == NS_NIFTI_AFFINE_QFORM, "qform affine error %g", err);
        ns_nifti_destroy(img);
    }
    s = base_spec();
    s.sform = 0;
    write_nii(tmp("p.nii"), &s, raw);
    CHECK_OK(ns_nifti_read(tmp("p.nii"), &img));
    if (img) {
        const ns_nifti_info *in = ns_nifti_get_info(img);
        CHECK(in->affine_source == NS_NIFTI_AFFINE_PIXDIM && in->affine[0][0] == 2 && in->affine[2][2] == 3 &&
              in->affine[0][3] == 0);
        ns_nifti_destroy(img);
    }
    /* corrupt */
    s = base_spec(), s.truncate = 5;
    write_nii(tmp("trunc.nii"), &s, raw);
    EXPECT_FAIL(ns_nifti_read(tmp("trunc.nii"), &img), NS_ERR_PARSE, "trunc.nii: truncated");
    { /* a header declaring 30000 x 30000 x 20 x 5 float32 values (3.6e11 bytes) over a few bytes: truncated,
       * nothing that size allocated (the fuzzer's ASan build aborted in that malloc) */
        s = base_spec();
        write_nii(tmp("huge.nii"), &s, raw);
        FILE *f = fopen(tmp("huge.nii"), "r+b");
        const unsigned char d[6] = {0x30, 0x75, 0x30, 0x75, 20, 0}; /* 30000, 30000, 20 (LE) */
        if (f) fseek(f, 42, SEEK_SET), fwrite(d, 1, sizeof d, f), fclose(f);
        EXPECT_FAIL(ns_nifti_read(tmp("huge.nii"), &img), NS_ERR_PARSE, "huge.nii: truncated");
        s = base_spec(), s.truncate = 5;
    }
    s.gz = 1;
    write_nii(tmp("trunc.nii.gz"), &s, raw);
    EXPECT_FAIL(ns_nifti_read(tmp("trunc.nii.gz"), &img), NS_ERR_PARSE, "trunc.nii.gz");
    { /* a gzip stream cut in the middle */
        s = base_spec(), s.gz = 1;
        write_nii(tmp("cut.nii.gz"), &s, raw);
        FILE *f = fopen(tmp("cut.nii.gz"), "rb");
        unsigned char buf[4096];
        const size_t len = fread(buf, 1, sizeof buf, f);
        fclose(f);
        f = fopen(tmp("cut.nii.gz"), "wb");
        fwrite(buf, 1, len / 2, f);
        fclose(f);
        ns_status st = ns_nifti_read(tmp("cut.nii.gz"), &img);
        CHECK_MSG(st == NS_ERR_PARSE && strstr(ns_last_error(), "cut.nii.gz"), "%s", ns_last_error());
        f = fopen(tmp("garbage.nii.gz"), "wb");
        buf[20] ^= 0xff, buf[21] ^= 0x5a, buf[40] ^= 0x33;
        fwrite(buf, 1, len, f);
        fclose(f);
        st = ns_nifti_read(tmp("garbage.nii.gz"), &img);
        CHECK_MSG(st != NS_OK && strstr(ns_last_error(), "garbage.nii.gz"), "%s", ns_last_error());
    }
    s = base_spec(), s.magic = "ni1\0";
    write_nii(tmp("pair.nii"), &s, raw);
    EXPECT_FAIL(ns_nifti_read(tmp("pair.nii"), &img), NS_ERR_UNSUPPORTED, ".hdr/.img");
    s = base_spec(), s.magic = "xyz\0";
    write_nii(tmp("magic.nii"), &s, raw);
    EXPECT_FAIL(ns_nifti_read(tmp("magic.nii"), &img), NS_ERR_PARSE, "magic");
    s = base_spec(), s.sizeof_hdr = 540;
    write_nii(tmp("n2.nii"), &s, raw);
    EXPECT_FAIL(ns_nifti_read(tmp("n2.nii"), &img), NS_ERR_UNSUPPORTED, "NIfTI-2");
    s = base_spec(), s.dt = 128;
    write_nii(tmp("rgb.nii"), &s, raw);
    EXPECT_FAIL(ns_nifti_read(tmp("rgb.nii"), &img), NS_ERR_UNSUPPORTED, "datatype 128");
    s = base_spec(), s.bitpix_override = 8;
    write_nii(tmp("bitpix.nii"), &s, raw);
    EXPECT_FAIL(ns_nifti_read(tmp("bitpix.nii"), &img), NS_ERR_PARSE, "bitpix");
    s = base_spec(), s.srow[0] = 0, s.srow[1] = 0, s.srow[2] = 0;
    write_nii(tmp("singular.nii"), &s, raw);
    EXPECT_FAIL(ns_nifti_read(tmp("singular.nii"), &img), NS_ERR_PARSE, "singular");
    s = base_spec(), s.dim[1] = 0;
    write_nii(tmp("dim0.nii"), &s, raw);
    EXPECT_FAIL(ns_nifti_read(tmp("dim0.nii"), &img), NS_ERR_PARSE, "dim[2] = 0");
    EXPECT_FAIL(ns_nifti_read(tmp("missing.nii"), &img), NS_ERR_IO, "missing.nii");
    FILE *f = fopen(tmp("short.nii"), "wb");
    fwrite("abc", 1, 3, f);
    fclose(f);
    EXPECT_FAIL(ns_nifti_read(tmp("short.nii"), &img), NS_ERR_PARSE, "short.nii: truncated");
    /* dims whose product overflows 64 bits (issue 18: signed overflow under
     * UBSan, a nonsense allocation size in Release): a clear size error */
    s = base_spec();
    write_nii(tmp("huge.nii"), &s, raw);
    f = fopen(tmp("huge.nii"), "r+b");
    unsigned char dims[16];
    put16(dims, 7, 0);
    for (int i = 0; i < 7; ++i) put16(dims + 2 + 2 * i, 32767, 0);
    fseek(f, 40, SEEK_SET);
    fwrite(dims, 1, sizeof dims, f);
    fclose(f);
    EXPECT_FAIL(ns_nifti_read(tmp("huge.nii"), &img), NS_ERR_SIZE, "huge.nii: dims 32767 x 32767");
    CHECK(img == NULL);
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static void test_gradients(void) {
    ns_gradients g;
    write_text(tmp("a.bval"), "0 1000 2000\n");
    write_text(tmp("a.bvec"), "0 1 0\n0 0 0.6\n0 0 0.8\n");
    CHECK_OK(ns_gradients_read(tmp("a.bval"), tmp("a.bvec"), &g));
    CHECK(g.n == 3 && g.bvals[2] == 2000 && g.bvecs[3] == 1 && g.bvecs[7] == 0.6 && g.bvecs[8] == 0.8);
    ns_gradients_free(&g);
    write_text(tmp("t.bvec"), "0 0 0\n1 0 0\n0 0.6 0.8\n"); /* n rows of 3: ambiguous for n = 3: FSL rows win */
    write_text(tmp("b4.bval"), "0\n1000\n2000\n3000\n");
    write_text(tmp("t4.bvec"), "0 0 0\n1 0 0\n0 0.6 0.8\n0 0 1\n");
    CHECK_OK(ns_gradients_read(tmp("b4.bval"), tmp("t4.bvec"), &g));
    CHECK(g.n == 4 && g.bvecs[3] == 1 && g.bvecs[7] == 0.6 && g.bvecs[11] == 1);
    ns_gradients_free(&g);
    EXPECT_FAIL(ns_gradients_read(tmp("b4.bval"), tmp("a.bvec"), &g), NS_ERR_SIZE, "a.bvec has 9 numbers");
    write_text(tmp("x.bval"), "0 1000 abc\n");
    EXPECT_FAIL(ns_gradients_read(tmp("x.bval"), tmp("a.bvec"), &g), NS_ERR_PARSE, "x.bval:1: 'abc' is not a decimal number");
    write_text(tmp("h.bval"), "0 0x3e8 2000\n"); /* the one number reader: no hex (strtod read 1000) */
    EXPECT_FAIL(ns_gradients_read(tmp("h.bval"), tmp("a.bvec"), &g), NS_ERR_PARSE, "h.bval:1: '0x3e8' is not a decimal number");
    write_text(tmp("n.bval"), "0 -5 1000\n");
    EXPECT_FAIL(ns_gradients_read(tmp("n.bval"), tmp("a.bvec"), &g), NS_ERR_PARSE, "negative");
    write_text(tmp("e.bval"), "\n\n");
    EXPECT_FAIL(ns_gradients_read(tmp("e.bval"), tmp("a.bvec"), &g), NS_ERR_EMPTY, "e.bval");
    write_text(tmp("r.bvec"), "0 1 0\n0 0\n0 0 0.8 1\n");
    EXPECT_FAIL(ns_gradients_read(tmp("a.bval"), tmp("r.bvec"), &g), NS_ERR_PARSE, "different lengths");
}

/* ------------------------------------------------------------------ trk */
typedef struct trk_spec {
    int be, n_scalars, n_props, count, version;
    float vs[3];
    int dim[3];
    float vox2ras[16];
    const char *order;
} trk_spec;

static trk_spec trk_base(void) {
    trk_spec t;
    memset(&t, 0, sizeof t);
    t.vs[0] = 2, t.vs[1] = 2, t.vs[2] = 2;
    t.dim[0] = 10, t.dim[1] = 8, t.dim[2] = 6;
    const float V[16] = {2, 0, 0, -10, 0, 2, 0, 20, 0, 0, 2, 5, 0, 0, 0, 1};
    memcpy(t.vox2ras, V, sizeof V);
    t.order = "RAS", t.version = 2, t.count = -1;
    return t;
}

/* Three streamlines of 1..3 points; point p of streamline s at voxmm
 * (s + p, 2 s, 0.5 p + 1), scalars 100 s + p, properties -s. */
static long write_trk(const char *path, const trk_spec *t, long cut) {
    unsigned char h[1000];
    memset(h, 0, sizeof h);
    memcpy(h, "TRACK", 6);
    for (int i = 0; i < 3; ++i) put16(h + 6 + 2 * i, t->dim[i], t->be), putf(h + 12 + 4 * i, t->vs[i], t->be);
    put16(h + 36, t->n_scalars, t->be);
    put16(h + 238, t->n_props, t->be);
    for (int i = 0; i < 16; ++i) putf(h + 440 + 4 * i, t->vox2ras[i], t->be);
    if (t->order) memcpy(h + 948, t->order, strlen(t->order));
    put32(h + 988, (uint32_t)(t->count >= 0 ? t->count : 3), t->be);
    put32(h + 992, (uint32_t)t->version, t->be);
    put32(h + 996, 1000, t->be);
    unsigned char buf[4096];
    long n = 0;
    memcpy(buf, h, 1000), n = 1000;
    for (int s = 0; s < 3; ++s) {
        put32(buf + n, (uint32_t)(s + 1), t->be), n += 4;
        for (int p = 0; p <= s; ++p) {
            putf(buf + n, (float)(s + p), t->be), putf(buf + n + 4, (float)(2 * s), t->be);
            putf(buf + n + 8, 0.5f * p + 1, t->be), n += 12;
            for (int k = 0; k < t->n_scalars; ++k) putf(buf + n, (float)(100 * s + p), t->be), n += 4;
        }
        for (int k = 0; k < t->n_props; ++k) putf(buf + n, (float)-s, t->be), n += 4;
    }
    FILE *f = fopen(path, "wb");
    fwrite(buf, 1, (size_t)(n - cut), f);
    fclose(f);
    return n;
}

static int read_all(const char *path, double pts[][3], int *lens, int cap) {
    ns_tracts_t *t = NULL;
    if (ns_tracts_open(path, &t) != NS_OK) return -1;
    int ns = 0, k = 0;
    for (;;) {
        const double *p;
        int64_t m;
        int end;
        if (ns_tracts_next(t, &p, &m, &end) != NS_OK) {
            ns_tracts_close(t);
            return -1;
        }
        if (end) break;
        lens[ns++] = (int)m;
        for (int64_t i = 0; i < m && k < cap; ++i, ++k) memcpy(pts[k], p + 3 * i, sizeof pts[k]);
    }
    ns_tracts_close(t);
    return ns;
}

static void test_trk(void) {
    double pts[16][3];
    int lens[8];
    for (int be = 0; be < 2; ++be)
        for (int extra = 0; extra < 2; ++extra) {
            trk_spec t = trk_base();
            t.be = be, t.n_scalars = 2 * extra, t.n_props = 3 * extra;
            write_trk(tmp("a.trk"), &t, 0);
            CHECK(read_all(tmp("a.trk"), pts, lens, 16) == 3);
            CHECK(lens[0] == 1 && lens[1] == 2 && lens[2] == 3);
            /* world = V (voxmm / 2 - 0.5) */
            double err = 0;
            for (int s = 0, k = 0; s < 3; ++s)
                for (int p = 0; p <= s; ++p, ++k) {
                    const double v[3] = {(s + p) / 2.0 - 0.5, s - 0.5, (0.5 * p + 1) / 2 - 0.5};
                    const double w[3] = {2 * v[0] - 10, 2 * v[1] + 20, 2 * v[2] + 5};
                    for (int r = 0; r < 3; ++r) err = fmax(err, fabs(pts[k][r] - w[r]));
                }
            CHECK_MSG(err < 1e-6, "trk world coordinates (be %d, extra %d): error %g", be, extra, err);
        }
    /* LPS voxel order with an RAS vox_to_ras: x and y flipped inside the grid */
    trk_spec t = trk_base();
    t.order = "LPS";
    write_trk(tmp("lps.trk"), &t, 0);
    CHECK(read_all(tmp("lps.trk"), pts, lens, 16) == 3);
    {
        const double v[3] = {9 - (1 / 2.0 - 0.5), 7 - (2 / 2.0 - 0.5), 1 / 2.0 - 0.5}; /* streamline 1, point 0 */
        const double w[3] = {2 * v[0] - 10, 2 * v[1] + 20, 2 * v[2] + 5};
        CHECK_MSG(fabs(pts[1][0] - w[0]) < 1e-6 && fabs(pts[1][1] - w[1]) < 1e-6 && fabs(pts[1][2] - w[2]) < 1e-6,
                  "LPS: (%g %g %g) vs (%g %g %g)", pts[1][0], pts[1][1], pts[1][2], w[0], w[1], w[2]);
    }
    /* subset: streamlines 0 and 2, records byte for byte, count updated */
    t = trk_base(), t.n_scalars = 1, t.n_props = 2;
    const long size = write_trk(tmp("s.trk"), &t, 0);
    const uint8_t keep[3] = {1, 0, 1};
    int64_t written = 0;
    CHECK_OK(ns_tracts_write_subset(tmp("s.trk"), tmp("sub.trk"), keep, 3, &written));
    CHECK(written == 2);
    CHECK(read_all(tmp("sub.trk"), pts, lens, 16) == 2 && lens[0] == 1 && lens[1] == 3);
    {
        FILE *f = fopen(tmp("s.trk"), "rb");
        unsigned char a[4096], b[4096];
        const size_t na = fread(a, 1, sizeof a, f);
        fclose(f);
        f = fopen(tmp("sub.trk"), "rb");
        const size_t nb = fread(b, 1, sizeof b, f);
        fclose(f);
        const size_t r0 = 4 + 1 * 16 + 8, r1 = 4 + 2 * 16 + 8, r2 = 4 + 3 * 16 + 8;
        CHECK((long)na == size && nb == 1000 + r0 + r2);
        CHECK(memcmp(a + 1000, b + 1000, r0) == 0 && memcmp(a + 1000 + r0 + r1, b + 1000 + r0, r2) == 0);
        CHECK(b[988] == 2 && memcmp(a, b, 988) == 0);
    }
    EXPECT_FAIL(ns_tracts_write_subset(tmp("s.trk"), tmp("sub2.trk"), keep, 2, &written), NS_ERR_SIZE, "streamlines the weights cover");
    /* corrupt */
    ns_tracts_t *tr = NULL;
    t = trk_base();
    write_trk(tmp("cut.trk"), &t, 6);
    CHECK(read_all(tmp("cut.trk"), pts, lens, 16) == -1);
    CHECK_MSG(strstr(ns_last_error(), "cut.trk") && strstr(ns_last_error(), "truncated"), "%s", ns_last_error());
    t.count = 5;
    write_trk(tmp("count.trk"), &t, 0);
    CHECK(read_all(tmp("count.trk"), pts, lens, 16) == -1);
    CHECK_MSG(strstr(ns_last_error(), "declares 5"), "%s", ns_last_error());
    t = trk_base(), t.count = 0; /* not recorded: read to the end */
    write_trk(tmp("nocount.trk"), &t, 0);
    CHECK(read_all(tmp("nocount.trk"), pts, lens, 16) == 3);
    t = trk_base(), t.order = "RAX";
    write_trk(tmp("order.trk"), &t, 0);
    EXPECT_FAIL(ns_tracts_open(tmp("order.trk"), &tr), NS_ERR_PARSE, "voxel_order");
    t = trk_base(), t.vs[1] = 0;
    write_trk(tmp("vs.trk"), &t, 0);
    EXPECT_FAIL(ns_tracts_open(tmp("vs.trk"), &tr), NS_ERR_PARSE, "voxel_size[1]");
    t = trk_base(), t.version = 7;
    write_trk(tmp("v.trk"), &t, 0);
    EXPECT_FAIL(ns_tracts_open(tmp("v.trk"), &tr), NS_ERR_UNSUPPORTED, "version 7");
    write_text(tmp("short.trk"), "TRACK");
    EXPECT_FAIL(ns_tracts_open(tmp("short.trk"), &tr), NS_ERR_PARSE, "short.trk: truncated");
    write_text(tmp("x.trk"), "not a trackvis file at all, but long enough? no.");
    EXPECT_FAIL(ns_tracts_open(tmp("x.trk"), &tr), NS_ERR_PARSE, "x.trk");
    EXPECT_FAIL(ns_tracts_open(tmp("x.vtk"), &tr), NS_ERR_IO, "x.vtk");
    write_text(tmp("x.vtk"), "# vtk DataFile");
    EXPECT_FAIL(ns_tracts_open(tmp("x.vtk"), &tr), NS_ERR_UNSUPPORTED, "unknown tractogram format");
    { /* a negative point count */
        t = trk_base();
        write_trk(tmp("neg.trk"), &t, 0);
        FILE *f = fopen(tmp("neg.trk"), "r+b");
        fseek(f, 1000, SEEK_SET);
        unsigned char b[4];
        put32(b, (uint32_t)-4, 0);
        fwrite(b, 1, 4, f);
        fclose(f);
        CHECK(read_all(tmp("neg.trk"), pts, lens, 16) == -1 && strstr(ns_last_error(), "negative"));
    }
}

/* ------------------------------------------------------------------ tck */
static void write_tck(const char *path, int f64, int be, const char *count, int end_marker, int mixed, int cut) {
    char head[256];
    snprintf(head, sizeof head, "mrtrix tracks\ndatatype: Float%d%s\n%s%sfile: . 128\nEND\n", f64 ? 64 : 32,
             be ? "BE" : "LE", count ? "count: " : "", count ? count : "");
    unsigned char buf[2048];
    memset(buf, 0, 128);
    memcpy(buf, head, strlen(head));
    long n = 128;
    const int es = f64 ? 8 : 4;
    for (int s = 0; s < 3; ++s) {
        for (int p = 0; p <= s; ++p)
            for (int r = 0; r < 3; ++r) {
                double v = 10 * s + p + 0.25 * r;
                if (mixed == 1 && s == 1 && r == 1) v = NAN;
                if (mixed == 2 && s == 1 && r > 0) v = r == 1 ? INFINITY : -INFINITY; /* +Inf and -Inf */
                put_value(buf + n, v, f64 ? 64 : 16, be), n += es;
            }
        if (s < 2 || end_marker >= 0)
            for (int r = 0; r < 3; ++r) put_value(buf + n, NAN, f64 ? 64 : 16, be), n += es;
    }
    if (end_marker > 0)
        for (int r = 0; r < 3; ++r) put_value(buf + n, INFINITY, f64 ? 64 : 16, be), n += es;
    FILE *f = fopen(path, "wb");
    fwrite(buf, 1, (size_t)(n - cut), f);
    fclose(f);
}

static void test_tck(void) {
    double pts[16][3];
    int lens[8];
    for (int f64 = 0; f64 < 2; ++f64)
        for (int be = 0; be < 2; ++be) {
            write_tck(tmp("a.tck"), f64, be, "3\n", 1, 0, 0);
            CHECK(read_all(tmp("a.tck"), pts, lens, 16) == 3 && lens[0] == 1 && lens[2] == 3);
            CHECK(pts[5][0] == 22 && pts[5][2] == 22.5 && pts[1][1] == 10.25);
        }
    write_tck(tmp("a.tck"), 0, 0, NULL, 1, 0, 0);
    CHECK(read_all(tmp("a.tck"), pts, lens, 16) == 3);
    const uint8_t keep[3] = {0, 1, 1};
    int64_t written = 0;
    for (int f64 = 0; f64 < 2; ++f64) {
        write_tck(tmp("s.tck"), f64, f64, "3\n", 1, 0, 0);
        CHECK_OK(ns_tracts_write_subset(tmp("s.tck"), tmp("sub.tck"), keep, 3, &written));
        CHECK(written == 2 && read_all(tmp("sub.tck"), pts, lens, 16) == 2 && lens[0] == 2 && lens[1] == 3);
        CHECK(pts[0][0] == 10 && pts[4][2] == 22.5);
        ns_tracts_t *tr = NULL;
        CHECK_OK(ns_tracts_open(tmp("sub.tck"), &tr));
        if (tr) {
            CHECK(ns_tracts_declared_count(tr) == 2);
            ns_tracts_close(tr);
        }
    }
    ns_tracts_t *tr = NULL;
    write_tck(tmp("noend.tck"), 0, 0, "3\n", 0, 0, 0);
    CHECK(read_all(tmp("noend.tck"), pts, lens, 16) == -1 && strstr(ns_last_error(), "noend.tck") &&
          strstr(ns_last_error(), "end-of-data"));
    write_tck(tmp("cut.tck"), 0, 0, "3\n", 1, 0, 17);
    CHECK(read_all(tmp("cut.tck"), pts, lens, 16) == -1 && strstr(ns_last_error(), "truncated"));
    write_tck(tmp("mixed.tck"), 0, 0, "3\n", 1, 1, 0);
    CHECK(read_all(tmp("mixed.tck"), pts, lens, 16) == -1 && strstr(ns_last_error(), "mixes"));
    write_tck(tmp("mixed.tck"), 0, 0, "3\n", 1, 2, 0); /* isinf(-Inf) may be -1: (x, +Inf, -Inf) once passed */
    CHECK(read_all(tmp("mixed.tck"), pts, lens, 16) == -1 && strstr(ns_last_error(), "mixes"));
    write_tck(tmp("count.tck"), 0, 0, "4\n", 1, 0, 0);
    CHECK(read_all(tmp("count.tck"), pts, lens, 16) == -1 && strstr(ns_last_error(), "declares 4"));
    write_text(tmp("h.tck"), "mrtrix tracks\ndatatype: Float32LE\nfile: . 60\n");
    EXPECT_FAIL(ns_tracts_open(tmp("h.tck"), &tr), NS_ERR_PARSE, "without 'END'");
    write_text(tmp("t.tck"), "mrtrix tracks\ndatatype: Int16LE\nfile: . 60\nEND\n");
    EXPECT_FAIL(ns_tracts_open(tmp("t.tck"), &tr), NS_ERR_UNSUPPORTED, "Int16LE");
    write_text(tmp("o.tck"), "mrtrix tracks\ndatatype: Float32LE\nfile: . 9000\nEND\n");
    EXPECT_FAIL(ns_tracts_open(tmp("o.tck"), &tr), NS_ERR_PARSE, "past the end");
    write_text(tmp("m.tck"), "mrtrix image\n");
    EXPECT_FAIL(ns_tracts_open(tmp("m.tck"), &tr), NS_ERR_PARSE, "not an MRtrix tractogram");
    write_text(tmp("nf.tck"), "mrtrix tracks\ndatatype: Float32LE\nEND\n");
    EXPECT_FAIL(ns_tracts_open(tmp("nf.tck"), &tr), NS_ERR_PARSE, "no 'file");
}

static void test_orientation(void) {
    const int Ls[] = {2, 3, 8, 360};
    for (size_t q = 0; q < sizeof Ls / sizeof *Ls; ++q) {
        const int L = Ls[q], n = (L - 1) * L + 1;
        int bad = 0;
        for (int a = 0; a < n; ++a) {
            double u[3];
            ns_life_atom_orientation(L, a, u);
            bad += ns_life_orientation_atom(L, u) != a;
            const double v[3] = {-u[0], -u[1], -u[2]}; /* the axis, not the direction */
            bad += ns_life_orientation_atom(L, v) != a;
        }
        CHECK_MSG(bad == 0, "L = %d: %d atoms do not round-trip", L, bad);
    }
    /* a random direction snaps to an atom within one grid step of it */
    uint64_t x = 12345;
    double worst = 0;
    for (int i = 0; i < 20000; ++i) {
        double d[3];
        for (int r = 0; r < 3; ++r) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            d[r] = (double)(x >> 11) / 9007199254740992.0 - 0.5;
        }
        double u[3];
        ns_life_atom_orientation(36, ns_life_orientation_atom(36, d), u);
        const double len = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        const double c = fabs(d[0] * u[0] + d[1] * u[1] + d[2] * u[2]) / len;
        worst = fmax(worst, acos(fmin(1.0, c)));
    }
    CHECK_MSG(worst <= 3.14159265358979 / 36 * 0.75, "snapping error %g rad", worst);
}

int main(void) {
    if (tmpdir_make("ns_life_readers")) return 1;
    test_nifti();
    test_gradients();
    test_trk();
    test_tck();
    test_orientation();
    if (tmpdir_remove()) return 1;
    return check_summary("test_life_readers");
}
