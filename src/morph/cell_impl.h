/* Private: the discretised cell (compartment tree plus per-node and
 * per-section geometry), shared by the discretisation files. */
#ifndef NS_MORPH_CELL_IMPL_H
#define NS_MORPH_CELL_IMPL_H

#include "neurosolve/morph.h"

#define JUNCTION_AREA 100.0 /* NEURON's nominal area of zero-area nodes [um^2] (the matrix rows) */

struct ns_cell {
    ns_tree_t *tree;        /* compartments in Hines order */
    double *area;           /* [um^2] per node; 0 at zero-area junction nodes */
    double *diam;           /* [um] per node, NEURON's segment diameter; 0 at zero-area junction nodes */
    double *g_axial;        /* [uS] per node, to its parent; 0 at the root */
    int32_t *type;          /* SWC type of the node's section */
    int32_t *section;       /* section index per node */
    double *x;              /* position along the section: (k+0.5)/nseg, 0 or 1 at junctions */
    double *seg;            /* 6 per node: 3-D start and end point (ns_cell_segments) */
    ns_section_info *sections;
    int32_t n_sections;
    ns_cell_info info;
};

#endif
