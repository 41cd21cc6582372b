/* neurosolve over MPI: batches, simulations and LiFE fits spread over the
 * processes of a communicator (docs/mpi.md). A simulation is spread by the
 * ordinary ns_sim_* calls with ns_sim_options.dist = a distribution made
 * here by ns_dist_from_comm.
 *
 * This header and the library that implements it (neurosolve_mpi, built when
 * CMake finds MPI: NS_MPI=AUTO|ON|OFF) are separate from libneurosolve, which
 * has no MPI dependency; neurosolve/neurosolve.h does not include this file.
 *
 * Conventions:
 * - Calls marked "collective" must be made by every process of the
 *   communicator, in the same order, with the same arguments (except the
 *   per-process data they name). They agree on success: when any process
 *   fails, every process returns that process's status with the detail
 *   "rank R of N: <its message>" (the lowest failing rank's), so no process
 *   is left waiting in a later collective.
 * - Inputs that must be identical on every process (the shapes and cell
 *   count of a batch, simulation parameters, a LiFE model) are hashed and
 *   compared; a mismatch fails with NS_ERR_INVALID_ARGUMENT naming the first
 *   rank that differs from rank 0.
 * - Cells and fibers keep their global numbers in every result.
 * - Only the host side is distributed; each process drives at most one GPU
 *   (ns_mpi_bind_device). */
#ifndef NEUROSOLVE_MPI_H
#define NEUROSOLVE_MPI_H

#include "neurosolve/export.h"

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "neurosolve/cable.h"
#include "neurosolve/dist.h"
#include "neurosolve/hines.h"
#include "neurosolve/life.h"
#include "neurosolve/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------- runtime */

/* Collective. Agree on a status: every process passes its own; returns
 * NS_OK when all passed NS_OK, else the status of the lowest failing rank,
 * whose ns_last_error() detail becomes every process's detail, prefixed
 * with "rank R of N: ". An MPI failure gives NS_ERR_IO. */
NS_API ns_status ns_mpi_agree(MPI_Comm comm, ns_status local);

/* ns_mpi_agree with the failing process's own message instead of
 * ns_last_error() (for failures outside the library, e.g. a tool's). */
NS_API ns_status ns_mpi_agree_message(MPI_Comm comm, ns_status local, const char *message);

/* How many agreements in this process ended in a failure. A process that
 * fails and sees this count unchanged knows the others have not heard of
 * its failure yet and must still agree on it (tools/cli_mpi.c does). */
NS_API long long ns_mpi_failed_agreements(void);

/* Collective. Fails with NS_ERR_INVALID_ARGUMENT on every process when the
 * processes passed different hashes: "<what> differs between ranks: rank R
 * has hash ..., rank 0 has ...". Starts with an agreement of its own. */
NS_API ns_status ns_mpi_check_same(MPI_Comm comm, uint64_t hash, const char *what);

/* A 64-bit FNV-1a-style hash over 8-byte words, continuing from h (start
 * with NS_MPI_HASH_INIT). Used for the input-consistency checks; not
 * cryptographic. */
#define NS_MPI_HASH_INIT 0xcbf29ce484222325ULL
NS_API uint64_t ns_mpi_hash(uint64_t h, const void *data, size_t bytes);

/* Collective. One GPU per process, chosen by the process's rank among the
 * processes of its node (MPI_Comm_split_type SHARED): with bind = 1, local
 * rank r gets the device ordinal r mod (usable devices of this process,
 * ns_cuda_device_count), for the caller to put in the `device` field of the
 * options it creates handles with (ns_solve_options, ns_sim_options,
 * ns_life_options, ns_tridiag_options). The library neither reads nor sets
 * the environment: the devices counted are those the CUDA runtime shows
 * (after CUDA_VISIBLE_DEVICES, which the launcher or the user sets), and
 * nothing is made current. *device (may be NULL) receives the ordinal, or
 * NS_DEVICE_CURRENT when bind = 0 (the launcher binds already), when the
 * process sees no usable GPU, or in a build without CUDA. *local_rank and
 * *local_size (may be NULL) receive the node-local rank and count. */
NS_API ns_status ns_mpi_bind_device(MPI_Comm comm, int bind, int *device, int *local_rank, int *local_size);

/* ---------------------------------------------------- distribution */

/* Collective. A distribution over the processes of `comm` (which it sends
 * collectives on, never point-to-point messages), for
 * ns_sim_options.dist (include/neurosolve/cable.h, "Distributed
 * simulations"): ns_sim_create and the other ns_sim_* calls then spread
 * the simulation over the processes. Destroy it with ns_dist_destroy after
 * the simulations made with it (not collective; comm must stay valid until
 * then). Networks need MPI initialised with
 * MPI_Init_thread at MPI_THREAD_FUNNELED or more (the spike exchange runs
 * on the master thread of the OpenMP loop). The partition functions
 * (ns_partition_lpt, ns_partition_contiguous) are in neurosolve/dist.h. */
NS_API ns_status ns_dist_from_comm(MPI_Comm comm, ns_dist_t **out);

/* ------------------------------------------------- distributed batches */

typedef struct ns_mpi_batch ns_mpi_batch_t;

/* Collective. The batch of ns_batch_create (every process passes the same
 * shapes, n_cells and cell_shape), its cells given to the processes by
 * ns_partition_lpt over compartment counts. Each process keeps the batch of
 * its own cells (in increasing global number), which may be empty. */
NS_API ns_status ns_mpi_batch_create(MPI_Comm comm, int32_t n_shapes, const ns_tree_t *const *shapes,
                                     int64_t n_cells, const int32_t *cell_shape, ns_mpi_batch_t **out);
NS_API void ns_mpi_batch_destroy(ns_mpi_batch_t *batch);
NS_API MPI_Comm ns_mpi_batch_comm(const ns_mpi_batch_t *batch);
NS_API int64_t ns_mpi_batch_global_cells(const ns_mpi_batch_t *batch);
NS_API int64_t ns_mpi_batch_global_compartments(const ns_mpi_batch_t *batch);
/* This process's cells: a batch (NULL when it owns none), their global
 * numbers, and their count / compartment count. */
NS_API const ns_batch_t *ns_mpi_batch_local(const ns_mpi_batch_t *batch);
NS_API const int64_t *ns_mpi_batch_local_cells(const ns_mpi_batch_t *batch);
NS_API int64_t ns_mpi_batch_local_count(const ns_mpi_batch_t *batch);
NS_API int64_t ns_mpi_batch_local_compartments(const ns_mpi_batch_t *batch);
/* The rank owning a global cell (-1 when out of range). */
NS_API int32_t ns_mpi_batch_owner(const ns_mpi_batch_t *batch, int64_t cell);

/* Local. The values ns_batch_random_values gives the whole batch, for this
 * process's cells only (arrays of ns_mpi_batch_local_compartments). */
NS_API ns_status ns_mpi_batch_random_values(const ns_mpi_batch_t *batch, uint64_t seed, double *a,
                                            double *b, double *d, double *rhs);

/* Local. Copy this process's cells out of an array over the whole batch
 * (global Flat layout) into the local Flat layout. */
NS_API ns_status ns_mpi_batch_extract(const ns_mpi_batch_t *batch, const double *global, double *local);

/* Collective. Gather the local arrays into the global Flat layout on `root`
 * (root < 0: on every process). global is written on the receiving
 * processes only (may be NULL elsewhere). */
NS_API ns_status ns_mpi_batch_gather(const ns_mpi_batch_t *batch, int root, const double *local,
                                     double *global);

/* Collective. Solve this process's cells (ns_hines_solve on the local
 * batch; local arrays) and agree on the outcome. timing (may be NULL)
 * receives this process's timing; method/backend (may be NULL) what AUTO
 * resolved to here (NS_HINES_AUTO / NS_BACKEND_AUTO on a process with no
 * cells). */
NS_API ns_status ns_mpi_hines_solve(const ns_mpi_batch_t *batch, const ns_solve_options *options,
                                    const double *a, const double *b, double *d, double *rhs,
                                    ns_solve_timing *timing, ns_hines_method *method, ns_backend *backend);

/* ------------------------------------------------------------- LiFE */

/* Collective. The part of a LiFE model (the same on every process, checked
 * by hash) that this process owns: voxels split into contiguous ranges
 * balanced by coefficient count (ns_partition_contiguous), the coefficients
 * of the owned voxels with voxels renumbered locally, the owned columns of
 * the signal, the whole dictionary, every fiber (fibers without a local
 * coefficient are allowed: the local model is not validated as a whole)
 * and the true weights when known. *first_voxel / *n_voxels (may be NULL)
 * receive the global range. A process may own no voxel (more processes than
 * voxels): its model then has one voxel with a zero signal and no effect. */
NS_API ns_status ns_mpi_life_partition(MPI_Comm comm, const ns_life_model_t *global,
                                       ns_life_model_t **local, int32_t *first_voxel, int32_t *n_voxels);

/* Collective. ns_life_fit on a voxel-partitioned model: the sums over
 * processes (w = M^T y and every voxel-space dot product) go through
 * options->reduce, set here to a reduction whose result is bit-identical
 * on every process (MPI_Reduce_scatter, then MPI_Allgatherv of the summed
 * slices), so that every process takes the same decisions. Every process receives all of w.
 * CPU or CUDA engine (on CUDA each sum of a fiber vector goes through a
 * pinned host buffer); the preconditioner is not supported (its diagonal
 * would need a sum over processes too). */
NS_API ns_status ns_mpi_life_fit(MPI_Comm comm, ns_life_engine_t *engine,
                                 const ns_life_fit_options *options, double *w, double *history,
                                 ns_life_fit_result *result);

/* A reduce callback for callers of ns_life_fit who set it themselves
 * (context: a pointer to the MPI_Comm): MPI_Reduce to rank 0 and MPI_Bcast,
 * every process the same bits. */
NS_API ns_status ns_mpi_life_reduce(double *values, int64_t n, void *context);

#ifdef __cplusplus
}
#endif
#endif
