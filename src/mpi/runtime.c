/* The MPI runtime pieces every distributed call stands on: agreeing on a
 * status (so that a failure on one process ends the collective on all of
 * them with that process's message), comparing input hashes across
 * processes, and choosing one GPU per process from its node-local rank. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "neurosolve/device.h"
#include "neurosolve/mpi.h"

/* Longest detail carried from a failing process to the others [bytes]. */
#define DETAIL_BYTES 1024

/* Agreements in this process that ended in a failure (see mpi.h). */
static long long failed_agreements = 0;

long long ns_mpi_failed_agreements(void) { return failed_agreements; }

ns_status ns_mpi_agree(MPI_Comm comm, ns_status local) {
    return ns_mpi_agree_message(comm, local, local != NS_OK ? ns_last_error() : NULL);
}

ns_status ns_mpi_agree_message(MPI_Comm comm, ns_status local, const char *message) {
    int rank = 0, size = 1;
    if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS || MPI_Comm_size(comm, &size) != MPI_SUCCESS)
        return ns_fail(NS_ERR_IO, "ns_mpi_agree: not a valid communicator");
    /* The lowest failing rank wins, so every process reports the same one. */
    const int key = local != NS_OK ? rank : size;
    int first = size;
    if (MPI_Allreduce(&key, &first, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS)
        return ns_fail(NS_ERR_IO, "ns_mpi_agree: MPI_Allreduce failed");
    if (first == size) return NS_OK;
    struct {
        int status;
        char detail[DETAIL_BYTES];
    } msg;
    memset(&msg, 0, sizeof msg);
    if (rank == first) {
        msg.status = (int)local;
        snprintf(msg.detail, sizeof msg.detail, "%s", message ? message : "");
    }
    if (MPI_Bcast(&msg, (int)sizeof msg, MPI_BYTE, first, comm) != MPI_SUCCESS)
        return ns_fail(NS_ERR_IO, "ns_mpi_agree: MPI_Bcast failed");
    msg.detail[DETAIL_BYTES - 1] = '\0';
    ++failed_agreements;
    /* A detail that already names its rank (agreed before) keeps it. */
    if (strncmp(msg.detail, "rank ", 5) == 0) return ns_fail((ns_status)msg.status, "%s", msg.detail);
    return ns_fail((ns_status)msg.status, "rank %d of %d: %s", first, size, msg.detail);
}

ns_status ns_mpi_check_same(MPI_Comm comm, uint64_t hash, const char *what) {
    int rank = 0, size = 1;
    if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS || MPI_Comm_size(comm, &size) != MPI_SUCCESS)
        return ns_fail(NS_ERR_IO, "ns_mpi_check_same: not a valid communicator");
    uint64_t *all = malloc((size_t)size * sizeof *all);
    /* Agree on the allocation before the gather that needs it (every
     * communication phase starts with an agreement: docs/mpi.md). */
    ns_status st = ns_mpi_agree(comm, all ? NS_OK : ns_fail(NS_ERR_OUT_OF_MEMORY, "%d hashes", size));
    if (st != NS_OK) {
        free(all);
        return st;
    }
    if (MPI_Allgather(&hash, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, comm) != MPI_SUCCESS) {
        free(all);
        return ns_fail(NS_ERR_IO, "ns_mpi_check_same: MPI_Allgather failed");
    }
    for (int r = 1; r < size; ++r)
        if (all[r] != all[0]) {
            st = ns_fail(NS_ERR_INVALID_ARGUMENT,
                         "%s differs between ranks: rank %d has hash %016llx, rank 0 has %016llx "
                         "(every process must pass the same inputs)",
                         what ? what : "input", r, (unsigned long long)all[r], (unsigned long long)all[0]);
            break;
        }
    free(all);
    return st;
}

uint64_t ns_mpi_hash(uint64_t h, const void *data, size_t bytes) {
    /* FNV-1a steps over 8-byte words (a model of 10^8 coefficients hashes
     * in about a second), then the tail byte by byte. */
    const unsigned char *p = data;
    size_t i = 0;
    for (; i + 8 <= bytes; i += 8) {
        uint64_t word;
        memcpy(&word, p + i, sizeof word);
        h ^= word;
        h *= 0x100000001b3ULL; /* the FNV 64-bit prime */
        h ^= h >> 29;          /* spread the high bits, which the product does not feed back */
    }
    for (; i < bytes; ++i) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

ns_status ns_mpi_bind_device(MPI_Comm comm, int bind, int *device, int *local_rank, int *local_size) {
    if (device) *device = NS_DEVICE_CURRENT;
    int rank = 0;
    MPI_Comm node;
    if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS ||
        MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node) != MPI_SUCCESS)
        return ns_fail(NS_ERR_IO, "ns_mpi_bind_device: MPI_Comm_split_type failed");
    int lr = 0, ls = 1;
    MPI_Comm_rank(node, &lr);
    MPI_Comm_size(node, &ls);
    MPI_Comm_free(&node);
    if (local_rank) *local_rank = lr;
    if (local_size) *local_size = ls;
    if (bind && device) {
        /* the devices this process can use, as the CUDA runtime shows them
         * (it applies CUDA_VISIBLE_DEVICES; the library does not read it) */
        int count = 0;
        if (ns_cuda_device_count(&count) != NS_OK) {
            ns_clear_error(); /* a build without CUDA, or no driver: nothing to bind */
            count = 0;
        }
        if (count > 0) *device = lr % count;
    }
    return ns_mpi_agree(comm, NS_OK);
}
