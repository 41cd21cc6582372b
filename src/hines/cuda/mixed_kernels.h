/* Private: launchers of the mixed-shape Hines kernels (mixed_kernels.cu).
 * Layouts and schedules come from the host plan (hines/mixed_plan.h).
 * Every launcher returns the launch status and never waits.
 *
 * Pivot failures: *bad = min(*bad, Flat index of the node), NS_PIVOT_NONE
 * (~0) when none; the host maps the index to (cell, compartment). */
#ifndef NS_HINES_CUDA_MIXED_KERNELS_H
#define NS_HINES_CUDA_MIXED_KERNELS_H

#include <stdint.h>
#include <cuda_runtime_api.h>

#include "hines/mixed_plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Device pointers of a grouped layout (ns_mixed_layout) and the arrays. */
typedef struct ns_mixed_args {
    const int64_t *gather;         /* storage position -> Flat index (pivot reports) */
    const int32_t *group_level;    /* fine-grained: levels of each block */
    const ns_mixed_level *levels;
    const int64_t *rowoff;
    const int32_t *br_len;
    const int64_t *br_ppos, *br_child, *child_pos;
    const double *a, *b;
    double *d, *rhs;
    unsigned long long *bad;
} ns_mixed_args;

/* Fine-grained: one CUDA block of `threads` threads per group, one thread
 * per branch of a level, __syncthreads between levels. */
cudaError_t ns_mixed_launch_fine(const ns_mixed_args *args, int32_t n_groups, int threads,
                                 cudaStream_t stream);

/* Fine-grained with each group's image in shared memory
 * (mixed_fine_shared.cu): d and rhs (and a and b when ab_shared), the
 * group's levels and its tables as int32. Bytes of one group's image: */
static inline size_t ns_mixed_fine_shared_bytes(int64_t levels, int64_t nodes, int64_t branches,
                                                int64_t children, int64_t rows, int ab_shared) {
    return (size_t)levels * sizeof(ns_mixed_level) + (size_t)nodes * sizeof(double) * (ab_shared ? 4 : 2) +
           sizeof(int32_t) * (size_t)(3 * branches + 1 + children + rows);
}
/* Once per process and variant: allow `bytes` of dynamic shared memory. */
cudaError_t ns_mixed_fine_shared_setup(int ab_shared, size_t bytes);
/* One block of `threads` threads per group, `bytes` of shared memory (at
 * least the largest group's ns_mixed_fine_shared_bytes). */
cudaError_t ns_mixed_launch_fine_shared(const ns_mixed_args *args, int32_t n_groups, int threads,
                                        int ab_shared, size_t bytes, cudaStream_t stream);
/* Branch-level: one launch per level and direction; `level` is the host
 * copy of the level's descriptor. */
cudaError_t ns_mixed_launch_level(const ns_mixed_args *args, const ns_mixed_level *level,
                                  int backward, cudaStream_t stream);

/* One thread per cell on the sorted jagged-interleaved layout
 * (ns_mixed_cells): node k of sorted cell c at rowoff[k] + c. */
cudaError_t ns_mixed_launch_cells(int64_t n_cells, const int32_t *sorted_shape,
                                  const int32_t *shape_size, const int64_t *shape_poff,
                                  const int32_t *parents, const int64_t *rowoff,
                                  const int64_t *gather, const double *a, const double *b,
                                  double *d, double *rhs, unsigned long long *bad,
                                  cudaStream_t stream);
/* One thread per cell on the Flat arrays (per-shape parent arrays). */
cudaError_t ns_mixed_launch_flat(int64_t n_cells, const int32_t *cell_shape,
                                 const int64_t *cell_offset, const int32_t *shape_size,
                                 const int64_t *shape_poff, const int32_t *parents,
                                 const double *a, const double *b, double *d, double *rhs,
                                 unsigned long long *bad, cudaStream_t stream);

/* Flat -> solver storage: dst[p] = src[gather[p]] for d and rhs (which & 2)
 * and, for a and b (which & 1), the edge's values (swapped where the edge
 * was flipped by re-rooting; 0 at roots). edge NULL: a and b like d. */
cudaError_t ns_mixed_launch_gather(int64_t n, const int64_t *gather, const int64_t *edge,
                                   const double *const src[4], double *const dst[4], int which,
                                   cudaStream_t stream);
/* Solver storage -> Flat: flat[gather[p]] = x[p]. */
cudaError_t ns_mixed_launch_scatter(int64_t n, const int64_t *gather, const double *x,
                                    double *flat, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
