/* A LiFE fit's resumable state (include/neurosolve/life.h, docs/life.md "Interrupted fits").
 *
 * SBBNNLS at the top of an iteration depends on the iterate x, the lagged gradient oldg, the
 * iteration count, the objective history (the objective stopping tests) and the projected
 * gradient at the start (the relative gradient test); the gradient g is grad(x), recomputed on
 * resume with the same products, so a resumed fit repeats the uninterrupted one's arithmetic.
 *
 * File layout (native little-endian; the byte-order word refuses others):
 *
 *   header, 64 bytes
 *     char[8] magic "NSLIFEST"   u32 version (1)   u32 byte order 0x01020304
 *     u64 header bytes (64)      u64 payload bytes u64 checksum (FNV-1a 64 of the payload)
 *     u64 fingerprint            i32 fibers        i32 updates
 *   payload
 *     f64 projected gradient at the start
 *     f64 x[fibers]   f64 oldg[fibers]   f64 history[updates]
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/hash.h"
#include "life/life_impl.h"
#include "neurosolve/output.h"

#define FS_MAGIC "NSLIFEST"
#define FS_VERSION 1u
#define FS_ORDER 0x01020304u
#define FS_HEADER 64
/* The CLI's --iters cap; a state announcing more updates is not one we wrote. */
#define FS_MAX_UPDATES 100000000

ns_status ns_life_fit_state_create(ns_life_fit_state_t **out) {
    if (!out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_fit_state_create: NULL argument");
    *out = calloc(1, sizeof **out);
    if (!*out) return ns_fail(NS_ERR_OUT_OF_MEMORY, "LiFE fit state");
    (*out)->updates = -1;
    return NS_OK;
}

void ns_life_fit_state_destroy(ns_life_fit_state_t *s) {
    if (!s) return;
    free(s->x);
    free(s->oldg);
    free(s->history);
    free(s);
}

int32_t ns_life_fit_state_updates(const ns_life_fit_state_t *s) { return s ? s->updates : -1; }

ns_status life_fit_state_reserve(ns_life_fit_state_t *s, int32_t n_fibers, int32_t updates) {
    double *x = realloc(s->x, (size_t)n_fibers * sizeof *x);
    if (x) s->x = x;
    double *g = x ? realloc(s->oldg, (size_t)n_fibers * sizeof *g) : NULL;
    if (g) s->oldg = g;
    double *h = g ? realloc(s->history, (size_t)(updates > 0 ? updates : 1) * sizeof *h) : NULL;
    if (h) s->history = h;
    if (!h) return ns_fail(NS_ERR_OUT_OF_MEMORY, "LiFE fit state: %d fibers, %d updates", (int)n_fibers, (int)updates);
    s->n_fibers = n_fibers;
    return NS_OK;
}

static void put_u32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }
static void put_u64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }

static void encode_header(unsigned char *hb, const ns_life_fit_state_t *s, uint64_t payload, uint64_t checksum) {
    memset(hb, 0, FS_HEADER);
    memcpy(hb, FS_MAGIC, 8);
    put_u32(hb + 8, FS_VERSION);
    put_u32(hb + 12, FS_ORDER);
    put_u64(hb + 16, FS_HEADER);
    put_u64(hb + 24, payload);
    put_u64(hb + 32, checksum);
    put_u64(hb + 40, s->fingerprint);
    memcpy(hb + 48, &s->n_fibers, 4);
    memcpy(hb + 52, &s->updates, 4);
}

ns_status ns_life_fit_state_save(const ns_life_fit_state_t *s, const char *path) {
    if (!s || !path) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_fit_state_save: NULL argument");
    if (s->updates < 0)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "LiFE fit state %s: empty (no fit has stopped with this state)", path);
    const size_t nf = (size_t)s->n_fibers, nu = (size_t)s->updates;
    uint64_t h = NS_FNV_OFFSET;
    h = ns_fnv1a(h, &s->pg_start, sizeof s->pg_start);
    h = ns_fnv1a(h, s->x, nf * sizeof *s->x);
    h = ns_fnv1a(h, s->oldg, nf * sizeof *s->oldg);
    h = ns_fnv1a(h, s->history, nu * sizeof *s->history);
    unsigned char hb[FS_HEADER];
    encode_header(hb, s, (1 + 2 * nf + nu) * sizeof(double), h);
    ns_output *o = NULL;
    ns_status st = ns_output_open(path, &o);
    if (st != NS_OK) return st;
    FILE *f = ns_output_stream(o);
    fwrite(hb, 1, FS_HEADER, f);
    fwrite(&s->pg_start, sizeof s->pg_start, 1, f);
    fwrite(s->x, sizeof *s->x, nf, f);
    fwrite(s->oldg, sizeof *s->oldg, nf, f);
    if (nu) fwrite(s->history, sizeof *s->history, nu, f);
    return ns_output_commit(o); /* checks the stream's errors; removes the temporary on failure */
}

static ns_status bad(const char *path, const char *what) {
    return ns_fail(NS_ERR_PARSE, "LiFE fit state %s: %s", path, what);
}

/* Reads n doubles, folding them into the checksum. */
static ns_status read_f64(FILE *f, const char *path, double *v, size_t n, uint64_t *h) {
    if (n && fread(v, sizeof *v, n, f) != n)
        return ferror(f) ? ns_fail(NS_ERR_IO, "LiFE fit state %s: read failed: %s", path, strerror(errno))
                         : bad(path, "the data end before the sizes its header announces");
    *h = ns_fnv1a(*h, v, n * sizeof *v);
    return NS_OK;
}

static ns_status check_values(const ns_life_fit_state_t *s, const char *path) {
    if (!(isfinite(s->pg_start) && s->pg_start >= 0))
        return ns_fail(NS_ERR_PARSE, "LiFE fit state %s: the starting projected gradient is %g (finite and >= 0)",
                       path, s->pg_start);
    for (int32_t i = 0; i < s->n_fibers; ++i) {
        if (!(isfinite(s->x[i]) && s->x[i] >= 0))
            return ns_fail(NS_ERR_PARSE, "LiFE fit state %s: weight %d is %g (finite and >= 0)", path, (int)i, s->x[i]);
        if (!isfinite(s->oldg[i]))
            return ns_fail(NS_ERR_PARSE, "LiFE fit state %s: gradient entry %d is %g (not finite)", path, (int)i,
                           s->oldg[i]);
    }
    for (int32_t i = 0; i < s->updates; ++i)
        if (!(isfinite(s->history[i]) && s->history[i] >= 0))
            return ns_fail(NS_ERR_PARSE, "LiFE fit state %s: objective after update %d is %g (finite and >= 0)",
                           path, (int)i + 1, s->history[i]);
    return NS_OK;
}

ns_status ns_life_fit_state_load(const char *path, ns_life_fit_state_t **out) {
    if (!path || !out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_fit_state_load: NULL argument");
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return ns_fail(NS_ERR_IO, "LiFE fit state %s: cannot open: %s", path, strerror(errno));
    unsigned char hb[FS_HEADER];
    ns_life_fit_state_t *s = NULL;
    ns_status st = NS_OK;
    uint32_t version = 0, order = 0;
    uint64_t header = 0, payload = 0, checksum = 0;
    int64_t file_bytes = -1;
    if (fread(hb, 1, FS_HEADER, f) != FS_HEADER || memcmp(hb, FS_MAGIC, 8) != 0) {
        st = bad(path, "not a LiFE fit state (no NSLIFEST header)");
        goto done;
    }
    memcpy(&version, hb + 8, 4);
    memcpy(&order, hb + 12, 4);
    memcpy(&header, hb + 16, 8);
    memcpy(&payload, hb + 24, 8);
    memcpy(&checksum, hb + 32, 8);
    if (order != FS_ORDER) {
        st = bad(path, "written on a machine of another byte order");
        goto done;
    }
    if (version != FS_VERSION) {
        st = ns_fail(NS_ERR_PARSE, "LiFE fit state %s: version %u (this build reads %u)", path, (unsigned)version,
                     FS_VERSION);
        goto done;
    }
    if ((st = ns_life_fit_state_create(&s)) != NS_OK) goto done;
    memcpy(&s->fingerprint, hb + 40, 8);
    memcpy(&s->n_fibers, hb + 48, 4);
    memcpy(&s->updates, hb + 52, 4);
    if (header != FS_HEADER || s->n_fibers < 1 || s->updates < 0 || s->updates > FS_MAX_UPDATES) {
        st = ns_fail(NS_ERR_PARSE, "LiFE fit state %s: header of %llu bytes, %d fibers, %d updates (64 bytes, >= 1 "
                     "fiber, 0 to %d updates)", path, (unsigned long long)header, (int)s->n_fibers, (int)s->updates,
                     FS_MAX_UPDATES);
        goto done;
    }
    const uint64_t expect = (1 + 2 * (uint64_t)s->n_fibers + (uint64_t)s->updates) * sizeof(double);
    if (fseek(f, 0, SEEK_END) == 0) file_bytes = ftell(f);
    if (payload != expect || file_bytes < 0 || (uint64_t)file_bytes != FS_HEADER + expect ||
        fseek(f, FS_HEADER, SEEK_SET) != 0) {
        st = ns_fail(NS_ERR_PARSE, "LiFE fit state %s: %lld bytes, its header announces %llu of data and its sizes "
                     "(%d fibers, %d updates) need %llu", path, (long long)file_bytes, (unsigned long long)payload,
                     (int)s->n_fibers, (int)s->updates, (unsigned long long)expect);
        goto done;
    }
    const int32_t updates = s->updates; /* reserve keeps the counts */
    if ((st = life_fit_state_reserve(s, s->n_fibers, updates)) != NS_OK) goto done;
    uint64_t h = NS_FNV_OFFSET;
    if ((st = read_f64(f, path, &s->pg_start, 1, &h)) != NS_OK ||
        (st = read_f64(f, path, s->x, (size_t)s->n_fibers, &h)) != NS_OK ||
        (st = read_f64(f, path, s->oldg, (size_t)s->n_fibers, &h)) != NS_OK ||
        (st = read_f64(f, path, s->history, (size_t)updates, &h)) != NS_OK)
        goto done;
    if (h != checksum) {
        st = bad(path, "checksum mismatch (the file is damaged or was edited)");
        goto done;
    }
    st = check_values(s, path); /* a valid checksum says nothing about the values */
done:
    fclose(f);
    if (st != NS_OK) {
        ns_life_fit_state_destroy(s);
        return st;
    }
    *out = s;
    return NS_OK;
}
