/* Private: the LFP module's shared pieces (forward.c, probe.c, lfp.c and
 * the CUDA reduction in cuda/). */
#ifndef NS_LFP_IMPL_H
#define NS_LFP_IMPL_H

#include <string.h>

#include "neurosolve/lfp.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define NS_LFP_MAX_POINTS 1024 /* points on one disc contact */

ns_status ns_lfp_check_contact(const ns_lfp_contact *c, int64_t k);
/* Row of contact c (its points pts) over the segments. */
void ns_lfp_row(const ns_lfp_segments *seg, const ns_lfp_contact *c, const double *pts, ns_lfp_method method,
                double sigma, double *row);

#define NS_LFP_BLOCK 16 /* samples buffered per pass over the coefficients (CPU) */
#define NS_LFP_CHUNK 8  /* F32: compartments (Flat order) per term of the error bound */

/* The calling OpenMP thread's n_pop x NS_LFP_BLOCK accumulators in `base`
 * (one such set per thread, thread 0's first; without OpenMP the first),
 * zeroed. */
static inline double *ns_lfp_thread_acc(double *base, int32_t n_pop) {
#ifdef _OPENMP
    double *acc = base + (size_t)omp_get_thread_num() * (size_t)n_pop * NS_LFP_BLOCK;
#else
    double *acc = base;
#endif
    memset(acc, 0, (size_t)n_pop * NS_LFP_BLOCK * sizeof *acc);
    return acc;
}

/* ------------------------------------------------ LOWRANK (lowrank.c)
 * Householder QR with column pivoting of A (m x n, column-major, column j at
 * A + j m; overwritten: R on and above the diagonal, the reflectors' tails
 * below, LAPACK's dgeqp3 layout), stopped at the first rank r whose residual
 * (the trailing block) has Frobenius norm <= tol ||A||_F; returns r. tau:
 * min(m, n) reflector factors; perm: n, A P's column j is A's perm[j]; cn:
 * 2 n scratch. */
int64_t ns_lfp_pqr(double *A, int64_t m, int64_t n, double tol, double *tau, int64_t *perm, double *cn);
#define NS_LFP_RANK_TOLERANCE 1e-10 /* ns_lfp_options.rank_tolerance's default */
typedef struct lfp_lowrank lfp_lowrank;
lfp_lowrank *ns_lfp_lowrank_new(int64_t n_el, int64_t n_cells, int32_t n_pop, int32_t threads);
void ns_lfp_lowrank_free(lfp_lowrank *lr);
/* Cell c's block B (n_el x n, row-major) factored at relative tolerance tol
 * (0: the default); cells may be factored in parallel. 1 when out of memory. */
int ns_lfp_lowrank_factor(lfp_lowrank *lr, int64_t c, const double *B, int64_t n, double tol);
/* Cell c's factors those of cell twin (factored before; the same shape and
 * placement, so the same block): shared, not copied. */
void ns_lfp_lowrank_share(lfp_lowrank *lr, int64_t c, int64_t twin);
/* The cell whose factors cell c's are (c itself unless shared). */
int64_t ns_lfp_lowrank_owner(const lfp_lowrank *lr, int64_t c);
/* After every cell's factors: the scratch of the products; the bytes kept
 * (8 r_k (E + n_k) + the bound's 8 E per cell; a twin 8 r_k E + 8 E: its
 * V is its owner's, its U a copy on the GPU), -1 when out of memory. */
int64_t ns_lfp_lowrank_finish(lfp_lowrank *lr, const int64_t *cell_offset);
const int32_t *ns_lfp_lowrank_ranks(const lfp_lowrank *lr);
/* The host's U and V freed (a CUDA simulation's, once uploaded); the ranks stay. */
void ns_lfp_lowrank_drop(lfp_lowrank *lr);
/* Cell c's factors: U (n_el x r_c, row-major), V (r_c x n_c, row-major), rho (n_el). */
void ns_lfp_lowrank_cell(const lfp_lowrank *lr, int64_t c, const double **U, const double **V, const double **rho);
/* The nb buffered samples' currents I (compartments x NS_LFP_BLOCK): phi (nb
 * x n_el), phi_pop (nb x n_pop x n_el, NULL: not wanted; pop: each cell's
 * population, NULL: all 0) and worst (nb: each sample's bound on the
 * truncation's error, max_e sum_k ||(B_k - U_k V_k)_e|| ||i_k||); the same
 * for any thread count nt. */
void ns_lfp_lowrank_apply(lfp_lowrank *lr, const double *I, const int64_t *off, const int32_t *pop, int32_t nb,
                          int nt, double *phi, double *phi_pop, double *worst);

/* ------------------------------------------------ the GPU reduction (cuda/)
 * For a CUDA simulation the sampler runs inside the GPU loop (sim_impl.h's
 * snap): after each sampled step the loop's step kernels write the membrane
 * current of every compartment (Kirchhoff per node with the step's new v,
 * the clamps on at the step's midpoint) into its column of a buffer of
 * `rows` samples, the compartments x samples matrix I; after each launch
 * the potentials and the summed dipole come out of one
 * batched DGEMM (cuBLAS) of the coefficients (electrodes + 3 dipole rows,
 * the compartments grouped by population and cut into equal slices) with
 * I, the slices' partial sums added in a fixed order (per population, then
 * over the populations); only electrodes x samples (and the cells' dipoles
 * on request) leave the GPU. */
typedef struct lfp_gpu lfp_gpu;
typedef struct lfp_gpu_geometry {
    int64_t n_el, n_comp, n_cells;
    const double *M;            /* n_el x n_comp */
    const double *g;            /* n_comp: axial conductance to the parent [uS] */
    const int64_t *parent;      /* n_comp: the parent's Flat index, -1 at a root */
    const unsigned char *membrane;
    const double *mid;          /* 3 x n_comp */
    const int64_t *cell_offset; /* n_cells + 1 */
    const int64_t *pos;         /* n_comp: the state position of each compartment */
    int64_t stride;             /* state positions in all */
    int32_t n_pop;              /* populations (1: none given) */
    const int32_t *pop;         /* n_cells: each cell's population, NULL: all 0 */
    int per_cell_dipoles;
    int64_t rows;               /* samples buffered (0: ns_lfp_batch_rows's rule) */
    int64_t every;              /* the steps between samples (the rule's cadence) */
    /* tiles: M is NULL and the coefficients are computed per reduction from */
    int tiles;
    const double *start, *end, *diam; /* 3 n, 3 n, n: the placed segments */
    const unsigned char *point; /* n: 1 where a point source */
    const double *pts;          /* the contacts' points (3 each), contact e's from pt_begin[e] */
    const int64_t *pt_begin;    /* n_el + 1 */
    double sigma;
    int64_t tile_bytes;         /* 0: 256 MiB */
    int keep;                   /* keep every sample's tot rows on the GPU (ns_lfp_device_results) */
    int f32;                    /* with tiles: computed once, kept as float, widened per reduction */
    const lfp_lowrank *lowrank; /* LOWRANK: each cell's factors (M is NULL) */
} lfp_gpu_geometry;

/* Free memory of `device` [bytes] (0 in a build without CUDA). */
int64_t ns_lfp_gpu_free_bytes(int device);
/* The GPU phases' times so far (reductions, currents_ms, gemm_ms, sum_ms;
 * the rest 0); zeros for NULL. */
void ns_lfp_gpu_timing_of(const lfp_gpu *G, ns_lfp_timing *out);
/* On `device`; NS_ERR_UNSUPPORTED in a build without CUDA. */
ns_status ns_lfp_gpu_create(int device, const lfp_gpu_geometry *geo, lfp_gpu **out);
void ns_lfp_gpu_destroy(lfp_gpu *G);
/* The state position of every compartment (pos, n_comp) in the parts of
 * ns_sim_state_part laid end to end (stride positions in all). */
ns_status ns_lfp_gpu_positions(ns_sim_t *sim, int64_t *pos, int64_t *stride);
/* The snap buffer of the next launch (device, rows of the ld that
 * ns_lfp_gpu_sampler gives; two of them, alternating: one is written while
 * the other's reduction runs) and its rows. */
double *ns_lfp_gpu_snap(lfp_gpu *G, int64_t *rows);
/* sim_impl.h's snap_col, snap_g (device, per state position) and snap_ld;
 * LOWRANK: snap_slot, snap_norm_at and snap_norm_ld (else NULL, 0, 0). */
void ns_lfp_gpu_sampler(const lfp_gpu *G, const int32_t **col, const double **g, int64_t *ld, const int32_t **slot,
                        int64_t *norm_at, int64_t *norm_ld);
/* submit: the nb samples in rows [0, nb) of the buffer the last launch wrote,
 * samples k0 .. k0 + nb - 1 of the run, enqueued on the GPU; pop,
 * pcell, imem: whether those are wanted. collect (before the next submit, and
 * at the end of each advance) waits for them: tot (host, nb x (n_el + 3): the
 * potentials, then the dipole), rel (f32: host, nb: each sample's error bound
 * relative to its largest potential, as ns_lfp_error_bound), pop (host, nb x
 * n_pop x n_el), pcell (host, nb x n_cells x 3), imem (host, n_comp: the last
 * sample's currents); NULL: not copied. */
ns_status ns_lfp_gpu_submit(lfp_gpu *G, int64_t k0, int32_t nb, int pop, int pcell, int imem);
/* Samples submitted and not yet collected (0: none). */
int32_t ns_lfp_gpu_pending(const lfp_gpu *G);
ns_status ns_lfp_gpu_collect(lfp_gpu *G, double *tot, double *rel, double *pop, double *pcell, double *imem);
/* The kept samples (geometry.keep): rows of n_el + 3 on the GPU, NULL when none. */
const double *ns_lfp_gpu_kept(const lfp_gpu *G);

#endif
