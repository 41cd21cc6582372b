/* Distributed batches of Hines systems: cells given to processes by LPT over
 * compartment counts, each process holding an ns_batch_t of its own cells,
 * and gathers of Flat-layout arrays back into the global numbering. */
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/population.h"
#include "hines/batch_impl.h"
#include "mpi/mpi_impl.h"

struct ns_mpi_batch {
    MPI_Comm comm; /* a duplicate: our messages never meet the caller's */
    int rank, size;
    int64_t n_cells, n_comp;
    int32_t *owner;          /* n_cells: rank of each global cell */
    int64_t *global_offset;  /* n_cells + 1: the global Flat layout */
    int64_t *local_cells;    /* n_local global numbers, increasing */
    int64_t n_local, n_local_comp;
    int64_t *rank_comp;      /* size: compartments held by each rank */
    ns_batch_t *local;       /* NULL when n_local == 0 */
};

void ns_mpi_batch_destroy(ns_mpi_batch_t *b) {
    if (!b) return;
    if (b->comm != MPI_COMM_NULL) MPI_Comm_free(&b->comm);
    free(b->owner);
    free(b->global_offset);
    free(b->local_cells);
    free(b->rank_comp);
    ns_batch_destroy(b->local);
    free(b);
}

static ns_status check_args(int32_t n_shapes, const ns_tree_t *const *shapes, int64_t n_cells,
                            const int32_t *cell_shape) {
    ns_status st = ns_population_check("ns_mpi_batch_create", n_shapes, shapes != NULL, n_cells, cell_shape);
    for (int32_t s = 0; st == NS_OK && s < n_shapes; ++s)
        if (!shapes[s]) st = ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_mpi_batch_create: shape %d is NULL", (int)s);
    return st;
}

uint64_t ns_mpi_hash_trees(uint64_t h, int32_t n_shapes, const ns_tree_t *const *shapes, int64_t n_cells,
                           const int32_t *cell_shape) {
    h = ns_mpi_hash(h, &n_shapes, sizeof n_shapes);
    for (int32_t s = 0; s < n_shapes; ++s) {
        const int32_t n = ns_tree_size(shapes[s]);
        h = ns_mpi_hash(h, &n, sizeof n);
        h = ns_mpi_hash(h, ns_tree_parent(shapes[s]), (size_t)n * sizeof(int32_t));
    }
    h = ns_mpi_hash(h, &n_cells, sizeof n_cells);
    const int has_map = cell_shape != NULL;
    h = ns_mpi_hash(h, &has_map, sizeof has_map);
    if (cell_shape) h = ns_mpi_hash(h, cell_shape, (size_t)n_cells * sizeof *cell_shape);
    return h;
}

ns_status ns_mpi_batch_create(MPI_Comm comm, int32_t n_shapes, const ns_tree_t *const *shapes,
                              int64_t n_cells, const int32_t *cell_shape, ns_mpi_batch_t **out) {
    if (out) *out = NULL;
    ns_status st = out ? check_args(n_shapes, shapes, n_cells, cell_shape)
                       : ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_mpi_batch_create: out is NULL");
    st = ns_mpi_agree_same(comm, st, ns_mpi_hash_trees(NS_MPI_HASH_INIT, n_shapes, shapes, n_cells, cell_shape),
                           "the batch (shapes, cell count, cell shapes)");
    if (st != NS_OK) return st;
    ns_mpi_batch_t *b = calloc(1, sizeof *b);
    ns_cells_partition cells;
    memset(&cells, 0, sizeof cells);
    int64_t *shape_size = malloc((size_t)n_shapes * sizeof *shape_size);
    if (!b || !shape_size) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "ns_mpi_batch_create");
    else {
        b->comm = MPI_COMM_NULL;
        if (MPI_Comm_dup(comm, &b->comm) != MPI_SUCCESS) st = ns_fail(NS_ERR_IO, "MPI_Comm_dup failed");
        MPI_Comm_rank(comm, &b->rank);
        MPI_Comm_size(comm, &b->size);
        for (int32_t k = 0; k < n_shapes; ++k) shape_size[k] = ns_tree_size(shapes[k]);
    }
    if (st == NS_OK) st = ns_partition_cells(n_shapes, shape_size, n_cells, cell_shape, b->size, b->rank, &cells);
    free(shape_size);
    if (st == NS_OK && cells.n_local > 0)
        st = ns_batch_create(n_shapes, shapes, cells.n_local, cells.local_shape, &b->local);
    if (st == NS_OK) {
        /* the batch takes over the partition's arrays */
        b->n_cells = cells.n_cells;
        b->n_comp = cells.n_comp;
        b->owner = cells.owner;
        b->global_offset = cells.global_offset;
        b->local_cells = cells.local_cells;
        b->rank_comp = cells.part_comp;
        b->n_local = cells.n_local;
        b->n_local_comp = cells.n_local_comp;
        free(cells.local_shape);
        memset(&cells, 0, sizeof cells);
    }
    ns_cells_partition_free(&cells);
    st = ns_mpi_agree(comm, st);
    if (st != NS_OK) {
        ns_mpi_batch_destroy(b);
        return st;
    }
    *out = b;
    return NS_OK;
}

MPI_Comm ns_mpi_batch_comm(const ns_mpi_batch_t *b) { return b ? b->comm : MPI_COMM_NULL; }
int64_t ns_mpi_batch_global_cells(const ns_mpi_batch_t *b) { return b ? b->n_cells : 0; }
int64_t ns_mpi_batch_global_compartments(const ns_mpi_batch_t *b) { return b ? b->n_comp : 0; }
const ns_batch_t *ns_mpi_batch_local(const ns_mpi_batch_t *b) { return b ? b->local : NULL; }
const int64_t *ns_mpi_batch_local_cells(const ns_mpi_batch_t *b) { return b ? b->local_cells : NULL; }
int64_t ns_mpi_batch_local_count(const ns_mpi_batch_t *b) { return b ? b->n_local : 0; }
int64_t ns_mpi_batch_local_compartments(const ns_mpi_batch_t *b) { return b ? b->n_local_comp : 0; }
int32_t ns_mpi_batch_owner(const ns_mpi_batch_t *b, int64_t cell) {
    return b && cell >= 0 && cell < b->n_cells ? b->owner[cell] : -1;
}

ns_status ns_mpi_batch_random_values(const ns_mpi_batch_t *batch, uint64_t seed, double *a, double *b,
                                     double *d, double *rhs) {
    if (!batch || (batch->n_local > 0 && (!a || !b || !d || !rhs)))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_mpi_batch_random_values: NULL argument");
    if (!batch->local) return NS_OK;
    const int64_t *off = ns_batch_cell_offset(batch->local);
    const int32_t *shape = ns_batch_cell_shape(batch->local);
    /* The same draws as ns_batch_random_values: one stream per global cell,
     * so a cell's values do not depend on which process holds it
     * (tests/mpi/test_mpi_batch.c compares the two). */
    for (int64_t k = 0; k < batch->n_local; ++k) {
        const int64_t o = off[k];
        ns_hines_random_cell(ns_batch_shape(batch->local, shape[k]), seed,
                             (uint64_t)batch->local_cells[k], a + o, b + o, d + o, rhs + o);
    }
    return NS_OK;
}

ns_status ns_mpi_batch_extract(const ns_mpi_batch_t *b, const double *global, double *local) {
    if (!b || (b->n_local > 0 && (!global || !local)))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_mpi_batch_extract: NULL argument");
    int64_t o = 0;
    for (int64_t k = 0; k < b->n_local; ++k) {
        const int64_t c = b->local_cells[k], n = b->global_offset[c + 1] - b->global_offset[c];
        memcpy(local + o, global + b->global_offset[c], (size_t)n * sizeof *local);
        o += n;
    }
    return NS_OK;
}

ns_status ns_mpi_gather_cells(MPI_Comm comm, int root, int64_t n_cells, const int32_t *owner,
                              const int64_t *global_offset, const int64_t *rank_len, const double *local,
                              double *global) {
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const int receiver = root < 0 || rank == root;
    int *counts = malloc((size_t)size * sizeof *counts), *displs = malloc((size_t)size * sizeof *displs);
    int64_t *cursor = calloc((size_t)size, sizeof *cursor);
    double *buf = NULL;
    ns_status st = counts && displs && cursor ? NS_OK : ns_fail(NS_ERR_OUT_OF_MEMORY, "gather counts");
    int64_t total = 0;
    for (int r = 0; st == NS_OK && r < size; ++r) {
        if (rank_len[r] > INT_MAX || total > INT_MAX)
            st = ns_fail(NS_ERR_SIZE, "gather: %lld values on rank %d exceed MPI's int counts",
                         (long long)rank_len[r], r);
        else {
            counts[r] = (int)rank_len[r];
            displs[r] = (int)total;
            total += rank_len[r];
        }
    }
    if (st == NS_OK && total > INT_MAX) st = ns_fail(NS_ERR_SIZE, "gather: %lld values exceed MPI's int counts", (long long)total);
    if (st == NS_OK && receiver && !global) st = ns_fail(NS_ERR_INVALID_ARGUMENT, "gather: the receiving array is NULL");
    if (st == NS_OK && receiver && !(buf = malloc((size_t)(total > 0 ? total : 1) * sizeof *buf)))
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "gather buffer of %lld values", (long long)total);
    st = ns_mpi_agree(comm, st);
    if (st == NS_OK) {
        static const double none = 0.0;
        const double *send = local ? local : &none;
        const int mine = counts[rank];
        int rc = root < 0 ? MPI_Allgatherv(send, mine, MPI_DOUBLE, buf, counts, displs, MPI_DOUBLE, comm)
                          : MPI_Gatherv(send, mine, MPI_DOUBLE, buf, counts, displs, MPI_DOUBLE, root, comm);
        if (rc != MPI_SUCCESS) st = ns_fail(NS_ERR_IO, "MPI gather of cell values failed");
    }
    /* Rank r's cells arrive in increasing global order: walk the cells and
     * take each from its owner's next slot. */
    if (st == NS_OK && receiver)
        for (int64_t c = 0; c < n_cells; ++c) {
            const int r = owner[c];
            const int64_t n = global_offset[c + 1] - global_offset[c];
            memcpy(global + global_offset[c], buf + displs[r] + cursor[r], (size_t)n * sizeof *global);
            cursor[r] += n;
        }
    free(counts);
    free(displs);
    free(cursor);
    free(buf);
    return st;
}

ns_status ns_mpi_batch_gather(const ns_mpi_batch_t *b, int root, const double *local, double *global) {
    if (!b) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_mpi_batch_gather: batch is NULL");
    return ns_mpi_gather_cells(b->comm, root, b->n_cells, b->owner, b->global_offset, b->rank_comp, local,
                               global);
}

ns_status ns_mpi_hines_solve(const ns_mpi_batch_t *b, const ns_solve_options *options, const double *a,
                             const double *bb, double *d, double *rhs, ns_solve_timing *timing,
                             ns_hines_method *method, ns_backend *backend) {
    if (!b) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_mpi_hines_solve: batch is NULL");
    ns_status st = NS_OK;
    ns_solve_timing t = {-1.0, -1.0, 0.0, -1.0, 0.0};
    ns_hines_method m = NS_HINES_AUTO;
    ns_backend be = NS_BACKEND_AUTO;
    if (b->local) {
        ns_hines_solver_t *s = NULL;
        st = ns_hines_solver_create(b->local, options, &s);
        if (st == NS_OK) st = ns_hines_solver_solve(s, a, bb, d, rhs);
        if (st == NS_OK) {
            ns_hines_solver_timing(s, &t);
            m = ns_hines_solver_method(s);
            be = ns_hines_solver_backend(s);
        }
        ns_hines_solver_destroy(s);
    }
    if (timing) *timing = t;
    if (method) *method = m;
    if (backend) *backend = be;
    return ns_mpi_agree(b->comm, st);
}
