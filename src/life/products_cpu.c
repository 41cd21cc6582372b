/* The two LiFE products on the CPU: the paper's naive loops (Fig. 3) and the
 * optimised variants (Section 4.2.1): restructured copies, partitioning by
 * coefficient / atom / voxel, the synchronisation-free voxel-aligned split
 * for y = M w, SIMD inner loops over theta, skipping zero weights.
 * docs/life.md explains each variant. */
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/error.h"
#include "core/pragma.h"
#include "life/life_impl.h"

/* An explicit request is honoured (the tests exercise every partition). The
 * default (0) never oversubscribes: at most OpenMP's default, the processors
 * this process may run on, and one thread per NS_LIFE_GRAIN coefficients
 * (a product of a few thousand coefficients takes microseconds: waking a
 * second thread costs more, and far more on a loaded machine). */
#define NS_LIFE_GRAIN 16384
int32_t ns_life_cpu_threads(int32_t requested, int64_t n_coeffs) {
#ifdef _OPENMP
    if (requested > 0) return requested;
    int64_t nt = omp_get_max_threads();
    const int64_t procs = omp_get_num_procs();
    if (procs > 0 && nt > procs) nt = procs;
    const int64_t by_work = n_coeffs / NS_LIFE_GRAIN;
    if (nt > by_work) nt = by_work;
    return nt < 1 ? 1 : (int32_t)nt;
#else
    (void)requested, (void)n_coeffs;
    return 1;
#endif
}

/* ------------------------------------------------------ the paper's Fig. 3 */

/* Literal C of ENCODE's M_times_w_sub with 0-based int32 indices: no hoisting,
 * no skipping. This is the reference every variant is checked against. */
static void mw_naive(const ns_life_model_t *m, const ns_life_layout *l, const double *w, double *y) {
    const int64_t T = m->n_theta;
    memset(y, 0, (size_t)T * (size_t)m->n_voxels * sizeof *y);
    for (int64_t k = 0; k < m->n_coeffs; ++k) {
        int64_t atom_index = (int64_t)l->atom[k] * T;
        int64_t voxel_index = (int64_t)l->voxel[k] * T;
        for (int64_t i = 0; i < T; ++i) {
            y[voxel_index] = y[voxel_index] + m->D[atom_index] * w[l->fiber[k]] * l->value[k];
            ++atom_index;
            ++voxel_index;
        }
    }
}

static void mty_naive(const ns_life_model_t *m, const ns_life_layout *l, const double *y, double *w) {
    const int64_t T = m->n_theta;
    memset(w, 0, (size_t)m->n_fibers * sizeof *w);
    for (int64_t k = 0; k < m->n_coeffs; ++k) {
        double val = 0;
        int64_t atom_index = (int64_t)l->atom[k] * T;
        int64_t voxel_index = (int64_t)l->voxel[k] * T;
        for (int64_t i = 0; i < T; ++i) {
            val = val + m->D[atom_index] * y[voxel_index];
            ++atom_index;
            ++voxel_index;
        }
        val = val * l->value[k];
        w[l->fiber[k]] = w[l->fiber[k]] + val;
    }
}

/* ------------------------------------------------------------- SIMD loops */

static inline void axpy(int64_t T, double s, const double *restrict d, double *restrict y) {
    NS_PRAGMA(omp simd)
    for (int64_t i = 0; i < T; ++i) y[i] += s * d[i];
}

static inline void axpy_atomic(int64_t T, double s, const double *restrict d, double *restrict y) {
    for (int64_t i = 0; i < T; ++i) {
        const double v = s * d[i];
        NS_PRAGMA(omp atomic)
        y[i] += v;
    }
}

static inline double dot(int64_t T, const double *restrict a, const double *restrict b) {
    double r = 0.0;
    NS_PRAGMA(omp simd reduction(+ : r))
    for (int64_t i = 0; i < T; ++i) r += a[i] * b[i];
    return r;
}

/* The coefficients of voxel v (voxel-sorted copy) into column v of y. */
/* Software prefetch of the column a coefficient PREFETCH_AHEAD places later gathers (a dictionary
 * column for the voxel-keyed loops, a signal column for the atom-keyed w = M^T y): the hardware
 * prefetchers do not follow these gathers. Only a hint: the results are the same bits. */
#define PREFETCH_AHEAD 8
static inline void prefetch_column(const double *c, int64_t T) {
#if defined(__GNUC__) || defined(__clang__)
    for (int64_t i = 0; i < T; i += 8) __builtin_prefetch(c + i, 0, 1);
#else
    (void)c, (void)T;
#endif
}

static inline void mw_voxel(const ns_life_model_t *m, const ns_life_layout *l, const double *w,
                            int32_t v, double *restrict y) {
    const int64_t T = m->n_theta;
    double *yv = y + (int64_t)v * T;
    memset(yv, 0, (size_t)T * sizeof *yv);
    const int64_t end = l->start[v + 1], n = m->n_coeffs;
    for (int64_t k = l->start[v]; k < end; ++k) {
        if (k + PREFETCH_AHEAD < n) prefetch_column(m->D + (int64_t)l->atom[k + PREFETCH_AHEAD] * T, T);
        const double s = w[l->fiber[k]] * l->value[k];
        if (s == 0.0) continue; /* projected weights are often exactly 0 */
        axpy(T, s, m->D + (int64_t)l->atom[k] * T, yv);
    }
}

/* Voxel ranges that split the coefficients evenly but never cut a voxel's
 * sub-vector (the paper's synchronisation-free mapping, Fig. 5b): each even
 * split point moves to the nearer end of the sub-vector it falls into. */
static void voxel_splits(const ns_life_layout *l, int64_t n_coeffs, int32_t parts, int32_t *split) {
    split[0] = 0;
    split[parts] = l->n_keys;
    for (int32_t p = 1; p < parts; ++p) {
        const int64_t target = n_coeffs * p / parts;
        /* first voxel v with start[v + 1] > target */
        int32_t lo = 0, hi = l->n_keys - 1;
        while (lo < hi) {
            const int32_t mid = lo + (hi - lo) / 2;
            if (l->start[mid + 1] > target) hi = mid;
            else lo = mid + 1;
        }
        int32_t v = lo;
        if (target - l->start[v] > l->start[v + 1] - target) ++v; /* nearer boundary */
        if (v < split[p - 1]) v = split[p - 1];
        split[p] = v;
    }
}

/* The optimised loops over ranges of keys or coefficients, compiled for AVX-512, AVX2 and
 * the baseline and chosen at load time by the CPU (function multiversioning, as the cable
 * loop's): the default x86-64 target has only SSE2, two doubles a lane, and the inner loops over
 * theta are what the products spend their time on (most of a fit; measured faster than the
 * SSE2 build, docs/life.md, "CPU details"). The clones differ
 * from each other (and from the naive loops) only in rounding (the simd reduction order), far
 * inside the 1e-12 the variants are checked to. */
#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(__INTEL_COMPILER)
#define NS_LIFE_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define NS_LIFE_CLONES
#endif

/* y for voxels [v0, v1) (voxel-sorted copy). */
NS_LIFE_CLONES static void mw_voxels(const ns_life_model_t *m, const ns_life_layout *l, const double *w,
                                     int32_t v0, int32_t v1, double *y) {
    for (int32_t v = v0; v < v1; ++v) mw_voxel(m, l, w, v, y);
}

/* y += coefficients [k0, k1) (any copy); atomic when several threads share voxels. */
NS_LIFE_CLONES static void mw_coeffs(const ns_life_model_t *m, const ns_life_layout *l, const double *w,
                                     int64_t k0, int64_t k1, int atomic, double *y) {
    const int64_t T = m->n_theta;
    for (int64_t k = k0; k < k1; ++k) {
        const double s = w[l->fiber[k]] * l->value[k];
        if (s == 0.0) continue;
        const double *d = m->D + (int64_t)l->atom[k] * T;
        double *yv = y + (int64_t)l->voxel[k] * T;
        if (!atomic) axpy(T, s, d, yv);
        else axpy_atomic(T, s, d, yv);
    }
}

/* y += atoms [a0, a1) (atom-sorted copy). */
NS_LIFE_CLONES static void mw_atoms(const ns_life_model_t *m, const ns_life_layout *l, const double *w,
                                    int32_t a0, int32_t a1, int atomic, double *y) {
    const int64_t T = m->n_theta;
    for (int32_t a = a0; a < a1; ++a) {
        const double *d = m->D + (int64_t)a * T;
        for (int64_t k = l->start[a]; k < l->start[a + 1]; ++k) {
            const double s = w[l->fiber[k]] * l->value[k];
            if (s == 0.0) continue;
            double *yv = y + (int64_t)l->voxel[k] * T;
            if (!atomic) axpy(T, s, d, yv);
            else axpy_atomic(T, s, d, yv);
        }
    }
}

/* mine[f] += M^T y over coefficients [k0, k1). */
NS_LIFE_CLONES static void mty_coeffs(const ns_life_model_t *m, const ns_life_layout *l, const double *y,
                                      int64_t k0, int64_t k1, double *mine) {
    const int64_t T = m->n_theta;
    for (int64_t k = k0; k < k1; ++k)
        mine[l->fiber[k]] += l->value[k] * dot(T, m->D + (int64_t)l->atom[k] * T, y + (int64_t)l->voxel[k] * T);
}

/* mine[f] += M^T y over atoms [a0, a1) (atom-sorted copy). */
NS_LIFE_CLONES static void mty_atoms(const ns_life_model_t *m, const ns_life_layout *l, const double *y,
                                     int32_t a0, int32_t a1, double *mine) {
    const int64_t T = m->n_theta;
    for (int32_t a = a0; a < a1; ++a) {
        const double *d = m->D + (int64_t)a * T;
        for (int64_t k = l->start[a]; k < l->start[a + 1]; ++k) {
            if (k + PREFETCH_AHEAD < m->n_coeffs) prefetch_column(y + (int64_t)l->voxel[k + PREFETCH_AHEAD] * T, T);
            mine[l->fiber[k]] += l->value[k] * dot(T, d, y + (int64_t)l->voxel[k] * T);
        }
    }
}

/* mine[f] += M^T y over voxels [v0, v1) (voxel-sorted copy). */
NS_LIFE_CLONES static void mty_voxels(const ns_life_model_t *m, const ns_life_layout *l, const double *y,
                                      int32_t v0, int32_t v1, double *mine) {
    const int64_t T = m->n_theta;
    for (int32_t v = v0; v < v1; ++v) {
        const double *yv = y + (int64_t)v * T;
        for (int64_t k = l->start[v]; k < l->start[v + 1]; ++k) {
            if (k + PREFETCH_AHEAD < m->n_coeffs) prefetch_column(m->D + (int64_t)l->atom[k + PREFETCH_AHEAD] * T, T);
            mine[l->fiber[k]] += l->value[k] * dot(T, m->D + (int64_t)l->atom[k] * T, yv);
        }
    }
}

/* Chunks of the dynamic schedules (the sizes the loops used before: 64 voxels, 16 atoms). */
#define VOXEL_CHUNK 64
#define ATOM_CHUNK 16
static inline int32_t chunk_end(int32_t c, int32_t size, int32_t n) {
    const int64_t e = ((int64_t)c + 1) * size;
    return e < n ? (int32_t)e : n;
}

static void zero_parallel(double *v, int64_t n, int32_t nt) {
    NS_PRAGMA(omp parallel for num_threads(nt) schedule(static))
    for (int64_t i = 0; i < n; ++i) v[i] = 0.0;
}

static ns_status mw_opt(ns_life_model_t *m, const ns_life_layout *l, ns_life_variant variant,
                        int32_t nt, const double *w, double *y) {
    const int64_t T = m->n_theta;
    const int64_t n = m->n_coeffs;
    (void)nt;
    switch (variant) {
    case NS_LIFE_VOXEL_VOXEL: {
        const int32_t nc = (m->n_voxels + VOXEL_CHUNK - 1) / VOXEL_CHUNK;
        NS_PRAGMA(omp parallel for num_threads(nt) schedule(dynamic, 1))
        for (int32_t c = 0; c < nc; ++c) mw_voxels(m, l, w, c * VOXEL_CHUNK, chunk_end(c, VOXEL_CHUNK, m->n_voxels), y);
        return NS_OK;
    }
    case NS_LIFE_COEFF_VOXEL: {
        int32_t *split = malloc(((size_t)nt + 1) * sizeof *split);
        if (!split) return ns_fail(NS_ERR_OUT_OF_MEMORY, "voxel splits");
        voxel_splits(l, n, nt, split);
        NS_PRAGMA(omp parallel for num_threads(nt) schedule(static, 1))
        for (int32_t p = 0; p < nt; ++p) mw_voxels(m, l, w, split[p], split[p + 1], y);
        free(split);
        return NS_OK;
    }
    case NS_LIFE_COEFF_ATOM:
        /* Coefficients of one voxel are spread over threads: atomics on y. */
        zero_parallel(y, T * m->n_voxels, nt);
        NS_PRAGMA(omp parallel for num_threads(nt) schedule(static, 1))
        for (int32_t p = 0; p < nt; ++p) mw_coeffs(m, l, w, n * p / nt, n * (p + 1) / nt, nt > 1, y);
        return NS_OK;
    case NS_LIFE_ATOM_ATOM: {
        zero_parallel(y, T * m->n_voxels, nt);
        const int32_t nc = (m->n_atoms + ATOM_CHUNK - 1) / ATOM_CHUNK;
        NS_PRAGMA(omp parallel for num_threads(nt) schedule(dynamic, 1))
        for (int32_t c = 0; c < nc; ++c)
            mw_atoms(m, l, w, c * ATOM_CHUNK, chunk_end(c, ATOM_CHUNK, m->n_atoms), nt > 1, y);
        return NS_OK;
    }
    default:
        return ns_fail(NS_ERR_INTERNAL, "mw_opt: variant %d", (int)variant);
    }
}

/* w = M^T y: every thread sums into its own fiber vector (no atomics: the
 * paper uses atomics here, private accumulators measured faster and make
 * every variant deterministic for a thread count, the chunks being assigned
 * statically); the vectors are then added in thread order. */
static ns_status mty_opt(ns_life_model_t *m, const ns_life_layout *l, ns_life_variant variant,
                         int32_t nt, const double *y, double *w, ns_life_cpu_work *work) {
    const int64_t n = m->n_coeffs;
    const int64_t F = m->n_fibers;
    double *acc = w;
    if (nt > 1) {
        const size_t need = (size_t)nt * (size_t)F;
        if (work->n < need) {
            free(work->buf);
            work->buf = malloc(need * sizeof *work->buf);
            work->n = work->buf ? need : 0;
            if (!work->buf) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%d fiber accumulators", (int)nt);
        }
        acc = work->buf;
    }
    NS_PRAGMA(omp parallel num_threads(nt))
    {
#ifdef _OPENMP
        const int32_t me = (int32_t)omp_get_thread_num();
#else
        const int32_t me = 0;
#endif
        double *mine = acc + (int64_t)me * F;
        /* all nt slots, in case the runtime gives fewer threads than asked */
        NS_PRAGMA(omp for schedule(static))
        for (int64_t i = 0; i < (int64_t)nt * F; ++i) acc[i] = 0.0;
        switch (variant) {
        case NS_LIFE_COEFF_ATOM:
        case NS_LIFE_COEFF_VOXEL:
            /* nt contiguous ranges, one per iteration: deterministic for a thread count */
            NS_PRAGMA(omp for schedule(static, 1))
            for (int32_t p = 0; p < nt; ++p) mty_coeffs(m, l, y, n * p / nt, n * (p + 1) / nt, mine);
            break;
        case NS_LIFE_ATOM_ATOM: {
            const int32_t nc = (m->n_atoms + ATOM_CHUNK - 1) / ATOM_CHUNK;
            /* chunk c on thread c % nt: which fiber vector a product lands in, and so the sums,
             * depend on the thread count only (a dynamic schedule made AUTO's fits differ in the
             * last digits from run to run) */
            NS_PRAGMA(omp for schedule(static, 1))
            for (int32_t c = 0; c < nc; ++c) mty_atoms(m, l, y, c * ATOM_CHUNK, chunk_end(c, ATOM_CHUNK, m->n_atoms), mine);
            break;
        }
        default: { /* NS_LIFE_VOXEL_VOXEL */
            const int32_t nc = (m->n_voxels + VOXEL_CHUNK - 1) / VOXEL_CHUNK;
            NS_PRAGMA(omp for schedule(static, 1)) /* deterministic for a thread count, as above */
            for (int32_t c = 0; c < nc; ++c) mty_voxels(m, l, y, c * VOXEL_CHUNK, chunk_end(c, VOXEL_CHUNK, m->n_voxels), mine);
            break;
        }
        }
        if (nt > 1) {
            /* implicit barrier of the omp for above; then sum in thread order */
            NS_PRAGMA(omp for schedule(static))
            for (int64_t f = 0; f < F; ++f) {
                double s = 0.0;
                for (int32_t p = 0; p < nt; ++p) s += acc[(int64_t)p * F + f];
                w[f] = s;
            }
        }
    }
    return NS_OK;
}

ns_status ns_life_cpu_product(ns_life_model_t *m, ns_life_product product, ns_life_variant variant,
                              int32_t threads, const double *in, double *out,
                              ns_life_cpu_work *work) {
    if (!m || !in || !out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "LiFE product: NULL argument");
    const ns_life_layout *l = NULL;
    ns_status s = ns_life_layout_get(m, ns_life_variant_order(variant), &l);
    if (s != NS_OK) return s;
    const int32_t nt = ns_life_cpu_threads(threads, m->n_coeffs);
    switch (variant) {
    case NS_LIFE_NAIVE:
    case NS_LIFE_NAIVE_ATOM:
    case NS_LIFE_NAIVE_VOXEL:
        if (product == NS_LIFE_MW) mw_naive(m, l, in, out);
        else mty_naive(m, l, in, out);
        return NS_OK;
    case NS_LIFE_COEFF_ATOM:
    case NS_LIFE_COEFF_VOXEL:
    case NS_LIFE_ATOM_ATOM:
    case NS_LIFE_VOXEL_VOXEL:
        if (product == NS_LIFE_MW) return mw_opt(m, l, variant, nt, in, out);
        return mty_opt(m, l, variant, nt, in, out, work);
    default:
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "LiFE variant %d is not a CPU variant", (int)variant);
    }
}
