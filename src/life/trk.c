/* TrackVis .trk: a 1000-byte header, then per streamline an int32 point
 * count m, m x (3 + n_scalars) float32 and n_properties float32. Points are
 * in "voxmm" coordinates: millimetres from the corner of the first voxel of
 * the grid the header describes (dim, voxel_size, voxel_order), which
 * vox_to_ras (version 2) places in RAS+ world space. The conversion to world
 * coordinates follows nibabel (docs/life_data.md):
 *   world = vox_to_ras . reorient(voxel_order -> vox_to_ras axes) . (voxmm / voxel_size - 0.5)
 * Header offsets [bytes]: id_string 0, dim 6, voxel_size 12, n_scalars 36,
 * n_properties 238, vox_to_ras 440, voxel_order 948, n_count 988,
 * version 992, hdr_size 996. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "life/tracts_impl.h"

static int32_t rd32(const unsigned char *p, int swap) {
    uint32_t v = swap ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
                      : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
    return (int32_t)v;
}
static int16_t rd16(const unsigned char *p, int swap) {
    return (int16_t)(swap ? (uint16_t)(p[0] << 8 | p[1]) : (uint16_t)(p[1] << 8 | p[0]));
}
static float rdf(const unsigned char *p, int swap) {
    const uint32_t v = (uint32_t)rd32(p, swap);
    float f;
    memcpy(&f, &v, 4);
    return f;
}

/* Axis code -> (world axis 0..2, sign). */
static int code_axis(char c, int *axis, int *sign) {
    switch (c) {
    case 'R': *axis = 0, *sign = 1; return 1;
    case 'L': *axis = 0, *sign = -1; return 1;
    case 'A': *axis = 1, *sign = 1; return 1;
    case 'P': *axis = 1, *sign = -1; return 1;
    case 'S': *axis = 2, *sign = 1; return 1;
    case 'I': *axis = 2, *sign = -1; return 1;
    default: return 0;
    }
}

/* For each voxel axis of a 3 x 3 linear part, the world axis it mostly
 * points along and the sign: the largest remaining |entry| of the
 * column-normalised matrix is taken first (nibabel's aff2axcodes for
 * near-axis-aligned affines). Returns 0 when a column is zero. */
static int affine_axes(double L[3][3], int *axis, int *sign) {
    double n[3][3];
    for (int c = 0; c < 3; ++c) {
        const double len = sqrt(L[0][c] * L[0][c] + L[1][c] * L[1][c] + L[2][c] * L[2][c]);
        if (!(len > 0)) return 0;
        for (int r = 0; r < 3; ++r) n[r][c] = L[r][c] / len;
    }
    int used_r[3] = {0, 0, 0}, used_c[3] = {0, 0, 0};
    for (int k = 0; k < 3; ++k) {
        int br = -1, bc = -1;
        double best = -1;
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 3; ++c)
                if (!used_r[r] && !used_c[c] && fabs(n[r][c]) > best) best = fabs(n[r][c]), br = r, bc = c;
        if (best <= 0) return 0;
        used_r[br] = used_c[bc] = 1;
        axis[bc] = br, sign[bc] = n[br][bc] > 0 ? 1 : -1;
    }
    return 1;
}

static void matmul(double A[4][4], double B[4][4]) { /* A = A B */
    double C[4][4];
    for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c) {
            double s = 0;
            for (int k = 0; k < 4; ++k) s += A[r][k] * B[k][c];
            C[r][c] = s;
        }
    memcpy(A, C, sizeof C);
}

ns_status ns_trk_open(ns_tracts_t *t) {
    unsigned char *h = t->header;
    ns_status s = ns_tracts_read(t, h, 1000, "header", NULL);
    if (s != NS_OK) return ns_fail(NS_ERR_PARSE, "%s: truncated: a .trk header has 1000 bytes, the file %llu",
                                   t->path, (unsigned long long)t->size);
    if (memcmp(h, "TRACK", 5) != 0) return ns_fail(NS_ERR_PARSE, "%s: not a TrackVis file (no 'TRACK' magic)", t->path);
    if (rd32(h + 996, 0) == 1000) t->swap = 0;
    else if (rd32(h + 996, 1) == 1000) t->swap = 1;
    else return ns_fail(NS_ERR_PARSE, "%s: hdr_size = %d, expected 1000", t->path, (int)rd32(h + 996, 0));
    const int sw = t->swap;
    const int version = rd32(h + 992, sw);
    if (version < 1 || version > 3) return ns_fail(NS_ERR_UNSUPPORTED, "%s: .trk version %d (1-3 are read)", t->path, version);
    t->n_scalars = rd16(h + 36, sw);
    t->n_props = rd16(h + 238, sw);
    if (t->n_scalars < 0 || t->n_props < 0)
        return ns_fail(NS_ERR_PARSE, "%s: n_scalars = %d, n_properties = %d must be >= 0", t->path, t->n_scalars, t->n_props);
    const int32_t count = rd32(h + 988, sw);
    if (count < 0) return ns_fail(NS_ERR_PARSE, "%s: n_count = %d is negative", t->path, (int)count);
    t->declared = count > 0 ? count : -1; /* 0: not recorded (read to the end) */

    double vs[3], dim[3];
    for (int i = 0; i < 3; ++i) {
        vs[i] = rdf(h + 12 + 4 * i, sw);
        dim[i] = rd16(h + 6 + 2 * i, sw);
        if (!(vs[i] > 0) || !isfinite(vs[i]))
            return ns_fail(NS_ERR_PARSE, "%s: voxel_size[%d] = %g must be > 0", t->path, i, vs[i]);
    }
    double V[4][4];
    for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c) {
            V[r][c] = rdf(h + 440 + 16 * r + 4 * c, sw);
            if (!isfinite(V[r][c])) return ns_fail(NS_ERR_NOT_FINITE, "%s: vox_to_ras[%d][%d] is not finite", t->path, r, c);
        }
    if (V[3][3] == 0) { /* not recorded (version 1): identity, as nibabel */
        memset(V, 0, sizeof V);
        for (int i = 0; i < 4; ++i) V[i][i] = 1;
    }
    char order[4] = {0};
    memcpy(order, h + 948, 3);
    if (order[0] == '\0') memcpy(order, "LPS", 3); /* TrackVis's default, as nibabel */
    int hax[3], hsg[3], seen[3] = {0, 0, 0};
    for (int i = 0; i < 3; ++i) {
        char c = order[i];
        if (c >= 'a' && c <= 'z') c = (char)(c - 'a' + 'A');
        if (!code_axis(c, &hax[i], &hsg[i]) || seen[hax[i]]++)
            return ns_fail(NS_ERR_PARSE, "%s: voxel_order '%.3s' is not a permutation of R/L, A/P, S/I", t->path, order);
    }
    double L[3][3];
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) L[r][c] = V[r][c];
    int aax[3], asg[3];
    if (!affine_axes(L, aax, asg))
        return ns_fail(NS_ERR_PARSE, "%s: vox_to_ras has a zero column: axis directions undefined", t->path);
    /* ornt[i] = (affine axis with header axis i's world axis, flip), then
     * nibabel's inv_ornt_aff: out_r = flip_r x in[ornt_r] + (flip_r < 0 ? dim_r - 1 : 0). */
    double M[4][4] = {{0}};
    M[3][3] = 1;
    for (int i = 0; i < 3; ++i) {
        int j = 0;
        while (aax[j] != hax[i]) ++j;
        const int flip = hsg[i] * asg[j];
        M[i][j] = flip;
        if (flip < 0) {
            if (dim[i] < 1) return ns_fail(NS_ERR_PARSE, "%s: dim[%d] = %g must be >= 1 to reorient voxel_order %.3s",
                                           t->path, i, dim[i], order);
            M[i][3] = dim[i] - 1;
        }
    }
    double S[4][4] = {{1 / vs[0], 0, 0, -0.5}, {0, 1 / vs[1], 0, -0.5}, {0, 0, 1 / vs[2], -0.5}, {0, 0, 0, 1}};
    memcpy(t->to_world, V, sizeof V);
    matmul(t->to_world, M);
    matmul(t->to_world, S);
    return NS_OK;
}

ns_status ns_trk_next_raw(ns_tracts_t *t, int64_t *n_points, int *end) {
    *end = 0, *n_points = 0;
    if (t->declared >= 0 && t->index >= t->declared) {
        if (t->pos < t->size)
            return ns_fail(NS_ERR_PARSE, "%s: %llu bytes after the %lld streamlines the header declares", t->path,
                           (unsigned long long)(t->size - t->pos), (long long)t->declared);
        *end = 1;
        return NS_OK;
    }
    unsigned char b[4];
    int eof = 0;
    ns_status s = ns_tracts_read(t, b, 4, "point count", &eof);
    if (s != NS_OK) return s;
    if (eof) {
        if (t->declared >= 0)
            return ns_fail(NS_ERR_PARSE, "%s: truncated: the header declares %lld streamlines, the file ends after %lld",
                           t->path, (long long)t->declared, (long long)t->index);
        *end = 1;
        return NS_OK;
    }
    const int32_t m = rd32(b, t->swap);
    const uint64_t per = (uint64_t)(3 + t->n_scalars) * 4;
    const uint64_t body = (uint64_t)(m < 0 ? 0 : m) * per + (uint64_t)t->n_props * 4;
    if (m < 0 || (t->size && body > t->size - (t->pos < t->size ? t->pos : t->size)))
        return ns_fail(NS_ERR_PARSE, "%s: streamline %lld at byte %llu: point count %d %s", t->path,
                       (long long)t->index, (unsigned long long)(t->pos - 4), (int)m,
                       m < 0 ? "is negative" : "runs past the end of the file (truncated or corrupt)");
    const size_t need = 4 + (size_t)body;
    if (need > t->raw_cap) {
        unsigned char *r = realloc(t->raw, need);
        if (!r) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: streamline %lld", t->path, (long long)t->index);
        t->raw = r, t->raw_cap = need;
    }
    memcpy(t->raw, b, 4);
    t->raw_len = need;
    if ((s = ns_tracts_read(t, t->raw + 4, (size_t)body, "points", NULL)) != NS_OK) return s;
    *n_points = m;
    return NS_OK;
}

ns_status ns_trk_decode(ns_tracts_t *t, int64_t m) {
    ns_status s = ns_tracts_reserve(t, m);
    if (s != NS_OK) return s;
    const unsigned char *p = t->raw + 4;
    const size_t per = (size_t)(3 + t->n_scalars) * 4;
    double (*A)[4] = t->to_world;
    for (int64_t i = 0; i < m; ++i, p += per) {
        const double x = rdf(p, t->swap), y = rdf(p + 4, t->swap), z = rdf(p + 8, t->swap);
        if (!isfinite(x) || !isfinite(y) || !isfinite(z))
            return ns_fail(NS_ERR_NOT_FINITE, "%s: streamline %lld, point %lld is not finite", t->path,
                           (long long)t->index, (long long)i);
        double *q = t->pts + 3 * i;
        for (int r = 0; r < 3; ++r) q[r] = A[r][0] * x + A[r][1] * y + A[r][2] * z + A[r][3];
    }
    return NS_OK;
}
