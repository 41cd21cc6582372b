/* The LiFE model from a diffusion image and a tractogram, as ENCODE's
 * feConnectomeInit builds it (docs/life_data.md lists every difference):
 *   Y(:, v)  = S(:, v) - mean(S(:, v))  over the diffusion-weighted volumes
 *   S0(v)    = mean over the b = 0 volumes
 *   D(:, a)  = exp(-b (g' Q_a g)) - its mean, Q_a the kernel tensor along atom a
 *   Phi(a, v, f) = S0(v) x (nodes of f in v with orientation a) / (nodes of f in v)
 * Two streaming passes over the tractogram keep memory bounded: pass 1
 * marks the voxels touched and counts each fiber's coefficients, pass 2
 * fills the model's arrays, sized exactly. Voxels are numbered in the
 * image's raster order (i fastest). The inputs come from files
 * (ns_life_build) or from arrays in memory (ns_life_build_arrays); the
 * builder reads both through the same few accessors (img_value, src_*), so
 * the two give the same model for the same values. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/error.h"
#include "life/build_impl.h"
#include "life/life_impl.h"

void ns_life_build_options_init(ns_life_build_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->dictionary_l = 180; /* 1 degree; ENCODE's 360 costs more per update for the same weights
                              (docs/life.md; bench/README.md at 01b826c, "LiFE: model choices") */
    o->axial_diffusivity = 1.0;
    o->radial_diffusivity = 0.0;
    o->b0_threshold = 50.0;
    o->bad = NS_LIFE_BAD_ERROR;
    o->nodes = NS_LIFE_NODES_SUM;
}

typedef struct builder {
    const char *dwi_path, *tracks_path; /* file paths, or the argument names "dwi", "tracks" */
    const ns_life_build_options *o;
    const ns_nifti_t *img;      /* the image from a file, or NULL */
    const ns_life_image *arr;   /* the image in memory, or NULL */
    ns_tracts_t *t;             /* the tractogram from a file, or NULL */
    const ns_life_streamlines *sl; /* the streamlines in memory, or NULL */
    int64_t sl_next;            /* next streamline of sl */
    const ns_nifti_info *info;
    int64_t nx, ny, nz;
    double inv[3][4];     /* world -> voxel */
    double vsize[3];      /* voxel sizes [mm]: column norms of the affine */
    int32_t n_atoms;
    int32_t threads;      /* for the keys of a batch (resolved from options.threads) */
    ns_life_build_stats *st;
} builder;

/* A batch of streamlines read in order; their keys are computed in parallel (each streamline's
 * keys depend on it alone) and then consumed in order, so the model is the same for every
 * thread count. */
#define BATCH_STREAMLINES 4096
#define BATCH_NODES (1 << 20)
typedef struct batch {
    int64_t n, cap_n, nodes, cap_nodes;
    int64_t *off;     /* n + 1 node offsets */
    double *pts, *vox; /* 3 per node: the points as read, in voxel coordinates */
    uint64_t *keys;   /* from off[i]: streamline i's sorted keys (voxel * n_atoms + atom per kept node) */
    int64_t *m, *outside, *zero; /* per streamline: keys, nodes outside, nodes without orientation */
    int *drop, *bad;  /* dropped by the policy; failed (the error is raised again in order) */
} batch;

static void batch_free(batch *t) {
    free(t->off), free(t->pts), free(t->vox), free(t->keys), free(t->m), free(t->outside), free(t->zero);
    free(t->drop), free(t->bad);
    memset(t, 0, sizeof *t);
}

static int64_t lin_of(const builder *b, int64_t i, int64_t j, int64_t k) { return i + b->nx * (j + b->ny * k); }

/* An element of an array image as a double. */
static double arr_value(const ns_life_image *a, int64_t i, int64_t j, int64_t k, int64_t t) {
    const int64_t e = i * a->stride[0] + j * a->stride[1] + k * a->stride[2] + t * a->stride[3];
    switch (a->datatype) {
    case 2: return ((const uint8_t *)a->data)[e];
    case 4: return ((const int16_t *)a->data)[e];
    case 8: return ((const int32_t *)a->data)[e];
    case 16: return ((const float *)a->data)[e];
    case 64: return ((const double *)a->data)[e];
    case 256: return ((const int8_t *)a->data)[e];
    case 512: return ((const uint16_t *)a->data)[e];
    case 768: return ((const uint32_t *)a->data)[e];
    case 1024: return (double)((const int64_t *)a->data)[e];
    default: return (double)((const uint64_t *)a->data)[e]; /* 1280, checked before */
    }
}

/* The value of voxel (i, j, k) in volume t. */
static double img_value(const builder *b, int64_t i, int64_t j, int64_t k, int64_t t) {
    if (b->arr) return arr_value(b->arr, i, j, k, t);
    return ns_nifti_value(b->img, lin_of(b, i, j, k) + t * b->nx * b->ny * b->nz);
}

/* The streamline source: a file read streaming, or packed arrays. */
static ns_status src_next(builder *b, const double **pts, int64_t *n, int *end) {
    if (b->t) return ns_tracts_next(b->t, pts, n, end);
    if (b->sl_next >= b->sl->n) {
        *pts = NULL, *n = 0, *end = 1;
        return NS_OK;
    }
    const int64_t s = b->sl_next++;
    *pts = b->sl->points + 3 * b->sl->offset[s];
    *n = b->sl->offset[s + 1] - b->sl->offset[s];
    *end = 0;
    return NS_OK;
}

static int64_t src_index(const builder *b) { return b->t ? ns_tracts_index(b->t) : b->sl_next; }

static void src_progress(const builder *b, uint64_t *done, uint64_t *total) {
    if (b->t) {
        ns_tracts_progress(b->t, done, total);
        return;
    }
    if (done) *done = (uint64_t)b->sl_next;
    if (total) *total = (uint64_t)b->sl->n;
}

static ns_status src_rewind(builder *b) {
    if (b->t) return ns_tracts_rewind(b->t);
    b->sl_next = 0;
    return NS_OK;
}

static int cmp_u64(const void *a, const void *b) {
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

ns_status ns_life_invert_affine(const char *path, const double A[4][4], double inv[3][4]) {
    const double a = A[0][0], b = A[0][1], c = A[0][2], d = A[1][0], e = A[1][1], f = A[1][2], g = A[2][0],
                 h = A[2][1], k = A[2][2];
    const double det = a * (e * k - f * h) - b * (d * k - f * g) + c * (d * h - e * g);
    if (fabs(det) < 1e-12) return ns_fail(NS_ERR_PARSE, "%s: singular voxel-to-world affine", path);
    const double R[3][3] = {{(e * k - f * h) / det, (c * h - b * k) / det, (b * f - c * e) / det},
                            {(f * g - d * k) / det, (a * k - c * g) / det, (c * d - a * f) / det},
                            {(d * h - e * g) / det, (b * g - a * h) / det, (a * e - b * d) / det}};
    for (int r = 0; r < 3; ++r) {
        for (int cc = 0; cc < 3; ++cc) inv[r][cc] = R[r][cc];
        inv[r][3] = -(R[r][0] * A[0][3] + R[r][1] * A[1][3] + R[r][2] * A[2][3]);
    }
    return NS_OK;
}

/* The keys of one streamline's kept nodes, sorted; *n_keys = 0 and *drop = 1
 * when the policy drops the whole streamline. */
static ns_status streamline_keys(const builder *b, const double *pts, int64_t n, int64_t s_idx, double *vox,
                                 uint64_t *keys, int64_t *n_keys, int *drop, int64_t *outside, int64_t *zero) {
    *n_keys = 0, *drop = 0, *outside = 0, *zero = 0;
    if (n < 2) {
        if (b->o->bad == NS_LIFE_BAD_SKIP) {
            *drop = 1;
            return NS_OK;
        }
        return ns_fail(NS_ERR_PARSE, "%s: streamline %lld has %lld point%s; LiFE needs at least 2 (an orientation)",
                       b->tracks_path, (long long)s_idx, (long long)n, n == 1 ? "" : "s");
    }
    for (int64_t i = 0; i < n; ++i)
        for (int r = 0; r < 3; ++r)
            vox[3 * i + r] = b->inv[r][0] * pts[3 * i] + b->inv[r][1] * pts[3 * i + 1] +
                                b->inv[r][2] * pts[3 * i + 2] + b->inv[r][3];
    int64_t m = 0;
    for (int64_t i = 0; i < n; ++i) {
        const double *p = vox + 3 * i;
        /* nearest voxel centre; numpy's round (half to even), as DIPY */
        const double ri = nearbyint(p[0]), rj = nearbyint(p[1]), rk = nearbyint(p[2]);
        if (!(ri >= 0 && rj >= 0 && rk >= 0 && ri < b->nx && rj < b->ny && rk < b->nz)) {
            if (b->o->bad == NS_LIFE_BAD_SKIP) {
                ++*outside;
                continue;
            }
            return ns_fail(NS_ERR_PARSE, "%s: streamline %lld, node %lld at world (%.2f, %.2f, %.2f) mm = voxel "
                           "(%.2f, %.2f, %.2f) lies outside the %lld x %lld x %lld image of %s",
                           b->tracks_path, (long long)s_idx, (long long)i, pts[3 * i], pts[3 * i + 1], pts[3 * i + 2],
                           p[0], p[1], p[2], (long long)b->nx, (long long)b->ny, (long long)b->nz, b->dwi_path);
        }
        /* MATLAB's gradient: central differences inside, one-sided at the ends,
         * in voxel units, then to millimetres along the voxel axes. */
        const double *lo = vox + 3 * (i > 0 ? i - 1 : 0), *hi = vox + 3 * (i < n - 1 ? i + 1 : n - 1);
        const double h = (i > 0 && i < n - 1) ? 0.5 : 1.0;
        double g[3];
        for (int r = 0; r < 3; ++r) g[r] = (hi[r] - lo[r]) * h * b->vsize[r];
        if (!(g[0] * g[0] + g[1] * g[1] + g[2] * g[2] > 0)) {
            ++*zero;
            continue;
        }
        const int32_t atom = ns_life_orientation_atom(b->o->dictionary_l, g);
        keys[m++] = (uint64_t)lin_of(b, (int64_t)ri, (int64_t)rj, (int64_t)rk) * (uint64_t)b->n_atoms + (uint64_t)atom;
    }
    if (m == 0) {
        if (b->o->bad == NS_LIFE_BAD_SKIP) {
            *drop = 1;
            return NS_OK;
        }
        return ns_fail(NS_ERR_PARSE, "%s: streamline %lld has no node with an orientation (all points coincide)",
                       b->tracks_path, (long long)s_idx);
    }
    qsort(keys, (size_t)m, sizeof *keys, cmp_u64);
    *n_keys = m;
    return NS_OK;
}

/* Reads up to BATCH_STREAMLINES streamlines (or BATCH_NODES nodes, at least one streamline);
 * t->n = 0 at the end of the tractogram. */
static ns_status batch_fill(builder *b, batch *t) {
    t->n = 0, t->nodes = 0;
    for (;;) {
        if (t->n >= BATCH_STREAMLINES || t->nodes >= BATCH_NODES) return NS_OK;
        const double *pts;
        int64_t n;
        int end;
        ns_status s = src_next(b, &pts, &n, &end);
        if (s != NS_OK || end) return s;
        if (t->n + 1 >= t->cap_n) {
            const int64_t cap = t->cap_n ? 2 * t->cap_n : BATCH_STREAMLINES + 1;
            int64_t *off = realloc(t->off, (size_t)cap * sizeof *off);
            if (off) t->off = off;
            int64_t *m = off ? realloc(t->m, (size_t)cap * sizeof *m) : NULL;
            if (m) t->m = m;
            int64_t *o = m ? realloc(t->outside, (size_t)cap * sizeof *o) : NULL;
            if (o) t->outside = o;
            int64_t *z = o ? realloc(t->zero, (size_t)cap * sizeof *z) : NULL;
            if (z) t->zero = z;
            int *d = z ? realloc(t->drop, (size_t)cap * sizeof *d) : NULL;
            if (d) t->drop = d;
            int *x = d ? realloc(t->bad, (size_t)cap * sizeof *x) : NULL;
            if (x) t->bad = x;
            if (!x) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: streamline batch", b->tracks_path);
            t->cap_n = cap;
        }
        if (t->nodes + n > t->cap_nodes) {
            int64_t cap = t->cap_nodes ? t->cap_nodes : BATCH_NODES;
            while (cap < t->nodes + n) cap *= 2;
            double *p = realloc(t->pts, (size_t)cap * 3 * sizeof *p);
            if (p) t->pts = p;
            double *v = p ? realloc(t->vox, (size_t)cap * 3 * sizeof *v) : NULL;
            if (v) t->vox = v;
            uint64_t *k = v ? realloc(t->keys, (size_t)cap * sizeof *k) : NULL;
            if (k) t->keys = k;
            if (!k) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: streamline batch of %lld points", b->tracks_path,
                                   (long long)(t->nodes + n));
            t->cap_nodes = cap;
        }
        if (t->n == 0) t->off[0] = 0;
        if (n > 0) memcpy(t->pts + 3 * t->nodes, pts, (size_t)n * 3 * sizeof *pts);
        t->nodes += n;
        t->off[++t->n] = t->nodes;
    }
}

/* The keys of every streamline of the batch, on b->threads threads; first = the index of the
 * batch's first streamline. A streamline that fails is marked bad (its message, set on a worker
 * thread, is raised again on the caller's by batch_error). */
static void batch_keys(const builder *b, batch *t, int64_t first) {
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 16) num_threads(b->threads) if (b->threads > 1 && t->n > 16)
#endif
    for (int64_t i = 0; i < t->n; ++i) {
        const int64_t o = t->off[i];
        t->bad[i] = streamline_keys(b, t->pts + 3 * o, t->off[i + 1] - o, first + i, t->vox + 3 * o, t->keys + o,
                                    &t->m[i], &t->drop[i], &t->outside[i], &t->zero[i]) != NS_OK;
    }
}

static ns_status batch_error(const builder *b, batch *t, int64_t i, int64_t idx) {
    const int64_t o = t->off[i];
    int64_t m, out, zero;
    int drop;
    ns_status s = streamline_keys(b, t->pts + 3 * o, t->off[i + 1] - o, idx, t->vox + 3 * o, t->keys + o, &m, &drop,
                                  &out, &zero);
    return s != NS_OK ? s : ns_fail(NS_ERR_INTERNAL, "streamline %lld failed on a worker thread only", (long long)idx);
}

static int64_t distinct(const uint64_t *k, int64_t m) {
    int64_t d = m > 0;
    for (int64_t i = 1; i < m; ++i) d += k[i] != k[i - 1];
    return d;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

typedef struct pass_state {
    uint64_t next_report, step;
} pass_state;

static ns_status report(const builder *b, int pass, pass_state *ps, int final) {
    if (!b->o->progress) return NS_OK;
    uint64_t done = 0, total = 0;
    src_progress(b, &done, &total);
    if (!final && done < ps->next_report) return NS_OK;
    ps->next_report = done + ps->step;
    if (b->o->progress(pass, src_index(b), done, total, b->o->progress_context))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: model build cancelled by the progress callback", b->tracks_path);
    return NS_OK;
}

static ns_status dictionary(const builder *b, const ns_gradients *gr, const int32_t *dwi, ns_life_model_t *m) {
    const int32_t T = m->n_theta;
    const double ax = b->o->axial_diffusivity, rad = b->o->radial_diffusivity;
    for (int32_t a = 0; a < m->n_atoms; ++a) {
        double u[3];
        ns_life_atom_orientation(b->o->dictionary_l, a, u);
        double *col = m->D + (int64_t)a * T, mean = 0;
        for (int32_t t = 0; t < T; ++t) {
            const double *g = gr->bvecs + 3 * dwi[t];
            const double c = g[0] * u[0] + g[1] * u[1] + g[2] * u[2];
            /* g' R diag(ax, rad, rad) R' g for a unit g; b in ms/um^2 */
            col[t] = exp(-gr->bvals[dwi[t]] * 1e-3 * (ax * c * c + rad * (1.0 - c * c)));
            mean += col[t];
        }
        mean /= T;
        for (int32_t t = 0; t < T; ++t) col[t] -= mean;
    }
    return NS_OK;
}

static ns_status signals(const builder *b, const ns_gradients *gr, const int32_t *dwi, const int32_t *b0,
                         int32_t n_b0, ns_life_built_t *out) {
    ns_life_model_t *m = out->model;
    const int32_t T = m->n_theta;
    (void)gr;
    for (int32_t v = 0; v < m->n_voxels; ++v) {
        const int32_t *ijk = out->ijk + 3 * (int64_t)v;
        double s0 = 0, mean = 0;
        for (int32_t q = 0; q < n_b0; ++q) s0 += img_value(b, ijk[0], ijk[1], ijk[2], b0[q]);
        s0 /= n_b0;
        double *y = m->Y + (int64_t)v * T;
        for (int32_t t = 0; t < T; ++t) mean += y[t] = img_value(b, ijk[0], ijk[1], ijk[2], dwi[t]);
        mean /= T;
        if (!isfinite(s0) || !isfinite(mean))
            return ns_fail(NS_ERR_NOT_FINITE, "%s: voxel (%d, %d, %d) has a NaN or Inf value", b->dwi_path, ijk[0],
                           ijk[1], ijk[2]);
        for (int32_t t = 0; t < T; ++t) y[t] -= mean;
        out->s0[v] = s0;
    }
    return NS_OK;
}

/* Checks the image against the gradient table and splits the volumes. */
static ns_status volumes(const char *dwi_path, const char *bvals_path, const char *bvecs_path, const ns_nifti_info *info,
                         const ns_gradients *gr, double thr, int32_t **b0, int32_t *n_b0, int32_t **dwi,
                         int32_t *n_dwi) {
    if (info->ndim < 4 || info->dim[3] < 2)
        return ns_fail(NS_ERR_SIZE, "%s: a diffusion image needs 4 dimensions with >= 2 volumes (dim = %lld x %lld x %lld x %lld)",
                       dwi_path, (long long)info->dim[0], (long long)info->dim[1], (long long)info->dim[2],
                       (long long)info->dim[3]);
    for (int i = 4; i < 7; ++i)
        if (info->dim[i] != 1) return ns_fail(NS_ERR_SIZE, "%s: dimension %d has size %lld; expected 4-D data", dwi_path, i + 1,
                                              (long long)info->dim[i]);
    if (gr->n != info->dim[3])
        return ns_fail(NS_ERR_SIZE, "%s has %d gradient entries but %s has %lld volumes", bvals_path, (int)gr->n, dwi_path,
                       (long long)info->dim[3]);
    *b0 = malloc((size_t)gr->n * sizeof **b0), *dwi = malloc((size_t)gr->n * sizeof **dwi);
    if (!*b0 || !*dwi) return ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient table");
    *n_b0 = *n_dwi = 0;
    for (int32_t i = 0; i < gr->n; ++i) {
        if (gr->bvals[i] <= thr) {
            (*b0)[(*n_b0)++] = i;
            continue;
        }
        double *g = gr->bvecs + 3 * i;
        const double len = sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
        if (!(len > 1e-6))
            return ns_fail(NS_ERR_PARSE, "%s: volume %d has b = %g s/mm^2 (%s) but a zero gradient direction",
                           bvecs_path, i, gr->bvals[i], bvals_path);
        for (int r = 0; r < 3; ++r) g[r] /= len; /* FSL vectors are unit up to rounding */
        (*dwi)[(*n_dwi)++] = i;
    }
    if (*n_b0 == 0)
        return ns_fail(NS_ERR_SIZE, "%s: no b = 0 volume (b <= %g s/mm^2): S0 is undefined", bvals_path, thr);
    if (*n_dwi < 2) return ns_fail(NS_ERR_SIZE, "%s: %d diffusion-weighted volume(s); LiFE needs at least 2", bvals_path, (int)*n_dwi);
    return NS_OK;
}

/* Threads for the keys: as given, else OpenMP's default capped by the processors this process
 * may run on (never oversubscribed). */
static int32_t build_threads(int32_t requested) {
#ifdef _OPENMP
    if (requested > 0) return requested;
    int nt = omp_get_max_threads();
    const int procs = omp_get_num_procs();
    if (procs > 0 && nt > procs) nt = procs;
    return nt < 1 ? 1 : (int32_t)nt;
#else
    (void)requested;
    return 1;
#endif
}

static ns_status check_options(const ns_life_build_options *o) {
    if (o->threads < 0) return ns_fail(NS_ERR_INVALID_ARGUMENT, "threads = %d must be >= 0 (0: the default)", (int)o->threads);
    if (o->dictionary_l < 2 || o->dictionary_l > 4096)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "dictionary L = %d must be in [2, 4096]", (int)o->dictionary_l);
    if (!(o->axial_diffusivity >= 0) || !(o->radial_diffusivity >= 0) || !isfinite(o->axial_diffusivity) ||
        !isfinite(o->radial_diffusivity))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "diffusivities must be finite and >= 0");
    if (!(o->b0_threshold >= 0)) return ns_fail(NS_ERR_INVALID_ARGUMENT, "b0 threshold must be >= 0");
    if (o->bad != NS_LIFE_BAD_ERROR && o->bad != NS_LIFE_BAD_SKIP)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "unknown bad-input policy %d", (int)o->bad);
    if (o->nodes != NS_LIFE_NODES_SUM && o->nodes != NS_LIFE_NODES_MEAN)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "unknown node combination %d (sum 0, mean 1)", (int)o->nodes);
    return NS_OK;
}

static ns_status run(builder *b, const ns_gradients *gr, const int32_t *b0, int32_t n_b0,
                     const int32_t *dwi, int32_t n_dwi, ns_life_built_t *out) {
    ns_life_build_stats *st = &out->stats;
    const int64_t nvox3 = b->nx * b->ny * b->nz;
    int32_t *map = malloc((size_t)nvox3 * sizeof *map); /* image voxel -> model voxel, -1 untouched */
    int64_t *per = NULL, n_per = 0, cap_per = 0;    /* pass 1: coefficients per streamline, -1 dropped */
    if (!map) return ns_fail(NS_ERR_OUT_OF_MEMORY, "voxel map of %lld voxels", (long long)nvox3);
    for (int64_t i = 0; i < nvox3; ++i) map[i] = -1;
    ns_status s = NS_OK;
    pass_state ps = {0, 0};
    uint64_t total = 0;
    src_progress(b, NULL, &total);
    ps.step = total / 100 + 1;
    int64_t n_coeffs = 0, n_fibers = 0;
    /* pass 1 */
    batch bt;
    memset(&bt, 0, sizeof bt);
    for (int64_t first = 0; s == NS_OK;) {
        if ((s = batch_fill(b, &bt)) != NS_OK || bt.n == 0) break;
        batch_keys(b, &bt, first);
        for (int64_t i = 0; i < bt.n; ++i) {
            const int64_t idx = first + i;
            if (bt.bad[i]) { s = batch_error(b, &bt, i, idx); break; }
            if (n_per == cap_per) {
                cap_per = cap_per ? 2 * cap_per : 4096;
                int64_t *p = realloc(per, (size_t)cap_per * sizeof *p);
                if (!p) { s = ns_fail(NS_ERR_OUT_OF_MEMORY, "streamline table"); break; }
                per = p;
            }
            st->nodes_outside += bt.outside[i], st->nodes_zero_gradient += bt.zero[i];
            if (bt.drop[i]) {
                per[n_per++] = -1;
                ++st->streamlines_dropped;
            } else {
                const uint64_t *keys = bt.keys + bt.off[i];
                const int64_t m = bt.m[i], d = distinct(keys, m);
                per[n_per++] = d;
                n_coeffs += d, ++n_fibers, st->nodes += m;
                for (int64_t j = 0; j < m; ++j) map[keys[j] / (uint64_t)b->n_atoms] = 0;
            }
            if ((s = report(b, 1, &ps, 0)) != NS_OK) break;
        }
        first += bt.n;
    }
    if (s == NS_OK) s = report(b, 1, &ps, 1);
    st->streamlines = n_per;
    if (s == NS_OK && n_per == 0) s = ns_fail(NS_ERR_EMPTY, "%s: the tractogram holds no streamline", b->tracks_path);
    else if (s == NS_OK && n_fibers == 0)
        s = ns_fail(NS_ERR_EMPTY, "%s: none of the %lld streamlines has a node inside the image of %s", b->tracks_path,
                    (long long)n_per, b->dwi_path);
    else if (s == NS_OK && n_fibers > INT32_MAX) s = ns_fail(NS_ERR_SIZE, "%s: more than 2^31 streamlines", b->tracks_path);
    int64_t n_voxels = 0;
    if (s == NS_OK) {
        for (int64_t i = 0; i < nvox3; ++i)
            if (map[i] == 0) map[i] = (int32_t)n_voxels++;
        if (n_voxels > INT32_MAX) s = ns_fail(NS_ERR_SIZE, "more than 2^31 voxels");
    }
    if (s == NS_OK)
        s = ns_life_model_create(n_dwi, (int32_t)((int64_t)(b->o->dictionary_l - 1) * b->o->dictionary_l + 1),
                                 (int32_t)n_voxels, (int32_t)n_fibers, n_coeffs, &out->model);
    if (s == NS_OK) {
        out->ijk = malloc((size_t)n_voxels * 3 * sizeof *out->ijk);
        out->s0 = malloc((size_t)n_voxels * sizeof *out->s0);
        out->streamline = malloc((size_t)n_fibers * sizeof *out->streamline);
        if (!out->ijk || !out->s0 || !out->streamline) s = ns_fail(NS_ERR_OUT_OF_MEMORY, "model voxel tables");
    }
    if (s == NS_OK) {
        for (int64_t i = 0; i < nvox3; ++i)
            if (map[i] >= 0) {
                int32_t *q = out->ijk + 3 * (int64_t)map[i];
                q[0] = (int32_t)(i % b->nx), q[1] = (int32_t)(i / b->nx % b->ny), q[2] = (int32_t)(i / (b->nx * b->ny));
            }
        s = dictionary(b, gr, dwi, out->model);
    }
    if (s == NS_OK) s = signals(b, gr, dwi, b0, n_b0, out);
    if (s == NS_OK) s = src_rewind(b);
    /* pass 2 */
    ps.next_report = 0;
    int64_t k = 0, f = 0, idx = 0;
    ns_life_model_t *M = out->model;
    while (s == NS_OK) {
        if ((s = batch_fill(b, &bt)) != NS_OK || bt.n == 0) break;
        batch_keys(b, &bt, idx);
        for (int64_t i = 0; i < bt.n; ++i) {
            if (bt.bad[i]) { s = batch_error(b, &bt, i, idx); break; }
            const uint64_t *keys = bt.keys + bt.off[i];
            const int64_t m = bt.m[i];
            const int drop = bt.drop[i];
            if (idx >= n_per || (drop ? per[idx] != -1 : per[idx] != distinct(keys, m))) {
                s = ns_fail(NS_ERR_IO, "%s: the file changed between the two passes (streamline %lld)", b->tracks_path,
                            (long long)idx);
                break;
            }
            if (!drop) {
                out->streamline[f] = idx;
                for (int64_t j = 0; j < m;) { /* one voxel: nodes j..e-1 */
                    const uint64_t lin = keys[j] / (uint64_t)b->n_atoms;
                    int64_t e = j;
                    while (e < m && keys[e] / (uint64_t)b->n_atoms == lin) ++e;
                    const int32_t v = map[lin];
                    for (int64_t r = j; r < e;) { /* one (voxel, atom): nodes r..q-1 */
                        int64_t q = r;
                        while (q < e && keys[q] == keys[r]) ++q;
                        M->atom[k] = (int32_t)(keys[r] % (uint64_t)b->n_atoms);
                        M->voxel[k] = v;
                        M->fiber[k] = (int32_t)f;
                        /* sum (original LiFE, DIPY): S0 x nodes; mean (ENCODE): / nodes in the voxel */
                        M->value[k] = b->o->nodes == NS_LIFE_NODES_MEAN ? out->s0[v] * (double)(q - r) / (double)(e - j)
                                                                        : out->s0[v] * (double)(q - r);
                        ++k, r = q;
                    }
                    j = e;
                }
                ++f;
            }
            ++idx;
            if ((s = report(b, 2, &ps, 0)) != NS_OK) break;
        }
    }
    batch_free(&bt);
    if (s == NS_OK) s = report(b, 2, &ps, 1);
    if (s == NS_OK && (idx != n_per || k != n_coeffs || f != n_fibers))
        s = ns_fail(NS_ERR_IO, "%s: the file changed between the two passes", b->tracks_path);
    st->fibers = n_fibers;
    free(map);
    free(per);
    return s;
}

/* The build once the inputs are at hand (b->img or b->arr with b->info, the
 * gradient table, the streamlines: b->sl, or the file `open_tracks`, opened
 * after the image and the table have passed their checks). */
static ns_status build_model(builder *b, const char *bvals_name, const char *bvecs_name, ns_gradients *gr,
                             const char *open_tracks, ns_life_built_t *r) {
    const ns_life_build_options *o = b->o;
    int32_t *b0 = NULL, *dwi = NULL, n_b0 = 0, n_dwi = 0;
    ns_status s = volumes(b->dwi_path, bvals_name, bvecs_name, b->info, gr, o->b0_threshold, &b0, &n_b0, &dwi, &n_dwi);
    if (s == NS_OK) {
        b->nx = b->info->dim[0], b->ny = b->info->dim[1], b->nz = b->info->dim[2];
        for (int c = 0; c < 3; ++c) {
            const double (*A)[4] = b->info->affine;
            b->vsize[c] = sqrt(A[0][c] * A[0][c] + A[1][c] * A[1][c] + A[2][c] * A[2][c]);
        }
        b->n_atoms = (o->dictionary_l - 1) * o->dictionary_l + 1;
        b->threads = build_threads(o->threads);
        r->stats.n_b0 = n_b0, r->stats.n_dwi = n_dwi;
        r->stats.grid[0] = b->nx, r->stats.grid[1] = b->ny, r->stats.grid[2] = b->nz;
        s = ns_life_invert_affine(b->dwi_path, b->info->affine, b->inv);
    }
    if (s == NS_OK && b->sl && b->sl->to_world) { /* points -> world -> voxel in one matrix */
        const double *T = b->sl->to_world;
        double m[3][4];
        for (int rr = 0; rr < 3; ++rr)
            for (int c = 0; c < 4; ++c)
                m[rr][c] = b->inv[rr][0] * T[c] + b->inv[rr][1] * T[4 + c] + b->inv[rr][2] * T[8 + c] +
                           (c == 3 ? b->inv[rr][3] : 0.0);
        memcpy(b->inv, m, sizeof m);
    }
    if (s == NS_OK && open_tracks) s = ns_tracts_open(open_tracks, &b->t);
    if (s == NS_OK) s = run(b, gr, b0, n_b0, dwi, n_dwi, r);
    if (s == NS_OK) {
        r->n_streamlines = r->stats.streamlines;
        const ns_life_model_t *m = r->model;
        r->stats.peak_model_bytes = (double)m->n_coeffs * 20.0 + 8.0 * m->n_theta * ((double)m->n_atoms + m->n_voxels);
        s = ns_life_model_validate(r->model);
    }
    ns_tracts_close(b->t);
    b->t = NULL;
    free(b0);
    free(dwi);
    return s;
}

/* The end of both builds: the gradients freed, the time taken, r handed
 * out on success (destroyed otherwise). */
static ns_status finish(ns_status s, ns_gradients *gr, double t0, ns_life_built_t *r, ns_life_built_t **out) {
    ns_gradients_free(gr);
    r->stats.seconds = now() - t0;
    if (s != NS_OK) {
        ns_life_built_destroy(r);
        return s;
    }
    *out = r;
    return NS_OK;
}

ns_status ns_life_build(const char *dwi_path, const char *bvals_path, const char *bvecs_path, const char *tracks_path,
                        const ns_life_build_options *options, ns_life_built_t **out) {
    if (!dwi_path || !bvals_path || !bvecs_path || !tracks_path || !out)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_build: NULL argument");
    *out = NULL;
    ns_life_build_options defaults;
    ns_life_build_options_init(&defaults);
    const ns_life_build_options *o = options ? options : &defaults;
    ns_status s = check_options(o);
    if (s != NS_OK) return s;
    const double t0 = now();
    ns_life_built_t *r = calloc(1, sizeof *r);
    if (!r) return ns_fail(NS_ERR_OUT_OF_MEMORY, "ns_life_build");
    r->options = *o;
    r->options.progress = NULL, r->options.progress_context = NULL;
    ns_nifti_t *img = NULL;
    ns_gradients gr = {0, NULL, NULL};
    builder b;
    memset(&b, 0, sizeof b);
    b.dwi_path = dwi_path, b.tracks_path = tracks_path, b.o = o, b.st = &r->stats;
    s = ns_life_built_set_sources(r, dwi_path, bvals_path, bvecs_path, tracks_path);
    if (s == NS_OK) s = ns_nifti_read(dwi_path, &img);
    if (s == NS_OK) s = ns_gradients_read(bvals_path, bvecs_path, &gr);
    if (s == NS_OK) {
        b.img = img, b.info = ns_nifti_get_info(img);
        s = build_model(&b, bvals_path, bvecs_path, &gr, tracks_path, r);
    }
    ns_nifti_destroy(img);
    return finish(s, &gr, t0, r, out);
}

static int finite_affine(const double *A) {
    for (int i = 0; i < 16; ++i)
        if (!isfinite(A[i])) return 0;
    return A[12] == 0 && A[13] == 0 && A[14] == 0 && A[15] == 1;
}

/* The arrays' own checks (the shared ones follow in build_model). */
static ns_status check_arrays(const ns_life_image *dwi, const double *bvals, const double *bvecs, int32_t n_volumes,
                              const ns_life_streamlines *tracks) {
    if (!dwi || !dwi->data) return ns_fail(NS_ERR_INVALID_ARGUMENT, "dwi: no image (NULL)");
    if (!bvals) return ns_fail(NS_ERR_INVALID_ARGUMENT, "bvals: NULL");
    if (!bvecs) return ns_fail(NS_ERR_INVALID_ARGUMENT, "bvecs: NULL");
    if (!tracks) return ns_fail(NS_ERR_INVALID_ARGUMENT, "tracks: NULL");
    if (!ns_nifti_datatype_name(dwi->datatype))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "dwi: datatype %d is not one of the real types neurosolve reads "
                       "(NIfTI codes 2, 4, 8, 16, 64, 256, 512, 768, 1024, 1280)", (int)dwi->datatype);
    for (int c = 0; c < 4; ++c)
        if (dwi->dim[c] < 1)
            return ns_fail(NS_ERR_SIZE, "dwi: dimension %d has size %lld", c, (long long)dwi->dim[c]);
    if (dwi->dim[0] > INT32_MAX || dwi->dim[1] > INT32_MAX || dwi->dim[2] > INT32_MAX ||
        (double)dwi->dim[0] * (double)dwi->dim[1] * (double)dwi->dim[2] > 4e18)
        return ns_fail(NS_ERR_SIZE, "dwi: %lld x %lld x %lld voxels is too large", (long long)dwi->dim[0],
                       (long long)dwi->dim[1], (long long)dwi->dim[2]);
    if (!finite_affine(&dwi->affine[0][0]))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "dwi: the affine must be finite with last row 0 0 0 1");
    if (n_volumes != dwi->dim[3])
        return ns_fail(NS_ERR_SIZE, "bvals has %d entries but dwi has %lld volumes", (int)n_volumes,
                       (long long)dwi->dim[3]);
    for (int32_t i = 0; i < n_volumes; ++i) {
        if (!isfinite(bvals[i]) || bvals[i] < 0)
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "bvals: entry %d is %g; b-values must be finite and >= 0", (int)i,
                           bvals[i]);
        for (int c = 0; c < 3; ++c)
            if (!isfinite(bvecs[3 * i + c]))
                return ns_fail(NS_ERR_NOT_FINITE, "bvecs: row %d is not finite", (int)i);
    }
    if (tracks->n < 0) return ns_fail(NS_ERR_INVALID_ARGUMENT, "tracks: %lld streamlines", (long long)tracks->n);
    if (tracks->n > 0 && !tracks->offset) return ns_fail(NS_ERR_INVALID_ARGUMENT, "tracks: offset is NULL");
    if (tracks->n > 0 && tracks->offset[0] != 0)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "tracks: offset[0] = %lld, expected 0", (long long)tracks->offset[0]);
    for (int64_t s = 0; s < tracks->n; ++s)
        if (tracks->offset[s + 1] < tracks->offset[s])
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "tracks: offset[%lld] = %lld is below offset[%lld] = %lld",
                           (long long)(s + 1), (long long)tracks->offset[s + 1], (long long)s,
                           (long long)tracks->offset[s]);
    const int64_t n_points = tracks->n > 0 ? tracks->offset[tracks->n] : 0;
    if (n_points > 0 && !tracks->points) return ns_fail(NS_ERR_INVALID_ARGUMENT, "tracks: points is NULL");
    for (int64_t s = 0; s < tracks->n; ++s)
        for (int64_t p = tracks->offset[s]; p < tracks->offset[s + 1]; ++p)
            if (!isfinite(tracks->points[3 * p]) || !isfinite(tracks->points[3 * p + 1]) ||
                !isfinite(tracks->points[3 * p + 2]))
                return ns_fail(NS_ERR_NOT_FINITE, "tracks: streamline %lld, point %lld is not finite", (long long)s,
                               (long long)(p - tracks->offset[s]));
    if (tracks->to_world && !finite_affine(tracks->to_world))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "tracks: to_world must be finite with last row 0 0 0 1");
    return NS_OK;
}

ns_status ns_life_build_arrays(const ns_life_image *dwi, const double *bvals, const double *bvecs, int32_t n_volumes,
                               const ns_life_streamlines *tracks, const ns_life_build_options *options,
                               ns_life_built_t **out) {
    if (!out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_build_arrays: out is NULL");
    *out = NULL;
    ns_status s = check_arrays(dwi, bvals, bvecs, n_volumes, tracks);
    if (s != NS_OK) return s;
    ns_life_build_options defaults;
    ns_life_build_options_init(&defaults);
    const ns_life_build_options *o = options ? options : &defaults;
    if ((s = check_options(o)) != NS_OK) return s;
    const double t0 = now();
    ns_life_built_t *r = calloc(1, sizeof *r);
    ns_gradients gr = {n_volumes, malloc((size_t)n_volumes * sizeof(double)), malloc((size_t)n_volumes * 3 * sizeof(double))};
    if (!r || !gr.bvals || !gr.bvecs) {
        free(r);
        ns_gradients_free(&gr);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "ns_life_build_arrays");
    }
    memcpy(gr.bvals, bvals, (size_t)n_volumes * sizeof(double));
    memcpy(gr.bvecs, bvecs, (size_t)n_volumes * 3 * sizeof(double)); /* normalised in place by volumes() */
    r->options = *o;
    r->options.progress = NULL, r->options.progress_context = NULL;
    ns_nifti_info info;
    memset(&info, 0, sizeof info);
    info.ndim = 4;
    for (int c = 0; c < 7; ++c) info.dim[c] = c < 4 ? dwi->dim[c] : 1;
    memcpy(info.affine, dwi->affine, sizeof info.affine);
    info.datatype = dwi->datatype;
    info.slope = 1, info.intercept = 0;
    info.n_values = dwi->dim[0] * dwi->dim[1] * dwi->dim[2] * dwi->dim[3];
    builder b;
    memset(&b, 0, sizeof b);
    b.dwi_path = "dwi", b.tracks_path = "tracks", b.o = o, b.st = &r->stats;
    b.arr = dwi, b.info = &info, b.sl = tracks;
    return finish(build_model(&b, "bvals", "bvecs", &gr, NULL, r), &gr, t0, r, out);
}
