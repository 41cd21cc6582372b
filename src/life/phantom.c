/* A ground-truth phantom for LiFE's pruning quality (docs/life.md, "Pruning
 * quality"), and the ROC AUC it is scored with. The phantom is a folder a
 * user could have made from a scan and a tractography run: a DWI (NIfTI-1,
 * float32), its gradient table, a .tck tractogram, plus what no scan gives:
 * which streamline is true (labels.npy), what kind of error a false one is
 * (kinds.npy) and the bundle of a true one (bundles.npy).
 *
 * Geometry, in voxel coordinates of a grid^3 image of 2 mm voxels, brain =
 * the ball of radius R = (grid - 1) / 2 - 1.5 about the centre c:
 * - n_bundles bundle cores: cubic Bezier curves from 0.95 R u0 to 0.95 R u1
 *   (u0, u1 random unit vectors with u0.u1 <= -0.2: long bundles), inner
 *   control points c + U(-0.5, 0.5)^3 R, resampled at 0.5 voxel, clipped to
 *   the ball, kept when longer than 40 points;
 * - true streamline s follows core s mod n_bundles at a fixed offset inside a
 *   2.5-voxel radius (uniform over the disc) plus 0.15-voxel jitter per node;
 * - false streamlines, alternately: a "bridge" follows one core up to a point
 *   in its middle half, jumps to the nearest point of another core and follows
 *   it to one of its ends (a wrong connection), offset by N(0, 1) voxel and
 *   jittered 0.15 per node; a "random curve" is a Bezier curve between two
 *   random points of the sphere with inner control points c + U(-0.6, 0.6)^3 R.
 *   All are clipped to the ball of radius R - 0.5; the order is shuffled.
 * Signal: 2 b=0 volumes + n_directions (upper-hemisphere Fibonacci spiral) at
 * b. Per voxel, over the nodes of the true streamlines that fall in it
 * (nearest voxel centre), the mean of a zeppelin response along each node's
 * tangent (np.gradient of the streamline) with axial 1.7 and radial 0.3
 * um^2/ms (not LiFE's stick, as in tissue), weighted by the intra-axonal
 * fraction f = 0.7 min(nodes / n95, 1) (n95: the 95th percentile of the node
 * counts of the voxels with nodes), plus (1 - f) of a ball of 0.9 um^2/ms
 * inside the brain and 3.0 outside; S0 = 1000; Rician noise of sd S0 / snr
 * (none for snr 0). Every true streamline therefore carries the same fibre
 * cross-section (up to the saturation at n95). This is bench/life_phantom.py
 * of earlier versions, ported with the same definitions (its own random
 * numbers). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/rng.h"
#include "life/life_impl.h"
#include "life/npy.h"
#include "neurosolve/life_io.h"
#include "neurosolve/output.h"

static const double pi = 3.14159265358979323846;
#define PH_S0 1000.0
#define PH_VOX 2.0 /* [mm] */

void ns_life_phantom_options_init(ns_life_phantom_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->n_streamlines = 10000;
    o->false_fraction = 0.3;
    o->snr = 20.0;
    o->n_bundles = 12;
    o->grid = 48;
    o->n_directions = 30;
    o->b_value = 2000.0;
    o->seed = 1;
}

/* ------------------------------------------------------------- curves */

typedef struct curve {
    double *p; /* 3 per point */
    int64_t n, cap;
} curve;

static int curve_reserve(curve *c, int64_t n) {
    if (n <= c->cap) return 1;
    int64_t cap = c->cap ? c->cap : 64;
    while (cap < n) cap *= 2;
    double *p = realloc(c->p, (size_t)cap * 3 * sizeof *p);
    if (!p) return 0;
    c->p = p, c->cap = cap;
    return 1;
}

static int curve_push(curve *c, const double *x) {
    if (!curve_reserve(c, c->n + 1)) return 0;
    memcpy(c->p + 3 * c->n, x, 3 * sizeof *x);
    ++c->n;
    return 1;
}

static double gauss(ns_rng *r) {
    const double u1 = 1.0 - ns_rng_unit(r), u2 = ns_rng_unit(r);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * pi * u2);
}

static void unit_vector(ns_rng *r, double *u) {
    double n = 0.0;
    do {
        for (int k = 0; k < 3; ++k) u[k] = gauss(r);
        n = sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
    } while (n < 1e-12);
    for (int k = 0; k < 3; ++k) u[k] /= n;
}

/* 400 samples of the cubic Bezier curve with control points P[0..3]. */
static int bezier(double P[4][3], curve *out) {
    out->n = 0;
    for (int i = 0; i < 400; ++i) {
        const double t = i / 399.0, s = 1.0 - t;
        double x[3];
        for (int k = 0; k < 3; ++k)
            x[k] = s * s * s * P[0][k] + 3 * s * s * t * P[1][k] + 3 * s * t * t * P[2][k] + t * t * t * P[3][k];
        if (!curve_push(out, x)) return 0;
    }
    return 1;
}

/* Points every `step` of arc length from the start (numpy's
 * interp(arange(0, length, step), arclength, points)). */
static int resample(const double *p, int64_t n, double step, curve *out) {
    out->n = 0;
    if (n < 1) return 1;
    double len = 0.0;
    for (int64_t i = 1; i < n; ++i) {
        const double *a = p + 3 * (i - 1), *b = p + 3 * i;
        len += sqrt((b[0] - a[0]) * (b[0] - a[0]) + (b[1] - a[1]) * (b[1] - a[1]) + (b[2] - a[2]) * (b[2] - a[2]));
    }
    int64_t seg = 1;
    double d0 = 0.0, d1 = n > 1 ? 0.0 : 0.0; /* arc length at points seg-1 and seg */
    if (n > 1) {
        const double *a = p, *b = p + 3;
        d1 = sqrt((b[0] - a[0]) * (b[0] - a[0]) + (b[1] - a[1]) * (b[1] - a[1]) + (b[2] - a[2]) * (b[2] - a[2]));
    }
    for (int64_t k = 0;; ++k) {
        const double s = k * step;
        if (!(s < len)) break;
        while (seg < n - 1 && s > d1) {
            ++seg;
            const double *a = p + 3 * (seg - 1), *b = p + 3 * seg;
            d0 = d1;
            d1 += sqrt((b[0] - a[0]) * (b[0] - a[0]) + (b[1] - a[1]) * (b[1] - a[1]) + (b[2] - a[2]) * (b[2] - a[2]));
        }
        const double f = d1 > d0 ? (s - d0) / (d1 - d0) : 0.0;
        double x[3];
        for (int j = 0; j < 3; ++j) x[j] = p[3 * (seg - 1) + j] + f * (p[3 * seg + j] - p[3 * (seg - 1) + j]);
        if (!curve_push(out, x)) return 0;
    }
    return 1;
}

static int inside(const double *x, const double *c, double R) {
    const double d0 = x[0] - c[0], d1 = x[1] - c[1], d2 = x[2] - c[2];
    return sqrt(d0 * d0 + d1 * d1 + d2 * d2) < R;
}

/* The first run of consecutive points inside the ball, moved to the front;
 * n becomes its length (0 if none). */
static void clip_inside(curve *cv, const double *c, double R) {
    int64_t i = 0;
    while (i < cv->n && !inside(cv->p + 3 * i, c, R)) ++i;
    int64_t j = i;
    while (j < cv->n && inside(cv->p + 3 * j, c, R)) ++j;
    memmove(cv->p, cv->p + 3 * i, (size_t)(j - i) * 3 * sizeof *cv->p);
    cv->n = j - i;
}

/* numpy.gradient along the curve (unit spacing), normalised. */
static void tangent(const double *p, int64_t n, int64_t i, double *t) {
    const int64_t a = i > 0 ? i - 1 : 0, b = i < n - 1 ? i + 1 : n - 1;
    const double h = (i > 0 && i < n - 1) ? 0.5 : 1.0;
    double len = 0.0;
    for (int k = 0; k < 3; ++k) t[k] = h * (p[3 * b + k] - p[3 * a + k]), len += t[k] * t[k];
    len = sqrt(len);
    for (int k = 0; k < 3; ++k) t[k] = len > 0 ? t[k] / len : 0.0;
}

static void cross(const double *a, const double *b, double *c) {
    c[0] = a[1] * b[2] - a[2] * b[1];
    c[1] = a[2] * b[0] - a[0] * b[2];
    c[2] = a[0] * b[1] - a[1] * b[0];
}

static void normalise(double *v) {
    const double n = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    for (int k = 0; k < 3; ++k) v[k] = n > 0 ? v[k] / n : 0.0;
}

/* A Bezier curve from c + 0.95 R u0 to c + 0.95 R u1, inner control points
 * c + U(-spread, spread)^3 R, resampled at 0.5 voxel. */
static int bezier_across(ns_rng *r, const double *c, double R, const double *u0, const double *u1,
                         double spread, curve *tmp, curve *out) {
    double P[4][3];
    for (int k = 0; k < 3; ++k) {
        P[0][k] = c[k] + 0.95 * R * u0[k];
        P[3][k] = c[k] + 0.95 * R * u1[k];
    }
    for (int k = 0; k < 3; ++k) P[1][k] = c[k] + ns_rng_uniform(r, -spread, spread) * R;
    for (int k = 0; k < 3; ++k) P[2][k] = c[k] + ns_rng_uniform(r, -spread, spread) * R;
    return bezier(P, tmp) && resample(tmp->p, tmp->n, 0.5, out);
}

/* ------------------------------------------------------------- files */

static void put32(unsigned char *b, int off, uint32_t v) {
    for (int i = 0; i < 4; ++i) b[off + i] = (unsigned char)((v >> (8 * i)) & 0xff);
}
static uint32_t fbits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static ns_status write_fail(const char *path) { return ns_fail(NS_ERR_IO, "%s: write failed", path); }

/* NIfTI-1 single file, sform = diag(2, 2, 2) mm: float32 `data` (n^3 x nvol), or int16
 * `labels` (n^3, 3-D) when data is NULL. */
static ns_status write_nifti(const char *path, int32_t n, int32_t nvol, const float *data, const int16_t *labels) {
    const int64_t dim[4] = {n, n, n, data ? nvol : 1};
    const double affine[4][4] = {{PH_VOX, 0, 0, 0}, {0, PH_VOX, 0, 0}, {0, 0, PH_VOX, 0}, {0, 0, 0, 1}};
    return data ? ns_nifti_write(path, dim, 16, affine, data) : ns_nifti_write(path, dim, 4, affine, labels);
}

static ns_status write_text_gradients(const char *bval_path, const char *bvec_path, int32_t nd, const double *g,
                                      double b) {
    FILE *f = fopen(bval_path, "w");
    if (!f) return ns_fail(NS_ERR_IO, "%s: cannot create", bval_path);
    int ok = fprintf(f, "0 0") > 0;
    for (int32_t i = 0; i < nd; ++i) ok = ok && fprintf(f, " %.17g", b) > 0;
    ok = ok && fputc('\n', f) != EOF;
    if (fclose(f) != 0) ok = 0;
    if (!ok) return write_fail(bval_path);
    f = fopen(bvec_path, "w");
    if (!f) return ns_fail(NS_ERR_IO, "%s: cannot create", bvec_path);
    for (int k = 0; k < 3 && ok; ++k) {
        ok = fprintf(f, "0 0") > 0;
        for (int32_t i = 0; i < nd && ok; ++i) ok = fprintf(f, " %.17g", g[3 * i + k]) > 0;
        ok = ok && fputc('\n', f) != EOF;
    }
    if (fclose(f) != 0) ok = 0;
    return ok ? NS_OK : write_fail(bvec_path);
}

/* ------------------------------------------------------------- phantom */

typedef struct phantom {
    curve *sl;      /* streamlines, voxel coordinates */
    int32_t *label, *kind, *bundle;
    int64_t n;
} phantom;

static void phantom_free(phantom *ph) {
    if (ph->sl)
        for (int64_t i = 0; i < ph->n; ++i) free(ph->sl[i].p);
    free(ph->sl);
    free(ph->label);
    free(ph->kind);
    free(ph->bundle);
}

#define OOM(what) ns_fail(NS_ERR_OUT_OF_MEMORY, "phantom: %s", what)

static ns_status make_streamlines(const ns_life_phantom_options *o, phantom *ph) {
    const double c[3] = {(o->grid - 1) / 2.0, (o->grid - 1) / 2.0, (o->grid - 1) / 2.0};
    const double R = (o->grid - 1) / 2.0 - 1.5;
    ns_rng r;
    ns_rng_seed(&r, o->seed, 0xB0D1E5ull);
    curve *cores = calloc((size_t)o->n_bundles, sizeof *cores);
    curve tmp = {0}, tmp2 = {0};
    ns_status st = NS_OK;
    if (!cores) return OOM("bundle cores");
    for (int32_t b = 0, tries = 0; b < o->n_bundles && st == NS_OK; ++tries) {
        if (tries > 100000) {
            st = ns_fail(NS_ERR_INVALID_ARGUMENT, "phantom: no bundle longer than 40 points fits a grid of %d",
                         (int)o->grid);
            break;
        }
        double u0[3], u1[3];
        unit_vector(&r, u0);
        unit_vector(&r, u1);
        if (u0[0] * u1[0] + u0[1] * u1[1] + u0[2] * u1[2] > -0.2) continue; /* long bundles */
        if (!bezier_across(&r, c, R, u0, u1, 0.5, &tmp, &cores[b])) st = OOM("bundle cores");
        clip_inside(&cores[b], c, R);
        if (cores[b].n > 40) ++b;
    }
    const int64_t n = o->n_streamlines;
    const int64_t n_true = (int64_t)llround(n * (1.0 - o->false_fraction));
    ph->n = n;
    ph->sl = calloc((size_t)n, sizeof *ph->sl);
    ph->label = malloc((size_t)n * sizeof *ph->label);
    ph->kind = malloc((size_t)n * sizeof *ph->kind);
    ph->bundle = malloc((size_t)n * sizeof *ph->bundle);
    if (st == NS_OK && (!ph->sl || !ph->label || !ph->kind || !ph->bundle)) st = OOM("streamlines");
    for (int64_t s = 0; s < n && st == NS_OK; ++s) {
        ns_rng rs; /* one stream per streamline */
        ns_rng_seed(&rs, o->seed, 1000 + (uint64_t)s);
        curve *out = &ph->sl[s];
        if (s < n_true) {
            const int32_t b = (int32_t)(s % o->n_bundles);
            const curve *core = &cores[b];
            const double rr = 2.5 * sqrt(ns_rng_unit(&rs)), ang = ns_rng_uniform(&rs, 0.0, 2.0 * pi);
            if (!curve_reserve(out, core->n)) {
                st = OOM("streamlines");
                break;
            }
            const double fixed[3] = {0.3, 0.5, 0.8};
            for (int64_t i = 0; i < core->n; ++i) {
                double t[3], e1[3], e2[3];
                tangent(core->p, core->n, i, t);
                cross(t, fixed, e1);
                normalise(e1);
                cross(t, e1, e2);
                for (int k = 0; k < 3; ++k)
                    out->p[3 * i + k] = core->p[3 * i + k] + rr * (cos(ang) * e1[k] + sin(ang) * e2[k]) +
                                        0.15 * gauss(&rs);
            }
            out->n = core->n;
            clip_inside(out, c, R - 0.5);
            if (out->n < 8) { /* the core itself */
                out->n = 0;
                for (int64_t i = 0; i < core->n; ++i) curve_push(out, core->p + 3 * i);
                clip_inside(out, c, R - 0.5);
            }
            ph->label[s] = 1, ph->kind[s] = 0, ph->bundle[s] = b;
        } else if ((s - n_true) % 2 == 0) { /* bridge */
            const int32_t A = (int32_t)ns_rng_below(&rs, (uint64_t)o->n_bundles);
            int32_t B = (int32_t)ns_rng_below(&rs, (uint64_t)o->n_bundles - 1);
            if (B >= A) ++B;
            const curve *ca = &cores[A], *cb = &cores[B];
            const int64_t i = ca->n / 4 + (int64_t)ns_rng_below(&rs, (uint64_t)(3 * ca->n / 4 - ca->n / 4));
            int64_t j = 0;
            double best = INFINITY;
            for (int64_t q = 0; q < cb->n; ++q) {
                double d = 0.0;
                for (int k = 0; k < 3; ++k) d += (cb->p[3 * q + k] - ca->p[3 * i + k]) * (cb->p[3 * q + k] - ca->p[3 * i + k]);
                if (d < best) best = d, j = q;
            }
            const int forward = (int)ns_rng_below(&rs, 2);
            tmp.n = 0;
            int ok = 1;
            for (int64_t q = 0; q <= i && ok; ++q) ok = curve_push(&tmp, ca->p + 3 * q);
            ok = ok && curve_push(&tmp, cb->p + 3 * j); /* the jump (resampled below) */
            if (forward)
                for (int64_t q = j; q < cb->n && ok; ++q) ok = curve_push(&tmp, cb->p + 3 * q);
            else
                for (int64_t q = j; q >= 0 && ok; --q) ok = curve_push(&tmp, cb->p + 3 * q);
            if (!ok || !resample(tmp.p, tmp.n, 0.5, out)) {
                st = OOM("streamlines");
                break;
            }
            double off[3];
            for (int k = 0; k < 3; ++k) off[k] = gauss(&rs);
            for (int64_t q = 0; q < out->n; ++q)
                for (int k = 0; k < 3; ++k) out->p[3 * q + k] += off[k] + 0.15 * gauss(&rs);
            ph->label[s] = 0, ph->kind[s] = 1, ph->bundle[s] = -1;
        } else { /* random smooth curve */
            double u0[3], u1[3], off[3];
            unit_vector(&rs, u0);
            unit_vector(&rs, u1);
            if (!bezier_across(&rs, c, R, u0, u1, 0.6, &tmp, out)) {
                st = OOM("streamlines");
                break;
            }
            for (int k = 0; k < 3; ++k) off[k] = 0.15 * gauss(&rs);
            for (int64_t q = 0; q < out->n; ++q)
                for (int k = 0; k < 3; ++k) out->p[3 * q + k] += off[k];
            ph->label[s] = 0, ph->kind[s] = 2, ph->bundle[s] = -1;
        }
        if (s >= n_true) {
            clip_inside(out, c, R - 0.5);
            if (out->n < 8) { /* a short straight piece through the centre */
                double P[4][3] = {{c[0] - 10, c[1] - 10, c[2] - 10}, {c[0] - 3, c[1] - 3, c[2] - 3},
                                        {c[0] + 3, c[1] + 3, c[2] + 3}, {c[0] + 10, c[1] + 10, c[2] + 10}};
                if (!bezier(P, &tmp2) || !resample(tmp2.p, tmp2.n, 0.5, out)) {
                    st = OOM("streamlines");
                    break;
                }
                clip_inside(out, c, R);
            }
        }
    }
    for (int32_t b = 0; b < o->n_bundles; ++b) free(cores[b].p);
    free(cores);
    free(tmp.p);
    free(tmp2.p);
    if (st != NS_OK) return st;
    /* shuffle (Fisher-Yates) so that file order says nothing */
    for (int64_t i = n - 1; i > 0; --i) {
        const int64_t j = (int64_t)ns_rng_below(&r, (uint64_t)i + 1);
        curve tc = ph->sl[i];
        ph->sl[i] = ph->sl[j], ph->sl[j] = tc;
        int32_t t = ph->label[i];
        ph->label[i] = ph->label[j], ph->label[j] = t;
        t = ph->kind[i], ph->kind[i] = ph->kind[j], ph->kind[j] = t;
        t = ph->bundle[i], ph->bundle[i] = ph->bundle[j], ph->bundle[j] = t;
    }
    return NS_OK;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The image: S0 in the b=0 volumes, the model above in the others. */
static ns_status make_signal(const ns_life_phantom_options *o, const phantom *ph, const double *g, float *img) {
    const int32_t N = o->grid, nd = o->n_directions, nvol = nd + 2;
    const int64_t nvox = (int64_t)N * N * N;
    double *acc = calloc((size_t)(nvox * nd), sizeof *acc);
    double *dens = calloc((size_t)nvox, sizeof *dens);
    if (!acc || !dens) {
        free(acc), free(dens);
        return OOM("signal");
    }
    const double bb = o->b_value * 1e-3; /* [ms/um^2] */
    for (int64_t s = 0; s < ph->n; ++s) {
        if (!ph->label[s]) continue;
        const curve *cv = &ph->sl[s];
        for (int64_t i = 0; i < cv->n; ++i) {
            double t[3];
            tangent(cv->p, cv->n, i, t);
            int64_t ijk[3];
            for (int k = 0; k < 3; ++k) {
                double v = nearbyint(cv->p[3 * i + k]); /* half to even, as numpy's rint */
                ijk[k] = v < 0 ? 0 : v > N - 1 ? N - 1 : (int64_t)v;
            }
            const int64_t lin = ijk[0] + N * (ijk[1] + (int64_t)N * ijk[2]);
            for (int32_t d = 0; d < nd; ++d) {
                const double cc = t[0] * g[3 * d] + t[1] * g[3 * d + 1] + t[2] * g[3 * d + 2];
                acc[lin * nd + d] += exp(-bb * (1.7 * cc * cc + 0.3 * (1.0 - cc * cc)));
            }
            dens[lin] += 1.0;
        }
    }
    /* the 95th percentile of the node counts of the occupied voxels (numpy's linear rule) */
    int64_t occ = 0;
    for (int64_t v = 0; v < nvox; ++v) occ += dens[v] > 0;
    double dmax = 1.0;
    if (occ > 0) {
        double *sorted = malloc((size_t)occ * sizeof *sorted);
        if (!sorted) {
            free(acc), free(dens);
            return OOM("signal");
        }
        for (int64_t v = 0, k = 0; v < nvox; ++v)
            if (dens[v] > 0) sorted[k++] = dens[v];
        qsort(sorted, (size_t)occ, sizeof *sorted, cmp_double);
        const double pos = 0.95 * (double)(occ - 1);
        const int64_t lo = (int64_t)floor(pos);
        const double fr = pos - (double)lo;
        dmax = lo + 1 < occ ? sorted[lo] + fr * (sorted[lo + 1] - sorted[lo]) : sorted[lo];
        free(sorted);
    }
    const double c = (N - 1) / 2.0, R = (N - 1) / 2.0 - 1.5;
    const double sd = o->snr > 0 ? PH_S0 / o->snr : 0.0;
    ns_rng r;
    ns_rng_seed(&r, o->seed, 0x5E5E5Eull);
    for (int64_t v = 0; v < nvox; ++v) {
        const int64_t i = v % N, j = (v / N) % N, k = v / ((int64_t)N * N);
        const double x[3] = {(double)i, (double)j, (double)k}, cc[3] = {c, c, c};
        const double d_iso = inside(x, cc, R) ? 0.9 : 3.0;
        const double iso = exp(-bb * d_iso);
        const double f_in = dens[v] > 0 ? 0.7 * fmin(dens[v] / dmax, 1.0) : 0.0;
        for (int32_t t = 0; t < nvol; ++t) {
            double sgl = PH_S0;
            if (t >= 2) {
                const double shape = dens[v] > 0 ? acc[v * nd + (t - 2)] / dens[v] : 0.0;
                sgl = PH_S0 * (f_in * shape + (1.0 - f_in) * iso);
            }
            if (sd > 0) {
                const double a = sgl + sd * gauss(&r), b = sd * gauss(&r);
                sgl = sqrt(a * a + b * b);
            }
            img[v + nvox * t] = (float)sgl;
        }
    }
    free(acc);
    free(dens);
    return NS_OK;
}

static ns_status write_tck(const char *path, const phantom *ph) {
    FILE *f = fopen(path, "wb");
    if (!f) return ns_fail(NS_ERR_IO, "%s: cannot create", path);
    char head[128];
    memset(head, 0, sizeof head);
    snprintf(head, sizeof head, "mrtrix tracks\ndatatype: Float32LE\ncount: %lld\nfile: . 128\nEND\n",
             (long long)ph->n);
    int ok = fwrite(head, 1, sizeof head, f) == sizeof head;
    unsigned char buf[12];
    for (int64_t s = 0; s < ph->n && ok; ++s) {
        const curve *cv = &ph->sl[s];
        for (int64_t i = 0; i < cv->n && ok; ++i) {
            for (int k = 0; k < 3; ++k) put32(buf, 4 * k, fbits((float)(cv->p[3 * i + k] * PH_VOX)));
            ok = fwrite(buf, 1, 12, f) == 12;
        }
        for (int k = 0; k < 3; ++k) put32(buf, 4 * k, fbits(NAN));
        ok = ok && fwrite(buf, 1, 12, f) == 12;
    }
    for (int k = 0; k < 3; ++k) put32(buf, 4 * k, fbits(INFINITY));
    ok = ok && fwrite(buf, 1, 12, f) == 12;
    if (fclose(f) != 0) ok = 0;
    return ok ? NS_OK : write_fail(path);
}

/* The endpoint parcellation (parcels.nii): PH_PARCELS directions on a Fibonacci
 * sphere; a voxel within R + 1.5 of the centre takes the label 1 + the index of the
 * direction nearest to its own from the centre (every node of a streamline lies within
 * R - 0.5 + sqrt(3)/2 after rounding to its voxel), others 0. Label i of the sphere:
 * z = 1 - (2 i + 1) / PH_PARCELS, (x, y) = sqrt(1 - z^2) (cos, sin)(i pi (3 - sqrt 5)). */
#define PH_PARCELS 40
static void make_parcels(int32_t n, int16_t *lab) {
    const double c = (n - 1) / 2.0, R = (n - 1) / 2.0 - 1.5, golden = pi * (3.0 - sqrt(5.0));
    double u[PH_PARCELS][3];
    for (int i = 0; i < PH_PARCELS; ++i) {
        const double z = 1.0 - (2.0 * i + 1.0) / PH_PARCELS, rr = sqrt(1.0 - z * z);
        u[i][0] = rr * cos(golden * i), u[i][1] = rr * sin(golden * i), u[i][2] = z;
    }
    for (int32_t k = 0; k < n; ++k)
        for (int32_t j = 0; j < n; ++j)
            for (int32_t i = 0; i < n; ++i) {
                const double d[3] = {i - c, j - c, k - c};
                const double r = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
                int best = 0;
                double bd = -2.0;
                for (int p = 0; p < PH_PARCELS; ++p) {
                    const double dp = d[0] * u[p][0] + d[1] * u[p][1] + d[2] * u[p][2];
                    if (dp > bd) bd = dp, best = p;
                }
                lab[i + (int64_t)n * (j + (int64_t)n * k)] = (int16_t)(r <= R + 1.5 ? best + 1 : 0);
            }
}

ns_status ns_life_phantom_write(const ns_life_phantom_options *options, const char *directory,
                                ns_life_phantom_stats *stats) {
    ns_life_phantom_options o;
    if (options) o = *options;
    else ns_life_phantom_options_init(&o);
    if (!directory) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_phantom_write: NULL directory");
    if (o.n_streamlines < 2 || o.n_streamlines > 100000000)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "phantom: n_streamlines = %d must be in [2, 1e8]",
                       (int)o.n_streamlines);
    if (!(o.false_fraction >= 0 && o.false_fraction <= 1))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "phantom: false_fraction = %g must be in [0, 1]", o.false_fraction);
    if (!(o.snr >= 0) || !isfinite(o.snr))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "phantom: snr = %g must be finite and >= 0 (0: no noise)", o.snr);
    if (o.n_bundles < 2 || o.n_bundles > 10000)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "phantom: n_bundles = %d must be in [2, 10000]", (int)o.n_bundles);
    if (o.grid < 24 || o.grid > 512)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "phantom: grid = %d must be in [24, 512]", (int)o.grid);
    if (o.n_directions < 2 || o.n_directions > 4096)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "phantom: n_directions = %d must be in [2, 4096]",
                       (int)o.n_directions);
    if (!(o.b_value > 0) || o.b_value > 1e5)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "phantom: b_value = %g must be in (0, 1e5]", o.b_value);
    phantom ph = {0};
    const int32_t N = o.grid, nvol = o.n_directions + 2;
    double *g = malloc((size_t)o.n_directions * 3 * sizeof *g);
    float *img = malloc((size_t)N * N * N * nvol * sizeof *img);
    ns_status st = g && img ? NS_OK : OOM("image");
    if (st == NS_OK) {
        /* the gradient directions: life synth's Fibonacci spiral over the upper hemisphere */
        const double golden = pi * (3.0 - sqrt(5.0));
        for (int32_t i = 0; i < o.n_directions; ++i) {
            const double z = 1.0 - (i + 0.5) / o.n_directions, rr = sqrt(1.0 - z * z);
            g[3 * i] = rr * cos(golden * i), g[3 * i + 1] = rr * sin(golden * i), g[3 * i + 2] = z;
        }
        st = make_streamlines(&o, &ph);
    }
    if (st == NS_OK) st = make_signal(&o, &ph, g, img);
    ns_output_dir *od = NULL;
    if (st == NS_OK) st = ns_output_dir_open(directory, &od);
    char path[4096];
#define PATH(name) (snprintf(path, sizeof path, "%s/%s", ns_output_dir_path(od), name), path)
    if (st == NS_OK) st = write_nifti(PATH("dwi.nii"), N, nvol, img, NULL);
    if (st == NS_OK) {
        int16_t *parcels = malloc((size_t)N * N * N * sizeof *parcels);
        if (!parcels) st = OOM("parcels");
        else {
            make_parcels(N, parcels);
            st = write_nifti(PATH("parcels.nii"), N, 1, NULL, parcels);
            free(parcels);
        }
    }
    if (st == NS_OK) {
        char bvec[4096];
        snprintf(bvec, sizeof bvec, "%s/dwi.bvec", ns_output_dir_path(od));
        st = write_text_gradients(PATH("dwi.bval"), bvec, o.n_directions, g, o.b_value);
    }
    if (st == NS_OK) st = write_tck(PATH("tracks.tck"), &ph);
    const int64_t shape[1] = {ph.n};
    if (st == NS_OK) st = ns_npy_write(PATH("labels.npy"), NS_NPY_I4, 0, 1, shape, ph.label);
    if (st == NS_OK) st = ns_npy_write(PATH("kinds.npy"), NS_NPY_I4, 0, 1, shape, ph.kind);
    if (st == NS_OK) st = ns_npy_write(PATH("bundles.npy"), NS_NPY_I4, 0, 1, shape, ph.bundle);
#undef PATH
    if (st == NS_OK) {
        st = ns_output_dir_commit(od);
        od = NULL;
    }
    ns_output_dir_abort(od);
    if (st == NS_OK && stats) {
        memset(stats, 0, sizeof *stats);
        stats->n_streamlines = ph.n;
        for (int64_t s = 0; s < ph.n; ++s) {
            stats->n_true += ph.label[s] == 1;
            stats->n_bridges += ph.kind[s] == 1;
            stats->n_random += ph.kind[s] == 2;
            stats->n_nodes += ph.sl[s].n;
        }
        stats->n_bundles = o.n_bundles;
    }
    phantom_free(&ph);
    free(g);
    free(img);
    return st;
}

/* ------------------------------------------------------------- ROC AUC */

typedef struct scored {
    double s;
    int32_t label;
} scored;

static int cmp_scored(const void *a, const void *b) {
    const double x = ((const scored *)a)->s, y = ((const scored *)b)->s;
    return (x > y) - (x < y);
}

ns_status ns_life_roc_auc(const double *score, const int32_t *label, int64_t n, double *auc) {
    if (!score || !label || !auc || n < 2)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_roc_auc: NULL argument or n = %lld < 2", (long long)n);
    scored *v = malloc((size_t)n * sizeof *v);
    if (!v) return OOM("ROC");
    int64_t n1 = 0;
    for (int64_t i = 0; i < n; ++i) {
        if (!isfinite(score[i]) || (label[i] != 0 && label[i] != 1)) {
            free(v);
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_roc_auc: entry %lld: score %g, label %d (scores "
                           "must be finite, labels 0 or 1)", (long long)i, score[i], (int)label[i]);
        }
        v[i].s = score[i], v[i].label = label[i];
        n1 += label[i];
    }
    const int64_t n0 = n - n1;
    if (n1 == 0 || n0 == 0) {
        free(v);
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_roc_auc: %lld positives and %lld negatives: both "
                       "classes are needed", (long long)n1, (long long)n0);
    }
    qsort(v, (size_t)n, sizeof *v, cmp_scored);
    /* Mann-Whitney: the rank sum of the positives, ties sharing their mean rank */
    double rank_sum = 0.0;
    for (int64_t i = 0; i < n;) {
        int64_t j = i;
        int64_t pos = 0;
        while (j < n && v[j].s == v[i].s) pos += v[j].label, ++j;
        rank_sum += (double)pos * (0.5 * (double)(i + j - 1) + 1.0);
        i = j;
    }
    free(v);
    *auc = (rank_sum - 0.5 * (double)n1 * (double)(n1 + 1)) / ((double)n1 * (double)n0);
    return NS_OK;
}

/* ------------------------------------------------------- reading the truth */

static ns_status read_i4(const char *dir, const char *name, int32_t **out, int64_t *n) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ns_npy_header h;
    FILE *f = NULL;
    ns_status st = ns_npy_open(path, &h, &f);
    if (st != NS_OK) return st;
    if (h.dtype != NS_NPY_I4 || h.ndim != 1) {
        fclose(f);
        return ns_fail(NS_ERR_PARSE, "%s: expected a one-dimensional int32 array, found %s with %d dimensions",
                       path, ns_npy_dtype_name(h.dtype), h.ndim);
    }
    int32_t *v = malloc((size_t)(h.count > 0 ? h.count : 1) * sizeof *v);
    if (!v) {
        fclose(f);
        return OOM(path);
    }
    st = ns_npy_read_data(path, f, &h, v);
    if (st != NS_OK) {
        free(v);
        return st;
    }
    *out = v, *n = h.count;
    return NS_OK;
}

ns_status ns_life_phantom_read_truth(const char *directory, int32_t **labels, int32_t **kinds, int64_t *n) {
    if (!directory || !labels || !kinds || !n)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_phantom_read_truth: NULL argument");
    *labels = *kinds = NULL;
    int64_t nl = 0, nk = 0;
    ns_status st = read_i4(directory, "labels.npy", labels, &nl);
    if (st == NS_OK) st = read_i4(directory, "kinds.npy", kinds, &nk);
    if (st == NS_OK && nl != nk)
        st = ns_fail(NS_ERR_SIZE, "%s: labels.npy has %lld entries, kinds.npy %lld", directory, (long long)nl,
                     (long long)nk);
    for (int64_t i = 0; st == NS_OK && i < nl; ++i)
        if ((*labels)[i] != 0 && (*labels)[i] != 1)
            st = ns_fail(NS_ERR_PARSE, "%s/labels.npy[%lld] = %d must be 0 or 1", directory, (long long)i,
                         (int)(*labels)[i]);
        else if ((*kinds)[i] < 0 || (*kinds)[i] > 2 || ((*kinds)[i] == 0) != ((*labels)[i] == 1))
            st = ns_fail(NS_ERR_PARSE, "%s/kinds.npy[%lld] = %d: must be 0 for a true streamline, 1 or 2 for a "
                         "false one (label %d)", directory, (long long)i, (int)(*kinds)[i], (int)(*labels)[i]);
    if (st != NS_OK) {
        free(*labels), free(*kinds);
        *labels = *kinds = NULL;
        return st;
    }
    *n = nl;
    return NS_OK;
}
