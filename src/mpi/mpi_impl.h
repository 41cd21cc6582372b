/* Private to neurosolve_mpi: the cell partition shared by distributed
 * batches and simulations, and the gather of per-cell arrays. */
#ifndef NS_MPI_IMPL_H
#define NS_MPI_IMPL_H

#include "neurosolve/mpi.h"

/* Cells of a batch or population given to the ranks by LPT. */
typedef struct ns_mpi_cells {
    int rank, size;
    int64_t n_cells, n_comp;
    int32_t *owner;          /* n_cells */
    int64_t *global_offset;  /* n_cells + 1: compartments in the global Flat layout */
    int64_t *rank_comp;      /* size: compartments per rank */
    int64_t *local_cells;    /* n_local global numbers, increasing */
    int32_t *local_shape;    /* n_local shapes */
    int64_t n_local, n_local_comp;
} ns_mpi_cells;

/* Local (no communication); shapes and cell_shape already checked. */
ns_status ns_mpi_cells_partition(MPI_Comm comm, int32_t n_shapes, const ns_tree_t *const *shapes,
                                 int64_t n_cells, const int32_t *cell_shape, ns_mpi_cells *out);
void ns_mpi_cells_free(ns_mpi_cells *cells);

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
