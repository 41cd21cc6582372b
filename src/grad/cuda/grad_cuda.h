/* Private: the GPU sweep's kernels (grad/cuda/grad.cu), launched by
 * grad/cuda/grad.c. Every cell's compartments sit at cell_base[c] ... in
 * its shape's order (ns_gpu_model_create's numbering); the per-cell
 * phases run one thread per cell over its nodes in a fixed order (the
 * tree's sums need no atomics: the same bits every run). */
#ifndef NS_GRAD_CUDA_H
#define NS_GRAD_CUDA_H

#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The cells' constants on the device */
typedef struct grad_dev_cells {
    int64_t cells, nodes;
    const int64_t *base;     /* cells + 1 */
    const int32_t *node_cell; /* nodes: its cell */
    const int32_t *parent;   /* nodes: the parent within the cell (-1 at the root) */
    const double *a, *b, *cap; /* nodes: with the gradient's Ra and cm */
    const double *v_init;    /* cells */
    const int64_t *stim_begin; /* cells + 1, into the clamps (cell-local node) */
    const int32_t *stim_node;
    const double *stim_del, *stim_dur, *stim_amp, *stim_scale;
    const int64_t *site_begin; /* cells + 1, into site (the loss's sites of each cell, in site order) */
    const int32_t *site;     /* the site's index (a column of the samples) */
    const int64_t *site_node; /* per site (n_sites): its node */
    int32_t n_sites;
} grad_dev_cells;

/* v = the cell's v_init */
cudaError_t grad_launch_vinit(const grad_dev_cells *c, double *v, cudaStream_t s);
/* The step after the currents (rhs, d: the mechanisms' sums at tm): the clamps on rhs, cap and
 * the axial terms on d (the assembled d kept there), x = the solve's (A x = rhs with the axial
 * terms of v), v += x, and the first step at which v is not finite into fault (per cell, 0: none) */
cudaError_t grad_launch_solve(const grad_dev_cells *c, double tm, double *v, double *rhs, double *d, double *x,
                              double *dw, int64_t step, int64_t *fault, cudaStream_t s);
/* row[k] = v at site k */
cudaError_t grad_launch_record(const grad_dev_cells *c, const double *v, double *row, cudaStream_t s);
/* out = v + x */
cudaError_t grad_launch_add(const double *v, const double *x, double *out, int64_t n, cudaStream_t s);
/* The solve's and the assembly's transposes: y from A^T y = lv (a and b exchanged), ld = -y x
 * (into ld), lvn = lv + the axial terms' (v the step's start), la, lb, lcap += */
cudaError_t grad_launch_rsolve(const grad_dev_cells *c, const double *v, const double *x, const double *d,
                               const double *lv, double *y, double *ld, double *lvn, double *la, double *lb,
                               double *lcap, cudaStream_t s);
/* lo[nf * n + i] = y[node[i]], lo[(nf + 1) * n + i] = ld[node[i]] */
cudaError_t grad_launch_gather(const int *node, int64_t n, int nf, const double *y, const double *ld, double *lo,
                               cudaStream_t s);
/* lv[site_node[k]] += dldy[k] over each cell's sites in order */
cudaError_t grad_launch_loss(const grad_dev_cells *c, const double *dldy, double *lv, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
