/* neurosolve: batched tridiagonal solvers (Thomas batches of fixed and
 * variable size). Owned by the tridiagonal module; see docs/tridiag.md. */
#ifndef NEUROSOLVE_TRIDIAG_H
#define NEUROSOLVE_TRIDIAG_H

#include <stddef.h>
#include <stdint.h>
#include "neurosolve/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Solve one system of n unknowns by the Thomas algorithm, reading
 * dl[1..n-1], d[0..n-1], du[0..n-2] with stride `stride` between unknowns and
 * overwriting x (which holds the right-hand side on entry). Returns the index
 * of the first zero or non-finite pivot, or -1 on success. The reference. */
int32_t ns_thomas_one(int32_t n, ptrdiff_t stride, const double *dl, const double *d,
                      const double *du, double *x);

#ifdef __cplusplus
}
#endif
#endif
