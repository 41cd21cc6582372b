/* Private to neurosolve_mpi: the hash of a batch description and the gather
 * of per-cell arrays (the cells' partition is ns_partition_cells, neurosolve/dist.h). */
#ifndef NS_MPI_IMPL_H
#define NS_MPI_IMPL_H

#include "neurosolve/mpi.h"

/* Hash of a batch description (shapes' parent arrays, cell count, cell
 * shapes). */
uint64_t ns_mpi_hash_trees(uint64_t h, int32_t n_shapes, const ns_tree_t *const *shapes, int64_t n_cells,
                           const int32_t *cell_shape);

/* Collective, the opening of a call that every process makes with the same
 * arguments: agree on `local` (each process's check of its arguments), then
 * check that `hash` (of what must be the same, named `what`) is. */
static inline ns_status ns_mpi_agree_same(MPI_Comm comm, ns_status local, uint64_t hash, const char *what) {
    const ns_status st = ns_mpi_agree(comm, local);
    return st != NS_OK ? st : ns_mpi_check_same(comm, hash, what);
}

/* Collective: gather per-cell Flat arrays (rank r holds rank_len[r] values,
 * its cells in increasing global order) into the global layout on root
 * (root < 0: everywhere). Starts with an agreement. */
ns_status ns_mpi_gather_cells(MPI_Comm comm, int root, int64_t n_cells, const int32_t *owner,
                              const int64_t *global_offset, const int64_t *rank_len, const double *local,
                              double *global);

#endif
