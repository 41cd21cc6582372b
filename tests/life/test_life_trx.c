/* TRX tractograms (src/life/trx.c) against an independent expectation: the
 * same 17 streamlines written by tests/data/trx/make_trx.py (numpy and
 * zipfile only) as an MRtrix .tck, read by the project's .tck reader, and as
 * TRX in every dtype and layout (float16/32/64 positions, uint32/64 offsets,
 * stored and deflated ZIP, the folder form, offsets with and without the
 * vertex count last). Then the pruned-subset writer (read back here; the
 * ZIP's structure and dps/dpv rows are checked by test_life_trx.py with
 * zipfile, and with trx-python when it is installed), and every broken
 * variant with its status and the file named in the message. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "neurosolve/neurosolve.h"
#include "test_tmpdir.h"

#ifndef NS_TRX_DATA
#error "NS_TRX_DATA (tests/data/trx) must be defined"
#endif

typedef struct lines {
    int64_t n;
    int64_t len[64];
    double *pts[64];
} lines;

static void lines_free(lines *l) {
    for (int64_t i = 0; i < l->n; ++i) free(l->pts[i]);
    memset(l, 0, sizeof *l);
}

/* Every streamline of `path`; returns the status of the first failure. */
static ns_status read_all(const char *path, lines *l, ns_tracts_format *fmt) {
    memset(l, 0, sizeof *l);
    ns_tracts_t *t = NULL;
    ns_status s = ns_tracts_open(path, &t);
    if (s != NS_OK) return s;
    if (fmt) *fmt = ns_tracts_get_format(t);
    for (int pass = 0; pass < 2 && s == NS_OK; ++pass) { /* the second pass after a rewind must agree */
        if (pass) s = ns_tracts_rewind(t);
        for (int64_t i = 0; s == NS_OK; ++i) {
            const double *p = NULL;
            int64_t m = 0;
            int end = 0;
            if ((s = ns_tracts_next(t, &p, &m, &end)) != NS_OK || end) break;
            if (i >= 64) return NS_ERR_SIZE;
            if (pass == 0) {
                l->len[i] = m;
                l->pts[i] = malloc((size_t)(3 * m + 1) * sizeof(double));
                memcpy(l->pts[i], p, (size_t)(3 * m) * sizeof(double));
                l->n = i + 1;
            } else if (i >= l->n || l->len[i] != m || memcmp(l->pts[i], p, (size_t)(3 * m) * sizeof(double))) {
                s = NS_ERR_INTERNAL;
            }
        }
    }
    ns_tracts_close(t);
    return s;
}

static int same(const lines *a, const lines *b, const uint8_t *keep) {
    int64_t j = 0;
    for (int64_t i = 0; i < a->n; ++i) {
        if (keep && !keep[i]) continue;
        if (j >= b->n || a->len[i] != b->len[j]) return 0;
        for (int64_t k = 0; k < 3 * a->len[i]; ++k)
            if (a->pts[i][k] != b->pts[j][k]) return 0;
        ++j;
    }
    return j == b->n;
}

static char *data(const char *name) {
    static char buf[4][512];
    static int k = 0;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", NS_TRX_DATA, name);
    return buf[k];
}

/* The open or the read of `path` fails with `want` and a message naming the
 * file and containing `word`. */
static void expect_failure(const char *path, ns_status want, const char *word) {
    lines l;
    const ns_status s = read_all(path, &l, NULL);
    lines_free(&l);
    const char *msg = ns_last_error();
    printf("expected failure: %s\n", msg);
    CHECK_MSG(s == want, "%s: status %s, expected %s (%s)", path, ns_status_string(s), ns_status_string(want), msg);
    CHECK_MSG(strstr(msg, path) != NULL, "%s: the message does not name the file: %s", path, msg);
    CHECK_MSG(strstr(msg, word) != NULL, "%s: the message lacks '%s': %s", path, word, msg);
}

static void truncated_copy(const char *src, const char *dst, double fraction) {
    FILE *f = fopen(src, "rb");
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    rewind(f);
    char *b = malloc((size_t)n);
    if (fread(b, 1, (size_t)n, f) != (size_t)n) fprintf(stderr, "short read of %s\n", src);
    fclose(f);
    f = fopen(dst, "wb");
    fwrite(b, 1, (size_t)(n * fraction), f);
    fclose(f);
    free(b);
}

/* argv[1], when given: a folder that keeps the subsets (test_life_trx.py
 * checks them with zipfile and trx-python); argv[2...]: TRX files that
 * trx-python wrote from the test data, read here like the others. */
/* A copy of `src` with one byte of the stored entry `entry` changed. */
static void flipped_copy(const char *src, const char *dst, const char *entry) {
    FILE *f = fopen(src, "rb");
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    rewind(f);
    unsigned char *b = malloc((size_t)n);
    if (fread(b, 1, (size_t)n, f) != (size_t)n) fprintf(stderr, "short read of %s\n", src);
    fclose(f);
    const size_t len = strlen(entry);
    for (long i = 30; i + (long)len < n; ++i) /* the local header: name at +30, extra length at +28 */
        if (memcmp(b + i, entry, len) == 0 && b[i - 30] == 'P' && b[i - 29] == 'K') {
            const long data = i + (long)len + (b[i - 2] | b[i - 1] << 8);
            b[data + 5] ^= 0x40;
            break;
        }
    f = fopen(dst, "wb");
    fwrite(b, 1, (size_t)n, f);
    fclose(f);
    free(b);
}

int main(int argc, char **argv) {
    if (tmpdir_make("ns_test_trx")) return 1;
    lines ref;
    ns_tracts_format fmt = 0;
    CHECK_OK(read_all(data("streamlines.tck"), &ref, &fmt));
    CHECK(fmt == NS_TRACTS_TCK);
    CHECK(ref.n == 17 && ref.len[3] == 30);

    const char *good[] = {"f16_u32_stored.trx", "f32_u64_deflate.trx", "f64_u64_nosentinel.trx", "f32_folder"};
    for (int g = 0; g < 4 + (argc > 2 ? argc - 2 : 0); ++g) {
        const char *path = g < 4 ? data(good[g]) : argv[g - 2];
        lines l;
        CHECK_OK(read_all(path, &l, &fmt));
        CHECK_MSG(fmt == NS_TRACTS_TRX, "%s: format %d", path, (int)fmt);
        CHECK_MSG(same(&ref, &l, NULL), "%s: streamlines differ from the .tck", path);
        lines_free(&l);
    }
    {   /* header facts */
        ns_tracts_t *t = NULL;
        CHECK_OK(ns_tracts_open(data("f32_u64_deflate.trx"), &t));
        if (t) {
            double a[16];
            ns_tracts_to_world(t, a);
            CHECK(ns_tracts_declared_count(t) == 17);
            CHECK(a[0] == 1.0 && a[3] == 0.0 && a[5] == 1.0 && a[15] == 1.0); /* positions are world coordinates */
            uint64_t done = 1, total = 0;
            ns_tracts_progress(t, &done, &total);
            CHECK(done == 0 && total == 145 * 3 * 4);
            ns_tracts_close(t);
        }
    }

    /* the pruned subset, from a zip (f16) and from the folder (f32, with dps/dpv) */
    uint8_t keep[17];
    for (int i = 0; i < 17; ++i) keep[i] = (uint8_t)(i % 3 != 1);
    int64_t kept_ref = 0;
    for (int i = 0; i < 17; ++i) kept_ref += keep[i];
    const char *src[] = {"f16_u32_stored.trx", "f32_folder"}, *dst[] = {"sub_f16.trx", "sub_f32.trx"};
    for (int k = 0; k < 2; ++k) {
        int64_t written = -1;
        char out[600];
        snprintf(out, sizeof out, "%s", argc > 1 ? argv[1] : tmp(""));
        snprintf(out + strlen(out), sizeof out - strlen(out), "/%s", dst[k]);
        CHECK_OK(ns_tracts_write_subset(data(src[k]), out, keep, 17, &written));
        CHECK(written == kept_ref);
        lines l;
        CHECK_OK(read_all(out, &l, &fmt));
        CHECK(fmt == NS_TRACTS_TRX && l.n == kept_ref);
        CHECK_MSG(same(&ref, &l, keep), "%s: the subset differs from the kept .tck streamlines", dst[k]);
        lines_free(&l);
    }
    /* a wrong keep count leaves no file */
    int64_t written = -1;
    CHECK(ns_tracts_write_subset(data("f32_folder"), tmp("none.trx"), keep, 16, &written) == NS_ERR_SIZE);
    FILE *none = fopen(tmp("none.trx"), "rb");
    CHECK(none == NULL);
    if (none) fclose(none);

    /* an output named for another format */
    CHECK(ns_tracts_write_subset(data("f32_folder"), tmp("sub.trk"), keep, 17, &written) == NS_ERR_INVALID_ARGUMENT);
    CHECK(strstr(ns_last_error(), "name it .trx") != NULL);
    CHECK(ns_tracts_write_subset(data("streamlines.tck"), tmp("sub.trx"), keep, 17, &written) == NS_ERR_INVALID_ARGUMENT);
    CHECK(strstr(ns_last_error(), "name it .tck") != NULL);

    /* broken inputs */
    expect_failure(data("bad_dtype.trx"), NS_ERR_UNSUPPORTED, "int32");
    expect_failure(data("bad_offsets.trx"), NS_ERR_PARSE, "offsets");
    expect_failure(data("bad_count.trx"), NS_ERR_PARSE, "NB_VERTICES");
    truncated_copy(data("f32_u64_deflate.trx"), tmp("cut_half.trx"), 0.5);
    expect_failure(tmp("cut_half.trx"), NS_ERR_PARSE, "truncated");
    truncated_copy(data("f64_u64_nosentinel.trx"), tmp("cut_tail.trx"), 0.995);
    expect_failure(tmp("cut_tail.trx"), NS_ERR_PARSE, "truncated");
    flipped_copy(data("f16_u32_stored.trx"), tmp("flip.trx"), "positions.3.float16");
    expect_failure(tmp("flip.trx"), NS_ERR_PARSE, "CRC-32");
    truncated_copy(data("f32_u64_deflate.trx"), tmp("empty.trx"), 0.0);
    expect_failure(tmp("empty.trx"), NS_ERR_PARSE, "truncated");

    lines_free(&ref);
    tmpdir_remove();
    return check_summary("test_life_trx");
}
