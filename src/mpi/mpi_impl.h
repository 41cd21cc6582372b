/* Private to neurosolve_mpi: the hash of a batch description and the gather
 * of per-cell arrays (the cells' partition is ns_partition_cells, neurosolve/dist.h). */
#ifndef NS_MPI_IMPL_H
#define NS_MPI_IMPL_H

#include "neurosolve/mpi.h"

/* Hash of a batch description (shapes' parent arrays, cell count, cell
 * shapes). */
uint64_t ns_mpi_hash_trees(uint64_t h, int32_t n_shapes, const ns_tree_t *const *shapes, int64_t n_cells,
                           const int32_t *cell_shape);

/* Collective: gather per-cell Flat arrays (rank r holds rank_len[r] values,
 * its cells in increasing global order) into the global layout on root
 * (root < 0: everywhere). Starts with an agreement. */
ns_status ns_mpi_gather_cells(MPI_Comm comm, int root, int64_t n_cells, const int32_t *owner,
                              const int64_t *global_offset, const int64_t *rank_len, const double *local,
                              double *global);

#endif
