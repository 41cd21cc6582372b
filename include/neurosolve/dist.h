/* neurosolve: distribution as a context (docs/mpi.md). A simulation spread
 * over processes is made with the ordinary ns_sim_* calls and one option,
 * ns_sim_options.dist: NULL runs on one process; a distribution handle runs
 * the same calls over the processes it names (cells given out by
 * ns_partition_lpt, spikes exchanged, results gathered by ns_sim_gather).
 *
 * The handle is a small table of collective operations (agree on a status,
 * compare a hash, reduce, gather) on a context: libneurosolve carries no
 * transport and no MPI dependency. neurosolve/mpi.h fills the table for an
 * MPI communicator (ns_dist_from_comm, library neurosolve_mpi); another
 * transport may fill it too. */
#ifndef NEUROSOLVE_DIST_H
#define NEUROSOLVE_DIST_H

#include "neurosolve/export.h"

#include <stdint.h>

#include "neurosolve/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ns_dist ns_dist_t;

typedef enum ns_dist_type { NS_DIST_INT64 = 0, NS_DIST_DOUBLE = 1 } ns_dist_type;
typedef enum ns_dist_reduce { NS_DIST_MIN = 0, NS_DIST_MAX = 1 } ns_dist_reduce;

/* The operations of a transport, each collective over its processes (every
 * process calls it, in the same order). All return NS_OK or a failure with
 * its detail set (ns_fail); a transport failure is NS_ERR_IO. */
typedef struct ns_dist_ops {
    /* Every process passes its status; NS_OK when all passed NS_OK, else on
     * every process the status of the lowest failing rank with its
     * ns_last_error() detail, prefixed "rank R of N: " (a detail that already
     * starts with "rank " keeps it). */
    ns_status (*agree)(void *context, ns_status local);
    /* NS_ERR_INVALID_ARGUMENT on every process when the processes passed
     * different hashes ("<what> differs between ranks: ..."). */
    ns_status (*check_same)(void *context, uint64_t hash, const char *what);
    /* In place: values[k] becomes the minimum or maximum over the
     * processes, k < count. */
    ns_status (*allreduce)(void *context, void *values, int64_t count, ns_dist_type type, ns_dist_reduce op);
    /* Process r sends `bytes` bytes (bytes_of[r] on every process); the
     * receivers (rank root, or every process when root < 0) get process r's
     * bytes at recv + displs[r]. recv is used on receivers only. */
    ns_status (*gather)(void *context, int32_t root, const void *send, int64_t bytes, void *recv,
                        const int64_t *bytes_of, const int64_t *displs);
    /* Nonzero when the transport may be called from the master thread of an
     * OpenMP region (MPI: MPI_THREAD_FUNNELED or more), as a network's spike
     * exchange is. */
    int (*funneled)(void *context);
    /* Called by ns_dist_destroy (NULL: nothing to release). */
    void (*release)(void *context);
} ns_dist_ops;

/* A handle on `context` for process `rank` of `size` (ops is copied). The
 * handle must outlive the simulations made with it. */
NS_API ns_status ns_dist_create(const ns_dist_ops *ops, void *context, int32_t rank, int32_t size,
                                ns_dist_t **out);
NS_API void ns_dist_destroy(ns_dist_t *dist);
/* This process's rank and the process count (0 and 1 for NULL). */
NS_API int32_t ns_dist_rank(const ns_dist_t *dist);
NS_API int32_t ns_dist_size(const ns_dist_t *dist);

/* ---------------------------------------------------------- partitions */
/* Pure functions (no communication), so that they can be tested alone. */

/* Longest processing time first: items sorted by weight, heaviest first
 * (ties: lower index first), each given to the part with the least load so
 * far (ties: lower part). owner[i] in [0, n_parts) for every item; load
 * (NULL or n_parts entries) receives each part's summed weight. Weights must
 * be >= 0. The largest load is at most 4/3 of the optimum (Graham). */
NS_API ns_status ns_partition_lpt(int64_t n_items, const int64_t *weight, int32_t n_parts, int32_t *owner,
                                  int64_t *load);

/* The cells of a batch or simulation given to n_parts processes by
 * ns_partition_lpt over their compartment counts, as part `part` sees them:
 * cell c has shape cell_shape[c] (NULL: c % n_shapes), of shape_size[s]
 * compartments. Every process computes the same (no communication); the
 * distributed batches (neurosolve/mpi.h) and simulations (ns_sim_options.dist)
 * both give out their cells by it. Shapes and cell_shape are the caller's to
 * check. Free with ns_cells_partition_free. */
typedef struct ns_cells_partition {
    int64_t n_cells, n_comp;
    int32_t *owner;          /* n_cells: each cell's part */
    int64_t *global_offset;  /* n_cells + 1: each cell's first compartment in the cells' order */
    int64_t *part_comp;      /* n_parts: compartments per part */
    int64_t *local_cells;    /* n_local: the cells of `part`, increasing */
    int32_t *local_shape;    /* n_local: their shapes */
    int64_t n_local, n_local_comp;
} ns_cells_partition;
NS_API ns_status ns_partition_cells(int32_t n_shapes, const int64_t *shape_size, int64_t n_cells,
                                    const int32_t *cell_shape, int32_t n_parts, int32_t part,
                                    ns_cells_partition *out);
NS_API void ns_cells_partition_free(ns_cells_partition *p);

/* Contiguous ranges balanced by weight: part p gets items
 * [first[p], first[p+1]) (first has n_parts + 1 entries, first[0] = 0,
 * first[n_parts] = n_items); part p starts at the first item whose middle
 * lies at or past p / n_parts of the total weight. With n_items >= n_parts
 * every part gets at least one item. Used for voxels, which keep their
 * order. */
NS_API ns_status ns_partition_contiguous(int64_t n_items, const int64_t *weight, int32_t n_parts,
                                         int64_t *first);

#ifdef __cplusplus
}
#endif
#endif
