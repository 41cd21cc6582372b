/* An independent check for `solve --check`: the Hines system of one cell
 * assembled as a dense matrix and solved by LU with partial pivoting. It
 * shares nothing with the Hines algorithm but the definition of the matrix. */
#ifndef NS_TOOLS_DENSE_LU_H
#define NS_TOOLS_DENSE_LU_H

#include <stdint.h>

/* x := A^-1 rhs for the n x n matrix with diagonal d, A[i][p] = b[i] and
 * A[p][i] = a[i] for p = parent[i]. Returns 0, 1 on a singular matrix, 2 when
 * memory runs out. */
int dense_lu_solve(int32_t n, const int32_t *parent, const double *a, const double *b,
                   const double *d, const double *rhs, double *x);

#endif
