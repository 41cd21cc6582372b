/* The LFP's reduction on the simulation's GPU (lfp_impl.h): the membrane
 * currents of the buffered samples (written by the loop's step kernels into
 * their columns of I: sim_impl.h's snap), the cells' dipoles on request, and
 * the potentials and summed dipole as one batched DGEMM over compartment
 * slices, the slices added in a fixed order. docs/extracellular.md. */
#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "core/cuda_check.h"
#include "core/device_impl.h"
#include "lfp/lfp_impl.h"
}
#include "lfp/cuda/cublas_api.h"
#include "lfp/kernel.h"
#include "sim/snap.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

#define THREADS 256
#define SLICES 64         /* compartment slices of the DGEMM (before populations cut them) */
#define SLICE_ALIGN 256
#define TILE_BYTES ((int64_t)256 << 20) /* a tile of coefficients (TILES) */
#define MAX_GRID_Y 65535
#define LFP_U 5.9604644775390625e-8 /* F32: 2^-24, float's unit roundoff */
#define RANK_PAD 8        /* LOWRANK: the ranks (with the dipole's 3 rows) padded to a multiple of it */

struct lfp_gpu {
    int device;
    cudaStream_t stream;
    const ns_cublas_api *blas;
    cublasHandle_t handle;
    int64_t n_el, n_comp, n_cells, R, ncp, slice, n_slices, rows;
    int32_t n_pop, per_cell;
    double *A;            /* ncp x R, column-major: the coefficients, then mid x, y, z (0 in the padding);
                             TILES: tile_slices slices of it, computed per reduction */
    int tiles;
    int64_t tile_slices;
    double sigma;
    double *seg, *pts;    /* TILES: start (3 n), end (3 n), diam (n); the contacts' points */
    int64_t *pt_begin, *comp_of_col; /* TILES: n_el + 1; ncp (-1: padding) */
    unsigned char *point;
    double *I;            /* ncp x rows: the reduced samples' currents by column (bufs[0] or bufs[1]) */
    double *bufs[2];      /* ncp x rows each (0 in the padding and without membrane): one written by a
                             launch (sim_impl.h's snap) while the other's reduction runs */
    int32_t *scol;        /* per state position: its compartment's column, -1 without membrane (snap_col) */
    double *sg;           /* per state position: the axial conductance to the parent [uS] (snap_g) */
    double *partial;      /* n_slices x rows x R */
    double *tot, *pop;    /* rows x R; rows x n_pop x n_el */
    int cur;              /* the buffer of the next launch */
    double *h_tot, *h_rel, *h_pop, *h_pcell, *h_imem; /* pinned: the submitted reduction's results */
    int32_t pend_nb;      /* samples of the submitted reduction not yet collected (0: none) */
    int pend_pop, pend_pcell, pend_imem;
    double *mid, *pcell, *imem;
    int64_t *cell_offset, *col, *pop_slice;
    unsigned char *membrane;
    cudaEvent_t ev[4];    /* a reduction's phases: start, the cells' dipoles done, DGEMM done, sums and copies done */
    double *kept;         /* keep: kept_cap rows of R, the run's samples (ns_lfp_device_results) */
    int64_t kept_cap;
    int keep;
    /* F32: the electrodes' coefficients as float (n_el x ncp, electrode r at r * ncp), each chunk's
     * largest |M| / (1 - u) (chunks x n_el, column-major: electrode r's at r * chunks), each chunk's
     * sum of |i| (chunks x rows), the bound per electrode (n_el x rows) and each sample's relative bound */
    int f32;
    float *F;
    double *mmax, *S, *bnd, *rel;
    int64_t chunks;
    /* LOWRANK (lowrank_upload): the cells sorted by population, size (n compartments) and padded
     * rank (r_k + 3 rounded up to RANK_PAD: the dipole's 3 rows, V's last 3 rows the midpoints,
     * U's 3 columns there the identity on the dipole's rows), in groups of equal (population, n,
     * padded rank); per reduction W (wld x rows) = V_k I_k, one batched DGEMM per group (pointer
     * arrays pA, pB, pC: each sorted cell's V_k, first column of I and rows of W), then
     * partial[pop_slice[p]] = U_p W_p per population p (one DGEMM, U: R x wld, column-major; pB:
     * pBs[0] or pBs[1], the pointers into the buffer reduced), and
     * the bound bnd (n_el x rows) = Rho (n_el x n_cells) inorm (n_cells x rows, each ||i_k||_2) */
    int lowrank;
    double *LV, *LU, *W, *Rho, *inorm;
    const double **pA, **pB, **pBs[2];
    double **pC;
    int64_t wld, n_groups;
    int64_t *group;        /* host, n_groups x 4: first cell (sorted), cells, n, padded rank */
    int64_t *place;        /* host, n_cells x 3: each sorted cell's V offset, first column of I, first W row */
    int64_t *pop_w;        /* host, 2 (n_pop + 1): each population's first W row, then its first slice */
    int64_t *cell_part;    /* device, n_cells x 2: each sorted cell's first part and parts (below) */
    /* LOWRANK: the step kernels' sums of squares of each sample's currents by parts (sim_impl.h's
     * snap_slot: each cell's positions cut at the windows of NS_SIM_SNAP_WINDOW), in each buffer
     * after its rows of currents (rows x n_parts at ncp x rows); slot per state position, part0
     * (host, n_cells + 1) each cell's first part */
    int32_t *slot;
    int64_t n_parts, *part0;
    ns_lfp_timing time;   /* the GPU phases' sums (reductions, currents_ms, gemm_ms, sum_ms) */
};

static ns_status warm(lfp_gpu *G);
static ns_status make_f32(lfp_gpu *G);

static unsigned grid(int64_t n) { return (unsigned)((n + THREADS - 1) / THREADS); }

/* per cell and sample: the dipole moment, over the cell's compartments in order */
__global__ void lfp_cells(const double *__restrict__ I, int64_t ncp, const int64_t *__restrict__ col,
                          const double *__restrict__ mid, const int64_t *__restrict__ off, int64_t n_cells,
                          double *__restrict__ pcell) {
    const int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    const int64_t k = blockIdx.y;
    if (c >= n_cells) return;
    double P0 = 0.0, P1 = 0.0, P2 = 0.0;
    for (int64_t j = off[c]; j < off[c + 1]; ++j) {
        const double im = I[k * ncp + col[j]];
        P0 += im * mid[3 * j], P1 += im * mid[3 * j + 1], P2 += im * mid[3 * j + 2];
    }
    double *o = pcell + (k * n_cells + c) * 3;
    o[0] = P0, o[1] = P1, o[2] = P2;
}

/* the slices' partial sums: per population in slice order, then over the populations in order
 * (first: each population's first slice only, the others 0: LOWRANK's U_p W_p) */
__global__ void lfp_sum(const double *__restrict__ partial, int64_t R, int64_t rows, int32_t nb,
                        const int64_t *__restrict__ pop_slice, int32_t n_pop, int64_t n_el, int first,
                        double *__restrict__ tot, double *__restrict__ pop) {
    const int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    const int64_t k = blockIdx.y;
    if (r >= R || k >= nb) return;
    double total = 0.0;
    for (int32_t p = 0; p < n_pop; ++p) {
        double s = 0.0;
        const int64_t q1 = first ? pop_slice[p] + 1 : pop_slice[p + 1];
        for (int64_t q = pop_slice[p]; q < q1; ++q) s += partial[(q * rows + k) * R + r];
        if (pop && r < n_el) pop[(k * n_pop + p) * n_el + r] = s;
        total += s;
    }
    tot[k * R + r] = total;
}

/* F32 at set-up: rows [0, n_el) of a tile (columns col0 .. col0 + rows_t) rounded into F */
__global__ void lfp_round(const double *__restrict__ A, int64_t rows_t, int64_t col0, int64_t n_el, int64_t ncp,
                          float *__restrict__ F) {
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= rows_t) return;
    for (int64_t r = blockIdx.y; r < n_el; r += gridDim.y) F[r * ncp + col0 + i] = (float)A[r * rows_t + i];
}

/* F32 per reduction: a tile widened from F (the dipole's rows from the midpoints, as lfp_tile) */
__global__ void lfp_widen(const float *__restrict__ F, int64_t ncp, const double *__restrict__ mid,
                          const int64_t *__restrict__ comp_of_col, int64_t col0, int64_t rows_t, int64_t n_el, int64_t R,
                          double *__restrict__ A) {
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= rows_t) return;
    const int64_t j = comp_of_col[col0 + i];
    for (int64_t r = blockIdx.y; r < R; r += gridDim.y)
        A[r * rows_t + i] = r < n_el ? (double)F[r * ncp + col0 + i] : j >= 0 ? mid[3 * j + (r - n_el)] : 0.0;
}

/* F32 at set-up: each chunk's (NS_LFP_CHUNK compartments in Flat order) largest |M| / (1 - u) */
__global__ void lfp_chunk_max(const float *__restrict__ F, int64_t ncp, const int64_t *__restrict__ col, int64_t n,
                              int64_t chunks, int64_t n_el, double *__restrict__ mmax) {
    const int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (q >= chunks) return;
    for (int64_t r = blockIdx.y; r < n_el; r += gridDim.y) {
        double m = 0.0;
        for (int64_t j = q * NS_LFP_CHUNK; j < n && j < (q + 1) * NS_LFP_CHUNK; ++j)
            m = fmax(m, fabs((double)F[r * ncp + col[j]]) / (1.0 - LFP_U));
        mmax[r * chunks + q] = m;
    }
}

/* F32 per reduction: each chunk's sum of |i| per sample, in Flat order */
__global__ void lfp_chunk_abs(const double *__restrict__ I, int64_t ncp, const int64_t *__restrict__ col, int64_t n,
                              int64_t chunks, double *__restrict__ S) {
    const int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    const int64_t k = blockIdx.y;
    if (q >= chunks) return;
    double s = 0.0;
    for (int64_t j = q * NS_LFP_CHUNK; j < n && j < (q + 1) * NS_LFP_CHUNK; ++j) s += fabs(I[k * ncp + col[j]]);
    S[k * chunks + q] = s;
}

/* F32: each sample's largest bound over the electrodes relative to its largest |potential| (lfp.c's rule) */
__global__ void lfp_rel(const double *__restrict__ bnd, const double *__restrict__ tot, int64_t n_el, int64_t R,
                        int32_t nb, double scale, double *__restrict__ rel) {
    const int32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= nb) return;
    double b = 0.0, big = 0.0;
    for (int64_t e = 0; e < n_el; ++e) b = fmax(b, bnd[k * n_el + e]), big = fmax(big, fabs(tot[k * R + e]));
    b *= scale;
    rel[k] = b == 0.0 ? 0.0 : big > 0.0 ? b / big : INFINITY;
}

/* LOWRANK: each sorted cell's ||i||_2 per sample (inorm: n_cells x rows, column-major) from the
 * step kernels' sums of squares of its parts (norm: rows x n_parts), added in order */
__global__ void lfp_cell_norm(const double *__restrict__ norm, int64_t n_parts, const int64_t *__restrict__ cell_part,
                              int64_t n_cells, int32_t nb, double *__restrict__ inorm) {
    const int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    const int64_t k = blockIdx.y;
    if (c >= n_cells || k >= nb) return;
    const double *x = norm + k * n_parts + cell_part[2 * c];
    double s = 0.0;
    for (int64_t j = 0; j < cell_part[2 * c + 1]; ++j) s += x[j];
    inorm[k * n_cells + c] = sqrt(s);
}

/* the last sample's currents in Flat order */
__global__ void lfp_last(const double *__restrict__ I, const int64_t *__restrict__ col, int64_t n,
                         double *__restrict__ out) {
    const int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (j < n) out[j] = I[col[j]];
}

/* TILES: the coefficients of columns [col0, col0 + rows_t) (the rows of A, lda rows_t) as
 * ns_lfp_row computes them, and the dipole's rows (the midpoints) */
__global__ void lfp_tile(const double *__restrict__ seg, int64_t n, const unsigned char *__restrict__ point,
                         const unsigned char *__restrict__ membrane, const double *__restrict__ mid,
                         const int64_t *__restrict__ comp_of_col, int64_t col0, int64_t rows_t,
                         const double *__restrict__ pts, const int64_t *__restrict__ pt_begin, int64_t n_el, int64_t R,
                         double sigma, double *__restrict__ A) {
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= rows_t) return;
    const int64_t j = comp_of_col[col0 + i];
    for (int64_t r = blockIdx.y; r < R; r += gridDim.y) {
        double a = 0.0;
        if (j >= 0 && r >= n_el) {
            a = mid[3 * j + (r - n_el)];
        } else if (j >= 0 && membrane[j]) {
            const int64_t q0 = pt_begin[r], q1 = pt_begin[r + 1];
            const double scale = 1.0 / (4.0 * M_PI * sigma * (double)(q1 - q0));
            double acc = 0.0;
            for (int64_t q = q0; q < q1; ++q)
                acc += ns_lfp_kernel(seg + 3 * j, seg + 3 * n + 3 * j, .5 * seg[6 * n + j], pts + 3 * q, point[j]);
            a = acc * scale;
        }
        A[r * rows_t + i] = a;
    }
}

extern "C" void ns_lfp_gpu_destroy(lfp_gpu *G) {
    if (!G) return;
    const int caller = ns_cuda_save_device();
    ns_cuda_restore_device(G->device);
    if (G->stream) cudaStreamSynchronize(G->stream); /* a submitted reduction */
    void *h[] = {G->h_tot, G->h_rel, G->h_pop, G->h_pcell, G->h_imem};
    for (size_t k = 0; k < sizeof h / sizeof *h; ++k) cudaFreeHost(h[k]);
    void *p[] = {G->A,     G->bufs[0], G->bufs[1], G->partial, G->tot,   G->pop,    G->scol,   G->sg,
                 G->mid,   G->pcell,   G->imem,    G->cell_offset, G->col, G->pop_slice, G->membrane,
                 G->seg,   G->pts,     G->pt_begin, G->comp_of_col, G->point, G->kept,
                 G->F,     G->mmax,    G->S,       G->bnd,     G->rel,   G->LV,     G->LU,     G->W,
                 G->Rho,   G->inorm,   G->cell_part, G->slot, G->pA,     G->pBs[0], G->pBs[1], G->pC};
    for (size_t k = 0; k < sizeof p / sizeof *p; ++k) cudaFree(p[k]);
    if (G->handle) G->blas->Destroy(G->handle);
    ns_cuda_queue_destroy(G->stream, G->ev, 4);
    ns_cuda_restore_device(caller);
    free(G->group), free(G->place), free(G->pop_w), free(G->part0);
    free(G);
}

template <typename T> static ns_status upload(T **dst, const T *src, int64_t n) {
    NS_CUDA_TRY(cudaMalloc((void **)dst, (size_t)(n > 0 ? n : 1) * sizeof(T)));
    if (src && n > 0) NS_CUDA_TRY(cudaMemcpy(*dst, src, (size_t)n * sizeof(T), cudaMemcpyHostToDevice));
    return NS_OK;
}

static ns_status blas_status(cublasStatus_t s, const ns_cublas_api *blas, const char *what) {
    if (s == CUBLAS_STATUS_SUCCESS) return NS_OK;
    return ns_fail(s == CUBLAS_STATUS_ALLOC_FAILED ? NS_ERR_DEVICE_MEMORY : NS_ERR_INTERNAL, "LFP: %s: %s", what,
                   blas->GetStatusString(s));
}

/* The compartments' columns: populations in order, each cut into slices of
 * G->slice (the last one padded); pop_slice (host, n_pop + 1) the first
 * slice of each population. */
static ns_status columns(lfp_gpu *G, const lfp_gpu_geometry *geo, int64_t *col, int64_t *pop_slice) {
    /* the row of I (and of A) of each compartment */
    const int32_t P = G->n_pop;
    int64_t *size = (int64_t *)calloc((size_t)P, sizeof *size);
    if (!size) return ns_fail(NS_ERR_OUT_OF_MEMORY, "LFP: populations");
    for (int64_t c = 0; c < geo->n_cells; ++c)
        size[geo->pop ? geo->pop[c] : 0] += geo->cell_offset[c + 1] - geo->cell_offset[c];
    int64_t smallest = geo->n_comp;
    for (int32_t p = 0; p < P; ++p)
        if (size[p] > 0 && size[p] < smallest) smallest = size[p];
    int64_t slice = (geo->n_comp + SLICES - 1) / SLICES;
    if (slice > smallest) slice = smallest;
    slice = (slice + SLICE_ALIGN - 1) / SLICE_ALIGN * SLICE_ALIGN;
    if (slice < SLICE_ALIGN) slice = SLICE_ALIGN;
    G->slice = slice;
    /* the next free column of each population */
    int64_t at = 0;
    pop_slice[0] = 0;
    for (int32_t p = 0; p < P; ++p) {
        const int64_t s = (size[p] + slice - 1) / slice;
        pop_slice[p + 1] = pop_slice[p] + s;
        size[p] = at;
        at += s * slice;
    }
    G->ncp = at > 0 ? at : slice;
    G->n_slices = G->ncp / slice;
    if (pop_slice[P] == 0) pop_slice[P] = 1; /* no compartments: one empty slice */
    for (int64_t c = 0; c < geo->n_cells; ++c) {
        int64_t *next = &size[geo->pop ? geo->pop[c] : 0];
        for (int64_t j = geo->cell_offset[c]; j < geo->cell_offset[c + 1]; ++j) col[j] = (*next)++;
    }
    free(size);
    return NS_OK;
}

/* LOWRANK: a cell's sort key (population, size, padded rank, index) */
typedef struct lr_key {
    int64_t pop, n, rp, c;
} lr_key;

static int lr_key_cmp(const void *a, const void *b) {
    const lr_key *x = (const lr_key *)a, *y = (const lr_key *)b;
    const int64_t d[4] = {x->pop - y->pop, x->n - y->n, x->rp - y->rp, x->c - y->c};
    for (int k = 0; k < 4; ++k)
        if (d[k]) return d[k] < 0 ? -1 : 1;
    return 0;
}

/* LOWRANK: the groups, each cell's place (V offset, first column, W row) and the populations'
 * first W rows, from the cells sorted (key); a cell whose factors are a twin's
 * (ns_lfp_lowrank_owner) reads the owner's V (the same V, midpoints included: the same
 * placement), so that V is uploaded once per distinct block. at: K scratch. Returns V's size. */
static int64_t lowrank_groups(lfp_gpu *G, const lfp_gpu_geometry *geo, const int64_t *col, const lr_key *key,
                              int64_t *at) {
    const int64_t K = geo->n_cells;
    int64_t ng = 0, w = 0, v = 0;
    for (int64_t i = 0; i < K; ++i) at[key[i].c] = i; /* each cell's sorted place */
    for (int32_t p = 0; p < G->n_pop; ++p) G->pop_w[p] = -1;
    for (int64_t i = 0; i < K; ++i) {
        const lr_key *k = key + i;
        if (i == 0 || k->pop != key[i - 1].pop || k->n != key[i - 1].n || k->rp != key[i - 1].rp) {
            int64_t *g = G->group + 4 * ng++;
            g[0] = i, g[1] = 0, g[2] = k->n, g[3] = k->rp;
        }
        G->group[4 * (ng - 1) + 1]++;
        if (G->pop_w[k->pop] < 0) G->pop_w[k->pop] = w;
        int64_t *pl = G->place + 3 * i;
        pl[0] = -1, pl[1] = k->n > 0 ? col[geo->cell_offset[k->c]] : 0, pl[2] = w;
        if (ns_lfp_lowrank_owner(geo->lowrank, k->c) == k->c) pl[0] = v, v += k->rp * k->n;
        w += k->rp;
    }
    for (int64_t i = 0; i < K; ++i) /* a twin: its owner's V (the same n and padded rank) */
        if (G->place[3 * i] < 0) G->place[3 * i] = G->place[3 * at[ns_lfp_lowrank_owner(geo->lowrank, key[i].c)]];
    G->pop_w[G->n_pop] = w;
    for (int32_t p = G->n_pop - 1; p >= 0; --p)
        if (G->pop_w[p] < 0) G->pop_w[p] = G->pop_w[p + 1];
    G->n_groups = ng, G->wld = w;
    return v;
}

/* LOWRANK: one sorted cell's factors into the host's V (column-major, padded rank x n, the
 * midpoints in its last 3 rows; a twin's is its owner's), U (R x wld, column-major) and Rho
 * (n_el x n_cells). */
static void lowrank_cell(const lfp_gpu *G, const lfp_gpu_geometry *geo, const lr_key *k, const int64_t *pl, double *hV,
                         double *hU, double *rho_out) {
    const int64_t E = G->n_el, R = G->R, n = k->n, rp = k->rp, c = k->c;
    const int64_t r = ns_lfp_lowrank_ranks(geo->lowrank)[c], o = geo->cell_offset[c];
    const double *U, *V, *rho;
    ns_lfp_lowrank_cell(geo->lowrank, c, &U, &V, &rho);
    double *Vc = hV + pl[0], *Uc = hU + pl[2] * R;
    for (int64_t j = 0; j < n && ns_lfp_lowrank_owner(geo->lowrank, c) == c; ++j) {
        for (int64_t a = 0; a < r; ++a) Vc[j * rp + a] = V[a * n + j];
        for (int d = 0; d < 3; ++d) Vc[j * rp + rp - 3 + d] = geo->mid[3 * (o + j) + d];
    }
    for (int64_t a = 0; a < r; ++a)
        for (int64_t e = 0; e < E; ++e) Uc[a * R + e] = U[e * r + a];
    for (int d = 0; d < 3; ++d) Uc[(rp - 3 + d) * R + E + d] = 1.0;
    memcpy(rho_out, rho, (size_t)E * sizeof *rho);
}

/* LOWRANK: the factors in the groups' layout (lfp_gpu's comment), uploaded once. */
static ns_status lowrank_upload(lfp_gpu *G, const lfp_gpu_geometry *geo, const int64_t *col, const int64_t *pop_slice) {
    const int64_t K = geo->n_cells, E = G->n_el, R = G->R;
    const int32_t *rank = ns_lfp_lowrank_ranks(geo->lowrank);
    lr_key *key = (lr_key *)malloc((size_t)(K > 0 ? K : 1) * sizeof *key);
    int64_t *cc = (int64_t *)malloc((size_t)(3 * K + 1) * sizeof *cc); /* 2 K, and lowrank_groups' K */
    G->group = (int64_t *)malloc((size_t)(4 * K + 1) * sizeof *G->group);
    G->place = (int64_t *)malloc((size_t)(3 * K + 1) * sizeof *G->place);
    G->pop_w = (int64_t *)malloc(2 * ((size_t)G->n_pop + 1) * sizeof *G->pop_w);
    ns_status st = NS_OK;
    if (!key || !cc || !G->group || !G->place || !G->pop_w) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "LFP: lowrank groups");
    for (int64_t c = 0; st == NS_OK && c < K; ++c) {
        const int64_t rp = (rank[c] + 3 + RANK_PAD - 1) / RANK_PAD * RANK_PAD;
        key[c] = (lr_key){geo->pop ? geo->pop[c] : 0, geo->cell_offset[c + 1] - geo->cell_offset[c], rp, c};
    }
    int64_t nv = 0;
    if (st == NS_OK) {
        qsort(key, (size_t)K, sizeof *key, lr_key_cmp);
        nv = lowrank_groups(G, geo, col, key, cc + 2 * K);
        memcpy(G->pop_w + G->n_pop + 1, pop_slice, ((size_t)G->n_pop + 1) * sizeof *pop_slice);
    }
    double *hV = st == NS_OK ? (double *)calloc((size_t)nv + 1, sizeof *hV) : NULL;
    double *hU = st == NS_OK ? (double *)calloc((size_t)(R * G->wld) + 1, sizeof *hU) : NULL;
    double *hRho = (double *)malloc((size_t)(E * K + 1) * sizeof *hRho);
    if (st == NS_OK && (!hV || !hU || !hRho)) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "LFP: lowrank factors (host)");
    for (int64_t i = 0; st == NS_OK && i < K; ++i) {
        lowrank_cell(G, geo, key + i, G->place + 3 * i, hV, hU, hRho + i * E);
        cc[2 * i] = G->part0[key[i].c], cc[2 * i + 1] = G->part0[key[i].c + 1] - G->part0[key[i].c];
    }
    if (st == NS_OK) st = upload(&G->LV, hV, nv);
    if (st == NS_OK) st = upload(&G->LU, hU, R * G->wld);
    if (st == NS_OK) st = upload(&G->Rho, hRho, E * K);
    if (st == NS_OK) st = upload(&G->cell_part, cc, 2 * K);
    free(key), free(cc), free(hV), free(hU), free(hRho);
    return st;
}

/* LOWRANK, once the buffers and W exist: each sorted cell's pointers for the batched V_k I_k
 * (B: one array per buffer). */
static ns_status lowrank_pointers(lfp_gpu *G) {
    const int64_t K = G->n_cells;
    const size_t k = (size_t)(K > 0 ? K : 1);
    const double **a = (const double **)malloc(k * sizeof *a);
    const double **b = (const double **)malloc(2 * k * sizeof *b);
    double **c = (double **)malloc(k * sizeof *c);
    ns_status st = NS_OK;
    if (!a || !b || !c) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "LFP: lowrank pointers");
    for (int64_t i = 0; st == NS_OK && i < K; ++i) {
        a[i] = G->LV + G->place[3 * i], c[i] = G->W + G->place[3 * i + 2];
        b[i] = G->bufs[0] + G->place[3 * i + 1], b[k + i] = G->bufs[1] + G->place[3 * i + 1];
    }
    if (st == NS_OK) st = upload(&G->pA, a, K);
    if (st == NS_OK) st = upload(&G->pBs[0], b, K);
    if (st == NS_OK) st = upload(&G->pBs[1], b + k, K);
    if (st == NS_OK) st = upload(&G->pC, c, K);
    free(a), free(b), free(c);
    return st;
}

/* LOWRANK per reduction: W = V_k I_k per group (one batched DGEMM), then each population's
 * partial sums U_p W_p into its first slice (the others stay 0). */
static ns_status lowrank_products(lfp_gpu *G, int32_t nb) {
    const double one = 1.0, zero = 0.0;
    const int64_t R = G->R;
    for (int64_t q = 0; q < G->n_groups; ++q) {
        const int64_t *g = G->group + 4 * q;
        if (g[2] == 0) continue;
        const ns_status st = blas_status(
            G->blas->DgemmBatched(G->handle, CUBLAS_OP_N, CUBLAS_OP_N, (int)g[3], nb, (int)g[2], &one, G->pA + g[0],
                                  (int)g[3], G->pB + g[0], (int)G->ncp, &zero, G->pC + g[0], (int)G->wld, (int)g[1]),
            G->blas, "cublasDgemmBatched (lowrank V I)");
        if (st != NS_OK) return st;
    }
    for (int32_t p = 0; p < G->n_pop; ++p) {
        const int64_t w0 = G->pop_w[p], w1 = G->pop_w[p + 1], slice = G->pop_w[G->n_pop + 1 + p];
        if (w1 <= w0) continue;
        const ns_status st = blas_status(
            G->blas->DgemmStridedBatched(G->handle, CUBLAS_OP_N, CUBLAS_OP_N, (int)R, nb, (int)(w1 - w0), &one,
                                         G->LU + w0 * R, (int)R, 0, G->W + w0, (int)G->wld, 0, &zero,
                                         G->partial + slice * G->rows * R, (int)R, 0, 1),
            G->blas, "cublasDgemmStridedBatched (lowrank U W)");
        if (st != NS_OK) return st;
    }
    return NS_OK;
}

/* LOWRANK per reduction, after the sums: bnd = Rho inorm and each sample's relative bound. */
static ns_status lowrank_bound(lfp_gpu *G, int32_t nb) {
    const double one = 1.0, zero = 0.0;
    const int64_t K = G->n_cells;
    if (K > 0)
        lfp_cell_norm<<<dim3(grid(K), (unsigned)nb), THREADS, 0, G->stream>>>(G->I + G->ncp * G->rows, G->n_parts,
                                                                             G->cell_part, K, nb, G->inorm);
    NS_CUDA_TRY(cudaGetLastError());
    const ns_status st = blas_status(
        G->blas->DgemmStridedBatched(G->handle, CUBLAS_OP_N, CUBLAS_OP_N, (int)G->n_el, nb, (int)(K > 0 ? K : 1), &one,
                                     G->Rho, (int)G->n_el, 0, G->inorm, (int)(K > 0 ? K : 1), 0, &zero, G->bnd,
                                     (int)G->n_el, 0, 1),
        G->blas, "cublasDgemmStridedBatched (the lowrank bound)");
    if (st != NS_OK) return st;
    lfp_rel<<<grid(nb), THREADS, 0, G->stream>>>(G->bnd, G->tot, G->n_el, G->R, nb, 1.0, G->rel);
    NS_CUDA_TRY(cudaGetLastError());
    return NS_OK;
}

/* LOWRANK: the parts of the step kernels' sums of squares (sim_impl.h's snap_slot): each cell's
 * positions (contiguous in every GPU loop's layout: refused otherwise) cut at the windows of
 * NS_SIM_SNAP_WINDOW positions, numbered cell by cell (part0, host); slot per state position. */
static ns_status norm_parts(lfp_gpu *G, const lfp_gpu_geometry *geo) {
    const int64_t K = geo->n_cells, m = geo->stride, W = NS_SIM_SNAP_WINDOW;
    int32_t *slot = (int32_t *)malloc((size_t)(m > 0 ? m : 1) * sizeof *slot);
    G->part0 = (int64_t *)malloc((size_t)(K + 1) * sizeof *G->part0);
    ns_status st = slot && G->part0 ? NS_OK : ns_fail(NS_ERR_OUT_OF_MEMORY, "LFP: %lld state positions", (long long)m);
    for (int64_t q = 0; st == NS_OK && q < m; ++q) slot[q] = -1;
    int64_t parts = 0;
    for (int64_t c = 0; st == NS_OK && c < K; ++c) {
        const int64_t o = geo->cell_offset[c], n = geo->cell_offset[c + 1] - o;
        int64_t lo = m, hi = -1;
        for (int64_t j = o; j < o + n; ++j) lo = geo->pos[j] < lo ? geo->pos[j] : lo, hi = geo->pos[j] > hi ? geo->pos[j] : hi;
        G->part0[c] = parts;
        if (n == 0) continue;
        if (hi - lo + 1 != n)
            st = ns_fail(NS_ERR_INTERNAL, "LFP: cell %lld's %lld compartments at positions %lld .. %lld (not contiguous)",
                         (long long)c, (long long)n, (long long)lo, (long long)hi);
        for (int64_t j = o; st == NS_OK && j < o + n; ++j) slot[geo->pos[j]] = (int32_t)(parts + geo->pos[j] / W - lo / W);
        parts += hi / W - lo / W + 1;
    }
    if (st == NS_OK && parts > 2147483647) st = ns_fail(NS_ERR_SIZE, "LFP: %lld parts of the currents' norms", (long long)parts);
    if (st == NS_OK) G->part0[K] = parts, G->n_parts = parts > 0 ? parts : 1;
    if (st == NS_OK) st = upload(&G->slot, slot, m);
    free(slot);
    return st;
}

/* The step kernels' sampler (sim_impl.h's snap_col and snap_g): per state position its
 * compartment's column (-1 without membrane, or without a compartment) and its axial
 * conductance to the parent (0 at a root). */
static ns_status sampler(lfp_gpu *G, const lfp_gpu_geometry *geo, const int64_t *col) {
    const int64_t n = geo->n_comp, m = geo->stride;
    int32_t *c = (int32_t *)malloc((size_t)(m > 0 ? m : 1) * sizeof *c);
    double *g = (double *)calloc((size_t)(m > 0 ? m : 1), sizeof *g);
    ns_status st = c && g ? NS_OK : ns_fail(NS_ERR_OUT_OF_MEMORY, "LFP: %lld state positions", (long long)m);
    for (int64_t q = 0; st == NS_OK && q < m; ++q) c[q] = -1;
    for (int64_t j = 0; st == NS_OK && j < n; ++j) {
        const int64_t q = geo->pos[j];
        if (geo->membrane[j]) c[q] = (int32_t)col[j];
        g[q] = geo->parent[j] >= 0 ? geo->g[j] : 0.0;
    }
    if (st == NS_OK) st = upload(&G->scol, c, m);
    if (st == NS_OK) st = upload(&G->sg, g, m);
    free(c), free(g);
    return st;
}

static ns_status create(lfp_gpu *G, const lfp_gpu_geometry *geo) {
    const int64_t n = geo->n_comp, R = G->R;
    NS_CUDA_TRY(cudaStreamCreateWithFlags(&G->stream, cudaStreamNonBlocking));
    for (int k = 0; k < 4; ++k) NS_CUDA_TRY(cudaEventCreate(&G->ev[k]));
    ns_status st = ns_cublas_load(&G->blas);
    if (st != NS_OK) return st;
    if ((st = blas_status(G->blas->Create(&G->handle), G->blas, "cublasCreate")) != NS_OK) return st;
    if ((st = blas_status(G->blas->SetStream(G->handle, G->stream), G->blas, "cublasSetStream")) != NS_OK) return st;
    int64_t *col = (int64_t *)malloc((size_t)(n > 0 ? n : 1) * sizeof *col);
    int64_t *pop_slice = (int64_t *)malloc(((size_t)G->n_pop + 1) * sizeof *pop_slice);
    double *A = NULL;
    if (!col || !pop_slice) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "LFP: %lld compartments", (long long)n);
    if (st == NS_OK) st = columns(G, geo, col, pop_slice);
    const int64_t ncp = G->ncp;
    if (st == NS_OK && ncp > 2147483647)
        st = ns_fail(NS_ERR_SIZE, "LFP: %lld compartments on the GPU (at most 2^31)", (long long)ncp);
    if (st == NS_OK && G->tiles) { /* the segments, the points and each column's compartment */
        const int64_t tb = geo->tile_bytes > 0 ? geo->tile_bytes : TILE_BYTES;
        G->tile_slices = tb / (G->slice * R * 8);
        if (G->tile_slices < 1) G->tile_slices = 1;
        if (G->tile_slices > G->n_slices) G->tile_slices = G->n_slices;
        int64_t *of = (int64_t *)malloc((size_t)ncp * sizeof *of);
        if (!of) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "LFP: %lld columns", (long long)ncp);
        for (int64_t c = 0; st == NS_OK && c < ncp; ++c) of[c] = -1;
        for (int64_t j = 0; st == NS_OK && j < n; ++j) of[col[j]] = j;
        if (st == NS_OK) st = upload(&G->comp_of_col, of, ncp);
        free(of);
        if (st == NS_OK) st = upload<double>(&G->seg, NULL, 7 * n);
        if (st == NS_OK && n > 0) {
            st = ns_cuda_status(cudaMemcpy(G->seg, geo->start, 3 * (size_t)n * sizeof(double), cudaMemcpyHostToDevice),
                                "cudaMemcpy", __FILE__, __LINE__);
            if (st == NS_OK)
                st = ns_cuda_status(cudaMemcpy(G->seg + 3 * n, geo->end, 3 * (size_t)n * sizeof(double),
                                               cudaMemcpyHostToDevice), "cudaMemcpy", __FILE__, __LINE__);
            if (st == NS_OK)
                st = ns_cuda_status(cudaMemcpy(G->seg + 6 * n, geo->diam, (size_t)n * sizeof(double),
                                               cudaMemcpyHostToDevice), "cudaMemcpy", __FILE__, __LINE__);
        }
        if (st == NS_OK) st = upload(&G->point, geo->point, n);
        if (st == NS_OK) st = upload(&G->pt_begin, geo->pt_begin, G->n_el + 1);
        if (st == NS_OK) st = upload(&G->pts, geo->pts, 3 * geo->pt_begin[G->n_el]);
        if (st == NS_OK) st = upload<double>(&G->A, NULL, G->tile_slices * G->slice * R);
        if (st == NS_OK && G->f32) { /* the float coefficients and the chunks' largest (make_f32) */
            G->chunks = (n + NS_LFP_CHUNK - 1) / NS_LFP_CHUNK;
            if (G->chunks < 1) G->chunks = 1;
            st = upload<float>(&G->F, NULL, G->n_el * ncp);
            if (st == NS_OK) st = upload<double>(&G->mmax, NULL, G->chunks * G->n_el);
        }
    }
    /* DENSE: the coefficients column by column, one electrode (or dipole axis) at a time through the host */
    const int dense = !G->tiles && !G->lowrank;
    if (st == NS_OK && G->lowrank) st = norm_parts(G, geo);
    if (st == NS_OK && G->lowrank) st = lowrank_upload(G, geo, col, pop_slice);
    if (st == NS_OK && dense) st = upload<double>(&G->A, NULL, ncp * R);
    if (st == NS_OK && dense && !(A = (double *)calloc((size_t)ncp, sizeof *A)))
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "LFP: %lld compartments", (long long)ncp);
    for (int64_t r = 0; st == NS_OK && dense && r < R; ++r) {
        for (int64_t j = 0; j < n; ++j) A[col[j]] = r < G->n_el ? geo->M[r * n + j] : geo->mid[3 * j + (r - G->n_el)];
        st = ns_cuda_status(cudaMemcpy(G->A + r * ncp, A, (size_t)ncp * sizeof *A, cudaMemcpyHostToDevice),
                            "cudaMemcpy", __FILE__, __LINE__);
    }
    free(A);
    if (st == NS_OK) st = upload(&G->col, col, n);
    if (st == NS_OK) st = upload(&G->pop_slice, pop_slice, (int64_t)G->n_pop + 1);
    if (st == NS_OK) st = sampler(G, geo, col);
    free(col);
    free(pop_slice);
    if (st == NS_OK) st = upload(&G->mid, geo->mid, 3 * n);
    if (st == NS_OK) st = upload(&G->membrane, geo->membrane, n);
    if (st == NS_OK) st = upload(&G->cell_offset, geo->cell_offset, geo->n_cells + 1);
    if (st == NS_OK) st = upload<double>(&G->imem, NULL, n);
    if (st != NS_OK) return st;
    /* the samples buffered: ns_lfp_batch_rows (as asked, else by the cadence and a quarter of the free memory) */
    const int64_t per = 8 * (2 * ncp + G->n_slices * R + R + (int64_t)G->n_pop * G->n_el + 1 +
                             (G->per_cell ? 3 * G->n_cells : 0) + (G->f32 ? G->chunks + G->n_el + 1 : 0) +
                             (G->lowrank ? 2 * G->n_parts + G->wld + G->n_cells + G->n_el + 1 : 0));
    int64_t rows = geo->rows;
    if (rows <= 0) {
        size_t free_b = 0, total_b = 0;
        NS_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
        rows = ns_lfp_batch_rows(0, geo->every, (int64_t)free_b, per);
        if (rows < 1)
            return ns_fail(NS_ERR_DEVICE_MEMORY, "LFP: one sample's buffers need %.3g GB of GPU memory, %.3g GB are free",
                           (double)per * 1e-9, (double)free_b * 1e-9);
    }
    G->rows = rows;
    const int64_t per_buf = (ncp + (G->lowrank ? G->n_parts : 0)) * rows; /* LOWRANK: the parts' sums after the currents */
    for (int b = 0; b < 2; ++b) { /* the padding and the compartments without membrane stay 0 */
        if ((st = upload<double>(&G->bufs[b], NULL, per_buf)) != NS_OK) return st;
        NS_CUDA_TRY(cudaMemset(G->bufs[b], 0, (size_t)per_buf * sizeof(double)));
    }
    G->I = G->bufs[1];
    /* pinned staging of a reduction's results (collect) */
    NS_CUDA_TRY(cudaHostAlloc((void **)&G->h_tot, (size_t)rows * (size_t)R * sizeof(double), cudaHostAllocDefault));
    NS_CUDA_TRY(cudaHostAlloc((void **)&G->h_rel, (size_t)rows * sizeof(double), cudaHostAllocDefault));
    NS_CUDA_TRY(cudaHostAlloc((void **)&G->h_imem, (size_t)(n > 0 ? n : 1) * sizeof(double), cudaHostAllocDefault));
    if (geo->pop)
        NS_CUDA_TRY(cudaHostAlloc((void **)&G->h_pop, (size_t)rows * (size_t)G->n_pop * (size_t)G->n_el * sizeof(double),
                                  cudaHostAllocDefault));
    if (G->per_cell)
        NS_CUDA_TRY(cudaHostAlloc((void **)&G->h_pcell, (size_t)rows * (size_t)G->n_cells * 3 * sizeof(double),
                                  cudaHostAllocDefault));
    if ((st = upload<double>(&G->partial, NULL, G->n_slices * rows * R)) != NS_OK) return st;
    if ((st = upload<double>(&G->tot, NULL, rows * R)) != NS_OK) return st;
    if (geo->pop && (st = upload<double>(&G->pop, NULL, rows * G->n_pop * G->n_el)) != NS_OK) return st;
    if (G->per_cell && (st = upload<double>(&G->pcell, NULL, rows * G->n_cells * 3)) != NS_OK) return st;
    if (G->f32) {
        if ((st = upload<double>(&G->S, NULL, G->chunks * rows)) != NS_OK) return st;
        if ((st = upload<double>(&G->bnd, NULL, G->n_el * rows)) != NS_OK) return st;
        if ((st = upload<double>(&G->rel, NULL, rows)) != NS_OK) return st;
        if ((st = make_f32(G)) != NS_OK) return st;
    }
    if (G->lowrank) { /* the slices U W does not write stay 0 */
        NS_CUDA_TRY(cudaMemset(G->partial, 0, (size_t)(G->n_slices * rows * R) * sizeof(double)));
        if ((st = upload<double>(&G->W, NULL, G->wld * rows)) != NS_OK) return st;
        if ((st = upload<double>(&G->inorm, NULL, G->n_cells * rows)) != NS_OK) return st;
        if ((st = upload<double>(&G->bnd, NULL, G->n_el * rows)) != NS_OK) return st;
        if ((st = upload<double>(&G->rel, NULL, rows)) != NS_OK) return st;
        if ((st = lowrank_pointers(G)) != NS_OK) return st;
    }
    return warm(G);
}

extern "C" ns_status ns_lfp_gpu_create(int device, const lfp_gpu_geometry *geo, lfp_gpu **out) {
    *out = NULL;
    lfp_gpu *G = (lfp_gpu *)calloc(1, sizeof *G);
    if (!G) return ns_fail(NS_ERR_OUT_OF_MEMORY, "LFP: GPU state");
    G->device = device;
    G->n_el = geo->n_el, G->n_comp = geo->n_comp, G->n_cells = geo->n_cells, G->R = geo->n_el + 3;
    G->n_pop = geo->n_pop > 0 ? geo->n_pop : 1;
    G->per_cell = geo->per_cell_dipoles;
    G->tiles = geo->tiles;
    G->sigma = geo->sigma;
    G->keep = geo->keep;
    G->f32 = geo->f32;
    G->lowrank = geo->lowrank != NULL;
    const int caller = ns_cuda_save_device();
    ns_cuda_restore_device(device);
    const ns_status st = create(G, geo);
    ns_cuda_restore_device(caller);
    if (st != NS_OK) {
        ns_error_prefix("LFP: coefficients on the GPU");
        ns_lfp_gpu_destroy(G);
        return st;
    }
    *out = G;
    return NS_OK;
}

extern "C" double *ns_lfp_gpu_snap(lfp_gpu *G, int64_t *rows) {
    *rows = G->rows;
    return G->bufs[G->cur];
}

extern "C" void ns_lfp_gpu_sampler(const lfp_gpu *G, const int32_t **col, const double **g, int64_t *ld,
                                   const int32_t **slot, int64_t *norm_at, int64_t *norm_ld) {
    *col = G->scol, *g = G->sg, *ld = G->ncp;
    *slot = G->slot, *norm_at = G->lowrank ? G->ncp * G->rows : 0, *norm_ld = G->lowrank ? G->n_parts : 0;
}

/* The GPU work of a reduction of nb samples of G->I on G->stream: the cells'
 * dipoles (pcell), the DGEMM over the slices (TILES: each tile's
 * coefficients first), the slices' sums (pop: also per population) and the
 * last sample's currents (imem). */
static ns_status enqueue(lfp_gpu *G, int32_t nb, int pop, int pcell, int imem, int coefficients) {
    const int64_t n = G->n_comp, R = G->R, ncp = G->ncp;
    NS_CUDA_TRY(cudaEventRecord(G->ev[0], G->stream));
    if (pcell && G->per_cell && G->n_cells > 0)
        lfp_cells<<<dim3(grid(G->n_cells), (unsigned)nb), THREADS, 0, G->stream>>>(G->I, ncp, G->col, G->mid,
                                                                                 G->cell_offset, G->n_cells, G->pcell);
    NS_CUDA_TRY(cudaGetLastError());
    NS_CUDA_TRY(cudaEventRecord(G->ev[1], G->stream));
    /* partial[s] (R x nb, column-major) = A[slice s]^T I[slice s]: DENSE in one call, TILES a
     * tile of slices at a time, its coefficients computed first (the stream orders the reuse) */
    const double one = 1.0, zero = 0.0;
    const int64_t per_tile = G->tiles ? G->tile_slices : G->n_slices;
    if (G->lowrank) {
        const ns_status st = lowrank_products(G, nb);
        if (st != NS_OK) return st;
    }
    for (int64_t s0 = 0; s0 < G->n_slices && !G->lowrank; s0 += per_tile) {
        const int64_t ns = G->n_slices - s0 < per_tile ? G->n_slices - s0 : per_tile, rows_t = ns * G->slice;
        const double *A = G->A + (G->tiles ? 0 : s0 * G->slice);
        const int64_t lda = G->tiles ? rows_t : ncp;
        if (!coefficients) { /* warm's second call: the tile's kernels are loaded already */
        } else if (G->f32) {
            lfp_widen<<<dim3(grid(rows_t), (unsigned)(R < MAX_GRID_Y ? R : MAX_GRID_Y)), THREADS, 0, G->stream>>>(
                G->F, ncp, G->mid, G->comp_of_col, s0 * G->slice, rows_t, G->n_el, R, G->A);
            NS_CUDA_TRY(cudaGetLastError());
        } else if (G->tiles) {
            lfp_tile<<<dim3(grid(rows_t), (unsigned)(R < MAX_GRID_Y ? R : MAX_GRID_Y)), THREADS, 0, G->stream>>>(
                G->seg, n, G->point, G->membrane, G->mid, G->comp_of_col, s0 * G->slice, rows_t, G->pts, G->pt_begin,
                G->n_el, R, G->sigma, G->A);
            NS_CUDA_TRY(cudaGetLastError());
        }
        ns_status st = blas_status(
            G->blas->DgemmStridedBatched(G->handle, CUBLAS_OP_T, CUBLAS_OP_N, (int)R, nb, (int)G->slice, &one, A,
                                         (int)lda, G->slice, G->I + s0 * G->slice, (int)ncp, G->slice, &zero,
                                         G->partial + s0 * G->rows * R, (int)R, G->rows * R, (int)ns),
            G->blas, "cublasDgemmStridedBatched");
        if (st != NS_OK) return st;
    }
    NS_CUDA_TRY(cudaEventRecord(G->ev[2], G->stream));
    lfp_sum<<<dim3(grid(R), (unsigned)nb), THREADS, 0, G->stream>>>(G->partial, R, G->rows, nb, G->pop_slice, G->n_pop,
                                                                     G->n_el, G->lowrank, G->tot, pop ? G->pop : NULL);
    if (imem && n > 0) lfp_last<<<grid(n), THREADS, 0, G->stream>>>(G->I + (int64_t)(nb - 1) * ncp, G->col, n, G->imem);
    NS_CUDA_TRY(cudaGetLastError());
    if (G->lowrank) {
        const ns_status st = lowrank_bound(G, nb);
        if (st != NS_OK) return st;
    }
    if (G->f32) { /* the bound: bnd (n_el x nb) = mmax^T S, then each sample's relative bound */
        lfp_chunk_abs<<<dim3(grid(G->chunks), (unsigned)nb), THREADS, 0, G->stream>>>(G->I, ncp, G->col, n, G->chunks,
                                                                                     G->S);
        NS_CUDA_TRY(cudaGetLastError());
        const ns_status st = blas_status(
            G->blas->DgemmStridedBatched(G->handle, CUBLAS_OP_T, CUBLAS_OP_N, (int)G->n_el, nb, (int)G->chunks, &one,
                                         G->mmax, (int)G->chunks, 0, G->S, (int)G->chunks, 0, &zero, G->bnd,
                                         (int)G->n_el, 0, 1),
            G->blas, "cublasDgemmStridedBatched (the float32 bound)");
        if (st != NS_OK) return st;
        lfp_rel<<<grid(nb), THREADS, 0, G->stream>>>(G->bnd, G->tot, G->n_el, R, nb, LFP_U, G->rel);
        NS_CUDA_TRY(cudaGetLastError());
    }
    return NS_OK;
}

/* F32 at set-up: the coefficients computed a tile at a time (lfp_tile), rounded into F, and the
 * chunks' largest |M| */
static ns_status make_f32(lfp_gpu *G) {
    const int64_t R = G->R, ncp = G->ncp;
    for (int64_t s0 = 0; s0 < G->n_slices; s0 += G->tile_slices) {
        const int64_t ns = G->n_slices - s0 < G->tile_slices ? G->n_slices - s0 : G->tile_slices, rows_t = ns * G->slice;
        lfp_tile<<<dim3(grid(rows_t), (unsigned)(R < MAX_GRID_Y ? R : MAX_GRID_Y)), THREADS, 0, G->stream>>>(
            G->seg, G->n_comp, G->point, G->membrane, G->mid, G->comp_of_col, s0 * G->slice, rows_t, G->pts,
            G->pt_begin, G->n_el, R, G->sigma, G->A);
        lfp_round<<<dim3(grid(rows_t), (unsigned)(G->n_el < MAX_GRID_Y ? G->n_el : MAX_GRID_Y)), THREADS, 0,
                    G->stream>>>(G->A, rows_t, s0 * G->slice, G->n_el, ncp, G->F);
        NS_CUDA_TRY(cudaGetLastError());
    }
    lfp_chunk_max<<<dim3(grid(G->chunks), (unsigned)(G->n_el < MAX_GRID_Y ? G->n_el : MAX_GRID_Y)), THREADS, 0,
                    G->stream>>>(G->F, ncp, G->col, G->n_comp, G->chunks, G->n_el, G->mmax);
    NS_CUDA_TRY(cudaGetLastError());
    NS_CUDA_TRY(cudaStreamSynchronize(G->stream));
    return NS_OK;
}

/* After the stream's synchronisation: the phases' times of the reduction. */
static ns_status account(lfp_gpu *G) {
    float ms[3];
    NS_CUDA_TRY(cudaEventElapsedTime(&ms[0], G->ev[0], G->ev[1]));
    NS_CUDA_TRY(cudaEventElapsedTime(&ms[1], G->ev[1], G->ev[2]));
    NS_CUDA_TRY(cudaEventElapsedTime(&ms[2], G->ev[2], G->ev[3]));
    G->time.currents_ms += ms[0], G->time.gemm_ms += ms[1], G->time.sum_ms += ms[2];
    G->time.reductions++;
    return NS_OK;
}

/* Once at set-up, on zeros: every kernel of a reduction (the tiles' once) and cuBLAS's DGEMM for
 * one sample and for a full buffer, so that the loading of their code (and
 * cuBLAS's first call) is set-up, not run time. */
static ns_status warm(lfp_gpu *G) {
    G->I = G->bufs[1], G->pB = G->pBs[1]; /* zeros; the first launch writes bufs[0] (G->cur) */
    const int32_t sizes[2] = {1, (int32_t)G->rows};
    for (int k = 0; k < (G->rows > 1 ? 2 : 1); ++k) {
        const ns_status st = enqueue(G, sizes[k], G->pop != NULL, 1, 1, k == 0);
        if (st != NS_OK) return st;
    }
    NS_CUDA_TRY(cudaStreamSynchronize(G->stream));
    return NS_OK;
}

/* keep: room for k0 + nb samples, the first k0 kept (the stream is idle: every reduction ends synchronised) */
static ns_status keep_room(lfp_gpu *G, int64_t need, int64_t k0) {
    if (need <= G->kept_cap) return NS_OK;
    int64_t cap = G->kept_cap > 0 ? 2 * G->kept_cap : 1024;
    while (cap < need) cap *= 2;
    double *k = NULL;
    NS_CUDA_TRY(cudaMalloc((void **)&k, (size_t)cap * (size_t)G->R * sizeof(double)));
    if (k0 > 0 && G->kept)
        NS_CUDA_TRY(cudaMemcpy(k, G->kept, (size_t)k0 * (size_t)G->R * sizeof(double), cudaMemcpyDeviceToDevice));
    cudaFree(G->kept);
    G->kept = k, G->kept_cap = cap;
    return NS_OK;
}

/* A launch's samples: the reduction of the buffer the launch wrote, enqueued
 * on G->stream with its results copied into pinned staging, the other buffer
 * handed to the next launch (ns_lfp_gpu_snap) so that the reduction runs
 * beside it; ns_lfp_gpu_collect waits for it. */
static ns_status submit(lfp_gpu *G, int64_t k0, int32_t nb, int pop, int pcell, int imem) {
    const int64_t n = G->n_comp, R = G->R;
    if (G->keep) {
        const ns_status kst = keep_room(G, k0 + nb, k0);
        if (kst != NS_OK) return kst;
    }
    G->I = G->bufs[G->cur], G->pB = G->pBs[G->cur];
    ns_status st = enqueue(G, nb, pop, pcell, imem, 1);
    if (st != NS_OK) return st;
    if (G->keep)
        NS_CUDA_TRY(cudaMemcpyAsync(G->kept + k0 * R, G->tot, (size_t)nb * (size_t)R * sizeof(double),
                                    cudaMemcpyDeviceToDevice, G->stream));
    NS_CUDA_TRY(cudaMemcpyAsync(G->h_tot, G->tot, (size_t)nb * (size_t)R * sizeof(double), cudaMemcpyDeviceToHost,
                                G->stream));
    if (G->f32 || G->lowrank)
        NS_CUDA_TRY(cudaMemcpyAsync(G->h_rel, G->rel, (size_t)nb * sizeof(double), cudaMemcpyDeviceToHost, G->stream));
    if (pop && G->pop)
        NS_CUDA_TRY(cudaMemcpyAsync(G->h_pop, G->pop, (size_t)nb * (size_t)G->n_pop * (size_t)G->n_el * sizeof(double),
                                    cudaMemcpyDeviceToHost, G->stream));
    if (pcell && G->pcell)
        NS_CUDA_TRY(cudaMemcpyAsync(G->h_pcell, G->pcell, (size_t)nb * (size_t)G->n_cells * 3 * sizeof(double),
                                    cudaMemcpyDeviceToHost, G->stream));
    if (imem && n > 0)
        NS_CUDA_TRY(cudaMemcpyAsync(G->h_imem, G->imem, (size_t)n * sizeof(double), cudaMemcpyDeviceToHost, G->stream));
    NS_CUDA_TRY(cudaEventRecord(G->ev[3], G->stream));
    G->pend_nb = nb, G->pend_pop = pop, G->pend_pcell = pcell, G->pend_imem = imem;
    G->cur ^= 1;
    return NS_OK;
}

static ns_status collect(lfp_gpu *G, double *tot, double *rel, double *pop, double *pcell, double *imem) {
    const int32_t nb = G->pend_nb;
    if (nb <= 0) return NS_OK;
    G->pend_nb = 0;
    NS_CUDA_TRY(cudaEventSynchronize(G->ev[3]));
    memcpy(tot, G->h_tot, (size_t)nb * (size_t)G->R * sizeof(double));
    if (rel && (G->f32 || G->lowrank)) memcpy(rel, G->h_rel, (size_t)nb * sizeof(double));
    if (pop && G->pend_pop && G->pop)
        memcpy(pop, G->h_pop, (size_t)nb * (size_t)G->n_pop * (size_t)G->n_el * sizeof(double));
    if (pcell && G->pend_pcell && G->pcell) memcpy(pcell, G->h_pcell, (size_t)nb * (size_t)G->n_cells * 3 * sizeof(double));
    if (imem && G->pend_imem && G->n_comp > 0) memcpy(imem, G->h_imem, (size_t)G->n_comp * sizeof(double));
    return account(G);
}

extern "C" const double *ns_lfp_gpu_kept(const lfp_gpu *G) { return G ? G->kept : NULL; }

extern "C" ns_status ns_lfp_gpu_submit(lfp_gpu *G, int64_t k0, int32_t nb, int pop, int pcell, int imem) {
    if (nb <= 0) return NS_OK;
    if (nb > G->rows) return ns_fail(NS_ERR_INTERNAL, "LFP: %d samples, the buffer holds %lld", (int)nb, (long long)G->rows);
    if (G->pend_nb > 0) return ns_fail(NS_ERR_INTERNAL, "LFP: a reduction submitted before the last was collected");
    const int caller = ns_cuda_save_device();
    ns_cuda_restore_device(G->device);
    const ns_status st = submit(G, k0, nb, pop, pcell, imem);
    ns_cuda_restore_device(caller);
    return st;
}

extern "C" int32_t ns_lfp_gpu_pending(const lfp_gpu *G) { return G ? G->pend_nb : 0; }

extern "C" ns_status ns_lfp_gpu_collect(lfp_gpu *G, double *tot, double *rel, double *pop, double *pcell,
                                        double *imem) {
    const int caller = ns_cuda_save_device();
    ns_cuda_restore_device(G->device);
    const ns_status st = collect(G, tot, rel, pop, pcell, imem);
    ns_cuda_restore_device(caller);
    return st;
}

extern "C" ns_status ns_lfp_gpu_positions(ns_sim_t *sim, int64_t *pos, int64_t *stride) {
    const int64_t parts = ns_sim_state_parts(sim);
    int64_t off = 0, cap = 0;
    int64_t *flat = NULL;
    ns_status st = NS_OK;
    for (int64_t k = 0; st == NS_OK && k < parts; ++k) {
        ns_sim_part p;
        if ((st = ns_sim_state_part(sim, k, &p)) != NS_OK) break;
        if (p.size > cap) {
            free(flat);
            cap = p.size;
            if (!(flat = (int64_t *)malloc((size_t)cap * sizeof *flat))) {
                st = ns_fail(NS_ERR_OUT_OF_MEMORY, "LFP: %lld state positions", (long long)cap);
                break;
            }
        }
        if (p.size > 0)
            st = ns_cuda_status(cudaMemcpy(flat, p.flat_of, (size_t)p.size * sizeof *flat, cudaMemcpyDeviceToHost),
                                "cudaMemcpy", __FILE__, __LINE__);
        for (int64_t q = 0; st == NS_OK && q < p.size; ++q) pos[flat[q]] = off + q;
        off += p.size;
    }
    free(flat);
    *stride = off;
    return st;
}

extern "C" void ns_lfp_gpu_timing_of(const lfp_gpu *G, ns_lfp_timing *out) {
    if (G) *out = G->time;
    else memset(out, 0, sizeof *out);
}

extern "C" int64_t ns_lfp_gpu_free_bytes(int device) {
    const int caller = ns_cuda_save_device();
    ns_cuda_restore_device(device);
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) free_b = 0;
    ns_cuda_restore_device(caller);
    return (int64_t)free_b;
}
