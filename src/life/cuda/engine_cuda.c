/* The LiFE CUDA backend: device memory (with a budget: a model that does not
 * fit fails with NS_ERR_DEVICE_MEMORY naming the bytes), the products on host
 * or device vectors, CUDA-event timing, and SBBNNLS with every vector on the
 * device (the solver itself is sbbnnls.c over the operations below; sums
 * over processes go through a pinned host stage). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/cuda_check.h"
#include "life/cuda/life_kernels.h"
#include "life/life_impl.h"
#include "neurosolve/device.h"

/* Free device memory left to the runtime and other users when no limit is
 * given: 5 % plus 64 MiB [bytes]. */
#define RESERVE_BYTES ((size_t)64 << 20)
#define GIB (1024.0 * 1024.0 * 1024.0)

typedef struct dev_layout {
    int32_t *atom, *voxel, *fiber;
    double *value;
    int64_t *start;
    int loaded;
} dev_layout;

typedef struct cuda_state {
    int device, tp, sms;
    double *D;                            /* tp x n_atoms */
    float *D32;                           /* the same in float32, made on first use (voxel-f32d) */
    void *D16;                            /* in float16 times 2^-k, made on first use (voxel-f16d) */
    double d16_scale;                     /* 2^k: D16's entries times it are D's */
    void *C16;                            /* voxel-lr16d: C = U^T D (lr_r x n_atoms) in float16 x 2^-k */
    double c16_scale;                     /* 2^k */
    double *Ut, *Un;                      /* U^T (lr_r x tp) and U (tp x lr_r, row-major) */
    double *lr_tmp;                       /* P or Q, lr_r x n_voxels */
    int lr_r;                             /* rank kept (a multiple of 32), 0 until made */
    float *sh_um, *sh_uq;                 /* voxel-sh: U^T (R x tp) and U (tp x padded R), float32 */
    float *sh_ang;                        /* the grid's angles (life_kernels.h) */
    int32_t *sh_order;                    /* voxels by decreasing coefficient count */
    int32_t sh_busy, sh_l;                /* voxels with coefficients; ENCODE's L of the atoms */
    int sh_lmax, sh_grid[2];              /* degree of the fit (0 until made); persistent grids */
    double *w_in, *w_out, *y_in, *y_out;  /* staging of the host-array products */
    dev_layout lay[3];
    cudaStream_t stream;
    cudaEvent_t ev[2];
    double *partial, *scalar;
    size_t budget, used;
} cuda_state;

int ns_life_cuda_supports(ns_life_variant v) { return v > NS_LIFE_AUTO && (int)v < NS_LIFE_VARIANT_ALL; }

static ns_status dev_alloc(cuda_state *st, void **p, size_t bytes, const char *what) {
    *p = NULL;
    if (st->used + bytes > st->budget)
        return ns_fail(NS_ERR_DEVICE_MEMORY,
                       "LiFE on device %d: %s needs %.3f GiB more, but %.3f of the %.3f GiB allowed "
                       "are in use (a smaller model, device_memory_limit, or the CPU backend)",
                       st->device, what, bytes / GIB, st->used / GIB, st->budget / GIB);
    NS_CUDA_TRY(cudaMalloc(p, bytes ? bytes : 8));
    st->used += bytes;
    return NS_OK;
}


static size_t layout_bytes(const ns_life_model_t *m, int order) {
    size_t b = (size_t)m->n_coeffs * (3 * sizeof(int32_t) + sizeof(double));
    if (order == NS_LIFE_ORDER_ATOM) b += ((size_t)m->n_atoms + 1) * sizeof(int64_t);
    if (order == NS_LIFE_ORDER_VOXEL) b += ((size_t)m->n_voxels + 1) * sizeof(int64_t);
    return b;
}

static size_t voxel_vector_bytes(const ns_life_model_t *m, int tp) {
    return (size_t)tp * (size_t)m->n_voxels * sizeof(double);
}

/* Phi in `order` on the device (copied on first use). */
static ns_status load_layout(ns_life_engine_t *e, int order) {
    cuda_state *st = e->cuda;
    dev_layout *d = &st->lay[order];
    if (d->loaded) return NS_OK;
    const ns_life_layout *l = NULL;
    ns_status s = ns_life_layout_get(e->model, order, &l);
    if (s != NS_OK) return s;
    const size_t n = (size_t)e->model->n_coeffs;
    const char *what = order == NS_LIFE_ORDER_ATOM ? "the atom-sorted Phi"
                       : order == NS_LIFE_ORDER_VOXEL ? "the voxel-sorted Phi" : "Phi";
    if ((s = dev_alloc(st, (void **)&d->atom, n * 4, what)) != NS_OK) return s;
    if ((s = dev_alloc(st, (void **)&d->voxel, n * 4, what)) != NS_OK) return s;
    if ((s = dev_alloc(st, (void **)&d->fiber, n * 4, what)) != NS_OK) return s;
    if ((s = dev_alloc(st, (void **)&d->value, n * 8, what)) != NS_OK) return s;
    /* On the engine's stream, like every operation here: the stream is
     * non-blocking, so a plain cudaMemcpy (legacy default stream) would not
     * be ordered before the kernels that read Phi. */
    NS_CUDA_TRY(cudaMemcpyAsync(d->atom, l->atom, n * 4, cudaMemcpyHostToDevice, st->stream));
    NS_CUDA_TRY(cudaMemcpyAsync(d->voxel, l->voxel, n * 4, cudaMemcpyHostToDevice, st->stream));
    NS_CUDA_TRY(cudaMemcpyAsync(d->fiber, l->fiber, n * 4, cudaMemcpyHostToDevice, st->stream));
    NS_CUDA_TRY(cudaMemcpyAsync(d->value, l->value, n * 8, cudaMemcpyHostToDevice, st->stream));
    if (l->start) {
        const size_t sb = ((size_t)l->n_keys + 1) * sizeof(int64_t);
        if ((s = dev_alloc(st, (void **)&d->start, sb, what)) != NS_OK) return s;
        NS_CUDA_TRY(cudaMemcpyAsync(d->start, l->start, sb, cudaMemcpyHostToDevice, st->stream));
    }
    /* one wait per layout, outside any timed region */
    NS_CUDA_TRY(cudaStreamSynchronize(st->stream));
    d->loaded = 1;
    return NS_OK;
}

/* The float32 dictionary of voxel-f32d, converted on the device on first use. */
static ns_status load_d32(ns_life_engine_t *e) {
    cuda_state *st = e->cuda;
    if (st->D32) return NS_OK;
    const int64_t n = (int64_t)st->tp * e->model->n_atoms;
    ns_status s = dev_alloc(st, (void **)&st->D32, (size_t)n * sizeof(float), "the float32 dictionary");
    if (s != NS_OK) return s;
    NS_CUDA_TRY(ns_life_to_float(st->D, st->D32, n, st->stream));
    NS_CUDA_TRY(cudaStreamSynchronize(st->stream)); /* once, outside any timed region */
    return NS_OK;
}

/* The float16 dictionary of voxel-f16d: D times 2^-k with k such that
 * max |D| x 2^-k is in [2^14, 2^15) (below float16's largest 65,504, and
 * small entries stay normal numbers as long as possible), rounded to float32
 * and then to float16 (round to nearest even) on the device on first use. */
static ns_status load_d16(ns_life_engine_t *e) {
    cuda_state *st = e->cuda;
    if (st->D16) return NS_OK;
    const ns_life_model_t *m = e->model;
    const int64_t n = (int64_t)st->tp * m->n_atoms;
    double mx = 0.0;
    for (int64_t i = 0; i < (int64_t)m->n_theta * m->n_atoms; ++i)
        if (fabs(m->D[i]) > mx) mx = fabs(m->D[i]);
    int ex = 0;
    (void)frexp(mx, &ex); /* mx < 2^ex */
    st->d16_scale = ldexp(1.0, ex - 15);
    ns_status s = dev_alloc(st, &st->D16, (size_t)n * 2, "the float16 dictionary");
    if (s != NS_OK) return s;
    NS_CUDA_TRY(ns_life_to_half(st->D, st->D16, ldexp(1.0, 15 - ex), n, st->stream));
    NS_CUDA_TRY(cudaStreamSynchronize(st->stream)); /* once, outside any timed region */
    return NS_OK;
}

/* Eigen-decomposition of the symmetric n x n matrix A (row-major, destroyed)
 * by cyclic Jacobi rotations: eigenvalues in lam, eigenvectors in the columns
 * of V (row-major). n <= NS_LIFE_MAX_THETA: a few sweeps of n^2/2 rotations. */
static void jacobi_eig(double *A, int n, double *V, double *lam) {
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) V[i * n + j] = i == j;
    for (int sweep = 0; sweep < 100; ++sweep) {
        double off = 0.0, diag = 0.0;
        for (int i = 0; i < n; ++i) {
            diag += A[i * n + i] * A[i * n + i];
            for (int j = i + 1; j < n; ++j) off += A[i * n + j] * A[i * n + j];
        }
        if (off <= 1e-32 * diag || off == 0.0) break;
        for (int p = 0; p < n; ++p)
            for (int q = p + 1; q < n; ++q) {
                const double apq = A[p * n + q];
                if (apq == 0.0) continue;
                const double theta = (A[q * n + q] - A[p * n + p]) / (2.0 * apq);
                const double t = theta >= 0 ? 1.0 / (theta + sqrt(theta * theta + 1.0))
                                            : -1.0 / (-theta + sqrt(theta * theta + 1.0));
                const double c = 1.0 / sqrt(t * t + 1.0), sn = t * c;
                for (int k = 0; k < n; ++k) { /* A J */
                    const double akp = A[k * n + p], akq = A[k * n + q];
                    A[k * n + p] = c * akp - sn * akq;
                    A[k * n + q] = sn * akp + c * akq;
                }
                for (int k = 0; k < n; ++k) { /* J^T (A J) */
                    const double apk = A[p * n + k], aqk = A[q * n + k];
                    A[p * n + k] = c * apk - sn * aqk;
                    A[q * n + k] = sn * apk + c * aqk;
                }
                for (int k = 0; k < n; ++k) { /* V J */
                    const double vkp = V[k * n + p], vkq = V[k * n + q];
                    V[k * n + p] = c * vkp - sn * vkq;
                    V[k * n + q] = sn * vkp + c * vkq;
                }
            }
    }
    for (int i = 0; i < n; ++i) lam[i] = A[i * n + i];
}

/* The factored dictionary of voxel-lr16d (docs/life.md), made on first use:
 * G = D D^T, its eigenvectors by decreasing eigenvalue, r = the smallest
 * multiple of 32 whose first discarded singular value sqrt(lambda_r) is at
 * most 2^-11 (float16's unit roundoff) of the largest (or r = tp when none
 * is), U = the first r eigenvectors (zero columns past n_theta), C = U^T D
 * rounded to float16 as voxel-f16d rounds D (scaled by a power of two). */
static ns_status load_dlr(ns_life_engine_t *e) {
    cuda_state *st = e->cuda;
    if (st->lr_r) return NS_OK;
    const ns_life_model_t *m = e->model;
    const int n = m->n_theta, tp = st->tp;
    const int64_t A = m->n_atoms;
    double *G = calloc((size_t)n * n, sizeof *G), *V = malloc((size_t)n * n * sizeof *V);
    double *lam = malloc((size_t)n * sizeof *lam);
    int *ord = malloc((size_t)n * sizeof *ord);
    if (!G || !V || !lam || !ord) {
        free(G), free(V), free(lam), free(ord);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "voxel-lr16d: the %d x %d Gram matrix", n, n);
    }
    for (int64_t a = 0; a < A; ++a) {
        const double *d = m->D + a * n;
        for (int i = 0; i < n; ++i)
            for (int j = 0; j <= i; ++j) G[i * n + j] += d[i] * d[j];
    }
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < i; ++j) G[j * n + i] = G[i * n + j];
    jacobi_eig(G, n, V, lam);
    for (int i = 0; i < n; ++i) ord[i] = i;
    for (int i = 1; i < n; ++i) { /* insertion sort, decreasing eigenvalue */
        const int k = ord[i];
        int j = i - 1;
        while (j >= 0 && lam[ord[j]] < lam[k]) ord[j + 1] = ord[j], --j;
        ord[j + 1] = k;
    }
    const double top = sqrt(fmax(lam[ord[0]], 0.0));
    int r = 32;
    while (r < tp && r < n && sqrt(fmax(lam[ord[r]], 0.0)) > ldexp(top, -11)) r += 32;
    if (r > tp) r = tp;
    /* U (tp x r, row-major) and U^T (r x tp); columns past n_theta zero */
    const size_t ub = (size_t)tp * (size_t)r * sizeof(double);
    double *Un = calloc((size_t)tp * r, sizeof *Un), *Ut = calloc((size_t)tp * r, sizeof *Ut);
    double *C = malloc((size_t)r * (size_t)A * sizeof *C);
    ns_status s = NS_OK;
    if (!Un || !Ut || !C) s = ns_fail(NS_ERR_OUT_OF_MEMORY, "voxel-lr16d: the factored dictionary (%d x %lld)", r,
                                      (long long)A);
    for (int j = 0; s == NS_OK && j < r && j < n; ++j)
        for (int i = 0; i < n; ++i) Un[(size_t)i * r + j] = Ut[(size_t)j * tp + i] = V[i * n + ord[j]];
    double mx = 0.0;
    for (int64_t a = 0; s == NS_OK && a < A; ++a) {
        const double *d = m->D + a * n;
        for (int j = 0; j < r; ++j) {
            double c = 0.0;
            for (int i = 0; i < n; ++i) c += Un[(size_t)i * r + j] * d[i];
            C[a * r + j] = c;
            mx = fmax(mx, fabs(c));
        }
    }
    free(G), free(V), free(lam), free(ord);
    double *Cd = NULL;
    if (s == NS_OK) s = dev_alloc(st, (void **)&st->Ut, ub, "the voxel-lr16d factor U");
    if (s == NS_OK) s = dev_alloc(st, (void **)&st->Un, ub, "the voxel-lr16d factor U");
    if (s == NS_OK)
        s = dev_alloc(st, (void **)&st->lr_tmp, (size_t)r * (size_t)m->n_voxels * 8, "the voxel-lr16d voxel scratch");
    if (s == NS_OK) s = dev_alloc(st, &st->C16, (size_t)r * (size_t)A * 2, "the voxel-lr16d float16 factor");
    if (s == NS_OK) s = dev_alloc(st, (void **)&Cd, (size_t)r * (size_t)A * 8, "the voxel-lr16d factor (staging)");
    if (s == NS_OK) {
        int ex = 0;
        (void)frexp(mx > 0 ? mx : 1.0, &ex); /* mx < 2^ex */
        st->c16_scale = ldexp(1.0, ex - 15);
        cudaError_t err = cudaMemcpyAsync(st->Ut, Ut, ub, cudaMemcpyHostToDevice, st->stream);
        if (err == cudaSuccess) err = cudaMemcpyAsync(st->Un, Un, ub, cudaMemcpyHostToDevice, st->stream);
        if (err == cudaSuccess)
            err = cudaMemcpyAsync(Cd, C, (size_t)r * (size_t)A * 8, cudaMemcpyHostToDevice, st->stream);
        if (err == cudaSuccess) err = ns_life_to_half(Cd, st->C16, ldexp(1.0, 15 - ex), (int64_t)r * A, st->stream);
        if (err == cudaSuccess) err = cudaStreamSynchronize(st->stream); /* once, outside any timed region */
        if (err != cudaSuccess) s = ns_cuda_status(err, "voxel-lr16d factor upload", __FILE__, __LINE__);
    }
    if (Cd) {
        (void)cudaFree(Cd);
        st->used -= (size_t)r * (size_t)A * 8;
    }
    free(Un), free(Ut), free(C);
    if (s == NS_OK) st->lr_r = r;
    return s;
}

/* voxel-sh (docs/life.md): the fit U of the dictionary over its atoms'
 * orientations (sh_basis.c, on the host), its two float32 layouts, and the
 * voxels by decreasing coefficient count (a counting sort of the voxel-sorted
 * copy's sub-vector lengths, voxels in order within a count), made once. */
static ns_status load_sh(ns_life_engine_t *e) {
    cuda_state *st = e->cuda;
    if (st->sh_lmax) return NS_OK;
    const ns_life_model_t *m = e->model;
    const ns_life_layout *l = NULL;
    ns_status s = ns_life_layout_get(e->model, NS_LIFE_ORDER_VOXEL, &l);
    if (s != NS_OK) return s;
    int lmax = 0;
    double *U = NULL, err = 0.0;
    if ((s = ns_life_sh_fit(m, NS_LIFE_SH_TOL, &lmax, &U, &err)) != NS_OK) return s;
    const int R = ns_life_sh_count(lmax), RP = ns_life_sh_padded(lmax), tp = st->tp, T = m->n_theta;
    const int32_t V = m->n_voxels, L = ns_life_grid_l(m->n_atoms);
    float *um = calloc((size_t)R * tp, sizeof *um), *uq = calloc((size_t)tp * RP, sizeof *uq);
    float *ang = malloc((size_t)2 * (2 * L - 1) * sizeof *ang);
    int32_t *order = malloc((size_t)V * sizeof *order);
    int64_t most = 0;
    for (int32_t v = 0; v < V; ++v) most = l->start[v + 1] - l->start[v] > most ? l->start[v + 1] - l->start[v] : most;
    int64_t *first = calloc((size_t)most + 2, sizeof *first);
    if (!um || !uq || !ang || !order || !first) s = ns_fail(NS_ERR_OUT_OF_MEMORY, "voxel-sh: the basis matrices");
    if (s == NS_OK) {
        /* the grid's angles as ns_life_atom_orientation makes them */
        const double pi = 3.14159265358979323846;
        for (int32_t i = 0; i < L; ++i) ang[2 * i] = (float)cos(i * pi / L), ang[2 * i + 1] = (float)sin(i * pi / L);
        for (int32_t j = 0; j < L - 1; ++j)
            ang[2 * (L + j)] = (float)sin((j + 1) * pi / L), ang[2 * (L + j) + 1] = (float)cos((j + 1) * pi / L);
        for (int j = 0; j < R; ++j)
            for (int t = 0; t < T; ++t) um[(size_t)j * tp + t] = uq[(size_t)t * RP + j] = (float)U[(size_t)j * T + t];
        /* first[c]: where voxels with c coefficients start when counts decrease */
        for (int32_t v = 0; v < V; ++v) ++first[most - (l->start[v + 1] - l->start[v])];
        int64_t at = 0;
        for (int64_t c = 0; c <= most; ++c) {
            const int64_t n = first[c];
            first[c] = at;
            at += n;
        }
        st->sh_busy = (int32_t)first[most]; /* those with count 0 come last */
        for (int32_t v = 0; v < V; ++v) order[first[most - (l->start[v + 1] - l->start[v])]++] = v;
    }
    free(U), free(first);
    const size_t umb = (size_t)R * tp * sizeof(float), uqb = (size_t)tp * RP * sizeof(float);
    if (s == NS_OK) s = dev_alloc(st, (void **)&st->sh_um, umb, "the voxel-sh basis matrix");
    if (s == NS_OK) s = dev_alloc(st, (void **)&st->sh_uq, uqb, "the voxel-sh basis matrix");
    if (s == NS_OK) s = dev_alloc(st, (void **)&st->sh_order, (size_t)V * sizeof(int32_t), "the voxel-sh voxel order");
    const size_t angb = (size_t)2 * (2 * L - 1) * sizeof(float);
    if (s == NS_OK) s = dev_alloc(st, (void **)&st->sh_ang, angb, "the voxel-sh angles");
    if (s == NS_OK) {
        cudaError_t err2 = cudaMemcpyAsync(st->sh_um, um, umb, cudaMemcpyHostToDevice, st->stream);
        if (err2 == cudaSuccess) err2 = cudaMemcpyAsync(st->sh_uq, uq, uqb, cudaMemcpyHostToDevice, st->stream);
        if (err2 == cudaSuccess)
            err2 = cudaMemcpyAsync(st->sh_order, order, (size_t)V * sizeof(int32_t), cudaMemcpyHostToDevice,
                                   st->stream);
        if (err2 == cudaSuccess) err2 = cudaMemcpyAsync(st->sh_ang, ang, angb, cudaMemcpyHostToDevice, st->stream);
        if (err2 == cudaSuccess) err2 = ns_life_sh_prepare(lmax, tp, T, L, st->sms, st->sh_grid);
        if (err2 == cudaSuccess) err2 = cudaStreamSynchronize(st->stream); /* once, outside any timed region */
        if (err2 != cudaSuccess) s = ns_cuda_status(err2, "voxel-sh upload", __FILE__, __LINE__);
    }
    free(um), free(uq), free(ang), free(order);
    if (s == NS_OK) {
        st->sh_lmax = lmax;
        st->sh_l = L;
    }
    return s;
}

static ns_status load_reduced(ns_life_engine_t *e, ns_life_variant v) {
    if (v == NS_LIFE_VOXEL_SH) return load_sh(e);
    if (v == NS_LIFE_VOXEL_F32D) return load_d32(e);
    if (v == NS_LIFE_VOXEL_F16D) return load_d16(e);
    if (v == NS_LIFE_VOXEL_LR16D) return load_dlr(e);
    return NS_OK;
}

static ns_status phi_for(ns_life_engine_t *e, ns_life_variant v, ns_life_dev_phi *p,
                         ns_life_kernel *kernel, int *by_voxel) {
    const int order = ns_life_variant_order(v);
    ns_status s = load_layout(e, order);
    if (s == NS_OK) s = load_reduced(e, v);
    if (s != NS_OK) return s;
    const cuda_state *st = e->cuda;
    const dev_layout *d = &st->lay[order];
    p->atom = d->atom;
    p->voxel = d->voxel;
    p->fiber = d->fiber;
    p->value = d->value;
    p->start = d->start;
    p->n_keys = order == NS_LIFE_ORDER_ATOM ? e->model->n_atoms
                : order == NS_LIFE_ORDER_VOXEL ? e->model->n_voxels : 0;
    p->n_coeffs = e->model->n_coeffs;
    *by_voxel = order == NS_LIFE_ORDER_VOXEL;
    switch (v) {
    case NS_LIFE_NAIVE:
    case NS_LIFE_NAIVE_ATOM:
    case NS_LIFE_NAIVE_VOXEL: *kernel = NS_LIFE_K_REFERENCE; break;
    case NS_LIFE_COEFF_ATOM:
    case NS_LIFE_COEFF_VOXEL: *kernel = NS_LIFE_K_COEFF; break;
    case NS_LIFE_VOXEL_F32D: *kernel = NS_LIFE_K_VOXEL_F32D; break;
    case NS_LIFE_VOXEL_F16D: *kernel = NS_LIFE_K_VOXEL_F16D; break;
    default: *kernel = NS_LIFE_K_KEY; break;
    }
    return NS_OK;
}

/* One product on device vectors (input and output already on the device). */
static ns_status launch(ns_life_engine_t *e, ns_life_product p, ns_life_variant v, const double *in,
                        double *out) {
    cuda_state *st = e->cuda;
    ns_life_dev_phi phi;
    ns_life_kernel kernel;
    int by_voxel = 0;
    ns_status s = phi_for(e, v, &phi, &kernel, &by_voxel);
    if (s != NS_OK) return s;
    const ns_life_model_t *m = e->model;
    if (v == NS_LIFE_VOXEL_LR16D) {
        cudaError_t err = p == NS_LIFE_MW
            ? ns_life_launch_lr_mw(&phi, st->lr_r, st->tp, m->n_voxels, st->C16, st->c16_scale, st->Ut,
                                   st->lr_tmp, in, out, st->stream)
            : ns_life_launch_lr_mty(&phi, st->lr_r, st->tp, m->n_theta, m->n_voxels, m->n_fibers, st->C16,
                                    st->c16_scale, st->Un, st->lr_tmp, in, out, st->stream);
        return ns_cuda_status(err, p == NS_LIFE_MW ? "LiFE y = M w kernel (voxel-lr16d)"
                                                   : "LiFE w = M^T y kernel (voxel-lr16d)", __FILE__, __LINE__);
    }
    if (v == NS_LIFE_VOXEL_SH) {
        cudaError_t err = p == NS_LIFE_MW
            ? ns_life_launch_sh_mw(&phi, st->sh_lmax, st->tp, m->n_voxels, st->sh_l, st->sh_um, st->sh_ang,
                                   st->sh_order, in, out, st->sh_grid[0], st->stream)
            : ns_life_launch_sh_mty(&phi, st->sh_lmax, st->tp, m->n_theta, st->sh_busy, m->n_fibers, st->sh_l,
                                    st->sh_uq, st->sh_ang, st->sh_order, in, out, st->sh_grid[1], st->stream);
        return ns_cuda_status(err, p == NS_LIFE_MW ? "LiFE y = M w kernel (voxel-sh)"
                                                   : "LiFE w = M^T y kernel (voxel-sh)", __FILE__, __LINE__);
    }
    const int hint = st->sms * 32;
    const void *Dr = kernel == NS_LIFE_K_VOXEL_F32D ? (const void *)st->D32
                     : kernel == NS_LIFE_K_VOXEL_F16D ? (const void *)st->D16 : NULL;
    const double scale = kernel == NS_LIFE_K_VOXEL_F16D ? st->d16_scale : 1.0;
    cudaError_t err = p == NS_LIFE_MW
        ? ns_life_launch_mw(kernel, &phi, by_voxel, m->n_theta, st->tp, m->n_voxels, st->D, Dr, scale, in, out,
                            hint, st->stream)
        : ns_life_launch_mty(kernel, &phi, by_voxel, m->n_theta, st->tp, m->n_fibers, st->D, Dr, scale, in, out,
                             hint, st->stream);
    return ns_cuda_status(err, p == NS_LIFE_MW ? "LiFE y = M w kernel" : "LiFE w = M^T y kernel",
                          __FILE__, __LINE__);
}

static ns_status stage_in(ns_life_engine_t *e, ns_life_product p, const double *in, double **din,
                          double **dout) {
    cuda_state *st = e->cuda;
    const ns_life_model_t *m = e->model;
    if (p == NS_LIFE_MW) {
        NS_CUDA_TRY(cudaMemcpyAsync(st->w_in, in, (size_t)m->n_fibers * 8, cudaMemcpyHostToDevice, st->stream));
        *din = st->w_in;
        *dout = st->y_out;
    } else {
        /* rows n_theta..tp-1 of y_in stay zero (set at allocation) */
        NS_CUDA_TRY(cudaMemcpy2DAsync(st->y_in, (size_t)st->tp * 8, in, (size_t)m->n_theta * 8,
                                      (size_t)m->n_theta * 8, (size_t)m->n_voxels,
                                      cudaMemcpyHostToDevice, st->stream));
        *din = st->y_in;
        *dout = st->w_out;
    }
    return NS_OK;
}

static ns_status stage_out(ns_life_engine_t *e, ns_life_product p, const double *dout, double *out) {
    cuda_state *st = e->cuda;
    const ns_life_model_t *m = e->model;
    if (p == NS_LIFE_MW)
        NS_CUDA_TRY(cudaMemcpy2DAsync(out, (size_t)m->n_theta * 8, dout, (size_t)st->tp * 8,
                                      (size_t)m->n_theta * 8, (size_t)m->n_voxels,
                                      cudaMemcpyDeviceToHost, st->stream));
    else
        NS_CUDA_TRY(cudaMemcpyAsync(out, dout, (size_t)m->n_fibers * 8, cudaMemcpyDeviceToHost, st->stream));
    NS_CUDA_TRY(cudaStreamSynchronize(st->stream));
    return NS_OK;
}

ns_status ns_life_cuda_product(ns_life_engine_t *e, ns_life_product p, ns_life_variant v,
                               const double *in, double *out) {
    double *din = NULL, *dout = NULL;
    ns_status s = stage_in(e, p, in, &din, &dout);
    if (s == NS_OK) s = launch(e, p, v, din, dout);
    if (s == NS_OK) s = stage_out(e, p, dout, out);
    return s;
}

ns_status ns_life_cuda_time(ns_life_engine_t *e, ns_life_product p, ns_life_variant v,
                            const double *in, double *out, int repeats, double *ms) {
    cuda_state *st = e->cuda;
    double *din = NULL, *dout = NULL;
    ns_status s = stage_in(e, p, in, &din, &dout);
    if (s == NS_OK) s = load_layout(e, ns_life_variant_order(v)); /* copies outside the timing */
    if (s == NS_OK) s = load_reduced(e, v);
    for (int r = 0; s == NS_OK && r < repeats; ++r) {
        NS_CUDA_TRY(cudaEventRecord(st->ev[0], st->stream));
        s = launch(e, p, v, din, dout);
        if (s != NS_OK) break;
        NS_CUDA_TRY(cudaEventRecord(st->ev[1], st->stream));
        NS_CUDA_TRY(cudaEventSynchronize(st->ev[1]));
        float t = 0.0f;
        NS_CUDA_TRY(cudaEventElapsedTime(&t, st->ev[0], st->ev[1]));
        ms[r] = t;
    }
    if (s == NS_OK) s = stage_out(e, p, dout, out);
    return s;
}

void ns_life_cuda_destroy(ns_life_engine_t *e) {
    cuda_state *st = e->cuda;
    if (!st) return;
    if (cudaSetDevice(st->device) == cudaSuccess) {
        if (st->stream) (void)cudaStreamSynchronize(st->stream);
        for (int o = 0; o < 3; ++o) {
            cudaFree(st->lay[o].atom);
            cudaFree(st->lay[o].voxel);
            cudaFree(st->lay[o].fiber);
            cudaFree(st->lay[o].value);
            cudaFree(st->lay[o].start);
        }
        cudaFree(st->D);
        cudaFree(st->D32);
        cudaFree(st->D16);
        cudaFree(st->C16);
        cudaFree(st->Ut);
        cudaFree(st->Un);
        cudaFree(st->lr_tmp);
        cudaFree(st->sh_um);
        cudaFree(st->sh_uq);
        cudaFree(st->sh_order);
        cudaFree(st->sh_ang);
        cudaFree(st->w_in);
        cudaFree(st->w_out);
        cudaFree(st->y_in);
        cudaFree(st->y_out);
        cudaFree(st->partial);
        cudaFree(st->scalar);
        ns_cuda_queue_destroy(st->stream, st->ev, 2);
    }
    (void)cudaGetLastError();
    free(st);
    e->cuda = NULL;
}

static ns_status setup(ns_life_engine_t *e, cuda_state *st) {
    const ns_life_model_t *m = e->model;
    NS_CUDA_TRY(cudaSetDevice(st->device));
    NS_CUDA_TRY(cudaDeviceGetAttribute(&st->sms, cudaDevAttrMultiProcessorCount, st->device));
    size_t free_b = 0, total_b = 0;
    NS_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
    st->budget = e->options.device_memory_limit;
    if (st->budget == 0) {
        const size_t reserve = free_b / 20 + RESERVE_BYTES;
        st->budget = free_b > reserve ? free_b - reserve : 0;
    }
    /* What the engine will hold: D, four staging vectors, the fit's vectors
     * (3 voxel + 6 fiber) and Phi in every order the variants need. */
    const size_t yv = voxel_vector_bytes(m, st->tp), fv = (size_t)m->n_fibers * 8;
    const size_t dict = (size_t)st->tp * (size_t)m->n_atoms * 8;
    size_t need = dict + 5 * yv + 8 * fv;
    int orders[3] = {0, 0, 0};
    const ns_life_variant want[2] = {e->options.mw_variant, e->options.mty_variant};
    for (int p = 0; p < 2; ++p) {
        if (want[p] == NS_LIFE_AUTO) orders[NS_LIFE_ORDER_ATOM] = orders[NS_LIFE_ORDER_VOXEL] = 1;
        else orders[ns_life_variant_order(want[p])] = 1;
    }
    for (int o = 0; o < 3; ++o)
        if (orders[o]) need += layout_bytes(m, o);
    if (want[0] == NS_LIFE_VOXEL_F32D || want[1] == NS_LIFE_VOXEL_F32D) need += dict / 2;
    if (want[0] == NS_LIFE_VOXEL_F16D || want[1] == NS_LIFE_VOXEL_F16D) need += dict / 4;
    if (want[0] == NS_LIFE_VOXEL_LR16D || want[1] == NS_LIFE_VOXEL_LR16D) /* at most r = tp: C, its staging, P/Q */
        need += dict / 4 + dict + yv;
    if (want[0] == NS_LIFE_VOXEL_SH || want[1] == NS_LIFE_VOXEL_SH) /* U twice at the largest degree, order, angles */
        need += (size_t)st->tp * (NS_LIFE_SH_MAX_COUNT + ns_life_sh_padded(NS_LIFE_SH_LMAX)) * sizeof(float) +
                (size_t)m->n_voxels * sizeof(int32_t) + (size_t)4 * ns_life_grid_l(m->n_atoms) * sizeof(float);
    if (need > st->budget)
        return ns_fail(NS_ERR_DEVICE_MEMORY,
                       "LiFE model (%lld coefficients, %d voxels, %d atoms, n_theta %d padded to %d) "
                       "needs %.3f GiB on device %d, %.3f GiB are allowed (free %.3f of %.3f GiB): use "
                       "the CPU backend or a smaller model",
                       (long long)m->n_coeffs, (int)m->n_voxels, (int)m->n_atoms, (int)m->n_theta,
                       st->tp, need / GIB, st->device, st->budget / GIB, free_b / GIB, total_b / GIB);
    NS_CUDA_TRY(cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking));
    NS_CUDA_TRY(cudaEventCreate(&st->ev[0]));
    NS_CUDA_TRY(cudaEventCreate(&st->ev[1]));
    ns_status s;
    if ((s = dev_alloc(st, (void **)&st->D, dict, "the padded dictionary")) != NS_OK) return s;
    /* Everything on st->stream (see load_layout): zero padding rows first. */
    NS_CUDA_TRY(cudaMemsetAsync(st->D, 0, dict, st->stream));
    NS_CUDA_TRY(cudaMemcpy2DAsync(st->D, (size_t)st->tp * 8, m->D, (size_t)m->n_theta * 8,
                                  (size_t)m->n_theta * 8, (size_t)m->n_atoms, cudaMemcpyHostToDevice,
                                  st->stream));
    if ((s = dev_alloc(st, (void **)&st->y_in, yv, "voxel vectors")) != NS_OK) return s;
    if ((s = dev_alloc(st, (void **)&st->y_out, yv, "voxel vectors")) != NS_OK) return s;
    NS_CUDA_TRY(cudaMemsetAsync(st->y_in, 0, yv, st->stream));
    if ((s = dev_alloc(st, (void **)&st->w_in, fv, "fiber vectors")) != NS_OK) return s;
    if ((s = dev_alloc(st, (void **)&st->w_out, fv, "fiber vectors")) != NS_OK) return s;
    if ((s = dev_alloc(st, (void **)&st->partial, NS_LIFE_RED_BLOCKS * 8, "reductions")) != NS_OK) return s;
    if ((s = dev_alloc(st, (void **)&st->scalar, 8, "reductions")) != NS_OK) return s;
    NS_CUDA_TRY(cudaStreamSynchronize(st->stream));
    return NS_OK;
}

ns_status ns_life_cuda_create(ns_life_engine_t *e) {
    const ns_life_model_t *m = e->model;
    if (m->n_theta > NS_LIFE_MAX_THETA)
        return ns_fail(NS_ERR_UNSUPPORTED, "LiFE cuda backend: n_theta = %d exceeds %d (use the CPU backend)",
                       (int)m->n_theta, NS_LIFE_MAX_THETA);
    int n = 0;
    ns_status s = ns_cuda_device_count(&n);
    if (s != NS_OK) return s;
    if (n == 0) return ns_fail(NS_ERR_NO_DEVICE, "LiFE cuda backend: no usable GPU");
    if (e->device < 0 || e->device >= n) /* resolved by engine.c from options.device */
        return ns_fail(NS_ERR_NO_DEVICE, "LiFE cuda backend: device %d asked for, %d usable", e->device, n);
    cuda_state *st = calloc(1, sizeof *st);
    if (!st) return ns_fail(NS_ERR_OUT_OF_MEMORY, "LiFE cuda state");
    e->cuda = st;
    st->device = e->device;
    st->tp = (m->n_theta + 31) / 32 * 32;
    s = setup(e, st);
    /* voxel-sh asked for: the fit now, so that a dictionary it cannot serve fails here */
    if (s == NS_OK && (e->options.mw_variant == NS_LIFE_VOXEL_SH || e->options.mty_variant == NS_LIFE_VOXEL_SH))
        s = load_sh(e);
    if (s != NS_OK) ns_life_cuda_destroy(e);
    return s;
}

/* ------------------------------------------------------------- SBBNNLS */

static cuda_state *ST(void *ctx) { return ((ns_life_engine_t *)ctx)->cuda; }

/* Zeroed on the solver's stream. The fault this replaces: a plain cudaMemset
 * runs on the legacy default stream, which a non-blocking stream does not
 * wait for, so the zeroing of the signal vector b could land after
 * upload_signal had copied Y into it (b = 0: zero weights, or a zero step
 * and an early stop), seen on an H200 with several processes on the GPU. */
static ns_status d_alloc(void *ctx, int64_t n, double **p) {
    cuda_state *st = ST(ctx);
    ns_status s = dev_alloc(st, (void **)p, (size_t)n * 8, "SBBNNLS vectors");
    if (s == NS_OK) NS_CUDA_TRY(cudaMemsetAsync(*p, 0, (size_t)n * 8, st->stream));
    return s;
}
static void d_release(void *ctx, double *p) {
    /* sizes are not tracked per pointer: ns_life_cuda_fit restores the
     * budget. Wait for the stream first: nothing queued may still use p. */
    (void)cudaStreamSynchronize(ST(ctx)->stream);
    cudaFree(p);
}
static ns_status d_upload(void *ctx, double *dst, const double *h, int64_t n) {
    NS_CUDA_TRY(cudaMemcpyAsync(dst, h, (size_t)n * 8, cudaMemcpyHostToDevice, ST(ctx)->stream));
    return NS_OK;
}
static ns_status d_download(void *ctx, double *h, const double *src, int64_t n) {
    NS_CUDA_TRY(cudaMemcpyAsync(h, src, (size_t)n * 8, cudaMemcpyDeviceToHost, ST(ctx)->stream));
    NS_CUDA_TRY(cudaStreamSynchronize(ST(ctx)->stream));
    return NS_OK;
}
static ns_status d_upload_signal(void *ctx, double *dst) {
    const ns_life_model_t *m = ((ns_life_engine_t *)ctx)->model;
    cuda_state *st = ST(ctx);
    NS_CUDA_TRY(cudaMemsetAsync(dst, 0, voxel_vector_bytes(m, st->tp), st->stream));
    NS_CUDA_TRY(cudaMemcpy2DAsync(dst, (size_t)st->tp * 8, m->Y, (size_t)m->n_theta * 8,
                                  (size_t)m->n_theta * 8, (size_t)m->n_voxels,
                                  cudaMemcpyHostToDevice, st->stream));
    return NS_OK;
}
static ns_status d_mw(void *ctx, const double *x, double *y) {
    ns_life_engine_t *e = ctx;
    return launch(e, NS_LIFE_MW, e->variant[NS_LIFE_MW], x, y);
}
static ns_status d_mty(void *ctx, const double *y, double *x) {
    ns_life_engine_t *e = ctx;
    return launch(e, NS_LIFE_MTY, e->variant[NS_LIFE_MTY], y, x);
}
#define VEC(call)                                                              \
    do {                                                                       \
        NS_CUDA_TRY(call);                                                     \
        return NS_OK;                                                          \
    } while (0)
static ns_status d_fill(void *ctx, double *v, double x, int64_t n) { VEC(ns_life_vec_fill(v, x, n, ST(ctx)->stream)); }
static ns_status d_copy(void *ctx, double *dst, const double *src, int64_t n) {
    VEC(cudaMemcpyAsync(dst, src, (size_t)n * 8, cudaMemcpyDeviceToDevice, ST(ctx)->stream));
}
static ns_status d_sub(void *ctx, double *a, const double *b, int64_t n) { VEC(ns_life_vec_sub(a, b, n, ST(ctx)->stream)); }
static ns_status d_mul(void *ctx, double *a, const double *b, int64_t n) { VEC(ns_life_vec_mul(a, b, n, ST(ctx)->stream)); }
static ns_status d_add_scalar(void *ctx, double *a, double x, int64_t n) {
    VEC(ns_life_vec_add_scalar(a, x, n, ST(ctx)->stream));
}
static ns_status d_mask(void *ctx, double *v, const double *x, const double *g, int64_t n) {
    VEC(ns_life_vec_mask(v, x, g, n, ST(ctx)->stream));
}
static ns_status d_update(void *ctx, double *x, const double *g, double alpha, int64_t n) {
    VEC(ns_life_vec_update(x, g, alpha, n, ST(ctx)->stream));
}
static ns_status scalar_out(cuda_state *st, double *r) {
    NS_CUDA_TRY(cudaMemcpyAsync(r, st->scalar, 8, cudaMemcpyDeviceToHost, st->stream));
    NS_CUDA_TRY(cudaStreamSynchronize(st->stream));
    return NS_OK;
}
static ns_status d_dot(void *ctx, const double *a, const double *b, int64_t n, double *r) {
    cuda_state *st = ST(ctx);
    NS_CUDA_TRY(ns_life_vec_dot(a, b, n, st->partial, st->scalar, st->stream));
    return scalar_out(st, r);
}
static ns_status d_pgnorm(void *ctx, const double *x, const double *g, int64_t n, double *r) {
    cuda_state *st = ST(ctx);
    NS_CUDA_TRY(ns_life_vec_pgnorm(x, g, n, st->partial, st->scalar, st->stream));
    return scalar_out(st, r);
}
static ns_status d_nnz(void *ctx, const double *x, int64_t n, int64_t *r) {
    cuda_state *st = ST(ctx);
    NS_CUDA_TRY(ns_life_vec_nnz(x, n, st->partial, st->scalar, st->stream));
    double c = 0.0;
    ns_status s = scalar_out(st, &c);
    *r = (int64_t)c;
    return s;
}
/* ENCODE's compute_diag once on the host, then on the device for good. */
static ns_status d_precond(void *ctx, double *hinv) {
    const ns_life_model_t *m = ((ns_life_engine_t *)ctx)->model;
    double *h = malloc((size_t)m->n_fibers * sizeof *h);
    if (!h) return ns_fail(NS_ERR_OUT_OF_MEMORY, "preconditioner");
    ns_life_diag(m, h);
    for (int32_t f = 0; f < m->n_fibers; ++f) {
        if (!(h[f] > 0.0)) {
            free(h);
            return ns_fail(NS_ERR_SINGULAR, "preconditioner: fiber %d has a zero column", (int)f);
        }
        h[f] = 1.0 / h[f];
    }
    ns_status s = d_upload(ctx, hinv, h, m->n_fibers);
    if (s == NS_OK) s = d_download(ctx, h, hinv, 0); /* waits for the copy before freeing h */
    free(h);
    return s;
}

/* The host stage of a sum over processes (sbbnnls.c's reduce_fiber):
 * pinned, so that the two copies per sum run at full PCIe speed (4 MB each
 * for 500,000 fibers) and the upload from it may stay asynchronous. Host
 * memory: not counted in the device budget. */
static ns_status d_host_alloc(void *ctx, int64_t n, double **p) {
    (void)ctx;
    void *h = NULL;
    *p = NULL;
    NS_CUDA_TRY(cudaMallocHost(&h, (size_t)(n > 0 ? n : 1) * 8));
    *p = h;
    return NS_OK;
}
static void d_host_release(void *ctx, double *p) {
    /* an upload from p may still be queued */
    (void)cudaStreamSynchronize(ST(ctx)->stream);
    cudaFreeHost(p);
}

ns_status ns_life_cuda_fit(ns_life_engine_t *e, const ns_life_fit_options *opt, double *w,
                           double *history, ns_life_fit_result *res) {
    cuda_state *st = e->cuda;
    NS_CUDA_TRY(cudaSetDevice(st->device));
    ns_life_vec_ops o;
    memset(&o, 0, sizeof o);
    o.ctx = e;
    o.n_fib = e->model->n_fibers;
    o.n_vox = (int64_t)st->tp * e->model->n_voxels;
    o.alloc = d_alloc;
    o.release = d_release;
    o.upload = d_upload;
    o.download = d_download;
    o.upload_signal = d_upload_signal;
    o.mw = d_mw;
    o.mty = d_mty;
    o.fill = d_fill;
    o.copy = d_copy;
    o.sub = d_sub;
    o.mul = d_mul;
    o.add_scalar = d_add_scalar;
    o.dot = d_dot;
    o.mask = d_mask;
    o.update = d_update;
    o.pgnorm = d_pgnorm;
    o.nnz = d_nnz;
    o.precond = d_precond;
    o.host_alloc = d_host_alloc;
    o.host_release = d_host_release;
    const size_t used = st->used;
    ns_status s = ns_life_sbbnnls(&o, opt, w, history, res);
    st->used = used; /* the solver released its vectors */
    return s;
}

const ns_life_backend_ops *ns_life_cuda_backend(void) {
    static const ns_life_backend_ops ops = {"cuda",          ns_life_cuda_create, ns_life_cuda_destroy,
                                            ns_life_cuda_supports, ns_life_cuda_product, ns_life_cuda_time,
                                            ns_life_cuda_fit,
                                            /* the group fit: host vectors, products on the device
                                               through the engine's staging buffers (group.c) */
                                            ns_life_group_fit};
    return &ops;
}
