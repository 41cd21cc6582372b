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

#endif
