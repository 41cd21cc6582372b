/* Private: the LFP module's shared pieces (forward.c, probe.c, lfp.c and
 * the CUDA reduction in cuda/). */
#ifndef NS_LFP_IMPL_H
#define NS_LFP_IMPL_H

#include "neurosolve/lfp.h"

#define NS_LFP_MAX_POINTS 1024 /* points on one disc contact */

/* 4 pi sigma times the potential at pos of a unit current from the segment
 * a -> b with radius rlim (point: a point source at its midpoint). */
double ns_lfp_kernel(const double *a, const double *b, double rlim, const double *pos, int point);
ns_status ns_lfp_check_contact(const ns_lfp_contact *c, int64_t k);
/* Row of contact c (its points pts) over the segments. */
void ns_lfp_row(const ns_lfp_segments *seg, const ns_lfp_contact *c, const double *pts, ns_lfp_method method,
                double sigma, double *row);

/* ------------------------------------------------ the GPU reduction (cuda/)
 * For a CUDA simulation the coefficients live on its GPU: each sample's
 * voltages are gathered from the loop's own arrays (ns_sim_state_part), the
 * membrane currents and the per-cell dipoles computed there, and up to
 * NS_LFP_BLOCK samples reduced into potentials in one pass, so that only
 * electrodes x samples (and cells x 3 dipoles) leave the GPU. */
#define NS_LFP_BLOCK 16 /* samples buffered per pass over the coefficients */

typedef struct lfp_gpu lfp_gpu;
typedef struct lfp_gpu_geometry {
    int64_t n_el, n_comp, n_cells;
    const double *M;            /* n_el x n_comp */
    const double *g;            /* n_comp: axial conductance to the parent [uS] */
    const int64_t *parent;      /* n_comp: the parent's Flat index, -1 at a root */
    const int64_t *child_begin; /* n_comp + 1 into child (CSR of the children) */
    const int64_t *child;
    const unsigned char *membrane;
    const double *mid;          /* 3 x n_comp */
    const int64_t *cell_offset; /* n_cells + 1 */
} lfp_gpu_geometry;

/* On `device`; NS_ERR_UNSUPPORTED in a build without CUDA. */
ns_status ns_lfp_gpu_create(int device, const lfp_gpu_geometry *geo, lfp_gpu **out);
void ns_lfp_gpu_destroy(lfp_gpu *G);
/* One sample into buffer column b: the clamps' currents now on (n_stims of
 * node, amp); pcell (host, n_cells x 3) receives the cells' dipoles, imem
 * (host, n_comp; NULL: not copied) the currents. */
ns_status ns_lfp_gpu_sample(lfp_gpu *G, ns_sim_t *sim, const int64_t *stim_node, const double *stim_amp,
                            int64_t n_stims, int32_t b, double *pcell, double *imem);
/* The potentials of buffer columns [0, nb) into phi (host, nb x n_el). */
ns_status ns_lfp_gpu_flush(lfp_gpu *G, int32_t nb, double *phi);

#endif
