/* The distribution table of an MPI communicator (neurosolve/dist.h): what
 * a simulation spread over processes (ns_sim_options.dist) communicates
 * through. libneurosolve calls these functions through the table, so that
 * it carries no MPI dependency. */
#include <limits.h>
#include <stdlib.h>

#include "core/error.h"
#include "neurosolve/mpi.h"

/* The context: the caller's communicator (not a duplicate: only
 * collectives are sent on it, which cannot meet the caller's point-to-point
 * messages, and a process that failed before a collective call meets the
 * others in the caller's own agreement on it, as tools/cli_mpi.c's exit
 * does) and MPI's int counts of a gather. */
typedef struct mpi_context {
    MPI_Comm comm;
    int size;
    int *counts, *offsets;
} mpi_context;

static MPI_Comm comm_of(void *context) { return ((mpi_context *)context)->comm; }

static ns_status agree(void *context, ns_status local) { return ns_mpi_agree(comm_of(context), local); }

static ns_status check_same(void *context, uint64_t hash, const char *what) {
    return ns_mpi_check_same(comm_of(context), hash, what);
}

static ns_status allreduce(void *context, void *values, int64_t count, ns_dist_type type, ns_dist_reduce op) {
    if (count < 0 || count > INT_MAX) return ns_fail(NS_ERR_SIZE, "allreduce of %lld values", (long long)count);
    const MPI_Datatype t = type == NS_DIST_DOUBLE ? MPI_DOUBLE : MPI_INT64_T;
    if (MPI_Allreduce(MPI_IN_PLACE, values, (int)count, t, op == NS_DIST_MIN ? MPI_MIN : MPI_MAX, comm_of(context)) !=
        MPI_SUCCESS)
        return ns_fail(NS_ERR_IO, "MPI_Allreduce failed");
    return NS_OK;
}

/* The byte counts of every rank are the same on every process, so a size
 * refusal is the same everywhere and needs no agreement. */
static ns_status gather(void *context, int32_t root, const void *send, int64_t bytes, void *recv,
                        const int64_t *bytes_of, const int64_t *displs) {
    mpi_context *c = context;
    for (int r = 0; r < c->size; ++r) {
        if (bytes_of[r] < 0 || displs[r] < 0 || bytes_of[r] > INT_MAX || displs[r] > INT_MAX - bytes_of[r])
            return ns_fail(NS_ERR_SIZE, "gather: %lld bytes from rank %d at %lld exceed MPI's int counts",
                           (long long)bytes_of[r], r, (long long)displs[r]);
        c->counts[r] = (int)bytes_of[r];
        c->offsets[r] = (int)displs[r];
    }
    const int n = (int)bytes;
    const int rc = root < 0 ? MPI_Allgatherv(send, n, MPI_BYTE, recv, c->counts, c->offsets, MPI_BYTE, c->comm)
                            : MPI_Gatherv(send, n, MPI_BYTE, recv, c->counts, c->offsets, MPI_BYTE, root, c->comm);
    return rc == MPI_SUCCESS ? NS_OK : ns_fail(NS_ERR_IO, "MPI gather failed");
}

static int funneled(void *context) {
    (void)context;
    int level = MPI_THREAD_SINGLE;
    return MPI_Query_thread(&level) == MPI_SUCCESS && level >= MPI_THREAD_FUNNELED;
}

static void release(void *context) {
    mpi_context *c = context;
    if (!c) return;
    free(c->counts);
    free(c->offsets);
    free(c);
}

static const ns_dist_ops MPI_OPS = {agree, check_same, allreduce, gather, funneled, release};

ns_status ns_dist_from_comm(MPI_Comm comm, ns_dist_t **out) {
    if (!out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_dist_from_comm: out is NULL");
    *out = NULL;
    int rank = 0, size = 1;
    if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS || MPI_Comm_size(comm, &size) != MPI_SUCCESS)
        return ns_fail(NS_ERR_IO, "ns_dist_from_comm: not a valid communicator");
    mpi_context *c = calloc(1, sizeof *c);
    if (c) {
        c->comm = comm;
        c->size = size;
        c->counts = malloc((size_t)size * sizeof *c->counts);
        c->offsets = malloc((size_t)size * sizeof *c->offsets);
    }
    ns_status st = c && c->counts && c->offsets ? NS_OK : ns_fail(NS_ERR_OUT_OF_MEMORY, "ns_dist_from_comm");
    st = ns_mpi_agree(comm, st);
    if (st == NS_OK) {
        st = ns_dist_create(&MPI_OPS, c, rank, size, out);
        st = ns_mpi_agree(comm, st);
    }
    if (st != NS_OK) {
        if (*out) ns_dist_destroy(*out); /* releases c */
        else release(c);
        *out = NULL;
    }
    return st;
}
