/* neurosolve over MPI: batches, simulations and LiFE fits spread over the
 * processes of a communicator (docs/mpi.md).
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
#include "neurosolve/hines.h"
#include "neurosolve/life.h"
#include "neurosolve/network.h"
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

/* ---------------------------------------------------------- partitions */
/* Pure functions (no communication), so that they can be tested alone. */

/* Longest processing time first: items sorted by weight, heaviest first
 * (ties: lower index first), each given to the part with the least load so
 * far (ties: lower part). owner[i] in [0, n_parts) for every item; load
 * (NULL or n_parts entries) receives each part's summed weight. Weights must
 * be >= 0. The largest load is at most 4/3 of the optimum (Graham). */
NS_API ns_status ns_partition_lpt(int64_t n_items, const int64_t *weight, int32_t n_parts, int32_t *owner,
                                  int64_t *load);

/* Contiguous ranges balanced by weight: part p gets items
 * [first[p], first[p+1]) (first has n_parts + 1 entries, first[0] = 0,
 * first[n_parts] = n_items); part p starts at the first item whose middle
 * lies at or past p / n_parts of the total weight. With n_items >= n_parts
 * every part gets at least one item. Used for voxels, which keep their
 * order. */
NS_API ns_status ns_partition_contiguous(int64_t n_items, const int64_t *weight, int32_t n_parts,
                                         int64_t *first);

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

/* ---------------------------------------------- distributed simulation */

typedef struct ns_mpi_sim ns_mpi_sim_t;

/* Collective. ns_sim_create over the processes: every process passes the
 * same shapes, cells, cell_shape and params; cells are given out by
 * ns_partition_lpt over compartment counts and each process simulates its
 * own (options apply per process). Cells keep their global numbers. */
NS_API ns_status ns_mpi_sim_create(MPI_Comm comm, int32_t n_shapes, const ns_cell_t *const *shapes,
                                   int64_t n_cells, const int32_t *cell_shape, const ns_sim_params *params,
                                   const ns_sim_options *options, ns_mpi_sim_t **out);
NS_API void ns_mpi_sim_destroy(ns_mpi_sim_t *sim);

/* Not collective, but every process must make the same calls in the same
 * order (the owner of `cell` applies them; the others only count sites).
 * A failure on the owner is returned there and reported to every process
 * by the next collective call (ns_mpi_sim_init, _advance, _gather). *site
 * receives the global recording index (the same on every process). */
NS_API ns_status ns_mpi_sim_add_iclamp(ns_mpi_sim_t *sim, int64_t cell, int32_t compartment, double delay,
                                       double duration, double amplitude);
NS_API ns_status ns_mpi_sim_add_recording(ns_mpi_sim_t *sim, int64_t cell, int32_t compartment,
                                          int32_t *site);

/* Networks across processes (docs/networks.md, "MPI"): the calls of
 * ns_sim_add_synapse, ns_sim_synapse_set, ns_sim_add_detector,
 * ns_sim_add_spike_source and ns_sim_connect (include/neurosolve/cable.h)
 * with global numbers. Like ns_mpi_sim_add_iclamp they are not collective,
 * but every process must make the same calls in the same order with the
 * same arguments: every process numbers every synapse and source (in call
 * order, as ns_sim does), the owner of the cell creates the synapse or
 * detector, every process with cells holds every train, and a connection is
 * kept only by the owner of its synapse. ns_mpi_sim_init compares the calls
 * of all processes (a hash of their arguments) and fails on every process
 * when they differ. Checks that need no cell (a cell, compartment, synapse
 * or source that does not exist, a delay <= 0, a non-finite weight or
 * threshold) fail on every process at once; those of the owner (an unknown
 * mechanism or parameter) on the owner at once and on every process at
 * ns_mpi_sim_init, which reports on every process the first failure of
 * these calls on the lowest failing process. *synapse / *source receive the global number (-1 on failure).
 * The simulation needs a model (ns_sim_options.model) and the CPU backend,
 * as ns_sim's networks do, and MPI initialised with MPI_Init_thread at
 * MPI_THREAD_FUNNELED or more (the spike exchange runs on the master thread
 * of the OpenMP loop): ns_mpi_sim_init refuses a network otherwise
 * (NS_ERR_UNSUPPORTED). */
NS_API ns_status ns_mpi_sim_add_synapse(ns_mpi_sim_t *sim, int64_t cell, int32_t compartment,
                                        const char *mechanism, int64_t *synapse);
NS_API ns_status ns_mpi_sim_synapse_set(ns_mpi_sim_t *sim, int64_t synapse, const char *name, double value);
NS_API ns_status ns_mpi_sim_add_detector(ns_mpi_sim_t *sim, int64_t cell, int32_t compartment, double threshold,
                                         int64_t *source);
NS_API ns_status ns_mpi_sim_add_spike_source(ns_mpi_sim_t *sim, const double *times, int64_t count,
                                             int64_t *source);
/* A Poisson source (ns_sim_add_poisson_source): every process with cells
 * draws the same times from the seed. */
NS_API ns_status ns_mpi_sim_add_poisson_source(ns_mpi_sim_t *sim, double rate_hz, double start, double stop,
                                               uint64_t seed, int64_t *source);
NS_API ns_status ns_mpi_sim_connect(ns_mpi_sim_t *sim, int64_t source, int64_t synapse, double weight,
                                    double delay);
/* A source's cell, as ns_sim_source_cell: a detector's global cell, -1 for
 * a train or a Poisson source, -2 for an unknown source; the same on every
 * process. */
NS_API int64_t ns_mpi_sim_source_cell(const ns_mpi_sim_t *sim, int64_t source);
/* Global counts (the same on every process). */
NS_API int64_t ns_mpi_sim_synapses(const ns_mpi_sim_t *sim);
NS_API int64_t ns_mpi_sim_sources(const ns_mpi_sim_t *sim);
NS_API int64_t ns_mpi_sim_connections(const ns_mpi_sim_t *sim);

/* Collective. A network file's synapses, sources and connections
 * (include/neurosolve/network.h, docs/networks.md "Network files") with the
 * calls above: every process makes the calls ns_network_apply makes on a
 * single simulation, in the same order with the same arguments (one
 * traversal serves both), so that ids are the file's (after those the
 * simulation has) and the run is the single simulation's to the bit.
 * `sim` has the network's cells (ns_network_cells, cell c of shape
 * shapes[ns_network_cell_morphology(net)[c]]); `shapes` (every process
 * passes the same) locate the sections. On failure every process returns
 * the failure that comes first in the file ("rank R of N: FILE:LINE: ..."
 * and the element), whichever process found it (a mechanism or parameter
 * name is checked by the owner of the cell); the simulation may then hold
 * part of the network: destroy it. ns_mpi_sim_init is still needed. */
NS_API ns_status ns_network_apply_mpi(const ns_network_t *net, ns_mpi_sim_t *sim, const ns_cell_t *const *shapes);

/* Collective: ns_sim_init / ns_sim_advance on every process, then agree.
 * Without synapses and sources the cells do not interact and nothing else
 * is exchanged during a run. With them, ns_mpi_sim_init also compares the
 * network calls and agrees on the smallest delay of all connections (the
 * interval, the same on every process), and ns_mpi_sim_advance exchanges
 * the spikes of every interval between all processes (an MPI_Allgather of
 * counts and an MPI_Allgatherv of (time, source) pairs): the rasters and
 * traces are those of one process to the bit, for any number of
 * processes. A failure on one process during a run (a NaN) stops the run on
 * every process at the next exchange, with that process's message. */
NS_API ns_status ns_mpi_sim_init(ns_mpi_sim_t *sim);
NS_API ns_status ns_mpi_sim_advance(ns_mpi_sim_t *sim, int64_t steps);

/* Collective. Gather every recorded trace, every cell's spike times and
 * every source's raster to `root` (root < 0: to every process). Afterwards
 * ns_mpi_sim_traces, ns_mpi_sim_spikes and ns_mpi_sim_source_spikes answer
 * with global results on the receiving processes.
 * Recorded data are gathered, not written per process, so that the output
 * files of a run do not depend on the process count (docs/mpi.md). */
NS_API ns_status ns_mpi_sim_gather(ns_mpi_sim_t *sim, int root);
/* After ns_mpi_sim_gather, on a receiving process: traces[s * sites + k] for
 * global site k (as ns_sim_traces); NULL with *samples = *sites = 0
 * elsewhere. */
NS_API const double *ns_mpi_sim_traces(const ns_mpi_sim_t *sim, int64_t *samples, int32_t *sites);
/* After ns_mpi_sim_gather, on a receiving process: spike times of a global
 * cell [ms]; NULL with *count = 0 elsewhere or before the gather. */
NS_API const double *ns_mpi_sim_spikes(const ns_mpi_sim_t *sim, int64_t cell, int64_t *count);
/* After ns_mpi_sim_gather, on a receiving process: the raster of a global
 * source [ms] (as ns_sim_source_spikes); NULL with *count = 0 elsewhere or
 * before the gather. */
NS_API const double *ns_mpi_sim_source_spikes(const ns_mpi_sim_t *sim, int64_t source, int64_t *count);

/* The process's own simulation (NULL when it owns no cells), for what the
 * distributed object does not forward (ns_sim_time, ns_sim_get_state with
 * local cell numbers ...). */
NS_API ns_sim_t *ns_mpi_sim_local(ns_mpi_sim_t *sim);
/* Local cell number of a global cell on its owner; -1 elsewhere. */
NS_API int64_t ns_mpi_sim_local_cell(const ns_mpi_sim_t *sim, int64_t cell);
NS_API int32_t ns_mpi_sim_owner(const ns_mpi_sim_t *sim, int64_t cell);
/* Global figures (the same on every process). */
NS_API int64_t ns_mpi_sim_cells(const ns_mpi_sim_t *sim);
NS_API int64_t ns_mpi_sim_compartments(const ns_mpi_sim_t *sim);
NS_API int64_t ns_mpi_sim_steps_for(const ns_mpi_sim_t *sim, double tstop);
/* This process's wall time of the steps so far [ms]; the collective
 * ns_mpi_sim_advance makes the slowest process set the pace. */
NS_API double ns_mpi_sim_elapsed_ms(const ns_mpi_sim_t *sim);
NS_API ns_backend ns_mpi_sim_backend(const ns_mpi_sim_t *sim);
NS_API ns_hines_method ns_mpi_sim_method(const ns_mpi_sim_t *sim);

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
