/* Extracellular potentials during a run: the coefficients of a probe over a
 * simulation's cells (placed and rotated), the transmembrane currents of the
 * sampled steps and their reduction into electrode potentials and dipole
 * moments; the CSD of a laminar probe. docs/extracellular.md. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/pragma.h"
#include "core/timer.h"
#include "lfp/lfp_impl.h"
#include "sim/sim_impl.h"

#ifdef _OPENMP
#include <omp.h>
#endif

struct ns_lfp {
    ns_sim_t *sim;
    ns_lfp_options o;
    int64_t n_el, n_comp, n_cells;
    double *M;        /* n_el x n_comp */
    double *mid;      /* 3 x n_comp: placed segment midpoints (the dipole's lever) */
    double *g;        /* n_comp: axial conductance to the parent [uS] */
    int64_t *parent;  /* n_comp: the parent's Flat index, -1 at a root */
    unsigned char *membrane; /* n_comp: 1 where the node has membrane */
    double *v, *imem; /* n_comp */
    double *ibuf;     /* n_comp x NS_LFP_BLOCK, the buffered samples' currents */
    int32_t nbuf;
    int64_t samples, cap;
    double *phi, *t, *P, *Pc;
    int32_t n_pop;    /* populations (1: none given) */
    int32_t *pop;     /* n_cells, NULL: none given */
    double *phi_pop;  /* samples x n_pop x n_el (populations given) */
    double *accp;     /* CPU flush with populations: n_pop x NS_LFP_BLOCK per thread */
    int32_t accp_threads;
    double *pcell;    /* n_cells x 3: the sample's per-cell dipoles */
    int64_t last_step;
    lfp_gpu *gpu;     /* a CUDA simulation: the sampler in its loop, the reduction on its GPU */
    int64_t rows;     /* GPU: samples per reduction */
    double *tot;      /* GPU: rows x (n_el + 3) */
    ns_lfp_storage storage;
    double *seg;      /* TILES: the placed segments, start (3 n), end (3 n), diam (n) */
    unsigned char *point; /* TILES: n, 1 where the segment is a point source */
    double *pts;      /* TILES: the contacts' points, pt_begin[e] .. pt_begin[e + 1] of contact e */
    int64_t *pt_begin;
    double setup_ms, sampling_ms; /* ns_lfp_timing */
    double *mmax;     /* F32 (CPU): n_el x chunks, the largest |M| of each chunk, / (1 - u) */
    double *cabs;     /* F32 (CPU): chunks x NS_LFP_BLOCK, each chunk's sum of |i| per buffered sample */
    double bound;     /* F32: ns_lfp_error_bound */
    int64_t pend_k0;  /* GPU: the first sample of the submitted reduction (ns_lfp_gpu_pending) */
    lfp_lowrank *lr;  /* LOWRANK: each cell's factors (lowrank.c) */
};

#define LFP_U 5.9604644775390625e-8 /* 2^-24: float's unit roundoff */

static const char *const STORAGE[5] = {"auto", "dense", "tiles", "f32", "lowrank"};

const char *ns_lfp_storage_name(ns_lfp_storage s) { return (unsigned)s < 5 ? STORAGE[s] : "?"; }

ns_lfp_storage ns_lfp_choose_storage(int64_t electrodes, int64_t compartments, int64_t free_bytes, int64_t max_bytes) {
    const int64_t bytes = ns_lfp_coefficient_bytes(electrodes, compartments);
    if (max_bytes <= 0) max_bytes = (int64_t)4 << 30;
    return bytes >= 0 && bytes <= max_bytes && bytes <= free_bytes / 2 ? NS_LFP_STORAGE_DENSE : NS_LFP_STORAGE_TILES;
}

int64_t ns_lfp_batch_rows(int64_t asked, int64_t every, int64_t free_bytes, int64_t sample_bytes) {
    if (asked > 0) return asked;
    int64_t k = NS_LFP_BATCH_MAX;
    if (every < 1) every = 1;
    const int64_t launch = (NS_SIM_GPU_LAUNCH_STEPS + every - 1) / every;
    if (launch < k) k = launch;
    const int64_t fit = sample_bytes > 0 ? (free_bytes > 0 ? free_bytes : 0) / 4 / sample_bytes : k;
    return fit < k ? fit : k;
}

void ns_lfp_options_init(ns_lfp_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->method = NS_LFP_LINESOURCE;
    o->sigma = 0.3;
    o->every = 1;
}

#define LFP_GRAIN 65536 /* multiply-adds per thread below which a pass runs on one thread */

/* The threads of a pass of `work` multiply-adds: ns_lfp_options.threads,
 * else the simulation's, else OpenMP's default; one for small passes (a
 * parallel region costs more than they do, the more so on a loaded machine). */
static int threads_of(const ns_lfp_t *L, int64_t work) {
#ifdef _OPENMP
    int64_t nt = L->o.threads > 0 ? L->o.threads
               : L->sim && L->sim->options.threads > 0 ? L->sim->options.threads : omp_get_max_threads();
    if (nt > work / LFP_GRAIN) nt = work / LFP_GRAIN;
    return nt < 1 ? 1 : (int)nt;
#else
    (void)L, (void)work;
    return 1;
#endif
}

/* Rz Ry Rx (right-handed rotations about x, then y, then z). */
static void rotation(double rx, double ry, double rz, double R[9]) {
    const double cx = cos(rx), sx = sin(rx), cy = cos(ry), sy = sin(ry), cz = cos(rz), sz = sin(rz);
    const double X[9] = {1, 0, 0, 0, cx, -sx, 0, sx, cx};
    const double Y[9] = {cy, 0, sy, 0, 1, 0, -sy, 0, cy};
    const double Z[9] = {cz, -sz, 0, sz, cz, 0, 0, 0, 1};
    double T[9];
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            T[3 * i + j] = 0.0;
            for (int k = 0; k < 3; ++k) T[3 * i + j] += Y[3 * i + k] * X[3 * k + j];
        }
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            R[3 * i + j] = 0.0;
            for (int k = 0; k < 3; ++k) R[3 * i + j] += Z[3 * i + k] * T[3 * k + j];
        }
}

static ns_status sample(ns_sim_t *sim, void *ctx, double t_mid, int last);
static ns_status gpu_flush(ns_sim_t *sim, void *ctx, int64_t step0, double t0, int64_t steps);
static ns_status gpu_finish(ns_sim_t *sim, void *ctx);

/* The coefficients and geometry onto the simulation's GPU, and its loop's sampler (sim_impl.h's snap). */
static ns_status attach_gpu(ns_lfp_t *L, ns_sim_t *sim) {
    const int64_t n = L->n_comp;
    int64_t *pos = malloc((size_t)(n > 0 ? n : 1) * sizeof *pos);
    if (!pos) return ns_fail(NS_ERR_OUT_OF_MEMORY, "LFP: %lld compartments", (long long)n);
    int64_t stride = 0;
    ns_status st = ns_lfp_gpu_positions(sim, pos, &stride); /* each compartment's state position */
    const int f32 = L->storage == NS_LFP_STORAGE_F32, tiles = L->storage == NS_LFP_STORAGE_TILES || f32;
    const lfp_gpu_geometry geo = {L->n_el,     n,     L->n_cells,          L->M,       L->g,
                                  L->parent,   L->membrane, L->mid,        sim->cell_offset, pos,
                                  stride,      L->n_pop,   L->pop,
                                  L->o.per_cell_dipoles, L->o.batch, L->o.every,
                                  tiles,       L->seg, L->seg ? L->seg + 3 * n : NULL,
                                  L->seg ? L->seg + 6 * n : NULL,           L->point,   L->pts,
                                  L->pt_begin, L->o.sigma, L->o.tile_bytes, L->o.device_results, f32,
                                  L->lr};
    if (st == NS_OK) st = ns_lfp_gpu_create(sim->device, &geo, &L->gpu);
    if (st == NS_OK) {
        sim->snap = ns_lfp_gpu_snap(L->gpu, &L->rows);
        ns_lfp_gpu_sampler(L->gpu, &sim->snap_col, &sim->snap_g, &sim->snap_ld, &sim->snap_slot, &sim->snap_norm_at,
                           &sim->snap_norm_ld);
        sim->snap_rows = L->rows;
        sim->snap_stride = stride;
        const int rel = f32 || L->lr; /* F32, LOWRANK: each sample's bound after the rows */
        L->tot = malloc((size_t)L->rows * (size_t)(L->n_el + 3 + rel) * sizeof *L->tot);
        if (!L->tot) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "LFP: %lld samples", (long long)L->rows);
    }
    free(pos);
    return st;
}

void ns_lfp_destroy(ns_lfp_t *L) {
    if (!L) return;
    if (L->sim && L->sim->sample_ctx == L) {
        L->sim->sample = NULL;
        L->sim->sample_flush = NULL;
        L->sim->sample_finish = NULL;
        L->sim->snap = NULL;
        L->sim->snap_col = NULL;
        L->sim->snap_g = NULL;
        L->sim->snap_slot = NULL;
        L->sim->snap_rows = L->sim->snap_stride = L->sim->snap_ld = L->sim->snap_norm_at = L->sim->snap_norm_ld = 0;
        L->sim->sample_ctx = NULL;
        L->sim->sample_every = 0;
    }
    free(L->M); free(L->mid); free(L->g); free(L->parent); free(L->membrane);
    free(L->v); free(L->imem); free(L->ibuf);
    free(L->phi); free(L->t); free(L->P); free(L->Pc); free(L->pcell);
    free(L->pop); free(L->phi_pop); free(L->accp);
    free(L->tot);
    free(L->seg); free(L->point); free(L->pts); free(L->pt_begin);
    free(L->mmax); free(L->cabs);
    ns_lfp_lowrank_free(L->lr);
    ns_lfp_gpu_destroy(L->gpu);
    free(L);
}

/* The shapes match the simulation's and no probe is attached yet. */
static ns_status check_shapes(const ns_sim_t *sim, int32_t n_shapes, const ns_cell_t *const *shapes) {
    if (n_shapes != sim->n_shapes)
        return ns_fail(NS_ERR_SIZE, "ns_lfp_create: %d shapes, the simulation has %d", (int)n_shapes,
                       (int)sim->n_shapes);
    for (int32_t s = 0; s < n_shapes; ++s) {
        ns_cell_info in;
        ns_cell_get_info(shapes[s], &in);
        if (!shapes[s] || in.compartments != sim->shapes[s].n)
            return ns_fail(NS_ERR_SIZE, "ns_lfp_create: shape %d has %d compartments, the simulation's %d", (int)s,
                           (int)in.compartments, (int)sim->shapes[s].n);
    }
    if (sim->sample || sim->snap) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_lfp_create: a probe is already attached");
    return NS_OK;
}

/* The options and the probe checked; the populations' count and the storage
 * chosen (AUTO resolved), within ns_lfp_options.max_bytes. */
static ns_status check_options(const ns_sim_t *sim, const ns_lfp_probe *probe, const ns_lfp_options *opt,
                               int32_t *n_pop_out, ns_lfp_storage *storage_out) {
    const ns_lfp_options o = *opt;
    if ((unsigned)o.method > NS_LFP_POINTSOURCE)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_lfp_create: method %d", (int)o.method);
    if (!(o.sigma > 0.0) || !isfinite(o.sigma))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "LFP: sigma %g S/m must be > 0", o.sigma);
    if (o.every < 1) return ns_fail(NS_ERR_INVALID_ARGUMENT, "LFP: sample every %lld steps (>= 1)", (long long)o.every);
    if (o.batch < 0) return ns_fail(NS_ERR_INVALID_ARGUMENT, "LFP: a batch of %lld samples (>= 0)", (long long)o.batch);
    int32_t n_pop = 1;
    for (int64_t c = 0; o.population && c < sim->n_cells; ++c) {
        if (o.population[c] < 0 || o.population[c] >= INT32_MAX)
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "LFP: cell %lld in population %d (>= 0)", (long long)c,
                           (int)o.population[c]);
        if (o.population[c] + 1 > n_pop) n_pop = o.population[c] + 1;
    }
    if (probe->n < 1) return ns_fail(NS_ERR_EMPTY, "LFP: a probe of %lld contacts", (long long)probe->n);
    for (int64_t k = 0; k < probe->n; ++k) {
        ns_status st = ns_lfp_check_contact(&probe->contacts[k], k);
        if (st != NS_OK) return st;
    }
    const int64_t max_bytes = o.max_bytes > 0 ? o.max_bytes : (int64_t)4 << 30;
    const int64_t bytes = ns_lfp_coefficient_bytes(probe->n, sim->n_comp);
    ns_lfp_storage storage = o.storage;
    if ((unsigned)storage > NS_LFP_STORAGE_LOWRANK)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_lfp_create: storage %d", (int)storage);
    if (sim->device < 0 && o.device_results)
        return ns_fail(NS_ERR_UNSUPPORTED, "LFP: device results need a CUDA simulation (a CPU one's are on the host)");
    if (sim->device < 0 && storage == NS_LFP_STORAGE_TILES)
        return ns_fail(NS_ERR_UNSUPPORTED, "LFP: coefficient tiles need a CUDA simulation (a CPU one keeps them dense)");
    if (storage == NS_LFP_STORAGE_AUTO)
        storage = sim->device < 0 ? NS_LFP_STORAGE_DENSE
                                  : ns_lfp_choose_storage(probe->n, sim->n_comp, ns_lfp_gpu_free_bytes(sim->device),
                                                          max_bytes);
    if (o.tile_bytes < 0)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "LFP: tiles of %lld bytes (>= 0)", (long long)o.tile_bytes);
    const int f32 = storage == NS_LFP_STORAGE_F32;
    /* F32: 4 bytes per electrode and compartment, the bound's 8 per electrode and chunk, the dipole's
     * 3 rows in double */
    const int64_t kept = f32 && bytes >= 0 ? 4 * probe->n * sim->n_comp +
                                                 8 * probe->n * ((sim->n_comp + NS_LFP_CHUNK - 1) / NS_LFP_CHUNK) +
                                                 24 * sim->n_comp
                                           : bytes;
    if ((storage == NS_LFP_STORAGE_DENSE || f32) && (kept < 0 || kept > max_bytes))
        return ns_fail(NS_ERR_SIZE,
                       "LFP: %s coefficients of %lld electrodes x %lld compartments take %.3g GB, above the limit of "
                       "%.3g GB (ns_lfp_options.max_bytes)",
                       ns_lfp_storage_name(storage), (long long)probe->n, (long long)sim->n_comp, (double)kept * 1e-9,
                       (double)max_bytes * 1e-9);
    if (!(o.tolerance >= 0.0) || !isfinite(o.tolerance))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "LFP: tolerance %g (>= 0; 0: 1e-6)", o.tolerance);
    if (!(o.rank_tolerance >= 0.0 && o.rank_tolerance < 1.0))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "LFP: rank tolerance %g (in [0, 1); 0: 1e-10)", o.rank_tolerance);
    *n_pop_out = n_pop;
    *storage_out = storage;
    return NS_OK;
}

/* L's tables: the coefficients (or, with tiles, the segments and contact
 * offsets), the geometry, the sample buffers and the populations'. 1 when
 * all were allocated. */
static int alloc_tables(ns_lfp_t *L, const ns_lfp_options *o, int tiles) {
    const size_t nc = (size_t)L->n_comp;
    if (tiles) {
        L->seg = malloc(7 * nc * sizeof *L->seg);
        L->point = malloc(nc ? nc : 1);
        L->pt_begin = malloc(((size_t)L->n_el + 1) * sizeof *L->pt_begin);
    } else if (!L->lr) {
        L->M = malloc((size_t)L->n_el * nc * sizeof *L->M);
    }
    L->mid = malloc(3 * nc * sizeof *L->mid);
    L->g = malloc(nc * sizeof *L->g);
    L->parent = malloc(nc * sizeof *L->parent);
    L->membrane = malloc(nc);
    L->v = malloc(nc * sizeof *L->v);
    L->imem = calloc(nc, sizeof *L->imem);
    L->ibuf = malloc(nc * NS_LFP_BLOCK * sizeof *L->ibuf);
    L->pcell = malloc((size_t)L->n_cells * 3 * sizeof *L->pcell);
    if (o->population) {
        L->pop = malloc((size_t)L->n_cells * sizeof *L->pop);
        if (L->pop) memcpy(L->pop, o->population, (size_t)L->n_cells * sizeof *L->pop);
        L->accp_threads = threads_of(L, INT64_MAX);
        L->accp = malloc((size_t)L->accp_threads * (size_t)L->n_pop * NS_LFP_BLOCK * sizeof *L->accp);
    }
    return !((!tiles && !L->lr && !L->M) || (tiles && (!L->seg || !L->point || !L->pt_begin)) || !L->mid || !L->g ||
             !L->parent || !L->membrane || !L->v || !L->imem || !L->ibuf || !L->pcell ||
             (o->population && (!L->pop || !L->accp)));
}

/* TILES: the contacts' points (np per contact in pts) packed into L->pts. */
static ns_status pack_points(ns_lfp_t *L, const ns_lfp_probe *probe, const double *pts, int32_t np) {
    L->pt_begin[0] = 0;
    for (int64_t k = 0; k < probe->n; ++k)
        L->pt_begin[k + 1] = L->pt_begin[k] + (probe->contacts[k].r > 0.0 ? probe->contacts[k].n : 1);
    L->pts = malloc((size_t)L->pt_begin[probe->n] * 3 * sizeof *L->pts);
    if (!L->pts) return ns_fail(NS_ERR_OUT_OF_MEMORY, "LFP: %lld contact points", (long long)L->pt_begin[probe->n]);
    for (int64_t k = 0; k < probe->n; ++k)
        memcpy(L->pts + 3 * L->pt_begin[k], pts + 3 * np * k,
               (size_t)(L->pt_begin[k + 1] - L->pt_begin[k]) * 3 * sizeof *L->pts);
    return NS_OK;
}

static ns_status check_placement(const double *placement, int64_t n_cells) {
    for (int64_t c = 0; placement && c < n_cells; ++c) {
        const double *pl = placement + 6 * c;
        for (int k = 0; k < 6; ++k)
            if (!isfinite(pl[k]))
                return ns_fail(NS_ERR_NOT_FINITE, "LFP: placement of cell %lld: value %d is %g", (long long)c, k, pl[k]);
    }
    return NS_OK;
}

/* Cell c placed and rotated: its midpoints, conductances, parents and
 * membrane flags, then its coefficient columns (or, with tiles, its
 * segments); a cell with a twin before it (twin < c) leaves its columns to
 * copy_twins. Touches only cell c's entries. 1 when out of memory. */
static int place_cell(ns_lfp_t *L, const ns_sim_t *sim, const ns_cell_t *const *shapes, const ns_lfp_probe *probe,
                      const ns_lfp_options *o, const double *pts, int32_t np, int tiles, int64_t c, int64_t twin) {
    const int32_t s = sim->cell_shape[c];
    const ns_cell_t *cell = shapes[s];
    const int32_t n = sim->shapes[s].n;
    const int64_t off = sim->cell_offset[c];
    const double *seg = ns_cell_segments(cell), *area = ns_cell_area(cell), *d = ns_cell_diam(cell);
    const double *g = ns_cell_axial_conductance(cell);
    const int32_t *par = ns_tree_parent(ns_cell_tree(cell));
    /* LOWRANK: the cell's block (electrodes x n) as well, factored here */
    double *buf = malloc((size_t)n * (size_t)(8 + (L->lr && twin == c ? probe->n : 0)) * sizeof *buf);
    if (!buf) return 1;
    double *start = buf, *end = buf + 3 * n, *row = buf + 6 * n, *diam = buf + 7 * n;
    double R[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, o3[3] = {0, 0, 0}, t3[3] = {0, 0, 0};
    if (o->placement) {
        const double *pl = o->placement + 6 * c;
        rotation(pl[3], pl[4], pl[5], R);
        int32_t soma = 0;
        (void)ns_cell_locate(cell, 0, 0.5, &soma); /* a cell's section 0 has a segment */
        for (int k = 0; k < 3; ++k) o3[k] = .5 * (seg[6 * soma + k] + seg[6 * soma + 3 + k]), t3[k] = pl[k];
    }
    for (int32_t i = 0; i < n; ++i) {
        for (int e = 0; e < 2; ++e) {
            const double *p = seg + 6 * i + 3 * e;
            const double q[3] = {p[0] - o3[0], p[1] - o3[1], p[2] - o3[2]};
            double *dst = (e ? end : start) + 3 * i;
            for (int k = 0; k < 3; ++k) dst[k] = R[3 * k] * q[0] + R[3 * k + 1] * q[1] + R[3 * k + 2] * q[2] + t3[k];
        }
        diam[i] = d[i];
        for (int k = 0; k < 3; ++k) L->mid[3 * (off + i) + k] = .5 * (start[3 * i + k] + end[3 * i + k]);
        L->g[off + i] = g[i];
        L->parent[off + i] = par[i] < 0 ? -1 : off + par[i];
        L->membrane[off + i] = area[i] > 0.0;
    }
    ns_section_info root;
    ns_cell_get_section(cell, 0, &root);
    if (tiles) { /* the segments for the GPU's tiles; no coefficients here */
        const size_t N = (size_t)L->n_comp;
        memcpy(L->seg + 3 * off, start, 3 * (size_t)n * sizeof *start);
        memcpy(L->seg + 3 * N + 3 * off, end, 3 * (size_t)n * sizeof *end);
        memcpy(L->seg + 6 * N + off, diam, (size_t)n * sizeof *diam);
        for (int32_t i = 0; i < n; ++i)
            L->point[off + i] = o->method == NS_LFP_POINTSOURCE || (o->method == NS_LFP_ROOT_AS_POINT && i == root.first_node);
        free(buf);
        return 0;
    }
    if (twin != c) { /* the same columns as the twin's: copy_twins */
        free(buf);
        return 0;
    }
    const ns_lfp_segments sg = {n, start, end, diam, root.first_node};
    double *block = buf + 8 * n;
    for (int64_t k = 0; k < probe->n; ++k) {
        ns_lfp_row(&sg, &probe->contacts[k], pts + 3 * np * k, o->method, o->sigma, row);
        double *dst = L->lr ? block + k * n : L->M + k * L->n_comp + off;
        for (int32_t i = 0; i < n; ++i) dst[i] = L->membrane[off + i] ? row[i] : 0.0;
        if (L->mmax) /* F32 on the CPU: the rounded values */
            for (int32_t i = 0; i < n; ++i) dst[i] = (double)(float)dst[i];
    }
    const int bad = L->lr && ns_lfp_lowrank_factor(L->lr, c, block, n, o->rank_tolerance);
    free(buf);
    return bad;
}

typedef struct twin_key {
    int32_t shape;
    double place[6];
    int64_t cell;
} twin_key;

static int twin_cmp(const void *a, const void *b) {
    const twin_key *x = a, *y = b;
    if (x->shape != y->shape) return x->shape < y->shape ? -1 : 1;
    const int d = memcmp(x->place, y->place, sizeof x->place);
    if (d != 0) return d;
    return x->cell < y->cell ? -1 : x->cell > y->cell;
}

/* Cells of one shape with the same placement (none, or the same six numbers,
 * bit for bit) have the same coefficients, bit for bit (the same segments
 * through the same formulas): twin[c] is the first such cell, c itself when
 * none is before it. NULL when out of memory. */
static int64_t *twins_of(const ns_sim_t *sim, const double *placement) {
    const int64_t n = sim->n_cells;
    twin_key *key = calloc((size_t)n + 1, sizeof *key);
    int64_t *twin = malloc(((size_t)n + 1) * sizeof *twin);
    if (!key || !twin) {
        free(key), free(twin);
        return NULL;
    }
    for (int64_t c = 0; c < n; ++c) {
        key[c].shape = sim->cell_shape[c], key[c].cell = c;
        if (placement) memcpy(key[c].place, placement + 6 * c, sizeof key[c].place);
    }
    qsort(key, (size_t)n, sizeof *key, twin_cmp);
    for (int64_t k = 0, first = 0; k < n; ++k) {
        if (k > 0 && (key[k].shape != key[k - 1].shape || memcmp(key[k].place, key[k - 1].place, sizeof key[k].place)))
            first = k;
        twin[key[k].cell] = key[first].cell;
    }
    free(key);
    return twin;
}

/* The columns (dense, f32 on the CPU) or factors (lowrank: shared) of each
 * cell with a twin before it, from the twin's. */
static void copy_twins(ns_lfp_t *L, const ns_sim_t *sim, const int64_t *twin) {
    const int64_t *off = sim->cell_offset;
    const int nt = threads_of(L, L->n_el * L->n_comp / 8);
    (void)nt;
    for (int64_t c = 0; L->lr && c < L->n_cells; ++c)
        if (twin[c] != c) ns_lfp_lowrank_share(L->lr, c, twin[c]);
    if (!L->M) return;
    NS_PRAGMA(omp parallel for num_threads(nt) schedule(static) if (nt > 1))
    for (int64_t k = 0; k < L->n_el; ++k) {
        double *row = L->M + k * L->n_comp;
        for (int64_t c = 0; c < L->n_cells; ++c)
            if (twin[c] != c)
                memcpy(row + off[c], row + off[twin[c]], (size_t)(off[c + 1] - off[c]) * sizeof *row);
    }
}

/* F32 on the CPU: each chunk's largest |M| for the bound (chunks straddle cells). */
static void chunk_maxima(ns_lfp_t *L) {
    const int64_t n = L->n_comp, chunks = (n + NS_LFP_CHUNK - 1) / NS_LFP_CHUNK;
    for (int64_t k = 0; k < L->n_el; ++k)
        for (int64_t j = 0; j < n; ++j) {
            double *m = &L->mmax[k * chunks + j / NS_LFP_CHUNK];
            *m = fmax(*m, fabs(L->M[k * n + j]) / (1.0 - LFP_U));
        }
}

/* LOWRANK: the products' scratch, and the factors within max_bytes. */
static ns_status lowrank_finish(ns_lfp_t *L, const ns_sim_t *sim, const ns_lfp_options *o) {
    int64_t kept = ns_lfp_lowrank_finish(L->lr, sim->cell_offset);
    if (kept < 0) return ns_fail(NS_ERR_OUT_OF_MEMORY, "LFP: the lowrank products' scratch");
    kept += 24 * L->n_comp;
    const int64_t max_bytes = o->max_bytes > 0 ? o->max_bytes : (int64_t)4 << 30;
    if (kept > max_bytes)
        return ns_fail(NS_ERR_SIZE,
                       "LFP: lowrank coefficients of %lld electrodes x %lld compartments take %.3g GB, above the limit "
                       "of %.3g GB (ns_lfp_options.max_bytes)",
                       (long long)L->n_el, (long long)L->n_comp, (double)kept * 1e-9, (double)max_bytes * 1e-9);
    return NS_OK;
}

ns_status ns_lfp_create(ns_sim_t *sim, int32_t n_shapes, const ns_cell_t *const *shapes, const ns_lfp_probe *probe,
                        const ns_lfp_options *options, ns_lfp_t **out) {
    if (!out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_lfp_create: out is NULL");
    *out = NULL;
    if (!sim || !shapes || !probe || !probe->contacts)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_lfp_create: NULL argument");
    ns_status st = check_shapes(sim, n_shapes, shapes);
    if (st != NS_OK) return st;
    ns_lfp_options o;
    if (options) o = *options;
    else ns_lfp_options_init(&o);
    int32_t n_pop = 1;
    ns_lfp_storage storage = NS_LFP_STORAGE_AUTO;
    st = check_options(sim, probe, &o, &n_pop, &storage);
    if (st != NS_OK) return st;
    const int f32 = storage == NS_LFP_STORAGE_F32;
    const double t_create = ns_time_ms();
    ns_lfp_t *L = calloc(1, sizeof *L);
    if (!L) return ns_fail(NS_ERR_OUT_OF_MEMORY, "ns_lfp_create");
    L->o = o;
    L->o.placement = NULL; /* not kept */
    L->o.population = NULL;
    L->n_pop = n_pop;
    L->n_el = probe->n;
    L->n_comp = sim->n_comp;
    L->n_cells = sim->n_cells;
    L->last_step = -1;
    L->storage = storage;
    /* TILES, and F32 on the GPU: the coefficients made on the GPU from the placed segments */
    const int tiles = storage == NS_LFP_STORAGE_TILES || (f32 && sim->device >= 0);
    if (f32 && sim->device < 0) {
        const size_t chunks = ((size_t)L->n_comp + NS_LFP_CHUNK - 1) / NS_LFP_CHUNK + 1;
        L->mmax = calloc((size_t)L->n_el * chunks, sizeof *L->mmax);
        L->cabs = malloc(chunks * NS_LFP_BLOCK * sizeof *L->cabs);
        if (!L->mmax || !L->cabs) {
            ns_lfp_destroy(L);
            return ns_fail(NS_ERR_OUT_OF_MEMORY, "LFP: the float32 bound's tables");
        }
    }
    L->sim = sim; /* its thread count; attached below */
    if (storage == NS_LFP_STORAGE_LOWRANK &&
        !(L->lr = ns_lfp_lowrank_new(L->n_el, L->n_cells, n_pop, threads_of(L, INT64_MAX)))) {
        ns_lfp_destroy(L);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "LFP: the lowrank factors' tables");
    }
    int32_t np = 1; /* points of the largest disc */
    for (int64_t k = 0; k < probe->n; ++k)
        if (probe->contacts[k].r > 0.0 && probe->contacts[k].n > np) np = probe->contacts[k].n;
    double *pts = malloc((size_t)probe->n * 3 * (size_t)np * sizeof *pts);
    int64_t *twin = NULL;
    if (!alloc_tables(L, &o, tiles) || !pts) {
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "LFP: coefficients of %lld electrodes x %lld compartments",
                     (long long)L->n_el, (long long)L->n_comp);
        goto done;
    }
    for (int64_t k = 0; k < probe->n; ++k) ns_lfp_contact_points(&probe->contacts[k], pts + 3 * np * k);
    if (tiles && (st = pack_points(L, probe, pts, np)) != NS_OK) goto done;
    if ((st = check_placement(o.placement, sim->n_cells)) != NS_OK) goto done;
    if (!(twin = twins_of(sim, o.placement))) {
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "LFP: the cells' twins");
        goto done;
    }
    /* each cell's columns on their own (OpenMP over cells: every entry is
     * computed alone, so the thread count changes nothing) */
    int bad = 0;
    const int nt = threads_of(L, L->n_el * L->n_comp * 64);
    (void)nt;
    NS_PRAGMA(omp parallel for num_threads(nt) schedule(dynamic, 1) reduction(| : bad) if (nt > 1))
    for (int64_t c = 0; c < sim->n_cells; ++c) bad |= place_cell(L, sim, shapes, probe, &o, pts, np, tiles, c, twin[c]);
    if (bad) {
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "LFP: the coefficients' scratch");
        goto done;
    }
    if (!tiles) copy_twins(L, sim, twin);
    if (L->mmax) chunk_maxima(L);
    if (L->lr && (st = lowrank_finish(L, sim, &o)) != NS_OK) goto done;
    if (sim->device >= 0) {
        st = attach_gpu(L, sim);
        if (st != NS_OK) goto done;
        if (L->lr) ns_lfp_lowrank_drop(L->lr); /* the GPU has them */
        sim->sample_flush = gpu_flush;
        sim->sample_finish = gpu_finish;
    } else {
        sim->sample = sample;
    }
    sim->sample_ctx = L;
    sim->sample_every = o.every;
done:
    free(pts), free(twin);
    if (st != NS_OK) {
        ns_lfp_destroy(L);
        return st;
    }
    L->setup_ms = ns_time_ms() - t_create;
    *out = L;
    return NS_OK;
}

static ns_status grow(ns_lfp_t *L, int64_t need) {
    if (need <= L->cap) return NS_OK;
    int64_t cap = L->cap ? 2 * L->cap : 256;
    while (cap < need) cap *= 2;
    double *phi = realloc(L->phi, (size_t)cap * (size_t)L->n_el * sizeof *phi);
    if (phi) L->phi = phi;
    double *t = realloc(L->t, (size_t)cap * sizeof *t);
    if (t) L->t = t;
    double *P = realloc(L->P, (size_t)cap * 3 * sizeof *P);
    if (P) L->P = P;
    double *Pc = NULL;
    if (L->o.per_cell_dipoles) {
        Pc = realloc(L->Pc, (size_t)cap * 3 * (size_t)L->n_cells * sizeof *Pc);
        if (Pc) L->Pc = Pc;
    }
    double *pp = NULL;
    if (L->pop) {
        pp = realloc(L->phi_pop, (size_t)cap * (size_t)L->n_pop * (size_t)L->n_el * sizeof *pp);
        if (pp) L->phi_pop = pp;
    }
    if (!phi || !t || !P || (L->o.per_cell_dipoles && !Pc) || (L->pop && !pp))
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "LFP: %lld samples of %lld electrodes", (long long)cap, (long long)L->n_el);
    L->cap = cap;
    return NS_OK;
}

/* The same with populations: each population's sum over its cells'
 * compartments in order, the potentials their sum in population order. */
static void flush_populations(ns_lfp_t *L, int64_t first, int32_t nb, int nt) {
    const int64_t ne = L->n_el, nc = L->n_comp, n_cells = L->n_cells;
    const int32_t np = L->n_pop;
    const double *M = L->M, *I = L->ibuf;
    const int64_t *off = L->sim->cell_offset;
    (void)nt;
    NS_PRAGMA(omp parallel for num_threads(nt) schedule(static) if (nt > 1))
    for (int64_t e = 0; e < ne; ++e) {
        double *acc = ns_lfp_thread_acc(L->accp, np);
        const double *m = M + e * nc;
        for (int64_t c = 0; c < n_cells; ++c) {
            double *a = acc + (size_t)L->pop[c] * NS_LFP_BLOCK;
            for (int64_t j = off[c]; j < off[c + 1]; ++j) {
                const double mj = m[j];
                const double *ij = I + j * NS_LFP_BLOCK;
                for (int32_t b = 0; b < nb; ++b) a[b] += mj * ij[b];
            }
        }
        for (int32_t b = 0; b < nb; ++b) {
            double total = 0.0;
            for (int32_t p = 0; p < np; ++p) {
                L->phi_pop[((first + b) * np + p) * ne + e] = acc[p * NS_LFP_BLOCK + b];
                total += acc[p * NS_LFP_BLOCK + b];
            }
            L->phi[(first + b) * ne + e] = total;
        }
    }
}

/* F32: a sample's bound relative to its largest |potential| (ns_lfp_error_bound), 0 when both are 0 */
static double relative_bound(double bound, const double *phi, int64_t ne) {
    double big = 0.0;
    for (int64_t e = 0; e < ne; ++e) big = fmax(big, fabs(phi[e]));
    return bound == 0.0 ? 0.0 : big > 0.0 ? bound / big : INFINITY;
}

/* F32: the rel of samples k0 .. k0 + nb - 1 into the run's largest; the first above the tolerance fails */
static ns_status check_bound(ns_lfp_t *L, int64_t k0, int64_t nb, const double *rel) {
    const double tol = L->o.tolerance > 0.0 ? L->o.tolerance : 1e-6;
    for (int64_t b = 0; b < nb; ++b) {
        L->bound = fmax(L->bound, rel[b]);
        if (!(rel[b] <= tol))
            return ns_fail(NS_ERR_UNSUPPORTED,
                           "LFP: %s coefficients: the potentials' error bound at t = %g ms is %.3g of the sample's "
                           "largest potential, above the tolerance %.3g (ns_lfp_options.tolerance; the dense and tiles "
                           "storages are exact)", ns_lfp_storage_name(L->storage), L->t[k0 + b], rel[b], tol);
    }
    return NS_OK;
}

/* F32 on the CPU: each buffered sample's bound u / (1 - u) sum_c max_{j in c} |M_ej| sum_{j in c} |i_j|
 * per electrode, over the chunks c of NS_LFP_CHUNK compartments in Flat order */
static ns_status cpu_bound(ns_lfp_t *L, int64_t first, int32_t nb) {
    const int64_t ne = L->n_el, n = L->n_comp, C = (n + NS_LFP_CHUNK - 1) / NS_LFP_CHUNK;
    double *S = L->cabs, rel[NS_LFP_BLOCK];
    for (int64_t c = 0; c < C; ++c)
        for (int32_t b = 0; b < nb; ++b) {
            double s = 0.0;
            for (int64_t j = c * NS_LFP_CHUNK; j < n && j < (c + 1) * NS_LFP_CHUNK; ++j)
                s += fabs(L->ibuf[j * NS_LFP_BLOCK + b]);
            S[c * NS_LFP_BLOCK + b] = s;
        }
    for (int32_t b = 0; b < nb; ++b) {
        double worst = 0.0;
        for (int64_t e = 0; e < ne; ++e) {
            double s = 0.0;
            for (int64_t c = 0; c < C; ++c) s += L->mmax[e * C + c] * S[c * NS_LFP_BLOCK + b];
            worst = fmax(worst, s);
        }
        rel[b] = relative_bound(LFP_U * worst, L->phi + (first + b) * ne, ne);
    }
    return check_bound(L, first, nb, rel);
}

/* LOWRANK: the buffered samples through each cell's factors, and their bounds. */
static ns_status lowrank_flush(ns_lfp_t *L, int64_t first, int32_t nb) {
    const int64_t ne = L->n_el;
    double worst[NS_LFP_BLOCK], rel[NS_LFP_BLOCK];
    int64_t work = 0;
    for (int64_t c = 0; c < L->n_cells; ++c) work += (int64_t)ns_lfp_lowrank_ranks(L->lr)[c] * ne;
    ns_lfp_lowrank_apply(L->lr, L->ibuf, L->sim->cell_offset, L->pop, nb, threads_of(L, (work + L->n_comp) * nb),
                         L->phi + first * ne, L->pop ? L->phi_pop + first * L->n_pop * ne : NULL, worst);
    for (int32_t b = 0; b < nb; ++b) rel[b] = relative_bound(worst[b], L->phi + (first + b) * ne, ne);
    return check_bound(L, first, nb, rel);
}

/* phi of the buffered samples: one pass over the coefficients for up to
 * NS_LFP_BLOCK samples; each electrode's sum runs over the compartments in
 * order, whatever the thread count and the block. */
static ns_status flush(ns_lfp_t *L) {
    const int32_t nb = L->nbuf;
    if (nb == 0) return NS_OK;
    const int64_t first = L->samples - nb, ne = L->n_el, nc = L->n_comp;
    L->nbuf = 0;
    const double *M = L->M, *I = L->ibuf;
    double *phi = L->phi;
    const int nt = threads_of(L, ne * nc * nb);
    (void)nt;
    if (L->lr) return lowrank_flush(L, first, nb);
    if (L->pop) {
        flush_populations(L, first, nb, nt < L->accp_threads ? nt : L->accp_threads);
        return L->mmax ? cpu_bound(L, first, nb) : NS_OK;
    }
    NS_PRAGMA(omp parallel for num_threads(nt) schedule(static) if (nt > 1))
    for (int64_t e = 0; e < ne; ++e) {
        double acc[NS_LFP_BLOCK] = {0};
        const double *m = M + e * nc;
        for (int64_t j = 0; j < nc; ++j) {
            const double mj = m[j];
            const double *ij = I + j * NS_LFP_BLOCK;
            for (int32_t b = 0; b < nb; ++b) acc[b] += mj * ij[b];
        }
        for (int32_t b = 0; b < nb; ++b) phi[(first + b) * ne + e] = acc[b];
    }
    return L->mmax ? cpu_bound(L, first, nb) : NS_OK;
}

/* The membrane currents of every compartment into buffer column b and the
 * cells' dipoles into L->pcell, on the host. */
static void cpu_currents(ns_lfp_t *L, const ns_sim_t *sim, double t_mid, int32_t b) {
    double *Pc = L->pcell;
    const int64_t n_cells = L->n_cells;
    double *imem = L->imem, *ibuf = L->ibuf;
    const double *v = L->v, *g = L->g, *mid = L->mid;
    const int64_t *parent = L->parent;
    const unsigned char *mem = L->membrane;
    const int nt = threads_of(L, 8 * L->n_comp);
    (void)nt;
    NS_PRAGMA(omp parallel for num_threads(nt) schedule(static) if (nt > 1))
    for (int64_t c = 0; c < n_cells; ++c) {
        const int64_t o = sim->cell_offset[c], n = sim->cell_offset[c + 1] - o;
        double *im = imem + o;
        const double *vc = v + o;
        for (int64_t i = 0; i < n; ++i) im[i] = 0.0;
        /* Kirchhoff at every node: the membrane current (ionic, capacitive,
         * synaptic: NEURON's i_membrane_) is the axial current flowing in at
         * the step's end plus the clamps' electrode current */
        for (int64_t i = 0; i < n; ++i) {
            const int64_t p = parent[o + i];
            if (p < 0) continue;
            const double flow = g[o + i] * (v[p] - vc[i]);
            im[i] += flow;
            imem[p] -= flow;
        }
        for (int64_t q = sim->stim_begin[c]; q < sim->stim_begin[c + 1]; ++q) {
            const sim_stim *s = &sim->stims[sim->stim_order[q]];
            if (t_mid < s->del + s->dur && t_mid >= s->del) im[s->node] += s->amp;
        }
        double P[3] = {0, 0, 0};
        for (int64_t i = 0; i < n; ++i) {
            if (!mem[o + i]) im[i] = 0.0;
            ibuf[(o + i) * NS_LFP_BLOCK + b] = im[i];
            for (int d = 0; d < 3; ++d) P[d] += im[i] * mid[3 * (o + i) + d];
        }
        for (int d = 0; d < 3; ++d) Pc[3 * c + d] = P[d];
    }
}

static ns_status sample_step(ns_lfp_t *L, ns_sim_t *sim, double t_mid, int last);

static ns_status sample(ns_sim_t *sim, void *ctx, double t_mid, int last) {
    ns_lfp_t *L = ctx;
    const double t0 = ns_time_ms();
    const ns_status st = sample_step(L, sim, t_mid, last);
    L->sampling_ms += ns_time_ms() - t0;
    return st;
}

static ns_status sample_step(ns_lfp_t *L, ns_sim_t *sim, double t_mid, int last) {
    if (sim->steps <= L->last_step) { /* ns_sim_init: start again */
        L->samples = 0;
        L->nbuf = 0;
        L->bound = 0.0;
    }
    L->last_step = sim->steps;
    ns_status st = grow(L, L->samples + 1);
    if (st != NS_OK) return st;
    const int64_t b = L->nbuf, k = L->samples;
    double *Pc = L->pcell;
    st = ns_sim_read_var(sim, NS_SIM_VAR_V, L->v, NULL);
    if (st != NS_OK) return st;
    cpu_currents(L, sim, t_mid, (int32_t)b);
    const int64_t n_cells = L->n_cells;
    double P[3] = {0, 0, 0};
    for (int64_t c = 0; c < n_cells; ++c)
        for (int d = 0; d < 3; ++d) P[d] += Pc[3 * c + d];
    for (int d = 0; d < 3; ++d) L->P[3 * k + d] = P[d];
    if (L->o.per_cell_dipoles) memcpy(L->Pc + k * 3 * n_cells, Pc, (size_t)n_cells * 3 * sizeof *Pc);
    L->t[k] = sim->t;
    L->samples = k + 1;
    if (++L->nbuf == NS_LFP_BLOCK || last) return flush(L);
    return NS_OK;
}

/* The submitted reduction's results into the samples k0 .. k0 + nb - 1
 * (sim_impl.h's sample_finish, and before each submission). */
static ns_status gpu_collect(ns_lfp_t *L) {
    const int64_t nb = ns_lfp_gpu_pending(L->gpu), k0 = L->pend_k0;
    if (nb <= 0) return NS_OK;
    const int64_t R = L->n_el + 3, ne = L->n_el, nc3 = 3 * L->n_cells;
    const double t_wait = ns_time_ms();
    double *rel = L->storage == NS_LFP_STORAGE_F32 || L->lr ? L->tot + L->rows * R : NULL;
    const ns_status st = ns_lfp_gpu_collect(L->gpu, L->tot, rel, L->pop ? L->phi_pop + k0 * L->n_pop * ne : NULL,
                                            L->o.per_cell_dipoles ? L->Pc + k0 * nc3 : NULL, L->imem);
    L->sampling_ms += ns_time_ms() - t_wait;
    if (st != NS_OK) return st;
    for (int64_t b = 0; b < nb; ++b) {
        memcpy(L->phi + (k0 + b) * ne, L->tot + b * R, (size_t)ne * sizeof *L->phi);
        for (int d = 0; d < 3; ++d) L->P[3 * (k0 + b) + d] = L->tot[b * R + ne + d];
    }
    return rel ? check_bound(L, k0, nb, rel) : NS_OK;
}

static ns_status gpu_finish(ns_sim_t *sim, void *ctx) {
    (void)sim;
    return gpu_collect(ctx);
}

/* The samples of a GPU loop's launch (sim_impl.h's sample_flush): steps
 * (step0, step0 + steps] from t0, those at multiples of `every` in snap's
 * rows, their currents written by the loop. Their reduction is submitted to
 * run beside the next launch, which writes the other buffer; the previous
 * launch's is collected first. */
static ns_status gpu_flush(ns_sim_t *sim, void *ctx, int64_t step0, double t0, int64_t steps) {
    ns_lfp_t *L = ctx;
    const int64_t every = L->o.every;
    ns_status st = gpu_collect(L);
    if (st != NS_OK) return st;
    if (step0 < L->last_step) L->samples = 0, L->bound = 0.0; /* ns_sim_init: start again */
    L->last_step = step0 + steps;
    const int64_t nb = (step0 + steps) / every - step0 / every;
    if (nb <= 0) return NS_OK;
    if (nb > L->rows) return ns_fail(NS_ERR_INTERNAL, "LFP: %lld samples in a launch, %lld rows", (long long)nb, (long long)L->rows);
    st = grow(L, L->samples + nb);
    if (st != NS_OK) return st;
    const int64_t k0 = L->samples;
    double t = t0;
    for (int64_t q = 1, b = 0; q <= steps; ++q) {
        t = ns_sim_half_step(ns_sim_half_step(t, sim->params.dt), sim->params.dt);
        if ((step0 + q) % every == 0) L->t[k0 + b] = t, ++b;
    }
    const double t_submit = ns_time_ms();
    st = ns_lfp_gpu_submit(L->gpu, k0, (int32_t)nb, L->pop != NULL, L->o.per_cell_dipoles, 1);
    L->sampling_ms += ns_time_ms() - t_submit;
    if (st != NS_OK) return st;
    L->pend_k0 = k0;
    L->samples = k0 + nb;
    sim->snap = ns_lfp_gpu_snap(L->gpu, &L->rows); /* the next launch's buffer */
    return NS_OK;
}

int64_t ns_lfp_samples(const ns_lfp_t *L) { return L ? L->samples : 0; }
int32_t ns_lfp_populations(const ns_lfp_t *L) { return L ? L->n_pop : 0; }
const double *ns_lfp_population_potentials(const ns_lfp_t *L) { return L ? L->phi_pop : NULL; }
int64_t ns_lfp_electrodes(const ns_lfp_t *L) { return L ? L->n_el : 0; }
const double *ns_lfp_potentials(const ns_lfp_t *L) { return L ? L->phi : NULL; }
const double *ns_lfp_times(const ns_lfp_t *L) { return L ? L->t : NULL; }
const double *ns_lfp_dipole(const ns_lfp_t *L) { return L ? L->P : NULL; }
const double *ns_lfp_cell_dipoles(const ns_lfp_t *L) { return L && L->o.per_cell_dipoles ? L->Pc : NULL; }
const double *ns_lfp_coefficients(const ns_lfp_t *L) { return L ? L->M : NULL; }
const int32_t *ns_lfp_ranks(const ns_lfp_t *L) { return L ? ns_lfp_lowrank_ranks(L->lr) : NULL; }
ns_lfp_storage ns_lfp_storage_used(const ns_lfp_t *L) { return L ? L->storage : NS_LFP_STORAGE_AUTO; }
const double *ns_lfp_membrane_currents(const ns_lfp_t *L) { return L ? L->imem : NULL; }
double ns_lfp_error_bound(const ns_lfp_t *L) { return L ? L->bound : 0.0; }

ns_status ns_lfp_device_results(const ns_lfp_t *L, const double **data, int64_t *stride, int32_t *device) {
    if (!L || !data || !stride || !device) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_lfp_device_results: NULL argument");
    *data = NULL, *stride = L->n_el + 3, *device = -1;
    if (!L->gpu) return ns_fail(NS_ERR_UNSUPPORTED, "LFP: device results need a CUDA simulation (a CPU one's are on the host)");
    if (!L->o.device_results)
        return ns_fail(NS_ERR_UNSUPPORTED, "LFP: device results were not asked for (ns_lfp_options.device_results)");
    *data = ns_lfp_gpu_kept(L->gpu);
    *device = L->sim->device;
    return NS_OK;
}

ns_status ns_lfp_timing_of(const ns_lfp_t *L, ns_lfp_timing *out) {
    if (!L || !out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_lfp_timing_of: NULL argument");
    ns_lfp_gpu_timing_of(L->gpu, out);
    out->setup_ms = L->setup_ms;
    out->sampling_ms = L->sampling_ms;
    return NS_OK;
}

ns_status ns_lfp_csd(const double *phi, int64_t samples, int64_t stride, const int64_t *index, int64_t count,
                     double spacing, double sigma, double *out) {
    if (!phi || !index || !out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_lfp_csd: NULL argument");
    if (samples < 0 || count < 1 || stride < 1) return ns_fail(NS_ERR_SIZE, "ns_lfp_csd: %lld contacts", (long long)count);
    if (!(spacing > 0.0) || !(sigma > 0.0) || !isfinite(spacing) || !isfinite(sigma))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_lfp_csd: spacing %g um and sigma %g S/m must be > 0", spacing,
                       sigma);
    for (int64_t j = 0; j < count; ++j)
        if (index[j] < 0 || index[j] >= stride)
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_lfp_csd: contact %lld of %lld", (long long)index[j],
                           (long long)stride);
    /* sigma [S/m] * mV / um^2 = nA / um^3 = 1e6 uA / mm^3 */
    const double scale = -sigma * 1e6 / (spacing * spacing);
    for (int64_t s = 0; s < samples; ++s) {
        const double *p = phi + s * stride;
        for (int64_t j = 0; j < count; ++j) {
            const double up = p[index[j > 0 ? j - 1 : 0]], here = p[index[j]];
            const double down = p[index[j < count - 1 ? j + 1 : count - 1]];
            out[s * count + j] = scale * (up - 2.0 * here + down);
        }
    }
    return NS_OK;
}
