/* A LiFE fit's resumable state (include/neurosolve/life.h, docs/life.md "Interrupted fits").
 *
 * SBBNNLS at the top of an iteration depends on the iterate x, the lagged gradient oldg, the
 * iteration count, the objective history (the objective stopping tests) and the projected
 * gradient at the start (the relative gradient test); the gradient g is grad(x), recomputed on
 * resume with the same products, so a resumed fit repeats the uninterrupted one's arithmetic.
 * The group fit (FISTA, group.c) depends on x, the extrapolated point y, M x and M y (M y is
 * a combination of earlier products, not a product of its own, so it is kept, not recomputed),
 * the momentum t, the step bound L (backtracking only raises it), the objective F and the same
 * history and starting gradient.
 *
 * File layout (native little-endian; the byte-order word refuses others):
 *
 *   header, 72 bytes
 *     char[8] magic "NSLIFEST"   u32 version (2)   u32 byte order 0x01020304
 *     u64 header bytes (72)      u64 payload bytes u64 checksum (FNV-1a 64 of the payload)
 *     u64 fingerprint            i32 fibers        i32 updates
 *     u32 solver (0 SBBNNLS, 1 group fit)   u32 0   i64 values (group: n_theta x n_voxels; else 0)
 *   payload
 *     SBBNNLS: f64 projected gradient at the start
 *              f64 x[fibers]   f64 oldg[fibers]   f64 history[updates]
 *     group:   f64 projected gradient at the start, t, L, F
 *              f64 x[fibers]   f64 y[fibers]      f64 history[updates]   f64 Mx[values]   f64 My[values]
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
#define FS_VERSION 2u
#define FS_ORDER 0x01020304u
#define FS_HEADER 72
/* The CLI's --iters cap; a state announcing more updates is not one we wrote. */
#define FS_MAX_UPDATES 100000000
/* 2^40 signal values (8 TiB a vector): beyond any model, and no overflow in the sizes below. */
#define FS_MAX_VALUES (INT64_C(1) << 40)

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
    free(s->Mx);
    free(s->My);
    free(s);
}

int32_t ns_life_fit_state_updates(const ns_life_fit_state_t *s) { return s ? s->updates : -1; }

static int grow(double **p, size_t n) {
    double *q = realloc(*p, (n ? n : 1) * sizeof *q);
    if (q) *p = q;
    return q != NULL;
}

ns_status life_fit_state_reserve(ns_life_fit_state_t *s, int32_t n_fibers, int32_t updates, int64_t n_values) {
    const size_t nf = (size_t)n_fibers, nv = (size_t)n_values;
    if (!grow(&s->x, nf) || !grow(&s->oldg, nf) || !grow(&s->history, (size_t)(updates > 0 ? updates : 1)) ||
        (nv && (!grow(&s->Mx, nv) || !grow(&s->My, nv))))
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "LiFE fit state: %d fibers, %d updates, %lld signal values",
                       (int)n_fibers, (int)updates, (long long)n_values);
    s->n_fibers = n_fibers;
    s->n_values = n_values;
    return NS_OK;
}

/* The payload in file order: scalars, then arrays. */
typedef struct part {
    double *p;
    size_t n;
} part;

static int parts(ns_life_fit_state_t *s, part out[9]) {
    const size_t nf = (size_t)s->n_fibers, nu = (size_t)(s->updates > 0 ? s->updates : 0), nv = (size_t)s->n_values;
    if (s->solver == LIFE_STATE_GROUP) {
        const part g[] = {{&s->pg_start, 1}, {&s->t, 1},           {&s->L, 1},     {&s->F, 1},    {s->x, nf},
                          {s->oldg, nf},     {s->history, nu},     {s->Mx, nv},    {s->My, nv}};
        memcpy(out, g, sizeof g);
        return 9;
    }
    const part b[] = {{&s->pg_start, 1}, {s->x, nf}, {s->oldg, nf}, {s->history, nu}};
    memcpy(out, b, sizeof b);
    return 4;
}

/* The payload's bytes for these sizes (each bounded by the load's checks: no overflow). */
static uint64_t payload_bytes(uint32_t solver, int32_t n_fibers, int32_t updates, int64_t n_values) {
    const uint64_t nf = (uint64_t)n_fibers, nu = (uint64_t)updates, nv = (uint64_t)n_values;
    return (solver == LIFE_STATE_GROUP ? 4 + 2 * nf + nu + 2 * nv : 1 + 2 * nf + nu) * sizeof(double);
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
    put_u32(hb + 56, s->solver);
    memcpy(hb + 64, &s->n_values, 8);
}

ns_status ns_life_fit_state_save(const ns_life_fit_state_t *s, const char *path) {
    if (!s || !path) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_fit_state_save: NULL argument");
    if (s->updates < 0)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "LiFE fit state %s: empty (no fit has stopped with this state)", path);
    part p[9];
    const int np = parts((ns_life_fit_state_t *)s, p); /* read only */
    uint64_t h = NS_FNV_OFFSET;
    for (int k = 0; k < np; ++k) h = ns_fnv1a(h, p[k].p, p[k].n * sizeof(double));
    unsigned char hb[FS_HEADER];
    encode_header(hb, s, payload_bytes(s->solver, s->n_fibers, s->updates, s->n_values), h);
    ns_output *o = NULL;
    ns_status st = ns_output_open(path, &o);
    if (st != NS_OK) return st;
    FILE *f = ns_output_stream(o);
    fwrite(hb, 1, FS_HEADER, f);
    for (int k = 0; k < np; ++k)
        if (p[k].n) fwrite(p[k].p, sizeof(double), p[k].n, f);
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

/* The first entry of v[n] that is not finite (or, with nonneg, below 0); -1: none. */
static int64_t first_bad(const double *v, int64_t n, int nonneg) {
    for (int64_t i = 0; i < n; ++i)
        if (!isfinite(v[i]) || (nonneg && v[i] < 0)) return i;
    return -1;
}

static ns_status check_values(const ns_life_fit_state_t *s, const char *path) {
    const int group = s->solver == LIFE_STATE_GROUP;
    const struct {
        const char *what;
        const double *v;
        int64_t n;  /* 0: not in this solver's state */
        int scalar; /* named without an index */
        int nonneg;
        int base;   /* added to the index in the message */
    } arrays[] = {
        {"the starting projected gradient", &s->pg_start, 1, 1, 1, 0},
        {"weight", s->x, s->n_fibers, 0, 1, 0},
        {group ? "extrapolated weight" : "gradient entry", s->oldg, s->n_fibers, 0, 0, 0},
        {"objective after update", s->history, s->updates, 0, 1, 1},
        {"the momentum t", &s->t, group, 1, 1, 0},
        {"the step bound L", &s->L, group, 1, 1, 0},
        {"the objective F", &s->F, group, 1, 1, 0},
        {"M x entry", s->Mx, group ? s->n_values : 0, 0, 0, 0},
        {"M y entry", s->My, group ? s->n_values : 0, 0, 0, 0},
    };
    for (size_t k = 0; k < sizeof arrays / sizeof *arrays; ++k) {
        const int64_t i = first_bad(arrays[k].v, arrays[k].n, arrays[k].nonneg);
        if (i < 0) continue;
        const char *need = arrays[k].nonneg ? "finite and >= 0" : "not finite";
        if (arrays[k].scalar)
            return ns_fail(NS_ERR_PARSE, "LiFE fit state %s: %s is %g (%s)", path, arrays[k].what, arrays[k].v[0], need);
        return ns_fail(NS_ERR_PARSE, "LiFE fit state %s: %s %lld is %g (%s)", path, arrays[k].what,
                       (long long)(i + arrays[k].base), arrays[k].v[i], need);
    }
    if (group && !(s->t >= 1.0 && s->L > 0.0))
        return ns_fail(NS_ERR_PARSE, "LiFE fit state %s: the momentum t = %g (>= 1) and step bound L = %g (> 0)", path,
                       s->t, s->L);
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
    uint32_t version = 0, order = 0, zero = 0;
    uint64_t header = 0, payload = 0, checksum = 0;
    int64_t file_bytes = -1;
    /* the version sits before anything whose layout it decides */
    if (fread(hb, 1, 16, f) != 16 || memcmp(hb, FS_MAGIC, 8) != 0) {
        st = bad(path, "not a LiFE fit state (no NSLIFEST header)");
        goto done;
    }
    memcpy(&version, hb + 8, 4);
    memcpy(&order, hb + 12, 4);
    if (order != FS_ORDER) {
        st = bad(path, "written on a machine of another byte order");
        goto done;
    }
    if (version != FS_VERSION) {
        st = ns_fail(NS_ERR_PARSE, "LiFE fit state %s: version %u (this build reads %u)", path, (unsigned)version,
                     FS_VERSION);
        goto done;
    }
    if (fread(hb + 16, 1, FS_HEADER - 16, f) != FS_HEADER - 16) {
        st = bad(path, "the file ends inside its header");
        goto done;
    }
    memcpy(&header, hb + 16, 8);
    memcpy(&payload, hb + 24, 8);
    memcpy(&checksum, hb + 32, 8);
    if ((st = ns_life_fit_state_create(&s)) != NS_OK) goto done;
    memcpy(&s->fingerprint, hb + 40, 8);
    memcpy(&s->n_fibers, hb + 48, 4);
    memcpy(&s->updates, hb + 52, 4);
    memcpy(&s->solver, hb + 56, 4);
    memcpy(&zero, hb + 60, 4);
    memcpy(&s->n_values, hb + 64, 8);
    const int group = s->solver == LIFE_STATE_GROUP;
    if (header != FS_HEADER || s->n_fibers < 1 || s->updates < 0 || s->updates > FS_MAX_UPDATES ||
        s->solver > LIFE_STATE_GROUP || zero != 0 ||
        (group ? !(s->n_values >= 1 && s->n_values <= FS_MAX_VALUES) : s->n_values != 0)) {
        st = ns_fail(NS_ERR_PARSE, "LiFE fit state %s: header of %llu bytes, %d fibers, %d updates, solver %u, %lld "
                     "signal values (%d bytes, >= 1 fiber, 0 to %d updates, solver 0 (SBBNNLS) with 0 values or 1 "
                     "(group fit) with 1 to 2^40)", path, (unsigned long long)header, (int)s->n_fibers,
                     (int)s->updates, (unsigned)s->solver, (long long)s->n_values, FS_HEADER, FS_MAX_UPDATES);
        goto done;
    }
    const uint64_t expect = payload_bytes(s->solver, s->n_fibers, s->updates, s->n_values);
    if (fseek(f, 0, SEEK_END) == 0) file_bytes = ftell(f);
    if (payload != expect || file_bytes < 0 || (uint64_t)file_bytes != FS_HEADER + expect ||
        fseek(f, FS_HEADER, SEEK_SET) != 0) {
        st = ns_fail(NS_ERR_PARSE, "LiFE fit state %s: %lld bytes, its header announces %llu of data and its sizes "
                     "(%d fibers, %d updates, %lld signal values) need %llu", path, (long long)file_bytes,
                     (unsigned long long)payload, (int)s->n_fibers, (int)s->updates, (long long)s->n_values,
                     (unsigned long long)expect);
        goto done;
    }
    if ((st = life_fit_state_reserve(s, s->n_fibers, s->updates, s->n_values)) != NS_OK) goto done;
    part p[9];
    const int np = parts(s, p);
    uint64_t h = NS_FNV_OFFSET;
    for (int k = 0; k < np; ++k)
        if ((st = read_f64(f, path, p[k].p, p[k].n, &h)) != NS_OK) goto done;
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
