/* Shared by the MPI tests: start-up and a verdict over every process (a
 * failed CHECK on any rank fails the test on all of them). */
#ifndef NS_TEST_MPI_COMMON_H
#define NS_TEST_MPI_COMMON_H

#include <mpi.h>
#include <string.h>

#include "check.h"
#include "neurosolve/mpi.h"

static int mpi_rank = 0, mpi_size = 1;
static ns_dist_t *test_dist = NULL; /* MPI_COMM_WORLD's, made by the first dist_sim_create */

/* ns_sim_create spread over MPI_COMM_WORLD (collective): `options` (NULL:
 * the defaults) with dist set. */
static inline ns_status dist_sim_create(int32_t n_shapes, const ns_cell_t *const *shapes, int64_t n_cells,
                                        const int32_t *cell_shape, const ns_sim_params *params,
                                        const ns_sim_options *options, ns_sim_t **out) {
    if (!test_dist) {
        ns_status st = ns_dist_from_comm(MPI_COMM_WORLD, &test_dist);
        if (st != NS_OK) return st;
    }
    ns_sim_options o;
    if (options) o = *options;
    else ns_sim_options_init(&o);
    o.dist = test_dist;
    return ns_sim_create(n_shapes, shapes, n_cells, cell_shape, params, &o, out);
}

static void mpi_test_init(int *argc, char ***argv) {
    int provided = MPI_THREAD_SINGLE; /* FUNNELED: networks exchange from the OpenMP master thread */
    MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
}

/* Does every process hold the same text (a message)? */
static inline int same_text_everywhere(const char *text) {
    const uint64_t h = ns_mpi_hash(NS_MPI_HASH_INIT, text, strlen(text) + 1);
    uint64_t lo = 0, hi = 0;
    MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    return lo == hi;
}

static int mpi_test_finish(const char *name) {
    int failures = 0, all = 0;
    failures = check_failures;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (mpi_rank == 0) {
        if (all)
            printf("%s (%d processes): %d checks FAILED over all ranks\n", name, mpi_size, all);
        else
            printf("%s (%d processes): all %d checks passed on rank 0\n", name, mpi_size, check_count);
    }
    ns_dist_destroy(test_dist);
    test_dist = NULL;
    MPI_Finalize();
    return all ? 1 : 0;
}

#endif
