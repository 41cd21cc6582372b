/* Private: the extern "C" launchers of the Hines CUDA kernels (one .cu file
 * each) and the on-chip schedule that the host builds once per shape.
 * Plain C so that the host logic (the .c files beside this one) can call them.
 *
 * Layouts (docs/methods.md): element i of cell c of a chunk of N cells with n
 * compartments per cell sits at
 *     (c / G) * G * n + i * G + (c % G)
 * where the group G is 1 for Flat, BS for Block-Interleaved and N for
 * Full-Interleaved. Buffers of the grouped layouts hold ceil(N / G) * G cells.
 *
 * Every launcher returns the launch status (cudaGetLastError), never waits. */
#ifndef NS_HINES_CUDA_KERNELS_H
#define NS_HINES_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __CUDACC__
#define NS_HOST_DEVICE __host__ __device__
#else
#define NS_HOST_DEVICE
#endif

/* The "no bad pivot" value of the device flag; a bad pivot at compartment i
 * of (batch) cell c stores min(flag, ns_pivot_key(c, i)). */
#define NS_PIVOT_NONE 0xFFFFFFFFFFFFFFFFULL
/* Smaller keys win: the lowest cell first, then the highest compartment
 * (the first one NEURON's triang meets, since it walks from the leaves). */
NS_HOST_DEVICE static inline unsigned long long ns_pivot_key(int64_t cell, int32_t index) {
    return ((unsigned long long)cell << 32) | (unsigned long long)(0x7FFFFFFF - index);
}
static inline int64_t ns_pivot_cell(unsigned long long key) { return (int64_t)(key >> 32); }
static inline int32_t ns_pivot_index(unsigned long long key) {
    return (int32_t)(0x7FFFFFFF - (int32_t)(key & 0xFFFFFFFFULL));
}

/* ---------------------------------------------- the paper's kernels (1 thread/cell) */

/* Flat (G = 1), Full-Interleaved (G = n_cells) or Block-Interleaved (G = BS),
 * in place on the layout's arrays. first_cell: batch index of cell 0 of the
 * chunk (for the pivot flag). threads: CUDA block size. */
cudaError_t ns_hines_launch_strided(int32_t n, const int32_t *parent, const double *a,
                                    const double *b, double *d, double *rhs, int64_t n_cells,
                                    int64_t group, int64_t first_cell, int threads,
                                    unsigned long long *bad, cudaStream_t stream);

/* Block-Shared: Block-Interleaved with group BS, one CUDA block of BS threads
 * per group, the group's rhs (BS * n doubles) kept in shared memory. */
cudaError_t ns_hines_launch_block_shared(int32_t n, const int32_t *parent, const double *a,
                                         const double *b, double *d, double *rhs,
                                         int64_t n_cells, int32_t block_size, int64_t first_cell,
                                         unsigned long long *bad, cudaStream_t stream);
/* Allow the Block-Shared kernel `bytes` of dynamic shared memory (above 48 KiB
 * needs the opt-in); call once per device before launching. */
cudaError_t ns_hines_block_shared_setup(size_t bytes);

/* ---------------------------------------------------------- layout conversion */

/* Flat <-> grouped layout of one array of n_cells cells (group as above).
 * to_flat = 0: src Flat, dst grouped; 1: the reverse. */
cudaError_t ns_hines_launch_layout(int32_t n, const double *src, double *dst, int64_t n_cells,
                                   int64_t group, int to_flat, cudaStream_t stream);

/* ---------------------------------------------------------- the on-chip kernel */

/* Lanes of a warp: one warp solves one cell. */
#define NS_ONCHIP_LANES 32

/* A cell cut into runs (unbranched paths: every node but the last has
 * exactly one child). Runs are numbered by their first node, so a parent run
 * has a smaller number than its children. All pointers point into one int32
 * array (host or device); see onchip_plan.c. */
typedef struct ns_onchip_sched {
    int32_t n;          /* compartments */
    int32_t n_runs;
    int32_t n_bwd;      /* backward steps (by height: leaf runs first) */
    int32_t n_fwd;      /* forward steps (by depth: the root run first) */
    const int32_t *run_nodes;   /* n: the nodes of each run, root side first */
    const int32_t *run_begin;   /* n_runs + 1: run r is run_nodes[run_begin[r] .. run_begin[r+1]) */
    const int32_t *run_parent;  /* n_runs: parent node of the run's first node (-1: root run) */
    const int32_t *child_begin; /* n_runs + 1: child runs of r (they hang off r's last node) */
    const int32_t *child_first; /* n_runs: first node of each child run, grouped by parent run */
    const int32_t *bwd_begin;   /* n_bwd * 32 + 1: runs of (step s, lane l) are */
    const int32_t *bwd_runs;    /*   bwd_runs[bwd_begin[s*32+l] .. bwd_begin[s*32+l+1]) */
    const int32_t *fwd_begin;   /* n_fwd * 32 + 1, likewise */
    const int32_t *fwd_runs;
} ns_onchip_sched;

/* Doubles of shared memory per cell (four arrays, each padded so that it
 * can start on either half of a 16-byte word). */
static inline size_t ns_onchip_cell_doubles(int32_t n) { return 4 * (size_t)((n + 2) & ~1); }

/* Solve n_cells Flat cells, `warps` cells per CUDA block (one per warp). */
cudaError_t ns_hines_launch_onchip(const ns_onchip_sched *sched, const double *a, const double *b,
                                   const double *d, double *rhs, int64_t n_cells,
                                   int64_t first_cell, int warps, unsigned long long *bad,
                                   cudaStream_t stream);
/* Allow `bytes` of dynamic shared memory per block and prefer shared memory
 * over L1 (once per device). */
cudaError_t ns_hines_onchip_setup(size_t bytes);
/* Resident blocks per SM for `warps` warps and `bytes` of shared memory. */
cudaError_t ns_hines_onchip_occupancy(int warps, size_t bytes, int *blocks);

#ifdef __cplusplus
}
#endif
#endif
