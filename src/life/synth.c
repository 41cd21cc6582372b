/* Synthetic LiFE models with the structure of the paper's data (docs/life.md):
 * n_theta gradient directions spread over a hemisphere, ENCODE's orientation
 * dictionary with the stick model (demeaned per atom), streamlines traced as
 * smooth random curves along a smooth orientation field inside an ellipsoidal
 * "brain", one coefficient per run of nodes with the same voxel and atom,
 * voxels numbered in raster order, Y = M w_true (+ noise). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/error.h"
#include "core/pragma.h"
#include "core/rng.h"
#include "life/life_impl.h"
#include "neurosolve/life_io.h"

static const double pi = 3.14159265358979323846;

/* n points spread over the upper hemisphere (a Fibonacci spiral): the
 * stick signal is symmetric, so antipodal directions would repeat. */
static void directions(int32_t n, double *g) {
    const double golden = pi * (3.0 - sqrt(5.0));
    for (int32_t i = 0; i < n; ++i) {
        const double z = 1.0 - (i + 0.5) / n;
        const double r = sqrt(1.0 - z * z);
        g[3 * i] = r * cos(golden * i);
        g[3 * i + 1] = r * sin(golden * i);
        g[3 * i + 2] = z;
    }
}

/* The atom whose orientation is closest on the (L x L) angle grid to the
 * axis of unit vector d (sign-free). */
static int32_t nearest_atom(int32_t L, const double *d) {
    double x = d[0], y = d[1], z = d[2];
    if (y < 0 || (y == 0 && x < 0)) x = -x, y = -y, z = -z;
    const double step = pi / L;
    const double t = acos(z < -1 ? -1 : z > 1 ? 1 : z);
    const double p = atan2(y, x); /* [0, pi] */
    long j = lround(t / step), i = lround(p / step);
    if (i >= L) i = 0, j = L - j; /* p = pi is p = 0 with the axis mirrored */
    if (j <= 0 || j >= L) return 0;
    return (int32_t)(1 + i * (L - 1) + (j - 1));
}

static ns_status dictionary(const ns_life_synth_options *o, ns_life_model_t *m) {
    const int32_t T = o->n_theta;
    double *g = malloc((size_t)T * 3 * sizeof *g);
    if (!g) return ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient directions");
    directions(T, g);
    /* ENCODE stores b-values in ms/um^2 (s/mm^2 / 1000) and diffusivities in
     * um^2/ms; the stick tensor R diag(d, 0, 0) R^T gives exp(-b d (g.u)^2). */
    const double bd = o->b_value * 1e-3 * o->axial_diffusivity;
    NS_PRAGMA(omp parallel for schedule(static))
    for (int32_t a = 0; a < m->n_atoms; ++a) {
        double u[3];
        ns_life_atom_orientation(o->dictionary_l, a, u); /* ENCODE's grid (orient.c) */
        double *col = m->D + (int64_t)a * T;
        double mean = 0.0;
        for (int32_t t = 0; t < T; ++t) {
            const double c = g[3 * t] * u[0] + g[3 * t + 1] * u[1] + g[3 * t + 2] * u[2];
            col[t] = exp(-bd * c * c);
            mean += col[t];
        }
        mean /= T;
        for (int32_t t = 0; t < T; ++t) col[t] -= mean;
    }
    free(g);
    return NS_OK;
}

/* ------------------------------------------------------------- tracking */

typedef struct field {
    double k[3][3], phase[3];
} field;

/* A smooth orientation field with a wavelength of about a third of the
 * grid: nearby streamlines turn alike, so they form bundles. */
static void field_init(field *f, const int32_t *grid, uint64_t seed) {
    ns_rng r;
    ns_rng_seed(&r, seed, 0xF1E1Dull);
    const double span = (grid[0] + grid[1] + grid[2]) / 3.0;
    for (int c = 0; c < 3; ++c) {
        for (int j = 0; j < 3; ++j) f->k[c][j] = ns_rng_uniform(&r, -1.0, 1.0) * 2.0 * pi / (0.4 * span);
        f->phase[c] = ns_rng_uniform(&r, 0.0, 2.0 * pi);
    }
}

static void field_at(const field *f, const double *p, double *v) {
    for (int c = 0; c < 3; ++c)
        v[c] = sin(f->k[c][0] * p[0] + f->k[c][1] * p[1] + f->k[c][2] * p[2] + f->phase[c]);
}

static double gauss(ns_rng *r) {
    const double u1 = 1.0 - ns_rng_unit(r), u2 = ns_rng_unit(r);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * pi * u2);
}

static void normalize(double *d) {
    const double n = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    if (n > 0) d[0] /= n, d[1] /= n, d[2] /= n;
    else d[0] = 1.0, d[1] = 0.0, d[2] = 0.0;
}

typedef struct brain {
    int32_t grid[3];
    double c[3], r[3];
} brain;

static int inside(const brain *b, const double *p) {
    double s = 0.0;
    for (int j = 0; j < 3; ++j) {
        const double q = (p[j] - b->c[j]) / b->r[j];
        s += q * q;
    }
    return s < 1.0;
}

/* A growable per-thread list of coefficients (cell ids in voxel). */
typedef struct coeffs {
    int32_t *atom, *cell, *fiber;
    double *value;
    int64_t n, cap;
} coeffs;

static int push(coeffs *c, int32_t atom, int32_t cell, int32_t fiber, double value) {
    if (c->n == c->cap) {
        const int64_t cap = c->cap ? 2 * c->cap : 4096;
        int32_t *a = realloc(c->atom, (size_t)cap * sizeof *a);
        if (a) c->atom = a;
        int32_t *v = realloc(c->cell, (size_t)cap * sizeof *v);
        if (v) c->cell = v;
        int32_t *f = realloc(c->fiber, (size_t)cap * sizeof *f);
        if (f) c->fiber = f;
        double *x = realloc(c->value, (size_t)cap * sizeof *x);
        if (x) c->value = x;
        if (!a || !v || !f || !x) return 0;
        c->cap = cap;
    }
    c->atom[c->n] = atom;
    c->cell[c->n] = cell;
    c->fiber[c->n] = fiber;
    c->value[c->n] = value;
    ++c->n;
    return 1;
}

static int32_t cell_of(const brain *b, const double *p) {
    int32_t i[3];
    for (int j = 0; j < 3; ++j) {
        i[j] = (int32_t)floor(p[j]);
        if (i[j] < 0) i[j] = 0;
        if (i[j] >= b->grid[j]) i[j] = b->grid[j] - 1;
    }
    return (i[2] * b->grid[1] + i[1]) * b->grid[0] + i[0];
}

/* Per-voxel S0 (the non-diffusion-weighted signal) in [0.8, 1.2]. */
static double s0_of(int32_t cell, uint64_t seed) {
    return 0.8 + 0.4 * (double)(ns_rng_mix(seed ^ (0x5EEDull + (uint64_t)cell)) >> 11) *
                     (1.0 / 9007199254740992.0);
}

/* Trace one fiber both ways from a random start and append its
 * coefficients: runs of nodes in one voxel along one atom merge into one
 * coefficient of value S0 * path length [voxels]. */
static int trace_fiber(const ns_life_synth_options *o, const brain *b, const field *fl, int32_t f,
                       coeffs *out) {
    ns_rng r;
    ns_rng_seed(&r, o->seed, (uint64_t)f + 1);
    double p0[3];
    do {
        for (int j = 0; j < 3; ++j) p0[j] = b->c[j] + ns_rng_uniform(&r, -b->r[j], b->r[j]);
    } while (!inside(b, p0));
    double d0[3];
    field_at(fl, p0, d0);
    for (int j = 0; j < 3; ++j) d0[j] += 0.3 * gauss(&r);
    normalize(d0);
    const double length = o->mean_length * ns_rng_uniform(&r, 0.5, 1.5);
    const int32_t half = (int32_t)(0.5 * length / o->step) + 1;
    /* nodes: backward half (reversed) + forward half */
    double *nodes = malloc((size_t)(2 * half + 1) * 6 * sizeof *nodes);
    if (!nodes) return 0;
    int32_t nb = 0, nf = 0;
    double *back = nodes, *fwd = nodes + (size_t)(half + 1) * 6;
    for (int dir = 0; dir < 2; ++dir) {
        double p[3] = {p0[0], p0[1], p0[2]};
        double d[3] = {dir ? d0[0] : -d0[0], dir ? d0[1] : -d0[1], dir ? d0[2] : -d0[2]};
        double *list = dir ? fwd : back;
        int32_t *count = dir ? &nf : &nb;
        for (int32_t s = 0; s < half; ++s) {
            if (!inside(b, p)) break;
            if (dir == 1 || s > 0) { /* the start node once */
                double *q = list + (size_t)(*count) * 6;
                q[0] = p[0], q[1] = p[1], q[2] = p[2], q[3] = d[0], q[4] = d[1], q[5] = d[2];
                ++*count;
            }
            double v[3];
            field_at(fl, p, v);
            /* follow the field's axis (sign-free), plus a random turn */
            const double sgn = v[0] * d[0] + v[1] * d[1] + v[2] * d[2] < 0 ? -1.0 : 1.0;
            for (int j = 0; j < 3; ++j) d[j] += 0.08 * sgn * v[j] + o->curvature * gauss(&r);
            normalize(d);
            for (int j = 0; j < 3; ++j) p[j] += o->step * d[j];
        }
    }
    int32_t run_atom = -1, run_cell = -1;
    double run_len = 0.0;
    int ok = 1;
    for (int32_t n = 0; n < nb + nf && ok; ++n) {
        const double *q = n < nb ? back + (size_t)(nb - 1 - n) * 6 : fwd + (size_t)(n - nb) * 6;
        const int32_t cell = cell_of(b, q), atom = nearest_atom(o->dictionary_l, q + 3);
        if (cell == run_cell && atom == run_atom) {
            run_len += o->step;
            continue;
        }
        if (run_cell >= 0) ok = push(out, run_atom, run_cell, f, s0_of(run_cell, o->seed) * run_len);
        run_cell = cell, run_atom = atom, run_len = o->step;
    }
    if (ok && run_cell >= 0) ok = push(out, run_atom, run_cell, f, s0_of(run_cell, o->seed) * run_len);
    free(nodes);
    return ok;
}

ns_status ns_life_synth_options_check(const ns_life_synth_options *o) {
    if (!o) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_synth_options_check: NULL options");
    if (o->n_theta < 1 || o->n_theta > 4096)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "synth: n_theta = %d must be in [1, 4096]", (int)o->n_theta);
    if (o->dictionary_l < 2 || o->dictionary_l > 4096)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "synth: dictionary L = %d must be in [2, 4096]",
                       (int)o->dictionary_l);
    if (o->n_fibers < 1) return ns_fail(NS_ERR_EMPTY, "synth: n_fibers = %d must be >= 1", (int)o->n_fibers);
    for (int j = 0; j < 3; ++j)
        if (o->grid[j] < 3 || o->grid[j] > 2048)
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "synth: grid[%d] = %d must be in [3, 2048]", j,
                           (int)o->grid[j]);
    if ((double)o->grid[0] * o->grid[1] * o->grid[2] > 2e9)
        return ns_fail(NS_ERR_SIZE, "synth: grid of more than 2e9 cells");
    if (!(o->mean_length > 0) || !(o->step > 0) || !(o->curvature >= 0) || !(o->b_value >= 0) ||
        !(o->axial_diffusivity >= 0) || !(o->noise >= 0) || !(o->active_fraction >= 0) ||
        !(o->active_fraction <= 1) || !isfinite(o->mean_length) || !isfinite(o->noise) ||
        o->mean_length / o->step > 1e7)
        return ns_fail(NS_ERR_INVALID_ARGUMENT,
                       "synth: mean_length, step > 0, curvature, b, diffusivity, noise >= 0 and "
                       "active_fraction in [0, 1] required");
    return NS_OK;
}

ns_status ns_life_synth(const ns_life_synth_options *options, ns_life_model_t **out) {
    if (!out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_synth: out is NULL");
    *out = NULL;
    ns_life_synth_options o;
    if (options) o = *options;
    else ns_life_synth_options_init(&o);
    ns_status s = ns_life_synth_options_check(&o);
    if (s != NS_OK) return s;

    brain b;
    for (int j = 0; j < 3; ++j) {
        b.grid[j] = o.grid[j];
        b.c[j] = 0.5 * o.grid[j];
        b.r[j] = 0.5 * o.grid[j] - 0.5;
    }
    field fl;
    field_init(&fl, o.grid, o.seed);

    /* Contiguous blocks of fibers per thread, concatenated in thread order:
     * the result is in fiber order whatever the thread count. */
    int nt = 1;
#ifdef _OPENMP
    nt = omp_get_max_threads();
#endif
    if (nt > o.n_fibers) nt = o.n_fibers;
    coeffs *parts = calloc((size_t)nt, sizeof *parts);
    if (!parts) return ns_fail(NS_ERR_OUT_OF_MEMORY, "synth");
    int failed = 0;
    NS_PRAGMA(omp parallel for num_threads(nt) schedule(static, 1) reduction(| : failed))
    for (int p = 0; p < nt; ++p) {
        const int32_t lo = (int32_t)((int64_t)o.n_fibers * p / nt);
        const int32_t hi = (int32_t)((int64_t)o.n_fibers * (p + 1) / nt);
        for (int32_t f = lo; f < hi && !failed; ++f)
            if (!trace_fiber(&o, &b, &fl, f, &parts[p])) failed = 1;
    }
    int64_t total = 0;
    for (int p = 0; p < nt; ++p) total += parts[p].n;

    /* Cells touched -> voxels in raster order. */
    const int64_t cells = (int64_t)o.grid[0] * o.grid[1] * o.grid[2];
    int32_t *voxel_of = NULL;
    int32_t n_voxels = 0;
    if (!failed) {
        voxel_of = malloc((size_t)cells * sizeof *voxel_of);
        if (!voxel_of) failed = 1;
    }
    if (!failed) {
        for (int64_t c = 0; c < cells; ++c) voxel_of[c] = -1;
        for (int p = 0; p < nt; ++p)
            for (int64_t k = 0; k < parts[p].n; ++k) voxel_of[parts[p].cell[k]] = 0;
        for (int64_t c = 0; c < cells; ++c)
            if (voxel_of[c] == 0) voxel_of[c] = n_voxels++;
    }
    const int32_t n_atoms = (o.dictionary_l - 1) * o.dictionary_l + 1;
    ns_life_model_t *m = NULL;
    if (failed) s = ns_fail(NS_ERR_OUT_OF_MEMORY, "synth: coefficient lists");
    else s = ns_life_model_create(o.n_theta, n_atoms, n_voxels, o.n_fibers, total, &m);
    int64_t at = 0;
    for (int p = 0; p < nt; ++p) {
        if (s == NS_OK) {
            for (int64_t k = 0; k < parts[p].n; ++k) {
                m->atom[at + k] = parts[p].atom[k];
                m->voxel[at + k] = voxel_of[parts[p].cell[k]];
                m->fiber[at + k] = parts[p].fiber[k];
                m->value[at + k] = parts[p].value[k];
            }
            at += parts[p].n;
        }
        free(parts[p].atom);
        free(parts[p].cell);
        free(parts[p].fiber);
        free(parts[p].value);
    }
    free(parts);
    free(voxel_of);
    if (s == NS_OK) s = dictionary(&o, m);

    /* Known weights: a fraction of the fibers active with weights in [0.2, 1]. */
    if (s == NS_OK) {
        m->w_true = malloc((size_t)m->n_fibers * sizeof *m->w_true);
        if (!m->w_true) s = ns_fail(NS_ERR_OUT_OF_MEMORY, "true weights");
    }
    if (s == NS_OK) {
        for (int32_t f = 0; f < m->n_fibers; ++f) {
            ns_rng r;
            ns_rng_seed(&r, o.seed, 0x3E16u + ((uint64_t)f << 20));
            m->w_true[f] = ns_rng_unit(&r) < o.active_fraction ? ns_rng_uniform(&r, 0.2, 1.0) : 0.0;
        }
        ns_life_cpu_work work = {NULL, 0};
        s = ns_life_cpu_product(m, NS_LIFE_MW, NS_LIFE_VOXEL_VOXEL, 0, m->w_true, m->Y, &work);
        free(work.buf);
    }
    if (s == NS_OK && o.noise > 0) {
        const int64_t ny = (int64_t)m->n_theta * m->n_voxels;
        double ss = 0.0;
        for (int64_t i = 0; i < ny; ++i) ss += m->Y[i] * m->Y[i];
        const double sd = o.noise * sqrt(ss / (double)ny);
        NS_PRAGMA(omp parallel for schedule(static))
        for (int32_t v = 0; v < m->n_voxels; ++v) {
            ns_rng r;
            ns_rng_seed(&r, o.seed, 0x4015Eull + ((uint64_t)v << 16));
            for (int32_t t = 0; t < m->n_theta; ++t) m->Y[(int64_t)v * m->n_theta + t] += sd * gauss(&r);
        }
    }
    if (s != NS_OK) {
        ns_life_model_destroy(m);
        return s;
    }
    *out = m;
    return NS_OK;
}
