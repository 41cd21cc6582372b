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

/* Lanes of a warp. The on-chip kernel gives each cell `lanes` lanes (1, 2,
 * 4, ..., 32), so one warp solves 32 / lanes cells side by side. */
#define NS_ONCHIP_LANES 32

/* A cell cut into runs (unbranched paths: every node but the last has
 * exactly one child). Every run occupies a contiguous range of *positions*
 * (the cell's shared-memory image is in position order); for trees numbered
 * in preorder (the generators, most SWC files) position = compartment.
 * A run descriptor is 4 int32 {first, last, parent, children}: its first and
 * last position, the position of its first node's parent (-1: the root run),
 * and (child_begin << 16) | child_count into child_pos (the first positions
 * of the child runs, which all hang off the run's last node). All pointers
 * point into one int32 array (host or device); see onchip_plan.c. */
typedef struct ns_onchip_sched {
    int32_t n;          /* compartments */
    int32_t lanes;      /* lanes per cell */
    int32_t n_bwd;      /* backward steps (by height: leaf runs first) */
    int32_t n_fwd;      /* forward steps (by depth: the root run first) */
    int32_t identity;   /* 1: position = compartment (pos_of_node unused) */
    int32_t core;       /* int32 entries from base up to pos_of_node (descriptors, step
                           tables, child_pos): the part each CUDA block copies into
                           shared memory */
    const int32_t *base;        /* the array every pointer below points into */
    const int32_t *bwd_begin;   /* n_bwd * lanes + 1: items of (step s, lane l) are */
    const int32_t *bwd_desc;    /*   bwd_desc[4 * (bwd_begin[s*lanes+l] .. bwd_begin[s*lanes+l+1])) */
    const int32_t *fwd_begin;   /* n_fwd * lanes + 1, likewise */
    const int32_t *fwd_desc;
    const int32_t *child_pos;   /* first positions of child runs, grouped by parent run */
    const int32_t *pos_of_node; /* n: position of compartment i */
    const int32_t *node_of_pos; /* n: compartment at position p (pivot reports) */
} ns_onchip_sched;

/* Doubles of shared memory per cell: a, b, d, rhs (n each) and one double
 * of padding, so that cells are an odd number of doubles apart (lanes of
 * different cells at the same position hit different banks). */
static inline size_t ns_onchip_cell_doubles(int32_t n) { return 4 * (size_t)n + 1; }

/* Shared memory of one CUDA block of `warps` warps [bytes]: the schedule's
 * core (16-byte aligned) and the warps' cells. */
static inline size_t ns_onchip_block_bytes(int32_t n, int32_t lanes, int32_t core, int warps) {
    return ((size_t)core * sizeof(int32_t) + 15) / 16 * 16 +
           (size_t)warps * (size_t)(NS_ONCHIP_LANES / lanes) * ns_onchip_cell_doubles(n) *
               sizeof(double);
}

/* Solve n_cells Flat cells, `warps` warps per CUDA block, 32 / sched->lanes
 * cells per warp. */
cudaError_t ns_hines_launch_onchip(const ns_onchip_sched *sched, const double *a, const double *b,
                                   const double *d, double *rhs, int64_t n_cells,
                                   int64_t first_cell, int warps, unsigned long long *bad,
                                   cudaStream_t stream);
/* Allow `bytes` of dynamic shared memory per block and prefer shared memory
 * over L1 (once per device and lane count). */
cudaError_t ns_hines_onchip_setup(int lanes, size_t bytes);
/* Resident blocks per SM for `warps` warps and `bytes` of shared memory. */
cudaError_t ns_hines_onchip_occupancy(int lanes, int warps, size_t bytes, int *blocks);

#ifdef __cplusplus
}
#endif
#endif
